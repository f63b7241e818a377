/* cmd_models.c — `pipezip models`: every preset, layer by layer. */
#include "cli.h"
#include "args.h"
#include "nn/nn.h"

#include <string.h>

static const char usage[] =
    "Usage: pipezip models [NAME...] [OPTIONS]\n"
    "\n"
    "List model presets with their top-level layers: index and name (what a cut\n"
    "names), output shape, parameters, forward FLOPs and the activation a\n"
    "boundary after that layer carries (fp32): per sample for the image models,\n"
    "per token for the language models (gpt-tiny, gpt-small), whose input is\n"
    "their context of token ids.\n";

int cmd_models(int argc, char **argv) {
    const char *input = "1x28x28";
    int classes = 10, vocab = 256;
    const pz_opt opts[] = {
        {"input", OPT_STR, &input, "CxHxW", "image models' input shape", 0, 0, "1x28x28|3x32x32"},
        {"classes", OPT_INT, &classes, "N", "image models' number of classes", 2, 100000, NULL},
        {"vocab", OPT_INT, &vocab, "N", "language models' vocabulary (256: bytes)", 2, 1 << 20, NULL},
    };
    char *names[8];
    int n_names = 0;
    int rc = pz_parse_args("pipezip models", opts, 3, argc, argv, 2, usage, names, 8, &n_names);
    if (rc == 1) return 0;
    if (rc) return 2;
    pz_shape in = !strcmp(input, "3x32x32") ? pz_shape_image(3, 32, 32) : pz_shape_image(1, 28, 28);
    pz_set_threads(1);
    const char *const *presets = pz_model_preset_names();
    int shown = 0;
    for (int i = 0; presets[i]; i++) {
        int want = n_names == 0;
        for (int k = 0; k < n_names; k++) want |= !strcmp(names[k], presets[i]);
        if (!want) continue;
        pz_model m;
        const int lm = pz_model_preset_is_sequence(presets[i]);
        const int T = pz_model_preset_context(presets[i]);
        if (pz_model_preset(&m, presets[i], lm ? pz_shape_tokens(T) : in, lm ? vocab : classes, 1, 0)) {
            fprintf(stderr, "pipezip models: %s\n", pz_last_error());
            return 1;
        }
        if (lm) printf("%s%s (context %d tokens, vocabulary %d)\n", shown ? "\n" : "", presets[i], T, vocab);
        else printf("%s%s (input %s, %d classes)\n", shown ? "\n" : "", presets[i], input, classes);
        pz_model_describe(&m, stdout);
        pz_model_free(&m);
        shown++;
    }
    for (int k = 0; k < n_names; k++) {
        int found = 0;
        for (int i = 0; presets[i]; i++) found |= !strcmp(names[k], presets[i]);
        if (!found) {
            fprintf(stderr, "pipezip models: unknown model '%s' (expected mlp, lenet5, resnet8, resnet20, gpt-tiny or gpt-small)\n", names[k]);
            return 2;
        }
    }
    return 0;
}
