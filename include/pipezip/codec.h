/* SPDX-License-Identifier: MIT */
/* pipezip/codec.h — compressing tensors into frames and back.
 *
 * A codec is named by a spec string (grammar in docs/CODECS.md and
 * `pipezip codec --help`): "none", "fp16", "bf16", "q4", "q8:sym,stoch",
 * "topk:0.1", "randk:0.1,unbiased", "randtopk:0.01,alpha=0.1",
 * "ms:0.01,bits=2", "ef(topk:0.1)", "ef21(q4)", "aqsgd(q2)", ...
 * A frame (docs/FORMAT.md) decodes on its own: codec, parameters, shape,
 * section lengths and a CRC-32C checksum travel with it, and a decoder
 * rejects anything malformed with a distinct error, never a crash.
 *
 * Stateful codecs (ef, ef21, aqsgd) keep their state in the pz_codec object:
 * the sender encodes with one object, the receiver decodes with another made
 * from the same spec, and the two stay in sync frame by frame. */
#ifndef PIPEZIP_CODEC_H
#define PIPEZIP_CODEC_H

#include <stddef.h>
#include <stdint.h>
#include "pipezip/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PZ_FRAME_HEADER_BYTES 64
#define PZ_FRAME_MAX_DIMS 4

/* Why a frame was rejected (pz_frame_error_of() after a PZ_ERR_FORMAT). */
typedef enum {
    PZ_FRAME_OK = 0,
    PZ_FRAME_TRUNCATED,  /* shorter than a header */
    PZ_FRAME_MAGIC,      /* not a pipezip frame */
    PZ_FRAME_VERSION,    /* a version this build cannot read */
    PZ_FRAME_CHECKSUM,   /* CRC-32C mismatch */
    PZ_FRAME_LENGTH,     /* header's payload length != the bytes given */
    PZ_FRAME_SHAPE,      /* impossible shape */
    PZ_FRAME_PARAM,      /* unknown codec or out-of-range parameter */
    PZ_FRAME_PAYLOAD,    /* sections inconsistent with the header */
    PZ_FRAME_CAPACITY,   /* the destination is too small */
    PZ_FRAME_STATE,      /* a stateful frame the receiver's state cannot take */
    PZ_FRAME_CODEC,      /* a frame of another codec than the (stateful or strict) receiver's */
} pz_frame_error;

PZ_API const char *pz_frame_error_name(pz_frame_error e);
/* The reason of the last frame rejected on this thread. */
PZ_API pz_frame_error pz_frame_error_of(void);

typedef struct pz_codec pz_codec;

/* What one encode produced. */
typedef struct {
    uint64_t elements;
    uint64_t bytes;           /* the whole frame, header included */
    double bits_per_element;  /* 8 * bytes / elements */
    double rel_error;         /* ||x_hat - x|| / ||x|| (0 for x = 0) */
} pz_codec_stats;

/* Parse a spec; *codec is NULL on error (PZ_ERR_ARG, message names the spec). */
PZ_API pz_status pz_codec_create(pz_codec **codec, const char *spec);
PZ_API void pz_codec_free(pz_codec *codec);
/* The canonical spec string (every option spelled out). */
PZ_API const char *pz_codec_spec(const pz_codec *codec);
/* 1 when the codec keeps state from frame to frame: ef/ef21/aqsgd, and
 * lowrank's warm start (the sender's; its frames decode on their own). */
PZ_API int pz_codec_is_stateful(const pz_codec *codec);
/* 1 when a frame decodes to exactly the input (none). */
PZ_API int pz_codec_is_lossless(const pz_codec *codec);
/* The canonical spec of the stateless base codec, what evaluation uses
 * (test samples have no per-sample state and must not move the training
 * state): "ef(topk:0.1),per=sample" -> "topk:0.1,per=sample,...". */
PZ_API void pz_codec_base_spec(const pz_codec *codec, char *buf, size_t cap);
/* A new codec: c's stateless base as a value (the codec evaluation runs,
 * whatever c's wrapper), with the entropy stage c has; fresh state. */
PZ_API pz_status pz_codec_create_base(pz_codec **out, const pz_codec *c);

