/* SPDX-License-Identifier: MIT */
/* transformer.c — the layers of a GPT-2 style decoder over (B, T, C) rows:
 * token + position embedding, LayerNorm, causal multi-head self-attention
 * (scores and weighted values as BLAS GEMMs per (sample, head)), GELU.
 * Conventions as kernels.h: outputs first; backward accumulates parameter
 * gradients and overwrites input gradients. Every reduction runs in a fixed
 * order whatever the thread count, so a run is reproducible bit for bit. */
#include "kernels.h"
#include "fastmath.h"
#include "gemm.h"

#include <math.h>
#include <omp.h>
#include <string.h>

/* ---- embedding ------------------------------------------------------------ */
static inline int token_of(float v, int V) {
    /* ids arrive as exact floats; out of range reads row 0 or V - 1 (the
     * data layer checks ids, this only keeps the read inside the table) */
    int id = (int)v;
    return id < 0 ? 0 : (id >= V ? V - 1 : id);
}

void embedding_forward(float *out, const float *tok, const float *wte, const float *wpe, int B, int T, int C, int V) {
#pragma omp parallel for schedule(static) num_threads(pz_get_threads()) if ((size_t)B * T * C > 65536)
    for (int bt = 0; bt < B * T; bt++) {
        const float *e = wte + (size_t)token_of(tok[bt], V) * C, *p = wpe + (size_t)(bt % T) * C;
        float *o = out + (size_t)bt * C;
        for (int c = 0; c < C; c++) o[c] = e[c] + p[c];
    }
}

void embedding_backward(float *dwte, float *dwpe, const float *dout, const float *tok, int B, int T, int C, int V) {
    /* in (b, t) order: a token seen twice sums in the same order every run */
    for (int bt = 0; bt < B * T; bt++) {
        float *de = dwte + (size_t)token_of(tok[bt], V) * C, *dp = dwpe + (size_t)(bt % T) * C;
        const float *d = dout + (size_t)bt * C;
        for (int c = 0; c < C; c++) de[c] += d[c], dp[c] += d[c];
    }
}

/* ---- LayerNorm over the last dimension ---------------------------------------
 * Per row: the mean, then the variance about it (two passes), in float
 * vectors; the sums' order is fixed by the vector width, not the threads. */
void layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w, const float *b, int N,
                       int C, float eps) {
#pragma omp parallel for schedule(static) num_threads(pz_get_threads()) if ((size_t)N * C > 32768)
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C;
        float s = 0.0f;
#pragma omp simd reduction(+ : s)
        for (int c = 0; c < C; c++) s += x[c];
        const float m = s / (float)C;
        float v = 0.0f;
#pragma omp simd reduction(+ : v)
        for (int c = 0; c < C; c++) v += (x[c] - m) * (x[c] - m);
        const float rs = 1.0f / sqrtf(v / (float)C + eps);
        float *y = out + (size_t)n * C;
#pragma omp simd
        for (int c = 0; c < C; c++) y[c] = (x[c] - m) * rs * w[c] + b[c];
        mean[n] = m, rstd[n] = rs;
    }
}

void layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp, const float *mean,
                        const float *rstd, const float *w, int N, int C, const float *dres) {
    const int T = pz_get_threads();
    if (dinp) {
#pragma omp parallel for schedule(static) num_threads(T) if ((size_t)N * C > 32768)
        for (int n = 0; n < N; n++) {
            const float *x = inp + (size_t)n * C, *dy = dout + (size_t)n * C;
            const float m = mean[n], rs = rstd[n];
            /* dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = w * dy */
            float sg = 0.0f, sgx = 0.0f;
#pragma omp simd reduction(+ : sg, sgx)
            for (int c = 0; c < C; c++) {
                const float g = w[c] * dy[c], xh = (x[c] - m) * rs;
                sg += g, sgx += g * xh;
            }
            const float mg = sg / (float)C, mgx = sgx / (float)C;
            float *dx = dinp + (size_t)n * C;
#pragma omp simd
            for (int c = 0; c < C; c++) dx[c] = rs * (w[c] * dy[c] - mg - (x[c] - m) * rs * mgx);
            if (dres) { /* its own pass over the row (in cache), so the add is not fused into the line above */
                const float *r = dres + (size_t)n * C;
#pragma omp simd
                for (int c = 0; c < C; c++) dx[c] = r[c] + dx[c];
            }
        }
    }
    /* parameter gradients by blocks of channels, rows in order */
    enum { CB = 64 };
#pragma omp parallel for schedule(static) num_threads(T) if ((size_t)N * C > 32768)
    for (int c0 = 0; c0 < C; c0 += CB) {
        const int c1 = c0 + CB < C ? c0 + CB : C;
        float sw[CB] = {0}, sb[CB] = {0};
        for (int n = 0; n < N; n++) {
            const float *x = inp + (size_t)n * C, *dy = dout + (size_t)n * C;
            const float m = mean[n], rs = rstd[n];
#pragma omp simd
            for (int c = c0; c < c1; c++) sw[c - c0] += dy[c] * ((x[c] - m) * rs), sb[c - c0] += dy[c];
        }
        for (int c = c0; c < c1; c++) dw[c] += sw[c - c0], db[c] += sb[c - c0];
    }
}

/* ---- GELU, tanh form (GPT-2) ---------------------------------------------------
 * The element loops are gelu_impl.h's, built here (AVX2) and in
 * gelu_avx512.c; the AVX-512 build runs where the matrix products run
 * theirs (pz_gemm_get_info), so PZ_GEMM_KERNELS picks both. Threads take
 * contiguous ranges; every element's arithmetic is the same whichever
 * build, lane or thread computes it. */
#define GELU_SUFFIX avx2
#include "gelu_impl.h"
#define SM_SUFFIX avx2
#include "softmax_impl.h"

/* whether the AVX-512 builds of the element and row loops run */
static int wide_kernels(void) { return !strcmp(pz_gemm_get_info().name, "avx512"); }

void gelu_forward(float *out, const float *inp, size_t n) {
    const int wide = wide_kernels(), nt = n > 65536 ? pz_get_threads() : 1;
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        const int t = omp_get_thread_num(), T = omp_get_num_threads();
        const size_t a = n * (size_t)t / (size_t)T, b = n * (size_t)(t + 1) / (size_t)T;
        if (wide) gelu_forward_avx512(out + a, inp + a, b - a);
        else gelu_forward_avx2(out + a, inp + a, b - a);
    }
}

void gelu_backward(float *dinp, const float *dout, const float *inp, size_t n) {
    const int wide = wide_kernels(), nt = n > 65536 ? pz_get_threads() : 1;
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        const int t = omp_get_thread_num(), T = omp_get_num_threads();
        const size_t a = n * (size_t)t / (size_t)T, b = n * (size_t)(t + 1) / (size_t)T;
        if (wide) gelu_backward_avx512(dinp + a, dout + a, inp + a, b - a);
        else gelu_backward_avx2(dinp + a, dout + a, inp + a, b - a);
    }
}

/* ---- causal multi-head self-attention ------------------------------------------
 * qkv (B, T, 3C): per position q | k | v, head h the hs = C / NH columns
 * starting at h * hs of each. out (B, T, C). lse (B, NH, T): each query's
 * log-sum-exp of its scaled scores, all that is saved for backward.
 *
 * Tile by tile (FlashAttention's recomputation, Dao et al. 2022, with whole
 * rows: T fits a tile's row): for each (sample, head) and each block of
 * ATT_BQ queries, the scores against the keys up to the block's last query
 * only (the causal triangle and the block's diagonal, never the T x T
 * matrix), the softmax of each row, then the weighted values; backward
 * recomputes the block's probabilities from the saved log-sum-exp.
 * (Sample, head) pairs go over the threads, each on one; each pair's keys'
 * and values' gradients are summed over its query blocks in order, so the
 * bits do not depend on the thread count.
 *
 * With pipezip's own matrix kernels (pz_gemm_kernels), a head's queries,
 * keys and values are packed once into the kernels' panels, in each
 * orientation its products need, and the products run tile by tile on
 * them: a tile of queries meets only the keys up to its last query, and
 * only the probabilities and score gradients are packed per block. With
 * the BLAS, each block's products are pz_gemm calls on the head's rows in
 * place. */
