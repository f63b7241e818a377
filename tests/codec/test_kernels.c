/* SPDX-License-Identifier: MIT */
/* test_kernels.c — every SIMD build of the codec kernels (AVX2, AVX-512)
 * against the plain scalar reference, bit for bit, on many sizes (0, 1,
 * sizes around the vector widths, large) and awkward values (NaN, Inf,
 * subnormals, ties, negative zero); whole codecs too, under each build. */
#include "../test.h"
#include "kernels/codec_kernels.h"
#include "pipezip/codec.h"
#include "base/base.h"

static const size_t sizes[] = {0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 255, 256, 1000, 4097, 65537};

static void fill(float *x, size_t n, uint64_t seed, int awkward) {
    pz_rng r;
    pz_rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) x[i] = pz_rng_normal(&r) * 3.0f;
    if (!awkward) return;
    const float special[] = {0.0f, -0.0f, 1e-40f, -1e-41f, 65504.0f, 65520.0f, -1e30f, 0.5f, 1.5f, 2.5f, -2.5f, 5.9604645e-8f, 2.9802322e-8f};
    for (size_t i = 0; i < n; i += 5) x[i] = special[(i / 5) % (sizeof special / sizeof *special)];
}

static const char *first_bad = NULL;
#define NOTE(cond, what) do { if (cond) { bad++; if (!first_bad) first_bad = what; } } while (0)

static int same_bits(const void *a, const void *b, size_t n) { return n == 0 || !memcmp(a, b, n); }

