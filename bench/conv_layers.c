/* SPDX-License-Identifier: MIT */
/* conv_layers.c — every convolution shape of resnet8 (1x28x28) and
 * resnet20 (3x32x32), forward and backward (input and weight gradients) of
 * a batch, timed through kernels/conv.c with whatever kernels it chose
 * (PZ_CONV_KERNELS=im2col|avx2|avx512 to pick), median of repeated runs.
 * bench/torch_conv.py times the same in PyTorch (oneDNN) and
 * bench/compare_conv.sh puts them side by side.
 * Usage: bench_conv [BATCH] [THREADS] [REPEAT]; one JSON line per shape. */
#include "base/base.h"
#include "kernels/kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    const int B = argc > 1 ? atoi(argv[1]) : 128, T = argc > 2 ? atoi(argv[2]) : 2, R = argc > 3 ? atoi(argv[3]) : 15;
    if (B < 1 || T < 1 || R < 1) {
        fprintf(stderr, "usage: bench_conv [BATCH] [THREADS] [REPEAT]\n");
        return 2;
    }
    pz_set_threads(T);
    /* C, H, W, OC, K, stride, pad */
    static const int shapes[][7] = {
        {1, 28, 28, 16, 3, 1, 1},  {16, 28, 28, 16, 3, 1, 1}, {16, 28, 28, 32, 3, 2, 1}, {16, 28, 28, 32, 1, 2, 0},
        {32, 14, 14, 32, 3, 1, 1}, {32, 14, 14, 64, 3, 2, 1}, {32, 14, 14, 64, 1, 2, 0}, {64, 7, 7, 64, 3, 1, 1},
        {3, 32, 32, 16, 3, 1, 1},  {16, 32, 32, 16, 3, 1, 1}, {16, 32, 32, 32, 3, 2, 1}, {32, 16, 16, 32, 3, 1, 1},
        {32, 16, 16, 64, 3, 2, 1}, {64, 8, 8, 64, 3, 1, 1},
    };
    double *tf = malloc(sizeof(double) * R), *tb = malloc(sizeof(double) * R);
    pz_rng r;
    pz_rng_seed(&r, 1);
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        const int C = shapes[s][0], H = shapes[s][1], W = shapes[s][2], OC = shapes[s][3], K = shapes[s][4];
        const int st = shapes[s][5], p = shapes[s][6];
        const int OH = (H + 2 * p - K) / st + 1, OW = (W + 2 * p - K) / st + 1;
        const size_t nx = (size_t)B * C * H * W, ny = (size_t)B * OC * OH * OW, nw = (size_t)OC * C * K * K;
        float *x = pz_floats_try(nx), *dx = pz_floats_try(nx), *y = pz_floats_try(ny), *dy = pz_floats_try(ny);
        float *w = pz_floats_try(nw), *dw = pz_floats_try(nw);
        float *ws = pz_floats_try(conv2d_workspace_floats(C, H, W, OC, K, st, p));
        if (!x || !dx || !y || !dy || !w || !dw || !ws) {
            fprintf(stderr, "bench_conv: out of memory\n");
            return 1;
        }
        for (size_t i = 0; i < nx; i++) x[i] = pz_rng_normal(&r);
        for (size_t i = 0; i < ny; i++) dy[i] = pz_rng_normal(&r);
        for (size_t i = 0; i < nw; i++) w[i] = 0.1f * pz_rng_normal(&r);
        for (int i = -2; i < R; i++) { /* two warm-up runs */
            const double t0 = pz_now();
            conv2d_forward(y, ws, x, w, NULL, B, C, H, W, OC, K, st, p);
            const double t1 = pz_now();
            conv2d_backward(C > 3 ? dx : NULL, dw, NULL, ws, dy, x, w, B, C, H, W, OC, K, st, p);
            const double t2 = pz_now();
            if (i >= 0) tf[i] = t1 - t0, tb[i] = t2 - t1;
        }
        qsort(tf, R, sizeof *tf, cmp), qsort(tb, R, sizeof *tb, cmp);
        printf("{\"shape\": \"%dx%dx%d->%d k%d s%d p%d\", \"batch\": %d, \"threads\": %d, \"kernels\": \"%s\", "
               "\"forward_ms\": %.3f, \"backward_ms\": %.3f}\n",
               C, H, W, OC, K, st, p, B, T, pz_conv_kernels(), 1e3 * tf[R / 2], 1e3 * tb[R / 2]);
        free(x), free(dx), free(y), free(dy), free(w), free(dw), free(ws);
    }
    free(tf), free(tb);
    return 0;
}
