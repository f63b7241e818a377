/* SPDX-License-Identifier: MIT */
/* kernels.h — the hot loops of training: convolution (direct kernels, im2col + BLAS GEMM),
 * batch normalization, pooling, activations, linear, softmax cross-entropy.
 * Layout is NCHW float32. Each op is a forward/backward pair of free
 * functions in the llm.c style: outputs first, gradients prefixed d, shapes as
 * plain ints named like the math. Backward functions ACCUMULATE into
 * parameter gradients (dweight += ...) and OVERWRITE input gradients (dinp =),
 * and skip the input gradient when dinp is NULL.
 * Knows nothing of models or codecs. */
#ifndef PZ_KERNELS_H
#define PZ_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

/* The thread setting they share (pz_set_threads, pz_get_threads,
 * pz_thread_attach) and the choice of BLAS kernels (pz_blas_prepare, which
 * every kernel calling BLAS calls first) are base's. */

/* ---- convolution --------------------------------------------------------
 * out (B, OC, OH, OW) = conv(inp (B, C, H, W), weight (OC, C, K, K)) + bias (OC)
 * OH = (H + 2*pad - K) / stride + 1. bias may be NULL.
 * ws: workspace of conv2d_workspace_floats() floats. */
size_t conv2d_workspace_floats(int C, int H, int W, int OC, int K, int stride, int pad);
void conv2d_forward(float *out, float *ws, const float *inp, const float *weight, const float *bias,
                    int B, int C, int H, int W, int OC, int K, int stride, int pad);
void conv2d_backward(float *dinp, float *dweight, float *dbias, float *ws,
                     const float *dout, const float *inp, const float *weight,
                     int B, int C, int H, int W, int OC, int K, int stride, int pad);
/* The same with the input gradient added into dinp (dinp += dinp's
 * gradient): one pass fewer than writing it and adding it to another after.
 * The direct kernels add for stride 1 "same", the bits of writing the
 * gradient and adding after; other shapes add through im2col + BLAS, whose
 * sums associate otherwise. conv2d_adds_cheaply(K, stride, pad): the shapes
 * where adding costs nothing in speed (stride 1 "same", 1x1, or no direct
 * kernels on this CPU); conv2d_adds_exactly: those where it also keeps the
 * bits (the direct kernels' stride 1 "same"). */
void conv2d_backward_add(float *dinp, float *dweight, float *dbias, float *ws,
                         const float *dout, const float *inp, const float *weight,
                         int B, int C, int H, int W, int OC, int K, int stride, int pad);
int conv2d_adds_cheaply(int K, int stride, int pad);
int conv2d_adds_exactly(int K, int stride, int pad);

/* The convolution kernels that run: "avx512" or "avx2" (the direct kernels
 * for stride 1, same padding; every other shape is im2col + BLAS), or
 * "im2col" (all shapes im2col + BLAS: a CPU without AVX2 and FMA, or
 * PZ_CONV_KERNELS=im2col). Chosen once per process from the CPU's features
 * (pz_cpu_features) unless PZ_CONV_KERNELS names one the CPU has. */
const char *pz_conv_kernels(void);
/* the same, with who chose them and whether they fall short of the CPU
 * (pz_conv_info is base's, beside pz_blas_info) */
pz_conv_info pz_conv_get_info(void);
/* the choice itself, pure (tests): NULL means im2col; want may be NULL */
struct pz_conv_direct_ops;
const struct pz_conv_direct_ops *pz_conv_direct_for(unsigned features, const char *want);

/* col (C*K*K, OH*OW) <- one image (C, H, W); col2im accumulates back (and
 * may overwrite col's padding positions: col is the caller's scratch). */
void im2col(float *col, const float *img, int C, int H, int W, int K, int stride, int pad);
void col2im(float *img, float *col, int C, int H, int W, int K, int stride, int pad);

/* ---- batch normalization (per channel over B*HW) -------------------------
 * train != 0: normalize with batch statistics, save mean/rstd (C) for
 * backward, update running stats (PyTorch semantics: unbiased running var,
 * run = (1 - momentum) * run + momentum * batch). train == 0: running stats. */
void batchnorm_forward(float *out, float *mean, float *rstd, float *run_mean, float *run_var,
                       const float *inp, const float *gamma, const float *beta,
                       int B, int C, int HW, float momentum, float eps, int train);
void batchnorm_backward(float *dinp, float *dgamma, float *dbeta,
                        const float *dout, const float *inp, const float *mean, const float *rstd,
                        const float *gamma, int B, int C, int HW);

