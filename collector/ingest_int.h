/*
 * ingest_int: what collector/ingest.c (the batch path) and
 * collector/cache.c (the write caches and their eviction) share. Not
 * included anywhere else.
 */
#ifndef COLLECTOR_INGEST_INT_H
#define COLLECTOR_INGEST_INT_H

#include "collector/ingest.h"
#include "collector/table.h"
#include "store/journal.h"
#include "store/write.h"

/* A series in the cache: its id, and its key (the table's key too: see
 * collector/table.h). The statistics of its record are the store's,
 * kept from the journal, not here. 32 bytes and the key: a cache of many
 * series is mostly keys. */
typedef struct ser {
	uint32_t sid;
	uint32_t keylen;
	uint32_t dix;      /* while dirty: its entry in ingest.dser */
	uint32_t opos;     /* its place in an emitter's order (emi) */
	uint64_t used;     /* number of the last commit that touched it */
	uint64_t dirty_at; /* stats.commits + 1 while the open
	                    * transaction has samples of it */
	uint8_t key[];
} ser;

/*
 * A series with samples in the open transaction: its sid and count are
 * copied out, so that grouping the commit's samples by series, in sid
 * order, reads these arrays only and never the series themselves (at
 * 100,000 series a commit, each visit of a series is a cache miss).
 */
typedef struct ser_dirty {
	uint32_t sid;
	uint32_t n; /* its samples in the transaction */
	ser     *s;
} ser_dirty;

/* A series by sid, for sorting: k is its index in ingest.dser (or the
 * series, for new ones). */
typedef struct ser_by_sid {
	uint32_t sid;
	uint32_t k;
	ser     *s;
} ser_by_sid;

typedef struct emi {
	emitter_rec rec;
	uint8_t     key[STORE_KEY_MAX];
	size_t      keylen;
	uint64_t    used;
	int         dirty;
	struct emi *next_dirty;
	/* The series of its batches' names in the order they came: a wide
	 * emitter names the same series in the same order step after step,
	 * so the next name is most often the series after the last one, and
	 * is found by comparing its key instead of hashing it. Emptied
	 * whenever a series is evicted (it may be one of them). */
	ser    **order;
	uint32_t norder, ocap, cur;
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
	emi        *dirty_emitters;
	run        *dirty_runs;
	/* Per batch: name index -> its series' entry in dser (UINT32_MAX:
	 * refused, past a cap). */
	uint32_t *nix;
	/* The samples of the open transaction in arrival order, each with
	 * its series; grouped by series into one journal record at commit
	 * (store/journal.h). At most one commit's samples. */
	uint32_t     *pidx; /* per sample: its series' entry in dser */
	store_sample *psamp, *pgrouped;
	size_t        np, pcap;
	ser_dirty    *dser; /* the series with samples, in arrival order */
	size_t        ndser, dscap;
	ser_by_sid   *dnew; /* the series the transaction creates */
	size_t        ndnew, dncap;
	ser_by_sid   *pseries, *psort; /* dser by sid, and scratch */
	uint32_t     *pstart;          /* per dser entry: where its samples go */
	store_group  *pgroups;
	size_t        pgcap;
	uint8_t      *used;        /* per batch: name index has a sample */
	size_t        order_total; /* entries in every emitter's order */
	/* The map's room (ingest_begin): the used part when the open
	 * transaction began, and the most one commit (with its fold) added
	 * to it so far. */
	uint64_t      map_used, map_added;
	uint64_t      map_expect; /* ingest_expect(), for the next one */
	ingest_stats  stats, tentative;
	char          notice[512], notice_out[512];
};

/* Create the three tables (after cache_drop()). Returns 0 or
 * STORE_ENOMEM (then none is left). */
int cache_make(ingest *in);
/* Free every entry and the tables; always safe (what is dropped is
 * reloaded from the store). */
void cache_drop(ingest *in);

/* Free an emitter entry and its order. */
void cache_free_emitter(ingest *in, emi *e);

/* Mark an entry dirty: written by the next commit. A series is marked
 * when the transaction brings a sample of it (returns 0 or
 * STORE_ENOMEM). */
void cache_mark_run(ingest *in, run *r);
void cache_mark_emitter(ingest *in, emi *e);
int  cache_mark_series(ingest *in, ser *s);
/* After a commit: every entry is clean again. */
void cache_settle(ingest *in);

/* After a commit: bring the caches back within their bounds. */
void cache_evict(ingest *in);

#endif /* COLLECTOR_INGEST_INT_H */
