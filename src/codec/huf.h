/* SPDX-License-Identifier: MIT */
/* huf.h — the entropy stage's Huffman form (huf.c; docs/FORMAT.md). */
#ifndef PZ_CODEC_HUF_H
#define PZ_CODEC_HUF_H

#include "base/base.h"

#include <stddef.h>
#include <stdint.h>

#define HUF_MAX_LEN 11  /* the longest code, bits */
#define HUF_HEADER 140  /* 256 code lengths of 4 bits, then 3 stream lengths (u32) */

/* the most bytes huf_encode writes for n input bytes (slack included) */
size_t huf_bound(size_t n);
/* n >= 1 bytes into out (huf_bound(n) bytes of room): returns the
 * payload's length (the table, the stream lengths and the streams) */
size_t huf_encode(const uint8_t *in, size_t n, uint8_t *out);
/* a payload of len bytes back into exactly n bytes; a malformed one is
 * refused (PZ_ERR_FORMAT, PZ_FRAME_PAYLOAD) naming what is wrong */
pz_status huf_decode(const uint8_t *in, size_t len, uint8_t *out, size_t n);

#endif
