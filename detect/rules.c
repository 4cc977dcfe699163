/*
 * rules: the rule set handle (reference counted), the table of detectors,
 * listing and matching rules for `vitals rules check`.
 */
#include "detect/rules.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detect/detector.h"

static const detect_kind *const kinds[] = {
	&detect_kind_nonfinite,
	&detect_kind_spike,
	&detect_kind_drop,
	&detect_kind_rise,
	&detect_kind_stall,
	&detect_kind_straggler,
	&detect_kind_threshold,
	&detect_kind_flatline,
	&detect_kind_restart,
	&detect_kind_hang,
	&detect_kind_phase_straggler,
	&detect_kind_nonfinite_origin,
};

const detect_kind *
detect_kind_find(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strlen(kinds[i]->name) == len
		    && memcmp(kinds[i]->name, name, len) == 0)
			return kinds[i];
	return NULL;
}

const char *
detect_kind_names(void)
{
	return "nonfinite, spike, drop, rise, stall, straggler, threshold, "
	       "flatline, restart, hang, phase_straggler, nonfinite_origin";
}

const char *
detect_strerror(int code)
{
	switch (code) {
	case DETECT_OK:
		return "success";
	case DETECT_ENOMEM:
		return "out of memory";
	case DETECT_EPARSE:
		return "invalid rules";
	case DETECT_EINVAL:
		return "invalid argument";
	case DETECT_ELIMIT:
		return "pattern match limit reached";
	default:
		return "unknown error";
	}
}

const char *
detect_severity_name(int severity)
{
	switch (severity) {
	case DETECT_INFO:
		return "info";
	case DETECT_WARNING:
		return "warning";
	case DETECT_CRITICAL:
		return "critical";
	default:
		return "off";
	}
}

const char *
detect_state_name(int state)
{
	return state == DETECT_RESOLVED ? "resolved" : "firing";
}

void
detect_rule_fini(detect_rule *r)
{
	free(r->name);
	for (int i = 0; i < DETECT_NPAT; i++)
		detect_pattern_fini(&r->pat[i]);
	for (size_t i = 0; i < r->argc; i++)
		free(r->argv[i]);
	free(r->argv);
	free(r->canon);
	free(r->incident);
	memset(r, 0, sizeof(*r));
}

void
detect_rules_free(detect_rules *rules)
{
	if (rules == NULL || atomic_fetch_sub(&rules->refs, 1) != 1)
		return;
	for (size_t i = 0; i < rules->n; i++)
		detect_rule_fini(&rules->v[i]);
	free(rules->v);
	free(rules);
}

int
detect_rules_default(detect_rules **out)
{
	const char *t = detect_rules_default_text();
	char        err[256];
	int         rc;

	rc = detect_rules_parse(
	    t, strlen(t), "(default rules)", out, err, sizeof(err));
	/* The built-in text is tested to parse; only memory can fail. */
	return rc == DETECT_EPARSE ? DETECT_ENOMEM : rc;
}

size_t
detect_rules_count(const detect_rules *rules)
{
	return rules ? rules->n : 0;
}

int
detect_rules_info(const detect_rules *rules, size_t i, detect_rule_info *out)
{
	const detect_rule *r;

	if (rules == NULL || i >= rules->n || out == NULL)
		return DETECT_EINVAL;
	r             = &rules->v[i];
	out->name     = r->name;
	out->detector = r->kind->name;
	out->severity = detect_severity_name(r->severity);
	out->metric   = r->pat[DETECT_PAT_METRIC].text
	      ? r->pat[DETECT_PAT_METRIC].text
	      : "";
	out->run
	    = r->pat[DETECT_PAT_RUN].text ? r->pat[DETECT_PAT_RUN].text : "";
	out->host
	    = r->pat[DETECT_PAT_HOST].text ? r->pat[DETECT_PAT_HOST].text : "";
	out->rank
	    = r->pat[DETECT_PAT_RANK].text ? r->pat[DETECT_PAT_RANK].text : "";
	out->definition      = r->canon;
	out->exec_argv       = (const char *const *) r->argv;
	out->exec_argc       = r->argc;
	out->exec_timeout_ms = r->timeout_ms;
	return 0;
}

int
detect_rule_match(const detect_rule *r, const detect_matcher *m,
    const char *run, size_t runlen, const char *metric, size_t mlen,
    const char *host, size_t hostlen, int32_t rank)
{
	char num[16];
	int  rc, limit = 0;

	rc = detect_pattern_match(&r->pat[DETECT_PAT_METRIC], m, metric, mlen);
	if (rc == 0)
		return 0;
	limit |= rc < 0;
	rc = detect_pattern_match(&r->pat[DETECT_PAT_RUN], m, run, runlen);
	if (rc == 0)
		return 0;
	limit |= rc < 0;
	rc = detect_pattern_match(
	    &r->pat[DETECT_PAT_HOST], m, host, host ? hostlen : 0);
	if (rc == 0)
		return 0;
	limit |= rc < 0;
	snprintf(num, sizeof(num), "%d", (int) rank);
	rc = detect_pattern_match(
	    &r->pat[DETECT_PAT_RANK], m, num, strlen(num));
	if (rc == 0)
		return 0;
	limit |= rc < 0;
	return limit ? -1 : 1;
}

int
detect_rules_match(const detect_rules *rules, size_t i, const char *run,
    size_t runlen, const char *metric, size_t mlen, const char *host,
    size_t hostlen, int32_t rank)
{
	detect_matcher m;
	int            rc;

	if (rules == NULL || i >= rules->n)
		return -DETECT_EINVAL;
	if (detect_matcher_init(&m) != 0)
		return -DETECT_ENOMEM;
	rc = detect_rule_match(
	    &rules->v[i], &m, run, runlen, metric, mlen, host, hostlen, rank);
	detect_matcher_fini(&m);
	return rc < 0 ? -DETECT_ELIMIT : rc;
}
