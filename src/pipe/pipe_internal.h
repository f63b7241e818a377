/* SPDX-License-Identifier: MIT */
/* pipe_internal.h — the rooms of the pipeline, shared between pipe.c (the
 * driver and the public API), plan.c (cuts, codecs, settings: what each
 * stage is), stage.c (the stage worker and the control messages it
 * answers) and schedule.c (the step schedule: GPipe). protocol.h has the
 * messages. Not installed. */
#ifndef PZ_PIPE_INTERNAL_H
#define PZ_PIPE_INTERNAL_H

#include "pipe.h"
#include "protocol.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct stage stage;
typedef struct stage_bufs stage_bufs;

/* A step schedule: the order in which stage i of S runs the pieces of a
 * step of M micro-batches (pipe_action: a micro-batch's forward, with its
 * META and frame in and out; its backward, with its gradient frames; the
 * step's loss back); then the optimizer step. The real step (pipe_step)
 * and the dry timing (timing.c) run the same lists. */
typedef enum { PIPE_FWD, PIPE_BWD, PIPE_LOSS } pipe_action_kind;
typedef struct {
    int kind; /* pipe_action_kind */
    int m;    /* the micro-batch */
} pipe_action;
typedef struct {
    /* fills a[] (at least 2M + 1) and returns how many */
    int (*actions)(int S, int i, int M, pipe_action *a);
    int overlaps; /* k > 0: its steps overlap, async.c runs it with k(S-1-i) micro-batches in flight at stage i */
} pipe_schedule;
/* the schedule of a pz_pipe_schedule_kind (its name: pz_pipe_schedules) */
const pipe_schedule *pipe_schedule_of(int kind);
/* the most micro-batches stage i holds at once (forward run, backward not
 * yet): its activation slots, micro-batch m in slot m % slots */
int pipe_schedule_slots(const pipe_schedule *sc, int S, int i, int M);
/* One step's running state at a stage. */
typedef struct {
    int M, Btot;               /* micro-batches, and the step's whole batch (META carries it) */
    float lr;
    double loss_sum;
    int correct_sum;
} step_state;

/* the pieces of a step (schedule.c), for the schedules of async.c too: m
 * is the micro-batch's index into the per-micro-batch buffers (its slot) */
/* stage 0: the driver's BATCH into bank `bank` of the kept batches (the
 * asynchronous schedule's other bank holds the previous batch, still in
 * flight), and micro-batch m of it into the per-micro-batch buffers of
 * index k (sizes differ by at most one; a short last batch has fewer) */
pz_status pipe_take_batch(stage *s, stage_bufs *b, const uint8_t *batch, size_t blen, int bank, step_state *t);
void pipe_take_slice(stage *s, stage_bufs *b, int k, int bank, int m, const step_state *t);
pz_status pipe_take_micro(stage *s, stage_bufs *b, int m, int first, size_t len, step_state *t);
pz_status pipe_forward_micro(stage *s, stage_bufs *b, int m, step_state *t);
pz_status pipe_backward_micro(stage *s, stage_bufs *b, int m);
pz_status pipe_loss_back(stage *s, stage_bufs *b, step_state *t);
/* Gradient clipping by the global norm, in two halves. NORM: this stage's
 * squared norms of its gradient g, per top-level layer, with those of the
 * stages after it (from the next) go back; stage 0 adds them in layer
 * order and sets *scale. CLIP: past stage 0 the scale comes from the stage
 * before; it goes on to the next. */
pz_status pipe_clip_norms(stage *s, stage_bufs *b, const float *g, float *scale);
pz_status pipe_clip_pass(stage *s, stage_bufs *b, float *scale);

