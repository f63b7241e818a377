/* SPDX-License-Identifier: MIT */
/* test_data.c — idx and CIFAR-10 loaders on files written here (plain and
 * gzipped), their errors on malformed or missing files, normalisation, and
 * the batch loader: permutations, stable ids, determinism, augmentation. */
#include "../test.h"
#include "data/data.h"

#include <unistd.h>
#include <zlib.h>

static char tmpdir[256];

static void write_bytes(const char *name, const uint8_t *b, size_t n, int gz) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    if (gz) {
        gzFile f = gzopen(path, "wb");
        gzwrite(f, b, (unsigned)n);
        gzclose(f);
    } else {
        FILE *f = fopen(path, "wb");
        fwrite(b, 1, n, f);
        fclose(f);
    }
}

/* an idx3 image file of n images h x w with pixel (i, p) = (i * 31 + p) % 256 */
static size_t make_images(uint8_t *b, int n, int h, int w) {
    uint8_t hdr[16] = {0, 0, 8, 3, 0, 0, 0, (uint8_t)n, 0, 0, 0, (uint8_t)h, 0, 0, 0, (uint8_t)w};
    memcpy(b, hdr, 16);
    for (int i = 0; i < n * h * w; i++) b[16 + i] = (uint8_t)((i / (h * w) * 31 + i % (h * w)) % 256);
    return 16 + (size_t)n * h * w;
}

static size_t make_labels(uint8_t *b, int n) {
    uint8_t hdr[8] = {0, 0, 8, 1, 0, 0, 0, (uint8_t)n};
    memcpy(b, hdr, 8);
    for (int i = 0; i < n; i++) b[8 + i] = (uint8_t)(i % 10);
    return 8 + (size_t)n;
}

static void test_idx(void) {
    uint8_t img[16 + 20 * 4 * 5], lab[8 + 20];
    size_t ni = make_images(img, 20, 4, 5), nl = make_labels(lab, 20);
    write_bytes("train-images-idx3-ubyte.gz", img, ni, 1);
    write_bytes("train-labels-idx1-ubyte", lab, nl, 0);
    make_images(img, 12, 4, 5);
    make_labels(lab, 12);
    write_bytes("t10k-images-idx3-ubyte", img, 16 + 12 * 20, 0);
    write_bytes("t10k-labels-idx1-ubyte.gz", lab, 8 + 12, 1);
    pz_dataset tr, te;
    CHECK(pz_load_idx_dir(&tr, &te, tmpdir, "toy") == PZ_OK, "%s", pz_last_error());
    CHECK(tr.n == 20 && te.n == 12 && tr.h == 4 && tr.w == 5 && tr.c == 1, "shapes %lld %lld %dx%d", (long long)tr.n,
          (long long)te.n, tr.h, tr.w);
    CHECK(fabsf(tr.x[3 * 20 + 7] - (float)((3 * 31 + 7) % 256) / 255.0f) < 1e-7f, "pixel value");
    CHECK(tr.y[13] == 3 && te.y[11] == 1, "labels");
    pz_dataset_normalize(&tr, &te);
    double s = 0, s2 = 0;
    for (int i = 0; i < 20 * 20; i++) s += tr.x[i], s2 += (double)tr.x[i] * tr.x[i];
    CHECK(fabs(s / 400) < 1e-5 && fabs(s2 / 400 - 1) < 1e-4, "normalised train mean %g var %g", s / 400, s2 / 400);
    pz_dataset_free(&tr), pz_dataset_free(&te);

    /* errors: each names the file and the problem */
    char path[512], lpath[512];
    snprintf(lpath, sizeof lpath, "%s/train-labels-idx1-ubyte", tmpdir);
    snprintf(path, sizeof path, "%s/bad-images", tmpdir);
    make_images(img, 20, 4, 5);
    write_bytes("bad-images", img, ni - 1, 0); /* truncated */
    CHECK(pz_load_idx(&tr, path, lpath, "x") == PZ_ERR_FORMAT, "truncated images rejected");
    CHECK(strstr(pz_last_error(), "bad-images") && strstr(pz_last_error(), "header says"), "message: %s", pz_last_error());
    img[2] = 0x0D; /* float elements */
    write_bytes("bad-images", img, ni, 0);
    CHECK(pz_load_idx(&tr, path, lpath, "x") == PZ_ERR_FORMAT && strstr(pz_last_error(), "element type"), "%s", pz_last_error());
    img[2] = 8, img[0] = 0x1f; /* not idx at all (gzip's first byte alone) */
    write_bytes("bad-images", img, ni, 0);
    CHECK(pz_load_idx(&tr, path, lpath, "x") == PZ_ERR_FORMAT && strstr(pz_last_error(), "magic"), "%s", pz_last_error());
    make_images(img, 19, 4, 5);
    write_bytes("bad-images", img, 16 + 19 * 20, 0); /* 19 images, 20 labels */
    CHECK(pz_load_idx(&tr, path, lpath, "x") == PZ_ERR_FORMAT && strstr(pz_last_error(), "labels"), "%s", pz_last_error());
    make_images(img, 20, 4, 5);
    write_bytes("bad-images", img, ni, 0);
    make_labels(lab, 20);
    lab[8 + 5] = 12; /* label out of range */
    write_bytes("bad-labels", lab, nl, 0);
    snprintf(lpath, sizeof lpath, "%s/bad-labels", tmpdir);
    CHECK(pz_load_idx(&tr, path, lpath, "x") == PZ_ERR_FORMAT && strstr(pz_last_error(), "label 12"), "%s", pz_last_error());
    write_bytes("corrupt.gz", (const uint8_t *)"\x1f\x8b\x08\x00garbage-garbage", 20, 0);
    snprintf(path, sizeof path, "%s/corrupt.gz", tmpdir);
    CHECK(pz_load_idx(&tr, path, lpath, "x") == PZ_ERR_FORMAT, "corrupt gzip rejected: %s", pz_last_error());
    CHECK(pz_load_idx_dir(&tr, &te, "/nonexistent/dir", "x") == PZ_ERR_IO, "missing dir");
    CHECK(strstr(pz_last_error(), "/nonexistent/dir/train-images-idx3-ubyte") != NULL, "message: %s", pz_last_error());
    CHECK(pz_load_dataset(&tr, &te, "imagenet", NULL, 1) == PZ_ERR_ARG && strstr(pz_last_error(), "imagenet"), "%s",
          pz_last_error());
}

