/* SPDX-License-Identifier: MIT */
/* batchnorm.c — batch normalization per channel of (C, H, W) over the batch
 * and the plane, with running statistics (PyTorch semantics). */
#include "nn/layer.h"
#include "kernels/kernels.h"

pz_status pz_add_batchnorm(pz_seq *s, const char *name) {
    const pz_shape in = pz_seq_out(s);
    if (in.rank != 3) return pz_fail(PZ_ERR_ARG, "layer '%s': batch normalization needs an image (C, H, W) input", name);
    pz_layer *l = nn_push(s, PZ_LAYER_BATCHNORM, name);
    if (!l) return PZ_ERR_NOMEM;
    l->n_params = 2 * (int64_t)in.d[0];
    l->macs = pz_shape_numel(in);
    return PZ_OK;
}

static int64_t bn_buffers(const pz_layer *l) { return 2 * (int64_t)l->in.d[0]; }

static void bn_alloc(pz_layer *l, layer_alloc *a) {
    const int C = l->in.d[0];
    l->weight = nn_take_params(a, 2 * (int64_t)C, &l->dweight);
    l->bias = l->weight + C, l->dbias = l->dweight + C;
    for (int c = 0; c < C; c++) l->weight[c] = 1.0f, l->bias[c] = 0.0f;
    l->run_mean = nn_take_buffers(a, 2 * (int64_t)C), l->run_var = l->run_mean + C;
    for (int c = 0; c < C; c++) l->run_mean[c] = 0.0f, l->run_var[c] = 1.0f;
    l->mean = nn_floats(a, 2 * (size_t)C);
    if (l->mean) l->rstd = l->mean + C;
}

static void bn_forward(pz_layer *l, const float *x, float *y, int B, int train) {
    batchnorm_forward(y, l->mean, l->rstd, l->run_mean, l->run_var, x, l->weight, l->bias, B, l->in.d[0],
                      l->in.d[1] * l->in.d[2], 0.1f, 1e-5f, train);
}

static void bn_backward(pz_layer *l, const float *x, const float *y, const float *dy, float *dx, int B) {
    (void)y;
    batchnorm_backward(dx, l->dweight, l->dbias, dy, x, l->mean, l->rstd, l->weight, B, l->in.d[0],
                       l->in.d[1] * l->in.d[2]);
}

static void bn_relu_forward(pz_layer *l, const float *x, float *y, int B, int train) {
    batchnorm_relu_forward(y, l->mean, l->rstd, l->run_mean, l->run_var, x, l->weight, l->bias, B, l->in.d[0],
                           l->in.d[1] * l->in.d[2], 0.1f, 1e-5f, train);
}

static void bn_add_relu_forward(pz_layer *l, const float *x, const float *res, float *y, int B, int train) {
    batchnorm_add_relu_forward(y, l->mean, l->rstd, l->run_mean, l->run_var, x, l->weight, l->bias, res, B,
                               l->in.d[0], l->in.d[1] * l->in.d[2], 0.1f, 1e-5f, train);
}

static void bn_relu_backward(pz_layer *l, const float *x, const float *y, const float *dy, float *dx, int B) {
    batchnorm_relu_backward(dx, l->dweight, l->dbias, dy, x, l->mean, l->rstd, l->weight, l->bias, B, l->in.d[0],
                            l->in.d[1] * l->in.d[2]);
}

const pz_layer_ops pz_batchnorm_ops = {
    .name = "batchnorm", .alloc = bn_alloc, .n_buffers = bn_buffers, .forward = bn_forward, .backward = bn_backward,
    .forward_relu = bn_relu_forward, .backward_relu = bn_relu_backward, .forward_add_relu = bn_add_relu_forward,
};
