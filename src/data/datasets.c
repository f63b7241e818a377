/* SPDX-License-Identifier: MIT */
/* datasets.c — loading MNIST-style idx files, CIFAR-10 binary batches and
 * the synthetic dataset; normalisation. Every malformed file is an error
 * that names the file and what is wrong with it. */
#include "data.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static uint32_t be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

/* Parse an idx header from its first len bytes; *dims gets ndim sizes,
 * *offset the payload's start, *total its size. */
static pz_status idx_sizes(const char *path, const uint8_t *b, size_t len, int want_ndim, uint32_t *dims, size_t *offset,
                           uint64_t *total_out) {
    if (len < 4 || b[0] != 0 || b[1] != 0)
        return pz_fail(PZ_ERR_FORMAT, "'%s' is not an idx file (bad magic number)", path);
    if (b[2] != 0x08)
        return pz_fail(PZ_ERR_FORMAT, "'%s': idx element type 0x%02x, expected unsigned bytes (0x08)", path, b[2]);
    if (b[3] != want_ndim)
        return pz_fail(PZ_ERR_FORMAT, "'%s' has %d dimensions, expected %d", path, b[3], want_ndim);
    size_t off = 4 + 4 * (size_t)want_ndim;
    if (len < off) return pz_fail(PZ_ERR_FORMAT, "'%s' is truncated inside its header", path);
    uint64_t total = 1;
    for (int i = 0; i < want_ndim; i++) {
        dims[i] = be32(b + 4 + 4 * i);
        if (dims[i] == 0 || dims[i] > (1u << 28))
            return pz_fail(PZ_ERR_FORMAT, "'%s': dimension %d has size %u", path, i, dims[i]);
        total *= dims[i];
        if (total > ((uint64_t)1 << 36)) return pz_fail(PZ_ERR_FORMAT, "'%s': sizes are implausibly large", path);
    }
    *offset = off, *total_out = total;
    return PZ_OK;
}

/* ... and its payload, which must be exactly what the header says */
static pz_status idx_header(const char *path, const uint8_t *b, size_t len, int want_ndim, uint32_t *dims, size_t *offset) {
    uint64_t total = 0;
    PZ_TRY(idx_sizes(path, b, len, want_ndim, dims, offset, &total));
    if (len - *offset != total)
        return pz_fail(PZ_ERR_FORMAT, "'%s' holds %zu bytes of data, its header says %llu", path, len - *offset,
                       (unsigned long long)total);
    return PZ_OK;
}

/* An idx file whose header is checked before its bulk is decompressed:
 * never more than the header's size (+1) is read. */
static pz_status read_idx(const char *path, int ndim, uint8_t **b, size_t *len, uint32_t *dims, size_t *off) {
    uint8_t head[16];
    size_t got, hl = 0;
    uint64_t total = 0;
    PZ_TRY(pz_read_head(path, head, sizeof head, &got));
    PZ_TRY(idx_sizes(path, head, got, ndim, dims, &hl, &total));
    PZ_TRY(pz_read_file_max(path, hl + (size_t)total, b, len));
    const pz_status st = idx_header(path, *b, *len, ndim, dims, off);
    if (st) free(*b), *b = NULL;
    return st;
}

