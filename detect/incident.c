/*
 * incident: one alert per incident (see incident.h).
 */
#include "detect/incident.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct member {
	int32_t     rank;
	const char *kclass; /* kind, a spike and its divergence alike */
	char       *metric;
	size_t      mlen;
	int         defer; /* of a deferring rule (see on_resolved) */
} member;

struct detect_incident {
	const detect_rule *r;
	detect_run        *run;
	member            *mv;
	uint32_t           nm, cm;
	int                sev;      /* highest severity reported */
	const char        *kind;     /* kind reported last */
	int32_t            rank;     /* first member: the incident's origin */
	int64_t            key_rank; /* see key_rank() */
	char              *host, *metric;
	size_t             hostlen, mlen;
	uint64_t           step; /* step it opened at */
	uint32_t           returns, nranks;
	int32_t           *ranks; /* the ranks it spanned, nranks of them */
	uint32_t           cranks;
	/* Resolved, kept so that a rank that reaches the same step late
	 * (ranks are processes that drift apart) joins it silently. */
	int      closed;
	uint64_t close_adv;
	/* A resolution held for `hold`. */
	int      held;
	int64_t  due_ns;  /* hold in seconds */
	uint64_t due_adv; /* hold in steps: the run's advance count */
	uint64_t r_step, r_adv; /* r_adv: the run's advance count then */
	int64_t  r_time;
	double   r_value, r_base;
	char    *r_msg;
};

static const char *
kclass(const char *kind)
{
	return strcmp(kind, "divergence") == 0 ? "spike" : kind;
}

/* A progress stall says more than the run-silence stall next to it. */
static int
precedence(const char *kind)
{
	return strcmp(kind, "progress_stall") == 0;
}

static void
inc_free(detect_incident *I)
{
	for (uint32_t i = 0; i < I->nm; i++)
		free(I->mv[i].metric);
	free(I->mv);
	free(I->ranks);
	free(I->host);
	free(I->metric);
	free(I->r_msg);
	free(I);
}

static void
inc_remove(detect_incidents *is, size_t i)
{
	inc_free(is->v[i]);
	memmove(&is->v[i], &is->v[i + 1], (is->n - i - 1) * sizeof(*is->v));
	is->n--;
}

void
detect_incidents_fini(detect_incidents *is)
{
	for (size_t i = 0; i < is->n; i++)
		inc_free(is->v[i]);
	free(is->v);
	memset(is, 0, sizeof(*is));
}

/* The incident key's rank: none (every rank of the run together), except
 * for stragglers: two slow ranks are two findings. */
static int64_t
key_rank(const detect_alert *a)
{
	return strcmp(a->kind, "straggler") == 0 ? a->rank : INT64_MIN;
}

/* Whether rules a and b report to one incident: the same rule, or rules
 * that share an incident name (a throughput drop and the step-time rise
 * of the same cause are one finding). */
static int
same_incident(const detect_rule *a, const detect_rule *b)
{
	return a == b
	    || (a->incident != NULL && b->incident != NULL
	        && strcmp(a->incident, b->incident) == 0);
}

static size_t
find(const detect_incidents *is, const detect_rule *r, const detect_run *run,
    const detect_alert *a)
{
	int64_t kr = key_rank(a);

	for (size_t i = 0; i < is->n; i++)
		if (same_incident(is->v[i]->r, r) && is->v[i]->run == run
		    && is->v[i]->key_rank == kr)
			return i;
	return is->n;
}

/* A rule of r's incident, not deferring, that watches run (has a series
 * of it), or NULL. */
static const detect_rule *
deferred_to(
    const detect_rules *rules, const detect_rule *r, const detect_run *run)
{
	for (size_t j = 0; rules != NULL && j < rules->n && j < 64; j++) {
		const detect_rule *o = &rules->v[j];

		if (o != r && !o->defer && same_incident(o, r)
		    && (run->watched >> j & 1))
			return o;
	}
	return NULL;
}

static int64_t
member_of(const detect_incident *I, const detect_alert *a)
{
	const char *kc = kclass(a->kind);

	for (uint32_t i = 0; i < I->nm; i++)
		if (I->mv[i].rank == a->rank && I->mv[i].mlen == a->mlen
		    && strcmp(I->mv[i].kclass, kc) == 0
		    && memcmp(I->mv[i].metric, a->metric, a->mlen) == 0)
			return i;
	return -1;
}

