/* SPDX-License-Identifier: MIT */
/* pipe.h — a model cut into stages joined by links, each boundary carrying
 * encoded frames: activations forward, gradients backward. Every stage runs
 * on its own thread, owns its layers, its optimizer and its codecs' state,
 * and talks to its neighbours only through its links; the stages form a
 * chain (driver <-> stage 0 <-> stage 1 <-> ... <-> stage S-1), so any
 * contiguous range of them can live in one process and the rest elsewhere
 * (Open MPI ranks, a ZeroMQ split-learning server). Knows nothing of how a
 * codec or a link works inside. */
#ifndef PZ_PIPE_H
#define PZ_PIPE_H

#include "nn/nn.h"
#include "link/link.h"
#include "pipezip/codec.h"
#include "codec/desc.h"
#include "budget.h"

#define PZ_MAX_STAGES 16
#define PZ_MAX_MICRO 256 /* micro-batches of a step */
#define PZ_SPEC_MAX PZ_CODEC_SPEC_MAX

/* The step schedules (pz_pipe_schedules: their names): GPipe runs every
 * micro-batch forward, then every one backward; 1F1B starts a micro-batch's
 * backward as soon as it can, so a stage holds at most S - i micro-batches'
 * activations; eager 1F1B warms up twice as long (slow links). All take
 * the same steps bit for bit. The asynchronous schedule (async.c) does not
 * flush between steps: with a delay of 1 each batch's gradient is applied
 * one step late, with a delay of 0 it is 1F1B. */
typedef enum { PZ_PIPE_GPIPE, PZ_PIPE_1F1B, PZ_PIPE_EAGER_1F1B, PZ_PIPE_ASYNC, PZ_PIPE_EAGER_ASYNC } pz_pipe_schedule_kind;
extern const pz_name pz_pipe_schedules[];
/* k > 0 for a schedule whose steps overlap (async.c: k(S-1-i) micro-batches
 * in flight at stage i from one step into the next, --pipe-delay), 0 for
 * one that flushes */
int pz_pipe_schedule_overlaps(int kind);

typedef struct {
    pz_model_spec model;    /* the model every stage builds its layers of */
    pz_shape in;            /* one sample: an image, or T token ids */
    int n_classes, batch_max;
    int targets;            /* per sample: 1 class, or T next tokens (0 = 1) */
    float clip_norm;        /* > 0: scale the gradients so their global norm (over every stage) is at most this */
    int grad_mask;          /* 1: a boundary's gradient is zeroed where the activation it follows arrived as 0 (the
                               derivative of a forward TopK: Paper A's GPT-2 runs), before the backward codec */
    uint64_t seed;
    int n_stages;
    int cuts[PZ_MAX_STAGES]; /* stage s ends after top-level layer cuts[s] (s < n_stages - 1) */
    /* the codecs per boundary b (between stage b and b+1): activations and
     * gradients, as parsed values; zeroed = "none" (pz_codec_list_resolve
     * fills them) */
    pz_codec_desc fwd[PZ_MAX_STAGES], bwd[PZ_MAX_STAGES];
    /* a traffic budget (budget.h): the senders' codecs are its ladder's
     * rungs, chosen per boundary and direction by pz_pipe_budget; fwd and
     * bwd above are then its first rung (what the stages start with) */
    pz_budget budget;
    pz_optim_kind optimizer;
    float momentum, weight_decay;
    int nesterov;
    int micro_batches;      /* the batch split into M micro-batches (1: none) */
    int schedule;           /* pz_pipe_schedule_kind: GPipe or 1F1B */
    int delay;              /* the asynchronous schedule: a batch's gradient is applied this many steps late (0 or 1) */
    pz_clock_mode clock;    /* what a stage's clock charges for its compute (link.h) */
    uint32_t max_samples;   /* sample ids are below this (the training set's size) */
    double timeout_s;       /* a neighbour silent this long is dead (default 60) */
    int err_every;          /* measure compression error on every Nth training frame (default 10) */
    pz_link_emu emu;        /* emulated bandwidth and latency of every stage boundary */
    int realtime;           /* really hold frames back (else: virtual clock only) */
    /* placement: this process runs stages [first_local, last_local] (both 0
     * and n_stages - 1 = all; the default when last_local is 0 and S > 1 is
     * set by pz_pipe_create only if local_set is 0). With first_local > 0
     * there is no driver here: pz_pipe_wait serves until the driver stops. */
    int local_set, first_local, last_local;
    pz_link *prev_link, *next_link; /* to the remote stages around the local ones (the pipe takes them) */
    const char *resume;     /* a checkpoint directory to start from (NULL: fresh) */
    const char *save_dir;   /* NULL: checkpoints go where the driver says; else (a server) DIR/epoch-E */
    int session;            /* split-learning client: the remote stages outlive this process (STOP is not sent
                               to them; closing the link ends this client's turn) */
    int serving;            /* split-learning server: prev_link is a client's session, borrowed (the pipeline does
                               not free it); the client must CHECK first, may not STOP, and the session ends
                               when it closes the link */
    const struct pz_pipe_state *restore; /* start the local stages from this snapshot (NULL: fresh, or resume) */
    const char *dump_dir;   /* with dump_step >= 1: that step's training tensors into DIR as .npy files (stage_dump) */
    int64_t dump_step;
} pz_pipe_config;

