/*
 * phase: detectors that read the phase markers of data-parallel ranks
 * (docs/distributed.md, docs/protocol.md "Phase markers").
 *
 *	hang             a rank that stays out of the collective while the
 *	                 others wait in it: fed the markers vitals/phase/NAME
 *	                 (1: the rank entered NAME, 0: it left it);
 *	phase_straggler  a rank whose compute before the collective is above
 *	                 the ranks' median, or whose wait in the collective
 *	                 is well below it: fed phase_time/NAME (ms per step).
 *
 * Under data parallelism the collective equalizes step time, so a slow
 * rank shows only in what it does before the collective (more) and in
 * how long it waits inside it (least). Phases named "collective",
 * "collective/..." or "barrier" are waits; "checkpoint" and "eval" (and
 * "checkpoint/...", "eval/...") are excused: one rank saving while the
 * others wait is usual, and the stall rule covers a save that never ends.
 * Every other phase ("data", "forward", "backward", "optimizer", ...) is
 * compute.
 *
 * One group per (rule, run), one slot per rank. Alerts are stamped with
 * the deadline that was missed (hang) or the sample that decided
 * (straggler), so live and replayed alerts agree.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "detect/baseline.h"
#include "detect/detector.h"
#include "detect/fsm.h"

#define PHASE_NAME_MAX 47
#define MARKER_PREFIX "vitals/phase/"
#define MARKER_PREFIX_LEN 13

enum { PH_WAIT, PH_EXCUSED, PH_COMPUTE };

/* What a phase name stands for (see the header comment). */
static int
phase_class(const char *p, size_t n)
{
	static const char *const waits[]   = { "collective", "barrier" };
	static const char *const excused[] = { "checkpoint", "eval" };

	for (size_t i = 0; i < 2; i++) {
		size_t l = strlen(waits[i]);

		if (n >= l && memcmp(p, waits[i], l) == 0
		    && (n == l || p[l] == '/'))
			return PH_WAIT;
		l = strlen(excused[i]);
		if (n >= l && memcmp(p, excused[i], l) == 0
		    && (n == l || p[l] == '/'))
			return PH_EXCUSED;
	}
	return PH_COMPUTE;
}

int
detect_phase_waits(const char *name, size_t n)
{
	return phase_class(name, n) == PH_WAIT;
}

/* The part of a metric name after its first '/', or NULL. */
static const char *
after_slash(const char *m, size_t len, size_t *rest)
{
	const char *s = memchr(m, '/', len);

	if (s == NULL)
		return NULL;
	*rest = len - (size_t) (s + 1 - m);
	return s + 1;
}

/* "0-2,5" for the slots whose flag is set, cut to fit out. */
static void
rank_list(
    const detect_group *g, const unsigned char *flag, char *out, size_t size)
{
	int32_t *v = malloc(g->nslots * sizeof(*v));
	size_t   n = 0, o = 0;

	out[0] = '\0';
	if (v == NULL)
		return;
	for (uint32_t i = 0; i < g->nslots; i++)
		if (flag[i])
			v[n++] = g->slot_rank[i]->rank;
	/* Few ranks: insertion sort. */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
			int32_t t = v[j];

			v[j]     = v[j - 1];
			v[j - 1] = t;
		}
	for (size_t i = 0; i < n && o + 16 < size;) {
		size_t j = i;

		while (j + 1 < n && v[j + 1] == v[j] + 1)
			j++;
		o += (size_t) snprintf(
		    out + o, size - o, "%s%d", i ? "," : "", (int) v[i]);
		if (j > i)
			o += (size_t) snprintf(out + o, size - o, "%s%d",
			    j == i + 1 ? "," : "-", (int) v[j]);
		i = j + 1;
		if (i < n && o + 16 >= size)
			snprintf(out + o, size - o, ",...");
	}
	free(v);
}

/* A wall time as HH:MM:SS UTC. */
typedef struct clock_txt {
	char s[16];
} clock_txt;

