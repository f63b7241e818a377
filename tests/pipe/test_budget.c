/* SPDX-License-Identifier: MIT */
/* test_budget.c — traffic budgets (pipe/budget.h): the grammar and its
 * refusals; the rule that spends a budget, on cases worked by hand and
 * against an exhaustive search on random cases; the BUDGET_SET message's
 * refusals; and a 4-stage pipeline whose senders take the chosen rungs:
 * the next step's bytes are exactly what the choice planned, evaluation
 * follows it, a checkpoint resumes with it (the same losses and bytes as
 * the run that went on), and a request at a step nobody measured is
 * refused; budget messages tampered with between two halves of the
 * pipeline (a hostile stage) are refused, naming the problem. */
#include "tool/xalloc.h"
#include "../test.h"
#include "pipe/pipe.h"
#include "pipe/protocol.h"
#include "base/wire.h"
#include "pipezip/codec.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void grammar(void) {
    pz_budget b = {0};
    CHECK(pz_budget_parse(&b, "40x", "--budget") == PZ_OK && b.kind == PZ_BUDGET_RATIO && b.value == 40, "40x");
    CHECK(pz_budget_parse(&b, "2MB", "--budget") == PZ_OK && b.kind == PZ_BUDGET_BYTES && b.value == 2e6, "2MB");
    CHECK(pz_budget_parse(&b, "1MiB/step", "--budget") == PZ_OK && b.kind == PZ_BUDGET_BYTES && b.value == 1048576, "1MiB/step");
    CHECK(pz_budget_parse(&b, "117kB", "--budget") == PZ_OK && b.value == 117000, "117kB");
    CHECK(pz_budget_parse(&b, "5000", "--budget") == PZ_OK && b.kind == PZ_BUDGET_BYTES && b.value == 5000, "plain bytes");
    CHECK(pz_budget_parse(&b, "200mbit@50ms", "--budget") == PZ_OK && b.kind == PZ_BUDGET_LINK && fabs(b.value - 1.25e6) < 1e-6,
          "200mbit@50ms is 1.25 MB per link direction and step (got %g)", b.value);
    CHECK(pz_budget_parse(&b, "off", "--budget") == PZ_OK && b.kind == PZ_BUDGET_OFF, "off");
    static const char *const bad[] = {"abc", "0x", "0.5x", "x", "-5MB", "40y", "2TB", "@", "200mbit@", "@50ms", "200mbit@0",
                                      "0@1s", "2MB/stepx", "1e400", "nanx"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const pz_status st = pz_budget_parse(&b, bad[i], "--budget");
        CHECK(st == PZ_ERR_ARG && strstr(pz_last_error(), "--budget"), "'%s' refused naming the flag (%d: %s)", bad[i], st, pz_last_error());
    }
    CHECK(pz_budget_parse_ladder(&b, PZ_BUDGET_LADDER_DEFAULT, "--budget-ladder") == PZ_OK && b.n_rungs == 6 &&
              !strcmp(b.rung[1].text, "q6:bytes+zstd"), "the default ladder: %s", pz_last_error());
    CHECK(pz_budget_parse_ladder(&b, "q8/topk:0.1/none", "--budget-ladder") == PZ_OK && b.n_rungs == 3, "any stateless family");
    static const struct { const char *ladder, *why; } refused[] = {
        {"q8/ef(q4)", "stateless"},  {"lowrank:4/q8", "stateless"}, {"q8/q8", "twice"},       {"q8//q4", "empty"},
        {"", "empty"},               {"q8/bogus", "bogus"},        {"q8/q7/q6/q5/q4/q3/q2/none/topk:0.1", "at most 8"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        const pz_status st = pz_budget_parse_ladder(&b, refused[i].ladder, "--budget-ladder");
        CHECK(st == PZ_ERR_ARG && strstr(pz_last_error(), refused[i].why) && strstr(pz_last_error(), "--budget-ladder"),
              "ladder '%s' refused for '%s' (%s)", refused[i].ladder, refused[i].why, pz_last_error());
    }
    CHECK(pz_budget_due(&(pz_budget){.kind = PZ_BUDGET_BYTES, .every = 50}, 1) && pz_budget_due(&(pz_budget){.kind = PZ_BUDGET_BYTES, .every = 50}, 100) &&
              !pz_budget_due(&(pz_budget){.kind = PZ_BUDGET_BYTES, .every = 50}, 2) && !pz_budget_due(&(pz_budget){.every = 50}, 50),
          "decisions after step 1 and every 50 steps, none without a budget");
}

/* a budget of kind/value over `rungs` rungs (the descriptions are not read by the rule) */
static pz_budget rule(int kind, double value, int rungs) { return (pz_budget){.kind = kind, .value = value, .every = 1, .n_rungs = rungs}; }

