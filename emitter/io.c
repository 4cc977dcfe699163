#include "emitter/io.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "emitter/clock.h"
#include "emitter/phase.h"
#include "emitter/spool.h"
#include "wire/wire.h"

/* Poll timeouts: short while samples flow, longer when idle; after two
 * passes that moved no sample the thread dozes for POLL_DOZE_MS, so an
 * emitter between steps or at rest wakes 20 times a second instead of
 * 250. Pushes make no system call: samples logged during a doze wait for
 * its end (at most POLL_DOZE_MS more on top of the flush interval), but
 * a burst of half a ring wakes the thread (the ring's doze flag). A doze
 * also ends on an ACK, a connection event, a flush or stop, and when
 * staged samples are due to be sealed; the resend timer (at least 1 s)
 * tolerates it. */
#define POLL_BUSY_MS 1
#define POLL_IDLE_MS 4
#define POLL_DOZE_MS 50

/* The fallback resend timeout: four smoothed ack round trips, within
 * these bounds; each further resend of a batch doubles it, up to 32x. */
#define RTO_INIT_NS 1000000000LL
#define RTO_MIN_NS 1000000000LL
#define RTO_MAX_NS 10000000000LL
#define RTO_MAX_SHIFT 5

/* Where the socket monitor publishes connection events (each emitter
 * has its own context, so the name need not be unique). */
#define MONITOR_EP "inproc://vitals-monitor"

/* A batch's bytes, shared with ZeroMQ: one reference for the window, one
 * per message queued in ZeroMQ (released on ZeroMQ's own thread). */
typedef struct bbuf {
	atomic_uint refs;
	size_t      len;
	size_t      cap; /* bytes of data (a spare is reused for len <= cap) */
	struct bbuf *next; /* in io->spare */
	uint8_t      data[];
} bbuf;

/* Spare batch buffers are sized in whole pages, so that one serves the
 * next batch of about the same size. Only buffers past malloc's mapping
 * threshold (128 KiB by default) are kept: smaller ones malloc recycles
 * itself, and keeping those too made a narrow run's emitters slower. */
#define BBUF_ROUND ((size_t) 4096)
#define BBUF_SPARE_MIN ((size_t) 128 << 10)

/* One entry of the window of unacknowledged batches. */
typedef struct batch {
	bbuf    *buf; /* NULL once settled */
	uint64_t seq;
	uint64_t pos_start, pos_end; /* ring positions it holds */
	uint64_t dropped;            /* the count in its header */
	uint32_t n;
	unsigned sends;
	int64_t  first_send, last_send; /* monotonic ns */
	int      need;                  /* to be sent (again) */
	int      done;                  /* acknowledged (or rejected) */
	uint64_t final; /* flagged WIRE_FINAL: its number, else 0 */
} batch;

struct vte_io {
	/* Set before the thread starts, read-only after. */
	char            *endpoint;
	vte_ring        *ring;
	vte_names       *names;
	const vte_ident *ident;
	size_t           budget;
	int64_t          flush_ns;
	int              tsc;
	pthread_t        thread;
	int              efd; /* the ring's wake_fd: pushes into a dozing
	                       * thread, flush requests, stop */
	vte_curve curve;      /* wiped once set on the socket */

	/* Startup handshake and flush waiters. */
	pthread_mutex_t mu;
	pthread_cond_t  cond;    /* CLOCK_MONOTONIC */
	int             started; /* under mu */
	int             start_rc;
	char            start_err[160];
	int             waiters; /* under mu */

	atomic_int stop;
	/* FINAL batches asked for by vte_io_finish() and acknowledged,
	 * counted. */
	_Atomic uint64_t final_req, final_done;
	_Alignas(64) _Atomic uint64_t flush_pos; /* requested targets */
	_Atomic uint64_t flush_drop;
	_Alignas(64) _Atomic uint64_t settled_pos; /* published progress */
	_Atomic uint64_t settled_drop;
	_Alignas(64) _Atomic uint64_t st_sent;
	_Atomic uint64_t st_acked;
	_Atomic uint64_t st_resent;
	_Atomic uint64_t st_rejected;

	/* I/O thread only. */
	void     *zctx, *zsock, *zmon;
	vte_clock clock;
	batch     win[VTE_IO_WINDOW];
	uint64_t  base;     /* oldest unsettled seq (== next_seq if none) */
	uint64_t  next_seq; /* seq of the next batch sealed */
	size_t    unacked_bytes;
	int64_t   srtt, rto;
	int64_t   last_ack; /* when the last ACK arrived */
	int       want_pollout;
	int       cut;          /* a connection ended; no new one yet */
	uint64_t  final_sealed; /* FINAL batches sealed */
	vte_phase ph;           /* phase times (phase.h) */
	uint32_t  nder;         /* derived samples staged (not counted) */