/* Whether I spanned an alert of a's scope: the run as a whole (rank
 * -1), or ranks. */
static int
same_scope(const detect_incident *I, int32_t rank)
{
	for (uint32_t i = 0; i < I->nranks; i++)
		if ((I->ranks[i] < 0) == (rank < 0))
			return 1;
	return 0;
}

static int
spanned(const detect_incident *I, int32_t rank)
{
	for (uint32_t i = 0; i < I->nranks; i++)
		if (I->ranks[i] == rank)
			return 1;
	return 0;
}

/* Steps around its opening step within which a rank not seen yet joins
 * a resolved incident: the hold, and at least 20. */
static uint64_t
late_steps(const detect_rule *r)
{
	return r->hold.unit == DETECT_STEPS && r->hold.v > 20
	    ? (uint64_t) r->hold.v
	    : 20;
}

/* The incident was resolved (its record emitted): keep it closed for
 * late ranks. */
static void
close_incident(detect_incident *I)
{
	for (uint32_t i = 0; i < I->nm; i++)
		free(I->mv[i].metric);
	I->nm        = 0;
	I->held      = 0;
	I->closed    = 1;
	I->close_adv = I->run->adv;
	free(I->r_msg);
	I->r_msg = NULL;
}

static int
member_add(detect_incident *I, const detect_alert *a, int defer)
{
	member *m;

	if (I->nm == I->cm) {
		uint32_t c  = I->cm ? I->cm * 2 : 4;
		member  *mv = realloc(I->mv, c * sizeof(*mv));

		if (mv == NULL)
			return -1;
		I->mv = mv;
		I->cm = c;
	}
	m         = &I->mv[I->nm];
	m->rank   = a->rank;
	m->kclass = kclass(a->kind);
	m->mlen   = a->mlen;
	m->defer  = defer;
	m->metric = detect_dupn(a->metric, a->mlen);
	if (m->metric == NULL)
		return -1;
	for (uint32_t i = 0; i < I->nranks; i++)
		if (I->ranks[i] == a->rank)
			goto counted;
	/* The ranks an incident spans, counted as they join. */
	if (I->nranks == I->cranks) {
		uint32_t c  = I->cranks ? I->cranks * 2 : 4;
		int32_t *rv = realloc(I->ranks, c * sizeof(*rv));

		if (rv == NULL) {
			free(m->metric);
			return -1;
		}
		I->ranks  = rv;
		I->cranks = c;
	}
	I->ranks[I->nranks++] = a->rank;
counted:
	I->nm++;
	return 0;
}

static void
out(detect_incidents *is, detect_emit_fn emit, void *ctx,
    const detect_alert *a)
{
	if (emit == NULL)
		return;
	if (is->alerts != NULL)
		(*is->alerts)++;
	emit(ctx, a);
}

/* What the resolved record adds: the ranks and the returns. */
static void
suffix(const detect_incident *I, char *buf, size_t len)
{
	size_t k = 0;

	buf[0] = 0;
	if (I->nranks > 1)
		k += (size_t) snprintf(buf + k, len - k,
		    "; one incident on %u ranks, first rank %d at step %llu",
		    I->nranks, (int) I->rank, (unsigned long long) I->step);
	if (k < len && I->returns > 0)
		snprintf(buf + k, len - k,
		    "; it returned %u time%s within the hold", I->returns,
		    I->returns == 1 ? "" : "s");
}

/* The resolved record of I: origin and kind of the incident, the rest
 * of the resolution that ended it. */
static void
emit_resolved(detect_incidents *is, detect_incident *I, uint64_t step,
    int64_t t, double value, double base, const char *msg, detect_emit_fn emit,
    void *ctx)
{
	detect_alert a;
	char         sfx[160];

	suffix(I, sfx, sizeof(sfx));
	snprintf(is->msg, sizeof(is->msg), "%s%s", msg, sfx);
	memset(&a, 0, sizeof(a));
	a.rule     = I->r->name;
	a.kind     = I->kind;
	a.severity = I->sev;
	a.state    = DETECT_RESOLVED;
	a.run      = I->run->name;
	a.runlen   = I->run->len;
	a.rank     = I->rank;
	a.host     = I->host;
	a.hostlen  = I->hostlen;
	a.metric   = I->metric;
	a.mlen     = I->mlen;
	a.step     = step;
	a.time_ns  = t;
	a.value    = value;
	a.baseline = base;
	a.message  = is->msg;
	out(is, emit, ctx, &a);
}

