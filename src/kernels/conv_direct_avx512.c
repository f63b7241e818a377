/* SPDX-License-Identifier: MIT */
/* conv_direct_avx512.c — the direct convolution's AVX-512 build (16 floats
 * a vector; tiles of 4 channels x 6 vectors, weight gradients 4 x 6). */
#include "conv_direct.h"
#define VEC_AVX512
#include "vec_isa.h"

#define CD_SUFFIX avx512
#define CD_V VEC_LANES
#define CD_RO 4
#define CD_RI 6
#define CD_WO 4
#define CD_WK 6
/* pairwise over the lanes: j + 8, j + 4, j + 2, j + 1 (vector adds of the
 * swapped halves, quarters, pairs, neighbours) */
static inline float vsum16(const vec *v) {
    __m512 x = v[0];
    x = _mm512_add_ps(x, _mm512_shuffle_f32x4(x, x, 0x4E)); /* 256-bit halves swapped */
    x = _mm512_add_ps(x, _mm512_shuffle_f32x4(x, x, 0xB1)); /* 128-bit quarters swapped */
    x = _mm512_add_ps(x, _mm512_permute_ps(x, 0x4E));       /* 64-bit pairs swapped */
    x = _mm512_add_ps(x, _mm512_permute_ps(x, 0xB1));       /* neighbours swapped */
    return _mm512_cvtss_f32(x);
}
/* rows of 7 to 32 floats: whole vectors, then one masked move */
static inline void vcopy(float *restrict d, const float *restrict s, int n) {
    int i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(d + i, _mm512_loadu_ps(s + i));
    if (i < n) {
        const __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(d + i, m, _mm512_maskz_loadu_ps(m, s + i));
    }
}
static inline void vcopy_add(float *restrict d, const float *restrict s, int n, float b) {
    const __m512 bb = _mm512_set1_ps(b);
    int i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(d + i, _mm512_add_ps(_mm512_loadu_ps(s + i), bb));
    if (i < n) {
        const __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(d + i, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, s + i), bb));
    }
}
/* stride-2 phase planes: s[0..n) split into its even (e) and odd (o)
 * elements, and the inverse, one phase's values into every other element
 * of d[0..n) from `parity`; register compress and expand (AVX-512F) */
#define CD_HAVE_SPLIT2 1
/* 16 floats of a row: its even elements to e, its odd ones to o, 8 each */
static inline void vsplit2_16(float *restrict e, float *restrict o, const float *restrict s) {
    const __m512 v = _mm512_loadu_ps(s);
    _mm256_storeu_ps(e, _mm512_castps512_ps256(_mm512_maskz_compress_ps(0x5555, v)));
    _mm256_storeu_ps(o, _mm512_castps512_ps256(_mm512_maskz_compress_ps(0xAAAA, v)));
}
static inline void vsplit2(float *restrict e, float *restrict o, const float *restrict s, int n) {
    int i = 0;
    for (; i + 16 <= n; i += 16) vsplit2_16(e + i / 2, o + i / 2, s + i);
    if (i < n && n >= 16 && n % 2 == 0) { /* the last 16 again, whole: the same values over some */
        vsplit2_16(e + (n - 16) / 2, o + (n - 16) / 2, s + n - 16);
        return;
    }
    for (; i < n; i += 16) {
        const int m = n - i < 16 ? n - i : 16;
        const __m512 v = _mm512_maskz_loadu_ps((__mmask16)((1u << m) - 1), s + i);
        _mm512_mask_storeu_ps(e + i / 2, (__mmask16)((1u << ((m + 1) / 2)) - 1), _mm512_maskz_compress_ps(0x5555, v));
        _mm512_mask_storeu_ps(o + i / 2, (__mmask16)((1u << (m / 2)) - 1), _mm512_maskz_compress_ps(0xAAAA, v));
    }
}
static inline void vjoin2(float *restrict d, const float *restrict s, int n, int parity) {
    const unsigned alt = parity ? 0xAAAAu : 0x5555u;
    for (int i = 0; i < n; i += 16) {
        const int m = n - i < 16 ? n - i : 16;
        const __mmask16 k = (__mmask16)(alt & ((1u << m) - 1));
        const __m512 v = _mm512_maskz_loadu_ps((__mmask16)((1u << __builtin_popcount(k)) - 1), s + i / 2);
        _mm512_mask_storeu_ps(d + i, k, _mm512_maskz_expand_ps(k, v));
    }
}
#include "conv_direct_impl.h"
