/* model.c — building a model as a list of layers, allocating its parameters
 * in one array (llm.c style: every layer points into it), and running the
 * list forward and backward over any range of top-level layers. */
#include "nn.h"
#include "kernels/kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------- */
/* building */

void pz_seq_init(pz_seq *s, pz_shape in) {
    memset(s, 0, sizeof *s);
    s->in = in;
}

pz_shape pz_seq_out(const pz_seq *s) { return s->n ? s->layers[s->n - 1].out : s->in; }

static pz_layer *push(pz_seq *s, pz_layer_kind kind, const char *name) {
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 8;
        pz_layer *nl = realloc(s->layers, sizeof(pz_layer) * s->cap);
        if (!nl) {
            s->cap = s->n;
            pz_fail(PZ_ERR_NOMEM, "out of memory building a model (layer '%s')", name);
            return NULL;
        }
        s->layers = nl;
    }
    pz_layer *l = &s->layers[s->n++];
    memset(l, 0, sizeof *l);
    l->kind = kind;
    snprintf(l->name, sizeof l->name, "%s", name);
    l->in = s->n > 1 ? s->layers[s->n - 2].out : s->in;
    l->out = l->in;
    return l;
}

static int pool_out(int n, int k, int stride, int pad) { return (n + 2 * pad - k) / stride + 1; }

static pz_status check_window(pz_seq *s, const char *name, int k, int stride, int pad) {
    pz_shape in = pz_seq_out(s);
    if (k < 1 || stride < 1 || pad < 0)
        return pz_fail(PZ_ERR_ARG, "layer '%s': kernel %d stride %d pad %d are not valid", name, k, stride, pad);
    if (in.h + 2 * pad < k || in.w + 2 * pad < k)
        return pz_fail(PZ_ERR_ARG, "layer '%s': a %dx%d window does not fit a %dx%d input", name, k, k, in.h, in.w);
    return PZ_OK;
}

pz_status pz_add_conv(pz_seq *s, const char *name, int oc, int k, int stride, int pad, int bias) {
    if (oc < 1) return pz_fail(PZ_ERR_ARG, "layer '%s': %d output channels", name, oc);
    PZ_TRY(check_window(s, name, k, stride, pad));
    pz_layer *l = push(s, PZ_LAYER_CONV, name);
    if (!l) return PZ_ERR_NOMEM;
    l->k = k, l->stride = stride, l->pad = pad, l->has_bias = bias;
    l->out = (pz_shape){oc, pool_out(l->in.h, k, stride, pad), pool_out(l->in.w, k, stride, pad)};
    l->n_params = (int64_t)oc * l->in.c * k * k + (bias ? oc : 0);
    l->macs = (int64_t)oc * l->out.h * l->out.w * l->in.c * k * k;
    return PZ_OK;
}

pz_status pz_add_batchnorm(pz_seq *s, const char *name) {
    pz_layer *l = push(s, PZ_LAYER_BATCHNORM, name);
    if (!l) return PZ_ERR_NOMEM;
    l->n_params = 2 * l->in.c;
    l->macs = pz_shape_numel(l->in);
    return PZ_OK;
}

pz_status pz_add_relu(pz_seq *s, const char *name) {
    if (!push(s, PZ_LAYER_RELU, name)) return PZ_ERR_NOMEM;
    return PZ_OK;
}

pz_status pz_add_maxpool(pz_seq *s, const char *name, int k, int stride, int pad) {
    PZ_TRY(check_window(s, name, k, stride, pad));
    if (2 * pad > k) return pz_fail(PZ_ERR_ARG, "layer '%s': padding %d is more than half the window %d", name, pad, k);
    pz_layer *l = push(s, PZ_LAYER_MAXPOOL, name);
    if (!l) return PZ_ERR_NOMEM;
    l->k = k, l->stride = stride, l->pad = pad;
    l->out = (pz_shape){l->in.c, pool_out(l->in.h, k, stride, pad), pool_out(l->in.w, k, stride, pad)};
    return PZ_OK;
}

