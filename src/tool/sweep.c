/* SPDX-License-Identifier: MIT */
/* sweep.c — `pipezip sweep`: expand a configuration into points, run each
 * as a `pipezip train` process (up to `jobs` at once; a finished point is
 * skipped, an interrupted one resumed from its checkpoint), then write
 * results.csv with one row per run. See sweep.h for the file format. */
#define _GNU_SOURCE
#include "tool/sweep.h"
#include "tool/ini.h"
#include "exp/records.h"
#include "exp/metrics.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

enum { MAX_KEYS = 64, MAX_VALUES = 32, MAX_GRID = 12 };

typedef struct {
    char key[64], value[512];
} kv;

typedef struct {
    char id[160];
    kv set[MAX_KEYS];
    int n;
} point;

typedef struct {
    pz_ini ini;
    char variant[16];
    kv base[MAX_KEYS];
    int nbase;
    struct {
        char key[64];
        char vals[MAX_VALUES][512];
        int n;
    } grid[MAX_GRID];
    int ngrid;
    point *pts;
    int npts;
} plan;

static const char *sweep_keys[] = {"name", "description", "target", "target-inference", "rows", "cols", "jobs", "threads", "blas-core", "conv-kernels", NULL};

static void kv_set(kv *list, int *n, const char *key, const char *value) {
    for (int i = 0; i < *n; i++)
        if (!strcmp(list[i].key, key)) {
            snprintf(list[i].value, sizeof list[i].value, "%s", value);
            return;
        }
    if (*n >= MAX_KEYS) return;
    snprintf(list[*n].key, sizeof list[*n].key, "%s", key);
    snprintf(list[*n].value, sizeof list[*n].value, "%s", value);
    (*n)++;
}

static char *trim(char *s) {
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = 0;
    return s;
}

/* name is a grid key, or one half of a zipped one (fwd of fwd+bwd) */
static int grid_names(const plan *pl, const char *name) {
    const size_t n = strlen(name);
    for (int g = 0; g < pl->ngrid; g++) {
        const char *k = pl->grid[g].key;
        if (!strcmp(k, name)) return 1;
        for (const char *p = k; (p = strstr(p, name)); p++)
            if ((p == k || p[-1] == '+') && (p[n] == 0 || p[n] == '+')) return 1;
    }
    return 0;
}

static pz_status grid_set(plan *pl, const pz_ini_entry *e) {
    int g = 0;
    while (g < pl->ngrid && strcmp(pl->grid[g].key, e->key)) g++;
    if (g == pl->ngrid) {
        if (pl->ngrid == MAX_GRID) return pz_fail(PZ_ERR_ARG, "%s:%d: at most %d grid keys", pl->ini.path, e->line, MAX_GRID);
        pl->ngrid++;
        snprintf(pl->grid[g].key, sizeof pl->grid[g].key, "%s", e->key);
    }
    pl->grid[g].n = 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", e->value);
    char *save = NULL;
    for (char *t = strtok_r(buf, "|", &save); t; t = strtok_r(NULL, "|", &save)) {
        if (pl->grid[g].n == MAX_VALUES) return pz_fail(PZ_ERR_ARG, "%s:%d: at most %d values", pl->ini.path, e->line, MAX_VALUES);
        const char *v = trim(t);
        if (!*v) return pz_fail(PZ_ERR_ARG, "%s:%d: an empty value in '%s'", pl->ini.path, e->line, e->value);
        snprintf(pl->grid[g].vals[pl->grid[g].n++], 512, "%s", v);
    }
    if (!pl->grid[g].n) return pz_fail(PZ_ERR_ARG, "%s:%d: '%s' has no values", pl->ini.path, e->line, e->key);
    return PZ_OK;
}

/* a file-name-safe form: letters, digits and dots; other runs become one '-' */
static void sanitize(char *out, size_t cap, const char *in) {
    size_t n = 0;
    for (; *in && n + 1 < cap; in++) {
        const int ok = isalnum((unsigned char)*in) || *in == '.';
        if (ok) out[n++] = *in;
        else if (n && out[n - 1] != '-') out[n++] = '-';
    }
    while (n && out[n - 1] == '-') n--;
    out[n] = 0;
}

/* "fwd+bwd": several options set together, values "q4 + q8" */
static int keys_known(const char *key, pz_option_check_fn known) {
    char buf[64];
    snprintf(buf, sizeof buf, "%s", key);
    char *save = NULL;
    for (char *t = strtok_r(buf, "+", &save); t; t = strtok_r(NULL, "+", &save))
        if (!known(trim(t))) return 0;
    return 1;
}

static pz_status set_compound(point *pt, const char *key, const char *value, const char *path) {
    char kb[64], vb[512];
    snprintf(kb, sizeof kb, "%s", key);
    snprintf(vb, sizeof vb, "%s", value);
    /* values join with " + " (a spec may hold a '+' of its own: q8+zstd);
     * a value without spaces around its '+' joins at every '+' */
    const int spaced = strstr(vb, " + ") != NULL;
    char *ks = NULL, *k = strtok_r(kb, "+", &ks), *v = vb;
    for (; k && v; k = strtok_r(NULL, "+", &ks)) {
        char *next = spaced ? strstr(v, " + ") : strchr(v, '+');
        if (next) *next = 0, next += spaced ? 3 : 1;
        kv_set(pt->set, &pt->n, trim(k), trim(v));
        v = next;
    }
    if (k || v) return pz_fail(PZ_ERR_ARG, "%s: '%s = %s': as many values joined by + as keys", path, key, value);
    return PZ_OK;
}

