/*
 * Unit tests of the store and the collector's write path (ingest) on a
 * real LMDB environment in a temporary folder: samples read back exactly,
 * duplicates are discarded across reopen, restarts merge in step order,
 * the map grows, an aborted transaction leaves nothing behind, a rank's
 * latest incarnation is the one that started last.
 */
#include "collector/ingest.h"
#include "store/be.h"
#include "store/block.h"
#include "store/journal.h"
#include "store/scan.h"
#include "store/store.h"
#include "store/store_int.h"
#include "store/varint.h"

#include <lmdb.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/harness.h"

static char    dir[256];
static uint8_t msg[1 << 20];

static void
fresh_dir(void)
{
	harness_fresh_dir(dir, sizeof(dir), "vitals-test-store");
}

typedef struct spec {
	const char *run;
	uint64_t    inc, seq, floor, dropped;
	int32_t     rank;
	const char *metric;
	uint64_t    step0;
	uint32_t    n;
	double (*value)(uint64_t step);
} spec;

static double
val_lin(uint64_t step)
{
	return (double) (float) (3.0 / (1.0 + (double) step * 0.001));
}

/* Encode a batch as an emitter would and decode it as vitalsd does. */
static void
make(const spec *s, wire_batch *b)
{
	wire_ident id = { 0 };
	size_t     off;
	char       err[200];

	id.incarnation = s->inc;
	id.pid         = 1;
	id.rank        = s->rank;
	id.world_size  = 4;
	id.run         = s->run;
	id.run_len     = (uint16_t) strlen(s->run);
	id.host        = "h";
	id.host_len    = 1;
	off            = wire_put_batch_head(msg, &id, s->seq, s->floor,
                   s->dropped);
	wire_put_names_count(msg, &off, 1);
	wire_put_name(msg, &off, s->metric, strlen(s->metric));
	wire_put_samples_count(msg, &off, s->n);
	for (uint32_t i = 0; i < s->n; i++) {
		uint64_t    st = s->step0 + i;
		wire_sample w  = { 0, st, 1700000000000000000ll +
				 (int64_t) st * 100000000, s->value(st) };
		wire_put_sample(msg, &off, &w);
	}
	if (wire_batch_decode(msg, off, b, err, sizeof(err)) != 0) {
		printf("  bad test batch: %s\n", err);
		abort();
	}
}

/* A batch of one emitter that names its series: prefix and order[k]
 * (width digits) for k below n, and one sample of step for each of the
 * first nsamples names, valued values[k]. */
typedef struct names_batch {
	const char   *run, *prefix;
	int           rank, world, width, n, nsamples;
	uint64_t      inc, seq, step;
	const int    *order;
	const double *values;
} names_batch;

/* Encode nb as an emitter would, decode it as vitalsd does and hand it
 * to ingest (a transaction open). Returns ingest_batch's answer, or -1
 * for a batch that does not decode. */
static int
ingest_names(ingest *in, const names_batch *nb)
{
	wire_ident id = { 0 };
	wire_batch b;
	size_t     off;
	char       err[200], name[32];
	int        is_new;

	id.incarnation = nb->inc;
	id.pid         = 1;
	id.rank        = nb->rank;
	id.world_size  = nb->world;
	id.run         = nb->run;
	id.run_len     = (uint16_t) strlen(nb->run);
	id.host        = "h";
	id.host_len    = 1;
	off            = wire_put_batch_head(msg, &id, nb->seq, nb->seq, 0);
	wire_put_names_count(msg, &off, (uint16_t) nb->n);
	for (int k = 0; k < nb->n; k++) {
		int l = snprintf(name, sizeof(name), "%s%0*d", nb->prefix,
		    nb->width, nb->order[k]);

		wire_put_name(msg, &off, name, (size_t) l);
	}
	wire_put_samples_count(msg, &off, (uint32_t) nb->nsamples);
	for (int k = 0; k < nb->nsamples; k++) {
		wire_sample w = { (uint16_t) k, nb->step,
			1700000000000000000ll + (int64_t) nb->step * 1000000,
			nb->values[k] };

		wire_put_sample(msg, &off, &w);
	}
	if (wire_batch_decode(msg, off, &b, err, sizeof(err)) != 0)
		return -1;
	return ingest_batch(in, &b, 1, &is_new, err, sizeof(err));
}

static int
apply(ingest *in, const spec *s)
{
	wire_batch b;
	char       why[200];
	int        is_new, rc;

	make(s, &b);
	if (ingest_begin(in) != 0)
		return -100;
	rc = ingest_batch(in, &b, 1, &is_new, why, sizeof(why));
	if (rc < 0) {
		ingest_abort(in);
		return rc;
	}
	if (ingest_commit(in) != 0)
		return -101;
	return rc;
}

typedef struct got {
	uint64_t n;
	uint64_t steps[4096];
	double   values[4096];
	int64_t  times[4096];
} got;

static int
collect(void *ctx, uint64_t step, int64_t t, double v)
{
	got *g = ctx;

	if (g->n < 4096) {
		g->steps[g->n]  = step;
		g->values[g->n] = v;
		g->times[g->n]  = t;
	}
	g->n++;
	return 0;
}

typedef struct find_ctx {
	const char *metric;
	int32_t     rank;
	uint32_t    sid;
	series_rec  rec;
} find_ctx;

static int
find_series(void *ctx, const scan_series *s)
{
	find_ctx *f = ctx;

	if (s->mlen == strlen(f->metric) &&
	    memcmp(s->metric, f->metric, s->mlen) == 0 && s->rank == f->rank) {
		f->sid = s->rec.sid;
		f->rec = s->rec;
	}
	return 0;
}

/* Read series (run, metric, rank) in [from, to] into g. */
static int
read_series(const char *run, const char *metric, int32_t rank, uint64_t from,
    uint64_t to, got *g)
{
	store     *st;
	store_txn *txn;
	char       err[1400];
	find_ctx   f = { metric, rank, 0, { 0 } };
	int      rc;

	memset(g, 0, sizeof(*g));
	if (store_open(dir, STORE_RDONLY, &st, err, sizeof(err)) != 0) {
		printf("  %s\n", err);
		return -1;
	}
	if (store_read_begin(st, &txn) != 0)
		return -1;
	scan_series_of(st, txn, run, find_series, &f);
	rc = f.sid ? scan_samples(st, txn, f.sid, from, to, collect, g) : -2;
	if (rc != 0 && rc != -2)
		printf("  scan: %d %s\n", rc, store_errmsg(st));
	store_read_end(txn);
	store_close(st);
	return rc;
}

/* The store of the test's folder, with ingest on options o (NULL: the
 * defaults). */
static void
open_with(store **st, ingest **in, const ingest_opts *o)
{
	char err[1400];

	if (store_open(dir, 0, st, err, sizeof(err)) != 0) {
		printf("  %s\n", err);
		abort();
	}
	if (ingest_open(*st, o, in) != 0)
		abort();
}

static void
open_both(store **st, ingest **in)
{
	open_with(st, in, NULL);
}

TEST(store_and_read_back)
{
	store  *st;
	ingest *in;
	got     g;
	spec    s = { "r1", 10, 1, 1, 0, 0, "loss", 0, 3000, val_lin };

	fresh_dir();
	open_both(&st, &in);
	CHECK_EQ_INT(apply(in, &s), WIRE_ACK_STORED);
	s.seq = 2, s.floor = 2, s.step0 = 3000, s.n = 1000;
	CHECK_EQ_INT(apply(in, &s), WIRE_ACK_STORED);
	ingest_close(in);
	store_close(st);

	REQUIRE(read_series("r1", "loss", 0, 0, UINT64_MAX, &g) == 0);
	CHECK_EQ_INT(g.n, 4000);
	{
		/* The run's record follows every commit, not only the
		 * first. */
		store     *rs;
		store_txn *txn;
		run_rec    rr;
		char       err[1400];

		REQUIRE(store_open(dir, STORE_RDONLY, &rs, err, sizeof(err)) ==
		    0);
		REQUIRE(store_read_begin(rs, &txn) == 0);
		CHECK(scan_run_get(rs, txn, "r1", &rr) == 0);
		CHECK_EQ_INT(rr.samples, 4000);
		CHECK_EQ_INT(rr.last_step, 3999);
		CHECK_EQ_INT(rr.series, 1);
		CHECK_EQ_INT(rr.emitters, 1);
		store_read_end(txn);
		store_close(rs);
	}
	for (uint64_t i = 0; i < 4000 && i < g.n; i++) {
		if (g.steps[i] != i || g.values[i] != val_lin(i)) {
			CHECK(!"sample differs");
			break;
		}
	}
	/* A range across block boundaries. */
	REQUIRE(read_series("r1", "loss", 0, 1234, 3456, &g) == 0);
	CHECK_EQ_INT(g.n, 3456 - 1234 + 1);
	CHECK_EQ_INT(g.steps[0], 1234);
	/* Another rank does not exist. */
	CHECK(read_series("r1", "loss", 1, 0, UINT64_MAX, &g) == -2);
}

TEST(duplicates_discarded_across_reopen)
{
	store  *st;
	ingest *in;
	got     g;
	spec    s = { "r2", 77, 1, 1, 0, 1, "gn", 0, 100, val_lin };

	fresh_dir();
	open_both(&st, &in);
	CHECK_EQ_INT(apply(in, &s), WIRE_ACK_STORED);
	CHECK_EQ_INT(apply(in, &s), WIRE_ACK_DUPLICATE);
	ingest_close(in);
	store_close(st);
	/* A restarted collector still knows seq 1 was stored. */
	open_both(&st, &in);
	CHECK_EQ_INT(apply(in, &s), WIRE_ACK_DUPLICATE);
	/* Out of order: 3 before 2, then 2, then 3 again. */
	s.seq = 3, s.step0 = 200;
	CHECK_EQ_INT(apply(in, &s), WIRE_ACK_STORED);
	s.seq = 2, s.step0 = 100;
	CHECK_EQ_INT(apply(in, &s), WIRE_ACK_STORED);
	s.seq = 3, s.step0 = 200;
	CHECK_EQ_INT(apply(in, &s), WIRE_ACK_DUPLICATE);
	/* The emitter's floor moved past 3: all below are duplicates. */
	s.seq = 4, s.floor = 4, s.step0 = 300;
	CHECK_EQ_INT(apply(in, &s), WIRE_ACK_STORED);
	s.seq = 2, s.floor = 2, s.step0 = 100;
	CHECK_EQ_INT(apply(in, &s), WIRE_ACK_DUPLICATE);
	/* Beyond the window: refused, not stored. */
	s.seq = 4 + EMITTER_WINDOW, s.floor = 4, s.step0 = 900;
	CHECK_EQ_INT(apply(in, &s), WIRE_ACK_REJECTED);
	ingest_close(in);
	store_close(st);
	REQUIRE(read_series("r2", "gn", 1, 0, UINT64_MAX, &g) == 0);
	CHECK_EQ_INT(g.n, 400);
	for (uint64_t i = 1; i < g.n && i < 400; i++)
		CHECK(g.steps[i] == g.steps[i - 1] + 1);
}

TEST(restart_overlap_merges_by_step)
{
	store  *st;
	ingest *in;
	got     g;
	spec    a = { "r3", 1, 1, 1, 0, 0, "loss", 0, 100, val_lin };
	spec    b = { "r3", 2, 1, 1, 0, 0, "loss", 60, 100, val_lin };

	fresh_dir();
	open_both(&st, &in);
	CHECK_EQ_INT(apply(in, &a), WIRE_ACK_STORED);
	/* A new incarnation resumes from step 60. */
	CHECK_EQ_INT(apply(in, &b), WIRE_ACK_STORED);
	ingest_close(in);
	store_close(st);
	REQUIRE(read_series("r3", "loss", 0, 0, UINT64_MAX, &g) == 0);
	CHECK_EQ_INT(g.n, 200);
	for (uint64_t i = 1; i < g.n && i < 200; i++)
		CHECK(g.steps[i] >= g.steps[i - 1]);
	CHECK_EQ_INT(g.steps[60], 60);
	CHECK_EQ_INT(g.steps[61], 60);
	CHECK_EQ_INT(g.steps[199], 159);
	/* The older attempt's sample comes first at equal steps. */
	CHECK(g.times[60] == g.times[61]);
	REQUIRE(read_series("r3", "loss", 0, 99, 100, &g) == 0);
	CHECK_EQ_INT(g.n, 3);
}

/* What scan_samples_arrived reads of series (run, metric, rank 0) past
 * its first skip samples, with the journal looked up or loaded first. */
static int
read_arrived(
    const char *run, const char *metric, uint64_t skip, int load, got *g)
{
	store        *st;
	store_txn    *txn;
	scan_journal *j = NULL;
	char          err[1400];
	find_ctx      f = { metric, 0, 0, { 0 } };
	int           rc;

	memset(g, 0, sizeof(*g));
	if (store_open(dir, STORE_RDONLY, &st, err, sizeof(err)) != 0)
		return -1;
	if (store_read_begin(st, &txn) != 0)
		return -1;
	scan_series_of(st, txn, run, find_series, &f);
	rc = f.sid ? 0 : -2;
	if (rc == 0 && load
	    && (scan_journal_new(&j) != 0
	        || scan_journal_load(st, txn, j, &f.sid, 1) != 0))
		rc = -3;
	if (rc == 0)
		rc = scan_samples_arrived(st, txn, j, f.sid, skip, collect, g);
	scan_journal_free(j);
	store_read_end(txn);
	store_close(st);
	return rc;
}

/*
 * A reader that keeps how many samples of a series it handled (vitalsd
 * --remote-write) reads what was stored since, in the order stored,
 * whatever the steps: a batch stored after newer ones (an emitter's
 * resend behind them), a restart that goes back in steps; in blocks
 * (direct appends) and in the journal, the same before and after the
 * fold, and with the journal loaded once.
 */
TEST(samples_read_in_arrival_order)
{
	store  *st;
	ingest *in;
	got     g;
	/* In the order they are stored: seq 3 before seq 2; then a new
	 * incarnation resumes from step 500 with small batches (kept in
	 * the journal until the fold). */
	spec parts[] = {
		{ "arr", 1, 1, 1, 0, 0, "loss", 0, 1000, val_lin },
		{ "arr", 1, 3, 1, 0, 0, "loss", 2000, 1000, val_lin },
		{ "arr", 1, 2, 1, 0, 0, "loss", 1000, 1000, val_lin },
		{ "arr", 2, 1, 1, 0, 0, "loss", 500, 100, val_lin },
		{ "arr", 2, 2, 2, 0, 0, "loss", 600, 50, val_lin },
	};
	static const uint64_t skips[]
	    = { 0, 1, 999, 1000, 1001, 2500, 3000, 3100, 3149, 3150, 5000 };
	uint64_t expect[3150], n = 0;
	int      bad = 0;

	fresh_dir();
	open_both(&st, &in);
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		CHECK_EQ_INT(apply(in, &parts[i]), WIRE_ACK_STORED);
		for (uint32_t k = 0; k < parts[i].n; k++)
			expect[n++] = parts[i].step0 + k;
	}
	for (int folded = 0; folded < 2; folded++) {
		if (folded)
			REQUIRE(ingest_fold(in, 1) == 0);
		for (int load = 0; load < 2; load++) {
			for (size_t s = 0;
			     s < sizeof(skips) / sizeof(skips[0]); s++) {
				uint64_t k    = skips[s],
				         want = k < n ? n - k : 0;

				REQUIRE(
				    read_arrived("arr", "loss", k, load, &g)
				    == 0);
				if (g.n != want) {
					printf(
					    "  skip %llu%s%s: %llu samples, "
					    "not %llu\n",
					    (unsigned long long) k,
					    folded ? ", folded" : "",
					    load ? ", loaded" : "",
					    (unsigned long long) g.n,
					    (unsigned long long) want);
					bad++;
					continue;
				}
				for (uint64_t i = 0; i < g.n; i++) {
					uint64_t e = expect[k + i];

					if (g.steps[i] != e
					    || g.values[i] != val_lin(e)
					    || g.times[i]
					        != 1700000000000000000ll
					            + (int64_t) e
					                * 100000000) {
						printf(
						    "  skip %llu%s: sample "
						    "%llu is step %llu, not "
						    "%llu\n",
						    (unsigned long long) k,
						    folded ? ", folded" : "",
						    (unsigned long long) i,
						    (unsigned long long)
						        g.steps[i],
						    (unsigned long long) e);
						bad++;
						break;
					}
				}
			}
		}
	}
	CHECK_EQ_INT(bad, 0);
	ingest_close(in);
	store_close(st);
}

static double
val_noise(uint64_t step)
{
	uint64_t x = step * 0x9e3779b97f4a7c15ull;
	double   d;

	x ^= x >> 29;
	x = (x & 0x800fffffffffffffull) | (0x3ffull << 52);
	memcpy(&d, &x, 8);
	return d;
}

/* One batch committed as vitalsd commits it: on a full map, the
 * transaction is aborted, the map grown and the batch redone (counted in
 * *redone, when given). Returns 0 or a store_err. */
static int
commit_growing(store *st, ingest *in, const wire_batch *b, int *redone)
{
	char why[200];
	int  is_new, rc;

	for (;;) {
		if ((rc = ingest_begin(in)) != 0)
			return rc;
		rc = ingest_batch(in, b, 1, &is_new, why, sizeof(why));
		if (rc < 0) {
			ingest_abort(in);
			rc = -rc;
		} else {
			rc = ingest_commit(in);
		}
		if (rc != STORE_EMAPFULL)
			return rc;
		if (redone != NULL)
			(*redone)++;
		if ((rc = store_grow(st)) != 0)
			return rc;
	}
}

/*
 * The map is grown between transactions, before one may fill it: a
 * transaction that fails on a full map drops the caches with its abort,
 * and is redone. Commits as vitalsd makes them (redone after a growth)
 * of a run whose 2.4M incompressible values fill the initial 16 MiB
 * map several times: none is redone, and the samples read back.
 */
TEST(map_grows_ahead_of_transactions)
{
	store       *st;
	ingest      *in;
	ingest_stats is;
	got          g;
	spec s      = { "ahead", 5, 1, 1, 0, 0, "noise", 0, 20000, val_noise };
	int  redone = 0;

	fresh_dir();
	open_both(&st, &in);
	for (uint64_t k = 0; k < 120; k++) {
		wire_batch b;

		s.seq = s.floor = k + 1;
		s.step0         = k * 20000;
		make(&s, &b);
		REQUIRE(commit_growing(st, in, &b, &redone) == 0);
	}
	ingest_get_stats(in, &is);
	CHECK_EQ_INT(redone, 0);
	CHECK_EQ_INT((int) is.drops, 0);
	CHECK(is.map_grown > 0);
	CHECK(store_map_size(st) > (16u << 20));
	ingest_close(in);
	store_close(st);
	REQUIRE(
	    read_series("ahead", "noise", 0, 2399990, UINT64_MAX, &g) == 0);
	CHECK_EQ_INT(g.n, 10);
	CHECK(g.values[9] == val_noise(2399999));
}

