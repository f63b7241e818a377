/* SPDX-License-Identifier: MIT */
/* conv.c — 2-D convolution. Every convolution with K > 1 and at least 32
 * taps runs the direct kernels of conv_direct_*.c (stride 1 "same", or any
 * stride through phase planes), chosen by the CPU's features; 1x1
 * convolutions, smaller layers and CPUs without AVX2 + FMA run im2col + one
 * BLAS GEMM per sample.
 * Samples are spread over OpenMP threads; each thread has its own buffers
 * and its own weight-gradient accumulator, reduced in thread order
 * afterwards, so a fixed thread count gives bit-identical results. */
#include "kernels.h"
#include "blas.h"
#include "conv_direct.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const pz_conv_direct_ops direct_avx512 = {"avx512", pz_conv_direct_ws_avx512, pz_conv_direct_forward_avx512,
                                                 pz_conv_direct_backward_avx512};
static const pz_conv_direct_ops direct_avx2 = {"avx2", pz_conv_direct_ws_avx2, pz_conv_direct_forward_avx2,
                                               pz_conv_direct_backward_avx2};

const pz_conv_direct_ops *pz_conv_direct_for(unsigned features, const char *want) {
    if (want && *want) {
        if (!strcmp(want, "im2col")) return NULL;
        if (!strcmp(want, "avx512") && (features & PZ_CPU_AVX512)) return &direct_avx512;
        if (!strcmp(want, "avx2") && (features & PZ_CPU_AVX2_FMA)) return &direct_avx2;
    }
    if (features & PZ_CPU_AVX512) return &direct_avx512;
    if (features & PZ_CPU_AVX2_FMA) return &direct_avx2;
    return NULL;
}

/* chosen once per process: by the CPU's features, or PZ_CONV_KERNELS
 * (im2col, avx2, avx512; one this CPU lacks is refused with a warning) */
static int chosen_by_user;
static const pz_conv_direct_ops *direct_ops(void) {
    static int chosen;
    static const pz_conv_direct_ops *ops;
    if (!chosen) {
        const char *want = pz_kernels_wanted("PZ_CONV_KERNELS");
        ops = pz_conv_direct_for(pz_cpu_features(), want);
        chosen_by_user = pz_kernels_user_choice("PZ_CONV_KERNELS", "im2col", want, ops ? ops->name : NULL);
        chosen = 1;
    }
    return ops;
}

const char *pz_conv_kernels(void) {
    const pz_conv_direct_ops *d = direct_ops();
    return d ? d->name : "im2col";
}

pz_conv_info pz_conv_get_info(void) {
    const pz_conv_direct_ops *now = direct_ops(), *best = pz_conv_direct_for(pz_cpu_features(), NULL);
    pz_conv_info i = {pz_conv_kernels(), chosen_by_user ? "user" : "pipezip", now != best};
    return i;
}

static int out_dim(int n, int K, int stride, int pad) { return (n + 2 * pad - K) / stride + 1; }

static int is_pointwise(int K, int stride, int pad) { return K == 1 && stride == 1 && pad == 0; }

/* The shapes the direct kernels take: K > 1, strides 1 to 8 (stride 1 with
 * "same" padding directly, the others through phase planes), however few
 * the taps: a first layer's one or three channels (9 or 27 taps) too,
 * measured 2-2.7x faster than im2col + BLAS, forward and backward (batch
 * 128, 2 threads: 1x28x28 to 16 channels 0.29 + 0.51 -> 0.20 + 0.20 ms
 * without the input gradient; 3x32x32 0.94 + 1.44 -> 0.43 + 0.52 ms). A
 * 1x1 convolution stays with BLAS, on the image itself or (strided
 * shortcuts) its subsampled copy: 0.31 + 0.72 ms there against 0.40 + 0.86
 * through the phase planes (16x28x28 to 32, stride 2). */
static int direct_shape(int K, int stride) {
    return K > 1 && stride >= 1 && stride <= 8;
}

/* dweight += the per-thread accumulators (T of nw floats, `stride` apart),
 * in thread order */
static void reduce_threads(float *dweight, const float *acc, size_t stride, int T, size_t nw) {
    for (int t = 0; t < T; t++)
        for (size_t i = 0; i < nw; i++) dweight[i] += acc[(size_t)t * stride + i];
}

/* Valid output columns [*ow0, *ow1) for kernel column kw: those whose
 * input column ow * stride - pad + kw lies inside [0, W). */
static inline void valid_cols(int W, int OW, int stride, int pad, int kw, int *ow0, int *ow1) {
    const int a = pad - kw, b = W - 1 + pad - kw; /* need a <= ow * stride <= b */
    *ow0 = a > 0 ? (a + stride - 1) / stride : 0;
    *ow1 = b < 0 ? 0 : b / stride + 1;
    if (*ow1 > OW) *ow1 = OW;
    if (*ow1 < *ow0) *ow1 = *ow0;
}

