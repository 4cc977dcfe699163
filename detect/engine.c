/*
 * engine: series, ranks, runs and detector groups; feeding samples and
 * ticks to the detectors; reloading rules without losing the state of
 * unchanged rules.
 *
 * A series (run, metric, rank) is matched against every rule once, when
 * it is first seen; the rules that match become its instances. Objects
 * are kept in creation order as well as in hash tables, so everything
 * that emits alerts walks them in an order that depends only on the
 * input: the same samples always give the same alerts.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "detect/budget.h"
#include "detect/detector.h"
#include "detect/incident.h"

/*
 * Series memory: every series' object, metric name, instance array and
 * series-scope states come from the engine's pool, in chunks of
 * POOL_CHUNK bytes (transparent huge pages where the system allows), and
 * go back to a free list of their size class. A wide run creates
 * 100,000 series at its first step: from malloc, the detection thread's
 * arena grew a page at a time (an mprotect and a page fault per 4 KB,
 * more than a third of the thread's time at 50,000 new series), and each
 * sample then touched its series' state through a different 4 KB page of
 * the TLB. Freed memory stays in the pool for the next series, so the
 * pool holds at most what the most series held at once (bounded by the
 * rules' max_series). Built with a sanitizer, each block is its own
 * calloc so that misuse is still caught.
 */
#define POOL_CHUNK ((size_t) 2 << 20)
#define POOL_HEAD 16 /* the block's size, keeping 16-byte alignment */
#define POOL_GRAIN 16
#define POOL_BIG 4096 /* larger blocks are calloc'ed */
#define POOL_CLASSES (POOL_BIG / POOL_GRAIN + 1)

#if defined(__SANITIZE_ADDRESS__)
#define POOL_PLAIN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
#define POOL_PLAIN 1
#endif
#endif

typedef struct pool_block {
	struct pool_block *next;
} pool_block;

typedef struct detect_pool {
	unsigned char **chunks;
	size_t          nchunks, cchunks;
	unsigned char  *cur; /* the unused end of the last chunk */
	size_t          left;
	pool_block     *free[POOL_CLASSES];
} detect_pool;

struct detect_engine {
	detect_rules   *rules;
	detect_matcher  m;
	detect_table    runs, ranks, series, groups;
	detect_series **sv;
	size_t          ns, cs;
	/* The series fed after sv[i] the last time sv[i] was fed (an index
	 * into sv, SIZE_MAX: none yet), and the index of the series fed
	 * last: a hint, checked against the sample's key before use. */
	size_t          *succ;
	size_t           last;
	detect_group   **gv; /* groups whose detector ticks */
	size_t           ng, cg;
	int64_t          now;
	int              limit_reported;
	detect_stats     st;
	detect_incidents inc;
	char             msg[512];
	detect_rule      limit_rule; /* names series_limit alerts */
	char             limit_name[16];
	detect_budget    bud;
	detect_pool      pool;
	detect_inst     *scratch; /* a new series' instances, rules->n */
	size_t           cscratch;
	/* A filter of the series' hashes (below): mask + 1 bits, built for
	 * a table of cap slots; stale: bits of series gone since. */
	uint64_t *filter;
	uint64_t  mask;
	size_t    filter_cap, stale;
	/* The rules' verdicts by metric name (below), for memo_rules. */
	struct memo_slot   *memo;
	size_t              memo_cap, memo_n; /* slots, names in them */
	const detect_rules *memo_rules;
};

/* ---- the series filter ---------------------------------------------------
 *
 * A sample of a run past its detection budget (25,000 series by default:
 * three quarters of a run of 100,000) belongs to no series, and finding
 * that in the table cost a cache miss in its megabytes of slots, the
 * detection thread's largest cost at width. The filter has one bit per
 * hash (8 bits per table slot, a fifteenth of the table's bytes): a clear
 * bit proves that no series has that hash, so the table is not probed; a
 * set bit (some series, or a series gone since, or another hash on the
 * same bit: about one in sixteen) sends the sample to the table as
 * before. It is rebuilt from the series when the table grows or when
 * half of its bits are stale.
 */

/* The filter's bit of hash h (its high bits: the table indexes with the
 * low ones). */
static uint64_t
filter_bit(const detect_engine *e, uint64_t h)
{
	return (h >> 20 ^ h >> 44) & e->mask;
}

static int
filter_has(const detect_engine *e, uint64_t h)
{
	uint64_t b = filter_bit(e, h);

	return e->filter == NULL || (e->filter[b >> 6] >> (b & 63) & 1);
}

/* The filter for the series now in the table. On failure there is none:
 * every sample goes to the table. */
static void
filter_build(detect_engine *e)
{
	size_t    bits = e->series.cap * 8;
	uint64_t *f;

	free(e->filter);
	e->filter     = NULL;
	e->filter_cap = e->series.cap;
	e->stale      = 0;
	if (bits < 64 || (f = calloc(bits / 64, sizeof(*f))) == NULL)
		return;
	e->filter = f;
	e->mask   = bits - 1;
	for (size_t i = 0; i < e->ns; i++) {
		uint64_t b = filter_bit(e, e->sv[i]->hash);

		f[b >> 6] |= 1ull << (b & 63);
	}
}

/* Series s is in the table now. */
static void
filter_add(detect_engine *e, const detect_series *s)
{
	uint64_t b;

	if (e->series.cap != e->filter_cap) {
		filter_build(e);
		return;
	}
	if (e->filter == NULL)
		return;
	b = filter_bit(e, s->hash);
	e->filter[b >> 6] |= 1ull << (b & 63);
}

/* A series left the table: its bit stays set (one proves nothing). */
static void
filter_removed(detect_engine *e)
{
	if (++e->stale > e->ns / 2 + 1024)
		filter_build(e);
}

/* ---- series memory -------------------------------------------------------
 */

#ifndef POOL_PLAIN
/* A new chunk for p. Returns 0, or -1 when out of memory. */
static int
pool_grow(detect_pool *p)
{
	unsigned char *c;

	if (p->nchunks == p->cchunks) {
		size_t          n  = p->cchunks ? p->cchunks * 2 : 16;
		unsigned char **cv = realloc(p->chunks, n * sizeof(*cv));

		if (cv == NULL)
			return -1;
		p->chunks  = cv;
		p->cchunks = n;
	}
	if ((c = aligned_alloc(POOL_CHUNK, POOL_CHUNK)) == NULL)
		return -1;
	/* Advice only: without huge pages the chunk works the same. */
	(void) madvise(c, POOL_CHUNK, MADV_HUGEPAGE);
	p->chunks[p->nchunks++] = c;
	p->cur                  = c;
	p->left                 = POOL_CHUNK;
	return 0;
}
#endif

