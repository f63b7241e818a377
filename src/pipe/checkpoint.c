/* SPDX-License-Identifier: MIT */
/* checkpoint.c — a stage's state in one file, written atomically (write,
 * fsync, rename): its parameters, the model's running statistics, the
 * optimizer's moments and step count, and its codecs' states.
 *
 * Little-endian (docs/PROTOCOL.md, "The checkpoint blob"):
 * [8 "PZCKPT03"][i32 stage][i64 p0][i64 p1][i64 n_buffers][i32 opt kind][i64 opt t]
 * [(p1-p0) f32 params][n_buffers f32][(p1-p0) f32 m][(p1-p0) f32 v or none]
 * [i32 n_codecs] n_codecs x ([u64 len][len bytes]) [i64 n_stash][n_stash f32 stash]
 * [u32 CRC-32C of every byte before it]
 * The stash (n_stash = p1 - p0, else 0) is the asynchronous schedule's
 * version of the parameters before the newest (async.c). A damaged blob is
 * refused. "PZCKPT02" blobs (no stash) and "PZCKPT01" blobs (no CRC either)
 * still load. */
#include "pipe.h"
#include "base/wire.h"

#include <stdlib.h>
#include <string.h>

/* the fixed head: magic, stage, p0, p1, n_buffers, optimizer kind, optimizer step */
enum { CKPT_HEAD = 8 + 4 + 8 + 8 + 8 + 4 + 8 };

static const char magic[8] = {'P', 'Z', 'C', 'K', 'P', 'T', '0', '3'};
static const char magic_v2[8] = {'P', 'Z', 'C', 'K', 'P', 'T', '0', '2'}; /* no stash */
static const char magic_v1[8] = {'P', 'Z', 'C', 'K', 'P', 'T', '0', '1'}; /* no CRC */

/* A checkpoint blob of any version, the CRC checked from version 2 on;
 * *body_len the bytes before the CRC (all of a version-1 blob), *version
 * 1, 2 or 3. */
static pz_status check_blob_v(const uint8_t *data, size_t len, const char *path, size_t *body_len, int *version) {
    *body_len = len, *version = 1;
    if (len >= 8 && !memcmp(data, magic_v1, 8)) return PZ_OK;
    *version = len >= 8 && !memcmp(data, magic_v2, 8) ? 2 : 3;
    if (len < 12 || (*version == 3 && memcmp(data, magic, 8))) return pz_fail(PZ_ERR_FORMAT, "'%s' is not a pipezip checkpoint", path);
    const uint32_t want = (uint32_t)pz_get_i32(data + len - 4), got = pz_crc32c(data, len - 4);
    if (want != got)
        return pz_fail(PZ_ERR_FORMAT, "'%s' is damaged: its CRC-32C is %08x, the bytes give %08x (a truncated or corrupted file)",
                       path, want, got);
    *body_len = len - 4;
    return PZ_OK;
}

static pz_status check_blob(const uint8_t *data, size_t len, const char *path, size_t *body_len) {
    int version;
    return check_blob_v(data, len, path, body_len, &version);
}

/* A growing little-endian byte buffer; `failed` once an allocation failed. */
typedef struct {
    uint8_t *b;
    size_t len, cap;
    int failed;
} wbuf;

static uint8_t *room(wbuf *w, size_t n) {
    if (w->failed) return NULL;
    if (w->len + n > w->cap) {
        size_t c = w->cap ? w->cap : 4096;
        while (c < w->len + n) c *= 2;
        uint8_t *b = realloc(w->b, c);
        if (!b) {
            w->failed = 1;
            return NULL;
        }
        w->b = b, w->cap = c;
    }
    uint8_t *at = w->b + w->len;
    w->len += n;
    return at;
}
static void put_bytes(wbuf *w, const void *p, size_t n) { uint8_t *at = room(w, n); if (at && n) memcpy(at, p, n); }
static void put_i32(wbuf *w, int32_t v) { uint8_t *at = room(w, 4); if (at) pz_put_i32(at, v); }
static void put_i64(wbuf *w, int64_t v) { uint8_t *at = room(w, 8); if (at) pz_put_i64(at, v); }
static void put_f32s(wbuf *w, const float *v, size_t n) { uint8_t *at = room(w, 4 * n); if (at) pz_put_words(at, v, n); }

