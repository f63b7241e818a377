/* SPDX-License-Identifier: MIT */
/* test_base.c — RNG (determinism, splitting, uniformity, normal moments),
 * checked I/O (atomic write, plain and gzip reads, missing files), errors,
 * the median, and the metrics writer. */
#include "../test.h"
#include "base/base.h"
#include "run/metrics.h"

#include <unistd.h>
#include <zlib.h>

static void test_rng(void) {
    pz_rng a, b;
    pz_rng_seed(&a, 123);
    pz_rng_seed(&b, 123);
    int same = 1;
    for (int i = 0; i < 1000; i++) same &= pz_rng_u64(&a) == pz_rng_u64(&b);
    CHECK(same, "same seed, same stream");
    pz_rng_seed(&b, 124);
    CHECK(pz_rng_u64(&a) != pz_rng_u64(&b), "different seeds differ");

    pz_rng root;
    pz_rng_seed(&root, 9);
    pz_rng s1 = pz_rng_split(&root, 1), s1b = pz_rng_split(&root, 1), s2 = pz_rng_split(&root, 2);
    CHECK(pz_rng_u64(&s1) == pz_rng_u64(&s1b), "split is a pure function of (parent, stream)");
    CHECK(pz_rng_u64(&s1) != pz_rng_u64(&s2), "different streams differ");

    /* uniformity of pz_rng_below: chi-square over 10 buckets, 100k draws
     * (99.99% quantile of chi2 with 9 dof is ~33.7) */
    int counts[10] = {0};
    for (int i = 0; i < 100000; i++) counts[pz_rng_below(&a, 10)]++;
    double chi = 0;
    for (int k = 0; k < 10; k++) chi += (counts[k] - 10000.0) * (counts[k] - 10000.0) / 10000.0;
    CHECK(chi < 33.7, "chi-square %.2f", chi);
    double sum = 0, sq = 0, mn = 1, mx = 0;
    for (int i = 0; i < 200000; i++) {
        float n = pz_rng_normal(&a), u = pz_rng_uniform(&a);
        sum += n, sq += (double)n * n;
        mn = u < mn ? u : mn, mx = u > mx ? u : mx;
    }
    CHECK(fabs(sum / 200000) < 0.01 && fabs(sq / 200000 - 1) < 0.02, "normal mean %g var %g", sum / 200000, sq / 200000);
    CHECK(mn >= 0 && mx < 1 && mx > 0.999, "uniform range [%g, %g]", mn, mx);
}

static void test_io(void) {
    char dir[] = "/tmp/pz-test-base-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char path[256], sub[256];
    snprintf(path, sizeof path, "%s/file.bin", dir);
    const char msg[] = "pipezip writes atomically";
    CHECK(pz_write_file_atomic(path, msg, sizeof msg) == PZ_OK, "%s", pz_last_error());
    uint8_t *data;
    size_t len;
    CHECK(pz_read_file(path, &data, &len) == PZ_OK && len == sizeof msg && !memcmp(data, msg, len), "read back");
    free(data);
    CHECK(pz_write_file_atomic(path, "x", 1) == PZ_OK, "overwrite");
    CHECK(pz_read_file(path, &data, &len) == PZ_OK && len == 1 && data[0] == 'x', "overwritten whole");
    free(data);
    snprintf(path, sizeof path, "%s/file.gz", dir);
    gzFile g = gzopen(path, "wb");
    gzwrite(g, msg, sizeof msg);
    gzclose(g);
    CHECK(pz_read_file(path, &data, &len) == PZ_OK && len == sizeof msg && !memcmp(data, msg, len), "gzip read");
    free(data);
    snprintf(path, sizeof path, "%s/missing", dir);
    CHECK(pz_read_file(path, &data, &len) == PZ_ERR_IO && strstr(pz_last_error(), "missing"), "missing file: %s",
          pz_last_error());
    snprintf(path, sizeof path, "%s/no/such/dir/f", dir);
    CHECK(pz_write_file_atomic(path, "x", 1) == PZ_ERR_IO, "write into a missing dir fails");
    snprintf(sub, sizeof sub, "%s/a/b/c", dir);
    CHECK(pz_mkdir_p(sub) == PZ_OK && access(sub, W_OK) == 0, "mkdir -p");
    CHECK(pz_mkdir_p(sub) == PZ_OK, "mkdir -p of an existing dir");

    /* metrics: jsonl and csv with the same records */
    pz_metrics m;
    CHECK(pz_metrics_open(&m, dir, "steps", 1) == PZ_OK, "%s", pz_last_error());
    pz_field f1[] = {PZ_NUM("step", 1), PZ_NUM("loss", 0.5), PZ_STR("codec", "q4")};
    pz_field f2[] = {PZ_NUM("step", 2), PZ_NUM("loss", 0.25), PZ_STR("codec", "q4")};
    pz_metrics_write(&m, f1, 3);
    pz_metrics_write(&m, f2, 3);
    pz_metrics_close(&m);
    snprintf(path, sizeof path, "%s/steps.csv", dir);
    CHECK(pz_read_file(path, &data, &len) == PZ_OK, "csv exists");
    CHECK(len == strlen("step,loss,codec\n1,0.5,q4\n2,0.25,q4\n") &&
              !memcmp(data, "step,loss,codec\n1,0.5,q4\n2,0.25,q4\n", len), "csv content: %.*s", (int)len, data);
    free(data);
    CHECK(pz_metrics_open(&m, dir, "steps", 0) == PZ_OK, "%s", pz_last_error());
    pz_field f3[] = {PZ_NUM("step", 1), PZ_NUM("loss", 1.0 / 3), PZ_STR("note", "a \"quoted\"\nline"),
                     PZ_NUM("lr", 0.1f), PZ_NUM("tiny", 4e-7f), PZ_NUM("none", NAN), PZ_NUM("big", 3.0e38f)};
    pz_metrics_write(&m, f3, 7);
    pz_metrics_close(&m);
    snprintf(path, sizeof path, "%s/steps.jsonl", dir);
    CHECK(pz_read_file(path, &data, &len) == PZ_OK, "jsonl exists");
    /* the shortest form that reads back as the same float: 0.1, not
     * 0.100000001; a value that does not exist is null */
    const char *want = "{\"step\": 1, \"loss\": 0.33333333, \"note\": \"a \\\"quoted\\\"\\nline\", \"lr\": 0.1, "
                       "\"tiny\": 4e-07, \"none\": null, \"big\": 3e+38}\n";
    CHECK(len == strlen(want) && !memcmp(data, want, len), "jsonl content: %.*s", (int)len, data);
    free(data);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0, "cleanup");
}

int main(void) {
    test_rng();
    test_io();
    double v[] = {5, 1, 4, 2, 3};
    CHECK(pz_median(v, 5) == 3, "odd median");
    double w[] = {4, 1, 3, 2};
    CHECK(pz_median(w, 4) == 2.5, "even median");
    CHECK(pz_fail(PZ_ERR_IO, "file '%s' gone", "x.bin") == PZ_ERR_IO && !strcmp(pz_last_error(), "file 'x.bin' gone"),
          "error message kept");
    CHECK(!strcmp(pz_status_name(PZ_ERR_FORMAT), "PZ_ERR_FORMAT"), "status names");
    pz_fail(PZ_ERR_ARG, "%s: %s", "--flag", pz_last_error()); /* context added to the last message */
    CHECK(!strcmp(pz_last_error(), "--flag: file 'x.bin' gone"), "adding context: %s", pz_last_error());
    TEST_DONE();
}