/* What the caller expects a transaction to write is room made in the
 * map before it begins (vitalsd: several times a group's bytes). */
TEST(expected_bytes_grow_the_map_first)
{
	store  *st;
	ingest *in;

	fresh_dir();
	open_both(&st, &in);
	CHECK(store_map_size(st) < (40u << 20));
	ingest_expect(in, 40u << 20);
	REQUIRE(ingest_begin(in) == 0);
	CHECK(store_map_size(st) >= (40u << 20));
	REQUIRE(ingest_commit(in) == 0);
	ingest_close(in);
	store_close(st);
}

TEST(abort_leaves_nothing)
{
	store     *st;
	ingest    *in;
	got        g;
	wire_batch b;
	char       why[200];
	int        is_new;
	spec       s = { "r4", 9, 1, 1, 0, 0, "loss", 0, 50, val_lin };

	fresh_dir();
	open_both(&st, &in);
	CHECK_EQ_INT(apply(in, &s), WIRE_ACK_STORED);
	s.seq = 2, s.step0 = 50;
	make(&s, &b);
	REQUIRE(ingest_begin(in) == 0);
	CHECK_EQ_INT(ingest_batch(in, &b, 1, &is_new, why, sizeof(why)),
	    WIRE_ACK_STORED);
	ingest_abort(in);
	/* Applied again after the abort: stored once, not a duplicate. */
	CHECK_EQ_INT(apply(in, &s), WIRE_ACK_STORED);
	ingest_close(in);
	store_close(st);
	REQUIRE(read_series("r4", "loss", 0, 0, UINT64_MAX, &g) == 0);
	CHECK_EQ_INT(g.n, 100);
}

typedef struct alerts_seen {
	int      n;
	uint64_t seq[8];
	char     text[8][32];
} alerts_seen;

static int
each_alert(void *ctx, const char *run, size_t runlen, uint64_t seq,
    const char *json, size_t len)
{
	alerts_seen *a = ctx;

	(void) run;
	(void) runlen;
	if (a->n < 8) {
		a->seq[a->n] = seq;
		snprintf(a->text[a->n], sizeof(a->text[0]), "%.*s", (int) len,
		    json);
	}
	a->n++;
	return 0;
}

TEST(alerts_in_order_per_run)
{
	store      *st;
	ingest     *in;
	store_txn  *txn;
	alerts_seen a = { 0 };

	fresh_dir();
	open_both(&st, &in);
	REQUIRE(ingest_begin(in) == 0);
	CHECK(ingest_alert(in, "ra", 2, "{\"n\":1}", 7) == 0);
	CHECK(ingest_alert(in, "rb", 2, "{\"n\":2}", 7) == 0);
	REQUIRE(ingest_commit(in) == 0);
	ingest_close(in);
	store_close(st);
	/* Numbering survives a restart of the collector. */
	open_both(&st, &in);
	REQUIRE(ingest_begin(in) == 0);
	CHECK(ingest_alert(in, "ra", 2, "{\"n\":3}", 7) == 0);
	REQUIRE(ingest_commit(in) == 0);
	ingest_close(in);
	REQUIRE(store_read_begin(st, &txn) == 0);
	CHECK(scan_alerts(st, txn, "ra", 0, each_alert, &a) == 0);
	CHECK_EQ_INT(a.n, 2);
	CHECK(a.seq[0] < a.seq[1]);
	CHECK(strcmp(a.text[0], "{\"n\":1}") == 0);
	CHECK(strcmp(a.text[1], "{\"n\":3}") == 0);
	memset(&a, 0, sizeof(a));
	CHECK(scan_alerts(st, txn, "ra", 1, each_alert, &a) == 0);
	CHECK_EQ_INT(a.n, 1);
	memset(&a, 0, sizeof(a));
	CHECK(scan_alerts(st, txn, NULL, 0, each_alert, &a) == 0);
	CHECK_EQ_INT(a.n, 3);
	store_read_end(txn);
	store_close(st);
}

/* Apply one batch of s from a process started at start_ns, FINAL if
 * final (its last batch). */
static int
apply_from(ingest *in, const spec *s, uint64_t start_ns, int final)
{
	wire_batch b;
	char       why[200];
	int        is_new, rc;

	make(s, &b);
	b.id.start_ns = start_ns;
	if (final)
		b.flags |= WIRE_FINAL;
	if (ingest_begin(in) != 0)
		return -100;
	rc = ingest_batch(in, &b, 1, &is_new, why, sizeof(why));
	if (rc < 0) {
		ingest_abort(in);
		return rc;
	}
	return ingest_commit(in) != 0 ? -101 : rc;
}

typedef struct ranks_seen {
	int      n;
	int32_t  rank[4];
	size_t   incs[4];
	uint64_t latest[4];
} ranks_seen;

static int
each_rank(void *ctx, const scan_rank *r)
{
	ranks_seen *c = ctx;

	if (c->n < 4) {
		c->rank[c->n]   = r->rank;
		c->incs[c->n]   = r->n;
		c->latest[c->n] = r->inc[r->n - 1]->incarnation;
	}
	c->n++;
	return 0;
}

static int
run_finished(store *st)
{
	store_txn *txn;
	int        fin = -1;

	if (store_read_begin(st, &txn) != 0)
		return -1;
	if (scan_run_finished(st, txn, "rr", &fin) != 0)
		fin = -1;
	store_read_end(txn);
	return fin;
}

TEST(ranks_latest_incarnation_by_start)
{
	store     *st;
	ingest    *in;
	store_txn *txn;
	ranks_seen c = { 0 };
	spec       s = { "rr", 9, 1, 1, 0, 0, "loss", 0, 10, val_lin };

	fresh_dir();
	open_both(&st, &in);
	/* Rank 0: incarnation 9 started first and ended; incarnation 3
	 * (a lower key) started later and still runs. */
	CHECK_EQ_INT(apply_from(in, &s, 100, 1), WIRE_ACK_STORED);
	s.inc = 3, s.step0 = 5;
	CHECK_EQ_INT(apply_from(in, &s, 300, 0), WIRE_ACK_STORED);
	/* Rank 1: incarnation 2, ended, then 5, running. */
	s.rank = 1, s.inc = 2, s.step0 = 0;
	CHECK_EQ_INT(apply_from(in, &s, 100, 1), WIRE_ACK_STORED);
	s.inc = 5;
	CHECK_EQ_INT(apply_from(in, &s, 200, 0), WIRE_ACK_STORED);

	REQUIRE(store_read_begin(st, &txn) == 0);
	CHECK(scan_ranks(st, txn, "rr", each_rank, &c) == 0);
	store_read_end(txn);
	CHECK_EQ_INT(c.n, 2);
	CHECK(c.rank[0] == 0 && c.rank[1] == 1);
	CHECK(c.incs[0] == 2 && c.incs[1] == 2);
	CHECK_EQ_INT(c.latest[0], 3);
	CHECK_EQ_INT(c.latest[1], 5);
	/* The latest of each rank still runs: not finished. */
	CHECK_EQ_INT(run_finished(st), 0);

	/* Both latest incarnations say goodbye. */
	s.rank = 0, s.inc = 3, s.seq = s.floor = 2, s.step0 = 20;
	CHECK_EQ_INT(apply_from(in, &s, 300, 1), WIRE_ACK_STORED);
	CHECK_EQ_INT(run_finished(st), 0);
	s.rank = 1, s.inc = 5;
	CHECK_EQ_INT(apply_from(in, &s, 200, 1), WIRE_ACK_STORED);
	CHECK_EQ_INT(run_finished(st), 1);
	ingest_close(in);
	store_close(st);
}

/* Value of series m of the wide test at step st: distinct per series. */
static double
val_wide(int m, uint64_t st)
{
	return (double) (float) ((double) m + 1.0 / (1.0 + (double) st));
}

/* One batch of rank 0 of run "wide": nm series "m00".. each with k
 * samples from step s0, in one transaction. */
static int
apply_wide(ingest *in, uint64_t seq, int nm, uint64_t s0, uint32_t k)
{
	wire_ident id = { 0 };
	wire_batch b;
	size_t     off;
	char       name[16], why[200];
	int        is_new, rc;

	id.incarnation = 77;
	id.world_size  = 1;
	id.run         = "wide";
	id.run_len     = 4;
	id.host        = "h";
	id.host_len    = 1;
	off            = wire_put_batch_head(msg, &id, seq, seq, 0);
	wire_put_names_count(msg, &off, (uint16_t) nm);
	for (int m = 0; m < nm; m++) {
		snprintf(name, sizeof(name), "m%02d", m);
		wire_put_name(msg, &off, name, strlen(name));
	}
	wire_put_samples_count(msg, &off, (uint32_t) nm * k);
	for (uint64_t st = s0; st < s0 + k; st++) {
		for (int m = 0; m < nm; m++) {
			wire_sample w = { (uint16_t) m, st,
				1700000000000000000ll + (int64_t) st * 1000000,
				val_wide(m, st) };

			wire_put_sample(msg, &off, &w);
		}
	}
	if (wire_batch_decode(msg, off, &b, why, sizeof(why)) != 0)
		return -102;
	if (ingest_begin(in) != 0)
		return -100;
	rc = ingest_batch(in, &b, 1, &is_new, why, sizeof(why));
	if (rc < 0) {
		ingest_abort(in);
		return rc;
	}
	return ingest_commit(in) != 0 ? -101 : rc;
}

/*
 * More series per commit than encoders allowed: every commit unloads
 * and reloads tails (the encoders handed from series to series), and a
 * reopen resumes them from the store. Every series reads back exactly.
 */
TEST(wide_run_past_encoder_bound_reads_back)
{
	store      *st;
	ingest     *in;
	ingest_opts o;
	got        *g = malloc(sizeof(*g));
	uint64_t    seq = 1, step = 0;
	int         bad = 0;

	REQUIRE(g != NULL);
	fresh_dir();
	REQUIRE(store_open(dir, 0, &st, (char[1400]) { 0 }, 1400) == 0);
	ingest_opts_init(&o);
	o.cache_encoders = 4;
	REQUIRE(ingest_open(st, &o, &in) == 0);
	for (int c = 0; c < 40; c++, seq++, step += 3) {
		if (c == 20) { /* a restart of the collector */
			ingest_close(in);
			REQUIRE(ingest_open(st, &o, &in) == 0);
		}
		CHECK_EQ_INT(apply_wide(in, seq, 50, step, 3), WIRE_ACK_STORED);
	}
	ingest_close(in);
	store_close(st);
	for (int m = 0; m < 50; m++) {
		char name[16];

		snprintf(name, sizeof(name), "m%02d", m);
		REQUIRE(read_series("wide", name, 0, 0, UINT64_MAX, g) == 0);
		if (g->n != 120) {
			printf("  %s: %llu samples\n", name,
			    (unsigned long long) g->n);
			bad++;
			continue;
		}
		for (uint64_t i = 0; i < 120; i++)
			if (g->steps[i] != i ||
			    g->values[i] != val_wide(m, i) ||
			    g->times[i] != 1700000000000000000ll +
				    (int64_t) i * 1000000)
				bad++;
	}
	CHECK_EQ_INT(bad, 0);
	free(g);
}

/* ---- the journal: reads equal a folded reference at any moment ------- */

/* A deterministic generator (xorshift64). */
static uint64_t
rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

#define J_RANKS 3
#define J_METRICS 5

typedef struct jgot {
	size_t        n, cap;
	store_sample *s;
} jgot;

static int
jcollect(void *ctx, uint64_t step, int64_t t, double v)
{
	jgot *g = ctx;

	if (g->n == g->cap) {
		g->cap = g->cap ? g->cap * 2 : 1024;
		g->s   = realloc(g->s, g->cap * sizeof(*g->s));
		if (g->s == NULL)
			abort();
	}
	g->s[g->n].step    = step;
	g->s[g->n].time_ns = t;
	g->s[g->n].value   = v;
	g->n++;
	return 0;
}

/* What was sent, per series in the order they list (metric, then
 * rank). */
static jgot jsent[J_RANKS * J_METRICS];

/* journal_counts: every metric of a batch as its first (the same
 * count from the same step, as a trainer logging each metric at each
 * step sends them); journal_batch: times in whole ms. */
static int jaligned;

/* The counts of rank r's next batch: for each metric k[m] samples from
 * step s0[m], mostly a few, sometimes a block's worth, sometimes from a
 * step back (a restart); next holds where each series goes on. Returns
 * the samples in all. */

static uint64_t
journal_counts(
    uint64_t *x, uint64_t next[J_METRICS], uint64_t *s0, uint32_t *k)
{
	uint64_t sent = 0;

	for (int m = 0; m < J_METRICS; m++) {
		uint64_t c = rnd(x) % 16;

		if (jaligned && m > 0) {
			k[m]    = k[0];
			s0[m]   = s0[0];
			next[m] = next[0];
			sent += k[m];
			continue;
		}
		k[m] = c < 10 ? (uint32_t) (rnd(x) % 6)
		    : c < 14  ? (uint32_t) (rnd(x) % 400)
		              : (uint32_t) (rnd(x) % 30);
		if (c == 15 && next[m] > 50)
			next[m] -= rnd(x) % 50;
		s0[m] = next[m];
		next[m] += k[m];
		sent += k[m];
	}
	return sent;
}

/* The head of a batch of rank r of a run of world ranks (incarnation
 * inc, sequence seq) naming prefix0 .. prefix<n-1>, with the count of
 * k[0] + ... + k[n-1] samples (*total) to follow, in msg. Returns its
 * length. */
static size_t
head_and_names(const char *run, int world, uint64_t inc, int r, uint64_t seq,
    const char *prefix, int n, const uint32_t *k, uint32_t *total)
{
	wire_ident id = { 0 };
	size_t     off;
	char       name[16];

	id.incarnation = inc;
	id.rank        = r;
	id.world_size  = world;
	id.run         = run;
	id.run_len     = (uint16_t) strlen(run);
	id.host        = "h";
	id.host_len    = 1;
	off            = wire_put_batch_head(msg, &id, seq, seq, 0);
	wire_put_names_count(msg, &off, (uint16_t) n);
	*total = 0;
	for (int m = 0; m < n; m++) {
		snprintf(name, sizeof(name), "%s%d", prefix, m);
		wire_put_name(msg, &off, name, strlen(name));
		*total += k[m];
	}
	wire_put_samples_count(msg, &off, *total);
	return off;
}

/* One batch of rank r: for each metric, k[m] samples from step s0[m]
 * (values random bit patterns or smooth, so blocks fill at different
 * rates and end in the middle of commits). */
static int
journal_batch(uint64_t *x, int r, uint64_t seq, const uint64_t *s0,
    const uint32_t *k, wire_batch *b)
{
	char     why[200];
	uint32_t total;
	size_t off = head_and_names("jr", J_RANKS, 500 + (uint64_t) r, r, seq,
	    "j", J_METRICS, k, &total);

	/* Interleaved across metrics, as a trainer logs them. */
	for (uint32_t i = 0, left = total; left > 0; i++) {
		for (int m = 0; m < J_METRICS; m++) {
			uint64_t    bits = rnd(x);
			double      v;
			wire_sample w;

			if (i >= k[m])
				continue;
			if (m % 2)
				memcpy(&v, &bits, sizeof(v));
			else
				v = (double) (s0[m] + i) * 0.5;
			w.name    = (uint16_t) m;
			w.step    = s0[m] + i;
			/* Aligned batches' times in whole ms (vitalsd's
			 * default quantum: records coded in ms). */
			w.time_ns = 1700000000000000000ll
			    + (int64_t) w.step * 1000000
			    + (int64_t) (bits % 3) * (jaligned ? 1000000 : 1);
			w.value = v;
			wire_put_sample(msg, &off, &w);
			jcollect(&jsent[m * J_RANKS + r], w.step, w.time_ns, v);
			left--;
		}
	}
	return wire_batch_decode(msg, off, b, why, sizeof(why));
}

typedef struct jsids {
	uint32_t   sid[J_RANKS * J_METRICS];
	series_rec rec[J_RANKS * J_METRICS];
	int        n;
} jsids;

static int
jlist(void *ctx, const scan_series *s)
{
	jsids *j = ctx;

	if (j->n < J_RANKS * J_METRICS) {
		j->rec[j->n]   = s->rec;
		j->sid[j->n++] = s->rec.sid;
	}
	return 0;
}

static int
jsample_cmp(const void *a, const void *b)
{
	const store_sample *x = a, *y = b;

	if (x->step != y->step)
		return x->step < y->step ? -1 : 1;
	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	return memcmp(&x->value, &y->value, 8);
}

/* Every series of st holds exactly the samples sent (as multisets, bit
 * for bit). Returns the series that do not. */
static int
journal_vs_sent(store *st)
{
	store_txn *txn;
	jsids      js;
	int        bad = 0;

	memset(&js, 0, sizeof(js));
	if (store_read_begin(st, &txn) != 0)
		return 1000;
	scan_series_of(st, txn, "jr", jlist, &js);
	for (int i = 0; i < js.n; i++) {
		jgot g = { 0 };

		scan_samples(st, txn, js.sid[i], 0, UINT64_MAX, jcollect, &g);
		if (g.n != jsent[i].n) {
			bad++;
		} else if (g.n > 0) {
			qsort(g.s, g.n, sizeof(*g.s), jsample_cmp);
			qsort(jsent[i].s, g.n, sizeof(*g.s), jsample_cmp);
			bad += memcmp(g.s, jsent[i].s, g.n * sizeof(*g.s)) != 0;
		}
		free(g.s);
	}
	store_read_end(txn);
	return bad + (js.n != J_RANKS * J_METRICS);
}

/* Read every series of both stores over [from, to]: the same samples,
 * bit for bit, in the same order, and in step order. Returns the
 * mismatches; *n counts the samples read from a. */
