/* SPDX-License-Identifier: MIT */
/* norm.c — batch normalization over (B, HW) per channel, PyTorch semantics.
 * Sums run in float SIMD lanes within one (H, W) plane and in double across
 * planes: with B*HW up to ~1e5 per channel a float sum over all of them
 * would lose the low bits the reference tests look at. */
#include "kernels.h"

#include <math.h>

/* sum and sum of squares of one channel: float SIMD lanes within a plane,
 * double across planes */
static void channel_moments(const float *inp, int B, int C, int c, int HW, double *sum, double *sumsq) {
    double s = 0.0, s2 = 0.0;
    for (int b = 0; b < B; b++) {
        const float *x = inp + ((size_t)b * C + c) * HW;
        float ps = 0.0f, ps2 = 0.0f;
#pragma omp simd reduction(+ : ps, ps2)
        for (int i = 0; i < HW; i++) ps += x[i], ps2 += x[i] * x[i];
        s += ps, s2 += ps2;
    }
    *sum = s, *sumsq = s2;
}

/* a channel's normalization as one affine map, y = x * g + sh: the
 * forward's, and the backward's when it recomputes where a ReLU after it
 * passed (the same operations, so the same bits) */
static inline void bn_affine(float gamma, float beta, float m, float rs, float *g, float *sh) {
    *g = gamma * rs;
    *sh = fmaf(-m, *g, beta);
}
static inline float bn_value(float x, float g, float sh) { return fmaf(x, g, sh); }

/* relu: out = relu(bn(inp) + res) (res NULL: no residual), else bn(inp) */
static void bn_forward(float *out, float *mean, float *rstd, float *run_mean, float *run_var, const float *inp,
                       const float *gamma, const float *beta, int B, int C, int HW, float momentum, float eps,
                       int train, int relu, const float *res) {
    const double N = (double)B * HW;
#pragma omp parallel for schedule(static) num_threads(pz_get_threads())
    for (int c = 0; c < C; c++) {
        float m, rs;
        if (train) {
            /* one pass: var = E[x^2] - E[x]^2 in double (activations are
             * O(1) after the previous BN, so no catastrophic cancellation) */
            double s, s2;
            channel_moments(inp, B, C, c, HW, &s, &s2);
            const double mu = s / N;
            double var = s2 / N - mu * mu; /* biased: used to normalize */
            if (var < 0.0) var = 0.0;
            m = (float)mu;
            rs = (float)(1.0 / sqrt(var + eps));
            mean[c] = m;
            rstd[c] = rs;
            const double unbiased = N > 1 ? var * N / (N - 1) : var;
            run_mean[c] = (float)((1.0 - momentum) * run_mean[c] + momentum * mu);
            run_var[c] = (float)((1.0 - momentum) * run_var[c] + momentum * unbiased);
        } else {
            m = run_mean[c];
            rs = 1.0f / sqrtf(run_var[c] + eps);
        }
        float g, sh;
        bn_affine(gamma[c], beta[c], m, rs, &g, &sh);
        for (int b = 0; b < B; b++) {
            const float *x = inp + ((size_t)b * C + c) * HW;
            float *y = out + ((size_t)b * C + c) * HW;
            if (res) {
                const float *r = res + ((size_t)b * C + c) * HW;
#pragma omp simd
                for (int i = 0; i < HW; i++) {
                    const float v = bn_value(x[i], g, sh) + r[i];
                    y[i] = v < 0.0f ? 0.0f : v; /* add_relu_forward's */
                }
            } else if (relu) {
#pragma omp simd
                for (int i = 0; i < HW; i++) {
                    const float v = bn_value(x[i], g, sh);
                    y[i] = v < 0.0f ? 0.0f : v; /* relu_forward's, NaN passes */
                }
            } else {
#pragma omp simd
                for (int i = 0; i < HW; i++) y[i] = bn_value(x[i], g, sh);
            }
        }
    }
}

void batchnorm_forward(float *out, float *mean, float *rstd, float *run_mean, float *run_var,
                       const float *inp, const float *gamma, const float *beta,
                       int B, int C, int HW, float momentum, float eps, int train) {
    bn_forward(out, mean, rstd, run_mean, run_var, inp, gamma, beta, B, C, HW, momentum, eps, train, 0, NULL);
}

