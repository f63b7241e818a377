/* report.c — `pipezip report DIR`: Markdown tables shaped by the sweep's
 * rows and cols keys, and SVG plots written here (no plotting dependency):
 * test accuracy per epoch (plain and through compressed boundaries),
 * accuracy against bits per element, compression error against bits per
 * element per codec, accuracy against (emulated) training time. */
#define _GNU_SOURCE
#include "sweep.h"
#include "ini.h"
#include "records.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- results.csv ------------------------------------------------------------ */
enum { MAX_COLS = 96, MAX_ROWS = 1024 };

typedef struct {
    char *cell[MAX_COLS];
} row;

typedef struct {
    char *head[MAX_COLS];
    int ncol, nrow;
    row rows[MAX_ROWS];
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
    while (*p && t->nrow < MAX_ROWS) {
        row *r = &t->rows[t->nrow];
        const int k = parse_line(&p, r->cell, MAX_COLS);
        if (k != t->ncol) return pz_fail(PZ_ERR_FORMAT, "%s: row %d has %d fields, the header %d", path, t->nrow + 2, k, t->ncol);
        t->nrow++;
    }
    return PZ_OK;
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

/* A rows or cols key "a+b" naming two columns: a column of their values
 * joined, "q4 + q8", added to the table (its text freed with the table's
 * extra). */
static void add_joined_col(table *t, const char *name) {
    const char *plus = strchr(name, '+');
    if (!plus || col(t, name) >= 0 || t->ncol >= MAX_COLS || t->nextra >= 2) return;
    char a[128];
    snprintf(a, sizeof a, "%.*s", (int)(plus - name), name);
    const int ca = col(t, a), cb = col(t, plus + 1);
    if (ca < 0 || cb < 0) return;
    size_t need = strlen(name) + 1;
    for (int r = 0; r < t->nrow; r++) need += strlen(t->rows[r].cell[ca]) + strlen(t->rows[r].cell[cb]) + 4;
    char *buf = malloc(need), *p = buf;
    if (!buf) return;
    t->extra[t->nextra++] = buf;
    const int c = t->ncol++;
    t->head[c] = strcpy(p, name), p += strlen(name) + 1;
    for (int r = 0; r < t->nrow; r++) {
        t->rows[r].cell[c] = p;
        p += sprintf(p, "%s + %s", t->rows[r].cell[ca], t->rows[r].cell[cb]) + 1;
    }
}


static double num(const table *t, int r, const char *name) {
    const char *s = cell(t, r, name);
    if (!*s) return NAN;
    char *end;
    const double v = strtod(s, &end);
    return end == s ? NAN : v;
}

/* ---- SVG ------------------------------------------------------------------------ */
typedef struct {
    char label[96];
    int n;
    double x[512], y[512];
    int dashed, points_only;
    int color; /* palette index + 1; 0: by position */
} series;

static const char *palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

static void xml_text(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '<') fputs("&lt;", f);
        else if (*s == '>') fputs("&gt;", f);
        else if (*s == '&') fputs("&amp;", f);
        else if (*s == '"') fputs("&quot;", f);
        else fputc(*s, f);
    }
}

static double nice_step(double range) {
    const double raw = range / 5, mag = pow(10, floor(log10(raw))), r = raw / mag;
    return (r < 1.5 ? 1 : r < 3 ? 2 : r < 7 ? 5 : 10) * mag;
}

