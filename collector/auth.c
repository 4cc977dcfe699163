#include "collector/auth.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <zmq.h>

#include "common/clock.h"

#define ZAP_ENDPOINT "inproc://zeromq.zap.01"
#define ZAP_DOMAIN "vitals"
#define Z85_KEY_LEN 40
#define KEY_LEN 32
#define LOG_BURST 10    /* refused attempts logged per window */
#define LOG_WINDOW_S 10 /* seconds */

struct auth {
	void      *rep; /* the ZAP handler: its thread only, once started */
	pthread_t  thread;
	int        started;
	atomic_int stop;
	atomic_int reload; /* auth_reload(): reread the allow file */
	uint8_t    secret[KEY_LEN];
	char       pub[Z85_KEY_LEN + 1];
	uint8_t (*keys)[KEY_LEN]; /* sorted, for bsearch */
	size_t nkeys;
	char  *allow_file;
	/* Rate limit of the refusal log: written by the ZAP thread and the
	 * connection thread (auth_monitor_event), under log_mu. */
	pthread_mutex_t log_mu;
	int64_t       log_window;
	unsigned long log_count;
};

static int
cmp_key(const void *a, const void *b)
{
	return memcmp(a, b, KEY_LEN);
}

/*
 * Read every key of a key file: per line, a key is a first word of 40
 * Z85 characters (a label may follow); other lines must be blank or start
 * with '#' ('#' is a Z85 character, so a key may start with it too).
 * Returns 0 with *keys (caller frees) and *n, or -1 with detail in err.
 */
static int
read_keys(const char *path, uint8_t (**keys)[KEY_LEN], size_t *n, char *err,
    size_t errlen)
{
	FILE  *f    = fopen(path, "re");
	char  *line = NULL;
	size_t cap = 0, lineno = 0, size = 0;
	uint8_t(*k)[KEY_LEN] = NULL;
	ssize_t len;

	*keys = NULL;
	*n    = 0;
	if (f == NULL) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	while ((len = getline(&line, &cap, f)) >= 0) {
		const char *p = line;
		char        z85[Z85_KEY_LEN + 1];
		size_t      w;

		lineno++;
		while (*p == ' ' || *p == '\t')
			p++;
		w = strcspn(p, " \t\r\n");
		if (w == 0)
			continue;
		if (w == Z85_KEY_LEN) {
			memcpy(z85, p, w);
			z85[w] = '\0';
			if (*n == size) {
				size_t ns = size ? size * 2 : 16;
				void  *nk = realloc(k, ns * KEY_LEN);

				if (nk == NULL) {
					snprintf(err, errlen,
					    "%s: out of memory", path);
					goto fail;
				}
				k    = nk;
				size = ns;
			}
			if (zmq_z85_decode(k[*n], z85) != NULL) {
				(*n)++;
				continue;
			}
		}
		if (*p == '#')
			continue;
		snprintf(err, errlen,
		    "%s:%zu: expected a key (40 Z85 characters, as written "
		    "by vitals keygen), a blank line or a # comment",
		    path, lineno);
		goto fail;
	}
	if (ferror(f)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto fail;
	}
	if (line != NULL)
		explicit_bzero(line, cap);
	free(line);
	fclose(f);
	*keys = k;
	return 0;
fail:
	if (line != NULL)
		explicit_bzero(line, cap);
	free(line);
	if (k != NULL)
		explicit_bzero(k, size * KEY_LEN);
	free(k);
	*n = 0;
	fclose(f);
	return -1;
}

