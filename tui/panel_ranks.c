/*
 * Ranks: the selected metric, one row per rank, and a heat map of recent
 * steps. Each cell is the mean of the rank's samples in a bucket of
 * steps, shaded by how far it is from the median rank of that bucket
 * (1%, 2.5%, 5%, 10%), red where it is worse and blue where better, so a
 * rank 5% slower than its peers is a solid stripe. A bucket in which the
 * others logged and this rank did not is a dot: a stalled or silent rank
 * trails dots. Stalled ranks (the run went on without them) are
 * highlighted.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui/draw.h"
#include "tui/fmt.h"
#include "tui/panel.h"

#define RANKW 5
#define STEPW 8
#define VALW 8
#define AGEW 6
#define STATEW 8
#define DEVW 7

void
panel_ranks_want(const ui *u, model *m)
{
	long mi = ui_metric(u, m);

	if (mi < 0)
		return;
	for (size_t i = 0; i < m->metrics[mi].n; i++)
		model_want(m, m->metrics[mi].first + i, u->ranks_span);
}

typedef struct heat {
	int      nb, nser;
	uint64_t start, end, bucket;
	double  *mean; /* nser x nb; NaN: no sample */
	uint8_t *bad;  /* a NaN or inf in the bucket */
	uint8_t *any;  /* per bucket: some rank has a sample */
	double  *med;  /* per bucket median over ranks */
	double  *dev;  /* per series mean deviation */
} heat;

static void
heat_free(heat *h)
{
	free(h->mean);
	free(h->bad);
	free(h->any);
	free(h->med);
	free(h->dev);
}

