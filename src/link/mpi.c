/* SPDX-License-Identifier: MIT */
/* mpi.c — the Open MPI link: stage i on rank i of MPI_COMM_WORLD, one
 * message per frame (variable size: probe, get the count, receive straight
 * into the caller's buffer). The virtual-clock stamp travels as an 8-byte
 * trailer, gathered with the payload by a derived datatype, so the payload
 * is never copied on the receiving side. A send does not wait for the
 * receiver (MPI_Send of a large message would: a rendezvous): it copies the
 * message and posts it (MPI_Isend), up to SENDS of them outstanding per
 * link, as an in-process link holds 8 queued messages; the next send past
 * that waits for the oldest. So the schedules run over MPI with the
 * buffering they have in one process (the asynchronous schedule's crossing
 * waves need it). One thread per rank talks MPI at a time
 * (MPI_THREAD_SERIALIZED); receives poll with a short sleep so that
 * oversubscribed ranks leave the cores to the ones computing. */
#include "link_internal.h"
#include "base/wire.h"

#ifdef PZ_HAVE_MPI
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { TAG_CLOSED = 4000, SENDS = 8 };

typedef struct {
    MPI_Request req;
    uint8_t *buf;
    size_t cap;
} mpi_out;

typedef struct {
    int peer;
    int closed_sent, peer_closed;
    mpi_out out[SENDS]; /* a ring of posted sends, oldest at head */
    int head, n;
} mpi_end;

/* the oldest posted sends that have completed leave the ring; with `wait`,
 * the oldest is waited for first */
