/* SPDX-License-Identifier: MIT */
/* gemm.c — pz_gemm: the dense layers' and attention's matrix products.
 * pipezip's own kernels (gemm_impl.h) in an AVX-512 or an AVX2 + FMA build,
 * chosen once per process from the CPU's features (or PZ_GEMM_KERNELS:
 * avx512, avx2, blas); a CPU without AVX2 + FMA runs the BLAS. The
 * product does not depend on the thread count (gemm_impl.h), nor, for its
 * own kernels, on the BLAS library or OPENBLAS_CORETYPE. */
#include "kernels.h"
#include "blas.h"
#include "gemm.h"

#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- scratch kept per OS thread ---------------------------------------------
 * Pipeline stages run on threads of their own, each with its own OpenMP
 * team, so scratch cannot be indexed by OpenMP's thread number: each OS
 * thread keeps its own slots (a pthread key), freed when the thread ends. */
enum { SLOTS = 4 };
typedef struct {
    float *p[SLOTS];
    size_t cap[SLOTS];
} scratch;
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static void scratch_free(void *v) {
    scratch *s = v;
    for (int i = 0; i < SLOTS; i++) free(s->p[i]);
    free(s);
}
static void scratch_init(void) { pthread_key_create(&scratch_key, scratch_free); }

float *pz_thread_scratch(int slot, size_t n) {
    if (slot < 0 || slot >= SLOTS) return NULL;
    pthread_once(&scratch_once, scratch_init);
    scratch *s = pthread_getspecific(scratch_key);
    if (!s) {
        s = calloc(1, sizeof *s);
        if (!s || pthread_setspecific(scratch_key, s)) {
            free(s);
            return NULL;
        }
    }
    if (s->cap[slot] < n) {
        free(s->p[slot]);
        s->p[slot] = aligned_alloc(64, ((n * sizeof(float) + 63) / 64) * 64);
        s->cap[slot] = s->p[slot] ? n : 0;
    }
    return s->p[slot];
}

static const pz_gemm_ops gemm_avx512 = {"avx512", pz_gemm_avx512, PZ_GEMM_MR_AVX512, PZ_GEMM_NR_AVX512, pz_gemm_pack_a_avx512, pz_gemm_pack_b_avx512,
                                        pz_gemm_tile_avx512};
static const pz_gemm_ops gemm_avx2 = {"avx2", pz_gemm_avx2, PZ_GEMM_MR_AVX2, PZ_GEMM_NR_AVX2,
                                      pz_gemm_pack_a_avx2, pz_gemm_pack_b_avx2, pz_gemm_tile_avx2};

static const pz_gemm_ops *gemm_for(unsigned features, const char *want) {
    if (want && !strcmp(want, "blas")) return NULL;
    if (want && !strcmp(want, "avx512") && (features & PZ_CPU_AVX512)) return &gemm_avx512;
    if (want && !strcmp(want, "avx2") && (features & PZ_CPU_AVX2_FMA)) return &gemm_avx2;
    if (features & PZ_CPU_AVX512) return &gemm_avx512;
    if (features & PZ_CPU_AVX2_FMA) return &gemm_avx2;
    return NULL;
}

static int chosen_by_user;
static const pz_gemm_ops *chosen_ops;
static pthread_once_t choose_once = PTHREAD_ONCE_INIT;
static void choose(void) {
    const char *want = pz_kernels_wanted("PZ_GEMM_KERNELS");
    chosen_ops = gemm_for(pz_cpu_features(), want);
    chosen_by_user = pz_kernels_user_choice("PZ_GEMM_KERNELS", "blas", want, chosen_ops ? chosen_ops->name : NULL);
}
/* chosen once per process (stages on threads of their own all see one choice) */
static const pz_gemm_ops *gemm_ops(void) {
    pthread_once(&choose_once, choose);
    return chosen_ops;
}

const pz_gemm_ops *pz_gemm_kernels(void) { return gemm_ops(); }

