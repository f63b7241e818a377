/* pipe.c — stages as threads, the step schedule (forward, loss, backward,
 * optimizer step) and the messages between them.
 *
 * Messages on a link between stages s and s+1, forward: META (batch size,
 * sample ids, labels, learning rate) then ACT (the encoded activation
 * frame); backward: GRAD (the encoded gradient frame). The driver talks to
 * stage 0 (BATCH in, STEPPED out) and to the last stage (LOSS out). STOP
 * travels forward and ends every thread. */
#include "pipe.h"
#include "link/link.h"
#include "pipezip/codec.h"
#include "kernels/kernels.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { TAG_BATCH = 1, TAG_META, TAG_ACT, TAG_GRAD, TAG_LOSS, TAG_STEPPED, TAG_STOP, TAG_EVAL, TAG_EVAL_META, TAG_EVAL_RESULT };

typedef struct {
    struct pz_pipe *pipe;
    int index, from, to;       /* top-level layers [from, to) */
    pz_model model;            /* this stage's own copy; it uses only its layers */
    pz_optim opt;
    int64_t p0, p1;            /* its parameters in model.params */
    pz_link *prev, *next;      /* towards stage index-1 (or the driver), index+1 (or the driver) */
    pz_codec *fwd_rx, *bwd_tx; /* decoding activations from prev, encoding gradients to prev */
    pz_codec *fwd_tx, *bwd_rx; /* encoding activations to next, decoding gradients from next */
    /* evaluation: the forward codec without its state (an EF/EF21/AQ-SGD
     * wrapper's base codec: test samples have no buffers, and evaluating
     * must not move the training state), and fp32 for plain inference */
    pz_codec *eval_tx, *eval_rx, *plain_tx, *plain_rx;
    pthread_t thread;
    char error[512];
} stage;

struct pz_pipe {
    pz_pipe_config cfg;
    int S, started;
    stage st[PZ_MAX_STAGES];
    pz_link *to_first, *from_last; /* the driver's ends */
    uint8_t *buf;
    size_t cap;
    /* per boundary b (after stage b), written by the sending stage only */
    uint64_t elements[PZ_MAX_STAGES], train_fwd[PZ_MAX_STAGES], train_bwd[PZ_MAX_STAGES], eval_fwd[PZ_MAX_STAGES];
};

static pz_status stage_fail(stage *s, pz_status st) {
    snprintf(s->error, sizeof s->error, "stage %d: %s", s->index, pz_last_error());
    return st;
}

/* the batch header: B, ids, labels, lr */
static size_t meta_bytes(int B) { return 4 + 8 * (size_t)B + 4; }

static void put_meta(uint8_t *out, int B, const uint32_t *ids, const int32_t *labels, float lr) {
    memcpy(out, &B, 4);
    memcpy(out + 4, ids, 4 * (size_t)B);
    memcpy(out + 4 + 4 * (size_t)B, labels, 4 * (size_t)B);
    memcpy(out + 4 + 8 * (size_t)B, &lr, 4);
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
                                 size_t *frame_cap, size_t *flen) {
    const int64_t shape[4] = {B, sh.c, sh.h, sh.w};
    const size_t need = pz_codec_max_frame_bytes(tx, 4, shape);
    PZ_TRY(grow_buffer(frame, frame_cap, need));
    return pz_codec_encode(tx, t, 4, shape, ids, *frame, *frame_cap, flen, NULL);
}

/* One evaluation batch at this stage: forward in eval mode; the last stage
 * answers the driver with the summed loss and the hits. msg holds the
 * header [B][compress][labels] (stage 0: then the inputs). */
