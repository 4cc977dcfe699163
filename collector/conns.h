/*
 * conns: connection limits of the collector's ROUTER socket. A thread of
 * its own watches the socket's monitor (accepted and disconnected
 * connections, with their descriptors) and, as soon as a connection is
 * accepted, shuts down the ones past a cap on connections in total or per
 * peer (an IP address; for ipc://, a process), so that clients opening
 * connections in a loop cannot take the descriptors the store, the hooks
 * and healthy emitters need. It also closes connections that sent no
 * message for an idle timeout (ZeroMQ answers heartbeats by itself, so a
 * silent client is not a dead one). Each limit hit is counted and logged
 * (at most 10 lines per 10 s, the rest counted).
 *
 * Closing is shutdown(2) on the descriptor: ZeroMQ then sees the
 * connection end and closes the descriptor itself; the number is never
 * freed under its feet. A peer that reconnects is treated as new.
 *
 * Thread rule: conns_open, conns_seen, conns_reading, conns_get_stats and
 * conns_close are called from the thread that owns the ROUTER socket;
 * conns_seen and conns_reading are also cheap enough for every message.
 */
#ifndef COLLECTOR_CONNS_H
#define COLLECTOR_CONNS_H

#include <stddef.h>
#include <stdint.h>

/* Descriptors kept out of the connection cap: the store (3), ZeroMQ's
 * own (about 10), hooks (2 each while starting, 16 at once), logs. */
#define CONNS_FD_RESERVE 128

typedef struct conns conns;

typedef struct conns_opts {
	long max_total;    /* 0: the descriptor limit less CONNS_FD_RESERVE */
	long max_per_peer; /* 0: half of max_total */
	long idle_ms;      /* close after this long without a message; 0:
	                    * never */
	/* Other monitor events (failed handshakes), passed on when set:
	 * called on the conns thread. */
	void (*on_event)(
	    void *arg, unsigned ev, uint32_t value, const char *endpoint);
	void *arg;
} conns_opts;

typedef struct conns_stats {
	uint64_t open;          /* connections counted now */
	uint64_t refused_total; /* shut down past max_total */
	uint64_t refused_peer;  /* shut down past max_per_peer */
	uint64_t idle_closed;   /* closed after idle_ms without a message */
	uint64_t accept_failed; /* accept(2) failures seen by ZeroMQ */
} conns_stats;

void conns_opts_init(conns_opts *o);

/*
 * Watch sock (a ROUTER of zctx, before it binds) and start the thread.
 * Resolves the defaults of o from RLIMIT_NOFILE and logs the limits in
 * use. Returns 0, or -1 with detail in err (nothing left open).
 */
int conns_open(void *zctx, void *sock, const conns_opts *o, conns **out,
    char *err, size_t errlen);

/* A message came from descriptor fd (zmq_msg_get(m, ZMQ_SRCFD)) at
 * mono_ns (CLOCK_MONOTONIC). */
void conns_seen(conns *c, int fd, int64_t mono_ns);

/* reading 0: the server stopped reading (a full disk, a full budget):
 * nobody is idle meanwhile; 1: reading again from mono_ns. */
void conns_reading(conns *c, int reading, int64_t mono_ns);

void conns_get_stats(const conns *c, conns_stats *out);

/* Stop the thread, close its socket and free (before the context is
 * terminated). NULL is a no-op. */
void conns_close(conns *c);

#endif /* COLLECTOR_CONNS_H */
