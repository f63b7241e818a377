/* SPDX-License-Identifier: MIT */
/* main.c — `pipezip`: the command and its subcommands. */
#include "cli.h"
#include "pipezip/pipezip.h"

#include <stdio.h>
#include <string.h>

static const char usage[] =
    "pipezip — train models cut into stages, with compressed activations and gradients\n"
    "\n"
    "Usage: pipezip [--version] [--help] COMMAND [OPTIONS]\n"
    "\n"
    "Commands:\n"
    "  train     train a model (progress on the terminal, metrics in a run directory)\n"
    "  models    list the model presets with their layers, parameters, FLOPs and\n"
    "            per-layer activation sizes\n"
    "  codec     encode, decode or inspect frames: `pipezip codec --help` lists the codecs\n"
    "  serve     split learning: the server side (upper stages and loss) over ZeroMQ\n"
    "  sample    generate text from a trained language model's run (gpt-*)\n"
    "  keygen    make a CURVE key pair for serve / train --link zmq\n"
    "  sweep     run a grid of trainings from a configuration file (configs/), resumably\n"
    "  report    Markdown tables and SVG plots from a sweep's results\n"
    "  time      a pipeline's step over emulated links, timed without training\n"
    "  bench     measure speed: `pipezip bench train` (training steps), `pipezip bench codecs`\n"
    "\n"
    "Run `pipezip COMMAND --help` for a command's options.\n";

int main(int argc, char **argv) {
    if (argc < 2) {
        fputs(usage, stderr);
        return 2;
    }
    const char *c = argv[1];
    if (!strcmp(c, "-h") || !strcmp(c, "--help") || !strcmp(c, "help")) {
        fputs(usage, stdout);
        return 0;
    }
    if (!strcmp(c, "--version") || !strcmp(c, "version")) {
        printf("pipezip %s\n", pz_version());
        return 0;
    }
    if (!strcmp(c, "train")) return cmd_train(argc, argv);
    if (!strcmp(c, "models")) return cmd_models(argc, argv);
    if (!strcmp(c, "bench")) return cmd_bench(argc, argv);
    if (!strcmp(c, "time")) return cmd_time(argc, argv);
    if (!strcmp(c, "codec")) return cmd_codec(argc, argv);
    if (!strcmp(c, "serve")) return cmd_serve(argc, argv);
    if (!strcmp(c, "sample")) return cmd_sample(argc, argv);
    if (!strcmp(c, "keygen")) return cmd_keygen(argc, argv);
    if (!strcmp(c, "sweep")) return cmd_sweep(argc, argv);
    if (!strcmp(c, "report")) return cmd_report(argc, argv);
    fprintf(stderr, "pipezip: unknown command '%s' (expected train, models, time, sample, codec, bench, serve, keygen, sweep or report; see pipezip --help)\n", c);
    return 2;
}
