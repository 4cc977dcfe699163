/*
 * fsm: the firing controls shared by detectors. A condition must hold for
 * `for` (samples or seconds) to fire, must be clear for `clear` to
 * resolve, and after resolving the alert stays quiet for `cooldown`.
 */
#ifndef DETECT_FSM_H
#define DETECT_FSM_H

#include <stdint.h>

#include "detect/rules.h"

enum { DETECT_FSM_CLEAR, DETECT_FSM_PENDING, DETECT_FSM_FIRING };
enum { DETECT_FSM_NONE, DETECT_FSM_FIRE, DETECT_FSM_RESOLVE };

typedef struct detect_fsm {
	uint8_t  state;
	uint32_t n;         /* samples in the current run of cond (pending)
	                     * or of !cond (firing) */
	int64_t  t0;        /* time of the first sample of that run */
	uint64_t step0;     /* its step */
	uint32_t quiet_n;   /* cooldown samples left */
	int64_t  quiet_end; /* cooldown end (ns), 0: none */
} detect_fsm;

/* Whether a span has passed: n samples counted, or seconds since t0. */
int detect_span_reached(
    const detect_span *sp, uint32_t n, int64_t t0, int64_t t);

/*
 * Feed one sample's condition. Returns DETECT_FSM_FIRE when the alert
 * starts firing, DETECT_FSM_RESOLVE when it resolves, else
 * DETECT_FSM_NONE. f->step0 and f->t0 say since when it held.
 */
int detect_fsm_update(detect_fsm *f, int cond, const detect_span *hold,
    const detect_span *clear, const detect_span *cooldown, uint64_t step,
    int64_t t);

/* Forget any pending or firing state (a restart); cooldown is kept. */
void detect_fsm_reset(detect_fsm *f);

#endif /* DETECT_FSM_H */
