#include "cli/replay_input.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* The longest line (or CSV record) read: samples are short; a longer
 * line is refused where it starts without holding the rest. */
#define REPLAY_LINE_MAX (1 << 20)

enum { C_TIME, C_STEP, C_RANK, C_METRIC, C_VALUE, C_RUN, C_HOST, NCOL };
static const char *const col_names[NCOL]
    = { "time", "step", "rank", "metric", "value", "run", "host" };

struct replay_input {
	const char          *path;
	FILE                *f;
	int                  format;
	long                 line; /* of the line in buf */
	char                *buf;  /* the current line (or CSV record) */
	size_t               cap;
	size_t               len;
	char                 run0[128]; /* default run name */
	struct json_tokener *tok;
	struct json_object  *obj; /* the current JSON line */
	/* CSV */
	int     col[NCOL]; /* field index of each column */
	int     ncols;
	char   *fields; /* unquoted fields, NUL-separated */
	size_t  fcap;
	size_t *fstart, *flen;
	int     fmax;
	int    *fcol; /* column (1-based) of each field */
	int     header_done;
	/* a line read ahead while sniffing */
	int pending;
};

static int ierr(const replay_input *in, char *err, size_t errlen, int col,
    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int
ierr(const replay_input *in, char *err, size_t errlen, int col,
    const char *fmt, ...)
{
	va_list ap;
	int     n;

	if (col > 0)
		n = snprintf(
		    err, errlen, "%s:%ld:%d: ", in->path, in->line, col);
	else
		n = snprintf(err, errlen, "%s:%ld: ", in->path, in->line);
	if (n >= 0 && (size_t) n < errlen) {
		va_start(ap, fmt);
		vsnprintf(err + n, errlen - (size_t) n, fmt, ap);
		va_end(ap);
	}
	return -1;
}

int
replay_input_open(
    const char *path, FILE *f, replay_input **out, char *err, size_t errlen)
{
	replay_input *in = calloc(1, sizeof(*in));
	const char   *base, *dot;
	size_t        n;

	*out = NULL;
	if (in == NULL)
		goto oom;
	in->path   = path;
	in->f      = f;
	in->format = REPLAY_INPUT_AUTO;
	dot        = strrchr(path, '.');
	if (dot != NULL
	    && (strcmp(dot, ".jsonl") == 0 || strcmp(dot, ".ndjson") == 0
	        || strcmp(dot, ".json") == 0))
		in->format = REPLAY_INPUT_JSONL;
	else if (dot != NULL && strcmp(dot, ".csv") == 0)
		in->format = REPLAY_INPUT_CSV;
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (strcmp(path, "-") == 0)
		base = "stdin";
	dot = strchr(base, '.');
	n   = dot && dot > base ? (size_t) (dot - base) : strlen(base);
	if (n >= sizeof(in->run0))
		n = sizeof(in->run0) - 1;
	memcpy(in->run0, base, n);
	in->run0[n] = 0;
	in->tok     = json_tokener_new();
	if (in->tok == NULL)
		goto oom;
	*out = in;
	return 0;
oom:
	free(in);
	snprintf(err, errlen, "%s: out of memory", path);
	return -1;
}

void
replay_input_close(replay_input *in)
{
	if (in == NULL)
		return;
	if (in->obj != NULL)
		json_object_put(in->obj);
	if (in->tok != NULL)
		json_tokener_free(in->tok);
	free(in->buf);
	free(in->fields);
	free(in->fstart);
	free(in->flen);
	free(in->fcol);
	free(in);
}

int
replay_input_format(const replay_input *in)
{
	return in->format;
}

/* One physical line into buf at offset at (newline stripped). Returns 1,
 * 0 at the end (nothing read), -1 on a read error or out of memory, -2
 * past REPLAY_LINE_MAX bytes (a record, for CSV across lines): reading
 * stops there, nothing more of it is held. */
static int
read_line(replay_input *in, size_t at)
{
	int c, got = 0;

	in->len = at;
	for (;;) {
		if (in->len >= REPLAY_LINE_MAX)
			return -2;
		if (in->len + 2 > in->cap) {
			size_t cap = in->cap ? in->cap * 2 : 256;
			char  *b;

			while (cap < in->len + 2)
				cap *= 2;
			b = realloc(in->buf, cap);
			if (b == NULL)
				return -1;
			in->buf = b;
			in->cap = cap;
		}
		c = getc(in->f);
		if (c == EOF) {
			if (ferror(in->f))
				return -1;
			if (!got)
				return 0;
			break;
		}
		got = 1;
		if (c == '\n')
			break;
		in->buf[in->len++] = (char) c;
	}
	if (in->len > at && in->buf[in->len - 1] == '\r')
		in->len--;
	in->buf[in->len] = 0;
	return 1;
}

/* The next line to parse: the one sniffing already read (pending), else
 * a new one. Returns as read_line. */
static int
next_line(replay_input *in)
{
	if (in->pending) {
		in->pending = 0;
		return 1;
	}
	in->line++;
	return read_line(in, 0);
}

/* The error of a read_line() that returned rc < 0. */
static int
read_err(const replay_input *in, int rc, char *err, size_t errlen)
{
	if (rc == -2)
		return ierr(in, err, errlen, 0,
		    "expected a line of at most %d MiB, found a longer one",
		    REPLAY_LINE_MAX >> 20);
	return ierr(in, err, errlen, 0, "read failed: %s", strerror(errno));
}

static int
blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t')
			return 0;
	return 1;
}

