/* pipe.c — stages as threads, the step schedule (forward, loss, backward,
 * optimizer step; GPipe micro-batches) and the messages between them.
 *
 * The stages form a chain: driver <-> stage 0 <-> ... <-> stage S-1. On the
 * link between stages s and s+1, forward: META (micro-batch size, sample
 * ids, labels, learning rate) then ACT (the encoded activation frame);
 * backward: LOSS (once per step, from the last stage) then GRAD frames. The
 * driver sends stage 0 a BATCH and gets LOSS and STEPPED back. Evaluation:
 * EVAL / EVAL_META + ACT forward, EVAL_RESULT back. STATS and SAVE travel to
 * the last stage, each stage adding its part, and come back as STATS_REPLY
 * and SAVED. STOP travels forward and ends every stage. A stage that fails
 * sends ERROR with its reason both ways before closing its links, so the
 * driver names the stage where it started. */
#include "pipe.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum {
    TAG_BATCH = 1, TAG_META, TAG_ACT, TAG_GRAD, TAG_LOSS, TAG_STEPPED, TAG_STOP, TAG_EVAL, TAG_EVAL_META,
    TAG_EVAL_RESULT, TAG_STATS, TAG_STATS_REPLY, TAG_SAVE, TAG_SAVED, TAG_ERROR, TAG_WARMUP, TAG_WARMUP_SET,
    TAG_PUT_STATE, TAG_GET_STATE, TAG_STATE, TAG_KEPT, TAG_CHECK, TAG_CHECKED
};

/* What a stage reports about its two boundaries (host byte order: every
 * stage of a run is on one architecture). */
typedef struct {
    int32_t stage, pad;
    /* the boundary after this stage: activations it sent, gradients it decoded */
    uint64_t act_bytes, act_frames, act_elements, act_err_n, eval_bytes;
    double act_err_sum, act_encode_s, grad_decode_s;
    /* the boundary before it: gradients it sent, activations it decoded */
    uint64_t grad_bytes, grad_frames, grad_elements, grad_err_n;
    double grad_err_sum, grad_encode_s, act_decode_s;
    double compute_s, clock;
    pz_link_stats next, prev;
} stage_report;

typedef struct {
    struct pz_pipe *pipe;
    int index, from, to;       /* top-level layers [from, to) */
    int M;                     /* micro-batches */
    pz_model model[PZ_MAX_STAGES]; /* model[0] owns the parameters; the others share them (micro-batches) */
    pz_optim opt;
    int64_t p0, p1;            /* its parameters in model.params */
    pz_link *prev, *next;      /* towards stage index-1 (or the driver), index+1 (NULL for the last) */
    pz_codec *fwd_rx, *bwd_tx; /* decoding activations from prev, encoding gradients to prev */
    pz_codec *fwd_tx, *bwd_rx; /* encoding activations to next, decoding gradients from next */
    /* evaluation: the forward codec without its state (an EF/EF21/AQ-SGD
     * wrapper's base codec: test samples have no buffers, and evaluating
     * must not move the training state), and fp32 for plain inference */
    pz_codec *eval_tx, *eval_rx, *plain_tx, *plain_rx;
    int fwd_lossless, bwd_lossless; /* fwd_tx / bwd_tx are "none" */
    pz_clock clock;
    stage_report rep;
    uint8_t *kept;             /* split learning: the client state left by the last client */
    size_t kept_len;
    pthread_t thread;
    int running;
    char error[512];
} stage;

struct pz_pipe {
    pz_pipe_config cfg;
    char fingerprint[PZ_MAX_STAGES * 2 * PZ_SPEC_MAX + 512]; /* what every stage must agree on */
    int S, first, last, has_driver, started, mb_max;
    stage st[PZ_MAX_STAGES];
    pz_link *to_first; /* the driver's end */
    pz_clock clock;    /* the driver's */
    uint8_t *buf;
    size_t cap;
    stage_report reports[PZ_MAX_STAGES];
};

static pz_status driver_error(struct pz_pipe *p, pz_status fallback);
static pz_status driver_recv(struct pz_pipe *p, int want, size_t *n);
static pz_status driver_ask(struct pz_pipe *p, int tag, const void *msg, size_t len, int reply, size_t *n);

/* the batch header: B, ids, labels, lr, micro-batches in this step */
static size_t meta_bytes(int B) { return 4 + 8 * (size_t)B + 8; }

static void put_meta(uint8_t *out, int B, const uint32_t *ids, const int32_t *labels, float lr, int M) {
    memcpy(out, &B, 4);
    memcpy(out + 4, ids, 4 * (size_t)B);
    memcpy(out + 4 + 4 * (size_t)B, labels, 4 * (size_t)B);
    memcpy(out + 4 + 8 * (size_t)B, &lr, 4);
    memcpy(out + 8 + 8 * (size_t)B, &M, 4);
}

static pz_status grow_buffer(uint8_t **buf, size_t *cap, size_t need) {
    if (*cap >= need) return PZ_OK;
    uint8_t *b = realloc(*buf, need);
    if (!b) return pz_fail(PZ_ERR_NOMEM, "out of memory for a %zu-byte message", need);
    *buf = b, *cap = need;
    return PZ_OK;
}

/* Encode t (B samples of shape sh) with tx into *frame, grown as needed. */
static pz_status encode_boundary(pz_codec *tx, const float *t, int B, pz_shape sh, const uint32_t *ids, uint8_t **frame,
                                 size_t *frame_cap, size_t *flen, pz_codec_stats *stats) {
    const int64_t shape[4] = {B, sh.c, sh.h, sh.w};
    const size_t need = pz_codec_max_frame_bytes(tx, 4, shape);
    PZ_TRY(grow_buffer(frame, frame_cap, need));
    return pz_codec_encode(tx, t, 4, shape, ids, *frame, *frame_cap, flen, stats);
}

