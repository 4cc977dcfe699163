/*
 * scan_last: one value per step. A step can be stored more than once
 * (`vitals emit` called twice for it, the redone steps of a restart);
 * query and export show the value stored last, as `vitals top` does.
 * Kept apart from scan.c, which reads the blocks: this only filters what
 * scan_samples() yields, whatever the block layout.
 */
#ifndef STORE_SCAN_LAST_H
#define STORE_SCAN_LAST_H

#include "store/scan.h"

/*
 * As scan_samples(), but each step with from <= step <= to once, in step
 * order, with the time and value of the sample stored last at that step
 * (scan_samples() yields equal steps in the order they were stored).
 * Returns 0, the callback's non-zero value, or a store_err.
 */
int scan_samples_last(store *st, store_txn *txn, uint32_t sid, uint64_t from,
    uint64_t to, scan_sample_fn fn, void *ctx);

#endif /* STORE_SCAN_LAST_H */
