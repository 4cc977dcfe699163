/*
 * ingest: the batch path of the collector. Each batch is checked against
 * its emitter's dedup window, its samples gathered for the commit's
 * journal record (store/journal.h; new series past a cap are refused and
 * raise the run's series_limit alert), and the run, series and emitter
 * records updated, all in the store's write transaction
 * (store/write.h). After a commit the journal is folded into blocks
 * once it is over its bound. The caches that hold those records between
 * commits are collector/cache.c.
 */
#include "collector/ingest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/feed.h"
#include "collector/ingest_int.h"
#include "detect/detect.h"

/* Defaults of the limits (see ingest.h). */
#define MAX_SERIES_RUN 100000u
#define MAX_SERIES_TOTAL 1000000u
#define CACHE_SERIES 131072u
#define CACHE_ENCODERS 16384u
#define CACHE_EMITTERS 65536u
#define JOURNAL_SAMPLES 4194304u
#define JOURNAL_RECORDS 64u
/* The records merged are those of journal_samples / JOURNAL_WIDE
 * samples or more (4,096 with the default: wide commits); smaller ones
 * are folded, as before (ingest_fold). */
#define JOURNAL_WIDE 1024u
/* A journal whose records are wide may hold JOURNAL_PER_SERIES samples
 * of each series of its widest record, up to JOURNAL_WIDE_MAX times
 * journal_samples, before it is folded (journal_bound): a fold rewrites
 * each series' tail (a 4 KB page once it is past about 2 KB) whatever
 * it brings, so at 100,000 series the default bound (41 samples a
 * series) rewrote a 4 KB page every 41 samples of a series. Runs of up
 * to journal_samples / JOURNAL_PER_SERIES series (4,096) are not
 * affected. */
#define JOURNAL_PER_SERIES 1024u
#define JOURNAL_WIDE_MAX 4u
/* A wide journal (its bound raised above) is counted in its series'
 * statistics at that bound (listings read only what is after) and
 * folded at JOURNAL_COUNTED_MAX times it: the more samples of each
 * series a fold brings, the fewer times each tail page is rewritten. */
#define JOURNAL_COUNTED_MAX 4u
/* A name of a batch whose series is past a cap (ingest.nix). */
#define NO_SERIES UINT32_MAX
/* How many names ahead predict() prefetches the series. */
#define PREDICT_AHEAD 8
/* The least room left in the map before a transaction (make_room). */
#define MAP_ROOM_MIN (4u << 20)

/* ---- the handle and its transaction ---------------------------------- */

void
ingest_opts_init(ingest_opts *o)
{
	o->time_quantum_ns  = 1;
	o->max_series_run   = MAX_SERIES_RUN;
	o->max_series_total = MAX_SERIES_TOTAL;
	o->cache_series     = CACHE_SERIES;
	o->cache_encoders   = CACHE_ENCODERS;
	o->cache_emitters   = CACHE_EMITTERS;
	o->journal_samples  = JOURNAL_SAMPLES;
	o->journal_records  = JOURNAL_RECORDS;
}

int
ingest_open(store *st, const ingest_opts *o, ingest **out)
{
	ingest *in = calloc(1, sizeof(*in));

	*out = NULL;
	if (in == NULL)
		return STORE_ENOMEM;
	in->st = st;
	if (o != NULL)
		in->opts = *o;
	else
		ingest_opts_init(&in->opts);
	if (in->opts.time_quantum_ns < 1)
		in->opts.time_quantum_ns = 1;
	in->nix  = calloc(65536, sizeof(*in->nix));
	in->used = calloc(65536, 1);
	if (in->nix == NULL || in->used == NULL || cache_make(in) != 0) {
		free(in->nix);
		free(in->used);
		free(in);
		return STORE_ENOMEM;
	}
	*out = in;
	return 0;
}

void
ingest_close(ingest *in)
{
	if (in == NULL)
		return;
	store_abort(in->txn);
	cache_drop(in);
	free(in->nix);
	free(in->pidx);
	free(in->psamp);
	free(in->pgrouped);
	free(in->dser);
	free(in->dnew);
	free(in->pseries);
	free(in->psort);
	free(in->pstart);
	free(in->pgroups);
	free(in->used);
	free(in);
}

/*
 * Room in the map for the next transaction: what is used of it, with
 * twice the most a commit (and its fold) added to that so far, at least
 * MAP_ROOM_MIN and at least what the caller expects (ingest_expect()),
 * must fit, or the map is grown (doubled) now, between transactions,
 * instead of after a transaction failed on a full map. A guess: if a
 * transaction still fills the map it is redone as before. The map is
 * address space; the file grows only with its pages in use.
 */
