/* SPDX-License-Identifier: MIT */
/* svg.c — small multiples and heatmaps as SVG (see svg.h). Sizes are in
 * px at 11 px text: a two-panel figure is about 700 px wide, which scales
 * to a paper's column with its text still legible. */
#define _GNU_SOURCE
#include "tool/svg.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- building -------------------------------------------------------------------- */
pz_panel *pz_fig_panel(pz_figure *f, const char *title) {
    if (f->np == f->cap) {
        const int cap = f->cap ? 2 * f->cap : 8;
        pz_panel *p = realloc(f->p, (size_t)cap * sizeof *p);
        if (!p) {
            f->failed = 1;
            return NULL;
        }
        f->p = p, f->cap = cap;
    }
    pz_panel *p = &f->p[f->np++];
    memset(p, 0, sizeof *p);
    snprintf(p->title, sizeof p->title, "%s", title ? title : "");
    return p;
}

pz_series *pz_panel_series(pz_figure *f, pz_panel *p, const char *label, int style, int dashed, int points) {
    if (!p) return NULL;
    if (p->ns == p->cap) {
        const int cap = p->cap ? 2 * p->cap : 8;
        pz_series *s = realloc(p->s, (size_t)cap * sizeof *s);
        if (!s) {
            f->failed = 1;
            return NULL;
        }
        p->s = s, p->cap = cap;
    }
    pz_series *s = &p->s[p->ns++];
    memset(s, 0, sizeof *s);
    snprintf(s->label, sizeof s->label, "%s", label);
    s->style = style, s->dashed = dashed, s->points = points;
    return s;
}

void pz_series_add(pz_figure *f, pz_series *s, double x, double y) {
    if (!s) return;
    if (s->n == s->cap) {
        const int cap = s->cap ? 2 * s->cap : 16;
        double *nx = realloc(s->x, (size_t)cap * sizeof *nx);
        if (!nx) {
            f->failed = 1;
            return;
        }
        s->x = nx;
        double *ny = realloc(s->y, (size_t)cap * sizeof *ny);
        if (!ny) {
            f->failed = 1;
            return;
        }
        s->y = ny, s->cap = cap;
        if (s->tag) {
            char(*nt)[48] = realloc(s->tag, (size_t)cap * sizeof *nt);
            if (!nt) {
                f->failed = 1;
                return;
            }
            s->tag = nt;
        }
    }
    if (s->tag) s->tag[s->n][0] = 0;
    s->x[s->n] = x, s->y[s->n++] = y;
}

void pz_series_add_tagged(pz_figure *f, pz_series *s, double x, double y, const char *tag) {
    if (!s) return;
    if (!s->tag) {
        s->tag = calloc((size_t)(s->cap > 0 ? s->cap : 1), sizeof *s->tag);
        if (!s->tag) {
            f->failed = 1;
            return;
        }
    }
    const int n = s->n;
    pz_series_add(f, s, x, y);
    if (s->n > n) snprintf(s->tag[n], sizeof s->tag[n], "%s", tag);
}

void pz_fig_free(pz_figure *f) {
    for (int i = 0; i < f->np; i++) {
        for (int j = 0; j < f->p[i].ns; j++) free(f->p[i].s[j].x), free(f->p[i].s[j].y), free(f->p[i].s[j].tag);
        free(f->p[i].s);
    }
    free(f->p);
    f->p = NULL, f->np = f->cap = 0;
}

static int drawable(const pz_figure *f, double x, double y) {
    return isfinite(x) && isfinite(y) && (f->xaxis == PZ_AXIS_LINEAR || x > 0) && (f->yaxis == PZ_AXIS_LINEAR || y > 0);
}

int pz_fig_points(const pz_figure *f) {
    int n = 0;
    for (int i = 0; i < f->np; i++)
        for (int j = 0; j < f->p[i].ns; j++)
            for (int k = 0; k < f->p[i].s[j].n; k++) n += drawable(f, f->p[i].s[j].x[k], f->p[i].s[j].y[k]);
    return n;
}

/* ---- drawing ----------------------------------------------------------------------- */
/* Ten colours that stay apart in print and for the common colour-vision
 * deficiencies (Tableau 10), times four marker shapes: 40 distinct styles */
static const char *palette[] = {"#4e79a7", "#e15759", "#59a14f", "#f28e2b", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#ff9da7", "#555555"};

static const char *colour(int style) {
    if (style == PZ_STYLE_REF) return "#a8a8a8";
    return palette[(style % 10 + 10) % 10];
}

static void text(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '<') fputs("&lt;", f);
        else if (*s == '>') fputs("&gt;", f);
        else if (*s == '&') fputs("&amp;", f);
        else if (*s == '"') fputs("&quot;", f);
        else fputc(*s, f);
    }
}