/* One entry of the config, checked before anything applies: a [sweep] key
 * and its value, a known section, a pipezip train option the sweep does
 * not set itself. */
static pz_status check_entry(const pz_ini_entry *e, const char *path, pz_option_check_fn known) {
    const char *s = e->section;
    const int is_opt = !strcmp(s, "base") || !strcmp(s, "grid") || !strcmp(s, "quick") || !strcmp(s, "full") || !strcmp(s, "quick.grid") ||
                       !strcmp(s, "full.grid");
    if (!strcmp(s, "sweep")) {
        int ok = 0;
        for (const char **k = sweep_keys; *k; k++) ok |= !strcmp(*k, e->key);
        if (!ok)
            return pz_fail(PZ_ERR_ARG, "%s:%d: unknown key '%s' in [sweep] (expected name, description, target, target-inference, rows, cols, jobs, threads, blas-core, conv-kernels)",
                           path, e->line, e->key);
        if (!strcmp(e->key, "target-inference") && strcmp(e->value, "plain") && strcmp(e->value, "compressed"))
            return pz_fail(PZ_ERR_ARG, "%s:%d: target-inference = %s (expected plain or compressed)", path, e->line, e->value);
        if (!strcmp(e->key, "conv-kernels") && strcmp(e->value, "im2col") && strcmp(e->value, "avx2") && strcmp(e->value, "avx512"))
            return pz_fail(PZ_ERR_ARG, "%s:%d: conv-kernels = %s (expected im2col, avx2 or avx512)", path, e->line, e->value);
    } else if (!is_opt) {
        return pz_fail(PZ_ERR_ARG, "%s:%d: unknown section [%s] (expected sweep, base, grid, quick, full, quick.grid, full.grid)", path, e->line, s);
    } else if (known && !keys_known(e->key, known)) {
        return pz_fail(PZ_ERR_ARG, "%s:%d: '%s' is not a pipezip train option (see pipezip train --help)", path, e->line, e->key);
    } else if (!strcmp(e->key, "out") || !strcmp(e->key, "resume") || !strcmp(e->key, "progress")) {
        return pz_fail(PZ_ERR_ARG, "%s:%d: '%s' is set by the sweep itself", path, e->line, e->key);
    } else if (!strcmp(e->key, "metrics") && strcmp(e->value, "jsonl")) {
        /* the sweep reads its runs' JSON Lines; results.csv is its CSV */
        return pz_fail(PZ_ERR_ARG, "%s:%d: metrics = %s: a sweep's runs write jsonl (the sweep reads them; its results.csv is the table)", path,
                       e->line, e->value);
    }
    return PZ_OK;
}

/* rows and cols name the grid's keys (a key of a zipped pair, fwd+bwd,
 * counts alone too), or two of them joined by +: the report's tables are
 * laid out by them */
static pz_status check_layout(const plan *pl, const char *path) {
    for (int i = 0; i < pl->ini.n; i++) {
        const pz_ini_entry *e = &pl->ini.e[i];
        if (strcmp(e->section, "sweep") || (strcmp(e->key, "rows") && strcmp(e->key, "cols"))) continue;
        if (grid_names(pl, e->value)) continue;
        char buf[512];
        snprintf(buf, sizeof buf, "%.511s", e->value);
        char *plus = strchr(buf, '+');
        if (plus && !strchr(plus + 1, '+')) {
            *plus = 0;
            if (grid_names(pl, trim(buf)) && grid_names(pl, trim(plus + 1))) continue;
        }
        char keys[512] = "";
        for (int j = 0; j < pl->ngrid; j++) snprintf(keys + strlen(keys), sizeof keys - strlen(keys), "%s%s", j ? ", " : "", pl->grid[j].key);
        return pz_fail(PZ_ERR_ARG, "%s:%d: %s = %s names no key of [grid] (%s), nor two joined by +", path, e->line, e->key, e->value,
                       pl->ngrid ? keys : "it has none");
    }
    return PZ_OK;
}

/* point p of the grid (mixed radix over its keys, the last fastest): the
 * base settings, then the grid's (a key both fixed and in the grid: the
 * grid wins); its id names the keys that vary */
static pz_status make_point(plan *pl, int p, const char *path) {
    point *pt = &pl->pts[p];
    for (int i = 0; i < pl->nbase; i++) kv_set(pt->set, &pt->n, pl->base[i].key, pl->base[i].value);
    char id[160];
    snprintf(id, sizeof id, "p%03d", p + 1);
    int rest = p;
    int idx[MAX_GRID];
    for (int g = pl->ngrid - 1; g >= 0; g--) idx[g] = rest % pl->grid[g].n, rest /= pl->grid[g].n;
    for (int g = 0; g < pl->ngrid; g++) {
        const char *v = pl->grid[g].vals[idx[g]];
        PZ_TRY(set_compound(pt, pl->grid[g].key, v, path));
        if (pl->grid[g].n > 1) {
            char part[64];
            sanitize(part, sizeof part, v);
            const size_t l = strlen(id);
            char key[64];
            sanitize(key, sizeof key, pl->grid[g].key);
            snprintf(id + l, sizeof id - l, "_%.20s-%.30s", key, part);
        }
    }
    snprintf(pt->id, sizeof pt->id, "%s", id);
    return PZ_OK;
}

