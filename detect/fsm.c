#include "detect/fsm.h"

#include <math.h>

int
detect_span_reached(const detect_span *sp, uint32_t n, int64_t t0, int64_t t)
{
	if (sp->unit == DETECT_SECONDS)
		return n >= 1 && (double) (t - t0) >= sp->v * 1e9;
	return (double) n >= (sp->v < 1 ? 1 : sp->v);
}

static int
quiet(const detect_fsm *f, int64_t t)
{
	return f->quiet_n > 0 || (f->quiet_end != 0 && t < f->quiet_end);
}

int
detect_fsm_update(detect_fsm *f, int cond, const detect_span *hold,
    const detect_span *clear, const detect_span *cooldown, uint64_t step,
    int64_t t)
{
	if (f->quiet_n > 0)
		f->quiet_n--;
	switch (f->state) {
	case DETECT_FSM_CLEAR:
		if (!cond)
			return DETECT_FSM_NONE;
		f->state = DETECT_FSM_PENDING;
		f->n     = 0;
		f->t0    = t;
		f->step0 = step;
		/* fall through */
	case DETECT_FSM_PENDING:
		if (!cond) {
			f->state = DETECT_FSM_CLEAR;
			return DETECT_FSM_NONE;
		}
		f->n++;
		if (!detect_span_reached(hold, f->n, f->t0, t) || quiet(f, t))
			return DETECT_FSM_NONE;
		f->state = DETECT_FSM_FIRING;
		f->n     = 0;
		return DETECT_FSM_FIRE;
	default:
		if (cond) {
			f->n = 0;
			return DETECT_FSM_NONE;
		}
		if (f->n++ == 0)
			f->t0 = t;
		if (!detect_span_reached(clear, f->n, f->t0, t))
			return DETECT_FSM_NONE;
		f->state     = DETECT_FSM_CLEAR;
		f->n         = 0;
		f->quiet_n   = 0;
		f->quiet_end = 0;
		if (cooldown->unit == DETECT_SECONDS)
			f->quiet_end
			    = t + (int64_t) fmin(cooldown->v * 1e9, 4e18);
		else
			f->quiet_n = (uint32_t) cooldown->v;
		return DETECT_FSM_RESOLVE;
	}
}

void
detect_fsm_reset(detect_fsm *f)
{
	f->state = DETECT_FSM_CLEAR;
	f->n     = 0;
}