static int
journal_compare(store *a, store *b, uint64_t from, uint64_t to, uint64_t *n,
    uint64_t *jrec)
{
	store_txn *ta, *tb;
	jsids      sa, sb;
	scan_usage u;
	int        bad = 0;

	memset(&sa, 0, sizeof(sa));
	memset(&sb, 0, sizeof(sb));
	*n = 0;
	if (store_read_begin(a, &ta) != 0 || store_read_begin(b, &tb) != 0)
		return 1000;
	scan_series_of(a, ta, "jr", jlist, &sa);
	scan_series_of(b, tb, "jr", jlist, &sb);
	if (sa.n != sb.n)
		bad++;
	for (int i = 0; i < sa.n && i < sb.n; i++) {
		jgot              ga = { 0 }, gb = { 0 };
		const series_rec *x = &sa.rec[i], *y = &sb.rec[i];

		/* What the listing says of each series: the same too. */
		if (x->samples != y->samples || x->first_step != y->first_step
		    || x->last_step != y->last_step
		    || x->first_time != y->first_time
		    || x->last_time != y->last_time
		    || memcmp(&x->last_value, &y->last_value, 8) != 0) {
			bad++;
		}

		if (scan_samples(a, ta, sa.sid[i], from, to, jcollect, &ga) != 0
		    || scan_samples(b, tb, sb.sid[i], from, to, jcollect,
			   &gb) != 0)
			bad++;
		if (ga.n != gb.n ||
		    (from == 0 && to == UINT64_MAX && ga.n != x->samples))
			bad++;
		for (size_t j = 0; j < ga.n && j < gb.n; j++) {
			if (ga.s[j].step != gb.s[j].step ||
			    ga.s[j].time_ns != gb.s[j].time_ns ||
			    memcmp(&ga.s[j].value, &gb.s[j].value, 8) != 0 ||
			    (j > 0 && ga.s[j].step < ga.s[j - 1].step))
				bad++;
		}
		*n += ga.n;
		free(ga.s);
		free(gb.s);
	}
	if (scan_usage_get(a, ta, &u) == 0)
		*jrec = u.journal_records;
	store_read_end(ta);
	store_read_end(tb);
	return bad;
}

/*
 * A run written twice: into a store whose journal is folded in small
 * steps (so reads find samples in blocks, in the journal, and a series
 * split between both at every position of its tail block), and into a
 * reference folded completely after every commit (the blocks ingest has
 * always written). At random moments, including across a reopen, every
 * series reads the same in both, and is listed with the same statistics
 * (samples, first and last step and time, last value); restarts (steps going back) make
 * blocks overlap, so the merge order is checked too.
 */
static uint64_t le_get(const uint8_t *p, int width);

/* The journal records with tag (store_journal_merge's: 0xfffffffc,
 * format 6's, in the block code; 0xfffffffd, format 4's and 5's) in the
 * store in path now: their count, bytes (*bytes) and samples
 * (*samples). */
static int
merged_bytes(
    const char *path, uint32_t tag, uint64_t *bytes, uint64_t *samples)
{
	MDB_env    *env;
	MDB_txn    *txn;
	MDB_dbi     jdb;
	MDB_cursor *cur;
	MDB_val     k, v;
	int         n = 0;

	*bytes = *samples = 0;
	if (mdb_env_create(&env) != 0)
		return 0;
	mdb_env_set_maxdbs(env, 10);
	if (mdb_env_open(env, path, MDB_RDONLY, 0600) == 0
	    && mdb_txn_begin(env, NULL, MDB_RDONLY, &txn) == 0) {
		if (mdb_dbi_open(txn, "journal", 0, &jdb) == 0
		    && mdb_cursor_open(txn, jdb, &cur) == 0) {
			while (mdb_cursor_get(cur, &k, &v, MDB_NEXT) == 0) {
				if (v.mv_size < 12
				    || le_get(v.mv_data, 4) != tag)
					continue;
				n++;
				*bytes += v.mv_size;
				*samples += le_get(
				    (const uint8_t *) v.mv_data + 8, 4);
			}
			mdb_cursor_close(cur);
		}
		mdb_txn_abort(txn);
	}
	mdb_env_close(env);
	return n;
}

/* The commit records in the store in path now whose tag is base (format
 * 7: 0xfffffff0; format 8: 0xffffffe0) | flags (1 no first step, 2 no
 * later steps, 4 float32 values) with every flag of want: their count,
 * bytes and samples, as merged_bytes. */
static int
flag_bytes(const char *path, uint32_t base, uint32_t want, uint64_t *bytes,
    uint64_t *samples)
{
	int n = 0;

	*bytes = *samples = 0;
	for (uint32_t f = 0; f < 8; f++) {
		uint64_t b, s;

		if ((f & want) != want)
			continue;
		n += merged_bytes(path, base | f, &b, &s);
		*bytes += b;
		*samples += s;
	}
	return n;
}

/* Format 7's commit records (flag_bytes). */
static int
f7_bytes(const char *path, uint32_t want, uint64_t *bytes, uint64_t *samples)
{
	return flag_bytes(path, 0xfffffff0u, want, bytes, samples);
}

/* Format 8's commit records (flag_bytes): every value a float32. */
static int
f8_bytes(const char *path, uint32_t want, uint64_t *bytes, uint64_t *samples)
{
	return flag_bytes(path, 0xffffffe0u, want, bytes, samples);
}

/* Whether the journal of st holds a merged record in the block code
 * (format 6) now. */
static int
merged_records(store *st)
{
	char     path[400];
	uint64_t bytes, samples;

	(void) st;
	snprintf(path, sizeof(path), "%s/a", dir);
	return merged_bytes(path, 0xfffffffcu, &bytes, &samples) > 0;
}

/* Checks of journal_vs_reference that saw a record of a commit whose
 * groups all start at its base step (format 6: tag 0xfffffffb). */
static int jbase_records;

static void
journal_vs_reference(
    uint64_t jsamples, uint64_t jrecords, int *merged, uint64_t *counts)
{
	ingest_stats is;
	char        dir_a[300], dir_b[300], err[1400];
	store      *a, *b, *ra, *rb;
	ingest     *ia, *ib;
	ingest_opts oa, ob;
	uint64_t    x = 0x9e3779b97f4a7c15ull, seq[J_RANKS] = { 0 };
	uint64_t    next[J_RANKS][J_METRICS] = { { 0 } }, sent = 0, n, jrec;
	int         bad = 0, checks = 0, with_journal = 0;

	fresh_dir();
	snprintf(dir_a, sizeof(dir_a), "%s/a", dir);
	snprintf(dir_b, sizeof(dir_b), "%s/b", dir);
	REQUIRE(store_open(dir_a, 0, &a, err, sizeof(err)) == 0);
	REQUIRE(store_open(dir_b, 0, &b, err, sizeof(err)) == 0);
	ingest_opts_init(&oa);
	ingest_opts_init(&ob);
	oa.journal_samples = jsamples;
	oa.journal_records = jrecords;
	REQUIRE(ingest_open(a, &oa, &ia) == 0);
	REQUIRE(ingest_open(b, &ob, &ib) == 0);
	REQUIRE(store_open(dir_a, STORE_RDONLY, &ra, err, sizeof(err)) == 0);
	REQUIRE(store_open(dir_b, STORE_RDONLY, &rb, err, sizeof(err)) == 0);
	for (int round = 0; round < 400; round++) {
		int        r = (int) (rnd(&x) % J_RANKS);
		uint64_t   s0[J_METRICS];
		uint32_t   k[J_METRICS];
		wire_batch wb;
		char       why[200];
		int        is_new;

		sent += journal_counts(&x, next[r], s0, k);
		seq[r]++;
		REQUIRE(journal_batch(&x, r, seq[r], s0, k, &wb) == 0);
		REQUIRE(ingest_begin(ia) == 0);
		REQUIRE(ingest_batch(ia, &wb, 1, &is_new, why, sizeof(why))
		    == WIRE_ACK_STORED);
		REQUIRE(ingest_commit(ia) == 0);
		REQUIRE(ingest_begin(ib) == 0);
		REQUIRE(ingest_batch(ib, &wb, 1, &is_new, why, sizeof(why))
		    == WIRE_ACK_STORED);
		REQUIRE(ingest_commit(ib) == 0);
		REQUIRE(ingest_fold(ib, 1) == 0);
		if (round == 200) { /* the collector restarts */
			ingest_close(ia);
			REQUIRE(ingest_open(a, &oa, &ia) == 0);
		}
		if (rnd(&x) % 4 != 0)
			continue;
		checks++;
		bad += journal_compare(ra, rb, 0, UINT64_MAX, &n, &jrec);
		if (n != sent)
			bad++;
		with_journal += jrec > 0;
		if (jrec > 2 * jrecords) /* twice: a wide journal's */
			bad++;
		*merged += merged_records(ra);
		{
			char     path[400];
			uint64_t bytes, samples;

			snprintf(path, sizeof(path), "%s/a", dir);
			jbase_records += merged_bytes(path, 0xfffffffbu,
			                     &bytes, &samples)
			        + f7_bytes(path, 1, &bytes, &samples)
			    > 0;
		}
		/* Now and then, the samples themselves against what was
		 * sent (while the journal holds some). */
		if (round % 50 == 0 && jrec > 0)
			bad += journal_vs_sent(ra);
		/* A step range too: blocks skipped by their headers. */
		{
			uint64_t from = rnd(&x) % 2000;

			bad += journal_compare(ra, rb, from,
			    from + rnd(&x) % 500, &n, &jrec);
		}
	}
	ingest_get_stats(ia, &is);
	*counts = is.counts;
	/* Fully folded, the store reads the same and its journal is empty. */
	REQUIRE(ingest_fold(ia, 1) == 0);
	bad += journal_compare(ra, rb, 0, UINT64_MAX, &n, &jrec);
	CHECK_EQ_INT(n, sent);
	CHECK_EQ_INT(jrec, 0);
	CHECK_EQ_INT(journal_vs_sent(ra), 0);
	for (int i = 0; i < J_RANKS * J_METRICS; i++) {
		free(jsent[i].s);
		memset(&jsent[i], 0, sizeof(jsent[i]));
	}
	CHECK_EQ_INT(bad, 0);
	/* The test saw the journal holding samples at most checks. */
	CHECK(checks > 50 && with_journal > checks / 2);
	ingest_close(ia);
	ingest_close(ib);
	store_close(ra);
	store_close(rb);
	store_close(a);
	store_close(b);
}

TEST(journal_reads_equal_folded_reference)
{
	int      merged = 0;
	uint64_t counts;

	journal_vs_reference(700, 64, &merged, &counts);
}

/* The same with records merged (at most 4 records, and many samples
 * before a fold): merged records read as the records they replace. */
TEST(merged_journal_reads_equal_folded_reference)
{
	int      merged = 0;
	uint64_t counts;

	journal_vs_reference(6000, 4, &merged, &counts);
	CHECK(merged > 20); /* checks that saw a merged record */
}

/* The same with the wide bound (a rank's batch of 5 series is past
 * 700 / 1,024: the journal holds up to 2,800 samples) and merges of
 * the oldest fresh records (at most 175 samples, so some stay fresh). */
TEST(wide_merged_journal_reads_equal_folded_reference)
{
	int      merged = 0;
	uint64_t counts;

	journal_vs_reference(700, 4, &merged, &counts);
	CHECK(merged > 20);
}

/* The same with every metric of a batch from the same step (a trainer's
 * batches) and times in whole ms: the commits' records code no first
 * step (format 6), the records' time unit is 1 ms, and they read as
 * the reference. */
TEST(aligned_journal_reads_equal_folded_reference)
{
	int      merged = 0;
	uint64_t counts;

	jaligned      = 1;
	jbase_records = 0;
	journal_vs_reference(700, 4, &merged, &counts);
	jaligned = 0;
	CHECK(jbase_records > 20);
	CHECK(merged > 20);
}

/* The same with records counted in their series' statistics before
 * they are folded (a wide journal: counted at 400 samples, folded at
 * 1,600), merges between: the samples and the listed statistics are
 * those of the reference at every moment. */
TEST(counted_journal_reads_equal_folded_reference)
{
	int      merged = 0;
	uint64_t counts;

	journal_vs_reference(100, 4, &merged, &counts);
	CHECK(counts > 5);
}

/*
 * A listing's statistics (samples, first and last step, first and last
 * time, the value at the latest time: the last to arrive of those at
 * it) equal those computed from every sample the series was sent, in
 * the order they arrived, at every moment of a run whose series are
 * partly folded into blocks and partly in the journal, in records of a
 * commit and merged ones: series that have samples only in the journal,
 * one whose latest sample stays in its blocks, and a restart inside the
 * journal (steps going back below every folded one, a first time tying
 * the latest before it).
 */
#define L_RANKS 2
#define L_METRICS 6

static jgot     lsent[L_RANKS][L_METRICS];
static int64_t  ltime[L_RANKS][L_METRICS]; /* the latest time sent */
static uint64_t lstep[L_RANKS][L_METRICS]; /* the next step */

/* One batch of rank r (incarnation inc): k[m] samples of each metric
 * from its next step, each time after the last one sent (tie: the
 * first of each metric at it). */
static int
lbatch(uint64_t *x, uint64_t inc, int r, uint64_t seq, const uint32_t *k,
    int tie, wire_batch *b)
{
	char     why[200];
	uint32_t total;
	size_t   off = head_and_names(
	      "ls", L_RANKS, inc, r, seq, "l", L_METRICS, k, &total);

	for (int m = 0; m < L_METRICS; m++) {
		for (uint32_t i = 0; i < k[m]; i++) {
			uint64_t    bits = rnd(x);
			wire_sample w;

			w.name = (uint16_t) m;
			w.step = lstep[r][m]++;
			/* Milliseconds mostly (the records' time unit),
			 * now and then a nanosecond. */
			w.time_ns = ltime[r][m]
			    + (tie && i == 0
			            ? 0
			            : 1000000 * (int64_t) (1 + bits % 3)
			                + (int64_t) (bits % 7 == 0));
			ltime[r][m] = w.time_ns;
			if (m % 2)
				w.value = (double) w.step * 0.25;
			else
				memcpy(&w.value, &bits, sizeof(w.value));
			wire_put_sample(msg, &off, &w);
			jcollect(&lsent[r][m], w.step, w.time_ns, w.value);
		}
	}
	return wire_batch_decode(msg, off, b, why, sizeof(why));
}

typedef struct llist {
	series_rec rec[L_RANKS][L_METRICS];
	int        seen[L_RANKS][L_METRICS];
	int        n;
} llist;

static int
llist_each(void *ctx, const scan_series *s)
{
	llist *l = ctx;
	int m = s->mlen == 2 && s->metric[0] == 'l' ? s->metric[1] - '0' : -1;

	l->n++;
	if (m >= 0 && m < L_METRICS && s->rank >= 0 && s->rank < L_RANKS) {
		l->rec[s->rank][m] = s->rec;
		l->seen[s->rank][m]++;
	}
	return 0;
}

/* The series of st listed against the samples sent: the mismatches. */
static int
listing_vs_sent(store *st, int *with_journal)
{
	store_txn *txn;
	scan_usage u;
	llist      l;
	int        bad = 0;

	memset(&l, 0, sizeof(l));
	if (store_read_begin(st, &txn) != 0)
		return 1000;
	if (scan_series_of(st, txn, "ls", llist_each, &l) != 0)
		bad++;
	if (scan_usage_get(st, txn, &u) == 0 && u.journal_records > 0)
		(*with_journal)++;
	store_read_end(txn);
	for (int r = 0; r < L_RANKS; r++) {
		for (int m = 0; m < L_METRICS; m++) {
			const jgot       *g  = &lsent[r][m];
			const series_rec *x  = &l.rec[r][m];
			uint64_t          fs = UINT64_MAX, ls = 0;
			int64_t           ft = INT64_MAX, lt = INT64_MIN;
			size_t            at = 0;

			if (g->n == 0) {
				bad += l.seen[r][m] != 0;
				continue;
			}
			for (size_t i = 0; i < g->n; i++) {
				fs = g->s[i].step < fs ? g->s[i].step : fs;
				ls = g->s[i].step > ls ? g->s[i].step : ls;
				ft = g->s[i].time_ns < ft ? g->s[i].time_ns
				                          : ft;
				lt = g->s[i].time_ns > lt ? g->s[i].time_ns
				                          : lt;
			}
			for (size_t i = 0; i < g->n; i++)
				if (g->s[i].time_ns == lt)
					at = i; /* the last to arrive */
			if (l.seen[r][m] != 1 || x->samples != g->n
			    || x->first_step != fs || x->last_step != ls
			    || x->first_time != ft || x->last_time != lt
			    || memcmp(&x->last_value, &g->s[at].value, 8) != 0)
				bad++;
		}
	}
	return bad;
}

static void
listing_vs_samples(uint64_t jsamples, uint64_t *counts)
{
	ingest_stats is;
	char        dir_a[300], err[1400];
	store      *a, *ra;
	ingest     *ia;
	ingest_opts o;
	uint64_t    x = 0x2545f4914f6cdd1dull, seq[L_RANKS] = { 0 }, inc0 = 1;
	int         bad = 0, checks = 0, with_journal = 0, merged = 0;

	fresh_dir();
	memset(lsent, 0, sizeof(lsent));
	for (int r = 0; r < L_RANKS; r++) {
		for (int m = 0; m < L_METRICS; m++) {
			ltime[r][m] = 1700000000000000000ll;
			lstep[r][m] = 100;
		}
	}
	snprintf(dir_a, sizeof(dir_a), "%s/a", dir);
	REQUIRE(store_open(dir_a, 0, &a, err, sizeof(err)) == 0);
	/* A journal of up to 4 records before merges (each record of 5
	 * or 6 series, past 4,096 / 1,024: wide), no fold but ours. */
	ingest_opts_init(&o);
	o.journal_samples = jsamples;
	o.journal_records = 4;
	REQUIRE(ingest_open(a, &o, &ia) == 0);
	REQUIRE(store_open(dir_a, STORE_RDONLY, &ra, err, sizeof(err)) == 0);
	for (int round = 0; round < 60; round++) {
		int        r   = round % L_RANKS;
		int        tie = 0;
		uint32_t   k[L_METRICS];
		wire_batch wb;
		char       why[200];
		int        is_new;

		for (int m = 0; m < L_METRICS; m++)
			k[m] = 1 + (uint32_t) (rnd(&x) % 12);
		if (round < 12)
			k[5] = 0; /* l5 starts in the journal */
		else if (r == 0)
			k[1] = 0; /* rank 0's l1: its latest stays folded */
		if (round == 30) {
			/* Rank 0 restarts: steps from 40, below every
			 * folded one; its one sample of each metric at the
			 * latest time before it (l1's is folded), so it
			 * is the latest by arriving last. */
			inc0++;
			seq[0] = 0;
			for (int m = 0; m < L_METRICS; m++) {
				lstep[0][m] = 40;
				k[m]        = 1;
			}
			tie = 1;
		}
		seq[r]++;
		REQUIRE(lbatch(&x, r == 0 ? inc0 : 100, r, seq[r], k, tie, &wb)
		    == 0);
		REQUIRE(ingest_begin(ia) == 0);
		REQUIRE(ingest_batch(ia, &wb, 1, &is_new, why, sizeof(why))
		    == WIRE_ACK_STORED);
		REQUIRE(ingest_commit(ia) == 0);
		if (round == 11)
			REQUIRE(ingest_fold(ia, 1) == 0);
		bad += listing_vs_sent(ra, &with_journal);
		merged += merged_records(ra) > 0;
		checks++;
	}
	ingest_get_stats(ia, &is);
	*counts = is.counts;
	REQUIRE(ingest_fold(ia, 1) == 0);
	bad += listing_vs_sent(ra, &with_journal);
	CHECK_EQ_INT(bad, 0);
	/* The checks saw the journal, and merged records in it. */
	CHECK(with_journal > checks / 2);
	CHECK(merged > 10);
	for (int r = 0; r < L_RANKS; r++) {
		for (int m = 0; m < L_METRICS; m++) {
			free(lsent[r][m].s);
			memset(&lsent[r][m], 0, sizeof(lsent[r][m]));
		}
	}
	ingest_close(ia);
	store_close(ra);
	store_close(a);
}

