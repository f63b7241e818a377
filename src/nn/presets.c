/* SPDX-License-Identifier: MIT */
/* presets.c — the named models: image classifiers (mlp, lenet5, resnet8,
 * resnet20, resnet56) and GPT-2 style language models (gpt-tiny, gpt-small). */
#include "nn.h"
#include "base/names.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* The architectures: what the run layer asks of each (nn.h). */
static const pz_model_kind kinds[] = {
    {PZ_ARCH_MLP, "MLPs", 0, 0, 0, {{0}}, NULL, PZ_DEFAULTS_IMAGE},
    {PZ_ARCH_LENET5, "LeNet-5s", 0, 0, 0, {{0}}, NULL, PZ_DEFAULTS_IMAGE},
    {PZ_ARCH_RESNET, "resnets", 0, 0, 3, {"layer1", "layer2", "layer3"}, "after each residual group, as Paper A", PZ_DEFAULTS_IMAGE},
    {PZ_ARCH_GPT, "GPTs", 1, 1, 0, {{0}}, NULL, PZ_DEFAULTS_LANGUAGE},
};

const pz_model_kind *pz_model_kind_of(const pz_model_spec *s) {
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
        if (kinds[i].arch == s->arch) return &kinds[i];
    return &kinds[0]; /* unreachable for a parsed spec */
}

/* The presets: each name and the spec it stands for, in one table (what
 * --model accepts, `pipezip models` lists and errors name). */
static const struct {
    const char *name;
    pz_model_spec spec;
} presets[] = {
    {"mlp", {.arch = PZ_ARCH_MLP}},
    {"lenet5", {.arch = PZ_ARCH_LENET5}},
    {"resnet8", {.arch = PZ_ARCH_RESNET, .depth = 1}},
    {"resnet20", {.arch = PZ_ARCH_RESNET, .depth = 3}},
    {"resnet56", {.arch = PZ_ARCH_RESNET, .depth = 9}}, /* He et al. 2016's CIFAR ResNet-56 (0.86M parameters) */
    {"gpt-tiny", {.arch = PZ_ARCH_GPT, .layers = 4, .dim = 128, .heads = 4, .context = 128}},
    {"gpt-small", {.arch = PZ_ARCH_GPT, .layers = 6, .dim = 256, .heads = 8, .context = 256}},
};
#define N_PRESETS (int)(sizeof presets / sizeof *presets)

const char *const *pz_model_preset_names(void) {
    static const char *names[N_PRESETS + 1];
    for (int i = 0; i < N_PRESETS; i++) names[i] = presets[i].name;
    return names;
}

