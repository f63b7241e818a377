/* SPDX-License-Identifier: MIT */
/* test_codecs.c — every codec's round trip and error bound, the papers'
 * claims that are properties of the codecs (MS beats TopK and uniform
 * quantization at the same size), stateful sender/receiver sync, spec
 * parsing. */
#include "../test.h"
#include "pipezip/codec.h"
#include "base/base.h"

#include <unistd.h>

typedef struct {
    uint8_t *frame;
    size_t cap, len;
    float *out;
    pz_codec_stats st;
} rt;

/* encode x with spec, decode with a fresh receiver; returns the frame size */
static size_t roundtrip(const char *spec, const float *x, int ndim, const int64_t *shape, float *out, pz_codec_stats *stats) {
    pz_codec *tx = NULL, *rx = NULL;
    CHECK(pz_codec_create(&tx, spec) == PZ_OK, "%s: %s", spec, pz_last_error());
    CHECK(pz_codec_create(&rx, spec) == PZ_OK, "%s: %s", spec, pz_last_error());
    if (!tx || !rx) return 0;
    size_t cap = pz_codec_max_frame_bytes(tx, ndim, shape), len = 0;
    uint8_t *f = malloc(cap);
    CHECK(pz_codec_encode(tx, x, ndim, shape, NULL, f, cap, &len, stats) == PZ_OK, "%s encode: %s", spec, pz_last_error());
    int nd;
    int64_t sh[4];
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    CHECK(pz_codec_decode(rx, f, len, out, (size_t)n, &nd, sh) == PZ_OK, "%s decode: %s", spec, pz_last_error());
    CHECK(nd == ndim && !memcmp(sh, shape, sizeof(int64_t) * ndim), "%s: shape round trip", spec);
    free(f);
    pz_codec_free(tx), pz_codec_free(rx);
    return len;
}

static void fill_gradient_like(float *x, int64_t n, uint64_t seed) {
    pz_rng r;
    pz_rng_seed(&r, seed);
    for (int64_t i = 0; i < n; i++) x[i] = 0.01f * pz_rng_normal(&r) * (1.0f + 4.0f * (pz_rng_uniform(&r) < 0.05f));
}

/* post-ReLU feature maps: half zeros, a heavy right tail */
static void fill_activation_like(float *x, int64_t n, uint64_t seed) {
    pz_rng r;
    pz_rng_seed(&r, seed);
    for (int64_t i = 0; i < n; i++) {
        const float z = pz_rng_normal(&r);
        x[i] = z > 0 ? z * z * (1.0f + pz_rng_uniform(&r)) : 0.0f;
    }
}

