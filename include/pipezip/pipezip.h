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

/* Threads for every kernel (OpenMP and BLAS); n <= 0 means all cores. Call
 * before creating networks. */
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

/* ---- a training run (what `pipezip train` does) ------------------------------ */
typedef struct {
    const char *model;        /* preset name; default "resnet8" */
    const char *data;         /* "fashion-mnist", "mnist", "cifar10", "synthetic" */
    const char *data_dir;     /* NULL: the dataset's default location */
    int64_t limit_train;      /* use only the first N training examples; <= 0 = all */
    int64_t limit_test;
    int epochs;
    int batch;
    const char *optimizer;    /* "sgd" or "adamw" */
    float lr, momentum, weight_decay;
    int nesterov;
    const char *schedule;     /* "constant", "cosine", "step:E,G", "onecycle[:PCT]" */
    float warmup_epochs;
    int augment_pad;          /* random-crop padding, 0 = off, -1 = the dataset's default */
    int augment_flip;         /* 0/1, -1 = the dataset's default */
    uint64_t seed;
    int threads;              /* <= 0: all cores */
    const char *out_dir;      /* run directory; NULL: no files written */
    const char *metrics_format; /* "jsonl" or "csv" */
    int log_every;            /* write a step record every N steps */
    /* pipeline: more than one stage when stages > 1 or cuts is set, or by default for resnets */
    int stages;               /* stages balanced by compute (1: no pipeline; 0 = auto: resnets cut after each
                                 residual group, as Paper A, other models one stage) */
    const char *cuts;         /* cut after these top-level layers: "3,4,5" or "layer1,layer2,layer3" */
    const char *fwd, *bwd;    /* codec specs for activations / gradients: "q4" (every boundary), "q8,1=q2" (boundary 1
                                 differs); default q4 / q8 */
    const char *eval_compress;/* "both" (default), "on" or "off": test through compressed boundaries */
    int micro_batches;        /* GPipe micro-batches per step (1: none) */
    int aqsgd_warmup;         /* epochs that aqsgd(...) codecs send uncompressed, filling their buffers */
    const char *link;         /* "inproc" (default), "mpi" (mpirun -np S), "zmq" (client of pipezip serve) */
    const char *connect;      /* zmq: the server's endpoint, "tcp://HOST:PORT" */
    const char *client_key, *server_key; /* zmq CURVE: this client's secret key file, the server's public key file */
    const char *link_bandwidth, *link_latency; /* emulated link: "100mbit", "10ms" (NULL: not emulated) */
    int link_realtime;        /* really hold frames back instead of only keeping the virtual clock */
    double timeout;           /* seconds a silent stage or peer is given before the run stops (default 60) */
    const char *resume;       /* a run directory to continue from its last checkpoint (written every epoch) */
    int shard_index, shard_count; /* train on the shard_index-th of shard_count slices (split-learning clients); 0/0 = all */
    const char *turn;         /* zmq client: when to give the next client its turn: "run" (default, NULL too: after the
                                 whole run), "epoch" (after every epoch), or a number of steps */
    float clip_norm;          /* > 0: clip the gradients' global norm (over every stage) to this; 0 = off */
    const char *tokenizer;    /* text: "bytes" (default, NULL too) or "bpe:N", byte-level BPE of N tokens learned from the
                                 training split and kept in the run directory (tokenizer.txt) */
    int eval_every;           /* > 0: also evaluate every N steps, into evals.jsonl (with each epoch's end) */
    const char *grad_mask;    /* "none" (default, NULL too) or "fwd": each boundary's gradient is zeroed where the
                                 activation it follows arrived as 0, before the backward codec (the derivative of a
                                 forward TopK, as Paper A's GPT-2 runs reuse the forward mask) */
    const char *command_line; /* how the run was started, recorded in config.json (NULL: not known) */
} pz_run_config;

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
    struct {                               /* per boundary (n_stages - 1 of them), this run's training traffic */
        char after[48];                    /* the layer it follows */
        char fwd[64], bwd[64];             /* codec specs (truncated) */
        uint64_t fwd_bytes, bwd_bytes, fp32_fwd_bytes, fp32_bwd_bytes;
        double fwd_error, bwd_error;       /* mean relative compression error */
    } boundaries[15];
    double final_test_loss_compressed;     /* pipeline, eval through compressed boundaries (-1: not run) */
    int tokens;                            /* a language model: tokens per sample (0: an image model) */
    double final_test_bits_per_byte;       /* a language model: held-out bits per byte (-1: not one) */
    double final_test_bits_per_byte_compressed; /* the same through compressed boundaries (-1: not run) */
    double train_samples_per_second;       /* training samples over the time spent training (evaluation and
                                              checkpoints excluded); samples_per_second is over the whole run */
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
} pz_progress;

/* Called after every step and at the end of every epoch; returning nonzero
 * stops the run after that step (result->stopped is set, the run directory
 * gets a summary with status "stopped", and pz_run_train returns PZ_OK). */
typedef int (*pz_progress_fn)(const pz_progress *p, void *user);

/* Fill cfg with the defaults `pipezip train` uses. */
PZ_API void pz_run_config_default(pz_run_config *cfg);
/* Train as configured; on_progress (may be NULL) is called after every step. */
PZ_API pz_status pz_run_train(const pz_run_config *cfg, pz_run_result *result, pz_progress_fn on_progress, void *user);

#ifdef __cplusplus
}
#endif
#endif
