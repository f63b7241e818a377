/* SPDX-License-Identifier: MIT */
/* hostile_peer.c — what another party's machine might send a split-learning
 * server (`pipezip serve`), for test_hostile.sh: raw TCP bytes and hand-built
 * ZeroMQ messages, each scenario bounded in connections and bytes. Every
 * scenario that expects an answer waits for that answer (a state), never
 * for a time; the server's own --timeout ends the silent ones.
 *
 *   hostile_peer record PORT FILE     act as a server: WELCOME a real client,
 *                                     keep its settings check (CHECK) in FILE
 *   hostile_peer raw HOST PORT HEX    connect, send the bytes, close
 *   hostile_peer random HOST PORT N SEED  N random bytes, close
 *   hostile_peer zmq ENDPOINT SCENARIO [CHECKFILE]
 *
 * A zmq scenario exits 0 when the server answered as it must (an ERROR
 * naming the problem, or nothing at all for peers it ignores), 1 if not. */
#define _GNU_SOURCE
#include "pipezip/codec.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zmq.h>

enum { T_ACT = 3, T_GRAD = 4, T_LOSS = 5, T_STOP = 7, T_EVAL_META = 9, T_SAVE = 13, T_ERROR = 15, T_CHECK = 22, T_CHECKED = 23, T_META = 2 };
enum { T_CLOSE = 250, T_BUSY = 251, T_WELCOME = 252, T_HELLO = 253 };

static void put_u32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static uint32_t get_u32(const uint8_t *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }

static int send_msg(void *s, const uint8_t *id, size_t idn, uint32_t tag, const void *payload, size_t n) {
    uint8_t env[12] = {0};
    put_u32(env, tag);
    if (id && zmq_send(s, id, idn, ZMQ_SNDMORE) < 0) return -1;
    if (zmq_send(s, env, 12, ZMQ_SNDMORE) < 0) return -1;
    return zmq_send(s, payload ? payload : "", n, 0) < 0 ? -1 : 0;
}

/* the next message's tag (-1: none within ms) and payload (malloc'd) */
static int recv_msg(void *s, int with_id, uint8_t *id, size_t *idn, uint8_t **payload, size_t *n, long ms) {
    zmq_pollitem_t it = {s, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&it, 1, ms) <= 0) return -1;
    int tag = -1, idx = 0, more = 1;
    *payload = NULL, *n = 0;
    while (more) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, s, 0) < 0) return -1;
        const int which = with_id ? idx : idx + 1;
        const size_t len = zmq_msg_size(&m);
        if (which == 0 && id) memcpy(id, zmq_msg_data(&m), len < 256 ? len : 256), *idn = len;
        if (which == 1 && len == 12) tag = (int)get_u32(zmq_msg_data(&m));
        if (which == 2) {
            *payload = malloc(len + 1);
            memcpy(*payload, zmq_msg_data(&m), len);
            (*payload)[len] = 0;
            *n = len;
        }
        more = zmq_msg_more(&m);
        zmq_msg_close(&m);
        idx++;
    }
    return tag;
}

static int record(const char *port, const char *file) {
    void *ctx = zmq_ctx_new(), *s = zmq_socket(ctx, ZMQ_ROUTER);
    char ep[64];
    snprintf(ep, sizeof ep, "tcp://127.0.0.1:%s", port);
    if (zmq_bind(s, ep)) return fprintf(stderr, "record: bind %s: %s\n", ep, zmq_strerror(errno)), 1;
    printf("listening\n");
    fflush(stdout);
    for (;;) {
        uint8_t id[256], *p;
        size_t idn = 0, n;
        const int tag = recv_msg(s, 1, id, &idn, &p, &n, 120000);
        if (tag < 0) return fprintf(stderr, "record: no client\n"), 1;
        if (tag == T_HELLO) send_msg(s, id, idn, T_WELCOME, "", 0);
        if (tag == T_CHECK) {
            FILE *f = fopen(file, "wb");
            fwrite(p, 1, n, f);
            fclose(f);
            free(p);
            send_msg(s, id, idn, T_ERROR, "recorded", 9); /* the client stops */
            zmq_close(s);
            zmq_ctx_term(ctx);
            return 0;
        }
        free(p);
    }
}