/* Stride 1 with "same" padding (2 pad = K - 1, so OH = H, OW = W): the row
 * of col for (c, kh, kw) is the plane shifted by (dh, dw) = (kh - pad,
 * kw - pad). Its valid rows [oh0, oh1) are then one contiguous run of the
 * plane, except the |dw| border columns of each row, where the run wraps
 * into the neighbouring input row: those are padding. The run is clamped
 * to the plane; whatever it leaves out is a border column. */
static int same_size(int K, int stride, int pad) { return stride == 1 && 2 * pad == K - 1; }

typedef struct {
    int oh0, oh1;      /* output rows whose input row exists */
    int64_t a, b;      /* the run [a, b) of the row: row[i] <-> plane[i + shift] */
    int64_t shift;     /* dh * W + dw */
    int dw;
} same_run;

static same_run run_of(int H, int W, int kh, int kw, int pad) {
    same_run r;
    const int dh = kh - pad;
    r.dw = kw - pad;
    r.oh0 = dh < 0 ? -dh : 0;
    r.oh1 = H - dh < H ? H - dh : H;
    if (r.oh1 < r.oh0) r.oh1 = r.oh0;
    r.shift = (int64_t)dh * W + r.dw;
    r.a = (int64_t)r.oh0 * W, r.b = (int64_t)r.oh1 * W;
    if (r.a + r.shift < 0) r.a = -r.shift;
    if (r.b + r.shift > (int64_t)H * W) r.b = (int64_t)H * W - r.shift;
    if (r.b < r.a) r.b = r.a;
    return r;
}

/* zero the border columns of rows [oh0, oh1) of a col row */
static void zero_borders(float *restrict row, const same_run *r, int W) {
    const int c0 = r->dw < 0 ? 0 : W - r->dw, c1 = r->dw < 0 ? -r->dw : W;
    if (r->dw == 0) return;
    for (int oh = r->oh0; oh < r->oh1; oh++)
        for (int ow = c0; ow < c1; ow++) row[(size_t)oh * W + ow] = 0.0f;
}

static void im2col_same(float *restrict col, const float *restrict img, int C, int H, int W, int K, int pad) {
    const size_t HW = (size_t)H * W;
    for (int c = 0; c < C; c++)
        for (int kh = 0; kh < K; kh++)
            for (int kw = 0; kw < K; kw++) {
                float *restrict row = col + ((size_t)(c * K + kh) * K + kw) * HW;
                const float *restrict plane = img + (size_t)c * HW;
                const same_run r = run_of(H, W, kh, kw, pad);
                memset(row, 0, sizeof(float) * (size_t)r.oh0 * W);
                memset(row + (size_t)r.oh1 * W, 0, sizeof(float) * (size_t)(H - r.oh1) * W);
                if (r.b > r.a) memcpy(row + r.a, plane + r.a + r.shift, sizeof(float) * (size_t)(r.b - r.a));
                zero_borders(row, &r, W);
            }
}

/* the padding positions of col are zeroed first (col is scratch), so the
 * contiguous add gives every input element the same contributions in the
 * same order as the row-by-row loop (plus +0.0 where it wraps) */
static void col2im_same(float *restrict img, float *restrict col, int C, int H, int W, int K, int pad) {
    const size_t HW = (size_t)H * W;
    for (int c = 0; c < C; c++)
        for (int kh = 0; kh < K; kh++)
            for (int kw = 0; kw < K; kw++) {
                float *restrict row = col + ((size_t)(c * K + kh) * K + kw) * HW;
                float *restrict plane = img + (size_t)c * HW;
                const same_run r = run_of(H, W, kh, kw, pad);
                zero_borders(row, &r, W);
                float *restrict d = plane + r.shift;
                for (int64_t i = r.a; i < r.b; i++) d[i] += row[i];
            }
}

