/* SPDX-License-Identifier: MIT */
/* model.c — building a model as a list of layers, allocating its parameters
 * in one array (llm.c style: every layer points into it), and running the
 * list forward and backward over any range of top-level layers. */
#include "layer.h"
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

pz_layer *nn_push(pz_seq *s, pz_layer_kind kind, const char *name) {
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

pz_status nn_check_window(pz_seq *s, const char *name, int k, int stride, int pad) {
    const pz_shape in = pz_seq_out(s);
    if (in.rank != 3) return pz_fail(PZ_ERR_ARG, "layer '%s': a window needs an image (C, H, W) input", name);
    if (k < 1 || stride < 1 || pad < 0)
        return pz_fail(PZ_ERR_ARG, "layer '%s': kernel %d stride %d pad %d are not valid", name, k, stride, pad);
    if (in.d[1] + 2 * pad < k || in.d[2] + 2 * pad < k)
        return pz_fail(PZ_ERR_ARG, "layer '%s': a %dx%d window does not fit a %dx%d input", name, k, k, in.d[1], in.d[2]);
    return PZ_OK;
}

/* the kinds, in pz_layer_kind's order: each table is its layer file's
 * (src/nn/layers/NAME.c); adding a kind is that file, its enum value and
 * builder in nn.h, and its two lines here */
extern const pz_layer_ops pz_conv_ops, pz_batchnorm_ops, pz_relu_ops, pz_maxpool_ops, pz_avgpool_ops, pz_global_avgpool_ops,
    pz_flatten_ops, pz_linear_ops, pz_block_ops, pz_embedding_ops, pz_layernorm_ops, pz_attention_ops, pz_gelu_ops, pz_group_ops,
    pz_residual_ops, pz_tied_head_ops;
extern const pz_layer_ops pz_silu_ops, pz_subspace_ops, pz_project_ops, pz_unproject_ops;
static const pz_layer_ops *const kinds[] = {
    [PZ_LAYER_CONV] = &pz_conv_ops,
    [PZ_LAYER_BATCHNORM] = &pz_batchnorm_ops,
    [PZ_LAYER_RELU] = &pz_relu_ops,
    [PZ_LAYER_MAXPOOL] = &pz_maxpool_ops,
    [PZ_LAYER_AVGPOOL] = &pz_avgpool_ops,
    [PZ_LAYER_GLOBAL_AVGPOOL] = &pz_global_avgpool_ops,
    [PZ_LAYER_FLATTEN] = &pz_flatten_ops,
    [PZ_LAYER_LINEAR] = &pz_linear_ops,
    [PZ_LAYER_BLOCK] = &pz_block_ops,
    [PZ_LAYER_EMBEDDING] = &pz_embedding_ops,
    [PZ_LAYER_LAYERNORM] = &pz_layernorm_ops,
    [PZ_LAYER_ATTENTION] = &pz_attention_ops,
    [PZ_LAYER_GELU] = &pz_gelu_ops,
    [PZ_LAYER_GROUP] = &pz_group_ops,
    [PZ_LAYER_RESIDUAL] = &pz_residual_ops,
    [PZ_LAYER_TIED_HEAD] = &pz_tied_head_ops,
    [PZ_LAYER_SILU] = &pz_silu_ops,
    [PZ_LAYER_SUBSPACE] = &pz_subspace_ops,
    [PZ_LAYER_PROJECT] = &pz_project_ops,
    [PZ_LAYER_UNPROJECT] = &pz_unproject_ops,
};

const pz_layer_ops *pz_layer_ops_of(pz_layer_kind k) { return kinds[k]; }

const char *pz_layer_kind_name(pz_layer_kind k) {
    return (unsigned)k < sizeof kinds / sizeof kinds[0] && kinds[k] ? kinds[k]->name : "?";
}

/* ------------------------------------------------------------------------- */
/* allocation and initialization */

float *nn_floats(layer_alloc *a, size_t n) {
    float *f = pz_floats_try(n);
    if (!f) a->oom = 1;
    a->m->act_bytes += (int64_t)(4 * n);
    return f;
}

float *nn_take_params(layer_alloc *a, int64_t n, float **grads) {
    float *p = a->m->params + a->p;
    *grads = a->m->grads + a->p;
    a->p += n;
    return p;
}

float *nn_take_buffers(layer_alloc *a, int64_t n) {
    float *b = a->m->buffers + a->b;
    a->b += n;
    return b;
}

void nn_kaiming_normal(float *w, int64_t n, int fan_in, pz_rng *rng) {
    const float sd = sqrtf(2.0f / (float)fan_in);
    for (int64_t i = 0; i < n; i++) w[i] = sd * pz_rng_normal(rng);
}

void nn_normal(float *w, int64_t n, float std, pz_rng *rng) {
    for (int64_t i = 0; i < n; i++) w[i] = std * pz_rng_normal(rng);
}

static int64_t count_buffers(const pz_seq *s) {
    int64_t n = 0;
    for (int i = 0; i < s->n; i++) {
        const pz_layer *l = &s->layers[i];
        const pz_layer_ops *ops = pz_layer_ops_of(l->kind);
        pz_seq *kids[2];
        if (ops->n_buffers) n += ops->n_buffers(l);
        const int nk = ops->children ? ops->children(l, kids) : 0;
        for (int k = 0; k < nk; k++) n += count_buffers(kids[k]);
    }
    return n;
}

void nn_alloc_seq(pz_seq *s, layer_alloc *a) {
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
        const pz_layer_ops *ops = pz_layer_ops_of(l->kind);
        if (ops->alloc) ops->alloc(l, a);
        s->act[i] = nn_floats(a, (size_t)a->B * pz_shape_numel(l->out));
        if (pz_shape_numel(l->out) > biggest) biggest = pz_shape_numel(l->out);
    }
    if (top) a->B = a->m->batch_max;
    s->grad[0] = nn_floats(a, (size_t)a->B * biggest);
    s->grad[1] = nn_floats(a, (size_t)a->B * biggest);
    a->depth--;
}

