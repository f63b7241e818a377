/* SPDX-License-Identifier: MIT */
/* protocol.c — the control messages of docs/PROTOCOL.md, written and parsed
 * field by field in little-endian. */
#include "protocol.h"
#include "base/wire.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[] = {
    [MSG_BATCH] = "BATCH", [MSG_META] = "META", [MSG_ACT] = "ACT", [MSG_GRAD] = "GRAD", [MSG_LOSS] = "LOSS",
    [MSG_STEPPED] = "STEPPED", [MSG_STOP] = "STOP", [MSG_EVAL] = "EVAL", [MSG_EVAL_META] = "EVAL_META",
    [MSG_EVAL_RESULT] = "EVAL_RESULT", [MSG_STATS] = "STATS", [MSG_STATS_REPLY] = "STATS_REPLY", [MSG_SAVE] = "SAVE",
    [MSG_SAVED] = "SAVED", [MSG_ERROR] = "ERROR", [MSG_WARMUP] = "WARMUP", [MSG_WARMUP_SET] = "WARMUP_SET",
    [MSG_PUT_STATE] = "PUT_STATE", [MSG_GET_STATE] = "GET_STATE", [MSG_STATE] = "STATE", [MSG_KEPT] = "KEPT",
    [MSG_CHECK] = "CHECK", [MSG_CHECKED] = "CHECKED", [MSG_TIED_GRAD] = "TIED_GRAD", [MSG_TIED_WEIGHTS] = "TIED_WEIGHTS",
    [MSG_NORM] = "NORM", [MSG_CLIP] = "CLIP", [MSG_BUDGET] = "BUDGET", [MSG_BUDGET_SET] = "BUDGET_SET",
    [MSG_DRAIN] = "DRAIN",
};

const char *msg_name(int tag) {
    return tag > 0 && tag < (int)(sizeof names / sizeof *names) && names[tag] ? names[tag] : "unknown";
}

pz_status msg_reserve(uint8_t **buf, size_t *cap, size_t need) {
    if (*cap >= need) return PZ_OK;
    uint8_t *b = realloc(*buf, need);
    if (!b) return pz_fail(PZ_ERR_NOMEM, "out of memory for a %zu-byte message", need);
    *buf = b, *cap = need;
    return PZ_OK;
}

void msg_error_text(const uint8_t *msg, size_t len, char *out, size_t cap) {
    const size_t n = strnlen((const char *)msg, len);
    snprintf(out, cap, "%.*s", (int)(n < cap - 1 ? n : cap - 1), (const char *)msg);
}

pz_status msg_recv(pz_link *l, int want, uint8_t **buf, size_t *cap, size_t *len, double timeout_s, char *error,
                   size_t error_cap) {
    int tag;
    PZ_TRY(pz_link_recv(l, &tag, buf, cap, len, timeout_s));
    if (tag == MSG_ERROR) {
        char text[501];
        msg_error_text(*buf, *len, text, sizeof text);
        if (error && error_cap) msg_error_text(*buf, *len, error, error_cap);
        return pz_fail(PZ_ERR_STATE, "%s", text);
    }
    if (tag != want)
        return pz_fail(PZ_ERR_STATE, "expected %s (%d) from %s, got %s (%d)", msg_name(want), want, pz_link_name(l), msg_name(tag), tag);
    return PZ_OK;
}

/* ---- what a header carries per sample ---- */
static size_t per_sample(const msg_layout *L) { return (size_t)L->w * ((size_t)L->P + (size_t)L->T); }

/* n values of w bytes each, little-endian (w = 4: the i32 of old) */
static void put_packed(uint8_t *out, int w, const int32_t *v, size_t n) {
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < w; k++) out[i * (size_t)w + (size_t)k] = (uint8_t)((uint32_t)v[i] >> (8 * k));
}
static void get_packed(const uint8_t *in, int w, int32_t *v, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t u = 0;
        for (int k = 0; k < w; k++) u |= (uint32_t)in[i * (size_t)w + (size_t)k] << (8 * k);
        v[i] = (int32_t)u; /* narrower widths hold token ids, never negative */
    }
}
/* tokens held as exact floats (the model's input) */
static void put_tokens(uint8_t *out, int w, const float *t, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const uint32_t u = (uint32_t)t[i];
        for (int k = 0; k < w; k++) out[i * (size_t)w + (size_t)k] = (uint8_t)(u >> (8 * k));
    }
}
static pz_status get_tokens(const uint8_t *in, const msg_layout *L, float *t, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t u = 0;
        for (int k = 0; k < L->w; k++) u |= (uint32_t)in[i * (size_t)L->w + (size_t)k] << (8 * k);
        if (u >= (uint32_t)L->vocab)
            return pz_fail(PZ_ERR_STATE, "a batch header's token %u is outside the vocabulary (%d)", u, L->vocab);
        t[i] = (float)u;
    }
    return PZ_OK;
}

