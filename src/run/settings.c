/* SPDX-License-Identifier: MIT */
/* settings.c — the table of a run's settings and the one door they enter
 * through (pz_run_plan_set): text or a number becomes the plan's typed
 * value here, checked at once; the rules that span settings are checked
 * by run_plan_check before anything starts. See settings.h. */
#include "settings.h"
#include "run_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const pz_name run_eval_modes[] = {
    {RUN_EVAL_ON, "on", "through the compressed boundaries"},
    {RUN_EVAL_OFF, "off", "through plain fp32 boundaries"},
    {RUN_EVAL_BOTH, "both", "both ways"},
    {0, NULL, NULL},
};

const pz_name run_metrics_formats[] = {
    {RUN_METRICS_JSONL, "jsonl", "a JSON object per line"},
    {RUN_METRICS_CSV, "csv", "comma-separated, a header line first"},
    {0, NULL, NULL},
};

const pz_name run_grad_masks[] = {
    {0, "none", "gradients as computed"},
    {1, "fwd", "zeroed where the activation arrived as 0"},
    {0, NULL, NULL},
};

/* ---- text into typed values --------------------------------------------------- */

/* "--flag 'text' is not one of: a|b|c" (every flag below is named as typed, "--lr") */
static pz_status not_one_of(const char *flag, const char *text, const char *choices) {
    return pz_fail(PZ_ERR_ARG, "%s '%s' is not one of: %s", flag, text, choices);
}

static pz_status enum_value(const pz_name *table, const char *text, const char *flag, int *out) {
    *out = 0;
    const pz_name *n = pz_name_find(table, text);
    char list[256];
    if (!n) return not_one_of(flag, text, pz_names_join(table, "|", "|", list, sizeof list));
    *out = n->value;
    return PZ_OK;
}

static const char *model_choices(void) {
    static char buf[256];
    if (!buf[0]) {
        pz_model_preset_list("|", "|", buf, sizeof buf);
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "|gpt:layers=L,d=D,heads=H,ctx=T");
    }
    return buf;
}
static const char *data_choices(void) {
    static char buf[256];
    return buf[0] ? buf : pz_data_names("|", "|", buf, sizeof buf);
}
static const char *link_choices(void) { return run_link_names("|", "|"); }
static const char *schedule_choices(void) {
    static char buf[128];
    return buf[0] ? buf : pz_names_join_help(pz_schedules, "|", "|", buf, sizeof buf);
}
static const char *tokenizer_choices(void) { return "bytes|bpe:N"; }
static const char *turn_choices(void) { return "run|epoch|K"; }

static pz_status parse_model(pz_run_plan *p, const char *t, const char *flag) {
    if (!pz_model_spec_parse(&p->model, t)) return PZ_OK;
    /* a spec with sizes says what is wrong with them; a name not known lists the names */
    if (strchr(t, ':') || !strcmp(t, "gpt")) return pz_fail(PZ_ERR_ARG, "%s: %s", flag, pz_last_error());
    return not_one_of(flag, t, model_choices());
}

static pz_status parse_data(pz_run_plan *p, const char *t, const char *flag) {
    if (!strncmp(t, "text:", 5)) return pz_data_spec_parse(&p->data, t);
    if (pz_data_spec_parse(&p->data, t)) return not_one_of(flag, t, data_choices());
    return PZ_OK;
}

static pz_status parse_tokenizer(pz_run_plan *p, const char *t, const char *flag) {
    (void)flag;
    return pz_tokenizer_spec(t, &p->vocab);
}


static pz_status parse_schedule(pz_run_plan *p, const char *t, const char *flag) {
    (void)flag;
    pz_schedule s = {0};
    PZ_TRY(pz_schedule_parse(&s, t));
    p->schedule = s;
    return PZ_OK;
}

/* "layer1,layer2,layer3" or "3,4,5": names, resolved against the model when it is built */
static pz_status parse_cuts(pz_run_plan *p, const char *t, const char *flag) {
    p->n_cuts = 0;
    for (const char *s = t; *s;) {
        const char *e = strchr(s, ',');
        const size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n == 0 || n >= sizeof p->cuts[0]) return pz_fail(PZ_ERR_ARG, "%s: '%.*s' is not a layer name or index", flag, (int)n, s);
        if (p->n_cuts == RUN_MAX_CUTS) return pz_fail(PZ_ERR_ARG, "%s: at most %d cuts", flag, RUN_MAX_CUTS);
        snprintf(p->cuts[p->n_cuts++], sizeof p->cuts[0], "%.*s", (int)n, s);
        s = e ? e + 1 : s + n;
    }
    return PZ_OK;
}

static pz_status parse_fwd(pz_run_plan *p, const char *t, const char *flag) { return pz_codec_list_parse(&p->fwd, t, RUN_MAX_CUTS, flag); }
static pz_status parse_bwd(pz_run_plan *p, const char *t, const char *flag) { return pz_codec_list_parse(&p->bwd, t, RUN_MAX_CUTS, flag); }


static pz_status parse_link(pz_run_plan *p, const char *t, const char *flag) {
    const run_link *l = run_link_find(t);
    if (!l) return not_one_of(flag, t, link_choices());
    p->link = l;
    return PZ_OK;
}

static pz_status parse_bandwidth(pz_run_plan *p, const char *t, const char *flag) {
    if (pz_parse_bandwidth(t, &p->bandwidth)) return pz_fail(PZ_ERR_ARG, "%s: %s", flag, pz_last_error());
    return PZ_OK;
}
static pz_status parse_latency(pz_run_plan *p, const char *t, const char *flag) {
    if (pz_parse_duration(t, &p->latency)) return pz_fail(PZ_ERR_ARG, "%s: %s", flag, pz_last_error());
    return PZ_OK;
}

static pz_status parse_micro_batches(pz_run_plan *p, const char *t, const char *flag) {
    if (!strcmp(t, "auto")) return p->micro_batches = 0, PZ_OK;
    char *end;
    const long m = strtol(t, &end, 10);
    if (end == t || *end) return pz_fail(PZ_ERR_ARG, "%s expects an integer or auto, got '%s'", flag, t);
    if (m < 1 || m > PZ_MAX_MICRO) return pz_fail(PZ_ERR_ARG, "%s must be in 1..%d or auto, got %ld", flag, PZ_MAX_MICRO, m);
    p->micro_batches = (int)m;
    return PZ_OK;
}
static const char *micro_batches_choices(void) { return "M|auto"; }
static pz_status parse_activation_memory(pz_run_plan *p, const char *t, const char *flag) {
    if (!pz_parse_size(t, &p->activation_memory))
        return pz_fail(PZ_ERR_ARG, "%s '%s' is not a size (2GB, 500MB, 1.5GiB)", flag, t);
    return PZ_OK;
}

static pz_status parse_turn(pz_run_plan *p, const char *t, const char *flag) {
    (void)flag;
    if (!strcmp(t, "run")) return p->turn = 0, PZ_OK;
    if (!strcmp(t, "epoch")) return p->turn = -1, PZ_OK;
    char *end;
    const long k = strtol(t, &end, 10);
    if (end == t || *end || k < 1 || k > 1000000000)
        return pz_fail(PZ_ERR_ARG, "--turn '%s' (expected run, epoch or a number of steps >= 1)", t);
    p->turn = (int)k;
    return PZ_OK;
}

static pz_status parse_dump(pz_run_plan *p, const char *t, const char *flag) {
    char *end;
    const long long n = strtoll(t, &end, 10);
    if (end == t || *end != ':' || n < 1 || !end[1])
        return pz_fail(PZ_ERR_ARG, "%s expects N:DIR (a step N >= 1 and a directory), got '%s'", flag, t);
    p->dump_step = n;
    return PZ_OK;
}