	/* The samples staged for the batch being built, already in the
	 * wire's layout (WIRE_SAMPLE_SIZE bytes each, VTE_IO_BATCH_MAX of
	 * them): sealing copies them in one move. */
	uint8_t   *stg;
	vte_name **order; /* the batch's name table, in index order */
	uint32_t   nstg;
	uint32_t   nnames;
	size_t     names_bytes;
	uint32_t   gen;
	uint64_t   stg_pos;      /* ring position of the first staged sample */
	int64_t    stg_since;    /* when the first staged sample was seen */
	uint64_t   last_drop;    /* dropped count in the newest batch */
	uint64_t   last_refused; /* refused count in the newest batch */
	int        plain;        /* the collector rejected a batch carrying the
	                          * refused count (older than WIRE_REFUSED): send
	                          * the plain layout from then on */
	int64_t  last_seal;
	uint64_t pub_pos, pub_drop; /* last values published */
	/* Buffers of settled batches, kept for the next ones: a wide batch
	 * is hundreds of KB, which malloc maps and unmaps afresh each time
	 * (a page fault every 4 KB, most of the thread's time). Their bytes
	 * count against the budget with the unacknowledged ones'. */
	bbuf  *spare;
	size_t spare_bytes;
};

static void
bbuf_unref(bbuf *b)
{
	if (atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) == 1)
		free(b);
}

/* A buffer for a batch of size bytes: a spare one if it is large
 * enough, else a new one (NULL when out of memory). */
static bbuf *
bbuf_get(vte_io *io, size_t size)
{
	bbuf  *b = io->spare;
	size_t cap;

	if (b != NULL) {
		io->spare = b->next;
		io->spare_bytes -= b->cap;
		if (b->cap >= size)
			return b;
		free(b);
	}
	cap = (size + BBUF_ROUND - 1) / BBUF_ROUND * BBUF_ROUND;
	if ((b = malloc(sizeof(*b) + cap)) != NULL)
		b->cap = cap;
	return b;
}

/* The window's reference to b is dropped: kept as a spare if ZeroMQ
 * holds no copy and the budget has room for it, else released. */
static void
bbuf_drop(vte_io *io, bbuf *b)
{
	if (b->cap >= BBUF_SPARE_MIN
	    && atomic_load_explicit(&b->refs, memory_order_acquire) == 1
	    && io->unacked_bytes + io->spare_bytes + b->cap <= io->budget) {
		b->next   = io->spare;
		io->spare = b;
		io->spare_bytes += b->cap;
		return;
	}
	bbuf_unref(b);
}

/* ZeroMQ's free function for a zero-copy message: runs on a ZeroMQ
 * thread when it no longer needs the bytes. */
static void
zmq_release(void *data, void *hint)
{
	(void) data;
	bbuf_unref(hint);
}

static void
wake(vte_io *io)
{
	uint64_t one = 1;

	/* Only fails if the counter would overflow: it is then readable. */
	if (write(io->efd, &one, sizeof(one)) < 0)
		return;
}

static void
atomic_max_u64(_Atomic uint64_t *a, uint64_t v)
{
	uint64_t cur = atomic_load_explicit(a, memory_order_relaxed);

	while (cur < v
	    && !atomic_compare_exchange_weak_explicit(
	        a, &cur, v, memory_order_release, memory_order_relaxed))
		;
}

static void
stat_add(_Atomic uint64_t *a, uint64_t v)
{
	atomic_fetch_add_explicit(a, v, memory_order_relaxed);
}

/* ---- building batches -------------------------------------------------- */

static size_t
staged_bytes(const vte_io *io)
{
	return wire_batch_header_size(&io->ident->w, io->names_bytes)
	    + (size_t) io->nstg * WIRE_SAMPLE_SIZE;
}

/*
 * Whether one more sample may be staged: the batch is not full, there is a
 * window slot for it, and the budget holds it even if its name is new to
 * the batch.
 */
static int
can_stage(const vte_io *io)
{
	if (io->nstg >= VTE_IO_BATCH_MAX
	    || io->next_seq - io->base >= VTE_IO_WINDOW)
		return 0;
	return io->unacked_bytes + staged_bytes(io) + WIRE_SAMPLE_SIZE + 1
	    + WIRE_NAME_MAX
	    <= io->budget;
}

static void
stage(vte_io *io, const vte_ring_slot *s)
{
	vte_name   *nm  = vte_names_get(io->names, s->name & VTE_RING_ID);
	size_t      off = (size_t) io->nstg++ * WIRE_SAMPLE_SIZE;
	wire_sample ws;

	if (nm->batch_gen != io->gen) {
		nm->batch_gen           = io->gen;
		nm->batch_idx           = (uint16_t) io->nnames;
		io->order[io->nnames++] = nm;
		io->names_bytes += 1 + nm->len;
	}
	ws.name    = nm->batch_idx;
	ws.time_ns = (s->name & VTE_RING_TICKS)
	    ? vte_clock_to_ns(&io->clock, (uint64_t) s->time)
	    : s->time;
	ws.value   = s->value;
	ws.step    = vte_phase_see(&io->ph, s->name & ~VTE_RING_ID,
	       s->name & VTE_RING_ID, s->step, ws.time_ns, s->value);
	wire_put_sample(io->stg, &off, &ws);
	io->nder += (s->name & VTE_RING_DERIVED) != 0;
}

/*
 * Turn the staged samples (possibly none: a batch that only carries the
 * dropped count) into the next batch of the window. Callers checked that
 * the window has room. Returns 0, or -1 if out of memory (the samples stay
 * staged and sealing is tried again on the next loop).
 */
