/*
 * rules: the compiled form of a rules text, shared by the parser, the
 * engine and the detectors. Immutable once built.
 */
#ifndef DETECT_RULES_H
#define DETECT_RULES_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "detect/detect.h"
#include "detect/match.h"

/* The default `hold` of a rule, in steps the run advances. */
#define DETECT_HOLD_STEPS 20

/* Units of a span: a count of the series' samples, or seconds. */
enum detect_unit { DETECT_STEPS = 0, DETECT_SECONDS = 1 };

typedef struct detect_span {
	double v;
	int    unit;
} detect_span;

/* Parameter types. */
enum detect_ptype {
	DP_NUM,     /* a number; 5% reads as 0.05 */
	DP_COUNT,   /* a whole number of samples */
	DP_SPAN,    /* N [steps] or N s|ms|m|h */
	DP_SECONDS, /* N s|ms|m|h (a bare number is seconds) */
	DP_ENUM,    /* one of enums[]; stored as its index */
	DP_BOOL,    /* true or false */
	DP_SEVERITY /* info, warning, critical, or off (-1) */
};

typedef struct detect_param {
	const char        *name;
	int                type;
	double             def;
	int                def_unit;
	double             min, max;
	const char *const *enums;
} detect_param;

#define DETECT_MAXP 16

struct detect_kind;

enum detect_pat {
	DETECT_PAT_METRIC,
	DETECT_PAT_RUN,
	DETECT_PAT_HOST,
	DETECT_PAT_RANK,
	DETECT_NPAT
};

typedef struct detect_rule {
	char                     *name;
	const struct detect_kind *kind;
	detect_pattern            pat[DETECT_NPAT];
	int                       severity;
	detect_span               cooldown; /* quiet time after resolving */
	detect_span               clear;    /* clear this long to resolve */
	detect_span               hold;     /* an incident's resolution waits
	                                     * this long for it to return */
	char *incident;   /* rules with the same name share incidents (one
	                   * finding); NULL: the rule's own */
	int defer;        /* pages only when no other rule of its incident
	                   * watches the run (see docs/rules.md) */
	char      **argv; /* NULL-terminated, or NULL */
	size_t      argc;
	uint32_t    timeout_ms;
	int         exec_on;        /* lowest severity that runs argv */
	detect_span p[DETECT_MAXP]; /* detector parameters */
	char       *canon;          /* definition, defaults included */
} detect_rule;

struct detect_rules {
	atomic_int   refs;
	detect_rule *v;
	size_t       n;
	uint64_t     max_series;
	int          uses_host; /* some rule matches on the host */
};

/* Look up a detector by name; NULL if unknown. */
const struct detect_kind *detect_kind_find(const char *name, size_t len);
/* "nonfinite, spike, ..." for messages. */
const char *detect_kind_names(void);

/* Parameter value i of rule r (by index in r->kind->params). */
static inline double
detect_p(const detect_rule *r, int i)
{
	return r->p[i].v;
}

/* Match rule r with matcher m: 1, 0, or -1 (a limit was hit: counted as
 * no match). host may be NULL. */
int detect_rule_match(const detect_rule *r, const detect_matcher *m,
    const char *run, size_t runlen, const char *metric, size_t mlen,
    const char *host, size_t hostlen, int32_t rank);

/* Free the contents of one rule. */
void detect_rule_fini(detect_rule *r);

#endif /* DETECT_RULES_H */
