/* SPDX-License-Identifier: MIT */
/* schedule.c — how a stage runs a training step. The pieces every schedule
 * is made of (take a micro-batch, its forward pass and activation, its
 * backward pass and gradient, the loss's way back, the optimizer step) and
 * two compositions of them: GPipe (every micro-batch forward, the loss
 * back, every micro-batch backward, one optimizer step) and 1F1B (after a
 * warm-up of S-1-i forwards, stage i alternates one forward and one
 * backward, so it holds at most S-i micro-batches' activations; the loss
 * goes back after the last gradient). Both run each micro-batch's backward
 * in the same order (0 first), so parameter gradients accumulate in the
 * same order and the two take the same steps bit for bit. A micro-batch's
 * activations live in slot m % slots (stage.slots: M for GPipe, S-i for
 * 1F1B). Stage 0's inputs are the driver's batch, kept whole. */
#include "pipe_internal.h"
#include "base/wire.h"
#include "pipezip/pipezip.h" /* pz_pipe_schedule_name, pz_pipe_schedule_order: public */

#include <math.h>
#include <signal.h>
#include <string.h>

pz_status pipe_take_batch(stage *s, stage_bufs *b, const uint8_t *batch, size_t blen, int bank, step_state *t) {
    pz_pipe *p = s->pipe;
    const int64_t in_per = pz_shape_numel(stage_in_shape(s));
    const size_t B = (size_t)p->cfg.batch_max, P = (size_t)pipe_targets(p);
    const msg_layout L = pipe_driver_layout(p);
    msg_meta h = {.ids = b->batch_ids + bank * B, .targets = b->batch_labels + bank * B * P};
    PZ_TRY(msg_meta_get(batch, blen, 0, p->cfg.batch_max, 1, &L, &h));
    if (blen != msg_meta_bytes(h.B, &L) + 4 * (size_t)(h.B * in_per))
        return pz_fail(PZ_ERR_STATE, "a batch of %zu bytes does not fit its header (%d samples)", blen, h.B);
    pz_get_words(b->batch_x + bank * B * (size_t)in_per, batch + msg_meta_bytes(h.B, &L), (size_t)(h.B * in_per));
    t->M = s->M > h.B ? h.B : s->M;
    t->lr = h.lr, t->Btot = h.B;
    return PZ_OK;
}

void pipe_take_slice(stage *s, stage_bufs *b, int k, int bank, int m, const step_state *t) {
    const size_t B = (size_t)s->pipe->cfg.batch_max, P = (size_t)pipe_targets(s->pipe);
    const int q = t->Btot / t->M, r = t->Btot % t->M;
    const int Bm = q + (m < r), at = m * q + (m < r ? m : r);
    b->Bm[k] = Bm, b->at[k] = (int)(bank * B) + at;
    memcpy(b->ids[k], b->batch_ids + bank * B + at, 4 * (size_t)Bm);
    memcpy(b->labels[k], b->batch_labels + (bank * B + (size_t)at) * P, 4 * (size_t)Bm * P);
}

/* stage 0: split the driver's BATCH into micro-batches (sizes differ by at
 * most one; a short last batch has fewer); its inputs are kept whole
 * (b->batch_x), each micro-batch's a slice of them */
static pz_status split_batch(stage *s, stage_bufs *b, const uint8_t *batch, size_t blen, step_state *t) {
    PZ_TRY(pipe_take_batch(s, b, batch, blen, 0, t));
    for (int m = 0; m < t->M; m++) pipe_take_slice(s, b, m, 0, m, t);
    return PZ_OK;
}

/* micro-batch m's slot of activation buffers, and its input */
static inline int slot_of(const stage *s, int m) { return m % s->slots; }
static float *micro_x(const stage *s, stage_bufs *b, int m) {
    if (s->index == 0) return b->batch_x + (size_t)b->at[m] * (size_t)pz_shape_numel(stage_in_shape(s));
    return b->x_in[slot_of(s, m)];
}
/* a subspace model's input tokens of micro-batch m: stage 0's inputs, META's past it */
static const float *micro_tokens(const stage *s, stage_bufs *b, int m) {
    return s->index == 0 ? micro_x(s, b, m) : b->tokens[m];
}

/* past stage 0: micro-batch m's META (the step's first, already received)
 * and its ACT frame, decoded into x_in[m] */