/* Read the collector's one secret key and derive its public key. */
static int
read_secret(auth *a, const char *path, char *err, size_t errlen)
{
	uint8_t(*k)[KEY_LEN] = NULL;
	size_t      n;
	char        z85[Z85_KEY_LEN + 1];
	struct stat sb;
	int         rc = -1;

	if (read_keys(path, &k, &n, err, errlen) != 0)
		return -1;
	if (n != 1) {
		snprintf(err, errlen,
		    "%s: expected one secret key (PREFIX.key of vitals "
		    "keygen), found %zu",
		    path, n);
		goto out;
	}
	if (stat(path, &sb) == 0 && (sb.st_mode & 077) != 0)
		fprintf(stderr,
		    "vitalsd: warning: secret key file %s is readable by "
		    "others (mode %04o); chmod 600 it\n",
		    path, (unsigned) (sb.st_mode & 07777));
	memcpy(a->secret, k[0], KEY_LEN);
	if (zmq_z85_encode(z85, a->secret, KEY_LEN) == NULL
	    || zmq_curve_public(a->pub, z85) != 0) {
		snprintf(err, errlen, "%s: cannot derive the public key: %s",
		    path, zmq_strerror(zmq_errno()));
		goto out;
	}
	rc = 0;
out:
	explicit_bzero(z85, sizeof(z85));
	if (k != NULL)
		explicit_bzero(k, n * KEY_LEN);
	free(k);
	return rc;
}

static int
allowed(const auth *a, const uint8_t *key)
{
	return bsearch(key, a->keys, a->nkeys, KEY_LEN, cmp_key) != NULL;
}

/*
 * Log one refused attempt: at most LOG_BURST lines per LOG_WINDOW_S
 * seconds, so that clients retrying in a loop (every 0.1 to 1 s) cannot
 * fill the disk; the lines left out are counted in the next window.
 */
__attribute__((format(printf, 2, 3))) static void
log_refused(auth *a, const char *fmt, ...)
{
	int64_t w = now_mono_ns() / 1000000000ll / LOG_WINDOW_S;
	va_list ap;

	pthread_mutex_lock(&a->log_mu);
	if (w != a->log_window) {
		if (a->log_count > LOG_BURST)
			fprintf(stderr,
			    "vitalsd: %lu more refused connections not "
			    "shown\n",
			    a->log_count - LOG_BURST);
		a->log_window = w;
		a->log_count  = 0;
	}
	if (a->log_count++ < LOG_BURST) {
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&a->log_mu);
}

/* A frame as a printable, NUL-terminated string (cut to fit). */
static void
frame_str(zmq_msg_t *m, char *out, size_t size)
{
	size_t               n = zmq_msg_size(m);
	const unsigned char *d = zmq_msg_data(m);

	if (n >= size)
		n = size - 1;
	for (size_t i = 0; i < n; i++)
		out[i] = d[i] >= 0x20 && d[i] < 0x7f ? (char) d[i] : '?';
	out[n] = '\0';
}

/* Returns 0 or -1. */
static int
send_str(void *sock, const char *s, int more)
{
	return zmq_send(sock, s, strlen(s), more ? ZMQ_SNDMORE : 0) < 0 ? -1
	                                                                : 0;
}

/*
 * Answer one ZAP request (RFC 27): frames version, request id, domain,
 * address, routing id, mechanism, credentials. 200 for a CURVE client
 * whose key is allowed; 400 otherwise, logged. A malformed request gets
 * 500 (REP must answer every request to keep its state).
 */
