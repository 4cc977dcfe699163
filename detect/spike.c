/*
 * spike: a jump against a robust baseline that follows the trend.
 *
 * Positive series are watched in log space (a loss falling as a power law
 * has noise proportional to its level, which log space makes constant);
 * a series that has a value <= 0 is watched as it is. The baseline is a
 * Huber-clipped EWMA of the level (half-life `halflife` samples) with a
 * scale that follows the clipped absolute residual, seeded by the median
 * and MAD of the first 8 samples.
 *
 * A sample is anomalous when its deviation in the watched direction is at
 * least z scales and at least `ratio` times the baseline. An anomalous
 * sample opens an episode and freezes the baseline:
 *   - clear again before `for` anomalous samples: a blip, reported once
 *     (severity `blip`, info by default) with the steps it took to
 *     recover;
 *   - `for` anomalous samples: a spike (the rule's severity) fires;
 *   - still growing (a run of `rising` new highs, each clearing the last
 *     by a scale and at most two samples after it, the latest at this
 *     sample, and `growth` times the deviation it started with): a
 *     divergence (severity `divergence`, critical);
 *   - clear for `clear`: resolved, with the steps it took to recover;
 *   - lasting `adapt` samples: its level is taken as the new baseline.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "detect/baseline.h"
#include "detect/detector.h"
#include "detect/fsm.h"

enum {
	SP_DIRECTION,
	SP_Z,
	SP_RATIO,
	SP_FOR,
	SP_WARMUP,
	SP_HALFLIFE,
	SP_BLIP,
	SP_DIVERGENCE,
	SP_GROWTH,
	SP_RISING,
	SP_ADAPT,
	SP_CLIMB,
	SP_PERSIST
};
static const char *const  sp_dirs[]   = { "up", "down", "both", NULL };
static const detect_param sp_params[] = {
	{ "direction", DP_ENUM, 0, 0, 0, 2, sp_dirs },
	{ "z", DP_NUM, 6, 0, 1, 1e6, NULL },
	{ "ratio", DP_NUM, 1.25, 0, 1, 1e6, NULL },
	{ "for", DP_COUNT, 2, 0, 1, 1000, NULL },
	{ "warmup", DP_COUNT, 20, 0, 8, 1e6, NULL },
	{ "halflife", DP_NUM, 10, 0, 1, 1e6, NULL },
	{ "blip", DP_SEVERITY, DETECT_INFO, 0, -1, 2, NULL },
	{ "divergence", DP_SEVERITY, DETECT_CRITICAL, 0, -1, 2, NULL },
	{ "growth", DP_NUM, 2, 0, 1, 1e6, NULL },
	{ "rising", DP_COUNT, 5, 0, 1, 1000, NULL },
	{ "adapt", DP_COUNT, 500, 0, 0, 1e9, NULL },
	{ "climb", DP_NUM, 0, 0, 0, 1e6, NULL },
	{ "persist", DP_COUNT, 100, 0, 0, 1e9, NULL },
};

#define NSEED 8

enum { MODE_NONE, MODE_LOG, MODE_LIN };
enum { EP_NONE, EP_PENDING, EP_SPIKE, EP_DIVERGENCE };

typedef struct spike_st {
	uint8_t    mode, ep;
	uint32_t   n; /* samples since the baseline was (re)seeded */
	uint32_t   nseed;
	double     seed[NSEED];
	detect_ewm m;
	/* the episode */
	uint64_t on_step;
	int64_t  on_time;
	double   on_value, on_dev, on_base, peak;
	uint32_t count, len, rises, last_rise, clear_n;
	uint8_t  escalated; /* not recovered after `persist` samples */
	int64_t  clear_t0;
	/* cooldown */
	uint32_t quiet_n;
	int64_t  quiet_end;
	/* slow divergence (`climb`): the lowest baseline since seeding */
	double   best;
	int      has_best, climbing;
	uint64_t best_step;
} spike_st;

static size_t
spike_size(const detect_rule *r)
{
	(void) r;
	return sizeof(spike_st);
}

static double
scale_floor(const spike_st *st)
{
	return st->mode == MODE_LOG ? 0.002 : 1e-3 * fabs(st->m.level) + 1e-12;
}

static double
to_y(const spike_st *st, double v)
{
	return st->mode == MODE_LOG ? log(v) : v;
}

static double
to_v(const spike_st *st, double y)
{
	return st->mode == MODE_LOG ? exp(y) : y;
}

