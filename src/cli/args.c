/* SPDX-License-Identifier: MIT */
/* args.c — strict option parsing with helpful errors. */
#include "args.h"
#include "pipezip/status.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* optimal string alignment distance: insertions, deletions, substitutions
 * and adjacent transpositions */
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
            /* two swapped letters (--modle) are one slip, not two */
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < c)
                c = d[i - 2][j - 2] + 1;
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
    if (o->set) { /* the setting's own door checks type, range and values */
        char flag[100];
        snprintf(flag, sizeof flag, "--%s", o->name);
        if (!o->set(o->ctx, o->id, v, flag)) return 0;
        fprintf(stderr, "%s: %s\n", cmd, pz_last_error());
        return 2;
    }
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

/* the option named name[0..len), or its --no- form */
static const pz_opt *find_opt(const pz_opt *opts, int n, const char *name, size_t len, int *negated) {
    *negated = 0;
    for (int k = 0; k < n; k++) {
        if (strlen(opts[k].name) == len && !strncmp(opts[k].name, name, len)) return &opts[k];
        if (opts[k].type == OPT_BOOL && len == strlen(opts[k].name) + 3 && !strncmp(name, "no-", 3) &&
            !strncmp(name + 3, opts[k].name, len - 3)) {
            *negated = 1;
            return &opts[k];
        }
    }
    return NULL;
}

/* PyTorch's and other trainers' spellings of pipezip's options; used only
 * when the command has the pipezip option */
static const char *const alias_pairs[][2] = {
        {"batch-size", "batch"}, {"bs", "batch"}, {"train-batch-size", "batch"}, {"wd", "weight-decay"},
        {"learning-rate", "lr"}, {"num-epochs", "epochs"}, {"n-epochs", "epochs"}, {"max-epochs", "epochs"},
        {"arch", "model"}, {"dataset", "data"}, {"data-root", "data-dir"}, {"root", "data-dir"},
        {"output-dir", "out"}, {"output", "out"}, {"save-dir", "out"}, {"num-threads", "threads"},
        {"log-interval", "log-every"}, {"print-freq", "log-every"}, {"scheduler", "schedule"},
        {"lr-scheduler", "schedule"}, {"clip-grad-norm", "clip-norm"}, {"grad-clip", "clip-norm"},
        {"max-grad-norm", "clip-norm"}, {"warmup-epochs", "warmup"}, {"opt", "optimizer"}, {"optim", "optimizer"},
        {"micro-batch", "micro-batches"}, {"chunks", "micro-batches"}, {"resume-from", "resume"},
};

static const char *alias_of(const char *name) {
    for (size_t i = 0; i < sizeof alias_pairs / sizeof *alias_pairs; i++)
        if (!strcmp(name, alias_pairs[i][0])) return alias_pairs[i][1];
    return NULL;
}

