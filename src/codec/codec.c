/* SPDX-License-Identifier: MIT */
/* codec.c — the codec object: create from a spec, encode a tensor into a
 * frame and decode it back, through the family table (family.h) and the
 * stateful wrappers (wrappers.c). Nothing here knows a particular codec. */
#include "object.h"
#include "sparse.h"
#include "units.h"
#include "vocab.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

pz_status pz_codec_create_desc(pz_codec **out, const pz_codec_desc *d) {
    *out = NULL;
    pz_codec *c = calloc(1, sizeof *c);
    if (!c) return pz_fail(PZ_ERR_NOMEM, "out of memory");
    c->store.fd = -1;
    c->d = *d;
    pz_codec_desc_canonical(&c->d, c->spec, sizeof c->spec);
    c->seed = 0x5EED;
    c->max_samples = 1u << 24;
    c->k = pz_codec_kernels_best();
    *out = c;
    return PZ_OK;
}

pz_status pz_codec_create(pz_codec **out, const char *spec) {
    *out = NULL;
    pz_codec_desc d;
    PZ_TRY(pz_codec_desc_parse(&d, spec));
    return pz_codec_create_desc(out, &d);
}

void pz_codec_free(pz_codec *c) {
    if (!c) return;
    free(c->state);
    free(c->tmp);
    entropy_free(c);
    free(c->fstate.b);
    scratch_release(&c->sc);
    if (c->store_ready) store_free(&c->store);
    free(c);
}

const char *pz_codec_spec(const pz_codec *c) { return c->spec; }
int pz_codec_is_stateful(const pz_codec *c) {
    const codec_family *f = c->d.p.fam;
    return c->d.wrap != NULL || (f->keeps_state && f->keeps_state(&c->d.p));
}
void pz_codec_set_seed(pz_codec *c, uint64_t seed) { c->seed = seed, c->counter = 0; }
void pz_codec_set_warmup(pz_codec *c, int on) { c->warmup = on; }
void pz_codec_set_max_samples(pz_codec *c, uint32_t max_samples) { c->max_samples = max_samples; }

static int needs_ids(const pz_codec *c) { return c->d.wrap && c->d.wrap->needs_ids(&c->d); }

static pz_status check_shape(int ndim, const int64_t *shape, int64_t *n) {
    if (ndim < 1 || ndim > 4) return pz_fail(PZ_ERR_ARG, "a tensor has 1..4 dimensions, got %d", ndim);
    *n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0 || shape[i] > 0xFFFFFFFFll) return pz_fail(PZ_ERR_ARG, "dimension %d has size %lld", i, (long long)shape[i]);
        *n *= shape[i];
        if (*n > ((int64_t)1 << 31)) return pz_fail(PZ_ERR_ARG, "tensors of more than 2^31 elements are not supported");
    }
    return PZ_OK;
}

size_t pz_codec_max_frame_bytes(const pz_codec *c, int ndim, const int64_t *shape) {
    int64_t n = 0;
    units u;
    if (check_shape(ndim, shape, &n) || units_of(&u, c->d.p.gran, ndim, shape)) return 0;
    size_t body = c->d.p.fam->max_body(&c->d.p, &u);
    const size_t warm = (size_t)n * 4; /* aqsgd warm-up sends fp32 */
    if (c->d.wrap && c->d.wrap->wire_id == WRAP_AQSGD && warm > body) body = warm;
    return PZ_FRAME_HEADER_BYTES + (needs_ids(c) ? 4 * (size_t)shape[0] : 0) + body;
}