TEST(listing_statistics_equal_their_samples)
{
	uint64_t counts;

	listing_vs_samples(4096, &counts);
}

/* The same with records counted in the statistics before they are
 * folded (journal_samples 64: a wide journal counted at 256 samples and
 * folded at 1,024): listings read only the records after the last
 * counted one, and a merge never takes a counted record. */
TEST(counted_listing_statistics_equal_their_samples)
{
	uint64_t counts;

	listing_vs_samples(64, &counts);
	CHECK(counts > 3);
}

/* Read every series of st with scan_samples_arrived past its first
 * skip samples, after loading the journal of a random part of them (some
 * twice, some not at all), and with the journal looked up: the same
 * samples, bit for bit, in the same order; as many as scan_samples
 * reads, less the skip. Returns the mismatches; *n counts the samples
 * read with the journal loaded. */
static int
journal_in_vs_scan(store *st, uint64_t *x, uint64_t skip, uint64_t *n)
{
	store_txn    *txn;
	scan_journal *j = NULL;
	jsids         js;
	uint32_t      want[2 * J_RANKS * J_METRICS];
	size_t        nw  = 0;
	int           bad = 0;

	memset(&js, 0, sizeof(js));
	*n = 0;
	if (store_read_begin(st, &txn) != 0)
		return 1000;
	scan_series_of(st, txn, "jr", jlist, &js);
	for (int i = 0; i < js.n; i++) {
		uint64_t c = rnd(x) % 8;

		if (c < 6)
			want[nw++] = js.sid[i];
		if (c == 0)
			want[nw++] = js.sid[i];
	}
	/* Loaded twice: the second load replaces the first. */
	if (scan_journal_new(&j) != 0
	    || scan_journal_load(st, txn, j, js.sid, (size_t) js.n) != 0
	    || scan_journal_load(st, txn, j, want, nw) != 0) {
		scan_journal_free(j);
		store_read_end(txn);
		return 1000;
	}
	for (int i = 0; i < js.n; i++) {
		jgot ga = { 0 }, gb = { 0 }, gc = { 0 };

		if (scan_samples_arrived(
		        st, txn, j, js.sid[i], skip, jcollect, &ga)
		        != 0
		    || scan_samples_arrived(
		           st, txn, NULL, js.sid[i], skip, jcollect, &gb)
		        != 0
		    || scan_samples(
		           st, txn, js.sid[i], 0, UINT64_MAX, jcollect, &gc)
		        != 0)
			bad++;
		if (ga.n != gb.n || ga.n != (gc.n > skip ? gc.n - skip : 0))
			bad++;
		for (size_t k = 0; k < ga.n && k < gb.n; k++)
			if (ga.s[k].step != gb.s[k].step
			    || ga.s[k].time_ns != gb.s[k].time_ns
			    || memcmp(&ga.s[k].value, &gb.s[k].value, 8) != 0)
				bad++;
		*n += ga.n;
		free(ga.s);
		free(gb.s);
		free(gc.s);
	}
	scan_journal_free(j);
	store_read_end(txn);
	return bad;
}

/*
 * scan_samples_arrived with the journal read once for many series (as
 * the remote-write forwarder reads near the head) reads every series as
 * it does with the journal looked up, at random moments between commits
 * and fold steps of a run with restarts (steps going back) and across a
 * reopen of the writer; the series it was not loaded for too.
 */
TEST(journal_read_once_equals_scan_samples)
{
	char        err[1400];
	store      *a, *ra;
	ingest     *ia;
	ingest_opts oa;
	uint64_t    x = 0x2545f4914f6cdd1dull, seq[J_RANKS] = { 0 };
	uint64_t    next[J_RANKS][J_METRICS] = { { 0 } }, sent = 0, n;
	int         bad = 0, checks = 0, with_journal = 0;

	fresh_dir();
	REQUIRE(store_open(dir, 0, &a, err, sizeof(err)) == 0);
	ingest_opts_init(&oa);
	oa.journal_samples = 700;
	REQUIRE(ingest_open(a, &oa, &ia) == 0);
	REQUIRE(store_open(dir, STORE_RDONLY, &ra, err, sizeof(err)) == 0);
	for (int round = 0; round < 300; round++) {
		int        r = (int) (rnd(&x) % J_RANKS);
		uint64_t   s0[J_METRICS];
		uint32_t   k[J_METRICS];
		wire_batch wb;
		char       why[200];
		int        is_new;
		scan_usage u;
		store_txn *txn;

		sent += journal_counts(&x, next[r], s0, k);
		seq[r]++;
		REQUIRE(journal_batch(&x, r, seq[r], s0, k, &wb) == 0);
		REQUIRE(ingest_begin(ia) == 0);
		REQUIRE(ingest_batch(ia, &wb, 1, &is_new, why, sizeof(why))
		    == WIRE_ACK_STORED);
		REQUIRE(ingest_commit(ia) == 0);
		if (round == 150) { /* the collector restarts */
			ingest_close(ia);
			REQUIRE(ingest_open(a, &oa, &ia) == 0);
		}
		if (rnd(&x) % 3 != 0)
			continue;
		checks++;
		bad += journal_in_vs_scan(ra, &x, 0, &n);
		if (n != sent)
			bad++;
		bad += journal_in_vs_scan(ra, &x, rnd(&x) % 2000, &n);
		REQUIRE(store_read_begin(ra, &txn) == 0);
		REQUIRE(scan_usage_get(ra, txn, &u) == 0);
		store_read_end(txn);
		with_journal += u.journal_records > 0;
	}
	for (int i = 0; i < J_RANKS * J_METRICS; i++) {
		free(jsent[i].s);
		memset(&jsent[i], 0, sizeof(jsent[i]));
	}
	CHECK_EQ_INT(bad, 0);
	/* The journal held samples at most checks. */
	CHECK(checks > 50 && with_journal > checks / 2);
	ingest_close(ia);
	store_close(ra);
	store_close(a);
}

/* Little-endian puts and gets for the older formats' records. */
static void
le_put(uint8_t *p, uint64_t v, int width)
{
	for (int i = 0; i < width; i++)
		p[i] = (uint8_t) (v >> (8 * i));
}

static uint64_t
le_get(const uint8_t *p, int width)
{
	uint64_t v = 0;

	for (int i = 0; i < width; i++)
		v |= (uint64_t) p[i] << (8 * i);
	return v;
}

/* Rewrite every statistics record of the stats database in format 3's
 * fixed layout (56 bytes). Returns 0 or an LMDB error. */
