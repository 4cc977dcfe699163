#include "emitter/curve.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "vitals.h"

#define Z85_KEY_LEN 40

/*
 * Read the first key of a key file into z85 (41 bytes): the first
 * whitespace-separated word of the first line that has one and is not a
 * comment (a line starting with '#' is a comment unless its first word is
 * itself a key: '#' is a Z85 character). Returns 0, or -1 with detail in
 * err; on failure z85 holds no part of the file.
 */
static int
read_key(
    const char *what, const char *path, char *z85, char *err, size_t errlen)
{
	FILE   *f = fopen(path, "re");
	char    line[256];
	uint8_t bin[32];
	int     rc = -1;

	if (f == NULL) {
		snprintf(err, errlen, "%s file %s: %s", what, path,
		    strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		const char *p = line;
		size_t      n;

		while (*p == ' ' || *p == '\t')
			p++;
		n = strcspn(p, " \t\r\n");
		if (n == 0)
			continue;
		if (n == Z85_KEY_LEN) {
			memcpy(z85, p, n);
			z85[n] = '\0';
			if (zmq_z85_decode(bin, z85) != NULL) {
				rc = 0;
				break;
			}
		}
		if (*p == '#')
			continue;
		break;
	}
	if (rc != 0) {
		snprintf(err, errlen,
		    "%s file %s: no key (expected 40 Z85 characters, as "
		    "written by vitals keygen)",
		    what, path);
		memset(z85, 0, Z85_KEY_LEN + 1);
	}
	explicit_bzero(line, sizeof(line));
	fclose(f);
	return rc;
}

static const char *
pick(const char *opt, const char *env)
{
	if (opt == NULL)
		opt = getenv(env);
	return opt != NULL && opt[0] != '\0' ? opt : NULL;
}

int
vte_curve_load(const char *server_key_file, const char *key_file,
    vte_curve *out, char *err, size_t errlen)
{
	const char *sf = pick(server_key_file, "VITALS_SERVER_KEY_FILE");
	const char *kf = pick(key_file, "VITALS_KEY_FILE");
	char        server[Z85_KEY_LEN + 1], secret[Z85_KEY_LEN + 1];
	char        pub[Z85_KEY_LEN + 1];
	int         rc = VT_EKEY;

	memset(out, 0, sizeof(*out));
	if (sf == NULL && kf == NULL)
		return 0;
	if (sf == NULL || kf == NULL) {
		snprintf(err, errlen,
		    "CURVE needs both the collector's public key file "
		    "(VITALS_SERVER_KEY_FILE) and this client's secret key "
		    "file (VITALS_KEY_FILE); only the %s is set",
		    sf != NULL ? "first" : "second");
		return rc;
	}
	if (read_key("server public key", sf, server, err, errlen) != 0)
		goto fail;
	if (read_key("secret key", kf, secret, err, errlen) != 0)
		goto fail;
	if (zmq_curve_public(pub, secret) != 0) {
		snprintf(err, errlen, "secret key file %s: %s", kf,
		    zmq_strerror(zmq_errno()));
		goto fail;
	}
	zmq_z85_decode(out->server, server);
	zmq_z85_decode(out->secret, secret);
	zmq_z85_decode(out->pub, pub);
	out->on = 1;
	rc      = 0;
fail:
	explicit_bzero(secret, sizeof(secret));
	return rc;
}

void
vte_curve_wipe(vte_curve *c)
{
	explicit_bzero(c, sizeof(*c));
}