enum { ATT_BQ = 42 }; /* queries a block: 3 AVX-512 tiles of rows, 7 AVX2 */

/* ---- the same attention without scratch memory --------------------------------
 * For (sample, head) pairs whose thread could not get its scratch (out of
 * memory): query by query, straight from qkv, no buffer at all (two
 * passes over the keys: the row's max, then the sums). The same math in
 * another order: it agrees with the tiled kernels to rounding, not bit for
 * bit; it only runs where those could not. */
void attention_forward_direct(float *out, float *lse, const float *qkv, int b, int h, int T, int C, int NH) {
    const int hs = C / NH, C3 = 3 * C;
    const float scale = 1.0f / sqrtf((float)hs);
    const float *base = qkv + (size_t)b * T * C3 + h * hs;
    float *L = lse + ((size_t)b * NH + h) * T;
    for (int i = 0; i < T; i++) {
        const float *q = base + (size_t)i * C3;
        float *o = out + ((size_t)b * T + i) * C + h * hs;
        float mx = -INFINITY;
        for (int j = 0; j <= i; j++) {
            const float *k = base + (size_t)j * C3 + C;
            float d = 0.0f;
            for (int c = 0; c < hs; c++) d += q[c] * k[c];
            mx = fmaxf(mx, d * scale);
        }
        float sum = 0.0f;
        for (int c = 0; c < hs; c++) o[c] = 0.0f;
        for (int j = 0; j <= i; j++) {
            const float *k = base + (size_t)j * C3 + C, *v = base + (size_t)j * C3 + 2 * C;
            float d = 0.0f;
            for (int c = 0; c < hs; c++) d += q[c] * k[c];
            const float e = pz_exp_neg(d * scale - mx);
            sum += e;
            for (int c = 0; c < hs; c++) o[c] += e * v[c];
        }
        const float inv = 1.0f / sum;
        for (int c = 0; c < hs; c++) o[c] *= inv;
        L[i] = mx + logf(sum);
    }
}

void attention_backward_direct(float *dqkv, const float *dout, const float *qkv, const float *lse, int b, int h, int T, int C, int NH) {
    const int hs = C / NH, C3 = 3 * C;
    const float scale = 1.0f / sqrtf((float)hs);
    const size_t off = (size_t)b * T * C3 + h * hs;
    const float *base = qkv + off, *L = lse + ((size_t)b * NH + h) * T;
    float *dbase = dqkv + off;
    for (int t = 0; t < T; t++) /* the keys' and values' gradients are sums over the queries */
        for (int c = 0; c < hs; c++) dbase[(size_t)t * C3 + C + c] = 0.0f, dbase[(size_t)t * C3 + 2 * C + c] = 0.0f;
    for (int i = 0; i < T; i++) {
        const float *q = base + (size_t)i * C3, *g = dout + ((size_t)b * T + i) * C + h * hs;
        float *dq = dbase + (size_t)i * C3;
        /* D = sum_j P_ij dP_ij, dP_ij = g . v_j */
        float D = 0.0f;
        for (int j = 0; j <= i; j++) {
            const float *k = base + (size_t)j * C3 + C, *v = base + (size_t)j * C3 + 2 * C;
            float d = 0.0f, dp = 0.0f;
            for (int c = 0; c < hs; c++) d += q[c] * k[c], dp += g[c] * v[c];
            D += pz_exp_neg(d * scale - L[i]) * dp;
        }
        for (int c = 0; c < hs; c++) dq[c] = 0.0f;
        for (int j = 0; j <= i; j++) {
            const float *k = base + (size_t)j * C3 + C, *v = base + (size_t)j * C3 + 2 * C;
            float *dk = dbase + (size_t)j * C3 + C, *dv = dbase + (size_t)j * C3 + 2 * C;
            float d = 0.0f, dp = 0.0f;
            for (int c = 0; c < hs; c++) d += q[c] * k[c], dp += g[c] * v[c];
            const float p = pz_exp_neg(d * scale - L[i]), ds = p * (dp - D) * scale;
            for (int c = 0; c < hs; c++) dq[c] += ds * k[c], dk[c] += ds * q[c], dv[c] += p * g[c];
        }
    }
}

