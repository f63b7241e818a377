/* SPDX-License-Identifier: MIT */
/* cmd_codec.c — `pipezip codec encode | decode | inspect`: check a codec
 * from outside, on raw float32 or .npy files. */
#include "tool/xalloc.h"
#include "cli.h"
#include "args.h"
#include "tensor_file.h"
#include "pipezip/codec.h"

#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "Usage: pipezip codec encode --codec SPEC [--shape DIMS] [--ids FILE] IN OUT\n"
    "       pipezip codec decode FRAME OUT\n"
    "       pipezip codec inspect FRAME\n"
    "\n"
    "IN and OUT tensors are .npy (float32, C order) or raw little-endian float32\n"
    "(the shape from --shape, e.g. 128x16x28x28; 1-D by default). A frame is the\n"
    "bytes that would cross a stage boundary (docs/FORMAT.md). encode prints the\n"
    "frame's size, bits per element and relative error ||x_hat - x|| / ||x||.\n"
    "\n";

/* the spec grammar, generated from the codec table */
void pz_print_codec_grammar(FILE *out) {
    char buf[8192];
    pz_codec_help(buf, sizeof buf);
    fprintf(out, "Codec specs:\n%s", buf);
    fprintf(out, "Examples: q4  q8:sym,stoch  topk:0.1  ms:0.01,bits=2  ef(topk:0.1)  aqsgd(q4:sym),store=fp16\n");
}

static void print_usage(void) {
    printf("%s", usage);
    pz_print_codec_grammar(stdout);
}

static int encode(int argc, char **argv) {
    const char *spec = NULL, *shape = NULL, *ids_path = NULL;
    uint64_t seed = 0x5EED;
    const pz_opt opts[] = {
        {"codec", OPT_STR, &spec, "SPEC", "codec spec (see pipezip codec --help)", 0, 0, NULL},
        {"shape", OPT_STR, &shape, "DIMS", "shape of a raw input, e.g. 128x16x28x28", 0, 0, NULL},
        {"ids", OPT_STR, &ids_path, "FILE", "sample ids (raw uint32, one per row) for aqsgd/ef per=sample", 0, 0, NULL},
        {"seed", OPT_U64, &seed, "N", "seed of the codec's randomness", 0, 0, NULL},
    };
    char *pos[2];
    int n_pos;
    int rc = pz_parse_args("pipezip codec encode", opts, 4, argc, argv, 3, usage, pos, 2, &n_pos);
    if (rc == 1) return 0;
    if (rc) return 2;
    if (!spec || n_pos != 2) {
        fprintf(stderr, "pipezip codec encode: needs --codec SPEC, an input and an output file (see pipezip codec --help)\n");
        return 2;
    }
    pz_codec *c;
    if (pz_codec_create(&c, spec)) {
        fprintf(stderr, "pipezip codec encode: %s\n", pz_last_error());
        return 2;
    }
    pz_codec_set_seed(c, seed);
    pz_tensor t;
    if (pz_tensor_read(pos[0], shape, &t)) {
        fprintf(stderr, "pipezip codec encode: %s\n", pz_last_error());
        pz_codec_free(c);
        return 1;
    }
    uint32_t *ids = NULL;
    int ret = 0;
    if (ids_path) {
        uint8_t *b;
        size_t len;
        if (pz_read_file(ids_path, &b, &len) || len != 4 * (size_t)t.shape[0]) {
            fprintf(stderr, "pipezip codec encode: '%s' must hold %lld uint32 sample ids\n", ids_path, (long long)t.shape[0]);
            ret = 1;
            goto done;
        }
        ids = (uint32_t *)(void *)b;
    } else if (pz_codec_is_stateful(c)) {
        ids = pz_xcalloc((size_t)t.shape[0], sizeof(uint32_t));
        for (int64_t i = 0; i < t.shape[0]; i++) ids[i] = (uint32_t)i;
    }
    size_t cap = pz_codec_max_frame_bytes(c, t.ndim, t.shape), len;
    uint8_t *frame = pz_xmalloc(cap);
    pz_codec_stats st;
    if (pz_codec_encode(c, t.data, t.ndim, t.shape, ids, frame, cap, &len, &st) || pz_write_output(pos[1], frame, len)) {
        fprintf(stderr, "pipezip codec encode: %s\n", pz_last_error());
        ret = 1;
    } else {
        fprintf(strcmp(pos[1], "-") ? stdout : stderr, "%s: %llu elements -> %zu bytes (%.4f bits/element, %.2fx smaller than fp32), relative error %.6g\n",
               pz_codec_spec(c), (unsigned long long)st.elements, len, st.bits_per_element,
               st.elements ? 32.0 / st.bits_per_element : 0.0, st.rel_error);
    }
    free(frame);
done:
    free(ids);
    free(t.data);
    pz_codec_free(c);
    return ret;
}

static int read_frame(const char *cmd, const char *path, uint8_t **f, size_t *len) {
    if (strcmp(path, "-")) {
        FILE *fp = fopen(path, "rb");
        if (!fp) {
            fprintf(stderr, "%s: cannot open '%s'\n", cmd, path);
            return 1;
        }
        fclose(fp);
    }
    /* a frame is at most its header and what the decoding limit allows */
    if (pz_read_file_max(path, (size_t)64 + 64 * (size_t)pz_codec_decode_limit(), f, len)) {
        fprintf(stderr, "%s: %s\n", cmd, pz_last_error());
        return 1;
    }
    return 0;
}

