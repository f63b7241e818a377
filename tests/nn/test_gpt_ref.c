/* SPDX-License-Identifier: MIT */
/* test_gpt_ref.c — the transformer layers and a whole GPT against PyTorch
 * (tests/ref/gpt.bin, made by tests/ref/gen_ref.py): LayerNorm, GELU, causal
 * attention (and, against double precision, over many query tiles) and
 * the embeddings forward and backward; then a 2-block GPT's
 * logits, loss, every gradient and its parameters after each of two AdamW
 * steps (decay on the dense matrices only), at 1 and 2 threads; and a 2-thread run equal bit for bit to
 * itself. */
#include "tool/xalloc.h"
#include "../test.h"
#include "kernels/kernels.h"
#include "nn/nn.h"

static ref_file rf;
#define R(name) ref_get(&rf, name)

static float *zeros(size_t n) { return calloc(n ? n : 1, sizeof(float)); }

/* close relative to the tensor's scale */
static void close_to(const char *what, const float *got, const ref_tensor *want, float rel) {
    float mx = 0.0f;
    for (size_t i = 0; i < want->n; i++) mx = fmaxf(mx, fabsf(want->data[i]));
    check_close(what, got, want->data, want->n, rel * mx, 10 * rel);
}

/* Attention over many query blocks (T = 100: blocks of 42, 42 and 16;
 * head size 5, no multiple of a vector; or T = 70, head size 40, past one
 * panel of the kernels' columns; or head size 32, whole panels of them)
 * against the definition in double precision: softmax(q k^T / sqrt(hs)) v
 * under the causal mask, and its
 * gradient for a random dy; and the same bits on 1 and 2 threads. */
static void attention_tiles(const int T, const int NH, const int HS) {
    const int B = 2, C = NH * HS, C3 = 3 * C;
    const size_t nqkv = (size_t)B * T * C3, ny = (size_t)B * T * C;
    float *qkv = zeros(nqkv), *dy = zeros(ny), *y = zeros(ny), *lse = zeros((size_t)B * NH * T), *dq = zeros(nqkv),
          *dq2 = zeros(nqkv), *y2 = zeros(ny);
    float *wy = zeros(ny), *wd = zeros(nqkv);
    uint64_t s = 3;
    for (size_t i = 0; i < nqkv; i++) s = s * 6364136223846793005ULL + 1, qkv[i] = (float)((s >> 40) / 16777216.0) * 4.0f - 2.0f;
    for (size_t i = 0; i < ny; i++) s = s * 6364136223846793005ULL + 1, dy[i] = (float)((s >> 40) / 16777216.0) - 0.5f;
    const double sc = 1.0 / sqrt((double)HS);
    double *p = malloc(sizeof(double) * (size_t)T), *dp = malloc(sizeof(double) * (size_t)T);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int i = 0; i < T; i++) {
                const float *q = qkv + ((size_t)b * T + i) * C3 + h * HS;
                double mx = -1e300, sum = 0, dot = 0;
                for (int j = 0; j <= i; j++) {
                    const float *k = qkv + ((size_t)b * T + j) * C3 + C + h * HS;
                    double d = 0;
                    for (int c = 0; c < HS; c++) d += (double)q[c] * k[c];
                    p[j] = d * sc, mx = p[j] > mx ? p[j] : mx;
                }
                for (int j = 0; j <= i; j++) p[j] = exp(p[j] - mx), sum += p[j];
                const float *g = dy + ((size_t)b * T + i) * C + h * HS;
                for (int j = 0; j <= i; j++) {
                    p[j] /= sum;
                    const float *v = qkv + ((size_t)b * T + j) * C3 + 2 * C + h * HS;
                    dp[j] = 0;
                    for (int c = 0; c < HS; c++) wy[((size_t)b * T + i) * C + h * HS + c] += (float)(p[j] * v[c]), dp[j] += (double)g[c] * v[c];
                    dot += p[j] * dp[j];
                }
                for (int j = 0; j <= i; j++) {
                    const double ds = p[j] * (dp[j] - dot) * sc;
                    float *dqr = wd + ((size_t)b * T + i) * C3 + h * HS, *dkr = wd + ((size_t)b * T + j) * C3 + C + h * HS,
                          *dvr = wd + ((size_t)b * T + j) * C3 + 2 * C + h * HS;
                    const float *k = qkv + ((size_t)b * T + j) * C3 + C + h * HS;
                    for (int c = 0; c < HS; c++)
                        dqr[c] += (float)(ds * k[c]), dkr[c] += (float)(ds * q[c]), dvr[c] += (float)(p[j] * g[c]);
                }
            }
    pz_set_threads(1);
    attention_forward(y, lse, qkv, B, T, C, NH);
    attention_backward(dq, dy, qkv, lse, B, T, C, NH);
    close_to("attention forward", y, &(ref_tensor){.data = wy, .n = ny}, 2e-5f);
    close_to("attention dqkv", dq, &(ref_tensor){.data = wd, .n = nqkv}, 2e-5f);
    pz_set_threads(2);
    attention_forward(y2, lse, qkv, B, T, C, NH);
    attention_backward(dq2, dy, qkv, lse, B, T, C, NH);
    CHECK(!memcmp(y, y2, ny * 4) && !memcmp(dq, dq2, nqkv * 4), "attention differs on 1 and 2 threads");
    /* the fallback without scratch memory (out of memory for the tiles): the
     * same values to rounding, the log-sum-exp the backward needs included */
    float *lse2 = zeros((size_t)B * NH * T);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) attention_forward_direct(y2, lse2, qkv, b, h, T, C, NH);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) attention_backward_direct(dq2, dy, qkv, lse2, b, h, T, C, NH);
    close_to("attention forward without scratch", y2, &(ref_tensor){.data = wy, .n = ny}, 2e-5f);
    close_to("attention dqkv without scratch", dq2, &(ref_tensor){.data = wd, .n = nqkv}, 2e-5f);
    close_to("attention log-sum-exp without scratch", lse2, &(ref_tensor){.data = lse, .n = (size_t)B * NH * T}, 2e-5f);
    free(lse2), free(p), free(dp);
    free(qkv), free(dy), free(y), free(lse), free(dq), free(dq2), free(y2), free(wy), free(wd);
}

