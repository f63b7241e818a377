/* SPDX-License-Identifier: MIT */
/* cmd_sweep.c — `pipezip sweep CONFIG` and `pipezip report DIR`. */
#include "cli.h"
#include "args.h"
#include "tool/sweep.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

int train_option_known(const char *name);

static const char sweep_usage[] =
    "Usage: pipezip sweep CONFIG [OPTIONS]\n"
    "\n"
    "Run every point of the grid a configuration file declares, each as a\n"
    "`pipezip train` process (its output in OUT/runs/ID.log, its run directory\n"
    "OUT/runs/ID), several at once with --jobs. Interrupt it and run the same\n"
    "command again: finished points are skipped, interrupted ones resume from\n"
    "their last checkpoint. Ends by writing OUT/results.csv (one row per run) and\n"
    "the report (pipezip report OUT).\n"
    "\n"
    "CONFIG is INI: [sweep] (name, description, target, target-inference, rows,\n"
    "cols, jobs, threads), [base] (pipezip train options without --), [grid] (options with\n"
    "values separated by |), [quick]/[full] and [quick.grid]/[full.grid]\n"
    "(overrides for a variant). Unknown sections and keys are errors. See configs/.\n"
    "Variants: quick (minutes, what CI runs), full (the configuration's [full]\n"
    "overrides: the scale docs/RESULTS.md was measured at), paper ([base] and\n"
    "[grid] alone: the papers' scale, all data and all epochs).\n"
    "\n"
    "Example:\n"
    "  pipezip sweep configs/a1_quantization.ini --variant quick --jobs 2\n";

int cmd_sweep(int argc, char **argv) {
    pz_sweep_opts o = {.variant = "full"};
    int dry = 0, quiet = 0;
    const pz_opt opts[] = {
        {"variant", OPT_STR, &o.variant, "NAME", "which variant of the configuration", 0, 0, "quick|full|paper"},
        {"out", OPT_STR, &o.out_dir, "DIR", "sweep directory (default sweeps/NAME-VARIANT)", 0, 0, NULL},
        {"jobs", OPT_INT, &o.jobs, "N", "runs at once (default: the config's, else 1)", 0, 64, NULL},
        {"threads", OPT_INT, &o.threads, "N", "threads per run (default: the config's, else cores / jobs)", 0, 1024, NULL},
        {"dry-run", OPT_BOOL, &dry, NULL, "print each point's pipezip train command, run nothing", 0, 0, NULL},
        {"quiet", OPT_BOOL, &quiet, NULL, "no line per started and finished run", 0, 0, NULL},
    };
    char *pos[1];
    int npos = 0;
    int rc = pz_parse_args("pipezip sweep", opts, (int)(sizeof opts / sizeof *opts), argc, argv, 2, sweep_usage, pos, 1, &npos);
    if (rc == 1) return 0;
    if (rc) return 2;
    if (npos != 1) {
        fprintf(stderr, "pipezip sweep: expected one CONFIG file\n");
        return 2;
    }
    o.config = pos[0];
    o.dry_run = dry, o.quiet = quiet;
    char dir[1024], exe[4096];
    if (!o.out_dir) {
        const char *base = strrchr(o.config, '/') ? strrchr(o.config, '/') + 1 : o.config;
        snprintf(dir, sizeof dir, "sweeps/%.*s-%s", (int)(strcspn(base, ".")), base, o.variant);
        o.out_dir = dir;
    }
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        fprintf(stderr, "pipezip sweep: cannot find its own executable\n");
        return 1;
    }
    exe[n] = 0;
    o.exe = exe;
    pz_status st = pz_sweep_run(&o, train_option_known);
    if (!st && !dry) st = pz_sweep_report(o.out_dir);
    if (st) {
        fprintf(stderr, "pipezip sweep: %s\n", pz_last_error());
        return st == PZ_ERR_ARG ? 2 : 1;
    }
    if (!dry) printf("results: %s/results.csv\nreport:  %s/report.md\n", o.out_dir, o.out_dir);
    return 0;
}

static const char report_usage[] =
    "Usage: pipezip report SWEEP_DIR\n"
    "\n"
    "Write SWEEP_DIR/report.md (tables shaped by the configuration's rows and\n"
    "cols keys, every run with its accuracy plain and compressed, traffic,\n"
    "bits per element, compression error, time and traffic to the target\n"
    "accuracy) and SWEEP_DIR/plots/*.svg, from results.csv and the runs.\n";

int cmd_report(int argc, char **argv) {
    char *pos[1];
    int npos = 0;
    int rc = pz_parse_args("pipezip report", NULL, 0, argc, argv, 2, report_usage, pos, 1, &npos);
    if (rc == 1) return 0;
    if (rc) return 2;
    if (npos != 1) {
        fprintf(stderr, "pipezip report: expected one sweep directory\n");
        return 2;
    }
    /* the report reads results.csv; only pipezip sweep writes it */
    pz_status st = pz_sweep_report(pos[0]);
    if (st) {
        fprintf(stderr, "pipezip report: %s\n", pz_last_error());
        return st == PZ_ERR_ARG ? 2 : 1;
    }
    printf("%s/report.md\n", pos[0]);
    return 0;
}
