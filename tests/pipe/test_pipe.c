/* SPDX-License-Identifier: MIT */
/* test_pipe.c — a model cut into stages on threads over in-process links:
 * with codec `none` both ways, a 4-stage resnet8 gives bit-identically the
 * losses of the one-stage model; compressed boundaries still train; the
 * bytes counted at the links are exactly the frames and headers sent; a
 * stage that fails names itself. */
#include "tool/xalloc.h"
#include "../test.h"
#include "pipe/pipe.h"
#include "kernels/kernels.h"
#include "pipezip/codec.h"
#include "pipezip/pipezip.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { B = 16, STEPS = 4 };

static void batch(float *x, int32_t *y, uint32_t *ids, int step) {
    pz_rng r;
    pz_rng_seed(&r, 100 + step);
    for (int i = 0; i < B * 784; i++) x[i] = pz_rng_normal(&r);
    for (int b = 0; b < B; b++) y[b] = (int32_t)pz_rng_below(&r, 10), ids[b] = (uint32_t)(step * B + b);
}

static pz_pipe_config config(const char *fwd, const char *bwd) {
    pz_pipe_config c = {.model = {0}, .in = pz_shape_image(1, 28, 28), .n_classes = 10, .batch_max = B, .seed = 5, .n_stages = 4,
                        .cuts = {3, 4, 5}, .optimizer = PZ_OPT_SGD, .momentum = 0.9f,
                        .weight_decay = 5e-4f, .nesterov = 1, .timeout_s = 30};
    CHECK(pz_model_spec_parse(&c.model, "resnet8") == PZ_OK, "%s", pz_last_error());
    CHECK(pz_pipe_parse_specs(fwd, 3, c.fwd, "--fwd") == PZ_OK && pz_pipe_parse_specs(bwd, 3, c.bwd, "--bwd") == PZ_OK, "%s",
          pz_last_error());
    return c;
}

/* The asynchronous schedule (async.c). With a delay of 1, batch u's
 * gradient is taken at the weights its forward used, W_{u-2}, and applied
 * to W_{u-1}: the one-stage reference below keeps both and does exactly
 * that, so a stage that backpropagated through anything but the stash
 * (the weights its forward used) would not give its numbers. The losses
 * come one step late; draining in between (as evaluation, checkpoints and
 * a resume do) changes no number. With a delay of 0 it is 1F1B. */
/* clipping as the stages do it: a double per top-level layer, added in layer order */
static void clip_like_stages(const pz_model *m, float *g, float max_norm) {
    double total = 0.0;
    const float *q = g;
    for (int j = 0; j < m->net.n; j++) {
        double sum = 0.0;
        for (int64_t i = 0; i < m->net.layers[j].n_params; i++, q++) sum += (double)*q * *q;
        total += sum;
    }
    const double coef = max_norm / (sqrt(total) + 1e-6);
    if (coef < 1.0)
        for (int64_t i = 0; i < m->n_params; i++) g[i] *= (float)coef;
}

