/* SPDX-License-Identifier: MIT */
/* async.c — the asynchronous schedule: a pipeline without a flush.
 *
 * The micro-batches of successive steps form one stream. Stage i of S
 * runs each micro-batch's forward as it comes and keeps warm =
 * min(k(S-1-i), M) of them in flight behind the forwards (k = 1: async;
 * 2: eager-async, whose forwards in flight cover a gradient's round trip
 * on duplex links), so at a step's end it still holds the last `warm`
 * micro-batches of the step's batch; their backward
 * passes run in the next step, between that batch's forwards. The forward
 * wave of batch b and the backward wave of batch b-1 cross in the
 * pipeline, and no stage waits for a round trip at a step's end (1F1B's
 * cool-down and warm-up, the flush, happen once, at the start).
 *
 * The weights. A stage's update for batch u runs when u's last backward
 * has (mid-step, at a different time at each stage), so the next batch's
 * forwards, some run before it and some after, must all use one version:
 * with a delay of 1, batch b (1-based) forwards and backwards through
 * W_{b-2}, and update u makes W_u = W_{u-1} - lr_u g_u(W_{u-2})
 * (PipeDream-2BW). Two versions are live at once: version u lives in
 * ver[u % 2], and a micro-batch's slot model reads the version its
 * forward used until its backward has run (weight stashing, no copies:
 * only the update copies W_{u-1} over W_{u-2}, which nothing reads any
 * more, and steps it). With a delay of 0 one version is stepped in place
 * and every step ends with its batch done: 1F1B's order, 1F1B's numbers.
 *
 * The loss of batch b reaches stage 0 during step b+1 (it follows the
 * gradient of b's last micro-batch): the driver's step returns the one
 * before (pipe.c). DRAIN runs every stage's micro-batches still in flight
 * (their backwards and the updates they complete) before anything that
 * needs the whole state (a checkpoint, an evaluation, the run's end);
 * draining changes when the work runs, never what it computes, so a run
 * gives the same numbers however often it drains. */
#include "pipe_internal.h"
#include "base/wire.h"

#include <signal.h>
#include <string.h>

/* where version u of the parameters lives (u may be -1: the initial ones) */
static int vidx(const stage *s, int64_t u) { return s->delay ? (int)(((u % 2) + 2) % 2) : 0; }

void async_use(stage *s, int k, int v) {
    float *want = s->ver[v];
    if (s->slot_base[k] == want) return;
    pz_seq_rebase(&s->model[k].net, s->from, s->to, s->slot_base[k], s->p1 - s->p0, want);
    s->slot_base[k] = want;
}

/* model[k] accumulates its parameter gradients into grad[g] */
static void use_grads(stage *s, int k, int g) {
    float *want = s->grad[g];
    if (s->slot_gbase[k] == want) return;
    pz_seq_rebase_grads(&s->model[k].net, s->from, s->to, s->slot_gbase[k], s->p1 - s->p0, want);
    s->slot_gbase[k] = want;
}

float *async_newest(const stage *s) { return s->async ? s->ver[vidx(s, s->opt.t)] : s->model[0].params + s->p0; }

float *async_stash(const stage *s) { return s->async && s->delay ? s->ver[vidx(s, s->opt.t - 1)] : NULL; }

pz_status async_eval_ready(stage *s) {
    if (!s->async) return PZ_OK;
    if (s->order.fwd != s->order.bwd || s->order.clip_batch >= 0)
        return pz_fail(PZ_ERR_STATE, "stage %d: %s with %lld micro-batches in flight (the driver drains the pipeline first)", s->index,
                       "an evaluation or a checkpoint", (long long)(s->order.fwd - s->order.bwd));
    async_use(s, s->eval_slot, vidx(s, s->opt.t));
    return PZ_OK;
}

/* ---- the order (the one list the real step and the dry timing run) ---- */

void async_order_init(async_order *o, int S, int i, int M, int ahead, int delay, int clip, int64_t updates) {
    memset(o, 0, sizeof *o);
    o->i = i, o->delay = delay, o->clip = clip;
    o->ahead = ahead;
    o->warm = ahead * (S - 1 - i) < M ? ahead * (S - 1 - i) : M;
    o->warm0 = ahead * (S - 1) < M ? ahead * (S - 1) : M;
    o->slots = async_slots(S, i, M, ahead, delay);
    o->batches = o->updates = updates, o->clip_batch = -1;
}

static void put(async_action *a, int *n, int kind, int m, int slot, int64_t batch) { a[(*n)++] = (async_action){kind, m, slot, batch}; }

/* a batch's CLIP, when its NORM went back and the forward it follows has
 * run (with no delay, at once), and the update it scales */
