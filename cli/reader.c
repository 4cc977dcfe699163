#include "cli/reader.h"

#include <stdio.h>

#include "store/paths.h"

int
cli_reader_open(const cli_args *a, cli_reader *r)
{
	char        dbbuf[1024], err[1400];
	const char *db = a->db;

	r->st  = NULL;
	r->txn = NULL;
	if (db == NULL) {
		if (paths_default_db(dbbuf, sizeof(dbbuf)) != 0) {
			fprintf(stderr, "vitals: no --db, and neither "
					"$VITALS_DB nor $HOME is set\n");
			return -1;
		}
		db = dbbuf;
	}
	if (store_open(db, STORE_RDONLY, &r->st, err, sizeof(err)) != 0) {
		fprintf(stderr, "vitals: %s\n", err);
		return -1;
	}
	if (store_read_begin(r->st, &r->txn) != 0) {
		fprintf(stderr, "vitals: %s\n", store_errmsg(r->st));
		store_close(r->st);
		r->st = NULL;
		return -1;
	}
	return 0;
}

void
cli_reader_close(cli_reader *r)
{
	store_read_end(r->txn);
	store_close(r->st);
	r->txn = NULL;
	r->st  = NULL;
}

int
cli_reader_done(cli_reader *r, int rc)
{
	if (rc != 0)
		fprintf(stderr, "vitals: %s\n", store_errmsg(r->st));
	cli_reader_close(r);
	return rc != 0;
}
