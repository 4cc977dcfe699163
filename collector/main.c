/*
 * vitalsd: the collector. Receives batches from emitters over ZeroMQ and
 * stores them in LMDB. Runs in the foreground and logs to stderr.
 *
 *	vitalsd [--listen ENDPOINT] [--db DIR] [--rules FILE] ...
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "collector/alerting.h"
#include "collector/auth.h"
#include "collector/ingest.h"
#include "collector/server.h"
#include "store/paths.h"
#include "store/store.h"
#include "vitals.h"

/* The flags set by signals (SIGTERM and SIGINT stop, SIGHUP rereads the
 * rules and the allow file): the daemon's only globals, written only by
 * the handlers. */
static volatile sig_atomic_t stop_flag, reload_flag;

static void
on_signal(int sig)
{
	if (sig == SIGHUP)
		reload_flag = 1;
	else
		stop_flag = 1;
}

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: vitalsd [--listen ENDPOINT] [--db DIR] [--rules FILE]\n"
	    "               [--commit-ms N] [--time-quantum-ns N] [--nosync] "
	    "[--quiet]\n"
	    "\n"
	    "Options take their value as --opt VALUE or --opt=VALUE.\n"
	    "  -h, --help         print this and exit\n"
	    "  --version          print the version and exit\n"
	    "  --listen ENDPOINT  ZeroMQ endpoint (default %s)\n"
	    "  --db DIR           database folder (default $VITALS_DB, else\n"
	    "                     ~/.local/share/vitals)\n"
	    "  --rules FILE       anomaly rules (default: the built-in set,\n"
	    "                     see vitals rules default); SIGHUP rereads\n"
	    "  --no-detect        store samples only, no anomaly rules\n"
	    "  --commit-ms N      wait before committing a group of batches\n"
	    "                     (default 20; longer when commits are slow,\n"
	    "                     none for a batch an emitter waits for)\n"
	    "  --time-quantum-ns N  store times rounded down to N ns "
	    "(default 1000000)\n"
	    "  --nosync           do not fsync commits: survives a crash of\n"
	    "                     vitalsd, not of the machine\n"
	    "  --curve-secret FILE  encrypt and authenticate with CURVE: the\n"
	    "                     collector's secret key (vitals keygen)\n"
	    "  --allow FILE       with --curve-secret: the client public keys\n"
	    "                     allowed, one per line (# comments);\n"
	    "                     SIGHUP rereads it\n"
	    "  --insecure         allow a plain-text endpoint beyond loopback\n"
	    "                     (anyone who reaches it can write)\n"
	    "  --max-series-per-run N  series a run may have (default\n"
	    "                     100000, 0: no cap); samples of new series\n"
	    "                     past it are refused and one alert stored\n"
	    "  --max-series N     series in the store (default 1000000)\n"
	    "  --cache-series N, --cache-encoders N, --cache-emitters N\n"
	    "                     bounds of the write caches (defaults\n"
	    "                     131072, 16384 (4 KB each), 65536)\n",
	    VT_DEFAULT_ENDPOINT);
}

/* The options (getopt_long: --opt VALUE or --opt=VALUE). To add one:
 * an OPT_ value, a row, a case in main's loop and a line of usage. */
enum {
	OPT_LISTEN = 256,
	OPT_DB,
	OPT_RULES,
	OPT_NO_DETECT,
	OPT_COMMIT_MS,
	OPT_TIME_QUANTUM,
	OPT_NOSYNC,
	OPT_QUIET,
	OPT_CURVE_SECRET,
	OPT_ALLOW,
	OPT_INSECURE,
	OPT_MAX_SERIES_RUN,
	OPT_MAX_SERIES,
	OPT_CACHE_SERIES,
	OPT_CACHE_ENCODERS,
	OPT_CACHE_EMITTERS,
};

