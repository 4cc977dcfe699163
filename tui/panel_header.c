/*
 * The header (run, progress, rates, health figures, the latest alert) and
 * the status line (key hints, the filter being typed, messages).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tui/draw.h"
#include "tui/fmt.h"
#include "tui/panel.h"

/* Write s at *x if it fits before limit; returns 1 if written. */
static int
seg(int y, int *x, int limit, attr_t a, const char *s)
{
	int w = draw_width(s);

	if (*x + w > limit)
		return 0;
	draw_str(y, *x, w, a, s);
	*x += w;
	return 1;
}

static void
sep(int y, int *x, int limit, attr_t a)
{
	seg(y, x, limit, a, "  ");
}

/* LIVE while data keeps coming, FINISHED once every rank closed
 * normally, IDLE once it stopped for longer than ten usual steps (and
 * 5 s) without that. */
static void
state_tag(const ui *u, const model *m, double now, char *buf, size_t len,
    int *alarming)
{
	double quiet
	    = m->last_seen > 0 ? now - (double) m->last_seen / 1e9 : NAN;
	double th = isfinite(m->interval_s) ? 10 * m->interval_s : 0;
	char   age[24];

	*alarming = 0;
	if (th < 5)
		th = 5;
	if (u->paused)
		snprintf(buf, len, "PAUSED");
	else if (!m->run_found)
		snprintf(buf, len, "WAITING");
	else if (m->finished)
		snprintf(buf, len, "FINISHED");
	else if (!isfinite(quiet) || quiet <= th)
		snprintf(buf, len, "LIVE");
	else {
		snprintf(
		    buf, len, "IDLE %s", fmt_age(age, sizeof(age), quiet));
		*alarming = 1;
	}
}

static long
run_index(const model *m)
{
	for (size_t i = 0; i < m->nruns; i++)
		if (strcmp(m->runs[i].name, m->run) == 0)
			return (long) i;
	return -1;
}

static void
line_progress(const ui *u, const model *m, double now)
{
	attr_t bar = crt_attr(CRT_BAR);
	int    w = u->cols, x = 0, alarming;
	char   b[300], n1[32], right[64], tag[48], clk[16];
	long   ri = run_index(m);

	draw_fill(0, 0, w, bar);
	state_tag(u, m, now, tag, sizeof(tag), &alarming);
	snprintf(right, sizeof(right), " %s  %s ", tag,
	    fmt_clock(clk, sizeof(clk), now));
	w -= draw_width(right);
	draw_str(
	    0, w, draw_width(right), bar | (alarming ? A_BOLD : 0), right);
	seg(0, &x, w, bar | A_BOLD, " vitals top");
	sep(0, &x, w, bar);
	if (m->run[0] == 0) {
		seg(0, &x, w, bar, "no run yet: waiting for data");
		return;
	}
	if (ri >= 0 && m->nruns > 1)
		snprintf(b, sizeof(b), "run %s [%ld/%zu]", m->run, ri + 1,
		    m->nruns);
	else
		snprintf(b, sizeof(b), "run %s", m->run);
	if (!seg(0, &x, w, bar, b)) {
		draw_str(0, x, w - x, bar, b);
		return;
	}
	if (!m->run_found) {
		sep(0, &x, w, bar);
		seg(0, &x, w, bar, "(no samples yet)");
		return;
	}
	sep(0, &x, w, bar);
	snprintf(b, sizeof(b), "step %llu", (unsigned long long) m->step);
	if (!seg(0, &x, w, bar, b))
		return;
	sep(0, &x, w, bar);
	if (!isfinite(m->steps_per_s))
		snprintf(b, sizeof(b), "- steps/s");
	else
		snprintf(b, sizeof(b), "%.*f steps/s",
		    m->steps_per_s < 10        ? 2
		        : m->steps_per_s < 100 ? 1
		                               : 0,
		    m->steps_per_s);
	if (!seg(0, &x, w, bar, b))
		return;
	sep(0, &x, w, bar);
	snprintf(b, sizeof(b), "last sample %s ago",
	    m->last_seen > 0
	        ? fmt_age(n1, sizeof(n1), now - (double) m->last_seen / 1e9)
	        : "-");
	if (!seg(0, &x, w, bar, b))
		return;
	sep(0, &x, w, bar);
	snprintf(b, sizeof(b), "%s samples/s",
	    isfinite(m->samples_per_s)
	        ? fmt_count(n1, sizeof(n1), m->samples_per_s)
	        : "-");
	seg(0, &x, w, bar, b);
}

