/* zmq.c — the ZeroMQ link for split learning: the server binds a ROUTER
 * socket, a client connects a DEALER. Every message is two parts: a 12-byte
 * envelope [u32 tag][f64 arrival time] and the payload.
 *
 * Sessions: a client first sends HELLO; the server answers WELCOME if no
 * other client is being served, else BUSY (the client retries until its
 * timeout). A client's CLOSE ends its session and the server waits for the
 * next HELLO, so several clients take turns with one server; after
 * `sessions` sessions the server end reports the peer closed.
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
#include <unistd.h>
#include <zmq.h>

enum { ENV = 12, TAG_CLOSE = 250, TAG_BUSY = 251, TAG_WELCOME = 252, TAG_HELLO = 253 };

typedef struct {
    void *ctx, *sock;
    int server;
    /* server: the client being served */
    uint8_t peer[256];
    size_t peer_len;
    int sessions, sessions_done;
    int closed_sent, peer_closed;
    /* ZAP (CURVE authentication) */
    pthread_t zap;
    int zap_running;
    void *zap_sock;
    uint8_t allowed[32];
    volatile int refused;
} zend;

int pz_zmq_available(void) { return 1; }

static void put_env(uint8_t *e, int tag, double stamp) { pz_put_u32(e, (uint32_t)tag), pz_put_f64(e + 4, stamp); }

/* send [identity] envelope payload */
/* send [identity] envelope payload; id NULL on the client (a DEALER has one peer) */
static int send_env(zend *z, const uint8_t *id, size_t id_len, int tag, double stamp, const void *msg, size_t len, int flags) {
    uint8_t env[ENV];
    put_env(env, tag, stamp);
    if (id && zmq_send(z->sock, id, id_len, ZMQ_SNDMORE | flags) < 0) return -1;
    if (zmq_send(z->sock, env, ENV, ZMQ_SNDMORE | flags) < 0) return -1;
    return zmq_send(z->sock, msg ? msg : "", len, flags) < 0 ? -1 : 0;
}

/* to the peer of this end: the server's current client, or the server */
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

/* Receive one multipart message (server: with the sender's identity).
 * 1: got one; 0: timed out; -1: error. */
static int recv_parts(zend *z, uint8_t *id, size_t *id_len, int *tag, double *stamp, uint8_t **buf, size_t *cap, size_t *len,
                      long timeout_ms) {
    zmq_pollitem_t it = {z->sock, 0, ZMQ_POLLIN, 0};
    const int rc = zmq_poll(&it, 1, timeout_ms);
    if (rc < 0) return errno == EINTR ? 0 : -1;
    if (rc == 0) return 0;
    zmq_msg_t part;
    int more = 1, idx = 0;
    *len = 0;
    while (more) {
        zmq_msg_init(&part);
        if (zmq_msg_recv(&part, z->sock, 0) < 0) {
            zmq_msg_close(&part);
            return -1;
        }
        const size_t n = zmq_msg_size(&part);
        const uint8_t *d = zmq_msg_data(&part);
        const int which = z->server ? idx : idx + 1; /* 0 identity, 1 envelope, 2 payload */
        if (which == 0) {
            *id_len = n < 256 ? n : 256;
            if (*id_len) memcpy(id, d, *id_len);
        } else if (which == 1) {
            if (n != ENV || !d) *tag = -1;
            else {
                const uint32_t t = pz_get_u32(d);
                *stamp = pz_get_f64(d + 4);
                *tag = t <= 255 ? (int)t : -1;
            }
        } else if (which == 2) {
            if (n > *cap) {
                uint8_t *b = realloc(*buf, n ? n : 1);
                if (!b) {
                    zmq_msg_close(&part);
                    return -1;
                }
                *buf = b, *cap = n ? n : 1;
            }
            if (n) memcpy(*buf, d, n);
            *len = n;
        }
        more = zmq_msg_more(&part);
        zmq_msg_close(&part);
        idx++;
    }
    if (idx != (z->server ? 3 : 2)) *tag = -1;
    return 1;
}

