/* SPDX-License-Identifier: MIT */
/* gemm_impl.h — the GEMM's one source, included by each ISA's build with
 * GM_SUFFIX, GM_V (floats a vector), GM_MR (rows of a tile) and the vector
 * type and macros (vec_isa.h) defined.
 *
 * The BLIS structure (Van Zee & van de Geijn, 2015): op(B) is packed a
 * block of KC rows at a time into panels of NR = 2 vectors of columns
 * (each k's NR values together), op(A) a block of MC rows into panels of
 * MR rows (each k's MR values together), both zero-padded at the edges, so
 * the transposes are paid once, in the packing, and the micro-kernel reads
 * both operands in order. The micro-kernel keeps an MR x NR tile of C in
 * registers (AVX-512: 14 x 32, 28 of the 32 vector registers; AVX2: 6 x 16,
 * 12 of 16) and for each k broadcasts MR values of A against two vectors of
 * B: 2 MR fused multiply-adds per 2 loads and MR broadcasts.
 *
 * Threads take contiguous runs of A's row blocks, each packing every B
 * block itself (a few threads) or sharing each B block's packing between
 * barriers (many), or, for short wide weight gradients, each its own run
 * of B's column panels (run_cols). Every element of C is summed by one thread over k in
 * order (KC blocks in order, each k in order within), so the result is the
 * same bits whatever the number of threads. */
#include "gemm.h"

#include <omp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define GM_CAT2(a, b) a##_##b
#define GM_CAT(a, b) GM_CAT2(a, b)
#define GM_NAME(n) GM_CAT(n, GM_SUFFIX)
#define GM_NR (2 * GM_V)
#ifndef GM_KC
#define GM_KC 256
#endif
#define GM_MC_MAX (24 * GM_MR)
#define GM_NC 2048

/* ---- packing ------------------------------------------------------------ */
#if GM_V == 16 && defined(__AVX512F__)
/* rows r[0..16) (each 16 floats from its pointer) transposed: out[k] holds
 * element k of every row (AVX-512 shuffles: 2-, 4-, 8- and 16-lane steps) */
static inline void gm_transpose16(const __m512 r[16], __m512 out[16]) {
    __m512 t[16], u[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) {
        const __m512 a = t[4 * i], b = t[4 * i + 1], c = t[4 * i + 2], d = t[4 * i + 3];
        u[4 * i] = _mm512_shuffle_ps(a, c, 0x44), u[4 * i + 1] = _mm512_shuffle_ps(a, c, 0xEE);
        u[4 * i + 2] = _mm512_shuffle_ps(b, d, 0x44), u[4 * i + 3] = _mm512_shuffle_ps(b, d, 0xEE);
    }
    /* u[4i + j] holds, in each 128-bit lane l, element 4l + j' of rows 4i..4i+3 */
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++) {
            const __m512 a = u[8 * i + j], b = u[8 * i + 4 + j];
            t[8 * i + j] = _mm512_shuffle_f32x4(a, b, 0x88), t[8 * i + 4 + j] = _mm512_shuffle_f32x4(a, b, 0xDD);
        }
    for (int j = 0; j < 8; j++) {
        const __m512 a = t[j], b = t[8 + j];
        out[j] = _mm512_shuffle_f32x4(a, b, 0x88), out[8 + j] = _mm512_shuffle_f32x4(a, b, 0xDD);
    }
}

/* rows src[i lds + k] for i < rows (<= 16), k < kc16 (a multiple of 16),
 * stored transposed: dst[k w + i] (w >= rows lanes a k; lanes rows..15
 * are zeros, written only where they fall inside the k's w) */
static inline void gm_pack_transposed16(float *dst, int w, const float *src, size_t lds, int rows, int kc16) {
    const __mmask16 keep = (__mmask16)(w >= 16 ? 0xFFFF : (1u << w) - 1);
    for (int k = 0; k < kc16; k += 16) {
        __m512 r[16], o[16];
        for (int i = 0; i < 16; i++) r[i] = i < rows ? _mm512_loadu_ps(src + (size_t)i * lds + k) : _mm512_setzero_ps();
        gm_transpose16(r, o);
        for (int j = 0; j < 16; j++) _mm512_mask_storeu_ps(dst + (size_t)(k + j) * w, keep, o[j]);
    }
}
#endif


