/* SPDX-License-Identifier: MIT */
/* test_link.c — the in-process link: order, copies, byte counts, a full
 * queue blocking the sender until the receiver drains it, close and timeout
 * as errors (never a hang). */
#include "../test.h"
#include "link/link.h"

#include <pthread.h>

static void *producer(void *arg) {
    pz_link *l = arg;
    for (int i = 0; i < 1000; i++) {
        int v[4] = {i, i * 2, i * 3, i * 4};
        if (pz_link_send(l, i % 7, v, sizeof v)) break;
    }
    pz_link_close(l);
    return NULL;
}

int main(void) {
    pz_link *a, *b;
    CHECK(pz_link_inproc_pair(&a, &b, 2, "test") == PZ_OK, "%s", pz_last_error());
    /* a producer thread over a 2-slot queue: every message, in order */
    pthread_t t;
    pthread_create(&t, NULL, producer, a);
    uint8_t *buf = NULL;
    size_t cap = 0, len;
    int tag, ok = 1, got = 0;
    while (pz_link_recv(b, &tag, &buf, &cap, &len, 10.0) == PZ_OK) {
        int v[4];
        memcpy(v, buf, sizeof v);
        ok &= len == sizeof v && tag == got % 7 && v[0] == got && v[3] == got * 4;
        got++;
    }
    pthread_join(t, NULL);
    CHECK(ok && got == 1000, "1000 messages in order, got %d", got);
    CHECK(strstr(pz_last_error(), "peer closed") != NULL, "after the peer closed: %s", pz_last_error());
    pz_link_stats sa = pz_link_get_stats(a), sb = pz_link_get_stats(b);
    CHECK(sa.messages_sent == 1000 && sa.bytes_sent == 16000 && sb.bytes_received == 16000, "byte counts %llu/%llu",
          (unsigned long long)sa.bytes_sent, (unsigned long long)sb.bytes_received);
    CHECK(pz_link_send(b, 1, "x", 1) == PZ_ERR_STATE, "sending to a closed peer fails");
    pz_link_free(a), pz_link_free(b);

    /* a silent peer: the receive times out with a message, not a hang */
    CHECK(pz_link_inproc_pair(&a, &b, 1, "quiet") == PZ_OK, "pair");
    const double t0 = pz_now();
    CHECK(pz_link_recv(b, &tag, &buf, &cap, &len, 0.2) == PZ_ERR_STATE && strstr(pz_last_error(), "no message within"),
          "timeout: %s", pz_last_error());
    CHECK(pz_now() - t0 < 2.0, "the timeout is honoured");
    /* the sender's buffer is copied: changing it after send changes nothing */
    char m[8] = "abcdefg";
    pz_link_send(a, 3, m, 8);
    m[0] = 'X';
    CHECK(pz_link_recv(b, &tag, &buf, &cap, &len, 1.0) == PZ_OK && buf[0] == 'a' && tag == 3, "messages are copies");
    pz_link_free(a), pz_link_free(b);
    CHECK(pz_link_inproc_pair(&a, &b, 0, "bad") == PZ_ERR_ARG, "capacity 0 is refused");
    free(buf);
    pz_link *c, *d;
    pz_link_inproc_pair(&c, &d, 1, "x");
    pz_link_free(c), pz_link_free(d);
    TEST_DONE();
}
