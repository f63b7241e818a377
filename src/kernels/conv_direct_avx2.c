/* SPDX-License-Identifier: MIT */
/* conv_direct_avx2.c — the direct convolution's AVX2 + FMA build (8 floats
 * a vector; tiles of 4 channels x 3 vectors, weight gradients 2 x 3 with
 * two vectors per 16-lane sum). */
#include "conv_direct.h"
#define VEC_AVX2
#include "vec_isa.h"

#define CD_SUFFIX avx2
#define CD_V VEC_LANES
#define CD_RO 4
#define CD_RI 3
#define CD_WO 2
#define CD_WK 3
/* the AVX-512 build's pairwise order: lanes 0-7 + 8-15 (the two vectors),
 * then + 4, + 2, + 1 */
static inline float vsum16(const vec *v) {
    __m256 x = _mm256_add_ps(v[0], v[1]);
    x = _mm256_add_ps(x, _mm256_permute2f128_ps(x, x, 0x01));
    x = _mm256_add_ps(x, _mm256_permute_ps(x, 0x4E));
    x = _mm256_add_ps(x, _mm256_permute_ps(x, 0xB1));
    return _mm256_cvtss_f32(x);
}
/* rows of 7 to 32 floats: whole vectors, then one masked move */
static inline __m256i tail_mask(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
static inline void vcopy(float *restrict d, const float *restrict s, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(d + i, _mm256_loadu_ps(s + i));
    if (i < n) {
        const __m256i m = tail_mask(n - i);
        _mm256_maskstore_ps(d + i, m, _mm256_maskload_ps(s + i, m));
    }
}
static inline void vcopy_add(float *restrict d, const float *restrict s, int n, float b) {
    const __m256 bb = _mm256_set1_ps(b);
    int i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(d + i, _mm256_add_ps(_mm256_loadu_ps(s + i), bb));
    if (i < n) {
        const __m256i m = tail_mask(n - i);
        _mm256_maskstore_ps(d + i, m, _mm256_add_ps(_mm256_maskload_ps(s + i, m), bb));
    }
}
#include "conv_direct_impl.h"
