/*
 * Unit tests of the built-in rules that read phase markers and phase
 * times of data-parallel ranks (detect/phase.c), the NaN origin
 * (detect/origin.c) and the rank named first in a run-wide stall, fed
 * as vitalsd and replay feed them: samples in order, a tick at each
 * sample's time. Synthetic, deterministic data shaped like the DDP runs
 * of tests/it_ddp.sh.
 */
#include "detect/detect.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/harness.h"
#include "tests/rules_engine.h"

typedef struct got {
	char     rule[64], kind[32], metric[64], msg[512];
	int      severity, state;
	int32_t  rank;
	uint64_t step;
	int64_t  time_ns;
} got;

static struct {
	got    v[4096];
	size_t n;
} S;

static void
on_alert(void *ctx, const detect_alert *a)
{
	got *g;

	(void) ctx;
	if (S.n == sizeof(S.v) / sizeof(S.v[0]))
		return;
	g = &S.v[S.n++];
	snprintf(g->rule, sizeof(g->rule), "%s", a->rule);
	snprintf(g->kind, sizeof(g->kind), "%s", a->kind);
	snprintf(g->metric, sizeof(g->metric), "%s", a->metric);
	snprintf(g->msg, sizeof(g->msg), "%s", a->message);
	g->severity = a->severity;
	g->state    = a->state;
	g->rank     = a->rank;
	g->step     = a->step;
	g->time_ns  = a->time_ns;
}

static void
dump(void)
{
	for (size_t i = 0; i < S.n; i++)
		printf("    %s %s %s %s step %llu rank %d: %s\n", S.v[i].rule,
		    S.v[i].kind, detect_severity_name(S.v[i].severity),
		    detect_state_name(S.v[i].state),
		    (unsigned long long) S.v[i].step, S.v[i].rank, S.v[i].msg);
}

/* Alerts of rule (NULL: any) with the state (-1: any), at least sev. */
static size_t
count(const char *rule, int state, int sev)
{
	size_t n = 0;

	for (size_t i = 0; i < S.n; i++)
		if ((rule == NULL || strcmp(S.v[i].rule, rule) == 0)
		    && (state < 0 || S.v[i].state == state)
		    && S.v[i].severity >= sev)
			n++;
	return n;
}

static const got *
first(const char *rule, int state)
{
	for (size_t i = 0; i < S.n; i++)
		if (strcmp(S.v[i].rule, rule) == 0 && S.v[i].state == state)
			return &S.v[i];
	return NULL;
}

static detect_engine *
engine(void)
{
	S.n = 0;
	return rules_engine(NULL);
}

static void
feed(detect_engine *e, const char *run, int32_t rank, const char *metric,
    uint64_t step, double t_s, double v)
{
	detect_sample s = { 0 };
	char          host[16];

	snprintf(host, sizeof(host), "host%d", rank);
	s.run     = run;
	s.runlen  = strlen(run);
	s.metric  = metric;
	s.mlen    = strlen(metric);
	s.host    = host;
	s.hostlen = strlen(host);
	s.rank    = rank;
	s.step    = step;
	s.time_ns = (int64_t) llround(t_s * 1e9);
	s.value   = v;
	detect_tick(e, s.time_ns, on_alert, NULL);
	detect_feed(e, &s, on_alert, NULL);
}

/* The tests' random stream. Every test that draws from it seeds it
 * first (jitter_seed), so that what a test sees does not depend on which
 * tests ran before it; after each test it is unseeded again, and a draw
 * from the unseeded stream fails the test that made it. */
static uint64_t rs;
static int      rs_seeded;

static void
jitter_seed(uint64_t seed)
{
	rs        = seed;
	rs_seeded = 1;
}

static void
jitter_unseed(void)
{
	rs_seeded = 0;
}

/* Uniform in [-1, 1), deterministic. */
static double
jitter(void)
{
	if (!rs_seeded) {
		printf("  a draw from the random stream before jitter_seed\n");
		harness_cur_failed = 1;
		rs_seeded          = 1;
	}
	rs = rs * 6364136223846793005ull + 1442695040888963407ull;
	return (double) (rs >> 11) * 0x1.0p-52 - 1;
}

/*
 * One DDP step of 4 ranks, as vitals.torch and the emitter report it:
 * markers, then the phase times of the step. Rank `slow` computes its
 * forward `factor` times longer; every rank waits in the collective for
 * the slowest, so steps take the same time on every rank. The wait
 * swings by up to `noise` ms (a busy host: the all-reduce itself runs on
 * shared CPUs), and rank `late` enters the collective `late_ms` later
 * than its compute would have it (descheduled between phases), so its
 * wait is that much shorter while its compute is not longer.
 */
