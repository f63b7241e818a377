/* SPDX-License-Identifier: MIT */
/* blas.c (base) — which BLAS kernels run, chosen by what the CPU can do.
 *
 * OpenBLAS (a DYNAMIC_ARCH build, as Debian's) picks its kernels from a
 * table of CPU models when it loads; a CPU newer than the library gets the
 * generic "Prescott" SSE3 kernels (3x slower on an AVX-512 Xeon of family 6
 * model 207 with Debian 12's 0.3.21). Before the first GEMM, and unless the
 * user chose a core with OPENBLAS_CORETYPE, pipezip compares OpenBLAS's
 * choice with the CPU's instruction-set features and, when OpenBLAS fell
 * below them, selects the kernels the features allow (SkylakeX/Cooperlake
 * for AVX-512, Haswell/Zen for AVX2+FMA) through OpenBLAS's own exported
 * re-initialisation (gotoblas_dynamic_quit/init reading OPENBLAS_CORETYPE),
 * then removes the variable again so that child processes choose for
 * themselves. A BLAS without those entry points is left as it is. */
#define _GNU_SOURCE
#include "base.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* OpenBLAS's own queries, found at run time (another CBLAS has none) */
static const char *blas_query(const char *name) {
    char *(*f)(void) = (char *(*)(void))dlsym(RTLD_DEFAULT, name);
    return f ? f() : NULL;
}

const char *pz_kernels_wanted(const char *var) {
    const char *want = getenv(var);
    return want && *want ? want : NULL;
}

int pz_kernels_user_choice(const char *var, const char *fallback, const char *want, const char *got) {
    if (!want) return 0;
    if (strcmp(want, fallback) && strcmp(want, "avx2") && strcmp(want, "avx512")) {
        fprintf(stderr, "pipezip: %s='%s' is not %s, avx2 or avx512; choosing by CPU\n", var, want, fallback);
        return 0;
    }
    if (strcmp(want, fallback) && (!got || strcmp(got, want))) {
        fprintf(stderr, "pipezip: %s=%s: this CPU lacks it; choosing by CPU\n", var, want);
        return 0;
    }
    return 1;
}

unsigned pz_cpu_features(void) {
    unsigned f = 0;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) f |= PZ_CPU_AVX2_FMA;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512cd"))
        f |= PZ_CPU_AVX512;
    if (__builtin_cpu_supports("avx512bf16")) f |= PZ_CPU_AVX512_BF16;
    if (__builtin_cpu_is("amd")) f |= PZ_CPU_AMD;
    return f;
}

static int is_one_of(const char *core, const char *const *names) {
    for (; *names; names++)
        if (!strcasecmp(core, *names)) return 1;
    return 0;
}

const char *pz_blas_core_for(const char *current, unsigned features) {
    /* OpenBLAS's x86-64 cores that use each feature level's vector units */
    static const char *const avx512_cores[] = {"SkylakeX", "Cooperlake", "SapphireRapids", NULL};
    static const char *const avx2_cores[] = {"Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids", NULL};
    if (!current) return NULL;
    if (features & PZ_CPU_AVX512) {
        if (is_one_of(current, avx512_cores)) return NULL;
        return features & PZ_CPU_AVX512_BF16 ? "Cooperlake" : "SkylakeX";
    }
    if (features & PZ_CPU_AVX2_FMA) {
        if (is_one_of(current, avx2_cores)) return NULL;
        return features & PZ_CPU_AMD ? "Zen" : "Haswell";
    }
    return NULL;
}

static struct {
    char core[64];        /* the kernels running now */
    char openblas[64];    /* what OpenBLAS chose by itself ("" when the user did) */
    char source[16];      /* "openblas", "pipezip", "user" */
} state;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t switch_mu = PTHREAD_MUTEX_INITIALIZER;

static const char *corename(void) { return blas_query("openblas_get_corename"); }

