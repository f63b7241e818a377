/* SPDX-License-Identifier: MIT */
/* test_blas_choice.c — the BLAS kernels are chosen from the CPU's features,
 * never from a model table alone:
 *   - the choice itself (pz_blas_core_for) on a table of simulated CPUs and
 *     OpenBLAS choices: a generic core where AVX2+FMA or AVX-512 exist is
 *     replaced by the vector core those features allow, a vector core is
 *     kept, a CPU without the features keeps what it has;
 *   - in this process: OpenBLAS is made to run its generic Prescott kernels
 *     (as on a CPU it does not know), pipezip chooses again, and where this
 *     CPU has AVX2+FMA a vector core runs, and a GEMM through the linear
 *     kernel still equals a naive product;
 *   - `test_blas_choice user CORE`, run with OPENBLAS_CORETYPE=CORE: the
 *     user's choice is kept and reported as such. */
#include "../test.h"
#include "base/base.h"
#include "kernels/kernels.h"

static void check_gemm(const char *core) {
    enum { B = 37, C = 53, OC = 29 };
    static float x[B * C], w[OC * C], out[B * OC];
    pz_rng r;
    pz_rng_seed(&r, 3);
    for (int i = 0; i < B * C; i++) x[i] = pz_rng_normal(&r);
    for (int i = 0; i < OC * C; i++) w[i] = pz_rng_normal(&r);
    linear_forward(out, x, w, NULL, B, C, OC);
    double worst = 0;
    for (int b = 0; b < B; b++)
        for (int o = 0; o < OC; o++) {
            double s = 0;
            for (int c = 0; c < C; c++) s += (double)x[b * C + c] * w[o * C + c];
            worst = fmax(worst, fabs(s - out[b * OC + o]));
        }
    CHECK(worst < 1e-4, "a GEMM under the %s kernels equals the naive product (max error %g)", core, worst);
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "user")) {
        const pz_blas_info i = pz_blas_get_info();
        if (!strstr(i.library, "OpenBLAS")) {
            printf("not OpenBLAS (%s): nothing to check\n", i.library);
            TEST_DONE();
        }
        CHECK(!strcmp(i.source, "user") && !strcasecmp(i.core, argv[2]), "OPENBLAS_CORETYPE=%s is kept: core %s chosen by %s",
              argv[2], i.core, i.source);
        check_gemm(i.core);
        TEST_DONE();
    }
    /* the choice, on simulated CPUs */
    const unsigned AVX2 = PZ_CPU_AVX2_FMA, AVX512 = PZ_CPU_AVX2_FMA | PZ_CPU_AVX512, BF16 = AVX512 | PZ_CPU_AVX512_BF16;
    const struct { const char *current; unsigned features; const char *want; } cases[] = {
        {"Prescott", BF16, "Cooperlake"},  /* a Xeon of family 6 model 207 on OpenBLAS 0.3.21 */
        {"Prescott", AVX512, "SkylakeX"},   /* an AVX-512 CPU newer than the library */
        {"Prescott", AVX2, "Haswell"},      /* an unknown Intel AVX2 CPU */
        {"Prescott", AVX2 | PZ_CPU_AMD, "Zen"}, {"Nehalem", AVX2, "Haswell"}, {"Sandybridge", AVX512, "SkylakeX"},
        {"Core2", AVX2 | PZ_CPU_AMD, "Zen"},
        {"SkylakeX", AVX512, NULL}, {"Cooperlake", BF16, NULL}, {"Haswell", AVX2, NULL}, {"Zen", AVX2 | PZ_CPU_AMD, NULL},
        {"SapphireRapids", BF16, NULL}, {"Haswell", AVX512, "SkylakeX"}, /* AVX2 kernels where AVX-512 exists: raised */
        {"Prescott", 0, NULL}, {"Nehalem", 0, NULL}, /* no AVX2: nothing better to choose */
        {NULL, AVX512, NULL},                         /* not OpenBLAS */
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const char *got = pz_blas_core_for(cases[c].current, cases[c].features);
        CHECK((!got && !cases[c].want) || (got && cases[c].want && !strcmp(got, cases[c].want)),
              "OpenBLAS chose %s on a CPU with features %#x: pipezip chooses %s, expected %s", cases[c].current ? cases[c].current : "(none)",
              cases[c].features, got ? got : "nothing", cases[c].want ? cases[c].want : "nothing");
    }
    /* this process: OpenBLAS as on a CPU it does not know, then chosen again */
    pz_blas_info i = pz_blas_get_info();
    printf("BLAS: %s; kernels %s (chosen by %s); CPU features %#x\n", i.library, i.core, i.source, pz_cpu_features());
    if (!strstr(i.library, "OpenBLAS")) {
        printf("not OpenBLAS: the in-process part is skipped\n");
        TEST_DONE();
    }
    check_gemm(i.core);
    if (!strcmp(i.source, "user")) {
        printf("OPENBLAS_CORETYPE is set: the simulation is skipped\n");
        TEST_DONE();
    }
    CHECK(pz_blas_force_core("Prescott"), "OpenBLAS's Prescott kernels can be selected (simulating an unknown CPU)");
    i = pz_blas_get_info();
    CHECK(!strcasecmp(i.core, "Prescott"), "Prescott runs now (%s)", i.core);
    check_gemm(i.core);
    pz_blas_rechoose();
    i = pz_blas_get_info();
    const unsigned f = pz_cpu_features();
    if (f & PZ_CPU_AVX2_FMA) {
        CHECK(strcasecmp(i.core, "Prescott") && !i.generic && !strcmp(i.source, "pipezip"),
              "on a CPU with AVX2+FMA a vector core replaces the generic one: %s (chosen by %s)", i.core, i.source);
        if (f & PZ_CPU_AVX512)
            CHECK(!strcasecmp(i.core, "SkylakeX") || !strcasecmp(i.core, "Cooperlake"), "AVX-512: an AVX-512 core (%s)", i.core);
    } else {
        CHECK(!strcasecmp(i.core, "Prescott"), "without AVX2 the generic core stays (%s)", i.core);
    }
    check_gemm(i.core);
    TEST_DONE();
}
