/* SPDX-License-Identifier: MIT */
/* quant.c — uniform b-bit quantization, b = 1..8: asymmetric min-max
 * (Paper A) or symmetric max-abs (AQ-SGD); per tensor, sample, channel or token;
 * nearest or stochastic rounding (unbiased); optionally after a seeded
 * randomized Hadamard rotation of the last dimension (rot: QuaRot /
 * TAH-Quant's, so one outlier no longer sets a whole vector's scale). Work is
 * done in chunks of CHUNK elements (a multiple of 8, so each chunk's codes
 * start on a byte), chunks spread over OpenMP threads for large tensors. */
#include "family.h"
#include "bits.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

extern const codec_family codec_quant; /* listed in registry.c */

#define CHUNK 4096
#define PARALLEL_MIN (1 << 20)

static size_t scale_bytes(int options, const units *u) { return (size_t)u->U * ((options & OPT_SYM) ? 4 : 8); }
/* codes on the wire: packed at their width, or one per byte (OPT_BYTES: what an entropy coder reads best) */
static int code_width(int options, int bits) { return (options & OPT_BYTES) ? 8 : bits; }

static void put_f32(uint8_t *p, float v) { memcpy(p, &v, 4); }
static float get_f32(const uint8_t *p) { float v; memcpy(&v, p, 4); return v; }

/* ---- the rotation (FORMAT.md, "quant"): the last dimension L in blocks of
 * h, the largest power of two dividing L; y = H (D x) / sqrt(h) per block,
 * D the signs drawn from the frame's seed, H the Walsh-Hadamard matrix of
 * order h (butterflies in a fixed order: the same float operations on every
 * machine); its inverse x = D (H y) / sqrt(h). */
#define ROT_SALT 0x526f746174696f6eull /* "Rotation" */

static float *rot_signs(uint64_t seed, int64_t L) {
    float *d = malloc(sizeof(float) * (size_t)(L ? L : 1));
    if (!d) return NULL;
    pz_rng r;
    pz_rng_seed(&r, seed ^ ROT_SALT);
    for (int64_t j = 0; j < L; j++) d[j] = (pz_rng_u64(&r) >> 63) ? -1.0f : 1.0f;
    return d;
}

static void fwht(float *v, int64_t h) {
    for (int64_t len = 1; len < h; len <<= 1)
        for (int64_t i = 0; i < h; i += 2 * len)
            for (int64_t j = i; j < i + len; j++) {
                const float a = v[j], b = v[j + len];
                v[j] = a + b, v[j + len] = a - b;
            }
}

/* rotate (inverse = 0) or rotate back (inverse = 1) n floats whose last
 * dimension is L, in place. The encoder refuses values above FLT_MAX / (2
 * h^1.5), so neither its butterflies nor the decoder's (whose inputs are
 * the rotated values, each within sqrt(h) of the largest, plus half a
 * step) overflow; a decoded frame that does anyway is refused. */
static pz_status rotate(float *x, int64_t n, int64_t L, uint64_t seed, int inverse) {
    if (n == 0 || L == 0) return PZ_OK;
    const int64_t h = L & -L;
    if (!inverse) {
        const double limit = 3.4028234663852886e38 / (2.0 * pow((double)h, 1.5));
        for (int64_t i = 0; i < n; i++)
            if (fabsf(x[i]) > limit) /* NaN passes: the scales refuse it */
                return pz_fail(PZ_ERR_ARG, "cannot rotate: a value of %g overflows float in a Hadamard block of %lld (scale the tensor down)",
                               x[i], (long long)h);
    }
    float *d = rot_signs(seed, L);
    if (!d) return pz_fail(PZ_ERR_NOMEM, "out of memory for a rotation of %lld", (long long)L);
    const float s = (float)(1.0 / sqrt((double)h));
    int bad = 0;
#pragma omp parallel for schedule(static) reduction(| : bad) if (n > PARALLEL_MIN)
    for (int64_t r = 0; r < n / L; r++) {
        float *row = x + r * L;
        if (!inverse)
            for (int64_t j = 0; j < L; j++) row[j] *= d[j];
        for (int64_t b0 = 0; b0 < L; b0 += h) fwht(row + b0, h);
        for (int64_t j = 0; j < L; j++) row[j] *= s;
        if (inverse)
            for (int64_t j = 0; j < L; j++) row[j] *= d[j], bad |= !isfinite(row[j]);
    }
    free(d);
    return bad ? frame_error(PZ_FRAME_PAYLOAD, "the decoded values overflow float when rotated back") : PZ_OK;
}

