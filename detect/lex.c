#include "detect/lex.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
detect_lex_init(detect_lexer *lx, const char *s, size_t len)
{
	memset(lx, 0, sizeof(*lx));
	lx->s    = s;
	lx->len  = len;
	lx->line = 1;
	lx->col  = 1;
}

static int
peek(const detect_lexer *lx, size_t ahead)
{
	return lx->pos + ahead < lx->len
	    ? (unsigned char) lx->s[lx->pos + ahead]
	    : -1;
}

static void
adv(detect_lexer *lx)
{
	if (lx->s[lx->pos] == '\n') {
		lx->line++;
		lx->col = 1;
	} else {
		lx->col++;
	}
	lx->pos++;
}

static int
is_alpha(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int
is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static int
is_identc(int c)
{
	return is_alpha(c) || is_digit(c) || c == '.' || c == '-';
}

/* Spaces, tabs, newlines and # comments. */
static void
skip_blank(detect_lexer *lx)
{
	for (;;) {
		int c = peek(lx, 0);

		if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
			adv(lx);
		} else if (c == '#') {
			while (peek(lx, 0) != -1 && peek(lx, 0) != '\n')
				adv(lx);
		} else {
			return;
		}
	}
}

static int
fail(detect_lexer *lx, detect_token *t, int line, int col, const char *why)
{
	snprintf(lx->why, sizeof(lx->why), "%s", why);
	lx->eline = line;
	lx->ecol  = col;
	t->type   = TK_ERROR;
	return -1;
}

static const struct {
	const char *w;
	int         unit;
	double      mul;
} units[] = {
	{ "%", TU_PCT, 0.01 },
	{ "x", TU_X, 1 },
	{ "step", TU_STEPS, 1 },
	{ "steps", TU_STEPS, 1 },
	{ "sample", TU_STEPS, 1 },
	{ "samples", TU_STEPS, 1 },
	{ "ms", TU_SEC, 0.001 },
	{ "s", TU_SEC, 1 },
	{ "sec", TU_SEC, 1 },
	{ "secs", TU_SEC, 1 },
	{ "second", TU_SEC, 1 },
	{ "seconds", TU_SEC, 1 },
	{ "m", TU_SEC, 60 },
	{ "min", TU_SEC, 60 },
	{ "mins", TU_SEC, 60 },
	{ "minute", TU_SEC, 60 },
	{ "minutes", TU_SEC, 60 },
	{ "h", TU_SEC, 3600 },
	{ "hour", TU_SEC, 3600 },
	{ "hours", TU_SEC, 3600 },
};

static int
find_unit(const char *w, size_t n)
{
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strlen(units[i].w) == n && memcmp(units[i].w, w, n) == 0)
			return (int) i;
	return -1;
}

static size_t
word_len(const detect_lexer *lx, size_t at)
{
	size_t n = 0;

	while (at + n < lx->len && is_alpha((unsigned char) lx->s[at + n]))
		n++;
	return n;
}

static void
lex_number(detect_lexer *lx, detect_token *t)
{
	char   buf[64];
	size_t n = 0, w;
	int    u;

	if (peek(lx, 0) == '-' || peek(lx, 0) == '+')
		n++;
	while (is_digit(peek(lx, n)))
		n++;
	if (peek(lx, n) == '.')
		for (n++; is_digit(peek(lx, n));)
			n++;
	if ((peek(lx, n) == 'e' || peek(lx, n) == 'E')
	    && (is_digit(peek(lx, n + 1))
	        || ((peek(lx, n + 1) == '-' || peek(lx, n + 1) == '+')
	            && is_digit(peek(lx, n + 2))))) {
		for (n += 2; is_digit(peek(lx, n));)
			n++;
	}
	if (n >= sizeof(buf)) {
		fail(lx, t, t->line, t->col,
		    "expected a number, found a "
		    "number too long to read");
		return;
	}
	memcpy(buf, lx->s + lx->pos, n);
	buf[n]  = 0;
	t->num  = strtod(buf, NULL);
	t->unit = TU_NONE;
	for (size_t i = 0; i < n; i++)
		adv(lx);
	/* A unit: attached ("30s", "5%"), or a word on the same line. */
	if (peek(lx, 0) == '%') {
		adv(lx);
		t->unit = TU_PCT;
		t->num *= 0.01;
	} else {
		size_t at       = lx->pos;
		int    attached = is_alpha(peek(lx, 0));

		while (!attached && at < lx->len
		    && (lx->s[at] == ' ' || lx->s[at] == '\t'))
			at++;
		w = word_len(lx, at);
		u = w ? find_unit(lx->s + at, w) : -1;
		if (attached
		    && (u < 0
		        || is_identc(at + w < lx->len
		                ? (unsigned char) lx->s[at + w]
		                : 0))) {
			fail(lx, t, lx->line, lx->col,
			    "expected a unit after the number (%, x, steps, "
			    "ms, s, m, h), found another letter");
			return;
		}
		if (u >= 0
		    && !(at + w < lx->len
		        && (is_identc((unsigned char) lx->s[at + w])
		            || lx->s[at + w] == '='))) {
			while (lx->pos < at + w)
				adv(lx);
			t->unit = units[u].unit;
			t->num *= units[u].mul;
		}
	}
	t->type = TK_NUM;
}

