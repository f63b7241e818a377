/* SPDX-License-Identifier: MIT */
/* generate.c — text from a language model: one token at a time, each from
 * the logits of the last position of a window of the newest tokens. The
 * model's input is a fixed T tokens; a shorter window is padded after its
 * end, which the causal attention never lets the real positions see. */
#include "nn.h"

#include <math.h>
#include <stdlib.h>

/* the k-th largest of v[0..n) (k from 1), by partial selection in tmp */
static float kth_largest(const float *v, int n, int k, float *tmp) {
    for (int i = 0; i < n; i++) tmp[i] = v[i];
    int lo = 0, hi = n - 1, want = k - 1; /* descending order position */
    while (lo < hi) {
        const float pivot = tmp[(lo + hi) / 2];
        int i = lo, j = hi;
        while (i <= j) {
            while (tmp[i] > pivot) i++;
            while (tmp[j] < pivot) j--;
            if (i <= j) {
                const float t = tmp[i];
                tmp[i] = tmp[j], tmp[j] = t;
                i++, j--;
            }
        }
        if (want <= j) hi = j;
        else if (want >= i) lo = i;
        else break;
    }
    return tmp[want];
}

int32_t pz_sample_logits(const float *logits, int V, float temperature, int top_k, pz_rng *rng, float *work) {
    int best = 0;
    for (int i = 1; i < V; i++)
        if (logits[i] > logits[best]) best = i;
    if (temperature <= 0.0f || top_k == 1) return best;
    const float floor = top_k > 0 && top_k < V ? kth_largest(logits, V, top_k, work) : -INFINITY;
    double total = 0.0;
    for (int i = 0; i < V; i++) {
        work[i] = logits[i] >= floor ? (float)exp((double)(logits[i] - logits[best]) / temperature) : 0.0f;
        total += work[i];
    }
    double u = (double)pz_rng_uniform(rng) * total, run = 0.0;
    int last = best;
    for (int i = 0; i < V; i++) {
        if (work[i] <= 0.0f) continue;
        run += work[i], last = i;
        if (u < run) return i;
    }
    return last; /* rounding left u at the very top */
}

pz_status pz_model_generate(pz_model *m, int32_t *tokens, int n_prompt, int n_new, float temperature, int top_k,
                            uint64_t seed, void (*emit)(int32_t token, void *ctx), void *ctx) {
    pz_seq *s = &m->net;
    if (s->in.rank != 1 || m->targets != s->in.d[0])
        return pz_fail(PZ_ERR_ARG, "model '%s' is not a language model: it cannot generate text", m->preset);
    if (n_prompt < 1) return pz_fail(PZ_ERR_ARG, "generation needs a prompt of at least one token");
    if (n_new < 0 || !(temperature >= 0.0f) || top_k < 0)
        return pz_fail(PZ_ERR_ARG, "generation: tokens %d, temperature %g and top-k %d must not be negative", n_new,
                       temperature, top_k);
    const int T = s->in.d[0], V = m->n_classes;
    for (int i = 0; i < n_prompt; i++)
        if (tokens[i] < 0 || tokens[i] >= V)
            return pz_fail(PZ_ERR_ARG, "prompt token %d is %d, outside the vocabulary of %d", i, tokens[i], V);
    float *x = calloc((size_t)T, sizeof *x), *work = malloc((size_t)V * sizeof *work);
    if (!x || !work) {
        free(x), free(work);
        return pz_fail(PZ_ERR_NOMEM, "out of memory generating text");
    }
    pz_rng rng;
    pz_rng_seed(&rng, seed);
    for (int n = n_prompt; n < n_prompt + n_new; n++) {
        const int w = n < T ? n : T, from = n - w;
        for (int t = 0; t < T; t++) x[t] = t < w ? (float)tokens[from + t] : 0.0f;
        pz_seq_forward(s, 0, s->n, x, 1, 0);
        tokens[n] = pz_sample_logits(pz_model_logits(m) + (size_t)(w - 1) * V, V, temperature, top_k, &rng, work);
        if (emit) emit(tokens[n], ctx);
    }
    free(x), free(work);
    return PZ_OK;
}