msg_layout msg_layout_of(int P, int T, int vocab) {
    msg_layout L = {.P = P, .T = 0, .w = 4, .vocab = vocab};
    if (T > 0) L.T = T, L.w = vocab <= 256 ? 1 : vocab <= 65536 ? 2 : 4;
    return L;
}

/* ---- META ---- */
size_t msg_meta_bytes(int B, const msg_layout *L) { return 4 + 4 * (size_t)B + (size_t)B * per_sample(L) + 12; }

void msg_meta_put(uint8_t *out, int B, const msg_layout *L, const uint32_t *ids, const int32_t *targets, const float *tokens,
                  float lr, int M, int Btot) {
    const size_t nt = (size_t)B * (size_t)L->P, at = 4 + 4 * (size_t)B + (size_t)B * per_sample(L);
    pz_put_i32(out, B);
    pz_put_words(out + 4, ids, (size_t)B);
    put_packed(out + 4 + 4 * (size_t)B, L->w, targets, nt);
    if (L->T) put_tokens(out + 4 + 4 * (size_t)B + nt * (size_t)L->w, L->w, tokens, (size_t)B * (size_t)L->T);
    pz_put_f32(out + at, lr);
    pz_put_i32(out + at + 4, M);
    pz_put_i32(out + at + 8, Btot);
}

pz_status msg_meta_get(const uint8_t *in, size_t len, int exact, int max_B, int max_M, const msg_layout *L, msg_meta *m) {
    if (len < 4) return pz_fail(PZ_ERR_STATE, "a %zu-byte batch header", len);
    const int B = pz_get_i32(in);
    if (B < 1 || B > max_B) return pz_fail(PZ_ERR_STATE, "bad batch header (a batch of %d, at most %d)", B, max_B);
    const size_t need = msg_meta_bytes(B, L), nt = (size_t)B * (size_t)L->P, at = 4 + 4 * (size_t)B + (size_t)B * per_sample(L);
    if (exact ? len != need : len < need) return pz_fail(PZ_ERR_STATE, "bad batch header (%zu bytes for a batch of %d)", len, B);
    const int M = pz_get_i32(in + at + 4);
    if (M < 1 || M > max_M) return pz_fail(PZ_ERR_STATE, "bad batch header (%d micro-batches)", M);
    const int Btot = pz_get_i32(in + at + 8);
    if (Btot < B || Btot < M || (int64_t)Btot > (int64_t)max_B * M)
        return pz_fail(PZ_ERR_STATE, "bad batch header (a micro-batch of %d of a batch of %d in %d micro-batches)", B, Btot, M);
    if (L->T) PZ_TRY(get_tokens(in + 4 + 4 * (size_t)B + nt * (size_t)L->w, L, m->tokens, (size_t)B * (size_t)L->T));
    m->B = B, m->M = M, m->Btot = Btot;
    pz_get_words(m->ids, in + 4, (size_t)B);
    get_packed(in + 4 + 4 * (size_t)B, L->w, m->targets, nt);
    m->lr = pz_get_f32(in + at);
    return PZ_OK;
}

/* ---- EVAL_META ---- */
size_t msg_eval_bytes(int B, const msg_layout *L) { return 8 + (size_t)B * per_sample(L); }

void msg_eval_put(uint8_t *out, int B, const msg_layout *L, int compressed, const int32_t *targets, const float *tokens) {
    const size_t nt = (size_t)B * (size_t)L->P;
    pz_put_i32(out, B);
    pz_put_i32(out + 4, compressed);
    put_packed(out + 8, L->w, targets, nt);
    if (L->T) put_tokens(out + 8 + nt * (size_t)L->w, L->w, tokens, (size_t)B * (size_t)L->T);
}

pz_status msg_eval_get(const uint8_t *in, size_t len, int exact, int max_B, const msg_layout *L, int *B, int *compressed,
                       int32_t *targets, float *tokens) {
    if (len < 8) return pz_fail(PZ_ERR_STATE, "a %zu-byte evaluation header", len);
    const int b = pz_get_i32(in), c = pz_get_i32(in + 4);
    if (b < 1 || b > max_B || (c != 0 && c != 1)) return pz_fail(PZ_ERR_STATE, "bad evaluation header (a batch of %d, compressed %d)", b, c);
    if (exact ? len != msg_eval_bytes(b, L) : len < msg_eval_bytes(b, L))
        return pz_fail(PZ_ERR_STATE, "bad evaluation header (%zu bytes for a batch of %d)", len, b);
    const size_t nt = (size_t)b * (size_t)L->P;
    if (L->T) PZ_TRY(get_tokens(in + 8 + nt * (size_t)L->w, L, tokens, (size_t)b * (size_t)L->T));
    *B = b, *compressed = c;
    get_packed(in + 8, L->w, targets, nt);
    return PZ_OK;
}

