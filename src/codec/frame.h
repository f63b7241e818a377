/* SPDX-License-Identifier: MIT */
/* frame.h — the frame of docs/FORMAT.md: the 64-byte header's fields (their
 * wire values), writing and parsing it, and the distinct errors a decoder
 * returns. Knows nothing of what a codec does with its payload. */
#ifndef PZ_CODEC_FRAME_H
#define PZ_CODEC_FRAME_H

#include "pipezip/codec.h"
#include "base/base.h"

/* Header field values. Each is a wire value (FORMAT.md), never an order. */
enum { GRAN_TENSOR = 0, GRAN_SAMPLE = 1, GRAN_CHANNEL = 2, GRAN_TOKEN = 3 };
enum { OPT_SYM = 1, OPT_STOCH = 2, OPT_SIGNED = 4, OPT_UNBIASED = 8, OPT_BYVALUE = 16, OPT_ROT = 32, OPT_BYTES = 64, OPT_ALL = 127 };
enum { VAL_F32 = 0, VAL_F16 = 1, VAL_BF16 = 2, VAL_QUANT = 3 };
enum { IDX_NONE = 0, IDX_BITMAP = 1, IDX_DELTA = 2, IDX_AUTO = 3 /* a spec's choice, never on the wire */ };
enum { WRAP_NONE = 0, WRAP_EF = 1, WRAP_EF21 = 2, WRAP_AQSGD = 3, WRAP_AQSGD_WARMUP = 4 };
enum { FLAG_IDS = 1, FLAG_ZSTD = 2, FLAG_HUF = 4, FLAG_ALL = 7, FLAG_ENTROPY = FLAG_ZSTD | FLAG_HUF };

struct codec_family;

/* A frame's header, parsed and validated. */
typedef struct {
    int codec, ndim, flags;  /* codec: the family's wire id */
    const struct codec_family *fam; /* parsed frames: the family of that id */
    int64_t dims[4];
    int64_t n;
    int bits, gran, options, value_type, index_coding, value_bits, wrapper;
    uint32_t k;
    uint64_t seed, payload_len;
    uint32_t crc;
    const uint32_t *ids;   /* into the frame when flags & FLAG_IDS (may be unaligned: read with memcpy) */
    int crc_deferred;      /* a plain-array payload: the decoder checks the CRC chunk by chunk */
    uint32_t crc_pre;      /* then: the CRC-32C of header bytes 0..55 and the id section */
    const uint8_t *body;   /* the codec's sections (after entropy_unpack when flags & FLAG_ZSTD) */
    uint64_t body_len;
    uint32_t raw_len;      /* FLAG_ZSTD, FLAG_HUF: the sections' length before the entropy stage (bytes 36..39) */
} frame_header;

/* The entropy stage (entropy.c, FORMAT.md): the most codec-section bytes a
 * frame of n elements may declare before it (more than any family writes) */
#define ENTROPY_RAW_MAX(n) (16 * (uint64_t)(n) + 64)

/* Records the reason (pz_frame_error_of) and returns PZ_ERR_FORMAT. */
pz_status frame_error(pz_frame_error e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Writes the header; the checksum covers bytes 0..55 and the payload, which
 * must already be in place after the header, or whose CRC-32C the encoder
 * computed while writing it (payload_crc, when have_payload_crc). */
void frame_write_header_crc(uint8_t *f, const frame_header *h, uint32_t payload_crc, int have_payload_crc);

/* Validates the header's fields, the length and the checksum. For codecs
 * whose payload is one plain array (none, fp16, bf16) the payload's checksum
 * is left to the decoder, which verifies it chunk by chunk while the bytes
 * are in cache (h->crc_deferred); frame_verify_deferred() does it in one
 * pass for callers that do not decode. */
pz_status frame_parse(const uint8_t *f, size_t len, frame_header *h);
pz_status frame_verify_deferred(const frame_header *h);
/* PZ_FRAME_CAPACITY when the frame declares more elements than the
 * decoding limit (pz_codec_set_decode_limit; codec.c) */
pz_status frame_check_limit(const frame_header *h);
pz_status frame_check_crc(const frame_header *h, uint32_t body_crc);

/* The CRC-32C of a body written in chunks of `chunk_bytes` (the last may be
 * `last_bytes`) from the chunks' own CRCs (computed by the writers while each
 * chunk was in cache, possibly on several threads), joined in order. */
uint32_t crc_join_chunks(const uint32_t *crcs, int64_t count, size_t chunk_bytes, size_t last_bytes);

/* Slots for `count` chunk CRCs: a caller's small array when it is enough,
 * else allocated (NULL when out of memory, with the error set); give them
 * back with crc_slots_free. */
#define CRC_SLOTS_SMALL 64
uint32_t *crc_slots(uint32_t small[CRC_SLOTS_SMALL], int64_t count);
void crc_slots_free(uint32_t *slots, const uint32_t small[CRC_SLOTS_SMALL]);

#endif
