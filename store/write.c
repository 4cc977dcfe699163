/*
 * write: the write transaction and every put of the store. The meta
 * counters live on the store handle between transactions (see
 * store_int.h) and are written at commit when they moved.
 */
#include "store/write.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_int.h"
#include "wire/le.h"

/* Forget the counters: reloaded from the store when next needed. */
static void
forget_counters(store *st)
{
	st->next_sid         = 0;
	st->next_alert       = 0;
	st->next_sid_dirty   = 0;
	st->next_alert_dirty = 0;
	st->jloaded          = 0;
}

int
store_write_begin(store *st, store_txn **out)
{
	store_txn *t = calloc(1, sizeof(*t));
	int        rc;

	*out = NULL;
	if (t == NULL) {
		snprintf(
		    st->err, sizeof(st->err), "%s: out of memory", st->dir);
		return STORE_ENOMEM;
	}
	if ((rc = mdb_txn_begin(st->env, NULL, 0, &t->txn)) != 0) {
		free(t);
		return store_fail(st, rc, "starting a write transaction");
	}
	t->st    = st;
	t->write = 1;
	*out     = t;
	return 0;
}

void
store_abort(store_txn *t)
{
	if (t == NULL)
		return;
	mdb_txn_abort(t->txn);
	forget_counters(t->st);
	free(t);
}

int
store_commit(store_txn *t)
{
	store *st = t->st;
	int    rc = 0;

	if (st->next_alert_dirty)
		rc = store_meta_put(t, "next_alert", 10, 8, st->next_alert);
	if (rc == 0 && st->next_sid_dirty)
		rc = store_meta_put(t, "next_sid", 8, 4, st->next_sid);
	if (rc != 0) {
		store_abort(t);
		return rc;
	}
	rc = mdb_txn_commit(t->txn);
	free(t);
	if (rc != 0) {
		forget_counters(st);
		return store_fail(st, rc, "committing");
	}
	st->next_sid_dirty   = 0;
	st->next_alert_dirty = 0;
	return 0;
}

/* Get key in dbi: 0, STORE_ENOTFOUND or a store_err naming what. */
static int
get(store_txn *t, MDB_dbi dbi, const void *key, size_t klen, MDB_val *v,
    const char *what)
{
	MDB_val k;
	int     rc;

	k.mv_data = (void *) (uintptr_t) key;
	k.mv_size = klen;
	rc        = mdb_get(t->txn, dbi, &k, v);
	if (rc == MDB_NOTFOUND)
		return STORE_ENOTFOUND;
	if (rc != 0)
		return store_fail(t->st, rc, what);
	return 0;
}

static int
put(store_txn *t, MDB_dbi dbi, const void *key, size_t klen, const void *val,
    size_t vlen, const char *what)
{
	MDB_val k, v;
	int     rc;

	k.mv_data = (void *) (uintptr_t) key;
	k.mv_size = klen;
	v.mv_data = (void *) (uintptr_t) val;
	v.mv_size = vlen;
	if ((rc = mdb_put(t->txn, dbi, &k, &v, 0)) != 0)
		return store_fail(t->st, rc, what);
	return 0;
}

static int
corrupt(store_txn *t, const char *what)
{
	snprintf(t->st->err, sizeof(t->st->err), "%s: %s does not parse",
	    t->st->dir, what);
	return STORE_ECORRUPT;
}

/*
 * Format 7's series index (store->by_metric): the series key's run NUL
 * metric NUL is the key, and each rank's series one 8-byte duplicate of
 * it, the rank+1 (u32 BE, the key's last 4 bytes: duplicates sort by
 * rank, so the index reads in the order of the keys) and the sid (u32
 * LE, the series record of format 3). A run's metric logged by many
 * ranks costs its name once and 8 bytes a rank, where one entry a
 * series costs the name, the rank, the sid and an 8-byte node header
 * each (about 45 bytes, in pages about 60% full when ranks' keys
 * interleave). The series of key in *v (its 8 bytes), found by the
 * rank. Returns 0, STORE_ENOTFOUND or a store_err.
 */
