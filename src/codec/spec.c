/* spec.c — codec spec strings: parsing (strict: every unknown name, option
 * or out-of-range value is an error that says what is accepted) and the
 * canonical form. Grammar (README, `pipezip codec --help`):
 *   spec    := base | wrapper "(" base ")" ("," wopt)*
 *   wrapper := "ef" | "ef21" | "aqsgd"
 *   base    := name [":" item ("," item)*]
 */
#include "codec_internal.h"

#include <stdlib.h>
#include <string.h>

static const char *gran_name(int g) { return g == GRAN_SAMPLE ? "sample" : g == GRAN_CHANNEL ? "channel" : "tensor"; }

static pz_status bad(const char *spec, const char *what) {
    return pz_fail(PZ_ERR_ARG, "codec spec '%s': %s", spec, what);
}

static int parse_values(const char *v, codec_params *p) {
    if (!strcmp(v, "fp32")) p->value_type = VAL_F32;
    else if (!strcmp(v, "fp16")) p->value_type = VAL_F16;
    else if (!strcmp(v, "bf16")) p->value_type = VAL_BF16;
    else if (v[0] == 'q' && v[1] >= '1' && v[1] <= '8' && !v[2]) p->value_type = VAL_QUANT, p->value_bits = v[1] - '0';
    else return 0;
    return 1;
}