void im2col(float *restrict col, const float *restrict img, int C, int H, int W, int K, int stride, int pad) {
    if (same_size(K, stride, pad)) {
        im2col_same(col, img, C, H, W, K, pad);
        return;
    }
    const int OH = out_dim(H, K, stride, pad), OW = out_dim(W, K, stride, pad);
    for (int c = 0; c < C; c++)
        for (int kh = 0; kh < K; kh++)
            for (int kw = 0; kw < K; kw++) {
                float *restrict row = col + ((size_t)(c * K + kh) * K + kw) * OH * OW;
                const float *restrict plane = img + (size_t)c * H * W;
                int ow0, ow1;
                valid_cols(W, OW, stride, pad, kw, &ow0, &ow1);
                for (int oh = 0; oh < OH; oh++) {
                    const int ih = oh * stride - pad + kh;
                    float *restrict dst = row + (size_t)oh * OW;
                    if (ih < 0 || ih >= H) {
                        for (int ow = 0; ow < OW; ow++) dst[ow] = 0.0f;
                        continue;
                    }
                    /* input column ow * stride + kw - pad, zero borders */
                    const float *restrict s = plane + (size_t)ih * W;
                    const int off = kw - pad;
                    for (int ow = 0; ow < ow0; ow++) dst[ow] = 0.0f;
                    if (stride == 1)
                        for (int ow = ow0; ow < ow1; ow++) dst[ow] = s[ow + off];
                    else if (stride == 2) /* a constant stride: vector loads and shuffles */
                        for (int ow = ow0; ow < ow1; ow++) dst[ow] = s[2 * ow + off];
                    else
                        for (int ow = ow0; ow < ow1; ow++) dst[ow] = s[ow * stride + off];
                    for (int ow = ow1; ow < OW; ow++) dst[ow] = 0.0f;
                }
            }
}

void col2im(float *restrict img, float *restrict col, int C, int H, int W, int K, int stride, int pad) {
    if (same_size(K, stride, pad)) {
        col2im_same(img, col, C, H, W, K, pad);
        return;
    }
    const int OH = out_dim(H, K, stride, pad), OW = out_dim(W, K, stride, pad);
    for (int c = 0; c < C; c++)
        for (int kh = 0; kh < K; kh++)
            for (int kw = 0; kw < K; kw++) {
                const float *restrict row = col + ((size_t)(c * K + kh) * K + kw) * OH * OW;
                float *restrict plane = img + (size_t)c * H * W;
                int ow0, ow1;
                valid_cols(W, OW, stride, pad, kw, &ow0, &ow1);
                for (int oh = 0; oh < OH; oh++) {
                    const int ih = oh * stride - pad + kh;
                    if (ih < 0 || ih >= H) continue;
                    const float *restrict src = row + (size_t)oh * OW;
                    float *restrict d = plane + (size_t)ih * W;
                    const int off = kw - pad;
                    if (stride == 1)
                        for (int ow = ow0; ow < ow1; ow++) d[ow + off] += src[ow];
                    else if (stride == 2)
                        for (int ow = ow0; ow < ow1; ow++) d[2 * ow + off] += src[ow];
                    else
                        for (int ow = ow0; ow < ow1; ow++) d[ow * stride + off] += src[ow];
                }
            }
}

/* per thread: col and dcol (CKK x OHW each) and a weight gradient (OC x CKK) */
static size_t per_thread_floats(int C, int H, int W, int OC, int K, int stride, int pad) {
    const size_t CKK = (size_t)C * K * K;
    const size_t OHW = (size_t)out_dim(H, K, stride, pad) * out_dim(W, K, stride, pad);
    return 2 * CKK * OHW + (size_t)OC * CKK;
}

size_t conv2d_workspace_floats(int C, int H, int W, int OC, int K, int stride, int pad) {
    const size_t gemm = (size_t)pz_get_threads() * per_thread_floats(C, H, W, OC, K, stride, pad);
    const pz_conv_direct_ops *d = direct_ops();
    const size_t direct = d && direct_shape(K, stride) ? d->ws(C, H, W, OC, K, stride, pad, pz_get_threads()) : 0;
    return direct > gemm ? direct : gemm;
}

void conv2d_forward(float *out, float *ws, const float *inp, const float *weight, const float *bias,
                    int B, int C, int H, int W, int OC, int K, int stride, int pad) {
    const pz_conv_direct_ops *direct = direct_ops();
    if (direct && direct_shape(K, stride)) {
        direct->forward(out, ws, inp, weight, bias, B, C, H, W, OC, K, stride, pad, pz_get_threads());
        return;
    }
    pz_blas_prepare();
    const int OH = out_dim(H, K, stride, pad), OW = out_dim(W, K, stride, pad);
    const int CKK = C * K * K, OHW = OH * OW;
    const size_t per = per_thread_floats(C, H, W, OC, K, stride, pad);
    const int pointwise = is_pointwise(K, stride, pad);
#pragma omp parallel num_threads(pz_get_threads())
    {
        float *col = ws + (size_t)omp_get_thread_num() * per;
#pragma omp for schedule(static)
        for (int b = 0; b < B; b++) {
            const float *img = inp + (size_t)b * C * H * W;
            const float *x = img;
            if (!pointwise) {
                im2col(col, img, C, H, W, K, stride, pad);
                x = col;
            }
            float *o = out + (size_t)b * OC * OHW;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, OC, OHW, CKK,
                        1.0f, weight, CKK, x, OHW, 0.0f, o, OHW);
            if (bias)
                for (int oc = 0; oc < OC; oc++) {
                    float *p = o + (size_t)oc * OHW;
                    for (int i = 0; i < OHW; i++) p[i] += bias[oc];
                }
        }
    }
}

