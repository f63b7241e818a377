/* SPDX-License-Identifier: MIT */
/* report.c — `pipezip report DIR`: Markdown tables shaped by the sweep's
 * rows and cols keys, and SVG plots written here (no plotting dependency):
 * test accuracy per epoch (plain and through compressed boundaries),
 * accuracy against bits per element, compression error against bits per
 * element per codec, accuracy against (emulated) training time. */
#define _GNU_SOURCE
#include "tool/sweep.h"
#include "tool/ini.h"
#include "run/records.h"
#include "tool/svg.h"
#include "nn/nn.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- results.csv ------------------------------------------------------------ */
enum { MAX_COLS = 96 };

typedef struct {
    char *cell[MAX_COLS];
} row;

typedef struct {
    char *head[MAX_COLS];
    int ncol, nrow;
    row *rows;
    int cap;
    char *text;
    char *extra[2]; /* joined columns' text */
    int nextra;
} table;

/* RFC 4180 fields, in place */
static int parse_line(char **p, char **out, int max) {
    int n = 0;
    char *s = *p;
    for (;;) {
        char *w = s, *start = s;
        if (*s == '"') {
            s++, start = w = s;
            for (;;) {
                if (!*s) break;
                if (*s == '"' && s[1] == '"') *w++ = '"', s += 2;
                else if (*s == '"') {
                    s++;
                    break;
                } else *w++ = *s++;
            }
        } else {
            while (*s && *s != ',' && *s != '\n') s++;
            w = s;
        }
        const char c = *s;
        *w = 0;
        if (n < max) out[n++] = start;
        if (c == ',') {
            s++;
            continue;
        }
        if (c == '\n') s++;
        break;
    }
    *p = s;
    return n;
}

static pz_status load_table(table *t, const char *path) {
    memset(t, 0, sizeof *t);
    PZ_TRY(pz_read_text(path, &t->text, NULL));
    char *p = t->text;
    t->ncol = parse_line(&p, t->head, MAX_COLS);
    while (*p) {
        if (t->nrow == t->cap) {
            const int cap = t->cap ? 2 * t->cap : 64;
            row *rows = realloc(t->rows, (size_t)cap * sizeof *rows);
            if (!rows) return pz_fail(PZ_ERR_NOMEM, "%s: out of memory at row %d", path, t->nrow + 2);
            t->rows = rows, t->cap = cap;
        }
        row *r = &t->rows[t->nrow];
        const int k = parse_line(&p, r->cell, MAX_COLS);
        if (k != t->ncol) return pz_fail(PZ_ERR_FORMAT, "%s: row %d has %d fields, the header %d", path, t->nrow + 2, k, t->ncol);
        t->nrow++;
    }
    return PZ_OK;
}

static void free_table(table *t) {
    free(t->text), free(t->rows), free(t->extra[0]), free(t->extra[1]);
    memset(t, 0, sizeof *t);
}

static int col(const table *t, const char *name) {
    for (int i = 0; i < t->ncol; i++)
        if (!strcmp(t->head[i], name)) return i;
    return -1;
}

static const char *cell(const table *t, int r, const char *name) {
    const int c = col(t, name);
    return c < 0 ? "" : t->rows[r].cell[c];
}

/* A rows or cols key "a+b" (or "a+b+c") naming columns: a column of their
 * values joined, "q4 + q8", added to the table (its text freed with the
 * table's extra). */
static void add_joined_col(table *t, const char *name) {
    if (!strchr(name, '+') || col(t, name) >= 0 || t->ncol >= MAX_COLS || t->nextra >= 2) return;
    int cs[8], nk = 0;
    for (const char *a = name; *a && nk < 8;) {
        const char *plus = strchr(a, '+');
        const size_t len = plus ? (size_t)(plus - a) : strlen(a);
        char key[128];
        snprintf(key, sizeof key, "%.*s", (int)len, a);
        if ((cs[nk++] = col(t, key)) < 0) return;
        a += len + (plus ? 1 : 0);
    }
    size_t need = strlen(name) + 1;
    for (int r = 0; r < t->nrow; r++)
        for (int k = 0; k < nk; k++) need += strlen(t->rows[r].cell[cs[k]]) + 3;
    char *buf = malloc(need + 1), *p = buf;
    if (!buf) return;
    t->extra[t->nextra++] = buf;
    const int c = t->ncol++;
    t->head[c] = strcpy(p, name), p += strlen(name) + 1;
    for (int r = 0; r < t->nrow; r++) {
        t->rows[r].cell[c] = p;
        for (int k = 0; k < nk; k++) p += sprintf(p, "%s%s", k ? " + " : "", t->rows[r].cell[cs[k]]);
        p++;
    }
}


static double num(const table *t, int r, const char *name) {
    const char *s = cell(t, r, name);
    if (!*s) return NAN;
    char *end;
    const double v = strtod(s, &end);
    return end == s ? NAN : v;
}

/* ---- the report ------------------------------------------------------------------- */


/* is k one of the names of a "+"-joined list ("fwd+bwd")? */
static int key_in(const char *list, const char *k) {
    if (!list) return 0;
    const size_t n = strlen(k);
    for (const char *p = list; (p = strstr(p, k)); p++)
        if ((p == list || p[-1] == '+' || p[-1] == ' ') && (p[n] == 0 || p[n] == '+' || p[n] == ' ')) return 1;
    return 0;
}

/* a run's label: its grid settings that vary, but those named in skip */
static void label_of(const table *t, int r, const pz_ini *ini, const char *skip, char *out, size_t cap) {
    out[0] = 0;
    for (int i = 0; i < ini->n; i++) {
        const pz_ini_entry *e = &ini->e[i];
        if ((strcmp(e->section, "grid") && !strstr(e->section, ".grid")) || !strchr(e->value, '|')) continue;
        char keys[64];
        snprintf(keys, sizeof keys, "%s", e->key);
        char *save = NULL;
        for (char *k = strtok_r(keys, "+", &save); k; k = strtok_r(NULL, "+", &save)) {
            while (*k == ' ') k++;
            char *end = k + strlen(k);
            while (end > k && end[-1] == ' ') *--end = 0;
            if (key_in(skip, k)) continue;
            if (strstr(out, k) == out || (strstr(out, k) && strstr(out, k)[-1] == ' ')) continue; /* already there */
            const size_t l = strlen(out);
            snprintf(out + l, cap - l, "%s%s=%s", l ? " " : "", k, cell(t, r, k));
        }
    }
    if (!out[0] && !skip) snprintf(out, cap, "%s", cell(t, r, "id"));
}

