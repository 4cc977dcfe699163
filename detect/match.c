#include "detect/match.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * On failure nothing is allocated and p is left empty: -1 with PCRE2's
 * message (compile error), -2 when out of memory.
 */
int
detect_pattern_compile(detect_pattern *p, const char *text, size_t len,
    char *why, size_t whylen, size_t *erroff)
{
	int        ec;
	PCRE2_SIZE off = 0;

	p->code = NULL;
	p->text = malloc(len + 1);
	if (p->text == NULL)
		return -2;
	memcpy(p->text, text, len);
	p->text[len] = 0;
	p->code      = pcre2_compile((PCRE2_SPTR) text, len,
	         PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_NEVER_BACKSLASH_C, &ec,
	         &off, NULL);
	if (p->code == NULL) {
		PCRE2_UCHAR msg[256];

		free(p->text);
		p->text = NULL;
		if (ec == PCRE2_ERROR_NOMEMORY)
			return -2;
		if (pcre2_get_error_message(ec, msg, sizeof(msg)) < 0)
			snprintf((char *) msg, sizeof(msg), "error %d", ec);
		snprintf(why, whylen, "%s", (const char *) msg);
		*erroff = off;
		return -1;
	}
	return 0;
}

void
detect_pattern_fini(detect_pattern *p)
{
	pcre2_code_free(p->code);
	free(p->text);
	p->code = NULL;
	p->text = NULL;
}

int
detect_matcher_init(detect_matcher *m)
{
	m->mc = pcre2_match_context_create(NULL);
	m->md = pcre2_match_data_create(1, NULL);
	if (m->mc == NULL || m->md == NULL)
		goto fail;
	pcre2_set_match_limit(m->mc, DETECT_MATCH_LIMIT);
	pcre2_set_depth_limit(m->mc, DETECT_DEPTH_LIMIT);
	pcre2_set_heap_limit(m->mc, DETECT_HEAP_LIMIT);
	return 0;
fail:
	detect_matcher_fini(m);
	return -1;
}

void
detect_matcher_fini(detect_matcher *m)
{
	pcre2_match_data_free(m->md);
	pcre2_match_context_free(m->mc);
	m->md = NULL;
	m->mc = NULL;
}

int
detect_pattern_match(const detect_pattern *p, const detect_matcher *m,
    const char *s, size_t len)
{
	int rc;

	if (p->code == NULL)
		return 1;
	rc = pcre2_match(p->code, (PCRE2_SPTR) (s ? s : ""), s ? len : 0, 0, 0,
	    m->md, m->mc);
	if (rc >= 0)
		return 1;
	if (rc == PCRE2_ERROR_NOMATCH)
		return 0;
	if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT
	    || rc == PCRE2_ERROR_HEAPLIMIT)
		return -1;
	return -2;
}
