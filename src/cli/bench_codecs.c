/* SPDX-License-Identifier: MIT */
/* bench_codecs.c — `pipezip bench codecs`: its flags; the measurement is
 * the tool's (tool/bench_codecs.c). */
#include "cli.h"
#include "kernels/codec_kernels.h"

#include <sys/wait.h>
#include <unistd.h>
#include "args.h"
#include "tensor_file.h"
#include "tool/bench.h"
#include "pipezip/codec.h"

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

/* --kernels: a kernel set is chosen once per process (PZ_CODEC_KERNELS,
 * before the first codec): one set here, or each set in a child of its
 * own. Returns an exit status when it is done (all, or an error), -1 to
 * measure here. */
static int use_kernels(const char *kernels, int argc, char **argv) {
    static const char *const sets[] = {"avx512", "avx2", "scalar"};
    const pz_codec_kernels *(*const getters[])(void) = {pz_codec_kernels_avx512, pz_codec_kernels_avx2, pz_codec_kernels_scalar};
    if (!strcmp(kernels, "all")) {
        int worst = 0;
        for (int i = 0; i < 3; i++) {
            if (!getters[i]()) {
                printf("(%s kernels: this CPU does not run them)\n", sets[i]);
                continue;
            }
            fflush(stdout);
            const pid_t pid = fork();
            if (pid == 0) {
                setenv("PZ_CODEC_KERNELS", sets[i], 1);
                char flag[32];
                snprintf(flag, sizeof flag, "--kernels=%s", sets[i]);
                char *args[64];
                int n = 0;
                for (int a = 0; a < argc && n < 62; a++)
                    if (strncmp(argv[a], "--kernels", 9) && (a == 0 || strcmp(argv[a - 1], "--kernels"))) args[n++] = argv[a];
                args[n++] = flag, args[n] = NULL;
                _exit(bench_codecs(n, args));
            }
            int status = 0;
            if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) worst = 1;
        }
        return worst;
    }
    if (strcmp(kernels, "best")) {
        int found = -1;
        for (int i = 0; i < 3; i++)
            if (!strcmp(kernels, sets[i])) found = i;
        if (found < 0) {
            fprintf(stderr, "pipezip bench codecs: --kernels '%s' is not best, scalar, avx2, avx512 or all\n", kernels);
            return 2;
        }
        if (!getters[found]()) {
            fprintf(stderr, "pipezip bench codecs: --kernels %s: this CPU does not run them\n", kernels);
            return 2;
        }
        setenv("PZ_CODEC_KERNELS", kernels, 1);
        if (strcmp(pz_codec_kernels_best()->name, kernels)) {
            fprintf(stderr, "pipezip bench codecs: --kernels %s: the %s kernels were chosen before (PZ_CODEC_KERNELS)\n", kernels,
                    pz_codec_kernels_best()->name);
            return 2;
        }
    }
    return -1;
}

int bench_codecs(int argc, char **argv) {
    const char *codecs = default_codecs, *sizes = "1e4,1e5,1e6,1e7", *format = "text", *data = "both";
    int threads = 1, repeat = 5, width = 0;
    const char *kernels = "best";
    const pz_opt opts[] = {
        {"kernels", OPT_STR, &kernels, "SET", "which codec kernels: the widest the CPU runs, one set, or every set it runs, one table each", 0, 0,
         "best|scalar|avx2|avx512|all"},
        {"codecs", OPT_STR, &codecs, "LIST", "codec specs separated by ';'", 0, 0, NULL},
        {"sizes", OPT_STR, &sizes, "LIST", "tensor sizes in elements, ','-separated (1e4 .. 1e8)", 0, 0, NULL},
        {"data", OPT_STR, &data, "KIND", "value distribution, or a tensor file (.npy, e.g. from pipezip train --dump-boundaries) "
         "taken as it is, its shape the frames' (--sizes and --width then unused)", 0, 0, NULL},
        {"threads", OPT_INT, &threads, "N", "threads for codecs and the bandwidth probe", 1, 1024, NULL},
        {"width", OPT_INT, &width, "D", "tensors of 16 x tokens x D, a transformer's (per=token: vectors of D; each size rounded down to a multiple of 16 D); 0: 16 x size/16", 0, 1 << 20, NULL},
        {"repeat", OPT_INT, &repeat, "N", "timed runs per measurement (median)", 1, 1000, NULL},
        {"format", OPT_STR, &format, "FMT", "output format", 0, 0, "text|json"},
    };
    int rc = pz_parse_args("pipezip bench codecs", opts, (int)(sizeof opts / sizeof *opts), argc, argv, 3, usage, NULL, 0, NULL);
    if (rc == 1) return 0;
    if (rc) return 2;
    const int kr = use_kernels(kernels, argc, argv);
    if (kr >= 0) return kr;
    long long ns[16];
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
        const long long unit = 16LL * (width ? width : 1);
        if ((long long)v < unit) {
            fprintf(stderr, "pipezip bench codecs: --sizes: '%s' is less than 16 tokens of --width %d\n", t, width);
            return 2;
        }
        ns[n_sizes++] = (long long)v / unit * unit;
    }
    char cbuf[2048];
    snprintf(cbuf, sizeof cbuf, "%s", codecs);
    const char *specs[64];
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
    pz_tensor t = {0};
    const int kind = !strcmp(data, "activation") || !strcmp(data, "gradient") || !strcmp(data, "both");
    if (!kind && pz_tensor_read(data, NULL, &t)) {
        fprintf(stderr, "pipezip bench codecs: --data '%s' is not activation, gradient, both or a tensor file: %s\n", data, pz_last_error());
        return 2;
    }
    const char *base = strrchr(data, '/');
    const bench_codecs_options o = {.specs = specs, .n_specs = n_specs, .sizes = ns, .n_sizes = n_sizes,
                                    .activation = strcmp(data, "gradient") != 0, .gradient = strcmp(data, "activation") != 0,
                                    .width = width, .threads = threads, .repeat = repeat, .json = !strcmp(format, "json"),
                                    .tensor = kind ? NULL : &t, .tensor_name = base ? base + 1 : data};
    const int rc2 = tool_bench_codecs(&o, stdout);
    free(t.data);
    return rc2;
}
