/* SPDX-License-Identifier: MIT */
/* store.h — per-sample state rows (AQ-SGD's m(xi), per-sample error
 * feedback), keyed by sample id: fp32 or fp16 rows, in memory or in a
 * memory-mapped file. */
#ifndef PZ_CODEC_STORE_H
#define PZ_CODEC_STORE_H

#include "base/base.h"

typedef struct {
    int64_t row;        /* floats per row */
    int fp16;           /* rows stored as binary16 */
    int64_t cap;        /* rows allocated */
    uint8_t *present;   /* (cap) 1 once a row was written */
    void *data;
    int fd;             /* >= 0: file-backed (mmap) */
    char path[512];
    size_t mapped;
} sample_store;

/* mmap_dir: NULL for memory, else a directory for a private backing file */
pz_status store_init(sample_store *s, int64_t row, int fp16, const char *mmap_dir);
/* Row of sample id (zero-filled the first time); NULL + error on failure. */
pz_status store_row(sample_store *s, uint32_t id, void **row);
void store_get(const sample_store *s, const void *row, float *out);
void store_put(const sample_store *s, void *row, const float *in);
void store_free(sample_store *s);

#endif
