/* SPDX-License-Identifier: MIT */
/* nn.h — layers as forward/backward pairs, models as a list of named layers
 * (a residual block is one layer holding two sub-lists), presets, softmax
 * cross-entropy loss, optimizers and learning-rate schedules.
 * The top-level list is what the pipeline cuts: any index between two
 * top-level layers is a valid stage boundary. Knows nothing of codecs,
 * links or stages. */
#ifndef PZ_NN_H
#define PZ_NN_H

#include "base/base.h"
#include "base/names.h"


typedef enum {
    PZ_LAYER_CONV,
    PZ_LAYER_BATCHNORM,
    PZ_LAYER_RELU,
    PZ_LAYER_MAXPOOL,
    PZ_LAYER_AVGPOOL,
    PZ_LAYER_GLOBAL_AVGPOOL,
    PZ_LAYER_FLATTEN,
    PZ_LAYER_LINEAR,
    PZ_LAYER_BLOCK, /* y = relu(main(x) + shortcut(x)); empty shortcut = identity */
    PZ_LAYER_EMBEDDING, /* token ids (T) -> (T, C): token + learned position embeddings */
    PZ_LAYER_LAYERNORM, /* over the last dimension of (T, C) */
    PZ_LAYER_ATTENTION, /* causal multi-head self-attention core: (T, 3C) q|k|v -> (T, C) */
    PZ_LAYER_GELU,      /* tanh form, elementwise */
    PZ_LAYER_GROUP,     /* y = main(x): a named run of layers (a transformer block) */
    PZ_LAYER_RESIDUAL,  /* y = x + main(x) */
    PZ_LAYER_TIED_HEAD, /* (T, C) -> (T, V) logits through the embedding's token table */
    PZ_LAYER_SILU,      /* x * sigmoid(x), elementwise (SwiGLU's and LLaMA's activation) */
    PZ_LAYER_SUBSPACE,  /* (T, K) -> (T, C): a lift, E[id] + P[t] + U c, from the model's subspace */
    PZ_LAYER_PROJECT,   /* (T, D) -> (T, K): a boundary's learned orthonormal projection, (x + A[id] + P[t]) W (--project) */
    PZ_LAYER_UNPROJECT, /* (T, K) -> (T, D): the receiving side's, A[id] + P[t] + c W^T */
} pz_layer_kind;

typedef struct pz_seq pz_seq;

/* A GPT's subspace (Protocol Models, arXiv 2506.01260): one fixed K-dim
 * subspace of the C-dim residual stream, orthonormal basis U (C x K), into
 * which every block writes. Between blocks the model carries only the
 * stream's coefficients c (T x K); each block's branches read the stream
 * as E[id] + P[t] + U c through a lift of their own (trained token and
 * position tables, rebuilt from the ids wherever the branch runs), so a
 * pipeline boundary carries K numbers per token and the ids. Made from a
 * seed, so every stage and every resumed run has the same U
 * (src/nn/subspace.c). */
typedef struct pz_subspace {
    int k, dim;
    float *basis;        /* (dim, k), row-major: U[i * k + j], orthonormal columns */
    const float *tokens; /* the ids (B x T, exact floats) of the batch being run: the
                          * embedding records them; a pipeline stage past the first sets them */
} pz_subspace;

/* A layer: its kind selects its functions (layer.h's table); the fields
 * below are what the kinds share, each kind using the ones it needs. */
typedef struct {
    pz_layer_kind kind;
    char name[48];
    pz_shape in, out;
    int k, stride, pad, has_bias;      /* conv, pooling; tied head: the embedding's index */
    int vocab, context, heads;         /* embedding (vocab: head too); attention */
    float init_std;                    /* linear: 0 = Kaiming normal, else normal(0, init_std) */
    int zero_init;                     /* linear: weights start at 0 (a classifier: logits 0, loss ln(classes)) */
    int dx_adds;                       /* conv: backward adds its input gradient into dx (a block's shortcut) */
    int64_t n_params;                  /* trainable floats, sub-layers included */
    int64_t macs;                      /* forward multiply-accumulates per sample */
    float *weight, *bias;              /* into the model's parameter array; bn: gamma, beta */
    float *dweight, *dbias;            /* into the model's gradient array */
    float *run_mean, *run_var;         /* bn: into the model's buffer array */
    float *mean, *rstd;                /* bn: batch statistics saved for backward (C) */
    int32_t *argmax;                   /* maxpool: (B_max, out) */
    float *ws;                         /* conv: im2col workspace; tied head: its gradient */
    float *saved;                      /* attention: each query's log-sum-exp (B_max, heads, T) */
    pz_seq *main, *shortcut;           /* block; group and residual: main */
    pz_subspace *sub;                  /* subspace lift, and an embedding in one (k = K): the model's */
    float *dz, *dmain;                 /* block: gradient buffers (B_max, in or out) */
    double prof_s[2];                  /* seconds spent forward and backward while profiling (pz_nn_profile) */
} pz_layer;

