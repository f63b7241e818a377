/* SPDX-License-Identifier: MIT */
/* bench_codecs.c — the measurement behind `pipezip bench codecs`, in the
 * manner of `zstd -b`: for each codec, tensor size and value distribution,
 * encode and decode throughput in GB/s of float32 input, bits per element
 * and relative error; and, in the same run, the machine's memory read
 * bandwidth, with each throughput as a fraction of it. Medians of repeated
 * runs. */
#include "tool/bench.h"
#include "tool/xalloc.h"
#include "pipezip/codec.h"
#include "base/base.h"
#include "kernels/codec_kernels.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

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

/* one codec on one tensor: encode and decode times (medians), each run
 * beside a bandwidth probe pass; prints the row */
static int bench_row(const bench_codecs_options *o, const probe *pr, const char *spec, const float *x, float *y, int64_t n,
                     int activation, FILE *out) {
    int64_t shape[PZ_MAX_DIMS] = {16, o->width ? n / 16 / o->width : n / 16, o->width};
    int ndim = o->width ? 3 : 2;
    if (o->tensor) ndim = o->tensor->ndim, memcpy(shape, o->tensor->shape, sizeof shape);
    const char *data = o->tensor ? o->tensor_name : activation ? "activation" : "gradient";
    uint32_t *ids = pz_xcalloc((size_t)shape[0], sizeof *ids);
    for (int64_t i = 0; i < shape[0]; i++) ids[i] = (uint32_t)i;
    pz_codec *tx, *rx;
    pz_codec_create(&tx, spec);
    pz_codec_create(&rx, spec);
    const size_t cap = pz_codec_max_frame_bytes(tx, ndim, shape);
    uint8_t *frame = pz_xmalloc(cap);
    size_t len;
    pz_codec_stats st;
    const int repeat = o->repeat;
    double *te = pz_xcalloc((size_t)repeat, sizeof(double)), *td = pz_xcalloc((size_t)repeat, sizeof(double));
    double *tb = pz_xcalloc((size_t)repeat, sizeof(double));
    int rc = 0;
    if (pz_codec_encode(tx, x, ndim, shape, ids, frame, cap, &len, &st)) rc = 1;
    for (int r = 0; r < repeat && !rc; r++) {
        tb[r] = probe_pass(pr);
        double t0 = pz_now();
        pz_codec_encode(tx, x, ndim, shape, ids, frame, cap, &len, NULL);
        te[r] = pz_now() - t0;
        t0 = pz_now();
        if (pz_codec_decode(rx, frame, len, y, (size_t)n, NULL, NULL)) rc = 1;
        td[r] = pz_now() - t0;
    }
    if (rc) fprintf(stderr, "pipezip bench codecs: %s: %s\n", spec, pz_last_error());
    else {
        const double enc = 4.0 * n / pz_median(te, repeat) / 1e9, dec = 4.0 * n / pz_median(td, repeat) / 1e9;
        const double rbw = pz_median(tb, repeat);
        if (o->json)
            fprintf(out, "{\"bench\": \"codec\", \"codec\": \"%s\", \"elements\": %lld, \"width\": %lld, \"data\": \"%s\", \"threads\": %d, "
                         "\"encode_gb_per_s\": %.3f, \"decode_gb_per_s\": %.3f, \"encode_fraction_of_bw\": %.3f, "
                         "\"decode_fraction_of_bw\": %.3f, \"bits_per_element\": %.4f, \"rel_error\": %.6g, "
                         "\"encode_ms\": %.4f, \"decode_ms\": %.4f, \"read_gb_per_s\": %.3f}\n",
                    spec, (long long)n, (long long)shape[ndim - 1], data, o->threads, enc, dec, enc / rbw, dec / rbw,
                    st.bits_per_element, st.rel_error, 1e3 * pz_median(te, repeat), 1e3 * pz_median(td, repeat), rbw);
        else
            fprintf(out, "%-40s %9lld %-10s %9.2f %4.0f%% %9.2f %4.0f%% %8.3f %9.4f %9.1f\n", spec, (long long)n, data, enc, 100 * enc / rbw, dec, 100 * dec / rbw, st.bits_per_element,
                    st.rel_error, rbw);
        fflush(out);
    }
    free(te), free(td), free(tb), free(frame), free(ids);
    pz_codec_free(tx), pz_codec_free(rx);
    return rc;
}

int tool_bench_codecs(const bench_codecs_options *o, FILE *out) {
    pz_set_threads(o->threads);
    probe pr;
    probe_init(&pr, o->threads);
    double bw0[5];
    for (int r = 0; r < 5; r++) bw0[r] = probe_pass(&pr);
    const double bw = pz_median(bw0, 5);
    if (o->json)
        fprintf(out, "{\"bench\": \"memory_read\", \"threads\": %d, \"gb_per_s\": %.2f, \"kernels\": \"%s\"}\n", o->threads, bw,
                pz_codec_kernels_best()->name);
    else {
        fprintf(out, "pipezip bench codecs: %d thread%s, %s kernels, memory read bandwidth %.1f GB/s at the start (median of 5);\n"
                     "tensors of %s%s;\n"
                     "%%bw: against the read bandwidth probed between the same row's timed runs (read GB/s)\n",
                o->threads, o->threads > 1 ? "s" : "", pz_codec_kernels_best()->name, bw,
                o->tensor ? "" : "16 samples x ", o->tensor ? "a file's shape, as it is" : o->width ? "tokens x width" : "size/16 (per=token: a vector of size/16)");
        fprintf(out, "%-40s %9s %-10s %9s %5s %9s %5s %8s %9s %9s\n", "codec", "elements", "data", "enc GB/s", "%bw", "dec GB/s", "%bw",
                "bits/el", "rel.err", "read GB/s");
    }
    int rc = 0;
    if (o->tensor) { /* a real run's tensor, as it is */
        int64_t n = 1;
        for (int i = 0; i < o->tensor->ndim; i++) n *= o->tensor->shape[i];
        float *y = pz_xfloats((size_t)n);
        for (int s = 0; s < o->n_specs && !rc; s++) rc = bench_row(o, &pr, o->specs[s], o->tensor->data, y, n, 0, out);
        free(y), free(pr.w);
        return rc;
    }
    for (int si = 0; si < o->n_sizes && !rc; si++) {
        const int64_t n = o->sizes[si];
        float *x = pz_xfloats((size_t)n), *y = pz_xfloats((size_t)n);
        for (int kind = 0; kind < 2 && !rc; kind++) {
            const int activation = kind == 0;
            if (activation ? !o->activation : !o->gradient) continue;
            fill(x, n, activation);
            for (int s = 0; s < o->n_specs && !rc; s++) rc = bench_row(o, &pr, o->specs[s], x, y, n, activation, out);
        }
        free(x), free(y);
    }
    free(pr.w);
    return rc;
}
