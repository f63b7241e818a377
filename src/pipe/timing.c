/* SPDX-License-Identifier: MIT */
/* timing.c — the dry timing mode (timing.h). Each stage's step is a list
 * of operations (receive, send, compute) made from its schedule's action
 * list (pipe_schedule.actions, the one a real step runs) in the order a
 * real stage does them (schedule.c, stage.c); the stages run in turn on
 * virtual clocks until each is blocked on a message not yet sent; every
 * message's arrival is the link emulator's (pz_wire_duplex at the sender,
 * pz_wire_shared at the receiver). Each time also carries what it is made
 * of along the path that set it (compute, transmission, latency), so the
 * steady step's critical path comes out with its length. */
#include "timing.h"
#include "pipe_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* a time and what it is made of along the path that set it */
typedef struct {
    double t, c, x, l;
} ptime;
static ptime later(ptime a, ptime b) { return b.t > a.t ? b : a; }

enum { OP_RECV, OP_SEND, OP_COMPUTE, OP_STEP_END };
enum { TO_PREV, TO_NEXT };
typedef struct {
    int kind, dir, header, step;
    double v; /* bytes (send) or seconds (compute) */
} op;

typedef struct {
    ptime at;  /* duplex: its arrival; shared: when it was sent */
    double bytes;
    int header, step;
} msg;

typedef struct {
    msg *m;
    int n, head, cap;
} queue;

typedef struct {
    op *ops;
    int n, cap, pc;
    ptime clock;
} prog;

/* room for one more of n elements of `size` in *items (capacity *cap) */
static pz_status grow(void **items, int *cap, int n, size_t size) {
    if (n < *cap) return PZ_OK;
    const int c = *cap ? 2 * *cap : 64;
    void *m = realloc(*items, size * (size_t)c);
    if (!m) return pz_fail(PZ_ERR_NOMEM, "out of memory timing a step");
    *items = m, *cap = c;
    return PZ_OK;
}

static pz_status push_op(prog *p, op o) {
    PZ_TRY(grow((void **)&p->ops, &p->cap, p->n, sizeof o));
    p->ops[p->n++] = o;
    return PZ_OK;
}

static pz_status push_msg(queue *q, msg m) {
    PZ_TRY(grow((void **)&q->m, &q->cap, q->n, sizeof m));
    q->m[q->n++] = m;
    return PZ_OK;
}

#define RECV(DIR) PZ_TRY(push_op(p, (op){OP_RECV, DIR, 0, k, 0}))
#define SEND(DIR, BYTES, HDR) PZ_TRY(push_op(p, (op){OP_SEND, DIR, HDR, k, BYTES}))
#define COMPUTE(SEC) PZ_TRY(push_op(p, (op){OP_COMPUTE, 0, 0, k, SEC}))

/* a micro-batch's forward at stage i: META and the frame in, the compute,
 * META and the frame on */
static pz_status forward_ops(const pz_timing_config *c, int i, int k, prog *p) {
    const int first = i == 0, last = i == c->S - 1;
    if (!first) {
        RECV(TO_PREV);
        RECV(TO_PREV);
    }
    COMPUTE(c->fwd_s[i]);
    if (!last) {
        SEND(TO_NEXT, c->fwd_header[i], 1);
        SEND(TO_NEXT, c->fwd_frame[i], 0);
    }
    return PZ_OK;
}

/* the asynchronous schedule: stage i's operations in step k, from the order
 * a real stage runs (async.c's async_order_step, its state o carried from
 * step to step) */
