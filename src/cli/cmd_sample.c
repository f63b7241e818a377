/* SPDX-License-Identifier: MIT */
/* cmd_sample.c — `pipezip sample`: text from a trained language model. */
#include "cli.h"
#include "args.h"
#include "run/run.h"

#include <stdio.h>
#include <string.h>

static const char sample_usage[] =
    "Usage: pipezip sample --run DIR [OPTIONS]\n"
    "\n"
    "Continue a prompt with the language model a run trained (gpt-*): the weights\n"
    "of its newest checkpoint (every stage's, whatever the cuts), one token at a\n"
    "time (a byte, or a BPE token of the run's tokenizer.txt) from\n"
    "softmax(logits / temperature) over the top-k. Prints the prompt, then the\n"
    "text as it is made. The same --seed gives the same text.\n"
    "\n"
    "Examples:\n"
    "  pipezip sample --run runs/DIR --prompt 'And God said'\n"
    "  pipezip sample --run runs/DIR --temperature 0 --tokens 200   # the most likely bytes\n";

/* the prompt is printed with the first token, once the run has loaded */
typedef struct {
    const char *prompt;
    int started;
} printer;

static void start(printer *p) {
    if (!p->started) fputs(p->prompt, stdout);
    p->started = 1;
}

static void put_token(const uint8_t *bytes, size_t n, void *ctx) {
    start(ctx);
    fwrite(bytes, 1, n, stdout);
    fflush(stdout);
}

int cmd_sample(int argc, char **argv) {
    pz_sample_config c = {.prompt = "", .tokens = 400, .temperature = 0.8f, .top_k = 40, .seed = 1, .threads = 0};
    const pz_opt opts[] = {
        {"run", OPT_STR, &c.run_dir, "DIR", "the run directory of a pipezip train of a gpt-* model", 0, 0, NULL},
        {"prompt", OPT_STR, &c.prompt, "TEXT", "text to continue (default: a newline)", 0, 0, NULL},
        {"tokens", OPT_INT, &c.tokens, "N", "how many tokens to generate (bytes, or the run's BPE tokens)", 0, 1000000, NULL},
        {"temperature", OPT_FLOAT, &c.temperature, "X", "softmax temperature (0 = always the most likely)", 0, 100, NULL},
        {"top-k", OPT_INT, &c.top_k, "K", "draw only among the K most likely (0 = all)", 0, 1000000, NULL},
        {"seed", OPT_U64, &c.seed, "N", "seed of the draws", 0, 0, NULL},
        {"epoch", OPT_INT, &c.epoch, "E", "the checkpoint of epoch E (0 = the newest)", 0, 1000000, NULL},
        {"threads", OPT_INT, &c.threads, "N", "threads (0 = all cores)", 0, 1024, NULL},
    };
    const int rc = pz_parse_args("pipezip sample", opts, (int)(sizeof opts / sizeof *opts), argc, argv, 2, sample_usage,
                                 NULL, 0, NULL);
    if (rc == 1) return 0;
    if (rc) return 2;
    if (!c.run_dir) {
        fprintf(stderr, "pipezip sample: --run DIR is required (a run directory of pipezip train --model gpt-*)\n");
        return 2;
    }
    printer pr = {c.prompt ? c.prompt : "", 0};
    if (pz_run_sample(&c, put_token, &pr, NULL, NULL)) {
        fflush(stdout);
        fprintf(stderr, "%spipezip sample: %s\n", pr.started ? "\n" : "", pz_last_error());
        return 1;
    }
    start(&pr);
    putchar('\n');
    return 0;
}
