/* SPDX-License-Identifier: MIT */
/* topk.c — the families that keep k elements per unit and send their
 * values: TopK (Paper A; by magnitude or value, positions as a bitmap or
 * delta varints, whichever is smaller), Rand-K (positions drawn from a seed
 * in the header: none on the wire) and randomized TopK (Zheng et al.,
 * IJCAI'23: k draws, top positions weighted (1-alpha)/k, others
 * alpha/(m-k)). */
#include "sparse.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

extern const codec_family codec_topk, codec_randk, codec_randtopk; /* listed in registry.c */

/* the bitmap words randtopk_positions works in */
static size_t randtopk_words(int64_t m, int64_t k) { return (size_t)((k + 63) / 64 + (m - k + 63) / 64 + (m + 63) / 64); }

/* Zheng et al.'s randomized TopK: k draws without replacement, each top-k
 * position weighted (1-alpha)/k, each other alpha/(m-k). Within a class the
 * weights are equal, so the draw is: how many come from the top class (a
 * sequential urn), then uniform subsets of each class. top: the top-k
 * positions, ascending; out: the k drawn, ascending. */
static pz_status randtopk_positions(pz_rng *r, const uint32_t *top, int64_t m, int64_t k, double alpha, uint64_t *words, uint32_t *out) {
    const double wt = (1.0 - alpha) / (double)k, wo = m > k ? alpha / (double)(m - k) : 0.0;
    int64_t a = k, b = m - k, from_top = 0;
    /* draw t takes from the top with probability a wt / (a wt + b wo) for
     * the a top and b other positions left */
    for (int64_t t = 0; t < k; t++) {
        const double pt = a * wt / (a * wt + b * wo);
        const double u = (double)(pz_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0);
        if (u < pt) from_top++, a--;
        else b--;
    }
    const int64_t need = k - from_top;
    /* which of the top positions, then which of the others by rank (the
     * same draws as sample_positions), as bitmaps in `words` (zeroed here) */
    const int64_t wt_n = (k + 63) / 64, wo_n = (m - k + 63) / 64, wr_n = (m + 63) / 64;
    uint64_t *tb = words, *ob = tb + wt_n, *rb = ob + wo_n;
    memset(words, 0, sizeof(uint64_t) * (size_t)(wt_n + wo_n + wr_n));
    sample_bits(r, k, from_top, tb);
    sample_bits(r, m - k, need, ob);
    /* the union in position order: a chosen top is top[i]; the q-th other
     * position is q plus the top positions before it */
    for (int64_t w = 0; w < wt_n; w++)
        for (uint64_t v = tb[w]; v; v &= v - 1) {
            const uint32_t p = top[w * 64 + __builtin_ctzll(v)];
            rb[p >> 6] |= 1ull << (p & 63);
        }
    int64_t ti = 0;
    for (int64_t w = 0; w < wo_n; w++)
        for (uint64_t v = ob[w]; v; v &= v - 1) {
            const int64_t q = w * 64 + __builtin_ctzll(v);
            while (ti < k && (int64_t)top[ti] <= q + ti) ti++;
            const uint64_t p = (uint64_t)(q + ti);
            rb[p >> 6] |= 1ull << (p & 63);
        }
    bits_positions(rb, wr_n, out);
    return PZ_OK;
}

/* ---- encode --------------------------------------------------------------- */

static pz_status write_index_and_values(const codec_params *p, const codec_io *io, const units *u, int64_t kk, const uint32_t *pos,
                                        const float *vals, int64_t stride, uint8_t *body, size_t cap, size_t *body_len, frame_header *h);

/* the lists of selection t (SEL_IN_PLACE: unit un's in idx/cvals at
 * un * m) as index and values sections; values other than fp32 are gathered
 * unit-major first */
