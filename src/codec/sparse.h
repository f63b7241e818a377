/* SPDX-License-Identifier: MIT */
/* sparse.h — what the families that keep k elements per unit share (topk.c:
 * TopK, Rand-K, randomized TopK; ms.c: MS): k from the kept fraction, the
 * top-k selection (select.c), uniform random positions, and the values
 * section (values.c). */
#ifndef PZ_CODEC_SPARSE_H
#define PZ_CODEC_SPARSE_H

#include "family.h"
#include "bits.h"

/* k = floor(F * m), at least 1 and at most m (PAPERS.md: k = floor((1 - r) d)) */
int64_t kept_per_unit(double fraction, int64_t m);

/* ---- selection (select.c) ------------------------------------------------ */

/* Top-k positions of x[0..m) (|x|, or x when by_value), ascending, ties to
 * the lower index, into idx[0..kk) with their values in vals[0..kk). idx,
 * vals, keys and tmp are scratch of m entries. NaN is never kept. */
pz_status topk_positions(const pz_codec_kernels *k, const float *x, int64_t m, int64_t kk, int by_value,
                         uint32_t *idx, float *vals, float *keys, float *tmp);
/* The same, but where it can (dense units) it may stop at the threshold:
 * th->only = 1, keep every key > T and the first th->ties keys == T. */
typedef struct {
    int only;
    float T;
    int64_t ties;
    int64_t extra; /* keys == T that are NOT kept (0: every key >= T is kept) */
} topk_threshold;
pz_status topk_select(const pz_codec_kernels *k, const float *x, int64_t m, int64_t kk, int by_value,
                      uint32_t *idx, float *vals, float *keys, float *tmp, topk_threshold *th);

/* The top kk of every unit of x. Each unit gets a list — positions (unit-
 * relative, ascending) in pos[un*kk ..] and their values in vals[un*kk ..],
 * the selection's own list also left in idx[un*m ..] (values in
 * cvals[un*m ..]) — or, with SEL_THRESHOLDS and a dense unit, only a
 * threshold: ths[un].only. With SEL_IN_PLACE the lists stay in idx and
 * cvals only (not copied to pos and vals). pos, vals, idx and cvals come
 * from the scratch; ths is allocated (U entries) with SEL_THRESHOLDS, else
 * NULL: release it with free(). */
enum { SEL_THRESHOLDS = 1, SEL_IN_PLACE = 2 };
typedef struct {
    uint32_t *pos, *idx;
    float *vals;
    float *keys, *tmp, *cvals; /* the selection's scratch (n each) */
    topk_threshold *ths;
    int in_place;
} unit_tops;
pz_status select_units(const codec_io *io, const float *x, const units *u, int64_t kk, int by_value, int flags, unit_tops *t);
/* select_units in parts: the scratch (flags as select_units'), then unit
 * un's selection (one unit per call, any order, any thread) */
pz_status unit_tops_get(const codec_io *io, const units *u, int64_t kk, int flags, unit_tops *t);
pz_status select_unit(const codec_io *io, const float *x, const units *u, int64_t kk, int by_value, unit_tops *t, int64_t un);
/* a unit that came back with a threshold gets its list (pos, vals) */
pz_status unit_list_from_threshold(const codec_io *io, const float *x, const units *u, int64_t kk, int by_value, unit_tops *t,
                                   int64_t un);

/* k of m positions, a uniformly random k-subset, ascending (FORMAT.md's
 * randk draw: Floyd's algorithm over Lemire's bounded draws) */
pz_status sample_positions(pz_rng *r, int64_t m, int64_t k, uint32_t *out);
/* the same draw as a bitmap: bits ((m + 63) / 64 zeroed words) gets the
 * subset's bits */
void sample_bits(pz_rng *r, int64_t m, int64_t k, uint64_t *bits);
/* the set bits of bits[0..words) in order, as positions; returns the count */
int64_t bits_positions(const uint64_t *bits, int64_t words, uint32_t *out);

/* ---- the values section (values.c) --------------------------------------- */

/* bytes of U*count values of type vt (value bits vbits) */
size_t value_bytes(int vt, int vbits, int64_t U, int64_t count);
/* values v[0..U*kk) (unit-major) into the values section */
pz_status write_values(const pz_codec_kernels *k, int vt, int vbits, const float *v, int64_t U, int64_t kk, uint8_t *out,
                       codec_scratch *sc);
pz_status read_values(const pz_codec_kernels *k, int vt, int vbits, const uint8_t *in, int64_t U, int64_t kk, float *v,
                      codec_scratch *sc);

/* header checks shared by the sparse families: granularity tensor or sample,
 * the option bits `allowed`, no code width unless `bits_ok`, and an index
 * coding only where `index_ok` */
pz_status sparse_check(const frame_header *h, int bits_ok, int index_ok, const char *no_index_why);
/* a frame's k against its units: PZ_FRAME_PARAM when k exceeds a unit */
pz_status sparse_check_k(const frame_header *h, const units *u);

#endif
