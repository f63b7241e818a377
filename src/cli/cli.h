/* SPDX-License-Identifier: MIT */
/* cli.h — the subcommands of `pipezip`. Each returns the process exit code:
 * 0 success, 1 a failure while running, 2 a usage error. */
#ifndef PZ_CLI_H
#define PZ_CLI_H

#include <stdio.h>

int cmd_train(int argc, char **argv);
int cmd_models(int argc, char **argv);
int cmd_time(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_codec(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_keygen(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_sample(int argc, char **argv);
int bench_codecs(int argc, char **argv);

/* A run plan's setting as a command-line option (plan_opts.c): its flag,
 * type, range, values and default from the settings table; help replaces
 * the table's help line when not NULL. */
#include "args.h"
#include "pipezip/pipezip.h"
pz_opt cli_setting_opt(pz_run_plan *plan, pz_setting id, const char *help);

/* the codec spec grammar, generated from the codec table (cmd_codec.c) */
void pz_print_codec_grammar(FILE *out);

#endif
