/* SPDX-License-Identifier: MIT */
/* codec_kernels_impl.h — the codec kernels, written once as plain loops and
 * compiled three times (codec_kernels_{scalar,avx2,avx512}.c) with
 * different target flags; PZ_KSUFFIX names each build's functions. Loops are
 * shaped so the compiler vectorises them (no early exits, no aliasing),
 * with intrinsics only where it cannot (fp16 conversion, CRC). Results are
 * bit-identical across builds: tests/codec/test_kernels.c checks it. */
#include "codec_kernels.h"

#include <math.h>
#include <string.h>
#if defined(PZ_USE_F16C) || defined(PZ_USE_SSE42) || defined(PZ_USE_AVX512)
#include <immintrin.h>
#endif

#define PZ_CAT2(a, b) a##_##b
#define PZ_CAT(a, b) PZ_CAT2(a, b)
#define K(name) PZ_CAT(name, PZ_KSUFFIX)

/* 1 when v is NaN or infinite (its exponent bits all ones), else 0 */
static inline uint32_t K(nonfinite)(float v) {
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return (u & 0x7f800000u) == 0x7f800000u;
}

static void K(minmax)(const float *restrict x, size_t n, float *lo, float *hi) {
    /* plain min/max vectorise; NaN and Inf are caught by an OR of the
     * exponent test over the bits (a float sum of x * 0 did the same,
     * reduced one lane at a time: a third of a 256-element call) */
    float a = x[0], b = x[0];
    uint32_t bad = 0;
#pragma omp simd reduction(min : a) reduction(max : b) reduction(| : bad)
    for (size_t i = 0; i < n; i++) {
        a = x[i] < a ? x[i] : a;
        b = x[i] > b ? x[i] : b;
        bad |= K(nonfinite)(x[i]);
    }
    if (bad) a = b = NAN;
    *lo = a, *hi = b;
}

static float K(max_abs)(const float *restrict x, size_t n) {
    float m = 0.0f;
    uint32_t bad = 0;
#pragma omp simd reduction(max : m) reduction(| : bad)
    for (size_t i = 0; i < n; i++) {
        const float a = fabsf(x[i]);
        m = a > m ? a : m;
        bad |= K(nonfinite)(x[i]);
    }
    return bad ? NAN : m;
}

/* The sum of |x| in one fixed order, whatever the build: per chunk of 4096,
 * eight lanes (lane j takes the elements i = j mod 8), added pairwise
 * (0+4, 2+6, 1+5, 3+7, then those pairs), then the chunk's tail in order;
 * chunks add up in double. An `omp simd reduction` would leave the order to
 * the compiler, and the q1:sym scale in a frame would depend on -O. */