pz_status pipe_take_micro(stage *s, stage_bufs *b, int m, int first, size_t len, step_state *t) {
    const int pending = first;
    pz_pipe *p = s->pipe;
    if (!pending) PZ_TRY(stage_recv(s, s->prev, MSG_META, &b->msg, &b->cap, &len, p->cfg.timeout_s));
    const msg_layout L = pipe_layout(p);
    msg_meta h = {.ids = b->ids[m], .targets = b->labels[m], .tokens = b->tokens[m]};
    PZ_TRY(msg_meta_get(b->msg, len, 1, p->mb_max, s->M, &L, &h));
    if (first) t->M = h.M, t->lr = h.lr, t->Btot = h.Btot;
    else if (h.M != t->M || h.Btot != t->Btot)
        return pz_fail(PZ_ERR_STATE, "micro-batch headers disagree (%d and %d micro-batches of batches of %d and %d)", t->M, h.M,
                       t->Btot, h.Btot);
    b->Bm[m] = h.B;
    PZ_TRY(stage_recv(s, s->prev, MSG_ACT, &b->msg, &b->cap, &len, p->cfg.timeout_s));
    const double t0 = pz_now();
    const int64_t in_per = pz_shape_numel(stage_in_shape(s));
    int nd;
    int64_t shape[PZ_MAX_DIMS];
    PZ_TRY(pz_codec_decode(s->fwd_rx, b->msg, len, micro_x(s, b, m), (size_t)(p->mb_max * in_per), &nd, shape));
    s->rep.act_decode_s += pz_now() - t0;
    return stage_check_frame("activation", nd, shape, h.B, stage_in_shape(s));
}

/* A budget's probe step (budget.h): the step about to run is one after
 * which the rungs are chosen again. Its first forward clears the
 * measurements; every frame this stage sends in it is then encoded once
 * more with each rung, only to count bytes and error. */
static int probing(stage *s) {
    const pz_budget *bg = &s->pipe->cfg.budget;
    const int64_t t = stage_step_of(s);
    if (!pz_budget_due(bg, t)) return 0;
    if (s->probe_t != t) {
        memset(s->meas, 0, sizeof s->meas);
        s->meas_n[0] = s->meas_n[1] = 0;
        s->probe_t = t;
    }
    return 1;
}

/* dir 0: activations (hdr: the META bytes that travel with each), 1: gradients */
static pz_status probe_rungs(stage *s, stage_bufs *b, int dir, const float *x, int B, pz_shape sh, const uint32_t *ids, size_t hdr) {
    const pz_budget *bg = &s->pipe->cfg.budget;
    pz_budget_meas *m = &s->meas[dir];
    for (int r = 0; r < bg->n_rungs; r++) {
        size_t flen;
        pz_codec_stats cs;
        PZ_TRY(stage_encode(s->probe[dir][r], x, B, sh, ids, &b->frame, &b->frame_cap, &flen, &cs));
        m->bytes[r] += flen + hdr;
        m->err[r] += cs.rel_error * cs.rel_error;
    }
    m->elements += (uint64_t)B * (uint64_t)pz_shape_numel(sh);
    s->meas_n[dir]++;
    return PZ_OK;
}

/* micro-batch m forward through this stage's layers; the last stage takes
 * the loss and its gradient, the others send META and the ACT frame on */
