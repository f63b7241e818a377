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
/* config.json's settings: every row with a key, in the table's order, from
 * its typed value (its text for text and names), or as its RECORD says;
 * then what computes (the environment, the CPU, the BLAS, the kernels).
 * bufs: room for the rows' texts, PZ_SET_COUNT x 32 bytes. */
static int config_fields(const pz_run_plan *p, pz_field *f, char (*bufs)[32]) {
    int n = 0;
    for (int id = 0; id < PZ_SET_COUNT; id++) {
        const run_setting *s = &run_settings[id];
        if (!s->key) continue;
        const void *v = (const char *)p + s->offset;
        if (s->record) f[n++] = s->record(p, s, bufs[id], sizeof bufs[id]);
        else switch (s->kind) {
            case SET_TEXT:
            case SET_ENUM: f[n++] = PZ_STR(s->key, run_plan_str(p, (pz_setting)id)); break;
            case SET_INT:
            case SET_BOOL: f[n++] = PZ_NUM(s->key, *(const int *)v); break;
            case SET_I64: f[n++] = PZ_NUM(s->key, (double)*(const int64_t *)v); break;
            case SET_U64: f[n++] = PZ_NUM(s->key, (double)*(const uint64_t *)v); break;
            case SET_FLOAT: f[n++] = PZ_NUM(s->key, *(const float *)v); break;
            case SET_DOUBLE: f[n++] = PZ_NUM(s->key, *(const double *)v); break;
            }
    }
    f[n++] = PZ_STR("version", pz_version());
    f[n++] = PZ_STR("git_commit", PZ_GIT_COMMIT);
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
    return n;
}

/* ---- the run directory and its checkpoint record ---------------------------- */
/* The resume fingerprint: "v=2" and then every row's token in the table's
 * order, as its FP or FP_BY says. Version 2 writes codec lists canonically;
 * version 1 (no "v", earlier builds) wrote them as typed, and in another
 * order: run_fingerprint_same compares the two as sets, canonicalizing a
 * version 1 record's codec lists first, so runs started by earlier builds
 * resume. */
void run_fingerprint(const pz_run_plan *p, char *out, size_t cap) {
    snprintf(out, cap, "v=2");
    for (int id = 0; id < PZ_SET_COUNT; id++) {
        const run_setting *s = &run_settings[id];
        if (s->fp_by) {
            s->fp_by(p, s, out, cap);
            continue;
        }
        if (!s->fp) continue;
        const void *v = (const char *)p + s->offset;
        const int always = s->fp_when == FP_ALWAYS;
        switch (s->kind) {
        case SET_TEXT:
            if (always || *run_plan_str(p, (pz_setting)id)) run_fp_append(out, cap, " %s=%s", s->fp, run_plan_str(p, (pz_setting)id));
            break;
        case SET_ENUM:
            if (always || *(const int *)v) run_fp_append(out, cap, " %s=%s", s->fp, run_plan_str(p, (pz_setting)id));
            break;
        case SET_INT:
        case SET_BOOL:
            if (always || *(const int *)v) run_fp_append(out, cap, " %s=%d", s->fp, *(const int *)v);
            break;
        case SET_I64:
            if (always || *(const int64_t *)v) run_fp_append(out, cap, " %s=%lld", s->fp, (long long)*(const int64_t *)v);
            break;
        case SET_U64:
            if (always || *(const uint64_t *)v) run_fp_append(out, cap, " %s=%llu", s->fp, (unsigned long long)*(const uint64_t *)v);
            break;
        case SET_FLOAT:
            if (always || *(const float *)v != 0.0f) run_fp_append(out, cap, " %s=%g", s->fp, (double)*(const float *)v);
            break;
        case SET_DOUBLE:
            if (always || *(const double *)v != 0.0) run_fp_append(out, cap, " %s=%g", s->fp, *(const double *)v);
            break;
        }
    }
}

/* a fingerprint's tokens, sorted; a version 1 record's codec lists
 * canonical; the version itself left out: what two records compare */
static void fp_normal(const char *fp, char *out, size_t cap) {
    enum { MAX_TOKENS = 128 };
    static _Thread_local char tok[MAX_TOKENS][PZ_CODEC_LIST_ITEMS * 64];
    int n = 0, v1 = 1;
    for (const char *t = fp; *t && n < MAX_TOKENS;) {
        while (*t == ' ') t++;
        if (!*t) break;
        const char *e = strchr(t, ' ');
        if (!e) e = t + strlen(t);
        snprintf(tok[n], sizeof tok[n], "%.*s", (int)(e - t), t);
        if (!strncmp(tok[n], "v=", 2)) v1 = 0;
        else n++;
        t = e;
    }
    for (int i = 0; v1 && i < n; i++) { /* "fwd=q4" -> "fwd=q4:asym,nearest,per=tensor" */
        static _Thread_local pz_codec_list l;
        static _Thread_local pz_budget b;
        const int codecs = !strncmp(tok[i], "fwd=", 4) || !strncmp(tok[i], "bwd=", 4), ladder = !strncmp(tok[i], "ladder=", 7);
        char *val = strchr(tok[i], '=') + 1, canon[sizeof tok[0]];
        if (codecs && !pz_codec_list_parse(&l, val, RUN_MAX_CUTS, "fingerprint")) run_codec_list_canonical(&l, canon, sizeof canon);
        else if (ladder && !pz_budget_parse_ladder(&b, val, "fingerprint")) run_ladder_canonical(&b, canon, sizeof canon);
        else continue;
        snprintf(val, sizeof tok[0] - (size_t)(val - tok[i]), "%s", canon);
    }
    qsort(tok, (size_t)n, sizeof tok[0], (int (*)(const void *, const void *))strcmp);
    out[0] = 0;
    for (int i = 0; i < n; i++) run_fp_append(out, cap, "%s%s", i ? " " : "", tok[i]);
}

int run_fingerprint_same(const char *a, const char *b) {
    static _Thread_local char na[RUN_FINGERPRINT_MAX], nb[RUN_FINGERPRINT_MAX];
    fp_normal(a, na, sizeof na), fp_normal(b, nb, sizeof nb);
    return !strcmp(na, nb);
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
void run_fingerprint_diff(const char *a_, const char *b_, char *out, size_t cap) {
    static _Thread_local char a[RUN_FINGERPRINT_MAX], b[RUN_FINGERPRINT_MAX];
    fp_normal(a_, a, sizeof a), fp_normal(b_, b, sizeof b);
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
                    run_fp_append(out, cap, "%s%.*s: %.*s -> %.*s", out[0] ? "; " : "", (int)kn, t, (int)xn, eq + 1, yv ? (int)yn : 7,
                              yv ? yv : "(unset)");
                if (pass && !yv) run_fp_append(out, cap, "%s%.*s: (unset) -> %.*s", out[0] ? "; " : "", (int)kn, t, (int)xn, eq + 1);
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
    pc->delay = p->pipe_delay;
    if (p->dump_step) pc->dump_step = p->dump_step, pc->dump_dir = strchr(run_plan_str(p, PZ_SET_DUMP_BOUNDARIES), ':') + 1;
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
    pz_field f[PZ_SET_COUNT + 32];
    static char bufs[PZ_SET_COUNT][32];
    char cuts[256] = "";
    int n = config_fields(p, f, bufs);
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
