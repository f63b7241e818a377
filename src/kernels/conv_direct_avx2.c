/* conv_direct_avx2.c — the direct convolution's AVX2 + FMA build (8 floats
 * a vector; tiles of 4 channels x 3 vectors, weight gradients 2 x 3 with
 * two vectors per 16-lane sum). */
#include "conv_direct.h"

#include <immintrin.h>

#define CD_SUFFIX avx2
#define CD_V 8
#define CD_RO 4
#define CD_RI 3
#define CD_WO 2
#define CD_WK 3
typedef __m256 vec;
#define vload(p) _mm256_loadu_ps(p)
#define vstore(p, v) _mm256_storeu_ps(p, v)
#define vset1(x) _mm256_set1_ps(x)
#define vzero() _mm256_setzero_ps()
#define vfma(a, b, c) _mm256_fmadd_ps(a, b, c)
/* the AVX-512 build's pairwise order: lanes 0-7 + 8-15 (the two vectors),
 * then + 4, + 2, + 1 */
static inline float vsum16(const vec *v) {
    __m256 x = _mm256_add_ps(v[0], v[1]);
    x = _mm256_add_ps(x, _mm256_permute2f128_ps(x, x, 0x01));
    x = _mm256_add_ps(x, _mm256_permute_ps(x, 0x4E));
    x = _mm256_add_ps(x, _mm256_permute_ps(x, 0xB1));
    return _mm256_cvtss_f32(x);
}
#include "conv_direct_impl.h"
