/* test_gpt_train.c — a small GPT learns text: one block of width 32 over
 * 16-byte windows of a repeated verse, AdamW, 200 steps. Its held-out loss
 * must fall from about ln 256 to well below (0.6 x) the text's unigram entropy
 * (what a model that ignores context can reach), and the same seed must
 * give the same losses bit for bit. */
#include "cli/xalloc.h"
#include "../test.h"
#include "data/data.h"
#include "nn/nn.h"

#include <unistd.h>

static const char verse[] = "In the beginning God created the heaven and the earth. And the earth was without form, "
                            "and void; and darkness was upon the face of the deep. ";

/* the entropy (nats) of the byte distribution of text */
static double unigram(const pz_dataset *d) {
    double count[256] = {0}, n = 0;
    for (int64_t i = 0; i < d->n * d->tokens; i++) count[d->y[i]]++, n++;
    double h = 0;
    for (int k = 0; k < 256; k++)
        if (count[k] > 0) h -= count[k] / n * log(count[k] / n);
    return h;
}

static double run(const pz_dataset *tr, const pz_dataset *va, double *first_loss) {
    pz_model m;
    CHECK(pz_model_gpt(&m, 1, 32, 2, 16, 16, 256, 8, 5) == PZ_OK, "%s", pz_last_error());
    pz_optim o = {.beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.01f};
    CHECK(pz_optim_init(&o, PZ_OPT_ADAMW, m.n_params) == PZ_OK, "optimizer");
    pz_loader l;
    CHECK(pz_loader_init(&l, tr, 8, 1, (pz_augment){0}, 9) == PZ_OK, "loader");
    double loss, acc;
    pz_evaluate(&m, va->x, va->y, va->n, first_loss, &acc);
    for (int step = 0, epoch = 0; step < 200; epoch++) {
        pz_loader_start_epoch(&l, epoch);
        int B;
        while (step < 200 && (B = pz_loader_next(&l)) > 0) pz_train_step(&m, &o, 1e-2f, l.x, l.y, B, NULL), step++;
    }
    pz_evaluate(&m, va->x, va->y, va->n, &loss, &acc);
    pz_loader_free(&l);
    pz_optim_free(&o);
    pz_model_free(&m);
    return loss;
}

int main(void) {
    pz_set_threads(2);
    char path[] = "/tmp/pz-verse-XXXXXX";
    const int fd = mkstemp(path);
    CHECK(fd >= 0, "temp file");
    for (int i = 0; i < 40; i++) CHECK(write(fd, verse, sizeof verse - 1) == (ssize_t)(sizeof verse - 1), "write");
    close(fd);
    pz_dataset tr, va;
    CHECK(pz_load_text(&tr, &va, path, "verse", 16) == PZ_OK, "%s", pz_last_error());
    const double h = unigram(&tr);
    double first, first2;
    const double loss = run(&tr, &va, &first);
    printf("held-out loss %.3f -> %.3f nats (unigram entropy %.3f, uniform %.3f)\n", first, loss, h, log(256.0));
    CHECK(first > 5.0, "an untrained model's loss is near ln 256: %.3f", first);
    CHECK(loss < 0.6 * h, "after 200 steps the held-out loss %.3f is not below 0.6 x the unigram entropy %.3f", loss, h);
    const double again = run(&tr, &va, &first2);
    CHECK(again == loss && first2 == first, "the same seed gives other losses: %.9g vs %.9g", again, loss);
    pz_dataset_free(&tr), pz_dataset_free(&va);
    unlink(path);
    TEST_DONE();
}
