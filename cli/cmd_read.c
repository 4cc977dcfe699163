/*
 * The reading commands: runs, metrics, emitters, query, export. Each opens
 * the store read-only and reads in one transaction, so it sees one
 * consistent moment even while vitalsd writes.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/reader.h"
#include "detect/detect.h"
#include "store/scan.h"
#include "store/scan_last.h"
#include "wire/wire.h"

static void
put_i64_time(char *buf, size_t len, int64_t t, int valid)
{
	if (!valid)
		snprintf(buf, len, "%s", "");
	else
		out_time(buf, len, t);
}

typedef struct ctx_runs {
	const cli_args *a;
	store          *st;
	store_txn      *txn;
	size_t          n;
} ctx_runs;

static int
sum_refused(void *vctx, const char *run, size_t runlen, const emitter_rec *e)
{
	uint64_t *sum = vctx;

	(void) run;
	(void) runlen;
	*sum += e->refused;
	return 0;
}

/*
 * refused: samples refused by a series cap; emitter_refused: samples its
 * emitters refused for their name (bad, or the name table full), as their
 * batch headers said; finished: every rank's latest
 * process closed normally (false while it runs, and when it crashed or
 * was killed).
 */
static int
each_run(void *vctx, const char *run, size_t runlen, const run_rec *r)
{
	ctx_runs *c = vctx;
	char      t0[40], t1[40], name[WIRE_RUN_MAX + 1];
	int       valid = r->samples > 0, finished = 0, rc;
	uint64_t  refused = 0, erefused = 0;

	c->n++;
	if (runlen > WIRE_RUN_MAX)
		return STORE_ECORRUPT;
	memcpy(name, run, runlen);
	name[runlen] = 0;
	if ((rc = scan_refused_get(c->st, c->txn, run, runlen, &refused)) != 0
	    || (rc = scan_run_finished(c->st, c->txn, name, &finished)) != 0
	    || (rc = scan_emitters(
	            c->st, c->txn, name, sum_refused, &erefused))
	        != 0)
		return rc;
	put_i64_time(t0, sizeof(t0), r->first_time, valid);
	put_i64_time(t1, sizeof(t1), r->last_time, valid);
	if (c->a->format == OUT_CSV) {
		out_csv_str(stdout, run, runlen);
		printf(",%" PRIu64 ",%" PRIu64 ",%s,%s,%" PRIu64
		       ",%u,%u,%" PRIu64 ",%" PRIu64 ",%s,%" PRIu64 "\n",
		    valid ? r->first_step : 0, valid ? r->last_step : 0, t0,
		    t1, r->samples, r->series, r->emitters, r->dropped,
		    refused, finished ? "true" : "false", erefused);
		return 0;
	}
	fputs("{\"run\":", stdout);
	out_json_str(stdout, run, runlen);
	printf(",\"first_step\":%" PRIu64 ",\"last_step\":%" PRIu64
	       ",\"first_time\":%s,\"last_time\":%s,\"samples\":%" PRIu64
	       ",\"series\":%u,\"emitters\":%u,\"dropped\":%" PRIu64
	       ",\"refused\":%" PRIu64 ",\"finished\":%s"
	       ",\"emitter_refused\":%" PRIu64 "}\n",
	    valid ? r->first_step : 0, valid ? r->last_step : 0,
	    valid ? t0 : "null", valid ? t1 : "null", r->samples, r->series,
	    r->emitters, r->dropped, refused, finished ? "true" : "false",
	    erefused);
	return 0;
}

int
cmd_runs(const cli_args *a)
{
	cli_reader r;
	ctx_runs   c = { a, NULL, NULL, 0 };

	if (cli_reader_open(a, &r) != 0)
		return 1;
	c.st  = r.st;
	c.txn = r.txn;
	if (a->format == OUT_CSV)
		puts("run,first_step,last_step,first_time,last_time,samples,"
		     "series,emitters,dropped,refused,finished,"
		     "emitter_refused");
	return cli_reader_done(&r, scan_runs(r.st, r.txn, each_run, &c));
}