/* op(A) rows [i0, i0 + mc), k [k0, k0 + kc) into panels of MR rows: panel p
 * holds, for each k, rows p MR .. p MR + MR - 1 (zeros past mc) */
static void GM_NAME(pack_a)(float *restrict dst, int ta, const float *A, int lda, int i0, int mc, int k0, int kc,
                            float *restrict rs) {
    for (int p = 0; p < mc; p += GM_MR) {
        const int mr = mc - p < GM_MR ? mc - p : GM_MR;
        float *d = dst + (size_t)p * kc;
        if (ta) { /* A^T: A(i, k) = A[k lda + i], each k's rows contiguous */
#if GM_V == 16 && defined(__AVX512F__)
            const __mmask16 in = (__mmask16)((1u << mr) - 1), out = (__mmask16)((1u << GM_MR) - 1);
            if (rs) { /* each row's sum, k in order, one lane a row */
                __m512 sum = _mm512_maskz_loadu_ps(in, rs + p);
                for (int k = 0; k < kc; k++) {
                    const __m512 v = _mm512_maskz_loadu_ps(in, A + (size_t)(k0 + k) * lda + i0 + p);
                    _mm512_mask_storeu_ps(d + (size_t)k * GM_MR, out, v);
                    sum = _mm512_add_ps(sum, v);
                }
                _mm512_mask_storeu_ps(rs + p, in, sum);
            } else
                for (int k = 0; k < kc; k++)
                    _mm512_mask_storeu_ps(d + (size_t)k * GM_MR, out, _mm512_maskz_loadu_ps(in, A + (size_t)(k0 + k) * lda + i0 + p));
#else
            for (int k = 0; k < kc; k++) {
                const float *s = A + (size_t)(k0 + k) * lda + i0 + p;
                for (int i = 0; i < mr; i++) d[(size_t)k * GM_MR + i] = s[i];
                for (int i = mr; i < GM_MR; i++) d[(size_t)k * GM_MR + i] = 0.0f;
                if (rs)
                    for (int i = 0; i < mr; i++) rs[p + i] += s[i];
            }
#endif
        } else {
            int kv = 0; /* k below kv packed by vector transposes */
#if GM_V == 16 && defined(__AVX512F__)
            kv = kc & ~15;
            gm_pack_transposed16(d, GM_MR, A + (size_t)(i0 + p) * lda + k0, (size_t)lda, mr, kv);
#endif
            for (int i = 0; i < mr; i++) {
                const float *s = A + (size_t)(i0 + p + i) * lda + k0;
                for (int k = kv; k < kc; k++) d[(size_t)k * GM_MR + i] = s[k];
            }
            for (int i = mr; i < GM_MR; i++)
                for (int k = kv; k < kc; k++) d[(size_t)k * GM_MR + i] = 0.0f;
            if (rs) /* each row's sum, k in order */
                for (int i = 0; i < mr; i++) {
                    const float *s = A + (size_t)(i0 + p + i) * lda + k0;
                    float sum = rs[p + i];
                    for (int k = 0; k < kc; k++) sum += s[k];
                    rs[p + i] = sum;
                }
        }
    }
}

/* op(B) k [k0, k0 + kc), columns [j0 + q NR, ...) for the panels [q0, q1)
 * of the block of nc columns: panel q holds, for each k, NR columns */
