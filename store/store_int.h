/*
 * store_int: what the files of store/ share and nobody else sees: the
 * LMDB handles behind the opaque store and store_txn, the record
 * encodings and the meta keys. Included by the .c files of store/ only;
 * everything above store/ goes through store.h, write.h and scan.h.
 */
#ifndef STORE_STORE_INT_H
#define STORE_STORE_INT_H

#include <lmdb.h>
#include <pthread.h>

#include "store/block.h"
#include "store/journal.h"
#include "store/store.h"

struct store {
	MDB_env *env;
	MDB_dbi  meta;    /* "format" -> u32; "next_sid" -> u32;
	                   * "next_alert" -> u64; "refused:" run -> u64 */
	MDB_dbi series;   /* series key -> series record */
	MDB_dbi  metrics;  /* format 7: run NUL metric NUL -> rank+1 BE, sid
	                    * LE (MDB_DUPSORT | MDB_DUPFIXED), if by_metric */
	MDB_dbi blocks;   /* sid BE, first step BE, block no BE -> block */
	MDB_dbi emitters; /* run NUL incarnation BE -> emitter record */
	MDB_dbi runs;     /* run -> run record */
	MDB_dbi alerts;   /* run NUL seq BE -> alert as one JSON object */
	MDB_dbi journal;  /* record number BE -> samples of one commit */
	MDB_dbi sids;     /* sid BE -> series key */
	MDB_dbi stats;    /* sid BE -> statistics (format 3) */
	int     has_journal; /* 0: a format-1 store opened read-only */
	int     has_stats;   /* 0: a format-1 or 2 store opened read-only:
	                      * the statistics are in the series records */
	/* Format 7: a series with no entry in stats has empty statistics
	 * (none is written when it is created); before, that entry is
	 * missing only in a corrupt store. */
	int     stats_sparse;
	/* Format 7: the store keeps its series index in metrics, one entry
	 * a run's metric and its ranks' series as 8-byte duplicates of it
	 * (a store created by format 7); 0: in series, one entry a series
	 * (a store converted from an older format keeps that layout). */
	int     by_metric;
	int     flags;
	int     lock_fd; /* writer: holds the folder's writer.lock */
	/*
	 * Growing the map remaps the file, moving what every open
	 * transaction of this process points into; LMDB leaves it to us.
	 * Read transactions and the positions' write transactions
	 * (store/position.c), which other threads of the writer's process
	 * open, hold it shared; store_grow holds it exclusive.
	 */
	pthread_rwlock_t remap;
	/*
	 * Writer only: the meta counters as the open write transaction
	 * sees them. Loaded on first use (0: not loaded), kept across
	 * commits (no other process writes them), forgotten when a
	 * transaction is aborted or fails to commit, so they never run
	 * ahead of the disk.
	 */
	uint32_t next_sid;
	uint64_t next_alert;
	int      next_sid_dirty, next_alert_dirty;
	/* Writer only: the journal as the open write transaction sees it
	 * (store/journal.c): the number of its next record, its records
	 * and samples, and the most groups of one record. Loaded on first
	 * use (jloaded 0; a fold, which may delete the widest record, sets
	 * it again), forgotten with the counters above. */
	int      jloaded;
	uint64_t jnext, jrecords, jsamples, jwidest;
	/* Format 5: the last record counted in its series' statistics
	 * (meta journal_counted; 0: none) and the records and samples
	 * after it (store_journal_count). */
	uint64_t jcounted, jcrecords, jcsamples;
	uint8_t *jbuf; /* a record being coded (writer) */
	size_t   jcap;
	/* Writer only: the encoders the last direct appends left on their
	 * series' tails (store/journal.c), so that the next one need not
	 * decode the tail again; each is checked against the stored tail
	 * before it is used. NULL until the first direct append. */
	struct journal_tail *jtails;
	char     dir[1024];
	char     err[1400];
};

struct store_txn {
	store   *st;
	MDB_txn *txn;
	int      write;
};

/* Record an LMDB or errno failure on st; returns the store_err. */
int store_fail(store *st, int rc, const char *what);

