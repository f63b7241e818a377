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
    c->stages = 1;
    c->fwd = "none";
    c->bwd = "none";
    c->eval_compress = "both";
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
    if (c->stages < 1 || c->stages > PZ_MAX_STAGES) return pz_fail(PZ_ERR_ARG, "--stages must be in 1..%d, got %d", PZ_MAX_STAGES, c->stages);
    if (strcmp(c->eval_compress, "both") && strcmp(c->eval_compress, "on") && strcmp(c->eval_compress, "off"))
        return pz_fail(PZ_ERR_ARG, "--eval-compress '%s' (expected on, off or both)", c->eval_compress);
    const char *specs[2] = {c->fwd, c->bwd}, *flags[2] = {"--fwd", "--bwd"};
    for (int i = 0; i < 2; i++) {
        pz_codec *codec;
        if (pz_codec_create(&codec, specs[i])) return pz_fail(PZ_ERR_ARG, "%s: %s", flags[i], pz_last_error());
        pz_codec_free(codec);
    }
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
    return n;
}

pz_status pz_run_train(const pz_run_config *cfg, pz_run_result *res, pz_progress_fn on_progress, void *user) {
    memset(res, 0, sizeof *res);
    PZ_TRY(pz_run_config_check(cfg));
    pz_set_threads(cfg->threads);

    pz_dataset train, test;
    PZ_TRY(pz_load_dataset(&train, &test, cfg->data, cfg->data_dir, cfg->seed));
    if (cfg->limit_train > 0) pz_dataset_truncate(&train, cfg->limit_train);
    if (cfg->limit_test > 0) pz_dataset_truncate(&test, cfg->limit_test);

    pz_model model;
    pz_optim opt = {0};
    pz_loader loader = {0};
    pz_metrics steps_m = {0}, epochs_m = {0};
    pz_status st = pz_model_preset(&model, cfg->model, (pz_shape){train.c, train.h, train.w}, train.n_classes,
                                   cfg->batch, cfg->seed);
    if (st) {
        pz_dataset_free(&train), pz_dataset_free(&test);
        return st;
    }
    res->n_params = model.n_params;
    res->n_stages = 1;
    res->final_test_accuracy_compressed = -1;
    pz_pipe *pipe = NULL;
    if (cfg->stages > 1 || (cfg->cuts && *cfg->cuts)) {
        pz_pipe_config pc = {.model = cfg->model, .in = {train.c, train.h, train.w}, .n_classes = train.n_classes,
                             .batch_max = cfg->batch, .seed = cfg->seed, .fwd = cfg->fwd, .bwd = cfg->bwd,
                             .optimizer = !strcmp(cfg->optimizer, "adamw") ? PZ_OPT_ADAMW : PZ_OPT_SGD,
                             .momentum = cfg->momentum, .weight_decay = cfg->weight_decay, .nesterov = cfg->nesterov};
        st = pz_pipe_resolve_cuts(&model, cfg->cuts, cfg->stages, &pc);
        if (!st) st = pz_pipe_create(&pipe, &pc);
        if (st) {
            pz_model_free(&model);
            pz_dataset_free(&train), pz_dataset_free(&test);
            return st;
        }
        res->n_stages = pc.n_stages;
    }
    opt.momentum = cfg->momentum;
    opt.nesterov = cfg->nesterov;
    opt.weight_decay = cfg->weight_decay;
    pz_optim_init(&opt, !strcmp(cfg->optimizer, "adamw") ? PZ_OPT_ADAMW : PZ_OPT_SGD, model.n_params);

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

    if (cfg->out_dir) {
        st = pz_mkdir_p(cfg->out_dir);
        pz_field f[32];
        char seed_buf[32];
        int n = config_fields(cfg, f, seed_buf);
        f[n++] = PZ_NUM("n_params", model.n_params);
        f[n++] = PZ_NUM("train_examples", train.n);
        f[n++] = PZ_NUM("test_examples", test.n);
        if (!st) st = write_json(cfg->out_dir, "config.json", f, n);
        if (!st) st = pz_metrics_open(&steps_m, cfg->out_dir, "steps", cfg->metrics_format);
        if (!st) st = pz_metrics_open(&epochs_m, cfg->out_dir, "epochs", cfg->metrics_format);
    }

    const double t0 = pz_now();
    int64_t global_step = 0, samples = 0;
    for (int epoch = 0; epoch < cfg->epochs && !st && !res->stopped; epoch++) {
        const double te = pz_now();
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
        if (on_progress) {
            pz_progress p = {.epoch = epoch + 1, .epochs = cfg->epochs, .step = step,
                             .steps_per_epoch = sched.steps_per_epoch, .global_step = global_step,
                             .total_steps = sched.total_steps, .loss = loss_sum / seen,
                             .accuracy = (double)hits / seen, .lr = pz_schedule_lr(&sched, global_step - 1),
                             .elapsed = now - t0, .samples_per_second = samples / (now - t0), .end_of_epoch = 1,
                             .test_loss = test_loss, .test_accuracy = test_acc, .epoch_seconds = now - te,
                             .test_accuracy_compressed = ca};
            p.eta = (now - t0) / global_step * (sched.total_steps - global_step);
            if (on_progress(&p, user)) res->stopped = 1;
        }
        if (pipe) {
            res->fwd_bytes = res->bwd_bytes = res->fp32_bytes = 0;
            for (int b = 0; b + 1 < res->n_stages; b++) {
                const pz_boundary_stats bs = pz_pipe_boundary_stats(pipe, b);
                res->fwd_bytes += bs.fwd_bytes, res->bwd_bytes += bs.bwd_bytes, res->fp32_bytes += 8 * bs.elements;
            }
        }
        if (epochs_m.f) {
            pz_field f[16];
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
            }
            f[nf++] = PZ_NUM("lr", pz_schedule_lr(&sched, global_step - 1));
            f[nf++] = PZ_NUM("epoch_time", now - te);
            f[nf++] = PZ_NUM("time", now - t0);
            st = pz_metrics_write(&epochs_m, f, nf);
        }
    }
    res->wall_seconds = pz_now() - t0;
    res->samples_per_second = res->wall_seconds > 0 ? samples / res->wall_seconds : 0;
    if (!st && cfg->out_dir) {
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
                        PZ_NUM("fp32_bytes", res->fp32_bytes)};
        st = write_json(cfg->out_dir, "summary.json", f, (int)(sizeof f / sizeof *f));
    }
    pz_pipe_free(pipe);
    pz_metrics_close(&steps_m);
    pz_metrics_close(&epochs_m);
    pz_loader_free(&loader);
    pz_optim_free(&opt);
    pz_model_free(&model);
    pz_dataset_free(&train);
    pz_dataset_free(&test);
    return st;
}
