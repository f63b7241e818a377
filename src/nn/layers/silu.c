/* SPDX-License-Identifier: MIT */
/* silu.c — SiLU (swish), x * sigmoid(x), elementwise: the activation of
 * SwiGLU MLPs (LLaMA and most recent transformers). Its kernels are here:
 * one pass each way, sigmoid from expf of a non-positive argument so it
 * never overflows.
 *   y = x s(x),  dy/dx = s(x) (1 + x (1 - s(x))),  s(x) = 1 / (1 + e^-x) */
#include "nn/layer.h"

#include <math.h>

static float sigmoid(float x) {
    const float e = expf(-fabsf(x)); /* in (0, 1] */
    return x >= 0 ? 1.0f / (1.0f + e) : e / (1.0f + e);
}

pz_status pz_add_silu(pz_seq *s, const char *name) {
    pz_layer *l = nn_push(s, PZ_LAYER_SILU, name);
    if (!l) return PZ_ERR_NOMEM;
    l->macs = 4 * pz_shape_numel(l->in);
    return PZ_OK;
}

static void silu_fwd(pz_layer *l, const float *x, float *y, int B, int train) {
    (void)train;
    const size_t n = (size_t)B * (size_t)pz_shape_numel(l->in);
    for (size_t i = 0; i < n; i++) y[i] = x[i] * sigmoid(x[i]);
}

static void silu_bwd(pz_layer *l, const float *x, const float *y, const float *dy, float *dx, int B) {
    (void)y;
    if (!dx) return;
    const size_t n = (size_t)B * (size_t)pz_shape_numel(l->in);
    for (size_t i = 0; i < n; i++) {
        const float sg = sigmoid(x[i]);
        dx[i] = dy[i] * sg * (1.0f + x[i] * (1.0f - sg));
    }
}

const pz_layer_ops pz_silu_ops = {.name = "silu", .forward = silu_fwd, .backward = silu_bwd};