static void async_schedule(float *x, int32_t *y, uint32_t *ids, float clip) {
    enum { N = 6 };
    float ref[N], ref_eval;
    float *ex = pz_xfloats(24 * 784);
    int32_t ey[24];
    pz_rng er;
    pz_rng_seed(&er, 78);
    for (int i = 0; i < 24 * 784; i++) ex[i] = pz_rng_normal(&er);
    for (int i = 0; i < 24; i++) ey[i] = (int32_t)pz_rng_below(&er, 10);
    { /* W_u = W_{u-1} - lr g_u(W_{u-2}) on one stage */
        pz_model m;
        CHECK(pz_model_preset(&m, "resnet8", pz_shape_image(1, 28, 28), 10, B, 5) == PZ_OK, "%s", pz_last_error());
        pz_optim o = {.momentum = 0.9f, .nesterov = 1, .weight_decay = 5e-4f};
        pz_optim_init(&o, PZ_OPT_SGD, m.n_params);
        const size_t np = (size_t)m.n_params;
        float *cur = pz_xfloats(np), *old = pz_xfloats(np);
        memcpy(cur, m.params, 4 * np), memcpy(old, m.params, 4 * np);
        for (int t = 0; t < N; t++) {
            batch(x, y, ids, t);
            memcpy(m.params, old, 4 * np);
            ref[t] = pz_train_step(&m, NULL, 0.05f, x, y, B, NULL); /* the gradient at W_{u-2} */
            if (clip > 0) clip_like_stages(&m, m.grads, clip);
            memcpy(old, cur, 4 * np);
            memcpy(m.params, cur, 4 * np);
            pz_optim_step(&o, m.params, m.grads, 0.05f);
            memcpy(cur, m.params, 4 * np);
        }
        double el, ea;
        pz_evaluate(&m, ex, ey, 24, &el, &ea);
        ref_eval = (float)el;
        free(cur), free(old);
        pz_optim_free(&o);
        pz_model_free(&m);
    }
    char dir[] = "/tmp/pz_async_XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "a temporary directory");
    for (int run = 0; run < 4; run++) { /* 0: straight through; 1: drained after every step; 2: saved after step 3, resumed;
                                          * 3: eager-async (another order, the same numbers) */
        pz_pipe_config c = config("none", "none");
        c.schedule = run == 3 ? PZ_PIPE_EAGER_ASYNC : PZ_PIPE_ASYNC, c.delay = 1, c.clip_norm = clip;
        if (run == 2) c.resume = dir;
        pz_pipe *p;
        CHECK(pz_pipe_create(&p, &c) == PZ_OK, "%s", pz_last_error());
        CHECK(pz_pipe_lag(p) == 1, "a delay of 1 over 4 stages answers a step late");
        float got[N];
        int n = run == 2 ? 3 : 0, correct, drained = 1; /* nothing in flight before the first step */
        if (run == 2) memcpy(got, ref, sizeof ref); /* the first three came before the save */
        for (int t = run == 2 ? 3 : 0; t < N; t++) {
            batch(x, y, ids, t);
            float loss;
            CHECK(pz_pipe_train_step(p, x, y, ids, B, 0.05f, &loss, &correct) == PZ_OK, "%s", pz_last_error());
            CHECK((correct >= 0) == !drained, "step %d answers %s", t + 1, correct >= 0 ? "a loss" : "none");
            drained = run == 1 || (run == 0 && t == 2);
            if (correct >= 0) got[n++] = loss;
            if (run == 1) {
                CHECK(pz_pipe_drain(p, &loss, &correct) == PZ_OK && correct >= 0, "a drain: %s", pz_last_error());
                got[n++] = loss;
            }
            if (run == 0 && t == 2) {
                CHECK(pz_pipe_drain(p, &loss, &correct) == PZ_OK && correct >= 0, "a drain before the save");
                got[n++] = loss;
                CHECK(pz_pipe_save(p, dir) == PZ_OK, "%s", pz_last_error());
            }
        }
        float loss;
        double el, ea;
        /* run 3 evaluates with micro-batches still in flight: it drains by itself, keeping the last loss for the drain */
        if (run == 3)
            CHECK(pz_pipe_evaluate(p, ex, ey, 24, 0, &el, &ea) == PZ_OK && (float)el == ref_eval,
                  "run 3: an evaluation in flight drains first and sees every update: %.9g, the reference %.9g (%s)", el, ref_eval,
                  pz_last_error());
        CHECK(pz_pipe_drain(p, &loss, &correct) == PZ_OK, "%s", pz_last_error());
        if (correct >= 0) got[n++] = loss;
        CHECK(n == N, "run %d: %d losses for %d steps", run, n, N);
        for (int t = 0; t < N; t++)
            CHECK(got[t] == ref[t], "run %d (clip %g): step %d's loss %.9g, the delayed one-stage reference %.9g", run, clip, t + 1,
                  got[t], ref[t]);
        CHECK(pz_pipe_evaluate(p, ex, ey, 24, 0, &el, &ea) == PZ_OK && (float)el == ref_eval,
              "run %d: evaluation after the drain sees every update: %.9g, the reference %.9g", run, el, ref_eval);
        pz_pipe_free(p);
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0, "%s", cmd);
    free(ex);
    CHECK(ref[1] != ref[2] && ref[0] != ref[1], "the reference trains");
    static float unclipped = 0;
    if (clip > 0) { /* the rest once */
        CHECK(ref[N - 1] != unclipped, "clipping at %g changes the steps (%.9g, unclipped %.9g)", clip, ref[N - 1], unclipped);
        return;
    }
    unclipped = ref[N - 1];
    { /* a delay of 0: 1F1B's steps bit for bit (5 uneven micro-batches, stateful codecs both ways, clipping, an untied GPT) */
        enum { T = 8, V = 64, GB = 11 };
        pz_pipe_config g = {.in = pz_shape_tokens(T), .n_classes = V, .targets = T, .batch_max = GB, .seed = 3, .n_stages = 4,
                            .cuts = {1, 3, 5}, .optimizer = PZ_OPT_ADAMW, .weight_decay = 0.1f, .clip_norm = 0.5f, .micro_batches = 5,
                            .max_samples = 1000, .timeout_s = 30};
        CHECK(pz_model_spec_parse(&g.model, "gpt:layers=6,d=32,heads=2,ctx=8,untied=1") == PZ_OK, "%s", pz_last_error());
        CHECK(pz_pipe_parse_specs("ef(q4:per=token)", 3, g.fwd, "--fwd") == PZ_OK && pz_pipe_parse_specs("ef21(q8),2=topk:0.3", 3, g.bwd, "--bwd") == PZ_OK,
              "%s", pz_last_error());
        float losses[5][5];
        for (int k = 0; k < 5; k++) { /* 1F1B, async with no delay, async with one, eager-async with one, with none */
            pz_pipe_config c = g;
            c.schedule = k == 0 ? PZ_PIPE_1F1B : k < 3 ? PZ_PIPE_ASYNC : PZ_PIPE_EAGER_ASYNC, c.delay = k == 1 || k == 4 ? 0 : 1;
            pz_pipe *p;
            CHECK(pz_pipe_create(&p, &c) == PZ_OK, "%s", pz_last_error());
            CHECK(pz_pipe_lag(p) == (k == 2 || k == 3), "lag %d", pz_pipe_lag(p));
            float tx[GB * T];
            int32_t ty[GB * T];
            uint32_t tid[GB];
            int n = 0, correct;
            for (int t = 0; t < 5; t++) {
                pz_rng r;
                pz_rng_seed(&r, 500 + t);
                for (int i = 0; i < GB * T; i++) tx[i] = (float)pz_rng_below(&r, V), ty[i] = (int32_t)pz_rng_below(&r, V);
                for (int i = 0; i < GB; i++) tid[i] = (uint32_t)(t * GB + i);
                float loss;
                CHECK(pz_pipe_train_step(p, tx, ty, tid, GB - (t == 3), 1e-2f, &loss, &correct) == PZ_OK, "%s", pz_last_error());
                if (correct >= 0) losses[k][n++] = loss;
            }
            CHECK(pz_pipe_drain(p, &losses[k][4], &correct) == PZ_OK && (correct >= 0) == (k == 2 || k == 3), "the drain owes %s",
                  k == 2 || k == 3 ? "the last loss" : "nothing");
            pz_pipe_free(p);
        }
        CHECK(!memcmp(losses[0], losses[1], sizeof losses[0]), "async with no delay = 1F1B bit for bit: %.9g ... %.9g vs %.9g ... %.9g",
              losses[1][0], losses[1][4], losses[0][0], losses[0][4]);
        CHECK(losses[2][0] == losses[0][0] && losses[2][4] != losses[0][4], "a delay of 1: the first batch the same, then other numbers");
        CHECK(!memcmp(losses[2], losses[3], sizeof losses[0]), "eager-async = async bit for bit (clipping, stateful codecs)");
        CHECK(!memcmp(losses[0], losses[4], sizeof losses[0]), "eager-async with no delay = 1F1B bit for bit");
    }
    { /* what it refuses, by name */
        pz_pipe_config c = config("none", "none");
        c.schedule = PZ_PIPE_ASYNC, c.delay = 2;
        pz_pipe *p;
        CHECK(pz_pipe_create(&p, &c) == PZ_ERR_ARG && strstr(pz_last_error(), "delay of 0 or 1"), "a delay of 2: %s", pz_last_error());
        int ops[16];
        CHECK(pz_pipe_schedule_order("async", 4, 1, 4, ops, 16) < 0 && strstr(pz_last_error(), "torchrun"), "no order of one step");
    }
}