static pz_status plot(const char *path, const char *title, const char *xlabel, const char *ylabel, const series *s, int ns, int logx) {
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    for (int i = 0; i < ns; i++)
        for (int j = 0; j < s[i].n; j++) {
            if (!isfinite(s[i].x[j]) || !isfinite(s[i].y[j]) || (logx && s[i].x[j] <= 0)) continue;
            const double x = logx ? log10(s[i].x[j]) : s[i].x[j];
            x0 = fmin(x0, x), x1 = fmax(x1, x), y0 = fmin(y0, s[i].y[j]), y1 = fmax(y1, s[i].y[j]);
        }
    if (!isfinite(x0)) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
    if (x1 - x0 < 1e-12) x0 -= 0.5, x1 += 0.5;
    if (y1 - y0 < 1e-12) y0 -= 0.05, y1 += 0.05;
    const double padx = (x1 - x0) * 0.04, pady = (y1 - y0) * 0.06;
    x0 -= padx, x1 += padx, y0 -= pady, y1 += pady;
    /* the legend's column as wide as its longest label (about 7 px a
     * character at 12 px), the picture as tall as the legend */
    size_t longest = 0;
    int integral_x = !logx;
    for (int i = 0; i < ns; i++) {
        longest = strlen(s[i].label) > longest ? strlen(s[i].label) : longest;
        for (int j = 0; j < s[i].n; j++) integral_x &= !isfinite(s[i].x[j]) || s[i].x[j] == floor(s[i].x[j]);
    }
    const int L = 70, T = 40, B = 55, pw = 460, ph = 345, R = 50 + 7 * (int)(longest > 26 ? longest : 26);
    const int W = L + pw + R, H = T + ph + B > T + 16 * ns + 28 ? T + ph + B : T + 16 * ns + 28;
    FILE *f = fopen(path, "w");
    if (!f) return pz_fail(PZ_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n",
            W, H, W, H, W, H);
    fprintf(f, "<text x=\"%d\" y=\"22\" font-size=\"15\" text-anchor=\"middle\">", L + pw / 2);
    xml_text(f, title);
    fputs("</text>\n", f);
#define PX(v) (L + ((v) - x0) / (x1 - x0) * pw)
#define PY(v) (T + ph - ((v) - y0) / (y1 - y0) * ph)
    /* grid and ticks */
    double sx = logx ? log10(2.0) : nice_step(x1 - x0);
    if (integral_x && sx < 1) sx = 1; /* epochs: whole ticks */
    const double sy = nice_step(y1 - y0);
    /* log axes tick at powers of two (logx 1: bits per element 1, 2, 4, ...
     * 32) or at 1, 2, 5 per decade (logx 2: seconds) */
    double ticks[64];
    int nt = 0;
    if (logx == 2) {
        for (double d = floor(x0); d <= ceil(x1) && nt < 60; d += 1)
            for (int m = 0; m < 3; m++) {
                const double v = d + log10(m == 0 ? 1.0 : m == 1 ? 2.0 : 5.0);
                if (v >= x0 - 1e-9 && v <= x1 + 1e-9) ticks[nt++] = v;
            }
    } else {
        for (double v = ceil(x0 / sx) * sx; v <= x1 + 1e-9 && nt < 64; v += sx) ticks[nt++] = v;
    }
    for (int i = 0; i < nt; i++) {
        const double v = ticks[i];
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>\n", PX(v), T, PX(v), T + ph);
        const double lab = logx ? pow(10, v) : v;
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%.4g</text>\n", PX(v), T + ph + 16, fabs(lab) < 1e-12 ? 0.0 : lab);
    }
    for (double v = ceil(y0 / sy) * sy; v <= y1 + 1e-9; v += sy) {
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", L, PY(v), L + pw, PY(v));
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.4g</text>\n", L - 6, PY(v) + 4, fabs(v) < 1e-12 ? 0.0 : v);
    }
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"black\"/>\n", L, T, pw, ph);
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">", L + pw / 2, T + ph + B - 14);
    xml_text(f, xlabel);
    fprintf(f, "%s</text>\n<text transform=\"translate(18,%d) rotate(-90)\" text-anchor=\"middle\">", logx ? " (log scale)" : "", T + ph / 2);
    xml_text(f, ylabel);
    fputs("</text>\n", f);
    for (int i = 0; i < ns; i++) {
        const int ci = s[i].color ? s[i].color - 1 : i;
        const char *c = palette[ci % 10];
        /* past the palette's ten colours, other dash patterns tell runs apart */
        const char *dash = (ci / 10) % 2 ? (s[i].dashed ? " stroke-dasharray=\"2,2\"" : " stroke-dasharray=\"9,2,2,2\"")
                                         : (s[i].dashed ? " stroke-dasharray=\"5,3\"" : "");
        if (!s[i].points_only) {
            fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\"%s points=\"", c, dash);
            for (int j = 0; j < s[i].n; j++) {
                if (!isfinite(s[i].x[j]) || !isfinite(s[i].y[j]) || (logx && s[i].x[j] <= 0)) continue;
                fprintf(f, "%.1f,%.1f ", PX(logx ? log10(s[i].x[j]) : s[i].x[j]), PY(s[i].y[j]));
            }
            fputs("\"/>\n", f);
        }
        for (int j = 0; j < s[i].n; j++) {
            if (!isfinite(s[i].x[j]) || !isfinite(s[i].y[j]) || (logx && s[i].x[j] <= 0)) continue;
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%s\" fill=\"%s\"/>\n", PX(logx ? log10(s[i].x[j]) : s[i].x[j]), PY(s[i].y[j]),
                    s[i].points_only ? "4" : "2.2", c);
        }
        const int ly = T + 8 + 16 * i;
        if (s[i].points_only) fprintf(f, "<circle cx=\"%d\" cy=\"%d\" r=\"4\" fill=\"%s\"/>\n", L + pw + 22, ly, c);
        else
            fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"%s/>\n", L + pw + 12, ly, L + pw + 32, ly, c,
                    dash);
        fprintf(f, "<text x=\"%d\" y=\"%d\">", L + pw + 38, ly + 4);
        xml_text(f, s[i].label);
        fputs("</text>\n", f);
    }