struct pz_seq {
    int n, cap;
    pz_layer *layers;
    pz_shape in;
    float **act;    /* act[i]: output of layer i, (B_max, out_i) */
    float *grad[2]; /* ping-pong gradient buffers, (B_max, largest activation) */
};

typedef struct {
    pz_seq net;
    int batch_max;
    int n_classes;  /* classes, or the vocabulary of a language model */
    int targets;    /* targets per sample: 1 class, or one token per position (T) */
    int64_t n_params, n_buffers;
    float *params;  /* (n_params) every trainable float, in layer order */
    float *grads;   /* (n_params) */
    float *buffers; /* (n_buffers) running statistics */
    float *dlogits; /* (B_max, n_classes) */
    uint8_t *decay; /* (n_params) 1 = weight decay applies; NULL = to every parameter (the image presets) */
    char preset[64];
    int64_t act_bytes; /* what its layers allocated for activations, saved state and scratch (not parameters) */
    pz_subspace *sub;  /* a GPT with --subspace K: its subspace (owned); NULL otherwise */
} pz_model;

/* ---- building a model ---------------------------------------------------- */
void pz_seq_init(pz_seq *s, pz_shape in);
pz_shape pz_seq_out(const pz_seq *s);
pz_status pz_add_conv(pz_seq *s, const char *name, int oc, int k, int stride, int pad, int bias);
pz_status pz_add_batchnorm(pz_seq *s, const char *name);
pz_status pz_add_relu(pz_seq *s, const char *name);
pz_status pz_add_maxpool(pz_seq *s, const char *name, int k, int stride, int pad);
pz_status pz_add_avgpool(pz_seq *s, const char *name, int k, int stride, int pad);
pz_status pz_add_global_avgpool(pz_seq *s, const char *name);
pz_status pz_add_flatten(pz_seq *s, const char *name);
pz_status pz_add_linear(pz_seq *s, const char *name, int out, int bias);
/* CIFAR-style basic block: conv3x3(stride)-bn-relu-conv3x3-bn, plus a
 * 1x1-conv(stride)+bn projection shortcut when shape changes. */
pz_status pz_add_basic_block(pz_seq *s, const char *name, int oc, int stride);

/* Transformer layers. The input of a language model is (T) token ids held
 * as exact floats; everything after the embedding is (T, C). */
pz_status pz_add_embedding(pz_seq *s, const char *name, int vocab, int context, int dim, float init_std);
/* A subspace model's embedding: (T) ids -> (T, K) coefficients, wte (V, K)
 * + wpe (context, K); it records the ids in the model's subspace. */
pz_status pz_add_subspace_embedding(pz_seq *s, const char *name, int vocab, int context, int k, float init_std);
/* A lift: (T, K) coefficients -> (T, C) = E[id] + P[t] + U c, E (V, C) and
 * P (context, C) trained, U the model's subspace; ids as recorded there. */
pz_status pz_add_subspace(pz_seq *s, const char *name, int vocab, int context, int dim, float init_std);
/* A boundary projection pair (--project K, layers/project.c): the sender's
 * (T, D) -> (T, K) and the receiver's (T, K) -> (T, dim = D), each with its
 * own anchor tables and orthonormal matrix; a subspace model's (the ids). */
pz_status pz_add_project(pz_seq *s, const char *name, int vocab, int context, int k);
pz_status pz_add_unproject(pz_seq *s, const char *name, int vocab, int context, int dim);
pz_status pz_add_layernorm(pz_seq *s, const char *name);
/* over (T, C): the same weights at every position; init_std 0 = Kaiming */
pz_status pz_add_dense(pz_seq *s, const char *name, int out, int bias, float init_std);
pz_status pz_add_attention(pz_seq *s, const char *name, int heads);
pz_status pz_add_gelu(pz_seq *s, const char *name);
pz_status pz_add_silu(pz_seq *s, const char *name);
/* logits over the vocabulary through the token table of the top-level
 * embedding layer named `embedding` (weights tied, GPT-2) */
