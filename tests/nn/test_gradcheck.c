/* SPDX-License-Identifier: MIT */
/* test_gradcheck.c — each layer's backward against central finite
 * differences, ggml test-backend-ops style: a one-layer model, the loss
 * L = sum(y * r) for a fixed random r (so dL/dy = r), and EVERY parameter and
 * input coordinate perturbed by +-eps.
 *
 * Conv, linear, pooling and GAP are linear in each coordinate, BN is smooth:
 * with eps = 1e-2 the finite difference is exact up to float32 rounding of L
 * (~1e-6 / 2e-2), so we allow 2e-3 absolute + 1e-2 relative. ReLU and max
 * pooling are only piecewise linear: their inputs are drawn at least 0.05
 * away from every kink so no +-eps step crosses one. In the basic block the
 * ReLUs sit after BN, whose statistics move with every coordinate, so a step
 * can cross kinks anywhere: there eps = 1e-3, absolute tolerance 1e-2, and at
 * most 3% of coordinates may miss (tests/nn/test_resnet8_ref.c checks blocks
 * exactly against PyTorch). */
#include "tool/xalloc.h"
#include "../test.h"
#include "nn/nn.h"
#include "kernels/kernels.h"

typedef enum { INPUT_NORMAL, INPUT_AWAY_FROM_ZERO, INPUT_DISTINCT, INPUT_TOKENS } input_kind;

static double loss_at(pz_model *m, const float *x, const float *r, int B) {
    pz_seq_forward(&m->net, 0, m->net.n, x, B, 1);
    const float *y = m->net.act[m->net.n - 1];
    const int64_t n = (int64_t)B * pz_shape_numel(pz_seq_out(&m->net));
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) s += (double)y[i] * r[i];
    return s;
}

/* Returns the number of coordinates whose finite difference misses. */
static int probe(const char *what, pz_model *m, float *v, const float *g, int64_t n, const float *x,
                 const float *r, int B, float eps, double atol, int *checked) {
    int miss = 0;
    for (int64_t i = 0; i < n; i++) {
        const float keep = v[i];
        v[i] = keep + eps;
        const double lp = loss_at(m, x, r, B);
        v[i] = keep - eps;
        const double lm = loss_at(m, x, r, B);
        v[i] = keep;
        const double fd = (lp - lm) / (2.0 * eps);
        if (!(fabs(fd - g[i]) <= atol + 1e-2 * fabs(fd))) {
            if (miss < 3) fprintf(stderr, "  %s[%lld]: analytic %.6g, finite difference %.6g\n", what, (long long)i, g[i], fd);
            miss++;
        }
    }
    *checked += (int)n;
    return miss;
}

static void check_layer(pz_model *m, int B, input_kind kind, double max_miss_fraction) {
    const char *name = m->net.layers[0].name;
    pz_rng rng;
    pz_rng_seed(&rng, 42);
    const int64_t nx = (int64_t)B * pz_shape_numel(m->net.in);
    const int64_t ny = (int64_t)B * pz_shape_numel(pz_seq_out(&m->net));
    float *x = pz_xfloats((size_t)nx), *dx = pz_xfloats((size_t)nx), *r = pz_xfloats((size_t)ny);
    for (int64_t i = 0; i < nx; i++) {
        float v = pz_rng_normal(&rng);
        if (kind == INPUT_AWAY_FROM_ZERO) v = (v < 0 ? -0.05f : 0.05f) + v;
        x[i] = v;
    }
    if (kind == INPUT_TOKENS) /* token ids 0..4 held as k + 0.5: a +-eps step stays on the same id */
        for (int64_t i = 0; i < nx; i++) x[i] = (float)pz_rng_below(&rng, 5) + 0.5f;
    if (kind == INPUT_DISTINCT) { /* a random permutation of values 0.05 apart */
        for (int64_t i = 0; i < nx; i++) x[i] = 0.05f * (float)(i - nx / 2);
        for (int64_t i = nx - 1; i > 0; i--) {
            int64_t j = pz_rng_below(&rng, (uint32_t)(i + 1));
            float t = x[i]; x[i] = x[j]; x[j] = t;
        }
    }
    for (int64_t i = 0; i < ny; i++) r[i] = pz_rng_normal(&rng);
    pz_model_zero_grad(m);
    pz_seq_forward(&m->net, 0, m->net.n, x, B, 1);
    pz_seq_backward(&m->net, 0, m->net.n, x, r, dx, B);
    float *g = pz_xfloats((size_t)m->n_params);
    memcpy(g, m->grads, sizeof(float) * (size_t)m->n_params);
    char what[96];
    int checked = 0, miss = 0;
    snprintf(what, sizeof what, "%s params", name);
    /* kink-free layers: eps 1e-2; blocks: a smaller step crosses fewer kinks
     * but L's rounding weighs 10x more, hence the looser absolute tolerance */
    const float eps = max_miss_fraction > 0 ? 1e-3f : 1e-2f;
    const double atol = max_miss_fraction > 0 ? 1e-2 : 2e-3;
    miss += probe(what, m, m->params, g, m->n_params, x, r, B, eps, atol, &checked);
    snprintf(what, sizeof what, "%s input", name);
    miss += probe(what, m, x, dx, nx, x, r, B, eps, atol, &checked);
    CHECK(miss <= max_miss_fraction * checked, "%s: %d of %d coordinates differ from finite differences", name, miss, checked);
    free(x), free(dx), free(r), free(g);
}

