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
    int lr_iters, lr_warm; /* lowrank: power iterations, start from the previous factors; rvq: k-means iterations, likewise */
    int vq_stages;         /* rvq: codebooks (its vector length is the spec's count, in fraction) */
} codec_params;

/* A family's sender state kept between frames (keeps_state), as bytes the
 * family lays out: it travels as is in pz_codec_state_save (checked by
 * state_check when loaded), is freed with the codec. len 0: none yet. */
typedef struct {
    uint8_t *b;
    size_t len, cap;
} codec_state;
/* b grown to hold n bytes (contents kept); NULL when out of memory */
uint8_t *codec_state_reserve(codec_state *s, size_t n);

/* What encode and decode work with besides the tensor. */
typedef struct {
    const pz_codec_kernels *k;
    codec_scratch *sc;
    codec_state *state; /* an encoder's own state (keeps_state; NULL when decoding) */
} codec_io;

/* What a spec takes after "name:" before its options. */
typedef enum {
    CODEC_ARG_NONE = 0,
    CODEC_ARG_FRACTION, /* a number in (lo, hi] */
    CODEC_ARG_COUNT,    /* a whole number in [lo, hi] */
} codec_arg_kind;
typedef struct {
    codec_arg_kind kind;
    const char *what;    /* "kept fraction", "rank" */
    double lo, hi;
    const char *example; /* "topk:0.1" */
} codec_arg;

typedef struct codec_family {
    const char *name;      /* in a spec ("q" is followed by the width: q1..q8) */
    uint8_t wire_id;       /* FORMAT.md's codec byte: fixed forever, never reused */
    const char *usage;     /* the spec's form, for help */
    const char *help;      /* one line: what it is and what it costs */
    int lossless;          /* decodes to exactly the input */
    int plain_payload;     /* the payload is one plain array (the CRC is checked while converting) */
    int checks_finite;     /* encode refuses a NaN or infinity in its input within its own passes
                            * (PZ_ERR_ARG): pz_codec_encode counts them only when it fails */
    codec_arg arg;         /* the spec's first argument (name:F,... / name:R,...), in codec_params.fraction */
    const char *width_name; /* a spec names it as this + its code width ("q": q1..q8); NULL: by name */
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
    /* the option bits a spec fixes in its frames (NULL: all of option_mask;
     * fewer where the family decides a bit per tensor) */
    int (*fixed_options)(const codec_params *p);
    /* a sender state kept between frames, in io->state (NULL: never) */
    int (*keeps_state)(const codec_params *p);
    pz_status (*state_check)(const uint8_t *b, size_t len); /* a loaded state's bytes, before use */
    /* inspect's line of this family's parameters: its label and text (NULL:
     * the line from `fields`, frame.c) */
    const char *detail_label;
    void (*detail)(const frame_header *h, char *buf, size_t cap);
} codec_family;

/* registry.c */
extern const codec_family *const codec_families[];
extern const int codec_family_count;
const codec_family *codec_family_by_wire(int wire_id);
const codec_family *codec_family_by_name(const char *name, codec_params *p);
const char *codec_wire_name(int wire_id);
/* the family whose frames carry the tensor as it is (fp32): evaluation's
 * and a missing boundary's codec, AQ-SGD's warm-up frames */
extern const codec_family *const codec_family_plain;
/* "none, fp16, bf16, q1..q8, topk, ...": every family's spec name, for errors */
void codec_family_names(char *buf, size_t cap);

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
