/* SPDX-License-Identifier: MIT */
/* blas.h — the one place that includes CBLAS (OpenBLAS, OpenMP build). */
#ifndef PZ_BLAS_H
#define PZ_BLAS_H
#include <cblas.h>
#endif
