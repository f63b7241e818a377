/* sparse.c — codecs that keep k elements per unit: TopK (Paper A), Rand-K,
 * randomized TopK (Zheng et al., IJCAI'23) and mask-encoded sparsification
 * (MS, Paper B). TopK never sorts the tensor: a sampled threshold and one
 * filtering pass find a small candidate set, an exact selection among the
 * candidates fixes k (ties to the lower index). */
#include "codec_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int64_t sparse_k(const codec_params *p, int64_t m) {
    if (m <= 0) return 0;
    int64_t k = (int64_t)floor(p->fraction * (double)m + 1e-9); /* PAPERS.md: k = floor((1 - r) d) */
    if (k < 1) k = 1;
    if (k > m) k = m;
    return k;
}

/* ------------------------------------------------------------------------- */
/* selection */

static inline float key_of(float v, int by_value) {
    const float k = by_value ? v : fabsf(v);
    return k != k ? -INFINITY : k; /* NaN never wins */
}

/* float -> uint32 with the same order (negative floats flipped) */
static inline uint32_t ordered_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u ^ ((uint32_t)((int32_t)u >> 31) | 0x80000000u);
}

/* The r-th largest (0-based) of keys[0..c) by radix selection on the
 * ordered bit patterns: a histogram per digit, the keys of the chosen bucket
 * copied to tmp so later digits see only those. No sorting, no
 * data-dependent branches in the counting. Few keys: 8-bit digits (small
 * histograms); many: 11-bit digits (fewer passes). */
