/*
 * vitals spool: samples emitters could not deliver before their close
 * timeout, spooled to disk (emitter/spool.h), and sent later.
 *
 *	vitals spool [list [DIR]]
 *	vitals spool send [DIR] [--endpoint E] [--timeout-ms N]
 *
 * send sends each file's batches, unchanged, to the collector and waits
 * for every acknowledgement; then the file is removed. The collector
 * stores each (incarnation, seq) once, so a batch that had arrived
 * before the emitter gave up, or a file sent twice (a send cut short),
 * stores nothing twice. A file not fully acknowledged within the
 * timeout is kept for the next send.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "cli/cli.h"
#include "emitter/curve.h"
#include "emitter/spool.h"
#include "vitals.h"

#define PATH_LEN 4096

static int
is_spool(const struct dirent *e)
{
	size_t l  = strlen(e->d_name);
	size_t sl = strlen(VTE_SPOOL_SUFFIX);

	return e->d_name[0] != '.' && l > sl
	    && strcmp(e->d_name + l - sl, VTE_SPOOL_SUFFIX) == 0;
}

/* The folder: DIR, else the one emitters write to. Returns 0, or 1
 * after printing why there is none. */
static int
spool_folder(const cli_args *a, char *dir, size_t len)
{
	int r;

	if (a->npos > 1) {
		snprintf(dir, len, "%s", a->pos[1]);
		return 0;
	}
	r = vte_spool_dir(dir, len);
	if (r == 0)
		return 0;
	fprintf(stderr, "vitals spool: %s\n",
	    r > 0 ? "spooling is off (VITALS_SPOOL_DIR=off); name the folder"
	          : "no spool folder: set VITALS_SPOOL_DIR or HOME, or name "
	            "the folder");
	return 1;
}

/* Who a file's samples are from, for the report. */
static void
describe(const vte_spool_item *it, size_t n, char *out, size_t len)
{
	wire_batch b;
	char       why[64];
	uint64_t   samples = 0;

	for (size_t i = 0; i < n; i++)
		samples += it[i].n;
	if (n == 0
	    || wire_batch_decode(it[0].data, it[0].len, &b, why, sizeof(why))
	        != 0) {
		snprintf(out, len, "empty");
		return;
	}
	snprintf(out, len,
	    "run %.*s, rank %" PRId32 ", host %.*s, pid %" PRIu32
	    ", incarnation %016" PRIx64 ": %" PRIu64
	    " sample%s in %zu batch%s",
	    (int) b.id.run_len, b.id.run, b.id.rank, (int) b.id.host_len,
	    b.id.host, b.id.pid, b.id.incarnation, samples,
	    samples == 1 ? "" : "s", n, n == 1 ? "" : "es");
}

/* Per batch of a file being sent: its seq and how it settled. */
typedef struct sent {
	uint64_t seq;
	int      status; /* -1: no ACK yet, else enum wire_ack_status */
} sent;

/*
 * Send one file's batches on sock and wait for their ACKs until
 * timeout_ms. Returns 0 when every batch settled (the file may go), 1
 * when some did not (it stays), after printing what happened.
 */
