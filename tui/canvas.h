/*
 * canvas: a grid of pixels drawn with Unicode braille (2 x 4 dots a cell) or,
 * without Unicode, ASCII (1 x 3 a cell: ' - . | :). Used by the detail
 * view for line charts.
 */
#ifndef TUI_CANVAS_H
#define TUI_CANVAS_H

#include <stdint.h>

#include "tui/crt.h"

typedef struct canvas {
	int      rows, cols; /* cells */
	int      pw, ph;     /* pixels */
	int      utf8;
	uint8_t *px; /* per cell: one bit per dot */
} canvas;

/* A canvas of rows x cols cells. Returns 0 or -1 (out of memory). */
int  canvas_init(canvas *c, int rows, int cols, int utf8);
void canvas_free(canvas *c);

/* Light a pixel (0, 0 is the top left); outside is ignored. */
void canvas_set(canvas *c, int x, int y);

/* A straight line between two pixels. */
void canvas_line(canvas *c, int x0, int y0, int x1, int y1);

/* Draw the canvas at (y, x) in attribute a; unlit cells are left as
 * they are. */
void canvas_draw(const canvas *c, int y, int x, attr_t a);

#endif /* TUI_CANVAS_H */
