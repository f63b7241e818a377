/* SPDX-License-Identifier: MIT */
/* test_pipe_gpt.c — gpt-tiny as a pipeline: 4 stages (the token table on
 * stage 0, the head tied to it on stage 3, two stages between that pass the
 * table's gradient back and the table forward) with codec none reproduce
 * one stage's losses, evaluation and parameters bit for bit, with one
 * micro-batch and with two, and with the gradients clipped by their global
 * norm (summed over the stages); q4/q8 boundaries (B x T x C activations,
 * per-sample scales) stay close and train. */
#include "tool/xalloc.h"
#include "../test.h"
#include "pipe/pipe.h"

enum { B = 4, T = 16, V = 256, STEPS = 3, NE = 10 };

static void batch(float *x, int32_t *y, uint32_t *ids, int t) {
    pz_rng r;
    pz_rng_seed(&r, 100 + (uint64_t)t);
    for (int i = 0; i < B * T; i++) x[i] = (float)pz_rng_below(&r, V);
    for (int i = 0; i < B * T; i++) y[i] = (int32_t)pz_rng_below(&r, V);
    for (int b = 0; b < B; b++) ids[b] = (uint32_t)(t * B + b);
}

static pz_pipe_config config(int stages, int micro, const char *fwd, const char *bwd) {
    pz_pipe_config c = {.model = {0}, .in = pz_shape_tokens(T), .n_classes = V, .targets = T, .batch_max = B,
                        .seed = 3, .n_stages = stages, .cuts = {1, 3, 4}, .optimizer = PZ_OPT_ADAMW,
                        .weight_decay = 0.1f, .micro_batches = micro, .timeout_s = 60, .max_samples = 64};
    CHECK(pz_model_spec_parse(&c.model, "gpt-tiny") == PZ_OK, "%s", pz_last_error());
    CHECK(pz_pipe_parse_specs(fwd, stages - 1, c.fwd, "--fwd") == PZ_OK && pz_pipe_parse_specs(bwd, stages - 1, c.bwd, "--bwd") == PZ_OK,
          "%s", pz_last_error());
    return c;
}

/* STEPS training steps and an evaluation; the losses into loss[] */
static void run(pz_pipe_config c, float *loss, double *eval) {
    float *x = pz_xfloats(B * T), *ex = pz_xfloats(NE * T);
    int32_t y[B * T], ey[NE * T];
    uint32_t ids[B];
    pz_rng er;
    pz_rng_seed(&er, 77);
    for (int i = 0; i < NE * T; i++) ex[i] = (float)pz_rng_below(&er, V), ey[i] = (int32_t)pz_rng_below(&er, V);
    pz_pipe *p;
    CHECK(pz_pipe_create(&p, &c) == PZ_OK, "%s", pz_last_error());
    for (int t = 0; t < STEPS; t++) {
        batch(x, y, ids, t);
        int correct;
        CHECK(pz_pipe_train_step(p, x, y, ids, B, 1e-3f, &loss[t], &correct) == PZ_OK, "%s", pz_last_error());
        CHECK(correct >= 0 && correct <= B * T, "correct %d", correct);
    }
    double acc;
    CHECK(pz_pipe_evaluate(p, ex, ey, NE, 0, eval, &acc) == PZ_OK, "%s", pz_last_error());
    pz_pipe_free(p);
    free(x), free(ex);
}

/* --stages S: the contiguous split whose busiest stage has the fewest FLOPs
 * (checked against every split), the most even among those */