static pz_status parse_shard(pz_run_plan *p, const char *t, const char *flag) {
    int k, n;
    char extra;
    if (sscanf(t, "%d/%d%c", &k, &n, &extra) != 2 || n < 1 || k < 1 || k > n)
        return pz_fail(PZ_ERR_ARG, "%s expects K/N with 1 <= K <= N, got '%s'", flag, t);
    p->shard_index = k - 1, p->shard_count = n;
    return PZ_OK;
}



static pz_status parse_budget(pz_run_plan *p, const char *t, const char *flag) { return pz_budget_parse(&p->budget, t, flag); }
static pz_status parse_budget_ladder(pz_run_plan *p, const char *t, const char *flag) { return pz_budget_parse_ladder(&p->budget, t, flag); }
static const char *budget_choices(void) { return "NUMx|SIZE|RATE@TIME"; }

/* paths and other text kept as given */
static pz_status parse_compute_rate(pz_run_plan *p, const char *t, const char *flag) {
    if (pz_parse_compute_rate(t, &p->clock)) return pz_fail(PZ_ERR_ARG, "%s: %s", flag, pz_last_error());
    return PZ_OK;
}
static const char *compute_rate_choices(void) { return "cpu|wall|RATE"; }

static pz_status parse_path(pz_run_plan *p, const char *t, const char *flag) {
    (void)p, (void)t, (void)flag;
    return PZ_OK;
}

/* ---- how the records take a setting (the rows' FP_BY and RECORD) ---------------------- */

void run_fp_append(char *out, size_t cap, const char *fmt, ...) {
    const size_t n = strlen(out);
    if (n >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out + n, cap - n, fmt, ap);
    va_end(ap);
}

void run_codec_list_canonical(const pz_codec_list *l, char *buf, size_t cap) {
    buf[0] = 0;
    for (int i = 0; i < l->n; i++) {
        char one[PZ_CODEC_SPEC_MAX];
        pz_codec_desc_canonical(&l->item[i], one, sizeof one);
        if (l->boundary[i]) run_fp_append(buf, cap, "%s%d=%s", i ? "," : "", l->boundary[i], one);
        else run_fp_append(buf, cap, "%s%s", i ? "," : "", one);
    }
}

void run_ladder_canonical(const pz_budget *b, char *buf, size_t cap) {
    buf[0] = 0;
    for (int i = 0; i < b->n_rungs; i++) {
        char one[PZ_CODEC_SPEC_MAX];
        pz_codec_desc_canonical(&b->rung[i], one, sizeof one);
        run_fp_append(buf, cap, "%s%s", i ? "/" : "", one);
    }
}

static void fp_tokenizer(const pz_run_plan *p, const run_setting *s, char *out, size_t cap) {
    if (p->vocab != 256) run_fp_append(out, cap, " tok=%s", run_plan_str(p, s->id));
}
static void fp_limit(const pz_run_plan *p, const run_setting *s, char *out, size_t cap) {
    (void)s;
    run_fp_append(out, cap, " limit=%lld/%lld", (long long)p->limit_train, (long long)p->limit_test);
}
/* the augmentation as it runs, only where it is not the dataset's own */
static void fp_augment(const pz_run_plan *p, const run_setting *s, char *out, size_t cap) {
    (void)s;
    const pz_augment aug = pz_data_augment(&p->data, p->crop_pad, p->flip), def = pz_data_augment(&p->data, -1, -1);
    if (aug.pad != def.pad || aug.flip != def.flip) run_fp_append(out, cap, " crop_pad=%d flip=%d", aug.pad, aug.flip);
}
/* codec lists canonically: "q4" and "q4:per=tensor" are the same run */
static void fp_codecs(const pz_run_plan *p, const run_setting *s, char *out, size_t cap) {
    char list[PZ_CODEC_LIST_ITEMS * PZ_CODEC_SPEC_MAX];
    run_codec_list_canonical(s->id == PZ_SET_FWD ? &p->fwd : &p->bwd, list, sizeof list);
    run_fp_append(out, cap, " %s=%s", s->key, list);
}
static void fp_micro_batches(const pz_run_plan *p, const run_setting *s, char *out, size_t cap) {
    (void)s;
    run_fp_append(out, cap, " mb=%d", p->micro_batches);
}
static void fp_link(const pz_run_plan *p, const run_setting *s, char *out, size_t cap) {
    (void)s;
    if (p->link->session) run_fp_append(out, cap, " link=%s", p->link->name);
}
static void fp_turn(const pz_run_plan *p, const run_setting *s, char *out, size_t cap) {
    if (p->turn) run_fp_append(out, cap, " turn=%s", run_plan_str(p, s->id));
}
static void fp_shard(const pz_run_plan *p, const run_setting *s, char *out, size_t cap) {
    (void)s;
    if (p->shard_count > 0) run_fp_append(out, cap, " shard=%d/%d", p->shard_index + 1, p->shard_count);
}
/* the emulated clock's numbers go on from the checkpoint: the same clock */
static void fp_compute_rate(const pz_run_plan *p, const run_setting *s, char *out, size_t cap) {
    if (p->given[s->id] && p->clock.kind != PZ_CLOCK_CPU) run_fp_append(out, cap, " compute_rate=%s", run_plan_str(p, s->id));
}
static void fp_pipe_delay(const pz_run_plan *p, const run_setting *s, char *out, size_t cap) {
    if (pz_pipe_schedule_overlaps(p->pipe_schedule)) run_fp_append(out, cap, " pipe_delay=%d", p->pipe_delay);
    (void)s;
}
static void fp_budget(const pz_run_plan *p, const run_setting *s, char *out, size_t cap) {
    if (p->budget.kind == PZ_BUDGET_OFF) return;
    char ladder[PZ_BUDGET_RUNGS * PZ_CODEC_SPEC_MAX];
    run_ladder_canonical(&p->budget, ladder, sizeof ladder);
    run_fp_append(out, cap, " budget=%s every=%d ladder=%s fwd_weight=%g", run_plan_str(p, s->id), p->budget.every, ladder,
                  p->budget.fwd_weight);
    if (p->budget.rule != PZ_BUDGET_SUM) run_fp_append(out, cap, " rule=%s", run_plan_str(p, PZ_SET_BUDGET_RULE));
}
static void fp_activation_memory(const pz_run_plan *p, const run_setting *s, char *out, size_t cap) {
    (void)s;
    if (p->activation_memory > 0) run_fp_append(out, cap, " activation_memory=%.17g", p->activation_memory);
}

