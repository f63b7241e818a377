/* SPDX-License-Identifier: MIT */
/* cmd_time.c — `pipezip time`: its flags; the timing is the tool's
 * (tool/time_step.c over the library's dry timing mode). */
#include "cli.h"
#include "run/settings.h"
#include "args.h"
#include "tool/time_step.h"

static const char usage[] =
    "Usage: pipezip time [OPTIONS]\n"
    "\n"
    "A pipeline's training step over emulated links, timed without training:\n"
    "every stage runs its schedule (the same order of forwards, backwards and\n"
    "messages as pipezip train) on a virtual clock, every message arrives by the\n"
    "link emulator's rules, compute is charged per micro-batch and stage. Prints\n"
    "the steady step, its critical path (compute, transmission, latency), the\n"
    "busiest stage or wire and the bubble. The bytes each boundary carries: given\n"
    "per token (--bytes-per-token), frames of codec specs at each boundary's shape\n"
    "(--fwd/--bwd), or a finished run's (--from-run). The compute: a FLOP rate\n"
    "(2 and 4 x each stage's multiply-accumulates per sample), or the rate whose\n"
    "step with the links off is --links-off-step. ProtocolNanoGPT's dense record:\n"
    "\n"
    "  pipezip time --model gpt:layers=8,d=1024,heads=8,ctx=1024,untied=1 --vocab 50304 \\\n"
    "    --cuts h.0,h.1,h.2,h.3,h.4,h.5,h.6 --tokens-per-step 524288 --micro-batches 64 --pipe-schedule 1f1b \\\n"
    "    --link-model shared --link-bandwidth 200mbit --link-latency 50ms --bytes-per-token 2048 \\\n"
    "    --links-off-step 0.539 --clip-norm 0\n";

int cmd_time(int argc, char **argv) {
    time_options o = {.model = "gpt-tiny", .input = "1x28x28", .classes = 10, .vocab = 256, .batch = 32, .stages = 4,
                      .micro_batches = "1", .max_micro = 256, .schedule = run_setting_of(PZ_SET_PIPE_SCHEDULE)->def, .link_model = run_setting_of(PZ_SET_LINK_MODEL)->def, .clip_norm = -1,
                      .steps = 3};
    const char *format = "text";
    long long tokens = 0;
    const pz_opt opts[] = {
        {"model", OPT_STR, &o.model, "NAME", "a preset or a GPT of any shape, gpt:layers=L,d=D,heads=H,ctx=T[,untied=1]", 0, 0, NULL},
        {"vocab", OPT_INT, &o.vocab, "N", "language models' vocabulary", 2, 1 << 24, NULL},
        {"subspace", OPT_INT, &o.subspace, "K", "language models with --subspace K", 0, 65536, NULL},
        {"input", OPT_STR, &o.input, "CxHxW", "image models' input shape", 0, 0, "1x28x28|3x32x32"},
        {"classes", OPT_INT, &o.classes, "N", "image models' classes", 2, 100000, NULL},
        {"batch", OPT_INT, &o.batch, "N", "samples (sequences) per step", 1, 1 << 24, NULL},
        {"tokens-per-step", OPT_I64, &tokens, "N", "language models: the batch in tokens (a multiple of the context)", 0, 1LL << 40, NULL},
        {"stages", OPT_INT, &o.stages, "S", "stages balanced by FLOPs, any number up to the model's top-level layers (unless --cuts)", 1, 1 << 20, NULL},
        {"cuts", OPT_STR, &o.cuts, "LIST", "cut after these layers (pipezip models lists them)", 0, 0, NULL},
        {"micro-batches", OPT_STR, &o.micro_batches, "M", "micro-batches per step, or auto: the count that splits the batch evenly with the least step", 0, 0, NULL},
        {"max-micro-batches", OPT_INT, &o.max_micro, "N", "auto: at most N", 1, 256, NULL},
        /* as pipezip train's: the settings table's rows say their help and values */
        {"pipe-schedule", OPT_STR, &o.schedule, "KIND", run_setting_help(run_setting_of(PZ_SET_PIPE_SCHEDULE)), 0, 0,
         run_setting_choices(run_setting_of(PZ_SET_PIPE_SCHEDULE))},
        {"pipe-delay", OPT_STR, &o.pipe_delay, "D", run_setting_help(run_setting_of(PZ_SET_PIPE_DELAY)), 0, 0, NULL},
        {"link-model", OPT_STR, &o.link_model, "MODEL", run_setting_help(run_setting_of(PZ_SET_LINK_MODEL)), 0, 0,
         run_setting_choices(run_setting_of(PZ_SET_LINK_MODEL))},
        {"link-bandwidth", OPT_STR, &o.bandwidth, "RATE", "every boundary's bandwidth: 200mbit, 1gbit, 12.5MB/s", 0, 0, NULL},
        {"link-latency", OPT_STR, &o.latency, "TIME", "every boundary's one-way latency: 50ms, 250us", 0, 0, NULL},
        {"bytes-per-token", OPT_STR, &o.bytes, "F[/B]", "bytes per token (image models: per sample) forward [and back], each message whole", 0, 0, NULL},
        {"fwd", OPT_STR, &o.fwd, "SPEC", "the activations' codec (frames over Gaussian tensors of the boundary's shape)", 0, 0, NULL},
        {"bwd", OPT_STR, &o.bwd, "SPEC", "the gradients' codec (default: --fwd's)", 0, 0, NULL},
        {"from-run", OPT_STR, &o.run, "DIR", "the bytes per token a finished run's boundaries carried", 0, 0, NULL},
        {"compute-rate", OPT_STR, &o.compute_rate, "RATE", "compute at this many FLOP/s (48tflops, 2.5e14)", 0, 0, NULL},
        {"links-off-step", OPT_FLOAT64, &o.links_off_step, "SECONDS", "compute at the rate whose step with the links off takes this long", 0, 1e9, NULL},
        {"micro-batch-seconds", OPT_FLOAT64, &o.micro_seconds, "SECONDS", "compute: every stage's forward and backward of one micro-batch take this long (split 1:2)", 0, 1e9, NULL},
        {"clip-norm", OPT_FLOAT64, &o.clip_norm, "X", "clipping by the global norm (its messages; default: gpt-* 1, others 0)", 0, 1e9, NULL},
        {"steps", OPT_INT, &o.steps, "N", "steps timed (the last is the steady step)", 2, 1000, NULL},
        {"format", OPT_STR, &format, "FMT", "output format", 0, 0, "text|json"},
    };
    int rc = pz_parse_args("pipezip time", opts, (int)(sizeof opts / sizeof *opts), argc, argv, 2, usage, NULL, 0, NULL);
    if (rc == 1) return 0;
    if (rc) return 2;
    o.tokens_per_step = tokens;
    o.json = format[0] == 'j';
    return tool_time(&o, stdout);
}
