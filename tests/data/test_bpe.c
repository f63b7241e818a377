/* SPDX-License-Identifier: MIT */
/* test_bpe.c — byte-level BPE: merges worked out by hand on a small text
 * (the most frequent pair first, ties to the smaller pair, never across a
 * chunk), encode/decode round trips of any bytes, save/load giving the same
 * tokens, corrupt tokenizer files refused with a reason, the spec parser,
 * and a text corpus loaded in BPE tokens (vocabulary, targets, bytes per
 * token). */
#include "../test.h"
#include "data/data.h"

#include <unistd.h>

/* decode ids back to bytes; returns the length */
static size_t decode(const pz_tokenizer *t, const int32_t *ids, size_t n, uint8_t *out) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const uint8_t *b = pz_tokenizer_token(t, ids[i], &len);
        CHECK(b != NULL, "token %d exists", ids[i]);
        memcpy(out + k, b, len);
        k += len;
    }
    return k;
}

static void write_file(const char *path, const char *s) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL, "open %s", path);
    fputs(s, f);
    fclose(f);
}

int main(void) {
    /* by hand: chunks "ab", " ab", " ab", " abc". Pairs: (a,b) x4, (' ',a)
     * x3, (b,c) x1 -> 256 = "ab"; then (' ',256) x3 -> 257 = " ab"; then
     * (257,c) once only: stop, 2 merges of the 44 asked. */
    pz_tokenizer t;
    const char *small = "ab ab ab abc";
    CHECK(pz_bpe_learn(&t, (const uint8_t *)small, strlen(small), 300) == PZ_OK, "%s", pz_last_error());
    CHECK(t.vocab == 300 && t.n_merges == 2, "2 merges (got %d), vocabulary kept at 300", t.n_merges);
    CHECK(t.merges[0] == 'a' && t.merges[1] == 'b' && t.merges[2] == ' ' && t.merges[3] == 256, "the merges: a+b, ' '+ab");
    int32_t ids[64];
    size_t n = pz_tokenizer_encode(&t, (const uint8_t *)"ab abc", 6, ids);
    CHECK(n == 3 && ids[0] == 256 && ids[1] == 257 && ids[2] == 'c', "'ab abc' -> [ab, ' ab', c] (got %zu tokens)", n);
    size_t len;
    const uint8_t *b = pz_tokenizer_token(&t, 257, &len);
    CHECK(len == 3 && !memcmp(b, " ab", 3), "token 257 is ' ab'");
    CHECK(pz_tokenizer_token(&t, 258, &len) == NULL && len == 0, "no token 258");
    pz_tokenizer_free(&t);

    /* ties: "xy" and "yz" both twice -> the smaller pair (x,y) first */
    CHECK(pz_bpe_learn(&t, (const uint8_t *)"xyz xyz", 7, 257) == PZ_OK, "learn");
    CHECK(t.n_merges == 1 && t.merges[0] == 'x' && t.merges[1] == 'y', "a tie goes to the smaller pair");
    pz_tokenizer_free(&t);

    /* a larger text: merges never cross chunks (no token holds a space
     * after its first byte, or letters next to punctuation) */
    size_t big_n = 0;
    char *big = malloc(200000);
    const char *words[] = {"the", "LORD", "said", "unto", "Moses,", "and", "it", "was", "so.", "12:3", "\n  "};
    uint64_t r = 12345;
    while (big_n < 190000) {
        r = r * 6364136223846793005ULL + 1442695040888963407ULL;
        const char *w = words[(r >> 33) % 11];
        big_n += (size_t)sprintf(big + big_n, "%s%s", w, (r >> 40) % 3 ? " " : "");
    }
    CHECK(pz_bpe_learn(&t, (const uint8_t *)big, big_n, 512) == PZ_OK, "learn 512");
    CHECK(t.n_merges > 20 && t.n_merges <= 256, "merges learned: %d", t.n_merges);
    for (int id = 256; id < 256 + t.n_merges; id++) {
        b = pz_tokenizer_token(&t, id, &len);
        CHECK(len >= 2, "a merge is 2 bytes or more");
        for (size_t i = 1; i < len; i++) CHECK(b[i] != ' ' || b[0] == ' ' || b[0] == '\n', "token %d crosses a space", id);
    }
    int32_t *bid = malloc(sizeof *bid * big_n);
    uint8_t *back = malloc(big_n);
    n = pz_tokenizer_encode(&t, (const uint8_t *)big, big_n, bid);
    CHECK(n < big_n / 2, "fewer tokens than half the bytes (%zu of %zu)", n, big_n);
    CHECK(decode(&t, bid, n, back) == big_n && !memcmp(back, big, big_n), "the text round-trips");

    /* any bytes round-trip, zeros and invalid UTF-8 included */
    uint8_t junk[5000];
    for (size_t i = 0; i < sizeof junk; i++) r = r * 6364136223846793005ULL + 1, junk[i] = (uint8_t)(r >> 56);
    int32_t jid[5000];
    uint8_t jb[5000];
    n = pz_tokenizer_encode(&t, junk, sizeof junk, jid);
    CHECK(n <= sizeof junk && decode(&t, jid, n, jb) == sizeof junk && !memcmp(jb, junk, sizeof junk), "random bytes round-trip");

    /* save and load: the same merges, the same tokens */
    char dir[] = "/tmp/pz-bpe-XXXXXX", path[256], path2[256];
    CHECK(mkdtemp(dir) != NULL, "temp dir");
    snprintf(path, sizeof path, "%s/tokenizer.txt", dir);
    CHECK(pz_tokenizer_save(&t, path) == PZ_OK, "save");
    pz_tokenizer u;
    CHECK(pz_tokenizer_load(&u, path) == PZ_OK, "%s", pz_last_error());
    CHECK(u.vocab == 512 && u.n_merges == t.n_merges && !memcmp(u.merges, t.merges, sizeof(int32_t) * 2 * t.n_merges), "same merges");
    int32_t *bid2 = malloc(sizeof *bid2 * big_n);
    CHECK(pz_tokenizer_encode(&u, (const uint8_t *)big, big_n, bid2) == pz_tokenizer_encode(&t, (const uint8_t *)big, big_n, bid) &&
              !memcmp(bid, bid2, sizeof *bid * pz_tokenizer_encode(&t, (const uint8_t *)big, big_n, bid)),
          "the loaded tokenizer gives the same tokens");
    pz_tokenizer_free(&u);

    /* corrupt files are refused with a reason */
    snprintf(path2, sizeof path2, "%s/bad.txt", dir);
    write_file(path2, "hello\n");
    CHECK(pz_tokenizer_load(&u, path2) == PZ_ERR_FORMAT && strstr(pz_last_error(), "not a pipezip BPE tokenizer"), "a foreign file");
    write_file(path2, "pipezip tokenizer: byte-level bpe, version 1\nvocab 300\nmerges 2\n97 98\n32 257\n");
    CHECK(pz_tokenizer_load(&u, path2) == PZ_ERR_FORMAT && strstr(pz_last_error(), "merge 1"), "a merge of a later token");
    write_file(path2, "pipezip tokenizer: byte-level bpe, version 1\nvocab 300\nmerges 2\n97 98\n");
    CHECK(pz_tokenizer_load(&u, path2) == PZ_ERR_FORMAT, "a truncated file");
    write_file(path2, "pipezip tokenizer: byte-level bpe, version 1\nvocab 300\nmerges 50\n");
    CHECK(pz_tokenizer_load(&u, path2) == PZ_ERR_FORMAT, "more merges than the vocabulary holds");
    write_file(path2, "pipezip tokenizer: byte-level bpe, version 1\nvocab 300\nmerges 1\n97 98\nextra\n");
    CHECK(pz_tokenizer_load(&u, path2) == PZ_ERR_FORMAT && strstr(pz_last_error(), "after its 1 merges"), "trailing text");
    write_file(path2, "pipezip tokenizer: byte-level bpe, version 1\nvocab 300\nmerges 1\n97 98\n");
    CHECK(pz_tokenizer_load(&u, path2) == PZ_OK && u.n_merges == 1, "a good one-merge file");
    pz_tokenizer_free(&u);
    CHECK(pz_tokenizer_load(&u, "/nonexistent/tokenizer.txt") != PZ_OK && strstr(pz_last_error(), "/nonexistent"), "a missing file");

    /* specs */
    int v;
    CHECK(pz_tokenizer_spec(NULL, &v) == PZ_OK && v == 256, "NULL: bytes");
    CHECK(pz_tokenizer_spec("bytes", &v) == PZ_OK && v == 256, "bytes");
    CHECK(pz_tokenizer_spec("bpe:1024", &v) == PZ_OK && v == 1024, "bpe:1024");
    CHECK(pz_tokenizer_spec("bpe:256", &v) == PZ_ERR_ARG && strstr(pz_last_error(), "257 <= N"), "bpe:256 is refused");
    CHECK(pz_tokenizer_spec("bpe:70000", &v) == PZ_ERR_ARG, "too large");
    CHECK(pz_tokenizer_spec("bpe:12x", &v) == PZ_ERR_ARG && pz_tokenizer_spec("wordpiece", &v) == PZ_ERR_ARG, "junk");

    /* a corpus in BPE tokens: learned from the training split only */
    snprintf(path, sizeof path, "%s/corpus.txt", dir);
    FILE *f = fopen(path, "wb");
    fwrite(big, 1, big_n, f);
    fclose(f);
    pz_dataset tr, va;
    pz_tokenizer lt = {.vocab = 400};
    CHECK(pz_load_text(&tr, &va, path, "c", 32, &lt) == PZ_OK, "%s", pz_last_error());
    CHECK(lt.ready && lt.n_merges > 0 && tr.n_classes == 400 && va.n_classes == 400, "vocabulary 400");
    CHECK(tr.bytes_per_token > 2.0 && va.bytes_per_token > 2.0, "bytes per token %.2f / %.2f", tr.bytes_per_token, va.bytes_per_token);
    /* the training split's tokens are the encoding of its bytes, each target the next token */
    const size_t cut = big_n - big_n / 10;
    n = pz_tokenizer_encode(&lt, (const uint8_t *)big, cut, bid);
    CHECK(tr.n == (int64_t)((n - 1) / 32), "samples from %zu tokens: %lld", n, (long long)tr.n);
    int64_t wrong = 0;
    for (int64_t i = 0; i < tr.n * 32; i++) wrong += tr.x[i] != (float)bid[i] || tr.y[i] != bid[i + 1];
    CHECK(wrong == 0, "%lld of the training split's tokens or targets differ from its encoding", (long long)wrong);
    pz_tokenizer learned_again;
    CHECK(pz_bpe_learn(&learned_again, (const uint8_t *)big, cut, 400) == PZ_OK && learned_again.n_merges == lt.n_merges &&
              !memcmp(learned_again.merges, lt.merges, sizeof(int32_t) * 2 * lt.n_merges),
          "learned from the training split, the same every time");
    pz_tokenizer_free(&learned_again);
    pz_dataset_free(&tr), pz_dataset_free(&va);
    /* a ready tokenizer is used as it is */
    CHECK(pz_load_corpus(&tr, &va, "text:/nonexistent.txt", NULL, 32, &lt) != PZ_OK, "missing file");
    char spec[300];
    snprintf(spec, sizeof spec, "text:%s", path);
    const int merges = lt.n_merges;
    CHECK(pz_load_corpus(&tr, &va, spec, NULL, 32, &lt) == PZ_OK && lt.n_merges == merges && tr.n_classes == 400, "reuse");
    pz_dataset_free(&tr), pz_dataset_free(&va);
    pz_tokenizer_free(&lt);

    pz_tokenizer_free(&t);
    free(big), free(bid), free(bid2), free(back);
    unlink(path), unlink(path2);
    snprintf(path, sizeof path, "%s/tokenizer.txt", dir);
    unlink(path);
    rmdir(dir);
    TEST_DONE();
}
