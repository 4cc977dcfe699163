/*
 * Detail: one metric of one rank over steps, as large as the screen
 * allows. Braille dots (or ASCII), values on the left, steps below,
 * markers under the axis where alerts of this metric fired, and the
 * metric's alerts listed at the bottom. `l` switches to a log scale
 * (values <= 0 are left out and counted), `z` between all steps and the
 * last N, `+`/`-` change N. NaN and inf are marked '!' at the top.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tui/canvas.h"
#include "tui/draw.h"
#include "tui/fmt.h"
#include "tui/panel.h"

#define LABELW 9 /* value labels */

/* The series shown: the chosen rank of the selected metric, else its
 * worst rank, else its first. */
static long
shown_series(const ui *u, const model *m)
{
	long mi = ui_metric(u, m), s;

	if (mi < 0)
		return -1;
	if ((s = model_series_of(m, (size_t) mi, u->rank)) >= 0)
		return s;
	if ((s = model_series_of(m, (size_t) mi, m->metrics[mi].worst_rank))
	    >= 0)
		return s;
	return (long) m->metrics[mi].first;
}

static uint64_t
detail_span(const ui *u)
{
	return u->zoom ? u->zoom_n : MODEL_ALL;
}

void
panel_detail_open(ui *u, const model *m, long mi, int32_t rank)
{
	size_t r;

	if (mi < 0 || (size_t) mi >= m->nmetrics)
		return;
	for (r = 0; r < u->nrows; r++)
		if (u->rows[r] == (size_t) mi)
			break;
	if (r == u->nrows) {
		/* Filtered out: show it anyway. */
		ui_set_filter(u, "");
		ui_sync(u, m);
		for (r = 0; r < u->nrows && u->rows[r] != (size_t) mi; r++)
			;
	}
	ui_select_row(u, m, (long) r);
	u->rank = rank == -2 ? m->metrics[mi].worst_rank : rank;
	u->view = UI_DETAIL;
}

void
panel_detail_want(const ui *u, model *m)
{
	long s = shown_series(u, m);

	if (s >= 0)
		model_want(m, (size_t) s, detail_span(u));
}

/* 1, 2 or 5 times a power of ten, at least x. */
static double
nice(double x)
{
	double p = pow(10, floor(log10(x)));

	if (x <= p)
		return p;
	if (x <= 2 * p)
		return 2 * p;
	if (x <= 5 * p)
		return 5 * p;
	return 10 * p;
}

static size_t
lower_bound(const model_samples *c, uint64_t step)
{
	size_t a = 0, b = c->n;

	while (a < b) {
		size_t mid = (a + b) / 2;

		if (c->step[mid] < step)
			a = mid + 1;
		else
			b = mid;
	}
	return a;
}

typedef struct frame {
	uint64_t start, end; /* steps */
	double   tlo, thi;   /* values, log10 if log */
	size_t   i0;         /* first sample in the window */
	size_t   finite, hidden, bad;
	double   last, lo, hi;
} frame;

static double
tr(const ui *u, double v)
{
	return u->log ? log10(v) : v;
}

static int
usable(const ui *u, double v)
{
	return isfinite(v) && (!u->log || v > 0);
}

/* The window and value range; returns 0 if there is nothing to plot. */
static int
frame_of(const ui *u, const model_samples *c, frame *f)
{
	double pad;

	memset(f, 0, sizeof(*f));
	f->last  = NAN;
	f->end   = c->step[c->n - 1];
	f->start = u->zoom && f->end + 1 > u->zoom_n ? f->end - u->zoom_n + 1
	                                             : c->step[0];
	if (f->start < c->step[0])
		f->start = c->step[0];
	f->i0 = lower_bound(c, f->start);
	f->lo = INFINITY;
	f->hi = -INFINITY;
	for (size_t i = f->i0; i < c->n; i++) {
		double v = c->value[i];

		f->last = v;
		if (!isfinite(v)) {
			f->bad++;
			continue;
		}
		if (!usable(u, v)) {
			f->hidden++;
			continue;
		}
		f->finite++;
		f->lo = v < f->lo ? v : f->lo;
		f->hi = v > f->hi ? v : f->hi;
	}
	if (f->finite == 0)
		return 0;
	f->tlo = tr(u, f->lo);
	f->thi = tr(u, f->hi);
	pad    = (f->thi - f->tlo) * 0.05;
	if (pad == 0)
		pad = u->log ? 0.5 : fabs(f->thi) * 0.05 + 1e-9;
	f->tlo -= pad;
	f->thi += pad;
	return 1;
}