int main(void) {
    pz_set_threads(1);
    float *x = pz_xfloats(B * 784);
    int32_t y[B];
    uint32_t ids[B];
    float ref[STEPS];
    /* an evaluation set of 40 examples (batches of 16, 16, 8) */
    float *ex = pz_xfloats(40 * 784);
    int32_t ey[40];
    pz_rng er;
    pz_rng_seed(&er, 77);
    for (int i = 0; i < 40 * 784; i++) ex[i] = pz_rng_normal(&er);
    for (int i = 0; i < 40; i++) ey[i] = (int32_t)pz_rng_below(&er, 10);
    double ref_eval_loss, ref_eval_acc;
    { /* the one-stage reference */
        pz_model m;
        CHECK(pz_model_preset(&m, "resnet8", pz_shape_image(1, 28, 28), 10, B, 5) == PZ_OK, "%s", pz_last_error());
        pz_optim o = {.momentum = 0.9f, .nesterov = 1, .weight_decay = 5e-4f};
        pz_optim_init(&o, PZ_OPT_SGD, m.n_params);
        for (int t = 0; t < STEPS; t++) {
            batch(x, y, ids, t);
            ref[t] = pz_train_step(&m, &o, 0.05f, x, y, B, NULL);
        }
        pz_evaluate(&m, ex, ey, 40, &ref_eval_loss, &ref_eval_acc);
        pz_optim_free(&o);
        pz_model_free(&m);
    }
    { /* 4 stages, no compression: the same bits */
        pz_pipe *p;
        pz_pipe_config c = config("none", "none");
        CHECK(pz_pipe_create(&p, &c) == PZ_OK, "%s", pz_last_error());
        int same = 1;
        for (int t = 0; t < STEPS; t++) {
            batch(x, y, ids, t);
            float loss;
            int correct;
            CHECK(pz_pipe_train_step(p, x, y, ids, B, 0.05f, &loss, &correct) == PZ_OK, "%s", pz_last_error());
            same &= loss == ref[t];
            if (loss != ref[t]) fprintf(stderr, "  step %d: pipeline %.9g, one stage %.9g\n", t, loss, ref[t]);
        }
        CHECK(same, "4 stages with codec none reproduce the one-stage losses bit for bit");
        double el, ea, cl, ca;
        CHECK(pz_pipe_evaluate(p, ex, ey, 40, 0, &el, &ea) == PZ_OK, "%s", pz_last_error());
        CHECK(el == ref_eval_loss && ea == ref_eval_acc, "plain evaluation through 4 stages: loss %.9g acc %g, one stage %.9g %g", el,
              ea, ref_eval_loss, ref_eval_acc);
        CHECK(pz_pipe_evaluate(p, ex, ey, 40, 1, &cl, &ca) == PZ_OK && cl == el, "with codec none, compressed evaluation is the same");
        /* byte accounting: per step and boundary, a header (4 + 8B + 12 bytes)
         * and a frame (64 + 4 * activation elements) forward, a frame back */
        const int64_t act[3] = {16 * 28 * 28, 32 * 14 * 14, 64 * 7 * 7};
        uint64_t settings0 = 0;
        CHECK(pz_pipe_collect_stats(p) == PZ_OK, "%s", pz_last_error());
        for (int b = 0; b < 3; b++) {
            pz_boundary_stats s = pz_pipe_boundary_stats(p, b);
            const uint64_t fwd = STEPS * ((4 + 8 * B + 12) + (64 + 4 * (uint64_t)B * act[b]));
            const uint64_t bwd = STEPS * (64 + 4 * (uint64_t)B * act[b]);
            CHECK(s.fwd_bytes == fwd && s.bwd_bytes == bwd, "boundary %d: %llu/%llu bytes, expected %llu/%llu", b,
                  (unsigned long long)s.fwd_bytes, (unsigned long long)s.bwd_bytes, (unsigned long long)fwd, (unsigned long long)bwd);
            /* two evaluations of 40 examples: 3 headers (8 + 4B) and frames each */
            const uint64_t ev = 2 * ((8 + 4 * 16 + 64 + 4 * 16 * (uint64_t)act[b]) * 2 + (8 + 4 * 8 + 64 + 4 * 8 * (uint64_t)act[b]));
            CHECK(s.eval_bytes == ev, "boundary %d: evaluation bytes %llu, expected %llu", b, (unsigned long long)s.eval_bytes,
                  (unsigned long long)ev);
            /* backward, besides the gradients: the loss (8 bytes a step) and
             * the evaluation results (12 bytes a batch) travel back */
            /* forward, besides: the settings every stage checks once at the start (the same text at every boundary) */
            const uint64_t settings = s.link_fwd_bytes - s.fwd_bytes - s.eval_bytes;
            if (b == 0) settings0 = settings;
            CHECK(settings == settings0 && settings > 50 && settings < 4000 && s.link_bwd_bytes == s.bwd_bytes + 8 * STEPS + 12 * 6,
                  "boundary %d: the link moved exactly what the stages report (%llu, %llu; settings %llu)", b,
                  (unsigned long long)s.link_fwd_bytes, (unsigned long long)s.link_bwd_bytes, (unsigned long long)settings);
            CHECK(s.fwd_err_n > 0 && s.fwd_err_sum == 0.0 && s.fwd_elements == STEPS * B * (uint64_t)act[b],
                  "boundary %d: codec none has no error", b);
        }
        pz_pipe_free(p);
    }
    { /* compressed boundaries: fewer bytes, the loss stays close and falls */
        pz_pipe *p;
        pz_pipe_config c = config("q4", "q8");
        CHECK(pz_pipe_create(&p, &c) == PZ_OK, "%s", pz_last_error());
        float first = 0, last = 0;
        for (int t = 0; t < 12; t++) {
            batch(x, y, ids, t % 2);
            float loss;
            int correct;
            CHECK(pz_pipe_train_step(p, x, y, ids, B, 0.05f, &loss, &correct) == PZ_OK, "%s", pz_last_error());
            if (t == 0) first = loss;
            last = loss;
        }
        CHECK(fabsf(first - ref[0]) < 0.05f * ref[0], "q4/q8 first loss %.4f near the uncompressed %.4f", first, ref[0]);
        double pl, pa, ql, qa;
        CHECK(pz_pipe_evaluate(p, ex, ey, 40, 0, &pl, &pa) == PZ_OK && pz_pipe_evaluate(p, ex, ey, 40, 1, &ql, &qa) == PZ_OK, "%s",
              pz_last_error());
        CHECK(ql != pl && fabs(ql - pl) < 0.1 * pl, "q4 evaluation differs a little from plain: %.4f vs %.4f", ql, pl);
        CHECK(last < first, "training through q4/q8 boundaries lowers the loss: %.4f -> %.4f", first, last);
        CHECK(pz_pipe_collect_stats(p) == PZ_OK, "%s", pz_last_error());
        pz_boundary_stats s = pz_pipe_boundary_stats(p, 0);
        CHECK(s.fwd_err_n > 0 && s.fwd_err_sum / s.fwd_err_n > 0.01 && s.fwd_err_sum / s.fwd_err_n < 0.3,
              "q4 activations: mean relative error %.4f", s.fwd_err_sum / s.fwd_err_n);
        CHECK(s.bwd_err_n > 0 && s.bwd_err_sum / s.bwd_err_n < s.fwd_err_sum / s.fwd_err_n, "q8 gradients err less than q4 activations");
        CHECK(s.fwd_bytes < 12 * (4 * (uint64_t)B * 16 * 784) / 6, "q4 forward: %llu bytes", (unsigned long long)s.fwd_bytes);
        CHECK(s.bwd_bytes < 12 * (4 * (uint64_t)B * 16 * 784) / 3, "q8 backward: %llu bytes", (unsigned long long)s.bwd_bytes);
        pz_pipe_free(p);
    }
    { /* a stage that fails says which and why */
        pz_pipe *p;
        pz_pipe_config c = config("q4", "none");
        CHECK(pz_pipe_create(&p, &c) == PZ_OK, "%s", pz_last_error());
        batch(x, y, ids, 0);
        x[5] = NAN; /* stage 0's activations become NaN: q4 refuses them */
        float loss;
        int correct;
        const pz_status st = pz_pipe_train_step(p, x, y, ids, B, 0.05f, &loss, &correct);
        CHECK(st != PZ_OK && strstr(pz_last_error(), "stage 0") && strstr(pz_last_error(), "NaN"), "error: %s", pz_last_error());
        pz_pipe_free(p);
    }
    { /* cut points by name, index, group, or balanced by compute */
        pz_model m;
        CHECK(pz_model_preset(&m, "resnet8", pz_shape_image(1, 28, 28), 10, 1, 1) == PZ_OK, "%s", pz_last_error());
        pz_pipe_config c = {0};
        CHECK(pz_pipe_resolve_cuts(&m, (const char[][64]){"layer1", "layer2", "layer3"}, 3, 0, &c) == PZ_OK && c.n_stages == 4 && c.cuts[0] == 3 &&
                  c.cuts[1] == 4 && c.cuts[2] == 5, "groups name their last block");
        CHECK(pz_pipe_resolve_cuts(&m, (const char[][64]){"layer1.0", "4"}, 2, 0, &c) == PZ_OK && c.n_stages == 3 && c.cuts[0] == 3 && c.cuts[1] == 4,
              "names and indices");
        CHECK(pz_pipe_resolve_cuts(&m, NULL, 0, 4, &c) == PZ_OK && c.n_stages == 4, "4 stages by compute");
        int64_t macs[4] = {0};
        for (int i = 0, st = 0; i < m.net.n; i++) {
            macs[st] += m.net.layers[i].macs;
            if (st < 3 && i == c.cuts[st]) st++;
        }
        int64_t lo = macs[0], hi = macs[0];
        for (int i = 1; i < 4; i++) lo = macs[i] < lo ? macs[i] : lo, hi = macs[i] > hi ? macs[i] : hi;
        CHECK(lo > 0, "every stage computes (stage FLOPs %lld %lld %lld %lld)", (long long)macs[0], (long long)macs[1],
              (long long)macs[2], (long long)macs[3]);
        CHECK(pz_pipe_resolve_cuts(&m, (const char[][64]){"layer9"}, 1, 0, &c) == PZ_ERR_ARG && strstr(pz_last_error(), "layer9"), "%s", pz_last_error());
        CHECK(pz_pipe_resolve_cuts(&m, (const char[][64]){"4", "3"}, 2, 0, &c) == PZ_ERR_ARG, "cuts must increase");
        CHECK(pz_pipe_resolve_cuts(&m, (const char[][64]){"fc"}, 1, 0, &c) == PZ_ERR_ARG, "no cut after the last layer");
        CHECK(pz_pipe_resolve_cuts(&m, NULL, 0, 40, &c) == PZ_ERR_ARG, "more stages than layers");
        pz_model_free(&m);
    }
    { /* bad cuts */
        pz_pipe *p;
        pz_pipe_config c = config("none", "none");
        c.cuts[1] = 3; /* stage 1 would be empty */
        CHECK(pz_pipe_create(&p, &c) == PZ_ERR_ARG && strstr(pz_last_error(), "stage 1"), "%s", pz_last_error());
    }
    { /* a stateful forward codec evaluates with its base codec, leaving its state alone */
        pz_pipe *p;
        pz_pipe_config c = config("ef(q4)", "none");
        CHECK(pz_pipe_create(&p, &c) == PZ_OK, "%s", pz_last_error());
        batch(x, y, ids, 0);
        float loss;
        int correct;
        CHECK(pz_pipe_train_step(p, x, y, ids, B, 0.05f, &loss, &correct) == PZ_OK, "%s", pz_last_error());
        double l1, a1, l2, a2;
        CHECK(pz_pipe_evaluate(p, ex, ey, 40, 1, &l1, &a1) == PZ_OK && pz_pipe_evaluate(p, ex, ey, 40, 1, &l2, &a2) == PZ_OK,
              "%s", pz_last_error());
        CHECK(l1 == l2, "evaluating twice gives the same result (no error-feedback state involved)");
        pz_pipe_free(p);
    }
    { /* per-boundary codec specs: a default and overrides, commas inside specs */
        static pz_codec_desc sp[PZ_MAX_STAGES];
        char canon[PZ_SPEC_MAX];
        CHECK(pz_pipe_parse_specs("q8,2=ms:0.01,bits=2,3=q2", 3, sp, "--fwd") == PZ_OK && !strcmp(sp[0].text, "q8") &&
                  !strcmp(sp[1].text, "ms:0.01,bits=2") && !strcmp(sp[2].text, "q2"),
              "overrides: %s | %s | %s", sp[0].text, sp[1].text, sp[2].text);
        pz_codec_desc_canonical(&sp[1], canon, sizeof canon);
        CHECK(!strcmp(canon, "ms:0.01,bits=2,per=tensor,values=fp32,auto"), "the value behind the text: %s", canon);
        CHECK(pz_pipe_parse_specs("1=q2", 3, sp, "--fwd") == PZ_OK && !strcmp(sp[0].text, "q2") && !strcmp(sp[1].text, "none"),
              "unnamed boundaries get none");
        CHECK(pz_pipe_parse_specs("4=q2", 3, sp, "--fwd") == PZ_ERR_ARG && strstr(pz_last_error(), "boundary 4"), "%s", pz_last_error());
        CHECK(pz_pipe_parse_specs("q4,q8", 3, sp, "--fwd") == PZ_ERR_ARG, "a second default is an error: %s", pz_last_error());
        CHECK(pz_pipe_parse_specs("2=q99", 3, sp, "--bwd") == PZ_ERR_ARG && strstr(pz_last_error(), "--bwd"), "%s", pz_last_error());
    }
    /* an mlp (no batch norm: micro-batches change no statistic) */
    enum { MB = 16 };
    pz_pipe_config mc = {.model = {0}, .in = pz_shape_image(1, 28, 28), .n_classes = 10, .batch_max = MB, .seed = 9, .n_stages = 4,
                         .cuts = {1, 2, 3}, .optimizer = PZ_OPT_SGD, .momentum = 0.9f, .timeout_s = 30};
    pz_model_spec_parse(&mc.model, "mlp");
    pz_pipe_parse_specs("none", 3, mc.fwd, "--fwd"), pz_pipe_parse_specs("none", 3, mc.bwd, "--bwd");
    { /* GPipe micro-batches: the same losses as whole batches (up to summation order) */
        float l1[4], l4[4];
        for (int M = 1; M <= 4; M += 3) {
            pz_pipe *p;
            pz_pipe_config c = mc;
            c.micro_batches = M;
            CHECK(pz_pipe_create(&p, &c) == PZ_OK, "%s", pz_last_error());
            for (int t = 0; t < 4; t++) {
                batch(x, y, ids, t);
                int correct;
                CHECK(pz_pipe_train_step(p, x, y, ids, MB, 0.05f, M == 1 ? &l1[t] : &l4[t], &correct) == PZ_OK, "%s", pz_last_error());
            }
            pz_pipe_free(p);
        }
        float worst = 0;
        for (int t = 0; t < 4; t++) worst = fmaxf(worst, fabsf(l1[t] - l4[t]) / l1[t]);
        CHECK(worst < 1e-5f, "4 micro-batches track whole batches: worst relative loss difference %.2g (%.6f vs %.6f at step 3)", worst,
              l4[3], l1[3]);
        CHECK(l1[3] != l1[0], "and training moves");
    }
    { /* the virtual clock: transfers at 2 Mbit/s dominate; micro-batches overlap them across the boundaries */
        double clocks[2];
        for (int k = 0; k < 2; k++) {
            pz_pipe *p;
            pz_pipe_config c = mc;
            c.micro_batches = k ? 4 : 1;
            c.emu = (pz_link_emu){.bandwidth = 2e6, .latency = 0.002};
            c.clock = (pz_clock_mode){PZ_CLOCK_RATE, 1e12}; /* compute by counted FLOPs: no test waits on this machine's speed */
            CHECK(pz_pipe_create(&p, &c) == PZ_OK, "%s", pz_last_error());
            const double c0 = pz_pipe_clock(p), w0 = pz_now();
            for (int t = 0; t < 3; t++) {
                batch(x, y, ids, t);
                float loss;
                int correct;
                CHECK(pz_pipe_train_step(p, x, y, ids, MB, 0.05f, &loss, &correct) == PZ_OK, "%s", pz_last_error());
            }
            clocks[k] = pz_pipe_clock(p) - c0;
            const double wall = pz_now() - w0;
            CHECK(pz_pipe_collect_stats(p) == PZ_OK, "%s", pz_last_error());
            double busy = 0;
            uint64_t msgs = 0;
            for (int b = 0; b < 3; b++) {
                const pz_boundary_stats bs = pz_pipe_boundary_stats(p, b);
                busy += bs.busy_fwd_s + bs.busy_bwd_s;
                CHECK(fabs(bs.busy_fwd_s - 8.0 * bs.link_fwd_bytes / 2e6) < 1e-9, "busy time is bytes / bandwidth");
                msgs += bs.link_fwd_messages;
            }
            if (!k) /* one micro-batch: the frames' transfers are on the critical path, and at most every latency (a
                     * header's and the loss's latencies overlap the frames after them; test_timing has the exact clock) */
                CHECK(clocks[0] >= busy - 0.01 + 3 * 3 * 0.002 && clocks[0] <= busy + 3 * 6 * 0.002 + 0.001,
                      "sequential schedule: clock %.6f s = transfers %.6f s + latencies + compute", clocks[0], busy);
            CHECK(wall < clocks[k], "the virtual clock does not wait: %.3f s here for %.3f s emulated", wall, clocks[k]);
            pz_pipe_free(p);
        }
        CHECK(clocks[1] < 0.75 * clocks[0], "4 micro-batches overlap transfers: %.3f s vs %.3f s", clocks[1], clocks[0]);
    }
    { /* --link-realtime really holds frames back: no frame is taken before it
       * arrives, so a step's last gradient cannot be back before every
       * forward frame of the step has been transmitted, a latency, and a
       * latency back. A lower bound that load cannot break (only lengthen). */
        pz_pipe *p;
        pz_pipe_config c = mc;
        c.n_stages = 2, c.cuts[0] = 1;
        c.emu = (pz_link_emu){.bandwidth = 4e6, .latency = 0.005};
        c.realtime = 1;
        CHECK(pz_pipe_create(&p, &c) == PZ_OK, "%s", pz_last_error());
        const double w0 = pz_now();
        for (int t = 0; t < 4; t++) {
            batch(x, y, ids, t);
            float loss;
            int correct;
            CHECK(pz_pipe_train_step(p, x, y, ids, MB, 0.05f, &loss, &correct) == PZ_OK, "%s", pz_last_error());
        }
        const double took = pz_now() - w0;
        CHECK(pz_pipe_collect_stats(p) == PZ_OK, "%s", pz_last_error());
        const pz_boundary_stats bs = pz_pipe_boundary_stats(p, 0);
        const double floor_s = bs.busy_fwd_s + 4 * 2 * 0.005;
        CHECK(bs.busy_fwd_s > 0.01 && took >= floor_s, "real waiting %.3f s, at least the %.3f s the frames take", took, floor_s);
        pz_pipe_free(p);
    }
    { /* 1F1B takes GPipe's steps bit for bit: a GPT whose head is tied to the
       * embedding three stages back, stateful codecs both ways, clipping,
       * 5 micro-batches of uneven sizes over 4 stages (more micro-batches than
       * 1F1B's slots at every stage); and it holds fewer activations */
        enum { T = 8, V = 64, GB = 11 };
        pz_pipe_config g = {.in = pz_shape_tokens(T), .n_classes = V, .targets = T, .batch_max = GB, .seed = 3, .n_stages = 4,
                            .cuts = {1, 3, 5}, .optimizer = PZ_OPT_ADAMW, .weight_decay = 0.1f, .clip_norm = 0.5f,
                            .micro_batches = 5, .max_samples = 1000, .timeout_s = 30};
        CHECK(pz_model_spec_parse(&g.model, "gpt:layers=6,d=32,heads=2,ctx=8") == PZ_OK, "%s", pz_last_error());
        CHECK(pz_pipe_parse_specs("ef(q4:per=token)", 3, g.fwd, "--fwd") == PZ_OK && pz_pipe_parse_specs("ef21(q8),2=topk:0.3", 3, g.bwd, "--bwd") == PZ_OK,
              "%s", pz_last_error());
        enum { KINDS = 8 };
        const int kinds = pz_names_count(pz_pipe_schedules); /* every schedule of the table */
        CHECK(kinds >= 2 && kinds <= KINDS && pz_pipe_schedules[0].value == PZ_PIPE_GPIPE, "%d schedules", kinds);
        float losses[KINDS][5];
        int64_t act[KINDS][4];
        for (int k = 0; k < kinds; k++) {
            pz_pipe_config c = g;
            c.schedule = pz_pipe_schedules[k].value;
            if (pz_pipe_schedule_overlaps(c.schedule)) continue; /* other numbers (their own tests above) */
            pz_pipe *p;
            CHECK(pz_pipe_create(&p, &c) == PZ_OK, "%s", pz_last_error());
            for (int i = 0; i < 4; i++) act[k][i] = pz_pipe_activation_bytes(p, i);
            float tx[GB * T];
            int32_t ty[GB * T];
            uint32_t tid[GB];
            for (int t = 0; t < 5; t++) {
                pz_rng r;
                pz_rng_seed(&r, 500 + t);
                for (int i = 0; i < GB * T; i++) tx[i] = (float)pz_rng_below(&r, V), ty[i] = (int32_t)pz_rng_below(&r, V);
                for (int i = 0; i < GB; i++) tid[i] = (uint32_t)(t * GB + i);
                int correct;
                CHECK(pz_pipe_train_step(p, tx, ty, tid, GB - (t == 3), 1e-2f, &losses[k][t], &correct) == PZ_OK, "%s", pz_last_error());
            }
            pz_pipe_free(p);
        }
        for (int k = 1; k < kinds; k++) {
            if (pz_pipe_schedule_overlaps(pz_pipe_schedules[k].value)) continue;
            CHECK(!memcmp(losses[0], losses[k], sizeof losses[0]), "%s = GPipe bit for bit: %.9g %.9g %.9g %.9g %.9g vs %.9g ... %.9g",
                  pz_pipe_schedules[k].name, losses[k][0], losses[k][1], losses[k][2], losses[k][3], losses[k][4], losses[0][0],
                  losses[0][4]);
            /* each stage holds what its order of work holds at most (pz_pipe_schedule_order, public) */
            for (int i = 1; i < 4; i++) {
                int ops[10], held = 0, most = 0;
                const int n = pz_pipe_schedule_order(pz_pipe_schedules[k].name, 4, i, 5, ops, 10);
                for (int j = 0; j < n; j++) held += ops[j] >= 0 ? 1 : -1, most = held > most ? held : most;
                CHECK(n == 10 && act[k][i] * 5 == act[0][i] * most, "stage %d: %s holds %lld bytes of activations, GPipe %lld (%d of 5)", i,
                      pz_pipe_schedules[k].name, (long long)act[k][i], (long long)act[0][i], most);
            }
        }
        CHECK(losses[0][4] != losses[0][0], "and the steps train");
        /* GPipe holds 5 micro-batches at every stage; 1F1B 4, 3, 2, 1 */
        for (int i = 1; i < 4; i++)
            CHECK(act[1][i] * 5 == act[0][i] * (4 - i), "stage %d: 1F1B holds %lld bytes of activations, GPipe %lld (%d of 5 micro-batches)", i,
                  (long long)act[1][i], (long long)act[0][i], 4 - i);
        CHECK(act[1][0] < act[0][0], "stage 0 too: %lld < %lld", (long long)act[1][0], (long long)act[0][0]);
    }
    async_schedule(x, y, ids, 0.0f);
    async_schedule(x, y, ids, 0.5f);
    for (int pj = 0; pj < 2; pj++) { /* a subspace GPT (--subspace K, Protocol Models): its boundaries carry
       * T x K coefficients and the tokens (each stage's lifts rebuild the
       * stream from them). Uncompressed, 4 stages train and evaluate as the
       * model on one stage, bit for bit; every frame is K numbers per token,
       * with the targets and tokens in 1 byte each in META. Then the same
       * with a learned projection pair at each cut (--project 2): frames of
       * 2 numbers per token, and 4 stages still the one stage's numbers
       * (each stage re-orthonormalizes its own matrices) */
        enum { T = 8, V = 64, GB = 7, STEPS_S = 5 };
        const int K = pj ? 2 : 4;
        pz_pipe_config g = {.in = pz_shape_tokens(T), .n_classes = V, .targets = T, .batch_max = GB, .seed = 9, .n_stages = 1,
                            .optimizer = PZ_OPT_ADAMW, .weight_decay = 0.1f, .clip_norm = 1.0f, .micro_batches = 2,
                            .max_samples = 1000, .timeout_s = 30};
        CHECK(pz_model_spec_parse(&g.model, "gpt:layers=6,d=32,heads=2,ctx=8") == PZ_OK, "%s", pz_last_error());
        g.model.subspace = 4;
        g.model.project = pj ? K : 0;
        g.model.project_after = pj ? 0x15u : 0; /* after h.0, h.2 and h.4: top-level layers 1, 3 and 5 */
        CHECK(pz_pipe_parse_specs("none", 3, g.fwd, "--fwd") == PZ_OK && pz_pipe_parse_specs("none", 3, g.bwd, "--bwd") == PZ_OK, "%s",
              pz_last_error());
        float losses[2][STEPS_S];
        double ev[2][2];
        float ex[12 * T];
        int32_t eyy[12 * T];
        pz_rng er;
        pz_rng_seed(&er, 4);
        for (int i = 0; i < 12 * T; i++) ex[i] = (float)pz_rng_below(&er, V), eyy[i] = (int32_t)pz_rng_below(&er, V);
        for (int k = 0; k < 2; k++) {
            pz_pipe_config c = g;
            if (k) c.n_stages = 4, c.cuts[0] = 1, c.cuts[1] = 3, c.cuts[2] = 5;
            pz_pipe *p;
            CHECK(pz_pipe_create(&p, &c) == PZ_OK, "%s", pz_last_error());
            float tx[GB * T];
            int32_t ty[GB * T];
            uint32_t tid[GB];
            double acc;
            for (int e = 0; e < 2; e++) CHECK(pz_pipe_evaluate(p, ex, eyy, 12, e, &ev[k][e], &acc) == PZ_OK, "%s", pz_last_error());
            for (int t = 0; t < STEPS_S; t++) {
                pz_rng r;
                pz_rng_seed(&r, 900 + t);
                for (int i = 0; i < GB * T; i++) tx[i] = (float)pz_rng_below(&r, V), ty[i] = ((int32_t)tx[i] * 5 + 1) % V;
                for (int i = 0; i < GB; i++) tid[i] = (uint32_t)(t * GB + i);
                int correct;
                CHECK(pz_pipe_train_step(p, tx, ty, tid, GB, 1e-2f, &losses[k][t], &correct) == PZ_OK, "%s", pz_last_error());
            }
            if (k) {
                CHECK(pz_pipe_collect_stats(p) == PZ_OK, "%s", pz_last_error());
                /* per micro-batch of Bm (4 and 3): META (4 + 4 Bm + Bm (T + T) x 1 + 12) and a none frame (64 + 4 Bm T K) */
                const uint64_t meta = (4 + 4 * 4 + 4 * 2 * T + 12) + (4 + 4 * 3 + 3 * 2 * T + 12), frames = 2 * 64 + 4ull * GB * T * K;
                for (int b = 0; b < 3; b++) {
                    const pz_boundary_stats bs = pz_pipe_boundary_stats(p, b);
                    CHECK(bs.fwd_bytes == STEPS_S * (meta + frames), "boundary %d: %llu bytes forward, expected %llu", b + 1,
                          (unsigned long long)bs.fwd_bytes, (unsigned long long)(STEPS_S * (meta + frames)));
                    CHECK(bs.bwd_bytes == STEPS_S * frames, "boundary %d: %llu bytes backward, expected %llu", b + 1,
                          (unsigned long long)bs.bwd_bytes, (unsigned long long)(STEPS_S * frames));
                    CHECK(bs.fwd_elements == (uint64_t)STEPS_S * GB * T * K && bs.bwd_elements == bs.fwd_elements,
                          "K numbers per token cross, not C: %llu elements", (unsigned long long)bs.fwd_elements);
                }
            }
            pz_pipe_free(p);
        }
        for (int t = 0; t < STEPS_S; t++)
            CHECK(losses[1][t] == losses[0][t], "step %d: 4 stages %.9g, one stage %.9g", t, losses[1][t], losses[0][t]);
        CHECK(losses[0][STEPS_S - 1] < losses[0][0] - 0.05f, "it trains: %.4f -> %.4f", losses[0][0], losses[0][STEPS_S - 1]);
        for (int e = 0; e < 2; e++)
            CHECK(ev[1][e] == ev[0][e], "evaluation (%s): %.9g through 4 stages, %.9g on one", e ? "compressed" : "plain",
                  ev[1][e], ev[0][e]);
        /* a subspace wider than the stream is refused */
        pz_model m;
        pz_model_spec wide = g.model;
        wide.subspace = 33;
        CHECK(pz_model_build(&m, &wide, g.in, V, 1, 1, 0, 1 << 30) == PZ_ERR_ARG && strstr(pz_last_error(), "subspace"), "%s",
              pz_last_error());
    }
    { /* the rate clock: compute charged as counted FLOPs at a rate, so the
       * emulated time is the analytic GPipe time of the stages' FLOPs and the
       * links' latency, whatever this machine and its threads do */
        enum { M = 3 };
        const double rate = 1e9, L = 0.004;
        pz_pipe_config c = mc;
        c.micro_batches = M;
        c.clock = (pz_clock_mode){PZ_CLOCK_RATE, rate};
        c.emu = (pz_link_emu){.bandwidth = 0, .latency = L};
        pz_model m;
        CHECK(pz_model_build(&m, &c.model, c.in, c.n_classes, 1, c.seed, 0, 1 << 30) == PZ_OK, "%s", pz_last_error());
        double f[4][M], bk[4][M]; /* micro-batch k's forward and backward time at each stage (sizes 6, 5, 5) */
        const int from[4] = {0, 2, 3, 4}, to[4] = {2, 3, 4, m.net.n};
        for (int i = 0; i < 4; i++) {
            double macs = 0;
            for (int j = from[i]; j < to[i]; j++) macs += (double)m.net.layers[j].macs;
            for (int k = 0; k < M; k++) {
                const int Bk = MB / M + (k < MB % M);
                f[i][k] = 2 * macs * Bk / rate, bk[i][k] = 4 * macs * Bk / rate;
            }
        }
        pz_model_free(&m);
        /* GPipe: F[i][m] = max(F[i][m-1], F[i-1][m] + L) + f; the loss goes back
         * from the last stage; B[i][m] = max(B[i][m-1], B[i+1][m] + L, loss at i) + b */
        double F[4][M], Bt[4][M], loss[4];
        for (int i = 0; i < 4; i++)
            for (int k = 0; k < M; k++) F[i][k] = fmax(k ? F[i][k - 1] : 0, i ? F[i - 1][k] + L : 0) + f[i][k];
        loss[3] = F[3][M - 1];
        for (int i = 2; i >= 0; i--) loss[i] = fmax(F[i][M - 1], loss[i + 1] + L);
        for (int i = 3; i >= 0; i--)
            for (int k = 0; k < M; k++) Bt[i][k] = fmax(fmax(k ? Bt[i][k - 1] : 0, i < 3 ? Bt[i + 1][k] + L : 0), loss[i]) + bk[i][k];
        const double analytic = Bt[0][M - 1];
        double per_threads[2];
        for (int th = 0; th < 2; th++) {
            pz_set_threads(th + 1);
            pz_pipe *p;
            CHECK(pz_pipe_create(&p, &c) == PZ_OK, "%s", pz_last_error());
            const double c0 = pz_pipe_clock(p);
            for (int t = 0; t < 3; t++) {
                batch(x, y, ids, t);
                float loss_t;
                int correct;
                CHECK(pz_pipe_train_step(p, x, y, ids, MB, 0.05f, &loss_t, &correct) == PZ_OK, "%s", pz_last_error());
            }
            per_threads[th] = (pz_pipe_clock(p) - c0) / 3;
            pz_pipe_free(p);
        }
        pz_set_threads(1);
        CHECK(fabs(per_threads[0] - analytic) < 1e-9 * analytic, "a step on the rate clock %.9f s, the analytic GPipe time %.9f s",
              per_threads[0], analytic);
        CHECK(per_threads[1] == per_threads[0], "the same with 2 threads: %.9f s and %.9f s", per_threads[1], per_threads[0]);
    }
    { /* checkpoints: save, go on; a pipeline resumed from the save repeats those steps exactly (EF state included) */
        char dir[] = "/tmp/pz-test-pipe-XXXXXX";
        CHECK(mkdtemp(dir) != NULL, "temp dir");
        pz_pipe_config c = config("ef(q4)", "ef21(q8)");
        pz_pipe *p;
        float after[3], again[3];
        CHECK(pz_pipe_create(&p, &c) == PZ_OK, "%s", pz_last_error());
        for (int t = 0; t < 5; t++) {
            batch(x, y, ids, t);
            float loss;
            int correct;
            if (t == 2) CHECK(pz_pipe_save(p, dir) == PZ_OK, "%s", pz_last_error());
            CHECK(pz_pipe_train_step(p, x, y, ids, B, 0.05f, &loss, &correct) == PZ_OK, "%s", pz_last_error());
            if (t >= 2) after[t - 2] = loss;
        }
        pz_pipe_free(p);
        c.resume = dir;
        CHECK(pz_pipe_create(&p, &c) == PZ_OK, "%s", pz_last_error());
        for (int t = 2; t < 5; t++) {
            batch(x, y, ids, t);
            int correct;
            CHECK(pz_pipe_train_step(p, x, y, ids, B, 0.05f, &again[t - 2], &correct) == PZ_OK, "%s", pz_last_error());
        }
        pz_pipe_free(p);
        CHECK(after[0] == again[0] && after[1] == again[1] && after[2] == again[2], "resumed losses %.7f %.7f %.7f, first time %.7f %.7f %.7f",
              again[0], again[1], again[2], after[0], after[1], after[2]);
        pz_pipe_config bad = config("q4", "q8");
        bad.resume = dir;
        CHECK(pz_pipe_create(&p, &bad) != PZ_OK && strstr(pz_last_error(), "stage"), "other codecs cannot resume: %s", pz_last_error());
        char path[256];
        for (int i = 0; i < 4; i++) snprintf(path, sizeof path, "%s/stage-%d.bin", dir, i), remove(path);
        rmdir(dir);
    }
    { /* stages started with other settings (as two processes could be) refuse the driver, naming the setting */
        pz_link *a, *z;
        CHECK(pz_link_inproc_pair(&a, &z, 8, "stage 1 <-> stage 2") == PZ_OK, "pair");
        pz_pipe_config lo = config("q4", "q8"), hi = config("q2", "q8");
        lo.local_set = 1, lo.first_local = 0, lo.last_local = 1, lo.next_link = a;
        hi.local_set = 1, hi.first_local = 2, hi.last_local = 3, hi.prev_link = z;
        pz_pipe *ph, *pl;
        CHECK(pz_pipe_create(&ph, &hi) == PZ_OK, "%s", pz_last_error());
        CHECK(pz_pipe_create(&pl, &lo) != PZ_OK && strstr(pz_last_error(), "stage 2") && strstr(pz_last_error(), "fwd1=q2"),
              "mismatch: %s", pz_last_error());
        CHECK(pz_pipe_wait(ph) != PZ_OK, "the remote half stops too");
        pz_pipe_free(ph);
    }
    free(x), free(ex);
    TEST_DONE();
}