static void bias_grad(float *dbias, const float *dout, int B, int OC, int OHW) {
    if (dbias)
        for (int oc = 0; oc < OC; oc++) {
            double s = 0.0;
            for (int b = 0; b < B; b++) {
                const float *p = dout + ((size_t)b * OC + oc) * OHW;
                for (int i = 0; i < OHW; i++) s += p[i];
            }
            dbias[oc] += (float)s;
        }
}

/* the direct kernels add for stride 1 "same" */
static int direct_adds(int K, int stride, int pad) { return same_size(K, stride, pad); }

int conv2d_adds_cheaply(int K, int stride, int pad) {
    return !(direct_ops() && direct_shape(K, stride)) || direct_adds(K, stride, pad);
}

int conv2d_adds_exactly(int K, int stride, int pad) {
    return direct_ops() && direct_shape(K, stride) && direct_adds(K, stride, pad);
}

/* adds: the input gradient added into dinp (by the direct kernels for
 * stride 1 "same", else im2col + BLAS, whatever the shape) */
static void backward(float *dinp, float *dweight, float *dbias, float *ws, const float *dout, const float *inp,
                     const float *weight, int B, int C, int H, int W, int OC, int K, int stride, int pad, int adds) {
    const int OH = out_dim(H, K, stride, pad), OW = out_dim(W, K, stride, pad);
    const int CKK = C * K * K, OHW = OH * OW;
    const size_t per = per_thread_floats(C, H, W, OC, K, stride, pad);
    const int pointwise = is_pointwise(K, stride, pad);
    const int T = pz_get_threads();
    const size_t nw = (size_t)OC * CKK;
    const pz_conv_direct_ops *direct = direct_ops();
    if (direct && direct_shape(K, stride) && (!adds || direct_adds(K, stride, pad))) {
        float *acc;
        size_t stride_t;
        direct->backward(dinp, ws, dout, inp, weight, B, C, H, W, OC, K, stride, pad, T, adds, &acc, &stride_t);
        reduce_threads(dweight, acc, stride_t, T, nw);
        bias_grad(dbias, dout, B, OC, OHW);
        return;
    }
    pz_blas_prepare();
#pragma omp parallel num_threads(T)
    {
        const int t = omp_get_thread_num();
        float *col = ws + (size_t)t * per;
        float *dcol = col + (size_t)CKK * OHW;
        float *dw = dcol + (size_t)CKK * OHW;
        memset(dw, 0, sizeof(float) * (size_t)OC * CKK);
#pragma omp for schedule(static)
        for (int b = 0; b < B; b++) {
            const float *img = inp + (size_t)b * C * H * W;
            const float *dy = dout + (size_t)b * OC * OHW;
            const float *x = img;
            if (!pointwise) {
                im2col(col, img, C, H, W, K, stride, pad);
                x = col;
            }
            /* dW (OC, CKK) += dy (OC, OHW) . x^T (OHW, CKK) */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, OC, CKK, OHW,
                        1.0f, dy, OHW, x, OHW, 1.0f, dw, CKK);
            if (dinp) {
                float *dimg = dinp + (size_t)b * C * H * W;
                /* dx_col (CKK, OHW) = W^T (CKK, OC) . dy (OC, OHW) */
                float *target = pointwise ? dimg : dcol;
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, CKK, OHW, OC,
                            1.0f, weight, CKK, dy, OHW, pointwise && adds ? 1.0f : 0.0f, target, OHW);
                if (!pointwise) {
                    if (!adds) memset(dimg, 0, sizeof(float) * (size_t)C * H * W);
                    col2im(dimg, dcol, C, H, W, K, stride, pad);
                }
            }
        }
    }
    reduce_threads(dweight, ws + 2 * (size_t)CKK * OHW, per, T, nw);
    bias_grad(dbias, dout, B, OC, OHW);
}

void conv2d_backward(float *dinp, float *dweight, float *dbias, float *ws,
                     const float *dout, const float *inp, const float *weight,
                     int B, int C, int H, int W, int OC, int K, int stride, int pad) {
    backward(dinp, dweight, dbias, ws, dout, inp, weight, B, C, H, W, OC, K, stride, pad, 0);
}

void conv2d_backward_add(float *dinp, float *dweight, float *dbias, float *ws,
                         const float *dout, const float *inp, const float *weight,
                         int B, int C, int H, int W, int OC, int K, int stride, int pad) {
    backward(dinp, dweight, dbias, ws, dout, inp, weight, B, C, H, W, OC, K, stride, pad, 1);
}
