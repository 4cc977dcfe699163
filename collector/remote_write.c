#include "collector/remote_write.h"

#include <curl/curl.h>
#include <inttypes.h>
#include <pthread.h>
#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "collector/http_client.h"
#include "proto/remote_write.pb-c.h"
#include "store/scan.h"
#include "vitals.h"

#define BACKOFF_MIN_MS 250
#define BACKOFF_MAX_MS 30000
#define SAVE_EVERY_MS 1000
/* Encoded requests queued for the sender: one in flight while the
 * forwarder reads and encodes the next ones. */
#define RWRITE_QUEUE 3
/* When caught up, a pass starts at least this many times its reading
 * time after the last (a read decodes the store's unfolded journal
 * whole, however little is new): reading takes at most a tenth of the
 * time while ingest runs. */
#define READ_SPACING 9
#define SPACING_MAX_MS 2000
/* The journal is read for this many series at a time (load_journal). */
#define JCHUNK_SERIES 256
#define JCHUNK_SAMPLES 16384
/* Added to the forwarder threads' nice value: ingest comes first. */
#define RWRITE_NICE 10

/* A sample as read from the store (time in ns, as stored). */
typedef struct rw_sample {
	int64_t  t;
	double   v;
	uint64_t step;
} rw_sample;

/*
 * A series with samples to send in this pass: names are offsets into the
 * target's arena (it grows while the series are listed); its new samples
 * are smp[off .. off + n).
 */
typedef struct rw_item {
	uint32_t sid;
	int32_t  rank;
	size_t   run_off, metric_off, host_off;
	char     rankbuf[12];
	int      step_source; /* the rank's first series: vitals_step too */
	int      complete;    /* the slice holds all its new samples */
	uint64_t listed;      /* its samples when listed */
	size_t   off, n, sent;
} rw_item;

/* Per rank of the run being listed: its first series and its host. */
typedef struct rank_slot {
	int32_t  rank;
	uint32_t min_sid;
	size_t   host_off;
	int      used;
} rank_slot;

/*
 * Where a series stands: pos, how far it was read and queued; ack, how
 * far the receiver acknowledged (what is saved). state: 0 not loaded, 1
 * loaded, 2 ack changed since the last save.
 */
typedef struct pos_slot {
	store_pos pos, ack;
	uint8_t   state;
} pos_slot;

/*
 * An encoded request, queued for the sender thread. Slots go free ->
 * queued (by the forwarder) -> done (by the sender) -> free (the
 * forwarder moves the acknowledged positions, ent, once done).
 */
enum { REQ_FREE, REQ_QUEUED, REQ_DONE };
typedef struct rw_req {
	uint8_t         *pb, *sb; /* protobuf, then its snappy form */
	size_t           cappb, capsb, len, nsamples;
	store_pos_entry *ent; /* the positions once it is done */
	size_t           nent, capent;
	int              state; /* under rw->mu */
} rw_req;

/* A piece of an item in the request being built. */
typedef struct part {
	size_t item, from, n;
} part;

typedef struct target target;

struct rwrite {
	store          *st;
	int             timeout_ms, interval_ms, lag_alert_s;
	pthread_mutex_t mu; /* guards stop and every target's stats */
	pthread_cond_t  wake;
	int             stop;
	target         *t;
	size_t          nt;
	int64_t         busy_ns; /* committing, summed (atomic) */
	/* Label names and metric names as protobuf-c wants them (char *). */
	char ln_name[9], ln_host[5], ln_metric[7], ln_rank[5], ln_run[4];
	char v_value[13], v_step[12];
};

struct target {
	rwrite   *rw;
	char     *url;
	char      name[32]; /* of its positions in the store */
	CURL     *curl;
	pthread_t thread;
	int       started;

	pos_slot *pos; /* by series id */
	size_t    npos;

	/* The series listed, their names; the samples of this pass, those
	 * of items[first .. last) (a listing lasts until each of its items
	 * was read: a pass after a cut one reads on without listing). */
	store_txn  *txn;
	rw_item    *items;
	size_t      nitems, capitems, first, last, next;
	rw_sample  *smp;
	size_t      nsmp, capsmp;
	char       *arena;
	size_t      narena, caparena;
	rank_slot  *ranks;
	size_t      capranks, nranks;
	const char *cur_run;
	size_t      cur_runlen, run_first_item;
	uint64_t    pass_pending;
	int         oom;
	/* The journal samples of the series a pass reads, read once
	 * (store/scan.h), and the sids they were loaded for. */
	scan_journal *jr;
	uint32_t     *jsids;
	size_t        capjsids, jend;

	/* The request being built (reused). */
	part                   *parts;
	size_t                  capparts;
	Prometheus__TimeSeries *ts, **tsp;
	size_t                  capts;
	Prometheus__Label      *lab, **labp;
	size_t                  caplab;
	Prometheus__Sample     *ps, **psp;
	size_t                  capps;

	/* Requests between the forwarder and the sender thread: the
	 * forwarder fills req[tail], the sender posts req[sendi], the
	 * forwarder frees req[head] once done (all in order). */
	rw_req           req[RWRITE_QUEUE];
	size_t           head, tail, sendi, nqueued;
	pthread_cond_t   cv; /* with rw->mu: a slot done or queued */
	pthread_t        sender;
	int              sender_started;
	store_pos_entry *loose; /* moved with no request: after the last */
	size_t           nloose, caploose;

	uint64_t     sum_count;  /* sum of the loaded positions' ack counts */
	uint64_t     total;      /* runs' samples at the last look */
	uint64_t     last_total; /* runs' samples when it last caught up */
	int          caught_up;
	int64_t      caught_up_ms, last_save_ms; /* monotonic */
	int64_t      busy_seen, busy_at;          /* yield_to_ingest */
	uint64_t     failed_in_row;
	int          lagging, save_failing;
	rwrite_stats st; /* under rw->mu */
};

void
rwrite_opts_init(rwrite_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->timeout_ms  = 10000;
	o->interval_ms = 200;
	o->lag_alert_s = RWRITE_LAG_ALERT_S;
}

static int64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int
stopping(rwrite *rw)
{
	return __atomic_load_n(&rw->stop, __ATOMIC_RELAXED);
}

