/* SPDX-License-Identifier: MIT */
/* object.h — the pz_codec object: a base family's parameters, an optional
 * stateful wrapper (wrappers.c: error feedback, EF21, AQ-SGD) with its
 * state, and the buffers it reuses. */
#ifndef PZ_CODEC_OBJECT_H
#define PZ_CODEC_OBJECT_H

#include "family.h"
#include "store.h"
#include "desc.h"

struct wrapper_kind;

struct pz_codec {
    char spec[256];                  /* canonical */
    pz_codec_desc d;                 /* what the spec says: base family, parameters, wrapper and its options */
    uint64_t seed, counter;
    int warmup;
    int strict;                      /* decode only this spec's frames (pz_codec_set_strict) */
    uint32_t max_samples;
    const pz_codec_kernels *k;
    /* state */
    float *state;                    /* ef/ef21 per boundary: (state_n) */
    int64_t state_n;
    sample_store store;              /* per-sample ef, aqsgd */
    int store_ready;
    /* scratch */
    float *tmp;                      /* (2 * tmp_n + 2) */
    int64_t tmp_n;
    codec_scratch sc;
    void *zcctx;                     /* the entropy stage's zstd context (entropy.c), made at first use */
    codec_state fstate;              /* the family's own sender state (keeps_state: lowrank's start) */
};

/* A stateful wrapper around a base codec. The sender encodes what
 * `prepare` makes of x, then `update` moves its state with what the
 * receiver will decode; the receiver runs `receive` on the decoded payload
 * (NULL: the payload is what it uses). */
typedef struct wrapper_kind {
    const char *name;       /* ef, ef21, aqsgd */
    uint8_t wire_id;        /* FORMAT.md's wrapper byte */
    const char *usage, *help;
    int receiver_state;     /* the receiver keeps state: frames of another wrapper cannot reach it */
    pz_status (*option)(pz_codec_desc *d, const char *key, const char *val, const char *spec);
    void (*canonical)(const pz_codec_desc *d, const char *base, char *buf, size_t cap);
    int (*needs_ids)(const pz_codec_desc *d);
    /* t: 2n floats of scratch. Sets *src (what the base encodes), may switch
     * *p and *wire (AQ-SGD's warm-up sends fp32 as wrapper 4) */
    pz_status (*prepare)(pz_codec *c, const float *x, const int64_t *shape, int64_t n, const uint32_t *ids, float *t,
                         const float **src, codec_params *p, int *wire);
    /* hat: what the base frame decodes to; *received: what the receiver uses */
    pz_status (*update)(pz_codec *c, const float *x, const int64_t *shape, int64_t n, const uint32_t *ids, float *t,
                        const float *hat, const float **received);
    pz_status (*receive)(pz_codec *c, const frame_header *h, const float *d, float *x);
} wrapper_kind;

extern const wrapper_kind *const codec_wrappers[];
extern const int codec_wrapper_count;
/* the wrapper of a frame's wrapper byte (4, AQ-SGD's warm-up, is aqsgd) */
const wrapper_kind *wrapper_by_wire(int wire);


/* codec.c: buffers the wrappers share */
float *codec_tmp(pz_codec *c, int64_t n);                 /* 2n + 2 floats, NULL when out of memory */
float *codec_boundary_state(pz_codec *c, int64_t n);      /* grown to n, kept; NULL when out of memory */
pz_status codec_ensure_store(pz_codec *c, int64_t row);

/* entropy.c: the entropy stage (FORMAT.md). pack: the finished frame's
 * codec sections as one zstd frame when smaller (frame and *len rewritten
 * in place); unpack: a parsed frame's sections back, into scratch (no-op
 * without FLAG_ZSTD). */
#define ENTROPY_LEVEL_DEFAULT 3
extern const char *entropy_spec_name;
pz_status entropy_parse(pz_codec_desc *d, const char *spec, const char *stage);
void entropy_canonical(const pz_codec_desc *d, char *buf, size_t cap);
pz_status entropy_pack(pz_codec *c, uint8_t *frame, size_t *len);
pz_status entropy_unpack(frame_header *h, codec_scratch *sc);
void entropy_free(pz_codec *c);

#endif
