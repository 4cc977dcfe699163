#include "collector/server.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "collector/auth.h"
#include "common/clock.h"
#include "wire/wire.h"

#define MAX_PENDING 8192 /* batches in one transaction */
#define MAP_PER_BYTE 8   /* map bytes to expect per pending byte */
#define RETRY_MS 1000    /* after a disk error */
#define COMMIT_WAIT_MAX_NS (500 * 1000000ll) /* see pace() */
#define STATS_EVERY_NS (10 * 1000000000ll)
#define TICK_NS (200 * 1000000ll) /* storing alerts */
#define READER_CHECK_NS 1000000000ll /* clearing dead readers */
/* Messages queued per connection inside ZeroMQ: more than an emitter may
 * have unacknowledged (its window is 1,024 batches), so ZeroMQ never stops
 * reading a well-behaved emitter. A smaller queue would bound its bytes
 * better, but a stopped input exposes a libzmq 4.3.4 assertion (!_io_error
 * in stream_engine_base.cpp: the peer's PING decoded after it hung up),
 * which the 256-emitter test hit with 4. docs/limits.md has the bound. */
#define RCVHWM 1088
#define HANDSHAKE_MS 10000
#define NEW_LOG_MAX 10
#define NEW_LOG_NS (10 * 1000000000ll)

typedef struct pend {
	zmq_msg_t  id, body;
	wire_batch b;
	int        status;
	int        is_new;
} pend;

typedef struct srv {
	const server_opts *o;
	store             *st;
	ingest            *in;
	alerting          *al;
	int64_t            last_tick;
	void              *sock;
	pend              *p;
	size_t             n;
	uint64_t           samples; /* pending */
	size_t             bytes;   /* pending */
	int64_t            first_ns; /* when the oldest pending arrived */
	int64_t            wait_ns;  /* how long the group may gather */
	int                urgent;   /* a pending batch is waited for */
	int                blocked;  /* a disk error: retry, read nothing */
	uint64_t           malformed, malformed_logged;
	int64_t            malformed_window;
	int64_t            last_stats;
	uint64_t           last_stats_samples;
	int64_t            last_reap;
	conns             *cn;
	conns_stats        last_cs;
	/* "new emitter" lines: at most NEW_LOG_MAX per NEW_LOG_NS, the rest
	 * counted and summed up in one line (run churn). */
	int64_t  new_window;
	unsigned new_logged;
	uint64_t new_unlogged;
} srv;

void
server_opts_init(server_opts *o)
{
	o->listen         = NULL;
	o->commit_ms      = 20;
	o->commit_samples = 262144;
	o->quiet          = 0;
	o->curve_secret   = NULL;
	o->allow          = NULL;
	conns_opts_init(&o->conns);
	o->pending_bytes = SERVER_PENDING_BYTES;
	o->max_message   = WIRE_MAX_MESSAGE;
	o->expo           = NULL;
	o->rw             = NULL;
}