static clock_txt
clock_of(int64_t ns)
{
	clock_txt t;
	time_t    s = (time_t) (ns / 1000000000);
	struct tm tm;

	if (gmtime_r(&s, &tm) == NULL)
		snprintf(t.s, sizeof(t.s), "?");
	else
		snprintf(t.s, sizeof(t.s), "%02d:%02d:%02d", tm.tm_hour,
		    tm.tm_min, tm.tm_sec);
	return t;
}

/* ---- hang ----------------------------------------------------------------
 */

enum { HG_K, HG_FLOOR, HG_CEILING, HG_EARLY, HG_ESCALATE };
static const detect_param hg_params[] = {
	{ "k", DP_NUM, 3, 0, 1, 1e6, NULL },
	{ "floor", DP_SECONDS, 3, DETECT_SECONDS, 0, 1e9, NULL },
	{ "ceiling", DP_SECONDS, 900, DETECT_SECONDS, 0.001, 1e9, NULL },
	{ "early", DP_SEVERITY, DETECT_INFO, 0, -1, 2, NULL },
	{ "escalate", DP_NUM, 2, 0, 1, 1e6, NULL },
};

#define HG_NIV 16
#define HG_MINLEARN 3

/* The threshold, refreshed at each tick from the slots. */
typedef struct hg_group {
	double thr; /* seconds; 0 until the first tick */
} hg_group;

typedef struct hg_slot {
	char       phase[PHASE_NAME_MAX + 1]; /* "" : none */
	int        cls;                       /* phase_class, or -1: none */
	int64_t    since;                     /* entered it */
	uint64_t   step, adv_step;
	int64_t    adv_time;
	uint32_t   nadv;
	double     usual;     /* median step interval (s), NaN until learned */
	double     longest;   /* longest interval learned (s) */
	uint8_t    has, hung; /* hung: alert level 0..2 */
	detect_win w;
	double     buf[2 * HG_NIV];
} hg_slot;

static size_t
hg_state_size(const detect_rule *r)
{
	(void) r;
	return sizeof(hg_group);
}

static size_t
hg_slot_size(const detect_rule *r)
{
	(void) r;
	return sizeof(hg_slot);
}

static void
hg_slot_init(void *slot, const detect_rule *r)
{
	hg_slot *sl = slot;

	(void) r;
	detect_win_init(&sl->w, HG_NIV);
	sl->cls   = -1;
	sl->usual = NAN;
}

/* The hang threshold (s): k times the slowest rank's usual step
 * interval, or 1.25 times the longest interval seen (a busy host's
 * hiccups, periodic slow steps), within [floor, ceiling]; the ceiling
 * until learned. */
static double
hg_threshold(const detect_rule *r, const detect_group *g)
{
	double u = NAN, l = 0, t;

	for (uint32_t i = 0; i < g->nslots; i++) {
		const hg_slot *sl = detect_slot(g, i);

		if (sl->has && !isnan(sl->usual) && !(sl->usual <= u))
			u = sl->usual;
		if (sl->has && sl->longest > l)
			l = sl->longest;
	}
	if (isnan(u))
		return detect_p(r, HG_CEILING);
	t = detect_p(r, HG_K) * u;
	if (1.25 * l > t)
		t = 1.25 * l;
	if (t < detect_p(r, HG_FLOOR))
		t = detect_p(r, HG_FLOOR);
	if (t > detect_p(r, HG_CEILING))
		t = detect_p(r, HG_CEILING);
	return t;
}

/* Alert levels as in stall: 1 early (info by default) at the
 * threshold, 2 the rule's severity at `escalate` times it. */
static int
hg_two_stage(const detect_rule *r)
{
	return detect_p(r, HG_EARLY) >= 0 && detect_p(r, HG_ESCALATE) > 1;
}

static int
hg_sev(const detect_rule *r, int lv)
{
	return lv == 1 ? (int) detect_p(r, HG_EARLY) : r->severity;
}