static int
make_room(ingest *in)
{
	uint64_t room = 2 * in->map_added;
	int      rc;

	if (room < MAP_ROOM_MIN)
		room = MAP_ROOM_MIN;
	if (room < in->map_expect)
		room = in->map_expect;
	in->map_expect = 0;
	in->map_used = store_map_used(in->st);
	while (
	    in->map_used > 0 && in->map_used + room > store_map_size(in->st)) {
		if ((rc = store_grow(in->st)) != 0)
			return rc;
		in->stats.map_grown++;
	}
	return 0;
}

void
ingest_expect(ingest *in, uint64_t bytes)
{
	in->map_expect = bytes;
}

int
ingest_begin(ingest *in)
{
	int rc;

	if (in->series == NULL && (rc = cache_make(in)) != 0)
		return rc;
	if ((rc = make_room(in)) != 0)
		return rc;
	if ((rc = store_write_begin(in->st, &in->txn)) != 0)
		return rc;
	memset(&in->tentative, 0, sizeof(in->tentative));
	in->np = 0;
	return 0;
}

void
ingest_abort(ingest *in)
{
	store_abort(in->txn);
	in->txn = NULL;
	cache_drop(in);
	in->stats.drops++;
}

/* ---- runs and emitters ----------------------------------------------- */

/* Read the run's refused-sample count (absent: none refused, no alert). */
static int
load_refused(ingest *in, run *r)
{
	int rc = store_get_refused(in->txn, r->name, r->len, &r->refused);

	if (rc == STORE_ENOTFOUND)
		return 0;
	if (rc != 0)
		return rc;
	r->limit_hit = 1;
	return 0;
}

static int
get_run(ingest *in, const char *name, size_t len, run **out)
{
	run *r = table_get(in->runs, name, len);
	int  rc;

	if (r != NULL) {
		*out = r;
		return 0;
	}
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return STORE_ENOMEM;
	memcpy(r->name, name, len);
	r->len = len;
	rc     = store_get_run(in->txn, r->name, len, &r->rec);
	if (rc == STORE_ENOTFOUND) {
		r->rec.first_step = UINT64_MAX;
		r->rec.first_time = INT64_MAX;
		r->rec.last_time  = INT64_MIN;
	} else if (rc != 0) {
		free(r);
		return rc;
	}
	if ((rc = load_refused(in, r)) != 0) {
		free(r);
		return rc;
	}
	if (table_put(in->runs, r) != 0) {
		free(r);
		return STORE_ENOMEM;
	}
	*out = r;
	return 0;
}

static int
get_emitter(ingest *in, const wire_batch *b, run *r, int64_t now, emi **out,
    int *is_new)
{
	uint8_t key[STORE_KEY_MAX];
	size_t  kl = store_emitter_key(
            key, b->id.run, b->id.run_len, b->id.incarnation);
	emi    *e  = table_get(in->emitters, key, kl);
	int     rc;

	*is_new = 0;
	if (e != NULL) {
		e->used = in->stats.commits + 1;
		*out    = e;
		return 0;
	}
	e = calloc(1, sizeof(*e));
	if (e == NULL)
		return STORE_ENOMEM;
	e->used = in->stats.commits + 1;
	memcpy(e->key, key, kl);
	e->keylen = kl;
	rc        = store_get_emitter(in->txn, e->key, kl, &e->rec);
	if (rc == STORE_ENOTFOUND) {
		e->rec.incarnation = b->id.incarnation;
		e->rec.first_seen  = now;
		e->rec.first_step  = UINT64_MAX;
		r->rec.emitters++;
		cache_mark_run(in, r);
		*is_new = 1;
	} else if (rc != 0) {
		free(e);
		return rc;
	}
	if (table_put(in->emitters, e) != 0) {
		free(e);
		return STORE_ENOMEM;
	}
	*out = e;
	return 0;
}

/* ---- deduplication --------------------------------------------------- */

/*
 * The dedup window: every seq below floor is settled; bit i of window says
 * whether seq floor + i is stored. The emitter's floor (its oldest
 * unacknowledged batch) only moves up, so the window slides with it.
 * Returns 1 if seq is new (and marks it), 0 if a duplicate, -1 if it lies
 * beyond the window (a protocol violation).
 */
static int
window_take(emitter_rec *r, uint64_t floor, uint64_t seq)
{
	uint64_t d, bit;

	if (floor > r->floor) {
		d = floor - r->floor;
		if (d >= EMITTER_WINDOW) {
			memset(r->window, 0, sizeof(r->window));
		} else {
			uint64_t w = d / 64, b = d % 64;

			for (uint64_t i = 0; i < 16; i++) {
				uint64_t lo = i + w < 16 ? r->window[i + w] : 0;
				uint64_t hi = i + w + 1 < 16 ?
				    r->window[i + w + 1] :
				    0;

				r->window[i] = b ? (lo >> b) | (hi << (64 - b)) :
						   lo;
			}
		}
		r->floor = floor;
	}
	if (seq < r->floor)
		return 0;
	bit = seq - r->floor;
	if (bit >= EMITTER_WINDOW)
		return -1;
	if (r->window[bit / 64] & ((uint64_t) 1 << (bit % 64)))
		return 0;
	r->window[bit / 64] |= (uint64_t) 1 << (bit % 64);
	return 1;
}