/* A model of the single layer `add` builds on input shape `in`. */
#define ONE_LAYER(in, B, kind, frac, add_call)                                                 \
    do {                                                                                       \
        pz_model m = {0};                                                                      \
        pz_seq_init(&m.net, in);                                                               \
        pz_seq *s = &m.net;                                                                    \
        CHECK((add_call) == PZ_OK, "%s", pz_last_error());                                     \
        const pz_shape o_ = pz_seq_out(s);                                                     \
        const int nc_ = o_.rank == 2 ? o_.d[1] : (int)pz_shape_numel(o_);                      \
        CHECK(pz_model_finalize(&m, B, nc_, 7) == PZ_OK, "%s",                                 \
              pz_last_error());                                                                \
        check_layer(&m, B, kind, frac);                                                        \
        pz_model_free(&m);                                                                     \
    } while (0)

/* x + c_proj(attention(c_attn(ln(x)))): a GPT branch, grouped */
static pz_status residual_attention(pz_seq *s) {
    pz_seq *g = pz_begin_inner(s, "block"), *r = g ? pz_begin_inner(g, "attn") : NULL;
    pz_status st = r ? PZ_OK : PZ_ERR_NOMEM;
    if (!st) st = pz_add_layernorm(r, "ln");
    if (!st) st = pz_add_dense(r, "c_attn", 18, 1, 0.3f);
    if (!st) st = pz_add_attention(r, "attn", 3);
    if (!st) st = pz_add_dense(r, "c_proj", 6, 1, 0.3f);
    if (r) st = st ? st : pz_end_residual(g, "attn", r);
    return st ? st : pz_end_group(s, "block", g);
}

/* a GPT MLP, dense -> GELU -> dense: the GELU runs fused into the dense
 * layers around it both ways; and a GELU first, its input gradient the
 * model's own */
static pz_status mlp(pz_seq *s) {
    PZ_TRY(pz_add_dense(s, "c_fc", 9, 1, 0.5f));
    PZ_TRY(pz_add_gelu(s, "gelu"));
    return pz_add_dense(s, "c_proj", 4, 1, 0.5f);
}
static pz_status mlp_then_dense(pz_seq *s) { /* the pair's gradient then comes in a buffer of the list's own */
    PZ_TRY(mlp(s));
    return pz_add_dense(s, "out", 3, 1, 0.5f);
}
static pz_status gelu_dense(pz_seq *s) {
    PZ_TRY(pz_add_gelu(s, "gelu"));
    return pz_add_dense(s, "c_proj", 4, 1, 0.5f);
}

/* the fused runs give the bits of the layers one at a time (each layer a
 * range of its own, where nothing fuses) */
