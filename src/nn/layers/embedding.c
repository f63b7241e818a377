/* SPDX-License-Identifier: MIT */
/* embedding.c — token and learned position embeddings: (T) token ids ->
 * (T, C) = wte[token] + wpe[position]. Parameters: wte (V, C) as weight,
 * wpe (context, C) as bias; an input of T <= context tokens uses the first
 * T rows of wpe.
 * In a model's subspace (pz_add_subspace_embedding, l->k = K): wte (V, K)
 * and wpe (context, K) are coefficients, and (T, C) = tok[token] + pos[t]
 * (the subspace's fixed embeddings) + U (wte[token] + wpe[t]). */
#include "nn/layer.h"
#include "kernels/kernels.h"

pz_status pz_add_embedding(pz_seq *s, const char *name, int vocab, int context, int dim, float init_std) {
    const pz_shape in = pz_seq_out(s);
    if (in.rank != 1) return pz_fail(PZ_ERR_ARG, "layer '%s': an embedding takes a sequence of token ids (T)", name);
    if (vocab < 2 || dim < 1) return pz_fail(PZ_ERR_ARG, "layer '%s': vocabulary %d, width %d", name, vocab, dim);
    if (in.d[0] > context)
        return pz_fail(PZ_ERR_ARG, "layer '%s': %d tokens do not fit a context of %d", name, in.d[0], context);
    pz_layer *l = nn_push(s, PZ_LAYER_EMBEDDING, name);
    if (!l) return PZ_ERR_NOMEM;
    l->vocab = vocab;
    l->context = context;
    l->init_std = init_std;
    l->out = pz_shape_seq(in.d[0], dim);
    l->n_params = ((int64_t)vocab + context) * dim;
    l->macs = pz_shape_numel(l->out);
    return PZ_OK;
}

pz_status pz_add_subspace_embedding(pz_seq *s, const char *name, int vocab, int context, int dim, int k, float init_std) {
    if (k < 1 || k > dim) return pz_fail(PZ_ERR_ARG, "layer '%s': a subspace of %d in a width of %d", name, k, dim);
    PZ_TRY(pz_add_embedding(s, name, vocab, context, dim, init_std));
    pz_layer *l = &s->layers[s->n - 1];
    l->k = k;
    l->n_params = ((int64_t)vocab + context) * k;
    l->macs = (int64_t)l->out.d[0] * k * dim;
    return PZ_OK;
}

static void embedding_alloc(pz_layer *l, layer_alloc *a) {
    const int C = l->k ? l->k : l->out.d[1];
    if (l->k) {
        l->sub = a->m->sub;
        if (!l->sub || l->sub->k != l->k || l->sub->dim != l->out.d[1]) a->oom = 1; /* built without its model's subspace */
        l->ws = nn_floats(a, (size_t)a->B * l->out.d[0] * l->k);
    }
    l->weight = nn_take_params(a, (int64_t)l->vocab * C, &l->dweight);
    l->bias = nn_take_params(a, (int64_t)l->context * C, &l->dbias);
    nn_normal(l->weight, (int64_t)l->vocab * C, l->init_std, &a->rng);
    nn_normal(l->bias, (int64_t)l->context * C, l->init_std, &a->rng);
}

static void embedding_fwd(pz_layer *l, const float *x, float *y, int B, int train) {
    (void)train;
    const int T = l->out.d[0];
    if (!l->k) {
        embedding_forward(y, x, l->weight, l->bias, B, T, l->out.d[1], l->vocab);
        return;
    }
    embedding_forward(l->ws, x, l->weight, l->bias, B, T, l->k, l->vocab);
    pz_subspace_rebuild(l->sub, l->ws, x, B, T, y);
}

static void embedding_bwd(pz_layer *l, const float *x, const float *y, const float *dy, float *dx, int B) {
    (void)y, (void)dx; /* token ids have no gradient */
    const int T = l->out.d[0];
    if (!l->k) {
        embedding_backward(l->dweight, l->dbias, dy, x, B, T, l->out.d[1], l->vocab);
        return;
    }
    pz_subspace_reduce(l->sub, dy, l->ws, (int64_t)B * T, 0.0f);
    embedding_backward(l->dweight, l->dbias, l->ws, x, B, T, l->k, l->vocab);
}

static void embedding_detail(const pz_layer *l, char *buf, size_t cap) {
    if (l->k) snprintf(buf, cap, "vocab %d, context %d, subspace %d", l->vocab, l->context, l->k);
    else snprintf(buf, cap, "vocab %d, context %d", l->vocab, l->context);
}

const pz_layer_ops pz_embedding_ops = {
    .name = "embedding", .alloc = embedding_alloc, .forward = embedding_fwd, .backward = embedding_bwd,
    .detail = embedding_detail,
};
