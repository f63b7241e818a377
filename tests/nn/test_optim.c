/* SPDX-License-Identifier: MIT */
/* test_optim.c — SGD (plain, momentum, Nesterov, weight decay), AdamW and NAdamW
 * trajectories against torch.optim, each with a decay mask against the runs
 * with and without decay, OneCycleLR against PyTorch's, and the other
 * schedules against their definitions; schedule spec errors. */
#include "../test.h"
#include "nn/nn.h"

static ref_file rf;

static void trajectory(const char *name, pz_optim_kind kind, float lr, float momentum, int nesterov, float wd) {
    ref_tensor *p0 = ref_get(&rf, "optim.p0"), *g = ref_get(&rf, "optim.grads");
    char key[64];
    snprintf(key, sizeof key, "optim.%s", name);
    ref_tensor *want = ref_get(&rf, key);
    const int n = (int)p0->n, steps = g->dims[0];
    pz_optim o = {.momentum = momentum, .nesterov = nesterov, .weight_decay = wd};
    pz_optim_init(&o, kind, n);
    float p[16];
    memcpy(p, p0->data, sizeof(float) * n);
    for (int s = 0; s < steps; s++) {
        pz_optim_step(&o, p, g->data + s * n, lr);
        char what[80];
        snprintf(what, sizeof what, "%s step %d", name, s + 1);
        check_close(what, p, want->data + s * n, n, 1e-6f, 1e-5f);
    }
    pz_optim_free(&o);
}

/* a decay mask: each parameter follows, bit for bit, the run that decays
 * every parameter (mask 1) or the run without decay (mask 0); n past the
 * threads' threshold, so the masked and unmasked loops both run threaded */
static void masked(const char *name, pz_optim_kind kind, float lr, float momentum, int nesterov, float wd) {
    const int64_t n = 300007;
    float *p = malloc(sizeof(float) * n), *pd = malloc(sizeof(float) * n), *p0 = malloc(sizeof(float) * n);
    float *g = malloc(sizeof(float) * n);
    uint8_t *mask = malloc((size_t)n);
    uint64_t st = 12345;
    for (int64_t i = 0; i < n; i++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        p[i] = pd[i] = p0[i] = (float)((st >> 40) % 2001) / 1000.0f - 1.0f;
        mask[i] = (uint8_t)((st >> 20) % 3 != 0);
    }
    pz_optim om = {.momentum = momentum, .nesterov = nesterov, .weight_decay = wd};
    pz_optim od = om, o0 = {.momentum = momentum, .nesterov = nesterov, .weight_decay = 0.0f};
    pz_optim_init(&om, kind, n), pz_optim_init(&od, kind, n), pz_optim_init(&o0, kind, n);
    om.decay = mask;
    for (int s = 0; s < 3; s++) {
        for (int64_t i = 0; i < n; i++) g[i] = 0.01f * (float)((i * 7 + s * 13) % 101 - 50);
        pz_optim_step(&om, p, g, lr), pz_optim_step(&od, pd, g, lr), pz_optim_step(&o0, p0, g, lr);
    }
    int64_t bad = -1;
    for (int64_t i = 0; i < n && bad < 0; i++)
        if (memcmp(&p[i], mask[i] ? &pd[i] : &p0[i], sizeof(float))) bad = i;
    CHECK(bad < 0, "%s with a decay mask: parameter %lld (mask %d) is %.9g, the run %s decay gives %.9g", name, (long long)bad,
          bad < 0 ? 0 : mask[bad], bad < 0 ? 0.0 : p[bad], bad >= 0 && mask[bad] ? "with" : "without",
          bad < 0 ? 0.0 : (mask[bad] ? pd[bad] : p0[bad]));
    pz_optim_free(&om), pz_optim_free(&od), pz_optim_free(&o0);
    free(p), free(pd), free(p0), free(g), free(mask);
}

