/*
 * Overview: one row per metric. A metric logged by several ranks is
 * folded: VALUE is the median of the ranks' latest values, MIN and MAX
 * their extremes, WORST the rank that is furthest in the bad direction
 * (highest, or lowest for throughput-like names; a NaN or inf first).
 * TREND is a sparkline of the lowest rank over recent steps, each cell
 * the worst value of its steps so that a one-step spike shows; CHANGE is
 * the change over that span. Rows take the colour of the metric's worst
 * firing alert.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tui/draw.h"
#include "tui/fmt.h"
#include "tui/panel.h"

#define NUMW 8 /* width of a number cell */

typedef struct ov_cols {
	int name, value, chg, min, max, worst, trend, alert;
} ov_cols;

static int
longest_name(const ui *u, const model *m)
{
	int n = 6;

	for (size_t r = 0; r < u->nrows; r++) {
		int k = (int) strlen(m->metrics[u->rows[r]].name);

		if (k > n)
			n = k;
	}
	return n;
}

/* Widths for w columns: the sparkline takes what is left, at least 12
 * cells; names give way first, then MIN, then WORST. */
static void
layout(int w, int name, ov_cols *c)
{
	c->name  = name < 10 ? 10 : name > 28 ? 28 : name;
	c->value = NUMW;
	c->chg   = 6;
	c->min   = NUMW;
	c->max   = NUMW;
	c->worst = 5;
	c->alert = 10;
	for (int pass = 0; pass < 5; pass++) {
		int fixed = 1 + c->name + (c->value + 1) + (c->chg + 1)
		    + (c->min ? c->min + 1 : 0) + (c->max + 1)
		    + (c->worst ? c->worst + 1 : 0) + (c->alert + 1) + 1;

		c->trend = w - fixed;
		if (c->trend >= 12)
			return;
		if (pass == 0 && c->name > 10)
			c->name = c->name - (12 - c->trend) > 10
			    ? c->name - (12 - c->trend)
			    : 10;
		else if (pass == 1)
			c->min = 0;
		else if (pass == 2)
			c->worst = 0;
		else if (pass == 3)
			c->alert = 6;
	}
	if (c->trend < 1)
		c->trend = 1;
}

static uint64_t
spark_span(const ui *u)
{
	return u->spark_all ? MODEL_ALL : u->spark_span;
}

static int
page_rows(const ui *u)
{
	int h = ui_body_lines(u) - 1;

	return h > 0 ? h : 0;
}

void
panel_overview_want(const ui *u, model *m)
{
	size_t end = u->top + (size_t) page_rows(u);

	for (size_t r = u->top; r < end && r < u->nrows; r++)
		model_want(m, m->metrics[u->rows[r]].first, spark_span(u));
}

/*
 * Draw the sparkline of c in w cells at (y, x) and return the change over
 * its span through *chg (NaN if unknown).
 */