static void
hg_resolve(detect_ctx *c, detect_group *g, uint32_t i, uint64_t step,
    int64_t t, const char *why)
{
	hg_slot      *sl = detect_slot(g, i);
	detect_origin o;
	double        dt = t > sl->since ? (double) (t - sl->since) / 1e9 : 0;

	detect_origin_rank(&o, g->slot_rank[i]);
	detect_emit(c, &o, "stall", hg_sev(c->r, sl->hung), DETECT_RESOLVED, 0,
	    step, t, dt, NAN, "rank %d %s after %s s in %s", (int) o.rank, why,
	    detect_fmt(dt).s, sl->phase[0] ? sl->phase : "no phase");
	sl->hung = 0;
}

static void
hg_feed(detect_ctx *c, detect_inst *in, const detect_sample *s)
{
	detect_group *g  = in->g;
	hg_slot      *sl = detect_slot(g, in->slot);
	const char   *name;
	size_t        n;

	if (s->mlen <= MARKER_PREFIX_LEN
	    || memcmp(s->metric, MARKER_PREFIX, MARKER_PREFIX_LEN) != 0)
		return;
	name = s->metric + MARKER_PREFIX_LEN;
	n    = s->mlen - MARKER_PREFIX_LEN;
	if (n > PHASE_NAME_MAX)
		n = PHASE_NAME_MAX;
	if (sl->hung)
		hg_resolve(c, g, in->slot, s->step, s->time_ns,
		    "moved on (a phase marker came)");
	if (s->value != 0) {
		memcpy(sl->phase, name, n);
		sl->phase[n] = '\0';
		sl->cls      = phase_class(name, n);
	} else if (strlen(sl->phase) == n && memcmp(sl->phase, name, n) == 0) {
		sl->phase[0] = '\0';
		sl->cls      = -1;
	}
	sl->since = s->time_ns;
	sl->step  = s->step;
	if (!sl->has) {
		sl->has      = 1;
		sl->adv_step = s->step;
		sl->adv_time = s->time_ns;
	} else if (s->step > sl->adv_step) {
		/* Learn the step interval; the first two advances (warm-up)
		 * and intervals of a restart are skipped. */
		double iv = (double) (s->time_ns - sl->adv_time) / 1e9;

		const hg_group *gs = g->state;

		if (++sl->nadv > 2 && iv > 0) {
			detect_win_push(&sl->w, sl->buf, iv);
			if (sl->w.n >= HG_MINLEARN)
				sl->usual = detect_win_median(&sl->w, sl->buf);
			/* A hang must not teach that hangs are usual. */
			if (iv > sl->longest
			    && (gs->thr == 0 || iv <= gs->thr))
				sl->longest = iv;
		}
		sl->adv_step = s->step;
		sl->adv_time = s->time_ns;
	}
}

static void
hg_rollback(detect_ctx *c, detect_inst *in, const detect_sample *s,
    uint64_t prev_step, int64_t prev_time)
{
	hg_slot *sl = detect_slot(in->g, in->slot);

	(void) c;
	(void) prev_step;
	(void) prev_time;
	sl->adv_step = s->step;
	sl->adv_time = s->time_ns;
	sl->nadv     = 0;
}

