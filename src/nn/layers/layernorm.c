/* SPDX-License-Identifier: MIT */
/* layernorm.c — LayerNorm over the last dimension of (T, C), eps 1e-5
 * (PyTorch's default). */
#include "nn/layer.h"
#include "kernels/kernels.h"

pz_status pz_add_layernorm(pz_seq *s, const char *name) {
    const pz_shape in = pz_seq_out(s);
    if (in.rank != 2) return pz_fail(PZ_ERR_ARG, "layer '%s': LayerNorm takes a sequence (T, C)", name);
    pz_layer *l = nn_push(s, PZ_LAYER_LAYERNORM, name);
    if (!l) return PZ_ERR_NOMEM;
    l->n_params = 2 * (int64_t)in.d[1];
    l->macs = 4 * pz_shape_numel(in);
    return PZ_OK;
}

static void ln_alloc(pz_layer *l, layer_alloc *a) {
    const int C = l->in.d[1];
    l->weight = nn_take_params(a, C, &l->dweight);
    l->bias = nn_take_params(a, C, &l->dbias);
    for (int c = 0; c < C; c++) l->weight[c] = 1.0f, l->bias[c] = 0.0f;
    const size_t rows = (size_t)nn_rows(l->in, a->B);
    l->mean = nn_floats(a, 2 * rows);
    if (l->mean) l->rstd = l->mean + rows;
}

static void ln_fwd(pz_layer *l, const float *x, float *y, int B, int train) {
    (void)train;
    const int N = (int)nn_rows(l->in, B);
    /* mean and rstd live in (B_max * T)-row buffers; rstd starts after them */
    layernorm_forward(y, l->mean, l->rstd, x, l->weight, l->bias, N, l->in.d[1], 1e-5f);
}

static void ln_bwd(pz_layer *l, const float *x, const float *y, const float *dy, float *dx, int B) {
    (void)y;
    layernorm_backward(dx, l->dweight, l->dbias, dy, x, l->mean, l->rstd, l->weight, (int)nn_rows(l->in, B), l->in.d[1], NULL);
}

static void ln_bwd_add(pz_layer *l, const float *x, const float *y, const float *dy, const float *dres, float *dx, int B) {
    (void)y;
    layernorm_backward(dx, l->dweight, l->dbias, dy, x, l->mean, l->rstd, l->weight, (int)nn_rows(l->in, B), l->in.d[1], dres);
}

const pz_layer_ops pz_layernorm_ops = {.name = "layernorm", .alloc = ln_alloc, .forward = ln_fwd, .backward = ln_bwd, .backward_add = ln_bwd_add};