static float radix_select_desc(const float *keys, int64_t c, int64_t r, float *tmp) {
    const int w = c < 32768 ? 8 : 11;
    uint32_t prefix = 0;
    const float *src = keys;
    int64_t n = c;
    for (int sh = 32 - w; ; sh = sh > w ? sh - w : 0) {
        uint32_t hist[2048];
        const int width = sh + w > 32 ? 32 - sh : w;
        const uint32_t bmask = (1u << width) - 1;
        memset(hist, 0, sizeof(uint32_t) * (bmask + 1));
        for (int64_t j = 0; j < n; j++) hist[(ordered_bits(src[j]) >> sh) & bmask]++;
        int64_t above = 0;
        int b = (int)bmask;
        for (; b > 0 && above + hist[b] <= r; b--) above += hist[b];
        r -= above;
        prefix |= (uint32_t)b << sh;
        if (sh == 0) break;
        /* keep the keys whose bits so far match the prefix */
        const uint32_t keep_mask = ~((1u << sh) - 1);
        int64_t m = 0;
        for (int64_t j = 0; j < n; j++) {
            tmp[m] = src[j];
            m += (ordered_bits(src[j]) & keep_mask) == prefix;
        }
        src = tmp;
        n = m;
    }
    /* back from ordered bits to the float */
    const uint32_t u = prefix & 0x80000000u ? prefix ^ 0x80000000u : ~prefix;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Keep, in place and in order, the candidates whose key beats T and the
 * first `ties` whose key equals it (ties: the lower index first); returns
 * how many were kept. Branch-free. */
static int64_t keep_above(uint32_t *idx, float *vals, int64_t c, float T, int64_t ties, int by_value) {
    int64_t out = 0;
    for (int64_t j = 0; j < c; j++) {
        const float key = by_value ? vals[j] : fabsf(vals[j]);
        const int64_t eq = key == T, keep = (key > T) | (eq & (ties > 0));
        idx[out] = idx[j], vals[out] = vals[j];
        out += keep;
        ties -= eq & keep;
    }
    return out;
}

/* The exact threshold from the band: keys[0..nb) are the keys between the
 * sampled thresholds, `above` keys lie above the band, kk are wanted. T is
 * the kk-th largest overall; *ties = how many keys equal to T are kept,
 * *equal = how many there are in the band. */
static float band_threshold(const float *keys, int64_t nb, int64_t above, int64_t kk, float *tmp, int64_t *ties, int64_t *equal) {
    const float T = radix_select_desc(keys, nb, kk - 1 - above, tmp);
    int64_t greater = above, eq = 0;
    for (int64_t j = 0; j < nb; j++) greater += keys[j] > T, eq += keys[j] == T;
    *ties = kk - greater, *equal = eq;
    return T;
}

pz_status topk_positions(const pz_codec_kernels *k, const float *x, int64_t m, int64_t kk, int by_value,
                         uint32_t *idx, float *vals, float *keys, float *tmp) {
    return topk_select(k, x, m, kk, by_value, idx, vals, keys, tmp, NULL);
}

pz_status topk_select(const pz_codec_kernels *k, const float *x, int64_t m, int64_t kk, int by_value,
                      uint32_t *idx, float *vals, float *keys, float *tmp, topk_threshold *th) {
    if (th) th->only = 0;
    if (kk <= 0) return PZ_OK;
    if (kk >= m) {
        for (int64_t i = 0; i < m; i++) idx[i] = (uint32_t)i, vals[i] = x[i];
        return PZ_OK;
    }
    int64_t c = 0;
    if (m >= 4096) {
        /* a threshold from S samples, a few standard deviations below the
         * expected k-th largest so it keeps >= k: one sample in each of S
         * equal windows, at a pseudo-random place in the window (addresses
         * only move forward, so the prefetcher follows; the jitter keeps a
         * periodic layout such as NCHW planes from aliasing) */
        /* big tensors: a bigger sample narrows the band the exact selection
         * works on (its width goes as 1/sqrt(S)); the sample lives in keys
         * and tmp, free until the band needs them */
        const int S = m >= (1 << 21) ? 32768 : m >= 65536 ? 8192 : (int)(m / 8) & ~15;
        float *sample = keys, *stmp = tmp;
        /* 16 consecutive elements (one cache line) from each of S/16
         * windows: a few hundred lines read instead of thousands */
        const uint64_t win = (uint64_t)m / (S / 16);
        uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)m;
        for (int j = 0; j < S / 16; j++) {
            h = h * 6364136223846793005ull + 1442695040888963407ull;
            const uint64_t off = ((h >> 32) * (win - 15)) >> 32; /* uniform in [0, win - 16] */
            const float *xs = x + (uint64_t)j * win + off;
            for (int e = 0; e < 16; e++) sample[16 * j + e] = key_of(xs[e], by_value);
        }
        /* samples from one line are correlated: a wider margin than the
         * binomial 4 sigma */
        const double r = (double)kk * S / (double)m, margin = 4.5 * sqrt(r) + 16.0;
        if (kk * 20 >= m && r + margin < S) {
            /* dense (>= 5%): the k-th largest lies between two sampled
             * thresholds, and the exact threshold comes from the band
             * between them: among the candidates for a list, from one pass
             * that keeps only the band for a threshold */
            const float t_lo = radix_select_desc(sample, S, (int64_t)(r + margin), stmp);
            const float t_hi = r - margin >= 0 ? radix_select_desc(sample, S, (int64_t)(r - margin), stmp) : INFINITY;
            if (!th && t_lo > -INFINITY) {
                /* a list is wanted: one pass takes every candidate (key >=
                 * t_lo), the exact threshold comes from the band among
                 * them, and the candidates are trimmed in place (no second
                 * pass over x) */
                c = (int64_t)k->select_ge(x, (size_t)m, t_lo, by_value, idx, vals);
                /* the band [t_lo, t_hi) among the candidates: its values
                 * into keys (positions into tmp, unused) */
                uint32_t *pos = (uint32_t *)(void *)tmp;
                size_t above_sz = 0;
                const int64_t nb = (int64_t)k->select_band(vals, (size_t)c, t_lo, t_hi, by_value, &above_sz, pos, keys);
                const int64_t above = (int64_t)above_sz;
                if (above < kk && above + nb >= kk) {
                    if (!by_value)
                        for (int64_t j = 0; j < nb; j++) keys[j] = fabsf(keys[j]);
                    int64_t ties, equal;
                    const float T = band_threshold(keys, nb, above, kk, tmp, &ties, &equal);
                    int64_t out = 0;
                    if (ties == equal) { /* every key >= T is kept: one more vector pass */
                        out = (int64_t)k->select_ge(vals, (size_t)c, T, by_value, pos, keys);
                        for (int64_t o = 0; o < out && out == kk; o++) idx[o] = idx[pos[o]]; /* pos[o] >= o: in place */
                        if (out == kk) memcpy(vals, keys, sizeof(float) * (size_t)kk);
                    } else {
                        out = keep_above(idx, vals, c, T, ties, by_value);
                    }
                    if (out != kk) return pz_fail(PZ_ERR_STATE, "top-k selected %lld of %lld (internal error)", (long long)out, (long long)kk);
                    return PZ_OK;
                }
                if (c < kk) c = 0; /* the sample misjudged: all of x below */
                goto candidates;
            }
            if (th && t_lo > -INFINITY) {
                /* a threshold is wanted (the caller takes the elements in its
                 * own pass): the band alone decides it */
                size_t n_hi = 0;
                const int64_t band = (int64_t)k->select_band(x, (size_t)m, t_lo, t_hi, by_value, &n_hi, idx, vals);
                if ((int64_t)n_hi < kk && (int64_t)n_hi + band >= kk) {
                    for (int64_t j = 0; j < band; j++) keys[j] = by_value ? vals[j] : fabsf(vals[j]);
                    int64_t ties, equal;
                    const float T = band_threshold(keys, band, (int64_t)n_hi, kk, tmp, &ties, &equal);
                    th->only = 1, th->T = T, th->ties = ties, th->extra = equal - ties;
                    return PZ_OK;
                }
            }
        }
        const double rank = r + margin;
        if (rank < S) {
            const float t = radix_select_desc(sample, S, (int64_t)rank, stmp);
            if (t > -INFINITY) {
                c = (int64_t)k->select_ge(x, (size_t)m, t, by_value, idx, vals);
                if (c < kk) c = 0; /* the sample misjudged: exact fallback */
            }
        }
    }
candidates:
    if (c == 0) {
        for (int64_t i = 0; i < m; i++) idx[i] = (uint32_t)i, vals[i] = x[i];
        c = m;
    }
    if (by_value)
        for (int64_t j = 0; j < c; j++) keys[j] = vals[j] != vals[j] ? -INFINITY : vals[j];
    else
        for (int64_t j = 0; j < c; j++) keys[j] = vals[j] != vals[j] ? -INFINITY : fabsf(vals[j]);
    const float T = radix_select_desc(keys, c, kk - 1, tmp);
    int64_t greater = 0;
    for (int64_t j = 0; j < c; j++) greater += keys[j] > T;
    int64_t ties = kk - greater, out = 0;
    /* branch-free compaction: keep what beats T and the first `ties` equal
     * to it (ties: lower index first) */
    for (int64_t j = 0; j < c; j++) {
        const int64_t eq = keys[j] == T, keep = (keys[j] > T) | (eq & (ties > 0));
        idx[out] = idx[j], vals[out] = vals[j];
        out += keep;
        ties -= eq & keep;
    }
    if (out != kk) return pz_fail(PZ_ERR_STATE, "top-k selected %lld of %lld (internal error)", (long long)out, (long long)kk);
    return PZ_OK;
}