static void
hg_tick(detect_ctx *c, detect_group *g, int64_t now)
{
	const detect_rule *r = c->r;
	unsigned char     *waiting;
	int64_t            wait_since = INT64_MAX;
	uint32_t           nwait = 0, nother = 0;
	double             thr;
	char               ranks[96];

	for (uint32_t i = 0; i < g->nslots; i++) {
		const hg_slot *sl = detect_slot(g, i);

		if (!sl->has)
			continue;
		if (sl->cls == PH_WAIT) {
			nwait++;
			if (sl->since < wait_since)
				wait_since = sl->since;
		} else {
			nother++;
		}
	}
	/* A rank that hung resolves when the others leave the collective
	 * (they no longer wait for it). */
	if (nwait == 0) {
		for (uint32_t i = 0; i < g->nslots; i++) {
			const hg_slot *sl = detect_slot(g, i);

			if (sl->hung)
				hg_resolve(c, g, i, sl->step, now,
				    "is no longer waited for");
		}
		return;
	}
	thr                          = hg_threshold(r, g);
	((hg_group *) g->state)->thr = thr;
	if (nother == 0 || now - wait_since < (int64_t) (thr * 1e9))
		return;
	waiting = calloc(g->nslots, 1);
	if (waiting == NULL)
		return;
	for (uint32_t i = 0; i < g->nslots; i++) {
		const hg_slot *sl = detect_slot(g, i);

		waiting[i] = sl->has && sl->cls == PH_WAIT;
	}
	rank_list(g, waiting, ranks, sizeof(ranks));
	for (uint32_t i = 0; i < g->nslots; i++) {
		hg_slot      *sl = detect_slot(g, i);
		detect_origin o;
		int64_t       from, at;
		double        lim;
		int           lv;

		if (!sl->has || sl->cls == PH_WAIT || sl->cls == PH_EXCUSED)
			continue;
		from = sl->since > wait_since ? sl->since : wait_since;
		lim  = hg_two_stage(r) ? detect_p(r, HG_ESCALATE) * thr : thr;
		if (now - from >= (int64_t) (lim * 1e9))
			lv = 2;
		else if (hg_two_stage(r)
		    && now - from >= (int64_t) (thr * 1e9))
			lv = 1;
		else
			lv = 0;
		if (lv <= sl->hung)
			continue;
		sl->hung = (uint8_t) lv;
		at       = from + (int64_t) ((lv == 2 ? lim : thr) * 1e9);
		detect_origin_rank(&o, g->slot_rank[i]);
		detect_emit(c, &o, "stall", hg_sev(r, lv), DETECT_FIRING, 0,
		    sl->step, at, (double) (at - sl->since) / 1e9, thr,
		    "rank%s %s waiting in collective since %s; rank %d "
		    "(host %s) in %s for %s s, at step %llu: it holds the "
		    "others up",
		    strchr(ranks, ',') || strchr(ranks, '-') ? "s" : "", ranks,
		    clock_of(wait_since).s, (int) o.rank,
		    o.hostlen ? o.host : "unknown",
		    sl->phase[0] ? sl->phase : "no phase",
		    detect_fmt((double) (at - sl->since) / 1e9).s,
		    (unsigned long long) sl->step);
	}
	free(waiting);
}

const detect_kind detect_kind_hang = {
	.name       = "hang",
	.params     = hg_params,
	.nparams    = sizeof(hg_params) / sizeof(hg_params[0]),
	.severity   = DETECT_CRITICAL,
	.scope      = DETECT_SCOPE_RUN,
	.state_size = hg_state_size,
	.slot_size  = hg_slot_size,
	.slot_init  = hg_slot_init,
	.feed       = hg_feed,
	.rollback   = hg_rollback,
	.tick       = hg_tick,
};

/* ---- phase_straggler -----------------------------------------------------
 */

enum { PS_BY, PS_WINDOW, PS_MIN_RANKS, PS_FOR, PS_K, PS_LONG };
static const detect_param ps_params[] = {
	{ "by", DP_NUM, 0.1, 0, 0.001, 10, NULL },
	{ "window", DP_COUNT, 16, 0, 4, 4096, NULL },
	{ "min_ranks", DP_COUNT, 2, 0, 2, 1e6, NULL },
	{ "for", DP_SPAN, 32, 0, 1, 1e9, NULL },
	{ "k", DP_NUM, 3, 0, 0, 100, NULL },
	{ "long_window", DP_COUNT, 64, 0, 4, 4096, NULL },
};

/* How fast the spread of the ranks follows the host: a share of the
 * distance per round of judgments (about the last 64 rounds count). */
#define PS_SPREAD_RATE (1.0 / 64)
/* The smallest spread a figure is given weight by (1% of compute):
 * idle hosts and synthetic runs are that quiet and no quieter. */
#define PS_SPREAD_MIN 0.01

/* The four windows of a rank: compute and wait per step, over `window`
 * steps and over `long_window` steps. */