/* ---- LOSS, EVAL_RESULT, flags ---- */
void msg_loss_put(uint8_t *out, float loss, int correct) { pz_put_f32(out, loss), pz_put_i32(out + 4, correct); }

pz_status msg_loss_get(const uint8_t *in, size_t len, float *loss, int *correct) {
    if (len != MSG_LOSS_BYTES) return pz_fail(PZ_ERR_STATE, "a %zu-byte loss message", len);
    *loss = pz_get_f32(in), *correct = pz_get_i32(in + 4);
    return PZ_OK;
}

void msg_eval_result_put(uint8_t *out, double loss_sum, int correct) { pz_put_f64(out, loss_sum), pz_put_i32(out + 8, correct); }

pz_status msg_eval_result_get(const uint8_t *in, size_t len, double *loss_sum, int *correct) {
    if (len != MSG_EVAL_RESULT_BYTES) return pz_fail(PZ_ERR_STATE, "a %zu-byte evaluation result", len);
    *loss_sum = pz_get_f64(in), *correct = pz_get_i32(in + 8);
    return PZ_OK;
}

pz_status msg_flag_get(const uint8_t *in, size_t len, const char *what, int *flag) {
    const int32_t v = len == 4 ? pz_get_i32(in) : -1;
    if (v != 0 && v != 1) return pz_fail(PZ_ERR_STATE, "bad %s message", what);
    *flag = v;
    return PZ_OK;
}

/* ---- STATS_REPLY ---- */
static uint8_t *put64(uint8_t *p, uint64_t v) { pz_put_u64(p, v); return p + 8; }
static uint8_t *putd(uint8_t *p, double v) { pz_put_f64(p, v); return p + 8; }
static const uint8_t *get64(const uint8_t *p, uint64_t *v) { *v = pz_get_u64(p); return p + 8; }
static const uint8_t *getd(const uint8_t *p, double *v) { *v = pz_get_f64(p); return p + 8; }

static uint8_t *put_link(uint8_t *p, const pz_link_stats *s) {
    p = put64(p, s->messages_sent), p = put64(p, s->bytes_sent), p = put64(p, s->messages_received);
    p = put64(p, s->bytes_received), p = put64(p, s->wire_bytes_sent), p = put64(p, s->wire_bytes_received);
    return putd(p, s->busy_seconds);
}
static const uint8_t *get_link(const uint8_t *p, pz_link_stats *s) {
    p = get64(p, &s->messages_sent), p = get64(p, &s->bytes_sent), p = get64(p, &s->messages_received);
    p = get64(p, &s->bytes_received), p = get64(p, &s->wire_bytes_sent), p = get64(p, &s->wire_bytes_received);
    return getd(p, &s->busy_seconds);
}

void msg_report_put(uint8_t *out, const stage_report *r) {
    uint8_t *p = out;
    /* bytes 4..7: a budget's rungs, each + 1 (0: none), activations in the low half */
    const uint32_t rungs = (uint32_t)(r->rung_act + 1 > 0 ? r->rung_act + 1 : 0) | (uint32_t)(r->rung_grad + 1 > 0 ? r->rung_grad + 1 : 0) << 16;
    pz_put_i32(p, r->stage), pz_put_u32(p + 4, rungs), p += 8;
    p = put64(p, r->act_bytes), p = put64(p, r->act_frames), p = put64(p, r->act_elements), p = put64(p, r->act_err_n);
    p = put64(p, r->eval_bytes);
    p = putd(p, r->act_err_sum), p = putd(p, r->act_encode_s), p = putd(p, r->grad_decode_s);
    p = put64(p, r->grad_bytes), p = put64(p, r->grad_frames), p = put64(p, r->grad_elements), p = put64(p, r->grad_err_n);
    p = putd(p, r->grad_err_sum), p = putd(p, r->grad_encode_s), p = putd(p, r->act_decode_s);
    p = putd(p, r->compute_s), p = putd(p, r->clock);
    p = put_link(p, &r->next);
    p = put_link(p, &r->prev);
}