/* ---- numbers -------------------------------------------------------------
 */

int
replay_input_parse_time(const char *s, size_t len, int64_t *ns)
{
	char      buf[64];
	char     *end;
	size_t    i   = 0;
	int       neg = 0, nd = 0;
	long long sec = 0, frac = 0;

	if (len == 0 || len >= sizeof(buf))
		return -1;
	memcpy(buf, s, len);
	buf[len] = 0;
	if (buf[0] == '-' || buf[0] == '+')
		neg = buf[i++] == '-';
	if (buf[i] < '0' || buf[i] > '9')
		goto approx;
	for (; buf[i] >= '0' && buf[i] <= '9'; i++) {
		sec = sec * 10 + (buf[i] - '0');
		if (sec > 9000000000ll) /* the year 2255: and no overflow */
			return -1;
	}
	if (buf[i] == '.') {
		for (i++; buf[i] >= '0' && buf[i] <= '9'; i++, nd++)
			if (nd < 9)
				frac = frac * 10 + (buf[i] - '0');
		if (nd > 9)
			goto approx;
		for (int k = nd; k < 9; k++)
			frac *= 10;
	}
	if (buf[i] != 0)
		goto approx;
	*ns = (sec * 1000000000ll + frac) * (neg ? -1 : 1);
	return 0;
approx : {
	double d;

	errno = 0;
	d     = strtod(buf, &end);
	if (errno != 0 || *end != 0 || end == buf || !isfinite(d)
	    || fabs(d) > 9e9)
		return -1;
	*ns = (int64_t) llround(d * 1e9);
	return 0;
}
}

static int
parse_u64(const char *s, uint64_t *out)
{
	char              *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v     = strtoull(s, &end, 10);
	if (errno != 0 || *end != 0)
		return -1;
	*out = v;
	return 0;
}

static int
parse_rank(const char *s, int32_t *out)
{
	char *end;
	long  v;

	if (*s == 0)
		return -1;
	errno = 0;
	v     = strtol(s, &end, 10);
	if (errno != 0 || *end != 0 || v < -1 || v > INT32_MAX)
		return -1;
	*out = (int32_t) v;
	return 0;
}

/* A value: numbers, nan, inf, -inf, NaN, Infinity, -Infinity. */
static int
parse_value(const char *s, double *out)
{
	char *end;

	if (*s == 0 || *s == ' ')
		return -1;
	errno = 0;
	*out  = strtod(s, &end);
	if (*end != 0)
		return -1;
	return 0;
}

/* ---- JSON Lines ----------------------------------------------------------
 */

static const char *
jtype(struct json_object *v)
{
	switch (json_object_get_type(v)) {
	case json_type_null:
		return "null";
	case json_type_boolean:
		return "a boolean";
	case json_type_double:
	case json_type_int:
		return "a number";
	case json_type_string:
		return "a string";
	case json_type_object:
		return "an object";
	default:
		return "an array";
	}
}

/*
 * json-c parses an integer past 2^64-1 as 2^64-1 (past 2^63-1 as that,
 * in older versions) without saying so; the step as written, in the raw
 * line, tells. 1 if the "step" written there is not parsed (the value
 * json-c gives), with *col at its first digit; 0 if it is that value or
 * the key is written with escapes we do not look for.
 */