static int tcp_send(const char *host, const char *port, const uint8_t *b, size_t n) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port))};
    inet_pton(AF_INET, host, &a.sin_addr);
    if (connect(fd, (struct sockaddr *)&a, sizeof a)) return perror("connect"), 1;
    const ssize_t w = write(fd, b, n);
    (void)w;
    /* wait until the server closes the connection or 2 s pass: the bytes were read */
    struct timeval tv = {2, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char sink[256];
    while (read(fd, sink, sizeof sink) > 0) {}
    close(fd);
    return 0;
}

/* ---- zmq scenarios ---------------------------------------------------------- */
static void *ctx, *sock;
static uint8_t *check;
static size_t check_n;

static void connect_to(const char *ep) {
    ctx = zmq_ctx_new();
    sock = zmq_socket(ctx, ZMQ_DEALER);
    const int linger = 2000; /* what was sent goes out before the process ends */
    zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof linger);
    zmq_connect(sock, ep);
}

/* HELLO until WELCOME (the server may be busy with another session) */
static int hello(void) {
    uint8_t id[8] = {1, 2, 3, 4, 5, 6, 7, (uint8_t)getpid()};
    for (int i = 0; i < 600; i++) {
        send_msg(sock, NULL, 0, T_HELLO, id, 8);
        uint8_t *p;
        size_t n;
        const int tag = recv_msg(sock, 0, NULL, NULL, &p, &n, 1000);
        free(p);
        if (tag == T_WELCOME) return 0;
        if (tag == T_BUSY) usleep(100000);
    }
    fprintf(stderr, "hostile: never welcomed\n");
    return 1;
}

/* the server's answer must be an ERROR whose text has `want` */
static int expect_error(const char *want) {
    for (;;) {
        uint8_t *p;
        size_t n;
        const int tag = recv_msg(sock, 0, NULL, NULL, &p, &n, 120000);
        if (tag == T_GRAD || tag == T_LOSS) { /* answers to a step: keep reading */
            free(p);
            continue;
        }
        if (tag == T_ERROR && strstr((char *)p, want)) {
            printf("server said: %s\n", (char *)p);
            free(p);
            return 0;
        }
        fprintf(stderr, "hostile: expected an ERROR with '%s', got tag %d: %.200s\n", want, tag, p ? (char *)p : "");
        free(p);
        return 1;
    }
}

/* the recorded settings: the server must answer CHECKED */
static int send_check(void) {
    send_msg(sock, NULL, 0, T_CHECK, check, check_n);
    uint8_t *p;
    size_t n;
    const int tag = recv_msg(sock, 0, NULL, NULL, &p, &n, 120000);
    if (tag != T_CHECKED) fprintf(stderr, "hostile: the recorded settings check got tag %d: %.200s\n", tag, p ? (char *)p : "");
    free(p);
    return tag == T_CHECKED ? 0 : 1;
}