static void fusion_bits(pz_status (*build)(pz_seq *), const char *what) {
    pz_model m = {0};
    pz_seq_init(&m.net, pz_shape_seq(7, 6));
    CHECK(build(&m.net) == PZ_OK && pz_model_finalize(&m, 3, pz_seq_out(&m.net).d[1], 5) == PZ_OK, "%s", pz_last_error());
    pz_seq *s = &m.net;
    const int B = 3, n = s->n;
    const size_t nx = (size_t)B * 7 * 6, ny = (size_t)B * pz_shape_numel(pz_seq_out(s));
    float *x = pz_xfloats(nx), *dy = pz_xfloats(ny), *dx1 = pz_xfloats(nx), *dx2 = pz_xfloats(nx), *y1 = pz_xfloats(ny);
    float *g1 = pz_xfloats((size_t)m.n_params);
    pz_rng rng;
    pz_rng_seed(&rng, 9);
    for (size_t i = 0; i < nx; i++) x[i] = 2.0f * pz_rng_normal(&rng);
    for (size_t i = 0; i < ny; i++) dy[i] = pz_rng_normal(&rng);
    pz_model_zero_grad(&m);
    pz_seq_forward(s, 0, n, x, B, 1);
    memcpy(y1, s->act[n - 1], ny * 4);
    pz_seq_backward(s, 0, n, x, dy, dx1, B);
    memcpy(g1, m.grads, sizeof(float) * (size_t)m.n_params);
    /* one layer at a time: their inputs and gradients in buffers of our own */
    size_t most = nx;
    for (int i = 0; i < n; i++) {
        const size_t k = (size_t)B * pz_shape_numel(s->layers[i].out);
        most = k > most ? k : most;
    }
    float **in = malloc(sizeof(float *) * (size_t)(n + 1)), *ga = pz_xfloats(most), *gb = pz_xfloats(most);
    pz_model_zero_grad(&m);
    in[0] = x;
    for (int i = 0; i < n; i++) {
        pz_seq_forward(s, i, i + 1, in[i], B, 1);
        const size_t k = (size_t)B * pz_shape_numel(s->layers[i].out);
        in[i + 1] = pz_xfloats(k);
        memcpy(in[i + 1], s->act[i], k * 4);
    }
    int same = !memcmp(y1, in[n], ny * 4);
    const float *d = dy;
    for (int i = n - 1; i >= 0; i--) {
        float *out = i ? (d == ga ? gb : ga) : dx2;
        pz_seq_forward(s, i, i + 1, in[i], B, 1); /* the layer's own saved state */
        pz_seq_backward(s, i, i + 1, in[i], d, out, B);
        d = out;
    }
    same = same && !memcmp(dx1, dx2, nx * 4) && !memcmp(g1, m.grads, sizeof(float) * (size_t)m.n_params);
    CHECK(same, "%s: the fused GELU differs from the layers one at a time", what);
    for (int i = 1; i <= n; i++) free(in[i]);
    free(in), free(ga), free(gb), free(x), free(dy), free(dx1), free(dx2), free(y1), free(g1);
    pz_model_free(&m);
}

/* embedding then a head tied to it: the token table gets both gradients */
static pz_status embedding_tied_head(pz_seq *s) {
    PZ_TRY(pz_add_embedding(s, "wte", 5, 6, 4, 0.5f));
    return pz_add_tied_head(s, "head", "wte");
}

/* a subspace model's pieces (--subspace): the embedding's coefficients, a
 * residual attention branch that reads the stream through its lift and
 * writes K coefficients, and a last lift */
static pz_status subspace_block(pz_seq *s) {
    PZ_TRY(pz_add_subspace_embedding(s, "wte_sub", 5, 8, 3, 0.5f));
    pz_seq *g = pz_begin_inner(s, "block"), *r = g ? pz_begin_inner(g, "attn") : NULL;
    pz_status st = r ? PZ_OK : PZ_ERR_NOMEM;
    if (!st) st = pz_add_subspace(r, "lift", 5, 8, 6, 0.5f);
    if (!st) st = pz_add_layernorm(r, "ln");
    if (!st) st = pz_add_dense(r, "c_attn", 18, 1, 0.3f);
    if (!st) st = pz_add_attention(r, "attn", 3);
    if (!st) st = pz_add_dense(r, "c_proj", 3, 1, 0.3f);
    if (r) st = st ? st : pz_end_residual(g, "attn", r);
    st = st ? st : pz_end_group(s, "block", g);
    return st ? st : pz_add_subspace(s, "lift_f", 5, 8, 6, 0.5f);
}

