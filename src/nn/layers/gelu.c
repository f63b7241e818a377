/* SPDX-License-Identifier: MIT */
/* gelu.c — GELU, the tanh approximation GPT-2 uses, elementwise. */
#include "nn/layer.h"
#include "kernels/kernels.h"

pz_status pz_add_gelu(pz_seq *s, const char *name) {
    pz_layer *l = nn_push(s, PZ_LAYER_GELU, name);
    if (!l) return PZ_ERR_NOMEM;
    l->macs = 8 * pz_shape_numel(l->in);
    return PZ_OK;
}

static void gelu_fwd(pz_layer *l, const float *x, float *y, int B, int train) {
    (void)train;
    gelu_forward(y, x, (size_t)B * pz_shape_numel(l->in));
}

static void gelu_bwd(pz_layer *l, const float *x, const float *y, const float *dy, float *dx, int B) {
    (void)y;
    if (dx) gelu_backward(dx, dy, x, (size_t)B * pz_shape_numel(l->in));
}

const pz_layer_ops pz_gelu_ops = {.name = "gelu", .forward = gelu_fwd, .backward = gelu_bwd};
