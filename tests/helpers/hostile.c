/*
 * hostile: clients that try to take the collector away from the others
 * (tests/it_isolation.sh), speaking ZMTP through libzmq.
 *
 *	hostile idle ENDPOINT N SECONDS
 *	    N DEALER sockets connect to ENDPOINT (which may name a source
 *	    address: tcp://127.0.0.2:0;127.0.0.1:PORT), complete the
 *	    handshake (libzmq answers heartbeats) and send nothing; they are
 *	    held SECONDS, reconnecting as libzmq does when dropped. Prints
 *	    "idle: N sockets, H handshakes, D disconnections".
 *	hostile flood ENDPOINT SECONDS
 *	    one DEALER sends batches of 16 MiB holding 65,535 names of 255
 *	    bytes and no sample, as fast as the collector takes them, for
 *	    SECONDS. Prints "flood: sent S batches, A acknowledged".
 *	hostile sample ENDPOINT RUN TIME_NS
 *	    one batch of one sample (metric "t", step 1, value 1) at TIME_NS;
 *	    exit 0 once it is acknowledged as stored.
 *	hostile names ENDPOINT RUN N
 *	    one batch of N names (m000000, ...) and one sample, of the
 *	    first; exit 0 once it is acknowledged as stored.
 *	hostile wide ENDPOINT RUN N
 *	    N series of RUN, one sample each (step 1, value 1), in batches
 *	    of up to 65,535 names; exit 0 once all are acknowledged.
 *	hostile churn ENDPOINT N [nan]
 *	    N batches, each of a new run (churn000000, ...) and a new
 *	    incarnation, of one sample (metric "m000000", step 1, value 1,
 *	    or NaN), 256 in flight; prints "churn: N sent, A acknowledged in
 *	    T ms".
 *	hostile refuse RUN N
 *	    through libvitals ($VITALS_ENDPOINT): N distinct metric names,
 *	    one per step, then 10 invalid names; closes the emitter and
 *	    prints "refuse: N emitted, R refused (T table full, B bad
 *	    names)".
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "vitals.h"
#include "wire/wire.h"

static long
num(const char *s)
{
	char *end;
	long  v;

	errno = 0;
	v     = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0) {
		fprintf(stderr, "hostile: bad number '%s'\n", s);
		exit(2);
	}
	return v;
}

static int64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Count the monitor events of every idle socket on one PULL-like PAIR
 * each; returns after ms. */
static void
count_events(void **mons, long n, long ms, long *hs, long *disc)
{
	zmq_pollitem_t *it  = calloc((size_t) n, sizeof(*it));
	int64_t         end = mono_ms() + ms;

	if (it == NULL)
		return;
	for (long i = 0; i < n; i++) {
		it[i].socket = mons[i];
		it[i].events = ZMQ_POLLIN;
	}
	while (mono_ms() < end) {
		if (zmq_poll(it, (int) n, 200) <= 0)
			continue;
		for (long i = 0; i < n; i++) {
			zmq_msg_t m;
			uint16_t  ev = 0;

			if (!(it[i].revents & ZMQ_POLLIN))
				continue;
			zmq_msg_init(&m);
			if (zmq_msg_recv(&m, mons[i], 0) >= 0
			    && zmq_msg_size(&m) >= 2)
				memcpy(&ev, zmq_msg_data(&m), 2);
			while (zmq_msg_more(&m)) {
				zmq_msg_close(&m);
				zmq_msg_init(&m);
				zmq_msg_recv(&m, mons[i], 0);
			}
			zmq_msg_close(&m);
			if (ev == ZMQ_EVENT_HANDSHAKE_SUCCEEDED)
				(*hs)++;
			else if (ev == ZMQ_EVENT_DISCONNECTED)
				(*disc)++;
		}
	}
	free(it);
}

