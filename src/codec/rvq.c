/* SPDX-License-Identifier: MIT */
/* rvq.c — residual vector quantization (FORMAT.md's codec 10): each unit
 * (token, sample or tensor) scaled by its RMS, cut into vectors of G
 * consecutive elements, and each vector sent as S codes of b bits: the
 * nearest entry of stage 1's codebook, then the nearest entry of stage 2's
 * to what is left, and so on; it decodes to scale x (C_1[c_1] + ... +
 * C_S[c_S]). The codebooks (2^b entries of G f16 values each) travel in
 * every frame, so the receiver keeps nothing and every byte of their upkeep
 * is in the traffic. The sender fits them to the frame by k-means (Lloyd's
 * iterations, `iters` of them), starting from its previous frame's (warm,
 * the default: they follow the data from step to step) or from vectors
 * drawn with the frame's seed (cold, and the first frame). S b / G bits per
 * element, plus S 2^b G 16 bits of codebooks and 32 per unit. */
#include "object.h"
#include "bits.h"
#include "base/wire.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

extern const codec_family codec_rvq; /* listed in registry.c */

enum { RVQ_MAX_DIM = 256, RVQ_MAX_STAGES = 8, RVQ_MAX_ITERS = 32 };

/* the header's k: G in bits 0..15, S in bits 16..23 */
static int dim_of(uint32_t k) { return (int)(k & 0xFFFF); }
static int stages_of(uint32_t k) { return (int)((k >> 16) & 0xFF); }

static size_t book_bytes(int S, int b, int G) { return 2 * (size_t)S * ((size_t)1 << b) * (size_t)G; }
static size_t body_bytes(int S, int b, int G, const units *u) {
    const uint64_t nvec = G ? (uint64_t)u->n / (uint64_t)G : 0;
    return 4 * (size_t)u->U + book_bytes(S, b, G) + (size_t)S * bits_bytes(nvec, b);
}

static size_t max_body(const codec_params *p, const units *u) { return body_bytes(p->vq_stages, p->bits, (int)p->fraction, u); }

/* the nearest of E entries (ties: the lowest index) */
static int nearest(const float *v, const float *book, int E, int G) {
    int best = 0;
    float bd = INFINITY;
    for (int e = 0; e < E; e++) {
        const float *c = book + (size_t)e * G;
        float d = 0.0f;
        for (int j = 0; j < G; j++) {
            const float t = v[j] - c[j];
            d += t * t;
        }
        if (d < bd) bd = d, best = e;
    }
    return best;
}

/* one stage's codebook fitted to the residuals r (nvec x G): from book as
 * it comes in, `iters` Lloyd iterations (an entry no vector chose stays) */
static pz_status lloyd(const float *r, int64_t nvec, int G, int E, int iters, float *book, double *sum, int64_t *count) {
    for (int it = 0; it < iters; it++) {
        memset(sum, 0, sizeof(double) * (size_t)E * (size_t)G);
        memset(count, 0, sizeof(int64_t) * (size_t)E);
        for (int64_t v = 0; v < nvec; v++) {
            const int e = nearest(r + v * G, book, E, G);
            count[e]++;
            for (int j = 0; j < G; j++) sum[(size_t)e * G + j] += r[v * G + j];
        }
        for (int e = 0; e < E; e++)
            if (count[e])
                for (int j = 0; j < G; j++) book[(size_t)e * G + j] = (float)(sum[(size_t)e * G + j] / (double)count[e]);
    }
    return PZ_OK;
}

/* the sender's codebooks of its previous frame: [u32 b][u32 G][u32 S][S 2^b G f32] */
static int warm_books(const codec_state *w, int b, int G, int S) {
    uint32_t hb[3];
    if (!w || w->len < 12) return 0;
    memcpy(hb, w->b, 12);
    return hb[0] == (uint32_t)b && hb[1] == (uint32_t)G && hb[2] == (uint32_t)S && w->len == 12 + 2 * book_bytes(S, b, G);
}

