/* SPDX-License-Identifier: MIT */
/* store.c — per-sample state rows (AQ-SGD's m(xi), per-sample error
 * feedback), keyed by sample id: fp32 or fp16 rows, in memory or in a
 * memory-mapped file (AQ-SGD's reference code keeps them in an fp16 mmap). */
#define _GNU_SOURCE
#include "store.h"
#include "kernels/codec_kernels.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

pz_status store_init(sample_store *s, int64_t row, int fp16, const char *mmap_dir) {
    memset(s, 0, sizeof *s);
    s->row = row;
    s->fp16 = fp16;
    s->fd = -1;
    if (mmap_dir && *mmap_dir) {
        /* a private file in the directory, unlinked at once: the rows page
         * to disk under memory pressure, two codecs (sender and receiver in
         * one process) never share one, and nothing is left behind */
        snprintf(s->path, sizeof s->path, "%s/pipezip-aqsgd-XXXXXX", mmap_dir);
        s->fd = mkstemp(s->path);
        if (s->fd < 0) return pz_fail(PZ_ERR_IO, "cannot create an AQ-SGD buffer file in '%s': %s", mmap_dir, strerror(errno));
        unlink(s->path);
    }
    return PZ_OK;
}

static size_t row_bytes(const sample_store *s) { return (size_t)s->row * (s->fp16 ? 2 : 4); }

static pz_status grow(sample_store *s, int64_t need) {
    int64_t cap = s->cap ? s->cap : 1024;
    while (cap < need) cap *= 2;
    /* at least a byte: rows of an empty sample (a zero dimension) take none,
     * and realloc(p, 0) would free p */
    const size_t want = (size_t)cap * row_bytes(s), bytes = want > 0 ? want : 1;
    if (s->fd >= 0) {
        if (ftruncate(s->fd, (off_t)bytes) != 0)
            return pz_fail(PZ_ERR_IO, "cannot grow '%s' to %zu bytes: %s", s->path, bytes, strerror(errno));
        void *p = s->data ? mremap(s->data, s->mapped, bytes, MREMAP_MAYMOVE)
                          : mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
        if (p == MAP_FAILED) return pz_fail(PZ_ERR_IO, "cannot map '%s': %s", s->path, strerror(errno));
        s->data = p;
        s->mapped = bytes; /* new pages of a grown file read as zeros */
    } else {
        void *p = realloc(s->data, bytes);
        if (!p) return pz_fail(PZ_ERR_NOMEM, "out of memory for %lld per-sample rows of %zu bytes", (long long)cap, row_bytes(s));
        const size_t old = (size_t)s->cap * row_bytes(s);
        if (bytes > old) memset((uint8_t *)p + old, 0, bytes - old);
        s->data = p;
    }
    uint8_t *np = realloc(s->present, (size_t)cap);
    if (!np) return pz_fail(PZ_ERR_NOMEM, "out of memory");
    memset(np + s->cap, 0, (size_t)(cap - s->cap));
    s->present = np;
    s->cap = cap;
    return PZ_OK;
}

pz_status store_row(sample_store *s, uint32_t id, void **row) {
    if (id >= (1u << 31)) return pz_fail(PZ_ERR_ARG, "sample id %u is too large", id);
    if ((int64_t)id >= s->cap) PZ_TRY(grow(s, (int64_t)id + 1));
    s->present[id] = 1;
    *row = (uint8_t *)s->data + (size_t)id * row_bytes(s);
    return PZ_OK;
}

void store_get(const sample_store *s, const void *row, float *out) {
    if (s->fp16) pz_codec_kernels_best()->f16_to_f32(row, (size_t)s->row, out);
    else memcpy(out, row, row_bytes(s));
}

void store_put(const sample_store *s, void *row, const float *in) {
    if (s->fp16) pz_codec_kernels_best()->f32_to_f16(in, (size_t)s->row, row);
    else memcpy(row, in, row_bytes(s));
}

void store_free(sample_store *s) {
    if (s->fd >= 0) {
        if (s->data) munmap(s->data, s->mapped);
        close(s->fd);
    } else {
        free(s->data);
    }
    free(s->present);
    memset(s, 0, sizeof *s);
    s->fd = -1;
}
