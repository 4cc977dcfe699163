/*
 * The samples part of the model: per series, the samples of the last
 * span steps a panel asked for, read incrementally.
 */
#include "tui/model_priv.h"

#include <stdlib.h>
#include <string.h>

/* Most samples held for one series (16 bytes each). */
#define TM_CACHE_SPAN ((uint64_t) 1 << 20)
/* Frames a cache survives without being asked for (~10 s at 4 Hz). */
#define TM_CACHE_KEEP 40

void
model_cache_free(model_samples *c)
{
	if (c == NULL)
		return;
	free(c->step);
	free(c->value);
	free(c);
}

typedef struct sample_ctx {
	model_samples *c;
	uint64_t       k; /* callbacks */
	int            oom;
} sample_ctx;

static int
on_sample(void *vctx, uint64_t step, int64_t t, double v)
{
	sample_ctx    *x = vctx;
	model_samples *c = x->c;

	(void) t;
	x->k++;
	if (c->n > 0 && step <= c->step[c->n - 1]) {
		/* The same step again (a restart): the later one wins. */
		if (step == c->step[c->n - 1])
			c->value[c->n - 1] = v;
		return 0;
	}
	if (c->n == c->cap) {
		size_t    nc = c->cap ? c->cap * 2 : 256;
		uint64_t *ns = realloc(c->step, nc * sizeof(*ns));
		double   *nv;

		if (ns == NULL)
			goto oom;
		c->step = ns;
		nv      = realloc(c->value, nc * sizeof(*nv));
		if (nv == NULL)
			goto oom;
		c->value = nv;
		c->cap   = nc;
	}
	c->step[c->n]  = step;
	c->value[c->n] = v;
	c->n++;
	return 0;
oom:
	x->oom = 1;
	return STORE_ENOMEM;
}

static int
cache_read(model *m, model_series *s, uint64_t from, uint64_t *count)
{
	sample_ctx x = { s->cache, 0, 0 };
	int        rc;

	rc = scan_samples(
	    m->st, m->txn, s->sid, from, UINT64_MAX, on_sample, &x);
	*count = x.k;
	return x.oom ? STORE_ENOMEM : rc;
}

/*
 * Bring the cache of s up to date for the last span steps: read only the
 * steps after those held, unless more history is wanted or a restart
 * stored samples among them.
 */
static int
cache_load(model *m, model_series *s, uint64_t span)
{
	model_samples *c;
	uint64_t       last = s->rec.last_step, from, k;
	int            rc;

	if (span > TM_CACHE_SPAN)
		span = TM_CACHE_SPAN;
	from = last >= span ? last - span + 1 : 0;
	if (s->cache == NULL) {
		if ((s->cache = calloc(1, sizeof(*s->cache))) == NULL)
			return STORE_ENOMEM;
		s->cache->from = UINT64_MAX;
	}
	c       = s->cache;
	c->used = m->frame;
	c->span = span;
	if (from < c->from) {
		c->n    = 0;
		c->from = from;
		rc      = cache_read(m, s, from, &k);
		c->seen = s->rec.samples;
		m->read_series++;
		return rc;
	}
	if (c->seen != s->rec.samples) {
		uint64_t want = s->rec.samples - c->seen;

		rc = cache_read(
		    m, s, c->n ? c->step[c->n - 1] + 1 : c->from, &k);
		m->read_series++;
		if (rc != 0)
			return rc;
		if (k != want) {
			/* Some went to steps already held: read again. */
			c->n = 0;
			if ((rc = cache_read(m, s, c->from, &k)) != 0)
				return rc;
		}
		c->seen = s->rec.samples;
	}
	/* Drop what is older than the window once it is twice as long. */
	if (c->n > 0 && from > c->from && from - c->from > span) {
		size_t i = 0;

		while (i < c->n && c->step[i] < from)
			i++;
		memmove(c->step, c->step + i, (c->n - i) * sizeof(*c->step));
		memmove(
		    c->value, c->value + i, (c->n - i) * sizeof(*c->value));
		c->n -= i;
		c->from = from;
	}
	return 0;
}

void
model_want(model *m, size_t i, uint64_t span)
{
	if (i < m->nseries && span > m->series[i].want)
		m->series[i].want = span;
}

int
model_samples_read(model *m)
{
	int rc;

	for (size_t i = 0; i < m->nseries; i++) {
		model_series *s = &m->series[i];

		if (s->want == 0 || s->rec.samples == 0)
			continue;
		if ((rc = cache_load(m, s, s->want)) != 0)
			return rc;
	}
	return 0;
}

void
model_samples_evict(model *m)
{
	for (size_t i = 0; i < m->nseries; i++) {
		model_series *s = &m->series[i];

		if (s->cache != NULL
		    && m->frame - s->cache->used > TM_CACHE_KEEP) {
			model_cache_free(s->cache);
			s->cache = NULL;
		}
	}
}
