/* SPDX-License-Identifier: MIT */
/* codec_kernels_avx512.c — the AVX-512 (F, BW, VL) build, 512-bit vectors. */
#define PZ_KSUFFIX avx512
#define PZ_KNAME "avx512"
#define PZ_USE_F16C 1
#define PZ_USE_SSE42 1
#define PZ_USE_AVX512 1
#include "codec_kernels_impl.h"

const pz_codec_kernels *pz_codec_kernels_avx512(void) {
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
        !__builtin_cpu_supports("avx512vl") || !pz_cpu_has_f16c())
        return NULL;
    return &table_avx512;
}
