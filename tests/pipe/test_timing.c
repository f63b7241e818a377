/* SPDX-License-Identifier: MIT */
/* test_timing.c — the dry timing mode (pipe/timing.c):
 * - ProtocolNanoGPT's two published records, from their published settings
 *   (8 stages, 1F1B, 200 Mbit/s + 50 ms on one shared inbound wire per
 *   rank, the bytes each message declares, compute from the links-off
 *   step), within 5% of their links-on step times;
 * - a real pipeline's emulated clock, step by step, equals the dry mode's
 *   for the same messages and compute (GPipe and 1F1B, both wire models);
 * - the rules themselves on cases worked by hand. Virtual clocks only:
 *   nothing here waits on time. */
#include "../test.h"
#include "pipe/pipe.h"
#include "pipe/protocol.h"
#include "pipe/timing.h"
#include "pipezip/codec.h"

#include <math.h>
#include <stdlib.h>

enum { MAXS = 96 };
static double fh[MAXS], ff[MAXS], fb[MAXS], cf[MAXS], cb[MAXS], co[MAXS], nb[MAXS];

static pz_timing_config uniform(int S, int M, int schedule, pz_link_emu emu, double fwd_bytes, double bwd_bytes, double f, double b) {
    for (int i = 0; i < S; i++) fh[i] = 0, ff[i] = fwd_bytes, fb[i] = bwd_bytes, cf[i] = f, cb[i] = b, co[i] = 0, nb[i] = 0;
    return (pz_timing_config){.S = S, .M = M, .schedule = schedule, .emu = emu, .steps = 3, .fwd_header = fh, .fwd_frame = ff,
                              .bwd_frame = fb, .fwd_s = cf, .bwd_s = cb, .opt_s = co, .tie_e = -1, .tie_l = -1, .norm_bytes = nb};
}

static double step_of(pz_timing_config c) {
    pz_timing_result r;
    CHECK(pz_timing_run(&c, &r) == PZ_OK, "%s", pz_last_error());
    return r.step_s;
}

/* a record: S stages of 1F1B, M micro-batches of `tokens`, `bpt` bytes per
 * token each way (+ the 8-byte count a frame declares), `off` the links-off
 * step; the compute per micro-batch and stage (backward twice the forward)
 * is the one whose links-off step is `off` */
static double record(int M, double tokens, double bpt, double off) {
    const pz_link_emu none = {0, 0, PZ_WIRE_SHARED}, wan = {200e6, 0.05, PZ_WIRE_SHARED};
    const double unit = step_of(uniform(8, M, PZ_PIPE_1F1B, none, 0, 0, 1.0, 2.0));
    const double f = off / unit;
    return step_of(uniform(8, M, PZ_PIPE_1F1B, wan, tokens * bpt + 8, tokens * bpt + 8, f, 2 * f));
}

static void records(void) {
    /* 20260917_vanilla_baseline: 64 micro-batches of 8 x 1024 tokens, bf16
     * at width 1024 (2048 B/token each way), 0.539 s off, 100.475 s on */
    const double dense = record(64, 8192, 2048, 0.539);
    CHECK(fabs(dense / 100.475 - 1) < 0.05, "the dense record: %.3f s a step, published 100.475 s", dense);
    /* 20260918_reparamssn_baseline: 32 of 16 x 1024, 322 B/token, 0.655 s off, 19.889 s on */
    const double ssn = record(32, 16384, 322, 0.655);
    CHECK(fabs(ssn / 19.889 - 1) < 0.05, "the ReparamSSN record: %.3f s a step, published 19.889 s", ssn);
    printf("records: dense %.3f s (published 100.475, %+.2f%%), ReparamSSN %.3f s (published 19.889, %+.2f%%)\n", dense,
           100 * (dense / 100.475 - 1), ssn, 100 * (ssn / 19.889 - 1));
}

