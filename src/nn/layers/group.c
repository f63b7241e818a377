/* SPDX-License-Identifier: MIT */
/* group.c — layers that hold a list of layers: a group, y = main(x) (a
 * transformer block, one cut point in the pipeline), and a residual, y = x
 * + main(x) (pre-norm attention and MLP branches). */
#include "nn/layer.h"
#include "kernels/kernels.h"

#include <stdlib.h>
#include <string.h>

pz_seq *pz_begin_inner(pz_seq *s, const char *name) {
    pz_seq *inner = calloc(1, sizeof *inner);
    if (!inner) {
        pz_fail(PZ_ERR_NOMEM, "out of memory building a model (layer '%s')", name);
        return NULL;
    }
    pz_seq_init(inner, pz_seq_out(s));
    return inner;
}

static void drop(pz_seq *inner) {
    if (!inner) return;
    for (int i = 0; i < inner->n; i++) {
        pz_layer *l = &inner->layers[i];
        if (l->main) drop(l->main);
        if (l->shortcut) drop(l->shortcut);
    }
    free(inner->layers);
    free(inner);
}

static pz_status end(pz_seq *s, pz_layer_kind kind, const char *name, pz_seq *inner) {
    if (!inner) return PZ_ERR_NOMEM; /* pz_begin_inner failed and said so */
    if (!inner->n) {
        drop(inner);
        return pz_fail(PZ_ERR_ARG, "layer '%s' holds no layers", name);
    }
    if (kind == PZ_LAYER_RESIDUAL && !pz_shape_equal(pz_seq_out(inner), inner->in)) {
        char a[48], b[48];
        pz_fail(PZ_ERR_ARG, "residual '%s': its branch maps %s to %s, not to the same shape", name,
                pz_shape_str(inner->in, a, sizeof a), pz_shape_str(pz_seq_out(inner), b, sizeof b));
        drop(inner);
        return PZ_ERR_ARG;
    }
    pz_layer *l = nn_push(s, kind, name);
    if (!l) {
        drop(inner);
        return PZ_ERR_NOMEM;
    }
    l->main = inner;
    l->out = pz_seq_out(inner);
    for (int i = 0; i < inner->n; i++) l->n_params += inner->layers[i].n_params, l->macs += inner->layers[i].macs;
    if (kind == PZ_LAYER_RESIDUAL) l->macs += pz_shape_numel(l->out);
    return PZ_OK;
}

pz_status pz_end_group(pz_seq *s, const char *name, pz_seq *inner) { return end(s, PZ_LAYER_GROUP, name, inner); }
pz_status pz_end_residual(pz_seq *s, const char *name, pz_seq *inner) { return end(s, PZ_LAYER_RESIDUAL, name, inner); }

static int inner_children(const pz_layer *l, pz_seq *kids[2]) {
    kids[0] = l->main;
    return 1;
}

/* the inner layers' names, joined by '+' */
static void inner_detail(const pz_layer *l, char *buf, size_t cap) {
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; i < l->main->n && n < cap; i++) {
        const int w = snprintf(buf + n, cap - n, "%s%s", i ? "+" : "", l->main->layers[i].name);
        if (w < 0) break;
        n += (size_t)w;
    }
}

/* ---- group ----------------------------------------------------------------- */
static void group_alloc(pz_layer *l, layer_alloc *a) { nn_alloc_seq(l->main, a); }

/* the last layer writes y itself where nothing reads its own output back
 * (a transformer block's MLP residual), else y is a copy of it */
static void group_fwd(pz_layer *l, const float *x, float *y, int B, int train) {
    if (pz_seq_forward_into(l->main, x, y, B, train)) return;
    pz_seq_forward(l->main, 0, l->main->n, x, B, train);
    memcpy(y, l->main->act[l->main->n - 1], sizeof(float) * (size_t)B * pz_shape_numel(l->out));
}

static void group_bwd(pz_layer *l, const float *x, const float *y, const float *dy, float *dx, int B) {
    (void)y;
    pz_seq_backward(l->main, 0, l->main->n, x, dy, dx, B);
}

const pz_layer_ops pz_group_ops = {
    .name = "group", .alloc = group_alloc, .forward = group_fwd, .backward = group_bwd, .children = inner_children,
    .detail = inner_detail,
};

/* ---- residual ---------------------------------------------------------------- */
static void residual_alloc(pz_layer *l, layer_alloc *a) { nn_alloc_seq(l->main, a); }

int pz_residual_add_fused(const pz_layer *l) {
    const pz_seq *m = l->kind == PZ_LAYER_RESIDUAL ? l->main : NULL;
    return m && m->n && pz_layer_ops_of(m->layers[m->n - 1].kind)->forward_add && pz_layer_ops_of(m->layers[0].kind)->backward_add;
}

/* the branch's last layer adds x as it writes y where it can (a dense
 * layer: in its product's epilogue), else the add is a pass of its own */
static void residual_fwd(pz_layer *l, const float *x, float *y, int B, int train) {
    if (pz_seq_forward_add(l->main, x, x, y, B, train)) return;
    pz_seq_forward(l->main, 0, l->main->n, x, B, train);
    add_forward(y, x, l->main->act[l->main->n - 1], (size_t)B * pz_shape_numel(l->out));
}

/* dx = dy + the branch's input gradient: the branch's first layer adds dy
 * as it writes dx where it can (a layer norm), else after it */
static void residual_bwd(pz_layer *l, const float *x, const float *y, const float *dy, float *dx, int B) {
    (void)y;
    if (dx) pz_seq_backward_add(l->main, x, dy, dy, dx, B);
    else pz_seq_backward(l->main, 0, l->main->n, x, dy, NULL, B);
}

const pz_layer_ops pz_residual_ops = {
    .name = "residual", .alloc = residual_alloc, .forward = residual_fwd, .backward = residual_bwd,
    .children = inner_children, .detail = inner_detail,
};
