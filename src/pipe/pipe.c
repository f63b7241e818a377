/* SPDX-License-Identifier: MIT */
/* pipe.c — the driver: builds a pipeline (links between the local stages
 * and to the remote ones, each stage planned and started on its thread,
 * the settings check), and the public calls that drive it (a training
 * step, evaluation, statistics, checkpoints, warm-up, the split-learning
 * hand-over) as messages to stage 0 and their answers. The rooms: plan.c
 * (what each stage is), stage.c (the stage worker), schedule.c (the step
 * schedule), protocol.c (the messages; docs/PROTOCOL.md). */
#include "pipe_internal.h"
#include "base/wire.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pz_status driver_ask(pz_pipe *p, int tag, const void *msg, size_t len, int reply, size_t *n);

/* The links: the driver's, between local stages, and the remote ones
 * given; each stage's clock and emulation on its links. On failure the
 * caller frees the pipeline (and with it what was connected). */
static pz_status connect_stages(pz_pipe *p, const pz_pipe_config *cfg) {
    pz_status st = PZ_OK;
    pz_link *left = cfg->prev_link;
    if (p->has_driver) st = pz_link_inproc_pair(&p->to_first, &left, 8, "driver <-> stage 0");
    for (int i = p->first; i <= p->last && !st; i++) {
        stage *s = &p->st[i];
        s->prev = left, left = NULL;
        if (i < p->last) {
            char name[64];
            snprintf(name, sizeof name, "stage %d <-> stage %d", i, i + 1);
            st = pz_link_inproc_pair(&s->next, &left, 8, name);
        } else if (i < p->S - 1) {
            s->next = cfg->next_link;
        }
    }
    if (st) { /* the given remote links are the pipeline's to free, even now */
        if (!p->st[p->last].next && p->last < p->S - 1) pz_link_free(cfg->next_link);
        return st;
    }
    for (int i = p->first; i <= p->last; i++) {
        stage *s = &p->st[i];
        pz_link_set_clock(s->prev, &s->clock);
        if (s->next) pz_link_set_clock(s->next, &s->clock);
        if (i > 0) pz_link_set_emulation(s->prev, &cfg->emu);
        if (s->next) pz_link_set_emulation(s->next, &cfg->emu);
        /* a micro-batch's header and its frame are one transmission */
        pz_link_set_header_tag(s->prev, MSG_META), pz_link_set_header_tag(s->prev, MSG_EVAL_META);
    }
    if (p->has_driver) pz_link_set_clock(p->to_first, &p->clock);
    return PZ_OK;
}

/* what the asynchronous schedule cannot run with yet (NULL: nothing) */
static const char *overlap_refusal(const pz_pipe_config *cfg) {
    if (!pz_pipe_schedule_overlaps(cfg->schedule)) return NULL;
    return cfg->delay < 0 || cfg->delay > 1 ? "a delay of 0 or 1 steps"
           : cfg->n_stages < 2              ? "a pipeline of two stages or more"
           : cfg->serving || cfg->session   ? "its stages in one run (not split learning's turns yet)"
                                            : NULL;
}

