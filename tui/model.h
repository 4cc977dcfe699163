/*
 * model: what `vitals top` shows, read from the store incrementally.
 *
 * Each refresh is one short read transaction (begun, read, ended):
 *
 *  1. the runs and the watched run's record; when the record is as it was
 *     at the last refresh nothing else of the run is read;
 *  2. otherwise the series records (72 bytes each, no samples): series
 *     whose sample count moved are marked changed and only their
 *     metrics are folded again (min / median / max over ranks); the
 *     emitter records (restarts, drops, who was seen when). When the
 *     whole index is slow to read (over 2 ms: tens of thousands of
 *     series) it is read once a second, and in between only the key
 *     ranges of the metrics a panel asked for;
 *  3. alerts after the last sequence number seen;
 *  4. samples, only of the series a panel asked for (model_want): the
 *     sparklines of the rows on screen, the series of the detail chart,
 *     the ranks of the heat map. A cached series reads only steps after
 *     the last it holds; one that a restart rewrote (samples stored at
 *     steps it already held) is read again over its window. Caches not
 *     asked for during ~10 s are freed.
 *
 * Nothing here draws; panels read the structs below between refreshes.
 *
 * Thread rule: one thread at a time.
 */
#ifndef TUI_MODEL_H
#define TUI_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "store/scan.h"
#include "store/store.h"
#include "wire/wire.h"

#define MODEL_ALL UINT64_MAX /* a span of steps: the whole history */
#define MODEL_NAME_MAX (WIRE_NAME_MAX + 1) /* a metric name and its NUL */
#define MODEL_RUN_MAX (WIRE_RUN_MAX + 1)   /* a run name and its NUL */

/* The samples held for one series: steps strictly increasing (after a
 * restart the sample stored last for a step wins). */
typedef struct model_samples {
	uint64_t *step;
	double   *value;
	size_t    n, cap;
	uint64_t  from; /* steps below this were not read */
	uint64_t  seen; /* the series' sample count when last read */
	unsigned  used; /* frame it was last asked for */
	uint64_t  span; /* span it was read for */
} model_samples;

typedef struct model_series {
	uint32_t    sid;
	int32_t     rank;
	uint32_t    metric;  /* index into model.metrics */
	unsigned    changed; /* frame of the last change */
	uint64_t    want;    /* span asked for this frame, 0 if none */
	series_rec  rec;
	model_samples *cache;
} model_series;

typedef struct model_metric {
	char     name[MODEL_NAME_MAX];
	size_t   first, n; /* its series: series[first, first + n) */
	double   value;    /* the median over ranks, or the value */
	double   min, max;
	int32_t  min_rank, max_rank, worst_rank;
	int      nonfinite;   /* series whose last value is NaN or inf */
	int      lower_worse; /* throughput-like: lower is worse */
	uint64_t last_step;
	int64_t  last_time;
	unsigned changed;        /* frame of the last change */
	int      alert_sev;      /* highest severity firing, -1 if none */
	char     alert_kind[32]; /* kind of that alert, or of the latest */
	uint64_t alert_seq;      /* latest alert naming it, 0 if none */
} model_metric;

typedef struct model_rank {
	int32_t  rank;
	char     host[WIRE_HOST_MAX + 1]; /* of its latest incarnation */
	uint32_t incarnations;
	uint64_t lost_steps; /* rolled back by its restarts */
	uint64_t dropped;
	int64_t  last_seen; /* collector clock, ns */
	uint64_t step;      /* furthest step of its latest incarnation */
	int64_t  last_time; /* its newest sample, ns */
	double   lag_s;     /* behind the run's newest sample */
	int      stalled;
	int      ended;     /* its latest incarnation closed normally */
	int      alert_sev; /* highest severity firing on it, -1 if none */
} model_rank;

enum model_severity { MODEL_INFO = 0, MODEL_WARNING, MODEL_CRITICAL };

typedef struct model_alert {
	uint64_t seq;
	char     rule[64];
	char     kind[32];
	char     host[64];
	char     metric[MODEL_NAME_MAX];
	char     message[240];
	int      severity; /* enum model_severity */
	int      firing;   /* 1 firing, 0 resolved */
	int32_t  rank;
	uint64_t step;
	double   time; /* seconds since the epoch */
	double   value, baseline;
	int      current; /* latest transition of its (rule, metric, rank) */
	int      acked;   /* muted in the alerts view */
	long     mi;      /* its metric's index, valid for mgen */
	unsigned mgen;
} model_alert;

