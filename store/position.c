/*
 * position: named positions of readers inside the writer's process, in
 * the meta database (store/store.h). A record is count (u64), step (u64)
 * and time (i64), little-endian like every value of the store.
 */
#include "store/store_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "wire/le.h"

#define POS_REC_SIZE 24
#define POS_KEY_MAX (4 + STORE_POS_NAME_MAX + 1 + 4)

/* "pos:" name NUL sid (u32 BE). Returns the length, 0 if name is bad. */
static size_t
pos_key(uint8_t *buf, const char *name, uint32_t sid)
{
	size_t n = strlen(name);

	if (n == 0 || n > STORE_POS_NAME_MAX)
		return 0;
	memcpy(buf, "pos:", 4);
	memcpy(buf + 4, name, n);
	buf[4 + n] = 0;
	buf[5 + n] = (uint8_t) (sid >> 24);
	buf[6 + n] = (uint8_t) (sid >> 16);
	buf[7 + n] = (uint8_t) (sid >> 8);
	buf[8 + n] = (uint8_t) sid;
	return 9 + n;
}

int
store_pos_get(
    store *st, store_txn *txn, const char *name, uint32_t sid, store_pos *out)
{
	uint8_t key[POS_KEY_MAX];
	MDB_val k, v;
	int     rc;

	k.mv_data = key;
	k.mv_size = pos_key(key, name, sid);
	if (k.mv_size == 0) {
		snprintf(st->err, sizeof(st->err),
		    "%s: position name must be 1 to %d bytes", st->dir,
		    STORE_POS_NAME_MAX);
		return STORE_ENOTFOUND;
	}
	rc = mdb_get(txn->txn, st->meta, &k, &v);
	if (rc == MDB_NOTFOUND)
		return STORE_ENOTFOUND;
	if (rc != 0)
		return store_fail(st, rc, "reading a position");
	if (v.mv_size != POS_REC_SIZE) {
		snprintf(st->err, sizeof(st->err),
		    "%s: position %s of series %u has %zu bytes, not %d",
		    st->dir, name, sid, v.mv_size, POS_REC_SIZE);
		return STORE_ECORRUPT;
	}
	out->count = wire_get64(v.mv_data);
	out->step  = wire_get64((const uint8_t *) v.mv_data + 8);
	out->time  = (int64_t) wire_get64((const uint8_t *) v.mv_data + 16);
	return 0;
}

int
store_pos_save(store *st, const char *name, const store_pos_entry *e, size_t n,
    char *err, size_t errlen)
{
	MDB_txn *txn = NULL;
	uint8_t  key[POS_KEY_MAX], rec[POS_REC_SIZE];
	MDB_val  k, v;
	int      rc;

	if (n == 0)
		return 0;
	if (pos_key(key, name, 0) == 0) {
		snprintf(err, errlen, "position name must be 1 to %d bytes",
		    STORE_POS_NAME_MAX);
		return STORE_ENOTFOUND;
	}
	/* Shared: store_grow must not remap under this transaction. */
	pthread_rwlock_rdlock(&st->remap);
	if ((rc = mdb_txn_begin(st->env, NULL, 0, &txn)) != 0)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		k.mv_data = key;
		k.mv_size = pos_key(key, name, e[i].sid);
		wire_put64(rec, e[i].pos.count);
		wire_put64(rec + 8, e[i].pos.step);
		wire_put64(rec + 16, (uint64_t) e[i].pos.time);
		v.mv_data = rec;
		v.mv_size = sizeof(rec);
		if ((rc = mdb_put(txn, st->meta, &k, &v, 0)) != 0)
			goto fail;
	}
	rc  = mdb_txn_commit(txn);
	txn = NULL;
	if (rc != 0)
		goto fail;
	pthread_rwlock_unlock(&st->remap);
	return 0;
fail:
	if (txn != NULL)
		mdb_txn_abort(txn);
	pthread_rwlock_unlock(&st->remap);
	snprintf(err, errlen, "%s: saving positions: %s", st->dir,
	    mdb_strerror(rc));
	switch (rc) {
	case MDB_MAP_FULL:
		return STORE_EMAPFULL;
	case ENOSPC:
		return STORE_ENOSPC;
	default:
		return STORE_EIO;
	}
}