static void
emit_held(
    detect_incidents *is, detect_incident *I, detect_emit_fn emit, void *ctx)
{
	emit_resolved(is, I, I->r_step, I->r_time, I->r_value, I->r_base,
	    I->r_msg, emit, ctx);
}

static int
due(const detect_incident *I, int64_t now)
{
	if (!I->held)
		return 0;
	if (I->r->hold.unit == DETECT_SECONDS)
		return now >= I->due_ns;
	return I->run->adv >= I->due_adv;
}

/* Whether a is the note (info) of another pause than held incident I,
 * itself a note: the run advanced since I cleared (a checkpoint noted,
 * then a hang a few steps later). A note pages nobody, and each pause
 * is one to know of. A page that returns stays one incident, and so
 * does a note that returns at the step it cleared at (a hang that flaps
 * between silent and a heartbeat), or of a level (a drift noted). */
static int
again(const detect_incident *I, const detect_alert *a)
{
	return a->severity == DETECT_INFO && I->sev == DETECT_INFO
	    && I->run->adv > I->r_adv
	    && (strcmp(a->kind, "stall") == 0
	        || strcmp(a->kind, "progress_stall") == 0);
}

static detect_incident *
open_incident(detect_incidents *is, const detect_rule *r, detect_run *run,
    const detect_alert *a)
{
	detect_incident *I;

	if (is->n == is->cap) {
		size_t            c = is->cap ? is->cap * 2 : 16;
		detect_incident **v = realloc(is->v, c * sizeof(*v));

		if (v == NULL)
			return NULL;
		is->v   = v;
		is->cap = c;
	}
	I = calloc(1, sizeof(*I));
	if (I == NULL)
		return NULL;
	I->r        = r;
	I->run      = run;
	I->sev      = a->severity;
	I->kind     = a->kind;
	I->rank     = a->rank;
	I->key_rank = key_rank(a);
	I->step     = a->step;
	I->host     = detect_dupn(a->host, a->hostlen);
	I->hostlen  = a->hostlen;
	I->metric   = detect_dupn(a->metric, a->mlen);
	I->mlen     = a->mlen;
	if (I->host == NULL || I->metric == NULL
	    || member_add(I, a, r->defer) != 0) {
		inc_free(I);
		return NULL;
	}
	is->v[is->n++] = I;
	return I;
}