static double K(sum_abs)(const float *restrict x, size_t n) {
    double total = 0.0;
    for (size_t i0 = 0; i0 < n; i0 += 4096) {
        const size_t e = i0 + 4096 < n ? i0 + 4096 : n, body = i0 + ((e - i0) & ~(size_t)7);
        float lane[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
        for (size_t i = i0; i < body; i += 8)
            for (int j = 0; j < 8; j++) lane[j] += fabsf(x[i + j]);
        float s = ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
        for (size_t i = body; i < e; i++) s += fabsf(x[i]);
        total += s;
    }
    return total;
}

static void K(quant_asym)(const float *restrict x, size_t n, float lo, float inv_step, int levels,
                          uint8_t *restrict codes) {
    const float top = (float)levels;
#pragma omp simd
    for (size_t i = 0; i < n; i++) {
        float v = (x[i] - lo) * inv_step + 0.5f;
        v = v < 0.0f ? 0.0f : v;
        v = v > top ? top : v;
        codes[i] = (uint8_t)(int)v; /* truncation of v >= 0 is floor */
    }
}

static void K(quant_sym)(const float *restrict x, size_t n, float inv_step, int M, uint8_t *restrict codes) {
    /* q = round-half-away-from-zero(x * inv_step) clamped to [-M, M]; code = q + M */
    const float fm = (float)M;
#pragma omp simd
    for (size_t i = 0; i < n; i++) {
        const float s = x[i] * inv_step;
        float a = fabsf(s) + 0.5f;
        a = a > fm ? fm : a;
        const int q = (int)a;
        codes[i] = (uint8_t)(s < 0.0f ? M - q : M + q);
    }
}

/* code = min(round-half-up(|x| * inv_step), cap): MS's codes for the
 * elements below Top_min. Returns 1 when an input gave NaN or infinity
 * (its code is then cap; the caller refuses the tensor), else 0. */
static size_t K(quant_abs)(const float *restrict x, size_t n, float inv_step, int cap, uint8_t *restrict codes) {
    const float top = (float)cap;
    uint32_t bad = 0; /* an OR of the exponent test, as minmax's */
#pragma omp simd reduction(| : bad)
    for (size_t i = 0; i < n; i++) {
        float a = fabsf(x[i]) * inv_step + 0.5f;
        bad |= K(nonfinite)(a);
        a = a < top ? a : top; /* NaN -> top: never converted to int */
        codes[i] = (uint8_t)(int)a;
    }
    return bad != 0;
}

/* 1 where x < 0 (the sign bit of MS's signed variant; -0.0 counts as 0) */
static void K(negative)(const float *restrict x, size_t n, uint8_t *restrict out) {
#pragma omp simd
    for (size_t i = 0; i < n; i++) out[i] = x[i] < 0.0f;
}

static void K(ge_flags)(const float *restrict x, size_t n, float t, int by_value, uint8_t *restrict out) {
    if (by_value) {
#pragma omp simd
        for (size_t i = 0; i < n; i++) out[i] = x[i] >= t;
    } else {
#pragma omp simd
        for (size_t i = 0; i < n; i++) out[i] = fabsf(x[i]) >= t;
    }
}

/* number of elements that are NaN or infinite */
static size_t K(count_nonfinite)(const float *restrict x, size_t n) {
    size_t c = 0;
#pragma omp simd reduction(+ : c)
    for (size_t i = 0; i < n; i++) c += K(nonfinite)(x[i]);
    return c;
}

static void K(quant_stoch)(const float *restrict x, size_t n, float lo, float inv_step, int levels, int sym,
                           uint32_t seed, uint32_t index0, uint8_t *restrict codes) {
    const float top = (float)levels;
    const float shift = sym ? (float)(levels / 2) : 0.0f;
    const float base = sym ? 0.0f : lo;
    /* the Weyl sequence of pz_stoch_uniform as a linear induction: an add
     * per vector, not a multiply per element (n < 2^31) */
    uint32_t w = index0 * 0x9E3779B9u + seed;
    const int m = (int)n;
#pragma omp simd linear(w : 0x9E3779B9u)
    for (int i = 0; i < m; i++) {
        uint32_t h = w;
        w += 0x9E3779B9u;
        h ^= h >> 16;
        h *= 0x21F0AAADu;
        h ^= h >> 15;
        float v = (x[i] - base) * inv_step + shift + (float)(h >> 8) * (1.0f / 16777216.0f);
        v = v > 0.0f ? v : 0.0f; /* max and min as the instructions define them */
        v = v < top ? v : top;
        codes[i] = (uint8_t)(int)v;
    }
}

static void K(dequant)(const uint8_t *restrict codes, size_t n, float lo, float step, float *restrict x) {
#pragma omp simd
    for (size_t i = 0; i < n; i++) x[i] = lo + (float)codes[i] * step;
}

/* x[j] = lo + code_j * step for n codes of b = 1, 2, 4 or 8 bits packed LSB
 * first in `in` (as pack writes them): unpack and dequantize in one pass,
 * the same floats as unpack followed by dequant */
static void K(dequant_packed)(const uint8_t *restrict in, size_t n, int b, float lo, float step, float *restrict x) {
    size_t j = 0;
    const unsigned mask = (1u << b) - 1;
#ifdef PZ_USE_AVX512
    {
        /* 16 codes (2b bytes): each byte copied to the lanes of its codes,
         * each lane shifted to its code */
        const int per = 8 / b; /* codes per byte */
        uint8_t rep[16];
        uint32_t sh[16];
        for (int l = 0; l < 16; l++) rep[l] = (uint8_t)(l / per), sh[l] = (uint32_t)((l % per) * b);
        const __m128i vrep = _mm_loadu_si128((const __m128i *)rep);
        const __m512i vsh = _mm512_loadu_si512(sh), vmask = _mm512_set1_epi32((int)mask);
        const __m512 vlo = _mm512_set1_ps(lo), vstep = _mm512_set1_ps(step);
        /* a 16-byte load for 8 bits, else 8 bytes (while 64 codes remain, so
         * that all 8 exist) */
        const size_t need = b == 8 ? 16 : 64;
        for (; j + need <= n; j += 16) {
            const __m128i v = b == 8 ? _mm_loadu_si128((const __m128i *)(in + j)) : _mm_loadl_epi64((const __m128i *)(in + j * b / 8));
            const __m512i d = _mm512_and_si512(_mm512_srlv_epi32(_mm512_cvtepu8_epi32(_mm_shuffle_epi8(v, vrep)), vsh), vmask);
            _mm512_storeu_ps(x + j, _mm512_add_ps(vlo, _mm512_mul_ps(_mm512_cvtepi32_ps(d), vstep)));
        }
    }
#elif defined(PZ_USE_F16C)
    {
        const int per = 8 / b;
        uint8_t rep[16] = {0};
        uint32_t sh[8];
        for (int l = 0; l < 8; l++) rep[l] = (uint8_t)(l / per), sh[l] = (uint32_t)((l % per) * b);
        const __m128i vrep = _mm_loadu_si128((const __m128i *)rep);
        const __m256i vsh = _mm256_loadu_si256((const __m256i *)sh), vmask = _mm256_set1_epi32((int)mask);
        const __m256 vlo = _mm256_set1_ps(lo), vstep = _mm256_set1_ps(step);
        const size_t need = 64 / (size_t)b; /* an 8-byte load: 8 bytes of codes remain */
        for (; j + need <= n; j += 8) { /* need >= 8 */
            const __m128i v = _mm_loadl_epi64((const __m128i *)(in + j * b / 8));
            const __m256i d = _mm256_and_si256(_mm256_srlv_epi32(_mm256_cvtepu8_epi32(_mm_shuffle_epi8(v, vrep)), vsh), vmask);
            _mm256_storeu_ps(x + j, _mm256_add_ps(vlo, _mm256_mul_ps(_mm256_cvtepi32_ps(d), vstep)));
        }
    }
#endif
    for (; j < n; j++) {
        const unsigned code = (in[j * b / 8] >> ((j * b) & 7)) & mask;
        x[j] = lo + (float)code * step;
    }
}

static void K(pack)(const uint8_t *restrict codes, size_t n, int b, uint8_t *restrict out) {
    /* byte-wise forms for 1, 2, 4 and 8 bits vectorise; 8 codes of any b
     * bits make exactly b bytes */
    switch (b) {
    case 8: memcpy(out, codes, n); return;
    case 4:
        for (size_t j = 0; j < n / 2; j++) out[j] = (uint8_t)(codes[2 * j] | codes[2 * j + 1] << 4);
        return;
    case 2:
        for (size_t j = 0; j < n / 4; j++)
            out[j] = (uint8_t)(codes[4 * j] | codes[4 * j + 1] << 2 | codes[4 * j + 2] << 4 | codes[4 * j + 3] << 6);
        return;
    case 1:
        for (size_t j = 0; j < n / 8; j++) {
            const uint8_t *c = codes + 8 * j;
            out[j] = (uint8_t)(c[0] | c[1] << 1 | c[2] << 2 | c[3] << 3 | c[4] << 4 | c[5] << 5 | c[6] << 6 | c[7] << 7);
        }
        return;
    }
    for (size_t g = 0; g < n / 8; g++) {
        const uint8_t *c = codes + 8 * g;
        uint64_t v = 0;
        for (int j = 0; j < 8; j++) v |= (uint64_t)c[j] << (j * b);
        uint8_t *o = out + (size_t)b * g;
        for (int j = 0; j < b; j++) o[j] = (uint8_t)(v >> (8 * j));
    }
}

static void K(unpack)(const uint8_t *restrict in, size_t n, int b, uint8_t *restrict codes) {
    switch (b) {
    case 8: memcpy(codes, in, n); return;
    case 4:
        for (size_t j = 0; j < n / 2; j++) codes[2 * j] = in[j] & 15, codes[2 * j + 1] = in[j] >> 4;
        return;
    case 2:
        for (size_t j = 0; j < n / 4; j++) {
            const uint8_t v = in[j];
            codes[4 * j] = v & 3, codes[4 * j + 1] = (v >> 2) & 3, codes[4 * j + 2] = (v >> 4) & 3, codes[4 * j + 3] = v >> 6;
        }
        return;
    case 1:
        for (size_t j = 0; j < n / 8; j++)
            for (int i = 0; i < 8; i++) codes[8 * j + i] = (in[j] >> i) & 1;
        return;
    }
    /* 3, 5, 6, 7 bits: 8 codes from b bytes, the width a constant in each
     * case so the loops unroll */
#define UNPACK_GROUPS(B)                                                                                                   \
    for (size_t g = 0; g < n / 8; g++) {                                                                                   \
        const uint8_t *p = in + (size_t)(B) * g;                                                                           \
        uint64_t v = 0;                                                                                                    \
        for (int j = 0; j < (B); j++) v |= (uint64_t)p[j] << (8 * j);                                                      \
        uint8_t *c = codes + 8 * g;                                                                                        \
        for (int j = 0; j < 8; j++) c[j] = (uint8_t)((v >> (j * (B))) & ((1u << (B)) - 1));                               \
    }
    switch (b) {
    case 3: UNPACK_GROUPS(3) return;
    case 5: UNPACK_GROUPS(5) return;
    case 6: UNPACK_GROUPS(6) return;
    default: UNPACK_GROUPS(7) return;
    }
#undef UNPACK_GROUPS
}

/* IEEE binary16 with round-to-nearest-even, exact for every input (inf,
 * NaN kept quiet, subnormals): the scalar definition the SIMD paths match */
static inline uint16_t f32_to_f16_one(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t ax = x & 0x7FFFFFFFu;
    if (ax >= 0x7F800000u) /* inf or NaN */
        return (uint16_t)(sign | 0x7C00u | (ax > 0x7F800000u ? 0x200u | ((ax >> 13) & 0x3FFu) : 0));
    if (ax >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u); /* rounds to >= 65520: inf */
    if (ax < 0x38800000u) { /* below the smallest normal half: subnormal or 0 */
        if (ax < 0x33000000u) return (uint16_t)sign; /* < 2^-25: rounds to 0 */
        const uint32_t e = ax >> 23, mant = (ax & 0x7FFFFFu) | 0x800000u;
        const uint32_t shift = 126 - e; /* 14..24 */
        uint32_t h = mant >> shift;
        const uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1))) h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((ax - 0x38000000u) >> 13);
    const uint32_t rem = ax & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++;
    return (uint16_t)(sign | h);
}