/* GELU's AVX-512 build gives the AVX2 build's bits (the same arithmetic
 * per element), over the whole range its tanh sees (|u| up to past 9) */
static void gelu_builds(void) {
    if (!(pz_cpu_features() & PZ_CPU_AVX512)) return;
    const size_t n = 1 << 20;
    float *x = zeros(n), *a = zeros(n), *b = zeros(n), *d = zeros(n);
    for (size_t i = 0; i < n; i++) {
        const uint32_t u = (uint32_t)(i * 2654435761u);
        x[i] = ((float)(u >> 8) / 16777216.0f - 0.5f) * 30.0f, d[i] = 1.0f + x[i] * 0.01f;
    }
    x[0] = 0.0f, x[1] = -0.0f, x[2] = 1e-30f, x[3] = -1e-4f; /* the series' side of the select */
    gelu_forward_avx2(a, x, n), gelu_forward_avx512(b, x, n);
    CHECK(!memcmp(a, b, 4 * n), "GELU forward: the AVX-512 build differs from the AVX2 build");
    gelu_backward_avx2(a, d, x, n), gelu_backward_avx512(b, d, x, n);
    CHECK(!memcmp(a, b, 4 * n), "GELU backward: the AVX-512 build differs from the AVX2 build");
    free(x), free(a), free(b), free(d);
}

/* attention's softmax rows: the AVX-512 build gives the AVX2 build's bits
 * (rows of 1 to 70 keys: whole 16-lane runs and tails), and both agree
 * with double precision */
