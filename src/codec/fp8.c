/* SPDX-License-Identifier: MIT */
/* fp8.c — 8-bit floating point with a scale per unit (FORMAT.md's codec 9):
 * E4M3 (4 exponent bits, 3 mantissa bits, bias 7, no infinities, largest
 * 448) or E5M2 (5 and 2, bias 15, largest 57344), the OCP formats that
 * accelerators compute in. Each unit (tensor, sample, channel or token) is
 * scaled so that its largest magnitude lands on the format's largest value,
 * then every element is rounded to nearest even. Compared with q8 (256
 * evenly spaced levels) the levels are dense near zero and sparse at the
 * top: a relative error of at most 2^-4 (E4M3) for every element above the
 * unit's max / 2^14 (the normal range), where q8's grows as the element
 * shrinks. */
#include "family.h"
#include "base/wire.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

extern const codec_family codec_fp8; /* listed in registry.c */

/* one of the two formats, by its exponent width (the header's `bits`) */
typedef struct {
    int ebits, mbits, bias;
    uint8_t max_code;   /* the largest finite magnitude's code */
    float max, min_normal;
} fp8_format;

static const fp8_format E4M3 = {4, 3, 7, 0x7E, 448.0f, 0x1p-6f};
static const fp8_format E5M2 = {5, 2, 15, 0x7B, 57344.0f, 0x1p-14f};

static const fp8_format *format_of(int ebits) { return ebits == 4 ? &E4M3 : ebits == 5 ? &E5M2 : NULL; }

/* v (finite) to the nearest code, ties to even; beyond the largest value: the largest */
static inline uint8_t to_fp8(float v, const fp8_format *f) {
    uint32_t u;
    memcpy(&u, &v, 4);
    const uint8_t sign = (uint8_t)((u >> 24) & 0x80);
    u &= 0x7FFFFFFFu;
    float a;
    memcpy(&a, &u, 4);
    if (!(a < f->max)) return sign | f->max_code;
    if (a < f->min_normal) /* subnormal: a whole number of the smallest step, 2^(1 - bias - mbits) */
        return sign | (uint8_t)(int)rintf(ldexpf(a, f->bias - 1 + f->mbits));
    const int drop = 23 - f->mbits; /* float's mantissa bits beyond the code's */
    u += ((1u << (drop - 1)) - 1) + ((u >> drop) & 1);
    uint32_t code = (u >> drop) - ((uint32_t)(127 - f->bias) << f->mbits);
    if (code > f->max_code) code = f->max_code;
    return sign | (uint8_t)code;
}

/* a code's value; NaN for the codes the encoder never writes (E4M3's
 * S.1111.111, E5M2's infinities and NaNs) */
static float from_fp8(uint8_t c, const fp8_format *f) {
    const int e = (c & 0x7F) >> f->mbits, m = c & ((1 << f->mbits) - 1);
    if ((c & 0x7F) > f->max_code) return NAN;
    const float v = e ? ldexpf(1.0f + ldexpf((float)m, -f->mbits), e - f->bias) : ldexpf((float)m, 1 - f->bias - f->mbits);
    return c & 0x80 ? -v : v;
}

/* every unit's largest magnitude, over its planes */
static void unit_max(const pz_codec_kernels *k, const float *x, const units *u, float *mx) {
    for (int64_t un = 0; un < u->U; un++) mx[un] = 0.0f;
    for (int64_t pl = 0; pl < u->planes; pl++) {
        const int64_t un = unit_of_plane(u, pl);
        const float a = u->plane_len ? k->max_abs(x + pl * u->plane_len, (size_t)u->plane_len) : 0.0f;
        if (a > mx[un]) mx[un] = a;
    }
}

static size_t max_body(const codec_params *p, const units *u) {
    (void)p;
    return 4 * (size_t)u->U + (size_t)u->n;
}

static pz_status encode(const codec_params *p, const codec_io *io, const float *x, const units *u, uint64_t seed, uint8_t *body,
                        size_t cap, size_t *body_len, frame_header *h, uint32_t *body_crc, int *have_crc) {
    (void)seed, (void)body_crc, (void)have_crc; /* the frame writer takes the CRC */
    const fp8_format *f = format_of(p->bits);
    if (max_body(p, u) > cap) return pz_fail(PZ_ERR_STATE, "frame overflow (internal error)");
    h->bits = p->bits;
    float *s = malloc(sizeof(float) * (size_t)(u->U ? u->U : 1));
    if (!s) return pz_fail(PZ_ERR_NOMEM, "out of memory for the scales of %lld units", (long long)u->U);
    unit_max(io->k, x, u, s);
    uint8_t *sp = body, *codes = body + 4 * (size_t)u->U;
    for (int64_t un = 0; un < u->U; un++) {
        if (s[un] > FLT_MAX / 2) {
            const double big = s[un];
            free(s);
            return pz_fail(PZ_ERR_ARG, "cannot encode with fp8: a magnitude of %g is above FLT_MAX / 2", big);
        }
        s[un] = s[un] / f->max;
        if (!(s[un] >= FLT_MIN)) s[un] = 0.0f; /* nothing, or too small to scale: coded as 0 */
        pz_put_f32(sp, s[un]), sp += 4;
    }
    for (int64_t pl = 0; pl < u->planes; pl++) {
        const float su = s[unit_of_plane(u, pl)], inv = su > 0.0f ? 1.0f / su : 0.0f;
        const float *xp = x + pl * u->plane_len;
        uint8_t *cp = codes + pl * u->plane_len;
        for (int64_t i = 0; i < u->plane_len; i++) cp[i] = to_fp8(xp[i] * inv, f);
    }
    free(s);
    *body_len = max_body(p, u);
    return PZ_OK;
}

