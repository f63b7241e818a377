/* SPDX-License-Identifier: MIT */
/* traffic.c — what crossed each pipeline boundary, per epoch and per run:
 * boundary records (bytes, ratio, bits per element, compression error,
 * codec and link time), the run's byte totals and its per-boundary results. */
#include "metrics.h"
#include "records.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

pz_status pz_traffic_start(pz_traffic *t, pz_pipe *pipe, int n_boundaries) {
    t->n = n_boundaries;
    memset(t->prev, 0, sizeof t->prev);
    PZ_TRY(pz_pipe_collect_stats(pipe));
    for (int b = 0; b < t->n; b++) t->prev[b] = pz_pipe_boundary_stats(pipe, b);
    memcpy(t->first, t->prev, sizeof t->first);
    return PZ_OK;
}

pz_status pz_traffic_pause(pz_traffic *t, pz_pipe *pipe) {
    PZ_TRY(pz_pipe_collect_stats(pipe));
    for (int b = 0; b < t->n; b++) t->paused[b] = pz_pipe_boundary_stats(pipe, b);
    return PZ_OK;
}

/* every counter of pz_boundary_stats: U for the integers, D for the doubles */
#define STATS_FIELDS(U, D)                                                                                                  \
    U(fwd_bytes) U(bwd_bytes) U(fwd_frames) U(bwd_frames) U(fwd_elements) U(bwd_elements) D(fwd_err_sum) D(bwd_err_sum)  \
    U(fwd_err_n) U(bwd_err_n) D(fwd_encode_s) D(fwd_decode_s) D(bwd_encode_s) D(bwd_decode_s) U(eval_bytes)              \
    U(link_fwd_bytes) U(link_bwd_bytes) U(wire_fwd_bytes) U(wire_bwd_bytes) U(link_fwd_messages) U(link_bwd_messages)  \
    D(busy_fwd_s) D(busy_bwd_s)

/* x += to - from, field by field (counters wrap as unsigned: differences stay right) */
static void shift(pz_boundary_stats *x, const pz_boundary_stats *from, const pz_boundary_stats *to) {
#define U(f) x->f += to->f - from->f;
    STATS_FIELDS(U, U)
#undef U
}

/* the run's totals += sign x one boundary's counts d */
static void add_totals(pz_traffic *t, const pz_boundary_stats *d, double sign) {
    t->fwd += sign * (double)d->fwd_bytes, t->bwd += sign * (double)d->bwd_bytes;
    t->fp32 += sign * 4.0 * (double)(d->fwd_elements + d->bwd_elements);
    t->eval += sign * (double)d->eval_bytes;
    t->link += sign * (double)(d->link_fwd_bytes + d->link_bwd_bytes);
}

pz_status pz_traffic_resume(pz_traffic *t, pz_pipe *pipe) {
    PZ_TRY(pz_pipe_collect_stats(pipe));
    for (int b = 0; b < t->n; b++) {
        const pz_boundary_stats now = pz_pipe_boundary_stats(pipe, b);
        shift(&t->prev[b], &t->paused[b], &now);
        shift(&t->first[b], &t->paused[b], &now);
    }
    return PZ_OK;
}

pz_status pz_traffic_now(const pz_traffic *t, pz_pipe *pipe, double *fwd, double *bwd) {
    PZ_TRY(pz_pipe_collect_stats(pipe));
    *fwd = t->fwd, *bwd = t->bwd;
    for (int b = 0; b < t->n; b++) {
        const pz_boundary_stats bs = pz_pipe_boundary_stats(pipe, b);
        *fwd += (double)(bs.fwd_bytes - t->prev[b].fwd_bytes), *bwd += (double)(bs.bwd_bytes - t->prev[b].bwd_bytes);
    }
    return PZ_OK;
}