typedef struct model_run {
	char    name[MODEL_RUN_MAX];
	run_rec rec;
} model_run;

typedef struct model {
	store     *st;
	store_txn *txn; /* open only inside model_update */
	char     err[1400];
	unsigned frame;
	unsigned index_changed; /* frame the series or ranks were reread */
	unsigned partial;       /* frame only wanted metrics were reread */
	unsigned metrics_gen;   /* counts rebuilds of metrics[] */
	double   index_cost;    /* s, last whole-index read */
	double   index_at;      /* monotonic s of that read; < 0: read the
	                         * whole index at the next change */
	size_t sweep_next;      /* next metric the sweep rereads */
	double ranks_at;        /* monotonic s of the last emitter read */

	model_run *runs;
	size_t  nruns, runs_cap;

	char    run[MODEL_RUN_MAX]; /* watched run, "" until one exists */
	int     run_fixed;       /* named by --run: never chosen for us */
	int     run_found;
	run_rec rec;
	int     have_rec;

	model_series *series;
	size_t     nseries;
	uint32_t  *by_sid; /* sid -> index + 1 (0: not of this run) */
	size_t     nby_sid;
	model_metric *metrics;
	size_t     nmetrics;
	model_rank   *ranks;
	size_t     nranks;

	/* Header figures. */
	uint64_t step;     /* furthest step of the latest incarnations */
	uint32_t restarts; /* incarnations beyond the first (most of a rank) */
	uint64_t lost_steps; /* steps redone after restarts (most of a rank) */
	uint64_t dropped;
	int64_t  last_seen; /* collector clock, ns; 0 if never */
	int      finished;  /* every rank's latest incarnation ended */
	double   steps_per_s, samples_per_s;
	double   interval_s; /* usual time per step */
	struct {
		double   t;
		uint64_t step, samples;
	} hist[64];
	size_t nhist, hist_at;

	/* Alerts of the watched run, oldest first. */
	model_alert *alerts;
	size_t    nalerts, alerts_cap;
	uint64_t  alert_seq;      /* the last seen */
	int       firing[3];      /* by severity */
	unsigned  alerts_changed; /* frame */
	uint32_t *akeys;          /* (rule, metric, rank) -> current + 1 */
	size_t    akeys_cap;

	double *scratch; /* folding */
	size_t  scratch_cap;

	/* Cost of the last refresh, for the status line and the bench. */
	double update_ms;
	size_t read_series; /* series whose samples were read */
} model;

/* Called between reading the index and reading samples: mark with
 * model_want() the series to be drawn. */
typedef void (*model_want_fn)(void *ctx, model *m);

/*
 * Open the store in db read-only. run may be NULL (watch the run with the
 * newest sample). On failure returns -1 with a sentence in err.
 */
int model_open(
    const char *db, const char *run, model **out, char *err, size_t errlen);
void model_close(model *m);

/*
 * One refresh (see the top of this file). Returns 0, or -1 with the
 * reason in m->err (the previous state is kept and stays drawable).
 */
int model_update(model *m, model_want_fn want, void *ctx);

/* Ask for at least the last span steps of series i in this refresh. */
void model_want(model *m, size_t i, uint64_t span);

/* Watch another run from the next refresh on. */
void model_set_run(model *m, const char *run);

/* The index of the metric called name, or -1. */
long model_metric_find(const model *m, const char *name);

/* The index of the series of metric mi for rank, or -1. */
long model_series_of(const model *m, size_t mi, int32_t rank);

/* The index of rank in m->ranks, or -1. */
long model_rank_find(const model *m, int32_t rank);

/* Wall clock now, seconds since the epoch. */
double model_wall_now(void);

/* Parse one stored alert (JSON) into a. Returns 0, or -1 if it is not a
 * JSON object. Fields missing from it keep neutral values. */
int model_alert_parse(const char *json, size_t len, uint64_t seq, model_alert *a);

#endif /* TUI_MODEL_H */