static pz_status program_async(const pz_timing_config *c, int i, int k, prog *p, async_order *o) {
    const int S = c->S, first = i == 0, last = i == S - 1;
    async_action a[ASYNC_ACTIONS(PZ_MAX_MICRO)];
    const int n = async_order_step(o, c->M, a);
    for (int j = 0; j < n; j++) {
        switch (a[j].kind) {
        case AS_FWD: PZ_TRY(forward_ops(c, i, k, p)); break;
        case AS_BWD:
            if (!last) RECV(TO_NEXT);
            COMPUTE(c->bwd_s[i]);
            if (!first) SEND(TO_PREV, c->bwd_frame[i - 1], 0);
            break;
        case AS_LOSS:
            if (!last) RECV(TO_NEXT);
            if (!first) SEND(TO_PREV, c->loss_bytes, 0);
            break;
        case AS_NORM:
            if (!last) RECV(TO_NEXT);
            if (!first) SEND(TO_PREV, c->norm_bytes[i], 0);
            break;
        case AS_CLIP:
            if (!first) RECV(TO_PREV);
            if (!last) SEND(TO_NEXT, 4, 0);
            if (c->opt_s[i] > 0) COMPUTE(c->opt_s[i]);
            break;
        case AS_UPDATE:
            if (c->opt_s[i] > 0) COMPUTE(c->opt_s[i]);
            break;
        }
    }
    if (first) PZ_TRY(push_op(p, (op){OP_STEP_END, 0, 0, k, 0}));
    return PZ_OK;
}

/* stage i's operations in step k, in a real stage's order */
static pz_status program(const pz_timing_config *c, const pipe_schedule *sc, int i, int k, prog *p, pipe_action *a) {
    const int S = c->S, first = i == 0, last = i == S - 1;
    const int tied = c->tie_e >= 0 && c->tie_e < c->tie_l;
    /* begin_step: the table to the head's stage (it changed last step; the
     * first step sends the embedding's own initialisation) */
    if (tied && i == c->tie_e) SEND(TO_NEXT, c->tie_bytes, 0);
    if (tied && i > c->tie_e && i <= c->tie_l) {
        RECV(TO_PREV);
        if (i < c->tie_l) SEND(TO_NEXT, c->tie_bytes, 0);
    }
    const int n = sc->actions(S, i, c->M, a);
    for (int j = 0; j < n; j++) {
        switch (a[j].kind) {
        case PIPE_FWD: PZ_TRY(forward_ops(c, i, k, p)); break;
        case PIPE_BWD:
            if (!last) RECV(TO_NEXT);
            if (tied && i == c->tie_e) RECV(TO_NEXT);
            COMPUTE(c->bwd_s[i]);
            if (!first) SEND(TO_PREV, c->bwd_frame[i - 1], 0);
            if (tied && i > c->tie_e && i <= c->tie_l) {
                if (i < c->tie_l) RECV(TO_NEXT);
                SEND(TO_PREV, c->tie_bytes, 0);
            }
            break;
        case PIPE_LOSS:
            if (!last) RECV(TO_NEXT);
            if (!first) SEND(TO_PREV, c->loss_bytes, 0);
            break;
        }
    }
    if (c->clip) { /* NORM back to stage 0, CLIP forward */
        if (!last) RECV(TO_NEXT);
        if (!first) {
            SEND(TO_PREV, c->norm_bytes[i], 0);
            RECV(TO_PREV);
        }
        if (!last) SEND(TO_NEXT, 4, 0);
    }
    if (c->opt_s[i] > 0) COMPUTE(c->opt_s[i]);
    if (first) PZ_TRY(push_op(p, (op){OP_STEP_END, 0, 0, k, 0}));
    return PZ_OK;
}