static void take_clip(async_order *o, async_action *a, int *n) {
    if (o->clip_batch < 0 || !(o->clip_ready || !o->delay)) return;
    put(a, n, AS_CLIP, 0, 0, o->clip_batch);
    o->clip_batch = -1, o->clip_ready = 0, o->updates++;
}

/* the oldest micro-batch in flight backward; after its batch's last, the
 * LOSS, then the update (clipping: NORM back, and the CLIP when here;
 * stage 0 has it at once) */
static void backward_of(async_order *o, async_action *a, int *n) {
    const int k = (int)(o->bwd++ % o->slots);
    const int64_t b = o->item_batch[k];
    put(a, n, AS_BWD, 0, k, b);
    if (!o->item_last[k]) return;
    put(a, n, AS_LOSS, 0, 0, b);
    if (!o->clip) {
        put(a, n, AS_UPDATE, 0, 0, b), o->updates++;
        return;
    }
    put(a, n, AS_NORM, 0, 0, b);
    o->clip_batch = b;
    if (o->i == 0) o->clip_ready = 1;
    take_clip(o, a, n);
}

int async_order_step(async_order *o, int Mb, async_action *a) {
    int n = 0;
    const int64_t b = o->batches;
    if (Mb == 0) { /* a drain: no forward to come, so the last batch's CLIP follows the DRAIN */
        o->clip_ready = 1;
        take_clip(o, a, &n);
        while (o->bwd < o->fwd) backward_of(o, a, &n);
        o->clip_ready = 0;
        return n;
    }
    for (int m = 0; m < Mb; m++) {
        const int k = (int)(o->fwd++ % o->slots);
        o->item_batch[k] = b, o->item_last[k] = m == Mb - 1;
        put(a, &n, AS_FWD, m, k, b);
        /* clipping: the forward the previous batch's CLIP follows (stage 0 sends it after this one's backward) */
        if (o->clip && o->i > 0 && o->updates < b && m == (o->warm0 < Mb ? o->warm0 : Mb) - 1) o->clip_ready = 1;
        take_clip(o, a, &n);
        while (o->fwd - o->bwd > o->warm) backward_of(o, a, &n);
    }
    /* nothing of an earlier batch stays in flight (two versions at most); with no delay, nothing at all */
    while (o->bwd < o->fwd && (!o->delay || o->item_batch[o->bwd % o->slots] < b)) backward_of(o, a, &n);
    o->batches++;
    return n;
}

int async_slots(int S, int i, int M, int ahead, int delay) {
    const int warm = ahead * (S - 1 - i) < M ? ahead * (S - 1 - i) : M;
    int64_t queue[2 * PZ_MAX_MICRO + PZ_MAX_STAGES];
    int head = 0, tail = 0, most = 1;
    for (int n = 0; n < 3; n++) { /* three batches reach the steady order */
        for (int m = 0; m < M; m++) {
            queue[tail++] = n;
            if (tail - head > most) most = tail - head;
            while (tail - head > warm) head++;
        }
        while (head < tail && (!delay || queue[head] < n)) head++;
    }
    return most;
}

pz_status async_plan(stage *s) {
    pz_pipe *p = s->pipe;
    s->async = 1, s->delay = p->cfg.delay;
    async_order_init(&s->order, p->S, s->index, s->M, pz_pipe_schedule_overlaps(p->cfg.schedule), s->delay, p->cfg.clip_norm > 0, 0);
    const int64_t n = s->p1 - s->p0;
    s->ver[0] = s->model[0].params + s->p0, s->grad[0] = s->model[0].grads + s->p0;
    if (s->delay) {
        if (!(s->ver[1] = s->stash_mem = pz_floats_try((size_t)n)) || !(s->grad[1] = s->grad_mem = pz_floats_try((size_t)n)))
            return pz_fail(PZ_ERR_NOMEM, "stage %d: out of memory for a second version of its %lld parameters", s->index, (long long)n);
        memcpy(s->ver[1], s->ver[0], sizeof(float) * (size_t)n);
    }
    for (int k = 0; k <= s->slots; k++) s->slot_base[k] = s->ver[0], s->slot_gbase[k] = s->grad[0];
    memset(s->grad[0], 0, sizeof(float) * (size_t)n);
    return PZ_OK;
}

void async_loaded(stage *s) {
    /* saved drained: every batch begun has its update */
    async_order_init(&s->order, s->pipe->S, s->index, s->M, s->order.ahead, s->delay, s->order.clip, s->opt.t);
    if (!s->delay || vidx(s, s->opt.t) == 0) return;
    float *t = s->ver[0]; /* the newest version was loaded into ver[0]: it lives in ver[1] */
    s->ver[0] = s->ver[1], s->ver[1] = t;
}