/* Deviation in the watched direction, and the threshold it must reach. */
static double
deviation(const detect_rule *r, const spike_st *st, double y)
{
	double d   = y - st->m.level;
	int    dir = (int) detect_p(r, SP_DIRECTION);

	return dir == 0 ? d : dir == 1 ? -d : fabs(d);
}

static double
threshold(const detect_rule *r, const spike_st *st)
{
	double z = detect_p(r, SP_Z) * st->m.scale;
	double q = st->mode == MODE_LOG
	    ? log(detect_p(r, SP_RATIO))
	    : (detect_p(r, SP_RATIO) - 1) * fabs(st->m.level);

	return z > q ? z : q;
}

/* "3.1x its baseline 2.33" or "+0.42 from its baseline 1.2" */
typedef struct rel_txt {
	char s[96];
} rel_txt;

static rel_txt
rel(const spike_st *st, double v, double base)
{
	rel_txt t;

	if (st->mode == MODE_LOG)
		snprintf(t.s, sizeof(t.s), "%sx its baseline %s",
		    detect_fmt(v / base).s, detect_fmt(base).s);
	else
		snprintf(t.s, sizeof(t.s), "%s%s from its baseline %s",
		    v >= base ? "+" : "", detect_fmt(v - base).s,
		    detect_fmt(base).s);
	return t;
}

static void
reseed(spike_st *st)
{
	st->n        = 0;
	st->nseed    = 0;
	st->ep       = EP_NONE;
	st->has_best = 0;
}

/*
 * A slow divergence: the baseline (which follows a slow climb, since no
 * single sample is a jump) rises `climb` times above its own trailing
 * best (log space: the lowest baseline since it was seeded). Critical at
 * the `divergence` severity; resolves at half the climb.
 */
static void
climb_check(detect_ctx *c, spike_st *st, const detect_sample *s)
{
	const detect_rule *r = c->r;
	double             lc;

	if (detect_p(r, SP_CLIMB) <= 1 || st->mode != MODE_LOG
	    || detect_p(r, SP_DIRECTION) != 0
	    || st->n < detect_p(r, SP_WARMUP))
		return;
	if (!st->has_best || st->m.level < st->best) {
		st->best      = st->m.level;
		st->best_step = s->step;
		st->has_best  = 1;
	}
	lc = log(detect_p(r, SP_CLIMB));
	if (!st->climbing && st->m.level - st->best >= lc) {
		st->climbing = 1;
		detect_emit_series(c, "divergence",
		    (int) detect_p(r, SP_DIVERGENCE), DETECT_FIRING, 0, s,
		    s->value, exp(st->best),
		    "%s is climbing: its baseline %s at step %llu is %sx its "
		    "best %s (step %llu), without a jump (rank %d)",
		    c->s->metric, detect_fmt(exp(st->m.level)).s,
		    (unsigned long long) s->step,
		    detect_fmt(exp(st->m.level - st->best)).s,
		    detect_fmt(exp(st->best)).s,
		    (unsigned long long) st->best_step, (int) s->rank);
	} else if (st->climbing && st->m.level - st->best < lc / 2) {
		st->climbing = 0;
		detect_emit_series(c, "divergence",
		    (int) detect_p(r, SP_DIVERGENCE), DETECT_RESOLVED, 0, s,
		    s->value, exp(st->best),
		    "%s baseline %s is back within %sx of its best %s at step "
		    "%llu",
		    c->s->metric, detect_fmt(exp(st->m.level)).s,
		    detect_fmt(exp(lc / 2)).s, detect_fmt(exp(st->best)).s,
		    (unsigned long long) s->step);
	}
}

static void
end_episode(detect_ctx *c, spike_st *st, const detect_sample *s)
{
	st->ep        = EP_NONE;
	st->quiet_n   = 0;
	st->quiet_end = 0;
	if (c->r->cooldown.unit == DETECT_SECONDS)
		st->quiet_end = s->time_ns
		    + (int64_t) fmin(c->r->cooldown.v * 1e9, 4e18);
	else
		st->quiet_n = (uint32_t) c->r->cooldown.v;
}

