/*
 * store: the on-disk state of vitals, one LMDB environment per folder
 * holding runs, series, sample blocks, emitters, alerts and the meta keys
 * (format, next_sid, next_alert, refused:RUN), plus writer.lock.
 * docs/storage.md describes every key and record.
 *
 * What it owns: the LMDB environment and every call into LMDB (no other
 * module includes <lmdb.h> or sees an LMDB type), the key layouts and
 * record encodings, the write transaction and its meta counters
 * (store/write.h), the read transactions and what they list
 * (store/scan.h), the writer lock and the growth of the map.
 * What it must not touch: the network and the wire format (wire/wire.h
 * is used for its length limits and byte order only), deduplication and
 * the write caches (collector/ingest.c), detection, and any output: it
 * never prints; a failure is a store_err with its sentence on the handle
 * (store_errmsg).
 *
 * The collector is the only writer; every viewer (vitals query, top, ...)
 * opens the folder read-only in its own process.
 *
 * Thread rule: a store handle, and each transaction begun on it, is used
 * by one thread at a time.
 */
#ifndef STORE_H
#define STORE_H

#include <stddef.h>
#include <stdint.h>

#include "wire/wire.h"

/* The format this version writes (7: a series has an entry in "stats"
 * only once samples were counted in it, none is empty statistics; a
 * store it creates keeps the series index by metric in "metrics"; its
 * commits' records leave out steps one apart and code float32 values
 * as such; 6:
 * merged journal records code their groups with the block code; 5: journal
 * records may be counted in their series' statistics before they are folded,
 * meta journal_counted; 4: samples go through the journal, series statistics
 * are kept by series id in "stats", both compactly), and the oldest it reads
 * (1: blocks only; 1 to 3 are converted by a writer on open). docs/storage.md,
 * "Existing databases". */
#define STORE_FORMAT 8
#define STORE_FORMAT_OLDEST 1

enum store_flags {
	STORE_RDONLY = 1 << 0,
	STORE_NOSYNC = 1 << 1, /* survive a process crash, not power loss */
};

/* Error codes of this module (append only); the sentence is in
 * store_errmsg(). */
enum store_err {
	STORE_OK = 0,
	STORE_EIO,       /* the file system failed */
	STORE_ENOSPC,    /* disk full: nothing of the transaction was kept */
	STORE_EMAPFULL,  /* the map must grow: store_grow(), then redo */
	STORE_ENOTFOUND, /* no database in that folder; no such record */
	STORE_ECORRUPT,  /* a record does not parse */
	STORE_EFORMAT,   /* written by an incompatible version */
	STORE_ENOMEM,
	STORE_EBUSY, /* another process writes this database */
};

/* An open environment (opaque). */
typedef struct store store;

/* A read or write transaction on a store (opaque): one consistent moment
 * of the database. Begun by store_read_begin() or store_write_begin(). */
typedef struct store_txn store_txn;

/* A series is (run, metric, rank): run NUL metric NUL rank+1 (u32 BE). */
#define STORE_KEY_MAX (WIRE_RUN_MAX + 1 + WIRE_NAME_MAX + 1 + 4)

typedef struct series_rec {
	uint32_t sid;
	uint32_t nblocks; /* blocks written; numbers the next block */
	uint64_t samples;
	uint64_t first_step, last_step;
	int64_t  first_time, last_time;
	double   last_value;
	uint64_t tail_first_step; /* key of the block being appended to */
	uint32_t tail_no;
	/*
	 * The statistics above (samples, steps, times, last value) count
	 * the series' samples in journal records up to this number (0:
	 * none); readers (scan_series_of, scan_series_metric) add those of
	 * the later records, so what they list is always complete. The
	 * writer keeps a record current only when a fold needs it.
	 * nblocks, tail_first_step and tail_no are format 1's, not kept.
	 */
	uint64_t jseen;
} series_rec;

typedef struct emitter_rec {
	uint64_t incarnation;
	uint64_t start_ns;
	uint32_t pid;
	int32_t  rank, local_rank, world_size;
	int64_t  first_seen, last_seen; /* collector clock, ns */
	uint64_t batches, samples, duplicates, dropped;
	uint64_t first_step, last_step;
	uint64_t floor; /* dedup window: every seq below is settled */
	uint64_t window[16]; /* bit i: seq floor + i is stored */
	char     host[WIRE_HOST_MAX + 1];
	int64_t  ended; /* collector clock when its FINAL batch came; 0:
	                 * still running, or it died */
	uint64_t refused; /* samples the emitter refused for their name
	                   * (sent in its batch headers; cumulative) */
} emitter_rec;
#define EMITTER_WINDOW 1024