static void test_none_and_halves(void) {
    const int64_t shape[] = {3, 5, 7};
    float x[105], y[105];
    fill_gradient_like(x, 105, 1);
    x[3] = INFINITY, x[4] = -0.0f, x[5] = 1e-40f;
    roundtrip("none", x, 3, shape, y, NULL);
    CHECK(!memcmp(x, y, sizeof x), "none is bit-exact");
    /* every binary16 value survives f16 -> f32 -> f16 */
    float all[65536], back[65536];
    uint16_t h[65536];
    for (int i = 0; i < 65536; i++) h[i] = (uint16_t)i;
    (void)h;
    for (int i = 0; i < 65536; i++) {
        const int e = (i >> 10) & 31, m = i & 1023, s = i >> 15;
        float v = e == 0 ? ldexpf((float)m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexpf((float)(m | 1024), e - 25);
        all[i] = s ? -v : v;
    }
    const int64_t sh1[] = {65536};
    roundtrip("fp16", all, 1, sh1, back, NULL);
    int same = 1;
    for (int i = 0; i < 65536; i++) same &= (all[i] == back[i]) || (isnan(all[i]) && isnan(back[i])) || (all[i] == 0 && back[i] == 0);
    CHECK(same, "every half value round-trips through fp16");
    /* rounding: within half an ulp (relative 2^-11 fp16, 2^-8 bf16) */
    float g[4096], r16[4096], rb16[4096];
    const int64_t sh2[] = {4096};
    fill_gradient_like(g, 4096, 2);
    for (int i = 0; i < 4096; i++) g[i] *= 100.0f;
    roundtrip("fp16", g, 1, sh2, r16, NULL);
    roundtrip("bf16", g, 1, sh2, rb16, NULL);
    int ok16 = 1, okb = 1;
    for (int i = 0; i < 4096; i++) {
        if (fabsf(g[i]) > 6.1e-5f) ok16 &= fabsf(r16[i] - g[i]) <= fabsf(g[i]) * 0x1p-11f;
        okb &= fabsf(rb16[i] - g[i]) <= fabsf(g[i]) * 0x1p-8f;
    }
    CHECK(ok16, "fp16 within half an ulp");
    CHECK(okb, "bf16 within half an ulp");
}

static void test_quant(void) {
    const int64_t shape[] = {4, 3, 5, 6}; /* 360 elements */
    float x[360], y[360];
    fill_gradient_like(x, 360, 3);
    x[7] = 0.2f; /* an outlier */
    const char *grans[] = {"tensor", "sample", "channel"};
    for (int b = 1; b <= 8; b++)
        for (int sym = 0; sym < 2; sym++)
            for (int g = 0; g < 3; g++) {
                char spec[64];
                snprintf(spec, sizeof spec, "q%d:%s,per=%s", b, sym ? "sym" : "asym", grans[g]);
                pz_codec_stats st;
                size_t len = roundtrip(spec, x, 4, shape, y, &st);
                /* the bound: half a step of the element's unit */
                const int U = g == 0 ? 1 : g == 1 ? 4 : 3;
                int ok = 1;
                for (int u = 0; u < U; u++) {
                    float lo = INFINITY, hi = -INFINITY, ma = 0, sa = 0;
                    int cnt = 0;
                    for (int i = 0; i < 360; i++) {
                        const int unit = g == 0 ? 0 : g == 1 ? i / 90 : (i / 30) % 3;
                        if (unit != u) continue;
                        lo = fminf(lo, x[i]), hi = fmaxf(hi, x[i]), ma = fmaxf(ma, fabsf(x[i])), sa += fabsf(x[i]), cnt++;
                    }
                    float bound;
                    if (!sym) bound = (hi - lo) / (float)((1 << b) - 1) / 2;
                    else if (b == 1) bound = INFINITY; /* scaled sign: no per-element bound */
                    else bound = ma / (float)((1 << (b - 1)) - 1) / 2;
                    for (int i = 0; i < 360; i++) {
                        const int unit = g == 0 ? 0 : g == 1 ? i / 90 : (i / 30) % 3;
                        if (unit == u && !(fabsf(y[i] - x[i]) <= bound * 1.0001f + 1e-7f)) ok = 0;
                    }
                    if (sym && b == 1)
                        for (int i = 0; i < 360; i++) {
                            const int unit = g == 0 ? 0 : g == 1 ? i / 90 : (i / 30) % 3;
                            if (unit == u) ok &= fabsf(fabsf(y[i]) - sa / cnt) < 1e-6f && (x[i] >= 0) == (y[i] > 0);
                        }
                }
                CHECK(ok, "%s: error within half a step", spec);
                const size_t scales = (size_t)U * (sym ? 4 : 8);
                CHECK(len == 64 + scales + (360 * (size_t)b + 7) / 8, "%s: %zu bytes", spec, len);
            }
    { /* large tensors: chunked encoding with per-chunk CRCs joined; the
       * decoder re-checks the CRC over the whole frame */
        const int64_t big[] = {3, 100003};
        float *bx = malloc(sizeof(float) * 300009), *by = malloc(sizeof(float) * 300009);
        fill_gradient_like(bx, 300009, 77);
        const char *bspecs[] = {"none", "fp16", "bf16", "q4", "q3:per=sample", "q8:stoch", "q2:sym"};
        for (int i = 0; i < 7; i++) {
            pz_codec_stats st;
            roundtrip(bspecs[i], bx, 2, big, by, &st);
            CHECK(st.rel_error < (i < 3 ? 0.01 : 10.0), "%s on 300009 elements: error %g", bspecs[i], st.rel_error);
        }
        free(bx), free(by);
    }
    /* a constant tensor quantizes exactly */
    float c[16], cy[16];
    for (int i = 0; i < 16; i++) c[i] = 0.375f;
    const int64_t s16[] = {16};
    roundtrip("q3", c, 1, s16, cy, NULL);
    CHECK(!memcmp(c, cy, sizeof c), "a constant tensor is exact");

    /* stochastic rounding is unbiased: the mean of 4000 encodings -> x */
    pz_codec *tx, *rx;
    pz_codec_create(&tx, "q2:stoch");
    pz_codec_create(&rx, "q2:stoch");
    float v[64], sum[64] = {0}, out[64];
    for (int i = 0; i < 64; i++) v[i] = (float)i / 63.0f + 0.3f * sinf((float)i);
    const int64_t s64[] = {64};
    uint8_t f[256];
    size_t len;
    const int draws = 4000;
    for (int t = 0; t < draws; t++) {
        pz_codec_encode(tx, v, 1, s64, NULL, f, sizeof f, &len, NULL);
        pz_codec_decode(rx, f, len, out, 64, NULL, NULL);
        for (int i = 0; i < 64; i++) sum[i] += out[i];
    }
    float lo = v[0], hi = v[0];
    for (int i = 0; i < 64; i++) lo = fminf(lo, v[i]), hi = fmaxf(hi, v[i]);
    const float step = (hi - lo) / 3;
    int unbiased = 1;
    for (int i = 0; i < 64; i++) /* 5 sigma of a mean of draws of +-step/2 */
        unbiased &= fabsf(sum[i] / draws - v[i]) < 5.0f * step * 0.5f / sqrtf((float)draws);
    CHECK(unbiased, "stochastic rounding is unbiased");
    pz_codec_free(tx), pz_codec_free(rx);
}

#define MUST(call) CHECK((call) == PZ_OK, "%s: %s", #call, pz_last_error())
/* Per-token and per-sample scales computed as the coder reaches each
 * unit: units that straddle the coder's super-chunks (65536 elements),
 * serial and over threads (past 2^20 elements), give each unit's exact
 * (lo, step) in the frame, every element within half its unit's step, and
 * the same bytes on 1 and 2 threads; units longer than a super-chunk take
 * the two-pass path, which must agree too. */
static void test_quant_units_fused(void) {
    static const int64_t lens[] = {1000, 65536, 40000, 65537, 7, 256};
    static const int64_t rows[] = {1500, 20, 30, 3, 5000, 4100};
    const char *specs[] = {"q4:per=token", "q8:sym,per=sample", "q3:stoch,per=token"};
    for (int li = 0; li < 6; li++)
        for (int si = 0; si < 3; si++) {
            const int64_t m = lens[li], R = rows[li], n = m * R, shape[] = {R, m};
            const int sym = strstr(specs[si], "sym") != NULL, b = specs[si][1] - '0', stoch = strstr(specs[si], "stoch") != NULL;
            float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
            fill_activation_like(x, n, 90 + (uint64_t)li);
            for (int64_t r = 0; r < R; r++) x[r * m + (r * 7) % m] *= 1.0f + (float)(r % 5); /* scales that differ by unit */
            pz_codec *tx, *tx2, *rx; /* two senders: a frame's sequence number counts */
            MUST(pz_codec_create(&tx, specs[si]));
            MUST(pz_codec_create(&tx2, specs[si]));
            MUST(pz_codec_create(&rx, specs[si]));
            const size_t cap = pz_codec_max_frame_bytes(tx, 2, shape);
            uint8_t *f1 = malloc(cap), *f2 = malloc(cap);
            size_t len1 = 0, len2 = 0;
            pz_set_threads(1);
            MUST(pz_codec_encode(tx, x, 2, shape, NULL, f1, cap, &len1, NULL));
            pz_set_threads(2);
            MUST(pz_codec_encode(tx2, x, 2, shape, NULL, f2, cap, &len2, NULL));
            CHECK(len1 == len2 && !memcmp(f1, f2, len1), "%s, %lld x %lld: the same frame on 1 and 2 threads", specs[si],
                  (long long)R, (long long)m);
            const size_t sb = (size_t)R * (sym ? 4 : 8);
            CHECK(len1 == 64 + sb + ((size_t)n * (size_t)b + 7) / 8, "%s: %zu bytes", specs[si], len1);
            MUST(pz_codec_decode(rx, f1, len1, y, (size_t)n, NULL, NULL));
            int scales = 1, bound = 1;
            for (int64_t r = 0; r < R; r++) {
                float lo = INFINITY, hi = -INFINITY, ma = 0.0f;
                for (int64_t j = 0; j < m; j++) {
                    const float v = x[r * m + j];
                    lo = fminf(lo, v), hi = fmaxf(hi, v), ma = fmaxf(ma, fabsf(v));
                }
                const float step = sym ? ma / (float)((1 << (b - 1)) - 1) : (hi - lo) / (float)((1 << b) - 1);
                float got_lo = 0.0f, got_step;
                if (sym) memcpy(&got_step, f1 + 64 + 4 * r, 4);
                else memcpy(&got_lo, f1 + 64 + 8 * r, 4), memcpy(&got_step, f1 + 64 + 8 * r + 4, 4);
                scales &= got_step == step && (sym || got_lo == lo);
                const float tol = (stoch ? step : step / 2) * 1.0001f + 1e-6f;
                for (int64_t j = 0; j < m; j++) bound &= fabsf(y[r * m + j] - x[r * m + j]) <= tol;
            }
            /* a NaN or an infinity in one unit refuses the tensor, naming it (and codes nothing from it) */
            for (int pl = 0; pl < 2; pl++) {
                const int64_t at = (R / 2) * m + m / 3;
                const float keep = x[at];
                x[at] = pl ? NAN : -INFINITY;
                size_t l3 = 0;
                const pz_status bad = pz_codec_encode(tx, x, 2, shape, NULL, f2, cap, &l3, NULL);
                CHECK(bad == PZ_ERR_ARG && strstr(pz_last_error(), "not finite (1 of its"), "%s, %lld x %lld: a %g refused: %s",
                      specs[si], (long long)R, (long long)m, x[at], pz_last_error());
                x[at] = keep;
            }
            CHECK(scales, "%s, %lld x %lld: each unit's scale exact", specs[si], (long long)R, (long long)m);
            CHECK(bound, "%s, %lld x %lld: each element within its unit's step", specs[si], (long long)R, (long long)m);
            free(f1), free(f2), free(x), free(y);
            pz_codec_free(tx), pz_codec_free(tx2), pz_codec_free(rx);
        }
}

static int cmp_desc(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x < y) - (x > y);
}