/* ---- async.c: the asynchronous schedule ----
 * No flush between steps: stage i keeps min(S-1-i, M) micro-batches in
 * flight from one step into the next (their backward passes run while the
 * next batch's forwards do), so the batches' forward and backward waves
 * overlap. With a delay of 1 a batch's gradient is applied one step late
 * (W_u = W_{u-1} - lr g_u(W_{u-2}), PipeDream-2BW's rule): batch b's
 * forwards and backwards use W_{b-2}, kept as a second version of the
 * parameters (the stash) until batch b's own update overwrites it. With a
 * delay of 0 each step ends with its batch done: 1F1B's order, the same
 * steps bit for bit. */
pz_status async_step(stage *s, stage_bufs *b, const uint8_t *batch, size_t blen);
/* DRAIN: the micro-batches still in flight run their backward passes and
 * the updates they complete (the numbers are those of a run that never
 * drains: only the time differs) */
pz_status async_drain(stage *s, stage_bufs *b);
/* the slots stage i of S holds (micro-batches in flight at once, in any
 * step of M micro-batches) */
int async_slots(int S, int i, int M, int ahead, int delay);
/* what async_* need set up at a stage (its second version, its slots'
 * versions), after its layers and before its checkpoint is loaded */
pz_status async_plan(stage *s);
/* the parameters checkpoints hold: the newest version (any schedule), and
 * the one before it (a delay of 1; NULL otherwise) */
float *async_newest(const stage *s);
float *async_stash(const stage *s);
/* before an evaluation or a checkpoint: nothing in flight (else an
 * error), and the evaluation slot on the newest version */
pz_status async_eval_ready(stage *s);
/* model[k] reads version v (0 or 1) of the parameters */
void async_use(stage *s, int k, int v);
/* a checkpoint's parameters were loaded into ver[0] and its stash into
 * ver[1]: put each where the stage's step count says it lives */
void async_loaded(stage *s);

/* The asynchronous schedule's order of work at stage i (async.c), the one
 * list the real step and the dry timing mode both run: per step, the
 * forwards of its batch's micro-batches, the backwards of the oldest in
 * flight beyond `warm`, and after a batch's last backward its LOSS, with
 * clipping its NORM (and at stage 0 its CLIP), or its update; a stage past
 * 0 takes a batch's CLIP after a fixed forward of the next batch (or after
 * its own last backward of the batch, when that comes later). */
typedef enum { AS_FWD, AS_BWD, AS_LOSS, AS_NORM, AS_CLIP, AS_UPDATE } async_action_kind;
typedef struct {
    int kind; /* async_action_kind */
    int m;    /* AS_FWD: the micro-batch in its batch */
    int slot; /* AS_FWD, AS_BWD: the micro-batch's slot */
    int64_t batch; /* the batch (0-based) the action is of */
} async_action;
typedef struct {
    int i, slots, ahead, warm, warm0, delay, clip; /* ahead: k, warm = min(k(S-1-i), M) */
    int64_t fwd, bwd, batches, updates; /* micro-batches forwarded, backwarded; batches begun; updates made */
    int64_t item_batch[PZ_MAX_MICRO]; /* per slot: its micro-batch's batch */
    unsigned char item_last[PZ_MAX_MICRO]; /* ... and whether it is that batch's last */
    int64_t clip_batch; /* clipping: the batch whose NORM went back and whose CLIP is awaited (-1: none) */
    int clip_ready;     /* ... and the forward it comes after has run here */
} async_order;
/* a stage's order at the start (updates: the batches a checkpoint had made, all drained) */
void async_order_init(async_order *o, int S, int i, int M, int ahead, int delay, int clip, int64_t updates);
/* the next step's actions into a[] (at most ASYNC_ACTIONS(M)), for a batch
 * of Mb micro-batches; Mb = 0: a drain (what is in flight, to the end) */
#define ASYNC_ACTIONS(M) (3 * (M) + 2 * PZ_MAX_STAGES + 16)
int async_order_step(async_order *o, int Mb, async_action *a);

/* One training step at a stage from the messages on its links. stage 0
 * gets the driver's BATCH (batch, blen); the others the first micro-batch's
 * META, already in b->msg (blen bytes). */
