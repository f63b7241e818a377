/* describe.c — a model as a table: what `pipezip models` prints, and what a
 * user reads to choose where to cut (the activation column is what a
 * boundary after that layer carries per sample). */
#include "nn.h"

static void human(char *buf, size_t cap, double v) {
    if (v >= 1e9) snprintf(buf, cap, "%.2fG", v / 1e9);
    else if (v >= 1e6) snprintf(buf, cap, "%.2fM", v / 1e6);
    else if (v >= 1e3) snprintf(buf, cap, "%.1fk", v / 1e3);
    else snprintf(buf, cap, "%.0f", v);
}

void pz_model_describe(const pz_model *m, FILE *out) {
    const pz_seq *s = &m->net;
    fprintf(out, "  %3s  %-10s %-15s %-12s %9s %9s %12s\n", "#", "name", "kind", "output", "params", "FLOPs",
            "activation");
    int64_t params = 0, macs = 0;
    for (int i = 0; i < s->n; i++) {
        const pz_layer *l = &s->layers[i];
        char shape[32], p[16], f[16], a[32];
        pz_shape_str(l->out, shape, sizeof shape);
        human(p, sizeof p, (double)l->n_params);
        human(f, sizeof f, 2.0 * (double)l->macs);
        const int64_t n = pz_shape_numel(l->out);
        if (n * 4 >= 1024) snprintf(a, sizeof a, "%.1f KiB", n * 4 / 1024.0);
        else snprintf(a, sizeof a, "%lld B", (long long)n * 4);
        fprintf(out, "  %3d  %-10s %-15s %-12s %9s %9s %12s\n", i, l->name, pz_layer_kind_name(l->kind), shape, p, f, a);
        params += l->n_params;
        macs += l->macs;
    }
    char p[16], f[16];
    human(p, sizeof p, (double)params);
    human(f, sizeof f, 2.0 * (double)macs);
    fprintf(out, "  total: %lld parameters (%s), %s FLOPs forward per sample\n", (long long)params, p, f);
}