static void by_hand(void) {
    /* two stages, one micro-batch, no compute: the frame forward, the
     * gradient back, the loss back */
    const pz_link_emu duplex = {8e6, 0.01, PZ_WIRE_DUPLEX}, shared = {8e6, 0.01, PZ_WIRE_SHARED};
    pz_timing_result r;
    pz_timing_config c = uniform(2, 1, PZ_PIPE_GPIPE, duplex, 1e6, 1e6, 0, 0);
    c.loss_bytes = 8;
    CHECK(pz_timing_run(&c, &r) == PZ_OK, "%s", pz_last_error());
    /* 1 s + 10 ms forward; back: the loss (8 us) then the gradient behind it (1 s), 10 ms */
    CHECK(fabs(r.first_step_s - (1.0 + 0.01 + 8e-6 + 1.0 + 0.01)) < 1e-12, "duplex by hand: %.9f s", r.first_step_s);
    c.emu = shared;
    CHECK(pz_timing_run(&c, &r) == PZ_OK, "%s", pz_last_error());
    /* the shared wire holds the loss's latency too before the gradient */
    CHECK(fabs(r.first_step_s - (1.0 + 0.01 + 8e-6 + 0.01 + 1.0 + 0.01)) < 1e-12, "shared by hand: %.9f s", r.first_step_s);
    CHECK(fabs(r.path_compute_s + r.path_transmit_s + r.path_latency_s - r.step_s) < 1e-9, "the critical path adds up to the step");
    /* a header and its frame are one transmission, one latency */
    c = uniform(2, 1, PZ_PIPE_GPIPE, shared, 1e6, 0, 0, 0);
    fh[0] = 1e6;
    CHECK(pz_timing_run(&c, &r) == PZ_OK, "%s", pz_last_error());
    /* 2 MB in one transmission, its latency; back: the loss, then the (empty) gradient, a latency each */
    CHECK(fabs(r.first_step_s - (2.0 + 0.01 + 0.01 + 0.01)) < 1e-12, "header + frame: %.9f s", r.first_step_s);
    /* 64 stages */
    c = uniform(64, 64, PZ_PIPE_1F1B, shared, 1e5, 1e5, 1e-3, 2e-3);
    CHECK(pz_timing_run(&c, &r) == PZ_OK, "64 stages: %s", pz_last_error());
    CHECK(r.step_s > 128 * (0.1 + 0.01) && r.busiest_is_wire, "64 stages: %.3f s, a wire the busiest", r.step_s);
    /* refusals */
    c = uniform(1, 4, PZ_PIPE_GPIPE, shared, 1, 1, 0, 0);
    CHECK(pz_timing_run(&c, &r) != PZ_OK, "one stage has no link to time");
    c = uniform(4, 4, 7, shared, 1, 1, 0, 0);
    CHECK(pz_timing_run(&c, &r) != PZ_OK, "an unknown schedule is refused");
    c = uniform(4, 4, PZ_PIPE_GPIPE, shared, 1, 1, 0, 0);
    cf[2] = -1;
    CHECK(pz_timing_run(&c, &r) != PZ_OK, "negative compute is refused");
}

