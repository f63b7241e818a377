/* SPDX-License-Identifier: MIT */
/* cmd_models.c — `pipezip models`: its flags; the listing is the tool's
 * (tool_models in tool/bench_train.c). */
#include "cli.h"
#include "args.h"
#include "tool/bench.h"

#include <string.h>

static const char usage[] =
    "Usage: pipezip models [NAME...] [OPTIONS]\n"
    "\n"
    "List model presets with their top-level layers: index and name (what a cut\n"
    "names), output shape, parameters, forward FLOPs and the activation a\n"
    "boundary after that layer carries (fp32): per sample for the image models,\n"
    "per token for the language models (gpt-tiny, gpt-small), whose input is\n"
    "their context of token ids. NAME is a preset or a GPT of any shape,\n"
    "gpt:layers=L,d=D,heads=H,ctx=T (keys not given take gpt-tiny's), or a gpt\n"
    "preset with some sizes changed (gpt-small:layers=8); --model takes the same.\n";

int cmd_models(int argc, char **argv) {
    const char *input = "1x28x28";
    int classes = 10, vocab = 256, subspace = 0, project = 0;
    const char *cuts = "";
    const pz_opt opts[] = {
        {"input", OPT_STR, &input, "CxHxW", "image models' input shape", 0, 0, "1x28x28|3x32x32"},
        {"classes", OPT_INT, &classes, "N", "image models' number of classes", 2, 100000, NULL},
        {"vocab", OPT_INT, &vocab, "N", "language models' vocabulary (256: bytes)", 2, 1 << 20, NULL},
        {"subspace", OPT_INT, &subspace, "K", "language models with --subspace K (their boundaries carry K numbers per token)", 0, 65536, NULL},
        {"project", OPT_INT, &project, "K", "with --subspace and --cuts: a learned projection to K coefficients per token at each cut", 0, 65536, NULL},
        {"cuts", OPT_STR, &cuts, "LIST", "where --project's pairs go (h.0,h.1,...)", 0, 0, NULL},
    };
    char *names[8];
    int n_names = 0;
    int rc = pz_parse_args("pipezip models", opts, (int)(sizeof opts / sizeof *opts), argc, argv, 2, usage, names, 8, &n_names);
    if (rc == 1) return 0;
    if (rc) return 2;
    return tool_models(stdout, names, n_names, input, classes, vocab, subspace, project, cuts);
}
