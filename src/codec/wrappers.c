/* SPDX-License-Identifier: MIT */
/* wrappers.c — the stateful wrappers around any base codec, and their
 * state in checkpoints:
 *   ef     Paper A's error feedback: send C(x + e), keep e = (x + e) - C(x + e)
 *          (one buffer per boundary, or per sample with per=sample);
 *   ef21   send C(x - A), both ends A += C(x - A), the receiver uses A;
 *   aqsgd  per-sample buffers m(xi) kept identically by both ends: send
 *          C(x - m(xi)), both add it to m(xi); a warm-up mode sends x as fp32
 *          (wrapper byte 4) and sets m(xi) = x. */
#include "object.h"

#include <stdlib.h>
#include <string.h>

/* ---- ef ------------------------------------------------------------------- */

static pz_status ef_option(pz_codec_desc *c, const char *key, const char *val, const char *spec) {
    if (!strcmp(key, "per") && val && (!strcmp(val, "boundary") || !strcmp(val, "sample"))) {
        c->per_sample = val[0] == 's';
        return PZ_OK;
    }
    return PZ_ERR_ARG;
}

static void ef_canonical(const pz_codec_desc *c, const char *base, char *buf, size_t cap) {
    snprintf(buf, cap, "ef(%s),per=%s", base, c->per_sample ? "sample" : "boundary");
}

static int ef_needs_ids(const pz_codec_desc *d) { return d->per_sample; }

static pz_status ef_prepare(pz_codec *c, const float *x, const int64_t *shape, int64_t n, const uint32_t *ids, float *t,
                            const float **src, codec_params *p, int *wire) {
    const int64_t B = shape[0], row = B ? n / B : 0;
    if (c->d.per_sample) {
        PZ_TRY(codec_ensure_store(c, row));
        for (int64_t b = 0; b < B; b++) {
            void *r;
            PZ_TRY(store_row(&c->store, ids[b], &r));
            store_get(&c->store, r, t + b * row);
            for (int64_t i = 0; i < row; i++) t[b * row + i] += x[b * row + i];
        }
    } else {
        const float *e = codec_boundary_state(c, n);
        if (!e) return pz_fail(PZ_ERR_NOMEM, "out of memory for an error-feedback buffer of %lld floats", (long long)n);
        for (int64_t i = 0; i < n; i++) t[i] = x[i] + e[i];
    }
    *src = t;
    return PZ_OK;
}

static pz_status ef_update(pz_codec *c, const float *x, const int64_t *shape, int64_t n, const uint32_t *ids, float *t,
                           const float *hat, const float **received) {
    const int64_t B = shape[0], row = B ? n / B : 0;
    if (c->d.per_sample) {
        for (int64_t b = 0; b < B; b++) {
            void *r;
            PZ_TRY(store_row(&c->store, ids[b], &r));
            float *e = t + b * row; /* e = (x + e) - C(x + e), in place */
            for (int64_t i = 0; i < row; i++) e[i] -= hat[b * row + i];
            store_put(&c->store, r, e);
        }
    } else {
        float *e = codec_boundary_state(c, n);
        for (int64_t i = 0; i < n; i++) e[i] = t[i] - hat[i];
    }
    *received = hat;
    return PZ_OK;
}

static const wrapper_kind wrap_ef = {
    .name = "ef", .wire_id = WRAP_EF, .usage = "ef(BASE)[,per=boundary|sample]",
    .help = "error feedback: send C(x + e), keep e = x + e - C(x + e)",
    .option = ef_option, .canonical = ef_canonical, .needs_ids = ef_needs_ids, .prepare = ef_prepare, .update = ef_update,
};

/* ---- ef21 ----------------------------------------------------------------- */

static pz_status no_option(pz_codec_desc *c, const char *key, const char *val, const char *spec) { return PZ_ERR_ARG; }
static void ef21_canonical(const pz_codec_desc *c, const char *base, char *buf, size_t cap) { snprintf(buf, cap, "ef21(%s)", base); }
static int no_ids(const pz_codec_desc *d) { return 0; }

static pz_status ef21_prepare(pz_codec *c, const float *x, const int64_t *shape, int64_t n, const uint32_t *ids, float *t,
                              const float **src, codec_params *p, int *wire) {
    const float *A = codec_boundary_state(c, n);
    if (!A) return pz_fail(PZ_ERR_NOMEM, "out of memory for an EF21 buffer of %lld floats", (long long)n);
    for (int64_t i = 0; i < n; i++) t[i] = x[i] - A[i];
    *src = t;
    return PZ_OK;
}