/* a valid training step of lenet5 cut after pool1 (6x14x14), TopK 30% forward */
static int valid_step(int B, int send_act) {
    uint8_t meta[4 + 4 * 64 + 4 * 64 + 12];
    size_t n = 0;
    put_u32(meta, (uint32_t)B), n = 4;
    for (int i = 0; i < B; i++) put_u32(meta + n, (uint32_t)i), n += 4;
    for (int i = 0; i < B; i++) put_u32(meta + n, (uint32_t)(i % 10)), n += 4;
    float lr = 0.05f;
    memcpy(meta + n, &lr, 4), n += 4;
    put_u32(meta + n, 1), n += 4;
    put_u32(meta + n, (uint32_t)B), n += 4; /* the step's whole batch */
    if (send_msg(sock, NULL, 0, T_META, meta, n)) return 1;
    if (!send_act) return 0;
    pz_codec *c;
    if (pz_codec_create(&c, "topk:0.3")) return fprintf(stderr, "codec: %s\n", pz_last_error()), 1;
    const int64_t shape[4] = {B, 6, 14, 14};
    const size_t count = (size_t)B * 6 * 14 * 14;
    float *x = malloc(count * sizeof *x);
    for (size_t i = 0; i < count; i++) x[i] = (float)((i * 2654435761u) % 1000) / 100.0f;
    const size_t cap = pz_codec_max_frame_bytes(c, 4, shape);
    uint8_t *frame = malloc(cap);
    size_t flen;
    const pz_status st = pz_codec_encode(c, x, 4, shape, NULL, frame, cap, &flen, NULL);
    if (!st) send_msg(sock, NULL, 0, T_ACT, frame, flen);
    free(x), free(frame);
    pz_codec_free(c);
    return st != 0;
}

static int scenario(const char *ep, const char *name) {
    connect_to(ep);
    uint8_t junk[64];
    memset(junk, 0x41, sizeof junk);
    if (!strcmp(name, "one-part")) { /* not a pipezip envelope, outside a session: ignored */
        zmq_send(sock, "hello", 5, 0);
        return 0;
    }
    if (!strcmp(name, "bad-tag")) {
        uint8_t env[12] = {0};
        put_u32(env, 300);
        zmq_send(sock, env, 12, ZMQ_SNDMORE), zmq_send(sock, "", 0, 0);
        return 0;
    }
    if (!strcmp(name, "no-hello")) return send_msg(sock, NULL, 0, T_ACT, junk, sizeof junk) != 0;
    if (!strcmp(name, "bad-hello")) return send_msg(sock, NULL, 0, T_HELLO, junk, sizeof junk) != 0;
    if (!strcmp(name, "huge")) { /* over the server's maximum: libzmq drops the connection */
        const size_t n = (size_t)64 << 20;
        uint8_t *b = calloc(1, n);
        send_msg(sock, NULL, 0, T_HELLO, b, n);
        free(b);
        return 0;
    }
    if (hello()) return 1;
    if (!strcmp(name, "empty-eval")) { /* the NULL read of an earlier version */
        send_msg(sock, NULL, 0, T_EVAL_META, "", 0);
        return expect_error("before the settings check");
    }
    if (!strcmp(name, "wrong-check")) {
        const char *f = "model=mlp in=1x28x28 classes=10 batch=64";
        send_msg(sock, NULL, 0, T_CHECK, f, strlen(f));
        return expect_error("other settings");
    }
    if (!strcmp(name, "garbage-in-session")) {
        zmq_send(sock, junk, 7, 0);
        return expect_error("malformed");
    }
    if (!strcmp(name, "silent")) return expect_error("sent nothing");
    /* the rest pass the settings check first */
    if (send_check()) return 1;
    uint8_t *p;
    size_t n;
    if (!strcmp(name, "empty-eval-checked")) {
        send_msg(sock, NULL, 0, T_EVAL_META, "", 0);
        return expect_error("evaluation header");
    }
    if (!strcmp(name, "error-text")) { /* an ERROR of its own, with terminal escapes and a line break */
        const char e[] = "evil\x1b[2J\nforged log line";
        send_msg(sock, NULL, 0, T_ERROR, e, sizeof e);
        return expect_error("evil");
    }
    if (!strcmp(name, "stop")) {
        send_msg(sock, NULL, 0, T_STOP, "", 0);
        return expect_error("STOP");
    }
    if (!strcmp(name, "save-escape")) {
        const char *d = "../../escaped";
        send_msg(sock, NULL, 0, T_SAVE, d, strlen(d));
        return expect_error("checkpoint request");
    }
    if (!strcmp(name, "bad-meta")) {
        uint8_t meta[4];
        put_u32(meta, 1u << 30);
        send_msg(sock, NULL, 0, T_META, meta, 4);
        return expect_error("batch");
    }
    if (!strcmp(name, "bad-frame")) {
        valid_step(8, 0);
        send_msg(sock, NULL, 0, T_ACT, junk, sizeof junk);
        return expect_error("frame");
    }
    if (!strcmp(name, "bad-labels")) { /* a target outside the model's classes */
        uint8_t meta[4 + 4 + 4 + 12] = {0};
        put_u32(meta, 1), put_u32(meta + 8, 77), put_u32(meta + 16, 1), put_u32(meta + 20, 1);
        float lr = 0.05f;
        memcpy(meta + 12, &lr, 4);
        send_msg(sock, NULL, 0, T_META, meta, sizeof meta);
        pz_codec *c;
        pz_codec_create(&c, "topk:0.3");
        const int64_t shape[4] = {1, 6, 14, 14};
        float x[6 * 14 * 14] = {1};
        uint8_t frame[8192];
        size_t flen;
        pz_codec_encode(c, x, 4, shape, NULL, frame, sizeof frame, &flen, NULL);
        pz_codec_free(c);
        send_msg(sock, NULL, 0, T_ACT, frame, flen);
        return expect_error("target");
    }
    if (!strcmp(name, "step-then-die")) { /* a real step changes the server's weights; then this client vanishes */
        if (valid_step(64, 1)) return 1;
        int tag;
        while ((tag = recv_msg(sock, 0, NULL, NULL, &p, &n, 120000)) == T_LOSS) free(p);
        free(p);
        if (tag != T_GRAD) return fprintf(stderr, "hostile: expected GRAD, got %d\n", tag), 1;
        printf("a step was taken; vanishing\n");
        return 0; /* exit without CLOSE, mid-step (the loss is still owed) */
    }
    if (!strcmp(name, "half-step")) { /* a header, then silence: mid-step */
        valid_step(8, 0);
        return expect_error("sent nothing");
    }
    fprintf(stderr, "unknown scenario '%s'\n", name);
    return 2;
}

