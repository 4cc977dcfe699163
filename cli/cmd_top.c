/*
 * vitals top: the live terminal view (tui/). Sets the locale, for Unicode
 * glyphs, here on the program's side: the tui code never does.
 */
#include <locale.h>
#include <stdio.h>

#include "cli/cli.h"
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
	setlocale(LC_ALL, "");
	return tui_top(db, a->run);
}
