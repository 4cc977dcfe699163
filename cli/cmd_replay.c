/*
 * vitals replay [--rules FILE] FILE...: run the detect engine offline
 * over samples from files, in time order (ties keep file order, files in
 * the order given), ticking the clock with each sample's own time, and
 * print every alert as one JSON object per line. The same input always
 * gives the same output, byte for byte. Time order matters: `vitals
 * export` writes one series after another, and the engine must see the
 * samples in the order the collector saw them live.
 *
 * A malformed line stops the replay with an error naming FILE:LINE[:COL]
 * and exit status 1 (alerts before it are printed): results from a file
 * read only in part would look complete and be wrong.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/replay_input.h"
#include "cli/scrape.h"
#include "common/rules_file.h"
#include "detect/detect.h"
#include "wire/wire.h"

typedef struct replay_out {
	char  *buf;
	size_t cap;
	int    failed;
} replay_out;

static void
on_alert(void *ctx, const detect_alert *a)
{
	replay_out *o = ctx;
	size_t      n = detect_alert_json(a, o->buf, o->cap);

	if (n >= o->cap) {
		char *b = realloc(o->buf, n + 1);

		if (b == NULL) {
			o->failed = 1;
			return;
		}
		o->buf = b;
		o->cap = n + 1;
		detect_alert_json(a, o->buf, o->cap);
	}
	fwrite(o->buf, 1, n, stdout);
}

/*
 * Read a whole file (or stdin for "-") into a NUL-terminated buffer.
 * Returns it (caller frees) or NULL with a message on stderr.
 */
char *
cli_read_file(const char *path, size_t *len)
{
	FILE  *f   = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	char  *buf = NULL, *p;
	size_t n = 0, cap = 0, k;

	if (f == NULL) {
		fprintf(stderr, "vitals: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	do {
		if (n + 4096 + 1 > cap) {
			cap = (cap + 4096) * 2;
			p   = realloc(buf, cap);
			if (p == NULL) {
				fprintf(stderr, "vitals: %s: out of memory\n",
				    path);
				goto fail;
			}
			buf = p;
		}
		k = fread(buf + n, 1, cap - n - 1, f);
		n += k;
	} while (k > 0);
	if (ferror(f)) {
		fprintf(stderr, "vitals: %s: read failed\n", path);
		goto fail;
	}
	if (f != stdin)
		fclose(f);
	buf[n] = 0;
	*len   = n;
	return buf;
fail:
	if (f != stdin)
		fclose(f);
	free(buf);
	return NULL;
}

/* The rules of --rules FILE, or the built-in ones. Returns 0 or 1. */
int
cli_load_rules(const char *path, detect_rules **out)
{
	char err[600];

	if (rules_file_load(path, out, err, sizeof(err)) != 0) {
		fprintf(stderr, "vitals: %s\n", err);
		return 1;
	}
	return 0;
}

/*
 * Samples of every file, held until all are read and then sorted by time
 * (stable: a sequence number breaks ties). Names are copied into chunks
 * that never move, so the samples can point into them.
 */
typedef struct held {
	detect_sample s;
	size_t        seq;
} held;

typedef struct held_set {
	held  *v;
	size_t n, cap;
	char **chunks;
	size_t nchunks, used, chunk_cap; /* in the last chunk */
} held_set;

static const char *
held_str(held_set *h, const char *p, size_t n)
{
	char *c;

	if (p == NULL)
		return NULL;
	if (h->nchunks == 0 || h->used + n + 1 > h->chunk_cap) {
		size_t cap = n + 1 > 1u << 20 ? n + 1 : 1u << 20;
		char **cv = realloc(h->chunks, (h->nchunks + 1) * sizeof(*cv));

		if (cv == NULL)
			return NULL;
		h->chunks = cv;
		c         = malloc(cap);
		if (c == NULL)
			return NULL;
		h->chunks[h->nchunks++] = c;
		h->used                 = 0;
		h->chunk_cap            = cap;
	}
	c = h->chunks[h->nchunks - 1] + h->used;
	if (n)
		memcpy(c, p, n);
	c[n] = 0;
	h->used += n + 1;
	return c;
}

/* Keep a copy of s. Returns 0 or -1 (out of memory). */
static int
held_add(held_set *h, const detect_sample *s)
{
	held *x;

	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 4096;
		held  *v   = realloc(h->v, cap * sizeof(*v));

		if (v == NULL)
			return -1;
		h->v   = v;
		h->cap = cap;
	}
	x           = &h->v[h->n];
	x->s        = *s;
	x->seq      = h->n;
	x->s.run    = held_str(h, s->run, s->runlen);
	x->s.metric = held_str(h, s->metric, s->mlen);
	x->s.host   = held_str(h, s->host, s->hostlen);
	if ((s->run && !x->s.run) || (s->metric && !x->s.metric)
	    || (s->host && !x->s.host))
		return -1;
	h->n++;
	return 0;
}

