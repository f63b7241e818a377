/* SPDX-License-Identifier: MIT */
/* layer.h — what a layer kind is to the model: one table of functions
 * (pz_layer_ops), one file per kind under layers/, one entry in
 * pz_layer_ops_of(). model.c builds, allocates, runs, shares and frees layers
 * only through this table: adding a kind touches no switch anywhere.
 * Internal to nn. */
#ifndef PZ_NN_LAYER_H
#define PZ_NN_LAYER_H

#include "nn.h"

/* While a model is allocated: where the next parameters and running
 * statistics go, the initialisation stream, and how many batch rows the
 * layer being allocated needs (batch_max inside the stage's range, one
 * outside it). */
typedef struct layer_alloc {
    pz_model *m;
    int64_t p, b;        /* next parameter / buffer offset */
    pz_rng rng;
    int B;
    int depth, from, to; /* top-level layers [from, to) get batch_max rows, the others one */
    int active;          /* the layer being allocated is in [from, to): it runs */
    int oom;             /* an allocation failed: the model is freed and the build fails */
} layer_alloc;

typedef struct pz_layer_ops {
    const char *name; /* the kind as `pipezip models` prints it */
    /* Take this layer's parameters (nn_take_params) and running statistics
     * (nn_take_buffers) in order, initialise them from a->rng, and allocate
     * what forward saves for backward and its scratch. NULL: none. */
    void (*alloc)(pz_layer *l, layer_alloc *a);
    /* Running-statistics floats the layer keeps (not trained). NULL: 0. */
    int64_t (*n_buffers)(const pz_layer *l);
    /* y = f(x) over B samples (train: batch statistics, saved state) */
    void (*forward)(pz_layer *l, const float *x, float *y, int B, int train);
    /* dx = gradient of x (skipped when dx is NULL), parameter gradients
     * accumulated; y is the forward output */
    void (*backward)(pz_layer *l, const float *x, const float *y, const float *dy, float *dx, int B);
    /* The layer and the ReLU after it in one pass each way, bit for bit the
     * two in a row (pz_seq_forward and pz_seq_backward use them when both
     * run: the layer's own output is then not written, only the ReLU's).
     * y and dy are the ReLU's output and its gradient. NULL: never fused. */
    void (*forward_relu)(pz_layer *l, const float *x, float *y, int B, int train);
    void (*backward_relu)(pz_layer *l, const float *x, const float *y, const float *dy, float *dx, int B);
    /* y = relu(layer(x) + res) in one pass, bit for bit the layer and
     * add_relu_forward after (a residual block's last layer, through
     * pz_seq_forward_add_relu: the layer's own output is then not written,
     * its backward not needing it). NULL: never fused. */
    void (*forward_add_relu)(pz_layer *l, const float *x, const float *res, float *y, int B, int train);
    /* y = layer(x) + res, and dx = the input gradient + dres, each in one
     * pass, bit for bit the layer and add_forward after (a residual
     * branch's last layer and first, through pz_seq_forward_add and
     * pz_seq_backward_add: the layer's own output is then not written, its
     * backward not needing it). NULL: never fused. */
    void (*forward_add)(pz_layer *l, const float *x, const float *res, float *y, int B, int train);
    void (*backward_add)(pz_layer *l, const float *x, const float *y, const float *dy, const float *dres, float *dx, int B);
    /* A dense layer and the GELU after it, forward in one pass: h the
     * layer's own output (GELU's backward needs it), y the GELU's. And,
     * backward, the GELU before the layer folded into the layer's input
     * gradient: x the GELU's output (the layer's input), h its input, dx
     * the GELU's input gradient. Bit for bit the layers one at a time
     * (pz_seq_forward and pz_seq_backward use them when both run). NULL:
     * never fused. */
    void (*forward_gelu)(pz_layer *l, const float *x, float *h, float *y, int B, int train);
    void (*backward_gelu)(pz_layer *l, const float *x, const float *h, const float *dy, float *dx, int B);
    /* Nested lists (a residual block's paths); returns how many. NULL: 0. */
    int (*children)(const pz_layer *l, pz_seq *kids[2]);
    /* After each optimizer step over the layer's parameters (a constraint
     * kept: the boundary projection's orthonormal columns). NULL: none. */
    void (*after_step)(pz_layer *l);
    /* The kind's settings in a few characters ("3x3 s2 p1"); NULL: none. */
    void (*detail)(const pz_layer *l, char *buf, size_t cap);
} pz_layer_ops;