/* text width at 11 px sans-serif, for layout (an estimate on the wide side) */
static int text_w(const char *s, double px) {
    return (int)(strlen(s) * px * 0.58 + 0.5);
}

/* a marker's fill: the style's colour, or white inside an outline of it */
static void paint_of(char *paint, size_t n, int style, int hollow) {
    if (hollow) snprintf(paint, n, "fill=\"white\" stroke=\"%s\" stroke-width=\"1.3\"", colour(style));
    else snprintf(paint, n, "fill=\"%s\"", colour(style));
}

static void marker(FILE *f, int style, double x, double y, double r, int hollow) {
    const int shape = style < 0 ? 0 : (style / 10) % 4;
    char paint[96];
    paint_of(paint, sizeof paint, style, hollow);
    if (shape == 0) fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" %s/>\n", x, y, r, paint);
    else if (shape == 1) fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" %s/>\n", x - r, y - r, 2 * r, 2 * r, paint);
    else if (shape == 2)
        fprintf(f, "<polygon points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\" %s/>\n", x, y - 1.25 * r, x - 1.15 * r, y + 0.85 * r, x + 1.15 * r,
                y + 0.85 * r, paint);
    else fprintf(f, "<polygon points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f\" %s/>\n", x, y - 1.3 * r, x + r, y, x, y + 1.3 * r, x - r, y, paint);
}

static const char *dash_of(const pz_series *s) {
    /* past 40 styles the line's width and pattern tell series apart too */
    if (s->style >= 40) return s->dashed ? " stroke-dasharray=\"1.5,2.5\"" : " stroke-dasharray=\"8,2,2,2\"";
    return s->dashed ? " stroke-dasharray=\"5,3\"" : "";
}

static double nice_step(double range, int target) {
    const double raw = range / target, mag = pow(10, floor(log10(raw))), r = raw / mag;
    return (r < 1.5 ? 1 : r < 3 ? 2 : r < 7 ? 5 : 10) * mag;
}

static double to_axis(pz_axis a, double v) {
    return a == PZ_AXIS_LINEAR ? v : a == PZ_AXIS_LOG2 ? log2(v) : log10(v);
}

static double fwd_x(const pz_figure *f, double x) {
    return to_axis(f->xaxis, x);
}

static double fwd_y(const pz_figure *f, double y) {
    return to_axis(f->yaxis, y);
}

/* tick positions (in axis units) and their labels' values */
static int ticks(pz_axis ax, double a, double b, int integral, double *pos, double *val, int max) {
    int n = 0;
    if (ax == PZ_AXIS_LOG2) {
        for (double d = ceil(a - 1e-9); d <= b + 1e-9 && n < max; d += 1) pos[n] = d, val[n++] = pow(2, d);
        if (n < 2) /* within one octave: a linear labelling of its ends */
            pos[0] = a, val[0] = pow(2, a), pos[1] = b, val[1] = pow(2, b), n = 2;
    } else if (ax == PZ_AXIS_LOG10) {
        for (double d = floor(a); d <= ceil(b) && n < max; d += 1)
            for (int m = 0; m < 3 && n < max; m++) {
                const double v = d + log10(m == 0 ? 1.0 : m == 1 ? 2.0 : 5.0);
                if (v >= a - 1e-9 && v <= b + 1e-9) pos[n] = v, val[n++] = pow(10, v);
            }
    } else {
        double s = nice_step(b - a, 5);
        if (integral && s < 1) s = 1;
        for (double v = ceil(a / s - 1e-9) * s; v <= b + 1e-9 && n < max; v += s) pos[n] = v, val[n++] = fabs(v) < 1e-12 ? 0 : v;
    }
    if (ax != PZ_AXIS_LINEAR && n < 3) { /* a log axis within about a decade: round values, evenly spaced in value */
        const double lo = ax == PZ_AXIS_LOG2 ? pow(2, a) : pow(10, a), hi = ax == PZ_AXIS_LOG2 ? pow(2, b) : pow(10, b);
        const double s = nice_step(hi - lo, 5);
        n = 0;
        for (double v = ceil(lo / s - 1e-9) * s; v <= hi * (1 + 1e-9) && n < max; v += s)
            if (v > 0) pos[n] = to_axis(ax, v), val[n++] = v;
    }
    return n;
}

typedef struct {
    const char *label;
    int style, dashed, points;
} legend_item;

/* the distinct (label, style) pairs of a panel, in order: a run's plain and
 * compressed curves share one entry */