int main(void) {
    if (ref_load(&rf, PZ_SOURCE_DIR "/tests/ref/layers.bin")) return 1;
    pz_set_threads(2);
    masked("sgd", PZ_OPT_SGD, 0.1f, 0.9f, 0, 0.01f);
    masked("sgd_nesterov", PZ_OPT_SGD, 0.1f, 0.9f, 1, 0.01f);
    masked("adamw", PZ_OPT_ADAMW, 0.01f, 0.0f, 0, 0.1f);
    trajectory("sgd", PZ_OPT_SGD, 0.1f, 0.9f, 0, 0.01f);
    trajectory("sgd_nesterov", PZ_OPT_SGD, 0.1f, 0.9f, 1, 0.01f);
    trajectory("sgd_plain", PZ_OPT_SGD, 0.1f, 0.0f, 0, 0.0f);
    trajectory("adamw", PZ_OPT_ADAMW, 0.01f, 0.0f, 0, 0.1f);
    trajectory("nadamw", PZ_OPT_NADAMW, 0.01f, 0.99f, 0, 0.1f); /* beta1 from the momentum */
    masked("nadamw", PZ_OPT_NADAMW, 0.01f, 0.99f, 0, 0.1f);
    { /* a loaded checkpoint sets t and the moments: the step after it is the uninterrupted run's */
        pz_optim a = {.momentum = 0.99f, .weight_decay = 0.1f}, b = a;
        pz_optim_init(&a, PZ_OPT_NADAMW, 3), pz_optim_init(&b, PZ_OPT_NADAMW, 3);
        float pa[3] = {1, -2, 3}, pb[3], g[3] = {0.5f, 0.25f, -1};
        for (int s = 0; s < 5; s++) pz_optim_step(&a, pa, g, 0.01f);
        memcpy(pb, pa, sizeof pb), memcpy(b.m, a.m, sizeof pb), memcpy(b.v, a.v, sizeof pb);
        b.t = a.t; /* as pz_checkpoint_unpack leaves it: no product of the momenta */
        pz_optim_step(&a, pa, g, 0.01f), pz_optim_step(&b, pb, g, 0.01f);
        CHECK(!memcmp(pa, pb, sizeof pa), "nadamw resumed at step 5: %.9g vs %.9g", pa[0], pb[0]);
        pz_optim_free(&a), pz_optim_free(&b);
    }

    pz_schedule s = {0};
    CHECK(pz_schedule_parse(&s, "onecycle") == PZ_OK, "%s", pz_last_error());
    s.base_lr = 0.1f, s.total_steps = 50, s.steps_per_epoch = 10;
    ref_tensor *oc = ref_get(&rf, "sched.onecycle");
    float lrs[50];
    for (int i = 0; i < 50; i++) lrs[i] = pz_schedule_lr(&s, i);
    check_close("onecycle lr", lrs, oc->data, 50, 1e-7f, 1e-5f);

    pz_schedule c = {0};
    CHECK(pz_schedule_parse(&c, "cosine") == PZ_OK, "%s", pz_last_error());
    c.base_lr = 0.2f, c.total_steps = 100, c.steps_per_epoch = 10;
    CHECK(fabsf(pz_schedule_lr(&c, 0) - 0.2f) < 1e-7f, "cosine starts at the base lr, got %g", pz_schedule_lr(&c, 0));
    CHECK(fabsf(pz_schedule_lr(&c, 50) - 0.1f) < 1e-6f, "cosine halfway is half, got %g", pz_schedule_lr(&c, 50));
    CHECK(pz_schedule_lr(&c, 100) < 1e-7f, "cosine ends at 0, got %g", pz_schedule_lr(&c, 100));
    c.warmup_steps = 10;
    CHECK(fabsf(pz_schedule_lr(&c, 0) - 0.02f) < 1e-7f, "warm-up starts at base/10 for 10 steps, got %g", pz_schedule_lr(&c, 0));
    CHECK(fabsf(pz_schedule_lr(&c, 9) - 0.2f) < 1e-6f, "warm-up reaches base at its last step, got %g", pz_schedule_lr(&c, 9));

    pz_schedule st = {0};
    CHECK(pz_schedule_parse(&st, "step:3,0.1") == PZ_OK, "%s", pz_last_error());
    st.base_lr = 1.0f, st.total_steps = 100, st.steps_per_epoch = 10;
    CHECK(pz_schedule_lr(&st, 29) == 1.0f, "step: epoch 2 keeps the base lr");
    CHECK(fabsf(pz_schedule_lr(&st, 30) - 0.1f) < 1e-7f, "step: epoch 3 multiplies by 0.1, got %g", pz_schedule_lr(&st, 30));
    CHECK(fabsf(pz_schedule_lr(&st, 65) - 0.01f) < 1e-8f, "step: epoch 6 by 0.01, got %g", pz_schedule_lr(&st, 65));

    /* linear: a straight line from the base lr after the warm-up to 0 after the last step */
    pz_schedule li = {0};
    CHECK(pz_schedule_parse(&li, "linear") == PZ_OK && li.kind == PZ_SCHED_LINEAR, "%s", pz_last_error());
    li.base_lr = 0.2f, li.total_steps = 110, li.steps_per_epoch = 10, li.warmup_steps = 10;
    CHECK(fabsf(pz_schedule_lr(&li, 0) - 0.02f) < 1e-7f, "linear: warm-up starts at base/10, got %g", pz_schedule_lr(&li, 0));
    CHECK(fabsf(pz_schedule_lr(&li, 10) - 0.2f) < 1e-7f, "linear: base right after the warm-up, got %g", pz_schedule_lr(&li, 10));
    CHECK(fabsf(pz_schedule_lr(&li, 35) - 0.15f) < 1e-6f, "linear: a quarter down, 3/4 of base, got %g", pz_schedule_lr(&li, 35));
    CHECK(fabsf(pz_schedule_lr(&li, 60) - 0.1f) < 1e-6f, "linear: halfway, half, got %g", pz_schedule_lr(&li, 60));
    CHECK(pz_schedule_lr(&li, 110) == 0.0f, "linear: 0 after the last step, got %g", pz_schedule_lr(&li, 110));

    pz_schedule k = {0};
    CHECK(pz_schedule_parse(&k, "constant") == PZ_OK && k.kind == PZ_SCHED_CONSTANT, "constant parses");
    const char *bad[] = {"cosin", "step:", "step:3", "step:0,0.1", "step:3,x", "onecycle:1.5", "onecycle:", "", "linear:0.5", "step"};
    for (int i = 0; i < 10; i++) {
        pz_schedule b = {0};
        CHECK(pz_schedule_parse(&b, bad[i]) == PZ_ERR_ARG, "schedule '%s' must be rejected", bad[i]);
        CHECK(strstr(pz_last_error(), "schedule") != NULL, "error names the schedule: %s", pz_last_error());
    }
    ref_free(&rf);
    TEST_DONE();
}
