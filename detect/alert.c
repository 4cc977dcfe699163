/*
 * alert: the alert codec. One alert as a JSON object line, for `vitals
 * replay`, the collector's log, the store and the stdin of exec actions
 * (the only writer of alert JSON, the series-limit alert of the collector
 * included), and the one reader of it, for `vitals alerts` and `vitals
 * top`. Pure: no I/O; the reader is a small JSON object reader of its own
 * so that detect/ needs no JSON library.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detect/detect.h"

typedef struct jbuf {
	char  *p;
	size_t len, n; /* n: bytes the output needs so far */
} jbuf;

static void
put(jbuf *b, const char *s, size_t n)
{
	if (b->n < b->len) {
		size_t room = b->len - b->n;

		memcpy(b->p + b->n, s, n < room ? n : room);
	}
	b->n += n;
}

static void
puts_(jbuf *b, const char *s)
{
	put(b, s, strlen(s));
}

static void
str(jbuf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";

	put(b, "\"", 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char) s[i];
		char          esc[6]
		    = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };

		if (c == '"' || c == '\\') {
			put(b, "\\", 1);
			put(b, s + i, 1);
		} else if (c == '\n') {
			put(b, "\\n", 2);
		} else if (c < 0x20 || c == 0x7f) {
			put(b, esc, 6);
		} else {
			put(b, s + i, 1);
		}
	}
	put(b, "\"", 1);
}

/* The shortest of %.15g..%.17g that reads back as the same double;
 * NaN, Infinity, -Infinity bare as Python's json writes them. */
static void
num(jbuf *b, double v)
{
	char t[40];

	if (isnan(v)) {
		puts_(b, "NaN");
		return;
	}
	if (isinf(v)) {
		puts_(b, v > 0 ? "Infinity" : "-Infinity");
		return;
	}
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(t, sizeof(t), "%.*g", prec, v);
		if (strtod(t, NULL) == v)
			break;
	}
	puts_(b, t);
}

/* The alert object without the newline; value_null writes "value":null
 * (an alert that has no value, the series-limit alert). */
static void
put_alert(jbuf *b, const detect_alert *a, int value_null)
{
	char      t[96];
	long long s    = a->time_ns / 1000000000ll;
	long long frac = a->time_ns % 1000000000ll;

	if (frac < 0) {
		frac += 1000000000ll;
		s -= 1;
	}
	puts_(b, "{\"rule\":");
	str(b, a->rule, strlen(a->rule));
	puts_(b, ",\"kind\":");
	str(b, a->kind, strlen(a->kind));
	puts_(b, ",\"severity\":\"");
	puts_(b, detect_severity_name(a->severity));
	puts_(b, "\",\"state\":\"");
	puts_(b, detect_state_name(a->state));
	puts_(b, "\",\"run\":");
	str(b, a->run, a->runlen);
	snprintf(t, sizeof(t), ",\"rank\":%d,\"host\":", (int) a->rank);
	puts_(b, t);
	str(b, a->host, a->hostlen);
	puts_(b, ",\"metric\":");
	str(b, a->metric, a->mlen);
	snprintf(t, sizeof(t), ",\"step\":%llu,\"time\":%lld.%09lld",
	    (unsigned long long) a->step, s, frac);
	puts_(b, t);
	puts_(b, ",\"value\":");
	if (value_null)
		puts_(b, "null");
	else
		num(b, a->value);
	puts_(b, ",\"baseline\":");
	if (isnan(a->baseline))
		puts_(b, "null");
	else
		num(b, a->baseline);
	puts_(b, ",\"message\":");
	str(b, a->message, strlen(a->message));
	puts_(b, "}");
}

/* NUL-terminate what fits and return the length needed. */
static size_t
finish(jbuf *b)
{
	if (b->len > 0)
		b->p[b->n < b->len ? b->n : b->len - 1] = 0;
	return b->n;
}

size_t
detect_alert_json(const detect_alert *a, char *buf, size_t len)
{
	jbuf b = { buf, len, 0 };

	put_alert(&b, a, 0);
	puts_(&b, "\n");
	return finish(&b);
}

