/* SPDX-License-Identifier: MIT */
/* spec.c — the codec spec grammar, in one place: codec specs, per-boundary
 * lists, the base codec for evaluation, "is lossless", and the help text,
 * all from the family and wrapper tables. Parsing is strict: every unknown
 * name, option or out-of-range value is an error that says what is accepted.
 *   list    := item ("," item)*          item := [N "="] spec
 *   spec    := codec ["+" stage]         stage := "zstd" [":" level] | "huf"
 *   codec   := base | wrapper "(" base ")" ("," wopt)*
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

static pz_status parse_codec(pz_codec_desc *d, const char *spec, const char *body);

static pz_status parse_base(const char *spec, const char *s, codec_params *p) {
    memset(p, 0, sizeof *p);
    p->index_coding = IDX_AUTO;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    char *colon = strchr(buf, ':');
    char *args = NULL;
    if (colon) *colon = 0, args = colon + 1;
    const codec_family *fam = codec_family_by_name(buf, p);
    if (!fam) {
        char names[256], msg[400];
        codec_family_names(names, sizeof names);
        snprintf(msg, sizeof msg, "unknown codec name (expected %s, or a wrapper: ef(...), ef21(...), aqsgd(...))", names);
        return spec_bad(spec, msg);
    }
    if (fam->plain_payload && args) return fam->option(p, "", NULL, spec); /* they take no options, not even an empty list */
    const codec_arg *a = &fam->arg;
    if (a->kind != CODEC_ARG_NONE) {
        char msg[160];
        if (!args || !*args) {
            snprintf(msg, sizeof msg, "needs the %s first, e.g. %s", a->what, a->example);
            return spec_bad(spec, msg);
        }
        char *comma = strchr(args, ',');
        if (comma) *comma = 0;
        char *end;
        p->fraction = strtod(args, &end);
        const int number = end != args && !*end;
        if (a->kind == CODEC_ARG_COUNT && !(number && p->fraction >= a->lo && p->fraction <= a->hi && p->fraction == (double)(int)p->fraction)) {
            snprintf(msg, sizeof msg, "the %s must be a whole number in %g..%g, e.g. %s", a->what, a->lo, a->hi, a->example);
            return spec_bad(spec, msg);
        }
        if (a->kind == CODEC_ARG_FRACTION && !(number && p->fraction > a->lo && p->fraction <= a->hi)) {
            snprintf(msg, sizeof msg, "the %s must be a number in (%g, %g], e.g. %s", a->what, a->lo, a->hi, a->example);
            return spec_bad(spec, msg);
        }
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

pz_status pz_codec_desc_parse(pz_codec_desc *d, const char *spec) {
    memset(d, 0, sizeof *d);
    if (!spec || !*spec) return pz_fail(PZ_ERR_ARG, "empty codec spec");
    if (strlen(spec) >= 200) return pz_fail(PZ_ERR_ARG, "codec spec is too long");
    snprintf(d->text, sizeof d->text, "%s", spec);
    /* an entropy stage after the codec: "SPEC+zstd[:L]" (entropy.c) */
    char whole[256];
    snprintf(whole, sizeof whole, "%s", spec);
    char *plus = strchr(whole, '+');
    if (plus) {
        *plus = 0;
        PZ_TRY(entropy_parse(d, spec, plus + 1));
        if (!*whole) return spec_bad(spec, "the entropy stage needs a codec before it, e.g. q8+zstd");
    }
    return parse_codec(d, spec, whole);
}

static pz_status parse_codec(pz_codec_desc *d, const char *spec, const char *body) {
    const char *open = strchr(body, '(');
    if (!open) return parse_base(spec, body, &d->p);
    const size_t wl = (size_t)(open - body);
    for (int i = 0; i < codec_wrapper_count; i++)
        if (strlen(codec_wrappers[i]->name) == wl && !strncmp(body, codec_wrappers[i]->name, wl)) d->wrap = codec_wrappers[i];
    if (!d->wrap) return spec_bad(spec, "unknown wrapper (expected ef, ef21 or aqsgd)");
    const char *close = strrchr(body, ')');
    if (!close || close < open) return spec_bad(spec, "missing ')'");
    char inner[256];
    snprintf(inner, sizeof inner, "%.*s", (int)(close - open - 1), open + 1);
    if (strchr(inner, '(')) return spec_bad(spec, "wrappers do not nest");
    PZ_TRY(parse_base(spec, inner, &d->p));
    const char *rest = close + 1;
    if (*rest && *rest != ',') return spec_bad(spec, "expected ',' after ')'");
    char opts[256];
    snprintf(opts, sizeof opts, "%s", *rest ? rest + 1 : "");
    char *save = NULL;
    for (char *item = *opts ? strtok_r(opts, ",", &save) : NULL; item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        char *val = eq ? eq + 1 : NULL;
        if (eq) *eq = 0;
        if (d->wrap->option(d, item, val, spec)) {
            char msg[400];
            snprintf(msg, sizeof msg, "unknown wrapper option '%s%s%s' (ef: per=boundary|sample; aqsgd: store=fp32|fp16, mmap=DIR)", item,
                     val ? "=" : "", val ? val : "");
            return spec_bad(spec, msg);
        }
    }
    return PZ_OK;
}

/* a boundary no item names: the plain family, as "none" */
static pz_codec_desc none_desc(void) {
    pz_codec_desc d;
    memset(&d, 0, sizeof d);
    d.p.fam = codec_family_plain, d.p.index_coding = IDX_AUTO;
    snprintf(d.text, sizeof d.text, "%s", codec_family_plain->name);
    return d;
}

const pz_codec_desc *pz_codec_desc_or_none(const pz_codec_desc *d) {
    static _Thread_local pz_codec_desc none;
    if (d && d->p.fam) return d;
    none = none_desc();
    return &none;
}

void pz_codec_desc_canonical(const pz_codec_desc *d, char *buf, size_t cap) {
    char base[200];
    d->p.fam->canonical(&d->p, base, sizeof base);
    if (d->wrap) d->wrap->canonical(d, base, buf, cap);
    else snprintf(buf, cap, "%s", base);
    entropy_canonical(d, buf, cap);
}

pz_codec_desc pz_codec_desc_base(const pz_codec_desc *d) {
    pz_codec_desc b;
    memset(&b, 0, sizeof b);
    b.p = d->p;
    b.zstd_level = d->zstd_level, b.huf = d->huf; /* evaluation's frames travel through the same entropy stage */
    b.p.fam->canonical(&b.p, b.text, sizeof b.text);
    entropy_canonical(&b, b.text, sizeof b.text);
    return b;
}

int pz_codec_desc_is_lossless(const pz_codec_desc *d) { return !d->wrap && d->p.fam->lossless; }

/* ---- public: what a spec means --------------------------------------------- */

void pz_codec_base_spec(const pz_codec *c, char *buf, size_t cap) {
    c->d.p.fam->canonical(&c->d.p, buf, cap);
    entropy_canonical(&c->d, buf, cap);
}

int pz_codec_is_lossless(const pz_codec *c) { return pz_codec_desc_is_lossless(&c->d); }

pz_status pz_codec_create_base(pz_codec **out, const pz_codec *c) {
    const pz_codec_desc b = pz_codec_desc_base(&c->d);
    return pz_codec_create_desc(out, &b);
}

/* ---- per-boundary lists ------------------------------------------------------ */

pz_status pz_codec_list_parse(pz_codec_list *l, const char *arg, int max_boundaries, const char *what) {
    l->n = 0;
    if (!arg || !*arg) return PZ_OK;
    const char *p = arg;
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
        int target = 0;
        const char *spec = item;
        if (q > item && *q == '=') {
            target = atoi(item);
            spec = q + 1;
            if (target < 1)
                return pz_fail(PZ_ERR_ARG, "%s: boundary %d does not exist (boundaries are numbered from 1, the first cut)",
                               what, target);
            if (target > max_boundaries) {
                if (max_boundaries == 1)
                    return pz_fail(PZ_ERR_ARG, "%s: boundary %d does not exist (this pipeline has one boundary, 1)", what,
                                   target);
                return pz_fail(PZ_ERR_ARG, "%s: boundary %d does not exist (this pipeline has boundaries 1..%d)", what,
                               target, max_boundaries);
            }
        } else if (l->n > 0) {
            return pz_fail(PZ_ERR_ARG, "%s: '%s': only the first item may omit its boundary (write N=SPEC)", what, item);
        }
        if (l->n == PZ_CODEC_LIST_ITEMS) return pz_fail(PZ_ERR_ARG, "%s: more than %d items", what, PZ_CODEC_LIST_ITEMS);
        if (pz_codec_desc_parse(&l->item[l->n], spec)) return pz_fail(PZ_ERR_ARG, "%s: %s", what, pz_last_error());
        if (strlen(spec) >= PZ_CODEC_SPEC_MAX) return pz_fail(PZ_ERR_ARG, "%s: spec '%s' is too long", what, spec);
        l->boundary[l->n++] = target;
        p = end ? end + 1 : p + n;
    }
    return PZ_OK;
}