static void pct(FILE *f, double v) {
    if (isnan(v)) fputs("—", f);
    else fprintf(f, "%.2f", 100 * v);
}

/* distinct values of a column, in order of appearance */
static int distinct(const table *t, const char *name, const char **out, int max) {
    int n = 0;
    for (int r = 0; r < t->nrow; r++) {
        const char *v = cell(t, r, name);
        int seen = 0;
        for (int i = 0; i < n; i++) seen |= !strcmp(out[i], v);
        if (!seen && n < max) out[n++] = v;
    }
    return n;
}

/* the mean of `metric` over the runs with rows = a and cols = b, with min and max */
static int cell_stats(const table *t, const char *rk, const char *a, const char *ck, const char *b, const char *metric, double *mean,
                      double *lo, double *hi) {
    int n = 0;
    double s = 0;
    *lo = INFINITY, *hi = -INFINITY;
    for (int r = 0; r < t->nrow; r++) {
        if (strcmp(cell(t, r, rk), a) || (ck && strcmp(cell(t, r, ck), b))) continue;
        const double v = num(t, r, metric);
        if (isnan(v)) continue;
        s += v, n++, *lo = fmin(*lo, v), *hi = fmax(*hi, v);
    }
    *mean = n ? s / n : NAN;
    return n;
}

static void grid_table(FILE *f, const table *t, const char *rk, const char *ck, const char *metric, const char *title, int percent) {
    const char *rv[64], *cv[64];
    const int nr = distinct(t, rk, rv, 64), nc = ck ? distinct(t, ck, cv, 64) : 1;
    fprintf(f, "\n**%s** (rows: `%s`%s%s%s)\n\n| %s |", title, rk, ck ? ", columns: `" : "", ck ? ck : "", ck ? "`" : "", rk);
    for (int j = 0; j < nc; j++) fprintf(f, " %s |", ck ? cv[j] : metric);
    fputs("\n|---|", f);
    for (int j = 0; j < nc; j++) fputs("---|", f);
    fputc('\n', f);
    for (int i = 0; i < nr; i++) {
        fprintf(f, "| %s |", rv[i]);
        for (int j = 0; j < nc; j++) {
            double m, lo, hi;
            const int n = cell_stats(t, rk, rv[i], ck, ck ? cv[j] : NULL, metric, &m, &lo, &hi);
            fputc(' ', f);
            if (percent == 1) pct(f, m);
            else if (isnan(m)) fputs("—", f);
            else if (percent == 2) fprintf(f, "%.3f", m);
            else fprintf(f, "%.3g", m);
            if (n > 1) {
                fputs(" (", f);
                if (percent == 1) pct(f, lo), fputs("–", f), pct(f, hi);
                else if (percent == 2) fprintf(f, "%.3f–%.3f", lo, hi);
                else fprintf(f, "%.3g–%.3g", lo, hi);
                fprintf(f, ", n=%d)", n);
            }
            fputs(" |", f);
        }
        fputc('\n', f);
    }
}

/* ---- figures ------------------------------------------------------------------------ */
typedef struct {
    int n;
    char file[8][40], alt[8][80];
} figure_names;

static void name_figure(figure_names *nm, const char *file, const char *alt) {
    if (nm->n == 8) return;
    snprintf(nm->file[nm->n], sizeof nm->file[0], "%s", file);
    snprintf(nm->alt[nm->n++], sizeof nm->alt[0], "%s", alt);
}

/* index of s among the first n strings of list, appended when new */
static int intern(char (*list)[160], int *n, const char *s) {
    for (int i = 0; i < *n; i++)
        if (!strcmp(list[i], s)) return i;
    snprintf(list[*n], 160, "%s", s);
    return (*n)++;
}

static void sort_series(pz_series *s) {
    for (int i = 1; i < s->n; i++)
        for (int j = i; j > 0 && s->x[j - 1] > s->x[j]; j--) {
            const double x = s->x[j], y = s->y[j];
            s->x[j] = s->x[j - 1], s->y[j] = s->y[j - 1], s->x[j - 1] = x, s->y[j - 1] = y;
            if (s->tag) {
                char t[48];
                memcpy(t, s->tag[j], sizeof t), memcpy(s->tag[j], s->tag[j - 1], sizeof t), memcpy(s->tag[j - 1], t, sizeof t);
            }
        }
}

/* does the table hold rows of run id? */
static int has_rows(const table *t, const char *id) {
    for (int r = 0; t && r < t->nrow; r++)
        if (!strcmp(cell(t, r, "id"), id)) return 1;
    return 0;
}

/* a run's epochs (epochs.csv rows of its id, in order) as one curve; the
 * time figure takes its evaluations every N steps (evals.csv) where it has them */
static void epoch_curve(pz_figure *fig, pz_series *s, const table *ep, const table *ev, const char *id, const char *xkey, const char *ykey,
                        double scale) {
    if (!strcmp(xkey, "emulated_time") && has_rows(ev, id)) ep = ev;
    for (int r = 0; r < ep->nrow; r++) {
        if (strcmp(cell(ep, r, "id"), id)) continue;
        double x = num(ep, r, xkey);
        if (isnan(x) && !strcmp(xkey, "emulated_time")) x = num(ep, r, "time");
        const double y = num(ep, r, ykey);
        if (!isnan(x) && !isnan(y)) pz_series_add(fig, s, x, scale * y);
    }
}

/* Which panel and which series a run belongs to in the per-epoch and time
 * figures: with a cols key, a panel per column value and a curve per row
 * value (runs that differ only by seed share a curve's style); with rows
 * alone, one panel when there are 8 runs or fewer, else a panel per row
 * value; without either, panels of 8 runs. */
