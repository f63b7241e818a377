/* SPDX-License-Identifier: MIT */
/* timing.h — the dry timing mode: how long a pipeline's training step
 * takes over emulated links, without training. Every stage runs its
 * schedule's pieces (the same action lists as a real step, schedule.c) on
 * a virtual clock, sending the messages a real step sends (a micro-batch's
 * META and frame forward, its gradient frame back, the loss back, a tied
 * head's table and gradients, clipping's norms and scale), and every
 * message arrives by the link emulator's own rules (pz_wire_duplex,
 * pz_wire_shared: link.c). Compute is charged per micro-batch and stage,
 * as given. Any number of stages. */
#ifndef PZ_PIPE_TIMING_H
#define PZ_PIPE_TIMING_H

#include "link/link.h"
#include "pipe.h"

typedef struct {
    int S, M;          /* stages, micro-batches per step */
    int schedule;      /* pz_pipe_schedule_kind */
    int delay;         /* the asynchronous schedule's (--pipe-delay) */
    pz_link_emu emu;   /* every boundary's bandwidth, latency and wire model */
    int steps;         /* steps timed (>= 2; the last one's time is the steady step) */
    /* per boundary b (between stage b and b + 1), per micro-batch: the
     * forward message's header (META) and frame bytes, the gradient frame's */
    const double *fwd_header, *fwd_frame, *bwd_frame;
    /* per stage: compute seconds of one micro-batch's forward and backward,
     * and of the optimizer step */
    const double *fwd_s, *bwd_s, *opt_s;
    /* a head on stage tie_l tied to the token table on stage tie_e (tie_e <
     * tie_l; tie_e = -1: none): tie_bytes each way (TIED_WEIGHTS once a step,
     * TIED_GRAD per micro-batch) */
    int tie_e, tie_l;
    double tie_bytes;
    /* clipping by the global norm: NORM back (norm_bytes[i] from stage i),
     * CLIP forward (4 bytes); 0: off */
    int clip;
    const double *norm_bytes;
    int loss_bytes;    /* the step's LOSS back along the chain (8) */
} pz_timing_config;

typedef struct {
    double step_s;        /* the steady step: the last step's time at stage 0 */
    double first_step_s;  /* the first step's (the pipeline starts empty) */
    double total_s;       /* every step's, from an empty pipeline */
    /* the steady step's critical path: what the time is made of */
    double path_compute_s, path_transmit_s, path_latency_s;
    /* the busiest resource: a stage's compute, or a wire (duplex: one
     * direction into a stage; shared: a stage's inbound wire) */
    int busiest_stage;    /* the stage it belongs to */
    int busiest_is_wire;  /* 1: its inbound wire (shared) or one direction of it (duplex) */
    double busiest_s;     /* its work in the steady step */
    double bubble_s;      /* step_s - busiest_s: the fill and drain the schedule leaves */
    double bytes_per_step;/* every message billed on the links in a step */
    int messages_per_step;
} pz_timing_result;

/* Time the step; errors name a configuration that cannot run. */
pz_status pz_timing_run(const pz_timing_config *cfg, pz_timing_result *out);

/* A pipeline's step from its model (each stage's FLOPs per sample, 2 and
 * 4 x its layers' MACs as the rate clock charges them, at `rate` FLOP/s; a
 * tied head's table; its layers for clipping's norms), S stages ending
 * after layers cuts[0..S-2] (any number of stages), M micro-batches of a
 * step of `batch` samples, and per boundary b the bytes per sample of the
 * forward header and frame and of the gradient frame. */
typedef struct {
    const double *fwd_header, *fwd_frame, *bwd_frame; /* per boundary, per sample */
} pz_timing_bytes;
typedef struct {
    const pz_model *model;
    int S;
    const int *cuts;
    int M, schedule, delay, clip; /* delay: the asynchronous schedule's; clip: clipping by the global norm (its NORM and CLIP messages) */
    pz_link_emu emu;
    int batch;
    double rate;           /* FLOP/s; or, with micro_seconds > 0, unused: */
    double micro_seconds;  /* > 0: every stage's forward and backward of one micro-batch take this long (1:2) */
    pz_timing_bytes bytes;
    int steps;
} pz_timing_plan;
/* A plan from a pipeline's configuration (its stages, cuts, micro-batches,
 * schedule, clipping and links) */
pz_timing_plan pz_timing_plan_of(const pz_pipe_config *pc, const pz_model *m, int batch, double rate, pz_timing_bytes bytes);
pz_status pz_timing_of_plan(const pz_timing_plan *p, pz_timing_result *out);
/* The bytes of a step in M micro-batches, where they depend on M (a
 * codec's frames of smaller micro-batches). */
typedef pz_status (*pz_timing_bytes_fn)(void *user, int M, pz_timing_bytes *bytes);
/* --micro-batches auto: of the counts M that split the batch evenly (at
 * most max_M; those with allowed[M] when allowed is given), the one whose
 * steady step is least (the fewer on a tie); each count with the plan's
 * bytes, or bytes_of's for it when given. */
pz_status pz_timing_best_micro(const pz_timing_plan *p, int max_M, const unsigned char *allowed, pz_timing_bytes_fn bytes_of,
                               void *user, int *best_M, pz_timing_result *best);

#endif