/* Unit un's (lo, step) for asymmetric, (step) for symmetric (lo 0). */
static pz_status unit_scale(const codec_params *p, const pz_codec_kernels *k, const float *x, const units *u, int sym,
                            int64_t un, float *lo_out, float *step_out) {
    const int b = p->bits;
    float lo = 0.0f, step = 0.0f;
    *lo_out = *step_out = 0.0f;
    if (u->n == 0) return PZ_OK;
    /* per-plane statistics, then combined for the unit */
    float mn = INFINITY, mx = -INFINITY, ma = 0.0f;
    double sa = 0.0;
    for (int64_t pl = un; pl < u->planes; pl += (u->gran == GRAN_CHANNEL ? u->channels : u->planes)) {
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
        if (b == 1) step = u->m ? (float)(sa / (double)u->m) : 0.0f;
        else step = ma / (float)((1 << (b - 1)) - 1);
        /* the decoder computes -M*step + code*step with code up to 2M */
        if (!isfinite(step) || (b > 1 && !isfinite((float)((1 << b) - 2) * step)))
            return pz_fail(PZ_ERR_ARG, "cannot quantize: values up to %g overflow float when decoded (scale the tensor down)", ma);
    } else {
        if (!isfinite(mn) || !isfinite(mx)) return pz_fail(PZ_ERR_ARG, "cannot quantize: the tensor holds NaN or Inf");
        lo = mn;
        step = (mx - mn) / (float)((1 << b) - 1);
        if (!isfinite(step) || !isfinite((float)((1 << b) - 1) * step) || !isfinite(mn + (float)((1 << b) - 1) * step))
            return pz_fail(PZ_ERR_ARG, "cannot quantize: the tensor's range %g..%g overflows float", mn, mx);
    }
    /* a step so small that its inverse overflows (a unit whose values all
     * lie within ~1e-38 of each other) quantizes as a constant unit */
    if (!(sym && b == 1) && step > 0.0f && !isfinite(1.0f / step)) step = 0.0f;
    *lo_out = lo, *step_out = step;
    return PZ_OK;
}

/* every unit's, in order: the first error stops */
static pz_status unit_scales(const codec_params *p, const pz_codec_kernels *k, const float *x, const units *u,
                             int sym, float *lo, float *step) {
    for (int64_t un = 0; un < u->U; un++) lo[un] = step[un] = 0.0f;
    for (int64_t un = 0; un < u->U; un++) {
        const pz_status st = unit_scale(p, k, x, u, sym, un, &lo[un], &step[un]);
        if (st) return st;
    }
    return PZ_OK;
}

/* the (lo, step) the decoder uses for unit un: symmetric codes are offset by M */
static void decode_affine(int sym, int b, float lo, float step, float *dlo, float *dstep) {
    if (!sym) *dlo = lo, *dstep = step;
    else if (b == 1) *dlo = -step, *dstep = 2.0f * step;
    else *dlo = -(float)((1 << (b - 1)) - 1) * step, *dstep = step;
}

/* x[i0, i1), one unit's plane run with its (lo, step), into b-bit codes */
static inline void code_run(const pz_codec_kernels *k, const float *x, int64_t i0, int64_t i1, float ulo, float s, int b, int sym,
                            int stoch, uint32_t seed32, uint8_t *cd) {
    const int M = b >= 2 ? (1 << (b - 1)) - 1 : 0, L = (1 << b) - 1;
    const float inv = s > 0.0f ? 1.0f / s : 0.0f;
    const size_t len = (size_t)(i1 - i0);
    if (sym && b == 1) {
        k->negative(x + i0, len, cd);
        for (size_t j = 0; j < len; j++) cd[j] ^= 1; /* 1 = non-negative */
    } else if (stoch) {
        k->quant_stoch(x + i0, len, ulo, inv, sym ? 2 * M : L, sym, seed32, (uint32_t)i0, cd);
    } else if (sym) {
        k->quant_sym(x + i0, len, inv, M, cd);
    } else {
        k->quant_asym(x + i0, len, ulo, inv, L, cd);
    }
}