/* "..." with \" and \\ escapes (other backslashes are kept, so regular
 * expressions read as written), or '...' taken literally. */
static void
lex_string(detect_lexer *lx, detect_token *t)
{
	int    q = peek(lx, 0);
	size_t cap, n = 0;

	adv(lx);
	cap    = 16;
	t->str = malloc(cap);
	if (t->str == NULL) {
		fail(lx, t, t->line, t->col, "out of memory");
		return;
	}
	for (;;) {
		int c = peek(lx, 0);

		if (c == -1 || c == '\n') {
			fail(lx, t, t->line, t->col,
			    "expected the closing quote of this string, found "
			    "the end of the line");
			return;
		}
		adv(lx);
		if (c == q)
			break;
		if (q == '"' && c == '\\'
		    && (peek(lx, 0) == '"' || peek(lx, 0) == '\\')) {
			c = peek(lx, 0);
			adv(lx);
		}
		if (n + 2 > cap) {
			char *p = realloc(t->str, cap * 2);

			if (p == NULL) {
				fail(lx, t, t->line, t->col, "out of memory");
				return;
			}
			t->str = p;
			cap *= 2;
		}
		t->str[n++] = (char) c;
	}
	t->str[n] = 0;
	t->slen   = n;
	t->type   = TK_STR;
}

void
detect_lex_next(detect_lexer *lx, detect_token *t)
{
	int c;

	memset(t, 0, sizeof(*t));
	skip_blank(lx);
	t->line = lx->line;
	t->col  = lx->col;
	t->p    = lx->s + lx->pos;
	c       = peek(lx, 0);
	if (c == -1) {
		t->type = TK_EOF;
	} else if (is_digit(c)
	    || ((c == '-' || c == '+' || c == '.')
	        && (is_digit(peek(lx, 1))
	            || (peek(lx, 1) == '.' && is_digit(peek(lx, 2)))))) {
		lex_number(lx, t);
	} else if (is_alpha(c)) {
		while (is_identc(peek(lx, 0)))
			adv(lx);
		t->type = TK_IDENT;
	} else if (c == '"' || c == '\'') {
		lex_string(lx, t);
	} else {
		static const char punct[] = "{}[],=;";
		static const int  types[] = { TK_LBRACE, TK_RBRACE, TK_LBRACK,
			 TK_RBRACK, TK_COMMA, TK_EQ, TK_SEMI };
		const char       *at      = strchr(punct, c);
		char              why[80];

		if (at == NULL || c == 0) {
			if (c >= 0x20 && c < 0x7f)
				snprintf(why, sizeof(why),
				    "expected a name, number, string or one "
				    "of { } [ ] , = ;, found '%c'",
				    c);
			else
				snprintf(why, sizeof(why),
				    "expected a name, number, string or one "
				    "of { } [ ] , = ;, found byte 0x%02x",
				    c);
			fail(lx, t, t->line, t->col, why);
			return;
		}
		t->type = types[at - punct];
		adv(lx);
	}
	t->len = (size_t) (lx->s + lx->pos - t->p);
}

void
detect_tok_describe(const detect_token *t, char *buf, size_t len)
{
	switch (t->type) {
	case TK_EOF:
		snprintf(buf, len, "the end of the file");
		break;
	case TK_NUM:
		snprintf(buf, len, "the number %.*s",
		    (int) (t->len > 40 ? 40 : t->len), t->p);
		break;
	case TK_STR:
		snprintf(buf, len, "the string %.*s%s",
		    (int) (t->len > 40 ? 40 : t->len), t->p,
		    t->len > 40 ? "..." : "");
		break;
	default:
		snprintf(buf, len, "'%.*s'", (int) (t->len > 40 ? 40 : t->len),
		    t->p);
		break;
	}
}
