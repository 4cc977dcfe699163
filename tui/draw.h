/*
 * draw: text and glyphs into the curses screen, clipped to a width in
 * cells (not bytes), with control characters made visible as '?'. Used
 * by every panel; sets no terminal state (that is crt.c's).
 */
#ifndef TUI_DRAW_H
#define TUI_DRAW_H

#include "tui/crt.h"

/* Write s at (y, x), at most w cells; returns the cells written. */
int draw_str(int y, int x, int w, attr_t a, const char *s);

/* The same, right-aligned in w cells. */
int draw_rstr(int y, int x, int w, attr_t a, const char *s);

/* printf into at most w cells. */
int draw_fmt(int y, int x, int w, attr_t a, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* w blanks with attribute a. */
void draw_fill(int y, int x, int w, attr_t a);

/* Display width of s in cells. */
int draw_width(const char *s);

/* Sparkline glyph for level 0..7 (block eighths, or an ASCII ramp). */
const char *draw_spark(int level);

/* Heat-map shade for level 0..4 (space to full block, or ASCII). */
const char *draw_shade(int level);

/* A marker under the chart where an alert fired. */
const char *draw_marker(void);

#endif /* TUI_DRAW_H */