static pz_status parse_base(const char *spec, const char *s, codec_params *p) {
    memset(p, 0, sizeof *p);
    p->index_coding = IDX_AUTO;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    char *colon = strchr(buf, ':');
    char *args = NULL;
    if (colon) *colon = 0, args = colon + 1;
    const char *name = buf;
    int sparse = 0;
    if (!strcmp(name, "none") || !strcmp(name, "fp32")) p->id = CODEC_NONE;
    else if (!strcmp(name, "fp16")) p->id = CODEC_FP16;
    else if (!strcmp(name, "bf16")) p->id = CODEC_BF16;
    else if (name[0] == 'q' && name[1] >= '1' && name[1] <= '8' && !name[2]) p->id = CODEC_QUANT, p->bits = name[1] - '0';
    else if (!strcmp(name, "topk")) p->id = CODEC_TOPK, sparse = 1;
    else if (!strcmp(name, "randk")) p->id = CODEC_RANDK, sparse = 1;
    else if (!strcmp(name, "randtopk")) p->id = CODEC_RANDTOPK, sparse = 1, p->alpha = 0.1;
    else if (!strcmp(name, "ms")) p->id = CODEC_MS, sparse = 1, p->bits = 2;
    else return bad(spec, "unknown codec name (expected none, fp16, bf16, q1..q8, topk, randk, randtopk, ms, or ef(...), ef21(...), aqsgd(...))");
    p->gran = (p->id == CODEC_TOPK || p->id == CODEC_RANDK || p->id == CODEC_RANDTOPK) ? GRAN_SAMPLE : GRAN_TENSOR;
    if (p->id <= CODEC_BF16 && args) return bad(spec, "none, fp16 and bf16 take no options");
    if (sparse) {
        if (!args || !*args) return bad(spec, "needs the kept fraction first, e.g. topk:0.1");
        char *comma = strchr(args, ',');
        if (comma) *comma = 0;
        char *end;
        p->fraction = strtod(args, &end);
        if (end == args || *end || !(p->fraction > 0.0 && p->fraction <= 1.0))
            return bad(spec, "the kept fraction must be a number in (0, 1], e.g. 0.1");
        args = comma ? comma + 1 : NULL;
    }
    char *save = NULL;
    for (char *item = args ? strtok_r(args, ",", &save) : NULL; item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        char *val = eq ? eq + 1 : NULL;
        if (eq) *eq = 0;
        if (!strcmp(item, "per") && val) {
            if (!strcmp(val, "tensor")) p->gran = GRAN_TENSOR;
            else if (!strcmp(val, "sample")) p->gran = GRAN_SAMPLE;
            else if (!strcmp(val, "channel") && p->id == CODEC_QUANT) p->gran = GRAN_CHANNEL;
            else return bad(spec, p->id == CODEC_QUANT ? "per= takes tensor, sample or channel" : "per= takes tensor or sample");
        } else if (p->id == CODEC_QUANT && !val && (!strcmp(item, "sym") || !strcmp(item, "asym"))) {
            p->options = (p->options & ~OPT_SYM) | (item[0] == 's' ? OPT_SYM : 0);
        } else if (p->id == CODEC_QUANT && !val && (!strcmp(item, "stoch") || !strcmp(item, "nearest"))) {
            p->options = (p->options & ~OPT_STOCH) | (item[0] == 's' ? OPT_STOCH : 0);
        } else if (sparse && !strcmp(item, "values") && val) {
            if (!parse_values(val, p) || (p->id == CODEC_MS && p->value_type == VAL_QUANT))
                return bad(spec, p->id == CODEC_MS ? "values= takes fp32, fp16 or bf16" : "values= takes fp32, fp16, bf16 or q1..q8");
        } else if ((p->id == CODEC_TOPK || p->id == CODEC_RANDTOPK) && !strcmp(item, "index") && val) {
            if (!strcmp(val, "auto")) p->index_coding = IDX_AUTO;
            else if (!strcmp(val, "bitmap")) p->index_coding = IDX_BITMAP;
            else if (!strcmp(val, "delta")) p->index_coding = IDX_DELTA;
            else return bad(spec, "index= takes auto, bitmap or delta");
        } else if (p->id == CODEC_TOPK && !strcmp(item, "by") && val) {
            if (!strcmp(val, "magnitude")) p->options &= ~OPT_BYVALUE;
            else if (!strcmp(val, "value")) p->options |= OPT_BYVALUE;
            else return bad(spec, "by= takes magnitude or value");
        } else if (p->id == CODEC_RANDK && !val && (!strcmp(item, "unbiased") || !strcmp(item, "biased"))) {
            p->options = (p->options & ~OPT_UNBIASED) | (item[0] == 'u' ? OPT_UNBIASED : 0);
        } else if (p->id == CODEC_RANDTOPK && !strcmp(item, "alpha") && val) {
            char *end;
            p->alpha = strtod(val, &end);
            if (end == val || *end || !(p->alpha >= 0.0 && p->alpha <= 1.0)) return bad(spec, "alpha= takes a number in [0, 1]");
        } else if (p->id == CODEC_MS && !strcmp(item, "bits") && val) {
            char *end;
            long b = strtol(val, &end, 10);
            if (end == val || *end || b < 1 || b > 8) return bad(spec, "bits= takes 1..8");
            p->bits = (int)b;
        } else if (p->id == CODEC_MS && !val && (!strcmp(item, "signed") || !strcmp(item, "unsigned") || !strcmp(item, "auto"))) {
            p->ms_sign = item[0] == 's' ? MS_SIGN_SIGNED : item[0] == 'u' ? MS_SIGN_UNSIGNED : MS_SIGN_AUTO;
        } else {
            char msg[400];
            snprintf(msg, sizeof msg, "unknown option '%s%s%s' for %s", item, val ? "=" : "", val ? val : "", name);
            return bad(spec, msg);
        }
    }
    if (p->id == CODEC_QUANT && p->bits == 1 && (p->options & OPT_SYM) && (p->options & OPT_STOCH))
        return bad(spec, "q1:sym is a scaled sign and has no stochastic variant");
    return PZ_OK;
}

