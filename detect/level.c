/*
 * level: drop and rise, a sustained shift of a series' level.
 *
 * The recent level is the median of the last `window` samples, so single
 * slow steps, and slow steps that recur every N steps (evaluation,
 * checkpoints) while they are fewer than half the window, do not move it.
 * The reference level is that median once `warmup` samples were seen;
 * afterwards it follows the recent level slowly (time constant `follow`
 * samples), quickly when the level moves the harmless way (a throughput
 * that rises is not a drop), and not at all while a shift is pending or
 * firing. A drop fires when the recent level is `by` (a fraction: 5%)
 * below the reference for `for`; it resolves when within by/2 again.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "detect/baseline.h"
#include "detect/detector.h"
#include "detect/fsm.h"

enum { LV_BY, LV_WINDOW, LV_WARMUP, LV_FOR, LV_FOLLOW, LV_ADAPT };
static const detect_param lv_params[] = {
	{ "by", DP_NUM, 0.05, 0, 0.001, 0.99, NULL },
	{ "window", DP_COUNT, 64, 0, 4, 4096, NULL },
	{ "warmup", DP_COUNT, 128, 0, 4, 1e9, NULL },
	{ "for", DP_SPAN, 16, 0, 1, 1e9, NULL },
	{ "follow", DP_COUNT, 500, 0, 1, 1e9, NULL },
	{ "adapt", DP_COUNT, 0, 0, 0, 1e9, NULL },
};

typedef struct level_st {
	detect_fsm fsm;
	detect_win w;
	uint64_t   n; /* samples since (re)start */
	uint64_t   firing_n;
	double     ref;
	int        has_ref;
	double     buf[]; /* the window */
} level_st;

static size_t
level_size(const detect_rule *r)
{
	return sizeof(level_st)
	    + detect_win_bytes((uint32_t) detect_p(r, LV_WINDOW));
}

static void
level_init(void *state, const detect_rule *r)
{
	level_st *st = state;

	detect_win_init(&st->w, (uint32_t) detect_p(r, LV_WINDOW));
}

static void
level_feed_dir(detect_ctx *c, detect_inst *in, const detect_sample *s, int up)
{
	const detect_rule *r    = c->r;
	level_st          *st   = in->st;
	const char        *kind = up ? "rise" : "drop";
	double             by   = detect_p(r, LV_BY), med, shift;
	int                cond, tr;

	if (!isfinite(s->value))
		return;
	detect_win_push(&st->w, st->buf, s->value);
	st->n++;
	if (st->w.n < st->w.cap || st->n < detect_p(r, LV_WARMUP))
		return;
	med = detect_win_median(&st->w, st->buf);
	if (!st->has_ref) {
		st->ref     = med;
		st->has_ref = 1;
		return;
	}
	if (st->ref == 0)
		return;
	shift = (up ? med - st->ref : st->ref - med) / fabs(st->ref);
	cond  = shift >= (st->fsm.state == DETECT_FSM_FIRING ? by / 2 : by);
	tr    = detect_fsm_update(&st->fsm, cond, &r->p[LV_FOR], &r->clear,
	       &r->cooldown, s->step, s->time_ns);
	if (tr == DETECT_FSM_FIRE) {
		st->firing_n = 0;
		detect_emit_series(c, kind, r->severity, DETECT_FIRING, 0, s,
		    med, st->ref,
		    "%s level %s (median of %u samples) is %.1f%% %s its "
		    "level %s at step %llu, since step %llu (rank %d)",
		    c->s->metric, detect_fmt(med).s, st->w.n, 100 * shift,
		    up ? "above" : "below", detect_fmt(st->ref).s,
		    (unsigned long long) s->step,
		    (unsigned long long) st->fsm.step0, (int) s->rank);
	} else if (tr == DETECT_FSM_RESOLVE) {
		detect_emit_series(c, kind, r->severity, DETECT_RESOLVED, 0, s,
		    med, st->ref,
		    "%s level %s is back within %.1f%% of its level %s at "
		    "step %llu",
		    c->s->metric, detect_fmt(med).s, 100 * by / 2,
		    detect_fmt(st->ref).s, (unsigned long long) s->step);
	}
	if (st->fsm.state == DETECT_FSM_FIRING) {
		if (detect_p(r, LV_ADAPT) > 0
		    && ++st->firing_n >= detect_p(r, LV_ADAPT)) {
			detect_emit_series(c, kind, r->severity,
			    DETECT_RESOLVED, 0, s, med, st->ref,
			    "%s has stayed at %s for %llu samples: taken as "
			    "its new level",
			    c->s->metric, detect_fmt(med).s,
			    (unsigned long long) st->firing_n);
			st->ref = med;
			detect_fsm_reset(&st->fsm);
		}
		return;
	}
	if (st->fsm.state == DETECT_FSM_PENDING)
		return;
	/* Follow: fast the harmless way, slowly the other. */
	{
		double k        = 1 / detect_p(r, LV_FOLLOW);
		int    harmless = up ? med < st->ref : med > st->ref;

		if (harmless)
			k = k * 10 > 1 ? 1 : k * 10;
		st->ref += k * (med - st->ref);
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
	 * caches): fill the window again before judging; the reference
	 * level is kept, so a slower node after the restart still shows. */
	detect_win_clear(&st->w);
	st->n = 0;
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
};