static int
each_metric(void *vctx, const scan_series *s)
{
	const cli_args *a = vctx;
	char            v[40], t[40];

	out_double(v, sizeof(v), s->rec.last_value, a->format);
	out_time(t, sizeof(t), s->rec.last_time);
	if (a->format == OUT_CSV) {
		out_csv_str(stdout, s->metric, s->mlen);
		printf(",%d,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%s,%s\n",
		    s->rank, s->rec.samples, s->rec.first_step,
		    s->rec.last_step, t, v);
		return 0;
	}
	fputs("{\"metric\":", stdout);
	out_json_str(stdout, s->metric, s->mlen);
	printf(",\"rank\":%d,\"samples\":%" PRIu64 ",\"first_step\":%" PRIu64
	       ",\"last_step\":%" PRIu64 ",\"last_time\":%s,\"last_value\":%s}"
	       "\n",
	    s->rank, s->rec.samples, s->rec.first_step, s->rec.last_step, t,
	    v);
	return 0;
}

int
cmd_metrics(const cli_args *a)
{
	cli_reader r;

	if (a->run == NULL) {
		fprintf(stderr, "vitals metrics: --run R is required\n");
		return 2;
	}
	if (cli_reader_open(a, &r) != 0)
		return 1;
	if (cli_reader_require_run(&r, a->run) != 0) {
		cli_reader_close(&r);
		return 1;
	}
	if (a->format == OUT_CSV)
		puts("metric,rank,samples,first_step,last_step,last_time,"
		     "last_value");
	return cli_reader_done(&r,
	    scan_series_of(
	        r.st, r.txn, a->run, each_metric, (void *) (uintptr_t) a));
}

static void
put_emitter(
    const cli_args *a, const char *run, size_t runlen, const emitter_rec *e)
{
	char t0[40], t1[40], te[40];

	out_time(t0, sizeof(t0), e->first_seen);
	out_time(t1, sizeof(t1), e->last_seen);
	/* ended: when it closed normally; empty (null) while it runs, or
	 * if it died. */
	put_i64_time(te, sizeof(te), e->ended, e->ended != 0);
	if (a->format == OUT_CSV) {
		out_csv_str(stdout, run, runlen);
		printf(",%016" PRIx64 ",", e->incarnation);
		out_csv_str(stdout, e->host, strlen(e->host));
		printf(",%u,%d,%d,%d,%s,%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64
		       ",%" PRIu64 ",%s,%" PRIu64 "\n",
		    e->pid, e->rank, e->local_rank, e->world_size, t0, t1,
		    e->batches, e->samples, e->duplicates, e->dropped,
		    e->ended ? te : "", e->refused);
		return;
	}
	fputs("{\"run\":", stdout);
	out_json_str(stdout, run, runlen);
	printf(
	    ",\"incarnation\":\"%016" PRIx64 "\",\"host\":", e->incarnation);
	out_json_str(stdout, e->host, strlen(e->host));
	printf(",\"pid\":%u,\"rank\":%d,\"local_rank\":%d,\"world_size\":%d,"
	       "\"first_seen\":%s,\"last_seen\":%s,\"batches\":%" PRIu64
	       ",\"samples\":%" PRIu64 ",\"duplicates\":%" PRIu64
	       ",\"dropped\":%" PRIu64 ",\"ended\":%s,\"refused\":%" PRIu64
	       "}\n",
	    e->pid, e->rank, e->local_rank, e->world_size, t0, t1, e->batches,
	    e->samples, e->duplicates, e->dropped, e->ended ? te : "null",
	    e->refused);
}

/* The emitters, gathered to be printed in the order first seen (the
 * store keeps them by incarnation id, which is random). */
typedef struct seen_emitter {
	emitter_rec e;
	char        run[WIRE_RUN_MAX + 1];
	size_t      runlen;
} seen_emitter;

typedef struct ctx_emitters {
	seen_emitter *v;
	size_t        n, cap;
} ctx_emitters;

static int
each_emitter(void *vctx, const char *run, size_t runlen, const emitter_rec *e)
{
	ctx_emitters *c = vctx;
	seen_emitter *nv;

	if (runlen > WIRE_RUN_MAX)
		return STORE_ECORRUPT;
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 64;
		if ((nv = realloc(c->v, c->cap * sizeof(*nv))) == NULL)
			return STORE_ENOMEM;
		c->v = nv;
	}
	c->v[c->n].e = *e;
	memcpy(c->v[c->n].run, run, runlen);
	c->v[c->n].runlen = runlen;
	c->n++;
	return 0;
}