pz_status pz_pipe_create(pz_pipe **out, const pz_pipe_config *cfg) {
    *out = NULL;
    if (cfg->n_stages < 1 || cfg->n_stages > PZ_MAX_STAGES)
        return pz_fail(PZ_ERR_ARG, "%d stages (expected 1..%d)", cfg->n_stages, PZ_MAX_STAGES);
    const int M = cfg->micro_batches ? cfg->micro_batches : 1;
    if (!pipe_schedule_of(cfg->schedule)) return pz_fail(PZ_ERR_ARG, "pipeline schedule %d is not one of pz_pipe_schedules", cfg->schedule);
    if (M < 1 || M > PZ_MAX_MICRO || M > cfg->batch_max)
        return pz_fail(PZ_ERR_ARG, "--micro-batches %d: expected 1..%d and at most the batch size", M, PZ_MAX_MICRO);
    const char *why = overlap_refusal(cfg);
    pz_pipe *p = why ? NULL : calloc(1, sizeof *p);
    if (why) {
        if (!cfg->serving) pz_link_free(cfg->prev_link);
        pz_link_free(cfg->next_link);
        return pz_fail(PZ_ERR_ARG, "--pipe-schedule %s (delay %d) needs %s", pz_name_of(pz_pipe_schedules, cfg->schedule), cfg->delay, why);
    }
    if (!p) {
        if (!cfg->serving) pz_link_free(cfg->prev_link);
        pz_link_free(cfg->next_link);
        return pz_fail(PZ_ERR_NOMEM, "out of memory for a pipeline");
    }
    p->cfg = *cfg;
    p->cfg.micro_batches = M;
    p->kill_stage = -1;
    const char *kill = getenv("PZ_TEST_KILL_STAGE_AT");
    long long ks = -1, kt = -1;
    if (kill && sscanf(kill, "%lld:%lld", &ks, &kt) == 2 && ks >= 0 && kt >= 1) p->kill_stage = (int)ks, p->kill_step = kt;
    const pz_budget *bg = &cfg->budget;
    if (bg->kind != PZ_BUDGET_OFF) { /* the senders start at the ladder's first rung */
        if (bg->n_rungs < 1 || bg->n_rungs > PZ_BUDGET_RUNGS || bg->every < 1 || !(bg->value > 0) || cfg->n_stages < 2) {
            if (!cfg->serving) pz_link_free(cfg->prev_link);
            pz_link_free(cfg->next_link);
            free(p);
            return pz_fail(PZ_ERR_ARG, "a budget of %d rungs re-decided every %d steps over %d stages (it needs 1..%d rungs, "
                           "every >= 1 and a pipeline)", bg->n_rungs, bg->every, cfg->n_stages, PZ_BUDGET_RUNGS);
        }
        for (int b = 0; b + 1 < cfg->n_stages; b++) p->cfg.fwd[b] = p->cfg.bwd[b] = bg->rung[0];
    }
    p->schedule = pipe_schedule_of(cfg->schedule);
    p->lag = pz_pipe_schedule_overlaps(cfg->schedule) && cfg->delay > 0;
    if (p->cfg.timeout_s <= 0) p->cfg.timeout_s = 60.0;
    if (p->cfg.err_every == 0) p->cfg.err_every = 10;
    p->S = cfg->n_stages;
    p->first = cfg->local_set ? cfg->first_local : 0;
    p->last = cfg->local_set ? cfg->last_local : p->S - 1;
    p->has_driver = p->first == 0;
    p->mb_max = (cfg->batch_max + M - 1) / M;
    plan_fingerprint(p);
    pz_status st = PZ_OK;
    if (p->first < 0 || p->last >= p->S || p->first > p->last) st = pz_fail(PZ_ERR_ARG, "local stages %d..%d of %d", p->first, p->last, p->S);
    else if (p->first > 0 && !cfg->prev_link) st = pz_fail(PZ_ERR_ARG, "stage %d needs a link to stage %d", p->first, p->first - 1);
    else if (p->last < p->S - 1 && !cfg->next_link) st = pz_fail(PZ_ERR_ARG, "stage %d needs a link to stage %d", p->last, p->last + 1);
    if (st) {
        if (!cfg->serving) pz_link_free(cfg->prev_link);
        pz_link_free(cfg->next_link);
        free(p);
        return st;
    }
    if ((st = connect_stages(p, cfg))) {
        pz_pipe_free(p);
        return st;
    }
    for (int i = p->first; i <= p->last && !st; i++) st = plan_stage(p, i);
    if (!st && cfg->restore && cfg->restore->kept) {
        stage *k = &p->st[p->first];
        if (!(k->kept = blob_dup(cfg->restore->kept, cfg->restore->kept_len)))
            st = pz_fail(PZ_ERR_NOMEM, "out of memory restoring a %zu-byte client state", cfg->restore->kept_len);
        else k->kept_len = cfg->restore->kept_len;
    }
    if (st) {
        pz_pipe_free(p);
        return st;
    }
    pz_clock_start(&p->clock, cfg->realtime, cfg->clock);
    /* the stages here run at once: they share the threads (more would only
     * wait for a core, and a stage's clock would charge the waiting) */
    const int local = p->last - p->first + 1;
    p->stage_threads = pz_get_threads() / local > 1 ? pz_get_threads() / local : 1;
    for (int i = p->first; i <= p->last; i++) {
        pthread_create(&p->st[i].thread, NULL, stage_main, &p->st[i]);
        p->st[i].running = 1;
    }
    p->started = 1;
    if (p->has_driver && p->S > 1) { /* every stage, wherever it runs, agrees on the pipeline */
        size_t n;
        st = driver_ask(p, MSG_CHECK, p->fingerprint, strlen(p->fingerprint), MSG_CHECKED, &n);
        if (st) {
            char why[1024];
            snprintf(why, sizeof why, "%s", pz_last_error());
            pz_pipe_free(p);
            return pz_fail(st, "%s", why);
        }
    }
    *out = p;
    return PZ_OK;
}

