/*
 * level: drop and rise, an abrupt and sustained shift of a series' level.
 *
 * Three consecutive windows of `window` samples each, oldest first A, B
 * and C, give three medians (single slow steps, and slow steps that
 * recur every N steps while they are fewer than half a window, do not
 * move a median). A shift is abrupt when C is off B by the threshold
 * while B is still about where A was (within a third of it): the level
 * changed within a window. A gradual drift that follows the run's
 * schedule moves A to B as much as B to C and does not count, however
 * far it goes. When the pattern holds, the level of B is latched as the
 * reference; the alert fires when C stays `by` away from it for `for`,
 * and resolves when C is back within half of that.
 *
 * The threshold follows the series' own noise: it is the larger of `by`
 * and `noise` times the typical change between consecutive windows (an
 * average of |C - B| / B while nothing is pending, each step clipped at
 * 4 times the average; not while the windows still hold an episode, nor
 * from an abrupt shift back). On a busy host whose step time swings by
 * tens of percent the threshold rises with it.
 *
 * The quick test does the same at a short lag: the median of the last
 * `short` samples S against the `short` before them R, while R is about
 * where B was, with its own noise scale. A clean step is named ~20
 * samples after it instead of ~48; on a series whose level wanders (a
 * busy host) a step stands out most at that lag.
 *
 * The jump test (`jump`, on by default) does it at the shortest lag: a
 * sample off the one before it by the threshold of one-step changes
 * (`noise` times their average, learned as the others are). On a busy
 * host whose level wanders as a slow autoregression (the level of a
 * step is nearly the level of the step before, plus a small new
 * change), the change from one step to the next is that small new
 * change: the one place where a step of a few percent is as large as
 * it is. As a single sample decides, the episode is then judged on the
 * median of the samples since the jump (a slow step that does not last
 * falls out at once), and, firing, on C too.
 *
 * A firing episode resolves when the level is back within half the
 * threshold of the reference, or when it comes back abruptly: C off B
 * the other way by the threshold and by half the deepest shift seen. A
 * planned drift during a long episode moves the level the reference
 * was latched at, so that the level's return would otherwise never be
 * seen, and a later shift would find the episode still firing.
 *
 * A rule with `defer` (step time) asks its windows' test for a settled
 * level too: the last `short` samples not still further off than C
 * (see settled): a ramp of the work per step keeps going where a shift
 * stops.
 *
 * `confirm` (a rule with `defer`, step time): when the finding fires,
 * the series of a rule it defers to (throughput) is judged over the
 * same samples (the median of them against the window before, and for
 * a finding of the quick or the jump test also against the `short`
 * samples just before them, with the noise scale of that lag); if it
 * moved its own bad way by half as much in log terms and by `confirm`
 * times its noise scale, the alert goes out flagged DETECT_CONFIRMED,
 * and the incident pages it instead of noting it as more work per step.
 * On a busy host the window's lag holds more of the level's wander than
 * the short one, and a finding at a short lag is judged there too.
 *
 * `drift` (a fraction; 0: off) reports at info how far the level went
 * from a slow reference (time constant `follow` samples), once per
 * `drift` of travel: the planned drift, seen but not paged.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "detect/baseline.h"
#include "detect/detector.h"
#include "detect/fsm.h"

enum {
	LV_BY,
	LV_WINDOW,
	LV_WARMUP,
	LV_FOR,
	LV_FOLLOW,
	LV_ADAPT,
	LV_NOISE,
	LV_DRIFT,
	LV_SHORT,
	LV_JUMP,
	LV_CONFIRM
};
static const detect_param lv_params[] = {
	{ "by", DP_NUM, 0.05, 0, 0.001, 0.99, NULL },
	{ "window", DP_COUNT, 64, 0, 4, 4096, NULL },
	{ "warmup", DP_COUNT, 128, 0, 4, 1e9, NULL },
	{ "for", DP_SPAN, 16, 0, 1, 1e9, NULL },
	{ "follow", DP_COUNT, 500, 0, 1, 1e9, NULL },
	{ "adapt", DP_COUNT, 0, 0, 0, 1e9, NULL },
	{ "noise", DP_NUM, 5, 0, 0, 1e6, NULL },
	{ "drift", DP_NUM, 0, 0, 0, 100, NULL },
	{ "short", DP_COUNT, 8, 0, 0, 4096, NULL },
	{ "jump", DP_BOOL, 1, 0, 0, 1, NULL },
	{ "confirm", DP_NUM, 4, 0, 0, 1e6, NULL },
};

typedef struct level_st {
	detect_fsm fsm;
	detect_win a, b, c; /* oldest to newest */
	uint64_t   n;       /* samples since (re)start */
	uint64_t   firing_n;
	double     ref, thr; /* latched while pending or firing */
	double     deepest;  /* the largest shift of C from ref, firing */
	double     scale;    /* average |C - B| / |B| */
	uint64_t   nd;       /* changes averaged */
	uint64_t   settle;   /* st->n until which the windows hold samples
	                      * of an episode: not noise */
	double slow;         /* the slow reference of `drift` */
	int    has_slow;
	/* The quick test: the last `short` samples S against the `short`
	 * before them R, with its own noise scale. */
	detect_win r, s;
	double     scale_s;
	uint64_t   nd_s;
	int        quick; /* the episode was opened by: 0 the windows' test,
	                   * 1 the quick test, 2 the jump test */
	/* The jump test: the previous sample, the noise scale of one-step
	 * changes, and the sample count at the jump. */
	double     prev;
	int        has_prev;
	double     scale_j;
	uint64_t   nd_j, jump_n;
	double     cand_thr; /* the windows' threshold when C began to move
	                      * off B (0: C is not moving off) */
	uint64_t   cand_n;   /* st->n then */
	double     snap[2];  /* scale at the last two window boundaries */
	double     buf[]; /* 3 windows of 2 x window doubles, then R and S
	                   * of 2 x short doubles */
} level_st;

