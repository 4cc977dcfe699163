/*
 * match: PCRE2 patterns of the rules, compiled once, matched with a
 * bounded effort (match, depth and heap limits) so that a pathological
 * pattern cannot stall ingest.
 */
#ifndef DETECT_MATCH_H
#define DETECT_MATCH_H

#ifndef PCRE2_CODE_UNIT_WIDTH
#define PCRE2_CODE_UNIT_WIDTH 8
#endif
#include <pcre2.h>
#include <stddef.h>

/* Limits of one match (PCRE2's units). */
#define DETECT_MATCH_LIMIT 100000
#define DETECT_DEPTH_LIMIT 10000
#define DETECT_HEAP_LIMIT 4096 /* KiB */

/* A compiled pattern; code NULL means "matches anything". Immutable and
 * shareable between threads once compiled. */
typedef struct detect_pattern {
	char       *text; /* as written; NULL if not given */
	pcre2_code *code;
} detect_pattern;

/*
 * Compile text (UTF-8, invalid sequences never match). On failure returns
 * -1 with PCRE2's message in why and the offending offset in *erroff;
 * returns -2 if out of memory.
 */
int  detect_pattern_compile(detect_pattern *p, const char *text, size_t len,
     char *why, size_t whylen, size_t *erroff);
void detect_pattern_fini(detect_pattern *p);

/* Per-thread matching state: match data and the bounded match context. */
typedef struct detect_matcher {
	pcre2_match_data    *md;
	pcre2_match_context *mc;
} detect_matcher;

/* Returns 0 or -1 (out of memory; nothing is leaked). */
int  detect_matcher_init(detect_matcher *m);
void detect_matcher_fini(detect_matcher *m);

/* 1 if s matches (anywhere, as PCRE2 does unless anchored), 0 if not,
 * -1 if a limit was hit (counted as no match by callers), -2 on another
 * PCRE2 error. */
int detect_pattern_match(const detect_pattern *p, const detect_matcher *m,
    const char *s, size_t len);

#endif /* DETECT_MATCH_H */
