/*
 * straggler: across the ranks of a run, a rank whose recent median of a
 * per-rank metric is off the median of all ranks by more than `by`.
 *
 * One group per (rule, run, metric), one slot per rank holding the last
 * `window` values. The reference (median of the ranks' medians) is
 * computed again after every round of as many samples as there are
 * ranks, so the cost per sample stays O(window) amortised. It assumes
 * ranks do the same work (data parallel): pipeline stages that differ by
 * design need a rule per stage (rank = '...').
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detect/baseline.h"
#include "detect/detector.h"
#include "detect/fsm.h"

enum { SG_BY, SG_DIRECTION, SG_WINDOW, SG_MIN_RANKS, SG_FOR };
static const char *const  sg_dirs[]   = { "up", "down", NULL };
static const detect_param sg_params[] = {
	{ "by", DP_NUM, 0.05, 0, 0.001, 10, NULL },
	{ "direction", DP_ENUM, 0, 0, 0, 1, sg_dirs },
	{ "window", DP_COUNT, 32, 0, 4, 4096, NULL },
	{ "min_ranks", DP_COUNT, 3, 0, 2, 1e6, NULL },
	{ "for", DP_SPAN, 16, 0, 1, 1e9, NULL },
};

typedef struct sg_group {
	double   ref;   /* median of the ranks' medians; NaN if unknown */
	uint32_t nref;  /* ranks it was computed from */
	uint32_t round; /* samples since it was computed */
} sg_group;

typedef struct sg_slot {
	detect_fsm fsm;
	detect_win w;
	double     med;
	double     buf[];
} sg_slot;

static size_t
sg_state_size(const detect_rule *r)
{
	(void) r;
	return sizeof(sg_group);
}

static size_t
sg_slot_size(const detect_rule *r)
{
	return sizeof(sg_slot)
	    + detect_win_bytes((uint32_t) detect_p(r, SG_WINDOW));
}

static void
sg_init(void *state, const detect_rule *r)
{
	sg_group *g = state;

	(void) r;
	g->ref = NAN;
}

static void
sg_slot_init(void *slot, const detect_rule *r)
{
	sg_slot *sl = slot;

	detect_win_init(&sl->w, (uint32_t) detect_p(r, SG_WINDOW));
	sl->med = NAN;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;

	return x < y ? -1 : x > y;
}

/* The median of the full windows' medians. */
static void
reference(detect_group *g, sg_group *gs)
{
	double  *v = malloc(g->nslots * sizeof(*v));
	uint32_t n = 0;

	gs->round = 0;
	if (v == NULL)
		return; /* keeps the old reference */
	for (uint32_t i = 0; i < g->nslots; i++) {
		const sg_slot *sl = detect_slot(g, i);

		if (sl->w.n == sl->w.cap)
			v[n++] = sl->med;
	}
	gs->nref = n;
	if (n > 0) {
		qsort(v, n, sizeof(*v), cmp_double);
		gs->ref = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
	} else {
		gs->ref = NAN;
	}
	free(v);
}

static void
sg_feed(detect_ctx *c, detect_inst *in, const detect_sample *s)
{
	const detect_rule *r  = c->r;
	detect_group      *g  = in->g;
	sg_group          *gs = g->state;
	sg_slot           *sl = detect_slot(g, in->slot);
	double             by = detect_p(r, SG_BY), off;
	int                up = detect_p(r, SG_DIRECTION) == 0, cond, tr;

	if (!isfinite(s->value))
		return;
	detect_win_push(&sl->w, sl->buf, s->value);
	if (sl->w.n < sl->w.cap)
		return;
	sl->med = detect_win_median(&sl->w, sl->buf);
	if (++gs->round >= g->nslots || isnan(gs->ref))
		reference(g, gs);
	if (isnan(gs->ref) || gs->ref == 0
	    || gs->nref < detect_p(r, SG_MIN_RANKS))
		return;
	off  = (up ? sl->med - gs->ref : gs->ref - sl->med) / fabs(gs->ref);
	cond = off >= (sl->fsm.state == DETECT_FSM_FIRING ? by / 2 : by);
	tr   = detect_fsm_update(&sl->fsm, cond, &r->p[SG_FOR], &r->clear,
	      &r->cooldown, s->step, s->time_ns);
	if (tr == DETECT_FSM_FIRE)
		detect_emit_series(c, "straggler", r->severity, DETECT_FIRING,
		    0, s, sl->med, gs->ref,
		    "rank %d (host %s) is a straggler: its %s median %s is "
		    "%.1f%% %s the median of %u ranks %s, since step %llu",
		    (int) s->rank,
		    c->s->rk->hostlen ? c->s->rk->host : "unknown",
		    c->s->metric, detect_fmt(sl->med).s, 100 * off,
		    up ? "above" : "below", gs->nref, detect_fmt(gs->ref).s,
		    (unsigned long long) sl->fsm.step0);
	else if (tr == DETECT_FSM_RESOLVE)
		detect_emit_series(c, "straggler", r->severity,
		    DETECT_RESOLVED, 0, s, sl->med, gs->ref,
		    "rank %d (host %s) is back with the others: %s median %s, "
		    "ranks' median %s at step %llu",
		    (int) s->rank,
		    c->s->rk->hostlen ? c->s->rk->host : "unknown",
		    c->s->metric, detect_fmt(sl->med).s, detect_fmt(gs->ref).s,
		    (unsigned long long) s->step);
}

static void
sg_rollback(detect_ctx *c, detect_inst *in, const detect_sample *s,
    uint64_t prev_step, int64_t prev_time)
{
	sg_slot *sl = detect_slot(in->g, in->slot);

	(void) prev_time;
	if (sl->fsm.state == DETECT_FSM_FIRING)
		detect_emit_series(c, "straggler", c->r->severity,
		    DETECT_RESOLVED, 0, s, s->value, NAN,
		    "the run restarted at step %llu (from step %llu)",
		    (unsigned long long) s->step,
		    (unsigned long long) prev_step);
	detect_fsm_reset(&sl->fsm);
	detect_win_clear(&sl->w);
	sl->med = NAN;
}

const detect_kind detect_kind_straggler = {
	.name       = "straggler",
	.params     = sg_params,
	.nparams    = sizeof(sg_params) / sizeof(sg_params[0]),
	.severity   = DETECT_WARNING,
	.scope      = DETECT_SCOPE_RUN_METRIC,
	.state_size = sg_state_size,
	.slot_size  = sg_slot_size,
	.init       = sg_init,
	.slot_init  = sg_slot_init,
	.feed       = sg_feed,
	.rollback   = sg_rollback,
};
