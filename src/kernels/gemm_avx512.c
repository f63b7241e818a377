/* SPDX-License-Identifier: MIT */
/* gemm_avx512.c — the GEMM's AVX-512 build (tiles of 14 x 32). */
#include <immintrin.h>

#include "gemm.h"

#define GM_SUFFIX avx512
#define GM_V 16
#define GM_MR PZ_GEMM_MR_AVX512
typedef __m512 vec;
#define vload(p) _mm512_loadu_ps(p)
#define vstore(p, v) _mm512_storeu_ps(p, v)
#define vset1(x) _mm512_set1_ps(x)
#define vzero() _mm512_setzero_ps()
#define vfma(a, b, c) _mm512_fmadd_ps(a, b, c)
#define vmul(a, b) _mm512_mul_ps(a, b)
#define vadd(a, b) _mm512_add_ps(a, b)
#include "gemm_impl.h"
_Static_assert(GM_MR == PZ_GEMM_MR_AVX512 && 2 * GM_V == PZ_GEMM_NR_AVX512, "gemm.h names this build's tile");