static int
seal(vte_io *io, int64_t now)
{
	const wire_ident *w       = &io->ident->w;
	uint64_t          dropped = vte_ring_dropped(io->ring);
	uint64_t          refused = io->plain
	             ? 0
	             : atomic_load_explicit(&io->names->refused, memory_order_relaxed);
	size_t size = staged_bytes(io) + (refused ? WIRE_REFUSED_SIZE : 0);
	bbuf             *bb   = bbuf_get(io, size);
	batch *b;
	size_t off;

	if (bb == NULL)
		return -1;
	atomic_init(&bb->refs, 1);
	bb->len = size;
	off     = wire_put_batch_head_refused(
	        bb->data, w, io->next_seq, io->base, dropped, refused);
	/* Someone waits for it (vt_flush, vt_close): the collector commits
	 * it without waiting to group it with others. */
	if (atomic_load_explicit(&io->flush_pos, memory_order_acquire)
	        > io->stg_pos
	    || atomic_load_explicit(&io->flush_drop, memory_order_acquire)
	        > io->last_drop)
		wire_put_batch_flags(bb->data, WIRE_URGENT);
	wire_put_names_count(bb->data, &off, (uint16_t) io->nnames);
	for (uint32_t i = 0; i < io->nnames; i++)
		wire_put_name(
		    bb->data, &off, io->order[i]->str, io->order[i]->len);
	wire_put_samples_count(bb->data, &off, io->nstg);
	memcpy(bb->data + off, io->stg, (size_t) io->nstg * WIRE_SAMPLE_SIZE);

	b             = &io->win[io->next_seq % VTE_IO_WINDOW];
	b->buf        = bb;
	b->seq        = io->next_seq;
	b->pos_start  = io->stg_pos;
	b->pos_end    = io->ring->deq;
	b->dropped    = dropped;
	b->n          = io->nstg - io->nder;
	b->sends      = 0;
	b->first_send = b->last_send = 0;
	b->need                      = 1;
	b->done                      = 0;
	b->final                     = 0;
	io->next_seq++;
	io->unacked_bytes += size;
	io->last_drop    = dropped;
	io->last_refused = refused;
	io->last_seal    = now;

	io->nstg        = 0;
	io->nder        = 0;
	io->nnames      = 0;
	io->names_bytes = 0;
	if (++io->gen == 0)
		io->gen = 1; /* 0 marks names never staged */
	io->stg_pos   = io->ring->deq;
	io->stg_since = 0;
	return 0;
}

/*
 * Move samples from the ring into batches while the window and the budget
 * allow, sealing full batches, then seal a partial batch if its oldest
 * sample has waited long enough or a flush wants it, and send a batch of
 * no samples if only the dropped count is new. Returns the number of
 * samples moved.
 */
static uint64_t
drain(vte_io *io, int64_t now)
{
	vte_ring_slot s;
	uint64_t      moved = 0;
	uint64_t      dropped, req;
	int           news;

	for (;;) {
		while (can_stage(io)
		    && (vte_phase_pop(&io->ph, &s)
		        || vte_ring_pop(io->ring, &s))) {
			stage(io, &s);
			moved++;
		}
		if (io->nstg > 0 && io->stg_since == 0)
			io->stg_since = now;
		if (io->nstg < VTE_IO_BATCH_MAX || seal(io, now) != 0)
			break;
	}
	if (io->nstg > 0) {
		if (now - io->stg_since >= io->flush_ns
		    || atomic_load_explicit(
		           &io->flush_pos, memory_order_acquire)
		        > io->stg_pos)
			seal(io, now);
		return moved;
	}
	dropped = vte_ring_dropped(io->ring);
	/* New refusals are sent like new drops, with no flush waiting. */
	news = dropped > io->last_drop
	    || (!io->plain
	        && atomic_load_explicit(
	               &io->names->refused, memory_order_relaxed)
	            > io->last_refused);
	if (news && io->next_seq - io->base < VTE_IO_WINDOW
	    && io->unacked_bytes + staged_bytes(io) <= io->budget
	    && (now - io->last_seal >= io->flush_ns
	        || atomic_load_explicit(&io->flush_drop, memory_order_acquire)
	            > io->last_drop))
		seal(io, now);
	/* Goodbye: an empty batch after everything staged, which also
	 * carries the final dropped count. */
	req = atomic_load_explicit(&io->final_req, memory_order_acquire);
	if (io->final_sealed < req && io->next_seq - io->base < VTE_IO_WINDOW
	    && seal(io, now) == 0) {
		batch *b = &io->win[(io->next_seq - 1) % VTE_IO_WINDOW];

		wire_put_batch_flags(b->buf->data, WIRE_FINAL | WIRE_URGENT);
		b->final         = req;
		io->final_sealed = req;
	}
	return moved;
}

/* ---- sending and acknowledgements -------------------------------------- */

/*
 * Send one batch without blocking. Returns 0 if queued in ZeroMQ, 1 on
 * EAGAIN (no connection yet, or its queue is full), -1 on another error.
 */
