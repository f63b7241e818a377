/* SPDX-License-Identifier: MIT */
/* metrics.h — metric records written as JSON Lines or CSV, one file per
 * stream (steps, epochs, boundaries) in a run directory, and the traffic
 * accounting behind the boundary records. Knows nothing of kernels. */
#ifndef PZ_METRICS_H
#define PZ_METRICS_H

#include "base/base.h"
#include "pipe/pipe.h"
#include "pipezip/pipezip.h"

typedef struct {
    const char *key;
    const char *str; /* a string field when non-NULL, else num */
    double num;
} pz_field;

#define PZ_NUM(k, v) ((pz_field){.key = (k), .num = (double)(v)})
#define PZ_STR(k, v) ((pz_field){.key = (k), .str = (v)})

typedef struct {
    FILE *f;
    int csv;
    int wrote_header;
    char path[4096];
} pz_metrics;

/* Opens DIR/STEM.jsonl, or DIR/STEM.csv when csv. */
pz_status pz_metrics_open(pz_metrics *m, const char *dir, const char *stem, int csv);
/* Reopen for a resumed run: keep the records of epochs 1..max_epoch (and
 * the CSV header), drop later ones (written after the last checkpoint), append. */
pz_status pz_metrics_reopen(pz_metrics *m, const char *dir, const char *stem, int csv, int max_epoch, long long max_step);
/* s as one CSV field (RFC 4180: quoted, quotes doubled, when it holds a
 * comma, a quote or a line break); -1 on a write error. */
int pz_csv_field(FILE *f, const char *s);
/* v in the fewest digits that read back as the same float32 (JSON null when
 * not finite; whole numbers as integers) */
int pz_fmt_num(char *buf, size_t cap, double v);
/* One record; CSV takes its header from the first record. */
pz_status pz_metrics_write(pz_metrics *m, const pz_field *fields, int n);
void pz_metrics_close(pz_metrics *m);

/* A JSON object of the fields, into buf (for summary/config files). */
int pz_fields_to_json(char *buf, size_t cap, const pz_field *fields, int n);

/* ---- traffic: the per-boundary accounting of a pipeline run (traffic.c) ----
 * The stages count what crossed each boundary since they started (a split-
 * learning server's stages may have served other clients before); a run
 * takes their counters when it starts and after every epoch and turns the
 * differences into boundary records, run totals and per-boundary results. */
typedef struct {
    int n;                                 /* boundaries */
    pz_boundary_stats first[PZ_MAX_STAGES], prev[PZ_MAX_STAGES], paused[PZ_MAX_STAGES];
    /* bytes over every epoch of the run (a resumed run starts from its record's) */
    double fwd, bwd, fp32, eval, link;
} pz_traffic;

/* Take the stages' counters as the run's start (totals as given). */
pz_status pz_traffic_start(pz_traffic *t, pz_pipe *pipe, int n_boundaries);
/* A client's turn ends and its pipeline is rebuilt for the next (split
 * learning's round robin): pause takes the old pipeline's counters, resume
 * the new one's, so records and totals go on as if nothing had changed. */
pz_status pz_traffic_pause(pz_traffic *t, pz_pipe *pipe);
pz_status pz_traffic_resume(pz_traffic *t, pz_pipe *pipe);
/* The run's training bytes so far, mid-epoch (nothing recorded). */
pz_status pz_traffic_now(const pz_traffic *t, pz_pipe *pipe, double *fwd, double *bwd);
/* Mid-epoch (a checkpoint): the run's totals so far (fwd, bwd, fp32, eval,
 * link bytes), and the epoch's counts so far at each boundary saved as
 * JSON lines into path; pz_traffic_carry, in the resumed run, makes the
 * epoch's record count them. */
pz_status pz_traffic_checkpoint(const pz_traffic *t, pz_pipe *pipe, const char *path, double totals[5]);
pz_status pz_traffic_carry(pz_traffic *t, const char *path);
/* After an epoch: one record per boundary into m (when open), the totals
 * and res->boundaries (this run's, since start) updated. */
pz_status pz_traffic_epoch(pz_traffic *t, pz_pipe *pipe, int epoch, const pz_seq *net, const pz_pipe_config *pc,
                           pz_metrics *m, pz_run_result *res);

#endif
