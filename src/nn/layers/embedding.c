/* SPDX-License-Identifier: MIT */
/* embedding.c — token and learned position embeddings: (T) token ids ->
 * (T, C) = wte[token] + wpe[position]. Parameters: wte (V, C) as weight,
 * wpe (context, C) as bias; an input of T <= context tokens uses the first
 * T rows of wpe.
 * A subspace model's (pz_add_subspace_embedding, k = K): (T) -> (T, K), the
 * stream's coefficients, and the ids recorded in the model's subspace for
 * its lifts (layers/subspace.c). */
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
    nn_token_tables(l, vocab, context, dim, init_std);
    l->macs = pz_shape_numel(l->out);
    return PZ_OK;
}

void nn_token_tables(pz_layer *l, int vocab, int context, int dim, float init_std) {
    l->vocab = vocab;
    l->context = context;
    l->init_std = init_std;
    l->out = pz_shape_seq(l->in.d[0], dim);
    l->n_params = ((int64_t)vocab + context) * dim;
}

void nn_alloc_token_tables(pz_layer *l, layer_alloc *a) {
    const int C = l->out.d[1];
    l->weight = nn_take_params(a, (int64_t)l->vocab * C, &l->dweight);
    l->bias = nn_take_params(a, (int64_t)l->context * C, &l->dbias);
    nn_normal(l->weight, (int64_t)l->vocab * C, l->init_std, &a->rng);
    nn_normal(l->bias, (int64_t)l->context * C, l->init_std, &a->rng);
}

pz_status pz_add_subspace_embedding(pz_seq *s, const char *name, int vocab, int context, int k, float init_std) {
    PZ_TRY(pz_add_embedding(s, name, vocab, context, k, init_std));
    s->layers[s->n - 1].k = k;
    return PZ_OK;
}

static void embedding_alloc(pz_layer *l, layer_alloc *a) {
    if (l->k) {
        l->sub = a->m->sub;
        if (!l->sub || l->sub->k != l->k) a->oom = 1; /* built without its model's subspace */
    }
    nn_alloc_token_tables(l, a);
}

static void embedding_fwd(pz_layer *l, const float *x, float *y, int B, int train) {
    (void)train;
    if (l->sub) l->sub->tokens = x;
    embedding_forward(y, x, l->weight, l->bias, B, l->out.d[0], l->out.d[1], l->vocab);
}

static void embedding_bwd(pz_layer *l, const float *x, const float *y, const float *dy, float *dx, int B) {
    (void)y, (void)dx; /* token ids have no gradient */
    embedding_backward(l->dweight, l->dbias, dy, x, B, l->out.d[0], l->out.d[1], l->vocab);
}

static void embedding_detail(const pz_layer *l, char *buf, size_t cap) {
    snprintf(buf, cap, "vocab %d, context %d%s", l->vocab, l->context, l->k ? ", subspace" : "");
}

const pz_layer_ops pz_embedding_ops = {
    .name = "embedding", .alloc = embedding_alloc, .forward = embedding_fwd, .backward = embedding_bwd,
    .detail = embedding_detail,
};
