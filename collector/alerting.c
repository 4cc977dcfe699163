#include "collector/alerting.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "collector/feed.h"
#include "collector/hooks.h"
#include "common/clock.h"
#include "common/rules_file.h"
#include "detect/detect.h"
#include "wire/wire.h"

#define ALERTS_MAX 65536 /* alerts waiting to be stored */
#define TICK_NS (200 * 1000000ll)

/* A stored batch waiting for detection. */
typedef struct job {
	struct job *next;
	int64_t     recv_ns;
	size_t      len;
	int         viewed; /* b is the view of msg (else decode it) */
	int         held;   /* b is the view of zm, msg is empty */
	zmq_msg_t   zm;
	wire_batch  b;
	uint8_t     msg[]; /* the wire message */
} job;

static void
job_free(job *j)
{
	if (j != NULL && j->held)
		zmq_msg_close(&j->zm);
	free(j);
}

/*
 * The queued batches of one sender (its address: an IP, or over ipc:// a
 * process), in the order they were stored. The detection thread takes one
 * batch from each lane in turn, so a client with a long backlog delays
 * another's batch by one of its own, not by the whole backlog. Within a
 * lane, and so for every emitter, the order is kept.
 */
typedef struct lane {
	uint64_t peer; /* hash of the address */
	job     *head, *tail;
} lane;

typedef struct queued {
	char   run[WIRE_RUN_MAX + 1];
	size_t runlen;
	char  *json;
	size_t len;
} queued;

struct alerting {
	char          *path; /* NULL: built-in rules */
	int64_t        quantum;
	detect_engine *engine; /* detection thread only */
	hooks         *hooks;  /* detection thread only */
	const char   **names;  /* detection thread: per batch name table */
	size_t        *lens;
	uint32_t      *remap;  /* server thread: compacting a batch */

	pthread_t       thread;
	pthread_mutex_t mu; /* guards everything below */
	pthread_cond_t  wake, idle, room;
	lane           *lanes; /* those with a batch queued */
	size_t          nlanes, caplanes, turn;
	size_t          queued_bytes, max_bytes;
	int             busy; /* the thread is feeding a batch */
	int             stop, reload;
	queued         *q; /* alerts for the store */
	size_t          nq, capq;
	uint64_t        lost;
	/* Detection thread: hook runs dropped, and their log's rate. */
	uint64_t hook_dropped;
	int64_t  hook_log_window;
	long     hook_log_count;
	detect_emit_fn  sink; /* --http, --alertmanager */
	void           *sink_ctx;
};

/* Load the rules named by al->path (or the built-in ones). Returns NULL
 * after logging why. */
static detect_rules *
load_rules(const alerting *al)
{
	detect_rules *r;
	char          err[1024];

	if (rules_file_load(al->path, &r, err, sizeof(err)) != 0) {
		fprintf(stderr, "vitalsd: %s\n", err);
		return NULL;
	}
	return r;
}

static void
reload_rules(alerting *al)
{
	detect_rules *r;

	if (al->path == NULL) {
		fprintf(stderr, "vitalsd: SIGHUP: no --rules file; the "
				"built-in rules stay\n");
		return;
	}
	if ((r = load_rules(al)) == NULL) {
		fprintf(stderr, "vitalsd: SIGHUP: keeping the rules in use\n");
		return;
	}
	if (detect_engine_reload(al->engine, r) != 0)
		fprintf(stderr, "vitalsd: SIGHUP: out of memory; keeping the "
				"rules in use\n");
	else
		fprintf(stderr, "vitalsd: SIGHUP: %zu rules reloaded from %s\n",
		    detect_rules_count(r), al->path);
	detect_rules_free(r);
}

static void on_alert(void *ctx, const detect_alert *a);

/*
 * Run the rule's hook, or queue it (hooks.h). A run dropped past the
 * rule's queue is logged (10 lines per 10 s at most, the rest counted)
 * and stored as an alert of its own, "hook_dropped", for the same run and
 * series: every page is run, or visible in `vitals alerts`.
 */