/* The local stages' whole state (parameters, statistics, optimizer, codec
 * states; a split-learning server's kept client state), in memory. */
typedef struct pz_pipe_state {
    uint8_t *blob[PZ_MAX_STAGES];
    size_t len[PZ_MAX_STAGES];
    uint8_t *kept;
    size_t kept_len;
} pz_pipe_state;

/* Per boundary, summed over the run so far. */
typedef struct {
    uint64_t fwd_bytes, bwd_bytes;  /* training: batch headers + activation frames forward; gradient frames backward */
    uint64_t fwd_frames, bwd_frames;
    uint64_t fwd_elements, bwd_elements; /* floats encoded (fp32 = 4 bytes each) */
    double fwd_err_sum, bwd_err_sum;/* ||x_hat - x|| / ||x|| summed over the sampled frames */
    uint64_t fwd_err_n, bwd_err_n;
    double fwd_encode_s, fwd_decode_s, bwd_encode_s, bwd_decode_s;
    uint64_t eval_bytes;            /* evaluation: headers + frames forward */
    uint64_t link_fwd_bytes, link_bwd_bytes;   /* every payload byte the link moved, control messages included */
    uint64_t wire_fwd_bytes, wire_bwd_bytes;   /* what the transport carried: payload + envelope */
    uint64_t link_fwd_messages, link_bwd_messages;
    double busy_fwd_s, busy_bwd_s;  /* emulated transmission time */
    int fwd_rung, bwd_rung;         /* a budget: the ladder's rung each sender uses now (-1: no budget) */
} pz_boundary_stats;

typedef struct pz_pipe pz_pipe;

/* Cut points for `model`: from a list of n_cuts layers (top-level indices
 * or names as `pipezip models` prints them, "3" or "layer1.0"; a group name
 * like "layer1" means its last block), or, with n_cuts 0, `stages` stages
 * balanced by forward FLOPs. Fills cfg->cuts and cfg->n_stages. */
pz_status pz_pipe_resolve_cuts(const pz_model *model, const char (*cuts)[64], int n_cuts, int stages, pz_pipe_config *cfg);
/* The split into `stages` (any number up to the model's top-level layers)
 * balanced by forward FLOPs: cuts[s] is stage s's last layer (stages - 1). */
pz_status pz_pipe_balance(const pz_model *model, int stages, int *cuts);

/* A per-boundary spec list ("q8,2=q2") into n_boundaries descriptions, at
 * a program's edge (the codec grammar's pz_codec_list_parse and _resolve). */
pz_status pz_pipe_parse_specs(const char *arg, int n_boundaries, pz_codec_desc *out, const char *flag);
/* The text a boundary's codec was given as ("none" when zeroed). */
static inline const char *pz_pipe_spec_text(const pz_codec_desc *d) { return pz_codec_desc_or_none(d)->text; }

pz_status pz_pipe_create(pz_pipe **p, const pz_pipe_config *cfg);
/* One training step of a batch through every stage; *loss and *correct from
 * the last stage. Errors name the stage and the reason. A lagging pipeline
 * (pz_pipe_lag: the asynchronous schedule with a delay, over two stages or
 * more) answers with the previous batch's loss, its last batch's in
 * pz_pipe_drain; *correct = -1 (and *loss NaN) when there is none. */
pz_status pz_pipe_train_step(pz_pipe *p, const float *x, const int32_t *y, const uint32_t *ids, int B, float lr,
                             float *loss, int *correct);
/* 1 when a step's loss comes with the next step (or the drain), else 0. */
int pz_pipe_lag(const pz_pipe *p);
/* Let every micro-batch still in flight finish (their backward passes and
 * the updates they complete; the numbers are the same as without it):
 * *loss and *correct are the last batch's not yet returned (*correct = -1
 * when none is owed). Evaluating, saving and the other requests drain
 * first by themselves, keeping that loss for the next step or drain. */
pz_status pz_pipe_drain(pz_pipe *p, float *loss, int *correct);
/* Told after every evaluation batch: done of total examples of this pass. */
typedef void (*pz_eval_progress_fn)(void *user, int64_t done, int64_t total);
void pz_pipe_set_eval_progress(pz_pipe *p, pz_eval_progress_fn fn, void *user);
/* Eval-mode forward of N examples in batches, through compressed boundaries
 * (compress = 1: the forward codec without its state) or plain fp32 ones;
 * mean loss and accuracy. Evaluation traffic is counted at the links too. */
pz_status pz_pipe_evaluate(pz_pipe *p, const float *x, const int32_t *y, int64_t N, int compress, double *loss,
                           double *accuracy);
/* Ask every stage for its counters (a message along the chain and back);
 * pz_pipe_boundary_stats then reads them. */