static int legend_of(const pz_panel *p, legend_item *out, int max) {
    int n = 0;
    for (int j = 0; j < p->ns; j++) {
        if (!p->s[j].label[0]) continue; /* a curve that needs no name (the only one) */
        int seen = 0;
        for (int k = 0; k < n && !seen; k++) seen = out[k].style == p->s[j].style && !strcmp(out[k].label, p->s[j].label);
        if (!seen && n < max) out[n++] = (legend_item){p->s[j].label, p->s[j].style, p->s[j].dashed, p->s[j].points};
    }
    return n;
}

static int same_legend(const legend_item *a, int na, const legend_item *b, int nb) {
    if (na != nb) return 0;
    for (int i = 0; i < na; i++)
        if (a[i].style != b[i].style || strcmp(a[i].label, b[i].label)) return 0;
    return 1;
}

/* lays a legend out in rows of width w; returns the rows; draws when f */
static int legend_rows(FILE *f, const legend_item *it, int n, int x0, int y0, int w) {
    int x = x0, rows = n ? 1 : 0;
    for (int i = 0; i < n; i++) {
        const int iw = 30 + text_w(it[i].label, 11) + 14;
        if (x > x0 && x + iw > x0 + w) x = x0, rows++;
        if (f) {
            const int y = y0 + (rows - 1) * 16;
            const pz_series s = {.style = it[i].style, .dashed = it[i].dashed};
            if (!it[i].points)
                fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"%s/>\n", x, y, x + 24, y,
                        colour(it[i].style), dash_of(&s));
            marker(f, it[i].style, x + 12, y, 3.2, it[i].dashed);
            fprintf(f, "<text x=\"%d\" y=\"%d\">", x + 30, y + 4);
            text(f, it[i].label);
            fputs("</text>\n", f);
        }
        x += iw;
    }
    return rows;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Where a loss axis stops. With a reference curve (the uncompressed run):
 * above its highest point by its own range (at least 5% of that point), so
 * the few-percent differences the runs are compared by stay visible and
 * runs far above it go on the top edge with their values. Without one:
 * above the 95th percentile of the points by 15% of its distance from the
 * lowest value, when the highest is more than twice that distance up (a
 * diverged run). Else hi: no clipping. */
static double clip_level(const pz_figure *fig, double lo, double hi) {
    size_t n = 0;
    for (int i = 0; i < fig->np; i++)
        for (int j = 0; j < fig->p[i].ns; j++) n += (size_t)fig->p[i].s[j].n;
    double *v = malloc((n ? n : 1) * sizeof *v);
    if (!v) return hi;
    int m = 0, nref = 0;
    double rlo = INFINITY, rhi = -INFINITY;
    for (int i = 0; i < fig->np; i++)
        for (int j = 0; j < fig->p[i].ns; j++)
            for (int k = 0; k < fig->p[i].s[j].n; k++) {
                const pz_series *s = &fig->p[i].s[j];
                if (!drawable(fig, s->x[k], s->y[k])) continue;
                const double y = fwd_y(fig, s->y[k]);
                if (s->style == PZ_STYLE_REF) rlo = fmin(rlo, y), rhi = fmax(rhi, y), nref++;
                else v[m++] = y;
            }
    double cap = hi;
    if (nref >= 2) {
        const double c = rhi + fmax(rhi - rlo, 0.05 * fabs(rhi));
        if (c < hi) cap = c;
    } else if (m >= 20) {
        qsort(v, (size_t)m, sizeof *v, cmp_double);
        const double p95 = v[(int)ceil(0.95 * m) - 1];
        if (hi - lo > 2 * (p95 - lo) && p95 > lo) cap = p95 + 0.15 * (p95 - lo);
    }
    free(v);
    return cap;
}

/* an SVG page of W x H on white, its title and a note under it */
static void svg_page(FILE *f, int W, int H, const char *title, const char *note) {
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Arial, sans-serif\" font-size=\"11\">\n<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n",
            W, H, W, H, W, H);
    fprintf(f, "<text x=\"%d\" y=\"20\" font-size=\"14\" font-weight=\"bold\" text-anchor=\"middle\">", W / 2);
    text(f, title);
    fputs("</text>\n", f);
    if (note[0]) {
        fprintf(f, "<text x=\"%d\" y=\"38\" text-anchor=\"middle\" fill=\"#444\">", W / 2);
        text(f, note);
        fputs("</text>\n", f);
    }
}

/* The axes every panel shares (so panels compare), in axis units: the
 * drawable points' range, padded; a loss axis may stop below a few far-off
 * points (ycap < ymax: they go on its top edge). */
typedef struct {
    double x0, x1, y0, y1, ymax;
    int integral, clipped;
} fig_axes;

