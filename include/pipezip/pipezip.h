/* SPDX-License-Identifier: MIT */
/* pipezip.h — the public C API of pipezip.
 *
 * pipezip trains neural networks cut into stages whose boundaries carry
 * compressed activations and gradients. This header is what another program
 * links against (pkg-config --cflags --libs pipezip). Every function that can
 * fail returns a pz_status; on failure pz_last_error() says why, naming the
 * file, flag or value at fault. */
#ifndef PIPEZIP_H
#define PIPEZIP_H

#include <stdint.h>
#include "pipezip/status.h"
#include "pipezip/version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* "MAJOR.MINOR.PATCH" of the library that runs (PZ_VERSION_STRING: of the
 * headers compiled against) */
PZ_API const char *pz_version(void);

/* Threads for every kernel (OpenMP and BLAS); n <= 0 means all cores, and
 * never more than OMP_THREAD_LIMIT. Call before creating networks. */
PZ_API void pz_set_threads(int n);

/* ---- a network ----------------------------------------------------------- */
typedef struct pz_net pz_net;

/* A preset ("mlp", "lenet5", "resnet8", "resnet20") for inputs of shape
 * (channels, height, width), n_classes outputs, batches of up to batch_max,
 * weights initialised from seed. */
PZ_API pz_status pz_net_create(pz_net **net, const char *preset, int channels, int height, int width,
                        int n_classes, int batch_max, uint64_t seed);
PZ_API void pz_net_free(pz_net *net);
PZ_API int64_t pz_net_num_params(const pz_net *net);
/* Eval-mode forward of B <= batch_max inputs (B, C, H, W); logits (B, n_classes). */
PZ_API pz_status pz_net_forward(pz_net *net, const float *x, int B, float *logits);
/* One SGD step (momentum 0.9, no weight decay) on a batch with int labels;
 * *loss gets the batch's mean softmax cross-entropy before the update. */
PZ_API pz_status pz_net_train_step(pz_net *net, const float *x, const int32_t *labels, int B, float lr, float *loss);

/* ---- a training run (what `pipezip train` does) ------------------------------
 * A run's settings go in through one door, as zstd's parameters do: each
 * is a pz_setting, given as the text a user would type ("q4,1=q2",
 * "100mbit", "gpt-tiny") or as a number, parsed and checked at once into
 * a typed plan. An error names the setting as its flag (--fwd) and says
 * what it accepts; the rooms of the run read typed values only. The flags
 * of `pipezip train` are these settings (pz_setting_name). */
/* Every setting, in one list (an X-macro: X(NAME) for each): the enum
 * below, the settings table, config.json and the resume fingerprint are
 * generated from it (run/settings.c), so a setting is added in one row. */
