/* SPDX-License-Identifier: MIT */
/* time_step.c — `pipezip time`: a pipeline's step over emulated links
 * without training (the dry timing mode, pipe/timing.c), from a model, its
 * cuts, the batch, micro-batches, schedule and links, the bytes each
 * boundary carries (given per token, from codec specs at the boundary's
 * shape, or read from a finished run) and the compute (a FLOP rate, or the
 * step with the links off). */
#include "time_step.h"
#include "base/names.h"
#include "run/records.h"
#include "run/settings.h"
#include "pipe/timing.h"
#include "pipe/protocol.h"
#include "pipezip/codec.h"
#include "codec/desc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what) {
    fprintf(stderr, "pipezip time: %s\n", what);
    return 2;
}

/* "F" or "F/B": bytes per token forward and back */
static int parse_pair(const char *s, double *f, double *b) {
    char *end;
    *f = strtod(s, &end);
    if (end == s || !isfinite(*f) || *f < 0) return -1;
    if (!*end) return *b = *f, 0;
    if (*end != '/') return -1;
    const char *t = end + 1;
    *b = strtod(t, &end);
    return end == t || *end || !isfinite(*b) || *b < 0 ? -1 : 0;
}

/* a finished run's traffic per sample and boundary: its summary's training
 * bytes over the samples it trained and its boundaries */
static int run_bytes(const char *dir, double *fwd_ps, double *bwd_ps, double *tokens_ps) {
    char path[4096];
    snprintf(path, sizeof path, "%s/summary.json", dir);
    char *sum = pz_slurp(path);
    snprintf(path, sizeof path, "%s/config.json", dir);
    char *cfg = pz_slurp(path);
    double fb = 0, bb = 0, steps = 0, batch = 0, stages = 0, tps = 1;
    const int ok = sum && cfg && pz_json_num(sum, "fwd_bytes", &fb) && pz_json_num(sum, "bwd_bytes", &bb) &&
                   pz_json_num(sum, "steps", &steps) && pz_json_num(cfg, "batch", &batch) && pz_json_num(cfg, "n_stages", &stages);
    if (sum) pz_json_num(sum, "tokens_per_sample", &tps);
    free(sum), free(cfg);
    if (!ok || steps < 1 || batch < 1 || stages < 2) {
        fprintf(stderr, "pipezip time: --from-run %s: not a finished pipeline run (its summary.json and config.json give no "
                        "training bytes, steps, batch or stages)\n", dir);
        return 2;
    }
    const double samples = steps * batch * (stages - 1);
    *fwd_ps = fb / samples, *bwd_ps = bb / samples, *tokens_ps = tps;
    return 0;
}

/* per sample at boundary b: a frame of `spec` over a micro-batch of Bm
 * samples of shape sh (Gaussian values), divided by Bm */
static pz_status codec_bytes(const pz_codec_desc *d, pz_shape sh, int Bm, uint64_t seed, double *ps) {
    pz_codec *c;
    PZ_TRY(pz_codec_create_desc(&c, d));
    int64_t shape[1 + PZ_SHAPE_MAX];
    const int nd = pz_shape_batch(sh, Bm, shape);
    const size_t n = (size_t)Bm * (size_t)pz_shape_numel(sh), cap = pz_codec_max_frame_bytes(c, nd, shape);
    float *x = malloc(sizeof *x * n);
    uint32_t *ids = malloc(sizeof *ids * (size_t)Bm);
    uint8_t *frame = malloc(cap);
    pz_status st = x && ids && frame ? PZ_OK : pz_fail(PZ_ERR_NOMEM, "out of memory for a frame of %s", d->text);
    pz_rng r;
    pz_rng_seed(&r, seed);
    for (size_t i = 0; !st && i < n; i++) x[i] = pz_rng_normal(&r);
    for (int i = 0; !st && i < Bm; i++) ids[i] = (uint32_t)i;
    size_t len = 0;
    if (!st) st = pz_codec_encode(c, x, nd, shape, ids, frame, cap, &len, NULL);
    *ps = (double)len / Bm;
    free(x), free(ids), free(frame);
    pz_codec_free(c);
    return st;
}

/* Every boundary's bytes per sample in micro-batches of Bm of the batch:
 * its codecs' frames and the batch header (the dry timer's bytes hook). */
