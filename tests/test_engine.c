/*
 * Unit tests of detect/engine.c's bookkeeping at width: the rules'
 * verdicts kept by metric name (a table that grows with the names) and
 * the groups' memory (the engine's pool) give the same alerts as asking
 * every rule for every series. And the windows the detectors share
 * (detect/baseline.c): their quantiles are those of their last values.
 */
#include "detect/detect.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detect/baseline.h"
#include "tests/harness.h"
#include "tests/rules_engine.h"

#define NAMES 3000 /* past 1,024, 2,048 and their three quarters */

typedef struct sink {
	size_t firing, other;
	size_t by_rule[4];
} sink;

static const char *const rules[] = { "sevens", "rank1", "group" };

static void
on_alert(void *ctx, const detect_alert *a)
{
	sink *s = ctx;

	if (a->state != DETECT_FIRING) {
		s->other++;
		return;
	}
	s->firing++;
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
		if (strcmp(a->rule, rules[i]) == 0)
			s->by_rule[i]++;
}

/* One NaN of metric name on rank, in a run of its own (so that each
 * alert is its own incident). */
static void
feed_nan(detect_engine *e, sink *s, int name, int rank)
{
	detect_sample d = { 0 };
	char          run[32], metric[32];

	snprintf(run, sizeof(run), "n%04d-%d", name, rank);
	snprintf(metric, sizeof(metric), "layer%04d/m", name);
	d.run     = run;
	d.runlen  = strlen(run);
	d.metric  = metric;
	d.mlen    = strlen(metric);
	d.host    = "h";
	d.hostlen = 1;
	d.rank    = rank;
	d.step    = 1;
	d.time_ns = 1000000000;
	d.value   = NAN;
	detect_feed(e, &d, on_alert, s);
}

/*
 * 3,000 names on two ranks: a name-only rule (names ending in 7 before
 * "/m"), a rule with a rank pattern (asked for each series) and a
 * name-only rule of every name: each fires for exactly the series it
 * watches, the name-only rules' verdicts coming from the table once the
 * first rank has filled it (and grown it twice).
 */
TEST(verdicts_by_name_at_width)
{
	detect_engine *e = rules_engine(
	    "rule sevens { metric = '7/m$' detector = nonfinite }\n"
	    "rule rank1 { metric = '3/m$' rank = '^1$' "
	    "detector = nonfinite }\n"
	    "rule group { metric = '^layer' detector = nonfinite "
	    "}\n");
	sink s = { 0 };

	REQUIRE(e != NULL);
	detect_engine_budget(e, 0, -1);
	for (int rank = 0; rank < 2; rank++)
		for (int k = 0; k < NAMES; k++)
			feed_nan(e, &s, k, rank);
	CHECK_EQ_INT(s.by_rule[0], 2 * NAMES / 10);
	CHECK_EQ_INT(s.by_rule[1], NAMES / 10);
	CHECK_EQ_INT(s.by_rule[2], 2 * NAMES);
	CHECK_EQ_INT(s.other, 0);
	detect_engine_free(e);
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;

	return x < y ? -1 : x > y;
}

/*
 * 20,000 values from a small set (so that most are repeated, signed
 * zeros among them) through windows of 1 to 64: after each push, every
 * quartile of the window is that of a sorted copy of its last values.
 */
TEST(window_quantiles_are_those_of_the_last_values)
{
	static const double vals[]
	    = { -3, -1.5, -0.0, 0.0, 0.25, 1, 1, 2, 7.5, 1e300 };
	static const uint32_t caps[] = { 1, 2, 3, 7, 8, 63, 64 };
	double                hist[20000], buf[2 * 64], ref[64];
	uint64_t              rng = 42;
	size_t                bad = 0;

	for (size_t i = 0; i < sizeof(hist) / sizeof(hist[0]); i++) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		hist[i] = vals[(rng >> 33) % (sizeof(vals) / sizeof(vals[0]))];
	}
	for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
		detect_win w;

		detect_win_init(&w, caps[c]);
		for (size_t i = 0; i < sizeof(hist) / sizeof(hist[0]); i++) {
			size_t n = i + 1 < caps[c] ? i + 1 : caps[c];

			detect_win_push(&w, buf, hist[i]);
			memcpy(ref, &hist[i + 1 - n], n * sizeof(double));
			qsort(ref, n, sizeof(double), cmp_double);
			for (int q = 0; q <= 4; q++) {
				double pos = q / 4.0 * (double) (n - 1), want;
				size_t k   = (size_t) pos;

				want = k + 1 >= n ? ref[n - 1]
				                  : ref[k]
				        + (pos - (double) k)
				            * (ref[k + 1] - ref[k]);
				bad += detect_win_quantile(&w, buf, q / 4.0)
				    != want;
			}
		}
	}
	CHECK_EQ_INT(bad, 0);
}

int
main(void)
{
	RUN(verdicts_by_name_at_width);
	RUN(window_quantiles_are_those_of_the_last_values);
	return harness_done();
}
