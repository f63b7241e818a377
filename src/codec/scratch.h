/* SPDX-License-Identifier: MIT */
/* scratch.h — buffers a codec reuses across encodes and decodes. Large
 * per-call allocations would be fresh mmap'd pages every time (page faults
 * cost more than the codec). Slots grow, never shrink. */
#ifndef PZ_CODEC_SCRATCH_H
#define PZ_CODEC_SCRATCH_H

#include <stddef.h>

enum { SC_POS, SC_VALS, SC_IDX, SC_KEYS, SC_CODES, SC_NEG, SC_TMP, SC_HALF, SC_CVALS, SC_ZSTD, SC_SLOTS };
typedef struct {
    void *p[SC_SLOTS];
    size_t cap[SC_SLOTS];
} codec_scratch;

/* at least `bytes` in slot `slot` (contents not kept); NULL when out of memory */
void *scratch_get(codec_scratch *s, int slot, size_t bytes);
void scratch_release(codec_scratch *s);

#endif
