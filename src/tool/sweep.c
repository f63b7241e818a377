/* SPDX-License-Identifier: MIT */
/* sweep.c — `pipezip sweep`: run each point of a configuration
 * (sweep_plan.c) as a `pipezip train` process (up to `jobs` at once; a
 * finished point is skipped, an interrupted one resumed from its
 * checkpoint), record and apply the kernels its runs use, then collect the
 * results (sweep_results.c). See sweep.h for the file format. */
#define _GNU_SOURCE
#include "tool/sweep_plan.h"
#include "run/records.h"
#include "run/metrics.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* ---- running ------------------------------------------------------------------ */
typedef struct {
    pid_t pid;
    int point;
} child;

/* " word", in single quotes where a POSIX shell would read it otherwise ("--fwd=ef21(q2)") */
static void print_shell_word(const char *w) {
    int plain = *w != 0;
    for (const char *c = w; *c; c++) plain &= isalnum((unsigned char)*c) || strchr("-_=.,:/+@%^", *c) != NULL;
    if (plain) {
        printf(" %s", w);
        return;
    }
    printf(" '");
    for (const char *c = w; *c; c++) *c == '\'' ? printf("'\\''") : putchar(*c);
    printf("'");
}

static pz_status spawn_point(const pz_sweep_opts *o, const plan *pl, int p, int threads, pid_t *pid, int dry) {
    const point *pt = &pl->pts[p];
    char run[4200], log[4300], thr[32];
    snprintf(run, sizeof run, "%s/runs/%s", o->out_dir, pt->id);
    snprintf(log, sizeof log, "%s/runs/%s.log", o->out_dir, pt->id);
    snprintf(thr, sizeof thr, "--threads=%d", threads);
    char *argv[MAX_KEYS + 12];
    char args[MAX_KEYS][600];
    int a = 0;
    argv[a++] = (char *)"pipezip";
    argv[a++] = (char *)"train";
    char runarg[4300];
    char ckpt[4300];
    snprintf(ckpt, sizeof ckpt, "%s/checkpoint/latest.json", run);
    const int resume = access(ckpt, F_OK) == 0;
    snprintf(runarg, sizeof runarg, "--%s=%s", resume ? "resume" : "out", run);
    argv[a++] = runarg;
    /* a point that failed before its first checkpoint starts again: its directory is the sweep's */
    if (!resume) argv[a++] = (char *)"--overwrite";
    argv[a++] = (char *)"--progress=none";
    int has_threads = 0;
    for (int i = 0; i < pt->n; i++) {
        snprintf(args[i], sizeof args[i], "--%s=%s", pt->set[i].key, pt->set[i].value);
        has_threads |= !strcmp(pt->set[i].key, "threads");
        argv[a++] = args[i];
    }
    if (!has_threads) argv[a++] = thr;
    argv[a] = NULL;
    if (dry) { /* a command a shell runs as printed */
        printf("%s:", pt->id);
        for (int i = 0; i < a; i++) print_shell_word(argv[i]);
        printf("\n");
        return PZ_OK;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    const int rc = posix_spawn(pid, o->exe, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc) return pz_fail(PZ_ERR_IO, "cannot start '%s': %s", o->exe, strerror(rc));
    return PZ_OK;
}

static pz_status copy_file(const char *from, const char *to) {
    uint8_t *d;
    size_t n;
    PZ_TRY(pz_read_file(from, &d, &n));
    const pz_status s = pz_write_file_atomic(to, d, n);
    free(d);
    return s;
}

/* ---- the kernels a sweep's runs use ------------------------------------------------
 * Same seed, same numbers holds for the same build and the same kernels;
 * the kernels are chosen by CPU (OpenBLAS's core type, pipezip's
 * convolution kernels). A sweep records what its first finished run used
 * in DIR/kernels.json and gives later runs (a resumed sweep, another
 * machine) the same, through OPENBLAS_CORETYPE, PZ_CONV_KERNELS and
 * PZ_GEMM_KERNELS, so that
 * one sweep never mixes kernels; [sweep] blas-core / conv-kernels choose
 * them outright, and the variables set by the user win over both. */
static int core_runs_here(const char *core) {
    const unsigned f = pz_cpu_features();
    if (strstr(core, "SkylakeX") || strstr(core, "Cooperlake") || strstr(core, "SapphireRapids")) return (f & PZ_CPU_AVX512) != 0;
    if (strstr(core, "Haswell") || strstr(core, "Zen") || strstr(core, "Sandybridge")) return (f & PZ_CPU_AVX2_FMA) != 0;
    return 1; /* the generic cores run on any x86-64 */
}

static void apply_kernel(const char *var, const char *want, const char *from, int quiet) {
    if (!want || !*want) return;
    const char *have = getenv(var);
    if (have && *have) {
        if (strcmp(have, want))
            fprintf(stderr, "sweep: %s=%s is set, so the runs use it; %s says %s (the numbers may differ from its runs')\n", var, have, from, want);
        return;
    }
    char use[64];
    snprintf(use, sizeof use, "%s", want);
    if (!strcmp(var, "OPENBLAS_CORETYPE") && !core_runs_here(want)) {
        fprintf(stderr, "sweep: %s says OpenBLAS core %s, which this CPU cannot run: the runs choose their own (their numbers will differ)\n", from,
                want);
        return;
    }
    /* pipezip's own convolution or matrix-product kernels: the avx2 and
     * avx512 builds give the same bits, so either that this CPU has */
    const int conv = !strcmp(var, "PZ_CONV_KERNELS"), gemm = !strcmp(var, "PZ_GEMM_KERNELS");
    if ((conv && strcmp(want, "im2col")) || (gemm && strcmp(want, "blas"))) {
        const unsigned f = pz_cpu_features();
        if (f & PZ_CPU_AVX512) snprintf(use, sizeof use, "%s", want);
        else if (f & PZ_CPU_AVX2_FMA) snprintf(use, sizeof use, "avx2");
        else {
            fprintf(stderr, "sweep: %s says %s kernels %s, which need AVX2: the runs use %s (their numbers will differ)\n", from,
                    conv ? "convolution" : "matrix-product", want, conv ? "im2col" : "the BLAS");
            return;
        }
    }
    setenv(var, use, 1);
    if (!quiet) fprintf(stderr, "sweep: %s=%s (from %s)\n", var, use, from);
}

/* DIR/kernels.json from the first finished run's config.json */
pz_status sweep_record_kernels(const char *dir, const plan *pl) {
    char path[4300];
    snprintf(path, sizeof path, "%s/kernels.json", dir);
    if (access(path, F_OK) == 0) return PZ_OK;
    for (int p = 0; p < pl->npts; p++) {
        char run[4300];
        snprintf(run, sizeof run, "%s/runs/%s/summary.json", dir, pl->pts[p].id);
        if (!sweep_file_has(run, "\"status\": \"finished\"")) continue;
        snprintf(run, sizeof run, "%s/runs/%s/config.json", dir, pl->pts[p].id);
        char *t = pz_slurp(run);
        if (!t) continue;
        static const char *keys[] = {"blas_core", "conv_kernels", "gemm_kernels", "cpu", "blas", "git_commit", "version"};
        pz_field f[9];
        char vals[7][512];
        int n = 0;
        for (int k = 0; k < 7; k++) {
            if (k == 2 && !strstr(t, "\"gemm_kernels\"")) continue; /* a run made before pipezip had its own */
            vals[k][0] = 0;
            pz_json_str(t, keys[k], vals[k], sizeof vals[k]);
            f[n++] = PZ_STR(keys[k], vals[k]);
        }
        f[n++] = PZ_STR("from_run", pl->pts[p].id);
        free(t);
        char buf[8192];
        const int len = pz_fields_to_json(buf, sizeof buf - 1, f, n);
        if (len <= 0 || (size_t)len >= sizeof buf - 1) return pz_fail(PZ_ERR_IO, "%s: the record is too long", path);
        buf[len] = '\n';
        return pz_write_file_atomic(path, buf, (size_t)len + 1);
    }
    return PZ_OK;
}

static void apply_kernels(const char *dir, const plan *pl, int quiet) {
    const char *core = pz_ini_get(&pl->ini, "sweep", "blas-core"), *conv = pz_ini_get(&pl->ini, "sweep", "conv-kernels");
    char path[4300], rec_core[128] = "", rec_conv[64] = "", rec_gemm[64] = "";
    snprintf(path, sizeof path, "%s/kernels.json", dir);
    char *t = pz_slurp(path);
    if (t) {
        pz_json_str(t, "blas_core", rec_core, sizeof rec_core);
        pz_json_str(t, "conv_kernels", rec_conv, sizeof rec_conv);
        pz_json_str(t, "gemm_kernels", rec_gemm, sizeof rec_gemm);
        free(t);
    }
    char from[4400];
    snprintf(from, sizeof from, "the configuration's [sweep] blas-core");
    if (core) apply_kernel("OPENBLAS_CORETYPE", core, from, quiet);
    else if (rec_core[0] && strcmp(rec_core, "unknown")) {
        snprintf(from, sizeof from, "%s, the kernels this sweep's runs used", path);
        apply_kernel("OPENBLAS_CORETYPE", rec_core, from, quiet);
    }
    snprintf(from, sizeof from, "the configuration's [sweep] conv-kernels");
    if (conv) apply_kernel("PZ_CONV_KERNELS", conv, from, quiet);
    else if (rec_conv[0]) {
        snprintf(from, sizeof from, "%s, the kernels this sweep's runs used", path);
        apply_kernel("PZ_CONV_KERNELS", rec_conv, from, quiet);
    }
    if (rec_gemm[0]) {
        snprintf(from, sizeof from, "%s, the kernels this sweep's runs used", path);
        apply_kernel("PZ_GEMM_KERNELS", rec_gemm, from, quiet);
    }
}

pz_status pz_sweep_run(const pz_sweep_opts *o, pz_option_check_fn known) {
    plan pl;
    pz_status st = sweep_plan_load(&pl, o->config, o->variant, known);
    if (st) {
        sweep_plan_free(&pl);
        return st;
    }
    const char *cj = pz_ini_get(&pl.ini, "sweep", "jobs"), *ct = pz_ini_get(&pl.ini, "sweep", "threads");
    const long cores = sysconf(_SC_NPROCESSORS_ONLN) > 0 ? sysconf(_SC_NPROCESSORS_ONLN) : 1;
    int jobs = o->jobs ? o->jobs : cj ? atoi(cj) : 1;
    if (jobs < 1) jobs = 1;
    int threads = o->threads ? o->threads : ct ? atoi(ct) : (int)(cores / jobs > 0 ? cores / jobs : 1);
    if (threads < 1) threads = 1;
    char path[4200];
    if (!o->dry_run) {
        snprintf(path, sizeof path, "%s/runs", o->out_dir);
        st = pz_mkdir_p(path);
        /* a sweep directory belongs to one configuration and variant */
        char mine[4200], var[4200];
        snprintf(mine, sizeof mine, "%s/sweep.ini", o->out_dir);
        snprintf(var, sizeof var, "%s/variant", o->out_dir);
        if (!st && access(var, F_OK) == 0 && !sweep_file_has(var, pl.variant))
            st = pz_fail(PZ_ERR_ARG, "%s holds the other variant of a sweep: use another --out", o->out_dir);
        if (!st) st = copy_file(o->config, mine);
        if (!st) st = pz_write_file_atomic(var, pl.variant, strlen(pl.variant));
        if (!st) apply_kernels(o->out_dir, &pl, o->quiet);
    }
    int done = 0, skipped = 0, failed = 0, next = 0, running = 0;
    child kids[64];
    if (jobs > 64) jobs = 64;
    const double t0 = pz_now();
    while (!st && (next < pl.npts || running)) {
        while (next < pl.npts && running < jobs) {
            const int p = next++;
            snprintf(path, sizeof path, "%s/runs/%s/summary.json", o->out_dir, pl.pts[p].id);
            if (!o->dry_run && sweep_file_has(path, "\"status\": \"finished\"")) {
                skipped++;
                continue;
            }
            pid_t pid = 0;
            if ((st = spawn_point(o, &pl, p, threads, &pid, o->dry_run))) break;
            if (o->dry_run) continue;
            kids[running++] = (child){pid, p};
            if (!o->quiet) fprintf(stderr, "sweep: started %s (%d/%d)\n", pl.pts[p].id, p + 1, pl.npts);
        }
        if (!running) break;
        int status;
        const pid_t pid = waitpid(-1, &status, 0);
        if (pid < 0) {
            if (errno == EINTR) continue;
            st = pz_fail(PZ_ERR_IO, "waitpid: %s", strerror(errno));
            break;
        }
        for (int k = 0; k < running; k++)
            if (kids[k].pid == pid) {
                const int p = kids[k].point;
                kids[k] = kids[--running];
                const int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
                if (WIFEXITED(status) && WEXITSTATUS(status) == 130) {
                    st = pz_fail(PZ_ERR_STATE, "interrupted: run the same command again to continue (finished points are skipped)");
                } else if (!ok) {
                    failed++;
                    fprintf(stderr, "sweep: %s failed (exit %d); see %s/runs/%s.log\n", pl.pts[p].id,
                            WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), o->out_dir, pl.pts[p].id);
                } else {
                    done++;
                    if (!st) st = sweep_record_kernels(o->out_dir, &pl);
                    if (!o->quiet)
                        fprintf(stderr, "sweep: finished %s (%d done, %d skipped, %d failed, %.0f s)\n", pl.pts[p].id, done, skipped, failed,
                                pz_now() - t0);
                }
                break;
            }
    }
    /* stopping: let the running ones write their "stopped" summaries */
    for (int k = 0; k < running; k++) {
        kill(kids[k].pid, SIGINT);
        waitpid(kids[k].pid, NULL, 0);
    }
    if (!st && !o->dry_run) st = pz_sweep_collect(o->out_dir);
    if (!st && failed) st = pz_fail(PZ_ERR_STATE, "%d of %d points failed (their logs are in %s/runs)", failed, pl.npts, o->out_dir);
    if (!o->quiet && !o->dry_run)
        fprintf(stderr, "sweep: %d points: %d run, %d already done, %d failed; results in %s/results.csv\n", pl.npts, done, skipped, failed,
                o->out_dir);
    sweep_plan_free(&pl);
    return st;
}
