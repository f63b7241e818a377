/* SPDX-License-Identifier: MIT */
/* tied_head.c — a language model's output: (T, C) -> (T, V) logits through
 * the token table of the model's embedding (GPT-2's tied weights): the head
 * has no parameters of its own, and its gradient accumulates into the
 * embedding's. That gradient is computed whole into the layer's scratch
 * (ws, V x C) and then added: a pipeline whose embedding sits on another
 * stage sends ws there and adds it the same way, so the sums are the same
 * bit for bit. */
#include "nn/layer.h"
#include "kernels/kernels.h"

#include <string.h>

pz_status pz_add_tied_head(pz_seq *s, const char *name, const char *embedding) {
    const pz_shape in = pz_seq_out(s);
    int at = -1;
    for (int i = 0; i < s->n; i++)
        if ((s->layers[i].kind == PZ_LAYER_EMBEDDING || s->layers[i].kind == PZ_LAYER_SUBSPACE) && !strcmp(s->layers[i].name, embedding))
            at = i; /* an embedding's token table, or a subspace lift's */
    if (at < 0) return pz_fail(PZ_ERR_ARG, "layer '%s': no embedding layer '%s' before it to tie to", name, embedding);
    const pz_layer *e = &s->layers[at];
    if (in.rank != 2 || in.d[1] != e->out.d[1])
        return pz_fail(PZ_ERR_ARG, "layer '%s': takes (T, %d) like the embedding '%s'", name, e->out.d[1], embedding);
    const int V = e->vocab;
    pz_layer *l = nn_push(s, PZ_LAYER_TIED_HEAD, name);
    if (!l) return PZ_ERR_NOMEM;
    l->k = at;
    l->vocab = V;
    l->out = pz_shape_seq(in.d[0], V);
    l->macs = (int64_t)in.d[0] * in.d[1] * V;
    return PZ_OK;
}

static void head_alloc(pz_layer *l, layer_alloc *a) {
    /* the embedding comes first in the top-level list: its table exists */
    const pz_layer *e = &a->m->net.layers[l->k];
    l->weight = e->weight, l->dweight = e->dweight;
    if (a->active) l->ws = nn_floats(a, (size_t)l->vocab * l->in.d[1]);
}

static void head_fwd(pz_layer *l, const float *x, float *y, int B, int train) {
    (void)train;
    linear_forward(y, x, l->weight, NULL, (int)nn_rows(l->in, B), l->in.d[1], l->vocab);
}

static void head_bwd(pz_layer *l, const float *x, const float *y, const float *dy, float *dx, int B) {
    (void)y;
    const size_t n = (size_t)l->vocab * l->in.d[1];
    memset(l->ws, 0, sizeof(float) * n);
    linear_backward(dx, l->ws, NULL, dy, x, l->weight, (int)nn_rows(l->in, B), l->in.d[1], l->vocab);
    for (size_t i = 0; i < n; i++) l->dweight[i] += l->ws[i];
}

static void head_detail(const pz_layer *l, char *buf, size_t cap) { snprintf(buf, cap, "tied to #%d", l->k); }

const pz_layer_ops pz_tied_head_ops = {
    .name = "tied_head", .alloc = head_alloc, .forward = head_fwd, .backward = head_bwd, .detail = head_detail,
};