pz_status pz_codec_list_resolve(const pz_codec_list *l, int boundaries, pz_codec_desc *out, const char *what) {
    for (int b = 0; b < boundaries; b++) out[b] = none_desc();
    for (int i = 0; i < l->n; i++) {
        const int target = l->boundary[i];
        if (target > boundaries) {
            if (boundaries == 1)
                return pz_fail(PZ_ERR_ARG, "%s: boundary %d does not exist (this pipeline has one boundary, 1)", what, target);
            return pz_fail(PZ_ERR_ARG, "%s: boundary %d does not exist (this pipeline has boundaries 1..%d)", what, target,
                           boundaries);
        }
        if (target == 0)
            for (int b = 0; b < boundaries; b++) out[b] = l->item[i];
        else out[target - 1] = l->item[i];
    }
    return PZ_OK;
}

pz_status pz_codec_parse_list(const char *arg, int boundaries, char (*specs)[PZ_CODEC_SPEC_MAX], const char *what) {
    static _Thread_local pz_codec_list l; /* ~25 KB: not on a small thread stack */
    static _Thread_local pz_codec_desc d[PZ_CODEC_LIST_ITEMS];
    if (boundaries > PZ_CODEC_LIST_ITEMS) return pz_fail(PZ_ERR_ARG, "%s: at most %d boundaries", what, PZ_CODEC_LIST_ITEMS);
    PZ_TRY(pz_codec_list_parse(&l, arg, boundaries, what));
    PZ_TRY(pz_codec_list_resolve(&l, boundaries, d, what));
    for (int b = 0; b < boundaries; b++) snprintf(specs[b], PZ_CODEC_SPEC_MAX, "%s", d[b].text);
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
    ADD("An entropy stage after any of them:\n");
    ADD("  SPEC+zstd[:L]\n      the frame's codec sections stored as one zstd frame (level L, 3 unless given) when that is smaller;\n"
        "      lossless: the decoded tensor is SPEC's (e.g. q8+zstd, ef(topk:0.1)+zstd:9)\n");
    ADD("  SPEC+huf\n      the same under one order-0 Huffman code of the bytes (four streams, pinned bytes): faster than zstd,\n"
        "      about as small on quantization codes (e.g. q6:bytes+huf)\n");
#undef ADD
    return n;
}
