#include "tui/canvas.h"

#include <stdlib.h>
#include <string.h>

int
canvas_init(canvas *c, int rows, int cols, int utf8)
{
	memset(c, 0, sizeof(*c));
	if (rows < 1 || cols < 1)
		return -1;
	c->rows = rows;
	c->cols = cols;
	c->utf8 = utf8;
	c->pw   = cols * (utf8 ? 2 : 1);
	c->ph   = rows * (utf8 ? 4 : 3);
	c->px   = calloc((size_t) rows * (size_t) cols, 1);
	return c->px == NULL ? -1 : 0;
}

void
canvas_free(canvas *c)
{
	free(c->px);
	c->px = NULL;
}

void
canvas_set(canvas *c, int x, int y)
{
	/* Braille dot numbering: left column 1 2 3 7, right 4 5 6 8. */
	static const uint8_t dot[2][4]
	    = { { 0x01, 0x02, 0x04, 0x40 }, { 0x08, 0x10, 0x20, 0x80 } };
	uint8_t *cell;

	if (x < 0 || y < 0 || x >= c->pw || y >= c->ph)
		return;
	if (c->utf8) {
		cell = &c->px[(y / 4) * c->cols + x / 2];
		*cell |= dot[x % 2][y % 4];
	} else {
		cell = &c->px[(y / 3) * c->cols + x];
		*cell |= (uint8_t) (1u << (y % 3));
	}
}

void
canvas_line(canvas *c, int x0, int y0, int x1, int y1)
{
	int dx = abs(x1 - x0), sx = x0 < x1 ? 1 : -1;
	int dy = -abs(y1 - y0), sy = y0 < y1 ? 1 : -1;
	int err = dx + dy;

	for (;;) {
		int e2;

		canvas_set(c, x0, y0);
		if (x0 == x1 && y0 == y1)
			break;
		e2 = 2 * err;
		if (e2 >= dy) {
			err += dy;
			x0 += sx;
		}
		if (e2 <= dx) {
			err += dx;
			y0 += sy;
		}
	}
}

void
canvas_draw(const canvas *c, int y, int x, attr_t a)
{
	/* ASCII: bits top (1), middle (2), bottom (4). */
	static const char ascii[8]
	    = { ' ', '\'', '-', '|', '.', ':', '|', '|' };

	attrset(a);
	for (int r = 0; r < c->rows; r++) {
		for (int k = 0; k < c->cols; k++) {
			uint8_t v = c->px[r * c->cols + k];
			char    g[4];

			if (v == 0)
				continue;
			if (c->utf8) {
				unsigned cp = 0x2800u + v;

				g[0] = (char) (0xe0 | (cp >> 12));
				g[1] = (char) (0x80 | ((cp >> 6) & 0x3f));
				g[2] = (char) (0x80 | (cp & 0x3f));
				g[3] = 0;
			} else {
				g[0] = ascii[v & 7];
				g[1] = 0;
			}
			mvaddstr(y + r, x + k, g);
		}
	}
	attrset(A_NORMAL);
}
