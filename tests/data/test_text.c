/* SPDX-License-Identifier: MIT */
/* test_text.c — text corpora as byte tokens: the train / held-out split,
 * samples of T tokens whose targets are the next T, stable ids, the loader
 * carrying T targets per sample, shards, and the errors for a missing file,
 * a text too short for one sequence, and an unknown corpus. */
#include "../test.h"
#include "data/data.h"

#include <unistd.h>

int main(void) {
    char dir[] = "/tmp/pz-text-XXXXXX", path[256];
    CHECK(mkdtemp(dir) != NULL, "temp dir");
    snprintf(path, sizeof path, "%s/corpus.txt", dir);
    uint8_t text[100];
    for (int i = 0; i < 100; i++) text[i] = (uint8_t)(i * 7 % 251 + 3);
    FILE *f = fopen(path, "wb");
    fwrite(text, 1, sizeof text, f);
    fclose(f);

    pz_dataset tr, va;
    CHECK(pz_load_text(&tr, &va, path, "t", 4, NULL) == PZ_OK, "%s", pz_last_error());
    /* 90 bytes train -> (90 - 1) / 4 = 22 samples; 10 held out -> 2 */
    CHECK(tr.n == 22 && va.n == 2, "samples: train %lld, val %lld", (long long)tr.n, (long long)va.n);
    CHECK(tr.tokens == 4 && pz_dataset_targets(&tr) == 4 && tr.n_classes == 256 && tr.bytes_per_token == 1.0, "text dataset");
    const pz_shape sh = pz_dataset_shape(&tr);
    CHECK(sh.rank == 1 && sh.d[0] == 4, "a sample is 4 token ids");
    int ok = 1;
    for (int i = 0; i < 22; i++)
        for (int t = 0; t < 4; t++)
            ok &= tr.x[i * 4 + t] == (float)text[i * 4 + t] && tr.y[i * 4 + t] == text[i * 4 + t + 1];
    for (int i = 0; i < 2; i++)
        for (int t = 0; t < 4; t++) ok &= va.x[i * 4 + t] == (float)text[90 + i * 4 + t] && va.y[i * 4 + t] == text[90 + i * 4 + t + 1];
    CHECK(ok, "inputs are the text, targets the next byte, the held-out tenth the end");

    /* the loader: ids, and T targets per sample, in its order */
    pz_loader l;
    CHECK(pz_loader_init(&l, &tr, 5, 1, (pz_augment){0}, 3) == PZ_OK, "loader");
    const int B = pz_loader_next(&l);
    ok = B == 5;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < 4; t++) {
            const uint32_t id = l.ids[b];
            ok &= l.x[b * 4 + t] == tr.x[id * 4 + t] && l.y[b * 4 + t] == tr.y[id * 4 + t];
        }
    CHECK(ok, "a batch carries each sample's 4 inputs and 4 targets");
    pz_loader_free(&l);

    /* a shard keeps its samples' ids and targets */
    pz_dataset sh2, va2;
    CHECK(pz_load_text(&sh2, &va2, path, "t", 4, NULL) == PZ_OK, "reload");
    CHECK(pz_dataset_shard(&sh2, 1, 2) == PZ_OK && sh2.n == 11 && sh2.id_base == 11, "shard 1 of 2");
    CHECK(sh2.y[0] == text[44 + 1] && sh2.x[3] == (float)text[47], "the shard's first sample is sample 11");
    pz_dataset_free(&sh2), pz_dataset_free(&va2);

    /* normalisation leaves token ids alone */
    pz_dataset_normalize(&tr, &va);
    CHECK(tr.x[5] == (float)text[5], "token ids are not normalised");
    pz_dataset_free(&tr), pz_dataset_free(&va);

    /* errors */
    CHECK(pz_load_text(&tr, &va, path, "t", 20, NULL) == PZ_ERR_FORMAT && strstr(pz_last_error(), "holds no sequence of 20"),
          "a held-out split too short for one sequence: %s", pz_last_error());
    CHECK(pz_load_corpus(&tr, &va, "text:/nonexistent/x.txt", NULL, 4, NULL) != PZ_OK && strstr(pz_last_error(), "/nonexistent/x.txt"),
          "a missing file is named: %s", pz_last_error());
    CHECK(pz_load_corpus(&tr, &va, "text:", NULL, 4, NULL) == PZ_ERR_ARG, "text: without a file");
    CHECK(pz_load_corpus(&tr, &va, "shakespeare", NULL, 4, NULL) == PZ_ERR_ARG, "an unknown corpus");
    char kp[512];
    snprintf(kp, sizeof kp, "text:%s", path);
    CHECK(pz_load_corpus(&tr, &va, kp, NULL, 4, NULL) == PZ_OK && tr.n == 22, "text:FILE loads");
    pz_dataset_free(&tr), pz_dataset_free(&va);
    CHECK(pz_dataset_is_text("kjv") && pz_dataset_is_text("text:a") && !pz_dataset_is_text("mnist"), "text names");

    /* the King James Bible's cache: a kjv.txt already in the directory is used as is */
    snprintf(kp, sizeof kp, "%s/kjv.txt", dir);
    f = fopen(kp, "wb");
    fwrite(text, 1, sizeof text, f);
    fclose(f);
    char got[512];
    CHECK(pz_kjv_path(got, sizeof got, dir) == PZ_OK && !strcmp(got, kp), "the cache path: %s", got);
    CHECK(pz_load_corpus(&tr, &va, "kjv", dir, 4, NULL) == PZ_OK && tr.n == 22, "kjv from the cache");
    pz_dataset_free(&tr), pz_dataset_free(&va);
    unlink(kp), unlink(path), rmdir(dir);
    TEST_DONE();
}
