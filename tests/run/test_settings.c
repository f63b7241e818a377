/* SPDX-License-Identifier: MIT */
/* test_settings.c — the settings list and the records written from it:
 * every row of the table is its setting's own; the resume fingerprint a
 * plan generates says what the earlier build's hand-written one said
 * (literal records that build wrote, for four plans), so runs it started
 * resume; codec lists compare canonically (q4 and q4:per=tensor are one
 * run, q4:per=sample another) and a difference is named. */
#include "../test.h"
#include "run/run_internal.h"
#include "run/settings.h"

#include <string.h>

static pz_run_plan *plan_of(const char *const *kv) {
    pz_run_plan *p = NULL;
    CHECK(pz_run_plan_create(&p) == PZ_OK, "%s", pz_last_error());
    for (int i = 0; kv[i]; i += 2) {
        const int id = pz_setting_by_name(kv[i]);
        CHECK(id >= 0 && pz_run_plan_set(p, (pz_setting)id, kv[i + 1]) == PZ_OK, "--%s %s: %s", kv[i], kv[i + 1], pz_last_error());
    }
    return p;
}

/* the plan's fingerprint says what the earlier build wrote for it */
static void same_as_v1(const char *const *kv, const char *v1) {
    pz_run_plan *p = plan_of(kv);
    static char fp[RUN_FINGERPRINT_MAX], diff[2048];
    run_fingerprint(p, fp, sizeof fp);
    run_fingerprint_diff(v1, fp, diff, sizeof diff);
    CHECK(!strncmp(fp, "v=2 ", 4), "a version 2 record: %s", fp);
    CHECK(run_fingerprint_same(v1, fp), "the earlier build's record differs: %s\n  v1: %s\n  v2: %s", diff, v1, fp);
    pz_run_plan_free(p);
}

