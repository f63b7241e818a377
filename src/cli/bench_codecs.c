/* bench_codecs.c — `pipezip bench codecs`, in the manner of `zstd -b`: for
 * each codec, tensor size and value distribution, encode and decode
 * throughput in GB/s of float32 input, bits per element and relative error;
 * and, in the same run, the machine's memory read bandwidth, with each
 * throughput as a fraction of it. Medians of repeated runs. */
#include "cli/xalloc.h"
#include "cli.h"
#include "args.h"
#include "pipezip/codec.h"
#include "base/base.h"
#include "kernels/codec_kernels.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "Usage: pipezip bench codecs [OPTIONS]\n"
    "\n"
    "Encode/decode throughput (GB/s of float32 input), bits per element and\n"
    "relative error of each codec on activation-like (post-ReLU, heavy tail) and\n"
    "gradient-like (Gaussian with outliers) tensors, beside the memory read\n"
    "bandwidth measured in the same run. Medians of --repeat runs. Not a test.\n";

static const char *default_codecs =
    "fp16;bf16;q2;q4;q8;q4:sym;q8:stoch;topk:0.01;topk:0.1;topk:0.3;randk:0.1;randtopk:0.1;ms:0.01,bits=2;ms:0.1,bits=2";

/* read bandwidth: a sum over a buffer far larger than the caches */
/* The memory read bandwidth probe: 256 MiB read once per pass with an XOR
 * of the bits (a one-cycle dependency per vector, so the loop waits on
 * memory, not on its own arithmetic). The machine's bandwidth drifts (a
 * shared VM moved between 24 and 38 GB/s within minutes), so every codec
 * row takes its own probe passes interleaved with its timed runs and is
 * compared with those. */
typedef struct {
    uint32_t *w;
    size_t n;
    int threads;
} probe;

static void probe_init(probe *p, int threads) {
    p->n = (size_t)64 << 20;
    p->threads = threads;
    p->w = (uint32_t *)(void *)pz_xfloats(p->n);
#pragma omp parallel for num_threads(threads)
    for (size_t i = 0; i < p->n; i++) p->w[i] = (uint32_t)(i & 1023);
}

static double probe_pass(const probe *p) {
    static volatile uint32_t sink;
    const uint32_t *w = p->w;
    const size_t n = p->n;
    const double t0 = pz_now();
    uint32_t s = 0;
#pragma omp parallel for simd reduction(^ : s) num_threads(p->threads)
    for (size_t i = 0; i < n; i++) s ^= w[i];
    const double t = pz_now() - t0;
    sink ^= s;
    return 4.0 * (double)n / t / 1e9;
}

static void fill(float *x, int64_t n, int activation) {
    pz_rng r;
    pz_rng_seed(&r, 12345);
    for (int64_t i = 0; i < n; i++) {
        const float z = pz_rng_normal(&r);
        if (activation) x[i] = z > 0 ? z * z * (1.0f + 0.5f * (float)(i % 7) / 7.0f) : 0.0f;
        else x[i] = 0.01f * z * ((i % 97) == 0 ? 8.0f : 1.0f);
    }
}