static fig_axes fig_axes_of(const pz_figure *fig) {
    fig_axes a = {INFINITY, -INFINITY, INFINITY, -INFINITY, 0, 1, 0};
    for (int i = 0; i < fig->np; i++)
        for (int j = 0; j < fig->p[i].ns; j++) {
            const pz_series *s = &fig->p[i].s[j];
            for (int k = 0; k < s->n; k++) {
                if (!drawable(fig, s->x[k], s->y[k])) continue;
                const double x = fwd_x(fig, s->x[k]), y = fwd_y(fig, s->y[k]);
                a.x0 = fmin(a.x0, x), a.x1 = fmax(a.x1, x), a.y0 = fmin(a.y0, y), a.y1 = fmax(a.y1, y);
                a.integral &= s->x[k] == floor(s->x[k]);
            }
        }
    if (!isfinite(a.x0)) a.x0 = 0, a.x1 = 1, a.y0 = 0, a.y1 = 1;
    double ycap = INFINITY; /* axis units; points above it go on the top edge */
    a.ymax = a.y1;
    if (fig->clip_high && isfinite(a.y1)) ycap = clip_level(fig, a.y0, a.y1);
    if (ycap < a.y1) a.y1 = ycap;
    a.clipped = ycap < a.ymax;
    if (a.x1 - a.x0 < 1e-12) a.x0 -= 0.5, a.x1 += 0.5;
    if (a.y1 - a.y0 < 1e-12) a.y0 -= 0.5, a.y1 += 0.5;
    const double padx = (a.x1 - a.x0) * 0.05, pady = (a.y1 - a.y0) * 0.06;
    a.x0 -= padx, a.x1 += padx, a.y0 -= pady, a.y1 += pady;
    return a;
}

/* Where things go: the panels' grid, their size and margins, the legends
 * (one for the figure when every panel has the same entries), the page. */
enum { MAXL = 256, ML = 62, MR = 16, MB = 44 };
typedef struct {
    legend_item first[MAXL];
    int nfirst, shared;
    int ncol, nrow, PW, PH, MT, MB, cellw, cellh, W, H, head, top;
    int xlabel_split; /* where the x axis title breaks into two lines (0: one line) */
} fig_layout;

/* an axis title's full text: the label and its scale */
static void axis_title(char *out, size_t cap, const char *label, pz_axis ax) {
    snprintf(out, cap, "%s%s", label, ax == PZ_AXIS_LINEAR ? "" : " (log scale)");
}

/* Where a title wider than room breaks: the space nearest its middle (0:
 * it fits, or has no space) */
static int split_at(const char *t, int room, double px) {
    if (text_w(t, px) <= room) return 0;
    const int len = (int)strlen(t);
    int best = 0;
    for (int i = 1; i < len; i++)
        if (t[i] == ' ' && (!best || abs(i - len / 2) < abs(best - len / 2))) best = i;
    return best;
}

static void fig_layout_of(const pz_figure *fig, const fig_axes *a, fig_layout *l) {
    legend_item other[MAXL];
    l->nfirst = fig->np ? legend_of(&fig->p[0], l->first, MAXL) : 0;
    l->shared = 1;
    for (int i = 1; i < fig->np && l->shared; i++) {
        const int n = legend_of(&fig->p[i], other, MAXL);
        l->shared = same_legend(l->first, l->nfirst, other, n);
    }
    l->ncol = fig->np <= 3 ? (fig->np ? fig->np : 1) : fig->np == 4 ? 2 : fig->np <= 9 ? 3 : 4;
    l->nrow = (fig->np + l->ncol - 1) / l->ncol;
    /* a lone panel gets the room small multiples share */
    l->PW = fig->np == 1 ? 460 : 280, l->PH = fig->np == 1 ? 300 : 190;
    l->MT = fig->np == 1 && !fig->p[0].title[0] ? 10 : 30;
    l->cellw = ML + l->PW + MR;
    l->W = l->ncol * l->cellw + 10;
    if (l->W < 560) l->W = 560;
    if (l->W < text_w(fig->title, 14) + 40) l->W = text_w(fig->title, 14) + 40;
    if (l->W < text_w(fig->note, 11) + 40) l->W = text_w(fig->note, 11) + 40;
    int panel_leg = 0; /* legend rows under each panel, the most any needs */
    if (!l->shared)
        for (int i = 0; i < fig->np; i++) {
            const int n = legend_of(&fig->p[i], other, MAXL);
            const int r = legend_rows(NULL, other, n, 0, 0, l->PW + ML - 10);
            panel_leg = r > panel_leg ? r : panel_leg;
        }
    char xt[600];
    axis_title(xt, sizeof xt, fig->xlabel, fig->xaxis);
    l->xlabel_split = split_at(xt, l->PW + 2 * MR, 11); /* centred under the panel: the right margin bounds it */
    l->MB = MB + (l->xlabel_split ? 13 : 0);
    l->cellh = l->MT + l->PH + l->MB + panel_leg * 16 + (panel_leg ? 6 : 0);
    l->head = 30 + (fig->note[0] ? 16 : 0) + (a->clipped ? 16 : 0);
    const int shared_rows = l->shared ? legend_rows(NULL, l->first, l->nfirst, 0, 0, l->W - 30) : 0;
    l->top = l->head + shared_rows * 16 + (shared_rows ? 8 : 0);
    l->H = l->top + l->nrow * l->cellh + 6;
}

