/*
 * restart: a step that goes back in a series means the job restarted from
 * a checkpoint. One info event per restart of a run (not one per series
 * or rank): it names the step resumed from, the furthest step the
 * attempt had reached and the steps lost between them.
 *
 * The other detectors learn of the restart through their own rollback
 * hook and reset what a restart makes stale.
 */
#include <string.h>

#include "detect/detector.h"

typedef struct restart_st {
	uint64_t furthest;     /* furthest step of the current attempt */
	int64_t  restart_time; /* first sample time of the current attempt */
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
	st->has = 1;
}

static void
restart_rollback(detect_ctx *c, detect_inst *in, const detect_sample *s,
    uint64_t prev_step, int64_t prev_time)
{
	restart_st   *st = in->g->state;
	detect_origin o;
	uint64_t      lost;

	/* A series that had not yet seen the current attempt rolls back
	 * into it: that restart was already reported. */
	if (st->restarts > 0 && prev_time < st->restart_time)
		return;
	if (prev_step > st->furthest)
		st->furthest = prev_step;
	lost = st->furthest - s->step;
	st->restarts++;
	detect_origin_rank(&o, c->s->rk);
	detect_emit(c, &o, "restart", c->r->severity, DETECT_RESOLVED,
	    DETECT_EVENT, s->step, s->time_ns, (double) lost,
	    (double) st->furthest,
	    "run %s restarted from step %llu (seen first on rank %d); it had "
	    "reached step %llu: %llu steps lost (restart %u)",
	    detect_name_of(o.run, o.runlen).s, (unsigned long long) s->step,
	    (int) o.rank, (unsigned long long) st->furthest,
	    (unsigned long long) lost, st->restarts);
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
