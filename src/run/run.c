/* SPDX-License-Identifier: MIT */
/* run.c — the training run behind `pipezip train`: load data, place the
 * stages (a single stage is a pipeline of one), loop over epochs (train,
 * evaluate on the test set), write step, epoch and boundary metrics, the
 * checkpoints and a summary into the run directory. The rooms: serve.c (the
 * split-learning server), run_config.c (configuration, run directory),
 * placement.c (transports), traffic.c (boundary accounting). */
#include "run_internal.h"
#include "records.h"
#include "link/link.h"
#include "pipe/timing.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* the run directory to continue and the dataset's directory (NULL: none given) */
#define RESUME(plan) ((plan)->text[PZ_SET_RESUME])
#define DATA_DIR(plan) ((plan)->text[PZ_SET_DATA_DIR])

/* Everything one run holds while it trains. */
typedef struct {
    const pz_run_plan *cfg;     /* the settings, typed */
    pz_run_result *res;
    pz_progress_fn on_progress;
    void *user;
    const run_link *link;
    int rank, pipeline;        /* pipeline: more than one stage, a link or an emulated link (records say so) */
    const char *out_dir;       /* NULL: a process without the driver writes nothing */
    run_state rs;              /* where a resumed run continues */
    char fp[RUN_FINGERPRINT_MAX], resume_dir[4200];
    pz_dataset train, test;
    pz_tokenizer tok;          /* text with --tokenizer bpe:N */
    pz_model model;            /* the layers' names and shapes (the stages hold the parameters) */
    pz_pipe_config pc;
    pz_pipe *pipe;
    pz_loader loader;
    pz_schedule sched;
    pz_metrics steps_m, epochs_m, bounds_m, evals_m, budget_m;
    pz_traffic traffic;
    double t0, emulated, clock0; /* clock0: the pipeline's clock when the epoch (or this turn) began */
    double train_seconds;      /* spent training in this process: steps only, not evaluations or checkpoints */
    double epoch_t0, epoch_eval; /* the epoch's start, and its --eval-every evaluations so far */
    int in_epoch;              /* training steps under way (their time counts as training) */
    int64_t samples_here;      /* trained in this process (a resumed run's earlier ones not counted) */
    int cur_epoch, eval_pass, eval_passes; /* the evaluation under way: its pass of how many */
    double eval_t0;
    int64_t global_step, samples;
    int epochs;                /* --epochs, or as many as --steps takes (the last cut short) */
    char ckpt[4300];           /* the checkpoint directory written last ("": none yet) */
    int ranks;
    int turn;                  /* split learning: 0 the whole run is one turn, -1 a turn per epoch, K per K steps */
    int auto_micro;            /* --micro-batches auto, not chosen yet: choose after the first step */
    unsigned char allowed[PZ_MAX_MICRO + 1]; /* ... among these counts (--activation-memory) */
    /* a lagging pipeline (pz_pipe_lag: --pipe-schedule async): the step whose
     * loss comes with the next step or the drain */
    int owed;
    int owed_B;
    float owed_lr;
    int64_t owed_step;
} run;

/* ---- the run directory's streams ---------------------------------------------- */
static pz_status open_streams(run *r) {
    const pz_run_plan *cfg = r->cfg;
    PZ_TRY(pz_mkdir_p(r->out_dir));
    if (!RESUME(cfg)) PZ_TRY(run_write_config(r->out_dir, cfg, &r->model, &r->train, &r->test, &r->pc, r->pipeline));
    if (RESUME(cfg)) {
        /* a mid-epoch checkpoint keeps its epoch's step and evaluation records up to its step */
        const int csv = cfg->metrics == RUN_METRICS_CSV, E = r->rs.epoch;
        const long long upto = r->rs.step_in_epoch > 0 ? (long long)r->rs.global_step : -1;
        PZ_TRY(pz_metrics_reopen(&r->steps_m, r->out_dir, "steps", csv, E, upto));
        PZ_TRY(pz_metrics_reopen(&r->epochs_m, r->out_dir, "epochs", csv, E, -1));
        if (r->pipeline) PZ_TRY(pz_metrics_reopen(&r->bounds_m, r->out_dir, "boundaries", csv, E, -1));
        if (cfg->eval_every > 0) PZ_TRY(pz_metrics_reopen(&r->evals_m, r->out_dir, "evals", csv, E, upto));
        if (r->pipeline && r->pc.budget.kind) PZ_TRY(pz_metrics_reopen(&r->budget_m, r->out_dir, "budget", csv, E, upto));
    } else {
        PZ_TRY(pz_metrics_open(&r->steps_m, r->out_dir, "steps", cfg->metrics == RUN_METRICS_CSV));
        PZ_TRY(pz_metrics_open(&r->epochs_m, r->out_dir, "epochs", cfg->metrics == RUN_METRICS_CSV));
        if (r->pipeline) PZ_TRY(pz_metrics_open(&r->bounds_m, r->out_dir, "boundaries", cfg->metrics == RUN_METRICS_CSV));
        if (cfg->eval_every > 0) PZ_TRY(pz_metrics_open(&r->evals_m, r->out_dir, "evals", cfg->metrics == RUN_METRICS_CSV));
        if (r->pipeline && r->pc.budget.kind) PZ_TRY(pz_metrics_open(&r->budget_m, r->out_dir, "budget", cfg->metrics == RUN_METRICS_CSV));
    }
    return PZ_OK;
}

/* ---- setting up: data, model, stages ------------------------------------------- */
/* a language model's text, in the run's tokens: bytes, or BPE learned from
 * the training split (a resumed run reads the one its directory keeps) */
static pz_status load_text(run *r) {
    const pz_run_plan *cfg = r->cfg;
    const int T = cfg->model.context;
    if (cfg->vocab == 256) return pz_data_load_corpus(&r->train, &r->test, &cfg->data, DATA_DIR(cfg), T, NULL);
    if (RESUME(cfg)) PZ_TRY(pz_tokenizer_open(&r->tok, cfg->vocab, RESUME(cfg)));
    else r->tok.vocab = cfg->vocab; /* learned from the training split as it loads */
    PZ_TRY(pz_data_load_corpus(&r->train, &r->test, &cfg->data, DATA_DIR(cfg), T, &r->tok));
    if (!RESUME(cfg) && r->out_dir) {
        char path[4300];
        PZ_TRY(pz_mkdir_p(r->out_dir));
        snprintf(path, sizeof path, "%.4200s/tokenizer.txt", r->out_dir);
        PZ_TRY(pz_tokenizer_save(&r->tok, path));
    }
    return PZ_OK;
}

/* --micro-batches auto --activation-memory: the counts whose busiest stage
 * holds at most that much (pz_pipe_stage_memory: the layers built for one
 * micro-batch), decided before the first step; none is an error */
