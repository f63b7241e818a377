/* SPDX-License-Identifier: MIT */
/* inproc.c — the in-process link: two bounded FIFO queues of copied
 * messages guarded by a mutex and condition variables. A message is copied
 * once, into a buffer the receiver then owns (spare buffers are recycled). */
#include "link_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    int tag;
    double stamp;
    size_t len, cap;
    uint8_t *data;
} message;

/* Spare buffers: a receiver hands its previous buffer back for the next
 * send, so large messages cost one copy and no fresh pages. */
enum { POOL = 8 };

typedef struct {
    message *slots;
    int cap, head, count;
    int closed; /* the sender closed this direction */
} queue;

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t changed;
    queue q[2]; /* q[i]: messages travelling to end i */
    uint8_t *pool[POOL];
    size_t pool_cap[POOL];
    int pooled;
    int refs;
    char name[64];
} channel;

typedef struct {
    channel *ch;
    int side; /* 0 or 1 */
} end;

static const link_ops inproc_ops;

/* the smallest spare that holds len bytes (-1: none), so that small
 * messages do not take the buffers large frames need */
static int best_fit(const channel *ch, size_t len) {
    int best = -1;
    for (int i = 0; i < ch->pooled; i++)
        if (ch->pool_cap[i] >= len && (best < 0 || ch->pool_cap[i] < ch->pool_cap[best])) best = i;
    return best;
}

pz_status pz_link_inproc_pair(pz_link **a, pz_link **b, int capacity, const char *name) {
    if (capacity < 1) return pz_fail(PZ_ERR_ARG, "link capacity must be at least 1, got %d", capacity);
    *a = *b = NULL;
    channel *ch = calloc(1, sizeof *ch);
    end *ea = calloc(1, sizeof *ea), *eb = calloc(1, sizeof *eb);
    if (ch) ch->q[0].slots = calloc((size_t)capacity, sizeof(message)), ch->q[1].slots = calloc((size_t)capacity, sizeof(message));
    if (!ch || !ea || !eb || !ch->q[0].slots || !ch->q[1].slots) {
        if (ch) free(ch->q[0].slots), free(ch->q[1].slots);
        free(ch), free(ea), free(eb);
        return pz_fail(PZ_ERR_NOMEM, "out of memory for link '%s'", name ? name : "link");
    }
    pthread_mutex_init(&ch->mu, NULL);
    pthread_cond_init(&ch->changed, NULL);
    ch->q[0].cap = ch->q[1].cap = capacity;
    ch->refs = 2;
    snprintf(ch->name, sizeof ch->name, "%s", name ? name : "link");
    ea->ch = ch, ea->side = 0;
    eb->ch = ch, eb->side = 1;
    /* a link that cannot be made releases its end; the channel goes with the last */
    *a = link_new(&inproc_ops, ea, ch->name);
    *b = link_new(&inproc_ops, eb, ch->name);
    if (!*a || !*b) {
        pz_link_free(*a), pz_link_free(*b);
        *a = *b = NULL;
        return PZ_ERR_NOMEM;
    }
    return PZ_OK;
}

/* remove spare i from the pool into *buf / *cap (mutex held) */
static void pool_take(channel *ch, int i, uint8_t **buf, size_t *cap) {
    *buf = ch->pool[i], *cap = ch->pool_cap[i];
    ch->pool[i] = ch->pool[ch->pooled - 1], ch->pool_cap[i] = ch->pool_cap[ch->pooled - 1];
    ch->pooled--;
}

/* queue m for the peer, waiting while its queue is full (mutex held) */
static pz_status push_locked(end *l, message m) {
    channel *ch = l->ch;
    queue *q = &ch->q[1 - l->side];
    while (q->count == q->cap && !ch->q[l->side].closed && !q->closed) pthread_cond_wait(&ch->changed, &ch->mu);
    if (ch->q[l->side].closed || q->closed) /* the peer is gone, or we closed */
        return pz_fail(PZ_ERR_STATE, "%s: the peer closed the link; cannot send", ch->name);
    q->slots[(q->head + q->count) % q->cap] = m;
    q->count++;
    pthread_cond_broadcast(&ch->changed);
    return PZ_OK;
}

static pz_status inproc_send(pz_link *link, int tag, double stamp, const void *msg, size_t len, size_t *wire) {
    end *l = link->impl;
    channel *ch = l->ch;
    /* a spare buffer if one is big enough, else a new one */
    uint8_t *copy = NULL;
    size_t cap = 0;
    pthread_mutex_lock(&ch->mu);
    const int i = best_fit(ch, len);
    if (i >= 0) pool_take(ch, i, &copy, &cap);
    pthread_mutex_unlock(&ch->mu);
    if (!copy) {
        cap = len ? len : 1;
        if (!(copy = malloc(cap))) return pz_fail(PZ_ERR_NOMEM, "%s: out of memory for a %zu-byte message", link->name, len);
    }
    memcpy(copy, msg, len);
    pthread_mutex_lock(&ch->mu);
    const pz_status st = push_locked(l, (message){tag, stamp, len, cap, copy});
    pthread_mutex_unlock(&ch->mu);
    if (st) free(copy);
    else *wire = len;
    return st;
}

