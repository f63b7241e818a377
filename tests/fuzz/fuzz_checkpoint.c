/* SPDX-License-Identifier: MIT */
/* fuzz_checkpoint.c — libFuzzer target for checkpoint files (and the
 * split-learning state blobs, the same format): whatever the bytes,
 * pz_checkpoint_unpack either loads them or fails with a status, never
 * reading or writing outside the file or the stage's arrays. The stage has
 * 40 parameters, 6 running statistics, AdamW state and the four boundary
 * codecs of a middle stage (two of them stateful).
 *   tests/fuzz/run.sh SECONDS WORKDIR checkpoint */
#include "pipe/pipe.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { P = 40, NB = 6, P0 = 8, P1 = 32 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static float params[P], buffers[NB];
    pz_model m;
    memset(&m, 0, sizeof m);
    m.n_params = P, m.n_buffers = NB, m.params = params, m.buffers = buffers;
    pz_optim opt;
    memset(&opt, 0, sizeof opt);
    opt.kind = PZ_OPT_ADAMW;
    static const char *const specs[4] = {"ef21(q4)", "q8", "aqsgd(topk:0.25),store=fp16", "none"};
    pz_codec *codecs[4] = {0};
    for (int i = 0; i < 4; i++) {
        if (pz_codec_create(&codecs[i], specs[i]) != PZ_OK) __builtin_trap();
        pz_codec_set_max_samples(codecs[i], 64);
    }
    if (pz_checkpoint_unpack(data, size, "fuzz", 1, &m, P0, P1, NULL, &opt, codecs, 4) == PZ_OK) {
        /* what loaded packs, loads again and packs to the same bytes (the
         * first pack may canonicalize: NaN payloads in fp16 stores) */
        uint8_t *a, *b;
        size_t la, lb;
        if (pz_checkpoint_pack(&a, &la, 1, &m, P0, P1, NULL, &opt, codecs, 4) != PZ_OK) __builtin_trap();
        if (pz_checkpoint_unpack(a, la, "fuzz (packed again)", 1, &m, P0, P1, NULL, &opt, codecs, 4) != PZ_OK) __builtin_trap();
        if (pz_checkpoint_pack(&b, &lb, 1, &m, P0, P1, NULL, &opt, codecs, 4) != PZ_OK) __builtin_trap();
        if (la != lb || memcmp(a, b, la)) __builtin_trap();
        free(a), free(b);
    }
    for (int i = 0; i < 4; i++) pz_codec_free(codecs[i]);
    pz_optim_free(&opt);
    return 0;
}