/* Grow *p (of *cap elements of size sz) to hold want. Returns 0 or -1. */
static int
grow(void *pp, size_t *cap, size_t want, size_t sz)
{
	void **p = pp;
	size_t n = *cap ? *cap : 16;
	void  *q;

	if (want <= *cap)
		return 0;
	while (n < want)
		n *= 2;
	if ((q = realloc(*p, n * sz)) == NULL)
		return -1;
	*p   = q;
	*cap = n;
	return 0;
}

/* Copy s (len bytes) into the arena, NUL-terminated: its offset, or
 * (size_t) -1. */
static size_t
arena_add(target *t, const char *s, size_t len)
{
	size_t off = t->narena;

	if (grow(&t->arena, &t->caparena, t->narena + len + 1, 1) != 0)
		return (size_t) -1;
	memcpy(t->arena + off, s, len);
	t->arena[off + len] = 0;
	t->narena += len + 1;
	return off;
}

/* ---- positions ------------------------------------------------------- */

static pos_slot *
pos_of(target *t, uint32_t sid)
{
	if (sid >= t->npos) {
		size_t    n = t->npos ? t->npos : 1024;
		pos_slot *p;

		while (n <= sid)
			n *= 2;
		if ((p = realloc(t->pos, n * sizeof(*p))) == NULL)
			return NULL;
		memset(p + t->npos, 0, (n - t->npos) * sizeof(*p));
		t->pos  = p;
		t->npos = n;
	}
	return &t->pos[sid];
}

/*
 * Save the positions that changed, at most once a second unless forced.
 * A failure (a full map the writer has not grown yet, a full disk) keeps
 * them for the next try and is logged once.
 */
static void
save_positions(target *t, int force)
{
	store_pos_entry *e = NULL;
	size_t           n = 0, cap = 0;
	char             err[600];
	int64_t          now = mono_ms();

	if (!force && now - t->last_save_ms < SAVE_EVERY_MS)
		return;
	t->last_save_ms = now;
	for (size_t sid = 0; sid < t->npos; sid++) {
		if (t->pos[sid].state != 2)
			continue;
		if (grow(&e, &cap, n + 1, sizeof(*e)) != 0)
			break;
		e[n].sid = (uint32_t) sid;
		e[n].pos = t->pos[sid].ack;
		n++;
	}
	if (n > 0
	    && store_pos_save(t->rw->st, t->name, e, n, err, sizeof(err))
	        != 0) {
		if (!t->save_failing)
			fprintf(stderr,
			    "vitalsd: remote write %s: %s; kept in memory, "
			    "retrying\n",
			    t->url, err);
		t->save_failing = 1;
	} else if (n > 0) {
		for (size_t i = 0; i < n; i++)
			if (t->pos[e[i].sid].state == 2)
				t->pos[e[i].sid].state = 1;
		t->save_failing = 0;
	}
	free(e);
}

/* ---- listing --------------------------------------------------------- */

static rank_slot *
rank_slot_of(target *t, int32_t rank)
{
	size_t h;

	if (t->nranks * 2 >= t->capranks) {
		rank_slot *old = t->ranks;
		size_t     oc = t->capranks, nc = oc ? oc * 2 : 64;

		if ((t->ranks = calloc(nc, sizeof(*t->ranks))) == NULL) {
			t->ranks = old;
			return NULL;
		}
		t->capranks = nc;
		t->nranks   = 0;
		for (size_t i = 0; i < oc; i++)
			if (old[i].used) {
				rank_slot *s = rank_slot_of(t, old[i].rank);

				*s = old[i];
			}
		free(old);
	}
	h = ((uint32_t) rank * 2654435761u) & (t->capranks - 1);
	while (t->ranks[h].used && t->ranks[h].rank != rank)
		h = (h + 1) & (t->capranks - 1);
	if (!t->ranks[h].used) {
		t->ranks[h].used     = 1;
		t->ranks[h].rank     = rank;
		t->ranks[h].min_sid  = UINT32_MAX;
		t->ranks[h].host_off = (size_t) -1;
		t->nranks++;
	}
	return &t->ranks[h];
}

static int
on_rank(void *ctx, const scan_rank *r)
{
	target            *t = ctx;
	rank_slot         *s = rank_slot_of(t, r->rank);
	const emitter_rec *e = r->inc[r->n - 1];

	if (s == NULL)
		return -1;
	s->host_off = arena_add(t, e->host, strlen(e->host));
	return s->host_off == (size_t) -1 ? -1 : 0;
}

/* The run listed last is complete: mark each rank's first series and
 * give the items their host. */
static int
finish_run(target *t)
{
	size_t first = t->run_first_item;
	int    rc;

	if (t->cur_run == NULL || first == t->nitems)
		return 0;
	rc = scan_ranks(
	    t->rw->st, t->txn, t->arena + t->items[first].run_off, on_rank, t);
	if (rc != 0)
		return rc;
	for (size_t i = first; i < t->nitems; i++) {
		rw_item   *it = &t->items[i];
		rank_slot *s  = rank_slot_of(t, it->rank);

		if (s == NULL)
			return -1;
		it->step_source = s->min_sid == it->sid;
		it->host_off    = s->host_off;
	}
	return 0;
}

static int
on_series(void *ctx, const scan_series *s)
{
	target    *t = ctx;
	pos_slot  *p;
	rank_slot *r;
	rw_item   *it;
	int        rc;

	if (t->cur_run == NULL || s->runlen != t->cur_runlen
	    || memcmp(s->run, t->cur_run, s->runlen) != 0) {
		if ((rc = finish_run(t)) != 0)
			return rc;
		t->cur_run        = s->run;
		t->cur_runlen     = s->runlen;
		t->run_first_item = t->nitems;
		if (t->ranks != NULL)
			memset(t->ranks, 0, t->capranks * sizeof(*t->ranks));
		t->nranks = 0;
	}
	if ((r = rank_slot_of(t, s->rank)) == NULL)
		return -1;
	if (s->rec.sid < r->min_sid)
		r->min_sid = s->rec.sid;
	if ((p = pos_of(t, s->rec.sid)) == NULL)
		return -1;
	if (p->state == 0) {
		rc = store_pos_get(
		    t->rw->st, t->txn, t->name, s->rec.sid, &p->pos);
		if (rc == STORE_ENOTFOUND)
			memset(&p->pos, 0, sizeof(p->pos));
		else if (rc != 0)
			return rc;
		p->ack   = p->pos;
		p->state = 1;
		t->sum_count += p->pos.count;
	}
	if (s->rec.samples <= p->pos.count)
		return 0;
	t->pass_pending += s->rec.samples - p->pos.count;
	if (grow(&t->items, &t->capitems, t->nitems + 1, sizeof(*t->items)))
		return -1;
	it = &t->items[t->nitems];
	memset(it, 0, sizeof(*it));
	it->sid        = s->rec.sid;
	it->rank       = s->rank;
	it->listed     = s->rec.samples;
	it->run_off    = arena_add(t, s->run, s->runlen);
	it->metric_off = arena_add(t, s->metric, s->mlen);
	it->host_off   = (size_t) -1;
	if (it->run_off == (size_t) -1 || it->metric_off == (size_t) -1)
		return -1;
	snprintf(it->rankbuf, sizeof(it->rankbuf), "%d", (int) s->rank);
	t->nitems++;
	return 0;
}