/* the page, the title, the note, what the clipped axis means, the shared legend */
static void fig_head(FILE *f, const pz_figure *fig, const fig_axes *a, fig_layout *l) {
    const int W = l->W, H = l->H;
    svg_page(f, W, H, fig->title, fig->note);
    if (a->clipped) {
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#444\">", W / 2, fig->note[0] ? 54 : 38);
        fprintf(f, "the axis stops at %.4g: a triangle on its top edge is a point above it (up to %.4g), its value beside it</text>\n",
                fig->yaxis == PZ_AXIS_LOG10 ? pow(10, a->y1) : a->y1, fig->yaxis == PZ_AXIS_LOG10 ? pow(10, a->ymax) : a->ymax);
    }
    if (l->shared) legend_rows(f, l->first, l->nfirst, 20, l->head + 10, W - 30);
}

/* one panel's place on the page: axis units to pixels */
typedef struct {
    const fig_axes *a;
    int ox, oy, PW, PH;
    double *labelled; /* x of the clipped points' value labels drawn in this panel, per row (one per 28 px: no overlaps) */
    int *nlabelled;
} panel_frame;
static double px_of(const panel_frame *r, double v) { return r->ox + (v - r->a->x0) / (r->a->x1 - r->a->x0) * r->PW; }
static double py_of(const panel_frame *r, double v) { return r->oy + r->PH - (fmin(v, r->a->y1) - r->a->y0) / (r->a->y1 - r->a->y0) * r->PH; }

/* the panel's title, grid, ticks, frame and axis labels */
static void panel_axes(FILE *f, const pz_figure *fig, const pz_panel *p, const panel_frame *r, int xsplit, const double *tp,
                       const double *tv, int ntx, const double *yp, const double *yv, int nty) {
    const int ox = r->ox, oy = r->oy, PW = r->PW, PH = r->PH;
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">", ox + PW / 2, oy - 8);
    text(f, p->title);
    fputs("</text>\n", f);
    for (int t = 0; t < ntx; t++) {
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#e4e4e4\"/>\n", px_of(r, tp[t]), oy, px_of(r, tp[t]), oy + PH);
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%.4g</text>\n", px_of(r, tp[t]), oy + PH + 14, tv[t]);
    }
    for (int t = 0; t < nty; t++) {
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>\n", ox, py_of(r, yp[t]), ox + PW, py_of(r, yp[t]));
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.4g</text>\n", ox - 5, py_of(r, yp[t]) + 4, yv[t]);
    }
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#333\"/>\n", ox, oy, PW, PH);
    /* the axis titles stay inside the panel's cell: x on two lines when
     * wider, y smaller when longer than the panel is high */
    char t[600];
    axis_title(t, sizeof t, fig->xlabel, fig->xaxis);
    for (int line = 0, from = 0; line < (xsplit ? 2 : 1); line++) {
        const int to = xsplit && !line ? xsplit : (int)strlen(t);
        char part[600];
        snprintf(part, sizeof part, "%.*s", to - from, t + from);
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">", ox + PW / 2, oy + PH + 32 + 13 * line);
        text(f, part);
        fputs("</text>\n", f);
        from = to + 1;
    }
    axis_title(t, sizeof t, fig->ylabel, fig->yaxis);
    const double ypx = text_w(t, 11) > PH + 20 ? fmax(7.0, 11.0 * (PH + 20) / text_w(t, 11)) : 11.0;
    fprintf(f, "<text transform=\"translate(%d,%d) rotate(-90)\" text-anchor=\"middle\"", ox - 46, oy + PH / 2);
    if (ypx < 11) fprintf(f, " font-size=\"%.1f\"", ypx);
    fputc('>', f);
    text(f, t);
    fputs("</text>\n", f);
}

/* a label beside a point: right of it, or left of it in the panel's right third */
static void side_label(FILE *f, const panel_frame *r, double px, double py) {
    const int left = px > r->ox + r->PW * 0.68;
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"9\" fill=\"#333\" text-anchor=\"%s\">", px + (left ? -6 : 6), py, left ? "end" : "start");
}