static int
send_batch(vte_io *io, batch *b, int64_t now)
{
	zmq_msg_t m;

	/* Only while ZeroMQ holds no copy may the header be rewritten: the
	 * floor may have risen since the batch was sealed. */
	if (atomic_load_explicit(&b->buf->refs, memory_order_acquire) == 1)
		wire_put_batch_floor(b->buf->data, io->base);
	atomic_fetch_add_explicit(&b->buf->refs, 1, memory_order_relaxed);
	if (zmq_msg_init_data(
	        &m, b->buf->data, b->buf->len, zmq_release, b->buf)
	    != 0) {
		bbuf_unref(b->buf);
		return -1;
	}
	if (zmq_msg_send(&m, io->zsock, ZMQ_DONTWAIT) < 0) {
		int e = zmq_errno();

		zmq_msg_close(&m); /* releases our extra reference */
		return e == EAGAIN ? 1 : -1;
	}
	if (b->sends == 0) {
		b->first_send = now;
		stat_add(&io->st_sent, b->n);
	} else {
		stat_add(&io->st_resent, 1);
	}
	b->sends++;
	b->last_send = now;
	return 0;
}

/*
 * Send, oldest first, every batch that needs sending: new batches, and
 * after a disconnect every unacknowledged one. Over a stream transport a
 * batch is lost only with its connection, so resending on a timer would
 * only flood a slow collector with duplicates; the timer is a fallback
 * (a lost ACK, a missed event): it applies to the oldest batch alone,
 * runs only while no ACK at all arrives (like TCP's, it restarts on
 * progress), and backs off exponentially. A batch of which ZeroMQ still
 * holds a copy waits until that copy is written or dropped. Returns
 * batches sent.
 */
static unsigned
send_due(vte_io *io, int64_t now)
{
	unsigned sent = 0;

	io->want_pollout = 0;
	if (io->base < io->next_seq) {
		batch   *b = &io->win[io->base % VTE_IO_WINDOW];
		unsigned shift;
		int64_t  since;

		if (!b->done && b->sends > 0) {
			shift = b->sends - 1 < RTO_MAX_SHIFT ? b->sends - 1
			                                     : RTO_MAX_SHIFT;
			since = b->last_send > io->last_ack ? b->last_send
			                                    : io->last_ack;
			if (now - since >= io->rto << shift)
				b->need = 1;
		}
	}
	for (uint64_t s = io->base; s < io->next_seq; s++) {
		batch *b = &io->win[s % VTE_IO_WINDOW];
		int    r;

		if (b->done || !b->need
		    || atomic_load_explicit(
		           &b->buf->refs, memory_order_acquire)
		        > 1)
			continue;
		r = send_batch(io, b, now);
		if (r != 0) {
			io->want_pollout = r == 1;
			break;
		}
		b->need = 0;
		sent++;
	}
	return sent;
}

/* Mark every batch sent and not yet settled to be sent again. */
static void
need_all(vte_io *io)
{
	for (uint64_t s = io->base; s < io->next_seq; s++) {
		batch *b = &io->win[s % VTE_IO_WINDOW];

		if (!b->done && b->sends > 0)
			b->need = 1;
	}
}

/*
 * A connection ended: whatever was sent on it may be lost with it (in
 * ZeroMQ's queue, in the kernel, in a collector that died before
 * committing), and so may the ACKs owed on it. ZeroMQ reports the end
 * before it tears down the connection's queue, so a batch sent in
 * between went into a queue about to be dropped: when the next
 * connection completes its handshake, everything still unsettled is
 * sent again (a batch that did get through comes back as a duplicate).
 */
static void
read_monitor(vte_io *io)
{
	for (;;) {
		zmq_msg_t m;
		uint16_t  ev = 0;

		zmq_msg_init(&m);
		if (zmq_msg_recv(&m, io->zmon, ZMQ_DONTWAIT) < 0) {
			zmq_msg_close(&m);
			return;
		}
		if (zmq_msg_size(&m) >= 2)
			memcpy(&ev, zmq_msg_data(&m), 2);
		/* The rest of the event (the endpoint) came with it. */
		while (zmq_msg_more(&m)) {
			zmq_msg_close(&m);
			zmq_msg_init(&m);
			if (zmq_msg_recv(&m, io->zmon, ZMQ_DONTWAIT) < 0)
				break;
		}
		zmq_msg_close(&m);
		if (ev == ZMQ_EVENT_DISCONNECTED) {
			io->cut = 1;
			need_all(io);
		} else if (ev == ZMQ_EVENT_HANDSHAKE_SUCCEEDED && io->cut) {
			io->cut = 0;
			need_all(io);
		}
	}
}

/*
 * A rejected batch that carries the refused count may have met a
 * collector older than that field: send it again in the plain layout,
 * and every later batch too. Returns 1 if it is to be sent again, 0 if
 * the rejection stands (out of memory: it stands too).
 */
static int
send_plain(vte_io *io, batch *b)
{
	bbuf  *nb  = malloc(sizeof(*nb) + b->buf->len);
	size_t len = b->buf->len;

	if (nb == NULL)
		return 0;
	nb->cap = len;
	memcpy(nb->data, b->buf->data, len);
	if (!wire_batch_strip_refused(nb->data, &len)) {
		free(nb);
		return 0;
	}
	atomic_init(&nb->refs, 1);
	nb->len = len;
	io->unacked_bytes -= b->buf->len - len;
	bbuf_unref(b->buf);
	b->buf    = nb;
	b->need   = 1;
	io->plain = 1;
	return 1;
}

