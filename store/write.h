/*
 * write: the store's write path, used by the collector (its only
 * writer). One write transaction at a time: begin, get and put records,
 * number new series and alerts, then commit or abort. Nothing of a
 * transaction is visible to readers, or kept, before store_commit()
 * succeeds.
 *
 *	store_txn *t;
 *
 *	store_write_begin(st, &t);
 *	store_get_series(t, key, klen, &rec);     (STORE_ENOTFOUND: new)
 *	store_new_sid(t, &rec.sid);
 *	store_put_new_series(t, key, klen, rec.sid);
 *	store_journal_put(t, groups, ng, samples);   (store/journal.h)
 *	store_commit(t);                          (or store_abort(t))
 *
 * Any call may return STORE_EMAPFULL: abort, store_grow(), and do the
 * transaction again. On any other failure abort; the store is as the
 * last commit left it.
 *
 * Thread rule: the transaction is used by one thread at a time, and by
 * the thread of its store handle.
 */
#ifndef STORE_WRITE_H
#define STORE_WRITE_H

#include "store/block.h"
#include "store/store.h"

/* Begin the write transaction (at most one per store). Returns 0 or a
 * store_err (*out is then NULL). */
int store_write_begin(store *st, store_txn **out);

/* Write the counters that moved and commit. The transaction ends either
 * way. Returns 0 or a store_err (then nothing of it was kept). */
int store_commit(store_txn *t);

/* End a write transaction keeping nothing of it (NULL: nothing). */
void store_abort(store_txn *t);

/*
 * Records by key (keys as built by store_series_key() and
 * store_emitter_key(); a run's key is its name). get: 0,
 * STORE_ENOTFOUND, or a store_err (STORE_ECORRUPT when the record does
 * not parse). put: 0 or a store_err. A series record read here gives
 * its sid; its statistics are not kept current there (format 3 keeps
 * them by sid, and readers add the journal's: scan_series_of).
 */
int store_get_series(
    store_txn *t, const uint8_t *key, size_t klen, series_rec *out);
/*
 * A new series (its id from store_new_sid()): its record (the sid), its
 * statistics with no samples (they are in the journal, and the
 * statistics count them from there: series_rec.jseen) and its key by
 * id. Returns 0 or a store_err.
 */
int store_put_new_series(
    store_txn *t, const uint8_t *key, size_t klen, uint32_t sid);
int store_get_emitter(
    store_txn *t, const uint8_t *key, size_t klen, emitter_rec *out);
int store_put_emitter(
    store_txn *t, const uint8_t *key, size_t klen, const emitter_rec *r);
int store_get_run(store_txn *t, const char *run, size_t runlen, run_rec *out);
int store_put_run(
    store_txn *t, const char *run, size_t runlen, const run_rec *r);

/* The samples of a run refused by a series cap (meta "refused:" run).
 * Absent (STORE_ENOTFOUND from get) until the run's first refusal. */
int store_get_refused(
    store_txn *t, const char *run, size_t runlen, uint64_t *out);
int store_put_refused(
    store_txn *t, const char *run, size_t runlen, uint64_t n);

/*
 * The tail block of series r (the one at r->tail_first_step,
 * r->tail_no). get resumes enc from it (call it only when r->nblocks > 0);
 * STORE_ECORRUPT names the series. put writes enc there (nothing if it is
 * empty).
 */
int store_get_tail(store_txn *t, const series_rec *r, block_enc *enc);
int store_put_tail(store_txn *t, const series_rec *r, block_enc *enc);

/*
 * Series ids (meta "next_sid"). store_next_sid: the id the next new
 * series gets (1 in a new store; ids taken so far are next - 1);
 * store_new_sid takes it. Returns 0 or a store_err.
 */
int store_next_sid(store_txn *t, uint32_t *next);
int store_new_sid(store_txn *t, uint32_t *sid);

/*
 * Store an alert (one JSON object, not NUL-terminated) of a run under
 * the next alert number (meta "next_alert"), so alerts list in the order
 * they were stored. Returns 0 or a store_err.
 */
int store_put_alert(store_txn *t, const char *run, size_t runlen,
    const char *json, size_t len);

#endif /* STORE_WRITE_H */