/* Receive from l expecting `want`; an ERROR message becomes this stage's error as sent. */
static pz_status recv_expect(stage *s, pz_link *l, int want, uint8_t **buf, size_t *cap, size_t *len, double tmo) {
    int tag;
    PZ_TRY(pz_link_recv(l, &tag, buf, cap, len, tmo));
    if (tag == TAG_ERROR) {
        snprintf(s->error, sizeof s->error, "%.*s", (int)(*len < sizeof s->error - 1 ? *len : sizeof s->error - 1), (char *)*buf);
        return PZ_ERR_STATE;
    }
    if (tag != want) return pz_fail(PZ_ERR_STATE, "expected message %d from %s, got %d", want, pz_link_name(l), tag);
    return PZ_OK;
}

static pz_shape in_shape(const stage *s) {
    const pz_seq *net = &s->model[0].net;
    return s->from ? net->layers[s->from - 1].out : net->in;
}
static pz_shape out_shape(const stage *s) { return s->model[0].net.layers[s->to - 1].out; }

typedef struct {
    float *x_in[PZ_MAX_STAGES], *dy[PZ_MAX_STAGES], *dx;
    uint32_t *ids[PZ_MAX_STAGES];
    int32_t *labels[PZ_MAX_STAGES];
    int Bm[PZ_MAX_STAGES];
    uint8_t *msg, *frame, *hdr;
    size_t cap, frame_cap;
} stage_bufs;

/* The answer to a request this stage passed down the chain: take it from
 * the next stage and pass it up. */
static pz_status relay_back(stage *s, int reply, uint8_t **buf, size_t *cap) {
    pz_pipe *p = s->pipe;
    size_t n;
    PZ_TRY(recv_expect(s, s->next, reply, buf, cap, &n, p->cfg.timeout_s * (p->S - s->index)));
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

/* One evaluation batch at this stage. msg holds [B][compress][labels]
 * (stage 0: then the inputs). */
static pz_status stage_eval(stage *s, stage_bufs *b, size_t len) {
    pz_pipe *p = s->pipe;
    const int first = s->index == 0, last = s->index == p->S - 1;
    pz_seq *net = &s->model[0].net;
    const int64_t in_per = pz_shape_numel(in_shape(s));
    float *x_in = b->x_in[0];
    int32_t *labels = b->labels[0];
    int B, compress;
    memcpy(&B, b->msg, 4);
    if (len < 8 || B < 1 || B > p->mb_max || len < 8 + 4 * (size_t)B) return pz_fail(PZ_ERR_STATE, "bad evaluation header");
    memcpy(&compress, b->msg + 4, 4);
    memcpy(labels, b->msg + 8, 4 * (size_t)B);
    /* the header goes on with the activation; b->msg receives it */
    const size_t hdr = 8 + 4 * (size_t)B;
    memcpy(b->hdr, b->msg, hdr);
    if (first) {
        if (len != hdr + 4 * (size_t)(B * in_per)) return pz_fail(PZ_ERR_STATE, "evaluation batch does not fit its header");
        memcpy(x_in, b->msg + hdr, 4 * (size_t)(B * in_per));
    } else {
        size_t n;
        PZ_TRY(recv_expect(s, s->prev, TAG_ACT, &b->msg, &b->cap, &n, p->cfg.timeout_s));
        PZ_TRY(pz_codec_decode(compress ? s->eval_rx : s->plain_rx, b->msg, n, x_in, (size_t)(p->mb_max * in_per), NULL, NULL));
    }
    pz_seq_forward(net, s->from, s->to, x_in, B, 0);
    const float *out = net->act[s->to - 1];
    if (last) {
        int correct = 0;
        const float loss = pz_model_loss(&s->model[0], NULL, &correct, out, labels, B);
        uint8_t res[12];
        const double sum = (double)loss * B;
        memcpy(res, &sum, 8), memcpy(res + 8, &correct, 4);
        return pz_link_send(s->prev, TAG_EVAL_RESULT, res, 12);
    }
    size_t flen;
    PZ_TRY(encode_boundary(compress ? s->eval_tx : s->plain_tx, out, B, out_shape(s), NULL, &b->frame, &b->frame_cap, &flen, NULL));
    s->rep.eval_bytes += hdr + flen;
    PZ_TRY(pz_link_send(s->next, TAG_EVAL_META, b->hdr, hdr));
    PZ_TRY(pz_link_send(s->next, TAG_ACT, b->frame, flen));
    return relay_back(s, TAG_EVAL_RESULT, &b->msg, &b->cap);
}

/* Fill the report's link counters and clock, append it to the message and
 * pass it on (or, at the last stage, turn it back). */
static pz_status stage_stats(stage *s, uint8_t **buf, size_t *cap, size_t len) {
    pz_clock_charge(&s->clock);
    s->rep.clock = s->clock.t;
    s->rep.prev = pz_link_get_stats(s->prev);
    if (s->next) s->rep.next = pz_link_get_stats(s->next);
    PZ_TRY(grow_buffer(buf, cap, len + sizeof s->rep));
    memcpy(*buf + len, &s->rep, sizeof s->rep);
    len += sizeof s->rep;
    return pass_on(s, TAG_STATS, TAG_STATS_REPLY, buf, cap, len, *buf, len);
}

/* the codec states in a stage's checkpoint: none in a pipeline of one (the
 * file is then a whole model's, as pz_checkpoint_write documents) */
static int stage_codecs(const stage *s) { return s->pipe->S > 1 ? 4 : 0; }

static pz_status stage_save(stage *s, uint8_t **buf, size_t *cap, size_t len) {
    pz_pipe *p = s->pipe;
    char dir[4200], path[4300];
    if (len == 0 || len >= 4000) return pz_fail(PZ_ERR_STATE, "bad checkpoint request");
    snprintf(dir, sizeof dir, "%.*s", (int)len, (char *)*buf);
    if (p->cfg.save_dir) {
        /* a split-learning server keeps its stages' files in its own directory,
         * under the last component of the driver's ("epoch-E") */
        const char *leaf = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
        char mine[4200];
        snprintf(mine, sizeof mine, "%.2000s/%.100s", p->cfg.save_dir, leaf);
        memcpy(dir, mine, sizeof dir);
    }
    PZ_TRY(pz_mkdir_p(dir)); /* a stage on another host writes on its own disk */
    snprintf(path, sizeof path, "%s/stage-%d.bin", dir, s->index);
    pz_codec *codecs[4] = {s->fwd_rx, s->bwd_tx, s->fwd_tx, s->bwd_rx};
    pz_status st = pz_checkpoint_write(path, s->index, &s->model[0], s->p0, s->p1, &s->opt, codecs, stage_codecs(s));
    if (st) return pz_fail(st, "checkpoint: %s", pz_last_error());
    return pass_on(s, TAG_SAVE, TAG_SAVED, buf, cap, len, "", 0);
}

static pz_status stage_warmup(stage *s, uint8_t **buf, size_t *cap, size_t len) {
    int32_t on;
    if (len != 4) return pz_fail(PZ_ERR_STATE, "bad warm-up message");
    memcpy(&on, *buf, 4);
    if (s->fwd_tx) pz_codec_set_warmup(s->fwd_tx, on);
    if (s->bwd_tx) pz_codec_set_warmup(s->bwd_tx, on);
    return pass_on(s, TAG_WARMUP, TAG_WARMUP_SET, buf, cap, len, "", 0);
}

/* Client state handed from one split-learning client to the next. At the
 * first stage (driver side): PUT packs its state and sends it on, GET asks
 * for it and loads it. At the stage after a remote link: keep / give back. */
static pz_status stage_handoff(stage *s, int tag, uint8_t **buf, size_t *cap, size_t len) {
    pz_pipe *p = s->pipe;
    pz_codec *codecs[4] = {s->fwd_rx, s->bwd_tx, s->fwd_tx, s->bwd_rx};
    const double tmo = p->cfg.timeout_s * (p->S - s->index);
    if (s->index > 0) { /* the keeper */
        if (tag == TAG_PUT_STATE) {
            free(s->kept);
            s->kept = pz_malloc(len ? len : 1);
            memcpy(s->kept, *buf, len);
            s->kept_len = len;
            return pz_link_send(s->prev, TAG_KEPT, "", 0);
        }
        return pz_link_send(s->prev, TAG_STATE, s->kept ? s->kept : (const uint8_t *)"", s->kept_len);
    }
    if (!s->next) return pz_fail(PZ_ERR_STATE, "a one-stage pipeline has nobody to hand its state to");
    if (tag == TAG_PUT_STATE) {
        uint8_t *blob;
        size_t n;
        PZ_TRY(pz_checkpoint_pack(&blob, &n, 0, &s->model[0], s->p0, s->p1, &s->opt, codecs, 4));
        pz_status st = pz_link_send(s->next, TAG_PUT_STATE, blob, n);
        free(blob);
        PZ_TRY(st);
        return relay_back(s, TAG_KEPT, buf, cap);
    }
    size_t n;
    PZ_TRY(pz_link_send(s->next, TAG_GET_STATE, "", 0));
    PZ_TRY(recv_expect(s, s->next, TAG_STATE, buf, cap, &n, tmo));
    const int32_t found = n > 0;
    if (found) PZ_TRY(pz_checkpoint_unpack(*buf, n, "the previous client's state", 0, &s->model[0], s->p0, s->p1, &s->opt, codecs, 4));
    return pz_link_send(s->prev, TAG_STATE, &found, 4);
}

/* Every stage (in whatever process) must run the same pipeline: compare
 * the driver's settings with this stage's own, pass them on. */
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
    return pass_on(s, TAG_CHECK, TAG_CHECKED, buf, cap, len, "", 0);
}


