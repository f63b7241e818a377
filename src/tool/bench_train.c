/* SPDX-License-Identifier: MIT */
/* bench_train.c — the measurement behind `pipezip bench train` (median
 * time of a training step of a preset on random inputs, and what computed
 * it: the BLAS and convolution kernels) and the listing behind `pipezip
 * models`. */
#include "tool/bench.h"
#include "tool/xalloc.h"
#include "nn/nn.h"

#include <stdlib.h>
#include <string.h>

/* ---- the per-layer profile ------------------------------------------------
 * Rows by layer name, summed over the blocks that share it (h.0's and
 * h.3's "attn.c_attn" are one row); a container's own work (a residual's
 * add, a group's copy) is its time less its layers'. */
typedef struct {
    char name[64];
    const char *kind;
    double s[2];   /* forward, backward seconds over the profiled steps */
    double flops;  /* counted FLOPs of one step (forward 2 x MACs, backward 4 x) */
} prof_row;

typedef struct {
    prof_row *rows;
    int n, cap;
} prof_table;

static prof_row *prof_row_for(prof_table *t, const char *name, const char *kind) {
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->rows[i].name, name)) return &t->rows[i];
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 32;
        t->rows = pz_xrealloc(t->rows, sizeof *t->rows * (size_t)t->cap);
    }
    prof_row *r = &t->rows[t->n++];
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    r->kind = kind;
    return r;
}

static void prof_collect(prof_table *t, const pz_seq *s, int B) {
    for (int i = 0; i < s->n; i++) {
        const pz_layer *l = &s->layers[i];
        const pz_seq *kid = l->main;
        if (!kid) {
            prof_row *r = prof_row_for(t, l->name, pz_layer_kind_name(l->kind));
            r->s[0] += l->prof_s[0], r->s[1] += l->prof_s[1], r->flops += 6.0 * (double)l->macs * B;
            continue;
        }
        double inner[2] = {0, 0};
        int64_t inner_macs = 0;
        for (int k = 0; k < kid->n; k++)
            inner[0] += kid->layers[k].prof_s[0], inner[1] += kid->layers[k].prof_s[1], inner_macs += kid->layers[k].macs;
        if (l->shortcut)
            for (int k = 0; k < l->shortcut->n; k++)
                inner[0] += l->shortcut->layers[k].prof_s[0], inner[1] += l->shortcut->layers[k].prof_s[1],
                    inner_macs += l->shortcut->layers[k].macs;
        const char *kind = pz_layer_kind_name(l->kind);
        if (l->kind != PZ_LAYER_GROUP || l->prof_s[0] - inner[0] > 0) {
            /* blocks' own rows are "h.N" by name: shared as "block" */
            char name[64];
            snprintf(name, sizeof name, "(%s %s)", l->kind == PZ_LAYER_GROUP ? "block" : l->name,
                     l->kind == PZ_LAYER_RESIDUAL ? "add" : l->kind == PZ_LAYER_GROUP ? "copy" : "itself");
            prof_row *r = prof_row_for(t, name, kind);
            r->s[0] += l->prof_s[0] - inner[0], r->s[1] += l->prof_s[1] - inner[1];
            if (!pz_residual_add_fused(l)) r->flops += 6.0 * (double)(l->macs - inner_macs) * B; /* else counted in no row */
        }
        prof_collect(t, kid, B);
        if (l->shortcut) prof_collect(t, l->shortcut, B);
    }
}