pz_status pz_add_avgpool(pz_seq *s, const char *name, int k, int stride, int pad) {
    PZ_TRY(check_window(s, name, k, stride, pad));
    pz_layer *l = push(s, PZ_LAYER_AVGPOOL, name);
    if (!l) return PZ_ERR_NOMEM;
    l->k = k, l->stride = stride, l->pad = pad;
    l->out = (pz_shape){l->in.c, pool_out(l->in.h, k, stride, pad), pool_out(l->in.w, k, stride, pad)};
    l->macs = pz_shape_numel(l->out) * k * k;
    return PZ_OK;
}

pz_status pz_add_global_avgpool(pz_seq *s, const char *name) {
    pz_layer *l = push(s, PZ_LAYER_GLOBAL_AVGPOOL, name);
    if (!l) return PZ_ERR_NOMEM;
    l->out = (pz_shape){l->in.c, 1, 1};
    l->macs = pz_shape_numel(l->in);
    return PZ_OK;
}

pz_status pz_add_flatten(pz_seq *s, const char *name) {
    pz_layer *l = push(s, PZ_LAYER_FLATTEN, name);
    if (!l) return PZ_ERR_NOMEM;
    l->out = (pz_shape){(int)pz_shape_numel(l->in), 1, 1};
    return PZ_OK;
}

pz_status pz_add_linear(pz_seq *s, const char *name, int out, int bias) {
    if (out < 1) return pz_fail(PZ_ERR_ARG, "layer '%s': %d outputs", name, out);
    pz_layer *l = push(s, PZ_LAYER_LINEAR, name);
    if (!l) return PZ_ERR_NOMEM;
    int in = (int)pz_shape_numel(l->in);
    l->has_bias = bias;
    l->out = (pz_shape){out, 1, 1};
    l->n_params = (int64_t)out * in + (bias ? out : 0);
    l->macs = (int64_t)out * in;
    return PZ_OK;
}

pz_status pz_add_basic_block(pz_seq *s, const char *name, int oc, int stride) {
    pz_shape in = pz_seq_out(s);
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
    if (!st && (stride != 1 || oc != in.c)) {
        st = pz_add_conv(sc, "shortcut.conv", oc, 1, stride, 0, 0);
        if (!st) st = pz_add_batchnorm(sc, "shortcut.bn");
    }
    if (st) {
        free(main->layers), free(sc->layers), free(main), free(sc);
        return st;
    }
    pz_layer *l = push(s, PZ_LAYER_BLOCK, name);
    if (!l) {
        free(main->layers), free(sc->layers), free(main), free(sc);
        return PZ_ERR_NOMEM;
    }
    l->main = main;
    l->shortcut = sc;
    l->out = pz_seq_out(main);
    for (int i = 0; i < main->n; i++) l->n_params += main->layers[i].n_params, l->macs += main->layers[i].macs;
    for (int i = 0; i < sc->n; i++) l->n_params += sc->layers[i].n_params, l->macs += sc->layers[i].macs;
    l->macs += pz_shape_numel(l->out); /* the residual add */
    return PZ_OK;
}

/* ------------------------------------------------------------------------- */
/* allocation and initialization */

typedef struct {
    pz_model *m;
    int64_t p, b; /* next parameter / buffer offset */
    pz_rng rng;
    int B;        /* batch rows for the buffers of the layer being allocated */
    int depth, from, to; /* top-level layers [from, to) get batch_max rows, the others one */
    int active;          /* the layer being allocated is in [from, to) */
    int oom;       /* an allocation failed: the model is freed and the build fails */
} alloc_ctx;

static float *floats(alloc_ctx *a, size_t n) {
    float *f = pz_floats_try(n);
    if (!f) a->oom = 1;
    return f;
}

static void kaiming_normal(float *w, int64_t n, int fan_in, pz_rng *rng) {
    const float sd = sqrtf(2.0f / (float)fan_in);
    for (int64_t i = 0; i < n; i++) w[i] = sd * pz_rng_normal(rng);
}

static void alloc_seq(pz_seq *s, alloc_ctx *a);