static int
step_out_of_range(const replay_input *in, const char *parsed, int *col)
{
	const char *p = in->buf, *end = in->buf + in->len;

	while ((p = memmem(p, (size_t) (end - p), "\"step\"", 6)) != NULL) {
		const char *d = p + 6;
		size_t      n;

		while (d < end && (*d == ' ' || *d == '\t'))
			d++;
		if (d >= end || *d != ':') {
			p += 6;
			continue;
		}
		d++;
		while (d < end && (*d == ' ' || *d == '\t'))
			d++;
		n    = strspn(d, "0123456789");
		*col = (int) (d - in->buf) + 1;
		return n > 0 && (n != strlen(parsed) || memcmp(d, parsed, n) != 0);
	}
	return 0;
}

static int
next_jsonl(replay_input *in, detect_sample *s, char *err, size_t errlen)
{
	struct json_object *o, *v;
	const char         *txt;
	size_t              end;
	int                 col = 0;

	if (in->obj != NULL) {
		json_object_put(in->obj);
		in->obj = NULL;
	}
	do {
		int rc;

		rc = next_line(in);
		if (rc == 0)
			return 0;
		if (rc < 0)
			return read_err(in, rc, err, errlen);
	} while (blank(in->buf, in->len));
	json_tokener_reset(in->tok);
	o   = json_tokener_parse_ex(in->tok, in->buf, (int) in->len);
	end = json_tokener_get_parse_end(in->tok);
	if (o == NULL) {
		enum json_tokener_error je = json_tokener_get_error(in->tok);

		return ierr(in, err, errlen, (int) end + 1,
		    "expected a JSON object, found invalid JSON (%s)",
		    je == json_tokener_continue ? "the line ends inside it"
		                                : json_tokener_error_desc(je));
	}
	in->obj = o;
	if (!blank(in->buf + end, in->len - end))
		return ierr(in, err, errlen, (int) end + 1,
		    "expected the end of the line after the object, found "
		    "more text");
	if (!json_object_is_type(o, json_type_object))
		return ierr(in, err, errlen, 1,
		    "expected a JSON object, found %s", jtype(o));
	memset(s, 0, sizeof(*s));
	s->rank   = -1;
	s->run    = in->run0;
	s->runlen = strlen(in->run0);
	if (json_object_object_get_ex(o, "run", &v)) {
		if (!json_object_is_type(v, json_type_string))
			return ierr(in, err, errlen, 0,
			    "expected a string for \"run\", found %s",
			    jtype(v));
		s->run    = json_object_get_string(v);
		s->runlen = (size_t) json_object_get_string_len(v);
	}
	if (json_object_object_get_ex(o, "host", &v)
	    && json_object_is_type(v, json_type_string)) {
		s->host    = json_object_get_string(v);
		s->hostlen = (size_t) json_object_get_string_len(v);
	}
	if (!json_object_object_get_ex(o, "metric", &v)
	    || !json_object_is_type(v, json_type_string)
	    || json_object_get_string_len(v) == 0)
		return ierr(in, err, errlen, 0,
		    "expected \"metric\" as a non-empty string, found %s",
		    json_object_object_get_ex(o, "metric", &v) ? jtype(v)
		                                               : "none");
	s->metric = json_object_get_string(v);
	s->mlen   = (size_t) json_object_get_string_len(v);
	if (json_object_object_get_ex(o, "rank", &v)
	    && !json_object_is_type(v, json_type_null)) {
		if (!json_object_is_type(v, json_type_int)
		    || parse_rank(json_object_get_string(v), &s->rank) != 0)
			return ierr(in, err, errlen, 0,
			    "expected \"rank\" as a whole number >= -1, found "
			    "%s",
			    json_object_get_string(v));
	}
	if (!json_object_object_get_ex(o, "step", &v)
	    || !json_object_is_type(v, json_type_int)
	    || parse_u64(json_object_get_string(v), &s->step) != 0)
		return ierr(in, err, errlen, 0,
		    "expected \"step\" as a whole number >= 0, found %s",
		    json_object_object_get_ex(o, "step", &v)
		        ? json_object_get_string(v)
		        : "none");
	if ((s->step == UINT64_MAX || s->step == INT64_MAX)
	    && step_out_of_range(in, json_object_get_string(v), &col))
		return ierr(in, err, errlen, col,
		    "expected \"step\" from 0 to 18446744073709551615, "
		    "found a larger number");
	if (!json_object_object_get_ex(o, "time", &v)
	    || !(json_object_is_type(v, json_type_int)
	        || json_object_is_type(v, json_type_double)))
		return ierr(in, err, errlen, 0,
		    "expected \"time\" as a number of seconds, found %s",
		    json_object_object_get_ex(o, "time", &v) ? jtype(v)
		                                             : "none");
	txt = json_object_get_string(v);
	if (replay_input_parse_time(txt, strlen(txt), &s->time_ns) != 0)
		return ierr(in, err, errlen, 0,
		    "expected \"time\" as seconds since the epoch, found %s",
		    txt);
	if (!json_object_object_get_ex(o, "value", &v)
	    || !(json_object_is_type(v, json_type_int)
	        || json_object_is_type(v, json_type_double)))
		return ierr(in, err, errlen, 0,
		    "expected \"value\" as a number (or NaN, Infinity, "
		    "-Infinity), found %s",
		    json_object_object_get_ex(o, "value", &v) ? jtype(v)
		                                              : "none");
	s->value = json_object_get_double(v);
	return 1;
}

