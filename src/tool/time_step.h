/* SPDX-License-Identifier: MIT */
/* time_step.h — `pipezip time`: a pipeline's training step over emulated
 * links, timed without training (pipe/timing.h), from settings as typed. */
#ifndef PZ_TOOL_TIME_STEP_H
#define PZ_TOOL_TIME_STEP_H

#include <stdio.h>

typedef struct {
    const char *model;        /* a preset or GPT spec */
    const char *input;        /* image models: "1x28x28" or "3x32x32" */
    int classes, vocab, subspace;
    int batch;                /* samples per step */
    long long tokens_per_step;/* > 0: the batch in tokens (language models) */
    int stages;               /* balanced by FLOPs, unless cuts */
    const char *cuts;
    const char *micro_batches;/* "M" or "auto" */
    int max_micro;            /* auto: at most this many */
    const char *schedule, *pipe_delay, *link_model, *bandwidth, *latency;
    const char *bytes;        /* "F" or "F/B" bytes per token (sample) each way; or */
    const char *fwd, *bwd;    /* codec specs; or */
    const char *run;          /* a finished run's directory */
    const char *compute_rate; /* FLOP/s; or */
    double links_off_step;    /* the step with the links off, seconds; or */
    double micro_seconds;     /* every stage's forward and backward of one micro-batch, seconds */
    double clip_norm;         /* < 0: the model's default (gpt-*: 1) */
    int steps, json;
} time_options;

/* prints the result to out, errors to stderr; 0 or an exit code */
int tool_time(const time_options *o, FILE *out);

#endif