pz_status pz_checkpoint_pack(uint8_t **out, size_t *out_len, int stage, const pz_model *m, int64_t p0, int64_t p1,
                             const pz_ckpt_params *v, const pz_optim *opt, pz_codec *const *codecs, int n_codecs) {
    wbuf w = {0};
    const int64_t n = p1 - p0;
    put_bytes(&w, magic, 8), put_i32(&w, stage), put_i64(&w, p0), put_i64(&w, p1), put_i64(&w, m->n_buffers);
    put_i32(&w, (int32_t)opt->kind), put_i64(&w, opt->t);
    put_f32s(&w, v && v->params ? v->params : m->params + p0, (size_t)n);
    put_f32s(&w, m->buffers, (size_t)m->n_buffers);
    const int has_m = opt->m != NULL, has_v = opt->v != NULL;
    put_i32(&w, has_m | has_v << 1);
    if (has_m) put_f32s(&w, opt->m, (size_t)n);
    if (has_v) put_f32s(&w, opt->v, (size_t)n);
    put_i32(&w, n_codecs);
    pz_status s = PZ_OK;
    for (int i = 0; i < n_codecs && !s; i++) {
        uint8_t *blob = NULL;
        size_t len = 0;
        if (codecs[i] && (s = pz_codec_state_save(codecs[i], &blob, &len))) break;
        put_i64(&w, (int64_t)len), put_bytes(&w, blob, len);
        free(blob);
    }
    const int stash = v && v->stash;
    put_i64(&w, stash ? n : 0);
    if (stash) put_f32s(&w, v->stash, (size_t)n);
    if (!s && !w.failed) {
        const uint32_t crc = pz_crc32c(w.b, w.len);
        put_i32(&w, (int32_t)crc);
    }
    if (!s && w.failed) s = pz_fail(PZ_ERR_NOMEM, "out of memory packing stage %d's state", stage);
    if (s) {
        free(w.b);
        return s;
    }
    *out = w.b, *out_len = w.len;
    return PZ_OK;
}

pz_status pz_checkpoint_write(const char *path, int stage, const pz_model *m, int64_t p0, int64_t p1,
                              const pz_ckpt_params *v, const pz_optim *opt, pz_codec *const *codecs, int n_codecs) {
    uint8_t *b;
    size_t n;
    PZ_TRY(pz_checkpoint_pack(&b, &n, stage, m, p0, p1, v, opt, codecs, n_codecs));
    const pz_status s = pz_write_file_atomic(path, b, n);
    free(b);
    return s;
}

pz_status pz_checkpoint_read(const char *path, int stage, pz_model *m, int64_t p0, int64_t p1, const pz_ckpt_params *v,
                             pz_optim *opt, pz_codec **codecs, int n_codecs) {
    uint8_t *data;
    size_t len;
    PZ_TRY(pz_read_file(path, &data, &len));
    const pz_status s = pz_checkpoint_unpack(data, len, path, stage, m, p0, p1, v, opt, codecs, n_codecs);
    free(data);
    return s;
}

