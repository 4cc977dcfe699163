/*
 * vitals top: the live terminal view (tui/). Sets the locale, for Unicode
 * glyphs, here on the program's side: the tui code never does.
 */
#include <locale.h>
#include <stdio.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/reader.h"
#include "store/paths.h"
#include "tui/tui.h"

int
cmd_top(const cli_args *a)
{
	char        dbbuf[1024];
	const char *db = a->db;

	if (a->npos > 0) {
		fprintf(stderr,
		    "vitals top: unexpected argument '%s' (usage: "
		    "vitals top [--db DIR] [--run R])\n",
		    a->pos[0]);
		return 2;
	}
	if (db == NULL) {
		if (paths_default_db(dbbuf, sizeof(dbbuf)) != 0) {
			fprintf(stderr,
			    "vitals top: no --db, and neither "
			    "$VITALS_DB nor $HOME is set\n");
			return 1;
		}
		db = dbbuf;
	}
	/* An unknown run is said before the screen is taken, with the runs
	 * there are; a database not created yet is waited for as before. */
	if (a->run != NULL) {
		cli_args   ra = *a;
		cli_reader r;
		char       mdb[1100];
		int        rc;

		ra.db = db;
		snprintf(mdb, sizeof(mdb), "%s/data.mdb", db);
		if (access(mdb, F_OK) == 0 && cli_reader_open(&ra, &r) == 0) {
			rc = cli_reader_require_run(&r, a->run);
			cli_reader_close(&r);
			if (rc != 0)
				return 1;
		}
	}
	setlocale(LC_ALL, "");
	return tui_top(db, a->run);
}