static void
send_ack(srv *s, zmq_msg_t *id, uint64_t inc, uint64_t seq, int status)
{
	uint8_t  buf[WIRE_ACK_SIZE];
	wire_ack a = { (uint32_t) status, inc, seq };

	wire_ack_encode(buf, &a);
	/* A peer that went away loses its ack; it resends and the batch is
	 * then acknowledged as a duplicate. */
	if (zmq_send(s->sock, zmq_msg_data(id), zmq_msg_size(id),
		ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0)
		return;
	zmq_send(s->sock, buf, sizeof(buf), ZMQ_DONTWAIT);
}

/*
 * Log a malformed message with its sender, at most 10 lines a second so a
 * flood cannot fill the disk with logs; the count is exact either way.
 */
static void
log_malformed(srv *s, zmq_msg_t *body, const char *why)
{
	const char *peer = zmq_msg_gets(body, "Peer-Address");
	int64_t     sec  = now_mono_ns() / 1000000000ll;

	s->malformed++;
	if (sec != s->malformed_window) {
		if (s->malformed_logged > 10)
			fprintf(stderr,
			    "vitalsd: %llu more malformed messages not "
			    "shown\n",
			    (unsigned long long) (s->malformed_logged - 10));
		s->malformed_window = sec;
		s->malformed_logged = 0;
	}
	if (s->malformed_logged++ < 10)
		fprintf(stderr,
		    "vitalsd: malformed message from %s (%zu bytes): %s\n",
		    peer ? peer : "unknown peer", zmq_msg_size(body), why);
}

static void
free_pending(srv *s)
{
	for (size_t i = 0; i < s->n; i++) {
		zmq_msg_close(&s->p[i].id);
		zmq_msg_close(&s->p[i].body);
	}
	s->n       = 0;
	s->samples = 0;
	s->bytes   = 0;
	s->urgent  = 0;
}

/* The count of "new emitter" lines not written, once their window is
 * over (or force: at the end). */
static void
log_emitters_unlogged(srv *s, int64_t now, int force)
{
	if (!force && now - s->new_window < NEW_LOG_NS)
		return;
	if (s->new_unlogged > 0)
		fprintf(stderr,
		    "vitalsd: %llu more new emitters not shown (at most %d "
		    "lines per %lld s)\n",
		    (unsigned long long) s->new_unlogged, NEW_LOG_MAX,
		    NEW_LOG_NS / 1000000000ll);
	s->new_window   = now;
	s->new_logged   = 0;
	s->new_unlogged = 0;
}

static void
log_emitter(srv *s, const wire_batch *b)
{
	log_emitters_unlogged(s, now_mono_ns(), 0);
	if (s->new_logged >= NEW_LOG_MAX) {
		s->new_unlogged++;
		return;
	}
	s->new_logged++;
	fprintf(stderr,
	    "vitalsd: new emitter run=%.*s rank=%d/%d host=%.*s pid=%u "
	    "incarnation=%016llx\n",
	    (int) b->id.run_len, b->id.run, b->id.rank, b->id.world_size,
	    (int) b->id.host_len, b->id.host, b->id.pid,
	    (unsigned long long) b->id.incarnation);
}

/*
 * Store the alerts raised since the last call, growing the map if needed.
 * A failure leaves them queued for the next call; the batches they came
 * from are already stored.
 */
static void
store_alerts(srv *s)
{
	int rc;

	for (int tries = 0; tries < 8; tries++) {
		rc = alerting_store(s->al, s->in);
		if (rc != STORE_EMAPFULL || store_grow(s->st) != 0)
			break;
	}
	if (rc != 0 && rc != STORE_EMAPFULL)
		fprintf(stderr, "vitalsd: storing alerts: %s\n",
		    store_errmsg(s->st));
}

/*
 * Clear the reader slots of viewers that died holding a read transaction
 * (vitals top killed, a crashed query): LMDB keeps every page freed since
 * a reader's snapshot until its slot is cleared, so a dead reader would
 * make the file grow without bound. Once a second.
 */
static void
reap_readers(srv *s)
{
	int64_t m = now_mono_ns();
	int     dead = 0;

	if (m - s->last_reap < READER_CHECK_NS)
		return;
	s->last_reap = m;
	if (store_reader_check(s->st, &dead) == 0 && dead > 0 &&
	    !s->o->quiet)
		fprintf(stderr,
		    "vitalsd: cleared %d read transaction(s) of exited "
		    "viewers\n",
		    dead);
}

/* Alerts raised by the detection thread are stored every TICK_NS. */
static void
tick(srv *s)
{
	int64_t m = now_mono_ns();

	if (s->al == NULL || m - s->last_tick < TICK_NS)
		return;
	s->last_tick = m;
	store_alerts(s);
}

/*
 * How long the next group may gather. A commit rewrites the page of every
 * series it touches, so with many series (64,000: tens of ms a commit)
 * committing every commit_ms would spend most of the time rewriting the
 * same pages for one sample each. The wait grows to 4x the last commit's
 * duration (commits take at most about a fifth of the time), up to
 * COMMIT_WAIT_MAX_NS; nothing is at risk meanwhile, since emitters keep
 * every batch until it is acknowledged. A batch someone waits for (a
 * flush or a close, flagged URGENT) is committed at once.
 */
static void
pace(srv *s, int64_t took_ns)
{
	int64_t w = 4 * took_ns, floor = (int64_t) s->o->commit_ms * 1000000;

	if (w > COMMIT_WAIT_MAX_NS)
		w = COMMIT_WAIT_MAX_NS;
	s->wait_ns = w > floor ? w : floor;
}

/* --http: publish what was just committed, from the batches in hand. */
static void
publish(srv *s, int64_t took_ns)
{
	ingest_stats is;

	for (size_t i = 0; i < s->n; i++)
		if (s->p[i].status == WIRE_ACK_STORED)
			expo_batch(s->o->expo, &s->p[i].b);
	ingest_get_stats(s->in, &is);
	expo_commit(s->o->expo, took_ns, &is, s->malformed);
}

/*
 * Apply every pending batch in one transaction and commit; then, and only
 * then, acknowledge them. A full map is grown and the group applied again
 * from the messages (the caches were dropped with the aborted
 * transaction). Any other store failure (disk full, I/O error) keeps the
 * batches unacknowledged, so their emitters keep them, and sets blocked:
 * the loop retries every RETRY_MS and reads nothing meanwhile, which
 * pushes back on the emitters through ZeroMQ.
 */
static int
commit_group(srv *s)
{
	char    why[256];
	int     rc;
	int64_t t0 = now_mono_ns();
	int64_t now;

	for (;;) {
		now = now_wall_ns();
		/* A batch's samples of new series write about 7x its bytes
		 * (records of series, ids and statistics: about 340 bytes a
		 * series, pages copied on write included, for 47 on the
		 * wire): room for that, so that the transaction is not
		 * aborted on a full map. */
		ingest_expect(s->in, (uint64_t) s->bytes * MAP_PER_BYTE);
		if ((rc = ingest_begin(s->in)) != 0)
			break;
		for (size_t i = 0; i < s->n && rc == 0; i++) {
			pend *p   = &s->p[i];
			p->status = ingest_batch(s->in, &p->b, now, &p->is_new,
			    why, sizeof(why));
			if (p->status < 0)
				rc = -p->status;
			else if (p->status == WIRE_ACK_REJECTED)
				fprintf(stderr,
				    "vitalsd: refused batch from run=%.*s "
				    "incarnation=%016llx: %s\n",
				    (int) p->b.id.run_len, p->b.id.run,
				    (unsigned long long) p->b.id.incarnation,
				    why);
		}
		if (rc != 0)
			ingest_abort(s->in);
		else
			rc = ingest_commit(s->in);
		if (rc != STORE_EMAPFULL)
			break;
		if ((rc = store_grow(s->st)) != 0)
			break;
	}
	if (rc != 0) {
		if (!s->blocked)
			fprintf(stderr,
			    "vitalsd: %s; holding %zu batches "
			    "unacknowledged, retrying every %d ms\n",
			    store_errmsg(s->st), s->n, RETRY_MS);
		s->blocked = 1;
		if (s->o->expo != NULL)
			expo_blocked(s->o->expo, store_errmsg(s->st));
		return rc;
	}
	if (s->blocked)
		fprintf(stderr, "vitalsd: store writable again; %zu batches "
				"committed\n",
		    s->n);
	if (s->blocked && s->o->expo != NULL)
		expo_blocked(s->o->expo, NULL);
	s->blocked = 0;
	pace(s, now_mono_ns() - t0);
	if (s->o->expo != NULL)
		publish(s, now_mono_ns() - t0);
	{
		const char *note = ingest_notice(s->in);

		if (note != NULL)
			fprintf(stderr, "vitalsd: %s\n", note);
	}
	for (size_t i = 0; i < s->n; i++) {
		pend *p = &s->p[i];

		if (p->is_new && !s->o->quiet)
			log_emitter(s, &p->b);
		send_ack(s, &p->id, p->b.id.incarnation, p->b.seq, p->status);
	}
	/* Detection sees each stored sample once: after its commit, with
	 * the arrival time the store recorded (an emitter's end in `vitals
	 * export` is that time, so a replay ends the rank where this did). */
	if (s->al != NULL) {
		for (size_t i = 0; i < s->n; i++)
			if (s->p[i].status == WIRE_ACK_STORED)
				alerting_feed_msg(s->al, &s->p[i].b,
				    &s->p[i].body, now,
				    zmq_msg_gets(
				        &s->p[i].body, "Peer-Address"));
	}
	rwrite_ingest_busy(s->o->rw, now_mono_ns() - t0);
	free_pending(s);
	return 0;
}

/*
 * Receive one message (routing id + body) without waiting. Returns 1 if a
 * batch was queued, 0 if a message was handled otherwise, -1 if nothing
 * was waiting.
 */
static int
receive_one(srv *s)
{
	pend *p = &s->p[s->n];
	char  why[256];
	int   more;
	size_t ml = sizeof(more);

	zmq_msg_init(&p->id);
	if (zmq_msg_recv(&p->id, s->sock, ZMQ_DONTWAIT) < 0) {
		zmq_msg_close(&p->id);
		return -1;
	}
	zmq_msg_init(&p->body);
	if (!zmq_msg_more(&p->id) ||
	    zmq_msg_recv(&p->body, s->sock, 0) < 0) {
		zmq_msg_close(&p->id);
		zmq_msg_close(&p->body);
		return 0;
	}
	zmq_getsockopt(s->sock, ZMQ_RCVMORE, &more, &ml);
	if (more) {
		zmq_msg_t extra;

		/* Batches are one frame; drop the rest of this message. */
		zmq_msg_init(&extra);
		while (more && zmq_msg_recv(&extra, s->sock, 0) >= 0)
			zmq_getsockopt(s->sock, ZMQ_RCVMORE, &more, &ml);
		zmq_msg_close(&extra);
		snprintf(why, sizeof(why), "multi-frame message");
		goto bad;
	}
	conns_seen(s->cn, zmq_msg_get(&p->body, ZMQ_SRCFD), now_mono_ns());
	if (wire_batch_decode(zmq_msg_data(&p->body), zmq_msg_size(&p->body),
		&p->b, why, sizeof(why)) != 0)
		goto bad;
	if (s->n == 0)
		s->first_ns = now_mono_ns();
	if (p->b.flags & WIRE_URGENT)
		s->urgent = 1;
	s->n++;
	s->samples += p->b.nsamples;
	s->bytes += zmq_msg_size(&p->body);
	return 1;
bad:
	log_malformed(s, &p->body, why);
	{
		uint64_t inc, seq;

		/* If it names a batch, refuse it so the sender stops
		 * resending it. */
		if (wire_batch_peek(zmq_msg_data(&p->body),
		        zmq_msg_size(&p->body), &inc, &seq)
		    == 0)
			send_ack(s, &p->id, inc, seq, WIRE_ACK_REJECTED);
	}
	zmq_msg_close(&p->id);
	zmq_msg_close(&p->body);
	return 0;
}

/* The connection limits' counters, when one moved (or at the end). */
static void
log_conns(srv *s, int force)
{
	conns_stats cs;

	if (s->cn == NULL)
		return;
	conns_get_stats(s->cn, &cs);
	if (!force && cs.refused_total == s->last_cs.refused_total
	    && cs.refused_peer == s->last_cs.refused_peer
	    && cs.idle_closed == s->last_cs.idle_closed
	    && cs.accept_failed == s->last_cs.accept_failed)
		return;
	fprintf(stderr,
	    "vitalsd: connections: %llu open, %llu refused past "
	    "--max-connections, %llu past --max-connections-per-peer, %llu "
	    "closed idle, %llu accept failures\n",
	    (unsigned long long) cs.open,
	    (unsigned long long) cs.refused_total,
	    (unsigned long long) cs.refused_peer,
	    (unsigned long long) cs.idle_closed,
	    (unsigned long long) cs.accept_failed);
	s->last_cs = cs;
}

static void
log_stats(srv *s, int force)
{
	ingest_stats is;
	int64_t      now = now_mono_ns();

	if (!force && now - s->last_stats < STATS_EVERY_NS)
		return;
	log_conns(s, force);
	log_emitters_unlogged(s, now, force);
	ingest_get_stats(s->in, &is);
	if (!force && is.samples == s->last_stats_samples) {
		s->last_stats = now;
		return;
	}
	if (!s->o->quiet || force)
		fprintf(stderr,
		    "vitalsd: stored %llu samples in %llu batches "
		    "(%llu commits), %llu duplicate batches, %llu refused, "
		    "%llu malformed messages, %llu series, %llu samples "
		    "refused past a series cap, %llu refused by emitters "
		    "(bad names, name table full)\n",
		    (unsigned long long) is.samples,
		    (unsigned long long) is.batches,
		    (unsigned long long) is.commits,
		    (unsigned long long) is.duplicates,
		    (unsigned long long) is.rejected,
		    (unsigned long long) s->malformed,
		    (unsigned long long) is.series,
		    (unsigned long long) is.refused,
		    (unsigned long long) is.emitter_refused);
	s->last_stats         = now;
	s->last_stats_samples = is.samples;
}

static int
open_socket(srv *s, void *ctx, auth *au)
{
	int     hwm = 10000, linger = 1000, rcvhwm = RCVHWM;
	/* A handshake must end within HANDSHAKE_MS. No heartbeats of ours:
	 * libzmq 4.3.4 asserts (stream_engine_base.cpp, !_io_error) when a
	 * heartbeat timer fires on a connection that closed while its input
	 * was stopped by RCVHWM, which a sender faster than the store makes
	 * routine. A peer gone without closing sends nothing, so conns'
	 * idle timeout closes it. */
	int     hs = HANDSHAKE_MS;
	int64_t maxmsg = (int64_t) s->o->max_message;
	char    err[256];

	s->sock = zmq_socket(ctx, ZMQ_ROUTER);
	if (s->sock == NULL)
		return -1;
	zmq_setsockopt(s->sock, ZMQ_RCVHWM, &rcvhwm, sizeof(rcvhwm));
	zmq_setsockopt(s->sock, ZMQ_HANDSHAKE_IVL, &hs, sizeof(hs));
	zmq_setsockopt(s->sock, ZMQ_SNDHWM, &hwm, sizeof(hwm));
	zmq_setsockopt(s->sock, ZMQ_LINGER, &linger, sizeof(linger));
	/* A peer sending more than a batch can hold is disconnected by
	 * ZeroMQ before the message is read into memory. */
	zmq_setsockopt(s->sock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof(maxmsg));
	if (au != NULL && auth_apply(au, ctx, s->sock, err, sizeof(err)) != 0) {
		fprintf(stderr, "vitalsd: %s\n", err);
		return -1;
	}
	{
		conns_opts co = s->o->conns;

		if (au != NULL) {
			co.on_event = auth_monitor_event;
			co.arg      = au;
		}
		if (conns_open(ctx, s->sock, &co, &s->cn, err, sizeof(err))
		    != 0) {
			fprintf(stderr, "vitalsd: %s\n", err);
			return -1;
		}
	}
	if (zmq_bind(s->sock, s->o->listen) != 0) {
		fprintf(stderr, "vitalsd: cannot listen on %s: %s\n",
		    s->o->listen, zmq_strerror(zmq_errno()));
		return -1;
	}
	return 0;
}

int
server_run(const server_opts *o, store *st, ingest *in, alerting *al,
    volatile sig_atomic_t *stop, volatile sig_atomic_t *reload)
{
	srv   s   = { 0 };
	void *ctx = zmq_ctx_new();
	auth *au  = NULL;
	char  err[1400];
	int   ret = 1;

	s.o  = o;
	s.wait_ns = (int64_t) o->commit_ms * 1000000;
	s.st = st;
	s.in = in;
	s.al = al;
	s.p  = calloc(MAX_PENDING + 1, sizeof(pend));
	if (ctx == NULL || s.p == NULL) {
		fprintf(stderr, "vitalsd: out of memory\n");
		goto out;
	}
	/* The ZAP handler first: a CURVE socket bound without one would
	 * accept every client key. */
	if (o->curve_secret != NULL
	    && auth_open(ctx, o->curve_secret, o->allow, &au, err, sizeof(err))
	        != 0) {
		fprintf(stderr, "vitalsd: %s\n", err);
		goto out;
	}
	if (open_socket(&s, ctx, au) != 0)
		goto out;
	s.last_stats = now_mono_ns();
	if (au != NULL)
		fprintf(stderr,
		    "vitalsd: CURVE on: server public key %s, %zu client "
		    "keys allowed by %s\n",
		    auth_public_key(au), auth_allowed(au), o->allow);
	fprintf(stderr, "vitalsd: listening on %s, storing in %s\n",
	    o->listen, store_dir(st));

	while (!*stop) {
		zmq_pollitem_t item = { s.sock, 0, ZMQ_POLLIN, 0 };
		long           timeout;
		int            got = 0, r;

		if (*reload) {
			*reload = 0;
			if (al != NULL)
				alerting_reload(al);
			auth_reload(au);
		}
		if (s.blocked) {
			/* Read nothing until the store takes writes again. */
			conns_reading(s.cn, 0, 0);
			zmq_poll(NULL, 0, RETRY_MS);
			if (!*stop)
				commit_group(&s);
			continue;
		}
		if (s.n > 0) {
			int64_t left = s.urgent
			    ? 0
			    : s.first_ns + s.wait_ns - now_mono_ns();
			timeout = left > 0 ? left / 1000000 : 0;
		} else {
			timeout = 200;
		}
		conns_reading(s.cn, 1, now_mono_ns());
		if (zmq_poll(&item, 1, timeout) < 0 && zmq_errno() != EINTR)
			break;
		/* ZeroMQ hands out one message per connection in turn, so
		 * the byte budget is shared fairly between senders; past it
		 * the group is committed and reading waits meanwhile. */
		while (s.n < MAX_PENDING && s.samples < o->commit_samples &&
		    s.bytes < o->pending_bytes &&
		    (r = receive_one(&s)) >= 0)
			got += r;
		if (s.n > 0 &&
		    (got == 0 || s.n >= MAX_PENDING ||
			s.samples >= o->commit_samples ||
			s.bytes >= o->pending_bytes || s.urgent ||
			now_mono_ns() - s.first_ns >= s.wait_ns))
			commit_group(&s);
		tick(&s);
		reap_readers(&s);
		log_stats(&s, 0);
	}
	/* Stopping: take what already arrived, commit, acknowledge. */
	while (s.n < MAX_PENDING && receive_one(&s) >= 0)
		;
	if (s.n > 0 && commit_group(&s) != 0) {
		fprintf(stderr,
		    "vitalsd: stopping with %zu batches not stored; their "
		    "emitters still hold them\n",
		    s.n);
		free_pending(&s);
		goto out;
	}
	/* Alerts of the last batches are stored before we go. */
	if (al != NULL) {
		alerting_drain(al);
		store_alerts(&s);
	}
	log_stats(&s, 1);
	ret = 0;
out:
	free_pending(&s);
	free(s.p);
	if (s.sock != NULL)
		zmq_close(s.sock);
	conns_close(s.cn);
	auth_close(au);
	if (ctx != NULL)
		zmq_ctx_term(ctx);
	return ret;
}