enum { PS_COMP, PS_WAIT, PS_LCOMP, PS_LWAIT, PS_NWIN };

typedef struct ps_group {
	double ref[PS_NWIN]; /* medians of the ranks' medians; NaN */
	/* How far a rank's median usually is from the ranks' (the median
	 * over ranks of |over| and |under|, followed round by round): the
	 * noise of each figure on this host. */
	double   sc, sw;
	uint32_t nspread; /* rounds followed, up to `window` */
	uint32_t nref, nlong, round;
} ps_group;

/* Per rank: the step being added up, then the windows (in buf, one
 * after the other). */
typedef struct ps_slot {
	detect_fsm fsm;
	uint64_t   step;
	int        has;
	double     comp_acc, wait_acc;
	double     med[PS_NWIN]; /* medians of full windows, else NaN */
	detect_win w[PS_NWIN];
	double     buf[];
} ps_slot;

static uint32_t
ps_cap(const detect_rule *r, int which)
{
	return (uint32_t) detect_p(r, which < PS_LCOMP ? PS_WINDOW : PS_LONG);
}

static size_t
ps_state_size(const detect_rule *r)
{
	(void) r;
	return sizeof(ps_group);
}

static size_t
ps_slot_size(const detect_rule *r)
{
	return sizeof(ps_slot) + 2 * detect_win_bytes(ps_cap(r, PS_COMP))
	    + 2 * detect_win_bytes(ps_cap(r, PS_LCOMP));
}

static void
ps_init(void *state, const detect_rule *r)
{
	ps_group *gs = state;

	(void) r;
	for (int i = 0; i < PS_NWIN; i++)
		gs->ref[i] = NAN;
}

static void
ps_slot_init(void *slot, const detect_rule *r)
{
	ps_slot *sl = slot;

	for (int i = 0; i < PS_NWIN; i++) {
		detect_win_init(&sl->w[i], ps_cap(r, i));
		sl->med[i] = NAN;
	}
}

static double *
ps_buf(ps_slot *sl, int which, const detect_rule *r)
{
	double *b = sl->buf;

	for (int i = 0; i < which; i++)
		b += detect_win_bytes(ps_cap(r, i)) / sizeof(double);
	return b;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;

	return x < y ? -1 : x > y;
}

static double
median_of(double *v, uint32_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The medians over ranks of one figure (which) of the ranks with a full
 * window; their count. v holds nslots doubles. */
static uint32_t
ps_median(detect_group *g, int which, double *v, double *out)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < g->nslots; i++) {
		const ps_slot *sl = detect_slot(g, i);

		if (!isnan(sl->med[which]))
			v[n++] = sl->med[which];
	}
	if (n > 0)
		*out = median_of(v, n);
	return n;
}

/* How far the ranks' short medians are from the reference, as a share
 * of the reference compute: the median over ranks. */
static double
ps_spread(detect_group *g, ps_group *gs, int which, double *v)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < g->nslots; i++) {
		const ps_slot *sl = detect_slot(g, i);

		if (!isnan(sl->med[which]))
			v[n++] = fabs(sl->med[which] - gs->ref[which])
			    / gs->ref[PS_COMP];
	}
	return median_of(v, n);
}

static void
ps_reference(detect_group *g, ps_group *gs, uint32_t window)
{
	double *v = malloc((size_t) g->nslots * sizeof(*v));
	double  sc, sw, rate;

	gs->round = 0;
	if (v == NULL)
		return;
	gs->nref = ps_median(g, PS_COMP, v, &gs->ref[PS_COMP]);
	ps_median(g, PS_WAIT, v, &gs->ref[PS_WAIT]);
	gs->nlong = ps_median(g, PS_LCOMP, v, &gs->ref[PS_LCOMP]);
	ps_median(g, PS_LWAIT, v, &gs->ref[PS_LWAIT]);
	if (gs->nref > 0 && gs->ref[PS_COMP] > 0) {
		sc = ps_spread(g, gs, PS_COMP, v);
		sw = ps_spread(g, gs, PS_WAIT, v);
		/* The mean of the rounds so far, then a moving one. */
		if (gs->nspread < window)
			gs->nspread++;
		rate = fmax(PS_SPREAD_RATE, 1.0 / gs->nspread);
		if (gs->nspread == 1)
			gs->sc = gs->sw = 0;
		gs->sc += rate * (sc - gs->sc);
		gs->sw += rate * (sw - gs->sw);
	}
	free(v);
}

