/* SPDX-License-Identifier: MIT */
/* plan.c — what each stage of a pipeline is: the cut points (from a list
 * or balanced by compute), its layers and parameters, its optimizer, the
 * codecs on its two boundaries (their seeds, the stateless one for
 * evaluation), its checkpoint; and the settings every stage must share. */
#include "pipe_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int plan_stage_codecs(const stage *s) { return s->pipe->S > 1 ? 4 : 0; }

static int layer_index(const pz_seq *net, const char *name) {
    char *end;
    const long v = strtol(name, &end, 10);
    if (end != name && !*end) return v >= 0 && v < net->n ? (int)v : -1;
    for (int i = 0; i < net->n; i++)
        if (!strcmp(net->layers[i].name, name)) return i;
    /* a group ("layer2"): its last block ("layer2.N") */
    const size_t len = strlen(name);
    int found = -1;
    for (int i = 0; i < net->n; i++)
        if (!strncmp(net->layers[i].name, name, len) && net->layers[i].name[len] == '.') found = i;
    return found;
}

pz_status pz_pipe_resolve_cuts(const pz_model *model, const char (*cuts)[64], int n_cuts, int stages, pz_pipe_config *cfg) {
    const pz_seq *net = &model->net;
    if (n_cuts > 0) {
        if (n_cuts > PZ_MAX_STAGES - 1) return pz_fail(PZ_ERR_ARG, "--cuts: at most %d cuts", PZ_MAX_STAGES - 1);
        int prev = -1;
        for (int n = 0; n < n_cuts; n++) {
            const char *t = cuts[n];
            const int i = layer_index(net, t);
            if (i < 0) return pz_fail(PZ_ERR_ARG, "--cuts: '%s' is not a layer of %s (see pipezip models %s)", t, model->preset, model->preset);
            if (i <= prev || i >= net->n - 1)
                return pz_fail(PZ_ERR_ARG, "--cuts: '%s' (layer %d) must come after the previous cut and before the last layer", t, i);
            cfg->cuts[n] = i;
            prev = i;
        }
        cfg->n_stages = n_cuts + 1;
        return PZ_OK;
    }
    if (stages < 1 || stages > PZ_MAX_STAGES || stages > net->n)
        return pz_fail(PZ_ERR_ARG, "--stages %d: expected 1..%d for %s", stages, net->n < PZ_MAX_STAGES ? net->n : PZ_MAX_STAGES, model->preset);
    PZ_TRY(pz_pipe_balance(model, stages, cfg->cuts));
    cfg->n_stages = stages;
    return PZ_OK;
}

