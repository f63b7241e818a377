/* SPDX-License-Identifier: MIT */
/* project.c — a learned boundary projection (--project K, after MAPL,
 * arXiv 2606.05484): at a pipeline cut of a subspace model, the sending
 * stage's last layer maps the stream's D coefficients per token to K,
 *   c = (x + A_s[id] + P_s[t]) W_s,
 * and the receiving stage's first layer maps them back,
 *   y = A_r[id] + P_r[t] + c W_r^T.
 * W (D x K) has orthonormal columns, kept so as it trains: after every
 * optimizer step it is re-orthonormalized (modified Gram-Schmidt, twice, in
 * double precision: a QR retraction, the same bits on every machine). A and
 * P are per-boundary anchor tables of the ids (which cross the cut with a
 * subspace model's coefficients): what the token and position already say
 * need not be sent. Each side owns its tables and matrix, so no parameter
 * crosses the link; both start as W = [I_K; 0] and A = P = 0, so the pair
 * starts as the projection onto the first K coefficients (at K = D, the
 * identity).
 * Parameters: A (V, D) as weight, P (context, D) as bias, then W (D, K).
 *   down: r = x + A + P saved; dx = dy W^T; dW += r^T dy; dA, dP += dx
 *   up:   dc = dy W; dW += dy^T c; dA, dP += dy */
#include "nn/layer.h"
#include "kernels/blas.h"
#include "kernels/kernels.h"

#include <math.h>
#include <stdlib.h>

/* D: the stream's width, K: the boundary's */
static int width_d(const pz_layer *l) { return l->kind == PZ_LAYER_PROJECT ? l->in.d[1] : l->out.d[1]; }
static float *proj_w(const pz_layer *l) { return l->bias + (int64_t)l->context * width_d(l); }
static float *proj_dw(const pz_layer *l) { return l->dbias + (int64_t)l->context * width_d(l); }

static pz_status add_projection(pz_seq *s, pz_layer_kind kind, const char *name, int vocab, int context, int k) {
    const pz_shape in = pz_seq_out(s);
    const int d = kind == PZ_LAYER_PROJECT ? (in.rank == 2 ? in.d[1] : 0) : k;
    if (in.rank != 2 || in.d[0] > context || vocab < 2 || k < 1 || (kind == PZ_LAYER_PROJECT && k > d))
        return pz_fail(PZ_ERR_ARG, "layer '%s': a boundary projection takes (T, D) coefficients to (T, K), K from 1 to D, T at most the context %d",
                       name, context);
    pz_layer *l = nn_push(s, kind, name);
    if (!l) return PZ_ERR_NOMEM;
    const int D = kind == PZ_LAYER_PROJECT ? in.d[1] : k, K = kind == PZ_LAYER_PROJECT ? k : in.d[1];
    if (kind == PZ_LAYER_UNPROJECT) {
        /* k is the stream's width D here; the input is the boundary's K */
        if (K > D) return pz_fail(PZ_ERR_ARG, "layer '%s': %d boundary coefficients lifted into a stream of %d", name, K, D);
    }
    l->vocab = vocab, l->context = context, l->k = K;
    l->out = pz_shape_seq(in.d[0], kind == PZ_LAYER_PROJECT ? K : D);
    l->n_params = ((int64_t)vocab + context) * D + (int64_t)D * K;
    l->macs = (int64_t)in.d[0] * D * K + (int64_t)in.d[0] * D;
    return PZ_OK;
}

pz_status pz_add_project(pz_seq *s, const char *name, int vocab, int context, int k) {
    return add_projection(s, PZ_LAYER_PROJECT, name, vocab, context, k);
}

pz_status pz_add_unproject(pz_seq *s, const char *name, int vocab, int context, int dim) {
    return add_projection(s, PZ_LAYER_UNPROJECT, name, vocab, context, dim);
}

static void proj_alloc(pz_layer *l, layer_alloc *a) {
    const int D = width_d(l), K = l->k;
    l->init_std = 0.0f; /* anchors start at zero */
    l->weight = nn_take_params(a, ((int64_t)l->vocab + l->context) * D + (int64_t)D * K, &l->dweight);
    l->bias = l->weight + (int64_t)l->vocab * D;
    l->dbias = l->dweight + (int64_t)l->vocab * D;
    float *w = proj_w(l);
    for (int64_t i = 0; i < ((int64_t)l->vocab + l->context) * D; i++) l->weight[i] = 0.0f;
    for (int i = 0; i < D; i++)
        for (int j = 0; j < K; j++) w[(size_t)i * K + j] = i == j ? 1.0f : 0.0f;
    l->sub = a->m->sub;
    if (!l->sub || l->sub->k != D) a->oom = 1; /* a subspace model's ids and width */
    if (l->kind == PZ_LAYER_PROJECT) l->saved = nn_floats(a, (size_t)a->B * pz_shape_numel(l->in)); /* r */
}