static void
episode(detect_ctx *c, spike_st *st, const detect_sample *s, double dev,
    double thr)
{
	const detect_rule *r         = c->r;
	unsigned long long on        = (unsigned long long) st->on_step;
	int                anomalous = dev >= thr;

	st->len++;
	if (dev < 0.5 * thr) {
		if (st->ep == EP_PENDING) {
			{
				detect_origin o;

				detect_origin_series(&o, c->s);
				detect_emit(c, &o, "blip",
				    (int) detect_p(r, SP_BLIP),
				    DETECT_RESOLVED, DETECT_EVENT, st->on_step,
				    st->on_time, st->on_value, st->on_base,
				    "%s %s at step %llu was %s (rank %d); "
				    "recovered after %llu step%s",
				    c->s->metric, detect_fmt(st->on_value).s,
				    on, rel(st, st->on_value, st->on_base).s,
				    (int) s->rank,
				    (unsigned long long) (s->step
				        - st->on_step),
				    s->step - st->on_step == 1 ? "" : "s");
			}
			st->ep = EP_NONE; /* blips do not start a cooldown */
			return;
		}
		if (st->clear_n++ == 0)
			st->clear_t0 = s->time_ns;
		if (!detect_span_reached(
		        &r->clear, st->clear_n, st->clear_t0, s->time_ns))
			return;
		detect_emit_series(c,
		    st->ep == EP_DIVERGENCE ? "divergence" : "spike",
		    st->ep == EP_DIVERGENCE ? (int) detect_p(r, SP_DIVERGENCE)
		                            : r->severity,
		    DETECT_RESOLVED, 0, s, s->value, st->on_base,
		    "%s %s is back near its baseline %s at step %llu; "
		    "recovered after %llu steps (peak %s)",
		    c->s->metric, detect_fmt(s->value).s,
		    detect_fmt(st->on_base).s, (unsigned long long) s->step,
		    (unsigned long long) (s->step - st->on_step),
		    detect_fmt(
		        to_v(st,
		            st->m.level
		                + (detect_p(r, SP_DIRECTION) == 1 ? -st->peak
		                                                  : st->peak)))
		        .s);
		end_episode(c, st, s);
		return;
	}
	st->clear_n = 0;
	if (anomalous)
		st->count++;
	/* A new high counts towards a divergence only when it clears the
	 * old one by a scale: noise around a plateau does not. */
	if (dev > st->peak) {
		if (dev >= st->peak + st->m.scale) {
			/* A run of new highs: at most one sample between
			 * two of them. */
			if (st->len - st->last_rise > 2)
				st->rises = 0;
			st->rises++;
			st->last_rise = st->len;
		}
		st->peak = dev;
	}
	/* A spike that does not recover is worth a page. */
	if (st->ep == EP_SPIKE && !st->escalated && detect_p(r, SP_PERSIST) > 0
	    && st->len >= detect_p(r, SP_PERSIST)) {
		st->escalated = 1;
		detect_emit_series(c, "spike",
		    (int) detect_p(r, SP_DIVERGENCE), DETECT_FIRING, 0, s,
		    s->value, st->on_base,
		    "%s %s at step %llu is still %s: not recovered %u steps "
		    "after step %llu (rank %d)",
		    c->s->metric, detect_fmt(s->value).s,
		    (unsigned long long) s->step,
		    rel(st, s->value, st->on_base).s, st->len, on,
		    (int) s->rank);
	}
	if (st->ep == EP_PENDING && st->count >= detect_p(r, SP_FOR)) {
		st->ep = EP_SPIKE;
		detect_emit_series(c, "spike", r->severity, DETECT_FIRING, 0,
		    s, s->value, st->on_base,
		    "%s %s at step %llu is %s since step %llu (rank %d)",
		    c->s->metric, detect_fmt(s->value).s,
		    (unsigned long long) s->step,
		    rel(st, s->value, st->on_base).s, on, (int) s->rank);
	}
	if (st->ep != EP_DIVERGENCE && anomalous
	    && st->rises >= detect_p(r, SP_RISING) && st->last_rise == st->len
	    && (st->mode == MODE_LOG
	            ? dev - st->on_dev >= log(detect_p(r, SP_GROWTH))
	            : dev >= st->on_dev * detect_p(r, SP_GROWTH))) {
		st->ep = EP_DIVERGENCE;
		detect_emit_series(c, "divergence",
		    (int) detect_p(r, SP_DIVERGENCE), DETECT_FIRING, 0, s,
		    s->value, st->on_base,
		    "%s %s at step %llu is %s and still growing since step "
		    "%llu (rank %d)",
		    c->s->metric, detect_fmt(s->value).s,
		    (unsigned long long) s->step,
		    rel(st, s->value, st->on_base).s, on, (int) s->rank);
	}
	if (detect_p(r, SP_ADAPT) > 0 && st->len >= detect_p(r, SP_ADAPT)) {
		if (st->ep == EP_SPIKE || st->ep == EP_DIVERGENCE)
			detect_emit_series(c,
			    st->ep == EP_SPIKE ? "spike" : "divergence",
			    st->ep == EP_SPIKE
			        ? r->severity
			        : (int) detect_p(r, SP_DIVERGENCE),
			    DETECT_RESOLVED, 0, s, s->value, st->on_base,
			    "%s has stayed away from its baseline %s for %u "
			    "samples since step %llu: taken as its new level",
			    c->s->metric, detect_fmt(st->on_base).s, st->len,
			    on);
		st->m.level = to_y(st, s->value);
		end_episode(c, st, s);
	}
}