static pz_status write_lists(const codec_params *p, const codec_io *io, const units *u, int64_t kk, unit_tops *t, uint8_t *body,
                             size_t cap, size_t *body_len, frame_header *h) {
    if (!t->in_place) return write_index_and_values(p, io, u, kk, t->pos, t->vals, kk, body, cap, body_len, h);
    const int64_t U = u->U, m = u->m;
    if (p->value_type != VAL_F32 && kk != m) {
        for (int64_t un = 0; un < U; un++) memcpy(t->vals + un * kk, t->cvals + un * m, sizeof(float) * (size_t)kk);
        for (int64_t un = 0; un < U; un++) memcpy(t->pos + un * kk, t->idx + un * m, sizeof(uint32_t) * (size_t)kk);
        return write_index_and_values(p, io, u, kk, t->pos, t->vals, kk, body, cap, body_len, h);
    }
    return write_index_and_values(p, io, u, kk, t->idx, t->cvals, m, body, cap, body_len, h);
}

/* One unit's part of the bitmap, and its kept values, from its threshold:
 * chunk by chunk in cache, right after the unit's selection read it (so x
 * comes from the cache, not memory). Its values go to vdst + un * kk. When
 * units start on bytes of the bitmap (flags NULL) the unit's bits are
 * written here; else a flag per element goes to flags (the whole tensor's,
 * packed by the caller). */
static pz_status unit_bits_from_threshold(const pz_codec_kernels *k, const float *x, const units *u, int64_t kk, int by_value,
                                          topk_threshold *th, int64_t un, uint8_t *bitmap, uint8_t *flags, float *vdst) {
    enum { TCH = 4096 };
    const int64_t m = u->m, start = un * m, stop = start + m;
    const float T = th->T;
    float *dst = vdst + un * kk;
    int64_t next = 0;
    for (int64_t i = start; i < stop; i += TCH) {
        const int64_t len = stop - i < TCH ? stop - i : TCH;
        float cval[TCH];
        uint32_t cidx[TCH];
        uint8_t own[TCH], *fl = flags ? flags + i : own;
        if (th->extra == 0) { /* every key >= T is kept: flags (or bits) and values straight */
            const int room = kk - next >= len;
            float *to = room ? dst + next : cval;
            size_t cn;
            if (flags) {
                k->ge_flags(x + i, (size_t)len, T, by_value, fl);
                cn = k->select_ge(x + i, (size_t)len, T, by_value, cidx, to, NULL);
            } else {
                cn = k->select_ge_bits(x + i, (size_t)len, T, by_value, bitmap + i / 8, to);
            }
            if (next + (int64_t)cn > kk) break;
            if (!room) memcpy(dst + next, cval, sizeof(float) * cn);
            next += (int64_t)cn;
            continue;
        }
        const size_t cn = k->select_ge(x + i, (size_t)len, T, by_value, cidx, cval, NULL);
        memset(fl, 0, (size_t)len);
        for (size_t j = 0; j < cn; j++) { /* drop ties beyond k, keep the order */
            const float v = cval[j], key = by_value ? v : fabsf(v);
            if (key == T) {
                if (th->ties <= 0) continue;
                th->ties--;
            }
            if (next == kk) { next++; break; }
            dst[next++] = v;
            fl[cidx[j]] = 1;
        }
        if (next > kk) break;
        if (!flags) bits_write(k, bitmap + i / 8, fl, (size_t)len, 1);
    }
    if (next != kk)
        return pz_fail(PZ_ERR_STATE, "top-k kept %lld, not %lld, in unit %lld (internal error)", (long long)next, (long long)kk, (long long)un);
    return PZ_OK;
}

/* TopK, the index section certainly a bitmap: unit by unit, the selection
 * and then, while the unit is in the cache, its bits and values from the
 * threshold (units not starting on a byte of the bitmap leave flags, packed
 * at the end). A unit that comes back with a list (the sample misjudged)
 * turns the frame into lists for all. */
