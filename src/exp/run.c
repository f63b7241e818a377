/* run.c — the training run behind `pipezip train`: load data, build the
 * model, loop over epochs (train, evaluate on the test set), write step and
 * epoch metrics and a summary into the run directory. */
#include "run.h"
#include "metrics.h"
#include "nn/nn.h"
#include "data/data.h"
#include "kernels/kernels.h"
#include "pipe/pipe.h"
#include "pipezip/codec.h"
#include "link/link.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void pz_run_config_default(pz_run_config *c) {
    memset(c, 0, sizeof *c);
    c->model = "resnet8";
    c->data = "fashion-mnist";
    c->epochs = 10;
    c->batch = 128;
    c->optimizer = "sgd";
    c->lr = 0.1f;
    c->momentum = 0.9f;
    c->weight_decay = 5e-4f;
    c->nesterov = 1;
    c->schedule = "onecycle";
    c->warmup_epochs = 0.0f;
    c->augment_pad = -1;  /* auto: by dataset */
    c->augment_flip = -1;
    c->seed = 1;
    c->threads = 0;
    c->metrics_format = "jsonl";
    c->log_every = 10;
    c->stages = 0;   /* auto: Paper A's 4 stages (resnets: a cut after each residual group) */
    c->fwd = "q4";   /* safe on Fashion-MNIST: within 0.1 point of fp32 with 5.3x fewer bytes (README) */
    c->bwd = "q8";
    c->eval_compress = "both";
    c->micro_batches = 1;
    c->link = "inproc";
    c->timeout = 60.0;
}

pz_status pz_run_config_check(const pz_run_config *c) {
    int known = 0;
    for (const char *const *p = pz_model_preset_names(); *p; p++) known |= !strcmp(*p, c->model);
    if (!known) return pz_fail(PZ_ERR_ARG, "--model '%s' is not a preset (expected mlp, lenet5, resnet8 or resnet20)", c->model);
    if (c->epochs < 1) return pz_fail(PZ_ERR_ARG, "--epochs must be at least 1, got %d", c->epochs);
    if (c->batch < 1 || c->batch > 65536) return pz_fail(PZ_ERR_ARG, "--batch must be in 1..65536, got %d", c->batch);
    if (strcmp(c->optimizer, "sgd") && strcmp(c->optimizer, "adamw"))
        return pz_fail(PZ_ERR_ARG, "--optimizer '%s' (expected sgd or adamw)", c->optimizer);
    if (!(c->lr > 0.0f) || !isfinite(c->lr)) return pz_fail(PZ_ERR_ARG, "--lr must be a positive number, got %g", c->lr);
    if (!(c->momentum >= 0.0f && c->momentum < 1.0f)) return pz_fail(PZ_ERR_ARG, "--momentum must be in [0, 1), got %g", c->momentum);
    if (!(c->weight_decay >= 0.0f) || !isfinite(c->weight_decay))
        return pz_fail(PZ_ERR_ARG, "--weight-decay must be >= 0, got %g", c->weight_decay);
    if (c->nesterov && c->momentum == 0.0f && !strcmp(c->optimizer, "sgd"))
        return pz_fail(PZ_ERR_ARG, "--nesterov needs --momentum > 0");
    if (!(c->warmup_epochs >= 0.0f) || c->warmup_epochs > c->epochs)
        return pz_fail(PZ_ERR_ARG, "--warmup must be in [0, epochs], got %g", c->warmup_epochs);
    pz_schedule s;
    PZ_TRY(pz_schedule_parse(&s, c->schedule));
    if (c->augment_pad < -1 || c->augment_pad > 16) return pz_fail(PZ_ERR_ARG, "crop padding must be in 0..16, got %d", c->augment_pad);
    if (strcmp(c->metrics_format, "jsonl") && strcmp(c->metrics_format, "csv"))
        return pz_fail(PZ_ERR_ARG, "--metrics '%s' (expected jsonl or csv)", c->metrics_format);
    if (c->log_every < 1) return pz_fail(PZ_ERR_ARG, "--log-every must be at least 1, got %d", c->log_every);
    if (c->threads > 1024) return pz_fail(PZ_ERR_ARG, "--threads %d is too many", c->threads);
    if (c->stages < 0 || c->stages > PZ_MAX_STAGES) return pz_fail(PZ_ERR_ARG, "--stages must be in 1..%d, got %d", PZ_MAX_STAGES, c->stages);
    if (strcmp(c->eval_compress, "both") && strcmp(c->eval_compress, "on") && strcmp(c->eval_compress, "off"))
        return pz_fail(PZ_ERR_ARG, "--eval-compress '%s' (expected on, off or both)", c->eval_compress);
    char specs[PZ_MAX_STAGES][PZ_SPEC_MAX];
    PZ_TRY(pz_codec_parse_list(c->fwd, PZ_MAX_STAGES - 1, specs, "--fwd"));
    PZ_TRY(pz_codec_parse_list(c->bwd, PZ_MAX_STAGES - 1, specs, "--bwd"));
    if (c->micro_batches < 1 || c->micro_batches > PZ_MAX_STAGES || c->micro_batches > c->batch)
        return pz_fail(PZ_ERR_ARG, "--micro-batches must be in 1..%d and at most --batch, got %d", PZ_MAX_STAGES, c->micro_batches);
    if (c->aqsgd_warmup < 0 || c->aqsgd_warmup > c->epochs) return pz_fail(PZ_ERR_ARG, "--aqsgd-warmup must be in 0..epochs, got %d", c->aqsgd_warmup);
    if (strcmp(c->link, "inproc") && strcmp(c->link, "mpi") && strcmp(c->link, "zmq"))
        return pz_fail(PZ_ERR_ARG, "--link '%s' (expected inproc, mpi or zmq)", c->link);
    if (!strcmp(c->link, "zmq") && !(c->connect && *c->connect)) return pz_fail(PZ_ERR_ARG, "--link zmq needs --connect tcp://HOST:PORT");
    if (c->shard_count < 0 || (c->shard_count > 0 && (c->shard_index < 0 || c->shard_index >= c->shard_count)))
        return pz_fail(PZ_ERR_ARG, "--shard K/N: expected 1 <= K <= N");
    if (!(c->timeout > 0) || c->timeout > 1e6) return pz_fail(PZ_ERR_ARG, "--timeout must be a positive number of seconds");
    double v;
    if (c->link_bandwidth) PZ_TRY(pz_parse_bandwidth(c->link_bandwidth, &v));
    if (c->link_latency) PZ_TRY(pz_parse_duration(c->link_latency, &v));
    return PZ_OK;
}