static void alloc_layer(pz_layer *l, alloc_ctx *a) {
    pz_model *m = a->m;
    const int B = a->B;
    switch (l->kind) {
    case PZ_LAYER_CONV: {
        const int64_t nw = (int64_t)l->out.c * l->in.c * l->k * l->k;
        l->weight = m->params + a->p, l->dweight = m->grads + a->p;
        kaiming_normal(l->weight, nw, l->in.c * l->k * l->k, &a->rng);
        a->p += nw;
        if (l->has_bias) l->bias = m->params + a->p, l->dbias = m->grads + a->p, a->p += l->out.c;
        /* a layer outside the allocated range never runs: no workspace */
        if (a->active) l->ws = floats(a, conv2d_workspace_floats(l->in.c, l->in.h, l->in.w, l->out.c, l->k, l->stride, l->pad));
        break;
    }
    case PZ_LAYER_LINEAR: {
        const int in = (int)pz_shape_numel(l->in);
        const int64_t nw = (int64_t)l->out.c * in;
        l->weight = m->params + a->p, l->dweight = m->grads + a->p;
        kaiming_normal(l->weight, nw, in, &a->rng);
        a->p += nw;
        if (l->has_bias) l->bias = m->params + a->p, l->dbias = m->grads + a->p, a->p += l->out.c;
        break;
    }
    case PZ_LAYER_BATCHNORM: {
        const int C = l->in.c;
        l->weight = m->params + a->p, l->dweight = m->grads + a->p;
        l->bias = l->weight + C, l->dbias = l->dweight + C;
        for (int c = 0; c < C; c++) l->weight[c] = 1.0f, l->bias[c] = 0.0f;
        a->p += 2 * C;
        l->run_mean = m->buffers + a->b, l->run_var = l->run_mean + C;
        for (int c = 0; c < C; c++) l->run_mean[c] = 0.0f, l->run_var[c] = 1.0f;
        a->b += 2 * C;
        l->mean = floats(a, 2 * (size_t)C);
        if (l->mean) l->rstd = l->mean + C;
        break;
    }
    case PZ_LAYER_MAXPOOL:
        l->argmax = calloc((size_t)B * (size_t)pz_shape_numel(l->out), sizeof(int32_t));
        if (!l->argmax) a->oom = 1;
        break;
    case PZ_LAYER_BLOCK:
        alloc_seq(l->main, a);
        alloc_seq(l->shortcut, a);
        l->dz = floats(a, (size_t)B * pz_shape_numel(l->out));
        l->dmain = floats(a, (size_t)B * pz_shape_numel(l->in));
        break;
    default:
        break;
    }
}

static int64_t count_buffers(const pz_seq *s) {
    int64_t n = 0;
    for (int i = 0; i < s->n; i++) {
        const pz_layer *l = &s->layers[i];
        if (l->kind == PZ_LAYER_BATCHNORM) n += 2 * l->in.c;
        if (l->kind == PZ_LAYER_BLOCK) n += count_buffers(l->main) + count_buffers(l->shortcut);
    }
    return n;
}

static void alloc_seq(pz_seq *s, alloc_ctx *a) {
    const int top = a->depth++ == 0;
    int64_t biggest = pz_shape_numel(s->in);
    s->act = calloc(s->n ? s->n : 1, sizeof(float *));
    if (!s->act) {
        a->oom = 1;
        a->depth--;
        return;
    }
    for (int i = 0; i < s->n; i++) {
        pz_layer *l = &s->layers[i];
        if (top) a->active = i >= a->from && i < a->to, a->B = a->active ? a->m->batch_max : 1;
        alloc_layer(l, a);
        s->act[i] = floats(a, (size_t)a->B * pz_shape_numel(l->out));
        if (pz_shape_numel(l->out) > biggest) biggest = pz_shape_numel(l->out);
    }
    if (top) a->B = a->m->batch_max;
    s->grad[0] = floats(a, (size_t)a->B * biggest);
    s->grad[1] = floats(a, (size_t)a->B * biggest);
    a->depth--;
}

pz_status pz_model_finalize(pz_model *m, int batch_max, int n_classes, uint64_t seed) {
    return pz_model_finalize_range(m, batch_max, n_classes, seed, 0, m->net.n);
}