/* Re-select OpenBLAS's kernels as OPENBLAS_CORETYPE=core would have at load. */
static int switch_core(const char *core) {
    void (*quit)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit");
    void (*init)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init");
    if (!quit || !init || !corename()) return 0;
    pthread_mutex_lock(&switch_mu);
    const char *had = getenv("OPENBLAS_CORETYPE");
    char saved[64] = "";
    if (had) snprintf(saved, sizeof saved, "%s", had);
    setenv("OPENBLAS_CORETYPE", core, 1);
    quit();
    init();
    if (had) setenv("OPENBLAS_CORETYPE", saved, 1);
    else unsetenv("OPENBLAS_CORETYPE");
    pthread_mutex_unlock(&switch_mu);
    return !strcasecmp(corename(), core);
}

static void choose(void) {
    const char *now = corename();
    snprintf(state.core, sizeof state.core, "%s", now ? now : "");
    if (!now) {
        snprintf(state.source, sizeof state.source, "library");
        return;
    }
    const char *env = getenv("OPENBLAS_CORETYPE");
    if (env && *env) {
        snprintf(state.source, sizeof state.source, "user");
        return;
    }
    snprintf(state.openblas, sizeof state.openblas, "%s", now);
    snprintf(state.source, sizeof state.source, "openblas");
    const char *better = pz_blas_core_for(now, pz_cpu_features());
    if (better && switch_core(better)) {
        snprintf(state.core, sizeof state.core, "%s", corename());
        snprintf(state.source, sizeof state.source, "pipezip");
    }
}

void pz_blas_prepare(void) { pthread_once(&once, choose); }

int pz_blas_force_core(const char *core) {
    pz_blas_prepare();
    if (!switch_core(core)) return 0;
    snprintf(state.core, sizeof state.core, "%s", corename());
    return 1;
}

void pz_blas_rechoose(void) {
    pz_blas_prepare();
    const char *better = pz_blas_core_for(corename(), pz_cpu_features());
    if (better && switch_core(better)) {
        snprintf(state.core, sizeof state.core, "%s", corename());
        snprintf(state.source, sizeof state.source, "pipezip");
    }
}

pz_blas_info pz_blas_get_info(void) {
    pz_blas_prepare();
    pz_blas_info i;
    memset(&i, 0, sizeof i);
    const char *cfg = blas_query("openblas_get_config");
    if (!cfg) cfg = "a CBLAS without OpenBLAS's queries";
    snprintf(i.library, sizeof i.library, "%s", cfg);
    snprintf(i.core, sizeof i.core, "%s", state.core[0] ? state.core : "unknown");
    snprintf(i.source, sizeof i.source, "%s", state.source);
    snprintf(i.openblas_choice, sizeof i.openblas_choice, "%s", state.openblas);
    /* a generic core where the CPU has more: the features would pick another */
    i.generic = corename() && pz_blas_core_for(state.core, pz_cpu_features()) != NULL;
    return i;
}

/* "model name" of /proc/cpuinfo, with family and model (the keys of
 * OpenBLAS's table) */
static char cpu_name[160];
static pthread_once_t cpu_once = PTHREAD_ONCE_INIT;

static void read_cpu_name(void) {
    char model[128] = "", line[512];
    int family = -1, number = -1;
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f)) {
        const char *colon = strchr(line, ':');
        if (!colon) continue;
        const char *v = colon + 1 + (colon[1] == ' ');
        if (!model[0] && !strncmp(line, "model name", 10)) snprintf(model, sizeof model, "%.*s", (int)strcspn(v, "\n"), v);
        else if (family < 0 && !strncmp(line, "cpu family", 10)) family = atoi(v);
        else if (number < 0 && !strncmp(line, "model\t", 6)) number = atoi(v);
        if (model[0] && family >= 0 && number >= 0) break;
    }
    if (f) fclose(f);
    if (family >= 0) snprintf(cpu_name, sizeof cpu_name, "%s (family %d, model %d)", model[0] ? model : "unknown", family, number);
    else snprintf(cpu_name, sizeof cpu_name, "%s", model[0] ? model : "unknown");
}

const char *pz_cpu_name(void) {
    pthread_once(&cpu_once, read_cpu_name);
    return cpu_name;
}
