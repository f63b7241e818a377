/* SPDX-License-Identifier: MIT */
/* vocab.h — the frame's vocabulary: every enumerated header field's wire
 * values with their names and help, one table each (vocab.c). The spec
 * grammar, `pipezip codec inspect`, pz_frame_info, the help text and the
 * Python package all read these tables; the families and wrappers are
 * tables of their own (registry.c, wrappers.c) and are reached from here. */
#ifndef PZ_CODEC_VOCAB_H
#define PZ_CODEC_VOCAB_H

#include "base/names.h"
#include "pipezip/codec.h"

/* byte 25: how a tensor splits into units (FORMAT.md) */
extern const pz_name frame_granularities[];
/* byte 27: the values section's type ("quantized": q1..q8 in a spec) */
extern const pz_name frame_value_types[];
/* byte 28: how positions are sent; a spec may also say "auto" (IDX_AUTO,
 * never on the wire): spec_index_codings */
extern const pz_name frame_index_codings[];
extern const pz_name spec_index_codings[];
/* byte 26: one bit each. `name` is the spec word for the bit set, `off` the
 * word for it clear; `on_text`/`off_text` what inspect prints. */
typedef struct {
    int bit;
    const char *name, *off, *on_text, *off_text;
} frame_option;
extern const frame_option frame_options[];
extern const int frame_option_count;

/* A granularity's name, "?" for a value the format does not define. */
const char *gran_name(int gran);
/* Any field's value name (pz_frame_value_name), "?" for a value the format
 * does not define. */
const char *frame_value_text(pz_frame_field field, int value);

#endif
