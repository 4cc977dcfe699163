/*
 * rules_parse: the rules language (docs/rules.md) into detect_rules.
 *
 *	max_series = 100000
 *	rule loss_spike {
 *		metric   = '(^|/)loss$'
 *		detector = spike
 *		for      = 2 steps
 *		exec     = ["/usr/local/bin/page", "--team", "ml"]
 *	}
 *
 * The text is read in one pass into rules of raw assignments; each rule
 * is then checked against its detector's parameter table, so that every
 * error can name the line and column of what was wrong.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detect/detector.h"
#include "detect/lex.h"

/* A value as written. */
typedef struct aval {
	int    type; /* TK_NUM, TK_STR, TK_IDENT, TK_LBRACK (list) */
	double num;
	int    unit;
	char  *str; /* TK_STR */
	size_t slen;
	char **list; /* TK_LBRACK: strings */
	size_t nlist;
	char   desc[64];
	int    line, col;
} aval;

typedef struct assign {
	char name[40];
	int  line, col;
	aval v;
} assign;

typedef struct parser {
	detect_lexer lx;
	detect_token t;
	const char  *src;
	char        *err;
	size_t       errlen;
	int          oom;
	assign      *as;
	size_t       nas, cas;
	size_t       rcap;  /* rules allocated in rs->v */
	size_t      *names; /* rule index + 1 by name hash, 0 empty */
	size_t       nnames, cnames;
} parser;

static const char *const sev_names[] = { "info", "warning", "critical", NULL };

