/*
 * origin: a non-finite value (NaN, infinity) named where it started.
 *
 * Under data parallelism a NaN on one rank reaches every rank's gradients
 * through the all-reduce, in the same step: every rank then reports a
 * non-finite grad norm, and soon a non-finite loss. The rank it started
 * on is the one that went non-finite at the earliest step, and among
 * ranks that did at the same step, the one with the most non-finite
 * metrics there (its loss and its gradients, where the others only have
 * gradients), then the earliest sample, then the lowest rank.
 *
 * One group per (rule, run), one slot per rank: an incident opens at the
 * first non-finite sample of the run. It is decided once every rank of
 * the run has sent a sample past that step (so every rank's samples of
 * that step are in), or `settle` after it at the latest (a rank that
 * crashed). A run of one rank is decided at once. The decision is one
 * alert at the rule's severity naming the origin rank, metric and step;
 * each other rank that goes non-finite during the incident gets one
 * alert at `follower` severity (info: it joins the incident and pages
 * no one). The incident resolves when a metric that went non-finite is
 * finite again, clear_steps (1) after the last non-finite value of any
 * rank (a persistent NaN never resolves), or at a restart.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detect/detector.h"

enum { OR_SETTLE, OR_FOLLOWER, OR_CLEAR };
static const detect_param or_params[] = {
	{ "settle", DP_SECONDS, 2, DETECT_SECONDS, 0, 1e6, NULL },
	{ "follower", DP_SEVERITY, DETECT_INFO, 0, -1, 2, NULL },
	{ "clear_steps", DP_COUNT, 1, 0, 1, 1e9, NULL },
};

#define OR_METRIC_MAX 255

enum { OR_IDLE, OR_PENDING, OR_FIRED };

typedef struct or_group {
	int      state;
	uint64_t step;  /* earliest step with a non-finite value */
	int64_t  first; /* time of the first non-finite sample */
	int32_t  origin;
	uint64_t last_bad; /* latest step with a non-finite value */
} or_group;

typedef struct or_slot {
	uint64_t max_step;
	int      has;
	int      bad;      /* went non-finite in this incident */
	int      reported; /* its alert (origin or follower) is out */
	uint64_t bad_step; /* its earliest non-finite step */
	uint32_t nbad;     /* non-finite samples at bad_step */
	int64_t  bad_time;
	double   bad_value;
	uint64_t last_bad; /* its latest non-finite step */
	uint64_t ok_step;  /* its first finite `metric` after last_bad */
	int64_t  ok_time;
	int      ok;
	char     metric[OR_METRIC_MAX + 1];
} or_slot;

static size_t
or_state_size(const detect_rule *r)
{
	(void) r;
	return sizeof(or_group);
}

static size_t
or_slot_size(const detect_rule *r)
{
	(void) r;
	return sizeof(or_slot);
}

static int
or_better(const or_slot *a, int32_t ra, const or_slot *b, int32_t rb)
{
	if (a->bad_step != b->bad_step)
		return a->bad_step < b->bad_step;
	if (a->nbad != b->nbad)
		return a->nbad > b->nbad;
	if (a->bad_time != b->bad_time)
		return a->bad_time < b->bad_time;
	return ra < rb;
}

static void
follower(detect_ctx *c, detect_group *g, uint32_t i)
{
	or_group     *gs = g->state;
	or_slot      *sl = detect_slot(g, i);
	detect_origin o;

	sl->reported = 1;
	detect_origin_rank(&o, g->slot_rank[i]);
	o.metric = sl->metric;
	o.mlen   = strlen(sl->metric);
	/* An event: it joins the origin's incident and never resolves on
	 * its own (the incident resolves with the origin). */
	detect_emit(c, &o, "nonfinite", (int) detect_p(c->r, OR_FOLLOWER),
	    DETECT_FIRING, DETECT_EVENT, sl->bad_step, sl->bad_time, sl->bad_value, NAN,
	    "%s is %s at step %llu (rank %d): joins the incident that "
	    "started on rank %d at step %llu",
	    sl->metric, detect_fmt(sl->bad_value).s,
	    (unsigned long long) sl->bad_step, (int) o.rank, (int) gs->origin,
	    (unsigned long long) gs->step);
}

