/* SPDX-License-Identifier: MIT */
/* codec_kernels.h — the hot loops of the codecs: min/max and max-abs scans,
 * quantize and dequantize, bit packing, fp16/bf16 conversion, threshold
 * filtering for top-k selection, CRC-32C. Three builds of the same source
 * (codec_kernels_impl.h): a plain scalar reference (no vectorisation), AVX2
 * and AVX-512; pz_codec_kernels_best() picks the widest the CPU runs.
 * Knows nothing of the frame format. */
#ifndef PZ_CODEC_KERNELS_H
#define PZ_CODEC_KERNELS_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *name;
    /* lo/hi over x[0..n); n >= 1 */
    void (*minmax)(const float *x, size_t n, float *lo, float *hi);
    float (*max_abs)(const float *x, size_t n);
    double (*sum_abs)(const float *x, size_t n);
    /* code = min(floor((x - lo) * inv_step + 0.5), levels), >= 0 (asymmetric) */
    void (*quant_asym)(const float *x, size_t n, float lo, float inv_step, int levels, uint8_t *codes);
    /* q = clamp(round-half-away(x * inv_step), -M, M), code = q + M (symmetric) */
    void (*quant_sym)(const float *x, size_t n, float inv_step, int M, uint8_t *codes);
    /* code = min(floor(|x| * inv_step + 0.5), cap) (MS) */
    size_t (*quant_abs)(const float *x, size_t n, float inv_step, int cap, uint8_t *codes); /* 1: a NaN or infinity came up */
    /* out[i] = x[i] < 0 */
    void (*negative)(const float *x, size_t n, uint8_t *out);
    /* out[i] = key(x[i]) >= t, key = |x| (or x when by_value) */
    void (*ge_flags)(const float *x, size_t n, float t, int by_value, uint8_t *out);
    size_t (*count_nonfinite)(const float *x, size_t n);
    /* stochastic: code = clamp(floor((x - lo) * inv_step + u), 0, levels), u from
     * hash(seed, index0 + i); symmetric when sym: v = x * inv_step + M */
    void (*quant_stoch)(const float *x, size_t n, float lo, float inv_step, int levels, int sym,
                        uint32_t seed, uint32_t index0, uint8_t *codes);
    /* x = lo + code * step */
    void (*dequant)(const uint8_t *codes, size_t n, float lo, float step, float *x);
    /* pack n codes of b bits (n % 8 == 0) into n*b/8 bytes, LSB first */
    void (*pack)(const uint8_t *codes, size_t n, int b, uint8_t *out);
    void (*unpack)(const uint8_t *in, size_t n, int b, uint8_t *codes);
    void (*f32_to_f16)(const float *x, size_t n, uint16_t *h);
    void (*f16_to_f32)(const uint16_t *h, size_t n, float *x);
    void (*f32_to_bf16)(const float *x, size_t n, uint16_t *h);
    void (*bf16_to_f32)(const uint16_t *h, size_t n, float *x);
    /* positions i with |x[i]| >= t (by_value: x[i] >= t), ascending, into idx
     * and their values into vals; returns the count. *nonfinite |= 1 when
     * some x[i] is NaN or infinite (in the same pass; NULL: not wanted).
     * The compacting kernels (select_ge, select_band, select_ge_bits,
     * keep_pattern) may write past the count: their outputs need room for n. */
    size_t (*select_ge)(const float *x, size_t n, float t, int by_value, uint32_t *idx, float *vals, unsigned *nonfinite);
    /* *n_hi = count of keys >= hi; the positions and values of the keys in
     * [lo, hi) into idx/vals, ascending; returns their count (key = |x|, or
     * x when by_value; idx NULL: the values alone); *nonfinite as select_ge's */
    size_t (*select_band)(const float *x, size_t n, float lo, float hi, int by_value, size_t *n_hi, uint32_t *idx,
                          float *vals, unsigned *nonfinite);
    uint32_t (*crc32c)(uint32_t crc, const void *data, size_t n);
    /* h = fp16 (bf16 when bf16) of x, as f32_to_f16/f32_to_bf16; returns
     * crc32c(0, h, 2n) */
    uint32_t (*half_encode)(const float *x, size_t n, uint16_t *h, int bf16);
    /* x = the floats of h, as f16_to_f32/bf16_to_f32; returns crc32c(0, h, 2n) */
    uint32_t (*half_decode)(const uint16_t *h, size_t n, float *x, int bf16);
    /* bit i of bits (LSB first) = key(x[i]) >= t, (n + 7) / 8 bytes written
     * (spare bits 0); the passing values, ascending, into vals (room for n
     * needed); returns their count */
    size_t (*select_ge_bits)(const float *x, size_t n, float t, int by_value, uint8_t *bits, float *vals);
    /* x = lo + code * step for n codes of b = 1, 2, 4 or 8 bits as pack
     * writes them: unpack and dequant in one pass */
    void (*dequant_packed)(const uint8_t *in, size_t n, int b, float lo, float step, float *x);
    /* the floats whose order-preserving pattern (bits ^ (sign ? ~0 :
     * 0x80000000)) & mask == want, in order, into dst (may be src); returns
     * their count (TopK's radix selection) */
    size_t (*keep_pattern)(const float *src, size_t n, uint32_t mask, uint32_t want, float *dst);
    /* in place: the pairs (idx[i], vals[i]) whose key (|vals[i]|, or vals[i]
     * when by_value) is >= t, in order, to the front; returns their count */
    size_t (*compact_ge)(uint32_t *idx, float *vals, size_t n, float t, int by_value);
    /* MS's decode: x[i] = vals[next++] where codes[i] == L (in order), else
     * codes[i] * step, negated where bit s0 + i of the packed signs is set
     * (NULL: no signs); returns how many values it took (vals needs 16
     * readable floats past the last taken) */
    size_t (*ms_place)(const uint8_t *codes, const uint8_t *signs, size_t s0, size_t n, int L, float step, const float *vals, float *x);
    /* how many of codes[0..n) equal L */
    size_t (*count_eq)(const uint8_t *codes, size_t n, int L);
} pz_codec_kernels;

