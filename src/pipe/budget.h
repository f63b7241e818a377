/* SPDX-License-Identifier: MIT */
/* budget.h — traffic budgets: instead of one codec per boundary and
 * direction given by hand, a budget (a traffic reduction, bytes per step,
 * or a link rate and a step time) and a ladder of stateless codecs, best
 * first; every boundary's sender measures each rung on the tensors of a
 * probe step (bytes and error), and one rule (pz_budget_choose) picks a
 * rung per boundary and direction: the least summed error that fits. The
 * pipeline re-decides after step 1 and every `every` steps (the BUDGET
 * messages, docs/PROTOCOL.md). Receivers decode any stateless frame, so a
 * choice changes only the sender's codec. */
#ifndef PZ_PIPE_BUDGET_H
#define PZ_PIPE_BUDGET_H

#include "base/base.h"
#include "base/names.h"
#include "codec/desc.h"

#include <stdint.h>

/* What the budget bounds */
typedef enum {
    PZ_BUDGET_OFF,   /* no budget: --fwd and --bwd */
    PZ_BUDGET_RATIO, /* "40x": both directions' bytes (headers included) at most fp32's / value */
    PZ_BUDGET_BYTES, /* "2MB": at most value bytes per step over every boundary and direction */
    PZ_BUDGET_LINK,  /* "200mbit@50ms": each link direction moves its step's bytes within the time (value: bytes) */
} pz_budget_kind;
extern const pz_name pz_budget_kinds[];
/* What the choice minimizes (--budget-rule) */
typedef enum {
    PZ_BUDGET_SUM, /* the summed (weighted) error */
    PZ_BUDGET_MAX, /* the largest (weighted) error, then the sum */
} pz_budget_rule;
extern const pz_name pz_budget_rules[];

#define PZ_BUDGET_RUNGS 8
#define PZ_BUDGET_EVERY_DEFAULT 50
/* the default ladder: byte-aligned quantization codes through the entropy stage */
#define PZ_BUDGET_LADDER_DEFAULT "q8:bytes+zstd/q6:bytes+zstd/q5:bytes+zstd/q4:bytes+zstd/q3:bytes+zstd/q2:bytes+zstd"

typedef struct {
    int kind;          /* pz_budget_kind */
    double value;      /* RATIO: the reduction; BYTES: bytes per step; LINK: bytes per step and link direction */
    double rate, time; /* LINK: bits per second and seconds, as given */
    int every;         /* re-decide after step 1 and every `every` steps */
    double fwd_weight; /* the activations' errors count this many times a gradient's (0: 1) */
    int rule;          /* pz_budget_rule */
    int n_rungs;
    pz_codec_desc rung[PZ_BUDGET_RUNGS]; /* the ladder, best first */
} pz_budget;

/* "40x" | "2MB" (also B, kB, KiB, MiB, GB; "/step" may follow) | "RATE@TIME"
 * ("200mbit@50ms"; RATE and TIME as --link-bandwidth and --link-latency)
 * into b's kind and value; PZ_ERR_ARG naming flag. */
pz_status pz_budget_parse(pz_budget *b, const char *text, const char *flag);
/* A size in bytes: "2MB", "500kB", "1.5MiB", "300000" (1 to 1e15); 0 if it is not one. */
int pz_parse_size(const char *text, double *bytes);
/* "SPEC/SPEC/...": 1 to PZ_BUDGET_RUNGS stateless codec specs, each once */
pz_status pz_budget_parse_ladder(pz_budget *b, const char *text, const char *flag);
/* Is step (1-based, the step just taken) one after which the choice is re-decided? */
static inline int pz_budget_due(const pz_budget *b, int64_t step) {
    return b->kind != PZ_BUDGET_OFF && step >= 1 && (step == 1 || (b->every > 0 && step % b->every == 0));
}

/* One boundary and direction, measured at a probe step under every rung. */
typedef struct {
    uint64_t elements;                /* floats sent in the step */
    uint64_t bytes[PZ_BUDGET_RUNGS];  /* the step's bytes under each rung (frames, and the forward's headers) */
    double err[PZ_BUDGET_RUNGS];      /* mean over the step's frames of (||x_hat - x|| / ||x||)^2 */
} pz_budget_meas;

/* The items of a pipeline of S stages: boundary b's activations are item
 * 2b, its gradients 2b + 1. */
#define PZ_BUDGET_ITEMS(S) (2 * ((S) - 1))

/* One decision: after step `step`, every item's measurements and the
 * rung chosen for it (what pz_pipe_budget returns). */
#define PZ_BUDGET_MAX_ITEMS 30
typedef struct {
    int64_t step;
    int n_items;
    pz_budget_meas meas[PZ_BUDGET_MAX_ITEMS];
    int choice[PZ_BUDGET_MAX_ITEMS];
    double limit, planned; /* bytes per step: the bound (LINK: per item) and the choice's total */
    int met;               /* 0: even the cheapest rungs are over the budget */
} pz_budget_round;

/* The choice: one rung per item, the least summed error (rule SUM) or the
 * least largest error, then the least sum (MAX), the activations' items
 * (even ones) weighed by fwd_weight, whose bytes fit
 * (RATIO, BYTES: the total; LINK: every item on its own). Items that
 * cannot fit take their cheapest rung and *met is 0. *limit: the bound in
 * bytes per step (LINK: per item); *planned: the chosen rungs' total. */
pz_status pz_budget_choose(const pz_budget *b, const pz_budget_meas *m, int n_items, int *choice, double *limit,
                           double *planned, int *met);

#endif
