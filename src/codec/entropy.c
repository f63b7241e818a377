/* SPDX-License-Identifier: MIT */
/* entropy.c — the entropy stage of docs/FORMAT.md: after any codec (and
 * wrapper), a frame's codec sections are stored as one zstd frame (flag
 * ZSTD) or under one Huffman code (flag HUF, huf.c) when that is smaller,
 * their length before it in bytes 36..39, and a decoder undoes it before
 * the family reads them. The sample-id section stays as it is. A spec asks
 * for it with "+zstd", "+zstd:L" (level) or "+huf". */
#include "object.h"
#include "huf.h"
#include "base/wire.h"

#include <stdlib.h>
#include <string.h>
#include <zstd.h>

const char *entropy_spec_name = "zstd";

pz_status entropy_parse(pz_codec_desc *d, const char *spec, const char *stage) {
    const size_t nl = strlen(entropy_spec_name);
    if (!strcmp(stage, "huf")) return d->huf = 1, PZ_OK;
    if (strncmp(stage, entropy_spec_name, nl) || (stage[nl] && stage[nl] != ':'))
        return spec_bad(spec, "the entropy stage after '+' is zstd, zstd:L (L a level, 1..19) or huf");
    d->zstd_level = ENTROPY_LEVEL_DEFAULT;
    if (stage[nl] == ':') {
        char *end;
        const long l = strtol(stage + nl + 1, &end, 10);
        if (end == stage + nl + 1 || *end || l < 1 || l > 19) return spec_bad(spec, "zstd:L takes a level L in 1..19 (zstd's levels; 3 unless given)");
        d->zstd_level = (int)l;
    }
    return PZ_OK;
}

void entropy_canonical(const pz_codec_desc *d, char *buf, size_t cap) {
    const size_t n = strlen(buf);
    if (n >= cap) return;
    if (d->huf) snprintf(buf + n, cap - n, "+huf");
    else if (d->zstd_level) snprintf(buf + n, cap - n, "+%s:%d", entropy_spec_name, d->zstd_level);
}

void entropy_free(pz_codec *c) {
    ZSTD_freeCCtx(c->zcctx);
    c->zcctx = NULL;
}

pz_status entropy_pack(pz_codec *c, uint8_t *frame, size_t *len) {
    const size_t id_bytes = frame[7] & FLAG_IDS ? 4 * (size_t)pz_get_u32(frame + 8) : 0;
    const size_t body_len = *len - PZ_FRAME_HEADER_BYTES - id_bytes;
    if (body_len == 0 || body_len > 0xFFFFFFFFu) return PZ_OK; /* nothing to gain, or beyond the u32 field: sent as it is */
    uint8_t *body = frame + PZ_FRAME_HEADER_BYTES + id_bytes, *z;
    size_t zl;
    if (c->d.huf) {
        if (!(z = scratch_get(&c->sc, SC_ZSTD, huf_bound(body_len)))) return pz_fail(PZ_ERR_NOMEM, "out of memory for a huf payload");
        zl = huf_encode(body, body_len, z);
    } else {
        if (!c->zcctx && !(c->zcctx = ZSTD_createCCtx())) return pz_fail(PZ_ERR_NOMEM, "out of memory for a zstd context");
        const size_t bound = ZSTD_compressBound(body_len);
        if (!(z = scratch_get(&c->sc, SC_ZSTD, bound))) return pz_fail(PZ_ERR_NOMEM, "out of memory for %zu bytes of zstd output", bound);
        zl = ZSTD_compressCCtx(c->zcctx, z, bound, body, body_len, c->d.zstd_level);
        if (ZSTD_isError(zl)) return pz_fail(PZ_ERR_STATE, "zstd could not compress a frame: %s", ZSTD_getErrorName(zl));
    }
    if (zl == 0 || zl >= body_len) return PZ_OK; /* used only where it shrinks the frame */
    memcpy(body, z, zl);
    frame[7] |= c->d.huf ? FLAG_HUF : FLAG_ZSTD;
    pz_put_u32(frame + 36, (uint32_t)body_len);
    const uint64_t payload = id_bytes + zl;
    pz_put_u64(frame + 48, payload);
    const pz_codec_kernels *k = pz_codec_kernels_best();
    uint32_t crc = k->crc32c(0, frame, 56);
    crc = k->crc32c(crc, frame + PZ_FRAME_HEADER_BYTES, payload);
    pz_put_u32(frame + 56, crc);
    *len = PZ_FRAME_HEADER_BYTES + payload;
    return PZ_OK;
}

pz_status entropy_unpack(frame_header *h, codec_scratch *sc) {
    if (h->flags & FLAG_HUF) {
        uint8_t *raw = scratch_get(sc, SC_ZSTD, h->raw_len);
        if (!raw) return pz_fail(PZ_ERR_NOMEM, "out of memory for %u bytes of codec sections", h->raw_len);
        PZ_TRY(huf_decode(h->body, h->body_len, raw, h->raw_len));
        h->body = raw;
        h->body_len = h->raw_len;
        return PZ_OK;
    }
    if (!(h->flags & FLAG_ZSTD)) return PZ_OK;
    const unsigned long long declared = ZSTD_getFrameContentSize(h->body, h->body_len);
    if (declared == ZSTD_CONTENTSIZE_ERROR || declared == ZSTD_CONTENTSIZE_UNKNOWN)
        return frame_error(PZ_FRAME_PAYLOAD, "the codec sections are not one zstd frame that declares its size");
    if (declared != h->raw_len)
        return frame_error(PZ_FRAME_PAYLOAD, "the zstd frame holds %llu bytes, the header says %u", declared, h->raw_len);
    const size_t whole = ZSTD_findFrameCompressedSize(h->body, h->body_len);
    if (ZSTD_isError(whole) || whole != h->body_len)
        return frame_error(PZ_FRAME_PAYLOAD, "the payload is not exactly one zstd frame (%llu bytes after the ids)", (unsigned long long)h->body_len);
    uint8_t *raw = scratch_get(sc, SC_ZSTD, h->raw_len);
    if (!raw) return pz_fail(PZ_ERR_NOMEM, "out of memory for %u bytes of codec sections", h->raw_len);
    const size_t got = ZSTD_decompress(raw, h->raw_len, h->body, h->body_len);
    if (ZSTD_isError(got)) return frame_error(PZ_FRAME_PAYLOAD, "the zstd frame does not decode: %s", ZSTD_getErrorName(got));
    if (got != h->raw_len) return frame_error(PZ_FRAME_PAYLOAD, "the zstd frame decodes to %zu bytes, the header says %u", got, h->raw_len);
    h->body = raw;
    h->body_len = h->raw_len;
    return PZ_OK;
}
