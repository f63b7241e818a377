/* SPDX-License-Identifier: MIT */
/* text.c — text corpora for language models: a file's bytes as tokens
 * (vocabulary 256) or BPE tokens (bpe.c), the first 90% for training and
 * the last 10% held out, each cut into samples of T tokens at stride T whose targets are the next
 * T tokens. Sample i of a split is always the same text, so its id is
 * stable (AQ-SGD keys its buffers by it). The default corpus, the King
 * James Bible, is extracted once from Debian's bible-kjv into a cache. */
#include "data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define KJV_COMMAND "/usr/bin/bible -l10000 Gen1:1-Rev22:21 2>/dev/null"

static int exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

pz_status pz_kjv_path(char *path, size_t cap, const char *dir) {
    if (!dir) dir = pz_default_data_dir("kjv");
    if ((size_t)snprintf(path, cap, "%s/kjv.txt", dir) >= cap) return pz_fail(PZ_ERR_ARG, "data directory path too long");
    if (exists(path)) return PZ_OK;
    if (!exists("/usr/bin/bible") || !exists("/usr/lib/bible.data"))
        return pz_fail(PZ_ERR_IO,
                       "the King James Bible corpus (%s) is not there and cannot be extracted: it needs Debian's "
                       "bible-kjv and bible-kjv-text packages (apt-get install bible-kjv bible-kjv-text; scripts/setup.sh "
                       "installs them), or give any UTF-8 text with --data text:FILE",
                       path);
    /* extract once: the whole text, one verse per line, into the cache */
    FILE *p = popen(KJV_COMMAND, "r");
    if (!p) return pz_fail(PZ_ERR_IO, "cannot run %s", KJV_COMMAND);
    size_t len = 0, cap2 = 1 << 22;
    char *buf = malloc(cap2);
    size_t got;
    while (buf && (got = fread(buf + len, 1, cap2 - len, p)) > 0) {
        len += got;
        if (len == cap2) {
            char *nb = realloc(buf, cap2 *= 2);
            if (!nb) free(buf);
            buf = nb;
        }
    }
    const int rc = pclose(p);
    if (!buf) return pz_fail(PZ_ERR_NOMEM, "out of memory extracting the King James Bible");
    if (rc != 0 || len < (1 << 20)) {
        free(buf);
        return pz_fail(PZ_ERR_IO, "extracting the King James Bible with `%s` failed (exit %d, %zu bytes)", KJV_COMMAND, rc, len);
    }
    pz_status st = pz_mkdir_p(dir);
    if (!st) st = pz_write_file_atomic(path, buf, len);
    free(buf);
    return st ? pz_fail(st, "cannot cache the King James Bible in %s: %s", path, pz_last_error()) : PZ_OK;
}

/* samples of T tokens at stride T over the tokens of bytes [from, to) */
static pz_status split(pz_dataset *d, const uint8_t *text, size_t from, size_t to, int T, const pz_tokenizer *tok,
                       const char *name, const char *part) {
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "%s:%s", name, part);
    int32_t *ids = malloc(sizeof *ids * (to - from + 1));
    if (!ids) return pz_fail(PZ_ERR_NOMEM, "out of memory for the %s split's tokens", part);
    size_t n_tok = to - from;
    if (tok) n_tok = pz_tokenizer_encode(tok, text + from, to - from, ids);
    else
        for (size_t i = 0; i < n_tok; i++) ids[i] = text[from + i];
    d->c = 1, d->h = 1, d->w = T;
    d->tokens = T;
    d->n_classes = tok ? tok->vocab : 256;
    d->bytes_per_token = n_tok ? (double)(to - from) / (double)n_tok : 1.0;
    d->n = n_tok > (size_t)T ? (int64_t)((n_tok - 1) / (size_t)T) : 0;
    if (d->n < 1) {
        free(ids);
        return pz_fail(PZ_ERR_FORMAT, "%s: the %s split (%zu bytes, %zu tokens) holds no sequence of %d tokens", name, part,
                       to - from, n_tok, T);
    }
    d->x = pz_floats_try((size_t)d->n * T);
    d->y = malloc(sizeof(int32_t) * (size_t)d->n * T);
    if (!d->x || !d->y) {
        free(ids);
        pz_dataset_free(d);
        return pz_fail(PZ_ERR_NOMEM, "out of memory for %lld sequences of %d tokens", (long long)d->n, T);
    }
    for (int64_t i = 0; i < d->n; i++)
        for (int t = 0; t < T; t++) {
            const size_t at = (size_t)i * T + t;
            d->x[i * T + t] = (float)ids[at]; /* ids < 65536: exact in a float */
            d->y[i * T + t] = ids[at + 1];
        }
    free(ids);
    return PZ_OK;
}

pz_status pz_load_text(pz_dataset *train, pz_dataset *test, const char *path, const char *name, int T, pz_tokenizer *tok) {
    if (T < 1) return pz_fail(PZ_ERR_ARG, "sequences of %d tokens", T);
    uint8_t *text;
    size_t len;
    PZ_TRY(pz_read_file(path, &text, &len));
    /* the held-out tenth: the end of the text (for the Bible, Revelation
     * and the late epistles), fixed whatever the seed */
    const size_t cut = len - len / 10;
    pz_status st = PZ_OK;
    if (tok && !tok->ready) {
        const int vocab = tok->vocab;
        st = pz_bpe_learn(tok, text, cut, vocab);
    }
    if (!st) st = split(train, text, 0, cut, T, tok, name, "train");
    if (!st) st = split(test, text, cut, len, T, tok, name, "val");
    free(text);
    if (st) pz_dataset_free(train), pz_dataset_free(test);
    return st;
}
