/*
 * alerting: the collector's side of detection. Loads the rules (a file,
 * or the built-in set) and runs the detect engine on a thread of its own,
 * so that detection uses the second core and never holds up ingest. For
 * each alert transition it writes one JSON line to stdout, starts the
 * rule's exec hook if it has one, and queues the alert for the store;
 * the server thread stores queued alerts in a transaction of its own.
 * SIGHUP reloads the rules file; a file that does not parse keeps the old
 * rules and says why.
 *
 * Batches are handed over after the transaction holding them committed,
 * so a transaction aborted and applied again never feeds a sample twice.
 * Only what detection reads is queued: a batch without samples (and not
 * FINAL) is not, and names no sample uses are left out of the copy. The
 * hand-over queue is bounded in bytes (ALERTING_QUEUE_BYTES, or
 * alerting_set_queue_bytes); when detection falls that far behind,
 * alerting_feed waits, which stops the server reading, slowing ingest
 * rather than skipping detection.
 *
 * Stalls: the detection clock is a watermark, the arrival time of the
 * oldest batch not yet fed (or now, when everything is fed), so a backlog
 * in the queue is never mistaken for silence.
 *
 * It owns the rules in force, the detection thread and the exec hooks. It
 * must not touch the socket nor the store from its thread (queued alerts
 * are stored by the server thread, through ingest), and it judges no
 * sample itself: the detect engine does, as in `vitals replay`.
 *
 * Thread rule: every function is called from the server thread.
 */
#ifndef COLLECTOR_ALERTING_H
#define COLLECTOR_ALERTING_H

#include <stddef.h>
#include <stdint.h>
#include <zmq.h>

#include "collector/ingest.h"
#include "detect/detect.h"

#define ALERTING_QUEUE_BYTES ((size_t) 64 << 20)

typedef struct alerting alerting;

/* rules_path NULL: the built-in rules. Times are rounded to quantum_ns
 * as the store keeps them. Returns 0, or 1 after logging why (a rules
 * file that does not parse: file, line and column). */
int  alerting_open(const char *rules_path, int64_t quantum_ns,
     alerting **out);
/* Processes what is queued, stops the thread, frees. NULL is a no-op. */
void alerting_close(alerting *al);

/* Queue a copy of a stored batch (a whole wire message, msg, and b, its
 * view from wire_batch_decode) received at
 * recv_ns (wall clock) from peer (its address, NULL: unknown). The
 * detection thread takes the batches of each peer in order, and the peers
 * in turn. Returns 0, or -1 when out of memory (the batch is stored but
 * not checked; logged). */
int alerting_feed(alerting *al, const wire_batch *b, const void *msg,
    size_t len, int64_t recv_ns, const char *peer);
/* alerting_feed() of the message zm (b its view), without a copy when
 * detection reads all of it: the message then moves into the queue (zm
 * is left empty, to be closed as usual); else it is left as it was. */
int alerting_feed_msg(alerting *al, const wire_batch *b, zmq_msg_t *zm,
    int64_t recv_ns, const char *peer);

/* The bound of the hand-over queue in bytes (a single batch larger than
 * it is still taken when the queue is empty). */
void alerting_set_queue_bytes(alerting *al, size_t bytes);

/* Series budgets of the engine (detect_engine_budget): series per run
 * (0: no cap) and the idle time past which a series may be forgotten
 * (< 0: never). Call before the first batch is fed. */
void alerting_set_budget(alerting *al, uint64_t per_run, int64_t idle_ns);

/* Wait until every queued batch has been fed. */
void alerting_drain(alerting *al);

/* Store the alerts raised since the last call (one transaction). Returns
 * 0 or a store_err; on failure they stay queued for the next call. */
int alerting_store(alerting *al, ingest *in);

/* Ask the detection thread to read the rules file again. */
void alerting_reload(alerting *al);

/* Also pass every alert transition to fn(ctx, alert), on the detection
 * thread (fn must not wait). Call before feeding the first batch. */
void alerting_set_sink(alerting *al, detect_emit_fn fn, void *ctx);

/* Bytes of stored batches waiting for detection. Any thread. */
uint64_t alerting_queue_bytes(alerting *al);

#endif /* COLLECTOR_ALERTING_H */