static int perr(parser *P, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int
perr(parser *P, int line, int col, const char *fmt, ...)
{
	va_list ap;
	int     n;

	n = snprintf(P->err, P->errlen, "%s:%d:%d: ", P->src, line, col);
	if (n >= 0 && (size_t) n < P->errlen) {
		va_start(ap, fmt);
		vsnprintf(P->err + n, P->errlen - (size_t) n, fmt, ap);
		va_end(ap);
	}
	return -1;
}

static void
next(parser *P)
{
	free(P->t.str);
	detect_lex_next(&P->lx, &P->t);
}

/* Report the lexer's error, or "expected WHAT, found <token>". */
static int
expected(parser *P, const char *what)
{
	char found[80];

	if (P->t.type == TK_ERROR) {
		if (strcmp(P->lx.why, "out of memory") == 0)
			P->oom = 1;
		return perr(P, P->lx.eline, P->lx.ecol, "%s", P->lx.why);
	}
	detect_tok_describe(&P->t, found, sizeof(found));
	return perr(
	    P, P->t.line, P->t.col, "expected %s, found %s", what, found);
}

static void
aval_fini(aval *v)
{
	free(v->str);
	for (size_t i = 0; i < v->nlist; i++)
		free(v->list[i]);
	free(v->list);
	memset(v, 0, sizeof(*v));
}

static void
assigns_clear(parser *P)
{
	for (size_t i = 0; i < P->nas; i++)
		aval_fini(&P->as[i].v);
	P->nas = 0;
}

/* value := STRING | NUMBER [unit] | NAME | '[' [STRING {, STRING}] ']'
 * On failure v holds nothing. */
static int parse_value_(parser *P, aval *v);

static int
parse_value(parser *P, aval *v)
{
	if (parse_value_(P, v) == 0)
		return 0;
	aval_fini(v);
	return -1;
}

static int
parse_value_(parser *P, aval *v)
{
	memset(v, 0, sizeof(*v));
	v->line = P->t.line;
	v->col  = P->t.col;
	detect_tok_describe(&P->t, v->desc, sizeof(v->desc));
	switch (P->t.type) {
	case TK_NUM:
		v->type = TK_NUM;
		v->num  = P->t.num;
		v->unit = P->t.unit;
		break;
	case TK_IDENT:
		v->type = TK_IDENT;
		v->slen = P->t.len;
		v->str  = malloc(v->slen + 1);
		if (v->str == NULL)
			goto oom;
		memcpy(v->str, P->t.p, v->slen);
		v->str[v->slen] = 0;
		break;
	case TK_STR:
		v->type  = TK_STR;
		v->str   = P->t.str;
		v->slen  = P->t.slen;
		P->t.str = NULL;
		break;
	case TK_LBRACK:
		v->type = TK_LBRACK;
		for (next(P); P->t.type != TK_RBRACK; next(P)) {
			char **l;

			if (P->t.type != TK_STR)
				return expected(P,
				    v->nlist ? "a string or ']'"
				             : "a string (the program to run) "
				               "or ']'");
			l = realloc(v->list, (v->nlist + 2) * sizeof(*l));
			if (l == NULL)
				goto oom;
			v->list             = l;
			v->list[v->nlist++] = P->t.str;
			v->list[v->nlist]   = NULL;
			P->t.str            = NULL;
			next(P);
			if (P->t.type == TK_RBRACK)
				break;
			if (P->t.type != TK_COMMA)
				return expected(P, "',' or ']'");
		}
		break;
	default:
		return expected(P,
		    "a value (a number, a name, a \"string\" "
		    "or a [list])");
	}
	next(P);
	return 0;
oom:
	P->oom = 1;
	return perr(P, v->line, v->col, "out of memory");
}

/* ---- converting values ----------------------------------------------- */

static int
want(parser *P, const aval *v, const char *what, const char *name)
{
	return perr(P, v->line, v->col, "expected %s for '%s', found %s", what,
	    name, v->desc);
}

static int
enum_index(const char *const *names, const char *s)
{
	for (int i = 0; names[i] != NULL; i++)
		if (strcmp(names[i], s) == 0)
			return i;
	return -1;
}

static void
enum_list(const char *const *names, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	for (int i = 0; names[i] != NULL && n < len; i++) {
		int k = snprintf(
		    buf + n, len - n, "%s%s", i ? ", " : "", names[i]);

		if (k < 0)
			break;
		n += (size_t) k;
	}
}

/* One detector parameter from its value. */
static int
conv(parser *P, const detect_param *pd, const aval *v, detect_span *out)
{
	char list[160];
	int  k;

	out->unit = DETECT_STEPS;
	switch (pd->type) {
	case DP_NUM:
		if (v->type != TK_NUM || v->unit == TU_STEPS
		    || v->unit == TU_SEC)
			return want(P, v, "a number", pd->name);
		out->v = v->num;
		break;
	case DP_COUNT:
		if (v->type != TK_NUM || v->num != floor(v->num)
		    || (v->unit != TU_NONE && v->unit != TU_STEPS))
			return want(P, v, "a whole number", pd->name);
		out->v = v->num;
		break;
	case DP_SPAN:
		if (v->type != TK_NUM
		    || (v->unit != TU_NONE && v->unit != TU_STEPS
		        && v->unit != TU_SEC)
		    || (v->unit != TU_SEC && v->num != floor(v->num)))
			return want(P, v,
			    "a whole number of steps, or seconds (30s, 5m)",
			    pd->name);
		out->v    = v->num;
		out->unit = v->unit == TU_SEC ? DETECT_SECONDS : DETECT_STEPS;
		break;
	case DP_SECONDS:
		if (v->type != TK_NUM
		    || (v->unit != TU_NONE && v->unit != TU_SEC))
			return want(
			    P, v, "a duration (30s, 500ms, 5m, 1h)", pd->name);
		out->v    = v->num;
		out->unit = DETECT_SECONDS;
		break;
	case DP_ENUM:
	case DP_BOOL:
	case DP_SEVERITY: {
		static const char *const bools[] = { "false", "true", NULL };
		static const char *const sevs[]
		    = { "info", "warning", "critical", "off", NULL };
		const char *const *names = pd->type == DP_ENUM ? pd->enums
		    : pd->type == DP_BOOL                      ? bools
		                                               : sevs;

		enum_list(names, list, sizeof(list));
		if (v->type != TK_IDENT && v->type != TK_STR)
			return want(P, v, list, pd->name);
		k = enum_index(names, v->str);
		if (k < 0)
			return perr(P, v->line, v->col,
			    "expected one of %s for '%s', found '%s'", list,
			    pd->name, v->str);
		out->v = pd->type == DP_SEVERITY && k == 3 ? -1 : k;
		return 0;
	}
	}
	if (!(out->v >= pd->min && out->v <= pd->max)) {
		if (pd->max >= 1e300)
			return perr(P, v->line, v->col,
			    "expected '%s' to be at least %g, found %s",
			    pd->name, pd->min, v->desc);
		return perr(P, v->line, v->col,
		    "expected '%s' between %g and %g, found %s", pd->name,
		    pd->min, pd->max, v->desc);
	}
	return 0;
}

/* ---- canonical definitions ---------------------------------------------- */

typedef struct sbuf {
	char  *p;
	size_t n, cap;
	int    oom;
} sbuf;

static void sb_add(sbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
sb_add(sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int     k;

	for (;;) {
		va_start(ap, fmt);
		k = vsnprintf(
		    b->p ? b->p + b->n : NULL, b->cap - b->n, fmt, ap);
		va_end(ap);
		if (k < 0) {
			b->oom = 1;
			return;
		}
		if (b->n + (size_t) k < b->cap) {
			b->n += (size_t) k;
			return;
		}
		{
			size_t cap = (b->cap + (size_t) k + 64) * 2;
			char  *p   = realloc(b->p, cap);

			if (p == NULL) {
				b->oom = 1;
				return;
			}
			b->p   = p;
			b->cap = cap;
		}
	}
}

static void
sb_span(sbuf *b, const char *name, const detect_span *sp)
{
	if (sp->unit == DETECT_SECONDS)
		sb_add(b, " %s=%gs", name, sp->v);
	else
		sb_add(b, " %s=%g", name, sp->v);
}

static void
sb_str(sbuf *b, const char *s)
{
	sb_add(b, "\"");
	for (; *s; s++)
		sb_add(b, *s == '"' || *s == '\\' ? "\\%c" : "%c", *s);
	sb_add(b, "\"");
}

static char *
canon(const detect_rule *r)
{
	static const char *const pn[] = { "metric", "run", "host", "rank" };
	sbuf                     b    = { 0 };
	const detect_kind       *k    = r->kind;

	sb_add(&b, "detector=%s", k->name);
	for (int i = 0; i < DETECT_NPAT; i++) {
		if (r->pat[i].text == NULL)
			continue;
		sb_add(&b, " %s=", pn[i]);
		sb_str(&b, r->pat[i].text);
	}
	sb_add(&b, " severity=%s", sev_names[r->severity]);
	for (size_t i = 0; i < k->nparams; i++) {
		const detect_param *pd = &k->params[i];

		switch (pd->type) {
		case DP_ENUM:
			sb_add(&b, " %s=%s", pd->name,
			    pd->enums[(int) r->p[i].v]);
			break;
		case DP_BOOL:
			sb_add(&b, " %s=%s", pd->name,
			    r->p[i].v ? "true" : "false");
			break;
		case DP_SEVERITY:
			sb_add(&b, " %s=%s", pd->name,
			    r->p[i].v < 0 ? "off"
			                  : sev_names[(int) r->p[i].v]);
			break;
		default:
			sb_span(&b, pd->name, &r->p[i]);
		}
	}
	sb_span(&b, "cooldown", &r->cooldown);
	sb_span(&b, "clear", &r->clear);
	sb_span(&b, "hold", &r->hold);
	if (r->incident != NULL) {
		sb_add(&b, " incident=");
		sb_str(&b, r->incident);
		sb_add(&b, " defer=%s", r->defer ? "true" : "false");
	}
	if (r->argv != NULL) {
		sb_add(&b, " exec=[");
		for (size_t i = 0; i < r->argc; i++) {
			if (i)
				sb_add(&b, ",");
			sb_str(&b, r->argv[i]);
		}
		sb_add(&b, "] timeout=%gs exec_on=%s",
		    (double) r->timeout_ms / 1000, sev_names[r->exec_on]);
	}
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	return b.p;
}

/* ---- rules ------------------------------------------------------------- */

static const assign *
find_assign(const parser *P, const char *name)
{
	for (size_t i = 0; i < P->nas; i++)
		if (strcmp(P->as[i].name, name) == 0)
			return &P->as[i];
	return NULL;
}

static int
set_pattern(parser *P, detect_rule *r, int which, const assign *a)
{
	char   why[200], num[32];
	size_t off = 0;
	int    rc;

	if (which == DETECT_PAT_RANK && a->v.type == TK_NUM) {
		if (a->v.num != floor(a->v.num) || a->v.num < -1
		    || a->v.num > 2147483647.0 || a->v.unit != TU_NONE)
			return want(P, &a->v,
			    "a rank (a whole number) or a "
			    "pattern",
			    a->name);
		snprintf(num, sizeof(num), "^%.0f$", a->v.num);
		rc = detect_pattern_compile(
		    &r->pat[which], num, strlen(num), why, sizeof(why), &off);
	} else if (a->v.type != TK_STR) {
		return want(
		    P, &a->v, "a pattern in quotes ('^loss$')", a->name);
	} else {
		rc = detect_pattern_compile(&r->pat[which], a->v.str,
		    a->v.slen, why, sizeof(why), &off);
	}
	if (rc == -2) {
		P->oom = 1;
		return perr(P, a->v.line, a->v.col, "out of memory");
	}
	if (rc != 0)
		/* The column points into the pattern when it is on one line
		 * as written (1 for the opening quote). */
		return perr(P, a->v.line,
		    a->v.col + (a->v.type == TK_STR ? 1 + (int) off : 0),
		    "expected a valid PCRE2 pattern for '%s': %s (at offset "
		    "%zu)",
		    a->name, why, off);
	return 0;
}

/* Checks and converts the assignments of one rule into r. */
static int
build_rule(parser *P, detect_rule *r, int line, int col)
{
	static const detect_param p_span
	    = { "cooldown", DP_SPAN, 0, 0, 0, 1e9, NULL };
	static const detect_param p_sec
	    = { "timeout", DP_SECONDS, 10, 1, 0.001, 86400, NULL };
	static const detect_param p_sev
	    = { "severity", DP_SEVERITY, 0, 0, 0, 2, NULL };
	const assign *a;
	detect_span   sp;
	char          why[200];

	a = find_assign(P, "detector");
	if (a == NULL)
		return perr(P, line, col,
		    "expected 'detector = ...' in rule '%s' (one of %s), "
		    "found none",
		    r->name, detect_kind_names());
	if (a->v.type != TK_IDENT && a->v.type != TK_STR)
		return want(P, &a->v, "a detector name", "detector");
	r->kind = detect_kind_find(a->v.str, a->v.slen);
	if (r->kind == NULL)
		return perr(P, a->v.line, a->v.col,
		    "expected a detector (one of %s), found '%s'",
		    detect_kind_names(), a->v.str);
	if (find_assign(P, "metric") == NULL)
		return perr(P, line, col,
		    "expected 'metric = \"pattern\"' in rule '%s', found "
		    "none ('.*' matches every metric)",
		    r->name);

	/* Defaults, then what is written. */
	r->severity   = r->kind->severity;
	r->clear.v    = 1;
	r->hold.v     = DETECT_HOLD_STEPS;
	r->timeout_ms = 10000;
	for (size_t i = 0; i < r->kind->nparams; i++) {
		r->p[i].v    = r->kind->params[i].def;
		r->p[i].unit = r->kind->params[i].def_unit;
	}
	r->exec_on = -1;
	for (size_t i = 0; i < P->nas; i++) {
		const char *n = P->as[i].name;
		size_t      j;

		a = &P->as[i];
		if (strcmp(n, "metric") == 0 || strcmp(n, "run") == 0
		    || strcmp(n, "host") == 0 || strcmp(n, "rank") == 0) {
			int w = n[0] == 'm'              ? DETECT_PAT_METRIC
			    : n[0] == 'r' && n[1] == 'u' ? DETECT_PAT_RUN
			    : n[0] == 'h'                ? DETECT_PAT_HOST
			                                 : DETECT_PAT_RANK;
			if (set_pattern(P, r, w, a) != 0)
				return -1;
		} else if (strcmp(n, "severity") == 0
		    || strcmp(n, "exec_on") == 0) {
			if (conv(P, &p_sev, &a->v, &sp) != 0)
				return -1;
			if (sp.v < 0)
				return perr(P, a->v.line, a->v.col,
				    "expected info, warning or critical for "
				    "'%s', found 'off'",
				    n);
			if (n[0] == 's')
				r->severity = (int) sp.v;
			else
				r->exec_on = (int) sp.v;
		} else if (strcmp(n, "cooldown") == 0
		    || strcmp(n, "clear") == 0 || strcmp(n, "hold") == 0) {
			if (conv(P, &p_span, &a->v,
			        n[0] == 'h'       ? &r->hold
			            : n[1] == 'o' ? &r->cooldown
			                          : &r->clear))
				return -1;
		} else if (strcmp(n, "timeout") == 0) {
			if (conv(P, &p_sec, &a->v, &sp) != 0)
				return -1;
			r->timeout_ms = (uint32_t) (sp.v * 1000 + 0.5);
		} else if (strcmp(n, "exec") == 0) {
			if (a->v.type != TK_LBRACK || a->v.nlist == 0
			    || a->v.list[0][0] == 0)
				return want(P, &a->v,
				    "a list of strings, program first "
				    "([\"/bin/notify\", \"--urgent\"])",
				    "exec");
			r->argv          = a->v.list;
			r->argc          = a->v.nlist;
			P->as[i].v.list  = NULL;
			P->as[i].v.nlist = 0;
		} else if (strcmp(n, "incident") == 0) {
			if ((a->v.type != TK_IDENT && a->v.type != TK_STR)
			    || a->v.slen == 0)
				return want(P, &a->v,
				    "an incident name (slowdown)", n);
			free(r->incident);
			r->incident = detect_dupn(a->v.str, a->v.slen);
			if (r->incident == NULL) {
				P->oom = 1;
				return perr(
				    P, a->v.line, a->v.col, "out of memory");
			}
		} else if (strcmp(n, "defer") == 0) {
			static const detect_param p_bool
			    = { "defer", DP_BOOL, 0, 0, 0, 1, NULL };

			if (conv(P, &p_bool, &a->v, &sp) != 0)
				return -1;
			r->defer = sp.v != 0;
		} else if (strcmp(n, "detector") == 0) {
			continue;
		} else {
			for (j = 0; j < r->kind->nparams; j++)
				if (strcmp(r->kind->params[j].name, n) == 0)
					break;
			if (j == r->kind->nparams) {
				char   list[300];
				size_t k = 0;

				list[0] = 0;
				for (j = 0; j < r->kind->nparams; j++)
					k += (size_t) snprintf(list + k,
					    k < sizeof(list) ? sizeof(list) - k
					                     : 0,
					    "%s, ", r->kind->params[j].name);
				return perr(P, a->line, a->col,
				    "expected a parameter of detector %s (%s"
				    "or one of metric, run, host, rank, "
				    "severity, cooldown, clear, hold, "
				    "incident, defer, exec, timeout, "
				    "exec_on), found '%s'",
				    r->kind->name, list, n);
			}
			if (conv(P, &r->kind->params[j], &a->v, &r->p[j]))
				return -1;
		}
	}
	if (r->exec_on < 0)
		r->exec_on = r->severity;
	if (r->defer && r->incident == NULL)
		return perr(P, line, col,
		    "in rule '%s': 'defer' needs 'incident' (the rules it "
		    "defers to share an incident name)",
		    r->name);
	if (r->kind->validate != NULL
	    && r->kind->validate(r, why, sizeof(why)) != 0)
		return perr(P, line, col, "in rule '%s': %s", r->name, why);
	r->canon = canon(r);
	if (r->canon == NULL) {
		P->oom = 1;
		return perr(P, line, col, "out of memory");
	}
	return 0;
}

static uint64_t
name_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char) *s) * 0x100000001b3ull;
	return h;
}