/* `repeat` more steps, each phase and layer timed: the profile's rows, means per step */
static void profile_steps(pz_model *mp, pz_optim *opt, const float *x, const int32_t *y, int batch, int repeat, prof_table *out) {
    double phase[3] = {0, 0, 0}; /* zeroing gradients, loss, optimizer */
    prof_table pt = {0};
    pz_nn_profile(1);
    for (int i = 0; i < repeat; i++) {
        double t0 = pz_now();
        pz_model_zero_grad(mp);
        phase[0] += pz_now() - t0;
        pz_seq_forward(&mp->net, 0, mp->net.n, x, batch, 1);
        t0 = pz_now();
        pz_model_loss(mp, mp->dlogits, NULL, pz_model_logits(mp), y, batch);
        phase[1] += pz_now() - t0;
        pz_seq_backward(&mp->net, 0, mp->net.n, x, mp->dlogits, NULL, batch);
        t0 = pz_now();
        pz_optim_step(opt, mp->params, mp->grads, 0.01f);
        phase[2] += pz_now() - t0;
    }
    pz_nn_profile(0);
    prof_collect(&pt, &mp->net, batch);
    static const char *const names[3] = {"(zero gradients)", "(loss)", "(optimizer)"};
    for (int k = 0; k < 3; k++) prof_row_for(&pt, names[k], "step")->s[0] = phase[k];
    for (int k = 0; k < pt.n; k++) pt.rows[k].s[0] /= repeat, pt.rows[k].s[1] /= repeat;
    *out = pt;
}

/* the profile's table, ms per step and each row's share and rate */
static void print_profile(FILE *out, const prof_table *tbl, const bench_peak *pk_, int repeat) {
    const prof_table pt = *tbl;
    const bench_peak peak = *pk_;
    double total = 0;
    for (int k = 0; k < pt.n; k++) total += pt.rows[k].s[0] + pt.rows[k].s[1];
    fprintf(out, "\n  profile, ms per step (mean of %d more steps; rows summed over the blocks):\n", repeat);
    fprintf(out, "    %-22s %-10s %9s %9s %9s %6s %9s %6s\n", "layer", "kind", "forward", "backward", "total", "share",
            "GFLOP/s", "%peak");
    for (int k = 0; k < pt.n; k++) {
        const prof_row *r = &pt.rows[k];
        const double s = r->s[0] + r->s[1];
        char rate[16] = "", pk[16] = "";
        if (r->flops > 0 && s > 0) {
            snprintf(rate, sizeof rate, "%.1f", r->flops / s / 1e9);
            if (peak.team_gflops > 0) snprintf(pk, sizeof pk, "%.0f%%", 100.0 * r->flops / s / 1e9 / peak.team_gflops);
        }
        fprintf(out, "    %-22s %-10s %9.3f %9.3f %9.3f %5.1f%% %9s %6s\n", r->name, r->kind, 1e3 * r->s[0], 1e3 * r->s[1],
                1e3 * s, total > 0 ? 100.0 * s / total : 0.0, rate, pk);
    }
    fprintf(out, "    %-22s %-10s %9s %9s %9.3f\n", "all", "", "", "", 1e3 * total);
    int fused = 0, adds = 0;
    for (int k = 0; k < pt.n; k++) fused |= pt.rows[k].s[0] + pt.rows[k].s[1] == 0.0 && pt.rows[k].flops > 0;
    for (int k = 0; k < pt.n; k++) adds |= !strcmp(pt.rows[k].kind, "residual") && pt.rows[k].flops == 0;
    if (fused)
        fprintf(out, "  (a row at 0 runs fused with a neighbour, its time in theirs: a GELU in the dense layers "
                     "around it, a ReLU in the layer before it)\n");
    if (adds)
        fprintf(out, "  (a residual's add runs in its branch's last dense layer, forward, and first layer norm, backward: "
                     "its row is the rest)\n");
}