static void group_runs(const table *t, const pz_ini *ini, const char *rk, const char *ck, char (*pn)[160], char (*sn)[160]) {
    for (int r = 0; r < t->nrow; r++) {
        if (ck) {
            snprintf(pn[r], 160, "%s = %s", ck, cell(t, r, ck));
            if (rk) snprintf(sn[r], 160, "%s = %.120s", rk, cell(t, r, rk));
            else label_of(t, r, ini, ck, sn[r], 160);
        } else if (rk && t->nrow > 8) {
            snprintf(pn[r], 160, "%s = %.140s", rk, cell(t, r, rk));
            label_of(t, r, ini, rk, sn[r], 160);
        } else if (rk) {
            pn[r][0] = 0;
            label_of(t, r, ini, NULL, sn[r], 160);
        } else {
            snprintf(pn[r], 160, "runs %d-%d", r / 8 * 8 + 1, r / 8 * 8 + 8 < t->nrow ? r / 8 * 8 + 8 : t->nrow);
            label_of(t, r, ini, NULL, sn[r], 160);
        }
    }
}

/* The uncompressed run a run is compared with: fwd and bwd both "none" and
 * no subspace (--subspace 0: the model unconstrained), every other setting
 * the same (the seed too); -1 when the sweep has none. The settings are
 * results.csv's columns between status and epochs_done. */
static int reference_run(const table *t, int r) {
    const int fc = col(t, "fwd"), bc = col(t, "bwd"), kc = col(t, "subspace"), first = col(t, "status") + 1, last = col(t, "epochs_done");
    if (fc < 0 || bc < 0 || first <= 0 || last < first) return -1;
    for (int q = 0; q < t->nrow; q++) {
        if (strcmp(t->rows[q].cell[fc], "none") || strcmp(t->rows[q].cell[bc], "none")) continue;
        if (kc >= 0 && strcmp(t->rows[q].cell[kc], "0") && *t->rows[q].cell[kc]) continue;
        int same = 1;
        for (int c = first; c < last && same; c++)
            if (c != fc && c != bc && c != kc) same = !strcmp(t->rows[q].cell[c], t->rows[r].cell[c]);
        if (same) return q;
    }
    return -1;
}

/* The strongest uncompressed model of a run's seed (issue 52's baseline
 * rule): the better (lower validation loss) of the ordinary model
 * (--subspace 0) and the same architecture at full width (--subspace K
 * with K at least the model's width: every branch's lifts, nothing
 * compressed), fwd and bwd "none", every other setting the same; -1 when
 * the sweep has neither. */
static int model_width(const char *model) {
    pz_model_spec spec;
    return model && *model && !pz_model_spec_parse(&spec, model) ? spec.dim : 0;
}

static int strongest_run(const table *t, int r) {
    const int fc = col(t, "fwd"), bc = col(t, "bwd"), kc = col(t, "subspace"), first = col(t, "status") + 1, last = col(t, "epochs_done");
    if (fc < 0 || bc < 0 || first <= 0 || last < first) return -1;
    int best = -1;
    for (int q = 0; q < t->nrow; q++) {
        if (strcmp(t->rows[q].cell[fc], "none") || strcmp(t->rows[q].cell[bc], "none")) continue;
        const int k = kc >= 0 ? atoi(t->rows[q].cell[kc]) : 0, width = model_width(cell(t, q, "model"));
        if (k != 0 && !(width > 0 && k >= width)) continue; /* a narrow subspace is a compressed architecture */
        int same = 1;
        for (int c = first; c < last && same; c++)
            if (c != fc && c != bc && c != kc) same = !strcmp(t->rows[q].cell[c], t->rows[r].cell[c]);
        if (same && !isnan(num(t, q, "final_test_loss")) && (best < 0 || num(t, q, "final_test_loss") < num(t, best, "final_test_loss"))) best = q;
    }
    return best;
}

/* Every row of the sweep against its seed's strongest uncompressed model,
 * with its traffic against the ordinary model's uncompressed bytes */
static void report_strongest(FILE *f, const table *t, const char *rk) {
    if (!rk || col(t, rk) < 0 || col(t, "subspace") < 0) return;
    int any = 0; /* a sweep without an uncompressed run of the model has nothing to compare with here */
    for (int r = 0; r < t->nrow && !any; r++) any = strongest_run(t, r) >= 0;
    if (!any) return;
    const char *rv[64];
    const int nr = distinct(t, rk, rv, 64);
    fprintf(f, "\n**Against the strongest uncompressed model** (rows: `%s`): each run's validation loss through the compressed "
               "boundaries against its seed's better uncompressed model, the ordinary one (`--subspace 0`) or the same "
               "architecture at full width (`--subspace K`, K at least the width: every branch's lifts, nothing compressed); traffic "
               "both ways with headers against the ordinary model's uncompressed bytes of the same seed\n\n"
               "| %s | baseline | vs the baseline, mean (min–max) | traffic less than the ordinary model |\n|---|---|---|---|\n",
            rk, rk);
    for (int i = 0; i < nr; i++) {
        double gs = 0, glo = INFINITY, ghi = -INFINITY, rs = 0;
        int n = 0, nrat = 0, ordinary = 0, wide = 0, wide_k = 0;
        for (int r = 0; r < t->nrow; r++) {
            if (strcmp(cell(t, r, rk), rv[i])) continue;
            const int b = strongest_run(t, r), o = reference_run(t, r);
            const double loss = num(t, r, "final_test_loss_compressed");
            if (b >= 0 && !isnan(loss)) {
                const double g = loss / num(t, b, "final_test_loss") - 1;
                gs += g, glo = fmin(glo, g), ghi = fmax(ghi, g), n++;
                const int k = atoi(cell(t, b, "subspace"));
                if (k) wide++, wide_k = k;
                else ordinary++;
            }
            const double mine = num(t, r, "fwd_bytes") + num(t, r, "bwd_bytes");
            if (o >= 0 && mine > 0) rs += (num(t, o, "fwd_bytes") + num(t, o, "bwd_bytes")) / mine, nrat++;
        }
        fprintf(f, "| %s | ", rv[i]);
        if (wide && ordinary) fprintf(f, "K = %d at full width (%d), ordinary (%d)", wide_k, wide, ordinary);
        else if (wide) fprintf(f, "K = %d at full width", wide_k);
        else if (ordinary) fputs("ordinary", f);
        else fputs("—", f);
        if (n) fprintf(f, " | %+.1f%% (%+.1f%% to %+.1f%%, n=%d)", 100 * gs / n, 100 * glo, 100 * ghi, n);
        else fputs(" | —", f);
        if (nrat) fprintf(f, " | %.1fx |\n", rs / nrat);
        else fputs(" | — |\n", f);
    }
}

