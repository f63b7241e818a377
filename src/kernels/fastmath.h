/* SPDX-License-Identifier: MIT */
/* fastmath.h — elementwise functions in plain float arithmetic that the
 * vectoriser takes (libm's are scalar calls). Internal to kernels. */
#ifndef PZ_FASTMATH_H
#define PZ_FASTMATH_H

#include <stdint.h>

/* exp(x) for x in [-87, 88]: Cody-Waite reduction to r in [-ln2/2,
 * ln2/2], the Cephes degree-6 polynomial and 2^n from the exponent bits
 * (no float to int conversion); the same arithmetic for every element */
static inline float pz_exp_core(float x) {
    const float t = x * 1.44269504088896341f + 12582912.0f; /* 1.5 * 2^23: n = round(x / ln 2) in its low bits */
    const float n = t - 12582912.0f;
    float r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    union {
        float f;
        uint32_t u;
    } bt = {t}, sc;
    sc.u = (bt.u + 127u) << 23; /* 2^n, n in [-126, 127] */
    return p * sc.f;
}

/* exp(x) for x <= 0; below -87 it is 0's neighbour 2^-126 times the
 * polynomial, never a NaN */
static inline float pz_exp_neg(float x) { return pz_exp_core(x < -87.0f ? -87.0f : x > 0.0f ? 0.0f : x); }

/* 16 lanes' sum in one fixed tree (0+8 .. 7+15, then +4, then (0+2) +
 * (1+3)): a row's sum kept in 16 lanes has the same bits whatever the
 * vector width or the row's alignment (attention's softmax rows, the
 * cross-entropy's) */
static inline float pz_lanes16_sum(const float a[16]) {
    float h[8];
    for (int l = 0; l < 8; l++) h[l] = a[l] + a[l + 8];
    for (int l = 0; l < 4; l++) h[l] = h[l] + h[l + 4];
    return (h[0] + h[2]) + (h[1] + h[3]);
}

#endif
