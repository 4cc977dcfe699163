/*
 * phase: per-step time spent in each phase, computed on the I/O thread
 * from the phase markers (docs/protocol.md, "Phase markers").
 *
 * A marker is an ordinary sample of the reserved metric
 * `vitals/phase/NAME` (value 1: the rank enters NAME, leaving the phase it
 * was in; 0: it leaves NAME). The producer flags its ring slot with
 * VTE_RING_PHASE so that the I/O thread recognises it without a lookup.
 * The I/O thread sees every marker of the emitter in ring order with its
 * time, so it can add up, per step, how long the rank stayed in each phase
 * and stage one derived sample `phase_time/NAME` (ms) per phase seen in a
 * step when the next step's first marker arrives. Doing it here rather
 * than in the collector: one process, one clock, markers already in order
 * and never duplicated (the collector sees resent batches and would need
 * per-incarnation state across reconnects), and the derived series are
 * stored, queried, replayed and checked like any other.
 *
 * I/O thread only, except for the flags, which producers set.
 */
#ifndef VTE_PHASE_H
#define VTE_PHASE_H

#include <stdint.h>

#include "emitter/names.h"
#include "emitter/ring.h"

#pragma GCC visibility push(hidden)

/* Ring slot flags beside VTE_RING_TICKS: a phase marker, and a sample
 * made by the I/O thread itself (phase_time/...). Name ids fit 16 bits. */
#define VTE_RING_PHASE 0x40000000u
#define VTE_RING_DERIVED 0x20000000u
#define VTE_RING_ID 0x0000ffffu

#define VTE_PHASE_PREFIX "vitals/phase/"
#define VTE_PHASE_PREFIX_LEN 13
#define VTE_PHASE_TIME_PREFIX "phase_time/"
#define VTE_PHASE_TIME_PREFIX_LEN 11
/* Distinct phases accounted per emitter; markers of further phases are
 * still sent, their time is not added up. */
#define VTE_PHASE_MAX 32

typedef struct vte_phase_acc {
	uint32_t marker; /* name id of vitals/phase/NAME */
	int32_t  time;   /* name id of phase_time/NAME, -1 if unavailable */
	int64_t  ns;     /* time in it during the current step */
	int      seen;   /* entered (or in it) during the current step */
} vte_phase_acc;

typedef struct vte_phase {
	vte_names    *names;
	uint64_t      latest; /* step of the latest ordinary sample */
	uint64_t      step;   /* the step being added up */
	int64_t       since;  /* when the current phase was entered */
	int           has;    /* a marker was seen */
	int           cur;    /* index of the current phase, -1: none */
	uint32_t      n;      /* phases known */
	vte_phase_acc ph[VTE_PHASE_MAX];
	vte_ring_slot out[VTE_PHASE_MAX]; /* derived samples to stage */
	uint32_t      nout, iout;
} vte_phase;

void vte_phase_init(vte_phase *p, vte_names *names);

/* A marker (flags, name id, step as given: VT_STEP_LATEST resolved here,
 * time in ns, value) is being staged; returns the step it is staged at. */
uint64_t vte_phase_marker(
    vte_phase *p, uint32_t id, uint64_t step, int64_t time_ns, double value);

/*
 * Called by the I/O thread for every sample it stages: ordinary samples
 * only record their step (for markers logged with VT_STEP_LATEST); a
 * marker is added up. Returns the step to stage the sample at.
 */
static inline uint64_t
vte_phase_see(vte_phase *p, uint32_t flags, uint32_t id, uint64_t step,
    int64_t time_ns, double value)
{
	if (__builtin_expect(
	        (flags & (VTE_RING_PHASE | VTE_RING_DERIVED)) == 0, 1)) {
		p->latest = step;
		return step;
	}
	if (flags & VTE_RING_DERIVED)
		return step;
	return vte_phase_marker(p, id, step, time_ns, value);
}

/* The next derived sample to stage (its name carries VTE_RING_DERIVED,
 * its time is in ns): 1, or 0 if none is waiting. */
static inline int
vte_phase_pop(vte_phase *p, vte_ring_slot *out)
{
	if (p->iout == p->nout)
		return 0;
	*out = p->out[p->iout++];
	if (p->iout == p->nout)
		p->iout = p->nout = 0;
	return 1;
}

#pragma GCC visibility pop

#endif /* VTE_PHASE_H */
