/* SPDX-License-Identifier: MIT */
/* replay.c — the regression driver: runs a fuzz target's entry point on
 * every file of the given directories (the committed corpora: seeds and
 * every input that once failed), in the ordinary build, under whatever
 * sanitizers it has. A failure crashes or traps, as under libFuzzer.
 *   replay_TARGET DIR... */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return fprintf(stderr, "replay: cannot open %s\n", path), 1;
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0, n;
    uint8_t chunk[65536];
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (len + n > cap) {
            cap = 2 * (len + n);
            uint8_t *b = realloc(buf, cap);
            if (!b) return fprintf(stderr, "replay: out of memory\n"), free(buf), fclose(f), 1;
            buf = b;
        }
        memcpy(buf + len, chunk, n), len += n;
    }
    fclose(f);
    /* an exact-size copy, so that ASan sees any read past the input */
    uint8_t *exact = malloc(len ? len : 1);
    if (!exact) return free(buf), 1;
    if (len) memcpy(exact, buf, len);
    free(buf);
    LLVMFuzzerTestOneInput(exact, len);
    free(exact);
    return 0;
}

static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv) {
    int files = 0, bad = 0;
    for (int a = 1; a < argc; a++) {
        DIR *d = opendir(argv[a]);
        if (!d) return fprintf(stderr, "replay: no directory %s\n", argv[a]), 1;
        char *names[4096];
        int n = 0;
        for (struct dirent *e; (e = readdir(d)) && n < 4096;)
            if (e->d_name[0] != '.') names[n++] = strdup(e->d_name);
        closedir(d);
        qsort(names, (size_t)n, sizeof *names, cmp);
        for (int i = 0; i < n; i++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[a], names[i]);
            bad |= replay_file(path);
            files++;
            free(names[i]);
        }
    }
    if (files == 0) return fprintf(stderr, "replay: no inputs\n"), 1;
    printf("replay: %d inputs, no failure\n", files);
    return bad;
}
