/* SPDX-License-Identifier: MIT */
/* sweep_plan.c — a sweep's configuration into its points: the INI's
 * sections and keys checked, [base] and the variant's overrides, the grid
 * expanded in order, each point's id. */
#define _GNU_SOURCE
#include "tool/sweep_plan.h"
#include "run/records.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *sweep_keys[] = {"name", "description", "target", "target-inference", "rows", "cols", "jobs", "threads", "blas-core", "conv-kernels", NULL};

void sweep_kv_set(kv *list, int *n, const char *key, const char *value) {
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
        sweep_kv_set(pt->set, &pt->n, trim(k), trim(v));
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
    for (int i = 0; i < pl->nbase; i++) sweep_kv_set(pt->set, &pt->n, pl->base[i].key, pl->base[i].value);
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

pz_status sweep_plan_load(plan *pl, const char *path, const char *variant, pz_option_check_fn known) {
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
            if (!strcmp(e->section, sb)) sweep_kv_set(pl->base, &pl->nbase, e->key, e->value);
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

void sweep_plan_free(plan *pl) {
    pz_ini_free(&pl->ini);
    free(pl->pts);
}

int sweep_file_has(const char *path, const char *needle) {
    char *t = pz_slurp(path);
    if (!t) return 0;
    const int r = strstr(t, needle) != NULL;
    free(t);
    return r;
}