/* hand the caller's buffer over; give back a spare */
static pz_status inproc_send_take(pz_link *link, int tag, double stamp, uint8_t **buf, size_t *bcap, size_t len, size_t *wire) {
    end *l = link->impl;
    channel *ch = l->ch;
    pthread_mutex_lock(&ch->mu);
    const pz_status st = push_locked(l, (message){tag, stamp, len, *bcap, *buf});
    if (!st) {
        *buf = NULL, *bcap = 0;
        if (ch->pooled) { /* a spare for the next frame: one as large as this one if there is, else the largest */
            int best = best_fit(ch, len);
            if (best < 0) {
                best = 0;
                for (int i = 1; i < ch->pooled; i++)
                    if (ch->pool_cap[i] > ch->pool_cap[best]) best = i;
            }
            pool_take(ch, best, buf, bcap);
        }
        *wire = len;
    }
    pthread_mutex_unlock(&ch->mu);
    return st;
}

static pz_status inproc_recv(pz_link *link, int *tag, double *stamp, uint8_t **buf, size_t *cap, size_t *len,
                             size_t *wire, double timeout_s) {
    end *l = link->impl;
    channel *ch = l->ch;
    queue *q = &ch->q[l->side];
    struct timespec until;
    if (timeout_s >= 0) {
        clock_gettime(CLOCK_REALTIME, &until);
        const double t = until.tv_sec + until.tv_nsec * 1e-9 + timeout_s;
        until.tv_sec = (time_t)t;
        until.tv_nsec = (long)((t - (double)until.tv_sec) * 1e9);
    }
    pthread_mutex_lock(&ch->mu);
    while (q->count == 0 && !q->closed) {
        if (timeout_s < 0) pthread_cond_wait(&ch->changed, &ch->mu);
        else if (pthread_cond_timedwait(&ch->changed, &ch->mu, &until) == ETIMEDOUT && q->count == 0 && !q->closed) {
            pthread_mutex_unlock(&ch->mu);
            return pz_fail(PZ_ERR_STATE, "%s: no message within %.1f s (peer hung?)", ch->name, timeout_s);
        }
    }
    if (q->count == 0) {
        pthread_mutex_unlock(&ch->mu);
        return pz_fail(PZ_ERR_STATE, "%s: the peer closed the link", ch->name);
    }
    message m = q->slots[q->head];
    q->head = (q->head + 1) % q->cap;
    q->count--;
    /* the caller's old buffer becomes a spare; the message's buffer is theirs */
    if (*buf && ch->pooled < POOL) ch->pool[ch->pooled] = *buf, ch->pool_cap[ch->pooled++] = *cap, *buf = NULL;
    pthread_cond_broadcast(&ch->changed);
    pthread_mutex_unlock(&ch->mu);
    free(*buf);
    *buf = m.data;
    *cap = m.cap;
    *tag = m.tag;
    *len = m.len;
    *stamp = m.stamp;
    *wire = m.len;
    return PZ_OK;
}

static void inproc_close(pz_link *link) {
    end *l = link->impl;
    channel *ch = l->ch;
    pthread_mutex_lock(&ch->mu);
    ch->q[1 - l->side].closed = 1; /* the direction this end sends on */
    pthread_cond_broadcast(&ch->changed);
    pthread_mutex_unlock(&ch->mu);
}

static void inproc_free(pz_link *link) {
    end *l = link->impl;
    channel *ch = l->ch;
    inproc_close(link);
    pthread_mutex_lock(&ch->mu);
    const int last = --ch->refs == 0;
    pthread_mutex_unlock(&ch->mu);
    if (last) {
        for (int i = 0; i < 2; i++) {
            for (int j = 0; j < ch->q[i].count; j++) free(ch->q[i].slots[(ch->q[i].head + j) % ch->q[i].cap].data);
            free(ch->q[i].slots);
        }
        for (int i = 0; i < ch->pooled; i++) free(ch->pool[i]);
        pthread_mutex_destroy(&ch->mu);
        pthread_cond_destroy(&ch->changed);
        free(ch);
    }
    free(l);
}

static const link_ops inproc_ops = {inproc_send, inproc_recv, inproc_send_take, inproc_close, inproc_free};
