/* SPDX-License-Identifier: MIT */
/* test_registry.c — the codec test registry, in the spirit of ggml's
 * test-backend-ops: one table of (codec spec × data × property). A new codec
 * adds rows here, not a test function. The properties are checked the same
 * way for every codec that claims them:
 *
 *   EXACT     decodes to the input bit for bit
 *   BOUND     every element within the codec's worst case: `a` times the
 *             unit's step (half a step for rounding to nearest) where step is
 *             range/(2^b-1) (asymmetric) or max|x|/(2^(b-1)-1) (symmetric),
 *             for the unit granularity the spec names
 *   RELERR    ||x_hat - x|| / ||x|| <= a
 *   KEPT      TopK: per unit exactly k = floor(F m) elements survive, and
 *             they are the k largest magnitudes (ties at the k-th allowed),
 *             with their exact values
 *   SUBSET    k elements per unit survive, each with its exact value (Rand-K)
 *   SIZE      the frame is exactly `a` bytes (worked out by hand from
 *             docs/FORMAT.md for the 4x3x5x6 test tensor)
 *   UNBIASED  the mean of 3000 encodings (fresh seeds) is within 5 standard
 *             errors of x everywhere (the largest standard deviation a draw
 *             can have: half a step; |x| sqrt(m/k - 1) for unbiased Rand-K)
 *   SYNC      stateful codecs: 20 steps through a sender and a receiver; a
 *             second receiver fed the same frames decodes the same; a sender
 *             and a receiver saved and restored halfway go on byte for byte
 *             and value for value
 *
 * Data (4x3x5x6 = 360 floats): GRAD (small normal values with 5% outliers),
 * ACT (post-ReLU: half zeros, heavy tail), CONST (one value), TIES (five
 * magnitude levels), SPIKE (zeros and one large element). */
#include "../test.h"
#include "pipezip/codec.h"
#include "base/base.h"

enum { N = 360 };
static const int64_t SHAPE[4] = {4, 3, 5, 6};

typedef enum { GRAD, ACT, CONST, TIES, SPIKE } data_kind;
static const char *const data_names[] = {"grad", "act", "const", "ties", "spike"};
typedef enum { EXACT, BOUND, RELERR, KEPT, SUBSET, SIZE, UNBIASED, SYNC } property;
static const char *const prop_names[] = {"exact", "bound", "relerr", "kept", "subset", "size", "unbiased", "sync"};

typedef struct {
    const char *spec;
    data_kind data;
    property prop;
    double a;
} row;