/* How far a rank is off (slower compute and a shorter wait, as a share
 * of the ranks' median compute), over the short (l = 0) or long (l = 2)
 * windows, each figure weighed by vc and vw. */
static double
ps_off(const ps_slot *sl, const ps_group *gs, int l, double vc, double vw,
    double *over)
{
	double c = gs->ref[PS_COMP + l], w = gs->ref[PS_WAIT + l], under;

	*over = (sl->med[PS_COMP + l] - c) / c;
	under = (w - sl->med[PS_WAIT + l]) / c;
	if (!(w > 0))
		return *over;
	return (*over / vc + under / vw) / (1 / vc + 1 / vw);
}

/* A step of this rank is complete: judge it against the others. */
static void
ps_step_done(
    detect_ctx *c, detect_group *g, ps_slot *sl, const detect_sample *s)
{
	const detect_rule *r  = c->r;
	ps_group          *gs = g->state;
	double             by = detect_p(r, PS_BY), over, lover, off, vc, vw;
	double             thr, lim;
	int                cond, tr, firing;
	detect_origin      o;

	for (int i = 0; i < PS_NWIN; i++) {
		detect_win_push(&sl->w[i], ps_buf(sl, i, r),
		    i % 2 ? sl->wait_acc : sl->comp_acc);
		if (sl->w[i].n == sl->w[i].cap)
			sl->med[i]
			    = detect_win_median(&sl->w[i], ps_buf(sl, i, r));
	}
	sl->comp_acc = sl->wait_acc = 0;
	if (isnan(sl->med[PS_COMP]))
		return;
	if (++gs->round >= g->nslots || isnan(gs->ref[PS_COMP]))
		ps_reference(g, gs, ps_cap(r, PS_COMP));
	/* Judged once the spread has been followed for a window of
	 * rounds: the first steps of a run are the noisiest. */
	if (isnan(gs->ref[PS_COMP]) || gs->ref[PS_COMP] <= 0
	    || gs->nref < detect_p(r, PS_MIN_RANKS)
	    || gs->nspread < ps_cap(r, PS_COMP))
		return;
	/* Under data parallelism a slow rank computes longer and waits
	 * less by the same amount (the others wait for it). Each figure is
	 * weighed by how quiet it is on this host (inverse variance of the
	 * ranks' spread): on a busy host the wait in the collective swings
	 * far more than compute, and a short wait alone names no one. Over
	 * the short windows the threshold is twice `by`, or `k` times the
	 * spread of the weighed figure where the host is noisier than
	 * that: a busy host slows any rank by 20 to 30% for tens of steps.
	 * Over the long windows `by` alone decides: a rank slower for most
	 * of them is no passing noise. Where no rank reports a wait (no
	 * collective marked), compute alone decides. */
	vc = fmax(gs->sc, PS_SPREAD_MIN);
	vw = fmax(gs->sw, PS_SPREAD_MIN);
	vc *= vc;
	vw *= vw;
	thr    = gs->ref[PS_WAIT] > 0 ? 1 / sqrt(1 / vc + 1 / vw) : sqrt(vc);
	thr    = fmax(2 * by, detect_p(r, PS_K) * thr);
	firing = sl->fsm.state == DETECT_FSM_FIRING;
	off    = ps_off(sl, gs, 0, vc, vw, &over);
	cond   = off >= (firing ? thr / 2 : thr);
	if (!cond && !isnan(sl->med[PS_LCOMP])
	    && gs->nlong >= detect_p(r, PS_MIN_RANKS)
	    && gs->ref[PS_LCOMP] > 0) {
		lim  = firing ? by / 2 : by;
		cond = ps_off(sl, gs, 2, vc, vw, &lover) >= lim;
	}
	tr = detect_fsm_update(&sl->fsm, cond, &r->p[PS_FOR], &r->clear,
	    &r->cooldown, sl->step, s->time_ns);
	if (tr == DETECT_FSM_NONE)
		return;
	detect_origin_rank(&o, c->s->rk);
	o.metric = "phase_time";
	o.mlen   = 10;
	if (tr == DETECT_FSM_FIRE)
		detect_emit(c, &o, "straggler", r->severity, DETECT_FIRING, 0,
		    sl->step, s->time_ns, sl->med[PS_COMP], gs->ref[PS_COMP],
		    "rank %d (host %s) is a straggler: compute before the "
		    "collective %s ms (median of %u ranks %s ms, %+.0f%%), "
		    "wait in the collective %s ms (median %s ms), since "
		    "step %llu",
		    (int) o.rank, o.hostlen ? o.host : "unknown",
		    detect_fmt(sl->med[PS_COMP]).s, gs->nref,
		    detect_fmt(gs->ref[PS_COMP]).s, 100 * over,
		    detect_fmt(sl->med[PS_WAIT]).s,
		    detect_fmt(gs->ref[PS_WAIT]).s,
		    (unsigned long long) sl->fsm.step0);
	else
		detect_emit(c, &o, "straggler", r->severity, DETECT_RESOLVED,
		    0, sl->step, s->time_ns, sl->med[PS_COMP],
		    gs->ref[PS_COMP],
		    "rank %d (host %s) is back with the others: compute %s "
		    "ms, wait %s ms (medians of ranks %s, %s ms)",
		    (int) o.rank, o.hostlen ? o.host : "unknown",
		    detect_fmt(sl->med[PS_COMP]).s,
		    detect_fmt(sl->med[PS_WAIT]).s,
		    detect_fmt(gs->ref[PS_COMP]).s,
		    detect_fmt(gs->ref[PS_WAIT]).s);
}

