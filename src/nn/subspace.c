/* SPDX-License-Identifier: MIT */
/* subspace.c — a GPT's subspace (Protocol Models, arXiv 2506.01260; nn.h's
 * pz_subspace): its basis and fixed embeddings from a seed, and the maps
 * between the residual stream (dim per position) and its coefficients (k).
 *
 * The basis is modified Gram-Schmidt, twice, over k standard-normal columns
 * in double precision, then rounded: the same bits on every machine that
 * rounds IEEE doubles, so every stage of a pipeline builds the same U. */
#include "nn/nn.h"
#include "kernels/blas.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

pz_status pz_subspace_create(pz_subspace **out, int k, int dim, int vocab, int context, uint64_t seed) {
    *out = NULL;
    if (k < 1 || k > dim || vocab < 2 || context < 1)
        return pz_fail(PZ_ERR_ARG, "a subspace of %d dimensions in a width of %d (vocabulary %d, context %d) is not valid", k, dim,
                       vocab, context);
    pz_subspace *s = calloc(1, sizeof *s);
    double *q = calloc((size_t)dim * (size_t)k, sizeof *q);
    if (s) {
        s->k = k, s->dim = dim, s->vocab = vocab, s->context = context;
        s->basis = pz_floats_try((size_t)dim * (size_t)k);
        s->tok = pz_floats_try((size_t)vocab * (size_t)dim);
        s->pos = pz_floats_try((size_t)context * (size_t)dim);
    }
    if (!s || !q || !s->basis || !s->tok || !s->pos) {
        free(q);
        pz_subspace_free(s);
        return pz_fail(PZ_ERR_NOMEM, "out of memory for a subspace of %d in %d", k, dim);
    }
    pz_rng root, r;
    pz_rng_seed(&root, seed);
    r = pz_rng_split(&root, 0x5375627370616365ull); /* "Subspace" */
    for (int j = 0; j < k; j++)
        for (int i = 0; i < dim; i++) q[(size_t)i * k + j] = (double)pz_rng_normal(&r);
    for (int pass = 0; pass < 2; pass++)
        for (int j = 0; j < k; j++) {
            for (int p = 0; p < j; p++) {
                double d = 0;
                for (int i = 0; i < dim; i++) d += q[(size_t)i * k + j] * q[(size_t)i * k + p];
                for (int i = 0; i < dim; i++) q[(size_t)i * k + j] -= d * q[(size_t)i * k + p];
            }
            double n = 0;
            for (int i = 0; i < dim; i++) n += q[(size_t)i * k + j] * q[(size_t)i * k + j];
            n = 1.0 / sqrt(n);
            for (int i = 0; i < dim; i++) q[(size_t)i * k + j] *= n;
        }
    for (size_t i = 0; i < (size_t)dim * (size_t)k; i++) s->basis[i] = (float)q[i];
    free(q);
    pz_rng e = pz_rng_split(&root, 0x456d62656473ull); /* "Embeds" */
    for (size_t i = 0; i < (size_t)vocab * (size_t)dim; i++) s->tok[i] = 0.02f * pz_rng_normal(&e);
    for (size_t i = 0; i < (size_t)context * (size_t)dim; i++) s->pos[i] = 0.02f * pz_rng_normal(&e);
    *out = s;
    return PZ_OK;
}

void pz_subspace_free(pz_subspace *s) {
    if (!s) return;
    free(s->basis);
    free(s->tok);
    free(s->pos);
    free(s);
}

void pz_subspace_expand(const pz_subspace *s, const float *c, float *y, int64_t rows, float beta) {
    if (rows < 1) return;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, s->dim, s->k, 1.0f, c, s->k, s->basis, s->k, beta, y, s->dim);
}

void pz_subspace_reduce(const pz_subspace *s, const float *y, float *c, int64_t rows, float beta) {
    if (rows < 1) return;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, s->k, s->dim, 1.0f, y, s->dim, s->basis, s->k, beta, c, s->k);
}

/* ids are exact floats checked by the embedding (the model's first stage)
 * or by the receiving stage (META); a stray one is clamped, never read out
 * of bounds */
static int token_at(const pz_subspace *s, float id) {
    const int v = (int)id;
    return v < 0 ? 0 : v >= s->vocab ? s->vocab - 1 : v;
}

void pz_subspace_add_base(const pz_subspace *s, const float *tok, int B, int T, float *x) {
    const int C = s->dim;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            float *row = x + ((size_t)b * T + t) * C;
            const float *te = s->tok + (size_t)token_at(s, tok[(size_t)b * T + t]) * C, *pe = s->pos + (size_t)t * C;
            for (int i = 0; i < C; i++) row[i] += te[i] + pe[i];
        }
}

void pz_subspace_project(const pz_subspace *s, const float *x, const float *tok, int B, int T, float *scratch, float *c) {
    const int C = s->dim;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            const size_t r = (size_t)b * T + t;
            const float *te = s->tok + (size_t)token_at(s, tok[r]) * C, *pe = s->pos + (size_t)t * C;
            for (int i = 0; i < C; i++) scratch[r * C + i] = x[r * C + i] - (te[i] + pe[i]);
        }
    pz_subspace_reduce(s, scratch, c, (int64_t)B * T, 0.0f);
}

void pz_subspace_rebuild(const pz_subspace *s, const float *c, const float *tok, int B, int T, float *x) {
    pz_subspace_expand(s, c, x, (int64_t)B * T, 0.0f);
    pz_subspace_add_base(s, tok, B, T, x);
}