/* ---- the series_limit alert ------------------------------------------ */

/*
 * The first series refused in a run: store its one series_limit alert in
 * the open transaction and leave a line for the log. Returns 0 or a
 * store_err.
 */
static int
limit_alert(ingest *in, const wire_batch *b, run *r, const char *metric,
    size_t mlen, uint64_t step, int64_t now, const char *which,
    uint64_t cap)
{
	char   json[1024];
	size_t o;
	int    rc;

	o = detect_alert_series_limit_json(r->name, r->len, b->id.host,
	    b->id.host_len, metric, mlen, step, now, which, cap, json,
	    sizeof(json));
	if (o >= sizeof(json))
		return STORE_ECORRUPT; /* cannot happen: names are short */
	if ((rc = ingest_alert(in, r->name, r->len, json, o)) != 0)
		return rc;
	r->limit_hit = 1;
	in->tentative.limit_alerts++;
	snprintf(in->notice, sizeof(in->notice),
	    "run %.*s reached the %s series cap of %llu at metric '%.*s' "
	    "rank %d: samples of new series are refused; alert stored",
	    (int) r->len, r->name, which, (unsigned long long) cap,
	    (int) mlen, metric, (int) b->id.rank);
	return 0;
}

/* ---- series and their tail blocks ------------------------------------ */

/*
 * Find or create the series of a metric of this batch's rank. A new series
 * past a series cap is not created: *out is set to NULL and the first such
 * series of the run raises the run's alert.
 */
static int
get_series(ingest *in, const wire_batch *b, const char *metric, size_t mlen,
    uint16_t idx, run *r, int64_t now, ser **out)
{
	uint8_t key[STORE_KEY_MAX];
	size_t  kl = store_series_key(
            key, b->id.run, b->id.run_len, metric, mlen, b->id.rank);
	ser       *s = table_get(in->series, key, kl);
	series_rec rec;
	int        rc;

	if (s != NULL) {
		s->used = in->stats.commits + 1;
		*out    = s;
		return 0;
	}
	s = malloc(sizeof(*s) + kl);
	if (s == NULL)
		return STORE_ENOMEM;
	memset(s, 0, sizeof(*s));
	s->used = in->stats.commits + 1;
	memcpy(s->key, key, kl);
	s->keylen = (uint32_t) kl;
	rc        = store_get_series(in->txn, s->key, kl, &rec);
	if (rc == 0)
		s->sid = rec.sid;
	if (rc == STORE_ENOTFOUND) {
		const char *which = NULL;
		uint64_t    cap   = 0;
		uint32_t    next;

		if ((rc = store_next_sid(in->txn, &next)) != 0) {
			free(s);
			return rc;
		}
		if (in->opts.max_series_run &&
		    r->rec.series >= in->opts.max_series_run) {
			which = "per-run";
			cap   = in->opts.max_series_run;
		} else if (in->opts.max_series_total &&
		    next - 1 >= in->opts.max_series_total) {
			which = "total";
			cap   = in->opts.max_series_total;
		}
		if (which != NULL) {
			uint64_t step = 0;

			free(s);
			*out = NULL;
			if (r->limit_hit)
				return 0;
			/* The step of the alert: the first sample refused.
			 * Looked for only here, for the run's one alert: a
			 * walk of the batch for each name refused made a
			 * batch's cost grow with the square of its names. */
			for (uint32_t j = 0; j < b->nsamples; j++) {
				wire_sample ws;

				wire_batch_sample(b, j, &ws);
				if (ws.name == idx) {
					step = ws.step;
					break;
				}
			}
			return limit_alert(in, b, r, metric, mlen, step, now,
			    which, cap);
		}
		if ((rc = store_new_sid(in->txn, &s->sid)) != 0) {
			free(s);
			return rc;
		}
		if (in->ndnew == in->dncap) {
			size_t      nc = in->dncap ? in->dncap * 2 : 1024;
			ser_by_sid *nd = realloc(in->dnew, nc * sizeof(*nd));

			if (nd == NULL) {
				free(s);
				return STORE_ENOMEM;
			}
			in->dnew  = nd;
			in->dncap = nc;
		}
		in->dnew[in->ndnew].sid = s->sid;
		in->dnew[in->ndnew].k   = 0;
		in->dnew[in->ndnew++].s = s;
		r->rec.series++;
		cache_mark_run(in, r);
		in->tentative.series++;
	} else if (rc != 0) {
		free(s);
		return rc;
	}
	if (table_put(in->series, s) != 0) {
		if (in->ndnew > 0 && in->dnew[in->ndnew - 1].s == s)
			in->ndnew--;
		free(s);
		return STORE_ENOMEM;
	}
	*out = s;
	return 0;
}

