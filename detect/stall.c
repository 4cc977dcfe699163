/*
 * stall: a run, or one of its ranks, that stops making progress.
 *
 * Each rank learns its usual step interval: the median of the last 16
 * intervals between samples that advanced its step (the first two of an
 * attempt, compilation and warm-up, are skipped), and its longest
 * interval over the last 1024 to 2048 advances, which covers slow steps
 * that recur (checkpoints, evaluation). A rank is overdue after
 *
 *	clamp(max(k x usual, 1.25 x longest), floor, ceiling)
 *
 * seconds (ceiling until 3 intervals are known). Three alerts, one group
 * per (rule, run):
 *   stall (rank -1)       no sample from the run for the largest
 *                         threshold of its ranks;
 *   stall (rank r)        rank r has not advanced for its threshold while
 *                         another rank advanced after r's deadline;
 *   progress_stall (-1)   samples still arrive (heartbeats) but the run's
 *                         step has not advanced for that threshold.
 * Stalls are stamped with the deadline that was missed, not the tick that
 * noticed it, so live and replayed alerts agree. Thresholds and rank
 * checks are refreshed at most every 200 ms of clock.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "detect/baseline.h"
#include "detect/detector.h"

enum { SL_K, SL_FLOOR, SL_CEILING, SL_RANKS, SL_PROGRESS };
static const detect_param sl_params[] = {
	{ "k", DP_NUM, 2.5, 0, 1, 1e6, NULL },
	{ "floor", DP_SECONDS, 5, DETECT_SECONDS, 0, 1e9, NULL },
	{ "ceiling", DP_SECONDS, 900, DETECT_SECONDS, 0.001, 1e9, NULL },
	{ "ranks", DP_BOOL, 1, 0, 0, 1, NULL },
	{ "progress", DP_BOOL, 1, 0, 0, 1, NULL },
};

#define NIV      16   /* intervals for the median */
#define LONGWIN  1024 /* advances per window of the longest interval */
#define MINLEARN 3
#define REFRESH  200000000ll /* ns */

typedef struct st_slot {
	uint64_t   max_step;
	int64_t    last_time, adv_time; /* latest sample; latest advance */
	double     thr, usual;          /* seconds */
	double     long_cur, long_prev;
	uint32_t   long_n, nadv;
	uint8_t    has, warm, stalled;
	detect_win w;
	double     buf[2 * NIV];
} st_slot;

typedef struct st_group {
	int      has;
	uint64_t max_step;
	int64_t  adv_time, last_time;
	double   thr, usual; /* run-wide: the largest of the ranks' */
	int64_t  refreshed;
	uint8_t  silent, progress;
	int64_t  silent_at, progress_at;
} st_group;

static size_t
st_state_size(const detect_rule *r)
{
	(void) r;
	return sizeof(st_group);
}

static size_t
st_slot_size(const detect_rule *r)
{
	(void) r;
	return sizeof(st_slot);
}

static void
st_slot_init(void *slot, const detect_rule *r)
{
	st_slot *sl = slot;

	detect_win_init(&sl->w, NIV);
	sl->thr   = detect_p(r, SL_CEILING);
	sl->usual = NAN;
}

static void
learn(const detect_rule *r, st_slot *sl, double iv)
{
	double longest, thr;

	detect_win_push(&sl->w, sl->buf, iv);
	sl->nadv++;
	if (iv > sl->long_cur)
		sl->long_cur = iv;
	if (++sl->long_n >= LONGWIN) {
		sl->long_prev = sl->long_cur;
		sl->long_cur  = 0;
		sl->long_n    = 0;
	}
	if (sl->nadv < MINLEARN)
		return;
	sl->usual = detect_win_median(&sl->w, sl->buf);
	longest   = sl->long_cur > sl->long_prev ? sl->long_cur : sl->long_prev;
	thr       = detect_p(r, SL_K) * sl->usual;
	if (1.25 * longest > thr)
		thr = 1.25 * longest;
	if (thr < detect_p(r, SL_FLOOR))
		thr = detect_p(r, SL_FLOOR);
	if (thr > detect_p(r, SL_CEILING))
		thr = detect_p(r, SL_CEILING);
	sl->thr = thr;
}

