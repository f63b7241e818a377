/* SPDX-License-Identifier: MIT */
/* test_im2col.c — im2col and col2im against the definition, element by
 * element, on shapes that reach every path (the contiguous "same" path:
 * stride 1 with 2 pad = K - 1; the general one: other pads, strides), with
 * planes of one row or one column: im2col bit for bit; col2im to the same
 * value (its padding positions may add +0.0, so only the sign of a zero may
 * differ). */
#include "../test.h"
#include "kernels/kernels.h"

static int out_dim(int n, int K, int stride, int pad) { return (n + 2 * pad - K) / stride + 1; }

int main(void) {
    const int shapes[][6] = { /* C, H, W, K, stride, pad */
        {1, 28, 28, 3, 1, 1}, {3, 7, 5, 3, 1, 1}, {2, 1, 9, 3, 1, 1}, {2, 9, 1, 3, 1, 1}, {1, 1, 1, 3, 1, 1},
        {4, 6, 6, 5, 1, 2}, {2, 3, 4, 5, 1, 2}, {3, 8, 8, 7, 1, 3}, {2, 6, 7, 3, 2, 1}, {2, 9, 9, 3, 1, 0},
        {3, 5, 6, 1, 2, 0}, {2, 10, 10, 3, 1, 2}, {1, 4, 4, 1, 1, 0}, {16, 14, 14, 3, 1, 1},
        {2, 7, 7, 3, 2, 1}, {1, 5, 8, 5, 3, 2}, {2, 9, 6, 4, 2, 3}, {3, 28, 28, 3, 2, 1}, {1, 6, 6, 2, 2, 0}, {2, 5, 5, 3, 3, 2}};
    pz_rng r;
    pz_rng_seed(&r, 11);
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        const int C = shapes[s][0], H = shapes[s][1], W = shapes[s][2], K = shapes[s][3], st = shapes[s][4], pad = shapes[s][5];
        const int OH = out_dim(H, K, st, pad), OW = out_dim(W, K, st, pad);
        const size_t nimg = (size_t)C * H * W, ncol = (size_t)C * K * K * OH * OW;
        float *img = malloc(4 * nimg), *col = malloc(4 * ncol), *want = malloc(4 * ncol);
        float *back = calloc(nimg, 4), *wback = calloc(nimg, 4), *dcol = malloc(4 * ncol);
        for (size_t i = 0; i < nimg; i++) img[i] = pz_rng_normal(&r);
        for (size_t i = 0; i < ncol; i++) col[i] = NAN, dcol[i] = pz_rng_normal(&r);
        /* the definition */
        for (int c = 0; c < C; c++)
            for (int kh = 0; kh < K; kh++)
                for (int kw = 0; kw < K; kw++)
                    for (int oh = 0; oh < OH; oh++)
                        for (int ow = 0; ow < OW; ow++) {
                            const int ih = oh * st - pad + kh, iw = ow * st - pad + kw;
                            const size_t ci = (((size_t)(c * K + kh) * K + kw) * OH + oh) * OW + ow;
                            const int in = ih >= 0 && ih < H && iw >= 0 && iw < W;
                            want[ci] = in ? img[((size_t)c * H + ih) * W + iw] : 0.0f;
                            if (in) wback[((size_t)c * H + ih) * W + iw] += dcol[ci];
                        }
        im2col(col, img, C, H, W, K, st, pad);
        CHECK(!memcmp(col, want, 4 * ncol), "im2col C%d %dx%d K%d stride %d pad %d: bit for bit", C, H, W, K, st, pad);
        col2im(back, dcol, C, H, W, K, st, pad);
        int same = 1;
        for (size_t i = 0; i < nimg; i++) same &= back[i] == wback[i];
        CHECK(same, "col2im C%d %dx%d K%d stride %d pad %d: the same sums", C, H, W, K, st, pad);
        free(img), free(col), free(want), free(back), free(wback), free(dcol);
    }
    TEST_DONE();
}