/* one series: its line, its markers, its clipped points, its tags */
static void series_draw(FILE *f, const pz_figure *fig, const pz_series *s, const panel_frame *r) {
    const double y1 = r->a->y1;
    if (!s->points) {
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%s\"%s points=\"", colour(s->style),
                s->style == PZ_STYLE_REF ? "1.2" : "1.7", dash_of(s));
        for (int k = 0; k < s->n; k++)
            if (drawable(fig, s->x[k], s->y[k])) fprintf(f, "%.1f,%.1f ", px_of(r, fwd_x(fig, s->x[k])), py_of(r, fwd_y(fig, s->y[k])));
        fputs("\"/>\n", f);
    }
    /* markers on every point of a sparse curve, of a scatter always */
    if (s->points || s->n <= 40)
        for (int k = 0; k < s->n; k++)
            if (drawable(fig, s->x[k], s->y[k]) && !(fwd_y(fig, s->y[k]) > y1))
                marker(f, s->style, px_of(r, fwd_x(fig, s->x[k])), py_of(r, fwd_y(fig, s->y[k])), s->points ? 4.0 : 2.6, s->dashed);
    for (int k = 0; r->a->clipped && k < s->n; k++) /* above the axis: a triangle on its edge and the value */
        if (drawable(fig, s->x[k], s->y[k]) && fwd_y(fig, s->y[k]) > y1) {
            const double px = px_of(r, fwd_x(fig, s->x[k])), py = r->oy;
            char paint[96];
            paint_of(paint, sizeof paint, s->style, s->dashed);
            fprintf(f, "<polygon points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\" %s/>\n", px, py - 1.0, px - 4.0, py + 6.0, px + 4.0, py + 6.0, paint);
            int near = 0; /* a label there already: the triangle alone */
            const double row = s->dashed ? 1e6 : 0; /* compressed values on a row of their own, below */
            for (int j = 0; j < *r->nlabelled && !near; j++) near = fabs(r->labelled[j] - (px + row)) < 28;
            if (near) continue;
            if (*r->nlabelled < 64) r->labelled[(*r->nlabelled)++] = px + row;
            side_label(f, r, px, py + 14 + (s->dashed ? 10 : 0));
            fprintf(f, "%.3g</text>\n", s->y[k]);
        }
    for (int k = 0; s->tag && k < s->n; k++)
        if (s->tag[k][0] && drawable(fig, s->x[k], s->y[k])) {
            const double px = px_of(r, fwd_x(fig, s->x[k])), py = py_of(r, fwd_y(fig, s->y[k]));
            side_label(f, r, px, py + 3);
            text(f, s->tag[k]);
            fputs("</text>\n", f);
        }
}