/* ---- the row steps both ways of computing a block share ------------------------ */
/* the block's softmax rows (softmax_impl.h), the build the products' go with */
static void softmax_forward(int wide, float *S, float *inv, float *L, int nq, int nk, int i0) {
    if (wide) softmax_rows_forward_avx512(S, inv, L, nq, nk, i0);
    else softmax_rows_forward_avx2(S, inv, L, nq, nk, i0);
}
static void softmax_backward(int wide, float *P, float *dS, const float *L, int nq, int nk, int i0) {
    if (wide) softmax_rows_backward_avx512(P, dS, L, nq, nk, i0);
    else softmax_rows_backward_avx2(P, dS, L, nq, nk, i0);
}

/* the block's output rows (hs wide, ldo apart), products with the
 * exponentials, each over its sum */
static void rows_over_sums(float *o, int ldo, const float *inv, int nq, int hs) {
    for (int r = 0; r < nq; r++) {
        float *orow = o + (size_t)r * ldo;
#pragma omp simd
        for (int c = 0; c < hs; c++) orow[c] *= inv[r];
    }
}

/* ---- a head by tiles on packed panels ------------------------------------------ */
static size_t up(size_t n, size_t m) { return (n + m - 1) / m * m; }

/* floats of scratch a head takes: forward (back 0) or backward */
static size_t tiles_scratch(const pz_gemm_ops *g, int T, int hs, int back) {
    const size_t mr = (size_t)g->mr, nr = (size_t)g->nr, Tm = up((size_t)T, mr), Tn = up((size_t)T, nr), hn = up((size_t)hs, nr);
    const size_t bq = up(ATT_BQ, mr) * Tn, bqp = up(ATT_BQ, mr) * T; /* a block's scores: whole tiles of rows, rows of whole panels */
    if (!back) return Tm * hs + Tn * hs + hn * T + bq + bqp; /* Q, K^T, V panels; scores; probabilities packed */
    /* Q, dY as A; K^T, V^T, K, Q, dY as B; P, dS; dS and P packed as A, and dS^T, P^T */
    return 2 * Tm * hs + 2 * Tn * hs + 3 * hn * T + 2 * bq + bqp + 2 * Tm * ATT_BQ;
}

/* S (nq, ld) = alpha a . b over kc, for the queries [r0, r0 + nq) (r0 a
 * multiple of mr), each tile of them against the keys up to its last query
 * only, in whole tiles: rows past nq (up to the tile's mr) and columns past
 * those keys (up to the panel's nr) are written too, with products of the
 * padding or of later keys, which the softmax then overwrites with zeros
 * or nothing reads (each element is the same sum either way, and a whole
 * tile is stored from the registers where a part is copied out element by
 * element). S holds up(nq, mr) rows of ld, a multiple of nr; a the
 * queries' A panels, b the keys' B panels (columns to a multiple of nr),
 * both packed over kc values of k */
static void causal_tiles(const pz_gemm_ops *g, float *S, int ld, const float *a, const float *b, int kc, int r0, int nq,
                         float alpha) {
    for (int p = 0; p < nq; p += g->mr) {
        const int m = nq - p < g->mr ? nq - p : g->mr, keys = r0 + p + m; /* the tile's last query sees keys < keys */
        for (int j = 0; j < keys; j += g->nr)
            g->tile(kc, a + (size_t)(r0 + p) * kc, b + (size_t)j * kc, S + (size_t)p * ld + j, ld, g->mr, g->nr, alpha, 0.0f);
    }
}