static void test_topk(void) {
    for (int big = 0; big < 3; big++) { /* 100003: units off the bitmap's bytes, on the sampled paths */
        const int64_t B = 4, m = big == 2 ? 100003 : big ? 100000 : 997, n = B * m;
        const int64_t shape[] = {B, m};
        float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n), *mag = malloc(sizeof(float) * m);
        fill_gradient_like(x, n, 5 + big);
        const double fracs[] = {0.01, 0.1, 0.3};
        for (int fi = 0; fi < 3; fi++) {
            char spec[64];
            snprintf(spec, sizeof spec, "topk:%g", fracs[fi]);
            pz_codec_stats st;
            size_t len = roundtrip(spec, x, 2, shape, y, &st);
            const int64_t k = (int64_t)floor(fracs[fi] * m + 1e-9);
            int exact = 1;
            for (int64_t b = 0; b < B; b++) {
                /* the k-th largest magnitude by sorting (the reference) */
                for (int64_t i = 0; i < m; i++) mag[i] = fabsf(x[b * m + i]);
                qsort(mag, (size_t)m, sizeof(float), cmp_desc);
                const float kth = mag[k - 1];
                int64_t kept = 0;
                for (int64_t i = 0; i < m; i++) {
                    const float xv = x[b * m + i], yv = y[b * m + i];
                    if (yv != 0.0f) {
                        kept++;
                        exact &= yv == xv && fabsf(xv) >= kth;
                    } else {
                        exact &= fabsf(xv) <= kth;
                    }
                }
                exact &= kept == k;
            }
            CHECK(exact, "%s (m=%lld): exactly the k largest magnitudes per sample, values exact", spec, (long long)m);
            /* forced codings decode the same; auto picks the smaller */
            char sb[96], sd[96];
            snprintf(sb, sizeof sb, "%s,index=bitmap", spec);
            snprintf(sd, sizeof sd, "%s,index=delta", spec);
            size_t lb = roundtrip(sb, x, 2, shape, mag == NULL ? y : y, NULL);
            size_t ld = roundtrip(sd, x, 2, shape, y, NULL);
            CHECK(len == (lb < ld ? lb : ld), "%s: auto index coding chose %zu of bitmap %zu / delta %zu", spec, len, lb, ld);
        }
        free(x), free(y), free(mag);
    }
    { /* one unit of over 2^21 elements (the larger threshold sample), a
       * smooth distribution and a 5-level one (ties at the k-th largest) */
        const int64_t m = 2200003, shape1[] = {1, m};
        float *x = malloc(sizeof(float) * m), *y = malloc(sizeof(float) * m), *mag = malloc(sizeof(float) * m);
        for (int levels = 0; levels < 2; levels++) {
            fill_gradient_like(x, m, 31);
            if (levels)
                for (int64_t i = 0; i < m; i++) x[i] = (float)((int)(fabsf(x[i]) * 7.0f) % 5) - 2.0f;
            for (int64_t i = 0; i < m; i++) mag[i] = fabsf(x[i]);
            qsort(mag, (size_t)m, sizeof(float), cmp_desc);
            const double fr[] = {0.01, 0.07, 0.1, 0.3};
            for (int f = 0; f < 4; f++) {
                char spec[48];
                snprintf(spec, sizeof spec, "topk:%g,per=tensor", fr[f]);
                roundtrip(spec, x, 2, shape1, y, NULL);
                const int64_t k = (int64_t)floor(fr[f] * m + 1e-9);
                const float kth = mag[k - 1];
                int64_t kept = 0, need_ties = k, ok = 1;
                for (int64_t i = 0; i < m; i++) need_ties -= fabsf(x[i]) > kth;
                for (int64_t i = 0; i < m; i++) { /* above kth: kept; at kth: the first need_ties; below: dropped */
                    const float a = fabsf(x[i]);
                    const int want = a > kth || (a == kth && need_ties-- > 0);
                    ok &= want ? y[i] == x[i] : y[i] == 0.0f;
                    kept += want;
                }
                CHECK(ok && kept == k, "%s on %lld elements (%s): exactly the k largest, ties to the lower index", spec, (long long)m,
                      levels ? "5 levels" : "smooth");
            }
        }
        free(x), free(y), free(mag);
    }
    for (int odd = 0; odd < 2; odd++) { /* many ties on large units (the sampled-threshold paths): values on
       * 5 levels, so the k-th largest is shared by thousands; 50001: units off the bitmap's bytes */
        const int64_t m = odd ? 50001 : 50000, shape2[] = {2, m};
        float *x = malloc(sizeof(float) * 2 * m), *y = malloc(sizeof(float) * 2 * m);
        pz_rng r;
        pz_rng_seed(&r, 21);
        for (int64_t i = 0; i < 2 * m; i++) x[i] = (float)(pz_rng_below(&r, 5)) - 2.0f; /* -2..2 */
        const double fr[] = {0.01, 0.1, 0.3, 0.5};
        for (int f = 0; f < 4; f++) {
            char spec[32];
            snprintf(spec, sizeof spec, "topk:%g", fr[f]);
            roundtrip(spec, x, 2, shape2, y, NULL);
            const int64_t k = (int64_t)floor(fr[f] * m + 1e-9);
            int ok = 1;
            for (int64_t b = 0; b < 2; b++) {
                /* expected: all |2|s first (lower indices first), then |1|s ... */
                int64_t kept = 0, need = k;
                for (int level = 2; level >= 0 && need > 0; level--)
                    for (int64_t i = 0; i < m; i++) {
                        const float v = x[b * m + i];
                        const int want = need > 0 && fabsf(v) == (float)level;
                        if (want) need--;
                        if (fabsf(v) == (float)level) ok &= want ? y[b * m + i] == v : y[b * m + i] == 0.0f;
                    }
                for (int64_t i = 0; i < m; i++) kept += y[b * m + i] != 0.0f;
                ok &= kept == k;
            }
            CHECK(ok, "%s on 5-level data: exactly k kept, ties to the lower index", spec);
        }
        free(x), free(y);
    }
    /* ties go to the lower index */
    float t[10] = {1, 3, 2, 3, 0, 3, 1, 0, 0, 0}, ty[10];
    const int64_t s10[] = {1, 10};
    roundtrip("topk:0.2", t, 2, s10, ty, NULL);
    CHECK(ty[1] == 3 && ty[3] == 3 && ty[5] == 0, "ties: the lower indices are kept");
    /* by value keeps the largest positive values */
    float v[8] = {-9, 1, 2, -8, 5, 0, 3, -7}, vy[8];
    const int64_t s8[] = {1, 8};
    roundtrip("topk:0.25,by=value", v, 2, s8, vy, NULL);
    CHECK(vy[4] == 5 && vy[6] == 3 && vy[0] == 0, "by=value keeps the largest values");
    /* quantized values */
    float g[2000], gy[2000];
    const int64_t s2000[] = {2, 1000};
    fill_gradient_like(g, 2000, 9);
    pz_codec_stats st8, st32;
    roundtrip("topk:0.1,values=q8", g, 2, s2000, gy, &st8);
    roundtrip("topk:0.1", g, 2, s2000, gy, &st32);
    CHECK(st8.bytes < st32.bytes && st8.rel_error < st32.rel_error * 1.05 + 1e-3, "q8 values: smaller (%llu < %llu), error %.4f vs %.4f",
          (unsigned long long)st8.bytes, (unsigned long long)st32.bytes, st8.rel_error, st32.rel_error);
}

static void test_randk(void) {
    const int64_t shape[] = {2, 500};
    float x[1000], y[1000], mean[1000] = {0};
    fill_gradient_like(x, 1000, 11);
    pz_codec *tx, *rx;
    pz_codec_create(&tx, "randk:0.1,unbiased");
    pz_codec_create(&rx, "randk:0.1,unbiased");
    uint8_t f[8192];
    size_t len;
    const int draws = 3000;
    for (int t = 0; t < draws; t++) {
        CHECK(pz_codec_encode(tx, x, 2, shape, NULL, f, sizeof f, &len, NULL) == PZ_OK, "%s", pz_last_error());
        pz_codec_decode(rx, f, len, y, 1000, NULL, NULL);
        int kept = 0;
        for (int i = 0; i < 1000; i++) kept += y[i] != 0, mean[i] += y[i];
        if (t == 0) {
            CHECK(kept == 100, "randk keeps k per sample: %d", kept);
            CHECK(len == 64 + 100 * 4, "randk sends no positions: %zu bytes", len);
        }
    }
    double err = 0, ref = 0;
    for (int i = 0; i < 1000; i++) err += pow(mean[i] / draws - x[i], 2), ref += (double)x[i] * x[i];
    /* unbiased: the mean's relative error shrinks like sqrt((d/k - 1) / draws) ~ 0.055 */
    CHECK(sqrt(err / ref) < 0.1, "randk,unbiased is unbiased: relative error of the mean %.3f", sqrt(err / ref));
    pz_codec_free(tx), pz_codec_free(rx);
}

static void test_randtopk(void) {
    const int64_t shape[] = {1, 2000};
    float x[2000], y[2000], ty[2000];
    fill_gradient_like(x, 2000, 13);
    roundtrip("randtopk:0.05,alpha=0", x, 2, shape, y, NULL);
    roundtrip("topk:0.05", x, 2, shape, ty, NULL);
    CHECK(!memcmp(y, ty, sizeof y), "randtopk with alpha=0 is topk");
    /* alpha = 0.5: about half the kept positions come from outside the top k */
    pz_codec *tx, *rx;
    pz_codec_create(&tx, "randtopk:0.05,alpha=0.5");
    pz_codec_create(&rx, "randtopk:0.05,alpha=0.5");
    uint8_t f[16384];
    size_t len;
    double outside = 0;
    for (int t = 0; t < 200; t++) {
        pz_codec_encode(tx, x, 2, shape, NULL, f, sizeof f, &len, NULL);
        pz_codec_decode(rx, f, len, y, 2000, NULL, NULL);
        int kept = 0, out = 0, exact = 1;
        for (int i = 0; i < 2000; i++)
            if (y[i] != 0) kept++, out += ty[i] == 0, exact &= y[i] == x[i];
        CHECK(exact, "randtopk sends exact values");
        CHECK(kept == 100, "randtopk keeps k: %d", kept);
        outside += out;
    }
    /* Zheng et al.: k draws without replacement, a top position weighing
     * (1-alpha)/k and another alpha/(d-k); as the k top positions run out
     * their class weighs less, so E[from outside] exceeds alpha. Its exact
     * value, by dynamic programming over (draws, top positions drawn): */
    double P[101] = {1.0};
    const double wt = 0.5 / 100, wo = 0.5 / 1900;
    for (int t = 0; t < 100; t++) {
        double Q[101] = {0};
        for (int j = 0; j <= t; j++) {
            const double pt = (100 - j) * wt / ((100 - j) * wt + (1900 - (t - j)) * wo);
            Q[j + 1] += P[j] * pt, Q[j] += P[j] * (1 - pt);
        }
        memcpy(P, Q, sizeof P);
    }
    double expect_top = 0;
    for (int j = 0; j <= 100; j++) expect_top += j * P[j];
    const double want = 1.0 - expect_top / 100, got = outside / 200 / 100;
    /* 200 frames of 100 draws: standard error well under 0.01 */
    CHECK(fabs(got - want) < 0.02, "fraction from outside the top k: %.4f, the urn gives %.4f", got, want);
    pz_codec_free(tx), pz_codec_free(rx);
}