static pz_status check(const pz_timing_config *c) {
    if (c->S < 2 || c->S > 1 << 16) return pz_fail(PZ_ERR_ARG, "timing %d stages (expected 2..65536)", c->S);
    if (c->M < 1 || c->M > PZ_MAX_MICRO) return pz_fail(PZ_ERR_ARG, "timing %d micro-batches (expected 1..%d)", c->M, PZ_MAX_MICRO);
    if (!pipe_schedule_of(c->schedule)) return pz_fail(PZ_ERR_ARG, "pipeline schedule %d is not one of pz_pipe_schedules", c->schedule);
    if (pz_pipe_schedule_overlaps(c->schedule) && (c->delay < 0 || c->delay > 1 || (c->tie_e >= 0 && c->tie_e < c->tie_l)))
        return pz_fail(PZ_ERR_ARG, "the asynchronous schedule runs a delay of 0 or 1 and no head tied across stages");
    if (c->steps < 2) return pz_fail(PZ_ERR_ARG, "timing %d steps (at least 2: the last one is the steady step)", c->steps);
    if (!(c->emu.bandwidth >= 0) || !(c->emu.latency >= 0)) return pz_fail(PZ_ERR_ARG, "a negative bandwidth or latency");
    for (int i = 0; i < c->S; i++) {
        if (!(c->fwd_s[i] >= 0 && c->bwd_s[i] >= 0 && c->opt_s[i] >= 0 && isfinite(c->fwd_s[i] + c->bwd_s[i] + c->opt_s[i])))
            return pz_fail(PZ_ERR_ARG, "stage %d's compute time is not a non-negative number", i);
        if (i + 1 < c->S && !(c->fwd_header[i] >= 0 && c->fwd_frame[i] >= 0 && c->bwd_frame[i] >= 0 &&
                              isfinite(c->fwd_header[i] + c->fwd_frame[i] + c->bwd_frame[i])))
            return pz_fail(PZ_ERR_ARG, "boundary %d's message sizes are not non-negative numbers", i + 1);
    }
    return PZ_OK;
}