static void
sparkline(const model_metric *mt, const model_samples *c, uint64_t span, int y,
    int x, int w, attr_t row, double *chg)
{
	double   v[256];
	int      bad[256], have[256];
	uint64_t end, start, bucket, range;
	double   lo = INFINITY, hi = -INFINITY, first = NAN, last = NAN;
	int      nb;
	size_t   i;

	*chg = NAN;
	if (c == NULL || c->n == 0 || w <= 0)
		return;
	if (w > 256)
		w = 256;
	end   = c->step[c->n - 1];
	start = span == MODEL_ALL || end + 1 < span ? c->step[0]
	                                            : end - span + 1;
	if (start < c->step[0])
		start = c->step[0];
	range  = end - start + 1;
	bucket = (range + (uint64_t) w - 1) / (uint64_t) w;
	if (bucket == 0)
		bucket = 1;
	nb = (int) ((range + bucket - 1) / bucket);
	memset(have, 0, sizeof(have));
	memset(bad, 0, sizeof(bad));
	/* Samples are in step order: find the window's first. */
	{
		size_t a = 0, b = c->n;

		while (a < b) {
			size_t mid = (a + b) / 2;

			if (c->step[mid] < start)
				a = mid + 1;
			else
				b = mid;
		}
		i = a;
	}
	for (; i < c->n; i++) {
		int    k = (int) ((c->step[i] - start) / bucket);
		double s = c->value[i];

		if (k >= nb)
			k = nb - 1;
		if (!isfinite(s)) {
			bad[k] = 1;
			continue;
		}
		if (isnan(first))
			first = s;
		last = s;
		if (!have[k] || (mt->lower_worse ? s < v[k] : s > v[k]))
			v[k] = s;
		have[k] = 1;
	}
	for (int k = 0; k < nb; k++)
		if (have[k]) {
			lo = v[k] < lo ? v[k] : lo;
			hi = v[k] > hi ? v[k] : hi;
		}
	for (int k = 0; k < nb; k++) {
		if (bad[k]) {
			draw_str(y, x + k, 1, crt_attr(CRT_CRIT), "!");
		} else if (have[k]) {
			int level = hi > lo
			    ? (int) ((v[k] - lo) / (hi - lo) * 7.99)
			    : 3;

			draw_str(y, x + k, 1, row, draw_spark(level));
		}
	}
	if (isfinite(first) && isfinite(last) && first != 0)
		*chg = (last - first) / fabs(first);
}

static void
row_draw(const ui *u, const model *m, const ov_cols *c, size_t r, int y, int w)
{
	const model_metric *mt  = &m->metrics[u->rows[r]];
	const model_series *rep = &m->series[mt->first];
	int                 sel = r == u->sel, x = 0;
	attr_t              a = A_NORMAL, num, spark;
	char                b[64];
	double              chg;

	if (mt->alert_sev >= 0)
		a = crt_attr(panel_sev_role(mt->alert_sev));
	spark = mt->alert_sev >= 0 ? a : crt_attr(CRT_ACCENT);
	if (sel) {
		a = crt_attr(CRT_SELECT)
		    | (mt->alert_sev >= MODEL_WARNING ? A_BOLD : 0);
		spark = a;
		draw_fill(y, 0, w, a);
	}
	draw_str(y, x, 1, mt->alert_sev >= 0 && !sel ? a | A_BOLD : a,
	    mt->alert_sev >= 0 ? "!" : " ");
	x += 1;
	draw_str(y, x, c->name, a, mt->name);
	x += c->name + 1;
	num = a;
	if (mt->nonfinite && !sel)
		num = crt_attr(CRT_CRIT);
	draw_rstr(y, x, c->value, isfinite(mt->value) ? a : num,
	    fmt_num(b, sizeof(b), mt->value, c->value));
	x += c->value + 1;
	/* The sparkline first: it yields the change. */
	{
		int tx = x + c->chg + 1 + (c->min ? c->min + 1 : 0) + c->max
		    + 1 + (c->worst ? c->worst + 1 : 0);

		sparkline(mt, rep->cache, spark_span(u), y, tx, c->trend,
		    spark, &chg);
	}
	draw_rstr(y, x, c->chg, a, fmt_pct(b, sizeof(b), chg));
	x += c->chg + 1;
	if (mt->n > 1) {
		if (c->min) {
			draw_rstr(y, x, c->min, a,
			    fmt_num(b, sizeof(b), mt->min, c->min));
			x += c->min + 1;
		}
		draw_rstr(
		    y, x, c->max, a, fmt_num(b, sizeof(b), mt->max, c->max));
		x += c->max + 1;
		if (c->worst) {
			snprintf(b, sizeof(b), "r%d", (int) mt->worst_rank);
			draw_rstr(y, x, c->worst,
			    mt->nonfinite && !sel ? num : a, b);
			x += c->worst + 1;
		}
	} else {
		x += (c->min ? c->min + 1 : 0) + c->max + 1
		    + (c->worst ? c->worst + 1 : 0);
	}
	x += c->trend + 1;
	if (mt->alert_kind[0])
		draw_str(y, x, c->alert,
		    mt->alert_sev >= 0 ? a : (sel ? a : crt_attr(CRT_DIM)),
		    mt->alert_kind);
}