pz_status pz_load_idx(pz_dataset *d, const char *images_path, const char *labels_path, const char *name) {
    memset(d, 0, sizeof *d);
    uint8_t *img = NULL, *lab = NULL;
    size_t ni, nl, oi, ol;
    uint32_t di[3], dl[1];
    pz_status st = read_idx(images_path, 3, &img, &ni, di, &oi);
    if (!st) st = read_idx(labels_path, 1, &lab, &nl, dl, &ol);
    if (!st && di[0] != dl[0])
        st = pz_fail(PZ_ERR_FORMAT, "'%s' has %u images but '%s' has %u labels", images_path, di[0], labels_path, dl[0]);
    if (!st) {
        snprintf(d->name, sizeof d->name, "%s", name);
        d->n = di[0], d->c = 1, d->h = (int)di[1], d->w = (int)di[2], d->n_classes = 10;
        const size_t per = (size_t)d->h * d->w;
        d->x = pz_floats_try((size_t)d->n * per);
        d->y = calloc((size_t)d->n ? (size_t)d->n : 1, sizeof(int32_t));
        if (!d->x || !d->y) st = pz_fail(PZ_ERR_NOMEM, "out of memory for the %lld images of '%s'", (long long)d->n, images_path);
    }
    if (!st) {
        const size_t per = (size_t)d->h * d->w;
        for (size_t i = 0; i < (size_t)d->n * per; i++) d->x[i] = img[oi + i] * (1.0f / 255.0f);
        for (int64_t i = 0; i < d->n && !st; i++) {
            d->y[i] = lab[ol + i];
            if (d->y[i] >= d->n_classes)
                st = pz_fail(PZ_ERR_FORMAT, "'%s': label %d of example %lld is not in 0..9", labels_path, d->y[i], (long long)i);
        }
    }
    free(img);
    free(lab);
    if (st) pz_dataset_free(d);
    return st;
}

/* path of dir/base or dir/base.gz, whichever exists */
static pz_status find_file(char *out, size_t cap, const char *dir, const char *base) {
    struct stat sb;
    snprintf(out, cap, "%s/%s.gz", dir, base);
    if (stat(out, &sb) == 0) return PZ_OK;
    snprintf(out, cap, "%s/%s", dir, base);
    if (stat(out, &sb) == 0) return PZ_OK;
    return pz_fail(PZ_ERR_IO, "dataset file '%s/%s[.gz]' not found", dir, base);
}

pz_status pz_load_idx_dir(pz_dataset *train, pz_dataset *test, const char *dir, const char *name) {
    char a[4096], b[4096], n[80];
    PZ_TRY(find_file(a, sizeof a, dir, "train-images-idx3-ubyte"));
    PZ_TRY(find_file(b, sizeof b, dir, "train-labels-idx1-ubyte"));
    snprintf(n, sizeof n, "%s:train", name);
    PZ_TRY(pz_load_idx(train, a, b, n));
    pz_status st = find_file(a, sizeof a, dir, "t10k-images-idx3-ubyte");
    if (!st) st = find_file(b, sizeof b, dir, "t10k-labels-idx1-ubyte");
    snprintf(n, sizeof n, "%s:test", name);
    if (!st) st = pz_load_idx(test, a, b, n);
    if (!st && (test->h != train->h || test->w != train->w))
        st = pz_fail(PZ_ERR_FORMAT, "'%s': test images are %dx%d but train images are %dx%d", dir, test->h, test->w,
                     train->h, train->w);
    if (st) pz_dataset_free(train), pz_dataset_free(test);
    return st;
}

/* CIFAR-10 binary: records of 1 label byte + 3072 pixel bytes (R, G, B planes of 32x32) */
static pz_status cifar_append(pz_dataset *d, const char *path) {
    uint8_t *buf;
    size_t len;
    const size_t rec = 1 + 3 * 32 * 32;
    PZ_TRY(pz_read_file_max(path, rec * 100000, &buf, &len)); /* a batch holds 10,000 records; more than 100,000 is not CIFAR-10 */
    if (len == 0 || len % rec) {
        free(buf);
        return pz_fail(PZ_ERR_FORMAT, "'%s' is %zu bytes, not a whole number of %zu-byte CIFAR-10 records", path, len, rec);
    }
    const int64_t add = (int64_t)(len / rec), per = 3 * 32 * 32;
    float *nx = realloc(d->x, sizeof(float) * (size_t)(d->n + add) * per);
    int32_t *ny = realloc(d->y, sizeof(int32_t) * (size_t)(d->n + add));
    if (nx) d->x = nx;
    if (ny) d->y = ny;
    if (!nx || !ny) {
        free(buf);
        return pz_fail(PZ_ERR_NOMEM, "out of memory loading '%s'", path);
    }
    for (int64_t i = 0; i < add; i++) {
        const uint8_t *r = buf + i * rec;
        if (r[0] > 9) {
            free(buf);
            return pz_fail(PZ_ERR_FORMAT, "'%s': record %lld has label %d, expected 0..9", path, (long long)i, r[0]);
        }
        d->y[d->n + i] = r[0];
        for (int64_t j = 0; j < per; j++) d->x[(d->n + i) * per + j] = r[1 + j] * (1.0f / 255.0f);
    }
    d->n += add;
    free(buf);
    return PZ_OK;
}