pz_status pz_pipe_balance(const pz_model *model, int stages, int *cuts) {
    const pz_seq *net = &model->net;
    if (stages < 1 || stages > net->n)
        return pz_fail(PZ_ERR_ARG, "%d stages of %s: expected 1..%d (a stage per top-level layer at most)", stages, model->preset, net->n);
    /* balanced by compute: the contiguous split whose busiest stage has the
     * fewest FLOPs (dynamic programming over the prefix sums; ties go to
     * the most even), every stage at least one layer */
    const int n = net->n, w = n + 1;
    /* pre[i]: FLOPs of layers [0, i); best[k*w+i]: the least possible busiest
     * stage of layers [0, i) in k stages; from[k*w+i]: where its last stage starts */
    int64_t *pre = malloc(sizeof *pre * (size_t)w), *best = malloc(sizeof *best * (size_t)w * (size_t)(stages + 1));
    int *from = malloc(sizeof *from * (size_t)w * (size_t)(stages + 1));
    if (!pre || !best || !from) {
        free(pre), free(best), free(from);
        return pz_fail(PZ_ERR_NOMEM, "out of memory balancing %d stages", stages);
    }
    pre[0] = 0;
    for (int i = 0; i < n; i++) pre[i + 1] = pre[i] + net->layers[i].macs + 1;
    for (int i = 1; i <= n; i++) best[w + i] = pre[i], from[w + i] = 0;
    for (int k = 2; k <= stages; k++)
        for (int i = k; i <= n; i++) {
            best[k * w + i] = INT64_MAX;
            for (int j = k - 1; j < i; j++) {
                const int64_t last = pre[i] - pre[j], prev = best[(k - 1) * w + j], worst = prev > last ? prev : last;
                if (worst < best[k * w + i]) best[k * w + i] = worst, from[k * w + i] = j;
            }
        }
    /* among the splits with that busiest stage, the most even: the least sum
     * of squared stage FLOPs (a second pass bounded by the first's answer) */
    const int64_t bound = best[stages * w + n];
    double *sq = malloc(sizeof *sq * (size_t)w * (size_t)(stages + 1));
    if (!sq) {
        free(pre), free(best), free(from);
        return pz_fail(PZ_ERR_NOMEM, "out of memory balancing %d stages", stages);
    }
    for (int i = 1; i <= n; i++) sq[w + i] = pre[i] <= bound ? (double)pre[i] * (double)pre[i] : INFINITY, from[w + i] = 0;
    for (int k = 2; k <= stages; k++)
        for (int i = k; i <= n; i++) {
            sq[k * w + i] = INFINITY;
            for (int j = k - 1; j < i; j++) {
                const int64_t last = pre[i] - pre[j];
                const double v = sq[(k - 1) * w + j] + (double)last * (double)last;
                if (last <= bound && v < sq[k * w + i]) sq[k * w + i] = v, from[k * w + i] = j;
            }
        }
    free(sq);
    for (int k = stages, i = n; k > 1; k--) {
        i = from[k * w + i];
        cuts[k - 2] = i - 1; /* the last layer of stage k - 2 */
    }
    free(pre), free(best), free(from);
    return PZ_OK;
}

static int64_t param_offset(const pz_seq *net, int layer) {
    int64_t off = 0;
    for (int i = 0; i < layer; i++) off += net->layers[i].n_params;
    return off;
}

pz_status pz_pipe_parse_specs(const char *arg, int n_boundaries, pz_codec_desc *out, const char *flag) {
    pz_codec_list *l = malloc(sizeof *l);
    if (!l) return pz_fail(PZ_ERR_NOMEM, "out of memory parsing %s", flag);
    pz_status st = pz_codec_list_parse(l, arg, n_boundaries, flag);
    if (!st) st = pz_codec_list_resolve(l, n_boundaries, out, flag);
    free(l);
    return st;
}

/* a zeroed description (or NULL) is "none" */
static pz_status make_codec(pz_codec **c, const pz_codec_desc *d, uint32_t max_samples) {
    PZ_TRY(pz_codec_create_desc(c, pz_codec_desc_or_none(d)));
    if (max_samples) pz_codec_set_max_samples(*c, max_samples);
    return PZ_OK;
}

/* the seed of stage i's sender of direction dir (0: activations, 1: gradients),
 * at the start and whenever a budget gives it another codec */
static uint64_t sender_seed(const pz_pipe_config *cfg, int i, int dir) { return cfg->seed * 1000003u + 2 * (uint64_t)i + (uint64_t)dir; }

/* evaluation uses the forward codec's stateless base (an EF/EF21/AQ-SGD
 * wrapper's base codec) */
static pz_status make_eval_codec(pz_codec **c, const pz_codec_desc *fwd) {
    const pz_codec_desc base = pz_codec_desc_base(pz_codec_desc_or_none(fwd));
    return make_codec(c, &base, 0);
}

/* the stage holding top-level layer k */
static int stage_of(const pz_pipe *p, int k) {
    for (int b = 0; b + 1 < p->S; b++)
        if (k <= p->cfg.cuts[b]) return b;
    return p->S - 1;
}

/* A tied head on a later stage than its embedding: the two stages and what
 * they exchange (pipe_internal.h). */