pz_status pipe_forward_micro(stage *s, stage_bufs *b, int m, step_state *t) {
    pz_pipe *p = s->pipe;
    const int last = s->index == p->S - 1;
    const int Bm = b->Bm[m], k = slot_of(s, m);
    pz_seq *net = &s->model[k].net;
    const int probe = s->pipe->cfg.budget.kind != PZ_BUDGET_OFF && probing(s);
    double t0 = pz_now();
    stage_set_tokens(s, k, b->tokens[m]);
    pz_seq_forward(net, s->from, s->to, micro_x(s, b, m), Bm, 1);
    pz_clock_flops(&s->clock, 2.0 * (double)s->macs * Bm);
    const float *out = net->act[s->to - 1];
    if (last) {
        int correct = 0;
        PZ_TRY(stage_check_targets(s, b->labels[m], (size_t)Bm * pipe_targets(s->pipe)));
        const float loss = pz_model_loss(&s->model[0], b->dy[k], &correct, out, b->labels[m], Bm);
        t->loss_sum += (double)loss * Bm, t->correct_sum += correct;
        /* each micro-batch's gradient weighed by its share of the batch */
        if (t->M > 1) {
            const int64_t out_per = pz_shape_numel(stage_out_shape(s));
            const float w = (float)Bm / (float)t->Btot;
            for (int64_t i = 0; i < (int64_t)Bm * out_per; i++) b->dy[k][i] *= w;
        }
        s->rep.compute_s += pz_now() - t0;
        return PZ_OK;
    }
    s->rep.compute_s += pz_now() - t0;
    size_t flen;
    pz_codec_stats cs;
    /* the error of a sampled frame (none is lossless: exactly 0, not measured) */
    const int sample = p->cfg.err_every > 0 && s->rep.act_frames % (uint64_t)p->cfg.err_every == 0;
    const int measure = sample && !s->fwd_lossless;
    const msg_layout L = pipe_layout(p);
    if (probe) PZ_TRY(probe_rungs(s, b, 0, out, Bm, stage_out_shape(s), b->ids[m], msg_meta_bytes(Bm, &L)));
    PZ_TRY(stage_dump(s, 0, m, out, Bm, stage_out_shape(s)));
    t0 = pz_now();
    PZ_TRY(stage_encode(s->fwd_tx, out, Bm, stage_out_shape(s), b->ids[m], &b->frame, &b->frame_cap, &flen, measure ? &cs : NULL));
    s->rep.act_encode_s += pz_now() - t0;
    if (sample) s->rep.act_err_sum += measure ? cs.rel_error : 0.0, s->rep.act_err_n++;
    /* the batch header travels with the activations (labels included, as in
     * split learning; a subspace model's tokens too) */
    msg_meta_put(b->hdr, Bm, &L, b->ids[m], b->labels[m], micro_tokens(s, b, m), t->lr, t->M, t->Btot);
    s->rep.act_elements += (uint64_t)(Bm * pz_shape_numel(stage_out_shape(s)));
    s->rep.act_bytes += msg_meta_bytes(Bm, &L) + flen;
    s->rep.act_frames++;
    PZ_TRY(pz_link_send(s->next, MSG_META, b->hdr, msg_meta_bytes(Bm, &L)));
    return pz_link_send_buf(s->next, MSG_ACT, &b->frame, &b->frame_cap, flen);
}

/* the step's LOSS: the last stage sends it, the others pass it on (GPipe:
 * before any gradient; 1F1B: after the last) */
pz_status pipe_loss_back(stage *s, stage_bufs *b, step_state *t) {
    pz_pipe *p = s->pipe;
    if (s->index == p->S - 1) {
        uint8_t res[MSG_LOSS_BYTES];
        msg_loss_put(res, (float)(t->loss_sum / t->Btot), t->correct_sum);
        return pz_link_send(s->prev, MSG_LOSS, res, sizeof res);
    }
    size_t len;
    float loss;
    int correct;
    PZ_TRY(stage_recv(s, s->next, MSG_LOSS, &b->msg, &b->cap, &len, stage_wait(s, s->next, p->S - s->index)));
    PZ_TRY(msg_loss_get(b->msg, len, &loss, &correct));
    return pz_link_send(s->prev, MSG_LOSS, b->msg, len);
}

/* A tie (pipe_internal.h): the head's stage sends micro-batch m's gradient
 * of the token table after its GRAD frame, the stages between pass it on,
 * and the embedding's stage adds it before its own backward pass, as the
 * head's backward adds it in a model on one stage. */
static pz_status tied_grad_out(stage *s, stage_bufs *b, int m) {
    if (s->tie_e < 0 || s->index <= s->tie_e || s->index > s->tie_l) return PZ_OK;
    const size_t n = sizeof(float) * s->tie_n;
    if (s->index < s->tie_l) { /* between: pass it on */
        size_t len;
        PZ_TRY(stage_recv(s, s->next, MSG_TIED_GRAD, &b->msg, &b->cap, &len, s->pipe->cfg.timeout_s));
        if (len != n) return pz_fail(PZ_ERR_STATE, "a TIED_GRAD message of %zu bytes, expected %zu", len, n);
        return pz_link_send(s->prev, MSG_TIED_GRAD, b->msg, len);
    }
    PZ_TRY(msg_reserve(&b->frame, &b->frame_cap, n));
    pz_put_words(b->frame, s->model[slot_of(s, m)].net.layers[s->tie_head].ws, s->tie_n);
    return pz_link_send(s->prev, MSG_TIED_GRAD, b->frame, n);
}