static pz_status ef21_update(pz_codec *c, const float *x, const int64_t *shape, int64_t n, const uint32_t *ids, float *t,
                             const float *hat, const float **received) {
    float *A = codec_boundary_state(c, n);
    for (int64_t i = 0; i < n; i++) A[i] += hat[i];
    *received = A;
    return PZ_OK;
}

static pz_status ef21_receive(pz_codec *c, const frame_header *h, const float *d, float *x) {
    const int64_t n = h->n;
    float *A = codec_boundary_state(c, n);
    if (!A) return pz_fail(PZ_ERR_NOMEM, "out of memory for an EF21 buffer of %lld floats", (long long)n);
    for (int64_t i = 0; i < n; i++) A[i] += d[i], x[i] = A[i];
    return PZ_OK;
}

static const wrapper_kind wrap_ef21 = {
    .name = "ef21", .wire_id = WRAP_EF21, .usage = "ef21(BASE)", .help = "EF21: send C(x - A), both ends A += C(x - A)",
    .receiver_state = 1, .option = no_option, .canonical = ef21_canonical, .needs_ids = no_ids, .prepare = ef21_prepare,
    .update = ef21_update, .receive = ef21_receive,
};

/* ---- aqsgd ---------------------------------------------------------------- */

static pz_status aqsgd_option(pz_codec_desc *c, const char *key, const char *val, const char *spec) {
    if (!strcmp(key, "store") && val && (!strcmp(val, "fp32") || !strcmp(val, "fp16"))) {
        c->store_fp16 = !strcmp(val, "fp16");
        return PZ_OK;
    }
    if (!strcmp(key, "mmap") && val && *val) {
        snprintf(c->mmap_path, sizeof c->mmap_path, "%s", val);
        return PZ_OK;
    }
    return PZ_ERR_ARG;
}

static void aqsgd_canonical(const pz_codec_desc *c, const char *base, char *buf, size_t cap) {
    snprintf(buf, cap, "aqsgd(%s),store=%s%s%s", base, c->store_fp16 ? "fp16" : "fp32", c->mmap_path[0] ? ",mmap=" : "", c->mmap_path);
}

static int yes_ids(const pz_codec_desc *d) { return 1; }

static pz_status aqsgd_prepare(pz_codec *c, const float *x, const int64_t *shape, int64_t n, const uint32_t *ids, float *t,
                               const float **src, codec_params *p, int *wire) {
    const int64_t B = shape[0], row = B ? n / B : 0;
    PZ_TRY(codec_ensure_store(c, row));
    if (c->warmup) {
        *wire = WRAP_AQSGD_WARMUP;
        *p = (codec_params){.fam = codec_family_plain};
        return PZ_OK;
    }
    /* AQ-SGD: send C(x_i - m(xi)) */
    for (int64_t b = 0; b < B; b++) {
        void *r;
        PZ_TRY(store_row(&c->store, ids[b], &r));
        store_get(&c->store, r, t + b * row);
        for (int64_t i = 0; i < row; i++) t[b * row + i] = x[b * row + i] - t[b * row + i];
    }
    *src = t;
    return PZ_OK;
}

static pz_status aqsgd_update(pz_codec *c, const float *x, const int64_t *shape, int64_t n, const uint32_t *ids, float *t,
                              const float *hat, const float **received) {
    const int64_t B = shape[0], row = B ? n / B : 0;
    for (int64_t b = 0; b < B; b++) {
        void *r;
        PZ_TRY(store_row(&c->store, ids[b], &r));
        float *m = t + b * row;
        if (c->warmup) memcpy(m, hat + b * row, sizeof(float) * (size_t)row);
        else {
            store_get(&c->store, r, m);
            for (int64_t i = 0; i < row; i++) m[i] += hat[b * row + i];
        }
        store_put(&c->store, r, m);
        store_get(&c->store, r, m); /* as stored (fp16 rounds), as the receiver will have it */
    }
    *received = t;
    return PZ_OK;
}

