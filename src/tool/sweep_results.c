/* SPDX-License-Identifier: MIT */
/* sweep_results.c — a sweep's results: each run's records read back,
 * results.csv (one row per run, every setting a column), epochs.csv and
 * evals.csv (the series), the targets, steps and time to them, the steady
 * step and its score. */
#define _GNU_SOURCE
#include "tool/sweep_plan.h"
#include "run/records.h"
#include "run/metrics.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    return sweep_plan_load(pl, path, var, NULL);
}

pz_status pz_sweep_epochs(const char *dir) {
    plan pl;
    pz_status st = plan_of_dir(&pl, dir);
    if (!st) st = write_epochs(dir, &pl);
    sweep_plan_free(&pl);
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
        sweep_plan_free(&pl);
        return pz_fail(st, "%s is not a sweep directory: %s", dir, pz_last_error());
    }
    run_result *rr = calloc((size_t)pl.npts ? (size_t)pl.npts : 1, sizeof *rr);
    if (!rr) {
        sweep_plan_free(&pl);
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
    const char *ti = pz_ini_get(&pl.ini, "sweep", "target-inference"); /* sweep_plan_load checked its value */
    const int via_compressed = ti && !strcmp(ti, "compressed");
    double *targets = calloc((size_t)pl.npts + 1, sizeof *targets);
    if (!targets) {
        free(rr);
        sweep_plan_free(&pl);
        return pz_fail(PZ_ERR_NOMEM, "out of memory collecting %s", dir);
    }
    int is_loss = 0;
    sweep_targets(&pl, rr, targets, &is_loss);
    /* every key any point sets, in order */
    kv keys[MAX_KEYS];
    int nk = 0;
    for (int p = 0; p < pl.npts; p++)
        for (int i = 0; i < pl.pts[p].n; i++) sweep_kv_set(keys, &nk, pl.pts[p].set[i].key, "");
    snprintf(path, sizeof path, "%s/results.csv.tmp", dir);
    FILE *f = fopen(path, "w");
    if (!f) {
        free(rr), free(targets);
        sweep_plan_free(&pl);
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
    if (!bad && !st) st = sweep_record_kernels(dir, &pl);
    sweep_plan_free(&pl);
    if (bad) return pz_fail(PZ_ERR_IO, "writing '%s' failed", path);
    if (st) return st;
    char final[4300];
    snprintf(final, sizeof final, "%s/results.csv", dir);
    PZ_TRY(keep_finished_rows(final, path));
    if (rename(path, final) != 0) return pz_fail(PZ_ERR_IO, "cannot rename '%s': %s", path, strerror(errno));
    return PZ_OK;
}
