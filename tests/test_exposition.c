/*
 * test_exposition: the /metrics snapshot without a server: latest values,
 * label escaping, the bounds and their counters, alert counting through
 * severity changes and resolutions, the OpenMetrics variant.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collector/exposition.h"
#include "tests/harness.h"
#include "wire/wire.h"

static uint8_t msg[65536];

/* A batch of run "r", rank 0, host "h": each name once per step, steps
 * s0 .. s0 + steps - 1 at t0, t0 + 1, ... s, valued v0, v0 + 1, ... */
static void
feed_at(expo *x, const char *const *names, int n, int steps, double v0,
    uint64_t s0, int64_t t0)
{
	wire_ident id = { 0 };
	wire_batch b;
	size_t     off;
	char       err[256];

	id.incarnation = 1;
	id.run         = "r";
	id.run_len     = 1;
	id.host        = "h";
	id.host_len    = 1;
	off            = wire_put_batch_head(msg, &id, 1, 1, 3);
	wire_put_names_count(msg, &off, (uint16_t) n);
	for (int i = 0; i < n; i++)
		wire_put_name(msg, &off, names[i], strlen(names[i]));
	wire_put_samples_count(msg, &off, (uint32_t) (n * steps));
	for (int s = 0; s < steps; s++)
		for (int i = 0; i < n; i++) {
			wire_sample w = { (uint16_t) i, s0 + (uint64_t) s,
				1000000000ll * (t0 + s), v0 + s };
			wire_put_sample(msg, &off, &w);
		}
	if (wire_batch_decode(msg, off, &b, err, sizeof(err)) != 0) {
		printf("  decode: %s\n", err);
		return;
	}
	expo_batch(x, &b);
}

/* Steps 0 .. steps - 1 at 1, 2, ... s. */
static void
feed(expo *x, const char *const *names, int n, int steps, double v0)
{
	feed_at(x, names, n, steps, v0, 0, 1);
}

static char *
render(expo *x, int om)
{
	expo_buf  b    = { 0 };
	expo_live live = { -1, 0, 0 };

	expo_render(x, om, &live, &b);
	return b.p;
}

TEST(latest_value_and_escaping)
{
	expo_opts   o;
	expo       *x;
	char        err[256], *page;
	const char *names[] = { "train/loss", "a\"b\\c", "ü/δ" };

	expo_opts_init(&o);
	REQUIRE(expo_open(&o, &x, err, sizeof(err)) == 0);
	feed(x, names, 3, 5, 10);
	page = render(x, 0);
	REQUIRE(page != NULL);
	CHECK(strstr(page, "vitals_value{run=\"r\",metric=\"train/loss\","
			   "rank=\"0\",host=\"h\"} 14\n") != NULL);
	CHECK(strstr(page, "metric=\"a\\\"b\\\\c\"") != NULL);
	CHECK(strstr(page, "metric=\"ü/δ\"") != NULL);
	CHECK(strstr(page, "vitals_step{run=\"r\",rank=\"0\"} 4\n") != NULL);
	CHECK(strstr(page, "vitals_last_sample_timestamp_seconds{run=\"r\","
			   "rank=\"0\"} 5\n") != NULL);
	CHECK(strstr(page, "vitals_emitter_dropped_samples_total{run=\"r\","
			   "rank=\"0\"} 3\n") != NULL);
	CHECK(strstr(page, "# TYPE vitals_samples_stored_total counter\n")
	    != NULL);
	free(page);
	page = render(x, 1);
	CHECK(strstr(page, "# TYPE vitals_samples_stored counter\n") != NULL);
	CHECK(strstr(page, "\nvitals_samples_stored_total 0\n") != NULL);
	free(page);
	expo_close(x);
}

/*
 * A late batch (older than what was shown, at lower steps: resent behind
 * newer ones, a spool sent after the run went on) leaves the newer value
 * and step; a restart (lower steps at a later time) shows.
 */
/* Whether page shows loss (run "r", rank 0) at v, the rank's step at
 * step and its last sample at t s. */
static int
shows(const char *page, int v, int step, int t)
{
	char want[3][160];

	snprintf(want[0], sizeof(want[0]),
	    "vitals_value{run=\"r\",metric=\"loss\",rank=\"0\",host=\"h\"} "
	    "%d\n",
	    v);
	snprintf(want[1], sizeof(want[1]),
	    "vitals_step{run=\"r\",rank=\"0\"} %d\n", step);
	snprintf(want[2], sizeof(want[2]),
	    "vitals_last_sample_timestamp_seconds{run=\"r\",rank=\"0\"} "
	    "%d\n",
	    t);
	for (int i = 0; i < 3; i++)
		if (strstr(page, want[i]) == NULL) {
			printf("  not shown: %s", want[i]);
			return 0;
		}
	return 1;
}

TEST(late_batch_leaves_the_latest_value)
{
	expo_opts   o;
	expo       *x;
	char        err[256], *page;
	const char *names[] = { "loss" };

	expo_opts_init(&o);
	REQUIRE(expo_open(&o, &x, err, sizeof(err)) == 0);
	feed_at(x, names, 1, 5, 100, 100, 101); /* steps 100-104 */
	feed_at(x, names, 1, 5, 7, 0, 1);       /* steps 0-4, late */
	page = render(x, 0);
	REQUIRE(page != NULL);
	CHECK(shows(page, 104, 104, 105));
	free(page);
	feed_at(x, names, 1, 3, 50, 50, 200); /* back to step 50 */
	page = render(x, 0);
	REQUIRE(page != NULL);
	CHECK(shows(page, 52, 52, 202));
	free(page);
	expo_close(x);
}

