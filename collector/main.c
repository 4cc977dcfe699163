/*
 * vitalsd: the collector. Receives batches from emitters over ZeroMQ and
 * stores them in LMDB. Runs in the foreground and logs to stderr.
 *
 *	vitalsd [--listen ENDPOINT] [--db DIR] [--rules FILE] ...
 */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>
#include <sys/resource.h>

#include "collector/alerting.h"
#include "collector/alertmanager.h"
#include "collector/auth.h"
#include "collector/http.h"
#include "collector/ingest.h"
#include "collector/remote_write.h"
#include "collector/server.h"
#include "detect/budget.h"
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

/* Where alert transitions go besides stdout, hooks and the store. */
typedef struct sinks {
	expo     *x;
	alertmgr *am;
} sinks;

static void
on_transition(void *ctx, const detect_alert *a)
{
	const sinks *k = ctx;

	if (k->x != NULL)
		expo_alert(k->x, a);
	if (k->am != NULL)
		alertmgr_alert(k->am, a);
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
	    "  --cache-series N, --cache-emitters N\n"
	    "                     bounds of the write caches (defaults\n"
	    "                     131072, 65536); --cache-encoders N is\n"
	    "                     accepted and has no effect (the journal)\n"
	    "  --journal-samples N  samples the journal holds before its\n"
	    "                     oldest records are folded into blocks\n"
	    "                     (default 4194304, about 10 bytes each;\n"
	    "                     wide records: 1024 a series, up to 4x)\n"
	    "  --max-connections N  connections at once (default: the\n"
	    "                     descriptor limit, raised to its hard\n"
	    "                     limit at start, less %d kept for the\n"
	    "                     store and hooks); more are closed at once\n"
	    "  --max-connections-per-peer N  from one IP address (ipc://:\n"
	    "                     one process) (default: half the above)\n"
	    "  --idle-timeout-ms N  close a connection that sent no message\n"
	    "                     for N ms (default 120000, 0: never);\n"
	    "                     emitters reconnect when they have more\n"
	    "  --max-pending-mib N  received batches waiting for their\n"
	    "                     commit, in MiB (default 64): reading\n"
	    "                     stops there until the commit\n"
	    "  --detect-queue-mib N  stored batches waiting for the rules,\n"
	    "                     in MiB (default 64): past it ingest waits\n"
	    "  --max-message-mib N  largest message taken, 1 to 16 (default\n"
	    "                     16); a peer sending more is disconnected\n"
	    "  --detect-max-series-per-run N  series of one run the rules\n"
	    "                     check (default 25000, 0: no cap); a run\n"
	    "                     past it gets one detect_budget alert\n"
	    "  --detect-series-idle-s N  when the rules' max_series are\n"
	    "                     checked, a series idle N s is forgotten\n"
	    "                     for a new one (default 900, -1: never)\n"
	    "  --http ADDR        serve /metrics (Prometheus, OpenMetrics)\n"
	    "                     and /healthz on HOST:PORT (loopback\n"
	    "                     unless --insecure; port 0: a free one)\n"
	    "  --http-max-series N  vitals_value series on /metrics\n"
	    "                     (default 100000); the rest are counted\n"
	    "  --http-metrics REGEX  only metric names matching it\n"
	    "  --alertmanager URL  post alerts to this Alertmanager\n"
	    "                     (repeatable: an HA pair)\n"
	    "  --alertmanager-resend-ms N  re-send firing alerts every N\n"
	    "                     ms (default 30000)\n"
	    "  --remote-write URL  forward every stored sample to this\n"
	    "                     Prometheus remote-write receiver\n"
	    "                     (repeatable; resumes after a restart)\n"
	    "  --remote-write-lag-alert-s N  log once when a receiver is\n"
	    "                     N s behind (default 60)\n"
	    "  docs/fleet.md: Prometheus, VictoriaMetrics, Alertmanager\n"
	    "\n"
	    "Memory: at most about 256 MiB (caches at their defaults) +\n"
	    "  max-pending + detect-queue + 2 x max-message + what ZeroMQ\n"
	    "  queues: up to 1089 messages per connection (an emitter's\n"
	    "  window is 1024); see docs/limits.md.\n",
	    VT_DEFAULT_ENDPOINT, CONNS_FD_RESERVE);
}

