/* SPDX-License-Identifier: MIT */
/* gelu_avx512.c — GELU's AVX-512 build (gelu_impl.h; transformer.c runs it
 * where the matrix products run their AVX-512 kernels). */
#define GELU_SUFFIX avx512
#include "gelu_impl.h"