/* size zeroed bytes, 16-byte aligned; NULL when out of memory. */
static void *
pool_alloc(detect_pool *p, size_t size)
{
	size_t         cls = (size + POOL_GRAIN - 1) / POOL_GRAIN;
	size_t         sz  = POOL_HEAD + cls * POOL_GRAIN;
	unsigned char *b;

#ifdef POOL_PLAIN
	(void) p;
	b = calloc(1, sz);
	if (b == NULL)
		return NULL;
	memcpy(b, &size, sizeof(size));
	return b + POOL_HEAD;
#else
	if (size > POOL_BIG) {
		if ((b = calloc(1, sz)) == NULL)
			return NULL;
	} else if (p->free[cls] != NULL) {
		b            = (unsigned char *) p->free[cls];
		p->free[cls] = p->free[cls]->next;
		memset(b, 0, sz);
	} else {
		if (p->left < sz && pool_grow(p) != 0)
			return NULL;
		b = p->cur;
		p->cur += sz;
		p->left -= sz;
	}
	memcpy(b, &size, sizeof(size));
	return b + POOL_HEAD;
#endif
}

/* Give back a block of pool_alloc (NULL: nothing). */
static void
pool_free(detect_pool *p, void *ptr)
{
	unsigned char *b;
	size_t         size, cls;

	if (ptr == NULL)
		return;
	b = (unsigned char *) ptr - POOL_HEAD;
	memcpy(&size, b, sizeof(size));
	cls = (size + POOL_GRAIN - 1) / POOL_GRAIN;
#ifndef POOL_PLAIN
	if (size <= POOL_BIG) {
		((pool_block *) (void *) b)->next = p->free[cls];
		p->free[cls]                      = (pool_block *) (void *) b;
		return;
	}
#endif
	(void) p;
	(void) cls;
	free(b);
}

static void
pool_fini(detect_pool *p)
{
	for (size_t i = 0; i < p->nchunks; i++)
		free(p->chunks[i]);
	free(p->chunks);
	memset(p, 0, sizeof(*p));
}

/* ---- keys ----------------------------------------------------------------
 */

typedef struct skey {
	const char       *run;
	size_t            runlen;
	const char       *metric;
	size_t            mlen;
	int32_t           rank;
	const char       *rule;
	const detect_run *runp;
} skey;

static uint64_t
hash_rank(uint64_t h, int32_t rank)
{
	uint8_t b[4] = { (uint8_t) rank, (uint8_t) (rank >> 8),
		(uint8_t) (rank >> 16), (uint8_t) (rank >> 24) };

	return detect_hash(h, b, 4);
}

static uint64_t
hash_run(const char *run, size_t len)
{
	return detect_hash(DETECT_HASH_INIT, run, len);
}

static int
eq_run(const void *o, const void *k)
{
	const detect_run *r   = o;
	const skey       *key = k;

	return r->len == key->runlen && memcmp(r->name, key->run, r->len) == 0;
}

static int
eq_rank(const void *o, const void *k)
{
	const detect_rank *r   = o;
	const skey        *key = k;

	return r->rank == key->rank && eq_run(r->run, k);
}

static int
eq_series(const void *o, const void *k)
{
	const detect_series *s   = o;
	const skey          *key = k;

	return s->rk->rank == key->rank && s->mlen == key->mlen
	    && memcmp(s->metric, key->metric, s->mlen) == 0
	    && eq_run(s->run, k);
}

static int
eq_group(const void *o, const void *k)
{
	const detect_group *g   = o;
	const skey         *key = k;

	return g->run == key->runp && strcmp(g->r->name, key->rule) == 0
	    && (key->metric == NULL ? g->metric == NULL
	                            : g->metric != NULL && g->mlen == key->mlen
	                && memcmp(g->metric, key->metric, g->mlen) == 0);
}

static uint64_t
hash_group(
    const char *rule, const detect_run *run, const char *metric, size_t mlen)
{
	uint64_t h = detect_hash(DETECT_HASH_INIT, rule, strlen(rule) + 1);

	h = detect_hash(h, run->name, run->len + 1);
	return metric ? detect_hash(h, metric, mlen) : h;
}

/* len bytes at p mixed into h 8 at a time (a series key is hashed for
 * every sample not found by next_series: detect_hash's byte at a time
 * was a tenth of the detection thread at 100,000 series a run). */
static uint64_t
hash_words(uint64_t h, const void *p, size_t len)
{
	const unsigned char *b = p;
	uint64_t             w;
	int                  longer = len >= 8;

	for (; len >= 8; b += 8, len -= 8) {
		memcpy(&w, b, 8);
		h = (h ^ w) * 0x9e3779b97f4a7c15ull;
		h ^= h >> 32;
	}
	/* The last len bytes, in the low ones of w: from the word ending
	 * with them when there is one, else in pieces of 4, 2 and 1 (a
	 * copy of len bytes was a byte loop into memory read back as a
	 * word, which stalled the load). The hash is never stored: on a
	 * big-endian machine it differs from a copy's, as well mixed. */
	w = 0;
	if (len > 0 && longer) {
		memcpy(&w, b + len - 8, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		w &= ~0ull >> (64 - 8 * len);
#else
		w >>= 64 - 8 * len;
#endif
	} else if (len > 0) {
		unsigned shift = 0;

		if (len & 4) {
			uint32_t x;

			memcpy(&x, b, 4);
			w = x, b += 4, shift = 32;
		}
		if (len & 2) {
			uint16_t x;

			memcpy(&x, b, 2);
			w |= (uint64_t) x << shift, b += 2, shift += 16;
		}
		if (len & 1)
			w |= (uint64_t) *b << shift;
	}
	w ^= (uint64_t) len << 56;
	return (h ^ w) * 0x9e3779b97f4a7c15ull;
}

/* The hash of a series key: its bits mixed (the table indexes with the
 * low ones). */
static uint64_t
hash_series(const char *run, size_t runlen, const char *metric, size_t mlen,
    int32_t rank)
{
	uint64_t h = hash_words(DETECT_HASH_INIT, run, runlen);

	h = hash_words(h ^ 0x5bd1e995, metric, mlen);
	h = (h ^ (uint32_t) rank) * 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 33);
}

/* ---- runs, ranks ----------------------------------------------------------
 */

static detect_run *
get_run(detect_engine *e, const detect_sample *s)
{
	skey        k = { .run = s->run, .runlen = s->runlen };
	uint64_t    h = hash_run(s->run, s->runlen);
	detect_run *r = detect_table_find(&e->runs, h, eq_run, &k);

	if (r != NULL)
		return r;
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return NULL;
	r->hash = h;
	r->len  = s->runlen;
	r->name = detect_dupn(s->run, s->runlen);
	if (r->name == NULL || detect_table_put(&e->runs, h, r) != 0) {
		free(r->name);
		free(r);
		return NULL;
	}
	return r;
}

static void
put_run(detect_engine *e, detect_run *r)
{
	if (--r->refs > 0)
		return;
	detect_table_del(&e->runs, r->hash, r);
	free(r->name);
	free(r);
}