static pz_status encode(const codec_params *p, const codec_io *io, const float *x, const units *u, uint64_t seed, uint8_t *body,
                        size_t cap, size_t *body_len, frame_header *h, uint32_t *body_crc, int *have_crc) {
    (void)body_crc, (void)have_crc; /* the frame writer takes the CRC */
    const int G = (int)p->fraction, S = p->vq_stages, b = p->bits, E = 1 << b;
    if (u->m % G)
        return pz_fail(PZ_ERR_ARG, "rvq:%d cuts each unit into vectors of %d elements: a unit of %lld elements does not split (give a G "
                       "that divides it, or another per=)", G, G, (long long)u->m);
    const size_t need = body_bytes(S, b, G, u);
    if (need > cap) return pz_fail(PZ_ERR_STATE, "frame overflow (internal error)");
    /* a decoded vector's norm is at most (2^S + 1) times the unit's largest
     * vector norm (each stage's entries are means of what it was given, and
     * taking the nearest at most doubles what is left), so an element at
     * most 2^9 sqrt(256) times the largest: keep that below FLT_MAX */
    const float big = u->n ? io->k->max_abs(x, (size_t)u->n) : 0.0f;
    if (big > FLT_MAX / 8192.0f)
        return pz_fail(PZ_ERR_ARG, "cannot encode with rvq: a magnitude of %g is above FLT_MAX / 8192 (a decoded sum could overflow)",
                       (double)big);
    h->bits = b, h->k = (uint32_t)G | (uint32_t)S << 16, h->seed = seed;
    const int64_t nvec = u->n / G;
    float *r = scratch_get(io->sc, SC_VALS, sizeof(float) * (size_t)(u->n + 1));
    float *books = scratch_get(io->sc, SC_CVALS, sizeof(float) * ((size_t)S * E * G + 1));
    double *sum = scratch_get(io->sc, SC_TMP, sizeof(double) * ((size_t)E * G + 1));
    int64_t *count = scratch_get(io->sc, SC_POS, sizeof(int64_t) * ((size_t)E + 1));
    uint8_t *codes = scratch_get(io->sc, SC_CODES, (size_t)nvec + 1);
    uint16_t *half = scratch_get(io->sc, SC_HALF, sizeof(uint16_t) * ((size_t)E * G + 1));
    if (!r || !books || !sum || !count || !codes || !half)
        return pz_fail(PZ_ERR_NOMEM, "out of memory for rvq's codebooks of %d x %d x %d over %lld vectors", S, E, G, (long long)nvec);
    /* scales: each unit's RMS, the residuals the unit over it */
    uint8_t *sp = body;
    for (int64_t un = 0; un < u->U; un++) {
        const float *xu = x + un * u->m;
        double ss = 0.0;
        for (int64_t i = 0; i < u->m; i++) ss += (double)xu[i] * xu[i];
        float s = (float)sqrt(u->m ? ss / (double)u->m : 0.0);
        if (!(s >= FLT_MIN) || !isfinite(s)) s = 0.0f;
        pz_put_f32(sp, s), sp += 4;
        const float inv = s > 0.0f ? 1.0f / s : 0.0f;
        for (int64_t i = 0; i < u->m; i++) r[un * u->m + i] = xu[i] * inv;
    }
    const int warm = p->lr_warm && warm_books(io->state, b, G, S);
    if (warm) memcpy(books, io->state->b + 12, sizeof(float) * (size_t)S * E * G);
    pz_rng rng;
    pz_rng_seed(&rng, seed ^ 0x5256510000000000ull); /* "RVQ" */
    uint8_t *bookp = body + 4 * (size_t)u->U, *codep = bookp + book_bytes(S, b, G);
    for (int s = 0; s < S; s++) {
        float *book = books + (size_t)s * E * G;
        if (!warm) /* seeded: entries drawn from the residuals (zeros for an empty tensor) */
            for (int e = 0; e < E; e++) {
                const int64_t v = nvec ? (int64_t)pz_rng_below(&rng, (uint32_t)(nvec < 0xFFFFFFFFll ? nvec : 0xFFFFFFFFll)) : -1;
                for (int j = 0; j < G; j++) book[(size_t)e * G + j] = v >= 0 ? r[v * G + j] : 0.0f;
            }
        PZ_TRY(lloyd(r, nvec, G, E, p->lr_iters, book, sum, count));
        /* the entries as the receiver will have them (f16; beyond its range: the largest) */
        for (size_t i = 0; i < (size_t)E * G; i++) book[i] = fminf(fmaxf(book[i], -65504.0f), 65504.0f);
        io->k->f32_to_f16(book, (size_t)E * G, half);
        io->k->f16_to_f32(half, (size_t)E * G, book);
        for (size_t i = 0; i < (size_t)E * G; i++) {
            uint8_t *q = bookp + 2 * ((size_t)s * E * G + i);
            q[0] = (uint8_t)half[i], q[1] = (uint8_t)(half[i] >> 8);
        }
        for (int64_t v = 0; v < nvec; v++) {
            const int e = nearest(r + v * G, book, E, G);
            codes[v] = (uint8_t)e;
            for (int j = 0; j < G; j++) r[v * G + j] -= book[(size_t)e * G + j];
        }
        bits_write(io->k, codep, codes, (size_t)nvec, b);
        codep += bits_bytes((uint64_t)nvec, b);
    }
    if (p->lr_warm && io->state) {
        codec_state *w = io->state;
        if (!codec_state_reserve(w, 12 + 2 * book_bytes(S, b, G))) return pz_fail(PZ_ERR_NOMEM, "out of memory for rvq's codebooks");
        const uint32_t hb[3] = {(uint32_t)b, (uint32_t)G, (uint32_t)S};
        memcpy(w->b, hb, 12);
        memcpy(w->b + 12, books, sizeof(float) * (size_t)S * E * G);
        w->len = 12 + 2 * book_bytes(S, b, G);
    }
    *body_len = need;
    return PZ_OK;
}