static pz_status reap(pz_link *l, mpi_end *e, int wait) {
    while (e->n > 0) {
        mpi_out *o = &e->out[e->head];
        int done = 0;
        if (wait) {
            if (MPI_Wait(&o->req, MPI_STATUS_IGNORE) != MPI_SUCCESS) return pz_fail(PZ_ERR_IO, "%s: a send to rank %d failed", l->name, e->peer);
            done = 1, wait = 0;
        } else if (MPI_Test(&o->req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
            return pz_fail(PZ_ERR_IO, "%s: a send to rank %d failed", l->name, e->peer);
        }
        if (!done) break;
        e->head = (e->head + 1) % SENDS, e->n--;
    }
    return PZ_OK;
}

int pz_mpi_available(void) { return 1; }

pz_status pz_mpi_init(int *argc, char ***argv, int *rank, int *size) {
    int provided, inited;
    MPI_Initialized(&inited);
    if (!inited && MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
        return pz_fail(PZ_ERR_STATE, "MPI_Init_thread failed");
    if (!inited && provided < MPI_THREAD_SERIALIZED)
        return pz_fail(PZ_ERR_STATE, "this MPI does not allow calls from a stage thread (thread level %d)", provided);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    return PZ_OK;
}

void pz_mpi_finalize(void) {
    int inited, finalized;
    MPI_Initialized(&inited);
    MPI_Finalized(&finalized);
    if (inited && !finalized) MPI_Finalize();
}

void pz_mpi_abort(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

static pz_status mpi_send(pz_link *l, int tag, double stamp, const void *msg, size_t len, size_t *wire) {
    mpi_end *e = l->impl;
    if (e->closed_sent) return pz_fail(PZ_ERR_STATE, "%s: this end was closed; cannot send", l->name);
    if (e->peer_closed) return pz_fail(PZ_ERR_STATE, "%s: the peer closed the link; cannot send", l->name);
    if (len > (size_t)INT32_MAX - 8) return pz_fail(PZ_ERR_ARG, "%s: a %zu-byte message is too large for MPI", l->name, len);
    PZ_TRY(reap(l, e, e->n == SENDS));
    mpi_out *o = &e->out[(e->head + e->n) % SENDS];
    if (o->cap < len + 8) {
        uint8_t *b = realloc(o->buf, len + 8);
        if (!b) return pz_fail(PZ_ERR_NOMEM, "%s: out of memory for a %zu-byte message", l->name, len + 8);
        o->buf = b, o->cap = len + 8;
    }
    if (len) memcpy(o->buf, msg, len);
    pz_put_f64(o->buf + len, stamp); /* the trailer: f64, little-endian */
    if (MPI_Isend(o->buf, (int)(len + 8), MPI_BYTE, e->peer, tag, MPI_COMM_WORLD, &o->req) != MPI_SUCCESS)
        return pz_fail(PZ_ERR_IO, "%s: MPI_Isend to rank %d failed", l->name, e->peer);
    e->n++;
    *wire = len + 8;
    return PZ_OK;
}

static pz_status mpi_recv(pz_link *l, int *tag, double *stamp, uint8_t **buf, size_t *cap, size_t *len, size_t *wire,
                          double timeout_s) {
    mpi_end *e = l->impl;
    if (e->peer_closed) return pz_fail(PZ_ERR_STATE, "%s: the peer closed the link", l->name);
    const double until = timeout_s >= 0 ? pz_now() + timeout_s : 0;
    MPI_Status status;
    long nap = 1000; /* ns, doubling to 200 us */
    for (;;) {
        int flag = 0;
        MPI_Iprobe(e->peer, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &status);
        if (flag) break;
        if (timeout_s >= 0 && pz_now() > until)
            return pz_fail(PZ_ERR_STATE, "%s: no message from rank %d within %.1f s (peer hung?)", l->name, e->peer, timeout_s);
        struct timespec ts = {0, nap};
        nanosleep(&ts, NULL);
        if (nap < 200000) nap *= 2;
    }
    int count;
    MPI_Get_count(&status, MPI_BYTE, &count);
    if (status.MPI_TAG == TAG_CLOSED) {
        MPI_Recv(NULL, 0, MPI_BYTE, e->peer, TAG_CLOSED, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        e->peer_closed = 1;
        l->peer_closed = 1;
        return pz_fail(PZ_ERR_STATE, "%s: the peer closed the link", l->name);
    }
    if (count < 8) return pz_fail(PZ_ERR_FORMAT, "%s: a %d-byte MPI message is shorter than its trailer", l->name, count);
    if ((size_t)count > *cap) {
        uint8_t *b = realloc(*buf, (size_t)count);
        if (!b) return pz_fail(PZ_ERR_NOMEM, "%s: out of memory for a %d-byte message", l->name, count);
        *buf = b, *cap = (size_t)count;
    }
    if (MPI_Recv(*buf, count, MPI_BYTE, e->peer, status.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        return pz_fail(PZ_ERR_IO, "%s: MPI_Recv from rank %d failed", l->name, e->peer);
    *stamp = pz_get_f64(*buf + count - 8);
    *tag = status.MPI_TAG;
    *len = (size_t)count - 8;
    *wire = (size_t)count;
    return PZ_OK;
}

static void mpi_close(pz_link *l) {
    mpi_end *e = l->impl;
    if (e->closed_sent || e->peer_closed) return;
    e->closed_sent = 1;
    /* the posted sends go first (a peer that takes no more messages has
     * failed, and Open MPI ends the job) */
    while (e->n > 0 && !reap(l, e, 1)) {}
    MPI_Send(NULL, 0, MPI_BYTE, e->peer, TAG_CLOSED, MPI_COMM_WORLD);
}

static void mpi_free(pz_link *l) {
    mpi_end *e = l->impl;
    for (int i = 0; i < e->n; i++) { /* never completed (the peer died): give up on them */
        mpi_out *o = &e->out[(e->head + i) % SENDS];
        MPI_Cancel(&o->req);
        MPI_Request_free(&o->req);
    }
    for (int i = 0; i < SENDS; i++) free(e->out[i].buf);
    free(e);
}

static const link_ops mpi_ops = {mpi_send, mpi_recv, NULL, mpi_close, mpi_free};

pz_status pz_link_mpi(pz_link **l, int peer, const char *name) {
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (peer < 0 || peer >= size) return pz_fail(PZ_ERR_ARG, "MPI link to rank %d, but there are %d ranks", peer, size);
    mpi_end *e = calloc(1, sizeof *e);
    if (!e) return pz_fail(PZ_ERR_NOMEM, "out of memory for link '%s'", name);
    e->peer = peer;
    *l = link_new(&mpi_ops, e, name);
    return *l ? PZ_OK : PZ_ERR_NOMEM;
}

#else

int pz_mpi_available(void) { return 0; }
pz_status pz_mpi_init(int *argc, char ***argv, int *rank, int *size) {
    (void)argc, (void)argv, (void)rank, (void)size;
    return pz_fail(PZ_ERR_ARG, "this pipezip was built without Open MPI (install libopenmpi-dev and rebuild)");
}
void pz_mpi_finalize(void) {}
void pz_mpi_abort(int code) { (void)code; }
pz_status pz_link_mpi(pz_link **l, int peer, const char *name) {
    (void)l, (void)peer, (void)name;
    return pz_fail(PZ_ERR_ARG, "this pipezip was built without Open MPI (install libopenmpi-dev and rebuild)");
}

#endif