static void balanced_cuts(void) {
    pz_model m;
    CHECK(pz_model_preset(&m, "gpt-tiny", pz_shape_tokens(T), V, 1, 1) == PZ_OK, "%s", pz_last_error());
    const int n = m.net.n;
    int64_t cost[32];
    for (int i = 0; i < n; i++) cost[i] = m.net.layers[i].macs + 1;
    for (int S = 1; S <= n; S++) {
        pz_pipe_config c = {0};
        CHECK(pz_pipe_resolve_cuts(&m, NULL, 0, S, &c) == PZ_OK && c.n_stages == S, "--stages %d: %s", S, pz_last_error());
        int64_t worst = 0, acc = 0;
        for (int i = 0, st = 0; i < n; i++) {
            acc += cost[i];
            if (i == n - 1 || (st < S - 1 && c.cuts[st] == i)) {
                worst = acc > worst ? acc : worst, acc = 0, st++;
                CHECK(i == n - 1 || st == S - 1 || c.cuts[st] > i, "cuts increase");
            }
        }
        /* every split: a bit mask of the n - 1 places after a layer */
        int64_t least = INT64_MAX;
        for (unsigned mask = 0; mask < 1u << (n - 1); mask++) {
            if (__builtin_popcount(mask) != S - 1) continue;
            int64_t w = 0, a = 0;
            for (int i = 0; i < n; i++) {
                a += cost[i];
                if (i == n - 1 || mask >> i & 1) w = a > w ? a : w, a = 0;
            }
            least = w < least ? w : least;
        }
        CHECK(worst == least, "--stages %d: busiest stage %lld FLOPs, the best split has %lld", S, (long long)worst, (long long)least);
        if (S == 4) /* wte+h.0 | h.1 | h.2 | h.3+ln_f+head */
            CHECK(c.cuts[0] == 1 && c.cuts[1] == 2 && c.cuts[2] == 3, "4 stages cut after %d %d %d", c.cuts[0], c.cuts[1], c.cuts[2]);
    }
    pz_model_free(&m);
}

int main(void) {
    pz_set_threads(1);
    balanced_cuts();
    float one[STEPS], four[STEPS], four2[STEPS], one2[STEPS], q[STEPS];
    double e1, e4, e42, e12, eq;
    run(config(1, 1, "none", "none"), one, &e1);
    run(config(4, 1, "none", "none"), four, &e4);
    int same = 1;
    for (int t = 0; t < STEPS; t++) {
        same &= one[t] == four[t];
        if (one[t] != four[t]) fprintf(stderr, "  step %d: 4 stages %.9g, one stage %.9g\n", t, four[t], one[t]);
    }
    CHECK(same, "4 stages (the tied table exchanged) reproduce one stage's losses bit for bit");
    CHECK(e1 == e4, "evaluation after 3 steps: 4 stages %.9g, one stage %.9g", e4, e1);
    CHECK(one[STEPS - 1] < one[0] + 0.5f, "losses %.4f .. %.4f", one[0], one[STEPS - 1]);

    /* two micro-batches: the table's gradient arrives per micro-batch */
    run(config(1, 2, "none", "none"), one2, &e12);
    run(config(4, 2, "none", "none"), four2, &e42);
    same = 1;
    for (int t = 0; t < STEPS; t++) same &= one2[t] == four2[t];
    CHECK(same && e12 == e42, "2 micro-batches: 4 stages reproduce one stage (eval %.9g vs %.9g)", e42, e12);

    /* compressed boundaries */
    /* clipping: the norm summed over 4 stages is the one stage's, bit for bit */
    float c1[STEPS], c4[STEPS];
    double ec1, ec4;
    pz_pipe_config cc = config(1, 1, "none", "none");
    cc.clip_norm = 0.05f;
    run(cc, c1, &ec1);
    cc = config(4, 2, "none", "none");
    cc.clip_norm = 0.05f;
    float c42[STEPS];
    double ec42;
    run(cc, c42, &ec42);
    cc = config(4, 1, "none", "none");
    cc.clip_norm = 0.05f;
    run(cc, c4, &ec4);
    same = 1;
    for (int t = 0; t < STEPS; t++) same &= c1[t] == c4[t];
    CHECK(same && ec1 == ec4, "clipped: 4 stages reproduce one stage (eval %.9g vs %.9g)", ec4, ec1);
    CHECK(c1[0] == one[0] && c1[1] != one[1] && ec1 != e1, "clipping changes the steps: %.9g vs %.9g", c1[1], one[1]);
    CHECK(fabsf(c42[STEPS - 1] - c4[STEPS - 1]) < 0.01f * c4[STEPS - 1], "clipped with 2 micro-batches: %.6f vs %.6f", c42[STEPS - 1],
          c4[STEPS - 1]);

    run(config(4, 1, "q4", "q8"), q, &eq);
    CHECK(fabsf(q[0] - one[0]) < 0.02f * one[0], "q4/q8 first loss %.5f near %.5f", q[0], one[0]);
    CHECK(fabs(eq - e1) < 0.02 * e1, "q4/q8 evaluation %.5f near %.5f", eq, e1);
    TEST_DONE();
}
