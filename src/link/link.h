/* link.h — moving frames between two stages. A link is one end of a
 * bidirectional channel: what one end sends the other receives, in order.
 * The in-process link (threads in one process, the default) copies every
 * message, so no stage ever reads another stage's memory and a stage that
 * works over it works unchanged over MPI or ZeroMQ. Every byte is counted.
 * Knows nothing of codecs' internals or models. */
#ifndef PZ_LINK_H
#define PZ_LINK_H

#include "base/base.h"

typedef struct pz_link pz_link;

typedef struct {
    uint64_t messages_sent, bytes_sent, messages_received, bytes_received;
} pz_link_stats;

/* Two connected ends; each direction holds up to `capacity` messages before
 * send blocks. Free each end with pz_link_free (the channel goes when both
 * are freed). */
pz_status pz_link_inproc_pair(pz_link **a, pz_link **b, int capacity, const char *name);

/* Send a copy of msg[0..len) with a small integer tag. Blocks while the
 * peer's queue is full; PZ_ERR_STATE if the peer has closed. */
pz_status pz_link_send(pz_link *l, int tag, const void *msg, size_t len);

/* Receive the next message into *buf (*cap its capacity): the link may
 * replace *buf with its own buffer (the old one is recycled or freed), so
 * pass a buffer from malloc, or NULL; free it when done. Waits at most
 * timeout_s seconds (< 0: forever).
 * PZ_ERR_STATE when the peer closed and nothing is left, or on timeout (the
 * message says which). */
pz_status pz_link_recv(pz_link *l, int *tag, uint8_t **buf, size_t *cap, size_t *len, double timeout_s);

/* No more sends from this end; the peer's receives drain then fail. */
void pz_link_close(pz_link *l);
void pz_link_free(pz_link *l);
pz_link_stats pz_link_get_stats(const pz_link *l);

#endif
