/* SPDX-License-Identifier: MIT */
/* bits.c — bit streams and varints (bits.h). */
#include "bits.h"

#include <string.h>

void bits_write(const pz_codec_kernels *k, uint8_t *out, const uint8_t *codes, size_t n, int b) {
    const size_t full = n & ~(size_t)7;
    k->pack(codes, full, b, out);
    if (full < n) {
        uint8_t tail[8] = {0}, packed[8];
        memcpy(tail, codes + full, n - full);
        k->pack(tail, 8, b, packed);
        memcpy(out + full / 8 * b, packed, bits_bytes(n - full, b));
    }
}

void bits_read(const pz_codec_kernels *k, const uint8_t *in, size_t n, int b, uint8_t *codes) {
    const size_t full = n & ~(size_t)7;
    k->unpack(in, full, b, codes);
    if (full < n) {
        uint8_t packed[8] = {0}, tail[8];
        memcpy(packed, in + full / 8 * b, bits_bytes(n - full, b));
        k->unpack(packed, 8, b, tail);
        memcpy(codes + full, tail, n - full);
    }
}

size_t varint_put(uint8_t *p, uint32_t v) {
    size_t n = 0;
    while (v >= 0x80) p[n++] = (uint8_t)(v | 0x80), v >>= 7;
    p[n++] = (uint8_t)v;
    return n;
}

int varint_get(const uint8_t **q, const uint8_t *end, uint32_t *out) {
    uint64_t v = 0;
    int shift = 0;
    while (*q < end && shift < 35) {
        const uint8_t byte = *(*q)++;
        v |= (uint64_t)(byte & 0x7F) << shift;
        shift += 7;
        if (!(byte & 0x80)) {
            if (v > 0xFFFFFFFFull) return -1;
            *out = (uint32_t)v;
            return 0;
        }
    }
    return -1;
}