static int
on_run(void *ctx, const char *run, size_t runlen, const run_rec *r)
{
	uint64_t *total = ctx;

	(void) run;
	(void) runlen;
	*total += r->samples;
	return 0;
}

/* ---- reading the new samples of a series ------------------------------ */

typedef struct collect {
	target  *t;
	uint64_t n;    /* new samples seen */
	size_t   keep; /* how many to keep in smp */
} collect;

static int
on_sample(void *ctx, uint64_t step, int64_t time_ns, double value)
{
	collect   *c = ctx;
	target    *t = c->t;
	rw_sample *s;

	if (c->n++ >= c->keep)
		return 0;
	if (grow(&t->smp, &t->capsmp, t->nsmp + 1, sizeof(*t->smp)) != 0)
		return -1;
	s       = &t->smp[t->nsmp++];
	s->t    = time_ns;
	s->v    = value;
	s->step = step;
	return 0;
}

static int
by_time(const void *a, const void *b)
{
	const rw_sample *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	if (x->step != y->step)
		return x->step < y->step ? -1 : 1;
	return 0;
}

/* Put a part's samples in time order: they mostly are already (only a
 * sample stored after newer ones is not). */
static void
sort_part(rw_sample *s, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (by_time(&s[i - 1], &s[i]) > 0) {
			qsort(s, n, sizeof(*s), by_time);
			return;
		}
}

/*
 * Read the new samples of it, in the order they were stored, keeping at
 * most room of them: those after the first pos.count of the series.
 * New is by arrival, not by step or time: a batch the emitter resent
 * after newer ones were stored (a collector restart), or a spool sent
 * after the run went on, comes after what was sent and goes out too.
 * Returns 0 or a store_err/-1.
 */
static int
read_item(target *t, rw_item *it, size_t room)
{
	pos_slot *p = &t->pos[it->sid];
	collect   c;
	int       rc;

	it->sent = 0;
	memset(&c, 0, sizeof(c));
	c.t     = t;
	c.keep  = room;
	it->off = t->nsmp;
	rc      = scan_samples_arrived(
	         t->rw->st, t->txn, t->jr, it->sid, p->pos.count, on_sample, &c);
	if (rc != 0)
		return rc;
	/* What is stored now (read in a later transaction than it was
	 * listed in, a pass after a cut one: what was stored since counts
	 * too). */
	it->listed   = p->pos.count + c.n;
	it->complete = c.n <= room;
	it->n        = t->nsmp - it->off;
	return 0;
}

/*
 * Read the journal samples of the next series the pass reads, from
 * items[from] (up to JCHUNK_SERIES of them and JCHUNK_SAMPLES samples by
 * their counts when listed), in one pass over the journal: near the
 * head, where the forwarder reads many series with a few new samples
 * each, looking each up in every journal record costs records x
 * series. In chunks, so that what is decoded is read while in the
 * cache. A series read that was not loaded is looked up as before.
 * Sets t->jend past the last item loaded. Returns 0, -1 when out of
 * memory, or a store_err.
 */
static int
load_journal(target *t, size_t from, size_t room)
{
	size_t n = 0, i;

	if (t->jr == NULL && scan_journal_new(&t->jr) != 0)
		return -1;
	if (room > JCHUNK_SAMPLES)
		room = JCHUNK_SAMPLES;
	for (i = from; i < t->nitems && n < JCHUNK_SERIES; i++) {
		rw_item *it   = &t->items[i];
		uint64_t left = it->listed - t->pos[it->sid].pos.count;

		if (n > 0 && left > room)
			break;
		if (grow(&t->jsids, &t->capjsids, n + 1, sizeof(*t->jsids)))
			return -1;
		t->jsids[n++] = it->sid;
		room -= left < room ? (size_t) left : room;
	}
	t->jend = i;
	return scan_journal_load(t->rw->st, t->txn, t->jr, t->jsids, n);
}

/* Samples stored and not yet handled, as of the last look at the runs. */
static void
set_pending(target *t)
{
	pthread_mutex_lock(&t->rw->mu);
	t->st.pending = t->total > t->sum_count ? t->total - t->sum_count : 0;
	pthread_mutex_unlock(&t->rw->mu);
}

/* While a request is retried: how much the store holds now. */
static void
refresh_pending(target *t)
{
	store_txn *txn;
	uint64_t   total = 0;

	if (store_read_begin(t->rw->st, &txn) != 0)
		return;
	if (scan_runs(t->rw->st, txn, on_run, &total) == 0)
		t->total = total;
	store_read_end(txn);
	set_pending(t);
}

static void check_lag(target *t);

/* ---- requests -------------------------------------------------------- */

static int
stop_requested(void *ctx)
{
	return stopping(ctx);
}

/* POST body to t. Returns the HTTP status, or 0 with the reason in why. */
static long
post(target *t, const uint8_t *body, size_t len, http_reply *r, char *why,
    size_t whylen)
{
	struct curl_slist *hdr = NULL;
	http_post_req      q   = { 0 };
	long               code;

	hdr = curl_slist_append(hdr, "Content-Encoding: snappy");
	hdr = curl_slist_append(hdr, "Content-Type: application/x-protobuf");
	hdr = curl_slist_append(
	    hdr, "X-Prometheus-Remote-Write-Version: 0.1.0");
	hdr = curl_slist_append(hdr, "User-Agent: vitalsd/" VT_VERSION_STR);
	/* No "Expect: 100-continue" round trip before each body. */
	hdr          = curl_slist_append(hdr, "Expect:");
	q.url        = t->url;
	q.headers    = hdr;
	q.body       = body;
	q.len        = len;
	q.timeout_ms = (long) t->rw->timeout_ms;
	q.stop       = stop_requested;
	q.stop_ctx   = t->rw;
	code         = http_post(t->curl, &q, r, why, whylen);
	curl_slist_free_all(hdr);
	return code;
}

