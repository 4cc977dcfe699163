/*
 * cache: the write caches of ingest (series records, emitter records,
 * runs): which entries are dirty in the open
 * transaction, and what is evicted after a commit to stay within the
 * bounds of ingest_opts. Everything evicted is clean and is read back
 * from the store on demand.
 */
#include "collector/ingest_int.h"

#include <stdlib.h>

#include "store/write.h"

/* ---- the tables ------------------------------------------------------ */

void
cache_drop(ingest *in)
{
	size_t pos = 0;
	void  *v;

	if (in->series != NULL) {
		while ((v = table_next(in->series, &pos)) != NULL)
			free(v);
	}
	pos = 0;
	while (in->emitters != NULL
	    && (v = table_next(in->emitters, &pos)) != NULL)
		cache_free_emitter(in, v);
	pos = 0;
	while (in->runs != NULL && (v = table_next(in->runs, &pos)) != NULL)
		free(v);
	table_free(in->series);
	table_free(in->emitters);
	table_free(in->runs);
	in->series = in->emitters = in->runs = NULL;
	in->ndser                            = 0;
	in->ndnew                            = 0;
	in->dirty_emitters                   = NULL;
	in->dirty_runs                       = NULL;
	in->np                               = 0;
	in->notice[0]                        = 0;
}

/* The tables' keys: each entry's own. */
static const uint8_t *
ser_key(const void *v, size_t *len)
{
	*len = ((const ser *) v)->keylen;
	return ((const ser *) v)->key;
}

static const uint8_t *
emi_key(const void *v, size_t *len)
{
	*len = ((const emi *) v)->keylen;
	return ((const emi *) v)->key;
}

static const uint8_t *
run_key(const void *v, size_t *len)
{
	*len = ((const run *) v)->len;
	return (const uint8_t *) ((const run *) v)->name;
}

int
cache_make(ingest *in)
{
	in->series   = table_new(ser_key);
	in->emitters = table_new(emi_key);
	in->runs     = table_new(run_key);
	if (in->series == NULL || in->emitters == NULL || in->runs == NULL) {
		cache_drop(in);
		return STORE_ENOMEM;
	}
	return 0;
}

void
cache_free_emitter(ingest *in, emi *e)
{
	in->order_total -= e->norder;
	free(e->order);
	free(e);
}

/* Empty every emitter's order: they may name a series being evicted. */
static void
forget_orders(ingest *in)
{
	size_t pos = 0;
	emi   *e;

	while ((e = table_next(in->emitters, &pos)) != NULL) {
		in->order_total -= e->norder;
		e->norder = e->cur = 0;
	}
}

/* ---- dirty entries --------------------------------------------------- */

void
cache_mark_run(ingest *in, run *r)
{
	if (!r->dirty) {
		r->dirty       = 1;
		r->next_dirty  = in->dirty_runs;
		in->dirty_runs = r;
	}
}

void
cache_mark_emitter(ingest *in, emi *e)
{
	if (!e->dirty) {
		e->dirty           = 1;
		e->next_dirty      = in->dirty_emitters;
		in->dirty_emitters = e;
	}
}

int
cache_mark_series(ingest *in, ser *s)
{
	/* Dirty while dirty_at is this transaction's number: every series
	 * is clean again once the commit counter moves, with no walk. */
	if (s->dirty_at == in->stats.commits + 1)
		return 0;
	if (in->ndser == in->dscap) {
		size_t     nc = in->dscap ? in->dscap * 2 : 1024;
		ser_dirty *nd = realloc(in->dser, nc * sizeof(*nd));

		if (nd == NULL)
			return STORE_ENOMEM;
		in->dser  = nd;
		in->dscap = nc;
	}
	s->dirty_at             = in->stats.commits + 1;
	s->dix                  = (uint32_t) in->ndser;
	in->dser[in->ndser].sid = s->sid;
	in->dser[in->ndser].n   = 0;
	in->dser[in->ndser++].s = s;
	return 0;
}

void
cache_settle(ingest *in)
{
	/* Series: their dirty_at is behind the commit counter now. */
	in->ndser = 0;
	in->ndnew = 0;
	for (emi *e = in->dirty_emitters, *n; e != NULL; e = n) {
		n             = e->next_dirty;
		e->dirty      = 0;
		e->next_dirty = NULL;
	}
	for (run *r = in->dirty_runs, *n; r != NULL; r = n) {
		n                = r->next_dirty;
		r->dirty         = 0;
		r->refused_dirty = 0;
		r->next_dirty    = NULL;
	}
	in->dirty_emitters = NULL;
	in->dirty_runs     = NULL;
}

/* ---- eviction -------------------------------------------------------- */

/* How evict_table reads and frees the entries of one cache. */
typedef struct cache_kind {
	uint64_t (*used)(const void *entry);
	table_key_fn key;
	void (*drop)(ingest *in, void *entry);
} cache_kind;

static uint64_t
ser_used(const void *v)
{
	return ((const ser *) v)->used;
}

static void
ser_drop(ingest *in, void *v)
{
	(void) in;
	free(v);
}

static uint64_t
emi_used(const void *v)
{
	return ((const emi *) v)->used;
}

static void
emi_drop(ingest *in, void *v)
{
	cache_free_emitter(in, v);
}

static const cache_kind series_kind   = { ser_used, ser_key, ser_drop };
static const cache_kind emitters_kind = { emi_used, emi_key, emi_drop };

/*
 * Past its bound, rebuild a cache with only what the last commit touched
 * (or empty it, if that is itself more than half the bound), so eviction
 * costs O(1) amortised per entry. Everything in the caches is clean here
 * (just committed). Returns 0, or -1 when out of memory (the caller then
 * drops the caches, which is always safe).
 */
static int
evict_table(ingest *in, table **t, size_t bound, const cache_kind *k)
{
	size_t   pos = 0, keep = 0;
	uint64_t now = in->stats.commits;
	table   *nt;
	void    *v;

	if (table_count(*t) <= bound)
		return 0;
	while ((v = table_next(*t, &pos)) != NULL)
		keep += k->used(v) == now;
	if (keep > bound / 2)
		keep = 0;
	if ((nt = table_new(k->key)) == NULL)
		return -1;
	pos = 0;
	while ((v = table_next(*t, &pos)) != NULL) {
		if (keep > 0 && k->used(v) == now && table_put(nt, v) == 0)
			continue;
		k->drop(in, v);
		in->stats.evictions++;
	}
	table_free(*t);
	*t = nt;
	return 0;
}

void
cache_evict(ingest *in)
{
	if (in->series == NULL)
		return;
	if (table_count(in->series) > in->opts.cache_series)
		forget_orders(in);
	if (evict_table(in, &in->series, in->opts.cache_series, &series_kind)
	        != 0
	    || evict_table(
	           in, &in->emitters, in->opts.cache_emitters, &emitters_kind)
	        != 0)
		cache_drop(in);
}
