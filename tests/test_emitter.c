/*
 * Tests of the emitter (include/vitals.h) against a mock collector: a
 * ZeroMQ ROUTER bound on an ipc:// endpoint in a fresh temporary folder,
 * run on a thread of this process, that decodes batches with
 * wire_batch_decode() and answers with wire_ack_encode(). Its record of
 * what it received survives a "restart" (closing and binding again), like
 * the store of a real collector.
 *
 * Timeouts here are bounds on hanging, never speed requirements: each
 * wait polls for the expected state and gives up after several seconds.
 */
#include "vitals.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "emitter/clock.h"
#include "tests/harness.h"
#include "wire/wire.h"

/* ---- helpers ----------------------------------------------------------- */

static char tmpdir[64];

static void
endpoint(char *buf, size_t size, const char *name)
{
	snprintf(buf, size, "ipc://%s/%s", tmpdir, name);
}

static int64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t
real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t) ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void
sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long) (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static uint64_t
bits_of(double v)
{
	uint64_t b;

	memcpy(&b, &v, 8);
	return b;
}

static double
double_of(uint64_t b)
{
	double v;

	memcpy(&v, &b, 8);
	return v;
}

/* ---- the mock collector ------------------------------------------------ */

enum mock_mode {
	MOCK_STORE,      /* store new batches, ack STORED; DUPLICATE if seen */
	MOCK_SILENT,     /* record receptions only: no store, no ack */
	MOCK_LOSE_FIRST, /* store, but lose the first ack of each batch */
	MOCK_DUPLICATE,  /* ack everything DUPLICATE without storing */
	MOCK_SLOW,       /* as MOCK_STORE, each ACK sent 600 ms late */
};

#define SLOW_ACK_MS 600
#define MAX_LATE 4096

typedef struct rx_sample {
	uint64_t inc;
	uint32_t pid;
	char     name[64];
	uint64_t step;
	int64_t  time_ns;
	uint64_t bits;
} rx_sample;

typedef struct rx_batch {
	uint64_t inc, seq, floor, dropped, start_ns;
	uint32_t nsamples, pid, flags;
	int32_t  rank, local_rank, world_size;
	int      stored; /* this reception was stored */
	char     run[WIRE_RUN_MAX + 1];
	char     host[WIRE_HOST_MAX + 1];
} rx_batch;

/* What the collector stored and saw; survives restarts. */
typedef struct rx {
	pthread_mutex_t mu;
	rx_sample      *s;
	size_t          ns, caps;
	rx_batch       *b; /* every reception, in order */
	size_t          nb, capb;
	size_t          stored_batches;
	size_t          malformed;
} rx;

/* An ACK the slow mock owes. */
typedef struct late_ack {
	uint8_t  id[256];
	size_t   idlen;
	uint64_t inc, seq;
	uint32_t status;
	int64_t  due_ms;
} late_ack;

typedef struct mock {
	rx        *rx;
	int        mode;
	late_ack  *late; /* MOCK_SLOW: FIFO of owed ACKs */
	size_t     nlate;
	void      *ctx, *sock;
	pthread_t  th;
	atomic_int stop;
} mock;

/* Mocks serving now: a test that leaves at a failed REQUIRE has them
 * stopped after it (tests keep their mocks in static storage). */
static mock *serving[4];

static void
rx_init(rx *r)
{
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->mu, NULL);
}

static void
rx_free(rx *r)
{
	free(r->s);
	free(r->b);
	pthread_mutex_destroy(&r->mu);
}

/* Receptions of (inc, seq) before this one; caller holds the lock. */
static size_t
seen_count(const rx *r, uint64_t inc, uint64_t seq)
{
	size_t n = 0;

	for (size_t i = 0; i < r->nb; i++)
		if (r->b[i].inc == inc && r->b[i].seq == seq)
			n++;
	return n;
}

/* Whether reception i is the first of its (inc, seq); caller locks. */
static int
first_reception(const rx *r, size_t i)
{
	for (size_t j = 0; j < i; j++)
		if (r->b[j].inc == r->b[i].inc && r->b[j].seq == r->b[i].seq)
			return 0;
	return 1;
}

static void
store_samples(rx *r, const wire_batch *b)
{
	const char *names[4096];
	size_t      lens[4096];
	size_t      off = 0, len;
	const char *nm;
	uint16_t    k = 0;

	while (k < 4096 && (nm = wire_names_next(b, &off, &len)) != NULL) {
		names[k]  = nm;
		lens[k++] = len;
	}
	for (uint32_t i = 0; i < b->nsamples; i++) {
		wire_sample ws;
		rx_sample  *s;

		wire_batch_sample(b, i, &ws);
		if (r->ns == r->caps) {
			r->caps = r->caps ? r->caps * 2 : 1024;
			r->s    = realloc(r->s, r->caps * sizeof(*r->s));
		}
		s      = &r->s[r->ns++];
		s->inc = b->id.incarnation;
		s->pid = b->id.pid;
		len    = lens[ws.name] < 63 ? lens[ws.name] : 63;
		memcpy(s->name, names[ws.name], len);
		s->name[len] = '\0';
		s->step      = ws.step;
		s->time_ns   = ws.time_ns;
		s->bits      = bits_of(ws.value);
	}
}

static void
reply_to(mock *m, const void *id, size_t idlen, uint64_t inc, uint64_t seq,
    uint32_t status)
{
	uint8_t  buf[WIRE_ACK_SIZE];
	wire_ack a = { status, inc, seq };

	wire_ack_encode(buf, &a);
	zmq_send(m->sock, id, idlen, ZMQ_SNDMORE);
	zmq_send(m->sock, buf, sizeof(buf), 0);
}

static void
reply(mock *m, zmq_msg_t *id, uint64_t inc, uint64_t seq, uint32_t status)
{
	late_ack *l;

	if (m->mode != MOCK_SLOW) {
		reply_to(
		    m, zmq_msg_data(id), zmq_msg_size(id), inc, seq, status);
		return;
	}
	if (m->nlate == MAX_LATE || zmq_msg_size(id) > sizeof(l->id))
		return;
	l        = &m->late[m->nlate++];
	l->idlen = zmq_msg_size(id);
	memcpy(l->id, zmq_msg_data(id), l->idlen);
	l->inc    = inc;
	l->seq    = seq;
	l->status = status;
	l->due_ms = mono_ms() + SLOW_ACK_MS;
}

static void
send_late(mock *m)
{
	size_t k = 0;

	while (k < m->nlate && m->late[k].due_ms <= mono_ms()) {
		late_ack *l = &m->late[k++];

		reply_to(m, l->id, l->idlen, l->inc, l->seq, l->status);
	}
	memmove(m->late, m->late + k, (m->nlate - k) * sizeof(*m->late));
	m->nlate -= k;
}

static void
handle(mock *m, zmq_msg_t *id, zmq_msg_t *body)
{
	rx        *r = m->rx;
	wire_batch b;
	char       err[256];
	rx_batch  *rb;
	int        ack = -1;

	pthread_mutex_lock(&r->mu);
	if (wire_batch_decode(
	        zmq_msg_data(body), zmq_msg_size(body), &b, err, sizeof(err))
	    != 0) {
		r->malformed++;
		pthread_mutex_unlock(&r->mu);
		return;
	}
	if (r->nb == r->capb) {
		r->capb = r->capb ? r->capb * 2 : 256;
		r->b    = realloc(r->b, r->capb * sizeof(*r->b));
	}
	rb             = &r->b[r->nb++];
	rb->inc        = b.id.incarnation;
	rb->seq        = b.seq;
	rb->floor      = b.floor;
	rb->dropped    = b.dropped;
	rb->start_ns   = b.id.start_ns;
	rb->nsamples   = b.nsamples;
	rb->flags      = b.flags;
	rb->pid        = b.id.pid;
	rb->rank       = b.id.rank;
	rb->local_rank = b.id.local_rank;
	rb->world_size = b.id.world_size;
	memcpy(rb->run, b.id.run, b.id.run_len);
	rb->run[b.id.run_len] = '\0';
	memcpy(rb->host, b.id.host, b.id.host_len);
	rb->host[b.id.host_len] = '\0';

	rb->stored = 0;

	/* A batch is a duplicate if an earlier reception was stored (a
	 * silent mock stores nothing: what it saw does not count). */
	switch (m->mode) {
	case MOCK_STORE:
	case MOCK_SLOW:
	case MOCK_LOSE_FIRST: {
		size_t stored_before = 0;

		for (size_t i = 0; i + 1 < r->nb; i++)
			if (r->b[i].inc == b.id.incarnation
			    && r->b[i].seq == b.seq && r->b[i].stored)
				stored_before++;
		if (stored_before == 0) {
			store_samples(r, &b);
			r->stored_batches++;
			rb->stored = 1;
			if (m->mode != MOCK_LOSE_FIRST)
				ack = WIRE_ACK_STORED;
		} else {
			ack = WIRE_ACK_DUPLICATE;
		}
		break;
	}
	case MOCK_DUPLICATE:
		ack = WIRE_ACK_DUPLICATE;
		break;
	default:
		break;
	}
	pthread_mutex_unlock(&r->mu);
	if (ack >= 0)
		reply(m, id, b.id.incarnation, b.seq, (uint32_t) ack);
}

