/*
 * scan: the read side of the store. Lists runs, series, emitters (and
 * the ranks they make up) and alerts, and reads one series in step order
 * over a step range. Every function takes the store and a transaction
 * begun on it (store_read_begin(), or the writer's own); results
 * borrowed from it are valid until it ends (store_read_end()). Failures
 * are described by store_errmsg(st).
 */
#ifndef STORE_SCAN_H
#define STORE_SCAN_H

#include "store/store.h"

/* One series as listed: names point into the transaction's memory. */
typedef struct scan_series {
	const char *run;
	size_t      runlen;
	const char *metric;
	size_t      mlen;
	int32_t     rank;
	series_rec  rec;
} scan_series;

/* Callbacks return 0 to go on, non-zero to stop (returned by the scan). */
typedef int (*scan_series_fn)(void *ctx, const scan_series *s);
typedef int (*scan_run_fn)(void *ctx, const char *run, size_t runlen,
    const run_rec *r);
typedef int (*scan_emitter_fn)(void *ctx, const char *run, size_t runlen,
    const emitter_rec *r);
typedef int (*scan_sample_fn)(
    void *ctx, uint64_t step, int64_t time_ns, double value);

/* Every run, in name order. */
int scan_runs(store *st, store_txn *txn, scan_run_fn fn, void *ctx);

/* One run's record: 0, or STORE_ENOTFOUND. */
int scan_run_get(store *st, store_txn *txn, const char *run, run_rec *out);

/* Samples of a run refused by a series cap (0 if none). Returns 0 or a
 * store_err. */
int scan_refused_get(store *st, store_txn *txn, const char *run, size_t runlen,
    uint64_t *out);

/*
 * One rank of a run: its incarnations (one per process start) in start
 * order, so inc[n - 1] is its latest. Borrowed: valid during the
 * callback.
 */
typedef struct scan_rank {
	int32_t                   rank;
	size_t                    n; /* at least 1 */
	const emitter_rec *const *inc;
} scan_rank;
typedef int (*scan_rank_fn)(void *ctx, const scan_rank *r);

/* The ranks of one run (not NULL), in rank order. Ties in start time go to the later incarnation key. Returns 0,
 * the callback's non-zero value, or a store_err. */
int scan_ranks(store *st, store_txn *txn, const char *run, scan_rank_fn fn,
    void *ctx);

/* Whether the run is finished: it has emitters, and the latest
 * incarnation (scan_ranks) of each of its ranks ended normally (a
 * FINAL batch). Returns 0 or a store_err. */
int scan_run_finished(store *st, store_txn *txn, const char *run, int *out);

/* The series of one run (run == NULL: of every run), sorted by metric
 * then rank. */
int scan_series_of(
    store *st, store_txn *txn, const char *run, scan_series_fn fn, void *ctx);

/* The series of one metric of one run, by rank: one key range. */
int scan_series_metric(store *st, store_txn *txn, const char *run,
    const char *metric, scan_series_fn fn, void *ctx);

/* The emitters (incarnations) of one run, or of all runs if run is NULL. */
int scan_emitters(
    store *st, store_txn *txn, const char *run, scan_emitter_fn fn, void *ctx);

/* Alerts of one run (or all runs if run is NULL) in the order they were
 * raised; json is one JSON object (not NUL-terminated), seq numbers the
 * alert within the store. */
typedef int (*scan_alert_fn)(void *ctx, const char *run, size_t runlen,
    uint64_t seq, const char *json, size_t len);
int scan_alerts(store *st, store_txn *txn, const char *run, uint64_t after_seq,
    scan_alert_fn fn, void *ctx);

/*
 * Every sample of series sid with from <= step <= to, in step order,
 * whether it is in a block or still in the journal (read as the fold will
 * store it, so the answer does not change when it is folded). Where
 * a restart made blocks overlap, their samples are merged by step (equal
 * steps in the order they were stored). Returns 0, the callback's
 * non-zero value, or a store_err (STORE_ECORRUPT names the block in
 * st->err).
 */
int scan_samples(store *st, store_txn *txn, uint32_t sid, uint64_t from,
    uint64_t to, scan_sample_fn fn, void *ctx);

/*
 * Reading many series near the head of a run: scan_samples looks each
 * series up in every journal record, so reading them all costs records
 * x series. scan_journal_load reads the journal once for the series
 * sids (n of them, any order, repeats allowed), in txn, into j (what j
 * held before is dropped; its memory is kept for the next load);
 * scan_samples_arrived then reads a series in the same txn without the
 * lookups. A series not loaded is looked up (also after a failed
 * load). j holds the loaded series' journal samples (24
 * bytes each); one thread at a time. scan_journal_new: an empty one,
 * caller frees with scan_journal_free (NULL is a no-op). Return 0 or a
 * store_err.
 */
typedef struct scan_journal scan_journal;
int  scan_journal_new(scan_journal **out);
int  scan_journal_load(store *st, store_txn *txn, scan_journal *j,
     const uint32_t *sids, size_t n);
void scan_journal_free(scan_journal *j);

/*
 * Every sample of series sid in the order it was stored, less the first
 * skip: its blocks by block number (a block is appended to in arrival
 * order; a new one is numbered one past the highest), then its samples
 * still in the journal, in record order. A reader that keeps how many
 * samples of a series it has handled reads what came since, whatever
 * their steps and times: a batch resent after newer ones were stored, a
 * spool sent after the run went on. Blocks within the skip are passed
 * over by their header. j: its journal samples read once
 * (scan_journal_load, above), or NULL: looked up. Returns
 * 0, the callback's non-zero value or a store_err.
 */
int scan_samples_arrived(store *st, store_txn *txn, const scan_journal *j,
    uint32_t sid, uint64_t skip, scan_sample_fn fn, void *ctx);

/* Space used by the data: pages in use times page size, and the entries
 * and bytes of the blocks database. */
typedef struct scan_usage {
	uint64_t used_bytes;  /* pages in use (all databases) */
	uint64_t file_bytes;  /* size of data.mdb */
	uint64_t blocks;
	uint64_t block_bytes; /* bytes of encoded blocks */
	uint64_t journal_records; /* records not yet folded into blocks */
} scan_usage;
int scan_usage_get(store *st, store_txn *txn, scan_usage *out);

#endif /* STORE_SCAN_H */