static inline float f16_to_f32_one(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t e = (h >> 10) & 0x1F, m = h & 0x3FFu;
    uint32_t x;
    if (e == 0) {
        if (m == 0) x = sign;
        else { /* subnormal: normalise */
            int s = 0;
            uint32_t mm = m;
            while (!(mm & 0x400u)) mm <<= 1, s++;
            x = sign | ((uint32_t)(113 - s) << 23) | ((mm & 0x3FFu) << 13);
        }
    } else if (e == 31) x = sign | 0x7F800000u | (m << 13) | (m ? 0x400000u : 0); /* NaNs come out quiet, as F16C does */
    else x = sign | ((e + 112) << 23) | (m << 13);
    float f;
    memcpy(&f, &x, 4);
    return f;
}

static void K(f32_to_f16)(const float *restrict x, size_t n, uint16_t *restrict h) {
    size_t i = 0;
#ifdef PZ_USE_AVX512
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256((__m256i *)(h + i), _mm512_cvtps_ph(_mm512_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
#endif
#ifdef PZ_USE_F16C
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(h + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
#endif
    for (; i < n; i++) h[i] = f32_to_f16_one(x[i]);
}

static void K(f16_to_f32)(const uint16_t *restrict h, size_t n, float *restrict x) {
    size_t i = 0;
#ifdef PZ_USE_AVX512
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(x + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(h + i))));
#endif
#ifdef PZ_USE_F16C
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + i))));
#endif
    for (; i < n; i++) x[i] = f16_to_f32_one(h[i]);
}

/* bfloat16: round to nearest even on the upper half; NaN stays a (quiet) NaN */
static inline uint16_t f32_to_bf16_one(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    const uint32_t is_nan = (u & 0x7FFFFFFFu) > 0x7F800000u;
    const uint32_t r = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
    return (uint16_t)(is_nan ? ((u >> 16) | 0x40u) : r);
}

static void K(f32_to_bf16)(const float *restrict x, size_t n, uint16_t *restrict h) {
#pragma omp simd
    for (size_t i = 0; i < n; i++) h[i] = f32_to_bf16_one(x[i]);
}

static inline float bf16_to_f32_one(uint16_t v) {
    const uint32_t u = (uint32_t)v << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void K(bf16_to_f32)(const uint16_t *restrict h, size_t n, float *restrict x) {
#pragma omp simd
    for (size_t i = 0; i < n; i++) x[i] = bf16_to_f32_one(h[i]);
}

#ifdef PZ_USE_SSE42
/* Three crc32 streams over consecutive thirds of `len` bytes each (the
 * first started from the running register, the others from 0) joined into
 * one register: c0 * x^(8 len) + c1, times x^(8 len), + c2. The shift is
 * cached per thread: callers repeat the same lengths. */
static uint32_t K(join_thirds)(uint64_t c0, uint64_t c1, uint64_t c2, size_t len) {
    static _Thread_local size_t cached_len = 0;
    static _Thread_local uint32_t cached = 0;
    if (cached_len != len) cached = pz_crc32c_shift(len), cached_len = len;
    const uint32_t c = pz_crc32c_mul((uint32_t)c0, cached) ^ (uint32_t)c1;
    return pz_crc32c_mul(c, cached) ^ (uint32_t)c2;
}
#endif

/* ---- fp16/bf16 conversion fused with the CRC-32C of the halves ----------
 * One pass: each vector of halves is checksummed from the register it was
 * made in (encode) or loaded into (decode), in three interleaved streams
 * over the thirds of the range (the crc32 instruction's latency), joined
 * as crc32c() does. */
static uint32_t K(crc32c)(uint32_t crc, const void *data, size_t n);

#ifdef PZ_USE_F16C
#ifdef PZ_USE_AVX512
enum { HV = 16 }; /* halves per vector */
typedef __m256i hvec;
static inline hvec half_enc_vec(const float *x, int bf16) {
    const __m512 f = _mm512_loadu_ps(x);
    if (!bf16) return _mm512_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT);
    const __m512i u = _mm512_castps_si512(f), hi = _mm512_srli_epi32(u, 16);
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7FFFFFFF)),
                                                  _mm512_set1_epi32(0x7F800000));
    __m512i r = _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7FFF)), _mm512_and_si512(hi, _mm512_set1_epi32(1)));
    r = _mm512_mask_mov_epi32(_mm512_srli_epi32(r, 16), nan, _mm512_or_si512(hi, _mm512_set1_epi32(0x40)));
    return _mm512_cvtepi32_epi16(r);
}
static inline void half_dec_vec(hvec v, float *x, int bf16) {
    _mm512_storeu_ps(x, bf16 ? _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16)) : _mm512_cvtph_ps(v));
}
static inline hvec half_load(const uint16_t *h) { return _mm256_loadu_si256((const __m256i *)h); }
static inline void half_store(uint16_t *h, hvec v) { _mm256_storeu_si256((__m256i *)h, v); }
#else
enum { HV = 8 };
typedef __m128i hvec;
static inline hvec half_enc_vec(const float *x, int bf16) {
    const __m256 f = _mm256_loadu_ps(x);
    if (!bf16) return _mm256_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT);
    const __m256i u = _mm256_castps_si256(f), hi = _mm256_srli_epi32(u, 16);
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7FFFFFFF)), _mm256_set1_epi32(0x7F800000));
    __m256i r = _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7FFF)), _mm256_and_si256(hi, _mm256_set1_epi32(1)));
    r = _mm256_blendv_epi8(_mm256_srli_epi32(r, 16), _mm256_or_si256(hi, _mm256_set1_epi32(0x40)), nan);
    /* 32-bit lanes (each < 2^16) to 16-bit: pack within 128-bit halves, then gather the halves */
    return _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08));
}
static inline void half_dec_vec(hvec v, float *x, int bf16) {
    _mm256_storeu_ps(x, bf16 ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(v), 16)) : _mm256_cvtph_ps(v));
}
static inline hvec half_load(const uint16_t *h) { return _mm_loadu_si128((const __m128i *)h); }
static inline void half_store(uint16_t *h, hvec v) { _mm_storeu_si128((__m128i *)h, v); }
#endif