pz_status pz_add_tied_head(pz_seq *s, const char *name, const char *embedding);
/* A group or residual layer of the layers built into *inner: call
 * pz_begin_inner, add layers to the returned list, then pz_end_group or
 * pz_end_residual (which take it over, also on failure). */
pz_seq *pz_begin_inner(pz_seq *s, const char *name);
pz_status pz_end_group(pz_seq *s, const char *name, pz_seq *inner);
pz_status pz_end_residual(pz_seq *s, const char *name, pz_seq *inner);

/* Allocate parameters, gradients, buffers and activations for batches of up
 * to batch_max, and initialize (Kaiming normal for conv/linear weights, zero
 * biases, bn gamma 1 beta 0) from seed. Call pz_set_threads() first. */
pz_status pz_model_finalize(pz_model *m, int batch_max, int n_classes, uint64_t seed);
/* The same, with activation buffers for batch_max samples only in top-level
 * layers [from, to) (the others get one row: a pipeline stage runs only its
 * own layers); parameters are initialised identically. */
pz_status pz_model_finalize_range(pz_model *m, int batch_max, int n_classes, uint64_t seed, int from, int to);
void pz_model_free(pz_model *m);
/* Make dst (built from the same preset) use src's parameters, gradients and
 * running statistics: a second set of activation buffers over one model
 * (pipeline micro-batches). src must outlive dst's use; free both. */
void pz_model_share(pz_model *dst, const pz_model *src);
/* Layers [from, to) of s (their sub-layers too) read their parameters at
 * to_base instead of from_base: every weight and bias pointer in
 * [from_base, from_base + n) moves by the same offset (a pipeline stage's
 * second version of its parameters, the asynchronous schedule's stash). */
void pz_seq_rebase(pz_seq *s, int from, int to, const float *from_base, int64_t n, float *to_base);
/* the same for the gradient pointers (dweight, dbias) */
void pz_seq_rebase_grads(pz_seq *s, int from, int to, const float *from_base, int64_t n, float *to_base);

/* Presets: mlp, lenet5, resnet8, resnet20 (CIFAR-style, widths 16/32/64)
 * over an image input (C, H, W) with n_classes classes; gpt-tiny (4 blocks,
 * width 128, 4 heads, context 128) and gpt-small (6, 256, 8, 256) over a
 * sequence input (T), T at most the context, with an n_classes vocabulary. */
/* A model as a value: its architecture and sizes, from a preset's name
 * (parsed once where the name enters; the model grammar extends it). */
typedef enum { PZ_ARCH_MLP = 1, PZ_ARCH_LENET5, PZ_ARCH_RESNET, PZ_ARCH_GPT } pz_arch;
typedef struct {
    pz_arch arch;
    int depth;                       /* resnet: basic blocks per group (1: resnet8, 3: resnet20) */
    int layers, dim, heads, context; /* gpt: blocks, width, heads, longest context */
    int subspace;                    /* gpt: K > 0 confines what blocks write to a K-dim subspace (--subspace) */
    int project;                     /* gpt with a subspace: K > 0 sends K learned coefficients at each cut (--project) */
    uint32_t project_after;          /* ... at the cut after block h.i for each bit i (set from the cuts) */
    int untied;                      /* gpt: 1: the head is a matrix of its own, not the token table (GPT-2 ties them) */
    char name[64];                   /* as named ("resnet8", "gpt:layers=8,d=256,heads=8,ctx=256") */
} pz_model_spec;
/* A preset's name ("gpt-small"), or a GPT of any shape: "gpt:KEY=V,..."
 * (layers, d, heads, ctx, and untied=1 for a head that is a matrix of its
 * own; a key not given takes gpt-tiny's value), or a
 * GPT preset with some of its sizes changed ("gpt-small:layers=8"). */
pz_status pz_model_spec_parse(pz_model_spec *spec, const char *name);
/* Build layers [from, to) of the model a spec describes (see pz_model_preset_range). */
pz_status pz_model_build(pz_model *m, const pz_model_spec *spec, pz_shape in, int n_classes, int batch_max, uint64_t seed,
                         int from, int to);
/* The layer list alone (names, shapes, parameters and MACs counted): no
 * parameters or activations allocated, so a model of any size is cheap to
 * describe or time; it cannot run. pz_model_free frees it. */
pz_status pz_model_layers(pz_model *m, const pz_model_spec *spec, pz_shape in, int n_classes);
/* What a run needs to know of an architecture, in its row (presets.c):
 * the run layer reads these, never the architecture itself. */