#undef PX
#undef PY
    fputs("</svg>\n", f);
    const int bad = ferror(f);
    fclose(f);
    return bad ? pz_fail(PZ_ERR_IO, "writing '%s' failed", path) : PZ_OK;
}

/* ---- the report ------------------------------------------------------------------- */


/* a run's label: its grid settings that vary */
static void label_of(const table *t, int r, const pz_ini *ini, char *out, size_t cap) {
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
            if (strstr(out, k) == out || (strstr(out, k) && strstr(out, k)[-1] == ' ')) continue; /* already there */
            const size_t l = strlen(out);
            snprintf(out + l, cap - l, "%s%s=%s", l ? " " : "", k, cell(t, r, k));
        }
    }
    if (!out[0]) snprintf(out, cap, "%s", cell(t, r, "id"));
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

pz_status pz_sweep_report(const char *dir) {
    char path[4300];
    snprintf(path, sizeof path, "%s/results.csv", dir);
    if (access(path, F_OK) != 0) return pz_fail(PZ_ERR_IO, "%s is not a sweep directory: it has no results.csv (run pipezip sweep first)", dir);
    table *t = calloc(1, sizeof *t);
    series *s = calloc(64, sizeof *s); /* the plots' curves */
    if (!t || !s) {
        free(t), free(s);
        return pz_fail(PZ_ERR_NOMEM, "out of memory reading %s", path);
    }
    pz_status st = load_table(t, path);
    pz_ini ini = {0};
    snprintf(path, sizeof path, "%s/sweep.ini", dir);
    if (!st) st = pz_ini_load(&ini, path);
    if (!st) {
        snprintf(path, sizeof path, "%s/plots", dir);
        st = pz_mkdir_p(path);
    }
    FILE *f = NULL;
    if (!st) {
        snprintf(path, sizeof path, "%s/report.md.tmp", dir);
        f = fopen(path, "w");
        if (!f) st = pz_fail(PZ_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    }
    if (st) {
        free(t->text), free(t), free(s);
        pz_ini_free(&ini);
        return st;
    }
    char variant[32] = "full";
    snprintf(path, sizeof path, "%s/variant", dir);
    char *vtext = pz_slurp(path);
    if (vtext) snprintf(variant, sizeof variant, "%s", vtext), free(vtext);
    const char *name = pz_ini_get(&ini, "sweep", "name"), *desc = pz_ini_get(&ini, "sweep", "description");
    const char *rk = pz_ini_get(&ini, "sweep", "rows"), *ck = pz_ini_get(&ini, "sweep", "cols");
    fprintf(f, "# %s (%s variant)\n\n", name ? name : dir, variant);
    if (desc) fprintf(f, "%s\n\n", desc);
    int finished = 0;
    for (int r = 0; r < t->nrow; r++) finished += !strcmp(cell(t, r, "status"), "finished");
    fprintf(f, "%d runs, %d finished. Every number below is in `results.csv`; plots in `plots/`.\n", t->nrow, finished);
    /* a language model's runs report validation loss and bits per byte */
    int lm = 0;
    for (int r = 0; r < t->nrow; r++) lm |= !isnan(num(t, r, "final_test_bits_per_byte"));
    if (rk) add_joined_col(t, rk);
    if (ck) add_joined_col(t, ck);
    if (rk && col(t, rk) >= 0) {
        const char *c2 = ck && col(t, ck) >= 0 ? ck : NULL;
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
    /* every run */
    if (lm)
        fputs("\n**All runs**\n\n| run | status | val loss | val loss compressed | bits/byte | bits/byte compressed | train loss | "
              "traffic ratio | fwd bits/el | bwd bits/el | fwd error | bwd error | wall s | emulated s | epochs to target | "
              "emulated s to target | bytes to target |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
              f);
    else
        fputs("\n**All runs**\n\n| run | status | acc % | acc % compressed | best % | traffic ratio | fwd bits/el | bwd bits/el | fwd error | bwd error | "
              "wall s | emulated s | epochs to target | emulated s to target | bytes to target |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
              f);
    for (int r = 0; r < t->nrow; r++) {
        char label[512];
        label_of(t, r, &ini, label, sizeof label);
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
                              "emulated_seconds", "epochs_to_target", "emulated_time_to_target", "bytes_to_target"};
        for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) {
            const double v = num(t, r, cols[i]);
            if (isnan(v)) fputs(" | —", f);
            else fprintf(f, " | %.4g", v);
        }
        fputs(" |\n", f);
    }
    const double target = t->nrow ? num(t, 0, "target_accuracy") : NAN;
    const char *ti = pz_ini_get(&ini, "sweep", "target-inference");
    if (!isnan(target))
        fprintf(f, "\nTarget %saccuracy for the time and traffic columns: %.2f%%, %s.\n", lm ? "next-token " : "", 100 * target,
                ti && !strcmp(ti, "compressed") ? "inference through the compressed boundaries" : "plain inference");

    /* plots: test accuracy, or a language model's validation loss */
    const char *ep_key = lm ? "test_loss" : "test_accuracy", *ep_ckey = lm ? "test_loss_compressed" : "test_accuracy_compressed";
    const char *fin_key = lm ? "final_test_loss" : "final_test_accuracy";
    const char *fin_ckey = lm ? "final_test_loss_compressed" : "final_test_accuracy_compressed";
    const char *ylab = lm ? "validation loss, nats per token" : "test accuracy, %";
    const double scale = lm ? 1.0 : 100.0;
    int ns = 0;
    for (int r = 0; r < t->nrow && ns + 2 <= 64; r++) { /* accuracy per epoch */
        snprintf(path, sizeof path, "%s/runs/%s/epochs.jsonl", dir, cell(t, r, "id"));
        char *text = pz_slurp(path);
        if (!text) continue;
        series *a = &s[ns], *b = &s[ns + 1];
        memset(a, 0, sizeof *a), memset(b, 0, sizeof *b);
        char lab[96];
        label_of(t, r, &ini, lab, sizeof lab);
        snprintf(a->label, sizeof a->label, "%s", lab);
        snprintf(b->label, sizeof b->label, "%.80s (compr.)", lab);
        b->dashed = 1;
        a->color = b->color = ns / 2 + 1; /* a run's two curves share a colour */
        for (char *line = text, *nl; line && *line; line = nl) {
            nl = strchr(line, '\n');
            if (nl) *nl++ = 0;
            double e, v;
            if (!pz_json_num(line, "epoch", &e) || a->n >= 512) continue;
            if (pz_json_num(line, ep_key, &v)) a->x[a->n] = e, a->y[a->n++] = scale * v;
            if (pz_json_num(line, ep_ckey, &v) && v >= 0) b->x[b->n] = e, b->y[b->n++] = scale * v;
        }
        free(text);
        ns += b->n ? 2 : 1;
    }
    snprintf(path, sizeof path, "%s/plots/accuracy_per_epoch.svg", dir);
    /* a published sweep keeps results.csv and its plots, not its runs: a
     * plot drawn from the runs' records is kept as it is when none are here */
    const int have_runs = ns > 0;
    if (!have_runs && t->nrow)
        fprintf(stderr, "report: no run's records under %s/runs: the per-epoch and time plots are kept as they are\n", dir);
    if (!st && have_runs)
        st = plot(path, lm ? "Validation loss per epoch (dashed: through compressed boundaries)" : "Test accuracy per epoch (dashed: through compressed boundaries)",
                  "epoch", ylab, s, ns, 0);
    /* accuracy and error against bits per element */
    memset(s, 0, 3 * sizeof *s);
    snprintf(s[0].label, sizeof s[0].label, "plain inference");
    snprintf(s[1].label, sizeof s[1].label, "compressed inference");
    s[0].points_only = s[1].points_only = 1;
    for (int r = 0; r < t->nrow && s[0].n < 512; r++) {
        const double fb = num(t, r, "fwd_bits_per_element"), bb = num(t, r, "bwd_bits_per_element");
        const double bits = (fb + bb) / 2;
        s[0].x[s[0].n] = bits, s[0].y[s[0].n++] = scale * num(t, r, fin_key);
        s[1].x[s[1].n] = bits, s[1].y[s[1].n++] = scale * num(t, r, fin_ckey);
    }
    snprintf(path, sizeof path, "%s/plots/accuracy_vs_bits.svg", dir);
    if (!st)
        st = plot(path, lm ? "Final validation loss against bits per element (mean of both directions)" : "Final accuracy against bits per element (mean of both directions)",
                  "bits per element", ylab, s, 2, 1);
    /* error vs bits: one series per codec family and direction */
    ns = 0;
    memset(s, 0, 24 * sizeof *s);
    for (int dir2 = 0; dir2 < 2; dir2++)
        for (int r = 0; r < t->nrow; r++) {
            const char *spec = cell(t, r, dir2 ? "bwd" : "fwd");
            char fam[48];
            size_t k = 0;
            while (spec[k] && spec[k] != ':' && spec[k] != ',' && spec[k] != '(' && k + 1 < sizeof fam) fam[k] = spec[k], k++;
            fam[k] = 0;
            if (fam[0] == 'q' && fam[1] >= '0' && fam[1] <= '9') snprintf(fam, sizeof fam, "quant");
            if (!fam[0]) snprintf(fam, sizeof fam, "(default)");
            char lab[96];
            snprintf(lab, sizeof lab, "%s %s", dir2 ? "gradients" : "activations", fam);
            int i = 0;
            while (i < ns && strcmp(s[i].label, lab)) i++;
            if (i == ns) {
                if (ns == 24) continue;
                snprintf(s[ns].label, sizeof s[ns].label, "%s", lab);
                s[ns].points_only = 1;
                ns++;
            }
            if (s[i].n < 512) {
                s[i].x[s[i].n] = num(t, r, dir2 ? "bwd_bits_per_element" : "fwd_bits_per_element");
                s[i].y[s[i].n++] = num(t, r, dir2 ? "bwd_error" : "fwd_error");
            }
        }
    snprintf(path, sizeof path, "%s/plots/error_vs_bits.svg", dir);
    if (!st) st = plot(path, "Relative compression error against bits per element", "bits per element", "||x_hat - x|| / ||x||", s, ns, 1);
    /* accuracy against emulated time */
    ns = 0;
    for (int r = 0; r < t->nrow && ns < 64; r++) {
        snprintf(path, sizeof path, "%s/runs/%s/epochs.jsonl", dir, cell(t, r, "id"));
        char *text = pz_slurp(path);
        if (!text) continue;
        series *a = &s[ns++];
        memset(a, 0, sizeof *a);
        label_of(t, r, &ini, a->label, sizeof a->label);
        for (char *line = text, *nl; line && *line; line = nl) {
            nl = strchr(line, '\n');
            if (nl) *nl++ = 0;
            double tm = 0, v;
            if (a->n >= 512 || !pz_json_num(line, ep_key, &v)) continue;
            if (!pz_json_num(line, "emulated_time", &tm)) pz_json_num(line, "time", &tm);
            a->x[a->n] = tm, a->y[a->n++] = scale * v;
        }
        free(text);
    }
    snprintf(path, sizeof path, "%s/plots/accuracy_vs_time.svg", dir);
    /* times spanning orders of magnitude (links of 10 Mbit/s to 1 Gbit/s): a log axis */
    double tmin = INFINITY, tmax = 0;
    for (int i = 0; i < ns; i++)
        for (int j = 0; j < s[i].n; j++)
            if (s[i].x[j] > 0) tmin = fmin(tmin, s[i].x[j]), tmax = fmax(tmax, s[i].x[j]);
    if (!st && have_runs)
        st = plot(path, lm ? "Validation loss against training time on the (emulated) link" : "Test accuracy against training time on the (emulated) link",
                  "seconds (virtual clock)", ylab, s, ns,
                  tmax > 20 * tmin ? 2 : 0);
    free(s);
    fputs(lm ? "\n![validation loss per epoch](plots/accuracy_per_epoch.svg)\n![validation loss vs bits](plots/accuracy_vs_bits.svg)\n"
             "![error vs bits](plots/error_vs_bits.svg)\n![validation loss vs time](plots/accuracy_vs_time.svg)\n"
             : "\n![accuracy per epoch](plots/accuracy_per_epoch.svg)\n![accuracy vs bits](plots/accuracy_vs_bits.svg)\n"
          "![error vs bits](plots/error_vs_bits.svg)\n![accuracy vs time](plots/accuracy_vs_time.svg)\n",
          f);
    const int bad = ferror(f);
    fclose(f);
    if (!st && bad) st = pz_fail(PZ_ERR_IO, "writing the report failed");
    if (!st) {
        char from[4300], to[4300];
        snprintf(from, sizeof from, "%s/report.md.tmp", dir);
        snprintf(to, sizeof to, "%s/report.md", dir);
        if (rename(from, to) != 0) st = pz_fail(PZ_ERR_IO, "cannot write '%s': %s", to, strerror(errno));
    }
    free(t->text), free(t->extra[0]), free(t->extra[1]), free(t);
    pz_ini_free(&ini);
    return st;
}
