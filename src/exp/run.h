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
/* `pipezip serve`: the stages after the first cut, for `clients` split-
 * learning clients in turn over ZeroMQ (CURVE when keys are given); the
 * stages' checkpoints go to save_dir/epoch-E, resume loads from a
 * save_dir/epoch-E (NULL: fresh). */
pz_status pz_run_serve(const pz_run_config *cfg, const char *bind, const char *server_key, const char *client_key, int clients,
                       const char *save_dir, const char *resume);

#endif
