/*
 * paths: where the database lives when --db is not given. Shared by
 * vitalsd and the vitals commands so they agree.
 */
#ifndef STORE_PATHS_H
#define STORE_PATHS_H

#include <stddef.h>

/* $VITALS_DB, else $XDG_DATA_HOME/vitals, else $HOME/.local/share/vitals.
 * Returns 0, or -1 if none is set or the path does not fit. */
int paths_default_db(char *buf, size_t len);

#endif