typedef struct {
    const pz_model *model;
    int S, T, subspace, classes, batch;
    const int *cuts;
    pz_codec_desc *fd, *bd; /* the codecs (parsed into by time_bytes) */
    double *fh, *ff, *fb; /* where the bytes go */
} frames;

static pz_status frames_bytes(void *user, int M, pz_timing_bytes *out) {
    const frames *f = user;
    const int Bm = (f->batch + M - 1) / M;
    const msg_layout L = msg_layout_of(f->T, f->subspace ? f->T : 0, f->classes);
    for (int i = 0; i + 1 < f->S; i++) {
        const pz_shape sh = f->model->net.layers[f->cuts[i]].out;
        PZ_TRY(codec_bytes(&f->fd[i], sh, Bm, 11 + (uint64_t)i, &f->ff[i]));
        PZ_TRY(codec_bytes(&f->bd[i], sh, Bm, 101 + (uint64_t)i, &f->fb[i]));
        f->fh[i] = (double)msg_meta_bytes(Bm, &L) / Bm;
    }
    *out = (pz_timing_bytes){f->fh, f->ff, f->fb};
    return PZ_OK;
}

static const char *size_str(double bytes, char *buf, size_t cap) {
    if (bytes >= 1e9) snprintf(buf, cap, "%.2f GB", bytes / 1e9);
    else if (bytes >= 1e6) snprintf(buf, cap, "%.2f MB", bytes / 1e6);
    else if (bytes >= 1e3) snprintf(buf, cap, "%.1f kB", bytes / 1e3);
    else snprintf(buf, cap, "%.0f B", bytes);
    return buf;
}

/* the settings pipezip train shares, as typed, each into its value at once
 * through the run plan's door (the same rows, parsers and errors as train's) */
static int time_settings(const time_options *o, pz_link_emu *emu, const pz_name **schedule, int *delay, double *rate, int *M) {
    pz_run_plan *plan = NULL;
    if (pz_run_plan_create(&plan)) return fail(pz_last_error());
    const struct {
        pz_setting id;
        const char *text;
    } given[] = {{PZ_SET_PIPE_SCHEDULE, o->schedule}, {PZ_SET_PIPE_DELAY, o->pipe_delay}, {PZ_SET_LINK_MODEL, o->link_model}, {PZ_SET_LINK_BANDWIDTH, o->bandwidth},
                 {PZ_SET_LINK_LATENCY, o->latency},   {PZ_SET_MICRO_BATCHES, o->micro_batches}, {PZ_SET_COMPUTE_RATE, o->compute_rate}};
    int rc = 0;
    for (size_t g = 0; g < sizeof given / sizeof *given && !rc; g++) {
        char flag[64];
        snprintf(flag, sizeof flag, "--%s", pz_setting_name(given[g].id));
        if (given[g].text && run_plan_set_as(plan, given[g].id, given[g].text, flag)) rc = fail(pz_last_error());
    }
    if (!rc && o->compute_rate && plan->clock.kind != PZ_CLOCK_RATE) {
        char why[160];
        snprintf(why, sizeof why, "--compute-rate '%s': a FLOP rate such as 48tflops or 2.5e14 (the dry mode has no CPU to time)",
                 o->compute_rate);
        rc = fail(why);
    }
    if (!rc) {
        *schedule = &pz_pipe_schedules[0];
        for (const pz_name *n = pz_pipe_schedules; n->name; n++)
            if (n->value == plan->pipe_schedule) *schedule = n;
        *emu = (pz_link_emu){.bandwidth = plan->bandwidth, .latency = plan->latency, .model = plan->link_model};
        *rate = o->compute_rate ? plan->clock.rate : 0.0;
        *delay = plan->pipe_delay;
        *M = plan->micro_batches; /* 0: auto */
    }
    pz_run_plan_free(plan);
    if (rc) return rc;
    if (!!o->bytes + !!o->run + !!(o->fwd && *o->fwd) != 1)
        return fail("give the bytes each boundary carries one way: --bytes-per-token F[/B], --fwd SPEC [--bwd SPEC], or --from-run DIR");
    if (!!o->compute_rate + (o->links_off_step > 0) + (o->micro_seconds > 0) != 1)
        return fail("give the compute one way: --compute-rate RATE (FLOP/s), --links-off-step SECONDS or --micro-batch-seconds SECONDS");
    if (*M == 0 && o->links_off_step > 0)
        return fail("--links-off-step is the step of one micro-batch count: give --micro-batches M with it (auto takes --compute-rate)");
    return 0;
}