/*
 * Whether a rule before rs->v[i] has its name; if not, i joins the table
 * of names. The table (open addressing, at most half full) keeps the
 * check linear in the rules: comparing each name with every earlier one
 * took 36 s on 100,000 rules. Returns 1 (seen), 0 (added) or -1 (out of
 * memory).
 */
static int
name_seen(parser *P, const detect_rules *rs, size_t i)
{
	size_t h;

	if (2 * (P->nnames + 1) > P->cnames) {
		size_t  c = P->cnames ? P->cnames * 2 : 64;
		size_t *t = calloc(c, sizeof(*t));

		if (t == NULL)
			return -1;
		for (size_t k = 0; k < P->cnames; k++) {
			if (P->names[k] == 0)
				continue;
			h = name_hash(rs->v[P->names[k] - 1].name) & (c - 1);
			while (t[h] != 0)
				h = (h + 1) & (c - 1);
			t[h] = P->names[k];
		}
		free(P->names);
		P->names  = t;
		P->cnames = c;
	}
	h = name_hash(rs->v[i].name) & (P->cnames - 1);
	for (; P->names[h] != 0; h = (h + 1) & (P->cnames - 1))
		if (strcmp(rs->v[P->names[h] - 1].name, rs->v[i].name) == 0)
			return 1;
	P->names[h] = i + 1;
	P->nnames++;
	return 0;
}