/* A spec per boundary from one argument: "SPEC" for every boundary, then
 * "N=SPEC" overrides for boundary N (1-based), e.g. "q8,2=ms:0.01,bits=2"
 * (an item ends at a comma followed by "N=": specs keep their commas).
 * Boundaries not named get the first item, or "none". `what` names the
 * argument in errors (e.g. "--fwd"). */
#define PZ_CODEC_SPEC_MAX 256
PZ_API pz_status pz_codec_parse_list(const char *arg, int boundaries, char (*specs)[PZ_CODEC_SPEC_MAX], const char *what);

/* Every codec and wrapper with its spec form and a line of help, generated
 * from the codec table; returns the length it needed (as snprintf). */
PZ_API size_t pz_codec_help(char *buf, size_t cap);
/* Seed for the codec's own randomness (stochastic rounding, randk positions,
 * randtopk draws); each encode advances it. Default 0x5EED. */
PZ_API void pz_codec_set_seed(pz_codec *codec, uint64_t seed);
/* Per-sample state (aqsgd, ef per=sample) is a row per sample id, ids in
 * [0, max_samples): a frame naming a larger id is rejected (a corrupt id
 * must not make the receiver allocate without bound). Default 2^24; set it
 * to the dataset's size. */
PZ_API void pz_codec_set_max_samples(pz_codec *codec, uint32_t max_samples);
/* aqsgd: warm-up mode sends x uncompressed and fills the buffers. */
PZ_API void pz_codec_set_warmup(pz_codec *codec, int on);
/* A strict receiver decodes only frames its own spec writes (family, width,
 * units, options, value type, kept count, wrapper) and refuses others with
 * PZ_FRAME_CODEC naming both; a stateful receiver (ef21, aqsgd) always is.
 * Off by default: a stateless receiver decodes any frame. */
PZ_API void pz_codec_set_strict(pz_codec *codec, int on);

/* The largest frame encoding a tensor of this shape can produce (with ids
 * when the codec needs them). */
PZ_API size_t pz_codec_max_frame_bytes(const pz_codec *codec, int ndim, const int64_t *shape);

/* Encode x (shape[0..ndim)) into frame (capacity cap), *len = its size.
 * ids: one sample id per shape[0] (aqsgd and per-sample ef need them; others
 * ignore them, NULL allowed). stats may be NULL. */
PZ_API pz_status pz_codec_encode(pz_codec *codec, const float *x, int ndim, const int64_t *shape, const uint32_t *ids,
                          uint8_t *frame, size_t cap, size_t *len, pz_codec_stats *stats);

/* Decode a frame into x (capacity cap floats); *ndim and shape get the
 * tensor's shape (shape needs 4 entries). Stateful codecs update the
 * receiver's state and return what the receiver uses (ef21: A; aqsgd: m). */
PZ_API pz_status pz_codec_decode(pz_codec *codec, const uint8_t *frame, size_t len, float *x, size_t cap,
                          int *ndim, int64_t *shape);

/* A codec's state (EF/EF21 buffers, AQ-SGD rows, its random stream) as a
 * malloc'd blob for checkpoints, and back into a codec of the same spec. */
PZ_API pz_status pz_codec_state_save(const pz_codec *codec, uint8_t **blob, size_t *len);
PZ_API pz_status pz_codec_state_load(pz_codec *codec, const uint8_t *blob, size_t len);

/* CRC-32C (Castagnoli, reflected, as frames use it) of data[0..n). */
PZ_API uint32_t pz_crc32c(const void *data, size_t n);

/* ---- frames on their own ---------------------------------------------------- */
typedef struct {
    int codec_id;
    const char *codec_name;
    int ndim;
    int64_t shape[PZ_FRAME_MAX_DIMS];
    int64_t elements;
    int bits, granularity, options, value_type, index_coding, value_bits, wrapper;
    uint32_t k;
    uint64_t seed;
    uint64_t payload_bytes, frame_bytes;
    uint32_t checksum;
    int has_ids;
    /* the enumerated fields by name, from the format's tables (never NULL
     * for a frame that inspects ok) */
    const char *granularity_name, *value_type_name, *index_coding_name, *wrapper_name;
    unsigned fields;  /* PZ_FRAME_USES_*: the header fields this codec family sets */
    int option_mask;  /* the option bits this codec family's frames may carry */
    /* the entropy stage: "zstd" when the codec's sections are stored
     * compressed (FORMAT.md), else NULL; the sections' bytes before it and
     * as stored (equal without the stage) */
    const char *entropy_name;
    uint64_t body_bytes, stored_body_bytes;
    /* the family's parameters in a line, as `pipezip codec inspect` prints
     * them: a label ("quantization", "kept", "rank"; NULL when the family
     * has none) and the text ("4 bits, asymmetric, ... per tensor") */
    const char *detail_label;
    char detail[192];
} pz_frame_info;

