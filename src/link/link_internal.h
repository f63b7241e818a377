/* SPDX-License-Identifier: MIT */
/* link_internal.h — what every transport implements behind pz_link. */
#ifndef PZ_LINK_INTERNAL_H
#define PZ_LINK_INTERNAL_H

#include "link.h"

#include <pthread.h>

typedef struct {
    /* *wire: the bytes the transport carried for this message */
    pz_status (*send)(pz_link *l, int tag, double stamp, const void *msg, size_t len, size_t *wire);
    pz_status (*recv)(pz_link *l, int *tag, double *stamp, uint8_t **buf, size_t *cap, size_t *len, size_t *wire,
                      double timeout_s);
    /* optional: send by taking *buf (len bytes of *cap), giving back a spare in *buf and *cap */
    pz_status (*send_take)(pz_link *l, int tag, double stamp, uint8_t **buf, size_t *cap, size_t len, size_t *wire);
    void (*close)(pz_link *l);
    void (*free)(pz_link *l); /* the transport's part; the generic part is freed after */
} link_ops;

struct pz_link {
    const link_ops *ops;
    void *impl;
    char name[96];
    pthread_mutex_t mu; /* guards stats (read from other threads) */
    pz_link_stats stats;
    pz_clock *clock;
    pz_link_emu emu;
    pz_wire out;     /* emulated, duplex: the sending direction's wire */
    uint64_t header_tags[4]; /* pz_link_set_header_tag: a bit per tag */
    int peer_closed; /* set by the transport when the peer closed in order */
    int remote_party; /* the far end is another party's process (pz_link_is_remote_party) */
};

/* A new generic link around a transport. */
/* A link over a transport's end; NULL when out of memory (the end is then
 * freed with ops->free, and the error set). */
pz_link *link_new(const link_ops *ops, void *impl, const char *name);

#endif
