/* SPDX-License-Identifier: MIT */
/* stage.c — the stage worker: a thread that owns one stage's layers,
 * optimizer and codecs, waits for messages from the stage before it (or
 * the driver), and answers each as docs/PROTOCOL.md says: training steps
 * go to the schedule, the control messages (evaluation, statistics,
 * checkpoints, warm-up, a split-learning client's state, the settings
 * check) are answered here. A stage that fails tells both neighbours why
 * (ERROR) and closes its links, so the driver names the stage where it
 * started. */
#include "pipe_internal.h"
#include "base/wire.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

pz_status stage_recv(stage *s, pz_link *l, int want, uint8_t **buf, size_t *cap, size_t *len, double timeout_s) {
    return msg_recv(l, want, buf, cap, len, timeout_s, s->error, sizeof s->error);
}

pz_status stage_encode(pz_codec *tx, const float *t, int B, pz_shape sh, const uint32_t *ids, uint8_t **frame,
                       size_t *frame_cap, size_t *flen, pz_codec_stats *stats) {
    int64_t shape[1 + PZ_SHAPE_MAX];
    const int nd = pz_shape_batch(sh, B, shape);
    const size_t need = pz_codec_max_frame_bytes(tx, nd, shape);
    PZ_TRY(msg_reserve(frame, frame_cap, need));
    return pz_codec_encode(tx, t, nd, shape, ids, *frame, *frame_cap, flen, stats);
}

pz_status stage_dump(const stage *s, int dir, int m, const float *t, int B, pz_shape sh) {
    const pz_pipe *p = s->pipe;
    if (!p->cfg.dump_dir || stage_step_of(s) != p->cfg.dump_step) return PZ_OK;
    int64_t dims[1 + PZ_SHAPE_MAX];
    const int nd = pz_shape_batch(sh, B, dims);
    char shape[160] = "", path[4096];
    size_t n = 0;
    int64_t count = 1;
    for (int i = 0; i < nd; i++) n += (size_t)snprintf(shape + n, sizeof shape - n, "%lld, ", (long long)dims[i]), count *= dims[i];
    /* numpy's format 1.0: magic, version, the header's length, a dict padded to 64 bytes, then the data */
    char hdr[256];
    int hl = snprintf(hdr + 10, sizeof hdr - 10, "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }", shape);
    while ((10 + hl + 1) % 64) hdr[10 + hl++] = ' ';
    hdr[10 + hl++] = '\n';
    memcpy(hdr, "\x93NUMPY\x01\x00", 8);
    hdr[8] = (char)(hl & 0xff), hdr[9] = (char)(hl >> 8);
    PZ_TRY(pz_mkdir_p(p->cfg.dump_dir));
    snprintf(path, sizeof path, "%s/b%d_%s_m%d.npy", p->cfg.dump_dir, dir ? s->index : s->index + 1, dir ? "bwd" : "fwd", m);
    FILE *f = fopen(path, "wb");
    if (!f) return pz_fail(PZ_ERR_IO, "--dump-boundaries: cannot write %s: %s", path, strerror(errno));
    const int ok = fwrite(hdr, 1, (size_t)(10 + hl), f) == (size_t)(10 + hl) && fwrite(t, sizeof *t, (size_t)count, f) == (size_t)count;
    if (fclose(f) || !ok) return pz_fail(PZ_ERR_IO, "--dump-boundaries: writing %s failed", path);
    return PZ_OK;
}

pz_status stage_check_frame(const char *what, int nd, const int64_t *shape, int B, pz_shape sh) {
    int64_t want_dims[1 + PZ_SHAPE_MAX];
    int ok = nd == pz_shape_batch(sh, B, want_dims);
    for (int i = 0; ok && i < nd; i++) ok = shape[i] == want_dims[i];
    if (ok) return PZ_OK;
    char want[48], got[96];
    size_t n = 0;
    got[0] = 0;
    for (int i = 0; i < nd && n < sizeof got; i++) n += (size_t)snprintf(got + n, sizeof got - n, i ? "x%lld" : "%lld", (long long)shape[i]);
    return pz_fail(PZ_ERR_STATE, "%s frame of shape %s, expected %d samples of %s", what, got, B, pz_shape_str(sh, want, sizeof want));
}

