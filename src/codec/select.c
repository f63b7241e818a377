/* SPDX-License-Identifier: MIT */
/* select.c — which k elements a unit keeps: TopK's selection (never a
 * sort: a sampled threshold and one filtering pass find a small candidate
 * set, an exact radix selection among the candidates fixes k, ties to the
 * lower index) and Rand-K's uniform positions. */
#include "sparse.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int64_t kept_per_unit(double fraction, int64_t m) {
    if (m <= 0) return 0;
    int64_t k = (int64_t)floor(fraction * (double)m + 1e-9); /* PAPERS.md: k = floor((1 - r) d) */
    if (k < 1) k = 1;
    if (k > m) k = m;
    return k;
}


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
 * histograms); many: 11-bit digits (fewer passes). The first `known` bits
 * of every key's pattern may be given (`prefix`: keys from a narrow band
 * share them): the digits start below them. A key that does not share them
 * is seen in the first pass, which then starts again from the top. */
static float radix_select_known(const pz_codec_kernels *k, const float *keys, int64_t c, int64_t r, float *tmp, int known, uint32_t prefix) {
    const int w = c < 32768 ? 8 : 11;
    if (known <= 0 || known >= 32) known = 0, prefix = 0;
    const uint32_t known_mask = known ? ~((1u << (32 - known)) - 1) : 0;
    prefix &= known_mask;
    const int64_t r0 = r;
    const float *src = keys;
    int64_t n = c;
    for (int top = 32 - known;;) {
        uint32_t hist[2048];
        const int width = top < w ? top : w, sh = top - width;
        const uint32_t bmask = (1u << width) - 1;
        uint32_t stray = 0;
        if (width <= 8) {
            /* four histograms, merged after: keys that share a bucket (most
             * do, in a narrow band) would otherwise wait on each other's
             * increments */
            uint32_t h4[4][256];
            memset(h4, 0, sizeof h4);
            int64_t j = 0;
            for (; j + 4 <= n; j += 4) {
                const uint32_t o0 = ordered_bits(src[j]), o1 = ordered_bits(src[j + 1]);
                const uint32_t o2 = ordered_bits(src[j + 2]), o3 = ordered_bits(src[j + 3]);
                h4[0][(o0 >> sh) & bmask]++, h4[1][(o1 >> sh) & bmask]++;
                h4[2][(o2 >> sh) & bmask]++, h4[3][(o3 >> sh) & bmask]++;
                stray |= ((o0 ^ prefix) | (o1 ^ prefix) | (o2 ^ prefix) | (o3 ^ prefix)) & known_mask;
            }
            for (; j < n; j++) {
                const uint32_t o = ordered_bits(src[j]);
                h4[0][(o >> sh) & bmask]++;
                stray |= (o ^ prefix) & known_mask;
            }
            for (uint32_t b = 0; b <= bmask; b++) hist[b] = h4[0][b] + h4[1][b] + h4[2][b] + h4[3][b];
        } else {
            memset(hist, 0, sizeof(uint32_t) * (bmask + 1));
            for (int64_t j = 0; j < n; j++) {
                const uint32_t o = ordered_bits(src[j]);
                hist[(o >> sh) & bmask]++;
                stray |= (o ^ prefix) & known_mask;
            }
        }
        if (stray) /* the given bits were not shared: from the top */
            return radix_select_known(k, keys, c, r0, tmp, 0, 0);
        int64_t above = 0;
        int b = (int)bmask;
        for (; b > 0 && above + hist[b] <= r; b--) above += hist[b];
        r -= above;
        prefix |= (uint32_t)b << sh;
        if (sh == 0) break;
        /* keep the keys whose bits so far match the prefix */
        n = (int64_t)k->keep_pattern(src, (size_t)n, ~((1u << sh) - 1), prefix, tmp);
        src = tmp;
        top = sh;
    }
    /* back from ordered bits to the float */
    const uint32_t u = prefix & 0x80000000u ? prefix ^ 0x80000000u : ~prefix;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static float radix_select_desc(const pz_codec_kernels *k, const float *keys, int64_t c, int64_t r, float *tmp) {
    return radix_select_known(k, keys, c, r, tmp, 0, 0);
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
static float band_threshold(const pz_codec_kernels *k, const float *keys, int64_t nb, int64_t above, int64_t kk, float lo, float hi, float *tmp, int64_t *ties,
                            int64_t *equal) {
    /* keys in [lo, hi) share the leading bits of the patterns of lo and of
     * the pattern just below hi (a zero bound as -0, the lowest pattern
     * that compares equal to it) */
    const uint32_t ol = ordered_bits(lo == 0.0f ? -0.0f : lo), oh = ordered_bits(hi == 0.0f ? -0.0f : hi);
    const int known = oh > ol ? (ol ^ (oh - 1)) ? __builtin_clz(ol ^ (oh - 1)) : 32 : 0;
    const float T = radix_select_known(k, keys, nb, kk - 1 - above, tmp, known, ol);
    int64_t greater = above, eq = 0;
    for (int64_t j = 0; j < nb; j++) greater += keys[j] > T, eq += keys[j] == T;
    *ties = kk - greater, *equal = eq;
    return T;
}

pz_status topk_positions(const pz_codec_kernels *k, const float *x, int64_t m, int64_t kk, int by_value,
                         uint32_t *idx, float *vals, float *keys, float *tmp) {
    return topk_select(k, x, m, kk, by_value, idx, vals, keys, tmp, NULL);
}

/* The sample a threshold is estimated from: 16 consecutive elements (one
 * cache line) from each of S/16 equal windows, at a pseudo-random place in
 * the window (addresses only move forward, so the prefetcher follows; the
 * jitter keeps a periodic layout such as NCHW planes from aliasing): a few
 * hundred lines read instead of thousands. */
static void sample_keys(const float *x, int64_t m, int S, int by_value, float *sample) {
    const uint64_t win = (uint64_t)m / (S / 16);
    const int lines = S / 16;
    /* each line prefetched AHEAD lines before it is read (its place kept
     * in a ring): the lines are far apart, so each is a cache (and TLB)
     * miss, and the loads alone would wait for them one at a time */
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)m;
    enum { AHEAD = 16 };
    uint64_t at[AHEAD];
    for (int j = 0; j < lines + AHEAD; j++) {
        if (j < lines) {
            h = h * 6364136223846793005ull + 1442695040888963407ull;
            const uint64_t off = ((h >> 32) * (win - 15)) >> 32; /* uniform in [0, win - 16] */
            at[j % AHEAD] = (uint64_t)j * win + off;
            __builtin_prefetch(x + at[j % AHEAD]);
            __builtin_prefetch(x + at[j % AHEAD] + 15);
        }
        const int q = j - AHEAD + 1;
        if (q < 0) continue;
        if (q >= lines) break;
        const float *xs = x + at[q % AHEAD];
        for (int e = 0; e < 16; e++) sample[16 * q + e] = key_of(xs[e], by_value);
    }
}

/* The passes that read a whole unit also check, in the same pass, that it
 * is finite (a NaN is never kept, but TopK, randomized TopK and MS refuse
 * it as every lossy codec does: pz_codec_encode names the count). */
static pz_status unit_not_finite(int64_t m) {
    return pz_fail(PZ_ERR_ARG, "cannot select the top k: the unit of %lld values holds a NaN or an infinity", (long long)m);
}

/* Dense, a list wanted: one pass takes every candidate (key >= t_lo), the
 * exact threshold comes from the band [t_lo, t_hi) among them, and the
 * candidates are trimmed in place (no second pass over x). Returns 1 when
 * it decided (*st set), 0 when the sample misjudged (*c: the candidates
 * still usable, or 0 for all of x). */
static int dense_list(const pz_codec_kernels *k, const float *x, int64_t m, int64_t kk, int by_value, float t_lo, float t_hi,
                      uint32_t *idx, float *vals, float *keys, float *tmp, int64_t *c, pz_status *st) {
    unsigned bad = 0;
    *c = (int64_t)k->select_ge(x, (size_t)m, t_lo, by_value, idx, vals, &bad);
    if (bad) {
        *st = unit_not_finite(m);
        return 1;
    }
    /* the band's values into keys (positions into tmp, unused) */
    uint32_t *pos = (uint32_t *)(void *)tmp;
    size_t above_sz = 0;
    const int64_t nb = (int64_t)k->select_band(vals, (size_t)*c, t_lo, t_hi, by_value, &above_sz, pos, keys, NULL);
    const int64_t above = (int64_t)above_sz;
    if (!(above < kk && above + nb >= kk)) {
        if (*c < kk) *c = 0;
        return 0;
    }
    if (!by_value)
        for (int64_t j = 0; j < nb; j++) keys[j] = fabsf(keys[j]);
    int64_t ties, equal;
    const float T = band_threshold(k, keys, nb, above, kk, t_lo, t_hi, tmp, &ties, &equal);
    int64_t out = 0;
    if (ties == equal) { /* every key >= T is kept: one more vector pass, in place */
        out = (int64_t)k->compact_ge(idx, vals, (size_t)*c, T, by_value);
    } else {
        out = keep_above(idx, vals, *c, T, ties, by_value);
    }
    *st = out == kk ? PZ_OK : pz_fail(PZ_ERR_STATE, "top-k selected %lld of %lld (internal error)", (long long)out, (long long)kk);
    return 1;
}

/* Dense, a threshold wanted (the caller takes the elements in its own
 * pass): the band alone decides it. 1 when it did (or found x not finite:
 * *st set). */
static int dense_threshold(const pz_codec_kernels *k, const float *x, int64_t m, int64_t kk, int by_value, float t_lo, float t_hi,
                           uint32_t *idx, float *vals, float *keys, float *tmp, topk_threshold *th, pz_status *st) {
    size_t n_hi = 0;
    unsigned bad = 0;
    const int64_t band = (int64_t)k->select_band(x, (size_t)m, t_lo, t_hi, by_value, &n_hi, NULL, vals, &bad);
    if (bad) {
        *st = unit_not_finite(m);
        return 1;
    }
    if (!((int64_t)n_hi < kk && (int64_t)n_hi + band >= kk)) return 0;
    for (int64_t j = 0; j < band; j++) keys[j] = by_value ? vals[j] : fabsf(vals[j]);
    int64_t ties, equal;
    const float T = band_threshold(k, keys, band, (int64_t)n_hi, kk, t_lo, t_hi, tmp, &ties, &equal);
    th->only = 1, th->T = T, th->ties = ties, th->extra = equal - ties;
    return 1;
}

/* The exact k largest among c candidates (idx, vals), in place: the k-th
 * key by radix selection, then a branch-free compaction that keeps what
 * beats it and the first ties (lower index first). */
static pz_status exact_select(const pz_codec_kernels *k, uint32_t *idx, float *vals, float *keys, float *tmp, int64_t c, int64_t kk, int by_value) {
    if (by_value)
        for (int64_t j = 0; j < c; j++) keys[j] = vals[j] != vals[j] ? -INFINITY : vals[j];
    else
        for (int64_t j = 0; j < c; j++) keys[j] = vals[j] != vals[j] ? -INFINITY : fabsf(vals[j]);
    const float T = radix_select_desc(k, keys, c, kk - 1, tmp);
    int64_t greater = 0;
    for (int64_t j = 0; j < c; j++) greater += keys[j] > T;
    int64_t ties = kk - greater, out = 0;
    for (int64_t j = 0; j < c; j++) {
        const int64_t eq = keys[j] == T, keep = (keys[j] > T) | (eq & (ties > 0));
        idx[out] = idx[j], vals[out] = vals[j];
        out += keep;
        ties -= eq & keep;
    }
    if (out != kk) return pz_fail(PZ_ERR_STATE, "top-k selected %lld of %lld (internal error)", (long long)out, (long long)kk);
    return PZ_OK;
}

pz_status topk_select(const pz_codec_kernels *k, const float *x, int64_t m, int64_t kk, int by_value,
                      uint32_t *idx, float *vals, float *keys, float *tmp, topk_threshold *th) {
    if (th) th->only = 0;
    if (kk <= 0) return PZ_OK;
    if (kk >= m) {
        if (k->count_nonfinite(x, (size_t)m)) return unit_not_finite(m);
        for (int64_t i = 0; i < m; i++) idx[i] = (uint32_t)i, vals[i] = x[i];
        return PZ_OK;
    }
    int64_t c = 0;
    int checked = 0; /* a pass has checked that x is finite */
    if (m >= 4096) {
        /* a threshold from S samples, a few standard deviations below the
         * expected k-th largest so it keeps >= k; big tensors: a bigger
         * sample narrows the band the exact selection works on (its width
         * goes as 1/sqrt(S)); the sample lives in keys and tmp, free until
         * the band needs them */
        const int S = m >= (1 << 21) ? 32768 : m >= 65536 ? 8192 : (int)(m / 8) & ~15;
        float *sample = keys, *stmp = tmp;
        sample_keys(x, m, S, by_value, sample);
        /* samples from one line are correlated: a wider margin than the
         * binomial 4 sigma */
        const double r = (double)kk * S / (double)m, margin = 4.5 * sqrt(r) + 16.0;
        int sampled = 0; /* c holds candidates from a sampled threshold (or 0: the sample misjudged) */
        if (kk * 20 >= m && r + margin < S) {
            /* dense (>= 5%): the k-th largest lies between two sampled thresholds */
            const float t_lo = radix_select_desc(k, sample, S, (int64_t)(r + margin), stmp);
            const float t_hi = r - margin >= 0 ? radix_select_desc(k, sample, S, (int64_t)(r - margin), stmp) : INFINITY;
            pz_status st = PZ_OK;
            if (!th && t_lo > -INFINITY) {
                if (dense_list(k, x, m, kk, by_value, t_lo, t_hi, idx, vals, keys, tmp, &c, &st)) return st;
                sampled = checked = 1;
            } else if (th && t_lo > -INFINITY) {
                if (dense_threshold(k, x, m, kk, by_value, t_lo, t_hi, idx, vals, keys, tmp, th, &st)) return st;
                checked = 1;
            }
        }
        const double rank = r + margin;
        if (!sampled && rank < S) {
            const float t = radix_select_desc(k, sample, S, (int64_t)rank, stmp);
            if (t > -INFINITY) {
                unsigned bad = 0;
                c = (int64_t)k->select_ge(x, (size_t)m, t, by_value, idx, vals, &bad);
                if (bad) return unit_not_finite(m);
                checked = 1;
                if (c < kk) c = 0; /* the sample misjudged: exact fallback */
            }
        }
    }
    if (c == 0) {
        if (!checked && k->count_nonfinite(x, (size_t)m)) return unit_not_finite(m);
        for (int64_t i = 0; i < m; i++) idx[i] = (uint32_t)i, vals[i] = x[i];
        c = m;
    }
    return exact_select(k, idx, vals, keys, tmp, c, kk, by_value);
}

/* k of m positions, a uniformly random k-subset, ascending: Floyd's
 * algorithm (for j = m-k .. m-1: t = below(j+1); take t, or j if t is taken)
 * on a bitmap, then the bitmap read in order. O(k) draws plus m/64 words.
 * The take is branch-free (a collision is as likely as not late in a dense
 * draw). bits: (m + 63) / 64 zeroed words, left holding the subset. */
void sample_bits(pz_rng *r, int64_t m, int64_t k, uint64_t *bits) {
    for (int64_t j = m - k; j < m; j++) {
        const uint32_t t = pz_rng_below(r, (uint32_t)(j + 1));
        const uint64_t taken = (bits[t >> 6] >> (t & 63)) & 1u;
        const uint64_t at = taken ? (uint64_t)j : t;
        bits[at >> 6] |= 1ull << (at & 63);
    }
}

/* the set bits of bits[0..words) in order, as positions, into out; returns
 * their count */
int64_t bits_positions(const uint64_t *bits, int64_t words, uint32_t *out) {
    int64_t c = 0;
    for (int64_t w = 0; w < words; w++)
        for (uint64_t v = bits[w]; v; v &= v - 1) out[c++] = (uint32_t)(w * 64 + __builtin_ctzll(v));
    return c;
}

pz_status sample_positions(pz_rng *r, int64_t m, int64_t k, uint32_t *out) {
    if (k <= 0) return PZ_OK;
    const int64_t words = (m + 63) / 64;
    uint64_t *bits = calloc((size_t)words, sizeof(uint64_t));
    if (!bits) return pz_fail(PZ_ERR_NOMEM, "out of memory drawing %lld of %lld positions", (long long)k, (long long)m);
    sample_bits(r, m, k, bits);
    bits_positions(bits, words, out);
    free(bits);
    return PZ_OK;
}

pz_status unit_tops_get(const codec_io *io, const units *u, int64_t kk, int flags, unit_tops *t) {
    const int thresholds = (flags & SEL_THRESHOLDS) != 0;
    const int64_t U = u->U, n = u->n;
    codec_scratch *sc = io->sc;
    memset(t, 0, sizeof *t);
    t->pos = scratch_get(sc, SC_POS, sizeof(uint32_t) * (size_t)(U * kk + 1));
    t->vals = scratch_get(sc, SC_VALS, sizeof(float) * (size_t)(U * kk + 1));
    t->idx = scratch_get(sc, SC_IDX, sizeof(uint32_t) * (size_t)(n + 1));
    t->keys = scratch_get(sc, SC_KEYS, sizeof(float) * (size_t)(n + 1));
    t->tmp = scratch_get(sc, SC_TMP, sizeof(float) * (size_t)(n + 1));
    t->cvals = scratch_get(sc, SC_CVALS, sizeof(float) * (size_t)(n + 1));
    t->ths = thresholds ? calloc((size_t)(U ? U : 1), sizeof(topk_threshold)) : NULL;
    if (!t->pos || !t->vals || !t->idx || !t->keys || !t->tmp || !t->cvals || (thresholds && !t->ths)) {
        free(t->ths), t->ths = NULL;
        return pz_fail(PZ_ERR_NOMEM, "out of memory selecting the top %lld of %lld units", (long long)kk, (long long)U);
    }
    t->in_place = (flags & SEL_IN_PLACE) != 0;
    return PZ_OK;
}

pz_status select_unit(const codec_io *io, const float *x, const units *u, int64_t kk, int by_value, unit_tops *t, int64_t un) {
    const int64_t m = u->m;
    uint32_t *idx = t->idx + un * m;
    float *cv = t->cvals + un * m;
    PZ_TRY(topk_select(io->k, x + un * m, m, kk, by_value, idx, cv, t->keys + un * m, t->tmp + un * m, t->ths ? &t->ths[un] : NULL));
    if (!(t->ths && t->ths[un].only) && !t->in_place) {
        memcpy(t->pos + un * kk, idx, sizeof(uint32_t) * (size_t)kk);
        memcpy(t->vals + un * kk, cv, sizeof(float) * (size_t)kk);
    }
    return PZ_OK;
}

pz_status select_units(const codec_io *io, const float *x, const units *u, int64_t kk, int by_value, int flags, unit_tops *t) {
    const int64_t U = u->U, n = u->n;
    PZ_TRY(unit_tops_get(io, u, kk, flags, t));
    pz_status st = PZ_OK;
#pragma omp parallel for schedule(dynamic) if (U > 1 && n > (1 << 16))
    for (int64_t un = 0; un < U; un++) {
        const pz_status s = select_unit(io, x, u, kk, by_value, t, un);
        if (s) {
#pragma omp critical
            st = s;
        }
    }
    if (st) free(t->ths), t->ths = NULL;
    return st;
}

pz_status unit_list_from_threshold(const codec_io *io, const float *x, const units *u, int64_t kk, int by_value, unit_tops *t,
                                   int64_t un) {
    const int64_t m = u->m;
    PZ_TRY(topk_positions(io->k, x + un * m, m, kk, by_value, t->idx + un * m, t->cvals + un * m, t->keys + un * m, t->tmp + un * m));
    if (t->in_place) return PZ_OK;
    memcpy(t->pos + un * kk, t->idx + un * m, sizeof(uint32_t) * (size_t)kk);
    memcpy(t->vals + un * kk, t->cvals + un * m, sizeof(float) * (size_t)kk);
    return PZ_OK;
}