static int
stats_fixed(MDB_txn *txn, MDB_dbi stats)
{
	MDB_cursor *cur;
	MDB_val     k, v;
	uint8_t     b[56];
	int         rc;

	if ((rc = mdb_cursor_open(txn, stats, &cur)) != 0)
		return rc;
	while ((rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) == 0) {
		series_rec r;
		uint64_t   bits;

		if (store_stats_decode(v.mv_data, v.mv_size, &r) != 0) {
			rc = -5;
			break;
		}
		memcpy(&bits, &r.last_value, 8);
		le_put(b, r.samples, 8);
		le_put(b + 8, r.first_step, 8);
		le_put(b + 16, r.last_step, 8);
		le_put(b + 24, (uint64_t) r.first_time, 8);
		le_put(b + 32, (uint64_t) r.last_time, 8);
		le_put(b + 40, bits, 8);
		le_put(b + 48, r.jseen, 8);
		v.mv_data = b;
		v.mv_size = sizeof(b);
		if ((rc = mdb_cursor_put(cur, &k, &v, MDB_CURRENT)) != 0)
			break;
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Move format 7's series index by metric (metrics: run NUL metric NUL
 * -> rank+1 BE, sid LE) back into series (one entry a series, as
 * formats 3 to 6 kept it), if the store has one. Returns 0 or an LMDB
 * error. */
static int
series_by_key(MDB_txn *txn)
{
	MDB_dbi     series, metrics;
	MDB_cursor *cur;
	MDB_val     k, v, sk, sv;
	uint8_t     key[600];
	int         rc;

	rc = mdb_dbi_open(
	    txn, "metrics", MDB_DUPSORT | MDB_DUPFIXED, &metrics);
	if (rc == MDB_NOTFOUND)
		return 0;
	if (rc != 0 || (rc = mdb_dbi_open(txn, "series", 0, &series)) != 0
	    || (rc = mdb_cursor_open(txn, metrics, &cur)) != 0)
		return rc;
	while ((rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) == 0) {
		if (v.mv_size != 8 || k.mv_size + 4 > sizeof(key)) {
			rc = -6;
			break;
		}
		memcpy(key, k.mv_data, k.mv_size);
		memcpy(key + k.mv_size, v.mv_data, 4);
		sk.mv_data = key;
		sk.mv_size = k.mv_size + 4;
		sv.mv_data = (uint8_t *) v.mv_data + 4;
		sv.mv_size = 4;
		if ((rc = mdb_put(txn, series, &sk, &sv, 0)) != 0)
			break;
	}
	mdb_cursor_close(cur);
	if (rc != MDB_NOTFOUND)
		return rc;
	return mdb_drop(txn, metrics, 1);
}

/* Give each series of the store without statistics (format 7 writes
 * none until samples are counted in it) the empty ones formats 3 to 6
 * wrote when the series was created. Returns 0 or an LMDB error. */
static int
stats_dense(MDB_txn *txn)
{
	MDB_dbi     series, stats;
	MDB_cursor *cur;
	MDB_val     k, v, sk, sv;
	uint8_t     key[4], b[56];
	int         rc;

	memset(b, 0, sizeof(b));
	le_put(b + 8, UINT64_MAX, 8);            /* first step */
	le_put(b + 24, (uint64_t) INT64_MAX, 8); /* first time */
	le_put(b + 32, (uint64_t) INT64_MIN, 8); /* last time */
	if ((rc = mdb_dbi_open(txn, "series", 0, &series)) != 0
	    || (rc = mdb_dbi_open(txn, "stats", 0, &stats)) != 0
	    || (rc = mdb_cursor_open(txn, series, &cur)) != 0)
		return rc;
	while ((rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) == 0) {
		uint32_t sid;

		if (v.mv_size != 4)
			continue; /* format 1 or 2: in the record */
		sid    = (uint32_t) le_get(v.mv_data, 4);
		key[0] = (uint8_t) (sid >> 24), key[1] = (uint8_t) (sid >> 16);
		key[2] = (uint8_t) (sid >> 8), key[3] = (uint8_t) sid;
		sk.mv_data = key;
		sk.mv_size = 4;
		sv.mv_data = b;
		sv.mv_size = sizeof(b);
		rc         = mdb_put(txn, stats, &sk, &sv, MDB_NOOVERWRITE);
		if (rc != 0 && rc != MDB_KEYEXIST)
			break;
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

/*
 * Rewrite the store in dir as vitals wrote it in an older format, or
 * stamp another format number (format > 4; before 7, with the series
 * index by key and the empty statistics of the series that have none). Format
 * 3: the statistics in their fixed layout (56 bytes; format 4 writes them
 * compactly). Format 2 (the journal, and each series' statistics in its
 * 80-byte record: sid, blocks, samples, first/last step, first/last time, last
 * value, tail first step, tail number, 4 bytes of padding, jseen) or format 1
 * (no journal and no sids database; 72-byte records, no jseen): the statistics
 * go back from the stats database into the series records, which format 3
 * keeps as the bare sid, and the stats database goes. Format 1 wants the
 * journal folded first.
 */
static int
set_format(const char *d, uint32_t format)
{
	MDB_env    *env;
	MDB_txn    *txn;
	MDB_dbi     meta, jdb, series, stats;
	MDB_cursor *cur;
	MDB_val     k = { 6, (void *) (uintptr_t) "format" }, v, sk, sv;
	uint8_t     f[4], rec[80], key[4];
	int         rc;

	le_put(f, format, 4);
	if (mdb_env_create(&env) != 0)
		return -1;
	mdb_env_set_maxdbs(env, 10);
	if ((rc = mdb_env_open(env, d, 0, 0600)) != 0 ||
	    (rc = mdb_txn_begin(env, NULL, 0, &txn)) != 0) {
		mdb_env_close(env);
		return rc;
	}
	v.mv_size = 4;
	v.mv_data = f;
	if ((rc = mdb_dbi_open(txn, "meta", 0, &meta)) != 0 ||
	    (rc = mdb_put(txn, meta, &k, &v, 0)) != 0)
		goto fail;
	if (format < 7
	    && ((rc = series_by_key(txn)) != 0
	        || (rc = stats_dense(txn)) != 0))
		goto fail;
	if (format > 3)
		goto done;
	if ((rc = mdb_dbi_open(txn, "stats", 0, &stats)) != 0
	    || (rc = stats_fixed(txn, stats)) != 0)
		goto fail;
	if (format > 2)
		goto done;
	if ((rc = mdb_dbi_open(txn, "series", 0, &series)) != 0
	    || (rc = mdb_cursor_open(txn, series, &cur)) != 0)
		goto fail;
	while ((rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) == 0) {
		const uint8_t *st;
		uint32_t       sid;

		if (v.mv_size != 4) {
			rc = -3;
			break;
		}
		sid = (uint32_t) le_get(v.mv_data, 4);
		key[0] = (uint8_t) (sid >> 24), key[1] = (uint8_t) (sid >> 16);
		key[2] = (uint8_t) (sid >> 8), key[3] = (uint8_t) sid;
		sk.mv_data = key;
		sk.mv_size = 4;
		if ((rc = mdb_get(txn, stats, &sk, &sv)) != 0 ||
		    sv.mv_size != 56)
			break;
		st = sv.mv_data;
		memset(rec, 0, sizeof(rec));
		le_put(rec, sid, 4);
		memcpy(rec + 8, st, 48);       /* samples .. last value */
		memcpy(rec + 72, st + 48, 8);  /* jseen */
		v.mv_data = rec;
		v.mv_size = format == 1 ? 72 : 80;
		if ((rc = mdb_cursor_put(cur, &k, &v, MDB_CURRENT)) != 0)
			break;
	}
	mdb_cursor_close(cur);
	if (rc != MDB_NOTFOUND && rc != 0)
		goto fail;
	if ((rc = mdb_drop(txn, stats, 1)) != 0)
		goto fail;
	if (format == 1 &&
	    ((rc = mdb_dbi_open(txn, "journal", 0, &jdb)) != 0 ||
		(rc = mdb_drop(txn, jdb, 1)) != 0 ||
		(rc = mdb_dbi_open(txn, "sids", 0, &jdb)) != 0 ||
		(rc = mdb_drop(txn, jdb, 1)) != 0))
		goto fail;
done:
	rc = mdb_txn_commit(txn);
	mdb_env_close(env);
	return rc;
fail:
	mdb_txn_abort(txn);
	mdb_env_close(env);
	return rc;
}

/* Extreme samples (steps near 2^64, times at both ends of int64, NaN
 * payloads, -0.0, infinities) read back bit for bit from the journal and
 * after the fold. */
TEST(journal_keeps_extreme_samples)
{
	static const uint64_t nan_bits = 0x7ff8dead0000beefull;
	store                *st;
	ingest               *in;
	ingest_opts           o;
	wire_ident            id = { 0 };
	wire_batch            b;
	store_sample          want[64];
	size_t                off;
	char                  why[200];
	int                   is_new;
	jsids                 js;

	fresh_dir();
	ingest_opts_init(&o);
	open_with(&st, &in, &o);
	id.incarnation = 1;
	id.world_size  = 1;
	id.run         = "jr";
	id.run_len     = 2;
	id.host        = "h";
	id.host_len    = 1;
	off            = wire_put_batch_head(msg, &id, 1, 1, 0);
	wire_put_names_count(msg, &off, 1);
	wire_put_name(msg, &off, "x", 1);
	wire_put_samples_count(msg, &off, 64);
	for (int i = 0; i < 64; i++) {
		wire_sample w = { 0, 0, 0, 0 };
		uint64_t    bits;

		w.step = i < 32 ? UINT64_MAX - 64 + (uint64_t) i :
				  (uint64_t) (i % 5);
		w.time_ns = i % 3 == 0 ? INT64_MIN + i :
		    i % 3 == 1         ? INT64_MAX - i :
					 (int64_t) i * -7919;
		bits = i % 4 == 0 ? nan_bits + (uint64_t) i :
		    i % 4 == 1    ? 0x8000000000000000ull :
		    i % 4 == 2    ? 0x7ff0000000000000ull :
				    (uint64_t) i * 0x9e3779b97f4a7c15ull;
		memcpy(&w.value, &bits, 8);
		wire_put_sample(msg, &off, &w);
		want[i].step    = w.step;
		want[i].time_ns = w.time_ns;
		want[i].value   = w.value;
	}
	REQUIRE(wire_batch_decode(msg, off, &b, why, sizeof(why)) == 0);
	REQUIRE(ingest_begin(in) == 0);
	REQUIRE(ingest_batch(in, &b, 1, &is_new, why, sizeof(why)) ==
	    WIRE_ACK_STORED);
	REQUIRE(ingest_commit(in) == 0);
	for (int pass = 0; pass < 2; pass++) {
		store_txn *txn;
		jgot       g = { 0 };
		int        found = 0;

		if (pass == 1)
			REQUIRE(ingest_fold(in, 1) == 0);
		memset(&js, 0, sizeof(js));
		REQUIRE(store_read_begin(st, &txn) == 0);
		scan_series_of(st, txn, "jr", jlist, &js);
		REQUIRE(js.n == 1);
		CHECK(scan_samples(st, txn, js.sid[0], 0, UINT64_MAX, jcollect,
			  &g) == 0);
		CHECK_EQ_INT(g.n, 64);
		/* Each sample is there once, bit for bit (the read is in
		 * step order, so look each one up). */
		for (int i = 0; i < 64; i++)
			for (size_t j = 0; j < g.n; j++)
				found += g.s[j].step == want[i].step &&
				    g.s[j].time_ns == want[i].time_ns &&
				    memcmp(&g.s[j].value, &want[i].value, 8) ==
					0;
		CHECK_EQ_INT(found, 64);
		CHECK_EQ_INT(js.rec[0].samples, 64);
		CHECK(js.rec[0].first_step == 0 &&
		    js.rec[0].last_step == UINT64_MAX - 33);
		free(g.s);
		store_read_end(txn);
	}
	ingest_close(in);
	store_close(st);
}

/* Commit one batch of run's emitter (incarnation 1, rank 0) with the
 * n samples w of its one series "x", as seq. */
static void
commit_x(ingest *in, const char *run, uint64_t seq, const wire_sample *w,
    uint32_t n)
{
	wire_ident id = { 0 };
	wire_batch b;
	size_t     off;
	char       why[200];
	int        is_new;

	id.incarnation = 1;
	id.world_size  = 1;
	id.run         = run;
	id.run_len     = strlen(run);
	id.host        = "h";
	id.host_len    = 1;
	off            = wire_put_batch_head(msg, &id, seq, seq, 0);
	wire_put_names_count(msg, &off, 1);
	wire_put_name(msg, &off, "x", 1);
	wire_put_samples_count(msg, &off, n);
	for (uint32_t i = 0; i < n; i++)
		wire_put_sample(msg, &off, &w[i]);
	REQUIRE(wire_batch_decode(msg, off, &b, why, sizeof(why)) == 0);
	REQUIRE(ingest_begin(in) == 0);
	REQUIRE(ingest_batch(in, &b, 1, &is_new, why, sizeof(why))
	    == WIRE_ACK_STORED);
	REQUIRE(ingest_commit(in) == 0);
}

/* Extreme samples (steps near 2^64, times jumping between both ends of
 * int64, NaN payloads, -0.0, infinities, random bit patterns) read back
 * bit for bit from a merged record in the block code (format 6) and
 * after the fold: three commits of 40 samples, merged past 2 records
 * (a group of 80 samples: the block code takes them). */
TEST(merged_record_keeps_extreme_samples)
{
	static const uint64_t nan_bits = 0x7ff8dead0000beefull;
	store                *st;
	ingest               *in;
	ingest_opts           o;
	store_sample          want[3 * 40];
	uint64_t              bytes, samples;
	jsids                 js;

	fresh_dir();
	ingest_opts_init(&o);
	o.journal_samples = 40 * 1024; /* records of 40 are merged */
	o.journal_records = 2;
	open_with(&st, &in, &o);
	for (int c = 0; c < 3; c++) {
		wire_sample ws[40];

		for (int j = 0; j < 40; j++) {
			int         i = c * 40 + j;
			wire_sample w = { 0, 0, 0, 0 };
			uint64_t    bits;

			w.step    = UINT64_MAX - 3 * 40 + (uint64_t) i;
			w.time_ns = i % 3 == 0 ? INT64_MIN + i
			    : i % 3 == 1       ? INT64_MAX - i
			                       : (int64_t) i * -7919;
			bits      = i % 5 == 0 ? nan_bits + (uint64_t) i
			         : i % 5 == 1  ? 0x8000000000000000ull
			         : i % 5 == 2  ? 0x7ff0000000000000ull
			         : i % 5 == 3
			         ? 0xfff0000000000000ull
			         : (uint64_t) i * 0x9e3779b97f4a7c15ull;
			memcpy(&w.value, &bits, 8);
			ws[j]           = w;
			want[i].step    = w.step;
			want[i].time_ns = w.time_ns;
			want[i].value   = w.value;
		}
		commit_x(in, "jr", (uint64_t) c + 1, ws, 40);
	}
	CHECK(merged_bytes(dir, 0xfffffffcu, &bytes, &samples) == 1
	    && samples >= 2 * 40);
	for (int pass = 0; pass < 2; pass++) {
		store_txn *txn;
		jgot       g  = { 0 };
		int        eq = 1;

		if (pass == 1)
			REQUIRE(ingest_fold(in, INGEST_FOLD_ALL) == 0);
		memset(&js, 0, sizeof(js));
		REQUIRE(store_read_begin(st, &txn) == 0);
		scan_series_of(st, txn, "jr", jlist, &js);
		REQUIRE(js.n == 1);
		CHECK(scan_samples(
		          st, txn, js.sid[0], 0, UINT64_MAX, jcollect, &g)
		    == 0);
		CHECK_EQ_INT(g.n, 3 * 40);
		/* In step order, which is the order sent. */
		for (size_t i = 0; i < g.n && i < 3 * 40; i++)
			eq &= g.s[i].step == want[i].step
			    && g.s[i].time_ns == want[i].time_ns
			    && memcmp(&g.s[i].value, &want[i].value, 8) == 0;
		CHECK(eq);
		CHECK_EQ_INT(js.rec[0].samples, 3 * 40);
		CHECK(js.rec[0].first_step == want[0].step
		    && js.rec[0].last_step == UINT64_MAX - 1);
		free(g.s);
		store_read_end(txn);
	}
	ingest_close(in);
	store_close(st);
}

/* A merge reads its time unit from its records' headers, and must code
 * in the one its samples take where the two differ: times 2^63 apart,
 * whose deltas wrap around. Record 1 at time 0 and step 5, record 2 at
 * -9 * 10^18 and 2 * 10^17 (steps 1 and 2), record 3 at 0 (step 3):
 * each record's unit and base time say 10^6, but coded one after the
 * other from time 0 the third sample's delta of deltas wraps to a
 * number 10^3 does not divide; the step going back keeps the group in
 * the sample code, where every delta of deltas is in the unit. Each
 * sample reads back from the merged record and after the fold. */
TEST(merged_record_unit_when_times_wrap)
{
	static const uint64_t steps[4] = { 5, 1, 2, 3 };
	static const int64_t  times[4]
	    = { 0, -9000000000000000000, 200000000000000000, 0 };
	static const int first[4] = { 0, 1, 3, 4 }; /* commits' samples */
	store           *st;
	ingest          *in;
	ingest_opts      o;
	uint64_t         bytes, samples;
	jsids            js;

	fresh_dir();
	ingest_opts_init(&o);
	o.journal_samples = 1024; /* records of a sample are merged */
	o.journal_records = 2;
	open_with(&st, &in, &o);
	for (int c = 0; c < 3; c++) {
		wire_sample ws[4];

		for (int i = first[c]; i < first[c + 1]; i++) {
			wire_sample w = { 0, 0, 0, 0 };

			w.step           = steps[i];
			w.time_ns        = times[i];
			w.value          = (double) i + 0.5;
			ws[i - first[c]] = w;
		}
		commit_x(in, "jw", (uint64_t) c + 1, ws,
		    (uint32_t) (first[c + 1] - first[c]));
	}
	CHECK(merged_bytes(dir, 0xfffffffcu, &bytes, &samples) == 1
	    && samples == 4);
	for (int pass = 0; pass < 2; pass++) {
		store_txn *txn;
		jgot       g     = { 0 };
		int        found = 0;

		if (pass == 1)
			REQUIRE(ingest_fold(in, INGEST_FOLD_ALL) == 0);
		memset(&js, 0, sizeof(js));
		REQUIRE(store_read_begin(st, &txn) == 0);
		scan_series_of(st, txn, "jw", jlist, &js);
		REQUIRE(js.n == 1);
		CHECK(scan_samples(
		          st, txn, js.sid[0], 0, UINT64_MAX, jcollect, &g)
		    == 0);
		CHECK_EQ_INT(g.n, 4);
		for (int i = 0; i < 4; i++)
			for (size_t j = 0; j < g.n; j++)
				found += g.s[j].step == steps[i]
				    && g.s[j].time_ns == times[i]
				    && g.s[j].value == (double) i + 0.5;
		CHECK_EQ_INT(found, 4);
		free(g.s);
		store_read_end(txn);
	}
	ingest_close(in);
	store_close(st);
}

/* Small commits (a narrow run committing every 20 ms) do not pile up in
 * the journal: past 64 records they are merged (or folded), so a reader
 * looks a series up in at most that many. */
TEST(journal_records_bounded)
{
	store     *st;
	ingest    *in;
	store_txn *txn;
	scan_usage u;
	got        g;
	spec       s = { "jb", 3, 1, 1, 0, 0, "loss", 0, 1, val_lin };

	fresh_dir();
	open_both(&st, &in);
	for (uint64_t i = 0; i < 300; i++) {
		s.seq = s.floor = i + 1;
		s.step0 = i;
		REQUIRE(apply(in, &s) == WIRE_ACK_STORED);
	}
	REQUIRE(store_read_begin(st, &txn) == 0);
	REQUIRE(scan_usage_get(st, txn, &u) == 0);
	store_read_end(txn);
	CHECK(u.journal_records <= 64);
	ingest_close(in);
	store_close(st);
	CHECK(read_series("jb", "loss", 0, 0, UINT64_MAX, &g) == 0);
	CHECK_EQ_INT(g.n, 300);
}

/* The journal's records and the blocks of the store in dir, as a
 * reader sees them now. */
static void
usage_now(store *st, scan_usage *u)
{
	store_txn *txn;

	memset(u, 0, sizeof(*u));
	if (store_read_begin(st, &txn) != 0)
		return;
	scan_usage_get(st, txn, u);
	store_read_end(txn);
}

/* Whether the first samples of g (up to 4,096) are as val_lin made
 * them: the i-th at step i with value val_lin(i), and, when times is
 * set, stamped 100 ms a step from spec's first time. */
static int
read_as_sent(const got *g, int times)
{
	for (uint64_t i = 0; i < g->n && i < 4096; i++)
		if (g->steps[i] != i || g->values[i] != val_lin(i)
		    || (times
		        && g->times[i]
		            != 1700000000000000000ll
		                + (int64_t) i * 100000000))
			return 0;
	return 1;
}

/* One batch of spec s, sequence number ++*seq, into the open
 * transaction: 0, or -1 (transaction aborted) if it is not stored. */
static int
put_batch(ingest *in, spec *s, uint64_t *seq)
{
	wire_batch b;
	char       why[200];
	int        is_new;

	s->seq = s->floor = ++*seq;
	make(s, &b);
	if (ingest_batch(in, &b, 1, &is_new, why, sizeof(why))
	    != WIRE_ACK_STORED) {
		ingest_abort(in);
		return -1;
	}
	return 0;
}

/* One commit of 64 series x n samples each from step0 (a wide record,
 * journalled as the groups are small). */
static int
wide_commit_n(ingest *in, uint64_t *seq, uint64_t step0, uint32_t n)
{
	char name[16];
	spec s = { "jw", 7, 0, 0, 0, 0, name, step0, n, val_lin };

	if (ingest_begin(in) != 0)
		return -100;
	for (int m = 0; m < 64; m++) {
		snprintf(name, sizeof(name), "m%02d", m);
		if (put_batch(in, &s, seq) != 0)
			return -1;
	}
	return ingest_commit(in) != 0 ? -101 : 0;
}

/* 64 series x 64 samples (4,096). */
static int
wide_commit(ingest *in, uint64_t *seq, uint64_t step0)
{
	return wide_commit_n(in, seq, step0, 64);
}

/* The statistics of every series of a run, in listing order. */
typedef struct run_list {
	size_t     n;
	series_rec rec[80];
} run_list;

static int
list_all(void *ctx, const scan_series *s)
{
	run_list *l = ctx;

	if (l->n < 80)
		l->rec[l->n] = s->rec;
	l->n++;
	return 0;
}

static void
list_now(store *st, const char *run, run_list *l)
{
	store_txn *txn;

	memset(l, 0, sizeof(*l));
	if (store_read_begin(st, &txn) != 0)
		return;
	scan_series_of(st, txn, run, list_all, l);
	store_read_end(txn);
}

static int
listed_differ(const run_list *a, const run_list *b)
{
	int bad = a->n != b->n;

	for (size_t i = 0; i < a->n && i < b->n && i < 80; i++) {
		const series_rec *x = &a->rec[i], *y = &b->rec[i];

		bad += x->sid != y->sid || x->samples != y->samples
		    || x->first_step != y->first_step
		    || x->last_step != y->last_step
		    || x->first_time != y->first_time
		    || x->last_time != y->last_time
		    || memcmp(&x->last_value, &y->last_value, 8) != 0;
	}
	return bad;
}

/* Past the records bound, the records commits wrote are merged into
 * one rather than folded (a fold then takes many samples of each series
 * at once): a reader still looks a series up in at most that many
 * records, and reads and lists the same as after a fold. */
TEST(records_past_bound_are_merged)
{
	store      *st;
	ingest     *in;
	ingest_opts o;
	scan_usage  u;
	got         g;
	uint64_t    seq = 0, step = 0;
	int         over = 0;
	run_list    before, after;
	spec        s = { "jw", 8, 0, 0, 0, 1, "small", 0, 1, val_lin };

	fresh_dir();
	ingest_opts_init(&o);
	o.journal_records = 4;
	open_with(&st, &in, &o);
	for (int c = 0; c < 12; c++, step += 64) {
		REQUIRE(wide_commit(in, &seq, step) == 0);
		usage_now(st, &u);
		over += u.journal_records > 4;
	}
	CHECK_EQ_INT(u.blocks, 0);   /* merged, not folded */
	list_now(st, "jw", &before); /* 64 series, 4 chunks a record */
	CHECK_EQ_INT(before.n, 64);
	CHECK_EQ_INT(before.rec[10].samples, 12 * 64);
	/* Small records too. */
	for (uint64_t i = 0; i < 40; i++) {
		s.seq = s.floor = i + 1;
		s.step0         = i;
		REQUIRE(apply(in, &s) == WIRE_ACK_STORED);
		usage_now(st, &u);
		over += u.journal_records > 4;
	}
	CHECK_EQ_INT(over, 0);
	/* Listed from the merged records (above) as after a fold of
	 * everything. */
	REQUIRE(ingest_fold(in, 1) == 0);
	list_now(st, "jw", &after);
	CHECK_EQ_INT(after.n, 65);
	after.n = 64; /* less "small", after the others */
	CHECK_EQ_INT(listed_differ(&before, &after), 0);
	ingest_close(in);
	store_close(st);
	CHECK(read_series("jw", "m63", 0, 0, UINT64_MAX, &g) == 0);
	CHECK_EQ_INT(g.n, 12 * 64);
	CHECK(read_as_sent(&g, 0));
	CHECK(read_series("jw", "small", 1, 0, UINT64_MAX, &g) == 0);
	CHECK_EQ_INT(g.n, 40);
}

/*
 * A journal of wide records (one step of many series a commit) holds
 * 1,024 samples of each series of its widest record, up to 4 times
 * --journal-samples, before it is counted in the series' statistics,
 * and 4 times that before it is folded (a fold rewrites each series'
 * tail whatever it brings, so it should bring many samples of each);
 * a run of few series is folded at --journal-samples as before.
 * Reads are the same.
 */
TEST(wide_journal_folds_more_samples_a_series)
{
	store      *st;
	ingest     *in;
	ingest_opts o;
	scan_usage  u;
	got         g;
	uint64_t    seq = 0, step = 0, blocks;
	int          early = 0, over = 0;
	ingest_stats is;
	spec        s = { "jn", 9, 0, 0, 0, 1, "few", 0, 200, val_lin };

	fresh_dir();
	ingest_opts_init(&o);
	o.journal_samples = 4096;
	o.journal_records = 16;
	open_with(&st, &in, &o);
	/* 64 series x 64 samples a commit: 64 x 1,024 is past 4 x 4,096,
	 * so the journal holds 16,384 samples (4 commits) unfolded. */
	for (int c = 0; c < 4; c++, step += 64) {
		REQUIRE(wide_commit(in, &seq, step) == 0);
		usage_now(st, &u);
		early += u.blocks > 0;
		over += u.journal_records > 16;
	}
	CHECK_EQ_INT(early, 0);
	CHECK_EQ_INT(u.journal_records, 4);
	REQUIRE(wide_commit(in, &seq, step) == 0); /* past it: counted */
	step += 64;
	usage_now(st, &u);
	ingest_get_stats(in, &is);
	CHECK(u.blocks == 0 && is.counts > 0 && is.folds == 0);
	/* Folded past 4 x 16,384 samples (16 commits). */
	for (int c = 5; c < 16; c++, step += 64) {
		REQUIRE(wide_commit(in, &seq, step) == 0);
		usage_now(st, &u);
		early += u.blocks > 0;
	}
	CHECK_EQ_INT(early, 0);
	REQUIRE(wide_commit(in, &seq, step) == 0);
	usage_now(st, &u);
	CHECK(u.blocks > 0);
	CHECK(u.journal_records <= 1);
	blocks = u.blocks;
	/* One series, 200 samples a commit: folded past 4,096. */
	for (uint64_t i = 0; i < 25; i++) {
		s.seq = s.floor = i + 1;
		s.step0         = i * 200;
		REQUIRE(apply(in, &s) == WIRE_ACK_STORED);
		usage_now(st, &u);
		over += u.journal_records > 16;
	}
	CHECK_EQ_INT(over, 0);
	/* The wide record left keeps the journal wide: counted, not
	 * folded, until 4 x 16,384 or a fold of everything. */
	CHECK(u.blocks == blocks);
	REQUIRE(ingest_fold(in, INGEST_FOLD_ALL) == 0);
	usage_now(st, &u);
	CHECK(u.blocks > blocks && u.journal_records == 0);
	ingest_close(in);
	store_close(st);
	CHECK(read_series("jw", "m17", 0, 0, UINT64_MAX, &g) == 0);
	CHECK_EQ_INT(g.n, 17 * 64);
	CHECK(read_as_sent(&g, 0));
	CHECK(read_series("jn", "few", 1, 0, UINT64_MAX, &g) == 0);
	CHECK_EQ_INT(g.n, 25 * 200);
}

/*
 * When the records past the bound hold more than a merge takes (a wide
 * run: records of 100,000 samples, ten to a merge), the oldest of them
 * are merged, so the newer ones can be merged next: merging the newest
 * left the older ones behind the merged record for good, and the
 * records bound then folded the journal long before its samples bound.
 */
TEST(wide_merges_take_the_oldest_records)
{
	store      *st;
	ingest     *in;
	ingest_opts o;
	scan_usage  u;
	got         g;
	uint64_t    seq = 0, step = 0;
	int         over = 0, first_fold = 0;

	fresh_dir();
	ingest_opts_init(&o);
	o.journal_samples = 4096; /* a merge takes 4,096: four records */
	o.journal_records = 8;
	open_with(&st, &in, &o);
	/* 64 series x 16 samples a commit: counted at 16,384 samples,
	 * folded at 4 times that or past 16 records. A merge comes at 9
	 * fresh records and takes 4 of them: merging the newest would
	 * leave the 5 older ones behind it, never merged, and the records
	 * would pass 16 and be folded. */
	for (int c = 1; c <= 24; c++, step += 16) {
		REQUIRE(wide_commit_n(in, &seq, step, 16) == 0);
		usage_now(st, &u);
		over += u.journal_records > 16; /* twice: wide */
		if (first_fold == 0 && u.blocks > 0)
			first_fold = c;
	}
	CHECK_EQ_INT(over, 0);
	/* 24,576 samples: counted, never folded. */
	CHECK_EQ_INT(first_fold, 0);
	ingest_close(in);
	store_close(st);
	CHECK(read_series("jw", "m40", 0, 0, UINT64_MAX, &g) == 0);
	CHECK_EQ_INT(g.n, 24 * 16);
	CHECK(read_as_sent(&g, 0));
}

/*
 * A merge codes its record's groups with the block code (format 6):
 * the wide records of wide_merges_take_the_oldest_records, merged four
 * to a record (groups of 64 samples), take under 3 bytes a sample (1.7)
 * where format 4's sample code took 5.6, and read back as sent.
 */
TEST(merged_records_take_the_block_code)
{
	store      *st;
	ingest     *in;
	ingest_opts o;
	got         g;
	uint64_t    seq = 0, step = 0, bytes = 0, samples = 0;

	fresh_dir();
	ingest_opts_init(&o);
	o.journal_samples = 4096;
	o.journal_records = 8;
	open_with(&st, &in, &o);
	for (int c = 1; c <= 24; c++, step += 16)
		REQUIRE(wide_commit_n(in, &seq, step, 16) == 0);
	ingest_close(in);
	store_close(st);
	CHECK(merged_bytes(dir, 0xfffffffcu, &bytes, &samples) > 0);
	CHECK(samples >= 4 * 1024);
	printf("  merged records: %.2f bytes a sample\n",
	    samples ? (double) bytes / (double) samples : 0.0);
	CHECK(bytes < 3 * samples);
	CHECK(read_series("jw", "m40", 0, 0, UINT64_MAX, &g) == 0);
	CHECK_EQ_INT(g.n, 24 * 16);
	CHECK(read_as_sent(&g, 1));
}

/*
 * A wide commit's record (one sample of each of 64 series, all at the
 * commit's step) codes no step for its groups (format 6: the record's
 * base step is theirs): 8.6 bytes a sample where format 5 wrote 9.6,
 * and the samples read back as sent.
 */
TEST(wide_commit_records_code_no_first_step)
{
	store   *st;
	ingest  *in;
	got      g;
	uint64_t seq = 0, bytes = 0, samples = 0;

	fresh_dir();
	open_both(&st, &in);
	for (uint64_t step = 0; step < 8; step++)
		REQUIRE(wide_commit_n(in, &seq, step, 1) == 0);
	ingest_close(in);
	store_close(st);
	/* Format 7: its values, float32, take 0.6 bytes a sample less
	 * (8.0); format 8's (float32 values in f32code, 4 bytes for a
	 * group's first where format 7's varint took 5, and the times of
	 * a chunk's first group shared) 6.1. */
	CHECK_EQ_INT(f8_bytes(dir, 5, &bytes, &samples), 8);
	CHECK_EQ_INT(samples, 8 * 64);
	printf("  wide commits' records: %.2f bytes a sample\n",
	    samples ? (double) bytes / (double) samples : 0.0);
	CHECK(bytes < 7 * samples);
	CHECK(read_series("jw", "m40", 0, 0, UINT64_MAX, &g) == 0);
	CHECK_EQ_INT(g.n, 8);
	CHECK(read_as_sent(&g, 1));
}

/*
 * A commit that brings many samples of a series with none in the
 * journal (a narrow run) appends them to its blocks itself: nothing is
 * journalled, so they are coded and written once. One that brings a
 * few goes to the journal, and while the series has samples there its
 * next samples follow them into the journal, whatever their number, so
 * reads stay in arrival order. Listing and samples are right at each
 * moment.
 */
/*
 * Format 7's commit records: where each series' samples in a commit are
 * one step apart (a wide run's several steps a commit) only the first
 * step is coded, and where every value is a float32 (what trainers log)
 * its 32-bit pattern is: commits of 64 series x 5 steps take 5.1 bytes
 * a sample (format 6: 6.5); format 8 (every group's steps and times
 * those of its chunk's first, values in f32code) 3.1. They read back
 * as sent from the records, from a merged record and from blocks.
 */
TEST(commit_records_code_steps_and_float32)
{
	store      *st;
	ingest     *in;
	ingest_opts o;
	got         g;
	uint64_t    seq = 0, bytes = 0, samples = 0;

	fresh_dir();
	ingest_opts_init(&o);
	o.journal_records = 4;
	o.journal_samples = 65536; /* records of 320 merged past 4 */
	open_with(&st, &in, &o);
	for (uint64_t c = 0; c < 4; c++)
		REQUIRE(wide_commit_n(in, &seq, c * 5, 5) == 0);
	CHECK_EQ_INT(f8_bytes(dir, 6, &bytes, &samples), 4);
	CHECK_EQ_INT(samples, 4 * 5 * 64);
	printf("  commits' records of 5 steps a series: %.2f bytes a "
	       "sample\n",
	    samples ? (double) bytes / (double) samples : 0.0);
	CHECK(bytes < 4 * samples);
	CHECK(read_series("jw", "m40", 0, 0, UINT64_MAX, &g) == 0);
	CHECK_EQ_INT(g.n, 20);
	CHECK(read_as_sent(&g, 1));
	for (uint64_t c = 4; c < 8; c++)
		REQUIRE(wide_commit_n(in, &seq, c * 5, 5) == 0);
	CHECK(merged_bytes(dir, 0xfffffffcu, &bytes, &samples) > 0);
	CHECK(read_series("jw", "m40", 0, 0, UINT64_MAX, &g) == 0);
	CHECK_EQ_INT(g.n, 40);
	CHECK(read_as_sent(&g, 1));
	REQUIRE(ingest_fold(in, 1) == 0);
	ingest_close(in);
	store_close(st);
	CHECK(read_series("jw", "m63", 0, 0, UINT64_MAX, &g) == 0);
	CHECK_EQ_INT(g.n, 40);
	CHECK(read_as_sent(&g, 1));
}

/*
 * Format 7's float32 code keeps every float32 (zeros of both signs,
 * infinities, the largest and the least normal) bit for bit; a record
 * with a value it does not take (a NaN, a float32 subnormal, a double
 * that is no float32) codes them all as format 6 did; both read back
 * bit for bit, from the journal and after the fold.
 */
TEST(float32_records_keep_edge_values)
{
	static const uint64_t f32s[]   = { 0, 0x8000000000000000ull,
		  0x7ff0000000000000ull, 0xfff0000000000000ull,
		  0x47efffffe0000000ull, /* FLT_MAX */
		  0xb810000000000000ull, /* -FLT_MIN */
		  0x3ff0000000000000ull, 0xbff8000000000000ull,
		  0x3e45798ee0000000ull };                        /* 1e-8f */
	static const uint64_t others[] = { 0x36a0000000000000ull, /* 2^-149 */
		0x7ff8000000000000ull, 0x3fb999999999999aull };   /* 0.1 */
	store                *st;
	ingest               *in;
	uint64_t              bytes, samples, step = 0;

	fresh_dir();
	open_both(&st, &in);
	for (int rec = 0; rec < 4; rec++) {
		const uint64_t *v = rec % 2 ? others : f32s;
		size_t     n = rec % 2 ? sizeof(others) / 8 : sizeof(f32s) / 8;
		wire_sample     ws[16];

		for (size_t i = 0; i < n; i++, step++) {
			wire_sample w = { 0, step,
				1700000000000000000ll + (int64_t) step * 1000,
				0 };

			memcpy(&w.value, &v[i], 8);
			ws[i] = w;
		}
		commit_x(in, "fe", (uint64_t) rec + 1, ws, (uint32_t) n);
	}
	/* Format 8's tag where every value is a float32 (all C1). */
	CHECK_EQ_INT(f8_bytes(dir, 6, &bytes, &samples), 2);
	CHECK_EQ_INT(f7_bytes(dir, 2, &bytes, &samples), 2);
	CHECK_EQ_INT(f7_bytes(dir, 4, &bytes, &samples), 0);
	for (int pass = 0; pass < 2; pass++) {
		got g;
		int same = 1;

		if (pass == 1)
			REQUIRE(ingest_fold(in, 1) == 0);
		CHECK(read_series("fe", "x", 0, 0, UINT64_MAX, &g) == 0);
		CHECK_EQ_INT(g.n, step);
		for (uint64_t i = 0; i < g.n && i < step; i++) {
			uint64_t m
			    = i % (sizeof(f32s) / 8 + sizeof(others) / 8);
			uint64_t bits;

			memcpy(&bits, &g.values[i], 8);
			same &= g.steps[i] == i
			    && g.times[i]
			        == 1700000000000000000ll + (int64_t) i * 1000
			    && bits
			        == (m < sizeof(f32s) / 8
			                ? f32s[m]
			                : others[m - sizeof(f32s) / 8]);
		}
		CHECK(same);
	}
	ingest_close(in);
	store_close(st);
}

/* Series m of mixed_commit's commit from step base: n samples from
 * step0, in three shapes in turn (5 from base, 3 from base, 5 from base
 * + 7), so that each chunk of 16 groups mixes groups with the steps and
 * times of its first group and groups with their own. */
static void
mixed_shape(int m, uint64_t base, uint64_t *step0, uint32_t *n)
{
	*step0 = base + (m % 3 == 2 ? 7 : 0);
	*n     = m % 3 == 1 ? 3 : 5;
}

/* One commit of 48 series of run "g8" (s00 to s47, created in that
 * order, so sids in that order), shaped by mixed_shape from base. */
static int
mixed_commit(ingest *in, uint64_t *seq, uint64_t base)
{
	char name[16];
	spec s = { "g8", 9, 0, 0, 0, 0, name, 0, 0, val_lin };

	if (ingest_begin(in) != 0)
		return -100;
	for (int m = 0; m < 48; m++) {
		snprintf(name, sizeof(name), "s%02d", m);
		mixed_shape(m, base, &s.step0, &s.n);
		if (put_batch(in, &s, seq) != 0)
			return -1;
	}
	return ingest_commit(in) != 0 ? -101 : 0;
}

static int listed(
    const char *run, const char *metric, int32_t rank, series_rec *out);

/* Whether each series of mixed_commit's commits (from bases 0, 20, 40,
 * ..., commits of them) reads back and lists as sent. */
static int
mixed_as_sent(int commits)
{
	int ok = 1;

	for (int m = 0; m < 48; m++) {
		static got g;
		series_rec r;
		char       name[16];
		uint64_t   i = 0, first = 0, last = 0;

		snprintf(name, sizeof(name), "s%02d", m);
		if (read_series("g8", name, 0, 0, UINT64_MAX, &g) != 0
		    || listed("g8", name, 0, &r) != 0)
			return 0;
		for (int c = 0; c < commits; c++) {
			uint64_t s0;
			uint32_t n;

			mixed_shape(m, (uint64_t) c * 20, &s0, &n);
			if (c == 0)
				first = s0;
			for (uint64_t st = s0; st < s0 + n; st++, i++) {
				ok &= i < g.n && g.steps[i] == st
				    && g.values[i] == val_lin(st)
				    && g.times[i]
				        == 1700000000000000000ll
				            + (int64_t) st * 100000000;
				last = st;
			}
		}
		ok &= g.n == i && r.samples == i && r.first_step == first
		    && r.last_step == last && r.last_value == val_lin(last);
	}
	return ok;
}

/*
 * Format 8's commit records (every value a float32): a group's steps
 * and times are coded apart from its values, and a group with the
 * count, steps and times of its chunk's first group codes none of its
 * own; values in f32code. Commits whose chunks mix both kinds read back
 * and list as sent from the records, from a merged record (format 6)
 * and from blocks.
 */
TEST(format8_groups_share_their_chunks_times)
{
	store      *st;
	ingest     *in;
	ingest_opts o;
	uint64_t    seq = 0, bytes, samples;

	fresh_dir();
	ingest_opts_init(&o);
	o.journal_records = 3;
	o.journal_samples = 65536;
	open_with(&st, &in, &o);
	for (int c = 0; c < 3; c++)
		REQUIRE(mixed_commit(in, &seq, (uint64_t) c * 20) == 0);
	CHECK_EQ_INT(f8_bytes(dir, 6, &bytes, &samples), 3);
	CHECK_EQ_INT(samples, 3 * 16 * (5 + 3 + 5));
	CHECK(mixed_as_sent(3));
	for (int c = 3; c < 5; c++)
		REQUIRE(mixed_commit(in, &seq, (uint64_t) c * 20) == 0);
	CHECK(merged_bytes(dir, 0xfffffffcu, &bytes, &samples) > 0);
	CHECK(mixed_as_sent(5));
	REQUIRE(ingest_fold(in, 1) == 0);
	ingest_close(in);
	store_close(st);
	CHECK(mixed_as_sent(5));
}

/*
 * f32code's runs: a group of 40 float32 values with jumps of every
 * width (a sign flip, -inf to +inf: 32 bits), constant stretches (0
 * bits) and runs cut at 8 reads back bit for bit from its format-8
 * record, from a second record's group and after the fold.
 */
TEST(format8_float32_runs_keep_every_width)
{
	store   *st;
	ingest  *in;
	uint64_t bytes, samples, step = 0;
	uint64_t want[80];

	fresh_dir();
	open_both(&st, &in);
	for (int rec = 0; rec < 2; rec++) {
		wire_sample ws[40];

		for (int i = 0; i < 40; i++, step++) {
			uint32_t f;
			uint64_t b;
			float    x;

			switch ((i + rec) % 5) {
			case 0:
				f = 0xff800000u; /* -inf */
				break;
			case 1:
				f = 0x7f800000u; /* +inf */
				break;
			case 2:
				f = 0x3f800000u + (uint32_t) i * 0x1357u;
				break;
			default:
				f = i < 20 ? 0x80000000u : 0x00800000u;
				break;
			}
			if (i >= 30)
				f = 0x42280000u; /* 42, constant */
			memcpy(&x, &f, 4);
			b = 0;
			{
				double d = (double) x;

				memcpy(&b, &d, 8);
			}
			want[step] = b;
			ws[i]      = (wire_sample) { 0, step,
				     1700000000000000000ll + (int64_t) step * 1000,
				     0 };
			memcpy(&ws[i].value, &b, 8);
		}
		commit_x(in, "fr", (uint64_t) rec + 1, ws, 40);
	}
	CHECK_EQ_INT(f8_bytes(dir, 4, &bytes, &samples), 2);
	for (int pass = 0; pass < 2; pass++) {
		static got g;
		int        same = 1;

		if (pass == 1)
			REQUIRE(ingest_fold(in, 1) == 0);
		CHECK(read_series("fr", "x", 0, 0, UINT64_MAX, &g) == 0);
		CHECK_EQ_INT(g.n, 80);
		for (uint64_t i = 0; i < g.n && i < 80; i++) {
			uint64_t b;

			memcpy(&b, &g.values[i], 8);
			same &= g.steps[i] == i && b == want[i]
			    && g.times[i]
			        == 1700000000000000000ll + (int64_t) i * 1000;
		}
		CHECK(same);
	}
	ingest_close(in);
	store_close(st);
}

TEST(narrow_commit_writes_blocks_directly)
{
	store     *st;
	ingest    *in;
	scan_usage u;
	got        g;
	find_ctx   f = { "loss", 0, 0, { 0 } };
	store_txn *txn;
	spec       s = { "nd", 3, 1, 1, 0, 0, "loss", 0, 1000, val_lin };
	int        ordered = 1;

	fresh_dir();
	open_both(&st, &in);
	REQUIRE(apply(in, &s) == WIRE_ACK_STORED);
	usage_now(st, &u);
	CHECK_EQ_INT(u.journal_records, 0);
	CHECK(u.blocks > 0);
	CHECK(read_series("nd", "loss", 0, 0, UINT64_MAX, &g) == 0);
	CHECK_EQ_INT(g.n, 1000);

	/* A few samples: journalled. */
	s.seq = s.floor = 2;
	s.step0 = 1000;
	s.n     = 3;
	REQUIRE(apply(in, &s) == WIRE_ACK_STORED);
	usage_now(st, &u);
	CHECK_EQ_INT(u.journal_records, 1);

	/* Many again, but the series has samples in the journal. */
	s.seq = s.floor = 3;
	s.step0 = 1003;
	s.n     = 1000;
	REQUIRE(apply(in, &s) == WIRE_ACK_STORED);
	usage_now(st, &u);
	CHECK_EQ_INT(u.journal_records, 2);
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1)
			REQUIRE(ingest_fold(in, 1) == 0);
		CHECK(read_series("nd", "loss", 0, 0, UINT64_MAX, &g) == 0);
		CHECK_EQ_INT(g.n, 2003);
		for (uint64_t i = 0; i < g.n && i < 4096; i++)
			ordered &= g.steps[i] == i && g.values[i] == val_lin(i);
		CHECK(ordered);
		REQUIRE(store_read_begin(st, &txn) == 0);
		scan_series_of(st, txn, "nd", find_series, &f);
		store_read_end(txn);
		CHECK_EQ_INT(f.rec.samples, 2003);
		CHECK(f.rec.first_step == 0 && f.rec.last_step == 2002);
	}
	/* Folded, the series takes many samples directly again. */
	s.seq = s.floor = 4;
	s.step0 = 2003;
	REQUIRE(apply(in, &s) == WIRE_ACK_STORED);
	usage_now(st, &u);
	CHECK_EQ_INT(u.journal_records, 0);
	ingest_close(in);
	store_close(st);
	CHECK(read_series("nd", "loss", 0, 0, UINT64_MAX, &g) == 0);
	CHECK_EQ_INT(g.n, 3003);
	CHECK(read_as_sent(&g, 0));
}

/* The series (run, metric, rank) as scan_series_of lists it. Returns 0
 * or -1 (not found, or the store does not open). */
static int
listed(const char *run, const char *metric, int32_t rank, series_rec *out)
{
	store     *st;
	store_txn *txn;
	char       err[1400];
	find_ctx   f = { metric, rank, 0, { 0 } };
	int        rc;

	if (store_open(dir, STORE_RDONLY, &st, err, sizeof(err)) != 0) {
		printf("  %s\n", err);
		return -1;
	}
	if (store_read_begin(st, &txn) != 0) {
		store_close(st);
		return -1;
	}
	rc = scan_series_of(st, txn, run, find_series, &f);
	store_read_end(txn);
	store_close(st);
	*out = f.rec;
	return rc == 0 && f.sid != 0 ? 0 : -1;
}

/*
 * A database written before the journal (format 1) is read as it is, and
 * converted when vitalsd opens it: the empty journal is created, the
 * statistics move to the stats database and the format becomes 3 (which
 * older readers refuse with their format message). A format this version
 * does not know is refused, naming it.
 */
TEST(format1_store_read_and_converted)
{
	store     *st;
	ingest    *in;
	got        g;
	series_rec r;
	char       err[1400];
	spec       s = { "f1", 10, 1, 1, 0, 0, "loss", 0, 1500, val_lin };

	fresh_dir();
	open_both(&st, &in);
	CHECK_EQ_INT(apply(in, &s), WIRE_ACK_STORED);
	REQUIRE(ingest_fold(in, 1) == 0);
	ingest_close(in);
	store_close(st);
	REQUIRE(set_format(dir, 1) == 0);

	/* Read as it is, read-only (no journal there). */
	CHECK(read_series("f1", "loss", 0, 0, UINT64_MAX, &g) == 0);
	CHECK_EQ_INT(g.n, 1500);
	REQUIRE(listed("f1", "loss", 0, &r) == 0);
	CHECK(r.samples == 1500 && r.last_step == 1499);

	/* The writer converts it and goes on. */
	open_both(&st, &in);
	s.seq = 2, s.floor = 2, s.step0 = 1500, s.n = 500;
	CHECK_EQ_INT(apply(in, &s), WIRE_ACK_STORED);
	ingest_close(in);
	store_close(st);
	CHECK(read_series("f1", "loss", 0, 0, UINT64_MAX, &g) == 0);
	CHECK_EQ_INT(g.n, 2000);
	CHECK(g.steps[1999] == 1999 && g.values[1999] == val_lin(1999));
	REQUIRE(listed("f1", "loss", 0, &r) == 0);
	CHECK(r.samples == 2000 && r.first_step == 0 && r.last_step == 1999);
	CHECK(r.last_value == val_lin(1999));

	REQUIRE(set_format(dir, STORE_FORMAT + 1) == 0);
	CHECK(store_open(dir, STORE_RDONLY, &st, err, sizeof(err)) ==
	    STORE_EFORMAT);
	CHECK(strstr(err,
	          "database format 9, this vitals reads formats 1 "
	          "to 8")
	    != NULL);
	/* Stamped 3 again, it opens. */
	REQUIRE(set_format(dir, 3) == 0);
	CHECK(read_series("f1", "loss", 0, 0, UINT64_MAX, &g) == 0);
	CHECK_EQ_INT(g.n, 2000);
}

static uint8_t *
v2_var(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t) (v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t) v;
	return p;
}

