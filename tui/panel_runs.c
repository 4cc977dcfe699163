/* The run picker (r): every run in the database in name order, the
 * watched one marked with '*'. */
#include <stdio.h>
#include <string.h>

#include "tui/draw.h"
#include "tui/fmt.h"
#include "tui/panel.h"

void
panel_runs_draw(const ui *u, const model *m, int y, int h, int w)
{
	attr_t t   = crt_attr(CRT_TITLE);
	double now = model_wall_now();
	size_t top = 0;
	char   b[400], n1[32], n2[32];

	for (int i = 0; i < h; i++)
		draw_fill(y + i, 0, w, A_NORMAL);
	draw_fill(y, 0, w, t);
	draw_str(y, 1, w - 1, t,
	    "switch run: up/down to choose, Enter to watch, Esc to cancel");
	int nw = w - 50 < 12 ? 12 : w - 50 > 40 ? 40 : w - 50;

	snprintf(b, sizeof(b), "   %-*s %10s %9s %6s %6s %8s", nw, "RUN",
	    "LAST STEP", "SAMPLES", "SERIES", "PROCS", "LAST");
	draw_str(y + 1, 0, w, t, b);
	if (m->nruns == 0) {
		draw_str(y + 3, 2, w - 2, crt_attr(CRT_DIM),
		    "No runs in this database yet.");
		return;
	}
	if (h > 3 && u->run_sel >= top + (size_t) (h - 2))
		top = u->run_sel - (size_t) (h - 2) + 1;
	for (int i = 0; i + 2 < h && top + (size_t) i < m->nruns; i++) {
		size_t           k = top + (size_t) i;
		const model_run *r = &m->runs[k];
		attr_t a = k == u->run_sel ? crt_attr(CRT_SELECT) : A_NORMAL;

		snprintf(b, sizeof(b), " %s %-*.*s %10llu %9s %6u %6u %8s",
		    strcmp(r->name, m->run) == 0 ? "*" : " ", nw, nw, r->name,
		    (unsigned long long) r->rec.last_step,
		    fmt_count(n1, sizeof(n1), (double) r->rec.samples),
		    r->rec.series, r->rec.emitters,
		    r->rec.samples ? fmt_age(
		        n2, sizeof(n2), now - (double) r->rec.last_time / 1e9)
		                   : "-");
		if (a != A_NORMAL)
			draw_fill(y + 2 + i, 0, w, a);
		draw_str(y + 2 + i, 0, w, a, b);
	}
}

int
panel_runs_key(ui *u, model *m, int ch)
{
	if (panel_move(ch, &u->run_sel, m->nruns, ui_body_lines(u) - 2))
		return UI_HANDLED | UI_REDRAW;
	switch (ch) {
	case 27:
	case 'r':
	case 'q':
		u->picker = 0;
		return UI_HANDLED | UI_REDRAW;
	case '\n':
	case '\r':
	case KEY_ENTER:
		u->picker = 0;
		if (u->run_sel < m->nruns
		    && strcmp(m->runs[u->run_sel].name, m->run) != 0) {
			model_set_run(m, m->runs[u->run_sel].name);
			u->sel       = 0;
			u->top       = 0;
			u->metric[0] = 0;
			u->rank_sel  = 0;
			u->rank_top  = 0;
			u->alert_sel = 0;
			u->alert_top = 0;
			u->nalist    = 0;
			u->view      = UI_OVERVIEW;
		}
		return UI_HANDLED | UI_REDRAW | UI_REFRESH;
	default:
		return UI_HANDLED;
	}
}