static int
px_x(const frame *f, uint64_t step, int pw)
{
	if (f->end == f->start)
		return pw / 2;
	return (int) ((double) (step - f->start) * (pw - 1)
	    / (double) (f->end - f->start));
}

static int
px_y(const frame *f, double t, int ph)
{
	return (int) lround((f->thi - t) / (f->thi - f->tlo) * (ph - 1));
}

static void
plot(const ui *u, const model_samples *c, const frame *f, int y, int x,
    int rows, int cols)
{
	canvas cv;
	int    have = 0, px = 0, py = 0, per = crt_utf8() ? 2 : 1;
	char   bad[512];

	if (cols > (int) sizeof(bad))
		cols = (int) sizeof(bad);
	if (canvas_init(&cv, rows, cols, crt_utf8()) != 0)
		return;
	memset(bad, 0, sizeof(bad));
	for (size_t i = f->i0; i < c->n; i++) {
		double v  = c->value[i];
		int    nx = px_x(f, c->step[i], cv.pw), ny;

		if (!isfinite(v)) {
			bad[nx / per] = 1;
			have          = 0;
			continue;
		}
		if (!usable(u, v))
			continue;
		ny = px_y(f, tr(u, v), cv.ph);
		if (have)
			canvas_line(&cv, px, py, nx, ny);
		else
			canvas_set(&cv, nx, ny);
		px   = nx;
		py   = ny;
		have = 1;
	}
	canvas_draw(&cv, y, x, crt_attr(CRT_ACCENT));
	for (int k = 0; k < cols; k++)
		if (bad[k])
			draw_str(y, x + k, 1, crt_attr(CRT_CRIT), "!");
	canvas_free(&cv);
}

/* Label row r with value v unless a label is within a row of it. */
static void
ytick(const ui *u, const frame *f, double v, int y, int rows, char *used)
{
	int  sub = crt_utf8() ? 4 : 3, r;
	char b[32];

	if (!usable(u, v))
		return;
	r = px_y(f, tr(u, v), rows * sub) / sub;
	if (r < 0 || r >= rows || used[r] || (r > 0 && used[r - 1])
	    || (r + 1 < rows && used[r + 1]))
		return;
	used[r] = 1;
	draw_rstr(y + r, 0, LABELW - 1, A_NORMAL,
	    fmt_num(b, sizeof(b), v, LABELW - 1));
	draw_str(
	    y + r, LABELW, 1, crt_attr(CRT_DIM), crt_utf8() ? "\u2524" : "+");
}

/* Value ticks at round numbers: multiples of 1, 2 or 5 times a power of
 * ten, or on a log scale spanning decades, the powers of ten (and 2x, 5x
 * when there are few). */
static void
yaxis(const ui *u, const frame *f, int y, int rows)
{
	char   used[512];
	int    nt = rows / 3 > 2 ? rows / 3 : 2;
	double lo = f->tlo, hi = f->thi, st;

	if (rows > (int) sizeof(used))
		rows = (int) sizeof(used);
	memset(used, 0, sizeof(used));
	for (int r = 0; r < rows; r++)
		draw_str(y + r, LABELW, 1, crt_attr(CRT_DIM),
		    crt_utf8() ? "\u2502" : "|");
	if (u->log && hi - lo >= 1) {
		for (int k = (int) floor(lo); k <= (int) ceil(hi); k++)
			ytick(u, f, pow(10, k), y, rows, used);
		if (hi - lo < 3)
			for (int k = (int) floor(lo); k <= (int) ceil(hi);
			     k++) {
				ytick(u, f, 2 * pow(10, k), y, rows, used);
				ytick(u, f, 5 * pow(10, k), y, rows, used);
			}
		return;
	}
	if (u->log) {
		lo = pow(10, lo);
		hi = pow(10, hi);
	}
	st = nice((hi - lo) / nt);
	if (!(st > 0))
		return;
	for (double k = ceil(lo / st); k * st <= hi; k++) {
		double v = k * st;

		ytick(u, f, fabs(v) < st * 1e-9 ? 0 : v, y, rows, used);
	}
}

