/* spec.c — the codec spec grammar, in one place: codec specs, per-boundary
 * lists, the base codec for evaluation, "is lossless", and the help text,
 * all from the family and wrapper tables. Parsing is strict: every unknown
 * name, option or out-of-range value is an error that says what is accepted.
 *   list    := item ("," item)*          item := [N "="] spec
 *   spec    := base | wrapper "(" base ")" ("," wopt)*
 *   wrapper := "ef" | "ef21" | "aqsgd"
 *   base    := name [":" [F ","] option ("," option)*]
 * (a list splits only at a comma followed by "N=": specs keep their commas) */
#include "object.h"

#include <stdlib.h>
#include <string.h>

pz_status spec_bad(const char *spec, const char *what) { return pz_fail(PZ_ERR_ARG, "codec spec '%s': %s", spec, what); }

pz_status spec_unknown_option(const char *spec, const char *name, const char *key, const char *val) {
    char msg[400];
    snprintf(msg, sizeof msg, "unknown option '%s%s%s' for %s", key, val ? "=" : "", val ? val : "", name);
    return spec_bad(spec, msg);
}

pz_status spec_per(codec_params *p, const char *val, int channel_ok, const char *spec) {
    const pz_name *g = pz_name_find(frame_granularities, val);
    if (!g || (!channel_ok && g->value > GRAN_SAMPLE))
        return spec_bad(spec, channel_ok ? "per= takes tensor, sample, channel or token" : "per= takes tensor or sample");
    p->gran = g->value;
    return PZ_OK;
}

pz_status spec_values(codec_params *p, const char *v, int quant_ok, const char *spec) {
    const pz_name *t = pz_name_find(frame_value_types, v);
    if (t && t->value != VAL_QUANT) p->value_type = t->value;
    else if (quant_ok && v[0] == 'q' && v[1] >= '1' && v[1] <= '8' && !v[2]) p->value_type = VAL_QUANT, p->value_bits = v[1] - '0';
    else return spec_bad(spec, quant_ok ? "values= takes fp32, fp16, bf16 or q1..q8" : "values= takes fp32, fp16 or bf16");
    return PZ_OK;
}

int spec_option_word(codec_params *p, const char *key, const char *val, int mask) {
    char word[64];
    snprintf(word, sizeof word, "%s%s%s", key, val ? "=" : "", val ? val : "");
    for (int i = 0; i < frame_option_count; i++) {
        const frame_option *o = &frame_options[i];
        if (!(mask & o->bit)) continue;
        if (!strcmp(word, o->name)) return p->options |= o->bit, 1;
        if (!strcmp(word, o->off)) return p->options &= ~o->bit, 1;
    }
    return 0;
}

const char *option_word(int options, int bit) {
    for (int i = 0; i < frame_option_count; i++)
        if (frame_options[i].bit == bit) return options & bit ? frame_options[i].name : frame_options[i].off;
    return "?";
}

void values_name(const codec_params *p, char *buf, size_t cap) {
    if (p->value_type == VAL_QUANT) snprintf(buf, cap, "q%d", p->value_bits);
    else snprintf(buf, cap, "%s", pz_name_of(frame_value_types, p->value_type));
}

static pz_status parse_base(const char *spec, const char *s, codec_params *p) {
    memset(p, 0, sizeof *p);
    p->index_coding = IDX_AUTO;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    char *colon = strchr(buf, ':');
    char *args = NULL;
    if (colon) *colon = 0, args = colon + 1;
    const codec_family *fam = codec_family_by_name(buf, p);
    if (!fam) return spec_bad(spec, "unknown codec name (expected none, fp16, bf16, q1..q8, topk, randk, randtopk, ms, or ef(...), ef21(...), aqsgd(...))");
    if (fam->plain_payload && args) return fam->option(p, "", NULL, spec); /* they take no options, not even an empty list */
    if (fam->fraction) {
        if (!args || !*args) return spec_bad(spec, "needs the kept fraction first, e.g. topk:0.1");
        char *comma = strchr(args, ',');
        if (comma) *comma = 0;
        char *end;
        p->fraction = strtod(args, &end);
        if (end == args || *end || !(p->fraction > 0.0 && p->fraction <= 1.0))
            return spec_bad(spec, "the kept fraction must be a number in (0, 1], e.g. 0.1");
        args = comma ? comma + 1 : NULL;
    }
    char *save = NULL;
    for (char *item = args ? strtok_r(args, ",", &save) : NULL; item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        char *val = eq ? eq + 1 : NULL;
        if (eq) *eq = 0;
        PZ_TRY(fam->option(p, item, val, spec));
    }
    return fam->finish ? fam->finish(p, spec) : PZ_OK;
}