static pz_status plan_load(plan *pl, const char *path, const char *variant, pz_option_check_fn known) {
    memset(pl, 0, sizeof *pl);
    PZ_TRY(pz_ini_load(&pl->ini, path));
    snprintf(pl->variant, sizeof pl->variant, "%s", variant ? variant : "full");
    /* paper: [base] and [grid] alone, the papers' scale; full and quick
     * apply their overrides (this machine's scale, and CI's) */
    if (strcmp(pl->variant, "quick") && strcmp(pl->variant, "full") && strcmp(pl->variant, "paper"))
        return pz_fail(PZ_ERR_ARG, "--variant '%s' (expected quick, full or paper)", pl->variant);
    char vbase[32], vgrid[40];
    snprintf(vbase, sizeof vbase, "%s", pl->variant);
    snprintf(vgrid, sizeof vgrid, "%s.grid", pl->variant);
    /* validate every entry, then apply: base and grid, then the variant's overrides */
    for (int i = 0; i < pl->ini.n; i++) PZ_TRY(check_entry(&pl->ini.e[i], path, known));
    for (int pass = 1; pass < 3; pass++)
        for (int i = 0; i < pl->ini.n; i++) {
            const pz_ini_entry *e = &pl->ini.e[i];
            const char *sb = pass == 1 ? "base" : vbase, *sg = pass == 1 ? "grid" : vgrid;
            if (!strcmp(e->section, sb)) kv_set(pl->base, &pl->nbase, e->key, e->value);
            else if (!strcmp(e->section, sg)) PZ_TRY(grid_set(pl, e));
        }
    PZ_TRY(check_layout(pl, path));
    int total = 1;
    for (int g = 0; g < pl->ngrid; g++) total *= pl->grid[g].n;
    if (total > 10000) return pz_fail(PZ_ERR_ARG, "%s: %d points is too many", path, total);
    pl->pts = calloc((size_t)total, sizeof(point));
    if (!pl->pts) return pz_fail(PZ_ERR_NOMEM, "%s: out of memory for %d points", path, total);
    pl->npts = total;
    for (int p = 0; p < total; p++) PZ_TRY(make_point(pl, p, path));
    return PZ_OK;
}

static void plan_free(plan *pl) {
    pz_ini_free(&pl->ini);
    free(pl->pts);
}

static int file_has(const char *path, const char *needle) {
    char *t = pz_slurp(path);
    if (!t) return 0;
    const int r = strstr(t, needle) != NULL;
    free(t);
    return r;
}