/* the stages: cut after the layers named, or balanced by FLOPs (any number up to the model's layers) */
static int time_cuts(const time_options *o, const pz_model *model, int **cuts, int *S) {
    int rc = 0;
    *cuts = NULL, *S = 0;
    if (o->cuts && *o->cuts) {
        pz_pipe_config rc_cfg = {0};
        char names[PZ_MAX_STAGES][64];
        int n_cuts = 0;
        char buf[1024];
        snprintf(buf, sizeof buf, "%s", o->cuts);
        char *save = NULL;
        for (char *t = strtok_r(buf, ",", &save); t && n_cuts < PZ_MAX_STAGES; t = strtok_r(NULL, ",", &save))
            snprintf(names[n_cuts++], sizeof names[0], "%s", t);
        if (pz_pipe_resolve_cuts(model, (const char(*)[64])names, n_cuts, 0, &rc_cfg)) rc = fail(pz_last_error());
        else if ((*cuts = malloc(sizeof **cuts * PZ_MAX_STAGES))) memcpy(*cuts, rc_cfg.cuts, sizeof rc_cfg.cuts), *S = rc_cfg.n_stages;
    } else if (o->stages < 2) {
        rc = fail("one stage has no boundary to time: give --stages S (2 up to the model's top-level layers) or --cuts");
    } else if ((*cuts = malloc(sizeof **cuts * (size_t)o->stages))) {
        if (pz_pipe_balance(model, o->stages, *cuts)) rc = fail(pz_last_error());
        *S = o->stages;
    }
    return rc;
}

/* the bytes per sample of each boundary, and where they come from (src) */
static int time_bytes(const time_options *o, frames *fr, int M, int lm, char *src, size_t cap, int *from_codecs) {
    if (o->run) {
        double f = 0, b = 0, tps = 1;
        const int rc = run_bytes(o->run, &f, &b, &tps);
        for (int i = 0; !rc && i + 1 < fr->S; i++) fr->ff[i] = f / tps * fr->T, fr->fb[i] = b / tps * fr->T;
        snprintf(src, cap, "measured in %s (%.1f / %.1f B per token each way, headers included)", o->run, f / tps, b / tps);
        return rc;
    }
    if (o->bytes) {
        double f = 0, b = 0;
        if (parse_pair(o->bytes, &f, &b)) return fail("--bytes-per-token expects F or F/B, non-negative numbers of bytes");
        for (int i = 0; i + 1 < fr->S; i++) fr->ff[i] = f * fr->T, fr->fb[i] = b * fr->T;
        snprintf(src, cap, "given: %g / %g B per %s each way", f, b, lm ? "token" : "sample");
        return 0;
    }
    pz_timing_bytes unused;
    *from_codecs = 1;
    snprintf(src, cap, "frames of --fwd %s / --bwd %s over Gaussian tensors of each boundary's shape, and the batch headers", o->fwd,
             o->bwd ? o->bwd : o->fwd);
    if (pz_pipe_parse_specs(o->fwd, fr->S - 1, fr->fd, "--fwd") || pz_pipe_parse_specs(o->bwd ? o->bwd : o->fwd, fr->S - 1, fr->bd, "--bwd") ||
        frames_bytes(fr, M > 0 ? M : 1, &unused))
        return fail(pz_last_error());
    return 0;
}

/* what tool_time found, for print_time */
typedef struct {
    const pz_model_spec *spec;
    int S, M, M_auto, batch, T;
    const pz_name *sched;
    pz_link_emu emu;
    double rate;
    const double *fh, *ff, *fb;
    const char *source;
    pz_timing_result r;
} timed;