static void
set_label(Prometheus__Label *l, char *name, char *value)
{
	l->name  = name;
	l->value = value;
}

/*
 * Room for nts series, nlab labels and nsmp samples in the request's
 * scratch (structures initialised once, pointers to them alongside).
 * Returns 0 or -1.
 */
static int
reserve(target *t, size_t nts, size_t nlab, size_t nsmp)
{
	if (nts > t->capts) {
		size_t c = t->capts, n = c;

		if (grow(&t->ts, &n, nts, sizeof(*t->ts)) != 0
		    || (t->tsp = realloc(t->tsp, n * sizeof(*t->tsp))) == NULL)
			return -1;
		for (size_t i = c; i < n; i++)
			prometheus__time_series__init(&t->ts[i]);
		t->capts = n;
	}
	if (nlab > t->caplab) {
		size_t c = t->caplab, n = c;

		if (grow(&t->lab, &n, nlab, sizeof(*t->lab)) != 0
		    || (t->labp = realloc(t->labp, n * sizeof(*t->labp)))
		        == NULL)
			return -1;
		for (size_t i = c; i < n; i++)
			prometheus__label__init(&t->lab[i]);
		t->caplab = n;
	}
	if (nsmp > t->capps) {
		size_t c = t->capps, n = c;

		if (grow(&t->ps, &n, nsmp, sizeof(*t->ps)) != 0
		    || (t->psp = realloc(t->psp, n * sizeof(*t->psp))) == NULL)
			return -1;
		for (size_t i = c; i < n; i++)
			prometheus__sample__init(&t->ps[i]);
		/* ps may have moved; sample i is always ps[i]. */
		for (size_t i = 0; i < n; i++)
			t->psp[i] = &t->ps[i];
		t->capps = n;
	}
	return 0;
}

/*
 * Encode the parts as one WriteRequest into q: protobuf in q->pb, its
 * snappy form in q->sb (q->len bytes). Returns 0, or -1 when out of
 * memory.
 */
static int
encode(target *t, size_t nparts, rw_req *q)
{
	rwrite                  *rw  = t->rw;
	Prometheus__WriteRequest req = PROMETHEUS__WRITE_REQUEST__INIT;
	size_t nts = 0, nlab = 0, nsmp = 0, need_ts = 0, need_smp = 0;
	size_t len, out;

	for (size_t i = 0; i < nparts; i++) {
		int src = t->items[t->parts[i].item].step_source;

		need_ts += src ? 2 : 1;
		need_smp += t->parts[i].n * (src ? 2 : 1);
	}
	if (reserve(t, need_ts, need_ts * 5, need_smp) != 0)
		return -1;
	for (size_t i = 0; i < nparts; i++) {
		const part             *pa = &t->parts[i];
		rw_item                *it = &t->items[pa->item];
		const rw_sample        *s  = t->smp + it->off + pa->from;
		char                   *host;
		Prometheus__TimeSeries *ts = &t->ts[nts];

		/* Labels sorted by name, as the protocol requires. */
		host          = it->host_off == (size_t) -1 ? NULL
		                                            : t->arena + it->host_off;
		t->tsp[nts++] = ts;
		ts->labels    = t->labp + nlab;
		set_label(&t->lab[nlab], rw->ln_name, rw->v_value);
		t->labp[nlab] = &t->lab[nlab];
		nlab++;
		if (host != NULL && host[0] != 0) {
			set_label(&t->lab[nlab], rw->ln_host, host);
			t->labp[nlab] = &t->lab[nlab];
			nlab++;
		}
		set_label(
		    &t->lab[nlab], rw->ln_metric, t->arena + it->metric_off);
		t->labp[nlab] = &t->lab[nlab];
		nlab++;
		set_label(&t->lab[nlab], rw->ln_rank, it->rankbuf);
		t->labp[nlab] = &t->lab[nlab];
		nlab++;
		set_label(&t->lab[nlab], rw->ln_run, t->arena + it->run_off);
		t->labp[nlab] = &t->lab[nlab];
		nlab++;
		ts->n_labels  = (size_t) (t->labp + nlab - ts->labels);
		ts->samples   = t->psp + nsmp;
		ts->n_samples = pa->n;
		for (size_t j = 0; j < pa->n; j++) {
			t->ps[nsmp].value     = s[j].v;
			t->ps[nsmp].timestamp = s[j].t / 1000000;
			nsmp++;
		}
		if (!it->step_source)
			continue;
		ts            = &t->ts[nts];
		t->tsp[nts++] = ts;
		ts->labels    = t->labp + nlab;
		set_label(&t->lab[nlab], rw->ln_name, rw->v_step);
		t->labp[nlab] = &t->lab[nlab];
		nlab++;
		set_label(&t->lab[nlab], rw->ln_rank, it->rankbuf);
		t->labp[nlab] = &t->lab[nlab];
		nlab++;
		set_label(&t->lab[nlab], rw->ln_run, t->arena + it->run_off);
		t->labp[nlab] = &t->lab[nlab];
		nlab++;
		ts->n_labels  = 3;
		ts->samples   = t->psp + nsmp;
		ts->n_samples = pa->n;
		for (size_t j = 0; j < pa->n; j++) {
			t->ps[nsmp].value     = (double) s[j].step;
			t->ps[nsmp].timestamp = s[j].t / 1000000;
			nsmp++;
		}
	}
	req.n_timeseries = nts;
	req.timeseries   = t->tsp;
	len              = prometheus__write_request__get_packed_size(&req);
	if (grow(&q->pb, &q->cappb, len, 1) != 0)
		return -1;
	prometheus__write_request__pack(&req, q->pb);
	out = snappy_max_compressed_length(len);
	if (grow(&q->sb, &q->capsb, out, 1) != 0)
		return -1;
	if (snappy_compress((const char *) q->pb, len, (char *) q->sb, &out)
	    != SNAPPY_OK)
		return -1;
	q->len = out;
	return 0;
}