/* the lanes straight from the register (through memory, a wide store read
 * back in 8-byte pieces can miss store forwarding) */
static inline uint64_t crc_hvec(uint64_t c, hvec v) {
#ifdef PZ_USE_AVX512
    const __m128i lo = _mm256_castsi256_si128(v), hi = _mm256_extracti128_si256(v, 1);
    c = _mm_crc32_u64(c, (uint64_t)_mm_cvtsi128_si64(lo));
    c = _mm_crc32_u64(c, (uint64_t)_mm_extract_epi64(lo, 1));
    c = _mm_crc32_u64(c, (uint64_t)_mm_cvtsi128_si64(hi));
    return _mm_crc32_u64(c, (uint64_t)_mm_extract_epi64(hi, 1));
#else
    c = _mm_crc32_u64(c, (uint64_t)_mm_cvtsi128_si64(v));
    return _mm_crc32_u64(c, (uint64_t)_mm_extract_epi64(v, 1));
#endif
}

#endif

static uint32_t K(half_encode)(const float *restrict x, size_t n, uint16_t *restrict h, int bf16) {
#ifdef PZ_USE_F16C
    uint32_t c = ~0u;
    size_t i = 0;
    const size_t third = n / (3 * HV) * HV;
    if (third) {
        const float *x0 = x, *x1 = x0 + third, *x2 = x1 + third;
        uint16_t *h0 = h, *h1 = h0 + third, *h2 = h1 + third;
        uint64_t c0 = c, c1 = 0, c2 = 0;
        for (size_t j = 0; j < third; j += HV) {
            const hvec v0 = half_enc_vec(x0 + j, bf16), v1 = half_enc_vec(x1 + j, bf16), v2 = half_enc_vec(x2 + j, bf16);
            c0 = crc_hvec(c0, v0), c1 = crc_hvec(c1, v1), c2 = crc_hvec(c2, v2);
            half_store(h0 + j, v0), half_store(h1 + j, v1), half_store(h2 + j, v2);
        }
        c = K(join_thirds)(c0, c1, c2, 2 * third);
        i += 3 * third;
    }
    for (; i < n; i++) {
        h[i] = bf16 ? f32_to_bf16_one(x[i]) : f32_to_f16_one(x[i]);
        c = _mm_crc32_u16(c, h[i]);
    }
    return ~c;
#else
    for (size_t i = 0; i < n; i++) h[i] = bf16 ? f32_to_bf16_one(x[i]) : f32_to_f16_one(x[i]);
    return K(crc32c)(0, h, 2 * n);
#endif
}

static uint32_t K(half_decode)(const uint16_t *restrict h, size_t n, float *restrict x, int bf16) {
#ifdef PZ_USE_F16C
    uint32_t c = ~0u;
    size_t i = 0;
    const size_t third = n / (3 * HV) * HV;
    if (third) {
        const uint16_t *h0 = h, *h1 = h0 + third, *h2 = h1 + third;
        float *x0 = x, *x1 = x0 + third, *x2 = x1 + third;
        uint64_t c0 = c, c1 = 0, c2 = 0;
        for (size_t j = 0; j < third; j += HV) {
            const hvec v0 = half_load(h0 + j), v1 = half_load(h1 + j), v2 = half_load(h2 + j);
            c0 = crc_hvec(c0, v0), c1 = crc_hvec(c1, v1), c2 = crc_hvec(c2, v2);
            half_dec_vec(v0, x0 + j, bf16), half_dec_vec(v1, x1 + j, bf16), half_dec_vec(v2, x2 + j, bf16);
        }
        c = K(join_thirds)(c0, c1, c2, 2 * third);
        i += 3 * third;
    }
    for (; i < n; i++) {
        c = _mm_crc32_u16(c, h[i]);
        x[i] = bf16 ? bf16_to_f32_one(h[i]) : f16_to_f32_one(h[i]);
    }
    return ~c;
#else
    if (bf16) K(bf16_to_f32)(h, n, x);
    else K(f16_to_f32)(h, n, x);
    return K(crc32c)(0, h, 2 * n);
#endif
}

#ifdef PZ_USE_AVX512
/* the lanes of m, packed to the front of a register, stored whole (the
 * lanes past the packed ones are left for the next store to overwrite): the
 * compress-to-memory instruction is microcoded and many times slower on some
 * CPUs (AMD Zen 4), and a masked store costs more than a plain one. So the
 * destination needs room for every element read: the compacting kernels
 * write at most n entries whatever they keep. */
static inline void compress_store_ps(float *vals, __mmask16 m, __m512 v) { _mm512_storeu_ps(vals, _mm512_maskz_compress_ps(m, v)); }
static inline void compress_store(uint32_t *idx, float *vals, __mmask16 m, __m512i pos, __m512 v) {
    _mm512_storeu_si512(idx, _mm512_maskz_compress_epi32(m, pos));
    compress_store_ps(vals, m, v);
}
#endif

#ifdef PZ_USE_AVX2
/* AVX2 has no compress: the lanes of an 8-bit mask packed to the front by
 * a permutation, its lane indices 3 bits each in LEFT_PACK[mask] (lane k of
 * the result takes lane (LEFT_PACK[m] >> 3k) & 7), the whole vector stored
 * (the lanes past the packed ones are overwritten by the next store, as the
 * AVX-512 path's: the outputs have room for every element read) */