/* the update of batch n (0-based: update n + 1) into the version it makes,
 * its gradient scaled by `scale` (clipping) */
static pz_status update(stage *s, int64_t n, float scale) {
    const int64_t u = s->opt.t + 1;
    if (u != n + 1)
        return pz_fail(PZ_ERR_STATE, "stage %d: batch %lld completed after %lld updates (expected %lld)", s->index, (long long)n + 1,
                       (long long)s->opt.t, (long long)n);
    const double t0 = pz_now();
    float *dst = s->ver[vidx(s, u)];
    const size_t np = (size_t)(s->p1 - s->p0);
    float *g = s->grad[vidx(s, n)];
    if (scale < 1.0f)
        for (size_t i = 0; i < np; i++) g[i] *= scale;
    if (s->delay) memcpy(dst, s->ver[vidx(s, u - 1)], sizeof(float) * np);
    pz_optim_step(&s->opt, dst, g, s->bank_lr[n % 2]);
    async_use(s, s->eval_slot, vidx(s, u));
    pz_seq_after_step(&s->model[s->eval_slot].net, s->from, s->to);
    memset(g, 0, sizeof(float) * np);
    s->rep.compute_s += pz_now() - t0;
    if (s->index == s->pipe->kill_stage && s->opt.t == s->pipe->kill_step) raise(SIGKILL); /* crash tests (pipe_internal.h) */
    return PZ_OK;
}

/* one action of the order at this stage (t: the step's batch) */
static pz_status run(stage *s, stage_bufs *b, const async_action *a, step_state *t, size_t blen, int bank) {
    s->cur_batch = a->batch; /* a budget's probe step is its batch's */
    switch (a->kind) {
    case AS_FWD:
        if (s->index == 0) pipe_take_slice(s, b, a->slot, bank, a->m, t);
        else if (a->m > 0) PZ_TRY(pipe_take_micro(s, b, a->slot, 0, blen, t)); /* the first was taken to learn M */
        async_use(s, a->slot, vidx(s, a->batch - s->delay)); /* batch n + 1 (1-based) reads W_{n - delay} */
        use_grads(s, a->slot, vidx(s, a->batch));
        return pipe_forward_micro(s, b, a->slot, t);
    case AS_BWD: return pipe_backward_micro(s, b, a->slot);
    case AS_LOSS: return pipe_loss_back(s, b, t); /* the last stage's is its step's batch: its micro-batches never wait */
    case AS_NORM: s->clip_scale = 1.0f; return pipe_clip_norms(s, b, s->grad[vidx(s, a->batch)], &s->clip_scale);
    case AS_CLIP: {
        float scale = s->clip_scale; /* stage 0's own; the others' comes with the CLIP */
        PZ_TRY(pipe_clip_pass(s, b, &scale));
        return update(s, a->batch, scale);
    }
    case AS_UPDATE: return update(s, a->batch, 1.0f);
    }
    return pz_fail(PZ_ERR_STATE, "stage %d: an action of kind %d", s->index, a->kind);
}

pz_status async_step(stage *s, stage_bufs *b, const uint8_t *batch, size_t blen) {
    step_state t = {.M = s->M};
    const int bank = (int)(s->order.batches % 2), k0 = (int)(s->order.fwd % s->order.slots);
    if (s->index == 0) PZ_TRY(pipe_take_batch(s, b, batch, blen, bank, &t));
    else PZ_TRY(pipe_take_micro(s, b, k0, 1, blen, &t)); /* the first META says M */
    s->bank_lr[bank] = t.lr;
    async_action a[ASYNC_ACTIONS(PZ_MAX_MICRO)];
    const int n = async_order_step(&s->order, t.M, a);
    for (int j = 0; j < n; j++) PZ_TRY(run(s, b, &a[j], &t, blen, bank));
    return s->index == 0 ? pz_link_send(s->prev, MSG_STEPPED, "", 0) : PZ_OK;
}

pz_status async_drain(stage *s, stage_bufs *b) {
    if (!s->async) return pz_fail(PZ_ERR_STATE, "a DRAIN message, but stage %d runs a schedule that flushes every step", s->index);
    if (s->next) PZ_TRY(pz_link_send(s->next, MSG_DRAIN, "", 0));
    step_state t = {.M = s->M};
    async_action a[ASYNC_ACTIONS(PZ_MAX_MICRO)];
    const int n = async_order_step(&s->order, 0, a);
    for (int j = 0; j < n; j++) PZ_TRY(run(s, b, &a[j], &t, 0, 0));
    return s->index == 0 ? pz_link_send(s->prev, MSG_STEPPED, "", 0) : PZ_OK;
}
