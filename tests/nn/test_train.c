/* SPDX-License-Identifier: MIT */
/* test_train.c — training learns and is reproducible: lenet5 on a slice of
 * Fashion-MNIST (synthetic data if the dataset is not installed) must reach
 * far above chance; the same seed and thread count give bit-identical
 * results; the run directory holds parseable metrics. Also the public
 * network API. */
#include "../test.h"
#include "pipezip/pipezip.h"

#include <unistd.h>

static int count_lines(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int n = 0, c;
    while ((c = fgetc(f)) != EOF) n += c == '\n';
    fclose(f);
    return n;
}

int main(void) {
    const int have_fmnist = access("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz", R_OK) == 0;
    char dir[] = "/tmp/pz-test-train-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    /* a run's settings through the one door: text or numbers, checked at once */
    pz_run_plan *c, *d;
    CHECK(pz_run_plan_create(&c) == PZ_OK, "%s", pz_last_error());
    const char *data = have_fmnist ? "fashion-mnist" : "synthetic";
    CHECK(pz_run_plan_set(c, PZ_SET_MODEL, "lenet5") == PZ_OK && pz_run_plan_set(c, PZ_SET_DATA, data) == PZ_OK &&
              pz_run_plan_set_number(c, PZ_SET_LIMIT_TRAIN, 3000) == PZ_OK && pz_run_plan_set(c, PZ_SET_LIMIT_TEST, "1000") == PZ_OK &&
              pz_run_plan_set_number(c, PZ_SET_EPOCHS, 3) == PZ_OK && pz_run_plan_set_number(c, PZ_SET_BATCH, 64) == PZ_OK &&
              pz_run_plan_set(c, PZ_SET_LR, "0.05") == PZ_OK && pz_run_plan_set_number(c, PZ_SET_THREADS, 2) == PZ_OK &&
              pz_run_plan_set_number(c, PZ_SET_LOG_EVERY, 5) == PZ_OK,
          "%s", pz_last_error());
    CHECK(pz_run_plan_create(&d) == PZ_OK, "%s", pz_last_error()); /* the same, without a run directory */
    for (int id = 0; id < PZ_SET_COUNT; id++)
        if (pz_run_plan_is_set(c, (pz_setting)id)) CHECK(pz_run_plan_set(d, (pz_setting)id, pz_run_plan_text(c, (pz_setting)id)) == PZ_OK, "copy");
    CHECK(pz_run_plan_set(c, PZ_SET_OUT, dir) == PZ_OK, "%s", pz_last_error());
    pz_run_result r1, r2;
    CHECK(pz_run_train(c, &r1, NULL, NULL) == PZ_OK, "%s", pz_last_error());
    printf("lenet5 on %s (3000 examples, 3 epochs): test accuracy %.2f%%\n", data, 100 * r1.final_test_accuracy);
    /* chance is 10%; lenet5 on 3000 Fashion-MNIST examples reaches ~75% */
    CHECK(r1.final_test_accuracy > 0.65, "learned only %.2f%%", 100 * r1.final_test_accuracy);
    CHECK(r1.final_train_loss < 1.0, "train loss %g", r1.final_train_loss);
    char path[300];
    snprintf(path, sizeof path, "%s/epochs.jsonl", dir);
    CHECK(count_lines(path) == 3, "3 epoch records");
    snprintf(path, sizeof path, "%s/steps.jsonl", dir);
    CHECK(count_lines(path) >= 3000 / 64 * 3 / 5, "step records: %d", count_lines(path));
    snprintf(path, sizeof path, "%s/summary.json", dir);
    CHECK(access(path, R_OK) == 0, "summary.json written");
    snprintf(path, sizeof path, "%s/config.json", dir);
    CHECK(access(path, R_OK) == 0, "config.json written");

    /* determinism: same seed and threads, same numbers to the bit */
    CHECK(pz_run_plan_set_number(d, PZ_SET_EPOCHS, 1) == PZ_OK, "%s", pz_last_error());
    CHECK(pz_run_train(d, &r1, NULL, NULL) == PZ_OK, "%s", pz_last_error());
    CHECK(pz_run_train(d, &r2, NULL, NULL) == PZ_OK, "%s", pz_last_error());
    CHECK(r1.final_train_loss == r2.final_train_loss && r1.final_test_loss == r2.final_test_loss,
          "runs differ: %.9g vs %.9g", r1.final_train_loss, r2.final_train_loss);
    CHECK(pz_run_plan_set(d, PZ_SET_SEED, "2") == PZ_OK, "%s", pz_last_error());
    CHECK(pz_run_train(d, &r2, NULL, NULL) == PZ_OK, "%s", pz_last_error());
    CHECK(r1.final_train_loss != r2.final_train_loss, "another seed gives another run");

    /* settings errors name the setting, at the door; a refused value leaves the setting as it was */
    CHECK(pz_run_plan_set_number(d, PZ_SET_EPOCHS, 0) == PZ_ERR_ARG && strstr(pz_last_error(), "--epochs must be in 1..100000"), "%s",
          pz_last_error());
    CHECK(pz_run_plan_set(d, PZ_SET_MODEL, "resnet1000") == PZ_ERR_ARG && strstr(pz_last_error(), "resnet1000"), "%s", pz_last_error());
    CHECK(!strcmp(pz_run_plan_text(d, PZ_SET_MODEL), "lenet5"), "the refused model left lenet5: %s", pz_run_plan_text(d, PZ_SET_MODEL));
    CHECK(pz_run_plan_set(d, PZ_SET_METRICS, "xml") == PZ_ERR_ARG && strstr(pz_last_error(), "--metrics 'xml' is not one of: jsonl|csv"),
          "%s", pz_last_error());
    CHECK(pz_run_plan_set(d, PZ_SET_FWD, "q4,2=q9") == PZ_ERR_ARG && strstr(pz_last_error(), "--fwd: codec spec 'q9'"), "%s", pz_last_error());
    CHECK(pz_run_plan_set(d, PZ_SET_LINK_BANDWIDTH, "fast") == PZ_ERR_ARG && strstr(pz_last_error(), "fast"), "%s", pz_last_error());
    CHECK(pz_run_plan_set(d, PZ_SET_FLIP, "maybe") == PZ_ERR_ARG && strstr(pz_last_error(), "--flip expects on or off"), "%s", pz_last_error());
    CHECK(pz_setting_by_name("link-bandwidth") == PZ_SET_LINK_BANDWIDTH && pz_setting_by_name("warmup_epochs") == PZ_SET_WARMUP &&
              pz_setting_by_name("nope") == -1 && !strcmp(pz_setting_name(PZ_SET_GRAD_MASK), "grad-mask"),
          "settings by name");
    /* rules across settings: at the check, naming the flags */
    CHECK(pz_run_plan_set(d, PZ_SET_FWD, "q2") == PZ_OK, "%s", pz_last_error());
    CHECK(pz_run_plan_check(d) == PZ_ERR_ARG && strstr(pz_last_error(), "--fwd q2 acts on the boundaries"), "%s", pz_last_error());
    CHECK(pz_run_train(d, &r2, NULL, NULL) == PZ_ERR_ARG, "pz_run_train checks too");
    pz_run_plan_free(d);
    CHECK(pz_run_plan_create(&d) == PZ_OK, "%s", pz_last_error());
    CHECK(pz_run_plan_set(d, PZ_SET_MODEL, "mlp") == PZ_OK && pz_run_plan_set(d, PZ_SET_DATA_DIR, "/nonexistent") == PZ_OK, "%s",
          pz_last_error());
    CHECK(pz_run_train(d, &r2, NULL, NULL) == PZ_ERR_IO && strstr(pz_last_error(), "/nonexistent"), "%s", pz_last_error());
    CHECK(pz_run_plan_set(d, PZ_SET_DATA, "kjv") == PZ_OK && pz_run_plan_check(d) == PZ_ERR_ARG && strstr(pz_last_error(), "language model"),
          "%s", pz_last_error());
    pz_run_plan_free(d);
    pz_run_plan_free(c);
    /* a program's mistakes are errors, not crashes */
    CHECK(pz_run_plan_set(NULL, PZ_SET_EPOCHS, "3") == PZ_ERR_ARG && pz_run_train(NULL, &r2, NULL, NULL) == PZ_ERR_ARG &&
              pz_run_plan_check(NULL) == PZ_ERR_ARG && pz_run_plan_text(NULL, PZ_SET_MODEL) == NULL && !pz_run_plan_is_set(NULL, PZ_SET_MODEL),
          "NULL plans are refused");
    pz_run_plan_free(NULL);

    /* the public network API */
    pz_net *net;
    CHECK(pz_net_create(&net, "mlp", 1, 8, 8, 3, 16, 1) == PZ_OK, "%s", pz_last_error());
    CHECK(pz_net_num_params(net) == 64 * 256 + 256 + 256 * 128 + 128 + 128 * 3 + 3, "mlp parameters");
    float x[16 * 64], logits[16 * 3], first = 0, loss = 0;
    int32_t y[16];
    for (int i = 0; i < 16 * 64; i++) x[i] = (float)((i * 37) % 11) / 11.0f - 0.5f;
    for (int b = 0; b < 16; b++) y[b] = b % 3;
    for (int s = 0; s < 30; s++) {
        CHECK(pz_net_train_step(net, x, y, 16, 0.05f, &loss) == PZ_OK, "%s", pz_last_error());
        if (s == 0) first = loss;
    }
    CHECK(loss < 0.5f * first, "memorising 16 examples: loss %g -> %g", first, loss);
    CHECK(pz_net_forward(net, x, 16, logits) == PZ_OK, "forward");
    CHECK(pz_net_forward(net, x, 17, logits) == PZ_ERR_ARG, "batch above batch_max rejected");
    y[3] = 7;
    CHECK(pz_net_train_step(net, x, y, 16, 0.05f, &loss) == PZ_ERR_ARG && strstr(pz_last_error(), "label 7"), "%s",
          pz_last_error());
    pz_net_free(net);
    CHECK(pz_net_create(&net, "vgg", 1, 8, 8, 3, 16, 1) == PZ_ERR_ARG && net == NULL, "unknown preset");

    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0, "cleanup");
    TEST_DONE();
}
