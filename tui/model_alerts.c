/*
 * The alerts part of the model: read each stored alert (one JSON object,
 * with detect/'s alert reader) once, keep the transitions in order, and
 * know for every (rule, metric, rank) which transition is the latest, so
 * that "firing" means firing now.
 */
#include "tui/model_priv.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detect/detect.h"

/* Transitions kept; beyond, the oldest that are no longer current go. */
#define TM_ALERTS_MAX 20000

static void
get_str(const detect_alert_record *r, int field, char *dst, size_t len)
{
	if (r->f[field].type == DETECT_AT_STRING)
		snprintf(dst, len, "%s", r->f[field].str);
}

static double
get_num(const detect_alert_record *r, int field, double dflt)
{
	int t = r->f[field].type;

	return t == DETECT_AT_INT || t == DETECT_AT_REAL ? r->f[field].num
	                                                 : dflt;
}

int
model_alert_parse(const char *json, size_t len, uint64_t seq, model_alert *a)
{
	detect_alert_record r;
	char                sev[16] = "", state[16] = "";
	double              d;

	memset(a, 0, sizeof(*a));
	a->seq      = seq;
	a->rank     = -1;
	a->value    = NAN;
	a->baseline = NAN;
	a->time     = NAN;
	a->severity = MODEL_WARNING;
	a->firing   = 1;
	if (detect_alert_parse(json, len, &r, NULL, 0) != 0)
		return -1;
	get_str(&r, DETECT_AF_RULE, a->rule, sizeof(a->rule));
	get_str(&r, DETECT_AF_KIND, a->kind, sizeof(a->kind));
	get_str(&r, DETECT_AF_HOST, a->host, sizeof(a->host));
	get_str(&r, DETECT_AF_METRIC, a->metric, sizeof(a->metric));
	get_str(&r, DETECT_AF_MESSAGE, a->message, sizeof(a->message));
	get_str(&r, DETECT_AF_SEVERITY, sev, sizeof(sev));
	get_str(&r, DETECT_AF_STATE, state, sizeof(state));
	if (strcmp(sev, "info") == 0)
		a->severity = MODEL_INFO;
	else if (strcmp(sev, "critical") == 0)
		a->severity = MODEL_CRITICAL;
	a->firing = strcmp(state, "resolved") != 0;
	d         = get_num(&r, DETECT_AF_RANK, -1);
	a->rank   = d >= INT32_MIN && d <= INT32_MAX ? (int32_t) d : -1;
	d         = get_num(&r, DETECT_AF_STEP, 0);
	a->step   = d > 0 && d < 1.8e19 ? (uint64_t) d : 0;
	/* Steps beyond 2^53 are exact only as integers. */
	if (r.f[DETECT_AF_STEP].type == DETECT_AT_INT)
		a->step = r.f[DETECT_AF_STEP].u;
	a->time     = get_num(&r, DETECT_AF_TIME, NAN);
	a->value    = get_num(&r, DETECT_AF_VALUE, NAN);
	a->baseline = get_num(&r, DETECT_AF_BASELINE, NAN);
	detect_alert_record_free(&r);
	return 0;
}

static uint64_t
alert_hash(const model_alert *a)
{
	uint64_t h = 1469598103934665603ull;

	for (const char *p = a->rule; *p; p++)
		h = (h ^ (unsigned char) *p) * 1099511628211ull;
	h = (h ^ 0xff) * 1099511628211ull;
	for (const char *p = a->metric; *p; p++)
		h = (h ^ (unsigned char) *p) * 1099511628211ull;
	h = (h ^ (uint32_t) a->rank) * 1099511628211ull;
	return h ^ (h >> 29);
}

static int
same_key(const model_alert *a, const model_alert *b)
{
	return a->rank == b->rank && strcmp(a->rule, b->rule) == 0
	    && strcmp(a->metric, b->metric) == 0;
}

/* Insert or update the current alert of a's key (a is alerts[idx]).
 * Returns the index of the alert it replaces, or -1. */
static long
keys_put(model *m, size_t idx)
{
	const model_alert *a    = &m->alerts[idx];
	size_t             mask = m->akeys_cap - 1;

	for (size_t i = (size_t) alert_hash(a) & mask;; i = (i + 1) & mask) {
		uint32_t v = m->akeys[i];

		if (v == 0) {
			m->akeys[i] = (uint32_t) idx + 1;
			return -1;
		}
		if (same_key(&m->alerts[v - 1], a)) {
			m->akeys[i] = (uint32_t) idx + 1;
			return (long) v - 1;
		}
	}
}