/* Remember that sid's acknowledged position becomes pos once q is done
 * (q NULL: in the loose list, for the next request). Returns 0 or -1. */
static int
add_entry(target *t, rw_req *q, uint32_t sid, const store_pos *pos)
{
	store_pos_entry **e   = q != NULL ? &q->ent : &t->loose;
	size_t           *n   = q != NULL ? &q->nent : &t->nloose;
	size_t           *cap = q != NULL ? &q->capent : &t->caploose;

	if (grow(e, cap, *n + 1, sizeof(**e)) != 0)
		return -1;
	(*e)[*n].sid = sid;
	(*e)[*n].pos = *pos;
	(*n)++;
	return 0;
}

/* The parts go in q: move the read positions past them, and note where
 * the acknowledged ones go once q is done. Returns 0 or -1. */
static int
advance(target *t, size_t nparts, rw_req *q)
{
	for (size_t i = 0; i < nparts; i++) {
		const part      *pa = &t->parts[i];
		rw_item         *it = &t->items[pa->item];
		const rw_sample *s  = t->smp + it->off + pa->from;
		pos_slot        *p  = &t->pos[it->sid];

		/* Step and time are no longer read here; an older vitalsd
		 * on this store resumes by them. */
		for (size_t j = 0; j < pa->n; j++) {
			if (s[j].step > p->pos.step)
				p->pos.step = s[j].step;
			if (s[j].t > p->pos.time)
				p->pos.time = s[j].t;
		}
		p->pos.count += pa->n;
		it->sent += pa->n;
		if (it->complete && it->sent == it->n)
			p->pos.count = it->listed;
		if (p->pos.count > it->listed)
			p->pos.count = it->listed;
		if (add_entry(t, q, it->sid, &p->pos) != 0)
			return -1;
	}
	return 0;
}

/* Sleep ms or until vitalsd stops. Returns non-zero when stopping. */
static int
nap(rwrite *rw, int64_t ms)
{
	struct timespec ts;
	int             stop;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long) (ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&rw->mu);
	if (!rw->stop)
		pthread_cond_timedwait(&rw->wake, &rw->mu, &ts);
	stop = rw->stop;
	pthread_mutex_unlock(&rw->mu);
	return stop;
}

/* The positions of a done request are acknowledged: saved next time. */
static void
ack_entries(target *t, const store_pos_entry *e, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		pos_slot *p = &t->pos[e[i].sid];

		t->sum_count -= p->ack.count;
		p->ack = e[i].pos;
		t->sum_count += p->ack.count;
		p->state = 2;
	}
}

/* Free the requests the sender is done with, in order, moving their
 * acknowledged positions. Returns how many were freed. */
static size_t
reap(target *t)
{
	size_t n = 0;

	for (;;) {
		rw_req *q = &t->req[t->head];
		int     done;

		pthread_mutex_lock(&t->rw->mu);
		done = t->nqueued > 0 && q->state == REQ_DONE;
		pthread_mutex_unlock(&t->rw->mu);
		if (!done)
			return n;
		ack_entries(t, q->ent, q->nent);
		q->nent = 0;
		pthread_mutex_lock(&t->rw->mu);
		q->state = REQ_FREE;
		t->nqueued--;
		pthread_mutex_unlock(&t->rw->mu);
		t->head = (t->head + 1) % RWRITE_QUEUE;
		n++;
	}
}

/*
 * Wait until at most max requests are queued or in flight, freeing the
 * done ones. While the receiver does not answer, the pending count and
 * the lag are kept current every second. Returns 0, or -1 when stopping.
 */
static int
wait_queue(target *t, size_t max)
{
	rwrite *rw = t->rw;

	for (;;) {
		struct timespec ts;
		size_t          nq;
		int             stop;

		reap(t);
		pthread_mutex_lock(&rw->mu);
		nq   = t->nqueued;
		stop = rw->stop;
		if (nq > max && !stop && t->req[t->head].state != REQ_DONE) {
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec++;
			if (pthread_cond_timedwait(&t->cv, &rw->mu, &ts)
			    != 0) {
				pthread_mutex_unlock(&rw->mu);
				refresh_pending(t);
				check_lag(t);
				continue;
			}
		}
		pthread_mutex_unlock(&rw->mu);
		if (stop)
			return -1;
		if (nq <= max)
			return 0;
	}
}

/*
 * Queue the parts as one request for the sender: waits for a free slot,
 * encodes, moves the read positions. Returns 0, or -1 when stopping.
 */
static int
enqueue(target *t, size_t nparts, size_t nsamples)
{
	rw_req *q;

	if (wait_queue(t, RWRITE_QUEUE - 1) != 0)
		return -1;
	q = &t->req[t->tail];
	/* Room for every entry first: advance then cannot fail half-way. */
	while (encode(t, nparts, q) != 0
	    || grow(&q->ent, &q->capent, nparts + t->nloose, sizeof(*q->ent))
	        != 0) {
		fprintf(stderr,
		    "vitalsd: remote write %s: out of memory "
		    "encoding a request; retrying\n",
		    t->url);
		if (nap(t->rw, 1000))
			return -1;
	}
	q->nent = 0;
	(void) advance(t, nparts, q);
	/* What moved with no request is acknowledged with this one. */
	for (size_t i = 0; i < t->nloose; i++)
		(void) add_entry(t, q, t->loose[i].sid, &t->loose[i].pos);
	t->nloose   = 0;
	q->nsamples = nsamples;
	pthread_mutex_lock(&t->rw->mu);
	q->state = REQ_QUEUED;
	t->nqueued++;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->rw->mu);
	t->tail = (t->tail + 1) % RWRITE_QUEUE;
	return 0;
}

/*
 * The sender thread's part: deliver q, retried with backoff until it is
 * delivered or refused (4xx), or vitalsd stops. Returns 0 when done (the
 * positions may move past it), -1 when stopping.
 */