pz_status pipe_step(stage *s, stage_bufs *b, const uint8_t *batch, size_t blen);

struct stage {
    struct pz_pipe *pipe;
    int index, from, to;       /* top-level layers [from, to) */
    int M;                     /* micro-batches */
    int slots;                 /* micro-batches whose activations it holds at once (GPipe: M; 1F1B: at most S - index) */
    int64_t macs;              /* its layers' forward multiply-accumulates per sample (the rate clock's FLOPs) */
    int64_t act_bytes;         /* the activation memory it holds: its slots' buffers (pz_pipe_activation_bytes) */
    pz_model model[PZ_MAX_MICRO]; /* model[0] owns the parameters; the others share them (the slots) */
    pz_optim opt;
    int64_t p0, p1;            /* its parameters in model.params */
    pz_link *prev, *next;      /* towards stage index-1 (or the driver), index+1 (NULL for the last) */
    pz_codec *fwd_rx, *bwd_tx; /* decoding activations from prev, encoding gradients to prev */
    pz_codec *fwd_tx, *bwd_rx; /* encoding activations to next, decoding gradients from next */
    /* evaluation: the forward codec without its state (an EF/EF21/AQ-SGD
     * wrapper's base codec: test samples have no buffers, and evaluating
     * must not move the training state), and fp32 for plain inference */
    pz_codec *eval_tx, *eval_rx, *plain_tx, *plain_rx;
    int fwd_lossless, bwd_lossless; /* fwd_tx / bwd_tx are "none" */
    pz_clock clock;
    stage_report rep;
    /* a head tied to an embedding on an earlier stage (GPT-2's token table):
     * the embedding's stage tie_e owns the table and its update; the head's
     * stage tie_l keeps a copy. Per micro-batch the head's gradient travels
     * back to tie_e (TIED_GRAD), and the table forward to tie_l (TIED_WEIGHTS)
     * before the first forward after it changed. tie_e = -1: no such tie. */
    int tie_e, tie_l, tie_head;  /* stages; the head's top-level index */
    float *tie_w, *tie_g;        /* this stage's table and its gradient (V x C) */
    size_t tie_n;
    int tie_dirty;               /* tie_e: the table changed since tie_l got it */
    /* a traffic budget (budget.h): per direction (0: activations to next,
     * 1: gradients to prev) a codec per rung that only measures, the rung
     * the sender uses, and the measurements of probe step probe_t */
    pz_codec *probe[2][PZ_BUDGET_RUNGS];
    int rung[2];
    int64_t probe_t;
    int64_t chosen_t;          /* the step whose BUDGET round this stage has passed (0: none): a replay is refused */
    pz_budget_meas meas[2];
    int meas_n[2];             /* frames measured */
    /* the asynchronous schedule (async.c): two versions of the parameters
     * [p0, p1) (ver[0] is model[0]'s own; version u lives in ver[u % 2]),
     * where each slot's model reads them, and the stream of micro-batches
     * across steps (item g in slot g % slots) */
    int async, delay;
    float *ver[2], *stash_mem;  /* stash_mem: the second version's memory (owned) */
    float *slot_base[PZ_MAX_MICRO];
    int eval_slot;             /* the slot evaluation runs in: 0, or (async) one past the training slots */
    /* ... and the gradients of batch n in grad[n % 2] (a delay of 1: the
     * next batch's accumulate while this one's wait for their CLIP) */
    float *grad[2], *grad_mem, *slot_gbase[PZ_MAX_MICRO];
    float clip_scale;          /* stage 0: the scale of the gradient whose CLIP it sends */
    async_order order;         /* async: where the stream stands here (what the next step's actions are) */
    float bank_lr[2];          /* async: each batch's learning rate, by batch % 2 */
    int64_t cur_batch;         /* async: the batch (0-based) of the forward or backward running */
    double grad_norm;          /* stage 0, clipping: the last step's global gradient norm (before clipping) */
    uint8_t *kept;             /* split learning: the client state left by the last client */
    size_t kept_len;
    pthread_t thread;
    int running;
    char error[512];
};