/* The quick test's window: `short`, at most half a window (0: off). */
static uint32_t
short_of(const detect_rule *r)
{
	uint32_t w = (uint32_t) detect_p(r, LV_WINDOW);
	uint32_t q = (uint32_t) detect_p(r, LV_SHORT);

	return q > w / 2 ? w / 2 : q;
}

static size_t
level_size(const detect_rule *r)
{
	return sizeof(level_st)
	    + 3 * detect_win_bytes((uint32_t) detect_p(r, LV_WINDOW))
	    + 2 * detect_win_bytes(short_of(r));
}

static void
level_init(void *state, const detect_rule *r)
{
	level_st *st = state;
	uint32_t  w  = (uint32_t) detect_p(r, LV_WINDOW);

	detect_win_init(&st->a, w);
	detect_win_init(&st->b, w);
	detect_win_init(&st->c, w);
	detect_win_init(&st->r, short_of(r));
	detect_win_init(&st->s, short_of(r));
}

/* Where window i's values start in buf: 0-2: A, B, C; 3 and 4: R and
 * S. */
static size_t
woff(const level_st *st, int i)
{
	if (i < 3)
		return (size_t) i * 2 * st->a.cap;
	return (size_t) 3 * 2 * st->a.cap + (size_t) (i - 3) * 2 * st->r.cap;
}

static double *
wbuf(level_st *st, int i)
{
	return st->buf + woff(st, i);
}

/* Push x into C; what C drops goes to B, what B drops to A. */
static void
push3(level_st *st, double x)
{
	double out_c = 0, out_b = 0;
	int    full_c = st->c.n == st->c.cap, full_b = st->b.n == st->b.cap;

	if (full_c)
		out_c = wbuf(st, 2)[st->c.head];
	if (full_b)
		out_b = wbuf(st, 1)[st->b.head];
	if (st->s.cap > 0) {
		int    full_s = st->s.n == st->s.cap;
		double out_s  = full_s ? wbuf(st, 4)[st->s.head] : 0;

		detect_win_push(&st->s, wbuf(st, 4), x);
		if (full_s)
			detect_win_push(&st->r, wbuf(st, 3), out_s);
	}
	detect_win_push(&st->c, wbuf(st, 2), x);
	if (!full_c)
		return;
	detect_win_push(&st->b, wbuf(st, 1), out_c);
	if (full_b)
		detect_win_push(&st->a, wbuf(st, 0), out_b);
}