static void print_time(FILE *out, const time_options *o, const timed *t) {
    const pz_timing_result *r = &t->r;
    const pz_link_emu *emu = &t->emu;
    const double per = (double)t->batch / t->M, tokens = per * t->T;
    char a[32], b[32], c[32];
    const char *bw_unit = emu->bandwidth >= 1e9 ? "Gbit/s" : "Mbit/s";
    const double bw_v = emu->bandwidth >= 1e9 ? emu->bandwidth / 1e9 : emu->bandwidth / 1e6;
    if (o->json) {
        fprintf(out,
                "{\"model\": \"%s\", \"stages\": %d, \"micro_batches\": %d, \"micro_batches_auto\": %s, \"batch\": %d, "
                "\"tokens_per_step\": %.0f, \"pipe_schedule\": \"%s\", \"link_model\": \"%s\", \"link_bandwidth_bps\": %.17g, "
                "\"link_latency_s\": %.17g, \"compute_rate_flops\": %.17g, \"fwd_bytes_per_token\": %.17g, "
                "\"bwd_bytes_per_token\": %.17g, \"step_s\": %.17g, \"first_step_s\": %.17g, \"path_compute_s\": %.17g, "
                "\"path_transmit_s\": %.17g, \"path_latency_s\": %.17g, \"busiest_stage\": %d, \"busiest\": \"%s\", "
                "\"busiest_s\": %.17g, \"bubble_s\": %.17g, \"bytes_per_step\": %.17g, \"messages_per_step\": %d}\n",
                t->spec->name, t->S, t->M, t->M_auto ? "true" : "false", t->batch, (double)t->batch * t->T,
                pz_name_of(pz_pipe_schedules, t->sched->value), pz_name_of(pz_wire_models, emu->model), emu->bandwidth,
                emu->latency, t->rate, (t->fh[0] + t->ff[0]) / t->T, t->fb[0] / t->T, r->step_s, r->first_step_s, r->path_compute_s,
                r->path_transmit_s, r->path_latency_s, r->busiest_stage, r->busiest_is_wire ? "wire" : "compute", r->busiest_s,
                r->bubble_s, r->bytes_per_step, r->messages_per_step);
        return;
    }
    fprintf(out, "%s in %d stages, %d micro-batch%s%s of %.4g samples (%.0f tokens), %s; %s, %.4g %s + %.4g ms\n",
            t->spec->name, t->S, t->M, t->M == 1 ? "" : "es", t->M_auto ? " (auto: the least step)" : "", per, tokens,
            pz_name_of(pz_pipe_schedules, t->sched->value), emu->model == PZ_WIRE_SHARED ? "one shared inbound wire per stage" : "duplex links",
            bw_v, bw_unit, 1e3 * emu->latency);
    fprintf(out, "messages per micro-batch at boundary 1: forward %s, backward %s (%s)\n", size_str((t->fh[0] + t->ff[0]) * per, a, sizeof a),
            size_str(t->fb[0] * per, b, sizeof b), t->source);
    if (o->micro_seconds > 0)
        fprintf(out, "compute: %.4g s a micro-batch's forward and backward at every stage (1:2)\n", o->micro_seconds);
    else
        fprintf(out, "compute at %.4g TFLOP/s%s\n", t->rate / 1e12, o->links_off_step > 0 ? " (the rate whose links-off step is the one given)" : "");
    fprintf(out, "step %.6g s (steady: step %d of %d; the first, from an empty pipeline, %.6g s)\n", r->step_s, o->steps, o->steps,
            r->first_step_s);
    fprintf(out, "  its critical path: compute %.4g s + transmission %.4g s + latency %.4g s\n", r->path_compute_s,
            r->path_transmit_s, r->path_latency_s);
    fprintf(out, "  busiest: stage %d's %s, %.4g s of work a step; bubble %.4g s (%.1f%% of the step)\n", r->busiest_stage,
            r->busiest_is_wire ? (emu->model == PZ_WIRE_SHARED ? "inbound wire" : "inbound link") : "compute", r->busiest_s,
            r->bubble_s, 100 * r->bubble_s / r->step_s);
    fprintf(out, "  traffic: %s in %d messages a step\n", size_str(r->bytes_per_step, c, sizeof c), r->messages_per_step);
}

