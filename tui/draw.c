#include "tui/draw.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <wchar.h>

/* Copy at most w cells of s into out (bytes), replacing what cannot be
 * shown; returns the cells. */
static int
clip(const char *s, int w, char *out, size_t outlen, size_t *outn)
{
	mbstate_t st;
	size_t    n = 0, len = strlen(s);
	int       cells = 0;

	memset(&st, 0, sizeof(st));
	while (len > 0 && cells < w && n + 8 < outlen) {
		wchar_t wc;
		size_t  k = mbrtowc(&wc, s, len, &st);
		int     cw;

		if (k == (size_t) -1 || k == (size_t) -2 || k == 0) {
			memset(&st, 0, sizeof(st));
			out[n++] = '?';
			cells++;
			s++;
			len--;
			continue;
		}
		cw = wcwidth(wc);
		if (k == 1 && ((unsigned char) *s < 0x20 || *s == 0x7f))
			cw = -1;
		if (cw < 0) {
			out[n++] = '?';
			cells++;
		} else if (cells + cw <= w) {
			memcpy(out + n, s, k);
			n += k;
			cells += cw;
		} else {
			break;
		}
		s += k;
		len -= k;
	}
	*outn = n;
	return cells;
}

int
draw_str(int y, int x, int w, attr_t a, const char *s)
{
	char   buf[1024];
	size_t n;
	int    cells;

	if (w <= 0)
		return 0;
	cells = clip(s, w, buf, sizeof(buf), &n);
	attrset(a);
	mvaddnstr(y, x, buf, (int) n);
	attrset(A_NORMAL);
	return cells;
}

int
draw_width(const char *s)
{
	char   buf[1024];
	size_t n;

	return clip(s, 1 << 20, buf, sizeof(buf), &n);
}

int
draw_rstr(int y, int x, int w, attr_t a, const char *s)
{
	int sw = draw_width(s);

	if (sw > w)
		return draw_str(y, x, w, a, s);
	return draw_str(y, x + w - sw, sw, a, s);
}

int
draw_fmt(int y, int x, int w, attr_t a, const char *fmt, ...)
{
	char    buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return draw_str(y, x, w, a, buf);
}

void
draw_fill(int y, int x, int w, attr_t a)
{
	if (w <= 0)
		return;
	attrset(a);
	mvhline(y, x, ' ', w);
	attrset(A_NORMAL);
}

const char *
draw_spark(int level)
{
	static const char *const u[] = { "\u2581", "\u2582", "\u2583",
		"\u2584", "\u2585", "\u2586", "\u2587", "\u2588" };
	static const char *const a[]
	    = { "_", ".", ",", "-", "~", "=", "+", "#" };

	if (level < 0)
		level = 0;
	if (level > 7)
		level = 7;
	return crt_utf8() ? u[level] : a[level];
}

const char *
draw_shade(int level)
{
	static const char *const u[]
	    = { " ", "\u2591", "\u2592", "\u2593", "\u2588" };
	static const char *const a[] = { " ", ".", "o", "O", "#" };

	if (level < 0)
		level = 0;
	if (level > 4)
		level = 4;
	return crt_utf8() ? u[level] : a[level];
}

const char *
draw_marker(void)
{
	return crt_utf8() ? "\u25b2" : "^";
}