/* ---- CSV ---------------------------------------------------------------- */

/* Split the record in buf (reading more lines while a quoted field is
 * open) into fields. Returns the number of fields or -1 (err set). */
static int
split_csv(replay_input *in, char *err, size_t errlen)
{
	size_t i = 0, o = 0;
	int    nf    = 0;
	long   first = in->line;

	if (in->fcap < in->len + 1) {
		char *p = realloc(in->fields, in->len + 1);

		if (p == NULL)
			return ierr(in, err, errlen, 0, "out of memory");
		in->fields = p;
		in->fcap   = in->len + 1;
	}
	for (;;) {
		size_t start = o;
		int    col   = (int) i + 1;

		if (nf == in->fmax) {
			int     m = in->fmax ? in->fmax * 2 : 16;
			size_t *fs
			    = realloc(in->fstart, (size_t) m * sizeof(*fs));
			size_t *fl;
			int    *fc;

			if (fs == NULL)
				return ierr(
				    in, err, errlen, 0, "out of memory");
			in->fstart = fs;
			fl = realloc(in->flen, (size_t) m * sizeof(*fl));
			if (fl == NULL)
				return ierr(
				    in, err, errlen, 0, "out of memory");
			in->flen = fl;
			fc       = realloc(in->fcol, (size_t) m * sizeof(*fc));
			if (fc == NULL)
				return ierr(
				    in, err, errlen, 0, "out of memory");
			in->fcol = fc;
			in->fmax = m;
		}
		if (i < in->len && in->buf[i] == '"') {
			i++;
			for (;;) {
				if (i >= in->len) {
					/* A quoted field goes on to the
					 * next line. */
					size_t at = in->len;
					int    rc;

					in->buf[at] = '\n';
					in->line++;
					rc = read_line(in, at + 1);
					if (rc < 0 && rc != -1)
						return read_err(
						    in, rc, err, errlen);
					if (rc <= 0) {
						in->line = first;
						return ierr(in, err, errlen,
						    col,
						    "expected the closing "
						    "quote of this field, "
						    "found the end of the "
						    "file");
					}
					if (in->fcap < in->len + 1) {
						char *p = realloc(
						    in->fields, in->len + 1);

						if (p == NULL)
							return ierr(in, err,
							    errlen, 0,
							    "out of memory");
						in->fields = p;
						in->fcap   = in->len + 1;
					}
					in->fields[o++] = '\n';
					i               = at + 1;
					continue;
				}
				if (in->buf[i] == '"') {
					if (i + 1 < in->len
					    && in->buf[i + 1] == '"') {
						in->fields[o++] = '"';
						i += 2;
						continue;
					}
					i++;
					break;
				}
				in->fields[o++] = in->buf[i++];
			}
			if (i < in->len && in->buf[i] != ',')
				return ierr(in, err, errlen, (int) i + 1,
				    "expected ',' or the end of the line "
				    "after a quoted field, found '%c'",
				    in->buf[i]);
		} else {
			while (i < in->len && in->buf[i] != ',') {
				if (in->buf[i] == '"')
					return ierr(in, err, errlen,
					    (int) i + 1,
					    "expected a quote only at the "
					    "start of a field, found one "
					    "inside it");
				in->fields[o++] = in->buf[i++];
			}
		}
		in->fields[o]  = 0;
		in->fstart[nf] = start;
		in->flen[nf]   = o - start;
		in->fcol[nf]   = col;
		nf++;
		o++;
		if (o >= in->fcap) {
			char *p = realloc(in->fields, in->fcap * 2 + 1);

			if (p == NULL)
				return ierr(
				    in, err, errlen, 0, "out of memory");
			in->fields = p;
			in->fcap   = in->fcap * 2 + 1;
		}
		if (i >= in->len)
			break;
		i++; /* the comma */
	}
	return nf;
}

static const char *
field(const replay_input *in, int f)
{
	return in->fields + in->fstart[f];
}