static void *
mock_main(void *arg)
{
	mock *m = arg;

	while (!atomic_load(&m->stop)) {
		zmq_pollitem_t it = { m->sock, 0, ZMQ_POLLIN, 0 };
		zmq_msg_t      id, body;

		if (m->late != NULL)
			send_late(m);
		if (zmq_poll(&it, 1, 10) <= 0)
			continue;
		zmq_msg_init(&id);
		zmq_msg_init(&body);
		if (zmq_msg_recv(&id, m->sock, ZMQ_DONTWAIT) >= 0
		    && zmq_msg_more(&id)
		    && zmq_msg_recv(&body, m->sock, 0) >= 0)
			handle(m, &id, &body);
		zmq_msg_close(&id);
		zmq_msg_close(&body);
	}
	zmq_close(m->sock);
	return NULL;
}

/* Bind a ROUTER on ep and serve it on a thread. Returns 0 or -1. */
static int
mock_start(mock *m, rx *r, const char *ep, int mode)
{
	int zero = 0;

	memset(m, 0, sizeof(*m));
	m->rx   = r;
	m->mode = mode;
	if (mode == MOCK_SLOW)
		m->late = calloc(MAX_LATE, sizeof(*m->late));
	m->ctx  = zmq_ctx_new();
	m->sock = zmq_socket(m->ctx, ZMQ_ROUTER);
	zmq_setsockopt(m->sock, ZMQ_LINGER, &zero, sizeof(zero));
	if (zmq_bind(m->sock, ep) != 0) {
		printf("  bind %s: %s\n", ep, zmq_strerror(zmq_errno()));
		zmq_close(m->sock);
		zmq_ctx_term(m->ctx);
		return -1;
	}
	atomic_init(&m->stop, 0);
	pthread_create(&m->th, NULL, mock_main, m);
	for (size_t i = 0; i < sizeof(serving) / sizeof(serving[0]); i++)
		if (serving[i] == NULL) {
			serving[i] = m;
			break;
		}
	return 0;
}

/* Close the ROUTER, as a collector that dies would. */
static void
mock_stop(mock *m)
{
	atomic_store(&m->stop, 1);
	pthread_join(m->th, NULL);
	zmq_ctx_term(m->ctx);
	free(m->late);
	for (size_t i = 0; i < sizeof(serving) / sizeof(serving[0]); i++)
		if (serving[i] == m)
			serving[i] = NULL;
}

static void
stop_serving(void)
{
	for (size_t i = 0; i < sizeof(serving) / sizeof(serving[0]); i++)
		if (serving[i] != NULL)
			mock_stop(serving[i]);
}

static size_t
rx_nsamples(rx *r)
{
	size_t n;

	pthread_mutex_lock(&r->mu);
	n = r->ns;
	pthread_mutex_unlock(&r->mu);
	return n;
}

static size_t
rx_nbatches(rx *r)
{
	size_t n;

	pthread_mutex_lock(&r->mu);
	n = r->nb;
	pthread_mutex_unlock(&r->mu);
	return n;
}

/* Wait until the mock stored at least n samples; 1 if it did. */
static int
wait_samples(rx *r, size_t n, unsigned timeout_ms)
{
	int64_t end = mono_ms() + timeout_ms;

	while (rx_nsamples(r) < n) {
		if (mono_ms() > end)
			return 0;
		sleep_ms(5);
	}
	return 1;
}

/* Index of the stored sample named name at step, or -1. */
static long
rx_find(rx *r, const char *name, uint64_t step)
{
	long found = -1;

	pthread_mutex_lock(&r->mu);
	for (size_t i = 0; i < r->ns; i++)
		if (r->s[i].step == step && strcmp(r->s[i].name, name) == 0) {
			found = (long) i;
			break;
		}
	pthread_mutex_unlock(&r->mu);
	return found;
}

static uint64_t
rx_max_dropped(rx *r, uint64_t inc)
{
	uint64_t d = 0;

	pthread_mutex_lock(&r->mu);
	for (size_t i = 0; i < r->nb; i++)
		if (r->b[i].inc == inc && r->b[i].dropped > d)
			d = r->b[i].dropped;
	pthread_mutex_unlock(&r->mu);
	return d;
}

static vt_emitter *
open_to(const char *ep, unsigned close_ms)
{
	vt_opts     o;
	vt_emitter *em = NULL;

	vt_opts_init(&o);
	o.endpoint          = ep;
	o.run               = "test-run";
	o.host              = "test-host";
	o.rank              = 2;
	o.local_rank        = 1;
	o.world_size        = 4;
	o.flush_interval_ms = 10;
	o.close_timeout_ms  = close_ms;
	if (vt_open(&o, &em) != 0)
		return NULL;
	return em;
}

/* ---- tests ------------------------------------------------------------- */

TEST(values_names_identity_roundtrip)
{
	char         ep[128];
	static rx    r;
	static mock  m;
	vt_emitter  *em;
	vt_stats     st;
	const double vals[] = { 0.0, -0.0, 1.5, -2.25e300, 5e-324, NAN, -NAN,
		INFINITY, -INFINITY, double_of(0x7ff0000000000abcull),
		double_of(0xfff8dead0000beefull) };
	const size_t nv     = sizeof(vals) / sizeof(vals[0]);

	rx_init(&r);
	endpoint(ep, sizeof(ep), "rt.sock");
	REQUIRE(mock_start(&m, &r, ep, MOCK_STORE) == 0);
	em = open_to(ep, 1000);
	REQUIRE(em != NULL);
	for (size_t i = 0; i < nv; i++) {
		CHECK_EQ_INT(vt_emit(em, "loss", 100 + i, vals[i]), 0);
		CHECK_EQ_INT(vt_emit(em, "grad/norm λ", UINT64_MAX - i,
		                 vals[nv - 1 - i]),
		    0);
	}
	CHECK_EQ_INT(vt_emit_at(em, "explicit", 7, -123456789, 3.0), 0);
	CHECK_EQ_INT(vt_flush(em, 10000), 0);
	CHECK_EQ_INT(rx_nsamples(&r), 2 * nv + 1);
	for (size_t i = 0; i < nv; i++) {
		long a = rx_find(&r, "loss", 100 + i);
		long b = rx_find(&r, "grad/norm λ", UINT64_MAX - i);

		REQUIRE(a >= 0 && b >= 0);
		CHECK(r.s[a].bits == bits_of(vals[i]));
		CHECK(r.s[b].bits == bits_of(vals[nv - 1 - i]));
		CHECK(r.s[a].inc == vt_incarnation(em));
		CHECK(r.s[a].pid == (uint32_t) getpid());
	}
	{
		long e = rx_find(&r, "explicit", 7);

		REQUIRE(e >= 0);
		CHECK(r.s[e].time_ns == -123456789);
		CHECK(r.s[e].bits == bits_of(3.0));
	}
	pthread_mutex_lock(&r.mu);
	REQUIRE(r.nb >= 1);
	for (size_t i = 0; i < r.nb; i++) {
		rx_batch *b = &r.b[i];

		CHECK(b->seq == i + 1); /* from 1, by one, none resent */
		CHECK(b->floor >= 1 && b->floor <= b->seq);
		CHECK(strcmp(b->run, "test-run") == 0);
		CHECK(strcmp(b->host, "test-host") == 0);
		CHECK(
		    b->rank == 2 && b->local_rank == 1 && b->world_size == 4);
		CHECK(b->pid == (uint32_t) getpid());
		CHECK(b->inc == vt_incarnation(em));
		CHECK(b->dropped == 0);
		CHECK(llabs((long long) b->start_ns - real_ns())
		    < 60000000000LL);
	}
	CHECK(r.malformed == 0);
	pthread_mutex_unlock(&r.mu);
	vt_get_stats(em, &st);
	CHECK_EQ_INT(st.logged, 2 * nv + 1);
	CHECK_EQ_INT(st.acked, 2 * nv + 1);
	CHECK_EQ_INT(st.sent, 2 * nv + 1);
	CHECK_EQ_INT(st.pending, 0);
	CHECK_EQ_INT(st.dropped, 0);
	CHECK_EQ_INT(st.rejected, 0);
	vt_close(em);
	mock_stop(&m);
	rx_free(&r);
}

