/*
 * Unit tests of the stall detector's independence of the clock's ticks:
 * the same samples give the same alerts whether the engine ticks with
 * each sample's time (as `vitals replay` does) or every 200 ms of wall
 * clock at any phase, or seldom (as vitalsd on a loaded machine), so
 * that live and replayed alerts agree (issue 9, item 8).
 */
#include "detect/detect.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/harness.h"
#include "tests/rules_engine.h"

/* ---- a script of samples ------------------------------------------------ */

typedef struct ev {
	const char *run, *metric;
	int32_t     rank;
	uint64_t    step;
	int64_t     t; /* ns */
	double      v;
	int         end; /* the rank's emitter closed (detect_end) */
	uint32_t    seq;
} ev;

#define NEV 60000

static ev       E[NEV];
static uint32_t nev;

static void
add(const char *run, int32_t rank, const char *metric, uint64_t step, double t,
    double v)
{
	if (nev == NEV)
		return;
	E[nev] = (ev) { run, metric, rank, step, (int64_t) llround(t * 1e9), v,
		0, nev };
	nev++;
}

static void
add_end(const char *run, int32_t rank, double t)
{
	add(run, rank, "", 0, t, 0);
	if (nev > 0)
		E[nev - 1].end = 1;
}

static int
ev_cmp(const void *a, const void *b)
{
	const ev *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static uint64_t rng_s = 88172645463325252ull;

/* Uniform in [0, 1). */
static double
uni(void)
{
	rng_s ^= rng_s << 13;
	rng_s ^= rng_s >> 7;
	rng_s ^= rng_s << 17;
	return (double) (rng_s >> 11) / 9007199254740992.0;
}

/* One rank's step: step_time and loss at time t. */
static void
step_of(const char *run, int32_t rank, uint64_t st, double t)
{
	add(run, rank, "step_time", st, t, 0.01 * (1 + 0.02 * (uni() - 0.5)));
	add(run, rank, "loss", st, t + 0.0001, 2.0 + 0.01 * (uni() - 0.5));
}

/*
 * The script: 10 ms steps, as tests/helpers/scenario.py logs them, with
 * silences that end just before, at and just after the 1 s floor of the
 * stall rule, and a long one that crosses every level.
 *   run one:  1 rank; the run falls silent;
 *   run hb:   1 rank; heartbeats (samples at one step) without progress;
 *   run four: 4 ranks; rank 2 falls behind while the others go on, and
 *             the whole run falls silent.
 */
static void
script(void)
{
	static const double gaps[] = { 0.95, 0.99, 1.002, 1.03, 1.07, 1.11,
		1.15, 1.19, 1.23, 1.31, 1.37, 0.9, 1.05, 700, 1.09, 1.17 };
	double              t      = 1000;
	uint64_t            st     = 0;
	size_t              g      = 0;

	nev = 0;
	for (; st < 2200; st++) {
		double dt = 0.01 * (1 + 0.1 * (uni() - 0.5));

		/* At irregular steps: no rhythm to learn. */
		if (st >= 400 && st % 97 == (g * g * 31) % 97
		    && g < sizeof(gaps) / sizeof(*gaps))
			dt = gaps[g++] + 0.013 * uni();
		t += dt;
		step_of("one", 0, st, t);
	}
	add_end("one", 0, t + 0.01);

	/* Heartbeats every 0.2 s (at a phase of its own) at one step for
	 * about 1 s, then steps again. */
	t  = 1000.003;
	st = 0;
	for (int k = 0; k < 12; k++) {
		for (uint64_t j = 0; j < 150; j++, st++) {
			t += 0.01 * (1 + 0.1 * (uni() - 0.5));
			step_of("hb", 0, st, t);
		}
		for (int h = 0; h < 4 + k % 3; h++) {
			t += 0.2 + 0.011 * k + 0.005 * uni();
			add("hb", 0, "loss", st - 1, t, 2.0);
		}
	}
	add_end("hb", 0, t + 0.01);

	/* Four ranks; rank 2 waits `lag` s at a step while the others go
	 * on, then catches up; later the run falls silent. */
	t  = 1000.007;
	st = 0;
	{
		/* Longer than the threshold (1 s): none is learned as a
		 * usual interval. */
		static const double lags[]
		    = { 1.03, 1.21, 1.09, 1.3, 1.15, 1.01, 1.26, 1.12 };
		double lag_until = 0;
		size_t l         = 0;

		for (; st < 2600; st++) {
			t += 0.01 * (1 + 0.1 * (uni() - 0.5));
			if (l < sizeof(lags) / sizeof(*lags)
			    && st == 300 + 160 * l + (l * 37) % 50)
				lag_until = t + lags[l++] + 0.013 * uni();
			if (st >= 1900 && st % 89 == (st / 89 * 37) % 89)
				t += 1.0 + 0.05 * (double) (st / 89 - 21)
				    + 0.01 * uni();
			for (int32_t r = 0; r < 4; r++)
				if (r != 2 || t >= lag_until)
					step_of("four", r, st, t + 0.0005 * r);
		}
		for (int32_t r = 0; r < 4; r++)
			add_end("four", r, t + 0.01);
	}
	qsort(E, nev, sizeof(*E), ev_cmp);
}

/* ---- running it under a tick schedule ----------------------------------- */

typedef struct out {
	char **line;
	size_t n, cap;
} out;

static void
on_alert(void *ctx, const detect_alert *a)
{
	out *o = ctx;
	char buf[2048];

	if (o->n == o->cap) {
		o->cap  = o->cap ? 2 * o->cap : 256;
		o->line = realloc(o->line, o->cap * sizeof(*o->line));
	}
	detect_alert_json(a, buf, sizeof(buf));
	o->line[o->n++] = strdup(buf);
}

static int
str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

static void
out_free(out *o)
{
	for (size_t i = 0; i < o->n; i++)
		free(o->line[i]);
	free(o->line);
	memset(o, 0, sizeof(*o));
}

static const char *rules_text = "rule stall {\n"
                                "\tmetric   = '.*'\n"
                                "\tdetector = stall\n"
                                "\tk        = 2.5\n"
                                "\tfloor    = 1s\n"
                                "\tceiling  = 15m\n"
                                "\tpause    = 5m\n"
                                "\tseverity = critical\n"
                                "}\n";

/* The next interval between ticks: period, or when it is -1 one of 100
 * to 400 ms. */
static int64_t
gap(int64_t period)
{
	static uint64_t x = 12345;

	if (period > 0)
		return period;
	x = x * 6364136223846793005ull + 1442695040888963407ull;
	return 100000000ll + (int64_t) ((x >> 33) % 300000000ull);
}

/*
 * Feed the script to a new engine. period_ns 0: tick with each event's
 * time before it (replay); else every period_ns from phase_ns, before
 * each event the ticks due before its time (vitalsd), and so on for a
 * minute after the last (period -1: irregular, see gap()). The alerts,
 * sorted.
 */
static int
run_script(const char *rules, int64_t period_ns, int64_t phase_ns, out *o)
{
	detect_engine *e = rules_engine(rules);
	int64_t        next;

	memset(o, 0, sizeof(*o));
	if (e == NULL)
		return -1;
	next = E[0].t - E[0].t % 1000000000ll + phase_ns;
	for (uint32_t i = 0; i < nev; i++) {
		const ev *x = &E[i];

		if (period_ns == 0)
			detect_tick(e, x->t, on_alert, o);
		else
			for (; next < x->t; next += gap(period_ns))
				detect_tick(e, next, on_alert, o);
		if (x->end) {
			detect_end(e, x->run, strlen(x->run), x->rank, x->t,
			    on_alert, o);
		} else {
			detect_sample s = { 0 };

			s.run     = x->run;
			s.runlen  = strlen(x->run);
			s.metric  = x->metric;
			s.mlen    = strlen(x->metric);
			s.host    = "h";
			s.hostlen = 1;
			s.rank    = x->rank;
			s.step    = x->step;
			s.time_ns = x->t;
			s.value   = x->v;
			detect_feed(e, &s, on_alert, o);
		}
	}
	if (period_ns != 0)
		for (int64_t until = next + 60000000000ll; next < until;
		     next += gap(period_ns))
			detect_tick(e, next, on_alert, o);
	detect_flush(e, on_alert, o);
	detect_engine_free(e);
	qsort(o->line, o->n, sizeof(*o->line), str_cmp);
	return 0;
}

/* Whether two sorted alert lists are the same; the differences printed
 * (at most 12 lines). */
static int
same(const char *what, const out *a, const out *b)
{
	size_t i = 0, j = 0, shown = 0;
	int    eq = 1;

	while (i < a->n || j < b->n) {
		int c = i == a->n ? 1
		    : j == b->n   ? -1
		                  : strcmp(a->line[i], b->line[j]);

		if (c == 0) {
			i++;
			j++;
			continue;
		}
		if (eq)
			printf(
			    "  %s: alerts differ (- replay, + ticks)\n", what);
		eq = 0;
		if (shown++ < 12)
			printf("  %c %s", c < 0 ? '-' : '+',
			    c < 0 ? a->line[i] : b->line[j]);
		if (c < 0)
			i++;
		else
			j++;
	}
	return eq;
}

/* Firing stall alerts (any kind) of run `run` in o. */
static size_t
firing(const out *o, const char *run)
{
	char   key[64];
	size_t n = 0;

	snprintf(key, sizeof(key), "\"run\":\"%s\"", run);
	for (size_t i = 0; i < o->n; i++)
		n += strstr(o->line[i], "\"state\":\"firing\"") != NULL
		    && strstr(o->line[i], key) != NULL;
	return n;
}

/* ---- tests ----------------------------------------------------------------
 */

static void
schedules_agree(const char *rules)
{
	static const struct {
		const char *name;
		int64_t     period, phase;
	} sched[] = {
		{ "200 ms ticks at phase 0", 200000000ll, 0 },
		{ "200 ms ticks at phase 137 ms", 200000000ll, 137000000ll },
		{ "200 ms ticks at phase 61 ms", 200000000ll, 61000000ll },
		{ "50 ms ticks", 50000000ll, 3000000ll },
		{ "700 ms ticks (a loaded collector)", 700000000ll,
		    290000000ll },
		{ "ticks 100 to 400 ms apart (a loaded collector)", -1, 0 },
	};
	out replay;

	script();
	REQUIRE(run_script(rules, 0, 0, &replay) == 0);
	if (getenv("TEST_STALL_DUMP") != NULL)
		for (size_t i = 0; i < replay.n; i++)
			printf("  replay: %s", replay.line[i]);
	/* The script has stalls to agree on: noted silences of the
	 * run, a rank left behind, heartbeats without progress. */
	CHECK(firing(&replay, "one") >= 3);
	CHECK(firing(&replay, "hb") >= 1);
	CHECK(firing(&replay, "four") >= 3);
	for (size_t k = 0; k < sizeof(sched) / sizeof(*sched); k++) {
		out live;

		REQUIRE(
		    run_script(rules, sched[k].period, sched[k].phase, &live)
		    == 0);
		CHECK(same(sched[k].name, &replay, &live));
		out_free(&live);
	}
	out_free(&replay);
}

TEST(stall_alerts_do_not_depend_on_the_ticks)
{
	schedules_agree(rules_text);
}

/* The built-in rules (their incidents, holds and the other detectors)
 * on the same script. */
TEST(builtin_rules_alerts_do_not_depend_on_the_ticks)
{
	schedules_agree(NULL);
}

/* Alerts in state `state` ("firing", "resolved") of run `run` at step
 * `step` in o. */
static size_t
count_at(const out *o, const char *state, const char *run, uint64_t step)
{
	char   key[96], st_key[48];
	size_t n = 0;

	snprintf(key, sizeof(key), "\"run\":\"%s\",", run);
	snprintf(st_key, sizeof(st_key), "\"state\":\"%s\"", state);
	for (size_t i = 0; i < o->n; i++) {
		const char *st = strstr(o->line[i], "\"step\":");

		n += strstr(o->line[i], st_key) != NULL
		    && strstr(o->line[i], key) != NULL && st != NULL
		    && strtoull(st + 7, NULL, 10) == step;
	}
	return n;
}

/*
 * A checkpoint every 800 s (a timer looked at once a step, counted from
 * the start of the last save) lasting 240 s, 10-s steps; once learned,
 * a 180-s evaluation begins 70 s before the timer is due, and the
 * checkpoint comes in the step after it, 110 s late: the evaluation is
 * new (noted), the checkpoint is expected.
 */
TEST(stall_timer_late_by_a_pause_just_before_is_expected)
{
	double   t = 1000, last = 1000;
	uint64_t eval_at = 0;
	int      nck     = 0;
	out      o;

	nev = 0;
	for (uint64_t i = 0; i < 700; i++) {
		double pause = 0;

		if (i > 0 && t - last >= 800) {
			pause += 240 * (1 + 0.02 * (uni() - 0.5));
			last = t;
			nck++;
		}
		if (eval_at == 0 && nck >= 4 && t + 70 >= last + 800) {
			pause += 180;
			eval_at = i;
		}
		t += pause + 10 * (1 + 0.06 * (uni() - 0.5));
		add("ck", 0, "step_time", i, t, 10);
	}
	qsort(E, nev, sizeof(*E), ev_cmp);
	REQUIRE(eval_at > 0);
	REQUIRE(run_script(rules_text, 0, 0, &o) == 0);
	if (getenv("TEST_STALL_DUMP") != NULL)
		for (size_t i = 0; i < o.n; i++)
			printf("  %s", o.line[i]);
	/* The evaluation's silence follows step eval_at - 1 and is noted;
	 * the incident ends with step eval_at, whose silence (the
	 * checkpoint's) does not bring it back (to end with the next). */
	CHECK(count_at(&o, "firing", "ck", eval_at - 1) == 1);
	CHECK(count_at(&o, "resolved", "ck", eval_at) == 1);
	CHECK(count_at(&o, "resolved", "ck", eval_at + 1) == 0);
	out_free(&o);
}

int
main(void)
{
	RUN(stall_alerts_do_not_depend_on_the_ticks);
	RUN(builtin_rules_alerts_do_not_depend_on_the_ticks);
	RUN(stall_timer_late_by_a_pause_just_before_is_expected);
	return harness_done();
}