/* Receive micro-batch m's header (and, past stage 0, its activation). */
static pz_status recv_micro(stage *s, stage_bufs *b, int m, float *lr, int *M, size_t pending) {
    pz_pipe *p = s->pipe;
    size_t len = pending;
    int B;
    if (!pending) PZ_TRY(recv_expect(s, s->prev, TAG_META, &b->msg, &b->cap, &len, p->cfg.timeout_s));
    if (len < 4) return pz_fail(PZ_ERR_STATE, "short batch header");
    memcpy(&B, b->msg, 4);
    if (B < 1 || B > p->mb_max || len != meta_bytes(B)) return pz_fail(PZ_ERR_STATE, "bad batch header (micro-batch of %d)", B);
    b->Bm[m] = B;
    memcpy(b->ids[m], b->msg + 4, 4 * (size_t)B);
    memcpy(b->labels[m], b->msg + 4 + 4 * (size_t)B, 4 * (size_t)B);
    memcpy(lr, b->msg + 4 + 8 * (size_t)B, 4);
    memcpy(M, b->msg + 8 + 8 * (size_t)B, 4);
    if (*M < 1 || *M > s->M) return pz_fail(PZ_ERR_STATE, "bad batch header (%d micro-batches)", *M);
    PZ_TRY(recv_expect(s, s->prev, TAG_ACT, &b->msg, &b->cap, &len, p->cfg.timeout_s));
    const int64_t in_per = pz_shape_numel(in_shape(s));
    int nd;
    int64_t shape[4];
    const double t0 = pz_now();
    PZ_TRY(pz_codec_decode(s->fwd_rx, b->msg, len, b->x_in[m], (size_t)(p->mb_max * in_per), &nd, shape));
    s->rep.act_decode_s += pz_now() - t0;
    if (shape[0] != B || shape[0] * (nd > 1 ? shape[1] : 1) * (nd > 2 ? shape[2] : 1) * (nd > 3 ? shape[3] : 1) != B * in_per)
        return pz_fail(PZ_ERR_STATE, "activation frame of the wrong shape");
    return PZ_OK;
}

/* stage 0: batch is the driver's whole batch; others: the first
 * micro-batch's header is in b->msg (blen bytes) */
