/* SPDX-License-Identifier: MIT */
/* test_golden.c — the frame format pinned by known answers. For every codec
 * (and the stateful wrappers over a few steps) tests/codec/golden/ holds
 * small inputs, the exact frames pipezip wrote for them and what a receiver
 * decoded. Encoding the inputs again must reproduce every frame byte for
 * byte, and decoding must give the same floats bit for bit: a change that
 * moves a single bit of the wire format fails here. The same files are
 * decoded by tests/codec/format_decoder.py, written from docs/FORMAT.md
 * alone (test_golden_format).
 *
 *   test_golden             check against tests/codec/golden
 *   test_golden --write D   write the cases into D (only when the format is
 *                           meant to change: say so in FORMAT.md's version) */
#include "../test.h"
#include "pipezip/codec.h"

#include <errno.h>
#include <sys/stat.h>
#include <zstd.h>

/* The entropy stage's zstd stream is not pinned (FORMAT.md: another zstd
 * version may compress the same sections into other bytes): two frames with
 * the ZSTD flag agree when their headers agree up to the payload length,
 * their id sections agree and their sections decompress to the same bytes. */
static int same_entropy_frame(const uint8_t *a, size_t al, const uint8_t *b, size_t bl) {
    if (al < 64 || bl < 64 || !(a[7] & 2) || !(b[7] & 2) || memcmp(a, b, 48)) return 0;
    const size_t ids = a[7] & 1 ? 4 * (size_t)(a[8] | a[9] << 8 | a[10] << 16 | (uint32_t)a[11] << 24) : 0;
    const size_t raw = (size_t)(a[36] | a[37] << 8 | a[38] << 16 | (uint32_t)a[39] << 24);
    if (al < 64 + ids || bl < 64 + ids || memcmp(a + 64, b + 64, ids)) return 0;
    uint8_t *ra = malloc(raw + 1), *rb = malloc(raw + 1);
    const size_t ga = ZSTD_decompress(ra, raw, a + 64 + ids, al - 64 - ids), gb = ZSTD_decompress(rb, raw, b + 64 + ids, bl - 64 - ids);
    const int same = !ZSTD_isError(ga) && ga == raw && !ZSTD_isError(gb) && gb == raw && !memcmp(ra, rb, raw);
    free(ra), free(rb);
    return same;
}

typedef struct {
    const char *name, *spec;
    const char *data; /* gauss: signed, spread magnitudes; relu: >= 0, half zeros; levels: 5 values, many ties */
    int ndim;
    int64_t shape[4];
    int steps, warmup; /* frames in sequence; aqsgd: the first `warmup` in warm-up mode */
} golden_case;

