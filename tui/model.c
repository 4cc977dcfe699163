#include "tui/model_priv.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/clock.h"

/* When reading the whole series index takes longer than this, it is read
 * again only when series are added; at other changes the series of the
 * metrics on screen are reread (one key range each), and a sweep rereads
 * the other metrics in turn for at most TM_SWEEP_BUDGET s per frame, so
 * no frame pays for the whole index (64,000 series: about 10 ms). */
#define TM_INDEX_CHEAP 0.002
#define TM_SWEEP_BUDGET 0.0005
/* Rates are measured over this many seconds of refreshes. */
#define TM_RATE_WINDOW 5.0

double
model_wall_now(void)
{
	return now_wall_s();
}

static void
series_free(model *m)
{
	for (size_t i = 0; i < m->nseries; i++)
		model_cache_free(m->series[i].cache);
	free(m->series);
	free(m->by_sid);
	free(m->metrics);
	m->series   = NULL;
	m->by_sid   = NULL;
	m->metrics  = NULL;
	m->nseries  = 0;
	m->nby_sid  = 0;
	m->nmetrics = 0;
}

/* Forget everything of the watched run (not the run list). */
static void
run_reset(model *m)
{
	series_free(m);
	free(m->ranks);
	free(m->alerts);
	free(m->akeys);
	m->ranks      = NULL;
	m->nranks     = 0;
	m->alerts     = NULL;
	m->nalerts    = 0;
	m->alerts_cap = 0;
	m->akeys      = NULL;
	m->akeys_cap  = 0;
	m->alert_seq  = 0;
	memset(m->firing, 0, sizeof(m->firing));
	m->have_rec       = 0;
	m->run_found      = 0;
	m->step           = 0;
	m->restarts       = 0;
	m->lost_steps     = 0;
	m->dropped        = 0;
	m->last_seen      = 0;
	m->nhist          = 0;
	m->hist_at        = 0;
	m->steps_per_s    = NAN;
	m->samples_per_s  = NAN;
	m->interval_s     = NAN;
	m->alerts_changed = m->frame;
}