pz_status stage_check_targets(const stage *s, const int32_t *y, size_t n) {
    const int K = s->model[0].n_classes;
    for (size_t i = 0; i < n; i++)
        if (y[i] < 0 || y[i] >= K)
            return pz_fail(PZ_ERR_STATE, "a target of %d where the model has %d %s", (int)y[i], K,
                           s->model[0].targets > 1 ? "tokens" : "classes");
    return PZ_OK;
}

pz_status stage_send_tied_weights(stage *s, stage_bufs *b) {
    if (s->tie_e != s->index || !s->tie_dirty) return PZ_OK;
    const size_t n = sizeof(float) * s->tie_n;
    PZ_TRY(msg_reserve(&b->frame, &b->frame_cap, n));
    pz_put_words(b->frame, s->tie_w, s->tie_n);
    s->tie_dirty = 0;
    return pz_link_send(s->next, MSG_TIED_WEIGHTS, b->frame, n);
}

pz_status stage_tied_weights(stage *s, const uint8_t *msg, size_t len) {
    if (s->tie_e < 0 || s->index <= s->tie_e || s->index > s->tie_l)
        return pz_fail(PZ_ERR_STATE, "a TIED_WEIGHTS message at stage %d, which is not on a tie", s->index);
    if (len != sizeof(float) * s->tie_n)
        return pz_fail(PZ_ERR_STATE, "a TIED_WEIGHTS message of %zu bytes for a table of %zu floats", len, s->tie_n);
    if (s->index < s->tie_l) return pz_link_send(s->next, MSG_TIED_WEIGHTS, msg, len);
    pz_get_words(s->tie_w, msg, s->tie_n);
    return PZ_OK;
}

/* The answer to a request this stage passed down the chain: take it from
 * the next stage and pass it up. */
static pz_status relay_back(stage *s, int reply, uint8_t **buf, size_t *cap) {
    pz_pipe *p = s->pipe;
    size_t n;
    PZ_TRY(stage_recv(s, s->next, reply, buf, cap, &n, stage_wait(s, s->next, p->S - s->index)));
    return pz_link_send(s->prev, reply, *buf, n);
}

/* A request travelling down the chain (statistics, checkpoint, warm-up,
 * settings): pass it on and its answer back; the last stage answers with
 * answer[0..alen) itself. */
static pz_status pass_on(stage *s, int tag, int reply, uint8_t **buf, size_t *cap, size_t len, const void *answer, size_t alen) {
    if (!s->next) return pz_link_send(s->prev, reply, answer, alen);
    PZ_TRY(pz_link_send(s->next, tag, *buf, len));
    return relay_back(s, reply, buf, cap);
}

/* EVAL (stage 0: header and inputs) or EVAL_META then ACT: one evaluation
 * batch forward; EVAL_RESULT back from the last stage. */
static pz_status stage_eval(stage *s, stage_bufs *b, size_t len) {
    pz_pipe *p = s->pipe;
    const int first = s->index == 0, last = s->index == p->S - 1, k = s->eval_slot;
    PZ_TRY(async_eval_ready(s));
    pz_seq *net = &s->model[k].net;
    const int64_t in_per = pz_shape_numel(stage_in_shape(s));
    float *x_in = b->x_in[k];
    int32_t *labels = b->labels[k];
    int B, compress;
    const int P = pipe_targets(p);
    const msg_layout L = first ? pipe_driver_layout(p) : pipe_layout(p), Lnext = pipe_layout(p);
    PZ_TRY(stage_send_tied_weights(s, b));
    PZ_TRY(msg_eval_get(b->msg, len, !first, p->mb_max, &L, &B, &compress, labels, b->tokens[k]));
    const size_t hdr = msg_eval_bytes(B, &L);
    /* a subspace model's tokens: stage 0's inputs, the header's past it */
    const float *tok = first ? x_in : b->tokens[k];
    if (first) {
        if (len != hdr + 4 * (size_t)(B * in_per))
            return pz_fail(PZ_ERR_STATE, "an evaluation batch of %zu bytes does not fit its header (%d samples)", len, B);
        pz_get_words(x_in, b->msg + hdr, (size_t)(B * in_per));
    } else {
        size_t n;
        PZ_TRY(stage_recv(s, s->prev, MSG_ACT, &b->msg, &b->cap, &n, p->cfg.timeout_s));
        int nd;
        int64_t shape[PZ_MAX_DIMS];
        PZ_TRY(pz_codec_decode(compress ? s->eval_rx : s->plain_rx, b->msg, n, x_in, (size_t)(p->mb_max * in_per), &nd, shape));
        PZ_TRY(stage_check_frame("evaluation activation", nd, shape, B, stage_in_shape(s)));
    }
    stage_set_tokens(s, k, tok);
    pz_seq_forward(net, s->from, s->to, x_in, B, 0);
    const float *out = net->act[s->to - 1];
    if (last) {
        int correct = 0;
        PZ_TRY(stage_check_targets(s, labels, (size_t)B * P));
        const float loss = pz_model_loss(&s->model[k], NULL, &correct, out, labels, B);
        uint8_t res[MSG_EVAL_RESULT_BYTES];
        msg_eval_result_put(res, (double)loss * B, correct);
        return pz_link_send(s->prev, MSG_EVAL_RESULT, res, sizeof res);
    }
    size_t flen;
    PZ_TRY(stage_encode(compress ? s->eval_tx : s->plain_tx, out, B, stage_out_shape(s), NULL, &b->frame, &b->frame_cap, &flen, NULL));
    const size_t hnext = msg_eval_bytes(B, &Lnext);
    s->rep.eval_bytes += hnext + flen;
    msg_eval_put(b->hdr, B, &Lnext, compress, labels, tok);
    PZ_TRY(pz_link_send(s->next, MSG_EVAL_META, b->hdr, hnext));
    PZ_TRY(pz_link_send(s->next, MSG_ACT, b->frame, flen));
    return relay_back(s, MSG_EVAL_RESULT, &b->msg, &b->cap);
}

