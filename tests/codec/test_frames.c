/* SPDX-License-Identifier: MIT */
/* test_frames.c — what a decoder must reject (docs/FORMAT.md), each with
 * its own error: truncated frames, wrong magic/version/length/checksum,
 * impossible shapes, out-of-range parameters, inconsistent payloads, small
 * destinations; then thousands of random mutations with the checksum
 * repaired, so the deep validation is reached: every one must return OK or
 * PZ_ERR_FORMAT, never crash or read out of bounds (ASan/UBSan in CI). */
#include "../test.h"
#include "pipezip/codec.h"
#include "base/base.h"
#include "kernels/codec_kernels.h"
#include "codec/huf.h"

static uint8_t frame[1 << 16];
static size_t flen;
static float out[4096];

static void make(const char *spec, int ndim, const int64_t *shape, const uint32_t *ids) {
    pz_codec *c;
    CHECK(pz_codec_create(&c, spec) == PZ_OK, "%s", pz_last_error());
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    float *x = malloc(sizeof(float) * (size_t)n);
    pz_rng r;
    pz_rng_seed(&r, 3);
    for (int64_t i = 0; i < n; i++) x[i] = pz_rng_normal(&r);
    CHECK(pz_codec_encode(c, x, ndim, shape, ids, frame, sizeof frame, &flen, NULL) == PZ_OK, "%s: %s", spec, pz_last_error());
    free(x);
    pz_codec_free(c);
}

static void fix_crc(uint8_t *f, size_t len) {
    const pz_codec_kernels *k = pz_codec_kernels_scalar();
    uint32_t crc = k->crc32c(0, f, 56);
    crc = k->crc32c(crc, f + 64, len - 64);
    memcpy(f + 56, &crc, 4);
}

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

/* decode a modified copy; expect the given frame error */
static void expect(const char *what, const uint8_t *f, size_t len, size_t cap, pz_frame_error want) {
    const pz_status st = pz_frame_decode(f, len, out, cap, NULL, NULL);
    CHECK(st == PZ_ERR_FORMAT && pz_frame_error_of() == want, "%s: got %s / %s, expected %s", what,
          pz_status_name(st), st ? pz_frame_error_name(pz_frame_error_of()) : "-", pz_frame_error_name(want));
}

/* the frame made last, its payload one byte longer (a zero) or shorter, the checksum repaired: its new length */
static size_t resized(uint8_t *f, int delta) {
    memcpy(f, frame, flen);
    const size_t len = delta > 0 ? flen + 1 : flen - 1;
    if (delta > 0) f[flen] = 0;
    const uint64_t pl = len - 64;
    memcpy(f + 48, &pl, 8), fix_crc(f, len);
    return len;
}

/* a frame too small for spec's entropy stage to gain is sent without it, byte for byte plain's */
static void too_small(const char *plain, const char *spec) {
    static uint8_t p[4096];
    const int64_t tiny[] = {1, 8};
    make(plain, 2, tiny, NULL);
    memcpy(p, frame, flen);
    const size_t plain_len = flen;
    make(spec, 2, tiny, NULL);
    CHECK(flen == plain_len && !memcmp(p, frame, flen), "a frame %s cannot shrink is sent as it is", spec);
}

/* 8 x 512 Gaussians as q2 (decoded into plain) and then through spec's entropy stage (the frame made last): q2's length */
static size_t staged(const char *spec, float *plain) {
    const int64_t big[] = {8, 512};
    make("q2", 2, big, NULL);
    CHECK(pz_frame_decode(frame, flen, plain, 4096, NULL, NULL) == PZ_OK, "q2 decodes");
    const size_t plain_len = flen;
    make(spec, 2, big, NULL);
    return plain_len;
}

