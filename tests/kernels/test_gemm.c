/* SPDX-License-Identifier: MIT */
/* test_gemm.c — pipezip's GEMM (kernels/gemm_impl.h) against the
 * definition in double precision, for every build this CPU runs (AVX-512,
 * AVX2): all four transposes, alpha and beta (beta 0 must not read C: it
 * holds NaN there), a bias, leading dimensions wider than the matrix,
 * shapes that reach every edge (one row, one column, sizes that are not
 * multiples of the tiles, K past one packed block and past several, N past
 * one column block). Then what the design promises: the thread count never
 * changes a bit; the AVX-512 and AVX2 builds give the same bits; the row
 * sums of op(A) taken while packing are a plain loop's bits; pz_gemm routes
 * to the build chosen from the CPU's features (or, run with
 * PZ_GEMM_KERNELS=blas, to the BLAS, with the row sums its own pass). */
#include "../test.h"
#include "base/base.h"
#include "kernels/gemm.h"
#include "kernels/kernels.h"

typedef int (*gemm_fn)(int, int, int, int, int, float, const float *, int, const float *, int, float, float *, int,
                        const float *, float *, const pz_gemm_epi *, int);

static float urand(uint64_t *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((*s >> 40) / 16777216.0) - 0.5f;
}

/* each row of op(A)'s sum over k in order from 0, added to base: what the
 * row sums must give, bit for bit */
static void plain_rowsum(float *out, const float *base, int ta, int M, int K, const float *A, int lda) {
    for (int i = 0; i < M; i++) {
        float s = 0.0f;
        for (int k = 0; k < K; k++) s += ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
        out[i] = base[i] + s;
    }
}

/* one product, on 1 and on 3 threads: each element within 2e-6 of the sum
 * of its terms' magnitudes (float32 rounding over K fused terms) of the
 * double-precision definition, and the two runs the same bits; with row
 * sums asked for (rowsum), those a plain loop's bits */
static void one(const char *isa, gemm_fn f, int ta, int tb, int M, int N, int K, float alpha, float beta, int use_bias,
                int pad, int rowsum, uint64_t seed) {
    const int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
    const size_t na = (size_t)lda * (ta ? K : M), nb = (size_t)ldb * (tb ? N : K), nc = (size_t)ldc * M;
    float *A = malloc(na * 4), *B = malloc(nb * 4), *C = malloc(nc * 4), *C3 = malloc(nc * 4), *C0 = malloc(nc * 4),
          *bias = malloc((size_t)N * 4);
    for (size_t i = 0; i < na; i++) A[i] = urand(&seed);
    for (size_t i = 0; i < nb; i++) B[i] = urand(&seed);
    for (size_t i = 0; i < nc; i++) C0[i] = beta != 0.0f ? urand(&seed) : NAN;
    for (int j = 0; j < N; j++) bias[j] = urand(&seed);
    memcpy(C, C0, nc * 4), memcpy(C3, C0, nc * 4);
    float *base = malloc((size_t)M * 4), *s1 = malloc((size_t)M * 4), *s3 = malloc((size_t)M * 4), *sw = malloc((size_t)M * 4);
    for (int i = 0; i < M; i++) base[i] = s1[i] = s3[i] = urand(&seed);
    f(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, use_bias ? bias : NULL, rowsum ? s1 : NULL, NULL, 1);
    f(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C3, ldc, use_bias ? bias : NULL, rowsum ? s3 : NULL, NULL, 3);
    if (rowsum) {
        plain_rowsum(sw, base, ta, M, K, A, lda);
        CHECK(!memcmp(s1, sw, (size_t)M * 4) && !memcmp(s3, sw, (size_t)M * 4),
              "%s ta%d tb%d %dx%dx%d: op(A)'s row sums differ from a plain loop's", isa, ta, tb, M, N, K);
    }
    free(base), free(s1), free(s3), free(sw);
    int miss = 0, same = 1, pads = 1;
    for (int i = 0; i < M; i++) {
        same &= memcmp(C + (size_t)i * ldc, C3 + (size_t)i * ldc, (size_t)N * 4) == 0;
        for (int j = N; j < ldc; j++) pads &= isnan(C0[(size_t)i * ldc + j]) ? isnan(C[(size_t)i * ldc + j]) : C[(size_t)i * ldc + j] == C0[(size_t)i * ldc + j];
        for (int j = 0; j < N; j++) {
            double s = 0, mag = 0;
            for (int k = 0; k < K; k++) {
                const double a = ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
                const double b = tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
                s += a * b, mag += fabs(a * b);
            }
            const double old = beta != 0.0f ? (double)beta * C0[(size_t)i * ldc + j] : 0.0;
            const double want = alpha * s + old + (use_bias ? bias[j] : 0.0), got = C[(size_t)i * ldc + j];
            if (!(fabs(got - want) <= 2e-6 * (fabs(alpha) * mag + fabs(old) + 1.0))) {
                if (miss < 3) fprintf(stderr, "  %s ta%d tb%d %dx%dx%d [%d,%d]: got %.9g want %.9g\n", isa, ta, tb, M, N, K, i, j, got, want);
                miss++;
            }
        }
    }
    CHECK(miss == 0, "%s ta%d tb%d %dx%dx%d alpha %g beta %g bias %d: %d values off", isa, ta, tb, M, N, K, alpha, beta, use_bias, miss);
    CHECK(same, "%s ta%d tb%d %dx%dx%d: 1 and 3 threads differ", isa, ta, tb, M, N, K);
    CHECK(pads, "%s ta%d tb%d %dx%dx%d: wrote outside the N columns of C", isa, ta, tb, M, N, K);
    free(A), free(B), free(C), free(C3), free(C0), free(bias);
}