/* Encode t with the base codec p into a frame marked with `wrapper`. */
static pz_status base_encode(pz_codec *c, const codec_params *p, const float *t, int ndim, const int64_t *shape, const uint32_t *ids,
                             int wrapper, uint64_t seed, uint8_t *frame, size_t cap, size_t *len) {
    units u;
    PZ_TRY(units_of(&u, p->gran, ndim, shape));
    frame_header h = {.codec = p->fam->wire_id, .ndim = ndim, .gran = p->gran, .wrapper = wrapper};
    for (int i = 0; i < ndim; i++) h.dims[i] = shape[i];
    const size_t id_bytes = ids ? 4 * (size_t)shape[0] : 0;
    if (ids) h.flags |= FLAG_IDS;
    const size_t bound = p->fam->max_body(p, &u);
    if (PZ_FRAME_HEADER_BYTES + id_bytes + bound > cap)
        return pz_fail(PZ_ERR_ARG, "frame buffer of %zu bytes is too small (need %zu)", cap, PZ_FRAME_HEADER_BYTES + id_bytes + bound);
    uint8_t *body = frame + PZ_FRAME_HEADER_BYTES + id_bytes;
    size_t body_len = 0;
    uint32_t body_crc = 0;
    int have_crc = 0;
    const codec_io io = {.k = c->k, .sc = &c->sc, .state = &c->fstate};
    PZ_TRY(p->fam->encode(p, &io, t, &u, seed, body, bound, &body_len, &h, &body_crc, &have_crc));
    if (ids) memcpy(frame + PZ_FRAME_HEADER_BYTES, ids, id_bytes);
    h.payload_len = id_bytes + body_len;
    if (have_crc && id_bytes) { /* payload = ids || body */
        const uint32_t ids_crc = c->k->crc32c(0, frame + PZ_FRAME_HEADER_BYTES, id_bytes);
        body_crc = pz_crc32c_combine(ids_crc, body_crc, body_len);
    }
    frame_write_header_crc(frame, &h, body_crc, have_crc);
    *len = PZ_FRAME_HEADER_BYTES + h.payload_len;
    return PZ_OK;
}

/* Decode a parsed frame's base payload into x (n floats). */
static pz_status base_decode(const frame_header *hdr, const pz_codec_kernels *k, float *x, codec_scratch *sc) {
    frame_header hu = *hdr;
    const frame_header *h = &hu;
    PZ_TRY(entropy_unpack(&hu, sc));
    const codec_family *fam = h->fam;
    if (h->wrapper == WRAP_AQSGD_WARMUP && fam != codec_family_plain)
        return frame_error(PZ_FRAME_PARAM, "an AQ-SGD warm-up frame must carry fp32 (codec %s)", codec_family_plain->name);
    PZ_TRY(fam->check(h));
    units u;
    PZ_TRY(units_of(&u, h->gran, h->ndim, h->dims));
    const codec_io io = {.k = k, .sc = sc};
    return fam->decode(h, &io, &u, x);
}

float *codec_tmp(pz_codec *c, int64_t n) {
    if (!c->tmp || c->tmp_n < n) {
        float *t = pz_floats_try((size_t)(2 * n + 2));
        if (!t) return NULL;
        free(c->tmp);
        c->tmp = t;
        c->tmp_n = n;
    }
    return c->tmp;
}

/* the per-boundary state (ef, ef21): grown to the largest tensor seen, the
 * first n entries used (sender and receiver see the same sizes) */
float *codec_boundary_state(pz_codec *c, int64_t n) {
    if (!c->state || c->state_n < n) {
        float *s = pz_floats_try((size_t)(n ? n : 1));
        if (!s) return NULL;
        if (c->state) memcpy(s, c->state, sizeof(float) * (size_t)c->state_n);
        free(c->state);
        c->state = s;
        c->state_n = n;
    }
    return c->state;
}

pz_status codec_ensure_store(pz_codec *c, int64_t row) {
    if (c->store_ready) {
        if (c->store.row != row)
            return pz_fail(PZ_ERR_STATE, "per-sample buffers hold %lld elements per sample, this tensor has %lld", (long long)c->store.row,
                           (long long)row);
        return PZ_OK;
    }
    PZ_TRY(store_init(&c->store, row, c->d.store_fp16, c->d.mmap_path));
    c->store_ready = 1;
    return PZ_OK;
}

static double rel_error(const float *a, const float *ref, int64_t n) {
    double e = 0.0, r = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const double d = (double)a[i] - ref[i];
        e += d * d, r += (double)ref[i] * ref[i];
    }
    return r > 0 ? sqrt(e / r) : sqrt(e);
}

static pz_status not_finite(const pz_codec *c, size_t bad, int64_t n) {
    return pz_fail(PZ_ERR_ARG, "cannot encode with %s: the input is not finite (%zu of its %lld values are NaN or infinite)", c->spec,
                   bad, (long long)n);
}

