/* SPDX-License-Identifier: MIT */
/* link.c — what every link does whatever carries it: counting, the virtual
 * clock, the bandwidth/latency emulator, and parsing link settings. */
#define _GNU_SOURCE
#include "link_internal.h"
#include "pipezip/pipezip.h" /* pz_link_arrival, pz_parse_*: public */

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

pz_link *link_new(const link_ops *ops, void *impl, const char *name) {
    pz_link *l = calloc(1, sizeof *l);
    if (!l) {
        /* the transport's end goes with the link that could not be made */
        pz_link tmp = {.ops = ops, .impl = impl};
        ops->free(&tmp);
        pz_fail(PZ_ERR_NOMEM, "out of memory for link '%s'", name ? name : "link");
        return NULL;
    }
    l->ops = ops, l->impl = impl;
    pthread_mutex_init(&l->mu, NULL);
    snprintf(l->name, sizeof l->name, "%s", name ? name : "link");
    return l;
}

/* the meter a clock reads: this thread's CPU time, or the wall */
static double meter(const pz_clock *c) {
    if (!c->realtime && c->mode.kind == PZ_CLOCK_CPU) {
        struct timespec ts;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    }
    return pz_now();
}

void pz_clock_start(pz_clock *c, int realtime, pz_clock_mode mode) {
    c->realtime = realtime;
    c->mode = mode;
    c->mark = meter(c);
    c->t = realtime ? c->mark : 0.0;
    c->inbound.free_at = 0.0;
}

void pz_clock_charge(pz_clock *c) {
    const double now = meter(c);
    if (c->realtime) c->t = now;
    else if (c->mode.kind != PZ_CLOCK_RATE) c->t += now - c->mark;
    c->mark = now;
}

void pz_clock_flops(pz_clock *c, double flops) {
    if (!c->realtime && c->mode.kind == PZ_CLOCK_RATE && c->mode.rate > 0) c->t += flops / c->mode.rate;
}

pz_status pz_parse_compute_rate(const char *s, pz_clock_mode *mode) {
    if (!s || !*s) return pz_fail(PZ_ERR_ARG, "a compute rate: cpu, wall, or FLOP/s such as 100tflops");
    if (!strcmp(s, "cpu")) return *mode = (pz_clock_mode){PZ_CLOCK_CPU, 0}, PZ_OK;
    if (!strcmp(s, "wall")) return *mode = (pz_clock_mode){PZ_CLOCK_WALL, 0}, PZ_OK;
    char *end;
    const double v = strtod(s, &end);
    static const struct {
        const char *unit;
        double scale;
    } units[] = {{"", 1},       {"flops", 1},       {"flop/s", 1},       {"kflops", 1e3},  {"kflop/s", 1e3},
                 {"mflops", 1e6}, {"mflop/s", 1e6}, {"gflops", 1e9},     {"gflop/s", 1e9}, {"tflops", 1e12},
                 {"tflop/s", 1e12}, {"pflops", 1e15}, {"pflop/s", 1e15}};
    if (end != s && isfinite(v) && v > 0)
        for (size_t i = 0; i < sizeof units / sizeof *units; i++)
            if (!strcasecmp(end, units[i].unit)) return *mode = (pz_clock_mode){PZ_CLOCK_RATE, v * units[i].scale}, PZ_OK;
    return pz_fail(PZ_ERR_ARG, "'%s' is not a compute rate (cpu, wall, or a positive FLOP/s: 100tflops, 312TFLOP/s, 2.5e14)", s);
}

void pz_link_set_clock(pz_link *l, pz_clock *clock) { l->clock = clock; }

void pz_link_set_emulation(pz_link *l, const pz_link_emu *emu) {
    if (emu) l->emu = *emu;
    else memset(&l->emu, 0, sizeof l->emu);
}

const pz_name pz_wire_models[] = {
    {PZ_WIRE_DUPLEX, "duplex", "every link full duplex, each direction its own wire, held for a message's transmission"},
    {PZ_WIRE_SHARED, "shared",
     "ProtocolNanoGPT's meter: one inbound wire per stage for both directions, held for a message's transmission and its "
     "latency (stop and wait)"},
    {0, NULL, NULL},
};

double pz_wire_busy(const pz_link_emu *e, size_t bytes) {
    return e->bandwidth > 0 ? 8.0 * (double)bytes / e->bandwidth : 0.0;
}