static int
by_first_seen(const void *pa, const void *pb)
{
	const seen_emitter *a = pa, *b = pb;

	if (a->e.first_seen != b->e.first_seen)
		return a->e.first_seen < b->e.first_seen ? -1 : 1;
	return a->e.incarnation < b->e.incarnation
	    ? -1
	    : a->e.incarnation > b->e.incarnation;
}

int
cmd_emitters(const cli_args *a)
{
	cli_reader   r;
	ctx_emitters c = { NULL, 0, 0 };
	int          rc;

	if (cli_reader_open(a, &r) != 0)
		return 1;
	if (a->run != NULL && cli_reader_require_run(&r, a->run) != 0) {
		cli_reader_close(&r);
		return 1;
	}
	rc = scan_emitters(r.st, r.txn, a->run, each_emitter, &c);
	if (rc == 0) {
		if (c.n > 1)
			qsort(c.v, c.n, sizeof(*c.v), by_first_seen);
		if (a->format == OUT_CSV)
			puts("run,incarnation,host,pid,rank,local_rank,"
			     "world_size,first_seen,last_seen,batches,samples,"
			     "duplicates,dropped,ended,refused");
		for (size_t i = 0; i < c.n; i++)
			put_emitter(a, c.v[i].run, c.v[i].runlen, &c.v[i].e);
	}
	free(c.v);
	return cli_reader_done(&r, rc);
}

/*
 * The host of each rank of a run, for output: the store keeps hosts per
 * emitter (incarnation), not per sample, so a rank's samples are shown
 * with the host of its latest incarnation.
 */
#define HOSTS_MAX 4096
typedef struct hostmap {
	char    run[WIRE_RUN_MAX + 1];
	size_t  runlen;
	size_t  n;
	int32_t rank[HOSTS_MAX];
	char    host[HOSTS_MAX][WIRE_HOST_MAX + 1];
} hostmap;

_Static_assert(
    sizeof(((hostmap *) 0)->host[0]) == sizeof(((emitter_rec *) 0)->host),
    "a host as the store keeps it fits");

static int
each_host(void *vctx, const scan_rank *r)
{
	hostmap *h = vctx;

	if (h->n == HOSTS_MAX)
		return 0;
	h->rank[h->n] = r->rank;
	memcpy(h->host[h->n], r->inc[r->n - 1]->host, sizeof(h->host[0]));
	h->n++;
	return 0;
}

/* The host of (run, rank), loading the run's ranks on a new run. */
static const char *
host_of(hostmap *h, store *st, store_txn *txn, const scan_series *s)
{
	if (s->runlen > WIRE_RUN_MAX)
		return "";
	if (h->runlen != s->runlen || memcmp(h->run, s->run, s->runlen)) {
		memcpy(h->run, s->run, s->runlen);
		h->run[s->runlen] = 0;
		h->runlen         = s->runlen;
		h->n              = 0;
		scan_ranks(st, txn, h->run, each_host, h);
	}
	for (size_t i = 0; i < h->n; i++)
		if (h->rank[i] == s->rank)
			return h->host[i];
	return "";
}

/* Samples of one series, written with the series' names. */
typedef struct ctx_samples {
	const cli_args    *a;
	const scan_series *s;
	const char        *host;
	uint64_t           n;
} ctx_samples;

static int
each_sample(void *vctx, uint64_t step, int64_t t, double v)
{
	ctx_samples *c = vctx;

	c->n++;
	out_sample(stdout, c->a->format, c->s->run, c->s->runlen, c->host,
	    c->s->metric, c->s->mlen, c->s->rank, step, t, v);
	return 0;
}

typedef struct ctx_series {
	const cli_args *a;
	cli_reader     *r;
	int             every; /* every stored sample, not one per step */
	uint64_t        matched, samples;
	hostmap        *hosts;
} ctx_series;

