/* SPDX-License-Identifier: MIT */
/* xalloc.h — allocation that exits on failure, for the pipezip command and
 * the tests only: the library returns PZ_ERR_NOMEM instead (and never exits);
 * a command-line tool may decide that running out of memory ends it. */
#ifndef PZ_CLI_XALLOC_H
#define PZ_CLI_XALLOC_H

#include "base/base.h"

#include <stdio.h>
#include <stdlib.h>

static inline void *pz_xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) fprintf(stderr, "pipezip: out of memory allocating %zu bytes\n", n), exit(2);
    return p;
}
static inline void *pz_xcalloc(size_t n, size_t sz) {
    void *p = calloc(n ? n : 1, sz ? sz : 1);
    if (!p) fprintf(stderr, "pipezip: out of memory allocating %zu x %zu bytes\n", n, sz), exit(2);
    return p;
}
static inline void *pz_xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) fprintf(stderr, "pipezip: out of memory allocating %zu bytes\n", n), exit(2);
    return q;
}
/* 64-byte aligned, zeroed floats (free with free()) */
static inline float *pz_xfloats(size_t n) {
    float *p = pz_floats_try(n);
    if (!p) fprintf(stderr, "pipezip: out of memory allocating %zu floats\n", n), exit(2);
    return p;
}

#endif
