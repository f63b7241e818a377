/* SPDX-License-Identifier: MIT */
/* data.h — datasets (MNIST / Fashion-MNIST idx, CIFAR-10 binary, synthetic),
 * normalisation, augmentation (random crop with padding, horizontal flip)
 * and batching with a stable sample id per example: the id is the example's
 * index in its split, the key AQ-SGD's per-sample buffers use.
 * Knows nothing of codecs or links. */
#ifndef PZ_DATA_H
#define PZ_DATA_H

#include "base/base.h"

struct pz_tokenizer;
typedef struct pz_tokenizer pz_tokenizer;

typedef struct {
    char name[64];  /* e.g. "fashion-mnist:train" */
    int64_t n;
    int c, h, w, n_classes;
    float *x;       /* (n, c, h, w), normalised after pz_dataset_normalize; text: (n, tokens) ids */
    int32_t *y;     /* (n) classes; text: (n, tokens) next tokens */
    float mean[4], std[4]; /* per channel, of the raw [0,1] pixels of the train split */
    int64_t id_base;       /* sample ids are id_base + index (a shard keeps its ids from the whole set) */
    int tokens;            /* text: each sample is this many token ids (c = h = 1, w = tokens), each with the
                              next token as its target; 0 for images (one class per sample) */
    double bytes_per_token;/* text: bytes of the corpus per token (bits per byte = loss / ln 2 / this) */
} pz_dataset;

/* ---- tokenizers ------------------------------------------------------------
 * bytes (vocabulary 256) or byte-level BPE learned from a training split
 * (bpe.c says how). Token 256 + m is the m-th merge of two earlier tokens. */

/* What one sample is (an image C x H x W, or T token ids) and how many
 * targets it has (1 class, or T next tokens). */
static inline pz_shape pz_dataset_shape(const pz_dataset *d) {
    return d->tokens ? pz_shape_tokens(d->tokens) : pz_shape_image(d->c, d->h, d->w);
}
static inline int pz_dataset_targets(const pz_dataset *d) { return d->tokens ? d->tokens : 1; }

/* Keep the k-th of n contiguous slices (0 <= k < n); ids stay those of the whole set. */
pz_status pz_dataset_shard(pz_dataset *d, int k, int n);

/* idx files (gzipped or not): images (magic 0x00000803) and labels (0x00000801). */
pz_status pz_load_idx(pz_dataset *d, const char *images_path, const char *labels_path, const char *name);
/* A directory with train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz],
 * t10k-images-idx3-ubyte[.gz], t10k-labels-idx1-ubyte[.gz]. */
pz_status pz_load_idx_dir(pz_dataset *train, pz_dataset *test, const char *dir, const char *name);
/* A directory with CIFAR-10's data_batch_1..5.bin and test_batch.bin. */
pz_status pz_load_cifar10_dir(pz_dataset *train, pz_dataset *test, const char *dir);
/* Class prototypes plus noise: learnable, needs no files. */
pz_status pz_make_synthetic(pz_dataset *train, pz_dataset *test, int64_t n_train, int64_t n_test,
                            int c, int h, int w, int n_classes, uint64_t seed);

/* ---- which dataset: one table of every dataset's facts ----------------------
 * A dataset as a value, parsed once from its name where it enters ("mnist",
 * "kjv", "text:FILE"): its kind, sample shape, classes, training-set size,
 * default augmentation and location, all from one table (datasets.c). */
typedef enum { PZ_DATA_FASHION_MNIST = 1, PZ_DATA_MNIST, PZ_DATA_CIFAR10, PZ_DATA_SYNTHETIC, PZ_DATA_KJV, PZ_DATA_TEXT } pz_data_kind;
typedef struct {
    pz_data_kind kind;
    const char *name;        /* the table's name: "fashion-mnist", ..., "text" */
    const char *file;        /* text:FILE's file (points into the parsed text, which must outlive the spec) */
    int text;                /* a corpus of tokens (kjv, text:FILE) */
    int c, h, w, classes;    /* an image dataset's sample and classes (0 for text) */
    int64_t train_size;      /* training examples (text: at most 2^16 windows) */
    int pad, flip;           /* default augmentation: crop padding, horizontal flips */
    const char *default_dir; /* NULL: needs none */
} pz_data_spec;
/* "fashion-mnist", "mnist", "cifar10", "synthetic", "kjv" or "text:FILE";
 * the error names the name and lists the table's. */
pz_status pz_data_spec_parse(pz_data_spec *d, const char *name);
/* "fashion-mnist|mnist|cifar10|synthetic|kjv|text:FILE" (sep between them) */
const char *pz_data_names(const char *sep, const char *last, char *buf, size_t cap);
/* An image dataset's two splits (dir NULL: its default location),
 * normalised with the train split's per-channel mean and std. */
pz_status pz_data_load(pz_dataset *train, pz_dataset *test, const pz_data_spec *d, const char *dir, uint64_t seed);
/* A corpus' two splits in windows of T tokens (see pz_load_corpus). */
pz_status pz_data_load_corpus(pz_dataset *train, pz_dataset *test, const pz_data_spec *d, const char *dir, int T, pz_tokenizer *tok);