static const row rows[] = {
    /* lossless and half precision */
    {"none", GRAD, EXACT, 0}, {"none", SPIKE, EXACT, 0}, {"none", GRAD, SIZE, 64 + 4 * N},
    {"fp16", GRAD, RELERR, 0x1p-11}, {"bf16", GRAD, RELERR, 0x1p-8}, {"fp16", ACT, RELERR, 0x1p-11},
    {"fp16", GRAD, SIZE, 64 + 2 * N}, {"bf16", ACT, SIZE, 64 + 2 * N},
    /* uniform quantization: half a step, sizes (scales + packed codes) */
    {"q8", GRAD, BOUND, 0.5}, {"q4", GRAD, BOUND, 0.5}, {"q2", ACT, BOUND, 0.5}, {"q1", GRAD, BOUND, 0.5},
    {"q4:sym", GRAD, BOUND, 0.5}, {"q2:sym", ACT, BOUND, 0.5}, {"q8:sym,per=channel", GRAD, BOUND, 0.5},
    {"q3:per=sample", ACT, BOUND, 0.5}, {"q5:per=channel", GRAD, BOUND, 0.5}, {"q4", CONST, EXACT, 0},
    {"q2:per=token", ACT, BOUND, 0.5}, {"q4:sym,per=token", GRAD, BOUND, 0.5}, {"q3:per=token", GRAD, SIZE, 64 + 60 * 8 + 135},
    {"q8:stoch", GRAD, BOUND, 1.0}, {"q2:stoch", ACT, BOUND, 1.0},
    {"q4", GRAD, SIZE, 64 + 8 + N / 2}, {"q4:sym", GRAD, SIZE, 64 + 4 + N / 2}, {"q5:bytes", GRAD, SIZE, 64 + 8 + N},
    {"q5:bytes", GRAD, BOUND, 0.5}, {"q3:sym,per=token,bytes", ACT, BOUND, 0.5},
    {"q3:per=sample", GRAD, SIZE, 64 + 4 * 8 + 135}, {"q2:sym,per=channel", GRAD, SIZE, 64 + 3 * 4 + 90},
    {"q1:sym", GRAD, SIZE, 64 + 4 + 45}, {"q8", ACT, SIZE, 64 + 8 + N},
    {"q2:stoch", ACT, UNBIASED, 0}, {"q4:sym,stoch", GRAD, UNBIASED, 0},
    /* TopK family */
    {"topk:0.1", GRAD, KEPT, 0}, {"topk:0.3", ACT, KEPT, 0}, {"topk:0.05,per=tensor", GRAD, KEPT, 0},
    {"topk:0.2,per=tensor", ACT, KEPT, 0}, {"topk:0.1", TIES, KEPT, 0}, {"topk:0.1,index=bitmap", GRAD, KEPT, 0},
    {"topk:0.1,index=delta", GRAD, KEPT, 0}, {"topk:1", GRAD, EXACT, 0},
    {"topk:0.2,values=q8", GRAD, RELERR, 0.5}, {"topk:0.2,values=fp16", ACT, RELERR, 0.5},
    {"randk:0.1", GRAD, SUBSET, 0}, {"randk:0.25,per=tensor", ACT, SUBSET, 0},
    {"randk:0.1", GRAD, SIZE, 64 + 4 * 9 * 4}, {"randk:0.1,values=fp16", GRAD, SIZE, 64 + 2 * 9 * 4},
    {"randk:0.25,unbiased", GRAD, UNBIASED, 0}, {"randtopk:0.1,alpha=0.2", GRAD, SUBSET, 0},
    {"randtopk:0.1,alpha=0", GRAD, KEPT, 0},
    /* MS: the kept elements exact, everything below Top_min within its codes */
    {"ms:0.1,bits=3", GRAD, RELERR, 0.5}, {"ms:0.05,bits=2", ACT, RELERR, 0.7}, {"ms:0.1,bits=1", SPIKE, RELERR, 1e-6},
    {"ms:0.1,bits=3,values=q8", GRAD, RELERR, 0.5}, {"ms:0.05,bits=2,values=q4", ACT, RELERR, 0.7},
    /* low rank: the 60 x 6 matrix at full rank is exact to rounding; sizes are r (60 + 6) values; the warm start
     * restores from a saved state (SYNC) */
    {"lowrank:6", GRAD, RELERR, 1e-5}, {"lowrank:6,values=fp16", ACT, RELERR, 0x1p-9},
    {"lowrank:2", GRAD, SIZE, 64 + 4 * 2 * (60 + 6)}, {"lowrank:2,values=fp16", ACT, SIZE, 64 + 2 * 2 * (60 + 6)},
    {"lowrank:2,values=q8", GRAD, SIZE, 64 + 4 + 120 + 4 + 12}, {"lowrank:2", GRAD, SYNC, 0}, {"ef(lowrank:1)", ACT, SYNC, 0},
    /* fp8: a scale per unit and a byte per element; E4M3 keeps 3 mantissa bits, E5M2 2 */
    {"fp8", GRAD, SIZE, 64 + 4 + N}, {"fp8:per=token", ACT, SIZE, 64 + 4 * 60 + N}, {"fp8:e5m2,per=channel", GRAD, SIZE, 64 + 4 * 3 + N},
    {"fp8", GRAD, RELERR, 0x1p-4}, {"fp8:e5m2", ACT, RELERR, 0x1p-3}, {"fp8:per=sample", SPIKE, RELERR, 0x1p-4},
    {"fp8", TIES, RELERR, 0x1p-4}, {"ef(fp8:e5m2)", GRAD, SYNC, 0},
    /* rvq: sizes are U scales + S 2^b G f16 entries + S code streams (per token: 60 units of 6, vectors of 3: 120 of them);
     * with more entries than vectors every vector is an entry (f16 rounding, then stage 2 takes most of that); the warm
     * codebooks restore from a saved state (SYNC) */
    {"rvq:3,stages=2,bits=4", GRAD, SIZE, 64 + 4 * 60 + 2 * 2 * 16 * 3 + 2 * 60}, {"rvq:6,bits=8", GRAD, RELERR, 1e-5},
    {"rvq:2,stages=1,bits=2,per=tensor", GRAD, SIZE, 64 + 4 + 2 * 4 * 2 + 45}, {"rvq:2,stages=3,bits=3", ACT, RELERR, 0.15},
    {"rvq:3", GRAD, SYNC, 0}, {"ef(rvq:2,bits=3)", GRAD, SYNC, 0},
    /* stateful wrappers */
    {"ef(q2)", GRAD, SYNC, 0}, {"ef(topk:0.1)", ACT, SYNC, 0}, {"ef21(q4)", GRAD, SYNC, 0},
    {"ef21(topk:0.2)", GRAD, SYNC, 0}, {"aqsgd(q2)", ACT, SYNC, 0}, {"aqsgd(topk:0.1),store=fp16", GRAD, SYNC, 0},
};