double pz_wire_duplex(pz_wire *w, const pz_link_emu *e, double sent, size_t bytes, int header) {
    /* the frame starts when both it and its direction are ready, holds the
     * direction for its transmission and arrives a latency later */
    const double start = sent > w->free_at ? sent : w->free_at;
    w->free_at = start + pz_wire_busy(e, bytes);
    return w->free_at + (header ? 0.0 : e->latency);
}

double pz_wire_shared(pz_wire *w, const pz_link_emu *e, double sent, size_t bytes, int header) {
    /* the wire takes the message once it is sent and the last one has
     * arrived; it holds it for the transmission and the latency */
    const double start = sent > w->free_at ? sent : w->free_at;
    w->free_at = start + pz_wire_busy(e, bytes) + (header ? 0.0 : e->latency);
    return w->free_at;
}

pz_status pz_link_arrival(const char *model, double *wire, double sent, uint64_t bytes, double bandwidth, double latency,
                          double *arrival) {
    const pz_name *m = model ? pz_name_find(pz_wire_models, model) : NULL;
    if (!m) {
        char list[64];
        return pz_fail(PZ_ERR_ARG, "link model '%s' (expected %s)", model ? model : "(null)",
                       pz_names_join(pz_wire_models, ", ", " or ", list, sizeof list));
    }
    if (!(bandwidth >= 0) || !(latency >= 0) || !isfinite(sent) || !wire)
        return pz_fail(PZ_ERR_ARG, "link arrival: bandwidth %g and latency %g must be at least 0, the time sent finite", bandwidth, latency);
    const pz_link_emu e = {.bandwidth = bandwidth, .latency = latency, .model = m->value};
    pz_wire w = {.free_at = *wire};
    *arrival = m->value == PZ_WIRE_SHARED ? pz_wire_shared(&w, &e, sent, (size_t)bytes, 0) : pz_wire_duplex(&w, &e, sent, (size_t)bytes, 0);
    *wire = w.free_at;
    return PZ_OK;
}

/* Under the duplex model the sender stamps a message with its arrival;
 * under the shared one with the time it was sent, and the receiver bills
 * its inbound wire. */
static pz_status send_any(pz_link *l, int tag, const void *msg, uint8_t **buf, size_t *cap, size_t len) {
    double stamp = 0.0;
    const double busy = pz_wire_busy(&l->emu, len);
    if (l->clock) {
        pz_clock_charge(l->clock);
        if (l->emu.model == PZ_WIRE_SHARED) stamp = l->clock->t;
        else stamp = pz_wire_duplex(&l->out, &l->emu, l->clock->t, len, 0);
    }
    size_t wire = 0;
    const pz_status st = buf && l->ops->send_take ? l->ops->send_take(l, tag, stamp, buf, cap, len, &wire)
                                                  : l->ops->send(l, tag, stamp, buf ? *buf : msg, len, &wire);
    if (!st) {
        pthread_mutex_lock(&l->mu);
        l->stats.messages_sent++;
        l->stats.bytes_sent += len;
        l->stats.wire_bytes_sent += wire;
        l->stats.busy_seconds += l->clock ? busy : 0.0;
        pthread_mutex_unlock(&l->mu);
    }
    if (l->clock) {
        /* sending costs the sender nothing in virtual time (the emulated
         * link transmits while the sender goes on): restart its meter */
        const double now = meter(l->clock);
        if (l->clock->realtime) l->clock->t = now;
        l->clock->mark = now;
    }
    return st;
}

pz_status pz_link_send(pz_link *l, int tag, const void *msg, size_t len) { return send_any(l, tag, msg, NULL, NULL, len); }

pz_status pz_link_send_buf(pz_link *l, int tag, uint8_t **buf, size_t *cap, size_t len) {
    return send_any(l, tag, NULL, buf, cap, len);
}