static const uint32_t LEFT_PACK[256] = {
    0x000000, 0x000000, 0x000001, 0x000008, 0x000002, 0x000010, 0x000011, 0x000088,
    0x000003, 0x000018, 0x000019, 0x0000C8, 0x00001A, 0x0000D0, 0x0000D1, 0x000688,
    0x000004, 0x000020, 0x000021, 0x000108, 0x000022, 0x000110, 0x000111, 0x000888,
    0x000023, 0x000118, 0x000119, 0x0008C8, 0x00011A, 0x0008D0, 0x0008D1, 0x004688,
    0x000005, 0x000028, 0x000029, 0x000148, 0x00002A, 0x000150, 0x000151, 0x000A88,
    0x00002B, 0x000158, 0x000159, 0x000AC8, 0x00015A, 0x000AD0, 0x000AD1, 0x005688,
    0x00002C, 0x000160, 0x000161, 0x000B08, 0x000162, 0x000B10, 0x000B11, 0x005888,
    0x000163, 0x000B18, 0x000B19, 0x0058C8, 0x000B1A, 0x0058D0, 0x0058D1, 0x02C688,
    0x000006, 0x000030, 0x000031, 0x000188, 0x000032, 0x000190, 0x000191, 0x000C88,
    0x000033, 0x000198, 0x000199, 0x000CC8, 0x00019A, 0x000CD0, 0x000CD1, 0x006688,
    0x000034, 0x0001A0, 0x0001A1, 0x000D08, 0x0001A2, 0x000D10, 0x000D11, 0x006888,
    0x0001A3, 0x000D18, 0x000D19, 0x0068C8, 0x000D1A, 0x0068D0, 0x0068D1, 0x034688,
    0x000035, 0x0001A8, 0x0001A9, 0x000D48, 0x0001AA, 0x000D50, 0x000D51, 0x006A88,
    0x0001AB, 0x000D58, 0x000D59, 0x006AC8, 0x000D5A, 0x006AD0, 0x006AD1, 0x035688,
    0x0001AC, 0x000D60, 0x000D61, 0x006B08, 0x000D62, 0x006B10, 0x006B11, 0x035888,
    0x000D63, 0x006B18, 0x006B19, 0x0358C8, 0x006B1A, 0x0358D0, 0x0358D1, 0x1AC688,
    0x000007, 0x000038, 0x000039, 0x0001C8, 0x00003A, 0x0001D0, 0x0001D1, 0x000E88,
    0x00003B, 0x0001D8, 0x0001D9, 0x000EC8, 0x0001DA, 0x000ED0, 0x000ED1, 0x007688,
    0x00003C, 0x0001E0, 0x0001E1, 0x000F08, 0x0001E2, 0x000F10, 0x000F11, 0x007888,
    0x0001E3, 0x000F18, 0x000F19, 0x0078C8, 0x000F1A, 0x0078D0, 0x0078D1, 0x03C688,
    0x00003D, 0x0001E8, 0x0001E9, 0x000F48, 0x0001EA, 0x000F50, 0x000F51, 0x007A88,
    0x0001EB, 0x000F58, 0x000F59, 0x007AC8, 0x000F5A, 0x007AD0, 0x007AD1, 0x03D688,
    0x0001EC, 0x000F60, 0x000F61, 0x007B08, 0x000F62, 0x007B10, 0x007B11, 0x03D888,
    0x000F63, 0x007B18, 0x007B19, 0x03D8C8, 0x007B1A, 0x03D8D0, 0x03D8D1, 0x1EC688,
    0x00003E, 0x0001F0, 0x0001F1, 0x000F88, 0x0001F2, 0x000F90, 0x000F91, 0x007C88,
    0x0001F3, 0x000F98, 0x000F99, 0x007CC8, 0x000F9A, 0x007CD0, 0x007CD1, 0x03E688,
    0x0001F4, 0x000FA0, 0x000FA1, 0x007D08, 0x000FA2, 0x007D10, 0x007D11, 0x03E888,
    0x000FA3, 0x007D18, 0x007D19, 0x03E8C8, 0x007D1A, 0x03E8D0, 0x03E8D1, 0x1F4688,
    0x0001F5, 0x000FA8, 0x000FA9, 0x007D48, 0x000FAA, 0x007D50, 0x007D51, 0x03EA88,
    0x000FAB, 0x007D58, 0x007D59, 0x03EAC8, 0x007D5A, 0x03EAD0, 0x03EAD1, 0x1F5688,
    0x000FAC, 0x007D60, 0x007D61, 0x03EB08, 0x007D62, 0x03EB10, 0x03EB11, 0x1F5888,
    0x007D63, 0x03EB18, 0x03EB19, 0x1F58C8, 0x03EB1A, 0x1F58D0, 0x1F58D1, 0xFAC688,
};
static inline __m256i left_pack(unsigned m) {
    const __m256i shifts = _mm256_setr_epi32(0, 3, 6, 9, 12, 15, 18, 21);
    return _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)LEFT_PACK[m]), shifts), _mm256_set1_epi32(7));
}
/* and the inverse: lane j of the result takes lane popcount(m & ((1 << j) - 1))
 * of the source where bit j of m is set (MS's decode puts the kept values
 * back in their places) */