/* STATS: append this stage's report (its counters, its links', its clock)
 * and pass it on; the last stage turns the reports back as STATS_REPLY. */
static pz_status stage_stats(stage *s, uint8_t **buf, size_t *cap, size_t len) {
    if (len != (size_t)s->index * MSG_REPORT_BYTES)
        return pz_fail(PZ_ERR_STATE, "a STATS message of %zu bytes at stage %d (expected %d reports)", len, s->index, s->index);
    pz_clock_charge(&s->clock);
    s->rep.clock = s->clock.t;
    const int budget = s->pipe->cfg.budget.kind != PZ_BUDGET_OFF;
    s->rep.rung_act = budget && s->next ? s->rung[0] : -1;
    s->rep.rung_grad = budget && s->index > 0 ? s->rung[1] : -1;
    s->rep.prev = pz_link_get_stats(s->prev);
    if (s->next) s->rep.next = pz_link_get_stats(s->next);
    PZ_TRY(msg_reserve(buf, cap, len + MSG_REPORT_BYTES));
    msg_report_put(*buf + len, &s->rep);
    len += MSG_REPORT_BYTES;
    return pass_on(s, MSG_STATS, MSG_STATS_REPLY, buf, cap, len, *buf, len);
}

/* SAVE: write DIR/stage-<i>.bin (atomically), pass it on; SAVED back. */
static pz_status stage_save(stage *s, uint8_t **buf, size_t *cap, size_t len) {
    pz_pipe *p = s->pipe;
    char dir[4200], path[4300];
    if (len == 0 || len >= 4000 || memchr(*buf, 0, len)) return pz_fail(PZ_ERR_STATE, "bad checkpoint request");
    snprintf(dir, sizeof dir, "%.*s", (int)len, (char *)*buf);
    if (p->cfg.save_dir) {
        /* a split-learning server keeps its stages' files in its own
         * directory, DIR/epoch-E or DIR/step-N (--checkpoint-every): of
         * what the client sent only the kind and the number are used, so
         * nothing it sends chooses where the server writes */
        const char *leaf = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
        const int is_step = !strncmp(leaf, "step-", 5);
        const char *num = is_step ? leaf + 5 : !strncmp(leaf, "epoch-", 6) ? leaf + 6 : NULL;
        char *end = NULL;
        const long long e = num && *num >= '0' && *num <= '9' ? strtoll(num, &end, 10) : -1;
        if (e < 1 || e > 1000000000000LL || !end || *end)
            return pz_fail(PZ_ERR_STATE, "a checkpoint request for '%.80s' (a server writes only DIR/epoch-E and DIR/step-N)", leaf);
        snprintf(dir, sizeof dir, "%.4000s/%s-%lld", p->cfg.save_dir, is_step ? "step" : "epoch", e);
    }
    PZ_TRY(pz_mkdir_p(dir)); /* a stage on another host writes on its own disk */
    snprintf(path, sizeof path, "%s/stage-%d.bin", dir, s->index);
    pz_codec *codecs[4] = {s->fwd_rx, s->bwd_tx, s->fwd_tx, s->bwd_rx};
    PZ_TRY(async_eval_ready(s));
    const pz_ckpt_params v = {async_newest(s), async_stash(s)};
    pz_status st = pz_checkpoint_write(path, s->index, &s->model[0], s->p0, s->p1, &v, &s->opt, codecs, plan_stage_codecs(s));
    if (st) return pz_fail(st, "checkpoint: %s", pz_last_error());
    return pass_on(s, MSG_SAVE, MSG_SAVED, buf, cap, len, "", 0);
}