/* Name the origin, then the ranks that followed so far. */
static void
decide(detect_ctx *c, detect_group *g)
{
	or_group     *gs   = g->state;
	int64_t       best = -1;
	or_slot      *sl;
	detect_origin o;
	char          others[128];
	size_t        off = 0;

	for (uint32_t i = 0; i < g->nslots; i++) {
		const or_slot *x = detect_slot(g, i);

		if (x->bad
		    && (best < 0
		        || or_better(x, g->slot_rank[i]->rank,
		            detect_slot(g, (uint32_t) best),
		            g->slot_rank[best]->rank)))
			best = i;
	}
	if (best < 0)
		return;
	others[0] = '\0';
	for (uint32_t i = 0; i < g->nslots && off + 16 < sizeof(others); i++) {
		const or_slot *x = detect_slot(g, i);

		if (x->bad && i != (uint32_t) best)
			off += (size_t) snprintf(others + off,
			    sizeof(others) - off, "%s%d", off ? ", " : "",
			    (int) g->slot_rank[i]->rank);
	}
	sl           = detect_slot(g, (uint32_t) best);
	gs->state    = OR_FIRED;
	gs->origin   = g->slot_rank[best]->rank;
	gs->step     = sl->bad_step;
	sl->reported = 1;
	detect_origin_rank(&o, g->slot_rank[best]);
	o.metric = sl->metric;
	o.mlen   = strlen(sl->metric);
	detect_emit(c, &o, "nonfinite", c->r->severity, DETECT_FIRING, 0,
	    sl->bad_step, sl->bad_time, sl->bad_value, NAN,
	    "%s is %s at step %llu (rank %d), host %s: the first "
	    "non-finite value of the run%s%s%s",
	    sl->metric, detect_fmt(sl->bad_value).s,
	    (unsigned long long) sl->bad_step, (int) o.rank,
	    o.hostlen ? o.host : "unknown",
	    others[0] ? "; it spread to rank(s) " : "", others,
	    others[0] ? ", whose alerts join this one" : "");
	for (uint32_t i = 0; i < g->nslots; i++) {
		const or_slot *x = detect_slot(g, i);

		if (x->bad && !x->reported)
			follower(c, g, i);
	}
}

static void
or_reset(detect_group *g)
{
	or_group *gs = g->state;

	gs->state = OR_IDLE;
	for (uint32_t i = 0; i < g->nslots; i++) {
		or_slot *x = detect_slot(g, i);

		x->bad = x->reported = x->ok = 0;
	}
}

static void
or_resolve(
    detect_ctx *c, detect_group *g, uint64_t step, int64_t t, const char *why)
{
	or_group     *gs = g->state;
	detect_origin o;

	if (gs->state == OR_FIRED) {
		for (uint32_t i = 0; i < g->nslots; i++)
			if (g->slot_rank[i]->rank == gs->origin) {
				const or_slot *x = detect_slot(g, i);

				detect_origin_rank(&o, g->slot_rank[i]);
				o.metric = x->metric;
				o.mlen   = strlen(x->metric);
				detect_emit(c, &o, "nonfinite", c->r->severity,
				    DETECT_RESOLVED, 0, step, t, NAN, NAN,
				    "the non-finite incident that started on "
				    "rank %d at step %llu is over: %s",
				    (int) gs->origin,
				    (unsigned long long) gs->step, why);
				break;
			}
	}
	or_reset(g);
}

/* Resolve once a metric that went non-finite is finite again
 * clear_steps after the run's last non-finite value. Judged from what
 * the ranks recorded, so the order in which ranks' samples arrive does
 * not change the step it resolves at. */
static void
maybe_resolve(detect_ctx *c, detect_group *g)
{
	or_group      *gs   = g->state;
	const or_slot *best = NULL;
	char           why[80];

	for (uint32_t i = 0; i < g->nslots; i++) {
		const or_slot *x = detect_slot(g, i);

		if (x->bad && x->ok
		    && x->ok_step
		        >= gs->last_bad + (uint64_t) detect_p(c->r, OR_CLEAR)
		    && (best == NULL || x->ok_step < best->ok_step
		        || (x->ok_step == best->ok_step
		            && x->ok_time < best->ok_time)))
			best = x;
	}
	if (best == NULL)
		return;
	snprintf(why, sizeof(why),
	    "no rank sent a non-finite value since step %llu",
	    (unsigned long long) gs->last_bad);
	or_resolve(c, g, best->ok_step, best->ok_time, why);
}

