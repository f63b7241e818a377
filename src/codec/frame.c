/* SPDX-License-Identifier: MIT */
/* frame.c — the frame header of docs/FORMAT.md: writing it, parsing and
 * validating it (every field, the length, the CRC-32C), and inspecting a
 * frame. */
#include "base/wire.h"
#include "frame.h"
#include "family.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local pz_frame_error last_frame_error;

pz_frame_error pz_frame_error_of(void) { return last_frame_error; }

const char *pz_frame_error_name(pz_frame_error e) {
    static const char *const names[] = {"ok", "truncated", "bad magic", "unsupported version", "checksum mismatch",
                                        "length mismatch", "impossible shape", "bad parameter", "bad payload",
                                        "destination too small", "state mismatch", "codec mismatch"};
    return (unsigned)e < sizeof names / sizeof *names ? names[e] : "unknown";
}

pz_status frame_error(pz_frame_error e, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    last_frame_error = e;
    return pz_fail(PZ_ERR_FORMAT, "bad frame (%s): %s", pz_frame_error_name(e), msg);
}

static const uint8_t MAGIC[4] = {'P', 'Z', 'F', 'R'};

/* Writes the header; the checksum covers bytes 0..55 and the payload, which
 * must already be in place after the header (or whose CRC-32C the encoder
 * computed while writing it: payload_crc, when have_payload_crc). */
void frame_write_header_crc(uint8_t *f, const frame_header *h, uint32_t payload_crc, int have_payload_crc) {
    memset(f, 0, PZ_FRAME_HEADER_BYTES);
    memcpy(f, MAGIC, 4);
    f[4] = 1;
    f[5] = (uint8_t)h->codec;
    f[6] = (uint8_t)h->ndim;
    f[7] = (uint8_t)h->flags;
    for (int i = 0; i < h->ndim; i++) pz_put_u32(f + 8 + 4 * i, (uint32_t)h->dims[i]);
    f[24] = (uint8_t)h->bits;
    f[25] = (uint8_t)h->gran;
    f[26] = (uint8_t)h->options;
    f[27] = (uint8_t)h->value_type;
    f[28] = (uint8_t)h->index_coding;
    f[29] = (uint8_t)h->value_bits;
    f[30] = (uint8_t)h->wrapper;
    pz_put_u32(f + 32, h->k);
    pz_put_u64(f + 40, h->seed);
    pz_put_u64(f + 48, h->payload_len);
    const pz_codec_kernels *k = pz_codec_kernels_best();
    uint32_t crc = k->crc32c(0, f, 56);
    if (have_payload_crc) crc = pz_crc32c_combine(crc, payload_crc, h->payload_len);
    else crc = k->crc32c(crc, f + PZ_FRAME_HEADER_BYTES, h->payload_len);
    pz_put_u32(f + 56, crc);
}

