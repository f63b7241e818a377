/* SPDX-License-Identifier: MIT */
/* fuzz_roundtrip.c — libFuzzer target: encode then decode. The input picks
 * a codec spec (byte 0), a shape (bytes 1-3) and the tensor's values (the
 * rest, as float32, NaN and infinities included). Encoding either fails
 * with a status or gives a frame no larger than pz_codec_max_frame_bytes
 * that decodes, by pz_frame_decode and by a receiver of the same spec, to
 * the same shape; lossless codecs give the input back bit for bit, every
 * codec decodes finite inputs to finite values no larger in magnitude than
 * the largest input (within half-precision rounding; inputs beyond fp16's
 * or bf16's largest value may become infinite where they are asked for; unbiased Rand-K
 * scales by n/k). A violation
 * traps (a finding).
 *   tests/fuzz/run.sh SECONDS WORKDIR roundtrip */
#include "pipezip/codec.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c) do { if (!(c)) __builtin_trap(); } while (0)

static const char *const specs[] = {
    "none", "fp16", "bf16", "q1", "q2:sym", "q4", "q8", "q3:per=sample", "q4:per=channel", "q8:stoch",
    "topk:0.1", "topk:0.3,index=bitmap", "topk:0.05,index=delta", "topk:0.2,values=q4", "topk:0.2,values=fp16",
    "topk:0.5,per=sample", "randk:0.1", "randk:0.2,unbiased", "randtopk:0.1,alpha=0.2", "ms:0.05,bits=2",
    "ms:0.1,bits=3,values=bf16", "ef(q2)", "ef21(q4)", "aqsgd(q2)", "aqsgd(topk:0.1),store=fp16",
    "q4:per=token,rot", "q3:sym,rot", "ef(q4:rot)",
    "q2+zstd", "aqsgd(q2)+zstd:1", "topk:0.2,values=q4+zstd",
    "lowrank:2", "lowrank:3,values=q4,cold,iters=2", "ef(lowrank:1)", "fp8", "fp8:e5m2,per=token+zstd", "ef21(fp8:per=channel)", "rvq:2,bits=3", "rvq:1,stages=3,bits=2,per=tensor,cold+zstd", "q5:bytes", "q3:sym,per=token,bytes+zstd",
    "none+huf", "q6:bytes+huf", "topk:0.3,values=q2+huf",
};
#define N_SPECS (sizeof specs / sizeof *specs)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 4) return 0;
    const char *spec = specs[data[0] % N_SPECS];
    const int64_t shape[4] = {1 + data[1] % 4, 1 + data[2] % 8, 1, 1 + data[3] % 8};
    const int64_t n = shape[0] * shape[1] * shape[2] * shape[3];
    data += 4, size -= 4;
    float x[256], y[256];
    memset(x, 0, sizeof x);
    memcpy(x, data, size < 4 * (size_t)n ? size : 4 * (size_t)n); /* zeros past the input */
    int finite = 1;
    float big = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        finite &= isfinite(x[i]);
        if (fabsf(x[i]) > big) big = fabsf(x[i]);
    }
    const uint32_t ids[4] = {0, 1, 2, 3};
    pz_codec *tx, *rx;
    CHECK(pz_codec_create(&tx, spec) == PZ_OK && pz_codec_create(&rx, spec) == PZ_OK);
    pz_codec_set_max_samples(tx, 4), pz_codec_set_max_samples(rx, 4);
    const size_t cap = pz_codec_max_frame_bytes(tx, 4, shape);
    uint8_t *frame = malloc(cap);
    CHECK(frame);
    size_t len = 0;
    if (pz_codec_encode(tx, x, 4, shape, ids, frame, cap, &len, NULL) == PZ_OK) {
        CHECK(len >= 64 && len <= cap);
        int nd;
        int64_t got[4];
        const pz_status st = pz_codec_decode(rx, frame, len, y, 256, &nd, got);
        CHECK(st == PZ_OK);
        CHECK(nd == 4 && !memcmp(got, shape, sizeof shape));
        if (pz_codec_is_lossless(tx)) CHECK(!memcmp(x, y, 4 * (size_t)n));
        /* (unbiased Rand-K scales what it keeps by n/k: bounded by that) */
        /* (and half precision's rounding: relative 2^-8, absolute 2^-24 for fp16's subnormals) */
        /* (a rotation of the last dimension L moves a value up to the row's norm, sqrt(L) times the largest, plus
         * the rotated error: within 2L times the largest) */
        /* (a rank-r projection of the tokens x features matrix keeps each column's norm: within sqrt(rows) times the largest) */
        /* (rvq: a vector's sum of S entries within (2^S + 1) sqrt(G) times the largest: S <= 3, G <= 2 here) */
        const float bound = big * 1.01f * (strstr(spec, "unbiased") ? (float)n : 1.0f) * (strstr(spec, "rot") ? 2.0f * (float)shape[3] : 1.0f) *
                                (strstr(spec, "lowrank") ? (float)n : 1.0f) * (strstr(spec, "rvq") ? 16.0f : 1.0f) +
                            (strstr(spec, "fp16") ? 6e-8f : 1e-37f);
        /* (rounding to half precision overflows past its largest value, as IEEE says) */
        const int may_overflow = (big > 65504.0f && strstr(spec, "fp16")) || (big > 3.3895313e38f && strstr(spec, "bf16"));
        if (finite && !may_overflow)
            for (int64_t i = 0; i < n; i++) CHECK(isfinite(y[i]) && fabsf(y[i]) <= bound);
        /* the stateless decoder agrees with the receiver on a stateless frame */
        if (!strchr(spec, '(')) {
            float z[256];
            CHECK(pz_frame_decode(frame, len, z, 256, &nd, got) == PZ_OK && !memcmp(y, z, 4 * (size_t)n));
        }
    }
    free(frame);
    pz_codec_free(tx), pz_codec_free(rx);
    return 0;
}
