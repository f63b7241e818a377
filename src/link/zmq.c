/* SPDX-License-Identifier: MIT */
/* zmq.c — the ZeroMQ link for split learning: the server binds a ROUTER
 * socket, a client connects a DEALER. Every message is two parts: a 12-byte
 * envelope [u32 tag][f64 arrival time] and the payload (docs/PROTOCOL.md,
 * "ZeroMQ").
 *
 * Sessions. A client first sends HELLO ([u64 client id], or nothing); the
 * server answers WELCOME when it is free and this client's turn is next
 * (clients that asked while it was busy go first, in the order they asked),
 * else BUSY, and the client asks again. The client's CLOSE ([u32 last turn],
 * or nothing: its last) ends the session in order. The server end faces
 * another party's machine, so nothing a peer sends ends it: a malformed,
 * unexpected or oversized message from a peer outside the session is logged
 * (one escaped line naming the peer) and the peer ignored from then on; from
 * the session's client it ends the session (the receive fails, and
 * pz_link_zmq_session says how it ended), as does a client silent for the session
 * timeout. pz_link_zmq_next_session makes the end ready for the next one.
 * Message sizes are capped (ZMQ_MAXMSGSIZE) at what the served model can
 * need, so a peer without a key cannot make the server allocate more; a
 * payload is copied only from the session's client.
 *
 * CURVE: keys are Z85 text files made by pz_zmq_keygen. The server sets its
 * secret key and runs a ZAP handler (a thread answering libzmq's
 * authentication requests on inproc://zeromq.zap.01) that admits only the
 * client public key it was given; the client sets its key pair and the
 * server's public key. A refused client's handshake never completes, so its
 * HELLO times out with a message saying so. */
#define _GNU_SOURCE
#include "link_internal.h"
#include "base/wire.h"

#ifdef PZ_HAVE_ZMQ
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

enum { ENV = 12, TAG_CLOSE = 250, TAG_BUSY = 251, TAG_WELCOME = 252, TAG_HELLO = 253 };
enum { MAX_WAITERS = 64, MAX_BLOCKED = 256, ID_MAX = 255 };

typedef struct {
    uint64_t client;       /* the id its HELLO gave */
    double first, last;    /* when it first and last asked */
} waiter;

typedef struct {
    void *ctx, *sock;
    int server;
    int closed_sent, peer_closed;
    /* server: the session's client */
    uint8_t peer[ID_MAX];
    size_t peer_len;
    char peer_addr[64];
    uint64_t client;
    int session_end;       /* PZ_ZMQ_SESSION_* */
    int last_turn;         /* its CLOSE said this was its last turn */
    char why[400];         /* why the session ended, when it failed */
    double idle_s;         /* a session's client silent this long is dropped */
    int wait_for;          /* the first session begins once this many clients ask */
    size_t max_msg;
    int sessions;          /* begun */
    waiter wait[MAX_WAITERS];
    int n_wait;
    waiter ret[MAX_WAITERS];   /* clients whose turn ended and who must come back (last: heard from) */
    int n_ret;
    uint64_t gone[MAX_WAITERS]; /* ... and did not, within the session timeout */
    int n_gone;
    uint8_t blocked[MAX_BLOCKED][ID_MAX + 1]; /* [0] = length */
    int n_blocked, next_blocked;
    /* client */
    int final;             /* this session is the client's last turn (CLOSE says so) */
    /* ZAP (CURVE authentication) */
    pthread_t zap;
    int zap_running;
    void *zap_sock;
    uint8_t allowed[32];
    volatile int refused;
} zend;

int pz_zmq_available(void) { return 1; }

static void put_env(uint8_t *e, int tag, double stamp) { pz_put_u32(e, (uint32_t)tag), pz_put_f64(e + 4, stamp); }

/* send [identity] envelope payload; id NULL on the client (a DEALER has one peer) */
static int send_env(zend *z, const uint8_t *id, size_t id_len, int tag, double stamp, const void *msg, size_t len, int flags) {
    uint8_t env[ENV];
    put_env(env, tag, stamp);
    if (id && zmq_send(z->sock, id, id_len, ZMQ_SNDMORE | flags) < 0) return -1;
    if (zmq_send(z->sock, env, ENV, ZMQ_SNDMORE | flags) < 0) return -1;
    return zmq_send(z->sock, msg ? msg : "", len, flags) < 0 ? -1 : 0;
}

/* to the peer of this end: the server's session client, or the server */
static int send_parts(zend *z, int tag, double stamp, const void *msg, size_t len, int flags) {
    return send_env(z, z->server ? z->peer : NULL, z->peer_len, tag, stamp, msg, len, flags);
}