static pz_status check(const frame_header *h) {
    if (!format_of(h->bits)) return frame_error(PZ_FRAME_PARAM, "fp8's exponent width %d is not 4 (E4M3) or 5 (E5M2)", h->bits);
    if (h->options || h->value_type || h->index_coding || h->value_bits || h->k)
        return frame_error(PZ_FRAME_PARAM, "parameters that fp8 does not take are set");
    return PZ_OK;
}

static pz_status decode(const frame_header *h, const codec_io *io, const units *u, float *x) {
    (void)io;
    const fp8_format *f = format_of(h->bits);
    if (h->body_len != 4 * (uint64_t)u->U + (uint64_t)u->n)
        return frame_error(PZ_FRAME_PAYLOAD, "an fp8 payload of this shape has %llu bytes, not %llu",
                           (unsigned long long)(4 * (uint64_t)u->U + (uint64_t)u->n), (unsigned long long)h->body_len);
    float table[256];
    for (int c = 0; c < 256; c++) table[c] = from_fp8((uint8_t)c, f);
    const uint8_t *codes = h->body + 4 * (size_t)u->U;
    for (int64_t pl = 0; pl < u->planes; pl++) {
        const int64_t un = unit_of_plane(u, pl);
        const float s = pz_get_f32(h->body + 4 * (size_t)un);
        if (!(s >= 0.0f) || !isfinite(s)) return frame_error(PZ_FRAME_PAYLOAD, "unit %lld's fp8 scale %g is not a finite number >= 0", (long long)un, (double)s);
        const uint8_t *cp = codes + pl * u->plane_len;
        float *xp = x + pl * u->plane_len;
        for (int64_t i = 0; i < u->plane_len; i++) {
            const float v = table[cp[i]] * s;
            if (!isfinite(v)) {
                if (table[cp[i]] != table[cp[i]])
                    return frame_error(PZ_FRAME_PAYLOAD, "fp8 code 0x%02X is not a finite %s value", cp[i], h->bits == 4 ? "E4M3" : "E5M2");
                return frame_error(PZ_FRAME_PAYLOAD, "an fp8 value times its unit's scale overflows float");
            }
            xp[i] = v;
        }
    }
    return PZ_OK;
}

/* ---- the spec ------------------------------------------------------------ */

static int match(const char *name, codec_params *p) {
    if (strcmp(name, "fp8")) return 0;
    p->bits = 4, p->gran = GRAN_TENSOR;
    return 1;
}

static pz_status option(codec_params *p, const char *key, const char *val, const char *spec) {
    if (!strcmp(key, "per") && val) return spec_per(p, val, 1, spec);
    if (!val && (!strcmp(key, "e4m3") || !strcmp(key, "e5m2"))) return p->bits = key[1] - '0', PZ_OK;
    return spec_unknown_option(spec, "fp8", key, val);
}

static void canonical(const codec_params *p, char *buf, size_t cap) {
    snprintf(buf, cap, "fp8:%s,per=%s", p->bits == 5 ? "e5m2" : "e4m3", gran_name(p->gran));
}

static void detail(const frame_header *h, char *buf, size_t cap) {
    const fp8_format *f = format_of(h->bits);
    snprintf(buf, cap, "E%dM%d (largest %g), a scale per %s", f->ebits, f->mbits, (double)f->max,
             pz_frame_value_name(PZ_FIELD_GRANULARITY, h->gran));
}

const codec_family codec_fp8 = {
    .name = "fp8", .wire_id = 9, .fields = PZ_FRAME_USES_BITS | PZ_FRAME_USES_GRANULARITY,
    .usage = "fp8[:e4m3|e5m2,per=tensor|sample|channel|token]",
    .help = "8-bit floats (OCP E4M3, the default, or E5M2), each unit scaled so its largest magnitude is the format's largest "
            "value, rounded to nearest even: 8 bits + a scale per unit; each element above the unit's max / 2^14 within 2^-4 "
            "(E4M3) or 2^-3 (E5M2) of itself",
    .match = match, .option = option, .canonical = canonical, .max_body = max_body, .encode = encode, .check = check,
    .decode = decode, .detail_label = "format", .detail = detail,
};
