/* SPDX-License-Identifier: MIT */
/* desc.h — a codec spec as a value: what the grammar (spec.c) makes of a
 * string, once. The pipeline carries these per boundary and creates its
 * codecs (and the stateless ones evaluation uses) from them without
 * parsing a string again; `text` keeps the spec as it was written, for the
 * records. */
#ifndef PZ_CODEC_DESC_H
#define PZ_CODEC_DESC_H

#include "family.h"

struct wrapper_kind;

typedef struct pz_codec_desc {
    codec_params p;                  /* the base family and its parameters */
    const struct wrapper_kind *wrap; /* NULL: the base codec alone */
    int per_sample;                  /* ef: one buffer per sample */
    int store_fp16;                  /* aqsgd: rows as binary16 */
    char mmap_path[512];             /* aqsgd: rows in a file in this directory */
    int zstd_level;                  /* the entropy stage ("+zstd:L"); 0: none */
    int huf;                         /* the entropy stage in its Huffman form ("+huf") */
    char text[PZ_CODEC_SPEC_MAX];    /* the spec as written ("q4") */
} pz_codec_desc;

/* The grammar: a spec into *d (PZ_ERR_ARG naming the spec and what is
 * accepted). */
pz_status pz_codec_desc_parse(pz_codec_desc *d, const char *spec);
/* d, or "none" (what an unnamed boundary carries) for NULL or a zeroed
 * description (a pipeline configuration that names no codec for a boundary) */
const pz_codec_desc *pz_codec_desc_or_none(const pz_codec_desc *d);
/* The canonical spec (every option spelled out). */
void pz_codec_desc_canonical(const pz_codec_desc *d, char *buf, size_t cap);
/* The stateless base under a wrapper: what evaluation uses (test samples
 * have no per-sample state and must not move the training state). */
pz_codec_desc pz_codec_desc_base(const pz_codec_desc *d);
int pz_codec_desc_is_lossless(const pz_codec_desc *d);
/* A codec of this description (as pz_codec_create from its spec). */
pz_status pz_codec_create_desc(pz_codec **codec, const pz_codec_desc *d);

/* A per-boundary list ("q8,2=ms:0.01,bits=2") as values: the first item
 * for every boundary, then N=SPEC items in order (the last for a boundary
 * wins). Boundaries are checked against a pipeline once its size is known
 * (pz_codec_list_resolve). */
#define PZ_CODEC_LIST_ITEMS 32
typedef struct {
    int n;
    int boundary[PZ_CODEC_LIST_ITEMS]; /* 1-based; 0: every boundary */
    pz_codec_desc item[PZ_CODEC_LIST_ITEMS];
} pz_codec_list;

/* Parses arg (NULL or "": every boundary "none"); boundaries beyond
 * max_boundaries are errors already; `what` names the argument ("--fwd"). */
pz_status pz_codec_list_parse(pz_codec_list *l, const char *arg, int max_boundaries, const char *what);
/* The description of each of `boundaries` boundaries, into out[0..boundaries). */
pz_status pz_codec_list_resolve(const pz_codec_list *l, int boundaries, pz_codec_desc *out, const char *what);

#endif