/* WARMUP [i32 on]: the sending codecs send uncompressed (AQ-SGD warm-up) or not. */
static pz_status stage_warmup(stage *s, uint8_t **buf, size_t *cap, size_t len) {
    int on;
    PZ_TRY(msg_flag_get(*buf, len, "WARMUP", &on));
    if (s->fwd_tx) pz_codec_set_warmup(s->fwd_tx, on);
    if (s->bwd_tx) pz_codec_set_warmup(s->bwd_tx, on);
    return pass_on(s, MSG_WARMUP, MSG_WARMUP_SET, buf, cap, len, "", 0);
}

/* BUDGET [i64 step][the items of the stages before]: after a probe step,
 * append this stage's measurements (its gradients' boundary, then its
 * activations'), pass it on; the last stage chooses the rungs and answers
 * BUDGET_SET, which every stage reads on its way back, taking the rungs of
 * the senders it holds. */
static pz_status stage_budget(stage *s, stage_bufs *b, size_t len) {
    pz_pipe *p = s->pipe;
    const pz_budget *bg = &p->cfg.budget;
    const int L = bg->n_rungs, n = PZ_BUDGET_ITEMS(p->S), before = s->index ? 2 * s->index - 1 : 0;
    const size_t item = msg_budget_item_bytes(L);
    if (bg->kind == PZ_BUDGET_OFF) return pz_fail(PZ_ERR_STATE, "a BUDGET message, but this pipeline runs without a --budget");
    if (len != 8 + (size_t)before * item)
        return pz_fail(PZ_ERR_STATE, "a BUDGET message of %zu bytes at stage %d (expected %zu: %d items of %d rungs)", len, s->index,
                       8 + (size_t)before * item, before, L);
    const int64_t step = pz_get_i64(b->msg);
    if (step == s->chosen_t)
        return pz_fail(PZ_ERR_STATE, "a second BUDGET message for step %lld at stage %d (its rungs were chosen already)", (long long)step,
                       s->index);
    if (step != s->opt.t || s->probe_t != step)
        return pz_fail(PZ_ERR_STATE, "a BUDGET message after step %lld, but stage %d has taken %lld steps and measured its rungs at "
                       "step %lld (the rungs are chosen after step 1 and every %d steps)", (long long)step, s->index,
                       (long long)s->opt.t, (long long)s->probe_t, bg->every);
    for (int i = 0; i < before; i++) { /* what the stages before measured: checked here too */
        pz_budget_meas m;
        PZ_TRY(msg_budget_item_get(b->msg + 8 + (size_t)i * item, L, &m));
    }
    /* this stage's: the gradient it sends back (item 2(i-1)+1), the activation it sends on (item 2i) */
    int have = before;
    PZ_TRY(msg_reserve(&b->msg, &b->cap, 8 + (size_t)n * item));
    for (int d = 1; d >= 0; d--) {
        if (d == 1 ? s->index == 0 : !s->next) continue;
        pz_budget_meas m = s->meas[d];
        if (s->meas_n[d] < 1) return pz_fail(PZ_ERR_STATE, "stage %d measured no %s at step %lld", s->index, d ? "gradients" : "activations", (long long)step);
        for (int r = 0; r < L; r++) m.err[r] /= s->meas_n[d];
        msg_budget_item_put(b->msg + 8 + (size_t)have * item, &m, L);
        have++;
    }
    size_t rlen;
    if (s->next) {
        PZ_TRY(pz_link_send(s->next, MSG_BUDGET, b->msg, 8 + (size_t)have * item));
        PZ_TRY(stage_recv(s, s->next, MSG_BUDGET_SET, &b->msg, &b->cap, &rlen, stage_wait(s, s->next, p->S - s->index)));
    } else { /* the last stage: every item is here; choose */
        pz_budget_round r = {.step = step, .n_items = n};
        for (int i = 0; i < n; i++) PZ_TRY(msg_budget_item_get(b->msg + 8 + (size_t)i * item, L, &r.meas[i]));
        PZ_TRY(pz_budget_choose(bg, r.meas, n, r.choice, &r.limit, &r.planned, &r.met));
        rlen = msg_budget_set_bytes(n, L);
        PZ_TRY(msg_reserve(&b->msg, &b->cap, rlen));
        msg_budget_set_put(b->msg, &r, L);
    }
    pz_budget_round r;
    PZ_TRY(msg_budget_set_get(b->msg, rlen, n, L, &r));
    if (r.step != step) return pz_fail(PZ_ERR_STATE, "a BUDGET_SET for step %lld after step %lld", (long long)r.step, (long long)step);
    if (s->next) PZ_TRY(plan_use_rung(s, 0, r.choice[2 * s->index]));
    if (s->index > 0) PZ_TRY(plan_use_rung(s, 1, r.choice[2 * (s->index - 1) + 1]));
    s->chosen_t = step;
    return pz_link_send(s->prev, MSG_BUDGET_SET, b->msg, rlen);
}