static pz_status allowed_counts(run *r) {
    const int S = r->pc.n_stages, B = r->cfg->batch;
    int64_t least = INT64_MAX;
    int least_M = 1, any = 0;
    for (int m = 1; m <= PZ_MAX_MICRO; m++) {
        r->allowed[m] = 0;
        if (m > B || B % m) continue;
        pz_pipe_config c = r->pc;
        c.micro_batches = m;
        int64_t most = 0;
        for (int i = 0; i < S; i++) {
            int64_t b;
            PZ_TRY(pz_pipe_stage_memory(&c, i, m, &b));
            if (b > most) most = b;
        }
        if (most < least) least = most, least_M = m;
        r->allowed[m] = (double)most <= r->cfg->activation_memory;
        any |= r->allowed[m];
    }
    if (!any)
        return pz_fail(PZ_ERR_ARG, "--activation-memory %s: no micro-batch count fits it (the least a stage holds is %.4g MB, in %d "
                                   "micro-batches)", run_plan_str(r->cfg, PZ_SET_ACTIVATION_MEMORY), (double)least / 1e6, least_M);
    return PZ_OK;
}

/* --resume: its record, checked against this run's settings */
static pz_status open_resume(run *r, const char *resume) {
    pz_run_result *res = r->res;
    PZ_TRY(run_state_read(resume, &r->rs));
    if (!run_fingerprint_same(r->rs.fingerprint, r->fp)) {
        char diff[2048];
        run_fingerprint_diff(r->rs.fingerprint, r->fp, diff, sizeof diff);
        return pz_fail(PZ_ERR_ARG, "--resume %s: that run was started with other settings (%s); resume it with its own:\n  it:   %s\n  this: %s",
                       resume, diff, r->rs.fingerprint, r->fp);
    }
    res->resumed_from = r->rs.epoch;
    res->resumed_from_step = r->rs.global_step;
    run_state_dir(r->resume_dir, sizeof r->resume_dir, resume, &r->rs);
    return PZ_OK;
}

static pz_status load_data(run *r) {
    const pz_run_plan *cfg = r->cfg;
    if (cfg->data.text) PZ_TRY(load_text(r));
    else PZ_TRY(pz_data_load(&r->train, &r->test, &cfg->data, DATA_DIR(cfg), cfg->seed));
    if (cfg->limit_train > 0) pz_dataset_truncate(&r->train, cfg->limit_train);
    if (cfg->limit_test > 0) pz_dataset_truncate(&r->test, cfg->limit_test);
    if (cfg->shard_count > 0) PZ_TRY(pz_dataset_shard(&r->train, cfg->shard_index, cfg->shard_count));
    return PZ_OK;
}

/* the model's layer list, the pipeline's configuration and the pipeline */
static pz_status build_pipeline(run *r, const char *resume) {
    const pz_run_plan *cfg = r->cfg;
    pz_run_result *res = r->res;
    /* the stages hold the model; this copy only names layers and cuts */
    PZ_TRY(pz_model_build(&r->model, &cfg->model, pz_dataset_shape(&r->train), r->train.n_classes, cfg->batch, cfg->seed, 0, 0));
    res->n_params = r->model.n_params;
    res->n_stages = 1;
    res->final_test_accuracy_compressed = -1;
    res->final_test_loss_compressed = -1;
    res->tokens = r->train.tokens;
    res->final_test_bits_per_byte = res->final_test_bits_per_byte_compressed = -1;
    PZ_TRY(run_pipe_config(cfg, &r->model, &r->train, &r->pc, r->ranks));
    if (resume) r->pc.resume = r->resume_dir;
    /* --micro-batches auto: the first step in one, then the count chosen (a resumed run: the one it chose) */
    if (cfg->micro_batches == 0) {
        r->pc.micro_batches = resume && r->rs.micro_batches > 0 ? r->rs.micro_batches : 1;
        r->auto_micro = !(resume && r->rs.micro_batches > 0);
        if (r->auto_micro && cfg->activation_memory > 0) PZ_TRY(allowed_counts(r));
    }
    res->micro_batches = r->pc.micro_batches;
    if (r->link->place) PZ_TRY(r->link->place(cfg, r->rank, r->ranks, &r->pc));
    PZ_TRY(pz_pipe_create(&r->pipe, &r->pc));
    res->n_stages = r->pc.n_stages;
    for (int i = 0; i < r->pc.n_stages && i < 16; i++) res->activation_bytes[i] = pz_pipe_activation_bytes(r->pipe, i);
    return PZ_OK;
}

/* the loader, the LR schedule and the run's length */
static pz_status plan_steps(run *r, const char *resume) {
    const pz_run_plan *cfg = r->cfg;
    pz_rng root;
    pz_rng_seed(&root, cfg->seed);
    const pz_rng data_rng = pz_rng_split(&root, 0xDA7A);
    const pz_augment aug = pz_data_augment(&cfg->data, cfg->crop_pad, cfg->flip);
    PZ_TRY(pz_loader_init(&r->loader, &r->train, cfg->batch, 1, aug, data_rng.s[0]));

    r->sched = cfg->schedule;
    r->sched.base_lr = cfg->lr;
    r->sched.steps_per_epoch = pz_loader_batches(&r->loader);
    /* --steps N: as many epochs as N steps take, the last cut short */
    const int64_t spe = r->sched.steps_per_epoch;
    r->epochs = cfg->steps > 0 ? (int)((cfg->steps + spe - 1) / spe) : cfg->epochs;
    r->sched.total_steps = cfg->steps > 0 ? cfg->steps : spe * cfg->epochs;
    /* --warmup is in epochs; a language model's default (0.05 of its one
     * epoch) is, with --steps, that share of the steps */
    r->sched.warmup_steps = (int64_t)llround(cfg->warmup_epochs * (cfg->steps > 0 && !cfg->given[PZ_SET_WARMUP] ? r->sched.total_steps : spe));
    if (r->sched.warmup_steps > r->sched.total_steps)
        return pz_fail(PZ_ERR_ARG, "--warmup %g epochs is %lld steps, more than the run's %lld", cfg->warmup_epochs,
                       (long long)r->sched.warmup_steps, (long long)r->sched.total_steps);
    if (cfg->aqsgd_warmup > r->epochs) return pz_fail(PZ_ERR_ARG, "--aqsgd-warmup must be in 0..%d (the run's epochs), got %d", r->epochs, cfg->aqsgd_warmup);
    if (resume && r->rs.global_step >= r->sched.total_steps && r->rs.step_in_epoch == 0) {
        /* killed between its last checkpoint and its summary: resuming finishes it */
        char sp[4300];
        snprintf(sp, sizeof sp, "%s/summary.json", resume);
        char *sum = pz_slurp(sp);
        const int finished = sum && strstr(sum, "\"status\": \"finished\"");
        free(sum);
        if (finished) {
            if (cfg->steps > 0) return pz_fail(PZ_ERR_ARG, "--resume %s: all %lld steps are already done", resume, (long long)cfg->steps);
            return pz_fail(PZ_ERR_ARG, "--resume %s: all %d epochs are already done", resume, cfg->epochs);
        }
    }
    return PZ_OK;
}