/*
 * The series of a batch's name as its emitter's order predicts it: the
 * one after the last name's series, if its key is this one. NULL
 * otherwise (the table then says).
 */
static ser *
predict(emi *e, const uint8_t *key, size_t kl)
{
	ser *s;

	if (e->cur >= e->norder)
		return NULL;
	/* The series a few names on: each is its own allocation, a cache
	 * miss when its key is compared (a tenth of the main thread at
	 * 100,000 series a step). Its first two lines: the fields and the
	 * key's start. */
	if (e->cur + PREDICT_AHEAD < e->norder) {
		const char *a
		    = (const char *) e->order[e->cur + PREDICT_AHEAD];

		__builtin_prefetch(a);
		__builtin_prefetch(a + 64);
	}
	s = e->order[e->cur];
	if (s->keylen != kl || memcmp(s->key, key, kl) != 0)
		return NULL;
	e->cur++;
	return s;
}

/*
 * After a table lookup found s: the order goes on after s, or learns it
 * at its end. The orders of all emitters hold at most cache_series
 * entries; past that they learn nothing more (names are then looked up,
 * as before).
 */
static void
note(ingest *in, emi *e, ser *s)
{
	if (s->opos < e->norder && e->order[s->opos] == s) {
		e->cur = s->opos + 1;
		return;
	}
	e->cur = e->norder;
	if (in->order_total >= in->opts.cache_series)
		return;
	if (e->norder == e->ocap) {
		uint32_t nc = e->ocap ? e->ocap * 2 : 1024;
		ser    **no = realloc(e->order, nc * sizeof(*no));

		if (no == NULL)
			return; /* only slower */
		e->order = no;
		e->ocap  = nc;
	}
	s->opos               = e->norder;
	e->order[e->norder++] = s;
	e->cur                = e->norder;
	in->order_total++;
}

/*
 * Append one sample to a series: kept for the commit's journal record.
 * The series record's statistics are the store's (store_series_add, when
 * the journal is read or folded).
 */
static int
append(ingest *in, uint32_t dix, uint64_t step, int64_t t, double value)
{
	if (in->np == in->pcap) {
		size_t        nc = in->pcap ? in->pcap * 2 : 4096;
		uint32_t     *ns = realloc(in->pidx, nc * sizeof(*ns));
		store_sample *np;

		if (ns == NULL)
			return STORE_ENOMEM;
		in->pidx = ns;
		if ((np = realloc(in->psamp, nc * sizeof(*np))) == NULL)
			return STORE_ENOMEM;
		in->psamp = np;
		if ((np = realloc(in->pgrouped, nc * sizeof(*np))) == NULL)
			return STORE_ENOMEM;
		in->pgrouped = np;
		in->pcap     = nc;
	}
	in->pidx[in->np]          = dix;
	in->psamp[in->np].step    = step;
	in->psamp[in->np].time_ns = t;
	in->psamp[in->np].value   = value;
	in->np++;
	in->dser[dix].n++;
	return 0;
}

/* ---- the batch ------------------------------------------------------- */

