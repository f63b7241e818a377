/* SPDX-License-Identifier: MIT */
/* link.h — moving frames between two stages. A link is one end of a
 * bidirectional channel: what one end sends the other receives, in order.
 * Three transports carry the same messages: in-process (threads in one
 * process, the default; every message is copied, so no stage ever reads
 * another stage's memory), Open MPI (a rank per stage) and ZeroMQ over TCP
 * (split learning between parties). Every byte is counted.
 *
 * Virtual time. A link end may be given the clock of the stage that owns
 * it. The stage's clock advances by the wall time it spends between link
 * operations (its compute, encode and decode); every message carries the
 * time it arrives, and a receive moves the receiver's clock forward to it.
 * With an emulated bandwidth and latency a frame sent at t arrives at
 * max(t, link free) + bytes / bandwidth + latency, so a run reports how long
 * training would take over that link without waiting for it; with
 * `realtime` the receiver really waits until then.
 *
 * Knows nothing of codecs' internals or models. */
#ifndef PZ_LINK_H
#define PZ_LINK_H

#include "base/base.h"
#include "base/names.h"

typedef struct pz_link pz_link;

typedef struct {
    uint64_t messages_sent, bytes_sent, messages_received, bytes_received; /* payload */
    uint64_t wire_bytes_sent, wire_bytes_received; /* what the transport carried: payload + envelope */
    double busy_seconds; /* emulated: time the sending direction was busy transmitting */
} pz_link_stats;

/* How the emulated links of a pipeline share their wires (pz_wire_models:
 * their names).
 * duplex: every link is full duplex, each direction a wire of its own; a
 *   message sent at t starts when both it and its direction are free,
 *   holds that direction for its transmission only (bytes / bandwidth) and
 *   arrives a latency later: max(t, free) + bytes / bandwidth + latency.
 * shared: ProtocolNanoGPT's meter. Every stage has one inbound wire, shared
 *   by the activations from the stage before and the gradients from the
 *   stage after; a message holds it for its transmission and its latency
 *   (stop and wait): arrival = max(the previous arrival on that wire, t) +
 *   bytes / bandwidth + latency, billed in the order the receiver takes its
 *   messages. */
typedef enum { PZ_WIRE_DUPLEX, PZ_WIRE_SHARED } pz_wire_model;
extern const pz_name pz_wire_models[];

typedef struct {
    double bandwidth; /* bits per second; 0 = unlimited */
    double latency;   /* seconds, one way */
    int model;        /* pz_wire_model */
} pz_link_emu;

/* The meter: when a message arrives. One wire's state, and the two rules
 * (the links use them, and so does the dry timing mode, pipe/timing.c).
 * A header sent with the message after it (a micro-batch's META before its
 * ACT frame) is one transmission with it: its bytes hold the wire, its
 * latency is the frame's. */
typedef struct {
    double free_at; /* duplex: when the sending direction is next free; shared: the last arrival on the wire */
} pz_wire;
/* duplex, at the sender: a message of `bytes` sent at `sent`; returns its
 * arrival (a header's: when its bytes are through, no latency) */
double pz_wire_duplex(pz_wire *w, const pz_link_emu *e, double sent, size_t bytes, int header);
/* shared, at the receiver, in the order it takes the messages of both its
 * links: a message sent at `sent`; returns its arrival */
double pz_wire_shared(pz_wire *w, const pz_link_emu *e, double sent, size_t bytes, int header);
/* the transmission time of `bytes` (0 when the bandwidth is unlimited) */
double pz_wire_busy(const pz_link_emu *e, size_t bytes);

/* What a stage's clock charges for the work between its link operations:
 * its thread's CPU time (the default: not the time it waited for a core
 * shared with other stages), the wall time, or the FLOPs it was told it
 * did at a rate (an accelerator's sustained throughput): then the clock
 * does not depend on this machine at all. */
typedef enum { PZ_CLOCK_CPU, PZ_CLOCK_WALL, PZ_CLOCK_RATE } pz_clock_kind;
typedef struct {
    pz_clock_kind kind;
    double rate; /* PZ_CLOCK_RATE: FLOP/s */
} pz_clock_mode;
/* "cpu", "wall", or a rate: "100tflops", "312TFLOP/s", "2.5e14" (FLOP/s), "900gflops" */
pz_status pz_parse_compute_rate(const char *s, pz_clock_mode *mode);

/* A stage's clock (seconds). One per thread of stages; shared by its links. */
typedef struct {
    double t;    /* virtual time */
    double mark; /* the meter (wall or thread CPU time) at the last link operation */
    int realtime;
    pz_clock_mode mode;
    pz_wire inbound; /* the shared-wire model: the stage's one inbound wire, shared by its links */
} pz_clock;

/* Start the clock in the thread whose time it charges. realtime: the
 * receiver really waits (charges wall time whatever the mode). */
void pz_clock_start(pz_clock *c, int realtime, pz_clock_mode mode);
/* Charge the work since the last mark (call before reading c->t). */
void pz_clock_charge(pz_clock *c);
/* PZ_CLOCK_RATE: charge flops floating-point operations at the clock's
 * rate (the other modes measure instead, and ignore this). */
void pz_clock_flops(pz_clock *c, double flops);

/* "100mbit", "1gbit", "10Mbit/s", "500kbit", "12.5MB/s", "0" (unlimited). */
PZ_API pz_status pz_parse_bandwidth(const char *s, double *bits_per_second); /* public: pipezip.h */
/* "10ms", "250us", "1s", "0". */
PZ_API pz_status pz_parse_duration(const char *s, double *seconds); /* public: pipezip.h */

