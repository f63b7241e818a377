/* SPDX-License-Identifier: MIT */
/* gemm_avx512.c — the GEMM's AVX-512 build (tiles of 14 x 32). */
#include "gemm.h"
#define VEC_AVX512
#include "vec_isa.h"

#define GM_SUFFIX avx512
#define GM_V VEC_LANES
#define GM_MR PZ_GEMM_MR_AVX512
#include "gemm_impl.h"
_Static_assert(GM_MR == PZ_GEMM_MR_AVX512 && 2 * GM_V == PZ_GEMM_NR_AVX512, "gemm.h names this build's tile");