static pz_status epoch_figure(const char *path, const table *t, const table *ep, const table *ev, char (*pn)[160], char (*sn)[160], int lm, int vs_time,
                              const char *by, int *drawn) {
    pz_figure fig = {0};
    const char *yk = lm ? "test_loss" : "test_accuracy", *yck = lm ? "test_loss_compressed" : "test_accuracy_compressed";
    const double scale = lm ? 1 : 100;
    char (*panels)[160] = calloc((size_t)t->nrow + 1, 160), (*styles)[160] = calloc((size_t)t->nrow + 1, 160);
    if (!panels || !styles) {
        free(panels), free(styles);
        return pz_fail(PZ_ERR_NOMEM, "out of memory drawing '%s'", path);
    }
    int np = 0, nstyle = 0;
    int one_style = 1;
    for (int r = 0; r < t->nrow; r++) intern(panels, &np, pn[r]), one_style &= !strcmp(sn[r], sn[0]);
    /* a curve per panel: each panel shows the uncompressed run as well, so
     * a panel is read against it rather than against the panel beside it */
    const int with_ref = np > 1 && one_style;
    const char *x = vs_time ? "emulated_time" : "epoch";
    for (int i = 0; i < np; i++) {
        pz_panel *p = pz_fig_panel(&fig, panels[i]);
        int drawn_ref[4] = {-1, -1, -1, -1}, nref = 0;
        for (int r = 0; with_ref && r < t->nrow; r++) {
            if (strcmp(pn[r], panels[i])) continue;
            const int q = reference_run(t, r);
            int seen = q < 0;
            for (int k = 0; k < nref && !seen; k++) seen = drawn_ref[k] == q;
            if (seen || nref == 4) continue;
            drawn_ref[nref++] = q;
            epoch_curve(&fig, pz_panel_series(&fig, p, "uncompressed run (fwd = bwd = none), plain inference", PZ_STYLE_REF, 0, 0), ep, ev,
                        cell(t, q, "id"), x, yk, scale);
        }
        for (int r = 0; r < t->nrow; r++) {
            if (strcmp(pn[r], panels[i])) continue;
            const int style = intern(styles, &nstyle, sn[r]);
            epoch_curve(&fig, pz_panel_series(&fig, p, sn[r], style, 0, 0), ep, ev, cell(t, r, "id"), x, yk, scale);
            epoch_curve(&fig, pz_panel_series(&fig, p, sn[r], style, 1, 0), ep, ev, cell(t, r, "id"), x, yck, scale);
        }
    }
    fig.clip_high = lm; /* a diverged run's loss would flatten every other curve */
    snprintf(fig.ylabel, sizeof fig.ylabel, "%s", lm ? "validation loss, nats per token" : "test accuracy, %");
    if (vs_time) {
        double lo = INFINITY, hi = 0;
        for (int i = 0; i < fig.np; i++)
            for (int j = 0; j < fig.p[i].ns; j++)
                for (int k = 0; k < fig.p[i].s[j].n; k++)
                    if (fig.p[i].s[j].x[k] > 0) lo = fmin(lo, fig.p[i].s[j].x[k]), hi = fmax(hi, fig.p[i].s[j].x[k]);
        fig.xaxis = hi > 20 * lo ? PZ_AXIS_LOG10 : PZ_AXIS_LINEAR;
        snprintf(fig.title, sizeof fig.title, "%s against training time%s%s", lm ? "Validation loss" : "Test accuracy", by ? ", one panel per " : "",
                 by ? by : "");
        snprintf(fig.xlabel, sizeof fig.xlabel, "seconds (virtual clock: compute + emulated transfers)");
    } else {
        snprintf(fig.title, sizeof fig.title, "%s per epoch%s%s", lm ? "Validation loss" : "Test accuracy", by ? ", one panel per " : "", by ? by : "");
        snprintf(fig.xlabel, sizeof fig.xlabel, "epoch");
    }
    snprintf(fig.note, sizeof fig.note, "solid, filled: plain inference; dashed, hollow: through the compressed boundaries");
    *drawn = pz_fig_points(&fig) > 0;
    pz_status st = *drawn ? pz_fig_write(&fig, path) : PZ_OK;
    pz_fig_free(&fig);
    free(panels), free(styles);
    return st;
}

/* the forward or backward codec's name as the figures give it */
static const char *spec_or_default(const char *s) {
    return *s ? s : "(default)";
}

/* final accuracy through the compressed boundaries against each
 * direction's bits per element: a panel per direction, a curve per codec
 * of the other direction; runs of the same codecs (seeds) averaged */