static void fill(data_kind d, float *x, uint64_t seed) {
    pz_rng r;
    pz_rng_seed(&r, seed);
    for (int i = 0; i < N; i++) {
        const float z = pz_rng_normal(&r);
        switch (d) {
        case GRAD: x[i] = 0.01f * z * (1.0f + 4.0f * (pz_rng_uniform(&r) < 0.05f)); break;
        case ACT: x[i] = z > 0 ? z * z * (1.0f + pz_rng_uniform(&r)) : 0.0f; break;
        case CONST: x[i] = 0.375f; break;
        case TIES: x[i] = (float)((int)pz_rng_below(&r, 5) - 2) * 0.5f; break;
        case SPIKE: x[i] = i == 77 ? 40.0f : 0.0f; break;
        }
    }
}

/* the unit of element i and the number of units, for the spec's granularity */
static int unit_of(const char *spec, int i, int *U) {
    if (strstr(spec, "per=tensor")) return *U = 1, 0;
    if (strstr(spec, "per=channel")) return *U = 3, (i / 30) % 3;
    if (strstr(spec, "per=token")) return *U = 60, i / 6;
    if (strstr(spec, "per=sample")) return *U = 4, i / 90;
    /* defaults: quantization per tensor, sparsifiers per sample */
    const int sparse = !strncmp(spec, "topk", 4) || !strncmp(spec, "randk", 5) || !strncmp(spec, "randtopk", 8) || !strncmp(spec, "ms", 2);
    return sparse ? (*U = 4, i / 90) : (*U = 1, 0);
}

static double fraction_of(const char *spec) { return atof(strchr(spec, ':') + 1); }

/* one encode-decode with fresh codecs (seed given); returns the frame length */
static size_t roundtrip(const char *spec, const float *x, float *y, uint64_t seed) {
    pz_codec *tx, *rx;
    if (pz_codec_create(&tx, spec) || pz_codec_create(&rx, spec)) return 0;
    pz_codec_set_seed(tx, seed);
    uint8_t f[8192];
    size_t len = 0;
    int nd;
    int64_t sh[4];
    const int ok = pz_codec_encode(tx, x, 4, SHAPE, NULL, f, sizeof f, &len, NULL) == PZ_OK &&
                   pz_codec_decode(rx, f, len, y, N, &nd, sh) == PZ_OK && nd == 4 && !memcmp(sh, SHAPE, sizeof sh);
    pz_codec_free(tx), pz_codec_free(rx);
    return ok ? len : 0;
}

static int check_bound(const char *spec, const float *x, const float *y, double a) {
    const int b = atoi(spec + 1), sym = strstr(spec, "sym") != NULL;
    int U;
    unit_of(spec, 0, &U);
    for (int u = 0; u < U; u++) {
        float lo = INFINITY, hi = -INFINITY, ma = 0, sa = 0;
        int cnt = 0;
        for (int i = 0; i < N; i++) {
            int uu;
            if (unit_of(spec, i, &uu) != u) continue;
            lo = fminf(lo, x[i]), hi = fmaxf(hi, x[i]), ma = fmaxf(ma, fabsf(x[i])), sa += fabsf(x[i]), cnt++;
        }
        for (int i = 0; i < N; i++) {
            int uu;
            if (unit_of(spec, i, &uu) != u) continue;
            if (sym && b == 1) { /* scaled sign: the unit's mean magnitude with x's sign */
                if (fabsf(fabsf(y[i]) - sa / cnt) > 1e-6f * (sa / cnt) || (x[i] >= 0) != (y[i] > 0)) return 0;
                continue;
            }
            const double step = sym ? ma / ((1 << (b - 1)) - 1) : (hi - lo) / ((1 << b) - 1);
            if (!(fabs((double)y[i] - x[i]) <= a * step * 1.0001 + 1e-7)) return 0;
        }
    }
    return 1;
}

