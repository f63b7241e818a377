/* SPDX-License-Identifier: MIT */
/* bpe.c — tokenizers for language models: bytes (vocabulary 256) and
 * byte-level BPE learned from the training split.
 *
 * Byte-level BPE as GPT-2 does it, with a simpler split into chunks that
 * merges never cross: a word of letters (ASCII letters and every byte >=
 * 0x80, so UTF-8 stays whole), a run of digits or a run of other symbols,
 * each with at most one leading space; or a run of whitespace, leaving its
 * last space to the word after it. Chunks are at most 64 bytes (longer runs
 * are cut), so encoding is linear in the text. Learning counts each
 * distinct chunk once with its frequency, then merges the most frequent
 * adjacent pair (ties: the smallest pair of ids) into a new token, N - 256
 * times or until no pair occurs twice; encoding applies the merges to each
 * chunk in the order they were learned. Token 256 + m is merge m. */
#include "data.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_MAX 64
#define VOCAB_MAX 65536

pz_status pz_tokenizer_spec(const char *spec, int *vocab) {
    if (!spec || !*spec || !strcmp(spec, "bytes")) {
        *vocab = 256;
        return PZ_OK;
    }
    if (!strncmp(spec, "bpe:", 4)) {
        char *end;
        errno = 0;
        const long n = strtol(spec + 4, &end, 10);
        if (!errno && end != spec + 4 && !*end && n > 256 && n <= VOCAB_MAX) {
            *vocab = (int)n;
            return PZ_OK;
        }
    }
    return pz_fail(PZ_ERR_ARG, "--tokenizer '%s' (expected bytes or bpe:N, a vocabulary of 257 <= N <= %d tokens)", spec,
                   VOCAB_MAX);
}

/* ---- chunks ------------------------------------------------------------------ */
static int char_class(uint8_t c) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80) return 1;
    if (c >= '0' && c <= '9') return 2;
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') return 0;
    return 3;
}

/* the length of the chunk that starts at s (n >= 1) */
static size_t chunk_len(const uint8_t *s, size_t n) {
    if (n > CHUNK_MAX) n = CHUNK_MAX;
    size_t i = 0;
    int c = char_class(s[0]);
    if (c == 0) {
        if (s[0] == ' ' && n > 1 && char_class(s[1]) != 0) {
            c = char_class(s[1]);
            i = 1;
        } else {
            while (i < n && char_class(s[i]) == 0) i++;
            /* "\n  word": "\n " then " word" */
            if (i > 1 && i < n && s[i - 1] == ' ') i--;
            return i;
        }
    }
    while (i < n && char_class(s[i]) == c) i++;
    return i;
}

/* ---- small open-addressing maps ---------------------------------------------- */
static uint64_t mix64(uint64_t x) {
    x ^= x >> 33, x *= 0xff51afd7ed558ccdULL, x ^= x >> 33, x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}
static uint64_t hash_bytes(const uint8_t *s, size_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ULL;
    return mix64(h ^ n);
}
static uint32_t pair_key(int32_t a, int32_t b) { return (uint32_t)a << 16 | (uint32_t)b; } /* ids < 65536 */

/* pair -> value; key UINT32_MAX + 1 would be (65535, 65535)+1: slots use a flag */
typedef struct {
    uint32_t *key;
    int64_t *val;
    uint8_t *used;
    uint32_t *touched; /* the used slots, to clear them */
    size_t cap, n;
} pair_map;

