/* SPDX-License-Identifier: MIT */
/* relu.c — max(x, 0) elementwise, any shape. */
#include "nn/layer.h"
#include "kernels/kernels.h"

pz_status pz_add_relu(pz_seq *s, const char *name) { return nn_push(s, PZ_LAYER_RELU, name) ? PZ_OK : PZ_ERR_NOMEM; }

static void relu_fwd(pz_layer *l, const float *x, float *y, int B, int train) {
    (void)train;
    relu_forward(y, x, (size_t)B * pz_shape_numel(l->in));
}

static void relu_bwd(pz_layer *l, const float *x, const float *y, const float *dy, float *dx, int B) {
    (void)x;
    if (dx) relu_backward(dx, dy, y, (size_t)B * pz_shape_numel(l->in));
}

const pz_layer_ops pz_relu_ops = {.name = "relu", .forward = relu_fwd, .backward = relu_bwd};