/* k of m positions, a uniformly random k-subset, ascending: Floyd's
 * algorithm (for j = m-k .. m-1: t = below(j+1); take t, or j if t is taken)
 * on a bitmap, then the bitmap read in order. O(k) draws plus m/64 words. */
static void sample_positions(pz_rng *r, int64_t m, int64_t k, uint32_t *out) {
    if (k <= 0) return;
    const int64_t words = (m + 63) / 64;
    uint64_t *bits = pz_calloc((size_t)words, sizeof(uint64_t));
    for (int64_t j = m - k; j < m; j++) {
        const uint32_t t = pz_rng_below(r, (uint32_t)(j + 1));
        const uint64_t bit = 1ull << (t & 63);
        if (bits[t >> 6] & bit) bits[j >> 6] |= 1ull << (j & 63);
        else bits[t >> 6] |= bit;
    }
    int64_t c = 0;
    for (int64_t w = 0; w < words; w++)
        for (uint64_t v = bits[w]; v; v &= v - 1) out[c++] = (uint32_t)(w * 64 + __builtin_ctzll(v));
    free(bits);
}

/* Zheng et al.'s randomized TopK: k draws without replacement, each top-k
 * position weighted (1-alpha)/k, each other alpha/(m-k). Within a class the
 * weights are equal, so the draw is: how many come from the top class (a
 * sequential urn), then uniform subsets of each class. */
static void randtopk_positions(pz_rng *r, const uint32_t *top, int64_t m, int64_t k, double alpha, uint32_t *out) {
    const double wt = (1.0 - alpha) / (double)k, wo = m > k ? alpha / (double)(m - k) : 0.0;
    int64_t a = k, b = m - k, from_top = 0;
    for (int64_t t = 0; t < k; t++) {
        const double pt = a * wt / (a * wt + b * wo);
        const double u = (double)(pz_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0);
        if (u < pt) from_top++, a--;
        else b--;
    }
    const int64_t need = k - from_top;
    uint32_t *ranks_top = pz_malloc(sizeof(uint32_t) * (size_t)(k + 1));
    uint32_t *ranks_other = pz_malloc(sizeof(uint32_t) * (size_t)(need + 1));
    sample_positions(r, k, from_top, ranks_top);      /* which of the top positions */
    sample_positions(r, m - k, need, ranks_other);    /* which of the others, by rank */
    /* merge: the q-th other position is q plus the top positions before it */
    int64_t ti = 0, a_i = 0, b_i = 0, o = 0;
    while (a_i < from_top || b_i < need) {
        int64_t other = -1;
        if (b_i < need) {
            const int64_t q = ranks_other[b_i];
            while (ti < k && (int64_t)top[ti] <= q + ti) ti++;
            other = q + ti;
        }
        const int64_t tp = a_i < from_top ? (int64_t)top[ranks_top[a_i]] : -1;
        if (other < 0 || (tp >= 0 && tp < other)) out[o++] = (uint32_t)tp, a_i++;
        else out[o++] = (uint32_t)other, b_i++;
    }
    free(ranks_top), free(ranks_other);
}

/* ------------------------------------------------------------------------- */
/* sections */

static size_t varint_len(uint32_t v) { return v < (1u << 7) ? 1 : v < (1u << 14) ? 2 : v < (1u << 21) ? 3 : v < (1u << 28) ? 4 : 5; }

static size_t put_varint(uint8_t *p, uint32_t v) {
    size_t n = 0;
    while (v >= 0x80) p[n++] = (uint8_t)(v | 0x80), v >>= 7;
    p[n++] = (uint8_t)v;
    return n;
}

static size_t value_bytes(int vt, int vbits, int64_t U, int64_t count) {
    switch (vt) {
    case VAL_F32: return (size_t)count * 4;
    case VAL_F16:
    case VAL_BF16: return (size_t)count * 2;
    default: return (size_t)U * 4 + bits_bytes((uint64_t)count, vbits);
    }
}

size_t sparse_max_body_bytes(const codec_params *p, const units *u, int64_t k) {
    const int64_t kept = u->U * k;
    const size_t vals = value_bytes(p->value_type, p->value_bits, u->U, kept);
    if (p->id == CODEC_RANDK) return vals;
    if (p->id == CODEC_MS)
        return (size_t)u->U * 4 + vals + bits_bytes((uint64_t)u->n, p->bits) + bits_bytes((uint64_t)u->n, 1);
    /* the index coding is chosen per frame: bound by the larger of the two */
    const size_t bitmap = bits_bytes((uint64_t)u->n, 1), delta = (size_t)kept * 5;
    const size_t idx = p->index_coding == IDX_BITMAP ? bitmap : p->index_coding == IDX_DELTA ? delta
                                                                : (bitmap > delta ? bitmap : delta);
    return idx + vals;
}

