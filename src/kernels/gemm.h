/* SPDX-License-Identifier: MIT */
/* gemm.h — pipezip's own single-precision GEMM, one build per ISA
 * (gemm_impl.h says how it works), chosen by the CPU's features in
 * kernels/gemm.c. Internal to kernels: the layers call pz_gemm
 * (kernels.h). */
#ifndef PZ_GEMM_H
#define PZ_GEMM_H

typedef struct pz_gemm_ops {
    const char *name; /* "avx512", "avx2" */
    /* C (M, N) = alpha * op(A) . op(B) + beta * C + bias (N, broadcast over
     * rows; NULL for none), row-major; op(X) = X^T when tX. beta 0 does not
     * read C. asum (M; NULL for none): each row of op(A)'s sum over k, in k
     * order from 0, added to it, from the packing's own reads. threads: the
     * team to run on (1 inside a parallel region). Returns 0, or -1 when
     * out of memory for its buffers (C and asum untouched). */
    int (*gemm)(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                 float beta, float *C, int ldc, const float *bias, float *asum, int threads);
} pz_gemm_ops;

#include <stddef.h>
/* n floats of this OS thread's scratch `slot` (kernels.h) */
float *pz_thread_scratch(int slot, size_t n);

#define PZ_GEMM_DECLARE(isa)                                                                                           \
    int pz_gemm_##isa(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,     \
                       int ldb, float beta, float *C, int ldc, const float *bias, float *asum, int threads);
PZ_GEMM_DECLARE(avx512)
PZ_GEMM_DECLARE(avx2)

#endif