/* the records and the counters, carried on from a resumed run's */
static pz_status carry_on(run *r, const char *resume) {
    pz_run_result *res = r->res;
    if (r->out_dir) PZ_TRY(open_streams(r));
    r->t0 = pz_now() - r->rs.wall;
    r->global_step = r->rs.global_step, r->samples = r->rs.samples;
    res->best_test_accuracy = r->rs.best;
    res->epochs_done = r->rs.epoch;
    r->emulated = r->rs.emulated;
    r->traffic = (pz_traffic){.fwd = r->rs.fwd_bytes, .bwd = r->rs.bwd_bytes, .fp32 = r->rs.fp32_bytes,
                              .eval = r->rs.eval_bytes, .link = r->rs.link_bytes};
    /* counters start here: a server may have served other clients already */
    if (r->pipeline) PZ_TRY(pz_traffic_start(&r->traffic, r->pipe, r->pc.n_stages - 1));
    if (r->pipeline && resume && r->rs.step_in_epoch > 0) {
        char tp[4400];
        snprintf(tp, sizeof tp, "%s/traffic.jsonl", r->resume_dir);
        PZ_TRY(pz_traffic_carry(&r->traffic, tp));
    }
    if (resume) snprintf(r->ckpt, sizeof r->ckpt, "%s", r->resume_dir);
    return PZ_OK;
}

static pz_status start(run *r) {
    const pz_run_plan *cfg = r->cfg;
    PZ_TRY(run_plan_check(cfg));
    pz_set_threads(cfg->threads);
    r->link = cfg->link;
    r->pipeline = pz_run_uses_pipeline(cfg);
    int ranks = 0;
    if (r->link->processes) PZ_TRY(r->link->processes(&r->rank, &ranks));
    r->ranks = ranks;
    r->turn = cfg->turn;
    run_fingerprint(cfg, r->fp, sizeof r->fp);
    const char *resume = RESUME(cfg);
    if (resume) PZ_TRY(open_resume(r, resume));
    r->out_dir = r->rank > 0 ? NULL : pz_run_dir_of(cfg); /* the driver's process writes the run directory */
    PZ_TRY(load_data(r));
    PZ_TRY(build_pipeline(r, resume));
    if (r->rank > 0) return PZ_OK;
    if (r->link->session && !resume) {
        /* split learning: start from the client-side weights the previous client left */
        int found = 0;
        PZ_TRY(pz_pipe_fetch(r->pipe, &found));
        r->res->handed_over = found;
    }
    PZ_TRY(plan_steps(r, resume));
    return carry_on(r, resume);
}

static pz_progress progress(const run *r, int epoch, int64_t step, double loss_sum, int64_t hits, int64_t seen, float lr,
                            double now) {
    pz_progress p = {.epoch = epoch + 1, .epochs = r->epochs, .step = step,
                     .steps_per_epoch = r->sched.steps_per_epoch, .global_step = r->global_step,
                     .total_steps = r->sched.total_steps, .loss = seen ? loss_sum / seen : NAN, /* NaN: no loss back yet (async) */
                     .accuracy = seen ? (double)hits / ((double)seen * pz_dataset_targets(&r->train)) : NAN, .lr = lr, .elapsed = now - r->t0,
                     .samples_per_second = r->samples / (now - r->t0), .test_loss_compressed = -1,
                     .test_bits_per_byte = -1};
    p.eta = (now - r->t0) / r->global_step * (r->sched.total_steps - r->global_step);
    const double trained = r->train_seconds + (r->in_epoch ? now - r->epoch_t0 - r->epoch_eval : 0);
    p.train_samples_per_second = trained > 0 ? r->samples_here / trained : 0;
    return p;
}

/* ---- evaluation: plain, and (a pipeline) through the compressed boundaries -------- */
typedef struct {
    double loss, acc, loss_c, acc_c; /* _c: compressed (-1: not evaluated) */
} eval_result;

/* the evaluation's own progress: every batch of every pass */
static void eval_progress(void *user, int64_t done, int64_t total) {
    run *r = user;
    if (!r->on_progress) return;
    const double now = pz_now(), spent = now - r->eval_t0;
    pz_progress p = {.epoch = r->cur_epoch + 1, .epochs = r->epochs, .global_step = r->global_step,
                     .total_steps = r->sched.total_steps, .steps_per_epoch = r->sched.steps_per_epoch,
                     .elapsed = now - r->t0, .evaluating = 1, .test_loss_compressed = -1, .test_accuracy_compressed = -1,
                     .test_bits_per_byte = -1, .emulated_seconds = -1};
    p.eval_total = total * r->eval_passes, p.eval_done = total * r->eval_pass + done;
    p.eta = p.eval_done > 0 ? spent / p.eval_done * (p.eval_total - p.eval_done) : 0;
    (void)r->on_progress(&p, r->user); /* a stop takes effect after the evaluation */
}

static pz_status evaluate(run *r, eval_result *v) {
    const run_eval_mode mode = r->cfg->eval_compress;
    v->loss = v->acc = 0, v->loss_c = v->acc_c = -1;
    r->eval_t0 = pz_now(), r->eval_pass = 0;
    r->eval_passes = r->pipeline && mode == RUN_EVAL_BOTH ? 2 : 1;
    if (r->on_progress) pz_pipe_set_eval_progress(r->pipe, eval_progress, r);
    if (!r->pipeline) return pz_pipe_evaluate(r->pipe, r->test.x, r->test.y, r->test.n, 0, &v->loss, &v->acc);
    /* Paper A evaluates both ways: through the compressed boundaries and plain */
    if (mode != RUN_EVAL_ON) PZ_TRY(pz_pipe_evaluate(r->pipe, r->test.x, r->test.y, r->test.n, 0, &v->loss, &v->acc));
    r->eval_pass = mode != RUN_EVAL_ON ? 1 : 0;
    if (mode != RUN_EVAL_OFF) PZ_TRY(pz_pipe_evaluate(r->pipe, r->test.x, r->test.y, r->test.n, 1, &v->loss_c, &v->acc_c));
    if (mode == RUN_EVAL_ON) v->loss = v->loss_c, v->acc = v->acc_c;
    r->res->final_test_accuracy_compressed = v->acc_c;
    r->res->final_test_loss_compressed = v->loss_c;
    return PZ_OK;
}