static void
handle(auth *a)
{
	enum { VERSION, REQID, DOMAIN, ADDRESS, IDENTITY, MECH, KEY, NF };
	zmq_msg_t   f[NF];
	int         nf = 0, more = 1, toolong = 0;
	const char *status = "500", *text = "malformed ZAP request";
	char        user[Z85_KEY_LEN + 1] = "";

	while (more) {
		zmq_msg_t extra, *m = nf < NF ? &f[nf] : &extra;

		zmq_msg_init(m);
		if (zmq_msg_recv(m, a->rep, 0) < 0) {
			zmq_msg_close(m);
			break;
		}
		more = zmq_msg_more(m);
		if (m == &extra) {
			zmq_msg_close(m);
			toolong = 1;
		} else {
			nf++;
		}
	}
	if (nf == 0)
		return; /* interrupted: no request to answer */
	if (!toolong && nf >= KEY && zmq_msg_size(&f[VERSION]) == 3
	    && memcmp(zmq_msg_data(&f[VERSION]), "1.0", 3) == 0) {
		char addr[64], mech[16], key[Z85_KEY_LEN + 1] = "(none)";
		int  curve = zmq_msg_size(&f[MECH]) == 5
		    && memcmp(zmq_msg_data(&f[MECH]), "CURVE", 5) == 0;

		frame_str(&f[ADDRESS], addr, sizeof(addr));
		frame_str(&f[MECH], mech, sizeof(mech));
		if (curve && nf == NF && zmq_msg_size(&f[KEY]) == KEY_LEN)
			zmq_z85_encode(key, zmq_msg_data(&f[KEY]), KEY_LEN);
		if (curve && nf == NF && zmq_msg_size(&f[KEY]) == KEY_LEN
		    && allowed(a, zmq_msg_data(&f[KEY]))) {
			status = "200";
			text   = "OK";
			memcpy(user, key, sizeof(user));
		} else {
			status = "400";
			text   = "client key not allowed";
			log_refused(a,
			    "vitalsd: refused %s connection from %s: client "
			    "key %s is not in %s\n",
			    mech, addr, key, a->allow_file);
		}
	}
	/* Reply: version, request id, status, text, user id, metadata. */
	if (send_str(a->rep, "1.0", 1) == 0
	    && zmq_send(a->rep, nf > REQID ? zmq_msg_data(&f[REQID]) : "",
	           nf > REQID ? zmq_msg_size(&f[REQID]) : 0, ZMQ_SNDMORE)
	        >= 0
	    && send_str(a->rep, status, 1) == 0)
		(void) (send_str(a->rep, text, 1) == 0
		    && send_str(a->rep, user, 1) == 0
		    && send_str(a->rep, "", 0) == 0);
	for (int i = 0; i < nf; i++)
		zmq_msg_close(&f[i]);
}

/*
 * A handshake that failed before ZAP was asked: a plain-text client (no
 * CURVE keys, the mechanisms differ), or a client with the wrong server
 * key. ZeroMQ names the listening endpoint here, not the peer's address
 * (which it does not know yet).
 */
void
auth_monitor_event(void *arg, unsigned ev, uint32_t val, const char *ep)
{
	auth *a = arg;

	if (ev == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL
	    || (ev == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL
	        && val == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH))
		log_refused(a,
		    "vitalsd: refused a connection on %s: handshake failed "
		    "(a client without CURVE keys?)\n",
		    ep);
	else if (ev == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL)
		log_refused(a,
		    "vitalsd: refused a connection on %s: CURVE handshake "
		    "failed (protocol error 0x%08x: a client with another "
		    "server public key?)\n",
		    ep, (unsigned) val);
}

/* Read the allow file again (ZAP thread). A file that cannot be read, or
 * lists no key, leaves the keys in use. */
static void
reload_keys(auth *a)
{
	uint8_t(*k)[KEY_LEN] = NULL;
	size_t n             = 0;
	char   err[512];

	if (read_keys(a->allow_file, &k, &n, err, sizeof(err)) != 0) {
		fprintf(stderr,
		    "vitalsd: SIGHUP: %s; keeping the %zu client keys in "
		    "use\n",
		    err, a->nkeys);
		return;
	}
	if (n == 0) {
		fprintf(stderr,
		    "vitalsd: SIGHUP: %s lists no client key; keeping the %zu "
		    "in use\n",
		    a->allow_file, a->nkeys);
		free(k);
		return;
	}
	qsort(k, n, KEY_LEN, cmp_key);
	fprintf(stderr,
	    "vitalsd: SIGHUP: %s: %zu client keys allowed (were %zu); "
	    "connected clients keep their connections\n",
	    a->allow_file, n, a->nkeys);
	explicit_bzero(a->keys, a->nkeys * KEY_LEN);
	free(a->keys);
	a->keys  = k;
	a->nkeys = n;
}

static void *
zap_main(void *arg)
{
	auth *a = arg;

	while (!atomic_load_explicit(&a->stop, memory_order_acquire)) {
		zmq_pollitem_t it[1] = { { a->rep, 0, ZMQ_POLLIN, 0 } };

		if (atomic_exchange(&a->reload, 0))
			reload_keys(a);
		if (zmq_poll(it, 1, 100) < 0) {
			if (zmq_errno() == ETERM)
				break;
			continue;
		}
		if (it[0].revents & ZMQ_POLLIN)
			handle(a);
	}
	return NULL;
}

static void
auth_free(auth *a)
{
	if (a->keys != NULL)
		explicit_bzero(a->keys, a->nkeys * KEY_LEN);
	free(a->keys);
	free(a->allow_file);
	pthread_mutex_destroy(&a->log_mu);
	explicit_bzero(a, sizeof(*a));
	free(a);
}