static void test_ms(void) {
    const int64_t B = 8, m = 4096, n = B * m;
    const int64_t shape[] = {B, 16, 16, 16};
    float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
    fill_activation_like(x, n, 17);
    for (int bits = 1; bits <= 4; bits++) {
        char spec[64];
        snprintf(spec, sizeof spec, "ms:0.01,bits=%d", bits);
        pz_codec_stats st;
        size_t len = roundtrip(spec, x, 4, shape, y, &st);
        const int64_t k = (int64_t)(0.01 * n);
        const int L = (1 << bits) - 1;
        float sorted_min = INFINITY;
        int64_t exact = 0;
        for (int64_t i = 0; i < n; i++) exact += y[i] == x[i] && x[i] != 0;
        float *mag = malloc(sizeof(float) * n);
        for (int64_t i = 0; i < n; i++) mag[i] = fabsf(x[i]);
        qsort(mag, (size_t)n, sizeof(float), cmp_desc);
        sorted_min = mag[k - 1];
        free(mag);
        const float step = sorted_min / L;
        int ok = 1;
        for (int64_t i = 0; i < n; i++) {
            if (fabsf(x[i]) >= sorted_min) { ok &= y[i] == x[i]; continue; }
            /* within half a code step, or one step just below Top_min where
             * the code L is reserved for the kept values */
            const float bound = fabsf(x[i]) >= sorted_min - step / 2 ? step : step / 2;
            ok &= fabsf(y[i] - x[i]) <= bound * 1.0001f;
        }
        CHECK(exact >= k, "%s: the %lld top values are exact (%lld exact)", spec, (long long)k, (long long)exact);
        CHECK(ok, "%s: the others within half a code step of Top_min/(2^b-1)", spec);
        CHECK(len == 64 + 4 + (size_t)k * 4 + ((size_t)n * bits + 7) / 8, "%s: %zu bytes (unsigned: no sign bits)", spec, len);
    }
    { /* per sample, units that straddle the encoder's 4096-element chunks */
        const int64_t sh2[] = {5, 3001};
        float *a = malloc(sizeof(float) * 15005), *ay = malloc(sizeof(float) * 15005);
        fill_gradient_like(a, 15005, 5);
        pz_codec_stats st2;
        roundtrip("ms:0.05,bits=3,per=sample", a, 2, sh2, ay, &st2);
        int units_ok = 1;
        for (int u = 0; u < 5; u++) {
            int exact = 0;
            for (int i = 0; i < 3001; i++) exact += ay[u * 3001 + i] == a[u * 3001 + i] && a[u * 3001 + i] != 0;
            units_ok &= exact >= 150; /* k = floor(0.05 * 3001) = 150 kept exactly */
        }
        CHECK(units_ok && st2.rel_error < 0.1, "ms per sample: 150 exact values per unit, error %.4f", st2.rel_error);
        free(a), free(ay);
    }
    { /* ties at Top_min on a large unit: the first k of the |x| = 2 are kept
       * exactly (lower index first), the rest get code L - 1 */
        const int64_t sh3[] = {1, 60000};
        float *a = malloc(sizeof(float) * 60000), *ay = malloc(sizeof(float) * 60000);
        pz_rng r;
        pz_rng_seed(&r, 8);
        for (int i = 0; i < 60000; i++) a[i] = (float)pz_rng_below(&r, 5) - 2.0f;
        roundtrip("ms:0.1,bits=2", a, 2, sh3, ay, NULL);
        int64_t seen2 = 0;
        int ok = 1;
        for (int i = 0; i < 60000; i++) {
            if (fabsf(a[i]) != 2.0f) continue;
            if (seen2++ < 6000) ok &= ay[i] == a[i];
            else ok &= ay[i] == (a[i] > 0 ? 1.0f : -1.0f) * (2.0f * (2.0f / 3.0f)); /* code L-1 = 2 of L = 3 */
        }
        CHECK(ok, "ms ties at Top_min: the first k kept, the rest one code below");
        free(a), free(ay);
    }
    /* signed input: one sign bit per element, signs restored */
    for (int64_t i = 0; i < n; i += 3) x[i] = -x[i];
    pz_codec_stats st;
    size_t len = roundtrip("ms:0.01,bits=2", x, 4, shape, y, &st);
    CHECK(len == 64 + 4 + (size_t)(0.01 * n) * 4 + (size_t)n * 2 / 8 + (size_t)n / 8, "signed MS size %zu", len);
    int signs = 1;
    for (int64_t i = 0; i < n; i++) signs &= !(y[i] > 0 && x[i] < 0) && !(y[i] < 0 && x[i] > 0);
    CHECK(signs, "signed MS keeps signs");
    for (int64_t i = 0; i < n; i += 3) x[i] = -x[i];

    /* Paper B, finding 7: at the same size MS has the lowest error. The
     * headline MS (r = 99%, b = 2: 2.32 bits/element) against TopK with a
     * bitmap at the same size (1 + 32 f = 2.32 -> f = 4.1%), randomized TopK
     * likewise, and uniform quantization at 2 and even 3 bits. */
    pz_codec_stats ms, tk, rt_, q2, q3;
    roundtrip("ms:0.01,bits=2", x, 4, shape, y, &ms);
    roundtrip("topk:0.04125,per=tensor,index=bitmap", x, 4, shape, y, &tk);
    roundtrip("randtopk:0.04125,per=tensor,index=bitmap", x, 4, shape, y, &rt_);
    roundtrip("q2", x, 4, shape, y, &q2);
    roundtrip("q3", x, 4, shape, y, &q3);
    printf("activation-like, %lld elements: MS %.3f bits %.4f error | TopK %.3f bits %.4f | RandTopK %.3f bits %.4f | "
           "q2 %.3f bits %.4f | q3 %.3f bits %.4f\n", (long long)n, ms.bits_per_element, ms.rel_error, tk.bits_per_element,
           tk.rel_error, rt_.bits_per_element, rt_.rel_error, q2.bits_per_element, q2.rel_error, q3.bits_per_element, q3.rel_error);
    CHECK(ms.bits_per_element <= tk.bits_per_element + 0.01 && ms.rel_error < tk.rel_error, "MS beats TopK at the same size");
    CHECK(ms.rel_error < rt_.rel_error, "MS beats randomized TopK at the same size");
    CHECK(ms.rel_error < q2.rel_error && ms.rel_error < q3.rel_error, "MS beats uniform quantization at 2 and 3 bits");
    free(x), free(y);
}