static int
do_idle(const char *ep, long n, long seconds)
{
	void  *ctx   = zmq_ctx_new();
	void **socks = calloc((size_t) n, sizeof(*socks));
	void **mons  = calloc((size_t) n, sizeof(*mons));
	long   hs = 0, disc = 0;
	int    max = (int) (3 * n + 64), linger = 0;

	if (socks == NULL || mons == NULL)
		return 1;
	zmq_ctx_set(ctx, ZMQ_MAX_SOCKETS, max);
	for (long i = 0; i < n; i++) {
		char mep[64];

		socks[i] = zmq_socket(ctx, ZMQ_DEALER);
		if (socks[i] == NULL) {
			fprintf(stderr, "hostile: socket %ld: %s\n", i,
			    zmq_strerror(zmq_errno()));
			return 1;
		}
		zmq_setsockopt(socks[i], ZMQ_LINGER, &linger, sizeof(linger));
		snprintf(mep, sizeof(mep), "inproc://hostile-mon-%ld", i);
		zmq_socket_monitor(socks[i], mep,
		    ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_DISCONNECTED);
		mons[i] = zmq_socket(ctx, ZMQ_PAIR);
		zmq_setsockopt(mons[i], ZMQ_LINGER, &linger, sizeof(linger));
		zmq_connect(mons[i], mep);
		if (zmq_connect(socks[i], ep) != 0) {
			fprintf(stderr, "hostile: cannot connect %s: %s\n", ep,
			    zmq_strerror(zmq_errno()));
			return 1;
		}
	}
	printf("idle: %ld sockets connecting to %s\n", n, ep);
	fflush(stdout);
	count_events(mons, n, seconds * 1000, &hs, &disc);
	printf("idle: %ld sockets, %ld handshakes, %ld disconnections\n", n,
	    hs, disc);
	fflush(stdout);
	for (long i = 0; i < n; i++) {
		zmq_close(mons[i]);
		zmq_close(socks[i]);
	}
	zmq_ctx_term(ctx);
	free(socks);
	free(mons);
	return 0;
}

/* A 16 MiB batch of 65,535 distinct 255-byte names and no sample. */
static size_t
names_batch(uint8_t *buf, uint64_t inc, uint64_t seq)
{
	wire_ident id = { 0 };
	char       name[255];
	size_t     off;

	id.incarnation = inc;
	id.pid         = (uint32_t) getpid();
	id.rank        = 0;
	id.world_size  = 1;
	id.run         = "flood";
	id.run_len     = 5;
	id.host        = "hostile";
	id.host_len    = 7;
	off            = wire_put_batch_head(buf, &id, seq, seq, 0);
	wire_put_names_count(buf, &off, 65535);
	memset(name, 'n', sizeof(name));
	for (uint32_t i = 0; i < 65535; i++) {
		snprintf(name, 16, "%08x.%06u", (unsigned) seq, i);
		name[15] = 'n';
		wire_put_name(buf, &off, name, sizeof(name));
	}
	wire_put_samples_count(buf, &off, 0);
	return off;
}

static int
do_flood(const char *ep, long seconds)
{
	void    *ctx  = zmq_ctx_new();
	void    *sock = zmq_socket(ctx, ZMQ_DEALER);
	uint8_t *buf  = malloc(WIRE_MAX_MESSAGE);
	uint64_t inc  = (uint64_t) time(NULL) * 2654435761u + 4242;
	long     sent = 0, acked = 0;
	int      linger = 0, timeout = 200;
	int64_t  end = mono_ms() + seconds * 1000;

	if (sock == NULL || buf == NULL)
		return 1;
	zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof(linger));
	zmq_setsockopt(sock, ZMQ_SNDTIMEO, &timeout, sizeof(timeout));
	if (zmq_connect(sock, ep) != 0) {
		fprintf(stderr, "hostile: cannot connect %s\n", ep);
		return 1;
	}
	while (mono_ms() < end) {
		uint8_t ack[64];
		size_t  n = names_batch(buf, inc, (uint64_t) sent + 1);

		if (n > WIRE_MAX_MESSAGE) {
			fprintf(stderr, "hostile: batch of %zu bytes\n", n);
			return 1;
		}
		if (zmq_send(sock, buf, n, 0) >= 0)
			sent++;
		while (zmq_recv(sock, ack, sizeof(ack), ZMQ_DONTWAIT) >= 0)
			acked++;
	}
	printf("flood: sent %ld batches of 16 MiB, %ld acknowledged\n", sent,
	    acked);
	zmq_close(sock);
	zmq_ctx_term(ctx);
	free(buf);
	return 0;
}

