/* codec_internal.h — what the codec files share: parsed parameters, the
 * frame header, units, the per-sample store, the codec object. */
#ifndef PZ_CODEC_INTERNAL_H
#define PZ_CODEC_INTERNAL_H

#include "pipezip/codec.h"
#include "base/base.h"
#include "kernels/codec_kernels.h"

enum { CODEC_NONE = 0, CODEC_FP16, CODEC_BF16, CODEC_QUANT, CODEC_TOPK, CODEC_RANDK, CODEC_RANDTOPK, CODEC_MS, CODEC_COUNT };
enum { GRAN_TENSOR = 0, GRAN_SAMPLE = 1, GRAN_CHANNEL = 2 };
enum { OPT_SYM = 1, OPT_STOCH = 2, OPT_SIGNED = 4, OPT_UNBIASED = 8, OPT_BYVALUE = 16, OPT_ALL = 31 };
enum { VAL_F32 = 0, VAL_F16 = 1, VAL_BF16 = 2, VAL_QUANT = 3 };
enum { IDX_NONE = 0, IDX_BITMAP = 1, IDX_DELTA = 2, IDX_AUTO = 3 };
enum { WRAP_NONE = 0, WRAP_EF = 1, WRAP_EF21 = 2, WRAP_AQSGD = 3, WRAP_AQSGD_WARMUP = 4 };
enum { MS_SIGN_AUTO = 0, MS_SIGN_SIGNED = 1, MS_SIGN_UNSIGNED = 2 };

/* A base (stateless) codec's parameters, as parsed from a spec. */
typedef struct {
    int id;
    int bits;         /* quant b, ms b */
    int gran;
    int options;      /* OPT_* requested (ms: signedness decided per tensor unless forced) */
    int value_type, value_bits;
    int index_coding; /* IDX_AUTO unless forced */
    double fraction;  /* kept fraction */
    double alpha;     /* randtopk */
    int ms_sign;
} codec_params;

/* A frame's header, parsed and validated. */
typedef struct {
    int codec, ndim, flags;
    int64_t dims[4];
    int64_t n;
    int bits, gran, options, value_type, index_coding, value_bits, wrapper;
    uint32_t k;
    uint64_t seed, payload_len;
    uint32_t crc;
    const uint32_t *ids;   /* into the frame when flags & 1 (may be unaligned: read with memcpy) */
    int crc_deferred;      /* none/fp16/bf16: the decoder checks the CRC chunk by chunk */
    uint32_t crc_pre;      /* then: the CRC-32C of header bytes 0..55 and the id section */
    const uint8_t *body;   /* the codec's sections */
    uint64_t body_len;
} frame_header;

/* How a tensor splits into units: `planes` contiguous runs of plane_len
 * elements, plane p belonging to unit unit_of(p). */
typedef struct {
    int64_t n, U, m;        /* elements, units, elements per unit */
    int64_t plane_len, planes;
    int64_t channels;       /* channel granularity: d[1] */
    int gran;
} units;

pz_status units_of(units *u, int gran, int ndim, const int64_t *dims);
static inline int64_t unit_of_plane(const units *u, int64_t p) {
    return u->gran == GRAN_CHANNEL ? p % u->channels : (u->gran == GRAN_SAMPLE ? p : 0);
}

/* Buffers reused across encodes and decodes: large per-call allocations
 * would be fresh mmap'd pages every time (page faults cost more than the
 * codec). Slots grow, never shrink. */
enum { SC_POS, SC_VALS, SC_IDX, SC_KEYS, SC_CODES, SC_NEG, SC_TMP, SC_HALF, SC_CVALS, SC_SLOTS };
typedef struct {
    void *p[SC_SLOTS];
    size_t cap[SC_SLOTS];
} codec_scratch;
void *scratch_get(codec_scratch *s, int slot, size_t bytes);
void scratch_release(codec_scratch *s);