static pz_status stage_eval(stage *s, const uint8_t *msg, size_t len, float *x_in, int32_t *labels, uint8_t **buf,
                            size_t *cap, uint8_t **frame, size_t *frame_cap) {
    pz_pipe *p = s->pipe;
    const int first = s->index == 0, last = s->index == p->S - 1;
    pz_seq *net = &s->model.net;
    const pz_shape ins = s->from ? net->layers[s->from - 1].out : net->in;
    const int64_t in_per = pz_shape_numel(ins);
    int B, compress, tag;
    memcpy(&B, msg, 4);
    if (len < 8 || B < 1 || B > p->cfg.batch_max || len < 8 + 4 * (size_t)B) return pz_fail(PZ_ERR_STATE, "bad evaluation header");
    memcpy(&compress, msg + 4, 4);
    memcpy(labels, msg + 8, 4 * (size_t)B);
    const size_t hdr = 8 + 4 * (size_t)B;
    uint8_t *header = pz_malloc(hdr);
    memcpy(header, msg, hdr);
    pz_status st = PZ_OK;
    if (first) {
        if (len != hdr + 4 * (size_t)(B * in_per)) st = pz_fail(PZ_ERR_STATE, "evaluation batch does not fit its header");
        else memcpy(x_in, msg + hdr, 4 * (size_t)(B * in_per));
    } else {
        size_t n;
        if (!st) st = pz_link_recv(s->prev, &tag, buf, cap, &n, p->cfg.timeout_s);
        if (!st && tag != TAG_ACT) st = pz_fail(PZ_ERR_STATE, "expected an activation frame, got message %d", tag);
        if (!st) st = pz_codec_decode(compress ? s->eval_rx : s->plain_rx, *buf, n, x_in, (size_t)(p->cfg.batch_max * in_per), NULL, NULL);
    }
    if (!st) {
        pz_seq_forward(net, s->from, s->to, x_in, B, 0);
        const float *out = net->act[s->to - 1];
        if (last) {
            int correct = 0;
            const float loss = softmax_xent_forward_backward(NULL, &correct, out, labels, B, s->model.n_classes);
            uint8_t res[12];
            const double sum = (double)loss * B;
            memcpy(res, &sum, 8), memcpy(res + 8, &correct, 4);
            st = pz_link_send(s->next, TAG_EVAL_RESULT, res, 12);
        } else {
            size_t flen;
            st = encode_boundary(compress ? s->eval_tx : s->plain_tx, out, B, net->layers[s->to - 1].out, NULL, frame, frame_cap,
                                 &flen);
            /* counted before sending: the send orders it before everything downstream */
            if (!st) p->eval_fwd[s->index] += hdr + flen;
            if (!st) st = pz_link_send(s->next, TAG_EVAL_META, header, hdr);
            if (!st) st = pz_link_send(s->next, TAG_ACT, *frame, flen);
        }
    }
    free(header);
    return st;
}