const pz_layer_ops *pz_layer_ops_of(pz_layer_kind k);

/* each kind's table lives in its file (src/nn/layers/NAME.c, pz_NAME_ops)
 * and is listed once, in model.c's kinds[] */

/* ---- for layer files ----------------------------------------------------- */
/* Append a layer of kind k to s, its input the current output of s and its
 * output the same until the caller sets it. NULL (PZ_ERR_NOMEM set) when out
 * of memory. */
pz_layer *nn_push(pz_seq *s, pz_layer_kind k, const char *name);
/* n floats of the model's parameters and the matching gradients */
float *nn_take_params(layer_alloc *a, int64_t n, float **grads);
float *nn_take_buffers(layer_alloc *a, int64_t n);
/* n floats of scratch owned by the caller (NULL and a->oom set on failure) */
float *nn_floats(layer_alloc *a, size_t n);
void nn_alloc_seq(pz_seq *s, layer_alloc *a);
/* The whole of s forward, its last layer's output plus res through a ReLU
 * into y, the last layer and the add in one pass (forward_add_relu).
 * Returns 0, having run nothing, where the last layer has no such pass. */
int pz_seq_forward_add_relu(pz_seq *s, const float *x, const float *res, float *y, int B, int train);
/* The whole of s forward with its last layer's output written into y
 * instead of act[n - 1], where its backward does not read it back (a
 * residual's); returns 0, having run nothing, otherwise. */
int pz_seq_forward_into(pz_seq *s, const float *x, float *y, int B, int train);
/* The same with no ReLU: y = s(x) + res (forward_add). Returns 0, having
 * run nothing, where the last layer has no such pass. */
int pz_seq_forward_add(pz_seq *s, const float *x, const float *res, float *y, int B, int train);
/* pz_seq_backward of the whole of s with dres added to dx: in the first
 * layer's pass where it has one (backward_add), else after; the same bits
 * either way. */
void pz_seq_backward_add(pz_seq *s, const float *x, const float *dy, const float *dres, float *dx, int B);
/* A layer with token and position tables (an embedding, a subspace lift):
 * token (vocab, dim) as weight, position (context, dim) as bias, normal(0,
 * init_std); the output (T, dim) for the T positions of its input. */
void nn_token_tables(pz_layer *l, int vocab, int context, int dim, float init_std);
void nn_alloc_token_tables(pz_layer *l, layer_alloc *a);
/* w (rows, cols), row-major: its columns orthonormal again (modified
 * Gram-Schmidt twice, in double precision: the same bits everywhere) */
void nn_orthonormalize(float *w, int rows, int cols);
void nn_kaiming_normal(float *w, int64_t n, int fan_in, pz_rng *rng);
void nn_normal(float *w, int64_t n, float std, pz_rng *rng);
/* rows of a layer's input: B for an image or a vector, B*T for a sequence */
static inline int64_t nn_rows(pz_shape s, int B) { return s.rank == 2 ? (int64_t)B * s.d[0] : B; }
/* PZ_ERR_ARG unless a k x k window with this stride and padding fits the
 * (C, H, W) output of s */
pz_status nn_check_window(pz_seq *s, const char *name, int k, int stride, int pad);
static inline int nn_window_out(int n, int k, int stride, int pad) { return (n + 2 * pad - k) / stride + 1; }

#endif