pz_status pz_model_finalize(pz_model *m, int batch_max, int n_classes, uint64_t seed) {
    return pz_model_finalize_range(m, batch_max, n_classes, seed, 0, m->net.n);
}

pz_status pz_model_finalize_range(pz_model *m, int batch_max, int n_classes, uint64_t seed, int from, int to) {
    if (batch_max < 1) return pz_fail(PZ_ERR_ARG, "batch size must be at least 1, got %d", batch_max);
    pz_shape out = pz_seq_out(&m->net);
    /* an image model ends with one score per class, (n, 1, 1); a sequence
     * model with one per vocabulary entry at each position, (T, V) */
    const int targets = out.rank == 2 ? out.d[0] : 1;
    if (pz_shape_numel(out) != (int64_t)n_classes * targets)
        return pz_fail(PZ_ERR_ARG, "model ends with %lld outputs per %s but the data has %d %s",
                       (long long)(pz_shape_numel(out) / targets), targets > 1 ? "position" : "sample", n_classes,
                       targets > 1 ? "tokens in its vocabulary" : "classes");
    m->batch_max = batch_max;
    m->n_classes = n_classes;
    m->targets = targets;
    m->n_params = 0;
    for (int i = 0; i < m->net.n; i++) m->n_params += m->net.layers[i].n_params;
    m->n_buffers = count_buffers(&m->net);
    layer_alloc a = {.m = m, .B = batch_max, .from = from, .to = to, .active = 1};
    m->params = nn_floats(&a, (size_t)m->n_params);
    m->grads = nn_floats(&a, (size_t)m->n_params);
    m->buffers = nn_floats(&a, (size_t)m->n_buffers);
    m->dlogits = nn_floats(&a, (size_t)batch_max * targets * n_classes);
    pz_rng_seed(&a.rng, seed);
    m->act_bytes = 0; /* from here on: the layers' own */
    if (!a.oom) nn_alloc_seq(&m->net, &a);
    if (a.oom) {
        pz_model_free(m);
        return pz_fail(PZ_ERR_NOMEM, "out of memory allocating a model (%lld parameters, batch %d)", (long long)m->n_params, batch_max);
    }
    return PZ_OK;
}