static void
settle(vte_io *io, batch *b, uint32_t status, int64_t now)
{
	if (status == WIRE_ACK_REJECTED) {
		stat_add(&io->st_rejected, b->n);
	} else {
		stat_add(&io->st_acked, b->n);
		if (b->dropped > io->pub_drop)
			io->pub_drop = b->dropped;
	}
	/* Karn: only a batch sent once gives an unambiguous round trip. */
	if (b->sends == 1) {
		int64_t rtt = now - b->first_send;

		io->srtt = io->srtt == 0 ? rtt : (7 * io->srtt + rtt) / 8;
		io->rto  = 4 * io->srtt;
		if (io->rto < RTO_MIN_NS)
			io->rto = RTO_MIN_NS;
		if (io->rto > RTO_MAX_NS)
			io->rto = RTO_MAX_NS;
	}
	b->done = 1;
	if (b->final) {
		atomic_max_u64(&io->final_done, b->final);
		pthread_mutex_lock(&io->mu);
		if (io->waiters > 0)
			pthread_cond_broadcast(&io->cond);
		pthread_mutex_unlock(&io->mu);
	}
	io->unacked_bytes -= b->buf->len;
	bbuf_drop(io, b->buf);
	b->buf = NULL;
}

/* Read every waiting frame; ACKs for this incarnation and an unsettled
 * seq settle their batch. Anything else (empty delimiter frames, stray
 * messages) is ignored. */
static unsigned
recv_acks(vte_io *io, int64_t now)
{
	unsigned n = 0;

	for (;;) {
		uint8_t  buf[64];
		wire_ack a;
		batch   *b;
		int len = zmq_recv(io->zsock, buf, sizeof(buf), ZMQ_DONTWAIT);

		if (len < 0)
			break;
		if (len != WIRE_ACK_SIZE
		    || wire_ack_decode(buf, (size_t) len, &a) != 0
		    || a.incarnation != io->ident->w.incarnation
		    || a.seq < io->base || a.seq >= io->next_seq)
			continue;
		b = &io->win[a.seq % VTE_IO_WINDOW];
		if (b->done)
			continue;
		if (a.status == WIRE_ACK_REJECTED && send_plain(io, b))
			continue;
		settle(io, b, a.status, now);
		io->last_ack = now;
		n++;
	}
	while (
	    io->base < io->next_seq && io->win[io->base % VTE_IO_WINDOW].done)
		io->base++;
	return n;
}

/* Publish how far samples are settled and wake flushers if it moved. */
static void
publish(vte_io *io)
{
	uint64_t pos = io->base < io->next_seq
	    ? io->win[io->base % VTE_IO_WINDOW].pos_start
	    : io->stg_pos;

	if (pos == io->pub_pos
	    && io->pub_drop
	        == atomic_load_explicit(
	            &io->settled_drop, memory_order_relaxed))
		return;
	io->pub_pos = pos;
	atomic_store_explicit(&io->settled_pos, pos, memory_order_release);
	atomic_store_explicit(
	    &io->settled_drop, io->pub_drop, memory_order_release);
	pthread_mutex_lock(&io->mu);
	if (io->waiters > 0)
		pthread_cond_broadcast(&io->cond);
	pthread_mutex_unlock(&io->mu);
}

/* ---- the thread -------------------------------------------------------- */

/*
 * Create the context and the DEALER socket and start connecting. On
 * failure returns VT_ETRANSPORT with detail in io->start_err and leaves
 * nothing open.
 */
static int
zmq_setup(vte_io *io)
{
	const int opts[][2] = {
		{ ZMQ_LINGER, 0 },
		/* Queue nothing into a connection not yet made: the window
		 * is the buffer, and it is resent after a reconnect. */
		{ ZMQ_IMMEDIATE, 1 },
		{ ZMQ_RECONNECT_IVL, 100 },
		{ ZMQ_RECONNECT_IVL_MAX, 1000 },
		/* Notice a collector that vanished without closing. */
		{ ZMQ_HEARTBEAT_IVL, 1000 },
		{ ZMQ_HEARTBEAT_TIMEOUT, 3000 },
		{ ZMQ_IPV6, 1 },
	};
	const char *what;

	io->zctx = zmq_ctx_new();
	if (io->zctx == NULL) {
		what = "zmq_ctx_new";
		goto fail;
	}
	io->zsock = zmq_socket(io->zctx, ZMQ_DEALER);
	if (io->zsock == NULL) {
		what = "zmq_socket";
		goto fail_ctx;
	}
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
		if (zmq_setsockopt(
		        io->zsock, opts[i][0], &opts[i][1], sizeof(int))
		    != 0) {
			what = "zmq_setsockopt";
			goto fail_sock;
		}
	}
	/* Disconnections and reconnections tell when to resend. */
	if (zmq_socket_monitor(io->zsock, MONITOR_EP,
	        ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_SUCCEEDED)
	    != 0) {
		what = "zmq_socket_monitor";
		goto fail_sock;
	}
	io->zmon = zmq_socket(io->zctx, ZMQ_PAIR);
	if (io->zmon == NULL) {
		what = "zmq_socket";
		goto fail_sock;
	}
	if (zmq_setsockopt(io->zmon, ZMQ_LINGER, &opts[0][1], sizeof(int)) != 0
	    || zmq_connect(io->zmon, MONITOR_EP) != 0) {
		what = "monitor";
		goto fail_mon;
	}
	/* CURVE: the socket is a CurveZMQ client of the collector's key. */
	if (io->curve.on
	    && (zmq_setsockopt(io->zsock, ZMQ_CURVE_SERVERKEY,
	            io->curve.server, sizeof(io->curve.server))
	            != 0
	        || zmq_setsockopt(io->zsock, ZMQ_CURVE_PUBLICKEY,
	               io->curve.pub, sizeof(io->curve.pub))
	            != 0
	        || zmq_setsockopt(io->zsock, ZMQ_CURVE_SECRETKEY,
	               io->curve.secret, sizeof(io->curve.secret))
	            != 0)) {
		what = "CURVE keys";
		goto fail_mon;
	}
	vte_curve_wipe(&io->curve);
	if (zmq_connect(io->zsock, io->endpoint) != 0) {
		what = "zmq_connect";
		goto fail_mon;
	}
	return 0;
