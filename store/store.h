/*
 * store: the LMDB environment that holds runs, series, sample blocks and
 * emitters. The collector is its only writer; every viewer (vitals query,
 * top, ...) opens it read-only in its own process. docs/storage.md
 * describes the key layout.
 *
 * Thread rule: a store handle is used by one thread at a time.
 */
#ifndef STORE_H
#define STORE_H

#include <lmdb.h>
#include <stddef.h>
#include <stdint.h>

#define STORE_FORMAT 1

enum store_flags {
	STORE_RDONLY = 1 << 0,
	STORE_NOSYNC = 1 << 1, /* survive a process crash, not power loss */
};

/* Error codes of this module; the text is in st->err (store_open: err). */
enum store_err {
	STORE_OK = 0,
	STORE_EIO,       /* the file system failed */
	STORE_ENOSPC,    /* disk full: nothing of the transaction was kept */
	STORE_EMAPFULL,  /* the map must grow (handled inside the writer) */
	STORE_ENOTFOUND, /* no database in that folder */
	STORE_ECORRUPT,  /* a record does not parse */
	STORE_EFORMAT,   /* written by an incompatible version */
	STORE_ENOMEM,
	STORE_EBUSY, /* another process writes this database */
};

typedef struct store {
	MDB_env *env;
	MDB_dbi  meta;     /* "format" -> u32; "next_sid" -> u32 */
	MDB_dbi  series;   /* series key -> series_rec */
	MDB_dbi  blocks;   /* sid BE, first step BE, block no BE -> block */
	MDB_dbi  emitters; /* run NUL incarnation BE -> emitter_rec */
	MDB_dbi  runs;     /* run -> run_rec */
	MDB_dbi  alerts;   /* run NUL seq BE -> alert as one JSON object */
	int      flags;
	int      lock_fd; /* writer: holds the folder's writer.lock */
	char     dir[1024];
	char     err[1400];
} store;

/* A series is (run, metric, rank). */
#define STORE_KEY_MAX (128 + 1 + 255 + 1 + 4)

typedef struct series_rec {
	uint32_t sid;
	uint32_t nblocks; /* blocks written; numbers the next block */
	uint64_t samples;
	uint64_t first_step, last_step;
	int64_t  first_time, last_time;
	double   last_value;
	uint64_t tail_first_step; /* key of the block being appended to */
	uint32_t tail_no;
} series_rec;
#define SERIES_REC_SIZE 72

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
	char     host[256];
	int64_t  ended; /* collector clock when its FINAL batch came; 0:
	                 * still running, or it died */
} emitter_rec;
#define EMITTER_WINDOW 1024

typedef struct run_rec {
	int64_t  first_time, last_time;
	uint64_t first_step, last_step; /* lowest and highest step seen */
	uint64_t samples, dropped;
	uint32_t emitters; /* incarnations seen */
	uint32_t series;
} run_rec;
#define RUN_REC_SIZE 60

/*
 * Open (creating unless STORE_RDONLY) the environment in dir. A writer
 * takes an exclusive lock (flock on dir/writer.lock, holding its pid)
 * for as long as it is open: a second writer gets STORE_EBUSY naming the
 * first, since two would each number new series on their own. On failure
 * returns a store_err and, if *out could be allocated, nothing is leaked;
 * the reason is written to err.
 */
int  store_open(const char *dir, int flags, store **out, char *err,
     size_t errlen);
void store_close(store *st);

/* Begin a read transaction, adopting a map grown by the writer. */
int store_read_begin(store *st, MDB_txn **txn);

/* Grow the map (writer only, no transaction open). */
int store_grow(store *st);

/* Translate an LMDB or errno code into a store_err with a message. */
int store_fail(store *st, int rc, const char *what);

/* Keys. */
size_t store_series_key(uint8_t *buf, const char *run, size_t runlen,
    const char *metric, size_t mlen, int32_t rank);
/* Split a series key; pointers point into key. Returns -1 if malformed. */
int store_series_key_parse(const uint8_t *key, size_t len, const char **run,
    size_t *runlen, const char **metric, size_t *mlen, int32_t *rank);
void store_block_key(uint8_t buf[16], uint32_t sid, uint64_t first_step,
    uint32_t no);
size_t store_emitter_key(uint8_t *buf, const char *run, size_t runlen,
    uint64_t incarnation);
/* The meta key of a run's refused-sample count ("refused:" run). */
#define STORE_REFUSED_KEY_MAX (8 + 128)
size_t store_refused_key(uint8_t *buf, const char *run, size_t runlen);

/* Records (explicit little-endian encodings, independent of the ABI). */
void store_series_put(uint8_t buf[SERIES_REC_SIZE], const series_rec *r);
int  store_series_get(const void *buf, size_t len, series_rec *r);
size_t store_emitter_put(uint8_t *buf, const emitter_rec *r);
int    store_emitter_get(const void *buf, size_t len, emitter_rec *r);
#define EMITTER_REC_MAX (256 + 400)
void store_run_put(uint8_t buf[RUN_REC_SIZE], const run_rec *r);
int  store_run_get(const void *buf, size_t len, run_rec *r);

#endif /* STORE_H */