#define PZ_SETTINGS(X) \
    X(MODEL)              /* "resnet8": a preset (pipezip models) */ \
    X(DATA)               /* "fashion-mnist", "mnist", "cifar10", "synthetic", "kjv", "text:FILE" */ \
    X(TOKENIZER)          /* text: "bytes" or "bpe:N" */ \
    X(DATA_DIR)           /* the dataset's directory (default: its own) */ \
    X(LIMIT_TRAIN)        /* use only the first N training examples (0: all) */ \
    X(LIMIT_TEST)         \
    X(EPOCHS)             \
    X(BATCH)              \
    X(OPTIMIZER)          /* "sgd" or "adamw" */ \
    X(LR)                 \
    X(MOMENTUM)           \
    X(NESTEROV)           /* 0/1 ("on"/"off") */ \
    X(WEIGHT_DECAY)       \
    X(SCHEDULE)           /* "constant", "cosine", "step:E,G", "onecycle[:PCT]" */ \
    X(WARMUP)             /* LR warm-up, in epochs */ \
    X(CLIP_NORM)          /* 0: off */ \
    X(CROP_PAD)           /* -1: the dataset's default */ \
    X(FLIP)               /* -1: the dataset's default */ \
    X(SEED)               \
    X(THREADS)            /* 0: all cores */ \
    X(STAGES)             /* 0: auto (resnets in 4 stages, others 1) */ \
    X(CUTS)               /* "layer1,layer2,layer3" or "3,4,5" */ \
    X(FWD)                /* activation codecs: "q4", "q8,1=q2" */ \
    X(BWD)                /* gradient codecs */ \
    X(EVAL_COMPRESS)      /* "both", "on", "off" */ \
    X(MICRO_BATCHES)      \
    X(AQSGD_WARMUP)       /* epochs */ \
    X(LINK)               /* "inproc", "mpi", "zmq" */ \
    X(CONNECT)            /* zmq: "tcp://HOST:PORT" */ \
    X(CLIENT_KEY)         /* zmq CURVE: this client's secret key file */ \
    X(SERVER_KEY)         /* zmq CURVE: the server's public key file */ \
    X(LINK_BANDWIDTH)     /* emulated: "100mbit", "12.5MB/s" */ \
    X(LINK_LATENCY)       /* emulated: "10ms", "250us" */ \
    X(LINK_REALTIME)      /* really hold frames back */ \
    X(TIMEOUT)            /* seconds */ \
    X(TURN)               /* zmq: "run", "epoch" or a number of steps */ \
    X(SHARD)              /* "K/N" */ \
    X(RESUME)             /* a run directory to continue */ \
    X(OUT)                /* the run directory (unset: none is written) */ \
    X(METRICS)            /* "jsonl" or "csv" */ \
    X(LOG_EVERY)          \
    X(GRAD_MASK)          /* "none" or "fwd" */ \
    X(EVAL_EVERY)         /* steps; 0: at epoch ends only */ \
    X(COMMAND_LINE)       /* how the run was started, for config.json */ \
    X(STEPS)              /* optimizer steps (0: --epochs decides); epochs follow from it */ \
    X(CHECKPOINT_EVERY)   /* also checkpoint every N steps (0: at epoch ends only) */ \
    X(PIPE_SCHEDULE)      /* "gpipe" or "1f1b" */ \
    X(COMPUTE_RATE)       /* the emulated clock's compute: "cpu", "wall" or a rate ("100tflops") */ \
    X(SUBSPACE)           /* a GPT's blocks write into a fixed K-dim subspace; boundaries carry K per token (0: off) */ \
    X(BUDGET)             /* a traffic budget: "40x", "2MB" (per step), "200mbit@50ms" (per link direction); unset: off */ \
    X(BUDGET_LADDER)      /* the budget's stateless codecs, best first: "q8:bytes+zstd/q6:bytes+zstd/..." */ \
    X(BUDGET_EVERY)       /* re-decide after step 1 and every N steps */ \
    X(BUDGET_FWD_WEIGHT)  /* the activations' errors count W times a gradient's in the budget's choice */ \
    X(BUDGET_RULE)        /* what the budget's choice minimizes: "sum" or "max" of the errors */ \
    X(LINK_MODEL)         /* emulated links: "duplex" (a wire per direction) or "shared" (one inbound wire per stage, stop and wait) */ \
    X(ACTIVATION_MEMORY)  /* --micro-batches auto: the most activation memory a stage may hold ("2GB"; unset: no bound) */ \
    X(PROJECT)            /* with SUBSPACE: each cut sends K learned orthonormal coefficients per token (0: off) */ \
    X(PIPE_DELAY)         /* --pipe-schedule async: a batch's gradient is applied this many steps late (0 or 1) */ \
    X(DUMP_BOUNDARIES)    /* "N:DIR": step N's boundary tensors, before their codecs, as .npy files in DIR */

#define PZ_SETTING_ENUM_(NAME) PZ_SET_##NAME,
typedef enum { PZ_SETTINGS(PZ_SETTING_ENUM_) PZ_SET_COUNT } pz_setting;
#undef PZ_SETTING_ENUM_

typedef struct pz_run_plan pz_run_plan;