int tool_time(const time_options *o, FILE *out) {
    pz_link_emu emu = {0};
    const pz_name *sched = NULL;
    double rate = 0;
    int M = 0;
    int delay = 1;
    int rc = time_settings(o, &emu, &sched, &delay, &rate, &M);
    if (rc) return rc;
    pz_model_spec spec;
    if (pz_model_spec_parse(&spec, o->model)) return fail(pz_last_error());
    const int lm = pz_model_spec_is_sequence(&spec);
    if (lm) spec.subspace = o->subspace;
    else if (o->subspace) return fail("--subspace is for language models (gpt-*)");
    const pz_shape in = lm ? pz_shape_tokens(spec.context) : !strcmp(o->input, "3x32x32") ? pz_shape_image(3, 32, 32)
                                                                                           : pz_shape_image(1, 28, 28);
    const int T = lm ? spec.context : 1, classes = lm ? o->vocab : o->classes;
    int batch = o->batch;
    if (o->tokens_per_step > 0) {
        if (o->tokens_per_step % T) {
            char m[160];
            snprintf(m, sizeof m, "--tokens-per-step %lld is not a whole number of %d-token sequences", o->tokens_per_step, T);
            return fail(m);
        }
        batch = (int)(o->tokens_per_step / T);
    }
    pz_model model;
    if (pz_model_layers(&model, &spec, in, classes)) return fail(pz_last_error());
    int *cuts = NULL, S = 0;
    rc = time_cuts(o, &model, &cuts, &S);
    if (!rc && !cuts) rc = fail("out of memory");
    if (!rc && M > batch) {
        char m[160];
        snprintf(m, sizeof m, "--micro-batches %d: at most the batch (%d samples)", M, batch);
        rc = fail(m);
    }
    /* the bytes per sample of each boundary */
    double *fh = calloc((size_t)(S > 1 ? S : 1), sizeof *fh), *ff = calloc((size_t)(S > 1 ? S : 1), sizeof *ff),
           *fb = calloc((size_t)(S > 1 ? S : 1), sizeof *fb);
    pz_codec_desc *fd = calloc((size_t)(S > 1 ? S : 1), sizeof *fd), *bd = calloc((size_t)(S > 1 ? S : 1), sizeof *bd);
    if (!rc && (!fh || !ff || !fb || !fd || !bd)) rc = fail("out of memory");
    int from_codecs = 0;
    char src[256];
    frames fr = {.model = &model, .S = S, .T = T, .subspace = spec.subspace, .classes = classes, .batch = batch, .cuts = cuts,
                 .fd = fd, .bd = bd, .fh = fh, .ff = ff, .fb = fb};
    if (!rc) rc = time_bytes(o, &fr, M, lm, src, sizeof src, &from_codecs);
    pz_timing_plan plan = {.model = &model, .S = S, .cuts = cuts, .M = M > 0 ? M : 1, .schedule = sched->value, .delay = delay,
                           .clip = (o->clip_norm < 0 ? lm : o->clip_norm > 0), .emu = emu, .batch = batch,
                           .bytes = {fh, ff, fb}, .steps = o->steps};
    if (!rc && o->links_off_step > 0) { /* the rate whose step with the links off is the one given */
        pz_timing_plan off = plan;
        off.emu = (pz_link_emu){0};
        off.rate = 1.0;
        pz_timing_result r;
        if (pz_timing_of_plan(&off, &r)) rc = fail(pz_last_error());
        else rate = r.step_s / o->links_off_step;
    }
    plan.rate = rate, plan.micro_seconds = o->micro_seconds;
    if (!rc && !(rate > 0) && !(o->micro_seconds > 0)) rc = fail("give the compute: --compute-rate RATE (FLOP/s) or --links-off-step SECONDS");
    timed t = {.spec = &spec, .S = S, .M_auto = M == 0, .batch = batch, .T = T, .sched = sched, .emu = emu, .fh = fh, .ff = ff, .fb = fb,
               .source = src};
    if (!rc && M == 0) { /* auto; with codecs, each count's frames are its micro-batches' own */
        if (pz_timing_best_micro(&plan, o->max_micro, NULL, from_codecs ? frames_bytes : NULL, &fr, &M, &t.r) ||
            (from_codecs && frames_bytes(&fr, M, &plan.bytes)))
            rc = fail(pz_last_error());
    } else if (!rc) {
        if (pz_timing_of_plan(&plan, &t.r)) rc = fail(pz_last_error());
    }
    t.M = M, t.rate = rate;
    if (!rc) print_time(out, o, &t);
    free(cuts), free(fh), free(ff), free(fb), free(fd), free(bd);
    pz_model_free(&model);
    return rc;
}