pz_status pz_timing_run(const pz_timing_config *c, pz_timing_result *out) {
    memset(out, 0, sizeof *out);
    PZ_TRY(check(c));
    const pipe_schedule *sc = pipe_schedule_of(c->schedule);
    const int S = c->S, last_step = c->steps - 1;
    prog *pr = calloc((size_t)S, sizeof *pr);
    queue *q = calloc(2 * (size_t)S, sizeof *q);    /* q[2b]: stage b -> b+1, q[2b+1]: b+1 -> b */
    pz_wire *w = calloc(2 * (size_t)S, sizeof *w);   /* duplex: a direction's sender side, as q; shared: w[i] stage i's inbound */
    ptime *wt = calloc(2 * (size_t)S, sizeof *wt);   /* ... and what each wire's time is made of */
    /* the steady step's work per stage: compute, its inbound wire (shared),
     * the directions into it from the stage before and after (duplex) */
    double *work = calloc(4 * (size_t)S, sizeof *work);
    pipe_action *a = malloc(sizeof *a * (2 * PZ_MAX_MICRO + 1));
    ptime *ends = calloc((size_t)c->steps, sizeof *ends);
    async_order *order = malloc(sizeof *order);
    pz_status st = pr && q && w && wt && work && a && ends && order ? PZ_OK : pz_fail(PZ_ERR_NOMEM, "out of memory timing a step");
    for (int i = 0; i < S && !st; i++) {
        if (sc->overlaps) async_order_init(order, S, i, c->M, sc->overlaps, c->delay, c->clip, 0);
        for (int k = 0; k < c->steps && !st; k++) st = sc->overlaps ? program_async(c, i, k, &pr[i], order) : program(c, sc, i, k, &pr[i], a);
    }
    const int shared = c->emu.model == PZ_WIRE_SHARED;
    const double lat = c->emu.latency;
    int n_ends = 0;
    for (int left = S; !st && left > 0;) {
        int moved = 0;
        left = 0;
        for (int i = 0; i < S && !st; i++) {
            prog *p = &pr[i];
            while (p->pc < p->n && !st) {
                const op *o = &p->ops[p->pc];
                if (o->kind == OP_COMPUTE) {
                    p->clock.t += o->v, p->clock.c += o->v;
                    if (o->step == last_step) work[4 * i] += o->v;
                } else if (o->kind == OP_STEP_END) {
                    ends[n_ends++] = p->clock;
                } else if (o->kind == OP_SEND) {
                    /* stage i to its neighbour: queue 2i (forward) or 2(i-1)+1 (back) */
                    const int qi = o->dir == TO_NEXT ? 2 * i : 2 * (i - 1) + 1;
                    const double busy = pz_wire_busy(&c->emu, (size_t)o->v);
                    msg m = {p->clock, o->v, o->header, o->step};
                    if (!shared) { /* the sender stamps its arrival (a header as any message: link.c) */
                        ptime start = later(p->clock, wt[qi]);
                        const double arrive = pz_wire_duplex(&w[qi], &c->emu, p->clock.t, (size_t)o->v, 0);
                        start.x += busy, start.t = w[qi].free_at;
                        wt[qi] = start;
                        m.at = start, m.at.l += lat, m.at.t = arrive;
                        if (o->step == last_step) work[o->dir == TO_NEXT ? 4 * (i + 1) + 2 : 4 * (i - 1) + 3] += busy;
                    }
                    if (o->step == last_step) out->bytes_per_step += o->v, out->messages_per_step++;
                    st = push_msg(&q[qi], m);
                } else { /* OP_RECV: from the neighbour, when it has sent */
                    const int qi = o->dir == TO_PREV ? 2 * (i - 1) : 2 * i + 1;
                    queue *from = &q[qi];
                    if (from->head == from->n) break;
                    const msg m = from->m[from->head++];
                    ptime arrive = m.at;
                    if (shared) { /* the receiver bills its one inbound wire */
                        const double busy = pz_wire_busy(&c->emu, (size_t)m.bytes), hold = busy + (m.header ? 0.0 : lat);
                        ptime start = later(wt[i], m.at);
                        arrive.t = pz_wire_shared(&w[i], &c->emu, m.at.t, (size_t)m.bytes, m.header);
                        arrive.c = start.c, arrive.x = start.x + busy, arrive.l = start.l + (m.header ? 0.0 : lat);
                        wt[i] = arrive;
                        if (m.step == last_step) work[4 * i + 1] += hold;
                    }
                    p->clock = later(p->clock, arrive);
                }
                p->pc++, moved = 1;
            }
            if (p->pc < p->n) left++;
        }
        if (!st && left && !moved) st = pz_fail(PZ_ERR_STATE, "the timed schedule is stuck (every stage waits on a message)");
    }
    if (!st && n_ends != c->steps) st = pz_fail(PZ_ERR_STATE, "the timed schedule ended %d of %d steps", n_ends, c->steps);
    if (!st) {
        const ptime e1 = ends[last_step], e0 = ends[last_step - 1];
        out->step_s = e1.t - e0.t, out->first_step_s = ends[0].t, out->total_s = e1.t;
        out->path_compute_s = e1.c - e0.c, out->path_transmit_s = e1.x - e0.x, out->path_latency_s = e1.l - e0.l;
        /* the busiest resource: a stage's compute or a wire */
        for (int i = 0; i < S; i++)
            for (int r = 0; r < 4; r++)
                if (work[4 * i + r] > out->busiest_s) out->busiest_s = work[4 * i + r], out->busiest_stage = i, out->busiest_is_wire = r > 0;
        out->bubble_s = out->step_s - out->busiest_s;
    }
    for (int i = 0; pr && i < S; i++) free(pr[i].ops);
    for (int i = 0; q && i < 2 * S; i++) free(q[i].m);
    free(pr), free(q), free(w), free(wt), free(work), free(a), free(ends), free(order);
    return st;
}

pz_timing_plan pz_timing_plan_of(const pz_pipe_config *pc, const pz_model *m, int batch, double rate, pz_timing_bytes bytes) {
    return (pz_timing_plan){.model = m, .S = pc->n_stages, .cuts = pc->cuts, .M = pc->micro_batches > 0 ? pc->micro_batches : 1,
                            .schedule = pc->schedule, .delay = pc->delay, .clip = pc->clip_norm > 0, .emu = pc->emu, .batch = batch, .rate = rate,
                            .bytes = bytes, .steps = 3};
}

