/* SPDX-License-Identifier: MIT */
/* sample.c — text from a trained run: the model its config.json names, the
 * weights of its newest (or a chosen) checkpoint, gathered from every
 * stage's file, and the run's tokenizer (bytes, or its tokenizer.txt). */
#include "run.h"
#include "records.h"
#include "nn/nn.h"
#include "data/data.h"
#include "pipe/pipe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* the model's parameters from DIR/checkpoint/epoch-E/stage-*.bin, which
 * must cover them all */
static pz_status load_weights(pz_model *m, const char *ckpt) {
    int64_t covered = 0;
    int files = 0;
    for (int i = 0; i < PZ_MAX_STAGES; i++) {
        char path[4300];
        snprintf(path, sizeof path, "%.4200s/stage-%d.bin", ckpt, i);
        if (access(path, F_OK) != 0) break;
        int64_t p0, p1;
        PZ_TRY(pz_checkpoint_read_params(path, m, &p0, &p1));
        if (p0 != covered)
            return pz_fail(PZ_ERR_FORMAT, "'%s' holds parameters from %lld, the stages before it end at %lld", path,
                           (long long)p0, (long long)covered);
        covered = p1, files++;
    }
    if (files == 0) return pz_fail(PZ_ERR_IO, "%s holds no stage checkpoint (stage-0.bin)", ckpt);
    if (covered != m->n_params)
        return pz_fail(PZ_ERR_IO,
                       "%s holds the parameters of stages 0-%d only (%lld of %lld): the others were saved elsewhere (a "
                       "split-learning server keeps its stages under its --checkpoint-dir)",
                       ckpt, files - 1, (long long)covered, (long long)m->n_params);
    return PZ_OK;
}

/* each new token's bytes to the caller's emit */
typedef struct {
    const pz_tokenizer *tok;
    void (*emit)(const uint8_t *bytes, size_t n, void *ctx);
    void *ctx;
} emitter;

static void emit_token(int32_t token, void *ctx) {
    const emitter *e = ctx;
    size_t n;
    const uint8_t *b = pz_tokenizer_token(e->tok, token, &n);
    if (e->emit && b) e->emit(b, n, e->ctx);
}

pz_status pz_run_sample(const pz_sample_config *c, void (*emit)(const uint8_t *bytes, size_t n, void *ctx), void *ctx,
                        int32_t **out, int *n_out) {
    if (!c->run_dir || !*c->run_dir) return pz_fail(PZ_ERR_ARG, "sample: no run directory given (--run DIR)");
    if (c->tokens < 0 || c->tokens > 1000000) return pz_fail(PZ_ERR_ARG, "sample: --tokens %d is outside 0..1000000", c->tokens);
    char path[4300], model[64] = "", data[4200] = "", tokenizer[64] = "bytes";
    snprintf(path, sizeof path, "%s/config.json", c->run_dir);
    char *cfg = pz_slurp(path);
    if (!cfg) return pz_fail(PZ_ERR_IO, "'%s' is not a pipezip run directory: it has no readable config.json", c->run_dir);
    const int ok = pz_json_str(cfg, "model", model, sizeof model) && pz_json_str(cfg, "data", data, sizeof data);
    pz_json_str(cfg, "tokenizer", tokenizer, sizeof tokenizer); /* runs before BPE have none: bytes */
    /* a subspace model's basis is made from the run's seed (runs before subspaces have neither key: 0) */
    double subspace = 0, seed_num = 0, project = 0;
    char seed_text[32] = "", cut_after[256] = "";
    pz_json_num(cfg, "subspace", &subspace);
    pz_json_num(cfg, "project", &project); /* --project K: its pairs sit at the run's cuts */
    pz_json_str(cfg, "cut_after", cut_after, sizeof cut_after);
    if (!pz_json_str(cfg, "seed", seed_text, sizeof seed_text) && pz_json_num(cfg, "seed", &seed_num))
        snprintf(seed_text, sizeof seed_text, "%.0f", seed_num);
    free(cfg);
    if (!ok) return pz_fail(PZ_ERR_FORMAT, "'%s' names no model and data", path);
    /* the run's settings as values, once: config.json is this door's edge */
    pz_model_spec spec;
    int vocab;
    if (pz_model_spec_parse(&spec, model)) return pz_fail(PZ_ERR_FORMAT, "%s: %s", path, pz_last_error());
    spec.subspace = (int)subspace;
    spec.project = spec.subspace ? (int)project : 0;
    if (spec.project) {
        char cuts[16][64];
        int n = 0;
        for (char *t = strtok(cut_after, ","); t && n < 16; t = strtok(NULL, ",")) snprintf(cuts[n++], sizeof cuts[0], "%s", t);
        spec.project_after = pz_model_cut_blocks(&spec, (const char(*)[64])cuts, n);
    }
    const uint64_t run_seed = strtoull(seed_text, NULL, 10);
    PZ_TRY(pz_tokenizer_spec(tokenizer, &vocab));
    if (!pz_model_spec_is_sequence(&spec))
        return pz_fail(PZ_ERR_ARG, "run %s trained %s on %s, not a language model: sample needs a gpt-* run", c->run_dir,
                       model, data);
    int epoch = c->epoch;
    if (epoch <= 0) {
        snprintf(path, sizeof path, "%s/checkpoint/latest.json", c->run_dir);
        char *t = pz_slurp(path);
        double e = 0;
        const int got = t && pz_json_num(t, "epoch", &e);
        free(t);
        if (!got || e < 1)
            return pz_fail(PZ_ERR_IO, "run %s has no checkpoint yet (%s): one is written at the end of every epoch",
                           c->run_dir, path);
        epoch = (int)e;
    }
    char ckpt[4300];
    snprintf(ckpt, sizeof ckpt, "%.4000s/checkpoint/epoch-%d", c->run_dir, epoch);
    if (access(ckpt, F_OK) != 0) return pz_fail(PZ_ERR_IO, "run %s has no checkpoint of epoch %d (%s)", c->run_dir, epoch, ckpt);

    const char *prompt = c->prompt && *c->prompt ? c->prompt : "\n";
    const size_t np = strlen(prompt);
    if (np > 1000000) return pz_fail(PZ_ERR_ARG, "sample: the prompt is longer than 1000000 bytes");
    pz_tokenizer tok; /* the run's tokens */
    PZ_TRY(pz_tokenizer_open(&tok, vocab, c->run_dir));
    vocab = tok.vocab;
    int32_t *ids = malloc((np + (size_t)c->tokens) * sizeof *ids); /* never more tokens than bytes */
    if (!ids) {
        pz_tokenizer_free(&tok);
        return pz_fail(PZ_ERR_NOMEM, "out of memory for %zu tokens", np + (size_t)c->tokens);
    }
    const int n_prompt = (int)pz_tokenizer_encode(&tok, (const uint8_t *)prompt, np, ids);

    pz_set_threads(c->threads);
    pz_model m;
    pz_status s = pz_model_build(&m, &spec, pz_shape_tokens(spec.context), vocab, 1, run_seed, 0, 1 << 30);
    if (!s) {
        if (!(s = load_weights(&m, ckpt))) {
            emitter e = {&tok, emit, ctx};
            s = pz_model_generate(&m, ids, n_prompt, c->tokens, c->temperature, c->top_k, c->seed, emit_token, &e);
        }
        pz_model_free(&m);
    }
    pz_tokenizer_free(&tok);
    if (!s && out) {
        *out = ids, *n_out = n_prompt + c->tokens;
        return PZ_OK;
    }
    free(ids);
    return s;
}
