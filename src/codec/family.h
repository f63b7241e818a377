/* SPDX-License-Identifier: MIT */
/* family.h — a codec family is one unit: one descriptor in the table of
 * registry.c, one file (half.c, quant.c, topk.c, ms.c). The descriptor
 * holds everything pipezip knows of the family: its spec name and explicit
 * wire id, option parsing and validation, the canonical spec, the largest
 * body, encode, the header parameters its frames may carry, decode, whether
 * it is lossless, help text. Adding a codec = a new file with a descriptor
 * and one line in registry.c (docs/ARCHITECTURE.md). */
#ifndef PZ_CODEC_FAMILY_H
#define PZ_CODEC_FAMILY_H

#include "frame.h"
#include "units.h"
#include "scratch.h"
#include "kernels/codec_kernels.h"
#include "vocab.h"

struct codec_family;

enum { MS_SIGN_AUTO = 0, MS_SIGN_SIGNED = 1, MS_SIGN_UNSIGNED = 2 };

/* A base (stateless) codec's parameters, as parsed from a spec. */
typedef struct {
    const struct codec_family *fam;
    int bits;         /* quant b, ms b */
    int gran;
    int options;      /* OPT_* requested (ms: signedness decided per tensor unless forced) */
    int value_type, value_bits;
    int index_coding; /* IDX_AUTO unless forced */
    double fraction;  /* kept fraction (families with `fraction`) */
    double alpha;     /* randtopk */
    int ms_sign;
    int lr_iters, lr_warm; /* lowrank: power iterations, start from the previous factors */
} codec_params;

/* lowrank's sender state (lowrank.c): the previous frame's Q (rows x rank) */
typedef struct {
    float *q;
    int64_t cap, rows, rank;
} lowrank_warm;

/* What encode and decode work with besides the tensor. */
typedef struct {
    const pz_codec_kernels *k;
    codec_scratch *sc;
    lowrank_warm *warm; /* an encoder's low-rank start (NULL when decoding) */
} codec_io;

typedef struct codec_family {
    const char *name;      /* in a spec ("q" is followed by the width: q1..q8) */
    uint8_t wire_id;       /* FORMAT.md's codec byte: fixed forever, never reused */
    const char *usage;     /* the spec's form, for help */
    const char *help;      /* one line: what it is and what it costs */
    int lossless;          /* decodes to exactly the input */
    int plain_payload;     /* the payload is one plain array (the CRC is checked while converting) */
    int checks_finite;     /* encode refuses a NaN or infinity in its input within its own passes
                            * (PZ_ERR_ARG): pz_codec_encode counts them only when it fails */
    int fraction;          /* the spec starts with a kept fraction: name:F,... (2: with a count, lowrank:R) */
    unsigned fields;       /* PZ_FRAME_USES_*: the header fields its frames set */
    int option_mask;       /* OPT_* bits its frames may carry */
    /* defaults for a spec that names this family; 0 when `name` is not its */
    int (*match)(const char *name, codec_params *p);
    /* one option item (val NULL for a bare word); an error names the spec */
    pz_status (*option)(codec_params *p, const char *key, const char *val, const char *spec);
    pz_status (*finish)(codec_params *p, const char *spec); /* checks across options, or NULL */
    void (*canonical)(const codec_params *p, char *buf, size_t cap);
    size_t (*max_body)(const codec_params *p, const units *u);
    /* writes the body (at most cap bytes) and the family's header fields
     * (bits, options, k, seed, value type, index coding); *have_crc = 1 when
     * it computed the body's CRC-32C into *body_crc while writing */
    pz_status (*encode)(const codec_params *p, const codec_io *io, const float *x, const units *u, uint64_t seed, uint8_t *body,
                        size_t cap, size_t *body_len, frame_header *h, uint32_t *body_crc, int *have_crc);
    /* the header parameters this family's frames may carry (PZ_FRAME_PARAM) */
    pz_status (*check)(const frame_header *h);
    pz_status (*decode)(const frame_header *h, const codec_io *io, const units *u, float *x);
} codec_family;

/* registry.c */
extern const codec_family *const codec_families[];
extern const int codec_family_count;
const codec_family *codec_family_by_wire(int wire_id);
const codec_family *codec_family_by_name(const char *name, codec_params *p);
const char *codec_wire_name(int wire_id);

/* the families (one file each) */
extern const codec_family codec_none, codec_fp16, codec_bf16; /* half.c */
extern const codec_family codec_quant;                         /* quant.c */
extern const codec_family codec_topk, codec_randk, codec_randtopk; /* topk.c */
extern const codec_family codec_ms;                            /* ms.c */
extern const codec_family codec_lowrank;                       /* lowrank.c */

/* spec.c: option helpers shared by the families (names: vocab.h) */
pz_status spec_bad(const char *spec, const char *what);
/* per=tensor|sample (|channel when allowed) */
pz_status spec_per(codec_params *p, const char *val, int channel_ok, const char *spec);
/* values=fp32|fp16|bf16 (|q1..q8 when allowed) */
pz_status spec_values(codec_params *p, const char *val, int quant_ok, const char *spec);
/* a value type's canonical name: fp32, fp16, bf16, qB */
void values_name(const codec_params *p, char *buf, size_t cap);
/* a bare option word of frame_options among the bits in mask ("sym", "asym",
 * "by=value", ...): sets or clears its bit and returns 1; 0 when it is none */
int spec_option_word(codec_params *p, const char *key, const char *val, int mask);
/* the spec word for bit as set or clear in options ("sym" / "asym") */
const char *option_word(int options, int bit);
pz_status spec_unknown_option(const char *spec, const char *name, const char *key, const char *val);

#endif