static pz_status driver_error(pz_pipe *p, pz_status fallback) {
    /* the reason a local stage recorded (its own or one passed along); a
     * stage that only found its neighbour gone says less than the one
     * that failed */
    for (int pass = 0; pass < 2; pass++)
        for (int i = p->first; i <= p->last; i++)
            if (p->st[i].error[0] && (pass || !strstr(p->st[i].error, "the peer closed the link")))
                return pz_fail(PZ_ERR_STATE, "%s", p->st[i].error);
    return fallback;
}

/* receive on the driver's link; an ERROR names the stage that failed */
static pz_status driver_recv(pz_pipe *p, int want, size_t *n) {
    int tag;
    pz_status st = pz_link_recv(p->to_first, &tag, &p->buf, &p->cap, n, p->cfg.timeout_s * (p->S + 1));
    if (st) return driver_error(p, st);
    if (tag == MSG_ERROR) {
        char text[501];
        msg_error_text(p->buf, *n, text, sizeof text);
        return pz_fail(PZ_ERR_STATE, "%s", text);
    }
    if (tag != want) return pz_fail(PZ_ERR_STATE, "stage 0 sent %s (%d), expected %s (%d)", msg_name(tag), tag, msg_name(want), want);
    return PZ_OK;
}

static pz_status drain(pz_pipe *p);

/* Send stage 0 a message (msg may be p->buf) and wait for the answer `reply`
 * (into p->buf, *n bytes); errors name the stage where they started. A
 * request other than a step finds no micro-batch in flight (it drains
 * first). */
static pz_status driver_ask(pz_pipe *p, int tag, const void *msg, size_t len, int reply, size_t *n) {
    if (!p->has_driver) return pz_fail(PZ_ERR_STATE, "this process has no driver (stage 0 runs elsewhere)");
    if (tag != MSG_BATCH && tag != MSG_DRAIN && p->in_flight) {
        if (msg == p->buf) return pz_fail(PZ_ERR_STATE, "a %s request with micro-batches in flight", msg_name(tag));
        PZ_TRY(drain(p));
    }
    const pz_status st = pz_link_send(p->to_first, tag, msg, len);
    return st ? driver_error(p, st) : driver_recv(p, reply, n);
}

int64_t pz_pipe_activation_bytes(const pz_pipe *p, int i) {
    return p && i >= p->first && i <= p->last ? p->st[i].act_bytes : 0;
}