/* values v[0..U*k) (unit-major) into the values section */
static void write_values(const pz_codec_kernels *k, int vt, int vbits, const float *v, int64_t U, int64_t kk, uint8_t *out,
                         codec_scratch *sc) {
    const int64_t cnt = U * kk;
    if (vt == VAL_F32) memcpy(out, v, (size_t)cnt * 4);
    else if (vt == VAL_F16 || vt == VAL_BF16) { /* the section may start at any byte */
        uint16_t *h = scratch_get(sc, SC_HALF, (size_t)cnt * 2);
        if (vt == VAL_F16) k->f32_to_f16(v, (size_t)cnt, h);
        else k->f32_to_bf16(v, (size_t)cnt, h);
        memcpy(out, h, (size_t)cnt * 2);
    } else { /* symmetric per-unit quantization of the kept values */
        uint8_t *codes = scratch_get(sc, SC_CODES, (size_t)cnt);
        const int M = vbits >= 2 ? (1 << (vbits - 1)) - 1 : 0;
        for (int64_t un = 0; un < U; un++) {
            const float *vu = v + un * kk;
            float step;
            if (vbits == 1) {
                step = kk ? (float)(k->sum_abs(vu, (size_t)kk) / (double)kk) : 0.0f;
                k->negative(vu, (size_t)kk, codes + un * kk);
                for (int64_t j = 0; j < kk; j++) codes[un * kk + j] ^= 1;
            } else {
                step = kk ? k->max_abs(vu, (size_t)kk) / (float)M : 0.0f;
                k->quant_sym(vu, (size_t)kk, step > 0 ? 1.0f / step : 0.0f, M, codes + un * kk);
            }
            memcpy(out + 4 * un, &step, 4);
        }
        bits_write(k, out + 4 * U, codes, (size_t)cnt, vbits);
    }
}

static pz_status read_values(const pz_codec_kernels *k, int vt, int vbits, const uint8_t *in, int64_t U, int64_t kk, float *v,
                             codec_scratch *sc) {
    const int64_t cnt = U * kk;
    if (vt == VAL_F32) memcpy(v, in, (size_t)cnt * 4);
    else if (vt == VAL_F16 || vt == VAL_BF16) {
        uint16_t *h = scratch_get(sc, SC_HALF, (size_t)cnt * 2);
        memcpy(h, in, (size_t)cnt * 2);
        if (vt == VAL_F16) k->f16_to_f32(h, (size_t)cnt, v);
        else k->bf16_to_f32(h, (size_t)cnt, v);
    } else {
        uint8_t *codes = scratch_get(sc, SC_CODES, (size_t)cnt);
        bits_read(k, in + 4 * U, (size_t)cnt, vbits, codes);
        const int M = vbits >= 2 ? (1 << (vbits - 1)) - 1 : 0;
        for (int64_t un = 0; un < U; un++) {
            float step;
            memcpy(&step, in + 4 * un, 4);
            if (!isfinite(step) || step < 0) {
                return frame_error(PZ_FRAME_PAYLOAD, "value scale %g of unit %lld", step, (long long)un);
            }
            for (int64_t j = 0; j < kk; j++) {
                const int c = codes[un * kk + j];
                if (vbits == 1) v[un * kk + j] = c ? step : -step;
                else if (c > 2 * M) {
                    return frame_error(PZ_FRAME_PAYLOAD, "value code %d exceeds %d", c, 2 * M);
                } else v[un * kk + j] = -(float)M * step + (float)c * step;
            }
        }
    }
    return PZ_OK;
}

/* ------------------------------------------------------------------------- */
/* encode */