static void test_stateful(void) {
    const int64_t shape[] = {4, 50};
    float x[200], ysum[200], xsum[200] = {0}, y[200];
    uint8_t f[4096];
    size_t len;
    { /* EF: sum of what was received + the final error = sum of the inputs */
        pz_codec *tx, *rx;
        pz_codec_create(&tx, "ef(topk:0.1)");
        pz_codec_create(&rx, "ef(topk:0.1)");
        memset(ysum, 0, sizeof ysum);
        for (int t = 0; t < 50; t++) {
            fill_gradient_like(x, 200, 100 + t);
            for (int i = 0; i < 200; i++) xsum[i] += x[i];
            CHECK(pz_codec_encode(tx, x, 2, shape, NULL, f, sizeof f, &len, NULL) == PZ_OK, "%s", pz_last_error());
            pz_codec_decode(rx, f, len, y, 200, NULL, NULL);
            for (int i = 0; i < 200; i++) ysum[i] += y[i];
        }
        /* the residual e is what has not been sent yet: probe it with a zero input */
        float zero[200] = {0};
        double worst = 0;
        pz_codec *probe;
        pz_codec_create(&probe, "ef(none)");
        (void)probe;
        pz_codec_free(probe);
        /* flush: sending zeros through ef(topk) eventually sends all of e; 200 steps do */
        for (int t = 0; t < 200; t++) {
            pz_codec_encode(tx, zero, 2, shape, NULL, f, sizeof f, &len, NULL);
            pz_codec_decode(rx, f, len, y, 200, NULL, NULL);
            for (int i = 0; i < 200; i++) ysum[i] += y[i];
        }
        for (int i = 0; i < 200; i++) worst = fmax(worst, fabs(ysum[i] - xsum[i]));
        CHECK(worst < 1e-5, "error feedback loses nothing: max |sum received - sum sent| = %.3g", worst);
        pz_codec_free(tx), pz_codec_free(rx);
    }
    { /* EF21: sender's and receiver's A identical, and A tracks x */
        pz_codec *tx, *rx;
        pz_codec_create(&tx, "ef21(q2)");
        pz_codec_create(&rx, "ef21(q2)");
        fill_gradient_like(x, 200, 7);
        pz_codec_stats st;
        for (int t = 0; t < 30; t++) {
            pz_codec_encode(tx, x, 2, shape, NULL, f, sizeof f, &len, &st);
            CHECK(pz_codec_decode(rx, f, len, y, 200, NULL, NULL) == PZ_OK, "%s", pz_last_error());
        }
        /* the receiver's A: the same bits as the sender's (its stats' reconstruction) */
        double e = 0, r = 0;
        for (int i = 0; i < 200; i++) e += pow((double)y[i] - x[i], 2), r += (double)x[i] * x[i];
        CHECK(fabs(sqrt(e / r) - st.rel_error) <= 1e-12 * st.rel_error, "ef21 sender and receiver agree (%.6g vs %.6g)", sqrt(e / r), st.rel_error);
        CHECK(st.rel_error < 1e-3, "ef21 converges on a fixed x: error %.3g after 30 steps of q2", st.rel_error);
        pz_codec_free(tx), pz_codec_free(rx);
    }
    /* AQ-SGD: per-sample buffers in sync over epochs of shuffled batches, in
     * memory fp32, fp16, and a memory-mapped file */
    char mm[] = "/tmp/pz-test-aqsgd-XXXXXX";
    CHECK(mkdtemp(mm) != NULL, "mkdtemp");
    char spec3[200];
    snprintf(spec3, sizeof spec3, "aqsgd(q2),store=fp16,mmap=%s", mm);
    const char *specs[] = {"aqsgd(q2)", "aqsgd(topk:0.1),store=fp16", spec3};
    for (int s = 0; s < 3; s++) {
        pz_codec *tx, *rx;
        CHECK(pz_codec_create(&tx, specs[s]) == PZ_OK, "%s: %s", specs[s], pz_last_error());
        CHECK(pz_codec_create(&rx, specs[s]) == PZ_OK, "%s: %s", specs[s], pz_last_error());
        float data[20][50];
        for (int i = 0; i < 20; i++) fill_activation_like(data[i], 50, 300 + i);
        int in_sync = 1;
        double last_err = 0;
        for (int epoch = 0; epoch < 6; epoch++) {
            pz_codec_set_warmup(tx, epoch == 0);
            for (int batch = 0; batch < 5; batch++) {
                uint32_t ids[4];
                for (int b = 0; b < 4; b++) {
                    ids[b] = (uint32_t)((batch * 4 + b + epoch * 7) % 20);
                    for (int i = 0; i < 50; i++) x[b * 50 + i] = data[ids[b]][i] * (1.0f + 0.01f * epoch);
                }
                pz_codec_stats st;
                CHECK(pz_codec_encode(tx, x, 2, shape, ids, f, sizeof f, &len, &st) == PZ_OK, "%s", pz_last_error());
                CHECK(pz_codec_decode(rx, f, len, y, 200, NULL, NULL) == PZ_OK, "%s", pz_last_error());
                double e = 0, r = 0;
                for (int i = 0; i < 200; i++) e += pow((double)y[i] - x[i], 2), r += (double)x[i] * x[i];
                /* the same floats; the double sums may differ in the last bit
                 * (FMA contraction), a desync by orders of magnitude more */
                in_sync &= fabs(sqrt(e / r) - st.rel_error) <= 1e-12 * st.rel_error;
                if (epoch == 0) in_sync &= s == 0 ? e == 0 : sqrt(e / r) < 1e-3; /* warm-up is uncompressed */
                last_err = st.rel_error;
            }
        }
        CHECK(in_sync, "%s: sender and receiver buffers agree", specs[s]);
        CHECK(last_err < 0.05, "%s: the buffers track slowly changing activations (error %.4f)", specs[s], last_err);
        uint32_t ids[4] = {0, 1, 2, 3};
        CHECK(pz_codec_encode(tx, x, 2, shape, NULL, f, sizeof f, &len, NULL) == PZ_ERR_ARG, "aqsgd without ids is refused");
        (void)ids;
        pz_codec_free(tx), pz_codec_free(rx);
    }
    CHECK(rmdir(mm) == 0, "the mmap buffer files are gone once the codecs are freed");
    /* a stateful frame reaching the wrong receiver is refused */
    pz_codec *tx, *plain;
    pz_codec_create(&tx, "ef21(q4)");
    pz_codec_create(&plain, "q4");
    fill_gradient_like(x, 200, 1);
    pz_codec_encode(tx, x, 2, shape, NULL, f, sizeof f, &len, NULL);
    CHECK(pz_codec_decode(plain, f, len, y, 200, NULL, NULL) == PZ_ERR_FORMAT && pz_frame_error_of() == PZ_FRAME_STATE,
          "ef21 frame to a plain receiver: %s", pz_last_error());
    pz_codec_free(tx), pz_codec_free(plain);
}

/* A receiver of another spec: a stateful one (ef21(q4) given ef21(q8)
 * frames) always refuses, naming both codecs; a strict stateless one too;
 * each receiver takes its own spec's frames, over several shapes (and
 * TopK's frames whose index coding it would have written: an automatic
 * choice is either); a
 * stateless receiver that is not strict decodes any frame as before. */