static pz_status aqsgd_receive(pz_codec *c, const frame_header *h, const float *d, float *x) {
    const int64_t n = h->n, B = h->dims[0], row = B ? n / B : 0;
    PZ_TRY(codec_ensure_store(c, row));
    for (int64_t b = 0; b < B; b++) {
        uint32_t id;
        memcpy(&id, (const uint8_t *)h->ids + 4 * b, 4);
        if (id >= c->max_samples) return frame_error(PZ_FRAME_PAYLOAD, "sample id %u is not below the receiver's %u samples", id, c->max_samples);
        void *r;
        PZ_TRY(store_row(&c->store, id, &r));
        float *m = x + b * row;
        if (h->wrapper == WRAP_AQSGD_WARMUP) memcpy(m, d + b * row, sizeof(float) * (size_t)row);
        else {
            store_get(&c->store, r, m);
            for (int64_t i = 0; i < row; i++) m[i] += d[b * row + i];
        }
        store_put(&c->store, r, m);
        store_get(&c->store, r, m);
    }
    return PZ_OK;
}

static const wrapper_kind wrap_aqsgd = {
    .name = "aqsgd", .wire_id = WRAP_AQSGD, .usage = "aqsgd(BASE)[,store=fp32|fp16][,mmap=DIR]",
    .help = "AQ-SGD: per-sample buffers m(xi) kept identically by both ends, send C(x - m(xi)); a warm-up mode sends x uncompressed "
            "(+ 4-byte sample ids); give it a base with an exact zero (qB:sym, topk): min-max qB has none and diverges",
    .receiver_state = 1, .option = aqsgd_option, .canonical = aqsgd_canonical, .needs_ids = yes_ids, .prepare = aqsgd_prepare,
    .update = aqsgd_update, .receive = aqsgd_receive,
};

const wrapper_kind *const codec_wrappers[] = {&wrap_ef, &wrap_ef21, &wrap_aqsgd};
const int codec_wrapper_count = 3;

const wrapper_kind *wrapper_by_wire(int wire) {
    if (wire == WRAP_AQSGD_WARMUP) return &wrap_aqsgd;
    for (int i = 0; i < codec_wrapper_count; i++)
        if (codec_wrappers[i]->wire_id == wire) return codec_wrappers[i];
    return NULL;
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
    const size_t fs = c->fstate.len; /* the family's own state (codec_state), as its bytes */
    const size_t n = 4 + spec_len + 4 + 4 + 8 + 8 + 4 + 8 + 4 * (size_t)(c->state ? c->state_n : 0) + 4 + 8 + 4 + 8 + (size_t)rows * (1 + rb) +
                     fs;
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
    if (fs) memcpy(p, c->fstate.b, fs), p += fs; /* last, only when there is one: older blobs end before it */
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
        float *s = pz_floats_try((size_t)sn);
        if (!s) return pz_fail(PZ_ERR_NOMEM, "out of memory for a codec state of %lld floats", (long long)sn);
        free(c->state);
        c->state = s;
        c->state_n = sn;
        memcpy(c->state, p, 4 * (size_t)sn), p += 4 * (size_t)sn;
    }
    GET(ready); GET(row); GET(fp16); GET(rows);
#undef GET
    if (ready) {
        if (row < 1 || rows < 0) return pz_fail(PZ_ERR_FORMAT, "codec state: bad per-sample store shape");
        if (c->store_ready) store_free(&c->store), c->store_ready = 0;
        if (!!fp16 != !!c->d.store_fp16) return pz_fail(PZ_ERR_FORMAT, "codec state: rows stored as %s, the codec keeps %s", fp16 ? "fp16" : "fp32", c->d.store_fp16 ? "fp16" : "fp32");
        PZ_TRY(codec_ensure_store(c, row));
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
    if (p != end) { /* the family's own state */
        const codec_family *f = c->d.p.fam;
        const size_t fs = (size_t)(end - p);
        if (!f->state_check) return pz_fail(PZ_ERR_FORMAT, "codec state: %zu bytes left over", fs);
        PZ_TRY(f->state_check(p, fs));
        if (!codec_state_reserve(&c->fstate, fs)) return pz_fail(PZ_ERR_NOMEM, "out of memory for a %zu-byte codec state", fs);
        memcpy(c->fstate.b, p, fs), c->fstate.len = fs;
    }
    c->seed = seed, c->counter = counter, c->warmup = warm;
    return PZ_OK;
short_blob:
    return pz_fail(PZ_ERR_FORMAT, "codec state is truncated");
}