static pz_status check(const frame_header *h) {
    const int G = dim_of(h->k), S = stages_of(h->k);
    if (h->bits < 1 || h->bits > 8) return frame_error(PZ_FRAME_PARAM, "rvq's code width %d is not 1..8", h->bits);
    if (G < 1 || G > RVQ_MAX_DIM || S < 1 || S > RVQ_MAX_STAGES || (h->k >> 24))
        return frame_error(PZ_FRAME_PARAM, "rvq's vectors of %d over %d stages (k 0x%08X): 1..%d and 1..%d", G, S, h->k, RVQ_MAX_DIM,
                           RVQ_MAX_STAGES);
    if (h->gran == GRAN_CHANNEL) return frame_error(PZ_FRAME_PARAM, "rvq has no channel granularity (a unit's vectors are contiguous)");
    if (h->options || h->value_type || h->index_coding || h->value_bits)
        return frame_error(PZ_FRAME_PARAM, "parameters that rvq does not take are set");
    return PZ_OK;
}

static pz_status decode(const frame_header *h, const codec_io *io, const units *u, float *x) {
    const int G = dim_of(h->k), S = stages_of(h->k), b = h->bits, E = 1 << b;
    if (u->m % G)
        return frame_error(PZ_FRAME_PARAM, "rvq's vectors of %d do not split a unit of %lld elements", G, (long long)u->m);
    if (h->body_len != body_bytes(S, b, G, u))
        return frame_error(PZ_FRAME_PAYLOAD, "an rvq payload of this shape has %zu bytes, not %llu", body_bytes(S, b, G, u),
                           (unsigned long long)h->body_len);
    const int64_t nvec = u->n / G;
    float *books = scratch_get(io->sc, SC_CVALS, sizeof(float) * ((size_t)S * E * G + 1));
    uint8_t *codes = scratch_get(io->sc, SC_CODES, (size_t)S * (size_t)nvec + 1);
    uint16_t *half = scratch_get(io->sc, SC_HALF, sizeof(uint16_t) * ((size_t)S * E * G + 1));
    if (!books || !codes || !half) return pz_fail(PZ_ERR_NOMEM, "out of memory for rvq's codebooks");
    const uint8_t *bookp = h->body + 4 * (size_t)u->U, *codep = bookp + book_bytes(S, b, G);
    for (size_t i = 0; i < (size_t)S * E * G; i++) half[i] = (uint16_t)(bookp[2 * i] | bookp[2 * i + 1] << 8);
    io->k->f16_to_f32(half, (size_t)S * E * G, books);
    if (io->k->count_nonfinite(books, (size_t)S * E * G)) return frame_error(PZ_FRAME_PAYLOAD, "an rvq codebook entry is not finite");
    for (int s = 0; s < S; s++) bits_read(io->k, codep + (size_t)s * bits_bytes((uint64_t)nvec, b), (size_t)nvec, b, codes + (size_t)s * nvec);
    for (int64_t un = 0; un < u->U; un++) {
        const float sc = pz_get_f32(h->body + 4 * (size_t)un);
        if (!(sc >= 0.0f) || !isfinite(sc))
            return frame_error(PZ_FRAME_PAYLOAD, "unit %lld's rvq scale %g is not a finite number >= 0", (long long)un, (double)sc);
        for (int64_t v = un * (u->m / G); v < (un + 1) * (u->m / G); v++)
            for (int j = 0; j < G; j++) {
                float acc = 0.0f;
                for (int s = 0; s < S; s++) acc = acc + books[((size_t)s * E + codes[(size_t)s * nvec + v]) * G + j];
                const float y = acc * sc;
                if (!isfinite(y)) return frame_error(PZ_FRAME_PAYLOAD, "an rvq vector times its unit's scale overflows float");
                x[v * G + j] = y;
            }
    }
    return PZ_OK;
}