static void test_mismatch(void) {
    static const char *const specs[] = {"none", "fp16", "q4", "q8", "q4:sym", "q4:stoch", "q4:per=sample", "q4:per=token",
                                        "q6:rot", "q6:bytes", "topk:0.1", "topk:0.2", "topk:0.1,values=fp16",
                                        "topk:0.1,index=delta", "topk:0.1,index=bitmap", "randk:0.1", "randtopk:0.1", "ms:0.01,bits=2",
                                        "ms:0.01,bits=3", "lowrank:2", "ef21(q4)", "ef21(q8)", "ef(topk:0.1)",
                                        "ef21(topk:0.1)", "aqsgd(q4)", "aqsgd(q8)"};
    enum { S = sizeof specs / sizeof *specs };
    static const int64_t shapes[][4] = {{16, 128, 0, 0}, {4, 8, 32, 0}, {2, 4, 8, 8}};
    static const int ndims[] = {2, 3, 4};
    static float x[2048], y[2048];
    static uint8_t f[3][S][16384];
    size_t len[3][S];
    const uint32_t ids[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    fill_gradient_like(x, 2048, 5);
    for (int sh = 0; sh < 3; sh++)
        for (int s = 0; s < S; s++) {
            pz_codec *tx;
            MUST(pz_codec_create(&tx, specs[s]));
            if (strncmp(specs[s], "aqsgd", 5) == 0) { /* past the warm-up: a compressed frame */
                MUST(pz_codec_encode(tx, x, ndims[sh], shapes[sh], ids, f[sh][s], sizeof f[sh][s], &len[sh][s], NULL));
                pz_codec_set_warmup(tx, 0);
            }
            MUST(pz_codec_encode(tx, x, ndims[sh], shapes[sh], ids, f[sh][s], sizeof f[sh][s], &len[sh][s], NULL));
            pz_codec_free(tx);
        }
    int own = 1, refused = 1, named = 1, lax = 1;
    for (int r = 0; r < S; r++) {
        const int stateful_rx = strncmp(specs[r], "ef21", 4) == 0 || strncmp(specs[r], "aqsgd", 5) == 0;
        for (int sh = 0; sh < 3; sh++)
            for (int s = 0; s < S; s++) {
                pz_codec *rx, *loose;
                MUST(pz_codec_create(&rx, specs[r]));
                MUST(pz_codec_create(&loose, specs[r]));
                pz_codec_set_strict(rx, 1);
                if (strncmp(specs[r], "aqsgd", 5) == 0) { /* the receiver past its warm-up too */
                    if (s == r) MUST(pz_codec_decode(rx, f[sh][s], len[sh][s], y, 2048, NULL, NULL));
                }
                const pz_status st = pz_codec_decode(rx, f[sh][s], len[sh][s], y, 2048, NULL, NULL);
                /* an automatic index coding takes either coding's frames */
                pz_frame_info fi;
                MUST(pz_frame_inspect(f[sh][s], len[sh][s], &fi));
                const char *ri = strstr(specs[r], "index=");
                const int either = strncmp(specs[r], "topk:0.1", 8) == 0 && (!specs[r][8] || ri) &&
                                   strncmp(specs[s], "topk:0.1", 8) == 0 && (!specs[s][8] || strstr(specs[s], "index=")) &&
                                   (!ri || strcmp(ri + 6, fi.index_coding_name) == 0);
                if (s == r || either) {
                    own &= st == PZ_OK;
                } else {
                    /* (a frame of another wrapper is refused before its codec is looked at) */
                    const int fe = pz_frame_error_of();
                    refused &= st == PZ_ERR_FORMAT && (fe == PZ_FRAME_CODEC || fe == PZ_FRAME_STATE);
                    named &= st == PZ_OK || strstr(pz_last_error(), fe == PZ_FRAME_CODEC ? "codec mismatch" : "state mismatch");
                    if (!stateful_rx && strncmp(specs[s], "ef21", 4) && strncmp(specs[s], "aqsgd", 5))
                        lax &= pz_codec_decode(loose, f[sh][s], len[sh][s], y, 2048, NULL, NULL) == PZ_OK;
                }
                if ((st == PZ_OK) != (s == r || either))
                    fprintf(stderr, "mismatch: %s frame, %s receiver: %s\n", specs[s], specs[r], st ? pz_last_error() : "decoded");
                pz_codec_free(rx), pz_codec_free(loose);
            }
    }
    CHECK(own, "every strict receiver decodes its own spec's frames (3 shapes)");
    CHECK(refused, "every strict receiver refuses the other %d specs' frames (PZ_FRAME_CODEC, or PZ_FRAME_STATE for another wrapper's)", S - 1);
    CHECK(named, "the refusals say which ('codec mismatch', 'state mismatch')");
    CHECK(lax, "a receiver that is not strict decodes any stateless frame");
    /* the case, named both ways */
    pz_codec *tx, *rx;
    MUST(pz_codec_create(&tx, "ef21(q8)"));
    MUST(pz_codec_create(&rx, "ef21(q4)"));
    MUST(pz_codec_encode(tx, x, 2, shapes[0], NULL, f[0][0], sizeof f[0][0], &len[0][0], NULL));
    CHECK(pz_codec_decode(rx, f[0][0], len[0][0], y, 2048, NULL, NULL) == PZ_ERR_FORMAT && strstr(pz_last_error(), "ef21(q8") &&
              strstr(pz_last_error(), "'ef21(q4"),
          "an ef21(q4) receiver refuses ef21(q8) frames, naming both: %s", pz_last_error());
    pz_codec_free(tx), pz_codec_free(rx);
}

/* lowrank: a rank-r matrix comes back from rank r; on a slowly moving
 * low-rank-plus-noise matrix the warm start (the previous frame's Q) tracks
 * the leading subspace with one power iteration far better than a cold
 * start; error feedback around rank 1 sends, over steps, the sum of what
 * it was given (the residual carries what a frame left out). */
static void test_lowrank(void) {
    enum { M = 96, Nf = 32, R = 4 };
    const int64_t shape[] = {4, 24, Nf};
    static float a[M * R], b[Nf * R], x[M * Nf], y[M * Nf];
    static uint8_t f[1 << 16];
    pz_rng r;
    pz_rng_seed(&r, 11);
    for (int i = 0; i < M * R; i++) a[i] = pz_rng_normal(&r);
    for (int i = 0; i < Nf * R; i++) b[i] = pz_rng_normal(&r);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < Nf; j++) {
            double s = 0;
            for (int t = 0; t < R; t++) s += (double)a[i * R + t] * b[j * R + t] * (t + 1);
            x[i * Nf + j] = (float)s;
        }
    pz_codec *c;
    size_t len;
    pz_codec_stats st;
    CHECK(pz_codec_create(&c, "lowrank:4") == PZ_OK, "%s", pz_last_error());
    CHECK(pz_codec_encode(c, x, 3, shape, NULL, f, sizeof f, &len, &st) == PZ_OK && st.rel_error < 1e-5 &&
              len == 64 + 4 * 4 * (M + Nf), "a rank-4 matrix through lowrank:4: error %g, %zu bytes", st.rel_error, len);
    pz_codec_free(c);
    /* the warm start: the same moving target, rank 2 of a rank-4 matrix with spread singular values, plus noise */
    double err_warm = 0, err_cold = 0;
    for (int warm = 0; warm < 2; warm++) {
        CHECK(pz_codec_create(&c, warm ? "lowrank:2" : "lowrank:2,cold") == PZ_OK, "%s", pz_last_error());
        CHECK(pz_codec_is_stateful(c) == warm, "the warm start is state");
        pz_rng_seed(&r, 5);
        double last = 0;
        for (int step = 0; step < 12; step++) {
            for (int i = 0; i < M; i++)
                for (int j = 0; j < Nf; j++) {
                    double s = 0;
                    for (int t = 0; t < R; t++) s += (double)a[i * R + t] * b[j * R + t] * (t == 0 ? 8.0 : t == 1 ? 4.0 : 0.5);
                    y[i * Nf + j] = (float)(s * (1.0 + 0.01 * step)) + 0.05f * pz_rng_normal(&r);
                }
            CHECK(pz_codec_encode(c, y, 3, shape, NULL, f, sizeof f, &len, &st) == PZ_OK, "%s", pz_last_error());
            last = st.rel_error;
        }
        *(warm ? &err_warm : &err_cold) = last;
        pz_codec_free(c);
    }
    CHECK(err_warm < 0.12 && err_warm < 0.8 * err_cold, "warm start %.4f against cold %.4f after 12 steps", err_warm, err_cold);
    /* error feedback: the decoded frames add up to the inputs' sum, less the residual */
    pz_codec *tx, *rx;
    CHECK(pz_codec_create(&tx, "ef(lowrank:1)") == PZ_OK && pz_codec_create(&rx, "ef(lowrank:1)") == PZ_OK, "%s", pz_last_error());
    static double sum_in[M * Nf], sum_out[M * Nf];
    pz_rng_seed(&r, 9);
    for (int step = 0; step < 40; step++) {
        for (int i = 0; i < M * Nf; i++) y[i] = pz_rng_normal(&r), sum_in[i] += y[i];
        CHECK(pz_codec_encode(tx, y, 3, shape, NULL, f, sizeof f, &len, NULL) == PZ_OK &&
                  pz_codec_decode(rx, f, len, x, M * Nf, NULL, NULL) == PZ_OK, "%s", pz_last_error());
        for (int i = 0; i < M * Nf; i++) sum_out[i] += x[i];
    }
    double e = 0, s = 0;
    for (int i = 0; i < M * Nf; i++) e += (sum_in[i] - sum_out[i]) * (sum_in[i] - sum_out[i]), s += sum_in[i] * sum_in[i];
    printf("lowrank: warm %.4f cold %.4f after 12 steps; ef(lowrank:1) sums differ by %.3f\n", err_warm, err_cold, sqrt(e / s));
    CHECK(sqrt(e / s) < 0.8, "ef(lowrank:1) passes on what frames leave out (without ef: 0.98): the sums differ by %.3f", sqrt(e / s));
    pz_codec_free(tx), pz_codec_free(rx);
}

/* fp8's rounding against a reference that knows nothing of float bits: the
 * nearest of the format's 255 finite values by search, ties to the even
 * code. A tensor whose largest magnitude is the format's largest has scale
 * 1, so the codes are the elements' own. */
static double fp8_ref_value(int c, int e) {
    const int m = 7 - e, bias = (1 << (e - 1)) - 1, E = (c & 0x7F) >> m, M = c & ((1 << m) - 1);
    const double v = E ? ldexp(1.0 + ldexp(M, -m), E - bias) : ldexp(M, 1 - bias - m);
    return c & 0x80 ? -v : v;
}
static int fp8_ref_finite(int c, int e) { return e == 4 ? (c & 0x7F) != 0x7F : ((c & 0x7F) >> 2) != 31; }

