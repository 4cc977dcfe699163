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

/* One batch of rank's emitter: a sample of step for each of NSERIES
 * names "m%03d", valued k + step. */
static size_t
make_batch(int rank, uint64_t seq, uint64_t step)
{
	wire_ident id = { 0 };
	size_t     off;
	char       name[16];

	id.incarnation = 100 + (uint64_t) rank;
	id.pid         = 1;
	id.rank        = rank;
	id.world_size  = 2;
	id.run         = "wide";
	id.run_len     = 4;
	id.host        = "h";
	id.host_len    = 1;
	off            = wire_put_batch_head(msg, &id, seq, seq, 0);
	wire_put_names_count(msg, &off, NSERIES);
	for (int k = 0; k < NSERIES; k++) {
		snprintf(name, sizeof(name), "m%03d", k);
		wire_put_name(msg, &off, name, strlen(name));
	}
	wire_put_samples_count(msg, &off, NSERIES);
	for (int k = 0; k < NSERIES; k++) {
		wire_sample w = { (uint16_t) k, step,
			1700000000000000000ll + (int64_t) step * 1000000000,
			(double) k + (double) step };
		wire_put_sample(msg, &off, &w);
	}
	return off;
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
 * A new series writes its key (series) alone: no longer the sid index
 * (sids: read by nothing since format 3) nor, since format 7, its empty
 * statistics (stats); the readers list every series, with the
 * statistics of its samples, and read its samples without them.
 */
TEST(new_series_write_no_sid_index)
{
	store *st;
	char   err[1400];
	sums   s    = { 0 };
	double want = 0;

	fresh_dir();
	ingest_steps(3);
	CHECK(entries("series") == 2 * NSERIES);
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

int
main(void)
{
	RUN(new_series_write_no_sid_index);
	RUN(statistics_written_once_counted);
	if (dir[0]) {
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd) != 0)
			printf("  could not remove %s\n", dir);
	}
	return harness_done();
}