static void GM_NAME(pack_b)(float *restrict dst, int tb, const float *B, int ldb, int k0, int kc, int j0, int nc, int q0,
                            int q1) {
    for (int q = q0; q < q1; q++) {
        const int j = q * GM_NR, nr = nc - j < GM_NR ? nc - j : GM_NR;
        float *d = dst + (size_t)j * kc;
        if (!tb) { /* B(k, j) = B[k ldb + j]: each k's columns contiguous */
            for (int k = 0; k < kc; k++) {
                const float *s = B + (size_t)(k0 + k) * ldb + j0 + j;
                if (nr == GM_NR) vstore(d + (size_t)k * GM_NR, vload(s)), vstore(d + (size_t)k * GM_NR + GM_V, vload(s + GM_V));
                else {
                    for (int c = 0; c < nr; c++) d[(size_t)k * GM_NR + c] = s[c];
                    for (int c = nr; c < GM_NR; c++) d[(size_t)k * GM_NR + c] = 0.0f;
                }
            }
        } else { /* B^T: B(k, j) = B[j ldb + k] */
            int kv = 0; /* k below kv packed by vector transposes, 16 columns at a time */
#if GM_V == 16 && defined(__AVX512F__)
            kv = kc & ~15;
            for (int c0 = 0; c0 < GM_NR; c0 += 16)
                gm_pack_transposed16(d + c0, GM_NR, B + (size_t)(j0 + j + c0) * ldb + k0, (size_t)ldb,
                                     nr - c0 < 0 ? 0 : nr - c0 > 16 ? 16 : nr - c0, kv);
#endif
            for (int c = 0; c < nr; c++) {
                const float *s = B + (size_t)(j0 + j + c) * ldb + k0;
                for (int k = kv; k < kc; k++) d[(size_t)k * GM_NR + c] = s[k];
            }
            for (int c = nr; c < GM_NR; c++)
                for (int k = kv; k < kc; k++) d[(size_t)k * GM_NR + c] = 0.0f;
        }
    }
}

/* ---- the micro-kernel ----------------------------------------------------
 * acc = a (MR x kc panel) . b (kc x NR panel); then C = alpha acc + beta C
 * + bias on the first k block (beta 0: C not read), C += alpha acc on the
 * later ones. A whole tile is written in place; an edge tile (m < MR or
 * n < NR) goes through a full tile on the stack. */
static inline void GM_NAME(kernel)(int kc, const float *restrict a, const float *restrict b, float *c, int ldc, int m,
                                   int n, int first, float alpha, float beta, const float *bias) {
    vec acc[GM_MR][2];
#pragma GCC unroll 16
    for (int i = 0; i < GM_MR; i++) acc[i][0] = vzero(), acc[i][1] = vzero();
    /* the tile's rows of C, wanted after the k loop, fetched during it
     * (measured: weight gradients, whose C comes back each k block from
     * beyond L1, 3-10% faster) */
    for (int i = 0; i < m; i++) __builtin_prefetch(c + (size_t)i * ldc, 1, 3), __builtin_prefetch(c + (size_t)i * ldc + GM_NR - 1, 1, 3);
    for (int k = 0; k < kc; k++) {
        const vec b0 = vload(b), b1 = vload(b + GM_V);
#pragma GCC unroll 16
        for (int i = 0; i < GM_MR; i++) {
            const vec ai = vset1(a[i]);
            acc[i][0] = vfma(ai, b0, acc[i][0]);
            acc[i][1] = vfma(ai, b1, acc[i][1]);
        }
        a += GM_MR, b += GM_NR;
    }
    const vec va = vset1(alpha);
    if (m == GM_MR && n == GM_NR) {
        const vec vb = vset1(beta);
        const vec bias0 = first && bias ? vload(bias) : vzero(), bias1 = first && bias ? vload(bias + GM_V) : vzero();
#pragma GCC unroll 16
        for (int i = 0; i < GM_MR; i++) {
            float *r = c + (size_t)i * ldc;
            vec v0 = vmul(va, acc[i][0]), v1 = vmul(va, acc[i][1]);
            if (!first) v0 = vadd(vload(r), v0), v1 = vadd(vload(r + GM_V), v1);
            else {
                if (beta != 0.0f) v0 = vfma(vb, vload(r), v0), v1 = vfma(vb, vload(r + GM_V), v1);
                if (bias) v0 = vadd(v0, bias0), v1 = vadd(v1, bias1);
            }
            vstore(r, v0), vstore(r + GM_V, v1);
        }
        return;
    }
    float t[GM_MR * GM_NR];
#pragma GCC unroll 16
    for (int i = 0; i < GM_MR; i++) vstore(t + i * GM_NR, vmul(va, acc[i][0])), vstore(t + i * GM_NR + GM_V, vmul(va, acc[i][1]));
    for (int i = 0; i < m; i++) {
        float *r = c + (size_t)i * ldc;
        const float *s = t + i * GM_NR;
        if (!first)
            for (int j = 0; j < n; j++) r[j] = r[j] + s[j];
        else
            for (int j = 0; j < n; j++) {
                float v = s[j];
                if (beta != 0.0f) v = beta * r[j] + v;
                if (bias) v = v + bias[j];
                r[j] = v;
            }
    }
}

