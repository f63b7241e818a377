/* SPDX-License-Identifier: MIT */
/* transformer_avx512.c — the AVX-512 builds of the transformer's element
 * and row loops: GELU (gelu_impl.h) and attention's softmax rows
 * (softmax_impl.h). transformer.c runs them where the matrix products run
 * their AVX-512 kernels. */
#define GELU_SUFFIX avx512
#include "gelu_impl.h"
#define SM_SUFFIX avx512
#include "softmax_impl.h"
