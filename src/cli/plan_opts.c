/* SPDX-License-Identifier: MIT */
/* plan_opts.c — a run plan's settings as command-line options: the flags of
 * `pipezip train` and `pipezip serve` are rows of the settings table
 * (run/settings.h), so a flag's name, type, range, values, help and default
 * are written once, and its text goes through the plan's door
 * (run_plan_set_as), which names the flag as typed in its errors. */
#include "cli.h"
#include "run/settings.h"

#include <stdio.h>

static int set_setting(void *ctx, int id, const char *text, const char *flag) {
    return run_plan_set_as(ctx, (pz_setting)id, text, flag) != PZ_OK;
}

static opt_type type_of(setting_kind k) {
    switch (k) {
    case SET_INT: return OPT_INT;
    case SET_I64: return OPT_I64;
    case SET_U64: return OPT_U64;
    case SET_FLOAT: return OPT_FLOAT;
    case SET_DOUBLE: return OPT_FLOAT64;
    case SET_BOOL: return OPT_BOOL;
    default: return OPT_STR;
    }
}

pz_opt cli_setting_opt(pz_run_plan *plan, pz_setting id, const char *help) {
    static char shown[PZ_SET_COUNT][40];
    const run_setting *s = run_setting_of(id);
    const void *v = (const char *)plan + s->offset;
    const char *def = shown[id];
    switch (s->kind) {
    case SET_INT: snprintf(shown[id], sizeof shown[id], "%d", *(const int *)v); break;
    case SET_I64: snprintf(shown[id], sizeof shown[id], "%lld", (long long)*(const int64_t *)v); break;
    case SET_U64: snprintf(shown[id], sizeof shown[id], "%llu", (unsigned long long)*(const uint64_t *)v); break;
    case SET_FLOAT: snprintf(shown[id], sizeof shown[id], "%g", *(const float *)v); break;
    case SET_DOUBLE: snprintf(shown[id], sizeof shown[id], "%g", *(const double *)v); break;
    case SET_BOOL: snprintf(shown[id], sizeof shown[id], "%s", *(const int *)v < 0 ? "auto" : *(const int *)v ? "on" : "off"); break;
    default: def = plan->text[id]; break;
    }
    return (pz_opt){.name = s->flag, .type = type_of(s->kind), .metavar = s->metavar, .help = help ? help : run_setting_help(s),
                    .min = s->min, .max = s->max, .choices = run_setting_choices(s), .set = set_setting, .ctx = plan,
                    .id = id, .shown = def};
}
