/* SPDX-License-Identifier: MIT */
/* gemm.h — pipezip's own single-precision GEMM, one build per ISA
 * (gemm_impl.h says how it works), chosen by the CPU's features in
 * kernels/gemm.c. Internal to kernels: the layers call pz_gemm
 * (kernels.h). */
#ifndef PZ_GEMM_H
#define PZ_GEMM_H

#include "kernels.h" /* pz_gemm_epi */

/* each build's tile: MR rows by NR = 2 vectors of columns */
#define PZ_GEMM_MR_AVX512 14
#define PZ_GEMM_NR_AVX512 32
#define PZ_GEMM_MR_AVX2 6
#define PZ_GEMM_NR_AVX2 16

typedef struct pz_gemm_ops {
    const char *name; /* "avx512", "avx2" */
    /* C (M, N) = alpha * op(A) . op(B) + beta * C + bias (N, broadcast over
     * rows; NULL for none), row-major; op(X) = X^T when tX. beta 0 does not
     * read C. asum (M; NULL for none): each row of op(A)'s sum over k, in k
     * order from 0, added to it, from the packing's own reads. epi (NULL:
     * none): what each tile of C gets once final (kernels.h). threads: the
     * team to run on (1 inside a parallel region). Returns 0, or -1 when
     * out of memory for its buffers (C and asum untouched). */
    int (*gemm)(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                 float beta, float *C, int ldc, const float *bias, float *asum, const pz_gemm_epi *epi, int threads);
    /* the same kernels a tile at a time, on packed operands (gemm_impl.h's
     * layouts), for callers that pack once and multiply parts many times:
     * op(A) (mc, kc) into panels of mr rows (mc rounded up to mr, times kc
     * floats); op(B) (kc, nc) into panels of nr columns (nc rounded up to
     * nr, times kc); C (m <= mr, n <= nr) = alpha a . b + beta C over the
     * first kc values of k of an A panel a and a B panel b (beta 0 does not
     * read C) */
    int mr, nr;
    void (*pack_a)(float *dst, int ta, const float *A, int lda, int mc, int kc);
    void (*pack_b)(float *dst, int tb, const float *B, int ldb, int kc, int nc);
    void (*tile)(int kc, const float *a, const float *b, float *c, int ldc, int m, int n, float alpha, float beta);
} pz_gemm_ops;

/* epi (kernels.h) on C's rows [i, i + m), columns [j, j + n), once final,
 * with the GELU element loops fwd and bwd (a build's, or the dispatching
 * gelu_forward/gelu_backward), a row (or 512 columns of it) a call */
void pz_gemm_epilogue(const pz_gemm_epi *e, float *C, int ldc, int i, int j, int m, int n,
                      void (*fwd)(float *, const float *, size_t), void (*bwd)(float *, const float *, const float *, size_t));

/* the kernels pz_gemm runs, for tiles; NULL where it runs the BLAS */
const pz_gemm_ops *pz_gemm_kernels(void);

#include <stddef.h>
/* n floats of this OS thread's scratch `slot` (kernels.h) */
float *pz_thread_scratch(int slot, size_t n);

#define PZ_GEMM_DECLARE(isa)                                                                                           \
    int pz_gemm_##isa(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,     \
                       int ldb, float beta, float *C, int ldc, const float *bias, float *asum,                   \
                       const pz_gemm_epi *epi, int threads);                                                     \
    void pz_gemm_pack_a_##isa(float *dst, int ta, const float *A, int lda, int mc, int kc);                          \
    void pz_gemm_pack_b_##isa(float *dst, int tb, const float *B, int ldb, int kc, int nc);                          \
    void pz_gemm_tile_##isa(int kc, const float *a, const float *b, float *c, int ldc, int m, int n, float alpha,    \
                            float beta);
PZ_GEMM_DECLARE(avx512)
PZ_GEMM_DECLARE(avx2)

#endif