/* Which header fields a family sets (pz_frame_info.fields). */
#define PZ_FRAME_USES_BITS 1u         /* a code width (quantization, MS) */
#define PZ_FRAME_USES_GRANULARITY 2u  /* units: per tensor, sample, channel or token */
#define PZ_FRAME_USES_K 4u            /* kept elements per unit */
#define PZ_FRAME_USES_SEED 8u         /* positions drawn from a seed */
#define PZ_FRAME_USES_VALUES 16u      /* a values section of some value type */
#define PZ_FRAME_USES_INDEX 32u       /* a positions section of some index coding */
#define PZ_FRAME_USES_RANK 64u        /* k is a rank: the count of factors of a matrix */

/* ---- the frame vocabulary ---------------------------------------------------
 * Every enumerated header field, its wire values and their names, read from
 * the tables that define them (docs/FORMAT.md): what inspect prints, what a
 * spec accepts and what the Python package shows are the same names. */
typedef enum {
    PZ_FIELD_CODEC = 0,     /* byte 5: the codec family ("quant", "topk", ...) */
    PZ_FIELD_GRANULARITY,   /* byte 25: tensor, sample, channel, token */
    PZ_FIELD_OPTION,        /* byte 26, one bit each: sym, stoch, signed, unbiased, by=value */
    PZ_FIELD_VALUE_TYPE,    /* byte 27: fp32, fp16, bf16, quantized */
    PZ_FIELD_INDEX_CODING,  /* byte 28: none, bitmap, delta */
    PZ_FIELD_WRAPPER,       /* byte 30: none, ef, ef21, aqsgd, aqsgd-warmup */
} pz_frame_field;
#define PZ_FRAME_FIELD_COUNT 6
/* "codec", "granularity", ...; NULL for a field that does not exist. */
PZ_API const char *pz_frame_field_name(pz_frame_field field);
/* The name of a field's wire value (an option: of that one bit), NULL when
 * the format defines none. */
PZ_API const char *pz_frame_value_name(pz_frame_field field, int value);
/* The wire values the format defines for a field, ascending: returns how
 * many there are and writes the first cap of them (values may be NULL). */
PZ_API int pz_frame_field_values(pz_frame_field field, int *values, int cap);
/* The options a family may carry (mask), each said as set or clear in
 * options: "asymmetric, nearest rounding". */
PZ_API void pz_frame_options_text(int options, int mask, char *buf, size_t cap);

/* Validate a frame's header (its family's parameters, the decoding limit)
 * and checksum and describe it; pz_frame_validate checks the payload too. */
PZ_API pz_status pz_frame_inspect(const uint8_t *frame, size_t len, pz_frame_info *info);
/* Decode any frame its receiver needs no state for: a stateless codec's,
 * an ef frame, an aqsgd warm-up frame. An ef21 or aqsgd frame is refused
 * (PZ_ERR_FORMAT, PZ_FRAME_CODEC, naming the wrapper): it carries a difference the receiver
 * adds to its state; decode that stream with a pz_codec of its spec. */
/* Every check a decode makes (header, parameters, payload), without a
 * destination: what `pipezip codec inspect` reports as ok. */
PZ_API pz_status pz_frame_validate(const uint8_t *frame, size_t len);
/* Decoders refuse a frame declaring more elements than this before they
 * allocate or write anything: 2^28 (1 GiB of floats) unless set; 0 sets
 * the default again. Process-wide; set it before decoding starts. */
#define PZ_CODEC_DECODE_LIMIT ((uint64_t)1 << 28)
PZ_API void pz_codec_set_decode_limit(uint64_t max_elements);
PZ_API uint64_t pz_codec_decode_limit(void);
PZ_API pz_status pz_frame_decode(const uint8_t *frame, size_t len, float *x, size_t cap, int *ndim, int64_t *shape);

#ifdef __cplusplus
}
#endif
#endif