static void *stage_main(void *arg) {
    stage *s = arg;
    pz_thread_attach();
    pz_pipe *p = s->pipe;
    const int last = s->index == p->S - 1, first = s->index == 0;
    pz_seq *net = &s->model.net;
    const int64_t in_per = pz_shape_numel(s->from ? net->layers[s->from - 1].out : net->in);
    const int64_t out_per = pz_shape_numel(net->layers[s->to - 1].out);
    const int Bmax = p->cfg.batch_max;
    float *x_in = pz_floats((size_t)(Bmax * in_per)), *dy = pz_floats((size_t)(Bmax * out_per));
    float *dx = pz_floats((size_t)(Bmax * in_per));
    uint32_t *ids = pz_calloc((size_t)Bmax, sizeof(uint32_t));
    int32_t *labels = pz_calloc((size_t)Bmax, sizeof(int32_t));
    uint8_t *msg = NULL, *frame = NULL, *hdr = pz_malloc(meta_bytes(Bmax));
    size_t cap = 0, len, frame_cap = 0;
    const double tmo = p->cfg.timeout_s;
    pz_status st = PZ_OK;
    for (;;) {
        int tag, B;
        float lr;
        /* ---- receive the batch (stage 0) or its metadata + activation ---- */
        if ((st = pz_link_recv(s->prev, &tag, &msg, &cap, &len, -1.0))) break;
        if (tag == TAG_STOP) {
            if (!last) pz_link_send(s->next, TAG_STOP, "", 0);
            break;
        }
        if (tag == (first ? TAG_EVAL : TAG_EVAL_META)) {
            if ((st = stage_eval(s, msg, len, x_in, labels, &msg, &cap, &frame, &frame_cap))) break;
            continue;
        }
        if (tag != (first ? TAG_BATCH : TAG_META) || len < 4) {
            st = pz_fail(PZ_ERR_STATE, "unexpected message %d from the previous stage", tag);
            break;
        }
        memcpy(&B, msg, 4);
        if (B < 1 || B > Bmax || len < meta_bytes(B)) {
            st = pz_fail(PZ_ERR_STATE, "bad batch header (batch %d)", B);
            break;
        }
        memcpy(ids, msg + 4, 4 * (size_t)B);
        memcpy(labels, msg + 4 + 4 * (size_t)B, 4 * (size_t)B);
        memcpy(&lr, msg + 4 + 8 * (size_t)B, 4);
        if (first) {
            if (len != meta_bytes(B) + 4 * (size_t)(B * in_per)) {
                st = pz_fail(PZ_ERR_STATE, "batch of %zu bytes does not fit its header", len);
                break;
            }
            memcpy(x_in, msg + meta_bytes(B), 4 * (size_t)(B * in_per));
        } else {
            int nd;
            int64_t shape[4];
            if ((st = pz_link_recv(s->prev, &tag, &msg, &cap, &len, tmo))) break;
            if (tag != TAG_ACT) {
                st = pz_fail(PZ_ERR_STATE, "expected an activation frame, got message %d", tag);
                break;
            }
            if ((st = pz_codec_decode(s->fwd_rx, msg, len, x_in, (size_t)(Bmax * in_per), &nd, shape))) break;
            if (shape[0] != B || shape[0] * (nd > 1 ? shape[1] : 1) * (nd > 2 ? shape[2] : 1) * (nd > 3 ? shape[3] : 1) != B * in_per) {
                st = pz_fail(PZ_ERR_STATE, "activation frame of the wrong shape");
                break;
            }
        }
        /* ---- forward, loss, backward ---- */
        memset(s->model.grads + s->p0, 0, sizeof(float) * (size_t)(s->p1 - s->p0));
        pz_seq_forward(net, s->from, s->to, x_in, B, 1);
        const float *out = net->act[s->to - 1];
        if (last) {
            int correct = 0;
            const float loss = softmax_xent_forward_backward(dy, &correct, out, labels, B, s->model.n_classes);
            uint8_t res[8];
            memcpy(res, &loss, 4), memcpy(res + 4, &correct, 4);
            if ((st = pz_link_send(s->next, TAG_LOSS, res, 8))) break;
        } else {
            size_t flen;
            if ((st = encode_boundary(s->fwd_tx, out, B, net->layers[s->to - 1].out, ids, &frame, &frame_cap, &flen))) break;
            /* the batch header travels with the activations (labels included, as in split learning) */
            put_meta(hdr, B, ids, labels, lr);
            p->elements[s->index] += (uint64_t)(B * out_per); /* counted before sending (see inproc.c) */
            p->train_fwd[s->index] += meta_bytes(B) + flen;
            if ((st = pz_link_send(s->next, TAG_META, hdr, meta_bytes(B)))) break;
            if ((st = pz_link_send(s->next, TAG_ACT, frame, flen))) break;
            if ((st = pz_link_recv(s->next, &tag, &msg, &cap, &len, tmo))) break;
            if (tag != TAG_GRAD) {
                st = pz_fail(PZ_ERR_STATE, "expected a gradient frame, got message %d", tag);
                break;
            }
            if ((st = pz_codec_decode(s->bwd_rx, msg, len, dy, (size_t)(Bmax * out_per), NULL, NULL))) break;
        }
        pz_seq_backward(net, s->from, s->to, x_in, dy, first ? NULL : dx, B);
        if (!first) {
            size_t flen;
            if ((st = encode_boundary(s->bwd_tx, dx, B, s->from ? net->layers[s->from - 1].out : net->in, ids, &frame, &frame_cap,
                                      &flen)))
                break;
            p->train_bwd[s->index - 1] += flen;
            if ((st = pz_link_send(s->prev, TAG_GRAD, frame, flen))) break;
        }
        pz_optim_step(&s->opt, s->model.params + s->p0, s->model.grads + s->p0, lr);
        if (first && (st = pz_link_send(s->prev, TAG_STEPPED, "", 0))) break;
    }
    if (st) stage_fail(s, st);
    /* closing both links wakes the neighbours, who then stop in turn */
    pz_link_close(s->prev);
    pz_link_close(s->next);
    free(x_in), free(dy), free(dx), free(ids), free(labels), free(msg), free(frame), free(hdr);
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

pz_status pz_pipe_create(pz_pipe **out, const pz_pipe_config *cfg) {
    *out = NULL;
    if (cfg->n_stages < 1 || cfg->n_stages > PZ_MAX_STAGES)
        return pz_fail(PZ_ERR_ARG, "%d stages (expected 1..%d)", cfg->n_stages, PZ_MAX_STAGES);
    pz_pipe *p = pz_calloc(1, sizeof *p);
    p->cfg = *cfg;
    if (p->cfg.timeout_s <= 0) p->cfg.timeout_s = 60.0;
    p->S = cfg->n_stages;
    pz_status st = PZ_OK;
    /* evaluation uses the forward codec's base: "ef(topk:0.1),per=sample" -> "topk:0.1" */
    char eval_spec[256];
    snprintf(eval_spec, sizeof eval_spec, "%s", cfg->fwd ? cfg->fwd : "none");
    const char *open = strchr(eval_spec, '('), *close = strrchr(eval_spec, ')');
    if (open && close && close > open) {
        const size_t nlen = (size_t)(close - open - 1);
        memmove(eval_spec, open + 1, nlen);
        eval_spec[nlen] = 0;
    }
    int prev_to = 0;
    pz_link *left = NULL; /* the end the next stage gets as `prev` */
    pz_link_inproc_pair(&p->to_first, &left, 4, "driver <-> stage 0");
    for (int i = 0; i < p->S && !st; i++) {
        stage *s = &p->st[i];
        s->pipe = p, s->index = i, s->prev = left;
        left = NULL; /* owned by stage i now */
        if ((st = pz_model_preset(&s->model, cfg->model, cfg->in, cfg->n_classes, cfg->batch_max, cfg->seed))) break;
        const int n = s->model.net.n;
        s->from = prev_to;
        s->to = i == p->S - 1 ? n : cfg->cuts[i] + 1;
        if (s->to <= s->from || s->to > n) {
            st = pz_fail(PZ_ERR_ARG, "cut after layer %d does not leave stage %d any layers (the model has %d)", cfg->cuts[i], i, n);
            break;
        }
        prev_to = s->to;
        s->p0 = param_offset(&s->model.net, s->from);
        s->p1 = param_offset(&s->model.net, s->to);
        s->opt = (pz_optim){.momentum = cfg->momentum, .nesterov = cfg->nesterov, .weight_decay = cfg->weight_decay};
        pz_optim_init(&s->opt, cfg->optimizer, s->p1 - s->p0);
        char name[64];
        pz_link *right;
        if (i == p->S - 1) snprintf(name, sizeof name, "stage %d <-> driver", i);
        else snprintf(name, sizeof name, "stage %d <-> stage %d", i, i + 1);
        pz_link_inproc_pair(&s->next, &right, 4, name);
        left = right; /* not owned until the next stage (or the driver) takes it */
        if (i > 0 && (st = pz_codec_create(&s->fwd_rx, cfg->fwd))) break;
        if (i > 0 && (st = pz_codec_create(&s->bwd_tx, cfg->bwd))) break;
        if (i < p->S - 1 && (st = pz_codec_create(&s->fwd_tx, cfg->fwd))) break;
        if (i < p->S - 1 && (st = pz_codec_create(&s->bwd_rx, cfg->bwd))) break;
        if (i < p->S - 1 && ((st = pz_codec_create(&s->eval_tx, eval_spec)) || (st = pz_codec_create(&s->plain_tx, "none")))) break;
        if (i > 0 && ((st = pz_codec_create(&s->eval_rx, eval_spec)) || (st = pz_codec_create(&s->plain_rx, "none")))) break;
        if (s->fwd_tx) pz_codec_set_seed(s->fwd_tx, cfg->seed * 1000003u + 2 * (uint64_t)i);
        if (s->bwd_tx) pz_codec_set_seed(s->bwd_tx, cfg->seed * 1000003u + 2 * (uint64_t)i + 1);
    }
    p->from_last = left;
    if (st) {
        pz_pipe_free(p);
        return st;
    }
    for (int i = 0; i < p->S; i++) pthread_create(&p->st[i].thread, NULL, stage_main, &p->st[i]);
    p->started = 1;
    *out = p;
    return PZ_OK;
}

static pz_status first_stage_error(pz_pipe *p, pz_status fallback) {
    for (int i = 0; i < p->S; i++)
        if (p->st[i].error[0]) return pz_fail(PZ_ERR_STATE, "%s", p->st[i].error);
    return fallback;
}

pz_status pz_pipe_train_step(pz_pipe *p, const float *x, const int32_t *y, const uint32_t *ids, int B, float lr,
                             float *loss, int *correct) {
    if (B < 1 || B > p->cfg.batch_max) return pz_fail(PZ_ERR_ARG, "batch of %d, the pipeline takes 1..%d", B, p->cfg.batch_max);
    const int64_t per = pz_shape_numel(p->cfg.in);
    const size_t len = meta_bytes(B) + 4 * (size_t)(B * per);
    PZ_TRY(grow_buffer(&p->buf, &p->cap, len));
    put_meta(p->buf, B, ids, y, lr);
    memcpy(p->buf + meta_bytes(B), x, 4 * (size_t)(B * per));
    pz_status st = pz_link_send(p->to_first, TAG_BATCH, p->buf, len);
    int tag;
    size_t n;
    if (!st) st = pz_link_recv(p->from_last, &tag, &p->buf, &p->cap, &n, p->cfg.timeout_s * p->S);
    if (!st && (tag != TAG_LOSS || n != 8)) st = pz_fail(PZ_ERR_STATE, "the last stage sent message %d instead of the loss", tag);
    if (!st) memcpy(loss, p->buf, 4), memcpy(correct, p->buf + 4, 4);
    if (!st) st = pz_link_recv(p->to_first, &tag, &p->buf, &p->cap, &n, p->cfg.timeout_s * p->S);
    if (!st && tag != TAG_STEPPED) st = pz_fail(PZ_ERR_STATE, "stage 0 sent message %d instead of finishing the step", tag);
    return st ? first_stage_error(p, st) : PZ_OK;
}

pz_status pz_pipe_evaluate(pz_pipe *p, const float *x, const int32_t *y, int64_t N, int compress, double *loss,
                           double *accuracy) {
    const int64_t per = pz_shape_numel(p->cfg.in);
    double total = 0.0;
    int64_t hits = 0;
    for (int64_t i = 0; i < N; i += p->cfg.batch_max) {
        const int B = (int)(N - i < p->cfg.batch_max ? N - i : p->cfg.batch_max);
        const size_t hdr = 8 + 4 * (size_t)B, len = hdr + 4 * (size_t)(B * per);
        PZ_TRY(grow_buffer(&p->buf, &p->cap, len));
        memcpy(p->buf, &B, 4);
        memcpy(p->buf + 4, &compress, 4);
        memcpy(p->buf + 8, y + i, 4 * (size_t)B);
        memcpy(p->buf + hdr, x + i * per, 4 * (size_t)(B * per));
        pz_status st = pz_link_send(p->to_first, TAG_EVAL, p->buf, len);
        int tag;
        size_t n;
        if (!st) st = pz_link_recv(p->from_last, &tag, &p->buf, &p->cap, &n, p->cfg.timeout_s * p->S);
        if (!st && (tag != TAG_EVAL_RESULT || n != 12)) st = pz_fail(PZ_ERR_STATE, "the last stage sent message %d instead of a result", tag);
        if (st) return first_stage_error(p, st);
        double sum;
        int c;
        memcpy(&sum, p->buf, 8), memcpy(&c, p->buf + 8, 4);
        total += sum, hits += c;
    }
    *loss = N ? total / (double)N : 0.0;
    *accuracy = N ? (double)hits / (double)N : 0.0;
    return PZ_OK;
}

pz_boundary_stats pz_pipe_boundary_stats(const pz_pipe *p, int b) {
    pz_boundary_stats s = {0};
    if (b < 0 || b >= p->S - 1) return s;
    const pz_link_stats l = pz_link_get_stats(p->st[b].next);
    s.fwd_bytes = p->train_fwd[b];
    s.bwd_bytes = p->train_bwd[b];
    s.eval_bytes = p->eval_fwd[b];
    s.link_fwd_bytes = l.bytes_sent;
    s.link_bwd_bytes = l.bytes_received;
    s.elements = p->elements[b];
    return s;
}

void pz_pipe_free(pz_pipe *p) {
    if (!p) return;
    if (p->started) {
        pz_link_send(p->to_first, TAG_STOP, "", 0);
        for (int i = 0; i < p->S; i++) pthread_join(p->st[i].thread, NULL);
    }
    for (int i = 0; i < p->S; i++) {
        stage *s = &p->st[i];
        if (s->model.params) pz_model_free(&s->model);
        pz_optim_free(&s->opt);
        pz_codec_free(s->fwd_rx), pz_codec_free(s->bwd_tx), pz_codec_free(s->fwd_tx), pz_codec_free(s->bwd_rx);
        pz_codec_free(s->eval_tx), pz_codec_free(s->eval_rx), pz_codec_free(s->plain_tx), pz_codec_free(s->plain_rx);
        pz_link_free(s->prev);
        pz_link_free(s->next);
    }
    pz_link_free(p->to_first);
    pz_link_free(p->from_last);
    free(p->buf);
    free(p);
}