/* The host of a rank follows its latest sample (a restart may move it). */
static void
set_host(detect_rank *rk, const detect_sample *s)
{
	char *h;

	if (s->host == NULL || s->hostlen == 0
	    || (rk->hostlen == s->hostlen
	        && memcmp(rk->host, s->host, s->hostlen) == 0))
		return;
	h = detect_dupn(s->host, s->hostlen);
	if (h == NULL)
		return; /* keeps the old name */
	free(rk->host);
	rk->host    = h;
	rk->hostlen = s->hostlen;
}

static detect_rank *
get_rank(detect_engine *e, detect_run *run, const detect_sample *s)
{
	skey     k = { .run = s->run, .runlen = s->runlen, .rank = s->rank };
	uint64_t h = hash_rank(run->hash, s->rank);
	detect_rank *rk = detect_table_find(&e->ranks, h, eq_rank, &k);

	if (rk != NULL)
		return rk;
	rk = calloc(1, sizeof(*rk));
	if (rk == NULL)
		return NULL;
	rk->hash = h;
	rk->run  = run;
	rk->rank = s->rank;
	rk->host = detect_dupn("", 0);
	if (rk->host == NULL || detect_table_put(&e->ranks, h, rk) != 0) {
		free(rk->host);
		free(rk);
		return NULL;
	}
	run->refs++;
	run->nranks++;
	return rk;
}

static void
put_rank(detect_engine *e, detect_rank *rk)
{
	if (--rk->refs > 0)
		return;
	detect_table_del(&e->ranks, rk->hash, rk);
	rk->run->nranks--;
	if (rk->ended)
		rk->run->nended--;
	put_run(e, rk->run);
	free(rk->host);
	free(rk);
}

/* ---- groups ------------------------------------------------------------- */

static void
group_free(detect_engine *e, detect_group *g)
{
	for (size_t i = 0; i < e->ng; i++) {
		if (e->gv[i] == g) {
			memmove(&e->gv[i], &e->gv[i + 1],
			    (e->ng - i - 1) * sizeof(*e->gv));
			e->ng--;
			break;
		}
	}
	detect_table_del(&e->groups, g->hash, g);
	for (uint32_t i = 0; i < g->nslots; i++)
		put_rank(e, g->slot_rank[i]);
	put_run(e, g->run);
	pool_free(&e->pool, g->slot_rank);
	pool_free(&e->pool, g->slots);
	pool_free(&e->pool, g->state);
	pool_free(&e->pool, g->metric);
	pool_free(&e->pool, g);
}

static void
group_put(detect_engine *e, detect_group *g)
{
	if (g != NULL && --g->refs == 0)
		group_free(e, g);
}

/* A block of pool p of size bytes holding the first old bytes of ptr
 * (of size old or more), which goes back to the pool; NULL when out of
 * memory (ptr is then kept). */
static void *
pool_grow_block(detect_pool *p, void *ptr, size_t old, size_t size)
{
	void *b = pool_alloc(p, size);

	if (b == NULL)
		return NULL;
	if (old > 0)
		memcpy(b, ptr, old);
	pool_free(p, ptr);
	return b;
}

/* The slot of rank rk in g, added if new. Returns -1 if out of memory.
 * The group's arrays come from the engine's pool, as its other memory
 * (see "Series memory"): a wide run's first step makes a group per
 * metric for the per-metric rules. */
static int64_t
group_slot(detect_engine *e, detect_group *g, detect_rank *rk)
{
	const detect_kind *k  = g->r->kind;
	size_t             sz = g->slot_size;

	for (uint32_t i = 0; i < g->nslots; i++)
		if (g->slot_rank[i] == rk)
			return i;
	if (g->nslots == g->cap) {
		uint32_t       cap = g->cap ? g->cap * 2 : 4;
		detect_rank  **sr  = pool_grow_block(&e->pool, g->slot_rank,
		      g->cap * sizeof(*sr), cap * sizeof(*sr));
		unsigned char *sl;

		if (sr == NULL)
			return -1;
		g->slot_rank = sr;
		sl           = pool_grow_block(&e->pool, g->slots,
		              (size_t) g->cap * (sz ? sz : 1),
		              (size_t) cap * (sz ? sz : 1));
		if (sl == NULL)
			return -1;
		g->slots = sl;
		g->cap   = cap;
	}
	memset(g->slots + (size_t) g->nslots * sz, 0, sz);
	if (k->slot_init != NULL)
		k->slot_init(g->slots + (size_t) g->nslots * sz, g->r);
	g->slot_rank[g->nslots] = rk;
	rk->refs++;
	return g->nslots++;
}

/* Attach a group-scope instance of series s to its group and slot.
 * Returns 0 or -1 (out of memory: the instance stays detached). */
static int
attach(detect_engine *e, detect_series *s, detect_inst *in)
{
	const detect_kind *k   = in->r->kind;
	int                pm  = k->scope == DETECT_SCOPE_RUN_METRIC;
	skey               key = { .run = s->run->name,
		              .runlen   = s->run->len,
		              .metric   = pm ? s->metric : NULL,
		              .mlen     = s->mlen,
		              .rule     = in->r->name,
		              .runp     = s->run };
	uint64_t           h
	    = hash_group(in->r->name, s->run, pm ? s->metric : NULL, s->mlen);
	detect_group *g = detect_table_find(&e->groups, h, eq_group, &key);
	int64_t       slot;

	if (g == NULL) {
		g = pool_alloc(&e->pool, sizeof(*g));
		if (g == NULL)
			return -1;
		g->hash  = h;
		g->r     = in->r;
		g->run   = s->run;
		g->state = pool_alloc(
		    &e->pool, k->state_size ? k->state_size(g->r) : 1);
		g->slot_size = k->slot_size ? k->slot_size(g->r) : 0;
		if (pm && (g->metric = pool_alloc(&e->pool, s->mlen + 1)))
			memcpy(g->metric, s->metric, s->mlen);
		g->mlen = s->mlen;
		if (g->state == NULL || (pm && g->metric == NULL))
			goto fail;
		if (k->tick != NULL && e->ng == e->cg) {
			size_t         c  = e->cg ? e->cg * 2 : 16;
			detect_group **gv = realloc(e->gv, c * sizeof(*gv));

			if (gv == NULL)
				goto fail;
			e->gv = gv;
			e->cg = c;
		}
		if (detect_table_put(&e->groups, h, g) != 0)
			goto fail;
		if (k->tick != NULL)
			e->gv[e->ng++] = g;
		if (k->init != NULL)
			k->init(g->state, g->r);
		s->run->refs++;
	}
	slot = group_slot(e, g, s->rk);
	if (slot < 0) {
		if (g->refs == 0)
			group_free(e, g);
		return -1;
	}
	g->refs++;
	in->g    = g;
	in->slot = (uint32_t) slot;
	return 0;
fail:
	pool_free(&e->pool, g->state);
	pool_free(&e->pool, g->metric);
	pool_free(&e->pool, g);
	return -1;
}

/* ---- series ------------------------------------------------------------- */

