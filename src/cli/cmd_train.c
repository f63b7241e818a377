/* cmd_train.c — `pipezip train`: options, progress display, final summary. */
#include "cli.h"
#include "args.h"
#include "pipezip/pipezip.h"
#include "link/link.h"
#include "exp/run.h"

#include <dirent.h>
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

static int on_progress(const pz_progress *p, void *user) {
    progress_state *ps = user;
    if (kill_at_epoch > 0 && p->epoch == kill_at_epoch && !p->end_of_epoch && !p->evaluation) kill(getpid(), SIGKILL);
    if (interrupted) return 1;
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
                (long long)p->step, (long long)p->steps_per_epoch, p->test_loss, bpb, comp, 100 * p->test_accuracy);
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
        if (now - ps->last < 0.2 && p->step != p->steps_per_epoch) return 0;
        ps->last = now;
        const int width = 24, fill = (int)(width * p->step / (p->steps_per_epoch ? p->steps_per_epoch : 1));
        char bar[32];
        for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : '.';
        bar[width] = 0;
        fprintf(stderr, "\r\033[Kepoch %d/%d [%s] %lld/%lld  loss %.4f  acc %5.2f%%  %.0f train samples/s  ETA %s",
                p->epoch, p->epochs, bar, (long long)p->step, (long long)p->steps_per_epoch, p->loss,
                100 * p->accuracy, p->train_samples_per_second, eta);
    } else if (ps->mode == 2) {
        if (now - ps->last < 10.0) return 0;
        ps->last = now;
        fprintf(stderr, "epoch %d/%d step %lld/%lld  loss %.4f  acc %5.2f%%  %.0f train samples/s  ETA %s\n", p->epoch,
                p->epochs, (long long)p->step, (long long)p->steps_per_epoch, p->loss, 100 * p->accuracy,
                p->train_samples_per_second, eta);
    }
    return 0;
}

typedef struct {
    pz_run_config c;
    const char *progress, *out, *shard;
    int no_out, overwrite, quiet;
} train_args;

/* The files a run writes into its directory (and its checkpoint/ directory). */
static const char *const run_files[] = {"config.json", "summary.json", "steps.jsonl", "epochs.jsonl", "steps.csv", "epochs.csv",
                                        "boundaries.jsonl", "boundaries.csv", "evals.jsonl", "evals.csv", "tokenizer.txt",
                                        "checkpoint", NULL};

/* Does dir hold a run (any file a run writes)? Its first such file into what. */
static int holds_run(const char *dir, char *what, size_t cap) {
    for (const char *const *f = run_files; *f; f++) {
        snprintf(what, cap, "%s/%s", dir, *f);
        if (access(what, F_OK) == 0) return 1;
    }
    return 0;
}

/* --overwrite: the files of the run in dir go (nothing else in it) */
static int remove_run(const char *dir) {
    char p[4200];
    for (const char *const *f = run_files; *f; f++) {
        if (!strcmp(*f, "checkpoint")) continue; /* a directory: below */
        snprintf(p, sizeof p, "%s/%s", dir, *f);
        if (unlink(p) != 0 && errno != ENOENT) return -1;
    }
    snprintf(p, sizeof p, "%s/checkpoint/latest.json", dir);
    if (unlink(p) != 0 && errno != ENOENT) return -1;
    snprintf(p, sizeof p, "%s/checkpoint", dir);
    DIR *d = opendir(p);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (strncmp(e->d_name, "epoch-", 6)) continue;
            char q[4500];
            snprintf(q, sizeof q, "%s/%s", p, e->d_name);
            DIR *s = opendir(q);
            struct dirent *f;
            while (s && (f = readdir(s))) {
                if (f->d_name[0] == '.') continue;
                char r[5000];
                snprintf(r, sizeof r, "%s/%s", q, f->d_name);
                unlink(r);
            }
            if (s) closedir(s);
            rmdir(q);
        }
        closedir(d);
        rmdir(p);
    }
    return 0;
}

/* A new default run directory, runs/DATE-MODEL-DATA[-N], claimed with
 * mkdir so runs started in the same second never share one. */