static pz_status encode_bitmap_by_unit(const codec_params *p, const codec_io *io, const float *x, const units *u, int64_t kk, uint8_t *body,
                                       size_t cap, size_t *body_len, frame_header *h) {
    const int64_t U = u->U, n = u->n;
    const int by_value = (p->options & OPT_BYVALUE) != 0;
    unit_tops t;
    PZ_TRY(unit_tops_get(io, u, kk, SEL_THRESHOLDS | SEL_IN_PLACE, &t));
    h->index_coding = IDX_BITMAP;
    h->value_type = p->value_type;
    h->value_bits = p->value_type == VAL_QUANT ? p->value_bits : 0;
    uint8_t *values_at = body + bits_bytes((uint64_t)n, 1);
    /* fp32 values go straight into the frame when their section starts on
     * a float's alignment (the bitmap before it has any number of bytes) */
    float *vdst = p->value_type == VAL_F32 && ((uintptr_t)values_at & 3) == 0 ? (float *)(void *)values_at : t.vals;
    uint8_t *flags = U == 1 || u->m % 8 == 0 ? NULL : scratch_get(io->sc, SC_NEG, (size_t)n);
    if (U > 1 && u->m % 8 && !flags) {
        free(t.ths);
        return pz_fail(PZ_ERR_NOMEM, "out of memory for the flags of %lld elements", (long long)n);
    }
    pz_status st = PZ_OK;
    int lists = 0;
#pragma omp parallel for schedule(dynamic) if (U > 1 && n > (1 << 16))
    for (int64_t un = 0; un < U; un++) {
        pz_status s = select_unit(io, x, u, kk, by_value, &t, un);
        if (!s && t.ths[un].only) s = unit_bits_from_threshold(io->k, x, u, kk, by_value, &t.ths[un], un, body, flags, vdst);
        else if (!s) {
#pragma omp atomic write
            lists = 1;
        }
        if (s) {
#pragma omp critical
            st = s;
        }
    }
    if (!st && lists) { /* lists for all; the body is written again */
        for (int64_t un = 0; un < U && !st; un++)
            if (t.ths[un].only) st = unit_list_from_threshold(io, x, u, kk, by_value, &t, un);
        free(t.ths);
        PZ_TRY(st);
        return write_lists(p, io, u, kk, &t, body, cap, body_len, h);
    }
    free(t.ths);
    PZ_TRY(st);
    if (flags) bits_write(io->k, body, flags, (size_t)n, 1);
    if (vdst == t.vals) PZ_TRY(write_values(io->k, p->value_type, h->value_bits, t.vals, U, kk, values_at, io->sc));
    *body_len = (size_t)(values_at - body) + value_bytes(p->value_type, h->value_bits, U, U * kk);
    if (*body_len > cap) return pz_fail(PZ_ERR_STATE, "frame overflow (internal error)");
    return PZ_OK;
}

/* the delta varints of lists pos (kk per unit, unit un's at un * stride) into o, stopping once they
 * would take `limit` bytes or more; returns their bytes, or `limit` when it
 * stopped. One pass: a gap below 128 (the common case) is a byte. */
static size_t put_deltas(uint8_t *o, const uint32_t *pos, int64_t stride, int64_t U, int64_t kk, size_t limit) {
    size_t b = 0;
    for (int64_t un = 0; un < U; un++) {
        const uint32_t *pp = pos + un * stride;
        uint32_t prev = (uint32_t)-1; /* the first gap is the position itself */
        int64_t j = 0;
        while (j < kk) {
            /* a run of one-byte gaps, bounded so the limit is checked per run */
            const int64_t e = kk - j < 256 ? kk : j + 256;
            if (b + 5 * (size_t)(e - j) < limit) {
                for (; j < e; j++) {
                    const uint32_t g = pp[j] - prev - 1;
                    prev = pp[j];
                    if (g < 0x80) o[b++] = (uint8_t)g;
                    else b += varint_put(o + b, g);
                }
            } else {
                for (; j < e; j++) {
                    const uint32_t g = pp[j] - prev - 1;
                    prev = pp[j];
                    if (b + varint_len(g) >= limit) return limit;
                    b += varint_put(o + b, g);
                }
            }
        }
    }
    return b;
}

/* the index section (the smaller of a bitmap and delta varints unless the
 * spec forced one) and the values of lists pos/vals (kk per unit, unit un's
 * at un * stride; a stride other than kk only with fp32 values) */