static void
ps_feed(detect_ctx *c, detect_inst *in, const detect_sample *s)
{
	detect_group *g  = in->g;
	ps_slot      *sl = detect_slot(g, in->slot);
	const char   *name;
	size_t        n;
	int           cls;

	name = after_slash(s->metric, s->mlen, &n);
	if (name == NULL || !isfinite(s->value) || s->value < 0)
		return;
	if (sl->has && s->step != sl->step) {
		if (s->step > sl->step)
			ps_step_done(c, g, sl, s);
		else
			sl->comp_acc = sl->wait_acc = 0;
	}
	sl->has  = 1;
	sl->step = s->step;
	cls      = phase_class(name, n);
	if (cls == PH_WAIT)
		sl->wait_acc += s->value;
	else if (cls == PH_COMPUTE)
		sl->comp_acc += s->value;
}

static void
ps_rollback(detect_ctx *c, detect_inst *in, const detect_sample *s,
    uint64_t prev_step, int64_t prev_time)
{
	ps_slot *sl = detect_slot(in->g, in->slot);

	(void) c;
	(void) s;
	(void) prev_step;
	(void) prev_time;
	/* A restart: steps of the new attempt start a new window; an open
	 * straggler alert resolves when the rank is judged again. */
	for (int i = 0; i < PS_NWIN; i++) {
		detect_win_clear(&sl->w[i]);
		sl->med[i] = NAN;
	}
	sl->comp_acc = sl->wait_acc = 0;
	sl->has                     = 0;
}

const detect_kind detect_kind_phase_straggler = {
	.name       = "phase_straggler",
	.params     = ps_params,
	.nparams    = sizeof(ps_params) / sizeof(ps_params[0]),
	.severity   = DETECT_WARNING,
	.scope      = DETECT_SCOPE_RUN,
	.state_size = ps_state_size,
	.slot_size  = ps_slot_size,
	.init       = ps_init,
	.slot_init  = ps_slot_init,
	.feed       = ps_feed,
	.rollback   = ps_rollback,
};
