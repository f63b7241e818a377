/* SPDX-License-Identifier: MIT */
/* block.c — the CIFAR-style residual basic block: y = relu(main(x) +
 * shortcut(x)), main = conv3x3(stride)-bn-relu-conv3x3-bn, the shortcut a
 * 1x1-conv(stride)+bn projection when the shape changes, else identity. */
#include "nn/layer.h"
#include "kernels/kernels.h"

#include <stdlib.h>

pz_status pz_add_basic_block(pz_seq *s, const char *name, int oc, int stride) {
    const pz_shape in = pz_seq_out(s);
    if (in.rank != 3) return pz_fail(PZ_ERR_ARG, "block '%s': needs an image (C, H, W) input", name);
    pz_seq *main = calloc(1, sizeof *main), *sc = calloc(1, sizeof *sc);
    if (!main || !sc) {
        free(main), free(sc);
        return pz_fail(PZ_ERR_NOMEM, "out of memory building a model (block '%s')", name);
    }
    pz_seq_init(main, in);
    pz_seq_init(sc, in);
    pz_status st = PZ_OK;
    if (!st) st = pz_add_conv(main, "conv1", oc, 3, stride, 1, 0);
    if (!st) st = pz_add_batchnorm(main, "bn1");
    if (!st) st = pz_add_relu(main, "relu1");
    if (!st) st = pz_add_conv(main, "conv2", oc, 3, 1, 1, 0);
    if (!st) st = pz_add_batchnorm(main, "bn2");
    if (!st && (stride != 1 || oc != in.d[0])) {
        st = pz_add_conv(sc, "shortcut.conv", oc, 1, stride, 0, 0);
        /* where it costs nothing, the projection adds its input gradient to
         * the main path's (block_backward) */
        if (!st) sc->layers[0].dx_adds = conv2d_adds_cheaply(1, stride, 0);
        if (!st) st = pz_add_batchnorm(sc, "shortcut.bn");
    }
    pz_layer *l = st ? NULL : nn_push(s, PZ_LAYER_BLOCK, name);
    if (!l) {
        free(main->layers), free(sc->layers), free(main), free(sc);
        return st ? st : PZ_ERR_NOMEM;
    }
    l->main = main;
    l->shortcut = sc;
    l->out = pz_seq_out(main);
    for (int i = 0; i < main->n; i++) l->n_params += main->layers[i].n_params, l->macs += main->layers[i].macs;
    for (int i = 0; i < sc->n; i++) l->n_params += sc->layers[i].n_params, l->macs += sc->layers[i].macs;
    l->macs += pz_shape_numel(l->out); /* the residual add */
    return PZ_OK;
}

/* an identity block whose first convolution adds its input gradient in its
 * own pass, with the bits of adding after (conv2d_adds_exactly) */
static int identity_adds(const pz_layer *l) {
    const pz_layer *c = &l->main->layers[0];
    return !l->shortcut->n && c->kind == PZ_LAYER_CONV && conv2d_adds_exactly(c->k, c->stride, c->pad);
}

static void block_alloc(pz_layer *l, layer_alloc *a) {
    nn_alloc_seq(l->main, a);
    nn_alloc_seq(l->shortcut, a);
    l->dz = nn_floats(a, (size_t)a->B * pz_shape_numel(l->out));
    /* the main path's input gradient, apart, unless the projection adds its
     * own to it in dx, or the main path adds its own to the identity's */
    if (!(l->shortcut->n && l->shortcut->layers[0].dx_adds) && !identity_adds(l))
        l->dmain = nn_floats(a, (size_t)a->B * pz_shape_numel(l->in));
}

static void block_forward(pz_layer *l, const float *x, float *y, int B, int train) {
    const float *sc = x;
    if (l->shortcut->n) {
        pz_seq_forward(l->shortcut, 0, l->shortcut->n, x, B, train);
        sc = l->shortcut->act[l->shortcut->n - 1];
    }
    /* the main path's last batch norm, the add and the ReLU in one pass */
    if (pz_seq_forward_add_relu(l->main, x, sc, y, B, train)) return;
    pz_seq_forward(l->main, 0, l->main->n, x, B, train);
    add_relu_forward(y, l->main->act[l->main->n - 1], sc, (size_t)B * pz_shape_numel(l->out));
}

static void block_backward(pz_layer *l, const float *x, const float *y, const float *dy, float *dx, int B) {
    const size_t n_in = (size_t)B * pz_shape_numel(l->in), n_out = (size_t)B * pz_shape_numel(l->out);
    if (dx && identity_adds(l)) {
        /* dz (through the final relu) straight into dx, the identity's
         * share; the main path reads it (its last layer, first) and its
         * first convolution adds its own input gradient there (last): the
         * bits of dz + dmain, two passes fewer */
        relu_backward(dx, dy, y, n_out);
        pz_seq_backward_add(l->main, x, dx, dx, dx, B);
        return;
    }
    relu_backward(l->dz, dy, y, n_out); /* through the final relu */
    /* a projection that adds (dx_adds) takes the main path's input gradient
     * in dx and adds its own (the same sums as adding the two after); else
     * the main path's goes to dmain and is added to the shortcut's (written
     * by its projection, or dz itself) */
    const int adds = l->shortcut->n && l->shortcut->layers[0].dx_adds;
    pz_seq_backward(l->main, 0, l->main->n, x, l->dz, adds ? dx : dx ? l->dmain : NULL, B);
    if (l->shortcut->n) pz_seq_backward(l->shortcut, 0, l->shortcut->n, x, l->dz, dx, B);
    if (dx && !adds) add_forward(dx, l->shortcut->n ? dx : l->dz, l->dmain, n_in);
}

static int block_children(const pz_layer *l, pz_seq *kids[2]) {
    kids[0] = l->main, kids[1] = l->shortcut;
    return 2;
}

static void block_detail(const pz_layer *l, char *buf, size_t cap) {
    snprintf(buf, cap, "%s", l->shortcut->n ? "proj" : "identity");
}

const pz_layer_ops pz_block_ops = {
    .name = "basic_block", .alloc = block_alloc, .forward = block_forward, .backward = block_backward,
    .children = block_children, .detail = block_detail,
};
