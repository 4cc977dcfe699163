#include "store/paths.h"

#include <stdio.h>
#include <stdlib.h>

int
paths_default_db(char *buf, size_t len)
{
	const char *e = getenv("VITALS_DB");
	int         n;

	if (e != NULL && *e != 0)
		n = snprintf(buf, len, "%s", e);
	else if ((e = getenv("XDG_DATA_HOME")) != NULL && *e != 0)
		n = snprintf(buf, len, "%s/vitals", e);
	else if ((e = getenv("HOME")) != NULL && *e != 0)
		n = snprintf(buf, len, "%s/.local/share/vitals", e);
	else
		return -1;
	return n < 0 || (size_t) n >= len ? -1 : 0;
}
