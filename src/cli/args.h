/* SPDX-License-Identifier: MIT */
/* args.h — command-line options: a table per subcommand, strict parsing
 * (every value checked for type, range and choices), generated --help. */
#ifndef PZ_ARGS_H
#define PZ_ARGS_H

#include <stdint.h>
#include <stdio.h>

typedef enum { OPT_STR, OPT_INT, OPT_I64, OPT_U64, OPT_FLOAT, OPT_FLOAT64, OPT_BOOL } opt_type;

typedef struct {
    const char *name;     /* long name without "--" */
    opt_type type;
    void *dst;            /* const char**, int*, int64_t*, uint64_t*, float*, int* */
    const char *metavar;  /* shown in --help */
    const char *help;
    double min, max;      /* numeric range (ignored when min == max == 0) */
    const char *choices;  /* "a|b|c" for OPT_STR, or NULL */
    /* a setting of a run plan (dst unused): set(ctx, id, text, flag) parses
     * and checks the text, naming the flag as typed in errors; nonzero:
     * refused, pz_last_error() says why. `shown` is its default for help. */
    int (*set)(void *ctx, int id, const char *text, const char *flag);
    void *ctx;
    int id;
    const char *shown;
} pz_opt;

/* Parse argv[first..argc). OPT_BOOL takes --name / --no-name or --name=on|off.
 * Returns 0 on success, 1 if --help was printed, 2 on an error (printed to
 * stderr with the command name and what would be accepted). positional
 * arguments are collected into pos (up to max_pos), *n_pos gets the count. */
int pz_parse_args(const char *cmd, const pz_opt *opts, int n_opts, int argc, char **argv, int first,
                  const char *usage, char **pos, int max_pos, int *n_pos);
void pz_print_help(FILE *out, const char *usage, const pz_opt *opts, int n_opts);

#endif
