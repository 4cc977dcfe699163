/*
 * Fuzz target: the wire decoder, and what vitalsd does next with a batch
 * that decodes (every name and sample read, every sample fed to the
 * built-in detectors, a FINAL batch ending its rank).
 */
#include <stddef.h>
#include <stdint.h>

#include "detect/detect.h"
#include "wire/wire.h"

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
	wire_batch            b;
	wire_ack              ack;
	char                  err[256];
	size_t                off = 0, len;
	int64_t               last = 0;
	const char           *names[256];
	size_t                lens[256];

	wire_ack_decode(data, size, &ack);
	if (wire_batch_decode(data, size, &b, err, sizeof(err)) != 0)
		return 0;
	if (engine == NULL) {
		detect_rules *r;

		if (detect_rules_default(&r) != 0 ||
		    detect_engine_new(r, &engine) != 0)
			return 0;
		detect_rules_free(r);
	}
	for (uint32_t i = 0; i < b.nnames; i++) {
		const char *n = wire_names_next(&b, &off, &len);

		if (i < 256) {
			names[i] = n;
			lens[i]  = len;
		}
	}
	for (uint32_t i = 0; i < b.nsamples; i++) {
		wire_sample   ws;
		detect_sample s;

		wire_batch_sample(&b, i, &ws);
		if (ws.name >= 256)
			continue;
		s.run     = b.id.run;
		s.runlen  = b.id.run_len;
		s.host    = b.id.host;
		s.hostlen = b.id.host_len;
		s.rank    = b.id.rank;
		s.metric  = names[ws.name];
		s.mlen    = lens[ws.name];
		s.step    = ws.step;
		s.time_ns = ws.time_ns;
		s.value   = ws.value;
		detect_feed(engine, &s, ignore, NULL);
		last = ws.time_ns;
	}
	/* A goodbye: the rank ended (as vitalsd does after storing it). */
	if (b.flags & WIRE_FINAL)
		detect_end(engine, b.id.run, b.id.run_len, b.id.rank, last,
		    ignore, NULL);
	detect_tick(engine, INT64_MAX / 2, ignore, NULL);
	return 0;
}
