/* SPDX-License-Identifier: MIT */
/* describe.c — a model as a table: what `pipezip models` prints, and what a
 * user reads to choose where to cut (the activation column is what a
 * boundary after that layer carries per sample). */
#include "layer.h"

static void human(char *buf, size_t cap, double v) {
    if (v >= 1e9) snprintf(buf, cap, "%.2fG", v / 1e9);
    else if (v >= 1e6) snprintf(buf, cap, "%.2fM", v / 1e6);
    else if (v >= 1e3) snprintf(buf, cap, "%.1fk", v / 1e3);
    else snprintf(buf, cap, "%.0f", v);
}

void pz_model_describe(const pz_model *m, FILE *out) {
    const pz_seq *s = &m->net;
    /* a language model is read per token: its FLOPs and boundaries scale
     * with the context */
    const int lm = s->in.rank == 1;
    const int64_t per = lm ? s->in.d[0] : 1;
    fprintf(out, "  %3s  %-10s %-15s %-12s %9s %9s %12s  %s\n", "#", "name", "kind", "output", "params",
            lm ? "FLOPs/tok" : "FLOPs", lm ? "boundary/tok" : "activation", "settings");
    int64_t params = 0, macs = 0;
    for (int i = 0; i < s->n; i++) {
        const pz_layer *l = &s->layers[i];
        const pz_layer_ops *ops = pz_layer_ops_of(l->kind);
        char shape[32], p[16], f[16], a[32], detail[48] = "";
        pz_shape_str(l->out, shape, sizeof shape);
        human(p, sizeof p, (double)l->n_params);
        human(f, sizeof f, 2.0 * (double)l->macs / (double)per);
        const int64_t n = pz_shape_numel(l->out) / per;
        if (n * 4 >= 1024) snprintf(a, sizeof a, "%.1f KiB", n * 4 / 1024.0);
        else snprintf(a, sizeof a, "%lld B", (long long)n * 4);
        if (ops->detail) ops->detail(l, detail, sizeof detail);
        fprintf(out, "  %3d  %-10s %-15s %-12s %9s %9s %12s%s%s\n", i, l->name, ops->name, shape, p, f, a,
                detail[0] ? "  " : "", detail);
        params += l->n_params;
        macs += l->macs;
    }
    char p[16], f[16];
    human(p, sizeof p, (double)params);
    human(f, sizeof f, 2.0 * (double)macs / (double)per);
    fprintf(out, "  total: %lld parameters (%s), %s FLOPs forward per %s\n", (long long)params, p, f,
            lm ? "token" : "sample");
}
