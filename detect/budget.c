/*
 * budget: series per run and eviction of idle series (see budget.h).
 */
#include "detect/budget.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void
detect_budget_init(detect_budget *b)
{
	memset(b, 0, sizeof(*b));
	b->per_run = DETECT_BUDGET_PER_RUN;
	b->idle_ns = DETECT_BUDGET_IDLE_NS;
	snprintf(b->name, sizeof(b->name), "detect_budget");
	b->rule.name = b->name;
}

static void
unlink_series(detect_budget *b, detect_series *s)
{
	if (s->lru_prev != NULL)
		s->lru_prev->lru_next = s->lru_next;
	else
		b->head = s->lru_next;
	if (s->lru_next != NULL)
		s->lru_next->lru_prev = s->lru_prev;
	else
		b->tail = s->lru_prev;
	s->lru_prev = s->lru_next = NULL;
}

static void
append(detect_budget *b, detect_series *s, int64_t now)
{
	s->fed_ns   = now;
	s->lru_prev = b->tail;
	s->lru_next = NULL;
	if (b->tail != NULL)
		b->tail->lru_next = s;
	else
		b->head = s;
	b->tail = s;
}

void
detect_budget_add(detect_budget *b, detect_series *s, int64_t now)
{
	s->run->nseries++;
	append(b, s, now);
}

void
detect_budget_touch(detect_budget *b, detect_series *s, int64_t now)
{
	if (b->tail == s) {
		s->fed_ns = now;
		return;
	}
	unlink_series(b, s);
	append(b, s, now);
}

void
detect_budget_remove(detect_budget *b, detect_series *s)
{
	unlink_series(b, s);
	s->run->nseries--;
}

int
detect_budget_over(
    detect_budget *b, detect_ctx *c, detect_run *run, const detect_sample *s)
{
	detect_origin o;

	if (run == NULL || b->per_run == 0 || run->nseries < b->per_run)
		return 0;
	b->refused++;
	if (run->over_budget)
		return 1;
	run->over_budget = 1;
	c->r             = &b->rule;
	detect_origin_run(&o, run);
	/* The metric refused first, so the operator sees what grows. */
	o.metric = s->metric;
	o.mlen   = s->mlen;
	detect_emit(c, &o, "series_limit", DETECT_WARNING, DETECT_RESOLVED,
	    DETECT_EVENT, s->step, s->time_ns, (double) run->nseries, NAN,
	    "run %s has %llu series, its detection budget "
	    "(--detect-max-series-per-run): its new series are not checked; "
	    "other runs are not affected",
	    detect_name_of(run->name, run->len).s,
	    (unsigned long long) run->nseries);
	return 1;
}

detect_series *
detect_budget_victim(const detect_budget *b, int64_t now)
{
	const detect_series *s = b->head;

	if (s == NULL || b->idle_ns < 0 || now - s->fed_ns <= b->idle_ns)
		return NULL;
	return b->head;
}