fail_mon:
	snprintf(io->start_err, sizeof(io->start_err), "%s(\"%s\"): %s", what,
	    io->endpoint, zmq_strerror(zmq_errno()));
	zmq_close(io->zmon);
	zmq_close(io->zsock);
	zmq_ctx_term(io->zctx);
	return VT_ETRANSPORT;
fail_sock:
	snprintf(io->start_err, sizeof(io->start_err), "%s(\"%s\"): %s", what,
	    io->endpoint, zmq_strerror(zmq_errno()));
	zmq_close(io->zsock);
	zmq_ctx_term(io->zctx);
	return VT_ETRANSPORT;
fail_ctx:
	snprintf(io->start_err, sizeof(io->start_err), "%s: %s", what,
	    zmq_strerror(zmq_errno()));
	zmq_ctx_term(io->zctx);
	return VT_ETRANSPORT;
fail:
	snprintf(io->start_err, sizeof(io->start_err), "%s: %s", what,
	    zmq_strerror(zmq_errno()));
	return VT_ETRANSPORT;
}

/* Whether the thread may doze: no goodbye, drop or refusal count to
 * seal, no send waiting for a connection. Staged samples may wait: the
 * doze then ends when they are due (doze_ms). */
static int
may_doze(const vte_io *io)
{
	return !io->want_pollout
	    && io->final_sealed
	    >= atomic_load_explicit(&io->final_req, memory_order_acquire)
	    && vte_ring_dropped(io->ring) == io->last_drop
	    && (io->plain
	        || atomic_load_explicit(
	               &io->names->refused, memory_order_relaxed)
	            == io->last_refused);
}

/* How long a doze may last: POLL_DOZE_MS, or until the staged samples
 * are due to be sealed. */
static int
doze_ms(const vte_io *io, int64_t now)
{
	int64_t left;

	if (io->nstg == 0)
		return POLL_DOZE_MS;
	left = (io->stg_since + io->flush_ns - now + 999999) / 1000000;
	if (left < POLL_IDLE_MS)
		return POLL_IDLE_MS;
	return left < POLL_DOZE_MS ? (int) left : POLL_DOZE_MS;
}

static void
run(vte_io *io)
{
	int pollout_spun = 0;
	int idle_passes  = 0;

	while (!atomic_load_explicit(&io->stop, memory_order_acquire)) {
		int64_t        now = vte_clock_mono_ns();
		uint64_t       moved;
		unsigned       acts;
		int            timeout, dozing, rc;
		zmq_pollitem_t items[3] = {
			{ io->zsock, 0, ZMQ_POLLIN, 0 },
			{ NULL, io->efd, ZMQ_POLLIN, 0 },
			{ io->zmon, 0, ZMQ_POLLIN, 0 },
		};

		vte_clock_update(&io->clock);
		read_monitor(io);
		acts  = recv_acks(io, now);
		moved = drain(io, now);
		acts += send_due(io, now);
		publish(io);
		/* Wait for a connection when a send found none, but do not
		 * spin if ZeroMQ says writable and still refuses. */
		if (io->want_pollout && !pollout_spun)
			items[0].events |= ZMQ_POLLOUT;
		/* Producers are quiet after two passes that moved nothing
		 * (ACKs and sends say nothing about them). */
		idle_passes = moved > 0 ? 0 : idle_passes + 1;
		timeout = moved > 0 || acts > 0 ? POLL_BUSY_MS : POLL_IDLE_MS;
		dozing  = idle_passes >= 2 && may_doze(io)
		    && vte_ring_doze(io->ring);
		if (dozing)
			timeout = doze_ms(io, now);
		rc = zmq_poll(items, 3, timeout);
		if (dozing)
			vte_ring_wake_up(io->ring);
		if (rc < 0) {
			if (zmq_errno() == ETERM)
				break;
			continue;
		}
		pollout_spun = io->want_pollout
		    && (items[0].revents & ZMQ_POLLOUT) != 0;
		if (items[1].revents & ZMQ_POLLIN) {
			uint64_t v;

			if (read(io->efd, &v, sizeof(v)) < 0)
				continue; /* EAGAIN: already drained */
		}
	}
}

