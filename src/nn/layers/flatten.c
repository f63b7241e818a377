/* SPDX-License-Identifier: MIT */
/* flatten.c — a sample as one vector (n, 1, 1); the data do not move. */
#include "nn/layer.h"

#include <string.h>

pz_status pz_add_flatten(pz_seq *s, const char *name) {
    pz_layer *l = nn_push(s, PZ_LAYER_FLATTEN, name);
    if (!l) return PZ_ERR_NOMEM;
    l->out = pz_shape_image((int)pz_shape_numel(l->in), 1, 1);
    return PZ_OK;
}

static void flatten_forward(pz_layer *l, const float *x, float *y, int B, int train) {
    (void)train;
    memcpy(y, x, sizeof(float) * (size_t)B * pz_shape_numel(l->in));
}

static void flatten_backward(pz_layer *l, const float *x, const float *y, const float *dy, float *dx, int B) {
    (void)x, (void)y;
    if (dx) memcpy(dx, dy, sizeof(float) * (size_t)B * pz_shape_numel(l->in));
}

const pz_layer_ops pz_flatten_ops = {.name = "flatten", .forward = flatten_forward, .backward = flatten_backward};