/* the epilogues: the product then GELU (its output elsewhere, C kept), or
 * C times GELU' of h, bit for bit the product followed by gelu_forward or
 * gelu_backward, on 1 and 3 threads, for shapes with edges, several k
 * blocks (the epilogue only after the last) and two column blocks */
static void epilogues(const char *isa, gemm_fn f) {
    static const int shapes[][3] = {{1, 1, 1}, {15, 33, 257}, {100, 70, 600}, {45, 2100, 40}, {30, 64, 5}};
    uint64_t seed = 99;
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int t = 0; t < 4; t++) {
            const int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2], ta = t & 1, tb = t >> 1, ldc = N + 3;
            const size_t nc = (size_t)M * ldc;
            float *A = malloc((size_t)M * K * 4), *B = malloc((size_t)K * N * 4), *bias = malloc((size_t)N * 4);
            float *C = malloc(nc * 4), *W = malloc(nc * 4), *G = malloc(nc * 4), *H = malloc(nc * 4), *D = malloc(nc * 4);
            for (int i = 0; i < M * K; i++) A[i] = urand(&seed) * 6.0f;
            for (int i = 0; i < K * N; i++) B[i] = urand(&seed);
            for (int j = 0; j < N; j++) bias[j] = urand(&seed);
            for (size_t i = 0; i < nc; i++) H[i] = urand(&seed) * 8.0f, G[i] = W[i] = D[i] = NAN;
            for (int threads = 1; threads <= 3; threads += 2) {
                /* forward: C = A B + bias, G = GELU(C) */
                const pz_gemm_epi fwd = {PZ_EPI_GELU, G, ldc, NULL, 0};
                f(ta, tb, M, N, K, 1.0f, A, ta ? M : K, B, tb ? K : N, 0.0f, C, ldc, bias, NULL, &fwd, threads);
                f(ta, tb, M, N, K, 1.0f, A, ta ? M : K, B, tb ? K : N, 0.0f, W, ldc, bias, NULL, NULL, threads);
                int same = 1;
                for (int i = 0; i < M; i++) {
                    gelu_forward(D + (size_t)i * ldc, W + (size_t)i * ldc, (size_t)N);
                    same &= !memcmp(C + (size_t)i * ldc, W + (size_t)i * ldc, (size_t)N * 4) &&
                            !memcmp(G + (size_t)i * ldc, D + (size_t)i * ldc, (size_t)N * 4);
                }
                CHECK(same, "%s ta%d tb%d %dx%dx%d, %d threads: the GELU epilogue differs from the product then GELU", isa,
                      ta, tb, M, N, K, threads);
                /* backward: C = (A B) GELU'(H) */
                const pz_gemm_epi bwd = {PZ_EPI_GELU_GRAD, NULL, 0, H, ldc};
                f(ta, tb, M, N, K, 0.5f, A, ta ? M : K, B, tb ? K : N, 0.0f, C, ldc, NULL, NULL, &bwd, threads);
                f(ta, tb, M, N, K, 0.5f, A, ta ? M : K, B, tb ? K : N, 0.0f, W, ldc, NULL, NULL, NULL, threads);
                same = 1;
                for (int i = 0; i < M; i++) {
                    gelu_backward(D + (size_t)i * ldc, W + (size_t)i * ldc, H + (size_t)i * ldc, (size_t)N);
                    same &= !memcmp(C + (size_t)i * ldc, D + (size_t)i * ldc, (size_t)N * 4);
                }
                CHECK(same, "%s ta%d tb%d %dx%dx%d, %d threads: the GELU gradient epilogue differs from the product then "
                      "gelu_backward", isa, ta, tb, M, N, K, threads);
            }
            free(A), free(B), free(bias), free(C), free(W), free(G), free(H), free(D);
        }
}