static double
median(double *v, size_t n)
{
	/* n is small (ranks with a value in one bucket): insertion sort. */
	for (size_t i = 1; i < n; i++) {
		double x = v[i];
		size_t j = i;

		while (j > 0 && v[j - 1] > x) {
			v[j] = v[j - 1];
			j--;
		}
		v[j] = x;
	}
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int
heat_build(
    const ui *u, const model *m, const model_metric *mt, int cols, heat *h)
{
	uint64_t range;
	size_t   cells;
	double  *tmp;
	int     *cnt;

	memset(h, 0, sizeof(*h));
	h->nser  = (int) mt->n;
	h->end   = mt->last_step;
	h->start = h->end + 1 > u->ranks_span ? h->end - u->ranks_span + 1 : 0;
	if (h->start < m->rec.first_step)
		h->start = m->rec.first_step;
	range     = h->end - h->start + 1;
	h->bucket = (range + (uint64_t) cols - 1) / (uint64_t) cols;
	if (h->bucket == 0)
		h->bucket = 1;
	h->nb   = (int) ((range + h->bucket - 1) / h->bucket);
	cells   = (size_t) h->nb * (size_t) h->nser;
	h->mean = malloc(cells * sizeof(*h->mean));
	h->bad  = calloc(cells, 1);
	h->any  = calloc((size_t) h->nb, 1);
	h->med  = malloc((size_t) h->nb * sizeof(*h->med));
	h->dev  = malloc((size_t) h->nser * sizeof(*h->dev));
	tmp     = malloc((size_t) h->nser * sizeof(*tmp));
	cnt     = calloc(cells, sizeof(*cnt));
	if (!h->mean || !h->bad || !h->any || !h->med || !h->dev || !tmp
	    || !cnt) {
		free(tmp);
		free(cnt);
		heat_free(h);
		return -1;
	}
	for (size_t i = 0; i < cells; i++)
		h->mean[i] = 0;
	for (int r = 0; r < h->nser; r++) {
		const model_samples *c
		    = m->series[mt->first + (size_t) r].cache;

		for (size_t i = 0; c != NULL && i < c->n; i++) {
			size_t k;

			if (c->step[i] < h->start || c->step[i] > h->end)
				continue;
			k = (size_t) r * (size_t) h->nb
			    + (size_t) ((c->step[i] - h->start) / h->bucket);
			h->any[k % (size_t) h->nb] = 1;
			if (!isfinite(c->value[i])) {
				h->bad[k] = 1;
				continue;
			}
			h->mean[k] += c->value[i];
			cnt[k]++;
		}
	}
	for (size_t i = 0; i < cells; i++)
		h->mean[i] = cnt[i] ? h->mean[i] / cnt[i] : NAN;
	for (int b = 0; b < h->nb; b++) {
		size_t n = 0;

		for (int r = 0; r < h->nser; r++) {
			double v = h->mean[(size_t) r * (size_t) h->nb
			    + (size_t) b];

			if (!isnan(v))
				tmp[n++] = v;
		}
		h->med[b] = n ? median(tmp, n) : NAN;
	}
	for (int r = 0; r < h->nser; r++) {
		double sum = 0;
		int    n   = 0;

		for (int b = 0; b < h->nb; b++) {
			double v = h->mean[(size_t) r * (size_t) h->nb
			    + (size_t) b];

			if (isnan(v) || isnan(h->med[b]) || h->med[b] == 0)
				continue;
			sum += (v - h->med[b]) / fabs(h->med[b]);
			n++;
		}
		h->dev[r] = n ? sum / n : NAN;
	}
	free(tmp);
	free(cnt);
	return 0;
}

static void
heat_row(const heat *h, const model_metric *mt, int r, int y, int x)
{
	for (int b = 0; b < h->nb; b++) {
		size_t k = (size_t) r * (size_t) h->nb + (size_t) b;
		double v = h->mean[k], d;
		int    level;
		int    worse;

		if (h->bad[k]) {
			draw_str(y, x + b, 1, crt_attr(CRT_CRIT), "!");
			continue;
		}
		if (isnan(v)) {
			if (h->any[b])
				draw_str(y, x + b, 1, crt_attr(CRT_DIM),
				    crt_utf8() ? "\u00b7" : ".");
			continue;
		}
		if (isnan(h->med[b]))
			continue;
		d     = h->med[b] != 0 ? (v - h->med[b]) / fabs(h->med[b])
		                       : v - h->med[b];
		level = fabs(d) < 0.01 ? 0
		    : fabs(d) < 0.025  ? 1
		    : fabs(d) < 0.05   ? 2
		    : fabs(d) < 0.10   ? 3
		                       : 4;
		worse = mt->lower_worse ? d < 0 : d > 0;
		if (level > 0)
			draw_str(y, x + b, 1,
			    crt_attr(worse ? CRT_HIGH : CRT_LOW),
			    draw_shade(level));
	}
}

static int
page_rows(const ui *u)
{
	int h = ui_body_lines(u) - 2;

	return h > 0 ? h : 1;
}

void
panel_ranks_draw(const ui *u, const model *m, int y, int h, int w)
{
	long                mi = ui_metric(u, m);
	const model_metric *mt;
	heat                ht;
	int                 hostw = w >= 110 ? 12 : 0, x, hx, hw, page;
	attr_t              t     = crt_attr(CRT_TITLE);
	double              now   = model_wall_now();
	char                b[600], n1[32];

	if (h <= 0)
		return;
	if (mi < 0) {
		draw_str(y + 1, 2, w - 2, crt_attr(CRT_DIM),
		    "No metric selected (Esc: back to the overview).");
		return;
	}
	mt = &m->metrics[mi];
	hx = RANKW + 1 + (hostw ? hostw + 1 : 0) + STEPW + 1 + VALW + 1 + AGEW
	    + 1 + STATEW + 1;
	hw = w - hx - DEVW - 2;
	if (hw < 4)
		hw = 4;
	if (heat_build(u, m, mt, hw, &ht) != 0)
		return;
	snprintf(b, sizeof(b),
	    "%s by rank: steps %llu-%llu, %llu per cell; shade = distance "
	    "from the median rank (1/2.5/5/10%%)",
	    mt->name, (unsigned long long) ht.start,
	    (unsigned long long) ht.end, (unsigned long long) ht.bucket);
	draw_fill(y, 0, w, t);
	draw_str(y, 1, w - 1, t, b);
	x = 0;
	draw_rstr(y + 1, x, RANKW, t, "RANK");
	x += RANKW + 1;
	if (hostw) {
		draw_str(y + 1, x, hostw, t, "HOST");
		x += hostw + 1;
	}
	draw_rstr(y + 1, x, STEPW, t, "STEP");
	x += STEPW + 1;
	draw_rstr(y + 1, x, VALW, t, "VALUE");
	x += VALW + 1;
	draw_rstr(y + 1, x, AGEW, t, "SEEN");
	x += AGEW + 1;
	draw_str(y + 1, x, STATEW, t, "STATE");
	draw_str(y + 1, hx, hw, t, "RECENT STEPS ->");
	draw_rstr(y + 1, hx + hw + 1, DEVW, t, "DEV");
	page = h - 2;
	for (int i = 0; i < page && u->rank_top + (size_t) i < mt->n; i++) {
		int                 r  = (int) u->rank_top + i;
		const model_series *s  = &m->series[mt->first + (size_t) r];
		long                ri = model_rank_find(m, s->rank);
		const model_rank   *rk = ri >= 0 ? &m->ranks[ri] : NULL;
		int         yy = y + 2 + i, sel = (size_t) r == u->rank_sel;
		attr_t      a     = A_NORMAL;
		const char *state = "ok";

		if (rk != NULL && rk->stalled) {
			a     = crt_attr(CRT_CRIT);
			state = "STALLED";
		} else if (rk != NULL && rk->alert_sev >= 0) {
			a     = crt_attr(panel_sev_role(rk->alert_sev));
			state = "alert";
		} else if (!isfinite(s->rec.last_value)) {
			a     = crt_attr(CRT_CRIT);
			state = "NaN/inf";
		} else if (rk != NULL && rk->ended) {
			state = "ended";
		} else if (rk != NULL && rk->incarnations > 1) {
			state = "restarted";
		}
		if (sel) {
			a = crt_attr(CRT_SELECT) | (a & A_BOLD);
			draw_fill(yy, 0, hx, a);
		}
		x = 0;
		draw_fmt(yy, x, RANKW, a, "%*d", RANKW, (int) s->rank);
		x += RANKW + 1;
		if (hostw) {
			draw_str(yy, x, hostw, a, rk ? rk->host : "");
			x += hostw + 1;
		}
		snprintf(b, sizeof(b), "%llu",
		    (unsigned long long) (rk ? rk->step : s->rec.last_step));
		draw_rstr(yy, x, STEPW, a, b);
		x += STEPW + 1;
		draw_rstr(yy, x, VALW, a,
		    fmt_num(n1, sizeof(n1), s->rec.last_value, VALW));
		x += VALW + 1;
		draw_rstr(yy, x, AGEW, a,
		    fmt_age(n1, sizeof(n1),
		        rk && rk->last_seen > 0
		            ? now - (double) rk->last_seen / 1e9
		            : NAN));
		x += AGEW + 1;
		draw_str(yy, x, STATEW, a, state);
		heat_row(&ht, mt, r, yy, hx);
		draw_rstr(yy, hx + hw + 1, DEVW, a,
		    fmt_pct(n1, sizeof(n1), ht.dev[r]));
	}
	if (mt->n == 1 && h > 3)
		draw_str(y + 3, 2, w - 2, crt_attr(CRT_DIM),
		    "One series only: nothing to compare it with.");
	heat_free(&ht);
}

int
panel_ranks_key(ui *u, model *m, int ch)
{
	long mi = ui_metric(u, m);

	if (mi < 0)
		return 0;
	if (panel_move(ch, &u->rank_sel, m->metrics[mi].n, page_rows(u))) {
		ui_scroll(
		    u->rank_sel, &u->rank_top, m->metrics[mi].n, page_rows(u));
		return UI_HANDLED | UI_REDRAW;
	}
	switch (ch) {
	case KEY_LEFT:
	case KEY_RIGHT:
		ui_select_row(
		    u, m, (long) u->sel + (ch == KEY_RIGHT ? 1 : -1));
		mi = ui_metric(u, m);
		if (u->rank_sel >= m->metrics[mi].n)
			u->rank_sel = m->metrics[mi].n - 1;
		ui_scroll(
		    u->rank_sel, &u->rank_top, m->metrics[mi].n, page_rows(u));
		return UI_HANDLED | UI_REDRAW | UI_REFRESH;
	case '\n':
	case '\r':
	case KEY_ENTER:
		panel_detail_open(u, m, mi,
		    m->series[m->metrics[mi].first + u->rank_sel].rank);
		u->view = UI_DETAIL;
		return UI_HANDLED | UI_REDRAW | UI_REFRESH;
	case 'z':
		u->ranks_span
		    = u->ranks_span >= 4096 ? 128 : u->ranks_span * 4;
		return UI_HANDLED | UI_REDRAW | UI_REFRESH;
	case '+':
	case '=':
		if (u->ranks_span > 16)
			u->ranks_span /= 2;
		return UI_HANDLED | UI_REDRAW | UI_REFRESH;
	case '-':
		if (u->ranks_span < ((uint64_t) 1 << 20))
			u->ranks_span *= 2;
		return UI_HANDLED | UI_REDRAW | UI_REFRESH;
	default:
		return 0;
	}
}