static uint64_t
v2_zz(int64_t v)
{
	return ((uint64_t) v << 1) ^ (uint64_t) (v >> 63);
}

/*
 * Replace the one journal record of the store in dir by the record
 * format 2 (or 3: its header and chunk, below; 4: a commit's record of
 * formats 4 and 5, the same but for its tag and group header; 5: a
 * merged record of formats 4 and 5, the same as 4 but for its tag; 7:
 * a commit's record of format 7, as 4 but for its tag, 0xfffffff6, no
 * step for the samples after the first, each one past the one before,
 * and values as the varint of the xor of their float32 patterns)
 * wrote for the same samples
 * (make()'s: steps step0.., one series sid): u32 groups, u32 samples, u64 base
 * step, u64 base time, { u32 sid, u32 offset }, then a varint count and per
 * sample the step delta and the time's delta of deltas (zigzag varints, in ns)
 * and the value's xor with the previous (a tag byte: 0, or 1 + its trailing
 * zero bits, then the xor shifted right by them as a varint).
 */
static int
journal_old(
    const char *d, int format, uint32_t sid, uint64_t step0, uint32_t n)
{
	MDB_env    *env;
	MDB_txn    *txn;
	MDB_dbi     jdb;
	MDB_cursor *cur;
	MDB_val     k, v;
	uint8_t     rec[4096], *p = rec + 32, key[8];
	uint64_t    bits = 0, step = step0;
	uint32_t    f32  = 0;
	int64_t     t0 = 1700000000000000000ll + (int64_t) step0 * 100000000;
	int64_t     time = t0, dtime = 0;
	int         rc;

	if (n > 100 || n < 2)
		return -1;
	if (format >= 3) {
		/* Format 3: the tag, groups, samples, base step and time,
		 * time unit (1: ns), one chunk { sid, 0 }, then the group:
		 * a varint sid delta (0) and count, and the samples. Format
		 * 4's records (and store_journal_merge's, until format 6):
		 * their own tags, and the group's header is one varint, the
		 * sid delta shifted left by one with the low bit set (n is
		 * over 1), then the count. */
		le_put(rec,
		    format == 7       ? 0xfffffff6u
		        : format == 5 ? 0xfffffffdu
		        : format == 4 ? 0xfffffffeu
		                      : 0xffffffffu,
		    4);
		le_put(rec + 4, 1, 4);
		le_put(rec + 8, n, 4);
		le_put(rec + 12, step0, 8);
		le_put(rec + 20, (uint64_t) t0, 8);
		le_put(rec + 28, 1, 4);
		le_put(rec + 32, sid, 4);
		le_put(rec + 36, 0, 4);
		p    = rec + 40;
		*p++ = format >= 4 ? 1 : 0;
	} else {
		le_put(rec, 1, 4);
		le_put(rec + 4, n, 4);
		le_put(rec + 8, step0, 8);
		le_put(rec + 16, (uint64_t) t0, 8);
		le_put(rec + 24, sid, 4);
		le_put(rec + 28, 0, 4);
	}
	p = v2_var(p, n);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t s  = step0 + i, b, x;
		int64_t  t  = 1700000000000000000ll + (int64_t) s * 100000000;
		double   vv = val_lin(s);

		memcpy(&b, &vv, 8);
		if (format != 7 || i == 0)
			p = v2_var(p, v2_zz((int64_t) (s - step)));
		p     = v2_var(p, v2_zz((t - time) - dtime));
		dtime = t - time;
		time  = t;
		step  = s;
		x     = b ^ bits;
		bits  = b;
		if (format == 7) {
			/* The xor of the float32 patterns (val_lin's
			 * values are float32s), 0 before the first. */
			float    fv = (float) vv;
			uint32_t f;

			memcpy(&f, &fv, 4);
			p   = v2_var(p, f ^ f32);
			f32 = f;
		} else if (x == 0) {
			*p++ = 0;
		} else {
			int tz = __builtin_ctzll(x);

			*p++ = (uint8_t) (tz + 1);
			p    = v2_var(p, x >> tz);
		}
	}
	if (mdb_env_create(&env) != 0)
		return -1;
	mdb_env_set_maxdbs(env, 10);
	if ((rc = mdb_env_open(env, d, 0, 0600)) != 0 ||
	    (rc = mdb_txn_begin(env, NULL, 0, &txn)) != 0) {
		mdb_env_close(env);
		return rc;
	}
	if ((rc = mdb_dbi_open(txn, "journal", 0, &jdb)) != 0 ||
	    (rc = mdb_cursor_open(txn, jdb, &cur)) != 0)
		goto fail;
	rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
	if (rc == 0 && k.mv_size == 8)
		memcpy(key, k.mv_data, 8);
	if (rc == 0 && mdb_cursor_get(cur, &k, &v, MDB_NEXT) != MDB_NOTFOUND)
		rc = -4; /* one record only */
	mdb_cursor_close(cur);
	if (rc != 0)
		goto fail;
	k.mv_data = key;
	k.mv_size = 8;
	v.mv_data = rec;
	v.mv_size = (size_t) (p - rec);
	if ((rc = mdb_put(txn, jdb, &k, &v, 0)) != 0)
		goto fail;
	rc = mdb_txn_commit(txn);
	mdb_env_close(env);
	return rc;
