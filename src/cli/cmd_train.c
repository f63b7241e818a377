/* SPDX-License-Identifier: MIT */
/* cmd_train.c — `pipezip train`: options, progress display, final summary. */
#include "cli.h"
#include "args.h"
#include "pipezip/pipezip.h"
#include "run/run.h"
#include "run/settings.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
    "Usage: pipezip train [OPTIONS]\n"
    "\n"
    "Train a model cut into stages whose boundaries carry compressed activations\n"
    "and gradients. With no flags: resnet8 on Fashion-MNIST in 4 stages (a cut\n"
    "after each residual group, as Paper A), activations q4 and gradients q8, one\n"
    "thread per stage. Shows progress on the terminal and writes config.json,\n"
    "steps/epochs/boundaries.{jsonl,csv}, summary.json and a checkpoint every epoch\n"
    "into the run directory. The same --seed and --threads give the same numbers.\n"
    "\n"
    "Examples:\n"
    "  pipezip train                                   # the main job\n"
    "  pipezip train --stages 1                        # no pipeline\n"
    "  pipezip train --cuts layer1 --fwd ms:0.01,bits=2 --bwd 'ef(topk:0.1)'\n"
    "  pipezip train --link-bandwidth 100mbit --link-latency 5ms --micro-batches 4\n"
    "  mpirun -np 4 pipezip train --link mpi\n"
    "  pipezip train --link zmq --connect tcp://server:5555 --cuts layer1\n"
    "  pipezip train --resume runs/DIR                 # after a crash, same flags\n";

typedef struct {
    int mode;       /* 0 none, 1 bar (terminal), 2 lines */
    double last;    /* time of the last bar redraw */
    double eval_line; /* time of the last "evaluating" line (lines mode) */
} progress_state;

static void fmt_time(char *buf, size_t cap, double s) {
    if (s < 0) s = 0;
    int t = (int)(s + 0.5);
    if (t >= 3600) snprintf(buf, cap, "%dh%02dm", t / 3600, t / 60 % 60);
    else snprintf(buf, cap, "%dm%02ds", t / 60, t % 60);
}

