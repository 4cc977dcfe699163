/*
 * simple: the detectors that need no baseline.
 *
 *	nonfinite  the first NaN or infinity of a series
 *	threshold  above or below a value (or a multiple of the series'
 *	           starting level) for a while
 *	flatline   a value that stops changing
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "detect/baseline.h"
#include "detect/detector.h"
#include "detect/fsm.h"

/* ---- nonfinite -----------------------------------------------------------
 */

typedef struct nonfinite_st {
	int      firing;
	uint32_t clear_n;
	int64_t  clear_t0;
	uint64_t since_step;
	double   last_finite;
	uint64_t last_finite_step;
	int      has_finite;
} nonfinite_st;

static size_t
nonfinite_size(const detect_rule *r)
{
	(void) r;
	return sizeof(nonfinite_st);
}

static void
nonfinite_feed(detect_ctx *c, detect_inst *in, const detect_sample *s)
{
	nonfinite_st *st = in->st;

	if (!isfinite(s->value)) {
		st->clear_n = 0;
		if (st->firing)
			return;
		st->firing     = 1;
		st->since_step = s->step;
		if (st->has_finite)
			detect_emit_series(c, "nonfinite", c->r->severity,
			    DETECT_FIRING, 0, s, s->value, st->last_finite,
			    "%s is %s at step %llu (rank %d); last finite "
			    "value "
			    "%s at step %llu",
			    c->s->metric, detect_fmt(s->value).s,
			    (unsigned long long) s->step, (int) s->rank,
			    detect_fmt(st->last_finite).s,
			    (unsigned long long) st->last_finite_step);
		else
			detect_emit_series(c, "nonfinite", c->r->severity,
			    DETECT_FIRING, 0, s, s->value, NAN,
			    "%s is %s at step %llu (rank %d), its first value",
			    c->s->metric, detect_fmt(s->value).s,
			    (unsigned long long) s->step, (int) s->rank);
		return;
	}
	st->last_finite      = s->value;
	st->last_finite_step = s->step;
	st->has_finite       = 1;
	if (!st->firing)
		return;
	if (st->clear_n++ == 0)
		st->clear_t0 = s->time_ns;
	if (!detect_span_reached(
	        &c->r->clear, st->clear_n, st->clear_t0, s->time_ns))
		return;
	st->firing = 0;
	detect_emit_series(c, "nonfinite", c->r->severity, DETECT_RESOLVED, 0,
	    s, s->value, NAN,
	    "%s is finite again (%s) at step %llu, %llu steps after step "
	    "%llu",
	    c->s->metric, detect_fmt(s->value).s, (unsigned long long) s->step,
	    (unsigned long long) (s->step - st->since_step),
	    (unsigned long long) st->since_step);
}

static void
nonfinite_rollback(detect_ctx *c, detect_inst *in, const detect_sample *s,
    uint64_t prev_step, int64_t prev_time)
{
	nonfinite_st *st = in->st;

	(void) prev_time;
	if (!st->firing)
		return;
	st->firing = 0;
	detect_emit_series(c, "nonfinite", c->r->severity, DETECT_RESOLVED, 0,
	    s, s->value, NAN,
	    "the run restarted at step %llu (from step %llu)",
	    (unsigned long long) s->step, (unsigned long long) prev_step);
}

const detect_kind detect_kind_nonfinite = {
	.name       = "nonfinite",
	.severity   = DETECT_CRITICAL,
	.scope      = DETECT_SCOPE_SERIES,
	.state_size = nonfinite_size,
	.feed       = nonfinite_feed,
	.rollback   = nonfinite_rollback,
};

/* ---- threshold ---------------------------------------------------------- */

enum { TH_ABOVE, TH_BELOW, TH_RELATIVE, TH_WARMUP, TH_FOR };
static const char *const  th_rel[]    = { "absolute", "start", NULL };
static const detect_param th_params[] = {
	{ "above", DP_NUM, NAN, 0, -1e300, 1e300, NULL },
	{ "below", DP_NUM, NAN, 0, -1e300, 1e300, NULL },
	{ "relative", DP_ENUM, 0, 0, 0, 1, th_rel },
	{ "warmup", DP_COUNT, 20, 0, 1, 64, NULL },
	{ "for", DP_SPAN, 1, 0, 0, 1e9, NULL },
};

typedef struct threshold_st {
	detect_fsm fsm;
	uint32_t   n;     /* samples collected for the start level */
	int        ready; /* start level known (or absolute) */
	double     above, below, start;
	double     first[64];
} threshold_st;

static size_t
threshold_size(const detect_rule *r)
{
	(void) r;
	return sizeof(threshold_st);
}

static int
threshold_validate(const detect_rule *r, char *why, size_t whylen)
{
	if (isnan(detect_p(r, TH_ABOVE)) && isnan(detect_p(r, TH_BELOW))) {
		snprintf(why, whylen,
		    "expected 'above = N' or 'below = N' "
		    "for detector threshold, found neither");
		return -1;
	}
	return 0;
}

static void
threshold_init(void *state, const detect_rule *r)
{
	threshold_st *st = state;

	st->above = detect_p(r, TH_ABOVE);
	st->below = detect_p(r, TH_BELOW);
	st->ready = detect_p(r, TH_RELATIVE) == 0;
}

