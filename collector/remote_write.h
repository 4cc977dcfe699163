/*
 * remote_write: `vitalsd --remote-write URL` (repeatable). Every stored
 * sample goes to each URL with its own timestamp over the Prometheus
 * remote-write protocol 1.0 (protobuf from proto/remote_write.proto by
 * protoc-c, snappy, HTTP POST by libcurl), as
 *
 *   vitals_value{run,metric,rank,host}  the sample's value
 *   vitals_step{run,rank}               the sample's step, for every
 *                                       sample of the rank's first series
 *                                       (lowest series id: the metric it
 *                                       logged first)
 *
 * host is the host of the rank's latest incarnation, left out when empty.
 *
 * Each URL has a forwarder thread that reads the store (never the
 * ingest path) and encodes, and a sender thread that posts the encoded
 * requests in order: the backlog is the store itself, so a receiver that
 * is down or slow never slows ingest. Both run at nice +10: on a machine
 * short of cores ingest gets the CPU first. Per series the forwarder
 * keeps how many of its samples, in the order stored
 * (scan_samples_arrived), the receiver acknowledged: a sample stored
 * after newer ones of its series (a batch resent behind them, a late
 * spool) is sent as well (store_pos, in the store under
 * "rw:" and a hash of the URL, saved at most once a second and at a
 * clean stop), so after a restart or a SIGKILL it resumes there: delivery
 * is at least once (what was acknowledged in the last second before a
 * SIGKILL is sent again; receivers keep one sample per series and
 * timestamp, Prometheus only with out_of_order_time_window).
 *
 * A pass lists the series with samples not yet sent (one listing serves
 * the passes until each of its series was read), reads up to
 * RWRITE_PASS_MAX of them in one read transaction, and queues them in
 * requests of up to RWRITE_REQ_MAX samples (a series' samples oldest
 * first) for the sender, which posts one while the forwarder encodes the
 * next. A connection error, a timeout or a 5xx is retried with backoff
 * (250 ms doubling to 30 s) and logged once per outage; a 4xx is logged,
 * counted and its samples skipped (sending them again would be refused
 * again). The lag (seconds since the thread last had every sample
 * stored up to then) and the samples pending are exported on /metrics;
 * past RWRITE_LAG_ALERT_S the thread logs one line, and one more when it
 * has caught up.
 *
 * Thread rule: open and close from one thread; get_stats from any.
 * Inside, the target's positions, listing and samples belong to the
 * forwarder; a queued request belongs to the sender until it marks it
 * done (under the handle's mutex).
 */
#ifndef COLLECTOR_REMOTE_WRITE_H
#define COLLECTOR_REMOTE_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

#define RWRITE_URLS_MAX 8
#define RWRITE_PASS_MAX (512 * 1024)
#define RWRITE_REQ_MAX 20000
#define RWRITE_LAG_ALERT_S 60
#define RWRITE_YIELD_LAG_S 10

typedef struct rwrite rwrite;

typedef struct rwrite_opts {
	const char *urls[RWRITE_URLS_MAX]; /* receivers' write URLs */
	size_t      nurls;
	int         timeout_ms;  /* per request, default 10000 */
	int         interval_ms; /* between passes with nothing new, 200 */
	int         lag_alert_s; /* default RWRITE_LAG_ALERT_S */
} rwrite_opts;

typedef struct rwrite_stats {
	const char *url;             /* borrowed, valid until rwrite_close */
	uint64_t    samples;         /* vitals_value samples delivered */
	uint64_t    ok, errors;      /* requests: 2xx; failed and retried */
	uint64_t    refused;         /* requests refused with a 4xx */
	uint64_t    samples_refused; /* their samples, skipped */
	uint64_t pending; /* stored, not yet delivered (last pass) */
	double   lag_seconds;
} rwrite_stats;

void rwrite_opts_init(rwrite_opts *o);

/*
 * The collector spent ns committing a group (vitalsd's server calls it
 * after each commit; any thread). While commits fill more than half of
 * the time, forwarders hold their passes, as long as they are less than
 * RWRITE_YIELD_LAG_S behind: a burst of ingest keeps the CPU, and what a
 * receiver on the same machine does with the samples comes after it. A
 * steady run (a commit every few tens of ms) is never held.
 */
void rwrite_ingest_busy(rwrite *rw, int64_t ns);

/* Checks a URL (http or https, a host). Returns 0, or -1 with a
 * one-line reason naming it in err. */
int rwrite_check_url(const char *url, char *err, size_t errlen);

/* Checks every URL and starts one thread each on st (borrowed: it
 * outlives the handle). Returns 0, or -1 with the reason in err. */
int rwrite_open(
    const rwrite_opts *o, store *st, rwrite **out, char *err, size_t errlen);
/* Stops the threads (a request in flight is abandoned), saves the
 * positions, frees. NULL is a no-op. */
void rwrite_close(rwrite *rw);

size_t rwrite_count(const rwrite *rw);
void   rwrite_get_stats(rwrite *rw, size_t i, rwrite_stats *out);

#endif /* COLLECTOR_REMOTE_WRITE_H */
