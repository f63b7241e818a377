/* SPDX-License-Identifier: MIT */
/* test_conv_direct.c — the direct convolution kernels (stride 1 with same
 * padding, other strides through phase planes; rows of positions, or for
 * small output planes channels in the lanes) against the definition
 * computed in double precision: the output, the input gradient and the
 * weight gradient, on resnet8's own shapes and on shapes that reach every
 * tail (one channel, channel counts that are not multiples of the tiles,
 * planes of one row or one column, K = 5 and 7, batches that are not
 * multiples of the weight-gradient groups). Then what the design promises:
 * the AVX2 and AVX-512 builds give the same bits; a thread count always the
 * same bits; the input gradient and the output do not depend on the thread
 * count; conv2d_forward and conv2d_backward (bias, accumulating weight
 * gradients) route these shapes here. And the choice is made from the CPU's
 * features alone (a simulated CPU of each kind). */
#include "tool/xalloc.h"
#include "../test.h"
#include "base/base.h"
#include "kernels/conv_direct.h"
#include "kernels/kernels.h"

typedef struct {
    int B, C, H, W, OC, K, S, pad; /* S = 0: stride 1, same padding (the stride-1 kernels) */
} shape;

static int odim(int n, const shape *s) { return s->S ? (n + 2 * s->pad - s->K) / s->S + 1 : n; }

/* each element's bound: 4e-6 of the sum of the magnitudes of its terms
 * (float32 rounding over at most a few thousand fused terms), plus a floor */
static int close_to(const char *what, const float *got, const double *want, const double *mag, size_t n) {
    int miss = 0;
    for (size_t i = 0; i < n; i++) {
        const double tol = 4e-6 * mag[i] + 1e-6;
        if (!(fabs(got[i] - want[i]) <= tol)) {
            if (miss < 5) fprintf(stderr, "  %s[%zu]: got %.9g want %.9g (tol %.3g)\n", what, i, got[i], want[i], tol);
            miss++;
        }
    }
    CHECK(miss == 0, "%s: %d of %zu values off", what, miss, n);
    return miss;
}

static int same_bits(const float *a, const float *b, size_t n) { return memcmp(a, b, n * sizeof(float)) == 0; }

static void reference(const shape *s, const float *x, const float *w, const float *dy, double *y, double *ym,
                      double *dx, double *dxm, double *dw, double *dwm) {
    const int B = s->B, C = s->C, H = s->H, W = s->W, OC = s->OC, K = s->K, st = s->S ? s->S : 1;
    const int p = s->S ? s->pad : (K - 1) / 2, OH = odim(H, s), OW = odim(W, s);
    const size_t ny = (size_t)B * OC * OH * OW, nx = (size_t)B * C * H * W, nw = (size_t)OC * C * K * K;
    memset(y, 0, ny * 8), memset(ym, 0, ny * 8), memset(dx, 0, nx * 8), memset(dxm, 0, nx * 8);
    memset(dw, 0, nw * 8), memset(dwm, 0, nw * 8);
    for (int b = 0; b < B; b++)
        for (int oc = 0; oc < OC; oc++)
            for (int oh = 0; oh < OH; oh++)
                for (int ow = 0; ow < OW; ow++) {
                    const size_t yi = (((size_t)b * OC + oc) * OH + oh) * OW + ow;
                    for (int c = 0; c < C; c++)
                        for (int kh = 0; kh < K; kh++)
                            for (int kw = 0; kw < K; kw++) {
                                const int ih = oh * st + kh - p, iw = ow * st + kw - p;
                                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                                const size_t xi = (((size_t)b * C + c) * H + ih) * W + iw;
                                const size_t wi = (((size_t)oc * C + c) * K + kh) * K + kw;
                                y[yi] += (double)w[wi] * x[xi], ym[yi] += fabs((double)w[wi] * x[xi]);
                                dx[xi] += (double)w[wi] * dy[yi], dxm[xi] += fabs((double)w[wi] * dy[yi]);
                                dw[wi] += (double)dy[yi] * x[xi], dwm[wi] += fabs((double)dy[yi] * x[xi]);
                            }
                }
}

static void run_ops(const pz_conv_direct_ops *ops, const shape *s, int threads, const float *x, const float *w,
                    const float *dy, float *y, float *dx, float *dw) {
    const int B = s->B, C = s->C, H = s->H, W = s->W, OC = s->OC, K = s->K;
    float *acc;
    size_t stride;
    const int S = s->S ? s->S : 1, pad = s->S ? s->pad : (K - 1) / 2;
    float *ws = pz_xfloats(ops->ws(C, H, W, OC, K, S, pad, threads));
    ops->forward(y, ws, x, w, NULL, B, C, H, W, OC, K, S, pad, threads);
    ops->backward(dx, ws, dy, x, w, B, C, H, W, OC, K, S, pad, threads, 0, &acc, &stride);
    const size_t nw = (size_t)OC * C * K * K;
    memset(dw, 0, nw * sizeof(float));
    for (int t = 0; t < threads; t++)
        for (size_t i = 0; i < nw; i++) dw[i] += acc[(size_t)t * stride + i];
    free(ws);
}

