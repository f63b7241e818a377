/* SPDX-License-Identifier: MIT */
/* cmd_bench.c — `pipezip bench train` and `bench codecs`: their flags; the
 * measurements are the tool's (tool/bench_train.c, tool/bench_codecs.c). */
#include "cli.h"
#include "args.h"
#include "tool/bench.h"

#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "Usage: pipezip bench train [OPTIONS]\n"
    "\n"
    "Time full training steps (forward, loss, backward, update: SGD for the image\n"
    "models, AdamW for the language models) of a preset on random inputs (token\n"
    "ids for gpt-*, a full context per sample); prints the median, the spread and\n"
    "samples/s (tokens/s for gpt-*), and the step's counted FLOPs as a fraction\n"
    "of the machine's FMA peak, measured in the same run. --profile adds each\n"
    "layer's forward and backward time (summed over the blocks), the loss and the\n"
    "optimizer. Not a test: run it on a quiet machine and compare medians\n"
    "(bench/compare_torch.sh puts PyTorch's step beside it).\n";

static int bench_train(int argc, char **argv) {
    const char *model = "resnet8", *input = "1x28x28", *format = "text";
    int batch = 128, threads = 2, warmup = 3, repeat = 20, profile = 0;
    const pz_opt opts[] = {
        {"model", OPT_STR, &model, "NAME", "model preset", 0, 0, "mlp|lenet5|resnet8|resnet20|gpt-tiny|gpt-small"},
        {"input", OPT_STR, &input, "CxHxW", "image models' input shape", 0, 0, "1x28x28|3x32x32"},
        {"batch", OPT_INT, &batch, "N", "batch size", 1, 65536, NULL},
        {"threads", OPT_INT, &threads, "N", "threads (0 = all cores)", 0, 1024, NULL},
        {"warmup-steps", OPT_INT, &warmup, "N", "untimed steps first", 0, 1000, NULL},
        {"repeat", OPT_INT, &repeat, "N", "timed steps", 1, 100000, NULL},
        {"format", OPT_STR, &format, "FMT", "output format", 0, 0, "text|json"},
        {"profile", OPT_BOOL, &profile, NULL, "also time each layer, the loss and the optimizer", 0, 0, NULL},
    };
    int rc = pz_parse_args("pipezip bench train", opts, (int)(sizeof opts / sizeof *opts), argc, argv, 3, usage, NULL, 0, NULL);
    if (rc == 1) return 0;
    if (rc) return 2;
    const bench_train_options o = {.model = model, .input = input, .batch = batch, .threads = threads, .warmup = warmup,
                                   .repeat = repeat, .json = !strcmp(format, "json"), .profile = profile};
    return tool_bench_train(&o, stdout);
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