static void
inst_fini(detect_engine *e, detect_inst *in)
{
	pool_free(&e->pool, in->st);
	group_put(e, in->g);
	in->st = NULL;
	in->g  = NULL;
}

/* A fresh instance of rule r: state allocated for series-scope rules,
 * the group attached on first feed. Returns 0 or -1. */
static int
inst_new(detect_engine *e, detect_inst *in, const detect_rule *r)
{
	const detect_kind *k = r->kind;

	memset(in, 0, sizeof(*in));
	in->r = r;
	if (k->scope != DETECT_SCOPE_SERIES)
		return 0;
	in->st = pool_alloc(&e->pool, k->state_size ? k->state_size(r) : 1);
	if (in->st == NULL)
		return -1;
	if (k->init != NULL)
		k->init(in->st, r);
	return 0;
}

/* Whether rule r watches series s (1, 0; -1: PCRE2's match limit). */
static int
ask(detect_engine *e, const detect_rule *r, const detect_series *s)
{
	int rc = detect_rule_match(r, &e->m, s->run->name, s->run->len,
	    s->metric, s->mlen, s->rk->host, s->rk->hostlen, s->rk->rank);

	return rc < 0 ? -1 : rc;
}

static int
matches(detect_engine *e, const detect_rule *r, const detect_series *s)
{
	int rc = ask(e, r, s);

	if (rc < 0)
		e->st.match_limit++;
	return rc == 1;
}

/* ---- the rules' verdicts by metric name ----------------------------------
 *
 * A new series asks every rule whether it watches it, a PCRE2 match or
 * more per rule (a sixth of the detection thread at a wide run's first
 * step). Most rules look at the metric name alone (no run, host or rank
 * pattern: the default ones all do), and the ranks of a run name the
 * same metrics, so those rules' verdicts on a name are kept: an
 * open-addressed table of names (linear probing), each slot a copy of
 * its name and a byte per rule (nothing per series). It starts at
 * MEMO_MIN slots and doubles while it is three quarters full, up to
 * MEMO_MAX slots (then it is emptied and filled again), so every name
 * of a wide run is asked once: a direct-mapped table of 1,024 names
 * kept none of a run of 6,250 names per rank (each rank's names
 * replaced the last rank's before they came again). All emptied when
 * the rules change. The other rules are asked for every series, as
 * before.
 */
#define MEMO_MIN 1024
#define MEMO_MAX ((size_t) 1 << 17)
#define MEMO_ASK 2 /* a verdict that depends on more than the name */

typedef struct memo_slot {
	uint64_t hash;
	size_t   len;  /* of the name; 0: empty */
	char    *name; /* the name, then a verdict byte per rule */
} memo_slot;

static void
memo_clear(detect_engine *e)
{
	if (e->memo != NULL)
		for (size_t i = 0; i < e->memo_cap; i++)
			free(e->memo[i].name);
	free(e->memo);
	e->memo       = NULL;
	e->memo_rules = NULL;
	e->memo_cap   = 0;
	e->memo_n     = 0;
}

/* The slot of hash h in a table of cap slots, from where probing
 * starts. */
static size_t
memo_home(uint64_t h, size_t cap)
{
	return (size_t) (h ^ (h >> 29)) & (cap - 1);
}

/* The first empty slot of hash h in table t of cap slots (it has one:
 * the table is kept at most three quarters full). */
static size_t
memo_empty_slot(const memo_slot *t, size_t cap, uint64_t h)
{
	size_t k;

	for (k = memo_home(h, cap); t[k].len != 0; k = (k + 1) & (cap - 1))
		;
	return k;
}

/* A table of cap empty slots for the engine's rules, the names of the
 * old one moved in. Returns 0, or -1 when out of memory (the old table
 * is kept). */
static int
memo_resize(detect_engine *e, size_t cap)
{
	memo_slot *t = calloc(cap, sizeof(*t));

	if (t == NULL)
		return -1;
	for (size_t i = 0; e->memo != NULL && i < e->memo_cap; i++)
		if (e->memo[i].len != 0)
			t[memo_empty_slot(t, cap, e->memo[i].hash)]
			    = e->memo[i];
	free(e->memo);
	e->memo     = t;
	e->memo_cap = cap;
	return 0;
}

/* Whether rule r's verdict depends on the metric name only. */
static int
name_only(const detect_rule *r)
{
	return r->pat[DETECT_PAT_RUN].code == NULL
	    && r->pat[DETECT_PAT_HOST].code == NULL
	    && r->pat[DETECT_PAT_RANK].code == NULL;
}

/* The verdicts of the rules (1, 0, -1, MEMO_ASK: one per rule) on s's
 * metric name, or NULL when out of memory (the rules are then asked). */
static const int8_t *
memo_verdicts(detect_engine *e, const detect_series *s)
{
	const detect_rules *rs = e->rules;
	uint64_t   h = hash_words(DETECT_HASH_INIT, s->metric, s->mlen);
	memo_slot *m;
	int8_t    *v;
	size_t              k;

	if (s->mlen == 0)
		return NULL; /* 0 marks an empty slot: asked each time */
	if (e->memo_rules != rs) {
		memo_clear(e);
		if (memo_resize(e, MEMO_MIN) != 0)
			return NULL;
		e->memo_rules = rs;
	}
	for (k = memo_home(h, e->memo_cap); e->memo[k].len != 0;
	     k = (k + 1) & (e->memo_cap - 1)) {
		m = &e->memo[k];
		if (m->len == s->mlen && m->hash == h
		    && memcmp(m->name, s->metric, s->mlen) == 0)
			return (const int8_t *) (m->name + m->len);
	}
	/* A new name: room for it first (at most three quarters full, so
	 * that probes stay short and always end at an empty slot). */
	if ((e->memo_n + 1) * 4 > e->memo_cap * 3) {
		if (e->memo_cap < MEMO_MAX) {
			if (memo_resize(e, e->memo_cap * 2) != 0)
				return NULL;
		} else {
			for (size_t i = 0; i < e->memo_cap; i++) {
				free(e->memo[i].name);
				e->memo[i].name = NULL;
				e->memo[i].len  = 0;
			}
			e->memo_n = 0;
		}
		k = memo_empty_slot(e->memo, e->memo_cap, h);
	}
	m = &e->memo[k];
	if ((m->name = malloc(s->mlen + rs->n)) == NULL)
		return NULL;
	memcpy(m->name, s->metric, s->mlen);
	v = (int8_t *) (m->name + s->mlen);
	for (size_t i = 0; i < rs->n; i++)
		v[i] = name_only(&rs->v[i]) ? (int8_t) ask(e, &rs->v[i], s)
		                            : MEMO_ASK;
	m->hash = h;
	m->len  = s->mlen;
	e->memo_n++;
	return v;
}

static void
series_free(detect_engine *e, detect_series *s)
{
	if (s->rk->lead == s)
		s->rk->lead = NULL;
	if (s->run->lead == s)
		s->run->lead = NULL;
	for (uint32_t i = 0; i < s->ninst; i++)
		inst_fini(e, &s->inst[i]);
	pool_free(&e->pool, s->inst);
	pool_free(&e->pool, s->metric);
	put_rank(e, s->rk);
	pool_free(&e->pool, s);
}

