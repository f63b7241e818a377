/* SPDX-License-Identifier: MIT */
/* subspace.c — (T, K) -> (T, C): a block's output coefficients into the
 * model's fixed subspace, y = c U^T (nn.h's pz_subspace). What a GPT with
 * --subspace K writes into its residual stream goes through one: the
 * attention's and the MLP's output projections have K outputs. The input's
 * gradient is dy U: the part of dy the block can move. */
#include "nn/layer.h"

pz_status pz_add_subspace(pz_seq *s, const char *name, int dim) {
    const pz_shape in = pz_seq_out(s);
    if (in.rank != 2 || in.d[1] > dim)
        return pz_fail(PZ_ERR_ARG, "layer '%s': a subspace takes (T, K) coefficients, K at most the width %d", name, dim);
    pz_layer *l = nn_push(s, PZ_LAYER_SUBSPACE, name);
    if (!l) return PZ_ERR_NOMEM;
    l->out = pz_shape_seq(in.d[0], dim);
    l->macs = (int64_t)in.d[0] * in.d[1] * dim;
    return PZ_OK;
}

static void subspace_alloc(pz_layer *l, layer_alloc *a) {
    l->sub = a->m->sub;
    if (!l->sub || l->sub->k != l->in.d[1] || l->sub->dim != l->out.d[1]) a->oom = 1; /* built without its model's subspace */
}

static void subspace_fwd(pz_layer *l, const float *x, float *y, int B, int train) {
    (void)train;
    pz_subspace_expand(l->sub, x, y, (int64_t)B * l->in.d[0], 0.0f);
}

static void subspace_bwd(pz_layer *l, const float *x, const float *y, const float *dy, float *dx, int B) {
    (void)x, (void)y;
    if (dx) pz_subspace_reduce(l->sub, dy, dx, (int64_t)B * l->in.d[0], 0.0f);
}

static void subspace_detail(const pz_layer *l, char *buf, size_t cap) { snprintf(buf, cap, "K %d", l->in.d[1]); }

const pz_layer_ops pz_subspace_ops = {
    .name = "subspace", .alloc = subspace_alloc, .forward = subspace_fwd, .backward = subspace_bwd, .detail = subspace_detail,
};
