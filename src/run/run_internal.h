/* SPDX-License-Identifier: MIT */
/* run_internal.h — the rooms of a training run, shared between run.c (the
 * epoch loop), run_config.c (the configuration and the run directory) and
 * placement.c (which link carries which boundary). Not installed. */
#ifndef PZ_RUN_INTERNAL_H
#define PZ_RUN_INTERNAL_H

#include "run.h"
#include "settings.h"
#include "metrics.h"
#include "nn/nn.h"
#include "data/data.h"
#include "pipe/pipe.h"

#define RUN_FINGERPRINT_MAX 8192 /* a fingerprint's text, canonical codec lists included */

/* ---- the run directory (run_config.c) ----------------------------------------
 * OUT/config.json, OUT/{steps,epochs,boundaries}.{jsonl,csv}, OUT/summary.json,
 * OUT/checkpoint/epoch-E/stage-<i>.bin (after epoch E) or
 * OUT/checkpoint/step-N/ (mid-epoch: step N, the step_in_epoch-th of epoch
 * E+1, with traffic.jsonl, the epoch's boundary counts so far), and
 * OUT/checkpoint/latest.json (atomic) naming it and the driver's counters; a
 * run resumed from OUT continues after it. */
typedef struct {
    int epoch;                 /* epochs finished */
    int64_t global_step, samples;
    double best, wall, emulated;
    double fwd_bytes, bwd_bytes, fp32_bytes, eval_bytes, link_bytes;
    /* mid-epoch (step_in_epoch > 0): the unfinished epoch's sums so far, and
     * whether the evaluation due at global_step was left undone (a stop) */
    int64_t step_in_epoch, ep_hits, ep_seen;
    double ep_loss_sum, ep_eval_seconds;
    int eval_pending;
    int micro_batches;         /* --micro-batches auto: the count chosen (0: none) */
    char fingerprint[RUN_FINGERPRINT_MAX];
} run_state;
/* the checkpoint directory a state names (epoch-E or step-N) */
void run_state_dir(char *out, size_t cap, const char *dir, const run_state *s);

/* The settings a resumed run must share with the run it continues: the
 * settings table's FP rows (run_config.c). */
void run_fingerprint(const pz_run_plan *p, char *out, size_t cap);
/* Whether two fingerprints say the same settings (in any order; an earlier
 * build's codec lists as typed are read canonically). */
int run_fingerprint_same(const char *a, const char *b);
/* The settings fingerprints a and b disagree on, "key: A -> B; ...". */
void run_fingerprint_diff(const char *a, const char *b, char *out, size_t cap);
pz_status run_state_write(const char *dir, const run_state *s);
pz_status run_state_read(const char *dir, run_state *s);
void run_checkpoint_dir(char *out, size_t cap, const char *dir, int epoch);
void run_checkpoint_remove(const char *dir);
/* config.json: the configuration and what the run derived from it */
pz_status run_write_config(const char *dir, const pz_run_plan *p, const pz_model *model, const pz_dataset *train,
                           const pz_dataset *test, const pz_pipe_config *pc, int pipeline);
pz_status run_write_json(const char *dir, const char *name, const pz_field *f, int n);
/* The pipeline configuration of a run (model, cuts, codecs, optimizer,
 * emulated link); `ranks` > 0 when every stage is a process of its own. */
/* A dataset with no examples, shaped as the plan's data reaches its model
 * (a server has no data; a plan's check builds the model from it). */
void run_plan_shape(const pz_run_plan *cfg, pz_dataset *shape);
/* The plan's cuts, stages and per-boundary codec lists resolved against
 * its model's layers, without data or stages: their errors before anything
 * starts (the default layout is left to the run, which knows its processes). */
pz_status run_plan_resolve(const pz_run_plan *cfg);
pz_status run_pipe_config(const pz_run_plan *p, const pz_model *model, const pz_dataset *train, pz_pipe_config *pc,
                          int ranks);

/* ---- placement (placement.c) ---------------------------------------------------
 * A transport puts the stages of a run somewhere: all in this process
 * (inproc), one per Open MPI rank (mpi), or stage 0 here and the rest on a
 * split-learning server (zmq). One table entry per transport. */
typedef struct run_link {
    const char *name;
    int remote;     /* some stages run in other processes */
    /* split learning: the client's state is fetched from and handed back to
     * the server around the run */
    int session;
    /* the flags this transport needs (NULL: none) */
    pz_status (*check)(const pz_run_plan *p);
    /* how many processes run this pipeline and which this one is (NULL: 1, 0) */
    pz_status (*processes)(int *rank, int *size);
    /* starting the processes before the run (argc, argv: the program's, as
     * MPI_Init takes them), and ending them: all well (finish) or one
     * failed (abort, exit code); NULL: one process */
    pz_status (*start)(int *argc, char ***argv, int *rank, int *size);
    void (*finish)(void);
    void (*abort)(int code);
    /* the local stages and the links to the remote ones into pc (NULL: all local) */
    pz_status (*place)(const pz_run_plan *p, int rank, int size, pz_pipe_config *pc);
} run_link;

/* The transport named name, or NULL. */
const run_link *run_link_find(const char *name);
/* "inproc, mpi or zmq" (sep ", ", last " or "), from the table */
const char *run_link_names(const char *sep, const char *last);

#endif