pz_status pz_pipe_collect_stats(pz_pipe *p);
pz_boundary_stats pz_pipe_boundary_stats(const pz_pipe *p, int boundary);
/* Local stage i's compute seconds so far as its clock measured them (its
 * layers; pz_pipe_collect_stats first). */
double pz_pipe_stage_compute(const pz_pipe *p, int stage);
/* The driver's virtual clock (seconds): compute measured here plus
 * emulated transfers, as the schedule overlaps them. */
double pz_pipe_clock(pz_pipe *p);
/* The activation memory local stage i holds for training (its slots'
 * layer buffers, inputs and gradients), bytes; 0 for a stage elsewhere. */
int64_t pz_pipe_activation_bytes(const pz_pipe *p, int stage);
/* The activation memory stage i of a pipeline so configured would hold in
 * M micro-batches (what pz_pipe_activation_bytes would then say), without
 * making the pipeline: its layers are built for one micro-batch and freed. */
pz_status pz_pipe_stage_memory(const pz_pipe_config *cfg, int stage, int M, int64_t *bytes);
/* aqsgd(...) senders send uncompressed while on (warm-up), at every stage. */
pz_status pz_pipe_set_warmup(pz_pipe *p, int on);
/* A budget's decision (pz_pipe_config.budget), after `step`, a step
 * pz_budget_due names: every sender's measurements of the rungs at that
 * step, the rung chosen for each boundary and direction (the last stage
 * chooses; each sender takes its rung as the answer passes), into *r. */
pz_status pz_pipe_budget(pz_pipe *p, int64_t step, pz_budget_round *r);
/* Every stage writes DIR/stage-<i>.bin (atomically); returns once all did. */
pz_status pz_pipe_save(pz_pipe *p, const char *dir);
/* Split learning, several clients taking turns: the first stage hands its
 * state (weights, optimizer, codec states) to the remote stage after it,
 * which keeps it for the next client; fetch loads what the previous client
 * left (*found = 0 when none did). */
pz_status pz_pipe_hand_on(pz_pipe *p);
pz_status pz_pipe_fetch(pz_pipe *p, int *found);
/* No driver here: run the local stages until the driver stops them (OK)
 * or one fails (its error). */
pz_status pz_pipe_wait(pz_pipe *p);
int pz_pipe_stages(const pz_pipe *p);
/* After pz_pipe_wait: the local stages' state into *st (replacing what it
 * held), to start a later pipeline from (pz_pipe_config.restore). */
pz_status pz_pipe_snapshot(pz_pipe *p, pz_pipe_state *st);
/* Stop the local stages (the driver's STOP along the chain) and wait for
 * their threads; their state stays for pz_pipe_snapshot, then free. */
void pz_pipe_stop(pz_pipe *p);
void pz_pipe_state_free(pz_pipe_state *st);
/* 1 once the driver's settings check passed at this process's first stage. */
int pz_pipe_checked(const pz_pipe *p);
void pz_pipe_free(pz_pipe *p);

/* Where a stage's parameters [p0, p1) are, when not in m->params (NULL:
 * there, and no stash): the newest version, and the asynchronous
 * schedule's version before it (the stash; NULL: none). */
typedef struct {
    float *params, *stash;
} pz_ckpt_params;

/* A stage's checkpoint file, also used for a whole model by 1-stage runs:
 * parameters [p0, p1) (and a stash, v), all running statistics, the
 * optimizer's state and the codecs' states (n_codecs, NULL entries
 * allowed). Reading with v->stash set needs a file that holds one. */
pz_status pz_checkpoint_write(const char *path, int stage, const pz_model *m, int64_t p0, int64_t p1,
                              const pz_ckpt_params *v, const pz_optim *opt, pz_codec *const *codecs, int n_codecs);
pz_status pz_checkpoint_read(const char *path, int stage, pz_model *m, int64_t p0, int64_t p1, const pz_ckpt_params *v,
                             pz_optim *opt, pz_codec **codecs, int n_codecs);

/* The spec codec i's state in a checkpoint blob was saved by, into spec
 * (cap bytes; "" when that codec is absent): a budget's stage resumes with
 * the rung it had chosen. */
pz_status pz_checkpoint_codec_spec(const uint8_t *data, size_t len, const char *path, int i, char *spec, size_t cap);

/* A checkpoint's parameters only, into the range [*p0, *p1) its header
 * names (running statistics too when it holds the whole model): for using a
 * trained model, whichever stage wrote the file. */
pz_status pz_checkpoint_read_params(const char *path, pz_model *m, int64_t *p0, int64_t *p1);

/* The same in memory (path only names it in errors). */
pz_status pz_checkpoint_pack(uint8_t **out, size_t *len, int stage, const pz_model *m, int64_t p0, int64_t p1,
                             const pz_ckpt_params *v, const pz_optim *opt, pz_codec *const *codecs, int n_codecs);
pz_status pz_checkpoint_unpack(const uint8_t *data, size_t len, const char *path, int stage, pz_model *m, int64_t p0,
                               int64_t p1, const pz_ckpt_params *v, pz_optim *opt, pz_codec **codecs, int n_codecs);

#endif