static pz_status bits_figure(const char *path, const table *t, int lm, int *drawn) {
    pz_figure fig = {0};
    fig.xaxis = PZ_AXIS_LOG2;
    const char *yk = lm ? "final_test_loss_compressed" : "final_test_accuracy_compressed", *yp = lm ? "final_test_loss" : "final_test_accuracy";
    const double scale = lm ? 1 : 100;
    char (*names)[160] = calloc((size_t)t->nrow + 1, 160);
    if (!names) return pz_fail(PZ_ERR_NOMEM, "out of memory drawing '%s'", path);
    char note[240] = "";
    for (int d = 0; d < 2; d++) {
        const char *bk = d ? "bwd_bits_per_element" : "fwd_bits_per_element";
        double xlo = INFINITY, xhi = -INFINITY;
        for (int r = 0; r < t->nrow; r++) {
            const double x = num(t, r, bk);
            if (!isnan(x)) xlo = fmin(xlo, x), xhi = fmax(xhi, x);
        }
        if (!(xhi > xlo * 1.0001)) { /* one width in every run: no axis to draw */
            if (isfinite(xlo)) {
                const size_t l = strlen(note);
                snprintf(note + l, sizeof note - l, "%s%s: %.2f bits per element in every run", l ? "; " : "", d ? "gradients" : "activations", xlo);
            }
            continue;
        }
        pz_panel *p = pz_fig_panel(&fig, d ? "gradients (backward), by activation codec" : "activations (forward), by gradient codec");
        int nn = 0;
        const int first = p ? p->ns : 0;
        for (int r = 0; r < t->nrow; r++) {
            const char *fw = cell(t, r, "fwd"), *bw = cell(t, r, "bwd");
            int seen = 0;
            for (int q = 0; q < r && !seen; q++) seen = !strcmp(cell(t, q, "fwd"), fw) && !strcmp(cell(t, q, "bwd"), bw);
            if (seen) continue;
            double sx = 0, sy = 0;
            int n = 0;
            for (int q = r; q < t->nrow; q++) {
                if (strcmp(cell(t, q, "fwd"), fw) || strcmp(cell(t, q, "bwd"), bw)) continue;
                double y = num(t, q, yk);
                if (isnan(y)) y = num(t, q, yp);
                const double x = num(t, q, bk);
                if (isnan(x) || isnan(y)) continue;
                sx += x, sy += y, n++;
            }
            if (!n) continue;
            char lab[160];
            snprintf(lab, sizeof lab, "%s %.140s", d ? "activations" : "gradients", spec_or_default(d ? fw : bw));
            const int k = intern(names, &nn, lab);
            pz_series *s = NULL;
            for (int j = first; p && j < p->ns; j++)
                if (!strcmp(p->s[j].label, lab)) s = &p->s[j];
            if (!s) s = pz_panel_series(&fig, p, lab, k, 0, 0);
            pz_series_add(&fig, s, sx / n, scale * sy / n);
        }
        /* a curve per codec of the other direction, unless every curve is
         * one point (the directions set together, fwd+bwd): then one curve
         * through all of them, each point named */
        int longest = 0;
        for (int j = first; p && j < p->ns; j++) longest = p->s[j].n > longest ? p->s[j].n : longest;
        if (p && longest == 1 && p->ns - first > 1) {
            /* rebuild: the panel's series replaced by one tagged series */
            pz_series *keep = malloc((size_t)(p->ns - first) * sizeof *keep);
            if (!keep) return pz_fail(PZ_ERR_NOMEM, "out of memory drawing '%s'", path);
            const int nk = p->ns - first;
            memcpy(keep, p->s + first, (size_t)nk * sizeof *keep);
            p->ns = first;
            snprintf(p->title, sizeof p->title, "%s", d ? "gradients (backward), each point its codecs" : "activations (forward), each point its codecs");
            pz_series *one = pz_panel_series(&fig, p, "", 0, 0, 0);
            for (int j = 0; j < nk; j++) {
                /* the point named by the other direction's codec (the label less "gradients ") */
                char tag[48];
                const char *oc = strchr(keep[j].label, ' ') ? strchr(keep[j].label, ' ') + 1 : keep[j].label;
                snprintf(tag, sizeof tag, "%.46s", oc);
                pz_series_add_tagged(&fig, one, keep[j].x[0], keep[j].y[0], tag);
                free(keep[j].x), free(keep[j].y), free(keep[j].tag);
            }
            free(keep);
        }
        for (int j = 0; p && j < p->ns; j++) sort_series(&p->s[j]);
    }
    snprintf(fig.title, sizeof fig.title, "%s against bits per element", lm ? "Final validation loss" : "Final test accuracy");
    snprintf(fig.note, sizeof fig.note, "inference through the compressed boundaries; each direction on its own axis; runs of the same codecs averaged%s%s",
             note[0] ? "; " : "", note);
    snprintf(fig.xlabel, sizeof fig.xlabel, "bits per element, this direction");
    snprintf(fig.ylabel, sizeof fig.ylabel, "%s", lm ? "validation loss, nats per token" : "test accuracy, %");
    *drawn = pz_fig_points(&fig) > 0;
    pz_status st = *drawn ? pz_fig_write(&fig, path) : PZ_OK;
    pz_fig_free(&fig);
    free(names);
    return st;
}

/* compression error against bits per element: a panel per direction, a
 * marker style per codec family */
static pz_status error_figure(const char *path, const table *t, int *drawn) {
    pz_figure fig = {0};
    fig.xaxis = PZ_AXIS_LOG2, fig.yaxis = PZ_AXIS_LOG10;
    char fams[64][160];
    int nf = 0;
    for (int d = 0; d < 2; d++) {
        const char *bk = d ? "bwd_bits_per_element" : "fwd_bits_per_element", *ek = d ? "bwd_error" : "fwd_error";
        int any = 0;
        for (int r = 0; r < t->nrow; r++) any |= num(t, r, ek) > 0;
        if (!any) continue; /* exact in every run */
        pz_panel *p = pz_fig_panel(&fig, d ? "gradients (backward)" : "activations (forward)");
        for (int r = 0; r < t->nrow; r++) {
            const double e = num(t, r, ek), b = num(t, r, bk);
            if (!(e > 0) || isnan(b)) continue;
            const char *spec = cell(t, r, d ? "bwd" : "fwd");
            char fam[160];
            size_t k = 0;
            while (spec[k] && spec[k] != ':' && spec[k] != ',' && spec[k] != '(' && k + 1 < 48) fam[k] = spec[k], k++;
            fam[k] = 0;
            if (fam[0] == 'q' && fam[1] >= '0' && fam[1] <= '9') snprintf(fam, sizeof fam, "q (quantization)");
            else if (spec[k] == '(') snprintf(fam + k, sizeof fam - k, "(...)");
            if (!fam[0]) snprintf(fam, sizeof fam, "(default)");
            int style = nf < 64 ? intern(fams, &nf, fam) : 63;
            pz_series *s = NULL;
            for (int j = 0; p && j < p->ns; j++)
                if (!strcmp(p->s[j].label, fam)) s = &p->s[j];
            if (!s) s = pz_panel_series(&fig, p, fam, style, 0, 1);
            pz_series_add(&fig, s, b, e);
        }
    }
    snprintf(fig.title, sizeof fig.title, "Relative compression error against bits per element");
    snprintf(fig.note, sizeof fig.note, "||x_hat - x|| / ||x||, mean over the sampled frames of a run; one marker per run");
    snprintf(fig.xlabel, sizeof fig.xlabel, "bits per element");
    snprintf(fig.ylabel, sizeof fig.ylabel, "relative error");
    *drawn = pz_fig_points(&fig) > 0;
    pz_status st = *drawn ? pz_fig_write(&fig, path) : PZ_OK;
    pz_fig_free(&fig);
    return st;
}