pz_status pz_checkpoint_unpack(const uint8_t *data, size_t len, const char *path, int stage, pz_model *m, int64_t p0,
                               int64_t p1, const pz_ckpt_params *v, pz_optim *opt, pz_codec **codecs, int n_codecs) {
    size_t body;
    int version;
    PZ_TRY(check_blob_v(data, len, path, &body, &version));
    const uint8_t *p = data, *end = data + body;
    pz_status s = PZ_OK;
#define NEED(n) do { if ((size_t)(end - p) < (size_t)(n)) goto truncated; } while (0)
#define GET32(dst) do { NEED(4); (dst) = pz_get_i32(p); p += 4; } while (0)
#define GET64(dst) do { NEED(8); (dst) = pz_get_i64(p); p += 8; } while (0)
#define GETF(dst, n) do { NEED(4 * (size_t)(n)); pz_get_words((dst), p, (size_t)(n)); p += 4 * (size_t)(n); } while (0)
    int32_t st, kind, flags, nc;
    int64_t a0, a1, nb, t;
    NEED(8);
    p += 8;
    GET32(st); GET64(a0); GET64(a1); GET64(nb); GET32(kind); GET64(t);
    if (st != stage || a0 != p0 || a1 != p1 || nb != m->n_buffers || kind != (int32_t)opt->kind) {
        s = pz_fail(PZ_ERR_ARG, "'%s' holds stage %d with parameters [%lld, %lld) (%s); this run's stage %d has [%lld, %lld) (%s): "
                    "resume with the same model, cuts and optimizer",
                    path, st, (long long)a0, (long long)a1, pz_name_of(pz_optimizers, kind), stage, (long long)p0, (long long)p1,
                    pz_name_of(pz_optimizers, opt->kind));
        goto done;
    }
    const size_t n = (size_t)(p1 - p0);
    GETF(v && v->params ? v->params : m->params + p0, n);
    GETF(m->buffers, nb);
    GET32(flags);
    if (flags & ~3) {
        s = pz_fail(PZ_ERR_FORMAT, "'%s': unknown optimizer flags %d", path, flags);
        goto done;
    }
    opt->t = t;
    if (flags & 1) {
        if (!opt->m && !(opt->m = pz_floats_try(n))) goto nomem;
        GETF(opt->m, n);
    }
    if (flags & 2) {
        if (!opt->v && !(opt->v = pz_floats_try(n))) goto nomem;
        GETF(opt->v, n);
    }
    GET32(nc);
    if (nc != n_codecs) {
        s = pz_fail(PZ_ERR_ARG, "'%s' holds %d codec states, this stage has %d", path, nc, n_codecs);
        goto done;
    }
    for (int i = 0; i < n_codecs; i++) {
        int64_t l;
        GET64(l);
        const uint64_t l64 = (uint64_t)l;
        if (l64 > (uint64_t)(end - p)) goto truncated;
        if (!codecs[i] != !l64) {
            s = pz_fail(PZ_ERR_ARG, "'%s': codec %d %s in the checkpoint but %s in this run", path, i, l64 ? "present" : "absent",
                        codecs[i] ? "present" : "absent");
            goto done;
        }
        if (codecs[i] && (s = pz_codec_state_load(codecs[i], p, (size_t)l64))) {
            s = pz_fail(s, "'%s': %s", path, pz_last_error());
            goto done;
        }
        p += l64;
    }
    int64_t ns = 0;
    if (version >= 3) GET64(ns);
    if (ns != 0 && ns != (int64_t)n) {
        s = pz_fail(PZ_ERR_FORMAT, "'%s' holds a stash of %lld parameters, its stage %lld", path, (long long)ns, (long long)n);
        goto done;
    }
    if (v && v->stash && !ns) {
        s = pz_fail(PZ_ERR_ARG, "'%s' holds no second version of the parameters (it was saved by a schedule that flushes every "
                    "step): resume it with that schedule (--pipe-schedule)", path);
        goto done;
    }
    if (ns) {
        NEED(4 * n);
        if (v && v->stash) pz_get_words(v->stash, p, n);
        p += 4 * n;
    }
    if (p != end) s = pz_fail(PZ_ERR_FORMAT, "'%s' has %zu bytes after its end", path, (size_t)(end - p));
    goto done;
truncated:
    s = pz_fail(PZ_ERR_FORMAT, "'%s' is truncated", path);
    goto done;
nomem:
    s = pz_fail(PZ_ERR_NOMEM, "out of memory loading '%s'", path);
done:
#undef NEED
#undef GET32
#undef GET64
#undef GETF
    return s;
}

