/* records.c — see records.h. */
#include "records.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *pz_slurp(const char *path) {
    char *t;
    if (access(path, F_OK) != 0 || pz_read_text(path, &t, NULL)) return NULL;
    return t;
}

int pz_json_num(const char *text, const char *key, double *v) {
    char pat[96];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(text, pat);
    if (!p) return 0;
    p += strlen(pat);
    if (!strncmp(p, "null", 4)) return 0; /* no value: *v is left as it was */
    char *end;
    const double d = strtod(p, &end);
    if (end == p) return 0;
    *v = d;
    return 1;
}

int pz_json_str(const char *text, const char *key, char *out, size_t cap) {
    char pat[96];
    snprintf(pat, sizeof pat, "\"%s\": \"", key);
    const char *p = strstr(text, pat);
    if (!p) return 0;
    p += strlen(pat);
    size_t n = 0;
    while (*p && *p != '"' && n + 1 < cap) {
        if (*p == '\\' && p[1]) p++;
        out[n++] = *p++;
    }
    out[n] = 0;
    return 1;
}
