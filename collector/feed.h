/*
 * feed: the step from a stored batch to the detectors. vitalsd's
 * detection thread runs it on every batch it stored, and fuzz/fuzz_wire.c
 * runs the same code, so the fuzzer tests what the daemon does. Pure: no
 * I/O and no clock (the caller passes the batch's arrival time), so the
 * fuzz target can compile it without the rest of the collector.
 */
#ifndef COLLECTOR_FEED_H
#define COLLECTOR_FEED_H

#include <stddef.h>
#include <stdint.h>

#include "detect/detect.h"
#include "wire/wire.h"

/* Name table room feed_batch may need: a batch has at most 65,535. */
#define FEED_NAMES_MAX 65536

/* A sample time as the store keeps it: rounded down to a multiple of q
 * (q <= 1: unchanged), or up where down would leave the int64 range (a
 * time near INT64_MIN, which only a broken emitter sends; fuzz_wire found
 * the overflow). */
static inline int64_t
feed_quantize(int64_t t, int64_t q)
{
	int64_t r;

	if (q <= 1)
		return t;
	r = t % q;
	if (r < 0)
		r += q;
	return t < INT64_MIN + r ? t + (q - r) : t - r;
}

/*
 * Feed every sample of a decoded batch to the engine, its time rounded to
 * quantum_ns as stored, and end the rank if the batch is its goodbye
 * (WIRE_FINAL) at recv_ns, the batch's arrival time (wall clock). names
 * and lens are scratch room for FEED_NAMES_MAX entries. Alerts go to
 * emit(ctx, alert).
 */
void feed_batch(detect_engine *e, const wire_batch *b, int64_t quantum_ns,
    int64_t recv_ns, const char **names, size_t *lens, detect_emit_fn emit,
    void *ctx);

#endif /* COLLECTOR_FEED_H */
