/* SPDX-License-Identifier: MIT */
/* lowrank.c — the low-rank family (FORMAT.md "lowrank"): a tensor seen as a
 * matrix of tokens (rows: n / d_last) by features (columns: d_last) sent as
 * two factors, P (rows x r, orthonormal columns) and Q (columns x r), that
 * the receiver multiplies back: x_hat = P Q^T. The sender finds them by
 * PowerSGD's power iteration (Vogels et al. 2019): from a start S, P = X S
 * orthonormalized, Q = X^T P; with `warm` (the default) each frame starts
 * from the previous frame's Q, kept by the sender (the receiver keeps
 * nothing: a frame decodes on its own), so the factors track the tensor's
 * leading subspace across steps; `cold` starts from a seeded random S. */
#include "object.h"
#include "sparse.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

extern const codec_family codec_lowrank; /* listed in registry.c */

enum { LOWRANK_MAX_RANK = 4096, LOWRANK_MAX_ITERS = 16 };

/* the matrix view: M rows of N */
static void matrix_of(const units *u, int64_t *M, int64_t *N) {
    *M = u->U;
    *N = u->m;
}

static int64_t rank_of(int64_t R, int64_t M, int64_t N) {
    int64_t r = R < M ? R : M;
    return r < N ? r : N;
}

static size_t section_bytes(int vt, int vbits, int64_t count) { return value_bytes(vt, vbits, 1, count); }

static size_t max_body_lowrank(const codec_params *p, const units *u) {
    int64_t M, N;
    matrix_of(u, &M, &N);
    const int64_t r = rank_of((int64_t)p->fraction, M, N);
    return section_bytes(p->value_type, p->value_bits, M * r) + section_bytes(p->value_type, p->value_bits, N * r);
}

/* Columns of P (M x r, row-major) orthonormal by modified Gram-Schmidt,
 * twice, in double; a column with nothing left of it becomes 0. */
static void orthonormalize(float *P, int64_t M, int64_t r, double *col) {
    for (int64_t t = 0; t < r; t++) {
        double top = 0.0;
        for (int64_t i = 0; i < M; i++) col[i] = P[i * r + t], top = fmax(top, fabs(col[i]));
        for (int pass = 0; pass < 2; pass++)
            for (int64_t s = 0; s < t; s++) {
                double d = 0.0;
                for (int64_t i = 0; i < M; i++) d += col[i] * P[i * r + s];
                for (int64_t i = 0; i < M; i++) col[i] -= d * P[i * r + s];
            }
        double nn = 0.0;
        for (int64_t i = 0; i < M; i++) nn += col[i] * col[i];
        const double norm = sqrt(nn);
        const int dead = !(norm > 1e-6 * top) || !(norm > 0.0) || !isfinite(norm);
        for (int64_t i = 0; i < M; i++) P[i * r + t] = dead ? 0.0f : (float)(col[i] / norm);
    }
}