static pz_status zmq_send_msg(pz_link *l, int tag, double stamp, const void *msg, size_t len, size_t *wire) {
    zend *z = l->impl;
    if (z->closed_sent) return pz_fail(PZ_ERR_STATE, "%s: this end was closed; cannot send", l->name);
    if (z->peer_closed || (z->server && !z->peer_len))
        return pz_fail(PZ_ERR_STATE, "%s: the peer closed the link; cannot send", l->name);
    if (send_parts(z, tag, stamp, msg, len, 0) < 0) return pz_fail(PZ_ERR_IO, "%s: zmq_send: %s", l->name, zmq_strerror(errno));
    *wire = ENV + len;
    return PZ_OK;
}

/* One multipart message as it arrived. The payload goes into *buf only
 * from the server's session client (or, on a client, the server); its
 * first bytes always into small[]. */
typedef struct {
    uint8_t id[ID_MAX];
    size_t id_len;
    int parts, tag;        /* tag -1: not a pipezip envelope */
    double stamp;
    size_t len;            /* the payload's size */
    uint8_t small[16];
    char addr[64];         /* the sender's address, when the transport gives it */
} inmsg;

static int is_peer(const zend *z, const uint8_t *id, size_t n) { return z->peer_len && n == z->peer_len && !memcmp(id, z->peer, n); }

/* 1: got one; 0: timed out; -1: error (errno) */
static int recv_parts(zend *z, inmsg *m, uint8_t **buf, size_t *cap, long timeout_ms) {
    zmq_pollitem_t it = {z->sock, 0, ZMQ_POLLIN, 0};
    const int rc = zmq_poll(&it, 1, timeout_ms);
    if (rc < 0) return errno == EINTR ? 0 : -1;
    if (rc == 0) return 0;
    memset(m, 0, sizeof *m);
    m->tag = -1;
    int more = 1, idx = 0, keep = !z->server;
    while (more) {
        zmq_msg_t part;
        zmq_msg_init(&part);
        if (zmq_msg_recv(&part, z->sock, 0) < 0) {
            zmq_msg_close(&part);
            return -1;
        }
        const size_t n = zmq_msg_size(&part);
        const uint8_t *d = zmq_msg_data(&part);
        const int which = z->server ? idx : idx + 1; /* 0 identity, 1 envelope, 2 payload */
        if (z->server && !m->addr[0]) {
            const char *a = zmq_msg_gets(&part, "Peer-Address");
            if (a) snprintf(m->addr, sizeof m->addr, "%s", a);
        }
        if (which == 0) {
            m->id_len = n < ID_MAX ? n : ID_MAX;
            if (m->id_len) memcpy(m->id, d, m->id_len);
            keep = is_peer(z, m->id, m->id_len) && n <= ID_MAX;
        } else if (which == 1) {
            if (n == ENV && d) {
                const uint32_t t = pz_get_u32(d);
                m->stamp = pz_get_f64(d + 4);
                m->tag = t <= 255 ? (int)t : -1;
            }
        } else if (which == 2) {
            m->len = n;
            memcpy(m->small, d, n < sizeof m->small ? n : sizeof m->small);
            if (keep) {
                if (n > *cap || !*buf) {
                    uint8_t *b = realloc(*buf, n ? n : 1);
                    if (!b) {
                        zmq_msg_close(&part);
                        errno = ENOMEM;
                        return -1;
                    }
                    *buf = b, *cap = n ? n : 1;
                }
                if (n) memcpy(*buf, d, n);
            }
        }
        more = zmq_msg_more(&part);
        zmq_msg_close(&part);
        idx++;
    }
    m->parts = idx;
    if (idx != (z->server ? 3 : 2)) m->tag = -1;
    return 1;
}

/* ---- the server's peers ---------------------------------------------------- */
static void peer_name(const uint8_t *id, size_t id_len, const char *addr, char *out, size_t cap) {
    char hex[2 * 16 + 1] = "", a[160];
    for (size_t i = 0; i < id_len && i < 16; i++) snprintf(hex + 2 * i, 3, "%02x", id[i]);
    pz_escape_text(a, sizeof a, addr && *addr ? addr : "?");
    snprintf(out, cap, "peer %s%s at %s", hex[0] ? hex : "-", id_len > 16 ? "..." : "", a);
}

static void serve_log(const char *fmt, const char *who, const char *what) {
    char w[400];
    pz_escape_text(w, sizeof w, what);
    fprintf(stderr, fmt, who, w);
}

static int blocked(const zend *z, const uint8_t *id, size_t n) {
    for (int i = 0; i < z->n_blocked; i++)
        if (z->blocked[i][0] == n && !memcmp(z->blocked[i] + 1, id, n)) return 1;
    return 0;
}

