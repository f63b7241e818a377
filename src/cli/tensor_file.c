/* SPDX-License-Identifier: MIT */
/* tensor_file.c — raw float32 and .npy tensor files for `pipezip codec`. */
#include "tool/xalloc.h"
#include "tensor_file.h"

#include <stdlib.h>
#include <string.h>

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

pz_status pz_parse_shape(const char *spec, int *ndim, int64_t *shape) {
    *ndim = 0;
    const char *p = spec;
    while (*p) {
        if (*ndim == 4) return pz_fail(PZ_ERR_ARG, "shape '%s' has more than 4 dimensions", spec);
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end == p || v < 0 || v > 0xFFFFFFFFll) return pz_fail(PZ_ERR_ARG, "shape '%s': expected sizes like 128x16x28x28", spec);
        shape[(*ndim)++] = v;
        if (*end == 'x' || *end == 'X' || *end == ',') p = end + 1;
        else if (*end == 0) p = end;
        else return pz_fail(PZ_ERR_ARG, "shape '%s': expected sizes like 128x16x28x28", spec);
    }
    if (*ndim == 0) return pz_fail(PZ_ERR_ARG, "empty shape");
    return PZ_OK;
}

static pz_status parse_npy(const char *path, const uint8_t *b, size_t len, pz_tensor *t, size_t *offset) {
    if (len < 10 || memcmp(b, "\x93NUMPY", 6)) return pz_fail(PZ_ERR_FORMAT, "'%s' is not a .npy file (bad magic)", path);
    size_t hl, hs;
    if (b[6] == 1) hl = b[8] | (size_t)b[9] << 8, hs = 10;
    else if (b[6] == 2 || b[6] == 3) {
        if (len < 12) return pz_fail(PZ_ERR_FORMAT, "'%s': truncated .npy header", path);
        hl = b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24, hs = 12;
    } else return pz_fail(PZ_ERR_FORMAT, "'%s': .npy version %d is not supported", path, b[6]);
    if (hs + hl > len || hl > 65536) return pz_fail(PZ_ERR_FORMAT, "'%s': truncated .npy header", path);
    char h[65537];
    memcpy(h, b + hs, hl);
    h[hl] = 0;
    const char *d = strstr(h, "'descr'");
    if (!d || !strstr(d, "'<f4'")) return pz_fail(PZ_ERR_FORMAT, "'%s' does not hold little-endian float32 ('<f4')", path);
    const char *fo = strstr(h, "'fortran_order'");
    if (!fo || !strstr(fo, "False")) return pz_fail(PZ_ERR_FORMAT, "'%s' is in Fortran order; save it C-ordered", path);
    const char *sh = strstr(h, "'shape'");
    const char *open = sh ? strchr(sh, '(') : NULL, *close = open ? strchr(open, ')') : NULL;
    if (!open || !close) return pz_fail(PZ_ERR_FORMAT, "'%s': no shape in the .npy header", path);
    t->ndim = 0;
    for (const char *p = open + 1; p < close;) {
        while (p < close && (*p == ' ' || *p == ',')) p++;
        if (p >= close) break;
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end == p || v < 0) return pz_fail(PZ_ERR_FORMAT, "'%s': bad shape in the .npy header", path);
        if (t->ndim == 4) return pz_fail(PZ_ERR_FORMAT, "'%s' has more than 4 dimensions", path);
        t->shape[t->ndim++] = v;
        p = end;
    }
    if (t->ndim == 0) t->shape[t->ndim++] = 1; /* a scalar */
    *offset = hs + hl;
    return PZ_OK;
}

pz_status pz_tensor_read(const char *path, const char *shape_spec, pz_tensor *t) {
    memset(t, 0, sizeof *t);
    uint8_t *b;
    size_t len, off = 0;
    if (strcmp(path, "-")) {
        FILE *f = fopen(path, "rb");
        if (!f) return pz_fail(PZ_ERR_IO, "cannot open '%s'", path);
        fclose(f);
    }
    PZ_TRY(pz_read_file(path, &b, &len)); /* "-": standard input */
    pz_status st = PZ_OK;
    /* .npy by its name or by its magic (standard input has no name) */
    const int npy = ends_with(path, ".npy") || (len >= 6 && !memcmp(b, "\x93NUMPY", 6));
    if (npy) {
        st = parse_npy(!strcmp(path, "-") ? "standard input" : path, b, len, t, &off);
        int nd;
        int64_t sh[4];
        if (!st && shape_spec && !(st = pz_parse_shape(shape_spec, &nd, sh)) &&
            (nd != t->ndim || memcmp(sh, t->shape, (size_t)nd * sizeof *sh)))
            st = pz_fail(PZ_ERR_ARG, "--shape %s does not match the shape in the .npy header of '%s'", shape_spec, path);
    } else if (shape_spec) st = pz_parse_shape(shape_spec, &t->ndim, t->shape);
    else t->ndim = 1, t->shape[0] = (int64_t)(len / 4);
    if (!st) {
        const int64_t n = pz_tensor_numel(t);
        if ((uint64_t)n * 4 != len - off)
            st = pz_fail(PZ_ERR_FORMAT, "'%s' holds %zu bytes of data, a float32 tensor of %lld elements needs %lld", path, len - off,
                         (long long)n, (long long)n * 4);
        else {
            t->data = pz_xfloats((size_t)n);
            memcpy(t->data, b + off, (size_t)n * 4);
        }
    }
    free(b);
    return st;
}

pz_status pz_tensor_write(const char *path, const pz_tensor *t) {
    const int64_t n = pz_tensor_numel(t);
    size_t hl = 0;
    char header[256];
    if (ends_with(path, ".npy")) {
        char shape[128] = "";
        for (int i = 0; i < t->ndim; i++) {
            char d[32];
            snprintf(d, sizeof d, "%lld%s", (long long)t->shape[i], t->ndim == 1 ? "," : i + 1 < t->ndim ? ", " : "");
            strcat(shape, d);
        }
        char dict[200];
        int dl = snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }", shape);
        const int total = 10 + dl + 1, pad = (64 - total % 64) % 64;
        memcpy(header, "\x93NUMPY\x01\x00", 8);
        const int hlen = dl + pad + 1;
        header[8] = (char)(hlen & 0xFF), header[9] = (char)(hlen >> 8);
        memcpy(header + 10, dict, (size_t)dl);
        memset(header + 10 + dl, ' ', (size_t)pad);
        header[10 + dl + pad] = '\n';
        hl = (size_t)(10 + hlen);
    }
    uint8_t *buf = pz_xmalloc(hl + (size_t)n * 4);
    memcpy(buf, header, hl);
    memcpy(buf + hl, t->data, (size_t)n * 4);
    pz_status st = pz_write_output(path, buf, hl + (size_t)n * 4);
    free(buf);
    return st;
}
