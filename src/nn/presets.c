/* presets.c — the named models: mlp, lenet5, resnet8, resnet20. */
#include "nn.h"

#include <string.h>

static const char *const preset_names[] = {"mlp", "lenet5", "resnet8", "resnet20", NULL};

const char *const *pz_model_preset_names(void) { return preset_names; }

static pz_status build_mlp(pz_seq *s, int n_classes) {
    PZ_TRY(pz_add_flatten(s, "flatten"));
    PZ_TRY(pz_add_linear(s, "fc1", 256, 1));
    PZ_TRY(pz_add_relu(s, "relu1"));
    PZ_TRY(pz_add_linear(s, "fc2", 128, 1));
    PZ_TRY(pz_add_relu(s, "relu2"));
    return pz_add_linear(s, "fc3", n_classes, 1);
}

/* LeNet-5 with ReLU and max pooling; a 28x28 input is padded by 2 in the
 * first convolution so both 28x28 and 32x32 inputs reach 16x5x5. */
static pz_status build_lenet5(pz_seq *s, int n_classes) {
    const int pad = s->in.d[1] < 32 ? (32 - s->in.d[1] + 1) / 2 : 0;
    PZ_TRY(pz_add_conv(s, "conv1", 6, 5, 1, pad, 1));
    PZ_TRY(pz_add_relu(s, "relu1"));
    PZ_TRY(pz_add_maxpool(s, "pool1", 2, 2, 0));
    PZ_TRY(pz_add_conv(s, "conv2", 16, 5, 1, 0, 1));
    PZ_TRY(pz_add_relu(s, "relu2"));
    PZ_TRY(pz_add_maxpool(s, "pool2", 2, 2, 0));
    PZ_TRY(pz_add_flatten(s, "flatten"));
    PZ_TRY(pz_add_linear(s, "fc1", 120, 1));
    PZ_TRY(pz_add_relu(s, "relu3"));
    PZ_TRY(pz_add_linear(s, "fc2", 84, 1));
    PZ_TRY(pz_add_relu(s, "relu4"));
    return pz_add_linear(s, "fc3", n_classes, 1);
}

/* CIFAR-style ResNet (He et al. 2016, section 4.2): 6n+2 layers, three groups
 * of n basic blocks at widths 16/32/64, the first block of groups 2 and 3
 * downsamples with stride 2 and a 1x1 projection shortcut. */
static pz_status build_resnet(pz_seq *s, int n, int n_classes) {
    PZ_TRY(pz_add_conv(s, "conv1", 16, 3, 1, 1, 0));
    PZ_TRY(pz_add_batchnorm(s, "bn1"));
    PZ_TRY(pz_add_relu(s, "relu1"));
    const int width[3] = {16, 32, 64};
    for (int g = 0; g < 3; g++)
        for (int i = 0; i < n; i++) {
            char name[32];
            snprintf(name, sizeof name, "layer%d.%d", g + 1, i);
            PZ_TRY(pz_add_basic_block(s, name, width[g], (g > 0 && i == 0) ? 2 : 1));
        }
    PZ_TRY(pz_add_global_avgpool(s, "pool"));
    return pz_add_linear(s, "fc", n_classes, 1);
}

pz_status pz_model_preset(pz_model *m, const char *preset, pz_shape in, int n_classes,
                          int batch_max, uint64_t seed) {
    return pz_model_preset_range(m, preset, in, n_classes, batch_max, seed, 0, 1 << 30);
}

pz_status pz_model_preset_range(pz_model *m, const char *preset, pz_shape in, int n_classes, int batch_max, uint64_t seed,
                                int from, int to) {
    memset(m, 0, sizeof *m);
    char sh[48];
    if (in.rank != 3 || in.d[0] < 1 || in.d[1] < 1 || in.d[2] < 1)
        return pz_fail(PZ_ERR_ARG, "input shape %s is not an image (C x H x W, each at least 1)", pz_shape_str(in, sh, sizeof sh));
    if (n_classes < 2) return pz_fail(PZ_ERR_ARG, "need at least 2 classes, got %d", n_classes);
    pz_seq_init(&m->net, in);
    pz_status st;
    if (!strcmp(preset, "mlp")) st = build_mlp(&m->net, n_classes);
    else if (!strcmp(preset, "lenet5")) st = build_lenet5(&m->net, n_classes);
    else if (!strcmp(preset, "resnet8")) st = build_resnet(&m->net, 1, n_classes);
    else if (!strcmp(preset, "resnet20")) st = build_resnet(&m->net, 3, n_classes);
    else return pz_fail(PZ_ERR_ARG, "unknown model '%s' (expected mlp, lenet5, resnet8 or resnet20)", preset);
    if (st == PZ_OK) st = pz_model_finalize_range(m, batch_max, n_classes, seed, from, to);
    if (st != PZ_OK) {
        pz_model_free(m);
        return st;
    }
    snprintf(m->preset, sizeof m->preset, "%s", preset);
    return PZ_OK;
}
