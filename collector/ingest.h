/*
 * ingest: the collector's write path. Applies decoded batches to the
 * store inside its write transaction (store/write.h): discards
 * duplicates by the emitter's incarnation and batch sequence, appends
 * samples to the tail block of their series, and keeps run and emitter
 * records. What is its own is that policy (deduplication, series caps)
 * and the caches (collector/cache.c); every key and record it reads or
 * writes goes through store/. Nothing is
 * acknowledged by this module: the caller acknowledges a batch only after
 * ingest_commit() succeeded.
 *
 * In-memory caches (series tails, emitter windows, runs) mirror what the
 * transaction wrote; when a transaction is aborted they are dropped and
 * reloaded from the store on demand, so an abort never leaves them ahead
 * of the disk.
 *
 * Thread rule: one thread at a time.
 */
#ifndef COLLECTOR_INGEST_H
#define COLLECTOR_INGEST_H

#include <stdint.h>

#include "store/store.h"
#include "wire/wire.h"

typedef struct ingest ingest;

typedef struct ingest_opts {
	/* Times are rounded down to a multiple of this many ns before they
	 * are stored (1: exact). */
	int64_t time_quantum_ns;
	/* Series caps: a batch naming a new series past either cap is still
	 * stored and acknowledged, but the samples of that series are refused
	 * (counted, not stored), and one "series_limit" alert is stored for
	 * the run. 0: no cap. */
	uint64_t max_series_run;   /* per run (default 100,000) */
	uint64_t max_series_total; /* in the store (default 1,000,000) */
	/* Bounds of the in-memory caches, checked after every commit: the
	 * series records cached (default 131,072), the 4 KB block encoders
	 * kept loaded (default 16,384), the emitter records cached (default
	 * 65,536). Whatever is evicted is clean (committed) and is reloaded
	 * from the store when its series or emitter shows up again. */
	size_t cache_series, cache_encoders, cache_emitters;
	/* The journal (store/journal.h): once it holds more than this many
	 * samples after a commit, its oldest records, up to this many
	 * samples, are folded into blocks (default 4,194,304; about 10
	 * bytes a sample). A larger journal folds more samples of each
	 * series at once, so a wide run rewrites each tail block less
	 * often. A journal whose widest record has more than this / 1,024
	 * series holds 1,024 samples of each, up to 4 times this
	 * (ingest.c, journal_bound). */
	uint64_t journal_samples;
	/* Also once it holds more than this many records (commits) and
	 * fewer than half of them are wide enough to merge into one
	 * (ingest_fold): a reader looks a series up in each record, so
	 * small commits (a narrow run, every 20 ms) must not pile up
	 * (default 64). */
	uint64_t journal_records;
} ingest_opts;

/* Counters since the collector started. */
typedef struct ingest_stats {
	uint64_t batches, samples, duplicates, rejected, commits;
	uint64_t series, emitters_new;
	uint64_t refused;       /* samples of series past a series cap */
	uint64_t limit_alerts;  /* series_limit alerts stored */
	uint64_t emitter_refused; /* samples emitters refused for their
	                           * name (from batch headers) */
	uint64_t evictions;     /* cache entries evicted (series,
				 * emitters) */
	uint64_t folds, folded; /* fold steps committed, samples folded */
	uint64_t merges;        /* journal merges committed */
	uint64_t counts;        /* journal count steps committed */
	uint64_t drops;         /* caches dropped with an aborted
	                         * transaction (a full map, a disk error) */
	uint64_t map_grown;     /* map growths ahead of a transaction */
} ingest_stats;

void ingest_opts_init(ingest_opts *o);

/* Returns 0 or STORE_ENOMEM. */
int  ingest_open(store *st, const ingest_opts *o, ingest **out);
void ingest_close(ingest *in);

/*
 * Begin a write transaction. The map is grown first when it may not
 * hold the transaction: a transaction that fills the map must be
 * aborted and redone after store_grow(), and the abort drops the caches
 * (a wide run's series are then all read back from the store). Returns
 * 0 or a store_err.
 */
int ingest_begin(ingest *in);

/*
 * The next transaction (ingest_begin()) may write about this many bytes
 * to the map: a group of batches that creates its series writes several
 * times its own bytes, more than the commits before it told.
 */
void ingest_expect(ingest *in, uint64_t bytes);

/*
 * Apply one batch received at now_ns (collector clock). Returns
 * WIRE_ACK_STORED, WIRE_ACK_DUPLICATE or WIRE_ACK_REJECTED (with the
 * reason in why), or the negated store_err when the transaction failed
 * (then the caller calls ingest_abort()). *is_new is set when this batch
 * is the first seen of its emitter.
 */
int ingest_batch(ingest *in, const wire_batch *b, int64_t now_ns,
    int *is_new, char *why, size_t whylen);

/*
 * Store an alert (one JSON object) of a run in the open transaction.
 * Alerts are numbered in the order they are stored. Returns 0 or a
 * store_err (then the caller calls ingest_abort()).
 */
int ingest_alert(ingest *in, const char *run, size_t runlen,
    const char *json, size_t len);

/* Commit. Returns 0 or a store_err; on failure the transaction is
 * aborted and the caches dropped. */
int ingest_commit(ingest *in);

/* Abort the transaction and drop the caches. */
void ingest_abort(ingest *in);

/*
 * Fold the journal into blocks (no transaction open), one bounded step
 * per transaction: while it holds more than opts.journal_samples samples
 * or opts.journal_records records (all: until it is empty). A wide
 * journal is counted in the series' statistics at that bound and
 * folded at 4 times it (store_journal_count; docs/storage.md,
 * "Counting before folding").
 * ingest_commit() does this itself after each commit; call it with all
 * set to INGEST_FOLD_ALL to leave a store fully folded, INGEST_COUNT_ALL
 * to count every record (none folded). Returns 0 or a store_err (what
 * was folded before stays folded).
 */
#define INGEST_FOLD_ALL 1
#define INGEST_COUNT_ALL 2
int ingest_fold(ingest *in, int all);

void ingest_get_stats(const ingest *in, ingest_stats *out);

/*
 * A line worth logging about the last commit (a series cap reached), or
 * NULL. Borrowed: valid until the next call on in; reading clears it.
 */
const char *ingest_notice(ingest *in);

#endif /* COLLECTOR_INGEST_H */