static void
line_health(const ui *u, const model *m)
{
	static const char *const names[] = { "info", "warning", "critical" };
	int                      w = u->cols, x = 1;
	char                     b[200], n1[32];
	size_t                   stalled = 0;
	int32_t                  first   = -1;

	if (!m->run_found)
		return;
	for (size_t i = 0; i < m->nranks; i++)
		if (m->ranks[i].stalled && stalled++ == 0)
			first = m->ranks[i].rank;
	if (stalled == 1)
		snprintf(b, sizeof(b), "ranks %zu, rank %d STALLED", m->nranks,
		    (int) first);
	else if (stalled > 1)
		snprintf(b, sizeof(b), "ranks %zu, %zu STALLED (r%d...)",
		    m->nranks, stalled, (int) first);
	else
		snprintf(b, sizeof(b), "ranks %zu", m->nranks);
	seg(1, &x, w, stalled ? crt_attr(CRT_CRIT) : A_NORMAL, b);
	sep(1, &x, w, A_NORMAL);
	if (m->lost_steps > 0)
		snprintf(b, sizeof(b), "restarts %u (%llu steps redone)",
		    m->restarts, (unsigned long long) m->lost_steps);
	else
		snprintf(b, sizeof(b), "restarts %u", m->restarts);
	if (!seg(1, &x, w, m->restarts ? crt_attr(CRT_WARN) : A_NORMAL, b))
		return;
	sep(1, &x, w, A_NORMAL);
	snprintf(b, sizeof(b), "dropped %s",
	    fmt_count(n1, sizeof(n1), (double) m->dropped));
	if (!seg(1, &x, w, m->dropped ? crt_attr(CRT_WARN) : A_NORMAL, b))
		return;
	sep(1, &x, w, A_NORMAL);
	if (!seg(1, &x, w, A_NORMAL, "firing:"))
		return;
	for (int s = MODEL_CRITICAL; s >= MODEL_INFO; s--) {
		attr_t a = m->firing[s] ? crt_attr(panel_sev_role(s))
		                        : crt_attr(CRT_DIM);

		snprintf(b, sizeof(b), " %d %s", m->firing[s], names[s]);
		if (!seg(1, &x, w, a, b))
			return;
	}
}

/* The alert to show under the figures: the worst firing one (newest
 * among equals), else the latest transition. */
static const model_alert *
headline(const model *m)
{
	const model_alert *best = NULL;

	for (size_t i = 0; i < m->nalerts; i++) {
		const model_alert *a = &m->alerts[i];

		if (a->current && a->firing
		    && (best == NULL || a->severity >= best->severity))
			best = a;
	}
	if (best == NULL && m->nalerts > 0)
		best = &m->alerts[m->nalerts - 1];
	return best;
}

static void
line_alert(const ui *u, const model *m)
{
	const model_alert *a = headline(m);
	char               b[600], clk[16], rk[24];
	attr_t             at;

	if (a == NULL) {
		draw_str(2, 1, u->cols - 1, crt_attr(CRT_DIM),
		    m->run_found ? "no alerts" : "");
		return;
	}
	at = a->firing ? crt_attr(panel_sev_role(a->severity))
	               : crt_attr(CRT_DIM);
	if (a->rank >= 0)
		snprintf(rk, sizeof(rk), " rank %d", a->rank);
	else
		rk[0] = 0;
	snprintf(b, sizeof(b), "%s %s %s %s %s%s step %llu: %s",
	    a->firing ? "!" : " ", fmt_clock(clk, sizeof(clk), a->time),
	    panel_sev_name(a->severity), a->firing ? "firing" : "resolved",
	    a->kind[0] ? a->kind : a->rule, rk, (unsigned long long) a->step,
	    a->message[0] ? a->message : a->metric);
	draw_str(2, 0, u->cols, at, b);
}

void
panel_header_draw(const ui *u, const model *m)
{
	double now = model_wall_now();

	line_progress(u, m, now);
	line_health(u, m);
	line_alert(u, m);
}

/* The view's keys; a hint without arrows serves both glyph sets. */
static const char *
hints(const ui *u)
{
	const panel *p = panel_of(u->view);

	return crt_utf8() || p->hint_ascii == NULL ? p->hint : p->hint_ascii;
}

void
panel_status_draw(const ui *u, const model *m)
{
	int    y   = u->lines - 1;
	attr_t bar = crt_attr(CRT_BAR);
	char   b[400];

	draw_fill(y, 0, u->cols, bar);
	if (u->input) {
		int x = draw_fmt(y, 0, u->cols, bar, "/%s", u->edit);

		draw_str(y, x, 1, A_REVERSE, " ");
		if (u->filter_err[0])
			draw_fmt(y, x + 2, u->cols - x - 2, bar | A_BOLD,
			    "  pattern error %s", u->filter_err);
		return;
	}
	if (u->msg[0] && model_wall_now() < u->msg_until) {
		draw_str(y, 1, u->cols - 1, bar | A_BOLD, u->msg);
		return;
	}
	if (m->err[0] && !m->run_found) {
		draw_str(y, 1, u->cols - 1, bar | A_BOLD, m->err);
		return;
	}
	snprintf(b, sizeof(b), " %s", hints(u));
	draw_str(y, 0, u->cols, bar, b);
}
