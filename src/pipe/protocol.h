/* SPDX-License-Identifier: MIT */
/* protocol.h — the control protocol between the driver and the stages of a
 * pipeline: every message's tag and payload, little-endian, field by field
 * (docs/PROTOCOL.md is the specification; this file and protocol.c follow
 * it). Frames (ACT, GRAD) are the codec library's and are not parsed here.
 * Parsers check every length and range against what the receiver allows
 * and fail with a message naming the message. */
#ifndef PZ_PIPE_PROTOCOL_H
#define PZ_PIPE_PROTOCOL_H

#include "base/base.h"
#include "link/link.h"
#include "budget.h"

/* Tags are wire values: never renumber one. */
enum {
    MSG_BATCH = 1,        /* driver -> stage 0: a training batch (header + inputs) */
    MSG_META = 2,         /* forward: a micro-batch's header */
    MSG_ACT = 3,          /* forward: an activation frame */
    MSG_GRAD = 4,         /* backward: a gradient frame */
    MSG_LOSS = 5,         /* backward: the step's loss and correct count */
    MSG_STEPPED = 6,      /* stage 0 -> driver: the step is done everywhere before it */
    MSG_STOP = 7,         /* forward: end the run */
    MSG_EVAL = 8,         /* driver -> stage 0: an evaluation batch (header + inputs) */
    MSG_EVAL_META = 9,    /* forward: an evaluation batch's header */
    MSG_EVAL_RESULT = 10, /* backward: its summed loss and correct count */
    MSG_STATS = 11,       /* forward: collect every stage's report */
    MSG_STATS_REPLY = 12, /* backward: the reports of every stage */
    MSG_SAVE = 13,        /* forward: write a checkpoint into a directory */
    MSG_SAVED = 14,       /* backward: every stage wrote it */
    MSG_ERROR = 15,       /* either way: a stage failed, and why */
    MSG_WARMUP = 16,      /* forward: AQ-SGD warm-up on or off */
    MSG_WARMUP_SET = 17,  /* backward: done */
    MSG_PUT_STATE = 18,   /* forward: a split-learning client's state to keep */
    MSG_GET_STATE = 19,   /* forward: ask for the kept state */
    MSG_STATE = 20,       /* backward: the kept state (keeper -> stage 0); found? (stage 0 -> driver) */
    MSG_KEPT = 21,        /* backward: the state is kept */
    MSG_CHECK = 22,       /* forward: the driver's settings, to compare */
    MSG_CHECKED = 23,     /* backward: every stage runs the same pipeline */
    MSG_TIED_GRAD = 24,   /* backward: a tied head's gradient of the token table, f32[V * C] */
    MSG_TIED_WEIGHTS = 25,/* forward: the token table for the tied head's stage, f32[V * C] */
    MSG_NORM = 26,        /* backward: squared gradient norms, f64 per top-level layer from the sender's to the last */
    MSG_CLIP = 27,        /* forward: f32 the factor every gradient is scaled by before the step */
    MSG_BUDGET = 28,      /* forward: after a probe step, each stage's measurements of the budget's rungs */
    MSG_BUDGET_SET = 29,  /* backward: the rung chosen per boundary and direction, and what it was chosen from */
    MSG_DRAIN = 30,       /* forward: the asynchronous schedule's micro-batches in flight finish (STEPPED back from stage 0) */
};
/* The message's name ("BATCH"), or "unknown" */
const char *msg_name(int tag);

/* Receive the next message on l into *buf; an ERROR is returned as
 * PZ_ERR_STATE with its text (*error filled, when given), any tag other
 * than `want` as PZ_ERR_STATE naming both. */
pz_status msg_recv(pz_link *l, int want, uint8_t **buf, size_t *cap, size_t *len, double timeout_s, char *error,
                   size_t error_cap);
/* An ERROR's text into out (cap bytes): up to its NUL, never past the
 * message's len bytes, truncated to fit. */
void msg_error_text(const uint8_t *msg, size_t len, char *out, size_t cap);
/* Grow a message buffer to at least need bytes. */
pz_status msg_reserve(uint8_t **buf, size_t *cap, size_t need);

/* What a batch header carries per sample besides its id: P targets (1: a
 * class; T: a next token per position), and in a subspace model (where
 * every stage rebuilds the embeddings from the ids) its T input tokens,
 * each value in w bytes: w = 4 (i32) without a subspace, as before
 * subspaces existed; with one the narrowest of 1, 2 or 4 bytes that holds
 * the vocabulary. Both ends know it from the model: it is not sent. The
 * driver's BATCH and EVAL heads never carry tokens (their inputs are). */
typedef struct {
    int P, T, w;
    int vocab; /* tokens at or above it are refused */
} msg_layout;
/* P targets; T tokens (0: none) from a vocabulary of vocab */
msg_layout msg_layout_of(int P, int T, int vocab);