pz_status pz_checkpoint_codec_spec(const uint8_t *data, size_t len, const char *path, int i, char *spec, size_t cap) {
    size_t body;
    spec[0] = 0;
    PZ_TRY(check_blob(data, len, path, &body));
    const uint8_t *p = data, *end = data + body;
    const size_t head = CKPT_HEAD;
    if (body < head + 4) return pz_fail(PZ_ERR_FORMAT, "'%s' is truncated", path);
    const int64_t a0 = pz_get_i64(p + 12), a1 = pz_get_i64(p + 20), nb = pz_get_i64(p + 28);
    if (a0 < 0 || a1 < a0 || nb < 0 || (uint64_t)(a1 - a0) > body / 4 || (uint64_t)nb > body / 4)
        return pz_fail(PZ_ERR_FORMAT, "'%s' holds parameters [%lld, %lld): not a checkpoint", path, (long long)a0, (long long)a1);
    const uint64_t n = (uint64_t)(a1 - a0);
    p += head;
    if ((uint64_t)(end - p) < 4 * (n + (uint64_t)nb) + 4) return pz_fail(PZ_ERR_FORMAT, "'%s' is truncated", path);
    p += 4 * (n + (uint64_t)nb);
    const int32_t flags = pz_get_i32(p);
    p += 4;
    const uint64_t moments = 4 * n * (uint64_t)(((flags & 1) != 0) + ((flags & 2) != 0));
    if ((uint64_t)(end - p) < moments + 4) return pz_fail(PZ_ERR_FORMAT, "'%s' is truncated", path);
    p += moments;
    const int32_t nc = pz_get_i32(p);
    p += 4;
    if (i < 0 || i >= nc) return pz_fail(PZ_ERR_FORMAT, "'%s' holds %d codec states, not a codec %d", path, nc, i);
    for (int k = 0;; k++) {
        if (end - p < 8) return pz_fail(PZ_ERR_FORMAT, "'%s' is truncated", path);
        const uint64_t l = (uint64_t)pz_get_i64(p);
        p += 8;
        if (l > (uint64_t)(end - p)) return pz_fail(PZ_ERR_FORMAT, "'%s' is truncated", path);
        if (k < i) {
            p += l;
            continue;
        }
        /* a codec state: [u32 magic][u32 version][u32 spec length][spec] (wrappers.c) */
        if (l == 0) return PZ_OK; /* no codec there */
        if (l < 12) return pz_fail(PZ_ERR_FORMAT, "'%s': codec %d's state is truncated", path, i);
        uint32_t sl;
        memcpy(&sl, p + 8, 4);
        if (sl > l - 12 || sl >= cap) return pz_fail(PZ_ERR_FORMAT, "'%s': codec %d's state names a spec of %u bytes", path, i, sl);
        memcpy(spec, p + 12, sl), spec[sl] = 0;
        return PZ_OK;
    }
}

pz_status pz_checkpoint_read_params(const char *path, pz_model *m, int64_t *p0, int64_t *p1) {
    uint8_t *data;
    size_t len;
    PZ_TRY(pz_read_file(path, &data, &len));
    size_t body;
    pz_status s = check_blob(data, len, path, &body);
    if (s) goto done;
    len = body;
    const size_t head = CKPT_HEAD;
    if (len < head) {
        s = pz_fail(PZ_ERR_FORMAT, "'%s' is truncated", path);
        goto done;
    }
    const int64_t a0 = pz_get_i64(data + 12), a1 = pz_get_i64(data + 20), nb = pz_get_i64(data + 28);
    if (a0 < 0 || a1 < a0 || a1 > m->n_params || nb != m->n_buffers) {
        s = pz_fail(PZ_ERR_ARG, "'%s' holds parameters [%lld, %lld) and %lld running statistics; model '%s' has %lld and %lld",
                    path, (long long)a0, (long long)a1, (long long)nb, m->preset, (long long)m->n_params,
                    (long long)m->n_buffers);
        goto done;
    }
    const size_t n = (size_t)(a1 - a0);
    if ((len - head) / 4 < n + (size_t)nb) {
        s = pz_fail(PZ_ERR_FORMAT, "'%s' is truncated", path);
        goto done;
    }
    pz_get_words(m->params + a0, data + head, n);
    /* running statistics: each stage keeps its own layers' up to date, so
     * only a whole model's file holds them all */
    if (a0 == 0 && a1 == m->n_params) pz_get_words(m->buffers, data + head + 4 * n, (size_t)nb);
    *p0 = a0, *p1 = a1;
done:
    free(data);
    return s;
}
