/*
 * restart: a step that goes back in a series means the job restarted from
 * a checkpoint. One info alert per restart of a run (not one per series
 * or rank), firing at the moment steps go back: it names the step resumed
 * from (the rollback point), the furthest step the attempt had reached,
 * the steps lost between them and the downtime (from the run's last
 * sample before to the first after). It resolves at once; the engine's
 * hold keeps it firing for a while.
 *
 * The other detectors learn of the restart through their own rollback
 * hook and reset what a restart makes stale.
 */
#include <string.h>

#include "detect/detector.h"

typedef struct restart_st {
	uint64_t furthest;     /* furthest step of the current attempt */
	int64_t  restart_time; /* first sample time of the current attempt */
	int64_t  last_time;    /* the run's latest sample time */
	uint32_t restarts;
	int      has;
} restart_st;

static size_t
restart_size(const detect_rule *r)
{
	(void) r;
	return sizeof(restart_st);
}

static void
restart_feed(detect_ctx *c, detect_inst *in, const detect_sample *s)
{
	restart_st *st = in->g->state;

	(void) c;
	if (!st->has || s->step > st->furthest)
		st->furthest = s->step;
	if (s->time_ns > st->last_time)
		st->last_time = s->time_ns;
	st->has = 1;
}

static void
restart_rollback(detect_ctx *c, detect_inst *in, const detect_sample *s,
    uint64_t prev_step, int64_t prev_time)
{
	restart_st   *st = in->g->state;
	detect_origin o;
	uint64_t      lost;
	double        down;

	/* A series that had not yet seen the current attempt rolls back
	 * into it: that restart was already reported. */
	if (st->restarts > 0 && prev_time < st->restart_time)
		return;
	if (prev_step > st->furthest)
		st->furthest = prev_step;
	lost = st->furthest - s->step;
	down = s->time_ns > st->last_time
	    ? (double) (s->time_ns - st->last_time) / 1e9
	    : 0;
	st->restarts++;
	detect_origin_rank(&o, c->s->rk);
	detect_emit(c, &o, "restart", c->r->severity, DETECT_FIRING, 0,
	    s->step, s->time_ns, (double) lost, (double) st->furthest,
	    "run %s restarted from step %llu (seen first on rank %d); it had "
	    "reached step %llu: %llu steps lost, %s s down (restart %u)",
	    detect_name_of(o.run, o.runlen).s, (unsigned long long) s->step,
	    (int) o.rank, (unsigned long long) st->furthest,
	    (unsigned long long) lost, detect_fmt(down).s, st->restarts);
	detect_emit(c, &o, "restart", c->r->severity, DETECT_RESOLVED, 0,
	    s->step, s->time_ns, (double) lost, (double) st->furthest,
	    "run %s runs again from step %llu after %s s down",
	    detect_name_of(o.run, o.runlen).s, (unsigned long long) s->step,
	    detect_fmt(down).s);
	st->furthest     = s->step;
	st->restart_time = s->time_ns;
}

const detect_kind detect_kind_restart = {
	.name       = "restart",
	.severity   = DETECT_INFO,
	.scope      = DETECT_SCOPE_RUN,
	.state_size = restart_size,
	.feed       = restart_feed,
	.rollback   = restart_rollback,
};
