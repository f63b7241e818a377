/* SPDX-License-Identifier: MIT */
/* transformer.c — the layers of a GPT-2 style decoder over (B, T, C) rows:
 * token + position embedding, LayerNorm, causal multi-head self-attention
 * (scores and weighted values as BLAS GEMMs per (sample, head)), GELU.
 * Conventions as kernels.h: outputs first; backward accumulates parameter
 * gradients and overwrites input gradients. Every reduction runs in a fixed
 * order whatever the thread count, so a run is reproducible bit for bit. */
#include "kernels.h"
#include "blas.h"

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

/* ---- LayerNorm over the last dimension --------------------------------------- */
void layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w, const float *b, int N,
                       int C, float eps) {
#pragma omp parallel for schedule(static) num_threads(pz_get_threads()) if ((size_t)N * C > 32768)
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C;
        double s = 0.0;
        for (int c = 0; c < C; c++) s += x[c];
        const double m = s / C;
        double v = 0.0;
        for (int c = 0; c < C; c++) v += (x[c] - m) * (x[c] - m);
        const float rs = (float)(1.0 / sqrt(v / C + eps)), mf = (float)m;
        float *y = out + (size_t)n * C;
        for (int c = 0; c < C; c++) y[c] = (x[c] - mf) * rs * w[c] + b[c];
        mean[n] = mf, rstd[n] = rs;
    }
}

void layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp, const float *mean,
                        const float *rstd, const float *w, int N, int C) {
    const int T = pz_get_threads();
    if (dinp) {
#pragma omp parallel for schedule(static) num_threads(T) if ((size_t)N * C > 32768)
        for (int n = 0; n < N; n++) {
            const float *x = inp + (size_t)n * C, *dy = dout + (size_t)n * C;
            const float m = mean[n], rs = rstd[n];
            /* dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = w * dy */
            double sg = 0.0, sgx = 0.0;
            for (int c = 0; c < C; c++) {
                const float g = w[c] * dy[c], xh = (x[c] - m) * rs;
                sg += g, sgx += (double)g * xh;
            }
            const float mg = (float)(sg / C), mgx = (float)(sgx / C);
            float *dx = dinp + (size_t)n * C;
            for (int c = 0; c < C; c++) dx[c] = rs * (w[c] * dy[c] - mg - (x[c] - m) * rs * mgx);
        }
    }
    /* parameter gradients by blocks of channels, rows in order */
    enum { CB = 16 };
#pragma omp parallel for schedule(static) num_threads(T) if ((size_t)N * C > 32768)
    for (int c0 = 0; c0 < C; c0 += CB) {
        const int c1 = c0 + CB < C ? c0 + CB : C;
        float sw[CB] = {0}, sb[CB] = {0};
        for (int n = 0; n < N; n++) {
            const float *x = inp + (size_t)n * C, *dy = dout + (size_t)n * C;
            const float m = mean[n], rs = rstd[n];
            for (int c = c0; c < c1; c++) sw[c - c0] += dy[c] * ((x[c] - m) * rs), sb[c - c0] += dy[c];
        }
        for (int c = c0; c < c1; c++) dw[c] += sw[c - c0], db[c] += sb[c - c0];
    }
}

/* ---- GELU, tanh form (GPT-2) --------------------------------------------------- */
#define GELU_K 0.7978845608028654f /* sqrt(2 / pi) */

/* tanh(u) for GELU, in plain float arithmetic the vectoriser turns into
 * AVX2 (libm's tanhf is a scalar call and was 28% of a gpt-tiny step):
 * tanh(u) = (e - 1) / (e + 1), e = exp(2u) for |u| <= 9 (beyond, tanh is
 * +-1 in float; below |u| = 0.02 its series), exp by Cody-Waite reduction to r in [-ln2/2, ln2/2], the
 * Cephes degree-6 polynomial and 2^n from the exponent bits (no float to
 * int conversion). Absolute error about 1e-7: GELU moves by less than
 * |x| * 1e-7. The same arithmetic for every element, so the result does
 * not depend on which lane or thread computes it. */
static inline float tanh_gelu(float u) {
    u = u > 9.0f ? 9.0f : u < -9.0f ? -9.0f : u;
    const float x = 2.0f * u;
    const float t = x * 1.44269504088896341f + 12582912.0f; /* 1.5 * 2^23: n = round(x / ln 2) in its low bits */
    const float n = t - 12582912.0f;
    float r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    union {
        float f;
        uint32_t u;
    } bt = {t}, sc;
    sc.u = (bt.u + 127u) << 23; /* 2^n, n in [-26, 26] */
    const float e = p * sc.f;
    /* near 0, e - 1 cancels: the series u - u^3/3 + 2u^5/15 instead */
    const float u2 = u * u, series = u * (1.0f + u2 * (-1.0f / 3.0f + u2 * (2.0f / 15.0f)));
    const float q = (e - 1.0f) / (e + 1.0f); /* both computed: a select, not a branch, so the loop vectorises */
    return u2 < 4e-4f ? series : q;
}