fail:
	mdb_txn_abort(txn);
	mdb_env_close(env);
	return rc;
}

/*
 * A format-2 store (statistics in the series records) with samples
 * still in the journal is read as it is, and converted when vitalsd
 * opens it: the statistics move to the stats database, the journal
 * record (in format 2's layout) stays and is folded later; listings and
 * samples are the same before and after, and go on counting.
 */
TEST(format2_store_with_journal_converted)
{
	store     *st;
	ingest    *in;
	got        g;
	series_rec r;
	spec       a = { "f2", 10, 1, 1, 0, 0, "loss", 0, 100, val_lin };
	spec       b = { "f2", 10, 2, 2, 0, 0, "loss", 100, 100, val_lin };
	int        in_order = 1;

	fresh_dir();
	open_both(&st, &in);
	CHECK_EQ_INT(apply(in, &a), WIRE_ACK_STORED);
	REQUIRE(ingest_fold(in, 1) == 0);
	/* Under 256 samples: journalled, left there. */
	CHECK_EQ_INT(apply(in, &b), WIRE_ACK_STORED);
	ingest_close(in);
	store_close(st);
	REQUIRE(listed("f2", "loss", 0, &r) == 0);
	REQUIRE(set_format(dir, 2) == 0);
	REQUIRE(journal_old(dir, 2, r.sid, 100, 100) == 0);

	CHECK(read_series("f2", "loss", 0, 0, UINT64_MAX, &g) == 0);
	CHECK_EQ_INT(g.n, 200);
	for (uint64_t i = 0; i < g.n && i < 200; i++)
		in_order &= g.steps[i] == i && g.values[i] == val_lin(i) &&
		    g.times[i] == 1700000000000000000ll + (int64_t) i * 100000000;
	CHECK(in_order);
	REQUIRE(listed("f2", "loss", 0, &r) == 0);
	CHECK(r.samples == 200 && r.last_step == 199);
	CHECK(r.jseen != 0); /* the fold moved it past the first record */

	open_both(&st, &in);
	ingest_close(in);
	store_close(st);
	CHECK(read_series("f2", "loss", 0, 0, UINT64_MAX, &g) == 0);
	CHECK_EQ_INT(g.n, 200);
	REQUIRE(listed("f2", "loss", 0, &r) == 0);
	CHECK(r.samples == 200 && r.first_step == 0 && r.last_step == 199);

	open_both(&st, &in);
	b.seq = 3, b.floor = 3, b.step0 = 200;
	CHECK_EQ_INT(apply(in, &b), WIRE_ACK_STORED);
	REQUIRE(ingest_fold(in, 1) == 0);
	ingest_close(in);
	store_close(st);
	CHECK(read_series("f2", "loss", 0, 0, UINT64_MAX, &g) == 0);
	CHECK_EQ_INT(g.n, 300);
	for (uint64_t i = 0; i < g.n && i < 300; i++)
		in_order &= g.steps[i] == i && g.values[i] == val_lin(i);
	CHECK(in_order);
	REQUIRE(listed("f2", "loss", 0, &r) == 0);
	CHECK(r.samples == 300 && r.last_step == 299);
	CHECK(r.last_value == val_lin(299));
}

/* The size of the value of key in database db of the store in dir
 * (read raw), and its first 4 bytes in *first; -1 if absent. */
static long
raw_value(const char *d, const char *db, const void *key, size_t klen,
    uint32_t *first)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi  dbi;
	MDB_val  k = { klen, (void *) (uintptr_t) key }, v;
	long     n = -1;

	if (mdb_env_create(&env) != 0)
		return -1;
	mdb_env_set_maxdbs(env, 10);
	if (mdb_env_open(env, d, MDB_RDONLY, 0600) == 0
	    && mdb_txn_begin(env, NULL, MDB_RDONLY, &txn) == 0) {
		if (mdb_dbi_open(txn, db, 0, &dbi) == 0
		    && mdb_get(txn, dbi, &k, &v) == 0) {
			n      = (long) v.mv_size;
			*first = v.mv_size >= 4
			    ? (uint32_t) le_get(v.mv_data, 4)
			    : 0;
		}
		mdb_txn_abort(txn);
	}
	mdb_env_close(env);
	return n;
}

/*
 * A format-3 store (statistics in a fixed 56-byte layout, journal
 * records with a two-varint group header) with samples in the journal
 * is read as it is, and converted when vitalsd opens it: only the
 * number changes; the statistics are written compactly (format 4) once
 * rewritten, the old record is folded as it is. Samples and listings
 * are the same before and after, and go on counting.
 */
TEST(format3_store_with_journal_converted)
{
	store     *st;
	ingest    *in;
	got        g;
	series_rec r;
	uint8_t    sk[4];
	uint32_t   fmt = 0, first;
	spec       a   = { "f3", 10, 1, 1, 0, 0, "loss", 0, 100, val_lin };
	spec       b   = { "f3", 10, 2, 2, 0, 0, "loss", 100, 100, val_lin };
	int        in_order = 1;

	fresh_dir();
	open_both(&st, &in);
	CHECK_EQ_INT(apply(in, &a), WIRE_ACK_STORED);
	REQUIRE(ingest_fold(in, 1) == 0);
	CHECK_EQ_INT(apply(in, &b), WIRE_ACK_STORED);
	ingest_close(in);
	store_close(st);
	REQUIRE(listed("f3", "loss", 0, &r) == 0);
	be_put32(sk, r.sid);
	CHECK(raw_value(dir, "stats", sk, 4, &first) < 56);
	REQUIRE(set_format(dir, 3) == 0);
	REQUIRE(journal_old(dir, 3, r.sid, 100, 100) == 0);
	CHECK_EQ_INT(raw_value(dir, "stats", sk, 4, &first), 56);

	/* Read as it is, read-only. */
	CHECK(read_series("f3", "loss", 0, 0, UINT64_MAX, &g) == 0);
	CHECK_EQ_INT(g.n, 200);
	for (uint64_t i = 0; i < g.n && i < 200; i++)
		in_order &= g.steps[i] == i && g.values[i] == val_lin(i)
		    && g.times[i]
		        == 1700000000000000000ll + (int64_t) i * 100000000;
	CHECK(in_order);
	REQUIRE(listed("f3", "loss", 0, &r) == 0);
	CHECK(r.samples == 200 && r.first_step == 0 && r.last_step == 199);
	CHECK(raw_value(dir, "meta", "format", 6, &fmt) == 4 && fmt == 3);

	/* The writer converts it: the number only. */
	open_both(&st, &in);
	ingest_close(in);
	store_close(st);
	CHECK(raw_value(dir, "meta", "format", 6, &fmt) == 4
	    && fmt == STORE_FORMAT);
	CHECK_EQ_INT(raw_value(dir, "stats", sk, 4, &first), 56);
	CHECK(read_series("f3", "loss", 0, 0, UINT64_MAX, &g) == 0);
	CHECK_EQ_INT(g.n, 200);
	REQUIRE(listed("f3", "loss", 0, &r) == 0);
	CHECK(r.samples == 200 && r.last_step == 199);

	/* Folded with new samples: compact statistics, all in order. */
	open_both(&st, &in);
	b.seq = 3, b.floor = 3, b.step0 = 200;
	CHECK_EQ_INT(apply(in, &b), WIRE_ACK_STORED);
	REQUIRE(ingest_fold(in, 1) == 0);
	ingest_close(in);
	store_close(st);
	CHECK(raw_value(dir, "stats", sk, 4, &first) < 56);
	CHECK(read_series("f3", "loss", 0, 0, UINT64_MAX, &g) == 0);
	CHECK_EQ_INT(g.n, 300);
	for (uint64_t i = 0; i < g.n && i < 300; i++)
		in_order &= g.steps[i] == i && g.values[i] == val_lin(i);
	CHECK(in_order);
	REQUIRE(listed("f3", "loss", 0, &r) == 0);
	CHECK(r.samples == 300 && r.first_step == 0 && r.last_step == 299);
	CHECK(r.last_value == val_lin(299));
}

/*
 * A format-4 store (no record counted) with wide records in its journal
 * reads as it is; the writer converts it by writing the number 5 alone,
 * then counts its records at the bound (meta journal_counted) without
 * folding them, and samples and listings stay those sent.
 */
TEST(format4_store_with_journal_converted)
{
	store      *st;
	ingest     *in;
	ingest_opts o;
	scan_usage  u;
	series_rec  r;
	got         g;
	uint32_t    fmt, x;
	uint64_t    seq = 0, step = 0;

	fresh_dir();
	ingest_opts_init(&o);
	o.journal_samples = 4096; /* wide: counted past 16,384 samples */
	o.journal_records = 64;
	open_with(&st, &in, &o);
	for (int c = 0; c < 3; c++, step += 64)
		REQUIRE(wide_commit(in, &seq, step) == 0);
	ingest_close(in);
	store_close(st);
	CHECK(raw_value(dir, "meta", "journal_counted", 15, &x) < 0);
	REQUIRE(set_format(dir, 4) == 0);
	CHECK(read_series("jw", "m17", 0, 0, UINT64_MAX, &g) == 0);
	CHECK_EQ_INT(g.n, 3 * 64);
	REQUIRE(listed("jw", "m17", 0, &r) == 0);
	CHECK(r.samples == 3 * 64 && r.last_step == 3 * 64 - 1);
	CHECK(raw_value(dir, "meta", "format", 6, &fmt) == 4 && fmt == 4);

	open_with(&st, &in, &o);
	for (int c = 3; c < 5; c++, step += 64)
		REQUIRE(wide_commit(in, &seq, step) == 0);
	usage_now(st, &u);
	ingest_close(in);
	store_close(st);
	CHECK(raw_value(dir, "meta", "format", 6, &fmt) == 4
	    && fmt == STORE_FORMAT);
	CHECK(raw_value(dir, "meta", "journal_counted", 15, &x) == 8);
	CHECK(u.blocks == 0 && u.journal_records > 0);
	CHECK(read_series("jw", "m17", 0, 0, UINT64_MAX, &g) == 0);
	CHECK_EQ_INT(g.n, 5 * 64);
	CHECK(read_as_sent(&g, 0));
	REQUIRE(listed("jw", "m17", 0, &r) == 0);
	CHECK(r.samples == 5 * 64 && r.first_step == 0
	    && r.last_step == 5 * 64 - 1);
}

/*
 * A format-5 store whose journal holds a record of format 5's codes (a
 * merged one, tag 0xfffffffd, or a commit's, 0xfffffffe, whose groups
 * code their first step) reads as it is; the writer converts it by
 * writing the number 6 alone, the record is read as it is until it is
 * folded, and samples and listings stay those sent.
 */
