/* SPDX-License-Identifier: MIT */
/* fuzz_decode.c — libFuzzer target for the frame decoder. The first input
 * byte picks a mode: even = the bytes as they are (exercises the header and
 * checksum checks), odd = the rest with its length field and CRC-32C
 * repaired (so mutations reach the payload parsers). Then the frame goes
 * through pz_frame_decode and through stateful receivers. Any crash, hang,
 * out-of-bounds access or undefined behaviour is a bug.
 *   tests/fuzz/run.sh SECONDS   builds with clang and runs on the seed corpus */
#include "pipezip/codec.h"
#include "kernels/codec_kernels.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static float out[1 << 20];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const int repair = data[0] & 1, receiver = (data[0] >> 1) % 3;
    size--, data++;
    uint8_t *f = malloc(size ? size : 1);
    memcpy(f, data, size);
    if (repair && size >= 64) {
        const uint64_t pl = size - 64;
        memcpy(f + 48, &pl, 8);
        const pz_codec_kernels *k = pz_codec_kernels_scalar();
        uint32_t crc = k->crc32c(0, f, 56);
        crc = k->crc32c(crc, f + 64, size - 64);
        memcpy(f + 56, &crc, 4);
    }
    int nd;
    int64_t shape[4];
    pz_frame_info info;
    pz_frame_inspect(f, size, &info);
    pz_frame_decode(f, size, out, sizeof out / sizeof *out, &nd, shape);
    static const char *receivers[] = {"ef21(q4)", "aqsgd(q2)", "aqsgd(topk:0.1),store=fp16"};
    pz_codec *rx;
    if (pz_codec_create(&rx, receivers[receiver]) == PZ_OK) {
        pz_codec_set_max_samples(rx, 4096);
        pz_codec_decode(rx, f, size, out, sizeof out / sizeof *out, &nd, shape);
        pz_codec_free(rx);
    }
    free(f);
    return 0;
}
