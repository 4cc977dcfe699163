/*
 * abuser: the misbehaving clients of tests/it_hardening.sh.
 *
 *	abuser names EMITTERS NAMES [STEP_US]
 *	    EMITTERS threads, each its own emitter (rank = thread), log a
 *	    new metric name every step ("n<step>"), NAMES steps; prints
 *	    "names logged L acked A dropped D rejected J"; exit 0 if every
 *	    sample was settled.
 *	abuser badnames ENDPOINT RUN
 *	    raw batches with invalid metric and run names (empty, control
 *	    characters, DEL, overlong UTF-8, surrogate, run name too long):
 *	    each must be refused (ack status 2), then a valid batch stored.
 *	abuser oversize ENDPOINT RUN MIB
 *	    sends one message of MIB MiB (over the collector's limit), then
 *	    a valid batch on a new socket, which must be stored.
 *	abuser halfzmtp HOST PORT SECONDS
 *	    opens raw TCP connections that write part of a ZMTP greeting, a
 *	    whole greeting then half a frame, or a frame header promising
 *	    1 GiB; holds them SECONDS, then closes them abruptly.
 *
 * The endpoint of names comes from $VITALS_ENDPOINT, the run from
 * $VITALS_RUN.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "vitals.h"
#include "wire/wire.h"

typedef struct job {
	long       names, step_us, rank;
	vt_emitter *em;
	vt_stats   st;
	int        rc;
} job;

static void *
names_thread(void *arg)
{
	job            *j = arg;
	char            name[32];
	struct timespec ts;

	for (long s = 0; s < j->names; s++) {
		snprintf(name, sizeof(name), "n%07ld", s);
		vt_emit(j->em, name, (uint64_t) s, (double) s);
		if (j->step_us > 0) {
			ts.tv_sec  = j->step_us / 1000000;
			ts.tv_nsec = (j->step_us % 1000000) * 1000;
			nanosleep(&ts, NULL);
		}
	}
	j->rc = vt_flush(j->em, 60000);
	vt_get_stats(j->em, &j->st);
	return NULL;
}

static long
num(const char *s)
{
	char *end;
	long  v;

	errno = 0;
	v     = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0) {
		fprintf(stderr, "abuser: bad number '%s'\n", s);
		exit(2);
	}
	return v;
}

static int
do_names(long n, long names, long step_us)
{
	job       *jobs = calloc((size_t) n, sizeof(*jobs));
	pthread_t *th   = calloc((size_t) n, sizeof(*th));
	uint64_t   logged = 0, acked = 0, dropped = 0, rejected = 0;
	int        failed = 0;

	if (jobs == NULL || th == NULL)
		return 1;
	for (long i = 0; i < n; i++) {
		vt_opts o;

		vt_opts_init(&o);
		o.rank           = (int) i;
		o.world_size     = (int) n;
		jobs[i].names    = names;
		jobs[i].step_us  = step_us;
		if (vt_open(&o, &jobs[i].em) != 0)
			return 1;
		pthread_create(&th[i], NULL, names_thread, &jobs[i]);
	}
	for (long i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		failed |= jobs[i].rc != 0;
		logged += jobs[i].st.logged;
		acked += jobs[i].st.acked;
		dropped += jobs[i].st.dropped;
		rejected += jobs[i].st.rejected;
		vt_close(jobs[i].em);
	}
	printf("names logged %llu acked %llu dropped %llu rejected %llu\n",
	    (unsigned long long) logged, (unsigned long long) acked,
	    (unsigned long long) dropped, (unsigned long long) rejected);
	free(jobs);
	free(th);
	return failed;
}

/* A batch of one sample of metric name (n bytes) in run; returns size. */
static size_t
batch(uint8_t *buf, const char *run, size_t runlen, uint64_t inc,
    uint64_t seq, const char *name, size_t n)
{
	wire_ident  id = { 0 };
	wire_sample s  = { 0, seq, 1700000000000000000ll, 1.5 };
	size_t      off;

	id.incarnation = inc;
	id.pid         = 1;
	id.world_size  = 1;
	id.run         = run;
	id.run_len     = (uint16_t) runlen;
	id.host        = "abuser";
	id.host_len    = 6;
	off            = wire_put_batch_head(buf, &id, seq, 1, 0);
	wire_put_names_count(buf, &off, 1);
	wire_put_name(buf, &off, name, n);
	wire_put_samples_count(buf, &off, 1);
	wire_put_sample(buf, &off, &s);
	return off;
}

