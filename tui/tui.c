#include "tui/tui.h"

#include <stdio.h>
#include <time.h>

#include "common/clock.h"
#include "tui/crt.h"
#include "tui/draw.h"
#include "tui/keys.h"
#include "tui/panel.h"

/* Between reading the index and the samples (model_want_fn): the ui
 * follows the fresh index, then the view marks the series it draws. */
static void
want(void *ctx, model *m)
{
	ui          *u = ctx;
	const panel *p = panel_of(u->view);

	ui_sync(u, m);
	if (p->want != NULL)
		p->want(u, m);
}

int
tui_update(ui *u, model *m)
{
	int rc = model_update(m, want, u);

	ui_sync(u, m);
	return rc;
}

void
tui_draw(const ui *u, const model *m)
{
	int y = UI_HEADER_LINES, h = ui_body_lines(u);

	erase();
	if (u->lines < 10 || u->cols < 40) {
		draw_str(0, 0, u->cols, A_BOLD,
		    "vitals top: the terminal is too small (40x10 at least)");
		refresh();
		return;
	}
	panel_header_draw(u, m);
	if (u->help)
		panel_help_draw(u, y, h, u->cols);
	else if (u->picker)
		panel_runs_draw(u, m, y, h, u->cols);
	else
		panel_of(u->view)->draw(u, m, y, h, u->cols);
	panel_status_draw(u, m);
	refresh();
}

/* Returns 0 when the user quits or a signal asks to stop. */
static int
loop(ui *u, model *m)
{
	double next = 0, shown_err = 0;
	int    dirty = 1, force = 1;

	for (;;) {
		double now;
		int    ch, f, wait;

		if (crt_signal() != 0)
			return 0;
		getmaxyx(stdscr, u->lines, u->cols);
		now = now_mono_s();
		if (force || (!u->paused && now >= next)) {
			if (tui_update(u, m) != 0 && now - shown_err > 5) {
				ui_message(u, m->err);
				shown_err = now;
			}
			next  = now + TUI_REFRESH_MS / 1000.0;
			dirty = 1;
			force = 0;
		}
		if (dirty) {
			tui_draw(u, m);
			dirty = 0;
		}
		wait = u->paused ? 1000
		                 : (int) ((next - now_mono_s()) * 1000) + 1;
		if (wait < 1)
			wait = 1;
		ch = crt_getkey(wait);
		if (ch == ERR) {
			/* Paused: the clock and messages still move. */
			dirty = u->paused;
			continue;
		}
		getmaxyx(stdscr, u->lines, u->cols);
		f = keys_handle(u, m, ch);
		if (f & UI_QUIT)
			return 0;
		if (f & UI_REFRESH)
			force = 1;
		if (f & UI_REPAINT)
			clearok(curscr, TRUE);
		if (ch == KEY_RESIZE)
			ui_sync(u, m);
		dirty = 1;
	}
}

int
tui_top(const char *db, const char *run)
{
	model *m;
	ui     u;
	char   err[1600];
	int    sig;

	if (model_open(db, run, &m, err, sizeof(err)) != 0) {
		fprintf(stderr, "vitals top: %s\n", err);
		return 1;
	}
	if (crt_init(err, sizeof(err)) != 0) {
		fprintf(stderr, "%s\n", err);
		model_close(m);
		return 1;
	}
	ui_init(&u);
	loop(&u, m);
	crt_done();
	sig = crt_signal();
	ui_free(&u);
	model_close(m);
	return sig != 0 ? 128 + sig : 0;
}
