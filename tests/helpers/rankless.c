/*
 * rankless: stores samples of rank -1, as a client that does not know its
 * rank sends them (docs/protocol.md: rank -1 if unknown; libvitals always
 * resolves one, so only other clients make such series).
 *
 *	rankless ENDPOINT RUN METRIC VALUE
 *
 * Sends one batch (steps 1 and 2, both VALUE) and waits for its
 * acknowledgement. Exit 0 if it was stored, 1 otherwise.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "wire/wire.h"

int
main(int argc, char **argv)
{
	static uint8_t buf[4096], in[256];
	wire_ident     id = { 0 };
	wire_sample    s;
	wire_ack       a;
	void          *ctx, *sock;
	size_t         off;
	int            timeout = 10000, stored = 0;
	double         v;

	if (argc != 5 || strlen(argv[2]) > 128 || strlen(argv[3]) > 255) {
		fprintf(stderr, "usage: rankless ENDPOINT RUN METRIC VALUE\n");
		return 2;
	}
	v              = strtod(argv[4], NULL);
	id.incarnation = (uint64_t) time(NULL) * 2654435761u + 29;
	id.start_ns    = (uint64_t) time(NULL) * 1000000000ull;
	id.pid         = 1;
	id.rank        = -1;
	id.local_rank  = -1;
	id.world_size  = -1;
	id.run         = argv[2];
	id.run_len     = (uint16_t) strlen(argv[2]);
	id.host        = "rankless";
	id.host_len    = 8;
	off            = wire_put_batch_head(buf, &id, 1, 1, 0);
	wire_put_names_count(buf, &off, 1);
	wire_put_name(buf, &off, argv[3], strlen(argv[3]));
	wire_put_samples_count(buf, &off, 2);
	for (uint64_t step = 1; step <= 2; step++) {
		s = (wire_sample) { 0, step,
			(int64_t) id.start_ns + (int64_t) step, v };
		wire_put_sample(buf, &off, &s);
	}
	ctx  = zmq_ctx_new();
	sock = zmq_socket(ctx, ZMQ_DEALER);
	zmq_setsockopt(sock, ZMQ_RCVTIMEO, &timeout, sizeof(timeout));
	if (zmq_connect(sock, argv[1]) != 0
	    || zmq_send(sock, buf, off, 0) != (int) off) {
		fprintf(stderr, "rankless: cannot send to %s\n", argv[1]);
		return 1;
	}
	for (;;) {
		int got = zmq_recv(sock, in, sizeof(in), 0);

		if (got < 0)
			break;
		if (wire_ack_decode(in, (size_t) got, &a) == 0
		    && a.incarnation == id.incarnation && a.seq == 1) {
			stored = a.status == WIRE_ACK_STORED;
			break;
		}
	}
	zmq_close(sock);
	zmq_ctx_term(ctx);
	return stored ? 0 : 1;
}