static pz_status train_step(stage *s, stage_bufs *b, const uint8_t *batch, size_t blen) {
    pz_pipe *p = s->pipe;
    const int first = s->index == 0, last = s->index == p->S - 1;
    int M = s->M;
    const int64_t in_per = pz_shape_numel(in_shape(s)), out_per = pz_shape_numel(out_shape(s));
    const double tmo = p->cfg.timeout_s;
    float lr = 0.0f;
    int Btot = 0;
    /* ---- forward every micro-batch ---- */
    if (first) {
        int B;
        memcpy(&B, batch, 4);
        if (B < 1 || B > p->cfg.batch_max || blen != meta_bytes(B) + 4 * (size_t)(B * in_per))
            return pz_fail(PZ_ERR_STATE, "batch of %zu bytes does not fit its header", blen);
        memcpy(&lr, batch + 4 + 8 * (size_t)B, 4);
        const uint32_t *ids = (const uint32_t *)(batch + 4);
        const int32_t *labels = (const int32_t *)(batch + 4 + 4 * (size_t)B);
        const float *x = (const float *)(batch + meta_bytes(B));
        if (M > B) M = B; /* a short last batch: fewer micro-batches */
        for (int m = 0, at = 0; m < M; m++) { /* micro-batch sizes differ by at most one */
            const int Bm = B / M + (m < B % M);
            b->Bm[m] = Bm;
            memcpy(b->ids[m], ids + at, 4 * (size_t)Bm);
            memcpy(b->labels[m], labels + at, 4 * (size_t)Bm);
            memcpy(b->x_in[m], x + (size_t)at * in_per, 4 * (size_t)(Bm * in_per));
            at += Bm;
        }
        Btot = B;
    }
    memset(s->model[0].grads + s->p0, 0, sizeof(float) * (size_t)(s->p1 - s->p0));
    double loss_sum = 0.0;
    int correct_sum = 0;
    for (int m = 0; m < M; m++) {
        if (!first) {
            int Mh = 0;
            PZ_TRY(recv_micro(s, b, m, &lr, &Mh, m == 0 ? blen : 0));
            if (m == 0) M = Mh;
            else if (Mh != M) return pz_fail(PZ_ERR_STATE, "micro-batch headers disagree (%d and %d micro-batches)", M, Mh);
            Btot += b->Bm[m];
        }
        const int Bm = b->Bm[m];
        pz_seq *net = &s->model[m].net;
        double t0 = pz_now();
        pz_seq_forward(net, s->from, s->to, b->x_in[m], Bm, 1);
        const float *out = net->act[s->to - 1];
        if (last) {
            int correct = 0;
            const float loss = pz_model_loss(&s->model[0], b->dy[m], &correct, out, b->labels[m], Bm);
            loss_sum += (double)loss * Bm, correct_sum += correct;
            s->rep.compute_s += pz_now() - t0;
        } else {
            s->rep.compute_s += pz_now() - t0;
            size_t flen;
            pz_codec_stats cs;
            /* the error of a sampled frame (none is lossless: exactly 0, not measured) */
            const int sample = p->cfg.err_every > 0 && s->rep.act_frames % (uint64_t)p->cfg.err_every == 0;
            const int measure = sample && !s->fwd_lossless;
            t0 = pz_now();
            PZ_TRY(encode_boundary(s->fwd_tx, out, Bm, out_shape(s), b->ids[m], &b->frame, &b->frame_cap, &flen, measure ? &cs : NULL));
            s->rep.act_encode_s += pz_now() - t0;
            if (sample) s->rep.act_err_sum += measure ? cs.rel_error : 0.0, s->rep.act_err_n++;
            /* the batch header travels with the activations (labels included, as in split learning) */
            put_meta(b->hdr, Bm, b->ids[m], b->labels[m], lr, M);
            s->rep.act_elements += (uint64_t)(Bm * out_per);
            s->rep.act_bytes += meta_bytes(Bm) + flen;
            s->rep.act_frames++;
            PZ_TRY(pz_link_send(s->next, TAG_META, b->hdr, meta_bytes(Bm)));
            PZ_TRY(pz_link_send_buf(s->next, TAG_ACT, &b->frame, &b->frame_cap, flen));
        }
    }
    /* ---- the loss travels back first ---- */
    size_t len;
    if (last) {
        /* each micro-batch's gradient was of its own mean: weigh it by its share */
        if (M > 1)
            for (int m = 0; m < M; m++) {
                const float w = (float)b->Bm[m] / (float)Btot;
                for (int64_t i = 0; i < (int64_t)b->Bm[m] * out_per; i++) b->dy[m][i] *= w;
            }
        uint8_t res[8];
        const float loss = (float)(loss_sum / Btot);
        memcpy(res, &loss, 4), memcpy(res + 4, &correct_sum, 4);
        PZ_TRY(pz_link_send(s->prev, TAG_LOSS, res, 8));
    } else {
        PZ_TRY(recv_expect(s, s->next, TAG_LOSS, &b->msg, &b->cap, &len, tmo * (p->S - s->index)));
        if (len != 8) return pz_fail(PZ_ERR_STATE, "a %zu-byte loss message", len);
        PZ_TRY(pz_link_send(s->prev, TAG_LOSS, b->msg, 8));
    }
    /* ---- backward, last micro-batch first ---- */
    for (int m = M - 1; m >= 0; m--) {
        const int Bm = b->Bm[m];
        if (!last) {
            PZ_TRY(recv_expect(s, s->next, TAG_GRAD, &b->msg, &b->cap, &len, tmo));
            const double t0 = pz_now();
            int nd;
            int64_t shape[4];
            PZ_TRY(pz_codec_decode(s->bwd_rx, b->msg, len, b->dy[m], (size_t)(p->mb_max * out_per), &nd, shape));
            s->rep.grad_decode_s += pz_now() - t0;
            if (shape[0] != Bm) return pz_fail(PZ_ERR_STATE, "gradient frame for %lld samples, expected %d", (long long)shape[0], Bm);
        }
        const double t0 = pz_now();
        pz_seq_backward(&s->model[m].net, s->from, s->to, b->x_in[m], b->dy[m], first ? NULL : b->dx, Bm);
        s->rep.compute_s += pz_now() - t0;
        if (!first) {
            size_t flen;
            pz_codec_stats cs;
            const int sample = p->cfg.err_every > 0 && s->rep.grad_frames % (uint64_t)p->cfg.err_every == 0;
            const int measure = sample && !s->bwd_lossless;
            const double t1 = pz_now();
            PZ_TRY(encode_boundary(s->bwd_tx, b->dx, Bm, in_shape(s), b->ids[m], &b->frame, &b->frame_cap, &flen, measure ? &cs : NULL));
            s->rep.grad_encode_s += pz_now() - t1;
            if (sample) s->rep.grad_err_sum += measure ? cs.rel_error : 0.0, s->rep.grad_err_n++;
            s->rep.grad_bytes += flen, s->rep.grad_frames++;
            s->rep.grad_elements += (uint64_t)(Bm * in_per);
            PZ_TRY(pz_link_send_buf(s->prev, TAG_GRAD, &b->frame, &b->frame_cap, flen));
        }
    }
    const double t0 = pz_now();
    pz_optim_step(&s->opt, s->model[0].params + s->p0, s->model[0].grads + s->p0, lr);
    s->rep.compute_s += pz_now() - t0;
    if (first) PZ_TRY(pz_link_send(s->prev, TAG_STEPPED, "", 0));
    return PZ_OK;
}