size_t
detect_alert_series_limit_json(const char *run, size_t runlen,
    const char *host, size_t hostlen, const char *metric, size_t mlen,
    uint64_t step, int64_t time_ns, const char *which, uint64_t cap, char *buf,
    size_t len)
{
	jbuf         b = { buf, len, 0 };
	char         msg[160];
	detect_alert a;

	snprintf(msg, sizeof(msg),
	    "%s series cap of %llu reached: samples of new series are "
	    "refused (not stored)",
	    which, (unsigned long long) cap);
	memset(&a, 0, sizeof(a));
	a.rule     = "series_limit";
	a.kind     = "series_limit";
	a.severity = DETECT_WARNING;
	a.state    = DETECT_FIRING;
	a.run      = run;
	a.runlen   = runlen;
	a.rank     = -1;
	a.host     = host;
	a.hostlen  = hostlen;
	a.metric   = metric;
	a.mlen     = mlen;
	a.step     = step;
	a.time_ns  = time_ns;
	a.value    = NAN;
	a.baseline = NAN;
	a.message  = msg;
	put_alert(&b, &a, 1);
	return finish(&b);
}

/* ---- reading ----------------------------------------------------------- */

static const char *const field_names[DETECT_AF_COUNT]
    = { "rule", "kind", "severity", "state", "run", "rank", "host", "metric",
	      "step", "time", "value", "baseline", "message" };

const char *
detect_alert_field_name(int field)
{
	if (field < 0 || field >= DETECT_AF_COUNT)
		return NULL;
	return field_names[field];
}

/* Nested values are skipped, not kept; a bound on the recursion. */
#define READ_DEPTH_MAX 64
/* Longest number token read (digits of a double need far fewer). */
#define READ_NUM_MAX 400

typedef struct reader {
	const char *p;
	size_t      len, i;
	char       *mem; /* decoded strings: never more than the input */
	size_t      mo;
	char       *err;
	size_t      errlen;
} reader;

static int
expected(reader *r, const char *what)
{
	if (r->err == NULL || r->errlen == 0)
		return DETECT_EPARSE;
	if (r->i >= r->len)
		snprintf(r->err, r->errlen,
		    "offset %zu: expected %s, found the end", r->i, what);
	else if ((unsigned char) r->p[r->i] >= 0x20
	    && (unsigned char) r->p[r->i] < 0x7f)
		snprintf(r->err, r->errlen,
		    "offset %zu: expected %s, found '%c'", r->i, what,
		    r->p[r->i]);
	else
		snprintf(r->err, r->errlen,
		    "offset %zu: expected %s, found byte 0x%02x", r->i, what,
		    (unsigned char) r->p[r->i]);
	return DETECT_EPARSE;
}

static void
skip_ws(reader *r)
{
	while (r->i < r->len
	    && (r->p[r->i] == ' ' || r->p[r->i] == '\t' || r->p[r->i] == '\n'
	        || r->p[r->i] == '\r'))
		r->i++;
}

static int
lit(reader *r, const char *word)
{
	size_t n = strlen(word);

	if (r->len - r->i < n || memcmp(r->p + r->i, word, n) != 0)
		return 0;
	r->i += n;
	return 1;
}