static void
run_hook(alerting *al, const detect_alert *a, const char *line, size_t n)
{
	char         key[WIRE_RUN_MAX + WIRE_HOST_MAX + WIRE_NAME_MAX + 32];
	char         msg[512];
	detect_alert d;
	uint64_t     dropped;
	int64_t      w;

	snprintf(key, sizeof(key), "%.*s\x1f%d\x1f%.*s\x1f%.*s",
	    (int) a->runlen, a->run, (int) a->rank, (int) a->hostlen, a->host,
	    (int) a->mlen, a->metric);
	if (hooks_run(al->hooks, a->rule, key, a->exec_argv, line, n,
	        a->exec_timeout_ms)
	    != HOOKS_DROPPED)
		return;
	al->hook_dropped++;
	dropped = hooks_dropped(al->hooks, a->rule);
	w       = now_mono_ns() / (10 * 1000000000ll);
	if (w != al->hook_log_window) {
		if (al->hook_log_count > 10)
			fprintf(stderr,
			    "vitalsd: %ld more dropped hook runs not shown\n",
			    al->hook_log_count - 10);
		al->hook_log_window = w;
		al->hook_log_count  = 0;
	}
	snprintf(msg, sizeof(msg),
	    "hook of rule %s not run: %d hooks running and %d waiting for "
	    "this rule (%llu dropped for it)",
	    a->rule, HOOKS_MAX, HOOKS_QUEUE_PER_RULE,
	    (unsigned long long) dropped);
	if (al->hook_log_count++ < 10)
		fprintf(stderr, "vitalsd: run=%.*s metric=%.*s: %s\n",
		    (int) a->runlen, a->run, (int) a->mlen, a->metric, msg);
	d           = *a;
	d.rule      = "hook_dropped";
	d.kind      = "hook_dropped";
	d.severity  = DETECT_WARNING;
	d.state     = DETECT_FIRING;
	d.value     = (double) dropped;
	d.baseline  = NAN;
	d.message   = msg;
	d.exec_argv = NULL;
	d.exec_argc = 0;
	on_alert(al, &d);
}

/*
 * Every transition (detection thread): one JSON line on stdout, the
 * rule's hook started, and the alert queued for the store. Nothing here
 * waits.
 */
static void
on_alert(void *ctx, const detect_alert *a)
{
	alerting *al = ctx;
	char      line[4096];
	size_t    n = detect_alert_json(a, line, sizeof(line));
	queued    item;

	if (n >= sizeof(line)) {
		/* Fields are bounded; cut rather than overrun. */
		n            = sizeof(line) - 1;
		line[n - 1] = '\n';
	}
	fwrite(line, 1, n, stdout);
	fflush(stdout);
	if (a->exec_argv != NULL)
		run_hook(al, a, line, n);
	if (al->sink != NULL)
		al->sink(al->sink_ctx, a);
	if (n > 0 && line[n - 1] == '\n')
		n--; /* stored without the newline */
	item.json = malloc(n);
	if (item.json == NULL || a->runlen > WIRE_RUN_MAX) {
		free(item.json);
		pthread_mutex_lock(&al->mu);
		al->lost++;
		pthread_mutex_unlock(&al->mu);
		return;
	}
	memcpy(item.json, line, n);
	item.len = n;
	memcpy(item.run, a->run, a->runlen);
	item.runlen = a->runlen;
	pthread_mutex_lock(&al->mu);
	if (al->nq == al->capq) {
		size_t  nc = al->capq ? al->capq * 2 : 16;
		queued *nq = nc > ALERTS_MAX ? NULL :
					       realloc(al->q, nc * sizeof(*nq));

		if (nq == NULL) {
			al->lost++;
			pthread_mutex_unlock(&al->mu);
			free(item.json);
			return;
		}
		al->q    = nq;
		al->capq = nc;
	}
	al->q[al->nq++] = item;
	pthread_mutex_unlock(&al->mu);
}

/* The next batch to feed, the lanes taking turns (under al->mu); NULL if
 * none is queued. */
static job *
next_job(alerting *al)
{
	lane *l;
	job  *j;

	if (al->nlanes == 0)
		return NULL;
	if (al->turn >= al->nlanes)
		al->turn = 0;
	l       = &al->lanes[al->turn];
	j       = l->head;
	l->head = j->next;
	if (l->head != NULL) {
		al->turn++;
		return j;
	}
	/* The lane is empty: the next one moves into its place (and turn). */
	memmove(l, l + 1, (al->nlanes - al->turn - 1) * sizeof(*l));
	al->nlanes--;
	return j;
}

/* The arrival time of the oldest batch still queued (under al->mu), or
 * now if none: the clock detection ticks with. */