/* C rows [0, nq) (ldc) = alpha P . B over each row tile's keys (r0 + p + m),
 * P packed as A panels of nk values of k, B the B panels of hs columns
 * packed over T values of k */
static void rows_times(const pz_gemm_ops *g, float *Cm, int ldc, const float *Pp, int nk, const float *Bp, int T, int hs,
                       int r0, int nq, float alpha) {
    for (int p = 0; p < nq; p += g->mr) {
        const int m = nq - p < g->mr ? nq - p : g->mr, keys = r0 + p + m;
        for (int c = 0; c < hs; c += g->nr)
            g->tile(keys, Pp + (size_t)p * nk, Bp + (size_t)c * T, Cm + (size_t)p * ldc + c, ldc, m,
                    hs - c < g->nr ? hs - c : g->nr, alpha, 0.0f);
    }
}

/* one (sample, head): q its first query's row of qkv, o its first output
 * row, L its log-sum-exps; ws tiles_scratch(g, T, hs, 0) floats */
static void head_forward_tiles(const pz_gemm_ops *g, float *ws, float *o, float *L, const float *q, int T, int C, int hs,
                               float scale, int wide) {
    const int C3 = 3 * C;
    const size_t Tm = up((size_t)T, (size_t)g->mr), Tn = up((size_t)T, (size_t)g->nr), hn = up((size_t)hs, (size_t)g->nr);
    float *Qp = ws, *Kp = Qp + Tm * hs, *Vp = Kp + Tn * hs, *S = Vp + hn * T, *Pp = S + up(ATT_BQ, (size_t)g->mr) * Tn;
    g->pack_a(Qp, 0, q, C3, T, hs);     /* Q (T, hs) */
    g->pack_b(Kp, 1, q + C, C3, hs, T); /* K^T (hs, T) */
    g->pack_b(Vp, 0, q + 2 * C, C3, T, hs); /* V (T, hs) */
    for (int i0 = 0; i0 < T; i0 += ATT_BQ) {
        const int nq = T - i0 < ATT_BQ ? T - i0 : ATT_BQ, nk = i0 + nq, ld = (int)up((size_t)nk, (size_t)g->nr);
        float inv[ATT_BQ];
        causal_tiles(g, S, ld, Qp, Kp, hs, i0, nq, scale); /* scale Q K^T */
        softmax_forward(wide, S, inv, L + i0, nq, ld, i0);  /* rows of ld: zeros past each query's keys */
        g->pack_a(Pp, 0, S, ld, nq, nk);
        rows_times(g, o + (size_t)i0 * C, C, Pp, nk, Vp, T, hs, i0, nq, 1.0f); /* P V */
        rows_over_sums(o + (size_t)i0 * C, C, inv, nq, hs);
    }
}

/* its backward: dq the head's first row of dqkv (all three parts
 * overwritten), dy of dout; ws tiles_scratch(g, T, hs, 1) floats */