/* A stage's working memory: inputs and gradients per slot (x_in, dy), the
 * rest per micro-batch m. */
struct stage_bufs {
    float *x_in[PZ_MAX_MICRO], *dy[PZ_MAX_MICRO], *dx;
    uint32_t *ids[PZ_MAX_MICRO];
    int32_t *labels[PZ_MAX_MICRO];
    float *tokens[PZ_MAX_MICRO]; /* a subspace model past stage 0: micro-batch m's input tokens (META) */
    int Bm[PZ_MAX_MICRO], at[PZ_MAX_MICRO]; /* sizes; stage 0: where each starts in the batch */
    float *batch_x;            /* stage 0: the batch's inputs, kept for the step */
    uint32_t *batch_ids;       /* stage 0: the driver's whole batch, before it is split */
    int32_t *batch_labels;
    uint8_t *msg, *frame, *hdr;
    size_t cap, frame_cap;
    float *tie;                /* a tie's stage tie_e: a received TIED_GRAD (V x C) */
    double *norms;             /* gradient clipping: squared norms per top-level layer (n) */
    uint8_t *hdr_norm;         /* ... and the NORM message */
    size_t norm_cap;
};

struct pz_pipe {
    pz_pipe_config cfg;
    const pipe_schedule *schedule;
    char fingerprint[(PZ_MAX_STAGES * 2 + PZ_BUDGET_RUNGS) * PZ_SPEC_MAX + 512]; /* what every stage must agree on */
    int S, first, last, has_driver, started, mb_max;
    int stage_threads; /* each local stage's threads: --threads shared among them (at least 1) */
    int checked;       /* the driver's CHECK passed here */
    /* the driver of a lagging pipeline (pz_pipe_lag): a batch's loss is owed
     * by the stages (in_flight), or was taken by a drain and kept for the
     * next step's answer */
    int lag, in_flight, kept_n;
    float kept_loss;
    int kept_correct;
    pz_eval_progress_fn eval_progress; /* told after every evaluation batch (NULL: nobody) */
    void *eval_user;
    stage st[PZ_MAX_STAGES];
    pz_link *to_first; /* the driver's end */
    pz_clock clock;    /* the driver's */
    uint8_t *buf;
    size_t cap;
    stage_report reports[PZ_MAX_STAGES];
    /* crash tests: PZ_TEST_KILL_STAGE_AT=STAGE:STEP kills the process that
     * runs stage STAGE with SIGKILL right after its optimizer step STEP (a
     * rank dying at a state, not after a time); -1: never */
    int kill_stage;
    int64_t kill_step;
};

/* ---- plan.c ---- */
/* Stage i's layers, parameters, optimizer, codecs (and its checkpoint, resuming). */
pz_status plan_stage(pz_pipe *p, int i);
/* p->fingerprint: the settings every stage of the run must share. */
void plan_fingerprint(pz_pipe *p);
/* The codec states in a stage's checkpoint (none in a pipeline of one). */
int plan_stage_codecs(const stage *s);
/* A budget: the sender of direction dir (0: activations, 1: gradients)
 * encodes with rung r from now on (a fresh codec of the rung, seeded as
 * at the start; evaluation follows the activations' rung). */
pz_status plan_use_rung(stage *s, int dir, int r);
/* A budget: before a checkpoint blob (or a handed-on client state) is
 * loaded, take the rungs its senders' states were saved with. */
pz_status plan_adopt_rungs(stage *s, const uint8_t *blob, size_t len, const char *what);