/* a boundary projection pair (--project): the stream's 4 coefficients to
 * 2 and back, then a last lift to 6 scores */
static pz_status projection_pair(pz_seq *s, int k) {
    PZ_TRY(pz_add_subspace_embedding(s, "wte_sub", 5, 8, 4, 0.5f));
    PZ_TRY(pz_add_project(s, "project", 5, 8, k));
    PZ_TRY(pz_add_unproject(s, "unproject", 5, 8, 4));
    return pz_add_subspace(s, "lift_f", 5, 8, 6, 0.5f);
}

static void check_projection(void) {
    { /* at K = D the pair starts as the identity, bit for bit */
        pz_model m = {0};
        pz_seq_init(&m.net, pz_shape_tokens(6));
        CHECK(pz_subspace_create(&m.sub, 4, 6, 11) == PZ_OK, "%s", pz_last_error());
        CHECK(projection_pair(&m.net, 4) == PZ_OK && pz_model_finalize(&m, 2, 6, 7) == PZ_OK, "%s", pz_last_error());
        float x[12];
        for (int i = 0; i < 12; i++) x[i] = (float)(i % 5);
        pz_seq_forward(&m.net, 0, m.net.n, x, 2, 0);
        CHECK(!memcmp(m.net.act[0], m.net.act[2], 12 * 4 * sizeof(float)), "a full-width pair starts as the identity");
        pz_model_free(&m);
    }
    pz_model m = {0};
    pz_seq_init(&m.net, pz_shape_tokens(6));
    CHECK(pz_subspace_create(&m.sub, 4, 6, 11) == PZ_OK, "%s", pz_last_error());
    CHECK(projection_pair(&m.net, 2) == PZ_OK && pz_model_finalize(&m, 2, 6, 7) == PZ_OK, "%s", pz_last_error());
    {
        pz_model w = {0};
        pz_seq_init(&w.net, pz_shape_seq(6, 2));
        CHECK(pz_add_project(&w.net, "too_wide", 5, 8, 3) == PZ_ERR_ARG, "a projection of 2 coefficients to 3 is refused");
        CHECK(pz_add_unproject(&w.net, "too_narrow", 5, 8, 1) == PZ_ERR_ARG, "a lift of 2 coefficients into 1 is refused");
        pz_model_free(&w);
    }
    /* anchors and matrices away from their start, the matrices retracted */
    pz_rng rng;
    pz_rng_seed(&rng, 5);
    for (int i = 1; i <= 2; i++) {
        pz_layer *l = &m.net.layers[i];
        const int64_t n = l->n_params;
        for (int64_t j = 0; j < n; j++) l->weight[j] += 0.3f * pz_rng_normal(&rng);
    }
    pz_seq_after_step(&m.net, 0, m.net.n);
    for (int i = 1; i <= 2; i++) {
        const pz_layer *l = &m.net.layers[i];
        const float *w = l->bias + 8 * 4; /* W (4, 2) after the tables */
        for (int a = 0; a < 2; a++)
            for (int b = 0; b < 2; b++) {
                double d = 0;
                for (int r = 0; r < 4; r++) d += (double)w[r * 2 + a] * w[r * 2 + b];
                CHECK(fabs(d - (a == b)) < 1e-6, "%s: after a step W^T W [%d][%d] = %.9f", l->name, a, b, d);
            }
    }
    CHECK(memcmp(m.net.layers[1].bias + 32, m.net.layers[2].bias + 32, 8 * sizeof(float)),
          "the two sides' matrices are their own (perturbed apart)");
    /* the projection's output is (x + A[id] + P[t]) W, by hand in double */
    float x[12];
    for (int i = 0; i < 12; i++) x[i] = (float)(i % 5);
    pz_seq_forward(&m.net, 0, m.net.n, x, 2, 0);
    const pz_layer *l = &m.net.layers[1];
    double off = 0, norm = 0;
    for (int r = 0; r < 12; r++)
        for (int j = 0; j < 2; j++) {
            double v = 0;
            for (int i = 0; i < 4; i++)
                v += ((double)m.net.act[0][r * 4 + i] + l->weight[(int)x[r] * 4 + i] + l->bias[(r % 6) * 4 + i]) * l->bias[32 + i * 2 + j];
            off += (v - m.net.act[1][r * 2 + j]) * (v - m.net.act[1][r * 2 + j]), norm += v * v;
        }
    CHECK(sqrt(off) <= 1e-6 * sqrt(norm), "project is (x + A[id] + P[t]) W: |difference| %.3g of %.3g", sqrt(off), sqrt(norm));
    check_layer(&m, 2, INPUT_TOKENS, 0.0);
    pz_model_free(&m);
}

