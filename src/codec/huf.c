/* SPDX-License-Identifier: MIT */
/* huf.c — the entropy stage's Huffman form (docs/FORMAT.md, "Entropy
 * stage"): a frame's codec sections as bytes under one order-0 canonical
 * Huffman code of at most HUF_MAX_LEN bits, in four streams for four
 * quarters of the bytes (decoded independently). A table of 256 code
 * lengths (4 bits each) comes first, then three stream lengths, then the
 * streams. Codes are canonical as DEFLATE's (by length, then by symbol),
 * packed into each stream as DEFLATE packs them: a code's first bit in the
 * lowest unused bit of the current byte, the last byte padded with zero
 * bits. Unlike zstd's frame, these bytes are pinned: the same sections give
 * the same bytes (golden frames hold them). */
#include "huf.h"
#include "frame.h"
#include "base/wire.h"

#include <string.h>

#define TABLE (1u << HUF_MAX_LEN)

/* the code lengths of a histogram: Huffman's, then limited to HUF_MAX_LEN
 * bits by JPEG's rule (ITU T.81, Annex K.3: two codes of the deepest level
 * go one level up, a shorter one goes one level down, until none is past
 * the limit), the longest codes given to the rarest symbols */
static void code_lengths(const uint64_t *count, uint8_t *len) {
    int sym[256], n = 0;
    memset(len, 0, 256);
    for (int s = 0; s < 256; s++)
        if (count[s]) sym[n++] = s;
    if (n == 1) { /* one symbol: a one-bit code */
        len[sym[0]] = 1;
        return;
    }
    /* Huffman by two queues over the symbols sorted by count (ties: the symbol) */
    for (int i = 1; i < n; i++) { /* insertion sort: n <= 256 */
        const int s = sym[i];
        int j = i - 1;
        while (j >= 0 && count[sym[j]] > count[s]) sym[j + 1] = sym[j], j--;
        sym[j + 1] = s;
    }
    uint64_t w[512];
    int parent[512], leaf = 0, inner = n, made = n;
    for (int i = 0; i < n; i++) w[i] = count[sym[i]];
    for (int k = 0; k < n - 1; k++) {
        int pick[2];
        for (int t = 0; t < 2; t++)
            pick[t] = leaf < n && (inner == made || w[leaf] <= w[inner]) ? leaf++ : inner++;
        w[made] = w[pick[0]] + w[pick[1]];
        parent[pick[0]] = parent[pick[1]] = made++;
    }
    int depth[512], bits[257] = {0}, deepest = 0;
    depth[made - 1] = 0;
    for (int i = made - 2; i >= 0; i--) depth[i] = depth[parent[i]] + 1;
    for (int i = 0; i < n; i++) bits[depth[i]]++, deepest = depth[i] > deepest ? depth[i] : deepest;
    for (int i = deepest; i > HUF_MAX_LEN; i--)
        while (bits[i] > 0) {
            int j = i - 2;
            while (bits[j] == 0) j--;
            bits[i] -= 2, bits[i - 1]++, bits[j + 1] += 2, bits[j]--;
        }
    /* the rarest symbols (first in sym) take the longest codes */
    int at = 0;
    for (int l = HUF_MAX_LEN; l >= 1; l--)
        for (int c = 0; c < bits[l]; c++) len[sym[at++]] = (uint8_t)l;
}

/* canonical codes, bit-reversed for LSB-first packing: enc[s] = code | len << 16 */
static int canonical(const uint8_t *len, uint32_t *enc) {
    int bl_count[HUF_MAX_LEN + 1] = {0};
    for (int s = 0; s < 256; s++) bl_count[len[s]]++;
    bl_count[0] = 0;
    uint32_t next[HUF_MAX_LEN + 2] = {0}, code = 0, kraft = 0;
    for (int l = 1; l <= HUF_MAX_LEN; l++) {
        code = (code + (uint32_t)bl_count[l - 1]) << 1;
        next[l] = code;
        kraft += (uint32_t)bl_count[l] * (TABLE >> l);
    }
    if (kraft > TABLE) return -1;
    for (int s = 0; s < 256; s++) {
        const int l = len[s];
        enc[s] = 0;
        if (!l) continue;
        const uint32_t c = next[l]++;
        uint32_t r = 0;
        for (int b = 0; b < l; b++) r |= ((c >> b) & 1u) << (l - 1 - b);
        enc[s] = r | (uint32_t)l << 16;
    }
    return 0;
}

/* a stream's room: its codes at most HUF_MAX_LEN bits each, and 8 bytes of
 * slack for the last 8-byte store */
static size_t room(size_t q) { return q * HUF_MAX_LEN / 8 + 16; }

size_t huf_bound(size_t n) { return HUF_HEADER + 4 * room((n + 3) / 4); }

/* the codes of in[0..n) into four streams of q = ceil(n / 4) symbols (the
 * last one shorter), written in step (four independent chains), each into
 * its own room of out; their lengths into len[] */