static void
refresh(detect_group *g, st_group *gs, int64_t now)
{
	gs->thr       = 0;
	gs->usual     = NAN;
	gs->refreshed = now;
	for (uint32_t i = 0; i < g->nslots; i++) {
		const st_slot *sl = detect_slot(g, i);

		if (!sl->has)
			continue;
		if (sl->thr > gs->thr)
			gs->thr = sl->thr;
		if (!isnan(sl->usual) && !(sl->usual <= gs->usual))
			gs->usual = sl->usual;
	}
}

typedef struct usual_txt {
	char s[48];
} usual_txt;

static usual_txt
usual(double u)
{
	usual_txt t;

	if (isnan(u))
		snprintf(t.s, sizeof(t.s), "not learned yet");
	else
		snprintf(t.s, sizeof(t.s), "%s s", detect_fmt(u).s);
	return t;
}

static void
st_feed(detect_ctx *c, detect_inst *in, const detect_sample *s)
{
	const detect_rule *r  = c->r;
	detect_group      *g  = in->g;
	st_group          *gs = g->state;
	st_slot           *sl = detect_slot(g, in->slot);
	int64_t            t  = s->time_ns;
	detect_origin      o;

	if (!sl->has) {
		sl->has      = 1;
		sl->warm     = 2;
		sl->max_step = s->step;
		sl->last_time = sl->adv_time = t;
	} else {
		if (t > sl->last_time)
			sl->last_time = t;
		if (s->step > sl->max_step) {
			double iv = (double) (t - sl->adv_time) / 1e9;

			if (sl->warm > 0)
				sl->warm--;
			else if (iv > 0)
				learn(r, sl, iv);
			if (sl->stalled) {
				sl->stalled = 0;
				detect_origin_rank(&o, c->s->rk);
				detect_emit(c, &o, "stall", r->severity,
				    DETECT_RESOLVED, 0, s->step, t,
				    (double) (t - sl->adv_time) / 1e9,
				    sl->usual,
				    "rank %d advanced again to step %llu after "
				    "%s s",
				    (int) s->rank, (unsigned long long) s->step,
				    detect_fmt((double) (t - sl->adv_time) / 1e9)
					.s);
			}
			sl->max_step = s->step;
			sl->adv_time = t;
		}
	}
	if (!gs->has) {
		gs->has       = 1;
		gs->max_step  = s->step;
		gs->adv_time  = gs->last_time = t;
		gs->thr       = detect_p(r, SL_CEILING);
		gs->usual     = NAN;
		return;
	}
	detect_origin_run(&o, g->run);
	if (gs->silent) {
		gs->silent = 0;
		detect_emit(c, &o, "stall", r->severity, DETECT_RESOLVED, 0,
		    s->step, t, (double) (t - gs->last_time) / 1e9, gs->usual,
		    "run %s sends again (rank %d, step %llu) after %s s "
		    "without a sample",
		    detect_name_of(o.run, o.runlen).s, (int) s->rank,
		    (unsigned long long) s->step,
		    detect_fmt((double) (t - gs->last_time) / 1e9).s);
	}
	if (t > gs->last_time)
		gs->last_time = t;
	if (s->step > gs->max_step) {
		if (gs->progress) {
			gs->progress = 0;
			detect_emit(c, &o, "progress_stall", r->severity,
			    DETECT_RESOLVED, 0, s->step, t,
			    (double) (t - gs->adv_time) / 1e9, gs->usual,
			    "run %s advances again: step %llu after %s s",
			    detect_name_of(o.run, o.runlen).s,
			    (unsigned long long) s->step,
			    detect_fmt((double) (t - gs->adv_time) / 1e9).s);
		}
		gs->max_step = s->step;
		gs->adv_time = t;
	} else if (detect_p(r, SL_PROGRESS) != 0 && !gs->progress &&
	    (double) (t - gs->adv_time) / 1e9 > gs->thr) {
		gs->progress    = 1;
		gs->progress_at = t;
		detect_emit(c, &o, "progress_stall", r->severity, DETECT_FIRING,
		    0, gs->max_step, t, (double) (t - gs->adv_time) / 1e9,
		    gs->usual,
		    "run %s: samples arrive (rank %d) but no rank has advanced "
		    "past step %llu for %s s (usual step interval %s)",
		    detect_name_of(o.run, o.runlen).s, (int) s->rank,
		    (unsigned long long) gs->max_step,
		    detect_fmt((double) (t - gs->adv_time) / 1e9).s,
		    usual(gs->usual).s);
	}
}

