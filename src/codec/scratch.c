/* SPDX-License-Identifier: MIT */
/* scratch.c — reusable codec buffers (scratch.h). */
#include "scratch.h"

#include <stdlib.h>
#include <string.h>

void *scratch_get(codec_scratch *s, int slot, size_t bytes) {
    if (bytes == 0) bytes = 1;
    if (s->cap[slot] < bytes) {
        free(s->p[slot]);
        s->p[slot] = malloc(bytes);
        s->cap[slot] = s->p[slot] ? bytes : 0;
    }
    return s->p[slot];
}

void scratch_release(codec_scratch *s) {
    for (int i = 0; i < SC_SLOTS; i++) free(s->p[i]);
    memset(s, 0, sizeof *s);
}
