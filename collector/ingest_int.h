/*
 * ingest_int: what collector/ingest.c (the batch path) and
 * collector/cache.c (the write caches and their eviction) share. Not
 * included anywhere else.
 */
#ifndef COLLECTOR_INGEST_INT_H
#define COLLECTOR_INGEST_INT_H

#include "collector/ingest.h"
#include "collector/table.h"
#include "store/block.h"
#include "store/write.h"

/* A series in the cache: its record and the block being appended to. The
 * key is sized to fit, as a cache of many series is mostly keys. */
typedef struct ser {
	series_rec  rec;
	size_t      keylen;
	block_enc  *enc;  /* NULL until the tail is loaded */
	uint64_t    used; /* number of the last commit that touched it */
	int         dirty;
	struct ser *next_dirty;
	uint8_t     key[];
} ser;

typedef struct emi {
	emitter_rec rec;
	uint8_t     key[STORE_KEY_MAX];
	size_t      keylen;
	uint64_t    used;
	int         dirty;
	struct emi *next_dirty;
} emi;

typedef struct run {
	run_rec     rec;
	char        name[WIRE_RUN_MAX + 1];
	size_t      len;
	int         dirty;
	struct run *next_dirty;
	uint64_t    refused;   /* samples refused by a series cap */
	int         limit_hit; /* its series_limit alert is stored */
	int         refused_dirty;
} run;

struct ingest {
	store      *st;
	ingest_opts opts;
	store_txn  *txn;
	table      *series, *emitters, *runs;
	ser        *dirty_series;
	emi        *dirty_emitters;
	run        *dirty_runs;
	ser  **names; /* per batch: name index -> series (NULL: refused) */
	uint8_t *used; /* per batch: name index has a sample */
	size_t nenc;  /* series with a loaded encoder */
	/* Encoders no series holds, kept for the next load (at most
	 * cache_encoders - nenc of them): a run wider than the encoder
	 * bound unloads and reloads tails at every commit, and handing
	 * the same 4 KB buffers back and forth costs no malloc, free or
	 * page fault. */
	block_enc **spare;
	size_t      nspare, spare_cap;
	ingest_stats stats, tentative;
	char         notice[512], notice_out[512];
};

/* Create the three tables (after cache_drop()). Returns 0 or
 * STORE_ENOMEM (then none is left). */
int cache_make(ingest *in);
/* Free every entry and the tables; always safe (what is dropped is
 * reloaded from the store). */
void cache_drop(ingest *in);

/* Mark an entry dirty: written by the next commit. */
void cache_mark_run(ingest *in, run *r);
void cache_mark_emitter(ingest *in, emi *e);
void cache_mark_series(ingest *in, ser *s);
/* After a commit: every entry is clean again. */
void cache_settle(ingest *in);

/* An encoder to load a tail into (a spare one if any; contents
 * undefined), or NULL when out of memory. */
block_enc *cache_enc_take(ingest *in);
/* Give back an encoder no series holds any more (NULL: nothing): kept as
 * a spare within the encoder bound, else freed. */
void cache_enc_give(ingest *in, block_enc *e);

/*
 * Inside a transaction that touches more series than the encoder bound:
 * write the tails of the loaded series other than keep into the
 * transaction and free their encoders. Returns 0 or a store_err.
 */
int cache_shed_encoders(ingest *in, const ser *keep);
/* After a commit: bring the caches back within their bounds. */
void cache_evict(ingest *in);

#endif /* COLLECTOR_INGEST_INT_H */
