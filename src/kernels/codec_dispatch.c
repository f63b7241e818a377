/* codec_dispatch.c — choose the codec kernels at run time. */
#include "codec_kernels.h"

#include <cpuid.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pz_cpu_has_f16c(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    return (c >> 29) & 1;
}

const pz_codec_kernels *pz_codec_kernels_best(void) {
    static const pz_codec_kernels *best = NULL;
    if (best) return best;
    const char *want = getenv("PZ_CODEC_KERNELS");
    const pz_codec_kernels *k = NULL;
    if (want && !strcmp(want, "scalar")) k = pz_codec_kernels_scalar();
    else if (want && !strcmp(want, "avx2")) k = pz_codec_kernels_avx2();
    else if (want && !strcmp(want, "avx512")) k = pz_codec_kernels_avx512();
    else if (want && *want) fprintf(stderr, "pipezip: PZ_CODEC_KERNELS='%s' is not scalar, avx2 or avx512; choosing by CPU\n", want);
    if (!k) k = pz_codec_kernels_avx512();
    if (!k) k = pz_codec_kernels_avx2();
    if (!k) k = pz_codec_kernels_scalar();
    best = k;
    return best;
}