static void down_fwd(pz_layer *l, const float *x, float *y, int B, int train) {
    (void)train;
    const int T = l->in.d[0], D = width_d(l), K = l->k;
    const int64_t n = (int64_t)B * T * D;
    float *r = l->saved;
    embedding_forward(r, l->sub->tokens, l->weight, l->bias, B, T, D, l->vocab);
    for (int64_t i = 0; i < n; i++) r[i] += x[i];
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B * T, K, D, 1.0f, r, D, proj_w(l), K, 0.0f, y, K);
}

static void down_bwd(pz_layer *l, const float *x, const float *y, const float *dy, float *dx, int B) {
    (void)x, (void)y;
    const int T = l->in.d[0], D = width_d(l), K = l->k;
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, D, K, B * T, 1.0f, l->saved, D, dy, K, 1.0f, proj_dw(l), K);
    /* dx is the anchors' gradient too; without a dx (never: the stage's
     * input gradient is sent), use the saved buffer */
    float *g = dx ? dx : l->saved;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B * T, D, K, 1.0f, dy, K, proj_w(l), K, 0.0f, g, D);
    embedding_backward(l->dweight, l->dbias, g, l->sub->tokens, B, T, D, l->vocab);
}

static void up_fwd(pz_layer *l, const float *x, float *y, int B, int train) {
    (void)train;
    const int T = l->in.d[0], D = width_d(l), K = l->k;
    embedding_forward(y, l->sub->tokens, l->weight, l->bias, B, T, D, l->vocab);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B * T, D, K, 1.0f, x, K, proj_w(l), K, 1.0f, y, D);
}

static void up_bwd(pz_layer *l, const float *x, const float *y, const float *dy, float *dx, int B) {
    (void)y;
    const int T = l->in.d[0], D = width_d(l), K = l->k;
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, D, K, B * T, 1.0f, dy, D, x, K, 1.0f, proj_dw(l), K);
    if (dx) cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B * T, K, D, 1.0f, dy, D, proj_w(l), K, 0.0f, dx, K);
    embedding_backward(l->dweight, l->dbias, dy, l->sub->tokens, B, T, D, l->vocab);
}

/* W's columns orthonormal again: modified Gram-Schmidt, twice, in double */
void nn_orthonormalize(float *w, int rows, int cols) {
    double *q = malloc(sizeof *q * (size_t)rows * (size_t)cols);
    if (!q) return; /* the step's W stays as the optimizer left it: a retraction is a correction, not a correctness condition */
    for (size_t i = 0; i < (size_t)rows * (size_t)cols; i++) q[i] = w[i];
    for (int pass = 0; pass < 2; pass++)
        for (int j = 0; j < cols; j++) {
            for (int p = 0; p < j; p++) {
                double d = 0;
                for (int i = 0; i < rows; i++) d += q[(size_t)i * cols + j] * q[(size_t)i * cols + p];
                for (int i = 0; i < rows; i++) q[(size_t)i * cols + j] -= d * q[(size_t)i * cols + p];
            }
            double n = 0;
            for (int i = 0; i < rows; i++) n += q[(size_t)i * cols + j] * q[(size_t)i * cols + j];
            n = n > 0 ? 1.0 / sqrt(n) : 0.0;
            for (int i = 0; i < rows; i++) q[(size_t)i * cols + j] *= n;
        }
    for (size_t i = 0; i < (size_t)rows * (size_t)cols; i++) w[i] = (float)q[i];
    free(q);
}

static void proj_after_step(pz_layer *l) { nn_orthonormalize(proj_w(l), width_d(l), l->k); }

static void proj_detail(const pz_layer *l, char *buf, size_t cap) {
    snprintf(buf, cap, "%s %d -> %d, learned, orthonormal", l->kind == PZ_LAYER_PROJECT ? "project" : "lift",
             l->in.d[1], l->out.d[1]);
}

const pz_layer_ops pz_project_ops = {
    .name = "boundary_project", .alloc = proj_alloc, .forward = down_fwd, .backward = down_bwd,
    .after_step = proj_after_step, .detail = proj_detail,
};
const pz_layer_ops pz_unproject_ops = {
    .name = "boundary_lift", .alloc = proj_alloc, .forward = up_fwd, .backward = up_bwd,
    .after_step = proj_after_step, .detail = proj_detail,
};