static void
threshold_feed(detect_ctx *c, detect_inst *in, const detect_sample *s)
{
	const detect_rule *r  = c->r;
	threshold_st      *st = in->st;
	double             v  = s->value;
	int                hi, lo, tr;
	char               rel[96] = "";

	if (!isfinite(v))
		return;
	if (!st->ready) {
		st->first[st->n++] = v;
		if (st->n < (uint32_t) detect_p(r, TH_WARMUP))
			return;
		st->start = detect_median_small(st->first, st->n);
		st->above = detect_p(r, TH_ABOVE) * st->start;
		st->below = detect_p(r, TH_BELOW) * st->start;
		st->ready = 1;
		return;
	}
	hi = !isnan(st->above) && v > st->above;
	lo = !isnan(st->below) && v < st->below;
	tr = detect_fsm_update(&st->fsm, hi || lo, &r->p[TH_FOR], &r->clear,
	    &r->cooldown, s->step, s->time_ns);
	if (tr == DETECT_FSM_NONE)
		return;
	if (detect_p(r, TH_RELATIVE) != 0)
		snprintf(rel, sizeof(rel), " (%s x its starting level %s)",
		    detect_fmt(
		        hi ? detect_p(r, TH_ABOVE) : detect_p(r, TH_BELOW))
		        .s,
		    detect_fmt(st->start).s);
	if (tr == DETECT_FSM_FIRE)
		detect_emit_series(c, "threshold", r->severity, DETECT_FIRING,
		    0, s, v, hi ? st->above : st->below,
		    "%s %s is %s %s%s since step %llu (rank %d)", c->s->metric,
		    detect_fmt(v).s, hi ? "above" : "below",
		    detect_fmt(hi ? st->above : st->below).s, rel,
		    (unsigned long long) st->fsm.step0, (int) s->rank);
	else
		detect_emit_series(c, "threshold", r->severity,
		    DETECT_RESOLVED, 0, s, v,
		    !isnan(st->below) ? st->below : st->above,
		    "%s %s is back within its limits at step %llu",
		    c->s->metric, detect_fmt(v).s,
		    (unsigned long long) s->step);
}

static void
fsm_restart(detect_ctx *c, detect_fsm *f, const char *kind,
    const detect_sample *s, uint64_t prev_step)
{
	if (f->state == DETECT_FSM_FIRING)
		detect_emit_series(c, kind, c->r->severity, DETECT_RESOLVED, 0,
		    s, s->value, NAN,
		    "the run restarted at step %llu (from step %llu)",
		    (unsigned long long) s->step,
		    (unsigned long long) prev_step);
	detect_fsm_reset(f);
}

static void
threshold_rollback(detect_ctx *c, detect_inst *in, const detect_sample *s,
    uint64_t prev_step, int64_t prev_time)
{
	threshold_st *st = in->st;

	(void) prev_time;
	fsm_restart(c, &st->fsm, "threshold", s, prev_step);
}

const detect_kind detect_kind_threshold = {
	.name       = "threshold",
	.params     = th_params,
	.nparams    = sizeof(th_params) / sizeof(th_params[0]),
	.severity   = DETECT_WARNING,
	.scope      = DETECT_SCOPE_SERIES,
	.state_size = threshold_size,
	.validate   = threshold_validate,
	.init       = threshold_init,
	.feed       = threshold_feed,
	.rollback   = threshold_rollback,
};

/* ---- flatline ----------------------------------------------------------- */

enum { FL_FOR, FL_TOLERANCE };
static const detect_param fl_params[] = {
	{ "for", DP_SPAN, 50, 0, 1, 1e9, NULL },
	{ "tolerance", DP_NUM, 0, 0, 0, 1, NULL },
};

typedef struct flatline_st {
	detect_fsm fsm;
	double     last;
	int        has;
} flatline_st;

static size_t
flatline_size(const detect_rule *r)
{
	(void) r;
	return sizeof(flatline_st);
}

static void
flatline_feed(detect_ctx *c, detect_inst *in, const detect_sample *s)
{
	const detect_rule *r   = c->r;
	flatline_st       *st  = in->st;
	double             tol = detect_p(r, FL_TOLERANCE);
	int                same, tr;

	if (!isfinite(s->value))
		return;
	if (!st->has) {
		st->has  = 1;
		st->last = s->value;
		return;
	}
	same = tol == 0 ? s->value == st->last
	                : fabs(s->value - st->last) <= tol * fabs(st->last);
	if (!same)
		st->last = s->value;
	tr = detect_fsm_update(&st->fsm, same, &r->p[FL_FOR], &r->clear,
	    &r->cooldown, s->step, s->time_ns);
	if (tr == DETECT_FSM_FIRE)
		detect_emit_series(c, "flatline", r->severity, DETECT_FIRING,
		    0, s, s->value, st->last,
		    "%s has stayed at %s since step %llu (rank %d)",
		    c->s->metric, detect_fmt(s->value).s,
		    (unsigned long long) st->fsm.step0, (int) s->rank);
	else if (tr == DETECT_FSM_RESOLVE)
		detect_emit_series(c, "flatline", r->severity, DETECT_RESOLVED,
		    0, s, s->value, NAN, "%s changes again (%s) at step %llu",
		    c->s->metric, detect_fmt(s->value).s,
		    (unsigned long long) s->step);
}

static void
flatline_rollback(detect_ctx *c, detect_inst *in, const detect_sample *s,
    uint64_t prev_step, int64_t prev_time)
{
	flatline_st *st = in->st;

	(void) prev_time;
	fsm_restart(c, &st->fsm, "flatline", s, prev_step);
	st->has = 0;
}

const detect_kind detect_kind_flatline = {
	.name       = "flatline",
	.params     = fl_params,
	.nparams    = sizeof(fl_params) / sizeof(fl_params[0]),
	.severity   = DETECT_WARNING,
	.scope      = DETECT_SCOPE_SERIES,
	.state_size = flatline_size,
	.feed       = flatline_feed,
	.rollback   = flatline_rollback,
};