static int
do_sample(const char *ep, const char *run, const char *time_s)
{
	void       *ctx  = zmq_ctx_new();
	void       *sock = zmq_socket(ctx, ZMQ_DEALER);
	uint8_t     buf[1024], ack[64];
	wire_ident  id = { 0 };
	wire_sample sm = { 0, 1, 0, 1.0 };
	wire_ack    a;
	size_t      off;
	int         linger = 0, timeout = 10000, got, rc = 1;
	char       *end;

	errno      = 0;
	sm.time_ns = strtoll(time_s, &end, 10);
	if (errno != 0 || *end != 0 || end == time_s)
		return 2;
	id.incarnation = (uint64_t) time(NULL) * 2654435761u + 77;
	id.pid         = (uint32_t) getpid();
	id.world_size  = 1;
	id.run         = run;
	id.run_len     = (uint16_t) strlen(run);
	id.host        = "hostile";
	id.host_len    = 7;
	off            = wire_put_batch_head(buf, &id, 1, 1, 0);
	wire_put_names_count(buf, &off, 1);
	wire_put_name(buf, &off, "t", 1);
	wire_put_samples_count(buf, &off, 1);
	wire_put_sample(buf, &off, &sm);
	zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof(linger));
	zmq_setsockopt(sock, ZMQ_RCVTIMEO, &timeout, sizeof(timeout));
	if (zmq_connect(sock, ep) == 0 && zmq_send(sock, buf, off, 0) >= 0
	    && (got = zmq_recv(sock, ack, sizeof(ack), 0)) >= 0
	    && wire_ack_decode(ack, (size_t) got, &a) == 0
	    && a.status == WIRE_ACK_STORED)
		rc = 0;
	zmq_close(sock);
	zmq_ctx_term(ctx);
	return rc;
}

/* A batch of run (incarnation inc, seq) with nnames names m<first+i> and,
 * if samples, one sample of each (or of the first only: samples == 1). */
static double sample_value = 1.0;

static size_t
put_batch(uint8_t *buf, const char *run, uint64_t inc, uint64_t seq,
    uint32_t first, uint32_t nnames, uint32_t samples)
{
	wire_ident id = { 0 };
	size_t     off;
	char       name[32];

	id.incarnation = inc;
	id.pid         = (uint32_t) getpid();
	id.world_size  = 1;
	id.run         = run;
	id.run_len     = (uint16_t) strlen(run);
	id.host        = "hostile";
	id.host_len    = 7;
	off            = wire_put_batch_head(buf, &id, seq, seq, 0);
	wire_put_names_count(buf, &off, (uint16_t) nnames);
	for (uint32_t i = 0; i < nnames; i++) {
		int n = snprintf(name, sizeof(name), "m%06u", first + i);

		wire_put_name(buf, &off, name, (size_t) n);
	}
	wire_put_samples_count(buf, &off, samples);
	for (uint32_t i = 0; i < samples; i++) {
		wire_sample sm = { (uint16_t) i, 1,
			(int64_t) time(NULL) * 1000000000, sample_value };

		wire_put_sample(buf, &off, &sm);
	}
	return off;
}

/* Send n batches made by put_batch over one DEALER, at most 256 waiting
 * for their ACK; returns how many were acknowledged as stored. */
typedef struct plan {
	const char *run;  /* NULL: churn%06u per batch */
	uint32_t    per;  /* names per batch */
	uint32_t    left; /* names still to send */
	int         all;  /* a sample for every name, else only the first */
} plan;

static long
send_all(const char *ep, plan *p, long n, long *sent_out)
{
	void    *ctx  = zmq_ctx_new();
	void    *sock = zmq_socket(ctx, ZMQ_DEALER);
	uint8_t *buf  = malloc(WIRE_MAX_MESSAGE);
	uint64_t inc
	    = (uint64_t) time(NULL) * 2654435761u + (uint64_t) getpid();
	long     sent = 0, acked = 0, settled = 0;
	int      linger = 0, timeout = 30000;
	uint32_t first = 0;

	if (sock == NULL || buf == NULL)
		return -1;
	zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof(linger));
	zmq_setsockopt(sock, ZMQ_RCVTIMEO, &timeout, sizeof(timeout));
	if (zmq_connect(sock, ep) != 0) {
		fprintf(stderr, "hostile: cannot connect %s\n", ep);
		return -1;
	}
	while (settled < n) {
		uint8_t  ack[64];
		wire_ack a;
		int      got;

		while (sent < n && sent - settled < 256) {
			char     run[32];
			uint32_t k = p->per < p->left ? p->per : p->left;
			size_t   len;

			if (p->run == NULL) {
				snprintf(run, sizeof(run), "churn%06ld", sent);
				len = put_batch(buf, run,
				    inc + (uint64_t) sent, 1, 0, 1, 1);
			} else {
				len = put_batch(buf, p->run, inc,
				    (uint64_t) sent + 1, first, k,
				    p->all ? k : 1);
				first += k;
				p->left -= k;
			}
			if (zmq_send(sock, buf, len, 0) < 0)
				break;
			sent++;
		}
		got = zmq_recv(sock, ack, sizeof(ack), 0);
		if (got < 0)
			break; /* 30 s without an ACK */
		settled++;
		if (wire_ack_decode(ack, (size_t) got, &a) == 0
		    && a.status == WIRE_ACK_STORED)
			acked++;
	}
	zmq_close(sock);
	zmq_ctx_term(ctx);
	free(buf);
	*sent_out = sent;
	return acked;
}