static void *
io_main(void *arg)
{
	vte_io *io = arg;
	int     rc = zmq_setup(io);

	/* The first calibration pair predates every tick that will be
	 * converted: vt_open() returns only after this. */
	vte_clock_init(&io->clock, io->tsc);
	io->last_seal = vte_clock_mono_ns();
	pthread_mutex_lock(&io->mu);
	io->started  = 1;
	io->start_rc = rc;
	pthread_cond_broadcast(&io->cond);
	pthread_mutex_unlock(&io->mu);
	if (rc != 0)
		return NULL;
	run(io);
	zmq_socket_monitor(io->zsock, NULL, 0);
	zmq_close(io->zmon);
	zmq_close(io->zsock);
	while (zmq_ctx_term(io->zctx) != 0 && zmq_errno() == EINTR)
		;
	return NULL;
}

/* ---- the spool (emitter/spool.c) --------------------------------------- */

/*
 * After the thread has stopped: seal what the ring and the staging area
 * still hold while the window has room (the byte budget no longer
 * matters: these go to disk), and the goodbye if one was asked for, then
 * hand every unsettled batch to the spool with its floor set to the
 * oldest unsettled seq (the collector takes any seq within 1024 of the
 * floor). Nothing happens when every sample was acknowledged.
 */
static void
spool_unsettled(vte_io *io)
{
	int64_t         now = vte_clock_mono_ns();
	vte_ring_slot   s;
	vte_spool_item *items;
	size_t          n       = 0;
	uint64_t        samples = 0, lost;

	for (;;) {
		while (io->nstg < VTE_IO_BATCH_MAX
		    && io->next_seq - io->base < VTE_IO_WINDOW
		    && vte_ring_pop(io->ring, &s))
			stage(io, &s);
		if (io->nstg == 0 || io->next_seq - io->base >= VTE_IO_WINDOW
		    || seal(io, now) != 0)
			break;
	}
	lost = io->nstg + (vte_ring_claimed(io->ring) - io->ring->deq);
	if (io->final_sealed
	        < atomic_load_explicit(&io->final_req, memory_order_acquire)
	    && lost == 0 && io->next_seq - io->base < VTE_IO_WINDOW
	    && seal(io, now) == 0)
		wire_put_batch_flags(
		    io->win[(io->next_seq - 1) % VTE_IO_WINDOW].buf->data,
		    WIRE_FINAL | WIRE_URGENT);
	for (uint64_t q = io->base; q < io->next_seq; q++)
		if (!io->win[q % VTE_IO_WINDOW].done)
			samples += io->win[q % VTE_IO_WINDOW].n;
	if (samples == 0 && lost == 0)
		return;
	items = calloc(io->next_seq - io->base + 1, sizeof(*items));
	if (items == NULL) {
		vte_spool_save(
		    &io->ident->w, io->endpoint, NULL, 0, samples + lost);
		return;
	}
	for (uint64_t q = io->base; q < io->next_seq; q++) {
		batch *b = &io->win[q % VTE_IO_WINDOW];

		if (b->done || b->buf == NULL)
			continue;
		/* ZeroMQ's copies went with its context: ours alone. */
		if (atomic_load_explicit(&b->buf->refs, memory_order_acquire)
		    == 1)
			wire_put64(b->buf->data + 24, io->base);
		items[n].data = b->buf->data;
		items[n].len  = b->buf->len;
		items[n].n    = b->n;
		n++;
	}
	vte_spool_save(&io->ident->w, io->endpoint, items, n, lost);
	free(items);
}

/* ---- API --------------------------------------------------------------- */

static void
io_free(vte_io *io)
{
	for (uint64_t s = io->base; s < io->next_seq; s++) {
		batch *b = &io->win[s % VTE_IO_WINDOW];

		if (b->buf != NULL)
			bbuf_unref(b->buf);
	}
	while (io->spare != NULL) {
		bbuf *b = io->spare;

		io->spare = b->next;
		free(b);
	}
	vte_curve_wipe(&io->curve);
	free(io->order);
	free(io->stg);
	free(io->endpoint);
	free(io);
}

/*
 * Allocate io, start the thread with every signal blocked (signals are the
 * host's business) and wait for its socket. On failure everything is
 * released and the error returned.
 */