static pz_status tied_grad_in(stage *s, stage_bufs *b) {
    size_t len;
    PZ_TRY(stage_recv(s, s->next, MSG_TIED_GRAD, &b->msg, &b->cap, &len, s->pipe->cfg.timeout_s));
    if (len != sizeof(float) * s->tie_n)
        return pz_fail(PZ_ERR_STATE, "a TIED_GRAD message of %zu bytes for a table of %zu floats", len, s->tie_n);
    pz_get_words(b->tie, b->msg, s->tie_n);
    for (size_t i = 0; i < s->tie_n; i++) s->tie_g[i] += b->tie[i];
    return PZ_OK;
}

/* micro-batch m backward: its GRAD frame from the next stage (the last
 * stage has dy from the loss), the layers' backward pass (parameter
 * gradients accumulate), and past stage 0 the input gradient's GRAD frame
 * to the stage before */
pz_status pipe_backward_micro(stage *s, stage_bufs *b, int m) {
    pz_pipe *p = s->pipe;
    const int first = s->index == 0, last = s->index == p->S - 1;
    const int Bm = b->Bm[m], k = slot_of(s, m);
    float *x = micro_x(s, b, m);
    if (!last) {
        size_t len;
        PZ_TRY(stage_recv(s, s->next, MSG_GRAD, &b->msg, &b->cap, &len, p->cfg.timeout_s));
        const double t0 = pz_now();
        const int64_t out_per = pz_shape_numel(stage_out_shape(s));
        int nd;
        int64_t shape[PZ_MAX_DIMS];
        PZ_TRY(pz_codec_decode(s->bwd_rx, b->msg, len, b->dy[k], (size_t)(p->mb_max * out_per), &nd, shape));
        s->rep.grad_decode_s += pz_now() - t0;
        PZ_TRY(stage_check_frame("gradient", nd, shape, Bm, stage_out_shape(s)));
    }
    if (s->tie_e == s->index) PZ_TRY(tied_grad_in(s, b));
    const double t0 = pz_now();
    stage_set_tokens(s, k, b->tokens[m]);
    pz_seq_backward(&s->model[k].net, s->from, s->to, x, b->dy[k], first ? NULL : b->dx, Bm);
    pz_clock_flops(&s->clock, 4.0 * (double)s->macs * Bm);
    s->rep.compute_s += pz_now() - t0;
    if (first) return PZ_OK;
    const int64_t in_per = pz_shape_numel(stage_in_shape(s));
    size_t flen;
    pz_codec_stats cs;
    const int sample = p->cfg.err_every > 0 && s->rep.grad_frames % (uint64_t)p->cfg.err_every == 0;
    const int measure = sample && !s->bwd_lossless;
    if (p->cfg.grad_mask) { /* the forward's mask: no gradient where the activation arrived as 0 */
        for (int64_t j = 0; j < (int64_t)Bm * in_per; j++)
            if (x[j] == 0.0f) b->dx[j] = 0.0f;
    }
    if (p->cfg.budget.kind != PZ_BUDGET_OFF && s->probe_t == stage_step_of(s))
        PZ_TRY(probe_rungs(s, b, 1, b->dx, Bm, stage_in_shape(s), b->ids[m], 0));
    PZ_TRY(stage_dump(s, 1, m, b->dx, Bm, stage_in_shape(s)));
    const double t1 = pz_now();
    PZ_TRY(stage_encode(s->bwd_tx, b->dx, Bm, stage_in_shape(s), b->ids[m], &b->frame, &b->frame_cap, &flen, measure ? &cs : NULL));
    s->rep.grad_encode_s += pz_now() - t1;
    if (sample) s->rep.grad_err_sum += measure ? cs.rel_error : 0.0, s->rep.grad_err_n++;
    s->rep.grad_bytes += flen, s->rep.grad_frames++;
    s->rep.grad_elements += (uint64_t)(Bm * in_per);
    PZ_TRY(pz_link_send_buf(s->prev, MSG_GRAD, &b->frame, &b->frame_cap, flen));
    return tied_grad_out(s, b, m);
}