static void block(zend *z, const uint8_t *id, size_t n) {
    if (!n || blocked(z, id, n)) return;
    z->blocked[z->next_blocked][0] = (uint8_t)n;
    memcpy(z->blocked[z->next_blocked] + 1, id, n);
    z->next_blocked = (z->next_blocked + 1) % MAX_BLOCKED;
    if (z->n_blocked < MAX_BLOCKED) z->n_blocked++;
}

/* a peer outside the session broke the protocol: say so once, then ignore it */
static void drop_peer(zend *z, const inmsg *m, const char *why) {
    char who[256];
    peer_name(m->id, m->id_len, m->addr, who, sizeof who);
    serve_log("pipezip serve: %s: %s; ignored from now on\n", who, why);
    block(z, m->id, m->id_len);
}

/* the session's client broke the protocol or went silent: the session ends */
static pz_status drop_session(pz_link *l, zend *z, const char *why) {
    char who[256];
    peer_name(z->peer, z->peer_len, z->peer_addr, who, sizeof who);
    snprintf(z->why, sizeof z->why, "%s", why);
    z->session_end = PZ_ZMQ_SESSION_DROPPED;
    serve_log("pipezip serve: the client (%s): %s; session ended\n", who, why);
    return pz_fail(PZ_ERR_STATE, "%s: the client %s", l->name, why);
}

static uint64_t hello_client(const inmsg *m) {
    if (m->len == 8) return pz_get_u64(m->small);
    uint64_t h = 1469598103934665603ull; /* no id: the connection's identity stands for it */
    for (size_t i = 0; i < m->id_len; i++) h = (h ^ m->id[i]) * 1099511628211ull;
    return h;
}

/* The queue of clients that asked while the server was busy (and still
 * ask, every 0.1 s: one silent for the session timeout, at most 10 s, is
 * forgotten; a stalled process keeps its place): this one's place. */
static int enqueue(zend *z, uint64_t client) {
    const double now = pz_now();
    int n = 0, mine = -1;
    for (int i = 0; i < z->n_wait; i++)
        if (now - z->wait[i].last < (z->idle_s < 10.0 ? z->idle_s : 10.0)) z->wait[n++] = z->wait[i];
    z->n_wait = n;
    for (int i = 0; i < n; i++)
        if (z->wait[i].client == client) mine = i;
    if (mine < 0) {
        if (n == MAX_WAITERS) return -1; /* a full queue: it waits unqueued */
        z->wait[z->n_wait++] = (waiter){client, now, now};
        mine = z->n_wait - 1;
    }
    z->wait[mine].last = now;
    return mine;
}

/* A HELLO while no session runs: is it this client's turn? Clients that
 * asked while the server was busy go first, oldest first. */
static int its_turn(zend *z, uint64_t client) {
    const int mine = enqueue(z, client);
    if (!z->sessions && z->n_wait < z->wait_for) return 0; /* the first turn waits for the quorum */
    if (mine < 0) return z->n_wait == 0;
    for (int i = 0; i < z->n_wait; i++)
        if (z->wait[i].first < z->wait[mine].first) return 0;
    z->wait[mine] = z->wait[--z->n_wait];
    return 1;
}

/* a returning client was heard from (its HELLO), began a turn (drop = 1: no
 * longer owed) */
static void returning_heard(zend *z, uint64_t client, int drop) {
    for (int i = 0; i < z->n_ret; i++)
        if (z->ret[i].client == client) {
            if (drop) z->ret[i] = z->ret[--z->n_ret];
            else z->ret[i].last = pz_now();
            return;
        }
}

/* returning clients silent for the session timeout dropped out: 1 if any */
static int expire_returning(zend *z) {
    const double now = pz_now();
    int n = 0, any = 0;
    for (int i = 0; i < z->n_ret; i++) {
        if (now - z->ret[i].last < z->idle_s) {
            z->ret[n++] = z->ret[i];
            continue;
        }
        fprintf(stderr, "pipezip serve: client %016llx did not come back for its next turn within %.1f s: dropped out\n",
                (unsigned long long)z->ret[i].client, z->idle_s);
        if (z->n_gone < MAX_WAITERS) z->gone[z->n_gone++] = z->ret[i].client;
        any = 1;
    }
    z->n_ret = n;
    return any;
}

static void begin_session(zend *z, const inmsg *m) {
    memcpy(z->peer, m->id, m->id_len), z->peer_len = m->id_len;
    snprintf(z->peer_addr, sizeof z->peer_addr, "%s", m->addr);
    z->client = hello_client(m);
    returning_heard(z, z->client, 1);
    z->session_end = PZ_ZMQ_SESSION_OPEN, z->last_turn = 0, z->why[0] = 0;
    z->sessions++;
    send_env(z, m->id, m->id_len, TAG_WELCOME, 0.0, "", 0, 0);
    char who[256];
    peer_name(m->id, m->id_len, m->addr, who, sizeof who);
    fprintf(stderr, "pipezip serve: session %d: client %016llx (%s)\n", z->sessions, (unsigned long long)z->client, who);
}