static pz_status write_index_and_values(const codec_params *p, const codec_io *io, const units *u, int64_t kk, const uint32_t *pos,
                                        const float *vals, int64_t stride, uint8_t *body, size_t cap, size_t *body_len, frame_header *h) {
    const int64_t U = u->U, m = u->m, n = u->n;
    h->value_type = p->value_type;
    h->value_bits = p->value_type == VAL_QUANT ? p->value_bits : 0;
    uint8_t *o = body;
    /* a varint is at least a byte: with k >= n/8 the bitmap wins without
     * counting; else the varints are written, and the bitmap replaces them
     * if they come to its size (a tie goes to the bitmap) */
    const size_t bitmap = bits_bytes((uint64_t)n, 1);
    int coding = p->index_coding;
    if (coding == IDX_AUTO) coding = (size_t)(U * kk) < bitmap ? IDX_DELTA : IDX_BITMAP;
    size_t delta = 0;
    if (coding == IDX_DELTA) {
        const size_t limit = p->index_coding == IDX_AUTO ? bitmap : SIZE_MAX;
        delta = put_deltas(o, pos, stride, U, kk, limit);
        if (delta >= limit) coding = IDX_BITMAP;
    }
    h->index_coding = coding;
    if (coding == IDX_BITMAP) {
        memset(o, 0, bitmap);
        for (int64_t un = 0; un < U; un++)
            for (int64_t j = 0; j < kk; j++) {
                const uint64_t g = (uint64_t)un * m + pos[un * stride + j];
                o[g >> 3] |= (uint8_t)(1u << (g & 7));
            }
        o += bitmap;
    } else {
        o += delta;
    }
    if (stride == kk) PZ_TRY(write_values(io->k, p->value_type, h->value_bits, vals, U, kk, o, io->sc));
    else if (p->value_type == VAL_F32)
        for (int64_t un = 0; un < U; un++) memcpy(o + 4 * (size_t)(un * kk), vals + un * stride, sizeof(float) * (size_t)kk);
    else return pz_fail(PZ_ERR_STATE, "values of lists with a stride (internal error)");
    o += value_bytes(p->value_type, h->value_bits, U, U * kk);
    *body_len = (size_t)(o - body);
    if (*body_len > cap) return pz_fail(PZ_ERR_STATE, "frame overflow (internal error)");
    return PZ_OK;
}

static pz_status encode_topk(const codec_params *p, const codec_io *io, const float *x, const units *u, uint64_t seed, uint8_t *body,
                             size_t cap, size_t *body_len, frame_header *h, uint32_t *body_crc, int *have_crc) {
    const int64_t U = u->U, kk = kept_per_unit(p->fraction, u->m), n = u->n;
    const int by_value = (p->options & OPT_BYVALUE) != 0;
    h->k = (uint32_t)kk;
    h->options = p->options & OPT_BYVALUE;
    /* when the index section is certainly a bitmap, dense units may come
     * back with thresholds, taken in one chunked pass */
    const int bitmap_certain = p->index_coding == IDX_BITMAP || (p->index_coding == IDX_AUTO && (size_t)(U * kk) >= bits_bytes((uint64_t)n, 1));
    if (bitmap_certain) return encode_bitmap_by_unit(p, io, x, u, kk, body, cap, body_len, h);
    unit_tops t;
    PZ_TRY(select_units(io, x, u, kk, by_value, SEL_IN_PLACE, &t));
    return write_lists(p, io, u, kk, &t, body, cap, body_len, h);
}

static pz_status encode_randtopk(const codec_params *p, const codec_io *io, const float *x, const units *u, uint64_t seed, uint8_t *body,
                                 size_t cap, size_t *body_len, frame_header *h, uint32_t *body_crc, int *have_crc) {
    const int64_t U = u->U, m = u->m, kk = kept_per_unit(p->fraction, m);
    h->k = (uint32_t)kk;
    unit_tops t;
    PZ_TRY(unit_tops_get(io, u, kk, 0, &t));
    const size_t uw = randtopk_words(m, kk);
    uint64_t *words = scratch_get(io->sc, SC_CODES, sizeof(uint64_t) * uw * (size_t)(U ? U : 1));
    if (!words) return pz_fail(PZ_ERR_NOMEM, "out of memory drawing randomized top-k positions");
    /* unit by unit: its top list, then the draw from its own stream among
     * that list and the values gathered, while the unit is in cache */
    pz_status st = PZ_OK;
#pragma omp parallel for schedule(dynamic) if (U > 1 && u->n > (1 << 16))
    for (int64_t un = 0; un < U; un++) {
        pz_status s = select_unit(io, x, u, kk, 0, &t, un);
        if (!s && kk < m) {
            pz_rng r;
            pz_rng_seed(&r, seed ^ (uint64_t)un);
            s = randtopk_positions(&r, t.idx + un * m, m, kk, p->alpha, words + uw * (size_t)un, t.pos + un * kk);
            const uint32_t *pu = t.pos + un * kk;
            const float *xu = x + un * m;
            float *vu = t.vals + un * kk;
            for (int64_t j = 0; j < kk && !s; j++) vu[j] = xu[pu[j]];
        }
        if (s) {
#pragma omp critical
            st = s;
        }
    }
    PZ_TRY(st);
    return write_index_and_values(p, io, u, kk, t.pos, t.vals, kk, body, cap, body_len, h);
}