static void
on_firing(detect_incidents *is, const detect_rules *rules,
    const detect_rule *r, detect_run *run, detect_alert *a, int flags,
    detect_emit_fn emit, void *ctx)
{
	size_t             i = find(is, r, run, a);
	detect_incident   *I = i < is->n ? is->v[i] : NULL;
	const detect_rule *to;
	int                up, returned = 0;

	/* A deferring rule (step time) next to a rule that watches the
	 * same run (throughput): the other decides. Step time that rises
	 * while throughput holds is more work per step (a longer sequence,
	 * a larger batch), not a slowdown: info. Unless the other rule's
	 * series moved with it (the detector confirmed it): a slowdown
	 * that the other rule's noise hid from it. */
	if (r->defer && a->severity > DETECT_INFO
	    && !(flags & DETECT_CONFIRMED)
	    && (I == NULL || I->closed || I->held || a->severity > I->sev)
	    && (to = deferred_to(rules, r, run)) != NULL) {
		a->severity = DETECT_INFO;
		snprintf(is->msg, sizeof(is->msg),
		    "%s; not paged: rule %s watches this run and has not "
		    "fired (more work per step, not a slowdown)",
		    a->message, to->name);
		a->message = is->msg;
	}

	if (I != NULL && I->held
	    && (due(I, a->time_ns) || !same_scope(I, a->rank)
	        || (precedence(a->kind) > precedence(I->kind)
	            && a->step > I->step)
	        || again(I, a))) {
		/* Late but due: the hold ran out before this sample. Or
		 * another finding: a rank left behind after the run as a
		 * whole paused (or the other way round) is not that
		 * condition returning; nor is a progress stall (heartbeats,
		 * no progress) that begins after the run advanced past a
		 * silence that was noted (a checkpoint, then a hang a few
		 * steps later). At the step of the silence it is the same
		 * incident: a hang that flaps between silent and a
		 * heartbeat. Nor is a note after the run went on since a
		 * note (a pause, then another a few steps later). */
		emit_held(is, I, emit, ctx);
		close_incident(I);
	}
	if (I != NULL && I->held && r->defer
	    && deferred_to(rules, r, run) != NULL)
		return; /* the rule it defers to has resolved: so has this */
	if (I != NULL && I->closed) {
		uint64_t late = late_steps(r);

		if (a->rank >= 0 && I->rank >= 0 && !spanned(I, a->rank)
		    && a->step + late >= I->step
		    && a->step <= I->step + late) {
			/* A rank that reached the incident's step late: part
			 * of it, already reported. */
			(void) member_add(I, a, r->defer);
			return;
		}
		if (I->nm > 0)
			return; /* late members still open: stay quiet */
		inc_remove(is, i);
		I = NULL;
	}
	if (I == NULL) {
		/* Out of memory: the alert still goes out, unmerged. */
		open_incident(is, r, run, a);
		out(is, emit, ctx, a);
		return;
	}
	if (I->held) {
		I->held = 0;
		free(I->r_msg);
		I->r_msg = NULL;
		I->returns++;
		returned = 1;
	}
	if (member_of(I, a) < 0)
		(void) member_add(I, a, r->defer);
	up = a->severity > I->sev;
	if (!up) {
		/* Joins the incident: no new page. A progress stall next to
		 * a run-silence stall names the incident from now on. */
		if (a->severity == I->sev
		    && precedence(a->kind) > precedence(I->kind))
			I->kind = a->kind;
		return;
	}
	I->sev  = a->severity;
	I->kind = a->kind;
	if (returned) {
		snprintf(is->msg, sizeof(is->msg),
		    "%s (returned %u time%s within the hold; incident opened "
		    "on rank %d at step %llu)",
		    a->message, I->returns, I->returns == 1 ? "" : "s",
		    (int) I->rank, (unsigned long long) I->step);
		a->message = is->msg;
	} else if (a->rank != I->rank) {
		snprintf(is->msg, sizeof(is->msg),
		    "%s (joins the incident; incident opened on rank %d at "
		    "step %llu)",
		    a->message, (int) I->rank, (unsigned long long) I->step);
		a->message = is->msg;
	}
	out(is, emit, ctx, a);
}

/* Whether every member left is of a deferring rule while a rule it
 * defers to watches the run: step time still up after throughput came
 * back is more work per step (a schedule that ramped meanwhile), not
 * what keeps the slowdown open. */
static int
only_deferred(const detect_rules *rules, const detect_incident *I)
{
	for (uint32_t i = 0; i < I->nm; i++)
		if (!I->mv[i].defer)
			return 0;
	for (size_t j = 0; rules != NULL && j < rules->n && j < 64; j++) {
		const detect_rule *o = &rules->v[j];

		if (o->defer && same_incident(o, I->r)
		    && deferred_to(rules, o, I->run) != NULL)
			return 1;
	}
	return 0;
}

static void
on_resolved(detect_incidents *is, const detect_rules *rules,
    const detect_rule *r, detect_run *run, detect_alert *a,
    detect_emit_fn emit, void *ctx)
{
	size_t           i = find(is, r, run, a);
	detect_incident *I = i < is->n ? is->v[i] : NULL;
	int64_t          m;
	int              was_defer;

	if (I == NULL)
		return; /* resolved already (the run finished) */
	m = member_of(I, a);
	if (m < 0 || I->held)
		return;
	was_defer = I->mv[m].defer;
	free(I->mv[m].metric);
	I->mv[m] = I->mv[--I->nm];
	if (I->closed)
		return;
	/* The last member of a rule that decides (throughput) resolved:
	 * step time members left do not keep the incident open. */
	if (I->nm > 0 && (was_defer || !only_deferred(rules, I)))
		return;
	while (I->nm > 0)
		free(I->mv[--I->nm].metric);
	r = I->r; /* the incident's rule holds it */
	if (r->hold.v <= 0) {
		emit_resolved(is, I, a->step, a->time_ns, a->value,
		    a->baseline, a->message, emit, ctx);
		close_incident(I);
		return;
	}
	I->r_msg = detect_dupn(a->message, strlen(a->message));
	if (I->r_msg == NULL) {
		emit_resolved(is, I, a->step, a->time_ns, a->value,
		    a->baseline, a->message, emit, ctx);
		close_incident(I);
		return;
	}
	I->held    = 1;
	I->r_step  = a->step;
	I->r_adv   = run->adv;
	I->r_time  = a->time_ns;
	I->r_value = a->value;
	I->r_base  = a->baseline;
	I->due_ns  = a->time_ns + (int64_t) (r->hold.v * 1e9);
	I->due_adv = run->adv + (uint64_t) r->hold.v;
}