static pz_status write_json(const char *dir, const char *name, const pz_field *f, int n) {
    char path[4096], buf[16384];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int len = pz_fields_to_json(buf, sizeof buf - 1, f, n);
    if (len >= (int)sizeof buf - 1) return pz_fail(PZ_ERR_ARG, "'%s' too large", path);
    buf[len++] = '\n';
    return pz_write_file_atomic(path, buf, (size_t)len);
}

static int config_fields(const pz_run_config *c, pz_field *f, char *seed_buf) {
    int n = 0;
    snprintf(seed_buf, 32, "%llu", (unsigned long long)c->seed);
    f[n++] = PZ_STR("model", c->model);
    f[n++] = PZ_STR("data", c->data);
    f[n++] = PZ_STR("data_dir", c->data_dir ? c->data_dir : "");
    f[n++] = PZ_NUM("limit_train", c->limit_train);
    f[n++] = PZ_NUM("limit_test", c->limit_test);
    f[n++] = PZ_NUM("epochs", c->epochs);
    f[n++] = PZ_NUM("batch", c->batch);
    f[n++] = PZ_STR("optimizer", c->optimizer);
    f[n++] = PZ_NUM("lr", c->lr);
    f[n++] = PZ_NUM("momentum", c->momentum);
    f[n++] = PZ_NUM("weight_decay", c->weight_decay);
    f[n++] = PZ_NUM("nesterov", c->nesterov);
    f[n++] = PZ_STR("schedule", c->schedule);
    f[n++] = PZ_NUM("warmup_epochs", c->warmup_epochs);
    const pz_augment aug = pz_default_augment(c->data, c->augment_pad, c->augment_flip);
    f[n++] = PZ_NUM("augment_pad", aug.pad);
    f[n++] = PZ_NUM("augment_flip", aug.flip);
    f[n++] = PZ_STR("seed", seed_buf);
    f[n++] = PZ_NUM("threads", pz_get_threads());
    f[n++] = PZ_STR("version", pz_version());
    f[n++] = PZ_NUM("stages", c->stages);
    f[n++] = PZ_STR("cuts", c->cuts ? c->cuts : "");
    f[n++] = PZ_STR("fwd", c->fwd);
    f[n++] = PZ_STR("bwd", c->bwd);
    f[n++] = PZ_STR("eval_compress", c->eval_compress);
    f[n++] = PZ_NUM("micro_batches", c->micro_batches);
    f[n++] = PZ_NUM("aqsgd_warmup", c->aqsgd_warmup);
    f[n++] = PZ_STR("link", c->link);
    f[n++] = PZ_STR("link_bandwidth", c->link_bandwidth ? c->link_bandwidth : "");
    f[n++] = PZ_STR("link_latency", c->link_latency ? c->link_latency : "");
    f[n++] = PZ_NUM("link_realtime", c->link_realtime);
    return n;
}

/* ---- checkpoints ------------------------------------------------------------
 * OUT/checkpoint/epoch-E/stage-<i>.bin, then OUT/checkpoint/latest.json
 * (atomic) naming E and the driver's counters; the previous epoch's folder
 * goes after. A run resumed from OUT continues after epoch E. */
typedef struct {
    int epoch;
    int64_t global_step, samples;
    double best, wall, emulated;
    double fwd_bytes, bwd_bytes, fp32_bytes, eval_bytes, link_bytes;
    char fingerprint[1024];
} run_state;

static void fingerprint(const pz_run_config *c, char *out, size_t cap) {
    snprintf(out, cap, "model=%s data=%s limit=%lld/%lld epochs=%d batch=%d opt=%s lr=%g mom=%g wd=%g nest=%d sched=%s warm=%g seed=%llu stages=%d cuts=%s fwd=%s bwd=%s mb=%d",
             c->model, c->data, (long long)c->limit_train, (long long)c->limit_test, c->epochs, c->batch, c->optimizer, c->lr,
             c->momentum, c->weight_decay, c->nesterov, c->schedule, c->warmup_epochs, (unsigned long long)c->seed,
             c->stages, c->cuts ? c->cuts : "", c->fwd, c->bwd, c->micro_batches);
}

