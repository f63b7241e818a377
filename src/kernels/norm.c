/* norm.c — batch normalization over (B, HW) per channel, PyTorch semantics.
 * Statistics accumulate in double: with B*HW up to ~1e5 per channel a float
 * sum would lose the low bits the gradient check looks at. */
#include "kernels.h"

#include <math.h>

void batchnorm_forward(float *out, float *mean, float *rstd, float *run_mean, float *run_var,
                       const float *inp, const float *gamma, const float *beta,
                       int B, int C, int HW, float momentum, float eps, int train) {
    const double N = (double)B * HW;
#pragma omp parallel for schedule(static) num_threads(pz_get_threads())
    for (int c = 0; c < C; c++) {
        float m, rs;
        if (train) {
            double s = 0.0;
            for (int b = 0; b < B; b++) {
                const float *x = inp + ((size_t)b * C + c) * HW;
                for (int i = 0; i < HW; i++) s += x[i];
            }
            const double mu = s / N;
            double v = 0.0;
            for (int b = 0; b < B; b++) {
                const float *x = inp + ((size_t)b * C + c) * HW;
                for (int i = 0; i < HW; i++) {
                    const double d = x[i] - mu;
                    v += d * d;
                }
            }
            const double var = v / N; /* biased: used to normalize */
            m = (float)mu;
            rs = (float)(1.0 / sqrt(var + eps));
            mean[c] = m;
            rstd[c] = rs;
            const double unbiased = N > 1 ? v / (N - 1) : var;
            run_mean[c] = (float)((1.0 - momentum) * run_mean[c] + momentum * mu);
            run_var[c] = (float)((1.0 - momentum) * run_var[c] + momentum * unbiased);
        } else {
            m = run_mean[c];
            rs = 1.0f / sqrtf(run_var[c] + eps);
        }
        const float g = gamma[c] * rs, sh = beta[c] - m * g;
        for (int b = 0; b < B; b++) {
            const float *x = inp + ((size_t)b * C + c) * HW;
            float *y = out + ((size_t)b * C + c) * HW;
            for (int i = 0; i < HW; i++) y[i] = x[i] * g + sh;
        }
    }
}

void batchnorm_backward(float *dinp, float *dgamma, float *dbeta,
                        const float *dout, const float *inp, const float *mean, const float *rstd,
                        const float *gamma, int B, int C, int HW) {
    const double N = (double)B * HW;
#pragma omp parallel for schedule(static) num_threads(pz_get_threads())
    for (int c = 0; c < C; c++) {
        const float m = mean[c], rs = rstd[c];
        double sdy = 0.0, sdyx = 0.0;
        for (int b = 0; b < B; b++) {
            const float *x = inp + ((size_t)b * C + c) * HW;
            const float *dy = dout + ((size_t)b * C + c) * HW;
            for (int i = 0; i < HW; i++) {
                sdy += dy[i];
                sdyx += (double)dy[i] * ((x[i] - m) * rs);
            }
        }
        dbeta[c] += (float)sdy;
        dgamma[c] += (float)sdyx;
        if (!dinp) continue;
        /* dx = gamma * rstd / N * (N * dy - sum(dy) - xhat * sum(dy * xhat)) */
        const float k = gamma[c] * rs;
        const float a = (float)(sdy / N), bq = (float)(sdyx / N);
        for (int b = 0; b < B; b++) {
            const float *x = inp + ((size_t)b * C + c) * HW;
            const float *dy = dout + ((size_t)b * C + c) * HW;
            float *dx = dinp + ((size_t)b * C + c) * HW;
            for (int i = 0; i < HW; i++) dx[i] = k * (dy[i] - a - (x[i] - m) * rs * bq);
        }
    }
}