TEST(invalid_arguments_and_names)
{
	char        ep[128];
	vt_emitter *em;
	vt_opts     o;
	char        longname[VT_NAME_MAX + 2];
	char        maxname[VT_NAME_MAX + 1];
	char        longrun[VT_RUN_MAX + 2];

	endpoint(ep, sizeof(ep), "nobody.sock");
	em = open_to(ep, 0);
	REQUIRE(em != NULL);
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	memset(maxname, 'b', sizeof(maxname) - 1);
	maxname[sizeof(maxname) - 1] = '\0';

	CHECK_EQ_INT(vt_emit(em, "", 1, 1.0), VT_ENAME);
	CHECK_EQ_INT(vt_emit(em, "a\nb", 1, 1.0), VT_ENAME);
	CHECK_EQ_INT(vt_emit(em, "tab\there", 1, 1.0), VT_ENAME);
	CHECK_EQ_INT(vt_emit(em, "del\x7f", 1, 1.0), VT_ENAME);
	CHECK_EQ_INT(vt_emit(em, "bad\xff utf8", 1, 1.0), VT_ENAME);
	CHECK_EQ_INT(vt_emit(em, "overlong\xc0\xaf", 1, 1.0), VT_ENAME);
	CHECK_EQ_INT(vt_emit(em, "cut\xe2\x82", 1, 1.0), VT_ENAME);
	CHECK_EQ_INT(vt_emit(em, longname, 1, 1.0), VT_ENAME);
	CHECK(strstr(vt_errmsg(em), "255") != NULL);
	CHECK_EQ_INT(vt_emit(em, "a\x01z", 1, 1.0), VT_ENAME);
	CHECK(strstr(vt_errmsg(em), "a\\x01z") != NULL);
	CHECK_EQ_INT(vt_emit(em, maxname, 1, 1.0), 0);
	CHECK_EQ_INT(vt_emit(em, "€/ok", 1, 1.0), 0);
	CHECK_EQ_INT(vt_emit(em, NULL, 1, 1.0), VT_EINVAL);
	CHECK_EQ_INT(vt_emit(NULL, "x", 1, 1.0), VT_EINVAL);
	CHECK_EQ_INT(vt_emit_at(NULL, "x", 1, 0, 1.0), VT_EINVAL);
	CHECK_EQ_INT(vt_flush(NULL, 0), VT_EINVAL);
	CHECK(vt_errmsg(NULL) != NULL);
	vt_close(em);
	vt_close(NULL);

	CHECK_EQ_INT(vt_open(NULL, NULL), VT_EINVAL);
	vt_opts_init(&o);
	o.endpoint = ep;
	o.run      = "";
	em         = (vt_emitter *) 1;
	CHECK_EQ_INT(vt_open(&o, &em), VT_ENAME);
	CHECK(em == NULL);
	o.run = "two\nlines";
	CHECK_EQ_INT(vt_open(&o, &em), VT_ENAME);
	memset(longrun, 'r', sizeof(longrun) - 1);
	longrun[sizeof(longrun) - 1] = '\0';
	o.run                        = longrun;
	CHECK_EQ_INT(vt_open(&o, &em), VT_ENAME);
	o.run  = "ok";
	o.host = "bad\x01host";
	CHECK_EQ_INT(vt_open(&o, &em), VT_ENAME);
	o.host = NULL;
	o.rank = -2;
	CHECK_EQ_INT(vt_open(&o, &em), VT_EINVAL);
	o.rank       = -1;
	o.world_size = 0;
	CHECK_EQ_INT(vt_open(&o, &em), VT_EINVAL);
	o.world_size = -1;
	o.endpoint   = "bogus://nowhere";
	CHECK_EQ_INT(vt_open(&o, &em), VT_ETRANSPORT);
	CHECK(em == NULL);
	o.endpoint = "tcp://";
	CHECK_EQ_INT(vt_open(&o, &em), VT_ETRANSPORT);

	for (int c = VT_OK; c <= VT_ECLOSED; c++)
		CHECK(vt_strerror(c) != NULL && vt_strerror(c)[0] != '\0');
	CHECK(strcmp(vt_strerror(9999), "unknown error code") == 0);
	CHECK(vt_version() == VT_VERSION_NUM);
	CHECK(vt_version() == 0x000100);
}

TEST(opts_defaults_from_environment)
{
	vt_opts o;

	setenv("VITALS_MAX_BUFFER", "8M", 1);
	setenv("VITALS_CLOSE_TIMEOUT_MS", "250", 1);
	vt_opts_init(&o);
	CHECK(o.max_buffer_bytes == (size_t) 8 << 20);
	CHECK(o.close_timeout_ms == 250);
	CHECK(o.flush_interval_ms == 50);
	CHECK(o.rank == -1 && o.local_rank == -1 && o.world_size == -1);
	CHECK(o.endpoint == NULL && o.run == NULL && o.host == NULL);
	setenv("VITALS_MAX_BUFFER", "lots", 1);
	setenv("VITALS_CLOSE_TIMEOUT_MS", "-5", 1);
	vt_opts_init(&o);
	CHECK(o.max_buffer_bytes == (size_t) 64 << 20);
	CHECK(o.close_timeout_ms == 1000);
	unsetenv("VITALS_MAX_BUFFER");
	unsetenv("VITALS_CLOSE_TIMEOUT_MS");
}

/* Identity from the environment, through the first batch's header. */
static int
ident_via_env(const char *ep, rx *r, rx_batch *out)
{
	vt_emitter *em;
	vt_opts     o;
	size_t      nb = rx_nbatches(r);
	int         ok;

	vt_opts_init(&o);
	o.endpoint = ep;
	if (vt_open(&o, &em) != 0)
		return 0;
	ok = vt_emit(em, "x", 1, 1.0) == 0 && vt_flush(em, 10000) == 0;
	pthread_mutex_lock(&r->mu);
	ok = ok && r->nb > nb;
	if (ok)
		*out = r->b[r->nb - 1];
	pthread_mutex_unlock(&r->mu);
	vt_close(em);
	return ok;
}

TEST(identity_from_environment)
{
	static const char *vars[] = { "VITALS_RUN", "TORCHELASTIC_RUN_ID",
		"SLURM_JOB_ID", "RANK", "LOCAL_RANK", "WORLD_SIZE",
		"SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS" };
	char               ep[128];
	static rx          r;
	static mock        m;
	rx_batch           b;
	char               host[256];

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	rx_init(&r);
	endpoint(ep, sizeof(ep), "id.sock");
	REQUIRE(mock_start(&m, &r, ep, MOCK_STORE) == 0);

	setenv("VITALS_RUN", "env-run", 1);
	setenv("TORCHELASTIC_RUN_ID", "te-run", 1);
	setenv("RANK", "3", 1);
	setenv("LOCAL_RANK", "1", 1);
	setenv("WORLD_SIZE", "8", 1);
	REQUIRE(ident_via_env(ep, &r, &b));
	CHECK(strcmp(b.run, "env-run") == 0);
	CHECK(b.rank == 3 && b.local_rank == 1 && b.world_size == 8);
	gethostname(host, sizeof(host));
	host[sizeof(host) - 1] = '\0';
	CHECK(strcmp(b.host, host) == 0);

	unsetenv("VITALS_RUN");
	REQUIRE(ident_via_env(ep, &r, &b));
	CHECK(strcmp(b.run, "te-run") == 0);

	/* torchrun's placeholder "none" and malformed ranks are skipped. */
	setenv("TORCHELASTIC_RUN_ID", "none", 1);
	setenv("SLURM_JOB_ID", "4242", 1);
	setenv("RANK", "3x", 1);
	setenv("LOCAL_RANK", "", 1);
	setenv("WORLD_SIZE", "99999999999999999999", 1);
	setenv("SLURM_PROCID", "5", 1);
	setenv("SLURM_LOCALID", "1", 1);
	setenv("SLURM_NTASKS", "16", 1);
	REQUIRE(ident_via_env(ep, &r, &b));
	CHECK(strcmp(b.run, "slurm-4242") == 0);
	CHECK(b.rank == 5 && b.local_rank == 1 && b.world_size == 16);

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	REQUIRE(ident_via_env(ep, &r, &b));
	CHECK(b.rank == 0 && b.local_rank == 0 && b.world_size == 1);
	{
		/* "<command>-<YYYYmmdd-HHMMSS>" of this process's start. */
		const char *dash = strrchr(b.run, '-');
		struct tm   tm;
		time_t      now = time(NULL), t;

		char  comm[64] = "";
		FILE *f        = fopen("/proc/self/comm", "r");

		if (f != NULL) {
			if (fgets(comm, sizeof(comm), f) == NULL)
				comm[0] = '\0';
			fclose(f);
		}
		comm[strcspn(comm, "\n")] = '\0';
		REQUIRE(dash != NULL && dash - b.run > 9);
		CHECK(strlen(comm) > 0
		    && strncmp(b.run, comm, strlen(comm)) == 0
		    && b.run[strlen(comm)] == '-');
		memset(&tm, 0, sizeof(tm));
		REQUIRE(strptime(dash - 8, "%Y%m%d-%H%M%S", &tm) != NULL);
		t = timegm(&tm);
		CHECK(t <= now + 1 && t >= now - 3600);
	}

	setenv("VITALS_RUN", "bad\nrun", 1);
	{
		vt_emitter *em = (vt_emitter *) 1;
		vt_opts     o;

		vt_opts_init(&o);
		o.endpoint = ep;
		CHECK_EQ_INT(vt_open(&o, &em), VT_ENAME);
		CHECK(em == NULL);
	}
	unsetenv("VITALS_RUN");
	mock_stop(&m);
	rx_free(&r);
}

