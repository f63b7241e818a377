/* SPDX-License-Identifier: MIT */
/* train.c — the model's loss, one training step and evaluation of a whole
 * (single-stage) model. */
#include "nn.h"
#include "kernels/kernels.h"

/* The loss is the mean softmax cross-entropy over every target: B rows of
 * class scores for an image model, B*T rows of vocabulary scores (one per
 * position, the next token its target) for a language model. */
float pz_model_loss(const pz_model *m, float *dlogits, int *correct, const float *logits, const int32_t *y, int B) {
    return softmax_xent_forward_backward(dlogits, correct, logits, y, B * m->targets, m->n_classes);
}

float pz_train_step(pz_model *m, pz_optim *o, float lr, const float *x, const int32_t *y, int B, int *correct) {
    pz_seq *s = &m->net;
    pz_model_zero_grad(m);
    pz_seq_forward(s, 0, s->n, x, B, 1);
    const float loss = pz_model_loss(m, m->dlogits, correct, pz_model_logits(m), y, B);
    pz_seq_backward(s, 0, s->n, x, m->dlogits, NULL, B);
    if (o) {
        pz_optim_step(o, m->params, m->grads, lr);
        pz_seq_after_step(s, 0, s->n);
    }
    return loss;
}

void pz_evaluate(pz_model *m, const float *x, const int32_t *y, int64_t N, double *loss, double *accuracy) {
    pz_seq *s = &m->net;
    const int64_t per = pz_shape_numel(s->in);
    double total = 0.0;
    int64_t hits = 0;
    for (int64_t i = 0; i < N; i += m->batch_max) {
        const int B = (int)(N - i < m->batch_max ? N - i : m->batch_max);
        pz_seq_forward(s, 0, s->n, x + i * per, B, 0);
        int c = 0;
        total += (double)pz_model_loss(m, NULL, &c, pz_model_logits(m), y + i * m->targets, B) * B;
        hits += c;
    }
    *loss = N ? total / (double)N : 0.0;
    *accuracy = N ? (double)hits / ((double)N * m->targets) : 0.0;
}