static pz_status pm_init(pair_map *m, size_t want) {
    m->cap = 1024;
    while (m->cap < 2 * want) m->cap *= 2;
    m->key = malloc(m->cap * sizeof *m->key), m->val = malloc(m->cap * sizeof *m->val);
    m->used = calloc(m->cap, 1), m->touched = malloc(m->cap * sizeof *m->touched);
    m->n = 0;
    if (!m->key || !m->val || !m->used || !m->touched) return pz_fail(PZ_ERR_NOMEM, "out of memory for a tokenizer's table");
    return PZ_OK;
}
static void pm_free(pair_map *m) { free(m->key), free(m->val), free(m->used), free(m->touched); }
static void pm_clear(pair_map *m) {
    for (size_t i = 0; i < m->n; i++) m->used[m->touched[i]] = 0;
    m->n = 0;
}
static size_t pm_slot(const pair_map *m, uint32_t k) {
    size_t i = (size_t)mix64(k) & (m->cap - 1);
    while (m->used[i] && m->key[i] != k) i = (i + 1) & (m->cap - 1);
    return i;
}
static pz_status pm_grow(pair_map *m) {
    pair_map g;
    PZ_TRY(pm_init(&g, m->cap));
    for (size_t t = 0; t < m->n; t++) {
        const size_t i = m->touched[t], j = pm_slot(&g, m->key[i]);
        g.used[j] = 1, g.key[j] = m->key[i], g.val[j] = m->val[i], g.touched[g.n++] = (uint32_t)j;
    }
    pm_free(m);
    *m = g;
    return PZ_OK;
}
/* the value's address, added at 0 when new */
static int64_t *pm_at(pair_map *m, uint32_t k) {
    if (2 * (m->n + 1) > m->cap && pm_grow(m)) return NULL;
    const size_t i = pm_slot(m, k);
    if (!m->used[i]) m->used[i] = 1, m->key[i] = k, m->val[i] = 0, m->touched[m->n++] = (uint32_t)i;
    return &m->val[i];
}
static const int64_t *pm_get(const pair_map *m, uint32_t k) {
    const size_t i = pm_slot(m, k);
    return m->used[i] ? &m->val[i] : NULL;
}

/* ---- the tokenizer ----------------------------------------------------------- */
void pz_tokenizer_free(pz_tokenizer *t) {
    free(t->merges), free(t->bytes), free(t->off);
    pair_map *m = t->rank;
    if (m) pm_free(m), free(m);
    memset(t, 0, sizeof *t);
}

/* the token table (each token's bytes) and the merge ranks, from the merges */
static pz_status finish(pz_tokenizer *t) {
    const int n = 256 + t->n_merges;
    t->off = malloc(sizeof *t->off * (size_t)(n + 1));
    pair_map *rank = calloc(1, sizeof *rank);
    t->rank = rank;
    if (!t->off || !rank) return pz_fail(PZ_ERR_NOMEM, "out of memory for a tokenizer");
    int64_t total = 256;
    t->off[0] = 0;
    for (int i = 0; i < 256; i++) t->off[i + 1] = i + 1;
    for (int m = 0; m < t->n_merges; m++) {
        const int32_t a = t->merges[2 * m], b = t->merges[2 * m + 1];
        total += (t->off[a + 1] - t->off[a]) + (t->off[b + 1] - t->off[b]);
        t->off[256 + m + 1] = total;
    }
    t->bytes = malloc((size_t)total);
    if (!t->bytes) return pz_fail(PZ_ERR_NOMEM, "out of memory for a tokenizer");
    for (int i = 0; i < 256; i++) t->bytes[i] = (uint8_t)i;
    PZ_TRY(pm_init(rank, (size_t)t->n_merges));
    for (int m = 0; m < t->n_merges; m++) {
        const int32_t a = t->merges[2 * m], b = t->merges[2 * m + 1];
        const int64_t la = t->off[a + 1] - t->off[a];
        memcpy(t->bytes + t->off[256 + m], t->bytes + t->off[a], (size_t)la);
        memcpy(t->bytes + t->off[256 + m] + la, t->bytes + t->off[b], (size_t)(t->off[b + 1] - t->off[b]));
        int64_t *r = pm_at(rank, pair_key(a, b));
        if (!r) return pz_fail(PZ_ERR_NOMEM, "out of memory for a tokenizer");
        *r = m;
    }
    t->ready = 1;
    return PZ_OK;
}