/* rule NAME { NAME = value ... } */
static int
parse_rule(parser *P, detect_rules *rs)
{
	detect_rule *r, *v;
	int          line, col;

	next(P);
	if (P->t.type != TK_IDENT && P->t.type != TK_STR)
		return expected(P, "a rule name after 'rule'");
	line = P->t.line;
	col  = P->t.col;
	/* Grown by doubling: one rule at a time was quadratic too. */
	if (rs->n == P->rcap) {
		size_t c = P->rcap ? P->rcap * 2 : 16;

		v = realloc(rs->v, c * sizeof(*v));
		if (v == NULL)
			goto oom;
		rs->v   = v;
		P->rcap = c;
	}
	r = &rs->v[rs->n];
	memset(r, 0, sizeof(*r));
	rs->n++;
	if (P->t.type == TK_STR) {
		r->name  = P->t.str;
		P->t.str = NULL;
	} else {
		r->name = malloc(P->t.len + 1);
		if (r->name == NULL)
			goto oom;
		memcpy(r->name, P->t.p, P->t.len);
		r->name[P->t.len] = 0;
	}
	if (r->name[0] == 0 || strlen(r->name) > 100)
		return perr(P, line, col,
		    "expected a rule name of 1 to 100 "
		    "bytes, found %zu bytes",
		    strlen(r->name));
	switch (name_seen(P, rs, rs->n - 1)) {
	case 1:
		return perr(P, line, col,
		    "expected a new rule name, found '%s' again", r->name);
	case -1:
		goto oom;
	}
	next(P);
	if (P->t.type != TK_LBRACE)
		return expected(P, "'{' after the rule name");
	next(P);
	assigns_clear(P);
	while (P->t.type != TK_RBRACE) {
		assign *a;

		if (P->t.type != TK_IDENT)
			return expected(P, "a parameter name or '}'");
		if (P->nas == P->cas) {
			size_t  c  = P->cas ? P->cas * 2 : 16;
			assign *as = realloc(P->as, c * sizeof(*as));

			if (as == NULL)
				goto oom;
			P->as  = as;
			P->cas = c;
		}
		a = &P->as[P->nas];
		memset(a, 0, sizeof(*a));
		a->line = P->t.line;
		a->col  = P->t.col;
		snprintf(a->name, sizeof(a->name), "%.*s",
		    (int) (P->t.len < 39 ? P->t.len : 39), P->t.p);
		if (P->t.len >= sizeof(a->name))
			return perr(P, a->line, a->col,
			    "expected a parameter name, found a name of %zu "
			    "bytes",
			    P->t.len);
		{
			const assign *prev = find_assign(P, a->name);

			if (prev != NULL)
				return perr(P, a->line, a->col,
				    "expected each parameter once, found '%s' "
				    "again (first at line %d)",
				    a->name, prev->line);
		}
		next(P);
		if (P->t.type != TK_EQ)
			return expected(P, "'=' after the parameter name");
		next(P);
		if (parse_value(P, &a->v) != 0)
			return -1;
		P->nas++;
		if (P->t.type == TK_SEMI || P->t.type == TK_COMMA)
			next(P);
	}
	next(P);
	return build_rule(P, r, line, col);
oom:
	P->oom = 1;
	return perr(P, P->t.line, P->t.col, "out of memory");
}