static void softmax_builds(void) {
    enum { NQ = 30, I0 = 40, NK = I0 + NQ };
    float s[NQ * NK], a[NQ * NK], b[NQ * NK], da[NQ * NK], db[NQ * NK], ia[NQ], ib[NQ], la[NQ], lb[NQ];
    for (int i = 0; i < NQ * NK; i++) {
        const uint32_t u = (uint32_t)(i * 2654435761u);
        s[i] = ((float)(u >> 8) / 16777216.0f - 0.5f) * 12.0f;
    }
    s[5] = 95.0f, s[NK + 3] = -200.0f; /* past the exponential's clamps once the max is subtracted */
    for (int i0 = 0; i0 <= I0; i0 += I0) { /* rows of 1..30 keys, then 41..70 */
        const int nk = i0 + NQ;
        memcpy(a, s, sizeof s), memcpy(b, s, sizeof s);
        softmax_rows_forward_avx2(a, ia, la, NQ, nk, i0);
        int ok = 1;
        for (int r = 0; r < NQ && ok; r++) { /* against double precision */
            const int n = i0 + r + 1;
            double mx = s[r * nk], sum = 0.0;
            for (int j = 1; j < n; j++) mx = s[r * nk + j] > mx ? s[r * nk + j] : mx;
            for (int j = 0; j < n; j++) sum += exp((double)s[r * nk + j] - mx);
            ok = fabs(la[r] - (mx + log(sum))) <= 1e-5 * (1.0 + fabs(mx)) && fabs(ia[r] * sum - 1.0) < 1e-5;
            for (int j = 0; j < nk && ok; j++) {
                const double want = j < n ? exp((double)s[r * nk + j] - mx) : 0.0;
                ok = fabs(a[r * nk + j] - want) <= 1e-6 * (want + 1e-30) + 1e-37;
            }
        }
        CHECK(ok, "softmax rows (keys up to %d): the exponentials or sums differ from double precision", nk);
        if (!(pz_cpu_features() & PZ_CPU_AVX512)) continue;
        softmax_rows_forward_avx512(b, ib, lb, NQ, nk, i0);
        CHECK(!memcmp(a, b, sizeof(float) * NQ * nk) && !memcmp(ia, ib, sizeof ia) && !memcmp(la, lb, sizeof la),
              "softmax rows forward (keys up to %d): the AVX-512 build differs from the AVX2 build", nk);
        for (int i = 0; i < NQ * nk; i++) da[i] = db[i] = s[(i * 7) % (NQ * nk)] * 0.1f;
        memcpy(a, s, sizeof s), memcpy(b, s, sizeof s);
        softmax_rows_backward_avx2(a, da, la, NQ, nk, i0), softmax_rows_backward_avx512(b, db, la, NQ, nk, i0);
        CHECK(!memcmp(a, b, sizeof(float) * NQ * nk) && !memcmp(da, db, sizeof(float) * NQ * nk),
              "softmax rows backward (keys up to %d): the AVX-512 build differs from the AVX2 build", nk);
    }
}

static void layers(void) {
    { /* LayerNorm */
        ref_tensor *x = R("layernorm.x"), *w = R("layernorm.w"), *b = R("layernorm.b");
        const int C = x->dims[2], N = x->dims[0] * x->dims[1];
        float *y = zeros(x->n), *dx = zeros(x->n), *dw = zeros(C), *db = zeros(C), *mean = zeros(N), *rstd = zeros(N);
        layernorm_forward(y, mean, rstd, x->data, w->data, b->data, N, C, 1e-5f);
        close_to("layernorm forward", y, R("layernorm.y"), 1e-5f);
        layernorm_backward(dx, dw, db, R("layernorm.dy")->data, x->data, mean, rstd, w->data, N, C, NULL);
        close_to("layernorm dx", dx, R("layernorm.dx"), 1e-5f);
        close_to("layernorm dw", dw, R("layernorm.dw"), 1e-5f);
        close_to("layernorm db", db, R("layernorm.db"), 1e-5f);
        free(y), free(dx), free(dw), free(db), free(mean), free(rstd);
    }
    { /* GELU */
        ref_tensor *x = R("gelu.x");
        float *y = zeros(x->n), *dx = zeros(x->n);
        gelu_forward(y, x->data, x->n);
        close_to("gelu forward", y, R("gelu.y"), 1e-6f);
        gelu_backward(dx, R("gelu.dy")->data, x->data, x->n);
        close_to("gelu dx", dx, R("gelu.dx"), 1e-5f);
        free(y), free(dx);
    }
    { /* causal attention, 2 heads */
        ref_tensor *qkv = R("attention.qkv"), *want = R("attention.y");
        const int B = qkv->dims[0], T = qkv->dims[1], C = qkv->dims[2] / 3, NH = 2;
        float *y = zeros(want->n), *y2 = zeros(want->n), *lse = zeros((size_t)B * NH * T), *dq = zeros(qkv->n);
        attention_forward(y, lse, qkv->data, B, T, C, NH);
        close_to("attention forward", y, want, 1e-5f);
        /* causal: the last position's keys and values changed, every
         * earlier output stays the same bits */
        float *qkv2 = zeros(qkv->n);
        memcpy(qkv2, qkv->data, qkv->n * sizeof(float));
        for (int b = 0; b < B; b++)
            for (int c = C; c < 3 * C; c++) qkv2[((size_t)b * T + T - 1) * 3 * C + c] += 1.5f;
        attention_forward(y2, lse, qkv2, B, T, C, NH);
        int causal = 1;
        for (int b = 0; b < B; b++) causal &= !memcmp(y + (size_t)b * T * C, y2 + (size_t)b * T * C, (size_t)(T - 1) * C * sizeof(float));
        CHECK(causal, "an earlier position's output depends on a later key or value");
        attention_forward(y, lse, qkv->data, B, T, C, NH);
        attention_backward(dq, R("attention.dy")->data, qkv->data, lse, B, T, C, NH);
        close_to("attention dqkv", dq, R("attention.dqkv"), 1e-5f);
        free(y), free(y2), free(lse), free(dq), free(qkv2);
    }
    attention_tiles(100, 3, 5);
    attention_tiles(70, 2, 40);
    attention_tiles(90, 2, 32);
    gelu_builds();
    softmax_builds();
    { /* embeddings (a token repeated within a sequence and across them) */
        ref_tensor *tok = R("embedding.tok"), *wte = R("embedding.wte"), *wpe = R("embedding.wpe");
        const int B = tok->dims[0], T = tok->dims[1], V = wte->dims[0], C = wte->dims[1];
        float *y = zeros((size_t)B * T * C), *dwte = zeros(wte->n), *dwpe = zeros(wpe->n);
        embedding_forward(y, tok->data, wte->data, wpe->data, B, T, C, V);
        close_to("embedding forward", y, R("embedding.y"), 1e-6f);
        embedding_backward(dwte, dwpe, R("embedding.dy")->data, tok->data, B, T, C, V);
        close_to("embedding dwte", dwte, R("embedding.dwte"), 1e-6f);
        close_to("embedding dwpe", dwpe, R("embedding.dwpe"), 1e-6f);
        free(y), free(dwte), free(dwpe);
    }
}

