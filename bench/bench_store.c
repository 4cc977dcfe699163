/*
 * bench_store: the storage side, measured against LMDB itself in the same
 * run on the same disk.
 *
 *	bench_store [DIR]
 *
 * 1. size: realistic training series (4 ranks x 6 metrics x 100,000 steps,
 *    float32-precision values, steps 0.5 s apart with 1% jitter) ingested
 *    in groups as vitalsd does; bytes per sample on disk.
 * 2. ingest: the collector's write path without the network (decode,
 *    dedup, encode, commit with fsync), samples/s.
 * 3. LMDB ceilings, same disk, same commit cadence: (a) the same blocks
 *    (same key and value sizes) put raw; (b) one entry per sample
 *    (16-byte key, 8-byte value) appended raw. These call LMDB directly,
 *    bypassing store/, since they measure what LMDB alone can do.
 * 4. read: one 1,000,000-sample series scanned in step order, samples/s
 *    (decoding only, no formatting).
 */
#include <lmdb.h> /* the ceilings below put raw LMDB on purpose: the
                   * only LMDB calls outside store/ */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "collector/ingest.h"
#include "store/block.h"
#include "store/scan.h"
#include "store/store.h"
#include "bench/clock.h"
#include "bench/realistic.h"
#include "wire/wire.h"

#define RANKS 4
#define METRICS REAL_METRICS
#define STEPS 100000
#define BATCH_STEPS 512 /* steps per batch: ~a batch of an emitter */
#define GROUP 32        /* batches per transaction */

static real_gen gens[RANKS + 1];

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint8_t msg[BATCH_STEPS * METRICS * WIRE_SAMPLE_SIZE + 4096];

/* Build the batch of one rank for steps [s0, s0 + BATCH_STEPS). */
static size_t
build(int rank, uint64_t seq, uint64_t s0)
{
	wire_ident id = { 0 };
	size_t     off;

	id.incarnation = 1000 + (uint64_t) rank;
	id.rank        = rank;
	id.world_size  = RANKS;
	id.run         = "bench";
	id.run_len     = 5;
	id.host        = "node0";
	id.host_len    = 5;
	off            = wire_put_batch_head(msg, &id, seq, seq, 0);
	wire_put_names_count(msg, &off, METRICS);
	for (int m = 0; m < METRICS; m++)
		wire_put_name(
		    msg, &off, real_names[m], strlen(real_names[m]));
	wire_put_samples_count(msg, &off, BATCH_STEPS * METRICS);
	for (uint64_t s = s0; s < s0 + BATCH_STEPS; s++) {
		int64_t t = real_step(&gens[rank]);

		for (int m = 0; m < METRICS; m++) {
			wire_sample w = { (uint16_t) m, s, t + m * 1500,
				real_value(&gens[rank], m, s) };
			wire_put_sample(msg, &off, &w);
		}
	}
	return off;
}

static int
sum_cb(void *ctx, uint64_t step, int64_t t, double v)
{
	double *acc = ctx;

	(void) step;
	(void) t;
	*acc += v;
	return 0;
}

typedef struct first_series {
	uint32_t sid;
	uint64_t samples;
} first_series;

static int
pick(void *ctx, const scan_series *s)
{
	first_series *f = ctx;

	if (f->sid == 0 && s->rec.samples >= 1000000) {
		f->sid     = s->rec.sid;
		f->samples = s->rec.samples;
	}
	return 0;
}

static int
open_env(const char *dir, MDB_env **env, MDB_dbi *dbi)
{
	MDB_txn *txn;
	char     cmd[1200];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir -p '%s'", dir, dir);
	if (system(cmd) != 0)
		return -1;
	mdb_env_create(env);
	mdb_env_set_mapsize(*env, (size_t) 4 << 30);
	if (mdb_env_open(*env, dir, 0, 0600) != 0)
		return -1;
	mdb_txn_begin(*env, NULL, 0, &txn);
	mdb_dbi_open(txn, NULL, 0, dbi);
	return mdb_txn_commit(txn);
}

/* Raw LMDB: put the given number of values of the given size under
 * 16-byte sequential keys, per_txn per transaction, fsync on commit. */
