/* SPDX-License-Identifier: MIT */
/* test_gpt_train.c — a small GPT learns text: one block of width 32 over
 * 16-byte windows of a repeated verse, AdamW, 200 steps. Its held-out loss
 * must fall from about ln 256 to well below (0.6 x) the text's unigram entropy
 * (what a model that ignores context can reach), and the same seed must
 * give the same losses bit for bit. Generation: the sampler's distribution,
 * a short prompt seeing what the whole window sees, the same seed the same
 * text. */
#include "tool/xalloc.h"
#include "../test.h"
#include "data/data.h"
#include "nn/nn.h"

#include <math.h>
#include <string.h>
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

/* greedy and sampled continuations of the verse's first 16 bytes */
static char greedy[64], sampled[64];

static void generate(pz_model *m, char *out, float temperature, int top_k, uint64_t seed) {
    int32_t tok[16 + 48];
    for (int i = 0; i < 16; i++) tok[i] = (uint8_t)verse[i];
    CHECK(pz_model_generate(m, tok, 16, 48, temperature, top_k, seed, NULL, NULL) == PZ_OK, "%s", pz_last_error());
    for (int i = 0; i < 48; i++) {
        CHECK(tok[16 + i] >= 0 && tok[16 + i] < 256, "generated token %d", tok[16 + i]);
        out[i] = (char)tok[16 + i];
    }
    out[48] = 0;
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
    generate(&m, greedy, 0.0f, 0, 1);
    char other[64];
    generate(&m, other, 1.0f, 1, 7); /* top-k 1 is greedy at any temperature */
    CHECK(!strcmp(other, greedy), "top-k 1 gave '%s', greedy '%s'", other, greedy);
    generate(&m, sampled, 0.7f, 20, 3);
    generate(&m, other, 0.7f, 20, 3);
    CHECK(!strcmp(other, sampled), "the same seed sampled '%s' then '%s'", sampled, other);
    /* a prompt shorter than the window is padded after its end, which the
     * causal model never sees: the next token from every prefix of a
     * held-out window is the argmax of that window's logits at the prefix's
     * last position */
    float full[16 * 256];
    pz_seq_forward(&m.net, 0, m.net.n, va->x, 1, 0);
    memcpy(full, pz_model_logits(&m), sizeof full);
    for (int w = 1; w <= 16; w++) {
        int32_t tok[17];
        for (int i = 0; i < w; i++) tok[i] = (int32_t)va->x[i];
        CHECK(pz_model_generate(&m, tok, w, 1, 0.0f, 0, 1, NULL, NULL) == PZ_OK, "%s", pz_last_error());
        int best = 0;
        for (int k = 1; k < 256; k++)
            if (full[(w - 1) * 256 + k] > full[(w - 1) * 256 + best]) best = k;
        CHECK(tok[w] == best, "prefix of %d: generated %d, the window's argmax is %d", w, tok[w], best);
    }
    int32_t bad[2] = {300, 0};
    CHECK(pz_model_generate(&m, bad, 1, 1, 1.0f, 0, 1, NULL, NULL) == PZ_ERR_ARG, "a token outside the vocabulary is refused");
    pz_loader_free(&l);
    pz_optim_free(&o);
    pz_model_free(&m);
    return loss;
}

/* pz_sample_logits draws from softmax(logits / temperature) over the top k */
static void sampler(void) {
    const float logits[4] = {logf(0.5f), logf(0.3f), logf(0.2f), -INFINITY};
    float work[4];
    pz_rng rng;
    pz_rng_seed(&rng, 11);
    const int n = 40000;
    int count[4] = {0};
    for (int i = 0; i < n; i++) count[pz_sample_logits(logits, 4, 1.0f, 0, &rng, work)]++;
    CHECK(fabs(count[0] / (double)n - 0.5) < 0.01 && fabs(count[1] / (double)n - 0.3) < 0.01 && count[3] == 0,
          "temperature 1: %d %d %d %d of %d", count[0], count[1], count[2], count[3], n);
    int top2[4] = {0};
    for (int i = 0; i < n; i++) top2[pz_sample_logits(logits, 4, 1.0f, 2, &rng, work)]++;
    CHECK(top2[2] == 0 && top2[3] == 0 && fabs(top2[0] / (double)n - 0.625) < 0.01, "top-k 2: %d %d %d", top2[0], top2[1], top2[2]);
    int hot[4] = {0}; /* temperature 2: p^(1/2) normalised */
    for (int i = 0; i < n; i++) hot[pz_sample_logits(logits, 4, 2.0f, 0, &rng, work)]++;
    const double z = sqrt(0.5) + sqrt(0.3) + sqrt(0.2);
    CHECK(fabs(hot[0] / (double)n - sqrt(0.5) / z) < 0.01 && fabs(hot[2] / (double)n - sqrt(0.2) / z) < 0.01,
          "temperature 2: %d %d %d", hot[0], hot[1], hot[2]);
    CHECK(pz_sample_logits(logits, 4, 0.0f, 0, &rng, work) == 0, "temperature 0 takes the most likely");
}

int main(void) {
    sampler();
    pz_set_threads(2);
    char path[] = "/tmp/pz-verse-XXXXXX";
    const int fd = mkstemp(path);
    CHECK(fd >= 0, "temp file");
    for (int i = 0; i < 40; i++) CHECK(write(fd, verse, sizeof verse - 1) == (ssize_t)(sizeof verse - 1), "write");
    close(fd);
    pz_dataset tr, va;
    CHECK(pz_load_text(&tr, &va, path, "verse", 16, NULL) == PZ_OK, "%s", pz_last_error());
    const double h = unigram(&tr);
    double first, first2;
    const double loss = run(&tr, &va, &first);
    printf("held-out loss %.3f -> %.3f nats (unigram entropy %.3f, uniform %.3f)\n", first, loss, h, log(256.0));
    printf("greedy:  %.16s|%s\nsampled: %.16s|%s\n", verse, greedy, verse, sampled);
    CHECK(first > 5.0, "an untrained model's loss is near ln 256: %.3f", first);
    CHECK(loss < 0.6 * h, "after 200 steps the held-out loss %.3f is not below 0.6 x the unigram entropy %.3f", loss, h);
    const double again = run(&tr, &va, &first2);
    CHECK(again == loss && first2 == first, "the same seed gives other losses: %.9g vs %.9g", again, loss);
    pz_dataset_free(&tr), pz_dataset_free(&va);
    unlink(path);
    TEST_DONE();
}