static void free_seq(pz_seq *s) {
    for (int i = 0; i < s->n; i++) {
        pz_layer *l = &s->layers[i];
        const pz_layer_ops *ops = pz_layer_ops_of(l->kind);
        if (s->act) free(s->act[i]);
        free(l->ws);
        free(l->mean);
        free(l->argmax);
        free(l->saved);
        free(l->dz);
        free(l->dmain);
        pz_seq *kids[2];
        const int nk = ops->children ? ops->children(l, kids) : 0;
        for (int k = 0; k < nk; k++) free_seq(kids[k]), free(kids[k]);
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
    free(m->decay);
    pz_subspace_free(m->sub);
    memset(m, 0, sizeof *m);
}

const float *pz_model_logits(const pz_model *m) { return m->net.act[m->net.n - 1]; }

void pz_model_zero_grad(pz_model *m) { memset(m->grads, 0, sizeof(float) * (size_t)m->n_params); }

/* ------------------------------------------------------------------------- */
/* forward and backward */

/* layer i and the ReLU at i + 1 run as one (both inside [from, to)) */
static const pz_layer_ops *fused_with_relu(const pz_seq *s, int i, int to) {
    if (i + 1 >= to || s->layers[i + 1].kind != PZ_LAYER_RELU) return NULL;
    const pz_layer_ops *ops = pz_layer_ops_of(s->layers[i].kind);
    return ops->forward_relu && ops->backward_relu ? ops : NULL;
}

/* layer i and the GELU at i + 1 run as one forward (both inside [from, to)) */
static const pz_layer_ops *gelu_after(const pz_seq *s, int i, int to) {
    if (i + 1 >= to || s->layers[i + 1].kind != PZ_LAYER_GELU) return NULL;
    const pz_layer_ops *ops = pz_layer_ops_of(s->layers[i].kind);
    return ops->forward_gelu ? ops : NULL;
}

/* layer i and the GELU at i - 1 run as one backward (both inside [from, to)) */
static const pz_layer_ops *gelu_before(const pz_seq *s, int i, int from) {
    if (i - 1 < from || s->layers[i - 1].kind != PZ_LAYER_GELU) return NULL;
    const pz_layer_ops *ops = pz_layer_ops_of(s->layers[i].kind);
    return ops->backward_gelu ? ops : NULL;
}

static int profiling;
void pz_nn_profile(int on) { profiling = on; }

void pz_seq_forward(pz_seq *s, int from, int to, const float *x, int B, int train) {
    for (int i = from; i < to; i++) {
        pz_layer *l = &s->layers[i];
        const double t0 = profiling ? pz_now() : 0.0;
        const pz_layer_ops *fused = fused_with_relu(s, i, to), *gelu = fused ? NULL : gelu_after(s, i, to);
        if (fused) { /* act[i] is not written: nothing reads it */
            fused->forward_relu(l, x, s->act[i + 1], B, train);
            x = s->act[++i];
        } else if (gelu) { /* act[i] written too: the GELU's backward reads it */
            gelu->forward_gelu(l, x, s->act[i], s->act[i + 1], B, train);
            x = s->act[++i];
        } else {
            pz_layer_ops_of(l->kind)->forward(l, x, s->act[i], B, train);
            x = s->act[i];
        }
        if (profiling) l->prof_s[0] += pz_now() - t0;
    }
}

/* how the last layer of s writes y (pz_seq_forward_into, _add, _add_relu) */
typedef enum { LAST_INTO, LAST_ADD, LAST_ADD_RELU } last_way;

/* the whole of s forward, its last layer writing y (plus res) by that way;
 * 0, having run nothing, where the last layer has no such pass */
static int seq_forward_last(pz_seq *s, const float *x, const float *res, float *y, int B, int train, last_way how) {
    if (s->n < 1) return 0;
    pz_layer *l = &s->layers[s->n - 1];
    const pz_layer_ops *ops = pz_layer_ops_of(l->kind);
    if (how == LAST_INTO ? l->kind != PZ_LAYER_RESIDUAL : how == LAST_ADD ? !ops->forward_add : !ops->forward_add_relu) return 0;
    pz_seq_forward(s, 0, s->n - 1, x, B, train);
    const float *in = s->n > 1 ? s->act[s->n - 2] : x;
    const double t0 = profiling ? pz_now() : 0.0;
    if (how == LAST_INTO) ops->forward(l, in, y, B, train);
    else if (how == LAST_ADD) ops->forward_add(l, in, res, y, B, train);
    else ops->forward_add_relu(l, in, res, y, B, train);
    if (profiling) l->prof_s[0] += pz_now() - t0;
    return 1;
}

int pz_seq_forward_add_relu(pz_seq *s, const float *x, const float *res, float *y, int B, int train) {
    return seq_forward_last(s, x, res, y, B, train, LAST_ADD_RELU);
}

int pz_seq_forward_into(pz_seq *s, const float *x, float *y, int B, int train) {
    return seq_forward_last(s, x, NULL, y, B, train, LAST_INTO);
}

int pz_seq_forward_add(pz_seq *s, const float *x, const float *res, float *y, int B, int train) {
    return seq_forward_last(s, x, res, y, B, train, LAST_ADD);
}

/* pz_seq_backward, with dres (where given) added to dx: by the layer that
 * writes dx where it can (backward_add), else after the loop */
static void seq_backward(pz_seq *s, int from, int to, const float *x, const float *dy, float *dx, const float *dres, int B) {
    int which = 0;
    for (int i = to - 1; i >= from; i--) {
        if (i - 1 >= from && fused_with_relu(s, i - 1, to)) {
            /* the ReLU at i and the layer before it: one pass, into the
             * buffer the layer's own step would have used */
            which ^= 1;
            i--;
            const float *in = i > from ? s->act[i - 1] : x;
            float *din = i > from ? s->grad[which] : dx;
            pz_layer *l = &s->layers[i];
            const double t0 = profiling ? pz_now() : 0.0;
            pz_layer_ops_of(l->kind)->backward_relu(l, in, s->act[i + 1], dy, din, B);
            if (profiling) l->prof_s[1] += pz_now() - t0;
            dy = din;
            which ^= 1;
            continue;
        }
        const pz_layer_ops *gelu = gelu_before(s, i, from);
        if (gelu) {
            /* the layer and the GELU at i - 1: the GELU's input gradient in
             * one pass, into the buffer the layer's own step would have used
             * (the GELU's would be dy's); the next layer then takes the other */
            pz_layer *l = &s->layers[i];
            const float *h = i - 1 > from ? s->act[i - 2] : x; /* the GELU's input */
            float *din = i - 1 > from ? s->grad[which] : dx;
            const double t0 = profiling ? pz_now() : 0.0;
            gelu->backward_gelu(l, s->act[i - 1], h, dy, din, B);
            if (profiling) l->prof_s[1] += pz_now() - t0;
            dy = din;
            which ^= 1;
            i--;
            continue;
        }
        const float *in = i > from ? s->act[i - 1] : x;
        float *din = i > from ? s->grad[which] : dx;
        pz_layer *l = &s->layers[i];
        const pz_layer_ops *ops = pz_layer_ops_of(l->kind);
        const double t0 = profiling ? pz_now() : 0.0;
        if (i == from && dres && din && ops->backward_add) {
            ops->backward_add(l, in, s->act[i], dy, dres, din, B);
            dres = NULL;
        } else {
            ops->backward(l, in, s->act[i], dy, din, B);
        }
        if (profiling) l->prof_s[1] += pz_now() - t0;
        dy = din;
        which ^= 1;
    }
    if (dres && dx) add_forward(dx, dres, dx, (size_t)B * pz_shape_numel(from ? s->layers[from - 1].out : s->in));
}

void pz_seq_backward(pz_seq *s, int from, int to, const float *x, const float *dy, float *dx, int B) {
    seq_backward(s, from, to, x, dy, dx, NULL, B);
}

void pz_seq_backward_add(pz_seq *s, const float *x, const float *dy, const float *dres, float *dx, int B) {
    seq_backward(s, 0, s->n, x, dy, dx, dres, B);
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
        const pz_layer_ops *ops = pz_layer_ops_of(l->kind);
        pz_seq *kids[2];
        const int nk = ops->children ? ops->children(l, kids) : 0;
        for (int k = 0; k < nk; k++) share_seq(kids[k], dst, src);
    }
#undef MAP
}