static int
do_names(const char *ep, const char *run, long n)
{
	plan p    = { run, (uint32_t) n, (uint32_t) n, 0 };
	long sent = 0;

	if (n < 1 || n > 65535)
		return 2;
	return send_all(ep, &p, 1, &sent) == 1 ? 0 : 1;
}

static int
do_wide(const char *ep, const char *run, long n)
{
	plan p       = { run, 65535, (uint32_t) n, 1 };
	long batches = (n + 65534) / 65535, sent = 0;

	return send_all(ep, &p, batches, &sent) == batches ? 0 : 1;
}

static int
do_churn(const char *ep, long n)
{
	plan    p    = { NULL, 1, 0, 1 };
	long    sent = 0, acked;
	int64_t t0   = mono_ms();

	acked = send_all(ep, &p, n, &sent);
	printf("churn: %ld sent, %ld acknowledged in %lld ms\n", sent, acked,
	    (long long) (mono_ms() - t0));
	return acked == n ? 0 : 1;
}

static int
do_refuse(const char *run, long n)
{
	vt_opts     o;
	vt_emitter *em;
	long        full = 0, bad = 0, ok = 0;
	char        name[32];
	int         rc;

	vt_opts_init(&o);
	o.run = run;
	if ((rc = vt_open(&o, &em)) != 0) {
		fprintf(stderr, "hostile: vt_open: %s\n", vt_strerror(rc));
		return 1;
	}
	for (long i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "n%07ld", i);
		rc = vt_emit(em, name, (uint64_t) i, 1.0);
		ok += rc == 0;
		full += rc == VT_ETOOMANY;
	}
	for (long i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "bad\x01%ld", i);
		bad += vt_emit(em, name, (uint64_t) (n + i), 1.0) == VT_ENAME;
	}
	rc = vt_end(em, 30000);
	vt_close(em);
	printf("refuse: %ld emitted, %ld refused (%ld table full, %ld bad "
	       "names), close %s\n",
	    ok, full + bad, full, bad, rc == 0 ? "ok" : vt_strerror(rc));
	return rc == 0 ? 0 : 1;
}

int
main(int argc, char **argv)
{
	if (argc == 5 && strcmp(argv[1], "sample") == 0)
		return do_sample(argv[2], argv[3], argv[4]);
	if (argc == 5 && strcmp(argv[1], "idle") == 0)
		return do_idle(argv[2], num(argv[3]), num(argv[4]));
	if (argc == 4 && strcmp(argv[1], "flood") == 0)
		return do_flood(argv[2], num(argv[3]));
	if (argc == 5 && strcmp(argv[1], "names") == 0)
		return do_names(argv[2], argv[3], num(argv[4]));
	if (argc == 5 && strcmp(argv[1], "wide") == 0)
		return do_wide(argv[2], argv[3], num(argv[4]));
	if (argc == 4 && strcmp(argv[1], "churn") == 0)
		return do_churn(argv[2], num(argv[3]));
	if (argc == 5 && strcmp(argv[1], "churn") == 0
	    && strcmp(argv[4], "nan") == 0) {
		sample_value = NAN;
		return do_churn(argv[2], num(argv[3]));
	}
	if (argc == 4 && strcmp(argv[1], "refuse") == 0)
		return do_refuse(argv[2], num(argv[3]));
	fprintf(stderr,
	    "usage: hostile idle ENDPOINT N SECONDS | flood ENDPOINT "
	    "SECONDS | sample ENDPOINT RUN TIME_NS | names ENDPOINT RUN N | "
	    "wide ENDPOINT RUN N | churn ENDPOINT N [nan] | refuse RUN N\n");
	return 2;
}