static void *stage_main(void *arg) {
    stage *s = arg;
    pz_thread_attach();
    pz_pipe *p = s->pipe;
    const int first = s->index == 0;
    const int64_t in_per = pz_shape_numel(in_shape(s)), out_per = pz_shape_numel(out_shape(s));
    const int mb = p->mb_max;
    stage_bufs b = {0};
    for (int m = 0; m < s->M; m++) {
        b.x_in[m] = pz_floats((size_t)(mb * in_per));
        b.dy[m] = pz_floats((size_t)(mb * out_per));
        b.ids[m] = pz_calloc((size_t)mb, sizeof(uint32_t));
        b.labels[m] = pz_calloc((size_t)mb, sizeof(int32_t));
    }
    b.dx = pz_floats((size_t)(mb * in_per));
    b.hdr = pz_malloc(meta_bytes(mb));
    pz_clock_start(&s->clock, p->cfg.realtime);
    pz_status st = PZ_OK;
    for (;;) {
        int tag;
        size_t len;
        if ((st = pz_link_recv(s->prev, &tag, &b.msg, &b.cap, &len, -1.0))) {
            /* between steps, a remote driver side that closed in order (the
             * last split-learning client) is the end of the run, not a failure */
            if (pz_link_peer_closed(s->prev) && s->index == p->first && p->first > 0) {
                st = PZ_OK;
                if (s->next) pz_link_send(s->next, TAG_STOP, "", 0);
            }
            break;
        }
        if (tag == TAG_STOP) {
            /* a split-learning client ends its turn: the server's stages stay */
            if (s->next && !(p->cfg.session && s->index == p->last)) pz_link_send(s->next, TAG_STOP, "", 0);
            break;
        }
        if (tag == TAG_ERROR) {
            snprintf(s->error, sizeof s->error, "%.*s", (int)(len < sizeof s->error - 1 ? len : sizeof s->error - 1), (char *)b.msg);
            st = PZ_ERR_STATE;
            break;
        }
        if (tag == (first ? TAG_EVAL : TAG_EVAL_META)) st = stage_eval(s, &b, len);
        else if (tag == TAG_STATS) st = stage_stats(s, &b.msg, &b.cap, len);
        else if (tag == TAG_SAVE) st = stage_save(s, &b.msg, &b.cap, len);
        else if (tag == TAG_WARMUP) st = stage_warmup(s, &b.msg, &b.cap, len);
        else if (tag == TAG_PUT_STATE || tag == TAG_GET_STATE) st = stage_handoff(s, tag, &b.msg, &b.cap, len);
        else if (tag == TAG_CHECK) st = stage_check(s, &b.msg, &b.cap, len);
        else if (first && tag == TAG_BATCH) st = train_step(s, &b, b.msg, len);
        else if (!first && tag == TAG_META) st = train_step(s, &b, NULL, len > 0 ? len : 1);
        else st = pz_fail(PZ_ERR_STATE, "unexpected message %d from %s", tag, pz_link_name(s->prev));
        if (st) break;
    }
    if (st && !s->error[0]) snprintf(s->error, sizeof s->error, "stage %d: %s", s->index, pz_last_error());
    if (st) {
        /* tell both neighbours why, then close: they stop in turn */
        const size_t n = strlen(s->error) + 1;
        pz_link_send(s->prev, TAG_ERROR, s->error, n);
        if (s->next) pz_link_send(s->next, TAG_ERROR, s->error, n);
    }
    pz_link_close(s->prev);
    if (s->next) pz_link_close(s->next);
    for (int m = 0; m < s->M; m++) free(b.x_in[m]), free(b.dy[m]), free(b.ids[m]), free(b.labels[m]);
    free(b.dx), free(b.msg), free(b.frame), free(b.hdr);
    return NULL;
}

static int layer_index(const pz_seq *net, const char *name) {
    char *end;
    const long v = strtol(name, &end, 10);
    if (end != name && !*end) return v >= 0 && v < net->n ? (int)v : -1;
    for (int i = 0; i < net->n; i++)
        if (!strcmp(net->layers[i].name, name)) return i;
    /* a group ("layer2"): its last block ("layer2.N") */
    const size_t len = strlen(name);
    int found = -1;
    for (int i = 0; i < net->n; i++)
        if (!strncmp(net->layers[i].name, name, len) && net->layers[i].name[len] == '.') found = i;
    return found;
}