/* The same followed by a ReLU, in one pass each way (bit for bit the two
 * kernels in a row): out = relu(bn(inp)); backward takes the gradient of
 * the ReLU's output, after a training forward with the same gamma and beta:
 * where the ReLU passed (its output > 0) it recomputes from inp, mean and
 * rstd (dz = dout there, else 0, as relu_backward). */
void batchnorm_relu_forward(float *out, float *mean, float *rstd, float *run_mean, float *run_var,
                            const float *inp, const float *gamma, const float *beta,
                            int B, int C, int HW, float momentum, float eps, int train);
void batchnorm_relu_backward(float *dinp, float *dgamma, float *dbeta, const float *dout, const float *inp,
                             const float *mean, const float *rstd, const float *gamma, const float *beta, int B, int C,
                             int HW);
/* out = relu(bn(inp) + res) in one pass, bit for bit batchnorm_forward then
 * add_relu_forward (a residual block's end; bn(inp) itself not written) */
void batchnorm_add_relu_forward(float *out, float *mean, float *rstd, float *run_mean, float *run_var,
                                const float *inp, const float *gamma, const float *beta, const float *res, int B, int C,
                                int HW, float momentum, float eps, int train);

/* ---- activations, residual add ------------------------------------------ */
void relu_forward(float *out, const float *inp, size_t n);
/* uses the forward OUTPUT: dinp = dout * (out > 0) */
void relu_backward(float *dinp, const float *dout, const float *out, size_t n);
void add_forward(float *out, const float *a, const float *b, size_t n);
/* out = relu(a + b) in one pass (bit for bit add_forward then relu_forward) */
void add_relu_forward(float *out, const float *a, const float *b, size_t n);

/* ---- pooling -------------------------------------------------------------
 * max: argmax (B, C, OH, OW) holds the input offset within each (H, W) plane.
 * avg: count_include_pad semantics (divide by K*K), like PyTorch's default. */
void maxpool2d_forward(float *out, int32_t *argmax, const float *inp,
                       int B, int C, int H, int W, int K, int stride, int pad);
void maxpool2d_backward(float *dinp, const float *dout, const int32_t *argmax,
                        int B, int C, int H, int W, int K, int stride, int pad);
void avgpool2d_forward(float *out, const float *inp, int B, int C, int H, int W, int K, int stride, int pad);
void avgpool2d_backward(float *dinp, const float *dout, int B, int C, int H, int W, int K, int stride, int pad);
/* out (B, C) = mean over each (H*W) plane */
void global_avgpool_forward(float *out, const float *inp, int B, int C, int HW);
void global_avgpool_backward(float *dinp, const float *dout, int B, int C, int HW);

/* ---- matrix product -----------------------------------------------------
 * C (M, N) = alpha op(A) op(B) + beta C + bias (N, added to every row; may
 * be NULL), row-major, op(X) = X^T when tX is nonzero; beta 0 does not read
 * C. pipezip's own AVX-512 or AVX2 kernels (kernels/gemm.c), or the BLAS on
 * other CPUs or with PZ_GEMM_KERNELS=blas. Runs on pz_get_threads()
 * threads, or on one inside a parallel region; the same bits whatever the
 * thread count. */
void pz_gemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
             float beta, float *C, int ldc, const float *bias);
/* what a product does with each element of C once it is final: nothing;
 * write GELU(C) to out (C kept: a dense layer's output and the GELU's after
 * it); C = C GELU'(h) (a dense layer's input gradient through the GELU
 * before it, h the GELU's input); or C = h + C (a residual branch's last
 * dense layer adding the branch's input). Bit for bit
 * gelu_forward/gelu_backward/add_forward after the product. */
typedef enum { PZ_EPI_NONE, PZ_EPI_GELU, PZ_EPI_GELU_GRAD, PZ_EPI_ADD } pz_epi_kind;
typedef struct pz_gemm_epi {
    pz_epi_kind kind;
    float *out; /* PZ_EPI_GELU: (M, N), row stride ldo */
    int ldo;
    const float *h; /* PZ_EPI_GELU_GRAD, PZ_EPI_ADD: (M, N), row stride ldh */
    int ldh;
} pz_gemm_epi;
void pz_gemm_fused(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                   float beta, float *C, int ldc, const float *bias, const pz_gemm_epi *epi);
/* pz_gemm that also adds each row of op(A)'s sum over k (in k order from
 * 0, the same bits as a plain loop) to asum (M): a dense layer's bias
 * gradient from its weight gradient's product, read once */
