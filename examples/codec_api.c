/* SPDX-License-Identifier: MIT */
/* codec_api.c — pipezip's codec library on its own: compress a tensor into
 * a frame, inspect it, decode it, and keep two AQ-SGD ends in sync.
 *   cc codec_api.c $(pkg-config --cflags --libs pipezip) -lm -o codec_api
 * or with CMake: examples/CMakeLists.txt (find_package(pipezip)). */
#include <pipezip/codec.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    enum { B = 8, C = 16, H = 14, W = 14, N = B * C * H * W };
    const int64_t shape[4] = {B, C, H, W};
    float *x = malloc(sizeof(float) * N), *y = malloc(sizeof(float) * N);
    for (int i = 0; i < N; i++) { /* a post-ReLU-like feature map */
        const float v = sinf(0.37f * (float)i) + 0.3f * cosf(0.011f * (float)i);
        x[i] = v > 0 ? v * v : 0.0f;
    }
    const char *specs[] = {"fp16", "q4", "topk:0.1", "ms:0.01,bits=2"};
    for (int s = 0; s < 4; s++) {
        pz_codec *tx, *rx;
        if (pz_codec_create(&tx, specs[s]) != PZ_OK || pz_codec_create(&rx, specs[s]) != PZ_OK) {
            fprintf(stderr, "%s\n", pz_last_error());
            return 1;
        }
        const size_t cap = pz_codec_max_frame_bytes(tx, 4, shape);
        uint8_t *frame = malloc(cap);
        size_t len;
        pz_codec_stats st;
        if (pz_codec_encode(tx, x, 4, shape, NULL, frame, cap, &len, &st) != PZ_OK) {
            fprintf(stderr, "encode: %s\n", pz_last_error());
            return 1;
        }
        pz_frame_info info;
        pz_frame_inspect(frame, len, &info);
        int nd;
        int64_t sh[4];
        if (pz_codec_decode(rx, frame, len, y, N, &nd, sh) != PZ_OK) {
            fprintf(stderr, "decode: %s\n", pz_last_error());
            return 1;
        }
        printf("%-16s -> %-40s %7zu bytes, %6.3f bits/element, relative error %.4f\n", specs[s], pz_codec_spec(tx), len,
               st.bits_per_element, st.rel_error);
        /* a damaged frame is rejected with a reason, never decoded */
        frame[len / 2] ^= 1;
        if (pz_codec_decode(rx, frame, len, y, N, NULL, NULL) != PZ_ERR_FORMAT || pz_frame_error_of() != PZ_FRAME_CHECKSUM) {
            fprintf(stderr, "a damaged frame was not caught\n");
            return 1;
        }
        free(frame);
        pz_codec_free(tx), pz_codec_free(rx);
    }
    printf("damaged frames: rejected (%s)\n", pz_frame_error_name(PZ_FRAME_CHECKSUM));
    free(x), free(y);
    return 0;
}