static const golden_case CASES[] = {
    {"none", "none", "gauss", 3, {2, 3, 5}, 1, 0},
    {"fp16", "fp16", "gauss", 2, {4, 33}, 1, 0},
    {"bf16", "bf16", "gauss", 2, {4, 33}, 1, 0},
    {"q1", "q1", "gauss", 2, {3, 21}, 1, 0},
    {"q1_sym", "q1:sym", "gauss", 2, {3, 21}, 1, 0},
    {"q2", "q2", "gauss", 2, {3, 21}, 1, 0},
    {"q3_sym", "q3:sym", "gauss", 2, {3, 21}, 1, 0},
    {"q4", "q4", "relu", 4, {2, 3, 4, 5}, 1, 0},
    {"q4_stoch", "q4:stoch", "gauss", 2, {5, 17}, 1, 0},
    {"q5_sample", "q5:per=sample", "gauss", 2, {4, 19}, 1, 0},
    {"q6_sym_channel", "q6:sym,per=channel", "gauss", 4, {2, 3, 2, 5}, 1, 0},
    {"q7_channel", "q7:per=channel", "relu", 3, {2, 4, 9}, 1, 0},
    {"q8", "q8", "gauss", 1, {50}, 1, 0},
    {"q8_sym_stoch_sample", "q8:sym,stoch,per=sample", "gauss", 2, {3, 40}, 1, 0},
    {"topk10_delta", "topk:0.1", "gauss", 2, {4, 50}, 1, 0},
    {"topk50_bitmap", "topk:0.5", "gauss", 2, {4, 50}, 1, 0},
    {"topk20_tensor_bitmap", "topk:0.2,per=tensor,index=bitmap", "gauss", 3, {2, 5, 9}, 1, 0},
    {"topk1_long_delta", "topk:0.01,per=tensor,index=delta", "gauss", 1, {3000}, 1, 0},
    {"topk30_fp16", "topk:0.3,values=fp16", "gauss", 2, {3, 30}, 1, 0},
    {"topk25_bf16", "topk:0.25,values=bf16", "gauss", 2, {3, 32}, 1, 0},
    {"topk30_q4", "topk:0.3,values=q4", "gauss", 2, {3, 30}, 1, 0},
    {"topk20_q1", "topk:0.2,values=q1", "gauss", 2, {3, 30}, 1, 0},
    {"topk20_byvalue", "topk:0.2,by=value", "gauss", 2, {3, 30}, 1, 0},
    {"topk15_ties", "topk:0.15", "levels", 2, {3, 40}, 1, 0},
    {"randk25", "randk:0.25", "gauss", 2, {3, 24}, 1, 0},
    {"randk10_unbiased_tensor", "randk:0.1,unbiased,per=tensor", "gauss", 2, {5, 20}, 1, 0},
    {"randk30_q3", "randk:0.3,values=q3", "gauss", 2, {2, 30}, 1, 0},
    {"randtopk20", "randtopk:0.2,alpha=0.3", "gauss", 2, {3, 40}, 1, 0},
    {"randtopk10_delta_fp16", "randtopk:0.1,index=delta,values=fp16", "gauss", 2, {2, 100}, 1, 0},
    {"ms10_relu", "ms:0.1,bits=2", "relu", 4, {2, 3, 4, 5}, 1, 0},
    {"ms10_signed_auto", "ms:0.1", "gauss", 2, {3, 40}, 1, 0},
    {"ms5_b3_sample", "ms:0.05,bits=3,per=sample", "relu", 2, {3, 60}, 1, 0},
    {"ms20_b1", "ms:0.2,bits=1", "gauss", 2, {2, 25}, 1, 0},
    {"ms10_fp16_signed", "ms:0.1,values=fp16,signed", "relu", 2, {2, 40}, 1, 0},
    {"ms10_b8_unsigned_ties", "ms:0.1,bits=8,unsigned", "levels_abs", 2, {2, 40}, 1, 0},
    {"ef_topk20", "ef(topk:0.2)", "gauss", 2, {3, 20}, 3, 0},
    {"ef_q2_sample", "ef(q2),per=sample", "gauss", 2, {3, 20}, 2, 0},
    {"ef21_q4", "ef21(q4)", "gauss", 2, {3, 20}, 3, 0},
    {"ef21_topk30", "ef21(topk:0.3)", "gauss", 2, {2, 20}, 2, 0},
    {"aqsgd_q2", "aqsgd(q2)", "gauss", 2, {3, 16}, 3, 1},
    {"aqsgd_topk25_fp16", "aqsgd(topk:0.25),store=fp16", "gauss", 2, {2, 16}, 3, 1},
    /* added after the first release of the format: at the end, so that the cases before keep their inputs */
    {"q2_token", "q2:per=token", "gauss", 3, {2, 3, 8}, 1, 0},
    {"q3_sym_token", "q3:sym,per=token", "relu", 3, {2, 2, 11}, 1, 0},
    {"ms10_b3_q4_values", "ms:0.1,bits=3,values=q4", "gauss", 2, {3, 40}, 1, 0},
    /* the rotation (q*:rot): a last dimension of 16 (one block), of 24 (blocks of 8), of 12 (blocks of 4) with stochastic rounding */
    {"q4_rot_token", "q4:per=token,rot", "gauss", 3, {2, 3, 16}, 1, 0},
    {"q3_sym_rot", "q3:sym,rot", "relu", 2, {3, 24}, 1, 0},
    {"q5_stoch_rot_sample", "q5:stoch,rot,per=sample", "gauss", 2, {2, 12}, 1, 0},
    {"ef_q4_rot", "ef(q4:rot)", "gauss", 2, {2, 8}, 2, 0},
    /* the entropy stage (+zstd): sections that shrink (ReLU codes, a plain
     * fp32 payload of five levels, TopK with an id section before them) and
     * a frame too small to gain, which is sent as it is */
    {"q4_relu_zstd", "q4:per=sample+zstd", "relu", 2, {4, 256}, 1, 0},
    {"none_levels_zstd", "none+zstd:19", "levels", 2, {2, 200}, 1, 0},
    {"aqsgd_topk20_zstd", "aqsgd(topk:0.2)+zstd", "levels", 2, {3, 300}, 3, 1},
    {"q8_small_zstd", "q8+zstd", "gauss", 1, {20}, 1, 0},
    /* low rank: factors of a 10 x 8 matrix, fp16 factors from two cold power iterations, 8-bit factors warm over three
     * steps (each frame starts from the last one's Q), and error feedback around rank 1 */
    {"lowrank2", "lowrank:2", "gauss", 3, {2, 5, 8}, 1, 0},
    {"lowrank3_fp16_cold", "lowrank:3,values=fp16,iters=2,cold", "gauss", 2, {12, 6}, 1, 0},
    {"lowrank2_q8_warm", "lowrank:2,values=q8", "gauss", 2, {16, 8}, 3, 0},
    {"ef_lowrank1", "ef(lowrank:1)", "gauss", 2, {6, 10}, 3, 0},
    /* codes one per byte (bytes): alone, through the entropy stage, and symmetric per token */
    {"q5_bytes", "q5:bytes", "gauss", 2, {3, 10}, 1, 0},
    {"q6_bytes_zstd", "q6:bytes+zstd", "gauss", 3, {4, 32, 16}, 1, 0},
    {"q3_sym_token_bytes", "q3:sym,per=token,bytes", "relu", 3, {2, 3, 7}, 1, 0},
    /* fp8: E4M3 per tensor, E5M2 per token, per channel through the entropy stage, and inside EF21 over three steps */
    {"fp8", "fp8", "gauss", 2, {3, 40}, 1, 0},
    {"fp8_e5m2_token", "fp8:e5m2,per=token", "gauss", 3, {2, 3, 8}, 1, 0},
    {"fp8_channel_zstd", "fp8:per=channel+zstd", "gauss", 4, {2, 3, 2, 5}, 1, 0},
    {"ef21_fp8", "ef21(fp8)", "gauss", 2, {4, 12}, 3, 0},
    /* residual vector quantization: 2 stages of 8 entries over vectors of 4 per token; 3 stages of 4 entries over pairs,
     * warm over three steps (each frame's k-means starts from the last one's codebooks); per tensor, cold, through the
     * entropy stage; and inside error feedback */
    {"rvq4_2x3", "rvq:4,stages=2,bits=3", "gauss", 2, {6, 8}, 1, 0},
    {"rvq2_3x2_warm", "rvq:2,stages=3,bits=2,iters=2", "gauss", 3, {2, 4, 6}, 3, 0},
    {"rvq4_tensor_cold_zstd", "rvq:4,stages=1,bits=4,per=tensor,cold+zstd", "relu", 2, {5, 8}, 1, 0},
    {"ef_rvq2", "ef(rvq:2,stages=1,bits=2)", "gauss", 2, {3, 8}, 3, 0},
    /* the entropy stage's Huffman form (+huf, pinned byte for byte): 8-bit codes, 6-bit codes one per byte, ReLU codes
     * per sample, TopK with an id section before them inside AQ-SGD, and a frame too small to gain */
    {"q8_gauss_huf", "q8+huf", "gauss", 2, {4, 256}, 1, 0},
    {"q6_bytes_huf", "q6:bytes+huf", "gauss", 3, {4, 32, 16}, 1, 0},
    {"q4_relu_huf", "q4:per=sample+huf", "relu", 2, {4, 256}, 1, 0},
    {"aqsgd_topk20_huf", "aqsgd(topk:0.2)+huf", "levels", 2, {3, 300}, 3, 1},
    {"q8_small_huf", "q8+huf", "gauss", 1, {20}, 1, 0},
};
enum { NCASES = sizeof CASES / sizeof *CASES };