/* The batches one emitter sent, from reception nb on: 1 if every one
 * carries incarnation inc, a floor of at least first and seqs first,
 * first + 1, ... (resends aside), each stored on first reception. */
static int
sent_as(rx *r, size_t nb, uint64_t inc, uint64_t first)
{
	uint64_t next = first;
	int      ok   = 1;

	pthread_mutex_lock(&r->mu);
	ok = r->nb > nb;
	for (size_t i = nb; i < r->nb && ok; i++) {
		if (r->b[i].inc != inc || r->b[i].seq > next
		    || r->b[i].seq < first || r->b[i].floor < first)
			ok = 0;
		/* Each first reception of a seq stored, not discarded as
		 * a duplicate of an earlier open. */
		if (r->b[i].seq == next) {
			ok = ok && r->b[i].stored;
			next++;
		}
	}
	pthread_mutex_unlock(&r->mu);
	return ok;
}

/*
 * vt_open_continue() continues an emitter across opens (as `vitals emit`
 * does); vt_open() is vt_open_continue() with zeros: a new random
 * incarnation, batches from 1.
 */
TEST(incarnation_and_first_seq_continue_an_emitter)
{
	char        ep[128];
	static rx   r;
	static mock m;
	vt_emitter *em;
	vt_opts     o;
	uint64_t    inc;
	size_t      nb;

	rx_init(&r);
	endpoint(ep, sizeof(ep), "cont.sock");
	REQUIRE(mock_start(&m, &r, ep, MOCK_STORE) == 0);

	vt_opts_init(&o);
	o.endpoint         = ep;
	o.run              = "cont";
	o.max_buffer_bytes = 1 << 20;
	o.close_timeout_ms = 2000;
	nb                 = rx_nbatches(&r);
	REQUIRE(vt_open(&o, &em) == 0);
	inc = vt_incarnation(em);
	CHECK(inc != 0);
	CHECK(vt_emit(em, "x", 1, 1.0) == 0 && vt_flush(em, 10000) == 0);
	vt_close(em);
	CHECK(sent_as(&r, nb, inc, 1));

	/* The same incarnation, continued from batch 50. */
	nb = rx_nbatches(&r);
	REQUIRE(vt_open_continue(&o, inc, 50, &em) == 0);
	CHECK(vt_incarnation(em) == inc);
	CHECK(vt_emit(em, "x", 2, 2.0) == 0 && vt_flush(em, 10000) == 0);
	vt_close(em);
	CHECK(sent_as(&r, nb, inc, 50));

	/* A first batch number needs the incarnation it continues, and
	 * stays below 2^63. */
	em = (vt_emitter *) 1;
	CHECK_EQ_INT(vt_open_continue(&o, 0, 5, &em), VT_EINVAL);
	CHECK(em == NULL);
	CHECK_EQ_INT(
	    vt_open_continue(&o, inc, (uint64_t) 1 << 63, &em), VT_EINVAL);
	mock_stop(&m);
	rx_free(&r);
}

#define NTHREADS 4
#define PER_THREAD 50000

typedef struct thr_arg {
	vt_emitter *em;
	int         k;
	int         fails;
} thr_arg;

static void *
thr_log(void *p)
{
	thr_arg *a = p;
	char     name[16];

	snprintf(name, sizeof(name), "thr%d", a->k);
	for (uint64_t i = 0; i < PER_THREAD; i++) {
		int rc;

		/* A full ring is not expected (the cap holds all), but a
		 * slow CI machine may starve the I/O thread: retry. */
		while ((rc = vt_emit(a->em, name, i,
		            (double) (i * NTHREADS + (uint64_t) a->k)))
		    == VT_EFULL)
			sleep_ms(1);
		if (rc != 0)
			a->fails++;
	}
	return NULL;
}

/*
 * The samples r received against a grid: names prefix<k>suffix for k
 * below names, steps below steps, each valued step * names + k. None is
 * off the grid or wrong, none came twice, none is missing.
 */
static void
check_grid(
    rx *r, const char *prefix, const char *suffix, int names, uint64_t steps)
{
	size_t   pl = strlen(prefix), dup = 0, bad = 0, missing = 0;
	uint8_t *seen = calloc((size_t) names * steps, 1);

	REQUIRE(seen != NULL);
	pthread_mutex_lock(&r->mu);
	for (size_t i = 0; i < r->ns; i++) {
		const char *nm  = r->s[i].name;
		char       *end = NULL;
		long        k   = -1;
		uint64_t    s   = r->s[i].step;

		if (strncmp(nm, prefix, pl) == 0)
			k = strtol(nm + pl, &end, 10);
		if (k < 0 || k >= names || strcmp(end, suffix) != 0
		    || s >= steps
		    || r->s[i].bits
		        != bits_of(
		            (double) (s * (uint64_t) names + (uint64_t) k))) {
			bad++;
			continue;
		}
		if (seen[s * (uint64_t) names + (uint64_t) k]++)
			dup++;
	}
	pthread_mutex_unlock(&r->mu);
	for (size_t i = 0; i < (size_t) names * steps; i++)
		missing += seen[i] == 0;
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_INT(dup, 0);
	CHECK_EQ_INT(missing, 0);
	free(seen);
}

TEST(four_threads_every_sample_once)
{
	char        ep[128];
	static rx   r;
	static mock m;
	vt_emitter *em;
	pthread_t   th[NTHREADS];
	thr_arg     args[NTHREADS];
	vt_stats    st;

	rx_init(&r);
	endpoint(ep, sizeof(ep), "mt.sock");
	REQUIRE(mock_start(&m, &r, ep, MOCK_STORE) == 0);
	em = open_to(ep, 1000);
	REQUIRE(em != NULL);
	for (int k = 0; k < NTHREADS; k++) {
		args[k] = (thr_arg) { em, k, 0 };
		pthread_create(&th[k], NULL, thr_log, &args[k]);
	}
	for (int k = 0; k < NTHREADS; k++) {
		pthread_join(th[k], NULL);
		CHECK_EQ_INT(args[k].fails, 0);
	}
	CHECK_EQ_INT(vt_flush(em, 20000), 0);
	vt_get_stats(em, &st);
	check_grid(&r, "thr", "", NTHREADS, PER_THREAD);
	CHECK_EQ_INT(rx_nsamples(&r), NTHREADS * PER_THREAD);
	CHECK_EQ_INT(st.logged, NTHREADS * PER_THREAD);
	CHECK_EQ_INT(st.acked, NTHREADS * PER_THREAD);
	vt_close(em);
	mock_stop(&m);
	rx_free(&r);
}

/*
 * A wide run: every step logs WIDE_NAMES series and is flushed, so each
 * step is several full batches, whose buffers the emitter reuses once
 * they are acknowledged (emitter/io.c, spare). With a mock that loses
 * the first ACK of each batch (so batches are resent), every sample
 * arrives once with its value: a buffer is reused only after its batch
 * settled, never while it may be sent again.
 */