static void
ddp_step_busy(detect_engine *e, const char *run, uint64_t step, double t0,
    int slow, double factor, double noise, int late, double late_ms)
{
	double fwd[4], comp[4], maxc = 0;

	for (int r = 0; r < 4; r++) {
		fwd[r] = 10 * (1 + 0.03 * jitter()) * (r == slow ? factor : 1);
		comp[r] = 0.3 + fwd[r] + 2 + 0.5;
		if (comp[r] > maxc)
			maxc = comp[r];
	}
	for (int r = 0; r < 4; r++) {
		double t = t0, wait;

		wait = maxc - comp[r] + 1 + late_ms + noise * (1 + jitter())
		    - (r == late ? late_ms : 0);

		feed(e, run, r, "vitals/phase/data", step, t, 1);
		feed(e, run, r, "vitals/phase/forward", step, t += 3e-4, 1);
		feed(e, run, r, "vitals/phase/backward", step,
		    t += fwd[r] / 1e3, 1);
		feed(e, run, r, "vitals/phase/collective", step, t += 2e-3, 1);
		feed(e, run, r, "vitals/phase/optimizer", step,
		    t += wait / 1e3, 1);
		feed(e, run, r, "phase_time/data", step - 1, t0, 0.3);
		feed(e, run, r, "phase_time/forward", step - 1, t0, fwd[r]);
		feed(e, run, r, "phase_time/backward", step - 1, t0, 2);
		feed(e, run, r, "phase_time/collective", step - 1, t0, wait);
		feed(e, run, r, "phase_time/optimizer", step - 1, t0, 0.5);
		feed(e, run, r, "loss", step, t + 5e-4, 1.0 / (double) step);
	}
}

static void
ddp_step(detect_engine *e, const char *run, uint64_t step, double t0, int slow,
    double factor)
{
	ddp_step_busy(e, run, step, t0, slow, factor, 0.2, -1, 0);
}

TEST(straggler_named_by_compute_and_wait)
{
	detect_engine *e = engine();
	const got     *g;

	jitter_seed(12345);
	REQUIRE(e != NULL);
	for (uint64_t s = 1; s <= 120; s++)
		ddp_step(e, "r", s, 1000 + 0.03 * (double) s, s >= 40 ? 2 : -1,
		    1.3);
	g = first("phase_straggler", DETECT_FIRING);
	if (g == NULL || count("phase_straggler", DETECT_FIRING, 0) != 1)
		dump();
	REQUIRE(g != NULL);
	CHECK(g->rank == 2);
	CHECK(g->step >= 40 && g->step <= 90);
	CHECK(g->severity == DETECT_WARNING);
	CHECK(strstr(g->msg,
	          "rank 2 (host host2) is a straggler: compute "
	          "before the collective")
	    != NULL);
	CHECK(strstr(g->msg, "wait in the collective") != NULL);
	CHECK(count("phase_straggler", DETECT_FIRING, 0) == 1);
	/* Nothing else at warning or above: step times are equal. */
	CHECK(count(NULL, DETECT_FIRING, DETECT_WARNING) == 1);
	detect_engine_free(e);
}

TEST(healthy_ranks_raise_nothing)
{
	detect_engine *e = engine();

	jitter_seed(12345);
	REQUIRE(e != NULL);
	for (uint64_t s = 1; s <= 200; s++)
		ddp_step(e, "r", s, 1000 + 0.03 * (double) s, -1, 1);
	if (count(NULL, -1, DETECT_WARNING) != 0)
		dump();
	CHECK(count(NULL, -1, DETECT_WARNING) == 0);
	detect_engine_free(e);
}

/* A busy host: the wait in the collective swings by a third of compute
 * from step to step, and rank 1 comes to the collective 4 ms late (a
 * third of compute) while its compute is as long as the others'. Its
 * short wait alone names no one; a rank whose forward is 30% slower on
 * the same host is named. */
