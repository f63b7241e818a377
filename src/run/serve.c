/* SPDX-License-Identifier: MIT */
/* serve.c — the split-learning server behind `pipezip serve`: the server's
 * stages of the model, one pipeline per client session over the ZeroMQ
 * link's borrowed connection, each started from the state the last session
 * that closed in order left (a failed session is rolled back), until
 * --clients are done (docs/ARCHITECTURE.md). */
#include "run_internal.h"
#include "link/link.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The largest message a client of this model can legitimately send: an
 * activation frame of a whole micro-batch (training, or evaluation through
 * the compressed or the plain boundary), its header, the client's state
 * handed on (its parameters, optimizer slots, running statistics and the
 * boundary's codec states), the tied token table, the settings. */
static pz_status serve_max_message(const pz_run_plan *cfg, const pz_model *model, const pz_pipe_config *pc, size_t *out) {
    const pz_shape sh = model->net.layers[pc->cuts[0]].out;
    const int M = pc->micro_batches > 0 ? pc->micro_batches : 1, mb = (pc->batch_max + M - 1) / M;
    const int P = pc->targets > 0 ? pc->targets : 1;
    int64_t shape[1 + PZ_SHAPE_MAX];
    const int nd = pz_shape_batch(sh, mb, shape);
    const int64_t per = pz_shape_numel(sh);
    size_t frame = 0;
    const pz_codec_desc *fwd = pz_codec_desc_or_none(&pc->fwd[0]), *bwd = pz_codec_desc_or_none(&pc->bwd[0]);
    const pz_codec_desc base = pz_codec_desc_base(fwd);
    const pz_codec_desc *sent[3] = {fwd, &base, pz_codec_desc_or_none(NULL)}; /* training, evaluation through the compressed and the plain boundary */
    for (int k = 0; k < 3; k++) {
        pz_codec *c;
        PZ_TRY(pz_codec_create_desc(&c, sent[k]));
        const size_t n = pz_codec_max_frame_bytes(c, nd, shape);
        pz_codec_free(c);
        if (n > frame) frame = n;
    }
    const int stateful = fwd->wrap || bwd->wrap;
    int64_t params0 = 0;
    for (int j = 0; j <= pc->cuts[0]; j++) params0 += model->net.layers[j].n_params;
    /* a per-sample codec state grows with the client's training set: the
     * dataset's own size (text: at most 2^16 windows) */
    const double samples = (double)cfg->data.train_size;
    double need = (double)frame + 16.0 + 8.0 * mb * (1.0 + P); /* + a (micro-)batch header */
    const double state = 16.0 * (double)params0 + (stateful ? 2.0 * 8.0 * (double)per * (samples > mb ? samples : mb) : 0) + (1 << 20);
    if (state > need) need = state;
    need += 1 << 16; /* the settings, a checkpoint request, envelopes */
    *out = need > 1e15 ? (size_t)1e15 : (size_t)need;
    return PZ_OK;
}

/* a set of client ids: add id unless it is there or the set is full */
static void id_add(uint64_t *set, int *n, int cap, uint64_t id) {
    for (int i = 0; i < *n; i++)
        if (set[i] == id) return;
    if (*n < cap) set[(*n)++] = id;
}

static int id_in(const uint64_t *set, int n, uint64_t id) {
    for (int i = 0; i < n; i++)
        if (set[i] == id) return 1;
    return 0;
}

/* The server's stages: the model (the server has no data: the input shape
 * is the dataset's), its pipeline from the first cut on, and the largest
 * message a client may send. */
static pz_status serve_setup(const pz_run_plan *cfg, const pz_serve_options *o, pz_pipe_config *pc, size_t *max_msg) {
    pz_dataset shape;
    run_plan_shape(cfg, &shape);
    pz_model model;
    PZ_TRY(pz_model_build(&model, &cfg->model, pz_dataset_shape(&shape), shape.n_classes, 1, cfg->seed, 0, 1 << 30));
    pz_status st = run_pipe_config(cfg, &model, &shape, pc, 0);
    *max_msg = o->max_message;
    if (!st && pc->n_stages < 2) st = pz_fail(PZ_ERR_ARG, "pipezip serve needs a cut (--cuts LAYER or --stages S >= 2)");
    if (!st && !*max_msg) st = serve_max_message(cfg, &model, pc, max_msg);
    pz_model_free(&model);
    PZ_TRY(st);
    pc->local_set = 1, pc->first_local = 1, pc->last_local = pc->n_stages - 1;
    pc->save_dir = o->save_dir;
    pc->serving = 1;
    return PZ_OK;
}

/* What the server keeps between sessions: the state the last completed
 * session left, and which clients are done (finished or dropped out) or
 * had a turn. */
typedef struct {
    const pz_serve_options *o;
    pz_pipe_state snap;
    int have_snap, sessions, n_done, n_joined, cap_joined;
    uint64_t *done, *joined; /* joined: clients that had a turn (if one fails later it dropped out, wherever it failed) */
} serve_state;

/* A session's pipeline has stopped (ps: how): keep its state if it closed
 * in order, or roll it back; count the clients it finished. *advance: the
 * link goes on to the next session (not after the server's own failure). */
static pz_status session_ended(serve_state *sv, pz_pipe *pipe, pz_link *link, pz_status ps, const char *ended, int *advance) {
    *advance = 1;
    const pz_serve_options *o = sv->o;
    uint64_t client = 0, gone[64];
    int last = 0;
    const int how = pz_link_zmq_session(link, &client, &last);
    const int checked = pz_pipe_checked(pipe);
    const int n_gone = pz_link_zmq_dropouts(link, gone, 64);
    for (int g = 0; g < n_gone; g++) {
        id_add(sv->done, &sv->n_done, o->clients, gone[g]);
        fprintf(stderr, "pipezip serve: client %016llx dropped out (%d of %d)\n", (unsigned long long)gone[g], sv->n_done, o->clients);
    }
    if (how == PZ_ZMQ_SESSION_NONE) /* no session began: a client dropped out between turns, or the link failed */
        return n_gone ? PZ_OK : pz_fail(ps ? ps : PZ_ERR_STATE, "%s", ended);
    sv->sessions++;
    int finished = 0;
    if (!ps && how == PZ_ZMQ_SESSION_CLOSED) {
        const pz_status e = pz_pipe_snapshot(pipe, &sv->snap); /* the state the next client receives */
        if (e) return *advance = 0, e;
        sv->have_snap = 1;
        finished = last;
        if (!id_in(sv->joined, sv->n_joined, client) && sv->n_joined == sv->cap_joined) { /* as many as come, however long it serves */
            const int cap = sv->cap_joined ? 2 * sv->cap_joined : 64;
            uint64_t *j = realloc(sv->joined, (size_t)cap * sizeof *j);
            if (!j) return *advance = 0, pz_fail(PZ_ERR_NOMEM, "out of memory for %d clients' ids", cap);
            sv->joined = j, sv->cap_joined = cap;
        }
        id_add(sv->joined, &sv->n_joined, sv->cap_joined, client);
    } else {
        char esc[1100];
        pz_escape_text(esc, sizeof esc, ended); /* the reason may be the client's own ERROR text */
        fprintf(stderr, "pipezip serve: session %d failed: %s; the server's stages go back to %s\n", sv->sessions, esc,
                sv->have_snap ? "the state the last completed session left" : o->resume ? "the --resume checkpoint" : "their initial state");
        /* a client that joined and dropped out is skipped; a refused one never joined */
        finished = checked || id_in(sv->joined, sv->n_joined, client);
    }
    if (finished) {
        id_add(sv->done, &sv->n_done, o->clients, client);
        fprintf(stderr, "pipezip serve: client %016llx %s (%d of %d)\n", (unsigned long long)client,
                how == PZ_ZMQ_SESSION_CLOSED && !ps ? "finished" : "dropped out", sv->n_done, o->clients);
    }
    return PZ_OK;
}

pz_status pz_run_serve(const pz_run_plan *cfg, const pz_serve_options *o) {
    PZ_TRY(run_plan_check(cfg));
    pz_set_threads(cfg->threads);
    pz_pipe_config pc;
    size_t max_msg = 0;
    PZ_TRY(serve_setup(cfg, o, &pc, &max_msg));
    const pz_zmq_server_config zc = {o->bind, o->server_key, o->client_key, cfg->timeout, max_msg, o->wait_for};
    pz_link *link;
    PZ_TRY(pz_link_zmq_listen(&link, &zc, "server <-> client"));
    pc.prev_link = link;

    /* One pipeline per session, started from the state the last completed
     * session left (or --resume, or fresh): a session that fails — a client
     * that dies, goes silent, breaks the protocol or runs other settings —
     * is rolled back by never keeping what it did. */
    serve_state sv = {.o = o, .done = calloc((size_t)o->clients, sizeof(uint64_t))};
    pz_status st = sv.done ? PZ_OK : pz_fail(PZ_ERR_NOMEM, "out of memory");
    for (int announced = 0; !st && sv.n_done < o->clients; announced = 1) {
        pc.resume = sv.have_snap ? NULL : o->resume;
        pc.restore = sv.have_snap ? &sv.snap : NULL;
        pz_pipe *pipe;
        if ((st = pz_pipe_create(&pipe, &pc))) break; /* the server's own state (a bad --resume, memory) */
        if (!announced)
            fprintf(stderr, "pipezip serve: stages 1..%d of %s (after the first cut) on %s for %d client%s%s; messages up to %.1f MB\n",
                    pc.n_stages - 1, cfg->model.name, o->bind, o->clients, o->clients == 1 ? "" : "s", o->server_key ? ", CURVE" : "",
                    (double)max_msg / 1e6);
        const pz_status ps = pz_pipe_wait(pipe);
        char ended[1024];
        snprintf(ended, sizeof ended, "%s", ps ? pz_last_error() : "");
        int advance;
        st = session_ended(&sv, pipe, link, ps, ended, &advance);
        pz_pipe_free(pipe);
        if (advance) pz_link_zmq_next_session(link);
    }
    free(sv.done);
    free(sv.joined);
    pz_pipe_state_free(&sv.snap);
    pz_link_free(link);
    return st;
}