int bench_codecs(int argc, char **argv) {
    const char *codecs = default_codecs, *sizes = "1e4,1e5,1e6,1e7", *format = "text", *data = "both";
    int threads = 1, repeat = 5;
    const pz_opt opts[] = {
        {"codecs", OPT_STR, &codecs, "LIST", "codec specs separated by ';'", 0, 0, NULL},
        {"sizes", OPT_STR, &sizes, "LIST", "tensor sizes in elements, ','-separated (1e4 .. 1e8)", 0, 0, NULL},
        {"data", OPT_STR, &data, "KIND", "value distribution", 0, 0, "activation|gradient|both"},
        {"threads", OPT_INT, &threads, "N", "threads for codecs and the bandwidth probe", 1, 1024, NULL},
        {"repeat", OPT_INT, &repeat, "N", "timed runs per measurement (median)", 1, 1000, NULL},
        {"format", OPT_STR, &format, "FMT", "output format", 0, 0, "text|json"},
    };
    int rc = pz_parse_args("pipezip bench codecs", opts, (int)(sizeof opts / sizeof *opts), argc, argv, 3, usage, NULL, 0, NULL);
    if (rc == 1) return 0;
    if (rc) return 2;
    pz_set_threads(threads);
    int64_t ns[16];
    int n_sizes = 0;
    char sbuf[256];
    snprintf(sbuf, sizeof sbuf, "%s", sizes);
    char *save = NULL;
    for (char *t = strtok_r(sbuf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *end;
        const double v = strtod(t, &end);
        if (end == t || *end || v < 16 || v > 1e8 || n_sizes == 16) {
            fprintf(stderr, "pipezip bench codecs: --sizes: '%s' is not a size in 16..1e8\n", t);
            return 2;
        }
        ns[n_sizes++] = (int64_t)v / 16 * 16;
    }
    char cbuf[2048];
    snprintf(cbuf, sizeof cbuf, "%s", codecs);
    char *specs[64];
    int n_specs = 0;
    save = NULL;
    for (char *t = strtok_r(cbuf, ";", &save); t && n_specs < 64; t = strtok_r(NULL, ";", &save)) {
        pz_codec *c;
        if (pz_codec_create(&c, t)) {
            fprintf(stderr, "pipezip bench codecs: %s\n", pz_last_error());
            return 2;
        }
        pz_codec_free(c);
        specs[n_specs++] = t;
    }
    const int json = !strcmp(format, "json");
    probe pr;
    probe_init(&pr, threads);
    double bw0[5];
    for (int r = 0; r < 5; r++) bw0[r] = probe_pass(&pr);
    const double bw = pz_median(bw0, 5);
    if (json)
        printf("{\"bench\": \"memory_read\", \"threads\": %d, \"gb_per_s\": %.2f, \"kernels\": \"%s\"}\n", threads, bw,
               pz_codec_kernels_best()->name);
    else
        printf("pipezip bench codecs: %d thread%s, %s kernels, memory read bandwidth %.1f GB/s at the start (median of 5);\n"
               "%%bw: against the read bandwidth probed between the same row's timed runs (read GB/s)\n",
               threads, threads > 1 ? "s" : "", pz_codec_kernels_best()->name, bw);
    if (!json)
        printf("%-40s %9s %-10s %9s %5s %9s %5s %8s %9s %9s\n", "codec", "elements", "data", "enc GB/s", "%bw", "dec GB/s", "%bw",
               "bits/el", "rel.err", "read GB/s");
    for (int si = 0; si < n_sizes; si++) {
        const int64_t n = ns[si], shape[2] = {16, n / 16};
        float *x = pz_xfloats((size_t)n), *y = pz_xfloats((size_t)n);
        uint32_t ids[16];
        for (int i = 0; i < 16; i++) ids[i] = (uint32_t)i;
        for (int kind = 0; kind < 2; kind++) {
            const int activation = kind == 0;
            if ((activation && !strcmp(data, "gradient")) || (!activation && !strcmp(data, "activation"))) continue;
            fill(x, n, activation);
            for (int s = 0; s < n_specs; s++) {
                pz_codec *tx, *rx;
                pz_codec_create(&tx, specs[s]);
                pz_codec_create(&rx, specs[s]);
                const size_t cap = pz_codec_max_frame_bytes(tx, 2, shape);
                uint8_t *frame = pz_xmalloc(cap);
                size_t len;
                pz_codec_stats st;
                if (pz_codec_encode(tx, x, 2, shape, ids, frame, cap, &len, &st)) {
                    fprintf(stderr, "pipezip bench codecs: %s: %s\n", specs[s], pz_last_error());
                    return 1;
                }
                double *te = pz_xcalloc((size_t)repeat, sizeof(double)), *td = pz_xcalloc((size_t)repeat, sizeof(double));
                double *tb = pz_xcalloc((size_t)repeat, sizeof(double));
                for (int r = 0; r < repeat; r++) {
                    tb[r] = probe_pass(&pr);
                    double t0 = pz_now();
                    pz_codec_encode(tx, x, 2, shape, ids, frame, cap, &len, NULL);
                    te[r] = pz_now() - t0;
                    t0 = pz_now();
                    if (pz_codec_decode(rx, frame, len, y, (size_t)n, NULL, NULL)) {
                        fprintf(stderr, "pipezip bench codecs: %s: %s\n", specs[s], pz_last_error());
                        return 1;
                    }
                    td[r] = pz_now() - t0;
                }
                const double enc = 4.0 * n / pz_median(te, repeat) / 1e9, dec = 4.0 * n / pz_median(td, repeat) / 1e9;
                const double rbw = pz_median(tb, repeat);
                if (json)
                    printf("{\"bench\": \"codec\", \"codec\": \"%s\", \"elements\": %lld, \"data\": \"%s\", \"threads\": %d, "
                           "\"encode_gb_per_s\": %.3f, \"decode_gb_per_s\": %.3f, \"encode_fraction_of_bw\": %.3f, "
                           "\"decode_fraction_of_bw\": %.3f, \"bits_per_element\": %.4f, \"rel_error\": %.6g, "
                           "\"encode_ms\": %.4f, \"decode_ms\": %.4f, \"read_gb_per_s\": %.3f}\n",
                           specs[s], (long long)n, activation ? "activation" : "gradient", threads, enc, dec, enc / rbw, dec / rbw,
                           st.bits_per_element, st.rel_error, 1e3 * pz_median(te, repeat), 1e3 * pz_median(td, repeat), rbw);
                else
                    printf("%-40s %9lld %-10s %9.2f %4.0f%% %9.2f %4.0f%% %8.3f %9.4f %9.1f\n", specs[s], (long long)n,
                           activation ? "activation" : "gradient", enc, 100 * enc / rbw, dec, 100 * dec / rbw, st.bits_per_element,
                           st.rel_error, rbw);
                fflush(stdout);
                free(te), free(td), free(tb), free(frame);
                pz_codec_free(tx), pz_codec_free(rx);
            }
        }
        free(x), free(y);
    }
    free(pr.w);
    return 0;
}
