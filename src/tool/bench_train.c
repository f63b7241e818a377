/* SPDX-License-Identifier: MIT */
/* bench_train.c — the measurement behind `pipezip bench train` (median
 * time of a training step of a preset on random inputs, and what computed
 * it: the BLAS and convolution kernels) and the listing behind `pipezip
 * models`. */
#include "tool/bench.h"
#include "tool/xalloc.h"
#include "nn/nn.h"

#include <stdlib.h>
#include <string.h>

int tool_bench_train(const bench_train_options *o, FILE *out) {
    const char *model = o->model, *input = o->input;
    const int batch = o->batch, warmup = o->warmup, repeat = o->repeat;
    pz_set_threads(o->threads);
    pz_model_spec spec;
    if (pz_model_spec_parse(&spec, model)) {
        fprintf(stderr, "pipezip bench train: %s\n", pz_last_error());
        return 1;
    }
    const int lm = pz_model_spec_is_sequence(&spec), V = 256;
    pz_shape in = lm ? pz_shape_tokens(spec.context) : !strcmp(input, "3x32x32") ? pz_shape_image(3, 32, 32) : pz_shape_image(1, 28, 28);
    char in_str[48];
    pz_shape_str(in, in_str, sizeof in_str);
    input = in_str;
    const int classes = lm ? V : 10;
    pz_model m;
    if (pz_model_build(&m, &spec, in, classes, batch, 1, 0, 1 << 30)) {
        fprintf(stderr, "pipezip bench train: %s\n", pz_last_error());
        return 1;
    }
    pz_optim opt = {.momentum = 0.9f, .weight_decay = lm ? 0.1f : 5e-4f, .beta2 = 0.95f, .decay = m.decay};
    pz_optim_init(&opt, lm ? PZ_OPT_ADAMW : PZ_OPT_SGD, m.n_params);
    const size_t n = (size_t)batch * pz_shape_numel(in), ny = (size_t)batch * m.targets;
    float *x = pz_xfloats(n);
    int32_t *y = pz_xcalloc(ny, sizeof(int32_t));
    pz_rng r;
    pz_rng_seed(&r, 7);
    for (size_t i = 0; i < n; i++) x[i] = lm ? (float)pz_rng_below(&r, V) : pz_rng_normal(&r);
    for (size_t i = 0; i < ny; i++) y[i] = (int32_t)pz_rng_below(&r, (uint32_t)classes);
    const int per = lm ? m.targets : 1; /* tokens per sample, or 1 */
    double *t = pz_xcalloc((size_t)repeat, sizeof(double));
    for (int i = 0; i < warmup + repeat; i++) {
        const double t0 = pz_now();
        pz_train_step(&m, &opt, 0.01f, x, y, batch, NULL);
        if (i >= warmup) t[i - warmup] = pz_now() - t0;
    }
    const double med = pz_median(t, repeat), lo = t[0], hi = t[repeat - 1];
    /* what ran: the BLAS, its kernels and who chose them */
    const pz_blas_info bi = pz_blas_get_info();
    const pz_conv_info ci = pz_nn_conv_info();
    if (o->json)
        fprintf(out, "{\"bench\": \"train\", \"model\": \"%s\", \"input\": \"%s\", \"batch\": %d, \"threads\": %d, "
               "\"repeat\": %d, \"median_ms\": %.3f, \"min_ms\": %.3f, \"max_ms\": %.3f, \"samples_per_s\": %.1f, "
               "\"tokens_per_s\": %.1f, "
               "\"blas\": \"%s\", \"blas_core\": \"%s\", \"blas_core_chosen_by\": \"%s\", \"blas_generic\": %s, "
               "\"conv_kernels\": \"%s\", \"conv_kernels_chosen_by\": \"%s\", \"conv_generic\": %s}\n",
               model, input, batch, pz_get_threads(), repeat, 1e3 * med, 1e3 * lo, 1e3 * hi, batch / med,
               lm ? batch * per / med : 0.0, bi.library, bi.core, bi.source, bi.generic ? "true" : "false", ci.name,
               ci.source, ci.generic ? "true" : "false");
    else {
        fprintf(out, "pipezip bench train: %s, input %s, batch %d, %d threads: median %.2f ms/step (min %.2f, max %.2f, %d steps), %.0f %s/s\n",
               model, input, batch, pz_get_threads(), 1e3 * med, 1e3 * lo, 1e3 * hi, repeat, batch * per / med,
               lm ? "tokens" : "samples");
        fprintf(out, "  BLAS: %s; kernels %s, chosen by %s%s%s%s\n", bi.library, bi.core,
               !strcmp(bi.source, "pipezip") ? "pipezip from the CPU's features" : !strcmp(bi.source, "user") ? "OPENBLAS_CORETYPE" : bi.source,
               bi.openblas_choice[0] && strcmp(bi.openblas_choice, bi.core) ? " (OpenBLAS itself chose " : "",
               bi.openblas_choice[0] && strcmp(bi.openblas_choice, bi.core) ? bi.openblas_choice : "",
               bi.openblas_choice[0] && strcmp(bi.openblas_choice, bi.core) ? ")" : "");
        if (lm)
            ; /* no convolutions */
        else if (!strcmp(ci.name, "im2col"))
            fprintf(out, "  convolutions: im2col + BLAS, chosen by %s\n",
                   !strcmp(ci.source, "user") ? "PZ_CONV_KERNELS" : "pipezip (this CPU lacks AVX2 and FMA)");
        else
            fprintf(out, "  convolutions: pipezip's direct %s kernels (1x1 and under 32 taps: im2col + BLAS), chosen by %s\n",
                   !strcmp(ci.name, "avx512") ? "AVX-512" : "AVX2", !strcmp(ci.source, "user") ? "PZ_CONV_KERNELS" : "the CPU's features");
    }
    if (bi.generic)
        fprintf(stderr, "pipezip bench train: warning: the BLAS runs its %s kernels, which do not use this CPU's vector units "
                        "(%s; unset OPENBLAS_CORETYPE to let pipezip choose)\n",
                bi.core, !strcmp(bi.source, "user") ? "chosen by OPENBLAS_CORETYPE" : "a generic fallback");
    if (ci.generic)
        fprintf(stderr, "pipezip bench train: warning: the convolutions run the %s kernels, which do not use all of this "
                        "CPU's vector units (PZ_CONV_KERNELS=%s; unset it to let pipezip choose)\n",
                ci.name, ci.name);
    free(t), free(x), free(y);
    pz_optim_free(&opt);
    pz_model_free(&m);
    return 0;
}