pz_status pz_traffic_checkpoint(const pz_traffic *t, pz_pipe *pipe, const char *path, double totals[5]) {
    PZ_TRY(pz_pipe_collect_stats(pipe));
    pz_traffic sum = {.fwd = t->fwd, .bwd = t->bwd, .fp32 = t->fp32, .eval = t->eval, .link = t->link};
    FILE *f = fopen(path, "w");
    if (!f) return pz_fail(PZ_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    int bad = 0;
    for (int b = 0; b < t->n; b++) {
        const pz_boundary_stats now = pz_pipe_boundary_stats(pipe, b);
        pz_boundary_stats d = {0};
        shift(&d, &t->prev[b], &now);
        add_totals(&sum, &d, 1.0);
        bad |= fprintf(f, "{\"boundary\": %d", b + 1) < 0;
#define U(x) bad |= fprintf(f, ", \"" #x "\": %llu", (unsigned long long)d.x) < 0;
#define D(x) bad |= fprintf(f, ", \"" #x "\": %.17g", d.x) < 0;
        STATS_FIELDS(U, D)
#undef U
#undef D
        bad |= fprintf(f, "}\n") < 0;
    }
    bad |= fclose(f) != 0;
    totals[0] = sum.fwd, totals[1] = sum.bwd, totals[2] = sum.fp32, totals[3] = sum.eval, totals[4] = sum.link;
    return bad ? pz_fail(PZ_ERR_IO, "cannot write '%s'", path) : PZ_OK;
}

pz_status pz_traffic_carry(pz_traffic *t, const char *path) {
    char *text = pz_slurp(path);
    if (!text) return pz_fail(PZ_ERR_IO, "the checkpoint's boundary counts '%s' cannot be read", path);
    int b = 0;
    pz_status st = PZ_OK;
    for (char *line = strtok(text, "\n"); line && !st; line = strtok(NULL, "\n"), b++) {
        double v;
        pz_boundary_stats d = {0}, zero = {0};
        if (b >= t->n || !pz_json_num(line, "boundary", &v) || v != b + 1) {
            st = pz_fail(PZ_ERR_FORMAT, "'%s' line %d is not boundary %d's counts", path, b + 1, b + 1);
            break;
        }
#define U(x) if (!st && !pz_json_num(line, #x, &v)) st = pz_fail(PZ_ERR_FORMAT, "'%s' line %d has no '" #x "'", path, b + 1); else d.x = (uint64_t)v;
#define D(x) if (!st && !pz_json_num(line, #x, &v)) st = pz_fail(PZ_ERR_FORMAT, "'%s' line %d has no '" #x "'", path, b + 1); else d.x = v;
        STATS_FIELDS(U, D)
#undef U
#undef D
        if (st) break;
        shift(&t->prev[b], &d, &zero); /* the epoch so far counts from before the resume */
        add_totals(t, &d, -1.0); /* the record's totals include the epoch so far: the epoch's end adds it again */
    }
    free(text);
    if (!st && b != t->n) st = pz_fail(PZ_ERR_FORMAT, "'%s' has %d boundaries' counts, the pipeline %d boundaries", path, b, t->n);
    return st;
}

static double mean(double sum, uint64_t n) { return n ? sum / (double)n : 0; }
static double ratio(double a, uint64_t b) { return b ? a / (double)b : 0; }

pz_status pz_traffic_epoch(pz_traffic *t, pz_pipe *pipe, int epoch, const pz_seq *net, const pz_pipe_config *pc,
                           pz_metrics *m, pz_run_result *res) {
    PZ_TRY(pz_pipe_collect_stats(pipe));
    for (int b = 0; b < t->n; b++) {
        const pz_boundary_stats bs = pz_pipe_boundary_stats(pipe, b), *o = &t->prev[b], *f0 = &t->first[b];
        const char *after = net->layers[pc->cuts[b]].name;
        /* a budget: the codec each sender uses at the epoch's end (budget.jsonl has every choice) */
        const pz_budget *bg = &pc->budget;
        const char *fwd = bg->kind && bs.fwd_rung >= 0 && bs.fwd_rung < bg->n_rungs ? bg->rung[bs.fwd_rung].text : pz_pipe_spec_text(&pc->fwd[b]);
        const char *bwd = bg->kind && bs.bwd_rung >= 0 && bs.bwd_rung < bg->n_rungs ? bg->rung[bs.bwd_rung].text : pz_pipe_spec_text(&pc->bwd[b]);
        /* this epoch's traffic */
        const uint64_t fb = bs.fwd_bytes - o->fwd_bytes, bb = bs.bwd_bytes - o->bwd_bytes;
        const uint64_t fe = bs.fwd_elements - o->fwd_elements, be = bs.bwd_elements - o->bwd_elements;
        pz_boundary_stats d = {0};
        shift(&d, o, &bs);
        add_totals(t, &d, 1.0);
        if (m && m->f) {
            pz_field f[] = {
                PZ_NUM("epoch", epoch), PZ_NUM("boundary", b + 1), PZ_STR("after", after),
                PZ_STR("fwd", fwd), PZ_STR("bwd", bwd),
                PZ_NUM("fwd_bytes", fb), PZ_NUM("bwd_bytes", bb),
                PZ_NUM("fwd_elements", fe), PZ_NUM("bwd_elements", be),
                PZ_NUM("fwd_ratio", ratio(4.0 * (double)fe, fb)),
                PZ_NUM("bwd_ratio", ratio(4.0 * (double)be, bb)),
                PZ_NUM("fwd_bits_per_element", ratio(8.0 * (double)fb, fe)),
                PZ_NUM("bwd_bits_per_element", ratio(8.0 * (double)bb, be)),
                PZ_NUM("fwd_error", mean(bs.fwd_err_sum - o->fwd_err_sum, bs.fwd_err_n - o->fwd_err_n)),
                PZ_NUM("bwd_error", mean(bs.bwd_err_sum - o->bwd_err_sum, bs.bwd_err_n - o->bwd_err_n)),
                PZ_NUM("fwd_encode_s", bs.fwd_encode_s - o->fwd_encode_s),
                PZ_NUM("fwd_decode_s", bs.fwd_decode_s - o->fwd_decode_s),
                PZ_NUM("bwd_encode_s", bs.bwd_encode_s - o->bwd_encode_s),
                PZ_NUM("bwd_decode_s", bs.bwd_decode_s - o->bwd_decode_s),
                PZ_NUM("eval_bytes", bs.eval_bytes - o->eval_bytes),
                PZ_NUM("link_fwd_bytes", bs.link_fwd_bytes - o->link_fwd_bytes),
                PZ_NUM("link_bwd_bytes", bs.link_bwd_bytes - o->link_bwd_bytes),
                PZ_NUM("wire_fwd_bytes", bs.wire_fwd_bytes - o->wire_fwd_bytes),
                PZ_NUM("wire_bwd_bytes", bs.wire_bwd_bytes - o->wire_bwd_bytes),
                PZ_NUM("link_fwd_busy_s", bs.busy_fwd_s - o->busy_fwd_s),
                PZ_NUM("link_bwd_busy_s", bs.busy_bwd_s - o->busy_bwd_s)};
            PZ_TRY(pz_metrics_write(m, f, (int)(sizeof f / sizeof *f)));
        }
        t->prev[b] = bs;
        /* this run's totals per boundary (a resumed run: since the resume) */
        pz_run_boundary *rb = &res->boundaries[b];
        snprintf(rb->after, sizeof rb->after, "%s", after);
        snprintf(rb->fwd, sizeof rb->fwd, "%s", fwd);
        snprintf(rb->bwd, sizeof rb->bwd, "%s", bwd);
        rb->fwd_bytes = bs.fwd_bytes - f0->fwd_bytes, rb->bwd_bytes = bs.bwd_bytes - f0->bwd_bytes;
        rb->fp32_fwd_bytes = 4 * (bs.fwd_elements - f0->fwd_elements);
        rb->fp32_bwd_bytes = 4 * (bs.bwd_elements - f0->bwd_elements);
        rb->fwd_error = mean(bs.fwd_err_sum - f0->fwd_err_sum, bs.fwd_err_n - f0->fwd_err_n);
        rb->bwd_error = mean(bs.bwd_err_sum - f0->bwd_err_sum, bs.bwd_err_n - f0->bwd_err_n);
    }
    res->fwd_bytes = (uint64_t)t->fwd, res->bwd_bytes = (uint64_t)t->bwd;
    res->fp32_bytes = (uint64_t)t->fp32, res->eval_bytes = (uint64_t)t->eval;
    res->link_bytes = (uint64_t)t->link;
    return PZ_OK;
}

const pz_run_boundary *pz_run_result_boundary(const pz_run_result *r, int b) {
    if (!r || b < 0 || b >= r->n_stages - 1 || b >= PZ_RUN_MAX_BOUNDARIES) return NULL;
    return &r->boundaries[b];
}
