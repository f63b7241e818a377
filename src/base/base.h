/* SPDX-License-Identifier: MIT */
/* base.h — the floor of pipezip: status codes and error messages, checked
 * allocation and I/O, tensors, the seedable/splittable RNG and timing.
 * Knows nothing of the parts above it (see ARCHITECTURE.md). */
#ifndef PZ_BASE_H
#define PZ_BASE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdbool.h>

#include "pipezip/status.h"

/* ---------------------------------------------------------------------------
 * Errors. Every function that can fail returns a pz_status; the message that
 * says what went wrong (file, flag, value) is kept per thread and read with
 * pz_last_error(). */
pz_status pz_fail(pz_status code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
#define PZ_TRY(expr) do { pz_status s_ = (expr); if (s_ != PZ_OK) return s_; } while (0)

/* Allocation: 64-byte aligned, zeroed float buffer (SIMD-friendly), NULL
 * when out of memory; free with free(). The library never exits: callers
 * return PZ_ERR_NOMEM. */
float *pz_floats_try(size_t n);

/* ---------------------------------------------------------------------------
 * Checked I/O: whole-file read (plain or gzip, decided by content) and an
 * atomic write (temp file, fsync, rename) so a crash never leaves a torn file. */
pz_status pz_read_file(const char *path, uint8_t **data, size_t *len);
/* The same, failing (PZ_ERR_FORMAT) once the file holds more than max bytes,
 * without decompressing more than max + 1; path "-" reads standard input. */
pz_status pz_read_file_max(const char *path, size_t max, uint8_t **data, size_t *len);
/* Up to n first bytes (a header to check before the bulk). */
pz_status pz_read_head(const char *path, uint8_t *out, size_t n, size_t *got);
/* The same as a NUL-terminated string (len may be NULL). */
pz_status pz_read_text(const char *path, char **text, size_t *len);
pz_status pz_write_file_atomic(const char *path, const void *data, size_t len);
/* A file the user named: "-" is standard output; a FIFO, a device or a
 * socket is written through (never replaced); a symbolic link writes its
 * target; a regular file (or a new one) is written atomically. */
pz_status pz_write_output(const char *path, const void *data, size_t len);
/* Text another party chose (a peer's address, an error it sent), made one
 * printable log line: bytes outside printable ASCII and backslashes as \xNN. */
void pz_escape_text(char *out, size_t cap, const char *in);
/* The same for a secret: created mode 0600 before its first byte is
 * written; an existing path (a file, a link, anything) is an error unless
 * replace. */
pz_status pz_write_file_private(const char *path, const void *data, size_t len, int replace);
pz_status pz_mkdir_p(const char *path);

/* ---------------------------------------------------------------------------
 * Tensors: a shape and a float buffer, NCHW for images. */
#define PZ_MAX_DIMS 4
typedef struct {
    int ndim;
    int64_t shape[PZ_MAX_DIMS];
    float *data;
} pz_tensor;

int64_t pz_tensor_numel(const pz_tensor *t);

/* ---------------------------------------------------------------------------
 * What one sample is at a point of a model or in a dataset, where it flows between layers
 * and where it crosses a stage boundary (the codecs see (B, d[0], ...)):
 * an image (C, H, W) is rank 3, and image models keep vectors as (n, 1, 1);
 * a sequence (T, C) is rank 2; a language model's input, T token ids, is
 * rank 1. */
#define PZ_SHAPE_MAX 3
typedef struct {
    int rank;
    int d[PZ_SHAPE_MAX];
} pz_shape;

static inline pz_shape pz_shape_image(int c, int h, int w) { return (pz_shape){3, {c, h, w}}; }
static inline pz_shape pz_shape_seq(int t, int c) { return (pz_shape){2, {t, c, 0}}; }
static inline pz_shape pz_shape_tokens(int t) { return (pz_shape){1, {t, 0, 0}}; }
static inline int64_t pz_shape_numel(pz_shape s) {
    int64_t n = 1;
    for (int i = 0; i < s.rank; i++) n *= s.d[i];
    return n;
}
static inline int pz_shape_equal(pz_shape a, pz_shape b) {
    if (a.rank != b.rank) return 0;
    for (int i = 0; i < a.rank; i++)
        if (a.d[i] != b.d[i]) return 0;
    return 1;
}
/* "3x32x32", "128x256": the dimensions joined by 'x' */
const char *pz_shape_str(pz_shape s, char *buf, size_t cap);
/* A batch of B samples of shape s as a tensor's dimensions (what a codec
 * and a frame take: B, then the sample's); returns how many (1 + rank). */
static inline int pz_shape_batch(pz_shape s, int64_t B, int64_t dims[1 + PZ_SHAPE_MAX]) {
    dims[0] = B;
    for (int i = 0; i < s.rank; i++) dims[1 + i] = s.d[i];
    return 1 + s.rank;
}

/* ---------------------------------------------------------------------------
 * RNG: xoshiro256** seeded through splitmix64. pz_rng_split derives an
 * independent stream from (seed, stream id) so each stage, worker or sample
 * gets its own reproducible sequence regardless of thread scheduling. */
typedef struct { uint64_t s[4]; } pz_rng;

void pz_rng_seed(pz_rng *r, uint64_t seed);
pz_rng pz_rng_split(const pz_rng *parent, uint64_t stream);
/* the next 64 bits (inline: the codecs draw millions of positions) */
static inline uint64_t pz_rng_u64(pz_rng *r) {
    uint64_t *s = r->s;
    const uint64_t x = s[1] * 5, result = ((x << 7) | (x >> 57)) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = (s[3] << 45) | (s[3] >> 19);
    return result;
}
/* uniform in [0, n): Lemire's multiply-shift with rejection, exactly uniform */
static inline uint32_t pz_rng_below(pz_rng *r, uint32_t n) {
    uint64_t m = (uint64_t)(uint32_t)(pz_rng_u64(r) >> 32) * n;
    uint32_t l = (uint32_t)m;
    if (l < n) {
        const uint32_t t = (uint32_t)(-n) % n;
        while (l < t) {
            m = (uint64_t)(uint32_t)(pz_rng_u64(r) >> 32) * n;
            l = (uint32_t)m;
        }
    }
    return (uint32_t)(m >> 32);
}
float pz_rng_uniform(pz_rng *r);                /* uniform in [0, 1) */
float pz_rng_normal(pz_rng *r);                 /* standard normal */

/* ---------------------------------------------------------------------------
 * Threads: how many the process computes with (OpenMP in the kernels and the
 * BLAS library's own pool; 0 = every core). BLAS is kept single-threaded
 * inside per-sample loops so the two never oversubscribe the cores. */
PZ_API void pz_set_threads(int n); /* public: pipezip.h */
int pz_get_threads(void);
/* Call first in any other thread that runs kernels (a pipeline stage),
 * with its n threads (a pipeline's stages share the process's threads:
 * each takes its part): the OpenMP thread count is per thread, and
 * OpenBLAS's OpenMP build sizes its GEMMs by it. */
void pz_thread_attach(int n);

/* ---------------------------------------------------------------------------
 * The BLAS kernels, chosen by the CPU's features (blas.c).
 * Every kernel that calls BLAS calls pz_blas_prepare() first; pz_set_threads
 * calls it too (once per
 * process: OpenBLAS's choice is compared with the CPU's features and
 * raised to what they allow, unless OPENBLAS_CORETYPE is set); a program
 * may call it early itself. */
enum { PZ_CPU_AVX2_FMA = 1, PZ_CPU_AVX512 = 2, PZ_CPU_AVX512_BF16 = 4, PZ_CPU_AMD = 8 };
unsigned pz_cpu_features(void);
/* "Intel(R) Xeon(R) Processor (family 6, model 207)" */
const char *pz_cpu_name(void);
/* A kernel family chosen by the CPU's features unless the variable `var`
 * names one (avx512, avx2 or `fallback`, e.g. "im2col", "blas"):
 * pz_kernels_wanted is the variable's value (NULL when unset or empty);
 * after choosing `got` for it (its name; NULL for the fallback),
 * pz_kernels_user_choice warns when `want` names none of them or the CPU
 * lacks it (the choice was then the CPU's) and returns 1 when the user's
 * choice stands. */
const char *pz_kernels_wanted(const char *var);
int pz_kernels_user_choice(const char *var, const char *fallback, const char *want, const char *got);
/* The OpenBLAS core to select on a CPU with `features` where OpenBLAS chose
 * `current`, or NULL when current already uses them (pure: no side effect). */
const char *pz_blas_core_for(const char *current, unsigned features);
void pz_blas_prepare(void);
typedef struct {
    char library[160];        /* "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64" */
    char core[64];            /* the kernels that run ("SkylakeX") */
    char source[16];          /* who chose them: "openblas", "pipezip" (from features), "user" (OPENBLAS_CORETYPE) */
    char openblas_choice[64]; /* what OpenBLAS chose by itself ("" when the user did) */
    int generic;              /* 1: the core does not use vector units the CPU has */
} pz_blas_info;
pz_blas_info pz_blas_get_info(void);
/* The convolution kernels that run (chosen in kernels/conv.c, reported
 * through nn's pz_nn_conv_info) */
typedef struct {
    const char *name;   /* "avx512", "avx2" (direct kernels), "im2col" (im2col + BLAS only) */
    const char *source; /* who chose them: "pipezip" (from the CPU's features), "user" (PZ_CONV_KERNELS) */
    int generic;        /* 1: the CPU has vector units these kernels do not use */
} pz_conv_info;
/* Tests: select a core as OPENBLAS_CORETYPE would (1 when it took), and
 * choose again from the features as at start. */
int pz_blas_force_core(const char *core);
void pz_blas_rechoose(void);

/* ---------------------------------------------------------------------------
 * Timing (monotonic clock, seconds). */
double pz_now(void);
double pz_median(double *v, int n); /* sorts v in place */

#endif
