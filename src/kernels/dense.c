/* SPDX-License-Identifier: MIT */
/* dense.c — linear layer, elementwise activations, residual add, softmax
 * cross-entropy. */
#include "kernels.h"
#include "fastmath.h"

#include <math.h>
#include <stdlib.h>

void linear_forward(float *out, const float *inp, const float *weight, const float *bias, int B, int C, int OC) {
    pz_gemm(0, 1, B, OC, C, 1.0f, inp, C, weight, C, 0.0f, out, OC, bias);
}

void linear_forward_gelu(float *out, float *gout, const float *inp, const float *weight, const float *bias, int B, int C,
                         int OC) {
    pz_gemm_fused(0, 1, B, OC, C, 1.0f, inp, C, weight, C, 0.0f, out, OC, bias, &(pz_gemm_epi){PZ_EPI_GELU, gout, OC, NULL, 0});
}

void linear_forward_add(float *out, const float *inp, const float *weight, const float *bias, const float *res, int B, int C,
                        int OC) {
    pz_gemm_fused(0, 1, B, OC, C, 1.0f, inp, C, weight, C, 0.0f, out, OC, bias, &(pz_gemm_epi){PZ_EPI_ADD, NULL, 0, res, OC});
}

void linear_backward_gelu(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                          const float *weight, const float *h, int B, int C, int OC) {
    if (dinp) /* dinp (B, C) = (dout (B, OC) . W (OC, C)) GELU'(h) */
        pz_gemm_fused(0, 0, B, C, OC, 1.0f, dout, OC, weight, C, 0.0f, dinp, C, NULL,
                      &(pz_gemm_epi){PZ_EPI_GELU_GRAD, NULL, 0, h, C});
    linear_backward(NULL, dweight, dbias, dout, inp, weight, B, C, OC);
}

void linear_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                     const float *weight, int B, int C, int OC) {
    if (dinp) /* dinp (B, C) = dout (B, OC) . W (OC, C) */
        pz_gemm(0, 0, B, C, OC, 1.0f, dout, OC, weight, C, 0.0f, dinp, C, NULL);
    /* dW (OC, C) += dout^T (OC, B) . inp (B, C); dbias (OC) += each output's
     * sum over the rows, in row order, taken as the product packs dout */
    if (dbias) pz_gemm_rowsum(1, 0, OC, C, B, 1.0f, dout, OC, inp, C, 1.0f, dweight, C, NULL, dbias);
    else pz_gemm(1, 0, OC, C, B, 1.0f, dout, OC, inp, C, 1.0f, dweight, C, NULL);
}

void relu_forward(float *out, const float *inp, size_t n) {
#pragma omp parallel for simd schedule(static) num_threads(pz_get_threads()) if (n > 65536)
    for (size_t i = 0; i < n; i++) out[i] = inp[i] < 0.0f ? 0.0f : inp[i]; /* NaN passes, as in PyTorch */
}

void relu_backward(float *dinp, const float *dout, const float *out, size_t n) {
#pragma omp parallel for simd schedule(static) num_threads(pz_get_threads()) if (n > 65536)
    for (size_t i = 0; i < n; i++) { /* dout read either way: a conditional read compiles to masked loads */
        const float d = dout[i];
        dinp[i] = out[i] > 0.0f ? d : 0.0f;
    }
}

void add_forward(float *out, const float *a, const float *b, size_t n) {
#pragma omp parallel for simd schedule(static) num_threads(pz_get_threads()) if (n > 65536)
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

void add_relu_forward(float *out, const float *a, const float *b, size_t n) {
#pragma omp parallel for simd schedule(static) num_threads(pz_get_threads()) if (n > 65536)
    for (size_t i = 0; i < n; i++) {
        const float v = a[i] + b[i];
        out[i] = v < 0.0f ? 0.0f : v;
    }
}

/* the sum of exp(z[j] - mx) over j < n in 16 lanes (lane l takes the j
 * with j % 16 == l, in order), the lanes added in pz_lanes16_sum's tree: the bits
 * depend neither on how the vectoriser splits the loop nor on the row's
 * alignment (a pipeline stage's rows sit elsewhere than a whole model's) */
static float exp_sum_lanes(const float *z, int n, float mx) {
    float acc[16] = {0};
    int j = 0;
    for (; j + 16 <= n; j += 16) {
#pragma omp simd
        for (int l = 0; l < 16; l++) acc[l] += pz_exp_neg(z[j + l] - mx);
    }
    for (int l = 0; j + l < n; l++) acc[l] += pz_exp_neg(z[j + l] - mx);
    return pz_lanes16_sum(acc);
}

/* one row: its loss (log-sum-exp minus the target's logit), whether the
 * argmax hits, and its gradient (softmax - onehot) / rows; the exponentials
 * in float vectors (fastmath.h; the selects vectorise with
 * -fno-trapping-math), the sum in float lanes */
static double xent_row(float *dz, int *hit, const float *z, int label, int rows, int NC) {
    float mx = z[0];
    int arg = 0;
    for (int j = 1; j < NC; j++)
        if (z[j] > mx) { mx = z[j]; arg = j; }
    const float se = exp_sum_lanes(z, NC, mx);
    const float lse = logf(se) + mx, inv_rows = 1.0f / (float)rows;
    *hit = arg == label;
    if (dz) {
#pragma omp simd
        for (int j = 0; j < NC; j++) dz[j] = pz_exp_neg(z[j] - lse) * inv_rows;
        dz[label] -= inv_rows;
    }
    return (double)lse - (double)z[label];
}

float softmax_xent_forward_backward(float *dlogits, int *correct, const float *logits,
                                    const int32_t *labels, int B, int NC) {
    double total = 0.0;
    int hits = 0;
    /* many rows (a language model's positions): rows in parallel, their
     * losses summed afterwards in row order, as the serial loop does */
    double *row = (size_t)B * NC > 65536 && pz_get_threads() > 1 ? malloc(sizeof(double) * (size_t)B) : NULL;
    if (row) {
#pragma omp parallel for schedule(static) num_threads(pz_get_threads()) reduction(+ : hits)
        for (int b = 0; b < B; b++) {
            int hit;
            row[b] = xent_row(dlogits ? dlogits + (size_t)b * NC : NULL, &hit, logits + (size_t)b * NC, labels[b], B, NC);
            hits += hit;
        }
        for (int b = 0; b < B; b++) total += row[b];
        free(row);
    } else {
        for (int b = 0; b < B; b++) {
            int hit;
            total += xent_row(dlogits ? dlogits + (size_t)b * NC : NULL, &hit, logits + (size_t)b * NC, labels[b], B, NC);
            hits += hit;
        }
    }
    if (correct) *correct = hits;
    return (float)(total / B);
}
