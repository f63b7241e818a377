/* SPDX-License-Identifier: MIT */
/* sweep.h — a grid of training runs from one configuration file, run as
 * `pipezip train` processes (several at once), resumable, summarised in
 * results.csv; and the report (Markdown tables, SVG plots) made from it.
 *
 * The configuration (INI, strict: unknown sections and keys are errors):
 *   [sweep]  name, description, target (an accuracy, or "uncompressed-0.005":
 *            the final accuracy of the run with fwd = bwd = none and the
 *            same seed, minus half a point; the best of those runs for a
 *            seed that has none), target-inference (plain, the default, or
 *            compressed: which test accuracy must reach the target), rows,
 *            cols (grid keys for the report's tables and figures),
 *            jobs (runs at once), threads (per run), blas-core (an
 *            OpenBLAS core type) and conv-kernels (im2col, avx2, avx512):
 *            the kernels every run uses (else those of kernels.json)
 *   [base]   pipezip train options (without "--"): model = resnet8
 *   [grid]   options with values separated by "|": fwd = none | q2 | q4
 *   [quick] / [full]            overrides of [base] for a variant
 *   [quick.grid] / [full.grid]  overrides of [grid] for a variant
 * The variant "paper" is [base] and [grid] with no overrides.
 *
 * A sweep directory: sweep.ini and variant (what ran), runs/ID/ (each run's
 * records), results.csv (a row per run), epochs.csv (a row per run and
 * epoch), kernels.json (the build, CPU and kernels of the first finished
 * run, applied to every later run), report.md and plots/. */
#ifndef PZ_SWEEP_H
#define PZ_SWEEP_H

#include "base/base.h"

/* Does `pipezip train` take this option? (the CLI knows) */
typedef int (*pz_option_check_fn)(const char *name);

typedef struct {
    const char *config, *variant, *out_dir, *exe; /* exe: the pipezip binary to run points with */
    int jobs, threads;  /* 0: from the config, else 1 and all cores / jobs */
    int dry_run;        /* list the points and their commands, run nothing */
    int quiet;
} pz_sweep_opts;

pz_status pz_sweep_run(const pz_sweep_opts *o, pz_option_check_fn known);
/* DIR/results.csv from the runs under DIR/runs (called by pz_sweep_run). */
pz_status pz_sweep_collect(const char *dir);
/* DIR/epochs.csv, every run's per-epoch records, from the runs under
 * DIR/runs (rows of runs that are gone kept from the old file). */
pz_status pz_sweep_epochs(const char *dir);
/* DIR/report.md and DIR/plots/ *.svg from DIR/results.csv and DIR/epochs.csv. */
pz_status pz_sweep_report(const char *dir);

#endif