int
ingest_batch(ingest *in, const wire_batch *b, int64_t now_ns, int *is_new,
    char *why, size_t whylen)
{
	run     *r = NULL;
	emi     *e = NULL;
	size_t   off = 0, mlen;
	int      rc, take;
	uint32_t refused = 0;

	*is_new = 0;
	if ((rc = get_run(in, b->id.run, b->id.run_len, &r)) != 0)
		return -rc;
	if ((rc = get_emitter(in, b, r, now_ns, &e, is_new)) != 0)
		return -rc;

	take = window_take(&e->rec, b->floor, b->seq);
	cache_mark_emitter(in, e);
	if (take < 0) {
		snprintf(why, whylen,
		    "batch %llu beyond the dedup window (floor %llu, %d "
		    "batches)",
		    (unsigned long long) b->seq,
		    (unsigned long long) e->rec.floor, EMITTER_WINDOW);
		in->tentative.rejected++;
		return WIRE_ACK_REJECTED;
	}
	if (take == 0) {
		e->rec.duplicates++;
		in->tentative.duplicates++;
		return WIRE_ACK_DUPLICATE;
	}

	/* The identity is refreshed by every batch; dropped is cumulative at
	 * the emitter, and batches may arrive out of order. */
	e->rec.start_ns   = b->id.start_ns;
	e->rec.pid        = b->id.pid;
	e->rec.rank       = b->id.rank;
	e->rec.local_rank = b->id.local_rank;
	e->rec.world_size = b->id.world_size;
	memcpy(e->rec.host, b->id.host, b->id.host_len);
	e->rec.host[b->id.host_len] = 0;
	e->rec.last_seen            = now_ns;
	if (b->flags & WIRE_FINAL)
		e->rec.ended = now_ns;
	e->rec.batches++;
	if (b->dropped > e->rec.dropped) {
		r->rec.dropped += b->dropped - e->rec.dropped;
		e->rec.dropped = b->dropped;
	}
	if (b->refused > e->rec.refused) {
		in->tentative.emitter_refused += b->refused - e->rec.refused;
		e->rec.refused = b->refused;
	}

	/* Series come from samples: a name no sample uses creates nothing
	 * (a table of 65,535 names and no sample would otherwise fill the
	 * run's series cap with empty series). */
	memset(in->used, 0, b->nnames);
	for (uint32_t i = 0; i < b->nsamples; i++)
		in->used[wire_get16(
		    b->samples + (size_t) i * WIRE_SAMPLE_SIZE)]
		    = 1;
	/* Each name's series is marked dirty here, where it is at hand:
	 * the samples then need only its entry in dser (nix), not the
	 * series again (a cache miss per series at width). */
	for (uint32_t i = 0; i < b->nnames; i++) {
		const char *m = wire_names_next(b, &off, &mlen);
		uint8_t     key[STORE_KEY_MAX];
		size_t      kl;
		ser        *s;

		in->nix[i] = NO_SERIES;
		if (!in->used[i])
			continue;
		kl = store_series_key(
		    key, b->id.run, b->id.run_len, m, mlen, b->id.rank);
		if ((s = predict(e, key, kl)) != NULL) {
			s->used = in->stats.commits + 1;
		} else {
			rc = get_series(
			    in, b, m, mlen, (uint16_t) i, r, now_ns, &s);
			if (rc != 0)
				return -rc;
			if (s == NULL)
				continue; /* past a cap */
			note(in, e, s);
		}
		if (cache_mark_series(in, s) != 0)
			return -STORE_ENOMEM;
		in->nix[i] = s->dix;
	}
	for (uint32_t i = 0; i < b->nsamples; i++) {
		wire_sample ws;
		int64_t     t;

		wire_batch_sample(b, i, &ws);
		if (in->nix[ws.name] == NO_SERIES) {
			/* Its series is past a cap: counted, not stored. */
			refused++;
			continue;
		}
		t  = feed_quantize(ws.time_ns, in->opts.time_quantum_ns);
		rc = append(in, in->nix[ws.name], ws.step, t, ws.value);
		if (rc != 0)
			return -rc;
		if (ws.step < e->rec.first_step)
			e->rec.first_step = ws.step;
		if (ws.step > e->rec.last_step)
			e->rec.last_step = ws.step;
		if (ws.step < r->rec.first_step)
			r->rec.first_step = ws.step;
		if (ws.step > r->rec.last_step)
			r->rec.last_step = ws.step;
		if (t < r->rec.first_time)
			r->rec.first_time = t;
		if (t > r->rec.last_time)
			r->rec.last_time = t;
	}
	/* Records count what is stored; refused samples are counted apart. */
	e->rec.samples += b->nsamples - refused;
	r->rec.samples += b->nsamples - refused;
	if (refused > 0) {
		r->refused += refused;
		r->refused_dirty = 1;
		in->tentative.refused += refused;
	}
	cache_mark_run(in, r);
	in->tentative.batches++;
	in->tentative.samples += b->nsamples - refused;
	if (*is_new)
		in->tentative.emitters_new++;
	return WIRE_ACK_STORED;
}

/* ---- alerts and the commit ------------------------------------------- */

int
ingest_alert(ingest *in, const char *runname, size_t runlen,
    const char *json, size_t len)
{
	return store_put_alert(in->txn, runname, runlen, json, len);
}

static int
ser_sid_cmp(const void *a, const void *b)
{
	uint32_t x = ((const ser_by_sid *) a)->sid;
	uint32_t y = ((const ser_by_sid *) b)->sid;

	return x < y ? -1 : x > y;
}

/*
 * Sort a[0..n) by sid; tmp has room for n. A wide run's series mostly
 * come in sid order already (emitters name them in the order they were
 * created), which one pass finds; otherwise a radix sort by 11-bit
 * digits (linear, where qsort's comparisons cost a call each).
 */