/* Gradient clipping by the global norm (torch.nn.utils.clip_grad_norm_):
 * every stage sums the squares of its layers' gradients, one double per
 * top-level layer; the sums travel back to stage 0 (NORM), which adds them
 * in layer order, as a model on one stage does, so the norm is the same bit
 * for bit however the model is cut; the factor max_norm / (norm + 1e-6),
 * when below 1, travels forward (CLIP) and scales every gradient. */
pz_status pipe_clip_norms(stage *s, stage_bufs *b, const float *g, float *scale) {
    pz_pipe *p = s->pipe;
    const pz_seq *net = &s->model[0].net;
    const int n = net->n, mine = s->to - s->from, first = s->index == 0, last = s->index == p->S - 1;
    const size_t have = last ? 0 : (size_t)(n - s->to); /* the layers after this stage's */
    PZ_TRY(msg_reserve(&b->hdr_norm, &b->norm_cap, 8 * (size_t)(n - s->from)));
    double *sums = b->norms;
    if (!last) {
        size_t len;
        PZ_TRY(stage_recv(s, s->next, MSG_NORM, &b->msg, &b->cap, &len, stage_wait(s, s->next, p->S - s->index)));
        if (len != 8 * have) return pz_fail(PZ_ERR_STATE, "a NORM message of %zu bytes, expected %zu", len, 8 * have);
        for (size_t k = 0; k < have; k++) sums[mine + k] = pz_get_f64(b->msg + 8 * k);
    }
    for (int j = 0; j < mine; j++) {
        double q = 0.0;
        for (int64_t i = 0; i < net->layers[s->from + j].n_params; i++, g++) q += (double)*g * *g;
        sums[j] = q;
    }
    if (!first) {
        for (int k = 0; k < mine + (int)have; k++) pz_put_f64(b->hdr_norm + 8 * k, sums[k]);
        return pz_link_send(s->prev, MSG_NORM, b->hdr_norm, 8 * (size_t)(mine + (int)have));
    }
    double total = 0.0;
    for (int k = 0; k < n; k++) total += sums[k];
    s->grad_norm = sqrt(total);
    const double coef = p->cfg.clip_norm / (s->grad_norm + 1e-6);
    *scale = coef < 1.0 ? (float)coef : 1.0f;
    return PZ_OK;
}

pz_status pipe_clip_pass(stage *s, stage_bufs *b, float *scale) {
    pz_pipe *p = s->pipe;
    if (s->index > 0) {
        size_t len;
        PZ_TRY(stage_recv(s, s->prev, MSG_CLIP, &b->msg, &b->cap, &len, stage_wait(s, s->prev, p->S)));
        if (len != 4) return pz_fail(PZ_ERR_STATE, "a CLIP message of %zu bytes", len);
        *scale = pz_get_f32(b->msg);
        if (!(*scale > 0.0f && *scale <= 1.0f)) return pz_fail(PZ_ERR_STATE, "a gradient scale of %g", *scale);
    }
    if (s->index == p->S - 1) return PZ_OK;
    uint8_t c[4];
    pz_put_f32(c, *scale);
    return pz_link_send(s->next, MSG_CLIP, c, 4);
}

static pz_status clip_grads(stage *s, stage_bufs *b) {
    float scale = 1.0f;
    float *gs = s->model[0].grads + s->p0;
    PZ_TRY(pipe_clip_norms(s, b, gs, &scale));
    PZ_TRY(pipe_clip_pass(s, b, &scale));
    if (scale < 1.0f)
        for (int64_t i = 0; i < s->p1 - s->p0; i++) gs[i] *= scale;
    return PZ_OK;
}

/* the optimizer step over this stage's parameters; stage 0 tells the driver */
static pz_status finish_step(stage *s, stage_bufs *b, const step_state *t) {
    if (s->pipe->cfg.clip_norm > 0.0f) PZ_TRY(clip_grads(s, b));
    const double t0 = pz_now();
    pz_optim_step(&s->opt, s->model[0].params + s->p0, s->model[0].grads + s->p0, t->lr);
    pz_seq_after_step(&s->model[0].net, s->from, s->to);
    s->rep.compute_s += pz_now() - t0;
    if (s->index == s->pipe->kill_stage && s->opt.t == s->pipe->kill_step) raise(SIGKILL); /* crash tests (pipe_internal.h) */
    if (s->tie_e == s->index) s->tie_dirty = 1;
    return s->index == 0 ? pz_link_send(s->prev, MSG_STEPPED, "", 0) : PZ_OK;
}