/* Client state handed from one split-learning client to the next. At the
 * first stage (driver side): PUT_STATE packs its state and sends it on,
 * GET_STATE asks for it and loads it. At the stage after a remote link:
 * keep it (KEPT) / give it back (STATE). */
static pz_status stage_handoff(stage *s, int tag, uint8_t **buf, size_t *cap, size_t len) {
    pz_pipe *p = s->pipe;
    pz_codec *codecs[4] = {s->fwd_rx, s->bwd_tx, s->fwd_tx, s->bwd_rx};
    const double tmo = stage_wait(s, s->next, p->S - s->index);
    if (s->index > 0) { /* the keeper */
        if (tag == MSG_PUT_STATE) {
            uint8_t *k = blob_dup(*buf, len);
            if (!k) return pz_fail(PZ_ERR_NOMEM, "out of memory keeping a %zu-byte client state", len);
            free(s->kept);
            s->kept = k, s->kept_len = len;
            return pz_link_send(s->prev, MSG_KEPT, "", 0);
        }
        if (len) return pz_fail(PZ_ERR_STATE, "a GET_STATE message of %zu bytes (expected none)", len);
        return pz_link_send(s->prev, MSG_STATE, s->kept ? s->kept : (const uint8_t *)"", s->kept_len);
    }
    if (!s->next) return pz_fail(PZ_ERR_STATE, "a one-stage pipeline has nobody to hand its state to");
    if (tag == MSG_PUT_STATE) {
        uint8_t *blob;
        size_t n;
        PZ_TRY(pz_checkpoint_pack(&blob, &n, 0, &s->model[0], s->p0, s->p1, NULL, &s->opt, codecs, 4));
        pz_status st = pz_link_send(s->next, MSG_PUT_STATE, blob, n);
        free(blob);
        PZ_TRY(st);
        return relay_back(s, MSG_KEPT, buf, cap);
    }
    size_t n;
    PZ_TRY(pz_link_send(s->next, MSG_GET_STATE, "", 0));
    PZ_TRY(stage_recv(s, s->next, MSG_STATE, buf, cap, &n, tmo));
    const int found = n > 0;
    if (found) PZ_TRY(plan_adopt_rungs(s, *buf, n, "the previous client's state"));
    codecs[1] = s->bwd_tx, codecs[2] = s->fwd_tx; /* the rungs it had */
    if (found) PZ_TRY(pz_checkpoint_unpack(*buf, n, "the previous client's state", 0, &s->model[0], s->p0, s->p1, NULL, &s->opt, codecs, 4));
    if (found) s->tie_dirty = s->tie_e == s->index; /* the table changed: send it before the next forward */
    uint8_t flag[4];
    pz_put_i32(flag, found);
    return pz_link_send(s->prev, MSG_STATE, flag, 4);
}

/* CHECK: every stage (in whatever process) must run the same pipeline:
 * compare the driver's settings with this stage's own, pass them on. */