static detect_series *
new_series(detect_engine *e, const detect_sample *s, uint64_t h)
{
	detect_series *ser;
	detect_run    *run;
	detect_rank   *rk;
	size_t         n = 0;
	const int8_t  *verdict;

	if (e->cscratch < e->rules->n) {
		detect_inst *v = realloc(e->scratch, e->rules->n * sizeof(*v));

		if (v == NULL)
			return NULL;
		e->scratch  = v;
		e->cscratch = e->rules->n;
	}
	if (e->ns == e->cs) {
		size_t          c  = e->cs ? e->cs * 2 : 64;
		detect_series **sv = realloc(e->sv, c * sizeof(*sv));
		size_t         *su;

		if (sv == NULL)
			return NULL;
		e->sv = sv;
		if ((su = realloc(e->succ, c * sizeof(*su))) == NULL)
			return NULL;
		e->succ = su;
		e->cs   = c;
	}
	run = get_run(e, s);
	if (run == NULL)
		return NULL;
	run->refs++;
	rk = get_rank(e, run, s);
	put_run(e, run);
	if (rk == NULL)
		return NULL;
	rk->refs++;
	set_host(rk, s);
	ser = pool_alloc(&e->pool, sizeof(*ser));
	if (ser == NULL)
		goto fail;
	ser->hash   = h;
	ser->run    = run;
	ser->rk     = rk;
	ser->mlen   = s->mlen;
	ser->metric = pool_alloc(&e->pool, s->mlen + 1);
	if (ser->metric == NULL)
		goto fail;
	memcpy(ser->metric, s->metric, s->mlen);
	/* The instances are gathered in scratch, then the series keeps an
	 * array of just those (a series matches a few of the rules). */
	verdict = memo_verdicts(e, ser);
	for (size_t i = 0; i < e->rules->n; i++) {
		const detect_rule *r = &e->rules->v[i];

		if (verdict != NULL && verdict[i] != MEMO_ASK) {
			e->st.match_limit += verdict[i] < 0;
			if (verdict[i] != 1)
				continue;
		} else if (!matches(e, r, ser)) {
			continue;
		}
		if (inst_new(e, &e->scratch[n], r) != 0)
			goto fail_scratch;
		n++;
	}
	ser->inst = pool_alloc(&e->pool, (n ? n : 1) * sizeof(*ser->inst));
	if (ser->inst == NULL)
		goto fail_scratch;
	memcpy(ser->inst, e->scratch, n * sizeof(*ser->inst));
	ser->ninst = (uint32_t) n;
	for (size_t i = 0; i < n; i++) {
		const detect_rule *r = ser->inst[i].r;
		size_t             j = (size_t) (r - e->rules->v);

		if (j < 64)
			run->watched |= 1ull << j;
		if (r->kind->change != NULL && r->incident != NULL
		    && !r->defer) {
			if (rk->lead == NULL)
				rk->lead = ser;
			if (run->lead == NULL)
				run->lead = ser;
		}
	}
	if (detect_table_put(&e->series, h, ser) != 0)
		goto fail;
	ser->idx       = e->ns;
	e->succ[e->ns] = SIZE_MAX;
	e->sv[e->ns++] = ser;
	filter_add(e, ser);
	return ser;
fail_scratch:
	for (size_t i = 0; i < n; i++)
		inst_fini(e, &e->scratch[i]);
fail:
	if (ser == NULL) {
		put_rank(e, rk);
		return NULL;
	}
	series_free(e, ser);
	return NULL;
}

/* ---- engine ------------------------------------------------------------- */

int
detect_engine_new(detect_rules *rules, detect_engine **out)
{
	detect_engine *e;

	*out = NULL;
	if (rules == NULL)
		return DETECT_EINVAL;
	e = calloc(1, sizeof(*e));
	if (e == NULL)
		return DETECT_ENOMEM;
	if (detect_matcher_init(&e->m) != 0) {
		free(e);
		return DETECT_ENOMEM;
	}
	atomic_fetch_add(&rules->refs, 1);
	e->rules = rules;
	snprintf(e->limit_name, sizeof(e->limit_name), "max_series");
	e->limit_rule.name = e->limit_name;
	e->last            = SIZE_MAX;
	e->inc.alerts      = &e->st.alerts;
	detect_budget_init(&e->bud);
	*out = e;
	return 0;
}

void
detect_engine_free(detect_engine *e)
{
	if (e == NULL)
		return;
	detect_incidents_fini(&e->inc);
	for (size_t i = e->ns; i-- > 0;)
		series_free(e, e->sv[i]);
	free(e->sv);
	free(e->succ);
	free(e->gv);
	free(e->scratch);
	free(e->filter);
	memo_clear(e);
	detect_table_fini(&e->series);
	detect_table_fini(&e->groups);
	detect_table_fini(&e->ranks);
	detect_table_fini(&e->runs);
	detect_matcher_fini(&e->m);
	detect_rules_free(e->rules);
	pool_fini(&e->pool);
	free(e);
}

void
detect_engine_stats(const detect_engine *e, detect_stats *out)
{
	*out                = e->st;
	out->series         = e->ns;
	out->series_evicted = e->bud.evicted;
	out->budget_refused = e->bud.refused;
}

void
detect_engine_budget(detect_engine *e, uint64_t per_run, int64_t idle_ns)
{
	e->bud.per_run = per_run;
	e->bud.idle_ns = idle_ns;
}

/*
 * Forget series s to make room (detect/budget.h). The last series takes
 * its place in e->sv. Its run, if nothing else holds it now, is forgotten
 * too, once what of it still fires is resolved.
 */
static void
evict(detect_engine *e, detect_series *s, detect_emit_fn emit, void *ctx)
{
	detect_run    *run  = s->run;
	detect_series *last = e->sv[e->ns - 1];

	detect_budget_remove(&e->bud, s);
	detect_table_del(&e->series, s->hash, s);
	/* Hints naming the last place now miss, and fall back on the
	 * table. */
	e->succ[s->idx] = e->succ[e->ns - 1];
	last->idx       = s->idx;
	e->sv[s->idx]   = last;
	e->ns--;
	e->bud.evicted++;
	filter_removed(e);
	run->refs++;
	series_free(e, s);
	if (run->refs == 1)
		detect_incidents_forget(&e->inc, run, e->now, emit, ctx);
	put_run(e, run);
}

static void
limit_reached(
    detect_engine *e, const detect_sample *s, detect_emit_fn emit, void *ctx)
{
	detect_ctx    c = { e, &e->limit_rule, NULL, emit, ctx };
	detect_origin o = { s->run, s->runlen, s->rank, s->host ? s->host : "",
		s->host ? s->hostlen : 0, s->metric, s->mlen };

	e->st.series_dropped++;
	if (e->limit_reported)
		return;
	e->limit_reported = 1;
	detect_emit(&c, &o, "series_limit", DETECT_WARNING, DETECT_RESOLVED,
	    DETECT_EVENT, s->step, s->time_ns, (double) e->ns, NAN,
	    "tracking %zu series, the most allowed (max_series): new series "
	    "are not checked",
	    e->ns);
}

