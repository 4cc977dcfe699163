/*
 * Alerts: every (rule, metric, rank) at its latest transition, firing
 * ones first (critical, warning, info; newest first), then the resolved.
 * Acknowledging one (a) mutes its highlight here; it fires anew, and is
 * highlighted again, with its next transition.
 */
#include <stdio.h>
#include <string.h>

#include "tui/draw.h"
#include "tui/fmt.h"
#include "tui/panel.h"

static int
page_rows(const ui *u)
{
	int h = ui_body_lines(u) - 2;

	return h > 0 ? h : 1;
}

void
panel_alerts_draw(const ui *u, const model *m, int y, int h, int w)
{
	attr_t t   = crt_attr(CRT_TITLE);
	size_t top = u->alert_top, nf = 0;
	int    page = h - 2;
	char   b[700], clk[16];

	if (h <= 0)
		return;
	for (size_t i = 0; i < u->nalist; i++)
		nf += m->alerts[u->alist[i]].firing;
	draw_fill(y, 0, w, t);
	draw_fmt(y, 1, w - 1, t,
	    "alerts of %s: %zu firing (%d critical, %d warning, %d info), "
	    "%zu resolved",
	    m->run[0] ? m->run : "-", nf, m->firing[MODEL_CRITICAL],
	    m->firing[MODEL_WARNING], m->firing[MODEL_INFO], u->nalist - nf);
	snprintf(b, sizeof(b), " %-4s %-8s %-3s %-8s %8s %4s %-14s %-16s %s",
	    "SEV", "STATE", "ACK", "TIME", "STEP", "RANK", "RULE", "METRIC",
	    "MESSAGE");
	draw_str(y + 1, 0, w, t, b);
	if (u->nalist == 0) {
		draw_str(y + 3, 2, w - 2, crt_attr(CRT_DIM),
		    m->run_found ? "No alerts in this run." : "");
		return;
	}
	/* Keep the selection visible (draw may not move it: compute). */
	if (u->alert_sel < top)
		top = u->alert_sel;
	if (page > 0 && u->alert_sel >= top + (size_t) page)
		top = u->alert_sel - (size_t) page + 1;
	for (int i = 0; i < page && top + (size_t) i < u->nalist; i++) {
		size_t             k = top + (size_t) i;
		const model_alert *a = &m->alerts[u->alist[k]];
		attr_t             at;
		char               rk[16];

		if (a->rank >= 0)
			snprintf(rk, sizeof(rk), "%d", (int) a->rank);
		else
			snprintf(rk, sizeof(rk), "-");
		if (k == u->alert_sel)
			at = crt_attr(CRT_SELECT);
		else if (a->firing && !a->acked)
			at = crt_attr(panel_sev_role(a->severity));
		else
			at = crt_attr(CRT_DIM);
		snprintf(b, sizeof(b),
		    " %-4s %-8s %-3s %-8s %8llu %4s %-14.14s %-16.16s %s",
		    panel_sev_name(a->severity),
		    a->firing ? "firing" : "resolved", a->acked ? "ack" : "",
		    fmt_clock(clk, sizeof(clk), a->time),
		    (unsigned long long) a->step, rk,
		    a->rule[0] ? a->rule : a->kind, a->metric, a->message);
		if (k == u->alert_sel)
			draw_fill(y + 2 + i, 0, w, at);
		draw_str(y + 2 + i, 0, w, at, b);
	}
}

int
panel_alerts_key(ui *u, model *m, int ch)
{
	model_alert *a = u->nalist ? &m->alerts[u->alist[u->alert_sel]] : NULL;
	long         mi;

	if (ch != ' '
	    && panel_move(ch, &u->alert_sel, u->nalist, page_rows(u))) {
		ui_scroll(
		    u->alert_sel, &u->alert_top, u->nalist, page_rows(u));
		if (u->nalist)
			u->alert_sel_seq
			    = m->alerts[u->alist[u->alert_sel]].seq;
		return UI_HANDLED | UI_REDRAW;
	}
	switch (ch) {
	case 'a':
	case ' ':
		if (a != NULL)
			a->acked = !a->acked;
		return UI_HANDLED | UI_REDRAW;
	case 'A':
		for (size_t i = 0; i < u->nalist; i++)
			m->alerts[u->alist[i]].acked = 1;
		return UI_HANDLED | UI_REDRAW;
	case '\n':
	case '\r':
	case KEY_ENTER:
		if (a == NULL)
			return UI_HANDLED;
		mi = model_metric_find(m, a->metric);
		if (mi < 0) {
			ui_message(
			    u, "That alert names no metric of this run.");
			return UI_HANDLED | UI_REDRAW;
		}
		panel_detail_open(u, m, mi, a->rank);
		return UI_HANDLED | UI_REDRAW | UI_REFRESH;
	default:
		return 0;
	}
}
