/*
 * alertmanager: `vitalsd --alertmanager URL` (repeatable, for an HA
 * pair). Every alert transition is posted to each Alertmanager's
 * /api/v2/alerts (libcurl, json-c) from a thread of its own:
 *
 *   labels       alertname (the rule), run, rank, host, metric, severity,
 *                kind (a label whose value is empty, such as the metric
 *                of a run-wide stall, is left out)
 *   annotations  summary (the message), value, baseline, step
 *   startsAt     the time of the firing transition (the sample's time)
 *   endsAt       firing: now + 4 resend intervals, so Alertmanager
 *                resolves an alert by itself if vitalsd goes away;
 *                resolved: the time of the resolution
 *
 * Every firing alert is posted again every resend interval (default 30 s,
 * as Prometheus re-sends every minute at most), and a post that fails (no
 * connection, a timeout, a 5xx) is retried with backoff from 1 s up to the
 * resend interval, so an Alertmanager that was down gets what still fires
 * once it is back. Resolutions wait in a bounded queue per Alertmanager
 * (ALERTMGR_PENDING_MAX; the oldest is dropped and counted when full). A
 * 4xx is logged with the reply and its resolutions dropped (counted).
 *
 * alertmgr_alert only takes a mutex and copies the alert: it never waits
 * for the network, so detection and ingest never wait for Alertmanager.
 *
 * Thread rule: alertmgr_alert and alertmgr_get_stats from any thread;
 * open and close from one.
 */
#ifndef COLLECTOR_ALERTMANAGER_H
#define COLLECTOR_ALERTMANAGER_H

#include <stddef.h>
#include <stdint.h>

#include "detect/detect.h"

#define ALERTMGR_URLS_MAX 8
#define ALERTMGR_FIRING_MAX 10000
#define ALERTMGR_PENDING_MAX 10000

typedef struct alertmgr alertmgr;

typedef struct alertmgr_opts {
	const char *urls[ALERTMGR_URLS_MAX]; /* Alertmanager base URLs */
	size_t      nurls;
	int         resend_ms;  /* default 30000 */
	int         timeout_ms; /* per post, default 5000 */
} alertmgr_opts;

typedef struct alertmgr_stats {
	uint64_t ok, errors, refused; /* posts */
	uint64_t dropped;             /* transitions not sent */
	uint64_t firing, pending;
} alertmgr_stats;

void alertmgr_opts_init(alertmgr_opts *o);

/* Checks every URL (http or https, a host) and starts the thread. Returns
 * 0, or -1 with a one-line reason naming the URL in err. */
int  alertmgr_open(const alertmgr_opts *o, alertmgr **out, char *err,
     size_t errlen);
/* Tries once more to deliver what is pending (one post per Alertmanager,
 * bounded by the timeout), stops the thread, frees. NULL is a no-op. */
void alertmgr_close(alertmgr *am);

/* Queue a transition; copies what it needs. */
void alertmgr_alert(alertmgr *am, const detect_alert *a);

void alertmgr_get_stats(alertmgr *am, alertmgr_stats *out);

#endif /* COLLECTOR_ALERTMANAGER_H */
