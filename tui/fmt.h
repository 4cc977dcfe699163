/*
 * fmt: short numbers, ages and counts for table cells. Pure functions,
 * no curses: every one writes at most len bytes, NUL included, and
 * returns buf.
 */
#ifndef TUI_FMT_H
#define TUI_FMT_H

#include <stddef.h>
#include <stdint.h>

/* A value in at most width characters (width >= 6): NaN, inf, -inf;
 * %g-style with as many digits as fit; k/M/G/T beyond 1e5; e-notation
 * below 1e-3. */
char *fmt_num(char *buf, size_t len, double v, int width);

/* A count: 999, 12.3k, 4.56M, 7.8G. */
char *fmt_count(char *buf, size_t len, double n);

/* An age or duration in seconds: 0.2s, 12s, 3m05s, 2h03m, 4d02h; "-" if
 * negative or not finite. */
char *fmt_age(char *buf, size_t len, double s);

/* A relative change as a signed percentage: +1.2%, -35%, +9.9k%; "" if
 * not finite. */
char *fmt_pct(char *buf, size_t len, double ratio);

/* Wall-clock time of day (local) of t seconds since the epoch: 14:02:09. */
char *fmt_clock(char *buf, size_t len, double t);

#endif /* TUI_FMT_H */