static pz_status write_state(const char *dir, const run_state *s) {
    char path[4200], buf[4096];
    snprintf(path, sizeof path, "%s/checkpoint/latest.json", dir);
    const int n = snprintf(buf, sizeof buf,
                           "{\"epoch\": %d, \"global_step\": %lld, \"samples\": %lld, \"best\": %.17g, \"wall\": %.17g, "
                           "\"emulated\": %.17g, \"fwd_bytes\": %.17g, \"bwd_bytes\": %.17g, \"fp32_bytes\": %.17g, "
                           "\"eval_bytes\": %.17g, \"link_bytes\": %.17g, \"fingerprint\": \"%s\"}\n",
                           s->epoch, (long long)s->global_step, (long long)s->samples, s->best, s->wall, s->emulated,
                           s->fwd_bytes, s->bwd_bytes, s->fp32_bytes, s->eval_bytes, s->link_bytes, s->fingerprint);
    return pz_write_file_atomic(path, buf, (size_t)n);
}

static pz_status read_state(const char *dir, run_state *s) {
    char path[4200];
    snprintf(path, sizeof path, "%s/checkpoint/latest.json", dir);
    if (access(path, F_OK) != 0) return pz_fail(PZ_ERR_IO, "--resume %s: no checkpoint there (%s is missing)", dir, path);
    char *t;
    PZ_TRY(pz_read_text(path, &t, NULL));
    long long gs, sm;
    const int got = sscanf(t,
                           "{\"epoch\": %d, \"global_step\": %lld, \"samples\": %lld, \"best\": %lg, \"wall\": %lg, "
                           "\"emulated\": %lg, \"fwd_bytes\": %lg, \"bwd_bytes\": %lg, \"fp32_bytes\": %lg, "
                           "\"eval_bytes\": %lg, \"link_bytes\": %lg, \"fingerprint\": \"%1000[^\"]\"",
                           &s->epoch, &gs, &sm, &s->best, &s->wall, &s->emulated, &s->fwd_bytes, &s->bwd_bytes,
                           &s->fp32_bytes, &s->eval_bytes, &s->link_bytes, s->fingerprint);
    free(t);
    if (got != 12 || s->epoch < 1) return pz_fail(PZ_ERR_FORMAT, "'%s' is not a pipezip checkpoint record", path);
    s->global_step = gs, s->samples = sm;
    return PZ_OK;
}

static void ckpt_dir(char *out, size_t cap, const char *dir, int epoch) {
    snprintf(out, cap, "%s/checkpoint/epoch-%d", dir, epoch);
}

static void remove_dir_files(const char *d) {
    for (int i = 0; i < PZ_MAX_STAGES; i++) {
        char f[4300];
        snprintf(f, sizeof f, "%s/stage-%d.bin", d, i);
        unlink(f);
    }
    rmdir(d);
}

/* ---- the pipeline's setup ---------------------------------------------------- */
static pz_status pipe_config(const pz_run_config *cfg, const pz_model *model, const pz_dataset *train, pz_pipe_config *pc,
                             int mpi_size) {
    memset(pc, 0, sizeof *pc);
    pc->model = cfg->model;
    pc->in = (pz_shape){train->c, train->h, train->w};
    pc->n_classes = train->n_classes;
    pc->batch_max = cfg->batch;
    pc->seed = cfg->seed;
    pc->optimizer = !strcmp(cfg->optimizer, "adamw") ? PZ_OPT_ADAMW : PZ_OPT_SGD;
    pc->momentum = cfg->momentum, pc->weight_decay = cfg->weight_decay, pc->nesterov = cfg->nesterov;
    pc->micro_batches = cfg->micro_batches;
    pc->max_samples = (uint32_t)train->n;
    pc->timeout_s = cfg->timeout;
    int stages = cfg->stages;
    const char *cuts = cfg->cuts;
    if (stages == 0 && !(cuts && *cuts)) { /* auto */
        if (mpi_size > 0) stages = mpi_size;
        else cuts = "layer1,layer2,layer3"; /* Paper A's layout (auto is a pipeline only for resnets) */
    }
    PZ_TRY(pz_pipe_resolve_cuts(model, cuts, stages, pc));
    if (mpi_size > 0 && pc->n_stages != mpi_size)
        return pz_fail(PZ_ERR_ARG, "--link mpi: %d stages need %d ranks, mpirun started %d (mpirun -np %d ...)", pc->n_stages,
                       pc->n_stages, mpi_size, pc->n_stages);
    PZ_TRY(pz_codec_parse_list(cfg->fwd, pc->n_stages - 1, pc->fwd, "--fwd"));
    PZ_TRY(pz_codec_parse_list(cfg->bwd, pc->n_stages - 1, pc->bwd, "--bwd"));
    if (cfg->link_bandwidth) PZ_TRY(pz_parse_bandwidth(cfg->link_bandwidth, &pc->emu.bandwidth));
    if (cfg->link_latency) PZ_TRY(pz_parse_duration(cfg->link_latency, &pc->emu.latency));
    pc->realtime = cfg->link_realtime;
    return PZ_OK;
}

int pz_run_uses_pipeline(const pz_run_config *cfg) {
    return (cfg->stages == 0 && !strncmp(cfg->model, "resnet", 6)) || cfg->stages > 1 || (cfg->cuts && *cfg->cuts) ||
           strcmp(cfg->link, "inproc") || cfg->micro_batches > 1 || cfg->link_bandwidth || cfg->link_latency;
}