static pz_status stage_check(stage *s, uint8_t **buf, size_t *cap, size_t len) {
    pz_pipe *p = s->pipe;
    const size_t mine = strlen(p->fingerprint);
    if (len != mine || memcmp(*buf, p->fingerprint, len)) {
        /* name the first setting that differs */
        const char *a = p->fingerprint, *b = (const char *)*buf;
        size_t i = 0;
        while (i < len && i < mine && a[i] == b[i]) i++;
        while (i > 0 && a[i - 1] != ' ') i--;
        return pz_fail(PZ_ERR_ARG, "started with other settings than the driver: here '%.60s...', the driver '%.*s...' (give every process the same model, cuts, codecs, batch and optimizer flags)",
                       a + i, (int)(len - i < 60 ? len - i : 60), b + i);
    }
    PZ_TRY(pass_on(s, MSG_CHECK, MSG_CHECKED, buf, cap, len, "", 0));
    if (s->index == p->first) p->checked = 1;
    return PZ_OK;
}

static void free_bufs(stage *s, stage_bufs *b) {
    (void)s;
    for (int m = 0; m < PZ_MAX_MICRO; m++) free(b->x_in[m]), free(b->dy[m]), free(b->ids[m]), free(b->labels[m]), free(b->tokens[m]);
    free(b->batch_x), free(b->dx), free(b->msg), free(b->frame), free(b->hdr), free(b->batch_ids), free(b->batch_labels), free(b->tie);
    free(b->norms), free(b->hdr_norm);
}

static pz_status alloc_bufs(stage *s, stage_bufs *b) {
    pz_pipe *p = s->pipe;
    const int64_t in_per = pz_shape_numel(stage_in_shape(s)), out_per = pz_shape_numel(stage_out_shape(s));
    const size_t mb = (size_t)p->mb_max, B = (size_t)p->cfg.batch_max, P = (size_t)pipe_targets(p);
    const pz_subspace *sub = s->model[0].sub;
    const int T = p->cfg.in.d[0];
    int ok = 1;
    /* the asynchronous schedule: per slot, its evaluation's past the training
     * slots, and two banks of stage 0's batches (the previous one in flight) */
    const int n = s->async ? (s->M > s->slots + 1 ? s->M : s->slots + 1) : s->M, banks = s->async ? 2 : 1;
    for (int m = 0; m < n; m++) {
        /* inputs and gradients per slot (stage 0 trains on the batch's inputs,
         * b->batch_x: its x_in[eval_slot] is evaluation's) */
        const int slot = m < s->slots || m == s->eval_slot;
        if (slot && (s->index > 0 || m == s->eval_slot)) ok &= (b->x_in[m] = pz_floats_try(mb * (size_t)in_per)) != NULL;
        if (slot) ok &= (b->dy[m] = pz_floats_try(mb * (size_t)out_per)) != NULL;
        ok &= (b->ids[m] = calloc(mb, sizeof(uint32_t))) != NULL;
        ok &= (b->labels[m] = calloc(mb * P, sizeof(int32_t))) != NULL;
        if (sub && s->index > 0) ok &= (b->tokens[m] = calloc(mb * (size_t)T, sizeof(float))) != NULL; /* stage 0's are its inputs */
    }
    if (s->index == 0) ok &= (b->batch_x = pz_floats_try(banks * B * (size_t)in_per)) != NULL;
    ok &= (b->dx = pz_floats_try(mb * (size_t)in_per)) != NULL;
    const msg_layout L = pipe_layout(p);
    const size_t hm = msg_meta_bytes((int)mb, &L), he = msg_eval_bytes((int)mb, &L);
    ok &= (b->hdr = malloc(hm > he ? hm : he)) != NULL;
    ok &= (b->batch_ids = calloc(banks * B, sizeof(uint32_t))) != NULL;
    ok &= (b->batch_labels = calloc(banks * B * P, sizeof(int32_t))) != NULL;
    if (s->tie_e == s->index) ok &= (b->tie = pz_floats_try(s->tie_n)) != NULL;
    ok &= (b->norms = calloc((size_t)s->model[0].net.n + 1, sizeof(double))) != NULL;
    return ok ? PZ_OK : pz_fail(PZ_ERR_NOMEM, "stage %d: out of memory for its buffers", s->index);
}

/* a message this stage does not take between steps */
static pz_status unexpected(const stage *s, int tag) {
    return pz_fail(PZ_ERR_STATE, "unexpected message %s (%d) from %s", msg_name(tag), tag, pz_link_name(s->prev));
}

/* This stage failed on its own (a send to a neighbour that had stopped,
 * most often): if a neighbour in this process or an MPI rank said why it
 * stopped before it did, that is the run's error, not the send's. */
