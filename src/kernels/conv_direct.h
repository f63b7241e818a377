/* SPDX-License-Identifier: MIT */
/* conv_direct.h — direct convolution kernels, one build per ISA
 * (conv_direct_impl.h says how they work): for stride 1 with "same" padding
 * (2 pad = K - 1, K > 1), and for any other stride up to 8 and padding
 * through phase planes. kernels/conv.c chooses among them by the CPU's
 * features; pointwise 1x1 convolutions stay one BLAS GEMM a sample, and a
 * CPU without AVX2 and FMA runs im2col + BLAS. Internal to kernels. */
#ifndef PZ_CONV_DIRECT_H
#define PZ_CONV_DIRECT_H

#include <stddef.h>

typedef struct pz_conv_direct_ops {
    const char *name; /* "avx512", "avx2" */
    /* K > 1, stride S from 1 to 8, any padding (stride 1 "same" or phase planes) */
    size_t (*ws)(int C, int H, int W, int OC, int K, int S, int pad, int threads);
    void (*forward)(float *out, float *ws, const float *inp, const float *weight, const float *bias, int B, int C,
                    int H, int W, int OC, int K, int S, int pad, int threads);
    /* overwrites dinp (unless NULL), or adds to it (adds; stride 1 "same"
     * only): dinp + (g + 0.0f), the bits of writing g and adding after; the
     * weight gradient is left in each thread's accumulator: thread t's at
     * *acc + t * *acc_stride, (OC, C K K) */
    void (*backward)(float *dinp, float *ws, const float *dout, const float *inp, const float *weight, int B, int C,
                     int H, int W, int OC, int K, int S, int pad, int threads, int adds, float **acc,
                     size_t *acc_stride);
} pz_conv_direct_ops;

/* one set per ISA build */
#define PZ_CONV_DIRECT_DECLARE(isa)                                                                                    \
    size_t pz_conv_direct_ws_##isa(int C, int H, int W, int OC, int K, int S, int pad, int threads);                 \
    void pz_conv_direct_forward_##isa(float *out, float *ws, const float *inp, const float *weight,                  \
                                      const float *bias, int B, int C, int H, int W, int OC, int K, int S, int pad,  \
                                      int threads);                                                                  \
    void pz_conv_direct_backward_##isa(float *dinp, float *ws, const float *dout, const float *inp,                  \
                                       const float *weight, int B, int C, int H, int W, int OC, int K, int S,        \
                                       int pad, int threads, int adds, float **acc, size_t *acc_stride);
PZ_CONV_DIRECT_DECLARE(avx512)
PZ_CONV_DIRECT_DECLARE(avx2)

#endif