/* A plan with the defaults `pipezip train` uses. */
PZ_API pz_status pz_run_plan_create(pz_run_plan **plan);
PZ_API void pz_run_plan_free(pz_run_plan *plan);
/* Any setting from its text; a boolean takes on/off (true/false, 1/0). */
PZ_API pz_status pz_run_plan_set(pz_run_plan *plan, pz_setting setting, const char *text);
/* A numeric (or boolean) setting from a number: the same checks. */
PZ_API pz_status pz_run_plan_set_number(pz_run_plan *plan, pz_setting setting, double value);
/* Whether a setting was given (not left at its default). */
PZ_API int pz_run_plan_is_set(const pz_run_plan *plan, pz_setting setting);
/* A setting's text as given (or its default's; NULL when it has none). */
PZ_API const char *pz_run_plan_text(const pz_run_plan *plan, pz_setting setting);
/* The rules across settings (a tokenizer for text, the data a model takes,
 * --stages against --cuts, the flags that need a boundary between stages,
 * a link's own flags) and the cuts and per-boundary codec lists against
 * the model's layers (no data read); pz_run_train checks them first too. */
PZ_API pz_status pz_run_plan_check(const pz_run_plan *plan);
/* A setting's flag name without "--" ("link-bandwidth"), NULL for none. */
PZ_API const char *pz_setting_name(pz_setting setting);
/* The setting a flag name ("link-bandwidth") or config.json key
 * ("link_bandwidth") names; -1 for none. */
PZ_API int pz_setting_by_name(const char *name);
/* What a setting takes, from the settings table (what --help prints). */
typedef struct {
    const char *flag, *key;   /* "link-bandwidth", "link_bandwidth" (the flag is NULL for a program's setting) */
    const char *type;         /* "int", "int64", "uint64", "float", "double", "bool", "text" or "enum" */
    double min, max;          /* numbers: the accepted range (both 0: any) */
    const char *default_text; /* text and enums: the default (NULL: none) */
    const char *choices;      /* "a|b|c" (NULL: free text or a number) */
    const char *help;
} pz_setting_info;
PZ_API pz_status pz_setting_describe(pz_setting setting, pz_setting_info *info);

/* One boundary's training traffic in a run (pz_run_result_boundary). */
#define PZ_RUN_MAX_BOUNDARIES 15
#define PZ_RUN_SPEC_MAX 256
typedef struct {
    char after[64];                                  /* the layer it follows */
    char fwd[PZ_RUN_SPEC_MAX], bwd[PZ_RUN_SPEC_MAX]; /* its codec specs as given, whole */
    uint64_t fwd_bytes, bwd_bytes, fp32_fwd_bytes, fp32_bwd_bytes;
    double fwd_error, bwd_error;                     /* mean relative compression error */
} pz_run_boundary;

typedef struct {
    int epochs_done;
    double final_test_accuracy, best_test_accuracy, final_test_loss;
    double final_train_loss, final_train_accuracy;
    double wall_seconds, samples_per_second;
    int64_t n_params;
    int stopped;               /* 1: the progress callback asked to stop */
    int n_stages;
    double final_test_accuracy_compressed; /* pipeline, eval through compressed boundaries (-1: not run) */
    uint64_t fwd_bytes, bwd_bytes;         /* training traffic over all boundaries (headers + frames) */
    uint64_t fp32_bytes;                   /* the same activations and gradients as raw fp32 */
    uint64_t eval_bytes, link_bytes;       /* evaluation traffic; everything the links moved */
    double emulated_seconds;               /* training time on the (emulated) links: the virtual clock */
    int resumed_from;                      /* the checkpoint's epoch when resuming (0: fresh) */
    int handed_over;                       /* split learning: started from the previous client's weights */
    pz_run_boundary boundaries[PZ_RUN_MAX_BOUNDARIES]; /* read them through pz_run_result_boundary */
    double final_test_loss_compressed;     /* pipeline, eval through compressed boundaries (-1: not run) */
    int tokens;                            /* a language model: tokens per sample (0: an image model) */
    double final_test_bits_per_byte;       /* a language model: held-out bits per byte (-1: not one) */
    double final_test_bits_per_byte_compressed; /* the same through compressed boundaries (-1: not run) */
    double train_samples_per_second;       /* training samples over the time spent training (evaluation and
                                              checkpoints excluded); samples_per_second is over the whole run */
    int64_t steps_done;                    /* optimizer steps, a resumed run's earlier ones included */
    int64_t resumed_from_step;             /* the checkpoint's step when resuming (0: fresh) */
    int64_t activation_bytes[16];          /* per local stage: the activation memory its schedule holds */
    int micro_batches;                     /* micro-batches per step (--micro-batches auto: the count chosen) */
    double auto_step_seconds[2];           /* auto: the dry step at the count chosen and at 1 (the first step's) */
} pz_run_result;

