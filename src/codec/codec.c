/* codec.c — the codec object: create from a spec, encode a tensor into a
 * frame and decode it back, with the stateful wrappers (error feedback,
 * EF21, AQ-SGD) around any base codec. */
#include "codec_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

pz_status pz_codec_create(pz_codec **out, const char *spec) {
    *out = NULL;
    pz_codec *c = calloc(1, sizeof *c);
    if (!c) return pz_fail(PZ_ERR_NOMEM, "out of memory");
    c->store.fd = -1;
    pz_status st = codec_parse_spec(c, spec);
    if (st) {
        free(c);
        return st;
    }
    codec_canonical_spec(c, c->spec, sizeof c->spec);
    c->seed = 0x5EED;
    c->max_samples = 1u << 24;
    c->k = pz_codec_kernels_best();
    *out = c;
    return PZ_OK;
}

void pz_codec_free(pz_codec *c) {
    if (!c) return;
    free(c->state);
    free(c->tmp);
    scratch_release(&c->sc);
    if (c->store_ready) store_free(&c->store);
    free(c);
}

const char *pz_codec_spec(const pz_codec *c) { return c->spec; }
int pz_codec_is_stateful(const pz_codec *c) { return c->wrapper != WRAP_NONE; }
void pz_codec_set_seed(pz_codec *c, uint64_t seed) { c->seed = seed, c->counter = 0; }
void pz_codec_set_warmup(pz_codec *c, int on) { c->warmup = on; }
void pz_codec_set_max_samples(pz_codec *c, uint32_t max_samples) { c->max_samples = max_samples; }

static int needs_ids(const pz_codec *c) { return c->wrapper == WRAP_AQSGD || (c->wrapper == WRAP_EF && c->per_sample); }

static pz_status check_shape(int ndim, const int64_t *shape, int64_t *n) {
    if (ndim < 1 || ndim > 4) return pz_fail(PZ_ERR_ARG, "a tensor has 1..4 dimensions, got %d", ndim);
    *n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0 || shape[i] > 0xFFFFFFFFll) return pz_fail(PZ_ERR_ARG, "dimension %d has size %lld", i, (long long)shape[i]);
        *n *= shape[i];
        if (*n > ((int64_t)1 << 31)) return pz_fail(PZ_ERR_ARG, "tensors of more than 2^31 elements are not supported");
    }
    return PZ_OK;
}

static pz_status base_units(const codec_params *p, int ndim, const int64_t *shape, units *u) {
    if (p->gran == GRAN_SAMPLE && ndim < 1) return pz_fail(PZ_ERR_ARG, "per-sample needs a batch dimension");
    return units_of(u, p->gran, ndim, shape);
}

size_t pz_codec_max_frame_bytes(const pz_codec *c, int ndim, const int64_t *shape) {
    int64_t n = 0;
    units u;
    if (check_shape(ndim, shape, &n) || base_units(&c->p, ndim, shape, &u)) return 0;
    frame_header h = {.options = c->p.options, .bits = c->p.bits};
    size_t body = c->p.id <= CODEC_QUANT ? dense_body_bytes(&c->p, &h, &u)
                                         : sparse_max_body_bytes(&c->p, &u, sparse_k(&c->p, u.m));
    const size_t warm = (size_t)n * 4; /* aqsgd warm-up sends fp32 */
    if (c->wrapper == WRAP_AQSGD && warm > body) body = warm;
    return PZ_FRAME_HEADER_BYTES + (needs_ids(c) ? 4 * (size_t)shape[0] : 0) + body;
}

