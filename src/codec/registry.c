/* SPDX-License-Identifier: MIT */
/* registry.c — the table of codec families. A family's wire id is its
 * own (family->wire_id), never its place here; the order is the order help
 * lists them in. */
#include "family.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the families (one file each) */
extern const codec_family codec_none, codec_fp16, codec_bf16;      /* half.c */
extern const codec_family codec_quant;                             /* quant.c */
extern const codec_family codec_topk, codec_randk, codec_randtopk; /* topk.c */
extern const codec_family codec_ms;                                /* ms.c */
extern const codec_family codec_lowrank;                           /* lowrank.c */
extern const codec_family codec_fp8;                               /* fp8.c */
extern const codec_family codec_rvq;                               /* rvq.c */

const codec_family *const codec_family_plain = &codec_none;

const codec_family *const codec_families[] = {
    &codec_none, &codec_fp16, &codec_bf16, &codec_quant, &codec_topk, &codec_randk, &codec_randtopk, &codec_ms, &codec_lowrank, &codec_fp8, &codec_rvq,
};
const int codec_family_count = (int)(sizeof codec_families / sizeof *codec_families);

const codec_family *codec_family_by_wire(int wire_id) {
    for (int i = 0; i < codec_family_count; i++)
        if (codec_families[i]->wire_id == wire_id) return codec_families[i];
    return NULL;
}

const codec_family *codec_family_by_name(const char *name, codec_params *p) {
    for (int i = 0; i < codec_family_count; i++)
        if (codec_families[i]->match(name, p)) return p->fam = codec_families[i];
    return NULL;
}

const char *codec_wire_name(int wire_id) {
    const codec_family *f = codec_family_by_wire(wire_id);
    return f ? f->name : "?";
}

void codec_family_names(char *buf, size_t cap) {
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; i < codec_family_count && n < cap; i++) {
        const codec_family *f = codec_families[i];
        n += f->width_name ? (size_t)snprintf(buf + n, cap - n, "%s%s1..%s8", i ? ", " : "", f->width_name, f->width_name)
                           : (size_t)snprintf(buf + n, cap - n, "%s%s", i ? ", " : "", f->name);
    }
}

uint8_t *codec_state_reserve(codec_state *s, size_t n) {
    if (s->cap < n) {
        uint8_t *b = realloc(s->b, n);
        if (!b) return NULL;
        s->b = b, s->cap = n;
    }
    return s->b;
}