static int
metric_get(store_txn *t, const uint8_t *key, size_t klen, MDB_val *v)
{
	MDB_cursor *cur;
	MDB_val     k = { klen - 4, (void *) (uintptr_t) key };
	uint8_t     dup[8];
	int         rc;

	if (klen < 7)
		return corrupt(t, "a series key");
	memcpy(dup, key + klen - 4, 4);
	memset(dup + 4, 0, 4);
	v->mv_data = dup;
	v->mv_size = 8;
	if ((rc = mdb_cursor_open(t->txn, t->st->metrics, &cur)) != 0)
		return store_fail(t->st, rc, "reading a series");
	rc = mdb_cursor_get(cur, &k, v, MDB_GET_BOTH_RANGE);
	mdb_cursor_close(cur);
	if (rc == MDB_NOTFOUND
	    || (rc == 0
	        && (v->mv_size != 8 || memcmp(v->mv_data, key + klen - 4, 4))))
		return STORE_ENOTFOUND;
	if (rc != 0)
		return store_fail(t->st, rc, "reading a series");
	return 0;
}

int
store_get_series(
    store_txn *t, const uint8_t *key, size_t klen, series_rec *out)
{
	MDB_val v;
	int     rc;

	if (t->st->by_metric) {
		if ((rc = metric_get(t, key, klen, &v)) != 0)
			return rc;
		v.mv_data = (uint8_t *) v.mv_data + 4;
		v.mv_size = 4;
	} else {
		rc = get(t, t->st->series, key, klen, &v, "reading a series");
		if (rc != 0)
			return rc;
	}
	if (store_series_decode(v.mv_data, v.mv_size, out) != 0)
		return corrupt(t, "a series record");
	return 0;
}

int
store_put_new_series(
    store_txn *t, const uint8_t *key, size_t klen, uint32_t sid)
{
	uint8_t rec[SERIES_REC_SIZE_V3];

	/* Format 3: the series record is its id, never rewritten; the
	 * statistics go by id, where the fold rewrites them in id order.
	 * Format 7 writes them only once samples are counted in them (a
	 * fold, a count or a direct append adds them, in id order): the
	 * empty statistics of a new series were about 45 bytes of a stats
	 * page each, 2.2 bytes a sample of a run of 50,000 series x 20
	 * steps. The sid index (sids) is no longer written: nothing reads
	 * it since format 3 (its entries of older series stay, unread). */
	wire_put32(rec, sid);
	if (t->st->by_metric) {
		uint8_t dup[8];

		if (klen < 7)
			return corrupt(t, "a series key");
		memcpy(dup, key + klen - 4, 4);
		wire_put32(dup + 4, sid);
		return put(t, t->st->metrics, key, klen - 4, dup, sizeof(dup),
		    "writing a series");
	}
	return put(
	    t, t->st->series, key, klen, rec, sizeof(rec), "writing a series");
}

int
store_get_emitter(
    store_txn *t, const uint8_t *key, size_t klen, emitter_rec *out)
{
	MDB_val v;
	int rc = get(t, t->st->emitters, key, klen, &v, "reading an emitter");

	if (rc != 0)
		return rc;
	if (store_emitter_decode(v.mv_data, v.mv_size, out) != 0)
		return corrupt(t, "an emitter record");
	return 0;
}

int
store_put_emitter(
    store_txn *t, const uint8_t *key, size_t klen, const emitter_rec *r)
{
	uint8_t buf[EMITTER_REC_MAX];
	size_t  n = store_emitter_encode(buf, r);

	return put(
	    t, t->st->emitters, key, klen, buf, n, "writing an emitter");
}

int
store_get_run(store_txn *t, const char *run, size_t runlen, run_rec *out)
{
	MDB_val v;
	int     rc = get(t, t->st->runs, run, runlen, &v, "reading a run");

	if (rc != 0)
		return rc;
	if (store_run_decode(v.mv_data, v.mv_size, out) != 0)
		return corrupt(t, "a run record");
	return 0;
}