pz_status pz_tokenizer_bytes(pz_tokenizer *t) {
    memset(t, 0, sizeof *t);
    t->vocab = 256;
    return finish(t);
}

const uint8_t *pz_tokenizer_token(const pz_tokenizer *t, int32_t id, size_t *len) {
    if (id < 0 || id >= 256 + t->n_merges) {
        *len = 0;
        return NULL;
    }
    *len = (size_t)(t->off[id + 1] - t->off[id]);
    return t->bytes + t->off[id];
}

/* a distinct chunk while learning: its symbols (merged in place) and count */
typedef struct {
    int32_t *sym;
    int len;
    int64_t freq;
} word;

/* The distinct chunks of text with their counts, each as a list of byte
 * symbols (an open-addressing table of the chunks' slots, rehashed into
 * twice the slots when half full). */
typedef struct {
    word *w;
    size_t n;
} word_set;

static pz_status count_words(const uint8_t *text, size_t n, word_set *ws) {
    size_t cap = 1 << 16, nw = 0, wcap = 0;
    size_t *slot_word = calloc(cap, sizeof *slot_word); /* slot -> word index + 1 (0: empty) */
    word *w = NULL;
    const uint8_t **wtext = NULL;
    pz_status st = PZ_OK;
    if (!slot_word) return pz_fail(PZ_ERR_NOMEM, "out of memory learning BPE");
    for (size_t at = 0; at < n && !st;) {
        const size_t len = chunk_len(text + at, n - at);
        const uint8_t *s = text + at;
        at += len;
        size_t i = (size_t)hash_bytes(s, len) & (cap - 1);
        while (slot_word[i] && !(w[slot_word[i] - 1].len == (int)len && !memcmp(wtext[slot_word[i] - 1], s, len)))
            i = (i + 1) & (cap - 1);
        if (slot_word[i]) {
            w[slot_word[i] - 1].freq++;
            continue;
        }
        if (nw == wcap) {
            wcap = wcap ? 2 * wcap : 4096;
            word *nw2 = realloc(w, wcap * sizeof *w);
            if (nw2) w = nw2;
            const uint8_t **nt = realloc(wtext, wcap * sizeof *wtext);
            if (nt) wtext = nt;
            if (!nw2 || !nt) {
                st = pz_fail(PZ_ERR_NOMEM, "out of memory learning BPE");
                break;
            }
        }
        w[nw] = (word){.sym = malloc(len * sizeof(int32_t)), .len = (int)len, .freq = 1};
        wtext[nw] = s;
        if (!w[nw].sym) {
            st = pz_fail(PZ_ERR_NOMEM, "out of memory learning BPE");
            break;
        }
        for (size_t k = 0; k < len; k++) w[nw].sym[k] = s[k];
        slot_word[i] = ++nw;
        if (2 * nw > cap) { /* rehash into twice the slots */
            size_t *g = calloc(2 * cap, sizeof *g);
            if (!g) {
                st = pz_fail(PZ_ERR_NOMEM, "out of memory learning BPE");
                break;
            }
            cap *= 2;
            for (size_t k = 0; k < nw; k++) {
                size_t j = (size_t)hash_bytes(wtext[k], (size_t)w[k].len) & (cap - 1);
                while (g[j]) j = (j + 1) & (cap - 1);
                g[j] = k + 1;
            }
            free(slot_word);
            slot_word = g;
        }
    }
    free(slot_word);
    free(wtext);
    ws->w = w, ws->n = nw;
    return st;
}

/* The most frequent adjacent pair over the words, weighted by their counts
 * (ties: the lowest key); *best < 2 when no pair occurs twice. */