/* The server's receive: the session's next message; everything else a
 * peer sends is answered (HELLO) or dropped here. */
static pz_status server_recv(pz_link *l, zend *z, int *tag, double *stamp, uint8_t **buf, size_t *cap, size_t *len, size_t *wire,
                             double timeout_s) {
    if (z->session_end == PZ_ZMQ_SESSION_DROPPED) return pz_fail(PZ_ERR_STATE, "%s: the client %s", l->name, z->why);
    /* in a session, silence is bounded by the session timeout too; what
     * other peers send does not count */
    double limit = timeout_s;
    if (z->peer_len && (limit < 0 || limit > z->idle_s)) limit = z->idle_s;
    double until = limit >= 0 ? pz_now() + limit : 0;
    for (;;) {
        if (z->peer_len && limit < 0) { /* a session began while we waited */
            limit = z->idle_s;
            until = pz_now() + limit;
        }
        inmsg m;
        int rc = 0;
        while (rc == 0) {
            long ms = -1;
            if (limit >= 0) {
                const double left = until - pz_now();
                if (left <= 0) break;
                ms = (long)(left * 1000) + 1;
            }
            /* between sessions, look every half second for clients that did not come back */
            if (!z->peer_len && z->n_ret && (ms < 0 || ms > 500)) ms = 500;
            rc = recv_parts(z, &m, buf, cap, ms);
            if (rc == 0 && !z->peer_len && expire_returning(z))
                return pz_fail(PZ_ERR_STATE, "%s: a client dropped out between its turns", l->name);
        }
        if (rc < 0) return pz_fail(PZ_ERR_IO, "%s: zmq receive: %s", l->name, zmq_strerror(errno));
        if (rc == 0) {
            if (!z->peer_len) return pz_fail(PZ_ERR_STATE, "%s: no client within %.1f s", l->name, limit);
            char why[128];
            snprintf(why, sizeof why, "sent nothing for %.1f s (dead or hung?)", limit);
            return drop_session(l, z, why);
        }
        const int current = is_peer(z, m.id, m.id_len);
        if (!current && blocked(z, m.id, m.id_len)) continue;
        char why[160];
        if (m.tag < 0) {
            snprintf(why, sizeof why, "sent a malformed message (%d part%s, %zu payload bytes: not a pipezip envelope)", m.parts,
                     m.parts == 1 ? "" : "s", m.len);
            if (current) return drop_session(l, z, why);
            drop_peer(z, &m, why);
            continue;
        }
        if (!current) {
            if (m.tag != TAG_HELLO || (m.len != 0 && m.len != 8)) {
                snprintf(why, sizeof why, "sent %s (tag %d, %zu bytes) outside a session", m.tag == TAG_HELLO ? "a malformed HELLO" : "a message",
                         m.tag, m.len);
                drop_peer(z, &m, why);
                continue;
            }
            returning_heard(z, hello_client(&m), 0);
            if (!z->peer_len && its_turn(z, hello_client(&m))) begin_session(z, &m);
            else {
                if (z->peer_len) enqueue(z, hello_client(&m));
                send_env(z, m.id, m.id_len, TAG_BUSY, 0.0, "", 0, 0);
            }
            continue;
        }
        if (m.tag == TAG_HELLO) { /* a repeated HELLO: its WELCOME crossed it */
            send_env(z, m.id, m.id_len, TAG_WELCOME, 0.0, "", 0, 0);
            continue;
        }
        if (m.tag == TAG_CLOSE) {
            if (m.len != 0 && m.len != 4) return drop_session(l, z, "sent a malformed CLOSE");
            z->last_turn = m.len == 0 || pz_get_u32(m.small) != 0;
            if (!z->last_turn) { /* it owes the server its next turn */
                returning_heard(z, z->client, 1);
                if (z->n_ret < MAX_WAITERS) z->ret[z->n_ret++] = (waiter){z->client, pz_now(), pz_now()};
            }
            z->session_end = PZ_ZMQ_SESSION_CLOSED;
            z->peer_closed = 1, l->peer_closed = 1;
            fprintf(stderr, "pipezip serve: session %d: the client ended its %s\n", z->sessions, z->last_turn ? "last turn" : "turn");
            return pz_fail(PZ_ERR_STATE, "%s: the client closed the link", l->name);
        }
        if (m.tag >= TAG_CLOSE) {
            snprintf(why, sizeof why, "sent a link message of tag %d in its session", m.tag);
            return drop_session(l, z, why);
        }
        *tag = m.tag, *stamp = m.stamp, *len = m.len;
        *wire = ENV + m.len;
        return PZ_OK;
    }
}

