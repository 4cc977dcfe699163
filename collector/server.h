/*
 * collector: `vitalsd`, the one process that writes the store. The
 * module owns the socket and who may use it (server.c, auth.c), the
 * write path's own policy (ingest.c: deduplication, caches) and the
 * detection side (alerting.c, hooks.c). It must not lay out bytes of
 * its own: messages are decoded by wire/, records, keys and transactions
 * are store/'s (no LMDB call here), and whether a series is anomalous is
 * for detect/ to say. No batch is acknowledged before the transaction
 * holding it committed.
 *
 * server: the collector's ZeroMQ side. Receives batches on a ROUTER
 * socket, validates them, hands them to ingest in groups (one LMDB
 * transaction per group), and acknowledges each batch only after its
 * transaction committed. Malformed messages are counted, logged with their
 * sender and refused; they never reach the store.
 */
#ifndef COLLECTOR_SERVER_H
#define COLLECTOR_SERVER_H

#include <signal.h>
#include <stdint.h>

#include "collector/alerting.h"
#include "collector/conns.h"
#include "collector/exposition.h"
#include "collector/ingest.h"
#include "collector/remote_write.h"
#include "store/store.h"

#define SERVER_PENDING_BYTES ((size_t) 64 << 20)

typedef struct server_opts {
	const char *listen;
	int         commit_ms;      /* longest wait before a commit */
	uint32_t    commit_samples; /* commit once this many are pending */
	int         quiet;
	/* CURVE: the collector's secret key file and the allowed client
	 * public keys (both, or neither: plain text); see auth.h. */
	const char *curve_secret;
	const char *allow;
	/* Connections: caps, idle timeout (see conns.h). */
	conns_opts conns;
	/* Bytes of received batches waiting for their commit: reading stops
	 * at this many (the group is committed), so senders wait in ZeroMQ
	 * and their own buffers. */
	size_t pending_bytes;
	/* The largest message taken (at most WIRE_MAX_MESSAGE): a peer
	 * sending more is disconnected before it is read into memory. */
	size_t max_message;
	expo       *expo; /* --http: fed after each commit; may be NULL */
	rwrite     *rw;   /* --remote-write: told how long commits take */
} server_opts;

void server_opts_init(server_opts *o);

/*
 * Serve until *stop becomes non-zero, then commit and acknowledge what was
 * received and return 0. Stored samples go to al (which may be NULL);
 * when *reload becomes non-zero the rules are read again. Returns 1 after
 * logging the reason if the endpoint cannot be bound or the store fails in
 * a way retrying cannot fix.
 */
int server_run(const server_opts *o, store *st, ingest *in, alerting *al,
    volatile sig_atomic_t *stop, volatile sig_atomic_t *reload);

#endif /* COLLECTOR_SERVER_H */