static pz_status encode_randk(const codec_params *p, const codec_io *io, const float *x, const units *u, uint64_t seed, uint8_t *body,
                              size_t cap, size_t *body_len, frame_header *h, uint32_t *body_crc, int *have_crc) {
    const int64_t U = u->U, m = u->m, kk = kept_per_unit(p->fraction, m);
    h->k = (uint32_t)kk;
    h->options = p->options & OPT_UNBIASED;
    h->index_coding = IDX_NONE;
    h->seed = seed;
    h->value_type = p->value_type;
    h->value_bits = p->value_type == VAL_QUANT ? p->value_bits : 0;
    uint32_t *pos = scratch_get(io->sc, SC_POS, sizeof(uint32_t) * (size_t)(U * kk + 1));
    float *vals = scratch_get(io->sc, SC_VALS, sizeof(float) * (size_t)(U * kk + 1));
    if (!pos || !vals) return pz_fail(PZ_ERR_NOMEM, "out of memory for %lld positions", (long long)(U * kk));
    for (int64_t un = 0; un < U; un++) {
        pz_rng r;
        pz_rng_seed(&r, seed ^ (uint64_t)un);
        PZ_TRY(sample_positions(&r, m, kk, pos + un * kk));
        for (int64_t j = 0; j < kk; j++) vals[un * kk + j] = x[un * m + pos[un * kk + j]];
    }
    if (h->options & OPT_UNBIASED) { /* the decoder scales by m/k: it must stay finite */
        const float scale = kk ? (float)((double)m / (double)kk) : 1.0f;
        for (int64_t i = 0; i < U * kk; i++)
            if (isfinite(vals[i]) && !isfinite(vals[i] * scale))
                return pz_fail(PZ_ERR_ARG, "cannot encode with unbiased randk: %g scaled by %g overflows float", vals[i], scale);
    }
    PZ_TRY(write_values(io->k, p->value_type, h->value_bits, vals, U, kk, body, io->sc));
    *body_len = value_bytes(p->value_type, h->value_bits, U, U * kk);
    if (*body_len > cap) return pz_fail(PZ_ERR_STATE, "frame overflow (internal error)");
    return PZ_OK;
}

/* ---- decode --------------------------------------------------------------- */

/* positions from a bitmap: every unit must have exactly kk set bits */
static pz_status scatter_bitmap(const uint8_t *b, size_t idx_bytes, const units *u, int64_t kk, const float *vals, float *x) {
    const int64_t U = u->U, m = u->m, n = u->n;
    if (idx_bytes != bits_bytes((uint64_t)n, 1))
        return frame_error(PZ_FRAME_PAYLOAD, "a bitmap of %lld elements has %zu bytes, not %zu", (long long)n, bits_bytes((uint64_t)n, 1),
                           idx_bytes);
    if (n % 8 && (b[n / 8] >> (n % 8))) return frame_error(PZ_FRAME_PAYLOAD, "bits set beyond the bitmap's end");
    /* walk the set bits 64 at a time; count them per unit */
    const uint64_t nbytes = bits_bytes((uint64_t)n, 1);
    int64_t un = 0, got = 0, unit_end = m;
    for (uint64_t w = 0; w * 8 < nbytes; w++) {
        uint64_t v = 0;
        memcpy(&v, b + w * 8, nbytes - w * 8 < 8 ? nbytes - w * 8 : 8);
        for (; v; v &= v - 1) {
            const int64_t g = (int64_t)(w * 64) + __builtin_ctzll(v);
            while (g >= unit_end && un < U) { /* close the units before g: each must have had exactly kk */
                if (got != kk)
                    return frame_error(PZ_FRAME_PAYLOAD, "unit %lld has %lld positions in its bitmap, not %lld", (long long)un,
                                       (long long)got, (long long)kk);
                un++, got = 0, unit_end += m;
            }
            if (got >= kk || un >= U)
                return frame_error(PZ_FRAME_PAYLOAD, "unit %lld has more than %lld positions in its bitmap", (long long)un, (long long)kk);
            x[g] = vals[un * kk + got++];
        }
    }
    for (; un < U; un++, got = 0)
        if (got != kk) return frame_error(PZ_FRAME_PAYLOAD, "unit %lld has fewer than %lld positions in its bitmap", (long long)un, (long long)kk);
    return PZ_OK;
}

