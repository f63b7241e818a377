/* SPDX-License-Identifier: MIT */
/* half.c — the families that keep every element as a plain array: none
 * (float32, bit-exact), fp16 and bf16 (round to nearest even). Conversion
 * and CRC-32C in one pass per chunk of 64k elements (the output of one
 * stays in L2 for its CRC), chunks over OpenMP threads for large tensors. */
#include "family.h"

#include <stdlib.h>
#include <string.h>

extern const codec_family codec_none, codec_fp16, codec_bf16; /* listed in registry.c */

#define PARALLEL_MIN (1 << 20)
enum { BIG = 65536 };

static int width_of(int wire_id) { return wire_id == 0 ? 4 : 2; }

static pz_status encode_plain(const codec_family *fam, const codec_io *io, const float *x, const units *u, uint8_t *body,
                              size_t *body_len, uint32_t *body_crc, int *have_crc) {
    const pz_codec_kernels *k = io->k;
    const int64_t n = u->n;
    const int64_t chunks = (n + BIG - 1) / BIG;
    const int width = width_of(fam->wire_id), bf16 = fam == &codec_bf16;
    uint32_t crc_small[CRC_SLOTS_SMALL], *crcs = crc_slots(crc_small, chunks);
    if (!crcs) return PZ_ERR_NOMEM;
#pragma omp parallel for schedule(static) if (n > PARALLEL_MIN)
    for (int64_t ci = 0; ci < chunks; ci++) {
        const int64_t c0 = ci * BIG;
        const size_t m = (size_t)(n - c0 < BIG ? n - c0 : BIG);
        uint8_t *o = body + (size_t)width * c0; /* 2-aligned: the body starts at 64 + 4 * ids */
        if (width == 4) {
            memcpy(o, x + c0, m * 4);
            crcs[ci] = k->crc32c(0, o, m * 4);
        } else {
            crcs[ci] = k->half_encode(x + c0, m, (uint16_t *)(void *)o, bf16);
        }
    }
    *body_crc = crc_join_chunks(crcs, chunks, (size_t)BIG * width, (size_t)(n - (chunks - 1) * BIG) * width);
    *have_crc = 1;
    *body_len = (size_t)n * width;
    crc_slots_free(crcs, crc_small);
    return PZ_OK;
}

static pz_status decode_plain(const codec_family *fam, const frame_header *h, const codec_io *io, const units *u, float *x) {
    const pz_codec_kernels *k = io->k;
    const int64_t n = u->n;
    const int width = width_of(fam->wire_id), bf16 = fam == &codec_bf16;
    if (h->body_len != (uint64_t)n * width)
        return frame_error(PZ_FRAME_PAYLOAD, "a %s payload of this shape has %zu bytes, not %llu", fam->name, (size_t)n * width,
                           (unsigned long long)h->body_len);
    /* each chunk's CRC taken while its bytes are in cache; the frame is
     * refused if they do not join to the header's (the destination then
     * holds garbage) */
    const int64_t chunks = (n + BIG - 1) / BIG;
    uint32_t crc_small[CRC_SLOTS_SMALL], *crcs = crc_slots(crc_small, chunks);
    if (!crcs) return PZ_ERR_NOMEM;
#pragma omp parallel for schedule(static) if (n > PARALLEL_MIN)
    for (int64_t ci = 0; ci < chunks; ci++) {
        const int64_t c0 = ci * BIG;
        const size_t m = (size_t)(n - c0 < BIG ? n - c0 : BIG);
        const uint8_t *in = h->body + (size_t)width * c0; /* 2-aligned for halves */
        if (width == 4) {
            if (h->crc_deferred) crcs[ci] = k->crc32c(0, in, m * 4);
            memcpy(x + c0, in, m * 4);
        } else {
            /* the fused conversion is no slower than the plain one: its
             * CRC comes along even for a frame verified already */
            crcs[ci] = k->half_decode((const uint16_t *)(const void *)in, m, x + c0, bf16);
        }
    }
    pz_status st = PZ_OK;
    if (h->crc_deferred)
        st = frame_check_crc(h, chunks ? crc_join_chunks(crcs, chunks, (size_t)BIG * width, (size_t)(n - (chunks - 1) * BIG) * width) : 0);
    crc_slots_free(crcs, crc_small);
    return st;
}

static size_t max_body(const codec_params *p, const units *u) { return (size_t)u->n * width_of(p->fam->wire_id); }

static pz_status check(const frame_header *h) {
    if (h->bits || h->gran || h->options || h->value_type || h->index_coding || h->k)
        return frame_error(PZ_FRAME_PARAM, "%s takes no parameters", codec_wire_name(h->codec));
    return PZ_OK;
}

static void canonical(const codec_params *p, char *buf, size_t cap) { snprintf(buf, cap, "%s", p->fam->name); }

static pz_status no_option(codec_params *p, const char *key, const char *val, const char *spec) {
    return spec_bad(spec, "none, fp16 and bf16 take no options");
}

#define PLAIN_FAMILY(NAME, WIRE, USAGE, HELP, LOSSLESS)                                                                   \
    static int match_##NAME(const char *name, codec_params *p) { return !strcmp(name, #NAME) || (WIRE == 0 && !strcmp(name, "fp32")); } \
    static pz_status encode_##NAME(const codec_params *p, const codec_io *io, const float *x, const units *u, uint64_t seed,  \
                                   uint8_t *body, size_t cap, size_t *body_len, frame_header *h, uint32_t *body_crc, int *have_crc) { \
        h->gran = 0;                                                                                                      \
        return encode_plain(&codec_##NAME, io, x, u, body, body_len, body_crc, have_crc);                                 \
    }                                                                                                                     \
    static pz_status decode_##NAME(const frame_header *h, const codec_io *io, const units *u, float *x) {                  \
        return decode_plain(&codec_##NAME, h, io, u, x);                                                                  \
    }                                                                                                                     \
    const codec_family codec_##NAME = {.name = #NAME, .wire_id = WIRE, .usage = USAGE, .help = HELP, .lossless = LOSSLESS, \
                                       .plain_payload = 1, .match = match_##NAME, .option = no_option, .canonical = canonical, \
                                       .max_body = max_body, .encode = encode_##NAME, .check = check, .decode = decode_##NAME};

PLAIN_FAMILY(none, 0, "none (or fp32)", "float32, bit-exact: 32 bits per element", 1)
PLAIN_FAMILY(fp16, 1, "fp16", "IEEE binary16, round to nearest even: 16 bits per element", 0)
PLAIN_FAMILY(bf16, 2, "bf16", "bfloat16 (the upper half of a float32, round to nearest even): 16 bits per element", 0)