#define PUT(k, sym) (e = enc[sym], acc[k] |= (uint64_t)(e & 0xffffu) << nb[k], nb[k] += e >> 16)
#define FLUSH(k) (pz_put_u64(o[k], acc[k]), o[k] += nb[k] >> 3, acc[k] >>= nb[k] & ~7u, nb[k] &= 7)
static void put_streams(const uint8_t *in, size_t n, const uint32_t *enc, uint8_t *out, size_t *len) {
    const size_t q = (n + 3) / 4;
    const uint8_t *src[4];
    size_t cnt[4];
    uint8_t *o[4], *start[4];
    uint64_t acc[4] = {0};
    unsigned nb[4] = {0}; /* fewer than 8 between groups */
    uint32_t e;
    for (int k = 0; k < 4; k++) {
        const size_t lo = (size_t)k * q < n ? (size_t)k * q : n, hi = lo + q < n ? lo + q : n;
        src[k] = in + lo, cnt[k] = hi - lo, start[k] = o[k] = out + (size_t)k * room(q);
    }
    const size_t common = cnt[3]; /* the shortest */
    size_t i = 0;
    for (; i + 4 <= common; i += 4) { /* 4 codes of at most 11 bits a stream on fewer than 8: at most 51 bits */
        for (int j = 0; j < 4; j++) PUT(0, src[0][i + j]), PUT(1, src[1][i + j]), PUT(2, src[2][i + j]), PUT(3, src[3][i + j]);
        FLUSH(0), FLUSH(1), FLUSH(2), FLUSH(3);
    }
    for (int k = 0; k < 4; k++) {
        for (size_t j = i; j < cnt[k]; j++) PUT(k, src[k][j]), FLUSH(k);
        if (nb[k]) *o[k]++ = (uint8_t)acc[k];
        len[k] = (size_t)(o[k] - start[k]);
    }
}
#undef PUT
#undef FLUSH

size_t huf_encode(const uint8_t *in, size_t n, uint8_t *out) {
    uint64_t count[256] = {0}, c1[256] = {0}, c2[256] = {0}, c3[256] = {0};
    size_t i = 0;
    for (; i + 4 <= n; i += 4) count[in[i]]++, c1[in[i + 1]]++, c2[in[i + 2]]++, c3[in[i + 3]]++;
    for (; i < n; i++) count[in[i]]++;
    for (int s = 0; s < 256; s++) count[s] += c1[s] + c2[s] + c3[s];
    uint8_t len[256];
    uint32_t enc[256];
    code_lengths(count, len);
    if (canonical(len, enc)) return 0; /* cannot happen: the lengths fit */
    for (int s = 0; s < 128; s++) out[s] = (uint8_t)(len[2 * s] | len[2 * s + 1] << 4);
    size_t blen[4], at = HUF_HEADER;
    put_streams(in, n, enc, out + HUF_HEADER, blen);
    const size_t r = room((n + 3) / 4);
    for (int k = 0; k < 4; k++) { /* each room's stream moved down after the one before */
        memmove(out + at, out + HUF_HEADER + (size_t)k * r, blen[k]);
        if (k < 3) pz_put_u32(out + 128 + 4 * k, (uint32_t)blen[k]);
        at += blen[k];
    }
    return at;
}

/* a stream being read: its bytes [p, end), bits not yet used in acc (nb of
 * them), where its next symbol goes and how many are left */
typedef struct {
    const uint8_t *s, *p, *end;
    uint64_t acc, used; /* used: bits of codes taken */
    unsigned nb;
    uint8_t *out;
    size_t left;
} reader;

/* at least 56 bits in acc; its stream has 8 bytes left at p */
static inline void refill_fast(reader *r) {
    r->acc |= pz_get_u64(r->p) << r->nb;
    r->p += (63 - r->nb) >> 3;
    r->nb |= 56;
}

/* the rest of one stream, checking each symbol */
static pz_status finish(reader *r, const uint16_t *dec, int k) {
    for (; r->left; r->left--) {
        if (r->nb < HUF_MAX_LEN) {
            if (r->end - r->p >= 8) refill_fast(r);
            else
                while (r->nb <= 56 && r->p < r->end) r->acc |= (uint64_t)*r->p++ << r->nb, r->nb += 8;
        }
        const uint16_t e = dec[r->acc & (TABLE - 1)];
        const unsigned l = e >> 8;
        if (!l) return frame_error(PZ_FRAME_PAYLOAD, "huf stream %d: bits that are no code of the table", k);
        if (l > r->nb) return frame_error(PZ_FRAME_PAYLOAD, "huf stream %d: its %zu bytes end before its symbols", k, (size_t)(r->end - r->s));
        *r->out++ = (uint8_t)e, r->acc >>= l, r->nb -= l, r->used += l;
    }
    /* exactly its bytes: the last one's bits past the last code are zero */
    const size_t len = (size_t)(r->end - r->s);
    if ((r->used + 7) / 8 != len)
        return frame_error(PZ_FRAME_PAYLOAD, "huf stream %d: %zu bytes hold %llu bits of codes", k, len, (unsigned long long)r->used);
    if (len && (r->used & 7) && r->s[len - 1] >> (r->used & 7))
        return frame_error(PZ_FRAME_PAYLOAD, "huf stream %d: its padding bits are not zero", k);
    return PZ_OK;
}