/* KEPT (topk = 1) or SUBSET (0): per unit, k survivors with exact values */
static int check_kept(const char *spec, const float *x, const float *y, int topk) {
    int U;
    unit_of(spec, 0, &U);
    const int m = N / U;
    int64_t k = (int64_t)floor(fraction_of(spec) * m + 1e-9);
    if (k < 1) k = 1;
    for (int u = 0; u < U; u++) {
        float mags[N];
        int nm = 0, kept = 0, zeros_in = 0;
        for (int i = 0; i < N; i++) {
            int uu;
            if (unit_of(spec, i, &uu) == u) mags[nm++] = fabsf(x[i]), zeros_in += x[i] == 0.0f;
        }
        /* the k-th largest magnitude */
        for (int a = 0; a < nm; a++)
            for (int c = a + 1; c < nm; c++)
                if (mags[c] > mags[a]) { const float t = mags[a]; mags[a] = mags[c], mags[c] = t; }
        const float kth = mags[k - 1];
        for (int i = 0; i < N; i++) {
            int uu;
            if (unit_of(spec, i, &uu) != u) continue;
            if (y[i] != 0.0f) {
                kept++;
                if (y[i] != x[i]) return 0;
                if (topk && fabsf(x[i]) < kth) return 0;
            } else if (topk && fabsf(x[i]) > kth) return 0;
        }
        /* a kept zero decodes as zero: count at most k, at least k minus the zeros */
        if (kept > k || kept < k - zeros_in) return 0;
    }
    return 1;
}

