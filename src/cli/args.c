/* args.c — strict option parsing with helpful errors. */
#include "args.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int edit_distance(const char *a, const char *b) {
    int la = (int)strlen(a), lb = (int)strlen(b);
    if (la > 63 || lb > 63) return 99;
    int d[64][64];
    for (int i = 0; i <= la; i++) d[i][0] = i;
    for (int j = 0; j <= lb; j++) d[0][j] = j;
    for (int i = 1; i <= la; i++)
        for (int j = 1; j <= lb; j++) {
            int c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < c) c = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < c) c = d[i][j - 1] + 1;
            d[i][j] = c;
        }
    return d[la][lb];
}

/* a choice "word:ARG" takes any value that starts with "word:" and has an argument */
static int in_choices(const char *v, const char *choices) {
    size_t n = strlen(v);
    for (const char *p = choices; *p;) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && !strncmp(p, v, n)) return 1;
        const char *colon = memchr(p, ':', len);
        if (colon && n > (size_t)(colon - p) + 1 && !strncmp(p, v, (size_t)(colon - p) + 1)) return 1;
        if (!bar) break;
        p = bar + 1;
    }
    return 0;
}

static int set_value(const char *cmd, const pz_opt *o, const char *v) {
    char *end;
    const int ranged = !(o->min == 0 && o->max == 0);
    errno = 0;
    switch (o->type) {
    case OPT_STR:
        if (o->choices && !in_choices(v, o->choices)) {
            fprintf(stderr, "%s: --%s '%s' is not one of: %s\n", cmd, o->name, v, o->choices);
            return 2;
        }
        if (!*v) {
            fprintf(stderr, "%s: --%s needs a non-empty value\n", cmd, o->name);
            return 2;
        }
        *(const char **)o->dst = v;
        return 0;
    case OPT_INT:
    case OPT_I64: {
        long long x = strtoll(v, &end, 10);
        if (end == v || *end || errno) {
            fprintf(stderr, "%s: --%s expects an integer, got '%s'\n", cmd, o->name, v);
            return 2;
        }
        if (ranged && (x < o->min || x > o->max)) {
            fprintf(stderr, "%s: --%s must be in %.0f..%.0f, got %lld\n", cmd, o->name, o->min, o->max, x);
            return 2;
        }
        if (o->type == OPT_INT) *(int *)o->dst = (int)x;
        else *(int64_t *)o->dst = x;
        return 0;
    }
    case OPT_U64: {
        if (*v == '-') {
            fprintf(stderr, "%s: --%s expects a non-negative integer, got '%s'\n", cmd, o->name, v);
            return 2;
        }
        unsigned long long x = strtoull(v, &end, 10);
        if (end == v || *end || errno) {
            fprintf(stderr, "%s: --%s expects a non-negative integer, got '%s'\n", cmd, o->name, v);
            return 2;
        }
        *(uint64_t *)o->dst = x;
        return 0;
    }
    case OPT_FLOAT:
    case OPT_FLOAT64: {
        double x = strtod(v, &end);
        if (end == v || *end || !isfinite(x)) {
            fprintf(stderr, "%s: --%s expects a number, got '%s'\n", cmd, o->name, v);
            return 2;
        }
        if (ranged && (x < o->min || x > o->max)) {
            fprintf(stderr, "%s: --%s must be in [%g, %g], got %g\n", cmd, o->name, o->min, o->max, x);
            return 2;
        }
        if (o->type == OPT_FLOAT64) *(double *)o->dst = x;
        else *(float *)o->dst = (float)x;
        return 0;
    }
    case OPT_BOOL:
        if (!strcmp(v, "on") || !strcmp(v, "true") || !strcmp(v, "1") || !strcmp(v, "yes")) *(int *)o->dst = 1;
        else if (!strcmp(v, "off") || !strcmp(v, "false") || !strcmp(v, "0") || !strcmp(v, "no")) *(int *)o->dst = 0;
        else {
            fprintf(stderr, "%s: --%s expects on or off, got '%s'\n", cmd, o->name, v);
            return 2;
        }
        return 0;
    }
    return 2;
}