/* Encode t with the base codec p (or plain fp32 when as_none). */
static pz_status base_encode(pz_codec *c, const codec_params *p, const float *t, int ndim, const int64_t *shape,
                             const uint32_t *ids, int wrapper, uint64_t seed, uint8_t *frame, size_t cap, size_t *len) {
    units u;
    PZ_TRY(base_units(p, ndim, shape, &u));
    frame_header h = {.codec = p->id, .ndim = ndim, .gran = p->gran, .bits = p->id == CODEC_QUANT ? p->bits : 0,
                      .options = p->id == CODEC_QUANT ? (p->options & (OPT_SYM | OPT_STOCH))
                                 : p->id == CODEC_TOPK ? (p->options & OPT_BYVALUE)
                                 : p->id == CODEC_RANDK ? (p->options & OPT_UNBIASED) : 0,
                      .wrapper = wrapper, .seed = p->id == CODEC_QUANT ? seed : 0};
    if (p->id <= CODEC_BF16) h.gran = 0;
    for (int i = 0; i < ndim; i++) h.dims[i] = shape[i];
    const size_t id_bytes = ids ? 4 * (size_t)shape[0] : 0;
    if (ids) h.flags |= 1;
    uint8_t *body = frame + PZ_FRAME_HEADER_BYTES + id_bytes;
    size_t body_len;
    uint32_t body_crc = 0;
    int have_crc = 0;
    if (p->id <= CODEC_QUANT) {
        body_len = dense_body_bytes(p, &h, &u);
        if (PZ_FRAME_HEADER_BYTES + id_bytes + body_len > cap)
            return pz_fail(PZ_ERR_ARG, "frame buffer of %zu bytes is too small (need %zu)", cap, PZ_FRAME_HEADER_BYTES + id_bytes + body_len);
        PZ_TRY(dense_encode(p, c->k, t, &u, seed, body, &h, &body_crc));
        have_crc = 1;
    } else {
        const size_t bound = sparse_max_body_bytes(p, &u, sparse_k(p, u.m));
        if (PZ_FRAME_HEADER_BYTES + id_bytes + bound > cap)
            return pz_fail(PZ_ERR_ARG, "frame buffer of %zu bytes is too small (need %zu)", cap, PZ_FRAME_HEADER_BYTES + id_bytes + bound);
        PZ_TRY(sparse_encode(p, c->k, t, &u, seed, body, bound, &body_len, &h, &c->sc));
    }
    if (ids) memcpy(frame + PZ_FRAME_HEADER_BYTES, ids, id_bytes);
    h.payload_len = id_bytes + body_len;
    if (have_crc) { /* payload = ids || body */
        const uint32_t ids_crc = c->k->crc32c(0, frame + PZ_FRAME_HEADER_BYTES, id_bytes);
        body_crc = id_bytes ? pz_crc32c_combine(ids_crc, body_crc, body_len) : body_crc;
    }
    frame_write_header_crc(frame, &h, body_crc, have_crc);
    *len = PZ_FRAME_HEADER_BYTES + h.payload_len;
    return PZ_OK;
}

/* Decode a parsed frame's base payload into x (n floats). */
static pz_status base_decode(const frame_header *h, const pz_codec_kernels *k, float *x, codec_scratch *sc) {
    units u;
    if (h->codec <= CODEC_BF16 || h->wrapper == WRAP_AQSGD_WARMUP) {
        if (h->codec != CODEC_NONE && h->wrapper == WRAP_AQSGD_WARMUP)
            return frame_error(PZ_FRAME_PARAM, "an AQ-SGD warm-up frame must carry fp32 (codec none)");
        if (h->bits || h->gran || h->options || h->value_type || h->index_coding || h->k)
            return frame_error(PZ_FRAME_PARAM, "%s takes no parameters", codec_name(h->codec));
    } else if (h->codec == CODEC_QUANT) {
        if (h->bits < 1 || h->bits > 8) return frame_error(PZ_FRAME_PARAM, "quantization width %d is not in 1..8", h->bits);
        if (h->options & ~(OPT_SYM | OPT_STOCH) || h->value_type || h->index_coding || h->k)
            return frame_error(PZ_FRAME_PARAM, "parameters that quantization does not take are set");
    } else {
        if (h->gran > GRAN_SAMPLE) return frame_error(PZ_FRAME_PARAM, "%s works per tensor or per sample, not granularity %d", codec_name(h->codec), h->gran);
        if (h->codec != CODEC_MS && h->bits) return frame_error(PZ_FRAME_PARAM, "%s takes no code width", codec_name(h->codec));
        if (h->codec == CODEC_RANDK && h->index_coding) return frame_error(PZ_FRAME_PARAM, "randk sends no positions");
        if (h->codec == CODEC_MS && h->index_coding) return frame_error(PZ_FRAME_PARAM, "ms sends no index section");
        const int allowed = h->codec == CODEC_TOPK ? OPT_BYVALUE : h->codec == CODEC_RANDK ? OPT_UNBIASED : h->codec == CODEC_MS ? OPT_SIGNED : 0;
        if (h->options & ~allowed) return frame_error(PZ_FRAME_PARAM, "option bits 0x%02x do not apply to %s", h->options, codec_name(h->codec));
    }
    PZ_TRY(units_of(&u, h->codec <= CODEC_BF16 ? GRAN_TENSOR : h->gran, h->ndim, h->dims));
    if (h->codec <= CODEC_QUANT) {
        frame_header hh = *h;
        codec_params p = {.id = h->codec, .bits = h->bits};
        const size_t need = dense_body_bytes(&p, &hh, &u);
        if (h->body_len != need)
            return frame_error(PZ_FRAME_PAYLOAD, "a %s payload of this shape has %zu bytes, not %llu", codec_name(h->codec), need,
                               (unsigned long long)h->body_len);
        return dense_decode(h, k, &u, x);
    }
    return sparse_decode(h, k, &u, x, sc);
}