static void adopt_pending_error(stage *s) {
    pz_link *l[2] = {s->next, s->prev};
    uint8_t *buf = NULL;
    size_t cap = 0, len;
    int tag, found = 0;
    for (int i = 0; i < 2 && !found; i++)
        while (l[i] && !pz_link_is_remote_party(l[i]) && !found && pz_link_recv(l[i], &tag, &buf, &cap, &len, 0.0) == PZ_OK)
            if (tag == MSG_ERROR) msg_error_text(buf, len, s->error, sizeof s->error), found = 1;
    free(buf);
}

void *stage_main(void *arg) {
    stage *s = arg;
    pz_pipe *p = s->pipe;
    pz_thread_attach(p->stage_threads);
    const int first = s->index == 0;
    stage_bufs b = {0};
    pz_clock_start(&s->clock, p->cfg.realtime, p->cfg.clock);
    pz_status st = alloc_bufs(s, &b);
    while (!st) {
        int tag;
        size_t len;
        if ((st = pz_link_recv(s->prev, &tag, &b.msg, &b.cap, &len, -1.0))) {
            /* between steps, a remote driver side that closed in order (the
             * last split-learning client) is the end of the run, not a failure */
            if (pz_link_peer_closed(s->prev) && s->index == p->first && p->first > 0) {
                st = PZ_OK;
                if (s->next) pz_link_send(s->next, MSG_STOP, "", 0);
            }
            break;
        }
        /* a split-learning server's first stage faces another party: it
         * takes nothing before the settings check, and no STOP (the
         * client ends its session by closing the link) */
        if (p->cfg.serving && s->index == p->first && ((!p->checked && tag != MSG_CHECK) || tag == MSG_STOP)) {
            st = pz_fail(PZ_ERR_STATE, "%s (%d) from the client %s", msg_name(tag), tag,
                         tag == MSG_STOP ? "(a client ends its session by closing the link)" : "before the settings check");
            break;
        }
        if (tag == MSG_STOP) {
            /* a split-learning client ends its turn: the server's stages stay */
            if (s->next && !(p->cfg.session && s->index == p->last)) pz_link_send(s->next, MSG_STOP, "", 0);
            break;
        }
        switch (tag) {
        case MSG_ERROR:
            msg_error_text(b.msg, len, s->error, sizeof s->error);
            st = PZ_ERR_STATE;
            break;
        case MSG_BATCH: st = !first ? unexpected(s, tag) : s->async ? async_step(s, &b, b.msg, len) : pipe_step(s, &b, b.msg, len); break;
        case MSG_META: st = first ? unexpected(s, tag) : s->async ? async_step(s, &b, NULL, len) : pipe_step(s, &b, NULL, len); break;
        case MSG_DRAIN: st = async_drain(s, &b); break;
        case MSG_EVAL: st = first ? stage_eval(s, &b, len) : unexpected(s, tag); break;
        case MSG_EVAL_META: st = !first ? stage_eval(s, &b, len) : unexpected(s, tag); break;
        case MSG_STATS: st = stage_stats(s, &b.msg, &b.cap, len); break;
        case MSG_SAVE: st = stage_save(s, &b.msg, &b.cap, len); break;
        case MSG_WARMUP: st = stage_warmup(s, &b.msg, &b.cap, len); break;
        case MSG_BUDGET: st = stage_budget(s, &b, len); break;
        case MSG_PUT_STATE: case MSG_GET_STATE: st = stage_handoff(s, tag, &b.msg, &b.cap, len); break;
        case MSG_CHECK: st = stage_check(s, &b.msg, &b.cap, len); break;
        case MSG_TIED_WEIGHTS: st = stage_tied_weights(s, b.msg, len); break;
        default: st = unexpected(s, tag); break;
        }
    }
    if (st && !s->error[0]) {
        snprintf(s->error, sizeof s->error, "stage %d: %s", s->index, pz_last_error());
        adopt_pending_error(s);
    }
    if (st) {
        /* tell both neighbours why, then close: they stop in turn */
        const size_t n = strlen(s->error) + 1;
        pz_link_send(s->prev, MSG_ERROR, s->error, n);
        if (s->next) pz_link_send(s->next, MSG_ERROR, s->error, n);
    }
    pz_link_close(s->prev);
    if (s->next) pz_link_close(s->next);
    free_bufs(s, &b);
    return NULL;
}