/* the positional arguments (a frame file first) of decode/inspect; returns
 * -1 to go on with the frame read into *f and its validated header (within
 * the decoding limit) in *info, the whole frame validated too with
 * `whole`; else the exit code */
static int frame_args(const char *cmd, int argc, char **argv, char **pos, int want, const char *what, int whole, uint8_t **f,
                      size_t *len, pz_frame_info *info) {
    int n_pos;
    double max_el = 0;
    const pz_opt opts[] = {{"max-elements", OPT_FLOAT64, &max_el, "N", "refuse frames declaring more elements (default 2^28)", 1, 1e15, NULL}};
    int rc = pz_parse_args(cmd, opts, 1, argc, argv, 3, usage, pos, want, &n_pos);
    if (rc == 1) return 0;
    if (max_el > 0) pz_codec_set_decode_limit((uint64_t)max_el);
    if (rc || n_pos != want) {
        if (!rc) fprintf(stderr, "%s: needs %s\n", cmd, what);
        return 2;
    }
    if (read_frame(cmd, pos[0], f, len)) return 1;
    if (pz_frame_inspect(*f, *len, info) || (whole && pz_frame_validate(*f, *len))) {
        fprintf(stderr, "%s: '%s': %s\n", cmd, pos[0], pz_last_error());
        free(*f);
        return 1;
    }
    return -1;
}

static int decode(int argc, char **argv) {
    char *pos[2];
    uint8_t *f;
    size_t len;
    pz_frame_info info;
    const int rc = frame_args("pipezip codec decode", argc, argv, pos, 2, "a frame file and an output file", 0, &f, &len, &info);
    if (rc >= 0) return rc;
    pz_tensor t = {0};
    int ret = 0;
    t.ndim = info.ndim;
    for (int i = 0; i < info.ndim; i++) t.shape[i] = info.shape[i];
    /* the header is valid and within the decoding limit (frame_args); the decode checks the rest */
    t.data = pz_floats_try((size_t)info.elements + 1);
    if (!t.data) {
        fprintf(stderr, "pipezip codec decode: '%s': out of memory for %llu elements\n", pos[0], (unsigned long long)info.elements);
        free(f);
        return 1;
    }
    if (pz_frame_decode(f, len, t.data, (size_t)info.elements, NULL, NULL) || pz_tensor_write(pos[1], &t)) {
        fprintf(stderr, "pipezip codec decode: '%s': %s\n", pos[0], pz_last_error());
        ret = 1;
    }
    free(t.data);
    free(f);
    return ret;
}

static int inspect(int argc, char **argv) {
    char *pos[1];
    uint8_t *f;
    size_t len;
    pz_frame_info i;
    const int rc = frame_args("pipezip codec inspect", argc, argv, pos, 1, "a frame file", 1, &f, &len, &i);
    if (rc >= 0) return rc;
    /* every name from the format's tables (pz_frame_info), every line from
     * the fields the family uses: no codec or value is known here */
    printf("frame:        %s, %llu bytes (header 64, payload %llu), CRC-32C %08x ok\n", pos[0], (unsigned long long)i.frame_bytes,
           (unsigned long long)i.payload_bytes, i.checksum);
    printf("codec:        %s (id %d)%s%s\n", i.codec_name, i.codec_id, i.wrapper ? ", wrapper " : "", i.wrapper ? i.wrapper_name : "");
    printf("shape:        ");
    for (int d = 0; d < i.ndim; d++) printf("%s%lld", d ? "x" : "", (long long)i.shape[d]);
    printf(" (%lld elements)\n", (long long)i.elements);
    printf("bits/element: %.4f (%.2fx smaller than fp32)\n", i.elements ? 8.0 * i.frame_bytes / i.elements : 0.0,
           i.frame_bytes ? 32.0 * i.elements / (8.0 * i.frame_bytes) : 0.0);
    if (i.detail_label) {
        char label[32];
        snprintf(label, sizeof label, "%s:", i.detail_label);
        printf("%-14s%s\n", label, i.detail);
    }
    if (i.fields & PZ_FRAME_USES_VALUES) {
        printf("values:       %s", i.value_type_name);
        if (i.value_bits) printf(" (%d bits)", i.value_bits);
        if (i.fields & PZ_FRAME_USES_INDEX) printf(", positions as %s", i.index_coding_name);
        printf("\n");
    }
    if (i.has_ids) printf("sample ids:   yes (%lld)\n", (long long)i.shape[0]);
    if (i.entropy_name)
        printf("entropy:      %s, codec sections %llu -> %llu bytes (%.2fx)\n", i.entropy_name, (unsigned long long)i.body_bytes,
               (unsigned long long)i.stored_body_bytes, i.stored_body_bytes ? (double)i.body_bytes / (double)i.stored_body_bytes : 0.0);
    free(f);
    return 0;
}

int cmd_codec(int argc, char **argv) {
    if (argc < 3 || !strcmp(argv[2], "-h") || !strcmp(argv[2], "--help")) {
        print_usage();
        return argc < 3 ? 2 : 0;
    }
    if (!strcmp(argv[2], "encode")) return encode(argc, argv);
    if (!strcmp(argv[2], "decode")) return decode(argc, argv);
    if (!strcmp(argv[2], "inspect")) return inspect(argc, argv);
    fprintf(stderr, "pipezip codec: unknown action '%s' (expected encode, decode or inspect)\n", argv[2]);
    return 2;
}
