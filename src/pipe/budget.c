/* SPDX-License-Identifier: MIT */
/* budget.c — a budget's grammar and the rule that spends it (budget.h).
 *
 * The rule, for a budget over the total (RATIO, BYTES): a problem of at
 * most 2^20 combinations (a 4-stage pipeline: 6 items of up to 10 rungs)
 * is searched whole, the least summed error that fits. A larger one: every
 * item (a boundary's direction) keeps only the rungs no other rung beats in
 * both bytes and error, then only those on the lower convex hull of (bytes,
 * error); every item starts at its best rung, and while the total is over
 * the limit the item whose next cheaper hull rung costs the least error
 * per byte saved takes it (ties: the lower item). Once it fits, where the
 * saving overshot, any rung of less error that still fits is taken, the
 * largest error reduction first, then changes of two items at once, until
 * none helps.
 * LINK budgets bound each item alone: its best rung that fits. Everything
 * is deterministic: every stage computing it gets the same choice. */
#include "budget.h"
#include "link/link.h"
#include "pipezip/codec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const pz_name pz_budget_kinds[] = {
    {PZ_BUDGET_OFF, "off", "no budget: --fwd and --bwd"},
    {PZ_BUDGET_RATIO, "ratio", "NUMx: traffic (both directions, headers included) at most fp32's / NUM"},
    {PZ_BUDGET_BYTES, "bytes", "SIZE: at most SIZE bytes per step over every boundary"},
    {PZ_BUDGET_LINK, "link", "RATE@TIME: every link direction sends its step's bytes within TIME at RATE"},
    {0, NULL, NULL},
};

const pz_name pz_budget_rules[] = {
    {PZ_BUDGET_SUM, "sum", "the least summed error"},
    {PZ_BUDGET_MAX, "max", "the least largest error (every boundary and direction as good as the budget allows), then the least sum"},
    {0, NULL, NULL},
};

static pz_status bad_budget(const char *flag, const char *text) {
    return pz_fail(PZ_ERR_ARG, "%s '%s' is not a budget: give a traffic reduction (40x), bytes per step (2MB, 500kB, 1MiB) "
                   "or a link rate and step time (200mbit@50ms)", flag, text);
}

