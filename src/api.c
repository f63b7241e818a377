/* SPDX-License-Identifier: MIT */
/* api.c — the public network API of include/pipezip/pipezip.h over src/nn. */
#include "pipezip/pipezip.h"
#include "nn/nn.h"

#include <stdlib.h>
#include <string.h>

struct pz_net {
    pz_model model;
    pz_optim opt;
};

const char *pz_version(void) { return PZ_VERSION_STRING; }

pz_status pz_net_create(pz_net **out, const char *preset, int channels, int height, int width,
                        int n_classes, int batch_max, uint64_t seed) {
    *out = NULL;
    if (!preset) return pz_fail(PZ_ERR_ARG, "preset is NULL");
    pz_net *n = calloc(1, sizeof *n);
    if (!n) return pz_fail(PZ_ERR_NOMEM, "out of memory");
    pz_status st = pz_model_preset(&n->model, preset, pz_shape_image(channels, height, width), n_classes, batch_max, seed);
    if (st) {
        free(n);
        return st;
    }
    n->opt.momentum = 0.9f;
    if ((st = pz_optim_init(&n->opt, PZ_OPT_SGD, n->model.n_params))) {
        pz_model_free(&n->model);
        free(n);
        return st;
    }
    *out = n;
    return PZ_OK;
}

void pz_net_free(pz_net *n) {
    if (!n) return;
    pz_optim_free(&n->opt);
    pz_model_free(&n->model);
    free(n);
}

int64_t pz_net_num_params(const pz_net *n) { return n->model.n_params; }

pz_status pz_net_forward(pz_net *n, const float *x, int B, float *logits) {
    if (B < 1 || B > n->model.batch_max)
        return pz_fail(PZ_ERR_ARG, "batch of %d, the network was created for 1..%d", B, n->model.batch_max);
    pz_seq_forward(&n->model.net, 0, n->model.net.n, x, B, 0);
    memcpy(logits, pz_model_logits(&n->model), sizeof(float) * (size_t)B * n->model.n_classes);
    return PZ_OK;
}

pz_status pz_net_train_step(pz_net *n, const float *x, const int32_t *labels, int B, float lr, float *loss) {
    if (B < 1 || B > n->model.batch_max)
        return pz_fail(PZ_ERR_ARG, "batch of %d, the network was created for 1..%d", B, n->model.batch_max);
    for (int b = 0; b < B; b++)
        if (labels[b] < 0 || labels[b] >= n->model.n_classes)
            return pz_fail(PZ_ERR_ARG, "label %d of example %d is not in 0..%d", labels[b], b, n->model.n_classes - 1);
    float l = pz_train_step(&n->model, &n->opt, lr, x, labels, B, NULL);
    if (loss) *loss = l;
    return PZ_OK;
}
