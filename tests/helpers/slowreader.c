/*
 * slowreader: holds one read transaction on a vitals store for a
 * while, as a viewer stuck on a long query would.
 *
 *	slowreader DB SECONDS
 *
 * Prints "holding" once the transaction is open, then sleeps. Exit 0, or
 * 1 if the store cannot be opened.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "store/store.h"

int
main(int argc, char **argv)
{
	store     *st = NULL;
	store_txn *txn;
	char       err[1400];

	if (argc != 3) {
		fprintf(stderr, "usage: slowreader DB SECONDS\n");
		return 2;
	}
	if (store_open(argv[1], STORE_RDONLY, &st, err, sizeof(err)) != 0) {
		fprintf(stderr, "slowreader: %s\n", err);
		return 1;
	}
	if (store_read_begin(st, &txn) != 0) {
		fprintf(stderr, "slowreader: %s\n", store_errmsg(st));
		store_close(st);
		return 1;
	}
	printf("holding\n");
	fflush(stdout);
	sleep((unsigned) strtoul(argv[2], NULL, 10));
	store_read_end(txn);
	store_close(st);
	return 0;
}