static void test_fp8(void) {
    enum { N = 4000 };
    for (int e = 4; e <= 5; e++) {
        const double top = e == 4 ? 448.0 : 57344.0;
        static float x[N];
        pz_rng r;
        pz_rng_seed(&r, 11 + e);
        x[0] = (float)top, x[1] = (float)-top, x[2] = 0.0f, x[3] = -0.0f;
        for (int i = 4; i < N; i++) {
            const double mag = ldexp(pz_rng_uniform(&r), -(int)pz_rng_below(&r, e == 4 ? 12 : 20)) * top;
            x[i] = (float)(pz_rng_below(&r, 2) ? mag : -mag);
            if (i % 7 == 0) { /* exactly halfway between two neighbouring codes */
                const int c = (int)pz_rng_below(&r, 0x7E), c1 = c + 1;
                if (fp8_ref_finite(c, e) && fp8_ref_finite(c1, e)) x[i] = (float)((fp8_ref_value(c, e) + fp8_ref_value(c1, e)) / 2);
            }
        }
        pz_codec *c;
        CHECK(pz_codec_create(&c, e == 4 ? "fp8" : "fp8:e5m2") == PZ_OK, "%s", pz_last_error());
        static uint8_t f[64 + 4 + N];
        size_t len;
        const int64_t shape[1] = {N};
        CHECK(pz_codec_encode(c, x, 1, shape, NULL, f, sizeof f, &len, NULL) == PZ_OK && len == sizeof f, "%s", pz_last_error());
        float scale;
        memcpy(&scale, f + 64, 4);
        CHECK(scale == 1.0f, "E%d: the scale of a tensor topped by %g is %g", e, top, scale);
        int bad = 0;
        for (int i = 0; i < N; i++) {
            int best = -1;
            double d_best = INFINITY;
            for (int cd = 0; cd < 256; cd++) {
                if (!fp8_ref_finite(cd, e) || (cd & 0x80) != (signbit(x[i]) ? 0x80 : 0)) continue;
                const double d = fabs(fp8_ref_value(cd, e) - (double)x[i]);
                if (d < d_best || (d == d_best && !(cd & 1))) d_best = d, best = cd;
            }
            const int got = f[68 + i];
            if (got != best && bad++ < 5) fprintf(stderr, "  E%d: %.9g coded 0x%02X, the nearest is 0x%02X\n", e, (double)x[i], got, best);
        }
        CHECK(!bad, "E%dM%d: %d of %d codes are not the nearest value (ties to even)", e, 7 - e, bad, N);
        /* the decoder gives every code's value back */
        static float y[N];
        CHECK(pz_codec_decode(c, f, len, y, N, NULL, NULL) == PZ_OK, "%s", pz_last_error());
        int off = 0;
        for (int i = 0; i < N; i++) off += (double)y[i] != fp8_ref_value(f[68 + i], e);
        CHECK(!off, "E%d: %d decoded values are not their codes'", e, off);
        /* a NaN (E5M2: infinity) code is refused, under a checksum that holds */
        f[68] = e == 4 ? 0x7F : 0x7C;
        static uint8_t cat[56 + 4 + N];
        memcpy(cat, f, 56), memcpy(cat + 56, f + 64, len - 64);
        const uint32_t crc = pz_crc32c(cat, 56 + len - 64);
        for (int b = 0; b < 4; b++) f[56 + b] = (uint8_t)(crc >> (8 * b));
        CHECK(pz_codec_decode(c, f, len, y, N, NULL, NULL) == PZ_ERR_FORMAT && pz_frame_error_of() == PZ_FRAME_PAYLOAD &&
                  strstr(pz_last_error(), "not a finite"),
              "E%d: a non-finite code: %s", e, pz_last_error());
        pz_codec_free(c);
    }
    /* q8 against fp8 on a heavy-tailed tensor: fp8 keeps the small elements (relative error), q8 the large (absolute) */
    static float h[4096], yq[4096], yf[4096];
    pz_rng r;
    pz_rng_seed(&r, 5);
    for (int i = 0; i < 4096; i++) h[i] = pz_rng_normal(&r) * expf(2.0f * pz_rng_normal(&r));
    const int64_t sh[1] = {4096};
    pz_codec *q, *f8;
    CHECK(pz_codec_create(&q, "q8:sym") == PZ_OK && pz_codec_create(&f8, "fp8") == PZ_OK, "%s", pz_last_error());
    static uint8_t fq[8192], ff[8192];
    size_t lq, lf;
    CHECK(pz_codec_encode(q, h, 1, sh, NULL, fq, sizeof fq, &lq, NULL) == PZ_OK && pz_codec_encode(f8, h, 1, sh, NULL, ff, sizeof ff, &lf, NULL) == PZ_OK,
          "%s", pz_last_error());
    CHECK(pz_codec_decode(q, fq, lq, yq, 4096, NULL, NULL) == PZ_OK && pz_codec_decode(f8, ff, lf, yf, 4096, NULL, NULL) == PZ_OK, "%s",
          pz_last_error());
    double rq = 0, rf = 0;
    int small = 0;
    for (int i = 0; i < 4096; i++)
        if (fabsf(h[i]) > 1e-3f && fabsf(h[i]) < 0.1f) rq += fabs(yq[i] - h[i]) / fabs(h[i]), rf += fabs(yf[i] - h[i]) / fabs(h[i]), small++;
    CHECK(small > 100 && rf < 0.1 * rq, "small elements' mean relative error: fp8 %.4f, q8 %.4f (%d of them)", rf / small, rq / small, small);
    printf("fp8 vs q8:sym on a heavy tail (%d elements in (1e-3, 0.1)): mean relative error %.4f vs %.4f\n", small, rf / small, rq / small);
    pz_codec_free(q), pz_codec_free(f8);
}

static void test_specs(void) {
    const char *good[][2] = {
        {"none", "none"}, {"fp32", "none"}, {"fp16", "fp16"}, {"q4", "q4:asym,nearest,per=tensor"},
        {"q8:stoch", "q8:asym,stoch,per=tensor"}, {"q2:sym,per=channel", "q2:sym,nearest,per=channel"},
        {"topk:0.1", "topk:0.1,per=sample,values=fp32,by=magnitude,index=auto"},
        {"randk:0.1,unbiased", "randk:0.1,per=sample,values=fp32,unbiased"},
        {"randtopk:0.01,alpha=0.1", "randtopk:0.01,alpha=0.1,per=sample,values=fp32,index=auto"},
        {"ms:0.01,bits=2", "ms:0.01,bits=2,per=tensor,values=fp32,auto"},
        {"ms:0.01,values=q4", "ms:0.01,bits=2,per=tensor,values=q4,auto"},
        {"ef(topk:0.1)", "ef(topk:0.1,per=sample,values=fp32,by=magnitude,index=auto),per=boundary"},
        {"ef21(q4)", "ef21(q4:asym,nearest,per=tensor)"},
        {"aqsgd(q2)", "aqsgd(q2:asym,nearest,per=tensor),store=fp32"},
        {"aqsgd(topk:0.1),store=fp16", "aqsgd(topk:0.1,per=sample,values=fp32,by=magnitude,index=auto),store=fp16"},
        {"q8+zstd", "q8:asym,nearest,per=tensor+zstd:3"}, {"lowrank:8", "lowrank:8,values=fp32,iters=1,warm"},
        {"q6:bytes,sym", "q6:sym,nearest,per=tensor,bytes"},
        {"lowrank:2,cold,values=q4,iters=3", "lowrank:2,values=q4,iters=3,cold"}, {"none+zstd:19", "none+zstd:19"},
        {"ef(q4:per=token)+zstd:1", "ef(q4:asym,nearest,per=token),per=boundary+zstd:1"},
    };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        pz_codec *c = NULL;
        CHECK(pz_codec_create(&c, good[i][0]) == PZ_OK, "'%s': %s", good[i][0], pz_last_error());
        if (c) {
            CHECK(!strcmp(pz_codec_spec(c), good[i][1]), "'%s' -> '%s', expected '%s'", good[i][0], pz_codec_spec(c), good[i][1]);
            pz_codec *again = NULL;
            CHECK(pz_codec_create(&again, pz_codec_spec(c)) == PZ_OK && !strcmp(pz_codec_spec(again), good[i][1]),
                  "canonical '%s' parses to itself", good[i][1]);
            pz_codec_free(again);
        }
        pz_codec_free(c);
    }
    const char *badspecs[] = {"", "q9", "q0", "q4:fast", "topk", "topk:0", "topk:1.5", "topk:0.1,per=channel", "topk:0.1,per=token", "ms:0.1,per=token",
                              "ms:0.01,bits=9", "ms:0.01,values=q9", "randtopk:0.1,alpha=2", "ef(q4", "ef(ef(q4))",
                              "zip(q4)", "fp16:sym", "aqsgd(q2),store=fp64", "q1:sym,stoch", "topk:abc",
                              "lowrank", "lowrank:0", "lowrank:2.5", "lowrank:5000", "lowrank:2,iters=0", "lowrank:2,per=sample", "q8+", "q8+gzip", "q8+zstd:0", "q8+zstd:20", "q8+zstd:x", "+zstd", "q8+zstd+zstd", "q8+zstd:3,sym"};
    for (size_t i = 0; i < sizeof badspecs / sizeof *badspecs; i++) {
        pz_codec *c = (pz_codec *)1;
        CHECK(pz_codec_create(&c, badspecs[i]) == PZ_ERR_ARG && c == NULL, "'%s' must be rejected", badspecs[i]);
        CHECK(strstr(pz_last_error(), "spec") != NULL, "'%s': message names the spec: %s", badspecs[i], pz_last_error());
    }
}