/* the inputs: a generator of the test's own (splitmix64), so that the
 * library's RNG may change without moving the inputs (which are committed
 * anyway: the check reads them back) */
static uint64_t sm_state;
static uint64_t sm_next(void) {
    uint64_t z = (sm_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static double sm_unit(void) { return (double)(sm_next() >> 11) * (1.0 / 9007199254740992.0); }

static void make_input(const char *kind, float *x, int64_t n) {
    static const float levels[] = {-2.0f, -0.5f, 0.0f, 0.5f, 2.0f};
    for (int64_t i = 0; i < n; i++) {
        const double u = sm_unit() * 2.0 - 1.0, scale = 1.0 + 9.0 * sm_unit() * sm_unit();
        const double g = u * u * u * scale; /* heavy-tailed, signed */
        if (!strcmp(kind, "gauss")) x[i] = (float)g;
        else if (!strcmp(kind, "relu")) x[i] = g > 0 ? (float)g : 0.0f;
        else if (!strcmp(kind, "levels")) x[i] = levels[sm_next() % 5];
        else x[i] = fabsf(levels[sm_next() % 5]); /* levels_abs */
    }
}

static int64_t elements(const golden_case *gc) {
    int64_t n = 1;
    for (int i = 0; i < gc->ndim; i++) n *= gc->shape[i];
    return n;
}

static void path_of(char *buf, size_t cap, const char *dir, const char *name, int step, const char *ext) {
    snprintf(buf, cap, "%s/%s.%d.%s", dir, name, step, ext);
}

static int write_file(const char *path, const void *p, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, len, f) != len || fclose(f)) {
        fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
        return 1;
    }
    return 0;
}

