#include "tui/keys.h"

#include <stdio.h>
#include <string.h>

#include "tui/crt.h"
#include "tui/panel.h"

#define KEY_ESC 27
#define CTRL(c) ((c) &0x1f)

/* The filter line: typed characters apply at once when the pattern
 * compiles; Enter keeps it, Esc puts the previous one back. */
static int
filter_key(ui *u, model *m, int ch)
{
	size_t n = strlen(u->edit);

	switch (ch) {
	case KEY_ESC:
		/* Back to what was there before editing began. */
		u->input = 0;
		ui_set_filter(u, u->prev);
		break;
	case '\n':
	case '\r':
	case KEY_ENTER:
		if (ui_set_filter(u, u->edit) != 0)
			return UI_HANDLED | UI_REDRAW; /* stay: fix it */
		u->input = 0;
		break;
	case KEY_BACKSPACE:
	case 127:
	case CTRL('h'):
		if (n > 0)
			u->edit[n - 1] = 0;
		break;
	case CTRL('u'):
		u->edit[0] = 0;
		break;
	default:
		if (ch < 0x20 || ch > 0xff || n + 1 >= sizeof(u->edit) - 1)
			return UI_HANDLED;
		u->edit[n]     = (char) ch;
		u->edit[n + 1] = 0;
		break;
	}
	if (u->input) {
		/* Live: a pattern that does not compile (yet) leaves the
		 * last one that did. */
		char keep[256];

		snprintf(keep, sizeof(keep), "%s", u->filter);
		if (ui_set_filter(u, u->edit) != 0) {
			char err[160];

			snprintf(err, sizeof(err), "%s", u->filter_err);
			ui_set_filter(u, keep);
			snprintf(
			    u->filter_err, sizeof(u->filter_err), "%s", err);
		}
	}
	ui_sync(u, m);
	return UI_HANDLED | UI_REDRAW | UI_REFRESH;
}

static int
set_view(ui *u, const model *m, enum ui_view v)
{
	long mi = ui_metric(u, m);

	if ((v == UI_DETAIL || v == UI_RANKS) && mi < 0) {
		ui_message(u, "No metric to show yet.");
		return UI_HANDLED | UI_REDRAW;
	}
	if (v == UI_DETAIL && u->view != UI_DETAIL
	    && model_series_of(m, (size_t) mi, u->rank) < 0)
		u->rank = m->metrics[mi].worst_rank;
	u->view = v;
	return UI_HANDLED | UI_REDRAW | UI_REFRESH;
}

int
keys_handle(ui *u, model *m, int ch)
{
	int f;

	if (ch == KEY_RESIZE)
		return UI_HANDLED | UI_REDRAW;
	if (u->input)
		return filter_key(u, m, ch);
	if (u->help) {
		u->help = 0;
		return ch == 'q' ? UI_QUIT : UI_HANDLED | UI_REDRAW;
	}
	if (u->picker)
		return panel_runs_key(u, m, ch);
	/* The view's own meaning of a key comes first (a in alerts). */
	if ((f = panel_of(u->view)->key(u, m, ch)) != 0)
		return f;
	switch (ch) {
	case 'q':
	case 'Q':
		return UI_QUIT;
	case '?':
	case KEY_F(1):
		u->help = 1;
		return UI_HANDLED | UI_REDRAW;
	case 'p':
		u->paused = !u->paused;
		ui_message(u, u->paused ? "Paused: p resumes." : "Resumed.");
		return UI_HANDLED | UI_REDRAW | (u->paused ? 0 : UI_REFRESH);
	case 'r':
		u->picker = 1;
		for (size_t i = 0; i < m->nruns; i++)
			if (strcmp(m->runs[i].name, m->run) == 0)
				u->run_sel = i;
		return UI_HANDLED | UI_REDRAW | UI_REFRESH;
	case '/':
		u->input = 1;
		snprintf(u->edit, sizeof(u->edit), "%s", u->filter);
		snprintf(u->prev, sizeof(u->prev), "%s", u->filter);
		u->filter_err[0] = 0;
		return UI_HANDLED | UI_REDRAW;
	case '\t':
		return set_view(
		    u, m, (enum ui_view)((u->view + 1) % UI_NVIEWS));
	case KEY_BTAB:
		return set_view(u, m,
		    (enum ui_view)((u->view + UI_NVIEWS - 1) % UI_NVIEWS));
	case '1':
	case '2':
	case '3':
	case '4':
		return set_view(u, m, (enum ui_view)(ch - '1'));
	case 'a':
		return set_view(u, m, UI_ALERTS);
	case KEY_ESC:
	case KEY_BACKSPACE:
		if (u->view != UI_OVERVIEW)
			return set_view(u, m, UI_OVERVIEW);
		if (u->filter[0]) {
			ui_set_filter(u, "");
			ui_sync(u, m);
			return UI_HANDLED | UI_REDRAW | UI_REFRESH;
		}
		return UI_HANDLED;
	case CTRL('l'):
		return UI_HANDLED | UI_REDRAW | UI_REPAINT;
	default:
		return 0;
	}
}