static pz_status encode_lowrank(const codec_params *p, const codec_io *io, const float *x, const units *u, uint64_t seed, uint8_t *body,
                                size_t cap, size_t *body_len, frame_header *h, uint32_t *body_crc, int *have_crc) {
    int64_t M, N;
    matrix_of(u, &M, &N);
    const int64_t r = u->n ? rank_of((int64_t)p->fraction, M, N) : 0;
    h->k = (uint32_t)r;
    h->seed = seed;
    h->value_type = p->value_type;
    h->value_bits = p->value_type == VAL_QUANT ? p->value_bits : 0;
    float *P = scratch_get(io->sc, SC_VALS, sizeof(float) * (size_t)(M * r + N * r + 1));
    double *col = scratch_get(io->sc, SC_TMP, sizeof(double) * (size_t)(M > N ? M + 1 : N + 1));
    if (!P || !col) return pz_fail(PZ_ERR_NOMEM, "out of memory for rank-%lld factors of a %lld x %lld matrix", (long long)r, (long long)M,
                                   (long long)N);
    float *Q = P + M * r;
    /* the start: the sender's previous Q (warm, same shape), else seeded */
    codec_state *w = io->state;
    int64_t wrows = 0, wrank = 0;
    if (w && w->len >= 16) memcpy(&wrows, w->b, 8), memcpy(&wrank, w->b + 8, 8);
    const int warm = p->lr_warm && w && w->len && wrows == N && wrank == r;
    if (warm) memcpy(Q, w->b + 16, sizeof(float) * (size_t)(N * r));
    pz_rng rng;
    pz_rng_seed(&rng, seed ^ 0x4C6F7752616E6B00ull); /* "LowRank" */
    for (int64_t t = 0; t < r; t++) { /* a cold start, or a column the last frame left empty: seeded */
        int empty = 1;
        for (int64_t j = 0; warm && j < N && empty; j++) empty = Q[j * r + t] == 0.0f;
        if (empty)
            for (int64_t j = 0; j < N; j++) Q[j * r + t] = pz_rng_normal(&rng);
    }
    for (int it = 0; it < p->lr_iters && r; it++) {
        for (int64_t i = 0; i < M; i++) /* P = X Q */
            for (int64_t t = 0; t < r; t++) {
                double s = 0.0;
                for (int64_t j = 0; j < N; j++) s += (double)x[i * N + j] * Q[j * r + t];
                P[i * r + t] = (float)s;
            }
        orthonormalize(P, M, r, col);
        for (int64_t j = 0; j < N; j++) /* Q = X^T P */
            for (int64_t t = 0; t < r; t++) {
                double s = 0.0;
                for (int64_t i = 0; i < M; i++) s += (double)x[i * N + j] * P[i * r + t];
                Q[j * r + t] = (float)s;
            }
    }
    if (io->k->count_nonfinite(Q, (size_t)(N * r)))
        return pz_fail(PZ_ERR_ARG, "cannot encode with lowrank: the factors overflow float (values near FLT_MAX)");
    /* the decoder sums r products: each term is below |Q|, the sum must stay finite */
    for (int64_t j = 0; j < N; j++) {
        double s = 0.0;
        for (int64_t t = 0; t < r; t++) s += fabs(Q[j * r + t]);
        if (!(s < 1e38)) return pz_fail(PZ_ERR_ARG, "cannot encode with lowrank: the product of the factors overflows float");
    }
    if (p->lr_warm && w) { /* the state: [i64 rows][i64 rank][rows x rank f32] */
        if (!codec_state_reserve(w, 16 + sizeof(float) * (size_t)(N * r + 1)))
            return pz_fail(PZ_ERR_NOMEM, "out of memory for the low-rank start");
        memcpy(w->b, &N, 8), memcpy(w->b + 8, &r, 8);
        memcpy(w->b + 16, Q, sizeof(float) * (size_t)(N * r));
        w->len = N > 0 && r > 0 ? 16 + sizeof(float) * (size_t)(N * r) : 0;
    }
    const size_t pb = section_bytes(p->value_type, h->value_bits, M * r), qb = section_bytes(p->value_type, h->value_bits, N * r);
    if (pb + qb > cap) return pz_fail(PZ_ERR_STATE, "frame overflow (internal error)");
    PZ_TRY(write_values(io->k, p->value_type, h->value_bits, P, 1, M * r, body, io->sc));
    PZ_TRY(write_values(io->k, p->value_type, h->value_bits, Q, 1, N * r, body + pb, io->sc));
    *body_len = pb + qb;
    return PZ_OK;
}

static pz_status decode_lowrank(const frame_header *h, const codec_io *io, const units *u, float *x) {
    int64_t M, N;
    matrix_of(u, &M, &N);
    const int64_t r = h->k;
    if (r > rank_of(r, M, N) || (u->n && r < 1))
        return frame_error(PZ_FRAME_PARAM, "rank %lld for a %lld x %lld matrix (1 .. the smaller side)", (long long)r, (long long)M,
                           (long long)N);
    const size_t pb = section_bytes(h->value_type, h->value_bits, M * r), qb = section_bytes(h->value_type, h->value_bits, N * r);
    if (h->body_len != pb + qb)
        return frame_error(PZ_FRAME_PAYLOAD, "rank-%lld factors of a %lld x %lld matrix take %zu bytes, the payload has %llu", (long long)r,
                           (long long)M, (long long)N, pb + qb, (unsigned long long)h->body_len);
    if (u->n == 0) return PZ_OK;
    float *P = scratch_get(io->sc, SC_VALS, sizeof(float) * (size_t)(M * r + N * r + 1));
    if (!P) return pz_fail(PZ_ERR_NOMEM, "out of memory for rank-%lld factors", (long long)r);
    float *Q = P + M * r;
    PZ_TRY(read_values(io->k, h->value_type, h->value_bits, h->body, 1, M * r, P, io->sc));
    PZ_TRY(read_values(io->k, h->value_type, h->value_bits, h->body + pb, 1, N * r, Q, io->sc));
    if (io->k->count_nonfinite(P, (size_t)(M * r)) || io->k->count_nonfinite(Q, (size_t)(N * r)))
        return frame_error(PZ_FRAME_PAYLOAD, "a factor holds a NaN or an infinity");
    /* FORMAT.md: in f32, the products and the running sum each rounded, t ascending */
    for (int64_t i = 0; i < M; i++) {
        const float *pi = P + i * r;
        for (int64_t j = 0; j < N; j++) {
            const float *qj = Q + j * r;
            float acc = 0.0f;
            for (int64_t t = 0; t < r; t++) {
                const float prod = pi[t] * qj[t];
                acc = acc + prod;
            }
            x[i * N + j] = acc;
        }
    }
    if (io->k->count_nonfinite(x, (size_t)(M * N))) return frame_error(PZ_FRAME_PAYLOAD, "the factors' product overflows float");
    return PZ_OK;
}