/* Start loading what pushing into w touches: its ring's next slot and
 * its sorted values, up to the one an insertion moves last. */
static void
win_prefetch(const detect_win *w, const double *buf)
{
	uintptr_t a, end;

	if (w->cap == 0)
		return;
	__builtin_prefetch(buf + w->head);
	a   = (uintptr_t) (buf + w->cap) & ~(uintptr_t) 63;
	end = (uintptr_t) (buf + w->cap + (w->n < w->cap ? w->n + 1 : w->cap));
	for (; a < end; a += 64)
		__builtin_prefetch((const void *) a);
}

/* kind->prefetch: the windows the next push3 touches. */
static void
level_prefetch(const void *state)
{
	const level_st *st = state;

	win_prefetch(&st->s, st->buf + woff(st, 4));
	if (st->s.cap > 0 && st->s.n == st->s.cap)
		win_prefetch(&st->r, st->buf + woff(st, 3));
	win_prefetch(&st->c, st->buf + woff(st, 2));
	if (st->c.n < st->c.cap)
		return;
	win_prefetch(&st->b, st->buf + woff(st, 1));
	if (st->b.n == st->b.cap)
		win_prefetch(&st->a, st->buf + woff(st, 0));
}

/* The median of the last k samples (k at most C's count), as the jump
 * test judges an episode on the samples since the jump. */