static pz_status zmq_recv_msg(pz_link *l, int *tag, double *stamp, uint8_t **buf, size_t *cap, size_t *len, size_t *wire,
                              double timeout_s) {
    zend *z = l->impl;
    if (z->peer_closed) return pz_fail(PZ_ERR_STATE, "%s: the peer closed the link", l->name);
    const double until = timeout_s >= 0 ? pz_now() + timeout_s : 0;
    for (;;) {
        long ms = -1;
        if (timeout_s >= 0) {
            const double left = until - pz_now();
            if (left <= 0) {
                return pz_fail(PZ_ERR_STATE, "%s: no message within %.1f s (%s dead or hung?)", l->name, timeout_s,
                               z->server ? "client" : "server");
            }
            ms = (long)(left * 1000) + 1;
        }
        uint8_t id[256];
        size_t id_len = 0;
        const int rc = recv_parts(z, id, &id_len, tag, stamp, buf, cap, len, ms);
        if (rc < 0) return pz_fail(PZ_ERR_IO, "%s: zmq receive: %s", l->name, zmq_strerror(errno));
        if (rc == 0) continue;
        if (*tag < 0) return pz_fail(PZ_ERR_FORMAT, "%s: a malformed message (not a pipezip envelope)", l->name);
        if (!z->server) {
            if (*tag == TAG_CLOSE) {
                z->peer_closed = 1;
                l->peer_closed = 1;
                return pz_fail(PZ_ERR_STATE, "%s: the server closed the link", l->name);
            }
            if (*tag == TAG_WELCOME || *tag == TAG_BUSY) continue; /* late answers to a HELLO */
            *wire = ENV + *len;
            return PZ_OK;
        }
        const int current = z->peer_len && id_len == z->peer_len && !memcmp(id, z->peer, id_len);
        if (*tag == TAG_HELLO) {
            if (!z->peer_len) {
                memcpy(z->peer, id, id_len), z->peer_len = id_len;
                send_env(z, id, id_len, TAG_WELCOME, 0.0, "", 0, 0);
                fprintf(stderr, "pipezip serve: client %d of %d connected\n", z->sessions_done + 1, z->sessions);
            } else {
                send_env(z, id, id_len, current ? TAG_WELCOME : TAG_BUSY, 0.0, "", 0, 0);
            }
            continue;
        }
        if (!current) { /* not in session: tell it to say HELLO first / wait */
            send_env(z, id, id_len, TAG_BUSY, 0.0, "", 0, 0);
            continue;
        }
        if (*tag == TAG_CLOSE) {
            z->peer_len = 0;
            fprintf(stderr, "pipezip serve: client %d of %d finished its turn\n", z->sessions_done + 1, z->sessions);
            if (++z->sessions_done >= z->sessions) {
                z->peer_closed = 1;
                l->peer_closed = 1;
                return pz_fail(PZ_ERR_STATE, "%s: the last client closed the link", l->name);
            }
            continue; /* the next client's HELLO */
        }
        *wire = ENV + *len;
        return PZ_OK;
    }
}

static void zmq_close_end(pz_link *l) {
    zend *z = l->impl;
    if (z->closed_sent) return;
    z->closed_sent = 1;
    if (!z->peer_closed && (!z->server || z->peer_len)) send_parts(z, TAG_CLOSE, 0.0, "", 0, 0);
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

pz_status pz_zmq_keygen(const char *path) {
    char pub[41], sec[41];
    if (zmq_curve_keypair(pub, sec) != 0)
        return pz_fail(PZ_ERR_STATE, "zmq_curve_keypair: %s (libzmq without CURVE?)", zmq_strerror(errno));
    char text[128], pubpath[4200];
    const int n = snprintf(text, sizeof text, "%s\n%s\n", pub, sec);
    PZ_TRY(pz_write_file_atomic(path, text, (size_t)n));
    if (chmod(path, 0600) != 0) return pz_fail(PZ_ERR_IO, "cannot make '%s' private: %s", path, strerror(errno));
    snprintf(pubpath, sizeof pubpath, "%s.pub", path);
    const int m = snprintf(text, sizeof text, "%s\n", pub);
    return pz_write_file_atomic(pubpath, text, (size_t)m);
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
        if (!ok) fprintf(stderr, "pipezip serve: refused a client with an unknown CURVE key\n");
        for (int i = 0; i < n; i++) zmq_msg_close(&parts[i]);
    }
}