/* positions from delta varints: kk per unit, inside the unit, no bytes left */
static pz_status scatter_delta(const uint8_t *b, size_t idx_bytes, const units *u, int64_t kk, const float *vals, float *x) {
    const int64_t U = u->U, m = u->m;
    const uint8_t *q = b, *qend = b + idx_bytes;
    for (int64_t un = 0; un < U; un++) {
        int64_t prev = -1;
        for (int64_t j = 0; j < kk; j++) {
            uint32_t v;
            if (varint_get(&q, qend, &v)) return frame_error(PZ_FRAME_PAYLOAD, "a bad or truncated varint in unit %lld", (long long)un);
            const int64_t p = prev + 1 + (int64_t)v;
            if (p >= m)
                return frame_error(PZ_FRAME_PAYLOAD, "position %lld is outside unit %lld of %lld elements", (long long)p, (long long)un,
                                   (long long)m);
            x[un * m + p] = vals[un * kk + j];
            prev = p;
        }
    }
    if (q != qend) return frame_error(PZ_FRAME_PAYLOAD, "%zu bytes left over after the positions", (size_t)(qend - q));
    return PZ_OK;
}

/* topk / randtopk: index section, then values */
static pz_status decode_listed(const frame_header *h, const codec_io *io, const units *u, float *x) {
    PZ_TRY(sparse_check_k(h, u));
    const int64_t U = u->U, kk = h->k, n = u->n;
    const size_t vbytes = value_bytes(h->value_type, h->value_bits, U, U * kk);
    float *vals = scratch_get(io->sc, SC_VALS, sizeof(float) * (size_t)(U * kk + 1));
    if (!vals) return pz_fail(PZ_ERR_NOMEM, "out of memory for %lld values", (long long)(U * kk));
    if (h->body_len < vbytes) return frame_error(PZ_FRAME_PAYLOAD, "the payload is shorter than its values section");
    const size_t idx_bytes = h->body_len - vbytes;
    PZ_TRY(read_values(io->k, h->value_type, h->value_bits, h->body + idx_bytes, U, kk, vals, io->sc));
    /* an empty tensor may still declare ~2^32 empty units: no positions to walk */
    if (n == 0)
        return idx_bytes ? frame_error(PZ_FRAME_PAYLOAD, "an empty tensor with a %zu-byte index section", idx_bytes) : PZ_OK;
    memset(x, 0, sizeof(float) * (size_t)n);
    if (h->index_coding == IDX_BITMAP) return scatter_bitmap(h->body, idx_bytes, u, kk, vals, x);
    if (h->index_coding == IDX_DELTA) return scatter_delta(h->body, idx_bytes, u, kk, vals, x);
    return frame_error(PZ_FRAME_PARAM, "a %s frame needs a bitmap or delta index section", codec_wire_name(h->codec));
}