pz_status pz_fig_write(const pz_figure *fig, const char *path) {
    if (fig->failed) return pz_fail(PZ_ERR_NOMEM, "out of memory drawing '%s'", path);
    const fig_axes a = fig_axes_of(fig);
    fig_layout *l = malloc(sizeof *l);
    if (!l) return pz_fail(PZ_ERR_NOMEM, "out of memory drawing '%s'", path);
    fig_layout_of(fig, &a, l);
    FILE *f = fopen(path, "w");
    if (!f) {
        free(l);
        return pz_fail(PZ_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    }
    fig_head(f, fig, &a, l);
    double tp[64], tv[64], yp[64], yv[64];
    const int ntx = ticks(fig->xaxis, a.x0, a.x1, a.integral && fig->xaxis == PZ_AXIS_LINEAR, tp, tv, 64);
    const int nty = ticks(fig->yaxis, a.y0, a.y1, 0, yp, yv, 64);
    for (int i = 0; i < fig->np; i++) {
        const pz_panel *p = &fig->p[i];
        double labelled[64];
        int nlabelled = 0;
        const panel_frame r = {&a, (i % l->ncol) * l->cellw + ML, l->top + (i / l->ncol) * l->cellh + l->MT, l->PW, l->PH, labelled,
                               &nlabelled};
        panel_axes(f, fig, p, &r, l->xlabel_split, tp, tv, ntx, yp, yv, nty);
        for (int j = 0; j < p->ns; j++) series_draw(f, fig, &p->s[j], &r);
        if (!l->shared) {
            legend_item other[MAXL];
            const int n = legend_of(p, other, MAXL);
            legend_rows(f, other, n, r.ox - ML + 12, r.oy + l->PH + l->MB + 4, l->PW + ML - 10);
        }
    }
    free(l);
    fputs("</svg>\n", f);
    const int bad = ferror(f);
    if (fclose(f) != 0 || bad) return pz_fail(PZ_ERR_IO, "writing '%s' failed", path);
    return PZ_OK;
}

/* ---- heatmaps ------------------------------------------------------------------------ */
/* viridis, sampled: dark (worst) to bright (best) */
static void viridis(double t, int rgb[3]) {
    static const int stops[][3] = {{68, 1, 84}, {72, 40, 120}, {62, 74, 137}, {49, 104, 142}, {38, 130, 142},
                                   {31, 158, 137}, {53, 183, 121}, {109, 205, 89}, {180, 222, 44}, {253, 231, 37}};
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    const double u = t * 9;
    const int i = u >= 9 ? 8 : (int)u;
    const double w = u - i;
    for (int c = 0; c < 3; c++) rgb[c] = (int)(stops[i][c] + w * (stops[i + 1][c] - stops[i][c]) + 0.5);
}

/* 1 at the best value, 0 at the worst, logarithmic in the distance from
 * the best (in h->unit), so that near-best differences stay visible next
 * to a diverged run */
static double shade(const pz_heatmap *h, double v, double lo, double hi) {
    const double best = h->lower_better ? lo : hi, worst = h->lower_better ? hi : lo;
    const double u = h->log_unit > 0 ? h->log_unit / h->scale : (hi - lo) / 100 + 1e-300;
    const double span = log1p(fabs(worst - best) / u);
    return span > 0 ? 1 - log1p(fabs(v - best) / u) / span : 1;
}

/* the value at shade t (inverse of shade) */
static double unshade(const pz_heatmap *h, double t, double lo, double hi) {
    const double best = h->lower_better ? lo : hi, worst = h->lower_better ? hi : lo;
    const double u = h->log_unit > 0 ? h->log_unit / h->scale : (hi - lo) / 100 + 1e-300;
    const double d = expm1((1 - t) * log1p(fabs(worst - best) / u)) * u;
    return h->lower_better ? best + d : best - d;
}

/* A heatmap's grid: the values' range (over every panel, so colours
 * compare), whether any cell is over seeds (a range under its mean), the
 * cells' and labels' sizes, the page. */
typedef struct {
    double lo, hi;
    int any_range, rotate, CW, CH, colhead, PWd, gap, L, top, W, H;
} heat_layout;

static heat_layout heat_layout_of(const pz_heatmap *h) {
    heat_layout l = {INFINITY, -INFINITY};
    for (int k = 0; k < h->npanel; k++)
        for (int i = 0; i < h->nr * h->nc; i++)
            if (h->count[k][i] > 0 && isfinite(h->mean[k][i])) l.lo = fmin(l.lo, h->mean[k][i]), l.hi = fmax(l.hi, h->mean[k][i]);
    if (!isfinite(l.lo)) l.lo = 0, l.hi = 1;
    for (int k = 0; k < h->npanel; k++)
        for (int i = 0; i < h->nr * h->nc; i++) l.any_range |= h->count[k][i] > 1;
    int rl = text_w(h->row_key, 11);
    for (int i = 0; i < h->nr; i++) rl = text_w(h->rows[i], 11) > rl ? text_w(h->rows[i], 11) : rl;
    int cl = 0;
    for (int j = 0; j < h->nc; j++) cl = text_w(h->cols[j], 11) > cl ? text_w(h->cols[j], 11) : cl;
    l.CW = l.any_range ? 78 : 62;
    l.CH = l.any_range ? 34 : 26;
    for (int k = 0; k < h->npanel; k++) { /* a panel as wide as its title */
        const int need = (text_w(h->panel_title[k] ? h->panel_title[k] : "", 12) + 12 + h->nc - 1) / h->nc;
        l.CW = need > l.CW ? need : l.CW;
    }
    l.rotate = cl > l.CW - 6; /* long column labels slant */
    l.colhead = l.rotate ? (int)(cl * 0.6) + 22 : 22;
    l.PWd = h->nc * l.CW, l.gap = 24;
    l.L = rl + 16, l.top = 44 + (h->note[0] ? 16 : 0) + 18 + l.colhead;
    l.W = l.L + h->npanel * (l.PWd + l.gap) + 80;
    if (l.W < text_w(h->title, 14) + 40) l.W = text_w(h->title, 14) + 40;
    if (l.W < text_w(h->note, 11) + 40) l.W = text_w(h->note, 11) + 40;
    l.H = l.top + (h->nr * l.CH > 100 ? h->nr * l.CH : 100) + 30;
    return l;
}

/* one cell: its colour, the mean, and over seeds the range and n */
static void heat_cell(FILE *f, const pz_heatmap *h, const heat_layout *l, int k, int c, int x, int y) {
    const int CW = l->CW, CH = l->CH;
    const double m = h->mean[k][c];
    if (h->count[k][c] <= 0 || !isfinite(m)) {
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#eeeeee\" stroke=\"white\"/>\n", x, y, CW, CH);
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#888\">no run</text>\n", x + CW / 2, y + CH / 2 + 4);
        return;
    }
    const double t = shade(h, m, l->lo, l->hi);
    int rgb[3];
    viridis(t, rgb);
    const int dark = 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2] < 140;
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#%02x%02x%02x\" stroke=\"white\"/>\n", x, y, CW, CH, rgb[0], rgb[1],
            rgb[2]);
    char v[64];
    snprintf(v, sizeof v, "%.*f", h->decimals, h->scale * m);
    const int two = h->count[k][c] > 1;
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" font-size=\"12\" fill=\"%s\">%s</text>\n", x + CW / 2,
            y + (two ? CH / 2 - 1 : CH / 2 + 4), dark ? "white" : "black", v);
    if (two) {
        char a[32], b[32];
        snprintf(a, sizeof a, "%.*f", h->decimals > 0 ? h->decimals - 1 : 0, h->scale * h->lo[k][c]);
        snprintf(b, sizeof b, "%.*f", h->decimals > 0 ? h->decimals - 1 : 0, h->scale * h->hi[k][c]);
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" font-size=\"9\" fill=\"%s\">%s–%s (n=%d)</text>\n", x + CW / 2,
                y + CH / 2 + 11, dark ? "white" : "black", a, b, h->count[k][c]);
    }
}