static void test_cifar(void) {
    const size_t rec = 3073;
    uint8_t *b = calloc(4 * rec, 1);
    for (int i = 0; i < 4; i++) {
        b[i * rec] = (uint8_t)(i * 3 % 10);
        for (int j = 0; j < 3072; j++) b[i * rec + 1 + j] = (uint8_t)((i + j) % 256);
    }
    for (int k = 1; k <= 5; k++) {
        char name[32];
        snprintf(name, sizeof name, "data_batch_%d.bin", k);
        write_bytes(name, b, 4 * rec, 0);
    }
    write_bytes("test_batch.bin", b, 2 * rec, 0);
    pz_dataset tr, te;
    CHECK(pz_load_cifar10_dir(&tr, &te, tmpdir) == PZ_OK, "%s", pz_last_error());
    CHECK(tr.n == 20 && te.n == 2 && tr.c == 3 && tr.h == 32, "cifar shapes %lld %lld", (long long)tr.n, (long long)te.n);
    CHECK(tr.y[5] == 3 && fabsf(tr.x[5 * 3072 + 1024] - (float)((1 + 1024) % 256) / 255.0f) < 1e-7f, "cifar values");
    pz_dataset_free(&tr), pz_dataset_free(&te);
    write_bytes("test_batch.bin", b, 2 * rec - 5, 0);
    CHECK(pz_load_cifar10_dir(&tr, &te, tmpdir) == PZ_ERR_FORMAT && strstr(pz_last_error(), "test_batch.bin"), "%s",
          pz_last_error());
    free(b);
}

