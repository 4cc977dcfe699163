/*
 * bench_zmq: the ZeroMQ ceiling for vitals' traffic, measured in the same
 * run as the end-to-end ingest: DEALER -> ROUTER messages of one full
 * batch (4096 samples, as the emitter sends), each answered by a 24-byte
 * ack, at most 64 in flight, receiver doing nothing else.
 *
 *	bench_zmq ENDPOINT [MESSAGES]
 *
 * Prints messages/s and the samples/s they carry.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "wire/wire.h"

#define SAMPLES 4096
#define WINDOW 64

static const char *endpoint;
static long        messages;

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *
receiver(void *ctx)
{
	void   *sock = zmq_socket(ctx, ZMQ_ROUTER);
	uint8_t ack[WIRE_ACK_SIZE] = { 'V', 'T', 1, 2 };
	zmq_msg_t id, body;

	zmq_bind(sock, endpoint);
	for (long i = 0; i < messages; i++) {
		zmq_msg_init(&id);
		zmq_msg_init(&body);
		zmq_msg_recv(&id, sock, 0);
		zmq_msg_recv(&body, sock, 0);
		zmq_send(sock, zmq_msg_data(&id), zmq_msg_size(&id),
		    ZMQ_SNDMORE);
		zmq_send(sock, ack, sizeof(ack), 0);
		zmq_msg_close(&id);
		zmq_msg_close(&body);
	}
	zmq_close(sock);
	return NULL;
}

int
main(int argc, char **argv)
{
	void     *ctx = zmq_ctx_new(), *sock;
	pthread_t th;
	size_t    size = 100 + (size_t) SAMPLES * WIRE_SAMPLE_SIZE;
	uint8_t  *msg  = calloc(1, size), ack[64];
	long      sent = 0, acked = 0;
	double    t0, dt;

	if (argc < 2) {
		fprintf(stderr, "usage: bench_zmq ENDPOINT [MESSAGES]\n");
		return 2;
	}
	endpoint = argv[1];
	messages = argc > 2 ? strtol(argv[2], NULL, 10) : 20000;
	pthread_create(&th, NULL, receiver, ctx);
	sock = zmq_socket(ctx, ZMQ_DEALER);
	zmq_connect(sock, endpoint);
	/* Wait for the connection before timing. */
	{
		struct timespec ts = { 0, 200000000 };
		nanosleep(&ts, NULL);
	}
	t0 = now_s();
	while (acked < messages) {
		while (sent < messages && sent - acked < WINDOW) {
			zmq_send(sock, msg, size, 0);
			sent++;
		}
		zmq_recv(sock, ack, sizeof(ack), 0);
		acked++;
	}
	dt = now_s() - t0;
	pthread_join(th, NULL);
	printf("zeromq ceiling (%s, %zu-byte messages of %d samples, acked, "
	       "%d in flight): %.0f messages/s = %.2f M samples/s\n",
	    endpoint, size, SAMPLES, WINDOW, (double) messages / dt,
	    (double) messages * SAMPLES / dt / 1e6);
	zmq_close(sock);
	zmq_ctx_term(ctx);
	free(msg);
	return 0;
}