typedef struct run_rec {
	int64_t  first_time, last_time;
	uint64_t first_step, last_step; /* lowest and highest step seen */
	uint64_t samples, dropped;
	uint32_t emitters; /* incarnations seen */
	uint32_t series;
} run_rec;

/*
 * Open (creating unless STORE_RDONLY) the environment in dir. A writer
 * takes an exclusive lock (flock on dir/writer.lock, holding its pid)
 * for as long as it is open: a second writer gets STORE_EBUSY naming the
 * first, since two would each number new series on their own. On failure
 * returns a store_err, *out is NULL, nothing is leaked, and the reason is
 * written to err.
 */
int  store_open(const char *dir, int flags, store **out, char *err,
     size_t errlen);
/* Close (NULL: nothing). Every transaction must have ended. */
void store_close(store *st);

/* The sentence of the last failure on st. Borrowed: valid until the next
 * call on st or on a transaction of it. */
const char *store_errmsg(const store *st);

/* The folder st was opened on. Borrowed: valid until store_close(). */
const char *store_dir(const store *st);

/*
 * Begin a read transaction, adopting a map grown by the writer since the
 * last one. Returns 0 or a store_err (*out is then NULL).
 */
int store_read_begin(store *st, store_txn **out);

/* End a read transaction (NULL: nothing). What was borrowed from it is
 * no longer valid. */
void store_read_end(store_txn *txn);

/* Double the map (writer only, no transaction open). Returns 0 or a
 * store_err (STORE_EMAPFULL at the 1 TiB limit). */
int store_grow(store *st);

/* The size of the map now, in bytes. */
uint64_t store_map_size(const store *st);
/* The bytes of the map up to its highest page in use (0 on error):
 * what a transaction may still write without reusing freed pages is
 * store_map_size() less this. */
uint64_t store_map_used(const store *st);

/*
 * Clear the reader slots left by processes that died inside a read
 * transaction (LMDB keeps every page freed since such a reader's
 * snapshot). *dead counts them. Returns 0 or a store_err.
 */
int store_reader_check(store *st, int *dead);

/* Keys. buf holds STORE_KEY_MAX bytes; runlen <= WIRE_RUN_MAX and
 * mlen <= WIRE_NAME_MAX. */
size_t store_series_key(uint8_t *buf, const char *run, size_t runlen,
    const char *metric, size_t mlen, int32_t rank);
/* Split a series key; pointers point into key. Returns -1 if malformed. */
int store_series_key_parse(const uint8_t *key, size_t len, const char **run,
    size_t *runlen, const char **metric, size_t *mlen, int32_t *rank);
void store_block_key(uint8_t buf[16], uint32_t sid, uint64_t first_step,
    uint32_t no);
/* run NUL incarnation (u64 BE); alerts use the same layout with their
 * sequence number. */
size_t store_emitter_key(uint8_t *buf, const char *run, size_t runlen,
    uint64_t incarnation);

/*
 * Positions (store/position.c): how far a reader inside the writer's
 * process (a remote-write forwarder) got in each series, kept in the
 * meta database under "pos:" name NUL sid (u32 BE), so that it resumes
 * there after a restart or a SIGKILL. Names are 1 to STORE_POS_NAME_MAX
 * bytes of the reader's choosing.
 */
#define STORE_POS_NAME_MAX 64
typedef struct store_pos {
	uint64_t count; /* the series' first samples handled, in the order
	                 * stored (scan_samples_arrived) */
	uint64_t step;  /* the highest step among them */
	int64_t  time;  /* the latest time among them, ns */
} store_pos;
typedef struct store_pos_entry {
	uint32_t  sid;
	store_pos pos;
} store_pos_entry;

/* The position of sid under name, in a read transaction: 0,
 * STORE_ENOTFOUND (none saved: start at the beginning) or a store_err. */
int store_pos_get(store *st, store_txn *txn, const char *name, uint32_t sid,
    store_pos *out);
/*
 * Save n positions under name in a write transaction of its own, from
 * any thread (LMDB serialises it with the collector's). Returns 0 or a
 * store_err with the reason in err (not on st, which another thread
 * uses): STORE_EMAPFULL means try later, once the writer grew the map.
 */
int store_pos_save(store *st, const char *name, const store_pos_entry *e,
    size_t n, char *err, size_t errlen);

#endif /* STORE_H */