const char *pz_model_preset_list(const char *sep, const char *last, char *buf, size_t cap) {
    size_t n = 0;
    if (cap) buf[0] = 0;
    for (int i = 0; i < N_PRESETS && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", i == 0 ? "" : i == N_PRESETS - 1 ? last : sep, presets[i].name);
    return buf;
}

/* the keys of a GPT's shape in a spec: its name, an alias, the field, the range */
static const struct {
    const char *key, *alias;
    size_t off;
    int min, max;
} gpt_keys[] = {
    {"layers", "blocks", offsetof(pz_model_spec, layers), 1, 256},
    {"d", "dim", offsetof(pz_model_spec, dim), 1, 16384},
    {"heads", NULL, offsetof(pz_model_spec, heads), 1, 1024},
    {"ctx", "context", offsetof(pz_model_spec, context), 1, 65536},
    {"untied", NULL, offsetof(pz_model_spec, untied), 0, 1},
};

static pz_status spec_unknown(const char *name) {
    char list[256];
    return pz_fail(PZ_ERR_ARG, "unknown model '%s' (expected %s, or gpt:layers=L,d=D,heads=H,ctx=T)", name ? name : "",
                   pz_model_preset_list(", ", " or ", list, sizeof list));
}

/* "KEY=V,..." over a GPT spec's sizes; whole is the spec as typed (errors) */
static pz_status gpt_sizes(pz_model_spec *s, const char *list, const char *whole) {
    if (!*list) return pz_fail(PZ_ERR_ARG, "model '%s': nothing after ':' (expected layers=L,d=D,heads=H,ctx=T[,untied=1])", whole);
    unsigned seen = 0;
    for (const char *t = list; *t;) {
        const char *e = strchr(t, ','), *eq = strchr(t, '=');
        if (!e) e = t + strlen(t);
        if (!eq || eq > e)
            return pz_fail(PZ_ERR_ARG, "model '%s': '%.*s' is not KEY=VALUE (keys: layers, d, heads, ctx, untied)", whole, (int)(e - t), t);
        const size_t kn = (size_t)(eq - t);
        int k = -1;
        for (int i = 0; i < (int)(sizeof gpt_keys / sizeof *gpt_keys) && k < 0; i++)
            if ((strlen(gpt_keys[i].key) == kn && !strncmp(t, gpt_keys[i].key, kn)) ||
                (gpt_keys[i].alias && strlen(gpt_keys[i].alias) == kn && !strncmp(t, gpt_keys[i].alias, kn)))
                k = i;
        if (k < 0) return pz_fail(PZ_ERR_ARG, "model '%s': unknown key '%.*s' (keys: layers, d, heads, ctx, untied)", whole, (int)kn, t);
        if (seen & (1u << k)) return pz_fail(PZ_ERR_ARG, "model '%s': %s is given twice", whole, gpt_keys[k].key);
        seen |= 1u << k;
        char num[32];
        const size_t vn = (size_t)(e - eq - 1);
        snprintf(num, sizeof num, "%.*s", (int)(vn < sizeof num - 1 ? vn : sizeof num - 1), eq + 1);
        char *end;
        const long v = strtol(num, &end, 10);
        if (!vn || vn >= sizeof num || *end || v < gpt_keys[k].min || v > gpt_keys[k].max)
            return pz_fail(PZ_ERR_ARG, "model '%s': %s must be an integer in %d..%d, got '%.*s'", whole, gpt_keys[k].key,
                           gpt_keys[k].min, gpt_keys[k].max, (int)vn, eq + 1);
        *(int *)((char *)s + gpt_keys[k].off) = (int)v;
        t = *e ? e + 1 : e;
        if (*e && !*t) return pz_fail(PZ_ERR_ARG, "model '%s': a ',' with nothing after it", whole);
    }
    if (s->dim % s->heads)
        return pz_fail(PZ_ERR_ARG, "model '%s': width d=%d does not split into %d heads (d must be a multiple of heads)", whole,
                       s->dim, s->heads);
    return PZ_OK;
}

pz_status pz_model_spec_parse(pz_model_spec *s, const char *name) {
    memset(s, 0, sizeof *s);
    if (!name) return spec_unknown(name);
    const char *colon = strchr(name, ':');
    const size_t base = colon ? (size_t)(colon - name) : strlen(name);
    int found = -1;
    for (int i = 0; i < N_PRESETS && found < 0; i++)
        if (strlen(presets[i].name) == base && !strncmp(presets[i].name, name, base)) found = i;
    const int plain_gpt = found < 0 && base == 3 && !strncmp(name, "gpt", 3);
    if (found < 0 && !plain_gpt) return spec_unknown(name);
    if (strlen(name) >= sizeof s->name) return pz_fail(PZ_ERR_ARG, "model '%s': a spec of at most %zu characters", name, sizeof s->name - 1);
    if (plain_gpt && !colon) return pz_fail(PZ_ERR_ARG, "model 'gpt' needs its shape: gpt:layers=L,d=D,heads=H,ctx=T");
    if (plain_gpt) /* gpt: gpt-tiny's sizes where a key is not given */
        for (int i = 0; i < N_PRESETS && found < 0; i++)
            if (!strcmp(presets[i].name, "gpt-tiny")) found = i;
    *s = presets[found].spec;
    if (colon) {
        if (s->arch != PZ_ARCH_GPT)
            return pz_fail(PZ_ERR_ARG, "model '%s': only a GPT takes sizes after ':' (%.*s has none)", name, (int)base, name);
        PZ_TRY(gpt_sizes(s, colon + 1, name));
    }
    snprintf(s->name, sizeof s->name, "%s", name);
    return PZ_OK;
}

/* mlp and lenet5: Kaiming-normal hidden layers and a classifier that starts
 * at zero, so the first loss is ln(classes) exactly. With Kaiming weights in
 * the classifier too a first step's loss was 2.6-5.7 (lenet5); measured on
 * `pipezip train --model lenet5 --epochs 1 --limit-train 3000`, seeds 1-5,
 * test accuracy: Kaiming classifier 17.9 61.2 56.5 60.2 57.5% (mean 50.6),
 * PyTorch's default everywhere (uniform +-1/sqrt(fan_in), seeds 1-3) 20.4
 * 48.5 43.7%, PyTorch's default in the classifier only 29.2 69.8 63.8 69.4
 * 24.5% (51.3), zero classifier 39.2 61.7 49.2 70.0 58.1% (55.6); mlp 70.5
 * (3 seeds), 71.9 and 72.9%. The resnets keep theirs (results/ were made so). */
static pz_status zero_classifier(pz_seq *s) {
    s->layers[s->n - 1].zero_init = 1;
    return PZ_OK;
}

static pz_status build_mlp(pz_seq *s, int n_classes) {
    PZ_TRY(pz_add_flatten(s, "flatten"));
    PZ_TRY(pz_add_linear(s, "fc1", 256, 1));
    PZ_TRY(pz_add_relu(s, "relu1"));
    PZ_TRY(pz_add_linear(s, "fc2", 128, 1));
    PZ_TRY(pz_add_relu(s, "relu2"));
    PZ_TRY(pz_add_linear(s, "fc3", n_classes, 1));
    return zero_classifier(s);
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
    PZ_TRY(pz_add_linear(s, "fc3", n_classes, 1));
    return zero_classifier(s);
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

/* GPT-2 (Radford et al. 2019) at small scale: token and learned position
 * embeddings, L pre-norm blocks (x + attn(ln_1(x)), then x + mlp(ln_2(x))
 * with a 4x GELU MLP), a final LayerNorm and a head tied to the token
 * table. Weights normal(0, 0.02), the projections into the residual stream
 * scaled by 1/sqrt(2L), biases zero, LayerNorms 1 and 0 (GPT-2's scheme). */
/* what a GPT is built from: a spec's sizes and the data's vocabulary */
typedef struct {
    int layers, dim, heads, context, subspace, vocab, untied;
    int project;            /* --project K: a learned projection pair at each cut after a block in project_after */
    uint32_t project_after;
    int index;              /* the block being built */
} gpt_spec;
static gpt_spec gpt_of(const pz_model_spec *s, int vocab) {
    return (gpt_spec){.layers = s->layers, .dim = s->dim, .heads = s->heads, .context = s->context, .subspace = s->subspace,
                      .vocab = vocab, .untied = s->untied, .project = s->subspace ? s->project : 0,
                      .project_after = s->project_after};
}

static pz_status build_gpt(pz_seq *s, const gpt_spec *g);
static pz_status decay_matrices_only(pz_model *m);

uint32_t pz_model_cut_blocks(const pz_model_spec *s, const char (*cuts)[64], int n_cuts) {
    uint32_t mask = 0;
    if (s->arch != PZ_ARCH_GPT) return 0;
    for (int c = 0; c < n_cuts; c++) {
        char *end;
        long b = -1;
        if (!strncmp(cuts[c], "h.", 2)) b = strtol(cuts[c] + 2, &end, 10);
        else b = strtol(cuts[c], &end, 10) - 1; /* a top-level index: the embedding is layer 0, h.N layer N + 1 */
        if (end == cuts[c] || *end || b < 0 || b + 1 >= s->layers || b >= 32) continue;
        mask |= 1u << b;
    }
    return mask;
}

pz_status pz_model_gpt(pz_model *m, int layers, int dim, int heads, int context, int T, int vocab, int batch_max,
                       uint64_t seed) {
    memset(m, 0, sizeof *m);
    if (layers < 1 || dim < 1 || heads < 1 || context < 1 || T < 1 || T > context)
        return pz_fail(PZ_ERR_ARG, "a GPT of %d blocks, width %d, %d heads, context %d over %d tokens is not valid", layers,
                       dim, heads, context, T);
    const gpt_spec g = {.layers = layers, .dim = dim, .heads = heads, .context = context, .vocab = vocab};
    pz_seq_init(&m->net, pz_shape_tokens(T));
    pz_status st = build_gpt(&m->net, &g);
    if (st == PZ_OK) st = pz_model_finalize(m, batch_max, vocab, seed);
    if (st == PZ_OK) st = decay_matrices_only(m);
    if (st != PZ_OK) {
        pz_model_free(m);
        return st;
    }
    snprintf(m->preset, sizeof m->preset, "gpt");
    return PZ_OK;
}

static float proj_std(const gpt_spec *g) { return 0.02f / sqrtf(2.0f * (float)g->layers); }

/* A subspace model's branch reads the stream through a lift of its own and
 * writes K coefficients; the others read it as it is and write C. */
static pz_status branch_in(pz_seq *r, const char *lift, const gpt_spec *g) {
    return g->subspace ? pz_add_subspace(r, lift, g->vocab, g->context, g->dim, 0.02f) : PZ_OK;
}
static int branch_out(const gpt_spec *g) { return g->subspace ? g->subspace : g->dim; }

static pz_status attn_branch(pz_seq *r, const gpt_spec *g) {
    PZ_TRY(branch_in(r, "attn.lift", g));
    PZ_TRY(pz_add_layernorm(r, "ln_1"));
    PZ_TRY(pz_add_dense(r, "attn.c_attn", 3 * g->dim, 1, 0.02f));
    PZ_TRY(pz_add_attention(r, "attn", g->heads));
    return pz_add_dense(r, "attn.c_proj", branch_out(g), 1, proj_std(g));
}

static pz_status mlp_branch(pz_seq *r, const gpt_spec *g) {
    PZ_TRY(branch_in(r, "mlp.lift", g));
    PZ_TRY(pz_add_layernorm(r, "ln_2"));
    PZ_TRY(pz_add_dense(r, "mlp.c_fc", 4 * g->dim, 1, 0.02f));
    PZ_TRY(pz_add_gelu(r, "mlp.gelu"));
    return pz_add_dense(r, "mlp.c_proj", branch_out(g), 1, proj_std(g));
}

/* a residual or group layer of what fill adds (it takes the list over) */
static pz_status inner(pz_seq *s, const char *name, int residual, pz_status (*fill)(pz_seq *, const gpt_spec *),
                       const gpt_spec *g) {
    pz_seq *r = pz_begin_inner(s, name);
    if (!r) return PZ_ERR_NOMEM;
    const pz_status st = fill(r, g);
    const pz_status e = residual ? pz_end_residual(s, name, r) : pz_end_group(s, name, r);
    return st ? st : e;
}

/* With --project K, a block after a cut starts by lifting the boundary's
 * K coefficients back to the stream's, and a block before one ends by
 * projecting to them (layers/project.c): the top-level layers, and so the
 * cuts, stay where they were. */
static int cut_after(const gpt_spec *g, int block) {
    return g->project && block >= 0 && block < 32 && (g->project_after >> block & 1u);
}

static pz_status block(pz_seq *b, const gpt_spec *g) {
    if (cut_after(g, g->index - 1)) PZ_TRY(pz_add_unproject(b, "unproject", g->vocab, g->context, g->subspace));
    PZ_TRY(inner(b, "attn", 1, attn_branch, g));
    PZ_TRY(inner(b, "mlp", 1, mlp_branch, g));
    return cut_after(g, g->index) ? pz_add_project(b, "project", g->vocab, g->context, g->project) : PZ_OK;
}

/* With a subspace (--subspace K, Protocol Models): the stream between the
 * top-level layers is its K coefficients (the embedding's, then each
 * block's residual adds), every branch reads it through a lift of its own
 * (layers/subspace.c), and the final LayerNorm through a last lift
 * ("lift_f"), whose token table the head is tied to. */
static pz_status build_gpt(pz_seq *s, const gpt_spec *g) {
    const int vocab = g->vocab;
    if (g->subspace) PZ_TRY(pz_add_subspace_embedding(s, "wte", vocab, g->context, g->subspace, 0.02f));
    else PZ_TRY(pz_add_embedding(s, "wte", vocab, g->context, g->dim, 0.02f));
    if (g->project && (!g->subspace || g->project > g->subspace || g->project_after >> (g->layers - 1 < 31 ? g->layers - 1 : 31)))
        return pz_fail(PZ_ERR_ARG, "--project %d: needs --subspace (at least %d) and cuts between blocks", g->project, g->project);
    for (int i = 0; i < g->layers; i++) {
        char name[32];
        snprintf(name, sizeof name, "h.%d", i);
        gpt_spec gi = *g;
        gi.index = i;
        PZ_TRY(inner(s, name, 0, block, &gi));
    }
    if (g->subspace) PZ_TRY(pz_add_subspace(s, "lift_f", vocab, g->context, g->dim, 0.02f));
    PZ_TRY(pz_add_layernorm(s, "ln_f"));
    /* untied (ProtocolNanoGPT's): a head of its own on the last stage, so
     * no token table crosses the pipeline */
    if (g->untied) return pz_add_dense(s, "lm_head", vocab, 0, 0.02f);
    return pz_add_tied_head(s, "lm_head", g->subspace ? "lift_f" : "wte");
}

/* weight decay on the matrices of the dense layers only: not on the
 * embeddings, LayerNorms or biases (GPT-2 / minGPT practice) */
static void mark_decay(const pz_model *m, const pz_seq *s) {
    for (int i = 0; i < s->n; i++) {
        const pz_layer *l = &s->layers[i];
        if (l->kind == PZ_LAYER_LINEAR) memset(m->decay + (l->weight - m->params), 1, (size_t)(l->n_params - (l->has_bias ? (l->out.rank == 2 ? l->out.d[1] : l->out.d[0]) : 0)));
        if (l->main) mark_decay(m, l->main);
        if (l->shortcut) mark_decay(m, l->shortcut);
    }
}

static pz_status decay_matrices_only(pz_model *m) {
    m->decay = calloc((size_t)m->n_params ? (size_t)m->n_params : 1, 1);
    if (!m->decay) return pz_fail(PZ_ERR_NOMEM, "out of memory for the weight-decay mask");
    mark_decay(m, &m->net);
    return PZ_OK;
}

pz_status pz_model_preset(pz_model *m, const char *preset, pz_shape in, int n_classes,
                          int batch_max, uint64_t seed) {
    return pz_model_preset_range(m, preset, in, n_classes, batch_max, seed, 0, 1 << 30);
}

pz_status pz_model_preset_range(pz_model *m, const char *preset, pz_shape in, int n_classes, int batch_max, uint64_t seed,
                                int from, int to) {
    memset(m, 0, sizeof *m);
    pz_model_spec spec;
    PZ_TRY(pz_model_spec_parse(&spec, preset));
    return pz_model_build(m, &spec, in, n_classes, batch_max, seed, from, to);
}

static pz_status build(pz_model *m, const pz_model_spec *spec, pz_shape in, int n_classes, int batch_max, uint64_t seed, int from,
                       int to, int alloc);

pz_status pz_model_build(pz_model *m, const pz_model_spec *spec, pz_shape in, int n_classes, int batch_max, uint64_t seed,
                         int from, int to) {
    return build(m, spec, in, n_classes, batch_max, seed, from, to, 1);
}

pz_status pz_model_layers(pz_model *m, const pz_model_spec *spec, pz_shape in, int n_classes) {
    return build(m, spec, in, n_classes, 1, 0, 0, 0, 0);
}

static pz_status build(pz_model *m, const pz_model_spec *spec, pz_shape in, int n_classes, int batch_max, uint64_t seed, int from,
                       int to, int alloc) {
    memset(m, 0, sizeof *m);
    char sh[48];
    const char *preset = spec->name;
    const pz_model_spec *g = spec->arch == PZ_ARCH_GPT ? spec : NULL;
    if (g) {
        if (in.rank != 1 || in.d[0] < 1 || in.d[0] > g->context)
            return pz_fail(PZ_ERR_ARG, "model '%s' takes sequences of 1 to %d tokens, not %s", preset, g->context,
                           pz_shape_str(in, sh, sizeof sh));
        if (n_classes < 2) return pz_fail(PZ_ERR_ARG, "need a vocabulary of at least 2 tokens, got %d", n_classes);
    } else {
        if (in.rank != 3 || in.d[0] < 1 || in.d[1] < 1 || in.d[2] < 1)
            return pz_fail(PZ_ERR_ARG, "input shape %s is not an image (C x H x W, each at least 1)", pz_shape_str(in, sh, sizeof sh));
        if (n_classes < 2) return pz_fail(PZ_ERR_ARG, "need at least 2 classes, got %d", n_classes);
    }
    if (g && g->subspace && (g->subspace < 1 || g->subspace > g->dim))
        return pz_fail(PZ_ERR_ARG, "a subspace of %d in model '%s' of width %d: it must be 1 to %d", g->subspace, preset, g->dim,
                       g->dim);
    pz_seq_init(&m->net, in);
    pz_status st;
    if (g && g->subspace) {
        st = pz_subspace_create(&m->sub, g->subspace, g->dim, seed);
        if (st != PZ_OK) {
            pz_model_free(m);
            return st;
        }
    }
    switch (spec->arch) {
    case PZ_ARCH_GPT: {
        const gpt_spec gs = gpt_of(g, n_classes);
        st = build_gpt(&m->net, &gs);
        break;
    }
    case PZ_ARCH_MLP: st = build_mlp(&m->net, n_classes); break;
    case PZ_ARCH_LENET5: st = build_lenet5(&m->net, n_classes); break;
    case PZ_ARCH_RESNET: st = build_resnet(&m->net, spec->depth, n_classes); break;
    default: return pz_fail(PZ_ERR_ARG, "model '%s' has no architecture", preset);
    }
    if (st == PZ_OK && alloc) st = pz_model_finalize_range(m, batch_max, n_classes, seed, from, to);
    if (st == PZ_OK && alloc && g) st = decay_matrices_only(m);
    if (st == PZ_OK && !alloc)
        for (int i = 0; i < m->net.n; i++) m->n_params += m->net.layers[i].n_params;
    if (st != PZ_OK) {
        pz_model_free(m);
        return st;
    }
    snprintf(m->preset, sizeof m->preset, "%s", preset);
    return PZ_OK;
}