/*
 * The series of key k if it is the one fed after the last series the
 * last time that one was fed, else NULL. An emitter names its series in
 * the same order every step, so a wide run finds nearly every series
 * here without hashing its key or probing the table; an index made
 * stale by an eviction names another series or none, and the key
 * comparison sends the sample to the table.
 */
static detect_series *
next_series(const detect_engine *e, const skey *k)
{
	size_t nx;

	if (e->last >= e->ns || (nx = e->succ[e->last]) >= e->ns)
		return NULL;
	return eq_series(e->sv[nx], k) ? e->sv[nx] : NULL;
}

/*
 * Start loading what the next samples will touch, following the hints:
 * an emitter names its series in the same order every step, so the
 * series fed next are known. Each sample's series object, instance array
 * and detector states were a cache miss apiece, one after the other
 * (the array's address is in the object, the states' in the array, and
 * where a state's values are in its first lines): in four stages, the
 * object of the fourth series ahead, the instance array of the third
 * (whose object came during the previous sample), the states' first
 * lines (and groups) of the second, and what the detectors of the next
 * one will touch beyond those (kind->prefetch) and its rank slots in
 * groups. Only loads are started: a hint gone stale costs a few wasted
 * ones.
 */
static void
prefetch_ahead(const detect_engine *e, size_t idx)
{
	const detect_series *s;
	size_t               n1, n2, n3, n4;

	if ((n1 = e->succ[idx]) >= e->ns)
		return;
	if ((n2 = e->succ[n1]) < e->ns) {
		if ((n3 = e->succ[n2]) < e->ns) {
			uintptr_t a, end;

			if ((n4 = e->succ[n3]) < e->ns) {
				s = e->sv[n4];
				__builtin_prefetch(s);
				__builtin_prefetch((const char *) s + 64);
			}
			s = e->sv[n3];
			/* Every line of the array: a series has a few
			 * instances of 32 bytes each, from anywhere in a
			 * line. */
			a   = (uintptr_t) s->inst & ~(uintptr_t) 63;
			end = (uintptr_t) (s->inst + s->ninst);
			for (; a < end; a += 64)
				__builtin_prefetch((const void *) a);
			__builtin_prefetch(s->metric);
		}
		s = e->sv[n2];
		for (uint32_t i = 0; i < s->ninst; i++) {
			const char *st = s->inst[i].st;

			if (st == NULL) {
				__builtin_prefetch(s->inst[i].g);
				continue;
			}
			for (int l = 0; l < 4; l++)
				__builtin_prefetch(st + 64 * l);
		}
	}
	s = e->sv[n1];
	for (uint32_t i = 0; i < s->ninst; i++) {
		const detect_inst *in = &s->inst[i];

		if (in->st != NULL) {
			if (in->r->kind->prefetch != NULL)
				in->r->kind->prefetch(in->st);
		} else if (in->g != NULL && in->slot < in->g->nslots) {
			/* A per-metric group's rank slot holds a window or a
			 * few values, its own: up to 1 KB of it. A per-run
			 * group's slot is every series' of its rank (in the
			 * cache): its first line. */
			const char *sl = detect_slot(in->g, in->slot);
			size_t      n  = 64;

			if (in->r->kind->scope == DETECT_SCOPE_RUN_METRIC)
				n = in->g->slot_size < 1024 ? in->g->slot_size
				                            : 1024;
			for (size_t l = 0; l < n; l += 64)
				__builtin_prefetch(sl + l);
		}
	}
}

/* Times are kept within [0, 2^62] ns (1970 to 2116) so that no sum or
 * difference of two times and a threshold overflows. */
#define TIME_MAX (INT64_C(1) << 62)

static int64_t
clamp_time(int64_t t)
{
	return t > TIME_MAX ? TIME_MAX : t < 0 ? 0 : t;
}

void
detect_feed(detect_engine *e, const detect_sample *sample, detect_emit_fn emit,
    void *ctx)
{
	detect_sample        copy;
	const detect_sample *s = &copy;
	skey                 k;
	uint64_t             h;
	detect_series       *ser;
	detect_ctx           c;

	if (e == NULL || sample == NULL)
		return;
	copy         = *sample;
	copy.time_ns = clamp_time(sample->time_ns);
	if (copy.run == NULL)
		copy.run = "", copy.runlen = 0;
	if (copy.metric == NULL)
		copy.metric = "", copy.mlen = 0;
	if (copy.host == NULL)
		copy.hostlen = 0;
	k = (skey) { .run = s->run,
		.runlen   = s->runlen,
		.metric   = s->metric,
		.mlen     = s->mlen,
		.rank     = s->rank };
	e->st.samples++;
	ser = next_series(e, &k);
	if (ser != NULL) {
		set_host(ser->rk, s);
		detect_budget_touch(&e->bud, ser, e->now);
		goto found;
	}
	h   = hash_series(s->run, s->runlen, s->metric, s->mlen, s->rank);
	ser = filter_has(e, h)
	    ? detect_table_find(&e->series, h, eq_series, &k)
	    : NULL;
	if (ser == NULL) {
		detect_series *v;
		detect_ctx     bc = { e, NULL, NULL, emit, ctx };

		if (detect_budget_over(&e->bud, &bc,
		        detect_table_find(
		            &e->runs, hash_run(s->run, s->runlen), eq_run, &k),
		        s))
			return;
		while (e->ns >= e->rules->max_series
		    && (v = detect_budget_victim(&e->bud, e->now)) != NULL)
			evict(e, v, emit, ctx);
		if (e->ns >= e->rules->max_series) {
			limit_reached(e, s, emit, ctx);
			return;
		}
		ser = new_series(e, s, h);
		if (ser == NULL)
			return; /* out of memory: the sample is not checked */
		detect_budget_add(&e->bud, ser, e->now);
	} else {
		set_host(ser->rk, s);
		detect_budget_touch(&e->bud, ser, e->now);
	}
	if (e->last < e->ns)
		e->succ[e->last] = ser->idx;
found:
	e->last = ser->idx;
	prefetch_ahead(e, ser->idx);
	/* Late: older than the series' last sample and at a lower step (a
	 * batch the emitter resent behind newer ones, a spool sent after
	 * the run went on). The store keeps it; the detectors have moved
	 * past its time, and it is no restart, which goes back in steps at
	 * a later time. */
	if (ser->seen
	    && detect_late(
	        s->time_ns, s->step, ser->last_time, ser->last_step)) {
		e->st.late++;
		return;
	}
	if (ser->rk->ended) {
		ser->rk->ended = 0;
		ser->run->nended--;
	}
	/* The run's step: rolls back with a restart; its advances are the
	 * clock of step-based holds. */
	if (ser->seen && s->step < ser->last_step
	    && s->step < ser->run->max_step)
		ser->run->max_step = s->step;
	if (s->step > ser->run->max_step || ser->run->adv == 0) {
		ser->run->max_step = s->step;
		ser->run->adv++;
	}
	c.e    = e;
	c.s    = ser;
	c.emit = emit;
	c.ctx  = ctx;
	for (uint32_t i = 0; i < ser->ninst; i++) {
		detect_inst       *in = &ser->inst[i];
		const detect_kind *kd = in->r->kind;

		if (kd->scope != DETECT_SCOPE_SERIES && in->g == NULL
		    && attach(e, ser, in) != 0)
			continue;
		c.r = in->r;
		if (ser->seen && s->step < ser->last_step && kd->rollback)
			kd->rollback(
			    &c, in, s, ser->last_step, ser->last_time);
		kd->feed(&c, in, s);
	}
	ser->last_step = s->step;
	ser->last_time = s->time_ns;
	ser->seen      = 1;
}