pz_status frame_parse(const uint8_t *f, size_t len, frame_header *h) {
    memset(h, 0, sizeof *h);
    if (!f || len < PZ_FRAME_HEADER_BYTES)
        return frame_error(PZ_FRAME_TRUNCATED, "%zu bytes, a frame has at least %d", f ? len : 0, PZ_FRAME_HEADER_BYTES);
    if (memcmp(f, MAGIC, 4)) return frame_error(PZ_FRAME_MAGIC, "magic %02x %02x %02x %02x, expected 'PZFR'", f[0], f[1], f[2], f[3]);
    if (f[4] != 1) return frame_error(PZ_FRAME_VERSION, "version %d, this build reads version 1", f[4]);
    h->payload_len = pz_get_u64(f + 48);
    if (h->payload_len != (uint64_t)(len - PZ_FRAME_HEADER_BYTES))
        return frame_error(PZ_FRAME_LENGTH, "header announces %llu payload bytes, %zu are present",
                           (unsigned long long)h->payload_len, len - PZ_FRAME_HEADER_BYTES);
    const pz_codec_kernels *k = pz_codec_kernels_best();
    h->crc = pz_get_u32(f + 56);
    uint32_t crc = k->crc32c(0, f, 56);
    const codec_family *fam = codec_family_by_wire(f[5]);
    const int defer = fam && fam->plain_payload && !(f[7] & ~FLAG_IDS); /* an entropy-coded payload is checked whole */
    if (!defer) {
        crc = k->crc32c(crc, f + PZ_FRAME_HEADER_BYTES, h->payload_len);
        if (crc != h->crc) return frame_error(PZ_FRAME_CHECKSUM, "CRC-32C is %08x, header says %08x", crc, h->crc);
    }
    h->codec = f[5], h->ndim = f[6], h->flags = f[7];
    if (h->ndim < 1 || h->ndim > 4) return frame_error(PZ_FRAME_SHAPE, "ndim %d is not in 1..4", h->ndim);
    h->n = 1;
    for (int i = 0; i < 4; i++) {
        const uint32_t d = pz_get_u32(f + 8 + 4 * i);
        if (i >= h->ndim) {
            if (d) return frame_error(PZ_FRAME_SHAPE, "dimension %d is %u beyond ndim %d", i, d, h->ndim);
            continue;
        }
        h->dims[i] = d;
        h->n *= d;
        if (h->n > ((int64_t)1 << 31)) return frame_error(PZ_FRAME_SHAPE, "more than 2^31 elements");
    }
    h->bits = f[24], h->gran = f[25], h->options = f[26], h->value_type = f[27];
    h->index_coding = f[28], h->value_bits = f[29], h->wrapper = f[30];
    h->k = pz_get_u32(f + 32);
    h->seed = pz_get_u64(f + 40);
    if (!fam) return frame_error(PZ_FRAME_PARAM, "unknown codec id %d", h->codec);
    h->fam = fam;
    if (h->flags & ~FLAG_ALL) return frame_error(PZ_FRAME_PARAM, "unknown flags 0x%02x", h->flags);
    if (!pz_frame_value_name(PZ_FIELD_WRAPPER, h->wrapper)) return frame_error(PZ_FRAME_PARAM, "unknown wrapper %d", h->wrapper);
    h->raw_len = pz_get_u32(f + 36);
    if (f[31] || (!(h->flags & FLAG_ENTROPY) && h->raw_len) || pz_get_u32(f + 60)) return frame_error(PZ_FRAME_PARAM, "reserved bytes are not zero");
    if ((h->flags & FLAG_ENTROPY) == FLAG_ENTROPY) return frame_error(PZ_FRAME_PARAM, "flags 0x%02x: both entropy stages (ZSTD and HUF)", h->flags);
    if ((h->flags & FLAG_ENTROPY) && (h->raw_len == 0 || (uint64_t)h->raw_len > ENTROPY_RAW_MAX(h->n)))
        return frame_error(PZ_FRAME_PARAM, "the entropy stage declares %u bytes of codec sections, not in 1..%llu for %lld elements",
                           h->raw_len, (unsigned long long)ENTROPY_RAW_MAX(h->n), (long long)h->n);
    if (h->options & ~OPT_ALL) return frame_error(PZ_FRAME_PARAM, "unknown option bits 0x%02x", h->options);
    if (!pz_name_of(frame_granularities, h->gran)) return frame_error(PZ_FRAME_PARAM, "granularity %d is not 0, 1, 2 or 3", h->gran);
    if (!pz_name_of(frame_value_types, h->value_type)) return frame_error(PZ_FRAME_PARAM, "value type %d is not 0..3", h->value_type);
    if (!pz_name_of(frame_index_codings, h->index_coding)) return frame_error(PZ_FRAME_PARAM, "index coding %d is not 0..2", h->index_coding);
    if ((h->value_type == VAL_QUANT) != (h->value_bits != 0) || h->value_bits > 8)
        return frame_error(PZ_FRAME_PARAM, "value bits %d do not fit value type %d", h->value_bits, h->value_type);
    const uint8_t *p = f + PZ_FRAME_HEADER_BYTES;
    uint64_t left = h->payload_len;
    if (h->flags & FLAG_IDS) {
        const uint64_t need = 4 * (uint64_t)h->dims[0];
        if (left < need) return frame_error(PZ_FRAME_PAYLOAD, "the sample-id section needs %llu bytes, the payload has %llu",
                                            (unsigned long long)need, (unsigned long long)left);
        h->ids = (const uint32_t *)p;
        p += need, left -= need;
    }
    h->body = p;
    h->body_len = left;
    if (defer) {
        h->crc_deferred = 1;
        h->crc_pre = k->crc32c(crc, f + PZ_FRAME_HEADER_BYTES, (size_t)(p - (f + PZ_FRAME_HEADER_BYTES)));
    }
    return PZ_OK;
}

pz_status frame_check_crc(const frame_header *h, uint32_t body_crc) {
    const uint32_t crc = pz_crc32c_combine(h->crc_pre, body_crc, h->body_len);
    if (crc != h->crc) return frame_error(PZ_FRAME_CHECKSUM, "CRC-32C is %08x, header says %08x", crc, h->crc);
    return PZ_OK;
}

pz_status frame_verify_deferred(const frame_header *h) {
    if (!h->crc_deferred) return PZ_OK;
    return frame_check_crc(h, pz_codec_kernels_best()->crc32c(0, h->body, h->body_len));
}