/* a real pipeline's clock against the dry mode's; its steady step */
static double against_a_run(int schedule, int model) {
    enum { S = 4, M = 4, Bt = 8, T = 16, STEPS = 4 };
    pz_pipe_config c = {.in = pz_shape_tokens(T), .targets = T, .n_classes = 64, .batch_max = Bt, .seed = 3, .n_stages = S,
                        .cuts = {1, 2, 3}, .optimizer = PZ_OPT_ADAMW, .micro_batches = M, .schedule = schedule, .delay = 1,
                        .clock = {PZ_CLOCK_RATE, 2e9}, .timeout_s = 30,
                        .emu = {4e6, 0.003, model}};
    CHECK(pz_model_spec_parse(&c.model, "gpt:layers=3,d=16,heads=2,ctx=16,untied=1") == PZ_OK, "%s", pz_last_error());
    CHECK(pz_pipe_parse_specs("q8", S - 1, c.fwd, "--fwd") == PZ_OK && pz_pipe_parse_specs("q4", S - 1, c.bwd, "--bwd") == PZ_OK,
          "%s", pz_last_error());
    pz_model m;
    CHECK(pz_model_build(&m, &c.model, c.in, c.n_classes, 1, c.seed, 0, 0) == PZ_OK, "%s", pz_last_error());
    pz_pipe *p;
    CHECK(pz_pipe_create(&p, &c) == PZ_OK, "%s", pz_last_error());
    if (!p) return 0;
    float x[Bt * T];
    int32_t y[Bt * T];
    uint32_t ids[Bt];
    double clock[STEPS + 1];
    clock[0] = pz_pipe_clock(p);
    for (int k = 0; k < STEPS; k++) {
        for (int i = 0; i < Bt * T; i++) x[i] = (float)((i * 7 + k) % 64), y[i] = (i * 5 + k) % 64;
        for (int b = 0; b < Bt; b++) ids[b] = (uint32_t)(k * Bt + b);
        float loss;
        int correct;
        CHECK(pz_pipe_train_step(p, x, y, ids, Bt, 1e-3f, &loss, &correct) == PZ_OK, "%s", pz_last_error());
        clock[k + 1] = pz_pipe_clock(p);
    }
    CHECK(pz_pipe_collect_stats(p) == PZ_OK, "%s", pz_last_error());
    /* the messages: each micro-batch's META and frame forward, its frame back */
    const msg_layout L = msg_layout_of(T, 0, c.n_classes);
    int from = 0;
    for (int i = 0; i < S; i++) {
        const int to = i == S - 1 ? m.net.n : c.cuts[i] + 1;
        int64_t macs = 0;
        for (int l = from; l < to; l++) macs += m.net.layers[l].macs;
        cf[i] = 2.0 * (double)macs * (Bt / M) / 2e9, cb[i] = 2 * cf[i], co[i] = 0, nb[i] = 0;
        from = to;
        if (i == S - 1) break;
        const pz_boundary_stats bs = pz_pipe_boundary_stats(p, i);
        fh[i] = (double)msg_meta_bytes(Bt / M, &L);
        ff[i] = (double)bs.fwd_bytes / (double)bs.fwd_frames - fh[i];
        fb[i] = (double)bs.bwd_bytes / (double)bs.bwd_frames;
        CHECK(ff[i] == floor(ff[i]) && fb[i] == floor(fb[i]), "q8 and q4 frames of one size");
    }
    pz_pipe_free(p);
    pz_model_free(&m);
    pz_timing_config t = {.S = S, .M = M, .schedule = schedule, .delay = c.delay, .emu = c.emu, .steps = STEPS, .fwd_header = fh, .fwd_frame = ff,
                          .bwd_frame = fb, .fwd_s = cf, .bwd_s = cb, .opt_s = co, .tie_e = -1, .tie_l = -1, .norm_bytes = nb,
                          .loss_bytes = MSG_LOSS_BYTES};
    pz_timing_result r;
    const double run_step = clock[STEPS] - clock[STEPS - 1];
    CHECK(pz_timing_run(&t, &r) == PZ_OK, "%s", pz_last_error());
    CHECK(fabs(run_step - r.step_s) < 1e-9 * run_step, "%s, %s wire: the run's steady step %.9f s, the dry mode's %.9f s",
          pz_name_of(pz_pipe_schedules, schedule), pz_name_of(pz_wire_models, model), run_step, r.step_s);
    return run_step;
}

int main(void) {
    pz_set_threads(1);
    records();
    by_hand();
    double step[8][2] = {{0}};
    for (int s = 0; pz_pipe_schedules[s].name; s++) /* every schedule of the table */
        for (int w = 0; w < 2; w++) step[s][w] = against_a_run(pz_pipe_schedules[s].value, w ? PZ_WIRE_SHARED : PZ_WIRE_DUPLEX);
    /* with no flush the steady step is shorter than 1F1B's (the emulated
     * clocks: links and counted FLOPs, no wall time) */
    for (int w = 0; w < 2; w++) {
        fprintf(stderr, "%s wire: async %.6f s, 1F1B %.6f s, GPipe %.6f s a step\n", w ? "shared" : "duplex", step[PZ_PIPE_ASYNC][w],
                step[PZ_PIPE_1F1B][w], step[PZ_PIPE_GPIPE][w]);
        CHECK(step[PZ_PIPE_ASYNC][w] > 0 && step[PZ_PIPE_ASYNC][w] < step[PZ_PIPE_1F1B][w] && step[PZ_PIPE_ASYNC][w] < step[PZ_PIPE_GPIPE][w],
              "%s wire: async's steady step is the shortest", w ? "shared" : "duplex");
    }
    TEST_DONE();
}
