/* run.h — a training run: configuration, the epoch loop with evaluation,
 * metrics into a run directory. (Single stage; the pipeline issue puts
 * stages behind the same loop.) */
#ifndef PZ_RUN_H
#define PZ_RUN_H

#include "pipezip/pipezip.h"
#include "base/base.h"

/* Checks every field; the error names the setting and what is accepted. */
pz_status pz_run_config_check(const pz_run_config *cfg);
/* Does this configuration run a pipeline (more than one stage, or a link,
 * micro-batches or an emulated link)? By default resnets do, other models not. */
int pz_run_uses_pipeline(const pz_run_config *cfg);
/* cfg->turn as steps: 0 the whole run, -1 every epoch, K every K steps. */
pz_status pz_run_turn_steps(const pz_run_config *cfg, int *steps);
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
pz_status pz_run_serve(const pz_run_config *cfg, const pz_serve_options *o);

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