void
detect_incidents_route(detect_incidents *is, const detect_rules *rules,
    const detect_rule *r, detect_run *run, detect_alert *a, int flags,
    detect_emit_fn emit, void *ctx)
{
	if ((flags & DETECT_EVENT) || run == NULL) {
		out(is, emit, ctx, a);
		return;
	}
	if (a->state == DETECT_FIRING)
		on_firing(is, rules, r, run, a, flags, emit, ctx);
	else
		on_resolved(is, rules, r, run, a, emit, ctx);
}

void
detect_incidents_tick(
    detect_incidents *is, int64_t now, detect_emit_fn emit, void *ctx)
{
	for (size_t i = 0; i < is->n;) {
		detect_incident *I = is->v[i];

		/* Closed and quiet long after: forgotten. */
		if (I->closed && I->nm == 0
		    && I->run->adv > I->close_adv + 50 * late_steps(I->r)) {
			inc_remove(is, i);
			continue;
		}
		if (due(I, now)) {
			emit_held(is, I, emit, ctx);
			close_incident(I);
		}
		i++;
	}
}

void
detect_incidents_finish(detect_incidents *is, const detect_run *run, int64_t t,
    detect_emit_fn emit, void *ctx)
{
	char msg[300];

	for (size_t i = 0; i < is->n;) {
		detect_incident *I = is->v[i];

		if (I->run != run) {
			i++;
			continue;
		}
		if (I->closed) {
			/* reported already */
		} else if (I->held) {
			emit_held(is, I, emit, ctx);
		} else {
			snprintf(msg, sizeof(msg),
			    "run %s finished (every rank closed normally) "
			    "while %s was firing since step %llu",
			    detect_name_of(run->name, run->len).s, I->kind,
			    (unsigned long long) I->step);
			emit_resolved(
			    is, I, run->max_step, t, NAN, NAN, msg, emit, ctx);
		}
		inc_remove(is, i);
	}
}

void
detect_incidents_flush(detect_incidents *is, detect_emit_fn emit, void *ctx)
{
	for (size_t i = 0; i < is->n; i++) {
		if (!is->v[i]->held)
			continue;
		emit_held(is, is->v[i], emit, ctx);
		close_incident(is->v[i]);
	}
}

void
detect_incidents_reload(detect_incidents *is, const detect_rules *old,
    const detect_rules *nr, const int *keep)
{
	for (size_t i = 0; i < is->n;) {
		detect_incident   *I  = is->v[i];
		const detect_rule *to = NULL;

		for (size_t j = 0; j < nr->n; j++)
			if (keep[j] >= 0 && I->r == &old->v[keep[j]])
				to = &nr->v[j];
		if (to == NULL) {
			inc_remove(is, i);
			continue;
		}
		I->r = to;
		i++;
	}
}

void
detect_incidents_forget(detect_incidents *is, const detect_run *run, int64_t t,
    detect_emit_fn emit, void *ctx)
{
	char msg[400];

	for (size_t i = 0; i < is->n;) {
		detect_incident *I = is->v[i];

		if (I->run != run) {
			i++;
			continue;
		}
		if (I->held) {
			emit_held(is, I, emit, ctx);
		} else if (!I->closed) {
			snprintf(msg, sizeof(msg),
			    "run %s forgotten by detection (idle, its room "
			    "taken by new series) while %s was firing since "
			    "step %llu",
			    detect_name_of(run->name, run->len).s, I->kind,
			    (unsigned long long) I->step);
			emit_resolved(
			    is, I, run->max_step, t, NAN, NAN, msg, emit, ctx);
		}
		inc_remove(is, i);
	}
}