static pz_status zmq_recv_msg(pz_link *l, int *tag, double *stamp, uint8_t **buf, size_t *cap, size_t *len, size_t *wire,
                              double timeout_s) {
    zend *z = l->impl;
    if (z->peer_closed) return pz_fail(PZ_ERR_STATE, "%s: the peer closed the link", l->name);
    if (z->server) return server_recv(l, z, tag, stamp, buf, cap, len, wire, timeout_s);
    const double until = timeout_s >= 0 ? pz_now() + timeout_s : 0;
    for (;;) {
        long ms = -1;
        if (timeout_s >= 0) {
            const double left = until - pz_now();
            if (left <= 0)
                return pz_fail(PZ_ERR_STATE, "%s: no message within %.1f s (server dead or hung?)", l->name, timeout_s);
            ms = (long)(left * 1000) + 1;
        }
        inmsg m;
        const int rc = recv_parts(z, &m, buf, cap, ms);
        if (rc < 0) return pz_fail(PZ_ERR_IO, "%s: zmq receive: %s", l->name, zmq_strerror(errno));
        if (rc == 0) continue;
        if (m.tag < 0) return pz_fail(PZ_ERR_FORMAT, "%s: a malformed message from the server (not a pipezip envelope)", l->name);
        if (m.tag == TAG_CLOSE) {
            z->peer_closed = 1;
            l->peer_closed = 1;
            return pz_fail(PZ_ERR_STATE, "%s: the server closed the link", l->name);
        }
        if (m.tag == TAG_WELCOME || m.tag == TAG_BUSY) continue; /* late answers to a HELLO */
        *tag = m.tag, *stamp = m.stamp, *len = m.len;
        *wire = ENV + m.len;
        return PZ_OK;
    }
}

static void zmq_close_end(pz_link *l) {
    zend *z = l->impl;
    if (z->closed_sent) return;
    z->closed_sent = 1;
    if (z->peer_closed || (z->server && !z->peer_len)) return;
    if (z->server) {
        send_parts(z, TAG_CLOSE, 0.0, "", 0, 0);
    } else {
        uint8_t last[4];
        pz_put_u32(last, (uint32_t)(z->final != 0));
        send_parts(z, TAG_CLOSE, 0.0, last, 4, 0);
    }
}

static void zmq_free_end(pz_link *l) {
    zend *z = l->impl;
    if (z->sock) {
        int linger = z->closed_sent && !z->peer_closed ? 2000 : 0; /* let the CLOSE go out, no longer */
        zmq_setsockopt(z->sock, ZMQ_LINGER, &linger, sizeof linger);
        zmq_close(z->sock);
    }
    /* the ZAP thread owns its socket: shutting the context down wakes it
     * with ETERM, it closes the socket, then the context can go */
    if (z->zap_running) {
        zmq_ctx_shutdown(z->ctx);
        pthread_join(z->zap, NULL);
    } else if (z->zap_sock) {
        zmq_close(z->zap_sock);
    }
    if (z->ctx) zmq_ctx_term(z->ctx);
    free(z);
}

static const link_ops zmq_ops = {zmq_send_msg, zmq_recv_msg, NULL, zmq_close_end, zmq_free_end};

static zend *server_end(pz_link *l) {
    if (!l || l->ops != &zmq_ops) return NULL;
    zend *z = l->impl;
    return z->server ? z : NULL;
}

int pz_link_zmq_session(pz_link *l, uint64_t *client, int *last_turn) {
    zend *z = server_end(l);
    if (!z) return PZ_ZMQ_SESSION_NONE;
    if (client) *client = z->client;
    if (last_turn) *last_turn = z->last_turn;
    return z->session_end;
}

int pz_link_zmq_dropouts(pz_link *l, uint64_t *ids, int max) {
    zend *z = server_end(l);
    if (!z) return 0;
    const int n = z->n_gone < max ? z->n_gone : max;
    memcpy(ids, z->gone, sizeof *ids * (size_t)n);
    z->n_gone = 0;
    return n;
}

void pz_link_zmq_next_session(pz_link *l) {
    zend *z = server_end(l);
    if (!z) return;
    if (z->session_end == PZ_ZMQ_SESSION_DROPPED) block(z, z->peer, z->peer_len);
    z->peer_len = 0, z->peer_addr[0] = 0;
    z->session_end = PZ_ZMQ_SESSION_NONE, z->why[0] = 0, z->last_turn = 0;
    z->closed_sent = 0, z->peer_closed = 0, l->peer_closed = 0;
}

void pz_link_zmq_set_last_turn(pz_link *l, int last) {
    if (l && l->ops == &zmq_ops && !((zend *)l->impl)->server) ((zend *)l->impl)->final = last != 0;
}