static int64_t
watermark(const alerting *al)
{
	int64_t mark = INT64_MAX;

	for (size_t i = 0; i < al->nlanes; i++)
		if (al->lanes[i].head->recv_ns < mark)
			mark = al->lanes[i].head->recv_ns;
	return mark == INT64_MAX ? now_wall_ns() : mark;
}

/* Feed one stored batch (detection thread). */
static void
feed(alerting *al, const job *j)
{
	wire_batch b;
	char       err[256];

	/* It was validated when it arrived; decoding again only rebuilds
	 * the view into a compacted copy. */
	if (j->viewed)
		b = j->b;
	else if (wire_batch_decode(j->msg, j->len, &b, err, sizeof(err)) != 0)
		return;
	feed_batch(al->engine, &b, al->quantum, j->recv_ns, al->names,
	    al->lens, on_alert, al);
}

/*
 * The detection thread: feeds queued batches in order, ticks the clock
 * every TICK_NS with the watermark (the arrival time of the oldest batch
 * still queued, or now), reloads rules on request, looks after hooks.
 */
static void *
run(void *arg)
{
	alerting *al        = arg;
	int64_t   last_tick = 0;

	pthread_mutex_lock(&al->mu);
	for (;;) {
		job    *j;
		int64_t mono = now_mono_ns();

		if (al->reload) {
			al->reload = 0;
			pthread_mutex_unlock(&al->mu);
			reload_rules(al);
			pthread_mutex_lock(&al->mu);
			continue;
		}
		if (mono - last_tick >= TICK_NS) {
			int64_t mark = watermark(al);

			last_tick = mono;
			pthread_mutex_unlock(&al->mu);
			detect_tick(al->engine, mark, on_alert, al);
			hooks_poll(al->hooks, mono);
			pthread_mutex_lock(&al->mu);
			continue;
		}
		j = next_job(al);
		if (j == NULL) {
			struct timespec ts;
			int64_t         until;

			pthread_cond_broadcast(&al->idle);
			if (al->stop)
				break;
			until = now_wall_ns() + TICK_NS / 2;
			ts.tv_sec  = until / 1000000000ll;
			ts.tv_nsec = until % 1000000000ll;
			pthread_cond_timedwait(&al->wake, &al->mu, &ts);
			continue;
		}
		al->busy = 1;
		pthread_mutex_unlock(&al->mu);
		feed(al, j);
		pthread_mutex_lock(&al->mu);
		al->busy = 0;
		al->queued_bytes -= j->len;
		pthread_cond_signal(&al->room);
		job_free(j);
	}
	pthread_mutex_unlock(&al->mu);
	return NULL;
}

int
alerting_open(const char *rules_path, int64_t quantum_ns, alerting **out)
{
	alerting     *al = calloc(1, sizeof(*al));
	detect_rules *r;

	*out = NULL;
	if (al == NULL)
		return 1;
	al->quantum   = quantum_ns;
	al->max_bytes = ALERTING_QUEUE_BYTES;
	if (rules_path != NULL && (al->path = strdup(rules_path)) == NULL)
		goto fail;
	if ((al->hooks = hooks_new()) == NULL)
		goto fail;
	al->names = calloc(FEED_NAMES_MAX, sizeof(*al->names));
	al->lens  = calloc(FEED_NAMES_MAX, sizeof(*al->lens));
	al->remap = calloc(FEED_NAMES_MAX, sizeof(*al->remap));
	if (al->names == NULL || al->lens == NULL || al->remap == NULL)
		goto fail;
	if ((r = load_rules(al)) == NULL)
		goto fail;
	if (detect_engine_new(r, &al->engine) != 0) {
		detect_rules_free(r);
		goto fail;
	}
	fprintf(stderr, "vitalsd: %zu rules from %s\n",
	    detect_rules_count(r), al->path ? al->path : "the built-in set");
	detect_rules_free(r);
	pthread_mutex_init(&al->mu, NULL);
	pthread_cond_init(&al->wake, NULL);
	pthread_cond_init(&al->idle, NULL);
	pthread_cond_init(&al->room, NULL);
	if (pthread_create(&al->thread, NULL, run, al) != 0) {
		fprintf(stderr, "vitalsd: cannot start the detection thread\n");
		detect_engine_free(al->engine);
		goto fail;
	}
	pthread_setname_np(al->thread, "vitalsd-detect");
	*out = al;
	return 0;
fail:
	hooks_free(al->hooks);
	free(al->names);
	free(al->lens);
	free(al->remap);
	free(al->path);
	free(al);
	return 1;
}

