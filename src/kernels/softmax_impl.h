/* SPDX-License-Identifier: MIT */
/* softmax_impl.h — attention's row loops (the softmax of a block of
 * scores, and its backward), one source built per ISA: transformer.c
 * (AVX2) and transformer_avx512.c define SM_SUFFIX and include it.
 *
 * Every sum is kept in 16 lanes (lane l takes the elements j with j % 16
 * == l, in order) and the lanes are added in one fixed tree, so a row's
 * sum has the same bits in every build (one AVX-512 vector of lanes, or
 * two AVX2 ones). The maximum is exact in any order. */
#include "fastmath.h"

#include <math.h>

#define SM_CAT2(a, b) a##_##b
#define SM_CAT(a, b) SM_CAT2(a, b)
#define SM_NAME(n) SM_CAT(n, SM_SUFFIX)

#ifndef SM_LANES
#define SM_LANES 16

/* p[j] = exp(p[j] - sub) for j < n, each added to lane j % 16 of acc, times
 * w[j] where w is given (a row's sum, or its dot product with w) */
static inline void sm_exp_lanes(float *restrict p, const float *restrict w, int n, float sub, float acc[SM_LANES]) {
    int j = 0;
    for (; j + SM_LANES <= n; j += SM_LANES) {
#pragma omp simd
        for (int l = 0; l < SM_LANES; l++) {
            const float e = pz_exp_neg(p[j + l] - sub);
            p[j + l] = e, acc[l] += w ? e * w[j + l] : e;
        }
    }
    for (int l = 0; l < n - j; l++) {
        const float e = pz_exp_neg(p[j + l] - sub);
        p[j + l] = e, acc[l] += w ? e * w[j + l] : e;
    }
}
#endif

void SM_NAME(softmax_rows_forward)(float *restrict S, float *restrict inv, float *restrict L, int nq, int nk, int i0);
void SM_NAME(softmax_rows_backward)(float *restrict P, float *restrict dS, const float *restrict L, int nq, int nk, int i0);

/* rows r < nq of S (nk wide) are query i0 + r's scaled scores against keys
 * 0 .. nk - 1, of which it sees 0 .. i0 + r: each row becomes exp(s - max)
 * over those (zeros after), inv[r] 1 / their sum, L[r] max + log(sum) */
void SM_NAME(softmax_rows_forward)(float *restrict S, float *restrict inv, float *restrict L, int nq, int nk, int i0) {
    for (int r = 0; r < nq; r++) {
        float *restrict sr = S + (size_t)r * nk;
        const int n = i0 + r + 1;
        float mx = sr[0];
#pragma omp simd reduction(max : mx)
        for (int j = 1; j < n; j++) mx = sr[j] > mx ? sr[j] : mx;
        float acc[SM_LANES] = {0};
        sm_exp_lanes(sr, NULL, n, mx, acc);
        for (int t = n; t < nk; t++) sr[t] = 0.0f;
        const float sum = pz_lanes16_sum(acc);
        inv[r] = 1.0f / sum;
        L[r] = mx + logf(sum);
    }
}

/* rows r < nq: P holds query i0 + r's scaled scores, dS the gradient dP of
 * its probabilities; P becomes the probabilities exp(s - L[r]), dS the
 * scores' gradient P (dP - sum_j P dP), both zero past key i0 + r */
void SM_NAME(softmax_rows_backward)(float *restrict P, float *restrict dS, const float *restrict L, int nq, int nk, int i0) {
    for (int r = 0; r < nq; r++) {
        float *restrict p = P + (size_t)r * nk, *restrict d = dS + (size_t)r * nk;
        const int n = i0 + r + 1;
        const float l0 = L[r];
        float acc[SM_LANES] = {0};
        sm_exp_lanes(p, d, n, l0, acc);
        const float dot = pz_lanes16_sum(acc);
#pragma omp simd
        for (int t = 0; t < n; t++) d[t] = p[t] * (d[t] - dot);
        for (int t = n; t < nk; t++) p[t] = 0.0f, d[t] = 0.0f;
    }
}
