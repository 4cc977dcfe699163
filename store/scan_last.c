#include "store/scan_last.h"

/* The sample held back until a later step shows it was the last one at
 * its step. */
typedef struct held {
	scan_sample_fn fn;
	void          *ctx;
	int            has;
	uint64_t       step;
	int64_t        time_ns;
	double         value;
} held;

static int
on_sample(void *vctx, uint64_t step, int64_t time_ns, double value)
{
	held *h  = vctx;
	int   rc = 0;

	if (h->has && step != h->step)
		rc = h->fn(h->ctx, h->step, h->time_ns, h->value);
	h->has     = 1;
	h->step    = step;
	h->time_ns = time_ns;
	h->value   = value;
	return rc;
}

int
scan_samples_last(store *st, store_txn *txn, uint32_t sid, uint64_t from,
    uint64_t to, scan_sample_fn fn, void *ctx)
{
	held h = { fn, ctx, 0, 0, 0, 0.0 };
	int  rc;

	rc = scan_samples(st, txn, sid, from, to, on_sample, &h);
	if (rc == 0 && h.has)
		rc = fn(ctx, h.step, h.time_ns, h.value);
	return rc;
}