/* config.json: the augmentation as it runs (the dataset's default resolved) */
static pz_field record_augment(const pz_run_plan *p, const run_setting *s, char *buf, size_t cap) {
    (void)buf, (void)cap;
    const pz_augment aug = pz_data_augment(&p->data, p->crop_pad, p->flip);
    return PZ_NUM(s->key, s->id == PZ_SET_CROP_PAD ? aug.pad : aug.flip);
}
/* a 64-bit seed as text: a JSON number would round it */
static pz_field record_seed(const pz_run_plan *p, const run_setting *s, char *buf, size_t cap) {
    snprintf(buf, cap, "%llu", (unsigned long long)p->seed);
    return PZ_STR(s->key, buf);
}
/* the threads the run has (0 given: all cores) */
static pz_field record_threads(const pz_run_plan *p, const run_setting *s, char *buf, size_t cap) {
    (void)p, (void)buf, (void)cap;
    return PZ_NUM(s->key, pz_get_threads());
}
/* a budget chooses the codecs as it runs (budget.jsonl) */
static pz_field record_codecs(const pz_run_plan *p, const run_setting *s, char *buf, size_t cap) {
    (void)buf, (void)cap;
    return PZ_STR(s->key, p->budget.kind != PZ_BUDGET_OFF ? "budget" : run_plan_str(p, s->id));
}
static pz_field record_micro_batches(const pz_run_plan *p, const run_setting *s, char *buf, size_t cap) {
    (void)buf, (void)cap;
    return p->micro_batches ? PZ_NUM(s->key, p->micro_batches) : PZ_STR(s->key, "auto");
}
/* the budget's settings, as off when there is none */
static pz_field record_budget(const pz_run_plan *p, const run_setting *s, char *buf, size_t cap) {
    (void)buf, (void)cap;
    const int on = p->budget.kind != PZ_BUDGET_OFF;
    switch (s->id) {
    case PZ_SET_BUDGET: return PZ_STR(s->key, on ? run_plan_str(p, s->id) : "off");
    case PZ_SET_BUDGET_EVERY: return PZ_NUM(s->key, on ? p->budget.every : 0);
    case PZ_SET_BUDGET_FWD_WEIGHT: return PZ_NUM(s->key, on ? p->budget.fwd_weight : 0);
    default: return PZ_STR(s->key, on ? run_plan_str(p, s->id) : "");
    }
}

/* ---- the table ---------------------------------------------------------------------- */
/* A row: what the setting is called and typed as, then (after HELP) how the
 * records take it: FP(key, when) in the resume fingerprint, FP_BY(fn) when
 * its token(s) need more than its value, RECORD(fn) when config.json needs
 * more than its value (run_config.c writes both from the rows). */
#define NUM(ID, FLAG, KEY, KIND, FIELD, MIN, MAX, META, HELP, ...)                                                          \
    [ID] = {.id = ID, .flag = FLAG, .key = KEY, .kind = KIND, .offset = offsetof(struct pz_run_plan, FIELD), .min = MIN,   \
            .max = MAX, .metavar = META, .help = HELP, __VA_ARGS__}
#define TEXT(ID, FLAG, KEY, PARSE, DEF, META, HELP, CHOICES, ...)                                                           \
    [ID] = {.id = ID, .flag = FLAG, .key = KEY, .kind = SET_TEXT, .parse = PARSE, .def = DEF, .metavar = META, .help = HELP, \
            .choices = CHOICES, __VA_ARGS__}
#define ENUM(ID, FLAG, KEY, FIELD, NAMES, DEF, META, HELP, ...)                                                             \
    [ID] = {.id = ID, .flag = FLAG, .key = KEY, .kind = SET_ENUM, .offset = offsetof(struct pz_run_plan, FIELD), .def = DEF,  \
            .metavar = META, .help = HELP, .names = NAMES, __VA_ARGS__}
#define DESCRIBED .describe = 1
#define FP(KEY, WHEN) .fp = KEY, .fp_when = WHEN
#define FP_BY(FN) .fp_by = FN
#define RECORD(FN) .record = FN

static const char *language_defaults(void); /* below, beside kind_defaults */