/* the scales section at the body's start; returns the body's CRC-32C from
 * it and the codes' super-chunks' CRCs (super elements each, w bits a code) */
static uint32_t write_scales(const pz_codec_kernels *k, uint8_t *body, int options, const units *u, int sym, const float *lo,
                             const float *step, const uint32_t *crcs, int64_t chunks, size_t super, int w) {
    uint8_t *sp = body;
    for (int64_t un = 0; un < u->U; un++) {
        if (sym) put_f32(sp, step[un]), sp += 4;
        else put_f32(sp, lo[un]), put_f32(sp + 4, step[un]), sp += 8;
    }
    const size_t sb = scale_bytes(options, u);
    const int64_t n = u->n;
    uint32_t crc = k->crc32c(0, body, sb);
    if (chunks)
        crc = pz_crc32c_combine(crc, crc_join_chunks(crcs, chunks, super * (size_t)w / 8, bits_bytes((uint64_t)(n - (chunks - 1) * (int64_t)super), w)),
                                bits_bytes((uint64_t)n, w));
    return crc;
}

static pz_status encode(const codec_params *p, const codec_io *io, const float *x, const units *u, uint64_t seed, uint8_t *body,
                        size_t cap, size_t *body_len, frame_header *h, uint32_t *body_crc, int *have_crc) {
    const pz_codec_kernels *k = io->k;
    const int64_t n = u->n;
    h->bits = p->bits;
    h->options = p->options & (OPT_SYM | OPT_STOCH | OPT_ROT | OPT_BYTES);
    h->seed = seed;
    float *xr = NULL; /* the rotated tensor */
    if (p->options & OPT_ROT) {
        if (!(xr = malloc(sizeof(float) * (size_t)(n ? n : 1))))
            return pz_fail(PZ_ERR_NOMEM, "out of memory rotating %lld elements", (long long)n);
        memcpy(xr, x, sizeof(float) * (size_t)n);
        const pz_status rs = rotate(xr, n, h->dims[h->ndim - 1], seed, 0);
        if (rs) {
            free(xr);
            return rs;
        }
        x = xr;
    }
    /* quant: super-chunks of 16 chunks; each chunk's codes go through a
     * small stack buffer (codes a byte wide straight into the frame), the
     * CRC runs once per super-chunk (long enough for its interleaved
     * streams) while the output is still in cache */
    enum { SUPER = 16 * CHUNK };
    const int64_t chunks = (n + SUPER - 1) / SUPER;
    uint32_t crc_small[CRC_SLOTS_SMALL], *crcs = crc_slots(crc_small, chunks);
    const int b = p->bits, sym = (p->options & OPT_SYM) != 0, stoch = (p->options & OPT_STOCH) != 0;
    const int w = code_width(p->options, b); /* the codes' width on the wire */
    float *lo = malloc(sizeof(float) * (size_t)(u->U ? u->U : 1));
    float *step = malloc(sizeof(float) * (size_t)(u->U ? u->U : 1));
    /* Units that are contiguous runs of at most a super-chunk (per=sample of
     * small samples, per=token: a transformer's vectors) get their scales
     * as the coder reaches them: each unit is scanned just before it is
     * coded, which then reads it from cache, so the tensor is read from
     * memory once instead of twice. A unit begun in the super-chunk
     * before is scanned again into a copy of this super-chunk's own (the
     * same values: the same kernel on the same elements), each unit's
     * scale stored by the super-chunk where it begins. */
    const int fused = (u->gran == GRAN_SAMPLE || u->gran == GRAN_TOKEN) && u->U > 1 && u->m > 0 && u->m <= SUPER;
    pz_status st = !crcs || !lo || !step ? pz_fail(PZ_ERR_NOMEM, "out of memory for the scales of %lld units", (long long)u->U)
                   : fused              ? PZ_OK
                                        : unit_scales(p, k, x, u, sym, lo, step);
    if (st) {
        free(lo), free(step), free(xr);
        crc_slots_free(crcs, crc_small);
        return st;
    }
    uint8_t *codes_out = body + scale_bytes(h->options, u);
    const uint32_t seed32 = (uint32_t)(seed ^ (seed >> 32));
    int bad = 0; /* a fused unit that cannot be scaled */
#pragma omp parallel for schedule(static) reduction(| : bad) if (n > PARALLEL_MIN)
    for (int64_t ci = 0; ci < chunks; ci++) {
      const int64_t s0 = ci * SUPER, s1 = n - s0 < SUPER ? n : s0 + SUPER;
      /* fused: the units scaled so far here (below next), the one begun
       * before s0 (carried) into lo0, step0 */
      const int64_t carried = fused && s0 % u->m ? s0 / u->m : -1;
      int64_t next = fused ? s0 / u->m : u->U;
      float lo0 = 0.0f, step0 = 0.0f;
      for (int64_t c0 = s0; c0 < s1; c0 += CHUNK) {
        const int64_t c1 = s1 - c0 < CHUNK ? s1 : c0 + CHUNK;
        uint8_t buf[CHUNK], *codes = w == 8 ? codes_out + c0 : buf; /* a byte a code: straight into the frame */
        for (int64_t i = c0, pl = c0 / u->plane_len; i < c1; pl++) { /* plane by plane */
            const int64_t end = (pl + 1) * u->plane_len < c1 ? (pl + 1) * u->plane_len : c1;
            const int64_t un = unit_of_plane(u, pl);
            float *ul = un == carried ? &lo0 : &lo[un], *us = un == carried ? &step0 : &step[un];
            if (un >= next) { /* fused: a unit reached, scanned just before it is coded */
                bad |= unit_scale(p, k, x, u, sym, un, ul, us) != PZ_OK;
                next = un + 1;
            }
            if (bad) memset(codes + (i - c0), 0, (size_t)(end - i)); /* a unit here could not be scaled (NaN, Inf, overflow): the frame is refused, not coded */
            else code_run(k, x, i, end, *ul, *us, b, sym, stoch, seed32, codes + (i - c0));
            i = end;
        }
        if (w != 8) bits_write(k, codes_out + (size_t)(c0 / 8) * w, codes, (size_t)(c1 - c0), w);
      }
      crcs[ci] = k->crc32c(0, codes_out + (size_t)(s0 / 8) * w, bits_bytes((uint64_t)(s1 - s0), w));
    }
    if (bad) { /* the same scan in order, for the first unit's error, reported on the calling thread */
        st = unit_scales(p, k, x, u, sym, lo, step);
        if (!st) st = pz_fail(PZ_ERR_ARG, "cannot quantize: a unit cannot be scaled");
    } else { /* the body: scales, then the codes' super-chunks of SUPER * b / 8 bytes */
        *body_crc = write_scales(k, body, h->options, u, sym, lo, step, crcs, chunks, (size_t)SUPER, w);
        *have_crc = 1;
        *body_len = scale_bytes(h->options, u) + bits_bytes((uint64_t)n, w);
    }
    crc_slots_free(crcs, crc_small);
    free(lo), free(step), free(xr);
    return st;
}

