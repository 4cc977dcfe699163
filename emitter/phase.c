/*
 * phase: per-step phase times on the I/O thread (see phase.h).
 *
 * Accounting: the time between two markers belongs to the phase the rank
 * was in, and to the step of the earlier marker. When a marker carries a
 * step other than the one being added up, that step is closed: one
 * phase_time/NAME sample (ms, at the closed step, stamped with the time
 * of the marker that closed it) for each phase the rank was in during
 * it. The last step of a run is closed only if a marker of a later step
 * comes; a step during which a rank hangs is never closed (the collector
 * sees the hang from the markers themselves).
 */
#include "emitter/phase.h"

#include <string.h>

#include "vitals.h"

void
vte_phase_init(vte_phase *p, vte_names *names)
{
	memset(p, 0, sizeof(*p));
	p->names = names;
	p->cur   = -1;
}

/* The accumulator of marker id, added if new; -1 if the table is full.
 * The derived name is interned here (a rare path: once per phase); if
 * that fails the phase is followed but no time is sent for it. */
static int
find(vte_phase *p, uint32_t id)
{
	const vte_name *nm;
	char            buf[VT_NAME_MAX + 1];
	size_t          len;
	uint32_t        tid;

	for (uint32_t i = 0; i < p->n; i++)
		if (p->ph[i].marker == id)
			return (int) i;
	if (p->n == VTE_PHASE_MAX)
		return -1;
	nm  = vte_names_get(p->names, id);
	len = nm->len - VTE_PHASE_PREFIX_LEN + VTE_PHASE_TIME_PREFIX_LEN;
	p->ph[p->n].marker = id;
	p->ph[p->n].time   = -1;
	if (nm->len > VTE_PHASE_PREFIX_LEN && len <= VT_NAME_MAX) {
		memcpy(buf, VTE_PHASE_TIME_PREFIX, VTE_PHASE_TIME_PREFIX_LEN);
		memcpy(buf + VTE_PHASE_TIME_PREFIX_LEN,
		    nm->str + VTE_PHASE_PREFIX_LEN,
		    nm->len - VTE_PHASE_PREFIX_LEN);
		buf[len] = '\0';
		if (vte_names_intern(
		        p->names, buf, len, vte_names_hash(buf, len), &tid)
		    == 0)
			p->ph[p->n].time = (int32_t) tid;
	}
	return (int) p->n++;
}

/* Queue the times of the step being added up, then start the next. */
static void
close_step(vte_phase *p, int64_t t)
{
	for (uint32_t i = 0; i < p->n; i++) {
		vte_phase_acc *a = &p->ph[i];

		if (a->seen && a->time >= 0 && p->nout < VTE_PHASE_MAX) {
			vte_ring_slot *o = &p->out[p->nout++];

			o->name  = (uint32_t) a->time | VTE_RING_DERIVED;
			o->step  = p->step;
			o->time  = t;
			o->value = (double) a->ns / 1e6;
		}
		a->ns = 0;
		/* The phase the rank is in goes on in the next step. */
		a->seen = (int) i == p->cur;
	}
}

uint64_t
vte_phase_marker(
    vte_phase *p, uint32_t id, uint64_t step, int64_t t, double value)
{
	int i;

	if (step == VT_STEP_LATEST)
		step = p->latest;
	if (p->has) {
		if (p->cur >= 0 && t > p->since)
			p->ph[p->cur].ns += t - p->since;
		if (step != p->step)
			close_step(p, t);
	}
	p->has   = 1;
	p->step  = step;
	p->since = t;
	i        = find(p, id);
	if (value != 0) {
		p->cur = i;
		if (i >= 0)
			p->ph[i].seen = 1;
	} else if (i >= 0 && p->cur == i) {
		p->cur = -1;
	}
	return step;
}