#define WIDE_NAMES 3000
#define WIDE_STEPS 12

TEST(wide_steps_arrive_intact_with_reused_buffers)
{
	static const int modes[] = { MOCK_STORE, MOCK_LOSE_FIRST };

	for (int mi = 0; mi < 2; mi++) {
		char        ep[128], name[32];
		static rx   r;
		static mock m;
		vt_emitter *em;

		rx_init(&r);
		endpoint(ep, sizeof(ep), "wide.sock");
		REQUIRE(mock_start(&m, &r, ep, modes[mi]) == 0);
		em = open_to(ep, 1000);
		REQUIRE(em != NULL);
		/* Each lost ACK costs a resend timeout (1 s): fewer steps. */
		uint64_t steps = modes[mi] == MOCK_LOSE_FIRST ? 3 : WIDE_STEPS;

		for (uint64_t s = 0; s < steps; s++) {
			for (int k = 0; k < WIDE_NAMES; k++) {
				snprintf(
				    name, sizeof(name), "layer%05d/grad", k);
				CHECK_EQ_INT(vt_emit_at(em, name, s,
				                 1700000000000000000ll
				                     + (int64_t) s * 1000000,
				                 (double) (s * WIDE_NAMES
				                     + (uint64_t) k)),
				    0);
			}
			CHECK_EQ_INT(vt_flush(em, 20000), 0);
		}
		check_grid(&r, "layer", "/grad", WIDE_NAMES, steps);
		vt_close(em);
		mock_stop(&m);
		rx_free(&r);
	}
}

TEST(full_buffer_drops_exactly_and_reports_them)
{
	char           ep[128];
	static rx      r;
	static mock    m;
	vt_emitter    *em;
	vt_opts        o;
	vt_stats       st;
	const uint64_t attempts = 200000;
	uint64_t       full = 0, other = 0;
	uint8_t       *seen;
	size_t         dup = 0;

	rx_init(&r);
	endpoint(ep, sizeof(ep), "full.sock");
	vt_opts_init(&o);
	o.endpoint          = ep;
	o.run               = "full";
	o.max_buffer_bytes  = 1; /* raised to the 1 MiB minimum */
	o.flush_interval_ms = 5;
	o.close_timeout_ms  = 1000;
	REQUIRE(vt_open(&o, &em) == 0);
	/* No collector: the ring (4096) and the batches (896 KiB, about
	 * 35000 samples) hold far fewer than the attempts. */
	for (uint64_t i = 0; i < attempts; i++) {
		int rc = vt_emit(em, i % 2 ? "odd" : "even", i, (double) i);

		if (rc == VT_EFULL)
			full++;
		else if (rc != 0)
			other++;
	}
	CHECK_EQ_INT(other, 0);
	CHECK(full > attempts / 2);
	CHECK_EQ_INT(vt_flush(em, 50), VT_ETIMEDOUT);
	CHECK(strstr(vt_errmsg(em), "not acknowledged") != NULL);
	vt_get_stats(em, &st);
	CHECK_EQ_INT(st.dropped, full);
	CHECK_EQ_INT(st.logged + st.dropped, attempts);
	CHECK_EQ_INT(st.acked, 0);

	/* The collector appears: everything kept arrives, with the count. */
	REQUIRE(mock_start(&m, &r, ep, MOCK_STORE) == 0);
	CHECK_EQ_INT(vt_flush(em, 30000), 0);
	vt_get_stats(em, &st);
	CHECK_EQ_INT(st.dropped, full);
	CHECK_EQ_INT(st.acked, st.logged);
	CHECK_EQ_INT(st.pending, 0);
	CHECK_EQ_INT(rx_nsamples(&r), st.logged);
	CHECK_EQ_INT(rx_max_dropped(&r, vt_incarnation(em)), full);
	CHECK_EQ_INT(rx_nsamples(&r) + rx_max_dropped(&r, vt_incarnation(em)),
	    attempts);
	seen = calloc(attempts, 1);
	REQUIRE(seen != NULL);
	pthread_mutex_lock(&r.mu);
	for (size_t i = 0; i < r.ns; i++)
		if (r.s[i].step >= attempts || seen[r.s[i].step]++)
			dup++;
	pthread_mutex_unlock(&r.mu);
	CHECK_EQ_INT(dup, 0);
	free(seen);
	vt_close(em);
	mock_stop(&m);
	rx_free(&r);
}

TEST(close_without_collector_is_bounded)
{
	char        ep[128];
	vt_emitter *em;
	int64_t     t0, dt;

	endpoint(ep, sizeof(ep), "absent.sock");
	em = open_to(ep, 300);
	REQUIRE(em != NULL);
	for (int i = 0; i < 1000; i++)
		CHECK_EQ_INT(vt_emit(em, "loss", (uint64_t) i, 1.0), 0);
	t0 = mono_ms();
	vt_close(em);
	dt = mono_ms() - t0;
	/* The spool write after the timeout may be slow on a loaded machine. */
	CHECK(dt < 300 + 2700);
	printf("  vt_close with no collector: %lld ms (timeout 300)\n",
	    (long long) dt);
}

/* The flags of the last stored batch. */
static uint32_t
last_flags(rx *r)
{
	uint32_t f = 0;

	pthread_mutex_lock(&r->mu);
	for (size_t i = 0; i < r->nb; i++)
		if (r->b[i].stored)
			f = r->b[i].flags;
	pthread_mutex_unlock(&r->mu);
	return f;
}

/* Stored batches flagged FINAL, and whether the last stored one is. */
static size_t
finals(rx *r, int *last_is_final)
{
	size_t n = 0;

	pthread_mutex_lock(&r->mu);
	*last_is_final = 0;
	for (size_t i = 0; i < r->nb; i++) {
		if (!r->b[i].stored)
			continue;
		*last_is_final = (r->b[i].flags & WIRE_FINAL) != 0;
		if (*last_is_final) {
			n++;
			if (r->b[i].nsamples != 0)
				n += 1000; /* a FINAL batch carries none */
		}
	}
	pthread_mutex_unlock(&r->mu);
	return n;
}

TEST(close_says_goodbye_unless_failed)
{
	char        ep[128];
	static rx   r;
	static mock m;
	vt_emitter *em;
	int         last;

	rx_init(&r);
	endpoint(ep, sizeof(ep), "final.sock");
	REQUIRE(mock_start(&m, &r, ep, MOCK_STORE) == 0);

	/* vt_close: every sample, then one empty FINAL batch, last; the
	 * collector should commit it at once: it is flagged URGENT. A batch
	 * sealed by the flush timer is not urgent, one a flush waits for
	 * is. */
	em = open_to(ep, 2000);
	REQUIRE(em != NULL);
	for (int i = 0; i < 100; i++)
		CHECK_EQ_INT(vt_emit(em, "loss", (uint64_t) i, 1.0), 0);
	for (int i = 0; i < 200 && rx_nsamples(&r) < 100; i++)
		sleep_ms(5);
	CHECK_EQ_INT(rx_nsamples(&r), 100);
	CHECK_EQ_INT(last_flags(&r), 0);
	vt_close(em);
	CHECK_EQ_INT(rx_nsamples(&r), 100);
	CHECK_EQ_INT(finals(&r, &last), 1);
	CHECK(last);
	CHECK_EQ_INT(last_flags(&r), WIRE_FINAL | WIRE_URGENT);
	{
		/* A flush interval no test outlasts: only the flush seals. */
		vt_opts o;

		vt_opts_init(&o);
		o.endpoint          = ep;
		o.run               = "test-run";
		o.flush_interval_ms = 600000;
		REQUIRE(vt_open(&o, &em) == 0);
	}
	CHECK_EQ_INT(vt_emit(em, "loss", 100, 1.0), 0);
	CHECK_EQ_INT(vt_flush(em, 2000), 0);
	CHECK_EQ_INT(last_flags(&r), WIRE_URGENT);
	vt_close(em);
	CHECK_EQ_INT(rx_nsamples(&r), 101);
	CHECK_EQ_INT(finals(&r, &last), 2);
	CHECK(last);

	/* vt_end says it without closing; logging goes on after it. */
	em = open_to(ep, 2000);
	REQUIRE(em != NULL);
	CHECK_EQ_INT(vt_emit(em, "loss", 1, 1.0), 0);
	CHECK_EQ_INT(vt_end(em, 2000), 0);
	CHECK_EQ_INT(finals(&r, &last), 3);
	CHECK(last);
	CHECK_EQ_INT(vt_emit(em, "loss", 2, 1.0), 0);
	CHECK_EQ_INT(vt_flush(em, 2000), 0);
	CHECK_EQ_INT(finals(&r, &last), 3);
	CHECK(!last);

	/* Marked failed: the samples still go, the goodbye does not. */
	CHECK_EQ_INT(vt_emit(em, "loss", 3, 1.0), 0);
	vt_mark_failed(em);
	vt_close(em);
	CHECK_EQ_INT(rx_nsamples(&r), 104);
	CHECK_EQ_INT(finals(&r, &last), 3);
	CHECK(!last);
	CHECK_EQ_INT(vt_end(NULL, 10), VT_EINVAL);
	mock_stop(&m);
}