static const uint32_t EXPAND[256] = {
    0x000000, 0x000000, 0x000000, 0x000008, 0x000000, 0x000040, 0x000040, 0x000088,
    0x000000, 0x000200, 0x000200, 0x000408, 0x000200, 0x000440, 0x000440, 0x000688,
    0x000000, 0x001000, 0x001000, 0x002008, 0x001000, 0x002040, 0x002040, 0x003088,
    0x001000, 0x002200, 0x002200, 0x003408, 0x002200, 0x003440, 0x003440, 0x004688,
    0x000000, 0x008000, 0x008000, 0x010008, 0x008000, 0x010040, 0x010040, 0x018088,
    0x008000, 0x010200, 0x010200, 0x018408, 0x010200, 0x018440, 0x018440, 0x020688,
    0x008000, 0x011000, 0x011000, 0x01A008, 0x011000, 0x01A040, 0x01A040, 0x023088,
    0x011000, 0x01A200, 0x01A200, 0x023408, 0x01A200, 0x023440, 0x023440, 0x02C688,
    0x000000, 0x040000, 0x040000, 0x080008, 0x040000, 0x080040, 0x080040, 0x0C0088,
    0x040000, 0x080200, 0x080200, 0x0C0408, 0x080200, 0x0C0440, 0x0C0440, 0x100688,
    0x040000, 0x081000, 0x081000, 0x0C2008, 0x081000, 0x0C2040, 0x0C2040, 0x103088,
    0x081000, 0x0C2200, 0x0C2200, 0x103408, 0x0C2200, 0x103440, 0x103440, 0x144688,
    0x040000, 0x088000, 0x088000, 0x0D0008, 0x088000, 0x0D0040, 0x0D0040, 0x118088,
    0x088000, 0x0D0200, 0x0D0200, 0x118408, 0x0D0200, 0x118440, 0x118440, 0x160688,
    0x088000, 0x0D1000, 0x0D1000, 0x11A008, 0x0D1000, 0x11A040, 0x11A040, 0x163088,
    0x0D1000, 0x11A200, 0x11A200, 0x163408, 0x11A200, 0x163440, 0x163440, 0x1AC688,
    0x000000, 0x200000, 0x200000, 0x400008, 0x200000, 0x400040, 0x400040, 0x600088,
    0x200000, 0x400200, 0x400200, 0x600408, 0x400200, 0x600440, 0x600440, 0x800688,
    0x200000, 0x401000, 0x401000, 0x602008, 0x401000, 0x602040, 0x602040, 0x803088,
    0x401000, 0x602200, 0x602200, 0x803408, 0x602200, 0x803440, 0x803440, 0xA04688,
    0x200000, 0x408000, 0x408000, 0x610008, 0x408000, 0x610040, 0x610040, 0x818088,
    0x408000, 0x610200, 0x610200, 0x818408, 0x610200, 0x818440, 0x818440, 0xA20688,
    0x408000, 0x611000, 0x611000, 0x81A008, 0x611000, 0x81A040, 0x81A040, 0xA23088,
    0x611000, 0x81A200, 0x81A200, 0xA23408, 0x81A200, 0xA23440, 0xA23440, 0xC2C688,
    0x200000, 0x440000, 0x440000, 0x680008, 0x440000, 0x680040, 0x680040, 0x8C0088,
    0x440000, 0x680200, 0x680200, 0x8C0408, 0x680200, 0x8C0440, 0x8C0440, 0xB00688,
    0x440000, 0x681000, 0x681000, 0x8C2008, 0x681000, 0x8C2040, 0x8C2040, 0xB03088,
    0x681000, 0x8C2200, 0x8C2200, 0xB03408, 0x8C2200, 0xB03440, 0xB03440, 0xD44688,
    0x440000, 0x688000, 0x688000, 0x8D0008, 0x688000, 0x8D0040, 0x8D0040, 0xB18088,
    0x688000, 0x8D0200, 0x8D0200, 0xB18408, 0x8D0200, 0xB18440, 0xB18440, 0xD60688,
    0x688000, 0x8D1000, 0x8D1000, 0xB1A008, 0x8D1000, 0xB1A040, 0xB1A040, 0xD63088,
    0x8D1000, 0xB1A200, 0xB1A200, 0xD63408, 0xB1A200, 0xD63440, 0xD63440, 0xFAC688,
};
static inline __m256i expand_perm(unsigned m) {
    const __m256i shifts = _mm256_setr_epi32(0, 3, 6, 9, 12, 15, 18, 21);
    return _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)EXPAND[m]), shifts), _mm256_set1_epi32(7));
}
/* the 8 lanes whose bit is set in m, as an all-ones lane mask */
static inline __m256i lanes_of(unsigned m) {
    const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    return _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32((int)m), bit), bit);
}
static inline void pack_store_ps(float *vals, unsigned m, __m256 v) { _mm256_storeu_ps(vals, _mm256_permutevar8x32_ps(v, left_pack(m))); }
static inline void pack_store(uint32_t *idx, float *vals, unsigned m, __m256i pos, __m256 v) {
    const __m256i p = left_pack(m);
    _mm256_storeu_si256((__m256i *)(void *)idx, _mm256_permutevar8x32_epi32(pos, p));
    _mm256_storeu_ps(vals, _mm256_permutevar8x32_ps(v, p));
}
#endif

static size_t K(select_ge)(const float *restrict x, size_t n, float t, int by_value, uint32_t *restrict idx,
                          float *restrict vals, unsigned *nonfinite) {
    size_t c = 0, i = 0;
    unsigned bad = 0;
#ifdef PZ_USE_AVX512
    /* compress-store the positions and values that pass, 16 at a time */
    const __m512 vt = _mm512_set1_ps(t), vmax = _mm512_set1_ps(3.40282347e38f);
    const __m512i step = _mm512_set1_epi32(16);
    __m512i pos = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    __mmask16 nf = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512 v = _mm512_loadu_ps(x + i), a = _mm512_abs_ps(v);
        const __m512 key = by_value ? v : a;
        const __mmask16 m = _mm512_cmp_ps_mask(key, vt, _CMP_GE_OQ);
        nf |= _mm512_cmp_ps_mask(a, vmax, _CMP_NLE_UQ); /* NaN or infinite */
        compress_store(idx + c, vals + c, m, pos, v);
        c += (size_t)__builtin_popcount(m);
        pos = _mm512_add_epi32(pos, step);
    }
    bad = nf != 0;
#elif defined(PZ_USE_AVX2)
    const __m256 vt = _mm256_set1_ps(t), vmax = _mm256_set1_ps(3.40282347e38f), sign = _mm256_set1_ps(-0.0f);
    const __m256i step = _mm256_set1_epi32(8);
    __m256i pos = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    unsigned nf = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i), a = _mm256_andnot_ps(sign, v);
        const unsigned m = (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(by_value ? v : a, vt, _CMP_GE_OQ));
        nf |= (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(a, vmax, _CMP_NLE_UQ)); /* NaN or infinite */
        pack_store(idx + c, vals + c, m, pos, v);
        c += (size_t)__builtin_popcount(m);
        pos = _mm256_add_epi32(pos, step);
    }
    bad = nf != 0;
#endif
    /* branch-free compaction: always write, advance by the predicate */
    for (; i < n; i++) {
        idx[c] = (uint32_t)i;
        vals[c] = x[i];
        c += (by_value ? x[i] : fabsf(x[i])) >= t;
        bad |= !(fabsf(x[i]) <= 3.40282347e38f);
    }
    if (nonfinite) *nonfinite |= bad;
    return c;
}

/* TopK's bitmap pass: bit i of bits (LSB first) = key(x[i]) >= t, and
 * the values that pass, in order, into vals; returns their count. Writes
 * (n + 7) / 8 bytes of bits (the last byte's spare bits 0). One pass: the
 * comparison's mask is the bitmap. */
static size_t K(select_ge_bits)(const float *restrict x, size_t n, float t, int by_value, uint8_t *restrict bits,
                               float *restrict vals) {
    size_t c = 0, i = 0;
#ifdef PZ_USE_AVX512
    const __m512 vt = _mm512_set1_ps(t);
    for (; i + 16 <= n; i += 16) {
        const __m512 v = _mm512_loadu_ps(x + i);
        const __m512 key = by_value ? v : _mm512_abs_ps(v);
        const __mmask16 m = _mm512_cmp_ps_mask(key, vt, _CMP_GE_OQ);
        const uint16_t mb = (uint16_t)m;
        memcpy(bits + i / 8, &mb, 2);
        compress_store_ps(vals + c, m, v);
        c += (size_t)__builtin_popcount(m);
    }
#elif defined(PZ_USE_F16C)
    const __m256 vt = _mm256_set1_ps(t), sign = _mm256_set1_ps(-0.0f);
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        const __m256 key = by_value ? v : _mm256_andnot_ps(sign, v);
        const unsigned m = (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(key, vt, _CMP_GE_OQ));
        bits[i / 8] = (uint8_t)m;
        pack_store_ps(vals + c, m, v);
        c += (size_t)__builtin_popcount(m);
    }
#endif
    for (; i < n; i += 8) {
        unsigned byte = 0;
        const size_t e = i + 8 < n ? i + 8 : n;
        for (size_t j = i; j < e; j++) {
            const unsigned pass = (by_value ? x[j] : fabsf(x[j])) >= t;
            byte |= pass << (j - i);
            vals[c] = x[j];
            c += pass;
        }
        bits[i / 8] = (uint8_t)byte;
    }
    return c;
}

