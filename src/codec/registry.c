/* SPDX-License-Identifier: MIT */
/* registry.c — the table of codec families. A family's wire id is its
 * own (family->wire_id), never its place here; the order is the order help
 * lists them in. */
#include "family.h"

#include <string.h>

const codec_family *const codec_families[] = {
    &codec_none, &codec_fp16, &codec_bf16, &codec_quant, &codec_topk, &codec_randk, &codec_randtopk, &codec_ms, &codec_lowrank,
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
