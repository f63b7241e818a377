/* SPDX-License-Identifier: MIT */
/* svg.h — the figures `pipezip report` draws: small multiples (a grid of
 * panels sharing their axes, each with its own curves) and heatmaps with
 * their values written in the cells. SVG is written directly (no plotting
 * dependency); scripts/plot.py draws the same figures with matplotlib.
 *
 * Every series gets its own style (colour, marker shape, dash) for the
 * first 40 indices of a panel; every run given to a figure is drawn (a
 * figure grows panels and legend rows, it never drops a series). */
#ifndef PZ_SVG_H
#define PZ_SVG_H

#include "base/base.h"

typedef enum { PZ_AXIS_LINEAR, PZ_AXIS_LOG2, PZ_AXIS_LOG10 } pz_axis;

typedef struct {
    char label[160];
    int style;  /* colour and marker shape: index into the style cycle */
    int dashed; /* dashed line, hollow markers (the compressed-inference curve) */
    int points; /* markers only */
    int n, cap;
    double *x, *y;
    char (*tag)[48]; /* optional: a label written beside each point */
} pz_series;

typedef struct {
    char title[200];
    pz_series *s;
    int ns, cap;
} pz_panel;

typedef struct {
    char title[240], note[400], xlabel[120], ylabel[120];
    pz_axis xaxis, yaxis; /* yaxis: LINEAR or LOG10 */
    /* a few values far above the rest (a diverged run's loss) would flatten
     * every other curve: the axis stops above the 95th percentile and those
     * points are drawn as triangles on its top edge, their value beside them */
    int clip_high;
    pz_panel *p;
    int np, cap;
    int failed; /* out of memory while adding: pz_fig_write says so */
} pz_figure;

pz_panel *pz_fig_panel(pz_figure *f, const char *title);
/* style PZ_STYLE_REF: a thin grey reference curve (the uncompressed run in
 * every panel), drawn under the others */
#define PZ_STYLE_REF (-1)
pz_series *pz_panel_series(pz_figure *f, pz_panel *p, const char *label, int style, int dashed, int points);
void pz_series_add(pz_figure *f, pz_series *s, double x, double y);
/* the same, with a label beside the point */
void pz_series_add_tagged(pz_figure *f, pz_series *s, double x, double y, const char *tag);
/* points drawn in any panel (non-finite ones and, on a log axis, x <= 0 are not) */
int pz_fig_points(const pz_figure *f);
pz_status pz_fig_write(const pz_figure *f, const char *path);
void pz_fig_free(pz_figure *f);

/* A table of values over rows x cols, in one or two panels side by side
 * (plain and compressed inference) sharing one colour scale. Cell (i, j)
 * of panel k: mean[k][i * nc + j] over count[k][...] runs (0: no run, drawn
 * grey), with lo-hi under the mean when count > 1. */
typedef struct {
    char title[240], note[240], row_key[96], col_key[96];
    const char *const *rows, *const *cols;
    int nr, nc, npanel;
    const char *panel_title[2];
    const double *mean[2], *lo[2], *hi[2];
    const int *count[2];
    double scale;     /* values are drawn times this (100: fractions as %) */
    double log_unit;  /* the colour scale is logarithmic in the distance from the best
                       * cell, in these units (drawn values): a point of accuracy
                       * apart near the best is as visible as ten further down */
    int decimals;     /* digits after the point */
    int lower_better; /* the colour scale's bright end is the low values */
    char unit[32];    /* the colour bar's label */
} pz_heatmap;

pz_status pz_heatmap_write(const pz_heatmap *h, const char *path);

#endif