/* ---- META (and the head of BATCH): a (micro-)batch's header ----
 * [i32 B][u32 ids[B]][targets[B * P]][tokens[B * T]][f32 lr][i32
 * micro-batches in this step][i32 samples in this step's whole batch],
 * targets and tokens in the layout's width. */
typedef struct {
    int B, M, Btot;
    float lr;
    uint32_t *ids;    /* the receiver's arrays (at least max_B, max_B * P, max_B * T) */
    int32_t *targets;
    float *tokens;    /* as exact floats; untouched when the layout has none */
} msg_meta;
size_t msg_meta_bytes(int B, const msg_layout *L);
void msg_meta_put(uint8_t *out, int B, const msg_layout *L, const uint32_t *ids, const int32_t *targets, const float *tokens,
                  float lr, int M, int Btot);
/* parse from in[0..len), which must hold exactly the header (exact = 1) or
 * at least it (exact = 0, a BATCH: the inputs follow); 1 <= B <= max_B,
 * 1 <= M <= max_M, M <= Btot and B <= Btot <= max_B * M, tokens below the
 * vocabulary */
pz_status msg_meta_get(const uint8_t *in, size_t len, int exact, int max_B, int max_M, const msg_layout *L, msg_meta *m);

/* ---- EVAL_META (and the head of EVAL) ----
 * [i32 B][i32 compressed (0 or 1)][targets[B * P]][tokens[B * T]] */
size_t msg_eval_bytes(int B, const msg_layout *L);
void msg_eval_put(uint8_t *out, int B, const msg_layout *L, int compressed, const int32_t *targets, const float *tokens);
pz_status msg_eval_get(const uint8_t *in, size_t len, int exact, int max_B, const msg_layout *L, int *B, int *compressed,
                       int32_t *targets, float *tokens);

/* ---- LOSS: [f32 mean loss][i32 correct];  EVAL_RESULT: [f64 summed loss][i32 correct] ---- */
#define MSG_LOSS_BYTES 8
#define MSG_EVAL_RESULT_BYTES 12
void msg_loss_put(uint8_t *out, float loss, int correct);
pz_status msg_loss_get(const uint8_t *in, size_t len, float *loss, int *correct);
void msg_eval_result_put(uint8_t *out, double loss_sum, int correct);
pz_status msg_eval_result_get(const uint8_t *in, size_t len, double *loss_sum, int *correct);

/* ---- WARMUP: [i32 on (0 or 1)];  STATE to the driver: [i32 found (0 or 1)] ---- */
pz_status msg_flag_get(const uint8_t *in, size_t len, const char *what, int *flag);

/* ---- STATS_REPLY: one report per stage, in stage order ----
 * What a stage counted at its two boundaries since it started. */
typedef struct {
    int32_t stage;
    /* the boundary after this stage: activations it sent, gradients it decoded */
    uint64_t act_bytes, act_frames, act_elements, act_err_n, eval_bytes;
    double act_err_sum, act_encode_s, grad_decode_s;
    /* the boundary before it: gradients it sent, activations it decoded */
    uint64_t grad_bytes, grad_frames, grad_elements, grad_err_n;
    double grad_err_sum, grad_encode_s, act_decode_s;
    double compute_s, clock;
    pz_link_stats next, prev;
    /* a budget's rungs in use: the activations it sends, the gradients it sends (-1: none) */
    int32_t rung_act, rung_grad;
} stage_report;
#define MSG_REPORT_BYTES 256
/* ---- BUDGET and BUDGET_SET (a traffic budget, budget.h; L rungs) ----
 * An item (a boundary's direction at the probe step): [u64 elements]
 * L x ([u64 bytes][f64 mean squared relative error]).
 * BUDGET: [i64 step] then the items of the stages before the receiver, in
 * item order (boundary b: activations 2b, gradients 2b + 1).
 * BUDGET_SET: [i64 step][i32 met][f64 limit][f64 planned] n x [i32 rung]
 * then the n items. */
size_t msg_budget_item_bytes(int L);
void msg_budget_item_put(uint8_t *out, const pz_budget_meas *m, int L);
/* errors finite and >= 0, bytes below 2^53 */
pz_status msg_budget_item_get(const uint8_t *in, int L, pz_budget_meas *m);
size_t msg_budget_set_bytes(int n, int L);
void msg_budget_set_put(uint8_t *out, const pz_budget_round *r, int L);
/* exactly n items of L rungs, every rung below L */
pz_status msg_budget_set_get(const uint8_t *in, size_t len, int n, int L, pz_budget_round *r);
void msg_report_put(uint8_t *out, const stage_report *r);
void msg_report_get(const uint8_t *in, stage_report *r);

#endif