/* a NaN or an infinity anywhere in a large tensor is refused by every
 * lossy codec with the count, whichever selection path found it (TopK's
 * sparse, dense-list and dense-threshold passes, MS, randomized TopK, a
 * wrapper's), and the float formats carry it */
static void test_nonfinite(void) {
    const int64_t B = 3, m = 100000, n = B * m, shape[] = {B, m};
    float *x = malloc(sizeof(float) * n);
    const char *specs[] = {"q4", "q4:sym", "topk:0.01", "topk:0.1", "topk:0.3", "topk:0.6", "topk:0.1,by=value", "topk:0.01,per=tensor",
                           "topk:0.3,per=tensor", "randtopk:0.1", "randk:0.1", "ms:0.01,bits=2", "ms:0.3,bits=2", "ef(topk:0.1)",
                           "ef21(topk:0.3)", "topk:1"};
    const int64_t places[] = {0, m / 2 + 3, n - 1, 2 * m - 5};
    for (size_t si = 0; si < sizeof specs / sizeof *specs; si++)
        for (int pl = 0; pl < 4; pl++) {
            fill_gradient_like(x, n, 40 + (uint64_t)pl);
            const float bad = pl & 1 ? NAN : (pl & 2 ? -INFINITY : INFINITY);
            x[places[pl]] = bad;
            pz_codec *tx = NULL;
            CHECK(pz_codec_create(&tx, specs[si]) == PZ_OK, "%s: %s", specs[si], pz_last_error());
            if (!tx) continue;
            size_t cap = pz_codec_max_frame_bytes(tx, 2, shape), len = 0;
            uint8_t *f = malloc(cap);
            const pz_status st = pz_codec_encode(tx, x, 2, shape, NULL, f, cap, &len, NULL);
            CHECK(st == PZ_ERR_ARG && strstr(pz_last_error(), "not finite (1 of its 300000 values"),
                  "%s refuses a %g at %lld: status %d, %s", specs[si], bad, (long long)places[pl], st, pz_last_error());
            free(f);
            pz_codec_free(tx);
        }
    free(x);
}

/* rvq: the error of one spec on x (per token, 64 tokens of `len`) */
static double rvq_error(const char *spec, const float *x, int64_t tokens, int64_t len, size_t *bytes) {
    const int64_t shape[2] = {tokens, len};
    pz_codec *c;
    CHECK(pz_codec_create(&c, spec) == PZ_OK, "%s: %s", spec, pz_last_error());
    const size_t cap = pz_codec_max_frame_bytes(c, 2, shape);
    uint8_t *f = malloc(cap);
    float *y = malloc(sizeof(float) * (size_t)(tokens * len));
    pz_codec_stats st = {0};
    size_t len_f = 0;
    CHECK(pz_codec_encode(c, x, 2, shape, NULL, f, cap, &len_f, &st) == PZ_OK, "%s: %s", spec, pz_last_error());
    int nd;
    int64_t got[4];
    CHECK(pz_codec_decode(c, f, len_f, y, tokens * len, &nd, got) == PZ_OK, "%s: %s", spec, pz_last_error());
    double e = 0, nn = 0;
    for (int64_t i = 0; i < tokens * len; i++) e += ((double)y[i] - x[i]) * ((double)y[i] - x[i]), nn += (double)x[i] * x[i];
    CHECK(fabs(sqrt(e / nn) - st.rel_error) < 1e-6, "%s: the stats' error %g is the decoded one %g", spec, st.rel_error, sqrt(e / nn));
    if (bytes) *bytes = len_f;
    free(f), free(y);
    pz_codec_free(c);
    return sqrt(e / nn);
}

/* rvq: tokens made of 8 distinct directions (each token scaled) come back
 * to f16 precision from a codebook of 16 entries; Lloyd's iterations lower the error
 * of a seeded codebook; a second stage lowers it again; a warm sender (its
 * previous frame's codebooks) starts where a cold one ends */
static void test_rvq(void) {
    enum { T = 64, L = 16 };
    float x[T * L], protos[8][4];
    pz_rng r;
    pz_rng_seed(&r, 12);
    for (int p = 0; p < 8; p++) { /* unit norm: every token's RMS is then 1/2 before its scale */
        double nn = 0;
        for (int j = 0; j < 4; j++) protos[p][j] = pz_rng_normal(&r), nn += (double)protos[p][j] * protos[p][j];
        for (int j = 0; j < 4; j++) protos[p][j] = (float)(protos[p][j] / sqrt(nn));
    }
    for (int t = 0; t < T; t++)
        for (int v = 0; v < L / 4; v++) {
            const int p = (int)pz_rng_below(&r, 8);
            for (int j = 0; j < 4; j++) x[t * L + v * 4 + j] = protos[p][j];
        }
    for (int t = 0; t < T; t++) /* a scale per token: the RMS divides it out */
        for (int j = 0; j < L; j++) x[t * L + j] *= 0.5f + (float)t;
    double e_clusters = rvq_error("rvq:4,stages=1,bits=4,iters=8", x, T, L, NULL);
    CHECK(e_clusters < 2e-3, "8 directions from 16 entries: error %g", e_clusters);
    for (int i = 0; i < T * L; i++) x[i] = pz_rng_normal(&r) * (1.0f + (float)(i % 7));
    const double e0 = rvq_error("rvq:4,stages=1,bits=4,iters=0,cold", x, T, L, NULL),
                 e4 = rvq_error("rvq:4,stages=1,bits=4,iters=6,cold", x, T, L, NULL),
                 e2s = rvq_error("rvq:4,stages=2,bits=4,iters=6,cold", x, T, L, NULL);
    CHECK(e4 < 0.9 * e0 && e2s < 0.85 * e4, "Gaussian vectors: error %g (no k-means) > %g (6 iterations) > %g (two stages)", e0, e4, e2s);
    { /* warm: one iteration a frame, each from the last frame's codebook, improves frame by frame */
        const int64_t sh[2] = {T, L};
        pz_codec *c;
        CHECK(pz_codec_create(&c, "rvq:4,stages=1,bits=4,iters=1") == PZ_OK, "%s", pz_last_error());
        uint8_t f[8192];
        double e[4];
        for (int k = 0; k < 4; k++) {
            size_t len;
            pz_codec_stats st = {0};
            CHECK(pz_codec_encode(c, x, 2, sh, NULL, f, sizeof f, &len, &st) == PZ_OK, "%s", pz_last_error());
            e[k] = st.rel_error;
        }
        CHECK(e[1] < e[0] && e[2] < e[1] && e[3] < e[2] && e[3] < e0, "warm frames' errors %g, %g, %g, %g (none: %g, 6 cold iterations: %g)",
              e[0], e[1], e[2], e[3], e0, e4);
        pz_codec_free(c);
    }
    size_t bytes = 0;
    rvq_error("rvq:4,stages=2,bits=4", x, T, L, &bytes);
    CHECK(bytes == 64 + 4 * T + 2 * 2 * 16 * 4 + 2 * (T * L / 4 * 4 / 8), "rvq:4,stages=2,bits=4: %zu bytes", bytes);
    /* a wrong vector length, channel units and huge magnitudes are refused, naming what to do */
    const int64_t shape[2] = {T, L};
    pz_codec *c;
    uint8_t f[8192];
    size_t len;
    CHECK(pz_codec_create(&c, "rvq:5") == PZ_OK, "%s", pz_last_error());
    CHECK(pz_codec_encode(c, x, 2, shape, NULL, f, sizeof f, &len, NULL) == PZ_ERR_ARG && strstr(pz_last_error(), "does not split"),
          "rvq:5 on tokens of 16: %s", pz_last_error());
    pz_codec_free(c);
    CHECK(pz_codec_create(&c, "rvq:4,per=channel") == PZ_ERR_ARG && strstr(pz_last_error(), "per= takes token, sample or tensor"), "%s",
          pz_last_error());
    CHECK(pz_codec_create(&c, "rvq:4") == PZ_OK, "%s", pz_last_error());
    x[3] = 1e36f;
    CHECK(pz_codec_encode(c, x, 2, shape, NULL, f, sizeof f, &len, NULL) == PZ_ERR_ARG && strstr(pz_last_error(), "FLT_MAX / 8192"), "%s",
          pz_last_error());
    pz_codec_free(c);
}

int main(void) {
    test_rvq();
    test_fp8();
    test_nonfinite();
    test_none_and_halves();
    test_quant();
    test_quant_units_fused();
    test_topk();
    test_randk();
    test_randtopk();
    test_ms();
    test_stateful();
    test_specs();
    test_lowrank();
    test_mismatch();
    TEST_DONE();
}