/* the final metric over rows x cols, plain and compressed side by side */
static pz_status heatmap_figure(const char *path, const table *t, const char *rk, const char *ck, int lm) {
    const char *rv[256], *cv[256];
    const int nr = distinct(t, rk, rv, 256), nc = ck ? distinct(t, ck, cv, 256) : 1;
    static const char *none[] = {""};
    const size_t cells = (size_t)nr * nc;
    double *buf = calloc(6 * cells + 1, sizeof *buf);
    int *cnt = calloc(2 * cells + 1, sizeof *cnt);
    if (!buf || !cnt) {
        free(buf), free(cnt);
        return pz_fail(PZ_ERR_NOMEM, "out of memory drawing '%s'", path);
    }
    pz_heatmap h = {0};
    const char *metric[2] = {lm ? "final_test_loss" : "final_test_accuracy", lm ? "final_test_loss_compressed" : "final_test_accuracy_compressed"};
    int have_c = 0;
    for (int k = 0; k < 2; k++) {
        double *m = buf + (size_t)k * 3 * cells, *lo = m + cells, *hi = lo + cells;
        for (int i = 0; i < nr; i++)
            for (int j = 0; j < nc; j++) {
                const size_t c = (size_t)i * nc + j;
                cnt[k * cells + c] = cell_stats(t, rk, rv[i], ck, ck ? cv[j] : NULL, metric[k], &m[c], &lo[c], &hi[c]);
                have_c |= k == 1 && cnt[k * cells + c] > 0;
            }
        h.mean[k] = m, h.lo[k] = lo, h.hi[k] = hi, h.count[k] = cnt + k * cells;
    }
    h.rows = rv, h.cols = ck ? cv : none, h.nr = nr, h.nc = nc;
    h.npanel = have_c ? 2 : 1;
    h.panel_title[0] = "plain inference";
    h.panel_title[1] = "through the compressed boundaries";
    snprintf(h.row_key, sizeof h.row_key, "%s", rk);
    snprintf(h.col_key, sizeof h.col_key, "%s", ck ? ck : "");
    snprintf(h.title, sizeof h.title, "%s", lm ? "Final validation loss, nats per token" : "Final test accuracy, %");
    int multi = 0;
    for (size_t c = 0; c < 2 * cells; c++) multi |= cnt[c] > 1;
    snprintf(h.note, sizeof h.note, "colour: distance from the best cell, on a log scale%s",
             multi ? "; a cell with several runs (seeds): their mean, range and count" : "");
    h.scale = lm ? 1 : 100, h.decimals = lm ? 3 : 2, h.lower_better = lm;
    h.log_unit = lm ? 0.01 : 0.5; /* 0.01 nats, half a point */
    snprintf(h.unit, sizeof h.unit, "%s", lm ? "loss" : "accuracy, %");
    const pz_status st = pz_heatmap_write(&h, path);
    free(buf), free(cnt);
    return st;
}

static pz_status draw_figures(const char *dir, const table *t, const table *ep, const table *ev, const pz_ini *ini, const char *rk, const char *ck, int lm,
                              figure_names *nm) {
    char path[4300];
    pz_status st = PZ_OK;
    int drawn = 0;
    if (rk) {
        snprintf(path, sizeof path, "%s/plots/heatmap.svg", dir);
        PZ_TRY(heatmap_figure(path, t, rk, ck, lm));
        name_figure(nm, "heatmap", lm ? "final validation loss over the grid" : "final accuracy over the grid");
    }
    char (*pn)[160] = calloc((size_t)t->nrow + 1, 160), (*sn)[160] = calloc((size_t)t->nrow + 1, 160);
    if (!pn || !sn) {
        free(pn), free(sn);
        return pz_fail(PZ_ERR_NOMEM, "out of memory drawing %s's figures", dir);
    }
    group_runs(t, ini, rk, ck, pn, sn);
    const char *by = ck ? ck : rk && t->nrow > 8 ? rk : NULL;
    /* a published sweep keeps results.csv, epochs.csv and its plots, not
     * its runs; one from before epochs.csv keeps the plots it has */
    for (int k = 0; k < 2 && !st; k++) {
        const char *file = k ? "accuracy_vs_time" : "accuracy_per_epoch";
        snprintf(path, sizeof path, "%s/plots/%s.svg", dir, file);
        st = epoch_figure(path, t, ep, ev, pn, sn, lm, k, by, &drawn);
        if (!st && !drawn && access(path, F_OK) == 0)
            fprintf(stderr, "report: %s has no per-epoch records (epochs.csv or runs/): plots/%s.svg is kept as it was\n", dir, file), drawn = 1;
        if (!st && drawn)
            name_figure(nm, file, k ? (lm ? "validation loss against time" : "accuracy against time") : (lm ? "validation loss per epoch" : "accuracy per epoch"));
    }
    free(pn), free(sn);
    if (!st) {
        snprintf(path, sizeof path, "%s/plots/accuracy_vs_bits.svg", dir);
        st = bits_figure(path, t, lm, &drawn);
        if (!st && drawn) name_figure(nm, "accuracy_vs_bits", lm ? "validation loss against bits per element" : "accuracy against bits per element");
    }
    if (!st) {
        snprintf(path, sizeof path, "%s/plots/error_vs_bits.svg", dir);
        st = error_figure(path, t, &drawn);
        if (!st && drawn) name_figure(nm, "error_vs_bits", "compression error against bits per element");
    }
    return st;
}

/* how the runs were made: the build and kernels of kernels.json, and
 * whether the runs still here agree with it (a sweep resumed elsewhere) */