static pz_status decode_randk(const frame_header *h, const codec_io *io, const units *u, float *x) {
    PZ_TRY(sparse_check_k(h, u));
    const int64_t U = u->U, m = u->m, kk = h->k, n = u->n;
    const size_t vbytes = value_bytes(h->value_type, h->value_bits, U, U * kk);
    float *vals = scratch_get(io->sc, SC_VALS, sizeof(float) * (size_t)(U * kk + 1));
    uint32_t *pos = scratch_get(io->sc, SC_POS, sizeof(uint32_t) * (size_t)(kk + 1));
    if (!vals || !pos) return pz_fail(PZ_ERR_NOMEM, "out of memory for %lld values", (long long)(U * kk));
    if (h->body_len != vbytes)
        return frame_error(PZ_FRAME_PAYLOAD, "a randk payload of this shape has %zu bytes, not %llu", vbytes, (unsigned long long)h->body_len);
    PZ_TRY(read_values(io->k, h->value_type, h->value_bits, h->body, U, kk, vals, io->sc));
    if (n == 0) return PZ_OK; /* empty units, however many: no positions to draw */
    memset(x, 0, sizeof(float) * (size_t)n);
    const float scale = (h->options & OPT_UNBIASED) && kk ? (float)((double)m / (double)kk) : 1.0f;
    for (int64_t un = 0; un < U; un++) {
        pz_rng r;
        pz_rng_seed(&r, h->seed ^ (uint64_t)un);
        PZ_TRY(sample_positions(&r, m, kk, pos));
        for (int64_t j = 0; j < kk; j++) x[un * m + pos[j]] = vals[un * kk + j] * scale;
    }
    return PZ_OK;
}

static pz_status check_topk(const frame_header *h) { return sparse_check(h, 0, 1, ""); }
static pz_status check_randtopk(const frame_header *h) { return sparse_check(h, 0, 1, ""); }
static pz_status check_randk(const frame_header *h) { return sparse_check(h, 0, 0, "randk sends no positions"); }

/* ---- sizes and specs -------------------------------------------------------- */

/* the index coding is chosen per frame: bound by the larger of the two */
static size_t max_body_listed(const codec_params *p, const units *u) {
    const int64_t kept = u->U * kept_per_unit(p->fraction, u->m);
    const size_t vals = value_bytes(p->value_type, p->value_bits, u->U, kept);
    const size_t bitmap = bits_bytes((uint64_t)u->n, 1), delta = (size_t)kept * 5;
    const size_t idx = p->index_coding == IDX_BITMAP ? bitmap : p->index_coding == IDX_DELTA ? delta : (bitmap > delta ? bitmap : delta);
    return idx + vals;
}

static size_t max_body_randk(const codec_params *p, const units *u) {
    return value_bytes(p->value_type, p->value_bits, u->U, u->U * kept_per_unit(p->fraction, u->m));
}

static int match_topk(const char *name, codec_params *p) { return !strcmp(name, "topk") ? (p->gran = GRAN_SAMPLE, 1) : 0; }
static int match_randk(const char *name, codec_params *p) { return !strcmp(name, "randk") ? (p->gran = GRAN_SAMPLE, 1) : 0; }
static int match_randtopk(const char *name, codec_params *p) {
    return !strcmp(name, "randtopk") ? (p->gran = GRAN_SAMPLE, p->alpha = 0.1, 1) : 0;
}

static pz_status option_index(codec_params *p, const char *val, const char *spec) {
    const pz_name *c = pz_name_find(spec_index_codings, val);
    if (!c) return spec_bad(spec, "index= takes auto, bitmap or delta");
    p->index_coding = c->value;
    return PZ_OK;
}

static pz_status option_topk(codec_params *p, const char *key, const char *val, const char *spec) {
    if (!strcmp(key, "per") && val) return spec_per(p, val, 0, spec);
    if (!strcmp(key, "values") && val) return spec_values(p, val, 1, spec);
    if (!strcmp(key, "index") && val) return option_index(p, val, spec);
    if (spec_option_word(p, key, val, codec_topk.option_mask)) return PZ_OK;
    if (!strcmp(key, "by") && val) return spec_bad(spec, "by= takes magnitude or value");
    return spec_unknown_option(spec, "topk", key, val);
}

static pz_status option_randk(codec_params *p, const char *key, const char *val, const char *spec) {
    if (!strcmp(key, "per") && val) return spec_per(p, val, 0, spec);
    if (!strcmp(key, "values") && val) return spec_values(p, val, 1, spec);
    if (!val && spec_option_word(p, key, val, codec_randk.option_mask)) return PZ_OK;
    return spec_unknown_option(spec, "randk", key, val);
}