/* panel k: its title, the column key and labels, the row labels (left of the first), the cells */
static void heat_panel(FILE *f, const pz_heatmap *h, const heat_layout *l, int k) {
    const int ox = l->L + k * (l->PWd + l->gap), top = l->top, CW = l->CW, CH = l->CH, PWd = l->PWd;
    const int ty = top - l->colhead - 8;
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">", ox + PWd / 2, ty);
    text(f, h->panel_title[k] ? h->panel_title[k] : "");
    fputs("</text>\n", f);
    if (h->col_key[0]) {
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#444\">", ox + PWd / 2, ty + 14);
        text(f, h->col_key);
        fputs("</text>\n", f);
    }
    for (int j = 0; j < h->nc; j++) {
        const int cx = ox + j * CW + CW / 2;
        if (l->rotate) fprintf(f, "<text transform=\"translate(%d,%d) rotate(-40)\" text-anchor=\"start\">", cx - 4, top - 6);
        else fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">", cx, top - 6);
        text(f, h->cols[j]);
        fputs("</text>\n", f);
    }
    for (int i = 0; i < h->nr; i++) {
        if (k == 0) {
            fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", l->L - 8, top + i * CH + CH / 2 + 4);
            text(f, h->rows[i]);
            fputs("</text>\n", f);
        }
        for (int j = 0; j < h->nc; j++) heat_cell(f, h, l, k, i * h->nc + j, ox + j * CW, top + i * CH);
    }
}

/* the colour bar, best at the top, labelled at five shades; the row key */
static void heat_bar(FILE *f, const pz_heatmap *h, const heat_layout *l) {
    const int bx = l->W - 60, by = l->top, bh = h->nr * l->CH > 100 ? h->nr * l->CH : 100;
    for (int s = 0; s < 48; s++) {
        int rgb[3];
        viridis(1 - (s + 0.5) / 48.0, rgb);
        fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"12\" height=\"%.2f\" fill=\"#%02x%02x%02x\"/>\n", bx, by + s * bh / 48.0, bh / 48.0 + 0.5,
                rgb[0], rgb[1], rgb[2]);
    }
    char v[64];
    for (int k = 0; k <= 4; k++) {
        const double t = 1 - k / 4.0;
        snprintf(v, sizeof v, "%.*f", h->decimals > 1 ? h->decimals - 1 : h->decimals, h->scale * unshade(h, t, l->lo, l->hi));
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"10\">%s</text>\n", bx + 15, by + k * bh / 4.0 + 3.5, v);
    }
    fprintf(f, "<text transform=\"translate(%d,%d) rotate(-90)\" text-anchor=\"middle\" font-size=\"10\">", bx - 4, by + bh / 2);
    text(f, h->unit);
    fputs("</text>\n", f);
    if (h->row_key[0]) {
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" fill=\"#444\">", l->L - 8, l->top - 6);
        text(f, h->row_key);
        fputs("</text>\n", f);
    }
}

pz_status pz_heatmap_write(const pz_heatmap *h, const char *path) {
    const heat_layout l = heat_layout_of(h);
    const int W = l.W, H = l.H;
    FILE *f = fopen(path, "w");
    if (!f) return pz_fail(PZ_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    svg_page(f, W, H, h->title, h->note);
    for (int k = 0; k < h->npanel; k++) heat_panel(f, h, &l, k);
    heat_bar(f, h, &l);
    fputs("</svg>\n", f);
    const int bad = ferror(f);
    if (fclose(f) != 0 || bad) return pz_fail(PZ_ERR_IO, "writing '%s' failed", path);
    return PZ_OK;
}