/* ---- keys ------------------------------------------------------------------- */
/* A key file: Z85 text, "public\nsecret\n" (secret files) or "public\n". */
static pz_status read_keys(const char *path, char *pub, char *sec) {
    char *text;
    PZ_TRY(pz_read_text(path, &text, NULL));
    char a[64] = "", b[64] = "";
    const int got = sscanf(text, "%63s %63s", a, b);
    free(text);
    if (got < 1 || strlen(a) != 40 || (sec && (got < 2 || strlen(b) != 40)))
        return pz_fail(PZ_ERR_FORMAT, "'%s' is not a pipezip %s key file (pipezip keygen makes them)", path, sec ? "secret" : "public");
    if (pub) memcpy(pub, a, 41);
    if (sec) memcpy(sec, b, 41);
    return PZ_OK;
}

pz_status pz_zmq_keygen(const char *path, int force) {
    char pub[41], sec[41];
    char pubpath[4200];
    if (snprintf(pubpath, sizeof pubpath, "%s.pub", path) >= (int)sizeof pubpath) return pz_fail(PZ_ERR_ARG, "path too long: '%s'", path);
    if (!force) {
        struct stat st;
        const char *there = !lstat(path, &st) ? path : !lstat(pubpath, &st) ? pubpath : NULL;
        if (there) return pz_fail(PZ_ERR_ARG, "'%s' exists: not overwriting a key (--force replaces it)", there);
    }
    if (zmq_curve_keypair(pub, sec) != 0)
        return pz_fail(PZ_ERR_STATE, "zmq_curve_keypair: %s (libzmq without CURVE?)", zmq_strerror(errno));
    char text[128];
    const int n = snprintf(text, sizeof text, "%s\n%s\n", pub, sec);
    /* created 0600 before its first byte, and never over an existing file without --force */
    PZ_TRY(pz_write_file_private(path, text, (size_t)n, force));
    const int m = snprintf(text, sizeof text, "%s\n", pub);
    return force ? pz_write_file_atomic(pubpath, text, (size_t)m) : pz_write_file_private(pubpath, text, (size_t)m, 0);
}

/* ZAP: admit the one client key we were given */
static void *zap_main(void *arg) {
    zend *z = arg;
    for (;;) {
        zmq_msg_t parts[8];
        int n = 0, more = 1, bad = 0;
        while (more) {
            zmq_msg_t m;
            zmq_msg_init(&m);
            if (zmq_msg_recv(&m, z->zap_sock, 0) < 0) {
                zmq_msg_close(&m);
                for (int i = 0; i < n; i++) zmq_msg_close(&parts[i]);
                if (errno == EINTR) {
                    n = 0, more = 1;
                    continue;
                }
                /* the context is shutting down (ETERM): close our socket, done */
                const int zero = 0;
                zmq_setsockopt(z->zap_sock, ZMQ_LINGER, &zero, sizeof zero);
                zmq_close(z->zap_sock);
                return NULL;
            }
            more = zmq_msg_more(&m);
            if (n < 8) parts[n++] = m;
            else zmq_msg_close(&m), bad = 1;
        }
        /* version, request id, domain, address, identity, mechanism, client key */
        int ok = !bad && n >= 7 && zmq_msg_size(&parts[5]) == 5 && !memcmp(zmq_msg_data(&parts[5]), "CURVE", 5) &&
                 zmq_msg_size(&parts[6]) == 32 && !memcmp(zmq_msg_data(&parts[6]), z->allowed, 32);
        if (!ok) z->refused++;
        const char *code = ok ? "200" : "400", *text = ok ? "OK" : "unknown client key";
        zmq_send(z->zap_sock, "1.0", 3, ZMQ_SNDMORE);
        if (n >= 2) zmq_send(z->zap_sock, zmq_msg_data(&parts[1]), zmq_msg_size(&parts[1]), ZMQ_SNDMORE);
        else zmq_send(z->zap_sock, "", 0, ZMQ_SNDMORE);
        zmq_send(z->zap_sock, code, 3, ZMQ_SNDMORE);
        zmq_send(z->zap_sock, text, strlen(text), ZMQ_SNDMORE);
        zmq_send(z->zap_sock, "", 0, ZMQ_SNDMORE);
        zmq_send(z->zap_sock, "", 0, 0);
        if (!ok) {
            char addr[160] = "?";
            if (n >= 4) {
                char raw[64];
                const size_t an = zmq_msg_size(&parts[3]) < sizeof raw - 1 ? zmq_msg_size(&parts[3]) : sizeof raw - 1;
                memcpy(raw, zmq_msg_data(&parts[3]), an), raw[an] = 0;
                pz_escape_text(addr, sizeof addr, raw);
            }
            fprintf(stderr, "pipezip serve: refused a client at %s with an unknown CURVE key\n", addr);
        }
        for (int i = 0; i < n; i++) zmq_msg_close(&parts[i]);
    }
}