static int
hex4(reader *r, uint32_t *out)
{
	uint32_t v = 0;

	if (r->len - r->i < 4)
		return -1;
	for (int k = 0; k < 4; k++) {
		char c = r->p[r->i + (size_t) k];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (uint32_t) (c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (uint32_t) (c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (uint32_t) (c - 'A' + 10);
		else
			return -1;
	}
	r->i += 4;
	*out = v;
	return 0;
}

static void
put_utf8(reader *r, uint32_t cp)
{
	char *o = r->mem + r->mo;

	if (cp < 0x80) {
		o[0] = (char) cp;
		r->mo += 1;
	} else if (cp < 0x800) {
		o[0] = (char) (0xc0 | (cp >> 6));
		o[1] = (char) (0x80 | (cp & 0x3f));
		r->mo += 2;
	} else if (cp < 0x10000) {
		o[0] = (char) (0xe0 | (cp >> 12));
		o[1] = (char) (0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char) (0x80 | (cp & 0x3f));
		r->mo += 3;
	} else {
		o[0] = (char) (0xf0 | (cp >> 18));
		o[1] = (char) (0x80 | ((cp >> 12) & 0x3f));
		o[2] = (char) (0x80 | ((cp >> 6) & 0x3f));
		o[3] = (char) (0x80 | (cp & 0x3f));
		r->mo += 4;
	}
}

/*
 * A string at r->i (the opening quote), unescaped into r->mem and
 * NUL-terminated; *out points at it. Every escape is shorter than what it
 * writes (\uXXXX: 6 bytes for at most 3, a pair: 12 for 4), so the strings
 * of an input never need more room than the input itself.
 */
static int
read_string(reader *r, const char **out)
{
	char *start = r->mem + r->mo;

	if (r->i >= r->len || r->p[r->i] != '"')
		return expected(r, "a string");
	r->i++;
	for (;;) {
		char c;

		if (r->i >= r->len)
			return expected(r, "'\"' to end the string");
		c = r->p[r->i++];
		if (c == '"')
			break;
		if (c != '\\') {
			r->mem[r->mo++] = c;
			continue;
		}
		if (r->i >= r->len)
			return expected(r, "an escape");
		c = r->p[r->i++];
		switch (c) {
		case '"':
		case '\\':
		case '/':
			r->mem[r->mo++] = c;
			break;
		case 'b':
			r->mem[r->mo++] = '\b';
			break;
		case 'f':
			r->mem[r->mo++] = '\f';
			break;
		case 'n':
			r->mem[r->mo++] = '\n';
			break;
		case 'r':
			r->mem[r->mo++] = '\r';
			break;
		case 't':
			r->mem[r->mo++] = '\t';
			break;
		case 'u': {
			uint32_t cp, lo;

			if (hex4(r, &cp) != 0)
				return expected(r, "4 hex digits");
			if (cp >= 0xd800 && cp <= 0xdbff && r->len - r->i >= 6
			    && r->p[r->i] == '\\' && r->p[r->i + 1] == 'u') {
				size_t back = r->i;

				r->i += 2;
				if (hex4(r, &lo) == 0 && lo >= 0xdc00
				    && lo <= 0xdfff)
					cp = 0x10000 + ((cp - 0xd800) << 10)
					    + (lo - 0xdc00);
				else
					r->i = back;
			}
			if (cp >= 0xd800 && cp <= 0xdfff)
				cp = 0xfffd; /* a lone surrogate */
			put_utf8(r, cp);
			break;
		}
		default:
			r->i--;
			return expected(
			    r, "an escape (\\\" \\\\ / b f n r t u)");
		}
	}
	r->mem[r->mo++] = 0;
	*out            = start;
	return 0;
}

static int
read_number(reader *r, detect_alert_value *v)
{
	size_t start = r->i, n;
	int    real  = 0;
	char   tok[READ_NUM_MAX + 1];

	if (lit(r, "NaN")) {
		v->type = DETECT_AT_REAL;
		v->num  = NAN;
		return 0;
	}
	if (lit(r, "Infinity") || lit(r, "-Infinity")) {
		v->type = DETECT_AT_REAL;
		v->num  = r->p[start] == '-' ? -INFINITY : INFINITY;
		return 0;
	}
	if (r->i < r->len && r->p[r->i] == '-')
		r->i++;
	if (r->i >= r->len || r->p[r->i] < '0' || r->p[r->i] > '9')
		return expected(r, "a digit");
	while (r->i < r->len && r->p[r->i] >= '0' && r->p[r->i] <= '9')
		r->i++;
	if (r->i < r->len && r->p[r->i] == '.') {
		real = 1;
		r->i++;
		if (r->i >= r->len || r->p[r->i] < '0' || r->p[r->i] > '9')
			return expected(r, "a digit after '.'");
		while (r->i < r->len && r->p[r->i] >= '0' && r->p[r->i] <= '9')
			r->i++;
	}
	if (r->i < r->len && (r->p[r->i] == 'e' || r->p[r->i] == 'E')) {
		real = 1;
		r->i++;
		if (r->i < r->len && (r->p[r->i] == '+' || r->p[r->i] == '-'))
			r->i++;
		if (r->i >= r->len || r->p[r->i] < '0' || r->p[r->i] > '9')
			return expected(r, "a digit in the exponent");
		while (r->i < r->len && r->p[r->i] >= '0' && r->p[r->i] <= '9')
			r->i++;
	}
	n = r->i - start;
	if (n > READ_NUM_MAX) {
		r->i = start;
		return expected(r, "a number of at most 400 characters");
	}
	memcpy(tok, r->p + start, n);
	tok[n] = 0;
	v->num = strtod(tok, NULL);
	if (real) {
		v->type = DETECT_AT_REAL;
		return 0;
	}
	v->type = DETECT_AT_INT;
	if (tok[0] == '-') {
		long long i = strtoll(tok, NULL, 10); /* clamped on overflow */

		v->i = i;
		v->u = 0;
	} else {
		unsigned long long u = strtoull(tok, NULL, 10); /* clamped */

		v->u = u;
		v->i = u > INT64_MAX ? INT64_MAX : (int64_t) u;
	}
	return 0;
}

static int read_value(reader *r, detect_alert_value *v, int depth);

/* An object or array inside the alert: checked and skipped. */
static int
skip_nested(reader *r, int depth)
{
	char               close = r->p[r->i] == '{' ? '}' : ']';
	detect_alert_value v;
	size_t             mo = r->mo;
	int                rc;

	if (depth >= READ_DEPTH_MAX)
		return expected(r, "at most 64 levels of nesting");
	r->i++;
	skip_ws(r);
	if (r->i < r->len && r->p[r->i] == close) {
		r->i++;
		return 0;
	}
	for (;;) {
		if (close == '}') {
			const char *key;

			if ((rc = read_string(r, &key)) != 0)
				return rc;
			skip_ws(r);
			if (r->i >= r->len || r->p[r->i] != ':')
				return expected(r, "':'");
			r->i++;
			skip_ws(r);
		}
		if ((rc = read_value(r, &v, depth + 1)) != 0)
			return rc;
		r->mo = mo; /* nothing inside is kept */
		skip_ws(r);
		if (r->i < r->len && r->p[r->i] == ',') {
			r->i++;
			skip_ws(r);
			continue;
		}
		if (r->i < r->len && r->p[r->i] == close) {
			r->i++;
			return 0;
		}
		return expected(r, close == '}' ? "',' or '}'" : "',' or ']'");
	}
}

static int
read_value(reader *r, detect_alert_value *v, int depth)
{
	char c;

	memset(v, 0, sizeof(*v));
	v->num = NAN;
	if (r->i >= r->len)
		return expected(r, "a value");
	c = r->p[r->i];
	if (c == '"') {
		v->type = DETECT_AT_STRING;
		return read_string(r, &v->str);
	}
	if (c == '{' || c == '[') {
		v->type = DETECT_AT_OTHER;
		return skip_nested(r, depth);
	}
	if (lit(r, "null")) {
		v->type = DETECT_AT_NULL;
		return 0;
	}
	if (lit(r, "true") || lit(r, "false")) {
		v->type = DETECT_AT_OTHER;
		return 0;
	}
	if (c == '-' || (c >= '0' && c <= '9') || c == 'N' || c == 'I')
		return read_number(r, v);
	return expected(r, "a value");
}

static void
record_clear(detect_alert_record *out)
{
	for (int k = 0; k < DETECT_AF_COUNT; k++) {
		memset(&out->f[k], 0, sizeof(out->f[k]));
		out->f[k].type = DETECT_AT_ABSENT;
		out->f[k].num  = NAN;
	}
}

int
detect_alert_parse(const char *json, size_t len, detect_alert_record *out,
    char *err, size_t errlen)
{
	reader r = { json, len, 0, NULL, 0, err, errlen };
	int    rc;

	out->mem = NULL;
	record_clear(out);
	if (json == NULL && len > 0)
		return DETECT_EINVAL;
	if ((r.mem = malloc(len + 1)) == NULL) {
		if (err != NULL && errlen > 0)
			snprintf(err, errlen, "out of memory");
		return DETECT_ENOMEM;
	}
	skip_ws(&r);
	if (r.i >= r.len || r.p[r.i] != '{') {
		rc = expected(&r, "'{'");
		goto fail;
	}
	r.i++;
	skip_ws(&r);
	if (r.i < r.len && r.p[r.i] == '}')
		goto done;
	for (;;) {
		const char        *key;
		detect_alert_value v;
		size_t             mo    = r.mo;
		int                field = -1;

		if ((rc = read_string(&r, &key)) != 0)
			goto fail;
		for (int k = 0; k < DETECT_AF_COUNT; k++)
			if (strcmp(key, field_names[k]) == 0)
				field = k;
		r.mo = mo; /* the key is not kept */
		skip_ws(&r);
		if (r.i >= r.len || r.p[r.i] != ':') {
			rc = expected(&r, "':'");
			goto fail;
		}
		r.i++;
		skip_ws(&r);
		if ((rc = read_value(&r, &v, 0)) != 0)
			goto fail;
		if (field >= 0)
			out->f[field] = v; /* a key given twice: the last */
		else
			r.mo = mo;
		skip_ws(&r);
		if (r.i < r.len && r.p[r.i] == ',') {
			r.i++;
			skip_ws(&r);
			continue;
		}
		if (r.i < r.len && r.p[r.i] == '}')
			break;
		rc = expected(&r, "',' or '}'");
		goto fail;
	}
done:
	out->mem = r.mem;
	return 0;
fail:
	free(r.mem);
	record_clear(out);
	return rc;
}

void
detect_alert_record_free(detect_alert_record *r)
{
	if (r == NULL)
		return;
	free(r->mem);
	r->mem = NULL;
	record_clear(r);
}
