/* make_corpus.c — writes the seed corpus (tests/fuzz/corpus/): one small
 * valid frame per codec and option family, each prefixed by the mode byte
 * fuzz_decode.c reads (1 = repair checksum). Run: build/tests/make_corpus DIR */
#include "pipezip/codec.h"

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
                           "ef21(q4)", "aqsgd(q2)", "aqsgd(topk:0.1),store=fp16"};
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
        snprintf(path, sizeof path, "%s/seed-%02zu", argv[1], s);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(frame, 1, len + 1, f) != len + 1) return 1;
        fclose(f);
        pz_codec_free(c);
    }
    return 0;
}
