/*
 * exposition: the snapshot `vitalsd --http` serves on /metrics. The
 * collector's threads publish into it what they already hold (the server
 * thread each stored batch after its commit and the counters after each
 * commit, the detection thread each alert transition); a scrape copies the
 * table under the mutex and formats the copy without it, so a scrape never
 * touches the store and holds ingest up for a copy at most (a few ms at
 * 100,000 series).
 *
 * Series are never forgotten while the collector runs (a finished run's
 * last values stay, as in the store). Their number is bounded: past
 * max_series, and for metric names the filter does not match, series are
 * left out and counted (vitals_http_series_omitted{reason}).
 *
 * Thread rule: every function may be called from any thread.
 */
#ifndef COLLECTOR_EXPOSITION_H
#define COLLECTOR_EXPOSITION_H

#include <stddef.h>
#include <stdint.h>

#include "collector/ingest.h"
#include "detect/detect.h"
#include "wire/wire.h"

typedef struct expo expo;

typedef struct expo_opts {
	size_t      max_series; /* vitals_value series exposed (default
	                         * 100,000); the (run, rank) series and the
	                         * alert groups have the same bound */
	const char *filter;     /* PCRE2 pattern a metric name must match
	                         * (unanchored), or NULL: every metric */
} expo_opts;

void expo_opts_init(expo_opts *o);

/* Returns 0, or -1 with a one-line reason in err (a filter that does not
 * compile: the pattern and the offset). */
int  expo_open(const expo_opts *o, expo **out, char *err, size_t errlen);
/* NULL is a no-op. */
void expo_close(expo *x);

/* A stored batch (status WIRE_ACK_STORED), after its commit. */
void expo_batch(expo *x, const wire_batch *b);
/* A commit that took took_ns, and the counters after it. */
void expo_commit(expo *x, int64_t took_ns, const ingest_stats *is,
    uint64_t malformed);
/* reason: why the store refuses writes (copied), or NULL: it takes them
 * again. */
void expo_blocked(expo *x, const char *reason);
/* An alert transition. */
void expo_alert(expo *x, const detect_alert *a);

/* A growing output buffer; oom set once an append failed. */
typedef struct expo_buf {
	char  *p;
	size_t n, cap;
	int    oom;
} expo_buf;

void expo_buf_add(expo_buf *b, const char *s, size_t len);
void expo_buf_printf(expo_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Appends s escaped as a label value: backslash, double quote and newline
 * as \\, \" and \n; every other byte (UTF-8 included) as it is. */
void expo_buf_label(expo_buf *b, const char *s, size_t len);
/* A sample value: NaN, +Inf, -Inf, or the shortest of %.15g / %.17g that
 * reads back exactly. */
void expo_buf_double(expo_buf *b, double v);
/* HELP and TYPE lines of a family. name is the family name; a counter's
 * samples are name_total. om: OpenMetrics, where a counter's family is
 * written without _total, else the Prometheus text format 0.0.4. */
void expo_buf_family(expo_buf *b, int om, const char *name, const char *type,
    const char *help);

/* Values read when the scrape happens, by its caller. */
typedef struct expo_live {
	int64_t  db_bytes;       /* -1: unknown */
	uint64_t detect_bytes;   /* stored batches waiting for detection */
	int      detect_on;
} expo_live;

/* Append the whole exposition (without OpenMetrics' # EOF). */
void expo_render(expo *x, int om, const expo_live *live, expo_buf *out);

/* 0 and "ok", or 1 and why the store refuses writes (copied into why). */
int expo_health(expo *x, char *why, size_t len);

#endif /* COLLECTOR_EXPOSITION_H */