/* ---- stage.c ---- */
void *stage_main(void *arg);
/* Receive `want` on l; an ERROR becomes this stage's error as sent. */
pz_status stage_recv(stage *s, pz_link *l, int want, uint8_t **buf, size_t *cap, size_t *len, double timeout_s);
/* Encode t (B samples of shape sh) with tx into *frame, grown as needed. */
/* --dump-boundaries: at the configured step, micro-batch m's tensor t (B
 * samples of sh) going into the activations' (dir 0) or gradients' (dir 1)
 * codec, as DIR/b<boundary>_<fwd|bwd>_m<m>.npy (float32) */
pz_status stage_dump(const stage *s, int dir, int m, const float *t, int B, pz_shape sh);
pz_status stage_encode(pz_codec *tx, const float *t, int B, pz_shape sh, const uint32_t *ids, uint8_t **frame,
                       size_t *frame_cap, size_t *flen, pz_codec_stats *stats);

/* PZ_ERR_STATE unless a decoded frame's shape (nd, shape) is B samples of sh */
pz_status stage_check_frame(const char *what, int nd, const int64_t *shape, int B, pz_shape sh);

/* How long to wait on link l for an answer that `hops` stages take part
 * in: a timeout per stage, or one for a remote party (a split-learning
 * peer answers for all of its stages at once, and its death must be
 * noticed within --timeout). */
static inline double stage_wait(const stage *s, const pz_link *l, int hops);

/* A copy of n bytes (a client state kept or snapshotted); NULL when out of memory. */
static inline uint8_t *blob_dup(const uint8_t *p, size_t n) {
    uint8_t *c = malloc(n ? n : 1);
    if (c && n) memcpy(c, p, n);
    return c;
}

/* the step (1-based) whose forward or backward runs: the one after the
 * stage's last update, or (async) the micro-batch's batch */
static inline int64_t stage_step_of(const stage *s) { return s->async ? s->cur_batch + 1 : s->opt.t + 1; }

/* targets per sample (protocol.h's P) */
static inline int pipe_targets(const pz_pipe *p) { return p->cfg.targets > 0 ? p->cfg.targets : 1; }
/* what META and EVAL_META carry between stages: the targets, and a
 * subspace model's input tokens; the driver's BATCH and EVAL heads: the
 * targets as i32 */
static inline msg_layout pipe_layout(const pz_pipe *p) {
    return msg_layout_of(pipe_targets(p), p->cfg.model.subspace ? p->cfg.in.d[0] : 0, p->cfg.n_classes);
}
static inline msg_layout pipe_driver_layout(const pz_pipe *p) { return msg_layout_of(pipe_targets(p), 0, p->cfg.n_classes); }

/* A subspace model (nn.h's pz_subspace) past stage 0: its lifts read the
 * ids of the batch being run, which META and EVAL_META bring; tok is
 * kept by the caller for as long as the model runs on it. */
static inline void stage_set_tokens(stage *s, int slot, const float *tok) {
    if (s->model[slot].sub && s->index > 0) s->model[slot].sub->tokens = tok;
}

/* The tied token table (pipe_internal.h's tie): tie_e sends it on when it
 * changed; TIED_WEIGHTS arriving at a stage between tie_e and tie_l is
 * passed on, at tie_l copied in. */
pz_status stage_send_tied_weights(stage *s, stage_bufs *b);
pz_status stage_tied_weights(stage *s, const uint8_t *msg, size_t len);

/* PZ_ERR_STATE unless every one of n targets is a class (a token) of the model */
pz_status stage_check_targets(const stage *s, const int32_t *y, size_t n);

static inline pz_shape stage_in_shape(const stage *s) {
    const pz_seq *net = &s->model[0].net;
    return s->from ? net->layers[s->from - 1].out : net->in;
}
static inline double stage_wait(const stage *s, const pz_link *l, int hops) {
    const double t = s->pipe->cfg.timeout_s;
    return pz_link_is_remote_party(l) ? t : t * (hops > 1 ? hops : 1);
}

static inline pz_shape stage_out_shape(const stage *s) { return s->model[0].net.layers[s->to - 1].out; }

#endif