pz_status pz_pipe_resolve_cuts(const pz_model *model, const char *cuts, int stages, pz_pipe_config *cfg) {
    const pz_seq *net = &model->net;
    if (cuts && *cuts) {
        char buf[512], *save = NULL;
        snprintf(buf, sizeof buf, "%s", cuts);
        int n = 0, prev = -1;
        for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            const int i = layer_index(net, t);
            if (i < 0) return pz_fail(PZ_ERR_ARG, "--cuts: '%s' is not a layer of %s (see pipezip models %s)", t, model->preset, model->preset);
            if (i <= prev || i >= net->n - 1)
                return pz_fail(PZ_ERR_ARG, "--cuts: '%s' (layer %d) must come after the previous cut and before the last layer", t, i);
            if (n == PZ_MAX_STAGES - 1) return pz_fail(PZ_ERR_ARG, "--cuts: at most %d cuts", PZ_MAX_STAGES - 1);
            cfg->cuts[n++] = i;
            prev = i;
        }
        cfg->n_stages = n + 1;
        return PZ_OK;
    }
    if (stages < 1 || stages > PZ_MAX_STAGES || stages > net->n)
        return pz_fail(PZ_ERR_ARG, "--stages %d: expected 1..%d for %s", stages, net->n < PZ_MAX_STAGES ? net->n : PZ_MAX_STAGES, model->preset);
    /* balanced by compute: stage s ends once the cumulative FLOPs pass (s+1)/S
     * of the total, leaving every later stage at least one layer */
    int64_t total = 0, run = 0;
    for (int i = 0; i < net->n; i++) total += net->layers[i].macs + 1;
    int s = 0;
    for (int i = 0; i < net->n - 1 && s < stages - 1; i++) {
        run += net->layers[i].macs + 1;
        const int left_layers = net->n - 1 - i, left_stages = stages - 1 - s;
        if (run * stages >= (int64_t)(s + 1) * total || left_layers == left_stages) cfg->cuts[s++] = i;
    }
    cfg->n_stages = s + 1;
    return PZ_OK;
}

static int64_t param_offset(const pz_seq *net, int layer) {
    int64_t off = 0;
    for (int i = 0; i < layer; i++) off += net->layers[i].n_params;
    return off;
}

static pz_status make_codec(pz_codec **c, const char *spec, uint32_t max_samples) {
    PZ_TRY(pz_codec_create(c, spec && *spec ? spec : "none"));
    if (max_samples) pz_codec_set_max_samples(*c, max_samples);
    return PZ_OK;
}

/* evaluation uses the forward codec's stateless base (an EF/EF21/AQ-SGD
 * wrapper's base codec) */
static pz_status make_eval_codec(pz_codec **c, const pz_codec *fwd) {
    char spec[PZ_SPEC_MAX];
    pz_codec_base_spec(fwd, spec, sizeof spec);
    return make_codec(c, spec, 0);
}

static pz_status stage_setup(pz_pipe *p, int i) {
    const pz_pipe_config *cfg = &p->cfg;
    stage *s = &p->st[i];
    s->pipe = p, s->index = i, s->M = cfg->micro_batches;
    /* buffers for this stage's layers only */
    const int from = i ? cfg->cuts[i - 1] + 1 : 0, to = i == p->S - 1 ? 1 << 30 : cfg->cuts[i] + 1;
    for (int m = 0; m < s->M; m++) {
        PZ_TRY(pz_model_preset_range(&s->model[m], cfg->model, cfg->in, cfg->n_classes, p->mb_max, cfg->seed, from, to));
        if (m) pz_model_share(&s->model[m], &s->model[0]);
    }
    const int n = s->model[0].net.n;
    s->from = from;
    s->to = i == p->S - 1 ? n : to;
    if (s->to <= s->from || s->to > n)
        return pz_fail(PZ_ERR_ARG, "cut after layer %d does not leave stage %d any layers (the model has %d)", cfg->cuts[i], i, n);
    s->p0 = param_offset(&s->model[0].net, s->from);
    s->p1 = param_offset(&s->model[0].net, s->to);
    s->opt = (pz_optim){.momentum = cfg->momentum, .nesterov = cfg->nesterov, .weight_decay = cfg->weight_decay};
    pz_optim_init(&s->opt, cfg->optimizer, s->p1 - s->p0);
    if (i > 0) {
        PZ_TRY(make_codec(&s->fwd_rx, cfg->fwd[i - 1], cfg->max_samples));
        PZ_TRY(make_codec(&s->bwd_tx, cfg->bwd[i - 1], cfg->max_samples));
        PZ_TRY(make_eval_codec(&s->eval_rx, s->fwd_rx));
        PZ_TRY(make_codec(&s->plain_rx, "none", 0));
        pz_codec_set_seed(s->bwd_tx, cfg->seed * 1000003u + 2 * (uint64_t)i + 1);
        s->bwd_lossless = pz_codec_is_lossless(s->bwd_tx);
    }
    if (i < p->S - 1) {
        PZ_TRY(make_codec(&s->fwd_tx, cfg->fwd[i], cfg->max_samples));
        PZ_TRY(make_codec(&s->bwd_rx, cfg->bwd[i], cfg->max_samples));
        PZ_TRY(make_eval_codec(&s->eval_tx, s->fwd_tx));
        PZ_TRY(make_codec(&s->plain_tx, "none", 0));
        pz_codec_set_seed(s->fwd_tx, cfg->seed * 1000003u + 2 * (uint64_t)i);
        s->fwd_lossless = pz_codec_is_lossless(s->fwd_tx);
    }
    s->rep.stage = i;
    if (cfg->resume) {
        char path[4200];
        snprintf(path, sizeof path, "%s/stage-%d.bin", cfg->resume, i);
        pz_codec *codecs[4] = {s->fwd_rx, s->bwd_tx, s->fwd_tx, s->bwd_rx};
        pz_status st = pz_checkpoint_read(path, i, &s->model[0], s->p0, s->p1, &s->opt, codecs, stage_codecs(s));
        if (st) return pz_fail(st, "stage %d: %s", i, pz_last_error());
    }
    return PZ_OK;
}