/* Two connected in-process ends; each direction holds up to `capacity`
 * messages before send blocks. Free each end with pz_link_free (the channel
 * goes when both are freed). */
pz_status pz_link_inproc_pair(pz_link **a, pz_link **b, int capacity, const char *name);

/* Open MPI: this rank's end of the link to `peer` on MPI_COMM_WORLD.
 * pz_mpi_init/finalize wrap MPI_Init_thread (one thread at a time calls MPI)
 * and MPI_Finalize. Without MPI in the build these fail with a message. */
int pz_mpi_available(void);
pz_status pz_mpi_init(int *argc, char ***argv, int *rank, int *size);
void pz_mpi_finalize(void);
void pz_mpi_abort(int code);
pz_status pz_link_mpi(pz_link **l, int peer, const char *name);

/* ZeroMQ over TCP (split learning). The server binds `endpoint`
 * ("tcp://0.0.0.0:5555") and serves one client's session at a time; the
 * client connects ("tcp://host:5555"). With CURVE key files (pipezip
 * keygen) the channel is encrypted and the server accepts only the client
 * key it was given; NULL keys: plain TCP. Nothing a peer sends ends the
 * server's end: a peer outside the session that breaks the protocol is
 * logged and ignored; the session's client breaking it, closing, or silent
 * for timeout_s ends the session: the receive fails, pz_link_zmq_session
 * says how it ended, pz_link_zmq_next_session waits for the next. */
typedef struct {
    const char *endpoint;
    const char *server_secret_file, *client_public_file; /* both or neither */
    double timeout_s;      /* a session's client silent this long is dropped */
    size_t max_message;    /* no message above this many bytes is read in (0: no limit) */
    int wait_for;          /* the first session begins once this many clients ask (0, 1: the first to ask) */
} pz_zmq_server_config;
enum { PZ_ZMQ_SESSION_NONE, PZ_ZMQ_SESSION_OPEN, PZ_ZMQ_SESSION_CLOSED, PZ_ZMQ_SESSION_DROPPED };
int pz_zmq_available(void);
pz_status pz_link_zmq_listen(pz_link **l, const pz_zmq_server_config *cfg, const char *name);
/* How the current (or last) session stands: PZ_ZMQ_SESSION_*; its client's
 * id, whether its CLOSE said it was its last turn (why a session was
 * dropped is the failed receive's error). */
int pz_link_zmq_session(pz_link *l, uint64_t *client, int *last_turn);
void pz_link_zmq_next_session(pz_link *l);
/* Clients whose turn ended (not their last) and who did not ask for the
 * next within the timeout: up to max ids into ids, taken. The receive
 * between sessions fails when one is found, so the server can count it. */
int pz_link_zmq_dropouts(pz_link *l, uint64_t *ids, int max);
/* Waits for the server to admit this client: while the server answers
 * (another client has its turn) as long as it takes, silence at most
 * timeout_s. */
pz_status pz_link_zmq_connect(pz_link **l, const char *endpoint, const char *client_secret_file,
                              const char *server_public_file, double timeout_s, const char *name);
/* A client's CLOSE says whether this was its last turn (the default) or it
 * comes back for another. */
void pz_link_zmq_set_last_turn(pz_link *l, int last);
/* Write a CURVE key pair: PATH (secret, created mode 0600) and PATH.pub;
 * an existing file is an error unless force. */
pz_status pz_zmq_keygen(const char *path, int force);
/* A link whose far end answers as one party (a ZeroMQ peer): waiting on it
 * is bounded by one timeout, however many stages lie behind it. */
int pz_link_is_remote_party(const pz_link *l);

/* Use `clock` for this end's messages (NULL: none), and emulate `emu` on
 * what this end sends (NULL: an ideal link). */
void pz_link_set_clock(pz_link *l, pz_clock *clock);
void pz_link_set_emulation(pz_link *l, const pz_link_emu *emu);

/* Send a copy of msg[0..len) with a small integer tag (1..255). Blocks while
 * the transport is full; PZ_ERR_STATE if the peer has closed. */
pz_status pz_link_send(pz_link *l, int tag, const void *msg, size_t len);

/* The same for a message in a malloc'd buffer the sender can give up: the
 * in-process link hands *buf itself to the receiver (no copy) and leaves a
 * spare buffer (or NULL) in *buf / *cap; other links copy as pz_link_send. */
pz_status pz_link_send_buf(pz_link *l, int tag, uint8_t **buf, size_t *cap, size_t len);

/* Receive the next message into *buf (*cap its capacity): the link may
 * replace *buf with its own buffer (the old one is recycled or freed), so
 * pass a buffer from malloc, or NULL; free it when done. Waits at most
 * timeout_s seconds (< 0: forever).
 * PZ_ERR_STATE when the peer closed and nothing is left, or on timeout (the
 * message says which). */
pz_status pz_link_recv(pz_link *l, int *tag, uint8_t **buf, size_t *cap, size_t *len, double timeout_s);
/* Messages of this tag (1..255) are headers: the peer sends each right
 * before the message it belongs to on this link (a micro-batch's META
 * before its frame), and the shared-wire emulator bills the two as one
 * transmission with one latency. */
void pz_link_set_header_tag(pz_link *l, int tag);

/* No more sends from this end; the peer's receives drain then fail. */
void pz_link_close(pz_link *l);
void pz_link_free(pz_link *l);
pz_link_stats pz_link_get_stats(const pz_link *l);
/* 1 once the peer closed its end in order (rather than failing). */
int pz_link_peer_closed(const pz_link *l);
const char *pz_link_name(const pz_link *l);

#endif
