/* SPDX-License-Identifier: MIT */
/* test_resnet8_ref.c — a whole resnet8 (1x28x28, batch 8) against PyTorch:
 * logits, loss and every parameter gradient of one step, the parameters and
 * BN running statistics after two SGD steps (momentum 0.9, Nesterov, weight
 * decay 5e-4), and eval-mode logits. Weights and inputs come from an integer
 * hash both sides compute bit for bit (tests/ref/gen_ref.py, formula()).
 *
 * Tolerance: float32 with different summation orders (BLAS blocking, our
 * double-accumulated BN statistics vs PyTorch's) differs by a few ulps per
 * op; through 20 layers that grows to ~1e-5 relative. We allow
 * |got - want| <= 1e-4 * max|want| (per tensor) + 1e-3 * |want|. */
#include "tool/xalloc.h"
#include "../test.h"
#include "nn/nn.h"
#include "kernels/kernels.h"

static void formula(float *out, size_t n, int t) {
    for (size_t i = 0; i < n; i++) {
        uint64_t h = ((uint64_t)i * 2654435761u + (uint64_t)(t + 1) * 97531u) & 0xFFFFFFFFu;
        h ^= h >> 15;
        h = (h * 2246822519u) & 0xFFFFFFFFu;
        h ^= h >> 13;
        const float u = (float)(h >> 8) * (1.0f / 16777216.0f);
        out[i] = 2.0f * u - 1.0f;
    }
}

static void fill_weight(float *w, size_t n, int fan_in, int *t) {
    formula(w, n, (*t)++);
    const float s = (float)sqrt(6.0 / fan_in);
    for (size_t i = 0; i < n; i++) w[i] *= s;
}

static void fill_small(float *w, size_t n, float offset, int *t) {
    formula(w, n, (*t)++);
    for (size_t i = 0; i < n; i++) w[i] = offset + w[i] * 0.125f;
}

/* parameters in PyTorch's named_parameters() order, which is ours */
static void fill_seq(pz_seq *s, int *t) {
    for (int i = 0; i < s->n; i++) {
        pz_layer *l = &s->layers[i];
        switch (l->kind) {
        case PZ_LAYER_CONV:
            fill_weight(l->weight, (size_t)l->out.d[0] * l->in.d[0] * l->k * l->k, l->in.d[0] * l->k * l->k, t);
            if (l->has_bias) fill_small(l->bias, l->out.d[0], 0.0f, t);
            break;
        case PZ_LAYER_LINEAR:
            fill_weight(l->weight, (size_t)l->out.d[0] * pz_shape_numel(l->in), (int)pz_shape_numel(l->in), t);
            if (l->has_bias) fill_small(l->bias, l->out.d[0], 0.0f, t);
            break;
        case PZ_LAYER_BATCHNORM:
            fill_small(l->weight, l->in.d[0], 1.0f, t);
            fill_small(l->bias, l->in.d[0], 0.0f, t);
            break;
        case PZ_LAYER_BLOCK:
            fill_seq(l->main, t);
            fill_seq(l->shortcut, t);
            break;
        default:
            break;
        }
    }
}

static void close_to(const char *what, const float *got, const ref_tensor *want) {
    float mx = 0.0f;
    for (size_t i = 0; i < want->n; i++) mx = fmaxf(mx, fabsf(want->data[i]));
    check_close(what, got, want->data, want->n, 1e-4f * mx, 1e-3f);
}

int main(void) {
    const int B = 8;
    ref_file rf;
    if (ref_load(&rf, PZ_SOURCE_DIR "/tests/ref/resnet8_step.bin")) return 1;
    for (int threads = 1; threads <= 2; threads++) {
        pz_set_threads(threads);
        pz_model m;
        CHECK(pz_model_preset(&m, "resnet8", pz_shape_image(1, 28, 28), 10, B, 99) == PZ_OK, "%s", pz_last_error());
        int t = 0;
        fill_seq(&m.net, &t);
        CHECK(ref_get(&rf, "step0.grads")->n == (size_t)m.n_params, "parameter count %lld vs PyTorch %zu",
              (long long)m.n_params, ref_get(&rf, "step0.grads")->n);
        float *x = pz_xfloats((size_t)B * 28 * 28);
        formula(x, (size_t)B * 28 * 28, 1000);
        int32_t y[8];
        for (int i = 0; i < B; i++) y[i] = (i * 7 + 3) % 10;

        pz_optim o = {.momentum = 0.9f, .nesterov = 1, .weight_decay = 5e-4f};
        pz_optim_init(&o, PZ_OPT_SGD, m.n_params);
        /* step 0 by hand, to look at logits and gradients */
        pz_model_zero_grad(&m);
        pz_seq_forward(&m.net, 0, m.net.n, x, B, 1);
        close_to("step0 logits", pz_model_logits(&m), ref_get(&rf, "step0.logits"));
        float loss = softmax_xent_forward_backward(m.dlogits, NULL, pz_model_logits(&m), y, B, 10);
        close_to("step0 loss", &loss, ref_get(&rf, "step0.loss"));
        pz_seq_backward(&m.net, 0, m.net.n, x, m.dlogits, NULL, B);
        close_to("step0 grads", m.grads, ref_get(&rf, "step0.grads"));
        pz_optim_step(&o, m.params, m.grads, 0.1f);
        /* step 1 through the library's train step */
        loss = pz_train_step(&m, &o, 0.1f, x, y, B, NULL);
        close_to("step1 loss", &loss, ref_get(&rf, "step1.loss"));
        close_to("params after 2 steps", m.params, ref_get(&rf, "params_after"));
        close_to("bn running stats after 2 steps", m.buffers, ref_get(&rf, "buffers_after"));
        pz_seq_forward(&m.net, 0, m.net.n, x, B, 0);
        close_to("eval logits", pz_model_logits(&m), ref_get(&rf, "eval_logits"));

        pz_optim_free(&o);
        pz_model_free(&m);
        free(x);
    }
    ref_free(&rf);
    TEST_DONE();
}
