/* SPDX-License-Identifier: MIT */
/* sweep_plan.h — a sweep's points, as its three rooms share them:
 * sweep_plan.c (the configuration into points), sweep.c (running them as
 * processes, the kernels they use), sweep_results.c (results.csv,
 * epochs.csv, the series). */
#ifndef PZ_TOOL_SWEEP_PLAN_H
#define PZ_TOOL_SWEEP_PLAN_H

#include "tool/sweep.h"
#include "tool/ini.h"

enum { MAX_KEYS = 64, MAX_VALUES = 32, MAX_GRID = 12 };

typedef struct {
    char key[64], value[512];
} kv;

typedef struct {
    char id[160];
    kv set[MAX_KEYS];
    int n;
} point;

typedef struct {
    pz_ini ini;
    char variant[16];
    kv base[MAX_KEYS];
    int nbase;
    struct {
        char key[64];
        char vals[MAX_VALUES][512];
        int n;
    } grid[MAX_GRID];
    int ngrid;
    point *pts;
    int npts;
} plan;

/* the configuration at path, its variant, into points (known: the train
 * options a key may name) */
pz_status sweep_plan_load(plan *pl, const char *path, const char *variant, pz_option_check_fn known);
void sweep_plan_free(plan *pl);
/* set key in a list (replacing its value if present) */
void sweep_kv_set(kv *list, int *n, const char *key, const char *value);
/* whether the file at path holds needle (0 when it cannot be read) */
int sweep_file_has(const char *path, const char *needle);
/* sweep.c: kernels.json, the kernels the sweep's finished runs used */
pz_status sweep_record_kernels(const char *dir, const plan *pl);

#endif