typedef struct {
    int ta, tb, M, N, K;
    float alpha;
    const float *A;
    int lda;
    const float *B;
    int ldb;
    float beta;
    float *C;
    int ldc;
    const float *bias;
    float *asum, *rs; /* op(A)'s row sums: added to asum, summed in rs (NULL: none) */
    const pz_gemm_epi *epi; /* NULL: none */
    int MC, nblocks;
    float *bp, *aps;
    size_t asize;
} gm_job;

/* the epilogue on C's rows [i, i + m), columns [j, j + n), final (a row
 * block's, still in cache), with the GELU builds the matrix products'
 * build goes with (transformer.c) */
static void GM_NAME(epilogue)(const pz_gemm_epi *e, float *C, int ldc, int i, int j, int m, int n) {
    pz_gemm_epilogue(e, C, ldc, i, j, m, n, GM_CAT(gelu_forward, GM_SUFFIX), GM_CAT(gelu_backward, GM_SUFFIX));
}

/* thread t of n: its share of each B block's packing (between barriers,
 * in a team of its own: n > 1), or all of it into bpriv, its own, then
 * its run of A's row blocks */
static void GM_NAME(run)(const gm_job *g, int t, int n, float *bpriv) {
    float *ap = g->aps + g->asize * t;
    float *const bp = bpriv ? bpriv : g->bp; /* a private B block: packed whole by each thread, no barriers */
    const int shared = n > 1 && !bpriv;
    const int MC = g->MC, M = g->M, N = g->N, K = g->K;
    const int b0 = (int)((long)g->nblocks * t / n), b1 = (int)((long)g->nblocks * (t + 1) / n);
    const int r0 = b0 * MC, r1 = b1 * MC < M ? b1 * MC : M; /* this thread's rows of C */
    if (g->rs)
        for (int i = r0; i < r1; i++) g->rs[i] = 0.0f;
    for (int j0 = 0; j0 < N; j0 += GM_NC) {
        const int nc = N - j0 < GM_NC ? N - j0 : GM_NC, nq = (nc + GM_NR - 1) / GM_NR;
        for (int k0 = 0; k0 < K; k0 += GM_KC) {
            const int kc = K - k0 < GM_KC ? K - k0 : GM_KC, first = k0 == 0;
            if (shared) GM_NAME(pack_b)(bp, g->tb, g->B, g->ldb, k0, kc, j0, nc, (int)((long)nq * t / n), (int)((long)nq * (t + 1) / n));
            else GM_NAME(pack_b)(bp, g->tb, g->B, g->ldb, k0, kc, j0, nc, 0, nq);
            if (shared) {
#pragma omp barrier
            }
            for (int blk = b0; blk < b1; blk++) {
                const int i0 = blk * MC, mc = M - i0 < MC ? M - i0 : MC;
                /* the row sums from the first column block's packing only */
                GM_NAME(pack_a)(ap, g->ta, g->A, g->lda, i0, mc, k0, kc, g->rs && j0 == 0 ? g->rs + i0 : NULL);
                for (int q = 0; q < nq; q++) {
                    const int j = q * GM_NR, nr = nc - j < GM_NR ? nc - j : GM_NR;
                    for (int p = 0; p < mc; p += GM_MR)
                        GM_NAME(kernel)(kc, ap + (size_t)p * kc, bp + (size_t)j * kc, g->C + (size_t)(i0 + p) * g->ldc + j0 + j,
                                        g->ldc, mc - p < GM_MR ? mc - p : GM_MR, nr, first, g->alpha, g->beta,
                                        g->bias ? g->bias + j0 + j : NULL);
                }
                if (g->epi && k0 + kc == K) /* the row block's columns of this block, final */
                    GM_NAME(epilogue)(g->epi, g->C, g->ldc, i0, j0, mc, nc);
            }
            if (shared) { /* the B block may be repacked */
#pragma omp barrier
            }
        }
    }
    if (g->rs)
        for (int i = r0; i < r1; i++) g->asum[i] += g->rs[i];
}

