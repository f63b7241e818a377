/* SPDX-License-Identifier: MIT */
/* make_corpus.c — writes the seed corpora (tests/fuzz/corpus/): DIR/decode,
 * one small valid frame per codec and option family, each prefixed by the
 * mode byte fuzz_decode.c reads (1 = repair checksum); DIR/roundtrip, one
 * input per codec of fuzz_roundtrip.c; DIR/checkpoint, valid stage states
 * as fuzz_checkpoint.c loads them (fresh, and after codecs have state).
 * Run: build/tests/make_corpus DIR */
#include "pipezip/codec.h"
#include "pipe/pipe.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: make_corpus DIR\n");
        return 2;
    }
    const char *specs[] = {"none", "fp16", "bf16", "q1:sym", "q2", "q4:sym,per=sample", "q3:per=channel", "q8:stoch",
                           "topk:0.1,index=bitmap", "topk:0.05,index=delta", "topk:0.2,values=q4", "topk:0.2,values=fp16",
                           "randk:0.1,unbiased", "randtopk:0.1,alpha=0.2", "ms:0.05,bits=2", "ms:0.1,bits=3,values=bf16",
                           "ef21(q4)", "aqsgd(q2)", "aqsgd(topk:0.1),store=fp16", "q4:per=token,rot",
                           "q1+zstd", "aqsgd(q1)+zstd", "topk:0.3,values=q1+zstd", "lowrank:2,values=fp16", "lowrank:3,values=q3", "q6:bytes", "fp8", "fp8:e5m2,per=token", "rvq:5,bits=3", "rvq:1,stages=3,bits=2,per=sample"};
    char sub[512];
    snprintf(sub, sizeof sub, "%s/decode", argv[1]), mkdir(sub, 0755);
    const int64_t shape[] = {3, 4, 2, 5};
    float x[120];
    for (int i = 0; i < 120; i++) x[i] = sinf((float)i * 0.7f) * (i % 3 ? 1.0f : -0.5f);
    const uint32_t ids[3] = {4, 9, 1};
    for (size_t s = 0; s < sizeof specs / sizeof *specs; s++) {
        pz_codec *c;
        if (pz_codec_create(&c, specs[s]) != PZ_OK) return 1;
        uint8_t frame[2048];
        size_t len;
        if (pz_codec_encode(c, x, 4, shape, ids, frame + 1, sizeof frame - 1, &len, NULL) != PZ_OK) {
            fprintf(stderr, "%s: %s\n", specs[s], pz_last_error());
            return 1;
        }
        frame[0] = 1;
        char path[512];
        snprintf(path, sizeof path, "%s/decode/seed-%02zu", argv[1], s);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(frame, 1, len + 1, f) != len + 1) return 1;
        fclose(f);
        pz_codec_free(c);
    }
    /* roundtrip: [spec index][3 shape bytes][float32 values] for each of its specs */
    snprintf(sub, sizeof sub, "%s/roundtrip", argv[1]), mkdir(sub, 0755);
    for (int k = 0; k < 36; k++) { /* every spec of fuzz_roundtrip.c */
        uint8_t in[4 + 4 * 64] = {(uint8_t)k, (uint8_t)(k % 4), (uint8_t)(3 + k % 5), (uint8_t)(7 - k % 3)};
        memcpy(in + 4, x, 4 * 64);
        char path[600];
        snprintf(path, sizeof path, "%s/seed-%02d", sub, k);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(in, 1, sizeof in, f) != sizeof in) return 1;
        fclose(f);
    }
    /* checkpoint: fuzz_checkpoint.c's stage (40 parameters, [8, 32) its own,
     * 6 statistics, AdamW, four codecs), fresh and after a step of traffic */
    snprintf(sub, sizeof sub, "%s/checkpoint", argv[1]), mkdir(sub, 0755);
    static float params[40], buffers[6];
    for (int i = 0; i < 40; i++) params[i] = 0.01f * (float)i - 0.2f;
    for (int i = 0; i < 6; i++) buffers[i] = 1.0f + (float)i;
    pz_model m;
    memset(&m, 0, sizeof m);
    m.n_params = 40, m.n_buffers = 6, m.params = params, m.buffers = buffers;
    pz_optim opt;
    memset(&opt, 0, sizeof opt);
    if (pz_optim_init(&opt, PZ_OPT_ADAMW, 24) != PZ_OK) return 1;
    for (int i = 0; i < 24; i++) opt.m[i] = 0.001f * (float)i, opt.v[i] = 1e-6f * (float)i;
    opt.t = 7;
    static const char *const cspecs[4] = {"ef21(q4)", "q8", "aqsgd(topk:0.25),store=fp16", "none"};
    pz_codec *codecs[4], *peer[4];
    for (int i = 0; i < 4; i++) {
        if (pz_codec_create(&codecs[i], cspecs[i]) || pz_codec_create(&peer[i], cspecs[i])) return 1;
        pz_codec_set_max_samples(codecs[i], 64), pz_codec_set_max_samples(peer[i], 64);
    }
    for (int round = 0; round < 2; round++) {
        if (round == 1) { /* traffic: codecs 0 and 3 receive, 1 and 2 send */
            uint8_t fr[4096];
            size_t len;
            float y[120];
            for (int i = 0; i < 4; i++) {
                pz_codec *tx = i == 0 || i == 3 ? peer[i] : codecs[i], *rx = i == 0 || i == 3 ? codecs[i] : peer[i];
                if (pz_codec_encode(tx, x, 4, shape, ids, fr, sizeof fr, &len, NULL) ||
                    pz_codec_decode(rx, fr, len, y, 120, NULL, NULL)) {
                    fprintf(stderr, "checkpoint seed: %s\n", pz_last_error());
                    return 1;
                }
            }
        }
        uint8_t *blob;
        size_t len;
        if (pz_checkpoint_pack(&blob, &len, 1, &m, 8, 32, NULL, &opt, codecs, 4)) return 1;
        char path[600];
        snprintf(path, sizeof path, "%s/seed-%d", sub, round);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(blob, 1, len, f) != len) return 1;
        fclose(f);
        free(blob);
    }
    for (int i = 0; i < 4; i++) pz_codec_free(codecs[i]), pz_codec_free(peer[i]);
    pz_optim_free(&opt);
    return 0;
}
