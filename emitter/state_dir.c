#include "emitter/state_dir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int
vte_state_dir(const char *sub, char *buf, size_t len)
{
	const char *e = getenv("XDG_STATE_HOME");
	int         n;

	if (e != NULL && *e != 0)
		n = snprintf(buf, len, "%s/vitals/%s", e, sub);
	else if ((e = getenv("HOME")) != NULL && *e != 0)
		n = snprintf(buf, len, "%s/.local/state/vitals/%s", e, sub);
	else
		return -1;
	return n < 0 || (size_t) n >= len ? -1 : 0;
}

int
vte_mkdir_p(const char *dir)
{
	char   p[4096];
	size_t n = strlen(dir);

	if (n == 0 || n >= sizeof(p)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(p, dir, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (p[i] != '/' && p[i] != 0)
			continue;
		p[i] = 0;
		if (mkdir(p, 0700) != 0 && errno != EEXIST)
			return -1;
		p[i] = i < n ? '/' : 0;
	}
	return 0;
}
