/* SPDX-License-Identifier: MIT */
/* threads.c — the process's thread setting: OpenMP's team size and the BLAS
 * library's pool (OpenBLAS, OpenMP build), set once for every part. */
#include "base.h"

#include <omp.h>

/* OpenBLAS's own setter (declared here so that base needs no BLAS header) */
void openblas_set_num_threads(int n);

static int n_threads = 0;

/* at most what the runtime gives a team (OMP_THREAD_LIMIT): the parts that
 * keep a slot a thread (a convolution's weight-gradient partials, the BLAS's
 * pool) count on every thread they ask for; asked more, a convolution summed
 * slots no thread had written and OpenBLAS waited forever for its own */
static int limited(int n) {
    const int lim = omp_get_thread_limit();
    return lim > 0 && n > lim ? lim : n;
}

void pz_set_threads(int n) {
    pz_blas_prepare(); /* before any thread of ours exists (blas.c) */
    n_threads = limited(n > 0 ? n : omp_get_num_procs());
    omp_set_num_threads(n_threads);
    openblas_set_num_threads(n_threads);
}

int pz_get_threads(void) { return n_threads > 0 ? n_threads : limited(omp_get_max_threads()); }

void pz_thread_attach(int n) { omp_set_num_threads(n > 0 ? n : 1); }