pz_status pz_run_train(const pz_run_config *cfg, pz_run_result *res, pz_progress_fn on_progress, void *user) {
    memset(res, 0, sizeof *res);
    PZ_TRY(pz_run_config_check(cfg));
    pz_set_threads(cfg->threads);

    /* Open MPI: rank r runs stage r; rank 0 also drives (data, metrics, files) */
    int rank = 0, mpi_size = 0;
    if (!strcmp(cfg->link, "mpi")) PZ_TRY(pz_mpi_init(NULL, NULL, &rank, &mpi_size));

    run_state rs = {0};
    char fp[1024];
    fingerprint(cfg, fp, sizeof fp);
    if (cfg->resume) {
        PZ_TRY(read_state(cfg->resume, &rs));
        if (strcmp(rs.fingerprint, fp))
            return pz_fail(PZ_ERR_ARG, "--resume %s: that run was started with other settings:\n  it:   %s\n  this: %s", cfg->resume,
                           rs.fingerprint, fp);
        if (rs.epoch >= cfg->epochs) return pz_fail(PZ_ERR_ARG, "--resume %s: all %d epochs are already done", cfg->resume, cfg->epochs);
        res->resumed_from = rs.epoch;
    }
    const char *out_dir = cfg->resume ? cfg->resume : cfg->out_dir;
    if (rank > 0) out_dir = NULL; /* the driver's rank writes the run directory */
    char resume_dir[4200];
    if (cfg->resume) ckpt_dir(resume_dir, sizeof resume_dir, cfg->resume, rs.epoch);

    pz_dataset train, test;
    PZ_TRY(pz_load_dataset(&train, &test, cfg->data, cfg->data_dir, cfg->seed));
    if (cfg->limit_train > 0) pz_dataset_truncate(&train, cfg->limit_train);
    if (cfg->limit_test > 0) pz_dataset_truncate(&test, cfg->limit_test);
    if (cfg->shard_count > 0) {
        pz_status s2 = pz_dataset_shard(&train, cfg->shard_index, cfg->shard_count);
        if (s2) {
            pz_dataset_free(&train), pz_dataset_free(&test);
            return s2;
        }
    }

    pz_model model;
    pz_optim opt = {0};
    pz_loader loader = {0};
    pz_metrics steps_m = {0}, epochs_m = {0}, bounds_m = {0};
    /* pipelined, the stages hold the model; this copy only names layers and cuts */
    pz_status st = pz_model_preset_range(&model, cfg->model, (pz_shape){train.c, train.h, train.w}, train.n_classes,
                                         cfg->batch, cfg->seed, 0, pz_run_uses_pipeline(cfg) ? 0 : 1 << 30);
    if (st) {
        pz_dataset_free(&train), pz_dataset_free(&test);
        return st;
    }
    res->n_params = model.n_params;
    res->n_stages = 1;
    res->final_test_accuracy_compressed = -1;
    pz_pipe *pipe = NULL;
    pz_pipe_config pc;
    if (pz_run_uses_pipeline(cfg)) {
        st = pipe_config(cfg, &model, &train, &pc, mpi_size);
        if (!st && cfg->resume) pc.resume = resume_dir;
        if (!st && mpi_size) {
            pc.local_set = 1, pc.first_local = pc.last_local = rank;
            char name[64];
            snprintf(name, sizeof name, "stage %d <-> stage %d (rank %d)", rank - 1, rank, rank - 1);
            if (rank > 0) st = pz_link_mpi(&pc.prev_link, rank - 1, name);
            snprintf(name, sizeof name, "stage %d <-> stage %d (rank %d)", rank, rank + 1, rank + 1);
            if (!st && rank < mpi_size - 1) st = pz_link_mpi(&pc.next_link, rank + 1, name);
        } else if (!st && !strcmp(cfg->link, "zmq")) {
            pc.local_set = 1, pc.first_local = pc.last_local = 0;
            pc.session = 1;
            st = pz_link_zmq_connect(&pc.next_link, cfg->connect, cfg->client_key, cfg->server_key, cfg->timeout, "stage 0 <-> server");
        }
        if (!st) st = pz_pipe_create(&pipe, &pc);
        if (st) goto done;
        res->n_stages = pc.n_stages;
        if (rank > 0) { /* a stage without the driver: serve until rank 0 stops the pipeline */
            st = pz_pipe_wait(pipe);
            goto done;
        }
        if (!strcmp(cfg->link, "zmq") && !cfg->resume) {
            /* split learning: start from the client-side weights the previous client left */
            int found = 0;
            if ((st = pz_pipe_fetch(pipe, &found))) goto done;
            res->handed_over = found;
        }
    } else {
        /* one stage: this process trains the model itself (the stages own their optimizers) */
        opt.momentum = cfg->momentum;
        opt.nesterov = cfg->nesterov;
        opt.weight_decay = cfg->weight_decay;
        pz_optim_init(&opt, !strcmp(cfg->optimizer, "adamw") ? PZ_OPT_ADAMW : PZ_OPT_SGD, model.n_params);
        if (cfg->resume) {
            char path[4400];
            snprintf(path, sizeof path, "%s/stage-0.bin", resume_dir);
            if ((st = pz_checkpoint_read(path, 0, &model, 0, model.n_params, &opt, NULL, 0))) goto done;
        }
    }

    pz_rng root;
    pz_rng_seed(&root, cfg->seed);
    const pz_rng data_rng = pz_rng_split(&root, 0xDA7A);
    const pz_augment aug = pz_default_augment(cfg->data, cfg->augment_pad, cfg->augment_flip);
    pz_loader_init(&loader, &train, cfg->batch, 1, aug, data_rng.s[0]);

    pz_schedule sched;
    pz_schedule_parse(&sched, cfg->schedule);
    sched.base_lr = cfg->lr;
    sched.steps_per_epoch = pz_loader_batches(&loader);
    sched.total_steps = sched.steps_per_epoch * cfg->epochs;
    sched.warmup_steps = (int64_t)llround(cfg->warmup_epochs * sched.steps_per_epoch);

    if (out_dir) {
        st = pz_mkdir_p(out_dir);
        pz_field f[48];
        char seed_buf[32], cuts[256] = "";
        int n = config_fields(cfg, f, seed_buf);
        f[n++] = PZ_NUM("n_params", model.n_params);
        f[n++] = PZ_NUM("train_examples", train.n);
        f[n++] = PZ_NUM("test_examples", test.n);
        if (pipe) {
            f[n++] = PZ_NUM("n_stages", pc.n_stages);
            for (int i = 0; i + 1 < pc.n_stages; i++)
                snprintf(cuts + strlen(cuts), sizeof cuts - strlen(cuts), "%s%s", i ? "," : "", model.net.layers[pc.cuts[i]].name);
            f[n++] = PZ_STR("cut_after", cuts);
        }
        if (!st && !cfg->resume) st = write_json(out_dir, "config.json", f, n);
        if (cfg->resume) {
            if (!st) st = pz_metrics_reopen(&steps_m, out_dir, "steps", cfg->metrics_format, rs.epoch);
            if (!st) st = pz_metrics_reopen(&epochs_m, out_dir, "epochs", cfg->metrics_format, rs.epoch);
            if (!st && pipe) st = pz_metrics_reopen(&bounds_m, out_dir, "boundaries", cfg->metrics_format, rs.epoch);
        } else {
            if (!st) st = pz_metrics_open(&steps_m, out_dir, "steps", cfg->metrics_format);
            if (!st) st = pz_metrics_open(&epochs_m, out_dir, "epochs", cfg->metrics_format);
            if (!st && pipe) st = pz_metrics_open(&bounds_m, out_dir, "boundaries", cfg->metrics_format);
        }
    }

    const double t0 = pz_now() - rs.wall;
    int64_t global_step = rs.global_step, samples = rs.samples;
    res->best_test_accuracy = rs.best;
    res->epochs_done = rs.epoch;
    double emulated = rs.emulated;
    pz_boundary_stats prev_b[PZ_MAX_STAGES];
    memset(prev_b, 0, sizeof prev_b);
    double tot_fwd = rs.fwd_bytes, tot_bwd = rs.bwd_bytes, tot_fp32 = rs.fp32_bytes, tot_eval = rs.eval_bytes,
           tot_link = rs.link_bytes;
    if (pipe && !st) { /* counters start here: a server may have served other clients already */
        st = pz_pipe_collect_stats(pipe);
        for (int b = 0; !st && b + 1 < res->n_stages; b++) prev_b[b] = pz_pipe_boundary_stats(pipe, b);
    }
    pz_boundary_stats first_b[PZ_MAX_STAGES];
    memcpy(first_b, prev_b, sizeof first_b);
    for (int epoch = rs.epoch; epoch < cfg->epochs && !st && !res->stopped; epoch++) {
        const double te = pz_now();
        if (pipe && cfg->aqsgd_warmup > 0 && (epoch == rs.epoch || epoch == cfg->aqsgd_warmup) &&
            (st = pz_pipe_set_warmup(pipe, epoch < cfg->aqsgd_warmup)))
            break;
        const double clock0 = pipe ? pz_pipe_clock(pipe) : 0.0;
        pz_loader_start_epoch(&loader, epoch);
        double loss_sum = 0.0;
        int64_t hits = 0, seen = 0, step = 0;
        int B;
        while ((B = pz_loader_next(&loader)) > 0) {
            const float lr = pz_schedule_lr(&sched, global_step);
            int correct = 0;
            float loss;
            if (pipe) {
                if ((st = pz_pipe_train_step(pipe, loader.x, loader.y, loader.ids, B, lr, &loss, &correct))) break;
            } else {
                loss = pz_train_step(&model, &opt, lr, loader.x, loader.y, B, &correct);
            }
            if (!isfinite(loss)) {
                st = pz_fail(PZ_ERR_STATE, "training diverged: loss is %g at epoch %d step %lld (try a lower --lr)",
                             loss, epoch + 1, (long long)step + 1);
                break;
            }
            loss_sum += (double)loss * B, hits += correct, seen += B, samples += B;
            step++, global_step++;
            const double now = pz_now();
            pz_progress p = {.epoch = epoch + 1, .epochs = cfg->epochs, .step = step,
                             .steps_per_epoch = sched.steps_per_epoch, .global_step = global_step,
                             .total_steps = sched.total_steps, .loss = loss_sum / seen,
                             .accuracy = (double)hits / seen, .lr = lr, .elapsed = now - t0,
                             .samples_per_second = samples / (now - t0)};
            p.eta = (now - t0) / global_step * (sched.total_steps - global_step);
            if (on_progress && on_progress(&p, user)) res->stopped = 1;
            if (steps_m.f && (global_step % cfg->log_every == 0 || step == sched.steps_per_epoch)) {
                pz_field f[] = {PZ_NUM("epoch", epoch + 1), PZ_NUM("step", global_step), PZ_NUM("loss", loss),
                                PZ_NUM("accuracy", (double)correct / B), PZ_NUM("lr", lr),
                                PZ_NUM("time", now - t0)};
                st = pz_metrics_write(&steps_m, f, (int)(sizeof f / sizeof *f));
                if (st) break;
            }
            if (res->stopped) break;
        }
        if (st || res->stopped) break;
        const double train_seconds = pz_now() - te;
        if (pipe) emulated += pz_pipe_clock(pipe) - clock0;
        double test_loss = 0, test_acc = 0, cl = -1, ca = -1;
        if (!pipe) {
            pz_evaluate(&model, test.x, test.y, test.n, &test_loss, &test_acc);
        } else {
            /* Paper A evaluates both ways: through the compressed boundaries and plain */
            if (strcmp(cfg->eval_compress, "on") && (st = pz_pipe_evaluate(pipe, test.x, test.y, test.n, 0, &test_loss, &test_acc))) break;
            if (strcmp(cfg->eval_compress, "off") && (st = pz_pipe_evaluate(pipe, test.x, test.y, test.n, 1, &cl, &ca))) break;
            if (!strcmp(cfg->eval_compress, "on")) test_loss = cl, test_acc = ca;
            res->final_test_accuracy_compressed = ca;
        }
        const double now = pz_now();
        res->epochs_done = epoch + 1;
        res->final_train_loss = loss_sum / seen;
        res->final_train_accuracy = (double)hits / seen;
        res->final_test_loss = test_loss;
        res->final_test_accuracy = test_acc;
        if (test_acc > res->best_test_accuracy) res->best_test_accuracy = test_acc;
        res->emulated_seconds = emulated;
        if (pipe) {
            if ((st = pz_pipe_collect_stats(pipe))) break;
            for (int b = 0; b + 1 < res->n_stages; b++) {
                const pz_boundary_stats bs = pz_pipe_boundary_stats(pipe, b), *o = &prev_b[b];
                /* this epoch's traffic (remote stages may have served other clients before) */
                tot_fwd += (double)(bs.fwd_bytes - o->fwd_bytes), tot_bwd += (double)(bs.bwd_bytes - o->bwd_bytes);
                tot_fp32 += 4.0 * (double)(bs.fwd_elements - o->fwd_elements + bs.bwd_elements - o->bwd_elements);
                tot_eval += (double)(bs.eval_bytes - o->eval_bytes);
                tot_link += (double)(bs.link_fwd_bytes - o->link_fwd_bytes + bs.link_bwd_bytes - o->link_bwd_bytes);
                if (bounds_m.f) {
                    const uint64_t fb = bs.fwd_bytes - o->fwd_bytes, bb = bs.bwd_bytes - o->bwd_bytes;
                    const uint64_t fe = bs.fwd_elements - o->fwd_elements, be = bs.bwd_elements - o->bwd_elements;
                    const uint64_t fn = bs.fwd_err_n - o->fwd_err_n, bn = bs.bwd_err_n - o->bwd_err_n;
                    pz_field f[] = {
                        PZ_NUM("epoch", epoch + 1), PZ_NUM("boundary", b + 1),
                        PZ_STR("after", model.net.layers[pc.cuts[b]].name),
                        PZ_STR("fwd", pc.fwd[b]), PZ_STR("bwd", pc.bwd[b]),
                        PZ_NUM("fwd_bytes", fb), PZ_NUM("bwd_bytes", bb),
                        PZ_NUM("fwd_ratio", fb ? 4.0 * (double)fe / (double)fb : 0),
                        PZ_NUM("bwd_ratio", bb ? 4.0 * (double)be / (double)bb : 0),
                        PZ_NUM("fwd_bits_per_element", fe ? 8.0 * (double)fb / (double)fe : 0),
                        PZ_NUM("bwd_bits_per_element", be ? 8.0 * (double)bb / (double)be : 0),
                        PZ_NUM("fwd_error", fn ? (bs.fwd_err_sum - o->fwd_err_sum) / (double)fn : 0),
                        PZ_NUM("bwd_error", bn ? (bs.bwd_err_sum - o->bwd_err_sum) / (double)bn : 0),
                        PZ_NUM("fwd_encode_s", bs.fwd_encode_s - o->fwd_encode_s),
                        PZ_NUM("fwd_decode_s", bs.fwd_decode_s - o->fwd_decode_s),
                        PZ_NUM("bwd_encode_s", bs.bwd_encode_s - o->bwd_encode_s),
                        PZ_NUM("bwd_decode_s", bs.bwd_decode_s - o->bwd_decode_s),
                        PZ_NUM("eval_bytes", bs.eval_bytes - o->eval_bytes),
                        PZ_NUM("link_fwd_bytes", bs.link_fwd_bytes - o->link_fwd_bytes),
                        PZ_NUM("link_bwd_bytes", bs.link_bwd_bytes - o->link_bwd_bytes),
                        PZ_NUM("wire_fwd_bytes", bs.wire_fwd_bytes - o->wire_fwd_bytes),
                        PZ_NUM("wire_bwd_bytes", bs.wire_bwd_bytes - o->wire_bwd_bytes),
                        PZ_NUM("link_fwd_busy_s", bs.busy_fwd_s - o->busy_fwd_s),
                        PZ_NUM("link_bwd_busy_s", bs.busy_bwd_s - o->busy_bwd_s)};
                    if ((st = pz_metrics_write(&bounds_m, f, (int)(sizeof f / sizeof *f)))) break;
                }
                prev_b[b] = bs;
                /* this run's totals per boundary (resumed runs: since the resume) */
                __typeof__(res->boundaries[0]) *rb = &res->boundaries[b];
                snprintf(rb->after, sizeof rb->after, "%.47s", model.net.layers[pc.cuts[b]].name);
                snprintf(rb->fwd, sizeof rb->fwd, "%.63s", pc.fwd[b]);
                snprintf(rb->bwd, sizeof rb->bwd, "%.63s", pc.bwd[b]);
                rb->fwd_bytes = bs.fwd_bytes - first_b[b].fwd_bytes, rb->bwd_bytes = bs.bwd_bytes - first_b[b].bwd_bytes;
                rb->fp32_fwd_bytes = 4 * (bs.fwd_elements - first_b[b].fwd_elements);
                rb->fp32_bwd_bytes = 4 * (bs.bwd_elements - first_b[b].bwd_elements);
                const uint64_t fn = bs.fwd_err_n - first_b[b].fwd_err_n, bn = bs.bwd_err_n - first_b[b].bwd_err_n;
                rb->fwd_error = fn ? (bs.fwd_err_sum - first_b[b].fwd_err_sum) / (double)fn : 0;
                rb->bwd_error = bn ? (bs.bwd_err_sum - first_b[b].bwd_err_sum) / (double)bn : 0;
            }
            if (st) break;
            res->fwd_bytes = (uint64_t)tot_fwd, res->bwd_bytes = (uint64_t)tot_bwd;
            res->fp32_bytes = (uint64_t)tot_fp32, res->eval_bytes = (uint64_t)tot_eval;
            res->link_bytes = (uint64_t)tot_link;
        }
        if (on_progress) {
            pz_progress p = {.epoch = epoch + 1, .epochs = cfg->epochs, .step = step,
                             .steps_per_epoch = sched.steps_per_epoch, .global_step = global_step,
                             .total_steps = sched.total_steps, .loss = loss_sum / seen,
                             .accuracy = (double)hits / seen, .lr = pz_schedule_lr(&sched, global_step - 1),
                             .elapsed = now - t0, .samples_per_second = samples / (now - t0), .end_of_epoch = 1,
                             .test_loss = test_loss, .test_accuracy = test_acc, .epoch_seconds = now - te,
                             .test_accuracy_compressed = ca, .emulated_seconds = pipe ? emulated : -1};
            p.eta = (now - t0) / global_step * (sched.total_steps - global_step);
            if (on_progress(&p, user)) res->stopped = 1;
        }
        if (epochs_m.f) {
            pz_field f[20];
            int nf = 0;
            f[nf++] = PZ_NUM("epoch", epoch + 1);
            f[nf++] = PZ_NUM("train_loss", loss_sum / seen);
            f[nf++] = PZ_NUM("train_accuracy", (double)hits / seen);
            f[nf++] = PZ_NUM("test_loss", test_loss);
            f[nf++] = PZ_NUM("test_accuracy", test_acc);
            if (pipe) {
                f[nf++] = PZ_NUM("test_loss_compressed", cl);
                f[nf++] = PZ_NUM("test_accuracy_compressed", ca);
                f[nf++] = PZ_NUM("fwd_bytes", res->fwd_bytes);
                f[nf++] = PZ_NUM("bwd_bytes", res->bwd_bytes);
                f[nf++] = PZ_NUM("fp32_bytes", res->fp32_bytes);
                f[nf++] = PZ_NUM("eval_bytes", res->eval_bytes);
                f[nf++] = PZ_NUM("link_bytes", res->link_bytes);
                f[nf++] = PZ_NUM("emulated_time", emulated);
            }
            f[nf++] = PZ_NUM("lr", pz_schedule_lr(&sched, global_step - 1));
            f[nf++] = PZ_NUM("train_time", train_seconds);
            f[nf++] = PZ_NUM("epoch_time", now - te);
            f[nf++] = PZ_NUM("time", now - t0);
            st = pz_metrics_write(&epochs_m, f, nf);
            if (!st) fflush(epochs_m.f);
            if (!st && steps_m.f) fflush(steps_m.f);
            if (!st && bounds_m.f) fflush(bounds_m.f);
        }
        /* checkpoint: every stage's state, then the record naming it */
        if (!st && out_dir) {
            char d[4200], old[4200];
            ckpt_dir(d, sizeof d, out_dir, epoch + 1);
            st = pz_mkdir_p(d);
            if (!st && pipe) st = pz_pipe_save(pipe, d);
            if (!st && !pipe) {
                char path[4400];
                snprintf(path, sizeof path, "%s/stage-0.bin", d);
                st = pz_checkpoint_write(path, 0, &model, 0, model.n_params, &opt, NULL, 0);
            }
            run_state ns = {.epoch = epoch + 1, .global_step = global_step, .samples = samples,
                            .best = res->best_test_accuracy, .wall = pz_now() - t0, .emulated = emulated,
                            .fwd_bytes = (double)res->fwd_bytes, .bwd_bytes = (double)res->bwd_bytes,
                            .fp32_bytes = (double)res->fp32_bytes, .eval_bytes = (double)res->eval_bytes,
                            .link_bytes = (double)res->link_bytes};
            snprintf(ns.fingerprint, sizeof ns.fingerprint, "%s", fp);
            if (!st) st = write_state(out_dir, &ns);
            if (!st && epoch > 0) {
                ckpt_dir(old, sizeof old, out_dir, epoch);
                remove_dir_files(old);
            }
        }
    }
    if (!st && pipe && !strcmp(cfg->link, "zmq") && !res->stopped) st = pz_pipe_hand_on(pipe); /* for the next client */
    res->wall_seconds = pz_now() - t0;
    res->samples_per_second = res->wall_seconds > 0 ? samples / res->wall_seconds : 0;
    if (!st && out_dir) {
        pz_field f[] = {PZ_STR("status", res->stopped ? "stopped" : "finished"), PZ_NUM("epochs", res->epochs_done),
                        PZ_NUM("final_test_accuracy", res->final_test_accuracy),
                        PZ_NUM("best_test_accuracy", res->best_test_accuracy),
                        PZ_NUM("final_test_loss", res->final_test_loss),
                        PZ_NUM("final_train_loss", res->final_train_loss),
                        PZ_NUM("final_train_accuracy", res->final_train_accuracy),
                        PZ_NUM("wall_seconds", res->wall_seconds),
                        PZ_NUM("samples_per_second", res->samples_per_second),
                        PZ_NUM("n_params", res->n_params), PZ_NUM("threads", pz_get_threads()),
                        PZ_NUM("stages", res->n_stages),
                        PZ_NUM("final_test_accuracy_compressed", res->final_test_accuracy_compressed),
                        PZ_NUM("fwd_bytes", res->fwd_bytes), PZ_NUM("bwd_bytes", res->bwd_bytes),
                        PZ_NUM("fp32_bytes", res->fp32_bytes), PZ_NUM("eval_bytes", res->eval_bytes),
                        PZ_NUM("link_bytes", res->link_bytes), PZ_NUM("emulated_seconds", res->emulated_seconds),
                        PZ_NUM("resumed_from", res->resumed_from)};
        st = write_json(out_dir, "summary.json", f, (int)(sizeof f / sizeof *f));
    }
done:;
    /* cleaning up may fail quietly (a dead peer cannot be told to stop): keep the reason */
    char why[1024];
    snprintf(why, sizeof why, "%s", st ? pz_last_error() : "");
    pz_pipe_free(pipe);
    if (st) pz_fail(st, "%s", why);
    pz_metrics_close(&steps_m);
    pz_metrics_close(&epochs_m);
    pz_metrics_close(&bounds_m);
    pz_loader_free(&loader);
    pz_optim_free(&opt);
    pz_model_free(&model);
    pz_dataset_free(&train);
    pz_dataset_free(&test);
    return st;
}