const run_setting run_settings[PZ_SET_COUNT] = {
    TEXT(PZ_SET_MODEL, "model", "model", parse_model, "resnet8", "NAME",
         "model: a preset (see pipezip models) or a GPT of any shape, gpt:layers=L,d=D,heads=H,ctx=T (or a gpt preset with some changed, gpt-small:layers=8); a language model (gpt-*) makes the defaults of the settings not given",
         model_choices, FP("model", FP_ALWAYS), .help_more = language_defaults),
    TEXT(PZ_SET_DATA, "data", "data", parse_data, "fashion-mnist", "NAME",
         "dataset (kjv: the King James Bible from Debian's bible-kjv; text:FILE any UTF-8 text; for gpt-*, tokens by --tokenizer)",
         data_choices, FP("data", FP_ALWAYS)),
    TEXT(PZ_SET_TOKENIZER, "tokenizer", "tokenizer", parse_tokenizer, "bytes", "SPEC",
         "text's tokens: bytes (256) or bpe:N, byte-level BPE of N tokens learned from the training split, kept in the run directory",
         tokenizer_choices, FP_BY(fp_tokenizer)),
    TEXT(PZ_SET_DATA_DIR, "data-dir", "data_dir", parse_path, NULL, "DIR",
         "dataset directory (default: fashion-mnist and mnist under /usr/share/datasets, cifar10 in data/cifar-10-batches-bin, the kjv text cached in data/)",
         NULL, FP("data_dir", FP_NONZERO)),
    NUM(PZ_SET_LIMIT_TRAIN, "limit-train", "limit_train", SET_I64, limit_train, 0, 1e12, "N", "use only the first N training examples (0 = all)", FP_BY(fp_limit)),
    NUM(PZ_SET_LIMIT_TEST, "limit-test", "limit_test", SET_I64, limit_test, 0, 1e12, "N", "use only the first N test examples (0 = all)"),
    NUM(PZ_SET_EPOCHS, "epochs", "epochs", SET_INT, epochs, 1, 100000, "N", "training epochs", FP("epochs", FP_ALWAYS)),
    NUM(PZ_SET_BATCH, "batch", "batch", SET_INT, batch, 1, 65536, "N", "batch size", FP("batch", FP_ALWAYS)),
    ENUM(PZ_SET_OPTIMIZER, "optimizer", "optimizer", optimizer, pz_optimizers, "sgd", "NAME", "optimizer", FP("opt", FP_ALWAYS)),
    NUM(PZ_SET_LR, "lr", "lr", SET_FLOAT, lr, 1e-9, 100, "X", "peak learning rate", FP("lr", FP_ALWAYS)),
    NUM(PZ_SET_MOMENTUM, "momentum", "momentum", SET_FLOAT, momentum, 0, 0.999999, "X", "SGD momentum", FP("mom", FP_ALWAYS)),
    NUM(PZ_SET_NESTEROV, "nesterov", "nesterov", SET_BOOL, nesterov, 0, 0, NULL, "Nesterov momentum (SGD)", FP("nest", FP_ALWAYS)),
    NUM(PZ_SET_WEIGHT_DECAY, "weight-decay", "weight_decay", SET_FLOAT, weight_decay, 0, 10, "X", "weight decay (SGD: L2; AdamW: decoupled)", FP("wd", FP_ALWAYS)),
    TEXT(PZ_SET_SCHEDULE, "schedule", "schedule", parse_schedule, "onecycle", "SPEC",
         "learning-rate schedule (cosine and linear anneal to 0 after --warmup; onecycle: PCT of the steps rising)", schedule_choices, FP("sched", FP_ALWAYS)),
    NUM(PZ_SET_WARMUP, "warmup", "warmup_epochs", SET_FLOAT, warmup_epochs, 0, 1e6, "EPOCHS", "linear LR warm-up (constant, step, cosine, linear); gpt-*'s default, 0.05, is with --steps 5% of the steps", FP("warm", FP_ALWAYS)),
    NUM(PZ_SET_CLIP_NORM, "clip-norm", "clip_norm", SET_FLOAT, clip_norm, 0, 1e9, "X",
        "clip the gradients' global norm, over every stage, to X (0 = off; 1 is usual for gpt-*)", FP("clip", FP_NONZERO)),
    NUM(PZ_SET_CROP_PAD, "crop-pad", "augment_pad", SET_INT, crop_pad, -1, 16, "PX",
        "random-crop padding in pixels (0 = no crop, -1 = dataset default: 4 for cifar10, else 0)", FP_BY(fp_augment), RECORD(record_augment)),
    NUM(PZ_SET_FLIP, "flip", "augment_flip", SET_BOOL, flip, 0, 0, NULL, "random horizontal flips (default: on for fashion-mnist and cifar10)", RECORD(record_augment)),
    NUM(PZ_SET_SEED, "seed", "seed", SET_U64, seed, 0, 0, "N", "seed for initialisation, shuffling and augmentation", FP("seed", FP_ALWAYS), RECORD(record_seed)),
    NUM(PZ_SET_THREADS, "threads", "threads", SET_INT, threads, 0, 1024, "N", "threads (0 = all cores)", FP("threads", FP_NONZERO), RECORD(record_threads)),
    NUM(PZ_SET_STAGES, "stages", "stages", SET_INT, stages, 1, 16, "S",
        "cut the model into S stages balanced by compute (1: no pipeline; default: resnets in 4 stages, a cut after each residual group as in Paper A; other models 1)", FP("stages", FP_ALWAYS)),
    TEXT(PZ_SET_CUTS, "cuts", "cuts", parse_cuts, NULL, "LIST",
         "cut after these layers (indices or names from pipezip models, e.g. layer1,layer2,layer3)", NULL, FP("cuts", FP_ALWAYS)),
    TEXT(PZ_SET_FWD, "fwd", "fwd", parse_fwd, "q4", "SPEC",
         "codec for activations: SPEC for every boundary, N=SPEC for boundary N (1 = first cut), e.g. q4 or q8,1=q2 (see pipezip codec --help)",
         NULL, FP_BY(fp_codecs), RECORD(record_codecs)),
    TEXT(PZ_SET_BWD, "bwd", "bwd", parse_bwd, "q8", "SPEC", "codec for gradients, as --fwd", NULL, FP_BY(fp_codecs), RECORD(record_codecs)),
    ENUM(PZ_SET_EVAL_COMPRESS, "eval-compress", "eval_compress", eval_compress, run_eval_modes, "both", "MODE",
         "test through compressed boundaries, plain ones, or both"),
    TEXT(PZ_SET_MICRO_BATCHES, "micro-batches", "micro_batches", parse_micro_batches, "1", "M",
         "split every batch into M micro-batches that flow through the stages in turn; auto: after the first step (in 1), the "
         "count that splits the batch with the least step over the emulated links for the bytes that step measured (the dry "
         "timing mode of pipezip time), printed and recorded",
         micro_batches_choices, FP_BY(fp_micro_batches), RECORD(record_micro_batches)),
    NUM(PZ_SET_AQSGD_WARMUP, "aqsgd-warmup", "aqsgd_warmup", SET_INT, aqsgd_warmup, 0, 100000, "EPOCHS",
        "aqsgd(...) codecs send uncompressed for the first EPOCHS epochs, filling their buffers", FP("aqsgd_warmup", FP_NONZERO)),
    TEXT(PZ_SET_LINK, "link", "link", parse_link, "inproc", "KIND",
         "how stages talk: threads in this process, Open MPI ranks (mpirun -np S), or ZeroMQ to a pipezip serve", link_choices, FP_BY(fp_link)),
    TEXT(PZ_SET_CONNECT, "connect", NULL, parse_path, NULL, "ENDPOINT", "--link zmq: the server, e.g. tcp://server:5555", NULL),
    TEXT(PZ_SET_CLIENT_KEY, "client-key", NULL, parse_path, NULL, "FILE", "--link zmq: this client's CURVE secret key (pipezip keygen)", NULL),
    TEXT(PZ_SET_SERVER_KEY, "server-key", NULL, parse_path, NULL, "FILE",
         "--link zmq: the server's CURVE public key (FILE.pub from pipezip keygen)", NULL),
    TEXT(PZ_SET_ACTIVATION_MEMORY, "activation-memory", "activation_memory", parse_activation_memory, NULL, "SIZE",
         "--micro-batches auto: only counts whose busiest stage would hold at most this much activation memory (2GB; "
         "each stage's layers built for one micro-batch of that count, before the first step)", NULL, FP_BY(fp_activation_memory)),
    TEXT(PZ_SET_LINK_BANDWIDTH, "link-bandwidth", "link_bandwidth", parse_bandwidth, NULL, "RATE",
         "emulate this bandwidth at every boundary: 10mbit, 100mbit, 1gbit, 12.5MB/s", NULL),
    TEXT(PZ_SET_LINK_LATENCY, "link-latency", "link_latency", parse_latency, NULL, "TIME",
         "emulate this one-way latency at every boundary: 10ms, 250us", NULL),
    ENUM(PZ_SET_LINK_MODEL, "link-model", "link_model", link_model, pz_wire_models, "duplex", "MODEL",
         "how emulated links share their wires", DESCRIBED, FP("link_model", FP_NONZERO)),
    NUM(PZ_SET_LINK_REALTIME, "link-realtime", "link_realtime", SET_BOOL, realtime, 0, 0, NULL,
        "really hold frames back (default: a virtual clock reports the time the run would take)"),
    NUM(PZ_SET_TIMEOUT, "timeout", NULL, SET_DOUBLE, timeout, 0.001, 1e6, "SECONDS", "a stage or peer silent this long stops the run with an error"),
    TEXT(PZ_SET_TURN, "turn", "turn", parse_turn, "run", "WHEN",
         "--link zmq: give the next client its turn after the whole run, every epoch, or every K steps (split learning's round robin; each turn starts from the client-side weights the last one left)",
         turn_choices, FP_BY(fp_turn)),
    TEXT(PZ_SET_SHARD, "shard", "shard", parse_shard, NULL, "K/N",
         "train on the K-th of N equal slices of the training set (split-learning clients)", NULL, FP_BY(fp_shard)),
    TEXT(PZ_SET_RESUME, "resume", NULL, parse_path, NULL, "DIR",
         "continue the run in DIR from its last checkpoint (same flags as the original run)", NULL),
    TEXT(PZ_SET_OUT, "out", NULL, parse_path, NULL, "DIR", "run directory (default runs/DATE-MODEL-DATA)", NULL),
    ENUM(PZ_SET_METRICS, "metrics", "metrics", metrics, run_metrics_formats, "jsonl", "FORMAT", "metrics file format", FP("metrics", FP_NONZERO)),
    NUM(PZ_SET_LOG_EVERY, "log-every", "log_every", SET_INT, log_every, 1, 1000000, "N", "write a step record every N steps"),
    ENUM(PZ_SET_GRAD_MASK, "grad-mask", "grad_mask", grad_mask, run_grad_masks, "none", "MODE",
         "fwd: zero each boundary's gradient where its activation arrived as 0, before --bwd (the derivative of a forward TopK; Paper A's GPT-2 runs reuse the forward mask)", FP("grad_mask", FP_NONZERO)),
    NUM(PZ_SET_EVAL_EVERY, "eval-every", "eval_every", SET_INT, eval_every, 0, 100000000, "N",
        "also evaluate every N steps (validation loss, bits per byte, plain and compressed) into evals.jsonl (0 = at epoch ends only)"),
    TEXT(PZ_SET_COMMAND_LINE, NULL, "command_line", parse_path, NULL, NULL, "how the run was started", NULL),
    NUM(PZ_SET_STEPS, "steps", "steps", SET_I64, steps, 0, 1e12, "N",
        "train for N optimizer steps (the epochs follow from it, the last one cut short; 0 = --epochs decides)", FP("steps", FP_NONZERO)),
    NUM(PZ_SET_CHECKPOINT_EVERY, "checkpoint-every", "checkpoint_every", SET_I64, checkpoint_every, 0, 1e12, "N",
        "also checkpoint every N steps (0 = at epoch ends only; SIGTERM and Ctrl-C always checkpoint the step they stop after)"),
    ENUM(PZ_SET_PIPE_SCHEDULE, "pipe-schedule", "pipe_schedule", pipe_schedule, pz_pipe_schedules, "gpipe", "KIND",
         "how stages order micro-batches (the same numbers either way)", DESCRIBED),
    TEXT(PZ_SET_COMPUTE_RATE, "compute-rate", "compute_rate", parse_compute_rate, "cpu", "RATE",
         "what the emulated clock charges a stage for its compute: cpu (its thread's CPU time), wall (wall time, shared cores "
         "included), or its counted FLOPs at RATE, an accelerator's sustained throughput (100tflops, 2.5e14)",
         compute_rate_choices, FP_BY(fp_compute_rate)),
    NUM(PZ_SET_SUBSPACE, "subspace", "subspace", SET_INT, subspace, 0, 65536, "K",
        "gpt-*: the residual stream between blocks is K coefficients of one fixed subspace and every branch reads it through "
        "token and position tables of its own, rebuilt from the ids at any stage, so a boundary carries K numbers per token "
        "(and the ids) through --fwd and --bwd (Protocol Models; 0 = off)", FP("subspace", FP_NONZERO)),
    NUM(PZ_SET_PROJECT, "project", "project", SET_INT, project, 0, 65536, "K",
        "with --subspace and --cuts between blocks: at each cut the sending stage projects the stream's coefficients onto K "
        "learned orthonormal directions (after adding a learned table of the ids) and the receiving stage lifts them back "
        "through its own, so the boundary carries K numbers per token; stages keep the full --subspace width inside "
        "(after MAPL; 0 = off)", FP("project", FP_NONZERO)),
    TEXT(PZ_SET_BUDGET, "budget", "budget", parse_budget, NULL, "BUDGET",
         "choose each boundary's and direction's codec from --budget-ladder, the least measured error that fits: a traffic "
         "reduction against fp32 (40x: both directions, headers included), bytes per step over all boundaries (2MB), or a link "
         "rate and a step time (200mbit@50ms: every link direction's step within it); re-decided after step 1 and every "
         "--budget-every steps from each sender's measurements, every choice in budget.jsonl (replaces --fwd and --bwd)",
         budget_choices, FP_BY(fp_budget), RECORD(record_budget)),
    TEXT(PZ_SET_BUDGET_LADDER, "budget-ladder", "budget_ladder", parse_budget_ladder, PZ_BUDGET_LADDER_DEFAULT, "LADDER",
         "--budget's codecs, best first, SPEC/SPEC/...: stateless (any receiver decodes them), up to 8", NULL, RECORD(record_budget)),
    NUM(PZ_SET_BUDGET_EVERY, "budget-every", "budget_every", SET_INT, budget.every, 1, 1000000000, "N",
        "--budget: measure the rungs and choose again every N steps (and after step 1)", RECORD(record_budget)),
    NUM(PZ_SET_BUDGET_FWD_WEIGHT, "budget-fwd-weight", "budget_fwd_weight", SET_DOUBLE, budget.fwd_weight, 0.001, 1000, "W",
        "--budget: an activation's squared relative error counts W times a gradient's in the choice (activations are also "
        "what evaluation through the compressed boundaries sees)", RECORD(record_budget)),
    ENUM(PZ_SET_BUDGET_RULE, "budget-rule", "budget_rule", budget.rule, pz_budget_rules, "sum", "RULE",
         "--budget: minimize the summed error of the boundaries' directions, or the largest (then the sum)", RECORD(record_budget)),
    NUM(PZ_SET_PIPE_DELAY, "pipe-delay", "pipe_delay", SET_INT, pipe_delay, 0, 1, "D",
        "--pipe-schedule async: each batch's gradient is applied D steps late, through the weights its forward used (1: "
        "PipeDream-2BW's W_u = W_{u-1} - lr g_u(W_{u-2}); 0: every step ends with its batch done, 1F1B's numbers)",
        FP_BY(fp_pipe_delay)),
    TEXT(PZ_SET_DUMP_BOUNDARIES, "dump-boundaries", "dump_boundaries", parse_dump, NULL, "N:DIR",
         "write every boundary's training tensors of step N (each micro-batch's activations and gradients as they go into "
         "--fwd and --bwd) into DIR as .npy files, b<B>_fwd_m<M>.npy and b<B>_bwd_m<M>.npy (boundary B from 1): what the "
         "codecs see in a real run, for pipezip codec encode and pipezip bench codecs --data FILE", NULL),
};