int
store_put_run(store_txn *t, const char *run, size_t runlen, const run_rec *r)
{
	uint8_t buf[RUN_REC_SIZE];

	store_run_encode(buf, r);
	return put(
	    t, t->st->runs, run, runlen, buf, sizeof(buf), "writing a run");
}

int
store_get_refused(store_txn *t, const char *run, size_t runlen, uint64_t *out)
{
	uint8_t key[STORE_REFUSED_KEY_MAX];

	if (runlen > WIRE_RUN_MAX)
		return STORE_ENOTFOUND;
	return store_meta_get(t, (const char *) key,
	    store_refused_key(key, run, runlen), 8, out);
}

int
store_put_refused(store_txn *t, const char *run, size_t runlen, uint64_t n)
{
	uint8_t key[STORE_REFUSED_KEY_MAX];

	if (runlen > WIRE_RUN_MAX)
		return corrupt(t, "a run name");
	return store_meta_put(
	    t, (const char *) key, store_refused_key(key, run, runlen), 8, n);
}

int
store_get_tail(store_txn *t, const series_rec *r, block_enc *enc)
{
	uint8_t key[16];
	MDB_val k, v;
	int     rc;

	store_block_key(key, r->sid, r->tail_first_step, r->tail_no);
	k.mv_data = key;
	k.mv_size = sizeof(key);
	if ((rc = mdb_get(t->txn, t->st->blocks, &k, &v)) != 0)
		return store_fail(t->st, rc, "reading a tail block");
	if (block_enc_resume(enc, v.mv_data, v.mv_size) != BLOCK_OK) {
		snprintf(t->st->err, sizeof(t->st->err),
		    "%s: tail block of series %u is corrupt", t->st->dir,
		    r->sid);
		return STORE_ECORRUPT;
	}
	return 0;
}

int
store_put_tail(store_txn *t, const series_rec *r, block_enc *enc)
{
	uint8_t     key[16];
	size_t      len;
	const void *data;

	if (enc->count == 0)
		return 0;
	store_block_key(key, r->sid, r->tail_first_step, r->tail_no);
	data = block_enc_data(enc, &len);
	return put(
	    t, t->st->blocks, key, sizeof(key), data, len, "writing a block");
}

/* Load next_sid the first time it is needed (absent: 1). */
static int
load_sid(store_txn *t)
{
	store   *st = t->st;
	uint64_t v;
	int      rc;

	if (st->next_sid != 0)
		return 0;
	rc = store_meta_get(t, "next_sid", 8, 4, &v);
	if (rc == STORE_ENOTFOUND)
		v = 1;
	else if (rc != 0)
		return rc;
	st->next_sid = (uint32_t) v;
	return 0;
}

int
store_next_sid(store_txn *t, uint32_t *next)
{
	int rc = load_sid(t);

	*next = t->st->next_sid;
	return rc;
}

int
store_new_sid(store_txn *t, uint32_t *sid)
{
	int rc;

	if ((rc = load_sid(t)) != 0)
		return rc;
	*sid                  = t->st->next_sid++;
	t->st->next_sid_dirty = 1;
	return 0;
}

int
store_put_alert(
    store_txn *t, const char *run, size_t runlen, const char *json, size_t len)
{
	store  *st = t->st;
	uint8_t key[STORE_KEY_MAX];
	int     rc;

	if (runlen > WIRE_RUN_MAX)
		return corrupt(t, "a run name");
	if (st->next_alert == 0) {
		rc = store_meta_get(t, "next_alert", 10, 8, &st->next_alert);
		if (rc == STORE_ENOTFOUND)
			st->next_alert = 1;
		else if (rc != 0)
			return rc;
	}
	rc = put(t, st->alerts, key,
	    store_emitter_key(key, run, runlen, st->next_alert), json, len,
	    "writing an alert");
	if (rc != 0)
		return rc;
	st->next_alert++;
	st->next_alert_dirty = 1;
	return 0;
}