/*
 * Take every descriptor the hard limit allows (up to 2^20: the connection
 * table is sized from it), so the connection cap can leave room for the
 * store and hooks. A failure leaves the soft limit, which conns sizes
 * itself from.
 */
static void
raise_nofile(void)
{
	struct rlimit rl;
	rlim_t        want;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return;
	want = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > (1u << 20)
	    ? (1u << 20)
	    : rl.rlim_max;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
		rl.rlim_cur = want;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/*
 * A tcp:// endpoint's port must be 1 to 65535 (or *): ZeroMQ would take
 * 99999 modulo 65536 and listen somewhere else. Returns 0, or -1 after
 * saying why.
 */
static int
check_listen(const char *ep)
{
	const char *port;
	char       *end;
	long        v;

	if (strncmp(ep, "tcp://", 6) != 0)
		return 0;
	port = strrchr(ep + 6, ':');
	if (port == NULL || port[1] == 0) {
		fprintf(stderr, "vitalsd: --listen %s: expected "
				"tcp://HOST:PORT\n",
		    ep);
		return -1;
	}
	port++;
	if (strcmp(port, "*") == 0)
		return 0;
	errno = 0;
	v     = strtol(port, &end, 10);
	if (errno != 0 || end == port || *end != 0 || v < 1 || v > 65535) {
		fprintf(stderr, "vitalsd: --listen %s: the port must be a "
				"number from 1 to 65535 (or *), got '%s'\n",
		    ep, port);
		return -1;
	}
	return 0;
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
	OPT_JOURNAL_SAMPLES,
	OPT_HTTP,
	OPT_HTTP_METRICS,
	OPT_HTTP_MAX_SERIES,
	OPT_ALERTMANAGER,
	OPT_ALERTMANAGER_RESEND,
	OPT_MAX_CONNECTIONS,
	OPT_MAX_PER_PEER,
	OPT_IDLE_TIMEOUT,
	OPT_MAX_PENDING,
	OPT_DETECT_QUEUE,
	OPT_MAX_MESSAGE,
	OPT_DETECT_PER_RUN,
	OPT_DETECT_IDLE,
	OPT_REMOTE_WRITE,
	OPT_REMOTE_WRITE_LAG,
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
	{ "journal-samples", required_argument, NULL, OPT_JOURNAL_SAMPLES },
	{ "http", required_argument, NULL, OPT_HTTP },
	{ "http-metrics", required_argument, NULL, OPT_HTTP_METRICS },
	{ "http-max-series", required_argument, NULL, OPT_HTTP_MAX_SERIES },
	{ "alertmanager", required_argument, NULL, OPT_ALERTMANAGER },
	{ "alertmanager-resend-ms", required_argument, NULL,
	    OPT_ALERTMANAGER_RESEND },
	{ "max-connections", required_argument, NULL, OPT_MAX_CONNECTIONS },
	{ "max-connections-per-peer", required_argument, NULL,
	    OPT_MAX_PER_PEER },
	{ "idle-timeout-ms", required_argument, NULL, OPT_IDLE_TIMEOUT },
	{ "max-pending-mib", required_argument, NULL, OPT_MAX_PENDING },
	{ "detect-queue-mib", required_argument, NULL, OPT_DETECT_QUEUE },
	{ "max-message-mib", required_argument, NULL, OPT_MAX_MESSAGE },
	{ "detect-max-series-per-run", required_argument, NULL,
	    OPT_DETECT_PER_RUN },
	{ "detect-series-idle-s", required_argument, NULL, OPT_DETECT_IDLE },
	{ "remote-write", required_argument, NULL, OPT_REMOTE_WRITE },
	{ "remote-write-lag-alert-s", required_argument, NULL,
	    OPT_REMOTE_WRITE_LAG },
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
	size_t           queue_bytes = ALERTING_QUEUE_BYTES;
	uint64_t         det_per_run = DETECT_BUDGET_PER_RUN;
	int64_t          det_idle_ns = DETECT_BUDGET_IDLE_NS;
	const char      *http_addr = NULL;
	expo_opts        xo;
	alertmgr_opts    ao;
	sinks            sk   = { NULL, NULL };
	http            *web  = NULL;
	http_opts        ho;
	rwrite_opts      ro;
	rwrite          *rw = NULL;

	server_opts_init(&so);
	ingest_opts_init(&io);
	expo_opts_init(&xo);
	alertmgr_opts_init(&ao);
	rwrite_opts_init(&ro);
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
		case OPT_HTTP:
			http_addr = next;
			break;
		case OPT_HTTP_METRICS:
			xo.filter = next;
			break;
		case OPT_HTTP_MAX_SERIES:
			if (parse_long("--http-max-series", next, 0, 100000000,
				&v) != 0)
				return 2;
			xo.max_series = (size_t) v;
			break;
		case OPT_ALERTMANAGER:
			if (ao.nurls == ALERTMGR_URLS_MAX) {
				fprintf(stderr, "vitalsd: at most %d "
						"--alertmanager\n",
				    ALERTMGR_URLS_MAX);
				return 2;
			}
			ao.urls[ao.nurls++] = next;
			break;
		case OPT_REMOTE_WRITE:
			if (ro.nurls == RWRITE_URLS_MAX) {
				fprintf(stderr, "vitalsd: at most %d "
						"--remote-write\n",
				    RWRITE_URLS_MAX);
				return 2;
			}
			/* A URL that cannot work is said before --db is
			 * touched. */
			if (rwrite_check_url(next, err, sizeof(err)) != 0) {
				fprintf(stderr, "vitalsd: %s\n", err);
				return 2;
			}
			ro.urls[ro.nurls++] = next;
			break;
		case OPT_REMOTE_WRITE_LAG:
			if (parse_long("--remote-write-lag-alert-s", next, 1,
				86400, &v) != 0)
				return 2;
			ro.lag_alert_s = (int) v;
			break;
		case OPT_ALERTMANAGER_RESEND:
			if (parse_long("--alertmanager-resend-ms", next, 100,
				3600000, &v) != 0)
				return 2;
			ao.resend_ms = (int) v;
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
		case OPT_JOURNAL_SAMPLES:
			if (parse_long("--journal-samples", next, 2, 1000000000,
				&v) != 0)
				return 2;
			io.journal_samples = (uint64_t) v;
			break;
		case OPT_MAX_CONNECTIONS:
			if (parse_long("--max-connections", next, 1, 1 << 20,
				&v) != 0)
				return 2;
			so.conns.max_total = v;
			break;
		case OPT_MAX_PER_PEER:
			if (parse_long("--max-connections-per-peer", next, 1,
				1 << 20, &v) != 0)
				return 2;
			so.conns.max_per_peer = v;
			break;
		case OPT_IDLE_TIMEOUT:
			if (parse_long("--idle-timeout-ms", next, 0, 86400000,
				&v) != 0)
				return 2;
			so.conns.idle_ms = v;
			break;
		case OPT_MAX_PENDING:
			if (parse_long("--max-pending-mib", next, 1, 1 << 20,
				&v) != 0)
				return 2;
			so.pending_bytes = (size_t) v << 20;
			break;
		case OPT_DETECT_QUEUE:
			if (parse_long("--detect-queue-mib", next, 1, 1 << 20,
				&v) != 0)
				return 2;
			queue_bytes = (size_t) v << 20;
			break;
		case OPT_MAX_MESSAGE:
			if (parse_long("--max-message-mib", next, 1, 16, &v)
			    != 0)
				return 2;
			so.max_message = (size_t) v << 20;
			break;
		case OPT_DETECT_PER_RUN:
			if (parse_long("--detect-max-series-per-run", next, 0,
				1000000000, &v) != 0)
				return 2;
			det_per_run = (uint64_t) v;
			break;
		case OPT_DETECT_IDLE:
			if (parse_long("--detect-series-idle-s", next, -1,
				100000000, &v) != 0)
				return 2;
			det_idle_ns = v < 0 ? -1 : (int64_t) v * 1000000000;
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
	if (check_listen(so.listen) != 0)
		return 2;
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
	raise_nofile();
	/* Message buffers (up to 16 MiB, allocated and freed by ZeroMQ's
	 * thread) in mappings of their own, given back when freed: glibc
	 * would otherwise raise its threshold after the first free and keep
	 * the heap grown to the largest burst. */
	mallopt(M_MMAP_THRESHOLD, 1 << 20);
	/* Smaller ones (batches of a wide run, a few hundred KB, received,
	 * copied for detection, freed by another thread) come and go every
	 * commit: with the default 128 KiB, each free at the top of a heap
	 * gave pages back and the next batch faulted them in again (a
	 * quarter to a third of vitalsd's CPU at 10,000 and 100,000 series
	 * a step, bench_wide_e2e). Each heap keeps up to 8 MiB free at its
	 * top instead. */
	mallopt(M_TRIM_THRESHOLD, 8 << 20);
	if (http_addr != NULL && expo_open(&xo, &sk.x, err, sizeof(err)) != 0) {
		fprintf(stderr, "vitalsd: %s\n", err);
		return 2;
	}
	if (ao.nurls > 0 && !detect) {
		fprintf(stderr, "vitalsd: --alertmanager needs the rules: "
				"drop --no-detect\n");
		expo_close(sk.x);
		return 2;
	}
	if (ao.nurls > 0 && alertmgr_open(&ao, &sk.am, err, sizeof(err)) != 0) {
		fprintf(stderr, "vitalsd: %s\n", err);
		expo_close(sk.x);
		return 2;
	}
	so.expo = sk.x;
	if (detect && alerting_open(rules, io.time_quantum_ns, &al) != 0) {
		alertmgr_close(sk.am);
		expo_close(sk.x);
		return 1;
	}
	if (al != NULL && (sk.x != NULL || sk.am != NULL))
		alerting_set_sink(al, on_transition, &sk);
	if (al != NULL) {
		alerting_set_queue_bytes(al, queue_bytes);
		alerting_set_budget(al, det_per_run, det_idle_ns);
	}
	if (can_listen(so.listen) != 0) {
		alerting_close(al);
		alertmgr_close(sk.am);
		expo_close(sk.x);
		return 1;
	}

	if ((rc = store_open(db, flags, &st, err, sizeof(err))) != 0) {
		fprintf(stderr, "vitalsd: %s\n", err);
		rc = 1;
		goto out;
	}
	if (ingest_open(st, &io, &in) != 0) {
		fprintf(stderr, "vitalsd: out of memory\n");
		rc = 1;
		goto out;
	}
	if (ro.nurls > 0 && rwrite_open(&ro, st, &rw, err, sizeof(err)) != 0) {
		fprintf(stderr, "vitalsd: %s\n", err);
		rc = 2;
		goto out;
	}
	so.rw = rw;
	if (http_addr != NULL) {
		ho.rw       = rw;
		ho.addr     = http_addr;
		ho.insecure = insecure;
		ho.x        = sk.x;
		ho.al       = al;
		ho.am       = sk.am;
		ho.db_dir   = db;
		if (http_open(&ho, &web, err, sizeof(err)) != 0) {
			fprintf(stderr, "vitalsd: %s\n", err);
			rc = 2;
			goto out;
		}
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
out:
	/* The sinks outlive the detection thread that feeds them. */
	http_close(web);
	rwrite_close(rw);
	alerting_close(al);
	alertmgr_close(sk.am);
	expo_close(sk.x);
	ingest_close(in);
	store_close(st);
	if (rc == 0)
		fprintf(stderr, "vitalsd: stopped cleanly\n");
	return rc;
}