/* a language model's loss (nats per token) as bits per byte of text */
static double bits_per_byte(const run *r, double loss) { return loss < 0 ? -1 : loss / log(2.0) / r->test.bytes_per_token; }

/* evals.jsonl (--eval-every N): the validation loss every N steps and at
 * each epoch's end, plain and through the compressed boundaries; a pipeline
 * adds its emulated training time and training bytes so far (what a time-
 * or traffic-to-target reads between epochs) */
static pz_status write_eval(run *r, int epoch, const eval_result *v, double emulated, double fwd_bytes, double bwd_bytes) {
    if (!r->evals_m.f) return PZ_OK;
    pz_field f[16];
    int nf = 0;
    f[nf++] = PZ_NUM("epoch", epoch + 1);
    f[nf++] = PZ_NUM("step", r->global_step);
    f[nf++] = PZ_NUM("samples", r->samples);
    f[nf++] = PZ_NUM("test_loss", v->loss);
    f[nf++] = PZ_NUM("test_accuracy", v->acc);
    if (r->train.tokens) f[nf++] = PZ_NUM("test_bits_per_byte", bits_per_byte(r, v->loss));
    if (r->pipeline) {
        f[nf++] = PZ_NUM("test_loss_compressed", v->loss_c);
        f[nf++] = PZ_NUM("test_accuracy_compressed", v->acc_c);
        if (r->train.tokens) f[nf++] = PZ_NUM("test_bits_per_byte_compressed", bits_per_byte(r, v->loss_c));
        f[nf++] = PZ_NUM("emulated_time", emulated);
        f[nf++] = PZ_NUM("fwd_bytes", fwd_bytes);
        f[nf++] = PZ_NUM("bwd_bytes", bwd_bytes);
    }
    f[nf++] = PZ_NUM("lr", pz_schedule_lr(&r->sched, r->global_step - 1));
    f[nf++] = PZ_NUM("time", pz_now() - r->t0);
    PZ_TRY(pz_metrics_write(&r->evals_m, f, nf));
    fflush(r->evals_m.f);
    return PZ_OK;
}

/* an evaluation's results in a progress report */
static void progress_eval(pz_progress *p, const run *r, const eval_result *v) {
    p->test_loss = v->loss, p->test_accuracy = v->acc;
    p->test_accuracy_compressed = v->acc_c, p->test_loss_compressed = v->loss_c;
    p->test_bits_per_byte = r->train.tokens ? bits_per_byte(r, v->loss) : -1;
    p->emulated_seconds = r->pipeline ? r->emulated : -1;
}

/* ---- a pipeline made again mid-run (a client's next turn, --micro-batches auto) ---- */
/* before the old pipeline goes: its traffic and emulated time so far are kept */
static pz_status pipe_leave(run *r) {
    PZ_TRY(pz_traffic_pause(&r->traffic, r->pipe));
    r->emulated += pz_pipe_clock(r->pipe) - r->clock0;
    return PZ_OK;
}

/* the new pipeline goes on where the old one left: its warm-up, traffic and clock */
static pz_status pipe_enter(run *r, int epoch) {
    if (r->cfg->aqsgd_warmup > 0) PZ_TRY(pz_pipe_set_warmup(r->pipe, epoch < r->cfg->aqsgd_warmup));
    PZ_TRY(pz_traffic_resume(&r->traffic, r->pipe));
    r->clock0 = pz_pipe_clock(r->pipe);
    return PZ_OK;
}

/* ---- split learning's round robin ------------------------------------------------ */
/* This client's turn ends: its state goes to the server for the next
 * client, it leaves, asks for a turn again (the others that asked go
 * first) and starts from what the last client left. */
static pz_status next_turn(run *r, int epoch) {
    const pz_run_plan *cfg = r->cfg;
    PZ_TRY(pz_pipe_hand_on(r->pipe));
    PZ_TRY(pipe_leave(r));
    pz_link_zmq_set_last_turn(r->pc.next_link, 0);
    pz_pipe_free(r->pipe);
    r->pipe = NULL;
    r->pc.next_link = NULL, r->pc.resume = NULL;
    PZ_TRY(r->link->place(cfg, r->rank, r->ranks, &r->pc));
    PZ_TRY(pz_pipe_create(&r->pipe, &r->pc));
    int found = 0;
    PZ_TRY(pz_pipe_fetch(r->pipe, &found));
    if (!found) return pz_fail(PZ_ERR_STATE, "the server kept no client state for this client's next turn (was it restarted?)");
    return pipe_enter(r, epoch);
}

/* ---- one epoch of training ------------------------------------------------------ */
typedef struct {
    double loss_sum;
    int64_t hits, seen, steps;
    double eval_seconds; /* spent in --eval-every evaluations (not training) */
} epoch_sums;

static pz_status settle(run *r, int epoch, epoch_sums *e, int force);

/* the --eval-every evaluation after the current step (not the epoch's last: it is evaluated with the epoch) */
static pz_status eval_now(run *r, int epoch, epoch_sums *e, float lr) {
    PZ_TRY(settle(r, epoch, e, 0));
    const double t = pz_now(), c1 = r->pipeline ? pz_pipe_clock(r->pipe) : 0.0;
    eval_result v;
    double fb = 0, bb = 0;
    PZ_TRY(evaluate(r, &v));
    if (r->pipeline && r->evals_m.f) PZ_TRY(pz_traffic_now(&r->traffic, r->pipe, &fb, &bb));
    PZ_TRY(write_eval(r, epoch, &v, r->emulated + c1 - r->clock0, fb, bb));
    /* evaluating is not training: the clock takes none of it (as at an epoch's end) */
    if (r->pipeline) r->clock0 += pz_pipe_clock(r->pipe) - c1;
    e->eval_seconds += pz_now() - t;
    r->epoch_eval = e->eval_seconds;
    if (r->on_progress) {
        pz_progress p = progress(r, epoch, e->steps, e->loss_sum, e->hits, e->seen, lr, pz_now());
        p.evaluation = 1;
        progress_eval(&p, r, &v);
        if (r->on_progress(&p, r->user)) r->res->stopped = 1;
    }
    return PZ_OK;
}

static pz_status checkpoint_mid(run *r, int epoch, const epoch_sums *e, int eval_pending);

/* the epoch's last step: the end of its batches, or the run's last step */
static int epoch_last_step(const run *r, const epoch_sums *e) {
    return e->steps == r->sched.steps_per_epoch || r->global_step == r->sched.total_steps;
}

/* step `step`'s loss into the epoch's sums and (every --log-every steps,
 * and the epoch's last: `force`) its record */