static void kernels_note(FILE *f, const char *dir, const table *t) {
    char path[4300], core[128] = "", conv[64] = "", cpu[256] = "", commit[128] = "";
    snprintf(path, sizeof path, "%s/kernels.json", dir);
    char *k = pz_slurp(path);
    if (!k) return;
    pz_json_str(k, "blas_core", core, sizeof core);
    pz_json_str(k, "conv_kernels", conv, sizeof conv);
    pz_json_str(k, "cpu", cpu, sizeof cpu);
    pz_json_str(k, "git_commit", commit, sizeof commit);
    free(k);
    int same = 0, other = 0;
    for (int r = 0; r < t->nrow; r++) {
        snprintf(path, sizeof path, "%s/runs/%s/config.json", dir, cell(t, r, "id"));
        char *c = pz_slurp(path);
        if (!c) continue;
        char a[128] = "", b[64] = "";
        pz_json_str(c, "blas_core", a, sizeof a);
        pz_json_str(c, "conv_kernels", b, sizeof b);
        free(c);
        /* avx2 and avx512 convolutions give the same bits */
        const int conv_same = !strcmp(b, conv) || (strcmp(b, "im2col") && strcmp(conv, "im2col"));
        if (!strcmp(a, core) && conv_same) same++;
        else other++;
    }
    fprintf(f, "\nMade by pipezip %s on %s with OpenBLAS core `%s` and `%s` convolution kernels (`kernels.json`). "
               "`pipezip sweep` applies them to every run it adds to this directory (`OPENBLAS_CORETYPE` and `PZ_CONV_KERNELS` "
               "given by the user win); with the same build, the same seeds give the same numbers.",
            commit[0] ? commit : "(unknown commit)", cpu[0] ? cpu : "an unrecorded CPU", core, conv);
    if (other) fprintf(f, " **%d of the %d runs here used other kernels** (see their config.json): their numbers are not comparable digit for digit.", other, same + other);
    fputc('\n', f);
}

/* the report's head: name, variant, description, how many runs finished, the kernels */
static void report_head(FILE *f, const char *dir, const table *t, const pz_ini *ini) {
    char variant[32] = "full", path[4300];
    snprintf(path, sizeof path, "%s/variant", dir);
    char *vtext = pz_slurp(path);
    if (vtext) snprintf(variant, sizeof variant, "%s", vtext), free(vtext);
    const char *name = pz_ini_get(ini, "sweep", "name"), *desc = pz_ini_get(ini, "sweep", "description");
    fprintf(f, "# %s (%s variant)\n\n", name ? name : dir, variant);
    if (desc) fprintf(f, "%s\n\n", desc);
    int finished = 0;
    for (int r = 0; r < t->nrow; r++) finished += !strcmp(cell(t, r, "status"), "finished");
    fprintf(f, "%d runs, %d finished. Every number below is in `results.csv`; plots in `plots/`.\n", t->nrow, finished);
    kernels_note(f, dir, t);
}

/* the grid tables over the config's rows x cols (rk, c2 may be NULL) */
static void report_grids(FILE *f, table *t, const char *rk, const char *c2, int lm) {
    if (lm) {
        grid_table(f, t, rk, c2, "final_test_loss", "Final validation loss, nats per token, plain inference", 2);
        grid_table(f, t, rk, c2, "final_test_loss_compressed", "Final validation loss, nats per token, inference through the compressed boundaries", 2);
        grid_table(f, t, rk, c2, "final_test_bits_per_byte_compressed", "Final validation bits per byte, inference through the compressed boundaries", 2);
        grid_table(f, t, rk, c2, "final_train_loss", "Final training loss (mean over the last epoch), nats per token", 2);
    } else {
        grid_table(f, t, rk, c2, "final_test_accuracy", "Final test accuracy, %, plain inference", 1);
        grid_table(f, t, rk, c2, "final_test_accuracy_compressed", "Final test accuracy, %, inference through the compressed boundaries", 1);
    }
    grid_table(f, t, rk, c2, "compression_ratio", "Training traffic, times less than fp32", 0);
}

/* every run, a row each; then the target the time and traffic columns used */
static void report_runs(FILE *f, const table *t, const pz_ini *ini, int lm) {
    /* a step-based run (a loss target) reaches its target at a step, an epoch-based one at an epoch */
    int by_step = 0;
    for (int r = 0; r < t->nrow && !by_step; r++) by_step = !isnan(num(t, r, "target_loss")) && !isnan(num(t, r, "steps_to_target"));
    /* a sweep of subspace models: each run's traffic against the uncompressed
     * (unconstrained, fp32) run of its seed too, as the fp32 of a subspace
     * run's own boundary is K numbers per token, not the stream's width */
    const int vs_ref = col(t, "subspace") >= 0;
    if (lm)
        fprintf(f, "\n**All runs**\n\n| run | status | val loss | val loss compressed | bits/byte | bits/byte compressed | train loss | "
                   "traffic ratio | %sfwd bits/el | bwd bits/el | fwd error | bwd error | wall s | emulated s | %s to target | "
                   "emulated s to target | bytes to target |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|%s\n",
                vs_ref ? "less than uncompressed | " : "", by_step ? "steps" : "epochs", vs_ref ? "---|" : "");
    else
        fputs("\n**All runs**\n\n| run | status | acc % | acc % compressed | best % | traffic ratio | fwd bits/el | bwd bits/el | fwd error | bwd error | "
              "wall s | emulated s | epochs to target | emulated s to target | bytes to target |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
              f);
    for (int r = 0; r < t->nrow; r++) {
        char label[512];
        label_of(t, r, ini, NULL, label, sizeof label);
        fprintf(f, "| %s | %s | ", label, cell(t, r, "status"));
        if (lm) {
            const char *m[] = {"final_test_loss", "final_test_loss_compressed", "final_test_bits_per_byte",
                               "final_test_bits_per_byte_compressed", "final_train_loss"};
            for (int i = 0; i < 5; i++) {
                const double v = num(t, r, m[i]);
                if (isnan(v)) fputs("—", f);
                else fprintf(f, "%.4f", v);
                if (i < 4) fputs(" | ", f);
            }
        } else {
            pct(f, num(t, r, "final_test_accuracy")), fputs(" | ", f);
            pct(f, num(t, r, "final_test_accuracy_compressed")), fputs(" | ", f);
            pct(f, num(t, r, "best_test_accuracy"));
        }
        const char *cols[] = {"compression_ratio", "fwd_bits_per_element", "bwd_bits_per_element", "fwd_error", "bwd_error", "wall_seconds",
                              "emulated_seconds", by_step ? "steps_to_target" : "epochs_to_target", "emulated_time_to_target", "bytes_to_target"};
        for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) {
            const double v = num(t, r, cols[i]);
            if (isnan(v)) fputs(" | —", f);
            else fprintf(f, " | %.4g", v);
            if (i == 0 && vs_ref) {
                const int q = reference_run(t, r);
                const double mine = num(t, r, "fwd_bytes") + num(t, r, "bwd_bytes");
                const double ratio = q >= 0 && mine > 0 ? (num(t, q, "fwd_bytes") + num(t, q, "bwd_bytes")) / mine : NAN;
                if (isnan(ratio)) fputs(" | —", f);
                else fprintf(f, " | %.4g", ratio);
            }
        }
        fputs(" |\n", f);
    }
    double llo = INFINITY, lhi = -INFINITY; /* a validation-loss target (target = loss:...) */
    for (int r = 0; r < t->nrow; r++) {
        const double v = num(t, r, "target_loss");
        if (!isnan(v)) llo = fmin(llo, v), lhi = fmax(lhi, v);
    }
    if (isfinite(llo)) {
        const char *ti = pz_ini_get(ini, "sweep", "target-inference");
        fprintf(f, "\nTarget validation loss for the time and traffic columns (%s): %.4f-%.4f nats per token, each run's from the "
                   "uncompressed run of its seed (the sweep's target: %s); a run reaches it at the first evaluation at or below it.\n",
                ti && !strcmp(ti, "compressed") ? "through the compressed boundaries" : "plain inference", llo, lhi,
                pz_ini_get(ini, "sweep", "target"));
        return;
    }
    double tlo = INFINITY, thi = -INFINITY;
    for (int r = 0; r < t->nrow; r++) {
        const double v = num(t, r, "target_accuracy");
        if (!isnan(v)) tlo = fmin(tlo, v), thi = fmax(thi, v);
    }
    const char *ti = pz_ini_get(ini, "sweep", "target-inference");
    const char *how = ti && !strcmp(ti, "compressed") ? "inference through the compressed boundaries" : "plain inference";
    if (isfinite(tlo) && thi - tlo < 1e-9)
        fprintf(f, "\nTarget %saccuracy for the time and traffic columns: %.2f%%, %s.\n", lm ? "next-token " : "", 100 * tlo, how);
    else if (isfinite(tlo))
        fprintf(f, "\nTarget %saccuracy for the time and traffic columns: each run's from the uncompressed run of its seed (%.2f-%.2f%%), %s.\n",
                lm ? "next-token " : "", 100 * tlo, 100 * thi, how);
}

