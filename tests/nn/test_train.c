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
    pz_run_config c;
    pz_run_config_default(&c);
    c.model = "lenet5";
    c.data = have_fmnist ? "fashion-mnist" : "synthetic";
    c.limit_train = 3000;
    c.limit_test = 1000;
    c.epochs = 3;
    c.batch = 64;
    c.lr = 0.05f;
    c.threads = 2;
    c.out_dir = dir;
    c.log_every = 5;
    pz_run_result r1, r2;
    CHECK(pz_run_train(&c, &r1, NULL, NULL) == PZ_OK, "%s", pz_last_error());
    printf("lenet5 on %s (3000 examples, 3 epochs): test accuracy %.2f%%\n", c.data, 100 * r1.final_test_accuracy);
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
    c.out_dir = NULL;
    c.epochs = 1;
    CHECK(pz_run_train(&c, &r1, NULL, NULL) == PZ_OK, "%s", pz_last_error());
    CHECK(pz_run_train(&c, &r2, NULL, NULL) == PZ_OK, "%s", pz_last_error());
    CHECK(r1.final_train_loss == r2.final_train_loss && r1.final_test_loss == r2.final_test_loss,
          "runs differ: %.9g vs %.9g", r1.final_train_loss, r2.final_train_loss);
    c.seed = 2;
    CHECK(pz_run_train(&c, &r2, NULL, NULL) == PZ_OK, "%s", pz_last_error());
    CHECK(r1.final_train_loss != r2.final_train_loss, "another seed gives another run");

    /* configuration errors name the setting */
    c.epochs = 0;
    CHECK(pz_run_train(&c, &r2, NULL, NULL) == PZ_ERR_ARG && strstr(pz_last_error(), "--epochs"), "%s", pz_last_error());
    c.epochs = 1, c.model = "resnet1000";
    CHECK(pz_run_train(&c, &r2, NULL, NULL) == PZ_ERR_ARG && strstr(pz_last_error(), "resnet1000"), "%s", pz_last_error());
    c.model = "mlp", c.data = "fashion-mnist", c.data_dir = "/nonexistent";
    CHECK(pz_run_train(&c, &r2, NULL, NULL) == PZ_ERR_IO && strstr(pz_last_error(), "/nonexistent"), "%s", pz_last_error());

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