/* ---- the spec ------------------------------------------------------------ */

static int match(const char *name, codec_params *p) {
    if (strcmp(name, "rvq")) return 0;
    p->gran = GRAN_TOKEN, p->bits = 8, p->vq_stages = 2, p->lr_iters = 4, p->lr_warm = 1;
    return 1;
}

static pz_status whole(const char *val, int lo, int hi, int *out, const char *spec, const char *what) {
    char *end;
    const long v = strtol(val, &end, 10);
    if (end == val || *end || v < lo || v > hi) return spec_bad(spec, what);
    *out = (int)v;
    return PZ_OK;
}

static pz_status option(codec_params *p, const char *key, const char *val, const char *spec) {
    if (!strcmp(key, "per") && val) { /* a unit's vectors are contiguous: no channels */
        const pz_name *g = pz_name_find(frame_granularities, val);
        if (!g || g->value == GRAN_CHANNEL) return spec_bad(spec, "per= takes token, sample or tensor");
        p->gran = g->value;
        return PZ_OK;
    }
    if (!strcmp(key, "stages") && val) return whole(val, 1, RVQ_MAX_STAGES, &p->vq_stages, spec, "stages= takes 1..8 codebooks");
    if (!strcmp(key, "bits") && val) return whole(val, 1, 8, &p->bits, spec, "bits= takes 1..8 (codebooks of 2..256 entries)");
    if (!strcmp(key, "iters") && val) return whole(val, 0, RVQ_MAX_ITERS, &p->lr_iters, spec, "iters= takes 0..32 k-means iterations");
    if (!val && !strcmp(key, "warm")) return p->lr_warm = 1, PZ_OK;
    if (!val && !strcmp(key, "cold")) return p->lr_warm = 0, PZ_OK;
    return spec_unknown_option(spec, "rvq", key, val);
}

static void canonical(const codec_params *p, char *buf, size_t cap) {
    snprintf(buf, cap, "rvq:%d,stages=%d,bits=%d,iters=%d,per=%s,%s", (int)p->fraction, p->vq_stages, p->bits, p->lr_iters,
             gran_name(p->gran), p->lr_warm ? "warm" : "cold");
}

static int keeps_state(const codec_params *p) { return p->lr_warm; }

static pz_status state_check(const uint8_t *b, size_t len) {
    uint32_t hb[3] = {0, 0, 0};
    if (len >= 12) memcpy(hb, b, 12);
    if (len < 12 || hb[0] < 1 || hb[0] > 8 || hb[1] < 1 || hb[1] > RVQ_MAX_DIM || hb[2] < 1 || hb[2] > RVQ_MAX_STAGES ||
        len != 12 + 2 * book_bytes((int)hb[2], (int)hb[0], (int)hb[1]))
        return pz_fail(PZ_ERR_FORMAT, "codec state: rvq codebooks (%u bits, vectors of %u, %u stages) do not fit their %zu bytes", hb[0],
                       hb[1], hb[2], len);
    for (size_t i = 0; i < (len - 12) / 4; i++) {
        float v;
        memcpy(&v, b + 12 + 4 * i, 4);
        if (!isfinite(v)) return pz_fail(PZ_ERR_FORMAT, "codec state: an rvq codebook entry is not finite");
    }
    return PZ_OK;
}

static void detail(const frame_header *h, char *buf, size_t cap) {
    snprintf(buf, cap, "%d stages of %d entries over vectors of %d, a scale per %s", stages_of(h->k), 1 << h->bits, dim_of(h->k),
             pz_frame_value_name(PZ_FIELD_GRANULARITY, h->gran));
}

const codec_family codec_rvq = {
    .name = "rvq", .wire_id = 10, .arg = {CODEC_ARG_COUNT, "vector length", 1, RVQ_MAX_DIM, "rvq:8"},
    .fields = PZ_FRAME_USES_BITS | PZ_FRAME_USES_GRANULARITY,
    .usage = "rvq:G[,stages=2,bits=8,iters=4,per=token|sample|tensor,warm|cold]",
    .help = "residual vector quantization: each unit over its RMS, in vectors of G, as S codes of b bits into codebooks the "
            "sender fits by k-means (warm: from its previous frame's) and sends in the frame as f16: S b / G bits an element "
            "+ S 2^b G x 16 bits of codebooks + 32 a unit",
    .match = match, .option = option, .canonical = canonical, .max_body = max_body, .encode = encode, .check = check,
    .decode = decode, .keeps_state = keeps_state, .state_check = state_check, .detail_label = "codebooks", .detail = detail,
};
