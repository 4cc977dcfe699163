/*
 * alert: one alert as a JSON object line, for `vitals replay`, the
 * collector's log and the stdin of exec actions.
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

size_t
detect_alert_json(const detect_alert *a, char *buf, size_t len)
{
	jbuf      b = { buf, len, 0 };
	char      t[96];
	long long s    = a->time_ns / 1000000000ll;
	long long frac = a->time_ns % 1000000000ll;

	if (frac < 0) {
		frac += 1000000000ll;
		s -= 1;
	}
	puts_(&b, "{\"rule\":");
	str(&b, a->rule, strlen(a->rule));
	puts_(&b, ",\"kind\":");
	str(&b, a->kind, strlen(a->kind));
	puts_(&b, ",\"severity\":\"");
	puts_(&b, detect_severity_name(a->severity));
	puts_(&b, "\",\"state\":\"");
	puts_(&b, detect_state_name(a->state));
	puts_(&b, "\",\"run\":");
	str(&b, a->run, a->runlen);
	snprintf(t, sizeof(t), ",\"rank\":%d,\"host\":", (int) a->rank);
	puts_(&b, t);
	str(&b, a->host, a->hostlen);
	puts_(&b, ",\"metric\":");
	str(&b, a->metric, a->mlen);
	snprintf(t, sizeof(t), ",\"step\":%llu,\"time\":%lld.%09lld",
	    (unsigned long long) a->step, s, frac);
	puts_(&b, t);
	puts_(&b, ",\"value\":");
	num(&b, a->value);
	puts_(&b, ",\"baseline\":");
	if (isnan(a->baseline))
		puts_(&b, "null");
	else
		num(&b, a->baseline);
	puts_(&b, ",\"message\":");
	str(&b, a->message, strlen(a->message));
	puts_(&b, "}\n");
	if (len > 0)
		buf[b.n < len ? b.n : len - 1] = 0;
	return b.n;
}
