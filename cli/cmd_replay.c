/*
 * vitals replay [--rules FILE] FILE...: run the detect engine offline
 * over samples from files, in file order, ticking the clock with each
 * sample's own time, and print every alert as one JSON object per line.
 * The same input always gives the same output, byte for byte.
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
#include "wire/wire.h"
#include "detect/detect.h"

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

static int
replay_file(detect_engine *e, const char *path, replay_out *o)
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
	while ((rc = replay_input_next(in, &s, err, sizeof(err))) == 1) {
		detect_tick(e, s.time_ns, on_alert, o);
		detect_feed(e, &s, on_alert, o);
		if (o->failed)
			break;
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
		const char *b   = strrchr(path, '/');
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
		detect_sample s = { run, strlen(run), x.metric,
			strlen(x.metric), NULL, 0, x.rank, x.step, x.time_ns,
			x.value };

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

		if (scrape_new(a->preset, a->pattern, &sc, err, sizeof(err)) !=
		    0) {
			fprintf(stderr, "vitals: %s\n", err);
			detect_engine_free(e);
			return 2;
		}
		for (int i = 0; i < a->npos && rc == 0; i++)
			rc = replay_log_file(e, sc, a->pos[i], a->run, &o);
		scrape_free(sc);
	} else {
		for (int i = 0; i < a->npos && rc == 0; i++)
			rc = replay_file(e, a->pos[i], &o);
	}
	if (o.failed)
		fprintf(stderr, "vitals: out of memory\n");
	detect_engine_free(e);
	free(o.buf);
	return rc;
}