static void sleep_until(double t) {
    for (;;) {
        const double d = t - pz_now();
        if (d <= 0) return;
        struct timespec ts = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

void pz_link_set_header_tag(pz_link *l, int tag) {
    if (tag > 0 && tag < 256) l->header_tags[tag / 64] |= (uint64_t)1 << (tag % 64);
}

pz_status pz_link_recv(pz_link *l, int *tag, uint8_t **buf, size_t *cap, size_t *len, double timeout_s) {
    if (l->clock) pz_clock_charge(l->clock);
    double stamp = 0.0;
    size_t wire = 0;
    const pz_status st = l->ops->recv(l, tag, &stamp, buf, cap, len, &wire, timeout_s);
    if (st) return st;
    pthread_mutex_lock(&l->mu);
    l->stats.messages_received++;
    l->stats.bytes_received += *len;
    l->stats.wire_bytes_received += wire;
    pthread_mutex_unlock(&l->mu);
    if (l->clock) {
        /* the shared wire: the stamp is when it was sent; bill this stage's wire */
        if (l->emu.model == PZ_WIRE_SHARED) {
            const int header = *tag > 0 && *tag < 256 && (l->header_tags[*tag / 64] >> (*tag % 64) & 1);
            stamp = pz_wire_shared(&l->clock->inbound, &l->emu, stamp, *len, header);
        }
        if (l->clock->realtime) sleep_until(stamp); /* really hold the frame back */
        const double now = meter(l->clock);
        if (l->clock->realtime) l->clock->t = now;
        else if (stamp > l->clock->t) l->clock->t = stamp; /* waiting for the frame is not compute */
        l->clock->mark = now;
    }
    return PZ_OK;
}

void pz_link_close(pz_link *l) {
    if (l) l->ops->close(l);
}

void pz_link_free(pz_link *l) {
    if (!l) return;
    l->ops->free(l);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

pz_link_stats pz_link_get_stats(const pz_link *l) {
    pz_link *m = (pz_link *)l;
    pthread_mutex_lock(&m->mu);
    const pz_link_stats s = l->stats;
    pthread_mutex_unlock(&m->mu);
    return s;
}

const char *pz_link_name(const pz_link *l) { return l->name; }

int pz_link_peer_closed(const pz_link *l) { return l->peer_closed; }
int pz_link_is_remote_party(const pz_link *l) { return l && l->remote_party; }

/* ---- parsing --------------------------------------------------------------- */
static pz_status parse_number(const char *s, const char *what, double *v, const char **unit) {
    char *end;
    *v = strtod(s, &end);
    if (end == s || !isfinite(*v) || *v < 0) return pz_fail(PZ_ERR_ARG, "%s '%s': expected a non-negative number with a unit", what, s);
    while (*end == ' ') end++;
    *unit = end;
    return PZ_OK;
}

pz_status pz_parse_bandwidth(const char *s, double *bps) {
    double v = 0;
    const char *u = "";
    PZ_TRY(parse_number(s, "bandwidth", &v, &u));
    static const struct { const char *unit; double mul; } units[] = {
        {"bit", 1}, {"bps", 1}, {"bit/s", 1}, {"kbit", 1e3}, {"kbps", 1e3}, {"kbit/s", 1e3}, {"mbit", 1e6},
        {"mbps", 1e6}, {"mbit/s", 1e6}, {"gbit", 1e9}, {"gbps", 1e9}, {"gbit/s", 1e9}, {"B/s", 8},
        {"kB/s", 8e3}, {"KB/s", 8e3}, {"MB/s", 8e6}, {"GB/s", 8e9}};
    if (!*u) {
        if (v == 0) return *bps = 0, PZ_OK;
        return pz_fail(PZ_ERR_ARG, "bandwidth '%s' needs a unit (e.g. 100mbit, 1gbit, 12.5MB/s)", s);
    }
    for (size_t i = 0; i < sizeof units / sizeof *units; i++) {
        /* bits are case-insensitive (tc's "100Mbit"), bytes are not */
        const int bytes = strchr(units[i].unit, 'B') != NULL;
        if (bytes ? !strcmp(u, units[i].unit) : !strcasecmp(u, units[i].unit)) {
            *bps = v * units[i].mul;
            return PZ_OK;
        }
    }
    return pz_fail(PZ_ERR_ARG, "bandwidth '%s': unknown unit '%s' (expected bit, kbit, mbit, gbit, B/s, kB/s, MB/s, GB/s)", s, u);
}

pz_status pz_parse_duration(const char *s, double *sec) {
    double v = 0;
    const char *u = "";
    PZ_TRY(parse_number(s, "latency", &v, &u));
    static const struct { const char *unit; double mul; } units[] = {{"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}};
    if (!*u) {
        if (v == 0) return *sec = 0, PZ_OK;
        return pz_fail(PZ_ERR_ARG, "duration '%s' needs a unit (e.g. 10ms, 250us, 1s)", s);
    }
    for (size_t i = 0; i < sizeof units / sizeof *units; i++)
        if (!strcmp(u, units[i].unit)) return *sec = v * units[i].mul, PZ_OK;
    return pz_fail(PZ_ERR_ARG, "duration '%s': unknown unit '%s' (expected s, ms, us or ns)", s, u);
}