pz_status codec_parse_spec(pz_codec *c, const char *spec) {
    if (!spec || !*spec) return pz_fail(PZ_ERR_ARG, "empty codec spec");
    if (strlen(spec) >= 200) return pz_fail(PZ_ERR_ARG, "codec spec is too long");
    const char *open = strchr(spec, '(');
    c->wrapper = WRAP_NONE;
    if (!open) return parse_base(spec, spec, &c->p);
    const size_t wl = (size_t)(open - spec);
    if (wl == 2 && !strncmp(spec, "ef", 2)) c->wrapper = WRAP_EF;
    else if (wl == 4 && !strncmp(spec, "ef21", 4)) c->wrapper = WRAP_EF21;
    else if (wl == 5 && !strncmp(spec, "aqsgd", 5)) c->wrapper = WRAP_AQSGD;
    else return bad(spec, "unknown wrapper (expected ef, ef21 or aqsgd)");
    const char *close = strrchr(spec, ')');
    if (!close || close < open) return bad(spec, "missing ')'");
    char inner[256];
    snprintf(inner, sizeof inner, "%.*s", (int)(close - open - 1), open + 1);
    if (strchr(inner, '(')) return bad(spec, "wrappers do not nest");
    PZ_TRY(parse_base(spec, inner, &c->p));
    const char *rest = close + 1;
    if (*rest && *rest != ',') return bad(spec, "expected ',' after ')'");
    char opts[256];
    snprintf(opts, sizeof opts, "%s", *rest ? rest + 1 : "");
    char *save = NULL;
    for (char *item = *opts ? strtok_r(opts, ",", &save) : NULL; item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        char *val = eq ? eq + 1 : NULL;
        if (eq) *eq = 0;
        if (c->wrapper == WRAP_EF && !strcmp(item, "per") && val && (!strcmp(val, "boundary") || !strcmp(val, "sample"))) {
            c->per_sample = val[0] == 's';
        } else if (c->wrapper == WRAP_AQSGD && !strcmp(item, "store") && val && (!strcmp(val, "fp32") || !strcmp(val, "fp16"))) {
            c->store_fp16 = !strcmp(val, "fp16");
        } else if (c->wrapper == WRAP_AQSGD && !strcmp(item, "mmap") && val && *val) {
            snprintf(c->mmap_path, sizeof c->mmap_path, "%s", val);
        } else {
            char msg[400];
            snprintf(msg, sizeof msg, "unknown wrapper option '%s%s%s' (ef: per=boundary|sample; aqsgd: store=fp32|fp16, mmap=DIR)",
                     item, val ? "=" : "", val ? val : "");
            return bad(spec, msg);
        }
    }
    return PZ_OK;
}

static void base_canonical(const codec_params *p, char *buf, size_t cap) {
    static const char *vnames[] = {"fp32", "fp16", "bf16", "q"};
    char v[8];
    if (p->value_type == VAL_QUANT) snprintf(v, sizeof v, "q%d", p->value_bits);
    else snprintf(v, sizeof v, "%s", vnames[p->value_type]);
    const char *idx = p->index_coding == IDX_BITMAP ? "bitmap" : p->index_coding == IDX_DELTA ? "delta" : "auto";
    switch (p->id) {
    case CODEC_NONE: snprintf(buf, cap, "none"); break;
    case CODEC_FP16: snprintf(buf, cap, "fp16"); break;
    case CODEC_BF16: snprintf(buf, cap, "bf16"); break;
    case CODEC_QUANT:
        snprintf(buf, cap, "q%d:%s,%s,per=%s", p->bits, p->options & OPT_SYM ? "sym" : "asym",
                 p->options & OPT_STOCH ? "stoch" : "nearest", gran_name(p->gran));
        break;
    case CODEC_TOPK:
        snprintf(buf, cap, "topk:%g,per=%s,values=%s,by=%s,index=%s", p->fraction, gran_name(p->gran), v,
                 p->options & OPT_BYVALUE ? "value" : "magnitude", idx);
        break;
    case CODEC_RANDK:
        snprintf(buf, cap, "randk:%g,per=%s,values=%s,%s", p->fraction, gran_name(p->gran), v,
                 p->options & OPT_UNBIASED ? "unbiased" : "biased");
        break;
    case CODEC_RANDTOPK:
        snprintf(buf, cap, "randtopk:%g,alpha=%g,per=%s,values=%s,index=%s", p->fraction, p->alpha, gran_name(p->gran), v, idx);
        break;
    case CODEC_MS:
        snprintf(buf, cap, "ms:%g,bits=%d,per=%s,values=%s,%s", p->fraction, p->bits, gran_name(p->gran), v,
                 p->ms_sign == MS_SIGN_SIGNED ? "signed" : p->ms_sign == MS_SIGN_UNSIGNED ? "unsigned" : "auto");
        break;
    }
}

void codec_canonical_spec(const pz_codec *c, char *buf, size_t cap) {
    char base[200];
    base_canonical(&c->p, base, sizeof base);
    switch (c->wrapper) {
    case WRAP_EF: snprintf(buf, cap, "ef(%s),per=%s", base, c->per_sample ? "sample" : "boundary"); break;
    case WRAP_EF21: snprintf(buf, cap, "ef21(%s)", base); break;
    case WRAP_AQSGD:
        snprintf(buf, cap, "aqsgd(%s),store=%s%s%s", base, c->store_fp16 ? "fp16" : "fp32", c->mmap_path[0] ? ",mmap=" : "",
                 c->mmap_path);
        break;
    default: snprintf(buf, cap, "%s", base);
    }
}
