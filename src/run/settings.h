/* SPDX-License-Identifier: MIT */
/* settings.h — a training run's settings: one table (settings.c) that says
 * what each is called as a flag and in config.json, its type, range, help
 * and default, and the typed plan (struct pz_run_plan) they are parsed
 * into, once, where they enter: `pipezip train` and `serve` (their flags
 * are this table), an embedding program (pz_run_plan_set), a sweep (through
 * the CLI). Every room below reads the plan's typed values and never parses
 * a setting's text again; config.json, the resume fingerprint and the
 * command's header lines are written from the plan (run_config.c). */
#ifndef PZ_RUN_SETTINGS_H
#define PZ_RUN_SETTINGS_H

#include "pipezip/pipezip.h"
#include "base/names.h"
#include "codec/desc.h"
#include "data/data.h"
#include "link/link.h"
#include "nn/nn.h"
#include "pipe/pipe.h"
#include "run/metrics.h"

struct run_link;

/* --eval-compress: through the compressed boundaries, plain ones, or both */
typedef enum { RUN_EVAL_BOTH, RUN_EVAL_ON, RUN_EVAL_OFF } run_eval_mode;
extern const pz_name run_eval_modes[];
/* --metrics */
typedef enum { RUN_METRICS_JSONL, RUN_METRICS_CSV } run_metrics_format;
extern const pz_name run_metrics_formats[];
/* --grad-mask */
extern const pz_name run_grad_masks[];

#define RUN_MAX_CUTS (PZ_MAX_STAGES - 1)

struct pz_run_plan {
    /* the data and the model */
    pz_model_spec model;
    pz_data_spec data;         /* data.file points into text[PZ_SET_DATA] */
    int vocab;                 /* text's tokens: 256 (bytes) or N (bpe:N) */
    int64_t limit_train, limit_test;
    /* training */
    int epochs, batch;
    int64_t steps;             /* optimizer steps (0: epochs decide) */
    int64_t checkpoint_every;  /* steps (0: at epoch ends only) */
    int optimizer;             /* pz_optim_kind (an enum setting: an int, set through its table) */
    float lr, momentum, weight_decay;
    int nesterov;
    pz_schedule schedule;      /* kind and shape; the run fills in steps and the base LR */
    float warmup_epochs, clip_norm;
    int crop_pad, flip;        /* -1: the dataset's default */
    uint64_t seed;
    int threads;
    /* the pipeline */
    int stages;                /* 0: auto */
    int n_cuts;
    char cuts[RUN_MAX_CUTS][64]; /* layer names or indices, resolved against the model */
    pz_codec_list fwd, bwd;
    int eval_compress;         /* run_eval_mode */
    int micro_batches, aqsgd_warmup; /* micro_batches 0: auto */
    double activation_memory;  /* auto: a stage's activation memory at most (0: no bound) */
    int pipe_schedule;         /* pz_pipe_schedule_kind */
    int pipe_delay;            /* the asynchronous schedule's delay in steps (0 or 1) */
    pz_clock_mode clock;       /* --compute-rate */
    int grad_mask;             /* 1: "fwd" */
    int subspace;               /* --subspace K (0: off); also in model.subspace */
    int project;                /* --project K (0: off); also in model.project, its cuts in model.project_after */
    pz_budget budget;          /* --budget, --budget-ladder, --budget-every (kind OFF: --fwd and --bwd) */
    /* where the stages run and how they talk */
    const struct run_link *link;
    double bandwidth, latency; /* emulated (0: not) */
    int link_model;            /* pz_wire_model */
    int realtime;
    double timeout;
    int turn;                  /* 0: the whole run is one turn, -1: every epoch, K: every K steps */
    int shard_index, shard_count;
    int64_t dump_step;         /* --dump-boundaries N:DIR (0: none; DIR in text[PZ_SET_DUMP_BOUNDARIES] after the colon) */
    /* the run directory */
    int metrics;               /* run_metrics_format */
    int log_every, eval_every;
    /* each setting's text as given (or its default's; NULL: none), and
     * whether it was given: the records and the paths read these */
    char *text[PZ_SET_COUNT];
    unsigned char given[PZ_SET_COUNT];
};