void
alerting_close(alerting *al)
{
	detect_stats ds;

	if (al == NULL)
		return;
	pthread_mutex_lock(&al->mu);
	al->stop = 1;
	pthread_cond_signal(&al->wake);
	pthread_mutex_unlock(&al->mu);
	pthread_join(al->thread, NULL);
	if (al->hook_dropped > 0)
		fprintf(stderr,
		    "vitalsd: %llu hook runs dropped in all (their queues "
		    "were full); stored as hook_dropped alerts\n",
		    (unsigned long long) al->hook_dropped);
	detect_engine_stats(al->engine, &ds);
	if (ds.series_evicted > 0 || ds.budget_refused > 0)
		fprintf(stderr,
		    "vitalsd: detection: %llu idle series forgotten to make "
		    "room, %llu samples of runs over their series budget not "
		    "checked\n",
		    (unsigned long long) ds.series_evicted,
		    (unsigned long long) ds.budget_refused);
	if (ds.late > 0)
		fprintf(stderr,
		    "vitalsd: detection: %llu late samples (older than their "
		    "series' last, at a lower step: a resent batch, a spool "
		    "sent late) stored, not checked\n",
		    (unsigned long long) ds.late);
	for (size_t i = 0; i < al->nq; i++)
		free(al->q[i].json);
	free(al->q);
	free(al->lanes);
	detect_engine_free(al->engine);
	hooks_free(al->hooks);
	free(al->names);
	free(al->lens);
	free(al->remap);
	free(al->path);
	pthread_mutex_destroy(&al->mu);
	pthread_cond_destroy(&al->wake);
	pthread_cond_destroy(&al->idle);
	pthread_cond_destroy(&al->room);
	free(al);
}

/* p, a pointer into [from, ...), moved to the same offset in to. */
static const void *
rebase(const void *p, const void *from, const uint8_t *to)
{
	return to + ((const uint8_t *) p - (const uint8_t *) from);
}

/* j's view: b, a view of the message at from, moved onto its bytes at
 * to. */
static void
view_onto(job *j, const wire_batch *b, const void *from, const uint8_t *to)
{
	j->b         = *b;
	j->b.id.run  = rebase(b->id.run, from, to);
	j->b.id.host = rebase(b->id.host, from, to);
	j->b.names   = rebase(b->names, from, to);
	j->b.samples = rebase(b->samples, from, to);
}

/* A job holding a copy of msg, with the view b rebased into it; NULL
 * when out of memory. */
static job *
copy_whole(const wire_batch *b, const void *msg, size_t len)
{
	job *j = malloc(sizeof(*j) + len);

	if (j == NULL)
		return NULL;
	memcpy(j->msg, msg, len);
	j->len       = len;
	j->viewed    = 1;
	j->held      = 0;
	view_onto(j, b, msg, j->msg);
	return j;
}

/* A job holding the message zm itself (taken from the caller), with the
 * view b rebased onto it; NULL when out of memory (zm left alone). A wide
 * batch is as long as its samples, and copying it cost the server thread
 * a tenth of its time (the copy's fresh pages mostly). */
static job *
take_whole(const wire_batch *b, zmq_msg_t *zm)
{
	job        *j = malloc(sizeof(*j));
	const void *from;

	if (j == NULL)
		return NULL;
	from = zmq_msg_data(zm);
	zmq_msg_init(&j->zm);
	zmq_msg_move(&j->zm, zm);
	j->len       = zmq_msg_size(&j->zm);
	j->viewed    = 1;
	j->held      = 1;
	view_onto(j, b, from, zmq_msg_data(&j->zm));
	return j;
}

/*
 * The part of a stored batch (msg, decoded as b) detection reads, as a
 * wire message in a new job: its identity and samples, and only the
 * names they use (a batch of 65,535 names and one sample is queued as a
 * few hundred bytes). A batch whose samples use every name (an emitter
 * sends the names of its batch's samples) is copied as it is, with its
 * view, so the detection thread does not decode it again. Returns NULL
 * when nothing needs checking (no sample, not FINAL) or out of memory
 * (*oom set).
 */
