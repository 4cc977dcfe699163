#include "collector/feed.h"

void
feed_batch(detect_engine *e, const wire_batch *b, int64_t quantum_ns,
    int64_t recv_ns, const char **names, size_t *lens, detect_emit_fn emit,
    void *ctx)
{
	size_t off = 0;

	for (uint32_t i = 0; i < b->nnames; i++)
		names[i] = wire_names_next(b, &off, &lens[i]);
	for (uint32_t i = 0; i < b->nsamples; i++) {
		wire_sample   ws;
		detect_sample s;

		wire_batch_sample(b, i, &ws);
		s.run     = b->id.run;
		s.runlen  = b->id.run_len;
		s.metric  = names[ws.name];
		s.mlen    = lens[ws.name];
		s.host    = b->id.host;
		s.hostlen = b->id.host_len;
		s.rank    = b->id.rank;
		s.step    = ws.step;
		s.time_ns = feed_quantize(ws.time_ns, quantum_ns);
		s.value   = ws.value;
		detect_feed(e, &s, emit, ctx);
	}
	if (b->flags & WIRE_FINAL)
		detect_end(e, b->id.run, b->id.run_len, b->id.rank, recv_ns,
		    emit, ctx);
}
