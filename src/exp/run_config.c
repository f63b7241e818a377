/* run_config.c — a run's configuration (defaults, checks, the pipeline it
 * describes) and its run directory (config.json, the checkpoint record). */
#include "run_internal.h"
#include "pipezip/codec.h"
#include "link/link.h"
#include "build_info.h"

#include <cjson/cJSON.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    c->tokenizer = "bytes";
    c->grad_mask = "none";
}

pz_status pz_run_turn_steps(const pz_run_config *c, int *steps) {
    *steps = 0;
    if (!c->turn || !strcmp(c->turn, "run")) return PZ_OK;
    if (!strcmp(c->turn, "epoch")) return *steps = -1, PZ_OK;
    char *end;
    const long k = strtol(c->turn, &end, 10);
    if (end == c->turn || *end || k < 1 || k > 1000000000)
        return pz_fail(PZ_ERR_ARG, "--turn '%s' (expected run, epoch or a number of steps >= 1)", c->turn);
    *steps = (int)k;
    return PZ_OK;
}

pz_status pz_run_config_check(const pz_run_config *c) {
    int known = 0;
    for (const char *const *p = pz_model_preset_names(); *p; p++) known |= !strcmp(*p, c->model);
    if (!known) return pz_fail(PZ_ERR_ARG, "--model '%s' is not a preset (expected mlp, lenet5, resnet8, resnet20, gpt-tiny or gpt-small)", c->model);
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
    if (!(c->clip_norm >= 0.0f) || !isfinite(c->clip_norm))
        return pz_fail(PZ_ERR_ARG, "--clip-norm must be >= 0 (0: off), got %g", c->clip_norm);
    int vocab;
    PZ_TRY(pz_tokenizer_spec(c->tokenizer, &vocab));
    if (vocab != 256 && !pz_dataset_is_text(c->data))
        return pz_fail(PZ_ERR_ARG, "--tokenizer %s is for text (--data kjv or text:FILE), not %s", c->tokenizer, c->data);
    if (!(c->warmup_epochs >= 0.0f) || c->warmup_epochs > c->epochs)
        return pz_fail(PZ_ERR_ARG, "--warmup must be in [0, epochs], got %g", c->warmup_epochs);
    pz_schedule s;
    PZ_TRY(pz_schedule_parse(&s, c->schedule));
    if (c->augment_pad < -1 || c->augment_pad > 16) return pz_fail(PZ_ERR_ARG, "crop padding must be in 0..16, got %d", c->augment_pad);
    if (strcmp(c->metrics_format, "jsonl") && strcmp(c->metrics_format, "csv"))
        return pz_fail(PZ_ERR_ARG, "--metrics '%s' (expected jsonl or csv)", c->metrics_format);
    if (c->grad_mask && strcmp(c->grad_mask, "none") && strcmp(c->grad_mask, "fwd"))
        return pz_fail(PZ_ERR_ARG, "--grad-mask '%s' (expected none or fwd)", c->grad_mask);
    if (c->eval_every < 0) return pz_fail(PZ_ERR_ARG, "--eval-every must be >= 0 (0: at each epoch's end only), got %d", c->eval_every);
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
    const run_link *link = run_link_find(c->link);
    if (!link) return pz_fail(PZ_ERR_ARG, "--link '%s' (expected %s)", c->link, run_link_names());
    if (link->check) PZ_TRY(link->check(c));
    if (c->shard_count < 0 || (c->shard_count > 0 && (c->shard_index < 0 || c->shard_index >= c->shard_count)))
        return pz_fail(PZ_ERR_ARG, "--shard K/N: expected 1 <= K <= N");
    if (!(c->timeout > 0) || c->timeout > 1e6) return pz_fail(PZ_ERR_ARG, "--timeout must be a positive number of seconds");
    int turn;
    PZ_TRY(pz_run_turn_steps(c, &turn));
    if (turn && !(link && link->session)) return pz_fail(PZ_ERR_ARG, "--turn %s takes turns with other split-learning clients: it needs --link zmq", c->turn);
    double v;
    if (c->link_bandwidth) PZ_TRY(pz_parse_bandwidth(c->link_bandwidth, &v));
    if (c->link_latency) PZ_TRY(pz_parse_duration(c->link_latency, &v));
    return PZ_OK;
}