static int made_runs; /* runs/ itself was created by this command */
static int claim_run_dir(char *dir, size_t cap, const char *model, const char *data) {
    time_t t = time(NULL);
    struct tm tm;
    localtime_r(&t, &tm);
    char stamp[32], clean[96];
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    snprintf(clean, sizeof clean, "%s", data);
    for (char *c = clean; *c; c++)
        if (*c == '/' || *c == ':') *c = '_'; /* text:FILE */
    if (mkdir("runs", 0777) == 0) made_runs = 1;
    else if (errno != EEXIST) return -1;
    for (int n = 1; n < 10000; n++) {
        if (n == 1) snprintf(dir, cap, "runs/%s-%s-%s", stamp, model, clean);
        else snprintf(dir, cap, "runs/%s-%s-%s-%d", stamp, model, clean, n);
        if (mkdir(dir, 0777) == 0) return 0;
        if (errno != EEXIST) return -1;
    }
    return -1;
}

/* the options of pipezip train, pointing into a */
static int train_opts(pz_opt *opts, train_args *a) {
    pz_run_config *cp = &a->c;
    const pz_opt list[] = {
        {"model", OPT_STR, &cp->model, "NAME", "model preset (see pipezip models)", 0, 0, "mlp|lenet5|resnet8|resnet20|gpt-tiny|gpt-small"},
        {"data", OPT_STR, &cp->data, "NAME", "dataset (kjv: the King James Bible from Debian's bible-kjv; text:FILE any UTF-8 text; for gpt-*, tokens by --tokenizer)", 0, 0, "fashion-mnist|mnist|cifar10|synthetic|kjv|text:FILE"},
        {"tokenizer", OPT_STR, &cp->tokenizer, "SPEC", "text's tokens: bytes (256) or bpe:N, byte-level BPE of N tokens learned from the training split, kept in the run directory", 0, 0, "bytes|bpe:N"},
        {"data-dir", OPT_STR, &cp->data_dir, "DIR", "dataset directory (default: fashion-mnist and mnist under /usr/share/datasets, cifar10 in data/cifar-10-batches-bin, the kjv text cached in data/)", 0, 0, NULL},
        {"limit-train", OPT_I64, &cp->limit_train, "N", "use only the first N training examples (0 = all)", 0, 1e12, NULL},
        {"limit-test", OPT_I64, &cp->limit_test, "N", "use only the first N test examples (0 = all)", 0, 1e12, NULL},
        {"epochs", OPT_INT, &cp->epochs, "N", "training epochs", 1, 100000, NULL},
        {"batch", OPT_INT, &cp->batch, "N", "batch size", 1, 65536, NULL},
        {"optimizer", OPT_STR, &cp->optimizer, "NAME", "optimizer", 0, 0, "sgd|adamw"},
        {"lr", OPT_FLOAT, &cp->lr, "X", "peak learning rate", 1e-9, 100, NULL},
        {"momentum", OPT_FLOAT, &cp->momentum, "X", "SGD momentum", 0, 0.999999, NULL},
        {"nesterov", OPT_BOOL, &cp->nesterov, NULL, "Nesterov momentum (SGD)", 0, 0, NULL},
        {"weight-decay", OPT_FLOAT, &cp->weight_decay, "X", "weight decay (SGD: L2; AdamW: decoupled)", 0, 10, NULL},
        {"schedule", OPT_STR, &cp->schedule, "SPEC", "LR schedule: constant, cosine, step:EPOCHS,GAMMA, onecycle[:PCT]", 0, 0, NULL},
        {"warmup", OPT_FLOAT, &cp->warmup_epochs, "EPOCHS", "linear LR warm-up (constant, step, cosine)", 0, 1e6, NULL},
        {"clip-norm", OPT_FLOAT, &cp->clip_norm, "X", "clip the gradients' global norm, over every stage, to X (0 = off; 1 is usual for gpt-*)", 0, 1e9, NULL},
        {"crop-pad", OPT_INT, &cp->augment_pad, "PX", "random-crop padding in pixels (0 = no crop, -1 = dataset default: 4 for cifar10, else 0)", -1, 16, NULL},
        {"flip", OPT_BOOL, &cp->augment_flip, NULL, "random horizontal flips (default: on for fashion-mnist and cifar10)", 0, 0, NULL},
        {"seed", OPT_U64, &cp->seed, "N", "seed for initialisation, shuffling and augmentation", 0, 0, NULL},
        {"threads", OPT_INT, &cp->threads, "N", "threads (0 = all cores)", 0, 1024, NULL},
        {"stages", OPT_INT, &cp->stages, "S", "cut the model into S stages balanced by compute (1: no pipeline; default: resnets in 4 stages, a cut after each residual group as in Paper A; other models 1)", 1, 16, NULL},
        {"cuts", OPT_STR, &cp->cuts, "LIST", "cut after these layers (indices or names from pipezip models, e.g. layer1,layer2,layer3)", 0, 0, NULL},
        {"fwd", OPT_STR, &cp->fwd, "SPEC", "codec for activations: SPEC for every boundary, N=SPEC for boundary N (1 = first cut), e.g. q4 or q8,1=q2 (see pipezip codec --help)", 0, 0, NULL},
        {"bwd", OPT_STR, &cp->bwd, "SPEC", "codec for gradients, as --fwd", 0, 0, NULL},
        {"eval-compress", OPT_STR, &cp->eval_compress, "MODE", "test through compressed boundaries, plain ones, or both", 0, 0, "on|off|both"},
        {"micro-batches", OPT_INT, &cp->micro_batches, "M", "GPipe: split every batch into M micro-batches that flow through the stages in turn", 1, 16, NULL},
        {"aqsgd-warmup", OPT_INT, &cp->aqsgd_warmup, "EPOCHS", "aqsgd(...) codecs send uncompressed for the first EPOCHS epochs, filling their buffers", 0, 100000, NULL},
        {"link", OPT_STR, &cp->link, "KIND", "how stages talk: threads in this process, Open MPI ranks (mpirun -np S), or ZeroMQ to a pipezip serve", 0, 0, "inproc|mpi|zmq"},
        {"connect", OPT_STR, &cp->connect, "ENDPOINT", "--link zmq: the server, e.g. tcp://server:5555", 0, 0, NULL},
        {"client-key", OPT_STR, &cp->client_key, "FILE", "--link zmq: this client's CURVE secret key (pipezip keygen)", 0, 0, NULL},
        {"server-key", OPT_STR, &cp->server_key, "FILE", "--link zmq: the server's CURVE public key (FILE.pub from pipezip keygen)", 0, 0, NULL},
        {"link-bandwidth", OPT_STR, &cp->link_bandwidth, "RATE", "emulate this bandwidth at every boundary: 10mbit, 100mbit, 1gbit, 12.5MB/s", 0, 0, NULL},
        {"link-latency", OPT_STR, &cp->link_latency, "TIME", "emulate this one-way latency at every boundary: 10ms, 250us", 0, 0, NULL},
        {"link-realtime", OPT_BOOL, &cp->link_realtime, NULL, "really hold frames back (default: a virtual clock reports the time the run would take)", 0, 0, NULL},
        {"timeout", OPT_FLOAT64, &cp->timeout, "SECONDS", "a stage or peer silent this long stops the run with an error", 0.001, 1e6, NULL},
        {"turn", OPT_STR, &cp->turn, "WHEN", "--link zmq: give the next client its turn after the whole run, every epoch, or every K steps (split learning's round robin; each turn starts from the client-side weights the last one left)", 0, 0, "run|epoch|K"},
        {"shard", OPT_STR, &a->shard, "K/N", "train on the K-th of N equal slices of the training set (split-learning clients)", 0, 0, NULL},
        {"resume", OPT_STR, &cp->resume, "DIR", "continue the run in DIR from its last checkpoint (same flags as the original run)", 0, 0, NULL},
        {"out", OPT_STR, &a->out, "DIR", "run directory (default runs/DATE-MODEL-DATA)", 0, 0, NULL},
        {"no-out", OPT_BOOL, &a->no_out, NULL, "write no run directory", 0, 0, NULL},
        {"overwrite", OPT_BOOL, &a->overwrite, NULL, "replace the run already in --out DIR (without it, such a DIR is refused)", 0, 0, NULL},
        {"metrics", OPT_STR, &cp->metrics_format, "FORMAT", "metrics file format", 0, 0, "jsonl|csv"},
        {"log-every", OPT_INT, &cp->log_every, "N", "write a step record every N steps", 1, 1000000, NULL},
        {"grad-mask", OPT_STR, &cp->grad_mask, "MODE", "fwd: zero each boundary's gradient where its activation arrived as 0, before --bwd (the derivative of a forward TopK; Paper A's GPT-2 runs reuse the forward mask)", 0, 0, "none|fwd"},
        {"eval-every", OPT_INT, &cp->eval_every, "N", "also evaluate every N steps (validation loss, bits per byte, plain and compressed) into evals.jsonl (0 = at epoch ends only)", 0, 100000000, NULL},
        {"progress", OPT_STR, &a->progress, "MODE", "progress display (auto: a bar on a terminal, lines otherwise)", 0, 0, "auto|bar|lines|none"},
        {"quiet", OPT_BOOL, &a->quiet, NULL, "no progress display (--progress none); the final summary still prints", 0, 0, NULL},
    };
    memcpy(opts, list, sizeof list);
    return (int)(sizeof list / sizeof *list);
}