static pz_status decode(const frame_header *h, const codec_io *io, const units *u, float *x) {
    const pz_codec_kernels *k = io->k;
    const int64_t n = u->n;
    const int w = code_width(h->options, h->bits);
    const size_t need = scale_bytes(h->options, u) + bits_bytes((uint64_t)n, w);
    if (h->body_len != need)
        return frame_error(PZ_FRAME_PAYLOAD, "a quant payload of this shape has %zu bytes, not %llu", need, (unsigned long long)h->body_len);
    const int b = h->bits, sym = (h->options & OPT_SYM) != 0;
    float *dlo = malloc(sizeof(float) * (size_t)(u->U ? u->U : 1));
    float *dstep = malloc(sizeof(float) * (size_t)(u->U ? u->U : 1));
    if (!dlo || !dstep) {
        free(dlo), free(dstep);
        return pz_fail(PZ_ERR_NOMEM, "out of memory for the scales of %lld units", (long long)u->U);
    }
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
        if (u->U == 1 && !sym && w == b && (b == 1 || b == 2 || b == 4 || b == 8)) {
            /* one unit, every code valid: unpack and dequantize together */
            k->dequant_packed(codes_in + (size_t)(c0 / 8) * b, (size_t)(c1 - c0), b, dlo[0], dstep[0], x + c0);
            continue;
        }
        uint8_t buf[CHUNK];
        const uint8_t *codes = w == 8 ? codes_in + c0 : buf; /* a byte a code: read in place */
        if (w != 8) bits_read(k, codes_in + (size_t)(c0 / 8) * w, (size_t)(c1 - c0), w, buf);
        uint8_t mx = 0;
        for (int64_t j = 0; j < c1 - c0; j++) mx = codes[j] > mx ? codes[j] : mx;
        bad |= mx > max_code;
        for (int64_t i = c0, pl = c0 / u->plane_len; i < c1; pl++) { /* plane by plane */
            const int64_t end = (pl + 1) * u->plane_len < c1 ? (pl + 1) * u->plane_len : c1;
            const int64_t un = unit_of_plane(u, pl);
            k->dequant(codes + (i - c0), (size_t)(end - i), dlo[un], dstep[un], x + i);
            i = end;
        }
    }
    free(dlo), free(dstep);
    if (bad) return frame_error(PZ_FRAME_PAYLOAD, "a %s%d-bit code exceeds %d", sym ? "symmetric " : "", b, max_code);
    return (h->options & OPT_ROT) ? rotate(x, n, h->dims[h->ndim - 1], h->seed, 1) : PZ_OK;
}

