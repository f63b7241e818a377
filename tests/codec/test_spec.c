/* SPDX-License-Identifier: MIT */
/* test_spec.c — the spec grammar's public answers: the base codec that
 * evaluation uses, "is lossless", per-boundary lists, and the help text
 * generated from the codec table (every family and wrapper listed). */
#include "../test.h"
#include "pipezip/codec.h"

static void base_is(const char *spec, const char *want) {
    pz_codec *c;
    CHECK(pz_codec_create(&c, spec) == PZ_OK, "%s: %s", spec, pz_last_error());
    char buf[PZ_CODEC_SPEC_MAX];
    pz_codec_base_spec(c, buf, sizeof buf);
    CHECK(!strcmp(buf, want), "base of %s: '%s', want '%s'", spec, buf, want);
    /* the base is a spec of its own, stateless, and canonical already */
    pz_codec *b;
    CHECK(pz_codec_create(&b, buf) == PZ_OK && !pz_codec_is_stateful(b) && !strcmp(pz_codec_spec(b), buf), "base '%s' of %s", buf, spec);
    pz_codec_free(b);
    pz_codec_free(c);
}

static int lossless(const char *spec) {
    pz_codec *c;
    if (pz_codec_create(&c, spec)) return -1;
    const int r = pz_codec_is_lossless(c);
    pz_codec_free(c);
    return r;
}

int main(void) {
    base_is("ef(topk:0.1),per=sample", "topk:0.1,per=sample,values=fp32,by=magnitude,index=auto");
    base_is("ef21(q4)", "q4:asym,nearest,per=tensor");
    base_is("aqsgd(q2:sym),store=fp16", "q2:sym,nearest,per=tensor");
    base_is("ms:0.01,bits=2", "ms:0.01,bits=2,per=tensor,values=fp32,auto");
    base_is("fp32", "none");
    base_is("ef(q8:per=token)+zstd", "q8:asym,nearest,per=token+zstd:3"); /* evaluation's frames go through the same entropy stage */

    CHECK(lossless("none") == 1 && lossless("fp32") == 1, "none is lossless");
    CHECK(lossless("fp16") == 0 && lossless("q8") == 0 && lossless("topk:1") == 0, "others are not");
    CHECK(lossless("ef(none)") == 0, "a wrapper keeps state: not lossless even around none");
    CHECK(lossless("none+zstd") == 1 && lossless("q8+zstd") == 0, "the entropy stage keeps what the codec is");

    char sp[3][PZ_CODEC_SPEC_MAX];
    CHECK(pz_codec_parse_list("q8,2=ms:0.01,bits=2", 3, sp, "--fwd") == PZ_OK && !strcmp(sp[0], "q8") &&
              !strcmp(sp[1], "ms:0.01,bits=2") && !strcmp(sp[2], "q8"),
          "list: %s | %s | %s", sp[0], sp[1], sp[2]);
    CHECK(pz_codec_parse_list("", 3, sp, "--fwd") == PZ_OK && !strcmp(sp[2], "none"), "an empty list is none");
    CHECK(pz_codec_parse_list("3=topk:0.1,per=tensor", 3, sp, "--bwd") == PZ_OK && !strcmp(sp[0], "none") &&
              !strcmp(sp[2], "topk:0.1,per=tensor"), "an override keeps its commas: %s", sp[2]);
    CHECK(pz_codec_parse_list("q4,0=q2", 3, sp, "--fwd") == PZ_ERR_ARG && strstr(pz_last_error(), "boundary 0"), "%s", pz_last_error());
    CHECK(pz_codec_parse_list("q4,2=q9", 3, sp, "--fwd") == PZ_ERR_ARG && strstr(pz_last_error(), "--fwd"), "%s", pz_last_error());

    /* the old grammar's one odd rule: none/fp16/bf16 take no option list, not even an empty one */
    pz_codec *c = NULL;
    CHECK(pz_codec_create(&c, "fp16:") == PZ_ERR_ARG && !c, "fp16: is refused");

    char help[8192];
    const size_t need = pz_codec_help(help, sizeof help);
    CHECK(need < sizeof help, "help fits");
    const char *names[] = {"none", "fp16", "bf16", "qB[", "topk:F", "randk:F", "randtopk:F", "ms:F", "ef(BASE)", "ef21(BASE)", "aqsgd(BASE)", "SPEC+zstd"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) CHECK(strstr(help, names[i]), "help lists %s", names[i]);
    char small[16];
    CHECK(pz_codec_help(small, sizeof small) == need && strlen(small) == 15, "help truncates like snprintf");
    TEST_DONE();
}