void batchnorm_relu_forward(float *out, float *mean, float *rstd, float *run_mean, float *run_var,
                            const float *inp, const float *gamma, const float *beta,
                            int B, int C, int HW, float momentum, float eps, int train) {
    bn_forward(out, mean, rstd, run_mean, run_var, inp, gamma, beta, B, C, HW, momentum, eps, train, 1, NULL);
}

void batchnorm_add_relu_forward(float *out, float *mean, float *rstd, float *run_mean, float *run_var,
                                const float *inp, const float *gamma, const float *beta, const float *res, int B, int C,
                                int HW, float momentum, float eps, int train) {
    bn_forward(out, mean, rstd, run_mean, run_var, inp, gamma, beta, B, C, HW, momentum, eps, train, 1, res);
}

/* beta NULL: dout is the gradient of the normalized output itself; else of
 * relu(normalized): dz = dout where the forward's ReLU passed (its output >
 * 0), else 0, as relu_backward; where it passed is recomputed from inp and
 * the saved mean and rstd (one stream less than reading the ReLU's output) */
static void bn_backward(float *dinp, float *dgamma, float *dbeta, const float *dout, const float *beta,
                        const float *inp, const float *mean, const float *rstd, const float *gamma, int B, int C,
                        int HW) {
    const double N = (double)B * HW;
#pragma omp parallel for schedule(static) num_threads(pz_get_threads())
    for (int c = 0; c < C; c++) {
        const float m = mean[c], rs = rstd[c];
        float g = 0.0f, sh = 0.0f; /* the forward's map, for its ReLU */
        if (beta) bn_affine(gamma[c], beta[c], m, rs, &g, &sh);
        double sdy = 0.0, sdyx = 0.0;
        for (int b = 0; b < B; b++) {
            const float *x = inp + ((size_t)b * C + c) * HW;
            const float *dy = dout + ((size_t)b * C + c) * HW;
            float p = 0.0f, px = 0.0f;
            if (beta) { /* dy read either way: a read only where the ReLU passed
                         * compiles to masked loads, measured a third slower */
#pragma omp simd reduction(+ : p, px)
                for (int i = 0; i < HW; i++) {
                    const float d = dy[i], dz = bn_value(x[i], g, sh) > 0.0f ? d : 0.0f;
                    p += dz, px += dz * x[i];
                }
            } else {
#pragma omp simd reduction(+ : p, px)
                for (int i = 0; i < HW; i++) p += dy[i], px += dy[i] * x[i];
            }
            sdy += p, sdyx += px;
        }
        /* sum(dy * xhat) = rstd * (sum(dy * x) - mean * sum(dy)) */
        sdyx = rs * (sdyx - m * sdy);
        dbeta[c] += (float)sdy;
        dgamma[c] += (float)sdyx;
        if (!dinp) continue;
        /* dx = gamma * rstd / N * (N * dy - sum(dy) - xhat * sum(dy * xhat))
         *    = k * dy + (k * (m * rs * bq - a)) - (k * rs * bq) * x */
        const float k = gamma[c] * rs;
        const float a = (float)(sdy / N), bq = (float)(sdyx / N);
        const float cx = k * rs * bq, c0 = k * (m * rs * bq - a);
        for (int b = 0; b < B; b++) {
            const float *x = inp + ((size_t)b * C + c) * HW;
            const float *dy = dout + ((size_t)b * C + c) * HW;
            float *dx = dinp + ((size_t)b * C + c) * HW;
            if (beta) {
#pragma omp simd
                for (int i = 0; i < HW; i++) {
                    const float d = dy[i], dz = bn_value(x[i], g, sh) > 0.0f ? d : 0.0f;
                    dx[i] = k * dz + c0 - cx * x[i];
                }
            } else {
#pragma omp simd
                for (int i = 0; i < HW; i++) dx[i] = k * dy[i] + c0 - cx * x[i];
            }
        }
    }
}

void batchnorm_backward(float *dinp, float *dgamma, float *dbeta,
                        const float *dout, const float *inp, const float *mean, const float *rstd,
                        const float *gamma, int B, int C, int HW) {
    bn_backward(dinp, dgamma, dbeta, dout, NULL, inp, mean, rstd, gamma, B, C, HW);
}

void batchnorm_relu_backward(float *dinp, float *dgamma, float *dbeta, const float *dout, const float *inp,
                             const float *mean, const float *rstd, const float *gamma, const float *beta, int B, int C,
                             int HW) {
    bn_backward(dinp, dgamma, dbeta, dout, beta, inp, mean, rstd, gamma, B, C, HW);
}