pz_status huf_decode(const uint8_t *in, size_t len, uint8_t *out, size_t n) {
    if (len < HUF_HEADER) return frame_error(PZ_FRAME_PAYLOAD, "a huf payload of %zu bytes, shorter than its %d-byte table", len, HUF_HEADER);
    uint8_t lens[256];
    int present = 0;
    for (int s = 0; s < 128; s++) lens[2 * s] = in[s] & 15, lens[2 * s + 1] = in[s] >> 4;
    for (int s = 0; s < 256; s++) {
        if (lens[s] > HUF_MAX_LEN) return frame_error(PZ_FRAME_PAYLOAD, "huf table: symbol %d has a code of %d bits (at most %d)", s, lens[s], HUF_MAX_LEN);
        present += lens[s] > 0;
    }
    uint32_t enc[256];
    if (!present || canonical(lens, enc)) return frame_error(PZ_FRAME_PAYLOAD, "huf table: its code lengths are no prefix code");
    uint16_t dec[TABLE];
    memset(dec, 0, sizeof dec);
    for (int s = 0; s < 256; s++) {
        const uint32_t l = enc[s] >> 16, r = enc[s] & 0xffffu;
        for (uint32_t k = 0; l && k < (TABLE >> l); k++) dec[r | k << l] = (uint16_t)(s | l << 8);
    }
    size_t at = HUF_HEADER, blen[4];
    for (int k = 0; k < 3; k++) blen[k] = pz_get_u32(in + 128 + 4 * k);
    if (blen[0] + blen[1] + blen[2] > len - HUF_HEADER)
        return frame_error(PZ_FRAME_PAYLOAD, "huf streams of %zu, %zu and %zu bytes past the payload's %zu", blen[0], blen[1], blen[2], len);
    blen[3] = len - HUF_HEADER - blen[0] - blen[1] - blen[2];
    const size_t q = (n + 3) / 4;
    reader r[4];
    for (int k = 0; k < 4; k++) {
        const size_t lo = (size_t)k * q < n ? (size_t)k * q : n, hi = lo + q < n ? lo + q : n;
        r[k] = (reader){.s = in + at, .p = in + at, .end = in + at + blen[k], .out = out + lo, .left = hi - lo};
        at += blen[k];
    }
    /* the four streams in step while each has 8 bytes and 5 symbols left:
     * a refill gives 56 bits, 5 codes of at most 11 bits; the state in
     * locals (the byte stores may alias anything reachable) */
    const uint8_t *p0 = r[0].p, *p1 = r[1].p, *p2 = r[2].p, *p3 = r[3].p;
    uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    unsigned n0 = 0, n1 = 0, n2 = 0, n3 = 0;
    uint8_t *o0 = r[0].out, *o1 = r[1].out, *o2 = r[2].out, *o3 = r[3].out;
    /* a complete code (every table entry a code: what the encoder writes
     * whenever two symbols or more occur) has no bits that are no code, so
     * the loop need not look; an incomplete one goes the checked way */
    uint32_t kraft = 0;
    for (int s = 0; s < 256; s++) kraft += lens[s] ? TABLE >> lens[s] : 0;
    size_t rounds = kraft == TABLE ? r[3].left / 5 : 0; /* the shortest stream's */
#define REFILL(a, n, p) (a |= pz_get_u64(p) << n, p += (63 - n) >> 3, n |= 56)
#define TAKE(a, n, o)                                                                                                       \
    do {                                                                                                                    \
        const uint16_t e_ = dec[a & (TABLE - 1)];                                                                           \
        const unsigned l_ = e_ >> 8;                                                                                        \
        *o++ = (uint8_t)e_, a >>= l_, n -= l_;                                                                              \
    } while (0)
    for (; rounds && r[0].end - p0 >= 8 && r[1].end - p1 >= 8 && r[2].end - p2 >= 8 && r[3].end - p3 >= 8; rounds--) {
        REFILL(a0, n0, p0), REFILL(a1, n1, p1), REFILL(a2, n2, p2), REFILL(a3, n3, p3);
        for (int i = 0; i < 5; i++) {
            TAKE(a0, n0, o0);
            TAKE(a1, n1, o1);
            TAKE(a2, n2, o2);
            TAKE(a3, n3, o3);
        }
    }
#undef REFILL
#undef TAKE
    const size_t done = (size_t)(o3 - r[3].out);
    r[0].p = p0, r[1].p = p1, r[2].p = p2, r[3].p = p3;
    r[0].acc = a0, r[1].acc = a1, r[2].acc = a2, r[3].acc = a3;
    r[0].nb = n0, r[1].nb = n1, r[2].nb = n2, r[3].nb = n3;
    for (int k = 0; k < 4; k++) r[k].used = 8 * (uint64_t)(r[k].p - r[k].s) - r[k].nb; /* bits loaded, less those left */
    r[0].out = o0, r[1].out = o1, r[2].out = o2, r[3].out = o3;
    for (int k = 0; k < 4; k++) r[k].left -= done;
    for (int k = 0; k < 4; k++) PZ_TRY(finish(&r[k], dec, k));
    return PZ_OK;
}