pz_status pz_link_zmq_listen(pz_link **l, const char *endpoint, const char *server_secret_file, const char *client_public_file,
                             int sessions, const char *name) {
    *l = NULL;
    zend *z = calloc(1, sizeof *z);
    if (!z) return pz_fail(PZ_ERR_NOMEM, "out of memory for link '%s'", name);
    z->server = 1;
    z->sessions = sessions > 0 ? sessions : 1;
    z->ctx = zmq_ctx_new();
    pz_status st = PZ_OK;
    if (server_secret_file) {
        char pub[41], sec[41], cpub[41];
        if (!client_public_file) st = pz_fail(PZ_ERR_ARG, "CURVE: the server needs the client's public key too (--client-key FILE.pub)");
        if (!st) st = read_keys(server_secret_file, pub, sec);
        if (!st) st = read_keys(client_public_file, cpub, NULL);
        if (!st && !zmq_z85_decode(z->allowed, cpub)) st = pz_fail(PZ_ERR_FORMAT, "'%s': not a Z85 key", client_public_file);
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
    } else if (client_public_file) {
        st = pz_fail(PZ_ERR_ARG, "CURVE: a client key without the server's secret key (--server-key FILE)");
    } else {
        z->sock = zmq_socket(z->ctx, ZMQ_ROUTER);
    }
    if (!st) {
        const int sndtimeo = 60000;
        zmq_setsockopt(z->sock, ZMQ_SNDTIMEO, &sndtimeo, sizeof sndtimeo);
    }
    if (!st && zmq_bind(z->sock, endpoint) != 0) st = pz_fail(PZ_ERR_IO, "cannot listen on '%s': %s", endpoint, zmq_strerror(errno));
    *l = link_new(&zmq_ops, z, name);
    if (!*l) return PZ_ERR_NOMEM;
    if (st) {
        pz_link_free(*l);
        *l = NULL;
    }
    return st;
}

pz_status pz_link_zmq_connect(pz_link **l, const char *endpoint, const char *client_secret_file,
                              const char *server_public_file, double timeout_s, const char *name) {
    *l = NULL;
    zend *z = calloc(1, sizeof *z);
    if (!z) return pz_fail(PZ_ERR_NOMEM, "out of memory for link '%s'", name);
    z->ctx = zmq_ctx_new();
    z->sock = zmq_socket(z->ctx, ZMQ_DEALER);
    const int sndtimeo = (int)(timeout_s * 1000), linger = 0;
    zmq_setsockopt(z->sock, ZMQ_SNDTIMEO, &sndtimeo, sizeof sndtimeo); /* a send to a dead server fails */
    zmq_setsockopt(z->sock, ZMQ_LINGER, &linger, sizeof linger);
    *l = link_new(&zmq_ops, z, name);
    if (!*l) return PZ_ERR_NOMEM;
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
    /* HELLO until WELCOME: BUSY means another client has its turn */
    const double until = pz_now() + timeout_s;
    int busy = 0;
    while (!st) {
        /* not connected yet (or refused): the HELLO cannot even be queued */
        if (send_parts(z, TAG_HELLO, 0.0, "", 0, ZMQ_DONTWAIT) < 0 && errno != EAGAIN) {
            st = pz_fail(PZ_ERR_IO, "%s: zmq_send: %s", name, zmq_strerror(errno));
            break;
        }
        int tag = -1;
        double stamp;
        uint8_t *buf = NULL, id[8];
        size_t cap = 0, len, id_len;
        const double left = until - pz_now();
        const int rc = left > 0 ? recv_parts(z, id, &id_len, &tag, &stamp, &buf, &cap, &len, (long)(left < 1.0 ? left * 1000 : 1000)) : 0;
        free(buf);
        if (rc > 0 && tag == TAG_WELCOME) break;
        if (rc > 0 && tag == TAG_BUSY) busy = 1;
        if (pz_now() >= until) {
            st = pz_fail(PZ_ERR_STATE,
                         busy ? "%s: the server at %s is still serving another client after %.0f s"
                              : "%s: no answer from a pipezip server at %s within %.0f s (not running, unreachable, or it refused this "
                                "client's key)",
                         name, endpoint, timeout_s);
            break;
        }
        if (rc > 0 && tag == TAG_BUSY) usleep(200000);
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
pz_status pz_link_zmq_listen(pz_link **l, const char *endpoint, const char *server_secret_file, const char *client_public_file,
                             int sessions, const char *name) {
    (void)l, (void)endpoint, (void)server_secret_file, (void)client_public_file, (void)sessions, (void)name;
    return NO_ZMQ;
}
pz_status pz_link_zmq_connect(pz_link **l, const char *endpoint, const char *client_secret_file,
                              const char *server_public_file, double timeout_s, const char *name) {
    (void)l, (void)endpoint, (void)client_secret_file, (void)server_public_file, (void)timeout_s, (void)name;
    return NO_ZMQ;
}
pz_status pz_zmq_keygen(const char *path) {
    (void)path;
    return NO_ZMQ;
}

#endif
