/* SPDX-License-Identifier: MIT */
/* test_protocol.c — the control messages as docs/PROTOCOL.md specifies
 * them: known bytes for each payload (little-endian, field by field, at the
 * documented offsets), round trips, and every malformed length or range
 * refused with an error rather than read. */
#include "../test.h"
#include "pipe/protocol.h"
#include "pipe/budget.h"

#include <math.h>

static uint32_t le32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t le64(const uint8_t *p) { return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32; }

int main(void) {
    /* tags are wire values */
    const int tags[] = {MSG_BATCH, MSG_META, MSG_ACT, MSG_GRAD, MSG_LOSS, MSG_STEPPED, MSG_STOP, MSG_EVAL, MSG_EVAL_META,
                        MSG_EVAL_RESULT, MSG_STATS, MSG_STATS_REPLY, MSG_SAVE, MSG_SAVED, MSG_ERROR, MSG_WARMUP, MSG_WARMUP_SET,
                        MSG_PUT_STATE, MSG_GET_STATE, MSG_STATE, MSG_KEPT, MSG_CHECK, MSG_CHECKED};
    for (int i = 0; i < 23; i++) CHECK(tags[i] == i + 1, "tag %d is %d", i + 1, tags[i]);
    CHECK(!strcmp(msg_name(MSG_STOP), "STOP") && !strcmp(msg_name(MSG_CHECK), "CHECK") && !strcmp(msg_name(99), "unknown"), "names");

    /* META: [i32 B][u32 ids[B]][i32 targets[B * P]][f32 lr][i32 M][i32 Btot], P = 1 (a class per sample) */
    const uint32_t ids[3] = {7, 0x01020304, 9};
    const int32_t labels[3] = {1, -2, 9};
    uint8_t m[64];
    const msg_layout L1 = msg_layout_of(1, 0, 10), L2 = msg_layout_of(2, 0, 11);
    CHECK(msg_meta_bytes(3, &L1) == 4 + 12 + 12 + 12, "META of 3 samples is %zu bytes", msg_meta_bytes(3, &L1));
    msg_meta_put(m, 3, &L1, ids, labels, NULL, 0.5f, 2, 5);
    CHECK(le32(m) == 3 && le32(m + 8) == 0x01020304 && m[8] == 0x04 && (int32_t)le32(m + 20) == -2, "META fields at their offsets");
    CHECK(le32(m + 28) == 0x3F000000u && le32(m + 32) == 2 && le32(m + 36) == 5, "lr as f32 0.5, M = 2, a batch of 5");
    uint32_t gi[8];
    int32_t gl[8];
    msg_meta h = {.ids = gi, .targets = gl};
    CHECK(msg_meta_get(m, 40, 1, 8, 4, &L1, &h) == PZ_OK && h.B == 3 && h.M == 2 && h.Btot == 5 && h.lr == 0.5f && gi[1] == ids[1] &&
              gl[1] == -2,
          "META round trip");
    for (size_t len = 0; len < 40; len++) CHECK(msg_meta_get(m, len, 1, 8, 4, &L1, &h) == PZ_ERR_STATE, "a %zu-byte META is refused", len);
    CHECK(msg_meta_get(m, 41, 1, 8, 4, &L1, &h) == PZ_ERR_STATE, "a META with a byte left over is refused");
    CHECK(msg_meta_get(m, 41, 0, 8, 4, &L1, &h) == PZ_OK, "a BATCH head may be followed by inputs");
    CHECK(msg_meta_get(m, 40, 1, 2, 4, &L1, &h) == PZ_ERR_STATE, "B above the receiver's maximum is refused");
    CHECK(msg_meta_get(m, 40, 1, 8, 1, &L1, &h) == PZ_ERR_STATE, "M above the configured micro-batches is refused");
    uint8_t bad[40];
    memcpy(bad, m, 40);
    bad[0] = 0;
    CHECK(msg_meta_get(bad, 40, 1, 8, 4, &L1, &h) == PZ_ERR_STATE, "B = 0 is refused");
    memcpy(bad, m, 40), bad[3] = 0x80;
    CHECK(msg_meta_get(bad, 40, 1, 8, 4, &L1, &h) == PZ_ERR_STATE, "a negative B is refused");
    memcpy(bad, m, 40), bad[36] = 2;
    CHECK(msg_meta_get(bad, 40, 1, 8, 4, &L1, &h) == PZ_ERR_STATE, "a whole batch smaller than the micro-batch is refused");
    memcpy(bad, m, 40), bad[36] = 17;
    CHECK(msg_meta_get(bad, 40, 1, 8, 2, &L1, &h) == PZ_ERR_STATE, "a whole batch above M micro-batches of the maximum is refused");

    /* EVAL_META: [i32 B][i32 compressed][i32 labels[B]] */
    uint8_t e[32];
    msg_eval_put(e, 3, &L1, 1, labels, NULL);
    CHECK(msg_eval_bytes(3, &L1) == 20 && le32(e) == 3 && le32(e + 4) == 1 && (int32_t)le32(e + 12) == -2, "EVAL_META bytes");
    int B, c;
    int32_t el[4];
    CHECK(msg_eval_get(e, 20, 1, 4, &L1, &B, &c, el, NULL) == PZ_OK && B == 3 && c == 1 && el[2] == 9, "EVAL_META round trip");
    CHECK(msg_eval_get(e, 19, 1, 4, &L1, &B, &c, el, NULL) == PZ_ERR_STATE && msg_eval_get(e, 21, 1, 4, &L1, &B, &c, el, NULL) == PZ_ERR_STATE,
          "EVAL_META lengths");
    e[4] = 2;
    CHECK(msg_eval_get(e, 20, 1, 4, &L1, &B, &c, el, NULL) == PZ_ERR_STATE, "compressed must be 0 or 1");

    /* a language model's META: P = 2 targets per sample (a token per position) */
    const int32_t toks[6] = {5, 6, 7, 8, -9, 10};
    uint8_t m2[64];
    CHECK(msg_meta_bytes(3, &L2) == 4 + 12 + 24 + 12, "META of 3 samples x 2 targets is %zu bytes", msg_meta_bytes(3, &L2));
    msg_meta_put(m2, 3, &L2, ids, toks, NULL, 0.25f, 1, 3);
    CHECK((int32_t)le32(m2 + 16 + 16) == -9 && le32(m2 + 40) == 0x3E800000u && le32(m2 + 44) == 1, "P = 2 META offsets");
    int32_t gt[16];
    msg_meta h2 = {.ids = gi, .targets = gt};
    CHECK(msg_meta_get(m2, 52, 1, 8, 4, &L2, &h2) == PZ_OK && h2.B == 3 && gt[4] == -9 && gt[5] == 10, "P = 2 round trip");
    CHECK(msg_meta_get(m2, 52, 1, 8, 4, &L1, &h2) == PZ_ERR_STATE, "P = 2 META read as P = 1 is refused");
    msg_eval_put(e, 2, &L2, 0, toks, NULL);
    CHECK(msg_eval_bytes(2, &L2) == 24 && msg_eval_get(e, 24, 1, 4, &L2, &B, &c, el, NULL) == PZ_OK && el[3] == 8, "P = 2 EVAL_META");

    /* a subspace model's META: targets and input tokens packed in the
     * vocabulary's width (1 byte for 256 tokens, 2 for 300), after the ids */
    {
        const msg_layout Lb = msg_layout_of(2, 2, 256), Lw = msg_layout_of(2, 2, 300);
        CHECK(Lb.w == 1 && Lw.w == 2 && L1.w == 4 && msg_layout_of(1, 3, 70000).w == 4, "token widths");
        const int32_t tg[4] = {1, 255, 3, 4};
        const float tk[4] = {9, 8, 255, 0};
        uint8_t p[64];
        CHECK(msg_meta_bytes(2, &Lb) == 4 + 8 + 8 + 12, "packed META of 2 samples x 2 targets + 2 tokens is %zu bytes", msg_meta_bytes(2, &Lb));
        msg_meta_put(p, 2, &Lb, ids, tg, tk, 1.0f, 1, 2);
        CHECK(p[12] == 1 && p[13] == 255 && p[16] == 9 && p[18] == 255 && p[19] == 0 && le32(p + 20) == 0x3F800000u, "packed META offsets");
        int32_t gt2[4];
        float gk[4];
        msg_meta hp = {.ids = gi, .targets = gt2, .tokens = gk};
        CHECK(msg_meta_get(p, 32, 1, 8, 4, &Lb, &hp) == PZ_OK && gt2[1] == 255 && gk[0] == 9.0f && gk[2] == 255.0f && gk[3] == 0.0f,
              "packed META round trip");
        msg_meta_put(p, 2, &Lw, ids, tg, tk, 1.0f, 1, 2);
        CHECK(msg_meta_bytes(2, &Lw) == 40 && p[20] == 9 && p[24] == 255 && p[25] == 0, "2-byte targets and tokens");
        p[20] = 0x2c, p[21] = 0x01; /* token 300 of a vocabulary of 300 */
        CHECK(msg_meta_get(p, 40, 1, 8, 4, &Lw, &hp) == PZ_ERR_STATE, "a token outside the vocabulary is refused");
        msg_eval_put(p, 2, &Lb, 1, tg, tk);
        CHECK(msg_eval_bytes(2, &Lb) == 16 && p[8] == 1 && p[12] == 9, "packed EVAL_META bytes");
        int Bp, cp;
        CHECK(msg_eval_get(p, 16, 1, 4, &Lb, &Bp, &cp, gt2, gk) == PZ_OK && Bp == 2 && gk[1] == 8.0f && gt2[3] == 4, "packed EVAL_META");
    }

    /* LOSS [f32][i32], EVAL_RESULT [f64][i32], flags */
    uint8_t l[12];
    msg_loss_put(l, 2.0f, 17);
    float lf;
    int lc;
    CHECK(le32(l) == 0x40000000u && le32(l + 4) == 17 && msg_loss_get(l, 8, &lf, &lc) == PZ_OK && lf == 2.0f && lc == 17, "LOSS");
    CHECK(msg_loss_get(l, 7, &lf, &lc) == PZ_ERR_STATE && msg_loss_get(l, 9, &lf, &lc) == PZ_ERR_STATE, "LOSS lengths");
    msg_eval_result_put(l, -1.5, 4);
    double ls;
    CHECK(le64(l) == 0xBFF8000000000000ull && le32(l + 8) == 4 && msg_eval_result_get(l, 12, &ls, &lc) == PZ_OK && ls == -1.5,
          "EVAL_RESULT");
    CHECK(msg_eval_result_get(l, 8, &ls, &lc) == PZ_ERR_STATE, "EVAL_RESULT length");
    int flag;
    const uint8_t one[4] = {1, 0, 0, 0}, two[4] = {2, 0, 0, 0};
    CHECK(msg_flag_get(one, 4, "WARMUP", &flag) == PZ_OK && flag == 1, "a flag");
    CHECK(msg_flag_get(two, 4, "WARMUP", &flag) == PZ_ERR_STATE && msg_flag_get(one, 3, "WARMUP", &flag) == PZ_ERR_STATE,
          "a flag is 0 or 1 in 4 bytes");

    /* the stage report: 256 bytes at the documented offsets */
    stage_report r;
    memset(&r, 0, sizeof r);
    r.stage = 2, r.act_bytes = 1001, r.eval_bytes = 1005, r.act_err_sum = 0.25, r.grad_bytes = 2001, r.grad_err_n = 2004;
    r.grad_err_sum = 0.5, r.act_decode_s = 3.0, r.compute_s = 4.0, r.clock = 5.0;
    r.next.messages_sent = 11, r.next.busy_seconds = 6.0, r.prev.messages_sent = 21, r.prev.wire_bytes_received = 26;
    r.prev.busy_seconds = 7.0;
    r.rung_act = r.rung_grad = -1; /* no budget */
    uint8_t rep[MSG_REPORT_BYTES + 8];
    memset(rep, 0xAA, sizeof rep);
    msg_report_put(rep, &r);
    CHECK(MSG_REPORT_BYTES == 256 && rep[256] == 0xAA, "a report is 256 bytes");
    CHECK(le32(rep) == 2 && le32(rep + 4) == 0 && le64(rep + 8) == 1001 && le64(rep + 40) == 1005, "report: stage, activations");
    CHECK(le64(rep + 48) == 0x3FD0000000000000ull && le64(rep + 72) == 2001 && le64(rep + 96) == 2004, "report: errors, gradients");
    CHECK(le64(rep + 104) == 0x3FE0000000000000ull && le64(rep + 120) == 0x4008000000000000ull, "report: backward error, decode time");
    CHECK(le64(rep + 128) == 0x4010000000000000ull && le64(rep + 136) == 0x4014000000000000ull, "report: compute, clock");
    CHECK(le64(rep + 144) == 11 && le64(rep + 192) == 0x4018000000000000ull, "report: link next");
    CHECK(le64(rep + 200) == 21 && le64(rep + 240) == 26 && le64(rep + 248) == 0x401C000000000000ull, "report: link prev");
    stage_report back;
    msg_report_get(rep, &back);
    CHECK(back.stage == 2 && back.grad_err_n == 2004 && back.prev.wire_bytes_received == 26 && back.clock == 5.0 && back.rung_act == -1 &&
              back.rung_grad == -1, "report round trip");
    /* a budget's rungs, each + 1: activations in the low 16 bits, gradients in the high */
    r.rung_act = 2, r.rung_grad = 5;
    msg_report_put(rep, &r);
    msg_report_get(rep, &back);
    CHECK(le32(rep + 4) == (3u | 6u << 16) && back.rung_act == 2 && back.rung_grad == 5, "report: the budget's rungs");

    /* BUDGET items and BUDGET_SET from a hostile or broken peer: truncated, oversized, rungs out of range,
     * measurements that are NaN, infinite, negative or beyond 2^53; each refused with an error naming the
     * message, an honest message round-trips (PROTOCOL.md: BUDGET, BUDGET_SET) */
    {
        enum { LR = 3, NI = 4 };
        pz_budget_round good = {.step = 41, .n_items = NI, .limit = 1e6, .planned = 9e5, .met = 1};
        for (int i = 0; i < NI; i++) {
            good.choice[i] = i % LR;
            good.meas[i].elements = 1000 + (uint64_t)i;
            for (int q = 0; q < LR; q++) good.meas[i].bytes[q] = 4000 / (uint64_t)(q + 1), good.meas[i].err[q] = 0.01 * (q + 1);
        }
        const size_t len = msg_budget_set_bytes(NI, LR);
        CHECK(len == 28 + 4 * NI + NI * (8 + 16 * LR) && msg_budget_item_bytes(LR) == 56, "BUDGET_SET of %d items of %d rungs: %zu bytes", NI,
              LR, len);
        uint8_t buf[1024], bad[1024];
        msg_budget_set_put(buf, &good, LR);
        pz_budget_round got;
        CHECK(msg_budget_set_get(buf, len, NI, LR, &got) == PZ_OK && got.step == 41 && got.choice[3] == 0 &&
                  got.meas[2].bytes[1] == 2000 && got.meas[3].err[2] == 0.03 && got.limit == 1e6,
              "an honest BUDGET_SET round-trips: %s", pz_last_error());
        CHECK(msg_budget_set_get(buf, len - 1, NI, LR, &got) == PZ_ERR_STATE && strstr(pz_last_error(), "BUDGET_SET message of"),
              "truncated: %s", pz_last_error());
        CHECK(msg_budget_set_get(buf, len + 1, NI, LR, &got) == PZ_ERR_STATE, "oversized: %s", pz_last_error());
        CHECK(msg_budget_set_get(buf, len, NI + 1, LR, &got) == PZ_ERR_STATE, "more items than were sent: %s", pz_last_error());
        CHECK(msg_budget_set_get(buf, len, PZ_BUDGET_MAX_ITEMS + 1, LR, &got) == PZ_ERR_STATE, "too many items: %s", pz_last_error());
        const int rungs[] = {-1, LR, 1 << 30};
        for (int k = 0; k < 3; k++) {
            memcpy(bad, buf, len);
            memcpy(bad + 28 + 4 * 2, &rungs[k], 4);
            CHECK(msg_budget_set_get(bad, len, NI, LR, &got) == PZ_ERR_STATE && strstr(pz_last_error(), "choosing rung"),
                  "rung %d of %d: %s", rungs[k], LR, pz_last_error());
        }
        const int32_t met2 = 2;
        memcpy(bad, buf, len), memcpy(bad + 8, &met2, 4);
        CHECK(msg_budget_set_get(bad, len, NI, LR, &got) == PZ_ERR_STATE && strstr(pz_last_error(), "met 2"), "met 2: %s", pz_last_error());
        const double nan = NAN, inf = INFINITY, neg = -0.5;
        memcpy(bad, buf, len), memcpy(bad + 12, &nan, 8);
        CHECK(msg_budget_set_get(bad, len, NI, LR, &got) == PZ_ERR_STATE, "a NaN limit: %s", pz_last_error());
        const double errs[] = {nan, inf, neg};
        for (int k = 0; k < 3; k++) { /* item 1's rung 2 error */
            memcpy(bad, buf, len);
            memcpy(bad + 28 + 4 * NI + 1 * 56 + 8 + 16 * 2 + 8, &errs[k], 8);
            CHECK(msg_budget_set_get(bad, len, NI, LR, &got) == PZ_ERR_STATE && strstr(pz_last_error(), "a BUDGET item whose rung 2"),
                  "an error of %g: %s", errs[k], pz_last_error());
        }
        const uint64_t huge = ((uint64_t)1 << 53) + 1;
        memcpy(bad, buf, len), memcpy(bad + 28 + 4 * NI, &huge, 8);
        CHECK(msg_budget_set_get(bad, len, NI, LR, &got) == PZ_ERR_STATE && strstr(pz_last_error(), "elements"), "2^53 + 1 elements: %s",
              pz_last_error());
        memcpy(bad, buf, len), memcpy(bad + 28 + 4 * NI + 8, &huge, 8);
        CHECK(msg_budget_set_get(bad, len, NI, LR, &got) == PZ_ERR_STATE && strstr(pz_last_error(), "bytes"), "2^53 + 1 bytes: %s",
              pz_last_error());
        /* a BUDGET item alone (what each stage appends) */
        pz_budget_meas m;
        CHECK(msg_budget_item_get(buf + 28 + 4 * NI, LR, &m) == PZ_OK && m.elements == 1000 && m.bytes[2] == 1333, "an honest item");
    }
    TEST_DONE();
}