static float *scratch(pz_codec *c, int64_t n) {
    if (!c->tmp || c->tmp_n < n) {
        free(c->tmp);
        c->tmp = pz_floats((size_t)(2 * n + 2));
        c->tmp_n = n;
    }
    return c->tmp;
}

/* the per-boundary state (ef, ef21): grown to the largest tensor seen, the
 * first n entries used (sender and receiver see the same sizes) */
static float *boundary_state(pz_codec *c, int64_t n) {
    if (!c->state || c->state_n < n) {
        float *s = pz_floats((size_t)(n ? n : 1));
        if (c->state) memcpy(s, c->state, sizeof(float) * (size_t)c->state_n);
        free(c->state);
        c->state = s;
        c->state_n = n;
    }
    return c->state;
}

static pz_status ensure_store(pz_codec *c, int64_t row) {
    if (c->store_ready) {
        if (c->store.row != row)
            return pz_fail(PZ_ERR_STATE, "per-sample buffers hold %lld elements per sample, this tensor has %lld",
                           (long long)c->store.row, (long long)row);
        return PZ_OK;
    }
    PZ_TRY(store_init(&c->store, row, c->store_fp16, c->wrapper == WRAP_AQSGD ? c->mmap_path : NULL));
    c->store_ready = 1;
    return PZ_OK;
}

static double rel_error(const float *a, const float *ref, int64_t n) {
    double e = 0.0, r = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const double d = (double)a[i] - ref[i];
        e += d * d, r += (double)ref[i] * ref[i];
    }
    return r > 0 ? sqrt(e / r) : sqrt(e);
}