static pz_status account(run *r, int epoch, epoch_sums *e, float loss, int correct, int B, float lr, int64_t step, int force) {
    if (!isfinite(loss))
        return pz_fail(PZ_ERR_STATE, "training diverged: loss is %g at epoch %d step %lld (try a lower --lr)", loss, epoch + 1,
                       (long long)step);
    e->loss_sum += (double)loss * B, e->hits += correct, e->seen += B;
    if (r->steps_m.f && (step % r->cfg->log_every == 0 || force)) {
        pz_field f[] = {PZ_NUM("epoch", epoch + 1), PZ_NUM("step", step), PZ_NUM("loss", loss),
                        PZ_NUM("accuracy", (double)correct / ((double)B * pz_dataset_targets(&r->train))), PZ_NUM("lr", lr),
                        PZ_NUM("time", pz_now() - r->t0)};
        PZ_TRY(pz_metrics_write(&r->steps_m, f, (int)(sizeof f / sizeof *f)));
    }
    return PZ_OK;
}

/* a lagging pipeline: the last step's loss (the micro-batches in flight
 * finish first), before anything that reads the epoch's sums or the whole
 * state; the draining counts as training */
static pz_status settle(run *r, int epoch, epoch_sums *e, int force) {
    if (!r->owed) return PZ_OK;
    float loss;
    int correct;
    PZ_TRY(pz_pipe_drain(r->pipe, &loss, &correct));
    r->owed = 0;
    if (correct < 0) return pz_fail(PZ_ERR_STATE, "the pipeline owed step %lld's loss and had none", (long long)r->owed_step);
    return account(r, epoch, e, loss, correct, r->owed_B, r->owed_lr, r->owed_step, force);
}

/* --budget: after the step just taken (one pz_budget_due names), every
 * sender's measurements and the rungs chosen from them; a record per
 * boundary and direction into budget.jsonl */
static pz_status budget_round(run *r, int epoch) {
    const pz_budget *bg = &r->pc.budget;
    pz_budget_round br;
    PZ_TRY(pz_pipe_budget(r->pipe, r->global_step, &br));
    if (!r->budget_m.f) return PZ_OK;
    double total_fp32 = 0;
    for (int i = 0; i < br.n_items; i++) total_fp32 += 4.0 * (double)br.meas[i].elements;
    for (int i = 0; i < br.n_items; i++) {
        const pz_budget_meas *m = &br.meas[i];
        const int c = br.choice[i];
        char rungs[PZ_BUDGET_RUNGS * 48] = "";
        size_t used = 0;
        for (int k = 0; k < bg->n_rungs && used < sizeof rungs; k++)
            used += (size_t)snprintf(rungs + used, sizeof rungs - used, "%s%llu:%.3g", k ? " " : "", (unsigned long long)m->bytes[k], m->err[k]);
        pz_field f[] = {PZ_NUM("epoch", epoch + 1), PZ_NUM("step", r->global_step), PZ_NUM("boundary", i / 2 + 1),
                        PZ_STR("after", r->model.net.layers[r->pc.cuts[i / 2]].name), PZ_STR("direction", i % 2 ? "bwd" : "fwd"),
                        PZ_STR("codec", bg->rung[c].text), PZ_NUM("rung", c), PZ_NUM("bytes", (double)m->bytes[c]),
                        PZ_NUM("fp32_bytes", 4.0 * (double)m->elements), PZ_NUM("error", m->err[c]),
                        PZ_NUM("planned_bytes", br.planned), PZ_NUM("limit_bytes", br.limit),
                        PZ_NUM("planned_ratio", br.planned > 0 ? total_fp32 / br.planned : 0), PZ_NUM("met", br.met),
                        PZ_STR("rungs", rungs)};
        PZ_TRY(pz_metrics_write(&r->budget_m, f, (int)(sizeof f / sizeof *f)));
    }
    fflush(r->budget_m.f);
    return PZ_OK;
}

/* --micro-batches auto, after the first step (in one micro-batch): the
 * bytes per sample each boundary carried in it and the compute (the rate
 * clock's rate, or the FLOPs the stages did over the compute time they
 * measured) into the dry timing mode, for every count that splits the
 * batch; the pipeline goes on in the count with the least step, from a
 * snapshot of its state. */
static pz_status choose_micro_batches(run *r, int epoch, int B, int *chosen) {
    r->auto_micro = 0;
    PZ_TRY(pz_pipe_collect_stats(r->pipe));
    const int S = r->pc.n_stages;
    double fh[PZ_MAX_STAGES] = {0}, ff[PZ_MAX_STAGES] = {0}, fb[PZ_MAX_STAGES] = {0}, flops = 0, seconds = 0;
    for (int b = 0; b + 1 < S; b++) {
        const pz_boundary_stats bs = pz_pipe_boundary_stats(r->pipe, b);
        ff[b] = (double)bs.fwd_bytes / B, fb[b] = (double)bs.bwd_bytes / B;
    }
    for (int i = 0, from = 0; i < S; i++) {
        const int to = i == S - 1 ? r->model.net.n : r->pc.cuts[i] + 1;
        for (int l = from; l < to; l++) flops += 6.0 * (double)r->model.net.layers[l].macs * B;
        seconds += pz_pipe_stage_compute(r->pipe, i);
        from = to;
    }
    const double rate = r->pc.clock.kind == PZ_CLOCK_RATE ? r->pc.clock.rate : seconds > 0 ? flops / seconds : 0.0;
    if (!(rate > 0)) return pz_fail(PZ_ERR_STATE, "--micro-batches auto: the first step measured no compute to time the counts by");
    pz_timing_plan tp = pz_timing_plan_of(&r->pc, &r->model, B, rate, (pz_timing_bytes){fh, ff, fb});
    pz_timing_result best, one;
    int M = 1;
    tp.M = 1;
    PZ_TRY(pz_timing_of_plan(&tp, &one));
    PZ_TRY(pz_timing_best_micro(&tp, PZ_MAX_MICRO, r->cfg->activation_memory > 0 ? r->allowed : NULL, NULL, NULL, &M, &best));
    r->res->micro_batches = *chosen = M;
    r->res->auto_step_seconds[0] = best.step_s, r->res->auto_step_seconds[1] = one.step_s;
    if (M == r->pc.micro_batches) return PZ_OK;
    /* the same state, planned again in M micro-batches */
    pz_pipe_state snap;
    memset(&snap, 0, sizeof snap);
    pz_status st = pipe_leave(r);
    if (!st) pz_pipe_stop(r->pipe), st = pz_pipe_snapshot(r->pipe, &snap);
    if (st) {
        pz_pipe_state_free(&snap);
        return st;
    }
    pz_pipe_free(r->pipe);
    r->pipe = NULL;
    r->pc.micro_batches = M;
    r->pc.restore = &snap, r->pc.resume = NULL;
    st = pz_pipe_create(&r->pipe, &r->pc);
    r->pc.restore = NULL;
    pz_pipe_state_free(&snap);
    PZ_TRY(st);
    for (int i = 0; i < S && i < 16; i++) r->res->activation_bytes[i] = pz_pipe_activation_bytes(r->pipe, i);
    return pipe_enter(r, epoch);
}