void
panel_overview_draw(const ui *u, const model *m, int y, int h, int w)
{
	ov_cols c;
	attr_t  t = crt_attr(CRT_TITLE);
	int     x = 1, page = h - 1;
	char    b[96];

	if (h <= 0)
		return;
	if (!m->run_found || m->nmetrics == 0) {
		draw_str(y + 1, 2, w - 2, crt_attr(CRT_DIM),
		    m->run[0] == 0
		        ? "No run in this database yet: waiting for a trainer "
		          "to send samples to vitalsd."
		        : "This run has no samples yet: waiting.");
		return;
	}
	layout(w, longest_name(u, m), &c);
	draw_fill(y, 0, w, t);
	draw_str(y, x, c.name, t, "METRIC");
	x += c.name + 1;
	draw_rstr(y, x, c.value, t, "VALUE");
	x += c.value + 1;
	draw_rstr(y, x, c.chg, t, "CHANGE");
	x += c.chg + 1;
	if (c.min) {
		draw_rstr(y, x, c.min, t, "MIN");
		x += c.min + 1;
	}
	draw_rstr(y, x, c.max, t, "MAX");
	x += c.max + 1;
	if (c.worst) {
		draw_rstr(y, x, c.worst, t, "WORST");
		x += c.worst + 1;
	}
	if (u->spark_all)
		snprintf(b, sizeof(b), "TREND (all steps)");
	else if (c.trend >= 24)
		snprintf(b, sizeof(b), "TREND (last %llu steps)",
		    (unsigned long long) u->spark_span);
	else
		snprintf(b, sizeof(b), "TREND %llu",
		    (unsigned long long) u->spark_span);
	draw_str(y, x, c.trend, t, b);
	x += c.trend + 1;
	draw_str(y, x, c.alert, t, "ALERT");
	if (u->nrows == 0) {
		draw_fmt(y + 1, 2, w - 2, crt_attr(CRT_DIM),
		    "No metric matches /%s/ (/ to change, Esc to clear).",
		    u->filter);
		return;
	}
	for (int i = 0; i < page && u->top + (size_t) i < u->nrows; i++)
		row_draw(u, m, &c, u->top + (size_t) i, y + 1 + i, w);
	if (u->filter[0] && page > 0 && u->top + (size_t) page >= u->nrows
	    && (int) (u->nrows - u->top) < page)
		draw_fmt(y + 1 + (int) (u->nrows - u->top), 2, w - 2,
		    crt_attr(CRT_DIM), "filter /%s/: %zu of %zu metrics",
		    u->filter, u->nrows, m->nmetrics);
}

int
panel_overview_key(ui *u, model *m, int ch)
{
	size_t sel = u->sel;

	if (panel_move(ch, &sel, u->nrows, page_rows(u))) {
		ui_select_row(u, m, (long) sel);
		ui_sync(u, m);
		return UI_HANDLED | UI_REDRAW | UI_REFRESH;
	}
	switch (ch) {
	case '\n':
	case '\r':
	case KEY_ENTER:
		if (ui_metric(u, m) < 0)
			return UI_HANDLED;
		panel_detail_open(u, m, ui_metric(u, m), -2);
		return UI_HANDLED | UI_REDRAW | UI_REFRESH;
	case 'z':
		u->spark_all = !u->spark_all;
		return UI_HANDLED | UI_REDRAW | UI_REFRESH;
	case '+':
	case '=':
		if (u->spark_span > 16)
			u->spark_span /= 2;
		u->spark_all = 0;
		return UI_HANDLED | UI_REDRAW | UI_REFRESH;
	case '-':
		if (u->spark_span < ((uint64_t) 1 << 20))
			u->spark_span *= 2;
		u->spark_all = 0;
		return UI_HANDLED | UI_REDRAW | UI_REFRESH;
	default:
		return 0;
	}
}