int main(void) {
    const int64_t shape[] = {4, 100};
    uint8_t f[1 << 16];

    { /* a frame whose receiver keeps state (ef21, aqsgd) is a difference, not the tensor: refused alone, naming the
       * wrapper and what decodes it; an ef frame (its receiver keeps nothing) decodes */
        const uint32_t ids[4] = {0, 1, 2, 3};
        const char *refused[] = {"ef21(q4)", "aqsgd(q4)"};
        for (int i = 0; i < 2; i++) {
            make(refused[i], 2, shape, ids);
            CHECK(frame[30] == (i ? 3 : 2), "%s: wrapper byte %d", refused[i], frame[30]);
            CHECK(pz_frame_decode(frame, flen, out, 400, NULL, NULL) == PZ_ERR_FORMAT && pz_frame_error_of() == PZ_FRAME_CODEC && strstr(pz_last_error(), i ? "an aqsgd frame" : "an ef21 frame") &&
                      strstr(pz_last_error(), "pz_codec_decode"),
                  "%s alone: %s", refused[i], pz_last_error());
            CHECK(pz_frame_validate(frame, flen) == PZ_OK, "%s: still a valid frame (%s)", refused[i], pz_last_error());
        }
        make("ef(q4)", 2, shape, NULL);
        CHECK(pz_frame_decode(frame, flen, out, 400, NULL, NULL) == PZ_OK, "an ef frame decodes: %s", pz_last_error());
    }
    make("q4", 2, shape, NULL);
    CHECK(pz_frame_decode(frame, flen, out, 400, NULL, NULL) == PZ_OK, "a valid frame decodes");
    expect("empty", frame, 0, 400, PZ_FRAME_TRUNCATED);
    expect("63 bytes", frame, 63, 400, PZ_FRAME_TRUNCATED);
    expect("one byte short", frame, flen - 1, 400, PZ_FRAME_LENGTH);
    memcpy(f, frame, flen);
    f[flen] = 0;
    expect("one byte long", f, flen + 1, 400, PZ_FRAME_LENGTH);
    memcpy(f, frame, flen), f[0] = 'X';
    expect("magic", f, flen, 400, PZ_FRAME_MAGIC);
    memcpy(f, frame, flen), f[4] = 2;
    expect("version", f, flen, 400, PZ_FRAME_VERSION);
    memcpy(f, frame, flen), f[100] ^= 0x10;
    expect("payload bit flip", f, flen, 400, PZ_FRAME_CHECKSUM);
    memcpy(f, frame, flen), f[26] ^= 1;
    expect("header bit flip", f, flen, 400, PZ_FRAME_CHECKSUM);
    expect("small destination", frame, flen, 399, PZ_FRAME_CAPACITY);

    /* fields changed with the checksum repaired */
    memcpy(f, frame, flen), f[6] = 5, fix_crc(f, flen);
    expect("ndim 5", f, flen, 400, PZ_FRAME_SHAPE);
    memcpy(f, frame, flen), f[6] = 0, fix_crc(f, flen);
    expect("ndim 0", f, flen, 400, PZ_FRAME_SHAPE);
    memcpy(f, frame, flen), put32(f + 16, 7), fix_crc(f, flen);
    expect("a dimension beyond ndim", f, flen, 400, PZ_FRAME_SHAPE);
    memcpy(f, frame, flen), put32(f + 8, 0x10000), put32(f + 12, 0x10000), fix_crc(f, flen);
    expect("2^32 elements", f, flen, 400, PZ_FRAME_SHAPE);
    memcpy(f, frame, flen), f[5] = 42, fix_crc(f, flen);
    expect("unknown codec", f, flen, 400, PZ_FRAME_PARAM);
    memcpy(f, frame, flen), f[24] = 9, fix_crc(f, flen);
    expect("9-bit quantization", f, flen, 400, PZ_FRAME_PARAM);
    memcpy(f, frame, flen), f[25] = 4, fix_crc(f, flen);
    expect("granularity 4", f, flen, 400, PZ_FRAME_PARAM);
    memcpy(f, frame, flen), f[31] = 1, fix_crc(f, flen);
    expect("reserved byte", f, flen, 400, PZ_FRAME_PARAM);
    memcpy(f, frame, flen), f[26] = 0x80, fix_crc(f, flen);
    expect("unknown option bit", f, flen, 400, PZ_FRAME_PARAM);
    memcpy(f, frame, flen), f[7] = 4, fix_crc(f, flen);
    expect("unknown flag", f, flen, 400, PZ_FRAME_PARAM);
    memcpy(f, frame, flen), f[7] = 2, fix_crc(f, flen);
    expect("the entropy flag without a raw length", f, flen, 400, PZ_FRAME_PARAM);
    memcpy(f, frame, flen), put32(f + 36, 12), fix_crc(f, flen);
    expect("a raw length without the entropy flag", f, flen, 400, PZ_FRAME_PARAM);
    memcpy(f, frame, flen), f[30] = 9, fix_crc(f, flen);
    expect("unknown wrapper", f, flen, 400, PZ_FRAME_PARAM);
    memcpy(f, frame, flen), put32(f + 8, 5), fix_crc(f, flen);
    expect("shape larger than the payload", f, flen, 500, PZ_FRAME_PAYLOAD);
    memcpy(f, frame, flen), f[25] = 2, put32(f + 8, 400), put32(f + 12, 0), f[6] = 1, fix_crc(f, flen);
    expect("per-channel on a 1-d tensor", f, flen, 400, PZ_FRAME_PARAM);
    { /* a scale that is not finite */
        memcpy(f, frame, flen);
        const float nan = NAN;
        memcpy(f + 64 + 4, &nan, 4), fix_crc(f, flen);
        expect("NaN scale", f, flen, 400, PZ_FRAME_PAYLOAD);
    }
    /* none/fp16/bf16 check their checksum while decoding: same verdicts */
    const char *plain[] = {"none", "fp16", "bf16"};
    const int64_t bigshape[] = {3, 70001}; /* several 64k-element chunks */
    static uint8_t bigf[1 << 21];
    for (int i = 0; i < 3; i++) {
        pz_codec *c;
        pz_codec_create(&c, plain[i]);
        float *bx = calloc(210003, sizeof(float)), *by = malloc(sizeof(float) * 210003);
        for (int j = 0; j < 210003; j++) bx[j] = (float)(j % 1000) * 0.001f;
        size_t bl;
        CHECK(pz_codec_encode(c, bx, 2, bigshape, NULL, bigf, sizeof bigf, &bl, NULL) == PZ_OK, "%s", pz_last_error());
        CHECK(pz_frame_decode(bigf, bl, by, 210003, NULL, NULL) == PZ_OK, "%s: a valid frame decodes", plain[i]);
        pz_frame_info info;
        for (size_t at = 64; at < bl; at += bl / 3) { /* a flipped bit in each third of the payload */
            bigf[at] ^= 4;
            const pz_status st = pz_frame_decode(bigf, bl, by, 210003, NULL, NULL);
            CHECK(st == PZ_ERR_FORMAT && pz_frame_error_of() == PZ_FRAME_CHECKSUM, "%s: flipped payload byte %zu: %s", plain[i], at,
                  pz_last_error());
            CHECK(pz_frame_inspect(bigf, bl, &info) == PZ_ERR_FORMAT && pz_frame_error_of() == PZ_FRAME_CHECKSUM,
                  "%s: inspect verifies the checksum too", plain[i]);
            bigf[at] ^= 4;
        }
        free(bx), free(by);
        pz_codec_free(c);
    }

    make("q4:sym", 2, shape, NULL); /* code 15 is not a symmetric 4-bit code */
    memcpy(f, frame, flen), f[64 + 4] = 0xFF, fix_crc(f, flen);
    expect("symmetric code out of range", f, flen, 400, PZ_FRAME_PAYLOAD);

    make("topk:0.1,index=bitmap", 2, shape, NULL);
    CHECK(pz_frame_decode(frame, flen, out, 400, NULL, NULL) == PZ_OK, "topk decodes");
    { /* one more bit in the bitmap than k */
        memcpy(f, frame, flen);
        int set = 0;
        for (int i = 0; i < 100 && !set; i++)
            if (!(f[64 + i / 8] >> (i % 8) & 1)) f[64 + i / 8] |= (uint8_t)(1 << (i % 8)), set = 1;
        fix_crc(f, flen);
        expect("bitmap with k+1 positions in a unit", f, flen, 400, PZ_FRAME_PAYLOAD);
    }
    memcpy(f, frame, flen), put32(f + 32, 101), fix_crc(f, flen);
    expect("k above the unit size", f, flen, 400, PZ_FRAME_PARAM);
    memcpy(f, frame, flen), f[28] = 0, fix_crc(f, flen);
    expect("topk without an index section", f, flen, 400, PZ_FRAME_PARAM);
    memcpy(f, frame, flen), f[27] = 3, fix_crc(f, flen);
    expect("value type 3 without value bits", f, flen, 400, PZ_FRAME_PARAM);

    make("topk:0.1,index=delta", 2, shape, NULL);
    CHECK(pz_frame_decode(frame, flen, out, 400, NULL, NULL) == PZ_OK, "delta topk decodes");
    memcpy(f, frame, flen), f[64] = 0x80 | 0x7F, fix_crc(f, flen); /* a varint that runs on */
    expect("bad varint", f, flen, 400, PZ_FRAME_PAYLOAD);
    memcpy(f, frame, flen), f[64] = 120, fix_crc(f, flen); /* jumps past the unit */
    expect("position outside the unit", f, flen, 400, PZ_FRAME_PAYLOAD);

    make("ms:0.05,bits=2", 2, shape, NULL);
    CHECK(pz_frame_decode(frame, flen, out, 400, NULL, NULL) == PZ_OK, "ms decodes");
    { /* one code less marked as kept */
        memcpy(f, frame, flen);
        const size_t codes = 64 + 4 + 20 * 4; /* Top_min, 20 values */
        int changed = 0;
        for (size_t i = 0; i < 100 && !changed; i++)
            if (f[codes + i] & 3) {
                for (int j = 0; j < 4 && !changed; j++)
                    if (((f[codes + i] >> (2 * j)) & 3) == 3) f[codes + i] &= (uint8_t)~(2 << (2 * j)), changed = 1;
            }
        fix_crc(f, flen);
        expect("MS unit with k-1 kept codes", f, flen, 400, PZ_FRAME_PAYLOAD);
    }
    memcpy(f, frame, flen), f[24] = 0, fix_crc(f, flen);
    expect("MS with 0-bit codes", f, flen, 400, PZ_FRAME_PARAM);

    const uint32_t ids[4] = {5, 6, 7, 8};
    make("aqsgd(q2)", 2, shape, ids);
    { /* an AQ-SGD frame needs its ids at the receiver */
        pz_codec *rx;
        pz_codec_create(&rx, "aqsgd(q2)");
        CHECK(pz_codec_decode(rx, frame, flen, out, 400, NULL, NULL) == PZ_OK, "%s", pz_last_error());
        memcpy(f, frame, flen), f[7] = 0, fix_crc(f, flen);
        const pz_status st = pz_codec_decode(rx, f, flen, out, 400, NULL, NULL);
        CHECK(st == PZ_ERR_FORMAT, "an aqsgd frame without ids is refused");
        pz_codec_free(rx);
    }

    { /* the entropy stage: a frame that shrinks decodes to the plain frame's floats; its own ways to be wrong */
        static float plain[4096];
        const size_t plain_len = staged("q2+zstd", plain);
        CHECK((frame[7] & 2) && flen < plain_len, "q2 codes of a Gaussian shrink under zstd (%zu of %zu bytes)", flen, plain_len);
        CHECK(pz_frame_decode(frame, flen, out, 4096, NULL, NULL) == PZ_OK && !memcmp(out, plain, sizeof plain), "the same floats");
        pz_frame_info info;
        CHECK(pz_frame_inspect(frame, flen, &info) == PZ_OK && info.entropy_name && !strcmp(info.entropy_name, "zstd") &&
                  info.body_bytes == plain_len - 64 && info.stored_body_bytes == flen - 64,
              "inspect tells the stage and both lengths");
        uint32_t raw;
        memcpy(&raw, frame + 36, 4);
        memcpy(f, frame, flen), put32(f + 36, 0), fix_crc(f, flen);
        expect("a raw length of 0", f, flen, 4096, PZ_FRAME_PARAM);
        memcpy(f, frame, flen), put32(f + 36, 16 * 4096 + 65), fix_crc(f, flen);
        expect("a raw length beyond 16n + 64", f, flen, 4096, PZ_FRAME_PARAM);
        memcpy(f, frame, flen), put32(f + 36, raw + 1), fix_crc(f, flen);
        expect("a raw length the zstd frame does not declare", f, flen, 4096, PZ_FRAME_PAYLOAD);
        size_t len = resized(f, 1);
        expect("a byte after the zstd frame", f, len, 4096, PZ_FRAME_PAYLOAD);
        len = resized(f, -1);
        expect("a truncated zstd frame", f, len, 4096, PZ_FRAME_PAYLOAD);
        memcpy(f, frame, flen), memset(f + 64, 0, 4), fix_crc(f, flen);
        expect("not a zstd frame", f, flen, 4096, PZ_FRAME_PAYLOAD);
        memcpy(f, frame, flen), f[100] ^= 0x10;
        expect("a bit flip in the zstd frame", f, flen, 4096, PZ_FRAME_CHECKSUM);
        too_small("q8", "q8+zstd");
    }

    { /* the entropy stage's Huffman form: the same floats, fewer bytes, and each way its payload can be wrong */
        static float plain[4096];
        const size_t plain_len = staged("q2+huf", plain);
        CHECK(frame[7] == 4 && flen < plain_len, "q2 codes of a Gaussian shrink under huf (%zu of %zu bytes)", flen, plain_len);
        CHECK(pz_frame_decode(frame, flen, out, 4096, NULL, NULL) == PZ_OK && !memcmp(out, plain, sizeof plain), "the same floats");
        pz_frame_info info;
        CHECK(pz_frame_inspect(frame, flen, &info) == PZ_OK && info.entropy_name && !strcmp(info.entropy_name, "huf") &&
                  info.body_bytes == plain_len - 64 && info.stored_body_bytes == flen - 64,
              "inspect tells the stage and both lengths");
        uint8_t *h = f + 64; /* the Huffman payload: 128 bytes of lengths, 3 stream lengths, the streams */
        uint32_t s0;
        memcpy(&s0, frame + 64 + 128, 4);
        memcpy(f, frame, flen), f[7] = 6, fix_crc(f, flen);
        expect("both entropy flags", f, flen, 4096, PZ_FRAME_PARAM);
        memcpy(f, frame, flen), h[0] = (uint8_t)((h[0] & 0xf0) | 12), fix_crc(f, flen);
        expect("a code of 12 bits", f, flen, 4096, PZ_FRAME_PAYLOAD);
        memcpy(f, frame, flen), memset(h, 0x11, 128), fix_crc(f, flen);
        expect("256 one-bit codes (no prefix code)", f, flen, 4096, PZ_FRAME_PAYLOAD);
        memcpy(f, frame, flen), memset(h, 0, 128), fix_crc(f, flen);
        expect("no symbol at all", f, flen, 4096, PZ_FRAME_PAYLOAD);
        memcpy(f, frame, flen), put32(h + 128, 0xFFFFFFF0u), fix_crc(f, flen);
        expect("a stream past the payload", f, flen, 4096, PZ_FRAME_PAYLOAD);
        memcpy(f, frame, flen), put32(h + 128, s0 - 1), fix_crc(f, flen);
        expect("stream 0 a byte short (its bytes go to stream 1)", f, flen, 4096, PZ_FRAME_PAYLOAD);
        memcpy(f, frame, flen), put32(h + 128, s0 + 1), fix_crc(f, flen);
        expect("stream 0 a byte long", f, flen, 4096, PZ_FRAME_PAYLOAD);
        size_t len = resized(f, 1); /* stream 3 longer than its codes */
        expect("a byte after the last stream", f, len, 4096, PZ_FRAME_PAYLOAD);
        len = resized(f, -1);
        expect("the last stream cut short", f, len, 4096, PZ_FRAME_PAYLOAD);
        memcpy(f, frame, flen), f[flen - 1] |= 0x80, fix_crc(f, flen);
        const pz_status st = pz_frame_decode(f, flen, out, 4096, NULL, NULL);
        CHECK(st == PZ_ERR_FORMAT || memcmp(out, plain, sizeof plain), "a changed last byte is refused or decodes otherwise");
        memcpy(f, frame, flen), f[100] ^= 0x10;
        expect("a bit flip in the streams", f, flen, 4096, PZ_FRAME_CHECKSUM);
        too_small("q8", "q8+huf");
        const int64_t tiny[] = {1, 8};
        /* a strict receiver of another stage, or of none, refuses it; its own takes it, and a frame sent without it */
        staged("q2+huf", plain);
        pz_codec *rx;
        const char *others[] = {"q2", "q2+zstd", "q2+huf"};
        for (int i = 0; i < 3; i++) {
            CHECK(pz_codec_create(&rx, others[i]) == PZ_OK, "%s", pz_last_error());
            pz_codec_set_strict(rx, 1);
            CHECK((pz_codec_decode(rx, frame, flen, out, 4096, NULL, NULL) == PZ_OK) == (i == 2), "a strict %s receiver and a huf frame",
                  others[i]);
            pz_codec_free(rx);
        }
        make("q8+huf", 2, tiny, NULL);
        CHECK(pz_codec_create(&rx, "q8+huf") == PZ_OK, "q8+huf");
        pz_codec_set_strict(rx, 1);
        CHECK(pz_codec_decode(rx, frame, flen, out, 4096, NULL, NULL) == PZ_OK, "a strict q8+huf receiver takes a frame sent plain");
        pz_codec_free(rx);
    }

    { /* huf on bytes of every shape of histogram: one symbol, two, uniform (no gain: sent plain), skewed past 11 bits
       * (the length limit), every length from 1 to 4099 bytes; each decodes to the same floats */
        pz_rng rr;
        pz_rng_seed(&rr, 5);
        static float a[8192], b[8192], x[8192];
        int shrank = 0, cases = 0;
        for (int kind = 0; kind < 5; kind++)
            for (int n = 1; n <= 4099; n += (n < 40 ? 1 : 97)) {
                for (int i = 0; i < n; i++) { /* none's codes are the floats' bytes: choose them through the floats */
                    const uint32_t u = kind == 0 ? 7 : kind == 1 ? (pz_rng_below(&rr, 2) ? 3 : 250)
                                     : kind == 2 ? (uint32_t)pz_rng_u64(&rr) : 0;
                    float v;
                    if (kind < 3) {
                        const uint32_t w = u | u << 8 | u << 16 | (uint32_t)(kind == 2 ? (uint32_t)pz_rng_u64(&rr) : u) << 24;
                        memcpy(&v, &w, 4);
                        if (!isfinite(v)) v = 1.0f;
                    } else /* geometric: a few values common, many rare */
                        v = (float)(int)(-log(pz_rng_uniform(&rr) + 1e-12) * (kind == 3 ? 40 : 2));
                    x[i] = v;
                }
                const int64_t sh[] = {n};
                pz_codec *tx, *tp;
                CHECK(pz_codec_create(&tx, "none+huf") == PZ_OK && pz_codec_create(&tp, "none") == PZ_OK, "codecs");
                size_t lh, lp;
                static uint8_t fh[40000], fp[40000];
                CHECK(pz_codec_encode(tx, x, 1, sh, NULL, fh, sizeof fh, &lh, NULL) == PZ_OK, "%s", pz_last_error());
                CHECK(pz_codec_encode(tp, x, 1, sh, NULL, fp, sizeof fp, &lp, NULL) == PZ_OK, "%s", pz_last_error());
                CHECK(pz_frame_decode(fh, lh, a, 8192, NULL, NULL) == PZ_OK && pz_frame_decode(fp, lp, b, 8192, NULL, NULL) == PZ_OK &&
                          !memcmp(a, b, sizeof(float) * (size_t)n),
                      "kind %d, %d floats: %s", kind, n, pz_last_error());
                CHECK(lh <= lp && ((fh[7] & 4) != 0) == (lh < lp), "kind %d, %d floats: used only where smaller", kind, n);
                shrank += lh < lp, cases++;
                pz_codec_free(tx), pz_codec_free(tp);
            }
        CHECK(shrank > cases / 2, "huf shrank %d of %d", shrank, cases);
        /* bytes of probability 2^-1 .. 2^-24: Huffman's code is 24 bits deep, the payload's at most 11 */
        static uint8_t in[1 << 17], back[1 << 17], pay[(1 << 17) * 2];
        const size_t n = sizeof in;
        for (size_t i = 0; i < n; i++) {
            int k = 0;
            while (k < 23 && pz_rng_below(&rr, 2)) k++;
            in[i] = (uint8_t)(k * 7);
        }
        in[0] = 23 * 7; /* the rarest present */
        const size_t pl = huf_encode(in, n, pay);
        int longest = 0;
        for (int i = 0; i < 256; i++) longest = (pay[i / 2] >> (4 * (i % 2)) & 15) > longest ? pay[i / 2] >> (4 * (i % 2)) & 15 : longest;
        CHECK(pl > 0 && pl < n / 3 && longest == HUF_MAX_LEN, "a skewed histogram: %zu bytes of %zu, codes up to %d bits", pl, n, longest);
        CHECK(huf_decode(pay, pl, back, n) == PZ_OK && !memcmp(in, back, n), "and back: %s", pz_last_error());
    }

    { /* one code per byte: a byte above the width's largest code is refused */
        const int64_t sh[] = {4, 100};
        make("q6:bytes", 2, sh, NULL);
        CHECK(flen == 64 + 8 + 400 && pz_frame_decode(frame, flen, out, 400, NULL, NULL) == PZ_OK, "q6:bytes: %zu bytes", flen);
        memcpy(f, frame, flen), f[64 + 8 + 17] = 64, fix_crc(f, flen);
        expect("a 6-bit code of 64", f, flen, 400, PZ_FRAME_PAYLOAD);
        memcpy(f, frame, flen), f[64 + 8 + 17] = 63, fix_crc(f, flen);
        CHECK(pz_frame_decode(f, flen, out, 400, NULL, NULL) == PZ_OK, "63 is a 6-bit code");
    }

    /* random mutations, checksum repaired: never a crash */
    const char *specs[] = {"none", "fp16", "bf16", "q3", "q5:sym,per=sample", "q2:per=channel", "q4:per=token", "q1:sym",
                           "topk:0.1,index=bitmap", "topk:0.05,index=delta,values=q4", "topk:0.2,values=fp16",
                           "randk:0.1,unbiased", "randtopk:0.1,values=bf16", "ms:0.02,bits=3", "ms:0.1,bits=1,values=fp16",
                           "q2+zstd", "topk:0.3,values=q2+zstd:1", "q3+huf", "topk:0.3,values=q2+huf", "q6:bytes+huf"};
    const int64_t shapes[][4] = {{4, 3, 5, 7}, {2, 50}, {1, 1}, {7, 9}};
    const int ndims[] = {4, 2, 2, 2};
    pz_rng r;
    pz_rng_seed(&r, 99);
    int ok = 0, rejected = 0, other = 0;
    for (size_t s = 0; s < sizeof specs / sizeof *specs; s++)
        for (int sh = 0; sh < 4; sh++) {
            make(specs[s], ndims[sh], shapes[sh], NULL);
            for (int t = 0; t < 400; t++) {
                memcpy(f, frame, flen);
                size_t len = flen;
                const int edits = 1 + (int)pz_rng_below(&r, 4);
                for (int e = 0; e < edits; e++) {
                    const uint32_t what = pz_rng_below(&r, 10);
                    if (what < 6) f[pz_rng_below(&r, (uint32_t)len)] ^= (uint8_t)(1u << pz_rng_below(&r, 8));
                    else if (what < 8) f[8 + pz_rng_below(&r, 56)] = (uint8_t)pz_rng_u64(&r); /* header fields */
                    else if (len > 65) len -= 1 + pz_rng_below(&r, (uint32_t)(len - 65 < 16 ? len - 65 : 16));
                }
                /* keep the length field honest half the time, so decoding goes deeper */
                if (pz_rng_below(&r, 2)) {
                    const uint64_t pl = len - 64;
                    memcpy(f + 48, &pl, 8);
                }
                fix_crc(f, len);
                const pz_status st = pz_frame_decode(f, len, out, 4096, NULL, NULL);
                if (st == PZ_OK) ok++;
                else if (st == PZ_ERR_FORMAT) rejected++;
                else other++;
            }
        }
    printf("mutated frames: %d decoded, %d rejected, %d other\n", ok, rejected, other);
    CHECK(other == 0, "%d mutated frames gave an error other than PZ_ERR_FORMAT", other);
    CHECK(rejected > 1000, "mutations are mostly rejected (%d)", rejected);
    TEST_DONE();
}