static pz_status best_pair(const word_set *ws, pair_map *counts, int64_t *best, uint32_t *best_key) {
    pm_clear(counts);
    for (size_t k = 0; k < ws->n; k++)
        for (int j = 0; j + 1 < ws->w[k].len; j++) {
            int64_t *c = pm_at(counts, pair_key(ws->w[k].sym[j], ws->w[k].sym[j + 1]));
            if (!c) return pz_fail(PZ_ERR_NOMEM, "out of memory learning BPE");
            *c += ws->w[k].freq;
        }
    *best = 1, *best_key = 0;
    for (size_t u = 0; u < counts->n; u++) {
        const size_t i = counts->touched[u];
        if (counts->val[i] > *best || (counts->val[i] == *best && *best > 1 && counts->key[i] < *best_key))
            *best = counts->val[i], *best_key = counts->key[i];
    }
    return PZ_OK;
}

/* every occurrence of (a, b) in the words becomes id, left to right */
static void apply_merge(word_set *ws, int32_t a, int32_t b, int32_t id) {
    for (size_t k = 0; k < ws->n; k++) {
        word *w = &ws->w[k];
        int o = 0;
        for (int j = 0; j < w->len; j++) {
            if (j + 1 < w->len && w->sym[j] == a && w->sym[j + 1] == b) w->sym[o++] = id, j++;
            else w->sym[o++] = w->sym[j];
        }
        w->len = o;
    }
}

pz_status pz_bpe_learn(pz_tokenizer *t, const uint8_t *text, size_t n, int vocab) {
    memset(t, 0, sizeof *t);
    if (vocab <= 256 || vocab > VOCAB_MAX) return pz_fail(PZ_ERR_ARG, "a BPE vocabulary of %d tokens (expected 257..%d)", vocab, VOCAB_MAX);
    t->vocab = vocab;
    word_set ws = {0};
    pz_status st = count_words(text, n, &ws);
    pair_map counts = {0};
    if (!st) st = pm_init(&counts, 1 << 16);
    if (!st && !(t->merges = malloc(sizeof *t->merges * 2 * (size_t)(vocab - 256))))
        st = pz_fail(PZ_ERR_NOMEM, "out of memory learning BPE");
    for (int m = 0; !st && m < vocab - 256; m++) {
        int64_t best = 0;
        uint32_t best_key = 0;
        if ((st = best_pair(&ws, &counts, &best, &best_key))) break;
        if (best < 2) break; /* no pair occurs twice: fewer merges than asked */
        const int32_t a = (int32_t)(best_key >> 16), b = (int32_t)(best_key & 0xffff), id = 256 + m;
        t->merges[2 * m] = a, t->merges[2 * m + 1] = b;
        t->n_merges = m + 1;
        apply_merge(&ws, a, b, id);
    }
    pm_free(&counts);
    for (size_t k = 0; k < ws.n; k++) free(ws.w[k].sym);
    free(ws.w);
    if (!st) st = finish(t);
    if (st) pz_tokenizer_free(t);
    return st;
}

/* one chunk's tokens: the learned merges, lowest rank first */
static int encode_chunk(const pz_tokenizer *t, const uint8_t *s, int len, int32_t *out) {
    int32_t sym[CHUNK_MAX];
    for (int i = 0; i < len; i++) sym[i] = s[i];
    const pair_map *rank = t->rank;
    while (len > 1 && t->n_merges) {
        int64_t best = INT64_MAX;
        for (int j = 0; j + 1 < len; j++) {
            const int64_t *r = pm_get(rank, pair_key(sym[j], sym[j + 1]));
            if (r && *r < best) best = *r;
        }
        if (best == INT64_MAX) break;
        const int32_t a = t->merges[2 * best], b = t->merges[2 * best + 1], id = (int32_t)(256 + best);
        int o = 0;
        for (int j = 0; j < len; j++) {
            if (j + 1 < len && sym[j] == a && sym[j + 1] == b) sym[o++] = id, j++;
            else sym[o++] = sym[j];
        }
        len = o;
    }
    memcpy(out, sym, (size_t)len * sizeof *out);
    return len;
}