typedef enum { PZ_DEFAULTS_IMAGE = 0, PZ_DEFAULTS_LANGUAGE, PZ_DEFAULTS_COUNT } pz_defaults_profile;
typedef struct {
    pz_arch arch;
    const char *plural;          /* said in messages: "resnets", "GPTs" */
    int sequence;                /* a language model: token ids in, a token per position out */
    int subspace;                /* takes --subspace K */
    int n_default_cuts;          /* without --stages or --cuts, a pipeline cut after these layers (0: one stage) */
    char default_cuts[4][64];
    const char *default_layout;  /* those cuts in words: "after each residual group, as Paper A" */
    pz_defaults_profile profile; /* which column of a run's kind-dependent defaults (data, optimizer, ...) */
} pz_model_kind;
const pz_model_kind *pz_model_kind_of(const pz_model_spec *s);
/* The blocks a GPT's cuts follow where another block comes next (bit i: a
 * cut after h.i, named or by top-level index): where --project puts its
 * pairs. Cuts anywhere else add nothing. */
uint32_t pz_model_cut_blocks(const pz_model_spec *s, const char (*cuts)[64], int n_cuts);
static inline int pz_model_spec_is_sequence(const pz_model_spec *s) { return pz_model_kind_of(s)->sequence; }
/* The name-taking forms below are for a program's edge (tests, bench): they parse the name and build. */
pz_status pz_model_preset(pz_model *m, const char *preset, pz_shape in, int n_classes,
                          int batch_max, uint64_t seed);
pz_status pz_model_preset_range(pz_model *m, const char *preset, pz_shape in, int n_classes, int batch_max, uint64_t seed,
                                int from, int to);
const char *const *pz_model_preset_names(void);
/* "mlp, lenet5, ... or gpt-small": the presets' names, sep between them and last before the final one */
const char *pz_model_preset_list(const char *sep, const char *last, char *buf, size_t cap);
/* A GPT of any size (the gpt presets' architecture) over T tokens. */
pz_status pz_model_gpt(pz_model *m, int layers, int dim, int heads, int context, int T, int vocab, int batch_max,
                       uint64_t seed);
const char *pz_layer_kind_name(pz_layer_kind k);

/* ---- a model's subspace (pz_model.sub) ----------------------------------- */
pz_status pz_subspace_create(pz_subspace **out, int k, int dim, uint64_t seed);
void pz_subspace_free(pz_subspace *s);
/* y (rows, dim) = beta y + c U^T, c (rows, k) */
void pz_subspace_expand(const pz_subspace *s, const float *c, float *y, int64_t rows, float beta);
/* c (rows, k) = beta c + y U, y (rows, dim): the coefficients of y's projection */
void pz_subspace_reduce(const pz_subspace *s, const float *y, float *c, int64_t rows, float beta);

/* Print the top-level layers (index, name, kind, output shape, parameters,
 * forward FLOPs and activation size per sample) and totals. */
void pz_model_describe(const pz_model *m, FILE *out);

/* ---- running a model -----------------------------------------------------
 * Layers [from, to) of the top-level list; x is the input of layer `from`,
 * the output lands in net.act[to - 1]. Backward: dy is the gradient of that
 * output; writes the gradient of x into dx (skipped when dx is NULL) and
 * accumulates parameter gradients. */
void pz_seq_forward(pz_seq *s, int from, int to, const float *x, int B, int train);
/* Profiling: while on, every layer's forward and backward add their wall
 * seconds to its prof_s[0] and prof_s[1] (a container's include its
 * layers'); off costs one branch a layer. Process-wide: `pipezip bench
 * train --profile`. */
void pz_nn_profile(int on);
void pz_seq_backward(pz_seq *s, int from, int to, const float *x, const float *dy, float *dx, int B);
/* After an optimizer step over top-level layers [from, to): each layer's
 * constraint kept (layer.h's after_step). pz_train_step and the pipeline's
 * stages call it; a caller that steps the parameters itself must too. */
void pz_seq_after_step(pz_seq *s, int from, int to);
const float *pz_model_logits(const pz_model *m);
void pz_model_zero_grad(pz_model *m);

/* ---- optimizers ----------------------------------------------------------- */
typedef enum { PZ_OPT_SGD, PZ_OPT_ADAMW, PZ_OPT_NADAMW } pz_optim_kind;
/* the optimizers' names: sgd, adamw, nadamw */
extern const pz_name pz_optimizers[];