int
model_open(
    const char *db, const char *run, model **out, char *err, size_t errlen)
{
	model *m = calloc(1, sizeof(*m));

	*out = NULL;
	if (m == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (run != NULL && strlen(run) >= MODEL_RUN_MAX) {
		snprintf(err, errlen, "--run: a run name has at most %d bytes",
		    MODEL_RUN_MAX - 1);
		free(m);
		return -1;
	}
	if (store_open(db, STORE_RDONLY, &m->st, err, errlen) != 0) {
		free(m);
		return -1;
	}
	if (run != NULL) {
		snprintf(m->run, sizeof(m->run), "%s", run);
		m->run_fixed = 1;
	}
	run_reset(m);
	*out = m;
	return 0;
}

void
model_close(model *m)
{
	if (m == NULL)
		return;
	store_read_end(m->txn);
	run_reset(m);
	free(m->runs);
	free(m->scratch);
	store_close(m->st);
	free(m);
}

void
model_set_run(model *m, const char *run)
{
	m->run_fixed = 1;
	if (strcmp(m->run, run) == 0)
		return;
	run_reset(m);
	snprintf(m->run, sizeof(m->run), "%s", run);
}

/* ---- runs ------------------------------------------------------------ */

static int
on_run(void *ctx, const char *run, size_t runlen, const run_rec *r)
{
	model *m = ctx;

	if (runlen >= MODEL_RUN_MAX)
		return 0;
	if (m->nruns == m->runs_cap) {
		size_t  nc = m->runs_cap ? m->runs_cap * 2 : 16;
		model_run *nr = realloc(m->runs, nc * sizeof(*nr));

		if (nr == NULL)
			return STORE_ENOMEM;
		m->runs     = nr;
		m->runs_cap = nc;
	}
	memcpy(m->runs[m->nruns].name, run, runlen);
	m->runs[m->nruns].name[runlen] = 0;
	m->runs[m->nruns].rec          = *r;
	m->nruns++;
	return 0;
}

static int
read_runs(model *m)
{
	m->nruns = 0;
	return scan_runs(m->st, m->txn, on_run, m);
}

/* Without --run, the run with the newest sample. */
static void
choose_run(model *m)
{
	const model_run *best = NULL;

	for (size_t i = 0; i < m->nruns; i++)
		if (m->runs[i].rec.samples > 0
		    && (best == NULL
		        || m->runs[i].rec.last_time > best->rec.last_time))
			best = &m->runs[i];
	if (best != NULL)
		snprintf(m->run, sizeof(m->run), "%s", best->name);
}

/* ---- series ---------------------------------------------------------- */

/* Names that measure speed: for them a low value is the bad one. */
static int
lower_is_worse(const char *name)
{
	static const char *const fast[] = { "token", "throughput", "per_sec",
		"persec", "_per_s", "/s", "tps", "mfu", "flops", "util",
		"accuracy", "speed", "samples_per", "it_s" };

	for (size_t i = 0; i < sizeof(fast) / sizeof(fast[0]); i++)
		if (strcasestr(name, fast[i]) != NULL)
			return 1;
	return 0;
}

typedef struct build_ctx {
	model     *m;
	model_series *series;
	size_t     n, cap;
	model_metric *metrics;
	size_t     nm, mcap;
	uint32_t   max_sid;
	int        oom;
} build_ctx;

static int
on_series_build(void *vctx, const scan_series *s)
{
	build_ctx *c = vctx;
	model_series *x;

	if (s->mlen >= MODEL_NAME_MAX)
		return 0;
	if (c->nm == 0 || strlen(c->metrics[c->nm - 1].name) != s->mlen
	    || memcmp(c->metrics[c->nm - 1].name, s->metric, s->mlen) != 0) {
		model_metric *mt;

		if (c->nm == c->mcap) {
			size_t     nc = c->mcap ? c->mcap * 2 : 32;
			model_metric *nm = realloc(c->metrics, nc * sizeof(*nm));

			if (nm == NULL)
				goto oom;
			c->metrics = nm;
			c->mcap    = nc;
		}
		mt = &c->metrics[c->nm++];
		memset(mt, 0, sizeof(*mt));
		memcpy(mt->name, s->metric, s->mlen);
		mt->name[s->mlen] = 0;
		mt->first         = c->n;
		mt->lower_worse   = lower_is_worse(mt->name);
		mt->alert_sev     = -1;
	}
	if (c->n == c->cap) {
		size_t     nc = c->cap ? c->cap * 2 : 64;
		model_series *ns = realloc(c->series, nc * sizeof(*ns));

		if (ns == NULL)
			goto oom;
		c->series = ns;
		c->cap    = nc;
	}
	x = &c->series[c->n++];
	memset(x, 0, sizeof(*x));
	x->sid    = s->rec.sid;
	x->rank   = s->rank;
	x->rec    = s->rec;
	x->metric = (uint32_t) (c->nm - 1);
	c->metrics[c->nm - 1].n++;
	if (s->rec.sid > c->max_sid)
		c->max_sid = s->rec.sid;
	return 0;
oom:
	c->oom = 1;
	return STORE_ENOMEM;
}

/*
 * Read every series record of the run and build metrics anew, carrying
 * over the sample caches and filter state by series id and name. On
 * failure the previous state is kept.
 */
static int
series_rebuild(model *m)
{
	build_ctx c;
	uint32_t *by;
	int       rc;

	memset(&c, 0, sizeof(c));
	c.m = m;
	rc  = scan_series_of(m->st, m->txn, m->run, on_series_build, &c);
	if (rc == 0
	    && (by = calloc((size_t) c.max_sid + 1, sizeof(*by))) == NULL)
		rc = STORE_ENOMEM;
	if (rc != 0) {
		free(c.series);
		free(c.metrics);
		return rc;
	}
	for (size_t i = 0; i < c.n; i++) {
		model_series *x = &c.series[i];

		by[x->sid] = (uint32_t) i + 1;
		x->changed = m->frame;
		if (x->sid < m->nby_sid && m->by_sid[x->sid] != 0) {
			model_series *o = &m->series[m->by_sid[x->sid] - 1];

			x->cache = o->cache;
			o->cache = NULL;
		}
	}
	for (size_t i = 0; i < c.nm; i++)
		c.metrics[i].changed = m->frame;
	series_free(m);
	m->metrics_gen++;
	m->series   = c.series;
	m->nseries  = c.n;
	m->metrics  = c.metrics;
	m->nmetrics = c.nm;
	m->by_sid   = by;
	m->nby_sid  = (size_t) c.max_sid + 1;
	return 0;
}

typedef struct inc_ctx {
	model *m;
	size_t i;
	int    mismatch;
} inc_ctx;

static int
on_series_inc(void *vctx, const scan_series *s)
{
	inc_ctx   *c = vctx;
	model     *m = c->m;
	model_series *x;

	if (c->i >= m->nseries || m->series[c->i].sid != s->rec.sid) {
		c->mismatch = 1;
		return -1;
	}
	x = &m->series[c->i++];
	if (x->rec.samples != s->rec.samples
	    || x->rec.last_time != s->rec.last_time
	    || x->rec.last_step != s->rec.last_step) {
		x->rec                        = s->rec;
		x->changed                    = m->frame;
		m->metrics[x->metric].changed = m->frame;
	}
	return 0;
}

/* The k-th smallest of v[0, n) (Wirth's selection): afterwards v[0, k)
 * holds values <= v[k] and v(k, n) values >= v[k]. */
static double
nth(double *v, size_t n, size_t k)
{
	long lo = 0, hi = (long) n - 1, kk = (long) k;

	while (lo < hi) {
		double x = v[kk];
		long   i = lo, j = hi;

		do {
			while (v[i] < x)
				i++;
			while (x < v[j])
				j--;
			if (i <= j) {
				double t = v[i];

				v[i] = v[j];
				v[j] = t;
				i++;
				j--;
			}
		} while (i <= j);
		if (j < kk)
			lo = i;
		if (kk < i)
			hi = j;
	}
	return v[kk];
}

/* Latest value over ranks: min, median, max, and the worst rank (a
 * non-finite one first, else the extreme in the bad direction). */
static int
fold(model *m, model_metric *mt)
{
	size_t nf = 0;

	if (m->scratch_cap < mt->n) {
		double *ns = realloc(m->scratch, mt->n * sizeof(*ns));

		if (ns == NULL)
			return STORE_ENOMEM;
		m->scratch     = ns;
		m->scratch_cap = mt->n;
	}
	mt->nonfinite  = 0;
	mt->min        = NAN;
	mt->max        = NAN;
	mt->value      = NAN;
	mt->min_rank   = -1;
	mt->max_rank   = -1;
	mt->worst_rank = -1;
	mt->last_step  = 0;
	mt->last_time  = 0;
	for (size_t i = 0; i < mt->n; i++) {
		const model_series *s = &m->series[mt->first + i];
		double           v = s->rec.last_value;

		if (s->rec.last_step > mt->last_step)
			mt->last_step = s->rec.last_step;
		if (s->rec.last_time > mt->last_time)
			mt->last_time = s->rec.last_time;
		if (s->rec.samples == 0)
			continue;
		if (!isfinite(v)) {
			if (mt->nonfinite++ == 0)
				mt->worst_rank = s->rank;
			if (mt->n == 1)
				mt->value = v;
			continue;
		}
		if (nf == 0 || v < mt->min) {
			mt->min      = v;
			mt->min_rank = s->rank;
		}
		if (nf == 0 || v > mt->max) {
			mt->max      = v;
			mt->max_rank = s->rank;
		}
		m->scratch[nf++] = v;
	}
	if (nf > 0 && !(mt->n == 1 && mt->nonfinite)) {
		double hi = nth(m->scratch, nf, nf / 2);

		if (nf % 2 == 0) {
			double lo = m->scratch[0];

			/* After selection, [0, nf/2) holds the lower half. */
			for (size_t i = 1; i < nf / 2; i++)
				if (m->scratch[i] > lo)
					lo = m->scratch[i];
			hi = (lo + hi) / 2;
		}
		mt->value = hi;
	}
	if (mt->worst_rank < 0)
		mt->worst_rank = mt->lower_worse ? mt->min_rank : mt->max_rank;
	return 0;
}

static int
read_series(model *m)
{
	inc_ctx c = { m, 0, 0 };
	int     rc;

	if (m->nseries == m->rec.series) {
		rc = scan_series_of(m->st, m->txn, m->run, on_series_inc, &c);
		if (rc != 0 && !c.mismatch)
			return rc;
	}
	if (m->nseries != m->rec.series || c.mismatch || c.i != m->nseries)
		if ((rc = series_rebuild(m)) != 0)
			return rc;
	for (size_t i = 0; i < m->nmetrics; i++)
		if (m->metrics[i].changed == m->frame
		    && (rc = fold(m, &m->metrics[i])) != 0)
			return rc;
	return 0;
}

/* State of one metric_refresh: the next of the metric's series. */
typedef struct refresh_ctx {
	model     *m;
	model_metric *mt;
	size_t     i;
} refresh_ctx;

static int
refresh_one(void *vctx, const scan_series *s)
{
	refresh_ctx *c = vctx;
	model       *m = c->m;
	model_metric   *mt = c->mt;
	model_series   *x;

	/* A series we do not hold (a new rank): stop, read it all. */
	if (c->i >= mt->n || m->series[mt->first + c->i].sid != s->rec.sid)
		return -1;
	x = &m->series[mt->first + c->i++];
	if (x->rec.samples != s->rec.samples ||
	    x->rec.last_time != s->rec.last_time) {
		long o = model_rank_find(m, x->rank);

		x->rec      = s->rec;
		x->changed  = m->frame;
		mt->changed = m->frame;
		/* The rank's newest sample, for stalls between whole
		 * reads. */
		if (o >= 0 && x->rec.last_time > m->ranks[o].last_time)
			m->ranks[o].last_time = x->rec.last_time;
	}
	return 0;
}

/*
 * Read again the series of metric mi only (one key range of the series
 * database). Returns 0 or a store_err; if the store holds other series
 * than we do (a new rank), the whole index is read at the next refresh.
 */
static int
metric_refresh(model *m, size_t mi)
{
	refresh_ctx c = { m, &m->metrics[mi], 0 };
	int         rc;

	rc = scan_series_metric(m->st, m->txn, m->run, c.mt->name,
	    refresh_one, &c);
	if (rc == -1 || c.i != c.mt->n) {
		m->index_at = -1; /* read the whole index next time */
		return 0;
	}
	if (rc != 0)
		return rc;
	return c.mt->changed == m->frame ? fold(m, c.mt) : 0;
}

/* Between whole-index reads: the series of the metrics asked for. */
static int
refresh_wanted(model *m)
{
	long last = -1;
	int  rc;

	for (size_t i = 0; i < m->nseries; i++) {
		const model_series *s = &m->series[i];

		if (s->want == 0 || (long) s->metric == last)
			continue;
		last = (long) s->metric;
		if ((rc = metric_refresh(m, s->metric)) != 0)
			return rc;
	}
	return 0;
}

/* Between whole-index reads: the other metrics, in turn, within the
 * frame's budget. */
static int
sweep(model *m)
{
	double t0 = now_mono_s();
	int    rc;

	for (size_t n = 0; n < m->nmetrics && m->index_at >= 0; n++) {
		if (now_mono_s() - t0 >= TM_SWEEP_BUDGET)
			break;
		if (m->sweep_next >= m->nmetrics)
			m->sweep_next = 0;
		if ((rc = metric_refresh(m, m->sweep_next++)) != 0)
			return rc;
	}
	return 0;
}

/* ---- emitters and ranks ---------------------------------------------- */

static int
rank_cmp(const void *a, const void *b)
{
	const model_rank *x = a, *y = b;

	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

long
model_rank_find(const model *m, int32_t rank)
{
	size_t lo = 0, hi = m->nranks;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (m->ranks[mid].rank == rank)
			return (long) mid;
		if (m->ranks[mid].rank < rank)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

_Static_assert(sizeof(((model_rank *) 0)->host) ==
	sizeof(((emitter_rec *) 0)->host),
    "a rank shows its host whole");

/* The ranks being read: one model_rank per rank with an emitter, and the
 * run's figures over them (set on the model once all is read). */
typedef struct ranks_ctx {
	model_rank *v;
	size_t   n, cap;
	uint32_t restarts;
	uint64_t lost_steps, dropped, step;
	int64_t  last_seen;
} ranks_ctx;

/*
 * A rank's restarts are its incarnations beyond the first, its lost
 * steps those each incarnation redid, from where it started up to the
 * furthest step reached before. The run's figures are the largest over
 * ranks, as a job restart restarts every rank at once.
 */
static int
on_rank(void *vctx, const scan_rank *sr)
{
	ranks_ctx *c        = vctx;
	uint64_t   furthest = 0;
	int        any      = 0;
	model_rank   *r;

	if (c->n == c->cap) {
		size_t   nc = c->cap ? c->cap * 2 : 64;
		model_rank *nv = realloc(c->v, nc * sizeof(*nv));

		if (nv == NULL)
			return STORE_ENOMEM;
		c->v   = nv;
		c->cap = nc;
	}
	r = &c->v[c->n++];
	memset(r, 0, sizeof(*r));
	r->rank      = sr->rank;
	r->alert_sev = -1;
	for (size_t j = 0; j < sr->n; j++) {
		const emitter_rec *e = sr->inc[j];

		r->incarnations++;
		r->dropped += e->dropped;
		if (e->last_seen > r->last_seen)
			r->last_seen = e->last_seen;
		if (e->samples == 0)
			continue;
		if (any && e->first_step <= furthest)
			r->lost_steps += furthest - e->first_step + 1;
		if (!any || e->last_step > furthest)
			furthest = e->last_step;
		any     = 1;
		r->step = e->last_step;
	}
	/* The latest incarnation is the rank now. */
	memcpy(r->host, sr->inc[sr->n - 1]->host, sizeof(r->host));
	r->ended = sr->inc[sr->n - 1]->ended != 0;
	/* A job restart restarts every rank: count it once. */
	if (r->incarnations - 1 > c->restarts)
		c->restarts = r->incarnations - 1;
	if (r->lost_steps > c->lost_steps)
		c->lost_steps = r->lost_steps;
	c->dropped += r->dropped;
	if (r->last_seen > c->last_seen)
		c->last_seen = r->last_seen;
	if (r->step > c->step)
		c->step = r->step;
	return 0;
}

/*
 * Ranks from the emitters (scan_ranks: an incarnation per process
 * start), their newest sample from the series (with_series; else as last
 * read).
 */
static int
read_ranks(model *m, int with_series)
{
	ranks_ctx c = { 0 };
	model_rank  *nr;
	size_t    n, extra = 0;
	int       rc, finished = 0;

	rc = scan_ranks(m->st, m->txn, m->run, on_rank, &c);
	if (rc == 0)
		rc = scan_run_finished(m->st, m->txn, m->run, &finished);
	if (rc != 0) {
		free(c.v);
		return rc;
	}
	/* Ranks seen only in series (no emitter record) are kept too. */
	for (size_t i = 0; i < m->nseries; i++)
		if (i == 0 || m->series[i].rank != m->series[i - 1].rank)
			extra++;
	nr = calloc(c.n + extra + 1, sizeof(*nr));
	if (nr == NULL) {
		free(c.v);
		return STORE_ENOMEM;
	}
	if (c.n > 0)
		memcpy(nr, c.v, c.n * sizeof(*nr));
	n = c.n;
	free(c.v);
	m->finished   = finished;
	m->restarts   = c.restarts;
	m->lost_steps = c.lost_steps;
	m->dropped    = c.dropped;
	m->last_seen  = c.last_seen;
	m->step       = c.step;
	if (!with_series) {
		/* Newest samples as last read with the whole index. */
		for (size_t i = 0; i < n; i++) {
			long o = model_rank_find(m, nr[i].rank);

			if (o >= 0)
				nr[i].last_time = m->ranks[o].last_time;
		}
	}
	for (size_t i = 0; with_series && i < m->nseries; i++) {
		const model_series *s   = &m->series[i];
		model_rank          key = { .rank = s->rank };
		model_rank *r = bsearch(&key, nr, n, sizeof(*nr), rank_cmp);

		if (r == NULL) {
			r            = &nr[n++];
			r->rank      = s->rank;
			r->alert_sev = -1;
			qsort(nr, n, sizeof(*nr), rank_cmp);
			r = bsearch(&key, nr, n, sizeof(*nr), rank_cmp);
		}
		if (s->rec.last_time > r->last_time)
			r->last_time = s->rec.last_time;
		if (r->incarnations == 0 && s->rec.last_step > r->step)
			r->step = s->rec.last_step;
	}
	if (m->step == 0)
		m->step = m->rec.last_step;
	free(m->ranks);
	m->ranks  = nr;
	m->nranks = n;
	return 0;
}

/* A rank is stalled when the others went on without it: its newest
 * sample is older than the run's by more than 10 usual step intervals
 * (at least 2 s, so that batching never looks like a stall), its step
 * is behind, and it did not end normally. */
static void
mark_stalls(model *m)
{
	double th = isfinite(m->interval_s) ? 10 * m->interval_s : 0;

	if (th < 2.0)
		th = 2.0;
	for (size_t i = 0; i < m->nranks; i++) {
		model_rank *r = &m->ranks[i];

		r->lag_s   = r->last_time > 0
		      ? (double) (m->rec.last_time - r->last_time) / 1e9
		      : NAN;
		r->stalled = m->nranks > 1 && !r->ended && r->step < m->step
		    && isfinite(r->lag_s) && r->lag_s > th;
	}
}

/* ---- rates ----------------------------------------------------------- */

static void
rates_update(model *m, double now)
{
	size_t cap = sizeof(m->hist) / sizeof(m->hist[0]);
	size_t oldest;
	double dt;

	m->hist[m->hist_at].t       = now;
	m->hist[m->hist_at].step    = m->step;
	m->hist[m->hist_at].samples = m->rec.samples;
	m->hist_at                  = (m->hist_at + 1) % cap;
	if (m->nhist < cap)
		m->nhist++;
	/* The oldest refresh within the window. */
	oldest = (m->hist_at + cap - m->nhist) % cap;
	for (size_t k = 0; k < m->nhist; k++) {
		size_t i = (oldest + k) % cap;

		if (now - m->hist[i].t <= TM_RATE_WINDOW) {
			oldest = i;
			break;
		}
	}
	dt               = now - m->hist[oldest].t;
	m->steps_per_s   = NAN;
	m->samples_per_s = NAN;
	if (dt >= 0.9) {
		m->steps_per_s   = m->step > m->hist[oldest].step
		      ? (double) (m->step - m->hist[oldest].step) / dt
		      : 0;
		m->samples_per_s = m->rec.samples > m->hist[oldest].samples
		    ? (double) (m->rec.samples - m->hist[oldest].samples) / dt
		    : 0;
	}
	if (isfinite(m->steps_per_s) && m->steps_per_s > 0)
		m->interval_s = 1 / m->steps_per_s;
	else if (m->rec.last_step > m->rec.first_step
	    && m->rec.last_time > m->rec.first_time)
		m->interval_s = (double) (m->rec.last_time - m->rec.first_time)
		    / 1e9 / (double) (m->rec.last_step - m->rec.first_step);
	else
		m->interval_s = NAN;
}

/* ---- refresh --------------------------------------------------------- */

static int
rec_differs(const run_rec *a, const run_rec *b)
{
	return a->samples != b->samples || a->last_step != b->last_step
	    || a->last_time != b->last_time || a->emitters != b->emitters
	    || a->series != b->series || a->dropped != b->dropped
	    || a->first_step != b->first_step;
}

static int
read_run(model *m, double now)
{
	run_rec rec;
	int     rc, changed;

	if (m->run[0] == 0 && !m->run_fixed)
		choose_run(m);
	if (m->run[0] == 0)
		return 0;
	rc = scan_run_get(m->st, m->txn, m->run, &rec);
	if (rc == STORE_ENOTFOUND) {
		m->run_found = 0;
		return 0;
	}
	if (rc != 0)
		return rc;
	m->run_found = 1;
	changed      = !m->have_rec || rec_differs(&rec, &m->rec);
	m->rec       = rec;
	m->have_rec  = 1;
	if (changed) {
		int whole = m->nseries != rec.series
		    || m->index_cost < TM_INDEX_CHEAP || m->index_at < 0;

		if (whole) {
			double t0 = now_mono_s();

			if ((rc = read_series(m)) != 0)
				return rc;
			m->index_cost = now_mono_s() - t0;
			m->index_at   = now;
		} else {
			m->partial = m->frame;
		}
		if ((rc = read_ranks(m, whole)) != 0)
			return rc;
		m->index_changed = m->frame;
		m->ranks_at      = now;
	} else if (!m->finished && now - m->ranks_at >= 1.0) {
		/* A goodbye (an emitter's FINAL batch) changes no run
		 * figure: look at the emitters once a second while quiet. */
		if ((rc = read_ranks(m, 0)) != 0)
			return rc;
		m->ranks_at = now;
	}
	rates_update(m, now);
	mark_stalls(m);
	return 0;
}

int
model_update(model *m, model_want_fn want, void *ctx)
{
	double t0 = now_mono_s();
	int    rc;

	m->frame++;
	m->read_series = 0;
	if ((rc = store_read_begin(m->st, &m->txn)) != 0) {
		snprintf(m->err, sizeof(m->err), "%s", store_errmsg(m->st));
		return -1;
	}
	rc = read_runs(m);
	if (rc == 0)
		rc = read_run(m, t0);
	if (rc == 0 && m->run_found)
		rc = model_alerts_read(m);
	if (rc == 0
	    && (m->alerts_changed == m->frame || m->index_changed == m->frame))
		model_alerts_apply(m);
	if (rc == 0 && want != NULL) {
		for (size_t i = 0; i < m->nseries; i++)
			m->series[i].want = 0;
		want(ctx, m);
		if (m->partial == m->frame)
			rc = refresh_wanted(m);
		if (rc == 0 && m->partial == m->frame)
			rc = sweep(m);
		if (rc == 0)
			rc = model_samples_read(m);
	}
	store_read_end(m->txn);
	m->txn = NULL;
	model_samples_evict(m);
	m->update_ms = (now_mono_s() - t0) * 1e3;
	if (rc != 0) {
		if (rc == STORE_ENOMEM)
			snprintf(m->err, sizeof(m->err), "out of memory");
		else
			snprintf(m->err, sizeof(m->err), "%s",
			    store_errmsg(m->st));
		return -1;
	}
	return 0;
}

long
model_metric_find(const model *m, const char *name)
{
	size_t lo = 0, hi = m->nmetrics;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int    c   = strcmp(m->metrics[mid].name, name);

		if (c == 0)
			return (long) mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

long
model_series_of(const model *m, size_t mi, int32_t rank)
{
	const model_metric *mt;

	if (mi >= m->nmetrics)
		return -1;
	mt = &m->metrics[mi];
	for (size_t i = 0; i < mt->n; i++)
		if (m->series[mt->first + i].rank == rank)
			return (long) (mt->first + i);
	return -1;
}