pz_conv_info pz_gemm_get_info(void) {
    const pz_gemm_ops *now = gemm_ops(), *best = gemm_for(pz_cpu_features(), NULL);
    pz_conv_info i = {now ? now->name : "blas", chosen_by_user ? "user" : "pipezip", now != best};
    return i;
}

void pz_gemm_epilogue(const pz_gemm_epi *e, float *C, int ldc, int i, int j, int m, int n,
                      void (*fwd)(float *, const float *, size_t), void (*bwd)(float *, const float *, const float *, size_t)) {
    enum { W = 512 };
    float d[W]; /* GELU's backward takes its input gradient apart from its output */
    for (int r = i; r < i + m; r++)
        for (int c0 = j; c0 < j + n; c0 += W) {
            const int w = j + n - c0 < W ? j + n - c0 : W;
            float *c = C + (size_t)r * ldc + c0;
            if (e->kind == PZ_EPI_GELU) fwd(e->out + (size_t)r * e->ldo + c0, c, (size_t)w);
            else if (e->kind == PZ_EPI_ADD) {
                const float *h = e->h + (size_t)r * e->ldh + c0;
#pragma omp simd
                for (int q = 0; q < w; q++) c[q] = h[q] + c[q];
            } else if (e->kind == PZ_EPI_GELU_GRAD) {
                for (int q = 0; q < w; q++) d[q] = c[q];
                bwd(c, d, e->h + (size_t)r * e->ldh + c0, (size_t)w);
            }
        }
}

/* each row of op(A) (M, K)'s sum over k, in k order from 0, added to asum */
static void rows_sum(int ta, int M, int K, const float *A, int lda, float *asum) {
    if (!ta) {
        for (int i = 0; i < M; i++) {
            float s = 0.0f;
            for (int k = 0; k < K; k++) s += A[(size_t)i * lda + k];
            asum[i] += s;
        }
        return;
    }
    /* A^T: rows side by side (a vector of them at a time), in blocks over threads */
    enum { OB = 256 };
#pragma omp parallel for schedule(static) num_threads(pz_get_threads()) if ((size_t)K * M > 65536 && !omp_in_parallel())
    for (int o0 = 0; o0 < M; o0 += OB) {
        const int o1 = o0 + OB < M ? o0 + OB : M;
        float s[OB] = {0};
        for (int k = 0; k < K; k++) {
            const float *d = A + (size_t)k * lda;
#pragma omp simd
            for (int o = o0; o < o1; o++) s[o - o0] += d[o];
        }
        for (int o = o0; o < o1; o++) asum[o] += s[o - o0];
    }
}

static void gemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                 float beta, float *C, int ldc, const float *bias, float *asum, const pz_gemm_epi *epi) {
    const pz_gemm_ops *ops = gemm_ops();
    /* one thread inside a parallel region, or for a product too small to share */
    const int threads = omp_in_parallel() || (double)M * N * K < 262144.0 ? 1 : pz_get_threads();
    if (ops && ops->gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bias, asum, epi, threads) == 0) return;
    pz_blas_prepare();
    float b = beta;
    if (bias) { /* C = beta C + bias first, then the product added */
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) C[(size_t)i * ldc + j] = (beta != 0.0f ? beta * C[(size_t)i * ldc + j] : 0.0f) + bias[j];
        b = 1.0f;
    }
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B,
                ldb, b, C, ldc);
    if (asum && M > 0) rows_sum(ta, M, K > 0 ? K : 0, A, lda, asum);
    if (epi) pz_gemm_epilogue(epi, C, ldc, 0, 0, M, N, gelu_forward, gelu_backward);
}

void pz_gemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
             float beta, float *C, int ldc, const float *bias) {
    gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bias, NULL, NULL);
}

void pz_gemm_fused(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                   float beta, float *C, int ldc, const float *bias, const pz_gemm_epi *epi) {
    gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bias, NULL, epi);
}

void pz_gemm_rowsum(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                    float beta, float *C, int ldc, const float *bias, float *asum) {
    gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bias, asum, NULL);
}