int main(void) {
    pz_set_threads(2);
    check_projection();
    const pz_shape img = pz_shape_image(3, 7, 7);
    ONE_LAYER(img, 2, INPUT_NORMAL, 0.0, pz_add_conv(s, "conv3x3_s2_p1_bias", 4, 3, 2, 1, 1));
    ONE_LAYER(img, 2, INPUT_NORMAL, 0.0, pz_add_conv(s, "conv3x3_s1_p1", 2, 3, 1, 1, 0));
    ONE_LAYER(img, 2, INPUT_NORMAL, 0.0, pz_add_conv(s, "conv1x1_s2", 5, 1, 2, 0, 0));
    ONE_LAYER(img, 2, INPUT_NORMAL, 0.0, pz_add_conv(s, "conv5x5_p2", 2, 5, 1, 2, 1));
    ONE_LAYER(img, 3, INPUT_NORMAL, 0.0, pz_add_batchnorm(s, "batchnorm"));
    ONE_LAYER(img, 2, INPUT_AWAY_FROM_ZERO, 0.0, pz_add_relu(s, "relu"));
    ONE_LAYER(img, 2, INPUT_DISTINCT, 0.0, pz_add_maxpool(s, "maxpool2_s2", 2, 2, 0));
    ONE_LAYER(img, 2, INPUT_DISTINCT, 0.0, pz_add_maxpool(s, "maxpool3_s2_p1", 3, 2, 1));
    ONE_LAYER(img, 2, INPUT_NORMAL, 0.0, pz_add_avgpool(s, "avgpool3_s1_p1", 3, 1, 1));
    ONE_LAYER(img, 2, INPUT_NORMAL, 0.0, pz_add_global_avgpool(s, "global_avgpool"));
    ONE_LAYER(img, 2, INPUT_NORMAL, 0.0, pz_add_flatten(s, "flatten"));
    ONE_LAYER(pz_shape_image(6, 1, 1), 3, INPUT_NORMAL, 0.0, pz_add_linear(s, "linear", 4, 1));
    ONE_LAYER(img, 3, INPUT_NORMAL, 0.03, pz_add_basic_block(s, "block_identity", 3, 1));
    ONE_LAYER(img, 3, INPUT_NORMAL, 0.03, pz_add_basic_block(s, "block_projection", 4, 2));

    /* transformer layers over sequences (T, C) */
    const pz_shape seq = pz_shape_seq(5, 6);
    ONE_LAYER(seq, 2, INPUT_NORMAL, 0.0, pz_add_layernorm(s, "layernorm"));
    ONE_LAYER(seq, 2, INPUT_NORMAL, 0.0, pz_add_dense(s, "dense", 4, 1, 0.3f));
    ONE_LAYER(seq, 2, INPUT_NORMAL, 0.0, pz_add_gelu(s, "gelu"));
    ONE_LAYER(seq, 2, INPUT_NORMAL, 0.0, pz_add_silu(s, "silu"));
    ONE_LAYER(pz_shape_seq(5, 12), 2, INPUT_NORMAL, 0.0, pz_add_attention(s, "attention_2heads", 2));
    ONE_LAYER(pz_shape_seq(4, 9), 2, INPUT_NORMAL, 0.0, pz_add_attention(s, "attention_1head", 1));
    ONE_LAYER(pz_shape_tokens(6), 2, INPUT_TOKENS, 0.0, pz_add_embedding(s, "embedding", 5, 8, 3, 0.5f));
    ONE_LAYER(seq, 2, INPUT_NORMAL, 0.0, residual_attention(s));
    ONE_LAYER(seq, 2, INPUT_NORMAL, 0.0, mlp(s));
    ONE_LAYER(seq, 2, INPUT_NORMAL, 0.0, gelu_dense(s));
    ONE_LAYER(seq, 2, INPUT_NORMAL, 0.0, mlp_then_dense(s));
    fusion_bits(mlp, "dense, GELU, dense");
    fusion_bits(mlp_then_dense, "dense, GELU, dense, dense");
    fusion_bits(gelu_dense, "GELU, dense");
    ONE_LAYER(pz_shape_tokens(6), 2, INPUT_TOKENS, 0.0, embedding_tied_head(s));
    { /* the subspace (Protocol Models): its basis is orthonormal and the same
       * for the same seed; what a block adds to the stream lies in span U (the
       * last lift's output less its own tables' rows is U c); and the
       * gradients match finite differences */
        pz_model m = {0};
        pz_seq_init(&m.net, pz_shape_tokens(6));
        CHECK(pz_subspace_create(&m.sub, 3, 6, 11) == PZ_OK, "%s", pz_last_error());
        const pz_subspace *u = m.sub;
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++) {
                double d = 0;
                for (int i = 0; i < 6; i++) d += (double)u->basis[i * 3 + a] * u->basis[i * 3 + b];
                CHECK(fabs(d - (a == b)) < 1e-6, "U^T U [%d][%d] = %.9f", a, b, d);
            }
        pz_subspace *same, *other;
        CHECK(pz_subspace_create(&same, 3, 6, 11) == PZ_OK && pz_subspace_create(&other, 3, 6, 12) == PZ_OK, "%s", pz_last_error());
        CHECK(!memcmp(same->basis, u->basis, 18 * sizeof(float)) && memcmp(other->basis, u->basis, 18 * sizeof(float)),
              "the same seed makes the same subspace bit for bit, another seed another");
        pz_subspace_free(same), pz_subspace_free(other);
        CHECK(pz_subspace_create(&other, 7, 6, 1) == PZ_ERR_ARG, "a subspace wider than the stream is refused");
        CHECK(subspace_block(&m.net) == PZ_OK && pz_model_finalize(&m, 2, 6, 7) == PZ_OK, "%s", pz_last_error());
        float x[12];
        for (int i = 0; i < 12; i++) x[i] = (float)(i % 5);
        pz_seq_forward(&m.net, 0, m.net.n, x, 2, 0);
        CHECK(u->tokens == x, "the embedding records the ids for the lifts");
        const pz_layer *lf = &m.net.layers[m.net.n - 1];
        const float *y = pz_model_logits(&m), *c = m.net.act[m.net.n - 2];
        double off = 0, norm = 0;
        for (int r = 0; r < 12; r++)
            for (int i = 0; i < 6; i++) {
                double v = (double)lf->weight[(int)x[r] * 6 + i] + lf->bias[(r % 6) * 6 + i];
                for (int j = 0; j < 3; j++) v += (double)u->basis[i * 3 + j] * c[r * 3 + j];
                off += (v - y[r * 6 + i]) * (v - y[r * 6 + i]), norm += (double)y[r * 6 + i] * y[r * 6 + i];
            }
        CHECK(sqrt(off) <= 1e-6 * sqrt(norm), "a lift is E[id] + P[t] + U c: |difference| %.3g of %.3g", sqrt(off), sqrt(norm));
        check_layer(&m, 2, INPUT_TOKENS, 0.0);
        pz_model_free(&m);
    }
    { /* SiLU's forward against its definition in double, far into both tails */
        pz_model m = {0};
        pz_seq_init(&m.net, pz_shape_seq(1, 9));
        CHECK(pz_add_silu(&m.net, "silu") == PZ_OK && pz_model_finalize(&m, 1, 9, 1) == PZ_OK, "%s", pz_last_error());
        const float x[9] = {-100.0f, -20.0f, -3.5f, -1.0f, 0.0f, 0.25f, 2.0f, 15.0f, 88.0f};
        pz_seq_forward(&m.net, 0, m.net.n, x, 1, 0);
        const float *y = pz_model_logits(&m);
        for (int i = 0; i < 9; i++) {
            const double want = (double)x[i] / (1.0 + exp(-(double)x[i]));
            CHECK(isfinite(y[i]) && fabs(y[i] - want) <= 1e-6 * fmax(1.0, fabs(want)), "silu(%g) = %.9g, want %.9g", x[i], y[i], want);
        }
        pz_model_free(&m);
    }
    TEST_DONE();
}