/* frame.c */
pz_status frame_error(pz_frame_error e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void frame_write_header(uint8_t *f, const frame_header *h);
void frame_write_header_crc(uint8_t *f, const frame_header *h, uint32_t payload_crc, int have_payload_crc);
/* Validates header fields, length and checksum. For none/fp16/bf16 frames
 * (one pass of plain conversion, no indices in the payload) the payload's
 * checksum is left to the decoder, which verifies it chunk by chunk while
 * the bytes are in cache (h->crc_deferred); frame_verify_deferred() does it
 * in one pass for callers that do not decode. */
pz_status frame_parse(const uint8_t *f, size_t len, frame_header *h);
pz_status frame_verify_deferred(const frame_header *h);
pz_status frame_check_crc(const frame_header *h, uint32_t body_crc);
const char *codec_name(int id);

/* A bit writer/reader over a byte buffer. Writes go through pack() in
 * 8-element groups; the tail (n % 8) through a zero-padded group. */
void bits_write(const pz_codec_kernels *k, uint8_t *out, const uint8_t *codes, size_t n, int b);
void bits_read(const pz_codec_kernels *k, const uint8_t *in, size_t n, int b, uint8_t *codes);
static inline size_t bits_bytes(uint64_t n, int b) { return (size_t)((n * (uint64_t)b + 7) / 8); }

/* dense.c: none, fp16, bf16, quant */
size_t dense_body_bytes(const codec_params *p, const frame_header *h, const units *u);
/* *body_crc gets the CRC-32C of the body, computed chunk by chunk while hot */
pz_status dense_encode(const codec_params *p, const pz_codec_kernels *k, const float *x, const units *u,
                       uint64_t seed, uint8_t *body, frame_header *h, uint32_t *body_crc);
pz_status dense_decode(const frame_header *h, const pz_codec_kernels *k, const units *u, float *x);

/* sparse.c: topk, randk, randtopk, ms */
size_t sparse_max_body_bytes(const codec_params *p, const units *u, int64_t k);
int64_t sparse_k(const codec_params *p, int64_t m);
pz_status sparse_encode(const codec_params *p, const pz_codec_kernels *k, const float *x, const units *u,
                        uint64_t seed, uint8_t *body, size_t cap, size_t *body_len, frame_header *h, codec_scratch *sc);
pz_status sparse_decode(const frame_header *h, const pz_codec_kernels *k, const units *u, float *x, codec_scratch *sc);

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

/* Per-sample state rows (EF per sample, AQ-SGD), keyed by sample id. */
typedef struct {
    int64_t row;        /* floats per row */
    int fp16;           /* rows stored as binary16 */
    int64_t cap;        /* rows allocated */
    uint8_t *present;   /* (cap) 1 once a row was written */
    void *data;
    int fd;             /* >= 0: file-backed (mmap) */
    char path[512];
    size_t mapped;
} sample_store;

/* mmap_dir: NULL for memory, else a directory for a private backing file */
pz_status store_init(sample_store *s, int64_t row, int fp16, const char *mmap_dir);
/* Row of sample id (zero-filled the first time); NULL + error on failure. */
pz_status store_row(sample_store *s, uint32_t id, void **row);
void store_get(const sample_store *s, const void *row, float *out);
void store_put(const sample_store *s, void *row, const float *in);
void store_free(sample_store *s);

struct pz_codec {
    char spec[256];
    int wrapper;           /* WRAP_* (not warm-up) */
    codec_params p;
    int per_sample;        /* ef: one buffer per sample */
    int store_fp16;
    char mmap_path[512];
    uint64_t seed, counter;
    int warmup;
    uint32_t max_samples;
    const pz_codec_kernels *k;
    /* state */
    float *state;          /* ef/ef21 per boundary: (state_n) */
    int64_t state_n;
    sample_store store;    /* per-sample ef, aqsgd */
    int store_ready;
    /* scratch */
    float *tmp;            /* (tmp_n) */
    int64_t tmp_n;
    codec_scratch sc;
};

pz_status codec_parse_spec(pz_codec *c, const char *spec);
void codec_canonical_spec(const pz_codec *c, char *buf, size_t cap);

#endif
