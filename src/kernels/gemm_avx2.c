/* SPDX-License-Identifier: MIT */
/* gemm_avx2.c — the GEMM's AVX2 + FMA build (tiles of 6 x 16). */
#include "gemm.h"
#define VEC_AVX2
#include "vec_isa.h"

#define GM_SUFFIX avx2
#define GM_V VEC_LANES
#define GM_MR PZ_GEMM_MR_AVX2
#include "gemm_impl.h"
_Static_assert(GM_MR == PZ_GEMM_MR_AVX2 && 2 * GM_V == PZ_GEMM_NR_AVX2, "gemm.h names this build's tile");