int main(int argc, char **argv) {
    if (argc == 4 && !strcmp(argv[1], "record")) return record(argv[2], argv[3]);
    if (argc == 5 && !strcmp(argv[1], "raw")) {
        uint8_t b[1024];
        size_t n = 0;
        for (const char *h = argv[4]; h[0] && h[1] && n < sizeof b; h += 2) sscanf(h, "%2hhx", &b[n++]);
        return tcp_send(argv[2], argv[3], b, n);
    }
    if (argc == 6 && !strcmp(argv[1], "random")) {
        size_t n = (size_t)atol(argv[4]);
        if (n > 1 << 20) n = 1 << 20;
        uint8_t *b = malloc(n);
        srand((unsigned)atoi(argv[5]));
        for (size_t i = 0; i < n; i++) b[i] = (uint8_t)rand();
        const int rc = tcp_send(argv[2], argv[3], b, n);
        free(b);
        return rc;
    }
    if ((argc == 4 || argc == 5) && !strcmp(argv[1], "zmq")) {
        if (argc == 5) {
            FILE *f = fopen(argv[4], "rb");
            if (!f) return perror(argv[4]), 2;
            check = malloc(65536);
            check_n = fread(check, 1, 65536, f);
            fclose(f);
        }
        const int rc = scenario(argv[2], argv[3]);
        if (sock) zmq_close(sock);
        if (ctx) zmq_ctx_term(ctx);
        free(check);
        return rc;
    }
    fprintf(stderr, "usage: hostile_peer record PORT FILE | raw HOST PORT HEX | random HOST PORT N SEED | zmq ENDPOINT SCENARIO [CHECKFILE]\n");
    return 2;
}