static int
held_cmp(const void *a, const void *b)
{
	const held *x = a, *y = b;

	if (x->s.time_ns != y->s.time_ns)
		return x->s.time_ns < y->s.time_ns ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Feed the held samples in time order, then let out what the engine
 * still holds (resolutions waiting for their rule's hold). */
static void
held_replay(detect_engine *e, held_set *h, replay_out *o)
{
	if (h->n > 1)
		qsort(h->v, h->n, sizeof(*h->v), held_cmp);
	for (size_t i = 0; i < h->n && !o->failed; i++) {
		const detect_sample *s = &h->v[i].s;

		detect_tick(e, s->time_ns, on_alert, o);
		if (s->mlen == sizeof(DETECT_END_METRIC) - 1
		    && memcmp(s->metric, DETECT_END_METRIC, s->mlen) == 0)
			detect_end(e, s->run, s->runlen, s->rank, s->time_ns,
			    on_alert, o);
		else
			detect_feed(e, s, on_alert, o);
	}
	detect_flush(e, on_alert, o);
}

static void
held_free(held_set *h)
{
	for (size_t i = 0; i < h->nchunks; i++)
		free(h->chunks[i]);
	free(h->chunks);
	free(h->v);
}

static int
replay_file(detect_engine *e, const char *path, held_set *h, replay_out *o)
{
	FILE         *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	replay_input *in;
	detect_sample s;
	char          err[600];
	int           rc;

	if (f == NULL) {
		fprintf(stderr, "vitals: %s: %s\n", path, strerror(errno));
		return 1;
	}
	if (replay_input_open(path, f, &in, err, sizeof(err)) != 0) {
		fprintf(stderr, "vitals: %s\n", err);
		if (f != stdin)
			fclose(f);
		return 1;
	}
	(void) e;
	while ((rc = replay_input_next(in, &s, err, sizeof(err))) == 1) {
		if (held_add(h, &s) != 0) {
			o->failed = 1;
			break;
		}
	}
	if (rc < 0)
		fprintf(stderr, "vitals: %s\n", err);
	replay_input_close(in);
	if (f != stdin)
		fclose(f);
	return rc < 0 || o->failed;
}

/*
 * A trainer's log read with `vitals tail`'s scraper (--preset or
 * --pattern): its samples are named run (--run, else the file's base
 * name without extension) and carry no host.
 */
static int
replay_log_file(detect_engine *e, scrape *sc, const char *path,
    const char *run, replay_out *o)
{
	FILE          *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	scrape_reader *rd;
	scrape_sample  x;
	char           base[WIRE_RUN_MAX + 1];
	int            rc;

	if (f == NULL) {
		fprintf(stderr, "vitals: %s: %s\n", path, strerror(errno));
		return 1;
	}
	if (run == NULL) {
		const char *b = strrchr(path, '/');
		size_t      len;

		b   = b ? b + 1 : path;
		len = strcspn(b, ".");
		if (strcmp(path, "-") == 0) {
			b   = "stdin";
			len = 5;
		}
		if (len == 0 || len > WIRE_RUN_MAX)
			len = 0;
		memcpy(base, b, len);
		base[len] = 0;
		run       = len ? base : "log";
	}
	if (scrape_reader_open(sc, f, &rd) != 0) {
		fprintf(stderr, "vitals: out of memory\n");
		if (f != stdin)
			fclose(f);
		return 1;
	}
	while ((rc = scrape_reader_next(rd, &x)) == 1) {
		detect_sample s
		    = { run, strlen(run), x.metric, strlen(x.metric), NULL, 0,
			      x.rank, x.step, x.time_ns, x.value };

		detect_tick(e, s.time_ns, on_alert, o);
		detect_feed(e, &s, on_alert, o);
		if (o->failed)
			break;
	}
	if (rc < 0)
		fprintf(stderr, "vitals: %s: %s\n", path, strerror(errno));
	scrape_reader_close(rd);
	if (f != stdin)
		fclose(f);
	return rc < 0 || o->failed;
}

int
cmd_replay(const cli_args *a)
{
	detect_rules  *rules;
	detect_engine *e;
	replay_out     o  = { 0 };
	int            rc = 0;

	if (a->npos == 0) {
		fprintf(stderr,
		    "usage: vitals replay [--rules FILE] FILE... "
		    "(- reads stdin)\n");
		return 2;
	}
	if (cli_load_rules(a->rules, &rules) != 0)
		return 1;
	if (detect_engine_new(rules, &e) != 0) {
		detect_rules_free(rules);
		fprintf(stderr, "vitals: out of memory\n");
		return 1;
	}
	detect_rules_free(rules);
	if (a->preset != NULL || a->pattern != NULL) {
		scrape *sc;
		char    err[600];

		if (scrape_new(a->preset, a->pattern, &sc, err, sizeof(err))
		    != 0) {
			fprintf(stderr, "vitals: %s\n", err);
			detect_engine_free(e);
			return 2;
		}
		for (int i = 0; i < a->npos && rc == 0; i++)
			rc = replay_log_file(e, sc, a->pos[i], a->run, &o);
		detect_flush(e, on_alert, &o);
		scrape_free(sc);
	} else {
		held_set h = { 0 };

		/* A malformed line stops the reading; what was read before
		 * it is still replayed. */
		for (int i = 0; i < a->npos && rc == 0; i++)
			rc = replay_file(e, a->pos[i], &h, &o);
		if (!o.failed)
			held_replay(e, &h, &o);
		held_free(&h);
	}
	if (o.failed)
		fprintf(stderr, "vitals: out of memory\n");
	detect_engine_free(e);
	free(o.buf);
	return rc;
}