static pz_status train_epoch(run *r, int epoch, epoch_sums *e) {
    const pz_run_plan *cfg = r->cfg;
    pz_loader_start_epoch(&r->loader, epoch);
    if (e->steps > 0) { /* resumed mid-epoch: its batches so far are done */
        pz_loader_skip(&r->loader, e->steps);
        if (r->rs.eval_pending && !epoch_last_step(r, e))
            PZ_TRY(eval_now(r, epoch, e, pz_schedule_lr(&r->sched, r->global_step - 1)));
    }
    int B;
    while (r->global_step < r->sched.total_steps && !r->res->stopped && (B = pz_loader_next(&r->loader)) > 0) {
        const float lr = pz_schedule_lr(&r->sched, r->global_step);
        int correct = 0;
        float loss;
        PZ_TRY(pz_pipe_train_step(r->pipe, r->loader.x, r->loader.y, r->loader.ids, B, lr, &loss, &correct));
        r->samples += B, r->samples_here += B;
        e->steps++, r->global_step++;
        const int last = epoch_last_step(r, e);
        if (!r->pipeline || !pz_pipe_lag(r->pipe)) {
            PZ_TRY(account(r, epoch, e, loss, correct, B, lr, r->global_step, last));
        } else { /* the loss is the step before's */
            if (r->owed && correct >= 0) PZ_TRY(account(r, epoch, e, loss, correct, r->owed_B, r->owed_lr, r->owed_step, 0));
            r->owed = 1, r->owed_B = B, r->owed_lr = lr, r->owed_step = r->global_step;
            if (last) PZ_TRY(settle(r, epoch, e, 1));
        }
        int chosen = 0;
        if (r->auto_micro) { /* the pipeline is planned again from its whole state */
            PZ_TRY(settle(r, epoch, e, 0));
            PZ_TRY(choose_micro_batches(r, epoch, B, &chosen));
        }
        /* --budget: choose the rungs again (not after the run's last step: nothing would use them) */
        if (pz_budget_due(&r->pc.budget, r->global_step) && r->global_step < r->sched.total_steps) PZ_TRY(budget_round(r, epoch));
        const double now = pz_now();
        pz_progress p = progress(r, epoch, e->steps, e->loss_sum, e->hits, e->seen, lr, now);
        if (chosen) {
            p.micro_batches_chosen = chosen;
            p.auto_step_seconds[0] = r->res->auto_step_seconds[0], p.auto_step_seconds[1] = r->res->auto_step_seconds[1];
        }
        if (r->on_progress && r->on_progress(&p, r->user)) r->res->stopped = 1;
        const int eval_due = cfg->eval_every > 0 && r->global_step % cfg->eval_every == 0 && !last;
        /* a stop (SIGTERM, Ctrl-C) ends the run after this step: its state is saved, an evaluation due is left to the resume */
        if (r->res->stopped) {
            PZ_TRY(settle(r, epoch, e, 0));
            if (r->out_dir) PZ_TRY(checkpoint_mid(r, epoch, e, eval_due));
            break;
        }
        /* --turn K: every K steps (not after the run's last) the next client has its turn */
        if (r->turn > 0 && r->global_step % r->turn == 0 && r->global_step < r->sched.total_steps) PZ_TRY(next_turn(r, epoch));
        if (eval_due) PZ_TRY(eval_now(r, epoch, e, lr));
        /* --checkpoint-every: the epoch's last step is checkpointed with the epoch */
        if (r->out_dir && !last && (r->res->stopped || (cfg->checkpoint_every > 0 && r->global_step % cfg->checkpoint_every == 0))) {
            PZ_TRY(settle(r, epoch, e, 0));
            PZ_TRY(checkpoint_mid(r, epoch, e, 0));
        }
    }
    return settle(r, epoch, e, 1); /* the loader ran out, or a stop */
}

static pz_status write_epoch(run *r, int epoch, const epoch_sums *e, const eval_result *v, double train_s, double te,
                             double now) {
    const pz_run_result *res = r->res;
    pz_field f[20];
    int nf = 0;
    f[nf++] = PZ_NUM("epoch", epoch + 1);
    f[nf++] = PZ_NUM("train_loss", e->loss_sum / e->seen);
    f[nf++] = PZ_NUM("train_accuracy", (double)e->hits / ((double)e->seen * pz_dataset_targets(&r->train)));
    f[nf++] = PZ_NUM("test_loss", v->loss);
    f[nf++] = PZ_NUM("test_accuracy", v->acc);
    /* a language model: bits per byte of held-out text, loss / ln 2 / bytes per token */
    if (r->train.tokens) f[nf++] = PZ_NUM("test_bits_per_byte", bits_per_byte(r, v->loss));
    if (r->pipeline && r->train.tokens && v->loss_c >= 0) f[nf++] = PZ_NUM("test_bits_per_byte_compressed", bits_per_byte(r, v->loss_c));
    if (r->pipeline) {
        f[nf++] = PZ_NUM("test_loss_compressed", v->loss_c);
        f[nf++] = PZ_NUM("test_accuracy_compressed", v->acc_c);
        f[nf++] = PZ_NUM("fwd_bytes", res->fwd_bytes);
        f[nf++] = PZ_NUM("bwd_bytes", res->bwd_bytes);
        f[nf++] = PZ_NUM("fp32_bytes", res->fp32_bytes);
        f[nf++] = PZ_NUM("eval_bytes", res->eval_bytes);
        f[nf++] = PZ_NUM("link_bytes", res->link_bytes);
        f[nf++] = PZ_NUM("emulated_time", r->emulated);
    }
    f[nf++] = PZ_NUM("lr", pz_schedule_lr(&r->sched, r->global_step - 1));
    f[nf++] = PZ_NUM("train_time", train_s);
    f[nf++] = PZ_NUM("epoch_time", now - te);
    f[nf++] = PZ_NUM("time", now - r->t0);
    PZ_TRY(pz_metrics_write(&r->epochs_m, f, nf));
    fflush(r->epochs_m.f);
    if (r->steps_m.f) fflush(r->steps_m.f);
    if (r->bounds_m.f) fflush(r->bounds_m.f);
    return PZ_OK;
}

/* every stage's state (mid-epoch: and the boundaries' counts so far, with
 * the totals they give in the record), then the record naming it; the
 * previous checkpoint goes after */
