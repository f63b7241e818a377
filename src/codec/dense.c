/* dense.c — codecs that keep every element: none (fp32), fp16, bf16 and
 * uniform b-bit quantization (asymmetric min-max as in Paper A, symmetric
 * max-abs as in AQ-SGD; per tensor, sample or channel; nearest or
 * stochastic rounding). Work is done in chunks of CHUNK elements (a multiple
 * of 8, so each chunk's codes start on a byte), chunks spread over OpenMP
 * threads for large tensors. */
#include "codec_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK 4096
#define PARALLEL_MIN (1 << 20)

static size_t scale_bytes(const frame_header *h, const units *u) {
    return (size_t)u->U * ((h->options & OPT_SYM) ? 4 : 8);
}

size_t dense_body_bytes(const codec_params *p, const frame_header *h, const units *u) {
    switch (p->id) {
    case CODEC_NONE: return (size_t)u->n * 4;
    case CODEC_FP16:
    case CODEC_BF16: return (size_t)u->n * 2;
    default: return scale_bytes(h, u) + bits_bytes((uint64_t)u->n, h->bits);
    }
}

static void put_f32(uint8_t *p, float v) { memcpy(p, &v, 4); }
static float get_f32(const uint8_t *p) { float v; memcpy(&v, p, 4); return v; }

/* Per-unit (lo, step) for asymmetric, (step) for symmetric. */
static pz_status unit_scales(const codec_params *p, const pz_codec_kernels *k, const float *x, const units *u,
                             int sym, float *lo, float *step) {
    const int b = p->bits;
    for (int64_t un = 0; un < u->U; un++) lo[un] = step[un] = 0.0f;
    if (u->n == 0) return PZ_OK;
    /* per-plane statistics, then combined per unit */
    for (int64_t un = 0; un < u->U; un++) {
        float mn = INFINITY, mx = -INFINITY, ma = 0.0f;
        double sa = 0.0;
        for (int64_t pl = (u->gran == GRAN_CHANNEL ? un : un); pl < u->planes;
             pl += (u->gran == GRAN_CHANNEL ? u->channels : u->planes)) {
            const float *xp = x + pl * u->plane_len;
            if (u->plane_len == 0) continue;
            if (sym && b == 1) sa += k->sum_abs(xp, (size_t)u->plane_len);
            if (sym) {
                const float a = k->max_abs(xp, (size_t)u->plane_len);
                ma = (a > ma || a != a) ? a : ma;
            } else {
                float a, c;
                k->minmax(xp, (size_t)u->plane_len, &a, &c);
                mn = (a < mn || a != a) ? a : mn;
                mx = (c > mx || c != c) ? c : mx;
            }
        }
        if (sym) {
            if (!isfinite(ma)) return pz_fail(PZ_ERR_ARG, "cannot quantize: the tensor holds NaN or Inf");
            if (b == 1) step[un] = u->m ? (float)(sa / (double)u->m) : 0.0f;
            else step[un] = ma / (float)((1 << (b - 1)) - 1);
        } else {
            if (!isfinite(mn) || !isfinite(mx)) return pz_fail(PZ_ERR_ARG, "cannot quantize: the tensor holds NaN or Inf");
            lo[un] = mn;
            step[un] = (mx - mn) / (float)((1 << b) - 1);
            if (!isfinite(step[un])) return pz_fail(PZ_ERR_ARG, "cannot quantize: the tensor's range %g..%g overflows float", mn, mx);
        }
    }
    return PZ_OK;
}

/* the (lo, step) the decoder uses for unit un: symmetric codes are offset by M */
static void decode_affine(int sym, int b, float lo, float step, float *dlo, float *dstep) {
    if (!sym) *dlo = lo, *dstep = step;
    else if (b == 1) *dlo = -step, *dstep = 2.0f * step;
    else *dlo = -(float)((1 << (b - 1)) - 1) * step, *dstep = step;
}

/* The CRC of a body written in chunks of `chunk_bytes` (the last may be
 * shorter): per-chunk CRCs (computed by the writers while the chunk is in
 * cache, possibly on several threads) joined in order. */
static uint32_t join_crcs(const uint32_t *crcs, int64_t count, size_t chunk_bytes, size_t last_bytes) {
    if (count == 0) return 0;
    const uint32_t shift = pz_crc32c_shift(chunk_bytes);
    uint32_t crc = crcs[0];
    for (int64_t i = 1; i < count; i++)
        crc = i == count - 1 ? pz_crc32c_combine(crc, crcs[i], last_bytes) : pz_crc32c_mul(crc, shift) ^ crcs[i];
    return crc;
}