static double err_of(const pz_budget_meas *m, const int *c, int n) {
    double e = 0;
    for (int i = 0; i < n; i++) e += m[i].err[c[i]];
    return e;
}
static double bytes_of(const pz_budget_meas *m, const int *c, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += (double)m[i].bytes[c[i]];
    return s;
}

static void choose_by_hand(void) {
    /* two items, three rungs: the second item's error grows more slowly per byte saved */
    pz_budget_meas m[2] = {{.elements = 50, .bytes = {100, 60, 30}, .err = {0.01, 0.05, 0.5}},
                           {.elements = 50, .bytes = {100, 60, 30}, .err = {0.01, 0.02, 0.04}}};
    static const struct { double limit; int c0, c1, met; } cases[] = {
        {1000, 0, 0, 1}, {200, 0, 0, 1}, {160, 0, 1, 1}, {145, 0, 2, 1}, {130, 0, 2, 1}, {90, 1, 2, 1}, {60, 2, 2, 1}, {50, 2, 2, 0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        const pz_budget b = rule(PZ_BUDGET_BYTES, cases[k].limit, 3);
        int c[2], met;
        double limit, planned;
        CHECK(pz_budget_choose(&b, m, 2, c, &limit, &planned, &met) == PZ_OK, "%s", pz_last_error());
        CHECK(c[0] == cases[k].c0 && c[1] == cases[k].c1 && met == cases[k].met && limit == cases[k].limit &&
                  planned == bytes_of(m, c, 2),
              "%g bytes: rungs %d,%d met %d planned %g (expected %d,%d met %d)", cases[k].limit, c[0], c[1], met, planned, cases[k].c0,
              cases[k].c1, cases[k].met);
    }
    /* a ratio: fp32 is 4 bytes an element (400 here), 2.5x allows 160 */
    {
        const pz_budget b = rule(PZ_BUDGET_RATIO, 2.5, 3);
        int c[2], met;
        double limit, planned;
        CHECK(pz_budget_choose(&b, m, 2, c, &limit, &planned, &met) == PZ_OK && limit == 160 && c[0] == 0 && c[1] == 1 && met,
              "2.5x of 400 fp32 bytes: limit %g, rungs %d,%d", limit, c[0], c[1]);
    }
    /* the activations' weight: item 0 (activations) is cheaper to degrade until its errors count 4 times */
    {
        pz_budget_meas d[2] = {{.elements = 50, .bytes = {100, 60, 30}, .err = {0.01, 0.015, 0.5}},
                               {.elements = 50, .bytes = {100, 60, 30}, .err = {0.01, 0.02, 0.04}}};
        pz_budget b = rule(PZ_BUDGET_BYTES, 160, 3);
        int c[2], met;
        double limit, planned;
        CHECK(pz_budget_choose(&b, d, 2, c, &limit, &planned, &met) == PZ_OK && c[0] == 1 && c[1] == 0, "weight 1: the activations give");
        b.fwd_weight = 4;
        CHECK(pz_budget_choose(&b, d, 2, c, &limit, &planned, &met) == PZ_OK && c[0] == 0 && c[1] == 1, "weight 4: the gradients give");
        CHECK(d[0].err[1] == 0.015, "the measurements are left as they were");
    }
    /* the largest error first: at 130 bytes the sum rule degrades the item that costs least error (item 1 twice: 0.04),
     * the max rule spreads it (rungs 1 and 1 cost more bytes; 1 and 2: max 0.04 against 0.05) */
    {
        pz_budget b = rule(PZ_BUDGET_BYTES, 130, 3);
        b.rule = PZ_BUDGET_MAX;
        int c[2], met;
        double limit, planned;
        CHECK(pz_budget_choose(&b, m, 2, c, &limit, &planned, &met) == PZ_OK && c[0] == 0 && c[1] == 2 && met, "max at 130: %d,%d", c[0], c[1]);
        pz_budget_meas e[2] = {{.elements = 50, .bytes = {100, 60, 30}, .err = {0.01, 0.02, 0.5}},
                               {.elements = 50, .bytes = {100, 60, 30}, .err = {0.01, 0.03, 0.035}}};
        b.value = 130, b.rule = PZ_BUDGET_SUM;
        CHECK(pz_budget_choose(&b, e, 2, c, &limit, &planned, &met) == PZ_OK && c[0] == 0 && c[1] == 2, "sum at 130: %d,%d", c[0], c[1]);
        b.value = 120, b.rule = PZ_BUDGET_MAX;
        CHECK(pz_budget_choose(&b, e, 2, c, &limit, &planned, &met) == PZ_OK && c[0] == 1 && c[1] == 1, "max at 120: %d,%d (largest 0.03)",
              c[0], c[1]);
    }
    /* a link budget bounds each item alone */
    {
        const pz_budget b = rule(PZ_BUDGET_LINK, 70, 3);
        int c[2], met;
        double limit, planned;
        CHECK(pz_budget_choose(&b, m, 2, c, &limit, &planned, &met) == PZ_OK && c[0] == 1 && c[1] == 1 && met && planned == 120,
              "70 bytes per link direction: rungs %d,%d planned %g", c[0], c[1], planned);
        const pz_budget tight = rule(PZ_BUDGET_LINK, 20, 3);
        CHECK(pz_budget_choose(&tight, m, 2, c, &limit, &planned, &met) == PZ_OK && c[0] == 2 && c[1] == 2 && !met,
              "20 bytes per link direction: the cheapest rungs, not met");
    }
    /* a rung no better than a cheaper one (more bytes, more error: zstd can do that) is never taken */
    {
        pz_budget_meas d[1] = {{.elements = 50, .bytes = {100, 120, 50}, .err = {0.01, 0.02, 0.1}}};
        int c[1], met;
        double limit, planned;
        for (double lim = 40; lim <= 200; lim += 5) {
            const pz_budget b = rule(PZ_BUDGET_BYTES, lim, 3);
            CHECK(pz_budget_choose(&b, d, 1, c, &limit, &planned, &met) == PZ_OK && c[0] != 1, "limit %g: the dominated rung", lim);
        }
    }
    /* measurements that cannot be are refused */
    {
        pz_budget_meas d[1] = {{.elements = 50, .bytes = {100, 50}, .err = {NAN, 0.1}}};
        int c[1], met;
        double limit, planned;
        const pz_budget b = rule(PZ_BUDGET_BYTES, 100, 2);
        CHECK(pz_budget_choose(&b, d, 1, c, &limit, &planned, &met) == PZ_ERR_STATE, "a NaN error is refused");
    }
}

/* N random items of L rungs: fewer bytes, more error rung by rung (each
 * rung 55-95% of the bytes and 2-8x the error of the one before); with
 * dominated, rung 2 made 3000 bytes larger (no better than rung 1) */
static void random_case(pz_rng *rng, pz_budget_meas *m, int N, int L, int dominated) {
    memset(m, 0, sizeof *m * (size_t)N);
    for (int i = 0; i < N; i++) {
        m[i].elements = 1000;
        double e = 1e-4 * (1 + pz_rng_uniform(rng));
        uint64_t by = 4000 + (uint64_t)(pz_rng_uniform(rng) * 1000);
        for (int r = 0; r < L; r++) {
            m[i].bytes[r] = by, m[i].err[r] = e;
            by = (uint64_t)((double)by * (0.55 + 0.4 * pz_rng_uniform(rng)));
            e *= 2 + 6 * pz_rng_uniform(rng);
        }
        if (dominated) m[i].bytes[2] += 3000;
    }
}

/* random cases against every combination: the choice fits whenever
 * anything does and no single change of one item's rung improves it; a
 * small problem (N items of L rungs, at most 2^20 combinations) is solved
 * exactly, a larger one (the greedy rule and its improvements) within
 * `bound` of the best summed error */
static void choose_vs_exhaustive(int N, int L, int trials, double bound) {
    pz_rng rng;
    pz_rng_seed(&rng, 31 + (uint64_t)N);
    int worse = 0, cases = 0;
    double worst = 1, combos = 1;
    for (int i = 0; i < N; i++) combos *= L;
    for (int trial = 0; trial < trials; trial++) {
        pz_budget_meas m[PZ_BUDGET_MAX_ITEMS];
        random_case(&rng, m, N, L, trial % 3 == 0 && L > 2);
        double lo = 0, hi = 0;
        for (int i = 0; i < N; i++) lo += (double)m[i].bytes[L - 1], hi += (double)m[i].bytes[0];
        const double lim = lo * 0.9 + (hi * 1.05 - lo * 0.9) * pz_rng_uniform(&rng);
        const pz_budget b = rule(PZ_BUDGET_BYTES, lim, L);
        int c[PZ_BUDGET_MAX_ITEMS], met;
        double limit, planned;
        CHECK(pz_budget_choose(&b, m, N, c, &limit, &planned, &met) == PZ_OK, "%s", pz_last_error());
        /* every combination */
        double best = INFINITY;
        int any = 0, t[PZ_BUDGET_MAX_ITEMS] = {0};
        for (;;) {
            if (bytes_of(m, t, N) <= lim) {
                any = 1;
                const double e = err_of(m, t, N);
                if (e < best) best = e;
            }
            int i = 0;
            while (i < N && ++t[i] == L) t[i++] = 0;
            if (i == N) break;
        }
        CHECK(met == any, "trial %d: met %d, but a fitting choice %s", trial, met, any ? "exists" : "does not exist");
        if (!any) continue;
        CHECK(bytes_of(m, c, N) <= lim && planned == bytes_of(m, c, N), "trial %d: the choice fits", trial);
        for (int i = 0; i < N; i++)
            for (int r = 0; r < L; r++) {
                int u[PZ_BUDGET_MAX_ITEMS];
                memcpy(u, c, sizeof u);
                u[i] = r;
                CHECK(!(bytes_of(m, u, N) <= lim && err_of(m, u, N) < err_of(m, c, N)), "trial %d: item %d rung %d would improve it", trial,
                      i, r);
            }
        const double ratio = err_of(m, c, N) / best;
        cases++;
        if (ratio > 1 + 1e-12) worse++;
        if (ratio > worst) worst = ratio;
    }
    printf("budget rule, %d items of %d rungs (%.0f combinations) vs every combination: %d of %d cases above the optimum, worst %.4fx its error\n",
           N, L, combos, worse, cases, worst);
    CHECK(worst <= bound, "the rule's summed error within %gx of the optimum (worst %.4fx)", bound, worst);
}

/* the max rule against every combination: the least largest error that
 * fits, and among those the least sum */
static void max_vs_exhaustive(void) {
    pz_rng rng;
    pz_rng_seed(&rng, 77);
    enum { N = 6, L = 5 };
    int exact = 0, cases = 0;
    for (int trial = 0; trial < 100; trial++) {
        pz_budget_meas m[N];
        random_case(&rng, m, N, L, 0);
        double lo = 0, hi = 0;
        for (int i = 0; i < N; i++) lo += (double)m[i].bytes[L - 1], hi += (double)m[i].bytes[0];
        const double lim = lo + (hi - lo) * pz_rng_uniform(&rng);
        pz_budget b = rule(PZ_BUDGET_BYTES, lim, L);
        b.rule = PZ_BUDGET_MAX, b.fwd_weight = 3;
        int c[N], met;
        double limit, planned;
        CHECK(pz_budget_choose(&b, m, N, c, &limit, &planned, &met) == PZ_OK && met, "%s", pz_last_error());
        double bmax = INFINITY, bsum = INFINITY;
        int t[N] = {0};
        for (;;) {
            double mx = 0, sm = 0;
            for (int i = 0; i < N; i++) {
                const double e = m[i].err[t[i]] * (i % 2 ? 1 : 3);
                mx = e > mx ? e : mx, sm += e;
            }
            if (bytes_of(m, t, N) <= lim && (mx < bmax || (mx == bmax && sm < bsum))) bmax = mx, bsum = sm;
            int i = 0;
            while (i < N && ++t[i] == L) t[i++] = 0;
            if (i == N) break;
        }
        double mx = 0, sm = 0;
        for (int i = 0; i < N; i++) {
            const double e = m[i].err[c[i]] * (i % 2 ? 1 : 3);
            mx = e > mx ? e : mx, sm += e;
        }
        CHECK(bytes_of(m, c, N) <= lim && mx == bmax && fabs(sm - bsum) <= 1e-12 * bsum, "trial %d: max %g sum %g, best %g %g", trial, mx,
              sm, bmax, bsum);
        cases++, exact += mx == bmax && fabs(sm - bsum) <= 1e-12 * bsum;
    }
    printf("max rule vs every combination: %d of %d exact\n", exact, cases);
}

static void messages(void) {
    pz_budget_round r = {.step = 7, .n_items = 2, .choice = {1, 0}, .limit = 100, .planned = 90, .met = 1};
    r.meas[0] = (pz_budget_meas){.elements = 10, .bytes = {50, 40}, .err = {0.1, 0.2}};
    r.meas[1] = (pz_budget_meas){.elements = 10, .bytes = {60, 50}, .err = {0.1, 0.3}};
    const size_t n = msg_budget_set_bytes(2, 2);
    uint8_t *buf = malloc(n + 8);
    msg_budget_set_put(buf, &r, 2);
    pz_budget_round g;
    CHECK(msg_budget_set_get(buf, n, 2, 2, &g) == PZ_OK && g.step == 7 && g.choice[0] == 1 && g.meas[1].bytes[1] == 50 &&
              g.meas[1].err[1] == 0.3 && g.met == 1 && g.planned == 90, "BUDGET_SET round trip");
    CHECK(msg_budget_set_get(buf, n - 1, 2, 2, &g) == PZ_ERR_STATE && msg_budget_set_get(buf, n, 3, 2, &g) == PZ_ERR_STATE,
          "a BUDGET_SET of the wrong size is refused");
    pz_put_i32(buf + 28, 2);
    CHECK(msg_budget_set_get(buf, n, 2, 2, &g) == PZ_ERR_STATE && strstr(pz_last_error(), "rung 2 of 2"), "a rung out of range: %s",
          pz_last_error());
    msg_budget_set_put(buf, &r, 2);
    pz_put_f64(buf + 36 + 8 + 8, NAN); /* item 0's first rung's error */
    CHECK(msg_budget_set_get(buf, n, 2, 2, &g) == PZ_ERR_STATE, "a NaN error is refused");
    msg_budget_set_put(buf, &r, 2);
    pz_put_i32(buf + 8, 5);
    CHECK(msg_budget_set_get(buf, n, 2, 2, &g) == PZ_ERR_STATE, "met must be 0 or 1");
    free(buf);
}

/* ---- a pipeline under a budget ---- */
enum { B = 16 };
static void batch(float *x, int32_t *y, uint32_t *ids, int step) {
    pz_rng r;
    pz_rng_seed(&r, 100 + step);
    for (int i = 0; i < B * 784; i++) x[i] = pz_rng_normal(&r);
    for (int b = 0; b < B; b++) y[b] = (int32_t)pz_rng_below(&r, 10), ids[b] = (uint32_t)(step * B + b);
}

static pz_pipe_config config(int kind, double value, const char *ladder) {
    pz_pipe_config c = {.model = {0}, .in = pz_shape_image(1, 28, 28), .n_classes = 10, .batch_max = B, .seed = 5, .n_stages = 4,
                        .cuts = {3, 4, 5}, .optimizer = PZ_OPT_SGD, .momentum = 0.9f, .weight_decay = 5e-4f, .nesterov = 1,
                        .timeout_s = 30};
    CHECK(pz_model_spec_parse(&c.model, "resnet8") == PZ_OK, "%s", pz_last_error());
    CHECK(pz_budget_parse_ladder(&c.budget, ladder, "ladder") == PZ_OK, "%s", pz_last_error());
    c.budget.kind = kind, c.budget.value = value, c.budget.every = 50;
    return c;
}

static void step(pz_pipe *p, float *x, int32_t *y, uint32_t *ids, int t, float *loss) {
    int correct;
    batch(x, y, ids, t);
    CHECK(pz_pipe_train_step(p, x, y, ids, B, 0.05f, loss, &correct) == PZ_OK, "step %d: %s", t, pz_last_error());
}

/* bytes each boundary's direction moved since `before` (item order) */
static void traffic(pz_pipe *p, const pz_boundary_stats *before, double *out) {
    CHECK(pz_pipe_collect_stats(p) == PZ_OK, "%s", pz_last_error());
    for (int b = 0; b < 3; b++) {
        const pz_boundary_stats s = pz_pipe_boundary_stats(p, b);
        out[2 * b] = (double)(s.fwd_bytes - before[b].fwd_bytes), out[2 * b + 1] = (double)(s.bwd_bytes - before[b].bwd_bytes);
    }
}

static void pipeline(void) {
    static const char ladder[] = "q8/q4/q2"; /* frames whose size depends only on the tensor's: exact bytes */
    float *x = pz_xfloats(B * 784);
    int32_t y[B];
    uint32_t ids[B];
    float loss;
    /* 1. no budget to speak of: every sender keeps q8, and the next step moves exactly the bytes measured */
    pz_budget_round r1;
    {
        pz_pipe *p;
        pz_pipe_config c = config(PZ_BUDGET_BYTES, 1e12, ladder);
        CHECK(pz_pipe_create(&p, &c) == PZ_OK, "%s", pz_last_error());
        step(p, x, y, ids, 0, &loss);
        CHECK(pz_pipe_budget(p, 1, &r1) == PZ_OK, "%s", pz_last_error());
        CHECK(r1.n_items == 6 && r1.met, "6 items, met");
        for (int i = 0; i < 6; i++)
            CHECK(r1.choice[i] == 0 && r1.meas[i].bytes[0] > r1.meas[i].bytes[1] && r1.meas[i].bytes[1] > r1.meas[i].bytes[2] &&
                      r1.meas[i].err[0] < r1.meas[i].err[1] && r1.meas[i].err[1] < r1.meas[i].err[2] && r1.meas[i].err[0] > 0,
                  "item %d: q8 kept; q8 > q4 > q2 in bytes, < in error", i);
        pz_boundary_stats before[3];
        CHECK(pz_pipe_collect_stats(p) == PZ_OK, "%s", pz_last_error());
        for (int b = 0; b < 3; b++) before[b] = pz_pipe_boundary_stats(p, b);
        step(p, x, y, ids, 1, &loss);
        double moved[6];
        traffic(p, before, moved);
        for (int i = 0; i < 6; i++)
            CHECK(moved[i] == (double)r1.meas[i].bytes[0], "item %d: step 2 moved %g bytes, q8 measured %llu", i, moved[i],
                  (unsigned long long)r1.meas[i].bytes[0]);
        /* nobody measured step 2: a request after it is refused */
        pz_budget_round bad;
        CHECK(pz_pipe_budget(p, 2, &bad) != PZ_OK && strstr(pz_last_error(), "measured its rungs at step 1"),
              "a BUDGET after an unmeasured step: %s", pz_last_error());
        pz_pipe_free(p);
    }
    /* 2. a budget halfway between all-q8 and all-q4: the same measurements
     * (the same first step), the choice the rule makes of them, and the next
     * step moves what it planned */
    double q8 = 0, q4 = 0;
    for (int i = 0; i < 6; i++) q8 += (double)r1.meas[i].bytes[0], q4 += (double)r1.meas[i].bytes[1];
    const double lim = (q8 + q4) / 2;
    pz_pipe_config c = config(PZ_BUDGET_BYTES, lim, ladder);
    int want[6], met;
    double limit, planned;
    CHECK(pz_budget_choose(&c.budget, r1.meas, 6, want, &limit, &planned, &met) == PZ_OK && met, "%s", pz_last_error());
    int mixed = 0;
    for (int i = 0; i < 6; i++) mixed |= 1 << want[i];
    CHECK(mixed == 3, "the halfway budget mixes q8 and q4 (rungs used: %d)", mixed);
    char dir[] = "/tmp/pz_budget_XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "a temporary directory");
    float went_on[2];
    double moved_on[6];
    {
        pz_pipe *p;
        CHECK(pz_pipe_create(&p, &c) == PZ_OK, "%s", pz_last_error());
        step(p, x, y, ids, 0, &loss);
        pz_budget_round r;
        CHECK(pz_pipe_budget(p, 1, &r) == PZ_OK, "%s", pz_last_error());
        for (int i = 0; i < 6; i++)
            CHECK(r.choice[i] == want[i] && r.meas[i].bytes[0] == r1.meas[i].bytes[0] && r.meas[i].err[1] == r1.meas[i].err[1],
                  "item %d: rung %d, the rule gives %d of the same measurements", i, r.choice[i], want[i]);
        CHECK(r.planned == planned && r.limit == lim, "planned %g of %g", r.planned, r.limit);
        CHECK(pz_pipe_save(p, dir) == PZ_OK, "%s", pz_last_error());
        pz_boundary_stats before[3];
        CHECK(pz_pipe_collect_stats(p) == PZ_OK, "%s", pz_last_error());
        for (int b = 0; b < 3; b++) before[b] = pz_pipe_boundary_stats(p, b);
        step(p, x, y, ids, 1, &went_on[0]);
        step(p, x, y, ids, 2, &went_on[1]);
        traffic(p, before, moved_on);
        for (int i = 0; i < 6; i++)
            CHECK(moved_on[i] == 2.0 * (double)r.meas[i].bytes[want[i]], "item %d: 2 steps moved %g bytes, the choice planned 2 x %llu", i,
                  moved_on[i], (unsigned long long)r.meas[i].bytes[want[i]]);
        /* evaluation goes through the chosen rungs and works */
        float *ex = pz_xfloats(B * 784);
        int32_t ey[B];
        uint32_t eid[B];
        batch(ex, ey, eid, 9);
        double el, ea;
        CHECK(pz_pipe_evaluate(p, ex, ey, B, 1, &el, &ea) == PZ_OK && isfinite(el), "compressed evaluation: %s", pz_last_error());
        free(ex);
        pz_pipe_free(p);
    }
    /* 3. resumed from the checkpoint taken after the choice: the same rungs, losses and bytes */
    {
        pz_pipe *p;
        pz_pipe_config rc = c;
        rc.resume = dir;
        CHECK(pz_pipe_create(&p, &rc) == PZ_OK, "%s", pz_last_error());
        pz_boundary_stats before[3];
        CHECK(pz_pipe_collect_stats(p) == PZ_OK, "%s", pz_last_error());
        for (int b = 0; b < 3; b++) before[b] = pz_pipe_boundary_stats(p, b);
        float l1, l2;
        step(p, x, y, ids, 1, &l1);
        step(p, x, y, ids, 2, &l2);
        double moved[6];
        traffic(p, before, moved);
        CHECK(l1 == went_on[0] && l2 == went_on[1], "resumed: losses %.9g %.9g, the run that went on %.9g %.9g", l1, l2, went_on[0], went_on[1]);
        for (int i = 0; i < 6; i++) CHECK(moved[i] == moved_on[i], "item %d: resumed moved %g bytes, the run that went on %g", i, moved[i], moved_on[i]);
        pz_pipe_free(p);
    }
    /* 4. a checkpoint whose rungs are not on this run's ladder is refused, naming the codec */
    {
        pz_pipe *p;
        pz_pipe_config rc = config(PZ_BUDGET_BYTES, lim, "q8/q2");
        rc.resume = dir;
        const pz_status st = pz_pipe_create(&p, &rc);
        CHECK(st != PZ_OK && strstr(pz_last_error(), "not a rung") && strstr(pz_last_error(), "q4"), "another ladder: %s", pz_last_error());
    }
    for (int i = 0; i < 4; i++) {
        char f[64];
        snprintf(f, sizeof f, "%s/stage-%d.bin", dir, i);
        unlink(f);
    }
    rmdir(dir);
    free(x);
}

/* ---- a hostile stage: budget messages tampered with between stages 1 and 2 ----
 * The 4-stage pipeline runs as two halves (stages 0-1 with the driver, 2-3
 * serving), as two MPI ranks would, joined by a relay that passes every
 * message on except the one a scenario alters, repeats, or forges ahead of
 * its turn. Each is refused by the stage that receives it, with an error
 * naming the problem; the error reaches the driver, both halves stop (no
 * hang, no crash), and no sender takes a rung from a refused BUDGET_SET. */
enum { T_TRUNC, T_GROW, T_NAN, T_NEG, T_HUGE, T_STEP, T_RUNG, T_RUNG_NEG, T_MET, T_SET_STEP, T_REPLAY, T_EARLY };
typedef struct {
    const char *name;
    int dir;    /* 0: stage 1 -> stage 2 (BUDGET), 1: stage 2 -> stage 1 (BUDGET_SET) */
    int tag;    /* the message altered (T_EARLY: the message ahead of which a forged one goes) */
    int act;
    int at;     /* where it surfaces: 0 the budget round, 1 the next step, 2 the step the forgery interrupts */
    const char *says;
} tamper;

typedef struct {
    pz_link *from, *to;
    const tamper *t;
    int dir, done;
} relay_arg;

static void *relay(void *v) {
    relay_arg *a = v;
    uint8_t *buf = NULL;
    size_t cap = 0, len;
    int tag;
    const tamper *t = a->t;
    const int L = 3, item = (int)msg_budget_item_bytes(L);
    while (pz_link_recv(a->from, &tag, &buf, &cap, &len, -1.0) == PZ_OK) {
        int copies = 1;
        if (t && t->dir == a->dir && tag == t->tag && !a->done) {
            a->done = 1;
            CHECK(msg_reserve(&buf, &cap, len + 64) == PZ_OK, "relay buffer");
            const int set = tag == MSG_BUDGET_SET, n_items = 6;
            uint8_t *first_err = buf + (set ? 28 + 4 * n_items : 8) + 8 + 16 * 1 + 8; /* item 0, rung 1's error */
            switch (t->act) {
            case T_TRUNC: len -= 3; break;
            case T_GROW: memset(buf + len, 0, 16), len += 16; break;
            case T_NAN: pz_put_f64(first_err, NAN); break;
            case T_NEG: pz_put_f64(first_err, -0.25); break;
            case T_HUGE: pz_put_u64(first_err - 8, (uint64_t)1 << 60); break;
            case T_STEP: case T_SET_STEP: pz_put_i64(buf, 7); break;
            case T_RUNG: pz_put_i32(buf + 28 + 4 * 2, L); break;
            case T_RUNG_NEG: pz_put_i32(buf + 28 + 4 * 3, -1); break;
            case T_MET: pz_put_i32(buf + 8, 5); break;
            case T_REPLAY: copies = 2; break;
            case T_EARLY: { /* a well-formed message of the other kind, for step 1, ahead of this one */
                const size_t n = t->dir == 0 ? 8 + 3 * (size_t)item : msg_budget_set_bytes(n_items, L);
                uint8_t *f = calloc(1, n);
                pz_put_i64(f, 1);
                CHECK(pz_link_send(a->to, t->dir == 0 ? MSG_BUDGET : MSG_BUDGET_SET, f, n) == PZ_OK, "forged message sent");
                free(f);
                break;
            }
            }
        }
        pz_status st = PZ_OK;
        for (int c = 0; c < copies && !st; c++) st = pz_link_send(a->to, tag, buf, len);
        if (st) break;
    }
    pz_link_close(a->to);
    free(buf);
    return NULL;
}

static void hostile(void) {
    static const tamper cases[] = {
        {"a truncated BUDGET", 0, MSG_BUDGET, T_TRUNC, 0, "a BUDGET message of"},
        {"an oversized BUDGET", 0, MSG_BUDGET, T_GROW, 0, "a BUDGET message of"},
        {"a NaN measurement", 0, MSG_BUDGET, T_NAN, 0, "error nan"},
        {"a negative measurement", 0, MSG_BUDGET, T_NEG, 0, "error -0.25"},
        {"bytes beyond 2^53", 0, MSG_BUDGET, T_HUGE, 0, "1152921504606846976 bytes"},
        {"a BUDGET for a step nobody measured", 0, MSG_BUDGET, T_STEP, 0, "measured its rungs at step 1"},
        {"a truncated BUDGET_SET", 1, MSG_BUDGET_SET, T_TRUNC, 0, "a BUDGET_SET message of"},
        {"an oversized BUDGET_SET", 1, MSG_BUDGET_SET, T_GROW, 0, "a BUDGET_SET message of"},
        {"a rung past the ladder", 1, MSG_BUDGET_SET, T_RUNG, 0, "choosing rung 3 of 3"},
        {"a negative rung", 1, MSG_BUDGET_SET, T_RUNG_NEG, 0, "choosing rung -1 of 3"},
        {"a met flag of 5", 1, MSG_BUDGET_SET, T_MET, 0, "met 5"},
        {"a NaN measurement sent back", 1, MSG_BUDGET_SET, T_NAN, 0, "error nan"},
        {"a BUDGET_SET for an unmeasured step", 1, MSG_BUDGET_SET, T_SET_STEP, 0, "a BUDGET_SET for step 7 after step 1"},
        {"a replayed BUDGET", 0, MSG_BUDGET, T_REPLAY, 1, "a second BUDGET message for step 1"},
        {"a replayed BUDGET_SET", 1, MSG_BUDGET_SET, T_REPLAY, 1, "got BUDGET_SET"},
        {"a BUDGET ahead of its step", 0, MSG_META, T_EARLY, 2, "stage 2 has taken 0 steps"},
        {"a BUDGET_SET ahead of a gradient", 1, MSG_GRAD, T_EARLY, 2, "got BUDGET_SET"},
    };
    float *x = pz_xfloats(B * 784);
    int32_t y[B];
    uint32_t ids[B];
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        const tamper *t = &cases[k];
        pz_link *lo_end, *r_lo, *r_hi, *hi_end;
        CHECK(pz_link_inproc_pair(&lo_end, &r_lo, 8, "stage 1 <-> relay") == PZ_OK && pz_link_inproc_pair(&r_hi, &hi_end, 8, "relay <-> stage 2") == PZ_OK,
              "pairs");
        relay_arg up = {r_lo, r_hi, t, 0, 0}, down = {r_hi, r_lo, t, 1, 0};
        pthread_t tu, td;
        pthread_create(&tu, NULL, relay, &up), pthread_create(&td, NULL, relay, &down);
        pz_pipe_config lo = config(PZ_BUDGET_BYTES, 1e12, "q8/q4/q2"), hi = lo;
        lo.local_set = 1, lo.first_local = 0, lo.last_local = 1, lo.next_link = lo_end;
        hi.local_set = 1, hi.first_local = 2, hi.last_local = 3, hi.prev_link = hi_end;
        pz_pipe *ph, *pl;
        CHECK(pz_pipe_create(&ph, &hi) == PZ_OK, "%s", pz_last_error());
        CHECK(pz_pipe_create(&pl, &lo) == PZ_OK, "%s", pz_last_error());
        float loss;
        int correct;
        batch(x, y, ids, 0);
        pz_status st = pz_pipe_train_step(pl, x, y, ids, B, 0.05f, &loss, &correct);
        if (t->at < 2) {
            CHECK(st == PZ_OK, "%s: step 1: %s", t->name, pz_last_error());
            pz_budget_round r;
            st = pz_pipe_budget(pl, 1, &r);
            if (t->at == 1) {
                CHECK(st == PZ_OK, "%s: the round itself passes: %s", t->name, pz_last_error());
                batch(x, y, ids, 1);
                st = pz_pipe_train_step(pl, x, y, ids, B, 0.05f, &loss, &correct);
            }
        }
        char why[512];
        snprintf(why, sizeof why, "%s", pz_last_error());
        printf("hostile budget message: %s: %s\n", t->name, why);
        CHECK(st != PZ_OK && strstr(why, t->says), "%s: refused (%d), saying '%s': %s", t->name, st, t->says, why);
        CHECK(pz_pipe_wait(ph) != PZ_OK, "%s: the serving half stopped", t->name);
        pz_pipe_free(pl);
        pz_pipe_free(ph);
        pthread_join(tu, NULL), pthread_join(td, NULL);
        CHECK(up.done || down.done, "%s: the relay met its message", t->name);
        pz_link_free(r_lo), pz_link_free(r_hi);
    }
    free(x);
}

int main(void) {
    pz_set_threads(1);
    grammar();
    choose_by_hand();
    choose_vs_exhaustive(4, 5, 300, 1.0 + 1e-12); /* searched whole: exact */
    choose_vs_exhaustive(6, 8, 40, 1.0 + 1e-12);  /* a 4-stage pipeline with 8 rungs: 262144 combinations, exact */
    choose_vs_exhaustive(8, 6, 30, 1.1);          /* 1679616 combinations: the greedy rule */
    max_vs_exhaustive();
    messages();
    pipeline();
    hostile();
    TEST_DONE();
}
