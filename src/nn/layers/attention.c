/* SPDX-License-Identifier: MIT */
/* attention.c — the core of causal multi-head self-attention: (T, 3C)
 * projected q | k | v -> (T, C). The projections around it (the fused qkv
 * and the output projection) are dense layers, so a GPT-2 attention is
 * dense(3C) -> attention -> dense(C). */
#include "nn/layer.h"
#include "kernels/kernels.h"

pz_status pz_add_attention(pz_seq *s, const char *name, int heads) {
    const pz_shape in = pz_seq_out(s);
    if (in.rank != 2 || in.d[1] % 3)
        return pz_fail(PZ_ERR_ARG, "layer '%s': attention takes (T, 3C), the projected queries, keys and values", name);
    const int C = in.d[1] / 3;
    if (heads < 1 || C % heads)
        return pz_fail(PZ_ERR_ARG, "layer '%s': %d heads do not divide the width %d", name, heads, C);
    pz_layer *l = nn_push(s, PZ_LAYER_ATTENTION, name);
    if (!l) return PZ_ERR_NOMEM;
    l->heads = heads;
    l->out = pz_shape_seq(in.d[0], C);
    /* scores and weighted values: 2 T^2 C per sample, the full square as
     * MFU counts it (the kernels compute about the causal half) */
    l->macs = 2 * (int64_t)in.d[0] * in.d[0] * C;
    return PZ_OK;
}

static void attention_alloc(pz_layer *l, layer_alloc *a) {
    const int T = l->in.d[0];
    if (!a->active) return; /* outside the stage's range: never runs */
    l->saved = nn_floats(a, (size_t)a->B * l->heads * T); /* each query's log-sum-exp */
}

static void attention_fwd(pz_layer *l, const float *x, float *y, int B, int train) {
    (void)train;
    attention_forward(y, l->saved, x, B, l->in.d[0], l->out.d[1], l->heads);
}

static void attention_bwd(pz_layer *l, const float *x, const float *y, const float *dy, float *dx, int B) {
    (void)y;
    if (dx) attention_backward(dx, dy, x, l->saved, B, l->in.d[0], l->out.d[1], l->heads);
}

static void attention_detail(const pz_layer *l, char *buf, size_t cap) { snprintf(buf, cap, "%d heads, causal", l->heads); }

const pz_layer_ops pz_attention_ops = {
    .name = "attention", .alloc = attention_alloc, .forward = attention_fwd, .backward = attention_bwd,
    .detail = attention_detail,
};