static void plan_tie(pz_pipe *p, stage *s) {
    const pz_seq *net = &s->model[0].net;
    s->tie_e = s->tie_l = s->tie_head = -1;
    for (int h = 0; h < net->n; h++) {
        const pz_layer *l = &net->layers[h];
        if (l->kind != PZ_LAYER_TIED_HEAD) continue;
        const int e = stage_of(p, l->k), L = stage_of(p, h);
        if (e == L) continue; /* one stage: the layers share the table */
        const pz_layer *emb = &net->layers[l->k];
        s->tie_e = e, s->tie_l = L, s->tie_head = h;
        s->tie_w = emb->weight, s->tie_g = emb->dweight;
        s->tie_n = (size_t)emb->vocab * emb->out.d[1];
        s->tie_dirty = 1; /* tie_l starts from its own initialisation: send the table first */
    }
}

/* A stage's activation memory: each slot's layer buffers (model_act), input
 * and output gradient; stage 0's inputs are the batch's, kept whole (counted
 * with the first slot) */
static int64_t stage_act_bytes(int i, int batch_max, int mb, int first_slot, int64_t model_act, int64_t in_per, int64_t out_per) {
    return (first_slot && i == 0 ? 4 * (int64_t)batch_max * in_per : 0) + model_act + 4 * (int64_t)mb * ((i ? in_per : 0) + out_per);
}

pz_status pz_pipe_stage_memory(const pz_pipe_config *cfg, int i, int M, int64_t *bytes) {
    const pipe_schedule *sc = pipe_schedule_of(cfg->schedule);
    const int S = cfg->n_stages;
    if (!sc || i < 0 || i >= S || M < 1 || M > PZ_MAX_MICRO) return pz_fail(PZ_ERR_ARG, "stage %d of %d in %d micro-batches", i, S, M);
    const int mb = (cfg->batch_max + M - 1) / M,
              slots = pz_pipe_schedule_overlaps(cfg->schedule) ? async_slots(S, i, M, pz_pipe_schedule_overlaps(cfg->schedule), cfg->delay) + 1 : pipe_schedule_slots(sc, S, i, M);
    const int from = i ? cfg->cuts[i - 1] + 1 : 0, to = i == S - 1 ? 1 << 30 : cfg->cuts[i] + 1;
    pz_model m;
    PZ_TRY(pz_model_build(&m, &cfg->model, cfg->in, cfg->n_classes, mb, cfg->seed, from, to));
    const int last = (to < m.net.n ? to : m.net.n) - 1;
    const int64_t in_per = pz_shape_numel(from ? m.net.layers[from - 1].out : m.net.in), out_per = pz_shape_numel(m.net.layers[last].out);
    *bytes = 0;
    for (int k = 0; k < slots; k++) *bytes += stage_act_bytes(i, cfg->batch_max, mb, k == 0, m.act_bytes, in_per, out_per);
    pz_model_free(&m);
    return PZ_OK;
}