pz_status pz_codec_encode(pz_codec *c, const float *x, int ndim, const int64_t *shape, const uint32_t *ids,
                          uint8_t *frame, size_t cap, size_t *len, pz_codec_stats *stats) {
    int64_t n = 0;
    *len = 0;
    PZ_TRY(check_shape(ndim, shape, &n));
    if (needs_ids(c) && !ids) return pz_fail(PZ_ERR_ARG, "codec '%s' keys its state by sample id: pass the batch's ids", c->spec);
    const uint32_t *frame_ids = needs_ids(c) ? ids : NULL;
    if (frame_ids)
        for (int64_t b = 0; b < shape[0]; b++)
            if (ids[b] >= c->max_samples)
                return pz_fail(PZ_ERR_ARG, "sample id %u is not below the codec's %u samples (pz_codec_set_max_samples)", ids[b],
                               c->max_samples);
    uint64_t z = c->seed + 0x9E3779B97F4A7C15ull * ++c->counter;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    const uint64_t seed = z ^ (z >> 31);
    const int64_t B = shape[0], row = B ? n / B : 0;
    float *t = scratch(c, n), *that = t + n;
    const float *src = x;
    int wrapper = c->wrapper;
    codec_params p = c->p;
    if (c->wrapper == WRAP_EF) {
        /* Paper A's error feedback: send C(x + e), keep e <- (x + e) - C(x + e) */
        if (c->per_sample) {
            PZ_TRY(ensure_store(c, row));
            for (int64_t b = 0; b < B; b++) {
                void *r;
                PZ_TRY(store_row(&c->store, ids[b], &r));
                store_get(&c->store, r, t + b * row);
                for (int64_t i = 0; i < row; i++) t[b * row + i] += x[b * row + i];
            }
        } else {
            const float *e = boundary_state(c, n);
            for (int64_t i = 0; i < n; i++) t[i] = x[i] + e[i];
        }
        src = t;
    } else if (c->wrapper == WRAP_EF21) {
        /* EF21: send C(x - A), A <- A + C(x - A) */
        const float *A = boundary_state(c, n);
        for (int64_t i = 0; i < n; i++) t[i] = x[i] - A[i];
        src = t;
    } else if (c->wrapper == WRAP_AQSGD) {
        PZ_TRY(ensure_store(c, row));
        if (c->warmup) {
            wrapper = WRAP_AQSGD_WARMUP;
            p = (codec_params){.id = CODEC_NONE};
        } else {
            /* AQ-SGD: send C(x_i - m(xi)) */
            for (int64_t b = 0; b < B; b++) {
                void *r;
                PZ_TRY(store_row(&c->store, ids[b], &r));
                store_get(&c->store, r, t + b * row);
                for (int64_t i = 0; i < row; i++) t[b * row + i] = x[b * row + i] - t[b * row + i];
            }
            src = t;
        }
    }
    PZ_TRY(base_encode(c, &p, src, ndim, shape, frame_ids, wrapper, seed, frame, cap, len));
    const int need_hat = c->wrapper != WRAP_NONE || stats;
    if (need_hat) {
        frame_header h;
        PZ_TRY(frame_parse(frame, *len, &h));
        PZ_TRY(base_decode(&h, c->k, that, &c->sc));
    }
    const float *received = that; /* what the receiver will use */
    if (c->wrapper == WRAP_EF) {
        if (c->per_sample) {
            for (int64_t b = 0; b < B; b++) {
                void *r;
                PZ_TRY(store_row(&c->store, ids[b], &r));
                float *e = t + b * row; /* e = (x + e) - C(x + e), in place */
                for (int64_t i = 0; i < row; i++) e[i] -= that[b * row + i];
                store_put(&c->store, r, e);
            }
        } else {
            float *e = boundary_state(c, n);
            for (int64_t i = 0; i < n; i++) e[i] = t[i] - that[i];
        }
    } else if (c->wrapper == WRAP_EF21) {
        float *A = boundary_state(c, n);
        for (int64_t i = 0; i < n; i++) A[i] += that[i];
        received = A;
    } else if (c->wrapper == WRAP_AQSGD) {
        for (int64_t b = 0; b < B; b++) {
            void *r;
            PZ_TRY(store_row(&c->store, ids[b], &r));
            float *m = t + b * row;
            if (c->warmup) memcpy(m, that + b * row, sizeof(float) * (size_t)row);
            else {
                store_get(&c->store, r, m);
                for (int64_t i = 0; i < row; i++) m[i] += that[b * row + i];
            }
            store_put(&c->store, r, m);
            store_get(&c->store, r, m); /* as stored (fp16 rounds), as the receiver will have it */
        }
        received = t;
    }
    if (stats) {
        stats->elements = (uint64_t)n;
        stats->bytes = *len;
        stats->bits_per_element = n ? 8.0 * (double)*len / (double)n : 0.0;
        stats->rel_error = rel_error(received, x, n);
    }
    return PZ_OK;
}

/* parse a frame for decoding into a destination of cap floats */
static pz_status parse_for_decode(const uint8_t *frame, size_t len, size_t cap, frame_header *h) {
    PZ_TRY(frame_parse(frame, len, h));
    if ((uint64_t)h->n > cap)
        return frame_error(PZ_FRAME_CAPACITY, "the tensor has %lld elements, the destination holds %zu", (long long)h->n, cap);
    return PZ_OK;
}