static void
spike_feed(detect_ctx *c, detect_inst *in, const detect_sample *s)
{
	const detect_rule *r  = c->r;
	spike_st          *st = in->st;
	double             y, dev, thr, alpha;

	if (!isfinite(s->value))
		return;
	if (st->mode == MODE_NONE)
		st->mode = s->value > 0 ? MODE_LOG : MODE_LIN;
	if (st->mode == MODE_LOG && s->value <= 0) {
		st->mode = MODE_LIN; /* not a positive series after all */
		reseed(st);
	}
	y = to_y(st, s->value);
	if (st->nseed < NSEED) {
		double tmp[NSEED], med;

		st->seed[st->nseed++] = y;
		st->n++;
		if (st->nseed < NSEED)
			return;
		memcpy(tmp, st->seed, sizeof(tmp));
		med = detect_median_small(tmp, NSEED);
		for (int i = 0; i < NSEED; i++)
			tmp[i] = fabs(st->seed[i] - med);
		st->m.level = med;
		/* Keep a scale learned before a restart. */
		if (st->m.scale == 0)
			st->m.scale = 1.4826 * detect_median_small(tmp, NSEED);
		if (st->m.scale < scale_floor(st))
			st->m.scale = scale_floor(st);
		return;
	}
	dev = deviation(r, st, y);
	thr = threshold(r, st);
	if (st->ep != EP_NONE) {
		episode(c, st, s, dev, thr);
		return;
	}
	if (st->quiet_n > 0)
		st->quiet_n--;
	if (dev >= thr && st->n >= detect_p(r, SP_WARMUP) && st->quiet_n == 0
	    && (st->quiet_end == 0 || s->time_ns >= st->quiet_end)) {
		st->ep        = EP_PENDING;
		st->on_step   = s->step;
		st->on_time   = s->time_ns;
		st->on_value  = s->value;
		st->on_base   = to_v(st, st->m.level);
		st->on_dev    = dev;
		st->peak      = dev;
		st->count     = 0;
		st->escalated = 0;
		st->len       = 0;
		st->rises     = 0;
		st->last_rise = 0;
		st->clear_n   = 0;
		episode(c, st, s, dev, thr);
		return;
	}
	st->n++;
	alpha = detect_alpha(detect_p(r, SP_HALFLIFE));
	detect_ewm_update(&st->m, y, alpha, alpha / 4, scale_floor(st));
	climb_check(c, st, s);
}

static void
spike_rollback(detect_ctx *c, detect_inst *in, const detect_sample *s,
    uint64_t prev_step, int64_t prev_time)
{
	spike_st *st = in->st;

	(void) prev_time;
	if (st->ep == EP_SPIKE || st->ep == EP_DIVERGENCE)
		detect_emit_series(c,
		    st->ep == EP_SPIKE ? "spike" : "divergence",
		    st->ep == EP_SPIKE ? c->r->severity
		                       : (int) detect_p(c->r, SP_DIVERGENCE),
		    DETECT_RESOLVED, 0, s, s->value, st->on_base,
		    "the run restarted at step %llu (from step %llu)",
		    (unsigned long long) s->step,
		    (unsigned long long) prev_step);
	if (st->climbing)
		detect_emit_series(c, "divergence",
		    (int) detect_p(c->r, SP_DIVERGENCE), DETECT_RESOLVED, 0, s,
		    s->value, exp(st->best),
		    "the run restarted at step %llu (from step %llu)",
		    (unsigned long long) s->step,
		    (unsigned long long) prev_step);
	st->climbing = 0;
	/* The level after a restart is the checkpoint's, not the furthest
	 * step's: seed it again, keep the scale, and watch again as soon as
	 * it is seeded. */
	reseed(st);
	st->n = (uint32_t) detect_p(c->r, SP_WARMUP);
	if (st->n > NSEED)
		st->n -= NSEED;
}

const detect_kind detect_kind_spike = {
	.name       = "spike",
	.params     = sp_params,
	.nparams    = sizeof(sp_params) / sizeof(sp_params[0]),
	.severity   = DETECT_WARNING,
	.scope      = DETECT_SCOPE_SERIES,
	.state_size = spike_size,
	.feed       = spike_feed,
	.rollback   = spike_rollback,
};