static pz_status write_checkpoint(run *r, run_state *ns) {
    char d[4300];
    ns->global_step = r->global_step, ns->samples = r->samples, ns->best = r->res->best_test_accuracy;
    run_state_dir(d, sizeof d, r->out_dir, ns);
    PZ_TRY(pz_mkdir_p(d));
    if (ns->step_in_epoch > 0 && r->pipeline) {
        char tp[4400];
        double tot[5];
        snprintf(tp, sizeof tp, "%s/traffic.jsonl", d);
        PZ_TRY(pz_traffic_checkpoint(&r->traffic, r->pipe, tp, tot));
        ns->fwd_bytes = tot[0], ns->bwd_bytes = tot[1], ns->fp32_bytes = tot[2], ns->eval_bytes = tot[3], ns->link_bytes = tot[4];
    }
    PZ_TRY(pz_pipe_save(r->pipe, d));
    ns->wall = pz_now() - r->t0;
    snprintf(ns->fingerprint, sizeof ns->fingerprint, "%s", r->fp);
    if (r->cfg->micro_batches == 0 && !r->auto_micro) ns->micro_batches = r->pc.micro_batches; /* auto: the count chosen */
    PZ_TRY(run_state_write(r->out_dir, ns));
    if (r->ckpt[0] && strcmp(r->ckpt, d)) run_checkpoint_remove(r->ckpt);
    snprintf(r->ckpt, sizeof r->ckpt, "%s", d);
    return PZ_OK;
}

static pz_status checkpoint(run *r, int epoch) {
    const pz_run_result *res = r->res;
    run_state ns = {.epoch = epoch + 1, .emulated = r->emulated,
                    .fwd_bytes = (double)res->fwd_bytes, .bwd_bytes = (double)res->bwd_bytes,
                    .fp32_bytes = (double)res->fp32_bytes, .eval_bytes = (double)res->eval_bytes,
                    .link_bytes = (double)res->link_bytes};
    return write_checkpoint(r, &ns);
}

/* Mid-epoch (--checkpoint-every, or a stop): the epoch's sums and the
 * emulated time so far go into the record; the step and evaluation records
 * are flushed. */
static pz_status checkpoint_mid(run *r, int epoch, const epoch_sums *e, int eval_pending) {
    run_state ns = {.epoch = epoch, .step_in_epoch = e->steps, .ep_hits = e->hits, .ep_seen = e->seen,
                    .ep_loss_sum = e->loss_sum, .ep_eval_seconds = e->eval_seconds, .eval_pending = eval_pending,
                    .emulated = r->emulated + (r->pipeline ? pz_pipe_clock(r->pipe) - r->clock0 : 0.0),
                    .fwd_bytes = r->traffic.fwd, .bwd_bytes = r->traffic.bwd, .fp32_bytes = r->traffic.fp32,
                    .eval_bytes = r->traffic.eval, .link_bytes = r->traffic.link};
    if (r->steps_m.f) fflush(r->steps_m.f);
    if (r->evals_m.f) fflush(r->evals_m.f);
    return write_checkpoint(r, &ns);
}

static pz_status epoch_loop(run *r) {
    const pz_run_plan *cfg = r->cfg;
    pz_run_result *res = r->res;
    for (int epoch = r->rs.epoch; epoch < r->epochs && !res->stopped; epoch++) {
        const double te = pz_now();
        r->cur_epoch = epoch, r->epoch_t0 = te, r->epoch_eval = 0, r->in_epoch = 1;
        if (cfg->aqsgd_warmup > 0 && (epoch == r->rs.epoch || epoch == cfg->aqsgd_warmup))
            PZ_TRY(pz_pipe_set_warmup(r->pipe, epoch < cfg->aqsgd_warmup));
        r->clock0 = r->pipeline ? pz_pipe_clock(r->pipe) : 0.0;
        epoch_sums e = {0};
        if (epoch == r->rs.epoch && r->rs.step_in_epoch > 0) /* resumed mid-epoch: its sums so far */
            e = (epoch_sums){.loss_sum = r->rs.ep_loss_sum, .hits = r->rs.ep_hits, .seen = r->rs.ep_seen,
                             .steps = r->rs.step_in_epoch, .eval_seconds = r->rs.ep_eval_seconds};
        PZ_TRY(train_epoch(r, epoch, &e));
        if (res->stopped) break;
        const double train_seconds = pz_now() - te - e.eval_seconds;
        r->train_seconds += train_seconds;
        r->in_epoch = 0; /* the epoch's training is over: its clock stops */
        if (r->pipeline) r->emulated += pz_pipe_clock(r->pipe) - r->clock0;
        eval_result v;
        PZ_TRY(evaluate(r, &v));
        const double now = pz_now();
        res->epochs_done = epoch + 1;
        res->final_train_loss = e.loss_sum / e.seen;
        res->final_train_accuracy = (double)e.hits / ((double)e.seen * pz_dataset_targets(&r->train));
        res->final_test_loss = v.loss;
        res->final_test_accuracy = v.acc;
        if (r->train.tokens)
            res->final_test_bits_per_byte = bits_per_byte(r, v.loss), res->final_test_bits_per_byte_compressed = bits_per_byte(r, v.loss_c);
        if (v.acc > res->best_test_accuracy) res->best_test_accuracy = v.acc;
        res->emulated_seconds = r->emulated;
        if (r->pipeline) PZ_TRY(pz_traffic_epoch(&r->traffic, r->pipe, epoch + 1, &r->model.net, &r->pc, &r->bounds_m, res));
        if (r->on_progress) {
            pz_progress p = progress(r, epoch, e.steps, e.loss_sum, e.hits, e.seen, pz_schedule_lr(&r->sched, r->global_step - 1), now);
            p.end_of_epoch = 1, p.epoch_seconds = now - te;
            progress_eval(&p, r, &v);
            if (r->on_progress(&p, r->user)) res->stopped = 1;
        }
        if (r->epochs_m.f) PZ_TRY(write_epoch(r, epoch, &e, &v, train_seconds, te, now));
        PZ_TRY(write_eval(r, epoch, &v, r->emulated, (double)res->fwd_bytes, (double)res->bwd_bytes));
        if (r->out_dir) PZ_TRY(checkpoint(r, epoch));
        if (r->turn < 0 && epoch + 1 < r->epochs && !res->stopped) PZ_TRY(next_turn(r, epoch + 1));
    }
    return PZ_OK;
}

/* -1 in pz_run_result means "not measured": null in the file */
static double or_null(double v) { return v < 0 ? NAN : v; }

