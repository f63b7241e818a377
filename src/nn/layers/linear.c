/* SPDX-License-Identifier: MIT */
/* linear.c — a fully connected layer. Over an image model's sample: (n, 1,
 * 1), or any (C, H, W) read as n = C*H*W inputs, gives (OC, 1, 1) (Kaiming
 * normal weights). Over a sequence (T, C) (pz_add_dense): the same weights
 * at every position, (T, C) -> (T, OC). */
#include "nn/layer.h"
#include "kernels/kernels.h"

/* inputs per row: the whole sample, or one position's C */
static int row_in(pz_shape in) { return in.rank == 2 ? in.d[1] : (int)pz_shape_numel(in); }

static pz_status add(pz_seq *s, const char *name, int out, int bias, float init_std) {
    if (out < 1) return pz_fail(PZ_ERR_ARG, "layer '%s': %d outputs", name, out);
    pz_layer *l = nn_push(s, PZ_LAYER_LINEAR, name);
    if (!l) return PZ_ERR_NOMEM;
    const int64_t in = row_in(l->in);
    l->has_bias = bias;
    l->init_std = init_std;
    l->out = l->in.rank == 2 ? pz_shape_seq(l->in.d[0], out) : pz_shape_image(out, 1, 1);
    l->n_params = (int64_t)out * in + (bias ? out : 0);
    l->macs = (int64_t)out * in * (l->in.rank == 2 ? l->in.d[0] : 1);
    return PZ_OK;
}

pz_status pz_add_linear(pz_seq *s, const char *name, int out, int bias) {
    if (pz_seq_out(s).rank == 2) return pz_fail(PZ_ERR_ARG, "layer '%s': over a sequence, use a dense layer", name);
    return add(s, name, out, bias, 0.0f);
}

pz_status pz_add_dense(pz_seq *s, const char *name, int out, int bias, float init_std) {
    if (pz_seq_out(s).rank != 2) return pz_fail(PZ_ERR_ARG, "layer '%s': a dense layer takes a sequence (T, C)", name);
    return add(s, name, out, bias, init_std);
}

static void linear_alloc(pz_layer *l, layer_alloc *a) {
    const int in = row_in(l->in), OC = l->out.rank == 2 ? l->out.d[1] : l->out.d[0];
    const int64_t nw = (int64_t)OC * in;
    l->weight = nn_take_params(a, nw, &l->dweight);
    if (l->init_std > 0.0f) nn_normal(l->weight, nw, l->init_std, &a->rng);
    else if (l->zero_init) { /* stays 0: the parameter array starts zeroed */ }
    else nn_kaiming_normal(l->weight, nw, in, &a->rng);
    if (l->has_bias) l->bias = nn_take_params(a, OC, &l->dbias); /* zero: the parameter array starts zeroed */
}

static int out_width(const pz_layer *l) { return l->out.rank == 2 ? l->out.d[1] : l->out.d[0]; }

static void linear_fwd(pz_layer *l, const float *x, float *y, int B, int train) {
    (void)train;
    linear_forward(y, x, l->weight, l->bias, (int)nn_rows(l->in, B), row_in(l->in), out_width(l));
}

static void linear_fwd_add(pz_layer *l, const float *x, const float *res, float *y, int B, int train) {
    (void)train;
    linear_forward_add(y, x, l->weight, l->bias, res, (int)nn_rows(l->in, B), row_in(l->in), out_width(l));
}

static void linear_bwd(pz_layer *l, const float *x, const float *y, const float *dy, float *dx, int B) {
    (void)y;
    linear_backward(dx, l->dweight, l->dbias, dy, x, l->weight, (int)nn_rows(l->in, B), row_in(l->in), out_width(l));
}

static void linear_fwd_gelu(pz_layer *l, const float *x, float *h, float *y, int B, int train) {
    (void)train;
    linear_forward_gelu(h, y, x, l->weight, l->bias, (int)nn_rows(l->in, B), row_in(l->in), out_width(l));
}

static void linear_bwd_gelu(pz_layer *l, const float *x, const float *h, const float *dy, float *dx, int B) {
    linear_backward_gelu(dx, l->dweight, l->dbias, dy, x, l->weight, h, (int)nn_rows(l->in, B), row_in(l->in),
                         out_width(l));
}

static void linear_detail(const pz_layer *l, char *buf, size_t cap) { snprintf(buf, cap, "%s", l->has_bias ? "+b" : ""); }

const pz_layer_ops pz_linear_ops = {
    .name = "linear", .alloc = linear_alloc, .forward = linear_fwd, .backward = linear_bwd,
    .forward_add = linear_fwd_add, .forward_gelu = linear_fwd_gelu, .backward_gelu = linear_bwd_gelu, .detail = linear_detail,
};