static void test_loader(void) {
    pz_dataset tr, te;
    CHECK(pz_make_synthetic(&tr, &te, 50, 10, 2, 6, 6, 4, 3) == PZ_OK, "%s", pz_last_error());
    pz_dataset_normalize(&tr, &te);
    pz_loader a, b;
    pz_loader_init(&a, &tr, 8, 1, (pz_augment){0, 0}, 11);
    pz_loader_init(&b, &tr, 8, 1, (pz_augment){0, 0}, 11);
    CHECK(pz_loader_batches(&a) == 7, "50 examples in batches of 8: 7 batches");
    int seen[50] = {0}, total = 0, B, same = 1, sizes_ok = 1;
    while ((B = pz_loader_next(&a)) > 0) {
        int Bb = pz_loader_next(&b);
        same &= Bb == B && !memcmp(a.ids, b.ids, sizeof(uint32_t) * B) && !memcmp(a.x, b.x, sizeof(float) * B * 72);
        sizes_ok &= B == 8 || (B == 2 && total == 48);
        for (int i = 0; i < B; i++) {
            seen[a.ids[i]]++;
            same &= a.y[i] == tr.y[a.ids[i]] && !memcmp(a.x + i * 72, tr.x + a.ids[i] * 72, sizeof(float) * 72);
        }
        total += B;
    }
    CHECK(same, "same seed gives the same batches; each example is its id's");
    CHECK(sizes_ok && total == 50, "batch sizes, total %d", total);
    int perm = 1;
    for (int i = 0; i < 50; i++) perm &= seen[i] == 1;
    CHECK(perm, "an epoch visits every example once");
    pz_loader_start_epoch(&a, 0);
    pz_loader_next(&a);
    uint32_t first0[8];
    memcpy(first0, a.ids, sizeof first0);
    pz_loader_start_epoch(&a, 1);
    pz_loader_next(&a);
    CHECK(memcmp(first0, a.ids, sizeof first0) != 0, "a new epoch reshuffles");
    pz_loader_free(&a), pz_loader_free(&b);

    /* augmentation: flip+crop of an example are made of its own pixels or the pad value */
    pz_loader c;
    pz_loader_init(&c, &tr, 50, 0, (pz_augment){2, 1}, 5);
    pz_loader_next(&c);
    int ok = 1, changed = 0;
    const float fill = -tr.mean[0] / tr.std[0];
    for (int i = 0; i < 50; i++) {
        const float *src = tr.x + i * 72, *dst = c.x + i * 72;
        changed |= memcmp(src, dst, sizeof(float) * 72) != 0;
        for (int ch = 0; ch < 2; ch++) {
            const float f = -tr.mean[ch] / tr.std[ch];
            for (int p = 0; p < 36; p++) {
                int found = dst[ch * 36 + p] == f;
                for (int q = 0; q < 36 && !found; q++) found = dst[ch * 36 + p] == src[ch * 36 + q];
                ok &= found;
            }
        }
    }
    (void)fill;
    CHECK(ok, "augmented pixels come from the example or the padding value");
    CHECK(changed, "augmentation changes some examples");
    pz_loader_free(&c);
    pz_dataset_free(&tr), pz_dataset_free(&te);
}

static void test_fashion_mnist(void) {
    const char *dir = pz_default_data_dir("fashion-mnist");
    if (access(dir, R_OK) != 0) {
        printf("SKIP: %s not installed (scripts/setup.sh installs dataset-fashion-mnist)\n", dir);
        return;
    }
    pz_dataset tr, te;
    CHECK(pz_load_dataset(&tr, &te, "fashion-mnist", NULL, 1) == PZ_OK, "%s", pz_last_error());
    CHECK(tr.n == 60000 && te.n == 10000 && tr.h == 28 && tr.w == 28 && tr.n_classes == 10, "Fashion-MNIST sizes");
    int counts[10] = {0};
    for (int64_t i = 0; i < tr.n; i++) counts[tr.y[i]]++;
    int balanced = 1;
    for (int k = 0; k < 10; k++) balanced &= counts[k] == 6000;
    CHECK(balanced, "6000 training examples per class");
    CHECK(fabsf(tr.mean[0] - 0.2860f) < 1e-3f && fabsf(tr.std[0] - 0.3530f) < 1e-3f, "mean %g std %g", tr.mean[0], tr.std[0]);
    pz_dataset_free(&tr), pz_dataset_free(&te);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/pz-test-data-XXXXXX");
    if (!mkdtemp(tmpdir)) return 1;
    test_idx();
    test_cifar();
    test_loader();
    test_fashion_mnist();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    TEST_DONE();
}