/* Rebuild the key table for the alerts held (after growth or
 * compaction), sized for twice as many keys as alerts. */
static int
keys_rebuild(model *m, size_t need)
{
	size_t cap = 64;

	while (cap < 2 * need)
		cap *= 2;
	free(m->akeys);
	if ((m->akeys = calloc(cap, sizeof(*m->akeys))) == NULL) {
		m->akeys_cap = 0;
		return STORE_ENOMEM;
	}
	m->akeys_cap = cap;
	for (size_t i = 0; i < m->nalerts; i++)
		if (m->alerts[i].current)
			keys_put(m, i);
	return 0;
}

/* Drop the oldest transitions that are no longer current. */
static int
compact(model *m)
{
	size_t drop = m->nalerts / 2, j = 0;

	for (size_t i = 0; i < m->nalerts; i++) {
		if (drop > 0 && !m->alerts[i].current) {
			drop--;
			continue;
		}
		m->alerts[j++] = m->alerts[i];
	}
	m->nalerts = j;
	return keys_rebuild(m, m->alerts_cap);
}

static int
on_alert(void *ctx, const char *run, size_t runlen, uint64_t seq,
    const char *json, size_t len)
{
	model       *m = ctx;
	model_alert *a;
	long         prev;
	int          rc;

	(void) run;
	(void) runlen;
	if (m->nalerts >= TM_ALERTS_MAX && (rc = compact(m)) != 0)
		return rc;
	if (m->nalerts == m->alerts_cap) {
		size_t       nc = m->alerts_cap ? m->alerts_cap * 2 : 64;
		model_alert *na = realloc(m->alerts, nc * sizeof(*na));

		if (na == NULL)
			return STORE_ENOMEM;
		m->alerts     = na;
		m->alerts_cap = nc;
		if ((rc = keys_rebuild(m, nc)) != 0)
			return rc;
	}
	a = &m->alerts[m->nalerts];
	if (model_alert_parse(json, len, seq, a) != 0) {
		snprintf(a->message, sizeof(a->message),
		    "alert %llu is not a JSON object",
		    (unsigned long long) seq);
		a->severity = MODEL_WARNING;
		a->firing   = 0;
	}
	a->current = 1;
	prev       = keys_put(m, m->nalerts);
	if (prev >= 0)
		m->alerts[prev].current = 0;
	m->nalerts++;
	m->alert_seq      = seq;
	m->alerts_changed = m->frame;
	return 0;
}

int
model_alerts_read(model *m)
{
	int rc;

	if (m->akeys_cap == 0 && (rc = keys_rebuild(m, 64)) != 0)
		return rc;
	return scan_alerts(m->st, m->txn, m->run, m->alert_seq, on_alert, m);
}

void
model_alerts_apply(model *m)
{
	memset(m->firing, 0, sizeof(m->firing));
	for (size_t i = 0; i < m->nmetrics; i++) {
		m->metrics[i].alert_sev     = -1;
		m->metrics[i].alert_seq     = 0;
		m->metrics[i].alert_kind[0] = 0;
	}
	for (size_t i = 0; i < m->nranks; i++)
		m->ranks[i].alert_sev = -1;
	for (size_t i = 0; i < m->nalerts; i++) {
		model_alert *a = &m->alerts[i];
		long         mi, ri;

		if (a->mgen != m->metrics_gen + 1) {
			a->mi   = model_metric_find(m, a->metric);
			a->mgen = m->metrics_gen + 1;
		}
		mi = a->mi;

		if (mi >= 0) {
			model_metric *mt = &m->metrics[mi];

			mt->alert_seq = a->seq;
			/* The kind shown: the worst firing, else the latest.
			 */
			if (mt->alert_sev < 0
			    || (a->current && a->firing
			        && a->severity >= mt->alert_sev))
				snprintf(mt->alert_kind,
				    sizeof(mt->alert_kind), "%.31s",
				    a->kind[0] ? a->kind : a->rule);
		}
		if (!a->current || !a->firing)
			continue;
		m->firing[a->severity]++;
		if (mi >= 0 && a->severity > m->metrics[mi].alert_sev)
			m->metrics[mi].alert_sev = a->severity;
		ri = model_rank_find(m, a->rank);
		if (ri >= 0 && a->severity > m->ranks[ri].alert_sev)
			m->ranks[ri].alert_sev = a->severity;
	}
}