TEST(straggler_busy_host_short_wait_alone_names_no_one)
{
	detect_engine *e = engine();
	const got     *g;

	jitter_seed(777);
	REQUIRE(e != NULL);
	for (uint64_t s = 1; s <= 200; s++)
		ddp_step_busy(e, "r", s, 1000 + 0.03 * (double) s, -1, 1, 4,
		    s >= 40 ? 1 : -1, 4);
	if (count(NULL, -1, DETECT_WARNING) != 0)
		dump();
	CHECK(count("phase_straggler", -1, 0) == 0);
	detect_engine_free(e);

	e = engine();
	REQUIRE(e != NULL);
	for (uint64_t s = 1; s <= 200; s++)
		ddp_step_busy(e, "r", s, 1000 + 0.03 * (double) s,
		    s >= 40 ? 2 : -1, 1.3, 4, -1, 0);
	g = first("phase_straggler", DETECT_FIRING);
	if (g == NULL || count("phase_straggler", DETECT_FIRING, 0) != 1)
		dump();
	REQUIRE(g != NULL);
	CHECK(g->rank == 2);
	CHECK(g->step >= 40 && g->step <= 140);
	CHECK(count("phase_straggler", DETECT_FIRING, 0) == 1);
	detect_engine_free(e);
}

/* A rank slowed for 20 steps (a busy host, a neighbour's burst) and then
 * back is not named; the same slowdown kept is (the test above). */
TEST(straggler_passing_slowdown_not_named)
{
	detect_engine *e = engine();

	jitter_seed(4242);
	REQUIRE(e != NULL);
	for (uint64_t s = 1; s <= 200; s++)
		ddp_step(e, "r", s, 1000 + 0.03 * (double) s,
		    s >= 60 && s < 80 ? 2 : -1, 1.3);
	if (count("phase_straggler", -1, 0) != 0)
		dump();
	CHECK(count("phase_straggler", -1, 0) == 0);
	detect_engine_free(e);
}

TEST(hang_names_the_rank_out_of_the_collective)
{
	detect_engine *e = engine();
	const got     *g;
	double         t = 1000;

	jitter_seed(12345);
	REQUIRE(e != NULL);
	for (uint64_t s = 1; s <= 50; s++)
		ddp_step(e, "r", s, t += 0.03, -1, 1);
	/* Step 51: ranks 0-2 reach the all-reduce, rank 3 sleeps in its
	 * forward pass; time goes on (ticks) with no sample. */
	t += 0.03;
	for (int r = 0; r < 4; r++) {
		feed(e, "r", r, "vitals/phase/data", 51, t, 1);
		feed(e, "r", r, "vitals/phase/forward", 51, t + 3e-4, 1);
	}
	for (int r = 0; r < 3; r++) {
		feed(e, "r", r, "vitals/phase/backward", 51, t + 0.011, 1);
		feed(e, "r", r, "vitals/phase/collective", 51, t + 0.013, 1);
	}
	for (double x = t; x < t + 60; x += 0.2)
		detect_tick(e, (int64_t) llround(x * 1e9), on_alert, NULL);
	/* Named at the floor (3 s) after the wait began, at info; paged
	 * (critical) at twice that. */
	g = first("hang", DETECT_FIRING);
	if (g == NULL)
		dump();
	REQUIRE(g != NULL);
	CHECK(g->rank == 3 && g->step == 51);
	CHECK(g->severity == DETECT_INFO);
	CHECK(strstr(g->msg, "ranks 0-2 waiting in collective since") != NULL);
	CHECK(strstr(g->msg, "rank 3 (host host3) in forward for 3") != NULL);
	CHECK(llabs(g->time_ns - (int64_t) llround((t + 0.013 + 3) * 1e9))
	    < 1000000);
	CHECK(count("hang", DETECT_FIRING, 0) == 2);
	CHECK(count("hang", DETECT_FIRING, DETECT_CRITICAL) == 1);
	for (size_t i = 0; i < S.n; i++)
		if (strcmp(S.v[i].rule, "hang") == 0
		    && S.v[i].severity == DETECT_CRITICAL) {
			CHECK(S.v[i].rank == 3);
			CHECK(llabs(S.v[i].time_ns
			          - (int64_t) llround((t + 0.013 + 6) * 1e9))
			    < 1000000);
		}
	/* The run fell silent: the run-wide stall names rank 3 first. */
	g = first("stall", DETECT_FIRING);
	REQUIRE(g != NULL);
	CHECK(g->rank == -1);
	CHECK(strstr(g->msg, "rank 3 stopped first") != NULL);
	/* Rank 3 wakes up: resolved. */
	feed(e, "r", 3, "vitals/phase/backward", 51, t + 60.01, 1);
	/* The resolution is held for the rule's hold (20 steps of the
	 * run), in case the hang comes back. */
	t += 60.01;
	for (uint64_t s = 52; s <= 80; s++)
		ddp_step(e, "r", s, t += 0.03, -1, 1);
	g = first("hang", DETECT_RESOLVED);
	CHECK(g != NULL && g->rank == 3);
	detect_engine_free(e);
}