void pz_print_help(FILE *out, const char *usage, const pz_opt *opts, int n) {
    fputs(usage, out);
    if (n) fprintf(out, "\nOptions:\n");
    for (int i = 0; i < n; i++) {
        const pz_opt *o = &opts[i];
        char left[64];
        if (o->type == OPT_BOOL) snprintf(left, sizeof left, "--[no-]%s", o->name);
        else snprintf(left, sizeof left, "--%s %s", o->name, o->metavar ? o->metavar : "VALUE");
        fprintf(out, "  %-26s %s", left, o->help);
        /* show the default: the value the table's target holds before parsing */
        switch (o->type) {
        case OPT_STR: if (*(const char **)o->dst) fprintf(out, " [%s]", *(const char **)o->dst); break;
        case OPT_INT: fprintf(out, " [%d]", *(int *)o->dst); break;
        case OPT_I64: fprintf(out, " [%lld]", (long long)*(int64_t *)o->dst); break;
        case OPT_U64: fprintf(out, " [%llu]", (unsigned long long)*(uint64_t *)o->dst); break;
        case OPT_FLOAT: fprintf(out, " [%g]", *(float *)o->dst); break;
        case OPT_FLOAT64: fprintf(out, " [%g]", *(double *)o->dst); break;
        case OPT_BOOL: fprintf(out, " [%s]", *(int *)o->dst < 0 ? "auto" : *(int *)o->dst ? "on" : "off"); break;
        }
        fputc('\n', out);
    }
    fprintf(out, "  %-26s %s\n", "-h, --help", "show this help");
}

int pz_parse_args(const char *cmd, const pz_opt *opts, int n, int argc, char **argv, int first,
                  const char *usage, char **pos, int max_pos, int *n_pos) {
    if (n_pos) *n_pos = 0;
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            pz_print_help(stdout, usage, opts, n);
            return 1;
        }
        if (strncmp(a, "--", 2) || !a[2]) {
            if (a[0] == '-' && a[1]) {
                fprintf(stderr, "%s: unknown option '%s' (options are long, like --epochs; see %s --help)\n", cmd, a, cmd);
                return 2;
            }
            if (!pos || !n_pos || *n_pos >= max_pos) {
                fprintf(stderr, "%s: unexpected argument '%s' (see %s --help)\n", cmd, a, cmd);
                return 2;
            }
            pos[(*n_pos)++] = argv[i];
            continue;
        }
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const pz_opt *o = NULL;
        int negated = 0;
        for (int k = 0; k < n && !o; k++) {
            if (strlen(opts[k].name) == len && !strncmp(opts[k].name, name, len)) o = &opts[k];
            else if (opts[k].type == OPT_BOOL && len == strlen(opts[k].name) + 3 && !strncmp(name, "no-", 3) &&
                     !strncmp(name + 3, opts[k].name, len - 3))
                o = &opts[k], negated = 1;
        }
        if (!o) {
            char given[64];
            snprintf(given, sizeof given, "%.*s", (int)(len < 63 ? len : 63), name);
            int best = 99;
            const char *near = NULL;
            for (int k = 0; k < n; k++) {
                int d = edit_distance(given, opts[k].name);
                if (d < best) best = d, near = opts[k].name;
            }
            if (near && best <= 3)
                fprintf(stderr, "%s: unknown option '--%s'; did you mean '--%s'? (see %s --help)\n", cmd, given, near, cmd);
            else
                fprintf(stderr, "%s: unknown option '--%s' (see %s --help)\n", cmd, given, cmd);
            return 2;
        }
        if (o->type == OPT_BOOL && !eq) {
            *(int *)o->dst = !negated;
            continue;
        }
        if (negated) {
            fprintf(stderr, "%s: --no-%s takes no value\n", cmd, o->name);
            return 2;
        }
        const char *v;
        if (eq) v = eq + 1;
        else if (i + 1 < argc) v = argv[++i];
        else {
            fprintf(stderr, "%s: --%s needs a value (%s)\n", cmd, o->name, o->metavar ? o->metavar : "VALUE");
            return 2;
        }
        int rc = set_value(cmd, o, v);
        if (rc) return rc;
    }
    return 0;
}