pz_status sparse_encode(const codec_params *p, const pz_codec_kernels *k, const float *x, const units *u,
                        uint64_t seed, uint8_t *body, size_t cap, size_t *body_len, frame_header *h, codec_scratch *sc) {
    const int64_t U = u->U, m = u->m, kk = sparse_k(p, m), n = u->n;
    h->k = (uint32_t)kk;
    uint32_t *pos = scratch_get(sc, SC_POS, sizeof(uint32_t) * (size_t)(U * kk + 1)); /* unit-relative, ascending */
    uint32_t *idx_all = NULL;
    float *keys_all = NULL, *tmp_all = NULL, *cvals_all = NULL;
    /* MS, and TopK when its index section is certainly a bitmap, may take
     * thresholds instead of lists from dense units and select in their own
     * chunked pass */
    const int bitmap_certain = p->id == CODEC_TOPK &&
                               (p->index_coding == IDX_BITMAP || (p->index_coding == IDX_AUTO && (size_t)(U * kk) >= bits_bytes((uint64_t)n, 1)));
    topk_threshold *ths = p->id == CODEC_MS || bitmap_certain ? pz_calloc((size_t)(U ? U : 1), sizeof(topk_threshold)) : NULL;
    float *vals = scratch_get(sc, SC_VALS, sizeof(float) * (size_t)(U * kk + 1));
    if (p->id != CODEC_RANDK) {
        idx_all = scratch_get(sc, SC_IDX, sizeof(uint32_t) * (size_t)(n + 1));
        keys_all = scratch_get(sc, SC_KEYS, sizeof(float) * (size_t)(n + 1));
        tmp_all = scratch_get(sc, SC_TMP, sizeof(float) * (size_t)(n + 1));
        cvals_all = scratch_get(sc, SC_CVALS, sizeof(float) * (size_t)(n + 1));
    }
    pz_status st = PZ_OK;
    if (p->id == CODEC_RANDK) {
        for (int64_t un = 0; un < U; un++) {
            pz_rng r;
            pz_rng_seed(&r, seed ^ (uint64_t)un);
            sample_positions(&r, m, kk, pos + un * kk);
        }
    } else {
        const int by_value = (p->options & OPT_BYVALUE) && p->id != CODEC_MS;
#pragma omp parallel for schedule(dynamic) if (U > 1 && n > (1 << 16))
        for (int64_t un = 0; un < U; un++) {
            uint32_t *idx = idx_all + un * m;
            float *keys = keys_all + un * m, *cv = cvals_all + un * m;
            pz_status s = topk_select(k, x + un * m, m, kk, by_value, idx, cv, keys, tmp_all + un * m, ths ? &ths[un] : NULL);
            if (s == PZ_OK && p->id == CODEC_RANDTOPK && kk < m) {
                pz_rng r;
                pz_rng_seed(&r, seed ^ (uint64_t)un);
                randtopk_positions(&r, idx, m, kk, p->alpha, pos + un * kk);
                for (int64_t j = 0; j < kk; j++) vals[un * kk + j] = x[un * m + pos[un * kk + j]];
            } else if (s == PZ_OK && !(ths && ths[un].only)) {
                memcpy(pos + un * kk, idx, sizeof(uint32_t) * (size_t)kk);
                memcpy(vals + un * kk, cv, sizeof(float) * (size_t)kk);
            }
            if (s) {
#pragma omp critical
                st = s;
            }
        }
    }
    if (st) {
        free(ths);
        return st;
    }
    if (bitmap_certain) {
        /* TopK from thresholds: per chunk of the flattened tensor, a flag per
         * element (key >= T), the ties beyond k cleared, the flags packed
         * into the bitmap and the kept values compressed, all in cache */
        int all_only = 1;
        for (int64_t un = 0; un < U; un++) all_only &= ths[un].only;
        if (all_only) {
            h->index_coding = IDX_BITMAP;
            h->value_type = p->value_type;
            h->value_bits = p->value_type == VAL_QUANT ? p->value_bits : 0;
            const int by_value = (p->options & OPT_BYVALUE) != 0;
            uint8_t *bitmap = body;
            const size_t vbytes = value_bytes(p->value_type, h->value_bits, U, U * kk);
            /* fp32 values without ties beyond k go straight into the frame
             * when their section starts on a float's alignment (the bitmap
             * before it has any number of bytes) */
            int no_extra = 1;
            for (int64_t u2 = 0; u2 < U; u2++) no_extra &= ths[u2].extra == 0;
            uint8_t *values_at = body + bits_bytes((uint64_t)n, 1);
            uint8_t *direct_f32 = p->value_type == VAL_F32 && no_extra && ((uintptr_t)values_at & 3) == 0 ? values_at : NULL;
            enum { TCH = 4096 };
            int64_t un = 0, next = 0;
            /* every unit starts on a byte of the bitmap and keeps every key
             * >= its T: one pass writes bits and values (no flags) */
            const int fused = no_extra && (U == 1 || m % 8 == 0);
            for (int64_t c0 = 0; c0 < n; c0 += TCH) {
                const int64_t c1 = n - c0 < TCH ? n : c0 + TCH;
                uint8_t flags[TCH];
                uint32_t cidx[TCH];
                float cval[TCH];
                for (int64_t i = c0; i < c1;) {
                    while ((un + 1) * m <= i) un++, next = 0;
                    const int64_t end = (un + 1) * m < c1 ? (un + 1) * m : c1;
                    const float T = ths[un].T;
                    if (ths[un].extra == 0) { /* every key >= T is kept: flags and values straight */
                        /* values compress straight into their place (the frame's
                         * fp32 section, else vals) when the room is certain */
                        float *dst = direct_f32 ? (float *)(void *)(direct_f32 + 4 * (size_t)(un * kk + next)) : vals + un * kk + next;
                        const int room = kk - next >= end - i;
                        size_t cn;
                        if (fused) {
                            cn = k->select_ge_bits(x + i, (size_t)(end - i), T, by_value, bitmap + i / 8, room ? dst : cval);
                        } else {
                            k->ge_flags(x + i, (size_t)(end - i), T, by_value, flags + (i - c0));
                            cn = k->select_ge(x + i, (size_t)(end - i), T, by_value, cidx, room ? dst : cval);
                        }
                        if (next + (int64_t)cn > kk) {
                            free(ths);
                            return pz_fail(PZ_ERR_STATE, "top-k kept more than %lld in unit %lld (internal error)", (long long)kk, (long long)un);
                        }
                        if (!room) memcpy(dst, cval, sizeof(float) * cn);
                        next += (int64_t)cn;
                        i = end;
                        continue;
                    }
                    const size_t cn = k->select_ge(x + i, (size_t)(end - i), T, by_value, cidx, cval);
                    memset(flags + (i - c0), 0, (size_t)(end - i));
                    for (size_t j = 0; j < cn; j++) { /* drop ties beyond k, keep the order */
                        const float v = cval[j], key = by_value ? v : fabsf(v);
                        if (key == T) {
                            if (ths[un].ties <= 0) continue;
                            ths[un].ties--;
                        }
                        if (next == kk) { next++; break; }
                        vals[un * kk + next++] = v;
                        flags[i - c0 + cidx[j]] = 1;
                    }
                    if (next > kk) {
                        free(ths);
                        return pz_fail(PZ_ERR_STATE, "top-k kept more than %lld in unit %lld (internal error)", (long long)kk, (long long)un);
                    }
                    i = end;
                }
                if (!fused) bits_write(k, bitmap + c0 / 8, flags, (size_t)(c1 - c0), 1);
            }
            free(ths);
            if (!direct_f32) write_values(k, p->value_type, h->value_bits, vals, U, kk, values_at, sc);
            *body_len = (size_t)(values_at - body) + vbytes;
            if (*body_len > cap) return pz_fail(PZ_ERR_STATE, "frame overflow (internal error)");
            return PZ_OK;
        }
        /* some unit came back with a list: lists for all */
        for (int64_t un = 0; un < U && !st; un++) {
            if (!ths[un].only) {
                memcpy(pos + un * kk, idx_all + un * m, sizeof(uint32_t) * (size_t)kk);
                memcpy(vals + un * kk, cvals_all + un * m, sizeof(float) * (size_t)kk);
                continue;
            }
            st = topk_positions(k, x + un * m, m, kk, (p->options & OPT_BYVALUE) != 0, idx_all + un * m, cvals_all + un * m,
                                keys_all + un * m, tmp_all + un * m);
            memcpy(pos + un * kk, idx_all + un * m, sizeof(uint32_t) * (size_t)kk);
            memcpy(vals + un * kk, cvals_all + un * m, sizeof(float) * (size_t)kk);
        }
        free(ths);
        ths = NULL;
        if (st) return st;
    }
    if (p->id == CODEC_RANDK)
        for (int64_t un = 0; un < U; un++)
            for (int64_t j = 0; j < kk; j++) vals[un * kk + j] = x[un * m + pos[un * kk + j]];
    h->value_type = p->value_type;
    h->value_bits = p->value_type == VAL_QUANT ? p->value_bits : 0;
    const size_t vbytes = value_bytes(p->value_type, h->value_bits, U, U * kk);
    uint8_t *o = body;

    if (p->id == CODEC_MS) {
        const int b = p->bits, L = (1 << b) - 1;
        h->bits = b;
        h->index_coding = IDX_NONE;
        /* Top_min per unit, then one pass in chunks of 4096 elements (a
         * multiple of 8, so each chunk's codes start on a byte): codes below
         * Top_min, L at the kept positions, sign bits, packed while in cache */
        float *tmin = pz_malloc(sizeof(float) * (size_t)(U ? U : 1));
        for (int64_t un = 0; un < U; un++) {
            float T = INFINITY;
            if (ths[un].only) T = ths[un].T; /* the k-th largest magnitude is the smallest kept */
            else
                for (int64_t j = 0; j < kk; j++) {
                    const float a = fabsf(vals[un * kk + j]);
                    T = a < T ? a : T;
                }
            tmin[un] = kk ? T : 0.0f;
            memcpy(o + 4 * un, &tmin[un], 4);
        }
        o += 4 * U;
        uint8_t *values_out = o;
        o += vbytes;
        uint8_t *codes_out = o, *sign_bits = scratch_get(sc, SC_NEG, bits_bytes((uint64_t)n, 1));
        enum { MCH = 4096 };
        int any_negative = 0;
        int64_t un = 0, next = 0; /* the unit of the chunk's first element, its next kept position */
        for (int64_t c0 = 0; c0 < n; c0 += MCH) {
            const int64_t c1 = n - c0 < MCH ? n : c0 + MCH;
            uint8_t codes[MCH], neg[MCH];
            uint32_t cidx[MCH];
            float cval[MCH];
            for (int64_t i = c0; i < c1;) {
                while ((un + 1) * m <= i) un++, next = 0;
                const int64_t end = (un + 1) * m < c1 ? (un + 1) * m : c1;
                const float T = tmin[un];
                k->quant_abs(x + i, (size_t)(end - i), T > 0.0f ? (float)L / T : 0.0f, L - 1, codes + (i - c0));
                k->negative(x + i, (size_t)(end - i), neg + (i - c0));
                if (ths[un].only) { /* take the kept elements here, in order */
                    const size_t cn = k->select_ge(x + i, (size_t)(end - i), T, 0, cidx, cval);
                    for (size_t j = 0; j < cn; j++) {
                        const float a = fabsf(cval[j]);
                        if (a == T) {
                            if (ths[un].ties <= 0) continue; /* a tie beyond k: an ordinary code */
                            ths[un].ties--;
                        }
                        if (next < kk) vals[un * kk + next] = cval[j];
                        next++;
                        codes[i - c0 + cidx[j]] = (uint8_t)L;
                    }
                } else {
                    const uint32_t *pu = pos + un * kk;
                    while (next < kk && un * m + (int64_t)pu[next] < end) codes[un * m + pu[next] - c0] = (uint8_t)L, next++;
                }
                i = end;
                if (ths[un].only && i == (un + 1) * m && next != kk) {
                    free(tmin), free(ths);
                    return pz_fail(PZ_ERR_STATE, "MS kept %lld of %lld in unit %lld (internal error)", (long long)next, (long long)kk, (long long)un);
                }
            }
            uint8_t any = 0;
            for (int64_t j = 0; j < c1 - c0; j++) any |= neg[j];
            any_negative |= any;
            bits_write(k, codes_out + (size_t)(c0 / 8) * b, codes, (size_t)(c1 - c0), b);
            bits_write(k, sign_bits + c0 / 8, neg, (size_t)(c1 - c0), 1);
        }
        write_values(k, p->value_type, h->value_bits, vals, U, kk, values_out, sc);
        free(tmin), free(ths);
        ths = NULL;
        const int is_signed = p->ms_sign == MS_SIGN_SIGNED || (p->ms_sign == MS_SIGN_AUTO && any_negative);
        if (p->ms_sign == MS_SIGN_UNSIGNED && any_negative)
            return pz_fail(PZ_ERR_ARG, "ms:unsigned got a tensor with negative values (use signed or auto)");
        h->options = (p->options & ~OPT_SIGNED) | (is_signed ? OPT_SIGNED : 0);
        o += bits_bytes((uint64_t)n, b);
        if (is_signed) {
            memcpy(o, sign_bits, bits_bytes((uint64_t)n, 1));
            o += bits_bytes((uint64_t)n, 1);
        }
    } else {
        if (p->id != CODEC_RANDK) {
            /* index section: the smaller of a bitmap and delta varints (a
             * varint is at least a byte: with k >= n/8 the bitmap wins
             * without counting) */
            const size_t bitmap = bits_bytes((uint64_t)n, 1);
            int coding = p->index_coding;
            if (coding == IDX_AUTO) {
                size_t delta = 0;
                if ((size_t)(U * kk) < bitmap)
                    for (int64_t un = 0; un < U; un++)
                        for (int64_t j = 0; j < kk; j++) {
                            const uint32_t pp = pos[un * kk + j];
                            delta += varint_len(j ? pp - pos[un * kk + j - 1] - 1 : pp);
                        }
                coding = (size_t)(U * kk) < bitmap && delta < bitmap ? IDX_DELTA : IDX_BITMAP;
            }
            h->index_coding = coding;
            if (coding == IDX_BITMAP) {
                memset(o, 0, bitmap);
                for (int64_t un = 0; un < U; un++)
                    for (int64_t j = 0; j < kk; j++) {
                        const uint64_t g = (uint64_t)un * m + pos[un * kk + j];
                        o[g >> 3] |= (uint8_t)(1u << (g & 7));
                    }
                o += bitmap;
            } else {
                for (int64_t un = 0; un < U; un++)
                    for (int64_t j = 0; j < kk; j++) {
                        const uint32_t pp = pos[un * kk + j];
                        o += put_varint(o, j ? pp - pos[un * kk + j - 1] - 1 : pp);
                    }
            }
        } else {
            h->index_coding = IDX_NONE;
            h->seed = seed;
        }
        write_values(k, p->value_type, h->value_bits, vals, U, kk, o, sc);
        o += vbytes;
    }
    *body_len = (size_t)(o - body);
    if (*body_len > cap) return pz_fail(PZ_ERR_STATE, "frame overflow (internal error)");
    return PZ_OK;
}