static void build(const char *isa, gemm_fn f) {
    static const int shapes[][3] = {
        {1, 1, 1},     {1, 37, 5},    {29, 1, 7},    {14, 32, 256},  {15, 33, 257},  {6, 16, 8},
        {7, 17, 300},  {100, 70, 513}, {64, 96, 32}, {300, 45, 600}, {45, 2100, 40}, {13, 31, 1},
    };
    uint64_t seed = 1;
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int t = 0; t < 4; t++) {
            const int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
            one(isa, f, t & 1, t >> 1, M, N, K, 1.0f, 0.0f, 0, 0, 0, seed++);
            one(isa, f, t & 1, t >> 1, M, N, K, 0.37f, 1.0f, 1, 3, 1, seed++);
            one(isa, f, t & 1, t >> 1, M, N, K, -2.0f, 0.5f, 0, 1, 0, seed++);
            one(isa, f, t & 1, t >> 1, M, N, K, 1.0f, 0.0f, 1, 2, 1, seed++);
        }
}

int main(void) {
    const unsigned feat = pz_cpu_features();
    if (feat & PZ_CPU_AVX512) build("avx512", pz_gemm_avx512), epilogues("avx512", pz_gemm_avx512);
    else printf("this CPU lacks AVX-512: its build not run\n");
    if (feat & PZ_CPU_AVX2_FMA) build("avx2", pz_gemm_avx2), epilogues("avx2", pz_gemm_avx2);
    else printf("this CPU lacks AVX2 + FMA: its build not run\n");
    /* the two builds give the same bits: each element is one chain of
     * fused multiply-adds over k in order, whatever the vector width */
    if ((feat & PZ_CPU_AVX512) && (feat & PZ_CPU_AVX2_FMA)) {
        static const int sh[][3] = {{300, 45, 600}, {15, 33, 257}, {100, 70, 513}};
        int same = 1;
        for (int s = 0; s < 3; s++)
            for (int t = 0; t < 4; t++) {
                const int M = sh[s][0], N = sh[s][1], K = sh[s][2], ta = t & 1, tb = t >> 1;
                float *A = malloc((size_t)M * K * 4), *B = malloc((size_t)K * N * 4), *C5 = malloc((size_t)M * N * 4),
                      *C2 = malloc((size_t)M * N * 4), *bias = malloc((size_t)N * 4);
                uint64_t r = 77 + (uint64_t)s * 4 + (uint64_t)t;
                for (int i = 0; i < M * K; i++) A[i] = urand(&r);
                for (int i = 0; i < K * N; i++) B[i] = urand(&r);
                for (int i = 0; i < M * N; i++) C5[i] = C2[i] = urand(&r);
                for (int i = 0; i < N; i++) bias[i] = urand(&r);
                pz_gemm_avx512(ta, tb, M, N, K, 0.37f, A, ta ? M : K, B, tb ? K : N, 1.0f, C5, N, bias, NULL, NULL, 2);
                pz_gemm_avx2(ta, tb, M, N, K, 0.37f, A, ta ? M : K, B, tb ? K : N, 1.0f, C2, N, bias, NULL, NULL, 1);
                same &= !memcmp(C5, C2, (size_t)M * N * 4);
                free(A), free(B), free(C5), free(C2), free(bias);
            }
        CHECK(same, "the AVX-512 and AVX2 builds give different bits");
    }
    /* pz_gemm: the chosen kernels, by the features (or the BLAS when the
     * environment asks for it) */
    const pz_conv_info gi = pz_gemm_get_info();
    const char *env = getenv("PZ_GEMM_KERNELS");
    const int blas = env && !strcmp(env, "blas");
    const char *want = blas ? "blas" : feat & PZ_CPU_AVX512 ? "avx512" : feat & PZ_CPU_AVX2_FMA ? "avx2" : "blas";
    CHECK(!strcmp(gi.name, want), "pz_gemm runs %s where %s is wanted", gi.name, want);
    CHECK(blas || !gi.generic, "pz_gemm runs generic kernels unasked");
    /* and its result is that build's */
    if (strcmp(gi.name, "blas")) {
        enum { M = 50, N = 40, K = 300 };
        float *A = malloc(M * K * 4), *B = malloc(K * N * 4), *C = malloc(M * N * 4), *D = malloc(M * N * 4);
        uint64_t s = 9;
        for (int i = 0; i < M * K; i++) A[i] = urand(&s);
        for (int i = 0; i < K * N; i++) B[i] = urand(&s);
        pz_set_threads(2);
        pz_gemm(0, 0, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N, NULL);
        (feat & PZ_CPU_AVX512 ? pz_gemm_avx512 : pz_gemm_avx2)(0, 0, M, N, K, 1.0f, A, K, B, N, 0.0f, D, N, NULL, NULL, NULL, 1);
        CHECK(!memcmp(C, D, M * N * 4), "pz_gemm differs from the %s build", gi.name);
        free(A), free(B), free(C), free(D);
    }
    /* pz_gemm_rowsum, whichever kernels run: the product as pz_gemm's, the
     * row sums a plain loop's bits (a dense layer's weight and bias
     * gradients: dout^T . inp, and dout's column sums) */
    for (int ta = 0; ta <= 1; ta++) {
        enum { M = 300, N = 70, K = 600 };
        float *A = malloc(M * K * 4), *B = malloc(K * N * 4), *C = malloc(M * N * 4), *D = malloc(M * N * 4);
        float base[M], got[M], wantv[M];
        uint64_t s = 11 + (uint64_t)ta;
        for (int i = 0; i < M * K; i++) A[i] = urand(&s);
        for (int i = 0; i < K * N; i++) B[i] = urand(&s);
        for (int i = 0; i < M * N; i++) C[i] = D[i] = urand(&s);
        for (int i = 0; i < M; i++) base[i] = got[i] = urand(&s);
        pz_set_threads(2);
        pz_gemm(ta, 0, M, N, K, 1.0f, A, ta ? M : K, B, N, 1.0f, C, N, NULL);
        pz_gemm_rowsum(ta, 0, M, N, K, 1.0f, A, ta ? M : K, B, N, 1.0f, D, N, NULL, got);
        plain_rowsum(wantv, base, ta, M, K, A, ta ? M : K);
        CHECK(!memcmp(C, D, M * N * 4), "pz_gemm_rowsum's product (ta %d) differs from pz_gemm's", ta);
        CHECK(!memcmp(got, wantv, sizeof got), "pz_gemm_rowsum's row sums (ta %d, %s) differ from a plain loop's", ta, gi.name);
        free(A), free(B), free(C), free(D);
    }
    /* pz_gemm_fused, whichever kernels run: the product then GELU, and the
     * product times GELU' */
    {
        enum { M = 37, N = 50, K = 300 };
        float *A = malloc(M * K * 4), *B = malloc(K * N * 4), *C = malloc(M * N * 4), *W = malloc(M * N * 4),
              *G = malloc(M * N * 4), *D = malloc(M * N * 4), *H = malloc(M * N * 4);
        uint64_t s = 21;
        for (int i = 0; i < M * K; i++) A[i] = urand(&s) * 6.0f;
        for (int i = 0; i < K * N; i++) B[i] = urand(&s);
        for (int i = 0; i < M * N; i++) H[i] = urand(&s) * 8.0f;
        pz_set_threads(2);
        pz_gemm_fused(0, 1, M, N, K, 1.0f, A, K, B, K, 0.0f, C, N, NULL, &(pz_gemm_epi){PZ_EPI_GELU, G, N, NULL, 0});
        pz_gemm(0, 1, M, N, K, 1.0f, A, K, B, K, 0.0f, W, N, NULL);
        gelu_forward(D, W, M * N);
        CHECK(!memcmp(C, W, M * N * 4) && !memcmp(G, D, M * N * 4), "pz_gemm_fused (GELU, %s) differs from pz_gemm then GELU",
              gi.name);
        pz_gemm_fused(0, 0, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N, NULL, &(pz_gemm_epi){PZ_EPI_GELU_GRAD, NULL, 0, H, N});
        pz_gemm(0, 0, M, N, K, 1.0f, A, K, B, N, 0.0f, W, N, NULL);
        gelu_backward(D, W, H, M * N);
        CHECK(!memcmp(C, D, M * N * 4), "pz_gemm_fused (GELU gradient, %s) differs from pz_gemm then gelu_backward", gi.name);
        free(A), free(B), free(C), free(W), free(G), free(D), free(H);
    }
    TEST_DONE();
}
