/* SPDX-License-Identifier: MIT */
/* codec_dispatch.c — choose the codec kernels at run time; the CRC-32C
 * algebra every build and the frame code share. */
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

uint32_t pz_crc32c_mul(uint32_t a, uint32_t b) {
    uint32_t p = 0;
    for (uint32_t m = 1u << 31; m; m >>= 1) {
        if (a & m) p ^= b;
        b = (b & 1) ? (b >> 1) ^ 0x82F63B78u : b >> 1;
    }
    return p;
}

uint32_t pz_crc32c_shift(uint64_t len) {
    uint32_t result = 1u << 31, sq = 1u << 23; /* x^0, x^8 */
    for (; len; len >>= 1) {
        if (len & 1) result = pz_crc32c_mul(result, sq);
        sq = pz_crc32c_mul(sq, sq);
    }
    return result;
}

uint32_t pz_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b) {
    return pz_crc32c_mul(crc_a, pz_crc32c_shift(len_b)) ^ crc_b;
}