pz_status pz_load_cifar10_dir(pz_dataset *train, pz_dataset *test, const char *dir) {
    memset(train, 0, sizeof *train);
    memset(test, 0, sizeof *test);
    *train = (pz_dataset){.name = "cifar10:train", .c = 3, .h = 32, .w = 32, .n_classes = 10};
    *test = (pz_dataset){.name = "cifar10:test", .c = 3, .h = 32, .w = 32, .n_classes = 10};
    char path[4096];
    pz_status st = PZ_OK;
    for (int i = 1; i <= 5 && !st; i++) {
        char base[32];
        snprintf(base, sizeof base, "data_batch_%d.bin", i);
        st = find_file(path, sizeof path, dir, base);
        if (!st) st = cifar_append(train, path);
    }
    if (!st) st = find_file(path, sizeof path, dir, "test_batch.bin");
    if (!st) st = cifar_append(test, path);
    if (st) pz_dataset_free(train), pz_dataset_free(test);
    return st;
}

/* Each class is a smooth random prototype image; an example is its class's
 * prototype plus Gaussian pixel noise, clipped to [0, 1]. */
pz_status pz_make_synthetic(pz_dataset *train, pz_dataset *test, int64_t n_train, int64_t n_test,
                            int c, int h, int w, int n_classes, uint64_t seed) {
    if (n_train < 1 || n_test < 1 || c < 1 || h < 1 || w < 1 || n_classes < 2)
        return pz_fail(PZ_ERR_ARG, "synthetic dataset: bad sizes");
    pz_rng root;
    pz_rng_seed(&root, seed ^ 0x5EED5EEDull);
    const int64_t per = (int64_t)c * h * w;
    float *proto = pz_floats_try((size_t)(n_classes * per));
    if (!proto) return pz_fail(PZ_ERR_NOMEM, "synthetic dataset: out of memory");
    for (int k = 0; k < n_classes; k++) {
        pz_rng r = pz_rng_split(&root, (uint64_t)k);
        /* a few random Gaussian bumps per channel */
        for (int ch = 0; ch < c; ch++)
            for (int bump = 0; bump < 4; bump++) {
                const float cy = pz_rng_uniform(&r) * h, cx = pz_rng_uniform(&r) * w;
                const float s = 1.5f + pz_rng_uniform(&r) * (float)(h > w ? h : w) / 5.0f;
                for (int y = 0; y < h; y++)
                    for (int x = 0; x < w; x++) {
                        const float d2 = ((y - cy) * (y - cy) + (x - cx) * (x - cx)) / (2 * s * s);
                        proto[k * per + ((int64_t)ch * h + y) * w + x] += expf(-d2);
                    }
            }
    }
    pz_dataset *sets[2] = {train, test};
    const int64_t counts[2] = {n_train, n_test};
    for (int si = 0; si < 2; si++) {
        pz_dataset *d = sets[si];
        memset(d, 0, sizeof *d);
        snprintf(d->name, sizeof d->name, "synthetic:%s", si ? "test" : "train");
        d->n = counts[si], d->c = c, d->h = h, d->w = w, d->n_classes = n_classes;
        d->x = pz_floats_try((size_t)(d->n * per));
        d->y = calloc((size_t)d->n, sizeof(int32_t));
        if (!d->x || !d->y) {
            free(proto);
            pz_dataset_free(train);
            if (si) pz_dataset_free(test);
            else memset(test, 0, sizeof *test);
            return pz_fail(PZ_ERR_NOMEM, "synthetic dataset: out of memory for %lld examples", (long long)counts[si]);
        }
        pz_rng r = pz_rng_split(&root, 1000 + (uint64_t)si);
        for (int64_t i = 0; i < d->n; i++) {
            const int k = (int)pz_rng_below(&r, (uint32_t)n_classes);
            d->y[i] = k;
            for (int64_t j = 0; j < per; j++) {
                float v = 0.5f * proto[k * per + j] + 0.25f * pz_rng_normal(&r);
                d->x[i * per + j] = v < 0 ? 0 : v > 1 ? 1 : v;
            }
        }
    }
    free(proto);
    return PZ_OK;
}