static job *
compact(alerting *al, const wire_batch *bp, const void *msg, size_t len,
    zmq_msg_t *zm, int *oom)
{
	wire_batch b = *bp;
	size_t     off, off_names = 0, nbytes = 0, size = 0;
	uint16_t   used = 0;
	job       *j;

	*oom = 0;
	if (b.nsamples == 0 && !(b.flags & WIRE_FINAL))
		return NULL;
	/* remap[k]: 0 unused, else 1 + the name's new index. The names
	 * used are counted as they are marked: a batch that uses them all
	 * (an emitter's) is queued whole without walking its names. */
	memset(al->remap, 0, b.nnames * sizeof(*al->remap));
	for (uint32_t i = 0; i < b.nsamples; i++) {
		uint16_t k
		    = wire_get16(b.samples + (size_t) i * WIRE_SAMPLE_SIZE);

		used += al->remap[k] == 0;
		al->remap[k] = 1;
	}
	if (used == b.nnames) {
		j = zm != NULL ? take_whole(&b, zm) : copy_whole(&b, msg, len);
		if (j == NULL)
			*oom = 1;
		return j;
	}
	/* Names are walked in order (wire_batch_name is linear in k). */
	used = 0;
	for (uint32_t k = 0; k < b.nnames; k++) {
		(void) wire_names_next(&b, &off_names, &size);
		if (al->remap[k] != 0) {
			al->remap[k] = (uint32_t) ++used;
			nbytes += 1 + size;
		}
	}
	size = wire_batch_header_size(&b.id, nbytes)
	    + (size_t) b.nsamples * WIRE_SAMPLE_SIZE;
	if ((j = malloc(sizeof(*j) + size)) == NULL) {
		*oom = 1;
		return NULL;
	}
	off = wire_put_batch_head(j->msg, &b.id, b.seq, b.floor, b.dropped);
	wire_put_batch_flags(j->msg, b.flags);
	wire_put_names_count(j->msg, &off, used);
	off_names = 0;
	for (uint32_t k = 0; k < b.nnames; k++) {
		const char *nm = wire_names_next(&b, &off_names, &size);

		if (al->remap[k] != 0)
			wire_put_name(j->msg, &off, nm, size);
	}
	wire_put_samples_count(j->msg, &off, b.nsamples);
	for (uint32_t i = 0; i < b.nsamples; i++) {
		wire_sample ws;

		wire_batch_sample(&b, i, &ws);
		ws.name = (uint16_t) (al->remap[ws.name] - 1);
		wire_put_sample(j->msg, &off, &ws);
	}
	j->len    = off;
	j->viewed = 0;
	j->held   = 0;
	return j;
}

/* The lane of peer, added at the end if new (under al->mu); NULL when
 * out of memory. Linear in the lanes with a batch queued. */
static lane *
lane_of(alerting *al, uint64_t peer)
{
	for (size_t i = 0; i < al->nlanes; i++)
		if (al->lanes[i].peer == peer)
			return &al->lanes[i];
	if (al->nlanes == al->caplanes) {
		size_t c  = al->caplanes ? al->caplanes * 2 : 16;
		lane  *nl = realloc(al->lanes, c * sizeof(*nl));

		if (nl == NULL)
			return NULL;
		al->lanes    = nl;
		al->caplanes = c;
	}
	al->lanes[al->nlanes] = (lane) { peer, NULL, NULL };
	return &al->lanes[al->nlanes++];
}

static uint64_t
peer_hash(const char *peer)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (const char *p = peer ? peer : ""; *p != 0; p++)
		h = (h ^ (uint8_t) *p) * 0x100000001b3ull;
	return h;
}

static int
feed_job(alerting *al, const wire_batch *b, const void *msg, size_t len,
    zmq_msg_t *zm, int64_t recv_ns, const char *peer)
{
	uint64_t ph = peer_hash(peer); /* before zm moves */
	int      oom;
	job     *j = compact(al, b, msg, len, zm, &oom);
	lane    *l;

	if (j == NULL) {
		if (oom)
			fprintf(stderr, "vitalsd: out of memory: a stored "
					"batch was not checked by the rules\n");
		return oom ? -1 : 0;
	}
	j->next    = NULL;
	j->recv_ns = recv_ns;
	len        = j->len;
	pthread_mutex_lock(&al->mu);
	while (al->queued_bytes > 0 &&
	    al->queued_bytes + len > al->max_bytes)
		pthread_cond_wait(&al->room, &al->mu);
	if ((l = lane_of(al, ph)) == NULL) {
		pthread_mutex_unlock(&al->mu);
		job_free(j);
		fprintf(stderr,
		    "vitalsd: out of memory: a stored batch was "
		    "not checked by the rules\n");
		return -1;
	}
	if (l->tail != NULL)
		l->tail->next = j;
	else
		l->head = j;
	l->tail = j;
	al->queued_bytes += len;
	pthread_cond_signal(&al->wake);
	pthread_mutex_unlock(&al->mu);
	return 0;
}