static double rel_error(const float *x, const float *y) {
    double num = 0, den = 0;
    for (int i = 0; i < N; i++) num += ((double)y[i] - x[i]) * ((double)y[i] - x[i]), den += (double)x[i] * x[i];
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* the largest standard deviation one draw can have at element i: stochastic
 * rounding moves by less than a step (sd <= step/2); unbiased Rand-K sends
 * x m/k with probability k/m (sd = |x| sqrt(m/k - 1)) */
static double draw_sd(const char *spec, const float *x, int i) {
    int U;
    const int u = unit_of(spec, i, &U), m = N / U;
    if (!strncmp(spec, "randk", 5)) {
        int64_t k = (int64_t)floor(fraction_of(spec) * m + 1e-9);
        if (k < 1) k = 1;
        return fabs(x[i]) * sqrt((double)m / (double)k - 1.0);
    }
    const int b = atoi(spec + 1), sym = strstr(spec, "sym") != NULL;
    float lo = INFINITY, hi = -INFINITY, ma = 0;
    for (int j = 0; j < N; j++) {
        int uu;
        if (unit_of(spec, j, &uu) == u) lo = fminf(lo, x[j]), hi = fmaxf(hi, x[j]), ma = fmaxf(ma, fabsf(x[j]));
    }
    return 0.5 * (sym ? ma / ((1 << (b - 1)) - 1) : (hi - lo) / ((1 << b) - 1));
}

static int check_unbiased(const char *spec, const float *x) {
    enum { DRAWS = 3000 };
    static double sum[N];
    memset(sum, 0, sizeof sum);
    float y[N];
    for (int t = 0; t < DRAWS; t++) {
        if (!roundtrip(spec, x, y, 1000 + (uint64_t)t)) return 0;
        for (int i = 0; i < N; i++) sum[i] += y[i];
    }
    for (int i = 0; i < N; i++) {
        const double mean = sum[i] / DRAWS, se = draw_sd(spec, x, i) / sqrt((double)DRAWS);
        if (fabs(mean - x[i]) > 5 * se + 1e-6 * fabs(x[i]) + 1e-9) {
            fprintf(stderr, "%s: element %d: x = %g, mean of %d draws %g, standard error at most %g\n", spec, i, x[i], DRAWS, mean, se);
            return 0;
        }
    }
    return 1;
}

static int check_sync(const char *spec, data_kind d) {
    pz_codec *tx, *rx, *rx2, *tx_b = NULL, *rx_b = NULL;
    if (pz_codec_create(&tx, spec) || pz_codec_create(&rx, spec) || pz_codec_create(&rx2, spec)) return 0;
    pz_codec *all[3] = {tx, rx, rx2};
    for (int i = 0; i < 3; i++) pz_codec_set_max_samples(all[i], 8);
    const uint32_t ids[4] = {3, 0, 7, 5};
    int ok = 1;
    uint8_t f[8192], g[8192];
    float x[N], y[N], y2[N], yb[N];
    for (int t = 0; t < 20 && ok; t++) {
        if (t == 10) { /* save both ends, restore into fresh codecs that carry on beside the originals */
            uint8_t *st;
            size_t n;
            ok &= pz_codec_create(&tx_b, spec) == PZ_OK && pz_codec_create(&rx_b, spec) == PZ_OK;
            pz_codec_set_max_samples(tx_b, 8), pz_codec_set_max_samples(rx_b, 8);
            ok &= pz_codec_state_save(tx, &st, &n) == PZ_OK && pz_codec_state_load(tx_b, st, n) == PZ_OK;
            free(st);
            ok &= pz_codec_state_save(rx, &st, &n) == PZ_OK && pz_codec_state_load(rx_b, st, n) == PZ_OK;
            free(st);
            if (!ok) break;
        }
        fill(d, x, 500 + (uint64_t)t);
        size_t len, lb;
        ok &= pz_codec_encode(tx, x, 4, SHAPE, ids, f, sizeof f, &len, NULL) == PZ_OK;
        ok &= pz_codec_decode(rx, f, len, y, N, NULL, NULL) == PZ_OK;
        ok &= pz_codec_decode(rx2, f, len, y2, N, NULL, NULL) == PZ_OK && !memcmp(y, y2, sizeof y);
        if (tx_b && ok) {
            ok &= pz_codec_encode(tx_b, x, 4, SHAPE, ids, g, sizeof g, &lb, NULL) == PZ_OK && lb == len && !memcmp(f, g, len);
            ok &= pz_codec_decode(rx_b, f, len, yb, N, NULL, NULL) == PZ_OK && !memcmp(y, yb, sizeof y);
        }
    }
    pz_codec_free(tx), pz_codec_free(rx), pz_codec_free(rx2), pz_codec_free(tx_b), pz_codec_free(rx_b);
    return ok;
}

int main(void) {
    const int n_rows = (int)(sizeof rows / sizeof *rows);
    for (int r = 0; r < n_rows; r++) {
        const row *w = &rows[r];
        float x[N], y[N];
        fill(w->data, x, 42 + (uint64_t)r);
        size_t len = 0;
        if (w->prop != UNBIASED && w->prop != SYNC) {
            len = roundtrip(w->spec, x, y, 7);
            CHECK(len > 0, "%s on %s: the round trip failed: %s", w->spec, data_names[w->data], pz_last_error());
            if (!len) continue;
        }
        int ok = 1;
        double got = 0;
        switch (w->prop) {
        case EXACT: ok = !memcmp(x, y, sizeof x); break;
        case BOUND: ok = check_bound(w->spec, x, y, w->a); break;
        case RELERR: got = rel_error(x, y), ok = got <= w->a; break;
        case KEPT: ok = check_kept(w->spec, x, y, 1); break;
        case SUBSET: ok = check_kept(w->spec, x, y, 0); break;
        case SIZE: got = (double)len, ok = len == (size_t)w->a; break;
        case UNBIASED: ok = check_unbiased(w->spec, x); break;
        case SYNC: ok = check_sync(w->spec, w->data); break;
        }
        CHECK(ok, "%s on %s: %s %g (got %g)", w->spec, data_names[w->data], prop_names[w->prop], w->a, got);
    }
    /* every family of the library has rows */
    const char *families[] = {"none", "fp16", "bf16", "q", "topk", "randk", "randtopk", "ms", "lowrank", "fp8", "rvq", "ef(", "ef21(", "aqsgd("};
    for (size_t f = 0; f < sizeof families / sizeof *families; f++) {
        int has = 0;
        for (int r = 0; r < n_rows; r++) {
            const char *s = rows[r].spec;
            if (!strcmp(families[f], "q")) has |= s[0] == 'q' && s[1] >= '1' && s[1] <= '8';
            else has |= !strncmp(s, families[f], strlen(families[f])) && (strchr(families[f], '(') || !strchr(s, '('));
        }
        CHECK(has, "the registry has no row for %s", families[f]);
    }
    printf("%d rows\n", n_rows);
    TEST_DONE();
}
