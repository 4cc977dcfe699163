/*
 * http: `vitalsd --http ADDR`, served by libmicrohttpd on a thread of its
 * own. GET /metrics: the exposition (exposition.h) in the Prometheus text
 * format 0.0.4, or OpenMetrics 1.0.0 when the Accept header names
 * application/openmetrics-text. GET /healthz: 200 "ok", or 503 and the
 * reason while the store refuses writes. Nothing here touches the store:
 * the database size is the data file's size (stat).
 *
 * Thread rule: http_open and http_close from one thread.
 */
#ifndef COLLECTOR_HTTP_H
#define COLLECTOR_HTTP_H

#include <stddef.h>

#include "collector/alerting.h"
#include "collector/alertmanager.h"
#include "collector/exposition.h"
#include "collector/remote_write.h"

typedef struct http http;

typedef struct http_opts {
	const char   *addr;     /* HOST:PORT, [V6]:PORT; port 0: any free */
	int           insecure; /* allow an address beyond loopback */
	expo         *x;        /* borrowed, outlives the server */
	alerting     *al;       /* may be NULL */
	alertmgr     *am;       /* may be NULL */
	rwrite       *rw;       /* may be NULL */
	const char   *db_dir;
} http_opts;

/* Returns 0 (and logs the address served), or -1 with a one-line reason
 * in err naming the address. */
int  http_open(const http_opts *o, http **out, char *err, size_t errlen);
/* NULL is a no-op. Waits for a scrape in progress. */
void http_close(http *h);

#endif /* COLLECTOR_HTTP_H */
