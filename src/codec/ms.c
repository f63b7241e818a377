/* SPDX-License-Identifier: MIT */
/* ms.c — Paper B's mask-encoded sparsification: per unit the k elements of
 * largest magnitude kept exactly, every other element as a b-bit code of its
 * magnitude below Top_min (the smallest kept one), the reserved code L = 2^b
 * - 1 marking the kept positions, and sign bits when the tensor has
 * negative values (or always, with `signed`). */
#include "sparse.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

extern const codec_family codec_ms; /* listed in registry.c */

/* Top_min of every unit (the smallest kept magnitude: the k-th largest),
 * into tmin and the body */
static void top_mins(const unit_tops *t, int64_t U, int64_t kk, float *tmin, uint8_t *o) {
    for (int64_t un = 0; un < U; un++) {
        float T = INFINITY;
        if (t->ths[un].only) T = t->ths[un].T;
        else
            for (int64_t j = 0; j < kk; j++) {
                const float a = fabsf(t->vals[un * kk + j]);
                T = a < T ? a : T;
            }
        tmin[un] = kk ? T : 0.0f;
        memcpy(o + 4 * un, &tmin[un], 4);
    }
}

/* One chunk's codes and signs, elements [c0, c1): codes below Top_min, L
 * at the kept positions (taken here, in order, when the unit's selection
 * left only a threshold). *un and *next carry the unit and its next kept
 * position from chunk to chunk. */
static pz_status chunk_codes(const pz_codec_kernels *k, const float *x, const units *u, int64_t kk, int L, const float *tmin, unit_tops *t,
                             int64_t c0, int64_t c1, int64_t *un_io, int64_t *next_io, uint8_t *codes, uint8_t *neg) {
    enum { MCH = 4096 };
    uint32_t cidx[MCH];
    float cval[MCH];
    const int64_t m = u->m;
    int64_t un = *un_io, next = *next_io;
    for (int64_t i = c0; i < c1;) {
        while ((un + 1) * m <= i) un++, next = 0;
        const int64_t end = (un + 1) * m < c1 ? (un + 1) * m : c1;
        const float T = tmin[un];
        /* MS codes magnitudes against Top_min: NaN has none (nor has an
         * infinity when the kept magnitudes are infinite too) */
        if (k->quant_abs(x + i, (size_t)(end - i), T > 0.0f && isfinite((float)L / T) ? (float)L / T : 0.0f, L - 1, codes + (i - c0)))
            return pz_fail(PZ_ERR_ARG, "cannot encode with ms: the tensor holds NaN (or infinities beside infinite kept values)");
        k->negative(x + i, (size_t)(end - i), neg + (i - c0));
        if (t->ths[un].only) { /* take the kept elements here, in order */
            const size_t cn = k->select_ge(x + i, (size_t)(end - i), T, 0, cidx, cval, NULL);
            for (size_t j = 0; j < cn; j++) {
                const float a = fabsf(cval[j]);
                if (a == T) {
                    if (t->ths[un].ties <= 0) continue; /* a tie beyond k: an ordinary code */
                    t->ths[un].ties--;
                }
                if (next < kk) t->vals[un * kk + next] = cval[j];
                next++;
                codes[i - c0 + cidx[j]] = (uint8_t)L;
            }
        } else {
            const uint32_t *pu = t->pos + un * kk;
            while (next < kk && un * m + (int64_t)pu[next] < end) codes[un * m + pu[next] - c0] = (uint8_t)L, next++;
        }
        i = end;
        if (t->ths[un].only && i == (un + 1) * m && next != kk)
            return pz_fail(PZ_ERR_STATE, "MS kept %lld of %lld in unit %lld (internal error)", (long long)next, (long long)kk, (long long)un);
    }
    *un_io = un, *next_io = next;
    return PZ_OK;
}

