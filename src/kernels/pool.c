/* SPDX-License-Identifier: MIT */
/* pool.c — max, average and global average pooling, forward and backward.
 * Parallel over (sample, channel) planes. */
#include "kernels.h"

#include <float.h>
#include <string.h>

static int out_dim(int n, int K, int stride, int pad) { return (n + 2 * pad - K) / stride + 1; }

void maxpool2d_forward(float *out, int32_t *argmax, const float *inp,
                       int B, int C, int H, int W, int K, int stride, int pad) {
    const int OH = out_dim(H, K, stride, pad), OW = out_dim(W, K, stride, pad);
#pragma omp parallel for schedule(static) num_threads(pz_get_threads())
    for (int p = 0; p < B * C; p++) {
        const float *x = inp + (size_t)p * H * W;
        float *y = out + (size_t)p * OH * OW;
        int32_t *am = argmax + (size_t)p * OH * OW;
        for (int oh = 0; oh < OH; oh++)
            for (int ow = 0; ow < OW; ow++) {
                float best = -FLT_MAX;
                int32_t where = -1;
                for (int kh = 0; kh < K; kh++) {
                    const int ih = oh * stride - pad + kh;
                    if (ih < 0 || ih >= H) continue;
                    for (int kw = 0; kw < K; kw++) {
                        const int iw = ow * stride - pad + kw;
                        if (iw < 0 || iw >= W) continue;
                        const float v = x[ih * W + iw];
                        /* first maximum wins; NaN propagates like PyTorch */
                        if (v > best || where < 0 || v != v) {
                            best = v;
                            where = ih * W + iw;
                        }
                    }
                }
                y[oh * OW + ow] = best;
                am[oh * OW + ow] = where;
            }
    }
}

void maxpool2d_backward(float *dinp, const float *dout, const int32_t *argmax,
                        int B, int C, int H, int W, int K, int stride, int pad) {
    const int OH = out_dim(H, K, stride, pad), OW = out_dim(W, K, stride, pad);
#pragma omp parallel for schedule(static) num_threads(pz_get_threads())
    for (int p = 0; p < B * C; p++) {
        float *dx = dinp + (size_t)p * H * W;
        const float *dy = dout + (size_t)p * OH * OW;
        const int32_t *am = argmax + (size_t)p * OH * OW;
        memset(dx, 0, sizeof(float) * (size_t)H * W);
        for (int i = 0; i < OH * OW; i++)
            if (am[i] >= 0) dx[am[i]] += dy[i];
    }
}

void avgpool2d_forward(float *out, const float *inp, int B, int C, int H, int W, int K, int stride, int pad) {
    const int OH = out_dim(H, K, stride, pad), OW = out_dim(W, K, stride, pad);
    const float inv = 1.0f / (float)(K * K);
#pragma omp parallel for schedule(static) num_threads(pz_get_threads())
    for (int p = 0; p < B * C; p++) {
        const float *x = inp + (size_t)p * H * W;
        float *y = out + (size_t)p * OH * OW;
        for (int oh = 0; oh < OH; oh++)
            for (int ow = 0; ow < OW; ow++) {
                float s = 0.0f;
                for (int kh = 0; kh < K; kh++) {
                    const int ih = oh * stride - pad + kh;
                    if (ih < 0 || ih >= H) continue;
                    for (int kw = 0; kw < K; kw++) {
                        const int iw = ow * stride - pad + kw;
                        if (iw >= 0 && iw < W) s += x[ih * W + iw];
                    }
                }
                y[oh * OW + ow] = s * inv;
            }
    }
}

void avgpool2d_backward(float *dinp, const float *dout, int B, int C, int H, int W, int K, int stride, int pad) {
    const int OH = out_dim(H, K, stride, pad), OW = out_dim(W, K, stride, pad);
    const float inv = 1.0f / (float)(K * K);
#pragma omp parallel for schedule(static) num_threads(pz_get_threads())
    for (int p = 0; p < B * C; p++) {
        float *dx = dinp + (size_t)p * H * W;
        const float *dy = dout + (size_t)p * OH * OW;
        memset(dx, 0, sizeof(float) * (size_t)H * W);
        for (int oh = 0; oh < OH; oh++)
            for (int ow = 0; ow < OW; ow++) {
                const float g = dy[oh * OW + ow] * inv;
                for (int kh = 0; kh < K; kh++) {
                    const int ih = oh * stride - pad + kh;
                    if (ih < 0 || ih >= H) continue;
                    for (int kw = 0; kw < K; kw++) {
                        const int iw = ow * stride - pad + kw;
                        if (iw >= 0 && iw < W) dx[ih * W + iw] += g;
                    }
                }
            }
    }
}

void global_avgpool_forward(float *out, const float *inp, int B, int C, int HW) {
    const float inv = 1.0f / (float)HW;
#pragma omp parallel for schedule(static) num_threads(pz_get_threads())
    for (int p = 0; p < B * C; p++) {
        const float *x = inp + (size_t)p * HW;
        float s = 0.0f;
        for (int i = 0; i < HW; i++) s += x[i];
        out[p] = s * inv;
    }
}

void global_avgpool_backward(float *dinp, const float *dout, int B, int C, int HW) {
    const float inv = 1.0f / (float)HW;
#pragma omp parallel for schedule(static) num_threads(pz_get_threads())
    for (int p = 0; p < B * C; p++) {
        const float g = dout[p] * inv;
        float *dx = dinp + (size_t)p * HW;
        for (int i = 0; i < HW; i++) dx[i] = g;
    }
}