pz_status dense_encode(const codec_params *p, const pz_codec_kernels *k, const float *x, const units *u,
                       uint64_t seed, uint8_t *body, frame_header *h, uint32_t *body_crc) {
    const int64_t n = u->n;
    if (p->id == CODEC_NONE || p->id == CODEC_FP16 || p->id == CODEC_BF16) {
        /* chunks of 64k elements: the output of one stays in L2 for its CRC,
         * long enough for the CRC's three interleaved streams */
        enum { BIG = 65536 };
        const int64_t chunks = (n + BIG - 1) / BIG;
        uint32_t crc_small[64], *crcs = chunks <= 64 ? crc_small : pz_malloc(sizeof(uint32_t) * (size_t)chunks);
        const int width = p->id == CODEC_NONE ? 4 : 2;
#pragma omp parallel for schedule(static) if (n > PARALLEL_MIN)
        for (int64_t ci = 0; ci < chunks; ci++) {
            const int64_t c0 = ci * BIG;
            const size_t m = (size_t)(n - c0 < BIG ? n - c0 : BIG);
            uint8_t *o = body + (size_t)width * c0; /* 2-aligned: the body starts at 64 + 4 * ids */
            if (p->id == CODEC_NONE) {
                memcpy(o, x + c0, m * 4);
                crcs[ci] = k->crc32c(0, o, m * 4);
            } else {
                crcs[ci] = k->half_encode(x + c0, m, (uint16_t *)(void *)o, p->id == CODEC_BF16);
            }
        }
        *body_crc = join_crcs(crcs, chunks, (size_t)BIG * width, (size_t)(n - (chunks - 1) * BIG) * width);
        if (crcs != crc_small) free(crcs);
        return PZ_OK;
    }
    /* quant: super-chunks of 16 chunks; each chunk's codes go through a
     * small stack buffer, the CRC runs once per super-chunk (long enough for
     * its interleaved streams) while the output is still in cache */
    enum { SUPER = 16 * CHUNK };
    const int64_t chunks = (n + SUPER - 1) / SUPER;
    uint32_t crc_small[64], *crcs = chunks <= 64 ? crc_small : pz_malloc(sizeof(uint32_t) * (size_t)chunks);
    const int b = p->bits, sym = (p->options & OPT_SYM) != 0, stoch = (p->options & OPT_STOCH) != 0;
    float *lo = pz_malloc(sizeof(float) * (size_t)(u->U ? u->U : 1));
    float *step = pz_malloc(sizeof(float) * (size_t)(u->U ? u->U : 1));
    pz_status st = unit_scales(p, k, x, u, sym, lo, step);
    if (st) {
        free(lo), free(step);
        if (crcs != crc_small) free(crcs);
        return st;
    }
    uint8_t *sp = body;
    for (int64_t un = 0; un < u->U; un++) {
        if (sym) put_f32(sp, step[un]), sp += 4;
        else put_f32(sp, lo[un]), put_f32(sp + 4, step[un]), sp += 8;
    }
    uint8_t *codes_out = body + scale_bytes(h, u);
    const uint32_t seed32 = (uint32_t)(seed ^ (seed >> 32));
    const int M = b >= 2 ? (1 << (b - 1)) - 1 : 0, L = (1 << b) - 1;
#pragma omp parallel for schedule(static) if (n > PARALLEL_MIN)
    for (int64_t ci = 0; ci < chunks; ci++) {
      const int64_t s0 = ci * SUPER, s1 = n - s0 < SUPER ? n : s0 + SUPER;
      for (int64_t c0 = s0; c0 < s1; c0 += CHUNK) {
        const int64_t c1 = s1 - c0 < CHUNK ? s1 : c0 + CHUNK;
        uint8_t codes[CHUNK];
        for (int64_t i = c0; i < c1;) {
            const int64_t pl = i / u->plane_len, end = (pl + 1) * u->plane_len < c1 ? (pl + 1) * u->plane_len : c1;
            const int64_t un = unit_of_plane(u, pl);
            const float s = step[un], inv = s > 0.0f ? 1.0f / s : 0.0f;
            uint8_t *cd = codes + (i - c0);
            const size_t len = (size_t)(end - i);
            if (sym && b == 1) {
                k->negative(x + i, len, cd);
                for (size_t j = 0; j < len; j++) cd[j] ^= 1; /* 1 = non-negative */
            } else if (stoch) {
                k->quant_stoch(x + i, len, lo[un], inv, sym ? 2 * M : L, sym, seed32, (uint32_t)i, cd);
            } else if (sym) {
                k->quant_sym(x + i, len, inv, M, cd);
            } else {
                k->quant_asym(x + i, len, lo[un], inv, L, cd);
            }
            i = end;
        }
        bits_write(k, codes_out + (size_t)(c0 / 8) * b, codes, (size_t)(c1 - c0), b);
      }
      crcs[ci] = k->crc32c(0, codes_out + (size_t)(s0 / 8) * b, bits_bytes((uint64_t)(s1 - s0), b));
    }
    /* the body: scales, then the codes' super-chunks of SUPER * b / 8 bytes */
    const size_t sb = scale_bytes(h, u);
    uint32_t crc = k->crc32c(0, body, sb);
    if (chunks)
        crc = pz_crc32c_combine(crc, join_crcs(crcs, chunks, (size_t)SUPER * b / 8, bits_bytes((uint64_t)(n - (chunks - 1) * SUPER), b)),
                             bits_bytes((uint64_t)n, b));
    *body_crc = crc;
    if (crcs != crc_small) free(crcs);
    free(lo), free(step);
    return PZ_OK;
}