static void
sort_by_sid(ser_by_sid *a, ser_by_sid *tmp, size_t n)
{
	ser_by_sid *src = a, *dst = tmp;
	size_t      i;

	for (i = 1; i < n && a[i - 1].sid <= a[i].sid; i++)
		;
	if (i >= n)
		return;
	if (n < 256) {
		qsort(a, n, sizeof(*a), ser_sid_cmp);
		return;
	}
	for (unsigned sh = 0; sh < 32; sh += 11) {
		size_t count[2048] = { 0 };

		for (i = 0; i < n; i++)
			count[(src[i].sid >> sh) & 2047]++;
		if (count[(src[0].sid >> sh) & 2047] == n)
			continue; /* one digit: nothing moves */
		for (size_t d = 0, at = 0; d < 2048; d++) {
			size_t c = count[d];

			count[d] = at;
			at += c;
		}
		for (i = 0; i < n; i++)
			dst[count[(src[i].sid >> sh) & 2047]++] = src[i];
		{
			ser_by_sid *x = src;

			src = dst;
			dst = x;
		}
	}
	if (src != a)
		memcpy(a, src, n * sizeof(*a));
}

/* Room for n entries in pseries, psort, pstart and pgroups. Returns 0
 * or STORE_ENOMEM. */
static int
group_room(ingest *in, size_t n)
{
	size_t nc = in->pgcap ? in->pgcap : 1024;
	void  *p;

	if (n <= in->pgcap)
		return 0;
	while (nc < n)
		nc *= 2;
	if ((p = realloc(in->pseries, nc * sizeof(*in->pseries))) == NULL)
		return STORE_ENOMEM;
	in->pseries = p;
	if ((p = realloc(in->psort, nc * sizeof(*in->psort))) == NULL)
		return STORE_ENOMEM;
	in->psort = p;
	if ((p = realloc(in->pstart, nc * sizeof(*in->pstart))) == NULL)
		return STORE_ENOMEM;
	in->pstart = p;
	if ((p = realloc(in->pgroups, nc * sizeof(*in->pgroups))) == NULL)
		return STORE_ENOMEM;
	in->pgroups = p;
	in->pgcap   = nc;
	return 0;
}

/*
 * pseries[0..ng) as dser's series by sid, without sorting, when their
 * sids are dense (they span fewer than 4 x ng ids: a wide run's, whose
 * ranks' batches come interleaved, so not in sid order): a slot per id
 * in the span (psort's bytes: ng entries of 16 bytes hold 4 x ng of 4),
 * filled, then read in order. Returns 1, or 0 (not dense, or already in
 * order: sort_by_sid() is then cheaper) with pseries untouched.
 */
static int
order_dense(ingest *in, size_t ng)
{
	uint32_t *at = (uint32_t *) (void *) in->psort;
	uint32_t  lo = UINT32_MAX, hi = 0;
	int       sorted = 1;
	size_t    span, i = 0;

	for (size_t k = 0; k < ng; k++) {
		uint32_t sid = in->dser[k].sid;

		sorted &= sid > hi || k == 0;
		lo = sid < lo ? sid : lo;
		hi = sid > hi ? sid : hi;
	}
	if (sorted || ng < 256 || (uint64_t) (hi - lo) >= 4 * (uint64_t) ng)
		return 0;
	span = (size_t) (hi - lo) + 1;
	memset(at, 0, span * sizeof(*at));
	for (size_t k = 0; k < ng; k++)
		at[in->dser[k].sid - lo] = (uint32_t) k + 1;
	for (size_t d = 0; d < span; d++) {
		if (at[d] == 0)
			continue;
		in->pseries[i].sid = lo + (uint32_t) d;
		in->pseries[i].k   = at[d] - 1;
		in->pseries[i++].s = NULL;
	}
	return 1;
}

/*
 * The transaction's samples as one journal record: grouped by series in
 * sid order, each series' samples in the order they arrived. Linear in
 * the samples and the series, and reads only the commit's own arrays
 * (dser, pidx), not the series (see ser_dirty). Returns 0 or a
 * store_err.
 */
static int
put_journal(ingest *in)
{
	size_t ng = in->ndser, off = 0;
	int    rc;

	if (in->np == 0)
		return 0;
	if ((rc = group_room(in, ng)) != 0)
		return rc;
	if (!order_dense(in, ng)) {
		for (size_t k = 0; k < ng; k++) {
			in->pseries[k].sid = in->dser[k].sid;
			in->pseries[k].k   = (uint32_t) k;
			in->pseries[k].s   = NULL;
		}
		sort_by_sid(in->pseries, in->psort, ng);
	}
	for (size_t i = 0; i < ng; i++) {
		uint32_t k = in->pseries[i].k;

		in->pgroups[i].sid = in->pseries[i].sid;
		in->pgroups[i].n   = in->dser[k].n;
		in->pstart[k]      = (uint32_t) off;
		off += in->dser[k].n;
	}
	for (size_t i = 0; i < in->np; i++)
		in->pgrouped[in->pstart[in->pidx[i]]++] = in->psamp[i];
	rc = store_journal_put(in->txn, in->pgroups, ng, in->pgrouped);
	in->np = 0;
	return rc;
}