pz_status plan_stage(pz_pipe *p, int i) {
    const pz_pipe_config *cfg = &p->cfg;
    stage *s = &p->st[i];
    s->pipe = p, s->index = i, s->M = cfg->micro_batches;
    /* GPipe holds every micro-batch's activations; 1F1B at most S - i; the
     * asynchronous schedule its micro-batches in flight, and evaluation's */
    const int async = pz_pipe_schedule_overlaps(cfg->schedule);
    s->slots = async ? async_slots(p->S, i, s->M, async, cfg->delay) : pipe_schedule_slots(p->schedule, p->S, i, s->M);
    s->eval_slot = async ? s->slots : 0;
    /* buffers for this stage's layers only, one set per slot */
    const int from = i ? cfg->cuts[i - 1] + 1 : 0, to = i == p->S - 1 ? 1 << 30 : cfg->cuts[i] + 1;
    for (int m = 0; m < s->slots + async; m++) {
        PZ_TRY(pz_model_build(&s->model[m], &cfg->model, cfg->in, cfg->n_classes, p->mb_max, cfg->seed, from, to));
        if (m) pz_model_share(&s->model[m], &s->model[0]);
    }
    if (s->model[0].targets != pipe_targets(p))
        return pz_fail(PZ_ERR_ARG, "model '%s' has %d targets per sample, the data %d", cfg->model.name, s->model[0].targets,
                       pipe_targets(p));
    const int n = s->model[0].net.n;
    s->from = from;
    s->to = i == p->S - 1 ? n : to;
    if (s->to <= s->from || s->to > n)
        return pz_fail(PZ_ERR_ARG, "cut after layer %d does not leave stage %d any layers (the model has %d)", cfg->cuts[i], i, n);
    s->p0 = param_offset(&s->model[0].net, s->from);
    s->p1 = param_offset(&s->model[0].net, s->to);
    s->macs = 0;
    for (int j = s->from; j < s->to; j++) s->macs += s->model[0].net.layers[j].macs;
    const int64_t in_per = pz_shape_numel(stage_in_shape(s)), out_per = pz_shape_numel(stage_out_shape(s));
    s->act_bytes = 0;
    for (int m = 0; m < s->slots + async; m++)
        s->act_bytes += stage_act_bytes(i, cfg->batch_max, p->mb_max, m ? 0 : 1, s->model[m].act_bytes, in_per, out_per);
    plan_tie(p, s);
    if (async && s->tie_e >= 0)
        return pz_fail(PZ_ERR_ARG, "--pipe-schedule async: model '%s' ties its head to its token table across stages %d and %d, "
                       "which the asynchronous schedule does not version yet (untie it: untied=1)", cfg->model.name, s->tie_e, s->tie_l);
    s->opt = (pz_optim){.momentum = cfg->momentum, .nesterov = cfg->nesterov, .weight_decay = cfg->weight_decay,
                        .decay = s->model[0].decay ? s->model[0].decay + s->p0 : NULL};
    PZ_TRY(pz_optim_init(&s->opt, cfg->optimizer, s->p1 - s->p0));
    if (async) PZ_TRY(async_plan(s));
    const pz_ckpt_params v = {s->ver[0], s->ver[1]}, *vp = async ? &v : NULL;
    if (i > 0) {
        PZ_TRY(make_codec(&s->fwd_rx, &cfg->fwd[i - 1], cfg->max_samples));
        PZ_TRY(make_codec(&s->bwd_tx, &cfg->bwd[i - 1], cfg->max_samples));
        PZ_TRY(make_eval_codec(&s->eval_rx, &cfg->fwd[i - 1]));
        PZ_TRY(make_codec(&s->plain_rx, NULL, 0));
        pz_codec_set_seed(s->bwd_tx, sender_seed(cfg, i, 1));
        s->bwd_lossless = pz_codec_is_lossless(s->bwd_tx);
    }
    if (i < p->S - 1) {
        PZ_TRY(make_codec(&s->fwd_tx, &cfg->fwd[i], cfg->max_samples));
        PZ_TRY(make_codec(&s->bwd_rx, &cfg->bwd[i], cfg->max_samples));
        PZ_TRY(make_eval_codec(&s->eval_tx, &cfg->fwd[i]));
        PZ_TRY(make_codec(&s->plain_tx, NULL, 0));
        pz_codec_set_seed(s->fwd_tx, sender_seed(cfg, i, 0));
        s->fwd_lossless = pz_codec_is_lossless(s->fwd_tx);
    }
    s->rep.stage = i;
    /* a budget: every rung of each direction this stage sends, to measure (the senders start at the first) */
    for (int d = 0; d < 2 && cfg->budget.kind != PZ_BUDGET_OFF; d++) {
        if (d == 0 ? i == p->S - 1 : i == 0) continue;
        for (int r = 0; r < cfg->budget.n_rungs; r++) PZ_TRY(make_codec(&s->probe[d][r], &cfg->budget.rung[r], cfg->max_samples));
    }
    if (cfg->resume) {
        char path[4200];
        snprintf(path, sizeof path, "%s/stage-%d.bin", cfg->resume, i);
        uint8_t *data;
        size_t len;
        pz_status st = pz_read_file(path, &data, &len);
        if (!st) {
            pz_codec *codecs[4] = {s->fwd_rx, s->bwd_tx, s->fwd_tx, s->bwd_rx};
            st = plan_adopt_rungs(s, data, len, path);
            if (!st) codecs[1] = s->bwd_tx, codecs[2] = s->fwd_tx; /* the rungs taken */
            if (!st) st = pz_checkpoint_unpack(data, len, path, i, &s->model[0], s->p0, s->p1, vp, &s->opt, codecs, plan_stage_codecs(s));
            free(data);
        }
        if (st) return pz_fail(st, "stage %d: %s", i, pz_last_error());
    } else if (cfg->restore && cfg->restore->blob[i]) {
        pz_status st = plan_adopt_rungs(s, cfg->restore->blob[i], cfg->restore->len[i], "a snapshot");
        pz_codec *codecs[4] = {s->fwd_rx, s->bwd_tx, s->fwd_tx, s->bwd_rx};
        if (!st) st = pz_checkpoint_unpack(cfg->restore->blob[i], cfg->restore->len[i], "a snapshot", i, &s->model[0], s->p0,
                                           s->p1, vp, &s->opt, codecs, plan_stage_codecs(s));
        if (st) return pz_fail(st, "stage %d: %s", i, pz_last_error());
    }
    if (async) async_loaded(s);
    return PZ_OK;
}

