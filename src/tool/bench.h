/* SPDX-License-Identifier: MIT */
/* bench.h — the measurements behind `pipezip bench` and the listing behind
 * `pipezip models`: they look inside the library on purpose (kernels, the
 * engine's layers), so they live in the tool, not in the command line. */
#ifndef PZ_TOOL_BENCH_H
#define PZ_TOOL_BENCH_H

#include "base/base.h"

#include <stdio.h>

/* `pipezip bench train`: median time of a training step of a preset */
typedef struct {
    const char *model, *input; /* a preset; an image model's input "1x28x28" or "3x32x32" */
    int batch, threads, warmup, repeat, json;
    int profile; /* also time each layer (per step, over `repeat` more steps) */
} bench_train_options;
/* The FMA peak (tool/peak.c): single-precision GFLOP/s in the CPU's widest
 * vectors, on one thread and on `threads`, medians of 5 short runs. */
typedef struct {
    const char *isa; /* "AVX-512", "AVX2+FMA", or "none" (then 0) */
    double core_gflops, team_gflops;
    int threads;
} bench_peak;
bench_peak tool_fma_peak(int threads);

/* prints the result (text or a JSON line) to out, warnings to stderr; 0 or an exit code */
int tool_bench_train(const bench_train_options *o, FILE *out);

/* `pipezip bench codecs`: throughput against the memory read bandwidth */
typedef struct {
    const char *const *specs; /* codec specs, already checked */
    int n_specs;
    const long long *sizes;   /* elements, multiples of 16 (of 16 width when width is set) */
    int n_sizes;
    int width;                /* 0: tensors of 16 x size/16; else 16 x tokens x width (a transformer's) */
    int activation, gradient; /* which value distributions */
    int threads, repeat, json;
    const pz_tensor *tensor;  /* instead of the above: this tensor as it is (a real run's, --data FILE); sizes and width unused */
    const char *tensor_name;  /* its label in the table */
} bench_codecs_options;
int tool_bench_codecs(const bench_codecs_options *o, FILE *out);

/* `pipezip models`: the presets named (all when n_names is 0), layer by layer */
int tool_models(FILE *out, char **names, int n_names, const char *input, int classes, int vocab, int subspace, int project, const char *cuts);

#endif
