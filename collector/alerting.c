#include "collector/alerting.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
	uint8_t     msg[]; /* the wire message */
} job;

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

	pthread_t       thread;
	pthread_mutex_t mu; /* guards everything below */
	pthread_cond_t  wake, idle, room;
	job            *head, *tail;
	size_t          queued_bytes;
	int             busy; /* the thread is feeding a batch */
	int             stop, reload;
	queued         *q; /* alerts for the store */
	size_t          nq, capq;
	uint64_t        lost;
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
		hooks_start(al->hooks, a->exec_argv, line, n,
		    a->exec_timeout_ms);
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

/* Feed one stored batch (detection thread). */
static void
feed(alerting *al, const job *j)
{
	wire_batch b;
	char       err[256];

	/* It was validated when it arrived; decoding again only rebuilds
	 * the view into our copy. */
	if (wire_batch_decode(j->msg, j->len, &b, err, sizeof(err)) != 0)
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
			int64_t mark = al->head ? al->head->recv_ns :
						  now_wall_ns();

			last_tick = mono;
			pthread_mutex_unlock(&al->mu);
			detect_tick(al->engine, mark, on_alert, al);
			hooks_poll(al->hooks, mono);
			pthread_mutex_lock(&al->mu);
			continue;
		}
		j = al->head;
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
		al->head = j->next;
		if (al->head == NULL)
			al->tail = NULL;
		al->busy = 1;
		pthread_mutex_unlock(&al->mu);
		feed(al, j);
		pthread_mutex_lock(&al->mu);
		al->busy = 0;
		al->queued_bytes -= j->len;
		pthread_cond_signal(&al->room);
		free(j);
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
	al->quantum = quantum_ns;
	if (rules_path != NULL && (al->path = strdup(rules_path)) == NULL)
		goto fail;
	if ((al->hooks = hooks_new()) == NULL)
		goto fail;
	al->names = calloc(FEED_NAMES_MAX, sizeof(*al->names));
	al->lens  = calloc(FEED_NAMES_MAX, sizeof(*al->lens));
	if (al->names == NULL || al->lens == NULL)
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
	*out = al;
	return 0;
fail:
	hooks_free(al->hooks);
	free(al->names);
	free(al->lens);
	free(al->path);
	free(al);
	return 1;
}

void
alerting_close(alerting *al)
{
	if (al == NULL)
		return;
	pthread_mutex_lock(&al->mu);
	al->stop = 1;
	pthread_cond_signal(&al->wake);
	pthread_mutex_unlock(&al->mu);
	pthread_join(al->thread, NULL);
	for (size_t i = 0; i < al->nq; i++)
		free(al->q[i].json);
	free(al->q);
	detect_engine_free(al->engine);
	hooks_free(al->hooks);
	free(al->names);
	free(al->lens);
	free(al->path);
	pthread_mutex_destroy(&al->mu);
	pthread_cond_destroy(&al->wake);
	pthread_cond_destroy(&al->idle);
	pthread_cond_destroy(&al->room);
	free(al);
}

int
alerting_feed(alerting *al, const void *msg, size_t len, int64_t recv_ns)
{
	job *j = malloc(sizeof(*j) + len);

	if (j == NULL) {
		fprintf(stderr, "vitalsd: out of memory: a stored batch was "
				"not checked by the rules\n");
		return -1;
	}
	j->next    = NULL;
	j->recv_ns = recv_ns;
	j->len     = len;
	memcpy(j->msg, msg, len);
	pthread_mutex_lock(&al->mu);
	while (al->queued_bytes > 0 &&
	    al->queued_bytes + len > ALERTING_QUEUE_BYTES)
		pthread_cond_wait(&al->room, &al->mu);
	if (al->tail != NULL)
		al->tail->next = j;
	else
		al->head = j;
	al->tail = j;
	al->queued_bytes += len;
	pthread_cond_signal(&al->wake);
	pthread_mutex_unlock(&al->mu);
	return 0;
}

void
alerting_drain(alerting *al)
{
	pthread_mutex_lock(&al->mu);
	while (al->head != NULL || al->busy)
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