static size_t K(select_band)(const float *restrict x, size_t n, float lo, float hi, int by_value, size_t *n_hi,
                            uint32_t *restrict idx, float *restrict vals, unsigned *nonfinite) {
    size_t c = 0, above = 0, i = 0;
    unsigned bad = 0;
#ifdef PZ_USE_AVX512
    const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi), vmax = _mm512_set1_ps(3.40282347e38f);
    const __m512i step = _mm512_set1_epi32(16);
    __m512i pos = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    __mmask16 nf = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512 v = _mm512_loadu_ps(x + i), a = _mm512_abs_ps(v);
        const __m512 key = by_value ? v : a;
        const __mmask16 mh = _mm512_cmp_ps_mask(key, vhi, _CMP_GE_OQ);
        const __mmask16 mb = _mm512_cmp_ps_mask(key, vlo, _CMP_GE_OQ) & (__mmask16)~mh;
        nf |= _mm512_cmp_ps_mask(a, vmax, _CMP_NLE_UQ); /* NaN or infinite */
        above += (size_t)__builtin_popcount(mh);
        if (idx) compress_store(idx + c, vals + c, mb, pos, v);
        else compress_store_ps(vals + c, mb, v);
        c += (size_t)__builtin_popcount(mb);
        pos = _mm512_add_epi32(pos, step);
    }
    bad = nf != 0;
#elif defined(PZ_USE_AVX2)
    const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi), vmax = _mm256_set1_ps(3.40282347e38f), sign = _mm256_set1_ps(-0.0f);
    const __m256i step = _mm256_set1_epi32(8);
    __m256i pos = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    unsigned nf = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i), a = _mm256_andnot_ps(sign, v);
        const __m256 key = by_value ? v : a;
        const unsigned mh = (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(key, vhi, _CMP_GE_OQ));
        const unsigned mb = (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(key, vlo, _CMP_GE_OQ)) & ~mh;
        nf |= (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(a, vmax, _CMP_NLE_UQ));
        above += (size_t)__builtin_popcount(mh);
        if (idx) pack_store(idx + c, vals + c, mb, pos, v);
        else pack_store_ps(vals + c, mb, v);
        c += (size_t)__builtin_popcount(mb);
        pos = _mm256_add_epi32(pos, step);
    }
    bad = nf != 0;
#endif
    for (; i < n; i++) {
        const float key = by_value ? x[i] : fabsf(x[i]);
        const int h = key >= hi;
        above += h;
        if (idx) idx[c] = (uint32_t)i;
        vals[c] = x[i];
        c += (key >= lo) & !h;
        bad |= !(fabsf(x[i]) <= 3.40282347e38f);
    }
    *n_hi = above;
    if (nonfinite) *nonfinite |= bad;
    return c;
}

/* MS's decode of n elements: x[i] = vals[next++] where codes[i] == L (in
 * order), else code * step, negated where sign bit s0 + i of signs is set
 * (LSB first; signs NULL: none); returns how many values it took. The
 * caller has checked that the marks do not outrun vals, and vals has 16
 * readable floats past the last one taken. */
static size_t K(ms_place)(const uint8_t *restrict codes, const uint8_t *restrict signs, size_t s0, size_t n, int L, float step,
                          const float *restrict vals, float *restrict x) {
    size_t next = 0, i = 0;
#ifdef PZ_USE_AVX512
    const __m512 vstep = _mm512_set1_ps(step);
    const __m128i vl = _mm_set1_epi8((char)L);
    const __m512i sbit = _mm512_set1_epi32((int)0x80000000u);
    const unsigned r = (unsigned)(s0 & 7); /* i steps by 16: the bit offset within a byte stays */
    for (; i + 16 <= n; i += 16) {
        const __m128i c8 = _mm_loadu_si128((const __m128i *)(const void *)(codes + i));
        const __mmask16 mark = _mm_cmpeq_epi8_mask(c8, vl);
        __mmask16 sgn = 0;
        if (signs) { /* 16 sign bits from bit s0 + i: 2 bytes, a third when s0 is not on a byte (all inside the section) */
            const uint8_t *sb = signs + ((s0 + i) >> 3);
            uint16_t lo;
            memcpy(&lo, sb, 2);
            const uint32_t w = r ? (uint32_t)lo | (uint32_t)sb[2] << 16 : lo;
            sgn = (__mmask16)(w >> r);
        }
        const __m512i v = _mm512_castps_si512(_mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(c8)), vstep));
        const __m512 sv = _mm512_castsi512_ps(_mm512_mask_xor_epi32(v, sgn, v, sbit)); /* code 0 negated is -0.0 */
        const __m512 kept = _mm512_maskz_expand_ps(mark, _mm512_loadu_ps(vals + next));
        _mm512_storeu_ps(x + i, _mm512_mask_blend_ps(mark, sv, kept));
        next += (size_t)__builtin_popcount(mark);
    }
#elif defined(PZ_USE_AVX2)
    const __m256 vstep = _mm256_set1_ps(step);
    const __m128i vl = _mm_set1_epi8((char)L);
    const __m256i sbit = _mm256_set1_epi32((int)0x80000000u);
    const unsigned r = (unsigned)(s0 & 7); /* i steps by 8: the bit offset within a byte stays */
    for (; i + 8 <= n; i += 8) {
        const __m128i c8 = _mm_loadl_epi64((const __m128i *)(const void *)(codes + i));
        const unsigned mark = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(c8, vl)) & 0xFFu;
        unsigned sgn = 0;
        if (signs) { /* 8 sign bits from bit s0 + i: 1 byte, a second when s0 is not on a byte (inside the section) */
            const uint8_t *sb = signs + ((s0 + i) >> 3);
            sgn = ((r ? (unsigned)sb[0] | (unsigned)sb[1] << 8 : sb[0]) >> r) & 0xFFu;
        }
        const __m256i v = _mm256_castps_si256(_mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(c8)), vstep));
        const __m256 sv = _mm256_castsi256_ps(_mm256_xor_si256(v, _mm256_and_si256(lanes_of(sgn), sbit))); /* code 0 negated is -0.0 */
        const __m256 kept = _mm256_permutevar8x32_ps(_mm256_loadu_ps(vals + next), expand_perm(mark));
        _mm256_storeu_ps(x + i, _mm256_blendv_ps(sv, kept, _mm256_castsi256_ps(lanes_of(mark))));
        next += (size_t)__builtin_popcount(mark);
    }
#endif
    for (; i < n; i++) {
        const float v = (float)codes[i] * step;
        const int neg = signs ? (signs[(s0 + i) >> 3] >> ((s0 + i) & 7)) & 1 : 0;
        const int mark = codes[i] == L;
        x[i] = mark ? vals[next] : neg ? -v : v;
        next += (size_t)mark;
    }
    return next;
}