static int
deliver(target *t, const rw_req *q)
{
	rwrite    *rw      = t->rw;
	int64_t    backoff = 0;
	http_reply r;
	char       why[CURL_ERROR_SIZE + 400];
	long       code;

	for (;;) {
		if (stopping(rw))
			return -1;
		code = post(t, q->sb, q->len, &r, why, sizeof(why));
		if (code >= 200 && code < 300) {
			pthread_mutex_lock(&rw->mu);
			t->st.ok++;
			t->st.samples += q->nsamples;
			pthread_mutex_unlock(&rw->mu);
			if (t->failed_in_row > 0)
				fprintf(stderr,
				    "vitalsd: remote write %s: delivered "
				    "again after %" PRIu64
				    " failed requests\n",
				    t->url, t->failed_in_row);
			t->failed_in_row = 0;
			return 0;
		}
		r.s[strcspn(r.s, "\r\n")] = 0;
		if (code >= 400 && code < 500) {
			pthread_mutex_lock(&rw->mu);
			t->st.refused++;
			t->st.samples_refused += q->nsamples;
			pthread_mutex_unlock(&rw->mu);
			fprintf(stderr,
			    "vitalsd: remote write %s refused %zu samples "
			    "(HTTP %ld): %s; skipped\n",
			    t->url, q->nsamples, code, r.s);
			return 0;
		}
		if (stopping(rw))
			return -1;
		if (code != 0)
			snprintf(why, sizeof(why), "HTTP %ld: %s", code, r.s);
		pthread_mutex_lock(&rw->mu);
		t->st.errors++;
		pthread_mutex_unlock(&rw->mu);
		if (t->failed_in_row++ == 0)
			fprintf(stderr,
			    "vitalsd: remote write %s: %s; the samples stay "
			    "in the store, retrying (backoff up to %d s)\n",
			    t->url, why, BACKOFF_MAX_MS / 1000);
		backoff = backoff == 0 ? BACKOFF_MIN_MS : 2 * backoff;
		if (backoff > BACKOFF_MAX_MS)
			backoff = BACKOFF_MAX_MS;
		if (nap(rw, backoff))
			return -1;
	}
}

/* The sender thread: posts the queued requests in order. */
static void *
send_loop(void *arg)
{
	target *t  = arg;
	rwrite *rw = t->rw;

	pthread_setname_np(pthread_self(), "vt-rwrite");
	for (;;) {
		rw_req *q;

		pthread_mutex_lock(&rw->mu);
		while (!rw->stop && t->req[t->sendi].state != REQ_QUEUED)
			pthread_cond_wait(&t->cv, &rw->mu);
		q = &t->req[t->sendi];
		pthread_mutex_unlock(&rw->mu);
		if (deliver(t, q) != 0)
			return NULL;
		pthread_mutex_lock(&rw->mu);
		q->state = REQ_DONE;
		pthread_cond_broadcast(&t->cv);
		pthread_mutex_unlock(&rw->mu);
		t->sendi = (t->sendi + 1) % RWRITE_QUEUE;
	}
}

/*
 * Queue what the pass read, in requests of up to RWRITE_REQ_MAX samples.
 * A part of a series is the next samples in the order they were stored
 * (what its acknowledgement moves the position past), sent in time
 * order: a receiver takes a series' samples oldest first. Returns 0, or
 * -1 when stopping.
 */
static int
send_pass(target *t)
{
	size_t nparts = 0, nsamples = 0;

	for (size_t i = t->first; i < t->last; i++) {
		rw_item *it   = &t->items[i];
		size_t   from = 0;

		while (from < it->n) {
			size_t m = it->n - from;

			if (nsamples == RWRITE_REQ_MAX) {
				if (enqueue(t, nparts, nsamples) != 0)
					return -1;
				save_positions(t, 0);
				nparts = nsamples = 0;
			}
			if (m > RWRITE_REQ_MAX - nsamples)
				m = RWRITE_REQ_MAX - nsamples;
			if (grow(&t->parts, &t->capparts, nparts + 1,
			        sizeof(*t->parts))
			    != 0)
				return nap(t->rw, 1000) ? -1 : 0;
			sort_part(t->smp + it->off + from, m);
			t->parts[nparts].item = i;
			t->parts[nparts].from = from;
			t->parts[nparts].n    = m;
			nparts++;
			nsamples += m;
			from += m;
		}
		if (it->n == 0 && it->complete) {
			/* Nothing new after all (see read_item). */
			pos_slot *p = &t->pos[it->sid];

			p->pos.count = it->listed;
			if (add_entry(t, NULL, it->sid, &p->pos) != 0)
				return nap(t->rw, 1000) ? -1 : 0;
		}
	}
	if (nparts > 0 && enqueue(t, nparts, nsamples) != 0)
		return -1;
	if (t->nloose > 0) {
		/* Acknowledged after the requests before them, or now. */
		if (wait_queue(t, 0) != 0)
			return -1;
		ack_entries(t, t->loose, t->nloose);
		t->nloose = 0;
	}
	return 0;
}

/* ---- the thread ------------------------------------------------------ */

/*
 * One pass: list what is new, read up to RWRITE_PASS_MAX samples, end
 * the read transaction, queue them for the sender. Returns 1 if it
 * found nothing more and the receiver acknowledged it all (caught up), 0
 * if there is more, -1 when stopping or on a store error (logged; tried
 * again next pass). *read_ms: how long the read transaction lasted.
 */