int
vte_io_start(const vte_io_params *p, vte_io **out, char *err, size_t errlen)
{
	vte_io            *io;
	pthread_condattr_t ca;
	sigset_t           all, old;
	int                rc = VT_ENOMEM;

	*out = NULL;
	io   = calloc(1, sizeof(*io));
	if (io == NULL)
		goto fail;
	io->ring     = p->ring;
	io->names    = p->names;
	io->ident    = p->ident;
	io->budget   = p->budget;
	io->flush_ns = (int64_t) p->flush_interval_ms * 1000000;
	io->tsc      = p->tsc;
	if (p->curve != NULL)
		io->curve = *p->curve;
	io->base = io->next_seq = p->first_seq;
	io->rto                 = RTO_INIT_NS;
	io->gen                 = 1;
	io->endpoint            = strdup(p->endpoint);
	io->stg   = malloc((size_t) VTE_IO_BATCH_MAX * WIRE_SAMPLE_SIZE);
	io->order = malloc(VTE_IO_BATCH_MAX * sizeof(*io->order));
	vte_phase_init(&io->ph, p->names);
	if (io->endpoint == NULL || io->stg == NULL || io->order == NULL)
		goto fail_io;
	io->efd = p->ring->wake_fd;
	atomic_init(&io->stop, 0);
	atomic_init(&io->flush_pos, 0);
	atomic_init(&io->flush_drop, 0);
	atomic_init(&io->settled_pos, 0);
	atomic_init(&io->settled_drop, 0);
	atomic_init(&io->st_sent, 0);
	atomic_init(&io->st_acked, 0);
	atomic_init(&io->st_resent, 0);
	atomic_init(&io->st_rejected, 0);
	if (pthread_mutex_init(&io->mu, NULL) != 0)
		goto fail_io;
	if (pthread_condattr_init(&ca) != 0)
		goto fail_mu;
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	rc = pthread_cond_init(&io->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (rc != 0) {
		rc = VT_ENOMEM;
		goto fail_mu;
	}

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&io->thread, NULL, io_main, io);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		snprintf(err, errlen, "pthread_create: %s", strerror(rc));
		rc = VT_ETHREAD;
		goto fail_cond;
	}
	pthread_setname_np(io->thread, "vitals-io");
	pthread_mutex_lock(&io->mu);
	while (!io->started)
		pthread_cond_wait(&io->cond, &io->mu);
	rc = io->start_rc;
	pthread_mutex_unlock(&io->mu);
	if (rc != 0) {
		snprintf(err, errlen, "%s", io->start_err);
		pthread_join(io->thread, NULL);
		goto fail_cond;
	}
	*out = io;
	return 0;
fail_cond:
	pthread_cond_destroy(&io->cond);
fail_mu:
	pthread_mutex_destroy(&io->mu);
fail_io:
	io_free(io);
fail:
	if (rc == VT_ENOMEM)
		snprintf(err, errlen, "out of memory starting the I/O thread");
	return rc;
}

/* Until when a wait of timeout_ms started now may last. */
static struct timespec
deadline_in(unsigned timeout_ms)
{
	struct timespec d;

	clock_gettime(CLOCK_MONOTONIC, &d);
	d.tv_sec += timeout_ms / 1000;
	d.tv_nsec += (long) (timeout_ms % 1000) * 1000000L;
	if (d.tv_nsec >= 1000000000L) {
		d.tv_sec++;
		d.tv_nsec -= 1000000000L;
	}
	return d;
}

/* What a caller waits for: every sample below pos and the dropped count
 * drop settled, and the FINAL batches numbered up to final acknowledged. */
typedef struct goal {
	uint64_t pos, drop, final;
} goal;

static int
reached(const vte_io *io, const goal *g)
{
	return atomic_load_explicit(&io->settled_pos, memory_order_acquire)
	    >= g->pos
	    && atomic_load_explicit(&io->settled_drop, memory_order_acquire)
	    >= g->drop
	    && atomic_load_explicit(&io->final_done, memory_order_acquire)
	    >= g->final;
}

/* Wait until g is reached or timeout_ms passes: 0 or VT_ETIMEDOUT. The
 * I/O thread broadcasts io->cond on progress while there are waiters. */
static int
wait_for(vte_io *io, const goal *g, unsigned timeout_ms)
{
	struct timespec deadline = deadline_in(timeout_ms);
	int             rc       = 0;

	pthread_mutex_lock(&io->mu);
	io->waiters++;
	while (!reached(io, g))
		if (pthread_cond_timedwait(&io->cond, &io->mu, &deadline)
		    == ETIMEDOUT) {
			if (!reached(io, g))
				rc = VT_ETIMEDOUT;
			break;
		}
	io->waiters--;
	pthread_mutex_unlock(&io->mu);
	return rc;
}

int
vte_io_flush(vte_io *io, unsigned timeout_ms)
{
	goal g = { vte_ring_claimed(io->ring), vte_ring_dropped(io->ring), 0 };

	if (reached(io, &g))
		return 0;
	atomic_max_u64(&io->flush_pos, g.pos);
	atomic_max_u64(&io->flush_drop, g.drop);
	wake(io);
	return wait_for(io, &g, timeout_ms);
}

int
vte_io_finish(vte_io *io, unsigned timeout_ms)
{
	goal g = { 0, 0,
		atomic_fetch_add_explicit(
		    &io->final_req, 1, memory_order_acq_rel)
		    + 1 };

	wake(io);
	return wait_for(io, &g, timeout_ms);
}

void
vte_io_stop(vte_io *io)
{
	atomic_store_explicit(&io->stop, 1, memory_order_release);
	wake(io);
	pthread_join(io->thread, NULL);
	spool_unsettled(io);
	pthread_cond_destroy(&io->cond);
	pthread_mutex_destroy(&io->mu);
	io_free(io);
}

void
vte_io_stats(const vte_io *io, vt_stats *st)
{
	st->sent  = atomic_load_explicit(&io->st_sent, memory_order_relaxed);
	st->acked = atomic_load_explicit(&io->st_acked, memory_order_relaxed);
	st->resent
	    = atomic_load_explicit(&io->st_resent, memory_order_relaxed);
	st->rejected
	    = atomic_load_explicit(&io->st_rejected, memory_order_relaxed);
}