pz_status pz_link_zmq_listen(pz_link **l, const pz_zmq_server_config *cfg, const char *name) {
    *l = NULL;
    zend *z = calloc(1, sizeof *z);
    if (!z) return pz_fail(PZ_ERR_NOMEM, "out of memory for link '%s'", name);
    z->server = 1;
    z->idle_s = cfg->timeout_s > 0 ? cfg->timeout_s : 60.0;
    z->max_msg = cfg->max_message;
    z->wait_for = cfg->wait_for;
    z->ctx = zmq_ctx_new();
    pz_status st = PZ_OK;
    if (cfg->server_secret_file) {
        char pub[41], sec[41], cpub[41];
        if (!cfg->client_public_file) st = pz_fail(PZ_ERR_ARG, "CURVE: the server needs the client's public key too (--client-key FILE.pub)");
        if (!st) st = read_keys(cfg->server_secret_file, pub, sec);
        if (!st) st = read_keys(cfg->client_public_file, cpub, NULL);
        if (!st && !zmq_z85_decode(z->allowed, cpub)) st = pz_fail(PZ_ERR_FORMAT, "'%s': not a Z85 key", cfg->client_public_file);
        if (!st) {
            z->zap_sock = zmq_socket(z->ctx, ZMQ_REP);
            if (zmq_bind(z->zap_sock, "inproc://zeromq.zap.01") != 0) st = pz_fail(PZ_ERR_IO, "ZAP handler: %s", zmq_strerror(errno));
        }
        if (!st) {
            pthread_create(&z->zap, NULL, zap_main, z);
            z->zap_running = 1;
            z->sock = zmq_socket(z->ctx, ZMQ_ROUTER);
            const int one = 1;
            zmq_setsockopt(z->sock, ZMQ_CURVE_SERVER, &one, sizeof one);
            zmq_setsockopt(z->sock, ZMQ_CURVE_SECRETKEY, sec, 40);
            zmq_setsockopt(z->sock, ZMQ_ZAP_DOMAIN, "pipezip", 7);
        }
    } else if (cfg->client_public_file) {
        st = pz_fail(PZ_ERR_ARG, "CURVE: a client key without the server's secret key (--server-key FILE)");
    } else {
        z->sock = zmq_socket(z->ctx, ZMQ_ROUTER);
    }
    if (!st) {
        const int sndtimeo = 60000;
        zmq_setsockopt(z->sock, ZMQ_SNDTIMEO, &sndtimeo, sizeof sndtimeo);
        /* no frame above what the served model can need is ever read in:
         * libzmq refuses it (and drops that connection) before allocating */
        const int64_t maxmsg = z->max_msg > 0 ? (int64_t)z->max_msg : -1;
        zmq_setsockopt(z->sock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
        /* a peer that stops answering libzmq's heartbeats is disconnected */
        const int ivl = 2000, hb_timeout = (int)(z->idle_s * 1000 < 2e9 ? z->idle_s * 1000 : 2e9);
        zmq_setsockopt(z->sock, ZMQ_HEARTBEAT_IVL, &ivl, sizeof ivl);
        zmq_setsockopt(z->sock, ZMQ_HEARTBEAT_TIMEOUT, &hb_timeout, sizeof hb_timeout);
    }
    if (!st && zmq_bind(z->sock, cfg->endpoint) != 0)
        st = pz_fail(PZ_ERR_IO, "cannot listen on '%s': %s", cfg->endpoint, zmq_strerror(errno));
    *l = link_new(&zmq_ops, z, name);
    if (!*l) return PZ_ERR_NOMEM;
    (*l)->remote_party = 1;
    if (st) {
        pz_link_free(*l);
        *l = NULL;
    }
    return st;
}

/* this process's client id: the same for all its turns */
static uint64_t client_id(void) {
    static uint64_t id;
    if (!id) {
        uint64_t seed = 0;
        int fd = open("/dev/urandom", O_RDONLY);
        if (fd >= 0) {
            if (read(fd, &seed, sizeof seed) != (ssize_t)sizeof seed) seed = 0;
            close(fd);
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        id = seed ^ ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20);
        if (!id) id = 1;
    }
    return id;
}

pz_status pz_link_zmq_connect(pz_link **l, const char *endpoint, const char *client_secret_file,
                              const char *server_public_file, double timeout_s, const char *name) {
    *l = NULL;
    zend *z = calloc(1, sizeof *z);
    if (!z) return pz_fail(PZ_ERR_NOMEM, "out of memory for link '%s'", name);
    z->final = 1;
    z->ctx = zmq_ctx_new();
    z->sock = zmq_socket(z->ctx, ZMQ_DEALER);
    const int sndtimeo = (int)(timeout_s * 1000), linger = 0;
    zmq_setsockopt(z->sock, ZMQ_SNDTIMEO, &sndtimeo, sizeof sndtimeo); /* a send to a dead server fails */
    zmq_setsockopt(z->sock, ZMQ_LINGER, &linger, sizeof linger);
    *l = link_new(&zmq_ops, z, name);
    if (!*l) return PZ_ERR_NOMEM;
    (*l)->remote_party = 1;
    pz_status st = PZ_OK;
    if (client_secret_file || server_public_file) {
        char pub[41], sec[41], spub[41];
        if (!client_secret_file || !server_public_file)
            st = pz_fail(PZ_ERR_ARG, "CURVE needs both this client's secret key (--client-key) and the server's public key (--server-key)");
        if (!st) st = read_keys(client_secret_file, pub, sec);
        if (!st) st = read_keys(server_public_file, spub, NULL);
        if (!st) {
            zmq_setsockopt(z->sock, ZMQ_CURVE_SERVERKEY, spub, 40);
            zmq_setsockopt(z->sock, ZMQ_CURVE_PUBLICKEY, pub, 40);
            zmq_setsockopt(z->sock, ZMQ_CURVE_SECRETKEY, sec, 40);
        }
    }
    if (!st && zmq_connect(z->sock, endpoint) != 0) st = pz_fail(PZ_ERR_ARG, "cannot connect to '%s': %s", endpoint, zmq_strerror(errno));
    /* HELLO until WELCOME. BUSY means other clients have their turns first:
     * the server is alive, so this waits as long as it keeps answering;
     * silence is bounded by timeout_s. */
    uint8_t hello[8];
    pz_put_u64(hello, client_id());
    double heard = pz_now();
    int busy = 0;
    while (!st) {
        /* not connected yet (or refused): the HELLO cannot even be queued */
        if (send_parts(z, TAG_HELLO, 0.0, hello, sizeof hello, ZMQ_DONTWAIT) < 0 && errno != EAGAIN) {
            st = pz_fail(PZ_ERR_IO, "%s: zmq_send: %s", name, zmq_strerror(errno));
            break;
        }
        inmsg m;
        uint8_t *buf = NULL;
        size_t cap = 0;
        const double left = heard + timeout_s - pz_now();
        const int rc = left > 0 ? recv_parts(z, &m, &buf, &cap, (long)(left < 1.0 ? left * 1000 : 1000)) : 0;
        free(buf);
        if (rc > 0 && m.tag == TAG_WELCOME) break;
        if (rc > 0 && m.tag == TAG_BUSY) {
            static int said; /* once per process, not at every turn */
            if (!busy && !said++) fprintf(stderr, "%s: the server is serving another client; waiting for this client's turn\n", name);
            busy = 1, heard = pz_now();
        }
        if (pz_now() >= heard + timeout_s) {
            st = pz_fail(PZ_ERR_STATE,
                         busy ? "%s: the server at %s stopped answering for %.0f s while this client waited for its turn"
                              : "%s: no answer from a pipezip server at %s within %.0f s (not running, unreachable, or it refused this "
                                "client's key)",
                         name, endpoint, timeout_s);
            break;
        }
        if (rc > 0 && m.tag == TAG_BUSY) usleep(100000);
    }
    if (st) {
        z->closed_sent = 1; /* nothing to close: never admitted */
        const int zero = 0;
        zmq_setsockopt(z->sock, ZMQ_LINGER, &zero, sizeof zero);
        pz_link_free(*l);
        *l = NULL;
    }
    return st;
}

#else

int pz_zmq_available(void) { return 0; }
#define NO_ZMQ pz_fail(PZ_ERR_ARG, "this pipezip was built without ZeroMQ (install libzmq3-dev and rebuild)")
pz_status pz_link_zmq_listen(pz_link **l, const pz_zmq_server_config *cfg, const char *name) {
    (void)l, (void)cfg, (void)name;
    return NO_ZMQ;
}
pz_status pz_link_zmq_connect(pz_link **l, const char *endpoint, const char *client_secret_file,
                              const char *server_public_file, double timeout_s, const char *name) {
    (void)l, (void)endpoint, (void)client_secret_file, (void)server_public_file, (void)timeout_s, (void)name;
    return NO_ZMQ;
}
pz_status pz_zmq_keygen(const char *path, int force) {
    (void)path, (void)force;
    return NO_ZMQ;
}
int pz_link_zmq_session(pz_link *l, uint64_t *client, int *last_turn) {
    (void)l, (void)client, (void)last_turn;
    return PZ_ZMQ_SESSION_NONE;
}
void pz_link_zmq_next_session(pz_link *l) { (void)l; }
int pz_link_zmq_dropouts(pz_link *l, uint64_t *ids, int max) {
    (void)l, (void)ids, (void)max;
    return 0;
}
void pz_link_zmq_set_last_turn(pz_link *l, int last) { (void)l, (void)last; }

#endif