/* two AdamW steps of the 2-block GPT; returns the final parameters */
static float *gpt_steps(int threads) {
    pz_set_threads(threads);
    ref_tensor *x = R("gpt.x"), *yf = R("gpt.y");
    const int B = x->dims[0], T = x->dims[1], V = 11;
    pz_model m;
    CHECK(pz_model_gpt(&m, 2, 16, 2, 8, T, V, B, 1) == PZ_OK, "%s", pz_last_error());
    CHECK(R("gpt.params")->n == (size_t)m.n_params, "parameter count %lld vs PyTorch %zu", (long long)m.n_params,
          R("gpt.params")->n);
    CHECK(m.targets == T && m.n_classes == V, "targets %d classes %d", m.targets, m.n_classes);
    memcpy(m.params, R("gpt.params")->data, sizeof(float) * (size_t)m.n_params);
    int32_t *y = calloc(yf->n, sizeof *y);
    for (size_t i = 0; i < yf->n; i++) y[i] = (int32_t)yf->data[i];
    /* weight decay on the dense matrices only (the model's mask) */
    CHECK(m.decay != NULL, "a GPT has a weight-decay mask");
    pz_optim o = {.beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f, .decay = m.decay};
    CHECK(pz_optim_init(&o, PZ_OPT_ADAMW, m.n_params) == PZ_OK, "optimizer");
    for (int step = 0; step < 2; step++) {
        char k[64], what[96];
        pz_model_zero_grad(&m);
        pz_seq_forward(&m.net, 0, m.net.n, x->data, B, 1);
        snprintf(k, sizeof k, "gpt.step%d.logits", step), snprintf(what, sizeof what, "%s (%d threads)", k, threads);
        close_to(what, pz_model_logits(&m), R(k), 1e-5f);
        int correct = -1;
        const float loss = pz_model_loss(&m, m.dlogits, &correct, pz_model_logits(&m), y, B);
        snprintf(k, sizeof k, "gpt.step%d.loss", step), snprintf(what, sizeof what, "%s (%d threads)", k, threads);
        close_to(what, &loss, R(k), 1e-6f);
        CHECK(correct >= 0 && correct <= B * T, "correct %d of %d", correct, B * T);
        pz_seq_backward(&m.net, 0, m.net.n, x->data, m.dlogits, NULL, B);
        snprintf(k, sizeof k, "gpt.step%d.grads", step), snprintf(what, sizeof what, "%s (%d threads)", k, threads);
        close_to(what, m.grads, R(k), 1e-4f);
        pz_optim_step(&o, m.params, m.grads, 1e-2f);
        snprintf(k, sizeof k, "gpt.step%d.params", step), snprintf(what, sizeof what, "%s (%d threads)", k, threads);
        close_to(what, m.params, R(k), 1e-5f);
    }
    float *out = pz_xfloats((size_t)m.n_params);
    memcpy(out, m.params, sizeof(float) * (size_t)m.n_params);
    pz_optim_free(&o);
    pz_model_free(&m);
    free(y);
    return out;
}

int main(void) {
    if (ref_load(&rf, PZ_SOURCE_DIR "/tests/ref/gpt.bin")) return 1;
    layers();
    const size_t n = R("gpt.params")->n;
    float *a = gpt_steps(1);
    free(a);
    float *b = gpt_steps(2), *c = gpt_steps(2);
    CHECK(!memcmp(b, c, sizeof(float) * n), "two 2-thread runs differ");
    free(b), free(c);
    ref_free(&rf);
    TEST_DONE();
}