static int
send_file(void *sock, const char *path, long timeout_ms)
{
	uint8_t        *buf;
	vte_spool_item *it;
	size_t          n, left;
	sent           *st = NULL;
	char            err[600], who[600];
	uint64_t        inc = 0, stored = 0, dup = 0, rej = 0;
	int64_t         deadline;
	int             rc = 1;
	struct timespec ts;

	if (vte_spool_read(path, &buf, &it, &n, err, sizeof(err)) != 0) {
		fprintf(stderr, "vitals spool: %s (kept)\n", err);
		return 1;
	}
	describe(it, n, who, sizeof(who));
	st = calloc(n + 1, sizeof(*st));
	if (st == NULL) {
		fprintf(stderr, "vitals spool: out of memory\n");
		goto out;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	deadline
	    = (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + timeout_ms;
	for (size_t i = 0; i < n; i++) {
		wire_batch b;

		wire_batch_decode(it[i].data, it[i].len, &b, err, sizeof(err));
		inc          = b.id.incarnation;
		st[i].seq    = b.seq;
		st[i].status = -1;
		if (zmq_send(sock, it[i].data, it[i].len, 0) < 0) {
			fprintf(stderr,
			    "vitals spool: %s: sending: %s (kept)\n", path,
			    zmq_strerror(zmq_errno()));
			goto out;
		}
	}
	left = n;
	while (left > 0) {
		zmq_pollitem_t pi = { sock, 0, ZMQ_POLLIN, 0 };
		uint8_t        m[64];
		wire_ack       ack;
		int64_t        now;
		int            len;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		now = (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
		if (now >= deadline)
			break;
		if (zmq_poll(&pi, 1, (long) (deadline - now)) <= 0)
			continue;
		len = zmq_recv(sock, m, sizeof(m), ZMQ_DONTWAIT);
		if (len != WIRE_ACK_SIZE
		    || wire_ack_decode(m, (size_t) len, &ack) != 0
		    || ack.incarnation != inc)
			continue; /* the ROUTER's empty frame, a stray ACK */
		for (size_t i = 0; i < n; i++) {
			uint8_t *d = buf + (it[i].data - buf);

			if (st[i].seq != ack.seq || st[i].status >= 0)
				continue;
			/* A collector older than the refused count in the
			 * header (docs/protocol.md) rejects it: the same
			 * batch again without it. */
			if (ack.status == WIRE_ACK_REJECTED
			    && wire_batch_strip_refused(d, &it[i].len)
			    && zmq_send(sock, d, it[i].len, 0) >= 0)
				continue;
			st[i].status = (int) ack.status;
			left--;
			if (ack.status == WIRE_ACK_STORED)
				stored += it[i].n;
			else if (ack.status == WIRE_ACK_DUPLICATE)
				dup += it[i].n;
			else
				rej += it[i].n;
		}
	}
	if (left > 0) {
		fprintf(stderr,
		    "vitals spool: %s: %zu of %zu batches not acknowledged "
		    "within %ld ms; kept for the next send (%s)\n",
		    path, left, n, timeout_ms, who);
		goto out;
	}
	if (unlink(path) != 0) {
		fprintf(stderr,
		    "vitals spool: %s: delivered, but cannot remove it: %s "
		    "(sending it again stores nothing twice)\n",
		    path, strerror(errno));
		goto out;
	}
	printf("%s: %s: %" PRIu64 " stored, %" PRIu64 " already stored, "
	       "%" PRIu64 " refused as malformed\n",
	    path, who, stored, dup, rej);
	rc = rej > 0;
out:
	free(st);
	free(it);
	free(buf);
	return rc;
}

/* A DEALER socket to the collector, with CURVE from the environment as
 * for any emitter. Returns it, or NULL after printing why. */
static void *
connect_to(void *ctx, const char *ep, long timeout_ms)
{
	vte_curve c;
	char      err[300];
	void     *s;
	int       zero = 0, hwm = 4 * 1024, tmo = (int) timeout_ms;

	if (vte_curve_load(NULL, NULL, &c, err, sizeof(err)) != 0) {
		fprintf(stderr, "vitals spool: %s\n", err);
		return NULL;
	}
	s = zmq_socket(ctx, ZMQ_DEALER);
	if (s == NULL)
		goto fail;
	/* A file holds at most 1025 batches: they all fit in the queue, and
	 * a send never waits longer than the timeout. */
	zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof(zero));
	zmq_setsockopt(s, ZMQ_SNDHWM, &hwm, sizeof(hwm));
	zmq_setsockopt(s, ZMQ_SNDTIMEO, &tmo, sizeof(tmo));
	if (c.on
	    && (zmq_setsockopt(s, ZMQ_CURVE_SERVERKEY, c.server, 32) != 0
	        || zmq_setsockopt(s, ZMQ_CURVE_PUBLICKEY, c.pub, 32) != 0
	        || zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, c.secret, 32) != 0))
		goto fail_sock;
	vte_curve_wipe(&c);
	if (zmq_connect(s, ep) != 0)
		goto fail_sock;
	return s;
fail_sock:
	zmq_close(s);
fail:
	vte_curve_wipe(&c);
	fprintf(
	    stderr, "vitals spool: %s: %s\n", ep, zmq_strerror(zmq_errno()));
	return NULL;
}

int
cmd_spool(const cli_args *a)
{
	const char     *verb = a->npos > 0 ? a->pos[0] : "list";
	char            dir[PATH_LEN], path[PATH_LEN + 300], err[600];
	struct dirent **ents = NULL;
	int             nf, rc = 0, send;
	const char     *ep;
	void           *ctx = NULL, *sock = NULL;

	send = strcmp(verb, "send") == 0;
	if ((!send && strcmp(verb, "list") != 0) || a->npos > 2) {
		fprintf(stderr,
		    "usage: vitals spool [list [DIR]]\n"
		    "       vitals spool send [DIR] [--endpoint E] "
		    "[--timeout-ms N]\n");
		return 2;
	}
	if (spool_folder(a, dir, sizeof(dir)) != 0)
		return 1;
	nf = scandir(dir, &ents, is_spool, alphasort);
	if (nf < 0) {
		if (errno != ENOENT) {
			fprintf(stderr, "vitals spool: %s: %s\n", dir,
			    strerror(errno));
			return 1;
		}
		nf = 0;
	}
	if (nf == 0) {
		fprintf(stderr, "vitals spool: nothing in %s\n", dir);
		free(ents);
		return 0;
	}
	if (send) {
		ep  = a->endpoint != NULL ? a->endpoint
		     : getenv("VITALS_ENDPOINT") != NULL
		     ? getenv("VITALS_ENDPOINT")
		     : VT_DEFAULT_ENDPOINT;
		ctx = zmq_ctx_new();
		if (ctx == NULL
		    || (sock = connect_to(ctx, ep, a->timeout_ms)) == NULL) {
			rc = 1;
			goto out;
		}
	}
	for (int i = 0; i < nf; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, ents[i]->d_name);
		if (send) {
			rc |= send_file(sock, path, a->timeout_ms);
			continue;
		}
		{
			uint8_t        *buf;
			vte_spool_item *it;
			size_t          n;
			char            who[600];

			if (vte_spool_read(
			        path, &buf, &it, &n, err, sizeof(err))
			    != 0) {
				fprintf(stderr, "vitals spool: %s\n", err);
				rc = 1;
				continue;
			}
			describe(it, n, who, sizeof(who));
			printf("%s: %s\n", path, who);
			free(it);
			free(buf);
		}
	}
out:
	if (sock != NULL)
		zmq_close(sock);
	if (ctx != NULL)
		zmq_ctx_term(ctx);
	for (int i = 0; i < nf; i++)
		free(ents[i]);
	free(ents);
	return rc;
}
