/* conv_direct.h — direct convolution kernels for stride 1 with "same"
 * padding (2 pad = K - 1, K > 1), one build per ISA (conv_direct_impl.h
 * says how they work); kernels/conv.c chooses among them by the CPU's
 * features and falls back to im2col + BLAS elsewhere. Internal to kernels. */
#ifndef PZ_CONV_DIRECT_H
#define PZ_CONV_DIRECT_H

#include <stddef.h>

typedef struct pz_conv_direct_ops {
    const char *name; /* "avx512", "avx2" */
    size_t (*ws)(int C, int H, int W, int OC, int K, int threads);
    void (*forward)(float *out, float *ws, const float *inp, const float *weight, const float *bias, int B, int C,
                    int H, int W, int OC, int K, int threads);
    /* overwrites dinp (unless NULL); the weight gradient is left in each
     * thread's accumulator: thread t's at *acc + t * *acc_stride, (OC, C K K) */
    void (*backward)(float *dinp, float *ws, const float *dout, const float *inp, const float *weight, int B, int C,
                     int H, int W, int OC, int K, int threads, float **acc, size_t *acc_stride);
} pz_conv_direct_ops;

size_t pz_conv_direct_ws_avx512(int C, int H, int W, int OC, int K, int threads);
void pz_conv_direct_forward_avx512(float *out, float *ws, const float *inp, const float *weight, const float *bias,
                                   int B, int C, int H, int W, int OC, int K, int threads);
void pz_conv_direct_backward_avx512(float *dinp, float *ws, const float *dout, const float *inp, const float *weight,
                                    int B, int C, int H, int W, int OC, int K, int threads, float **acc,
                                    size_t *acc_stride);
size_t pz_conv_direct_ws_avx2(int C, int H, int W, int OC, int K, int threads);
void pz_conv_direct_forward_avx2(float *out, float *ws, const float *inp, const float *weight, const float *bias,
                                 int B, int C, int H, int W, int OC, int K, int threads);
void pz_conv_direct_backward_avx2(float *dinp, float *ws, const float *dout, const float *inp, const float *weight,
                                  int B, int C, int H, int W, int OC, int K, int threads, float **acc,
                                  size_t *acc_stride);

#endif
