/*
 * incident: one alert per incident. Every non-event alert a detector
 * emits passes through here before it reaches the caller:
 *
 * - the alerts of one rule on one run are one incident while any of them
 *   fires: other ranks, metrics or kinds of the same rule join it without
 *   a new page (a NaN on four ranks, a progress stall next to the
 *   run-silence stall of the same run); a member that raises the
 *   severity (or turns a stall into a progress stall) is reported as an
 *   escalation of the incident;
 * - rules that share an incident name share incidents; members of a
 *   deferring rule (step time) left when the rules they defer to have
 *   resolved (throughput is back) do not keep the incident open;
 * - when its last member resolves, the resolution is held for the rule's
 *   `hold` (steps the run advances, or seconds); a member that fires
 *   again within it continues the incident, and the resolution counts
 *   these returns (Prometheus' keep_firing_for);
 * - a run whose every rank ended normally resolves what still fires
 *   ("run finished").
 *
 * Only open incidents are kept: the state is O(incidents open now).
 */
#ifndef DETECT_INCIDENT_H
#define DETECT_INCIDENT_H

#include "detect/detector.h"

typedef struct detect_incident detect_incident;

typedef struct detect_incidents {
	detect_incident **v; /* in order of opening */
	size_t            n, cap;
	uint64_t         *alerts; /* the engine's count of emitted alerts */
	char              msg[640];
} detect_incidents;

void detect_incidents_fini(detect_incidents *is);

/* Route alert a (of rule r of rules, on run) to emit: passed on, merged
 * into an open incident, or held. a->message and a->severity may be
 * replaced. */
void detect_incidents_route(detect_incidents *is, const detect_rules *rules,
    const detect_rule *r, detect_run *run, detect_alert *a, int flags,
    detect_emit_fn emit, void *ctx);

/* Emit held resolutions that are due at clock now. */
void detect_incidents_tick(
    detect_incidents *is, int64_t now, detect_emit_fn emit, void *ctx);

/* Run finished: resolve its incidents (held ones as they were). */
void detect_incidents_finish(detect_incidents *is, const detect_run *run,
    int64_t t, detect_emit_fn emit, void *ctx);

/* Run forgotten to make room (detect/budget.h): resolve its incidents
 * (held ones as they were) and drop them, as the run object goes. */
void detect_incidents_forget(detect_incidents *is, const detect_run *run,
    int64_t t, detect_emit_fn emit, void *ctx);

/* Emit every held resolution (end of input). */
void detect_incidents_flush(
    detect_incidents *is, detect_emit_fn emit, void *ctx);

/* Rules reloaded: keep[j] is the old index of new rule j or -1. Incidents
 * of rules that changed or went away are dropped without a record. */
void detect_incidents_reload(detect_incidents *is, const detect_rules *old,
    const detect_rules *nr, const int *keep);

#endif /* DETECT_INCIDENT_H */