pz_status pz_pipe_train_step(pz_pipe *p, const float *x, const int32_t *y, const uint32_t *ids, int B, float lr,
                             float *loss, int *correct) {
    if (B < 1 || B > p->cfg.batch_max) return pz_fail(PZ_ERR_ARG, "batch of %d, the pipeline takes 1..%d", B, p->cfg.batch_max);
    const int64_t per = pz_shape_numel(p->cfg.in);
    const msg_layout L = pipe_driver_layout(p);
    const size_t len = msg_meta_bytes(B, &L) + 4 * (size_t)(B * per);
    PZ_TRY(msg_reserve(&p->buf, &p->cap, len));
    msg_meta_put(p->buf, B, &L, ids, y, NULL, lr, 1, B);
    pz_put_words(p->buf + msg_meta_bytes(B, &L), x, (size_t)(B * per));
    size_t n;
    if (!p->lag) {
        PZ_TRY(driver_ask(p, MSG_BATCH, p->buf, len, MSG_LOSS, &n));
        PZ_TRY(msg_loss_get(p->buf, n, loss, correct));
        return driver_recv(p, MSG_STEPPED, &n);
    }
    /* lagging: the previous batch's loss comes during this step (or was kept by a drain) */
    *loss = NAN, *correct = -1;
    if (p->kept_n) *loss = p->kept_loss, *correct = p->kept_correct, p->kept_n = 0;
    if (p->in_flight) {
        PZ_TRY(driver_ask(p, MSG_BATCH, p->buf, len, MSG_LOSS, &n));
        PZ_TRY(msg_loss_get(p->buf, n, loss, correct));
        PZ_TRY(driver_recv(p, MSG_STEPPED, &n));
    } else {
        PZ_TRY(driver_ask(p, MSG_BATCH, p->buf, len, MSG_STEPPED, &n));
    }
    p->in_flight = 1;
    return PZ_OK;
}

int pz_pipe_lag(const pz_pipe *p) { return p->lag; }

/* DRAIN: the loss owed comes back, then STEPPED; kept for the next answer */
static pz_status drain(pz_pipe *p) {
    size_t n;
    float loss;
    int correct;
    PZ_TRY(driver_ask(p, MSG_DRAIN, "", 0, MSG_LOSS, &n));
    PZ_TRY(msg_loss_get(p->buf, n, &loss, &correct));
    PZ_TRY(driver_recv(p, MSG_STEPPED, &n));
    p->in_flight = 0;
    p->kept_n = 1, p->kept_loss = loss, p->kept_correct = correct;
    return PZ_OK;
}

pz_status pz_pipe_drain(pz_pipe *p, float *loss, int *correct) {
    *loss = NAN, *correct = -1;
    if (p->in_flight) PZ_TRY(drain(p));
    if (p->kept_n) *loss = p->kept_loss, *correct = p->kept_correct, p->kept_n = 0;
    return PZ_OK;
}

pz_status pz_pipe_evaluate(pz_pipe *p, const float *x, const int32_t *y, int64_t N, int compress, double *loss,
                           double *accuracy) {
    if (!p->has_driver) return pz_fail(PZ_ERR_STATE, "this process has no driver");
    if (p->in_flight) PZ_TRY(drain(p)); /* before its batches take p->buf */
    const int64_t per = pz_shape_numel(p->cfg.in);
    const int P = pipe_targets(p);
    const msg_layout L = pipe_driver_layout(p);
    double total = 0.0;
    int64_t hits = 0;
    for (int64_t i = 0; i < N; i += p->mb_max) {
        const int B = (int)(N - i < p->mb_max ? N - i : p->mb_max);
        const size_t hdr = msg_eval_bytes(B, &L), len = hdr + 4 * (size_t)(B * per);
        PZ_TRY(msg_reserve(&p->buf, &p->cap, len));
        msg_eval_put(p->buf, B, &L, compress != 0, y + i * P, NULL);
        pz_put_words(p->buf + hdr, x + i * per, (size_t)(B * per));
        size_t n;
        PZ_TRY(driver_ask(p, MSG_EVAL, p->buf, len, MSG_EVAL_RESULT, &n));
        double sum;
        int c;
        PZ_TRY(msg_eval_result_get(p->buf, n, &sum, &c));
        total += sum, hits += c;
        if (p->eval_progress) p->eval_progress(p->eval_user, i + B, N);
    }
    *loss = N ? total / (double)N : 0.0;
    *accuracy = N ? (double)hits / ((double)N * P) : 0.0;
    return PZ_OK;
}

void pz_pipe_set_eval_progress(pz_pipe *p, pz_eval_progress_fn fn, void *user) {
    p->eval_progress = fn, p->eval_user = user;
}