pz_status pz_timing_of_plan(const pz_timing_plan *p, pz_timing_result *out) {
    const int S = p->S, M = p->M;
    const pz_seq *net = &p->model->net;
    if (S < 2 || S > net->n) return pz_fail(PZ_ERR_ARG, "timing a pipeline of %d stages of %d layers (expected 2..%d)", S, net->n, net->n);
    if (M < 1 || p->batch < M) return pz_fail(PZ_ERR_ARG, "a batch of %d samples in %d micro-batches", p->batch, M);
    if (!(p->rate > 0) && !(p->micro_seconds > 0)) return pz_fail(PZ_ERR_ARG, "timing compute needs a positive FLOP rate or time");
    for (int i = 0; i + 1 < S; i++)
        if (p->cuts[i] < (i ? p->cuts[i - 1] + 1 : 0) || p->cuts[i] >= net->n - 1)
            return pz_fail(PZ_ERR_ARG, "timing: cut %d after layer %d leaves a stage without layers", i + 1, p->cuts[i]);
    double *v = malloc(sizeof *v * 7 * (size_t)S);
    if (!v) return pz_fail(PZ_ERR_NOMEM, "out of memory timing %d stages", S);
    double *fh = v, *ff = v + S, *fb = v + 2 * S, *cf = v + 3 * S, *cb = v + 4 * S, *co = v + 5 * S, *nb = v + 6 * S;
    const double per = (double)p->batch / M; /* samples per micro-batch */
    int tie_e = -1, tie_l = -1;
    double tie_bytes = 0;
    for (int i = 0, from = 0; i < S; i++) {
        const int to = i == S - 1 ? net->n : p->cuts[i] + 1;
        int64_t macs = 0;
        for (int l = from; l < to; l++) {
            macs += net->layers[l].macs;
            if (net->layers[l].kind == PZ_LAYER_TIED_HEAD) { /* its embedding's stage */
                const pz_layer *emb = &net->layers[net->layers[l].k];
                int e = 0;
                while (e < S - 1 && net->layers[l].k > p->cuts[e]) e++;
                if (e != i) tie_e = e, tie_l = i, tie_bytes = 4.0 * emb->vocab * emb->out.d[1];
            }
        }
        cf[i] = p->micro_seconds > 0 ? p->micro_seconds / 3 : 2.0 * (double)macs * per / p->rate, cb[i] = 2 * cf[i], co[i] = 0;
        nb[i] = 8.0 * (net->n - from);
        fh[i] = ff[i] = fb[i] = 0;
        if (i + 1 < S) fh[i] = p->bytes.fwd_header[i] * per, ff[i] = p->bytes.fwd_frame[i] * per, fb[i] = p->bytes.bwd_frame[i] * per;
        from = to;
    }
    const pz_timing_config c = {.S = S, .M = M, .schedule = p->schedule, .delay = p->delay, .emu = p->emu, .steps = p->steps > 1 ? p->steps : 3,
                                .fwd_header = fh, .fwd_frame = ff, .bwd_frame = fb, .fwd_s = cf, .bwd_s = cb, .opt_s = co,
                                .tie_e = tie_e, .tie_l = tie_l, .tie_bytes = tie_bytes, .clip = p->clip, .norm_bytes = nb,
                                .loss_bytes = MSG_LOSS_BYTES};
    const pz_status st = pz_timing_run(&c, out);
    free(v);
    return st;
}

pz_status pz_timing_best_micro(const pz_timing_plan *p, int max_M, const unsigned char *allowed, pz_timing_bytes_fn bytes_of,
                               void *user, int *best_M, pz_timing_result *best) {
    *best_M = 0;
    pz_timing_plan c = *p;
    for (int M = 1; M <= p->batch && M <= max_M && M <= PZ_MAX_MICRO; M++) {
        if (p->batch % M || (allowed && !allowed[M])) continue;
        c.M = M;
        if (bytes_of) PZ_TRY(bytes_of(user, M, &c.bytes));
        pz_timing_result r;
        PZ_TRY(pz_timing_of_plan(&c, &r));
        if (!*best_M || r.step_s < best->step_s) *best_M = M, *best = r;
    }
    return *best_M ? PZ_OK : pz_fail(PZ_ERR_ARG, "no micro-batch count up to %d splits a batch of %d", max_M, p->batch);
}