static void
format5_record_read_and_converted(int kind)
{
	uint32_t   was = kind == 7 ? 7 : 5;
	store     *st;
	ingest    *in;
	got        g;
	series_rec r;
	uint32_t   fmt;
	spec       a = { "f5", 10, 1, 1, 0, 0, "loss", 0, 100, val_lin };
	spec       b = { "f5", 10, 2, 2, 0, 0, "loss", 100, 100, val_lin };
	int        in_order = 1;

	fresh_dir();
	open_both(&st, &in);
	CHECK_EQ_INT(apply(in, &a), WIRE_ACK_STORED);
	REQUIRE(ingest_fold(in, 1) == 0);
	CHECK_EQ_INT(apply(in, &b), WIRE_ACK_STORED); /* journalled */
	ingest_close(in);
	store_close(st);
	REQUIRE(listed("f5", "loss", 0, &r) == 0);
	REQUIRE(set_format(dir, was) == 0);
	REQUIRE(journal_old(dir, kind, r.sid, 100, 100) == 0);

	/* Read as it is, read-only. */
	CHECK(read_series("f5", "loss", 0, 0, UINT64_MAX, &g) == 0);
	CHECK_EQ_INT(g.n, 200);
	for (uint64_t i = 0; i < g.n && i < 200; i++)
		in_order &= g.steps[i] == i && g.values[i] == val_lin(i)
		    && g.times[i]
		        == 1700000000000000000ll + (int64_t) i * 100000000;
	CHECK(in_order);
	REQUIRE(listed("f5", "loss", 0, &r) == 0);
	CHECK(r.samples == 200 && r.first_step == 0 && r.last_step == 199);
	CHECK(r.last_value == val_lin(199));
	CHECK(raw_value(dir, "meta", "format", 6, &fmt) == 4 && fmt == was);

	/* The writer converts it: the number only. */
	open_both(&st, &in);
	ingest_close(in);
	store_close(st);
	CHECK(raw_value(dir, "meta", "format", 6, &fmt) == 4
	    && fmt == STORE_FORMAT);
	CHECK(read_series("f5", "loss", 0, 0, UINT64_MAX, &g) == 0);
	CHECK_EQ_INT(g.n, 200);
	CHECK(g.n == 200 && g.values[150] == val_lin(150));
	REQUIRE(listed("f5", "loss", 0, &r) == 0);
	CHECK(r.samples == 200 && r.last_step == 199);

	/* Folded with new samples: all in order. */
	open_both(&st, &in);
	b.seq = 3, b.floor = 3, b.step0 = 200;
	CHECK_EQ_INT(apply(in, &b), WIRE_ACK_STORED);
	REQUIRE(ingest_fold(in, 1) == 0);
	ingest_close(in);
	store_close(st);
	CHECK(read_series("f5", "loss", 0, 0, UINT64_MAX, &g) == 0);
	CHECK_EQ_INT(g.n, 300);
	for (uint64_t i = 0; i < g.n && i < 300; i++)
		in_order &= g.steps[i] == i && g.values[i] == val_lin(i);
	CHECK(in_order);
	REQUIRE(listed("f5", "loss", 0, &r) == 0);
	CHECK(r.samples == 300 && r.first_step == 0 && r.last_step == 299);
	CHECK(r.last_value == val_lin(299));
}

TEST(format5_merged_record_read_and_converted)
{
	format5_record_read_and_converted(5);
}

TEST(format5_commit_record_read_and_converted)
{
	format5_record_read_and_converted(4);
}

/*
 * A format-7 store whose journal holds a commit's record of format 7
 * (float32 values as xor varints, tag 0xfffffff6) reads as it is; the
 * writer converts the store to format 8 by writing the number alone,
 * and the record is read as it is until it is folded.
 */
TEST(format7_commit_record_read_and_converted)
{
	uint32_t fmt;

	format5_record_read_and_converted(7);
	CHECK(raw_value(dir, "meta", "format", 6, &fmt) == 4 && fmt == 8);
}

/*
 * Format 7 writes no statistics for a new series (format 6 wrote empty
 * ones): a format-6 store is converted by writing the number alone, its
 * empty statistics stay and are read, and a series created since has
 * none until samples are counted in it. A reader that opened the store
 * while it was format 6 lists that new series too (it asks the format
 * again), and the fold writes its statistics.
 */
TEST(format6_store_converted_without_empty_statistics)
{
	store     *st, *ro;
	store_txn *txn;
	ingest    *in;
	series_rec r;
	find_ctx   f = { "gnorm", 0, 0, { 0 } };
	uint32_t   fmt, x;
	uint8_t    sk[4];
	char       err[1400];
	spec       a = { "f6", 10, 1, 1, 0, 0, "loss", 0, 100, val_lin };
	spec       b = { "f6", 10, 2, 2, 0, 0, "gnorm", 0, 50, val_lin };

	fresh_dir();
	open_both(&st, &in);
	CHECK_EQ_INT(apply(in, &a), WIRE_ACK_STORED); /* journalled */
	ingest_close(in);
	store_close(st);
	REQUIRE(listed("f6", "loss", 0, &r) == 0);
	be_put32(sk, r.sid);
	CHECK(raw_value(dir, "stats", sk, 4, &x) < 0);
	REQUIRE(set_format(dir, 6) == 0); /* the empty statistics, as 6 */
	CHECK(raw_value(dir, "stats", sk, 4, &x) > 0);
	REQUIRE(store_open(dir, STORE_RDONLY, &ro, err, sizeof(err)) == 0);

	open_both(&st, &in);
	CHECK_EQ_INT(apply(in, &b), WIRE_ACK_STORED); /* a new series */
	ingest_close(in);
	store_close(st);
	CHECK(raw_value(dir, "meta", "format", 6, &fmt) == 4
	    && fmt == STORE_FORMAT && fmt >= 7);
	REQUIRE(listed("f6", "gnorm", 0, &r) == 0);
	CHECK(r.samples == 50 && r.first_step == 0 && r.last_step == 49);
	be_put32(sk, r.sid);
	CHECK(raw_value(dir, "stats", sk, 4, &x) < 0);
	REQUIRE(listed("f6", "loss", 0, &r) == 0);
	CHECK(r.samples == 100 && r.last_value == val_lin(99));

	/* The reader that opened format 6. */
	REQUIRE(store_read_begin(ro, &txn) == 0);
	CHECK(scan_series_of(ro, txn, "f6", find_series, &f) == 0);
	store_read_end(txn);
	store_close(ro);
	CHECK(f.sid != 0 && f.rec.samples == 50 && f.rec.last_step == 49);

	open_both(&st, &in);
	REQUIRE(ingest_fold(in, 1) == 0);
	ingest_close(in);
	store_close(st);
	REQUIRE(listed("f6", "gnorm", 0, &r) == 0);
	be_put32(sk, r.sid);
	CHECK(raw_value(dir, "stats", sk, 4, &x) > 0);
	CHECK(r.samples == 50 && r.last_value == val_lin(49));
}

TEST(readonly_missing_db_is_clear)
{
	store *st;
	char   err[1400];

	CHECK(store_open("/nonexistent/vitals", STORE_RDONLY, &st, err,
		  sizeof(err)) == STORE_ENOTFOUND);
	CHECK(strstr(err, "/nonexistent/vitals") != NULL);
}

/* The varint read without a bounds test a byte (get_var10, the
 * journal's decoders' when a sample's 31 bytes are there) reads what
 * get_var reads: every length from 1 to 10 bytes, the bits past 64 of a
 * tenth byte dropped, and a varint of more than 10 bytes refused. */
TEST(varint_fast_read_equals_checked)
{
	uint64_t x   = 0x853c49e6748fea9bull;
	int      bad = 0;

	for (int i = 0; i < 20000; i++) {
		uint8_t        buf[24];
		const uint8_t *p = buf, *q = buf;
		uint64_t       v = rnd(&x), a = 1, b = 2;
		int            ra, rb;

		memset(buf, 0xa5, sizeof(buf));
		v >>= rnd(&x) % 64; /* every length */
		if (i % 7 == 0)
			v = i % 2 ? UINT64_MAX : (uint64_t) 1 << (i % 64);
		put_var(buf, v);
		if (i % 11 == 0) /* 10 bytes, the last with bits past 64 */
			for (int j = 0; j < 10; j++)
				buf[j] = (uint8_t) (j < 9 ? 0x80 | rnd(&x)
				                          : 0x7f);
		if (i % 13 == 0) /* too long */
			memset(buf, 0x80 | (i & 0x7f), 11);
		ra = get_var(&p, buf + sizeof(buf), &a);
		rb = get_var10(&q, &b);
		bad += ra != rb || (ra == 0 && (a != b || p != q))
		    || (i % 13 != 0 && i % 11 != 0 && a != v);
	}
	CHECK_EQ_INT(bad, 0);
}

TEST(keys_roundtrip)
{
	uint8_t     k[STORE_KEY_MAX];
	size_t      n = store_series_key(k, "run", 3, "a/b", 3, -1), rl, ml;
	const char *r, *m;
	int32_t     rank;

	REQUIRE(store_series_key_parse(k, n, &r, &rl, &m, &ml, &rank) == 0);
	CHECK(rl == 3 && ml == 3 && rank == -1 && memcmp(m, "a/b", 3) == 0);
	n = store_series_key(k, "run", 3, "x", 1, 12345);
	REQUIRE(store_series_key_parse(k, n, &r, &rl, &m, &ml, &rank) == 0);
	CHECK(rank == 12345);
	CHECK(store_series_key_parse(k, 3, &r, &rl, &m, &ml, &rank) != 0);
}

/* Positions (store/position.c): saved under a name, read back after
 * the store is closed and opened again, kept apart by name. */
TEST(positions_survive_reopen)
{
	store          *st;
	store_txn      *txn;
	store_pos       p;
	char            err[1400];
	store_pos_entry e[2] = { { 7, { 100, 99, 123456789000ll } },
		{ 70000, { 1, 0, -5 } } };

	fresh_dir();
	REQUIRE(store_open(dir, 0, &st, err, sizeof(err)) == 0);
	REQUIRE(store_pos_save(st, "rw:a", e, 2, err, sizeof(err)) == 0);
	e[0].pos.count = 200;
	REQUIRE(store_pos_save(st, "rw:a", e, 1, err, sizeof(err)) == 0);
	CHECK(store_pos_save(st, "", e, 1, err, sizeof(err)) != 0);
	store_close(st);
	REQUIRE(store_open(dir, STORE_RDONLY, &st, err, sizeof(err)) == 0);
	REQUIRE(store_read_begin(st, &txn) == 0);
	REQUIRE(store_pos_get(st, txn, "rw:a", 7, &p) == 0);
	CHECK(p.count == 200 && p.step == 99 && p.time == 123456789000ll);
	REQUIRE(store_pos_get(st, txn, "rw:a", 70000, &p) == 0);
	CHECK(p.count == 1 && p.step == 0 && p.time == -5);
	CHECK(store_pos_get(st, txn, "rw:b", 7, &p) == STORE_ENOTFOUND);
	CHECK(store_pos_get(st, txn, "rw:a", 8, &p) == STORE_ENOTFOUND);
	store_read_end(txn);
	store_close(st);
}

/*
 * Each emitter keeps the series of its names in the order they came and
 * tries the next one first (collector/ingest.c, predict): names that
 * come in other orders, in subsets, from two incarnations of one rank
 * and another rank, four steps a commit, with a series cache of 64
 * (80 series: evicted after every commit, and the orders hold only 64),
 * still land in their own series.
 */
#define ORDER_NAMES 40

/* The value of the step of name k (of fewer than 1,000, steps fewer
 * than 1,000) of a rank, in the tests that name many series. */
static double
named_value(int rank, int k, uint64_t step)
{
	return (double) rank * 1e6 + (double) k * 1e3 + (double) step;
}

TEST(names_in_changing_orders_land_in_their_series)
{
	store      *st;
	ingest     *in;
	ingest_opts o;
	char        name[32];
	uint64_t    seq[3] = { 0, 0, 0 };
	uint64_t    steps  = 16;
	got        *g      = malloc(sizeof(*g));

	REQUIRE(g != NULL);
	fresh_dir();
	ingest_opts_init(&o);
	o.cache_series = 64;
	open_with(&st, &in, &o);
	for (uint64_t step = 0; step < steps; step++) {
		if (step % 4 == 0)
			REQUIRE(ingest_begin(in) == 0);
		/* Emitters 0 and 1: rank 0 (two incarnations); 2: rank 1. */
		for (int em = 0; em < 3; em++) {
			int         order[ORDER_NAMES], n = 0;
			double      v[ORDER_NAMES];
			names_batch nb = { .run = "ord",
				.prefix         = "m",
				.rank           = em == 2,
				.world          = 2,
				.width          = 2 };

			/* Step by step: the same order, rotated, reversed,
			 * every other name. */
			for (int k = 0; k < ORDER_NAMES; k++) {
				int m = (int) (step % 4) == 1
				    ? (k + 7 * (int) step) % ORDER_NAMES
				    : (int) (step % 4) == 2
				    ? ORDER_NAMES - 1 - k
				    : k;

				if ((int) (step % 4) == 3 && (k + em) % 2)
					continue;
				v[n]       = named_value(nb.rank, m, step);
				order[n++] = m;
			}
			nb.inc   = 100 + (uint64_t) em;
			nb.seq   = ++seq[em];
			nb.step  = step;
			nb.order = order;
			nb.n     = n;
			/* Incarnation 101 writes rank 0's odd steps, 100
			 * its even ones. */
			nb.nsamples = em < 2 && (int) (step % 2) != em ? 0 : n;
			nb.values   = v;
			REQUIRE(ingest_names(in, &nb) == WIRE_ACK_STORED);
		}
		if (step % 4 == 3)
			REQUIRE(ingest_commit(in) == 0);
	}
	ingest_close(in);
	store_close(st);
	for (int rank = 0; rank < 2; rank++)
		for (int m = 0; m < ORDER_NAMES; m++) {
			uint64_t k = 0;

			snprintf(name, sizeof(name), "m%02d", m);
			REQUIRE(
			    read_series("ord", name, rank, 0, steps, g) == 0);
			/* Every step, but the subset steps (3, 7, ...) only
			 * the names of their emitter's half. */
			for (uint64_t step = 0; step < steps; step++) {
				int em = rank == 1 ? 2 : (int) (step % 2);

				if (step % 4 == 3 && (m + em) % 2)
					continue;
				CHECK(k < g->n && g->steps[k] == step
				    && g->values[k]
				        == named_value(rank, m, step));
				k++;
			}
			CHECK_EQ_INT((int) g->n, (int) k);
		}
	free(g);
}

/*
 * A commit whose series come out of sid order, many and dense (ranks'
 * batches interleaved, each naming its series backwards): the commit
 * groups them by sid from a slot per id (collector/ingest.c,
 * order_dense) rather than by sorting; every sample still lands in its
 * series, in step order.
 */
#define DENSE_NAMES 300
#define DENSE_RANKS 3

TEST(interleaved_dense_commit_lands_in_its_series)
{
	store  *st;
	ingest *in;
	char    name[32];
	got    *g = malloc(sizeof(*g));

	REQUIRE(g != NULL);
	fresh_dir();
	open_both(&st, &in);
	for (uint64_t step = 0; step < 4; step++) {
		/* Step 0 creates the series, rank after rank, in name
		 * order; steps 1 to 3 are one commit, ranks and names
		 * backwards. */
		if (step <= 1)
			REQUIRE(ingest_begin(in) == 0);
		for (int q = 0; q < DENSE_RANKS; q++) {
			int         r = step == 0 ? q : DENSE_RANKS - 1 - q;
			int         order[DENSE_NAMES];
			double      v[DENSE_NAMES];
			names_batch nb = { .run = "dense",
				.prefix         = "w",
				.rank           = r,
				.world          = DENSE_RANKS,
				.width          = 3,
				.n              = DENSE_NAMES,
				.nsamples       = DENSE_NAMES };

			for (int i = 0; i < DENSE_NAMES; i++) {
				order[i] = step == 0 ? i : DENSE_NAMES - 1 - i;
				v[i]     = named_value(r, order[i], step);
			}
			nb.inc    = 300 + (uint64_t) r;
			nb.seq    = step + 1;
			nb.step   = step;
			nb.order  = order;
			nb.values = v;
			REQUIRE(ingest_names(in, &nb) == WIRE_ACK_STORED);
		}
		if (step == 0 || step == 3)
			REQUIRE(ingest_commit(in) == 0);
	}
	ingest_close(in);
	store_close(st);
	for (int r = 0; r < DENSE_RANKS; r++)
		for (int k = 0; k < DENSE_NAMES; k++) {
			int ok;

			snprintf(name, sizeof(name), "w%03d", k);
			REQUIRE(read_series("dense", name, r, 0, 10, g) == 0);
			ok = g->n == 4;
			for (uint64_t i = 0; ok && i < 4; i++)
				ok = g->steps[i] == i
				    && g->values[i] == named_value(r, k, i);
			CHECK(ok);
		}
	free(g);
}

int
main(void)
{
	RUN(keys_roundtrip);
	RUN(varint_fast_read_equals_checked);
	RUN(store_and_read_back);
	RUN(duplicates_discarded_across_reopen);
	RUN(restart_overlap_merges_by_step);
	RUN(samples_read_in_arrival_order);
	RUN(map_grows_ahead_of_transactions);
	RUN(expected_bytes_grow_the_map_first);
	RUN(abort_leaves_nothing);
	RUN(alerts_in_order_per_run);
	RUN(ranks_latest_incarnation_by_start);
	RUN(wide_run_past_encoder_bound_reads_back);
	RUN(journal_reads_equal_folded_reference);
	RUN(merged_journal_reads_equal_folded_reference);
	RUN(wide_merged_journal_reads_equal_folded_reference);
	RUN(aligned_journal_reads_equal_folded_reference);
	RUN(counted_journal_reads_equal_folded_reference);
	RUN(listing_statistics_equal_their_samples);
	RUN(counted_listing_statistics_equal_their_samples);
	RUN(journal_read_once_equals_scan_samples);
	RUN(journal_keeps_extreme_samples);
	RUN(merged_record_keeps_extreme_samples);
	RUN(merged_record_unit_when_times_wrap);
	RUN(journal_records_bounded);
	RUN(records_past_bound_are_merged);
	RUN(wide_journal_folds_more_samples_a_series);
	RUN(wide_merges_take_the_oldest_records);
	RUN(merged_records_take_the_block_code);
	RUN(wide_commit_records_code_no_first_step);
	RUN(commit_records_code_steps_and_float32);
	RUN(float32_records_keep_edge_values);
	RUN(format8_groups_share_their_chunks_times);
	RUN(format8_float32_runs_keep_every_width);
	RUN(narrow_commit_writes_blocks_directly);
	RUN(format1_store_read_and_converted);
	RUN(format2_store_with_journal_converted);
	RUN(format3_store_with_journal_converted);
	RUN(format4_store_with_journal_converted);
	RUN(format5_merged_record_read_and_converted);
	RUN(format5_commit_record_read_and_converted);
	RUN(format7_commit_record_read_and_converted);
	RUN(format6_store_converted_without_empty_statistics);
	RUN(readonly_missing_db_is_clear);
	RUN(positions_survive_reopen);
	RUN(names_in_changing_orders_land_in_their_series);
	RUN(interleaved_dense_commit_lands_in_its_series);
	fresh_dir();
	rmdir(dir);
	return harness_done();
}