static void head_backward_tiles(const pz_gemm_ops *g, float *ws, float *dq, const float *dy, const float *q,
                                const float *L, int T, int C, int hs, float scale, int wide) {
    const int C3 = 3 * C;
    const size_t Tm = up((size_t)T, (size_t)g->mr), Tn = up((size_t)T, (size_t)g->nr), hn = up((size_t)hs, (size_t)g->nr);
    float *Qa = ws, *dYa = Qa + Tm * hs, *KT = dYa + Tm * hs, *VT = KT + Tn * hs, *Kb = VT + Tn * hs, *Qb = Kb + hn * T,
          *dYb = Qb + hn * T, *P = dYb + hn * T, *dS = P + up(ATT_BQ, (size_t)g->mr) * Tn, *Ap = dS + up(ATT_BQ, (size_t)g->mr) * Tn,
          *dSt = Ap + up(ATT_BQ, (size_t)g->mr) * T, *Pt = dSt + Tm * ATT_BQ;
    float *dk = dq + C, *dv = dq + 2 * C;
    g->pack_a(Qa, 0, q, C3, T, hs);
    g->pack_a(dYa, 0, dy, C, T, hs);
    g->pack_b(KT, 1, q + C, C3, hs, T);
    g->pack_b(VT, 1, q + 2 * C, C3, hs, T);
    g->pack_b(Kb, 0, q + C, C3, T, hs);
    g->pack_b(Qb, 0, q, C3, T, hs);
    g->pack_b(dYb, 0, dy, C, T, hs);
    for (int i0 = 0; i0 < T; i0 += ATT_BQ) {
        const int nq = T - i0 < ATT_BQ ? T - i0 : ATT_BQ, nk = i0 + nq, ld = (int)up((size_t)nk, (size_t)g->nr);
        causal_tiles(g, P, ld, Qa, KT, hs, i0, nq, scale);  /* the scores again */
        causal_tiles(g, dS, ld, dYa, VT, hs, i0, nq, 1.0f); /* dP = dY V^T */
        softmax_backward(wide, P, dS, L + i0, nq, ld, i0);  /* rows of ld: zeros past each query's keys */
        /* dq[i0..] = scale dS . K */
        g->pack_a(Ap, 0, dS, ld, nq, nk);
        rows_times(g, dq + (size_t)i0 * C3, C3, Ap, nk, Kb, T, hs, i0, nq, scale);
        /* dk[0..nk) += scale dS^T . Q[i0..]; dv[0..nk) += P^T . dY[i0..]:
         * rows below i0 add to what earlier blocks wrote, the block's own
         * rows (i0 is a multiple of the tile's rows) start from 0 */
        g->pack_a(dSt, 1, dS, ld, nk, nq);
        g->pack_a(Pt, 1, P, ld, nk, nq);
        for (int j = 0; j < nk; j += g->mr) {
            const int m = nk - j < g->mr ? nk - j : g->mr;
            const float beta = j < i0 ? 1.0f : 0.0f;
            for (int c = 0; c < hs; c += g->nr) {
                const int n = hs - c < g->nr ? hs - c : g->nr;
                g->tile(nq, dSt + (size_t)j * nq, Qb + (size_t)c * T + (size_t)i0 * g->nr, dk + (size_t)j * C3 + c, C3, m, n,
                        scale, beta);
                g->tile(nq, Pt + (size_t)j * nq, dYb + (size_t)c * T + (size_t)i0 * g->nr, dv + (size_t)j * C3 + c, C3, m, n,
                        1.0f, beta);
            }
        }
    }
}

/* ---- a head by pz_gemm calls (the BLAS) ------------------------------------------ */
static void head_forward_gemm(float *S, float *o, float *L, const float *q, int T, int C, int hs, float scale, int wide) {
    const int C3 = 3 * C;
    const float *k = q + C, *v = q + 2 * C; /* rows C3 apart, in place: the products pack them */
    for (int i0 = 0; i0 < T; i0 += ATT_BQ) {
        const int nq = T - i0 < ATT_BQ ? T - i0 : ATT_BQ, nk = i0 + nq;
        float inv[ATT_BQ];
        pz_gemm(0, 1, nq, nk, hs, scale, q + (size_t)i0 * C3, C3, k, C3, 0.0f, S, nk, NULL);
        softmax_forward(wide, S, inv, L + i0, nq, nk, i0);
        pz_gemm(0, 0, nq, hs, nk, 1.0f, S, nk, v, C3, 0.0f, o + (size_t)i0 * C, C, NULL);
        rows_over_sums(o + (size_t)i0 * C, C, inv, nq, hs);
    }
}

