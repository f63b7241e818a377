/* SPDX-License-Identifier: MIT */
/* subspace.c — a GPT's subspace (Protocol Models, arXiv 2506.01260; nn.h's
 * pz_subspace): its basis from a seed, and the maps between the residual
 * stream (dim per position) and its coefficients (k).
 *
 * The basis is modified Gram-Schmidt, twice, over k standard-normal columns
 * in double precision, then rounded: the same bits on every machine that
 * rounds IEEE doubles, so every stage of a pipeline builds the same U. */
#include "nn/nn.h"
#include "kernels/blas.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

pz_status pz_subspace_create(pz_subspace **out, int k, int dim, uint64_t seed) {
    *out = NULL;
    if (k < 1 || k > dim) return pz_fail(PZ_ERR_ARG, "a subspace of %d dimensions in a width of %d is not valid", k, dim);
    pz_subspace *s = calloc(1, sizeof *s);
    double *q = calloc((size_t)dim * (size_t)k, sizeof *q);
    if (s) {
        s->k = k, s->dim = dim;
        s->basis = pz_floats_try((size_t)dim * (size_t)k);
    }
    if (!s || !q || !s->basis) {
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
    *out = s;
    return PZ_OK;
}

void pz_subspace_free(pz_subspace *s) {
    if (!s) return;
    free(s->basis);
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