void pz_print_help(FILE *out, const char *usage, const pz_opt *opts, int n) {
    fputs(usage, out);
    if (n) fprintf(out, "\nOptions:\n");
    for (int i = 0; i < n; i++) {
        const pz_opt *o = &opts[i];
        char left[64];
        if (o->type == OPT_BOOL && !strncmp(o->name, "no-", 3)) snprintf(left, sizeof left, "--%s", o->name);
        else if (o->type == OPT_BOOL) snprintf(left, sizeof left, "--[no-]%s", o->name);
        else snprintf(left, sizeof left, "--%s %s", o->name, o->metavar ? o->metavar : "VALUE");
        fprintf(out, "  %-26s %s", left, o->help);
        if (o->type == OPT_STR && o->choices) fprintf(out, "; one of %s", o->choices); /* every allowed value */
        /* show the default: the value the table's target holds before parsing */
        if (o->set) {
            if (o->shown) fprintf(out, " [%s]", o->shown);
            fputc('\n', out);
            continue;
        }
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
    /* the other tools' spellings this command takes */
    int any = 0;
    for (size_t i = 0; i < sizeof alias_pairs / sizeof *alias_pairs; i++) {
        int negated;
        if (!find_opt(opts, n, alias_pairs[i][1], strlen(alias_pairs[i][1]), &negated)) continue;
        fprintf(out, "%s--%s (--%s)", any ? ", " : "\nAlso accepted, as other trainers spell them: ", alias_pairs[i][0],
                alias_pairs[i][1]);
        any = 1;
    }
    if (any) fprintf(out, "; and _ for - in any option (--weight_decay).\n");
}

/* 0: a switch, 1: a number, 2: a word */
static int opt_kind(const pz_opt *o) {
    return o->type == OPT_BOOL ? 0 : o->type == OPT_STR ? 2 : 1;
}

/* the kind of value that follows an unknown option: -1 when it cannot tell */
static int value_kind(const char *v, int attached) {
    if (!v || (!attached && !strncmp(v, "--", 2))) return attached ? -1 : 0;
    char *end;
    strtod(v, &end);
    if (end != v && !*end) return 1;
    return -1; /* a word: a string option, or a number with a unit (5ms), or a file */
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
        const char *eq = strchr(a + 2, '=');
        const size_t typed_len = eq ? (size_t)(eq - (a + 2)) : strlen(a + 2);
        char typed[96], spelled[96]; /* the name as given, and with underscores read as dashes (--batch_size) */
        snprintf(typed, sizeof typed, "%.*s", (int)(typed_len < 95 ? typed_len : 95), a + 2);
        snprintf(spelled, sizeof spelled, "%s", typed);
        for (char *c = spelled; *c; c++)
            if (*c == '_') *c = '-';
        const char *name = spelled;
        size_t len = strlen(spelled);
        int negated;
        const pz_opt *o = find_opt(opts, n, name, len, &negated);
        if (!o) { /* a name users of other tools type: --batch-size, --wd, --learning-rate, ... */
            const char *canon = alias_of(name);
            const pz_opt *c = canon ? find_opt(opts, n, canon, strlen(canon), &negated) : NULL;
            if (c) o = c, name = canon, len = strlen(canon); /* else the error names what was typed */
        }
        if (!o) {
            char given[64];
            snprintf(given, sizeof given, "%.*s", (int)(len < 63 ? len : 63), name);
            /* suggest only an option of the kind the value given is: a number
             * for a numeric option, none for a switch, else a word (--wd 0.1
             * is not --fwd 0.1) */
            const char *next = eq ? eq + 1 : i + 1 < argc ? argv[i + 1] : NULL;
            const int kind = value_kind(next, eq != NULL);
            int best = 99;
            const char *near = NULL;
            for (int k = 0; k < n; k++) {
                if (kind >= 0 && opt_kind(&opts[k]) != kind) continue;
                int d = edit_distance(given, opts[k].name);
                if (d < best) best = d, near = opts[k].name;
            }
            /* a misspelt alias (--batchsize, --wdd) names the option it stands for */
            for (size_t k = 0; k < sizeof alias_pairs / sizeof *alias_pairs; k++) {
                int neg;
                const pz_opt *c = find_opt(opts, n, alias_pairs[k][1], strlen(alias_pairs[k][1]), &neg);
                if (!c || (kind >= 0 && opt_kind(c) != kind)) continue;
                int d = edit_distance(given, alias_pairs[k][0]);
                if (d < best) best = d, near = c->name;
            }
            /* near enough to be a slip, not another word: one edit in a short
             * name (--wdd is not --lr), up to three in a longer one (--lrate) */
            const size_t glen = strlen(given);
            const int slack = glen <= 4 ? 1 : 3;
            if (near && best <= slack)
                fprintf(stderr, "%s: unknown option '--%s'; did you mean '--%s'? (see %s --help)\n", cmd, given, near, cmd);
            else
                fprintf(stderr, "%s: unknown option '--%s' (see %s --help)\n", cmd, given, cmd);
            return 2;
        }
        if (o->type == OPT_BOOL && !eq) {
            if (o->set) {
                pz_opt as_typed = *o;
                as_typed.name = typed;
                const int rc = set_value(cmd, &as_typed, negated ? "off" : "on");
                if (rc) return rc;
            } else *(int *)o->dst = !negated;
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
        pz_opt as_typed = *o; /* errors name the flag as it was given (--learning-rate, --batch_size) */
        as_typed.name = typed;
        int rc = set_value(cmd, &as_typed, v);
        if (rc) return rc;
    }
    return 0;
}