pz_status pz_codec_encode(pz_codec *c, const float *x, int ndim, const int64_t *shape, const uint32_t *ids, uint8_t *frame, size_t cap,
                          size_t *len, pz_codec_stats *stats) {
    int64_t n = 0;
    *len = 0;
    PZ_TRY(check_shape(ndim, shape, &n));
    if (needs_ids(c) && !ids) return pz_fail(PZ_ERR_ARG, "codec '%s' keys its state by sample id: pass the batch's ids", c->spec);
    const uint32_t *frame_ids = needs_ids(c) ? ids : NULL;
    if (frame_ids)
        for (int64_t b = 0; b < shape[0]; b++)
            if (ids[b] >= c->max_samples)
                return pz_fail(PZ_ERR_ARG, "sample id %u is not below the codec's %u samples (pz_codec_set_max_samples)", ids[b], c->max_samples);
    uint64_t z = c->seed + 0x9E3779B97F4A7C15ull * ++c->counter;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    const uint64_t seed = z ^ (z >> 31);
    /* every lossy codec refuses alike what it cannot represent: a NaN or an
     * infinity anywhere in the input (one vector pass; quantization and MS
     * also catch what a wrapper's state adds, inside their own passes). The
     * float formats (none, fp16, bf16) carry them as IEEE 754 does. */
    /* quantization finds them in its min/max pass, TopK, randomized TopK
     * and MS in their selection's pass: counted only when encode fails */
    const int own_check = c->d.p.fam->checks_finite;
    const size_t bad = n && !c->d.p.fam->plain_payload && !own_check ? c->k->count_nonfinite(x, (size_t)n) : 0;
    if (bad) return not_finite(c, bad, n);
    /* a wrapper's working copy and what the receiver will decode (for a
     * wrapper's state or the stats): 2n floats, kept by the codec, only
     * where used */
    float *t = NULL, *hat = NULL;
    if (c->d.wrap || stats) {
        if (!(t = codec_tmp(c, n))) return pz_fail(PZ_ERR_NOMEM, "out of memory for a codec buffer of %lld floats", (long long)n);
        hat = t + n;
    }
    const float *src = x;
    int wire = c->d.wrap ? c->d.wrap->wire_id : WRAP_NONE;
    codec_params p = c->d.p;
    if (c->d.wrap) PZ_TRY(c->d.wrap->prepare(c, x, shape, n, ids, t, &src, &p, &wire));
    const pz_status est = base_encode(c, &p, src, ndim, shape, frame_ids, wire, seed, frame, cap, len);
    if (est && own_check) {
        const size_t nb = c->k->count_nonfinite(x, (size_t)n);
        if (nb) return not_finite(c, nb, n);
    }
    PZ_TRY(est);
    const float *received = hat; /* what the receiver will use */
    if (c->d.wrap || stats) {
        frame_header h;
        PZ_TRY(frame_parse(frame, *len, &h));
        PZ_TRY(base_decode(&h, c->k, hat, &c->sc));
    }
    if (c->d.wrap) PZ_TRY(c->d.wrap->update(c, x, shape, n, ids, t, hat, &received));
    if (c->d.zstd_level || c->d.huf) PZ_TRY(entropy_pack(c, frame, len));
    if (stats) {
        stats->elements = (uint64_t)n;
        stats->bytes = *len;
        stats->bits_per_element = n ? 8.0 * (double)*len / (double)n : 0.0;
        stats->rel_error = rel_error(received, x, n);
    }
    return PZ_OK;
}

static uint64_t decode_limit = PZ_CODEC_DECODE_LIMIT;
void pz_codec_set_decode_limit(uint64_t max_elements) { decode_limit = max_elements ? max_elements : PZ_CODEC_DECODE_LIMIT; }
uint64_t pz_codec_decode_limit(void) { return decode_limit; }

pz_status frame_check_limit(const frame_header *h) {
    if ((uint64_t)h->n <= decode_limit) return PZ_OK;
    return frame_error(PZ_FRAME_CAPACITY, "the frame declares %lld elements, more than the decoding limit of %llu (pz_codec_set_decode_limit, --max-elements)",
                       (long long)h->n, (unsigned long long)decode_limit);
}

