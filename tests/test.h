/* SPDX-License-Identifier: MIT */
/* test.h — the small harness every pipezip test uses: CHECK that counts
 * failures, tensor comparison that prints the first mismatches (llm.c's
 * test_gpt2.c style), and the reader for PyTorch reference files. */
#ifndef PZ_TEST_H
#define PZ_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

static int test_failures = 0;
static int test_checks = 0;

#define CHECK(cond, ...)                                                              \
    do {                                                                              \
        test_checks++;                                                                \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond);  \
            fprintf(stderr, __VA_ARGS__);                                             \
            fputc('\n', stderr);                                                      \
            test_failures++;                                                          \
        }                                                                             \
    } while (0)

#define TEST_DONE()                                                                   \
    do {                                                                              \
        printf("%s: %d checks, %d failed\n", __FILE__, test_checks, test_failures);   \
        return test_failures ? 1 : 0;                                                 \
    } while (0)

/* |got - want| <= atol + rtol * |want| everywhere; reports the first 5 misses
 * and the largest error. Returns the number of misses. */
static inline int check_close(const char *what, const float *got, const float *want, size_t n, float atol, float rtol) {
    int miss = 0;
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double d = fabs((double)got[i] - (double)want[i]);
        if (d > worst) worst = d;
        if (!(d <= atol + rtol * fabs((double)want[i]))) {
            if (miss < 5) fprintf(stderr, "  %s[%zu]: got %.8g want %.8g\n", what, i, got[i], want[i]);
            miss++;
        }
    }
    test_checks++;
    if (miss) {
        fprintf(stderr, "%s: %d of %zu values differ (max abs error %.3g)\n", what, miss, n, worst);
        test_failures++;
    }
    return miss;
}

/* ---- reference files (tests/ref/gen_ref.py) ------------------------------- */
typedef struct {
    char name[64];
    int ndim;
    int dims[4];
    size_t n;
    float *data;
} ref_tensor;

typedef struct {
    int count;
    ref_tensor t[256];
} ref_file;

static inline int ref_load(ref_file *rf, const char *path) {
    memset(rf, 0, sizeof *rf);
    FILE *f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "cannot open reference file %s\n", path); return -1; }
    char magic[8];
    if (fread(magic, 1, 8, f) != 8 || memcmp(magic, "PZREF1\0\0", 8)) { fprintf(stderr, "%s: bad magic\n", path); fclose(f); return -1; }
    uint32_t len;
    while (rf->count < 256 && fread(&len, 4, 1, f) == 1) {
        ref_tensor *t = &rf->t[rf->count];
        uint32_t nd, d;
        if (len >= sizeof t->name || fread(t->name, 1, len, f) != len || fread(&nd, 4, 1, f) != 1 || nd > 4) break;
        t->name[len] = 0;
        t->ndim = (int)nd;
        t->n = 1;
        for (uint32_t k = 0; k < nd; k++) {
            if (fread(&d, 4, 1, f) != 1) { fclose(f); return -1; }
            t->dims[k] = (int)d;
            t->n *= d;
        }
        t->data = malloc(sizeof(float) * (t->n ? t->n : 1));
        if (fread(t->data, sizeof(float), t->n, f) != t->n) { fclose(f); return -1; }
        rf->count++;
    }
    fclose(f);
    return 0;
}

static inline ref_tensor *ref_get(ref_file *rf, const char *name) {
    for (int i = 0; i < rf->count; i++)
        if (!strcmp(rf->t[i].name, name)) return &rf->t[i];
    fprintf(stderr, "reference tensor '%s' missing\n", name);
    exit(1);
}

static inline void ref_free(ref_file *rf) {
    for (int i = 0; i < rf->count; i++) free(rf->t[i].data);
}

#ifndef PZ_SOURCE_DIR
#define PZ_SOURCE_DIR "."
#endif

#endif