TEST(bounds_are_counted)
{
	expo_opts   o;
	expo       *x;
	char        err[256], *page;
	const char *names[] = { "loss", "lr", "acc", "ppl" };

	expo_opts_init(&o);
	o.max_series = 1;
	o.filter     = "^(loss|acc|ppl)$";
	REQUIRE(expo_open(&o, &x, err, sizeof(err)) == 0);
	feed(x, names, 4, 2, 0);
	feed(x, names, 4, 3, 0);
	page = render(x, 0);
	REQUIRE(page != NULL);
	CHECK(strstr(page, "metric=\"loss\"") != NULL);
	CHECK(strstr(page, "metric=\"lr\"") == NULL);
	CHECK(strstr(page, "metric=\"acc\"") == NULL);
	CHECK(strstr(page, "vitals_http_series_omitted{reason=\"filter\"} 1\n")
	    != NULL);
	CHECK(strstr(page, "vitals_http_series_omitted{reason=\"limit\"} 2\n")
	    != NULL);
	CHECK(strstr(page, "vitals_http_samples_omitted_total{reason=\"filter\"} 5\n")
	    != NULL);
	CHECK(strstr(page, "vitals_http_samples_omitted_total{reason=\"limit\"} 10\n")
	    != NULL);
	free(page);
	expo_close(x);
	o.filter = "(";
	CHECK(expo_open(&o, &x, err, sizeof(err)) != 0);
	CHECK(strstr(err, "--http-metrics '(': at offset 1") != NULL);
}

static void
alert(expo *x, const char *metric, int severity, int state)
{
	detect_alert a;

	memset(&a, 0, sizeof(a));
	a.rule     = "loss_spike";
	a.kind     = "spike";
	a.severity = severity;
	a.state    = state;
	a.run      = "r";
	a.runlen   = 1;
	a.rank     = 0;
	a.host     = "h";
	a.hostlen  = 1;
	a.metric   = metric;
	a.mlen     = strlen(metric);
	a.baseline = NAN;
	a.message  = "m";
	expo_alert(x, &a);
}

static int
firing(const char *page, const char *sev)
{
	char        pat[128];
	const char *p;

	snprintf(pat, sizeof(pat),
	    "vitals_alerts_firing{run=\"r\",rule=\"loss_spike\","
	    "severity=\"%s\"} ",
	    sev);
	p = strstr(page, pat);
	return p == NULL ? -99 : atoi(p + strlen(pat));
}

TEST(alerts_counted_per_group)
{
	expo_opts o;
	expo     *x;
	char      err[256], *page;

	expo_opts_init(&o);
	REQUIRE(expo_open(&o, &x, err, sizeof(err)) == 0);
	/* A resolution never seen firing counts nothing. */
	alert(x, "loss", DETECT_WARNING, DETECT_RESOLVED);
	alert(x, "loss", DETECT_WARNING, DETECT_FIRING);
	alert(x, "loss", DETECT_WARNING, DETECT_FIRING); /* again: once */
	alert(x, "loss2", DETECT_WARNING, DETECT_FIRING);
	page = render(x, 0);
	CHECK_EQ_INT(firing(page, "warning"), 2);
	free(page);
	/* loss escalates to critical while firing, then resolves. */
	alert(x, "loss", DETECT_CRITICAL, DETECT_FIRING);
	page = render(x, 0);
	CHECK_EQ_INT(firing(page, "warning"), 1);
	CHECK_EQ_INT(firing(page, "critical"), 1);
	free(page);
	alert(x, "loss", DETECT_WARNING, DETECT_RESOLVED);
	alert(x, "loss", DETECT_WARNING, DETECT_RESOLVED);
	page = render(x, 0);
	CHECK_EQ_INT(firing(page, "warning"), 1);
	CHECK_EQ_INT(firing(page, "critical"), 0);
	free(page);
	expo_close(x);
}

TEST(health)
{
	expo_opts    o;
	expo        *x;
	char         err[256], why[128], *page;
	ingest_stats is;

	expo_opts_init(&o);
	REQUIRE(expo_open(&o, &x, err, sizeof(err)) == 0);
	memset(&is, 0, sizeof(is));
	is.samples = 42;
	expo_commit(x, 3000000, &is, 7);
	CHECK_EQ_INT(expo_health(x, why, sizeof(why)), 0);
	expo_blocked(x, "disk full");
	CHECK_EQ_INT(expo_health(x, why, sizeof(why)), 1);
	CHECK(strcmp(why, "disk full") == 0);
	page = render(x, 0);
	CHECK(strstr(page, "\nvitals_samples_stored_total 42\n") != NULL);
	CHECK(strstr(page, "\nvitals_messages_malformed_total 7\n") != NULL);
	CHECK(strstr(page, "\nvitals_store_writable 0\n") != NULL);
	CHECK(strstr(page, "vitals_commit_duration_seconds_bucket{le=\"0.0025\"} 0\n")
	    != NULL);
	CHECK(strstr(page, "vitals_commit_duration_seconds_bucket{le=\"0.005\"} 1\n")
	    != NULL);
	free(page);
	expo_blocked(x, NULL);
	CHECK_EQ_INT(expo_health(x, why, sizeof(why)), 0);
	expo_close(x);
}

int
main(void)
{
	RUN(latest_value_and_escaping);
	RUN(late_batch_leaves_the_latest_value);
	RUN(bounds_are_counted);
	RUN(alerts_counted_per_group);
	RUN(health);
	return harness_done();
}