int
auth_open(void *zctx, const char *secret_file, const char *allow_file,
    auth **out, char *err, size_t errlen)
{
	auth *a;
	int   linger = 0;

	*out = NULL;
	a    = calloc(1, sizeof(*a));
	if (a == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	pthread_mutex_init(&a->log_mu, NULL);
	atomic_init(&a->stop, 0);
	atomic_init(&a->reload, 0);
	a->allow_file = strdup(allow_file);
	if (a->allow_file == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (read_secret(a, secret_file, err, errlen) != 0)
		goto fail;
	if (read_keys(allow_file, &a->keys, &a->nkeys, err, errlen) != 0)
		goto fail;
	if (a->nkeys == 0) {
		snprintf(err, errlen,
		    "%s lists no client key: nobody could connect",
		    allow_file);
		goto fail;
	}
	qsort(a->keys, a->nkeys, KEY_LEN, cmp_key);
	a->rep = zmq_socket(zctx, ZMQ_REP);
	if (a->rep == NULL
	    || zmq_setsockopt(a->rep, ZMQ_LINGER, &linger, sizeof(linger)) != 0
	    || zmq_bind(a->rep, ZAP_ENDPOINT) != 0) {
		snprintf(err, errlen, "ZAP handler on %s: %s", ZAP_ENDPOINT,
		    zmq_strerror(zmq_errno()));
		goto fail_sock;
	}
	*out = a;
	return 0;
fail_sock:
	if (a->rep != NULL)
		zmq_close(a->rep);
fail:
	auth_free(a);
	return -1;
}

int
auth_apply(auth *a, void *zctx, void *sock, char *err, size_t errlen)
{
	int      on = 1, rc;
	sigset_t all, old;

	(void) zctx;
	if (a->started) {
		snprintf(err, errlen, "auth_apply: called twice");
		return -1;
	}
	if (zmq_setsockopt(sock, ZMQ_CURVE_SERVER, &on, sizeof(on)) != 0
	    || zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, a->secret, KEY_LEN)
	        != 0
	    || zmq_setsockopt(
	           sock, ZMQ_ZAP_DOMAIN, ZAP_DOMAIN, strlen(ZAP_DOMAIN))
	        != 0) {
		snprintf(err, errlen, "CURVE server options: %s",
		    zmq_strerror(zmq_errno()));
		return -1;
	}
	/* Signals are for the main thread (its stop and reload flags). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&a->thread, NULL, zap_main, a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		snprintf(err, errlen, "ZAP handler thread: %s", strerror(rc));
		return -1;
	}
	pthread_setname_np(a->thread, "vitalsd-zap");
	a->started = 1;
	return 0;
}

const char *
auth_public_key(const auth *a)
{
	return a->pub;
}

void
auth_reload(auth *a)
{
	if (a != NULL)
		atomic_store(&a->reload, 1);
}

size_t
auth_allowed(const auth *a)
{
	return a->nkeys;
}

void
auth_close(auth *a)
{
	if (a == NULL)
		return;
	atomic_store_explicit(&a->stop, 1, memory_order_release);
	if (a->started)
		pthread_join(a->thread, NULL);
	zmq_close(a->rep);
	auth_free(a);
}

int
auth_endpoint_is_local(const char *ep)
{
	char        host[256];
	const char *h, *colon;
	size_t      n;
	uint8_t     v4[4];

	if (strncmp(ep, "ipc://", 6) == 0 || strncmp(ep, "inproc://", 9) == 0)
		return 1;
	if (strncmp(ep, "tcp://", 6) != 0)
		return 0;
	h     = ep + 6;
	colon = strrchr(h, ':');
	if (colon == NULL)
		return 0;
	n = (size_t) (colon - h);
	if (n == 0 || n >= sizeof(host))
		return 0;
	memcpy(host, h, n);
	host[n] = '\0';
	if (strcmp(host, "[::1]") == 0 || strcasecmp(host, "localhost") == 0)
		return 1;
	return inet_pton(AF_INET, host, v4) == 1 && v4[0] == 127;
}