int train_option_known(const char *name) {
    train_args a;
    pz_opt opts[64];
    const int n = train_opts(opts, &a);
    for (int i = 0; i < n; i++)
        if (!strcmp(opts[i].name, name)) return 1;
    return 0;
}

/* argv as one shell line: words of safe characters as they are, the others
 * in single quotes (a quote as '\\''); truncated to cap */
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

/* Whether the run will have a single stage, so no boundary for --fwd,
 * --bwd or the link options to act on: --cuts decides when given, then
 * --stages; by default resnets are cut after each residual group, and a
 * run over processes has a stage per process. */
static int one_stage(const pz_run_config *c, int remote) {
    if (c->cuts && *c->cuts) return 0;
    return c->stages == 1 || (c->stages == 0 && !remote && strncmp(c->model, "resnet", 6));
}

int cmd_train(int argc, char **argv) {
    train_args ta = {.progress = "auto"};
    pz_run_config_default(&ta.c);
    pz_opt opts[64];
    const int n_opts = train_opts(opts, &ta);
    int rc = pz_parse_args("pipezip train", opts, n_opts, argc, argv, 2, usage, NULL, 0, NULL);
    if (rc == 1) { /* --help: the options, then the codecs --fwd and --bwd take */
        printf("\n");
        pz_print_codec_grammar(stdout);
        return 0;
    }
    if (rc) return 2;
    pz_run_config c = ta.c;
    /* how the run was started, shell-quoted, for config.json */
    static char cmdline[8192];
    shell_words(cmdline, sizeof cmdline, argc, argv);
    c.command_line = cmdline;
    const char *kill_env = getenv("PZ_TEST_KILL_AT_EPOCH");
    kill_at_epoch = kill_env ? atoi(kill_env) : 0;
    const char *progress = ta.progress, *out = ta.out, *shard = ta.shard;
    int no_out = ta.no_out;

    /* flags that act on the boundaries between stages, given to a run that
     * has none, would be silently unused: an mlp "compressed" with --fwd q2
     * trains exactly as an uncompressed one */
    pz_run_config d0;
    pz_run_config_default(&d0);
    const int remote = strcmp(c.link, "inproc") != 0;
    if (one_stage(&c, remote) && !remote) {
        const char *flag = NULL, *val = "";
        if (c.fwd != d0.fwd) flag = "--fwd", val = c.fwd;
        else if (c.bwd != d0.bwd) flag = "--bwd", val = c.bwd;
        else if (c.link_bandwidth) flag = "--link-bandwidth", val = c.link_bandwidth;
        else if (c.link_latency) flag = "--link-latency", val = c.link_latency;
        else if (c.link_realtime) flag = "--link-realtime";
        else if (c.grad_mask && !strcmp(c.grad_mask, "fwd")) flag = "--grad-mask", val = c.grad_mask;
        if (flag) {
            fprintf(stderr,
                    "pipezip train: %s%s%s acts on the boundaries between stages, and this %s run has one stage (%s): "
                    "cut it with --stages S or --cuts LIST (pipezip models %s lists its layers)\n",
                    flag, *val ? " " : "", val, c.model, c.stages == 1 ? "--stages 1" : "only resnets are cut by default", c.model);
            return 2;
        }
    }
    if (shard) {
        int k, n;
        char extra;
        if (sscanf(shard, "%d/%d%c", &k, &n, &extra) != 2 || n < 1 || k < 1 || k > n) {
            fprintf(stderr, "pipezip train: --shard expects K/N with 1 <= K <= N, got '%s'\n", shard);
            return 2;
        }
        c.shard_index = k - 1, c.shard_count = n;
    }
    char dir[512];
    if (c.resume) out = c.resume, no_out = 0; /* a resumed run continues in its own directory */
    if (c.resume && ta.overwrite) {
        fprintf(stderr, "pipezip train: --resume continues a run, --overwrite replaces one: give one of them\n");
        return 2;
    }
    if (!no_out && out && !c.resume) { /* an existing run is never mixed with this one or overwritten */
        char what[4300];
        if (holds_run(out, what, sizeof what)) {
            if (!ta.overwrite) {
                fprintf(stderr, "pipezip train: --out %s holds a run (%s): continue it with --resume %s, or replace it with --overwrite\n",
                        out, what, out);
                return 2;
            }
            if (remove_run(out) != 0) {
                fprintf(stderr, "pipezip train: --overwrite: cannot remove the run in %s: %s\n", out, strerror(errno));
                return 1;
            }
        }
    }
    if (ta.quiet) {
        if (strcmp(progress, "auto") && strcmp(progress, "none")) {
            fprintf(stderr, "pipezip train: --quiet and --progress %s disagree: give one of them\n", progress);
            return 2;
        }
        progress = "none";
    }
    progress_state ps = {0};
    if (!strcmp(progress, "auto")) ps.mode = isatty(2) ? 1 : 2;
    else if (!strcmp(progress, "bar")) ps.mode = 1;
    else if (!strcmp(progress, "lines")) ps.mode = 2;

    /* Ctrl-C finishes the current step, writes the summary, exits 130 */
    struct sigaction sa = {0};
    sa.sa_handler = on_sigint;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    pz_run_result r;
    const int mpi = !strcmp(c.link, "mpi");
    int rank = 0, size = 0;
    if (mpi) {
        if (pz_mpi_init(&argc, &argv, &rank, &size)) {
            fprintf(stderr, "pipezip train: %s\n", pz_last_error());
            return 2;
        }
        if (rank > 0) ps.mode = 0, no_out = 1; /* rank 0 drives, shows progress and writes the run directory */
    }
    int made_dir = 0; /* this command creates the run directory: a run that fails before writing to it takes it away */
    if (!no_out) {
        struct stat sb;
        made_dir = !out || stat(out, &sb) != 0;
        if (!out) {
            if (claim_run_dir(dir, sizeof dir, c.model, c.data) != 0) {
                fprintf(stderr, "pipezip train: cannot create a run directory under runs/: %s\n", strerror(errno));
                if (mpi) pz_mpi_abort(1);
                return 1;
            }
            out = dir;
        }
        c.out_dir = out;
    }
    if (rank == 0 && !ta.quiet) {
        fprintf(stderr, "pipezip train: %s on %s, %d epoch%s, batch %d, %s lr %g (%s), seed %llu%s%s\n", c.model, c.data,
                c.epochs, c.epochs == 1 ? "" : "s", c.batch, c.optimizer, c.lr, c.schedule, (unsigned long long)c.seed,
                c.out_dir ? ", run directory " : "", c.out_dir ? c.out_dir : "");
        if (pz_run_uses_pipeline(&c)) {
            char balanced[48];
            snprintf(balanced, sizeof balanced, "%d stages balanced by compute", c.stages);
            const char *layout = one_stage(&c, remote) ? NULL
                                 : c.cuts && *c.cuts   ? c.cuts
                                 : c.stages > 1        ? balanced
                                 : remote              ? "a stage per process"
                                                       : "4 stages (resnets: after each residual group)";
            if (layout)
                fprintf(stderr, "pipeline: %s, activations %s, gradients %s%s%s\n", layout, c.fwd, c.bwd, remote ? ", link " : "",
                        remote ? c.link : "");
            else
                fprintf(stderr, "pipeline: one stage (no boundary, nothing compressed)%s%s\n", remote ? ", link " : "", remote ? c.link : "");
        }
    }
    pz_status st = pz_run_train(&c, &r, on_progress, &ps);
    if (ps.mode == 1) fprintf(stderr, "\r\033[K");
    if (st) {
        if (made_dir && c.out_dir && rmdir(c.out_dir) == 0 && made_runs) rmdir("runs"); /* only if empty: a bad flag or a missing dataset leaves no husk */
        fprintf(stderr, "pipezip train%s: %s\n", mpi ? (rank ? " (a stage's rank)" : " (rank 0)") : "", pz_last_error());
        if (mpi) pz_mpi_abort(st == PZ_ERR_ARG ? 2 : 1); /* the other ranks must not wait for a dead one */
        return st == PZ_ERR_ARG ? 2 : 1;
    }
    if (mpi) {
        pz_mpi_finalize();
        if (rank > 0) return 0;
    }
    char el[32];
    fmt_time(el, sizeof el, r.wall_seconds);
    if (r.stopped) {
        fprintf(stderr, "pipezip train: interrupted after %d finished epoch%s%s%s\n", r.epochs_done, r.epochs_done == 1 ? "" : "s",
                c.out_dir ? "; metrics so far are in " : "", c.out_dir ? c.out_dir : "");
        return 130;
    }
    const double per = r.tokens ? r.tokens : 1;
    const char *unit = r.tokens ? "tokens" : "samples";
    printf("finished: %s on %s, %d epoch%s in %s, %lld parameters; %.0f %s/s while training, %.0f/s over the whole run "
           "(evaluation and checkpoints included)\n",
           c.model, c.data, r.epochs_done, r.epochs_done == 1 ? "" : "s", el, (long long)r.n_params, r.train_samples_per_second * per, unit,
           r.samples_per_second * per);
    if (r.tokens) /* a language model: the held-out loss per token and in bits per byte of text */
        printf("validation loss %.4f (%.3f bits per byte), train loss %.4f, next-token accuracy %.2f%%\n", r.final_test_loss,
               r.final_test_bits_per_byte, r.final_train_loss, 100 * r.final_test_accuracy);
    else
        printf("test accuracy %.2f%% (best %.2f%%), test loss %.4f, train loss %.4f\n", 100 * r.final_test_accuracy,
               100 * r.best_test_accuracy, r.final_test_loss, r.final_train_loss);
    if (r.n_stages > 1) {
        if (r.tokens && r.final_test_loss_compressed >= 0)
            printf("through compressed boundaries: validation loss %.4f (%.3f bits per byte)\n", r.final_test_loss_compressed,
                   r.final_test_bits_per_byte_compressed);
        else if (r.final_test_accuracy_compressed >= 0)
            printf("through compressed boundaries: test accuracy %.2f%%\n", 100 * r.final_test_accuracy_compressed);
        printf("%d stages, fwd %s, bwd %s: %.2f MB forward + %.2f MB backward on the links, %.2fx less than fp32 (%.2f MB saved)\n",
               r.n_stages, c.fwd, c.bwd, r.fwd_bytes / 1e6, r.bwd_bytes / 1e6,
               r.fwd_bytes + r.bwd_bytes ? (double)r.fp32_bytes / (double)(r.fwd_bytes + r.bwd_bytes) : 0.0,
               ((double)r.fp32_bytes - (double)(r.fwd_bytes + r.bwd_bytes)) / 1e6);
        printf("  boundary  after       fwd codec            bytes   ratio  error   bwd codec            bytes   ratio  error\n");
        for (int b = 0; b + 1 < r.n_stages && b < 15; b++) {
            const __typeof__(r.boundaries[0]) *rb = &r.boundaries[b];
            printf("  %8d  %-10s  %-16s %7.1fMB %6.2fx %6.4f   %-16s %7.1fMB %6.2fx %6.4f\n", b + 1, rb->after, rb->fwd,
                   rb->fwd_bytes / 1e6, rb->fwd_bytes ? (double)rb->fp32_fwd_bytes / (double)rb->fwd_bytes : 0.0, rb->fwd_error, rb->bwd,
                   rb->bwd_bytes / 1e6, rb->bwd_bytes ? (double)rb->fp32_bwd_bytes / (double)rb->bwd_bytes : 0.0, rb->bwd_error);
        }
        char em[32];
        fmt_time(em, sizeof em, r.emulated_seconds);
        if (c.link_bandwidth || c.link_latency)
            printf("training time on a %s%s%s link: %s (virtual clock; %s here)\n", c.link_bandwidth ? c.link_bandwidth : "",
                   c.link_bandwidth && c.link_latency ? " / " : "", c.link_latency ? c.link_latency : "", em, el);
    }
    if (c.out_dir) printf("run directory: %s\n", c.out_dir);
    return 0;
}