pz_status codec_parse_spec(pz_codec *c, const char *spec) {
    if (!spec || !*spec) return pz_fail(PZ_ERR_ARG, "empty codec spec");
    if (strlen(spec) >= 200) return pz_fail(PZ_ERR_ARG, "codec spec is too long");
    const char *open = strchr(spec, '(');
    c->wrap = NULL;
    if (!open) return parse_base(spec, spec, &c->p);
    const size_t wl = (size_t)(open - spec);
    for (int i = 0; i < codec_wrapper_count; i++)
        if (strlen(codec_wrappers[i]->name) == wl && !strncmp(spec, codec_wrappers[i]->name, wl)) c->wrap = codec_wrappers[i];
    if (!c->wrap) return spec_bad(spec, "unknown wrapper (expected ef, ef21 or aqsgd)");
    const char *close = strrchr(spec, ')');
    if (!close || close < open) return spec_bad(spec, "missing ')'");
    char inner[256];
    snprintf(inner, sizeof inner, "%.*s", (int)(close - open - 1), open + 1);
    if (strchr(inner, '(')) return spec_bad(spec, "wrappers do not nest");
    PZ_TRY(parse_base(spec, inner, &c->p));
    const char *rest = close + 1;
    if (*rest && *rest != ',') return spec_bad(spec, "expected ',' after ')'");
    char opts[256];
    snprintf(opts, sizeof opts, "%s", *rest ? rest + 1 : "");
    char *save = NULL;
    for (char *item = *opts ? strtok_r(opts, ",", &save) : NULL; item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        char *val = eq ? eq + 1 : NULL;
        if (eq) *eq = 0;
        if (c->wrap->option(c, item, val, spec)) {
            char msg[400];
            snprintf(msg, sizeof msg, "unknown wrapper option '%s%s%s' (ef: per=boundary|sample; aqsgd: store=fp32|fp16, mmap=DIR)", item,
                     val ? "=" : "", val ? val : "");
            return spec_bad(spec, msg);
        }
    }
    return PZ_OK;
}

void codec_canonical_spec(const pz_codec *c, char *buf, size_t cap) {
    char base[200];
    c->p.fam->canonical(&c->p, base, sizeof base);
    if (c->wrap) c->wrap->canonical(c, base, buf, cap);
    else snprintf(buf, cap, "%s", base);
}

/* ---- public: what a spec means --------------------------------------------- */

void pz_codec_base_spec(const pz_codec *c, char *buf, size_t cap) { c->p.fam->canonical(&c->p, buf, cap); }

int pz_codec_is_lossless(const pz_codec *c) { return !c->wrap && c->p.fam->lossless; }

pz_status pz_codec_parse_list(const char *arg, int boundaries, char (*specs)[PZ_CODEC_SPEC_MAX], const char *what) {
    for (int b = 0; b < boundaries; b++) snprintf(specs[b], PZ_CODEC_SPEC_MAX, "none");
    if (!arg || !*arg) return PZ_OK;
    const char *p = arg;
    int first_item = 1;
    while (*p) {
        /* the item ends at a comma followed by "N=" */
        const char *end = p;
        for (;;) {
            end = strchr(end, ',');
            if (!end) break;
            const char *q = end + 1;
            while (*q >= '0' && *q <= '9') q++;
            if (q > end + 1 && *q == '=') break;
            end++;
        }
        const size_t n = end ? (size_t)(end - p) : strlen(p);
        char item[PZ_CODEC_SPEC_MAX + 16];
        if (n >= sizeof item) return pz_fail(PZ_ERR_ARG, "%s: '%.40s...' is too long", what, p);
        memcpy(item, p, n);
        item[n] = 0;
        const char *q = item;
        while (*q >= '0' && *q <= '9') q++;
        int target = -1;
        const char *spec = item;
        if (q > item && *q == '=') {
            target = atoi(item);
            spec = q + 1;
            if (target < 1)
                return pz_fail(PZ_ERR_ARG, "%s: boundary %d does not exist (boundaries are numbered from 1, the first cut)",
                               what, target);
            if (target > boundaries) {
                if (boundaries == 1)
                    return pz_fail(PZ_ERR_ARG, "%s: boundary %d does not exist (this pipeline has one boundary, 1)", what,
                                   target);
                return pz_fail(PZ_ERR_ARG, "%s: boundary %d does not exist (this pipeline has boundaries 1..%d)", what,
                               target, boundaries);
            }
        } else if (!first_item) {
            return pz_fail(PZ_ERR_ARG, "%s: '%s': only the first item may omit its boundary (write N=SPEC)", what, item);
        }
        pz_codec *c;
        if (pz_codec_create(&c, spec)) return pz_fail(PZ_ERR_ARG, "%s: %s", what, pz_last_error());
        pz_codec_free(c);
        if (strlen(spec) >= PZ_CODEC_SPEC_MAX) return pz_fail(PZ_ERR_ARG, "%s: spec '%s' is too long", what, spec);
        if (target < 0)
            for (int b = 0; b < boundaries; b++) snprintf(specs[b], PZ_CODEC_SPEC_MAX, "%.255s", spec);
        else snprintf(specs[target - 1], PZ_CODEC_SPEC_MAX, "%.255s", spec);
        first_item = 0;
        p = end ? end + 1 : p + n;
    }
    return PZ_OK;
}

/* ---- help, from the tables --------------------------------------------------- */

size_t pz_codec_help(char *buf, size_t cap) {
    size_t n = 0;
#define ADD(...) (n += (size_t)snprintf(buf + (n < cap ? n : cap), n < cap ? cap - n : 0, __VA_ARGS__))
    for (int i = 0; i < codec_family_count; i++) {
        const codec_family *f = codec_families[i];
        ADD("  %s\n      %s\n", f->usage, f->help);
    }
    ADD("Stateful wrappers around any of them:\n");
    for (int i = 0; i < codec_wrapper_count; i++) ADD("  %s\n      %s\n", codec_wrappers[i]->usage, codec_wrappers[i]->help);
#undef ADD
    return n;
}