const run_setting *run_setting_of(pz_setting id) { return (unsigned)id < PZ_SET_COUNT ? &run_settings[id] : NULL; }

const char *run_setting_choices(const run_setting *s) {
    static char joined[PZ_SET_COUNT][128];
    if (s->choices) return s->choices();
    if (!s->names) return NULL;
    char *buf = joined[s->id];
    return buf[0] ? buf : pz_names_join(s->names, "|", "|", buf, sizeof joined[0]);
}

const char *run_setting_help(const run_setting *s) {
    static char described[PZ_SET_COUNT][1024];
    if (s->help_more) {
        static char more[PZ_SET_COUNT][1024];
        if (!more[s->id][0]) snprintf(more[s->id], sizeof more[0], "%s%s", s->help, s->help_more());
        return more[s->id];
    }
    if (!s->describe || !s->names) return s->help;
    char *buf = described[s->id];
    if (buf[0]) return buf;
    size_t n = (size_t)snprintf(buf, sizeof described[0], "%s:", s->help);
    for (const pz_name *v = s->names; v->name && n < sizeof described[0]; v++)
        n += (size_t)snprintf(buf + n, sizeof described[0] - n, "%s %s (%s)", v == s->names ? "" : ";", v->name, v->help);
    return buf;
}

/* ---- the door ---------------------------------------------------------------------- */

static void *field(pz_run_plan *p, const run_setting *s) { return (char *)p + s->offset; }

static pz_status keep_text(pz_run_plan *p, pz_setting id, const char *text) {
    char *t = text ? strdup(text) : NULL;
    if (text && !t) return pz_fail(PZ_ERR_NOMEM, "out of memory");
    free(p->text[id]);
    p->text[id] = t;
    return PZ_OK;
}

static pz_status set_number(pz_run_plan *p, const run_setting *s, double x, const char *as_text, const char *flag) {
    const int ranged = !(s->min == 0 && s->max == 0);
    switch (s->kind) {
    case SET_INT:
    case SET_I64:
        if (x != floor(x) || !isfinite(x)) return pz_fail(PZ_ERR_ARG, "%s expects an integer, got '%s'", flag, as_text);
        if (ranged && (x < s->min || x > s->max))
            return pz_fail(PZ_ERR_ARG, "%s must be in %.0f..%.0f, got %lld", flag, s->min, s->max, (long long)x);
        if (s->kind == SET_INT) *(int *)field(p, s) = (int)x;
        else *(int64_t *)field(p, s) = (int64_t)x;
        return PZ_OK;
    case SET_FLOAT:
    case SET_DOUBLE:
        if (!isfinite(x)) return pz_fail(PZ_ERR_ARG, "%s expects a number, got '%s'", flag, as_text);
        if (ranged && (x < s->min || x > s->max)) return pz_fail(PZ_ERR_ARG, "%s must be in [%g, %g], got %g", flag, s->min, s->max, x);
        if (s->kind == SET_DOUBLE) *(double *)field(p, s) = x;
        else *(float *)field(p, s) = (float)x;
        return PZ_OK;
    case SET_BOOL:
        if (x != 0 && x != 1) return pz_fail(PZ_ERR_ARG, "%s expects on or off, got '%s'", flag, as_text);
        *(int *)field(p, s) = (int)x;
        return PZ_OK;
    case SET_U64:
        if (x < 0 || x != floor(x) || x > 18446744073709551615.0)
            return pz_fail(PZ_ERR_ARG, "%s expects a non-negative integer, got '%s'", flag, as_text);
        *(uint64_t *)field(p, s) = (uint64_t)x;
        return PZ_OK;
    default: return pz_fail(PZ_ERR_ARG, "%s takes text, not a number", flag);
    }
}

