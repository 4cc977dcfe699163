#include "cli/reader.h"

#include <stdio.h>

#include "store/paths.h"
#include "store/scan.h"

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

typedef struct known_runs {
	size_t n;
} known_runs;

/* The known runs after the message, up to a screenful. */
static int
each_known(void *vctx, const char *run, size_t runlen, const run_rec *rr)
{
	known_runs *k = vctx;

	(void) rr;
	if (k->n++ < 20)
		fprintf(stderr, "%s%.*s", k->n > 1 ? ", " : "", (int) runlen,
		    run);
	else if (k->n == 21)
		fputs(", ...", stderr);
	return 0;
}

int
cli_reader_require_run(cli_reader *r, const char *run)
{
	run_rec    rr;
	known_runs k  = { 0 };
	int        rc = scan_run_get(r->st, r->txn, run, &rr);

	if (rc == 0)
		return 0;
	if (rc != STORE_ENOTFOUND) {
		fprintf(stderr, "vitals: %s\n", store_errmsg(r->st));
		return -1;
	}
	fprintf(stderr, "vitals: no run '%s' in %s; known runs: ", run,
	    store_dir(r->st));
	if (scan_runs(r->st, r->txn, each_known, &k) != 0 || k.n == 0)
		fputs(k.n == 0 ? "none yet" : "(could not list them)", stderr);
	fputc('\n', stderr);
	return -1;
}