/* results.csv and sweep.ini into t and ini, plots/ made, report.md.tmp opened */
static pz_status report_open(const char *dir, table *t, pz_ini *ini, FILE **out) {
    char path[4300];
    snprintf(path, sizeof path, "%s/results.csv", dir);
    if (access(path, F_OK) != 0) return pz_fail(PZ_ERR_IO, "%s is not a sweep directory: it has no results.csv (run pipezip sweep first)", dir);
    PZ_TRY(load_table(t, path));
    snprintf(path, sizeof path, "%s/sweep.ini", dir);
    PZ_TRY(pz_ini_load(ini, path));
    snprintf(path, sizeof path, "%s/plots", dir);
    PZ_TRY(pz_mkdir_p(path));
    snprintf(path, sizeof path, "%s/report.md.tmp", dir);
    *out = fopen(path, "w");
    if (!*out) return pz_fail(PZ_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    return PZ_OK;
}

pz_status pz_sweep_report(const char *dir) {
    char path[4300];
    table *t = calloc(1, sizeof *t), *ep = calloc(1, sizeof *ep), *ev = calloc(1, sizeof *ev);
    if (!t || !ep || !ev) {
        free(t), free(ep), free(ev);
        return pz_fail(PZ_ERR_NOMEM, "out of memory reading %s/results.csv", dir);
    }
    pz_ini ini = {0};
    FILE *f = NULL;
    pz_status st = report_open(dir, t, &ini, &f);
    if (st) {
        free_table(t), free(t), free(ep), free(ev);
        pz_ini_free(&ini);
        return st;
    }
    report_head(f, dir, t, &ini);
    /* a language model's runs report validation loss and bits per byte */
    int lm = 0;
    for (int r = 0; r < t->nrow; r++) lm |= !isnan(num(t, r, "final_test_bits_per_byte"));
    const char *rk = pz_ini_get(&ini, "sweep", "rows"), *ck = pz_ini_get(&ini, "sweep", "cols");
    if (rk) add_joined_col(t, rk);
    if (ck) add_joined_col(t, ck);
    if (rk && col(t, rk) >= 0) report_grids(f, t, rk, ck && col(t, ck) >= 0 ? ck : NULL, lm);
    if (lm) report_strongest(f, t, rk);
    report_runs(f, t, &ini, lm);

    /* the figures, from results.csv and epochs.csv (written from the runs'
     * records where they are here, kept where they are not) */
    st = pz_sweep_epochs(dir);
    snprintf(path, sizeof path, "%s/epochs.csv", dir);
    if (!st && access(path, F_OK) == 0) st = load_table(ep, path);
    snprintf(path, sizeof path, "%s/evals.csv", dir);
    if (!st && access(path, F_OK) == 0) st = load_table(ev, path);
    figure_names names = {0};
    if (!st) st = draw_figures(dir, t, ep, ev, &ini, rk && col(t, rk) >= 0 ? rk : NULL, ck && col(t, ck) >= 0 ? ck : NULL, lm, &names);
    fputc('\n', f);
    for (int i = 0; i < names.n; i++) fprintf(f, "![%s](plots/%s.svg)\n", names.alt[i], names.file[i]);
    const int bad = ferror(f);
    fclose(f);
    if (!st && bad) st = pz_fail(PZ_ERR_IO, "writing the report failed");
    if (!st) {
        char from[4300], to[4300];
        snprintf(from, sizeof from, "%s/report.md.tmp", dir);
        snprintf(to, sizeof to, "%s/report.md", dir);
        if (rename(from, to) != 0) st = pz_fail(PZ_ERR_IO, "cannot write '%s': %s", to, strerror(errno));
    }
    free_table(t), free(t), free_table(ep), free(ep);
    free_table(ev), free(ev);
    pz_ini_free(&ini);
    return st;
}
