/* SPDX-License-Identifier: MIT */
/* gemm_avx2.c — the GEMM's AVX2 + FMA build (tiles of 6 x 16). */
#include <immintrin.h>

#include "gemm.h"

#define GM_SUFFIX avx2
#define GM_V 8
#define GM_MR PZ_GEMM_MR_AVX2
typedef __m256 vec;
#define vload(p) _mm256_loadu_ps(p)
#define vstore(p, v) _mm256_storeu_ps(p, v)
#define vset1(x) _mm256_set1_ps(x)
#define vzero() _mm256_setzero_ps()
#define vfma(a, b, c) _mm256_fmadd_ps(a, b, c)
#define vmul(a, b) _mm256_mul_ps(a, b)
#define vadd(a, b) _mm256_add_ps(a, b)
#include "gemm_impl.h"
_Static_assert(GM_MR == PZ_GEMM_MR_AVX2 && 2 * GM_V == PZ_GEMM_NR_AVX2, "gemm.h names this build's tile");