/* On a loaded machine the rank that hangs may begin its step late: its
 * last sample (entering forward) is then newer than the others' (entering
 * the collective, where they wait for it). The run-wide stall still
 * names it, not the rank whose last sample is oldest. */
TEST(stall_names_the_rank_out_of_the_collective_that_began_late)
{
	detect_engine *e = engine();
	const got     *g;
	double         t = 1000;

	jitter_seed(777);
	REQUIRE(e != NULL);
	for (uint64_t s = 1; s <= 50; s++)
		ddp_step(e, "r", s, t += 0.03, -1, 1);
	t += 0.03;
	for (int r = 0; r < 3; r++) {
		feed(e, "r", r, "vitals/phase/data", 51, t + 1e-4 * r, 1);
		feed(e, "r", r, "vitals/phase/forward", 51, t + 3e-4, 1);
		feed(e, "r", r, "vitals/phase/backward", 51, t + 0.011, 1);
		feed(e, "r", r, "vitals/phase/collective", 51,
		    t + 0.013 + 1e-3 * r, 1);
	}
	feed(e, "r", 3, "vitals/phase/data", 51, t + 0.02, 1);
	feed(e, "r", 3, "vitals/phase/forward", 51, t + 0.021, 1);
	for (double x = t; x < t + 60; x += 0.2)
		detect_tick(e, (int64_t) llround(x * 1e9), on_alert, NULL);
	g = first("stall", DETECT_FIRING);
	if (g == NULL || strstr(g->msg, "rank 3 stopped first") == NULL)
		dump();
	REQUIRE(g != NULL);
	CHECK(g->rank == -1);
	CHECK(strstr(g->msg, "rank 3 stopped first, out of the collective")
	    != NULL);
	detect_engine_free(e);
}

TEST(nan_origin_one_incident)
{
	detect_engine *e = engine();
	const got     *g;
	double         t = 1000;

	REQUIRE(e != NULL);
	for (uint64_t s = 1; s <= 40; s++) {
		t += 0.03;
		for (int r = 0; r < 4; r++) {
			feed(e, "r", r, "loss", s, t + 1e-3 * r, 1.0);
			feed(e, "r", r, "grad_norm", s, t + 1e-3 * r, 0.5);
		}
	}
	/* Step 41: rank 1's loss is NaN; the all-reduce spreads it to
	 * every rank's gradients. Rank 3 reports first. */
	t += 0.03;
	for (int r = 3; r >= 0; r--) {
		feed(e, "r", r, "loss", 41, t + 1e-3 * (3 - r),
		    r == 1 ? NAN : 1.0);
		feed(e, "r", r, "grad_norm", 41, t + 1e-3 * (3 - r), NAN);
	}
	CHECK(count("nonfinite", -1, 0) == 0); /* not decided yet */
	t += 0.03;
	for (int r = 0; r < 4; r++) {
		feed(e, "r", r, "loss", 42, t, NAN);
		feed(e, "r", r, "grad_norm", 42, t, NAN);
	}
	if (count("nonfinite", DETECT_FIRING, DETECT_WARNING) != 1)
		dump();
	CHECK(count("nonfinite", DETECT_FIRING, DETECT_WARNING) == 1);
	g = first("nonfinite", DETECT_FIRING);
	REQUIRE(g != NULL);
	CHECK(g->rank == 1 && g->step == 41 && g->severity == DETECT_CRITICAL);
	CHECK(strcmp(g->metric, "loss") == 0);
	CHECK(strstr(g->msg, "loss is NaN at step 41 (rank 1)") != NULL);
	/* The three others join at info. */
	CHECK(count("nonfinite", DETECT_FIRING, DETECT_INFO) == 4);
	for (size_t i = 0; i < S.n; i++)
		if (S.v[i].severity == DETECT_INFO)
			CHECK(strstr(S.v[i].msg,
			          "joins the incident that started on rank 1 "
			          "at step 41")
			    != NULL);
	detect_engine_free(e);
}

int
main(void)
{
	harness_after_each = jitter_unseed;
	RUN(straggler_named_by_compute_and_wait);
	RUN(healthy_ranks_raise_nothing);
	RUN(straggler_busy_host_short_wait_alone_names_no_one);
	RUN(straggler_passing_slowdown_not_named);
	RUN(hang_names_the_rank_out_of_the_collective);
	RUN(stall_names_the_rank_out_of_the_collective_that_began_late);
	RUN(nan_origin_one_incident);
	return harness_done();
}
