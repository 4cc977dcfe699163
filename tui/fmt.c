#include "tui/fmt.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

char *
fmt_num(char *buf, size_t len, double v, int width)
{
	static const char *const sfx[] = { "k", "M", "G", "T", "P", "E" };
	double                   a     = fabs(v);

	if (width < 6)
		width = 6;
	if (isnan(v))
		snprintf(buf, len, "NaN");
	else if (isinf(v))
		snprintf(buf, len, "%s", v > 0 ? "inf" : "-inf");
	else if (a >= 1e5) {
		int i = 0;

		a /= 1e3;
		while (a >= 999.5 && i < 5) {
			a /= 1e3;
			i++;
		}
		if (a >= 999.5) {
			snprintf(buf, len, "%.1e", v);
			return buf;
		}
		{
			/* Up to 4 significant digits, as many as fit. */
			int intd = a >= 100 ? 3 : a >= 10 ? 2 : 1;
			int dec  = width - 1 - (v < 0) - intd - 1;

			if (dec > 4 - intd)
				dec = 4 - intd;
			if (dec < 0)
				dec = 0;
			snprintf(
			    buf, len, "%.*f%s", dec, v < 0 ? -a : a, sfx[i]);
		}
	} else if (a != 0 && a < 1e-3) {
		snprintf(buf, len, "%.*e", width >= 9 ? 2 : 1, v);
	} else {
		/* Digits that fit: sign, integer part, point, decimals. */
		for (int prec = width - (v < 0); prec >= 1; prec--) {
			int n = snprintf(buf, len, "%.*g", prec, v);

			if (n <= width && prec <= 6)
				break;
		}
	}
	return buf;
}

char *
fmt_count(char *buf, size_t len, double n)
{
	if (!isfinite(n))
		snprintf(buf, len, "-");
	else if (n < 1e4)
		snprintf(buf, len, "%.0f", n);
	else if (n < 1e6)
		snprintf(buf, len, "%.*fk", n < 1e5 ? 1 : 0, n / 1e3);
	else if (n < 1e9)
		snprintf(buf, len, "%.*fM",
		    n < 1e7       ? 2
		        : n < 1e8 ? 1
		                  : 0,
		    n / 1e6);
	else
		snprintf(buf, len, "%.2fG", n / 1e9);
	return buf;
}

char *
fmt_age(char *buf, size_t len, double s)
{
	if (!isfinite(s) || s < 0)
		snprintf(buf, len, "-");
	else if (s < 10)
		snprintf(buf, len, "%.1fs", s);
	else if (s < 60)
		snprintf(buf, len, "%.0fs", s);
	else if (s < 3600)
		snprintf(
		    buf, len, "%dm%02ds", (int) (s / 60), (int) fmod(s, 60));
	else if (s < 86400)
		snprintf(buf, len, "%dh%02dm", (int) (s / 3600),
		    (int) fmod(s / 60, 60));
	else
		snprintf(buf, len, "%dd%02dh", (int) (s / 86400),
		    (int) fmod(s / 3600, 24));
	return buf;
}

char *
fmt_pct(char *buf, size_t len, double ratio)
{
	double p = ratio * 100;

	if (!isfinite(p))
		snprintf(buf, len, "%s", "");
	else if (fabs(p) < 9.95)
		snprintf(buf, len, "%+.1f%%", p);
	else if (fabs(p) < 9999.5)
		snprintf(buf, len, "%+.0f%%", p);
	else
		snprintf(buf, len, "%+.0fk%%", p / 1000);
	return buf;
}

char *
fmt_clock(char *buf, size_t len, double t)
{
	time_t    tt = (time_t) t;
	struct tm tm;

	if (!isfinite(t) || localtime_r(&tt, &tm) == NULL)
		snprintf(buf, len, "--:--:--");
	else
		strftime(buf, len, "%H:%M:%S", &tm);
	return buf;
}