void
detect_tick(detect_engine *e, int64_t now_ns, detect_emit_fn emit, void *ctx)
{
	detect_ctx c = { e, NULL, NULL, emit, ctx };

	if (e == NULL)
		return;
	now_ns = clamp_time(now_ns);
	if (now_ns < e->now)
		return;
	e->now = now_ns;
	for (size_t i = 0; i < e->ng; i++) {
		c.r = e->gv[i]->r;
		c.r->kind->tick(&c, e->gv[i], now_ns);
	}
	detect_incidents_tick(&e->inc, now_ns, emit, ctx);
}

void
detect_flush(detect_engine *e, detect_emit_fn emit, void *ctx)
{
	if (e != NULL)
		detect_incidents_flush(&e->inc, emit, ctx);
}

void
detect_end(detect_engine *e, const char *run, size_t runlen, int32_t rank,
    int64_t time_ns, detect_emit_fn emit, void *ctx)
{
	detect_ctx   c = { e, NULL, NULL, emit, ctx };
	skey         k = { .run = run, .runlen = runlen, .rank = rank };
	detect_run  *rn;
	detect_rank *rk;

	if (e == NULL || run == NULL)
		return;
	time_ns = clamp_time(time_ns);
	rn = detect_table_find(&e->runs, hash_run(run, runlen), eq_run, &k);
	if (rn == NULL)
		return;
	rk = detect_table_find(
	    &e->ranks, hash_rank(rn->hash, rank), eq_rank, &k);
	for (size_t i = 0; i < e->ng; i++) {
		detect_group *g = e->gv[i];

		if (g->r->kind->end == NULL || g->run->len != runlen
		    || memcmp(g->run->name, run, runlen) != 0)
			continue;
		c.r = g->r;
		for (uint32_t j = 0; j < g->nslots; j++)
			if (g->slot_rank[j]->rank == rank)
				g->r->kind->end(&c, g, j, time_ns);
	}
	if (rk != NULL && !rk->ended) {
		rk->ended = 1;
		rn->nended++;
	}
	/* Every rank ended normally: the run finished, nothing of it is
	 * firing any more. */
	if (rn->nended == rn->nranks)
		detect_incidents_finish(&e->inc, rn, time_ns, emit, ctx);
}

int64_t
detect_engine_now(const detect_engine *e)
{
	return e->now;
}

/* ---- reload ------------------------------------------------------------- */

/*
 * Two phases, so that running out of memory leaves the engine as it was:
 * first every series gets its new instance array (kept instances are
 * borrowed, new ones allocated); then the old arrays are released and the
 * new ones installed.
 */
int
detect_engine_reload(detect_engine *e, detect_rules *nr)
{
	detect_rules * or = e->rules;
	int          *keep; /* new rule j <- old rule keep[j], or -1 */
	detect_inst **nv;
	size_t        i;

	if (nr == NULL)
		return DETECT_EINVAL;
	keep = malloc((nr->n + 1) * sizeof(*keep));
	nv   = calloc(e->ns + 1, sizeof(*nv));
	if (keep == NULL || nv == NULL)
		goto oom;
	for (size_t j = 0; j < nr->n; j++) {
		keep[j] = -1;
		for (size_t o = 0; o < or->n; o++)
			if (strcmp(or->v[o].name, nr->v[j].name) == 0
			    && strcmp(or->v[o].canon, nr->v[j].canon) == 0)
				keep[j] = (int) o;
	}
	for (i = 0; i < e->ns; i++) {
		detect_series *s = e->sv[i];
		size_t         n = 0;

		nv[i]
		    = pool_alloc(&e->pool, (nr->n ? nr->n : 1) * sizeof(**nv));
		if (nv[i] == NULL)
			goto oom;
		for (size_t j = 0; j < nr->n; j++) {
			const detect_rule *r = &nr->v[j];

			if (keep[j] >= 0) {
				const detect_rule *old = & or->v[keep[j]];

				for (uint32_t q = 0; q < s->ninst; q++) {
					if (s->inst[q].r != old)
						continue;
					nv[i][n]   = s->inst[q];
					nv[i][n].r = r;
					n++;
				}
				continue;
			}
			if (!matches(e, r, s))
				continue;
			if (inst_new(e, &nv[i][n], r) != 0)
				goto oom;
			n++;
		}
	}
	/* Commit: release instances of rules that changed or went away. */
	for (i = 0; i < e->ns; i++) {
		detect_series *s = e->sv[i];
		uint32_t       n = 0;

		for (uint32_t q = 0; q < s->ninst; q++) {
			int kept = 0;

			for (size_t j = 0; j < nr->n; j++)
				kept |= keep[j] >= 0 && s->inst[q].r == & or
				            ->v[keep[j]];
			if (!kept)
				inst_fini(e, &s->inst[q]);
		}
		for (size_t j = 0; j < nr->n; j++)
			if (nv[i][j].r != NULL)
				n++;
		pool_free(&e->pool, s->inst);
		s->inst  = nv[i];
		s->ninst = n;
	}
	/* Which rules watch each run, by their new index. */
	for (i = 0; i < e->ns; i++)
		e->sv[i]->run->watched = 0;
	for (i = 0; i < e->ns; i++)
		for (uint32_t q = 0; q < e->sv[i]->ninst; q++) {
			size_t j = (size_t) (e->sv[i]->inst[q].r - nr->v);

			if (j < 64)
				e->sv[i]->run->watched |= 1ull << j;
		}
	/* Groups of kept rules now belong to the new rule set. */
	for (size_t q = 0; q < e->groups.cap; q++) {
		detect_group *g = e->groups.slot[q].obj;

		if (g == NULL)
			continue;
		for (size_t j = 0; j < nr->n; j++)
			if (keep[j] >= 0 && g->r == & or->v[keep[j]])
				g->r = &nr->v[j];
	}
	detect_incidents_reload(&e->inc, or, nr, keep);
	free(keep);
	free(nv);
	atomic_fetch_add(&nr->refs, 1);
	e->rules = nr;
	memo_clear(e);
	detect_rules_free(or);
	return 0;
oom:
	if (nv != NULL) {
		for (i = 0; i < e->ns && nv[i] != NULL; i++) {
			for (size_t j = 0; j < nr->n; j++)
				if (nv[i][j].r != NULL
				    && keep[nv[i][j].r - nr->v] < 0)
					pool_free(&e->pool, nv[i][j].st);
			pool_free(&e->pool, nv[i]);
		}
	}
	free(keep);
	free(nv);
	return DETECT_ENOMEM;
}