static void
st_tick(detect_ctx *c, detect_group *g, int64_t now)
{
	const detect_rule *r  = c->r;
	st_group          *gs = g->state;
	detect_origin      o;
	int64_t            deadline;

	int                fresh = 0;

	if (!gs->has)
		return;
	if (now - gs->refreshed >= REFRESH) {
		refresh(g, gs, now);
		fresh = 1;
	}
	deadline = gs->last_time + (int64_t) (gs->thr * 1e9);
	if (!gs->silent && now > deadline) {
		gs->silent    = 1;
		gs->silent_at = deadline;
		detect_origin_run(&o, g->run);
		detect_emit(c, &o, "stall", r->severity, DETECT_FIRING, 0,
		    gs->max_step, deadline, gs->thr, gs->usual,
		    "no sample from run %s for %s s (usual step interval %s); "
		    "last step %llu",
		    detect_name_of(o.run, o.runlen).s, detect_fmt(gs->thr).s,
		    usual(gs->usual).s, (unsigned long long) gs->max_step);
	}
	if (!fresh || detect_p(r, SL_RANKS) == 0 || g->nslots < 2 ||
	    gs->silent)
		return;
	for (uint32_t i = 0; i < g->nslots; i++) {
		st_slot *sl = detect_slot(g, i);
		int64_t  due;

		if (!sl->has || sl->stalled || sl->nadv < MINLEARN)
			continue;
		due = sl->adv_time + (int64_t) (sl->thr * 1e9);
		if (now <= due || gs->adv_time <= due)
			continue;
		sl->stalled = 1;
		detect_origin_rank(&o, g->slot_rank[i]);
		detect_emit(c, &o, "stall", r->severity, DETECT_FIRING, 0,
		    sl->max_step, due, sl->thr, sl->usual,
		    "rank %d (host %s) has not advanced past step %llu for %s "
		    "s while other ranks reached step %llu (usual step "
		    "interval %s)",
		    (int) o.rank, o.hostlen ? o.host : "unknown",
		    (unsigned long long) sl->max_step, detect_fmt(sl->thr).s,
		    (unsigned long long) gs->max_step, usual(sl->usual).s);
	}
}

static void
st_rollback(detect_ctx *c, detect_inst *in, const detect_sample *s,
    uint64_t prev_step, int64_t prev_time)
{
	detect_group *g  = in->g;
	st_group     *gs = g->state;
	st_slot      *sl = detect_slot(g, in->slot);
	detect_origin o;

	(void) prev_step;
	(void) prev_time;
	if (sl->has && s->step < sl->max_step) {
		if (sl->stalled) {
			sl->stalled = 0;
			detect_origin_rank(&o, c->s->rk);
			detect_emit(c, &o, "stall", c->r->severity,
			    DETECT_RESOLVED, 0, s->step, s->time_ns, NAN,
			    sl->usual, "rank %d restarted at step %llu",
			    (int) s->rank, (unsigned long long) s->step);
		}
		sl->max_step = s->step;
		sl->adv_time = s->time_ns;
		sl->warm     = 2;
	}
	if (gs->has && s->step < gs->max_step) {
		if (gs->progress) {
			gs->progress = 0;
			detect_origin_run(&o, g->run);
			detect_emit(c, &o, "progress_stall", c->r->severity,
			    DETECT_RESOLVED, 0, s->step, s->time_ns, NAN,
			    gs->usual, "run %s restarted at step %llu",
			    detect_name_of(o.run, o.runlen).s,
			    (unsigned long long) s->step);
		}
		gs->max_step = s->step;
		gs->adv_time = s->time_ns;
	}
}

const detect_kind detect_kind_stall = {
	.name       = "stall",
	.params     = sl_params,
	.nparams    = sizeof(sl_params) / sizeof(sl_params[0]),
	.severity   = DETECT_CRITICAL,
	.scope      = DETECT_SCOPE_RUN,
	.state_size = st_state_size,
	.slot_size  = st_slot_size,
	.slot_init  = st_slot_init,
	.feed       = st_feed,
	.rollback   = st_rollback,
	.tick       = st_tick,
};