/* parse a frame for decoding into a destination of cap floats */
static pz_status parse_for_decode(const uint8_t *frame, size_t len, size_t cap, frame_header *h) {
    PZ_TRY(frame_parse(frame, len, h));
    PZ_TRY(frame_check_limit(h));
    if ((uint64_t)h->n > cap)
        return frame_error(PZ_FRAME_CAPACITY, "the tensor has %lld elements, the destination holds %zu", (long long)h->n, cap);
    return PZ_OK;
}

static void give_shape(const frame_header *h, int *ndim, int64_t *shape) {
    if (ndim) *ndim = h->ndim;
    if (shape)
        for (int i = 0; i < 4; i++) shape[i] = h->dims[i];
}

pz_status pz_frame_decode(const uint8_t *frame, size_t len, float *x, size_t cap, int *ndim, int64_t *shape) {
    frame_header h;
    PZ_TRY(parse_for_decode(frame, len, cap, &h));
    /* an ef21 or aqsgd frame is a difference its receiver adds to the state
     * it keeps: alone it is not the tensor (an aqsgd warm-up frame is) */
    const wrapper_kind *w = wrapper_by_wire(h.wrapper);
    if (w && w->receiver_state && h.wrapper != WRAP_AQSGD_WARMUP)
        return frame_error(PZ_FRAME_CODEC, "an %s frame holds the compressed difference its receiver adds to the state it keeps, not the "
                       "tensor: decode the stream with a receiving codec of its spec, every frame in order (pz_codec_create and "
                       "pz_codec_decode; pipezip.Codec(spec).decode in Python)", w->name);
    codec_scratch sc = {0};
    const pz_status st = base_decode(&h, pz_codec_kernels_best(), x, &sc);
    scratch_release(&sc);
    PZ_TRY(st);
    give_shape(&h, ndim, shape);
    return PZ_OK;
}

pz_status pz_frame_validate(const uint8_t *frame, size_t len) {
    frame_header h;
    PZ_TRY(parse_for_decode(frame, len, (size_t)decode_limit, &h));
    float *x = pz_floats_try((size_t)h.n + 1);
    if (!x) return pz_fail(PZ_ERR_NOMEM, "out of memory for the %lld elements of a frame", (long long)h.n);
    codec_scratch sc = {0};
    const pz_status st = base_decode(&h, pz_codec_kernels_best(), x, &sc);
    scratch_release(&sc);
    free(x);
    return st;
}

/* A frame's codec in a spec's words, from its header and the frame's
 * vocabulary ("ef21(q8,per=tensor)", "topk,k=12,per=sample,...+zstd"):
 * what a mismatch error names. */
static void describe_frame(const frame_header *h, char *buf, size_t cap) {
    char base[128]; /* the longest (every field, every option bit, the longest names) is about 110 characters */
    const codec_family *f = h->fam;
    int n = f->width_name ? snprintf(base, sizeof base, "%s%d", f->width_name, h->bits) : snprintf(base, sizeof base, "%s", f->name);
#define ADD(...) (n += snprintf(base + n, sizeof base - (size_t)n, __VA_ARGS__))
    if (!f->width_name && (f->fields & PZ_FRAME_USES_BITS)) ADD(",bits=%d", h->bits);
    if (f->fields & (PZ_FRAME_USES_K | PZ_FRAME_USES_RANK)) ADD(",%s=%u", f->fields & PZ_FRAME_USES_RANK ? "rank" : "k", h->k);
    if (h->fam->fields & PZ_FRAME_USES_GRANULARITY) ADD(",per=%s", gran_name(h->gran));
    if (h->fam->fields & PZ_FRAME_USES_VALUES) {
        if (h->value_type == VAL_QUANT) ADD(",values=q%d", h->value_bits);
        else ADD(",values=%s", frame_value_text(PZ_FIELD_VALUE_TYPE, h->value_type));
    }
    if (h->fam->fields & PZ_FRAME_USES_INDEX) ADD(",index=%s", frame_value_text(PZ_FIELD_INDEX_CODING, h->index_coding));
    for (int bit = 1; bit <= OPT_ALL; bit <<= 1)
        if (h->options & bit) ADD(",%s", frame_value_text(PZ_FIELD_OPTION, bit));
#undef ADD
    const char *z = h->flags & FLAG_ZSTD ? "+zstd" : h->flags & FLAG_HUF ? "+huf" : "";
    if (h->wrapper != WRAP_NONE) snprintf(buf, cap, "%s(%s%s)", frame_value_text(PZ_FIELD_WRAPPER, h->wrapper), base, z);
    else snprintf(buf, cap, "%s%s", base, z);
}

