/* SPDX-License-Identifier: MIT */
/* codec_kernels_avx2.c — the AVX2 + FMA + F16C + SSE4.2 build. */
#define PZ_KSUFFIX avx2
#define PZ_KNAME "avx2"
#define PZ_USE_F16C 1
#define PZ_USE_SSE42 1
#define PZ_USE_AVX2 1
#include "codec_kernels_impl.h"

const pz_codec_kernels *pz_codec_kernels_avx2(void) {
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !pz_cpu_has_f16c() || !__builtin_cpu_supports("sse4.2"))
        return NULL;
    return &table_avx2;
}