static int
each_series(void *vctx, const scan_series *s)
{
	ctx_series *c  = vctx;
	ctx_samples cs = { c->a, s, "", 0 };
	int         rc;

	if (c->a->metric != NULL
	    && (strlen(c->a->metric) != s->mlen
	        || memcmp(c->a->metric, s->metric, s->mlen)))
		return 0;
	if (c->a->has_rank && c->a->rank != s->rank)
		return 0;
	if (c->matched++ == 0 && c->a->metric != NULL)
		out_sample_header(stdout, c->a->format);
	cs.host = host_of(c->hosts, c->r->st, c->r->txn, s);
	/* One value per step, the last stored, unless every sample is
	 * asked for (the attempts of a restart, the calls of an emit). */
	rc = (c->every ? scan_samples : scan_samples_last)(c->r->st, c->r->txn,
	    s->rec.sid, c->a->step_from, c->a->step_to, each_sample, &cs);
	c->samples += cs.n;
	return rc;
}

/*
 * An end row of export: an emitter that closed normally (its FINAL
 * batch), as the metric "vitals/end" at the step it had reached and the
 * collector's time of the goodbye. `vitals replay` ends the rank there,
 * as vitalsd's detectors did live (a finished run is not a stall, and
 * what still fires resolves as "run finished").
 */
typedef struct ctx_ends {
	const cli_args *a;
} ctx_ends;

static int
each_end(void *vctx, const char *run, size_t runlen, const emitter_rec *e)
{
	const cli_args *a = ((ctx_ends *) vctx)->a;

	if (e->ended == 0)
		return 0;
	out_sample(stdout, a->format, run, runlen, e->host, DETECT_END_METRIC,
	    strlen(DETECT_END_METRIC), e->rank, e->last_step, e->ended, 1.0);
	return 0;
}

/*
 * Samples of the series that match a's run, metric and rank, in the
 * chosen format (every one if every, else one per step), and with ends
 * the end rows of the emitters (export). Returns the exit status;
 * *matched counts the series.
 */
static int
write_samples(const cli_args *a, int every, int ends, uint64_t *matched)
{
	cli_reader r;
	ctx_series c = { a, &r, every, 0, 0, NULL };
	int        rc;

	*matched = 0;
	if (cli_reader_open(a, &r) != 0)
		return 1;
	if (a->run != NULL && cli_reader_require_run(&r, a->run) != 0) {
		cli_reader_close(&r);
		return 1;
	}
	if ((c.hosts = calloc(1, sizeof(*c.hosts))) == NULL) {
		cli_reader_close(&r);
		return 1;
	}
	/* query prints its header with the first series it finds, so that
	 * an unknown metric leaves stdout empty. */
	if (a->metric == NULL)
		out_sample_header(stdout, a->format);
	/* One metric of one run is one key range of the series. */
	if (a->run != NULL && a->metric != NULL)
		rc = scan_series_metric(
		    r.st, r.txn, a->run, a->metric, each_series, &c);
	else
		rc = scan_series_of(r.st, r.txn, a->run, each_series, &c);
	if (rc == 0 && ends) {
		ctx_ends ce = { a };

		rc = scan_emitters(r.st, r.txn, a->run, each_end, &ce);
	}
	free(c.hosts);
	*matched = c.matched;
	return cli_reader_done(&r, rc);
}

int
cmd_query(const cli_args *a)
{
	uint64_t matched;
	int      rc;

	if (a->run == NULL || a->metric == NULL) {
		fprintf(stderr,
		    "vitals query: --run R and --metric M are "
		    "required\n");
		return 2;
	}
	rc = write_samples(a, a->all_samples, 0, &matched);
	if (rc == 0 && matched == 0) {
		fprintf(stderr,
		    "vitals: run '%s' has no metric '%s'%s (see vitals "
		    "metrics --run %s)\n",
		    a->run, a->metric, a->has_rank ? " at that rank" : "",
		    a->run);
		return 1;
	}
	return rc;
}

int
cmd_export(const cli_args *a)
{
	uint64_t matched;

	/* --all-samples was export's way to every sample before it became
	 * the default: still accepted, but not with its opposite. */
	if (a->latest && a->all_samples) {
		fprintf(stderr,
		    "vitals export: --latest and --all-samples "
		    "ask for opposite things\n");
		return 2;
	}
	return write_samples(a, !a->latest, !a->latest, &matched);
}