pz_status pz_model_finalize_range(pz_model *m, int batch_max, int n_classes, uint64_t seed, int from, int to) {
    if (batch_max < 1) return pz_fail(PZ_ERR_ARG, "batch size must be at least 1, got %d", batch_max);
    pz_shape out = pz_seq_out(&m->net);
    if (pz_shape_numel(out) != n_classes)
        return pz_fail(PZ_ERR_ARG, "model ends with %lld outputs but the data has %d classes",
                       (long long)pz_shape_numel(out), n_classes);
    m->batch_max = batch_max;
    m->n_classes = n_classes;
    m->n_params = 0;
    for (int i = 0; i < m->net.n; i++) m->n_params += m->net.layers[i].n_params;
    m->n_buffers = count_buffers(&m->net);
    alloc_ctx a = {.m = m, .B = batch_max, .from = from, .to = to, .active = 1};
    m->params = floats(&a, (size_t)m->n_params);
    m->grads = floats(&a, (size_t)m->n_params);
    m->buffers = floats(&a, (size_t)m->n_buffers);
    m->dlogits = floats(&a, (size_t)batch_max * n_classes);
    pz_rng_seed(&a.rng, seed);
    if (!a.oom) alloc_seq(&m->net, &a);
    if (a.oom) {
        pz_model_free(m);
        return pz_fail(PZ_ERR_NOMEM, "out of memory allocating a model (%lld parameters, batch %d)", (long long)m->n_params, batch_max);
    }
    return PZ_OK;
}

static void free_seq(pz_seq *s) {
    for (int i = 0; i < s->n; i++) {
        pz_layer *l = &s->layers[i];
        if (s->act) free(s->act[i]);
        free(l->ws);
        free(l->mean);
        free(l->argmax);
        free(l->dz);
        free(l->dmain);
        if (l->kind == PZ_LAYER_BLOCK) {
            free_seq(l->main), free_seq(l->shortcut);
            free(l->main), free(l->shortcut);
        }
    }
    free(s->act);
    free(s->grad[0]);
    free(s->grad[1]);
    free(s->layers);
    memset(s, 0, sizeof *s);
}

void pz_model_free(pz_model *m) {
    free_seq(&m->net);
    free(m->params);
    free(m->grads);
    free(m->buffers);
    free(m->dlogits);
    memset(m, 0, sizeof *m);
}

const float *pz_model_logits(const pz_model *m) { return m->net.act[m->net.n - 1]; }

void pz_model_zero_grad(pz_model *m) { memset(m->grads, 0, sizeof(float) * (size_t)m->n_params); }

/* ------------------------------------------------------------------------- */
/* forward and backward */

static void layer_forward(pz_layer *l, const float *x, float *y, int B, int train) {
    const size_t n_in = (size_t)B * pz_shape_numel(l->in);
    switch (l->kind) {
    case PZ_LAYER_CONV:
        conv2d_forward(y, l->ws, x, l->weight, l->bias, B, l->in.c, l->in.h, l->in.w, l->out.c, l->k, l->stride, l->pad);
        break;
    case PZ_LAYER_BATCHNORM:
        batchnorm_forward(y, l->mean, l->rstd, l->run_mean, l->run_var, x, l->weight, l->bias,
                          B, l->in.c, l->in.h * l->in.w, 0.1f, 1e-5f, train);
        break;
    case PZ_LAYER_RELU:
        relu_forward(y, x, n_in);
        break;
    case PZ_LAYER_MAXPOOL:
        maxpool2d_forward(y, l->argmax, x, B, l->in.c, l->in.h, l->in.w, l->k, l->stride, l->pad);
        break;
    case PZ_LAYER_AVGPOOL:
        avgpool2d_forward(y, x, B, l->in.c, l->in.h, l->in.w, l->k, l->stride, l->pad);
        break;
    case PZ_LAYER_GLOBAL_AVGPOOL:
        global_avgpool_forward(y, x, B, l->in.c, l->in.h * l->in.w);
        break;
    case PZ_LAYER_FLATTEN:
        memcpy(y, x, sizeof(float) * n_in);
        break;
    case PZ_LAYER_LINEAR:
        linear_forward(y, x, l->weight, l->bias, B, (int)pz_shape_numel(l->in), l->out.c);
        break;
    case PZ_LAYER_BLOCK: {
        pz_seq_forward(l->main, 0, l->main->n, x, B, train);
        const float *a = l->main->act[l->main->n - 1];
        const float *sc = x;
        if (l->shortcut->n) {
            pz_seq_forward(l->shortcut, 0, l->shortcut->n, x, B, train);
            sc = l->shortcut->act[l->shortcut->n - 1];
        }
        const size_t n_out = (size_t)B * pz_shape_numel(l->out);
        add_forward(y, a, sc, n_out);
        relu_forward(y, y, n_out);
        break;
    }
    }
}