pz_status pz_pipe_collect_stats(pz_pipe *p) {
    size_t n;
    PZ_TRY(driver_ask(p, MSG_STATS, "", 0, MSG_STATS_REPLY, &n));
    if (n != (size_t)p->S * MSG_REPORT_BYTES) return pz_fail(PZ_ERR_STATE, "statistics of %zu bytes for %d stages", n, p->S);
    for (int i = 0; i < p->S; i++) {
        stage_report r;
        msg_report_get(p->buf + (size_t)i * MSG_REPORT_BYTES, &r);
        if (r.stage != i) return pz_fail(PZ_ERR_STATE, "statistics out of order (stage %d at %d)", r.stage, i);
        p->reports[i] = r;
    }
    return PZ_OK;
}

pz_boundary_stats pz_pipe_boundary_stats(const pz_pipe *p, int b) {
    pz_boundary_stats s = {.fwd_rung = -1, .bwd_rung = -1};
    if (b < 0 || b >= p->S - 1) return s;
    const stage_report *a = &p->reports[b], *z = &p->reports[b + 1];
    s.fwd_bytes = a->act_bytes, s.fwd_frames = a->act_frames, s.fwd_elements = a->act_elements;
    s.fwd_err_sum = a->act_err_sum, s.fwd_err_n = a->act_err_n;
    s.fwd_encode_s = a->act_encode_s, s.fwd_decode_s = z->act_decode_s;
    s.bwd_bytes = z->grad_bytes, s.bwd_frames = z->grad_frames, s.bwd_elements = z->grad_elements;
    s.bwd_err_sum = z->grad_err_sum, s.bwd_err_n = z->grad_err_n;
    s.bwd_encode_s = z->grad_encode_s, s.bwd_decode_s = a->grad_decode_s;
    s.eval_bytes = a->eval_bytes;
    s.link_fwd_bytes = a->next.bytes_sent, s.link_bwd_bytes = z->prev.bytes_sent;
    s.wire_fwd_bytes = a->next.wire_bytes_sent, s.wire_bwd_bytes = z->prev.wire_bytes_sent;
    s.link_fwd_messages = a->next.messages_sent, s.link_bwd_messages = z->prev.messages_sent;
    s.busy_fwd_s = a->next.busy_seconds, s.busy_bwd_s = z->prev.busy_seconds;
    s.fwd_rung = a->rung_act, s.bwd_rung = z->rung_grad;
    return s;
}

double pz_pipe_stage_compute(const pz_pipe *p, int stage) {
    return stage >= 0 && stage < p->S ? p->reports[stage].compute_s : 0.0;
}

double pz_pipe_clock(pz_pipe *p) {
    pz_clock_charge(&p->clock);
    return p->clock.t;
}

pz_status pz_pipe_save(pz_pipe *p, const char *dir) {
    if (!p->has_driver) return pz_fail(PZ_ERR_STATE, "this process has no driver");
    PZ_TRY(pz_mkdir_p(dir));
    size_t n;
    return driver_ask(p, MSG_SAVE, dir, strlen(dir), MSG_SAVED, &n);
}

pz_status pz_pipe_set_warmup(pz_pipe *p, int on) {
    uint8_t v[4];
    pz_put_i32(v, on != 0);
    size_t n;
    return driver_ask(p, MSG_WARMUP, v, 4, MSG_WARMUP_SET, &n);
}

pz_status pz_pipe_budget(pz_pipe *p, int64_t step, pz_budget_round *r) {
    const pz_budget *b = &p->cfg.budget;
    if (b->kind == PZ_BUDGET_OFF) return pz_fail(PZ_ERR_ARG, "this pipeline has no budget");
    uint8_t v[8];
    pz_put_i64(v, step);
    size_t n;
    PZ_TRY(driver_ask(p, MSG_BUDGET, v, 8, MSG_BUDGET_SET, &n));
    PZ_TRY(msg_budget_set_get(p->buf, n, PZ_BUDGET_ITEMS(p->S), b->n_rungs, r));
    if (r->step != step) return pz_fail(PZ_ERR_STATE, "a BUDGET_SET for step %lld after step %lld", (long long)r->step, (long long)step);
    return PZ_OK;
}