TEST(resend_after_collector_restart)
{
	char        ep[128];
	static rx   r;
	static mock m;
	vt_emitter *em;
	vt_stats    st;
	size_t      first;

	rx_init(&r);
	endpoint(ep, sizeof(ep), "restart.sock");
	/* A collector that receives but dies before committing anything. */
	REQUIRE(mock_start(&m, &r, ep, MOCK_SILENT) == 0);
	em = open_to(ep, 1000);
	REQUIRE(em != NULL);
	/* About 20 batches (flush interval 10 ms): after the restart they
	 * must all be resent at once, not one per fallback timeout. */
	for (int i = 0; i < 200; i++) {
		CHECK_EQ_INT(vt_emit(em, "loss", (uint64_t) i, i * 0.5), 0);
		if (i % 10 == 9)
			sleep_ms(30);
	}
	{
		int64_t end = mono_ms() + 10000;
		size_t  got = 0;

		while (got < 200 && mono_ms() < end) {
			got = 0;
			pthread_mutex_lock(&r.mu);
			for (size_t i = 0; i < r.nb; i++)
				got += r.b[i].nsamples;
			pthread_mutex_unlock(&r.mu);
			sleep_ms(5);
		}
		REQUIRE(got >= 200);
	}
	CHECK_EQ_INT(vt_flush(em, 100), VT_ETIMEDOUT);
	/* Distinct batches seen (the fallback timer may have resent the
	 * oldest to the silent collector already). */
	pthread_mutex_lock(&r.mu);
	first = 0;
	for (size_t i = 0; i < r.nb; i++)
		first += first_reception(&r, i);
	pthread_mutex_unlock(&r.mu);
	CHECK_EQ_INT(rx_nsamples(&r), 0);
	mock_stop(&m);

	/* It restarts: the unacknowledged batches are sent again. */
	REQUIRE(first >= 10);
	REQUIRE(mock_start(&m, &r, ep, MOCK_STORE) == 0);
	CHECK_EQ_INT(vt_flush(em, 8000), 0);
	CHECK_EQ_INT(rx_nsamples(&r), 200);
	for (int i = 0; i < 200; i++) {
		long k = rx_find(&r, "loss", (uint64_t) i);

		REQUIRE(k >= 0);
		CHECK(r.s[k].bits == bits_of(i * 0.5));
	}
	vt_get_stats(em, &st);
	CHECK(st.resent >= first);
	CHECK_EQ_INT(st.acked, 200);
	CHECK_EQ_INT(st.pending, 0);
	mock_stop(&m);

	/* A collector that stores but loses its first ACK of each batch:
	 * the batch is resent (by the fallback timer, 1 s), acknowledged
	 * as a duplicate, and then never sent again. */
	REQUIRE(mock_start(&m, &r, ep, MOCK_LOSE_FIRST) == 0);
	first = rx_nbatches(&r);
	for (int i = 0; i < 5; i++)
		CHECK_EQ_INT(vt_emit(em, "lost-ack", (uint64_t) i, 1.0), 0);
	CHECK_EQ_INT(vt_flush(em, 15000), 0);
	CHECK_EQ_INT(rx_nsamples(&r), 205);
	{
		size_t before = rx_nbatches(&r);

		/* Longer than the fallback timeout with its first backoff. */
		sleep_ms(2500);
		CHECK_EQ_INT(rx_nbatches(&r), before);
		pthread_mutex_lock(&r.mu);
		CHECK(r.nb > first);
		for (size_t i = first; i < r.nb; i++)
			CHECK_EQ_INT(
			    seen_count(&r, r.b[i].inc, r.b[i].seq), 2);
		pthread_mutex_unlock(&r.mu);
	}
	vt_get_stats(em, &st);
	CHECK_EQ_INT(st.acked, 205);
	CHECK_EQ_INT(st.pending, 0);
	mock_stop(&m);

	/* A collector answering DUPLICATE: settled, not resent. */
	REQUIRE(mock_start(&m, &r, ep, MOCK_DUPLICATE) == 0);
	CHECK_EQ_INT(vt_emit(em, "dup", 1, 1.0), 0);
	CHECK_EQ_INT(vt_flush(em, 15000), 0);
	{
		size_t before = rx_nbatches(&r);

		sleep_ms(1500);
		CHECK_EQ_INT(rx_nbatches(&r), before);
	}
	vt_close(em);
	mock_stop(&m);
	rx_free(&r);
}

/*
 * A collector that acknowledges every batch late but steadily gets each
 * batch once: the fallback timer runs only while no ACK arrives at all,
 * and then resends one batch per timeout (at least 1 s). So whatever the
 * machine's speed, duplicates are at most the elapsed seconds.
 */
TEST(slow_collector_gets_few_duplicates)
{
	char        ep[128];
	static rx   r;
	static mock m;
	vt_emitter *em;
	vt_stats    st;
	int64_t     t0, elapsed_s;
	size_t      dups = 0;

	rx_init(&r);
	endpoint(ep, sizeof(ep), "slow.sock");
	REQUIRE(mock_start(&m, &r, ep, MOCK_SLOW) == 0);
	em = open_to(ep, 1000);
	REQUIRE(em != NULL);
	t0 = mono_ms();
	for (int round = 0; round < 12; round++) {
		for (int i = 0; i < 1000; i++)
			CHECK_EQ_INT(vt_emit(em, "slow",
			                 (uint64_t) (round * 1000 + i), 1.0),
			    0);
		sleep_ms(100);
	}
	CHECK_EQ_INT(vt_flush(em, 30000), 0);
	elapsed_s = (mono_ms() - t0) / 1000;
	CHECK_EQ_INT(rx_nsamples(&r), 12000);
	pthread_mutex_lock(&r.mu);
	CHECK(r.nb >= 12);
	for (size_t i = 0; i < r.nb; i++)
		dups += !first_reception(&r, i);
	pthread_mutex_unlock(&r.mu);
	vt_get_stats(em, &st);
	printf("  %zu duplicates in %lld s\n", dups, (long long) elapsed_s);
	CHECK(dups <= (size_t) elapsed_s);
	CHECK_EQ_INT(st.resent, dups);
	CHECK_EQ_INT(st.acked, 12000);
	vt_close(em);
	mock_stop(&m);
	rx_free(&r);
}

/* Voluntary context switches (wakeups) of this process's vitals-io
 * threads so far, from /proc/self/task/TID/status. */
static uint64_t
io_wakeups(void)
{
	DIR           *d = opendir("/proc/self/task");
	struct dirent *e;
	uint64_t       n = 0;

	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		char               path[300], line[128];
		FILE              *f;
		unsigned long long v;
		int                io = 0;

		snprintf(
		    path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		if (e->d_name[0] == '.' || (f = fopen(path, "r")) == NULL)
			continue;
		io = fgets(line, sizeof(line), f) != NULL
		    && strncmp(line, "vitals-io", 9) == 0;
		fclose(f);
		snprintf(path, sizeof(path), "/proc/self/task/%s/status",
		    e->d_name);
		if (!io || (f = fopen(path, "r")) == NULL)
			continue;
		while (fgets(line, sizeof(line), f) != NULL)
			if (sscanf(line, "voluntary_ctxt_switches: %llu", &v)
			    == 1)
				n += v;
		fclose(f);
	}
	closedir(d);
	return n;
}

/* A trainer between steps or at rest must not pay for a thread that polls
 * every few ms: at rest the I/O thread dozes, and a sample logged during
 * a doze is still delivered without a flush. (A slow machine only makes
 * waits longer and wakeups fewer.) */