static const struct option longopts[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ "listen", required_argument, NULL, OPT_LISTEN },
	{ "db", required_argument, NULL, OPT_DB },
	{ "rules", required_argument, NULL, OPT_RULES },
	{ "no-detect", no_argument, NULL, OPT_NO_DETECT },
	{ "commit-ms", required_argument, NULL, OPT_COMMIT_MS },
	{ "time-quantum-ns", required_argument, NULL, OPT_TIME_QUANTUM },
	{ "nosync", no_argument, NULL, OPT_NOSYNC },
	{ "quiet", no_argument, NULL, OPT_QUIET },
	{ "curve-secret", required_argument, NULL, OPT_CURVE_SECRET },
	{ "allow", required_argument, NULL, OPT_ALLOW },
	{ "insecure", no_argument, NULL, OPT_INSECURE },
	{ "max-series-per-run", required_argument, NULL, OPT_MAX_SERIES_RUN },
	{ "max-series", required_argument, NULL, OPT_MAX_SERIES },
	{ "cache-series", required_argument, NULL, OPT_CACHE_SERIES },
	{ "cache-encoders", required_argument, NULL, OPT_CACHE_ENCODERS },
	{ "cache-emitters", required_argument, NULL, OPT_CACHE_EMITTERS },
	{ NULL, 0, NULL, 0 },
};

/*
 * Bind the endpoint once and let it go, so that an endpoint vitalsd
 * cannot listen on is reported before --db is created or touched
 * (server_run binds it for good later; a race with another process
 * taking it meanwhile is reported there).
 */
static int
can_listen(const char *endpoint)
{
	void *ctx = zmq_ctx_new(), *sock = NULL;
	int   rc = -1, linger = 0;

	if (ctx == NULL || (sock = zmq_socket(ctx, ZMQ_ROUTER)) == NULL)
		goto done;
	zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof(linger));
	if (zmq_bind(sock, endpoint) != 0) {
		fprintf(stderr, "vitalsd: cannot listen on %s: %s\n",
		    endpoint, zmq_strerror(zmq_errno()));
		goto done;
	}
	rc = 0;
done:
	if (sock != NULL)
		zmq_close(sock);
	if (ctx != NULL)
		zmq_ctx_term(ctx);
	return rc;
}

static int
parse_long(const char *opt, const char *s, long lo, long hi, long *out)
{
	char *end;
	long  v;

	errno = 0;
	v     = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != 0 || v < lo || v > hi) {
		fprintf(stderr, "vitalsd: %s: expected a number from %ld to "
				"%ld, got '%s'\n",
		    opt, lo, hi, s);
		return -1;
	}
	*out = v;
	return 0;
}