/* Wait for the ack of (inc, seq); returns its status or -1. */
static int
ack_of(void *sock, uint64_t inc, uint64_t seq)
{
	uint8_t  buf[64];
	wire_ack a;
	int      got;

	while ((got = zmq_recv(sock, buf, sizeof(buf), 0)) >= 0) {
		if (wire_ack_decode(buf, (size_t) got, &a) == 0 &&
		    a.incarnation == inc && a.seq == seq)
			return (int) a.status;
	}
	return -1;
}

static void *
dealer(void *ctx, const char *ep)
{
	void *sock    = zmq_socket(ctx, ZMQ_DEALER);
	int   timeout = 10000, linger = 0;

	zmq_setsockopt(sock, ZMQ_RCVTIMEO, &timeout, sizeof(timeout));
	zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof(linger));
	if (zmq_connect(sock, ep) != 0) {
		fprintf(stderr, "abuser: cannot connect %s\n", ep);
		exit(1);
	}
	return sock;
}

static int
do_badnames(const char *ep, const char *run)
{
	static const struct {
		const char *what, *name;
		size_t      len;
	} bad[] = {
		{ "empty name", "", 0 },
		{ "newline", "loss\nx", 6 },
		{ "tab", "a\tb", 3 },
		{ "DEL", "a\x7f", 2 },
		{ "NUL", "a\0b", 3 },
		{ "invalid UTF-8", "\xff\xfe", 2 },
		{ "overlong UTF-8 '/'", "\xc0\xaf", 2 },
		{ "UTF-16 surrogate", "\xed\xa0\x80", 3 },
		{ "C1 control", "\xc2\x85", 2 },
		{ "truncated UTF-8", "ab\xe2\x82", 4 },
	};
	static uint8_t buf[4096];
	char           longrun[200];
	void          *ctx  = zmq_ctx_new();
	void          *sock = dealer(ctx, ep);
	uint64_t       inc  = (uint64_t) time(NULL) * 2654435761u + 99;
	uint64_t       seq  = 1;
	int            failed = 0, st;
	size_t         n;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++, seq++) {
		n  = batch(buf, run, strlen(run), inc, seq, bad[i].name,
                    bad[i].len);
		zmq_send(sock, buf, n, 0);
		st = ack_of(sock, inc, seq);
		printf("badnames: %-20s -> %s\n", bad[i].what,
		    st == WIRE_ACK_REJECTED ? "refused" :
		    st < 0                  ? "no answer" :
					      "ACCEPTED");
		failed |= st != WIRE_ACK_REJECTED;
	}
	/* A name of 255 bytes (the most a u8 length can say) is valid. */
	memset(longrun, 'x', sizeof(longrun));
	n = batch(buf, run, strlen(run), inc, seq, longrun, 180);
	zmq_send(sock, buf, n, 0);
	st = ack_of(sock, inc, seq);
	printf("badnames: %-20s -> %s\n", "180-byte name",
	    st == WIRE_ACK_STORED ? "stored" : "NOT stored");
	failed |= st != WIRE_ACK_STORED;
	seq++;
	/* A run name beyond 128 bytes. */
	n = batch(buf, longrun, 129, inc, seq, "ok", 2);
	zmq_send(sock, buf, n, 0);
	st = ack_of(sock, inc, seq);
	printf("badnames: %-20s -> %s\n", "129-byte run name",
	    st == WIRE_ACK_REJECTED ? "refused" : "NOT refused");
	failed |= st != WIRE_ACK_REJECTED;
	seq++;
	n = batch(buf, run, strlen(run), inc, seq, "valid.metric/ok", 15);
	zmq_send(sock, buf, n, 0);
	st = ack_of(sock, inc, seq);
	printf("badnames: %-20s -> %s\n", "valid batch",
	    st == WIRE_ACK_STORED ? "stored" : "NOT stored");
	failed |= st != WIRE_ACK_STORED;
	zmq_close(sock);
	zmq_ctx_term(ctx);
	return failed;
}