/* Whether a parsed frame is one c's encoder writes: the family, its
 * parameters (width, units, options the spec fixes, value type and bits, a
 * forced index coding, the kept count for the frame's shape), the wrapper,
 * and no entropy stage unless the spec has one. */
static int frame_fits(const pz_codec *c, const frame_header *h) {
    const codec_params *p = &c->d.p;
    const int wire = c->d.wrap ? c->d.wrap->wire_id : WRAP_NONE;
    if (h->wrapper == WRAP_AQSGD_WARMUP) return wire == WRAP_AQSGD && h->fam == codec_family_plain;
    if (h->wrapper != wire || h->fam != p->fam) return 0;
    if ((h->flags & FLAG_ZSTD) && !c->d.zstd_level) return 0;
    if ((h->flags & FLAG_HUF) && !c->d.huf) return 0;
    const unsigned f = p->fam->fields;
    if ((f & PZ_FRAME_USES_BITS) && h->bits != p->bits) return 0;
    if ((f & PZ_FRAME_USES_GRANULARITY) && h->gran != p->gran) return 0;
    const int fixed = p->fam->fixed_options ? p->fam->fixed_options(p) : p->fam->option_mask;
    if ((h->options ^ p->options) & fixed) return 0;
    if (f & PZ_FRAME_USES_VALUES) {
        if (h->value_type != p->value_type) return 0;
        if (p->value_type == VAL_QUANT && h->value_bits != p->value_bits) return 0;
    }
    if ((f & PZ_FRAME_USES_INDEX) && p->index_coding != IDX_AUTO && h->index_coding != p->index_coding) return 0;
    if ((f & PZ_FRAME_USES_K) && p->fam->arg.kind == CODEC_ARG_FRACTION) {
        units u;
        if (units_of(&u, h->gran, h->ndim, h->dims)) return 0;
        if ((int64_t)h->k != kept_per_unit(p->fraction, u.m)) return 0;
    }
    return 1;
}

void pz_codec_set_strict(pz_codec *c, int on) { c->strict = on; }

pz_status pz_codec_decode(pz_codec *c, const uint8_t *frame, size_t len, float *x, size_t cap, int *ndim, int64_t *shape) {
    frame_header h;
    PZ_TRY(parse_for_decode(frame, len, cap, &h));
    /* a receiver that keeps state takes only frames of its own wrapper, and
     * frames of such a wrapper reach only such a receiver */
    const wrapper_kind *fw = wrapper_by_wire(h.wrapper);
    if (((fw && fw->receiver_state) || (c->d.wrap && c->d.wrap->receiver_state)) && fw != c->d.wrap)
        return frame_error(PZ_FRAME_STATE, "a frame of wrapper %d reached a '%s' receiver", h.wrapper, c->spec);
    /* ... and only frames of its own spec (its state is of that codec's
     * errors); a strict receiver takes only its own spec's frames too */
    if ((c->strict || (c->d.wrap && c->d.wrap->receiver_state)) && !frame_fits(c, &h)) {
        char got[192];
        describe_frame(&h, got, sizeof got);
        return frame_error(PZ_FRAME_CODEC, "a frame of %s reached a '%s' receiver", got, c->spec);
    }
    if (!c->d.wrap || !c->d.wrap->receive) {
        PZ_TRY(base_decode(&h, c->k, x, &c->sc));
    } else {
        if (c->d.wrap->needs_ids(&c->d) && !(h.flags & FLAG_IDS))
            return frame_error(PZ_FRAME_PAYLOAD, "a frame without sample ids reached a '%s' receiver (it keeps per-sample state)", c->spec);
        float *d = codec_tmp(c, h.n);
        if (!d) return pz_fail(PZ_ERR_NOMEM, "out of memory for a codec buffer of %lld floats", (long long)h.n);
        PZ_TRY(base_decode(&h, c->k, d, &c->sc));
        PZ_TRY(c->d.wrap->receive(c, &h, d, x));
    }
    give_shape(&h, ndim, shape);
    return PZ_OK;
}

uint32_t pz_crc32c(const void *data, size_t n) { return pz_codec_kernels_best()->crc32c(0, data, n); }