void pz_gemm_rowsum(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                    float beta, float *C, int ldc, const float *bias, float *asum);
/* n floats of this OS thread's scratch number `slot` (0 to 3; 0, 1 and 3
 * are pz_gemm's own), 64-byte aligned, kept for the thread's life and freed
 * when it ends; NULL when out of memory */
float *pz_thread_scratch(int slot, size_t n);
/* the kernels pz_gemm runs ("avx512", "avx2" or "blas") and who chose them */
pz_conv_info pz_gemm_get_info(void);

/* ---- linear: out (B, OC) = inp (B, C) @ weight (OC, C)^T + bias (OC) ------- */
void linear_forward(float *out, const float *inp, const float *weight, const float *bias, int B, int C, int OC);
void linear_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                     const float *weight, int B, int C, int OC);
/* the linear layer and the GELU after it: out the layer's output, gout
 * GELU(out), in one pass (the product's epilogue) */
void linear_forward_gelu(float *out, float *gout, const float *inp, const float *weight, const float *bias, int B, int C,
                         int OC);
/* out = the dense layer's output + res in one pass (the add in the
 * product's epilogue): bit for bit linear_forward then add_forward(out, res, out) */
void linear_forward_add(float *out, const float *inp, const float *weight, const float *bias, const float *res, int B, int C,
                        int OC);
/* linear_backward with the GELU before the layer folded in: dinp is the
 * GELU's input gradient, (dout W) GELU'(h), h (B, C) the GELU's input and
 * inp its output */
void linear_backward_gelu(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                          const float *weight, const float *h, int B, int C, int OC);

/* ---- transformer (GPT-2) layers over N = B*T rows of C ----------------------
 * embedding: out (B, T, C) = wte (V, C)[tok] + wpe (T, C)[t]; tok holds token
 * ids as exact floats. layernorm: per row, saves mean and rstd (N) for
 * backward. gelu: tanh form. attention: causal multi-head over qkv (B, T,
 * 3C) -> out (B, T, C), tile by tile, saving each query's log-sum-exp lse
 * (B, NH, T); backward overwrites all of dqkv. */
void embedding_forward(float *out, const float *tok, const float *wte, const float *wpe, int B, int T, int C, int V);
void embedding_backward(float *dwte, float *dwpe, const float *dout, const float *tok, int B, int T, int C, int V);
void layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w, const float *b, int N,
                       int C, float eps);
/* dinp = the input gradient, plus dres where dres is given (a residual
 * branch's first layer adding the gradient that passes around it: bit for
 * bit add_forward(dinp, dres, dinp) after) */
void layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp, const float *mean,
                        const float *rstd, const float *w, int N, int C, const float *dres);
void gelu_forward(float *out, const float *inp, size_t n);
void gelu_backward(float *dinp, const float *dout, const float *inp, size_t n);
/* their element loops per ISA (gelu_impl.h), chosen by gelu_forward/backward */
void gelu_forward_avx2(float *out, const float *inp, size_t n);
void gelu_backward_avx2(float *dinp, const float *dout, const float *inp, size_t n);
void gelu_forward_avx512(float *out, const float *inp, size_t n);
void gelu_backward_avx512(float *dinp, const float *dout, const float *inp, size_t n);
void attention_forward(float *out, float *lse, const float *qkv, int B, int T, int C, int NH);
void attention_backward(float *dqkv, const float *dout, const float *qkv, const float *lse, int B, int T, int C, int NH);
/* their softmax row loops per ISA (softmax_impl.h), chosen by the two above */
void softmax_rows_forward_avx2(float *S, float *inv, float *L, int nq, int nk, int i0);
void softmax_rows_backward_avx2(float *P, float *dS, const float *L, int nq, int nk, int i0);
void softmax_rows_forward_avx512(float *S, float *inv, float *L, int nq, int nk, int i0);
void softmax_rows_backward_avx512(float *P, float *dS, const float *L, int nq, int nk, int i0);
/* one (sample b, head h) pair without any scratch memory: what the two above
 * fall back to where a thread cannot get its tiles' scratch (agrees with
 * them to rounding) */
void attention_forward_direct(float *out, float *lse, const float *qkv, int b, int h, int T, int C, int NH);
void attention_backward_direct(float *dqkv, const float *dout, const float *qkv, const float *lse, int b, int h, int T, int C, int NH);

/* ---- softmax cross-entropy, mean over the batch -----------------------------
 * Returns the mean loss; dlogits (may be NULL) = (softmax - onehot) / B;
 * *correct (may be NULL) counts argmax hits. */
float softmax_xent_forward_backward(float *dlogits, int *correct, const float *logits,
                                    const int32_t *labels, int B, int NC);

#endif