static int
pass(target *t, int64_t started, int64_t *read_ms)
{
	rwrite  *rw    = t->rw;
	uint64_t total = 0;
	size_t   room = RWRITE_PASS_MAX, i;
	int      rc, all, cut = 0, listed = 0;

	*read_ms = 0;
	reap(t);
	if ((rc = store_read_begin(rw->st, &t->txn)) != 0)
		goto store_fail;
	if ((rc = scan_runs(rw->st, t->txn, on_run, &total)) != 0)
		goto store_fail;
	t->total = total;
	if (t->caught_up && total == t->last_total) {
		store_read_end(t->txn);
		t->txn = NULL;
		save_positions(t, 0);
		__atomic_store_n(&t->caught_up_ms, started, __ATOMIC_RELAXED);
		return 1;
	}
	/* A listing decodes the store's unfolded journal whole: one serves
	 * the passes until each of its series was read. */
	if (t->next >= t->nitems) {
		listed    = 1;
		t->nitems = t->narena = t->next = 0;
		t->cur_run                      = NULL;
		t->pass_pending                 = 0;
		rc = scan_series_of(rw->st, t->txn, NULL, on_series, t);
		if (rc == 0)
			rc = finish_run(t);
		if (rc != 0) {
			t->nitems = 0;
			goto store_fail;
		}
	}
	t->nsmp  = 0;
	t->first = t->next;
	t->jend  = t->first;
	for (i = t->first; i < t->nitems; i++) {
		rw_item *it   = &t->items[i];
		uint64_t left = it->listed - t->pos[it->sid].pos.count;

		/* A series whole in a later pass rather than read twice,
		 * unless it alone is larger than a pass. */
		if (room == 0 || (i > t->first && left > room))
			break;
		if (i >= t->jend && (rc = load_journal(t, i, room)) != 0)
			goto store_fail;
		if ((rc = read_item(t, it, room)) != 0)
			goto store_fail;
		room -= it->n;
		if (!it->complete) {
			cut = 1;
			break;
		}
	}
	t->last = i + (size_t) cut;
	t->next = i;
	/* Caught up only by a listing of this transaction's: series read
	 * in earlier passes of a listing may have more samples since. */
	all = listed && t->next >= t->nitems;
	/* What it holds is of this transaction only. */
	if (t->jr != NULL)
		(void) scan_journal_load(rw->st, t->txn, t->jr, NULL, 0);
	store_read_end(t->txn);
	t->txn   = NULL;
	*read_ms = mono_ms() - started;
	t->total = total;
	set_pending(t);
	if (send_pass(t) != 0)
		return -1;
	/* Caught up means acknowledged: a receiver that is down shows as
	 * lag; while there is more, the next pass reads as the last
	 * requests of this one are in flight. */
	if (all && wait_queue(t, 0) != 0)
		return -1;
	set_pending(t);
	save_positions(t, 0);
	if (all) {
		t->caught_up  = 1;
		t->last_total = total;
		__atomic_store_n(&t->caught_up_ms, started, __ATOMIC_RELAXED);
		return 1;
	}
	t->caught_up = 0;
	return 0;
store_fail:
	if (t->txn != NULL)
		store_read_end(t->txn);
	t->txn       = NULL;
	t->caught_up = 0;
	if (rc == -1)
		fprintf(stderr,
		    "vitalsd: remote write %s: out of memory "
		    "reading the store; retrying\n",
		    t->url);
	else
		fprintf(stderr, "vitalsd: remote write %s: %s; retrying\n",
		    t->url, store_errmsg(rw->st));
	return nap(rw, 1000) ? -1 : 0;
}

static void
check_lag(target *t)
{
	int64_t  lag = (mono_ms() - t->caught_up_ms) / 1000;
	uint64_t pending;

	pthread_mutex_lock(&t->rw->mu);
	pending = t->st.pending;
	pthread_mutex_unlock(&t->rw->mu);

	if (!t->lagging && lag > t->rw->lag_alert_s) {
		fprintf(stderr,
		    "vitalsd: remote write %s is %" PRId64 " s behind "
		    "(%" PRIu64 " samples pending); ingest goes on, the store "
		    "keeps them\n",
		    t->url, lag, pending);
		t->lagging = 1;
	} else if (t->lagging && lag <= t->rw->lag_alert_s) {
		fprintf(
		    stderr, "vitalsd: remote write %s caught up\n", t->url);
		t->lagging = 0;
	}
}

/*
 * Wait ms between passes (or until vitalsd stops), saving the positions
 * when due on the way. Returns non-zero when stopping.
 */
static int
rest(target *t, int64_t ms)
{
	int64_t end = mono_ms() + ms;

	for (;;) {
		int64_t now = mono_ms(), step = end - now;
		int64_t due = t->last_save_ms + SAVE_EVERY_MS - now;

		if (step <= 0)
			return stopping(t->rw);
		if (due > 0 && due < step)
			step = due;
		if (nap(t->rw, step))
			return 1;
		save_positions(t, 0);
	}
}

#define YIELD_MS 100

/* Whether the collector committed for more than half of the time since
 * the last look (at least YIELD_MS ago) while the forwarder is less than
 * RWRITE_YIELD_LAG_S behind: then the pass waits (rwrite_ingest_busy). */
static int
yield_to_ingest(target *t)
{
	int64_t now  = mono_ms();
	int64_t busy = __atomic_load_n(&t->rw->busy_ns, __ATOMIC_RELAXED);
	int     hold;

	if (t->busy_at == 0 || now - t->busy_at < YIELD_MS) {
		if (t->busy_at == 0) {
			t->busy_at   = now;
			t->busy_seen = busy;
		}
		return 0;
	}
	hold = (busy - t->busy_seen) / 1000000 * 2 > now - t->busy_at
	    && now - t->caught_up_ms < RWRITE_YIELD_LAG_S * 1000;
	t->busy_at   = now;
	t->busy_seen = busy;
	return hold;
}

void
rwrite_ingest_busy(rwrite *rw, int64_t ns)
{
	if (rw != NULL && ns > 0)
		__atomic_add_fetch(&rw->busy_ns, ns, __ATOMIC_RELAXED);
}

/* The forwarder thread: reads the store and encodes; its sender thread
 * posts. */
static void *
run(void *arg)
{
	target *t  = arg;
	rwrite *rw = t->rw;

	/* Named, so that its CPU can be told apart (bench/remote_write.sh). */
	pthread_setname_np(pthread_self(), "vt-rwrite");
	/*
	 * Forwarding is background work whose backlog is the store: on a
	 * machine short of cores, ingest (which acknowledges emitters)
	 * gets the CPU first and the forwarder catches up when it is
	 * idle. Linux applies a thread's nice value to that thread only
	 * (and to the threads it starts: the sender).
	 */
	{
		int nv = getpriority(PRIO_PROCESS, (id_t) gettid());

		nv = nv + RWRITE_NICE > 19 ? 19 : nv + RWRITE_NICE;
		(void) setpriority(PRIO_PROCESS, (id_t) gettid(), nv);
	}
	if (pthread_create(&t->sender, NULL, send_loop, t) != 0) {
		fprintf(stderr,
		    "vitalsd: remote write %s: cannot start its sender "
		    "thread; not forwarding\n",
		    t->url);
		return NULL;
	}
	t->sender_started = 1;
	while (!stopping(rw)) {
		int64_t started, read_ms;
		int     rc;

		if (yield_to_ingest(t)) {
			if (rest(t, YIELD_MS))
				break;
			continue;
		}
		started = mono_ms();
		rc      = pass(t, started, &read_ms);

		if (rc < 0)
			break;
		check_lag(t);
		if (rc == 1) {
			int64_t ms = read_ms * READ_SPACING;

			if (ms > SPACING_MAX_MS)
				ms = SPACING_MAX_MS;
			if (ms < rw->interval_ms)
				ms = rw->interval_ms;
			if (rest(t, ms))
				break;
		}
	}
	pthread_mutex_lock(&rw->mu);
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&rw->mu);
	pthread_join(t->sender, NULL);
	t->sender_started = 0;
	reap(t);
	save_positions(t, 1);
	return NULL;
}