/* One setting: its names, its type, where its value lives and how text
 * becomes that value. */
/* SET_ENUM: a name of `names`, its value into an int field */
typedef enum { SET_INT, SET_I64, SET_U64, SET_FLOAT, SET_DOUBLE, SET_BOOL, SET_TEXT, SET_ENUM } setting_kind;
typedef struct run_setting_ {
    pz_setting id;
    const char *flag;          /* without "--"; NULL: not a flag (set by the program) */
    const char *key;           /* in config.json and the fingerprint */
    setting_kind kind;
    size_t offset;             /* numbers, booleans and enums: the field of struct pz_run_plan */
    double min, max;           /* numbers: the accepted range (both 0: any) */
    /* SET_TEXT: the text into the typed value (text stays in plan->text);
     * the error names `flag` */
    pz_status (*parse)(pz_run_plan *p, const char *text, const char *flag);
    const char *def;           /* SET_TEXT, SET_ENUM: the default's text (NULL: none) */
    const char *metavar, *help;
    const char *(*choices)(void); /* SET_TEXT: "a|b|c" for help (NULL: free text) */
    const pz_name *names;      /* SET_ENUM: its table */
    int describe;              /* SET_ENUM: help goes on with each value's help from its table */
    const char *(*help_more)(void); /* help goes on with this (generated from another table), or NULL */
    /* the records (run_config.c writes them from the rows, in table order) */
    const char *fp;            /* its key in the resume fingerprint (NULL: not in it, or fp_by writes it) */
    int fp_when;               /* FP_ALWAYS, or FP_NONZERO: only when its value is not 0 (text: not empty) */
    /* appends its fingerprint token(s) (" key=value") where its value alone cannot say them */
    void (*fp_by)(const struct pz_run_plan *p, const struct run_setting_ *s, char *out, size_t cap);
    /* config.json's field for its key where its value alone cannot say it (buf: room for its text) */
    pz_field (*record)(const struct pz_run_plan *p, const struct run_setting_ *s, char *buf, size_t cap);
} run_setting;
enum { FP_ALWAYS = 1, FP_NONZERO = 2 };

extern const run_setting run_settings[PZ_SET_COUNT];
const run_setting *run_setting_of(pz_setting id);
/* the values a setting takes, "a|b|c", for help (NULL: free text) */
const char *run_setting_choices(const run_setting *s);
/* its help, for --help: with each value's own where the row says so */
const char *run_setting_help(const run_setting *s);

/* " key=value" appended to a record being written (out holds cap bytes) */
void run_fp_append(char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* a codec list's canonical text ("q8:asym,nearest,per=tensor,1=q2:..."), a budget ladder's ("SPEC/SPEC") */
void run_codec_list_canonical(const pz_codec_list *l, char *buf, size_t cap);
void run_ladder_canonical(const pz_budget *b, char *buf, size_t cap);

/* pz_run_plan_set naming the flag as the user typed it ("--learning-rate"). */
pz_status run_plan_set_as(pz_run_plan *p, pz_setting id, const char *text, const char *flag);

/* The rules across settings, checked before a run (or a server) starts:
 * what each names is one setting's flag. The boundary flags (--fwd, --bwd,
 * --link-*, --grad-mask) given to a run with one stage are an error. */
pz_status run_plan_check(const pz_run_plan *p);
/* Will this run have a single stage (no boundary)? --cuts decides when
 * given, then --stages; by default resnets are cut after each residual
 * group, and a run over processes has a stage per process. */
int run_plan_one_stage(const pz_run_plan *p);
/* Does it run a pipeline, and its layout: pz_run_uses_pipeline and
 * pz_run_layout (run/run.h). */
/* text[id], or "" */
const char *run_plan_str(const pz_run_plan *p, pz_setting id);

#endif
