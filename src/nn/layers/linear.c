/* linear.c — a fully connected layer over the whole sample: (n, 1, 1) or
 * any (C, H, W) read as n = C*H*W inputs, giving (OC, 1, 1). */
#include "nn/layer.h"
#include "kernels/kernels.h"

pz_status pz_add_linear(pz_seq *s, const char *name, int out, int bias) {
    if (out < 1) return pz_fail(PZ_ERR_ARG, "layer '%s': %d outputs", name, out);
    pz_layer *l = nn_push(s, PZ_LAYER_LINEAR, name);
    if (!l) return PZ_ERR_NOMEM;
    const int64_t in = pz_shape_numel(l->in);
    l->has_bias = bias;
    l->out = pz_shape_image(out, 1, 1);
    l->n_params = (int64_t)out * in + (bias ? out : 0);
    l->macs = (int64_t)out * in;
    return PZ_OK;
}

static void linear_alloc(pz_layer *l, layer_alloc *a) {
    const int in = (int)pz_shape_numel(l->in), OC = l->out.d[0];
    const int64_t nw = (int64_t)OC * in;
    l->weight = nn_take_params(a, nw, &l->dweight);
    nn_kaiming_normal(l->weight, nw, in, &a->rng);
    if (l->has_bias) l->bias = nn_take_params(a, OC, &l->dbias);
}

static void linear_fwd(pz_layer *l, const float *x, float *y, int B, int train) {
    (void)train;
    linear_forward(y, x, l->weight, l->bias, B, (int)pz_shape_numel(l->in), l->out.d[0]);
}

static void linear_bwd(pz_layer *l, const float *x, const float *y, const float *dy, float *dx, int B) {
    (void)y;
    linear_backward(dx, l->dweight, l->dbias, dy, x, l->weight, B, (int)pz_shape_numel(l->in), l->out.d[0]);
}

static void linear_detail(const pz_layer *l, char *buf, size_t cap) { snprintf(buf, cap, "%s", l->has_bias ? "+b" : ""); }

const pz_layer_ops pz_linear_ops = {
    .name = "linear", .alloc = linear_alloc, .forward = linear_fwd, .backward = linear_bwd, .detail = linear_detail,
};