/* what every schedule does before a step's first forward */
static pz_status begin_step(stage *s, stage_bufs *b, const uint8_t *batch, size_t blen, step_state *t) {
    if (s->index == 0) PZ_TRY(split_batch(s, b, batch, blen, t));
    PZ_TRY(stage_send_tied_weights(s, b));
    memset(s->model[0].grads + s->p0, 0, sizeof(float) * (size_t)(s->p1 - s->p0));
    /* the head's stage never steps its copy of the table: keep its gradient from growing */
    if (s->tie_l == s->index) memset(s->tie_g, 0, sizeof(float) * s->tie_n);
    return PZ_OK;
}

/* micro-batch m in: its META and ACT (stage 0 has split the batch) */
static pz_status take(stage *s, stage_bufs *b, int m, size_t blen, step_state *t) {
    return s->index == 0 ? PZ_OK : pipe_take_micro(s, b, m, m == 0, blen, t);
}

/* ---- the schedules: each stage's order of pieces in a step ---- */

/* GPipe: every forward, the loss back, every backward */
static int gpipe_actions(int S, int i, int M, pipe_action *a) {
    (void)S, (void)i;
    int n = 0;
    for (int m = 0; m < M; m++) a[n++] = (pipe_action){PIPE_FWD, m};
    a[n++] = (pipe_action){PIPE_LOSS, 0};
    for (int m = 0; m < M; m++) a[n++] = (pipe_action){PIPE_BWD, m};
    return n;
}

/* 1F1B: S-1-i forwards (the warm-up), then one forward and one backward in
 * turn, the last backwards, the loss back */
static int warm_then_alternate(int warm, int M, pipe_action *a) {
    int n = 0, done = 0; /* micro-batches whose backward has run */
    for (int m = 0; m < M; m++) {
        a[n++] = (pipe_action){PIPE_FWD, m};
        if (m >= warm) a[n++] = (pipe_action){PIPE_BWD, done++};
    }
    while (done < M) a[n++] = (pipe_action){PIPE_BWD, done++};
    a[n++] = (pipe_action){PIPE_LOSS, 0};
    return n;
}

static int one_f_one_b_actions(int S, int i, int M, pipe_action *a) {
    const int ahead = S - 1 - i;
    return warm_then_alternate(ahead < M ? ahead : M, M, a);
}

/* eager 1F1B: twice 1F1B's warm-up, 2(S-1-i) forwards, then in turn: over
 * slow links the extra forwards in flight cover a gradient's round trip,
 * for up to 2(S-i)-1 micro-batches' activations (GPipe: M) */
static int eager_1f1b_actions(int S, int i, int M, pipe_action *a) {
    const int ahead = 2 * (S - 1 - i);
    return warm_then_alternate(ahead < M ? ahead : M, M, a);
}

const pipe_schedule pipe_schedules[] = {
    [PZ_PIPE_GPIPE] = {gpipe_actions},
    [PZ_PIPE_1F1B] = {one_f_one_b_actions},
    [PZ_PIPE_EAGER_1F1B] = {eager_1f1b_actions},
    /* its steps overlap (async.c): within a step, with no delay, 1F1B's order */
    [PZ_PIPE_ASYNC] = {one_f_one_b_actions, .overlaps = 1},
    [PZ_PIPE_EAGER_ASYNC] = {eager_1f1b_actions, .overlaps = 2},
};

int pz_pipe_schedule_overlaps(int kind) {
    const pipe_schedule *sc = pipe_schedule_of(kind);
    return sc ? sc->overlaps : 0;
}

const pipe_schedule *pipe_schedule_of(int kind) {
    return kind >= 0 && kind < (int)(sizeof pipe_schedules / sizeof *pipe_schedules) ? &pipe_schedules[kind] : NULL;
}

int pipe_schedule_slots(const pipe_schedule *sc, int S, int i, int M) {
    pipe_action a[2 * PZ_MAX_MICRO + 1];
    const int n = sc->actions(S, i, M, a);
    int held = 0, most = 1;
    for (int k = 0; k < n; k++) {
        held += a[k].kind == PIPE_FWD ? 1 : a[k].kind == PIPE_BWD ? -1 : 0;
        if (held > most) most = held;
    }
    return most;
}