static double
lmdb_raw(const char *dir, uint64_t n, size_t vsize, uint64_t per_txn,
    unsigned flags)
{
	MDB_env *env;
	MDB_dbi  dbi;
	MDB_txn *txn = NULL;
	uint8_t  key[16], *val = calloc(1, vsize);
	double   t0;

	if (val == NULL || open_env(dir, &env, &dbi) != 0)
		return 0;
	for (size_t i = 0; i < vsize; i++)
		val[i] = (uint8_t) (i * 131);
	t0 = now_s();
	for (uint64_t i = 0; i < n; i++) {
		MDB_val k = { 16, key }, v = { vsize, val };

		if (txn == NULL)
			mdb_txn_begin(env, NULL, 0, &txn);
		store_block_key(key, (uint32_t) (i % 24) + 1, i, 0);
		if (flags & MDB_APPEND)
			store_block_key(key, 1, i, 0);
		mdb_put(txn, dbi, &k, &v, flags);
		if ((i + 1) % per_txn == 0) {
			mdb_txn_commit(txn);
			txn = NULL;
		}
	}
	if (txn != NULL)
		mdb_txn_commit(txn);
	t0 = now_s() - t0;
	mdb_env_close(env);
	free(val);
	return t0;
}

int
main(int argc, char **argv)
{
	const char  *base = argc > 1 ? argv[1] : "/tmp/vitals-bench-store";
	char         dir[1024], err[1400], cmd[1200];
	store       *st;
	ingest      *in;
	ingest_opts  io;
	store_txn   *txn;
	scan_usage   u;
	first_series f = { 0, 0 };
	uint64_t     total = (uint64_t) RANKS * METRICS * STEPS, seq = 0;
	double       cpu0, ingest_s = 0, t0, best = 1e9, acc = 0;
	uint64_t     commits = 0;

	snprintf(dir, sizeof(dir), "%s/vitals", base);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir -p '%s'", base, base);
	if (system(cmd) != 0)
		return 1;
	/* Times to the millisecond, as vitalsd stores them by default. */
	ingest_opts_init(&io);
	io.time_quantum_ns = 1000000;
	if (store_open(dir, 0, &st, err, sizeof(err)) != 0 ||
	    ingest_open(st, &io, &in) != 0) {
		fprintf(stderr, "bench_store: %s\n", err);
		return 1;
	}
	/* A map large enough that no commit has to be redone (the journal
	 * holds the samples until they are folded): growing it is not what
	 * is measured. */
	while (store_map_size(st) < ((uint64_t) 1 << 30))
		if (store_grow(st) != 0)
			return 1;
	for (int r = 0; r <= RANKS; r++)
		real_init(&gens[r], r, STEPS, 1700000000000000000ll);
	/* Groups of GROUP batches per transaction, as vitalsd commits. */
	cpu0 = cpu_s();
	for (uint64_t s0 = 0; s0 < STEPS; s0 += BATCH_STEPS * GROUP / RANKS) {
		wire_batch b;
		char       why[200];
		int        is_new, rc;
		size_t     n;
		double     a;

		if (ingest_begin(in) != 0)
			return 1;
		for (uint64_t k = s0; k < s0 + BATCH_STEPS * GROUP / RANKS &&
		     k < STEPS;
		     k += BATCH_STEPS) {
			seq++;
			for (int r = 0; r < RANKS; r++) {
				n = build(r, seq, k);
				a = now_s();
				wire_batch_decode(msg, n, &b, why, sizeof(why));
				rc = ingest_batch(in, &b, 0, &is_new, why,
				    sizeof(why));
				ingest_s += now_s() - a;
				if (rc == -STORE_EMAPFULL) {
					ingest_abort(in);
					store_grow(st);
					fprintf(stderr, "bench_store: map "
							"grown mid-run; "
							"rerun\n");
					return 1;
				}
			}
		}
		a  = now_s();
		rc = ingest_commit(in);
		if (rc == STORE_EMAPFULL) {
			store_grow(st);
			fprintf(stderr, "bench_store: map full\n");
			return 1;
		}
		ingest_s += now_s() - a;
		commits++;
	}
	/* Ingest includes folding the journal into blocks; the size is
	 * that of the folded store. */
	{
		double a = now_s();

		if (ingest_fold(in, 1) != 0) {
			fprintf(stderr, "bench_store: %s\n", store_errmsg(st));
			return 1;
		}
		ingest_s += now_s() - a;
	}
	cpu0 = cpu_s() - cpu0;
	ingest_close(in);

	store_read_begin(st, &txn);
	scan_usage_get(st, txn, &u);
	printf("size: %llu samples (4 ranks x 6 metrics x 100000 steps, "
	       "float32-precision values, 0.5 s steps with 1%% jitter)\n",
	    (unsigned long long) total);
	printf("size: %.2f bytes/sample in LMDB pages in use, %.2f in "
	       "encoded blocks, %.2f in data.mdb (incl. free pages)\n",
	    (double) u.used_bytes / (double) total,
	    (double) u.block_bytes / (double) total,
	    (double) u.file_bytes / (double) total);
	printf("ingest (no network, fsync per commit, %llu commits): %.2f M "
	       "samples/s\n",
	    (unsigned long long) commits, (double) total / ingest_s / 1e6);
	printf("ingest CPU: %.3f us per sample (this process, user + system, "
	       "building the batches included)\n",
	    cpu0 / (double) total * 1e6);

	/* LMDB ceilings with the same cadence and the same sizes. */
	{
		uint64_t nb  = u.blocks;
		double   spb = (double) total / (double) nb;
		double   raw_blocks, raw_entries;
		char     d2[1100];

		/* Each commit rewrites about one tail block per series
		 * touched plus the blocks filled since the last commit. */
		snprintf(d2, sizeof(d2), "%s/lmdb-raw", base);
		raw_blocks = lmdb_raw(d2, nb, 4080,
		    nb / commits > 0 ? nb / commits : 1, 0);
		printf("lmdb raw, same blocks (%llu x 4080 B, %llu per "
		       "commit): %.2f M samples/s equivalent\n",
		    (unsigned long long) nb,
		    (unsigned long long) (nb / commits),
		    spb * (double) nb / raw_blocks / 1e6);
		raw_entries = lmdb_raw(d2, total, 8, total / commits,
		    MDB_APPEND);
		printf("lmdb raw, one entry per sample (16 B key, 8 B value, "
		       "append, %llu per commit): %.2f M samples/s\n",
		    (unsigned long long) (total / commits),
		    (double) total / raw_entries / 1e6);
		printf("ingest / lmdb raw same blocks: %.0f%%; ingest / lmdb "
		       "one entry per sample: %.0f%%\n",
		    100.0 * ((double) total / ingest_s) /
			(spb * (double) nb / raw_blocks),
		    100.0 * ((double) total / ingest_s) /
			((double) total / raw_entries));
	}
	store_read_end(txn);
	store_close(st);

	/* Read: a 1,000,000-sample series. */
	snprintf(dir, sizeof(dir), "%s/read", base);
	if (store_open(dir, 0, &st, err, sizeof(err)) != 0 ||
	    ingest_open(st, NULL, &in) != 0)
		return 1;
	{
		int64_t tt = 1700000000000000000ll;

		seq = 0;
		for (uint64_t s0 = 0; s0 < 1000000; s0 += BATCH_STEPS) {
			wire_batch b;
			char       why[200];
			int        is_new;
			wire_ident id = { 0 };
			size_t     off;

			id.incarnation = 7;
			id.run         = "read";
			id.run_len     = 4;
			id.host        = "h";
			id.host_len    = 1;
			seq++;
			off = wire_put_batch_head(msg, &id, seq, seq, 0);
			wire_put_names_count(msg, &off, 1);
			wire_put_name(msg, &off, "loss", 4);
			wire_put_samples_count(msg, &off, BATCH_STEPS);
			for (uint64_t s = s0; s < s0 + BATCH_STEPS; s++) {
				wire_sample w = { 0, s, tt += 500000000,
					real_value(&gens[RANKS], 0, s) };
				wire_put_sample(msg, &off, &w);
			}
			wire_batch_decode(msg, off, &b, why, sizeof(why));
			for (int tries = 0; tries < 2; tries++) {
				int rc;

				ingest_begin(in);
				rc = ingest_batch(in, &b, 0, &is_new, why,
				    sizeof(why));
				if (rc < 0) {
					ingest_abort(in);
					store_grow(st);
					continue;
				}
				if (ingest_commit(in) == STORE_EMAPFULL) {
					store_grow(st);
					continue;
				}
				break;
			}
		}
	}
	ingest_fold(in, 1);
	ingest_close(in);
	store_read_begin(st, &txn);
	scan_series_of(st, txn, "read", pick, &f);
	for (int rep = 0; rep < 5; rep++) {
		t0 = now_s();
		scan_samples(st, txn, f.sid, 0, UINT64_MAX, sum_cb, &acc);
		t0 = now_s() - t0;
		if (t0 < best)
			best = t0;
	}
	printf("read: one series of %llu samples in step order: %.1f M "
	       "samples/s (best of 5; checksum %.3f)\n",
	    (unsigned long long) f.samples, (double) f.samples / best / 1e6,
	    acc);
	store_read_end(txn);
	store_close(st);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	return system(cmd) != 0;
}