static pz_status encode(const codec_params *p, const codec_io *io, const float *x, const units *u, uint64_t seed, uint8_t *body,
                        size_t cap, size_t *body_len, frame_header *h, uint32_t *body_crc, int *have_crc) {
    const pz_codec_kernels *k = io->k;
    const int64_t U = u->U, n = u->n, kk = kept_per_unit(p->fraction, u->m);
    h->k = (uint32_t)kk;
    h->value_type = p->value_type;
    h->value_bits = p->value_type == VAL_QUANT ? p->value_bits : 0;
    const size_t vbytes = value_bytes(p->value_type, h->value_bits, U, U * kk);
    unit_tops t;
    PZ_TRY(select_units(io, x, u, kk, 0, SEL_THRESHOLDS, &t));
    uint8_t *o = body;
    const int b = p->bits, L = (1 << b) - 1;
    h->bits = b;
    h->index_coding = IDX_NONE;
    /* Top_min per unit, then one pass in chunks of 4096 elements (a
     * multiple of 8, so each chunk's codes start on a byte): codes below
     * Top_min, L at the kept positions, sign bits, packed while in cache */
    float *tmin = malloc(sizeof(float) * (size_t)(U ? U : 1));
    uint8_t *sign_bits = scratch_get(io->sc, SC_NEG, bits_bytes((uint64_t)n, 1));
    if (!tmin || !sign_bits) {
        free(tmin), free(t.ths);
        return pz_fail(PZ_ERR_NOMEM, "out of memory for MS's Top_min and signs");
    }
    top_mins(&t, U, kk, tmin, o);
    o += 4 * U;
    uint8_t *values_out = o;
    o += vbytes;
    uint8_t *codes_out = o;
    enum { MCH = 4096 };
    int any_negative = 0;
    int64_t un = 0, next = 0; /* the unit of the chunk's first element, its next kept position */
    pz_status st = PZ_OK;
    for (int64_t c0 = 0; c0 < n && !st; c0 += MCH) {
        const int64_t c1 = n - c0 < MCH ? n : c0 + MCH;
        uint8_t codes[MCH], neg[MCH];
        if ((st = chunk_codes(k, x, u, kk, L, tmin, &t, c0, c1, &un, &next, codes, neg))) break;
        uint8_t any = 0;
        for (int64_t j = 0; j < c1 - c0; j++) any |= neg[j];
        any_negative |= any;
        bits_write(k, codes_out + (size_t)(c0 / 8) * b, codes, (size_t)(c1 - c0), b);
        bits_write(k, sign_bits + c0 / 8, neg, (size_t)(c1 - c0), 1);
    }
    free(tmin), free(t.ths);
    PZ_TRY(st);
    PZ_TRY(write_values(k, p->value_type, h->value_bits, t.vals, U, kk, values_out, io->sc));
    const int is_signed = p->ms_sign == MS_SIGN_SIGNED || (p->ms_sign == MS_SIGN_AUTO && any_negative);
    if (p->ms_sign == MS_SIGN_UNSIGNED && any_negative)
        return pz_fail(PZ_ERR_ARG, "ms:unsigned got a tensor with negative values (use signed or auto)");
    h->options = (p->options & ~OPT_SIGNED) | (is_signed ? OPT_SIGNED : 0);
    o += bits_bytes((uint64_t)n, b);
    if (is_signed) {
        memcpy(o, sign_bits, bits_bytes((uint64_t)n, 1));
        o += bits_bytes((uint64_t)n, 1);
    }
    *body_len = (size_t)(o - body);
    if (*body_len > cap) return pz_fail(PZ_ERR_STATE, "frame overflow (internal error)");
    return PZ_OK;
}

static pz_status decode(const frame_header *h, const codec_io *io, const units *u, float *x) {
    const pz_codec_kernels *k = io->k;
    const int64_t U = u->U, m = u->m, kk = h->k, n = u->n;
    PZ_TRY(sparse_check_k(h, u));
    if (h->bits < 1 || h->bits > 8) return frame_error(PZ_FRAME_PARAM, "MS code width %d is not in 1..8", h->bits);
    const size_t vbytes = value_bytes(h->value_type, h->value_bits, U, U * kk);
    /* 16 floats of room past the values: the placing kernel reads a vector */
    float *vals = scratch_get(io->sc, SC_VALS, sizeof(float) * (size_t)(U * kk + 16));
    if (!vals) return pz_fail(PZ_ERR_NOMEM, "out of memory for %lld values", (long long)(U * kk));
    const uint8_t *b = h->body;
    pz_status st = PZ_OK;
    const int bb = h->bits, L = (1 << bb) - 1, is_signed = (h->options & OPT_SIGNED) != 0;
    const size_t need = (size_t)U * 4 + vbytes + bits_bytes((uint64_t)n, bb) + (is_signed ? bits_bytes((uint64_t)n, 1) : 0);
    if (h->body_len != need)
        return frame_error(PZ_FRAME_PAYLOAD, "an MS payload of this shape has %zu bytes, not %llu", need, (unsigned long long)h->body_len);
    const uint8_t *tmins = b;
    b += 4 * U;
    PZ_TRY(read_values(k, h->value_type, h->value_bits, b, U, kk, vals, io->sc));
    b += vbytes;
    const uint8_t *code_bits = b, *sign_bits = b + bits_bytes((uint64_t)n, bb);
    /* chunk by chunk, in cache: the chunk's codes and signs unpacked (a
     * chunk starts on a multiple of 8 elements, so on a byte of the
     * codes), the marks (code L) counted against the unit's kept values,
     * then every element placed in one vector pass (ms_place): code *
     * Top_min / L with its sign (read from the packed sign bits), or the
     * next kept value where marked */
    enum { MCH = 4096 };
    uint8_t codes[MCH];
    int64_t un = -1, next = 0;
    float step = 0.0f;
    for (int64_t c0 = 0; c0 < n && !st; c0 += MCH) {
        const int64_t c1 = n - c0 < MCH ? n : c0 + MCH;
        bits_read(k, code_bits + (size_t)(c0 / 8) * bb, (size_t)(c1 - c0), bb, codes);
        for (int64_t i = c0; i < c1 && !st;) {
            if (un < 0 || i == (un + 1) * m) { /* a unit starts */
                un = i / m, next = 0;
                float T;
                memcpy(&T, tmins + 4 * un, 4);
                if (!isfinite(T) || T < 0.0f) {
                    st = frame_error(PZ_FRAME_PAYLOAD, "Top_min %g of unit %lld", T, (long long)un);
                    break;
                }
                step = T / (float)L;
            }
            const int64_t end = (un + 1) * m < c1 ? (un + 1) * m : c1;
            const uint8_t *cu = codes + (i - c0);
            const int64_t len = end - i;
            /* the marks are counted first: they must not outrun the unit's values */
            const int64_t marks = (int64_t)k->count_eq(cu, (size_t)len, L);
            if (next + marks > kk) {
                st = frame_error(PZ_FRAME_PAYLOAD, "unit %lld marks more than %lld kept values", (long long)un, (long long)kk);
                break;
            }
            next += (int64_t)k->ms_place(cu, is_signed ? sign_bits : NULL, (size_t)i, (size_t)len, L, step, vals + un * kk + next, x + i);
            i = end;
            if (end == (un + 1) * m && next != kk)
                st = frame_error(PZ_FRAME_PAYLOAD, "unit %lld marks %s %lld kept values", (long long)un,
                                 next < kk ? "fewer than" : "more than", (long long)kk);
        }
    }
    return st;
}