pz_status pz_pipe_hand_on(pz_pipe *p) {
    size_t n;
    return driver_ask(p, MSG_PUT_STATE, "", 0, MSG_KEPT, &n);
}

pz_status pz_pipe_fetch(pz_pipe *p, int *found) {
    size_t n;
    PZ_TRY(driver_ask(p, MSG_GET_STATE, "", 0, MSG_STATE, &n));
    return msg_flag_get(p->buf, n, "STATE", found);
}

pz_status pz_pipe_wait(pz_pipe *p) {
    for (int i = p->first; i <= p->last; i++)
        if (p->st[i].running) pthread_join(p->st[i].thread, NULL), p->st[i].running = 0;
    for (int i = p->first; i <= p->last; i++)
        if (p->st[i].error[0]) return pz_fail(PZ_ERR_STATE, "%s", p->st[i].error);
    return PZ_OK;
}

int pz_pipe_stages(const pz_pipe *p) { return p->S; }

int pz_pipe_checked(const pz_pipe *p) { return p->checked; }

void pz_pipe_state_free(pz_pipe_state *st) {
    for (int i = 0; i < PZ_MAX_STAGES; i++) free(st->blob[i]);
    free(st->kept);
    memset(st, 0, sizeof *st);
}

pz_status pz_pipe_snapshot(pz_pipe *p, pz_pipe_state *out) {
    for (int i = p->first; i <= p->last; i++)
        if (p->st[i].running) return pz_fail(PZ_ERR_STATE, "a snapshot of a running pipeline");
    pz_pipe_state st = {0};
    pz_status rc = PZ_OK;
    for (int i = p->first; i <= p->last && !rc; i++) {
        stage *s = &p->st[i];
        pz_codec *codecs[4] = {s->fwd_rx, s->bwd_tx, s->fwd_tx, s->bwd_rx};
        const pz_ckpt_params v = {async_newest(s), async_stash(s)};
        rc = async_eval_ready(s);
        if (!rc) rc = pz_checkpoint_pack(&st.blob[i], &st.len[i], i, &s->model[0], s->p0, s->p1, &v, &s->opt, codecs, plan_stage_codecs(s));
    }
    const stage *k = &p->st[p->first];
    if (!rc && k->kept) {
        if (!(st.kept = blob_dup(k->kept, k->kept_len))) rc = pz_fail(PZ_ERR_NOMEM, "out of memory for a snapshot");
        else st.kept_len = k->kept_len;
    }
    if (rc) {
        pz_pipe_state_free(&st);
        return rc;
    }
    pz_pipe_state_free(out);
    *out = st;
    return PZ_OK;
}

void pz_pipe_stop(pz_pipe *p) {
    if (p->started && p->has_driver) pz_link_send(p->to_first, MSG_STOP, "", 0);
    p->started = 0;
    for (int i = p->first; i <= p->last; i++)
        if (p->st[i].running) pthread_join(p->st[i].thread, NULL), p->st[i].running = 0;
}

void pz_pipe_free(pz_pipe *p) {
    if (!p) return;
    pz_pipe_stop(p);
    for (int i = p->first; i <= p->last; i++) {
        stage *s = &p->st[i];
        for (int m = 0; m < PZ_MAX_MICRO; m++)
            if (s->model[m].params) pz_model_free(&s->model[m]);
        pz_optim_free(&s->opt);
        free(s->stash_mem), free(s->grad_mem);
        pz_codec_free(s->fwd_rx), pz_codec_free(s->bwd_tx), pz_codec_free(s->fwd_tx), pz_codec_free(s->bwd_rx);
        pz_codec_free(s->eval_tx), pz_codec_free(s->eval_rx), pz_codec_free(s->plain_tx), pz_codec_free(s->plain_rx);
        for (int d = 0; d < 2; d++)
            for (int r = 0; r < PZ_BUDGET_RUNGS; r++) pz_codec_free(s->probe[d][r]);
        if (!(p->cfg.serving && i == p->first)) pz_link_free(s->prev);
        pz_link_free(s->next);
        free(s->kept);
    }
    pz_link_free(p->to_first);
    free(p->buf);
    free(p);
}