/* thread t of n, columns split: its own run of each B block's column
 * panels, packed by itself, against every row block of A, which each thread
 * packs for itself; no barriers. Every element of C is still summed by one
 * thread in the same order, so the same bits as run(). The row sums come
 * from thread 0's packing. */
static void GM_NAME(run_cols)(const gm_job *g, int t, int n, float *bp) {
    float *ap = g->aps + g->asize * t;
    const int MC = g->MC, M = g->M, N = g->N, K = g->K;
    for (int j0 = 0; j0 < N; j0 += GM_NC) {
        const int nc = N - j0 < GM_NC ? N - j0 : GM_NC, nq = (nc + GM_NR - 1) / GM_NR;
        const int q0 = (int)((long)nq * t / n), q1 = (int)((long)nq * (t + 1) / n);
        float *rs = g->rs && j0 == 0 && t == 0 ? g->rs : NULL;
        if (q1 == q0 && !rs) continue; /* no panels here */
        if (rs)
            for (int i = 0; i < M; i++) rs[i] = 0.0f;
        for (int k0 = 0; k0 < K; k0 += GM_KC) {
            const int kc = K - k0 < GM_KC ? K - k0 : GM_KC, first = k0 == 0;
            GM_NAME(pack_b)(bp, g->tb, g->B, g->ldb, k0, kc, j0, nc, q0, q1);
            for (int i0 = 0; i0 < M; i0 += MC) {
                const int mc = M - i0 < MC ? M - i0 : MC;
                GM_NAME(pack_a)(ap, g->ta, g->A, g->lda, i0, mc, k0, kc, rs ? rs + i0 : NULL);
                for (int q = q0; q < q1; q++) {
                    const int j = q * GM_NR, nr = nc - j < GM_NR ? nc - j : GM_NR;
                    for (int p = 0; p < mc; p += GM_MR)
                        GM_NAME(kernel)(kc, ap + (size_t)p * kc, bp + (size_t)j * kc, g->C + (size_t)(i0 + p) * g->ldc + j0 + j,
                                        g->ldc, mc - p < GM_MR ? mc - p : GM_MR, nr, first, g->alpha, g->beta,
                                        g->bias ? g->bias + j0 + j : NULL);
                }
                if (g->epi && k0 + kc == K && q1 > q0) /* this thread's columns of the row block, final */
                    GM_NAME(epilogue)(g->epi, g->C, g->ldc, i0, j0 + q0 * GM_NR,
                                      mc, (q1 * GM_NR < nc ? q1 * GM_NR : nc) - q0 * GM_NR);
            }
        }
        if (rs)
            for (int i = 0; i < M; i++) g->asum[i] += rs[i];
    }
}