pz_status pz_pipe_create(pz_pipe **out, const pz_pipe_config *cfg) {
    *out = NULL;
    if (cfg->n_stages < 1 || cfg->n_stages > PZ_MAX_STAGES)
        return pz_fail(PZ_ERR_ARG, "%d stages (expected 1..%d)", cfg->n_stages, PZ_MAX_STAGES);
    const int M = cfg->micro_batches ? cfg->micro_batches : 1;
    if (M < 1 || M > PZ_MAX_STAGES || M > cfg->batch_max)
        return pz_fail(PZ_ERR_ARG, "--micro-batches %d: expected 1..%d and at most the batch size", M, PZ_MAX_STAGES);
    pz_pipe *p = pz_calloc(1, sizeof *p);
    p->cfg = *cfg;
    p->cfg.micro_batches = M;
    if (p->cfg.timeout_s <= 0) p->cfg.timeout_s = 60.0;
    if (p->cfg.err_every == 0) p->cfg.err_every = 10;
    p->S = cfg->n_stages;
    p->first = cfg->local_set ? cfg->first_local : 0;
    p->last = cfg->local_set ? cfg->last_local : p->S - 1;
    p->has_driver = p->first == 0;
    p->mb_max = (cfg->batch_max + M - 1) / M;
    {
        char *f = p->fingerprint;
        const size_t cap = sizeof p->fingerprint;
        size_t n = (size_t)snprintf(f, cap, "model=%s in=%dx%dx%d classes=%d batch=%d seed=%llu stages=%d micro=%d opt=%d mom=%g wd=%g nest=%d cuts=",
                                    cfg->model, cfg->in.c, cfg->in.h, cfg->in.w, cfg->n_classes, cfg->batch_max,
                                    (unsigned long long)cfg->seed, cfg->n_stages, M, (int)cfg->optimizer, cfg->momentum,
                                    cfg->weight_decay, cfg->nesterov);
        for (int b = 0; b + 1 < cfg->n_stages && n < cap; b++)
            n += (size_t)snprintf(f + n, cap - n, "%d%s", cfg->cuts[b], b + 2 < cfg->n_stages ? "," : "");
        for (int b = 0; b + 1 < cfg->n_stages && n < cap; b++)
            n += (size_t)snprintf(f + n, cap - n, " fwd%d=%s bwd%d=%s", b + 1, cfg->fwd[b][0] ? cfg->fwd[b] : "none", b + 1,
                                  cfg->bwd[b][0] ? cfg->bwd[b] : "none");
    }
    pz_status st = PZ_OK;
    if (p->first < 0 || p->last >= p->S || p->first > p->last) st = pz_fail(PZ_ERR_ARG, "local stages %d..%d of %d", p->first, p->last, p->S);
    else if (p->first > 0 && !cfg->prev_link) st = pz_fail(PZ_ERR_ARG, "stage %d needs a link to stage %d", p->first, p->first - 1);
    else if (p->last < p->S - 1 && !cfg->next_link) st = pz_fail(PZ_ERR_ARG, "stage %d needs a link to stage %d", p->last, p->last + 1);
    if (st) {
        pz_link_free(cfg->prev_link), pz_link_free(cfg->next_link);
        free(p);
        return st;
    }
    /* links: the driver's, between local stages, and the remote ones given */
    pz_link *left = cfg->prev_link;
    if (p->has_driver) pz_link_inproc_pair(&p->to_first, &left, 8, "driver <-> stage 0");
    for (int i = p->first; i <= p->last; i++) {
        stage *s = &p->st[i];
        s->prev = left, left = NULL;
        if (i < p->last) {
            char name[64];
            snprintf(name, sizeof name, "stage %d <-> stage %d", i, i + 1);
            pz_link_inproc_pair(&s->next, &left, 8, name);
        } else if (i < p->S - 1) {
            s->next = cfg->next_link;
        }
        pz_link_set_clock(s->prev, &s->clock);
        if (s->next) pz_link_set_clock(s->next, &s->clock);
        if (i > 0) pz_link_set_emulation(s->prev, &cfg->emu);
        if (s->next) pz_link_set_emulation(s->next, &cfg->emu);
    }
    if (p->has_driver) pz_link_set_clock(p->to_first, &p->clock);
    for (int i = p->first; i <= p->last && !st; i++) st = stage_setup(p, i);
    if (st) {
        pz_pipe_free(p);
        return st;
    }
    pz_clock_start(&p->clock, cfg->realtime);
    for (int i = p->first; i <= p->last; i++) {
        pthread_create(&p->st[i].thread, NULL, stage_main, &p->st[i]);
        p->st[i].running = 1;
    }
    p->started = 1;
    if (p->has_driver && p->S > 1) { /* every stage, wherever it runs, agrees on the pipeline */
        size_t n;
        st = driver_ask(p, TAG_CHECK, p->fingerprint, strlen(p->fingerprint), TAG_CHECKED, &n);
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
    /* the reason a local stage recorded (its own or one passed along) */
    for (int i = p->first; i <= p->last; i++)
        if (p->st[i].error[0]) return pz_fail(PZ_ERR_STATE, "%s", p->st[i].error);
    return fallback;
}

/* receive on the driver's link; an ERROR names the stage that failed */
static pz_status driver_recv(pz_pipe *p, int want, size_t *n) {
    int tag;
    pz_status st = pz_link_recv(p->to_first, &tag, &p->buf, &p->cap, n, p->cfg.timeout_s * (p->S + 1));
    if (st) return driver_error(p, st);
    if (tag == TAG_ERROR) return pz_fail(PZ_ERR_STATE, "%.*s", (int)(*n > 500 ? 500 : *n), (char *)p->buf);
    if (tag != want) return pz_fail(PZ_ERR_STATE, "stage 0 sent message %d, expected %d", tag, want);
    return PZ_OK;
}

/* Send stage 0 a message (msg may be p->buf) and wait for the answer `reply`
 * (into p->buf, *n bytes); errors name the stage where they started. */
static pz_status driver_ask(pz_pipe *p, int tag, const void *msg, size_t len, int reply, size_t *n) {
    if (!p->has_driver) return pz_fail(PZ_ERR_STATE, "this process has no driver (stage 0 runs elsewhere)");
    const pz_status st = pz_link_send(p->to_first, tag, msg, len);
    return st ? driver_error(p, st) : driver_recv(p, reply, n);
}

pz_status pz_pipe_train_step(pz_pipe *p, const float *x, const int32_t *y, const uint32_t *ids, int B, float lr,
                             float *loss, int *correct) {
    if (B < 1 || B > p->cfg.batch_max) return pz_fail(PZ_ERR_ARG, "batch of %d, the pipeline takes 1..%d", B, p->cfg.batch_max);
    const int64_t per = pz_shape_numel(p->cfg.in);
    const size_t len = meta_bytes(B) + 4 * (size_t)(B * per);
    PZ_TRY(grow_buffer(&p->buf, &p->cap, len));
    put_meta(p->buf, B, ids, y, lr, 1);
    memcpy(p->buf + meta_bytes(B), x, 4 * (size_t)(B * per));
    size_t n;
    PZ_TRY(driver_ask(p, TAG_BATCH, p->buf, len, TAG_LOSS, &n));
    if (n != 8) return pz_fail(PZ_ERR_STATE, "a %zu-byte loss message", n);
    memcpy(loss, p->buf, 4), memcpy(correct, p->buf + 4, 4);
    return driver_recv(p, TAG_STEPPED, &n);
}

pz_status pz_pipe_evaluate(pz_pipe *p, const float *x, const int32_t *y, int64_t N, int compress, double *loss,
                           double *accuracy) {
    if (!p->has_driver) return pz_fail(PZ_ERR_STATE, "this process has no driver");
    const int64_t per = pz_shape_numel(p->cfg.in);
    double total = 0.0;
    int64_t hits = 0;
    for (int64_t i = 0; i < N; i += p->mb_max) {
        const int B = (int)(N - i < p->mb_max ? N - i : p->mb_max);
        const size_t hdr = 8 + 4 * (size_t)B, len = hdr + 4 * (size_t)(B * per);
        PZ_TRY(grow_buffer(&p->buf, &p->cap, len));
        memcpy(p->buf, &B, 4);
        memcpy(p->buf + 4, &compress, 4);
        memcpy(p->buf + 8, y + i, 4 * (size_t)B);
        memcpy(p->buf + hdr, x + i * per, 4 * (size_t)(B * per));
        size_t n;
        PZ_TRY(driver_ask(p, TAG_EVAL, p->buf, len, TAG_EVAL_RESULT, &n));
        if (n != 12) return pz_fail(PZ_ERR_STATE, "a %zu-byte evaluation result", n);
        double sum;
        int c;
        memcpy(&sum, p->buf, 8), memcpy(&c, p->buf + 8, 4);
        total += sum, hits += c;
    }
    *loss = N ? total / (double)N : 0.0;
    *accuracy = N ? (double)hits / (double)N : 0.0;
    return PZ_OK;
}

pz_status pz_pipe_collect_stats(pz_pipe *p) {
    size_t n;
    PZ_TRY(driver_ask(p, TAG_STATS, "", 0, TAG_STATS_REPLY, &n));
    if (n != (size_t)p->S * sizeof(stage_report)) return pz_fail(PZ_ERR_STATE, "statistics of %zu bytes for %d stages", n, p->S);
    for (int i = 0; i < p->S; i++) {
        stage_report r;
        memcpy(&r, p->buf + (size_t)i * sizeof r, sizeof r);
        if (r.stage != i) return pz_fail(PZ_ERR_STATE, "statistics out of order (stage %d at %d)", r.stage, i);
        p->reports[i] = r;
    }
    return PZ_OK;
}

pz_boundary_stats pz_pipe_boundary_stats(const pz_pipe *p, int b) {
    pz_boundary_stats s = {0};
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
    return s;
}

double pz_pipe_clock(pz_pipe *p) {
    pz_clock_charge(&p->clock);
    return p->clock.t;
}

pz_status pz_pipe_save(pz_pipe *p, const char *dir) {
    if (!p->has_driver) return pz_fail(PZ_ERR_STATE, "this process has no driver");
    PZ_TRY(pz_mkdir_p(dir));
    size_t n;
    return driver_ask(p, TAG_SAVE, dir, strlen(dir), TAG_SAVED, &n);
}

pz_status pz_pipe_set_warmup(pz_pipe *p, int on) {
    const int32_t v = on;
    size_t n;
    return driver_ask(p, TAG_WARMUP, &v, 4, TAG_WARMUP_SET, &n);
}

pz_status pz_pipe_hand_on(pz_pipe *p) {
    size_t n;
    return driver_ask(p, TAG_PUT_STATE, "", 0, TAG_KEPT, &n);
}

pz_status pz_pipe_fetch(pz_pipe *p, int *found) {
    size_t n;
    PZ_TRY(driver_ask(p, TAG_GET_STATE, "", 0, TAG_STATE, &n));
    int32_t f = 0;
    if (n == 4) memcpy(&f, p->buf, 4);
    *found = f;
    return PZ_OK;
}

pz_status pz_pipe_wait(pz_pipe *p) {
    for (int i = p->first; i <= p->last; i++)
        if (p->st[i].running) pthread_join(p->st[i].thread, NULL), p->st[i].running = 0;
    for (int i = p->first; i <= p->last; i++)
        if (p->st[i].error[0]) return pz_fail(PZ_ERR_STATE, "%s", p->st[i].error);
    return PZ_OK;
}

int pz_pipe_stages(const pz_pipe *p) { return p->S; }

void pz_pipe_free(pz_pipe *p) {
    if (!p) return;
    if (p->started && p->has_driver) pz_link_send(p->to_first, TAG_STOP, "", 0);
    for (int i = p->first; i <= p->last; i++)
        if (p->st[i].running) pthread_join(p->st[i].thread, NULL);
    for (int i = p->first; i <= p->last; i++) {
        stage *s = &p->st[i];
        for (int m = 0; m < PZ_MAX_STAGES; m++)
            if (s->model[m].params) pz_model_free(&s->model[m]);
        pz_optim_free(&s->opt);
        pz_codec_free(s->fwd_rx), pz_codec_free(s->bwd_tx), pz_codec_free(s->fwd_tx), pz_codec_free(s->bwd_rx);
        pz_codec_free(s->eval_tx), pz_codec_free(s->eval_rx), pz_codec_free(s->plain_tx), pz_codec_free(s->plain_rx);
        pz_link_free(s->prev);
        pz_link_free(s->next);
        free(s->kept);
    }
    pz_link_free(p->to_first);
    free(p->buf);
    free(p);
}