pz_status run_write_json(const char *dir, const char *name, const pz_field *f, int n) {
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
    f[n++] = PZ_STR("tokenizer", c->tokenizer ? c->tokenizer : "bytes");
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
    f[n++] = PZ_NUM("clip_norm", c->clip_norm);
    f[n++] = PZ_NUM("eval_every", c->eval_every);
    f[n++] = PZ_STR("grad_mask", c->grad_mask ? c->grad_mask : "none");
    const pz_augment aug = pz_default_augment(c->data, c->augment_pad, c->augment_flip);
    f[n++] = PZ_NUM("augment_pad", aug.pad);
    f[n++] = PZ_NUM("augment_flip", aug.flip);
    f[n++] = PZ_STR("seed", seed_buf);
    f[n++] = PZ_NUM("threads", pz_get_threads());
    f[n++] = PZ_STR("version", pz_version());
    f[n++] = PZ_STR("git_commit", PZ_GIT_COMMIT);
    f[n++] = PZ_STR("command_line", c->command_line ? c->command_line : "");
    static char host[256];
    if (gethostname(host, sizeof host - 1)) snprintf(host, sizeof host, "unknown");
    f[n++] = PZ_STR("host", host);
    /* the environment that chooses kernels or threads, as it was */
    static char env[1024];
    static const char *const vars[] = {"OMP_NUM_THREADS", "OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "PZ_CONV_KERNELS",
                                       "PZ_CODEC_KERNELS", NULL};
    size_t used = 0;
    env[0] = 0;
    for (int i = 0; vars[i]; i++) {
        const char *v = getenv(vars[i]);
        if (v && used < sizeof env)
            used += (size_t)snprintf(env + used, sizeof env - used, "%s%s=%s", used ? " " : "", vars[i], v);
    }
    f[n++] = PZ_STR("environment", env);
    /* what computes: the CPU, the BLAS and the kernels it runs (and who chose them) */
    static pz_blas_info bi;
    bi = pz_blas_get_info();
    f[n++] = PZ_STR("cpu", pz_cpu_name());
    f[n++] = PZ_STR("blas", bi.library);
    f[n++] = PZ_STR("blas_core", bi.core);
    f[n++] = PZ_STR("blas_core_chosen_by", bi.source);
    const pz_conv_info ci = pz_nn_conv_info();
    f[n++] = PZ_STR("conv_kernels", ci.name);
    f[n++] = PZ_STR("conv_kernels_chosen_by", ci.source);
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

/* ---- the run directory and its checkpoint record ---------------------------- */
static void fp_append(char *out, size_t cap, const char *fmt, ...) {
    const size_t n = strlen(out);
    if (n >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out + n, cap - n, fmt, ap);
    va_end(ap);
}

void run_fingerprint(const pz_run_config *c, char *out, size_t cap) {
    snprintf(out, cap, "model=%s data=%s limit=%lld/%lld epochs=%d batch=%d opt=%s lr=%g mom=%g wd=%g nest=%d sched=%s warm=%g seed=%llu stages=%d cuts=%s fwd=%s bwd=%s mb=%d",
             c->model, c->data, (long long)c->limit_train, (long long)c->limit_test, c->epochs, c->batch, c->optimizer, c->lr,
             c->momentum, c->weight_decay, c->nesterov, c->schedule, c->warmup_epochs, (unsigned long long)c->seed,
             c->stages, c->cuts ? c->cuts : "", c->fwd, c->bwd, c->micro_batches);
    /* settings added later only when used: older runs keep their fingerprint */
    if (c->clip_norm > 0.0f) fp_append(out, cap, " clip=%g", c->clip_norm);
    if (c->tokenizer && *c->tokenizer && strcmp(c->tokenizer, "bytes")) fp_append(out, cap, " tok=%s", c->tokenizer);
    if (c->grad_mask && !strcmp(c->grad_mask, "fwd")) fp_append(out, cap, " grad_mask=fwd");
    /* everything else that moves the trajectory (a run that used the defaults keeps its older fingerprint) */
    const pz_augment aug = pz_default_augment(c->data, c->augment_pad, c->augment_flip), def = pz_default_augment(c->data, -1, -1);
    if (aug.pad != def.pad || aug.flip != def.flip) fp_append(out, cap, " crop_pad=%d flip=%d", aug.pad, aug.flip);
    if (c->shard_count > 0) fp_append(out, cap, " shard=%d/%d", c->shard_index + 1, c->shard_count);
    if (c->aqsgd_warmup > 0) fp_append(out, cap, " aqsgd_warmup=%d", c->aqsgd_warmup);
    if (c->data_dir && *c->data_dir) fp_append(out, cap, " data_dir=%s", c->data_dir);
    if (c->turn && strcmp(c->turn, "run")) fp_append(out, cap, " turn=%s", c->turn);
    if (c->link && !strcmp(c->link, "zmq")) fp_append(out, cap, " link=zmq");
    if (c->metrics_format && strcmp(c->metrics_format, "jsonl")) fp_append(out, cap, " metrics=%s", c->metrics_format);
    /* the thread count orders the sums (same seed and threads, same numbers); 0, all cores, is not compared */
    if (c->threads > 0) fp_append(out, cap, " threads=%d", c->threads);
}

/* key's value in a fingerprint ("k=v k=v ..."): its start and length, or NULL */
static const char *fp_value(const char *fp, const char *key, size_t kn, size_t *vn) {
    for (const char *t = fp; *t;) {
        while (*t == ' ') t++;
        const char *e = strchr(t, ' ');
        if (!e) e = t + strlen(t);
        if ((size_t)(e - t) > kn && !strncmp(t, key, kn) && t[kn] == '=') {
            *vn = (size_t)(e - t) - kn - 1;
            return t + kn + 1;
        }
        t = e;
    }
    return NULL;
}

/* The settings two fingerprints disagree on: "key: A -> B; ..." */
void run_fingerprint_diff(const char *a, const char *b, char *out, size_t cap) {
    out[0] = 0;
    for (int pass = 0; pass < 2; pass++) {
        const char *x = pass ? b : a, *y = pass ? a : b;
        for (const char *t = x; *t;) {
            while (*t == ' ') t++;
            const char *e = strchr(t, ' '), *eq = strchr(t, '=');
            if (!e) e = t + strlen(t);
            if (eq && eq < e) {
                const size_t kn = (size_t)(eq - t), xn = (size_t)(e - eq - 1);
                size_t yn = 0;
                const char *yv = fp_value(y, t, kn, &yn);
                if (!pass && (!yv || yn != xn || strncmp(yv, eq + 1, xn)))
                    fp_append(out, cap, "%s%.*s: %.*s -> %.*s", out[0] ? "; " : "", (int)kn, t, (int)xn, eq + 1, yv ? (int)yn : 7,
                              yv ? yv : "(unset)");
                if (pass && !yv) fp_append(out, cap, "%s%.*s: (unset) -> %.*s", out[0] ? "; " : "", (int)kn, t, (int)xn, eq + 1);
            }
            t = e;
        }
    }
}

/* latest.json: one line of JSON, read back with cJSON (so any spacing,
 * order or escaping reads the same); numbers in %.17g (exact doubles), the
 * fingerprint escaped by cJSON */
pz_status run_state_write(const char *dir, const run_state *s) {
    char path[4200], buf[4096];
    snprintf(path, sizeof path, "%s/checkpoint/latest.json", dir);
    cJSON *str = cJSON_CreateString(s->fingerprint);
    char *fp = str ? cJSON_PrintUnformatted(str) : NULL;
    cJSON_Delete(str);
    if (!fp) return pz_fail(PZ_ERR_NOMEM, "out of memory writing %s", path);
    const int n = snprintf(buf, sizeof buf,
                           "{\"epoch\": %d, \"global_step\": %lld, \"samples\": %lld, \"best\": %.17g, \"wall\": %.17g, "
                           "\"emulated\": %.17g, \"fwd_bytes\": %.17g, \"bwd_bytes\": %.17g, \"fp32_bytes\": %.17g, "
                           "\"eval_bytes\": %.17g, \"link_bytes\": %.17g, \"fingerprint\": %s}\n",
                           s->epoch, (long long)s->global_step, (long long)s->samples, s->best, s->wall, s->emulated,
                           s->fwd_bytes, s->bwd_bytes, s->fp32_bytes, s->eval_bytes, s->link_bytes, fp);
    cJSON_free(fp);
    if (n < 0 || (size_t)n >= sizeof buf) return pz_fail(PZ_ERR_ARG, "the checkpoint record of %s is too long", dir);
    return pz_write_file_atomic(path, buf, (size_t)n);
}

pz_status run_state_read(const char *dir, run_state *s) {
    char path[4200];
    snprintf(path, sizeof path, "%s/checkpoint/latest.json", dir);
    if (access(path, F_OK) != 0) return pz_fail(PZ_ERR_IO, "--resume %s: no checkpoint there (%s is missing)", dir, path);
    char *t;
    PZ_TRY(pz_read_text(path, &t, NULL));
    cJSON *o = cJSON_Parse(t);
    free(t);
    if (!o || !cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return pz_fail(PZ_ERR_FORMAT, "'%s' is not a pipezip checkpoint record (not a JSON object)", path);
    }
    static const char *const keys[] = {"epoch", "global_step", "samples", "best", "wall", "emulated", "fwd_bytes",
                                       "bwd_bytes", "fp32_bytes", "eval_bytes", "link_bytes"};
    double v[11];
    for (int i = 0; i < 11; i++) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, keys[i]);
        if (!cJSON_IsNumber(f)) {
            cJSON_Delete(o);
            return pz_fail(PZ_ERR_FORMAT, "'%s' is not a pipezip checkpoint record (no number '%s')", path, keys[i]);
        }
        v[i] = f->valuedouble;
    }
    const cJSON *fp = cJSON_GetObjectItemCaseSensitive(o, "fingerprint");
    if (!cJSON_IsString(fp) || !fp->valuestring || strlen(fp->valuestring) >= sizeof s->fingerprint) {
        cJSON_Delete(o);
        return pz_fail(PZ_ERR_FORMAT, "'%s' is not a pipezip checkpoint record (no fingerprint)", path);
    }
    snprintf(s->fingerprint, sizeof s->fingerprint, "%s", fp->valuestring);
    cJSON_Delete(o);
    if (v[0] < 1 || v[0] != floor(v[0]) || v[0] > 1e6 || v[1] < 0 || v[2] < 0)
        return pz_fail(PZ_ERR_FORMAT, "'%s' is not a pipezip checkpoint record (epoch %g)", path, v[0]);
    s->epoch = (int)v[0], s->global_step = (int64_t)v[1], s->samples = (int64_t)v[2];
    s->best = v[3], s->wall = v[4], s->emulated = v[5], s->fwd_bytes = v[6], s->bwd_bytes = v[7];
    s->fp32_bytes = v[8], s->eval_bytes = v[9], s->link_bytes = v[10];
    return PZ_OK;
}