/* how many of codes[0..n) equal L */
static size_t K(count_eq)(const uint8_t *restrict codes, size_t n, int L) {
    size_t c = 0;
#pragma omp simd reduction(+ : c)
    for (size_t i = 0; i < n; i++) c += codes[i] == (uint8_t)L;
    return c;
}

/* In place: the pairs (idx[i], vals[i]) whose key (|vals[i]|, or vals[i]
 * when by_value) is >= t, in order, to the front of idx and vals; returns
 * their count */
static size_t K(compact_ge)(uint32_t *idx, float *vals, size_t n, float t, int by_value) {
    size_t c = 0, i = 0;
#ifdef PZ_USE_AVX512
    const __m512 vt = _mm512_set1_ps(t);
    for (; i + 16 <= n; i += 16) {
        const __m512 v = _mm512_loadu_ps(vals + i);
        const __m512i p = _mm512_loadu_si512(idx + i);
        const __mmask16 m = _mm512_cmp_ps_mask(by_value ? v : _mm512_abs_ps(v), vt, _CMP_GE_OQ);
        compress_store(idx + c, vals + c, m, p, v);
        c += (size_t)__builtin_popcount(m);
    }
#elif defined(PZ_USE_AVX2)
    const __m256 vt = _mm256_set1_ps(t), sign = _mm256_set1_ps(-0.0f);
    for (; i + 8 <= n; i += 8) { /* in place: each vector is loaded before a store can reach it (c <= i) */
        const __m256 v = _mm256_loadu_ps(vals + i);
        const __m256i p = _mm256_loadu_si256((const __m256i *)(const void *)(idx + i));
        const unsigned m = (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(by_value ? v : _mm256_andnot_ps(sign, v), vt, _CMP_GE_OQ));
        pack_store(idx + c, vals + c, m, p, v);
        c += (size_t)__builtin_popcount(m);
    }
#endif
    for (; i < n; i++) {
        const uint32_t p = idx[i];
        const float v = vals[i];
        idx[c] = p, vals[c] = v;
        c += (by_value ? v : fabsf(v)) >= t;
    }
    return c;
}

/* The floats of src whose order-preserving bit pattern (the sign flipped
 * for positives, all bits for negatives), masked by mask, equals want, in
 * order, into dst; returns their count. dst may be src (each vector is
 * loaded before any store reaches it). */
static size_t K(keep_pattern)(const float *src, size_t n, uint32_t mask, uint32_t want, float *dst) {
    size_t c = 0, i = 0;
#ifdef PZ_USE_AVX512
    const __m512i vmask = _mm512_set1_epi32((int)mask), vwant = _mm512_set1_epi32((int)want);
    const __m512i top = _mm512_set1_epi32((int)0x80000000u);
    for (; i + 16 <= n; i += 16) {
        const __m512i u = _mm512_loadu_si512(src + i);
        const __m512i o = _mm512_xor_si512(u, _mm512_or_si512(_mm512_srai_epi32(u, 31), top));
        const __mmask16 m = _mm512_cmpeq_epi32_mask(_mm512_and_si512(o, vmask), vwant);
        compress_store_ps(dst + c, m, _mm512_castsi512_ps(u));
        c += (size_t)__builtin_popcount(m);
    }
#elif defined(PZ_USE_AVX2)
    const __m256i vmask = _mm256_set1_epi32((int)mask), vwant = _mm256_set1_epi32((int)want);
    const __m256i top = _mm256_set1_epi32((int)0x80000000u);
    for (; i + 8 <= n; i += 8) {
        const __m256i u = _mm256_loadu_si256((const __m256i *)(const void *)(src + i));
        const __m256i o = _mm256_xor_si256(u, _mm256_or_si256(_mm256_srai_epi32(u, 31), top));
        const unsigned m = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(o, vmask), vwant)));
        pack_store_ps(dst + c, m, _mm256_castsi256_ps(u));
        c += (size_t)__builtin_popcount(m);
    }
#endif
    for (; i < n; i++) {
        uint32_t u;
        memcpy(&u, src + i, 4);
        const uint32_t o = u ^ ((uint32_t)((int32_t)u >> 31) | 0x80000000u);
        dst[c] = src[i];
        c += (o & mask) == want;
    }
    return c;
}

static uint32_t K(crc32c)(uint32_t crc, const void *data, size_t n) {
    const uint8_t *p = data;
    crc = ~crc;
#ifdef PZ_USE_SSE42
    /* three independent streams hide the crc32 instruction's latency */
    if (n >= 3 * 4096) {
        const size_t third = (n / 3) & ~(size_t)7;
        uint64_t c0 = crc, c1 = 0, c2 = 0;
        const uint8_t *p1 = p + third, *p2 = p + 2 * third;
        for (size_t i = 0; i < third; i += 8) {
            uint64_t v0, v1, v2;
            memcpy(&v0, p + i, 8), memcpy(&v1, p1 + i, 8), memcpy(&v2, p2 + i, 8);
            c0 = _mm_crc32_u64(c0, v0), c1 = _mm_crc32_u64(c1, v1), c2 = _mm_crc32_u64(c2, v2);
        }
        crc = K(join_thirds)(c0, c1, c2, third);
        p += 3 * third;
        n -= 3 * third;
    }
    uint64_t c = crc;
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c = _mm_crc32_u64(c, v);
    }
    crc = (uint32_t)c;
    for (; n; n--, p++) crc = _mm_crc32_u8(crc, *p);
#else
    for (; n; n--, p++) {
        crc ^= *p;
        for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
    }
#endif
    return ~crc;
}

static const pz_codec_kernels K(table) = {
    .name = PZ_KNAME,
    .minmax = K(minmax),
    .max_abs = K(max_abs),
    .sum_abs = K(sum_abs),
    .quant_asym = K(quant_asym),
    .quant_sym = K(quant_sym),
    .quant_abs = K(quant_abs),
    .negative = K(negative),
    .ge_flags = K(ge_flags),
    .count_nonfinite = K(count_nonfinite),
    .quant_stoch = K(quant_stoch),
    .dequant = K(dequant),
    .pack = K(pack),
    .unpack = K(unpack),
    .f32_to_f16 = K(f32_to_f16),
    .f16_to_f32 = K(f16_to_f32),
    .f32_to_bf16 = K(f32_to_bf16),
    .bf16_to_f32 = K(bf16_to_f32),
    .select_ge = K(select_ge),
    .select_band = K(select_band),
    .crc32c = K(crc32c),
    .half_encode = K(half_encode),
    .half_decode = K(half_decode),
    .select_ge_bits = K(select_ge_bits),
    .dequant_packed = K(dequant_packed),
    .keep_pattern = K(keep_pattern),
    .compact_ge = K(compact_ge),
    .ms_place = K(ms_place),
    .count_eq = K(count_eq),
};