static const char *flag_of(const run_setting *s, char *buf, size_t cap) {
    snprintf(buf, cap, "--%s", s->flag ? s->flag : s->key);
    return buf;
}

/* The settings whose usual value depends on the model's kind: an image
 * model's (pipezip train's defaults: resnet8 on Fashion-MNIST, SGD with a
 * one-cycle LR) and a language model's (the KJV text, AdamW, a cosine LR
 * with a short warm-up and clipped gradients, as docs/RESULTS.md's GPT
 * experiments). A setting not given follows --model's kind. */
static const struct {
    pz_setting id;
    const char *value[PZ_DEFAULTS_COUNT]; /* by the model's profile: image, language */
} kind_defaults[] = {
    {PZ_SET_DATA, {"fashion-mnist", "kjv"}}, {PZ_SET_EPOCHS, {"10", "1"}},        {PZ_SET_BATCH, {"128", "16"}},
    {PZ_SET_OPTIMIZER, {"sgd", "adamw"}},     {PZ_SET_LR, {"0.1", "2e-3"}},        {PZ_SET_WEIGHT_DECAY, {"5e-4", "0.1"}},
    {PZ_SET_SCHEDULE, {"onecycle", "cosine"}}, {PZ_SET_WARMUP, {"0", "0.05"}},    {PZ_SET_CLIP_NORM, {"0", "1"}},
};

/* " --data kjv --epochs 1 ...": the language profile's defaults, for --model's help */
static const char *language_defaults(void) {
    static char buf[320];
    if (buf[0]) return buf;
    for (size_t i = 0; i < sizeof kind_defaults / sizeof *kind_defaults; i++)
        run_fp_append(buf, sizeof buf, " --%s %s", run_settings[kind_defaults[i].id].flag, kind_defaults[i].value[PZ_DEFAULTS_LANGUAGE]);
    return buf;
}

static pz_status kind_defaults_of_model(pz_run_plan *p) {
    const pz_defaults_profile profile = pz_model_kind_of(&p->model)->profile;
    for (size_t i = 0; i < sizeof kind_defaults / sizeof *kind_defaults; i++) {
        const pz_setting id = kind_defaults[i].id;
        if (p->given[id]) continue;
        char flag[80];
        PZ_TRY(run_plan_set_as(p, id, kind_defaults[i].value[profile],
                               flag_of(run_setting_of(id), flag, sizeof flag)));
        p->given[id] = 0; /* still a default */
    }
    return PZ_OK;
}

pz_status run_plan_set_as(pz_run_plan *p, pz_setting id, const char *text, const char *flag) {
    const run_setting *s = run_setting_of(id);
    if (!s) return pz_fail(PZ_ERR_ARG, "setting %d does not exist", (int)id);
    if (!text) return pz_fail(PZ_ERR_ARG, "%s needs a value", flag);
    char *end;
    errno = 0;
    if (!*text && s->flag && (s->kind == SET_TEXT || s->kind == SET_ENUM)) return pz_fail(PZ_ERR_ARG, "%s needs a non-empty value", flag);
    switch (s->kind) {
    case SET_TEXT:
        char *was = p->text[id];
        p->text[id] = NULL;
        pz_status st = keep_text(p, id, text);
        if (!st) st = s->parse(p, p->text[id], flag);
        if (st) { /* a refused value leaves the setting as it was */
            char why[1024];
            snprintf(why, sizeof why, "%s", pz_last_error());
            free(p->text[id]);
            p->text[id] = was;
            if (was) (void)s->parse(p, was, flag);
            return pz_fail(st, "%s", why);
        }
        free(was);
        break;
    case SET_INT:
    case SET_I64: {
        const long long x = strtoll(text, &end, 10);
        if (end == text || *end || errno) return pz_fail(PZ_ERR_ARG, "%s expects an integer, got '%s'", flag, text);
        PZ_TRY(set_number(p, s, (double)x, text, flag));
        if (s->kind == SET_I64) *(int64_t *)field(p, s) = x; /* exact beyond 2^53 */
        break;
    }
    case SET_U64: {
        if (*text == '-') return pz_fail(PZ_ERR_ARG, "%s expects a non-negative integer, got '%s'", flag, text);
        const unsigned long long x = strtoull(text, &end, 10);
        if (end == text || *end || errno) return pz_fail(PZ_ERR_ARG, "%s expects a non-negative integer, got '%s'", flag, text);
        *(uint64_t *)field(p, s) = x;
        break;
    }
    case SET_FLOAT:
    case SET_DOUBLE: {
        const double x = strtod(text, &end);
        if (end == text || *end || !isfinite(x)) return pz_fail(PZ_ERR_ARG, "%s expects a number, got '%s'", flag, text);
        PZ_TRY(set_number(p, s, x, text, flag));
        break;
    }
    case SET_ENUM: {
        int v = 0;
        PZ_TRY(enum_value(s->names, text, flag, &v));
        *(int *)field(p, s) = v;
        break;
    }
    case SET_BOOL:
        if (!strcmp(text, "on") || !strcmp(text, "true") || !strcmp(text, "1") || !strcmp(text, "yes")) *(int *)field(p, s) = 1;
        else if (!strcmp(text, "off") || !strcmp(text, "false") || !strcmp(text, "0") || !strcmp(text, "no")) *(int *)field(p, s) = 0;
        else return pz_fail(PZ_ERR_ARG, "%s expects on or off, got '%s'", flag, text);
        break;
    }
    if (s->kind != SET_TEXT) PZ_TRY(keep_text(p, id, text));
    p->given[id] = 1;
    if (id == PZ_SET_MODEL) PZ_TRY(kind_defaults_of_model(p));
    p->model.subspace = pz_model_kind_of(&p->model)->subspace ? p->subspace : 0; /* the model's value, whichever came first */
    p->model.project = p->model.subspace ? p->project : 0;
    p->model.project_after = p->model.project ? pz_model_cut_blocks(&p->model, p->cuts, p->n_cuts) : 0;
    return PZ_OK;
}

pz_status pz_run_plan_set(pz_run_plan *p, pz_setting id, const char *text) {
    if (!p) return pz_fail(PZ_ERR_ARG, "pz_run_plan_set: no plan (create one with pz_run_plan_create)");
    const run_setting *s = run_setting_of(id);
    if (!s) return pz_fail(PZ_ERR_ARG, "setting %d does not exist", (int)id);
    char flag[80];
    return run_plan_set_as(p, id, text, flag_of(s, flag, sizeof flag));
}

