#include "collector/alerting.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/hooks.h"
#include "detect/detect.h"

#define RULES_MAX_BYTES (1u << 20)
#define QUEUE_MAX 65536 /* alerts waiting to be stored */

typedef struct queued {
	char   run[WIRE_RUN_MAX + 1];
	size_t runlen;
	char  *json;
	size_t len;
} queued;

struct alerting {
	char          *path; /* NULL: built-in rules */
	detect_engine *engine;
	hooks         *hooks;
	queued        *q;
	size_t         nq, capq;
	uint64_t       lost; /* alerts not queued: queue full or no memory */
	const char   **names; /* per batch: name index -> name, length */
	size_t        *lens;
	int64_t        last_tick;
};

/*
 * Read a rules file whole. Returns a NUL-terminated buffer the caller
 * frees, or NULL after logging why.
 */
static char *
read_file(const char *path, size_t *len)
{
	FILE  *f = fopen(path, "rb");
	char  *buf;
	size_t n;

	if (f == NULL) {
		fprintf(stderr, "vitalsd: rules %s: %s\n", path,
		    strerror(errno));
		return NULL;
	}
	buf = malloc(RULES_MAX_BYTES + 1);
	if (buf == NULL) {
		fclose(f);
		fprintf(stderr, "vitalsd: rules %s: out of memory\n", path);
		return NULL;
	}
	n = fread(buf, 1, RULES_MAX_BYTES + 1, f);
	if (ferror(f) || n > RULES_MAX_BYTES) {
		fprintf(stderr, "vitalsd: rules %s: %s\n", path,
		    ferror(f) ? "read error" : "larger than 1 MiB");
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	buf[n] = 0;
	*len   = n;
	return buf;
}

/* Load the rules named by al->path (or the built-in ones). Returns NULL
 * after logging why. */
static detect_rules *
load_rules(const alerting *al)
{
	detect_rules *r = NULL;
	char          err[1024];
	char         *text;
	size_t        len = 0;
	int           rc;

	if (al->path == NULL) {
		if (detect_rules_default(&r) != 0)
			fprintf(stderr, "vitalsd: built-in rules: out of "
					"memory\n");
		return r;
	}
	if ((text = read_file(al->path, &len)) == NULL)
		return NULL;
	rc = detect_rules_parse(text, len, al->path, &r, err, sizeof(err));
	free(text);
	if (rc != 0) {
		fprintf(stderr, "vitalsd: %s\n",
		    rc == DETECT_EPARSE ? err : detect_strerror(rc));
		return NULL;
	}
	return r;
}

int
alerting_open(const char *rules_path, alerting **out)
{
	alerting     *al = calloc(1, sizeof(*al));
	detect_rules *r;

	*out = NULL;
	if (al == NULL)
		return 1;
	if (rules_path != NULL && (al->path = strdup(rules_path)) == NULL)
		goto fail;
	if ((al->hooks = hooks_new()) == NULL)
		goto fail;
	al->names = calloc(65536, sizeof(*al->names));
	al->lens  = calloc(65536, sizeof(*al->lens));
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
	for (size_t i = 0; i < al->nq; i++)
		free(al->q[i].json);
	free(al->q);
	detect_engine_free(al->engine);
	hooks_free(al->hooks);
	free(al->names);
	free(al->lens);
	free(al->path);
	free(al);
}

void
alerting_reload(alerting *al)
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
 * Every transition: one JSON line on stdout, queued for the store, and
 * the rule's hook started. Nothing here waits.
 */
static void
on_alert(void *ctx, const detect_alert *a)
{
	alerting *al = ctx;
	char      line[4096];
	size_t    n = detect_alert_json(a, line, sizeof(line));
	queued   *q;

	if (n >= sizeof(line)) {
		/* Messages are one line of bounded fields; cut, never
		 * overrun. */
		n = sizeof(line) - 1;
	}
	fwrite(line, 1, n, stdout);
	fflush(stdout);
	if (a->exec_argv != NULL)
		hooks_start(al->hooks, a->exec_argv, line, n,
		    a->exec_timeout_ms);
	if (al->nq == al->capq) {
		size_t  nc = al->capq ? al->capq * 2 : 16;
		queued *nq;

		if (nc > QUEUE_MAX ||
		    (nq = realloc(al->q, nc * sizeof(*nq))) == NULL) {
			al->lost++;
			return;
		}
		al->q    = nq;
		al->capq = nc;
	}
	q = &al->q[al->nq];
	/* Stored without the newline. */
	if (n > 0 && line[n - 1] == '\n')
		n--;
	q->json = malloc(n);
	if (q->json == NULL || a->runlen > WIRE_RUN_MAX) {
		free(q->json);
		al->lost++;
		return;
	}
	memcpy(q->json, line, n);
	q->len = n;
	memcpy(q->run, a->run, a->runlen);
	q->runlen = a->runlen;
	al->nq++;
}

void
alerting_feed(alerting *al, ingest *in, const wire_batch *b)
{
	const char **names = al->names;
	size_t      *lens  = al->lens;
	size_t       off   = 0;

	/* The name table is walked once per batch, not once per sample. */
	for (uint32_t i = 0; i < b->nnames; i++)
		names[i] = wire_names_next(b, &off, &lens[i]);
	for (uint32_t i = 0; i < b->nsamples; i++) {
		wire_sample   ws;
		detect_sample s;

		wire_batch_sample(b, i, &ws);
		s.run     = b->id.run;
		s.runlen  = b->id.run_len;
		s.metric  = names[ws.name];
		s.mlen    = lens[ws.name];
		s.host    = b->id.host;
		s.hostlen = b->id.host_len;
		s.rank    = b->id.rank;
		s.step    = ws.step;
		s.time_ns = ingest_time(in, ws.time_ns);
		s.value   = ws.value;
		detect_feed(al->engine, &s, on_alert, al);
	}
}

void
alerting_tick(alerting *al, int64_t now_ns, int64_t mono_ns)
{
	detect_tick(al->engine, now_ns, on_alert, al);
	hooks_poll(al->hooks, mono_ns);
}

int
alerting_store(alerting *al, ingest *in)
{
	int rc;

	if (al->lost > 0) {
		fprintf(stderr, "vitalsd: %llu alerts could not be queued "
				"for the store (logged above only)\n",
		    (unsigned long long) al->lost);
		al->lost = 0;
	}
	if (al->nq == 0)
		return 0;
	if ((rc = ingest_begin(in)) != 0)
		return rc;
	for (size_t i = 0; i < al->nq; i++) {
		rc = ingest_alert(in, al->q[i].run, al->q[i].runlen,
		    al->q[i].json, al->q[i].len);
		if (rc != 0) {
			ingest_abort(in);
			return rc;
		}
	}
	if ((rc = ingest_commit(in)) != 0)
		return rc;
	for (size_t i = 0; i < al->nq; i++)
		free(al->q[i].json);
	al->nq = 0;
	return 0;
}