static pz_status option_randtopk(codec_params *p, const char *key, const char *val, const char *spec) {
    if (!strcmp(key, "per") && val) return spec_per(p, val, 0, spec);
    if (!strcmp(key, "values") && val) return spec_values(p, val, 1, spec);
    if (!strcmp(key, "index") && val) return option_index(p, val, spec);
    if (!strcmp(key, "alpha") && val) {
        char *end;
        p->alpha = strtod(val, &end);
        if (end == val || *end || !(p->alpha >= 0.0 && p->alpha <= 1.0)) return spec_bad(spec, "alpha= takes a number in [0, 1]");
        return PZ_OK;
    }
    return spec_unknown_option(spec, "randtopk", key, val);
}

static const char *index_name(int coding) { return pz_name_of(spec_index_codings, coding); }

static void canonical_topk(const codec_params *p, char *buf, size_t cap) {
    char v[8];
    values_name(p, v, sizeof v);
    snprintf(buf, cap, "topk:%g,per=%s,values=%s,%s,index=%s", p->fraction, gran_name(p->gran), v,
             option_word(p->options, OPT_BYVALUE), index_name(p->index_coding));
}

static void canonical_randk(const codec_params *p, char *buf, size_t cap) {
    char v[8];
    values_name(p, v, sizeof v);
    snprintf(buf, cap, "randk:%g,per=%s,values=%s,%s", p->fraction, gran_name(p->gran), v, option_word(p->options, OPT_UNBIASED));
}

static void canonical_randtopk(const codec_params *p, char *buf, size_t cap) {
    char v[8];
    values_name(p, v, sizeof v);
    snprintf(buf, cap, "randtopk:%g,alpha=%g,per=%s,values=%s,index=%s", p->fraction, p->alpha, gran_name(p->gran), v,
             index_name(p->index_coding));
}

#define FRACTION_ARG(EXAMPLE) {CODEC_ARG_FRACTION, "kept fraction", 0.0, 1.0, EXAMPLE}

const codec_family codec_topk = {
    .checks_finite = 1,
    .name = "topk", .wire_id = 4, .arg = FRACTION_ARG("topk:0.1"), .option_mask = OPT_BYVALUE,
    .fields = PZ_FRAME_USES_GRANULARITY | PZ_FRAME_USES_K | PZ_FRAME_USES_VALUES | PZ_FRAME_USES_INDEX,
    .usage = "topk:F[,per=sample|tensor,by=magnitude|value,values=fp32|fp16|bf16|qB,index=auto|bitmap|delta]",
    .help = "keep the fraction F of largest magnitudes (per sample by default, as Paper A); positions as a bitmap or delta varints, "
            "whichever is smaller",
    .match = match_topk, .option = option_topk, .canonical = canonical_topk, .max_body = max_body_listed,
    .encode = encode_topk, .check = check_topk, .decode = decode_listed,
};

const codec_family codec_randk = {
    .name = "randk", .wire_id = 5, .arg = FRACTION_ARG("randk:0.1"), .option_mask = OPT_UNBIASED,
    .fields = PZ_FRAME_USES_GRANULARITY | PZ_FRAME_USES_K | PZ_FRAME_USES_SEED | PZ_FRAME_USES_VALUES,
    .usage = "randk:F[,unbiased,per=sample|tensor,values=...]",
    .help = "F of the positions at random from a seed carried in the header: no positions on the wire; unbiased scales by d/k",
    .match = match_randk, .option = option_randk, .canonical = canonical_randk, .max_body = max_body_randk,
    .encode = encode_randk, .check = check_randk, .decode = decode_randk,
};

const codec_family codec_randtopk = {
    .checks_finite = 1,
    .name = "randtopk", .wire_id = 6, .arg = FRACTION_ARG("randtopk:0.1"),
    .fields = PZ_FRAME_USES_GRANULARITY | PZ_FRAME_USES_K | PZ_FRAME_USES_VALUES | PZ_FRAME_USES_INDEX,
    .usage = "randtopk:F[,alpha=0.1,per=...,values=...,index=...]",
    .help = "randomized TopK (Zheng et al.): k draws, top positions weighted (1-alpha)/k, the others alpha/(d-k)",
    .match = match_randtopk, .option = option_randtopk, .canonical = canonical_randtopk, .max_body = max_body_listed,
    .encode = encode_randtopk, .check = check_randtopk, .decode = decode_listed,
};