/* One training step at a stage: its schedule's pieces in order. Past stage
 * 0 the first META (already received) says how many micro-batches the
 * step has. Every schedule runs each micro-batch's backward in the same
 * order (0 first), so parameter gradients accumulate in the same order and
 * all take the same steps bit for bit. */
pz_status pipe_step(stage *s, stage_bufs *b, const uint8_t *batch, size_t blen) {
    step_state t = {.M = s->M};
    PZ_TRY(begin_step(s, b, batch, blen, &t));
    if (s->index > 0) PZ_TRY(take(s, b, 0, blen, &t)); /* M comes with the first META */
    pipe_action a[2 * PZ_MAX_MICRO + 1];
    const int n = s->pipe->schedule->actions(s->pipe->S, s->index, t.M, a);
    for (int k = 0; k < n; k++) {
        const int m = a[k].m;
        switch (a[k].kind) {
        case PIPE_FWD:
            if (m > 0) PZ_TRY(take(s, b, m, blen, &t));
            PZ_TRY(pipe_forward_micro(s, b, m, &t));
            break;
        case PIPE_BWD: PZ_TRY(pipe_backward_micro(s, b, m)); break;
        case PIPE_LOSS: PZ_TRY(pipe_loss_back(s, b, &t)); break;
        }
    }
    return finish_step(s, b, &t);
}

const pz_name pz_pipe_schedules[] = {
    {PZ_PIPE_GPIPE, "gpipe", "every micro-batch forward, then every one backward"},
    {PZ_PIPE_1F1B, "1f1b", "one forward, one backward: stage i holds at most S-i micro-batches"},
    {PZ_PIPE_EAGER_1F1B, "eager-1f1b", "1F1B after twice its warm-up: forwards in flight cover slow links' round trips, "
                                       "stage i holds at most 2(S-i)-1 micro-batches"},
    {PZ_PIPE_ASYNC, "async", "no flush between steps: stage i keeps S-1-i micro-batches in flight into the next step, and "
                             "each batch's gradient is applied --pipe-delay steps late (weight stashing; other numbers at a "
                             "delay of 1, 1F1B's at 0)"},
    {PZ_PIPE_EAGER_ASYNC, "eager-async", "async after twice its warm-up, 2(S-1-i) micro-batches in flight at stage i: async's "
                                         "numbers, and its forwards in flight cover a gradient's round trip on duplex links"},
    {0, NULL, NULL},
};

const char *pz_pipe_schedule_name(int i) { return i >= 0 && i < pz_names_count(pz_pipe_schedules) ? pz_pipe_schedules[i].name : NULL; }

int pz_pipe_schedule_order(const char *schedule, int stages, int stage, int micro_batches, int *ops, int cap) {
    const pz_name *k = schedule ? pz_name_find(pz_pipe_schedules, schedule) : NULL;
    if (!k) {
        char list[64];
        pz_fail(PZ_ERR_ARG, "unknown schedule '%s' (expected %s)", schedule ? schedule : "(null)",
                pz_names_join(pz_pipe_schedules, ", ", " or ", list, sizeof list));
        return -1;
    }
    if (pz_pipe_schedule_overlaps(k->value)) {
        pz_fail(PZ_ERR_ARG, "schedule %s carries micro-batches from one step into the next: it has no order of one step "
                "to run alone (a torchrun Stage runs gpipe, 1f1b or eager-1f1b)", k->name);
        return -1;
    }
    if (stages < 1 || stage < 0 || stage >= stages || micro_batches < 1 || micro_batches > PZ_MAX_MICRO) {
        pz_fail(PZ_ERR_ARG, "schedule %s: stage %d of %d stages, %d micro-batches (1..%d)", schedule, stage, stages, micro_batches,
                PZ_MAX_MICRO);
        return -1;
    }
    if (cap < 2 * micro_batches) {
        pz_fail(PZ_ERR_ARG, "schedule %s: %d micro-batches make %d operations, the buffer holds %d", schedule, micro_batches,
                2 * micro_batches, cap);
        return -1;
    }
    pipe_action a[2 * PZ_MAX_MICRO + 1];
    const int n = pipe_schedule_of(k->value)->actions(stages, stage, micro_batches, a);
    int c = 0;
    for (int i = 0; i < n; i++)
        if (a[i].kind != PIPE_LOSS) ops[c++] = a[i].kind == PIPE_FWD ? a[i].m : -1 - a[i].m;
    return c;
}
