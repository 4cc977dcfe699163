#include "common/rules_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Read the file whole into a NUL-terminated buffer the caller frees, at
 * most RULES_FILE_MAX_BYTES. Returns NULL with the reason in err.
 */
static char *
read_capped(const char *path, size_t *len, char *err, size_t errlen)
{
	int    in  = strcmp(path, "-") == 0;
	FILE  *f   = in ? stdin : fopen(path, "rb");
	char  *buf = NULL;
	size_t n   = 0, k;

	if (f == NULL) {
		snprintf(err, errlen, "rules %s: %s", path, strerror(errno));
		return NULL;
	}
	if ((buf = malloc(RULES_FILE_MAX_BYTES + 1)) == NULL) {
		snprintf(err, errlen, "rules %s: out of memory", path);
		goto fail;
	}
	/* One byte past the cap tells a file at the cap from a larger one;
	 * a pipe may hand it over in several reads. */
	do {
		k = fread(buf + n, 1, RULES_FILE_MAX_BYTES + 1 - n, f);
		n += k;
	} while (k > 0 && n <= RULES_FILE_MAX_BYTES);
	if (ferror(f) || n > RULES_FILE_MAX_BYTES) {
		snprintf(err, errlen, "rules %s: %s", path,
		    ferror(f) ? "read error" : "larger than 1 MiB");
		goto fail;
	}
	if (!in)
		fclose(f);
	buf[n] = 0;
	*len   = n;
	return buf;
fail:
	if (!in)
		fclose(f);
	free(buf);
	return NULL;
}

int
rules_file_load(const char *path, detect_rules **out, char *err, size_t errlen)
{
	char  *text;
	size_t len = 0;
	int    rc;

	*out = NULL;
	if (path == NULL) {
		if ((rc = detect_rules_default(out)) != 0)
			snprintf(err, errlen, "built-in rules: %s",
			    detect_strerror(rc));
		return rc;
	}
	if ((text = read_capped(path, &len, err, errlen)) == NULL)
		return DETECT_EINVAL;
	rc = detect_rules_parse(text, len, path, out, err, errlen);
	free(text);
	if (rc != 0 && rc != DETECT_EPARSE)
		snprintf(
		    err, errlen, "rules %s: %s", path, detect_strerror(rc));
	return rc;
}