pz_status dense_decode(const frame_header *h, const pz_codec_kernels *k, const units *u, float *x) {
    const int64_t n = u->n;
    if (h->codec <= CODEC_BF16) {
        /* convert in chunks of 64k elements, each chunk's CRC taken while
         * its bytes are in cache; the frame is refused if they do not join
         * to the header's (the destination then holds garbage) */
        enum { BIG = 65536 };
        const int width = h->codec == CODEC_NONE ? 4 : 2;
        const int64_t chunks = (n + BIG - 1) / BIG;
        uint32_t crc_small[64], *crcs = chunks <= 64 ? crc_small : pz_malloc(sizeof(uint32_t) * (size_t)chunks);
#pragma omp parallel for schedule(static) if (n > PARALLEL_MIN)
        for (int64_t ci = 0; ci < chunks; ci++) {
            const int64_t c0 = ci * BIG;
            const size_t m = (size_t)(n - c0 < BIG ? n - c0 : BIG);
            const uint8_t *in = h->body + (size_t)width * c0;
            /* the body starts at 64 + 4 * ids bytes: 2-aligned for halves */
            if (h->codec == CODEC_NONE) {
                if (h->crc_deferred) crcs[ci] = k->crc32c(0, in, m * 4);
                memcpy(x + c0, in, m * 4);
            } else {
                /* the fused conversion is no slower than the plain one: its
                 * CRC comes along even for a frame verified already */
                crcs[ci] = k->half_decode((const uint16_t *)(const void *)in, m, x + c0, h->codec == CODEC_BF16);
            }
        }
        pz_status st = PZ_OK;
        if (h->crc_deferred)
            st = frame_check_crc(h, chunks ? join_crcs(crcs, chunks, (size_t)BIG * width, (size_t)(n - (chunks - 1) * BIG) * width) : 0);
        if (crcs != crc_small) free(crcs);
        return st;
    }
    const int b = h->bits, sym = (h->options & OPT_SYM) != 0;
    float *dlo = pz_malloc(sizeof(float) * (size_t)(u->U ? u->U : 1));
    float *dstep = pz_malloc(sizeof(float) * (size_t)(u->U ? u->U : 1));
    const uint8_t *sp = h->body;
    for (int64_t un = 0; un < u->U; un++) {
        float lo = 0.0f, step;
        if (sym) step = get_f32(sp), sp += 4;
        else lo = get_f32(sp), step = get_f32(sp + 4), sp += 8;
        if (!isfinite(lo) || !isfinite(step) || step < 0.0f) {
            free(dlo), free(dstep);
            return frame_error(PZ_FRAME_PAYLOAD, "unit %lld has scale (%g, %g)", (long long)un, lo, step);
        }
        decode_affine(sym, b, lo, step, &dlo[un], &dstep[un]);
    }
    const uint8_t *codes_in = sp;
    const int max_code = sym && b >= 2 ? (1 << b) - 2 : (1 << b) - 1;
    int bad = 0;
#pragma omp parallel for schedule(static) reduction(| : bad) if (n > PARALLEL_MIN)
    for (int64_t c0 = 0; c0 < n; c0 += CHUNK) {
        const int64_t c1 = n - c0 < CHUNK ? n : c0 + CHUNK;
        if (u->U == 1 && !sym && (b == 1 || b == 2 || b == 4 || b == 8)) {
            /* one unit, every code valid: unpack and dequantize together */
            k->dequant_packed(codes_in + (size_t)(c0 / 8) * b, (size_t)(c1 - c0), b, dlo[0], dstep[0], x + c0);
            continue;
        }
        uint8_t codes[CHUNK];
        bits_read(k, codes_in + (size_t)(c0 / 8) * b, (size_t)(c1 - c0), b, codes);
        uint8_t mx = 0;
        for (int64_t j = 0; j < c1 - c0; j++) mx = codes[j] > mx ? codes[j] : mx;
        bad |= mx > max_code;
        for (int64_t i = c0; i < c1;) {
            const int64_t pl = i / u->plane_len, end = (pl + 1) * u->plane_len < c1 ? (pl + 1) * u->plane_len : c1;
            const int64_t un = unit_of_plane(u, pl);
            k->dequant(codes + (i - c0), (size_t)(end - i), dlo[un], dstep[un], x + i);
            i = end;
        }
    }
    free(dlo), free(dstep);
    if (bad) return frame_error(PZ_FRAME_PAYLOAD, "a symmetric %d-bit code exceeds %d", b, max_code);
    return PZ_OK;
}