static void fill(float *v, size_t n, pz_rng *r) {
    for (size_t i = 0; i < n; i++) v[i] = pz_rng_normal(r);
}

int main(void) {
    const unsigned f = pz_cpu_features();
    /* the choice: features alone, whatever the CPU is called */
    const pz_conv_direct_ops *a512 = pz_conv_direct_for(PZ_CPU_AVX2_FMA | PZ_CPU_AVX512, NULL);
    const pz_conv_direct_ops *a2 = pz_conv_direct_for(PZ_CPU_AVX2_FMA, NULL);
    CHECK(a512 && !strcmp(a512->name, "avx512"), "an AVX-512 CPU gets the AVX-512 kernels");
    CHECK(a2 && !strcmp(a2->name, "avx2"), "an AVX2+FMA CPU gets the AVX2 kernels");
    CHECK(pz_conv_direct_for(PZ_CPU_AVX2_FMA | PZ_CPU_AMD, NULL) == a2, "an AMD AVX2 CPU gets the AVX2 kernels too");
    CHECK(pz_conv_direct_for(0, NULL) == NULL, "a CPU without AVX2 and FMA falls back to im2col");
    CHECK(pz_conv_direct_for(PZ_CPU_AVX2_FMA | PZ_CPU_AVX512, "avx2") == a2, "PZ_CONV_KERNELS=avx2 is honoured");
    CHECK(pz_conv_direct_for(PZ_CPU_AVX2_FMA, "avx512") == a2, "avx512 asked of an AVX2 CPU gives avx2");
    CHECK(pz_conv_direct_for(PZ_CPU_AVX2_FMA | PZ_CPU_AVX512, "im2col") == NULL, "PZ_CONV_KERNELS=im2col");
    const char *now = pz_conv_kernels();
    CHECK(!strcmp(now, (f & PZ_CPU_AVX512) ? "avx512" : (f & PZ_CPU_AVX2_FMA) ? "avx2" : "im2col") ||
              getenv("PZ_CONV_KERNELS"),
          "this CPU runs %s", now);
    if (!(f & PZ_CPU_AVX2_FMA)) {
        printf("no AVX2+FMA here: only the choice was tested\n");
        TEST_DONE();
    }
    const pz_conv_direct_ops *native = (f & PZ_CPU_AVX512) ? a512 : a2;

    const shape shapes[] = {
        /* stride 1, same padding: resnet8's, then the tails */
        {3, 16, 28, 28, 16, 3, 0, 0}, {5, 32, 14, 14, 32, 3, 0, 0}, {20, 64, 7, 7, 64, 3, 0, 0}, {2, 1, 28, 28, 16, 3, 0, 0},
        {2, 3, 32, 32, 16, 3, 0, 0}, /* a CIFAR first layer: 27 taps */
        {3, 3, 5, 6, 5, 3, 0, 0},     {2, 2, 9, 9, 3, 5, 0, 0},     {17, 7, 3, 4, 9, 3, 0, 0},   {3, 5, 1, 1, 6, 3, 0, 0},
        {2, 3, 8, 1, 2, 3, 0, 0},     {2, 2, 1, 9, 7, 3, 0, 0},     {2, 3, 8, 8, 5, 7, 0, 0},    {33, 6, 4, 4, 10, 3, 0, 0},
        /* phase planes: resnet8's stride-2 convolutions and shortcuts, then
         * odd sizes, strides 3 and 4, kernels smaller than the stride, no
         * padding, padding beyond "same", stride 1 without "same" */
        {5, 16, 28, 28, 32, 3, 2, 1}, {9, 32, 14, 14, 64, 3, 2, 1}, {5, 16, 28, 28, 32, 1, 2, 0},
        {9, 32, 14, 14, 64, 1, 2, 0}, {3, 3, 7, 5, 5, 3, 2, 1},     {2, 2, 9, 8, 3, 5, 2, 2},
        {4, 3, 10, 11, 6, 3, 3, 1},   {2, 2, 9, 9, 3, 2, 4, 0},     {2, 4, 6, 7, 5, 4, 2, 3},
        {3, 2, 7, 7, 3, 3, 1, 0},     {2, 3, 6, 5, 4, 3, 1, 2},     {19, 5, 3, 3, 7, 3, 2, 1},
        {2, 1, 1, 1, 3, 3, 2, 1},     {2, 3, 12, 2, 4, 5, 3, 2},
        /* output planes up to 10x10 take the channel-lane kernels, their
         * input gradient too from 2 vectors of input channels (16 AVX2, 32
         * AVX-512): 12 channels (AVX2 only), 40 on an odd plane (both) */
        {3, 12, 11, 10, 20, 3, 3, 1}, {4, 40, 9, 9, 24, 3, 2, 1},
    };
    pz_rng r;
    pz_rng_seed(&r, 5);
    for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
        const shape *s = &shapes[si];
        const size_t nx = (size_t)s->B * s->C * s->H * s->W, ny = (size_t)s->B * s->OC * odim(s->H, s) * odim(s->W, s);
        const size_t nw = (size_t)s->OC * s->C * s->K * s->K;
        float *x = pz_xfloats(nx), *w = pz_xfloats(nw), *dy = pz_xfloats(ny);
        fill(x, nx, &r), fill(w, nw, &r), fill(dy, ny, &r);
        double *y = malloc(ny * 8), *ym = malloc(ny * 8), *dx = malloc(nx * 8), *dxm = malloc(nx * 8);
        double *dw = malloc(nw * 8), *dwm = malloc(nw * 8);
        reference(s, x, w, dy, y, ym, dx, dxm, dw, dwm);
        float *gy[2][3], *gdx[2][3], *gdw[2][3]; /* [ISA][threads 1, 2, 2 again] */
        const pz_conv_direct_ops *isa[2] = {a2, (f & PZ_CPU_AVX512) ? a512 : NULL};
        for (int v = 0; v < 2; v++)
            for (int t = 0; t < 3; t++) {
                gy[v][t] = pz_xfloats(ny), gdx[v][t] = pz_xfloats(nx), gdw[v][t] = pz_xfloats(nw);
                if (isa[v]) run_ops(isa[v], s, t ? 2 : 1, x, w, dy, gy[v][t], gdx[v][t], gdw[v][t]);
            }
        char what[96];
        for (int v = 0; v < 2; v++) {
            if (!isa[v]) continue;
            for (int t = 0; t < 2; t++) {
                snprintf(what, sizeof what, "shape %zu %s %d thread(s) output", si, isa[v]->name, t + 1);
                close_to(what, gy[v][t], y, ym, ny);
                snprintf(what, sizeof what, "shape %zu %s %d thread(s) input grad", si, isa[v]->name, t + 1);
                close_to(what, gdx[v][t], dx, dxm, nx);
                snprintf(what, sizeof what, "shape %zu %s %d thread(s) weight grad", si, isa[v]->name, t + 1);
                close_to(what, gdw[v][t], dw, dwm, nw);
            }
            CHECK(same_bits(gy[v][0], gy[v][1], ny) && same_bits(gdx[v][0], gdx[v][1], nx),
                  "shape %zu %s: output and input grad do not depend on the thread count", si, isa[v]->name);
            CHECK(same_bits(gy[v][1], gy[v][2], ny) && same_bits(gdx[v][1], gdx[v][2], nx) &&
                      same_bits(gdw[v][1], gdw[v][2], nw),
                  "shape %zu %s: two 2-thread runs give the same bits", si, isa[v]->name);
        }
        if (isa[1])
            for (int t = 0; t < 2; t++)
                CHECK(same_bits(gy[0][t], gy[1][t], ny) && same_bits(gdx[0][t], gdx[1][t], nx) &&
                          same_bits(gdw[0][t], gdw[1][t], nw),
                      "shape %zu, %d thread(s): AVX2 and AVX-512 give the same bits", si, t + 1);

        /* the public entry points: these kernels wherever K > 1 (1x1: im2col +
         * BLAS), the bias, accumulation */
        if (!strcmp(pz_conv_kernels(), native->name)) {
            const int B = s->B, C = s->C, H = s->H, W = s->W, OC = s->OC, K = s->K;
            const int st = s->S ? s->S : 1, p = s->S ? s->pad : (K - 1) / 2, OHW = odim(H, s) * odim(W, s);
            float *bias = pz_xfloats(OC), *out = pz_xfloats(ny), *gx = pz_xfloats(nx), *gw = pz_xfloats(nw);
            float *gb = pz_xfloats(OC);
            fill(bias, OC, &r);
            pz_set_threads(2);
            float *ws = pz_xfloats(conv2d_workspace_floats(C, H, W, OC, K, st, p));
            if (K == 1) { /* 1x1: im2col + BLAS, to the definition */
                conv2d_forward(out, ws, x, w, NULL, B, C, H, W, OC, K, st, p);
                conv2d_backward(gx, gw, NULL, ws, dy, x, w, B, C, H, W, OC, K, st, p);
                snprintf(what, sizeof what, "shape %zu im2col output", si);
                close_to(what, out, y, ym, ny);
                snprintf(what, sizeof what, "shape %zu im2col input grad", si);
                close_to(what, gx, dx, dxm, nx);
                snprintf(what, sizeof what, "shape %zu im2col weight grad", si);
                close_to(what, gw, dw, dwm, nw);
                /* adding into an input gradient already there: one product an
                 * element, so the bits of adding after */
                float *pre = pz_xfloats(nx), *acc = pz_xfloats(nx), *gw2 = pz_xfloats(nw);
                fill(pre, nx, &r);
                memcpy(acc, pre, sizeof(float) * nx);
                conv2d_backward_add(acc, gw2, NULL, ws, dy, x, w, B, C, H, W, OC, K, st, p);
                int ok = conv2d_adds_cheaply(K, st, p) && !conv2d_adds_exactly(K, st, p);
                for (size_t i = 0; i < nx; i++) ok &= acc[i] == pre[i] + gx[i];
                CHECK(ok, "shape %zu: conv2d_backward_add adds the input grad, bit for bit, and runs as it would", si);
                free(pre), free(acc), free(gw2);
                free(ws), free(bias), free(out), free(gx), free(gw), free(gb);
                pz_set_threads(1);
                goto next;
            }
            conv2d_forward(out, ws, x, w, bias, B, C, H, W, OC, K, st, p);
            int ok = 1;
            for (size_t i = 0; i < ny; i++) ok &= out[i] == gy[1][1][i] + bias[(i / (size_t)OHW) % OC] || !isa[1];
            for (size_t i = 0; i < ny && !isa[1]; i++) ok &= out[i] == gy[0][1][i] + bias[(i / (size_t)OHW) % OC];
            CHECK(ok, "shape %zu: conv2d_forward runs the direct kernels, plus the bias", si);
            for (int i = 0; i < OC; i++) gb[i] = 0.5f;
            conv2d_backward(gx, gw, gb, ws, dy, x, w, B, C, H, W, OC, K, st, p);
            const float *want_dw = gdw[isa[1] ? 1 : 0][1], *want_dx = gdx[isa[1] ? 1 : 0][1];
            CHECK(same_bits(gx, want_dx, nx) && same_bits(gw, want_dw, nw),
                  "shape %zu: conv2d_backward runs the direct kernels (2 threads)", si);
            for (size_t i = 0; i < nx; i++) gx[i] = NAN;
            for (size_t i = 0; i < nw; i++) gw[i] = 1.0f;
            conv2d_backward(gx, gw, NULL, ws, dy, x, w, B, C, H, W, OC, K, st, p);
            ok = same_bits(gx, want_dx, nx);
            for (size_t i = 0; i < nw; i++) ok &= fabsf(gw[i] - (1.0f + want_dw[i])) <= 1e-6f * (2 + fabsf(want_dw[i]));
            CHECK(ok, "shape %zu: conv2d_backward overwrites the input grad, adds to the weight grad", si);
            /* adding into an input gradient already there: for stride 1
             * "same" by the direct kernels, bit for bit the gradient added
             * after; else im2col + BLAS (the sums associate otherwise, so
             * within rounding) */
            for (size_t i = 0; i < nx; i++) gx[i] = 0.25f * (float)(i % 7) - 0.5f;
            conv2d_backward_add(gx, gw, NULL, ws, dy, x, w, B, C, H, W, OC, K, st, p);
            ok = conv2d_adds_cheaply(K, st, p) == !s->S && conv2d_adds_exactly(K, st, p) == !s->S;
            for (size_t i = 0; i < nx; i++) {
                const float pre = 0.25f * (float)(i % 7) - 0.5f;
                const double want = (double)pre + want_dx[i];
                ok &= s->S ? fabs(gx[i] - want) <= 1e-5 * (1 + fabs(want) + dxm[i]) : gx[i] == pre + want_dx[i];
            }
            CHECK(ok, "shape %zu: conv2d_backward_add adds the input grad (%s)", si,
                  s->S ? "im2col + BLAS" : "direct, bit for bit");
            for (int oc = 0; oc < OC; oc++) {
                double sb = 0;
                for (int b = 0; b < B; b++)
                    for (int i = 0; i < OHW; i++) sb += dy[((size_t)b * OC + oc) * OHW + i];
                CHECK(fabs(gb[oc] - (0.5 + sb)) <= 1e-4 * (1 + fabs(sb)), "shape %zu: bias grad %d", si, oc);
            }
            free(ws), free(bias), free(out), free(gx), free(gw), free(gb);
            pz_set_threads(1);
        }
    next:
        for (int v = 0; v < 2; v++)
            for (int t = 0; t < 3; t++) free(gy[v][t]), free(gdx[v][t]), free(gdw[v][t]);
        free(y), free(ym), free(dx), free(dxm), free(dw), free(dwm);
        free(x), free(w), free(dy);
    }
    TEST_DONE();
}