static int
do_oversize(const char *ep, const char *run, long mib)
{
	size_t   big  = (size_t) mib << 20;
	uint8_t *buf  = calloc(1, big);
	void    *ctx  = zmq_ctx_new();
	void    *sock = dealer(ctx, ep);
	uint64_t inc  = (uint64_t) time(NULL) * 2654435761u + 7;
	size_t   n;
	int      st;

	if (buf == NULL)
		return 1;
	/* Looks like a batch header, so only its size is wrong. */
	n = batch(buf, run, strlen(run), inc, 1, "big", 3);
	(void) n;
	zmq_send(sock, buf, big, 0);
	/* The collector drops this connection; ZeroMQ reconnects and
	 * the batch is gone: no answer expected. */
	st = ack_of(sock, inc, 1);
	printf("oversize: %ld MiB message -> %s\n", mib,
	    st < 0 ? "no answer (dropped)" : "answered");
	zmq_close(sock);
	sock = dealer(ctx, ep);
	n    = batch(buf, run, strlen(run), inc + 1, 1, "after", 5);
	zmq_send(sock, buf, n, 0);
	st = ack_of(sock, inc + 1, 1);
	printf("oversize: valid batch afterwards -> %s\n",
	    st == WIRE_ACK_STORED ? "stored" : "NOT stored");
	zmq_close(sock);
	zmq_ctx_term(ctx);
	free(buf);
	return st != WIRE_ACK_STORED;
}

static int
tcp_open(const char *host, int port)
{
	struct sockaddr_in a;
	int                fd = socket(AF_INET, SOCK_STREAM, 0);

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port   = htons((uint16_t) port);
	if (fd < 0 || inet_pton(AF_INET, host, &a.sin_addr) != 1 ||
	    connect(fd, (struct sockaddr *) &a, sizeof(a)) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static int
do_halfzmtp(const char *host, int port, long seconds)
{
	/* ZMTP 3.0 greeting: signature, version, NULL mechanism, as-server,
	 * filler. */
	uint8_t g[64] = { 0xff, 0, 0, 0, 0, 0, 0, 0, 1, 0x7f, 3, 0, 'N', 'U',
		'L', 'L' };
	/* A long frame header promising 1 GiB. */
	uint8_t big[9] = { 0x02, 0, 0, 0, 0, 0x40, 0, 0, 0 };
	int     fds[8], nfd = 0, fd;

	for (int k = 0; k < 8; k++) {
		if ((fd = tcp_open(host, port)) < 0) {
			fprintf(stderr, "halfzmtp: cannot connect\n");
			return 1;
		}
		switch (k % 4) {
		case 0: /* half the signature */
			(void) !write(fd, g, 5);
			break;
		case 1: /* the greeting, then nothing of the handshake */
			(void) !write(fd, g, 64);
			break;
		case 2: /* greeting plus half a READY command */
			(void) !write(fd, g, 64);
			(void) !write(fd, "\x04\x19\x05READY\x0bSocket-Ty", 17);
			break;
		case 3: /* garbage length header */
			(void) !write(fd, g, 64);
			(void) !write(fd, big, sizeof(big));
			break;
		}
		fds[nfd++] = fd;
	}
	printf("halfzmtp: %d connections holding half-written messages\n",
	    nfd);
	fflush(stdout);
	sleep((unsigned) seconds);
	for (int k = 0; k < nfd; k++)
		close(fds[k]);
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc >= 4 && strcmp(argv[1], "names") == 0)
		return do_names(num(argv[2]), num(argv[3]),
		    argc > 4 ? num(argv[4]) : 0);
	if (argc == 4 && strcmp(argv[1], "badnames") == 0)
		return do_badnames(argv[2], argv[3]);
	if (argc == 5 && strcmp(argv[1], "oversize") == 0)
		return do_oversize(argv[2], argv[3], num(argv[4]));
	if (argc == 5 && strcmp(argv[1], "halfzmtp") == 0)
		return do_halfzmtp(argv[2], (int) num(argv[3]), num(argv[4]));
	fprintf(stderr, "usage: abuser names|badnames|oversize|halfzmtp ...\n");
	return 2;
}