static void
axes(const ui *u, const frame *f, int y, int rows, int cols)
{
	int         uni = crt_utf8();
	const char *hl = uni ? "\u2500" : "-", *corner = uni ? "\u2514" : "+";
	const char *xt = uni ? "\u252c" : "+";
	attr_t      d  = crt_attr(CRT_DIM);
	char        b[32];
	int         lastlab = -100;
	double      span, step;

	yaxis(u, f, y, rows);
	draw_str(y + rows, LABELW, 1, d, corner);
	for (int k = 0; k < cols; k++)
		draw_str(y + rows, LABELW + 1 + k, 1, d, hl);
	/* Step ticks at round numbers, about every 14 cells. */
	span = (double) (f->end - f->start);
	if (span <= 0) {
		snprintf(b, sizeof(b), "%llu", (unsigned long long) f->start);
		draw_str(y + rows + 1, LABELW + 1 + cols / 2, cols / 2,
		    A_NORMAL, b);
		return;
	}
	step = nice(span * 14 / (cols > 1 ? cols : 1));
	if (step < 1)
		step = 1;
	for (double s = ceil((double) f->start / step) * step;
	     s <= (double) f->end; s += step) {
		int col = (int) ((s - (double) f->start) * (cols - 1) / span);
		int w;

		fmt_count(b, sizeof(b), s);
		w = (int) strlen(b);
		draw_str(y + rows, LABELW + 1 + col, 1, d, xt);
		if (col - w / 2 <= lastlab + 1 || col - w / 2 + w > cols)
			continue;
		draw_str(
		    y + rows + 1, LABELW + 1 + col - w / 2, w, A_NORMAL, b);
		lastlab = col - w / 2 + w;
	}
	draw_str(y + rows + 1, 0, LABELW - 1, d, "step");
}

static void
markers(const model *m, const char *metric, int32_t rank, const frame *f,
    int y, int cols)
{
	int any = 0;

	for (size_t i = 0; i < m->nalerts; i++) {
		const model_alert *a = &m->alerts[i];
		int                col;
		attr_t             at;

		if (!a->firing || strcmp(a->metric, metric) != 0
		    || a->step < f->start || a->step > f->end)
			continue;
		col = f->end == f->start
		    ? cols / 2
		    : (int) ((double) (a->step - f->start) * (cols - 1)
		        / (double) (f->end - f->start));
		at  = crt_attr(panel_sev_role(a->severity));
		if (a->rank == rank)
			at |= A_BOLD;
		draw_str(y, LABELW + 1 + col, 1, at, draw_marker());
		any = 1;
	}
	if (any)
		draw_str(y, 0, LABELW - 1, crt_attr(CRT_DIM), "alerts");
}

/* The metric's alerts, newest first, in at most h lines; returns the
 * lines used. */
static int
alert_list(const model *m, const char *metric, int y, int h, int w)
{
	int  used = 0;
	char b[600], clk[16];

	for (size_t k = m->nalerts; k-- > 0 && used < h;) {
		const model_alert *a = &m->alerts[k];

		if (strcmp(a->metric, metric) != 0)
			continue;
		snprintf(b, sizeof(b),
		    " %-4s %-8s %-12s rank %-3d step %-8llu %s  %s",
		    panel_sev_name(a->severity),
		    a->firing ? "firing" : "resolved",
		    a->kind[0] ? a->kind : a->rule, (int) a->rank,
		    (unsigned long long) a->step,
		    fmt_clock(clk, sizeof(clk), a->time), a->message);
		draw_str(y + used, 0, w,
		    a->firing && a->current
		        ? crt_attr(panel_sev_role(a->severity))
		        : crt_attr(CRT_DIM),
		    b);
		used++;
	}
	return used;
}

static int
count_alerts(const model *m, const char *metric)
{
	int n = 0;

	for (size_t i = 0; i < m->nalerts; i++)
		if (strcmp(m->alerts[i].metric, metric) == 0)
			n++;
	return n;
}