static void
or_feed(detect_ctx *c, detect_inst *in, const detect_sample *s)
{
	detect_group *g  = in->g;
	or_group     *gs = g->state;
	or_slot      *sl = detect_slot(g, in->slot);
	int           all;

	if (!sl->has || s->step > sl->max_step)
		sl->max_step = s->step;
	sl->has = 1;
	if (!isfinite(s->value)) {
		if (gs->state == OR_IDLE) {
			gs->state    = OR_PENDING;
			gs->step     = s->step;
			gs->first    = s->time_ns;
			gs->last_bad = s->step;
		}
		if (s->step > gs->last_bad)
			gs->last_bad = s->step;
		if (!sl->bad || s->step < sl->bad_step) {
			size_t n = s->mlen < OR_METRIC_MAX ? s->mlen
			                                   : OR_METRIC_MAX;

			if (!sl->bad)
				sl->last_bad = s->step;
			sl->bad       = 1;
			sl->bad_step  = s->step;
			sl->nbad      = 0;
			sl->bad_time  = s->time_ns;
			sl->bad_value = s->value;
			memcpy(sl->metric, s->metric, n);
			sl->metric[n] = '\0';
		}
		if (s->step == sl->bad_step)
			sl->nbad++;
		if (s->step >= sl->last_bad) {
			sl->last_bad = s->step;
			sl->ok       = 0;
		}
		if (gs->state == OR_PENDING && s->step < gs->step)
			gs->step = s->step;
		if (gs->state == OR_FIRED && !sl->reported)
			follower(c, g, in->slot);
	} else if (sl->bad && !sl->ok && s->step > sl->last_bad
	    && s->mlen == strlen(sl->metric)
	    && memcmp(s->metric, sl->metric, s->mlen) == 0) {
		sl->ok      = 1;
		sl->ok_step = s->step;
		sl->ok_time = s->time_ns;
		/* Only a metric becoming finite can end the incident. */
		if (gs->state == OR_FIRED)
			maybe_resolve(c, g);
	}
	if (gs->state != OR_PENDING)
		return;
	/* Decided when every rank has passed the step (or a lone rank). */
	all = 1;
	for (uint32_t i = 0; i < g->nslots && all; i++) {
		const or_slot *x = detect_slot(g, i);

		all = x->has && x->max_step > gs->step;
	}
	if (all || g->nslots == 1) {
		decide(c, g);
		maybe_resolve(c, g);
	}
}

static void
or_tick(detect_ctx *c, detect_group *g, int64_t now)
{
	or_group *gs = g->state;

	if (gs->state == OR_PENDING
	    && now - gs->first
	        >= (int64_t) (detect_p(c->r, OR_SETTLE) * 1e9)) {
		decide(c, g);
		maybe_resolve(c, g);
	}
}

static void
or_rollback(detect_ctx *c, detect_inst *in, const detect_sample *s,
    uint64_t prev_step, int64_t prev_time)
{
	detect_group *g  = in->g;
	or_group     *gs = g->state;
	or_slot      *sl = detect_slot(g, in->slot);

	(void) prev_time;
	sl->max_step = s->step;
	if (gs->state == OR_IDLE)
		return;
	if (gs->state == OR_PENDING)
		decide(c, g);
	if (gs->state == OR_FIRED) {
		char why[64];

		snprintf(why, sizeof(why),
		    "the run restarted at step %llu (from step %llu)",
		    (unsigned long long) s->step,
		    (unsigned long long) prev_step);
		or_resolve(c, g, s->step, s->time_ns, why);
	}
}

const detect_kind detect_kind_nonfinite_origin = {
	.name       = "nonfinite_origin",
	.params     = or_params,
	.nparams    = sizeof(or_params) / sizeof(or_params[0]),
	.severity   = DETECT_CRITICAL,
	.scope      = DETECT_SCOPE_RUN,
	.state_size = or_state_size,
	.slot_size  = or_slot_size,
	.feed       = or_feed,
	.rollback   = or_rollback,
	.tick       = or_tick,
};