static int
csv_header(replay_input *in, int nf, char *err, size_t errlen)
{
	for (int c = 0; c < NCOL; c++)
		in->col[c] = -1;
	for (int f = 0; f < nf; f++) {
		for (int c = 0; c < NCOL; c++) {
			if (strcmp(field(in, f), col_names[c]) != 0)
				continue;
			if (in->col[c] >= 0)
				return ierr(in, err, errlen, in->fcol[f],
				    "expected each column once, found '%s' "
				    "again",
				    col_names[c]);
			in->col[c] = f;
		}
	}
	for (int c = 0; c < NCOL; c++)
		if (in->col[c] < 0 && c != C_RANK && c != C_RUN && c != C_HOST)
			return ierr(in, err, errlen, 1,
			    "expected a header with the columns time, step, "
			    "metric and value (rank, run and host optional), "
			    "found no '%s'",
			    col_names[c]);
	in->ncols       = nf;
	in->header_done = 1;
	return 0;
}

static int
next_csv(replay_input *in, detect_sample *s, char *err, size_t errlen)
{
	int nf, f;

	for (;;) {
		int rc;

		rc = next_line(in);
		if (rc == 0) {
			if (!in->header_done)
				return ierr(in, err, errlen, 0,
				    "expected a CSV header (time,step,rank,"
				    "metric,value), found an empty file");
			return 0;
		}
		if (rc < 0)
			return read_err(in, rc, err, errlen);
		if (blank(in->buf, in->len))
			continue;
		nf = split_csv(in, err, errlen);
		if (nf < 0)
			return -1;
		if (!in->header_done) {
			if (csv_header(in, nf, err, errlen) != 0)
				return -1;
			continue;
		}
		break;
	}
	if (nf != in->ncols)
		return ierr(in, err, errlen, 0,
		    "expected %d fields as in the header, found %d", in->ncols,
		    nf);
	memset(s, 0, sizeof(*s));
	s->rank   = -1;
	s->run    = in->run0;
	s->runlen = strlen(in->run0);
	f         = in->col[C_TIME];
	if (replay_input_parse_time(field(in, f), in->flen[f], &s->time_ns)
	    != 0)
		return ierr(in, err, errlen, in->fcol[f],
		    "expected time in seconds, found '%.40s'", field(in, f));
	f = in->col[C_STEP];
	if (parse_u64(field(in, f), &s->step) != 0)
		return ierr(in, err, errlen, in->fcol[f],
		    "expected step as a whole number >= 0, found '%.40s'",
		    field(in, f));
	f = in->col[C_RANK];
	if (f >= 0 && in->flen[f] > 0 && parse_rank(field(in, f), &s->rank))
		return ierr(in, err, errlen, in->fcol[f],
		    "expected rank as a whole number >= -1, found '%.40s'",
		    field(in, f));
	f = in->col[C_METRIC];
	if (in->flen[f] == 0)
		return ierr(in, err, errlen, in->fcol[f],
		    "expected a metric name, found an empty field");
	s->metric = field(in, f);
	s->mlen   = in->flen[f];
	f         = in->col[C_VALUE];
	if (parse_value(field(in, f), &s->value) != 0)
		return ierr(in, err, errlen, in->fcol[f],
		    "expected a number (or nan, inf, -inf), found '%.40s'",
		    field(in, f));
	f = in->col[C_RUN];
	if (f >= 0 && in->flen[f] > 0) {
		s->run    = field(in, f);
		s->runlen = in->flen[f];
	}
	f = in->col[C_HOST];
	if (f >= 0 && in->flen[f] > 0) {
		s->host    = field(in, f);
		s->hostlen = in->flen[f];
	}
	return 1;
}

int
replay_input_next(replay_input *in, detect_sample *s, char *err, size_t errlen)
{
	if (in->format == REPLAY_INPUT_AUTO) {
		int rc;

		/* Sniff: the first non-blank line decides. */
		do {
			in->line++;
			rc = read_line(in, 0);
		} while (rc == 1 && blank(in->buf, in->len));
		if (rc == 0)
			return 0;
		if (rc < 0)
			return read_err(in, rc, err, errlen);
		in->pending = 1;
		in->format  = in->buf[strspn(in->buf, " \t")] == '{'
		     ? REPLAY_INPUT_JSONL
		     : REPLAY_INPUT_CSV;
	}
	return in->format == REPLAY_INPUT_JSONL
	    ? next_jsonl(in, s, err, errlen)
	    : next_csv(in, s, err, errlen);
}
