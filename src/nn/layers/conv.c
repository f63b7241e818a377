/* SPDX-License-Identifier: MIT */
/* conv.c — 2-D convolution over (C, H, W), im2col + GEMM (kernels/conv.c). */
#include "nn/layer.h"
#include "kernels/kernels.h"

#include <string.h>

pz_status pz_add_conv(pz_seq *s, const char *name, int oc, int k, int stride, int pad, int bias) {
    if (oc < 1) return pz_fail(PZ_ERR_ARG, "layer '%s': %d output channels", name, oc);
    PZ_TRY(nn_check_window(s, name, k, stride, pad));
    pz_layer *l = nn_push(s, PZ_LAYER_CONV, name);
    if (!l) return PZ_ERR_NOMEM;
    const pz_shape in = l->in;
    l->k = k, l->stride = stride, l->pad = pad, l->has_bias = bias;
    l->out = pz_shape_image(oc, nn_window_out(in.d[1], k, stride, pad), nn_window_out(in.d[2], k, stride, pad));
    l->n_params = (int64_t)oc * in.d[0] * k * k + (bias ? oc : 0);
    l->macs = (int64_t)oc * l->out.d[1] * l->out.d[2] * in.d[0] * k * k;
    return PZ_OK;
}

static void conv_alloc(pz_layer *l, layer_alloc *a) {
    const int C = l->in.d[0], OC = l->out.d[0], K = l->k;
    const int64_t nw = (int64_t)OC * C * K * K;
    l->weight = nn_take_params(a, nw, &l->dweight);
    nn_kaiming_normal(l->weight, nw, C * K * K, &a->rng);
    if (l->has_bias) l->bias = nn_take_params(a, OC, &l->dbias);
    /* a layer outside the allocated range never runs: no workspace */
    if (a->active) l->ws = nn_floats(a, conv2d_workspace_floats(C, l->in.d[1], l->in.d[2], OC, K, l->stride, l->pad));
}

static void conv_forward(pz_layer *l, const float *x, float *y, int B, int train) {
    (void)train;
    conv2d_forward(y, l->ws, x, l->weight, l->bias, B, l->in.d[0], l->in.d[1], l->in.d[2], l->out.d[0], l->k, l->stride,
                   l->pad);
}

static void conv_backward(pz_layer *l, const float *x, const float *y, const float *dy, float *dx, int B) {
    (void)y;
    (l->dx_adds ? conv2d_backward_add : conv2d_backward)(dx, l->dweight, l->dbias, l->ws, dy, x, l->weight, B,
                                                          l->in.d[0], l->in.d[1], l->in.d[2], l->out.d[0], l->k,
                                                          l->stride, l->pad);
}

/* dx = the input gradient + dres, the bits of conv_backward and
 * add_forward after: added in the kernels' pass where that keeps them
 * (conv2d_adds_exactly), there in place when dres is dx; else written and
 * added after (dres must then not be dx) */
static void conv_backward_add(pz_layer *l, const float *x, const float *y, const float *dy, const float *dres,
                              float *dx, int B) {
    const size_t n = (size_t)B * pz_shape_numel(l->in);
    if (conv2d_adds_exactly(l->k, l->stride, l->pad)) {
        if (dres != dx) memcpy(dx, dres, sizeof(float) * n);
        conv2d_backward_add(dx, l->dweight, l->dbias, l->ws, dy, x, l->weight, B, l->in.d[0], l->in.d[1], l->in.d[2],
                            l->out.d[0], l->k, l->stride, l->pad);
        return;
    }
    conv_backward(l, x, y, dy, dx, B);
    add_forward(dx, dres, dx, n);
}

static void conv_detail(const pz_layer *l, char *buf, size_t cap) {
    snprintf(buf, cap, "%dx%d s%d p%d%s", l->k, l->k, l->stride, l->pad, l->has_bias ? " +b" : "");
}

const pz_layer_ops pz_conv_ops = {
    .name = "conv", .alloc = conv_alloc, .forward = conv_forward, .backward = conv_backward,
    .backward_add = conv_backward_add, .detail = conv_detail,
};