typedef struct {
    int epoch, epochs;          /* 1-based epoch */
    int64_t step, steps_per_epoch, global_step, total_steps;
    double loss, accuracy;      /* running means over the epoch so far */
    double lr, samples_per_second, elapsed, eta;
    int end_of_epoch;           /* 1: test metrics below are set */
    double test_loss, test_accuracy, epoch_seconds;
    double test_accuracy_compressed; /* -1 when not evaluated */
    double emulated_seconds;    /* pipeline: training time on the (emulated) links so far; -1 without */
    int evaluation;             /* 1: an --eval-every evaluation within the epoch: test_loss, test_accuracy,
                                   test_accuracy_compressed and the two below are set */
    double test_loss_compressed;           /* -1 when not evaluated */
    double test_bits_per_byte;             /* a language model's test_loss in bits per byte (-1: not one) */
    int evaluating;             /* 1: the test set is being evaluated (epoch's end or --eval-every): eval_done of
                                   eval_total examples so far, over every pass (plain and compressed); no metrics yet */
    int64_t eval_done, eval_total;
    double train_samples_per_second; /* training samples over the time spent training (evaluation, checkpoints
                                        excluded); samples_per_second is over the whole run so far */
    int micro_batches_chosen;   /* --micro-batches auto: the count chosen after this step (0: none chosen here) */
    double auto_step_seconds[2];/* ... its dry step, and the first step's count's (1) */
} pz_progress;

/* Called after every step and at the end of every epoch; returning nonzero
 * stops the run after that step (result->stopped is set, the run directory
 * gets a summary with status "stopped", and pz_run_train returns PZ_OK). */
typedef int (*pz_progress_fn)(const pz_progress *p, void *user);

/* Train as planned; the settings that span several (a tokenizer for text,
 * the data a model takes, flags that need a boundary) are checked first.
 * on_progress (may be NULL) is called after every step. */
PZ_API pz_status pz_run_train(const pz_run_plan *plan, pz_run_result *result, pz_progress_fn on_progress, void *user);
/* Boundary b (0-based: the first cut) of a finished run's result: this
 * run's traffic there (a resumed run: since the resume); NULL past its
 * n_stages - 1 boundaries. */
PZ_API const pz_run_boundary *pz_run_result_boundary(const pz_run_result *result, int b);

/* ---- the settings' grammar, for every front end ---------------------------
 * What pipezip train reads, exported so other front ends (the Python
 * package) read a setting's text the same way: one grammar, not copies. */
/* A link rate: "100mbit", "1gbit", "10Mbit/s", "12.5MB/s", "0" (unlimited), into bits/s. */
PZ_API pz_status pz_parse_bandwidth(const char *text, double *bits_per_second);
/* A time: "50ms", "250us", "1s", "0", into seconds. */
PZ_API pz_status pz_parse_duration(const char *text, double *seconds);
/* The pipeline schedules' names, in --pipe-schedule's order ("gpipe",
 * "1f1b"): the i-th, NULL past the last. */
PZ_API const char *pz_pipe_schedule_name(int i);
/* Stage `stage` (0-based) of `stages`'s order of work in a step of
 * micro_batches micro-batches under the schedule named: ops[k] = m for
 * micro-batch m's forward, -1 - m for its backward. Returns how many
 * (2 x micro_batches), or -1 (pz_last_error says why: an unknown schedule,
 * a stage out of range, cap too small). */
PZ_API int pz_pipe_schedule_order(const char *schedule, int stages, int stage, int micro_batches, int *ops, int cap);
/* The link emulator's arrival rule (--link-model): a message of `bytes`
 * sent at `sent` seconds over a wire whose state is *wire (0 before the
 * first message; duplex: the sender's direction, shared: the receiver's one
 * inbound wire), bandwidth in bits/s (0: unlimited), latency in seconds.
 * Writes the arrival time and moves *wire. */
PZ_API pz_status pz_link_arrival(const char *model, double *wire, double sent, uint64_t bytes, double bandwidth, double latency,
                                 double *arrival);

#ifdef __cplusplus
}
#endif
#endif
