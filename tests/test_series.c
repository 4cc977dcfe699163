/*
 * Unit tests of series creation through ingest (collector/ingest.c,
 * store_put_new_series): what a new series writes to the store, and that
 * readers find every series and its samples from that alone.
 */
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/ingest.h"
#include "store/scan.h"
#include "store/write.h"
#include "tests/harness.h"
#include "wire/wire.h"

#define NSERIES 300

static char    dir[64];
static uint8_t msg[1 << 16];

static void
fresh_dir(void)
{
	harness_fresh_dir(dir, sizeof(dir), "vitals-test-series");
}

/* One batch of rank's emitter (incarnation inc) in run of world_size
 * ranks: a sample of step for each of nnames names "m%03d", valued
 * base + k + step. Returns its size in msg. */
static size_t
rank_batch(const char *run, int world_size, uint64_t inc, int rank, int nnames,
    double base, uint64_t seq, uint64_t step)
{
	wire_ident id = { 0 };
	size_t     off;
	char       name[16];

	id.incarnation = inc;
	id.pid         = 1;
	id.rank        = rank;
	id.world_size  = world_size;
	id.run         = run;
	id.run_len     = strlen(run);
	id.host        = "h";
	id.host_len    = 1;
	off            = wire_put_batch_head(msg, &id, seq, seq, 0);
	wire_put_names_count(msg, &off, (uint32_t) nnames);
	for (int k = 0; k < nnames; k++) {
		snprintf(name, sizeof(name), "m%03d", k);
		wire_put_name(msg, &off, name, strlen(name));
	}
	wire_put_samples_count(msg, &off, (uint32_t) nnames);
	for (int k = 0; k < nnames; k++) {
		wire_sample w = { (uint16_t) k, step,
			1700000000000000000ll + (int64_t) step * 1000000000,
			base + k + (double) step };
		wire_put_sample(msg, &off, &w);
	}
	return off;
}

/* One batch of run "wide" (2 ranks, NSERIES names, valued k + step). */
static size_t
make_batch(int rank, uint64_t seq, uint64_t step)
{
	return rank_batch(
	    "wide", 2, 100 + (uint64_t) rank, rank, NSERIES, 0, seq, step);
}

/* Ingest and commit the batches of ranks 0 and 1 for steps [0, steps),
 * then, when all is not 0, ingest_fold(in, all). */
static void
ingest_fold_steps(uint64_t steps, int all)
{
	store     *st;
	ingest    *in;
	wire_batch b;
	char       err[1400], why[200];
	int        is_new;

	if (store_open(dir, 0, &st, err, sizeof(err)) != 0) {
		printf("  %s\n", err);
		abort();
	}
	if (ingest_open(st, NULL, &in) != 0)
		abort();
	for (uint64_t s = 0; s < steps; s++) {
		REQUIRE(ingest_begin(in) == 0);
		for (int r = 0; r < 2; r++) {
			size_t n = make_batch(r, s + 1, s);

			REQUIRE(wire_batch_decode(msg, n, &b, err, sizeof(err))
			    == 0);
			CHECK(
			    ingest_batch(in, &b, 1, &is_new, why, sizeof(why))
			    == WIRE_ACK_STORED);
		}
		REQUIRE(ingest_commit(in) == 0);
	}
	if (all != 0)
		CHECK(ingest_fold(in, all) == 0);
	ingest_close(in);
	store_close(st);
}

static void
ingest_steps(uint64_t steps)
{
	ingest_fold_steps(steps, 0);
}

/* Entries of database name in the test's store (-1: no such database). */
static long
entries(const char *name)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi  dbi;
	MDB_stat ms;
	long     n = -1;

	if (mdb_env_create(&env) != 0 || mdb_env_set_maxdbs(env, 16) != 0
	    || mdb_env_open(env, dir, MDB_RDONLY, 0600) != 0)
		abort();
	if (mdb_txn_begin(env, NULL, MDB_RDONLY, &txn) != 0)
		abort();
	if (mdb_dbi_open(txn, name, 0, &dbi) == 0
	    && mdb_stat(txn, dbi, &ms) == 0)
		n = (long) ms.ms_entries;
	mdb_txn_abort(txn);
	mdb_env_close(env);
	return n;
}

typedef struct sums {
	long       series;
	uint64_t   samples;
	double     total;
	store     *st;
	store_txn *txn;
} sums;

