/* checkpoint.c — a stage's state in one file, written atomically (write,
 * fsync, rename): its parameters, the model's running statistics, the
 * optimizer's moments and step count, and its codecs' states.
 *
 * [8 "PZCKPT01"][i32 stage][i64 p0][i64 p1][i64 n_buffers][i32 opt kind][i64 opt t]
 * [(p1-p0) f32 params][n_buffers f32][(p1-p0) f32 m][(p1-p0) f32 v or none]
 * [i32 n_codecs] n_codecs x ([u64 len][len bytes]) */
#include "pipe.h"

#include <stdlib.h>
#include <string.h>

static const char magic[8] = {'P', 'Z', 'C', 'K', 'P', 'T', '0', '1'};

typedef struct {
    uint8_t *b;
    size_t len, cap;
} wbuf;

static void put(wbuf *w, const void *p, size_t n) {
    if (w->len + n > w->cap) {
        size_t c = w->cap ? w->cap : 4096;
        while (c < w->len + n) c *= 2;
        w->b = realloc(w->b, c);
        if (!w->b) abort();
        w->cap = c;
    }
    if (n) memcpy(w->b + w->len, p, n);
    w->len += n;
}

pz_status pz_checkpoint_pack(uint8_t **out, size_t *out_len, int stage, const pz_model *m, int64_t p0, int64_t p1,
                             const pz_optim *opt, pz_codec *const *codecs, int n_codecs) {
    wbuf w = {0};
    const int32_t st = stage, kind = opt->kind;
    const int64_t n = p1 - p0, nb = m->n_buffers;
    put(&w, magic, 8), put(&w, &st, 4), put(&w, &p0, 8), put(&w, &p1, 8), put(&w, &nb, 8), put(&w, &kind, 4);
    put(&w, &opt->t, 8);
    put(&w, m->params + p0, 4 * (size_t)n);
    put(&w, m->buffers, 4 * (size_t)nb);
    const int has_m = opt->m != NULL, has_v = opt->v != NULL;
    const int32_t flags = has_m | has_v << 1;
    put(&w, &flags, 4);
    if (has_m) put(&w, opt->m, 4 * (size_t)n);
    if (has_v) put(&w, opt->v, 4 * (size_t)n);
    const int32_t nc = n_codecs;
    put(&w, &nc, 4);
    pz_status s = PZ_OK;
    for (int i = 0; i < n_codecs && !s; i++) {
        uint8_t *blob = NULL;
        size_t len = 0;
        if (codecs[i] && (s = pz_codec_state_save(codecs[i], &blob, &len))) break;
        const uint64_t l64 = len;
        put(&w, &l64, 8), put(&w, blob, len);
        free(blob);
    }
    if (s) {
        free(w.b);
        return s;
    }
    *out = w.b, *out_len = w.len;
    return PZ_OK;
}

pz_status pz_checkpoint_write(const char *path, int stage, const pz_model *m, int64_t p0, int64_t p1,
                              const pz_optim *opt, pz_codec *const *codecs, int n_codecs) {
    uint8_t *b;
    size_t n;
    PZ_TRY(pz_checkpoint_pack(&b, &n, stage, m, p0, p1, opt, codecs, n_codecs));
    const pz_status s = pz_write_file_atomic(path, b, n);
    free(b);
    return s;
}

pz_status pz_checkpoint_read(const char *path, int stage, pz_model *m, int64_t p0, int64_t p1, pz_optim *opt,
                             pz_codec **codecs, int n_codecs) {
    uint8_t *data;
    size_t len;
    PZ_TRY(pz_read_file(path, &data, &len));
    const pz_status s = pz_checkpoint_unpack(data, len, path, stage, m, p0, p1, opt, codecs, n_codecs);
    free(data);
    return s;
}

pz_status pz_checkpoint_unpack(const uint8_t *data, size_t len, const char *path, int stage, pz_model *m, int64_t p0,
                               int64_t p1, pz_optim *opt, pz_codec **codecs, int n_codecs) {
    const uint8_t *p = data, *end = data + len;
    pz_status s = PZ_OK;
#define GET(dst, n) do { if ((size_t)(end - p) < (size_t)(n)) goto truncated; memcpy((dst), p, (n)); p += (n); } while (0)
    char mg[8];
    int32_t st, kind, flags, nc;
    int64_t a0, a1, nb, t;
    GET(mg, 8);
    if (memcmp(mg, magic, 8)) {
        s = pz_fail(PZ_ERR_FORMAT, "'%s' is not a pipezip checkpoint", path);
        goto done;
    }
    GET(&st, 4); GET(&a0, 8); GET(&a1, 8); GET(&nb, 8); GET(&kind, 4); GET(&t, 8);
    if (st != stage || a0 != p0 || a1 != p1 || nb != m->n_buffers || kind != (int32_t)opt->kind) {
        s = pz_fail(PZ_ERR_ARG, "'%s' holds stage %d with parameters [%lld, %lld) (%s); this run's stage %d has [%lld, %lld) (%s): "
                    "resume with the same model, cuts and optimizer",
                    path, st, (long long)a0, (long long)a1, kind ? "adamw" : "sgd", stage, (long long)p0, (long long)p1,
                    opt->kind ? "adamw" : "sgd");
        goto done;
    }
    const size_t n = (size_t)(p1 - p0);
    GET(m->params + p0, 4 * n);
    GET(m->buffers, 4 * (size_t)nb);
    GET(&flags, 4);
    opt->t = t;
    if (flags & 1) {
        if (!opt->m) opt->m = pz_floats(n);
        GET(opt->m, 4 * n);
    }
    if (flags & 2) {
        if (!opt->v) opt->v = pz_floats(n);
        GET(opt->v, 4 * n);
    }
    GET(&nc, 4);
    if (nc != n_codecs) {
        s = pz_fail(PZ_ERR_ARG, "'%s' holds %d codec states, this stage has %d", path, nc, n_codecs);
        goto done;
    }
    for (int i = 0; i < n_codecs; i++) {
        uint64_t l64;
        GET(&l64, 8);
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
    if (p != end) s = pz_fail(PZ_ERR_FORMAT, "'%s' has %zu bytes after its end", path, (size_t)(end - p));
    goto done;
truncated:
    s = pz_fail(PZ_ERR_FORMAT, "'%s' is truncated", path);
done:
#undef GET
    return s;
}