/* Every dataset pipezip knows, with its facts: the one place a dataset's
 * name, shape, classes, size, default augmentation and location are
 * written (crop padding 4 and flips for cifar10, the usual CIFAR recipe;
 * flips only for fashion-mnist: 10-epoch runs measured better without
 * crops, docs/GUIDE.md; nothing for mnist, whose digits are not mirror-symmetric,
 * and synthetic). */
static const pz_data_spec datasets[] = {
    {PZ_DATA_FASHION_MNIST, "fashion-mnist", NULL, 0, 1, 28, 28, 10, 60000, 0, 1, "/usr/share/datasets/fashion-mnist"},
    {PZ_DATA_MNIST, "mnist", NULL, 0, 1, 28, 28, 10, 60000, 0, 0, "/usr/share/datasets/mnist"},
    {PZ_DATA_CIFAR10, "cifar10", NULL, 0, 3, 32, 32, 10, 50000, 4, 1, "data/cifar-10-batches-bin"},
    {PZ_DATA_SYNTHETIC, "synthetic", NULL, 0, 1, 28, 28, 10, 6000, 0, 0, NULL},
    {PZ_DATA_KJV, "kjv", NULL, 1, 0, 0, 0, 0, 65536, 0, 0, "data"},
    {PZ_DATA_TEXT, "text", NULL, 1, 0, 0, 0, 0, 65536, 0, 0, NULL},
};
#define N_DATASETS (int)(sizeof datasets / sizeof *datasets)

const char *pz_data_names(const char *sep, const char *last, char *buf, size_t cap) {
    size_t n = 0;
    if (cap) buf[0] = 0;
    for (int i = 0; i < N_DATASETS && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%s%s", i == 0 ? "" : i == N_DATASETS - 1 ? last : sep, datasets[i].name,
                              datasets[i].kind == PZ_DATA_TEXT ? ":FILE" : "");
    return buf;
}

pz_status pz_data_spec_parse(pz_data_spec *d, const char *name) {
    memset(d, 0, sizeof *d);
    for (int i = 0; name && i < N_DATASETS; i++) {
        const pz_data_spec *t = &datasets[i];
        if (t->kind == PZ_DATA_TEXT ? !strncmp(name, "text:", 5) : !strcmp(name, t->name)) {
            *d = *t;
            if (t->kind == PZ_DATA_TEXT) {
                if (!name[5]) return pz_fail(PZ_ERR_ARG, "--data text:FILE needs a file name");
                d->file = name + 5;
            }
            return PZ_OK;
        }
    }
    char list[160];
    return pz_fail(PZ_ERR_ARG, "--data '%s' (expected %s)", name ? name : "", pz_data_names(", ", " or ", list, sizeof list));
}

const char *pz_default_data_dir(const char *name) {
    pz_data_spec d;
    return pz_data_spec_parse(&d, name) ? NULL : d.default_dir;
}

pz_status pz_data_load(pz_dataset *train, pz_dataset *test, const pz_data_spec *d, const char *dir, uint64_t seed) {
    pz_status st;
    if (!dir) dir = d->default_dir;
    switch (d->kind) {
    case PZ_DATA_FASHION_MNIST:
    case PZ_DATA_MNIST: st = pz_load_idx_dir(train, test, dir, d->name); break;
    case PZ_DATA_CIFAR10: st = pz_load_cifar10_dir(train, test, dir); break;
    case PZ_DATA_SYNTHETIC: st = pz_make_synthetic(train, test, d->train_size, 1000, d->c, d->h, d->w, d->classes, seed); break;
    default: return pz_fail(PZ_ERR_ARG, "'%s' is text: it loads as a corpus of tokens", d->name);
    }
    if (st) return st;
    pz_dataset_normalize(train, test);
    return PZ_OK;
}