static double
median_last(level_st *st, uint32_t k)
{
	const double *ring = wbuf(st, 2);
	double        v[64];
	uint32_t      i, j;

	if (k >= st->c.n || k > 64)
		return detect_win_median(&st->c, ring);
	for (i = 0; i < k; i++) { /* insertion sort: k is small */
		double x = ring[(st->c.head + st->c.cap - 1 - i) % st->c.cap];

		for (j = i; j > 0 && v[j - 1] > x; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
	return k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
}

/* The i-th latest sample (0: the last) that C and then B hold; i <
 * C's count + B's count. */
static double
latest(const level_st *st, uint32_t i)
{
	const double *c = st->buf + woff(st, 2), *b = st->buf + woff(st, 1);

	if (i < st->c.n)
		return c[(st->c.head + st->c.cap - 1 - i) % st->c.cap];
	i -= st->c.n;
	return b[(st->b.head + st->b.cap - 1 - i) % st->b.cap];
}

/* kind->change: the median of the last k samples (at most a window)
 * against that of the window before them (at least half a window of
 * them held), once the noise scale has been learned over a window; or,
 * nb at most `short`, against the nb just before them, with the quick
 * test's noise scale (the change at that lag: on a busy host whose
 * level wanders, a window's lag carries more of the wander). */
static double
level_change(const void *state, uint32_t k, uint32_t want, double *noise)
{
	const level_st *st = state;
	uint32_t        w = st->a.cap, held = st->c.n + st->b.n, nb, i;
	double          v[4096], after, before; /* window <= 4096 */
	int             near = want > 0 && want <= st->r.cap && st->nd_s >= w;

	*noise = near ? st->scale_s : st->scale;
	if (k == 0 || k > w || st->nd < w || held < k + (near ? want : w / 2))
		return NAN;
	nb = near ? want : held - k < w ? held - k : w;
	for (i = 0; i < k; i++)
		v[i] = latest(st, i);
	after = detect_median_small(v, k);
	for (i = 0; i < nb; i++)
		v[i] = latest(st, k + i);
	before = detect_median_small(v, nb);
	return before != 0 ? (after - before) / fabs(before) : NAN;
}

/* Relative shift of x from ref in the bad direction. */
static double
shift_of(double x, double ref, int up)
{
	return (up ? x - ref : ref - x) / fabs(ref);
}

static void
drift_info(detect_ctx *c, level_st *st, const detect_sample *s, double med)
{
	const detect_rule *r = c->r;
	double             d = detect_p(r, LV_DRIFT), k;

	if (d <= 0)
		return;
	if (!st->has_slow) {
		st->slow     = med;
		st->has_slow = 1;
		return;
	}
	if (st->slow != 0 && fabs(med - st->slow) / fabs(st->slow) >= d) {
		detect_emit_series(c, "drift", DETECT_INFO, DETECT_RESOLVED,
		    DETECT_EVENT, s, med, st->slow,
		    "%s level %s has drifted %+.1f%% from %s gradually (step "
		    "%llu, rank %d): planned or slow, not paged",
		    c->s->metric, detect_fmt(med).s,
		    100 * (med - st->slow) / fabs(st->slow),
		    detect_fmt(st->slow).s, (unsigned long long) s->step,
		    (int) s->rank);
		st->slow = med;
		return;
	}
	k = 1 / detect_p(r, LV_FOLLOW);
	st->slow += k * (med - st->slow);
}

/* Whether the lead series moved its own bad way over the last n samples
 * against the nb before them (see confirmed), its change in *ch. */
static int
lead_moved(detect_ctx *c, uint32_t n, uint32_t nb, double shift, int up,
    double *ch, double *noise, detect_name *lead, int *lead_up)
{
	double moved;

	*ch = detect_lead_change(c, n, nb, noise, lead, lead_up);
	if (!(*ch > -1))
		return 0; /* NaN: nothing to confirm with */
	moved = *lead_up ? log1p(*ch) : -log1p(*ch);
	return moved >= 0.5 * (up ? log1p(shift) : -log1p(-shift))
	    && fabs(*ch) >= detect_p(c->r, LV_CONFIRM) * *noise;
}

/*
 * A deferring rule's finding (step time up) is confirmed when the series
 * of a rule it defers to (throughput) moved its own bad way over the
 * same samples (the n the condition held for), by at least half as much
 * in log terms (a slowdown moves both alike; more work per step leaves
 * throughput where it was) and by `confirm` times that series' noise
 * scale: against the window before them, or, for a finding of the quick
 * or the jump test (st->quick), against the `short` samples just before
 * them. Returns DETECT_CONFIRMED and says so in msg, or 0 and msg "".
 */
static int
confirmed(detect_ctx *c, const level_st *st, uint32_t n, double shift, int up,
    char *msg, size_t len)
{
	const detect_rule *r = c->r;
	double             k = detect_p(r, LV_CONFIRM), noise, ch;
	detect_name        lead;
	int                lead_up;

	msg[0] = 0;
	if (!r->defer || k <= 0 || !(shift > 0 && (up || shift < 1)))
		return 0;
	if (!lead_moved(c, n, 0, shift, up, &ch, &noise, &lead, &lead_up)
	    && !(st->quick
	        && lead_moved(c, n, short_of(r), shift, up, &ch, &noise, &lead,
	            &lead_up)))
		return 0;
	snprintf(msg, len,
	    "; %s %+.1f%% over the same %u samples (%.1f times its noise): "
	    "a slowdown",
	    lead.s, 100 * ch, n, fabs(ch) / noise);
	return DETECT_CONFIRMED;
}

/* Learn a change d into an average scale: a root mean square, so that
 * swings weigh as they should; each change clipped at 4 times the
 * average so that one shift cannot teach that shifts are usual. */
static void
learn(double *scale, uint64_t *nd, double d)
{
	double a = 1.0 / (double) (*nd < 500 ? *nd + 1 : 500);

	if (*nd > 0 && d > 4 * *scale)
		d = 4 * *scale;
	*scale = sqrt(*scale * *scale + a * (d * d - *scale * *scale));
	(*nd)++;
}

/*
 * Whether the level has settled where the windows' test finds it: the
 * last `short` samples S not still further off, the bad way, than C's
 * median by half the threshold. A shift is a step and then a level; a
 * ramp of the work per step keeps going, so that where it begins C is
 * off B while S runs ahead of C. Only for a rule that defers (step
 * time, which such ramps raise by design); a drop of throughput or
 * entropy that keeps falling is still one.
 */
static int
settled(const detect_rule *r, int quick_ok, double ms, double mc, double thr,
    int up)
{
	return !r->defer || !quick_ok || shift_of(ms, mc, up) < thr / 2;
}

static void
level_feed_dir(detect_ctx *c, detect_inst *in, const detect_sample *s, int up)
{
	const detect_rule *r    = c->r;
	level_st          *st   = in->st;
	const char        *kind = up ? "rise" : "drop";
	double             by   = detect_p(r, LV_BY), ma, mb, mc, thr, d;
	double             mr = 0, ms = 0, thr_s, thr_j, pv = st->prev;
	double             mj = 0, mshow;
	int                cond, tr, quick_ok, jump_ok, back = 0;
	uint32_t           held;

	if (!isfinite(s->value))
		return;
	jump_ok      = detect_p(r, LV_JUMP) != 0 && st->has_prev && pv != 0;
	st->prev     = s->value;
	st->has_prev = 1;
	push3(st, s->value);
	st->n++;
	if (st->a.n < st->a.cap || st->n < detect_p(r, LV_WARMUP))
		return;
	ma = detect_win_median(&st->a, wbuf(st, 0));
	mb = detect_win_median(&st->b, wbuf(st, 1));
	mc = detect_win_median(&st->c, wbuf(st, 2));
	if (ma == 0 || mb == 0)
		return;
	drift_info(c, st, s, mc);
	d        = fabs(mc - mb) / fabs(mb);
	thr      = fmax(by, detect_p(r, LV_NOISE) * st->scale);
	thr_s    = fmax(by, detect_p(r, LV_NOISE) * st->scale_s);
	thr_j    = fmax(by, detect_p(r, LV_NOISE) * st->scale_j);
	quick_ok = st->r.cap > 0 && st->r.n == st->r.cap;
	if (quick_ok) {
		mr       = detect_win_median(&st->r, wbuf(st, 3));
		ms       = detect_win_median(&st->s, wbuf(st, 4));
		quick_ok = mr != 0;
	}
	if (st->fsm.state == DETECT_FSM_CLEAR) {
		/* Abrupt: C off B while B is about where A was. */
		int steady = fabs(mb - ma) / fabs(ma) < thr / 3;

		/* A drop coming into C moves C off B for tens of samples
		 * before it is the threshold off, and the changes learned
		 * meanwhile raise the threshold as fast (a drop of 8% on a
		 * throughput whose threshold was 5% met one of 10%). So
		 * once C is half the threshold below B, B steady, the
		 * threshold of that moment holds for a window or until C
		 * is back within a quarter of it. Only on a quiet series:
		 * a threshold under twice `by`, and a noise scale that did
		 * not grow over the last windows (a busy host's swings, or
		 * those of one becoming busy, come in just so, and the
		 * threshold must rise with them). Not for a rise: a
		 * planned ramp of the work per step (a sequence length that
		 * grows) raises the step time as a shift would where it
		 * begins, and the threshold rising with it keeps it quiet;
		 * the throughput stays level under such a ramp. */
		if (st->cand_thr > 0
		    && (st->n - st->cand_n > st->a.cap
		        || shift_of(mc, mb, up) < st->cand_thr / 4))
			st->cand_thr = 0;
		if (st->n % st->a.cap == 0) {
			st->snap[1] = st->snap[0];
			st->snap[0] = st->scale;
		}
		if (st->cand_thr == 0 && !up && steady && thr < 2 * by
		    && st->scale < 1.1 * st->snap[1]
		    && shift_of(mc, mb, up) >= thr / 2) {
			st->cand_thr = thr;
			st->cand_n   = st->n;
		}
		if (st->cand_thr > 0)
			thr = fmin(thr, st->cand_thr);
		/* Quick: S off R while R is about where B was. The lag
		 * from B to R is ten times the one from R to S, so a drift
		 * cannot pass; on a series whose level wanders (a busy
		 * host) the short lag is where a step stands out most. */
		int steady_s
		    = quick_ok && fabs(mr - mb) / fabs(mb) < thr_s / 3;

		cond = st->nd >= st->a.cap && shift_of(mc, mb, up) >= thr
		    && steady && settled(r, quick_ok, ms, mc, thr, up);
		if (cond) {
			st->ref   = mb;
			st->thr   = thr;
			st->quick = 0;
		} else if (steady_s && st->nd_s >= st->a.cap
		    && shift_of(ms, mr, up) >= thr_s) {
			cond      = 1;
			st->ref   = mr;
			st->thr   = thr_s;
			st->quick = 1;
		} else if (jump_ok && st->nd_j >= st->a.cap
		    && shift_of(s->value, pv, up) >= thr_j) {
			/* Jump: this sample off the one before it. */
			cond       = 1;
			st->ref    = pv;
			st->thr    = thr_j;
			st->quick  = 2;
			st->jump_n = st->n;
			mj         = s->value;
		} else if (st->n >= st->settle) {
			/* An abrupt shift the other way (the level coming
			 * back), or windows that still hold samples of an
			 * episode, are no noise: as a shift passes through
			 * the windows it would teach a threshold that misses
			 * the next one. */
			if (!(steady && shift_of(mc, mb, !up) >= thr))
				learn(&st->scale, &st->nd, d);
			if (quick_ok
			    && !(steady_s && shift_of(ms, mr, !up) >= thr_s))
				learn(&st->scale_s, &st->nd_s,
				    fabs(ms - mr) / fabs(mr));
			if (jump_ok && shift_of(s->value, pv, !up) < thr_j)
				learn(&st->scale_j, &st->nd_j,
				    fabs(s->value - pv) / fabs(pv));
		}
	} else if (st->quick == 2) {
		/* Judged on the samples since the jump; once firing, C
		 * keeps it too. */
		mj   = median_last(st, (uint32_t) (st->n - st->jump_n + 1));
		cond = st->fsm.state == DETECT_FSM_FIRING
		    ? shift_of(mj, st->ref, up) >= st->thr / 2
		        || shift_of(mc, st->ref, up) >= st->thr / 2
		    : shift_of(mj, st->ref, up) >= st->thr;
	} else if (st->quick) {
		/* Judged on S; once firing, C (steadier) keeps it too. */
		cond = st->fsm.state == DETECT_FSM_FIRING
		    ? shift_of(ms, st->ref, up) >= st->thr / 2
		        || shift_of(mc, st->ref, up) >= st->thr / 2
		    : shift_of(ms, st->ref, up) >= st->thr;
	} else {
		cond = shift_of(mc, st->ref, up)
		    >= (st->fsm.state == DETECT_FSM_FIRING ? st->thr / 2
		                                           : st->thr);
		if (st->fsm.state == DETECT_FSM_PENDING)
			cond = cond
			    && settled(r, quick_ok, ms, mc, st->thr, up);
	}
	if (st->fsm.state == DETECT_FSM_FIRING) {
		/* Back abruptly: the level returned within a window, by
		 * the threshold and by half the deepest shift, whatever
		 * the level drifted to meanwhile. */
		st->deepest = fmax(st->deepest, shift_of(mc, st->ref, up));
		back = shift_of(mc, mb, !up) >= fmax(st->thr, st->deepest / 2);
		if (back)
			cond = 0;
	}
	/* The samples the condition has held for, this one included, if
	 * it fires now (steps may advance by more than one a sample). */
	held = st->fsm.state == DETECT_FSM_PENDING ? st->fsm.n + 1 : 1;
	tr   = detect_fsm_update(&st->fsm, cond, &r->p[LV_FOR], &r->clear,
	      &r->cooldown, s->step, s->time_ns);
	/* A jump that did not last 3 samples (a slow step) held no shift
	 * that the windows could learn. */
	if (st->fsm.state != DETECT_FSM_CLEAR
	    && (st->quick != 2 || st->n - st->jump_n >= 3))
		st->settle = st->n + 3 * (uint64_t) st->a.cap;
	mshow = st->quick == 2 ? mj : st->quick ? ms : mc;
	if (tr == DETECT_FSM_FIRE) {
		char conf[320];
		int  flags = confirmed(c, st, held,
		     shift_of(mshow, st->ref, up), up, conf, sizeof(conf));

		st->firing_n = 0;
		st->deepest  = 0;
		detect_emit_series(c, kind, r->severity, DETECT_FIRING, flags,
		    s, mc, st->ref,
		    "%s level %s (median of %u samples) is %.1f%% %s its "
		    "level %s before an abrupt shift at step %llu (threshold "
		    "%.1f%%, rank %d)%s",
		    c->s->metric, detect_fmt(mshow).s,
		    st->quick == 2 ? (unsigned) fmin(
		        st->c.n, (double) (st->n - st->jump_n + 1))
		        : st->quick ? st->s.n
		                    : st->c.n,
		    100 * shift_of(mshow, st->ref, up), up ? "above" : "below",
		    detect_fmt(st->ref).s, (unsigned long long) st->fsm.step0,
		    100 * st->thr, (int) s->rank, conf);
	} else if (tr == DETECT_FSM_RESOLVE && back) {
		detect_emit_series(c, kind, r->severity, DETECT_RESOLVED, 0, s,
		    mc, st->ref,
		    "%s level %s came back abruptly at step %llu: %.1f%% "
		    "%s its level %s a window before (its level before the "
		    "shift was %s)",
		    c->s->metric, detect_fmt(mc).s,
		    (unsigned long long) s->step, 100 * shift_of(mc, mb, !up),
		    up ? "below" : "above", detect_fmt(mb).s,
		    detect_fmt(st->ref).s);
	} else if (tr == DETECT_FSM_RESOLVE) {
		detect_emit_series(c, kind, r->severity, DETECT_RESOLVED, 0, s,
		    mc, st->ref,
		    "%s level %s is back within %.1f%% of its level %s at "
		    "step %llu",
		    c->s->metric, detect_fmt(mc).s, 100 * st->thr / 2,
		    detect_fmt(st->ref).s, (unsigned long long) s->step);
	}
	if (st->fsm.state == DETECT_FSM_FIRING && detect_p(r, LV_ADAPT) > 0
	    && ++st->firing_n >= detect_p(r, LV_ADAPT)) {
		detect_emit_series(c, kind, r->severity, DETECT_RESOLVED, 0, s,
		    mc, st->ref,
		    "%s has stayed at %s for %llu samples: taken as its new "
		    "level",
		    c->s->metric, detect_fmt(mc).s,
		    (unsigned long long) st->firing_n);
		detect_fsm_reset(&st->fsm);
	}
}

static void
drop_feed(detect_ctx *c, detect_inst *in, const detect_sample *s)
{
	level_feed_dir(c, in, s, 0);
}

static void
rise_feed(detect_ctx *c, detect_inst *in, const detect_sample *s)
{
	level_feed_dir(c, in, s, 1);
}

static void
level_rollback(detect_ctx *c, detect_inst *in, const detect_sample *s,
    uint64_t prev_step, int64_t prev_time)
{
	level_st *st = in->st;

	(void) prev_time;
	if (st->fsm.state == DETECT_FSM_FIRING)
		detect_emit_series(c,
		    c->r->kind == &detect_kind_rise ? "rise" : "drop",
		    c->r->severity, DETECT_RESOLVED, 0, s, s->value, st->ref,
		    "the run restarted at step %llu (from step %llu)",
		    (unsigned long long) s->step,
		    (unsigned long long) prev_step);
	detect_fsm_reset(&st->fsm);
	/* The first steps after a restart are slow (compilation, warm
	 * caches): fill the windows again before judging. The noise scale
	 * is kept. */
	detect_win_clear(&st->a);
	detect_win_clear(&st->b);
	detect_win_clear(&st->c);
	detect_win_clear(&st->r);
	detect_win_clear(&st->s);
	st->has_prev = 0;
	st->cand_thr = 0;
	st->n      = 0;
	st->settle = 0;
}

const detect_kind detect_kind_drop = {
	.name       = "drop",
	.params     = lv_params,
	.nparams    = sizeof(lv_params) / sizeof(lv_params[0]),
	.severity   = DETECT_WARNING,
	.scope      = DETECT_SCOPE_SERIES,
	.state_size = level_size,
	.init       = level_init,
	.feed       = drop_feed,
	.rollback   = level_rollback,
	.prefetch   = level_prefetch,
	.change     = level_change,
};

const detect_kind detect_kind_rise = {
	.name       = "rise",
	.params     = lv_params,
	.nparams    = sizeof(lv_params) / sizeof(lv_params[0]),
	.severity   = DETECT_WARNING,
	.scope      = DETECT_SCOPE_SERIES,
	.state_size = level_size,
	.init       = level_init,
	.feed       = rise_feed,
	.rollback   = level_rollback,
	.prefetch   = level_prefetch,
	.change     = level_change,
};