void
panel_detail_draw(const ui *u, const model *m, int y, int h, int w)
{
	long                si = shown_series(u, m), mi = ui_metric(u, m);
	const model_series *s;
	const model_metric *mt;
	frame               f;
	char                b[400], n1[32], n2[32], n3[32], rk[64];
	int                 nal, alines, rows, cols;

	if (h <= 0)
		return;
	if (si < 0 || mi < 0) {
		draw_str(y + 1, 2, w - 2, crt_attr(CRT_DIM),
		    "No metric selected (Esc: back to the overview).");
		return;
	}
	s  = &m->series[si];
	mt = &m->metrics[mi];
	if (mt->n > 1)
		snprintf(rk, sizeof(rk), "rank %d (%zu ranks, worst r%d)",
		    (int) s->rank, mt->n, (int) mt->worst_rank);
	else if (s->rank >= 0)
		snprintf(rk, sizeof(rk), "rank %d", (int) s->rank);
	else
		rk[0] = 0;
	draw_fill(y, 0, w, crt_attr(CRT_TITLE));
	if (s->cache == NULL || s->cache->n == 0) {
		draw_fmt(
		    y, 1, w - 1, crt_attr(CRT_TITLE), "%s  %s", mt->name, rk);
		draw_str(
		    y + 2, 2, w - 2, crt_attr(CRT_DIM), "reading samples...");
		return;
	}
	if (!frame_of(u, s->cache, &f)) {
		draw_fmt(
		    y, 1, w - 1, crt_attr(CRT_TITLE), "%s  %s", mt->name, rk);
		draw_fmt(y + 2, 2, w - 2, crt_attr(CRT_DIM),
		    "Nothing to plot: %zu NaN/inf%s in this span.", f.bad,
		    u->log ? ", the rest <= 0 (l: linear scale)" : "");
		return;
	}
	snprintf(b, sizeof(b),
	    "%s  %s  steps %llu-%llu (%s)  %s  last %s  min %s  max %s%s",
	    mt->name, rk, (unsigned long long) f.start,
	    (unsigned long long) f.end, u->zoom ? "last N" : "all",
	    u->log ? "log" : "linear", fmt_num(n1, sizeof(n1), f.last, 10),
	    fmt_num(n2, sizeof(n2), f.lo, 10),
	    fmt_num(n3, sizeof(n3), f.hi, 10),
	    f.bad ? "  NaN/inf marked !" : "");
	draw_str(y, 1, w - 1, crt_attr(CRT_TITLE), b);
	if (f.hidden)
		draw_fmt(y + 1, LABELW + 2, w - LABELW - 2, crt_attr(CRT_DIM),
		    "(%zu values <= 0 not shown on the log scale)", f.hidden);
	nal    = count_alerts(m, mt->name);
	alines = nal > 0 ? (nal < 5 ? nal : 5) + 1 : 0;
	rows   = h - 1 - 3 - alines;
	if (rows < 4) {
		alines = 0;
		rows   = h - 4;
	}
	cols = w - LABELW - 2;
	if (rows < 2 || cols < 8)
		return;
	plot(u, s->cache, &f, y + 1, LABELW + 1, rows, cols);
	axes(u, &f, y + 1, rows, cols);
	markers(m, mt->name, s->rank, &f, y + 1 + rows + 2, cols);
	if (alines > 0) {
		draw_fmt(y + 1 + rows + 3, 0, w, crt_attr(CRT_TITLE),
		    " alerts on %s (%d):", mt->name, nal);
		alert_list(m, mt->name, y + 1 + rows + 4, alines - 1, w);
	}
}

int
panel_detail_key(ui *u, model *m, int ch)
{
	long mi = ui_metric(u, m), s;

	switch (ch) {
	case KEY_UP:
	case 'k':
	case KEY_DOWN:
	case 'j':
		if (u->nrows == 0)
			return UI_HANDLED;
		ui_select_row(u, m,
		    (long) u->sel + (ch == KEY_UP || ch == 'k' ? -1 : 1));
		u->rank = m->metrics[ui_metric(u, m)].worst_rank;
		return UI_HANDLED | UI_REDRAW | UI_REFRESH;
	case KEY_LEFT:
	case KEY_RIGHT:
		if (mi < 0)
			return UI_HANDLED;
		s = shown_series(u, m);
		if (ch == KEY_RIGHT
		    && (size_t) s + 1
		        < m->metrics[mi].first + m->metrics[mi].n)
			s++;
		else if (ch != KEY_RIGHT && (size_t) s > m->metrics[mi].first)
			s--;
		u->rank = m->series[s].rank;
		return UI_HANDLED | UI_REDRAW | UI_REFRESH;
	case 'l':
		u->log = !u->log;
		return UI_HANDLED | UI_REDRAW;
	case 'z':
		u->zoom = !u->zoom;
		return UI_HANDLED | UI_REDRAW | UI_REFRESH;
	case '+':
	case '=':
		if (u->zoom_n > 16)
			u->zoom_n /= 2;
		u->zoom = 1;
		return UI_HANDLED | UI_REDRAW | UI_REFRESH;
	case '-':
		if (u->zoom_n < ((uint64_t) 1 << 20))
			u->zoom_n *= 2;
		u->zoom = 1;
		return UI_HANDLED | UI_REDRAW | UI_REFRESH;
	case '\n':
	case '\r':
	case KEY_ENTER:
		u->view = UI_RANKS;
		return UI_HANDLED | UI_REDRAW | UI_REFRESH;
	default:
		return 0;
	}
}