typedef struct {
    pz_optim_kind kind;
    float momentum;    /* sgd */
    int nesterov;      /* sgd */
    float weight_decay;/* sgd: L2 added to the gradient; adamw: decoupled */
    float beta1, beta2, eps; /* adamw, nadamw (nadamw: beta1 = momentum when given) */
    float momentum_decay;    /* nadamw: psi in mu_t = beta1 (1 - 0.96^(t psi) / 2) (0.004) */
    double mu_product;       /* nadamw: mu_1 ... mu_{mu_t} (recomputed from t when they differ: a loaded checkpoint) */
    int64_t mu_t;
    int64_t n, t;
    float *m, *v;
    const uint8_t *decay; /* per parameter: 1 = weight decay applies; NULL = to every one (the caller's array) */
} pz_optim;

pz_status pz_optim_init(pz_optim *o, pz_optim_kind kind, int64_t n);
void pz_optim_free(pz_optim *o);
/* One update of params (n) from grads (n) at learning rate lr; PyTorch's
 * torch.optim.SGD / AdamW / NAdam (with decoupled weight decay) update rules. */
void pz_optim_step(pz_optim *o, float *params, const float *grads, float lr);

/* ---- learning-rate schedules ---------------------------------------------- */
typedef enum { PZ_SCHED_CONSTANT, PZ_SCHED_STEP, PZ_SCHED_COSINE, PZ_SCHED_ONECYCLE, PZ_SCHED_LINEAR } pz_sched_kind;
/* the schedules: each kind, its name, and its form in a spec (help) */
extern const pz_name pz_schedules[];

typedef struct {
    pz_sched_kind kind;
    float base_lr;
    int64_t total_steps, steps_per_epoch, warmup_steps;
    float step_epochs, step_gamma; /* step: multiply by gamma every step_epochs */
    float pct_start;               /* onecycle: fraction of steps rising */
} pz_schedule;

/* spec: one of pz_schedules' forms: "constant" | "cosine" | "linear" |
 * "step:EPOCHS,GAMMA" | "onecycle[:PCT]" */
pz_status pz_schedule_parse(pz_schedule *s, const char *spec);
float pz_schedule_lr(const pz_schedule *s, int64_t step);

/* ---- training ------------------------------------------------------------- */
/* The model's loss over B samples of logits with their targets (y: B *
 * m->targets of them, a class per sample or a token per position): the mean
 * cross-entropy over every target, its gradient into dlogits (NULL: none)
 * and the number of targets predicted right (argmax) into *correct (NULL:
 * not counted). */
float pz_model_loss(const pz_model *m, float *dlogits, int *correct, const float *logits, const int32_t *y, int B);
/* zero_grad, forward (train mode), loss, backward, step (o NULL: none).
 * Returns the batch's mean loss. */
float pz_train_step(pz_model *m, pz_optim *o, float lr, const float *x, const int32_t *y, int B, int *correct);
/* Forward in eval mode over N samples in batches; mean loss and accuracy
 * (the fraction of targets predicted right). */
void pz_evaluate(pz_model *m, const float *x, const int32_t *y, int64_t N, double *loss, double *accuracy);

/* ---- generating text -------------------------------------------------------
 * A language model continues tokens[0, n_prompt) with n_new tokens written
 * after them (tokens holds n_prompt + n_new). Each is drawn from the last
 * position's logits over a window of the newest T tokens (T: the model's
 * input length): softmax(logits / temperature) over the top_k largest
 * (0 = all); temperature 0 or top_k 1 takes the most likely. The same seed
 * gives the same tokens. emit (may be NULL) sees each token as it is made. */
pz_status pz_model_generate(pz_model *m, int32_t *tokens, int n_prompt, int n_new, float temperature, int top_k,
                            uint64_t seed, void (*emit)(int32_t token, void *ctx), void *ctx);
/* One draw from logits[0, V) as above; work holds V floats. */
int32_t pz_sample_logits(const float *logits, int V, float temperature, int top_k, pz_rng *rng, float *work);

/* The convolution kernels every conv layer runs (kernels/conv.c's choice) */
pz_conv_info pz_nn_conv_info(void);
/* the matrix-product kernels the dense layers run (kernels/gemm.c) */
pz_conv_info pz_nn_gemm_info(void);

/* a residual whose add runs inside its branch's layers (the last one's
 * forward_add, the first one's backward_add), not as a pass of its own */
int pz_residual_add_fused(const pz_layer *l);

#endif
