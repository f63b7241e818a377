/* SPDX-License-Identifier: MIT */
/* bits.h — bit streams (FORMAT.md: w-bit fields packed LSB-first) and LEB128
 * varints, the two encodings the codecs' sections share. */
#ifndef PZ_CODEC_BITS_H
#define PZ_CODEC_BITS_H

#include <stddef.h>
#include <stdint.h>
#include "kernels/codec_kernels.h"

static inline size_t bits_bytes(uint64_t n, int b) { return (size_t)((n * (uint64_t)b + 7) / 8); }

/* n codes of b bits. Whole groups of 8 go through the kernels' pack/unpack;
 * the tail (n % 8) through a zero-padded group. */
void bits_write(const pz_codec_kernels *k, uint8_t *out, const uint8_t *codes, size_t n, int b);
void bits_read(const pz_codec_kernels *k, const uint8_t *in, size_t n, int b, uint8_t *codes);

static inline size_t varint_len(uint32_t v) {
    return v < (1u << 7) ? 1 : v < (1u << 14) ? 2 : v < (1u << 21) ? 3 : v < (1u << 28) ? 4 : 5;
}
/* writes v, returns the bytes written (1..5) */
size_t varint_put(uint8_t *p, uint32_t v);
/* reads one varint from [*q, end): 0 and *v on success, -1 for a truncated
 * one, one longer than 5 bytes or one beyond 32 bits */
int varint_get(const uint8_t **q, const uint8_t *end, uint32_t *v);

#endif
