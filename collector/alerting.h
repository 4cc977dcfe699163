/*
 * alerting: the collector's side of detection. Loads the rules (a file,
 * or the built-in set), feeds every stored sample and a clock tick to the
 * detect engine, and for each alert transition: writes it to stdout as
 * one JSON line, stores it in the database, and starts the rule's exec
 * hook if it has one. SIGHUP reloads the rules file; a file that does not
 * parse keeps the old rules and says why.
 *
 * Samples are fed after the transaction holding them committed, so a
 * transaction aborted and applied again never feeds a sample twice; the
 * alerts they raise are stored in a transaction of their own right after.
 *
 * Thread rule: one thread at a time.
 */
#ifndef COLLECTOR_ALERTING_H
#define COLLECTOR_ALERTING_H

#include <stdint.h>

#include "collector/ingest.h"
#include "wire/wire.h"

typedef struct alerting alerting;

/* rules_path NULL: the built-in rules. Returns 0, or 1 after logging why
 * (a rules file that does not parse: file, line and column). */
int  alerting_open(const char *rules_path, alerting **out);
void alerting_close(alerting *al);

/* Feed the samples of a stored batch; times as the store keeps them. */
void alerting_feed(alerting *al, ingest *in, const wire_batch *b);

/* Advance the wall clock (stalls) and look after running hooks. */
void alerting_tick(alerting *al, int64_t now_ns, int64_t mono_ns);

/* Store the alerts raised since the last call (one transaction). Returns
 * 0 or a store_err; on failure they stay queued for the next call. */
int alerting_store(alerting *al, ingest *in);

/* Read the rules file again; keeps the old rules if it does not parse. */
void alerting_reload(alerting *al);

#endif /* COLLECTOR_ALERTING_H */