/* Records (explicit little-endian encodings, independent of the ABI). */
#define SERIES_REC_SIZE 80
#define SERIES_REC_SIZE_V1 72 /* format 1: no jseen */
#define SERIES_REC_SIZE_V3 4  /* format 3: the sid; statistics in stats */
#define STATS_REC_SIZE 56     /* the most; format 3: always */
#define RUN_REC_SIZE 60
/* The fixed part of an emitter record: 11 u64, 4 u32, the window, the
 * host length (u16); then the host and, once set, ended (u64). */
#define EMITTER_REC_FIXED (8 * 11 + 4 * 4 + 8 * 16 + 2)
#define EMITTER_REC_MAX (EMITTER_REC_FIXED + WIRE_HOST_MAX + 16)

void   store_series_encode(uint8_t buf[SERIES_REC_SIZE], const series_rec *r);
int    store_series_decode(const void *buf, size_t len, series_rec *r);
/* The statistics of a series (samples, first and last step and time,
 * last value, jseen) as the stats database keeps them (format 4: at
 * most STATS_REC_SIZE bytes, format 3: exactly; encode returns the
 * size); decode leaves r->sid and the format-1 fields alone. decode: 0
 * or STORE_ECORRUPT. */
size_t store_stats_encode(uint8_t buf[STATS_REC_SIZE], const series_rec *r);
int  store_stats_decode(const void *buf, size_t len, series_rec *r);
/* The statistics of a series with no samples. */
void store_stats_empty(series_rec *r);
size_t store_emitter_encode(uint8_t *buf, const emitter_rec *r);
int    store_emitter_decode(const void *buf, size_t len, emitter_rec *r);
void   store_run_encode(uint8_t buf[RUN_REC_SIZE], const run_rec *r);
int    store_run_decode(const void *buf, size_t len, run_rec *r);

/* The meta key of a run's refused-sample count ("refused:" run). */
#define STORE_REFUSED_KEY_MAX (8 + WIRE_RUN_MAX)
size_t store_refused_key(uint8_t *buf, const char *run, size_t runlen);

/*
 * An unsigned counter of width 4 or 8 bytes in the meta database. get:
 * 0, STORE_ENOTFOUND (absent) or a store_err; put: 0 or a store_err.
 */
int store_meta_get(
    store_txn *t, const char *key, size_t klen, size_t width, uint64_t *out);
int store_meta_put(
    store_txn *t, const char *key, size_t klen, size_t width, uint64_t v);

/*
 * The samples of series sid still in the journal, in the order they
 * arrived (store/journal.c), for scan_samples. *out (caller frees) holds
 * *n samples; none: *out NULL, *n 0. Returns 0 or a store_err.
 */
int journal_of_series(
    store_txn *t, uint32_t sid, store_sample **out, size_t *n);

/*
 * Append samples of series sid to its blocks with the rules ingest has
 * always used (a full block, or a step below the tail's last step,
 * starts a new block numbered one past the highest). The tail (the block
 * with the highest number) is found from the blocks' keys. emit gets
 * each block that is (re)written, in order, the tail first: the fold
 * stores them, a reader merges them. enc is the caller's scratch
 * encoder; blocks, if not NULL, a cursor on the blocks database to use
 * (left open; the fold's emit writes through it); hint, if not NULL, an
 * encoder that may hold the tail already (used instead of decoding the
 * tail when its key and bytes are the tail's). Returns 0, emit's
 * non-zero value, or a store_err.
 */
/*
 * Load r's statistics (format 3 keeps them by sid in `stats`; before,
 * the series record held them and this does nothing), then add to them
 * the samples of r->sid in the journal records after r->jseen (readers:
 * the record is then complete as of t). Returns 0 or a store_err.
 */
int journal_patch_series(store_txn *t, series_rec *r);
/* The first half of journal_patch_series alone: the statistics as
 * stored, without the journal's samples. Returns 0 or a store_err. */
int journal_series_stats(store_txn *t, series_rec *r);

/* Add n samples, in arrival order, to a series record's statistics. */
void store_series_add(series_rec *r, const store_sample *s, size_t n);

typedef int (*journal_emit_fn)(
    void *ctx, uint64_t first_step, uint32_t no, block_enc *enc);
int journal_fold_series(store_txn *t, MDB_cursor *blocks,
    struct journal_tail *hint, uint32_t sid, const store_sample *s, size_t n,
    block_enc *enc, journal_emit_fn emit, void *ctx);

#endif /* STORE_STORE_INT_H */