/* SPDX-License-Identifier: MIT */
/* threads.c — the process's thread setting: OpenMP's team size and the BLAS
 * library's pool (OpenBLAS, OpenMP build), set once for every part. */
#include "base.h"

#include <omp.h>

/* OpenBLAS's own setter (declared here so that base needs no BLAS header) */
void openblas_set_num_threads(int n);

static int n_threads = 0;

void pz_set_threads(int n) {
    pz_blas_prepare(); /* before any thread of ours exists (blas.c) */
    n_threads = n > 0 ? n : omp_get_num_procs();
    omp_set_num_threads(n_threads);
    openblas_set_num_threads(n_threads);
}

int pz_get_threads(void) { return n_threads > 0 ? n_threads : omp_get_max_threads(); }

void pz_thread_attach(int n) { omp_set_num_threads(n > 0 ? n : 1); }
