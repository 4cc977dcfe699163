/*
 * vitals keygen: a CURVE key pair for vitalsd or for an emitter.
 *
 *	vitals keygen [--out PREFIX]
 *
 * writes PREFIX.key (the secret key, mode 0600) and PREFIX.pub (the public
 * key), each one Z85 line; PREFIX defaults to "vitals". Existing files are
 * never overwritten.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "cli/cli.h"

/* Create path (which must not exist) with mode and write key and a
 * newline. Returns 0, or -1 after printing why (the file, if created, is
 * removed). */
static int
write_new(const char *path, mode_t mode, const char *key)
{
	char    line[64];
	int     n  = snprintf(line, sizeof(line), "%s\n", key);
	int     fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	ssize_t w;

	if (fd < 0) {
		fprintf(stderr, "vitals keygen: %s: %s%s\n", path,
		    strerror(errno),
		    errno == EEXIST ? " (not overwritten; choose another "
		                      "--out PREFIX)"
		                    : "");
		explicit_bzero(line, sizeof(line));
		return -1;
	}
	w = write(fd, line, (size_t) n);
	explicit_bzero(line, sizeof(line));
	if (w != n || fsync(fd) != 0) {
		fprintf(stderr, "vitals keygen: writing %s: %s\n", path,
		    w < 0 || w == n ? strerror(errno) : "short write");
		close(fd);
		unlink(path);
		return -1;
	}
	if (close(fd) != 0) {
		fprintf(stderr, "vitals keygen: writing %s: %s\n", path,
		    strerror(errno));
		unlink(path);
		return -1;
	}
	return 0;
}

int
cmd_keygen(const cli_args *a)
{
	const char *prefix = a->out != NULL ? a->out : "vitals";
	char        keyp[4096], pubp[4096];
	char        pub[41], sec[41];
	int         rc = 1;

	if (a->npos > 0 || prefix[0] == '\0') {
		fprintf(stderr, "usage: vitals keygen [--out PREFIX]\n");
		return 2;
	}
	if ((size_t) snprintf(keyp, sizeof(keyp), "%s.key", prefix)
	        >= sizeof(keyp)
	    || (size_t) snprintf(pubp, sizeof(pubp), "%s.pub", prefix)
	        >= sizeof(pubp)) {
		fprintf(stderr, "vitals keygen: --out: path too long\n");
		return 2;
	}
	/* Check both before writing either: no half-written pair. */
	if (access(keyp, F_OK) == 0 || access(pubp, F_OK) == 0) {
		fprintf(stderr,
		    "vitals keygen: %s exists; not overwriting it (choose "
		    "another --out PREFIX)\n",
		    access(keyp, F_OK) == 0 ? keyp : pubp);
		return 1;
	}
	if (zmq_curve_keypair(pub, sec) != 0) {
		fprintf(
		    stderr, "vitals keygen: %s\n", zmq_strerror(zmq_errno()));
		return 1;
	}
	if (write_new(keyp, 0600, sec) != 0)
		goto out;
	if (write_new(pubp, 0644, pub) != 0) {
		unlink(keyp);
		goto out;
	}
	printf("secret key: %s (mode 0600; keep it private)\n"
	       "public key: %s  %s\n",
	    keyp, pubp, pub);
	rc = 0;
out:
	explicit_bzero(sec, sizeof(sec));
	return rc;
}
