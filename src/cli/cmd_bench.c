/* cmd_bench.c — `pipezip bench train`: median time of a training step. */
#include "cli/xalloc.h"
#include "cli.h"
#include "args.h"
#include "nn/nn.h"

#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "Usage: pipezip bench train [OPTIONS]\n"
    "\n"
    "Time full training steps (forward, loss, backward, update: SGD for the image\n"
    "models, AdamW for the language models) of a preset on random inputs (token\n"
    "ids for gpt-*, a full context per sample); prints the median, the spread and\n"
    "samples/s (tokens/s for gpt-*). Not a test: run\n"
    "it on a quiet machine and compare medians (bench/compare_torch.sh puts\n"
    "PyTorch's step beside it).\n";

static int bench_train(int argc, char **argv) {
    const char *model = "resnet8", *input = "1x28x28", *format = "text";
    int batch = 128, threads = 2, warmup = 3, repeat = 20;
    const pz_opt opts[] = {
        {"model", OPT_STR, &model, "NAME", "model preset", 0, 0, "mlp|lenet5|resnet8|resnet20|gpt-tiny|gpt-small"},
        {"input", OPT_STR, &input, "CxHxW", "image models' input shape", 0, 0, "1x28x28|3x32x32"},
        {"batch", OPT_INT, &batch, "N", "batch size", 1, 65536, NULL},
        {"threads", OPT_INT, &threads, "N", "threads (0 = all cores)", 0, 1024, NULL},
        {"warmup", OPT_INT, &warmup, "N", "untimed steps first", 0, 1000, NULL},
        {"repeat", OPT_INT, &repeat, "N", "timed steps", 1, 100000, NULL},
        {"format", OPT_STR, &format, "FMT", "output format", 0, 0, "text|json"},
    };
    int rc = pz_parse_args("pipezip bench train", opts, (int)(sizeof opts / sizeof *opts), argc, argv, 3, usage, NULL, 0, NULL);
    if (rc == 1) return 0;
    if (rc) return 2;
    pz_set_threads(threads);
    const int lm = pz_model_preset_is_sequence(model), V = 256;
    pz_shape in = lm ? pz_shape_tokens(pz_model_preset_context(model))
                     : !strcmp(input, "3x32x32") ? pz_shape_image(3, 32, 32) : pz_shape_image(1, 28, 28);
    char in_str[48];
    pz_shape_str(in, in_str, sizeof in_str);
    input = in_str;
    const int classes = lm ? V : 10;
    pz_model m;
    if (pz_model_preset(&m, model, in, classes, batch, 1)) {
        fprintf(stderr, "pipezip bench train: %s\n", pz_last_error());
        return 1;
    }
    pz_optim o = {.momentum = 0.9f, .weight_decay = lm ? 0.1f : 5e-4f, .beta2 = 0.95f, .decay = m.decay};
    pz_optim_init(&o, lm ? PZ_OPT_ADAMW : PZ_OPT_SGD, m.n_params);
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
        pz_train_step(&m, &o, 0.01f, x, y, batch, NULL);
        if (i >= warmup) t[i - warmup] = pz_now() - t0;
    }
    const double med = pz_median(t, repeat), lo = t[0], hi = t[repeat - 1];
    /* what ran: the BLAS, its kernels and who chose them */
    const pz_blas_info bi = pz_blas_get_info();
    const pz_conv_info ci = pz_nn_conv_info();
    if (!strcmp(format, "json"))
        printf("{\"bench\": \"train\", \"model\": \"%s\", \"input\": \"%s\", \"batch\": %d, \"threads\": %d, "
               "\"repeat\": %d, \"median_ms\": %.3f, \"min_ms\": %.3f, \"max_ms\": %.3f, \"samples_per_s\": %.1f, "
               "\"tokens_per_s\": %.1f, "
               "\"blas\": \"%s\", \"blas_core\": \"%s\", \"blas_core_chosen_by\": \"%s\", \"blas_generic\": %s, "
               "\"conv_kernels\": \"%s\", \"conv_kernels_chosen_by\": \"%s\", \"conv_generic\": %s}\n",
               model, input, batch, pz_get_threads(), repeat, 1e3 * med, 1e3 * lo, 1e3 * hi, batch / med,
               lm ? batch * per / med : 0.0, bi.library, bi.core, bi.source, bi.generic ? "true" : "false", ci.name,
               ci.source, ci.generic ? "true" : "false");
    else {
        printf("pipezip bench train: %s, input %s, batch %d, %d threads: median %.2f ms/step (min %.2f, max %.2f, %d steps), %.0f %s/s\n",
               model, input, batch, pz_get_threads(), 1e3 * med, 1e3 * lo, 1e3 * hi, repeat, batch * per / med,
               lm ? "tokens" : "samples");
        printf("  BLAS: %s; kernels %s, chosen by %s%s%s%s\n", bi.library, bi.core,
               !strcmp(bi.source, "pipezip") ? "pipezip from the CPU's features" : !strcmp(bi.source, "user") ? "OPENBLAS_CORETYPE" : bi.source,
               bi.openblas_choice[0] && strcmp(bi.openblas_choice, bi.core) ? " (OpenBLAS itself chose " : "",
               bi.openblas_choice[0] && strcmp(bi.openblas_choice, bi.core) ? bi.openblas_choice : "",
               bi.openblas_choice[0] && strcmp(bi.openblas_choice, bi.core) ? ")" : "");
        if (lm)
            ; /* no convolutions */
        else if (!strcmp(ci.name, "im2col"))
            printf("  convolutions: im2col + BLAS, chosen by %s\n",
                   !strcmp(ci.source, "user") ? "PZ_CONV_KERNELS" : "pipezip (this CPU lacks AVX2 and FMA)");
        else
            printf("  convolutions: pipezip's direct %s kernels (1x1 and under 32 taps: im2col + BLAS), chosen by %s\n",
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
    pz_optim_free(&o);
    pz_model_free(&m);
    return 0;
}

int cmd_bench(int argc, char **argv) {
    if (argc < 3 || !strcmp(argv[2], "-h") || !strcmp(argv[2], "--help")) {
        printf("Usage: pipezip bench WHAT [OPTIONS]\n\n  train   time training steps of a model preset\n"
               "  codecs  codec throughput against the memory bandwidth, bits per element, error\n");
        return argc < 3 ? 2 : 0;
    }
    if (!strcmp(argv[2], "train")) return bench_train(argc, argv);
    if (!strcmp(argv[2], "codecs")) return bench_codecs(argc, argv);
    fprintf(stderr, "pipezip bench: unknown benchmark '%s' (expected train or codecs)\n", argv[2]);
    return 2;
}