int GM_NAME(pz_gemm)(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                      float beta, float *C, int ldc, const float *bias, float *asum, const pz_gemm_epi *epi,
                      int threads) {
    if (M <= 0 || N <= 0) return 0;
    if (K <= 0) { /* no products: C = beta C + bias */
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                float v = beta != 0.0f ? beta * C[(size_t)i * ldc + j] : 0.0f;
                C[(size_t)i * ldc + j] = bias ? v + bias[j] : v;
            }
        if (asum) /* rows of no elements: each sum 0 */
            for (int i = 0; i < M; i++) asum[i] += 0.0f;
        if (epi && epi->kind != PZ_EPI_NONE) GM_NAME(epilogue)(epi, C, ldc, 0, 0, M, N);
        return 0;
    }
    if (threads < 1) threads = 1;
    /* row blocks: a multiple of the team, each at most GM_MC_MAX rows */
    const int panels = (M + GM_MR - 1) / GM_MR;
    int per = (panels + threads - 1) / threads; /* panels per thread */
    if (per < 1) per = 1;
    const int most = GM_MC_MAX / GM_MR, runs = (per + most - 1) / most; /* blocks per thread */
    const int mc_panels = (per + runs - 1) / runs;
    const int MC = mc_panels * GM_MR;
    const int nblocks = (M + MC - 1) / MC;
    if (threads > nblocks) threads = nblocks;
    const int nc_max = N < GM_NC ? N : GM_NC, kc_max = K < GM_KC ? K : GM_KC;
    const size_t bsize = (size_t)((nc_max + GM_NR - 1) / GM_NR) * GM_NR * kc_max;
    const size_t asize = (size_t)MC * kc_max;
    /* Columns split over the threads for a weight gradient (op(A)
     * transposed, k at least 8 blocks long) whose C is at most twice as
     * tall as wide: there the shared B blocks' 2 barriers a k block and
     * the row blocks' uneven share cost more than each thread packing all
     * of A (measured: 256 x 1024 x 2048 and 256 x 256 x 2048, 6-21% faster;
     * taller ones slower). Rows split, each thread packs every B block
     * itself where the team is small or its runs of rows long, instead
     * of sharing the packing between 2 barriers a k block: on 2 threads
     * every shape measured was faster so (gpt-small's 12 products, 2048
     * rows: 1-17%; the same with 56 to 448 rows: 5-45%); with many
     * threads each would pack far more than its own share of the work.
     * PZ_GEMM_SPLIT=cols|rows|private forces one (tests: rows the shared
     * packing). The same bits every way. */
    static int split = -1;
    if (split < 0) {
        const char *e = getenv("PZ_GEMM_SPLIT");
        split = e && !strcmp(e, "cols") ? 1 : e && !strcmp(e, "rows") ? 2 : e && !strcmp(e, "private") ? 3 : 0;
    }
    const int cols = threads > 1 && (split == 1 || (split == 0 && ta && K >= 8 * GM_KC && M <= 2 * N));
    const int priv = threads > 1 && !cols && (split == 3 || (split == 0 && (threads <= 4 || M / threads >= 256)));
    /* a B block's panels, shared, or one for each thread when they split the columns */
    float *bp = pz_thread_scratch(0, bsize * (cols || priv ? threads : 1)), *aps = pz_thread_scratch(1, asize * threads);
    float *rs = asum ? pz_thread_scratch(3, (size_t)M) : NULL;
    if (!bp || !aps || (asum && !rs)) return -1; /* out of memory: the caller runs the BLAS */
    const gm_job job = {ta,   tb,  M, N,  K,  alpha,  A,  lda,     B,  ldb, beta, C, ldc, bias, asum, rs,
                        epi && epi->kind != PZ_EPI_NONE ? epi : NULL, MC, nblocks, bp, aps, asize};
    /* each team splits the work by the threads it has, which the runtime
     * may make fewer than asked (OMP_THREAD_LIMIT, OMP_DYNAMIC): the same
     * bits either way */
    if (threads == 1) GM_NAME(run)(&job, 0, 1, NULL); /* no team: this may be one thread of a parallel region */
    else if (priv) {
#pragma omp parallel num_threads(threads)
        GM_NAME(run)(&job, omp_get_thread_num(), omp_get_num_threads(), bp + bsize * omp_get_thread_num());
    } else if (cols) {
#pragma omp parallel num_threads(threads)
        GM_NAME(run_cols)(&job, omp_get_thread_num(), omp_get_num_threads(), bp + bsize * omp_get_thread_num());
    } else {
#pragma omp parallel num_threads(threads)
        GM_NAME(run)(&job, omp_get_thread_num(), omp_get_num_threads(), NULL);
    }
    return 0;
}

/* ---- tiles: for a caller that packs its operands once and multiplies
 * parts of them many times (attention). Layouts as above: pack_a's panel
 * of rows p.. (p a multiple of MR) at dst + p kc, k's MR values at + k MR;
 * pack_b's panel of columns q NR.. at dst + q NR kc, k's NR values at
 * + k NR. A panel packed for kc values of k serves any first kc' <= kc. */
void GM_NAME(pz_gemm_pack_a)(float *dst, int ta, const float *A, int lda, int mc, int kc) {
    GM_NAME(pack_a)(dst, ta, A, lda, 0, mc, 0, kc, NULL);
}

void GM_NAME(pz_gemm_pack_b)(float *dst, int tb, const float *B, int ldb, int kc, int nc) {
    GM_NAME(pack_b)(dst, tb, B, ldb, 0, kc, 0, nc, 0, (nc + GM_NR - 1) / GM_NR);
}

void GM_NAME(pz_gemm_tile)(int kc, const float *a, const float *b, float *c, int ldc, int m, int n, float alpha,
                           float beta) {
    GM_NAME(kernel)(kc, a, b, c, ldc, m, n, 1, alpha, beta, NULL);
}