/* The name-taking forms (a program's edge: tests, tools): parse, then load.
 * Load by name: "fashion-mnist", "mnist", "cifar10" (dir may be NULL for the
 * default location) or "synthetic". Normalises both splits with the train
 * split's per-channel mean and std. Text ("kjv", "text:FILE") needs the
 * sequence length: pz_load_corpus. */
pz_status pz_load_dataset(pz_dataset *train, pz_dataset *test, const char *name, const char *dir, uint64_t seed);
int pz_dataset_is_text(const char *name);

struct pz_tokenizer {
    int vocab;         /* the model's vocabulary: 256, or N of bpe:N (a short text may learn fewer merges) */
    int n_merges;
    int32_t *merges;   /* (n_merges, 2) */
    uint8_t *bytes;    /* token t's bytes: bytes[off[t] .. off[t + 1]) */
    int64_t *off;
    void *rank;        /* merge ranks by pair */
    int ready;         /* learned or loaded */
};

/* "bytes" (or NULL) -> 256; "bpe:N" -> N (257..65536) */
pz_status pz_tokenizer_spec(const char *spec, int *vocab);
pz_status pz_tokenizer_bytes(pz_tokenizer *t);
/* learn up to vocab - 256 merges from text */
pz_status pz_bpe_learn(pz_tokenizer *t, const uint8_t *text, size_t n, int vocab);
/* text's tokens into out (room for n: never more tokens than bytes); returns how many */
size_t pz_tokenizer_encode(const pz_tokenizer *t, const uint8_t *text, size_t n, int32_t *out);
/* token id's bytes (NULL, *len 0 for an id it does not have) */
const uint8_t *pz_tokenizer_token(const pz_tokenizer *t, int32_t id, size_t *len);
/* tokenizer.txt in a run directory: a header, the vocabulary, the merges */
pz_status pz_tokenizer_save(const pz_tokenizer *t, const char *path);
pz_status pz_tokenizer_load(pz_tokenizer *t, const char *path);
/* the tokenizer a run with a vocabulary of `vocab` used (pz_tokenizer_spec):
 * bytes, or dir/tokenizer.txt (refused when its vocabulary is another) */
pz_status pz_tokenizer_open(pz_tokenizer *t, int vocab, const char *dir);
void pz_tokenizer_free(pz_tokenizer *t);

/* ---- text ------------------------------------------------------------------
 * A file's tokens: the first 90% of its bytes train, the last 10% held out,
 * each split tokenized on its own and cut into samples of T tokens at stride
 * T with the next T as targets. tok: NULL for bytes; a tokenizer with vocab
 * > 256 that is not ready is learned from the training split first. */
pz_status pz_load_text(pz_dataset *train, pz_dataset *test, const char *path, const char *name, int T, pz_tokenizer *tok);
/* The King James Bible's path in dir (NULL: data/), extracting it once from
 * Debian's bible-kjv when it is not there yet. */
pz_status pz_kjv_path(char *path, size_t cap, const char *dir);
/* "kjv" (dir: where its cache lives) or "text:FILE" */
pz_status pz_load_corpus(pz_dataset *train, pz_dataset *test, const char *name, const char *dir, int T, pz_tokenizer *tok);
const char *pz_default_data_dir(const char *name);

/* Keep only the first n examples (n <= d->n). */
void pz_dataset_truncate(pz_dataset *d, int64_t n);
void pz_dataset_free(pz_dataset *d);
/* Compute mean/std per channel on train, apply to train and test. */
void pz_dataset_normalize(pz_dataset *train, pz_dataset *test);

/* ---- batching --------------------------------------------------------------
 * Each epoch's order is a permutation drawn from (seed, epoch); each sample's
 * crop and flip from (seed, epoch, id): the same seed gives the same batches
 * whatever the thread count. */
typedef struct {
    int pad;   /* random crop: pad by this much, crop back to h x w; 0 = off */
    int flip;  /* random horizontal flip */
} pz_augment;

typedef struct {
    const pz_dataset *d;
    int batch;
    int shuffle;
    pz_augment aug;
    pz_rng rng;
    int epoch;
    int64_t pos;
    uint32_t *order; /* (n) */
    float *x;        /* (batch, c, h, w) */
    int32_t *y;      /* (batch, targets per sample) */
    uint32_t *ids;   /* (batch) */
} pz_loader;

/* The augmentation for a dataset: pad/flip < 0 mean "the dataset's
 * default": crop padding 4 and flips for cifar10 (the usual CIFAR recipe),
 * flips only for fashion-mnist (10-epoch runs measured better without crops:
 * docs/GUIDE.md), nothing for mnist (digits are not mirror-symmetric) and synthetic. */
pz_augment pz_data_augment(const pz_data_spec *d, int pad, int flip);

pz_status pz_loader_init(pz_loader *l, const pz_dataset *d, int batch, int shuffle, pz_augment aug, uint64_t seed);
void pz_loader_start_epoch(pz_loader *l, int epoch);
/* Fill the next batch; returns its size, 0 at the end of the epoch. */
int pz_loader_next(pz_loader *l);
/* Pass over the epoch's next n batches without filling them (a run resumed
 * mid-epoch: the batches after them are the ones it would have had). */
void pz_loader_skip(pz_loader *l, int64_t n);
int64_t pz_loader_batches(const pz_loader *l);
void pz_loader_free(pz_loader *l);

#endif