/* "2MB", "1.5MiB", "300000", "64kB/step" */
int pz_parse_size(const char *t, double *out) {
    char *end;
    const double v = strtod(t, &end);
    if (end == t || !isfinite(v) || v <= 0) return 0;
    static const struct { const char *unit; double mul; } units[] = {
        {"", 1}, {"B", 1}, {"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9},
        {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0},
    };
    char unit[16];
    const char *slash = strstr(end, "/step");
    const size_t n = slash ? (size_t)(slash - end) : strlen(end);
    if (slash && slash[5]) return 0;
    if (n >= sizeof unit) return 0;
    memcpy(unit, end, n), unit[n] = 0;
    for (size_t i = 0; i < sizeof units / sizeof *units; i++)
        if (!strcmp(unit, units[i].unit)) {
            *out = v * units[i].mul;
            return *out >= 1.0 && *out <= 1e15;
        }
    return 0;
}

pz_status pz_budget_parse(pz_budget *b, const char *text, const char *flag) {
    b->kind = PZ_BUDGET_OFF, b->value = b->rate = b->time = 0;
    if (!text || !*text || !strcmp(text, "off")) return PZ_OK;
    const size_t n = strlen(text);
    const char *at = strchr(text, '@');
    if (at) {
        char rate[64];
        if ((size_t)(at - text) >= sizeof rate || at == text) return bad_budget(flag, text);
        memcpy(rate, text, (size_t)(at - text)), rate[at - text] = 0;
        double bps, s;
        if (pz_parse_bandwidth(rate, &bps) || pz_parse_duration(at + 1, &s) || bps <= 0 || s <= 0)
            return pz_fail(PZ_ERR_ARG, "%s '%s': RATE@TIME needs a bandwidth above 0 (200mbit) and a time above 0 (50ms)", flag, text);
        b->kind = PZ_BUDGET_LINK, b->rate = bps, b->time = s, b->value = bps * s / 8.0;
        if (b->value < 1.0) return pz_fail(PZ_ERR_ARG, "%s '%s' allows less than a byte per step", flag, text);
        return PZ_OK;
    }
    if (n > 1 && (text[n - 1] == 'x' || text[n - 1] == 'X')) {
        char *end;
        const double v = strtod(text, &end);
        if (end != text + n - 1 || !isfinite(v) || v < 1.0 || v > 1e6)
            return pz_fail(PZ_ERR_ARG, "%s '%s': a traffic reduction is a number from 1 to 1e6 followed by x (40x)", flag, text);
        b->kind = PZ_BUDGET_RATIO, b->value = v;
        return PZ_OK;
    }
    double v;
    if (!pz_parse_size(text, &v)) return bad_budget(flag, text);
    b->kind = PZ_BUDGET_BYTES, b->value = v;
    return PZ_OK;
}

pz_status pz_budget_parse_ladder(pz_budget *b, const char *text, const char *flag) {
    b->n_rungs = 0;
    if (!text || !*text) return pz_fail(PZ_ERR_ARG, "%s is empty: give codec specs best first, SPEC/SPEC/...", flag);
    char canon[PZ_BUDGET_RUNGS][PZ_CODEC_SPEC_MAX];
    for (const char *s = text;;) {
        const char *e = strchr(s, '/');
        const size_t n = e ? (size_t)(e - s) : strlen(s);
        char spec[PZ_CODEC_SPEC_MAX];
        if (n == 0) return pz_fail(PZ_ERR_ARG, "%s '%s' has an empty rung (rungs are SPEC/SPEC/..., best first)", flag, text);
        if (n >= sizeof spec) return pz_fail(PZ_ERR_ARG, "%s: a rung of %zu characters is too long", flag, n);
        if (b->n_rungs == PZ_BUDGET_RUNGS) return pz_fail(PZ_ERR_ARG, "%s: at most %d rungs", flag, PZ_BUDGET_RUNGS);
        memcpy(spec, s, n), spec[n] = 0;
        pz_codec_desc *d = &b->rung[b->n_rungs];
        if (pz_codec_desc_parse(d, spec)) return pz_fail(PZ_ERR_ARG, "%s: %s", flag, pz_last_error());
        pz_codec *c;
        PZ_TRY(pz_codec_create_desc(&c, d));
        const int stateful = pz_codec_is_stateful(c);
        snprintf(canon[b->n_rungs], sizeof canon[0], "%s", pz_codec_spec(c));
        pz_codec_free(c);
        if (stateful)
            return pz_fail(PZ_ERR_ARG, "%s: rung '%s' keeps state from frame to frame; a budget switches codecs, so its rungs "
                           "must be stateless (no ef, ef21, aqsgd or warm lowrank)", flag, spec);
        for (int i = 0; i < b->n_rungs; i++)
            if (!strcmp(canon[i], canon[b->n_rungs]))
                return pz_fail(PZ_ERR_ARG, "%s: rung '%s' is there twice (as %s)", flag, spec, canon[i]);
        b->n_rungs++;
        if (!e) break;
        s = e + 1;
    }
    return PZ_OK;
}

/* ---- the choice ------------------------------------------------------------------- */

/* An item's candidate rungs: Pareto-optimal, on the lower convex hull of
 * (bytes, error), ordered from the cheapest (most error) to the best. */
typedef struct {
    int n, r[PZ_BUDGET_RUNGS];
} hull;

static void make_hull(const pz_budget_meas *m, int L, hull *h) {
    int idx[PZ_BUDGET_RUNGS];
    for (int i = 0; i < L; i++) idx[i] = i;
    /* by bytes ascending, then error ascending, then rung */
    for (int i = 1; i < L; i++)
        for (int j = i; j > 0; j--) {
            const int a = idx[j - 1], c = idx[j];
            const int swap = m->bytes[c] < m->bytes[a] || (m->bytes[c] == m->bytes[a] && (m->err[c] < m->err[a] || (m->err[c] == m->err[a] && c < a)));
            if (!swap) break;
            idx[j - 1] = c, idx[j] = a;
        }
    /* Pareto: each kept rung strictly less error than every cheaper one */
    int p[PZ_BUDGET_RUNGS], np = 0;
    for (int i = 0; i < L; i++) {
        const int r = idx[i];
        if (np && m->bytes[r] == m->bytes[p[np - 1]]) continue; /* same bytes, no less error */
        if (np && !(m->err[r] < m->err[p[np - 1]])) continue;
        p[np++] = r;
    }
    /* lower convex hull (monotone chain): the error saved per byte falls from one to the next */
    h->n = 0;
    for (int i = 0; i < np; i++) {
        const int r = p[i];
        while (h->n >= 2) {
            const int a = h->r[h->n - 2], c = h->r[h->n - 1];
            const double cross = ((double)m->bytes[c] - (double)m->bytes[a]) * (m->err[r] - m->err[a]) -
                                 (m->err[c] - m->err[a]) * ((double)m->bytes[r] - (double)m->bytes[a]);
            if (cross > 0) break; /* c is below the chord a-r: keep it */
            h->n--;
        }
        h->r[h->n++] = r;
    }
}

/* Small problems (at most 2^20 combinations: a 4-stage pipeline's 6 items
 * with up to 10 rungs) are searched whole: the least summed error that
 * fits, then the fewest bytes, then the first in odometer order. 0 when
 * too large, or when nothing fits (the caller takes the cheapest). */
static int exhaustive(const pz_budget_meas *m, int n, int L, double limit, int *choice, double *planned) {
    double combos = 1;
    for (int i = 0; i < n; i++) combos *= L;
    if (n == 0 || combos > 1048576.0) return 0;
    int t[PZ_BUDGET_MAX_ITEMS] = {0}, found = 0;
    double best_e = 0, best_b = 0;
    for (;;) {
        double e = 0, by = 0;
        for (int i = 0; i < n; i++) e += m[i].err[t[i]], by += (double)m[i].bytes[t[i]];
        if (by <= limit && (!found || e < best_e || (e == best_e && by < best_b))) {
            found = 1, best_e = e, best_b = by;
            memcpy(choice, t, sizeof *t * (size_t)n);
        }
        int i = 0;
        while (i < n && ++t[i] == L) t[i++] = 0;
        if (i == n) break;
    }
    if (found) *planned = best_b;
    return found;
}

/* One change of two items' rungs that lowers the summed error and fits
 * (the largest reduction); 0 when none does. */
static int pair_move(const pz_budget_meas *m, int n, int L, double limit, double eps, int *choice, double *total) {
    int bi = -1, bj = -1, br = 0, bs = 0;
    double best = eps;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            for (int r = 0; r < L; r++)
                for (int q = 0; q < L; q++) {
                    const double gain = m[i].err[choice[i]] + m[j].err[choice[j]] - m[i].err[r] - m[j].err[q];
                    const double by = *total - (double)m[i].bytes[choice[i]] - (double)m[j].bytes[choice[j]] + (double)m[i].bytes[r] +
                                      (double)m[j].bytes[q];
                    if (gain > best && by <= limit) bi = i, bj = j, br = r, bs = q, best = gain;
                }
    if (bi < 0) return 0;
    *total += (double)m[bi].bytes[br] - (double)m[bi].bytes[choice[bi]] + (double)m[bj].bytes[bs] - (double)m[bj].bytes[choice[bj]];
    choice[bi] = br, choice[bj] = bs;
    return 1;
}

static pz_status choose(const pz_budget *b, const pz_budget_meas *m, int n_items, int *choice, double limit, double *planned,
                        int *met);

/* the bound in bytes per step: a ratio's of the items' fp32 bytes, else the value */
static double limit_of(const pz_budget *b, const pz_budget_meas *m, int n_items) {
    double fp32 = 0;
    for (int i = 0; i < n_items; i++) fp32 += 4.0 * (double)m[i].elements;
    return b->kind == PZ_BUDGET_RATIO ? fp32 / b->value : b->value;
}

pz_status pz_budget_choose(const pz_budget *b, const pz_budget_meas *m, int n_items, int *choice, double *limit,
                           double *planned, int *met) {
    const double w = b->fwd_weight > 0 ? b->fwd_weight : 1.0;
    const int L = b->n_rungs;
    if (!isfinite(w)) return pz_fail(PZ_ERR_ARG, "a budget's activation weight of %g", w);
    if (b->rule != PZ_BUDGET_SUM && b->rule != PZ_BUDGET_MAX) return pz_fail(PZ_ERR_ARG, "a budget rule of %d", b->rule);
    if (L < 1 || L > PZ_BUDGET_RUNGS || n_items < 0 || n_items > PZ_BUDGET_MAX_ITEMS) return pz_fail(PZ_ERR_ARG, "a budget of %d rungs over %d items", L, n_items);
    for (int i = 0; i < n_items; i++)
        for (int r = 0; r < L; r++)
            if (!isfinite(m[i].err[r]) || m[i].err[r] < 0 || m[i].bytes[r] > (uint64_t)1 << 53)
                return pz_fail(PZ_ERR_STATE, "budget item %d, rung %d: a measurement of %llu bytes and error %g", i, r,
                               (unsigned long long)m[i].bytes[r], m[i].err[r]);
    *limit = limit_of(b, m, n_items);
    if ((w == 1.0 && b->rule == PZ_BUDGET_SUM) || b->kind == PZ_BUDGET_LINK) return choose(b, m, n_items, choice, *limit, planned, met);
    pz_budget_meas wm[PZ_BUDGET_MAX_ITEMS];
    for (int i = 0; i < n_items; i++) {
        wm[i] = m[i];
        if (i % 2 == 0)
            for (int r = 0; r < PZ_BUDGET_RUNGS; r++) wm[i].err[r] *= w;
        for (int r = 0; r < L; r++)
            if (!isfinite(wm[i].err[r]))
                return pz_fail(PZ_ERR_STATE, "budget item %d, rung %d: an error of %g weighed %g is not finite", i, r, m[i].err[r], w);
    }
    if (b->rule == PZ_BUDGET_MAX) {
        /* the least bound tau on every item's error that fits (each item at
         * its fewest bytes within tau), found among the errors measured;
         * then the least sum among the rungs within it (when nothing fits,
         * no bound: the sum rule's search takes the cheapest rungs) */
        double taus[PZ_BUDGET_MAX_ITEMS * PZ_BUDGET_RUNGS];
        int nt = 0;
        for (int i = 0; i < n_items; i++)
            for (int r = 0; r < L; r++) taus[nt++] = wm[i].err[r];
        double best = INFINITY;
        for (int k = 0; k < nt; k++) {
            const double tau = taus[k];
            if (!(tau < best)) continue;
            double total = 0;
            int ok = 1;
            for (int i = 0; i < n_items && ok; i++) {
                int f = -1;
                for (int r = 0; r < L; r++)
                    if (wm[i].err[r] <= tau && (f < 0 || wm[i].bytes[r] < wm[i].bytes[f])) f = r;
                if (f < 0) ok = 0;
                else total += (double)wm[i].bytes[f];
            }
            if (ok && total <= *limit) best = tau;
        }
        /* rungs above the bound are out: as many bytes as could never fit */
        for (int i = 0; i < n_items; i++)
            for (int r = 0; r < L; r++)
                if (wm[i].err[r] > best) wm[i].bytes[r] = (uint64_t)1 << 53;
    }
    return choose(b, wm, n_items, choice, *limit, planned, met);
}

/* The sum rule over measurements already checked (and weighed), under limit. */
static pz_status choose(const pz_budget *b, const pz_budget_meas *m, int n_items, int *choice, double limit, double *planned,
                        int *met) {
    const int L = b->n_rungs;
    *met = 1;
    hull h[PZ_BUDGET_MAX_ITEMS];
    int pos[PZ_BUDGET_MAX_ITEMS];
    if (b->kind == PZ_BUDGET_LINK) {
        /* each item alone: its rung of least error that fits, else its fewest bytes */
        *planned = 0;
        for (int i = 0; i < n_items; i++) {
            int k = -1;
            for (int r = 0; r < L; r++) {
                if ((double)m[i].bytes[r] > limit) continue;
                if (k < 0 || m[i].err[r] < m[i].err[k] || (m[i].err[r] == m[i].err[k] && m[i].bytes[r] < m[i].bytes[k])) k = r;
            }
            if (k < 0) {
                *met = 0, k = 0;
                for (int r = 1; r < L; r++)
                    if (m[i].bytes[r] < m[i].bytes[k] || (m[i].bytes[r] == m[i].bytes[k] && m[i].err[r] < m[i].err[k])) k = r;
            }
            choice[i] = k;
            *planned += (double)m[i].bytes[k];
        }
        return PZ_OK;
    }
    if (exhaustive(m, n_items, L, limit, choice, planned)) return PZ_OK;
    for (int i = 0; i < n_items; i++) make_hull(&m[i], L, &h[i]);
    double total = 0;
    for (int i = 0; i < n_items; i++) pos[i] = h[i].n - 1, total += (double)m[i].bytes[h[i].r[pos[i]]];
    while (total > limit) {
        int best = -1;
        double best_slope = 0;
        for (int i = 0; i < n_items; i++) {
            if (pos[i] == 0) continue;
            const int cur = h[i].r[pos[i]], nxt = h[i].r[pos[i] - 1];
            const double slope = (m[i].err[nxt] - m[i].err[cur]) / ((double)m[i].bytes[cur] - (double)m[i].bytes[nxt]);
            if (best < 0 || slope < best_slope) best = i, best_slope = slope;
        }
        if (best < 0) break;
        total -= (double)m[best].bytes[h[best].r[pos[best]]];
        pos[best]--;
        total += (double)m[best].bytes[h[best].r[pos[best]]];
    }
    for (int i = 0; i < n_items; i++) choice[i] = h[i].r[pos[i]];
    if (total > limit) *met = 0;
    else
        /* the last moves may have saved more than needed: any rung of less
         * error that still fits, the largest gain first, then two items at
         * once; a gain counts above a millionth of a millionth of the summed
         * error (rounding never makes a cycle), and the moves are bounded */
        for (int moves = 0; moves < 100000; moves++) {
            double sum = 0;
            for (int i = 0; i < n_items; i++) sum += m[i].err[choice[i]];
            const double eps = 1e-12 * sum;
            int best = -1, best_r = 0;
            double best_gain = eps;
            for (int i = 0; i < n_items; i++)
                for (int r = 0; r < L; r++) {
                    const int cur = choice[i];
                    const double gain = m[i].err[cur] - m[i].err[r];
                    if (!(gain > best_gain) || total - (double)m[i].bytes[cur] + (double)m[i].bytes[r] > limit) continue;
                    best = i, best_r = r, best_gain = gain;
                }
            if (best >= 0) choice[best] = best_r;
            else if (!pair_move(m, n_items, L, limit, eps, choice, &total)) break;
            total = 0;
            for (int i = 0; i < n_items; i++) total += (double)m[i].bytes[choice[i]];
        }
    *planned = total;
    return PZ_OK;
}