int
main(int argc, char **argv)
{
	server_opts      so;
	ingest_opts      io;
	const char      *db    = NULL;
	const char      *rules = NULL;
	char             dbbuf[1024], err[1400];
	int              flags = 0, rc, detect = 1, insecure = 0;
	alerting        *al    = NULL;
	store           *st    = NULL;
	ingest          *in    = NULL;
	struct sigaction sa;
	long             v;
	int              ch;

	server_opts_init(&so);
	ingest_opts_init(&io);
	io.time_quantum_ns = 1000000;
	so.listen          = VT_DEFAULT_ENDPOINT;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":hV", longopts, NULL)) != -1) {
		const char *next = optarg;
		const char *a    = argv[optind - 1];

		switch (ch) {
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("vitalsd %s\n", VT_VERSION_STR);
			return 0;
		case OPT_NOSYNC:
			flags |= STORE_NOSYNC;
			break;
		case OPT_NO_DETECT:
			detect = 0;
			break;
		case OPT_QUIET:
			so.quiet = 1;
			break;
		case OPT_INSECURE:
			insecure = 1;
			break;
		case OPT_LISTEN:
			so.listen = next;
			break;
		case OPT_DB:
			db = next;
			break;
		case OPT_RULES:
			/* The shared loader reads "-" as stdin, but a daemon
			 * reads its rules again on SIGHUP: a file only. */
			if (strcmp(next, "-") == 0) {
				fprintf(stderr, "vitalsd: --rules -: give a "
						"file (it is read again on "
						"SIGHUP)\n");
				return 2;
			}
			rules = next;
			break;
		case OPT_CURVE_SECRET:
			so.curve_secret = next;
			break;
		case OPT_ALLOW:
			so.allow = next;
			break;
		case OPT_COMMIT_MS:
			if (parse_long("--commit-ms", next, 0, 60000, &v) != 0)
				return 2;
			so.commit_ms = (int) v;
			break;
		case OPT_MAX_SERIES_RUN:
			if (parse_long("--max-series-per-run", next, 0,
				1000000000, &v) != 0)
				return 2;
			io.max_series_run = (uint64_t) v;
			break;
		case OPT_MAX_SERIES:
			if (parse_long("--max-series", next, 0, 1000000000,
				&v) != 0)
				return 2;
			io.max_series_total = (uint64_t) v;
			break;
		case OPT_CACHE_SERIES:
			if (parse_long("--cache-series", next, 16, 100000000,
				&v) != 0)
				return 2;
			io.cache_series = (size_t) v;
			break;
		case OPT_CACHE_ENCODERS:
			if (parse_long("--cache-encoders", next, 16, 100000000,
				&v) != 0)
				return 2;
			io.cache_encoders = (size_t) v;
			break;
		case OPT_CACHE_EMITTERS:
			if (parse_long("--cache-emitters", next, 16, 100000000,
				&v) != 0)
				return 2;
			io.cache_emitters = (size_t) v;
			break;
		case OPT_TIME_QUANTUM:
			if (parse_long("--time-quantum-ns", next, 1,
				1000000000, &v) != 0)
				return 2;
			io.time_quantum_ns = v;
			break;
		case ':':
			fprintf(stderr, "vitalsd: %s needs a value (see "
					"--help)\n",
			    a);
			return 2;
		default:
			fprintf(stderr, "vitalsd: unknown option %s (see "
					"--help)\n",
			    a);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "vitalsd: unexpected argument '%s' (see "
				"--help)\n",
		    argv[optind]);
		return 2;
	}
	if ((so.curve_secret == NULL) != (so.allow == NULL)) {
		fprintf(stderr, "vitalsd: --curve-secret and --allow go "
				"together: the key of the collector and the "
				"client keys it accepts\n");
		return 2;
	}
	if (so.curve_secret == NULL && !insecure
	    && !auth_endpoint_is_local(so.listen)) {
		fprintf(stderr,
		    "vitalsd: refusing to listen on %s without "
		    "authentication: it is reachable beyond this machine.\n"
		    "  Use --curve-secret FILE --allow FILE (see vitals "
		    "keygen), or --insecure to accept anyone.\n",
		    so.listen);
		return 2;
	}
	if (db == NULL) {
		if (paths_default_db(dbbuf, sizeof(dbbuf)) != 0) {
			fprintf(stderr, "vitalsd: no --db, and neither "
					"$VITALS_DB nor $HOME is set\n");
			return 2;
		}
		db = dbbuf;
	}
	if (detect && alerting_open(rules, io.time_quantum_ns, &al) != 0)
		return 1;
	if (can_listen(so.listen) != 0) {
		alerting_close(al);
		return 1;
	}

	if ((rc = store_open(db, flags, &st, err, sizeof(err))) != 0) {
		fprintf(stderr, "vitalsd: %s\n", err);
		alerting_close(al);
		return 1;
	}
	if (ingest_open(st, &io, &in) != 0) {
		fprintf(stderr, "vitalsd: out of memory\n");
		alerting_close(al);
		store_close(st);
		return 1;
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);

	rc = server_run(&so, st, in, al, &stop_flag, &reload_flag);
	alerting_close(al);
	ingest_close(in);
	store_close(st);
	if (rc == 0)
		fprintf(stderr, "vitalsd: stopped cleanly\n");
	return rc;
}
