/*
 * badsender: sends malformed and truncated messages straight to a
 * collector's socket, then one valid batch, and checks that the valid one
 * is acknowledged as stored.
 *
 *	badsender ENDPOINT RUN [ROUNDS]
 *
 * Exit 0 if the collector acknowledged the valid batch (and refused the
 * malformed ones it could name), 1 otherwise.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "wire/wire.h"

static uint64_t rng = 88172645463325252ull;

static uint64_t
next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* A valid batch of n samples of metric "ok" into buf; returns its size. */
static size_t
good_batch(uint8_t *buf, const char *run, uint64_t inc, uint64_t seq,
    uint32_t n)
{
	wire_ident id = { 0 };
	size_t     off;

	id.incarnation = inc;
	id.pid         = 1;
	id.rank        = 0;
	id.world_size  = 1;
	id.run         = run;
	id.run_len     = (uint16_t) strlen(run);
	id.host        = "badsender";
	id.host_len    = 9;
	off            = wire_put_batch_head(buf, &id, seq, seq, 0);
	wire_put_names_count(buf, &off, 1);
	wire_put_name(buf, &off, "ok", 2);
	wire_put_samples_count(buf, &off, n);
	for (uint32_t i = 0; i < n; i++) {
		wire_sample s = { 0, seq * 1000 + i, 1700000000000000000ll,
			(double) i };
		wire_put_sample(buf, &off, &s);
	}
	return off;
}

static void
send_bytes(void *sock, const void *p, size_t n)
{
	zmq_send(sock, p, n, 0);
}

int
main(int argc, char **argv)
{
	static uint8_t buf[1 << 16], bad[1 << 16];
	void          *ctx, *sock;
	long           rounds = argc > 3 ? strtol(argv[3], NULL, 10) : 200;
	uint64_t       inc    = (uint64_t) time(NULL) * 2654435761u + 17;
	size_t         n;
	int            timeout = 10000, stored = 0;
	wire_ack       a;

	if (argc < 3) {
		fprintf(stderr, "usage: badsender ENDPOINT RUN [ROUNDS]\n");
		return 2;
	}
	ctx  = zmq_ctx_new();
	sock = zmq_socket(ctx, ZMQ_DEALER);
	zmq_setsockopt(sock, ZMQ_RCVTIMEO, &timeout, sizeof(timeout));
	if (zmq_connect(sock, argv[1]) != 0) {
		fprintf(stderr, "badsender: connect %s failed\n", argv[1]);
		return 1;
	}
	n = good_batch(buf, argv[2], inc, 1, 100);
	for (long r = 0; r < rounds; r++) {
		size_t cut = (size_t) (next() % n);

		/* Truncated valid batch. */
		send_bytes(sock, buf, cut);
		/* Random garbage, sometimes with a valid magic. */
		for (size_t i = 0; i < 200; i++)
			bad[i] = (uint8_t) next();
		if (r % 2) {
			bad[0] = 'V';
			bad[1] = 'T';
			bad[2] = 1;
			bad[3] = 1;
		}
		send_bytes(sock, bad, (size_t) (next() % 200));
		/* A valid batch with one byte flipped in its tables. */
		memcpy(bad, buf, n);
		bad[64 + (next() % (n - 64))] ^= (uint8_t) (1 + next() % 255);
		send_bytes(sock, bad, n);
	}
	/* A sample naming a metric that is not in the table. */
	memcpy(bad, buf, n);
	wire_put16(bad + n - WIRE_SAMPLE_SIZE, 7);
	send_bytes(sock, bad, n);
	/* A count of samples far beyond the message. */
	memcpy(bad, buf, n);
	wire_put32(bad + n - 100 * WIRE_SAMPLE_SIZE - 4, 0xffffffffu);
	send_bytes(sock, bad, n);
	/* Invalid UTF-8 in the metric name. */
	memcpy(bad, buf, n);
	bad[n - 100 * WIRE_SAMPLE_SIZE - 4 - 2] = 0xff;
	send_bytes(sock, bad, n);
	/* A two-frame message. */
	zmq_send(sock, buf, n, ZMQ_SNDMORE);
	zmq_send(sock, buf, n, 0);
	/* Empty message. */
	zmq_send(sock, "", 0, 0);

	/* The valid one, with a fresh sequence number. */
	n = good_batch(buf, argv[2], inc, 2, 100);
	send_bytes(sock, buf, n);
	for (;;) {
		int got = zmq_recv(sock, bad, sizeof(bad), 0);

		if (got < 0)
			break;
		if (wire_ack_decode(bad, (size_t) got, &a) != 0)
			continue;
		if (a.incarnation == inc && a.seq == 2) {
			stored = a.status == WIRE_ACK_STORED;
			break;
		}
	}
	zmq_close(sock);
	zmq_ctx_term(ctx);
	printf("badsender: valid batch %s\n",
	    stored ? "stored" : "NOT acknowledged as stored");
	return stored ? 0 : 1;
}