pz_status plan_use_rung(stage *s, int dir, int r) {
    const pz_pipe_config *cfg = &s->pipe->cfg;
    if (r == s->rung[dir]) return PZ_OK;
    if (r < 0 || r >= cfg->budget.n_rungs || (dir == 0 ? !s->fwd_tx : !s->bwd_tx))
        return pz_fail(PZ_ERR_STATE, "stage %d has no %s rung %d", s->index, dir ? "gradient" : "activation", r);
    const pz_codec_desc *d = &cfg->budget.rung[r];
    pz_codec *c, *e = NULL;
    PZ_TRY(make_codec(&c, d, cfg->max_samples));
    if (dir == 0) {
        const pz_status st = make_eval_codec(&e, d);
        if (st) {
            pz_codec_free(c);
            return st;
        }
        pz_codec_set_seed(c, sender_seed(cfg, s->index, 0));
        pz_codec_free(s->fwd_tx), pz_codec_free(s->eval_tx);
        s->fwd_tx = c, s->eval_tx = e;
        s->fwd_lossless = pz_codec_is_lossless(c);
    } else {
        pz_codec_set_seed(c, sender_seed(cfg, s->index, 1));
        pz_codec_free(s->bwd_tx);
        s->bwd_tx = c;
        s->bwd_lossless = pz_codec_is_lossless(c);
    }
    s->rung[dir] = r;
    return PZ_OK;
}

pz_status plan_adopt_rungs(stage *s, const uint8_t *blob, size_t len, const char *what) {
    const pz_pipe_config *cfg = &s->pipe->cfg;
    if (cfg->budget.kind == PZ_BUDGET_OFF || plan_stage_codecs(s) < 4) return PZ_OK;
    /* the checkpoint's codecs: fwd_rx, bwd_tx (gradients, dir 1), fwd_tx (activations, dir 0), bwd_rx */
    static const int entry[2] = {2, 1};
    for (int d = 0; d < 2; d++) {
        if (!s->probe[d][0]) continue;
        char spec[PZ_SPEC_MAX + 8];
        PZ_TRY(pz_checkpoint_codec_spec(blob, len, what, entry[d], spec, sizeof spec));
        int r = 0;
        while (r < cfg->budget.n_rungs && strcmp(pz_codec_spec(s->probe[d][r]), spec)) r++;
        if (r == cfg->budget.n_rungs)
            return pz_fail(PZ_ERR_ARG, "'%s': stage %d sent its %s with '%s', which is not a rung of this run's budget ladder (resume "
                           "with the same --budget-ladder)", what, s->index, d ? "gradients" : "activations", spec);
        PZ_TRY(plan_use_rung(s, d, r));
    }
    return PZ_OK;
}