pz_status pz_run_plan_set_number(pz_run_plan *p, pz_setting id, double v) {
    if (!p) return pz_fail(PZ_ERR_ARG, "pz_run_plan_set_number: no plan (create one with pz_run_plan_create)");
    const run_setting *s = run_setting_of(id);
    if (!s) return pz_fail(PZ_ERR_ARG, "setting %d does not exist", (int)id);
    char text[64], flag[80];
    snprintf(text, sizeof text, "%.17g", v);
    if (s->kind == SET_TEXT) return pz_run_plan_set(p, id, text);
    PZ_TRY(set_number(p, s, v, text, flag_of(s, flag, sizeof flag)));
    PZ_TRY(keep_text(p, id, text));
    p->given[id] = 1;
    return PZ_OK;
}

pz_status pz_run_plan_create(pz_run_plan **out) {
    if (!out) return pz_fail(PZ_ERR_ARG, "pz_run_plan_create: nowhere to put the plan");
    *out = NULL;
    pz_run_plan *p = calloc(1, sizeof *p);
    if (!p) return pz_fail(PZ_ERR_NOMEM, "out of memory for a run plan");
    /* the defaults of `pipezip train`: SGD with Nesterov momentum and a
     * one-cycle LR on resnet8 over Fashion-MNIST, cut like Paper A with
     * q4 activations and q8 gradients (within 0.1 point of fp32 with 5.3x
     * fewer bytes: docs/GUIDE.md) */
    /* (data, epochs, batch, optimizer, LR, weight decay, schedule: by the
     * model's kind, kind_defaults, when --model's default goes in below) */
    p->momentum = 0.9f, p->nesterov = 1;
    p->crop_pad = -1, p->flip = -1, p->seed = 1, p->threads = 0, p->stages = 0;
    p->micro_batches = 1, p->timeout = 60.0, p->log_every = 10, p->pipe_delay = 1;
    p->budget.every = PZ_BUDGET_EVERY_DEFAULT, p->budget.fwd_weight = 1.0;
    for (int i = 0; i < PZ_SET_COUNT; i++) {
        const run_setting *s = &run_settings[i];
        if (!s->def) continue;
        char flag[80];
        const pz_status st = run_plan_set_as(p, s->id, s->def, flag_of(s, flag, sizeof flag));
        if (st) {
            pz_run_plan_free(p);
            return st;
        }
        p->given[i] = 0; /* a default, not given */
    }
    *out = p;
    return PZ_OK;
}

void pz_run_plan_free(pz_run_plan *p) {
    if (!p) return;
    for (int i = 0; i < PZ_SET_COUNT; i++) free(p->text[i]);
    free(p);
}

int pz_run_plan_is_set(const pz_run_plan *p, pz_setting id) { return p && (unsigned)id < PZ_SET_COUNT && p->given[id]; }
const char *pz_run_plan_text(const pz_run_plan *p, pz_setting id) { return p && (unsigned)id < PZ_SET_COUNT ? p->text[id] : NULL; }
const char *run_plan_str(const pz_run_plan *p, pz_setting id) { return p->text[id] ? p->text[id] : ""; }
const char *pz_setting_name(pz_setting id) { return (unsigned)id < PZ_SET_COUNT ? run_settings[id].flag : NULL; }

pz_status pz_setting_describe(pz_setting id, pz_setting_info *info) {
    if (!info) return pz_fail(PZ_ERR_ARG, "pz_setting_describe: info is NULL");
    const run_setting *s = run_setting_of(id);
    if (!s) return pz_fail(PZ_ERR_ARG, "setting %d does not exist (0..%d)", (int)id, PZ_SET_COUNT - 1);
    static const char *const types[] = {[SET_INT] = "int", [SET_I64] = "int64", [SET_U64] = "uint64", [SET_FLOAT] = "float",
                                        [SET_DOUBLE] = "double", [SET_BOOL] = "bool", [SET_TEXT] = "text", [SET_ENUM] = "enum"};
    *info = (pz_setting_info){.flag = s->flag, .key = s->key, .type = types[s->kind], .min = s->min, .max = s->max,
                              .default_text = s->def, .choices = run_setting_choices(s), .help = run_setting_help(s)};
    return PZ_OK;
}

int pz_setting_by_name(const char *name) {
    for (int i = 0; name && i < PZ_SET_COUNT; i++) {
        const run_setting *s = &run_settings[i];
        if ((s->flag && !strcmp(s->flag, name)) || (s->key && !strcmp(s->key, name))) return i;
    }
    return -1;
}

/* ---- rules across settings ------------------------------------------------------------ */

int run_plan_one_stage(const pz_run_plan *p) {
    if (p->n_cuts) return 0;
    return p->stages == 1 || (p->stages == 0 && !p->link->remote && !pz_model_kind_of(&p->model)->n_default_cuts);
}

int pz_run_uses_pipeline(const pz_run_plan *p) {
    return (p->stages == 0 && pz_model_kind_of(&p->model)->n_default_cuts) || p->stages > 1 || p->n_cuts || p->link->remote ||
           p->micro_batches != 1 || p->given[PZ_SET_LINK_BANDWIDTH] || p->given[PZ_SET_LINK_LATENCY];
}

const char *pz_run_layout(const pz_run_plan *p, char *buf, size_t cap) {
    if (run_plan_one_stage(p)) return NULL;
    if (p->n_cuts) snprintf(buf, cap, "%s", run_plan_str(p, PZ_SET_CUTS));
    else if (p->stages > 1) snprintf(buf, cap, "%d stages balanced by compute", p->stages);
    else if (p->link->remote) snprintf(buf, cap, "a stage per process");
    else {
        const pz_model_kind *k = pz_model_kind_of(&p->model);
        snprintf(buf, cap, "%d stages (%s: %s)", k->n_default_cuts + 1, k->plural, k->default_layout);
    }
    return buf;
}

/* flags that act on the boundaries between stages, given to a run that has
 * none, would be silently unused: an mlp "compressed" with --fwd q2 trains
 * exactly as an uncompressed one */
static pz_status boundary_flags(const pz_run_plan *p) {
    if (!run_plan_one_stage(p) || p->link->remote) return PZ_OK;
    static const pz_setting boundary[] = {PZ_SET_FWD, PZ_SET_BWD, PZ_SET_LINK_BANDWIDTH, PZ_SET_LINK_LATENCY, PZ_SET_LINK_MODEL, PZ_SET_LINK_REALTIME,
                                          PZ_SET_GRAD_MASK, PZ_SET_PIPE_SCHEDULE, PZ_SET_COMPUTE_RATE, PZ_SET_BUDGET,
                                          PZ_SET_BUDGET_LADDER, PZ_SET_BUDGET_EVERY, PZ_SET_BUDGET_FWD_WEIGHT, PZ_SET_BUDGET_RULE};
    for (size_t i = 0; i < sizeof boundary / sizeof *boundary; i++) {
        const pz_setting id = boundary[i];
        if (!p->given[id]) continue;
        if (id == PZ_SET_LINK_REALTIME && !p->realtime) continue;
        if (id == PZ_SET_LINK_MODEL && p->link_model == PZ_WIRE_DUPLEX) continue;
        if (id == PZ_SET_GRAD_MASK && !p->grad_mask) continue;
        if (id == PZ_SET_PIPE_SCHEDULE && p->pipe_schedule == PZ_PIPE_GPIPE) continue;
        const char *val = run_settings[id].kind == SET_TEXT ? run_plan_str(p, id) : "";
        char not_cut[96];
        snprintf(not_cut, sizeof not_cut, "%s are not cut by default", pz_model_kind_of(&p->model)->plural);
        return pz_fail(PZ_ERR_ARG,
                       "--%s%s%s acts on the boundaries between stages, and this %s run has one stage (%s): "
                       "cut it with --stages S or --cuts LIST (pipezip models %s lists its layers)",
                       run_settings[id].flag, *val ? " " : "", val, p->model.name, p->stages == 1 ? "--stages 1" : not_cut, p->model.name);
    }
    return PZ_OK;
}