/* ---- running ------------------------------------------------------------------ */
typedef struct {
    pid_t pid;
    int point;
} child;

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
    if (dry) {
        printf("%s:", pt->id);
        for (int i = 0; i < a; i++) printf(" %s", argv[i]);
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
static pz_status record_kernels(const char *dir, const plan *pl) {
    char path[4300];
    snprintf(path, sizeof path, "%s/kernels.json", dir);
    if (access(path, F_OK) == 0) return PZ_OK;
    for (int p = 0; p < pl->npts; p++) {
        char run[4300];
        snprintf(run, sizeof run, "%s/runs/%s/summary.json", dir, pl->pts[p].id);
        if (!file_has(run, "\"status\": \"finished\"")) continue;
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
    pz_status st = plan_load(&pl, o->config, o->variant, known);
    if (st) {
        plan_free(&pl);
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
        if (!st && access(var, F_OK) == 0 && !file_has(var, pl.variant))
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
            if (!o->dry_run && file_has(path, "\"status\": \"finished\"")) {
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
                    if (!st) st = record_kernels(o->out_dir, &pl);
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
    plan_free(&pl);
    return st;
}

/* ---- results -------------------------------------------------------------------- */



static void csv_num(FILE *f, double v) {
    if (isnan(v)) return; /* empty: not available */
    if (v == floor(v) && fabs(v) < 1e15) fprintf(f, "%.0f", v);
    else fprintf(f, "%.6g", v);
}

typedef struct {
    char status[32], fwd[256], bwd[256];
    double epochs, final_acc, best_acc, final_cacc, best_cacc, fwd_bytes, bwd_bytes, fp32_bytes, wall, emulated;
    double fwd_bits, bwd_bits, fwd_err, bwd_err, fwd_ratio, bwd_ratio;
    double final_loss, final_closs, final_bpb, final_cbpb, final_train_loss; /* language models: validation loss per token, bits per byte */
    /* where the target is looked for: every --eval-every evaluation
     * (evals.jsonl) when the run made them, else every epoch's end */
    int n_ep;
    double ep_acc[1024], ep_cacc[1024], ep_time[1024], ep_emu[1024], ep_bytes[1024], ep_epoch[1024], ep_step[1024];
    double ep_loss[1024], ep_closs[1024]; /* validation loss, plain and through the compressed boundaries */
} run_result;

/* one evaluation record (epochs.jsonl or evals.jsonl) as the next point of r's series */
static void read_point(run_result *r, char *line, int e) {
    const double nan = NAN;
    double v;
    r->ep_acc[e] = pz_json_num(line, "test_accuracy", &v) ? v : nan;
    r->ep_cacc[e] = pz_json_num(line, "test_accuracy_compressed", &v) && v >= 0 ? v : r->ep_acc[e];
    r->ep_loss[e] = pz_json_num(line, "test_loss", &v) ? v : nan;
    r->ep_closs[e] = pz_json_num(line, "test_loss_compressed", &v) && v >= 0 ? v : r->ep_loss[e];
    r->ep_time[e] = pz_json_num(line, "time", &v) ? v : nan;
    r->ep_emu[e] = pz_json_num(line, "emulated_time", &v) ? v : r->ep_time[e];
    double fb = 0, bb = 0;
    pz_json_num(line, "fwd_bytes", &fb), pz_json_num(line, "bwd_bytes", &bb);
    r->ep_bytes[e] = fb + bb;
    r->ep_epoch[e] = pz_json_num(line, "epoch", &v) ? v : e + 1;
    r->ep_step[e] = pz_json_num(line, "step", &v) ? v : nan;
}

/* r's series from a metrics file; the number of points (0: no file) */
static int read_series(run_result *r, const char *path, double *best_c) {
    char *t = pz_slurp(path);
    if (!t || !*t) { /* none, or nothing in it yet: the series stays as it was */
        free(t);
        return 0;
    }
    r->n_ep = 0;
    for (char *line = t, *nl; line && *line && r->n_ep < 1024; line = nl) {
        nl = strchr(line, '\n');
        if (nl) *nl++ = 0;
        double v;
        read_point(r, line, r->n_ep++);
        if (best_c && pz_json_num(line, "test_accuracy_compressed", &v) && v > *best_c) *best_c = v;
    }
    free(t);
    return r->n_ep;
}

static void read_run(const char *dir, run_result *r) {
    memset(r, 0, sizeof *r);
    const double nan = NAN;
    r->final_acc = r->best_acc = r->final_cacc = r->best_cacc = r->fwd_bits = r->bwd_bits = r->fwd_err = r->bwd_err = nan;
    r->fwd_ratio = r->bwd_ratio = r->emulated = r->wall = r->epochs = r->fwd_bytes = r->bwd_bytes = r->fp32_bytes = nan;
    r->final_loss = r->final_closs = r->final_bpb = r->final_cbpb = r->final_train_loss = nan;
    snprintf(r->status, sizeof r->status, "missing");
    char path[4400];
    snprintf(path, sizeof path, "%s/summary.json", dir);
    char *t = pz_slurp(path);
    if (t) {
        pz_json_str(t, "status", r->status, sizeof r->status);
        pz_json_num(t, "epochs", &r->epochs);
        pz_json_num(t, "final_test_accuracy", &r->final_acc);
        pz_json_num(t, "best_test_accuracy", &r->best_acc);
        pz_json_num(t, "final_test_accuracy_compressed", &r->final_cacc);
        if (r->final_cacc < 0) r->final_cacc = nan;
        pz_json_num(t, "final_test_loss", &r->final_loss);
        pz_json_num(t, "final_train_loss", &r->final_train_loss);
        /* -1: not measured (no compressed evaluation; not a language model) */
        if (pz_json_num(t, "final_test_loss_compressed", &r->final_closs) && r->final_closs < 0) r->final_closs = nan;
        if (pz_json_num(t, "final_test_bits_per_byte", &r->final_bpb) && r->final_bpb < 0) r->final_bpb = nan;
        if (pz_json_num(t, "final_test_bits_per_byte_compressed", &r->final_cbpb) && r->final_cbpb < 0) r->final_cbpb = nan;
        pz_json_num(t, "fwd_bytes", &r->fwd_bytes);
        pz_json_num(t, "bwd_bytes", &r->bwd_bytes);
        pz_json_num(t, "fp32_bytes", &r->fp32_bytes);
        pz_json_num(t, "wall_seconds", &r->wall);
        if (!pz_json_num(t, "emulated_seconds", &r->emulated) || r->emulated == 0) r->emulated = r->wall;
        free(t);
    } else {
        snprintf(path, sizeof path, "%s/checkpoint/latest.json", dir);
        if (access(path, F_OK) == 0) snprintf(r->status, sizeof r->status, "interrupted");
    }
    snprintf(path, sizeof path, "%s/config.json", dir);
    if ((t = pz_slurp(path))) {
        pz_json_str(t, "fwd", r->fwd, sizeof r->fwd);
        pz_json_str(t, "bwd", r->bwd, sizeof r->bwd);
        double stages = 1;
        pz_json_num(t, "n_stages", &stages);
        if (!strstr(t, "\"n_stages\"")) snprintf(r->fwd, sizeof r->fwd, "-"), snprintf(r->bwd, sizeof r->bwd, "-");
        free(t);
    }
    snprintf(path, sizeof path, "%s/epochs.jsonl", dir);
    double best_c = -1;
    if (read_series(r, path, &best_c)) r->best_cacc = best_c >= 0 ? best_c : nan;
    snprintf(path, sizeof path, "%s/evals.jsonl", dir);
    read_series(r, path, NULL);
    snprintf(path, sizeof path, "%s/boundaries.jsonl", dir);
    if ((t = pz_slurp(path))) {
        double fb = 0, bb = 0, fe = 0, be = 0, ferr = 0, berr = 0;
        int rows = 0;
        for (char *line = t, *nl; line && *line; line = nl) {
            nl = strchr(line, '\n');
            if (nl) *nl++ = 0;
            double b1 = 0, b2 = 0, bits1 = 0, bits2 = 0, e1 = 0, e2 = 0, n1 = 0, n2 = 0;
            pz_json_num(line, "fwd_bytes", &b1), pz_json_num(line, "bwd_bytes", &b2);
            pz_json_num(line, "fwd_error", &e1), pz_json_num(line, "bwd_error", &e2);
            fb += b1, bb += b2;
            /* the exact element counts; records from before they were
             * written give them back through bits per element */
            if (pz_json_num(line, "fwd_elements", &n1)) fe += n1;
            else if (pz_json_num(line, "fwd_bits_per_element", &bits1) && bits1 > 0) fe += 8 * b1 / bits1;
            if (pz_json_num(line, "bwd_elements", &n2)) be += n2;
            else if (pz_json_num(line, "bwd_bits_per_element", &bits2) && bits2 > 0) be += 8 * b2 / bits2;
            ferr += e1, berr += e2, rows++;
        }
        if (rows) {
            r->fwd_bits = fe > 0 ? 8 * fb / fe : nan, r->bwd_bits = be > 0 ? 8 * bb / be : nan;
            r->fwd_ratio = fb > 0 ? 4 * fe / fb : nan, r->bwd_ratio = bb > 0 ? 4 * be / bb : nan;
            r->fwd_err = ferr / rows, r->bwd_err = berr / rows;
        }
        free(t);
    }
}

/* the first two CSV fields of a line (id, status), quotes undone */
static void first_fields(const char *line, char *id, size_t idcap, char *status, size_t scap) {
    char *outs[2] = {id, status};
    const size_t caps[2] = {idcap, scap};
    const char *p = line;
    for (int k = 0; k < 2; k++) {
        size_t n = 0;
        if (*p == '"') {
            for (p++; *p && !(*p == '"' && p[1] != '"'); p++) {
                if (*p == '"') p++;
                if (n + 1 < caps[k]) outs[k][n++] = *p;
            }
            if (*p == '"') p++;
        } else {
            for (; *p && *p != ',' && *p != '\n'; p++)
                if (n + 1 < caps[k]) outs[k][n++] = *p;
        }
        outs[k][n] = 0;
        if (*p == ',') p++;
    }
}

/* A run whose directory is gone (a published sweep keeps only its table)
 * is never dropped: its finished row in the old results.csv is kept when
 * the new one would say "missing" (same columns). */
static pz_status keep_finished_rows(const char *old_path, const char *tmp_path) {
    char *old = pz_slurp(old_path), *neu = pz_slurp(tmp_path);
    pz_status st = PZ_OK;
    if (!old || !neu) goto done;
    const char *oh_end = strchr(old, '\n'), *nh_end = strchr(neu, '\n');
    if (!oh_end || !nh_end || oh_end - old != nh_end - neu || strncmp(old, neu, (size_t)(oh_end - old))) goto done;
    FILE *f = fopen(tmp_path, "w");
    if (!f) {
        st = pz_fail(PZ_ERR_IO, "cannot write '%s': %s", tmp_path, strerror(errno));
        goto done;
    }
    fwrite(neu, 1, (size_t)(nh_end - neu) + 1, f);
    for (const char *line = nh_end + 1; *line;) {
        const char *end = strchr(line, '\n');
        const size_t len = end ? (size_t)(end - line) + 1 : strlen(line);
        char id[600], status[64];
        first_fields(line, id, sizeof id, status, sizeof status);
        const char *keep = NULL;
        size_t klen = 0;
        if (!strcmp(status, "missing"))
            for (const char *o = oh_end + 1; *o && !keep;) {
                const char *oe = strchr(o, '\n');
                const size_t ol = oe ? (size_t)(oe - o) + 1 : strlen(o);
                char oid[600], ostatus[64];
                first_fields(o, oid, sizeof oid, ostatus, sizeof ostatus);
                if (!strcmp(oid, id) && strcmp(ostatus, "missing")) keep = o, klen = ol;
                o += ol;
            }
        fwrite(keep ? keep : line, 1, keep ? klen : len, f);
        line += len;
    }
    if (fclose(f) != 0) st = pz_fail(PZ_ERR_IO, "cannot write '%s'", tmp_path);
done:
    free(old), free(neu);
    return st;
}

/* DIR/epochs.csv: every run's per-epoch record, one row per run and epoch,
 * so that a sweep directory published without its runs still holds what
 * the per-epoch and time figures are drawn from. A run whose records are
 * gone keeps its rows from the old epochs.csv. */
static const char *epoch_cols[] = {"epoch", "train_loss", "test_loss", "test_accuracy", "test_loss_compressed", "test_accuracy_compressed",
                                   "lr", "time", "emulated_time", "fwd_bytes", "bwd_bytes"};

/* DIR/evals.csv: the same from the runs' evals.jsonl (--eval-every: the
 * validation loss every N steps), with the step: the time figure's curves */
static const char *eval_cols[] = {"epoch", "step", "test_loss", "test_accuracy", "test_loss_compressed", "test_accuracy_compressed",
                                  "lr", "time", "emulated_time", "fwd_bytes", "bwd_bytes"};

static pz_status write_series(const char *dir, const plan *pl, const char *stem, const char *const *epoch_cols, size_t ncols) {
    char path[4300], tmp[4300];
    snprintf(path, sizeof path, "%s/%s.csv", dir, stem);
    snprintf(tmp, sizeof tmp, "%s/%s.csv.tmp", dir, stem);
    char *old = pz_slurp(path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        free(old);
        return pz_fail(PZ_ERR_IO, "cannot write '%s': %s", tmp, strerror(errno));
    }
    fputs("id", f);
    for (size_t c = 0; c < ncols; c++) fprintf(f, ",%s", epoch_cols[c]);
    fputc('\n', f);
    /* the old file's rows are kept only under the same header */
    const char *old_rows = NULL;
    if (old) {
        char *nl = strchr(old, '\n');
        char head[1024] = "id";
        for (size_t c = 0; c < ncols; c++) snprintf(head + strlen(head), sizeof head - strlen(head), ",%s", epoch_cols[c]);
        if (nl && (size_t)(nl - old) == strlen(head) && !strncmp(old, head, strlen(head))) old_rows = nl + 1;
    }
    int n = 0;
    for (int p = 0; p < pl->npts; p++) {
        snprintf(path, sizeof path, "%s/runs/%s/%s.jsonl", dir, pl->pts[p].id, stem);
        char *t = pz_slurp(path);
        if (!t) {
            for (const char *line = old_rows; line && *line;) {
                const char *end = strchr(line, '\n');
                const size_t len = end ? (size_t)(end - line) + 1 : strlen(line);
                char id[600], second[64];
                first_fields(line, id, sizeof id, second, sizeof second);
                if (!strcmp(id, pl->pts[p].id)) fwrite(line, 1, len, f), n++;
                line += len;
            }
            continue;
        }
        for (char *line = t, *nl; line && *line; line = nl) {
            nl = strchr(line, '\n');
            if (nl) *nl++ = 0;
            double e;
            if (!pz_json_num(line, "epoch", &e)) continue;
            pz_csv_field(f, pl->pts[p].id);
            for (size_t c = 0; c < ncols; c++) {
                double v;
                fputc(',', f);
                /* -1: a stand-in of older records for "not measured" */
                if (pz_json_num(line, epoch_cols[c], &v) && isfinite(v) && !(v < 0 && strstr(epoch_cols[c], "compressed"))) {
                    char num[48];
                    pz_fmt_num(num, sizeof num, v);
                    fputs(num, f);
                }
            }
            fputc('\n', f), n++;
        }
        free(t);
    }
    free(old);
    const int bad = ferror(f);
    if (fclose(f) != 0 || bad) return pz_fail(PZ_ERR_IO, "writing '%s' failed", tmp);
    snprintf(path, sizeof path, "%s/%s.csv", dir, stem);
    if (!n) { /* nothing known of any epoch: no file */
        remove(tmp);
        return PZ_OK;
    }
    if (rename(tmp, path) != 0) return pz_fail(PZ_ERR_IO, "cannot rename '%s': %s", tmp, strerror(errno));
    return PZ_OK;
}

static pz_status write_epochs(const char *dir, const plan *pl) {
    PZ_TRY(write_series(dir, pl, "epochs", epoch_cols, sizeof epoch_cols / sizeof *epoch_cols));
    return write_series(dir, pl, "evals", eval_cols, sizeof eval_cols / sizeof *eval_cols);
}

/* a point's value of a setting as the sweep sets it (dflt, pipezip train's default, when it does not) */
static const char *point_get(const point *pt, const char *key, const char *dflt) {
    for (int i = 0; i < pt->n; i++)
        if (!strcmp(pt->set[i].key, key)) return pt->set[i].value;
    return dflt;
}
static const char *seed_of(const point *pt) { return point_get(pt, "seed", "1"); }

/* the model as it is, its boundaries fp32: a subspace model (--subspace K)
 * with fwd = bwd = none is compressed by its subspace */
static int is_uncompressed(const point *pt, const run_result *r) {
    const char *k = point_get(pt, "subspace", "0");
    if (strcmp(k, "0") && *k) return 0;
    return (!strcmp(r->fwd, "none") && !strcmp(r->bwd, "none")) || !strcmp(r->fwd, "-");
}

/* a sweep directory's points: its sweep.ini under the variant it ran */
static pz_status plan_of_dir(plan *pl, const char *dir) {
    char path[4300], var[64] = "full";
    snprintf(path, sizeof path, "%s/variant", dir);
    char *v = pz_slurp(path);
    if (v) snprintf(var, sizeof var, "%s", v), free(v);
    snprintf(path, sizeof path, "%s/sweep.ini", dir);
    return plan_load(pl, path, var, NULL);
}

pz_status pz_sweep_epochs(const char *dir) {
    plan pl;
    pz_status st = plan_of_dir(&pl, dir);
    if (!st) st = write_epochs(dir, &pl);
    plan_free(&pl);
    return st;
}

/* Each point's target (NAN: none): an accuracy, or (*is_loss) a
 * validation loss. "uncompressed-D": a run's target is the uncompressed
 * run's final accuracy with the same seed (the best of them, when several)
 * minus D; a seed without an uncompressed run takes the best of all. A
 * number: every run's. "loss:uncompressed+P%": a language model's target is
 * the same seed's uncompressed final validation loss (the lowest, when
 * several) times 1 + P/100, reached when a run's loss first falls to it. */
static void sweep_targets(const plan *pl, const run_result *rr, double *targets, int *is_loss) {
    const char *ts = pz_ini_get(&pl->ini, "sweep", "target");
    for (int p = 0; p < pl->npts; p++) targets[p] = NAN;
    *is_loss = ts && !strncmp(ts, "loss:", 5);
    if (*is_loss) {
        const char *m = ts + 5;
        double margin = 0;
        if (!strncmp(m, "uncompressed", 12)) margin = m[12] == '+' ? atof(m + 13) / 100.0 : 0.0;
        for (int p = 0; p < pl->npts; p++) {
            if (strncmp(m, "uncompressed", 12)) {
                targets[p] = atof(m);
                continue;
            }
            double same = INFINITY;
            for (int q = 0; q < pl->npts; q++)
                if (is_uncompressed(&pl->pts[q], &rr[q]) && !strcmp(seed_of(&pl->pts[q]), seed_of(&pl->pts[p])) && rr[q].final_loss < same)
                    same = rr[q].final_loss;
            targets[p] = isfinite(same) ? same * (1.0 + margin) : NAN;
        }
    } else if (ts && !strncmp(ts, "uncompressed", 12)) {
        const double minus = ts[12] == '-' ? atof(ts + 13) : 0.0;
        double best = -1, target = NAN;
        for (int p = 0; p < pl->npts; p++)
            if (is_uncompressed(&pl->pts[p], &rr[p]) && rr[p].final_acc > best) best = rr[p].final_acc;
        if (best >= 0) target = best - minus;
        for (int p = 0; p < pl->npts; p++) {
            double same = -1;
            for (int q = 0; q < pl->npts; q++)
                if (is_uncompressed(&pl->pts[q], &rr[q]) && !strcmp(seed_of(&pl->pts[q]), seed_of(&pl->pts[p])) && rr[q].final_acc > same)
                    same = rr[q].final_acc;
            targets[p] = same >= 0 ? same - minus : target;
        }
    } else if (ts) {
        for (int p = 0; p < pl->npts; p++) targets[p] = atof(ts);
    }
}

/* The steady step (ProtocolNanoGPT's rule): the median emulated time per
 * step of the last three windows between evaluations; NAN with fewer than
 * two evaluations at distinct steps. */
static double steady_step(const run_result *r) {
    double w[3];
    int n = 0;
    for (int e = r->n_ep - 1; e > 0 && n < 3; e--) {
        int p = e - 1;
        while (p >= 0 && !(r->ep_step[p] < r->ep_step[e])) p--; /* the evaluation before, at an earlier step */
        if (p < 0 || isnan(r->ep_step[e]) || isnan(r->ep_emu[e]) || isnan(r->ep_emu[p])) break;
        w[n++] = (r->ep_emu[e] - r->ep_emu[p]) / (r->ep_step[e] - r->ep_step[p]);
        e = p + 1;
    }
    if (!n) return NAN;
    for (int i = 0; i < n; i++) /* sort the (at most three) windows */
        for (int j = i + 1; j < n; j++)
            if (w[j] < w[i]) {
                const double t = w[i];
                w[i] = w[j], w[j] = t;
            }
    return n == 2 ? (w[0] + w[1]) / 2 : w[n / 2];
}

/* one point's row of results.csv: its id, status and settings, what its run
 * reached, and when it first reached its target; for a language model its
 * steady step and T = steps to target x that step (the WAN score's T) */
static void result_row(FILE *f, const point *pt, const run_result *r, const kv *keys, int nk, double target, int via_compressed,
                       int is_loss) {
    pz_csv_field(f, pt->id);
    fputc(',', f);
    pz_csv_field(f, r->status);
    for (int k = 0; k < nk; k++) {
        const char *val = "";
        for (int i = 0; i < pt->n; i++)
            if (!strcmp(pt->set[i].key, keys[k].key)) val = pt->set[i].value;
        fputc(',', f);
        pz_csv_field(f, val);
    }
    const double total = r->fwd_bytes + r->bwd_bytes;
    const double vals[] = {r->epochs, r->final_acc, r->best_acc, r->final_cacc, r->best_cacc, r->fwd_bytes, r->bwd_bytes,
                           r->fp32_bytes, total > 0 ? r->fp32_bytes / total : NAN, r->fwd_ratio, r->bwd_ratio, r->fwd_bits,
                           r->bwd_bits, r->fwd_err, r->bwd_err, r->wall, r->emulated, is_loss ? NAN : target};
    for (size_t i = 0; i < sizeof vals / sizeof *vals; i++) fputc(',', f), csv_num(f, vals[i]);
    int hit = -1;
    for (int e = 0; e < r->n_ep && !isnan(target); e++)
        if (is_loss ? (via_compressed ? r->ep_closs[e] : r->ep_loss[e]) <= target : (via_compressed ? r->ep_cacc[e] : r->ep_acc[e]) >= target) {
            hit = e;
            break;
        }
    fputc(',', f), csv_num(f, hit >= 0 ? r->ep_epoch[hit] : NAN);
    fputc(',', f), csv_num(f, hit >= 0 ? r->ep_time[hit] : NAN);
    fputc(',', f), csv_num(f, hit >= 0 ? r->ep_emu[hit] : NAN);
    fputc(',', f), csv_num(f, hit >= 0 ? r->ep_bytes[hit] : NAN);
    const double lm[] = {r->final_loss, r->final_closs, r->final_bpb, r->final_cbpb, r->final_train_loss};
    for (size_t i = 0; i < sizeof lm / sizeof *lm; i++) fputc(',', f), csv_num(f, lm[i]);
    fputc(',', f), csv_num(f, hit >= 0 ? r->ep_step[hit] : NAN);
    fputc(',', f), csv_num(f, is_loss ? target : NAN);
    const double step = r->n_ep > 1 ? steady_step(r) : NAN;
    fputc(',', f), csv_num(f, step);
    fputc(',', f), csv_num(f, hit >= 0 && !isnan(r->ep_step[hit]) ? r->ep_step[hit] * step : NAN);
    fputc('\n', f);
}

pz_status pz_sweep_collect(const char *dir) {
    char path[4300];
    plan pl;
    pz_status st = plan_of_dir(&pl, dir);
    if (st) {
        plan_free(&pl);
        return pz_fail(st, "%s is not a sweep directory: %s", dir, pz_last_error());
    }
    run_result *rr = calloc((size_t)pl.npts ? (size_t)pl.npts : 1, sizeof *rr);
    if (!rr) {
        plan_free(&pl);
        return pz_fail(PZ_ERR_NOMEM, "out of memory collecting %s", dir);
    }
    for (int p = 0; p < pl.npts; p++) {
        char rd[4300];
        snprintf(rd, sizeof rd, "%s/runs/%s", dir, pl.pts[p].id);
        read_run(rd, &rr[p]);
    }
    /* which test accuracy the target is checked against: plain inference
     * (Paper A's convergence) or through the compressed boundaries (Paper B
     * evaluates with compression) */
    const char *ti = pz_ini_get(&pl.ini, "sweep", "target-inference"); /* plan_load checked its value */
    const int via_compressed = ti && !strcmp(ti, "compressed");
    double *targets = calloc((size_t)pl.npts + 1, sizeof *targets);
    if (!targets) {
        free(rr);
        plan_free(&pl);
        return pz_fail(PZ_ERR_NOMEM, "out of memory collecting %s", dir);
    }
    int is_loss = 0;
    sweep_targets(&pl, rr, targets, &is_loss);
    /* every key any point sets, in order */
    kv keys[MAX_KEYS];
    int nk = 0;
    for (int p = 0; p < pl.npts; p++)
        for (int i = 0; i < pl.pts[p].n; i++) kv_set(keys, &nk, pl.pts[p].set[i].key, "");
    snprintf(path, sizeof path, "%s/results.csv.tmp", dir);
    FILE *f = fopen(path, "w");
    if (!f) {
        free(rr), free(targets);
        plan_free(&pl);
        return pz_fail(PZ_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    }
    fputs("id,status", f);
    for (int k = 0; k < nk; k++) fprintf(f, ",%s", keys[k].key);
    fputs(",epochs_done,final_test_accuracy,best_test_accuracy,final_test_accuracy_compressed,best_test_accuracy_compressed,"
          "fwd_bytes,bwd_bytes,fp32_bytes,compression_ratio,fwd_ratio,bwd_ratio,fwd_bits_per_element,bwd_bits_per_element,"
          "fwd_error,bwd_error,wall_seconds,emulated_seconds,target_accuracy,epochs_to_target,time_to_target,"
          "emulated_time_to_target,bytes_to_target,final_test_loss,final_test_loss_compressed,final_test_bits_per_byte,"
          "final_test_bits_per_byte_compressed,final_train_loss,steps_to_target,target_loss,steady_step_seconds,score_seconds\n",
          f);
    for (int p = 0; p < pl.npts; p++) result_row(f, &pl.pts[p], &rr[p], keys, nk, targets[p], via_compressed, is_loss);
    const int bad = ferror(f);
    fclose(f);
    free(rr), free(targets);
    if (!bad) st = write_epochs(dir, &pl);
    if (!bad && !st) st = record_kernels(dir, &pl);
    plan_free(&pl);
    if (bad) return pz_fail(PZ_ERR_IO, "writing '%s' failed", path);
    if (st) return st;
    char final[4300];
    snprintf(final, sizeof final, "%s/results.csv", dir);
    PZ_TRY(keep_finished_rows(final, path));
    if (rename(path, final) != 0) return pz_fail(PZ_ERR_IO, "cannot rename '%s': %s", path, strerror(errno));
    return PZ_OK;
}