static uint8_t *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot read %s: %s\n", path, strerror(errno));
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    const long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc((size_t)(sz > 0 ? sz : 1));
    *len = fread(p, 1, (size_t)sz, f);
    fclose(f);
    return p;
}

/* ids of the batch: fixed across steps, so per-sample state accumulates */
static void batch_ids(const golden_case *gc, uint32_t *ids) {
    for (int64_t b = 0; b < gc->shape[0]; b++) ids[b] = (uint32_t)(3 * b + 1);
}

static int run_case(int ci, const golden_case *gc, const char *dir, int write) {
    const int64_t n = elements(gc);
    pz_codec *tx, *rx;
    if (pz_codec_create(&tx, gc->spec) || pz_codec_create(&rx, gc->spec)) {
        CHECK(0, "%s: %s", gc->spec, pz_last_error());
        return 1;
    }
    pz_codec_set_seed(tx, 1000 + (uint64_t)ci);
    uint32_t *ids = malloc(sizeof(uint32_t) * (size_t)gc->shape[0]);
    batch_ids(gc, ids);
    const size_t cap = pz_codec_max_frame_bytes(tx, gc->ndim, gc->shape);
    uint8_t *frame = malloc(cap);
    float *x = malloc(sizeof(float) * (size_t)(n + 1)), *y = malloc(sizeof(float) * (size_t)(n + 1));
    char path[512];
    for (int s = 0; s < gc->steps; s++) {
        pz_codec_set_warmup(tx, s < gc->warmup);
        if (write) make_input(gc->data, x, n);
        else {
            size_t len;
            path_of(path, sizeof path, dir, gc->name, s, "in");
            float *in = (float *)(void *)read_file(path, &len);
            CHECK(in && len == 4 * (size_t)n, "%s: input of %zu bytes, expected %lld", path, in ? len : 0, (long long)(4 * n));
            if (!in || len != 4 * (size_t)n) return free(in), 1;
            memcpy(x, in, len);
            free(in);
        }
        size_t flen;
        CHECK(pz_codec_encode(tx, x, gc->ndim, gc->shape, ids, frame, cap, &flen, NULL) == PZ_OK, "%s step %d: %s", gc->spec, s,
              pz_last_error());
        int nd;
        int64_t shape[4];
        CHECK(pz_codec_decode(rx, frame, flen, y, (size_t)n, &nd, shape) == PZ_OK, "%s step %d: decode: %s", gc->spec, s,
              pz_last_error());
        if (write) {
            path_of(path, sizeof path, dir, gc->name, s, "in");
            if (write_file(path, x, 4 * (size_t)n)) return 1;
            path_of(path, sizeof path, dir, gc->name, s, "pzf");
            if (write_file(path, frame, flen)) return 1;
            path_of(path, sizeof path, dir, gc->name, s, "out");
            if (write_file(path, y, 4 * (size_t)n)) return 1;
            continue;
        }
        size_t glen = 0, olen = 0;
        path_of(path, sizeof path, dir, gc->name, s, "pzf");
        uint8_t *golden = read_file(path, &glen);
        size_t first = 0;
        while (golden && first < glen && first < flen && golden[first] == frame[first]) first++;
        CHECK(golden && ((glen == flen && first == flen) || same_entropy_frame(golden, glen, frame, flen)),
              "%s (%s) step %d: frame differs from %s: %zu vs %zu bytes, first difference at byte %zu", gc->name, gc->spec, s, path, flen,
              glen, first);
        path_of(path, sizeof path, dir, gc->name, s, "out");
        float *want = (float *)(void *)read_file(path, &olen);
        CHECK(want && olen == 4 * (size_t)n && !memcmp(want, y, olen), "%s (%s) step %d: decoded floats differ from %s", gc->name,
              gc->spec, s, path);
        /* the committed frame decodes on its own to the same floats (a fresh
         * receiver has the same state only for stateless codecs) */
        if (golden && !pz_codec_is_stateful(rx)) {
            CHECK(pz_frame_decode(golden, glen, x, (size_t)n, NULL, NULL) == PZ_OK && want && !memcmp(x, want, olen),
                  "%s: the committed frame decodes to other floats: %s", gc->name, pz_last_error());
        }
        free(golden);
        free(want);
    }
    free(frame), free(x), free(y), free(ids);
    pz_codec_free(tx), pz_codec_free(rx);
    return 0;
}