/* which kernels ran the step: the matrix products, the BLAS, the convolutions */
static void print_kernels(FILE *out, const pz_blas_info *b, const pz_conv_info *c, const pz_conv_info *g, int lm) {
    const pz_blas_info bi = *b;
    const pz_conv_info ci = *c, gi = *g;
    fprintf(out, "  matrix products: %s\n",
            !strcmp(gi.name, "blas") ? "the BLAS (this CPU lacks AVX2 and FMA, or PZ_GEMM_KERNELS=blas)"
            : !strcmp(gi.name, "avx512") ? "pipezip's AVX-512 kernels" : "pipezip's AVX2 kernels");
    fprintf(out, "  BLAS: %s; kernels %s, chosen by %s%s%s%s\n", bi.library, bi.core,
           !strcmp(bi.source, "pipezip") ? "pipezip from the CPU's features" : !strcmp(bi.source, "user") ? "OPENBLAS_CORETYPE" : bi.source,
           bi.openblas_choice[0] && strcmp(bi.openblas_choice, bi.core) ? " (OpenBLAS itself chose " : "",
           bi.openblas_choice[0] && strcmp(bi.openblas_choice, bi.core) ? bi.openblas_choice : "",
           bi.openblas_choice[0] && strcmp(bi.openblas_choice, bi.core) ? ")" : "");
    if (lm)
        ; /* no convolutions */
    else if (!strcmp(ci.name, "im2col"))
        fprintf(out, "  convolutions: im2col + BLAS, chosen by %s\n",
               !strcmp(ci.source, "user") ? "PZ_CONV_KERNELS" : "pipezip (this CPU lacks AVX2 and FMA)");
    else
        fprintf(out, "  convolutions: pipezip's direct %s kernels (1x1: im2col + BLAS), chosen by %s\n",
               !strcmp(ci.name, "avx512") ? "AVX-512" : "AVX2", !strcmp(ci.source, "user") ? "PZ_CONV_KERNELS" : "the CPU's features");
}