/* inspect's parameter line: the family's own, else from the fields it sets */
static void frame_detail(const frame_header *h, pz_frame_info *info) {
    const codec_family *f = h->fam;
    char *b = info->detail;
    const size_t cap = sizeof info->detail;
    if (f->detail) {
        info->detail_label = f->detail_label;
        f->detail(h, b, cap);
        return;
    }
    char opts[160];
    pz_frame_options_text(h->options, f->option_mask, opts, sizeof opts);
    const char *gran = pz_frame_value_name(PZ_FIELD_GRANULARITY, h->gran);
    size_t n = 0;
#define ADD(...) (n += (size_t)snprintf(b + (n < cap ? n : cap), n < cap ? cap - n : 0, __VA_ARGS__))
    if (f->fields & PZ_FRAME_USES_K) {
        info->detail_label = "kept";
        ADD("k = %u per %s", h->k, gran);
        if (f->fields & PZ_FRAME_USES_BITS) ADD(", %d-bit codes", h->bits);
        if (f->fields & PZ_FRAME_USES_SEED) ADD(", positions from seed %llu", (unsigned long long)h->seed);
        ADD("%s%s", *opts ? ", " : "", opts);
    } else if (f->fields & PZ_FRAME_USES_BITS) {
        info->detail_label = "quantization";
        ADD("%d bits, %s%sper %s", h->bits, opts, *opts ? ", " : "", gran);
    }
#undef ADD
}

pz_status pz_frame_inspect(const uint8_t *frame, size_t len, pz_frame_info *info) {
    frame_header h;
    memset(info, 0, sizeof *info);
    PZ_TRY(frame_parse(frame, len, &h));
    PZ_TRY(frame_verify_deferred(&h));
    PZ_TRY(h.fam->check(&h)); /* the parameters its family allows, as a decode checks them */
    PZ_TRY(frame_check_limit(&h));
    info->codec_id = h.codec;
    info->codec_name = h.fam->name;
    info->ndim = h.ndim;
    for (int i = 0; i < 4; i++) info->shape[i] = h.dims[i];
    info->elements = h.n;
    info->bits = h.bits, info->granularity = h.gran, info->options = h.options;
    info->value_type = h.value_type, info->index_coding = h.index_coding, info->value_bits = h.value_bits;
    info->wrapper = h.wrapper;
    info->k = h.k;
    info->seed = h.seed;
    info->payload_bytes = h.payload_len;
    info->frame_bytes = len;
    info->checksum = h.crc;
    info->has_ids = h.flags & FLAG_IDS;
    info->entropy_name = h.flags & FLAG_ZSTD ? "zstd" : h.flags & FLAG_HUF ? "huf" : NULL;
    info->body_bytes = h.flags & FLAG_ENTROPY ? h.raw_len : h.body_len;
    info->stored_body_bytes = h.body_len;
    info->granularity_name = pz_frame_value_name(PZ_FIELD_GRANULARITY, h.gran);
    info->value_type_name = pz_frame_value_name(PZ_FIELD_VALUE_TYPE, h.value_type);
    info->index_coding_name = pz_frame_value_name(PZ_FIELD_INDEX_CODING, h.index_coding);
    info->wrapper_name = pz_frame_value_name(PZ_FIELD_WRAPPER, h.wrapper);
    info->fields = h.fam->fields;
    info->option_mask = h.fam->option_mask;
    frame_detail(&h, info);
    return PZ_OK;
}

uint32_t crc_join_chunks(const uint32_t *crcs, int64_t count, size_t chunk_bytes, size_t last_bytes) {
    if (count == 0) return 0;
    const uint32_t shift = pz_crc32c_shift(chunk_bytes);
    uint32_t crc = crcs[0];
    for (int64_t i = 1; i < count; i++)
        crc = i == count - 1 ? pz_crc32c_combine(crc, crcs[i], last_bytes) : pz_crc32c_mul(crc, shift) ^ crcs[i];
    return crc;
}

uint32_t *crc_slots(uint32_t small[CRC_SLOTS_SMALL], int64_t count) {
    if (count <= CRC_SLOTS_SMALL) return small;
    uint32_t *s = malloc(sizeof(uint32_t) * (size_t)count);
    if (!s) pz_fail(PZ_ERR_NOMEM, "out of memory for %lld chunk checksums", (long long)count);
    return s;
}

void crc_slots_free(uint32_t *slots, const uint32_t small[CRC_SLOTS_SMALL]) {
    if (slots != small) free(slots);
}