void run_checkpoint_dir(char *out, size_t cap, const char *dir, int epoch) {
    snprintf(out, cap, "%s/checkpoint/epoch-%d", dir, epoch);
}

void run_checkpoint_remove(const char *d) {
    for (int i = 0; i < PZ_MAX_STAGES; i++) {
        char f[4300];
        snprintf(f, sizeof f, "%s/stage-%d.bin", d, i);
        unlink(f);
    }
    rmdir(d);
}

/* ---- the pipeline's configuration -------------------------------------------- */
pz_status run_pipe_config(const pz_run_config *cfg, const pz_model *model, const pz_dataset *train, pz_pipe_config *pc,
                             int ranks) {
    memset(pc, 0, sizeof *pc);
    pc->model = cfg->model;
    pc->in = pz_dataset_shape(train);
    pc->n_classes = train->n_classes;
    pc->targets = pz_dataset_targets(train);
    pc->clip_norm = cfg->clip_norm;
    pc->grad_mask = cfg->grad_mask && !strcmp(cfg->grad_mask, "fwd");
    pc->batch_max = cfg->batch;
    pc->seed = cfg->seed;
    pc->optimizer = !strcmp(cfg->optimizer, "adamw") ? PZ_OPT_ADAMW : PZ_OPT_SGD;
    pc->momentum = cfg->momentum, pc->weight_decay = cfg->weight_decay, pc->nesterov = cfg->nesterov;
    pc->micro_batches = cfg->micro_batches;
    pc->max_samples = (uint32_t)train->n;
    pc->timeout_s = cfg->timeout;
    int stages = cfg->stages;
    const char *cuts = cfg->cuts;
    if (stages > 0 && cuts && *cuts) { /* both: they must agree */
        int n = 2;
        for (const char *p = cuts; *p; p++) n += *p == ',';
        if (n != stages)
            return pz_fail(PZ_ERR_ARG, "--stages %d and --cuts %s (%d stages) disagree: give one of them", stages, cuts, n);
    }
    if (stages == 0 && !(cuts && *cuts)) { /* auto */
        if (ranks > 0) stages = ranks;
        else if (!strncmp(cfg->model, "resnet", 6)) cuts = "layer1,layer2,layer3"; /* Paper A's layout (auto is a pipeline only for resnets) */
        else stages = 1;
    }
    PZ_TRY(pz_pipe_resolve_cuts(model, cuts, stages, pc));
    if (ranks > 0 && pc->n_stages != ranks)
        return pz_fail(PZ_ERR_ARG, "--link %s: %d stages need %d processes, %d were started (mpirun -np %d ...)", cfg->link,
                       pc->n_stages, pc->n_stages, ranks, pc->n_stages);
    PZ_TRY(pz_codec_parse_list(cfg->fwd, pc->n_stages - 1, pc->fwd, "--fwd"));
    PZ_TRY(pz_codec_parse_list(cfg->bwd, pc->n_stages - 1, pc->bwd, "--bwd"));
    if (cfg->link_bandwidth) PZ_TRY(pz_parse_bandwidth(cfg->link_bandwidth, &pc->emu.bandwidth));
    if (cfg->link_latency) PZ_TRY(pz_parse_duration(cfg->link_latency, &pc->emu.latency));
    pc->realtime = cfg->link_realtime;
    return PZ_OK;
}

pz_status run_write_config(const char *dir, const pz_run_config *c, const pz_model *model, const pz_dataset *train,
                           const pz_dataset *test, const pz_pipe_config *pc, int pipeline) {
    pz_field f[96];
    char seed_buf[32], cuts[256] = "";
    int n = config_fields(c, f, seed_buf);
    f[n++] = PZ_NUM("n_params", model->n_params);
    f[n++] = PZ_NUM("train_examples", train->n);
    f[n++] = PZ_NUM("test_examples", test->n);
    /* the pipeline as resolved ("stages" and "cuts" above are as given;
     * 0 and "": the default): a single stage has no boundary, so no codec
     * ran whatever "fwd" and "bwd" say */
    f[n++] = PZ_NUM("n_stages", pipeline ? pc->n_stages : 1);
    if (pipeline)
        for (int i = 0; i + 1 < pc->n_stages; i++)
            snprintf(cuts + strlen(cuts), sizeof cuts - strlen(cuts), "%s%s", i ? "," : "", model->net.layers[pc->cuts[i]].name);
    f[n++] = PZ_STR("cut_after", cuts);
    return run_write_json(dir, "config.json", f, n);
}
