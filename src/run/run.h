/* SPDX-License-Identifier: MIT */
/* run.h — a training run: configuration, the epoch loop with evaluation,
 * metrics into a run directory. (Single stage; the pipeline issue puts
 * stages behind the same loop.) */
#ifndef PZ_RUN_H
#define PZ_RUN_H

#include "pipezip/pipezip.h"
#include "base/base.h"

/* Does this plan run a pipeline (more than one stage, or a link,
 * micro-batches or an emulated link)? By default resnets do, other models not. */
int pz_run_uses_pipeline(const pz_run_plan *plan);
/* Some stages run in other processes (mpi, zmq); the processes are started
 * together, as one job (mpi). */
int pz_run_remote(const pz_run_plan *plan);
int pz_run_multiprocess(const pz_run_plan *plan);
/* The layout of its stages as the header line says it ("layer1,layer2,layer3",
 * "3 stages balanced by compute", ...); NULL for one stage. */
const char *pz_run_layout(const pz_run_plan *plan, char *buf, size_t cap);
/* ---- the run directory and the processes (rundir.c) ----------------------------
 * Before a run: --resume with --overwrite is refused, an --out DIR that
 * holds a run is refused (or, with overwrite, its run is removed). */
pz_status pz_run_dir_check(const pz_run_plan *plan, int overwrite);
/* The run's directory: --out as given, or (create) a new
 * runs/DATE-MODEL-DATA[-N], claimed with mkdir and set as the plan's --out;
 * nothing when resuming (the run continues in its own). */
typedef struct {
    char path[512];
    int made_dir, made_runs; /* this call created the directory (and runs/) */
} pz_run_dir;
pz_status pz_run_dir_prepare(pz_run_plan *plan, int create, pz_run_dir *dir);
/* The directory the run writes: the one --resume continues, else --out's
 * (NULL: none). */
const char *pz_run_dir_of(const pz_run_plan *plan);
/* A run that failed before writing takes away what prepare created, if empty. */
void pz_run_dir_abandon(const pz_run_plan *plan, const pz_run_dir *dir);
/* The processes the plan's link spans (mpirun: every rank runs this), started
 * before anything prints; *rank is 0 for the driver (and a single process). */
pz_status pz_run_processes_start(const pz_run_plan *plan, int *argc, char ***argv, int *rank);
/* code 0: they all finished; else this one failed and the others are stopped. */
void pz_run_processes_end(const pz_run_plan *plan, int code);

/* `pipezip serve`: the stages after the first cut, for split-learning
 * clients over ZeroMQ (CURVE when keys are given), one session at a time,
 * until `clients` of them have finished (a client that joined and dropped
 * out counts as finished). Stages' checkpoints go to save_dir/epoch-E;
 * resume loads from a save_dir/epoch-E (NULL: fresh). */
typedef struct {
    const char *bind, *server_key, *client_key;
    int clients;
    const char *save_dir, *resume;
    size_t max_message; /* bytes; 0: what the model can need */
    int wait_for;       /* the first turn waits until this many clients ask */
} pz_serve_options;
pz_status pz_run_serve(const pz_run_plan *plan, const pz_serve_options *o);

/* `pipezip keygen`: a CURVE key pair for split learning's links: path the
 * secret key (mode 0600), path.pub the public one; existing files are kept
 * unless force. */
pz_status pz_run_keygen(const char *path, int force);

/* `pipezip sample`: continue a prompt with a trained language model's run
 * (its config.json and the checkpoint of `epoch`, 0 = the newest), in the
 * run's tokens (bytes, or the BPE its tokenizer.txt keeps), drawn as
 * pz_model_generate does. emit sees each new token's bytes; out (may be
 * NULL) receives the prompt's tokens and the new ones (free it). */
typedef struct {
    const char *run_dir;
    const char *prompt; /* NULL or "" = a newline */
    int tokens;         /* how many to generate */
    float temperature;  /* 0 = the most likely each time */
    int top_k;          /* 0 = all */
    uint64_t seed;
    int epoch;
    int threads;
} pz_sample_config;
pz_status pz_run_sample(const pz_sample_config *c, void (*emit)(const uint8_t *bytes, size_t n, void *ctx), void *ctx,
                        int32_t **out, int *n_out);

#endif