static double wall(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static volatile sig_atomic_t interrupted = 0;

static void on_sigint(int sig) {
    (void)sig;
    if (interrupted) _exit(130); /* a second Ctrl-C: stop at once */
    interrupted = 1;
}

/* Crash tests: PZ_TEST_KILL_AT_EPOCH=E kills this process with SIGKILL (as
 * a crash would) at the first step of epoch E, once epoch E-1's checkpoint
 * is written: the state a resume test needs, reached without racing a poll. */
static int kill_at_epoch;
/* PZ_TEST_SIGNAL_AT_STEP=N: this process sends itself SIGTERM once step N
 * is trained, as a scheduler would: the real signal path, at a state */
static long long signal_at_step;
/* PZ_TEST_KILL_AT_STEP=N: SIGKILL (a crash) once step N is trained */
static long long kill_at_step;

/* a step trained (not an evaluation's or an epoch's report): where the test hooks act */
static int after_step(const pz_progress *p) { return !p->evaluating && !p->evaluation && !p->end_of_epoch; }

/* this epoch's steps: a --steps run's last epoch ends at the run's last step, not the epoch's */
static int64_t epoch_steps(const pz_progress *p) {
    const int64_t left = p->total_steps - (int64_t)(p->epoch - 1) * p->steps_per_epoch;
    return p->total_steps > 0 && left > 0 && left < p->steps_per_epoch ? left : p->steps_per_epoch;
}

static int on_progress(const pz_progress *p, void *user) {
    progress_state *ps = user;
    if (kill_at_epoch > 0 && p->epoch == kill_at_epoch && !p->end_of_epoch && !p->evaluation) kill(getpid(), SIGKILL);
    if (kill_at_step > 0 && p->global_step == kill_at_step && after_step(p)) kill(getpid(), SIGKILL);
    if (signal_at_step > 0 && p->global_step == signal_at_step && after_step(p)) {
        signal_at_step = 0;
        kill(getpid(), SIGTERM);
    }
    if (interrupted) return 1;
    if (p->micro_batches_chosen) { /* --micro-batches auto: said whatever the progress mode (it is a setting) */
        if (ps->mode == 1) fprintf(stderr, "\r\033[K");
        fprintf(stderr, "micro-batches auto: %d (a step of %.4g s over the emulated links by the first step's bytes; %.4g s in 1)\n",
                p->micro_batches_chosen, p->auto_step_seconds[0], p->auto_step_seconds[1]);
    }
    char eta[32], el[32];
    fmt_time(eta, sizeof eta, p->eta);
    fmt_time(el, sizeof el, p->elapsed);
    if (p->evaluating) { /* the test set under way: its own bar */
        const double now = wall();
        if (!ps->mode || (now - ps->last < 0.2 && p->eval_done != p->eval_total)) return 0;
        ps->last = now;
        if (ps->mode == 1) {
            const int width = 24, fill = (int)(width * p->eval_done / (p->eval_total ? p->eval_total : 1));
            char bar[32];
            for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : '.';
            bar[width] = 0;
            fprintf(stderr, "\r\033[Kepoch %d/%d evaluating [%s] %lld/%lld examples  ETA %s", p->epoch, p->epochs, bar,
                    (long long)p->eval_done, (long long)p->eval_total, eta);
        } else if (ps->mode == 2 && now - ps->eval_line >= 10.0) {
            ps->eval_line = now;
            fprintf(stderr, "epoch %d/%d evaluating %lld/%lld examples  ETA %s\n", p->epoch, p->epochs,
                    (long long)p->eval_done, (long long)p->eval_total, eta);
        }
        return 0;
    }
    if (p->evaluation) { /* --eval-every */
        if (ps->mode == 1) fprintf(stderr, "\r\033[K");
        if (!ps->mode) return 0;
        char bpb[48] = "", comp[64] = "";
        if (p->test_bits_per_byte >= 0) snprintf(bpb, sizeof bpb, " (%.3f bits per byte)", p->test_bits_per_byte);
        if (p->test_loss_compressed >= 0) snprintf(comp, sizeof comp, ", compressed %.4f", p->test_loss_compressed);
        fprintf(stderr, "epoch %d/%d step %lld/%lld  validation loss %.4f%s%s, accuracy %.2f%%\n", p->epoch, p->epochs,
                (long long)p->step, (long long)epoch_steps(p), p->test_loss, bpb, comp, 100 * p->test_accuracy);
        return 0;
    }
    if (p->end_of_epoch) {
        if (ps->mode == 1) fprintf(stderr, "\r\033[K");
        char em[48] = "";
        if (p->emulated_seconds >= 0) {
            char t[32];
            fmt_time(t, sizeof t, p->emulated_seconds);
            snprintf(em, sizeof em, ", link clock %s", t);
        }
        if (ps->mode && p->test_bits_per_byte >= 0) { /* a language model: the validation loss */
            char comp[48] = "";
            if (p->test_loss_compressed >= 0) snprintf(comp, sizeof comp, " (compressed %.4f)", p->test_loss_compressed);
            fprintf(stderr, "epoch %2d/%d  train loss %.4f  validation loss %.4f%s, %.3f bits per byte, acc %.2f%%  lr %.4g  %.1fs  (%s%s, ETA %s)\n",
                    p->epoch, p->epochs, p->loss, p->test_loss, comp, p->test_bits_per_byte, 100 * p->test_accuracy, p->lr,
                    p->epoch_seconds, el, em, eta);
        } else if (ps->mode && p->test_accuracy_compressed >= 0)
            fprintf(stderr, "epoch %2d/%d  train loss %.4f acc %6.2f%%  test acc %6.2f%% (compressed %6.2f%%)  lr %.4g  %.1fs  (%s%s, ETA %s)\n",
                    p->epoch, p->epochs, p->loss, 100 * p->accuracy, 100 * p->test_accuracy, 100 * p->test_accuracy_compressed,
                    p->lr, p->epoch_seconds, el, em, eta);
        else if (ps->mode)
            fprintf(stderr, "epoch %2d/%d  train loss %.4f acc %6.2f%%  test loss %.4f acc %6.2f%%  lr %.4g  %.1fs  (%s, ETA %s)\n",
                    p->epoch, p->epochs, p->loss, 100 * p->accuracy, p->test_loss, 100 * p->test_accuracy, p->lr,
                    p->epoch_seconds, el, eta);
        return 0;
    }
    const double now = wall();
    if (ps->mode == 1) {
        if (now - ps->last < 0.2 && p->step != epoch_steps(p)) return 0;
        ps->last = now;
        const int width = 24, fill = (int)(width * p->step / (epoch_steps(p) ? epoch_steps(p) : 1));
        char bar[32];
        for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : '.';
        bar[width] = 0;
        fprintf(stderr, "\r\033[Kepoch %d/%d [%s] %lld/%lld  loss %.4f  acc %5.2f%%  %.0f train samples/s  ETA %s",
                p->epoch, p->epochs, bar, (long long)p->step, (long long)epoch_steps(p), p->loss,
                100 * p->accuracy, p->train_samples_per_second, eta);
    } else if (ps->mode == 2) {
        if (now - ps->last < 10.0) return 0;
        ps->last = now;
        fprintf(stderr, "epoch %d/%d step %lld/%lld  loss %.4f  acc %5.2f%%  %.0f train samples/s  ETA %s\n", p->epoch,
                p->epochs, (long long)p->step, (long long)epoch_steps(p), p->loss, 100 * p->accuracy,
                p->train_samples_per_second, eta);
    }
    return 0;
}

typedef struct {
    pz_run_plan *plan;
    const char *progress;
    int no_out, overwrite, quiet;
} train_args;

/* the options of pipezip train: every setting of the run plan that has a
 * flag (run/settings.c's table, in its order), then the command's own */
static int train_opts(pz_opt *opts, train_args *a) {
    int n = 0;
    for (int id = 0; id < PZ_SET_COUNT; id++) {
        if (!pz_setting_name((pz_setting)id)) continue;
        opts[n++] = cli_setting_opt(a->plan, (pz_setting)id, NULL);
        if (id == PZ_SET_OUT) {
            opts[n++] = (pz_opt){"no-out", OPT_BOOL, &a->no_out, NULL, "write no run directory", 0, 0, NULL};
            opts[n++] = (pz_opt){"overwrite", OPT_BOOL, &a->overwrite, NULL,
                                 "replace the run already in --out DIR (without it, such a DIR is refused)", 0, 0, NULL};
        }
    }
    opts[n++] = (pz_opt){"progress", OPT_STR, &a->progress, "MODE", "progress display (auto: a bar on a terminal, lines otherwise)", 0, 0,
                         "auto|bar|lines|none"};
    opts[n++] = (pz_opt){"quiet", OPT_BOOL, &a->quiet, NULL, "no progress display (--progress none); the final summary still prints", 0, 0,
                         NULL};
    return n;
}

int train_option_known(const char *name) {
    train_args a = {0};
    if (pz_run_plan_create(&a.plan)) return 0;
    pz_opt opts[64];
    const int n = train_opts(opts, &a);
    int known = 0;
    for (int i = 0; i < n; i++) known |= !strcmp(opts[i].name, name);
    pz_run_plan_free(a.plan);
    return known;
}

/* argv as one shell line: words of safe characters as they are, the others
 * in single quotes (a quote as '\''); truncated to cap */
static void shell_words(char *out, size_t cap, int argc, char **argv) {
    size_t used = 0;
    for (int i = 0; i < argc && used + 4 < cap; i++) {
        const char *a = argv[i];
        const int plain = *a && strspn(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=.,:/+@%") == strlen(a);
        if (i) out[used++] = ' ';
        if (plain) {
            used += (size_t)snprintf(out + used, cap - used, "%s", a);
            continue;
        }
        out[used++] = '\'';
        for (; *a && used + 5 < cap; a++) {
            if (*a == '\'') used += (size_t)snprintf(out + used, cap - used, "'\\''");
            else out[used++] = *a;
        }
        out[used++] = '\'';
        out[used] = 0;
    }
    if (used >= cap) used = cap - 1;
    out[used] = 0;
}

/* the plan's text of a setting ("" when none) */
static const char *text_of(const pz_run_plan *p, pz_setting id) {
    const char *t = pz_run_plan_text(p, id);
    return t ? t : "";
}

/* --progress and --quiet into a display mode (0 none, 1 bar, 2 lines); -1: they disagree */
static int progress_mode(const train_args *ta) {
    const char *progress = ta->progress;
    if (ta->quiet) {
        if (strcmp(progress, "auto") && strcmp(progress, "none")) {
            fprintf(stderr, "pipezip train: --quiet and --progress %s disagree: give one of them\n", progress);
            return -1;
        }
        return 0;
    }
    if (!strcmp(progress, "auto")) return isatty(2) ? 1 : 2;
    return !strcmp(progress, "bar") ? 1 : !strcmp(progress, "lines") ? 2 : 0;
}

/* what will run: the model, data, schedule and run directory; the pipeline */
static void print_header(const pz_run_plan *p) {
    const char *out = pz_run_dir_of(p);
    const int epochs = p->epochs, remote = pz_run_remote(p);
    char length[64];
    if (pz_run_plan_is_set(p, PZ_SET_STEPS) && p->steps > 0) snprintf(length, sizeof length, "%lld steps", (long long)p->steps);
    else snprintf(length, sizeof length, "%d epoch%s", epochs, epochs == 1 ? "" : "s");
    fprintf(stderr, "pipezip train: %s on %s, %s, batch %d, %s lr %g (%s), seed %llu%s%s\n", text_of(p, PZ_SET_MODEL),
            text_of(p, PZ_SET_DATA), length, p->batch, text_of(p, PZ_SET_OPTIMIZER), p->lr,
            text_of(p, PZ_SET_SCHEDULE), (unsigned long long)p->seed, out ? ", run directory " : "", out ? out : "");
    if (!pz_run_uses_pipeline(p)) return;
    char buf[128];
    const char *layout = pz_run_layout(p, buf, sizeof buf), *link = text_of(p, PZ_SET_LINK);
    char sched[96] = "";
    if (p->micro_batches > 1)
        snprintf(sched, sizeof sched, ", %d micro-batches (%s)", p->micro_batches, text_of(p, PZ_SET_PIPE_SCHEDULE));
    else if (p->micro_batches == 0)
        snprintf(sched, sizeof sched, ", micro-batches auto (chosen after step 1; %s)", text_of(p, PZ_SET_PIPE_SCHEDULE));
    if (layout && p->budget.kind != PZ_BUDGET_OFF)
        fprintf(stderr, "pipeline: %s, codecs chosen under a budget of %s from %s every %d steps (least %s error, activations x%g)%s%s%s\n",
                layout, text_of(p, PZ_SET_BUDGET), text_of(p, PZ_SET_BUDGET_LADDER), p->budget.every, text_of(p, PZ_SET_BUDGET_RULE),
                p->budget.fwd_weight, sched, remote ? ", link " : "", remote ? link : "");
    else if (layout)
        fprintf(stderr, "pipeline: %s, activations %s, gradients %s%s%s%s\n", layout, text_of(p, PZ_SET_FWD), text_of(p, PZ_SET_BWD),
                sched, remote ? ", link " : "", remote ? link : "");
    else fprintf(stderr, "pipeline: one stage (no boundary, nothing compressed)%s%s\n", remote ? ", link " : "", remote ? link : "");
}

/* the per-boundary table and the link clock of a pipeline's summary */
static void print_boundaries(const pz_run_plan *p, const pz_run_result *r, const char *el) {
    const int budget = p->budget.kind != PZ_BUDGET_OFF;
    printf("%d stages, fwd %s, bwd %s: %.2f MB forward + %.2f MB backward on the links, %.2fx less than fp32 (%.2f MB saved)\n",
           r->n_stages, budget ? "budget" : text_of(p, PZ_SET_FWD), budget ? "budget" : text_of(p, PZ_SET_BWD), r->fwd_bytes / 1e6, r->bwd_bytes / 1e6,
           r->fwd_bytes + r->bwd_bytes ? (double)r->fp32_bytes / (double)(r->fwd_bytes + r->bwd_bytes) : 0.0,
           ((double)r->fp32_bytes - (double)(r->fwd_bytes + r->bwd_bytes)) / 1e6);
    printf("  boundary  after       fwd codec            bytes   ratio  error   bwd codec            bytes   ratio  error\n");
    const pz_run_boundary *rb;
    for (int b = 0; (rb = pz_run_result_boundary(r, b)); b++) {
        printf("  %8d  %-10s  %-16s %7.1fMB %6.2fx %6.4f   %-16s %7.1fMB %6.2fx %6.4f\n", b + 1, rb->after, rb->fwd, rb->fwd_bytes / 1e6,
               rb->fwd_bytes ? (double)rb->fp32_fwd_bytes / (double)rb->fwd_bytes : 0.0, rb->fwd_error, rb->bwd, rb->bwd_bytes / 1e6,
               rb->bwd_bytes ? (double)rb->fp32_bwd_bytes / (double)rb->bwd_bytes : 0.0, rb->bwd_error);
    }
    const char *bw = pz_run_plan_text(p, PZ_SET_LINK_BANDWIDTH), *lat = pz_run_plan_text(p, PZ_SET_LINK_LATENCY);
    char em[32];
    fmt_time(em, sizeof em, r->emulated_seconds);
    const char *rate = pz_run_plan_text(p, PZ_SET_COMPUTE_RATE);
    char clock[96];
    if (p->clock.kind == PZ_CLOCK_RATE) snprintf(clock, sizeof clock, "virtual clock, compute at %s", rate);
    else snprintf(clock, sizeof clock, "virtual clock, compute as %s time", p->clock.kind == PZ_CLOCK_WALL ? "wall" : "cpu");
    if (bw || lat)
        printf("training time on a %s%s%s link: %s (%s; %s here)\n", bw ? bw : "", bw && lat ? " / " : "", lat ? lat : "", em, clock, el);
    printf("activation memory per stage (MB):");
    for (int i = 0; i < r->n_stages && i < 16; i++) printf("%s%.1f", i ? " / " : " ", (double)r->activation_bytes[i] / 1e6);
    printf("\n");
}

/* what the run reached and what crossed its boundaries */
static void print_summary(const pz_run_plan *p, const pz_run_result *r) {
    char el[32];
    fmt_time(el, sizeof el, r->wall_seconds);
    const double per = r->tokens ? r->tokens : 1;
    const char *unit = r->tokens ? "tokens" : "samples";
    printf("finished: %s on %s, %d epoch%s in %s, %lld parameters; %.0f %s/s while training, %.0f/s over the whole run "
           "(evaluation and checkpoints included)\n",
           text_of(p, PZ_SET_MODEL), text_of(p, PZ_SET_DATA), r->epochs_done, r->epochs_done == 1 ? "" : "s", el, (long long)r->n_params,
           r->train_samples_per_second * per, unit, r->samples_per_second * per);
    if (r->tokens) /* a language model: the held-out loss per token and in bits per byte of text */
        printf("validation loss %.4f (%.3f bits per byte), train loss %.4f, next-token accuracy %.2f%%\n", r->final_test_loss,
               r->final_test_bits_per_byte, r->final_train_loss, 100 * r->final_test_accuracy);
    else
        printf("test accuracy %.2f%% (best %.2f%%), test loss %.4f, train loss %.4f\n", 100 * r->final_test_accuracy,
               100 * r->best_test_accuracy, r->final_test_loss, r->final_train_loss);
    if (r->n_stages > 1) {
        if (r->tokens && r->final_test_loss_compressed >= 0)
            printf("through compressed boundaries: validation loss %.4f (%.3f bits per byte)\n", r->final_test_loss_compressed,
                   r->final_test_bits_per_byte_compressed);
        else if (r->final_test_accuracy_compressed >= 0)
            printf("through compressed boundaries: test accuracy %.2f%%\n", 100 * r->final_test_accuracy_compressed);
        print_boundaries(p, r, el);
    }
    /* where most of a run went to evaluation (a short --steps run over a
     * whole held-out split): say so, and what shortens it. Over the same
     * samples, training's share of the wall time is the ratio of the rates */
    const double train_share = r->train_samples_per_second > 0 ? r->samples_per_second / r->train_samples_per_second : 1.0;
    if (r->wall_seconds >= 5.0 && train_share < 0.5) {
        char ev[32];
        fmt_time(ev, sizeof ev, (1.0 - train_share) * r->wall_seconds);
        const int twice = r->n_stages > 1 && !strcmp(text_of(p, PZ_SET_EVAL_COMPRESS), "both");
        printf("note: %s of the %s (%.0f%%) went to evaluation and checkpoints, not training: the held-out split is evaluated at "
               "every epoch's end%s; --limit-test N evaluates fewer examples%s\n",
               ev, el, 100 * (1.0 - train_share), twice ? " twice (plain and through the compressed boundaries)" : "",
               twice ? ", --eval-compress on (or off) once" : "");
    }
    const char *dir = pz_run_dir_of(p);
    if (dir) printf("run directory: %s\n", dir);
}

/* Parse the flags into ta's plan; 0 to run, else the exit code. */
static int parse_train(train_args *ta, int argc, char **argv) {
    pz_opt opts[64];
    const int n_opts = train_opts(opts, ta);
    const int rc = pz_parse_args("pipezip train", opts, n_opts, argc, argv, 2, usage, NULL, 0, NULL);
    if (rc == 1) { /* --help: the options, then the codecs --fwd and --bwd take */
        printf("\n");
        pz_print_codec_grammar(stdout);
        return 0;
    }
    if (rc) return 2;
    /* how the run was started, shell-quoted, for config.json */
    static char cmdline[8192];
    shell_words(cmdline, sizeof cmdline, argc, argv);
    if (pz_run_plan_set(ta->plan, PZ_SET_COMMAND_LINE, cmdline)) return fprintf(stderr, "pipezip train: %s\n", pz_last_error()), 1;
    if (ta->no_out && pz_run_plan_text(ta->plan, PZ_SET_RESUME)) ta->no_out = 0; /* a resumed run continues in its own directory */
    if (ta->no_out && pz_run_plan_is_set(ta->plan, PZ_SET_OUT)) {
        fprintf(stderr, "pipezip train: --out and --no-out disagree: give one of them\n");
        return 2;
    }
    if (pz_run_plan_check(ta->plan) || pz_run_dir_check(ta->plan, ta->overwrite)) {
        fprintf(stderr, "pipezip train: %s\n", pz_last_error());
        return strstr(pz_last_error(), "cannot remove") ? 1 : 2;
    }
    return -1;
}

static int train(train_args *ta, int argc, char **argv) {
    const int rc = parse_train(ta, argc, argv);
    if (rc >= 0) return rc;
    pz_run_plan *plan = ta->plan;
    const char *kill_env = getenv("PZ_TEST_KILL_AT_EPOCH");
    kill_at_epoch = kill_env ? atoi(kill_env) : 0;
    const char *sig_env = getenv("PZ_TEST_SIGNAL_AT_STEP");
    signal_at_step = sig_env ? atoll(sig_env) : 0;
    const char *kill_step_env = getenv("PZ_TEST_KILL_AT_STEP");
    kill_at_step = kill_step_env ? atoll(kill_step_env) : 0;
    progress_state ps = {0};
    if ((ps.mode = progress_mode(ta)) < 0) return 2;

    /* SIGTERM or Ctrl-C finishes the current step, checkpoints it, writes the summary, exits 130 */
    struct sigaction sa = {0};
    sa.sa_handler = on_sigint;
    sa.sa_flags = SA_RESTART; /* a stage blocked in a read or write goes on: the flag is read after the step */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    int rank = 0;
    if (pz_run_processes_start(plan, &argc, &argv, &rank)) {
        fprintf(stderr, "pipezip train: %s\n", pz_last_error());
        return 2;
    }
    pz_run_dir dir = {0};
    if (rank > 0) ps.mode = 0; /* rank 0 drives, shows progress and writes the run directory */
    else if (pz_run_dir_prepare(plan, !ta->no_out, &dir)) {
        fprintf(stderr, "pipezip train: %s\n", pz_last_error());
        pz_run_processes_end(plan, 1);
        return 1;
    }
    if (rank == 0 && !ta->quiet) print_header(plan);
    pz_run_result r;
    const pz_status st = pz_run_train(plan, &r, on_progress, &ps);
    if (ps.mode == 1) fprintf(stderr, "\r\033[K");
    const int mpi = pz_run_multiprocess(plan);
    if (st) {
        pz_run_dir_abandon(plan, &dir); /* a bad flag or a missing dataset leaves no husk */
        fprintf(stderr, "pipezip train%s: %s\n", mpi ? (rank ? " (a stage's rank)" : " (rank 0)") : "", pz_last_error());
        pz_run_processes_end(plan, st == PZ_ERR_ARG ? 2 : 1);
        return st == PZ_ERR_ARG ? 2 : 1;
    }
    pz_run_processes_end(plan, 0);
    if (rank > 0) return 0;
    if (r.stopped) {
        const char *d = pz_run_dir_of(plan);
        if (d)
            fprintf(stderr, "pipezip train: stopped after step %lld (%d finished epoch%s); checkpoint and metrics in %s; "
                            "continue with the same flags and --resume %s\n",
                    (long long)r.steps_done, r.epochs_done, r.epochs_done == 1 ? "" : "s", d, d);
        else fprintf(stderr, "pipezip train: stopped after step %lld (%d finished epoch%s); nothing saved (no run directory)\n",
                     (long long)r.steps_done, r.epochs_done, r.epochs_done == 1 ? "" : "s");
        return 130;
    }
    print_summary(plan, &r);
    return 0;
}

int cmd_train(int argc, char **argv) {
    train_args ta = {.progress = "auto"};
    if (pz_run_plan_create(&ta.plan)) {
        fprintf(stderr, "pipezip train: %s\n", pz_last_error());
        return 1;
    }
    const int rc = train(&ta, argc, argv);
    pz_run_plan_free(ta.plan);
    return rc;
}