const pz_codec_kernels *pz_codec_kernels_scalar(void);
const pz_codec_kernels *pz_codec_kernels_avx2(void);   /* NULL if the CPU lacks AVX2/F16C/SSE4.2 */
const pz_codec_kernels *pz_codec_kernels_avx512(void); /* NULL if the CPU lacks AVX-512F/BW/VL */
/* The widest available; PZ_CODEC_KERNELS=scalar|avx2|avx512 overrides. */
const pz_codec_kernels *pz_codec_kernels_best(void);

/* CRC-32C algebra (reflected, polynomial 0x82F63B78), to join the CRCs of
 * adjacent blocks as zlib's crc32_combine does for CRC-32:
 * crc(A || B) = crc(A) * x^(8 |B|) + crc(B), products mod P. */
uint32_t pz_crc32c_mul(uint32_t a, uint32_t b);
uint32_t pz_crc32c_shift(uint64_t len);                     /* x^(8 len) mod P */
uint32_t pz_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

/* CPUID: F16C (half-float conversion), which __builtin_cpu_supports does
 * not name on every compiler */
int pz_cpu_has_f16c(void);

/* The uniform u in [0, 1) stochastic rounding uses for element `index`
 * (tensors hold fewer than 2^31 elements): a Weyl sequence (index times the
 * golden ratio, plus the seed) through one xorshift-multiply-xorshift round;
 * in a loop the first product is an add, so one multiply per element. */
static inline float pz_stoch_uniform(uint32_t seed, uint32_t index) {
    uint32_t h = index * 0x9E3779B9u + seed;
    h ^= h >> 16;
    h *= 0x21F0AAADu;
    h ^= h >> 15;
    return (float)(h >> 8) * (1.0f / 16777216.0f);
}

#endif
