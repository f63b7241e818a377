/* SPDX-License-Identifier: MIT */
/* gelu_impl.h — GELU's element loops (tanh form, GPT-2), one source built
 * per ISA: transformer.c (AVX2) and gelu_avx512.c define GELU_SUFFIX and
 * include it. The same arithmetic in every build, lane and thread. */
#include "fastmath.h"

#include <stddef.h>

#define GELU_CAT2(a, b) a##_##b
#define GELU_CAT(a, b) GELU_CAT2(a, b)
#define GELU_NAME(n) GELU_CAT(n, GELU_SUFFIX)

#ifndef GELU_K
#define GELU_K 0.7978845608028654f /* sqrt(2 / pi) */

/* tanh(u) for GELU, in plain float arithmetic the vectoriser takes (libm's
 * tanhf is a scalar call and was 28% of a gpt-tiny step): tanh(u) = (e - 1)
 * / (e + 1), e = exp(2u) for |u| <= 9 (beyond, tanh is +-1 in float; below
 * |u| = 0.02 its series), exp by fastmath.h's pz_exp_core. Absolute error
 * about 1e-7: GELU moves by less than |x| * 1e-7. */
static inline float tanh_gelu(float u) {
    u = u > 9.0f ? 9.0f : u < -9.0f ? -9.0f : u;
    const float e = pz_exp_core(2.0f * u);
    /* near 0, e - 1 cancels: the series u - u^3/3 + 2u^5/15 instead */
    const float u2 = u * u, series = u * (1.0f + u2 * (-1.0f / 3.0f + u2 * (2.0f / 15.0f)));
    const float q = (e - 1.0f) / (e + 1.0f); /* both computed: a select, not a branch, so the loop vectorises */
    return u2 < 4e-4f ? series : q;
}
#endif

void GELU_NAME(gelu_forward)(float *restrict out, const float *restrict inp, size_t n);
void GELU_NAME(gelu_backward)(float *restrict dinp, const float *restrict dout, const float *restrict inp, size_t n);

void GELU_NAME(gelu_forward)(float *restrict out, const float *restrict inp, size_t n) {
#pragma omp simd
    for (size_t i = 0; i < n; i++) {
        const float x = inp[i];
        out[i] = 0.5f * x * (1.0f + tanh_gelu(GELU_K * (x + 0.044715f * x * x * x)));
    }
}

void GELU_NAME(gelu_backward)(float *restrict dinp, const float *restrict dout, const float *restrict inp, size_t n) {
#pragma omp simd
    for (size_t i = 0; i < n; i++) {
        const float x = inp[i];
        const float u = GELU_K * (x + 0.044715f * x * x * x);
        const float th = tanh_gelu(u), sech2 = 1.0f - th * th;
        const float du = GELU_K * (1.0f + 3.0f * 0.044715f * x * x);
        dinp[i] = dout[i] * (0.5f * (1.0f + th) + 0.5f * x * sech2 * du);
    }
}