pz_status pz_frame_decode(const uint8_t *frame, size_t len, float *x, size_t cap, int *ndim, int64_t *shape) {
    frame_header h;
    PZ_TRY(parse_for_decode(frame, len, cap, &h));
    codec_scratch sc = {0};
    const pz_status st = base_decode(&h, pz_codec_kernels_best(), x, &sc);
    scratch_release(&sc);
    PZ_TRY(st);
    if (ndim) *ndim = h.ndim;
    if (shape)
        for (int i = 0; i < 4; i++) shape[i] = h.dims[i];
    return PZ_OK;
}

pz_status pz_codec_decode(pz_codec *c, const uint8_t *frame, size_t len, float *x, size_t cap, int *ndim, int64_t *shape) {
    frame_header h;
    PZ_TRY(parse_for_decode(frame, len, cap, &h));
    const int fw = h.wrapper == WRAP_AQSGD_WARMUP ? WRAP_AQSGD : h.wrapper;
    if ((fw == WRAP_EF21 || fw == WRAP_AQSGD || c->wrapper == WRAP_EF21 || c->wrapper == WRAP_AQSGD) && fw != c->wrapper)
        return frame_error(PZ_FRAME_STATE, "a frame of wrapper %d reached a '%s' receiver", h.wrapper, c->spec);
    if (fw == WRAP_AQSGD && !(h.flags & 1)) return frame_error(PZ_FRAME_PAYLOAD, "an AQ-SGD frame without sample ids");
    const int64_t n = h.n, B = h.dims[0], row = B ? n / B : 0;
    if (c->wrapper == WRAP_NONE || c->wrapper == WRAP_EF) {
        PZ_TRY(base_decode(&h, c->k, x, &c->sc));
    } else if (c->wrapper == WRAP_EF21) {
        float *d = scratch(c, n);
        PZ_TRY(base_decode(&h, c->k, d, &c->sc));
        float *A = boundary_state(c, n);
        for (int64_t i = 0; i < n; i++) A[i] += d[i], x[i] = A[i];
    } else {
        float *d = scratch(c, n);
        PZ_TRY(base_decode(&h, c->k, d, &c->sc));
        PZ_TRY(ensure_store(c, row));
        for (int64_t b = 0; b < B; b++) {
            uint32_t id;
            memcpy(&id, (const uint8_t *)h.ids + 4 * b, 4);
            if (id >= c->max_samples)
                return frame_error(PZ_FRAME_PAYLOAD, "sample id %u is not below the receiver's %u samples", id, c->max_samples);
            void *r;
            PZ_TRY(store_row(&c->store, id, &r));
            float *m = x + b * row;
            if (h.wrapper == WRAP_AQSGD_WARMUP) memcpy(m, d + b * row, sizeof(float) * (size_t)row);
            else {
                store_get(&c->store, r, m);
                for (int64_t i = 0; i < row; i++) m[i] += d[b * row + i];
            }
            store_put(&c->store, r, m);
            store_get(&c->store, r, m);
        }
    }
    if (ndim) *ndim = h.ndim;
    if (shape)
        for (int i = 0; i < 4; i++) shape[i] = h.dims[i];
    return PZ_OK;
}

/* ---- state for checkpoints -------------------------------------------------
 * [u32 magic "PZCS"][u32 version 1][u64 seed][u64 counter][i32 warmup]
 * [i64 state_n][state_n f32][i32 store_ready][i64 row][i32 fp16][i64 rows]
 * [rows u8 present][rows * row_bytes data] */
enum { STATE_MAGIC = 0x53435A50u, STATE_VERSION = 1 };

static size_t store_row_bytes(const sample_store *s) { return (size_t)s->row * (s->fp16 ? 2 : 4); }