int
alerting_feed(alerting *al, const wire_batch *b, const void *msg, size_t len,
    int64_t recv_ns, const char *peer)
{
	return feed_job(al, b, msg, len, NULL, recv_ns, peer);
}

int
alerting_feed_msg(alerting *al, const wire_batch *b, zmq_msg_t *zm,
    int64_t recv_ns, const char *peer)
{
	return feed_job(
	    al, b, zmq_msg_data(zm), zmq_msg_size(zm), zm, recv_ns, peer);
}

void
alerting_set_budget(alerting *al, uint64_t per_run, int64_t idle_ns)
{
	/* Under the mutex, which the detection thread takes before it feeds
	 * a batch: it sees these. */
	pthread_mutex_lock(&al->mu);
	detect_engine_budget(al->engine, per_run, idle_ns);
	pthread_mutex_unlock(&al->mu);
}

void
alerting_set_queue_bytes(alerting *al, size_t bytes)
{
	pthread_mutex_lock(&al->mu);
	al->max_bytes = bytes;
	pthread_mutex_unlock(&al->mu);
}

void
alerting_drain(alerting *al)
{
	pthread_mutex_lock(&al->mu);
	while (al->nlanes > 0 || al->busy)
		pthread_cond_wait(&al->idle, &al->mu);
	pthread_mutex_unlock(&al->mu);
}

void
alerting_reload(alerting *al)
{
	pthread_mutex_lock(&al->mu);
	al->reload = 1;
	pthread_cond_signal(&al->wake);
	pthread_mutex_unlock(&al->mu);
}

void
alerting_set_sink(alerting *al, detect_emit_fn fn, void *ctx)
{
	/* Under the mutex: the detection thread takes it before its first
	 * alert, so it sees these. */
	pthread_mutex_lock(&al->mu);
	al->sink     = fn;
	al->sink_ctx = ctx;
	pthread_mutex_unlock(&al->mu);
}

uint64_t
alerting_queue_bytes(alerting *al)
{
	uint64_t n;

	pthread_mutex_lock(&al->mu);
	n = al->queued_bytes;
	pthread_mutex_unlock(&al->mu);
	return n;
}

int
alerting_store(alerting *al, ingest *in)
{
	queued  *q;
	size_t   n, done = 0;
	uint64_t lost;
	int      rc = 0;

	/* Take the queue; the thread starts a new one meanwhile. */
	pthread_mutex_lock(&al->mu);
	q        = al->q;
	n        = al->nq;
	lost     = al->lost;
	al->q    = NULL;
	al->nq   = 0;
	al->capq = 0;
	al->lost = 0;
	pthread_mutex_unlock(&al->mu);
	if (lost > 0)
		fprintf(stderr, "vitalsd: %llu alerts could not be queued "
				"for the store (logged on stdout only)\n",
		    (unsigned long long) lost);
	if (n == 0) {
		free(q);
		return 0;
	}
	if ((rc = ingest_begin(in)) == 0) {
		for (size_t i = 0; i < n && rc == 0; i++)
			rc = ingest_alert(in, q[i].run, q[i].runlen, q[i].json,
			    q[i].len);
		if (rc != 0)
			ingest_abort(in);
		else
			rc = ingest_commit(in);
		if (rc == 0)
			done = n;
	}
	for (size_t i = 0; i < done; i++)
		free(q[i].json);
	if (done < n) {
		/* Put them back in front of what came meanwhile. */
		pthread_mutex_lock(&al->mu);
		if (al->nq + n <= al->capq ||
		    (al->q = realloc(al->q,
			 (al->capq = al->nq + n) * sizeof(*q))) != NULL) {
			memmove(al->q + n, al->q, al->nq * sizeof(*q));
			memcpy(al->q, q, n * sizeof(*q));
			al->nq += n;
		} else {
			al->lost += n;
			al->capq = 0;
			al->nq   = 0;
		}
		pthread_mutex_unlock(&al->mu);
	}
	free(q);
	return rc;
}