int tool_bench_train(const bench_train_options *o, FILE *out) {
    const char *model = o->model, *input = o->input;
    const int batch = o->batch, warmup = o->warmup, repeat = o->repeat;
    pz_set_threads(o->threads);
    pz_model_spec spec;
    if (pz_model_spec_parse(&spec, model)) {
        fprintf(stderr, "pipezip bench train: %s\n", pz_last_error());
        return 1;
    }
    const int lm = pz_model_spec_is_sequence(&spec), V = 256;
    pz_shape in = lm ? pz_shape_tokens(spec.context) : !strcmp(input, "3x32x32") ? pz_shape_image(3, 32, 32) : pz_shape_image(1, 28, 28);
    char in_str[48];
    pz_shape_str(in, in_str, sizeof in_str);
    input = in_str;
    const int classes = lm ? V : 10;
    pz_model m;
    if (pz_model_build(&m, &spec, in, classes, batch, 1, 0, 1 << 30)) {
        fprintf(stderr, "pipezip bench train: %s\n", pz_last_error());
        return 1;
    }
    pz_optim opt = {.momentum = 0.9f, .weight_decay = lm ? 0.1f : 5e-4f, .beta2 = 0.95f, .decay = m.decay};
    pz_optim_init(&opt, lm ? PZ_OPT_ADAMW : PZ_OPT_SGD, m.n_params);
    const size_t n = (size_t)batch * pz_shape_numel(in), ny = (size_t)batch * m.targets;
    float *x = pz_xfloats(n);
    int32_t *y = pz_xcalloc(ny, sizeof(int32_t));
    pz_rng r;
    pz_rng_seed(&r, 7);
    for (size_t i = 0; i < n; i++) x[i] = lm ? (float)pz_rng_below(&r, V) : pz_rng_normal(&r);
    for (size_t i = 0; i < ny; i++) y[i] = (int32_t)pz_rng_below(&r, (uint32_t)classes);
    const int per = lm ? m.targets : 1; /* tokens per sample, or 1 */
    double *t = pz_xcalloc((size_t)repeat, sizeof(double));
    for (int i = 0; i < warmup + repeat; i++) {
        const double t0 = pz_now();
        pz_train_step(&m, &opt, 0.01f, x, y, batch, NULL);
        if (i >= warmup) t[i - warmup] = pz_now() - t0;
    }
    const double med = pz_median(t, repeat), lo = t[0], hi = t[repeat - 1];
    /* counted FLOPs of a step: 2 per multiply-accumulate forward, twice
     * that backward (attention counts its whole T x T square, as MFU does) */
    int64_t macs = 0;
    for (int i = 0; i < m.net.n; i++) macs += m.net.layers[i].macs;
    const double step_flops = 6.0 * (double)macs * batch;
    const bench_peak peak = tool_fma_peak(pz_get_threads());
    const double gflops = step_flops / med / 1e9, frac = peak.team_gflops > 0 ? gflops / peak.team_gflops : 0.0;
    /* the profile: `repeat` more steps, each phase and layer timed */
    prof_table pt = {0};
    if (o->profile) profile_steps(&m, &opt, x, y, batch, repeat, &pt);
    /* what ran: the BLAS, its kernels and who chose them */
    const pz_blas_info bi = pz_blas_get_info();
    const pz_conv_info ci = pz_nn_conv_info(), gi = pz_nn_gemm_info();
    if (o->json)
        fprintf(out, "{\"bench\": \"train\", \"model\": \"%s\", \"input\": \"%s\", \"batch\": %d, \"threads\": %d, "
               "\"repeat\": %d, \"median_ms\": %.3f, \"min_ms\": %.3f, \"max_ms\": %.3f, \"samples_per_s\": %.1f, "
               "\"tokens_per_s\": %.1f, "
               "\"blas\": \"%s\", \"blas_core\": \"%s\", \"blas_core_chosen_by\": \"%s\", \"blas_generic\": %s, "
               "\"conv_kernels\": \"%s\", \"conv_kernels_chosen_by\": \"%s\", \"conv_generic\": %s, "
               "\"gemm_kernels\": \"%s\", \"gemm_kernels_chosen_by\": \"%s\", "
               "\"step_gflop\": %.4f, \"gflops\": %.2f, \"peak_isa\": \"%s\", \"peak_gflops_core\": %.2f, "
               "\"peak_gflops\": %.2f, \"fraction_of_peak\": %.4f",
               model, input, batch, pz_get_threads(), repeat, 1e3 * med, 1e3 * lo, 1e3 * hi, batch / med,
               lm ? batch * per / med : 0.0, bi.library, bi.core, bi.source, bi.generic ? "true" : "false", ci.name,
               ci.source, ci.generic ? "true" : "false", gi.name, gi.source, step_flops / 1e9, gflops, peak.isa,
               peak.core_gflops, peak.team_gflops, frac);
    if (o->json) {
        if (o->profile) {
            fprintf(out, ", \"profile\": [");
            for (int k = 0; k < pt.n; k++)
                fprintf(out, "%s{\"layer\": \"%s\", \"kind\": \"%s\", \"forward_ms\": %.4f, \"backward_ms\": %.4f, \"gflop\": %.4f}",
                        k ? ", " : "", pt.rows[k].name, pt.rows[k].kind, 1e3 * pt.rows[k].s[0], 1e3 * pt.rows[k].s[1],
                        pt.rows[k].flops / 1e9);
            fprintf(out, "]");
        }
        fprintf(out, "}\n");
    } else {
        fprintf(out, "pipezip bench train: %s, input %s, batch %d, %d threads: median %.2f ms/step (min %.2f, max %.2f, %d steps), %.0f %s/s\n",
               model, input, batch, pz_get_threads(), 1e3 * med, 1e3 * lo, 1e3 * hi, repeat, batch * per / med,
               lm ? "tokens" : "samples");
        if (peak.team_gflops > 0)
            fprintf(out, "  %.2f GFLOP a step (counted: 6 x MACs x batch) at %.1f GFLOP/s = %.0f%% of the FMA peak measured now "
                         "(%s: %.1f GFLOP/s on %d thread%s, %.1f on one)\n",
                    step_flops / 1e9, gflops, 100.0 * frac, peak.isa, peak.team_gflops, peak.threads, peak.threads == 1 ? "" : "s",
                    peak.core_gflops);
        print_kernels(out, &bi, &ci, &gi, lm);
        if (o->profile) print_profile(out, &pt, &peak, repeat);
    }
    if (bi.generic)
        fprintf(stderr, "pipezip bench train: warning: the BLAS runs its %s kernels, which do not use this CPU's vector units "
                        "(%s; unset OPENBLAS_CORETYPE to let pipezip choose)\n",
                bi.core, !strcmp(bi.source, "user") ? "chosen by OPENBLAS_CORETYPE" : "a generic fallback");
    if (ci.generic)
        fprintf(stderr, "pipezip bench train: warning: the convolutions run the %s kernels, which do not use all of this "
                        "CPU's vector units (PZ_CONV_KERNELS=%s; unset it to let pipezip choose)\n",
                ci.name, ci.name);
    free(pt.rows), free(t), free(x), free(y);
    pz_optim_free(&opt);
    pz_model_free(&m);
    return 0;
}


