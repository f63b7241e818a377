/* SPDX-License-Identifier: MIT */
/* subspace.c — a lift (a subspace model's, nn.h's pz_subspace): (T, K)
 * coefficients of the residual stream -> (T, C) = E[id] + P[t] + U c. E
 * (V, C) and P (context, C) are the lift's own trained token and position
 * tables (weight and bias, as an embedding's), the ids those the model's
 * embedding recorded (or a pipeline stage set). Every branch of a block
 * reads the stream through one, and writes back K coefficients, so all a
 * block adds to the stream lies in span U and the stream between blocks
 * is its K coefficients.
 *   dc = dy U;  dE[id] += dy;  dP[t] += dy */
#include "nn/layer.h"
#include "kernels/kernels.h"

pz_status pz_add_subspace(pz_seq *s, const char *name, int vocab, int context, int dim, float init_std) {
    const pz_shape in = pz_seq_out(s);
    if (in.rank != 2 || in.d[1] > dim || in.d[0] > context || vocab < 2)
        return pz_fail(PZ_ERR_ARG, "layer '%s': a lift takes (T, K) coefficients, K at most the width %d, T at most the context %d",
                       name, dim, context);
    pz_layer *l = nn_push(s, PZ_LAYER_SUBSPACE, name);
    if (!l) return PZ_ERR_NOMEM;
    nn_token_tables(l, vocab, context, dim, init_std);
    l->macs = (int64_t)in.d[0] * in.d[1] * dim + pz_shape_numel(l->out);
    return PZ_OK;
}

static void lift_alloc(pz_layer *l, layer_alloc *a) {
    nn_alloc_token_tables(l, a);
    l->sub = a->m->sub;
    if (!l->sub || l->sub->k != l->in.d[1] || l->sub->dim != l->out.d[1]) a->oom = 1; /* built without its model's subspace */
}

static void lift_fwd(pz_layer *l, const float *x, float *y, int B, int train) {
    (void)train;
    const int T = l->out.d[0];
    embedding_forward(y, l->sub->tokens, l->weight, l->bias, B, T, l->out.d[1], l->vocab);
    pz_subspace_expand(l->sub, x, y, (int64_t)B * T, 1.0f);
}

static void lift_bwd(pz_layer *l, const float *x, const float *y, const float *dy, float *dx, int B) {
    (void)x, (void)y;
    const int T = l->out.d[0];
    if (dx) pz_subspace_reduce(l->sub, dy, dx, (int64_t)B * T, 0.0f);
    embedding_backward(l->dweight, l->dbias, dy, l->sub->tokens, B, T, l->out.d[1], l->vocab);
}

static void lift_detail(const pz_layer *l, char *buf, size_t cap) {
    snprintf(buf, cap, "K %d, vocab %d, context %d", l->in.d[1], l->vocab, l->context);
}

const pz_layer_ops pz_subspace_ops = {
    .name = "subspace_lift", .alloc = lift_alloc, .forward = lift_fwd, .backward = lift_bwd, .detail = lift_detail,
};