pz_status pz_load_dataset(pz_dataset *train, pz_dataset *test, const char *name, const char *dir, uint64_t seed) {
    pz_data_spec d;
    if (pz_data_spec_parse(&d, name) || d.text)
        return pz_fail(PZ_ERR_ARG, "unknown dataset '%s' (expected fashion-mnist, mnist, cifar10 or synthetic)", name);
    return pz_data_load(train, test, &d, dir, seed);
}

int pz_dataset_is_text(const char *name) {
    pz_data_spec d;
    return !pz_data_spec_parse(&d, name) && d.text;
}

pz_status pz_data_load_corpus(pz_dataset *train, pz_dataset *test, const pz_data_spec *d, const char *dir, int T, pz_tokenizer *tok) {
    if (d->kind == PZ_DATA_TEXT) return pz_load_text(train, test, d->file, "text", T, tok);
    if (d->kind != PZ_DATA_KJV) return pz_fail(PZ_ERR_ARG, "'%s' is not a text corpus (expected kjv or text:FILE)", d->name);
    char path[4096];
    PZ_TRY(pz_kjv_path(path, sizeof path, dir));
    return pz_load_text(train, test, path, "kjv", T, tok);
}

pz_status pz_load_corpus(pz_dataset *train, pz_dataset *test, const char *name, const char *dir, int T, pz_tokenizer *tok) {
    if (!strncmp(name, "text:", 5) && !name[5]) return pz_fail(PZ_ERR_ARG, "--data text:FILE needs a file name");
    pz_data_spec d;
    if (pz_data_spec_parse(&d, name) || !d.text)
        return pz_fail(PZ_ERR_ARG, "unknown text corpus '%s' (expected kjv or text:FILE)", name);
    return pz_data_load_corpus(train, test, &d, dir, T, tok);
}

void pz_dataset_truncate(pz_dataset *d, int64_t n) {
    if (n >= 0 && n < d->n) d->n = n;
}

pz_status pz_dataset_shard(pz_dataset *d, int k, int n) {
    if (n < 1 || k < 0 || k >= n) return pz_fail(PZ_ERR_ARG, "shard %d of %d: expected 0 <= K < N", k, n);
    const int64_t from = d->n * k / n, to = d->n * (k + 1) / n;
    if (to <= from) return pz_fail(PZ_ERR_ARG, "shard %d of %d of %lld examples is empty", k, n, (long long)d->n);
    const size_t per = (size_t)d->c * d->h * d->w, ty = (size_t)pz_dataset_targets(d);
    memmove(d->x, d->x + (size_t)from * per, sizeof(float) * per * (size_t)(to - from));
    memmove(d->y, d->y + (size_t)from * ty, sizeof(int32_t) * ty * (size_t)(to - from));
    d->id_base += from;
    d->n = to - from;
    return PZ_OK;
}

void pz_dataset_free(pz_dataset *d) {
    free(d->x);
    free(d->y);
    memset(d, 0, sizeof *d);
}

void pz_dataset_normalize(pz_dataset *train, pz_dataset *test) {
    if (train->tokens) return; /* token ids are not pixels */
    const int64_t hw = (int64_t)train->h * train->w;
    for (int ch = 0; ch < train->c && ch < 4; ch++) {
        double s = 0.0, s2 = 0.0;
        for (int64_t i = 0; i < train->n; i++) {
            const float *p = train->x + (i * train->c + ch) * hw;
            for (int64_t j = 0; j < hw; j++) s += p[j], s2 += (double)p[j] * p[j];
        }
        const double cnt = (double)train->n * hw;
        const double mean = s / cnt, var = s2 / cnt - mean * mean;
        const float m = (float)mean, sd = (float)sqrt(var > 1e-12 ? var : 1e-12);
        pz_dataset *sets[2] = {train, test};
        for (int k = 0; k < 2; k++) {
            pz_dataset *d = sets[k];
            d->mean[ch] = m, d->std[ch] = sd;
            for (int64_t i = 0; i < d->n; i++) {
                float *p = d->x + (i * d->c + ch) * hw;
                for (int64_t j = 0; j < hw; j++) p[j] = (p[j] - m) / sd;
            }
        }
    }
}