int tool_models(FILE *out, char **names, int n_names, const char *input, int classes, int vocab, int subspace) {
    pz_shape in = !strcmp(input, "3x32x32") ? pz_shape_image(3, 32, 32) : pz_shape_image(1, 28, 28);
    pz_set_threads(1);
    const char *const *presets = pz_model_preset_names();
    /* every name first: a wrong one is named before anything is shown */
    for (int k = 0; k < n_names; k++) {
        pz_model_spec s;
        if (pz_model_spec_parse(&s, names[k])) {
            fprintf(stderr, "pipezip models: %s\n", pz_last_error());
            return 2;
        }
    }
    int n = 0;
    while (presets[n]) n++;
    const int count = n_names ? n_names : n;
    for (int i = 0; i < count; i++) {
        const char *name = n_names ? names[i] : presets[i];
        pz_model_spec s;
        pz_model m;
        pz_model_spec_parse(&s, name);
        const int lm = pz_model_spec_is_sequence(&s);
        if (lm) s.subspace = subspace;
        if (pz_model_build(&m, &s, lm ? pz_shape_tokens(s.context) : in, lm ? vocab : classes, 1, 0, 0, 1 << 30)) {
            fprintf(stderr, "pipezip models: %s\n", pz_last_error());
            return 1;
        }
        if (lm)
            fprintf(out, "%s%s (%d blocks, width %d, %d heads, context %d tokens, vocabulary %d%s%.0d)\n", i ? "\n" : "", name,
                    s.layers, s.dim, s.heads, s.context, vocab, s.subspace ? ", subspace " : "", s.subspace);
        else fprintf(out, "%s%s (input %s, %d classes)\n", i ? "\n" : "", name, input, classes);
        pz_model_describe(&m, out);
        pz_model_free(&m);
    }
    return 0;
}