static pz_status check_lowrank(const frame_header *h) {
    if (h->gran != GRAN_TOKEN) return frame_error(PZ_FRAME_PARAM, "lowrank frames have granularity token (3), not %d", h->gran);
    if (h->bits || h->index_coding || h->options) return frame_error(PZ_FRAME_PARAM, "lowrank takes no code width, index coding or options");
    return PZ_OK;
}

static int match_lowrank(const char *name, codec_params *p) {
    if (strcmp(name, "lowrank")) return 0;
    p->gran = GRAN_TOKEN, p->lr_iters = 1, p->lr_warm = 1;
    return 1;
}

static pz_status option_lowrank(codec_params *p, const char *key, const char *val, const char *spec) {
    if (!strcmp(key, "values") && val) return spec_values(p, val, 1, spec);
    if (!strcmp(key, "iters") && val) {
        char *end;
        const long it = strtol(val, &end, 10);
        if (end == val || *end || it < 1 || it > LOWRANK_MAX_ITERS) return spec_bad(spec, "iters= takes 1..16 power iterations");
        p->lr_iters = (int)it;
        return PZ_OK;
    }
    if (!val && !strcmp(key, "warm")) return p->lr_warm = 1, PZ_OK;
    if (!val && !strcmp(key, "cold")) return p->lr_warm = 0, PZ_OK;
    return spec_unknown_option(spec, "lowrank", key, val);
}

static void canonical_lowrank(const codec_params *p, char *buf, size_t cap) {
    char v[8];
    values_name(p, v, sizeof v);
    snprintf(buf, cap, "lowrank:%d,values=%s,iters=%d,%s", (int)p->fraction, v, p->lr_iters, p->lr_warm ? "warm" : "cold");
}

static int keeps_state(const codec_params *p) { return p->lr_warm; }

/* a saved start: [i64 rows][i64 rank][rows x rank f32], nothing after */
static pz_status state_check(const uint8_t *b, size_t len) {
    int64_t rows = 0, rank = 0;
    if (len >= 16) memcpy(&rows, b, 8), memcpy(&rank, b + 8, 8);
    if (len < 16 || rows < 1 || rank < 1 || rank > LOWRANK_MAX_RANK || (uint64_t)rows > (uint64_t)(len - 16) / 4 / (uint64_t)rank ||
        len - 16 != 4 * (size_t)(rows * rank))
        return pz_fail(PZ_ERR_FORMAT, "codec state: a low-rank start of %lld x %lld does not fit its %zu bytes", (long long)rows,
                       (long long)rank, len >= 16 ? len - 16 : len);
    return PZ_OK;
}

static void detail(const frame_header *h, char *buf, size_t cap) {
    const int64_t cols = h->ndim ? h->dims[h->ndim - 1] : 0;
    snprintf(buf, cap, "%u factors of a %lld x %lld matrix (tokens x features)", h->k, (long long)(cols ? h->n / cols : 0), (long long)cols);
}

const codec_family codec_lowrank = {
    .name = "lowrank", .wire_id = 8, .arg = {CODEC_ARG_COUNT, "rank", 1, LOWRANK_MAX_RANK, "lowrank:8"},
    .keeps_state = keeps_state, .state_check = state_check, .detail_label = "rank", .detail = detail,
    .fields = PZ_FRAME_USES_RANK | PZ_FRAME_USES_VALUES,
    .usage = "lowrank:R[,values=fp32|fp16|bf16|qB,iters=1,warm|cold]",
    .help = "rank-R factors of the tokens x features matrix (PowerSGD's power iteration; warm: from the sender's previous factors): "
            "R (tokens + features) values instead of tokens x features",
    .match = match_lowrank, .option = option_lowrank, .canonical = canonical_lowrank,
    .max_body = max_body_lowrank, .encode = encode_lowrank, .check = check_lowrank, .decode = decode_lowrank,
};
