/* SPDX-License-Identifier: MIT */
/* vocab.c — the frame vocabulary's tables (vocab.h) and the public door to
 * every enumerated header field (pz_frame_value_name and friends). A value
 * the format allows is one row here; FORMAT.md's tables say the same. */
#include "vocab.h"
#include "object.h"

#include <stdio.h>
#include <string.h>

const pz_name frame_granularities[] = {
    {GRAN_TENSOR, "tensor", "one unit: the whole tensor"},
    {GRAN_SAMPLE, "sample", "a unit per sample (dimension 0)"},
    {GRAN_CHANNEL, "channel", "a unit per channel (dimension 1 of an image batch)"},
    {GRAN_TOKEN, "token", "a unit per token (the last dimension's vectors)"},
    {0, NULL, NULL},
};

const pz_name frame_value_types[] = {
    {VAL_F32, "fp32", "float32"},
    {VAL_F16, "fp16", "IEEE binary16"},
    {VAL_BF16, "bf16", "bfloat16"},
    {VAL_QUANT, "quantized", "qB: B-bit codes and a scale per unit"},
    {0, NULL, NULL},
};

const pz_name frame_index_codings[] = {
    {IDX_NONE, "none", "no positions on the wire"},
    {IDX_BITMAP, "bitmap", "a bit per position"},
    {IDX_DELTA, "delta", "LEB128 varints of the gaps between positions"},
    {0, NULL, NULL},
};

const pz_name spec_index_codings[] = {
    {IDX_AUTO, "auto", "bitmap or delta, whichever is smaller"},
    {IDX_BITMAP, "bitmap", "a bit per position"},
    {IDX_DELTA, "delta", "LEB128 varints of the gaps between positions"},
    {0, NULL, NULL},
};

const frame_option frame_options[] = {
    {OPT_SYM, "sym", "asym", "symmetric", "asymmetric"},
    {OPT_STOCH, "stoch", "nearest", "stochastic rounding", "nearest rounding"},
    {OPT_SIGNED, "signed", "unsigned", "signed", "unsigned"},
    {OPT_UNBIASED, "unbiased", "biased", "unbiased", "biased"},
    {OPT_BYVALUE, "by=value", "by=magnitude", "by value", "by magnitude"},
    {OPT_ROT, "rot", "norot", "rotated", ""}, /* the off text is not shown: frames before rotations existed read as before */
    {OPT_BYTES, "bytes", "packed", "one code per byte", ""}, /* (the same for packed codes) */
};
const int frame_option_count = (int)(sizeof frame_options / sizeof *frame_options);

const char *gran_name(int g) { return frame_value_text(PZ_FIELD_GRANULARITY, g); }

/* ---- public: the vocabulary by field ---------------------------------------- */

static const char *const field_names[PZ_FRAME_FIELD_COUNT] = {"codec", "granularity", "option", "value_type", "index_coding",
                                                              "wrapper"};

const char *pz_frame_field_name(pz_frame_field f) {
    return (unsigned)f < PZ_FRAME_FIELD_COUNT ? field_names[f] : NULL;
}

static const pz_name *table_of(pz_frame_field f) {
    switch (f) {
    case PZ_FIELD_GRANULARITY: return frame_granularities;
    case PZ_FIELD_VALUE_TYPE: return frame_value_types;
    case PZ_FIELD_INDEX_CODING: return frame_index_codings;
    default: return NULL;
    }
}

const char *pz_frame_value_name(pz_frame_field f, int v) {
    switch (f) {
    case PZ_FIELD_CODEC: {
        const codec_family *fam = codec_family_by_wire(v);
        return fam ? fam->name : NULL;
    }
    case PZ_FIELD_WRAPPER: {
        if (v == WRAP_NONE) return "none";
        if (v == WRAP_AQSGD_WARMUP) return "aqsgd-warmup";
        const wrapper_kind *w = wrapper_by_wire(v);
        return w ? w->name : NULL;
    }
    case PZ_FIELD_OPTION:
        for (int i = 0; i < frame_option_count; i++)
            if (frame_options[i].bit == v) return frame_options[i].name;
        return NULL;
    default: {
        const pz_name *t = table_of(f);
        return t ? pz_name_of(t, v) : NULL;
    }
    }
}

const char *frame_value_text(pz_frame_field f, int v) {
    const char *n = pz_frame_value_name(f, v);
    return n ? n : "?";
}

int pz_frame_field_values(pz_frame_field f, int *values, int cap) {
    int n = 0;
#define PUT(v) do { if (n < cap && values) values[n] = (v); n++; } while (0)
    /* every byte value the format could hold, in order: those with a name are defined */
    for (int v = 0; v < 256; v++)
        if (pz_frame_value_name(f, v)) PUT(v);
#undef PUT
    return n;
}

void pz_frame_options_text(int options, int mask, char *buf, size_t cap) {
    size_t used = 0;
    if (cap) buf[0] = 0;
    for (int i = 0; i < frame_option_count && used < cap; i++) {
        const frame_option *o = &frame_options[i];
        const char *text = options & o->bit ? o->on_text : o->off_text;
        if (!(mask & o->bit) || !*text) continue;
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", used ? ", " : "", text);
    }
}