void pz_model_share(pz_model *dst, const pz_model *src) { share_seq(&dst->net, dst, src); }

static void rebase(float **ptr, const float *from_base, int64_t n, float *to_base) {
    if (*ptr && *ptr >= from_base && *ptr < from_base + n) *ptr = to_base + (*ptr - from_base);
}

static void rebase_seq(pz_seq *s, int from, int to, int grads, const float *from_base, int64_t n, float *to_base) {
    for (int i = from; i < to && i < s->n; i++) {
        pz_layer *l = &s->layers[i];
        rebase(grads ? &l->dweight : &l->weight, from_base, n, to_base);
        rebase(grads ? &l->dbias : &l->bias, from_base, n, to_base);
        const pz_layer_ops *ops = pz_layer_ops_of(l->kind);
        pz_seq *kids[2];
        const int nk = ops->children ? ops->children(l, kids) : 0;
        for (int k = 0; k < nk; k++) rebase_seq(kids[k], 0, kids[k]->n, grads, from_base, n, to_base);
    }
}

void pz_seq_rebase(pz_seq *s, int from, int to, const float *from_base, int64_t n, float *to_base) {
    rebase_seq(s, from, to, 0, from_base, n, to_base);
}

void pz_seq_rebase_grads(pz_seq *s, int from, int to, const float *from_base, int64_t n, float *to_base) {
    rebase_seq(s, from, to, 1, from_base, n, to_base);
}

static void after_step(pz_seq *s, int from, int to) {
    for (int i = from; i < to && i < s->n; i++) {
        pz_layer *l = &s->layers[i];
        const pz_layer_ops *ops = pz_layer_ops_of(l->kind);
        if (ops->after_step) ops->after_step(l);
        pz_seq *kids[2];
        const int nk = ops->children ? ops->children(l, kids) : 0;
        for (int k = 0; k < nk; k++) after_step(kids[k], 0, kids[k]->n);
    }
}

void pz_seq_after_step(pz_seq *s, int from, int to) { after_step(s, from, to); }

pz_conv_info pz_nn_conv_info(void) { return pz_conv_get_info(); }
pz_conv_info pz_nn_gemm_info(void) { return pz_gemm_get_info(); }