/* ---- emitting ------------------------------------------------------------
 */

void
detect_origin_series(detect_origin *o, const detect_series *s)
{
	o->run     = s->run->name;
	o->runlen  = s->run->len;
	o->rank    = s->rk->rank;
	o->host    = s->rk->host;
	o->hostlen = s->rk->hostlen;
	o->metric  = s->metric;
	o->mlen    = s->mlen;
}

void
detect_origin_rank(detect_origin *o, const detect_rank *rk)
{
	o->run     = rk->run->name;
	o->runlen  = rk->run->len;
	o->rank    = rk->rank;
	o->host    = rk->host;
	o->hostlen = rk->hostlen;
	o->metric  = "";
	o->mlen    = 0;
}

void
detect_origin_run(detect_origin *o, const detect_run *run)
{
	o->run     = run->name;
	o->runlen  = run->len;
	o->rank    = -1;
	o->host    = "";
	o->hostlen = 0;
	o->metric  = "";
	o->mlen    = 0;
}

static detect_run *
find_run(detect_engine *e, const detect_origin *o)
{
	skey k = { .run = o->run, .runlen = o->runlen };

	return detect_table_find(
	    &e->runs, hash_run(o->run, o->runlen), eq_run, &k);
}

static void
emit_v(detect_ctx *c, const detect_origin *o, const char *kind, int sev,
    int state, int flags, uint64_t step, int64_t t, double value,
    double baseline, const char *fmt, va_list ap)
{
	detect_engine     *e = c->e;
	const detect_rule *r = c->r;
	detect_alert       a;
	char               run[160], metric[224], host[272];

	if (sev < 0)
		return;
	/* Names are NUL-terminated for the callback; series names are
	 * already, origins built from samples may not be. */
	snprintf(run, sizeof(run), "%.*s",
	    (int) (o->runlen < 159 ? o->runlen : 159), o->run);
	snprintf(metric, sizeof(metric), "%.*s",
	    (int) (o->mlen < 223 ? o->mlen : 223), o->metric);
	snprintf(host, sizeof(host), "%.*s",
	    (int) (o->hostlen < 271 ? o->hostlen : 271), o->host);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	memset(&a, 0, sizeof(a));
	a.rule     = r->name;
	a.kind     = kind;
	a.severity = sev;
	a.state    = state;
	a.run      = run;
	a.runlen   = strlen(run);
	a.rank     = o->rank;
	a.host     = host;
	a.hostlen  = strlen(host);
	a.metric   = metric;
	a.mlen     = strlen(metric);
	a.step     = step;
	a.time_ns  = t;
	a.value    = value;
	a.baseline = baseline;
	a.message  = e->msg;
	if (r->argv != NULL && sev >= r->exec_on
	    && (state == DETECT_FIRING || (flags & DETECT_EVENT))) {
		a.exec_argv       = (const char *const *) r->argv;
		a.exec_argc       = r->argc;
		a.exec_timeout_ms = r->timeout_ms;
	}
	/* Alerts of a run go through its incidents; the series limit is
	 * about no run. */
	detect_incidents_route(&e->inc, e->rules, r,
	    r == &e->limit_rule ? NULL : find_run(e, o), &a, flags, c->emit,
	    c->ctx);
}

void
detect_emit(detect_ctx *c, const detect_origin *o, const char *kind,
    int severity, int state, int flags, uint64_t step, int64_t time_ns,
    double value, double baseline, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit_v(c, o, kind, severity, state, flags, step, time_ns, value,
	    baseline, fmt, ap);
	va_end(ap);
}

void
detect_emit_series(detect_ctx *c, const char *kind, int severity, int state,
    int flags, const detect_sample *s, double value, double baseline,
    const char *fmt, ...)
{
	detect_origin o;
	va_list       ap;

	detect_origin_series(&o, c->s);
	va_start(ap, fmt);
	emit_v(c, &o, kind, severity, state, flags, s->step, s->time_ns, value,
	    baseline, fmt, ap);
	va_end(ap);
}

detect_num
detect_fmt(double v)
{
	detect_num n;

	if (isnan(v))
		snprintf(n.s, sizeof(n.s), "NaN");
	else if (isinf(v))
		snprintf(n.s, sizeof(n.s), "%s", v > 0 ? "Inf" : "-Inf");
	else
		snprintf(n.s, sizeof(n.s), "%.3g", v);
	return n;
}

/* n bytes of s and a NUL, malloc'ed; NULL when out of memory. */
char *
detect_dupn(const char *s, size_t n)
{
	char *p = malloc(n + 1);

	if (p != NULL) {
		if (n)
			memcpy(p, s, n);
		p[n] = 0;
	}
	return p;
}

detect_name
detect_name_of(const char *p, size_t len)
{
	detect_name n;

	snprintf(n.s, sizeof(n.s), "%.*s", (int) (len < 200 ? len : 200), p);
	return n;
}

/* Whether rule o is one that the deferring rule r defers to. */
static int
leads(const detect_rule *o, const detect_rule *r)
{
	return o != r && !o->defer && o->incident != NULL
	    && r->incident != NULL && strcmp(o->incident, r->incident) == 0;
}

/* The instance of series s (NULL: none) whose rule the deferring rule r
 * defers to. */
static const detect_inst *
lead_inst(const detect_series *s, const detect_rule *r)
{
	for (uint32_t j = 0; s != NULL && j < s->ninst; j++) {
		const detect_inst *in = &s->inst[j];

		if (leads(in->r, r) && in->r->kind->change != NULL
		    && in->st != NULL)
			return in;
	}
	return NULL;
}

double
detect_lead_change(const detect_ctx *c, uint32_t k, uint32_t nb, double *noise,
    detect_name *metric, int *up)
{
	const detect_series *bs = NULL;
	const detect_inst   *best;

	*noise       = NAN;
	*up          = 0;
	metric->s[0] = 0;
	if (c->s == NULL)
		return NAN;
	if ((best = lead_inst(c->s->rk->lead, c->r)) != NULL)
		bs = c->s->rk->lead;
	else if ((best = lead_inst(c->s->run->lead, c->r)) != NULL)
		bs = c->s->run->lead;
	if (best == NULL)
		return NAN;
	*metric = detect_name_of(bs->metric, bs->mlen);
	*up     = best->r->kind != &detect_kind_drop;
	return best->r->kind->change(best->st, k, nb, noise);
}