/* NAME = value, outside rules. */
static int
parse_setting(parser *P, detect_rules *rs)
{
	static const detect_param p_max
	    = { "max_series", DP_COUNT, 0, 0, 1, 1e9, NULL };
	detect_span sp;
	aval        v;
	int         rc;

	if (P->t.len != 10 || memcmp(P->t.p, "max_series", 10) != 0)
		return expected(P, "'rule' or a setting (max_series)");
	next(P);
	if (P->t.type != TK_EQ)
		return expected(P, "'=' after max_series");
	next(P);
	if (parse_value(P, &v) != 0)
		return -1;
	rc = conv(P, &p_max, &v, &sp);
	aval_fini(&v);
	if (rc == 0)
		rs->max_series = (uint64_t) sp.v;
	if (P->t.type == TK_SEMI)
		next(P);
	return rc;
}

int
detect_rules_parse(const char *text, size_t len, const char *source_name,
    detect_rules **out, char *err, size_t errlen)
{
	parser        P  = { 0 };
	detect_rules *rs = calloc(1, sizeof(*rs));
	int           rc = 0;

	*out = NULL;
	if (errlen > 0)
		err[0] = 0;
	if (rs == NULL)
		return DETECT_ENOMEM;
	atomic_init(&rs->refs, 1);
	rs->max_series = 100000;
	P.src          = source_name ? source_name : "rules";
	P.err          = err;
	P.errlen       = errlen;
	detect_lex_init(&P.lx, text ? text : "", text ? len : 0);
	next(&P);
	while (rc == 0 && P.t.type != TK_EOF) {
		if (P.t.type == TK_IDENT && P.t.len == 4
		    && memcmp(P.t.p, "rule", 4) == 0)
			rc = parse_rule(&P, rs);
		else if (P.t.type == TK_IDENT)
			rc = parse_setting(&P, rs);
		else
			rc = expected(&P, "'rule' or a setting (max_series)");
	}
	free(P.t.str);
	assigns_clear(&P);
	free(P.as);
	free(P.names);
	if (rc != 0) {
		detect_rules_free(rs);
		return P.oom ? DETECT_ENOMEM : DETECT_EPARSE;
	}
	for (size_t i = 0; i < rs->n; i++)
		if (rs->v[i].pat[DETECT_PAT_HOST].code != NULL)
			rs->uses_host = 1;
	*out = rs;
	return 0;
}