/* ---- open, close, stats ---------------------------------------------- */

/* The URL, checked (http or https, a host) and normalised by libcurl:
 * malloc'd, or NULL with the reason in err. */
static char *
parse_url(const char *url, char *err, size_t errlen)
{
	CURLU *u    = http_url_parse("--remote-write", url,
	       "http://HOST:PORT/PATH, e.g. http://127.0.0.1:8428/api/v1/write",
	       err, errlen);
	char  *full = NULL, *r = NULL;

	if (u == NULL)
		return NULL;
	if (curl_url_get(u, CURLUPART_URL, &full, 0) != CURLUE_OK)
		snprintf(err, errlen, "--remote-write '%s': not a URL", url);
	else if ((r = strdup(full)) == NULL)
		snprintf(err, errlen, "out of memory");
	curl_free(full);
	curl_url_cleanup(u);
	return r;
}

int
rwrite_check_url(const char *url, char *err, size_t errlen)
{
	char *u = parse_url(url, err, errlen);

	free(u);
	return u == NULL ? -1 : 0;
}

/* FNV-1a: the URL's positions are kept under a short name. */
static uint64_t
fnv1a(const char *s)
{
	uint64_t h = 14695981039346656037ull;

	for (; *s; s++) {
		h ^= (uint8_t) *s;
		h *= 1099511628211ull;
	}
	return h;
}

int
rwrite_open(
    const rwrite_opts *o, store *st, rwrite **out, char *err, size_t errlen)
{
	rwrite *rw;

	*out = NULL;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		snprintf(err, errlen, "libcurl did not initialise");
		return -1;
	}
	if ((rw = calloc(1, sizeof(*rw))) == NULL
	    || (rw->t = calloc(o->nurls, sizeof(*rw->t))) == NULL) {
		free(rw);
		snprintf(err, errlen, "out of memory");
		curl_global_cleanup();
		return -1;
	}
	rw->st          = st;
	rw->timeout_ms  = o->timeout_ms;
	rw->interval_ms = o->interval_ms;
	rw->lag_alert_s = o->lag_alert_s;
	memcpy(rw->ln_name, "__name__", 9);
	memcpy(rw->ln_host, "host", 5);
	memcpy(rw->ln_metric, "metric", 7);
	memcpy(rw->ln_rank, "rank", 5);
	memcpy(rw->ln_run, "run", 4);
	memcpy(rw->v_value, "vitals_value", 13);
	memcpy(rw->v_step, "vitals_step", 12);
	pthread_mutex_init(&rw->mu, NULL);
	pthread_cond_init(&rw->wake, NULL);
	for (size_t i = 0; i < o->nurls; i++) {
		target *t = &rw->t[rw->nt];

		if ((t->url = parse_url(o->urls[i], err, errlen)) == NULL)
			goto fail;
		rw->nt++;
		pthread_cond_init(&t->cv, NULL);
		t->rw     = rw;
		t->st.url = t->url;
		snprintf(
		    t->name, sizeof(t->name), "rw:%016" PRIx64, fnv1a(t->url));
		if ((t->curl = curl_easy_init()) == NULL) {
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
		t->caught_up_ms = mono_ms();
		t->last_save_ms = t->caught_up_ms;
	}
	for (size_t i = 0; i < rw->nt; i++) {
		target *t = &rw->t[i];

		if (pthread_create(&t->thread, NULL, run, t) != 0) {
			snprintf(err, errlen,
			    "cannot start the remote-write thread");
			goto fail;
		}
		t->started = 1;
		fprintf(stderr,
		    "vitalsd: remote write to %s (every stored sample, "
		    "resuming where it was)\n",
		    t->url);
	}
	*out = rw;
	return 0;
fail:
	rwrite_close(rw);
	return -1;
}

void
rwrite_close(rwrite *rw)
{
	if (rw == NULL)
		return;
	pthread_mutex_lock(&rw->mu);
	rw->stop = 1;
	pthread_cond_broadcast(&rw->wake);
	for (size_t i = 0; i < rw->nt; i++)
		pthread_cond_broadcast(&rw->t[i].cv);
	pthread_mutex_unlock(&rw->mu);
	for (size_t i = 0; i < rw->nt; i++) {
		target *t = &rw->t[i];

		if (t->started)
			pthread_join(t->thread, NULL);
		if (t->curl != NULL)
			curl_easy_cleanup(t->curl);
		free(t->url);
		free(t->pos);
		free(t->items);
		free(t->smp);
		free(t->arena);
		free(t->ranks);
		free(t->jsids);
		scan_journal_free(t->jr);
		free(t->parts);
		free(t->ts);
		free(t->tsp);
		free(t->lab);
		free(t->labp);
		free(t->ps);
		free(t->psp);
		for (size_t j = 0; j < RWRITE_QUEUE; j++) {
			free(t->req[j].pb);
			free(t->req[j].sb);
			free(t->req[j].ent);
		}
		free(t->loose);
		pthread_cond_destroy(&t->cv);
	}
	free(rw->t);
	pthread_mutex_destroy(&rw->mu);
	pthread_cond_destroy(&rw->wake);
	free(rw);
	curl_global_cleanup();
}

size_t
rwrite_count(const rwrite *rw)
{
	return rw == NULL ? 0 : rw->nt;
}

void
rwrite_get_stats(rwrite *rw, size_t i, rwrite_stats *out)
{
	target *t = &rw->t[i];

	pthread_mutex_lock(&rw->mu);
	*out = t->st;
	pthread_mutex_unlock(&rw->mu);
	out->lag_seconds
	    = (double) (mono_ms()
	          - __atomic_load_n(&t->caught_up_ms, __ATOMIC_RELAXED))
	    / 1000.0;
}