static void head_backward_gemm(float *P, float *dq, const float *dy, const float *q, const float *L, int T, int C, int hs,
                               float scale, int wide) {
    const int C3 = 3 * C;
    const float *k = q + C, *v = q + 2 * C;
    float *dS = P + (size_t)ATT_BQ * T, *dk = dq + C, *dv = dq + 2 * C;
    for (int i0 = 0; i0 < T; i0 += ATT_BQ) {
        const int nq = T - i0 < ATT_BQ ? T - i0 : ATT_BQ, nk = i0 + nq;
        const float *Qb = q + (size_t)i0 * C3, *dYb = dy + (size_t)i0 * C;
        pz_gemm(0, 1, nq, nk, hs, scale, Qb, C3, k, C3, 0.0f, P, nk, NULL);
        pz_gemm(0, 1, nq, nk, hs, 1.0f, dYb, C, v, C3, 0.0f, dS, nk, NULL);
        softmax_backward(wide, P, dS, L + i0, nq, nk, i0);
        pz_gemm(0, 0, nq, hs, nk, scale, dS, nk, k, C3, 0.0f, dq + (size_t)i0 * C3, C3, NULL);
        if (i0) {
            pz_gemm(1, 0, i0, hs, nq, scale, dS, nk, Qb, C3, 1.0f, dk, C3, NULL);
            pz_gemm(1, 0, i0, hs, nq, 1.0f, P, nk, dYb, C, 1.0f, dv, C3, NULL);
        }
        pz_gemm(1, 0, nq, hs, nq, scale, dS + i0, nk, Qb, C3, 0.0f, dk + (size_t)i0 * C3, C3, NULL);
        pz_gemm(1, 0, nq, hs, nq, 1.0f, P + i0, nk, dYb, C, 0.0f, dv + (size_t)i0 * C3, C3, NULL);
    }
}

/* the tiles when pz_gemm runs pipezip's kernels and the block is a whole
 * number of their row tiles; NULL for pz_gemm calls */
static const pz_gemm_ops *attention_tiles(void) {
    const pz_gemm_ops *g = pz_gemm_kernels();
    return g && ATT_BQ % g->mr == 0 ? g : NULL;
}

void attention_forward(float *out, float *lse, const float *qkv, int B, int T, int C, int NH) {
    const int hs = C / NH, C3 = 3 * C, wide = wide_kernels();
    const float scale = 1.0f / sqrtf((float)hs);
    const pz_gemm_ops *g = attention_tiles();
#pragma omp parallel num_threads(pz_get_threads())
    {
        float *ws = pz_thread_scratch(2, g ? tiles_scratch(g, T, hs, 0) : (size_t)ATT_BQ * T);
#pragma omp for schedule(static)
        for (int bh = 0; bh < B * NH; bh++) {
            const int b = bh / NH, h = bh % NH;
            const float *q = qkv + (size_t)b * T * C3 + h * hs;
            float *o = out + (size_t)b * T * C + h * hs, *L = lse + (size_t)bh * T;
            if (!ws) attention_forward_direct(out, lse, qkv, b, h, T, C, NH); /* out of memory for the tiles */
            else if (g) head_forward_tiles(g, ws, o, L, q, T, C, hs, scale, wide);
            else head_forward_gemm(ws, o, L, q, T, C, hs, scale, wide);
        }
    }
}

void attention_backward(float *dqkv, const float *dout, const float *qkv, const float *lse, int B, int T, int C, int NH) {
    const int hs = C / NH, C3 = 3 * C, wide = wide_kernels();
    const float scale = 1.0f / sqrtf((float)hs);
    const pz_gemm_ops *g = attention_tiles();
#pragma omp parallel num_threads(pz_get_threads())
    {
        float *ws = pz_thread_scratch(2, g ? tiles_scratch(g, T, hs, 1) : 2 * (size_t)ATT_BQ * T);
#pragma omp for schedule(static)
        for (int bh = 0; bh < B * NH; bh++) {
            const int b = bh / NH, h = bh % NH;
            const size_t off = (size_t)b * T * C3 + h * hs;
            const float *dy = dout + (size_t)b * T * C + h * hs, *L = lse + (size_t)bh * T;
            if (!ws) attention_backward_direct(dqkv, dout, qkv, lse, b, h, T, C, NH);
            else if (g) head_backward_tiles(g, ws, dqkv + off, dy, qkv + off, L, T, C, hs, scale, wide);
            else head_backward_gemm(ws, dqkv + off, dy, qkv + off, L, T, C, hs, scale, wide);
        }
    }
}
