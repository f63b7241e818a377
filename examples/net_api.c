/* SPDX-License-Identifier: MIT */
/* net_api.c — using pipezip's C API from another program: build a resnet8,
 * train it a few steps on a toy batch and run inference.
 *   cc net_api.c $(pkg-config --cflags --libs pipezip) -o net_api
 * or with CMake: examples/CMakeLists.txt (find_package(pipezip)). */
#include <pipezip/pipezip.h>

#include <stdio.h>
#include <stdlib.h>

int main(void) {
    enum { B = 16, C = 1, H = 28, W = 28, CLASSES = 10 };
    pz_set_threads(2);
    pz_net *net;
    if (pz_net_create(&net, "resnet8", C, H, W, CLASSES, B, 42) != PZ_OK) {
        fprintf(stderr, "pz_net_create: %s\n", pz_last_error());
        return 1;
    }
    printf("pipezip %s: resnet8 with %lld parameters\n", pz_version(), (long long)pz_net_num_params(net));
    static float x[B * C * H * W], logits[B * CLASSES];
    int32_t y[B];
    for (int i = 0; i < B * C * H * W; i++) x[i] = (float)((i * 7919) % 101) / 50.0f - 1.0f;
    for (int b = 0; b < B; b++) y[b] = b % CLASSES;
    for (int step = 0; step < 20; step++) {
        float loss;
        if (pz_net_train_step(net, x, y, B, 0.05f, &loss) != PZ_OK) {
            fprintf(stderr, "pz_net_train_step: %s\n", pz_last_error());
            return 1;
        }
        if (step % 5 == 0 || step == 19) printf("step %2d  loss %.4f\n", step, loss);
    }
    pz_net_forward(net, x, B, logits);
    int hits = 0;
    for (int b = 0; b < B; b++) {
        int arg = 0;
        for (int k = 1; k < CLASSES; k++)
            if (logits[b * CLASSES + k] > logits[b * CLASSES + arg]) arg = k;
        hits += arg == y[b];
    }
    printf("memorised %d of %d examples\n", hits, B);
    pz_net_free(net);
    return 0;
}
