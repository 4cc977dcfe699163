/*
 * journal: the append-only head of the sample store. Each commit of the
 * collector appends the samples it brings as one record (grouped by
 * series, in arrival order within a series) in the same transaction as
 * its dedup windows, so a commit costs the samples it brings, not the
 * number of series it touches. The fold moves the oldest records into
 * the per-series blocks (store/block.h) with the rules ingest always
 * used, and deletes them in the same transaction; readers (scan_samples)
 * merge a series' blocks with its samples still in the journal, so they
 * see the same samples in the same order before and after a fold.
 * docs/storage.md, "The journal", describes the record and the
 * invariants.
 *
 * Thread rule: as store/write.h (the writer's transaction only).
 */
#ifndef STORE_JOURNAL_H
#define STORE_JOURNAL_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

/* One sample as the journal keeps it (exact: the block codec is
 * lossless, so nothing changes when it is folded). */
typedef struct store_sample {
	uint64_t step;
	int64_t  time_ns;
	double   value;
} store_sample;

/* The samples of one series in a record: n samples, consecutive in the
 * sample array passed with the groups. */
typedef struct store_group {
	uint32_t sid;
	uint32_t n;
} store_group;

/*
 * Append one record to the journal in the write transaction t: ng
 * groups in strictly ascending sid order, each n > 0, and their samples
 * in s (group after group, each in arrival order). Returns 0 or a
 * store_err (STORE_ECORRUPT if the groups are not in order).
 */
int store_journal_put(
    store_txn *t, const store_group *g, size_t ng, const store_sample *s);

/* Records and samples in the journal as t sees it. Returns 0 or a
 * store_err. */
int store_journal_stat(store_txn *t, uint64_t *records, uint64_t *samples);

/* The most groups (series) of one record in the journal as t sees it
 * (0 when it is empty): how wide the run that wrote it is. Kept with
 * the journal's counters (read again after a fold). Returns 0 or a
 * store_err. */
int store_journal_widest(store_txn *t, uint64_t *groups);

/*
 * One fold step in the write transaction t: the oldest records (at
 * least one, then as many as keep the step within max_samples) are
 * appended to their series' blocks and deleted. *folded: samples moved
 * (0: the journal was empty). Commit t to keep it; an abort keeps the
 * records as they were. Returns 0 or a store_err.
 */
int store_fold(store_txn *t, uint64_t max_samples, uint64_t *folded);

/*
 * Count the oldest records not yet counted (at least one, then as many
 * as keep within max_samples) in their series' statistics, in the write
 * transaction t, without folding them (format 5): each series' samples
 * in them are added to its statistics (unless its jseen is past them)
 * and its jseen moves to the last record counted, which meta
 * journal_counted then names. Listings then read only the records after
 * journal_counted; the records stay where they are, read as before,
 * until a fold moves them into blocks (and leaves counted statistics as
 * they are). A merge never takes a counted record. *counted: samples
 * counted (0: none left). Returns 0 or a store_err.
 */
int store_journal_count(
    store_txn *t, uint64_t max_samples, uint64_t *counted);

/* Records and samples in the journal after the last counted record. */
int store_journal_uncounted(
    store_txn *t, uint64_t *records, uint64_t *samples);

/*
 * Merge the newest records written by commits (those after the newest
 * merged record and the newest of fewer than min_samples samples), if
 * there are at least min_fresh of them (and 2): the oldest of them, as
 * many as hold at most max_samples samples (2 at least), into one
 * record numbered as the newest of those, in the write transaction t: each
 * series' samples in the order they arrived, so readers read the same before
 * and after. Its groups are coded with the block code (format 6: about 3.5
 * bytes a realistic sample). Memory: the merged record (at most 31 bytes a
 * sample, or 4 KB a group) and a block encoder. *merged: the records merged
 * (0: none). Commit t to keep it.
 * Returns 0 or a store_err.
 */
int store_journal_merge(store_txn *t, uint64_t min_fresh, uint64_t min_samples,
    uint64_t max_samples, uint64_t *merged);

/*
 * Readers: the journal samples of the series sids (n of them, strictly
 * ascending), in one pass over the records as t sees them, oldest
 * first. For each group of a wanted series fn says where its n samples
 * go (room for n), or NULL to skip them; they are decoded there before
 * fn is called again (or this returns). A series' groups come in
 * arrival order, as scan_samples reads them. Returns 0 or a store_err.
 */
typedef store_sample *(*store_journal_group_fn)(
    void *ctx, uint32_t sid, size_t n);
int store_journal_groups(store_txn *t, const uint32_t *sids, size_t n,
    store_journal_group_fn fn, void *ctx);

/*
 * Readers: add the journal samples of the series of recs (n of them,
 * their sids strictly ascending) to their statistics (store_series_add's
 * rules, each series' groups in arrival order, as scan_samples reads
 * them), in one pass over the records as t sees them, oldest first,
 * decoding each sample into the statistics alone. The statistics are
 * read and written in the order of the records' groups, so keep them
 * together in sid order (an array of pointers into a listing in key
 * order made most of a wide listing's time cache misses). Returns 0 or
 * a store_err.
 */
int store_journal_add_stats(store_txn *t, series_rec *recs, size_t n);

#endif /* STORE_JOURNAL_H */
