/* SPDX-License-Identifier: MIT */
/* pool.c — pooling over (C, H, W): max and average windows, and the global
 * average (C, H, W) -> (C, 1, 1). */
#include "nn/layer.h"
#include "kernels/kernels.h"

#include <stdlib.h>

static pz_status add_window(pz_seq *s, pz_layer_kind kind, const char *name, int k, int stride, int pad) {
    PZ_TRY(nn_check_window(s, name, k, stride, pad));
    if (kind == PZ_LAYER_MAXPOOL && 2 * pad > k)
        return pz_fail(PZ_ERR_ARG, "layer '%s': padding %d is more than half the window %d", name, pad, k);
    pz_layer *l = nn_push(s, kind, name);
    if (!l) return PZ_ERR_NOMEM;
    l->k = k, l->stride = stride, l->pad = pad;
    l->out = pz_shape_image(l->in.d[0], nn_window_out(l->in.d[1], k, stride, pad), nn_window_out(l->in.d[2], k, stride, pad));
    if (kind == PZ_LAYER_AVGPOOL) l->macs = pz_shape_numel(l->out) * k * k;
    return PZ_OK;
}

pz_status pz_add_maxpool(pz_seq *s, const char *name, int k, int stride, int pad) {
    return add_window(s, PZ_LAYER_MAXPOOL, name, k, stride, pad);
}

pz_status pz_add_avgpool(pz_seq *s, const char *name, int k, int stride, int pad) {
    return add_window(s, PZ_LAYER_AVGPOOL, name, k, stride, pad);
}

pz_status pz_add_global_avgpool(pz_seq *s, const char *name) {
    const pz_shape in = pz_seq_out(s);
    if (in.rank != 3) return pz_fail(PZ_ERR_ARG, "layer '%s': pooling needs an image (C, H, W) input", name);
    pz_layer *l = nn_push(s, PZ_LAYER_GLOBAL_AVGPOOL, name);
    if (!l) return PZ_ERR_NOMEM;
    l->out = pz_shape_image(in.d[0], 1, 1);
    l->macs = pz_shape_numel(in);
    return PZ_OK;
}

static void window_detail(const pz_layer *l, char *buf, size_t cap) {
    snprintf(buf, cap, "%dx%d s%d p%d", l->k, l->k, l->stride, l->pad);
}

/* ---- max ----------------------------------------------------------------- */
static void maxpool_alloc(pz_layer *l, layer_alloc *a) {
    l->argmax = calloc((size_t)a->B * (size_t)pz_shape_numel(l->out), sizeof(int32_t));
    if (!l->argmax) a->oom = 1;
}

static void maxpool_fwd(pz_layer *l, const float *x, float *y, int B, int train) {
    (void)train;
    maxpool2d_forward(y, l->argmax, x, B, l->in.d[0], l->in.d[1], l->in.d[2], l->k, l->stride, l->pad);
}

static void maxpool_bwd(pz_layer *l, const float *x, const float *y, const float *dy, float *dx, int B) {
    (void)x, (void)y;
    if (dx) maxpool2d_backward(dx, dy, l->argmax, B, l->in.d[0], l->in.d[1], l->in.d[2], l->k, l->stride, l->pad);
}

const pz_layer_ops pz_maxpool_ops = {
    .name = "maxpool", .alloc = maxpool_alloc, .forward = maxpool_fwd, .backward = maxpool_bwd, .detail = window_detail,
};

/* ---- average ------------------------------------------------------------- */
static void avgpool_fwd(pz_layer *l, const float *x, float *y, int B, int train) {
    (void)train;
    avgpool2d_forward(y, x, B, l->in.d[0], l->in.d[1], l->in.d[2], l->k, l->stride, l->pad);
}

static void avgpool_bwd(pz_layer *l, const float *x, const float *y, const float *dy, float *dx, int B) {
    (void)x, (void)y;
    if (dx) avgpool2d_backward(dx, dy, B, l->in.d[0], l->in.d[1], l->in.d[2], l->k, l->stride, l->pad);
}

const pz_layer_ops pz_avgpool_ops = {
    .name = "avgpool", .forward = avgpool_fwd, .backward = avgpool_bwd, .detail = window_detail,
};

/* ---- global average -------------------------------------------------------- */
static void gap_fwd(pz_layer *l, const float *x, float *y, int B, int train) {
    (void)train;
    global_avgpool_forward(y, x, B, l->in.d[0], l->in.d[1] * l->in.d[2]);
}

static void gap_bwd(pz_layer *l, const float *x, const float *y, const float *dy, float *dx, int B) {
    (void)x, (void)y;
    if (dx) global_avgpool_backward(dx, dy, B, l->in.d[0], l->in.d[1] * l->in.d[2]);
}

const pz_layer_ops pz_global_avgpool_ops = {.name = "global_avgpool", .forward = gap_fwd, .backward = gap_bwd};