static pz_status check(const frame_header *h) { return sparse_check(h, 1, 0, "ms sends no index section"); }

static size_t max_body(const codec_params *p, const units *u) {
    const int64_t kept = u->U * kept_per_unit(p->fraction, u->m);
    return (size_t)u->U * 4 + value_bytes(p->value_type, p->value_bits, u->U, kept) + bits_bytes((uint64_t)u->n, p->bits) +
           bits_bytes((uint64_t)u->n, 1);
}

static int match(const char *name, codec_params *p) { return !strcmp(name, "ms") ? (p->gran = GRAN_TENSOR, p->bits = 2, 1) : 0; }

static pz_status option(codec_params *p, const char *key, const char *val, const char *spec) {
    if (!strcmp(key, "per") && val) return spec_per(p, val, 0, spec);
    if (!strcmp(key, "values") && val) return spec_values(p, val, 1, spec);
    if (!strcmp(key, "bits") && val) {
        char *end;
        long b = strtol(val, &end, 10);
        if (end == val || *end || b < 1 || b > 8) return spec_bad(spec, "bits= takes 1..8");
        p->bits = (int)b;
        return PZ_OK;
    }
    if (!val && (!strcmp(key, "signed") || !strcmp(key, "unsigned") || !strcmp(key, "auto"))) {
        p->ms_sign = key[0] == 's' ? MS_SIGN_SIGNED : key[0] == 'u' ? MS_SIGN_UNSIGNED : MS_SIGN_AUTO;
        return PZ_OK;
    }
    return spec_unknown_option(spec, "ms", key, val);
}

/* auto: the sign bit is decided per tensor, not by the spec */
static int fixed_options(const codec_params *p) { return p->ms_sign == MS_SIGN_AUTO ? codec_ms.option_mask & ~OPT_SIGNED : codec_ms.option_mask; }

static void canonical(const codec_params *p, char *buf, size_t cap) {
    char v[8];
    values_name(p, v, sizeof v);
    snprintf(buf, cap, "ms:%g,bits=%d,per=%s,values=%s,%s", p->fraction, p->bits, gran_name(p->gran), v,
             p->ms_sign == MS_SIGN_SIGNED ? "signed" : p->ms_sign == MS_SIGN_UNSIGNED ? "unsigned" : "auto");
}

const codec_family codec_ms = {
    .checks_finite = 1,
    .name = "ms", .wire_id = 7, .arg = {CODEC_ARG_FRACTION, "kept fraction", 0.0, 1.0, "ms:0.01"}, .option_mask = OPT_SIGNED,
    .fields = PZ_FRAME_USES_BITS | PZ_FRAME_USES_GRANULARITY | PZ_FRAME_USES_K | PZ_FRAME_USES_VALUES,
    .usage = "ms:F[,bits=2,per=tensor|sample,auto|signed|unsigned,values=fp32|fp16|bf16|qB]",
    .help = "Paper B's mask-encoded sparsification: F = 1 - r kept exactly, the rest as b-bit codes below Top_min; "
            "b (+1 sign bit if signed) + 32F bits per element",
    .match = match, .option = option, .canonical = canonical, .max_body = max_body,
    .encode = encode, .check = check, .decode = decode, .fixed_options = fixed_options,
};
