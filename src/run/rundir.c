/* SPDX-License-Identifier: MIT */
/* rundir.c — where a run writes: its directory (--out DIR, a new
 * runs/DATE-MODEL-DATA[-N], or the run --resume continues), what counts as
 * a run in one, replacing one (--overwrite), and taking away a directory a
 * refused run created; and the processes a run spans (Open MPI), started
 * and ended through the placement table. */
#include "run_internal.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The files a run writes into its directory (and its checkpoint/ directory). */
static const char *const run_files[] = {"config.json", "summary.json", "steps.jsonl", "epochs.jsonl", "steps.csv", "epochs.csv",
                                        "boundaries.jsonl", "boundaries.csv", "evals.jsonl", "evals.csv", "tokenizer.txt",
                                        "checkpoint", NULL};

/* Does dir hold a run (any file a run writes)? Its first such file into what. */
static int holds_run(const char *dir, char *what, size_t cap) {
    for (const char *const *f = run_files; *f; f++) {
        snprintf(what, cap, "%s/%s", dir, *f);
        if (access(what, F_OK) == 0) return 1;
    }
    return 0;
}

/* the files of a checkpoint/epoch-E directory, then the directory */
static void remove_epoch_dir(const char *q) {
    DIR *s = opendir(q);
    struct dirent *f;
    while (s && (f = readdir(s))) {
        if (f->d_name[0] == '.') continue;
        char r[5000];
        snprintf(r, sizeof r, "%s/%s", q, f->d_name);
        unlink(r);
    }
    if (s) closedir(s);
    rmdir(q);
}

/* --overwrite: the files of the run in dir go (nothing else in it) */
static int remove_run(const char *dir) {
    char p[4200];
    for (const char *const *f = run_files; *f; f++) {
        if (!strcmp(*f, "checkpoint")) continue; /* a directory: below */
        snprintf(p, sizeof p, "%s/%s", dir, *f);
        if (unlink(p) != 0 && errno != ENOENT) return -1;
    }
    snprintf(p, sizeof p, "%s/checkpoint/latest.json", dir);
    if (unlink(p) != 0 && errno != ENOENT) return -1;
    snprintf(p, sizeof p, "%s/checkpoint", dir);
    DIR *d = opendir(p);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (strncmp(e->d_name, "epoch-", 6)) continue;
            char q[4500];
            snprintf(q, sizeof q, "%s/%s", p, e->d_name);
            remove_epoch_dir(q);
        }
        closedir(d);
        rmdir(p);
    }
    return 0;
}

pz_status pz_run_dir_check(const pz_run_plan *p, int overwrite) {
    const char *resume = p->text[PZ_SET_RESUME], *out = p->text[PZ_SET_OUT];
    if (resume && overwrite) return pz_fail(PZ_ERR_ARG, "--resume continues a run, --overwrite replaces one: give one of them");
    if (resume || !out) return PZ_OK;
    /* an existing run is never mixed with this one or overwritten */
    char what[4300];
    if (!holds_run(out, what, sizeof what)) return PZ_OK;
    if (!overwrite)
        return pz_fail(PZ_ERR_ARG, "--out %s holds a run (%s): continue it with --resume %s, or replace it with --overwrite", out, what, out);
    if (remove_run(out) != 0) return pz_fail(PZ_ERR_IO, "--overwrite: cannot remove the run in %s: %s", out, strerror(errno));
    return PZ_OK;
}

/* A new default run directory, runs/DATE-MODEL-DATA[-N], claimed with
 * mkdir so runs started in the same second never share one. */
static pz_status claim_run_dir(char *dir, size_t cap, const pz_run_plan *p, int *made_runs) {
    time_t t = time(NULL);
    struct tm tm;
    localtime_r(&t, &tm);
    char stamp[32], clean[96], model[72];
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    snprintf(clean, sizeof clean, "%s", run_plan_str(p, PZ_SET_DATA));
    for (char *c = clean; *c; c++)
        if (*c == '/' || *c == ':') *c = '_'; /* text:FILE */
    snprintf(model, sizeof model, "%s", p->model.name);
    for (char *c = model; *c; c++)
        if (*c == ':' || *c == ',' || *c == '=') *c = *c == '=' ? '_' : '-'; /* gpt:layers=8,d=256 -> gpt-layers_8-d_256 */
    if (mkdir("runs", 0777) == 0) *made_runs = 1;
    else if (errno != EEXIST) return pz_fail(PZ_ERR_IO, "cannot create a run directory under runs/: %s", strerror(errno));
    for (int n = 1; n < 10000; n++) {
        if (n == 1) snprintf(dir, cap, "runs/%s-%s-%s", stamp, model, clean);
        else snprintf(dir, cap, "runs/%s-%s-%s-%d", stamp, model, clean, n);
        if (mkdir(dir, 0777) == 0) return PZ_OK;
        if (errno != EEXIST) break;
    }
    return pz_fail(PZ_ERR_IO, "cannot create a run directory under runs/: %s", strerror(errno));
}

pz_status pz_run_dir_prepare(pz_run_plan *p, int create, pz_run_dir *d) {
    memset(d, 0, sizeof *d);
    const char *resume = p->text[PZ_SET_RESUME], *out = p->text[PZ_SET_OUT];
    if (resume) return PZ_OK; /* a resumed run continues in its own directory */
    if (!out && !create) return PZ_OK;
    struct stat sb;
    d->made_dir = !out || stat(out, &sb) != 0;
    if (out) return PZ_OK;
    char dir[512];
    PZ_TRY(claim_run_dir(dir, sizeof dir, p, &d->made_runs));
    snprintf(d->path, sizeof d->path, "%s", dir);
    return pz_run_plan_set(p, PZ_SET_OUT, dir);
}

const char *pz_run_dir_of(const pz_run_plan *p) { return p->text[PZ_SET_RESUME] ? p->text[PZ_SET_RESUME] : p->text[PZ_SET_OUT]; }

void pz_run_dir_abandon(const pz_run_plan *p, const pz_run_dir *d) {
    /* only if empty: a bad flag or a missing dataset leaves no husk */
    const char *out = p->text[PZ_SET_OUT];
    if (d->made_dir && out && rmdir(out) == 0 && d->made_runs) rmdir("runs");
}

/* ---- the processes a run spans ------------------------------------------------ */

pz_status pz_run_processes_start(const pz_run_plan *p, int *argc, char ***argv, int *rank) {
    *rank = 0;
    int size = 1;
    return p->link->start ? p->link->start(argc, argv, rank, &size) : PZ_OK;
}

void pz_run_processes_end(const pz_run_plan *p, int code) {
    if (code && p->link->abort) p->link->abort(code); /* the other processes must not wait for a dead one */
    else if (!code && p->link->finish) p->link->finish();
}

pz_status pz_run_keygen(const char *path, int force) { return pz_zmq_keygen(path, force); }