size_t pz_tokenizer_encode(const pz_tokenizer *t, const uint8_t *text, size_t n, int32_t *out) {
    size_t k = 0;
    for (size_t at = 0; at < n;) {
        const size_t len = chunk_len(text + at, n - at);
        k += (size_t)encode_chunk(t, text + at, (int)len, out + k);
        at += len;
    }
    return k;
}

/* ---- the run directory's tokenizer.txt ---------------------------------------- */
#define HEADER "pipezip tokenizer: byte-level bpe, version 1"

pz_status pz_tokenizer_save(const pz_tokenizer *t, const char *path) {
    const size_t cap = 128 + (size_t)t->n_merges * 16;
    char *buf = malloc(cap);
    if (!buf) return pz_fail(PZ_ERR_NOMEM, "out of memory saving a tokenizer");
    size_t len = (size_t)snprintf(buf, cap, "%s\nvocab %d\nmerges %d\n", HEADER, t->vocab, t->n_merges);
    for (int m = 0; m < t->n_merges; m++)
        len += (size_t)snprintf(buf + len, cap - len, "%d %d\n", (int)t->merges[2 * m], (int)t->merges[2 * m + 1]);
    const pz_status st = pz_write_file_atomic(path, buf, len);
    free(buf);
    return st ? pz_fail(st, "cannot write the tokenizer %s: %s", path, pz_last_error()) : PZ_OK;
}

pz_status pz_tokenizer_open(pz_tokenizer *t, int vocab, const char *dir) {
    if (vocab == 256) return pz_tokenizer_bytes(t);
    char path[4300];
    snprintf(path, sizeof path, "%.4200s/tokenizer.txt", dir);
    PZ_TRY(pz_tokenizer_load(t, path));
    const int has = t->vocab;
    if (has == vocab) return PZ_OK;
    pz_tokenizer_free(t);
    return pz_fail(PZ_ERR_FORMAT, "%s has %d tokens where the run's --tokenizer bpe:%d says %d", path, has, vocab, vocab);
}

pz_status pz_tokenizer_load(pz_tokenizer *t, const char *path) {
    memset(t, 0, sizeof *t);
    char *s;
    size_t len;
    PZ_TRY(pz_read_text(path, &s, &len));
    pz_status st = PZ_OK;
    const size_t hl = strlen(HEADER);
    char *p = s + hl;
    int vocab = 0, merges = -1, used = 0;
    if (len < hl + 1 || memcmp(s, HEADER, hl) || *p != '\n' || sscanf(p, "\nvocab %d\nmerges %d\n%n", &vocab, &merges, &used) != 2 ||
        vocab <= 256 || vocab > VOCAB_MAX || merges < 0 || merges > vocab - 256)
        st = pz_fail(PZ_ERR_FORMAT, "%s is not a pipezip BPE tokenizer (its header: '%s' then vocab N, merges M)", path, HEADER);
    if (!st && !(t->merges = malloc(sizeof *t->merges * 2 * (size_t)(merges ? merges : 1))))
        st = pz_fail(PZ_ERR_NOMEM, "out of memory reading %s", path);
    p += used;
    for (int m = 0; !st && m < merges; m++) {
        char *end;
        long v[2];
        for (int k = 0; k < 2 && !st; k++) {
            errno = 0;
            v[k] = strtol(p, &end, 10);
            if (end == p || errno || v[k] < 0 || v[k] >= 256 + m || *end != (k ? '\n' : ' '))
                st = pz_fail(PZ_ERR_FORMAT, "%s: merge %d (line %d) is not two earlier token ids", path, m, m + 4);
            p = end + 1;
        }
        if (!st) t->merges[2 * m] = (int32_t)v[0], t->merges[2 * m + 1] = (int32_t)v[1];
    }
    if (!st && *p) st = pz_fail(PZ_ERR_FORMAT, "%s: text after its %d merges", path, merges);
    free(s);
    t->vocab = vocab, t->n_merges = st ? 0 : merges;
    if (!st) st = finish(t);
    if (st) pz_tokenizer_free(t);
    return st;
}
