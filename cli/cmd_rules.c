/*
 * vitals rules default                print the built-in rules
 * vitals rules check [FILE] [--db DIR]
 *                                     validate FILE (default: the
 *                                     built-in rules) and list its rules;
 *                                     with --db, the stored series each
 *                                     rule applies to (read-only).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/reader.h"
#include "cli/replay_input.h"
#include "detect/detect.h"
#include "store/scan.h"

/* The host of each (run, rank), from the emitters table. */
typedef struct host_ent {
	char   *run;
	int32_t rank;
	char    host[256];
} host_ent;

typedef struct hosts {
	host_ent *v;
	size_t    n, cap;
	int       oom;
} hosts;

static int
on_emitter(void *ctx, const char *run, size_t runlen, const emitter_rec *r)
{
	hosts    *h = ctx;
	host_ent *e;

	for (size_t i = 0; i < h->n; i++) {
		e = &h->v[i];
		if (e->rank == r->rank && strlen(e->run) == runlen
		    && memcmp(e->run, run, runlen) == 0) {
			snprintf(e->host, sizeof(e->host), "%s", r->host);
			return 0;
		}
	}
	if (h->n == h->cap) {
		size_t    cap = h->cap ? h->cap * 2 : 64;
		host_ent *v   = realloc(h->v, cap * sizeof(*v));

		if (v == NULL) {
			h->oom = 1;
			return 1;
		}
		h->v   = v;
		h->cap = cap;
	}
	e      = &h->v[h->n];
	e->run = malloc(runlen + 1);
	if (e->run == NULL) {
		h->oom = 1;
		return 1;
	}
	memcpy(e->run, run, runlen);
	e->run[runlen] = 0;
	e->rank        = r->rank;
	snprintf(e->host, sizeof(e->host), "%s", r->host);
	h->n++;
	return 0;
}

static const char *
host_of(const hosts *h, const scan_series *s)
{
	for (size_t i = 0; i < h->n; i++)
		if (h->v[i].rank == s->rank && strlen(h->v[i].run) == s->runlen
		    && memcmp(h->v[i].run, s->run, s->runlen) == 0)
			return h->v[i].host;
	return "";
}

typedef struct series_ctx {
	const detect_rules *rules;
	size_t              rule;
	const hosts        *h;
	size_t              n;
	int                 err;
} series_ctx;

static int
on_series(void *ctx, const scan_series *s)
{
	series_ctx *c    = ctx;
	const char *host = host_of(c->h, s);
	int rc = detect_rules_match(c->rules, c->rule, s->run, s->runlen,
	    s->metric, s->mlen, host, strlen(host), s->rank);

	if (rc == -DETECT_ELIMIT) {
		printf(
		    "    (pattern hit the match limit on %.*s %.*s rank %d: "
		    "treated as no match)\n",
		    (int) s->runlen, s->run, (int) s->mlen, s->metric,
		    (int) s->rank);
		return 0;
	}
	if (rc < 0) {
		c->err = rc;
		return 1;
	}
	if (rc == 1) {
		printf("    %.*s  %.*s  rank %d%s%s\n", (int) s->runlen,
		    s->run, (int) s->mlen, s->metric, (int) s->rank,
		    *host ? "  host " : "", host);
		c->n++;
	}
	return 0;
}

static int
list_matches(const cli_args *a, const detect_rules *rules, size_t i)
{
	cli_reader r;
	hosts      h = { 0 };
	series_ctx c = { rules, i, &h, 0, 0 };
	int        rc;

	if (cli_reader_open(a, &r) != 0)
		return 1;
	rc = scan_emitters(r.st, r.txn, NULL, on_emitter, &h);
	if (rc == 0 && !h.oom)
		rc = scan_series_of(r.st, r.txn, NULL, on_series, &c);
	if (rc == 0 && (h.oom || c.err))
		fprintf(stderr, "vitals: out of memory\n");
	else if (rc == 0)
		printf("    (%zu series)\n", c.n);
	rc = cli_reader_done(&r, rc) || h.oom || c.err;
	for (size_t k = 0; k < h.n; k++)
		free(h.v[k].run);
	free(h.v);
	return rc;
}

static int
check(const cli_args *a)
{
	const char   *path = a->npos > 1 ? a->pos[1] : NULL;
	detect_rules *rules;
	size_t        n;
	int           rc = 0;

	if (a->npos > 2) {
		fprintf(
		    stderr, "usage: vitals rules check [FILE] [--db DIR]\n");
		return 2;
	}
	if (cli_load_rules(path, &rules) != 0)
		return 1;
	n = detect_rules_count(rules);
	printf("%s: %zu rule%s, valid\n", path ? path : "(default rules)", n,
	    n == 1 ? "" : "s");
	for (size_t i = 0; i < n && rc == 0; i++) {
		detect_rule_info ri;

		detect_rules_info(rules, i, &ri);
		printf("rule %s: %s, %s\n", ri.name, ri.detector, ri.severity);
		printf("  %s\n", ri.definition);
		if (a->db != NULL)
			rc = list_matches(a, rules, i);
	}
	detect_rules_free(rules);
	return rc;
}

int
cmd_rules(const cli_args *a)
{
	if (a->npos >= 1 && strcmp(a->pos[0], "default") == 0
	    && a->npos == 1) {
		fputs(detect_rules_default_text(), stdout);
		return 0;
	}
	if (a->npos >= 1 && strcmp(a->pos[0], "check") == 0)
		return check(a);
	fprintf(stderr,
	    "usage: vitals rules default\n"
	    "       vitals rules check [FILE] [--db DIR]\n");
	return 2;
}