void plan_fingerprint(pz_pipe *p) {
    const pz_pipe_config *cfg = &p->cfg;
    const int M = cfg->micro_batches;
    char *f = p->fingerprint;
    const size_t cap = sizeof p->fingerprint;
    char in[48];
    size_t n = (size_t)snprintf(f, cap, "model=%s in=%s classes=%d batch=%d seed=%llu stages=%d micro=%d opt=%d mom=%g wd=%g nest=%d cuts=",
                                cfg->model.name, pz_shape_str(cfg->in, in, sizeof in), cfg->n_classes, cfg->batch_max,
                                (unsigned long long)cfg->seed, cfg->n_stages, M, (int)cfg->optimizer, cfg->momentum,
                                cfg->weight_decay, cfg->nesterov);
    for (int b = 0; b + 1 < cfg->n_stages && n < cap; b++)
        n += (size_t)snprintf(f + n, cap - n, "%d%s", cfg->cuts[b], b + 2 < cfg->n_stages ? "," : "");
    for (int b = 0; b + 1 < cfg->n_stages && n < cap; b++)
        n += (size_t)snprintf(f + n, cap - n, " fwd%d=%s bwd%d=%s", b + 1, pz_pipe_spec_text(&cfg->fwd[b]), b + 1,
                              pz_pipe_spec_text(&cfg->bwd[b]));
    if (cfg->clip_norm > 0.0f && n < cap) n += (size_t)snprintf(f + n, cap - n, " clip=%g", cfg->clip_norm);
    if (cfg->grad_mask && n < cap) n += (size_t)snprintf(f + n, cap - n, " grad_mask=fwd");
    if (cfg->model.subspace && n < cap) n += (size_t)snprintf(f + n, cap - n, " subspace=%d", cfg->model.subspace);
    if (pipe_targets(p) > 1 && n < cap) n += (size_t)snprintf(f + n, cap - n, " targets=%d", pipe_targets(p));
    /* the schedule orders each link's messages: every stage must run the same */
    if (cfg->schedule != PZ_PIPE_GPIPE && n < cap) n += (size_t)snprintf(f + n, cap - n, " schedule=%s", pz_name_of(pz_pipe_schedules, cfg->schedule));
    if (pz_pipe_schedule_overlaps(cfg->schedule) && n < cap) n += (size_t)snprintf(f + n, cap - n, " delay=%d", cfg->delay);
    /* the shared wire: a stage's stamps mean "sent at", not "arrives at" */
    if (cfg->emu.model != PZ_WIRE_DUPLEX && n < cap)
        n += (size_t)snprintf(f + n, cap - n, " link_model=%s", pz_name_of(pz_wire_models, cfg->emu.model));
    /* a budget: every stage must measure the same rungs and make the same choice */
    if (cfg->budget.kind != PZ_BUDGET_OFF && n < cap) {
        n += (size_t)snprintf(f + n, cap - n, " budget=%s:%.17g every=%d fwd_weight=%.17g rule=%d ladder=", pz_name_of(pz_budget_kinds, cfg->budget.kind),
                              cfg->budget.value, cfg->budget.every, cfg->budget.fwd_weight > 0 ? cfg->budget.fwd_weight : 1.0, cfg->budget.rule);
        for (int r = 0; r < cfg->budget.n_rungs && n < cap; r++)
            n += (size_t)snprintf(f + n, cap - n, "%s%s", r ? "/" : "", cfg->budget.rung[r].text);
    }
}