pz_status pz_codec_state_save(const pz_codec *c, uint8_t **out, size_t *len) {
    const int64_t rows = c->store_ready ? c->store.cap : 0;
    const size_t rb = c->store_ready ? store_row_bytes(&c->store) : 0;
    const uint32_t spec_len = (uint32_t)strlen(c->spec);
    const size_t n = 4 + spec_len + 4 + 4 + 8 + 8 + 4 + 8 + 4 * (size_t)(c->state ? c->state_n : 0) + 4 + 8 + 4 + 8 + (size_t)rows * (1 + rb);
    uint8_t *b = malloc(n), *p = b;
    if (!b) return pz_fail(PZ_ERR_NOMEM, "out of memory for a %zu-byte codec state", n);
    const uint32_t magic = STATE_MAGIC, version = STATE_VERSION;
    const int64_t sn = c->state ? c->state_n : 0;
    const int32_t warm = c->warmup, ready = c->store_ready, fp16 = c->store.fp16;
    const int64_t row = c->store.row;
#define PUT(v) (memcpy(p, &(v), sizeof(v)), p += sizeof(v))
    PUT(magic), PUT(version), PUT(spec_len);
    memcpy(p, c->spec, spec_len), p += spec_len;
    PUT(c->seed), PUT(c->counter), PUT(warm), PUT(sn);
    if (sn) memcpy(p, c->state, 4 * (size_t)sn), p += 4 * (size_t)sn;
    PUT(ready), PUT(row), PUT(fp16), PUT(rows);
#undef PUT
    if (rows) {
        memcpy(p, c->store.present, (size_t)rows), p += rows;
        memcpy(p, c->store.data, (size_t)rows * rb), p += (size_t)rows * rb;
    }
    *out = b, *len = (size_t)(p - b);
    return PZ_OK;
}

pz_status pz_codec_state_load(pz_codec *c, const uint8_t *b, size_t len) {
    const uint8_t *p = b, *end = b + len;
#define GET(v) do { if ((size_t)(end - p) < sizeof(v)) goto short_blob; memcpy(&(v), p, sizeof(v)); p += sizeof(v); } while (0)
    uint32_t magic, version;
    uint64_t seed, counter;
    int32_t warm, ready, fp16;
    int64_t sn, row, rows;
    GET(magic); GET(version);
    if (magic != STATE_MAGIC || version != STATE_VERSION) return pz_fail(PZ_ERR_FORMAT, "not a pipezip codec state (or another version)");
    uint32_t spec_len;
    GET(spec_len);
    if (spec_len > (size_t)(end - p)) goto short_blob;
    if (spec_len != strlen(c->spec) || memcmp(p, c->spec, spec_len))
        return pz_fail(PZ_ERR_ARG, "the saved state is codec '%.*s', this one is '%s'", (int)(spec_len < 200 ? spec_len : 200), (const char *)p,
                       c->spec);
    p += spec_len;
    GET(seed); GET(counter); GET(warm); GET(sn);
    if (sn < 0 || (uint64_t)sn > (uint64_t)(end - p) / 4) goto short_blob;
    if (sn) {
        free(c->state);
        c->state = pz_floats((size_t)sn);
        c->state_n = sn;
        memcpy(c->state, p, 4 * (size_t)sn), p += 4 * (size_t)sn;
    }
    GET(ready); GET(row); GET(fp16); GET(rows);
#undef GET
    if (ready) {
        if (row < 1 || rows < 0) return pz_fail(PZ_ERR_FORMAT, "codec state: bad per-sample store shape");
        if (c->store_ready) store_free(&c->store), c->store_ready = 0;
        if (!!fp16 != !!c->store_fp16) return pz_fail(PZ_ERR_FORMAT, "codec state: rows stored as %s, the codec keeps %s", fp16 ? "fp16" : "fp32", c->store_fp16 ? "fp16" : "fp32");
        PZ_TRY(ensure_store(c, row));
        const size_t rb = store_row_bytes(&c->store);
        if ((uint64_t)rows > (uint64_t)(end - p) / (1 + rb)) goto short_blob;
        for (int64_t i = 0; i < rows; i++) {
            if (!p[i]) continue;
            void *r;
            PZ_TRY(store_row(&c->store, (uint32_t)i, &r));
            memcpy(r, p + rows + (size_t)i * rb, rb);
        }
        p += (size_t)rows * (1 + rb);
    }
    if (p != end) return pz_fail(PZ_ERR_FORMAT, "codec state: %zu bytes left over", (size_t)(end - p));
    c->seed = seed, c->counter = counter, c->warmup = warm;
    return PZ_OK;
short_blob:
    return pz_fail(PZ_ERR_FORMAT, "codec state is truncated");
}
