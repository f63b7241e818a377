/* SPDX-License-Identifier: MIT */
/* vec_isa.h — the float vector a kernel build works in, for the sources
 * written once for every ISA (gemm_impl.h, conv_direct_impl.h): define
 * VEC_AVX512 or VEC_AVX2 and include it for `vec` (16 or 8 floats),
 * VEC_LANES and vload, vstore, vset1, vzero, vfma (a b + c), vmul, vadd. */
#ifndef PZ_VEC_ISA_H
#define PZ_VEC_ISA_H

#include <immintrin.h>

#if defined(VEC_AVX512)
#define VEC_LANES 16
typedef __m512 vec;
#define vload(p) _mm512_loadu_ps(p)
#define vstore(p, v) _mm512_storeu_ps(p, v)
#define vset1(x) _mm512_set1_ps(x)
#define vzero() _mm512_setzero_ps()
#define vfma(a, b, c) _mm512_fmadd_ps(a, b, c)
#define vmul(a, b) _mm512_mul_ps(a, b)
#define vadd(a, b) _mm512_add_ps(a, b)
#elif defined(VEC_AVX2)
#define VEC_LANES 8
typedef __m256 vec;
#define vload(p) _mm256_loadu_ps(p)
#define vstore(p, v) _mm256_storeu_ps(p, v)
#define vset1(x) _mm256_set1_ps(x)
#define vzero() _mm256_setzero_ps()
#define vfma(a, b, c) _mm256_fmadd_ps(a, b, c)
#define vmul(a, b) _mm256_mul_ps(a, b)
#define vadd(a, b) _mm256_add_ps(a, b)
#else
#error "vec_isa.h: define VEC_AVX512 or VEC_AVX2 first"
#endif

#endif
