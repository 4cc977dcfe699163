/*
 * The emitter module (emitter/, built into libvitals with wire/) owns the
 * trainer's side: the public API of include/vitals.h (emitter.c), the
 * hot path from a vt_emit() call to the ring, and this I/O thread, which
 * owns every ZeroMQ call and the batches until they are acknowledged. It
 * must not touch the wire layout (it writes messages only through the
 * wire_* calls, never at an offset of its own), must not block the hot
 * path (a full ring drops and counts), must not print, exit or install
 * signal handlers on the host's behalf, and keeps no mutable globals
 * beyond the process-wide default emitter. Nothing but the vt_* functions
 * of include/vitals.h is exported from libvitals.so.
 *
 * io: the emitter's I/O thread. It drains the ring into batches, sends
 * them to the collector over a ZeroMQ DEALER socket, keeps every batch
 * until it is acknowledged, and resends what goes unacknowledged.
 *
 * Every ZeroMQ call of an emitter happens on this thread, including the
 * creation and termination of its own context.
 *
 * Batches: up to VTE_IO_BATCH_MAX samples, sealed when full, when the
 * oldest staged sample has waited flush_interval, or at once when a flush
 * asks for the samples it holds. Sequence numbers start at 1 and increase
 * by one; at most VTE_IO_WINDOW batches are unacknowledged (the
 * collector's dedup window), and a batch's floor is the oldest unsettled
 * sequence. Staged and unacknowledged batches together never exceed the
 * byte budget; when they would, the thread stops draining the ring, so the
 * ring fills and producers drop (and count) samples.
 *
 * Sending is zero-copy: a batch buffer is reference counted, one reference
 * held by the window and one per message still queued inside ZeroMQ, so
 * the memory cap covers what ZeroMQ holds too.
 *
 * Resending: over ZeroMQ's stream transports a batch is lost only with
 * its connection (and so is an ACK: the collector answers on the
 * connection the batch came on). A socket monitor reports each
 * disconnection; then every unacknowledged batch is sent again, oldest
 * first, once a connection is back. As a fallback for a lost ACK or a
 * missed event, the oldest unacknowledged batch alone is resent when no
 * ACK at all has arrived for the resend timeout (four smoothed ack round
 * trips within [1 s, 10 s], doubled for each resend of that batch up to
 * 32x). Resending everything on a timer would flood a slow collector
 * with duplicates and slow it further.
 */
#ifndef VTE_IO_H
#define VTE_IO_H

#include <stddef.h>

#include "emitter/curve.h"
#include "emitter/ident.h"
#include "emitter/names.h"
#include "emitter/ring.h"
#include "vitals.h"

#pragma GCC visibility push(hidden)

#define VTE_IO_BATCH_MAX 4096u
#define VTE_IO_WINDOW 1024u

typedef struct vte_io vte_io;

typedef struct vte_io_params {
	const char      *endpoint; /* copied */
	vte_ring        *ring;     /* borrowed until vte_io_stop() */
	vte_names       *names;    /* borrowed until vte_io_stop() */
	const vte_ident *ident;    /* borrowed until vte_io_stop() */
	size_t           budget;   /* bytes for staged + unacked batches */
	unsigned         flush_interval_ms;
	int              tsc;       /* ring times are TSC ticks */
	const vte_curve *curve;     /* copied; NULL or off: plain text */
	uint64_t         first_seq; /* number of the first batch, >= 1 */
} vte_io_params;

/*
 * Start the I/O thread; returns once its socket is connecting and its
 * clock calibration has its first pair (so every timestamp taken after
 * this returns converts well). Returns 0, VT_ENOMEM, VT_ETRANSPORT (the
 * endpoint was refused by ZeroMQ) or VT_ETHREAD, with detail in err.
 */
int vte_io_start(
    const vte_io_params *p, vte_io **out, char *err, size_t errlen);

/*
 * Wait until every sample pushed before the call, and the dropped count
 * as of the call, are acknowledged, or timeout_ms passes. Returns 0 or
 * VT_ETIMEDOUT. Thread-safe.
 */
int vte_io_flush(vte_io *io, unsigned timeout_ms);

/*
 * Say goodbye: send a last, empty batch flagged FINAL (the process ends
 * normally, so the collector must not take its silence for a stall) and
 * wait until it is acknowledged or timeout_ms passes. Call after
 * vte_io_flush() and before vte_io_stop(). Returns 0 or VT_ETIMEDOUT.
 */
int vte_io_finish(vte_io *io, unsigned timeout_ms);

/* Stop the thread, close the socket (linger 0), terminate the context and
 * free io. Samples not acknowledged go to the spool (emitter/spool.h). */
void vte_io_stop(vte_io *io);

/* Fill the sent, acked, resent and rejected fields of st. */
void vte_io_stats(const vte_io *io, vt_stats *st);

#pragma GCC visibility pop

#endif /* VTE_IO_H */
