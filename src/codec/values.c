/* SPDX-License-Identifier: MIT */
/* values.c — the values section of the sparse families (FORMAT.md
 * "Values"): f32, f16, bf16, or per unit a step and symmetric b-bit codes. */
#include "sparse.h"

#include <math.h>
#include <string.h>

size_t value_bytes(int vt, int vbits, int64_t U, int64_t count) {
    switch (vt) {
    case VAL_F32: return (size_t)count * 4;
    case VAL_F16:
    case VAL_BF16: return (size_t)count * 2;
    default: return (size_t)U * 4 + bits_bytes((uint64_t)count, vbits);
    }
}

/* values v[0..U*k) (unit-major) into the values section */
pz_status write_values(const pz_codec_kernels *k, int vt, int vbits, const float *v, int64_t U, int64_t kk, uint8_t *out,
                         codec_scratch *sc) {
    const int64_t cnt = U * kk;
    if (vt == VAL_F32) memcpy(out, v, (size_t)cnt * 4);
    else if (vt == VAL_F16 || vt == VAL_BF16) { /* the section may start at any byte */
        uint16_t *h = scratch_get(sc, SC_HALF, (size_t)cnt * 2);
        if (!h) return pz_fail(PZ_ERR_NOMEM, "out of memory for %lld values", (long long)cnt);
        if (vt == VAL_F16) k->f32_to_f16(v, (size_t)cnt, h);
        else k->f32_to_bf16(v, (size_t)cnt, h);
        memcpy(out, h, (size_t)cnt * 2);
    } else { /* symmetric per-unit quantization of the kept values */
        uint8_t *codes = scratch_get(sc, SC_CODES, (size_t)cnt);
        if (!codes) return pz_fail(PZ_ERR_NOMEM, "out of memory for %lld value codes", (long long)cnt);
        const int M = vbits >= 2 ? (1 << (vbits - 1)) - 1 : 0;
        const size_t bad = k->count_nonfinite(v, (size_t)cnt);
        if (bad) return pz_fail(PZ_ERR_ARG, "cannot quantize the kept values: %zu of them are NaN or infinite", bad);
        for (int64_t un = 0; un < U; un++) {
            const float *vu = v + un * kk;
            float step;
            if (vbits == 1) {
                step = kk ? (float)(k->sum_abs(vu, (size_t)kk) / (double)kk) : 0.0f;
                k->negative(vu, (size_t)kk, codes + un * kk);
                for (int64_t j = 0; j < kk; j++) codes[un * kk + j] ^= 1;
            } else {
                step = kk ? k->max_abs(vu, (size_t)kk) / (float)M : 0.0f;
                if (step > 0.0f && !isfinite(1.0f / step)) step = 0.0f; /* values within ~1e-38 of 0: all 0 */
                k->quant_sym(vu, (size_t)kk, step > 0 ? 1.0f / step : 0.0f, M, codes + un * kk);
            }
            /* the decoder computes -M*step + code*step with code up to 2M */
            if (!isfinite(step) || (vbits > 1 && !isfinite((float)(2 * M) * step)))
                return pz_fail(PZ_ERR_ARG, "cannot quantize the kept values: magnitudes that overflow float when decoded");
            memcpy(out + 4 * un, &step, 4);
        }
        bits_write(k, out + 4 * U, codes, (size_t)cnt, vbits);
    }
    return PZ_OK;
}

pz_status read_values(const pz_codec_kernels *k, int vt, int vbits, const uint8_t *in, int64_t U, int64_t kk, float *v,
                             codec_scratch *sc) {
    const int64_t cnt = U * kk;
    if (vt == VAL_F32) memcpy(v, in, (size_t)cnt * 4);
    else if (vt == VAL_F16 || vt == VAL_BF16) {
        uint16_t *h = scratch_get(sc, SC_HALF, (size_t)cnt * 2);
        if (!h) return pz_fail(PZ_ERR_NOMEM, "out of memory for %lld values", (long long)cnt);
        memcpy(h, in, (size_t)cnt * 2);
        if (vt == VAL_F16) k->f16_to_f32(h, (size_t)cnt, v);
        else k->bf16_to_f32(h, (size_t)cnt, v);
    } else {
        uint8_t *codes = scratch_get(sc, SC_CODES, (size_t)cnt);
        if (!codes) return pz_fail(PZ_ERR_NOMEM, "out of memory for %lld value codes", (long long)cnt);
        bits_read(k, in + 4 * U, (size_t)cnt, vbits, codes);
        const int M = vbits >= 2 ? (1 << (vbits - 1)) - 1 : 0;
        for (int64_t un = 0; un < U; un++) {
            float step;
            memcpy(&step, in + 4 * un, 4);
            if (!isfinite(step) || step < 0) {
                return frame_error(PZ_FRAME_PAYLOAD, "value scale %g of unit %lld", step, (long long)un);
            }
            for (int64_t j = 0; j < kk; j++) {
                const int c = codes[un * kk + j];
                if (vbits == 1) v[un * kk + j] = c ? step : -step;
                else if (c > 2 * M) {
                    return frame_error(PZ_FRAME_PAYLOAD, "value code %d exceeds %d", c, 2 * M);
                } else v[un * kk + j] = -(float)M * step + (float)c * step;
            }
        }
    }
    return PZ_OK;
}

pz_status sparse_check(const frame_header *h, int bits_ok, int index_ok, const char *no_index_why) {
    const char *name = codec_wire_name(h->codec);
    if (h->gran > GRAN_SAMPLE) return frame_error(PZ_FRAME_PARAM, "%s works per tensor or per sample, not granularity %d", name, h->gran);
    if (!bits_ok && h->bits) return frame_error(PZ_FRAME_PARAM, "%s takes no code width", name);
    if (!index_ok && h->index_coding) return frame_error(PZ_FRAME_PARAM, "%s", no_index_why);
    if (h->options & ~h->fam->option_mask) return frame_error(PZ_FRAME_PARAM, "option bits 0x%02x do not apply to %s", h->options, name);
    return PZ_OK;
}

pz_status sparse_check_k(const frame_header *h, const units *u) {
    if ((int64_t)h->k > u->m) return frame_error(PZ_FRAME_PARAM, "k = %lld exceeds the %lld elements of a unit", (long long)h->k, (long long)u->m);
    return PZ_OK;
}
