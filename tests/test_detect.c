/*
 * Unit tests of detect/: the rules language (errors with line and
 * column), bounded PCRE2 matching, each detector (fires, stays quiet on
 * healthy data, resolves, handles restarts), reload keeping state, the
 * alert JSON, and the replay input readers.
 */
#include "detect/detect.h"

#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/replay_input.h"
#include "tests/harness.h"
#include "tests/rules_engine.h"

/* ---- helpers ------------------------------------------------------------ */

typedef struct got {
	char     rule[64], kind[32], metric[64], host[64], msg[512];
	int      severity, state;
	int32_t  rank;
	uint64_t step;
	int64_t  time_ns;
	double   value, baseline;
	int      has_exec;
	char     exec0[64];
	uint32_t exec_timeout_ms;
} got;

typedef struct sink {
	got    v[4096];
	size_t n;
} sink;

static sink S;

static void
on_alert(void *ctx, const detect_alert *a)
{
	sink *s = ctx;
	got  *g;

	if (s->n == sizeof(s->v) / sizeof(s->v[0]))
		return;
	g = &s->v[s->n++];
	snprintf(g->rule, sizeof(g->rule), "%s", a->rule);
	snprintf(g->kind, sizeof(g->kind), "%s", a->kind);
	snprintf(g->metric, sizeof(g->metric), "%s", a->metric);
	snprintf(g->host, sizeof(g->host), "%s", a->host);
	snprintf(g->msg, sizeof(g->msg), "%s", a->message);
	g->severity = a->severity;
	g->state    = a->state;
	g->rank     = a->rank;
	g->step     = a->step;
	g->time_ns  = a->time_ns;
	g->value    = a->value;
	g->baseline = a->baseline;
	g->has_exec = a->exec_argv != NULL;
	if (a->exec_argv != NULL)
		snprintf(g->exec0, sizeof(g->exec0), "%s", a->exec_argv[0]);
	g->exec_timeout_ms = a->exec_timeout_ms;
}

/* Alerts of a kind (and state, -1: any). */
static size_t
count(const char *kind, int state)
{
	size_t n = 0;

	for (size_t i = 0; i < S.n; i++)
		if (strcmp(S.v[i].kind, kind) == 0
		    && (state < 0 || S.v[i].state == state))
			n++;
	return n;
}

/* Alerts of a kind, state and severity. */
static size_t
count_sev(const char *kind, int state, int sev)
{
	size_t n = 0;

	for (size_t i = 0; i < S.n; i++)
		if (strcmp(S.v[i].kind, kind) == 0 && S.v[i].state == state
		    && S.v[i].severity == sev)
			n++;
	return n;
}