int main(void) {
    /* every row is its own setting's, with a flag or a key; FP and FP_BY not both */
    for (int id = 0; id < PZ_SET_COUNT; id++) {
        const run_setting *s = run_setting_of((pz_setting)id);
        CHECK(s && (int)s->id == id && (s->flag || s->key), "row %d", id);
        CHECK(!(s->fp && s->fp_by), "row %d (%s) has FP and FP_BY", id, s->key);
        CHECK(!s->fp || s->fp_when == FP_ALWAYS || s->fp_when == FP_NONZERO, "row %d: FP's when", id);
        CHECK(!s->record || s->key, "row %d: RECORD without a key", id);
    }
    /* the bounds are public */
    pz_setting_info in;
    CHECK(pz_setting_describe(PZ_SET_LR, &in) == PZ_OK && !strcmp(in.type, "float") && in.min == 1e-9 && in.max == 100 &&
              !strcmp(in.flag, "lr"),
          "lr: %s %g..%g", in.type, in.min, in.max);
    CHECK(pz_setting_describe(PZ_SET_LINK_MODEL, &in) == PZ_OK && !strcmp(in.choices, "duplex|shared") && !strcmp(in.default_text, "duplex") &&
              strstr(in.help, "shared (") != NULL,
          "link-model: %s / %s", in.choices, in.default_text);
    CHECK(pz_setting_describe((pz_setting)PZ_SET_COUNT, &in) == PZ_ERR_ARG && pz_setting_describe(PZ_SET_LR, NULL) == PZ_ERR_ARG,
          "bad calls refused");
    /* four plans and the records the earlier build (5fbb28a) wrote for them */
    same_as_v1((const char *const[]){"model", "lenet5", "limit-train", "512", "limit-test", "200", "epochs", "4", "batch", "64",
                                     "threads", "1", "lr", "0.02", "stages", "3", "fwd", "ef(q4)", "bwd", "ef21(q8)", NULL},
               "model=lenet5 data=fashion-mnist limit=512/200 epochs=4 batch=64 opt=sgd lr=0.02 mom=0.9 wd=0.0005 nest=1 "
               "sched=onecycle warm=0 seed=1 stages=3 cuts= fwd=ef(q4) bwd=ef21(q8) mb=1 threads=1");
    same_as_v1((const char *const[]){"model", "resnet8", "data", "synthetic", "limit-train", "256", "limit-test", "64", "epochs", "1",
                                     "batch", "32", "crop-pad", "2", "flip", "off", "fwd", "aqsgd(q4),2=q8", "bwd",
                                     "q8:per=sample+zstd", "aqsgd-warmup", "1", "metrics", "csv", "micro-batches", "auto",
                                     "activation-memory", "1GB", "threads", "1", "link-bandwidth", "100mbit", "seed", "7", NULL},
               "model=resnet8 data=synthetic limit=256/64 epochs=1 batch=32 opt=sgd lr=0.1 mom=0.9 wd=0.0005 nest=1 sched=onecycle "
               "warm=0 seed=7 stages=0 cuts= fwd=aqsgd(q4),2=q8 bwd=q8:per=sample+zstd mb=0 crop_pad=2 flip=0 aqsgd_warmup=1 "
               "metrics=csv threads=1 activation_memory=1000000000");
    same_as_v1((const char *const[]){"model", "gpt:layers=2,d=32,heads=2,ctx=16", "data", "text:text.txt", "tokenizer", "bpe:300",
                                     "subspace", "8", "steps", "4", "stages", "2", "micro-batches", "2", "budget", "10x",
                                     "budget-rule", "max", "compute-rate", "1tflops", "link-model", "shared", "limit-train", "64",
                                     "limit-test", "8", "batch", "8", "threads", "1", NULL},
               "model=gpt:layers=2,d=32,heads=2,ctx=16 data=text:text.txt limit=64/8 epochs=1 batch=8 opt=adamw lr=0.002 mom=0.9 "
               "wd=0.1 nest=1 sched=cosine warm=0.05 seed=1 stages=2 cuts= fwd=q4 bwd=q8 mb=2 clip=1 tok=bpe:300 subspace=8 "
               "budget=10x every=50 ladder=q8:bytes+zstd/q6:bytes+zstd/q5:bytes+zstd/q4:bytes+zstd/q3:bytes+zstd/q2:bytes+zstd "
               "fwd_weight=1 rule=max threads=1 steps=4 compute_rate=1tflops link_model=shared");
    same_as_v1((const char *const[]){"model", "gpt:layers=2,d=32,heads=2,ctx=16", "data", "text:text.txt", "steps", "3", "stages", "2",
                                     "fwd", "topk:0.1", "bwd", "topk:0.1", "grad-mask", "fwd", "clip-norm", "0", "limit-train", "64",
                                     "limit-test", "8", "batch", "8", NULL},
               "model=gpt:layers=2,d=32,heads=2,ctx=16 data=text:text.txt limit=64/8 epochs=1 batch=8 opt=adamw lr=0.002 mom=0.9 "
               "wd=0.1 nest=1 sched=cosine warm=0.05 seed=1 stages=2 cuts= fwd=topk:0.1 bwd=topk:0.1 mb=1 grad_mask=fwd steps=3");

    /* spellings of one codec are one run; another codec is another, and the difference says which */
    pz_run_plan *a = plan_of((const char *const[]){"stages", "2", "fwd", "q4", NULL});
    pz_run_plan *b = plan_of((const char *const[]){"stages", "2", "fwd", "q4:asym,nearest,per=tensor", NULL});
    pz_run_plan *c = plan_of((const char *const[]){"stages", "2", "fwd", "q4:per=sample", NULL});
    static char fa[RUN_FINGERPRINT_MAX], fb[RUN_FINGERPRINT_MAX], fc[RUN_FINGERPRINT_MAX], diff[2048];
    run_fingerprint(a, fa, sizeof fa), run_fingerprint(b, fb, sizeof fb), run_fingerprint(c, fc, sizeof fc);
    CHECK(!strcmp(fa, fb), "q4 and its canonical spelling write one record:\n  %s\n  %s", fa, fb);
    CHECK(!run_fingerprint_same(fa, fc), "q4 per tensor and per sample are different runs");
    run_fingerprint_diff(fa, fc, diff, sizeof diff);
    CHECK(strstr(diff, "fwd: q4:asym,nearest,per=tensor -> q4:asym,nearest,per=sample") != NULL, "the difference: %s", diff);
    /* an earlier build's "fwd=q4" against a per-sample run: still different */
    CHECK(!run_fingerprint_same("model=resnet8 fwd=q4", "v=2 model=resnet8 fwd=q4:asym,nearest,per=sample"), "v1 q4 is per tensor");
    CHECK(run_fingerprint_same("model=resnet8 fwd=q4", "v=2 fwd=q4:asym,nearest,per=tensor model=resnet8"), "order does not matter");
    pz_run_plan_free(a), pz_run_plan_free(b), pz_run_plan_free(c);
    TEST_DONE();
}