static int
add_sample(void *ctx, uint64_t step, int64_t t, double v)
{
	sums *s = ctx;

	(void) step;
	(void) t;
	s->samples++;
	s->total += v;
	return 0;
}

static int
add_series(void *ctx, const scan_series *ss)
{
	sums *s = ctx;

	s->series++;
	return scan_samples(
	    s->st, s->txn, ss->rec.sid, 0, UINT64_MAX, add_sample, s);
}

/*
 * A new series writes its key alone (format 7: in metrics, its run and
 * metric the key and its rank and sid a duplicate of it; series stays
 * empty): no longer the sid index (sids: read by nothing since format
 * 3) nor, since format 7, its empty statistics (stats); the readers
 * list every series, with the statistics of its samples, and read its
 * samples without them.
 */
TEST(new_series_write_no_sid_index)
{
	store *st;
	char   err[1400];
	sums   s    = { 0 };
	double want = 0;

	fresh_dir();
	ingest_steps(3);
	CHECK(entries("series") == 0);
	CHECK(entries("metrics") == 2 * NSERIES);
	CHECK(entries("stats") == 0);
	CHECK(entries("sids") <= 0);
	REQUIRE(store_open(dir, STORE_RDONLY, &st, err, sizeof(err)) == 0);
	REQUIRE(store_read_begin(st, &s.txn) == 0);
	s.st = st;
	CHECK(scan_series_of(st, s.txn, "wide", add_series, &s) == 0);
	store_read_end(s.txn);
	store_close(st);
	for (int k = 0; k < NSERIES; k++)
		for (int step = 0; step < 3; step++)
			want += 2 * ((double) k + step);
	CHECK(s.series == 2 * NSERIES);
	CHECK(s.samples == 2 * 3 * NSERIES);
	CHECK(s.total == want);
}

/* What a listing says of a series: its samples and steps (list_one). */
typedef struct listed {
	long     series, right;
	uint64_t samples;
} listed;

static int
list_one(void *ctx, const scan_series *ss)
{
	listed *l = ctx;
	int     k;

	l->series++;
	l->samples += ss->rec.samples;
	/* "m%03d": its value at the last step, 2, is k + 2. */
	k = ss->mlen == 4 ? (ss->metric[1] - '0') * 100
	        + (ss->metric[2] - '0') * 10 + (ss->metric[3] - '0')
	                  : -1;
	l->right += ss->rec.samples == 3 && ss->rec.first_step == 0
	    && ss->rec.last_step == 2 && ss->rec.last_value == k + 2.0;
	return 0;
}

/* The listing of run "wide" in the test's store. */
static void
list_wide(listed *l)
{
	store     *st;
	store_txn *txn;
	char       err[1400];

	memset(l, 0, sizeof(*l));
	REQUIRE(store_open(dir, STORE_RDONLY, &st, err, sizeof(err)) == 0);
	REQUIRE(store_read_begin(st, &txn) == 0);
	CHECK(scan_series_of(st, txn, "wide", list_one, l) == 0);
	store_read_end(txn);
	store_close(st);
}

/*
 * Format 7: a series' statistics are written once samples are counted
 * in them, by a fold or a count (each series in sid order, so into
 * empty stats as appends), and a listing says the same before and
 * after: from the journal alone, then from stats.
 */
TEST(statistics_written_once_counted)
{
	listed l;

	for (int all = INGEST_FOLD_ALL; all <= INGEST_COUNT_ALL; all++) {
		fresh_dir();
		ingest_steps(3);
		CHECK(entries("stats") == 0);
		list_wide(&l);
		CHECK(l.series == 2 * NSERIES && l.right == 2 * NSERIES);
		CHECK(l.samples == 2 * 3 * NSERIES);
		ingest_fold_steps(0, all);
		CHECK(entries("stats") == 2 * NSERIES);
		list_wide(&l);
		CHECK(l.series == 2 * NSERIES && l.right == 2 * NSERIES);
		CHECK(l.samples == 2 * 3 * NSERIES);
	}
}

/* Steps [from, to) of ranks [first, ranks) with nnames names each, a commit
 * a step, by a collector opened for them (a new one finds the series
 * in the store, not in its cache). */
