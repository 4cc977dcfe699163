/*
 * reader: how every reading command opens the store: read-only, --db or
 * the default folder, one read transaction for the whole command (one
 * consistent moment while vitalsd writes). Errors are printed with the
 * folder named.
 */
#ifndef CLI_READER_H
#define CLI_READER_H

#include "cli/cli.h"
#include "store/store.h"

typedef struct cli_reader {
	store     *st;
	store_txn *txn;
} cli_reader;

/* Returns 0, or -1 after printing why. */
int  cli_reader_open(const cli_args *a, cli_reader *r);
void cli_reader_close(cli_reader *r);

/* Print a failed scan's reason (rc != 0), close r, and return the exit
 * status: 0 or 1. */
int cli_reader_done(cli_reader *r, int rc);

#endif /* CLI_READER_H */