static void compare(const pz_codec_kernels *ref, const pz_codec_kernels *k) {
    float *x = malloc(sizeof(float) * 70000), *ya = malloc(sizeof(float) * 70000), *yb = malloc(sizeof(float) * 70032);
    uint8_t *ca = malloc(70000), *cb = malloc(70000), *pa = malloc(70000), *pb = malloc(70000);
    uint16_t *ha = malloc(2 * 70000), *hb = malloc(2 * 70032);
    uint32_t *ia = malloc(4 * 70000), *ib = malloc(4 * 70000);
    float *va = malloc(4 * 70000), *vb = malloc(4 * 70000);
    int bad = 0;
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        const size_t n = sizes[si];
        for (int awk = 0; awk < 2; awk++) {
            fill(x, n, n * 7 + awk, awk);
            if (n) {
                float a0, a1, b0, b1;
                ref->minmax(x, n, &a0, &a1);
                k->minmax(x, n, &b0, &b1);
                NOTE(!(a0 == b0 && a1 == b1), "minmax");
                NOTE(ref->max_abs(x, n) != k->max_abs(x, n) && !(isnan(ref->max_abs(x, n)) && isnan(k->max_abs(x, n))), "max_abs");
            }
            bad += fabs(ref->sum_abs(x, n) - k->sum_abs(x, n)) > 1e-4 * (1 + ref->sum_abs(x, n)); /* reduction order */
            NOTE(ref->count_nonfinite(x, n) != k->count_nonfinite(x, n), "count_nonfinite");
            for (int b = 1; b <= 8; b++) {
                const int L = (1 << b) - 1, M = b > 1 ? (1 << (b - 1)) - 1 : 0;
                ref->quant_asym(x, n, -4.0f, L / 8.0f, L, ca);
                k->quant_asym(x, n, -4.0f, L / 8.0f, L, cb);
                NOTE(!same_bits(ca, cb, n), "quant_asym");
                if (M) {
                    ref->quant_sym(x, n, M / 5.0f, M, ca);
                    k->quant_sym(x, n, M / 5.0f, M, cb);
                    NOTE(!same_bits(ca, cb, n), "quant_sym");
                }
                ref->quant_stoch(x, n, -4.0f, L / 8.0f, L, 0, 1234, 77, ca);
                k->quant_stoch(x, n, -4.0f, L / 8.0f, L, 0, 1234, 77, cb);
                NOTE(!same_bits(ca, cb, n), "quant_stoch");
                ref->quant_abs(x, n, L / 4.0f, L - 1, ca);
                k->quant_abs(x, n, L / 4.0f, L - 1, cb);
                NOTE(!same_bits(ca, cb, n), "quant_abs");
                const size_t n8 = n & ~(size_t)7;
                ref->pack(ca, n8, b, pa);
                k->pack(ca, n8, b, pb);
                NOTE(!same_bits(pa, pb, n8 * b / 8), "pack");
                ref->unpack(pa, n8, b, cb);
                bad += !same_bits(ca, cb, n8); /* round trip */
                k->unpack(pa, n8, b, cb);
                NOTE(!same_bits(ca, cb, n8), "unpack");
                ref->dequant(ca, n, -1.0f, 0.37f, ya);
                k->dequant(ca, n, -1.0f, 0.37f, yb);
                NOTE(!same_bits(ya, yb, 4 * n), "dequant");
                if (8 % b == 0) { /* unpack + dequant in one pass: the same floats */
                    k->dequant_packed(pa, n8, b, -1.0f, 0.37f, yb);
                    NOTE(!same_bits(ya, yb, 4 * n8), "dequant_packed");
                }
            }
            for (int bv = 0; bv < 2; bv++) {
                ref->ge_flags(x, n, 1.5f, bv, ca);
                k->ge_flags(x, n, 1.5f, bv, cb);
                NOTE(!same_bits(ca, cb, n), "ge_flags");
            }
            ref->negative(x, n, ca);
            k->negative(x, n, cb);
            NOTE(!same_bits(ca, cb, n), "negative");
            if (awk) x[n / 2] = NAN, x[n / 3] = INFINITY;
            ref->f32_to_f16(x, n, ha);
            k->f32_to_f16(x, n, hb);
            NOTE(!same_bits(ha, hb, 2 * n), "f32_to_f16");
            ref->f16_to_f32(ha, n, ya);
            k->f16_to_f32(ha, n, yb);
            NOTE(!same_bits(ya, yb, 4 * n), "f16_to_f32");
            ref->f32_to_bf16(x, n, ha);
            k->f32_to_bf16(x, n, hb);
            NOTE(!same_bits(ha, hb, 2 * n), "f32_to_bf16");
            ref->bf16_to_f32(ha, n, ya);
            k->bf16_to_f32(ha, n, yb);
            NOTE(!same_bits(ya, yb, 4 * n), "bf16_to_f32");
            /* conversions fused with the CRC: same halves and floats as the
             * plain conversions, the CRC of the halves, at every alignment */
            for (int bf = 0; bf < 2; bf++)
                for (int off = 0; off < 8; off += 3)
                    {
                        uint16_t *hs = hb + 16 + off;
                        float *ys = yb + 16 + off;
                        if (bf) ref->f32_to_bf16(x, n, ha), ref->bf16_to_f32(ha, n, ya);
                        else ref->f32_to_f16(x, n, ha), ref->f16_to_f32(ha, n, ya);
                        const uint32_t want = ref->crc32c(0, ha, 2 * n);
                        NOTE(k->half_encode(x, n, hs, bf) != want || !same_bits(ha, hs, 2 * n), "half_encode");
                        memcpy(hs, ha, 2 * n);
                        NOTE(k->half_decode(hs, n, ys, bf) != want || !same_bits(ya, ys, 4 * n), "half_decode");
                    }
            for (int bv = 0; bv < 2; bv++) {
                /* the selection's pass also says whether x is finite */
                const unsigned want_nf = ref->count_nonfinite(x, n) != 0;
                unsigned nfa = 0, nfb = 0;
                const size_t na = ref->select_ge(x, n, 2.0f, bv, ia, va, &nfa), nb = k->select_ge(x, n, 2.0f, bv, ib, vb, &nfb);
                NOTE(na != nb || !same_bits(ia, ib, 4 * na) || !same_bits(va, vb, 4 * na), "select_ge");
                NOTE(nfa != want_nf || nfb != want_nf, "select_ge's non-finite flag");
                /* the bitmap form: bit i set exactly at the positions select_ge
                 * names, the same values, spare bits of the last byte 0 */
                memset(pb, 0xA5, (n + 7) / 8 + 2);
                const size_t nbits = k->select_ge_bits(x, n, 2.0f, bv, pb, vb);
                memset(pa, 0, (n + 7) / 8 + 2);
                for (size_t j = 0; j < na; j++) pa[ia[j] / 8] |= (uint8_t)(1u << (ia[j] % 8));
                NOTE(nbits != na || !same_bits(pa, pb, (n + 7) / 8) || !same_bits(va, vb, 4 * na) || pb[(n + 7) / 8] != 0xA5,
                     "select_ge_bits");
                size_t ha_n = 0, hb_n = 0;
                nfa = nfb = 0;
                const size_t ba = ref->select_band(x, n, 1.0f, 3.0f, bv, &ha_n, ia, va, &nfa);
                const size_t bb = k->select_band(x, n, 1.0f, 3.0f, bv, &hb_n, ib, vb, &nfb);
                NOTE(ba != bb || ha_n != hb_n || !same_bits(ia, ib, 4 * ba) || !same_bits(va, vb, 4 * ba), "select_band");
                NOTE(nfa != want_nf || nfb != want_nf, "select_band's non-finite flag");
                /* values alone (no positions) */
                const size_t bva = ref->select_band(x, n, 1.0f, 3.0f, bv, &ha_n, NULL, va, NULL);
                const size_t bvb = k->select_band(x, n, 1.0f, 3.0f, bv, &hb_n, NULL, vb, NULL);
                NOTE(bva != bvb || !same_bits(va, vb, 4 * bva), "select_band without positions");
                /* in place: every position and value as the input, the pairs >= 1.5 to the front */
                for (size_t j = 0; j < n; j++) ia[j] = ib[j] = (uint32_t)(j * 3 + 1), va[j] = vb[j] = x[j];
                const size_t ka = ref->compact_ge(ia, va, n, 1.5f, bv), kb = k->compact_ge(ib, vb, n, 1.5f, bv);
                NOTE(ka != kb || !same_bits(ia, ib, 4 * ka) || !same_bits(va, vb, 4 * ka), "compact_ge");
                /* TopK's radix pass: the floats whose top bits (order-preserving) match, in place and not */
                for (uint32_t sh = 24; sh <= 31; sh += 7) {
                    const uint32_t mask = ~0u << sh, want = 0xC0000000u & mask;
                    const size_t pa_n = ref->keep_pattern(x, n, mask, want, va), pb_n = k->keep_pattern(x, n, mask, want, vb);
                    NOTE(pa_n != pb_n || !same_bits(va, vb, 4 * pa_n), "keep_pattern");
                    memcpy(ya, x, 4 * n), memcpy(yb, x, 4 * n);
                    const size_t qa = ref->keep_pattern(ya, n, mask, want, ya), qb = k->keep_pattern(yb, n, mask, want, yb);
                    NOTE(qa != qb || !same_bits(ya, yb, 4 * qa), "keep_pattern in place");
                }
                if (n) { /* one infinity, at the last place (the tail of any vector loop) */
                    const float keep = x[n - 1];
                    x[n - 1] = -INFINITY;
                    nfa = nfb = 0;
                    ref->select_ge(x, n, 2.0f, bv, ia, va, &nfa), k->select_ge(x, n, 2.0f, bv, ib, vb, &nfb);
                    ref->select_band(x, n, 1.0f, 3.0f, bv, &ha_n, ia, va, &nfa), k->select_band(x, n, 1.0f, 3.0f, bv, &hb_n, ib, vb, &nfb);
                    NOTE(nfa != 1 || nfb != 1, "the non-finite flag of a last infinity");
                    x[n - 1] = keep;
                }
            }
            for (int bv = 0; bv < 2; bv++) { /* compact_ge: in place, the pairs that pass */
                for (size_t j = 0; j < n; j++) ia[j] = (uint32_t)(7 * j + 1), ib[j] = ia[j];
                memcpy(va, x, 4 * n), memcpy(vb, x, 4 * n);
                const size_t ka = ref->compact_ge(ia, va, n, 1.5f, bv), kb = k->compact_ge(ib, vb, n, 1.5f, bv);
                size_t want = 0, okp = 1;
                for (size_t j = 0; j < n; j++)
                    if ((bv ? x[j] : fabsf(x[j])) >= 1.5f) okp &= want < ka && ia[want] == 7 * j + 1 && same_bits(&va[want], &x[j], 4), want++;
                NOTE(ka != want || !okp || kb != ka || !same_bits(ia, ib, 4 * ka) || !same_bits(va, vb, 4 * ka), "compact_ge");
            }
            for (size_t s0 = 0; s0 <= 5; s0 += 5) { /* MS's placing: codes 0..3 (3 marks a kept value), packed signs from bit s0 */
                uint8_t *sg = pb; /* the signs, packed LSB first */
                memset(sg, 0, (n + s0 + 7) / 8 + 1);
                for (size_t j = 0; j < n; j++) {
                    ca[j] = (uint8_t)((j * 7 + j / 5) % 4);
                    if (j % 3 == 0) sg[(j + s0) / 8] |= (uint8_t)(1u << ((j + s0) % 8));
                }
                const size_t want = ref->count_eq(ca, n, 3);
                for (size_t j = 0; j < want + 16; j++) va[j] = 100.0f + (float)j;
                for (int withs = 0; withs < 2; withs++) {
                    const uint8_t *sp = withs ? sg : NULL;
                    const size_t ta = ref->ms_place(ca, sp, s0, n, 3, 0.25f, va, ya), tb = k->ms_place(ca, sp, s0, n, 3, 0.25f, va, yb);
                    size_t nx = 0, okp = 1;
                    for (size_t j = 0; j < n; j++) {
                        const float e = ca[j] == 3 ? va[nx++] : (withs && j % 3 == 0 ? -0.25f : 0.25f) * (float)ca[j];
                        okp &= same_bits(&ya[j], &e, 4);
                    }
                    NOTE(k->count_eq(ca, n, 3) != want || ta != want || tb != want || nx != want || !okp || !same_bits(ya, yb, 4 * n),
                         "ms_place");
                }
            }
            { /* radix selection's filter: a few masks and patterns, out of place and in place */
                const uint32_t masks[3] = {0xFF000000u, 0xFFFFF800u, 0xFFFFFFFFu};
                for (int mi = 0; mi < 3; mi++) {
                    uint32_t u;
                    memcpy(&u, x + n / 3, 4);
                    const uint32_t want = (u ^ ((uint32_t)((int32_t)u >> 31) | 0x80000000u)) & masks[mi];
                    const size_t ka = ref->keep_pattern(x, n, masks[mi], want, va), kb = k->keep_pattern(x, n, masks[mi], want, vb);
                    NOTE(ka != kb || !same_bits(va, vb, 4 * ka) || (n && !ka), "keep_pattern");
                    memcpy(ya, x, 4 * n);
                    const size_t kc = k->keep_pattern(ya, n, masks[mi], want, ya);
                    NOTE(kc != ka || !same_bits(ya, va, 4 * ka), "keep_pattern in place");
                }
            }
            NOTE(ref->crc32c(0, x, 4 * n) != k->crc32c(0, x, 4 * n), "crc32c");
            if (bad) {
                fprintf(stderr, "  %s differs from scalar at n=%zu awkward=%d (first: %s)\n", k->name, n, awk, first_bad);
                first_bad = NULL;
                test_failures++;
                bad = 0;
            }
        }
    }
    /* CRC-32C check value: "123456789" -> 0xE3069283 */
    CHECK(k->crc32c(0, "123456789", 9) == 0xE3069283u, "%s crc32c check value %08x", k->name, k->crc32c(0, "123456789", 9));
    /* every binary16 pattern converts like the scalar reference */
    for (uint32_t i = 0; i < 65536; i++) ha[i] = (uint16_t)i;
    ref->f16_to_f32(ha, 65536, ya);
    k->f16_to_f32(ha, 65536, yb);
    CHECK(same_bits(ya, yb, 4 * 65536), "%s: all 65536 halves convert identically", k->name);
    ref->f32_to_f16(ya, 65536, hb);
    int rt = 1;
    for (uint32_t i = 0; i < 65536; i++) rt &= hb[i] == ha[i] || ((ha[i] & 0x7C00) == 0x7C00 && (ha[i] & 0x3FF) && (hb[i] & 0x7C00) == 0x7C00);
    CHECK(rt, "%s: f16 -> f32 -> f16 is the identity (NaNs stay NaN)", k->name);
    free(x), free(ya), free(yb), free(ca), free(cb), free(pa), free(pb), free(ha), free(hb), free(ia), free(ib), free(va), free(vb);
}

int main(void) {
    const pz_codec_kernels *scalar = pz_codec_kernels_scalar();
    test_checks++;
    const pz_codec_kernels *simd[2] = {pz_codec_kernels_avx2(), pz_codec_kernels_avx512()};
    int tested = 0;
    for (int i = 0; i < 2; i++)
        if (simd[i]) compare(scalar, simd[i]), tested++;
    compare(scalar, scalar); /* the reference against itself: checks the CRC value and f16 identity */
    printf("compared %d SIMD builds with the scalar reference (best here: %s)\n", tested, pz_codec_kernels_best()->name);
    TEST_DONE();
}