static void
ingest_ranks(int first, int ranks, int nnames, uint64_t from, uint64_t to)
{
	store     *st;
	ingest    *in;
	wire_batch b;
	char       err[1400], why[200];
	int        is_new;

	REQUIRE(store_open(dir, 0, &st, err, sizeof(err)) == 0);
	REQUIRE(ingest_open(st, NULL, &in) == 0);
	for (uint64_t s = from; s < to; s++) {
		REQUIRE(ingest_begin(in) == 0);
		for (int r = first; r < ranks; r++) {
			size_t n
			    = rank_batch("many", 1000, 1000 + (uint64_t) r, r,
			        nnames, r * 1000.0, s + 1, s);

			REQUIRE(wire_batch_decode(msg, n, &b, err, sizeof(err))
			    == 0);
			CHECK(
			    ingest_batch(in, &b, 1, &is_new, why, sizeof(why))
			    == WIRE_ACK_STORED);
		}
		REQUIRE(ingest_commit(in) == 0);
	}
	ingest_close(in);
	store_close(st);
}

/* What listing one metric says: its series in order of rank, each with
 * its samples read back as sent (steps [0, steps)). */
typedef struct by_rank {
	store     *st;
	store_txn *txn;
	int        metric, next_rank, steps;
	long       right, series;
} by_rank;

static int
rank_sample(void *ctx, uint64_t step, int64_t t, double v)
{
	by_rank *b = ctx;

	(void) t;
	b->right
	    += v == (b->next_rank - 1) * 1000.0 + b->metric + (double) step;
	return 0;
}

static int
rank_series(void *ctx, const scan_series *ss)
{
	by_rank *b    = ctx;
	long     was  = b->right;
	int      good = ss->rank == b->next_rank && ss->mlen == 4
	    && ss->rec.samples == (uint64_t) b->steps
	    && ss->rec.last_value
	        == b->next_rank * 1000.0 + b->metric + (b->steps - 1);

	b->series++;
	b->next_rank++;
	if (scan_samples(
	        b->st, b->txn, ss->rec.sid, 0, UINT64_MAX, rank_sample, b)
	    != 0)
		return -1;
	b->right = was + (good && b->right - was == b->steps);
	return 0;
}

/*
 * Format 7's series index by metric: a metric logged by many ranks is
 * one entry, its ranks' series duplicates of it (past about 250 ranks
 * LMDB keeps them in a tree of their own). Listing a metric gives its
 * ranks in order with their samples, and a collector started again
 * finds each rank's series in the store (no new series), and a new
 * one for a rank of the metric that is not there yet, before the
 * others or after them.
 */
TEST(ranks_of_a_metric_share_one_entry)
{
	store     *st;
	store_txn *txn;
	char       err[1400];
	uint32_t   next = 0;
	by_rank    b;

	fresh_dir();
	ingest_ranks(1, 300, 3, 0, 2);
	CHECK(entries("metrics") == 897);
	ingest_ranks(0, 301, 3, 2, 4); /* ranks 0 and 300 are new */
	CHECK(entries("metrics") == 903);
	CHECK(entries("series") == 0);
	REQUIRE(store_open(dir, STORE_RDONLY, &st, err, sizeof(err)) == 0);
	REQUIRE(store_read_begin(st, &txn) == 0);
	for (int m = 0; m < 3; m++) {
		char name[8];

		memset(&b, 0, sizeof(b));
		b.st = st, b.txn = txn, b.metric = m, b.steps = 4;
		snprintf(name, sizeof(name), "m%03d", m);
		CHECK(
		    scan_series_metric(st, txn, "many", name, rank_series, &b)
		    == 0);
		CHECK_EQ_INT(b.series, 301);
		CHECK_EQ_INT(b.right, 299); /* 0 and 300: steps 2 and 3 */
	}
	store_read_end(txn);
	store_close(st);
	REQUIRE(store_open(dir, 0, &st, err, sizeof(err)) == 0);
	{
		store_txn *t;

		REQUIRE(store_write_begin(st, &t) == 0);
		CHECK(store_next_sid(t, &next) == 0);
		store_abort(t);
	}
	store_close(st);
	CHECK_EQ_INT(next, 1 + 903);
}

int
main(void)
{
	RUN(new_series_write_no_sid_index);
	RUN(statistics_written_once_counted);
	RUN(ranks_of_a_metric_share_one_entry);
	if (dir[0]) {
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd) != 0)
			printf("  could not remove %s\n", dir);
	}
	return harness_done();
}