/* ---- the split-learning server ----------------------------------------------- */
pz_status pz_run_serve(const pz_run_config *cfg, const char *bind, const char *server_key, const char *client_key, int clients,
                       const char *save_dir, const char *resume) {
    PZ_TRY(pz_run_config_check(cfg));
    pz_set_threads(cfg->threads);
    /* the server has no data: the input shape is the dataset's */
    pz_dataset shape = {0};
    if (!strcmp(cfg->data, "cifar10")) shape.c = 3, shape.h = shape.w = 32;
    else if (!strcmp(cfg->data, "fashion-mnist") || !strcmp(cfg->data, "mnist") || !strcmp(cfg->data, "synthetic")) shape.c = 1, shape.h = shape.w = 28;
    else return pz_fail(PZ_ERR_ARG, "--data '%s' (expected fashion-mnist, mnist, cifar10 or synthetic)", cfg->data);
    shape.n_classes = 10;
    pz_model model;
    PZ_TRY(pz_model_preset(&model, cfg->model, (pz_shape){shape.c, shape.h, shape.w}, shape.n_classes, 1, cfg->seed));
    pz_pipe_config pc;
    pz_status st = pipe_config(cfg, &model, &shape, &pc, 0);
    pz_model_free(&model);
    PZ_TRY(st);
    if (pc.n_stages < 2) return pz_fail(PZ_ERR_ARG, "pipezip serve needs a cut (--cuts LAYER or --stages S >= 2)");
    pc.local_set = 1, pc.first_local = 1, pc.last_local = pc.n_stages - 1;
    pc.save_dir = save_dir;
    pc.resume = resume;
    PZ_TRY(pz_link_zmq_listen(&pc.prev_link, bind, server_key, client_key, clients, "server <-> client"));
    pz_pipe *pipe;
    PZ_TRY(pz_pipe_create(&pipe, &pc));
    fprintf(stderr, "pipezip serve: stages 1..%d of %s (after %s) on %s for %d client%s%s\n", pc.n_stages - 1, cfg->model,
            pc.n_stages > 1 ? "the first cut" : "", bind, clients, clients == 1 ? "" : "s", server_key ? ", CURVE" : "");
    st = pz_pipe_wait(pipe);
    pz_pipe_free(pipe);
    return st;
}