int tool_models(FILE *out, char **names, int n_names, const char *input, int classes, int vocab, int subspace, int project, const char *cuts) {
    pz_shape in = !strcmp(input, "3x32x32") ? pz_shape_image(3, 32, 32) : pz_shape_image(1, 28, 28);
    pz_set_threads(1);
    const char *const *presets = pz_model_preset_names();
    /* every name first: a wrong one is named before anything is shown */
    for (int k = 0; k < n_names; k++) {
        pz_model_spec s;
        if (pz_model_spec_parse(&s, names[k])) {
            fprintf(stderr, "pipezip models: %s\n", pz_last_error());
            return 2;
        }
    }
    int n = 0;
    while (presets[n]) n++;
    const int count = n_names ? n_names : n;
    for (int i = 0; i < count; i++) {
        const char *name = n_names ? names[i] : presets[i];
        pz_model_spec s;
        pz_model m;
        pz_model_spec_parse(&s, name);
        const int lm = pz_model_spec_is_sequence(&s);
        if (lm) s.subspace = subspace;
        if (lm && subspace && project) { /* --project's pairs at the named cuts */
            char list[16][64];
            int nc = 0;
            for (const char *c = cuts; c && *c && nc < 16;) {
                const char *e = strchr(c, ',');
                const size_t len = e ? (size_t)(e - c) : strlen(c);
                snprintf(list[nc++], sizeof list[0], "%.*s", (int)(len < 63 ? len : 63), c);
                c = e ? e + 1 : c + len;
            }
            s.project = project, s.project_after = pz_model_cut_blocks(&s, (const char(*)[64])list, nc);
            if (!nc || __builtin_popcount(s.project_after) != nc) {
                fprintf(stderr, "pipezip models: --project %d needs --cuts naming blocks with another after them (h.0,h.1,...), got '%s'\n",
                        project, cuts ? cuts : "");
                return 2;
            }
        }
        if (pz_model_build(&m, &s, lm ? pz_shape_tokens(s.context) : in, lm ? vocab : classes, 1, 0, 0, 1 << 30)) {
            fprintf(stderr, "pipezip models: %s\n", pz_last_error());
            return 1;
        }
        if (lm)
            fprintf(out, "%s%s (%d blocks, width %d, %d heads, context %d tokens, vocabulary %d%s%.0d%s%.0d)\n", i ? "\n" : "", name,
                    s.layers, s.dim, s.heads, s.context, vocab, s.subspace ? ", subspace " : "", s.subspace,
                    s.project ? ", projected at the cuts to " : "", s.project);
        else fprintf(out, "%s%s (input %s, %d classes)\n", i ? "\n" : "", name, input, classes);
        pz_model_describe(&m, out);
        pz_model_free(&m);
    }
    return 0;
}
