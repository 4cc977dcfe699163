#include "store/scan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "store/be.h"
#include "store/block.h"
#include "store/store_int.h"
#include "store/write.h"

int
scan_runs(store *st, store_txn *txn, scan_run_fn fn, void *ctx)
{
	MDB_cursor *cur;
	MDB_val     k, v;
	int         rc, op = MDB_FIRST;

	if ((rc = mdb_cursor_open(txn->txn, st->runs, &cur)) != 0)
		return store_fail(st, rc, "reading runs");
	while ((rc = mdb_cursor_get(cur, &k, &v, op)) == 0) {
		run_rec r;

		op = MDB_NEXT;
		if (store_run_decode(v.mv_data, v.mv_size, &r) != 0) {
			snprintf(st->err, sizeof(st->err),
			    "%s: run record of %.*s does not parse", st->dir,
			    (int) k.mv_size, (const char *) k.mv_data);
			rc = STORE_ECORRUPT;
			break;
		}
		rc = fn(ctx, k.mv_data, k.mv_size, &r);
		if (rc != 0)
			break;
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

int
scan_run_get(store *st, store_txn *txn, const char *run, run_rec *out)
{
	(void) st;
	return store_get_run(txn, run, strlen(run), out);
}

int
scan_refused_get(
    store *st, store_txn *txn, const char *run, size_t runlen, uint64_t *out)
{
	int rc;

	(void) st;
	*out = 0;
	rc   = store_get_refused(txn, run, runlen, out);
	return rc == STORE_ENOTFOUND ? 0 : rc;
}

/* The emitters of a run, to be grouped by rank. */
typedef struct ranks_ctx {
	emitter_rec        *v;  /* in key order */
	const emitter_rec **by; /* sorted by ranks_cmp */
	size_t              n, cap;
} ranks_ctx;

static int
ranks_each(void *vctx, const char *run, size_t runlen, const emitter_rec *r)
{
	ranks_ctx *c = vctx;

	(void) run;
	(void) runlen;
	if (c->n == c->cap) {
		size_t       nc = c->cap ? c->cap * 2 : 64;
		emitter_rec *nv = realloc(c->v, nc * sizeof(*nv));

		if (nv == NULL)
			return STORE_ENOMEM;
		c->v   = nv;
		c->cap = nc;
	}
	c->v[c->n++] = *r;
	return 0;
}

/* By rank, then start time, then key order (the incarnation), so the
 * last of a rank is its latest process. */
static int
ranks_cmp(const void *a, const void *b)
{
	const emitter_rec *x = *(const emitter_rec *const *) a;
	const emitter_rec *y = *(const emitter_rec *const *) b;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	return x < y ? -1 : x > y;
}

int
scan_ranks(
    store *st, store_txn *txn, const char *run, scan_rank_fn fn, void *ctx)
{
	ranks_ctx c = { NULL, NULL, 0, 0 };
	int       rc;

	rc = scan_emitters(st, txn, run, ranks_each, &c);
	if (rc == 0 && c.n > 0 && (c.by = malloc(c.n * sizeof(*c.by))) == NULL)
		rc = STORE_ENOMEM;
	if (rc == 0) {
		for (size_t i = 0; i < c.n; i++)
			c.by[i] = &c.v[i];
		if (c.n > 1)
			qsort(c.by, c.n, sizeof(*c.by), ranks_cmp);
		for (size_t i = 0, j; rc == 0 && i < c.n; i = j) {
			scan_rank r;

			for (j = i; j < c.n && c.by[j]->rank == c.by[i]->rank;
			     j++)
				;
			r.rank = c.by[i]->rank;
			r.inc  = c.by + i;
			r.n    = j - i;
			rc     = fn(ctx, &r);
		}
	}
	free(c.by);
	free(c.v);
	return rc;
}

typedef struct fin_ctx {
	int ranks, ended;
} fin_ctx;

static int
fin_each(void *vctx, const scan_rank *r)
{
	fin_ctx *c = vctx;

	c->ranks++;
	c->ended += r->inc[r->n - 1]->ended != 0;
	return 0;
}

int
scan_run_finished(store *st, store_txn *txn, const char *run, int *out)
{
	fin_ctx c = { 0, 0 };
	int     rc;

	rc   = scan_ranks(st, txn, run, fin_each, &c);
	*out = rc == 0 && c.ranks > 0 && c.ended == c.ranks;
	return rc;
}

/*
 * Series listed in batches: the statistics of their samples still in
 * the journal are added in one pass over the journal per batch (a
 * lookup per record per series would cost records x series). The
 * journal records up to a series' jseen hold none of its samples
 * (docs/storage.md, "The journal", invariant 4), so every group of the
 * series counts, as scan_samples reads them. A batch grows to
 * LIST_BATCH series: listed in key order (run, metric, rank), a batch's
 * sids are spread over the records' groups (a wide run numbers its
 * series rank by rank), so a small batch reads each record at scattered
 * places, one cache miss after another, and a listing of every series
 * reads the journal once per batch; a large one reads most of each
 * record in order (store_journal_add_stats). About 210 bytes a series
 * (its entry, its place in sid order, a copy of its statistics).
 */
#define LIST_BATCH 65536

typedef struct list_slot {
	uint32_t sid;
	uint32_t i; /* in batch */
} list_slot;

typedef struct list_batch {
	scan_series *s;
	list_slot   *by;   /* by ascending sid */
	series_rec  *recs; /* their statistics, by[] order, for the journal */
	size_t       n, cap;
} list_batch;

static int
slot_cmp(const void *a, const void *b)
{
	const list_slot *x = a, *y = b;

	return x->sid < y->sid ? -1 : x->sid > y->sid;
}

/* Room for one more series in b (up to LIST_BATCH). Returns 0 or -1. */
static int
list_room(list_batch *b)
{
	size_t       nc = b->cap ? b->cap * 2 : 256;
	scan_series *s;
	list_slot   *by;
	series_rec  *recs;

	if (b->n < b->cap)
		return 0;
	if (nc > LIST_BATCH)
		nc = LIST_BATCH;
	if ((s = realloc(b->s, nc * sizeof(*s))) == NULL)
		return -1;
	b->s = s;
	if ((by = realloc(b->by, nc * sizeof(*by))) == NULL)
		return -1;
	b->by = by;
	if ((recs = realloc(b->recs, nc * sizeof(*recs))) == NULL)
		return -1;
	b->recs = recs;
	b->cap  = nc;
	return 0;
}

static void
list_free(list_batch *b)
{
	free(b->s);
	free(b->by);
	free(b->recs);
}

/* Patch the batch's statistics, then hand its series to fn. */
static int
list_flush(store_txn *txn, list_batch *b, scan_series_fn fn, void *ctx)
{
	size_t nby = 0;
	int    rc  = 0;

	for (size_t i = 0; i < b->n; i++) {
		if ((rc = journal_series_stats(txn, &b->s[i].rec)) != 0)
			return rc;
		if (b->s[i].rec.jseen != UINT64_MAX) {
			b->by[nby].sid = b->s[i].rec.sid;
			b->by[nby].i   = (uint32_t) i;
			nby++;
		}
	}
	if (nby > 1)
		qsort(b->by, nby, sizeof(*b->by), slot_cmp);
	for (size_t i = 0; i < nby; i++)
		b->recs[i] = b->s[b->by[i].i].rec;
	rc = store_journal_add_stats(txn, b->recs, nby);
	for (size_t i = 0; rc == 0 && i < nby; i++)
		b->s[b->by[i].i].rec = b->recs[i];
	for (size_t i = 0; rc == 0 && i < b->n; i++)
		rc = fn(ctx, &b->s[i]);
	b->n = 0;
	return rc;
}

/*
 * One series of format 7's index (store->by_metric): its key, run NUL
 * metric NUL, and its duplicate, the rank+1 (u32 BE) and the sid (u32
 * LE). run and metric point into k (the map). 0 or -1.
 */
static int
metric_parse(const MDB_val *k, const MDB_val *v, scan_series *s)
{
	const uint8_t *key = k->mv_data, *z1, *d = v->mv_data;

	if (k->mv_size < 3 || key[k->mv_size - 1] != 0 || v->mv_size != 8
	    || (z1 = memchr(key, 0, k->mv_size - 1)) == NULL
	    || memchr(z1 + 1, 0, (size_t) (key + k->mv_size - 2 - z1)))
		return -1;
	s->run    = (const char *) key;
	s->runlen = (size_t) (z1 - key);
	s->metric = (const char *) z1 + 1;
	s->mlen   = (size_t) (key + k->mv_size - 1 - (z1 + 1));
	s->rank   = (int32_t) (be_get32(d) - 1u);
	return store_series_decode(d + 4, 4, &s->rec) != 0 ? -1 : 0;
}

/*
 * The series whose key starts with run NUL (and metric NUL, if metric is
 * given): one contiguous key range, since keys sort by run, metric, rank
 * (format 7's index by metric: its keys sort by run and metric, each
 * one's ranks in order).
 */
static int
series_range(store *st, store_txn *txn, const char *run, const char *metric,
    scan_series_fn fn, void *ctx)
{
	MDB_cursor *cur;
	MDB_val     k, v;
	size_t      rl = run ? strlen(run) : 0;
	size_t      ml = metric ? strlen(metric) : 0;
	int         rc, op = MDB_FIRST;
	uint8_t     key[STORE_KEY_MAX];
	list_batch  b = { NULL, NULL, NULL, 0, 0 };

	if (rl > WIRE_RUN_MAX || ml > WIRE_NAME_MAX)
		return 0;
	if ((rc = mdb_cursor_open(
	         txn->txn, st->by_metric ? st->metrics : st->series, &cur))
	    != 0)
		return store_fail(st, rc, "reading series");
	if (run != NULL) {
		memcpy(key, run, rl);
		key[rl]   = 0;
		k.mv_size = rl + 1;
		if (metric != NULL) {
			memcpy(key + rl + 1, metric, ml);
			key[rl + 1 + ml] = 0;
			k.mv_size += ml + 1;
		}
		k.mv_data = key;
		op        = MDB_SET_RANGE;
	}
	while ((rc = mdb_cursor_get(cur, &k, &v, op)) == 0) {
		scan_series *s;

		op = MDB_NEXT;
		if (list_room(&b) != 0) {
			snprintf(st->err, sizeof(st->err), "%s: out of memory",
			    st->dir);
			rc = STORE_ENOMEM;
			break;
		}
		s = &b.s[b.n];
		if (st->by_metric
		        ? metric_parse(&k, &v, s) != 0
		        : store_series_key_parse(k.mv_data, k.mv_size, &s->run,
		              &s->runlen, &s->metric, &s->mlen, &s->rank)
		                != 0
		            || store_series_decode(
		                   v.mv_data, v.mv_size, &s->rec)
		                != 0) {
			snprintf(st->err, sizeof(st->err),
			    "%s: a series record does not parse", st->dir);
			rc = STORE_ECORRUPT;
			break;
		}
		if (run != NULL
		    && (s->runlen != rl || memcmp(s->run, run, rl)))
			break;
		if (metric != NULL
		    && (s->mlen != ml || memcmp(s->metric, metric, ml)))
			break;
		if (++b.n == LIST_BATCH
		    && (rc = list_flush(txn, &b, fn, ctx)) != 0)
			break;
	}
	if (rc == 0 || rc == MDB_NOTFOUND)
		rc = list_flush(txn, &b, fn, ctx);
	mdb_cursor_close(cur);
	list_free(&b);
	return rc;
}

int
scan_series_of(
    store *st, store_txn *txn, const char *run, scan_series_fn fn, void *ctx)
{
	return series_range(st, txn, run, NULL, fn, ctx);
}

int
scan_series_metric(store *st, store_txn *txn, const char *run,
    const char *metric, scan_series_fn fn, void *ctx)
{
	return series_range(st, txn, run, metric, fn, ctx);
}

int
scan_emitters(
    store *st, store_txn *txn, const char *run, scan_emitter_fn fn, void *ctx)
{
	MDB_cursor *cur;
	MDB_val     k, v;
	size_t      rl = run ? strlen(run) : 0;
	int         rc, op = MDB_FIRST;
	uint8_t     key[STORE_KEY_MAX];

	if ((rc = mdb_cursor_open(txn->txn, st->emitters, &cur)) != 0)
		return store_fail(st, rc, "reading emitters");
	if (run != NULL) {
		if (rl > WIRE_RUN_MAX) {
			mdb_cursor_close(cur);
			return 0;
		}
		memcpy(key, run, rl);
		key[rl]   = 0;
		k.mv_data = key;
		k.mv_size = rl + 1;
		op        = MDB_SET_RANGE;
	}
	while ((rc = mdb_cursor_get(cur, &k, &v, op)) == 0) {
		emitter_rec    r;
		const uint8_t *z = memchr(k.mv_data, 0, k.mv_size);
		size_t         krl;

		op = MDB_NEXT;
		if (z == NULL
		    || store_emitter_decode(v.mv_data, v.mv_size, &r) != 0) {
			snprintf(st->err, sizeof(st->err),
			    "%s: an emitter record does not parse", st->dir);
			rc = STORE_ECORRUPT;
			break;
		}
		krl = (size_t) (z - (const uint8_t *) k.mv_data);
		if (run != NULL && (krl != rl || memcmp(k.mv_data, run, rl)))
			break;
		if ((rc = fn(ctx, k.mv_data, krl, &r)) != 0)
			break;
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

/* One block being merged: its decoder and the sample it holds next. */
typedef struct merge_src {
	block_dec dec;
	uint64_t  step;
	int64_t   time;
	double    value;
	uint64_t  order; /* key order, to break ties between equal steps */
} merge_src;

typedef struct merge {
	merge_src *src;
	size_t     n, cap;
} merge;

/* Advance src; returns 1 if it holds a sample, 0 if done, -1 if corrupt. */
static int
merge_advance(merge_src *s)
{
	return block_dec_next(&s->dec, &s->step, &s->time, &s->value);
}

/*
 * Emit, in step order, every held sample with step < limit (all of them if
 * limit is UINT64_MAX and drain is set), filtering to [from, to]. With one
 * source, the common case, this is a straight decode loop.
 */
static int
merge_emit(store *st, merge *m, uint64_t limit, int drain, uint64_t from,
    uint64_t to, scan_sample_fn fn, void *ctx)
{
	for (;;) {
		size_t best = SIZE_MAX;
		int    rc;

		for (size_t i = 0; i < m->n; i++) {
			merge_src *s = &m->src[i];

			if (best == SIZE_MAX || s->step < m->src[best].step
			    || (s->step == m->src[best].step
			        && s->order < m->src[best].order))
				best = i;
		}
		if (best == SIZE_MAX)
			return 0;
		if (!drain && m->src[best].step >= limit)
			return 0;
		if (m->src[best].step > to)
			return 0;
		if (m->src[best].step >= from) {
			rc = fn(ctx, m->src[best].step, m->src[best].time,
			    m->src[best].value);
			if (rc != 0)
				return rc;
		}
		rc = merge_advance(&m->src[best]);
		if (rc < 0) {
			snprintf(st->err, sizeof(st->err),
			    "%s: a block of series is corrupt", st->dir);
			return STORE_ECORRUPT;
		}
		if (rc == 0)
			m->src[best] = m->src[--m->n];
	}
}

/* Add a block to the merge (its decoder holding its first sample).
 * Returns 0 or a store_err. */
static int
merge_add(store *st, merge *m, uint32_t sid, const void *data, size_t len,
    uint64_t order)
{
	merge_src *s;

	if (m->n == m->cap) {
		size_t     nc = m->cap ? m->cap * 2 : 4;
		merge_src *ns = realloc(m->src, nc * sizeof(*ns));

		if (ns == NULL)
			return STORE_ENOMEM;
		m->src = ns;
		m->cap = nc;
	}
	s        = &m->src[m->n];
	s->order = order;
	if (block_dec_init(&s->dec, data, len) != BLOCK_OK
	    || merge_advance(s) != 1) {
		snprintf(st->err, sizeof(st->err),
		    "%s: block of series %u is corrupt", st->dir, sid);
		return STORE_ECORRUPT;
	}
	m->n++;
	return 0;
}

/*
 * Feed one block, in key order, to the merge: skipped by its header when
 * it ends before the range; *stop set when it starts after it (the
 * caller stops there). Returns 0, the callback's value or a store_err.
 */
static int
merge_block(store *st, merge *m, uint32_t sid, const void *data, size_t len,
    uint64_t order, uint64_t from, uint64_t to, scan_sample_fn fn, void *ctx,
    int *stop)
{
	block_info info;
	int        rc;

	if (block_peek(data, len, &info) != BLOCK_OK) {
		snprintf(st->err, sizeof(st->err),
		    "%s: block header of series %u is corrupt", st->dir, sid);
		return STORE_ECORRUPT;
	}
	if (info.last_step < from || info.count == 0)
		return 0;
	if (info.first_step > to) {
		*stop = 1;
		return 0;
	}
	/* Everything held that sorts before this block goes out. */
	rc = merge_emit(st, m, info.first_step, 0, from, to, fn, ctx);
	if (rc != 0)
		return rc;
	return merge_add(st, m, sid, data, len, order);
}

/* One block of a series read with its journal samples: stored, or as the
 * fold would write it (data then points into own). */
typedef struct vblock {
	uint64_t       first_step;
	uint32_t       no;
	const uint8_t *data;
	size_t         len;
	uint8_t       *own;
} vblock;

typedef struct vlist {
	vblock *b;
	size_t  n, cap;
	size_t  stored; /* b[0 .. stored - 1] are the stored blocks */
} vlist;

static int
vlist_add(vlist *l, uint64_t first_step, uint32_t no, const void *data,
    size_t len, int copy)
{
	vblock *b;

	if (l->n == l->cap) {
		size_t  nc = l->cap ? l->cap * 2 : 16;
		vblock *nb = realloc(l->b, nc * sizeof(*nb));

		if (nb == NULL)
			return STORE_ENOMEM;
		l->b   = nb;
		l->cap = nc;
	}
	b             = &l->b[l->n];
	b->first_step = first_step;
	b->no         = no;
	b->len        = len;
	b->own        = NULL;
	if (copy) {
		if ((b->own = malloc(len)) == NULL)
			return STORE_ENOMEM;
		memcpy(b->own, data, len);
	}
	b->data = copy ? b->own : data;
	l->n++;
	return 0;
}

/* A block the fold would write replaces the stored block of its key. */
static int
vlist_fold(void *vl, uint64_t first_step, uint32_t no, block_enc *enc)
{
	vlist         *l = vl;
	size_t         len;
	const uint8_t *data = block_enc_data(enc, &len);

	for (size_t i = 0; i < l->stored; i++) {
		if (l->b[i].first_step == first_step && l->b[i].no == no)
			l->b[i].len = 0; /* superseded */
	}
	return vlist_add(l, first_step, no, data, len, 1);
}

static int
vblock_cmp(const void *a, const void *b)
{
	const vblock *x = a, *y = b;

	if (x->first_step != y->first_step)
		return x->first_step < y->first_step ? -1 : 1;
	return x->no < y->no ? -1 : x->no > y->no;
}

/* The stored blocks of series sid into l, in key order (by first step,
 * then number), with cur on the blocks database. Returns 0 or a
 * store_err. */
static int
list_blocks(store *st, MDB_cursor *cur, uint32_t sid, vlist *l)
{
	MDB_val k, v;
	uint8_t key[16];
	int     rc;

	store_block_key(key, sid, 0, 0);
	k.mv_data = key;
	k.mv_size = 16;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		const uint8_t *kp = k.mv_data;

		if (k.mv_size != 16 || memcmp(kp, key, 4) != 0)
			break;
		rc = vlist_add(l, be_get64(kp + 4),
		    (uint32_t) (be_get64(kp + 8) & 0xffffffffu), v.mv_data,
		    v.mv_size, 0);
		if (rc != 0)
			return rc;
	}
	if (rc != 0 && rc != MDB_NOTFOUND)
		return store_fail(st, rc, "reading blocks");
	return 0;
}

/*
 * Whether the journal samples js of a series come, steps strictly
 * ascending, after every step of its stored blocks (l, in key order):
 * then folding them changes no stored sample's place in the merge (a
 * fold appends to the tail or starts blocks after it; the merge sorts
 * by step, and no journal step ties a stored one or another). A header
 * that does not parse says no: the fold's path reports it.
 */
static int
journal_after_blocks(const vlist *l, const store_sample *js, size_t jn)
{
	for (size_t i = 1; i < jn; i++)
		if (js[i].step <= js[i - 1].step)
			return 0;
	for (size_t i = 0; i < l->n; i++) {
		block_info info;

		if (block_peek(l->b[i].data, l->b[i].len, &info) != BLOCK_OK)
			return 0;
		if (info.count > 0 && info.last_step >= js[0].step)
			return 0;
	}
	return 1;
}

/*
 * The samples of a series that has some in the journal: its stored
 * blocks and the blocks the fold would make of the journal samples, in
 * key order, merged exactly as stored blocks are.
 */
static int
samples_with_journal(store *st, store_txn *txn, uint32_t sid,
    const store_sample *js, size_t jn, uint64_t from, uint64_t to,
    scan_sample_fn fn, void *ctx)
{
	MDB_cursor *cur;
	vlist       l = { 0 };
	merge       m = { 0 };
	block_enc  *enc;
	uint64_t    order = 0;
	int         rc, stop = 0;

	if ((enc = malloc(sizeof(*enc))) == NULL)
		return STORE_ENOMEM;
	if ((rc = mdb_cursor_open(txn->txn, st->blocks, &cur)) != 0) {
		free(enc);
		return store_fail(st, rc, "reading blocks");
	}
	if ((rc = list_blocks(st, cur, sid, &l)) != 0)
		goto out;
	l.stored = l.n;
	if (journal_after_blocks(&l, js, jn)) {
		/* The usual case, near the head of a run: what the fold
		 * would write sorts after every stored sample, so the
		 * merge of the stored blocks, then the journal samples as
		 * they are, is what folding them would read. No tail to
		 * decode and blocks to encode per read. */
		for (size_t i = 0; i < l.n && !stop; i++) {
			rc = merge_block(st, &m, sid, l.b[i].data, l.b[i].len,
			    order++, from, to, fn, ctx, &stop);
			if (rc != 0)
				goto out;
		}
		rc = merge_emit(st, &m, UINT64_MAX, 1, from, to, fn, ctx);
		for (size_t i = 0; rc == 0 && i < jn && js[i].step <= to; i++)
			if (js[i].step >= from)
				rc = fn(ctx, js[i].step, js[i].time_ns,
				    js[i].value);
		goto out;
	}
	rc = journal_fold_series(
	    txn, NULL, NULL, sid, js, jn, enc, vlist_fold, &l);
	if (rc != 0)
		goto out;
	qsort(l.b, l.n, sizeof(*l.b), vblock_cmp);
	for (size_t i = 0; i < l.n; i++) {
		if (l.b[i].len == 0)
			continue;
		rc = merge_block(st, &m, sid, l.b[i].data, l.b[i].len, order++,
		    from, to, fn, ctx, &stop);
		if (rc != 0)
			goto out;
		if (stop)
			break;
	}
	rc = merge_emit(st, &m, UINT64_MAX, 1, from, to, fn, ctx);
out:
	if (rc == STORE_ENOMEM)
		snprintf(
		    st->err, sizeof(st->err), "%s: out of memory", st->dir);
	for (size_t i = 0; i < l.n; i++)
		free(l.b[i].own);
	free(l.b);
	free(m.src);
	free(enc);
	mdb_cursor_close(cur);
	return rc;
}

/* The samples of a series with none in the journal: its blocks. */
static int
samples_blocks(store *st, store_txn *txn, uint32_t sid, uint64_t from,
    uint64_t to, scan_sample_fn fn, void *ctx)
{
	MDB_cursor *cur;
	MDB_val     k, v;
	uint8_t     key[16];
	merge       m     = { 0 };
	uint64_t    order = 0;
	int         rc, stop = 0;

	if ((rc = mdb_cursor_open(txn->txn, st->blocks, &cur)) != 0)
		return store_fail(st, rc, "reading blocks");
	store_block_key(key, sid, 0, 0);
	k.mv_data = key;
	k.mv_size = 16;
	/*
	 * Blocks are sorted by first step, but after a restart an earlier
	 * block may reach past the first step of a later one, so blocks
	 * before `from` are skipped by their header, not by a seek.
	 */
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		if (k.mv_size != 16 || memcmp(k.mv_data, key, 4) != 0)
			break;
		rc = merge_block(st, &m, sid, v.mv_data, v.mv_size, order++,
		    from, to, fn, ctx, &stop);
		if (rc != 0)
			goto out;
		if (stop)
			break;
	}
	if (rc != 0 && rc != MDB_NOTFOUND) {
		rc = store_fail(st, rc, "reading blocks");
		goto out;
	}
	rc = merge_emit(st, &m, UINT64_MAX, 1, from, to, fn, ctx);
out:
	if (rc == STORE_ENOMEM)
		snprintf(
		    st->err, sizeof(st->err), "%s: out of memory", st->dir);
	free(m.src);
	mdb_cursor_close(cur);
	return rc;
}

int
scan_samples(store *st, store_txn *txn, uint32_t sid, uint64_t from,
    uint64_t to, scan_sample_fn fn, void *ctx)
{
	store_sample *js;
	size_t        jn;
	int           rc;

	/* Samples not yet folded: read as the fold will store them. */
	if ((rc = journal_of_series(txn, sid, &js, &jn)) != 0)
		return rc;
	if (jn > 0) {
		rc = samples_with_journal(
		    st, txn, sid, js, jn, from, to, fn, ctx);
		free(js);
		return rc;
	}
	return samples_blocks(st, txn, sid, from, to, fn, ctx);
}

/* ---- many series near the head: the journal read once ----------------- */

/* One series' journal samples, in arrival order: all[off .. off + n). */
typedef struct sj_series {
	uint32_t sid;
	size_t   off, n;
} sj_series;

struct scan_journal {
	sj_series    *v; /* by ascending sid, each sid once */
	size_t        n, capv;
	size_t        at;   /* where the last group landed (groups ascend) */
	int           fill; /* 0: counting, 1: decoding into all */
	store_sample *all;
	size_t        capall;
	uint32_t     *ids;
	size_t        capids;
};

static int
sid_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;

	return x < y ? -1 : x > y;
}

static sj_series *
sj_find(const scan_journal *j, uint32_t sid, size_t from)
{
	size_t lo = from, hi = j->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (j->v[mid].sid < sid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < j->n && j->v[lo].sid == sid ? &j->v[lo] : NULL;
}

/* Counting, then decoding each group where it goes: no copy, no
 * growing. */
static store_sample *
sj_group(void *ctx, uint32_t sid, size_t n)
{
	scan_journal *j = ctx;
	sj_series    *e = sj_find(j, sid, j->at < j->n ? j->at : 0);
	store_sample *out;

	if (e == NULL && (e = sj_find(j, sid, 0)) == NULL)
		return NULL;
	j->at = (size_t) (e - j->v);
	out   = j->fill ? j->all + e->off + e->n : NULL;
	e->n += n;
	return out;
}

int
scan_journal_new(scan_journal **out)
{
	*out = calloc(1, sizeof(**out));
	return *out == NULL ? STORE_ENOMEM : 0;
}

/* Room for want elements of size sz in *p (of *cap): 0 or -1. */
static int
sj_room(void *pp, size_t *cap, size_t want, size_t sz)
{
	void **p = pp;
	void  *q;

	if (want <= *cap)
		return 0;
	if ((q = realloc(*p, want * sz)) == NULL)
		return -1;
	*p   = q;
	*cap = want;
	return 0;
}

int
scan_journal_load(
    store *st, store_txn *txn, scan_journal *j, const uint32_t *sids, size_t n)
{
	size_t k = 0, total = 0;
	int    rc;

	j->n    = 0;
	j->at   = 0;
	j->fill = 0;
	if (sj_room(&j->ids, &j->capids, n, sizeof(*j->ids)) != 0
	    || sj_room(&j->v, &j->capv, n, sizeof(*j->v)) != 0)
		goto oom;
	if (n > 0)
		memcpy(j->ids, sids, n * sizeof(*j->ids));
	if (n > 0)
		qsort(j->ids, n, sizeof(*j->ids), sid_cmp);
	for (size_t i = 0; i < n; i++)
		if (k == 0 || j->ids[k - 1] != j->ids[i])
			j->ids[k++] = j->ids[i];
	for (size_t i = 0; i < k; i++) {
		j->v[i].sid = j->ids[i];
		j->v[i].n   = 0;
	}
	j->n = k;
	if ((rc = store_journal_groups(txn, j->ids, k, sj_group, j)) != 0)
		goto fail;
	for (size_t i = 0; i < k; i++) {
		j->v[i].off = total;
		total += j->v[i].n;
		j->v[i].n = 0;
	}
	if (total > 0) {
		if (sj_room(&j->all, &j->capall, total, sizeof(*j->all)) != 0)
			goto oom;
		j->fill = 1;
		j->at   = 0;
		rc      = store_journal_groups(txn, j->ids, k, sj_group, j);
		if (rc != 0)
			goto fail;
	}
	return 0;
oom:
	snprintf(st->err, sizeof(st->err), "%s: out of memory", st->dir);
	rc = STORE_ENOMEM;
fail:
	j->n = 0; /* what it held is not whole */
	return rc;
}

void
scan_journal_free(scan_journal *j)
{
	if (j == NULL)
		return;
	free(j->all);
	free(j->ids);
	free(j->v);
	free(j);
}

static int
vblock_no_cmp(const void *a, const void *b)
{
	const vblock *x = a, *y = b;

	return x->no < y->no ? -1 : x->no > y->no;
}

/* Emit the samples of one block past the first *skip (which it lowers by
 * those it passes). Returns 0, the callback's value or a store_err. */
static int
arrived_block(store *st, uint32_t sid, const vblock *b, uint64_t *skip,
    scan_sample_fn fn, void *ctx)
{
	block_info info;
	block_dec  dec;
	uint64_t   step;
	int64_t    time;
	double     value;
	int        rc;

	if (block_peek(b->data, b->len, &info) != BLOCK_OK) {
		snprintf(st->err, sizeof(st->err),
		    "%s: block header of series %u is corrupt", st->dir, sid);
		return STORE_ECORRUPT;
	}
	if (*skip >= info.count) {
		*skip -= info.count;
		return 0;
	}
	if (block_dec_init(&dec, b->data, b->len) != BLOCK_OK)
		goto corrupt;
	while ((rc = block_dec_next(&dec, &step, &time, &value)) == 1) {
		if (*skip > 0) {
			(*skip)--;
			continue;
		}
		if ((rc = fn(ctx, step, time, value)) != 0)
			return rc;
	}
	if (rc == 0)
		return 0;
corrupt:
	snprintf(st->err, sizeof(st->err), "%s: block of series %u is corrupt",
	    st->dir, sid);
	return STORE_ECORRUPT;
}

int
scan_samples_arrived(store *st, store_txn *txn, const scan_journal *j,
    uint32_t sid, uint64_t skip, scan_sample_fn fn, void *ctx)
{
	const sj_series *e  = j != NULL ? sj_find(j, sid, 0) : NULL;
	store_sample    *js = NULL, *own = NULL;
	size_t           jn = 0;
	MDB_cursor      *cur;
	vlist            l = { 0 };
	int              rc;

	if (e != NULL) {
		js = j->all + e->off;
		jn = e->n;
	} else if ((rc = journal_of_series(txn, sid, &own, &jn)) != 0) {
		return rc;
	} else {
		js = own;
	}
	if ((rc = mdb_cursor_open(txn->txn, st->blocks, &cur)) != 0) {
		free(own);
		return store_fail(st, rc, "reading blocks");
	}
	if ((rc = list_blocks(st, cur, sid, &l)) != 0)
		goto out;
	/* Key order is step order; arrival order is number order. */
	if (l.n > 1)
		qsort(l.b, l.n, sizeof(*l.b), vblock_no_cmp);
	for (size_t i = 0; i < l.n && rc == 0; i++)
		rc = arrived_block(st, sid, &l.b[i], &skip, fn, ctx);
	for (size_t i = skip; rc == 0 && i < jn; i++)
		rc = fn(ctx, js[i].step, js[i].time_ns, js[i].value);
out:
	if (rc == STORE_ENOMEM)
		snprintf(
		    st->err, sizeof(st->err), "%s: out of memory", st->dir);
	free(l.b);
	free(own);
	mdb_cursor_close(cur);
	return rc;
}

int
scan_usage_get(store *st, store_txn *txn, scan_usage *out)
{
	MDB_dbi dbs[] = { st->meta, st->by_metric ? st->metrics : st->series,
		st->blocks, st->emitters, st->runs };
	MDB_stat    ms;
	MDB_envinfo info;
	MDB_cursor *cur;
	MDB_val     k, v;
	struct stat sb;
	char        path[1100];
	int         rc;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < sizeof(dbs) / sizeof(dbs[0]); i++) {
		if ((rc = mdb_stat(txn->txn, dbs[i], &ms)) != 0)
			return store_fail(st, rc, "reading statistics");
		out->used_bytes += (uint64_t) ms.ms_psize
		    * (ms.ms_branch_pages + ms.ms_leaf_pages
		        + ms.ms_overflow_pages);
		if (i == 2)
			out->blocks = ms.ms_entries;
	}
	if (st->has_journal) {
		if ((rc = mdb_stat(txn->txn, st->journal, &ms)) != 0)
			return store_fail(st, rc, "reading statistics");
		out->used_bytes += (uint64_t) ms.ms_psize
		    * (ms.ms_branch_pages + ms.ms_leaf_pages
		        + ms.ms_overflow_pages);
		out->journal_records = ms.ms_entries;
	}
	/* The main database holds the names of the others. */
	if ((rc = mdb_stat(txn->txn, 0, &ms)) == 0)
		out->used_bytes += (uint64_t) ms.ms_psize
		    * (ms.ms_branch_pages + ms.ms_leaf_pages);
	(void) info;
	snprintf(path, sizeof(path), "%s/data.mdb", st->dir);
	if (stat(path, &sb) == 0)
		out->file_bytes = (uint64_t) sb.st_size;
	if ((rc = mdb_cursor_open(txn->txn, st->blocks, &cur)) != 0)
		return store_fail(st, rc, "reading blocks");
	while (mdb_cursor_get(cur, &k, &v, MDB_NEXT) == 0)
		out->block_bytes += v.mv_size;
	mdb_cursor_close(cur);
	return 0;
}

int
scan_alerts(store *st, store_txn *txn, const char *run, uint64_t after_seq,
    scan_alert_fn fn, void *ctx)
{
	MDB_cursor *cur;
	MDB_val     k, v;
	size_t      rl = run ? strlen(run) : 0;
	int         rc, op = MDB_FIRST;
	uint8_t     key[STORE_KEY_MAX];

	if ((rc = mdb_cursor_open(txn->txn, st->alerts, &cur)) != 0)
		return store_fail(st, rc, "reading alerts");
	if (run != NULL) {
		if (rl > WIRE_RUN_MAX) {
			mdb_cursor_close(cur);
			return 0;
		}
		/* Alert keys are laid out as emitter keys: run NUL seq. */
		k.mv_data = key;
		k.mv_size = store_emitter_key(key, run, rl, after_seq + 1);
		op        = MDB_SET_RANGE;
	}
	while ((rc = mdb_cursor_get(cur, &k, &v, op)) == 0) {
		const uint8_t *p = k.mv_data;
		const uint8_t *z = memchr(p, 0, k.mv_size);
		size_t         krl;
		uint64_t       seq = 0;

		op = MDB_NEXT;
		if (z == NULL || (size_t) (p + k.mv_size - z) != 9) {
			snprintf(st->err, sizeof(st->err),
			    "%s: an alert key does not parse", st->dir);
			rc = STORE_ECORRUPT;
			break;
		}
		krl = (size_t) (z - p);
		if (run != NULL && (krl != rl || memcmp(p, run, rl)))
			break;
		for (int i = 1; i <= 8; i++)
			seq = (seq << 8) | z[i];
		if (seq <= after_seq)
			continue;
		if ((rc = fn(ctx, (const char *) p, krl, seq, v.mv_data,
		         v.mv_size))
		    != 0)
			break;
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : rc;
}