TEST(emitter_at_rest_dozes_and_delivers)
{
	char        ep[128];
	static rx   r;
	static mock m;
	vt_emitter *em;
	uint64_t    w0, w1;

	rx_init(&r);
	endpoint(ep, sizeof(ep), "rest.sock");
	REQUIRE(mock_start(&m, &r, ep, MOCK_STORE) == 0);
	em = open_to(ep, 1000);
	REQUIRE(em != NULL);
	CHECK_EQ_INT(vt_emit(em, "rest", 1, 1.0), 0);
	CHECK_EQ_INT(vt_flush(em, 10000), 0);
	sleep_ms(300);
	w0 = io_wakeups();
	sleep_ms(2000);
	w1 = io_wakeups();
	printf("  I/O thread woke %llu times in 2 s at rest\n",
	    (unsigned long long) (w1 - w0));
	/* Polling every 4 ms would be 500; a doze of 50 ms is 40. */
	CHECK(w1 - w0 <= 100);
	CHECK_EQ_INT(vt_emit(em, "rest", 2, 2.0), 0);
	CHECK(wait_samples(&r, 2, 10000));
	CHECK(rx_find(&r, "rest", 2) >= 0);
	vt_close(em);
	mock_stop(&m);
	rx_free(&r);
}

TEST(timestamps_within_1ms_of_clock_gettime)
{
	char        ep[128];
	static rx   r;
	static mock m;
	vt_emitter *em;
	vt_opts     o;
	int64_t     lo[40], hi[40];
	int64_t     worst = 0;

	rx_init(&r);
	endpoint(ep, sizeof(ep), "time.sock");
	REQUIRE(mock_start(&m, &r, ep, MOCK_STORE) == 0);
	vt_opts_init(&o);
	o.endpoint = ep;
	o.run      = "time";
	/* Samples wait in the ring until the flush, so some are converted
	 * seconds after they were taken, across recalibrations. */
	o.flush_interval_ms = 60000;
	REQUIRE(vt_open(&o, &em) == 0);
	for (int i = 0; i < 40; i++) {
		lo[i] = real_ns();
		CHECK_EQ_INT(vt_emit(em, "t", (uint64_t) i, 0.0), 0);
		hi[i] = real_ns();
		if (i == 9)
			CHECK_EQ_INT(vt_flush(em, 10000), 0); /* young */
		if (i % 10 == 9)
			sleep_ms(700);
	}
	CHECK_EQ_INT(vt_flush(em, 10000), 0);
	CHECK_EQ_INT(rx_nsamples(&r), 40);
	for (int i = 0; i < 40; i++) {
		long    k = rx_find(&r, "t", (uint64_t) i);
		int64_t t, err = 0;

		REQUIRE(k >= 0);
		t = r.s[k].time_ns;
		if (t < lo[i])
			err = lo[i] - t;
		else if (t > hi[i])
			err = t - hi[i];
		if (err > worst)
			worst = err;
		CHECK(err <= 1000000);
	}
	printf("  worst timestamp error: %lld ns\n", (long long) worst);
	vt_close(em);
	mock_stop(&m);
	rx_free(&r);
}

/*
 * The I/O thread converts ticks soon after they are taken, unless the
 * buffer is backed up: then samples wait in the ring and are converted
 * long after. This checks the calibration itself on ticks 3 s old.
 */
TEST(clock_converts_old_ticks_within_1ms)
{
	vte_clock c;
	int       tsc = vte_clock_tsc_usable();
	uint64_t  t[2];
	int64_t   lo[2], hi[2];

	printf("  tsc: %s\n", tsc ? "invariant, used" : "not used");
	vte_clock_init(&c, tsc);
	lo[0] = real_ns();
	t[0]  = vte_clock_ticks(tsc);
	hi[0] = real_ns();
	for (int i = 0; i < 30; i++) {
		sleep_ms(100);
		vte_clock_update(&c);
	}
	lo[1] = real_ns();
	t[1]  = vte_clock_ticks(tsc);
	hi[1] = real_ns();
	sleep_ms(10);
	vte_clock_update(&c);
	for (int i = 0; i < 2; i++) {
		int64_t ns = vte_clock_to_ns(&c, t[i]);

		printf("  tick %d: %lld ns from the window\n", i,
		    (long long) (ns < lo[i] ? ns - lo[i]
		            : ns > hi[i]    ? ns - hi[i]
		                            : 0));
		CHECK(ns >= lo[i] - 1000000 && ns <= hi[i] + 1000000);
	}
}

TEST(too_many_names)
{
	char        ep[128];
	vt_emitter *em;
	char        name[32];
	int         bad = 0;

	endpoint(ep, sizeof(ep), "names.sock");
	em = open_to(ep, 0);
	REQUIRE(em != NULL);
	for (unsigned i = 0; i < 65535; i++) {
		snprintf(name, sizeof(name), "metric_%u", i);
		bad += vt_emit(em, name, i, 1.0) != 0;
	}
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_INT(vt_emit(em, "one_too_many", 1, 1.0), VT_ETOOMANY);
	CHECK(strstr(vt_errmsg(em), "one_too_many") != NULL);
	CHECK_EQ_INT(vt_emit(em, "metric_0", 2, 1.0), 0);
	CHECK_EQ_INT(vt_emit(em, "metric_65534", 2, 1.0), 0);
	vt_close(em);
}

typedef struct dflt_arg {
	pthread_barrier_t *bar;
	int                k, fails;
	uint64_t           inc;
} dflt_arg;

static void *
thr_default(void *p)
{
	dflt_arg *a = p;

	pthread_barrier_wait(a->bar);
	for (int i = 0; i < 100; i++)
		a->fails
		    += vt_log("dflt", (uint64_t) (a->k * 100 + i), 1.0) != 0;
	a->inc = vt_incarnation(vt_default());
	return NULL;
}

TEST(default_emitter_created_once_and_shutdown)
{
	char              ep[128];
	static rx         r;
	static mock       m;
	pthread_t         th[4];
	dflt_arg          a[4];
	pthread_barrier_t bar;
	uint64_t          inc;

	rx_init(&r);
	endpoint(ep, sizeof(ep), "dflt.sock");
	REQUIRE(mock_start(&m, &r, ep, MOCK_STORE) == 0);
	setenv("VITALS_ENDPOINT", ep, 1);
	setenv("VITALS_RUN", "default-run", 1);
	pthread_barrier_init(&bar, NULL, 4);
	for (int k = 0; k < 4; k++) {
		a[k] = (dflt_arg) { &bar, k, 0, 0 };
		pthread_create(&th[k], NULL, thr_default, &a[k]);
	}
	for (int k = 0; k < 4; k++)
		pthread_join(th[k], NULL);
	pthread_barrier_destroy(&bar);
	inc = vt_incarnation(vt_default());
	for (int k = 0; k < 4; k++) {
		CHECK_EQ_INT(a[k].fails, 0);
		CHECK(a[k].inc == inc);
	}
	CHECK_EQ_INT(vt_flush(vt_default(), 10000), 0);
	CHECK_EQ_INT(rx_nsamples(&r), 400);
	pthread_mutex_lock(&r.mu);
	for (size_t i = 0; i < r.ns; i++)
		CHECK(r.s[i].inc == inc);
	for (size_t i = 0; i < r.nb; i++)
		CHECK(strcmp(r.b[i].run, "default-run") == 0);
	pthread_mutex_unlock(&r.mu);

	vt_shutdown();
	CHECK_EQ_INT(vt_log("after", 1, 2.0), 0);
	CHECK(vt_incarnation(vt_default()) != inc);
	CHECK_EQ_INT(vt_flush(vt_default(), 10000), 0);
	CHECK(rx_find(&r, "after", 1) >= 0);
	vt_shutdown();
	vt_shutdown(); /* nothing to close: a no-op */

	/* A bad environment fails vt_log() without retrying vt_open()
	 * on every call, until vt_shutdown(). */
	setenv("VITALS_RUN", "bad\x01run", 1);
	CHECK_EQ_INT(vt_log("x", 1, 1.0), VT_ENAME);
	CHECK_EQ_INT(vt_log("x", 2, 1.0), VT_ENAME);
	CHECK(vt_default() == NULL);
	setenv("VITALS_RUN", "default-run", 1);
	CHECK_EQ_INT(vt_log("x", 3, 1.0), VT_ENAME); /* cached */
	vt_shutdown();
	CHECK_EQ_INT(vt_log("x", 4, 1.0), 0);
	vt_shutdown();

	unsetenv("VITALS_ENDPOINT");
	unsetenv("VITALS_RUN");
	mock_stop(&m);
	rx_free(&r);
}