static size_t max_body(const codec_params *p, const units *u) {
    return scale_bytes(p->options, u) + bits_bytes((uint64_t)u->n, code_width(p->options, p->bits));
}

static pz_status check(const frame_header *h) {
    if (h->bits < 1 || h->bits > 8) return frame_error(PZ_FRAME_PARAM, "quantization width %d is not in 1..8", h->bits);
    if (h->options & ~h->fam->option_mask || h->value_type || h->index_coding || h->k)
        return frame_error(PZ_FRAME_PARAM, "parameters that quantization does not take are set");
    return PZ_OK;
}

/* ---- the spec ------------------------------------------------------------ */

static int match(const char *name, codec_params *p) {
    if (name[0] != 'q' || name[1] < '1' || name[1] > '8' || name[2]) return 0;
    p->bits = name[1] - '0';
    p->gran = GRAN_TENSOR;
    return 1;
}

static pz_status option(codec_params *p, const char *key, const char *val, const char *spec) {
    if (!strcmp(key, "per") && val) return spec_per(p, val, 1, spec);
    if (spec_option_word(p, key, val, codec_quant.option_mask)) return PZ_OK;
    return spec_unknown_option(spec, "q", key, val);
}

static pz_status finish(codec_params *p, const char *spec) {
    if (p->bits == 1 && (p->options & OPT_SYM) && (p->options & OPT_STOCH))
        return spec_bad(spec, "q1:sym is a scaled sign and has no stochastic variant");
    return PZ_OK;
}

static void canonical(const codec_params *p, char *buf, size_t cap) {
    snprintf(buf, cap, "q%d:%s,%s,per=%s%s%s", p->bits, option_word(p->options, OPT_SYM), option_word(p->options, OPT_STOCH),
             gran_name(p->gran), (p->options & OPT_ROT) ? ",rot" : "", (p->options & OPT_BYTES) ? ",bytes" : "");
}

const codec_family codec_quant = {
    .checks_finite = 1,
    .name = "quant", .width_name = "q", .wire_id = 3, .fields = PZ_FRAME_USES_BITS | PZ_FRAME_USES_GRANULARITY,
    .option_mask = OPT_SYM | OPT_STOCH | OPT_ROT | OPT_BYTES,
    .usage = "qB[:asym|sym,nearest|stoch,per=tensor|sample|channel|token,rot,bytes]",
    .help = "uniform quantization, B = 1..8 bits: min-max (asym, Paper A) or max-abs (sym, AQ-SGD); stochastic rounding is unbiased; "
            "rot: after a seeded randomized Hadamard rotation of the last dimension (one outlier no longer sets a vector's scale); "
            "bytes: one code per byte, for the entropy stage (q6:bytes+zstd). "
            "B bits + a scale per unit",
    .match = match, .option = option, .finish = finish, .canonical = canonical, .max_body = max_body,
    .encode = encode, .check = check, .decode = decode,
};