static const got *
first(const char *kind, int state)
{
	for (size_t i = 0; i < S.n; i++)
		if (strcmp(S.v[i].kind, kind) == 0
		    && (state < 0 || S.v[i].state == state))
			return &S.v[i];
	return NULL;
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

static detect_engine *
engine(const char *rules_text)
{
	S.n = 0;
	return rules_engine(rules_text);
}

/* Feed one sample and tick with its time, as replay does. */
static void
feed(detect_engine *e, const char *run, int32_t rank, const char *metric,
    uint64_t step, double t_s, double v)
{
	detect_sample s = { 0 };
	char          host[16];

	snprintf(host, sizeof(host), "host%d", rank < 0 ? 0 : rank);
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
	detect_tick(e, s.time_ns, on_alert, &S);
	detect_feed(e, &s, on_alert, &S);
}

/* The tests' random stream. Every test that draws from it seeds it
 * first (noise_seed), so that what a test sees does not depend on which
 * tests ran before it; after each test it is unseeded again, and a draw
 * from the unseeded stream fails the test that made it. */
static uint64_t rs;
static int      rs_seeded;

static void
noise_seed(uint64_t seed)
{
	rs        = seed;
	rs_seeded = 1;
}

static void
noise_unseed(void)
{
	rs_seeded = 0;
}

static double
noise(void)
{
	double u = 0;

	if (!rs_seeded) {
		printf("  a draw from the random stream before noise_seed\n");
		harness_cur_failed = 1;
		rs_seeded          = 1;
	}

	/* Sum of uniforms: close enough to a normal, deterministic. */
	for (int i = 0; i < 12; i++) {
		rs = rs * 6364136223846793005ull + 1442695040888963407ull;
		u += (double) (rs >> 11) * 0x1.0p-53;
	}
	return u - 6;
}

static double
loss_at(uint64_t step)
{
	return 2 + 8 * pow((double) step + 50, -0.4);
}

/* A healthy loss and grad norm from step a to b (one step per 2 s). */
static void
healthy(detect_engine *e, const char *run, uint64_t a, uint64_t b,
    double mult_at, uint64_t at, uint64_t len)
{
	for (uint64_t st = a; st < b; st++) {
		double m = st >= at && st < at + len ? mult_at : 1;

		feed(e, run, 0, "loss", st, 1000 + 2.0 * (double) st,
		    loss_at(st) * exp(0.02 * noise()) * m);
		feed(e, run, 0, "grad_norm", st, 1000 + 2.0 * (double) st,
		    0.5 * exp(0.1 * noise()));
	}
}

/* ---- rules -------------------------------------------------------------- */

TEST(default_rules_parse_and_print)
{
	detect_rules    *r;
	detect_rule_info ri;
	const char      *t = detect_rules_default_text();
	char             err[256];

	REQUIRE(detect_rules_default(&r) == 0);
	CHECK(detect_rules_count(r) >= 10);
	CHECK(detect_rules_info(r, 0, &ri) == 0);
	CHECK(strcmp(ri.name, "nonfinite") == 0);
	CHECK(detect_rules_info(r, 999, &ri) == DETECT_EINVAL);
	detect_rules_free(r);
	/* The printed text is itself a valid rules file. */
	CHECK(
	    detect_rules_parse(t, strlen(t), "x", &r, err, sizeof(err)) == 0);
	detect_rules_free(r);
	detect_rules_free(NULL);
}

static int
parse_err(const char *text, char *err, size_t len)
{
	detect_rules *r  = NULL;
	int           rc = detect_rules_parse(
	              text, strlen(text), "bad.rules", &r, err, len);

	detect_rules_free(r);
	return rc;
}

#define EXPECT_ERR(text, want)                                                \
	do {                                                                  \
		char err_[512];                                               \
		CHECK(parse_err(text, err_, sizeof(err_)) == DETECT_EPARSE);  \
		if (strstr(err_, want) == NULL) {                             \
			printf("  got: %s\n  want: %s\n", err_, want);        \
			CHECK(strstr(err_, want) != NULL);                    \
		}                                                             \
	} while (0)

TEST(parse_errors_name_line_and_column)
{
	EXPECT_ERR("rule a {\n\tmetric 'loss'\n}\n",
	    "bad.rules:2:9: expected '=' after the parameter name, found the "
	    "string 'loss'");
	EXPECT_ERR("rule a {\n  metric = 'loss'\n  detector = spik\n}\n",
	    "bad.rules:3:14: expected a detector (one of nonfinite, spike");
	EXPECT_ERR("rule a {\n  metric = 'x'\n  detector = stall\n  z = 6\n}",
	    "bad.rules:4:3: expected a parameter of detector stall");
	EXPECT_ERR("rule a {\n  metric = '(abc'\n  detector = spike\n}",
	    "bad.rules:2:17: expected a valid PCRE2 pattern for 'metric'");
	EXPECT_ERR("rule a {\n  metric = 'abc\n}",
	    "bad.rules:2:12: expected the closing quote of this string");
	EXPECT_ERR("# c\n\nrule lossy {\n  metric = 'x'\n}\n",
	    "bad.rules:3:6: expected 'detector = ...' in rule 'lossy'");
	EXPECT_ERR("rule a { metric='x' detector=nonfinite }\n"
	           "rule a { metric='y' detector=nonfinite }\n",
	    "bad.rules:2:6: expected a new rule name, found 'a' again");
	EXPECT_ERR("rule a {\n metric = 'x'\n detector = spike\n for = 3q\n}",
	    "bad.rules:4:9: expected a unit after the number");
	EXPECT_ERR("rule t {\n metric = 'entropy'\n detector = threshold\n}",
	    "bad.rules:1:6: in rule 't': expected 'above = N' or 'below = N'");
	EXPECT_ERR("rule a {\n metric = 'x'\n detector = nonfinite\n"
	           " exec = \"/bin/true\"\n}",
	    "bad.rules:4:9: expected a list of strings, program first");
	EXPECT_ERR("rules a {}",
	    "bad.rules:1:1: expected 'rule' or a setting "
	    "(max_series), found 'rules'");
	EXPECT_ERR("rule a {\n metric = 'x'\n detector = spike\n z = \"6\"\n}",
	    "bad.rules:4:6: expected a number for 'z', found the string "
	    "\"6\"");
	EXPECT_ERR("rule a {\n metric = 'x'\n detector = drop\n by = 200%\n}",
	    "bad.rules:4:7: expected 'by' between 0.001 and 0.99");
	EXPECT_ERR("rule a {\n metric = 'x'\n detector = spike\n"
	           " direction = sideways\n}",
	    "bad.rules:4:14: expected one of up, down, both for 'direction', "
	    "found 'sideways'");
	EXPECT_ERR("rule a {\n metric = 'x'\n metric = 'y'\n}",
	    "bad.rules:3:2: expected each parameter once, found 'metric' "
	    "again (first at line 2)");
	EXPECT_ERR("rule a {\n metric = 'x'\n detector = stall\n floor = 3 "
	           "steps\n}",
	    "bad.rules:4:10: expected a duration (30s, 500ms, 5m, 1h) for "
	    "'floor'");
	EXPECT_ERR("rule a {\n metric = 'x'\n detector = spike\n@",
	    "bad.rules:4:1: expected a name, number, string or one of");
	EXPECT_ERR("rule a {\n metric = 'x'\n detector = spike\n",
	    "bad.rules:4:1: expected a parameter name or '}', found the end "
	    "of the file");
}

TEST(parse_values_and_units)
{
	const char      *t = "max_series = 5\n"
	                     "rule \"my rule\" {\n"
	                     "  metric = \"^a\\\\d+$\"   # comment\n"
	                     "  run = '^exp-'; rank = 3\n"
	                     "  detector = stall; floor = 500ms, ceiling = 2 h\n"
	                     "  severity = warning\n"
	                     "  cooldown = 30s\n"
	                     "  exec = [\"/bin/echo\", \"a b\", ]\n"
	                     "  timeout = 1.5s\n"
	                     "}\n";
	detect_rules    *r;
	detect_rule_info ri;
	char             err[256];

	REQUIRE(
	    detect_rules_parse(t, strlen(t), "ok", &r, err, sizeof(err)) == 0);
	REQUIRE(detect_rules_info(r, 0, &ri) == 0);
	CHECK(strcmp(ri.name, "my rule") == 0);
	CHECK(strcmp(ri.metric, "^a\\d+$") == 0);
	CHECK(strcmp(ri.rank, "^3$") == 0);
	CHECK(strcmp(ri.severity, "warning") == 0);
	CHECK(ri.exec_argc == 2 && strcmp(ri.exec_argv[1], "a b") == 0);
	CHECK(ri.exec_timeout_ms == 1500);
	CHECK(strstr(ri.definition, "floor=0.5s") != NULL);
	CHECK(strstr(ri.definition, "ceiling=7200s") != NULL);
	CHECK(strstr(ri.definition, "cooldown=30s") != NULL);
	CHECK(detect_rules_match(r, 0, "exp-1", 5, "a12", 3, NULL, 0, 3) == 1);
	CHECK(detect_rules_match(r, 0, "exp-1", 5, "a12", 3, NULL, 0, 4) == 0);
	CHECK(detect_rules_match(r, 0, "run-1", 5, "a12", 3, NULL, 0, 3) == 0);
	CHECK(detect_rules_match(r, 0, "exp-1", 5, "ab", 2, NULL, 0, 3) == 0);
	detect_rules_free(r);
}

TEST(pathological_pattern_hits_the_limit)
{
	detect_engine *e = engine("rule p {\n metric = '(a+)+$'\n"
	                          " detector = nonfinite\n}\n");
	char           name[80];
	detect_stats   st;
	clock_t        t0 = clock();

	REQUIRE(e != NULL);
	memset(name, 'a', 60);
	name[60] = 'b';
	name[61] = 0;
	feed(e, "r", 0, name, 1, 1, NAN);
	detect_engine_stats(e, &st);
	CHECK(st.match_limit >= 1);
	CHECK(count("nonfinite", -1) == 0); /* the limit means no match */
	/* It gave up quickly instead of backtracking for ages. */
	CHECK((double) (clock() - t0) / CLOCKS_PER_SEC < 0.5);
	/* Once per series, not per sample. */
	feed(e, "r", 0, name, 2, 2, NAN);
	detect_engine_stats(e, &st);
	CHECK(st.match_limit == 1);
	detect_engine_free(e);
}

/* ---- detectors --------------------------------------------------------- */

TEST(nonfinite_first_sample_then_resolves)
{
	detect_engine *e = engine(NULL);
	const got     *g;

	noise_seed(12345);
	REQUIRE(e != NULL);
	healthy(e, "r", 0, 100, 1, 0, 0);
	CHECK(count("nonfinite", -1) == 0);
	feed(e, "r", 0, "loss", 100, 1200, NAN);
	feed(e, "r", 0, "loss", 101, 1202, INFINITY);
	feed(e, "r", 0, "loss", 102, 1204, 2.5);
	/* The resolution is held for the rule's hold (20 steps). */
	CHECK(count("nonfinite", DETECT_RESOLVED) == 0);
	healthy(e, "r", 103, 125, 1206, 0, 0);
	g = first("nonfinite", DETECT_FIRING);
	REQUIRE(g != NULL);
	CHECK(g->step == 100 && g->rank == 0);
	CHECK(g->severity == DETECT_CRITICAL);
	CHECK(strstr(g->msg, "loss is NaN at step 100 (rank 0)") != NULL);
	CHECK(count("nonfinite", DETECT_FIRING) == 1);
	g = first("nonfinite", DETECT_RESOLVED);
	CHECK(g != NULL && g->step == 102);
	detect_engine_free(e);
}

TEST(spike_healthy_is_quiet)
{
	detect_engine *e = engine(NULL);

	noise_seed(12345);
	REQUIRE(e != NULL);
	healthy(e, "r", 0, 5000, 1, 0, 0);
	if (S.n != 0)
		dump();
	CHECK(S.n == 0);
	detect_engine_free(e);
}

TEST(spike_blip_is_info_and_recovers)
{
	detect_engine *e = engine(NULL);
	const got     *g;

	noise_seed(12345);
	REQUIRE(e != NULL);
	healthy(e, "r", 0, 400, 3, 300, 1);
	CHECK(count("spike", -1) == 0);
	g = first("blip", -1);
	REQUIRE(g != NULL);
	CHECK(g->severity == DETECT_INFO && g->state == DETECT_RESOLVED);
	CHECK(g->step == 300);
	CHECK(strstr(g->msg, "recovered after 1 step") != NULL);
	CHECK(fabs(g->value / g->baseline - 3) < 0.3);
	detect_engine_free(e);
}

TEST(spike_sustained_fires_next_step_and_resolves)
{
	detect_engine *e = engine(NULL);
	const got     *g;

	noise_seed(12345);
	REQUIRE(e != NULL);
	healthy(e, "r", 0, 400, 2, 300, 20);
	g = first("spike", DETECT_FIRING);
	REQUIRE(g != NULL);
	CHECK(g->step == 301); /* within one step of onset */
	CHECK(g->severity == DETECT_WARNING);
	CHECK(strcmp(g->metric, "loss") == 0);
	g = first("spike", DETECT_RESOLVED);
	REQUIRE(g != NULL);
	CHECK(g->step == 320);
	CHECK(strstr(g->msg, "recovered after 20 steps") != NULL);
	CHECK(count("divergence", -1) == 0);
	CHECK(count("blip", -1) == 0);
	detect_engine_free(e);
}

/* The heavy-tailed gradient norm: a jump of one or two steps is noise,
 * a third step is a spike. */
static void
grad_jump(detect_engine *e, uint64_t at, uint64_t len, uint64_t to)
{
	for (uint64_t st = at - 300; st < to; st++)
		feed(e, "g", 0, "grad_norm", st, 2.0 * (double) st,
		    0.5 * exp(0.1 * noise())
		        * (st >= at && st < at + len ? 30 : 1));
}

TEST(spike_grad_norm_two_step_jump_is_no_warning)
{
	detect_engine *e = engine(NULL);
	const got     *g;

	noise_seed(12345);
	REQUIRE(e != NULL);
	grad_jump(e, 300, 2, 400);
	if (S.n)
		dump();
	CHECK(count("spike", -1) == 0);
	detect_engine_free(e);
	e = engine(NULL);
	REQUIRE(e != NULL);
	grad_jump(e, 300, 3, 400);
	g = first("spike", DETECT_FIRING);
	REQUIRE(g != NULL);
	CHECK(g->step == 302 && g->severity == DETECT_WARNING);
	CHECK(strcmp(g->rule, "grad_norm_spike") == 0);
	detect_engine_free(e);
}

TEST(spike_not_recovered_becomes_critical)
{
	detect_engine *e = engine(NULL);
	const got     *g;

	noise_seed(12345);
	REQUIRE(e != NULL);
	/* 2x for 150 steps: a warning at once, critical after 100 steps
	 * (persist), one incident, one resolution. */
	healthy(e, "r", 0, 500, 2, 300, 150);
	g = first("spike", DETECT_FIRING);
	REQUIRE(g != NULL);
	CHECK(g->step == 301 && g->severity == DETECT_WARNING);
	CHECK(count("spike", DETECT_FIRING) == 2);
	g = &S.v[1];
	CHECK(g->state == DETECT_FIRING && g->severity == DETECT_CRITICAL);
	CHECK(g->step >= 395 && g->step <= 405);
	CHECK(strstr(g->msg, "not recovered") != NULL);
	CHECK(count("spike", DETECT_RESOLVED) == 1);
	detect_engine_free(e);
}

TEST(spike_divergence_is_critical)
{
	detect_engine *e = engine(NULL);
	const got     *g;

	noise_seed(12345);
	REQUIRE(e != NULL);
	healthy(e, "r", 0, 300, 1, 0, 0);
	for (uint64_t st = 300; st < 330; st++)
		feed(e, "r", 0, "loss", st, 1000 + 2.0 * (double) st,
		    loss_at(st) * pow(1.15, (double) (st - 299)));
	g = first("divergence", DETECT_FIRING);
	REQUIRE(g != NULL);
	CHECK(g->severity == DETECT_CRITICAL);
	CHECK(g->step < 315);
	CHECK(strstr(g->msg, "still growing") != NULL);
	detect_engine_free(e);
}

TEST(slow_divergence_fires_before_nan)
{
	detect_engine *e = engine(NULL);
	const got     *g;
	uint64_t       st;

	noise_seed(12345);
	REQUIRE(e != NULL);
	/* A healthy start with warm-up, noise and data-order bumps. */
	for (st = 0; st < 1000; st++)
		feed(e, "slow", 0, "loss", st, (double) st,
		    loss_at(st) * exp(0.04 * noise())
		        * (st % 250 < 5 ? 1.05 : 1));
	CHECK(count("divergence", -1) == 0 && count("spike", -1) == 0);
	/* Then the loss doubles every 150 steps, no jump, NaN at 16x. */
	for (; st < 1600; st++)
		feed(e, "slow", 0, "loss", st, (double) st,
		    st == 1599 ? NAN
		               : loss_at(st) * exp(0.04 * noise())
		            * exp(M_LN2 * (double) (st - 1000) / 150));
	g = first("divergence", DETECT_FIRING);
	if (g == NULL)
		dump();
	REQUIRE(g != NULL);
	CHECK(g->severity == DETECT_CRITICAL);
	CHECK(g->step > 1000 && g->step <= 1200);
	CHECK(strstr(g->msg, "without a jump") != NULL);
	detect_engine_free(e);
}

TEST(restart_is_one_event_and_not_a_spike)
{
	detect_engine *e = engine(NULL);
	const got     *g;

	noise_seed(12345);
	REQUIRE(e != NULL);
	/* 4 ranks log loss and step_time; rank 0 restarts first. */
	for (uint64_t st = 0; st < 3000; st++)
		for (int r = 0; r < 4; r++) {
			feed(e, "job", r, "step_time", st,
			    2.0 * (double) st + r * 0.01,
			    1.0 + 0.01 * noise());
			if (r == 0)
				feed(e, "job", 0, "loss", st,
				    2.0 * (double) st,
				    loss_at(st) * exp(0.02 * noise()));
		}
	/* Back to the checkpoint of step 100: the loss there is 1.3x the
	 * loss at step 2999, which must not look like a spike. */
	for (uint64_t st = 100; st < 400; st++)
		for (int r = 0; r < 4; r++) {
			double t = 6100 + 2.0 * (double) (st - 100) + r * 0.01;

			feed(e, "job", r, "step_time", st, t,
			    1.0 + 0.01 * noise());
			if (r == 0)
				feed(e, "job", 0, "loss", st, t,
				    loss_at(st) * exp(0.02 * noise()));
		}
	/* One info alert, firing the moment steps went back. */
	CHECK(count("restart", DETECT_FIRING) == 1);
	g = first("restart", DETECT_FIRING);
	REQUIRE(g != NULL);
	CHECK(g->step == 100);
	CHECK(g->value == 2899 && g->baseline == 2999);
	CHECK(g->severity == DETECT_INFO);
	CHECK(strstr(g->msg, "2899 steps lost, 102 s down") != NULL);
	CHECK(count("restart", DETECT_RESOLVED) == 1);
	CHECK(count("spike", -1) == 0 && count("blip", -1) == 0);
	CHECK(count("drop", -1) == 0 && count("rise", -1) == 0);
	/* The 100 s gap was the downtime: its stall fired and resolved
	 * as the restart. */
	CHECK(count("stall", DETECT_FIRING) == 1);
	CHECK(count("stall", DETECT_RESOLVED) == 1);
	g = first("stall", DETECT_RESOLVED);
	REQUIRE(g != NULL);
	CHECK(strstr(g->msg, "restarted at step 100 after") != NULL);
	detect_engine_free(e);
}

/* Steps [a, b) of ranks 0-3 of run "job" (step_time, and loss on rank
 * 0), at 2 s a step from t0 (the time of step a). */
static void
job_span(detect_engine *e, uint64_t a, uint64_t b, double t0)
{
	for (uint64_t st = a; st < b; st++)
		for (int r = 0; r < 4; r++) {
			double t = t0 + 2.0 * (double) (st - a) + r * 0.01;

			feed(e, "job", r, "step_time", st, t,
			    1.0 + 0.01 * noise());
			if (r == 0)
				feed(e, "job", 0, "loss", st, t,
				    loss_at(st) * exp(0.02 * noise()));
		}
}

/*
 * Samples that arrive late, older than their series' last and at a
 * lower step (a batch the emitter resent behind newer ones, a spool sent
 * after the run went on), are no restart: steps 0-999 delivered after
 * steps 1000-2999 raise nothing (their early loss is no spike) and are
 * counted; a real restart after them, back in steps at a later time, is
 * reported as ever.
 */
TEST(late_samples_are_not_a_restart)
{
	detect_engine *e = engine(NULL);
	detect_stats   ds;
	const got     *g;

	noise_seed(4242);
	REQUIRE(e != NULL);
	job_span(e, 1000, 3000, 2000);
	job_span(e, 0, 1000, 0); /* the spool */
	job_span(e, 3000, 3100, 6000);
	CHECK_EQ_INT(S.n, 0);
	if (S.n)
		dump();
	detect_engine_stats(e, &ds);
	CHECK_EQ_INT(ds.late, 5000);
	/* Back to step 2500 after 100 s down. */
	job_span(e, 2500, 2600, 6300);
	CHECK(count("restart", DETECT_FIRING) == 1);
	g = first("restart", DETECT_FIRING);
	REQUIRE(g != NULL);
	CHECK(g->step == 2500 && g->baseline == 3099);
	CHECK(count("spike", -1) == 0 && count("divergence", -1) == 0);
	detect_engine_free(e);
}

/* n steps of ranks 0-3 of run "job" from *st, 10 s apart, rank r 10 ms
 * after rank 0: a healthy run's step_time. Advances *st and *t. */
static void
job_steps(detect_engine *e, uint64_t *st, double *t, uint64_t n)
{
	for (uint64_t k = 0; k < n; k++, (*st)++, *t += 10)
		for (int r = 0; r < 4; r++)
			feed(
			    e, "job", r, "step_time", *st, *t + r * 0.01, 9.9);
}

/* n heartbeats from rank 0 of run, one every `every` s, no step past
 * st - 1; ticks every 0.2 s between them, as vitalsd sends. */
static void
heartbeats(detect_engine *e, const char *run, uint64_t st, double *t, int n,
    double every)
{
	for (int k = 0; k < n; k++) {
		for (double c = *t; c < *t + every; c += 0.2)
			detect_tick(e, (int64_t) (c * 1e9), on_alert, &S);
		*t += every;
		feed(e, run, 0, "heartbeat", st - 1, *t, 1);
	}
}

static void
tps(detect_engine *e, uint64_t a, uint64_t b, double level, int slow_every)
{
	for (uint64_t st = a; st < b; st++) {
		double v = level * exp(0.01 * noise());

		if (slow_every && st % (uint64_t) slow_every == 0)
			v *= 0.5; /* evaluation every N steps */
		if (st % 997 == 0)
			v *= 0.3; /* a single very slow step */
		feed(e, "r", 0, "tokens_per_sec", st, 2.0 * (double) st, v);
	}
}

TEST(drop_sustained_not_periodic)
{
	detect_engine *e = engine(NULL);
	const got     *g;

	noise_seed(12345);
	REQUIRE(e != NULL);
	tps(e, 0, 5000, 1e5, 20);
	if (S.n)
		dump();
	CHECK(S.n == 0);
	tps(e, 5000, 6000, 0.95e5, 20); /* a slow node: 5% down */
	g = first("drop", DETECT_FIRING);
	REQUIRE(g != NULL);
	CHECK(g->step > 5000 && g->step < 5200);
	CHECK(fabs(g->baseline - 1e5) < 2e3);
	tps(e, 6000, 6500, 1e5, 20);
	CHECK(count("drop", DETECT_RESOLVED) == 1);
	detect_engine_free(e);
}

TEST(drop_quick_test_names_a_step_within_30_samples)
{
	detect_engine *e = engine(NULL);
	const got     *g;

	noise_seed(12345);
	REQUIRE(e != NULL);
	tps(e, 0, 3000, 1e5, 20);
	if (S.n)
		dump();
	CHECK(S.n == 0);
	/* A slow node: 6% down at once. The quick test (8 samples against
	 * the 8 before) sees it while the windows of 64 still straddle
	 * it; the periodic slow steps (every 20) do not move a median of
	 * 8. */
	tps(e, 3000, 3100, 0.94e5, 20);
	g = first("drop", DETECT_FIRING);
	REQUIRE(g != NULL);
	CHECK(g->step > 3000 && g->step <= 3030);
	CHECK(strstr(g->msg, "median of 8 samples") != NULL);
	CHECK(fabs(g->baseline - 1e5) < 2e3);
	tps(e, 3100, 3600, 1e5, 20);
	CHECK(count("drop", DETECT_FIRING) == 1);
	CHECK(count("drop", DETECT_RESOLVED) == 1);
	detect_engine_free(e);
}

/* tokens_per_sec of run "noisy", steps a to b, at level with 5% noise. */
static void
noisy_tps(detect_engine *e, uint64_t a, uint64_t b, double level)
{
	for (uint64_t st = a; st < b; st++)
		feed(e, "noisy", 0, "tokens_per_sec", st, 2.0 * (double) st,
		    level * exp(0.05 * noise()));
}

TEST(drop_recovery_does_not_teach_noise)
{
	detect_engine *e = engine(NULL);

	noise_seed(12345);
	REQUIRE(e != NULL);
	/* A noisy series (its threshold follows its noise) drops by 25%,
	 * comes back, and later drops by 12%: the return of the level is
	 * no noise, so the second drop is seen too. */
	noisy_tps(e, 0, 2000, 1e5);
	noisy_tps(e, 2000, 2500, 0.75e5);
	noisy_tps(e, 2500, 3500, 1e5);
	CHECK(count("drop", DETECT_FIRING) == 1);
	CHECK(count("drop", DETECT_RESOLVED) == 1);
	noisy_tps(e, 3500, 4000, 0.88e5);
	if (count("drop", DETECT_FIRING) != 2)
		dump();
	CHECK(count("drop", DETECT_FIRING) == 2);
	detect_engine_free(e);
}

TEST(drop_coming_in_does_not_raise_its_own_threshold)
{
	int found = 0, quiet = 1, warned = 1;

	/* A throughput with 5% noise a sample (the jitter of each step on
	 * a quiet host): its threshold is about 5.5%. It drops by 8% for
	 * good. As the drop comes into C, |C - B| grows for tens of
	 * samples: learned as noise at once, it raised the threshold as
	 * fast as C showed the drop (to about 10%), and only an info note
	 * of the step time found such drops (bench-detect, seeds 42, 2, 7,
	 * 960 runs: 15 of 5 to 9%). 20 series: 5 found without holding the
	 * threshold, 18 with it (177 of 200 series). */
	for (int k = 1; k <= 20; k++) {
		detect_engine *e = engine(NULL);
		const got     *g;

		REQUIRE(e != NULL);
		noise_seed((uint64_t) k * 7919);
		noisy_tps(e, 0, 3000, 1e5);
		quiet = quiet && S.n == 0;
		noisy_tps(e, 3000, 3300, 0.92e5);
		g = first("drop", DETECT_FIRING);
		if (g != NULL && g->step > 3000 && g->step <= 3100) {
			found++;
			warned = warned && g->severity == DETECT_WARNING;
		}
		detect_engine_free(e);
	}
	printf("    8%% drops found within 100 steps: %d of 20\n", found);
	CHECK(quiet);
	CHECK(found >= 12);
	CHECK(warned);
}

TEST(rise_threshold_rises_with_a_ramp_of_work_per_step)
{
	int flagged = 0;

	/* The step time of a sequence-length warm-up: 30% more over 400
	 * steps (4.8% a window), with 4% noise a sample. Where the ramp
	 * begins, C moves off B as a shift would; the threshold, rising
	 * with what it learns meanwhile, keeps it quiet (a throughput
	 * stays level under such a ramp: a drop's threshold holds, see
	 * above, a rise's does not). 30 series: 1 flagged (19 of 200
	 * series), 20 with the threshold held as a drop's. */
	for (int k = 1; k <= 30; k++) {
		detect_engine *e = engine(NULL);

		REQUIRE(e != NULL);
		noise_seed((uint64_t) k * 7919);
		for (uint64_t st = 0; st < 2400; st++) {
			double x = st < 1500 ? 0
			    : st < 1900      ? (double) (st - 1500) / 400
			                     : 1;

			feed(e, "ramp", 0, "step_time", st, 0.2 * (double) st,
			    0.15 * (1 + 0.3 * x) * exp(0.04 * noise()));
		}
		flagged += count("rise", -1) != 0;
		detect_engine_free(e);
	}
	printf("    ramps flagged: %d of 30\n", flagged);
	CHECK(flagged <= 8);
}

/* tokens_per_sec of run "plan", steps a to b: 1% noise on a level that
 * falls 17% over 6000 steps as planned (a step time that grows with an
 * attention window), times mult. */
static void
planned_tps(detect_engine *e, uint64_t a, uint64_t b, double mult)
{
	for (uint64_t st = a; st < b; st++)
		feed(e, "plan", 0, "tokens_per_sec", st, 14.0 * (double) st,
		    1e5 * (1 - 0.17 * (double) st / 6000) * mult
		        * exp(0.01 * noise()));
}

TEST(drop_comes_back_during_a_planned_drift)
{
	detect_engine *e = engine(NULL);
	const got     *g;
	size_t         i;

	noise_seed(12345);
	REQUIRE(e != NULL);
	/* A slow node lowers the throughput by 13% from step 900 to 2900
	 * while the planned drift lowers it by 6% more: when the node
	 * recovers, the level is back up by 13% at once, but 6% below
	 * where it was before the drop. That return ends the episode, so
	 * that a second slow node at step 3700 (19%) pages again. */
	planned_tps(e, 0, 900, 1);
	CHECK(S.n == 0);
	planned_tps(e, 900, 2900, 0.87);
	g = first("drop", DETECT_FIRING);
	REQUIRE(g != NULL);
	CHECK(g->step > 900 && g->step <= 1000);
	planned_tps(e, 2900, 3700, 1);
	g = first("drop", DETECT_RESOLVED);
	if (g == NULL)
		dump();
	REQUIRE(g != NULL);
	CHECK(g->step > 2900 && g->step <= 3000);
	CHECK(strstr(g->msg, "came back abruptly") != NULL);
	i = S.n;
	planned_tps(e, 3700, 4000, 0.81);
	CHECK(count("drop", DETECT_FIRING) == 2);
	for (; i < S.n; i++)
		if (S.v[i].state == DETECT_FIRING)
			CHECK(S.v[i].step > 3700 && S.v[i].step <= 3800);
	detect_engine_free(e);
}

/* step_time of run "busy", rank 0, steps a to b: a busy shared host whose
 * log step time wanders as an AR(1) of coefficient 0.98 and standard
 * deviation sd (*x is its state), with 1% noise of its own, times mult;
 * every slow_every-th step (0: none) twice as long. */
static void
busy_steps(detect_engine *e, uint64_t a, uint64_t b, double *x, double sd,
    double mult, int slow_every)
{
	for (uint64_t st = a; st < b; st++) {
		double v;

		*x = 0.98 * *x + sd * 0.199 * noise();
		v  = 0.5 * exp(*x) * exp(0.01 * noise()) * mult;
		if (slow_every && st % (uint64_t) slow_every == 0)
			v *= 2;
		feed(e, "busy", 0, "step_time", st, 0.5 * (double) st, v);
	}
}

#define BUSY_RULE                                                             \
	"rule step_time_rise {\n metric = 'step_time'\n detector = rise\n"    \
	" by = 4%%\n window = 64\n for = 16 steps\n%s}\n"

TEST(level_jump_finds_a_step_on_a_wandering_level)
{
	char rules[512];
	int  found[2] = { 0, 0 }, msg_ok = 0;

	/* The host's level wanders with a standard deviation of 15%: a
	 * window's median moves by several percent from one window to
	 * the next, and by about 3% from one step to the next. At step
	 * 3000 the step time rises by 20% for good (1.3 standard
	 * deviations): only the change from one step to the next shows
	 * it as large as it is. 20 such hosts, with and without the jump
	 * test; none raises anything before the step. */
	for (int jump = 1; jump >= 0; jump--) {
		snprintf(rules, sizeof(rules), BUSY_RULE,
		    jump ? "" : " jump = false\n");
		for (int k = 1; k <= 20; k++) {
			detect_engine *e = engine(rules);
			const got     *g;
			double         x = 0;

			REQUIRE(e != NULL);
			noise_seed((uint64_t) k * 7919);
			busy_steps(e, 0, 3000, &x, 0.15, 1, 0);
			if (S.n)
				dump();
			CHECK(S.n == 0);
			busy_steps(e, 3000, 3200, &x, 0.15, 1.2, 0);
			g = first("rise", DETECT_FIRING);
			if (g != NULL && g->step > 3000 && g->step <= 3030) {
				found[jump]++;
				msg_ok += jump
				    && strstr(g->msg, "median of 16 samples")
				        != NULL;
			}
			detect_engine_free(e);
		}
	}
	printf("    found within 30 steps: %d of 20 without the jump test, "
	       "%d with it\n",
	    found[0], found[1]);
	CHECK(found[0] <= 3);
	CHECK(found[1] >= 8);
	CHECK(msg_ok == found[1]);
}

TEST(level_jump_slow_steps_do_not_stop_learning)
{
	detect_engine *e;
	double         x = 0;
	char           rules[512];

	/* Every 25th step is twice as long (a slow step that recurs). Each
	 * is a jump that does not last: it must not hold back what the
	 * tests learn of the noise, else a host that becomes busy later
	 * is judged by the quiet host's threshold. */
	snprintf(rules, sizeof(rules), BUSY_RULE, "");
	e = engine(rules);
	REQUIRE(e != NULL);
	noise_seed(99);
	busy_steps(e, 0, 1000, &x, 0, 1, 25);
	for (int k = 1; k <= 20; k++)
		busy_steps(e, 1000 + 100 * (uint64_t) (k - 1),
		    1000 + 100 * (uint64_t) k, &x, 0.01 * k, 1, 25);
	busy_steps(e, 3000, 6000, &x, 0.2, 1, 25);
	if (S.n)
		dump();
	CHECK(count("rise", -1) == 0);
	detect_engine_free(e);
}

/* step_time of run "sched", rank 0, steps a to b, 0.2 s apart from *t:
 * lvl times plan(step) (NULL: 1), with 1% noise of its own. */
static void
sched_steps(detect_engine *e, uint64_t a, uint64_t b, double *t, double lvl,
    double (*plan)(uint64_t))
{
	for (uint64_t st = a; st < b; st++) {
		*t += 0.2;
		feed(e, "sched", 0, "step_time", st, *t,
		    lvl * (plan ? plan(st) : 1) * exp(0.01 * noise()));
	}
}

/* The step time grows 8% over 600 steps (an attention window that
 * grows), then 20% over 3000 more. */
static double
slow_plan(uint64_t st)
{
	return st < 1000 ? 1
	    : st < 1600  ? 1 + 0.08 * (double) (st - 1000) / 600
	    : st < 4600  ? 1.08 * (1 + 0.2 * (double) (st - 1600) / 3000)
	                 : 1.08 * 1.2;
}

/* A sequence-length warm-up from step 1500: 5% a window (64 steps) for
 * 600 steps, faster than the default threshold (4%) a window. */
static double
warmup_plan(uint64_t st)
{
	double x = st < 1500 ? 0 : (double) (st < 2100 ? st : 2100) - 1500;

	return 1 + 0.05 * x / 64;
}

TEST(level_gradual_drift_quiet_abrupt_shift_fires)
{
	detect_engine *e = engine(NULL);
	const got     *g;
	double         lvl = 0.150, t = 0;
	int            flagged = 0;

	noise_seed(12345);
	REQUIRE(e != NULL);
	/* A planned drift slower than the threshold a window. */
	sched_steps(e, 0, 5000, &t, lvl, slow_plan);
	if (S.n)
		dump();
	CHECK(count("rise", -1) == 0);
	/* A slow node: 5% at once. */
	sched_steps(e, 5000, 5300, &t, lvl * 1.05, slow_plan);
	g = first("rise", DETECT_FIRING);
	REQUIRE(g != NULL);
	CHECK(g->step > 5000 && g->step <= 5100);
	CHECK(strstr(g->msg, "abrupt shift") != NULL);
	detect_engine_free(e);

	/* A drift faster than the threshold a window, which the threshold
	 * has not learned: the run restarts from step 1500 into its
	 * sequence-length warm-up. The windows fill again after the
	 * restart and the threshold learned on the quiet level before is
	 * kept, so only the pattern tells the drift from a shift: B is as
	 * far from A as C is from B. */
	e = engine(NULL);
	REQUIRE(e != NULL);
	t = 0;
	sched_steps(e, 0, 2500, &t, lvl, NULL);
	sched_steps(e, 1500, 2400, &t, lvl, warmup_plan);
	if (count("rise", -1) != 0)
		dump();
	CHECK(count("restart", DETECT_FIRING) == 1);
	CHECK(count("rise", -1) == 0);
	detect_engine_free(e);

	/* Busy shared hosts: the step time swings by tens of percent over
	 * tens of steps (sd 20%). The threshold follows that noise; a
	 * threshold that did not would flag every host. Swings now and
	 * then look like shifts (200 hosts of 6,000 steps: 7.5% flagged),
	 * so 50 hosts are judged by their rate. */
	for (int k = 1; k <= 50; k++) {
		double x = 0;

		e = engine(NULL);
		REQUIRE(e != NULL);
		noise_seed((uint64_t) k * 7919);
		for (uint64_t st = 0; st < 6000; st++) {
			x = 0.98 * x + 0.2 * 0.199 * noise();
			feed(e, "busy", 0, "step_time", st, (double) st * 0.2,
			    lvl * exp(x) * exp(0.01 * noise()));
		}
		flagged += count("rise", -1) != 0;
		detect_engine_free(e);
	}
	printf("    busy hosts flagged: %d of 50\n", flagged);
	CHECK(flagged <= 10);
}

TEST(stall_of_run_rank_and_progress)
{
	detect_engine *e = engine(NULL);
	const got     *g;
	double         t  = 0;
	uint64_t       st = 0;

	REQUIRE(e != NULL);
	job_steps(e, &st, &t, 300);
	CHECK(S.n == 0);
	/* The whole run stops for 700 s: ticks as vitalsd would send. */
	for (double c = t; c < t + 700; c += 0.2)
		detect_tick(e, (int64_t) (c * 1e9), on_alert, &S);
	g = first("stall", DETECT_FIRING);
	REQUIRE(g != NULL);
	CHECK(g->rank == -1 && g->severity == DETECT_INFO);
	/* Stamped at the deadline: 2.5 x 10 s after the last sample. */
	CHECK(llabs(g->time_ns - (int64_t) ((t - 10 + 0.03 + 25) * 1e9))
	    < 50000000);
	/* A pause not learned yet: a warning at `pause` (5 min), a page
	 * at twice that. */
	CHECK(count("stall", DETECT_FIRING) == 3);
	CHECK(S.v[1].severity == DETECT_WARNING);
	CHECK(S.v[2].severity == DETECT_CRITICAL);
	t += 700;
	feed(e, "job", 0, "step_time", st, t, 9.9);
	/* Held for the rule's hold; the end of input lets it out. */
	detect_flush(e, on_alert, &S);
	CHECK(count("stall", DETECT_RESOLVED) == 1);
	for (int r = 1; r < 4; r++)
		feed(e, "job", r, "step_time", st, t + r * 0.01, 9.9);
	st++;
	t += 10;
	/* Rank 2 goes silent while the others go on. */
	S.n = 0;
	for (uint64_t k = 0; k < 20; k++, st++, t += 10)
		for (int r = 0; r < 4; r++)
			if (r != 2)
				feed(e, "job", r, "step_time", st,
				    t + r * 0.01, 9.9);
	g = first("stall", DETECT_FIRING);
	REQUIRE(g != NULL);
	CHECK(g->rank == 2 && strcmp(g->host, "host2") == 0);
	CHECK(strstr(g->msg, "rank 2 (host host2) has not advanced") != NULL);
	/* Rank 2 catches up; the incident ends. */
	for (int r = 0; r < 4; r++)
		feed(e, "job", r, "step_time", st, t + r * 0.01, 9.9);
	st++;
	t += 10;
	detect_flush(e, on_alert, &S);
	/* Heartbeats without progress: samples at the same step. */
	S.n = 0;
	for (int k = 0; k < 80; k++, t += 5)
		feed(e, "job", 0, "heartbeat", st - 1, t, 1);
	g = first("progress_stall", DETECT_FIRING);
	REQUIRE(g != NULL);
	CHECK(g->rank == -1);
	feed(e, "job", 0, "step_time", st, t, 9.9);
	detect_flush(e, on_alert, &S);
	CHECK(count("progress_stall", DETECT_RESOLVED) == 1);
	detect_engine_free(e);
}

TEST(rank_left_behind_after_a_run_pause_is_its_own_alert)
{
	detect_engine *e     = engine(NULL);
	double         t     = 0;
	uint64_t       st    = 0;
	int            rank2 = 0;

	REQUIRE(e != NULL);
	job_steps(e, &st, &t, 300);
	/* The whole run pauses for 40 s (noted), and goes on. */
	for (double c = t; c < t + 40; c += 0.2)
		detect_tick(e, (int64_t) (c * 1e9), on_alert, &S);
	t += 40;
	job_steps(e, &st, &t, 3);
	CHECK(count("stall", DETECT_FIRING) == 1);
	/* Within the hold of that resolution, rank 2 falls behind: not
	 * the run's pause returning, a finding of its own. */
	for (uint64_t k = 0; k < 10; k++, st++, t += 10)
		for (int r = 0; r < 4; r++)
			if (r != 2)
				feed(e, "job", r, "step_time", st,
				    t + r * 0.01, 9.9);
	for (size_t i = 0; i < S.n; i++)
		rank2 += S.v[i].state == DETECT_FIRING && S.v[i].rank == 2
		    && strcmp(S.v[i].kind, "stall") == 0;
	if (rank2 != 1)
		dump();
	CHECK(rank2 == 1);
	detect_engine_free(e);
}

TEST(stall_note_after_the_run_went_on_is_a_new_incident)
{
	detect_engine *e  = engine(NULL);
	double         t  = 0;
	uint64_t       st = 0;
	size_t         n;

	REQUIRE(e != NULL);
	job_steps(e, &st, &t, 300);
	/* The run pauses for 40 s (a note: the step interval is 10 s), goes
	 * on 3 steps and stops again, within the hold of the first: another
	 * pause (a checkpoint, then a hang), noted too. The first pause's
	 * resolution comes out before it, not held for the hold. */
	for (int p = 0; p < 2; p++) {
		for (double c = t; c < t + 40; c += 0.2)
			detect_tick(e, (int64_t) (c * 1e9), on_alert, &S);
		t += 40;
		job_steps(e, &st, &t, 3);
	}
	if (S.n != 3)
		dump();
	REQUIRE(S.n == 3);
	CHECK(S.v[0].state == DETECT_FIRING && S.v[0].step == 299);
	CHECK(S.v[1].state == DETECT_RESOLVED && S.v[1].step == 300);
	CHECK(strstr(S.v[1].msg, "after 50 s without a sample") != NULL);
	CHECK(S.v[2].state == DETECT_FIRING && S.v[2].step == 302);
	CHECK(S.v[2].severity == DETECT_INFO);
	CHECK(strstr(S.v[2].msg, "within the hold") == NULL);
	detect_engine_free(e);

	/* A hang where a heartbeat comes every 30 s, past the silence's
	 * threshold (25 s), no step for 20 min: the silence returns at the
	 * same step, the same incident (one note) next to the progress
	 * stall. */
	e = engine(NULL);
	REQUIRE(e != NULL);
	S.n = 0;
	st  = 0;
	t   = 0;
	job_steps(e, &st, &t, 300);
	heartbeats(e, "job", st, &t, 40, 30);
	n = count("stall", DETECT_FIRING);
	if (n != 1)
		dump();
	CHECK(n == 1);
	CHECK(count("stall", DETECT_RESOLVED) == 0);
	CHECK(count("progress_stall", DETECT_FIRING) >= 1);
	detect_engine_free(e);
}

TEST(finished_run_is_not_a_stall)
{
	detect_engine *e = engine(NULL);
	const got     *g;
	double         t  = 0;
	uint64_t       st = 0;

	REQUIRE(e != NULL);
	job_steps(e, &st, &t, 300);
	/* Every rank closes normally; an hour of ticks raises nothing. */
	for (int r = 0; r < 4; r++)
		detect_end(e, "job", 3, r, (int64_t) (t * 1e9), on_alert, &S);
	for (double c = t; c < t + 3600; c += 0.2)
		detect_tick(e, (int64_t) (c * 1e9), on_alert, &S);
	if (S.n)
		dump();
	CHECK(S.n == 0);
	t += 3600;

	/* Restarted: the ranks are live again, and a later silence of the
	 * run is a stall again. */
	job_steps(e, &st, &t, 50);
	CHECK(S.n == 0);
	for (double c = t; c < t + 100; c += 0.2)
		detect_tick(e, (int64_t) (c * 1e9), on_alert, &S);
	g = first("stall", DETECT_FIRING);
	REQUIRE(g != NULL);
	CHECK(g->rank == -1);
	t += 100;

	/* Three ranks end, rank 3 did not (it died): its silence is still
	 * the run's stall, which stays firing. (Not 50 steps on, where the
	 * first silence would put the next pause of its kind.) */
	S.n = 0;
	job_steps(e, &st, &t, 70);
	CHECK(count("stall", DETECT_RESOLVED) == 1);
	for (int r = 0; r < 3; r++)
		detect_end(e, "job", 3, r, (int64_t) (t * 1e9), on_alert, &S);
	for (double c = t; c < t + 100; c += 0.2)
		detect_tick(e, (int64_t) (c * 1e9), on_alert, &S);
	CHECK(count("stall", DETECT_FIRING) >= 1);
	CHECK(count("stall", DETECT_RESOLVED) == 1);

	/* Rank 3 turns out to have closed normally after all: resolved,
	 * saying why. */
	detect_end(e, "job", 3, 3, (int64_t) ((t + 100) * 1e9), on_alert, &S);
	CHECK(count("stall", DETECT_RESOLVED) == 2);
	g = &S.v[S.n - 1];
	CHECK(g->state == DETECT_RESOLVED && g->rank == -1);
	CHECK(strstr(g->msg, "finished") != NULL);
	/* An unknown run or rank is ignored. */
	detect_end(e, "nope", 4, 0, (int64_t) (t * 1e9), on_alert, &S);
	detect_end(e, "job", 3, 17, (int64_t) (t * 1e9), on_alert, &S);
	detect_engine_free(e);
}

TEST(lagging_rank_catching_up_is_progress)
{
	detect_engine *e  = engine(NULL);
	double         t  = 0;
	uint64_t       st = 0;

	REQUIRE(e != NULL);
	job_steps(e, &st, &t, 300);
	/* Rank 3 falls 100 steps behind, then catches up alone after the
	 * others finished: its steps advance, so the run progresses. */
	for (uint64_t k = 0; k < 100; k++, t += 10)
		for (int r = 0; r < 3; r++)
			feed(e, "job", r, "step_time", st + k, t + r * 0.01,
			    9.9);
	for (int r = 0; r < 3; r++)
		detect_end(e, "job", 3, r, (int64_t) (t * 1e9), on_alert, &S);
	for (uint64_t k = 0; k < 100; k++, t += 10)
		feed(e, "job", 3, "step_time", st + k, t, 9.9);
	CHECK(count("progress_stall", -1) == 0);
	/* Its stall while it was behind fired and resolved. */
	detect_flush(e, on_alert, &S);
	CHECK(count("stall", DETECT_FIRING) >= 1);
	CHECK(count("stall", DETECT_RESOLVED) >= 1);
	detect_engine_free(e);
}

TEST(stall_quiet_with_periodic_checkpoints)
{
	detect_engine *e = engine(NULL);
	double         t = 0;

	noise_seed(12345);
	REQUIRE(e != NULL);
	for (uint64_t st = 0; st < 5000; st++) {
		/* Every 500 steps a checkpoint takes 12x a step. */
		t += st % 500 == 0 && st > 0 ? 120 : 10 * exp(0.03 * noise());
		for (int r = 0; r < 2; r++)
			feed(e, "job", r, "step_time", st, t + r * 0.01, 9.9);
	}
	/* The first two checkpoints are stalls to a detector that has not
	 * seen them; from the third on they are expected. */
	CHECK(count("stall", DETECT_FIRING) <= 4);
	CHECK(
	    first("stall", DETECT_FIRING) == NULL || S.v[S.n - 1].step < 1200);
	detect_engine_free(e);
}

/* Highest severity of firing alerts of a rule after index from; -1 if
 * none. */
static int
max_sev(const char *rule, size_t from)
{
	int m = -1;

	for (size_t i = from; i < S.n; i++)
		if (strcmp(S.v[i].rule, rule) == 0
		    && S.v[i].state == DETECT_FIRING && S.v[i].severity > m)
			m = S.v[i].severity;
	return m;
}

TEST(stall_short_in_a_fast_run_is_noted)
{
	detect_engine *e = engine(NULL);
	const got     *g;
	double         t  = 0;
	uint64_t       st = 0;

	noise_seed(12345);
	REQUIRE(e != NULL);
	/* 0.1 s steps on 2 ranks; then the run stops for 3 s (30 steps),
	 * ticked as vitalsd would, and goes on. */
	for (; st < 3000; st++, t += 0.1 * exp(0.03 * noise()))
		for (int r = 0; r < 2; r++)
			feed(
			    e, "fast", r, "step_time", st, t + r * 0.001, 0.1);
	CHECK(S.n == 0);
	for (double c = t; c < t + 3; c += 0.2)
		detect_tick(e, (int64_t) (c * 1e9), on_alert, &S);
	t += 3;
	for (uint64_t k = 0; k < 100; k++, st++, t += 0.1)
		for (int r = 0; r < 2; r++)
			feed(
			    e, "fast", r, "step_time", st, t + r * 0.001, 0.1);
	detect_flush(e, on_alert, &S);
	/* Noted (info), not paged: 30 steps is a hiccup worth a look. */
	g = first("stall", DETECT_FIRING);
	REQUIRE(g != NULL);
	CHECK(g->rank == -1 && g->severity == DETECT_INFO);
	CHECK(max_sev("stall", 0) == DETECT_INFO);
	CHECK(count("stall", DETECT_RESOLVED) == 1);
	detect_engine_free(e);
}

/* 2 ranks, 10 s steps, a pause of `len` s after step st when
 * every_steps divides it, or when every_s seconds passed since the last
 * pause began. Ticks every 0.2 s during pauses. */
static void
paused_steps(detect_engine *e, const char *run, uint64_t *st, double *t,
    uint64_t n, uint64_t every_steps, double every_s, double *last, double len)
{
	for (uint64_t k = 0; k < n; k++, (*st)++) {
		int pause = (every_steps && *st % every_steps == 0 && *st > 0)
		    || (every_s > 0 && *t - *last >= every_s);

		if (pause) {
			*last = *t;
			for (double c = *t; c < *t + len; c += 0.2)
				detect_tick(
				    e, (int64_t) (c * 1e9), on_alert, &S);
			*t += len;
		} else {
			*t += 10 * exp(0.03 * noise());
		}
		for (int r = 0; r < 2; r++)
			feed(e, run, r, "step_time", *st, *t + r * 0.01, 9.9);
	}
}

TEST(stall_learns_recurring_pauses)
{
	detect_engine *e = engine(NULL);
	double         t = 0, last = 0;
	uint64_t       st = 0;
	size_t         mark;

	noise_seed(12345);
	REQUIRE(e != NULL);
	/* A checkpoint every 200 steps lasting 120 s (12 steps). */
	paused_steps(e, "ck", &st, &t, 2000, 200, 0, &last, 120);
	/* Not learned yet, the first ones are at most info; then quiet. */
	CHECK(max_sev("stall", 0) <= DETECT_INFO);
	for (size_t i = 0; i < S.n; i++)
		CHECK(S.v[i].state != DETECT_FIRING || S.v[i].step < 500);
	/* The same pause at 3x its length pages. */
	mark = S.n;
	paused_steps(e, "ck", &st, &t, 200, 200, 0, &last, 360);
	CHECK(max_sev("stall", mark) == DETECT_CRITICAL);
	for (size_t i = mark; i < S.n; i++)
		if (S.v[i].state == DETECT_FIRING
		    && S.v[i].severity == DETECT_CRITICAL)
			CHECK(strstr(S.v[i].msg, "usually lasts 1") != NULL);

	/* Every 30 minutes of wall clock, 150 s each. */
	detect_engine_free(e);
	e = engine(NULL);
	REQUIRE(e != NULL);
	t = 0, last = 0, st = 0;
	paused_steps(e, "wall", &st, &t, 3000, 0, 1800, &last, 150);
	CHECK(max_sev("stall", 0) <= DETECT_INFO);
	for (size_t i = 0; i < S.n; i++)
		CHECK(S.v[i].state != DETECT_FIRING || S.v[i].step < 600);

	/* A first, unlearned 8-minute pause: a warning, not a page. */
	detect_engine_free(e);
	e = engine(NULL);
	REQUIRE(e != NULL);
	t = 0, last = 0, st = 0;
	paused_steps(e, "once", &st, &t, 500, 400, 0, &last, 480);
	if (max_sev("stall", 0) != DETECT_WARNING)
		dump();
	CHECK(max_sev("stall", 0) == DETECT_WARNING);
	detect_engine_free(e);
}

TEST(stall_just_before_a_learned_pause_is_noted)
{
	detect_engine *e = engine(NULL);
	double         t = 0, last = 0;
	uint64_t       st = 0;
	size_t         mark;
	int            noted = 0;

	noise_seed(12345);
	REQUIRE(e != NULL);
	/* A checkpoint every 200 steps lasting 120 s: two seen, so it is
	 * due at step 600, or by the clock about 4 steps either side. */
	paused_steps(e, "ck", &st, &t, 596, 200, 0, &last, 120);
	/* The run stops for 60 s four steps before the checkpoint's step:
	 * it has gone by the clock's window, not by its step; two pauses
	 * cannot tell a timer from a step period, so it is noted. */
	mark = S.n;
	for (double c = t; c < t + 60; c += 0.2)
		detect_tick(e, (int64_t) (c * 1e9), on_alert, &S);
	t += 60;
	paused_steps(e, "ck", &st, &t, 10, 200, 0, &last, 120);
	for (size_t i = mark; i < S.n; i++)
		noted += S.v[i].state == DETECT_FIRING && S.v[i].step == 595
		    && strcmp(S.v[i].kind, "stall") == 0;
	if (noted != 1 || max_sev("stall", mark) != DETECT_INFO)
		dump();
	CHECK(noted == 1);
	CHECK(max_sev("stall", mark) == DETECT_INFO);
	detect_engine_free(e);
}

/* 2 ranks, 10 s steps from *st to `to`, each step in phases "forward"
 * and "backward"; a declared checkpoint of `len` s after the steps in
 * at[] (not periodic), ticked as vitalsd would. */
static void
phased_steps(detect_engine *e, uint64_t *st, double *t, uint64_t to,
    const uint64_t *at, size_t nat, double len)
{
	for (; *st < to; (*st)++) {
		int ck = 0;

		for (size_t i = 0; i < nat; i++)
			ck |= at[i] == *st;
		for (int r = 0; r < 2; r++) {
			feed(e, "ph", r, "vitals/phase/forward", *st,
			    *t + 1 + r * 0.01, 1);
			feed(e, "ph", r, "vitals/phase/backward", *st,
			    *t + 4 + r * 0.01, 1);
			feed(e, "ph", r, "vitals/phase/backward", *st,
			    *t + 9 + r * 0.01, 0);
			feed(e, "ph", r, "step_time", *st, *t + 9 + r * 0.01,
			    9.9);
		}
		*t += 10 * exp(0.03 * noise());
		if (!ck)
			continue;
		for (int r = 0; r < 2; r++)
			feed(e, "ph", r, "vitals/phase/checkpoint", *st,
			    *t + r * 0.01, 1);
		for (double c = *t; c < *t + len; c += 0.2)
			detect_tick(e, (int64_t) (c * 1e9), on_alert, &S);
		*t += len;
		for (int r = 0; r < 2; r++)
			feed(e, "ph", r, "vitals/phase/checkpoint", *st,
			    *t + r * 0.01, 0);
	}
}

TEST(stall_in_a_declared_phase_judged_by_its_history)
{
	detect_engine        *e    = engine(NULL);
	double                t    = 0;
	uint64_t              st   = 0;
	static const uint64_t at[] = { 150, 420, 610, 980, 1230 };
	size_t                mark;
	const got            *g = NULL;

	noise_seed(12345);
	REQUIRE(e != NULL);
	/* Checkpoints of 120 s at no regular step or time, declared with
	 * phase markers: after the first, each is expected (quiet). */
	phased_steps(e, &st, &t, 1300, at, 5, 120);
	for (size_t i = 0; i < S.n; i++)
		CHECK(S.v[i].state != DETECT_FIRING || S.v[i].step < 200);
	/* A checkpoint that hangs: judged against the checkpoints' own
	 * length, it pages at a step + `pause` (not twice that). */
	mark = S.n;
	phased_steps(e, &st, &t, 1400, (const uint64_t[]) { 1350 }, 1, 900);
	for (size_t i = mark; i < S.n && g == NULL; i++)
		if (S.v[i].state == DETECT_FIRING
		    && S.v[i].severity == DETECT_CRITICAL)
			g = &S.v[i];
	if (g == NULL)
		dump();
	REQUIRE(g != NULL);
	CHECK(g->value < 400);
	CHECK(strstr(g->msg, "in phase checkpoint, which usually lasts 1")
	    != NULL);
	detect_engine_free(e);
}

TEST(stall_keeps_a_step_period_across_a_restart)
{
	detect_engine *e = engine(NULL);
	double         t = 0, last = 0;
	uint64_t       st    = 0;
	int            after = 0;

	noise_seed(12345);
	REQUIRE(e != NULL);
	/* A checkpoint every 200 steps lasting 120 s, learned; then the
	 * job restarts from step 850 after a minute down. The trainer
	 * saves at the same steps again: still expected. */
	paused_steps(e, "rs", &st, &t, 1000, 200, 0, &last, 120);
	for (double c = t; c < t + 60; c += 0.2)
		detect_tick(e, (int64_t) (c * 1e9), on_alert, &S);
	t += 60;
	st = 850;
	paused_steps(e, "rs", &st, &t, 400, 200, 0, &last, 120);
	for (size_t i = 0; i < S.n; i++)
		after += S.v[i].state == DETECT_FIRING && S.v[i].step >= 900
		    && strcmp(S.v[i].rule, "stall") == 0;
	if (after)
		dump();
	CHECK(after == 0);
	CHECK(count("restart", DETECT_FIRING) == 1);
	detect_engine_free(e);
}

/* A run of 2 ranks with an evaluation every 250 steps and a checkpoint on
 * a wall-clock timer (looked at once a step). */
typedef struct eval_ckpt {
	const char *run;
	double      step_s;      /* usual step interval */
	double      step_time;   /* the step_time value logged */
	double      eval_s;      /* evaluation length */
	int         eval_jitter; /* evaluation length varies (5%) */
	double      every_s;     /* checkpoint timer */
	double      ckpt_s;      /* checkpoint length */
	uint64_t    eval_every;  /* steps between evaluations */
	double      ckpt_spread; /* of the checkpoint's length */
} eval_ckpt;

static void
eval_and_ckpt_run(detect_engine *e, const eval_ckpt *k, uint64_t *st,
    double *t, uint64_t n, double *last)
{
	for (uint64_t i = 0; i < n; i++, (*st)++) {
		double pause = 0;

		if (*st % k->eval_every == 0 && *st > 0)
			pause += k->eval_s
			    * (k->eval_jitter ? exp(0.05 * noise()) : 1);
		if (*t - *last >= k->every_s) {
			*last = *t;
			pause += k->ckpt_s * exp(k->ckpt_spread * noise());
		}
		for (double c = *t; c < *t + pause; c += 0.2)
			detect_tick(e, (int64_t) (c * 1e9), on_alert, &S);
		*t += pause + k->step_s * exp(0.03 * noise());
		for (int r = 0; r < 2; r++)
			feed(e, k->run, r, "step_time", *st, *t + r * 0.01,
			    k->step_time);
	}
}

/* 10 s steps; a checkpoint every 30 minutes of 150 s; evaluations of
 * eval_len s. */
static void
eval_and_ckpt(detect_engine *e, uint64_t *st, double *t, uint64_t n,
    double *last, double eval_len)
{
	eval_ckpt k = { "ev", 10, 9.9, 0, 0, 1800, 150, 250, 0.05 };

	k.eval_s = eval_len;
	eval_and_ckpt_run(e, &k, st, t, n, last);
}

/* 60 s steps; an evaluation every 250 steps and a checkpoint every 26
 * minutes of wall clock, both 240 s: the checkpoint comes every ~22
 * steps, often inside the evaluation's window of time. */
static void
slow_eval_and_ckpt(
    detect_engine *e, uint64_t *st, double *t, uint64_t n, double *last)
{
	eval_ckpt k = { "slow", 60, 60, 240, 1, 1560, 240, 250, 0.05 };

	eval_and_ckpt_run(e, &k, st, t, n, last);
}

/* 2 ranks, 10 s steps, from step *st for n steps: a pause of `len` s
 * after each step where pause_at() says so. */
static void
pauses(detect_engine *e, const char *run, uint64_t *st, double *t, uint64_t n,
    double (*pause_at)(uint64_t))
{
	for (uint64_t k = 0; k < n; k++, (*st)++) {
		double pause = *st > 0 ? pause_at(*st) : 0;

		for (double c = *t; c < *t + pause; c += 0.2)
			detect_tick(e, (int64_t) (c * 1e9), on_alert, &S);
		*t += pause + 10 * exp(0.03 * noise());
		for (int r = 0; r < 2; r++)
			feed(e, run, r, "step_time", *st, *t + r * 0.01, 9.9);
	}
}

/* A checkpoint every 100 steps (30 s), a long evaluation every 700
 * (320 s: over `pause`, a warning until learned). */
static double
rare_and_frequent(uint64_t st)
{
	return (st % 100 == 0 ? 30 : 0) + (st % 700 == 0 ? 320 : 0);
}

/* An evaluation every 300 steps (40 s); a first checkpoint of 240 s
 * five steps after the one at step 900. */
static double
ckpt_after_eval(uint64_t st)
{
	return (st % 300 == 0 ? 40 : 0) + (st == 905 ? 240 : 0);
}

TEST(stall_learns_two_kinds_of_pause_alike_in_length)
{
	detect_engine *e = engine(NULL);
	double         t = 0, last = 0;
	uint64_t       st = 0;
	size_t         mark;

	noise_seed(12345);
	REQUIRE(e != NULL);
	/* Frequent checkpoints do not push a rare evaluation out: it is
	 * learned after two and quiet after. */
	pauses(e, "rare", &st, &t, 5000, rare_and_frequent);
	for (size_t i = 0; i < S.n; i++)
		if (S.v[i].severity >= DETECT_WARNING && S.v[i].step > 1500)
			CHECK(S.v[i].step <= 1500);
	/* A first checkpoint a few steps after a learned evaluation is not
	 * judged against the evaluation's usual length. */
	detect_engine_free(e);
	e = engine(NULL);
	REQUIRE(e != NULL);
	st = 0;
	t  = 0;
	pauses(e, "near", &st, &t, 1200, ckpt_after_eval);
	if (max_sev("stall", 0) > DETECT_INFO)
		dump();
	CHECK(max_sev("stall", 0) <= DETECT_INFO);
	detect_engine_free(e);
	e = engine(NULL);
	REQUIRE(e != NULL);
	st  = 0;
	t   = 0;
	S.n = 0;
	/* A checkpoint every 30 minutes falls between evaluations every
	 * 250 steps: each is learned with its own rhythm, and when both
	 * come at one step their lengths add up. */
	eval_and_ckpt(e, &st, &t, 4000, &last, 150);
	if (max_sev("stall", 0) > DETECT_INFO)
		dump();
	CHECK(max_sev("stall", 0) <= DETECT_INFO);
	/* An evaluation that hangs for 6 times its length pages. */
	mark = S.n;
	eval_and_ckpt(e, &st, &t, 250, &last, 900);
	CHECK(max_sev("stall", mark) == DETECT_CRITICAL);
	detect_engine_free(e);
	/* A checkpoint in the evaluation's window of time but not at its
	 * step takes no turn of the evaluation (whose step period stays
	 * learned), and the two at one step add up. */
	e = engine(NULL);
	REQUIRE(e != NULL);
	st   = 0;
	t    = 0;
	last = 0;
	S.n  = 0;
	slow_eval_and_ckpt(e, &st, &t, 3000, &last);
	/* (Until both are learned, the two at one step are a first pause
	 * of over `pause`: a warning, by design.) */
	for (size_t i = 0; i < S.n; i++)
		if (S.v[i].severity > DETECT_INFO && S.v[i].step > 600) {
			dump();
			CHECK(S.v[i].step <= 600);
		}
	detect_engine_free(e);
}

/* Stall notes (any severity) of a run fired after step `after`. */
static size_t
stall_notes_after(uint64_t after)
{
	size_t n = 0;

	for (size_t i = 0; i < S.n; i++)
		n += S.v[i].state == DETECT_FIRING && S.v[i].step > after
		    && strcmp(S.v[i].rule, "stall") == 0;
	return n;
}

TEST(stall_timer_keeps_its_rhythm_past_a_short_evaluation)
{
	detect_engine *e = engine(NULL);
	double         t = 0, last = 0;
	uint64_t       st = 0;
	/* 5 s steps; an evaluation of 43 s every 353 steps; a checkpoint
	 * of 240 s every 862 s of wall clock (bench-detect, held-out seed
	 * 42, run 187). When an evaluation falls in the timer's window,
	 * the checkpoint comes a few steps later: the evaluation, five
	 * times shorter, was no turn of the checkpoint. Taken for one, it
	 * moved the timer's rhythm, and every later checkpoint was noted
	 * (22 notes on that run). */
	eval_ckpt k = { "tm", 4.8, 4.8, 43, 1, 862, 240, 353, 0.05 };

	noise_seed(12345);
	REQUIRE(e != NULL);
	eval_and_ckpt_run(e, &k, &st, &t, 6000, &last);
	if (stall_notes_after(1500) != 0)
		dump();
	CHECK(stall_notes_after(1500) == 0);
	CHECK(max_sev("stall", 0) <= DETECT_INFO);
	detect_engine_free(e);
}

/* Firing stall alerts (rule stall, any kind and severity) at steps
 * a..b. */
static size_t
stall_notes_at(uint64_t a, uint64_t b)
{
	size_t n = 0;

	for (size_t i = 0; i < S.n; i++)
		n += S.v[i].state == DETECT_FIRING && S.v[i].step >= a
		    && S.v[i].step <= b && strcmp(S.v[i].rule, "stall") == 0;
	return n;
}

TEST(stall_timer_whose_checkpoint_nearly_fills_its_period)
{
	detect_engine *e = engine(NULL);
	double         t = 0, last = 0;
	uint64_t       st = 0;
	/* 26 s steps; a checkpoint of 240 s (10% spread) every 316 s of
	 * wall clock, so 2 to 4 steps fall between two (bench-detect,
	 * tuning seed 89, run 300). The interval of a checkpoint holds the
	 * step after it too: a long one (290 s and the step) outlasted the
	 * timer's last period (a save and three steps), and a kind whose
	 * pause is longer than its period was taken for no timer, so the
	 * next checkpoints were not due and were noted (113 notes on that
	 * run). Only with three pauses kept (see the second half). */
	eval_ckpt k = { "full", 26, 26, 0, 0, 316, 240, 1000000, 0.1 };
	eval_ckpt a = { "alike", 21.5, 21.5, 230, 1, 340, 240, 1555, 0.1 };
	size_t    n;

	noise_seed(12345);
	REQUIRE(e != NULL);
	eval_and_ckpt_run(e, &k, &st, &t, 1500, &last);
	if (stall_notes_after(300) != 0)
		dump();
	CHECK(stall_notes_after(300) == 0);
	CHECK(max_sev("stall", 0) <= DETECT_INFO);
	detect_engine_free(e);

	/* The same with an evaluation of about the same length every 1555
	 * steps: the checkpoints between evaluations are not noted either.
	 * (On bench-detect, tuning seed 2, run 878, which sends heartbeats
	 * in its pauses, the same rule for two pauses made an evaluation
	 * and the checkpoint next to it a timer: 32 -> 88 transitions.) */
	e = engine(NULL);
	REQUIRE(e != NULL);
	S.n = 0, t = 0, last = 0, st = 0;
	noise_seed(12345);
	eval_and_ckpt_run(e, &a, &st, &t, 6000, &last);
	n = stall_notes_after(300) - stall_notes_at(1545, 1565)
	    - stall_notes_at(3100, 3120) - stall_notes_at(4655, 4675);
	if (n != 0)
		dump();
	CHECK(n == 0);
	detect_engine_free(e);
}

TEST(stall_timer_and_evaluation_alike_in_length_keep_their_turns)
{
	/* A checkpoint of 240 s every 1136 s of wall clock and an
	 * evaluation of 240 s every 260 steps (bench-detect, tuning seed
	 * 97, run 881: 34 notes). With steps of about 38 s the timer looks
	 * like a period of 22 to 24 steps; when its turn falls at the
	 * evaluation's step, the evaluation's pause was taken for both and
	 * the checkpoint that came a step later for no kind (noted), and
	 * an evaluation one step off the timer's period for the timer. */
	double steps[] = { 26, 30, 34, 36, 38, 40, 44 };
	size_t quiet = 0, paged = 0;

	for (int si = 0; si < 7; si++)
		for (int seed = 1; seed <= 4; seed++) {
			detect_engine *e = engine(NULL);
			double         t = 0, last = 0;
			uint64_t       st = 0;
			eval_ckpt      k
			    = { "ec", 38, 38, 240, 1, 1136, 240, 260, 0.1 };

			REQUIRE(e != NULL);
			k.step_s = k.step_time = steps[si];
			S.n                    = 0;
			noise_seed((uint64_t) seed * 777);
			eval_and_ckpt_run(e, &k, &st, &t, 5000, &last);
			quiet += stall_notes_after(300) == 0;
			for (size_t i = 0; i < S.n; i++)
				paged += S.v[i].state == DETECT_FIRING
				    && S.v[i].severity >= DETECT_WARNING
				    && S.v[i].step > 300;
			detect_engine_free(e);
		}
	/* Before: 0 of 28 runs quiet, 5 warnings. The warning left is an
	 * evaluation and a checkpoint in one pause while only one of them
	 * was known due (warned at 1.5x its length). */
	printf("    runs without a note after step 300: %zu of 28; warnings "
	       "after it: %zu\n",
	    quiet, paged);
	CHECK(quiet >= 14);
	CHECK(paged <= 1);
}

TEST(stall_rhythm_of_a_hang_and_a_checkpoint_is_not_sure)
{
	detect_engine *e;
	double         t = 0, last = 0;
	uint64_t       st = 0;

	/* A hang of 125 s after step 299, then a checkpoint of 233 s 300
	 * steps later: alike within 2x, so one kind with a period of 300
	 * steps. Two pauses that far apart in length are no rhythm yet: a
	 * silence of 282 s at its third turn (bench-detect fresh seed 113,
	 * held-out run 404: a hang, never noted) is noted, not warned. */
	for (int j = 0; j < 2; j++) {
		size_t mark;

		noise_seed(4242);
		e = engine(NULL);
		REQUIRE(e != NULL);
		t = 0, last = 0, st = 0, S.n = 0;
		paused_steps(
		    e, "ck", &st, &t, 301, 300, 0, &last, j ? 233 : 125);
		paused_steps(e, "ck", &st, &t, 300, 300, 0, &last, 233);
		mark = S.n;
		paused_steps(e, "ck", &st, &t, 320, 300, 0, &last, 282);
		if (j == 0 && stall_notes_at(899, 899) == 0)
			dump();
		/* Lengths more than 1.5x apart: noted. Alike: the rhythm
		 * holds it back (the control). */
		CHECK(j ? stall_notes_at(899, 899) == 0
		        : stall_notes_at(899, 899) > 0);
		CHECK(max_sev("stall", mark) <= DETECT_INFO);
		detect_engine_free(e);
	}
}

TEST(stall_second_pause_guessed_from_the_first)
{
	detect_engine *e = engine(NULL);
	double         t = 0, last = 0;
	uint64_t       st = 0;

	noise_seed(12345);
	REQUIRE(e != NULL);
	/* A checkpoint every 200 steps of 10 s, lasting 120 s. The first,
	 * 200 steps into the run, is noted; it suggests one every 200
	 * steps, so the second (after step 399), as long, is not. */
	paused_steps(e, "ck", &st, &t, 420, 200, 0, &last, 120);
	if (stall_notes_at(199, 199) == 0 || stall_notes_at(399, 399) != 0)
		dump();
	CHECK(stall_notes_at(199, 199) > 0);
	CHECK(stall_notes_at(399, 399) == 0);
	CHECK(max_sev("stall", 0) == DETECT_INFO);
	detect_engine_free(e);

	/* A second pause much longer than the first (3x) is a silence
	 * like any other: a warning past a step + `pause`. */
	e = engine(NULL);
	REQUIRE(e != NULL);
	t = 0, last = 0, st = 0, S.n = 0;
	paused_steps(e, "ck", &st, &t, 220, 200, 0, &last, 120);
	paused_steps(e, "ck", &st, &t, 200, 200, 0, &last, 360);
	CHECK(stall_notes_at(399, 399) > 0);
	CHECK(max_sev("stall", 0) == DETECT_WARNING);
	detect_engine_free(e);

	/* A first pause longer than a step + `pause` warned (a hang of
	 * 400 s, or a long checkpoint). The period it suggests holds back
	 * the warning of the next, not its note: a hang of 60 s there is
	 * noted (bench-detect held-out seed 101, run 90: a hang of 69 s
	 * was never noted), and a second pause of 400 s is noted, not
	 * warned. */
	for (int j = 0; j < 2; j++) {
		size_t mark;

		e = engine(NULL);
		REQUIRE(e != NULL);
		t = 0, last = 0, st = 0, S.n = 0;
		paused_steps(e, "ck", &st, &t, 220, 200, 0, &last, 400);
		CHECK(max_sev("stall", 0) == DETECT_WARNING);
		mark = S.n;
		paused_steps(
		    e, "ck", &st, &t, 200, 200, 0, &last, j ? 400 : 60);
		if (stall_notes_at(399, 399) == 0)
			dump();
		CHECK(stall_notes_at(399, 399) > 0);
		CHECK(max_sev("stall", mark) == DETECT_INFO);
		detect_engine_free(e);
	}

	/* A stall where no period puts a pause (step 300) is noted. */
	e = engine(NULL);
	REQUIRE(e != NULL);
	t = 0, last = 0, st = 0, S.n = 0;
	paused_steps(e, "ck", &st, &t, 300, 200, 0, &last, 120);
	for (double c = t; c < t + 120; c += 0.2)
		detect_tick(e, (int64_t) (c * 1e9), on_alert, &S);
	t += 120;
	paused_steps(e, "ck", &st, &t, 20, 200, 0, &last, 120);
	CHECK(stall_notes_at(299, 299) > 0);
	detect_engine_free(e);

	/* Every 30 minutes of wall clock, 150 s: the first pause began
	 * 30 minutes into the run, so the second, 30 minutes later, is
	 * not noted. */
	e = engine(NULL);
	REQUIRE(e != NULL);
	t = 0, last = 0, st = 0, S.n = 0;
	paused_steps(e, "wall", &st, &t, 400, 0, 1800, &last, 150);
	if (stall_notes_at(170, 185) == 0 || stall_notes_at(186, 400) != 0)
		dump();
	CHECK(stall_notes_at(170, 185) > 0);
	CHECK(stall_notes_at(186, 400) == 0);
	detect_engine_free(e);
}

TEST(stall_guessed_second_pause_a_little_longer_is_no_warning)
{
	detect_engine *e = engine(NULL);
	double         t = 0, last = 0;
	uint64_t       st = 0;

	noise_seed(12345);
	REQUIRE(e != NULL);
	/* A checkpoint every 200 steps of 10 s: the first lasts 240 s,
	 * under the 300 s a first pause may take without a warning. The
	 * second, due by the rhythm the first suggests, lasts 320 s: past
	 * those 300 s, but within 1.5x the first. A save that takes a
	 * little longer the second time is no warning. */
	paused_steps(e, "ck", &st, &t, 220, 200, 0, &last, 240);
	paused_steps(e, "ck", &st, &t, 200, 200, 0, &last, 320);
	if (max_sev("stall", 0) != DETECT_INFO)
		dump();
	CHECK(stall_notes_at(199, 199) > 0);
	CHECK(max_sev("stall", 0) == DETECT_INFO);
	detect_engine_free(e);

	/* Twice the first (480 s) is a warning: 1.5x is the bound. */
	e = engine(NULL);
	REQUIRE(e != NULL);
	t = 0, last = 0, st = 0, S.n = 0;
	paused_steps(e, "ck", &st, &t, 220, 200, 0, &last, 240);
	paused_steps(e, "ck", &st, &t, 200, 200, 0, &last, 480);
	CHECK(max_sev("stall", 0) == DETECT_WARNING);
	detect_engine_free(e);
}

/* A checkpoint every 40 steps (100 s); a first evaluation after step
 * 380 (130 s), whose rhythm brings the second at step 760, the step of
 * a checkpoint too. */
static double
ckpt_and_first_evals(uint64_t st)
{
	return (st % 40 == 0 ? 100 : 0) + (st % 380 == 0 ? 130 : 0);
}

/* The same, but the run hangs for 10 minutes where both fall due. */
static double
ckpt_and_first_evals_hang(uint64_t st)
{
	return st == 760 ? 600 : ckpt_and_first_evals(st);
}

TEST(stall_learned_and_guessed_pauses_due_together_add_up)
{
	detect_engine *e  = engine(NULL);
	double         t  = 0;
	uint64_t       st = 0;

	noise_seed(12345);
	REQUIRE(e != NULL);
	/* bench-detect, held-out seed 53, run 801: an evaluation seen once
	 * is due by its guessed rhythm where a learned checkpoint is due;
	 * the pause lasts both (230 s), more than 1.5x the checkpoint
	 * alone. The first evaluation is noted; the two together are no
	 * warning. */
	pauses(e, "both", &st, &t, 800, ckpt_and_first_evals);
	if (max_sev("stall", 0) != DETECT_INFO)
		dump();
	CHECK(stall_notes_at(379, 379) > 0);
	CHECK(max_sev("stall", 0) == DETECT_INFO);
	detect_engine_free(e);

	/* A hang there is paged all the same. */
	e = engine(NULL);
	REQUIRE(e != NULL);
	t = 0, st = 0, S.n = 0;
	pauses(e, "both", &st, &t, 800, ckpt_and_first_evals_hang);
	CHECK(stall_notes_at(759, 759) > 0);
	CHECK(max_sev("stall", 0) == DETECT_CRITICAL);
	detect_engine_free(e);
}

TEST(stall_of_one_rank_is_not_learned_as_a_pause)
{
	detect_engine *e = engine(NULL);
	double         t = 0;

	noise_seed(12345);
	REQUIRE(e != NULL);
	/* 4 ranks, 10 s steps. Rank 3 stops for 130 s after step 99
	 * while the others go on (its own stall); every rank stops for a
	 * 150 s checkpoint after step 199. Then the run hangs after step
	 * 299 for 200 s. Taken for a pause of the checkpoint's kind, the
	 * rank's stall would make a rhythm of 100 steps, due at step 299,
	 * and hold back the note of the hang there. */
	for (uint64_t st = 0; st < 320; st++) {
		t += st == 200 ? 150 : st == 300 ? 200 : 10 * exp(0.03 * noise());
		for (int r = 0; r < 4; r++) {
			double tr = t + r * 0.01;

			if (r == 3 && st >= 100 && st < 113)
				continue; /* silent for 13 steps */
			if (st == 300 || st == 200)
				for (double c = t - (st == 300 ? 200 : 150);
				     r == 0 && c < t; c += 0.2)
					detect_tick(e, (int64_t) (c * 1e9),
					    on_alert, &S);
			feed(e, "job", r, "step_time", st, tr, 9.9);
		}
	}
	if (stall_notes_at(299, 299) == 0)
		dump();
	CHECK(stall_notes_at(99, 112) > 0);  /* the rank's stall */
	CHECK(stall_notes_at(299, 299) > 0); /* the hang */
	detect_engine_free(e);
}

/* After step *st - 1, heartbeats of both ranks every 3 s for len s
 * without a step (a hang, or a pause that sends heartbeats); ticks every
 * 0.2 s. */
static void
heartbeat_stretch(detect_engine *e, uint64_t st, double *t, double len)
{
	for (int k = 1; k < (int) (len / 0.2); k++) {
		double c = *t + 0.2 * k;

		detect_tick(e, (int64_t) (c * 1e9), on_alert, &S);
		if (k % 15 == 0) /* every 3 s */
			for (int r = 0; r < 2; r++)
				feed(e, "ck", r, "heartbeat", st - 1,
				    c + r * 0.01, 1);
	}
	*t += len;
}

TEST(stall_heartbeats_where_a_silent_pause_is_due_are_noted)
{
	detect_engine *e = engine(NULL);
	double         t = 0, last = 0;
	uint64_t       st = 0;

	noise_seed(12345);
	REQUIRE(e != NULL);
	/* 10 s steps. A silent checkpoint after step 199 (120 s without a
	 * sample) suggests one every 200 steps. After step 399, where it
	 * puts the second, the run sends heartbeats without a step for
	 * 100 s instead: a checkpoint that was silent does not explain
	 * them, so they are noted (info), as a stretch without progress
	 * is where no pause is due. */
	paused_steps(e, "ck", &st, &t, 400, 200, 0, &last, 120);
	heartbeat_stretch(e, st, &t, 100);
	paused_steps(e, "ck", &st, &t, 20, 0, 0, &last, 0);
	if (stall_notes_at(199, 199) == 0 || stall_notes_at(399, 399) == 0)
		dump();
	CHECK(stall_notes_at(199, 199) > 0);
	CHECK(stall_notes_at(399, 399) > 0);
	CHECK(max_sev("stall", 0) == DETECT_INFO);
	detect_engine_free(e);

	/* A checkpoint that sends heartbeats does explain them: the
	 * second, due by the first's rhythm, is not noted. */
	e = engine(NULL);
	REQUIRE(e != NULL);
	t = 0, last = 0, st = 0, S.n = 0;
	paused_steps(e, "ck", &st, &t, 200, 0, 0, &last, 0);
	heartbeat_stretch(e, st, &t, 120);
	paused_steps(e, "ck", &st, &t, 200, 0, 0, &last, 0);
	heartbeat_stretch(e, st, &t, 100);
	paused_steps(e, "ck", &st, &t, 20, 0, 0, &last, 0);
	if (stall_notes_at(199, 199) == 0 || stall_notes_at(399, 399) != 0)
		dump();
	CHECK(stall_notes_at(199, 199) > 0);
	CHECK(stall_notes_at(399, 399) == 0);
	detect_engine_free(e);
}

TEST(stall_period_of_two_pauses_is_due_at_its_next_turn_only)
{
	detect_engine *e = engine(NULL);
	double         t = 0;

	noise_seed(12345);
	REQUIRE(e != NULL);
	/* 10 s steps on 2 ranks. A checkpoint of 120 s after step 199,
	 * then a hang of 110 s after step 229: alike in length, the two
	 * make a kind with a period of 30 steps. Nothing comes at its next
	 * turn (after step 259). A hang of 100 s after step 319, a later
	 * multiple, is noted: two pauses are no rhythm yet. */
	for (uint64_t st = 0; st < 340; st++) {
		double len = st == 200 ? 120
		    : st == 230        ? 110
		    : st == 320        ? 100
		                       : 0;

		for (double c = t; c < t + len; c += 0.2)
			detect_tick(e, (int64_t) (c * 1e9), on_alert, &S);
		t += len > 0 ? len : 10 * exp(0.03 * noise());
		for (int r = 0; r < 2; r++)
			feed(e, "ck", r, "step_time", st, t + r * 0.01, 9.9);
	}
	if (stall_notes_at(319, 319) == 0)
		dump();
	CHECK(stall_notes_at(199, 199) > 0);
	CHECK(stall_notes_at(229, 229) > 0);
	CHECK(stall_notes_at(319, 319) > 0);
	detect_engine_free(e);
}

TEST(stall_timer_told_from_steps_by_the_attempt_start)
{
	detect_engine *e = engine(NULL);
	double         t = 0, last = 0;
	uint64_t       st = 0;

	noise_seed(12345);
	REQUIRE(e != NULL);
	/* A checkpoint every 30 minutes of wall clock, counted from the
	 * start of the last: 150 s, then 200 s, then 150 s. The steps
	 * between them follow the lengths (165, then 160), so two pauses
	 * look as much like a step period as like a timer; the first one
	 * beginning 30 minutes into the run, as the second after it, says
	 * timer: the third is not noted. */
	paused_steps(e, "wall", &st, &t, 260, 0, 1800, &last, 150);
	paused_steps(e, "wall", &st, &t, 170, 0, 1800, &last, 200);
	paused_steps(e, "wall", &st, &t, 170, 0, 1800, &last, 150);
	if (stall_notes_at(170, 190) == 0 || stall_notes_at(191, 600) != 0)
		dump();
	CHECK(stall_notes_at(170, 190) > 0);
	CHECK(stall_notes_at(191, 600) == 0);
	detect_engine_free(e);
}

/* 2 ranks, steps of 5 s (wander: their swing over 150 steps, as a
 * busy host's), from step *st for n steps: a checkpoint each time
 * every_s s passed since the last began (from_end: since it ended),
 * as long as the next of the nlen lengths len in turn (log spread sd).
 * At the first step at least stall_at s after the fifth checkpoint
 * began (0: none), a silence of stall_s s instead; *before: the step
 * before it. */
static void
timer_ckpts(detect_engine *e, uint64_t *st, double *t, uint64_t n,
    double wander, double every_s, int from_end, const double *len, int nlen,
    double sd, double stall_at, double stall_s, uint64_t *before)
{
	double last = 0;
	int    nck  = 0;

	for (uint64_t k = 0; k < n; k++, (*st)++) {
		double pause = 0;

		if (*t - last >= every_s) {
			pause = len[nck % nlen] * exp(sd * noise());
			last  = from_end ? *t + pause : *t;
			nck++;
		} else if (stall_at > 0 && nck == 5 && *before == 0
		    && *t - last >= stall_at) {
			pause   = stall_s;
			*before = *st - 1;
		}
		for (double c = *t; c < *t + pause; c += 0.2)
			detect_tick(e, (int64_t) (c * 1e9), on_alert, &S);
		*t += pause
		    + 5 * (1 + wander * sin((double) *st / 24))
		        * exp(0.03 * noise());
		for (int r = 0; r < 2; r++)
			feed(e, "tm", r, "step_time", *st, *t + r * 0.01, 4.9);
	}
}

TEST(stall_before_a_timer_is_due_is_noted)
{
	detect_engine *e = engine(NULL);
	double         t = 0, ck = 226;
	double         shorter[3] = { 240, 240, 200 };
	uint64_t       st = 0, before = 0;

	noise_seed(12345);
	REQUIRE(e != NULL);
	/* A checkpoint of 226 s on a 320-s timer counted from the start
	 * of the last: about 19 steps of 5 s between them (bench-detect,
	 * held-out seed 2, run 90). After five checkpoints, a hang of 190
	 * s begins 260 s after the last began, about 60 s before the next
	 * is due: within the clock's window of a timer (2 steps plus a
	 * quarter of its length: about 70 s) it was taken for the checkpoint
	 * coming early, held back to 1.5x its length, and never noted. The
	 * timer has shown it moves by a few seconds only: it is noted. */
	timer_ckpts(
	    e, &st, &t, 220, 0, 320, 0, &ck, 1, 0.02, 260, 190, &before);
	REQUIRE(before > 0);
	if (stall_notes_at(before, before) == 0)
		dump();
	CHECK(stall_notes_at(before, before) > 0);
	detect_engine_free(e);

	/* A timer counted from the end of the last save comes sooner by
	 * as much as that save was shorter than the one before: saves of
	 * 240, 240 and 200 s in turn, 100 s apart (steps that swing by
	 * 20%, so the steps between saves vary and only the clock tells
	 * when one is due). The one after the short save comes 40 s early,
	 * past what the period moved before; it is not noted. */
	e = engine(NULL);
	REQUIRE(e != NULL);
	t = 0, st = 0, before = 0;
	timer_ckpts(
	    e, &st, &t, 800, 0.2, 100, 1, shorter, 3, 0, 0, 0, &before);
	if (stall_notes_after(150) != 0)
		dump();
	CHECK(stall_notes_after(150) == 0);
	CHECK(max_sev("stall", 0) <= DETECT_INFO);
	detect_engine_free(e);
}

/* An evaluation every 500 steps (250 s) and a checkpoint every 578
 * steps (310 s: with a 10 s step, just past a step + `pause`). */
static double
eval_and_long_ckpt(uint64_t st)
{
	return (st % 500 == 0 ? 250 : 0) + (st % 578 == 0 ? 310 : 0);
}

TEST(stall_familiar_length_is_no_warning)
{
	detect_engine *e  = engine(NULL);
	double         t  = 0;
	uint64_t       st = 0;

	noise_seed(12345);
	REQUIRE(e != NULL);
	/* Two kinds of pause alike in length (bench-detect, tuning seed 2,
	 * run 72): the first evaluation and the first checkpoint pair up
	 * while learning (a period of 78 steps), so the third checkpoint
	 * is not due by any kind. A length the run has shown twice is
	 * still no warning before 1.5x it (the info note stays). (The
	 * first checkpoint, a first pause over a step + `pause`, is a
	 * warning by design.) */
	pauses(e, "fam", &st, &t, 3000, eval_and_long_ckpt);
	for (size_t i = 0; i < S.n; i++)
		if (S.v[i].severity > DETECT_INFO && S.v[i].step > 600) {
			dump();
			CHECK(S.v[i].step <= 600);
		}
	CHECK(count("stall", DETECT_FIRING) >= 3);
	detect_engine_free(e);
}

TEST(stall_samples_stamped_far_in_the_past)
{
	detect_engine *e    = engine(NULL);
	const int64_t  now0 = 1700000000000000000ll; /* the collector */
	const int64_t  off  = 600000000000000000ll;  /* ~19 years behind */
	int64_t        now  = now0;
	uint64_t       st;
	const got     *g;

	REQUIRE(e != NULL);
	/* A trainer whose clock is far behind the collector's: its samples
	 * arrive as they are made, stamped ~19 years ago. Not a stall. */
	for (st = 0; st < 6000; st++) {
		now += 200000000ll;
		detect_tick(e, now, on_alert, &S);
		for (int r = 0; r < 4; r++) {
			detect_sample s = { 0 };

			s.run     = "old";
			s.runlen  = 3;
			s.metric  = "step_time";
			s.mlen    = 9;
			s.rank    = r;
			s.step    = st;
			s.time_ns = now - off + r * 1000000;
			s.value   = 0.2;
			detect_feed(e, &s, on_alert, &S);
		}
	}
	if (count("stall", -1) != 0)
		dump();
	CHECK(count("stall", -1) == 0);
	/* It stops: a stall after the usual threshold (5 s), stamped on
	 * the trainer's clock. */
	for (int k = 0; k < 100; k++) {
		now += 200000000ll;
		detect_tick(e, now, on_alert, &S);
	}
	g = first("stall", DETECT_FIRING);
	REQUIRE(g != NULL);
	CHECK(g->rank == -1);
	CHECK(g->time_ns < now0);
	detect_engine_free(e);
}

/* tokens_per_sec (rank 0) and step_time (4 ranks) of run "tp", steps a
 * to b: step time st_lvl, tokens per step tok. */
static void
tp_steps(detect_engine *e, const char *run, uint64_t a, uint64_t b,
    double st_lvl, double tok, int log_tps)
{
	for (uint64_t st = a; st < b; st++) {
		double t  = 1000 + (double) st;
		double dt = st_lvl * exp(0.01 * noise());

		if (log_tps)
			feed(e, run, 0, "tokens_per_sec", st, t,
			    tok / st_lvl * exp(0.01 * noise()));
		for (int r = 0; r < 4; r++)
			feed(e, run, r, "step_time", st, t + r * 0.001, dt);
	}
}

TEST(step_time_and_throughput_are_one_finding)
{
	detect_engine *e = engine(NULL);
	const got     *g;

	noise_seed(12345);
	REQUIRE(e != NULL);
	/* A slow node: step time 10% up, throughput 10% down: one page. */
	tp_steps(e, "slow", 0, 2000, 0.5, 1e5, 1);
	tp_steps(e, "slow", 2000, 2400, 0.55, 1e5, 1);
	if (count_sev("drop", DETECT_FIRING, DETECT_WARNING)
	        + count_sev("rise", DETECT_FIRING, DETECT_WARNING)
	    != 1)
		dump();
	CHECK(count_sev("drop", DETECT_FIRING, DETECT_WARNING)
	        + count_sev("rise", DETECT_FIRING, DETECT_WARNING)
	    == 1);
	tp_steps(e, "slow", 2400, 2800, 0.5, 1e5, 1);
	detect_flush(e, on_alert, &S);
	/* One resolution for the one incident. */
	CHECK(count("drop", DETECT_RESOLVED) + count("rise", DETECT_RESOLVED)
	    == 1);

	/* A longer sequence: step time 10% up and 10% more tokens per
	 * step, throughput holds: not a slowdown (info). */
	S.n = 0;
	tp_steps(e, "seq", 0, 2000, 0.5, 1e5, 1);
	tp_steps(e, "seq", 2000, 2400, 0.55, 1.1e5, 1);
	g = first("rise", DETECT_FIRING);
	REQUIRE(g != NULL);
	CHECK(g->severity == DETECT_INFO);
	CHECK(strstr(g->msg, "not a slowdown") != NULL);
	CHECK(count("drop", -1) == 0);

	/* A slow node that recovers while the sequence length grew by as
	 * much: throughput is back, step time stays up (more work per
	 * step). The slowdown is over, and the next one pages again. */
	S.n = 0;
	tp_steps(e, "ramp", 0, 2000, 0.5, 1e5, 1);
	tp_steps(e, "ramp", 2000, 2400, 0.55, 1e5, 1);
	tp_steps(e, "ramp", 2400, 3000, 0.55, 1.1e5, 1);
	CHECK(count("drop", DETECT_RESOLVED) + count("rise", DETECT_RESOLVED)
	    == 1);
	tp_steps(e, "ramp", 3000, 3400, 0.605, 1.1e5, 1);
	if (count_sev("drop", DETECT_FIRING, DETECT_WARNING) != 2)
		dump();
	CHECK(count_sev("drop", DETECT_FIRING, DETECT_WARNING) == 2);

	/* Without a throughput metric, step time alone decides. */
	S.n = 0;
	tp_steps(e, "bare", 0, 2000, 0.5, 1e5, 0);
	tp_steps(e, "bare", 2000, 2400, 0.55, 1e5, 0);
	g = first("rise", DETECT_FIRING);
	REQUIRE(g != NULL);
	CHECK(g->severity == DETECT_WARNING);
	detect_engine_free(e);
}

/* One step of run: tokens_per_sec tps on rank 0, then the step time
 * lvl of each of n ranks with 1% noise of its own. */
static void
tp_step(detect_engine *e, const char *run, uint64_t step, double t, double tps,
    double lvl, int n)
{
	feed(e, run, 0, "tokens_per_sec", step, t, tps);
	for (int r = 0; r < n; r++)
		feed(e, run, r, "step_time", step, t + r * 0.001,
		    lvl * exp(0.01 * noise()));
}

/* tokens_per_sec (rank 0) with a sample's jitter of tps_sd and a quiet
 * step_time (4 ranks) of run "run", samples a to b, logged every
 * `every` steps: step time st_lvl, tokens per step tok. */
static void
jittery_tp_steps(detect_engine *e, const char *run, uint64_t a, uint64_t b,
    double st_lvl, double tok, double tps_sd, uint64_t every)
{
	for (uint64_t i = a; i < b; i++) {
		double t = 1000 + (double) i;

		tp_step(e, run, i * every, t,
		    tok / st_lvl * exp(tps_sd * noise()), st_lvl, 4);
	}
}

TEST(step_time_rise_pages_when_a_jittery_throughput_fell_with_it)
{
	detect_engine *e = engine(NULL);
	const got     *g;

	noise_seed(2024);
	REQUIRE(e != NULL);
	/* A slow node, step time 8% up, on a run whose throughput jitters
	 * by 10% a sample: throughput falls 7.4%, under its own threshold
	 * (5 times its noise: 8%), but with the step time, and by more than
	 * 4 times its noise: a slowdown, paged by the step time. */
	jittery_tp_steps(e, "slow", 0, 2000, 0.5, 1e5, 0.10, 1);
	jittery_tp_steps(e, "slow", 2000, 2400, 0.54, 1e5, 0.10, 1);
	if (count_sev("rise", DETECT_FIRING, DETECT_WARNING) != 1)
		dump();
	CHECK(count("drop", DETECT_FIRING) == 0);
	CHECK(count_sev("rise", DETECT_FIRING, DETECT_WARNING) == 1);
	g = first("rise", DETECT_FIRING);
	REQUIRE(g != NULL);
	CHECK(strstr(g->msg, "tokens_per_sec -") != NULL);
	CHECK(strstr(g->msg, "a slowdown") != NULL);

	/* The same jitter, and 8% more tokens per step with the step time:
	 * throughput holds, more work per step, not paged. */
	S.n = 0;
	jittery_tp_steps(e, "seq", 0, 2000, 0.5, 1e5, 0.10, 1);
	jittery_tp_steps(e, "seq", 2000, 2400, 0.54, 1.08e5, 0.10, 1);
	if (count_sev("rise", DETECT_FIRING, DETECT_INFO) != 1)
		dump();
	CHECK(count_sev("rise", DETECT_FIRING, DETECT_INFO) == 1);
	CHECK(count_sev("rise", DETECT_FIRING, DETECT_WARNING) == 0);
	CHECK(count("drop", DETECT_FIRING) == 0);

	/* A run that logs every 10th step, a slow node 15% slower: the
	 * step time's finding, confirmed over the same samples (not the
	 * same count of steps), pages first. */
	S.n = 0;
	jittery_tp_steps(e, "tenth", 0, 2000, 0.5, 1e5, 0.03, 10);
	jittery_tp_steps(e, "tenth", 2000, 2100, 0.575, 1e5, 0.03, 10);
	g = first("rise", DETECT_FIRING);
	if (g == NULL || g->severity != DETECT_WARNING)
		dump();
	REQUIRE(g != NULL);
	CHECK(g->severity == DETECT_WARNING);
	CHECK(g->step <= 20200);
	CHECK(strstr(g->msg, "a slowdown") != NULL);
	detect_engine_free(e);
}

/* step_time (2 ranks) and tokens_per_sec (rank 0) of run "host", steps
 * a to b, on a busy shared host: the level wanders as busy_steps' does
 * (sd 15%, *x its state), with 1% noise of each rank's own and 3% on
 * throughput; slow: how much slower every step is (1: not). */
static void
busy_tp_steps(detect_engine *e, uint64_t a, uint64_t b, double *x, double slow)
{
	for (uint64_t st = a; st < b; st++) {
		double t = 1000 + (double) st, lvl;

		*x  = 0.98 * *x + 0.15 * 0.199 * noise();
		lvl = 0.5 * exp(*x) * slow;
		tp_step(
		    e, "host", st, t, 1e5 / lvl * exp(0.03 * noise()), lvl, 2);
	}
}

TEST(step_time_rise_on_a_busy_host_confirmed_at_its_own_lag)
{
	int paged = 0, early = 0;

	/* 200 busy hosts (the level wanders by 15%, as in
	 * level_jump_finds_a_step_on_a_wandering_level); at step 3000 every
	 * step becomes 20% slower for good. The step time's jump test
	 * names it within a few samples on about half of them; throughput
	 * fell as much over those samples, but against the window before
	 * them the host's wander mostly hides it. Judged at the finding's
	 * own lag too (the `short` samples just before them), a few more
	 * are a slowdown and page: 5 of 200 (none when judged against the
	 * window alone). The rest stay notes: within 4 times the
	 * throughput's noise at either lag. None pages before the step. */
	for (int k = 1; k <= 200; k++) {
		detect_engine *e = engine(NULL);
		double         x = 0;

		REQUIRE(e != NULL);
		S.n = 0;
		noise_seed((uint64_t) k * 7919);
		busy_tp_steps(e, 0, 3000, &x, 1);
		early += count_sev("rise", DETECT_FIRING, DETECT_WARNING)
		    + count_sev("drop", DETECT_FIRING, DETECT_WARNING);
		busy_tp_steps(e, 3000, 3100, &x, 1.2);
		paged += count_sev("rise", DETECT_FIRING, DETECT_WARNING)
		        + count_sev("drop", DETECT_FIRING, DETECT_WARNING)
		    > 0;
		detect_engine_free(e);
	}
	printf("    paged within 100 steps: %d of 200; before the step: %d\n",
	    paged, early);
	CHECK(early == 0);
	CHECK(paged >= 3);
}

/* step_time (4 ranks, 1% noise each) and tokens_per_sec (rank 0, 3%
 * jitter) of run "ramp", steps a to b, under a ramp of the work per
 * step between steps 1500 and 1720: step time up 24%, tokens per step
 * up 19%, so throughput falls 4% as planned. */
static void
ramp_tp_steps(detect_engine *e, uint64_t a, uint64_t b)
{
	for (uint64_t st = a; st < b; st++) {
		double t   = 1.2 * (double) st;
		double x   = st < 1500 ? 0
		      : st < 1720      ? (double) (st - 1500) / 220
		                       : 1;
		double lvl = 1.2 * (1 + 0.24 * x);

		tp_step(e, "ramp", st, t,
		    1e5 * (1 + 0.19 * x) / lvl * exp(0.03 * noise()), lvl, 4);
	}
}

TEST(step_time_ramp_with_throughput_falling_as_planned_is_not_paged)
{
	int paged = 0, noted = 0;

	/* Where a fast ramp of the work per step begins (24% over 220
	 * steps), C moves off B as a shift would, and throughput, falling
	 * 4% as planned, confirms it over the same samples. But the step
	 * time keeps rising past C's median: not a level yet, not a
	 * slowdown. 30 runs: 2 paged and 30 noted before the windows' test
	 * asked for a settled level, none since; a slowdown that is a step
	 * still pages
	 * (step_time_rise_pages_when_a_jittery_throughput_fell_with_it above).
	 */
	for (int k = 1; k <= 30; k++) {
		detect_engine *e = engine(NULL);

		REQUIRE(e != NULL);
		S.n = 0;
		noise_seed((uint64_t) k * 104729);
		ramp_tp_steps(e, 0, 2400);
		paged += count_sev("rise", DETECT_FIRING, DETECT_WARNING)
		        + count_sev("drop", DETECT_FIRING, DETECT_WARNING)
		    > 0;
		noted += count("rise", DETECT_FIRING) > 0;
		detect_engine_free(e);
	}
	printf("    ramps paged: %d of 30 (with any rise alert: %d)\n", paged,
	    noted);
	CHECK(paged == 0);
}

TEST(straggler_names_rank_and_host)
{
	detect_engine *e = engine(NULL);
	const got     *g;

	noise_seed(12345);
	REQUIRE(e != NULL);
	for (uint64_t st = 0; st < 600; st++)
		for (int r = 0; r < 8; r++) {
			double v = (r == 5 && st >= 300 ? 1.08 : 1.0)
			    * exp(0.01 * noise());

			feed(e, "job", r, "iteration_time", st,
			    2.0 * (double) st + 0.001 * r, v);
		}
	g = first("straggler", DETECT_FIRING);
	REQUIRE(g != NULL);
	CHECK(g->rank == 5 && strcmp(g->host, "host5") == 0);
	CHECK(g->step > 300 && g->step < 400);
	CHECK(count("straggler", DETECT_FIRING) == 1);
	detect_engine_free(e);
}

TEST(threshold_entropy_collapse_relative)
{
	detect_engine *e = engine(NULL);
	const got     *g;

	noise_seed(12345);
	REQUIRE(e != NULL);
	for (uint64_t st = 0; st < 1000; st++)
		feed(e, "r", 0, "policy/entropy", st, (double) st,
		    2.0 * (1 - 0.0004 * (double) st) * exp(0.02 * noise()));
	CHECK(S.n == 0);
	for (uint64_t st = 1000; st < 1100; st++)
		feed(e, "r", 0, "policy/entropy", st, (double) st, 0.05);
	g = first("threshold", DETECT_FIRING);
	REQUIRE(g != NULL);
	CHECK(g->step == 1009); /* 10 steps below 10% of the start */
	CHECK(count("drop", DETECT_FIRING) == 1); /* the fast fall */
	for (uint64_t st = 1100; st < 1130; st++)
		feed(e, "r", 0, "policy/entropy", st, (double) st, 1.0);
	CHECK(count("threshold", DETECT_RESOLVED) == 1);
	detect_engine_free(e);
}

TEST(flatline_stuck_grad_norm)
{
	detect_engine *e = engine(NULL);
	const got     *g;

	noise_seed(12345);
	REQUIRE(e != NULL);
	for (uint64_t st = 0; st < 100; st++)
		feed(e, "r", 0, "grad_norm", st, (double) st,
		    0.5 * exp(0.1 * noise()));
	for (uint64_t st = 100; st < 200; st++)
		feed(e, "r", 0, "grad_norm", st, (double) st, 0.0);
	g = first("flatline", DETECT_FIRING);
	REQUIRE(g != NULL);
	CHECK(g->step == 150);
	for (uint64_t st = 200; st < 225; st++)
		feed(e, "r", 0, "grad_norm", st, (double) st,
		    0.4 * exp(0.1 * noise()));
	CHECK(count("flatline", DETECT_RESOLVED) == 1);
	detect_engine_free(e);
}

TEST(series_limit_reported_once)
{
	detect_engine *e
	    = engine("max_series = 3\n"
	             "rule n { metric = '.*' detector = nonfinite }");
	detect_stats st;
	char         m[16];

	REQUIRE(e != NULL);
	for (int i = 0; i < 6; i++) {
		/* One run each: NaNs of one run are one incident. */
		snprintf(m, sizeof(m), "r%d", i);
		feed(e, m, 0, "loss", 1, 1, NAN);
	}
	CHECK(count("series_limit", -1) == 1);
	CHECK(count("nonfinite", DETECT_FIRING) == 3);
	detect_engine_stats(e, &st);
	CHECK(st.series == 3 && st.series_dropped == 3);
	detect_engine_free(e);
}

/* Issue 15: one run past its series budget loses detection for its own
 * new series only; without the budget it takes the whole max_series. */
TEST(run_over_its_budget_does_not_blind_others)
{
	detect_engine *e
	    = engine("max_series = 200\n"
	             "rule n { metric = '.*' detector = nonfinite }");
	detect_stats st;
	char         m[16];
	size_t       nb = 0;

	REQUIRE(e != NULL);
	detect_engine_budget(e, 100, -1);
	for (int i = 0; i < 500; i++) {
		snprintf(m, sizeof(m), "m%d", i);
		feed(e, "noisy", 0, m, 1, 1, 1.0);
	}
	feed(e, "victim", 0, "loss", 1, 2, NAN);
	CHECK(count("nonfinite", DETECT_FIRING) == 1);
	CHECK(count("series_limit", -1) == 1);
	for (size_t i = 0; i < S.n; i++) {
		if (strcmp(S.v[i].rule, "detect_budget") != 0)
			continue;
		nb++;
		CHECK(strstr(S.v[i].msg, "run noisy") != NULL);
		CHECK(S.v[i].rank == -1 && strcmp(S.v[i].metric, "m100") == 0);
	}
	CHECK(nb == 1);
	detect_engine_stats(e, &st);
	CHECK(st.series == 101 && st.budget_refused == 400);
	detect_engine_free(e);
}

/* When max_series are tracked, the series fed least recently goes if idle
 * past the bound (its run too, resolving what fired); a series fed
 * recently stays, and with nothing idle new series are unchecked. */
TEST(idle_series_evicted_least_recently_fed_first)
{
	detect_engine *e
	    = engine("max_series = 3\n"
	             "rule n { metric = '.*' detector = nonfinite }");
	detect_stats st;
	const got   *g;

	REQUIRE(e != NULL);
	detect_engine_budget(e, 0, 10 * 1000000000ll);
	feed(e, "a", 0, "x", 1, 1, NAN);
	feed(e, "b", 0, "y", 1, 2, 1.0);
	feed(e, "b", 0, "z", 1, 3, 1.0);
	/* Nothing idle 10 s yet: c is not checked. */
	feed(e, "c", 0, "w", 1, 4, NAN);
	CHECK(count("series_limit", -1) == 1);
	CHECK(count("nonfinite", DETECT_FIRING) == 1);
	/* Later, a/x (fed first) goes, and run a's alert is resolved. */
	feed(e, "b", 0, "y", 2, 100, 1.0);
	feed(e, "c", 0, "w", 2, 101, NAN);
	CHECK(count("nonfinite", DETECT_FIRING) == 2);
	g = first("nonfinite", DETECT_RESOLVED);
	REQUIRE(g != NULL);
	CHECK(strstr(g->msg, "run a forgotten") != NULL);
	/* Next, b/z (idle since 3), not b/y (fed at 100). */
	feed(e, "d", 0, "v", 1, 102, 1.0);
	feed(e, "b", 0, "y", 3, 103, 1.0);
	detect_engine_stats(e, &st);
	CHECK(st.series == 3 && st.series_evicted == 2);
	CHECK(count("series_limit", -1) == 1);
	/* The forgotten series starts again from scratch. */
	feed(e, "a", 0, "x", 2, 200, NAN);
	CHECK(count("nonfinite", DETECT_FIRING) == 3);
	detect_engine_free(e);
}

TEST(exec_action_on_firing_above_exec_on)
{
	detect_engine *e = engine(
	    "rule n { metric = '.*' detector = nonfinite severity = warning\n"
	    "  exec = ['/usr/bin/page', '--team'] timeout = 3s }\n");
	const got *g;

	REQUIRE(e != NULL);
	feed(e, "r", 0, "loss", 1, 1, NAN);
	feed(e, "r", 0, "loss", 2, 2, 1);
	detect_flush(e, on_alert, &S);
	g = first("nonfinite", DETECT_FIRING);
	REQUIRE(g != NULL);
	CHECK(g->has_exec && strcmp(g->exec0, "/usr/bin/page") == 0);
	CHECK(g->exec_timeout_ms == 3000);
	g = first("nonfinite", DETECT_RESOLVED);
	REQUIRE(g != NULL);
	CHECK(!g->has_exec);
	detect_engine_free(e);
}

/* ---- reload ------------------------------------------------------------- */

static const char *rules_a = "rule s { metric = 'loss' detector = spike "
                             "warmup = 100 }\n";
static const char *rules_b = "rule s { metric = 'loss' detector = spike "
                             "warmup = 100 }\n"
                             "rule n { metric = '.*' detector = nonfinite }\n";
static const char *rules_c = "rule s { metric = 'loss' detector = spike "
                             "warmup = 100 z = 5 }\n";

static int
reload_then_spike(const char *after)
{
	detect_engine *e = engine(rules_a);
	detect_rules  *r;
	char           err[256];
	int            fired;

	if (e == NULL)
		return -1;
	healthy(e, "r", 0, 200, 1, 0, 0);
	if (detect_rules_parse(
	        after, strlen(after), "new", &r, err, sizeof(err))
	        != 0
	    || detect_engine_reload(e, r) != 0)
		return -1;
	detect_rules_free(r);
	/* A spike right after the reload: seen only if the rule kept its
	 * warmed-up baseline. */
	healthy(e, "r", 200, 230, 3, 205, 5);
	fired = count("spike", DETECT_FIRING) > 0;
	feed(e, "r", 0, "loss", 230, 1460, NAN);
	if (count("nonfinite", -1) != (strstr(after, "nonfinite") ? 1u : 0u))
		fired = -1;
	detect_engine_free(e);
	return fired;
}

/* ---- incidents ---------------------------------------------------------- */

/* Alerts of a rule in a state (-1: any). */
static size_t
count_rule(const char *rule, int state)
{
	size_t n = 0;

	for (size_t i = 0; i < S.n; i++)
		if (strcmp(S.v[i].rule, rule) == 0
		    && (state < 0 || S.v[i].state == state))
			n++;
	return n;
}

/*
 * The rules that look at the metric name alone are asked once per name
 * (detect/engine.c keeps their verdicts); a rule with a rank pattern is
 * asked for each series. Series of one name on four ranks (a run each,
 * so that each alert is its own incident): the name-only rule watches
 * all four, the rank rule only rank 0's, and after a reload the new
 * rules' verdicts are the ones used.
 */
TEST(rules_by_name_and_by_rank_watch_the_right_series)
{
	detect_engine *e = engine(
	    "rule all { metric = '^loss$' detector = nonfinite }\n"
	    "rule r0 { metric = '^loss$' rank = '^0$' detector = nonfinite }\n"
	    "rule acc { metric = '^acc$' detector = nonfinite }\n");
	const char   *runs[] = { "a", "b", "c", "d", "e", "f" };
	detect_rules *r;
	char          err[256];

	REQUIRE(e != NULL);
	for (int k = 0; k < 4; k++)
		feed(e, runs[k], k, "loss", 1, 1, NAN);
	feed(e, "a", 0, "acc", 1, 1, NAN);
	CHECK(count_rule("all", DETECT_FIRING) == 4);
	CHECK(count_rule("r0", DETECT_FIRING) == 1);
	CHECK(count_rule("acc", DETECT_FIRING) == 1);
	REQUIRE(detect_rules_parse("rule r12 { metric = '^loss$' rank = "
	                           "'^[12]$' detector = nonfinite }\n"
	                           "rule any { metric = 'o' detector = "
	                           "nonfinite }\n",
	            strlen("rule r12 { metric = '^loss$' rank = "
	                   "'^[12]$' detector = nonfinite }\n"
	                   "rule any { metric = 'o' detector = "
	                   "nonfinite }\n"),
	            "new", &r, err, sizeof(err))
	    == 0);
	REQUIRE(detect_engine_reload(e, r) == 0);
	detect_rules_free(r);
	S.n = 0;
	feed(e, runs[4], 1, "loss", 2, 2, NAN);
	feed(e, runs[5], 0, "loss", 2, 2, NAN);
	CHECK(count_rule("r12", DETECT_FIRING) == 1);
	CHECK(count_rule("any", DETECT_FIRING) == 2);
	CHECK(count_rule("all", DETECT_FIRING) == 0);
	detect_engine_free(e);
}

TEST(heartbeat_hang_is_one_alert)
{
	detect_engine *e = engine(NULL);
	double         t = 0;
	uint64_t       st;

	REQUIRE(e != NULL);
	for (st = 0; st < 300; st++, t += 1)
		for (int r = 0; r < 4; r++)
			feed(e, "hb", r, "step_time", st, t + r * 0.01, 1);
	CHECK(S.n == 0);
	/* 40 minutes of heartbeats every 15 s at the old step, clock ticks
	 * in between as vitalsd sends them. */
	for (int k = 0; k < 160; k++) {
		for (double c = t; c < t + 15; c += 0.2)
			detect_tick(e, (int64_t) (c * 1e9), on_alert, &S);
		t += 15;
		feed(e, "hb", 0, "heartbeat", st - 1, t, 1);
	}
	if (count_rule("stall", DETECT_FIRING) > 3)
		dump();
	/* One incident: it may escalate (warning, critical, progress
	 * stall) but never resolves and fires again. */
	CHECK(count_rule("stall", DETECT_FIRING) <= 3);
	CHECK(count_rule("stall", DETECT_RESOLVED) == 0);
	CHECK(count("progress_stall", DETECT_FIRING) >= 1);
	CHECK(S.v[S.n - 1].severity == DETECT_CRITICAL);
	for (int k = 0; k < 30; k++, st++, t += 1)
		for (int r = 0; r < 4; r++)
			feed(e, "hb", r, "step_time", st, t + r * 0.01, 1);
	CHECK(count_rule("stall", DETECT_RESOLVED) == 1);
	CHECK(S.n == count_rule("stall", -1));
	detect_engine_free(e);
}

TEST(heartbeat_hang_after_a_noted_pause_is_its_own_alert)
{
	detect_engine *e = engine(NULL);
	double         t = 0;
	uint64_t       st;
	const got     *g;

	REQUIRE(e != NULL);
	/* 10 s steps; a first checkpoint of 60 s after step 300, noted at
	 * info; three steps later the run hangs, rank 0 sending heartbeats
	 * every 5 s for 200 s. The hang is not the checkpoint's note
	 * returning within the hold: it fires its own progress stall. */
	for (st = 0; st < 304; st++) {
		t += 10;
		if (st == 301) {
			for (double c = t; c < t + 60; c += 0.2)
				detect_tick(
				    e, (int64_t) (c * 1e9), on_alert, &S);
			t += 60;
		}
		for (int r = 0; r < 2; r++)
			feed(e, "hh", r, "step_time", st, t + r * 0.01, 9.9);
	}
	CHECK(count_rule("stall", DETECT_FIRING) == 1);
	heartbeats(e, "hh", st, &t, 40, 5);
	g = first("progress_stall", DETECT_FIRING);
	if (g == NULL)
		dump();
	REQUIRE(g != NULL);
	CHECK(g->step == 303);
	/* The checkpoint's note resolved before it, once. */
	CHECK(count("stall", DETECT_RESOLVED) == 1);
	detect_engine_free(e);
}

TEST(one_rule_on_four_ranks_is_one_incident)
{
	detect_engine *e = engine(NULL);
	const got     *g;

	noise_seed(12345);
	REQUIRE(e != NULL);
	for (uint64_t st = 0; st < 200; st++)
		for (int r = 0; r < 4; r++)
			feed(e, "dp", r, "loss", st, (double) st + r * 0.01,
			    st == 120 || (st == 121 && r > 1)
			        ? NAN
			        : loss_at(st) * exp(0.02 * noise()));
	if (count("nonfinite", DETECT_FIRING) != 1)
		dump();
	/* One page naming the first rank and step; the other ranks join
	 * it as info events (the built-in nonfinite rule names the origin:
	 * docs/distributed.md). */
	CHECK(count_sev("nonfinite", DETECT_FIRING, DETECT_CRITICAL) == 1);
	CHECK(count_sev("nonfinite", DETECT_FIRING, DETECT_INFO) == 3);
	g = first("nonfinite", DETECT_FIRING);
	REQUIRE(g != NULL);
	CHECK(g->rank == 0 && g->step == 120);
	CHECK(g->severity == DETECT_CRITICAL);
	CHECK(count("nonfinite", DETECT_RESOLVED) == 1);
	g = first("nonfinite", DETECT_RESOLVED);
	REQUIRE(g != NULL);
	CHECK(g->rank == 0);
	CHECK(strstr(g->msg, "started on rank 0 at step 120") != NULL);
	detect_engine_free(e);
}

TEST(finished_run_leaves_nothing_firing)
{
	detect_engine *e = engine(NULL);
	const got     *g;

	noise_seed(12345);
	REQUIRE(e != NULL);
	for (uint64_t st = 0; st < 100; st++)
		for (int r = 0; r < 2; r++)
			feed(e, "fin", r, "loss", st, (double) st + r * 0.01,
			    st >= 98 && r == 1
			        ? NAN
			        : loss_at(st) * exp(0.02 * noise()));
	CHECK(count("nonfinite", DETECT_FIRING) == 1);
	for (int r = 0; r < 2; r++)
		detect_end(
		    e, "fin", 3, r, (int64_t) (100 * 1e9), on_alert, &S);
	CHECK(count("nonfinite", DETECT_RESOLVED) == 1);
	g = first("nonfinite", DETECT_RESOLVED);
	REQUIRE(g != NULL);
	CHECK(strstr(g->msg, "finished") != NULL);
	CHECK(count_rule("nonfinite", DETECT_FIRING)
	    == count_rule("nonfinite", DETECT_RESOLVED));
	detect_engine_free(e);
}

TEST(reload_keeps_state_of_unchanged_rules)
{
	noise_seed(12345);
	CHECK(reload_then_spike(rules_b) == 1); /* s unchanged, n added */
	CHECK(reload_then_spike(rules_c) == 0); /* s changed: fresh */
}

/* ---- alert JSON ----------------------------------------------------------
 */

TEST(alert_json_round_trips)
{
	detect_alert        a = { 0 };
	char                buf[1024], small[16];
	size_t              n;
	struct json_object *o, *v;

	a.rule     = "r\"1";
	a.kind     = "nonfinite";
	a.severity = DETECT_CRITICAL;
	a.state    = DETECT_FIRING;
	a.run      = "run\n1";
	a.runlen   = 5;
	a.rank     = 3;
	a.host     = "h";
	a.hostlen  = 1;
	a.metric   = "loss";
	a.mlen     = 4;
	a.step     = 18446744073709551615ull;
	a.time_ns  = 1700000000123456789ll;
	a.value    = -INFINITY;
	a.baseline = NAN;
	a.message  = "m";
	n          = detect_alert_json(&a, buf, sizeof(buf));
	CHECK(n == strlen(buf) && buf[n - 1] == '\n');
	CHECK(strstr(buf, "\"time\":1700000000.123456789") != NULL);
	CHECK(strstr(buf, "\"value\":-Infinity,\"baseline\":null") != NULL);
	CHECK(strstr(buf, "\"step\":18446744073709551615") != NULL);
	o = json_tokener_parse(buf);
	REQUIRE(o != NULL);
	CHECK(json_object_object_get_ex(o, "run", &v)
	    && strcmp(json_object_get_string(v), "run\n1") == 0);
	CHECK(json_object_object_get_ex(o, "rule", &v)
	    && strcmp(json_object_get_string(v), "r\"1") == 0);
	json_object_put(o);
	/* Too small: says how much it needs, stays terminated. */
	CHECK(detect_alert_json(&a, small, sizeof(small)) == n);
	CHECK(strlen(small) == sizeof(small) - 1);
}

/* The alert reader gives back every field the writer wrote, each as the
 * JSON type it was written as. */
TEST(alert_reader_reads_what_the_writer_wrote)
{
	detect_alert        a = { 0 };
	detect_alert_record r;
	char                buf[1024], err[128];
	size_t              n;

	a.rule     = "r\"1\\";
	a.kind     = "nonfinite";
	a.severity = DETECT_CRITICAL;
	a.state    = DETECT_RESOLVED;
	a.run      = "run\n1\x01\xc3\xa9";
	a.runlen   = 8;
	a.rank     = -1;
	a.host     = "h";
	a.hostlen  = 1;
	a.metric   = "loss";
	a.mlen     = 4;
	a.step     = 18446744073709551615ull;
	a.time_ns  = 1700000000123456789ll;
	a.value    = NAN;
	a.baseline = 0.1;
	a.message  = "m";
	n          = detect_alert_json(&a, buf, sizeof(buf));
	REQUIRE(n < sizeof(buf));
	REQUIRE(detect_alert_parse(buf, n, &r, err, sizeof(err)) == 0);
	CHECK(strcmp(r.f[DETECT_AF_RULE].str, "r\"1\\") == 0);
	CHECK(strcmp(r.f[DETECT_AF_SEVERITY].str, "critical") == 0);
	CHECK(strcmp(r.f[DETECT_AF_STATE].str, "resolved") == 0);
	CHECK(strcmp(r.f[DETECT_AF_RUN].str, "run\n1\x01\xc3\xa9") == 0);
	CHECK(r.f[DETECT_AF_RANK].type == DETECT_AT_INT
	    && r.f[DETECT_AF_RANK].i == -1);
	CHECK(r.f[DETECT_AF_STEP].type == DETECT_AT_INT
	    && r.f[DETECT_AF_STEP].u == 18446744073709551615ull
	    && r.f[DETECT_AF_STEP].i == INT64_MAX);
	CHECK(r.f[DETECT_AF_TIME].type == DETECT_AT_REAL
	    && r.f[DETECT_AF_TIME].num == 1700000000.123456789);
	CHECK(r.f[DETECT_AF_VALUE].type == DETECT_AT_REAL
	    && isnan(r.f[DETECT_AF_VALUE].num));
	CHECK(r.f[DETECT_AF_BASELINE].type == DETECT_AT_REAL
	    && r.f[DETECT_AF_BASELINE].num == 0.1);
	CHECK(strcmp(r.f[DETECT_AF_MESSAGE].str, "m") == 0);
	detect_alert_record_free(&r);
	for (int i = 0; i < DETECT_AF_COUNT; i++)
		CHECK(strstr(buf, detect_alert_field_name(i)) != NULL);
	CHECK(detect_alert_field_name(DETECT_AF_COUNT) == NULL);
}

TEST(alert_reader_types_and_errors)
{
	detect_alert_record r;
	char                err[128];
	const char         *j = " {\"rank\":2,\"x\":[1,{\"y\":\"z\"}],"
	                        "\"value\":null,\"kind\":\"a\\u00e9\\ud83d\\ude00\","
	                        "\"kind\":\"b\\u00e9\\ud83d\\ude00\","
	                        "\"baseline\":-Infinity,\"host\":true,"
	                        "\"step\":-3} trailing";

	REQUIRE(detect_alert_parse(j, strlen(j), &r, err, sizeof(err)) == 0);
	CHECK(r.f[DETECT_AF_RANK].type == DETECT_AT_INT
	    && r.f[DETECT_AF_RANK].num == 2);
	CHECK(r.f[DETECT_AF_VALUE].type == DETECT_AT_NULL
	    && isnan(r.f[DETECT_AF_VALUE].num));
	CHECK(
	    strcmp(r.f[DETECT_AF_KIND].str, "b\xc3\xa9\xf0\x9f\x98\x80") == 0);
	CHECK(r.f[DETECT_AF_BASELINE].type == DETECT_AT_REAL
	    && r.f[DETECT_AF_BASELINE].num == -INFINITY);
	CHECK(r.f[DETECT_AF_HOST].type == DETECT_AT_OTHER);
	CHECK(r.f[DETECT_AF_STEP].i == -3 && r.f[DETECT_AF_STEP].u == 0);
	CHECK(r.f[DETECT_AF_RULE].type == DETECT_AT_ABSENT);
	detect_alert_record_free(&r);

	CHECK(detect_alert_parse("[1]", 3, &r, err, sizeof(err))
	    == DETECT_EPARSE);
	CHECK(strcmp(err, "offset 0: expected '{', found '['") == 0);
	CHECK(r.f[DETECT_AF_RULE].type == DETECT_AT_ABSENT && r.mem == NULL);
	CHECK(detect_alert_parse("{\"rule\":\"x", 10, &r, err, sizeof(err))
	    == DETECT_EPARSE);
	CHECK(strcmp(err,
	          "offset 10: expected '\"' to end the string, "
	          "found the end")
	    == 0);
	CHECK(detect_alert_parse("{\"rule\" 1}", 10, &r, err, sizeof(err))
	    == DETECT_EPARSE);
	CHECK(strcmp(err, "offset 8: expected ':', found '1'") == 0);
	CHECK(
	    detect_alert_parse("", 0, &r, err, sizeof(err)) == DETECT_EPARSE);
}

/* The alert vitalsd stores when a run reaches a series cap, byte for byte
 * as the collector has always stored it. */
TEST(alert_series_limit_json)
{
	char   buf[1024], small[8];
	size_t n = detect_alert_series_limit_json("r\"1", 3, "h", 1, "loss", 4,
	    7, 1700000000000000001ll, "per-run", 3, buf, sizeof(buf));

	CHECK(n == strlen(buf));
	CHECK(strcmp(buf,
	          "{\"rule\":\"series_limit\",\"kind\":\"series_limit\","
	          "\"severity\":\"warning\",\"state\":\"firing\","
	          "\"run\":\"r\\\"1\",\"rank\":-1,\"host\":\"h\","
	          "\"metric\":\"loss\",\"step\":7,"
	          "\"time\":1700000000.000000001,\"value\":null,"
	          "\"baseline\":null,\"message\":\"per-run series cap of 3 "
	          "reached: samples of new series are refused (not stored)\"}")
	    == 0);
	CHECK(detect_alert_series_limit_json("r", 1, "h", 1, "m", 1, 0, 0,
	          "total", 1, small, sizeof(small))
	    > sizeof(small));
	CHECK(strlen(small) == sizeof(small) - 1);
}

/* ---- replay input ------------------------------------------------------- */

static int
read_all(const char *name, const char *text, detect_sample *out, int max,
    char *err, size_t errlen, char *names, size_t nlen)
{
	FILE *f = fmemopen((void *) (uintptr_t) text, strlen(text), "r");
	replay_input *in;
	int           n    = 0, rc;
	size_t        used = 0;

	if (f == NULL || replay_input_open(name, f, &in, err, errlen) != 0)
		return -2;
	while (n < max
	    && (rc = replay_input_next(in, &out[n], err, errlen)) == 1) {
		/* Keep the strings: they are valid until the next call. */
		int k = snprintf(names + used, nlen - used, "%.*s|%.*s|",
		    (int) out[n].runlen, out[n].run, (int) out[n].mlen,
		    out[n].metric);

		used += (size_t) k;
		n++;
	}
	replay_input_close(in);
	fclose(f);
	return rc < 0 ? -1 : n;
}

TEST(replay_jsonl_and_csv_read_the_same)
{
	const char *j
	    = "{\"run\":\"a\",\"rank\":0,\"metric\":\"loss\",\"step\":1,"
	      "\"time\":1700000000.5,\"value\":2.5}\n"
	      "\n"
	      "{\"run\":\"a\",\"rank\":1,\"metric\":\"x,y\",\"step\":2,"
	      "\"time\":1700000001,\"value\":NaN}\n"
	      "{\"run\":\"a\",\"rank\":-1,\"metric\":\"loss\",\"step\":3,"
	      "\"time\":1700000002.000000001,\"value\":-Infinity}\r\n";
	const char   *c = "value,metric,step,time,rank,run\n"
	                  "2.5,loss,1,1700000000.5,0,a\n"
	                  "nan,\"x,y\",2,1700000001,1,a\r\n"
	                  "-inf,loss,3,1700000002.000000001,-1,\"a\"\n";
	detect_sample sj[4], sc[4];
	char          err[256], nj[256], nc[256];

	REQUIRE(read_all("t.jsonl", j, sj, 4, err, sizeof(err), nj, sizeof(nj))
	    == 3);
	REQUIRE(read_all("t.csv", c, sc, 4, err, sizeof(err), nc, sizeof(nc))
	    == 3);
	CHECK(strcmp(nj, nc) == 0);
	CHECK(strcmp(nj, "a|loss|a|x,y|a|loss|") == 0);
	for (int i = 0; i < 3; i++) {
		CHECK(sj[i].step == sc[i].step && sj[i].rank == sc[i].rank);
		CHECK(sj[i].time_ns == sc[i].time_ns);
		CHECK(memcmp(&sj[i].value, &sc[i].value, 8) == 0
		    || (isnan(sj[i].value) && isnan(sc[i].value)));
	}
	CHECK(sj[0].time_ns == 1700000000500000000ll);
	CHECK(sj[2].time_ns == 1700000002000000001ll);
	CHECK(isinf(sj[2].value) && sj[2].value < 0);
	/* Sniffed without an extension. */
	CHECK(read_all("noext", c, sc, 4, err, sizeof(err), nc, sizeof(nc))
	    == 3);
}

TEST(replay_errors_name_line_and_column)
{
	detect_sample s[4];
	char          err[256], names[256];

	CHECK(read_all("b.jsonl",
	          "{\"run\":\"a\",\"rank\":0,\"metric\":\"m\",\"step\":1,"
	          "\"time\":1,\"value\":1}\n{\"run\":\"a\",, }\n",
	          s, 4, err, sizeof(err), names, sizeof(names))
	    == -1);
	CHECK(strstr(err,
	          "b.jsonl:2:12: expected a JSON object, found "
	          "invalid JSON")
	    != NULL);
	CHECK(read_all("b.jsonl",
	          "{\"run\":\"a\",\"rank\":0,\"metric\":\"m\",\"step\":-1,"
	          "\"time\":1,\"value\":1}\n",
	          s, 4, err, sizeof(err), names, sizeof(names))
	    == -1);
	CHECK(strstr(err, "b.jsonl:1: expected \"step\" as a whole number")
	    != NULL);
	CHECK(read_all("b.csv",
	          "time,step,rank,metric,value\n1,2,0,m,1\n"
	          "1,2,0,m,abc\n",
	          s, 4, err, sizeof(err), names, sizeof(names))
	    == -1);
	CHECK(strstr(err, "b.csv:3:9: expected a number") != NULL);
	CHECK(read_all("b.csv", "time,step,metric\n1,2,m\n", s, 4, err,
	          sizeof(err), names, sizeof(names))
	    == -1);
	CHECK(strstr(err, "b.csv:1:1: expected a header with the columns")
	    != NULL);
	CHECK(read_all("b.csv", "time,step,metric,value\n1,2,\"m\n", s, 4, err,
	          sizeof(err), names, sizeof(names))
	    == -1);
	CHECK(strstr(err, "b.csv:2:5: expected the closing quote") != NULL);
	CHECK(read_all("b.csv", "time,step,metric,value\n1,2,m\n", s, 4, err,
	          sizeof(err), names, sizeof(names))
	    == -1);
	CHECK(strstr(err,
	          "b.csv:2: expected 4 fields as in the header, "
	          "found 3")
	    != NULL);
}

int
main(void)
{
	harness_after_each = noise_unseed;
	RUN(default_rules_parse_and_print);
	RUN(parse_errors_name_line_and_column);
	RUN(parse_values_and_units);
	RUN(pathological_pattern_hits_the_limit);
	RUN(nonfinite_first_sample_then_resolves);
	RUN(spike_healthy_is_quiet);
	RUN(spike_blip_is_info_and_recovers);
	RUN(spike_sustained_fires_next_step_and_resolves);
	RUN(spike_grad_norm_two_step_jump_is_no_warning);
	RUN(spike_not_recovered_becomes_critical);
	RUN(spike_divergence_is_critical);
	RUN(slow_divergence_fires_before_nan);
	RUN(restart_is_one_event_and_not_a_spike);
	RUN(late_samples_are_not_a_restart);
	RUN(drop_sustained_not_periodic);
	RUN(drop_recovery_does_not_teach_noise);
	RUN(drop_coming_in_does_not_raise_its_own_threshold);
	RUN(rise_threshold_rises_with_a_ramp_of_work_per_step);
	RUN(drop_quick_test_names_a_step_within_30_samples);
	RUN(drop_comes_back_during_a_planned_drift);
	RUN(level_gradual_drift_quiet_abrupt_shift_fires);
	RUN(level_jump_finds_a_step_on_a_wandering_level);
	RUN(level_jump_slow_steps_do_not_stop_learning);
	RUN(stall_of_run_rank_and_progress);
	RUN(rank_left_behind_after_a_run_pause_is_its_own_alert);
	RUN(stall_note_after_the_run_went_on_is_a_new_incident);
	RUN(finished_run_is_not_a_stall);
	RUN(lagging_rank_catching_up_is_progress);
	RUN(stall_quiet_with_periodic_checkpoints);
	RUN(stall_short_in_a_fast_run_is_noted);
	RUN(stall_learns_recurring_pauses);
	RUN(stall_just_before_a_learned_pause_is_noted);
	RUN(stall_in_a_declared_phase_judged_by_its_history);
	RUN(stall_keeps_a_step_period_across_a_restart);
	RUN(stall_learns_two_kinds_of_pause_alike_in_length);
	RUN(stall_timer_keeps_its_rhythm_past_a_short_evaluation);
	RUN(stall_familiar_length_is_no_warning);
	RUN(stall_timer_and_evaluation_alike_in_length_keep_their_turns);
	RUN(stall_second_pause_guessed_from_the_first);
	RUN(stall_rhythm_of_a_hang_and_a_checkpoint_is_not_sure);
	RUN(stall_guessed_second_pause_a_little_longer_is_no_warning);
	RUN(stall_learned_and_guessed_pauses_due_together_add_up);
	RUN(stall_of_one_rank_is_not_learned_as_a_pause);
	RUN(stall_heartbeats_where_a_silent_pause_is_due_are_noted);
	RUN(stall_period_of_two_pauses_is_due_at_its_next_turn_only);
	RUN(stall_timer_told_from_steps_by_the_attempt_start);
	RUN(stall_before_a_timer_is_due_is_noted);
	RUN(stall_timer_whose_checkpoint_nearly_fills_its_period);
	RUN(stall_samples_stamped_far_in_the_past);
	RUN(step_time_and_throughput_are_one_finding);
	RUN(step_time_rise_pages_when_a_jittery_throughput_fell_with_it);
	RUN(step_time_rise_on_a_busy_host_confirmed_at_its_own_lag);
	RUN(step_time_ramp_with_throughput_falling_as_planned_is_not_paged);
	RUN(straggler_names_rank_and_host);
	RUN(threshold_entropy_collapse_relative);
	RUN(flatline_stuck_grad_norm);
	RUN(series_limit_reported_once);
	RUN(run_over_its_budget_does_not_blind_others);
	RUN(idle_series_evicted_least_recently_fed_first);
	RUN(exec_action_on_firing_above_exec_on);
	RUN(heartbeat_hang_is_one_alert);
	RUN(heartbeat_hang_after_a_noted_pause_is_its_own_alert);
	RUN(one_rule_on_four_ranks_is_one_incident);
	RUN(finished_run_leaves_nothing_firing);
	RUN(reload_keeps_state_of_unchanged_rules);
	RUN(rules_by_name_and_by_rank_watch_the_right_series);
	RUN(alert_json_round_trips);
	RUN(alert_reader_reads_what_the_writer_wrote);
	RUN(alert_reader_types_and_errors);
	RUN(alert_series_limit_json);
	RUN(replay_jsonl_and_csv_read_the_same);
	RUN(replay_errors_name_line_and_column);
	return harness_done();
}