int main(int argc, char **argv) {
    const int write = argc == 3 && !strcmp(argv[1], "--write");
    const char *dir = write ? argv[2] : PZ_SOURCE_DIR "/tests/codec/golden";
    if (write) {
        mkdir(dir, 0755);
        sm_state = 20261201;
        char path[512];
        snprintf(path, sizeof path, "%s/MANIFEST", dir);
        FILE *m = fopen(path, "w");
        if (!m) return fprintf(stderr, "cannot write %s\n", path), 1;
        fprintf(m, "# name | spec | shape | frames | warm-up frames | sample ids (tests/codec/test_golden.c --write)\n");
        for (int i = 0; i < NCASES; i++) {
            const golden_case *gc = &CASES[i];
            fprintf(m, "%s|%s|", gc->name, gc->spec);
            for (int d = 0; d < gc->ndim; d++) fprintf(m, "%s%lld", d ? "x" : "", (long long)gc->shape[d]);
            fprintf(m, "|%d|%d|", gc->steps, gc->warmup);
            uint32_t *ids = malloc(sizeof(uint32_t) * (size_t)gc->shape[0]);
            batch_ids(gc, ids);
            for (int64_t b = 0; b < gc->shape[0]; b++) fprintf(m, "%s%u", b ? "," : "", ids[b]);
            free(ids);
            fprintf(m, "\n");
        }
        fclose(m);
    }
    for (int i = 0; i < NCASES; i++) run_case(i, &CASES[i], dir, write);
    TEST_DONE();
}
