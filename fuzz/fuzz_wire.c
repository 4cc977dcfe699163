/*
 * Fuzz target: the wire decoder, and what vitalsd does next with a batch
 * that decodes: collector/feed.c, the same step from a batch to the
 * built-in detectors that vitalsd's detection thread runs (every name and
 * sample read, times rounded to the store's quantum, a FINAL batch ending
 * its rank), then a tick far in the future.
 */
#include <stddef.h>
#include <stdint.h>

#include "collector/feed.h"
#include "detect/detect.h"
#include "wire/wire.h"

/* vitalsd's default --time-quantum-ns (1 ms) and a fixed arrival time, so
 * that a run is repeatable. */
#define FUZZ_QUANTUM_NS 1000000
#define FUZZ_RECV_NS 1700000000000000000ll

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
ignore(void *ctx, const detect_alert *a)
{
	char line[4096];

	(void) ctx;
	detect_alert_json(a, line, sizeof(line));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static detect_engine *engine;
	static const char    *names[FEED_NAMES_MAX];
	static size_t         lens[FEED_NAMES_MAX];
	wire_batch            b;
	wire_ack              ack;
	char                  err[256];

	wire_ack_decode(data, size, &ack);
	if (wire_batch_decode(data, size, &b, err, sizeof(err)) != 0)
		return 0;
	if (engine == NULL) {
		detect_rules *r;

		if (detect_rules_default(&r) != 0
		    || detect_engine_new(r, &engine) != 0)
			return 0;
		detect_rules_free(r);
	}
	feed_batch(engine, &b, FUZZ_QUANTUM_NS, FUZZ_RECV_NS, names, lens,
	    ignore, NULL);
	detect_tick(engine, INT64_MAX / 2, ignore, NULL);
	return 0;
}
