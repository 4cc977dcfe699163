/*
 * budget: how many series detection keeps, per run and in all, so that
 * one run cannot take detection away from the others.
 *
 * - A run may have at most `per_run` series. A sample that would create
 *   one more is not checked (its run keeps every series it has), and the
 *   first such sample raises one alert naming the run: rule
 *   "detect_budget", kind "series_limit", an event at warning. No other
 *   run is touched.
 * - In all, the engine keeps at most the rules' `max_series`. When a new
 *   series finds it full, the series fed least recently is forgotten if
 *   it has been idle (by the engine's clock, detect_tick) longer than
 *   `idle_ns`: its state is rebuilt from the next samples, as for a new
 *   series. A run all of whose series are forgotten is forgotten too, and
 *   what of it still fires is resolved ("forgotten"). Only when nothing
 *   is idle that long are new series left unchecked (series_limit).
 *
 * The engine (engine.c) owns the objects; this file keeps the order and
 * the counts. O(1) per sample.
 */
#ifndef DETECT_BUDGET_H
#define DETECT_BUDGET_H

#include "detect/detector.h"

#define DETECT_BUDGET_PER_RUN 25000u
#define DETECT_BUDGET_IDLE_NS (INT64_C(900) * 1000000000)

typedef struct detect_budget {
	uint64_t       per_run; /* series a run may have; 0: no cap */
	int64_t        idle_ns; /* evictable when idle longer; < 0: never */
	detect_series *head, *tail; /* least recently fed first */
	uint64_t       evicted;     /* series forgotten to make room */
	uint64_t       refused;     /* samples of runs over their budget */
	detect_rule    rule;        /* names detect_budget alerts */
	char           name[16];
} detect_budget;

/* Defaults: DETECT_BUDGET_PER_RUN and DETECT_BUDGET_IDLE_NS. */
void detect_budget_init(detect_budget *b);

/* A new series s of run s->run, fed at now: at the back of the list. */
void detect_budget_add(detect_budget *b, detect_series *s, int64_t now);

/* Series s was fed at now: to the back of the list. */
void detect_budget_touch(detect_budget *b, detect_series *s, int64_t now);

/* Series s goes away (before it is freed). */
void detect_budget_remove(detect_budget *b, detect_series *s);

/*
 * Whether a new series of run (NULL: a run not seen yet) for sample s
 * would go past the run's budget. If so the sample is counted, and the
 * first time for this run its alert is emitted through c (c->r is set to
 * the budget's rule). Returns 1 (refuse the series) or 0.
 */
int detect_budget_over(
    detect_budget *b, detect_ctx *c, detect_run *run, const detect_sample *s);

/* The series to forget to make room at clock now: the least recently fed
 * if idle longer than the bound, else NULL. */
detect_series *detect_budget_victim(const detect_budget *b, int64_t now);

#endif /* DETECT_BUDGET_H */