/* Write every record the transaction changed. Returns 0 or a
 * store_err. */
static int
flush_dirty(ingest *in)
{
	int rc;

	/* Only new series: the others' records are the fold's to write,
	 * so a commit does not touch one page per series it brings. New
	 * ones first: store_journal_put may append a series' samples to
	 * its blocks and count them in its record. By sid, so that the
	 * store appends their statistics at the end of their database. */
	if ((rc = group_room(in, in->ndnew)) != 0)
		return rc;
	sort_by_sid(in->dnew, in->psort, in->ndnew);
	for (size_t i = 0; i < in->ndnew; i++) {
		ser *s = in->dnew[i].s;

		rc = store_put_new_series(in->txn, s->key, s->keylen, s->sid);
		if (rc != 0)
			return rc;
	}
	if ((rc = put_journal(in)) != 0)
		return rc;
	for (emi *e = in->dirty_emitters; e != NULL; e = e->next_dirty) {
		rc = store_put_emitter(in->txn, e->key, e->keylen, &e->rec);
		if (rc != 0)
			return rc;
	}
	for (run *r = in->dirty_runs; r != NULL; r = r->next_dirty) {
		if ((rc = store_put_run(in->txn, r->name, r->len, &r->rec)) != 0)
			return rc;
		if ((r->limit_hit || r->refused_dirty) &&
		    (rc = store_put_refused(in->txn, r->name, r->len,
			 r->refused)) != 0)
			return rc;
	}
	return 0;
}

/*
 * The samples the journal may hold before a fold, and that a fold step
 * takes: journal_samples, or, when its widest record has more than
 * journal_samples / JOURNAL_PER_SERIES series (a wide run, one step a
 * commit), JOURNAL_PER_SERIES samples of each, up to JOURNAL_WIDE_MAX
 * times journal_samples.
 */
static uint64_t
journal_bound(const ingest_opts *o, uint64_t widest)
{
	uint64_t bound = o->journal_samples > 0 ? o->journal_samples : 1;
	uint64_t wide  = widest * JOURNAL_PER_SERIES;

	if (wide <= bound)
		return bound;
	return wide < bound * JOURNAL_WIDE_MAX ? wide
	                                       : bound * JOURNAL_WIDE_MAX;
}

/*
 * Keep the journal within its bounds after a commit. Past its samples
 * bound (journal_bound), fold. Past journal_records records (readers
 * look a series up in each record, so small or many commits must not
 * pile up), merge the newest wide records (journal_samples /
 * JOURNAL_WIDE samples or more) commits wrote since the last merge into one
 * (store_journal_merge) when there are at least half that many (2 once
 * the bound is raised for width: records of 100,000 samples, ten to a
 * merge), else
 * fold (a narrow run's small commits are folded as before): folding every
 * journal_records commits folded, on a wide run (one step a commit), that many
 * samples of each series at a time, and a fold rewrites each series' tail page
 * and statistics, whatever it brings; merged, the records wait for the samples
 * bound, and a fold takes about that bound / series samples of each
 * series. So a reader looks a series up in at most journal_records records
 * after each commit, as before. A merge takes at most a quarter of
 * journal_samples samples (its record is in memory while it is made).
 * A wide journal (format 5) is counted in its series' statistics at
 * its bound (store_journal_count: listings then read only what is
 * after) and folded at JOURNAL_COUNTED_MAX times it or past twice
 * journal_records records; its merges take up to journal_samples
 * samples (counted records are never merged again). docs/storage.md,
 * "Counting before folding".
 */
