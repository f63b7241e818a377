/* SPDX-License-Identifier: MIT */
/* codec_kernels_scalar.c — the plain scalar reference build (no
 * vectorisation, table-driven CRC): the definition the SIMD builds match. */
#define PZ_KSUFFIX scalar
#define PZ_KNAME "scalar"
#include "codec_kernels_impl.h"

const pz_codec_kernels *pz_codec_kernels_scalar(void) { return &table_scalar; }
