/* SPDX-License-Identifier: MIT */
/* run_api.c — a whole training run from C, as `pipezip train` does it:
 * settings go in through one door (pz_run_plan_set), as text a user would
 * type or as numbers, and are checked at once; the error names the flag.
 *   cc run_api.c $(pkg-config --cflags --libs pipezip) -o run_api && ./run_api */
#include <pipezip/pipezip.h>
#include <stdio.h>

static int step(const pz_progress *p, void *user) {
    (void)user;
    if (p->end_of_epoch) printf("epoch %d: test accuracy %.1f%% (through compressed boundaries %.1f%%)\n", p->epoch,
                                100 * p->test_accuracy, 100 * p->test_accuracy_compressed);
    return 0; /* nonzero stops the run after this step */
}

int main(void) {
    pz_run_plan *plan;
    if (pz_run_plan_create(&plan)) return fprintf(stderr, "%s\n", pz_last_error()), 1;
    /* an mlp on synthetic images, cut into 3 stages: 2-bit activations, error-feedback TopK gradients */
    const struct { pz_setting s; const char *text; } settings[] = {
        {PZ_SET_MODEL, "mlp"}, {PZ_SET_DATA, "synthetic"}, {PZ_SET_STAGES, "3"}, {PZ_SET_FWD, "q2"},
        {PZ_SET_BWD, "ef(topk:0.2)"}, {PZ_SET_EPOCHS, "2"}, {PZ_SET_LIMIT_TRAIN, "2048"}, {PZ_SET_THREADS, "2"},
    };
    for (size_t i = 0; i < sizeof settings / sizeof *settings; i++)
        if (pz_run_plan_set(plan, settings[i].s, settings[i].text)) return fprintf(stderr, "%s\n", pz_last_error()), 1;
    pz_run_plan_set_number(plan, PZ_SET_LR, 0.05);
    /* a wrong value is refused where it enters, naming the flag */
    if (pz_run_plan_set(plan, PZ_SET_FWD, "q9") != PZ_OK) printf("refused: %s\n", pz_last_error());
    pz_run_result r;
    if (pz_run_train(plan, &r, step, NULL)) return fprintf(stderr, "%s\n", pz_last_error()), 1;
    printf("%d stages: %.2fx less traffic than fp32\n", r.n_stages,
           (double)r.fp32_bytes / (double)(r.fwd_bytes + r.bwd_bytes));
    pz_run_plan_free(plan);
    return 0;
}