/* y is this layer's forward output; dx may be NULL (no input gradient) */
static void layer_backward(pz_layer *l, const float *x, const float *y, const float *dy, float *dx, int B) {
    const size_t n_in = (size_t)B * pz_shape_numel(l->in);
    switch (l->kind) {
    case PZ_LAYER_CONV:
        conv2d_backward(dx, l->dweight, l->dbias, l->ws, dy, x, l->weight,
                        B, l->in.c, l->in.h, l->in.w, l->out.c, l->k, l->stride, l->pad);
        break;
    case PZ_LAYER_BATCHNORM:
        batchnorm_backward(dx, l->dweight, l->dbias, dy, x, l->mean, l->rstd, l->weight,
                           B, l->in.c, l->in.h * l->in.w);
        break;
    case PZ_LAYER_RELU:
        if (dx) relu_backward(dx, dy, y, n_in);
        break;
    case PZ_LAYER_MAXPOOL:
        if (dx) maxpool2d_backward(dx, dy, l->argmax, B, l->in.c, l->in.h, l->in.w, l->k, l->stride, l->pad);
        break;
    case PZ_LAYER_AVGPOOL:
        if (dx) avgpool2d_backward(dx, dy, B, l->in.c, l->in.h, l->in.w, l->k, l->stride, l->pad);
        break;
    case PZ_LAYER_GLOBAL_AVGPOOL:
        if (dx) global_avgpool_backward(dx, dy, B, l->in.c, l->in.h * l->in.w);
        break;
    case PZ_LAYER_FLATTEN:
        if (dx) memcpy(dx, dy, sizeof(float) * n_in);
        break;
    case PZ_LAYER_LINEAR:
        linear_backward(dx, l->dweight, l->dbias, dy, x, l->weight, B, (int)pz_shape_numel(l->in), l->out.c);
        break;
    case PZ_LAYER_BLOCK: {
        const size_t n_out = (size_t)B * pz_shape_numel(l->out);
        relu_backward(l->dz, dy, y, n_out); /* through the final relu */
        pz_seq_backward(l->main, 0, l->main->n, x, l->dz, dx ? l->dmain : NULL, B);
        if (l->shortcut->n) {
            /* the shortcut's input gradient goes straight into dx, then the main
             * path's is added */
            pz_seq_backward(l->shortcut, 0, l->shortcut->n, x, l->dz, dx, B);
            if (dx) add_forward(dx, dx, l->dmain, n_in);
        } else if (dx) {
            add_forward(dx, l->dz, l->dmain, n_in);
        }
        break;
    }
    }
}

void pz_seq_forward(pz_seq *s, int from, int to, const float *x, int B, int train) {
    for (int i = from; i < to; i++) {
        layer_forward(&s->layers[i], x, s->act[i], B, train);
        x = s->act[i];
    }
}

void pz_seq_backward(pz_seq *s, int from, int to, const float *x, const float *dy, float *dx, int B) {
    int which = 0;
    for (int i = to - 1; i >= from; i--) {
        const float *in = i > from ? s->act[i - 1] : x;
        float *din = i > from ? s->grad[which] : dx;
        layer_backward(&s->layers[i], in, s->act[i], dy, din, B);
        dy = din;
        which ^= 1;
    }
}

/* ------------------------------------------------------------------------- */
/* sharing: dst's layers use src's parameters, gradients and running
 * statistics (dst keeps its own activations and workspaces) */
static void share_seq(pz_seq *s, const pz_model *dst, const pz_model *src) {
#define MAP(ptr, arr) if (ptr) ptr = src->arr + ((ptr) - dst->arr)
    for (int i = 0; i < s->n; i++) {
        pz_layer *l = &s->layers[i];
        MAP(l->weight, params);
        MAP(l->bias, params);
        MAP(l->dweight, grads);
        MAP(l->dbias, grads);
        MAP(l->run_mean, buffers);
        MAP(l->run_var, buffers);
        if (l->kind == PZ_LAYER_BLOCK) share_seq(l->main, dst, src), share_seq(l->shortcut, dst, src);
    }
#undef MAP
}

void pz_model_share(pz_model *dst, const pz_model *src) { share_seq(&dst->net, dst, src); }