static pz_status write_summary(const run *r) {
    const pz_run_result *res = r->res;
    char acts[16 * 24] = ""; /* per stage, "a,b,c" */
    for (int i = 0, n = 0; i < res->n_stages && i < 16; i++)
        n += snprintf(acts + n, sizeof acts - (size_t)n, "%s%lld", i ? "," : "", (long long)res->activation_bytes[i]);
    pz_field f[] = {PZ_STR("status", res->stopped ? "stopped" : "finished"), PZ_NUM("epochs", res->epochs_done),
                    PZ_NUM("final_test_accuracy", res->final_test_accuracy),
                    PZ_NUM("best_test_accuracy", res->best_test_accuracy),
                    PZ_NUM("final_test_loss", res->final_test_loss),
                    PZ_NUM("final_train_loss", res->final_train_loss),
                    PZ_NUM("final_train_accuracy", res->final_train_accuracy),
                    PZ_NUM("wall_seconds", res->wall_seconds),
                    PZ_NUM("samples_per_second", res->samples_per_second),
                    PZ_NUM("train_samples_per_second", r->train_seconds > 0 ? r->samples_here / r->train_seconds : NAN),
                    PZ_NUM("n_params", res->n_params), PZ_NUM("threads", pz_get_threads()),
                    PZ_NUM("stages", res->n_stages),
                    PZ_NUM("final_test_accuracy_compressed", or_null(res->final_test_accuracy_compressed)),
                    PZ_NUM("fwd_bytes", res->fwd_bytes), PZ_NUM("bwd_bytes", res->bwd_bytes),
                    PZ_NUM("fp32_bytes", res->fp32_bytes), PZ_NUM("eval_bytes", res->eval_bytes),
                    PZ_NUM("link_bytes", res->link_bytes), PZ_NUM("emulated_seconds", res->n_stages > 1 ? or_null(res->emulated_seconds) : NAN),
                    PZ_NUM("resumed_from", res->resumed_from),
                    PZ_NUM("final_test_loss_compressed", or_null(res->final_test_loss_compressed)),
                    PZ_NUM("tokens_per_sample", res->tokens > 0 ? (double)res->tokens : NAN),
                    PZ_NUM("final_test_bits_per_byte", or_null(res->final_test_bits_per_byte)),
                    PZ_NUM("final_test_bits_per_byte_compressed", or_null(res->final_test_bits_per_byte_compressed)),
                    PZ_NUM("steps", (double)res->steps_done), PZ_NUM("resumed_from_step", (double)res->resumed_from_step),
                    PZ_STR("pipe_schedule", run_plan_str(r->cfg, PZ_SET_PIPE_SCHEDULE)), PZ_STR("activation_bytes", acts),
                    PZ_NUM("micro_batches", res->micro_batches)};
    return run_write_json(r->out_dir, "summary.json", f, (int)(sizeof f / sizeof *f));
}

/* A run resumed with every epoch done (killed before its summary): the
 * results of its last epoch record. */
static void last_epoch_results(run *r) {
    pz_run_result *res = r->res;
    char path[4300];
    snprintf(path, sizeof path, "%s/epochs.jsonl", r->out_dir);
    char *text = pz_slurp(path);
    if (!text) return;
    char *last = NULL;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
        if (*line == '{') last = line;
    double v;
    if (last) {
        if (pz_json_num(last, "train_loss", &v)) res->final_train_loss = v;
        if (pz_json_num(last, "train_accuracy", &v)) res->final_train_accuracy = v;
        if (pz_json_num(last, "test_loss", &v)) res->final_test_loss = v;
        if (pz_json_num(last, "test_accuracy", &v)) res->final_test_accuracy = v;
        if (pz_json_num(last, "test_accuracy_compressed", &v)) res->final_test_accuracy_compressed = v;
        if (pz_json_num(last, "test_loss_compressed", &v)) res->final_test_loss_compressed = v;
        if (pz_json_num(last, "test_bits_per_byte", &v)) res->final_test_bits_per_byte = v;
        if (pz_json_num(last, "test_bits_per_byte_compressed", &v)) res->final_test_bits_per_byte_compressed = v;
    }
    free(text);
    res->fwd_bytes = (uint64_t)r->rs.fwd_bytes, res->bwd_bytes = (uint64_t)r->rs.bwd_bytes;
    res->fp32_bytes = (uint64_t)r->rs.fp32_bytes, res->eval_bytes = (uint64_t)r->rs.eval_bytes;
    res->link_bytes = (uint64_t)r->rs.link_bytes, res->emulated_seconds = r->rs.emulated;
    fprintf(stderr, "pipezip train: every epoch of %s was done; its summary is written now\n", r->out_dir);
}

pz_status pz_run_train(const pz_run_plan *cfg, pz_run_result *res, pz_progress_fn on_progress, void *user) {
    if (!cfg || !res) return pz_fail(PZ_ERR_ARG, "pz_run_train: no %s", cfg ? "result to fill" : "plan (create one with pz_run_plan_create)");
    memset(res, 0, sizeof *res);
    run *r = calloc(1, sizeof *r);
    if (!r) return pz_fail(PZ_ERR_NOMEM, "out of memory starting a run");
    r->cfg = cfg, r->res = res, r->on_progress = on_progress, r->user = user;
    pz_status st = start(r);
    if (!st && r->rank > 0) st = pz_pipe_wait(r->pipe); /* a process without the driver: serve until it stops */
    else if (!st) {
        if (RESUME(cfg) && r->rs.epoch >= r->epochs && r->out_dir) last_epoch_results(r);
        st = epoch_loop(r);
        if (!st && r->link->session && !res->stopped) st = pz_pipe_hand_on(r->pipe); /* for the next client */
        res->steps_done = r->global_step;
        res->wall_seconds = pz_now() - r->t0;
        res->samples_per_second = res->wall_seconds > 0 ? r->samples / res->wall_seconds : 0;
        res->train_samples_per_second = r->train_seconds > 0 ? r->samples_here / r->train_seconds : 0;
        if (!st && r->out_dir) st = write_summary(r);
    }
    /* cleaning up may fail quietly (a dead peer cannot be told to stop): keep the reason */
    char why[1024];
    snprintf(why, sizeof why, "%s", st ? pz_last_error() : "");
    pz_pipe_free(r->pipe);
    if (st) pz_fail(st, "%s", why);
    pz_metrics_close(&r->steps_m);
    pz_metrics_close(&r->epochs_m);
    pz_metrics_close(&r->bounds_m);
    pz_metrics_close(&r->evals_m);
    pz_metrics_close(&r->budget_m);
    pz_loader_free(&r->loader);
    pz_model_free(&r->model);
    pz_dataset_free(&r->train);
    pz_dataset_free(&r->test);
    pz_tokenizer_free(&r->tok);
    free(r);
    return st;
}