/* ------------------------------------------------------------------------- */
/* decode */

pz_status sparse_decode(const frame_header *h, const pz_codec_kernels *k, const units *u, float *x, codec_scratch *sc) {
    const int64_t U = u->U, m = u->m, kk = h->k, n = u->n, cnt = U * kk;
    if (kk > m) return frame_error(PZ_FRAME_PARAM, "k = %lld exceeds the %lld elements of a unit", (long long)kk, (long long)m);
    if (h->codec == CODEC_MS && (h->bits < 1 || h->bits > 8))
        return frame_error(PZ_FRAME_PARAM, "MS code width %d is not in 1..8", h->bits);
    if (h->codec == CODEC_MS && h->value_type == VAL_QUANT)
        return frame_error(PZ_FRAME_PARAM, "MS values cannot be quantized");
    const size_t vbytes = value_bytes(h->value_type, h->value_bits, U, cnt);
    const uint8_t *b = h->body;
    float *vals = scratch_get(sc, SC_VALS, sizeof(float) * (size_t)(cnt + 1));
    pz_status st = PZ_OK;

    if (h->codec == CODEC_MS) {
        const int bb = h->bits, L = (1 << bb) - 1, is_signed = (h->options & OPT_SIGNED) != 0;
        const size_t need = (size_t)U * 4 + vbytes + bits_bytes((uint64_t)n, bb) + (is_signed ? bits_bytes((uint64_t)n, 1) : 0);
        if (h->body_len != need) {
            st = frame_error(PZ_FRAME_PAYLOAD, "an MS payload of this shape has %zu bytes, not %llu", need, (unsigned long long)h->body_len);
            goto out;
        }
        const uint8_t *tmins = b;
        b += 4 * U;
        if ((st = read_values(k, h->value_type, h->value_bits, b, U, kk, vals, sc))) goto out;
        b += vbytes;
        uint8_t *codes = scratch_get(sc, SC_CODES, (size_t)n), *neg = scratch_get(sc, SC_NEG, (size_t)n);
        bits_read(k, b, (size_t)n, bb, codes);
        b += bits_bytes((uint64_t)n, bb);
        if (is_signed) bits_read(k, b, (size_t)n, 1, neg);
        else memset(neg, 0, (size_t)n);
        for (int64_t un = 0; un < U && !st; un++) {
            float T;
            memcpy(&T, tmins + 4 * un, 4);
            if (!isfinite(T) || T < 0.0f) {
                st = frame_error(PZ_FRAME_PAYLOAD, "Top_min %g of unit %lld", T, (long long)un);
                break;
            }
            const float step = T / (float)L;
            /* every element as a code below Top_min (vectorises), then the
             * kept values in order where the code is L */
            const uint8_t *cu = codes + un * m, *nu = neg + un * m;
            float *xu = x + un * m;
            for (int64_t i = 0; i < m; i++) {
                const float v = (float)cu[i] * step;
                xu[i] = nu[i] ? -v : v;
            }
            int64_t next = 0;
            for (int64_t i = 0; i < m; i++)
                if (cu[i] == L) {
                    if (next == kk) { next++; break; }
                    xu[i] = vals[un * kk + next++];
                }
            if (next != kk) st = frame_error(PZ_FRAME_PAYLOAD, "unit %lld marks %s %lld kept values", (long long)un,
                                             next < kk ? "fewer than" : "more than", (long long)kk);
        }
        goto out;
    }

    if (h->codec == CODEC_RANDK) {
        if (h->body_len != vbytes) {
            st = frame_error(PZ_FRAME_PAYLOAD, "a randk payload of this shape has %zu bytes, not %llu", vbytes, (unsigned long long)h->body_len);
            goto out;
        }
        if ((st = read_values(k, h->value_type, h->value_bits, b, U, kk, vals, sc))) goto out;
        memset(x, 0, sizeof(float) * (size_t)n);
        const float scale = (h->options & OPT_UNBIASED) && kk ? (float)((double)m / (double)kk) : 1.0f;
        uint32_t *pos = scratch_get(sc, SC_POS, sizeof(uint32_t) * (size_t)(kk + 1));
        for (int64_t un = 0; un < U; un++) {
            pz_rng r;
            pz_rng_seed(&r, h->seed ^ (uint64_t)un);
            sample_positions(&r, m, kk, pos);
            for (int64_t j = 0; j < kk; j++) x[un * m + pos[j]] = vals[un * kk + j] * scale;
        }
        goto out;
    }

    /* topk / randtopk: index section, then values */
    if (h->body_len < vbytes) {
        st = frame_error(PZ_FRAME_PAYLOAD, "the payload is shorter than its values section");
        goto out;
    }
    const size_t idx_bytes = h->body_len - vbytes;
    if ((st = read_values(k, h->value_type, h->value_bits, b + idx_bytes, U, kk, vals, sc))) goto out;
    memset(x, 0, sizeof(float) * (size_t)n);
    if (h->index_coding == IDX_BITMAP) {
        if (idx_bytes != bits_bytes((uint64_t)n, 1)) {
            st = frame_error(PZ_FRAME_PAYLOAD, "a bitmap of %lld elements has %zu bytes, not %zu", (long long)n,
                             bits_bytes((uint64_t)n, 1), idx_bytes);
            goto out;
        }
        if (n % 8 && (b[n / 8] >> (n % 8))) {
            st = frame_error(PZ_FRAME_PAYLOAD, "bits set beyond the bitmap's end");
            goto out;
        }
        /* walk the set bits 64 at a time; count them per unit */
        const uint64_t nbytes = bits_bytes((uint64_t)n, 1);
        int64_t un = 0, got = 0, unit_end = m;
        for (uint64_t w = 0; w * 8 < nbytes && !st; w++) {
            uint64_t v = 0;
            memcpy(&v, b + w * 8, nbytes - w * 8 < 8 ? nbytes - w * 8 : 8);
            for (; v; v &= v - 1) {
                const int64_t g = (int64_t)(w * 64) + __builtin_ctzll(v);
                while (g >= unit_end && un < U) { /* close the units before g */
                    if (got != kk) break;
                    un++, got = 0, unit_end += m;
                }
                if (got >= kk || un >= U) {
                    st = frame_error(PZ_FRAME_PAYLOAD, "unit %lld has more than %lld positions in its bitmap", (long long)un, (long long)kk);
                    break;
                }
                x[g] = vals[un * kk + got++];
            }
        }
        for (; !st && un < U; un++, got = 0)
            if (got != kk) st = frame_error(PZ_FRAME_PAYLOAD, "unit %lld has fewer than %lld positions in its bitmap", (long long)un, (long long)kk);
    } else if (h->index_coding == IDX_DELTA) {
        const uint8_t *q = b, *qend = b + idx_bytes;
        for (int64_t un = 0; un < U && !st; un++) {
            int64_t prev = -1;
            for (int64_t j = 0; j < kk; j++) {
                uint64_t v = 0;
                int shift = 0, done = 0;
                while (q < qend && shift < 35) {
                    const uint8_t byte = *q++;
                    v |= (uint64_t)(byte & 0x7F) << shift;
                    shift += 7;
                    if (!(byte & 0x80)) { done = 1; break; }
                }
                if (!done || v > 0xFFFFFFFFull) {
                    st = frame_error(PZ_FRAME_PAYLOAD, "a bad or truncated varint in unit %lld", (long long)un);
                    break;
                }
                const int64_t p = prev + 1 + (int64_t)v;
                if (p >= m) {
                    st = frame_error(PZ_FRAME_PAYLOAD, "position %lld is outside unit %lld of %lld elements", (long long)p, (long long)un, (long long)m);
                    break;
                }
                x[un * m + p] = vals[un * kk + j];
                prev = p;
            }
        }
        if (!st && q != qend) st = frame_error(PZ_FRAME_PAYLOAD, "%zu bytes left over after the positions", (size_t)(qend - q));
    } else {
        st = frame_error(PZ_FRAME_PARAM, "a %s frame needs a bitmap or delta index section", codec_name(h->codec));
    }
out:
    return st;
}