void gelu_forward(float *out, const float *inp, size_t n) {
#pragma omp parallel for simd schedule(static) num_threads(pz_get_threads()) if (n > 65536)
    for (size_t i = 0; i < n; i++) {
        const float x = inp[i];
        out[i] = 0.5f * x * (1.0f + tanh_gelu(GELU_K * (x + 0.044715f * x * x * x)));
    }
}

void gelu_backward(float *dinp, const float *dout, const float *inp, size_t n) {
#pragma omp parallel for simd schedule(static) num_threads(pz_get_threads()) if (n > 65536)
    for (size_t i = 0; i < n; i++) {
        const float x = inp[i];
        const float u = GELU_K * (x + 0.044715f * x * x * x);
        const float th = tanh_gelu(u), sech2 = 1.0f - th * th;
        const float du = GELU_K * (1.0f + 3.0f * 0.044715f * x * x);
        dinp[i] = dout[i] * (0.5f * (1.0f + th) + 0.5f * x * sech2 * du);
    }
}

/* ---- causal multi-head self-attention ------------------------------------------
 * qkv (B, T, 3C): per position q | k | v, head h the hs = C / NH columns
 * starting at h * hs of each. att (B, NH, T, T): the softmax of the scaled
 * scores, zero above the diagonal (saved for backward). out (B, T, C). */
size_t attention_workspace_floats(int T) { return (size_t)pz_get_threads() * T * T; }

void attention_forward(float *out, float *att, const float *qkv, int B, int T, int C, int NH) {
    pz_blas_prepare();
    const int hs = C / NH, C3 = 3 * C;
    const float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for schedule(static) num_threads(pz_get_threads())
    for (int bh = 0; bh < B * NH; bh++) {
        const int b = bh / NH, h = bh % NH;
        const float *q = qkv + (size_t)b * T * C3 + h * hs, *k = q + C, *v = q + 2 * C;
        float *a = att + (size_t)bh * T * T;
        /* scores (T, T) = scale * q (T, hs) . k^T */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, scale, q, C3, k, C3, 0.0f, a, T);
        for (int i = 0; i < T; i++) {
            float *r = a + (size_t)i * T;
            float mx = r[0];
            for (int j = 1; j <= i; j++) mx = r[j] > mx ? r[j] : mx;
            double s = 0.0;
            for (int j = 0; j <= i; j++) r[j] = expf(r[j] - mx), s += r[j];
            const float inv = (float)(1.0 / s);
            for (int j = 0; j <= i; j++) r[j] *= inv;
            for (int j = i + 1; j < T; j++) r[j] = 0.0f;
        }
        /* out_h (T, hs) = att (T, T) . v (T, hs) */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, 1.0f, a, T, v, C3, 0.0f,
                    out + (size_t)b * T * C + h * hs, C);
    }
}

void attention_backward(float *dqkv, float *ws, const float *dout, const float *qkv, const float *att, int B, int T,
                        int C, int NH) {
    pz_blas_prepare();
    const int hs = C / NH, C3 = 3 * C;
    const float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel num_threads(pz_get_threads())
    {
        float *da = ws + (size_t)omp_get_thread_num() * T * T;
#pragma omp for schedule(static)
        for (int bh = 0; bh < B * NH; bh++) {
            const int b = bh / NH, h = bh % NH;
            const size_t off = (size_t)b * T * C3 + h * hs;
            const float *q = qkv + off, *k = q + C, *v = q + 2 * C;
            float *dq = dqkv + off, *dk = dq + C, *dv = dq + 2 * C;
            const float *a = att + (size_t)bh * T * T, *dy = dout + (size_t)b * T * C + h * hs;
            /* datt (T, T) = dy (T, hs) . v^T; dv (T, hs) = att^T . dy */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, 1.0f, dy, C, v, C3, 0.0f, da, T);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, 1.0f, a, T, dy, C, 0.0f, dv, C3);
            /* through the softmax: dscore = att * (datt - sum_j att * datt) */
            for (int i = 0; i < T; i++) {
                const float *ar = a + (size_t)i * T;
                float *dr = da + (size_t)i * T;
                double s = 0.0;
                for (int j = 0; j <= i; j++) s += (double)ar[j] * dr[j];
                const float sf = (float)s;
                for (int j = 0; j <= i; j++) dr[j] = ar[j] * (dr[j] - sf);
                for (int j = i + 1; j < T; j++) dr[j] = 0.0f;
            }
            /* dq = scale * dscore . k; dk = scale * dscore^T . q */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, scale, da, T, k, C3, 0.0f, dq, C3);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, scale, da, T, q, C3, 0.0f, dk, C3);
        }
    }
}