TEST(fork_child_gets_new_default_emitter)
{
	char        ep[128];
	static rx   r;
	static mock m;
	vt_emitter *em;
	uint64_t    parent_inc;
	pid_t       pid;
	int         status = -1;

	rx_init(&r);
	endpoint(ep, sizeof(ep), "fork.sock");
	REQUIRE(mock_start(&m, &r, ep, MOCK_STORE) == 0);
	setenv("VITALS_ENDPOINT", ep, 1);
	setenv("VITALS_RUN", "fork-run", 1);
	em = open_to(ep, 1000);
	REQUIRE(em != NULL);
	CHECK_EQ_INT(vt_log("parent", 1, 1.0), 0);
	parent_inc = vt_incarnation(vt_default());
	CHECK_EQ_INT(vt_flush(vt_default(), 10000), 0);
	fflush(stdout);

	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		int bad = 0;

		if (vt_emit(em, "x", 1, 1.0) != VT_EFORKED)
			bad |= 1;
		if (vt_flush(em, 10) != VT_EFORKED)
			bad |= 2;
		if (vt_log("child", 7, 2.0) != 0)
			bad |= 4;
		if (vt_default() == NULL
		    || vt_incarnation(vt_default()) == parent_inc)
			bad |= 8;
		vt_close(em); /* the parent's: leaked, not touched */
		/* exit(), not _exit(): the library's destructor flushes the
		 * child's default emitter, which this test then sees. */
		exit(bad);
	}
	REQUIRE(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status));
	CHECK_EQ_INT(WEXITSTATUS(status), 0);
	{
		long k = -1;

		if (wait_samples(&r, 2, 10000))
			k = rx_find(&r, "child", 7);
		REQUIRE(k >= 0);
		CHECK(r.s[k].inc != parent_inc);
		CHECK(r.s[k].pid == (uint32_t) pid);
		CHECK(r.s[k].bits == bits_of(2.0));
	}
	/* The parent's handles still work. */
	CHECK_EQ_INT(vt_emit(em, "parent-after", 2, 3.0), 0);
	CHECK_EQ_INT(vt_log("parent-after", 3, 3.0), 0);
	CHECK(vt_incarnation(vt_default()) == parent_inc);
	CHECK_EQ_INT(vt_flush(em, 10000), 0);
	CHECK_EQ_INT(vt_flush(vt_default(), 10000), 0);
	CHECK(rx_find(&r, "parent-after", 2) >= 0);
	CHECK(rx_find(&r, "parent-after", 3) >= 0);
	vt_close(em);
	vt_shutdown();
	unsetenv("VITALS_ENDPOINT");
	unsetenv("VITALS_RUN");
	mock_stop(&m);
	rx_free(&r);
}

/* Value of the stored sample named name at step (NaN if absent). */
static double
rx_value(rx *r, const char *name, uint64_t step)
{
	long i = rx_find(r, name, step);

	return i < 0 ? NAN : double_of(r->s[i].bits);
}

/* Phase markers travel as vitals/phase/NAME samples (1 in, 0 out), and
 * the emitter adds up the ms spent in each phase per step: at least the
 * time slept in it, and together exactly the time from the step's first
 * marker to the next step's. */
TEST(phase_markers_and_phase_times)
{
	char        ep[128];
	static rx   r;
	static mock m;
	vt_emitter *em;
	vt_stats    st;
	long        a, b;
	double      sum, span;

	rx_init(&r);
	endpoint(ep, sizeof(ep), "phase.sock");
	REQUIRE(mock_start(&m, &r, ep, MOCK_STORE) == 0);
	em = open_to(ep, 1000);
	REQUIRE(em != NULL);
	CHECK_EQ_INT(vt_emit_phase(em, "", 1), VT_ENAME);
	CHECK_EQ_INT(vt_emit_phase(em, NULL, 1), VT_EINVAL);
	for (uint64_t step = 1; step <= 3; step++) {
		CHECK_EQ_INT(vt_emit_phase(em, "data", step), 0);
		sleep_ms(3);
		CHECK_EQ_INT(vt_emit_phase(em, "forward", step), 0);
		sleep_ms(12);
		CHECK_EQ_INT(vt_emit_phase(em, "backward", step), 0);
		sleep_ms(6);
		CHECK_EQ_INT(vt_emit_phase_end(em, "backward", step), 0);
		CHECK_EQ_INT(
		    vt_emit(em, "loss", step, 1.0 / (double) step), 0);
	}
	/* A checkpoint after step 3's loss: at the latest step, 3. */
	CHECK_EQ_INT(vt_emit_phase(em, "checkpoint", VT_STEP_LATEST), 0);
	sleep_ms(5);
	CHECK_EQ_INT(vt_emit_phase(em, "data", 4), 0);
	CHECK_EQ_INT(vt_flush(em, 10000), 0);

	CHECK(rx_value(&r, "vitals/phase/forward", 2) == 1.0);
	CHECK(rx_value(&r, "vitals/phase/backward", 2) == 1.0);
	CHECK(rx_value(&r, "vitals/phase/checkpoint", 3) == 1.0);
	pthread_mutex_lock(&r.mu);
	for (size_t i = 0; i < r.ns; i++)
		if (strcmp(r.s[i].name, "vitals/phase/backward") == 0
		    && double_of(r.s[i].bits) == 0.0)
			CHECK(r.s[i].step <= 3);
	pthread_mutex_unlock(&r.mu);
	for (uint64_t step = 1; step <= 3; step++) {
		CHECK(rx_value(&r, "phase_time/data", step) >= 3.0);
		CHECK(rx_value(&r, "phase_time/forward", step) >= 12.0);
		CHECK(rx_value(&r, "phase_time/backward", step) >= 6.0);
		CHECK(rx_value(&r, "phase_time/forward", step) < 2000.0);
	}
	CHECK(isnan(rx_value(&r, "phase_time/checkpoint", 2)));
	CHECK(rx_value(&r, "phase_time/checkpoint", 3) >= 5.0);
	/* Step 4 is still open: not closed, no time yet. */
	CHECK(isnan(rx_value(&r, "phase_time/data", 4)));
	/* Step 2's phases add up to the span between its first marker and
	 * step 3's, less the time out of any phase (after backward). */
	a = rx_find(&r, "vitals/phase/data", 2);
	b = rx_find(&r, "vitals/phase/data", 3);
	REQUIRE(a >= 0 && b >= 0);
	span = (double) (r.s[b].time_ns - r.s[a].time_ns) / 1e6;
	sum  = rx_value(&r, "phase_time/data", 2)
	    + rx_value(&r, "phase_time/forward", 2)
	    + rx_value(&r, "phase_time/backward", 2);
	CHECK(sum <= span + 1e-6 && sum >= 21.0);
	/* Derived samples are not counted as logged or acknowledged. */
	vt_get_stats(em, &st);
	CHECK_EQ_INT(st.logged, st.acked);
	CHECK_EQ_INT(st.pending, 0);
	vt_close(em);
	mock_stop(&m);
	rx_free(&r);
}

static void
rmtree(const char *dir)
{
	static const char *files[]
	    = { "rt.sock", "nobody.sock", "id.sock", "mt.sock", "full.sock",
		      "absent.sock", "restart.sock", "time.sock", "slow.sock",
		      "names.sock", "dflt.sock", "fork.sock", "phase.sock" };
	char path[128];

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		unlink(path);
	}
	rmdir(dir);
}

int
main(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/vt-emitter-XXXXXX");
	if (mkdtemp(tmpdir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	harness_after_each = stop_serving;
	RUN(values_names_identity_roundtrip);
	RUN(invalid_arguments_and_names);
	RUN(opts_defaults_from_environment);
	RUN(identity_from_environment);
	RUN(incarnation_and_first_seq_continue_an_emitter);
	RUN(four_threads_every_sample_once);
	RUN(wide_steps_arrive_intact_with_reused_buffers);
	RUN(full_buffer_drops_exactly_and_reports_them);
	RUN(close_without_collector_is_bounded);
	RUN(close_says_goodbye_unless_failed);
	RUN(resend_after_collector_restart);
	RUN(slow_collector_gets_few_duplicates);
	RUN(timestamps_within_1ms_of_clock_gettime);
	RUN(clock_converts_old_ticks_within_1ms);
	RUN(too_many_names);
	RUN(emitter_at_rest_dozes_and_delivers);
	RUN(default_emitter_created_once_and_shutdown);
	RUN(fork_child_gets_new_default_emitter);
	RUN(phase_markers_and_phase_times);
	rmtree(tmpdir);
	return harness_done();
}