pz_status run_plan_check(const pz_run_plan *p) {
    PZ_TRY(boundary_flags(p));
    if (p->nesterov && p->momentum == 0.0f && p->optimizer == PZ_OPT_SGD) return pz_fail(PZ_ERR_ARG, "--nesterov needs --momentum > 0");
    if (p->vocab != 256 && !p->data.text)
        return pz_fail(PZ_ERR_ARG, "--tokenizer %s is for text (--data kjv or text:FILE), not %s", run_plan_str(p, PZ_SET_TOKENIZER),
                       run_plan_str(p, PZ_SET_DATA));
    if (p->steps > 0 && p->given[PZ_SET_EPOCHS])
        return pz_fail(PZ_ERR_ARG, "--steps %lld and --epochs %d both bound the run: give one of them", (long long)p->steps, p->epochs);
    if (!p->steps && p->warmup_epochs > p->epochs) return pz_fail(PZ_ERR_ARG, "--warmup must be in [0, epochs], got %g", p->warmup_epochs);
    if (p->micro_batches > p->batch)
        return pz_fail(PZ_ERR_ARG, "--micro-batches must be in 1..%d and at most --batch, got %d", PZ_MAX_MICRO, p->micro_batches);
    const int overlaps = pz_pipe_schedule_overlaps(p->pipe_schedule);
    if (p->given[PZ_SET_PIPE_DELAY] && !overlaps)
        return pz_fail(PZ_ERR_ARG, "--pipe-delay %d is the asynchronous schedule's (--pipe-schedule async); %s flushes every step",
                       p->pipe_delay, run_plan_str(p, PZ_SET_PIPE_SCHEDULE));
    if (p->micro_batches == 0) { /* auto */
        if (p->link->remote || p->link->processes)
            return pz_fail(PZ_ERR_ARG, "--micro-batches auto re-plans the pipeline after its first step, which needs every stage in "
                                       "this process (--link inproc): give a count with --link %s", p->link->name);
        if (!p->given[PZ_SET_LINK_BANDWIDTH] && !p->given[PZ_SET_LINK_LATENCY])
            return pz_fail(PZ_ERR_ARG, "--micro-batches auto chooses the count with the least step over the emulated links: give "
                                       "--link-bandwidth and/or --link-latency");
        if (p->turn) return pz_fail(PZ_ERR_ARG, "--micro-batches auto and --turn: give a count");
    } else if (p->given[PZ_SET_ACTIVATION_MEMORY]) {
        return pz_fail(PZ_ERR_ARG, "--activation-memory bounds --micro-batches auto's choice: give --micro-batches auto");
    }
    if (!p->steps && p->aqsgd_warmup > p->epochs) return pz_fail(PZ_ERR_ARG, "--aqsgd-warmup must be in 0..epochs, got %d", p->aqsgd_warmup);
    if (p->stages > 0 && p->n_cuts && p->n_cuts + 1 != p->stages)
        return pz_fail(PZ_ERR_ARG, "--stages %d and --cuts %s (%d stages) disagree: give one of them", p->stages,
                       run_plan_str(p, PZ_SET_CUTS), p->n_cuts + 1);
    if (p->link->check) PZ_TRY(p->link->check(p));
    if (p->turn && !p->link->session)
        return pz_fail(PZ_ERR_ARG, "--turn %s takes turns with other split-learning clients: it needs --link zmq", run_plan_str(p, PZ_SET_TURN));
    if (p->data.text && !pz_model_spec_is_sequence(&p->model))
        return pz_fail(PZ_ERR_ARG, "--data %s is text: it trains a language model (--model gpt-tiny or gpt-small), not %s",
                       run_plan_str(p, PZ_SET_DATA), p->model.name);
    if (p->subspace && !pz_model_kind_of(&p->model)->subspace)
        return pz_fail(PZ_ERR_ARG, "--subspace %d confines a GPT's residual stream: it needs --model gpt-tiny, gpt-small or gpt:..., not %s",
                       p->subspace, p->model.name);
    if (p->subspace > p->model.dim)
        return pz_fail(PZ_ERR_ARG, "--subspace %d is wider than %s's residual stream (%d): give 1 to %d", p->subspace, p->model.name,
                       p->model.dim, p->model.dim);
    if (p->project && !p->subspace)
        return pz_fail(PZ_ERR_ARG, "--project %d projects a subspace model's coefficients at its cuts: give --subspace too (--subspace %d "
                       "is the full-width one)", p->project, p->model.dim);
    if (p->project > p->subspace && p->subspace)
        return pz_fail(PZ_ERR_ARG, "--project %d is wider than the stream it projects (--subspace %d): give 1 to %d", p->project,
                       p->subspace, p->subspace);
    if (p->project && (!p->n_cuts || __builtin_popcount(p->model.project_after) != p->n_cuts))
        return pz_fail(PZ_ERR_ARG, "--project %d puts a learned projection at each cut, and needs every cut named between two blocks "
                       "(--cuts h.0,h.1,...; got %s)", p->project, p->n_cuts ? run_plan_str(p, PZ_SET_CUTS) : "none");
    if (p->subspace && p->grad_mask)
        return pz_fail(PZ_ERR_ARG, "--grad-mask fwd and --subspace %d: a subspace boundary carries coefficients, whose zeros are "
                       "not the activation's; give one of them", p->subspace);
    if (p->budget.kind != PZ_BUDGET_OFF && (p->given[PZ_SET_FWD] || p->given[PZ_SET_BWD]))
        return pz_fail(PZ_ERR_ARG, "--budget %s chooses every boundary's codecs from --budget-ladder: drop --%s %s",
                       run_plan_str(p, PZ_SET_BUDGET), p->given[PZ_SET_FWD] ? "fwd" : "bwd",
                       run_plan_str(p, p->given[PZ_SET_FWD] ? PZ_SET_FWD : PZ_SET_BWD));
    if (p->budget.kind != PZ_BUDGET_OFF && p->link->session)
        return pz_fail(PZ_ERR_ARG, "--budget %s with --link %s: a budget re-decides at the pipeline's step count, which split-learning "
                       "clients taking turns at one server do not share (use --link inproc or mpi)", run_plan_str(p, PZ_SET_BUDGET), p->link->name);
    if (p->budget.kind == PZ_BUDGET_OFF)
        for (int id = PZ_SET_BUDGET_LADDER; id <= PZ_SET_BUDGET_RULE; id++)
            if (p->given[id]) return pz_fail(PZ_ERR_ARG, "--%s is a setting of --budget, which is not given", run_settings[id].flag);
    if (!p->data.text && pz_model_spec_is_sequence(&p->model))
        return pz_fail(PZ_ERR_ARG, "--model %s is a language model: it trains on text (--data kjv or text:FILE), not %s", p->model.name,
                       run_plan_str(p, PZ_SET_DATA));
    return PZ_OK;
}

pz_status pz_run_plan_check(const pz_run_plan *p) {
    if (!p) return pz_fail(PZ_ERR_ARG, "pz_run_plan_check: no plan (create one with pz_run_plan_create)");
    PZ_TRY(run_plan_check(p));
    return run_plan_resolve(p);
}

int pz_run_remote(const pz_run_plan *p) { return p->link->remote; }
int pz_run_multiprocess(const pz_run_plan *p) { return p->link->start != NULL; }