void msg_report_get(const uint8_t *in, stage_report *r) {
    const uint8_t *p = in;
    const uint32_t rungs = pz_get_u32(p + 4);
    r->stage = pz_get_i32(p), p += 8;
    r->rung_act = (int32_t)(rungs & 0xffff) - 1, r->rung_grad = (int32_t)(rungs >> 16) - 1;
    p = get64(p, &r->act_bytes), p = get64(p, &r->act_frames), p = get64(p, &r->act_elements), p = get64(p, &r->act_err_n);
    p = get64(p, &r->eval_bytes);
    p = getd(p, &r->act_err_sum), p = getd(p, &r->act_encode_s), p = getd(p, &r->grad_decode_s);
    p = get64(p, &r->grad_bytes), p = get64(p, &r->grad_frames), p = get64(p, &r->grad_elements), p = get64(p, &r->grad_err_n);
    p = getd(p, &r->grad_err_sum), p = getd(p, &r->grad_encode_s), p = getd(p, &r->act_decode_s);
    p = getd(p, &r->compute_s), p = getd(p, &r->clock);
    p = get_link(p, &r->next);
    get_link(p, &r->prev);
}

/* ---- BUDGET, BUDGET_SET ---- */
size_t msg_budget_item_bytes(int L) { return 8 + 16 * (size_t)L; }

void msg_budget_item_put(uint8_t *out, const pz_budget_meas *m, int L) {
    pz_put_u64(out, m->elements), out += 8;
    for (int r = 0; r < L; r++) pz_put_u64(out, m->bytes[r]), pz_put_f64(out + 8, m->err[r]), out += 16;
}

pz_status msg_budget_item_get(const uint8_t *in, int L, pz_budget_meas *m) {
    memset(m, 0, sizeof *m);
    m->elements = pz_get_u64(in), in += 8;
    if (m->elements > (uint64_t)1 << 53) return pz_fail(PZ_ERR_STATE, "a BUDGET item of %llu elements", (unsigned long long)m->elements);
    for (int r = 0; r < L; r++, in += 16) {
        m->bytes[r] = pz_get_u64(in), m->err[r] = pz_get_f64(in + 8);
        if (m->bytes[r] > (uint64_t)1 << 53 || !isfinite(m->err[r]) || m->err[r] < 0)
            return pz_fail(PZ_ERR_STATE, "a BUDGET item whose rung %d measured %llu bytes and error %g", r,
                           (unsigned long long)m->bytes[r], m->err[r]);
    }
    return PZ_OK;
}

size_t msg_budget_set_bytes(int n, int L) { return 8 + 4 + 8 + 8 + 4 * (size_t)n + (size_t)n * msg_budget_item_bytes(L); }

void msg_budget_set_put(uint8_t *out, const pz_budget_round *r, int L) {
    pz_put_i64(out, r->step), pz_put_i32(out + 8, r->met), pz_put_f64(out + 12, r->limit), pz_put_f64(out + 20, r->planned);
    out += 28;
    for (int i = 0; i < r->n_items; i++) pz_put_i32(out, r->choice[i]), out += 4;
    for (int i = 0; i < r->n_items; i++) msg_budget_item_put(out, &r->meas[i], L), out += msg_budget_item_bytes(L);
}

pz_status msg_budget_set_get(const uint8_t *in, size_t len, int n, int L, pz_budget_round *r) {
    if (n < 0 || n > PZ_BUDGET_MAX_ITEMS || len != msg_budget_set_bytes(n, L))
        return pz_fail(PZ_ERR_STATE, "a BUDGET_SET message of %zu bytes (expected %zu: %d items of %d rungs)", len,
                       msg_budget_set_bytes(n, L), n, L);
    r->n_items = n;
    r->step = pz_get_i64(in), r->met = pz_get_i32(in + 8), r->limit = pz_get_f64(in + 12), r->planned = pz_get_f64(in + 20);
    if ((r->met != 0 && r->met != 1) || !isfinite(r->limit) || !isfinite(r->planned))
        return pz_fail(PZ_ERR_STATE, "a BUDGET_SET message with met %d, limit %g, planned %g", r->met, r->limit, r->planned);
    in += 28;
    for (int i = 0; i < n; i++, in += 4) {
        r->choice[i] = pz_get_i32(in);
        if (r->choice[i] < 0 || r->choice[i] >= L)
            return pz_fail(PZ_ERR_STATE, "a BUDGET_SET message choosing rung %d of %d for item %d", r->choice[i], L, i);
    }
    for (int i = 0; i < n; i++, in += msg_budget_item_bytes(L)) PZ_TRY(msg_budget_item_get(in, L, &r->meas[i]));
    return PZ_OK;
}