int
ingest_fold(ingest *in, int all)
{
	uint64_t half = in->opts.journal_records / 2;
	int      rc;

	if (in->txn != NULL)
		return 0; /* between transactions only */
	for (;;) {
		store_txn *t;
		uint64_t records, samples, widest = 0, folded = 0, merged = 0;
		uint64_t bound, fresh, hard, ucrecords, ucsamples, counted = 0;
		uint64_t   rlimit;
		int        wide, over, counting;

		if ((rc = store_write_begin(in->st, &t)) != 0)
			return rc;
		if ((rc = store_journal_stat(t, &records, &samples)) == 0
		    && (rc = store_journal_widest(t, &widest)) == 0)
			rc = store_journal_uncounted(t, &ucrecords, &ucsamples);
		if (rc != 0) {
			store_abort(t);
			return rc;
		}
		/* A step folds all it can within the samples bound: the
		 * more samples of each series one fold takes, the fewer
		 * times its tail is rewritten. A wide journal is counted at
		 * the bound and folded at hard. */
		bound = journal_bound(&in->opts, widest);
		wide  = bound > in->opts.journal_samples;
		/* Counted first only where the bound is capped, so that a
		 * fold brings fewer than JOURNAL_PER_SERIES samples of each
		 * series (at 20 series it brings 1,024: a larger journal
		 * would buy little there). */
		counting = widest * JOURNAL_PER_SERIES > bound;
		hard     = counting ? bound * JOURNAL_COUNTED_MAX : bound;
		fresh    = wide || half < 2 ? 2 : half;
		/* Then the journal may hold twice journal_records records,
		 * the counted ones included (readers look a series up in
		 * each; listings only in those not counted). */
		rlimit = in->opts.journal_records * (counting ? 2 : 1);
		over   = samples > hard || (counting && records > rlimit);
		if (all == INGEST_COUNT_ALL ? ucsamples == 0
		                            : samples == 0
		            || (!all && !over && ucsamples <= bound
		                && ucrecords <= in->opts.journal_records
		                && records <= rlimit)) {
			store_abort(t);
			return 0;
		}
		if (all == INGEST_COUNT_ALL) {
			rc = store_journal_count(t, hard, &counted);
		} else if (!all && !over) {
			/* Before a count too: the records counted are then
			 * merged ones, few and large (they are not merged
			 * again), not a count's worth of commits' records. */
			if (ucrecords > in->opts.journal_records
			    || records > rlimit
			    || (counting && ucsamples > bound))
				rc = store_journal_merge(t, fresh,
				    in->opts.journal_samples / JOURNAL_WIDE,
				    in->opts.journal_samples
				        / (counting ? 1 : 4),
				    &merged);
			if (rc == 0 && merged == 0 && counting
			    && (ucsamples > bound
			        || ucrecords > in->opts.journal_records))
				rc = store_journal_count(t, bound, &counted);
		}
		if (rc == 0 && merged == 0 && counted == 0)
			rc = store_fold(t, hard, &folded);
		if (rc == 0)
			rc = store_commit(t);
		else
			store_abort(t);
		if (rc == STORE_EMAPFULL) {
			if ((rc = store_grow(in->st)) != 0)
				return rc;
			continue;
		}
		if (rc != 0)
			return rc;
		if (merged > 0) {
			in->stats.merges++;
			continue;
		}
		if (counted > 0) {
			in->stats.counts++;
			continue;
		}
		in->stats.folds++;
		in->stats.folded += folded;
	}
}

int
ingest_commit(ingest *in)
{
	int rc;

	if (in->txn == NULL)
		return 0;
	if ((rc = flush_dirty(in)) != 0) {
		ingest_abort(in);
		return rc;
	}
	rc      = store_commit(in->txn);
	in->txn = NULL;
	if (rc != 0) {
		cache_drop(in);
		in->stats.drops++;
		return rc;
	}
	cache_settle(in);
	in->stats.batches += in->tentative.batches;
	in->stats.samples += in->tentative.samples;
	in->stats.duplicates += in->tentative.duplicates;
	in->stats.rejected += in->tentative.rejected;
	in->stats.series += in->tentative.series;
	in->stats.emitters_new += in->tentative.emitters_new;
	in->stats.refused += in->tentative.refused;
	in->stats.limit_alerts += in->tentative.limit_alerts;
	in->stats.emitter_refused += in->tentative.emitter_refused;
	in->stats.commits++;
	memset(&in->tentative, 0, sizeof(in->tentative));
	cache_evict(in);
	/* The commit is kept whatever the fold does: a fold that fails
	 * leaves the journal as it was, and the next commit tries again. */
	if ((rc = ingest_fold(in, 0)) != 0 && in->notice[0] == 0)
		snprintf(in->notice, sizeof(in->notice),
		    "folding the journal failed (will retry): %s",
		    store_errmsg(in->st));
	{
		uint64_t used = store_map_used(in->st);

		if (in->map_used > 0 && used > in->map_used
		    && used - in->map_used > in->map_added)
			in->map_added = used - in->map_used;
	}
	return 0;
}

void
ingest_get_stats(const ingest *in, ingest_stats *out)
{
	*out = in->stats;
}

const char *
ingest_notice(ingest *in)
{
	if (in->notice[0] == 0)
		return NULL;
	/* Cleared on the next call: copy into a second buffer first. */
	memcpy(in->notice_out, in->notice, sizeof(in->notice));
	in->notice[0] = 0;
	return in->notice_out;
}
