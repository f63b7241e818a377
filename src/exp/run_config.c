/* SPDX-License-Identifier: MIT */
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
#include <zlib.h>
#include <unistd.h>

pz_status run_write_json(const char *dir, const char *name, const pz_field *f, int n) {
    char path[4096], buf[16384];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int len = pz_fields_to_json(buf, sizeof buf - 1, f, n);
    if (len >= (int)sizeof buf - 1) return pz_fail(PZ_ERR_ARG, "'%s' too large", path);
    buf[len++] = '\n';
    return pz_write_file_atomic(path, buf, (size_t)len);
}

/* config.json's settings, from the plan: each as it was given (or its
 * default), the augmentation as the dataset resolves it */
static int config_fields(const pz_run_plan *p, pz_field *f, char *seed_buf) {
    int n = 0;
    snprintf(seed_buf, 32, "%llu", (unsigned long long)p->seed);
    f[n++] = PZ_STR("model", run_plan_str(p, PZ_SET_MODEL));
    f[n++] = PZ_STR("data", run_plan_str(p, PZ_SET_DATA));
    f[n++] = PZ_STR("data_dir", run_plan_str(p, PZ_SET_DATA_DIR));
    f[n++] = PZ_STR("tokenizer", run_plan_str(p, PZ_SET_TOKENIZER));
    f[n++] = PZ_NUM("limit_train", p->limit_train);
    f[n++] = PZ_NUM("limit_test", p->limit_test);
    f[n++] = PZ_NUM("epochs", p->epochs);
    f[n++] = PZ_NUM("batch", p->batch);
    f[n++] = PZ_STR("optimizer", run_plan_str(p, PZ_SET_OPTIMIZER));
    f[n++] = PZ_NUM("lr", p->lr);
    f[n++] = PZ_NUM("momentum", p->momentum);
    f[n++] = PZ_NUM("weight_decay", p->weight_decay);
    f[n++] = PZ_NUM("nesterov", p->nesterov);
    f[n++] = PZ_STR("schedule", run_plan_str(p, PZ_SET_SCHEDULE));
    f[n++] = PZ_NUM("warmup_epochs", p->warmup_epochs);
    f[n++] = PZ_NUM("clip_norm", p->clip_norm);
    f[n++] = PZ_NUM("eval_every", p->eval_every);
    f[n++] = PZ_STR("grad_mask", run_plan_str(p, PZ_SET_GRAD_MASK));
    const pz_augment aug = pz_data_augment(&p->data, p->crop_pad, p->flip);
    f[n++] = PZ_NUM("augment_pad", aug.pad);
    f[n++] = PZ_NUM("augment_flip", aug.flip);
    f[n++] = PZ_STR("seed", seed_buf);
    f[n++] = PZ_NUM("threads", pz_get_threads());
    f[n++] = PZ_STR("version", pz_version());
    f[n++] = PZ_STR("git_commit", PZ_GIT_COMMIT);
    f[n++] = PZ_STR("command_line", run_plan_str(p, PZ_SET_COMMAND_LINE));
    static char host[256];
    if (gethostname(host, sizeof host - 1)) snprintf(host, sizeof host, "unknown");
    f[n++] = PZ_STR("host", host);
    /* the environment that chooses kernels or threads, as it was */
    static char env[1024];
    static const char *const vars[] = {"OMP_NUM_THREADS", "OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "PZ_CONV_KERNELS",
                                       "PZ_GEMM_KERNELS", "PZ_CODEC_KERNELS", NULL};
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
    const pz_conv_info gi = pz_nn_gemm_info();
    f[n++] = PZ_STR("gemm_kernels", gi.name);
    f[n++] = PZ_STR("gemm_kernels_chosen_by", gi.source);
    f[n++] = PZ_NUM("stages", p->stages);
    f[n++] = PZ_STR("cuts", run_plan_str(p, PZ_SET_CUTS));
    /* a budget chooses the codecs as it runs (budget.jsonl) */
    const int budget = p->budget.kind != PZ_BUDGET_OFF;
    f[n++] = PZ_STR("fwd", budget ? "budget" : run_plan_str(p, PZ_SET_FWD));
    f[n++] = PZ_STR("bwd", budget ? "budget" : run_plan_str(p, PZ_SET_BWD));
    f[n++] = PZ_STR("eval_compress", run_plan_str(p, PZ_SET_EVAL_COMPRESS));
    f[n++] = p->micro_batches ? PZ_NUM("micro_batches", p->micro_batches) : PZ_STR("micro_batches", "auto");
    f[n++] = PZ_STR("activation_memory", run_plan_str(p, PZ_SET_ACTIVATION_MEMORY));
    f[n++] = PZ_NUM("aqsgd_warmup", p->aqsgd_warmup);
    f[n++] = PZ_STR("link", run_plan_str(p, PZ_SET_LINK));
    f[n++] = PZ_STR("link_bandwidth", run_plan_str(p, PZ_SET_LINK_BANDWIDTH));
    f[n++] = PZ_STR("link_latency", run_plan_str(p, PZ_SET_LINK_LATENCY));
    f[n++] = PZ_STR("link_model", run_plan_str(p, PZ_SET_LINK_MODEL));
    f[n++] = PZ_NUM("link_realtime", p->realtime);
    f[n++] = PZ_NUM("steps", (double)p->steps);
    f[n++] = PZ_NUM("checkpoint_every", (double)p->checkpoint_every);
    f[n++] = PZ_STR("pipe_schedule", run_plan_str(p, PZ_SET_PIPE_SCHEDULE));
    f[n++] = PZ_STR("compute_rate", run_plan_str(p, PZ_SET_COMPUTE_RATE));
    f[n++] = PZ_NUM("subspace", p->subspace);
    f[n++] = PZ_STR("budget", budget ? run_plan_str(p, PZ_SET_BUDGET) : "off");
    f[n++] = PZ_STR("budget_ladder", budget ? run_plan_str(p, PZ_SET_BUDGET_LADDER) : "");
    f[n++] = PZ_NUM("budget_every", budget ? p->budget.every : 0);
    f[n++] = PZ_NUM("budget_fwd_weight", budget ? p->budget.fwd_weight : 0);
    f[n++] = PZ_STR("budget_rule", budget ? run_plan_str(p, PZ_SET_BUDGET_RULE) : "");
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

void run_fingerprint(const pz_run_plan *p, char *out, size_t cap) {
    snprintf(out, cap, "model=%s data=%s limit=%lld/%lld epochs=%d batch=%d opt=%s lr=%g mom=%g wd=%g nest=%d sched=%s warm=%g seed=%llu stages=%d cuts=%s fwd=%s bwd=%s mb=%d",
             run_plan_str(p, PZ_SET_MODEL), run_plan_str(p, PZ_SET_DATA), (long long)p->limit_train, (long long)p->limit_test, p->epochs,
             p->batch, run_plan_str(p, PZ_SET_OPTIMIZER), p->lr, p->momentum, p->weight_decay, p->nesterov, run_plan_str(p, PZ_SET_SCHEDULE),
             p->warmup_epochs, (unsigned long long)p->seed, p->stages, run_plan_str(p, PZ_SET_CUTS), run_plan_str(p, PZ_SET_FWD),
             run_plan_str(p, PZ_SET_BWD), p->micro_batches);
    /* settings added later only when used: older runs keep their fingerprint */
    if (p->clip_norm > 0.0f) fp_append(out, cap, " clip=%g", p->clip_norm);
    if (p->vocab != 256) fp_append(out, cap, " tok=%s", run_plan_str(p, PZ_SET_TOKENIZER));
    if (p->grad_mask) fp_append(out, cap, " grad_mask=fwd");
    if (p->subspace) fp_append(out, cap, " subspace=%d", p->subspace);
    if (p->budget.kind != PZ_BUDGET_OFF)
        fp_append(out, cap, " budget=%s every=%d ladder=%s fwd_weight=%g", run_plan_str(p, PZ_SET_BUDGET), p->budget.every,
                  run_plan_str(p, PZ_SET_BUDGET_LADDER), p->budget.fwd_weight);
    if (p->budget.kind != PZ_BUDGET_OFF && p->budget.rule != PZ_BUDGET_SUM) fp_append(out, cap, " rule=%s", run_plan_str(p, PZ_SET_BUDGET_RULE));
    /* everything else that moves the trajectory (a run that used the defaults keeps its older fingerprint) */
    const pz_augment aug = pz_data_augment(&p->data, p->crop_pad, p->flip), def = pz_data_augment(&p->data, -1, -1);
    if (aug.pad != def.pad || aug.flip != def.flip) fp_append(out, cap, " crop_pad=%d flip=%d", aug.pad, aug.flip);
    if (p->shard_count > 0) fp_append(out, cap, " shard=%d/%d", p->shard_index + 1, p->shard_count);
    if (p->aqsgd_warmup > 0) fp_append(out, cap, " aqsgd_warmup=%d", p->aqsgd_warmup);
    if (*run_plan_str(p, PZ_SET_DATA_DIR)) fp_append(out, cap, " data_dir=%s", run_plan_str(p, PZ_SET_DATA_DIR));
    if (p->turn) fp_append(out, cap, " turn=%s", run_plan_str(p, PZ_SET_TURN));
    if (p->link->session) fp_append(out, cap, " link=%s", p->link->name);
    if (p->metrics != RUN_METRICS_JSONL) fp_append(out, cap, " metrics=%s", run_plan_str(p, PZ_SET_METRICS));
    /* the thread count orders the sums (same seed and threads, same numbers); 0, all cores, is not compared */
    if (p->threads > 0) fp_append(out, cap, " threads=%d", p->threads);
    if (p->steps > 0) fp_append(out, cap, " steps=%lld", (long long)p->steps);
    /* the emulated clock's numbers go on from the checkpoint: the same clock */
    if (p->given[PZ_SET_COMPUTE_RATE] && p->clock.kind != PZ_CLOCK_CPU) fp_append(out, cap, " compute_rate=%s", run_plan_str(p, PZ_SET_COMPUTE_RATE));
    if (p->link_model != PZ_WIRE_DUPLEX) fp_append(out, cap, " link_model=%s", run_plan_str(p, PZ_SET_LINK_MODEL));
    if (p->activation_memory > 0) fp_append(out, cap, " activation_memory=%.17g", p->activation_memory);
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

/* The record's checksum: CRC-32 of its values in one canonical text (%.17g
 * gives back the exact doubles cJSON reads), so an edited count, a step
 * or a fingerprint no longer matches the checkpoint it was written with
 * (a mid-epoch record adds its fields; an epoch's keeps the older form) */
static unsigned long state_check(const run_state *s) {
    char buf[4096];
    int n = snprintf(buf, sizeof buf, "%d %lld %lld %.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g %s", s->epoch,
                     (long long)s->global_step, (long long)s->samples, s->best, s->wall, s->emulated, s->fwd_bytes,
                     s->bwd_bytes, s->fp32_bytes, s->eval_bytes, s->link_bytes, s->fingerprint);
    if (s->step_in_epoch > 0 && n > 0 && (size_t)n < sizeof buf)
        n += snprintf(buf + n, sizeof buf - (size_t)n, " %lld %lld %lld %.17g %.17g %d", (long long)s->step_in_epoch,
                      (long long)s->ep_hits, (long long)s->ep_seen, s->ep_loss_sum, s->ep_eval_seconds, s->eval_pending);
    if (s->micro_batches > 0 && n > 0 && (size_t)n < sizeof buf) n += snprintf(buf + n, sizeof buf - (size_t)n, " mb %d", s->micro_batches);
    return crc32(0L, (const Bytef *)buf, (uInt)(n > 0 && (size_t)n < sizeof buf ? n : 0));
}

void run_state_dir(char *out, size_t cap, const char *dir, const run_state *s) {
    if (s->step_in_epoch > 0) snprintf(out, cap, "%s/checkpoint/step-%lld", dir, (long long)s->global_step);
    else run_checkpoint_dir(out, cap, dir, s->epoch);
}

/* latest.json: one line of JSON, read back with cJSON (so any spacing,
 * order or escaping reads the same); numbers in %.17g (exact doubles), the
 * fingerprint escaped by cJSON, and the checksum of them all */
pz_status run_state_write(const char *dir, const run_state *s) {
    char path[4200], buf[4096], mid[600] = "";
    snprintf(path, sizeof path, "%s/checkpoint/latest.json", dir);
    cJSON *str = cJSON_CreateString(s->fingerprint);
    char *fp = str ? cJSON_PrintUnformatted(str) : NULL;
    cJSON_Delete(str);
    if (!fp) return pz_fail(PZ_ERR_NOMEM, "out of memory writing %s", path);
    if (s->step_in_epoch > 0)
        snprintf(mid, sizeof mid,
                 "\"step_in_epoch\": %lld, \"epoch_hits\": %lld, \"epoch_seen\": %lld, \"epoch_loss_sum\": %.17g, "
                 "\"epoch_eval_seconds\": %.17g, \"eval_pending\": %d, ",
                 (long long)s->step_in_epoch, (long long)s->ep_hits, (long long)s->ep_seen, s->ep_loss_sum, s->ep_eval_seconds,
                 s->eval_pending);
    if (s->micro_batches > 0) snprintf(mid + strlen(mid), sizeof mid - strlen(mid), "\"micro_batches\": %d, ", s->micro_batches);
    const int n = snprintf(buf, sizeof buf,
                           "{\"epoch\": %d, \"global_step\": %lld, \"samples\": %lld, \"best\": %.17g, \"wall\": %.17g, "
                           "\"emulated\": %.17g, \"fwd_bytes\": %.17g, \"bwd_bytes\": %.17g, \"fp32_bytes\": %.17g, "
                           "\"eval_bytes\": %.17g, \"link_bytes\": %.17g, %s\"fingerprint\": %s, \"check\": \"%08lx\"}\n",
                           s->epoch, (long long)s->global_step, (long long)s->samples, s->best, s->wall, s->emulated,
                           s->fwd_bytes, s->bwd_bytes, s->fp32_bytes, s->eval_bytes, s->link_bytes, mid, fp, state_check(s));
    cJSON_free(fp);
    if (n < 0 || (size_t)n >= sizeof buf) return pz_fail(PZ_ERR_ARG, "the checkpoint record of %s is too long", dir);
    return pz_write_file_atomic(path, buf, (size_t)n);
}

/* a number field of a record that may be absent (0); 0: present and not a number */
static int opt_num(const cJSON *o, const char *key, double *v) {
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, key);
    *v = 0;
    if (!f) return 1;
    if (!cJSON_IsNumber(f)) return 0;
    *v = f->valuedouble;
    return 1;
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
    static const char *const mid_keys[] = {"step_in_epoch", "epoch_hits", "epoch_seen", "epoch_loss_sum", "epoch_eval_seconds",
                                           "eval_pending", "micro_batches"};
    double w[7];
    for (int i = 0; i < 7; i++)
        if (!opt_num(o, mid_keys[i], &w[i])) {
            cJSON_Delete(o);
            return pz_fail(PZ_ERR_FORMAT, "'%s' is not a pipezip checkpoint record ('%s' is not a number)", path, mid_keys[i]);
        }
    const cJSON *fp = cJSON_GetObjectItemCaseSensitive(o, "fingerprint");
    if (!cJSON_IsString(fp) || !fp->valuestring || strlen(fp->valuestring) >= sizeof s->fingerprint) {
        cJSON_Delete(o);
        return pz_fail(PZ_ERR_FORMAT, "'%s' is not a pipezip checkpoint record (no fingerprint)", path);
    }
    snprintf(s->fingerprint, sizeof s->fingerprint, "%s", fp->valuestring);
    const cJSON *ck = cJSON_GetObjectItemCaseSensitive(o, "check");
    char check[16] = "";
    if (cJSON_IsString(ck) && ck->valuestring) snprintf(check, sizeof check, "%s", ck->valuestring);
    cJSON_Delete(o);
    const int mid = w[0] > 0;
    if (v[0] < (mid ? 0 : 1) || v[0] != floor(v[0]) || v[0] > 1e6 || v[1] < 0 || v[2] < 0 || v[1] != floor(v[1]) || v[2] != floor(v[2]) ||
        w[0] < 0 || w[0] != floor(w[0]) || w[0] > v[1] || w[1] < 0 || w[2] < 0 || (w[5] != 0 && w[5] != 1) || w[6] < 0 ||
        w[6] > PZ_MAX_MICRO || w[6] != floor(w[6]))
        return pz_fail(PZ_ERR_FORMAT, "'%s' is not a pipezip checkpoint record (epoch %g, step %g, step in its epoch %g)", path, v[0],
                       v[1], w[0]);
    s->epoch = (int)v[0], s->global_step = (int64_t)v[1], s->samples = (int64_t)v[2];
    s->best = v[3], s->wall = v[4], s->emulated = v[5], s->fwd_bytes = v[6], s->bwd_bytes = v[7];
    s->fp32_bytes = v[8], s->eval_bytes = v[9], s->link_bytes = v[10];
    s->step_in_epoch = (int64_t)w[0], s->ep_hits = (int64_t)w[1], s->ep_seen = (int64_t)w[2];
    s->ep_loss_sum = w[3], s->ep_eval_seconds = w[4], s->eval_pending = (int)w[5], s->micro_batches = (int)w[6];
    char want[16], where[64];
    snprintf(want, sizeof want, "%08lx", state_check(s));
    if (mid) snprintf(where, sizeof where, "step-%lld", (long long)s->global_step);
    else snprintf(where, sizeof where, "epoch-%d", s->epoch);
    if (!check[0])
        return pz_fail(PZ_ERR_FORMAT, "'%s' has no checksum: it was edited or written by an older pipezip; it cannot be trusted "
                                      "to describe checkpoint/%s (start the run again)", path, where);
    if (strcmp(check, want))
        return pz_fail(PZ_ERR_FORMAT, "'%s' was modified after it was written (checksum %s, its values give %s): its epoch, step, "
                                      "counts or settings no longer match checkpoint/%s; restore it or start the run again",
                       path, check, want, where);
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
    char f[4300];
    snprintf(f, sizeof f, "%s/traffic.jsonl", d);
    unlink(f);
    rmdir(d);
}

/* ---- the pipeline's configuration -------------------------------------------- */
pz_status run_pipe_config(const pz_run_plan *p, const pz_model *model, const pz_dataset *train, pz_pipe_config *pc, int ranks) {
    memset(pc, 0, sizeof *pc);
    pc->model = p->model;
    pc->in = pz_dataset_shape(train);
    pc->n_classes = train->n_classes;
    pc->targets = pz_dataset_targets(train);
    pc->clip_norm = p->clip_norm;
    pc->grad_mask = p->grad_mask;
    pc->batch_max = p->batch;
    pc->seed = p->seed;
    pc->optimizer = p->optimizer;
    pc->momentum = p->momentum, pc->weight_decay = p->weight_decay, pc->nesterov = p->nesterov;
    pc->micro_batches = p->micro_batches;
    pc->schedule = p->pipe_schedule;
    pc->clock = p->clock;
    pc->max_samples = (uint32_t)train->n;
    pc->timeout_s = p->timeout;
    int stages = p->stages, n_cuts = p->n_cuts;
    const char(*cuts)[64] = p->cuts;
    const pz_model_kind *kind = pz_model_kind_of(&p->model);
    if (stages == 0 && !n_cuts) { /* auto: the model's own cuts, or one stage */
        if (ranks > 0) stages = ranks;
        else if (kind->n_default_cuts) cuts = kind->default_cuts, n_cuts = kind->n_default_cuts;
        else stages = 1;
    }
    PZ_TRY(pz_pipe_resolve_cuts(model, cuts, n_cuts, stages, pc));
    if (ranks > 0 && pc->n_stages != ranks)
        return pz_fail(PZ_ERR_ARG, "--link %s: %d stages need %d processes, %d were started (mpirun -np %d ...)", p->link->name,
                       pc->n_stages, pc->n_stages, ranks, pc->n_stages);
    PZ_TRY(pz_codec_list_resolve(&p->fwd, pc->n_stages - 1, pc->fwd, "--fwd"));
    PZ_TRY(pz_codec_list_resolve(&p->bwd, pc->n_stages - 1, pc->bwd, "--bwd"));
    pc->budget = p->budget;
    if (p->budget.kind != PZ_BUDGET_OFF) /* the stages start at the first rung; the records say "budget" (budget.jsonl has each choice) */
        for (int b = 0; b + 1 < pc->n_stages; b++) {
            pc->fwd[b] = pc->bwd[b] = p->budget.rung[0];
            snprintf(pc->fwd[b].text, sizeof pc->fwd[b].text, "budget");
            snprintf(pc->bwd[b].text, sizeof pc->bwd[b].text, "budget");
        }
    pc->emu.bandwidth = p->bandwidth, pc->emu.latency = p->latency, pc->emu.model = p->link_model;
    pc->realtime = p->realtime;
    return PZ_OK;
}

void run_plan_shape(const pz_run_plan *cfg, pz_dataset *shape) {
    memset(shape, 0, sizeof *shape);
    if (cfg->data.text) {
        /* windows of the model's context, a target per position */
        shape->tokens = cfg->model.context;
        shape->c = shape->h = 1, shape->w = shape->tokens;
        shape->n_classes = cfg->vocab; /* the vocabulary; no merges needed */
    } else {
        shape->c = cfg->data.c, shape->h = cfg->data.h, shape->w = cfg->data.w;
        shape->n_classes = cfg->data.classes;
    }
}

pz_status run_plan_resolve(const pz_run_plan *cfg) {
    if (!cfg->n_cuts && !cfg->stages) return PZ_OK; /* the default layout: decided with the processes */
    pz_dataset shape;
    run_plan_shape(cfg, &shape);
    pz_model model;
    PZ_TRY(pz_model_build(&model, &cfg->model, pz_dataset_shape(&shape), shape.n_classes, 1, cfg->seed, 0, 0));
    pz_pipe_config pc;
    const pz_status st = run_pipe_config(cfg, &model, &shape, &pc, 0);
    pz_model_free(&model);
    return st;
}

pz_status run_write_config(const char *dir, const pz_run_plan *p, const pz_model *model, const pz_dataset *train,
                           const pz_dataset *test, const pz_pipe_config *pc, int pipeline) {
    pz_field f[96];
    char seed_buf[32], cuts[256] = "";
    int n = config_fields(p, f, seed_buf);
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
