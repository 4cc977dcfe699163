/*
 * panel: the parts of the screen, each in its own file. A panel has up
 * to three functions:
 *
 *   _want(u, m)     in the update step, between reading the index and
 *                   reading samples: marks the series it will draw;
 *   _draw(u, m, y, h, w)  draws rows [y, y + h) of width w from the
 *                   state alone (changes neither u nor m);
 *   _key(u, m, ch)  handles a key of its view; returns enum ui_flag
 *                   bits (0: not its key).
 *
 * The panel of each view is found in one table (panel_of): a view is
 * added to enum ui_view, the table in panel.c and a file of its own, not
 * to every caller. The header, the status line, the help screen and the
 * run picker are drawn over or around the view and are called by name.
 */
#ifndef TUI_PANEL_H
#define TUI_PANEL_H

#include "tui/crt.h"
#include "tui/model.h"
#include "tui/ui.h"

typedef struct panel {
	/* Marks the series the view draws; NULL: it draws no samples. */
	void (*want)(const ui *u, model *m);
	void (*draw)(const ui *u, const model *m, int y, int h, int w);
	int (*key)(ui *u, model *m, int ch);
	/* The keys the status line shows; hint_ascii, if not NULL, is
	 * shown instead on a terminal without Unicode. */
	const char *hint, *hint_ascii;
} panel;

/* The panel of view v (the overview's for a v out of range). */
const panel *panel_of(enum ui_view v);

/* Header (the first UI_HEADER_LINES lines) and the status line. */
void panel_header_draw(const ui *u, const model *m);
void panel_status_draw(const ui *u, const model *m);

void panel_overview_want(const ui *u, model *m);
void panel_overview_draw(const ui *u, const model *m, int y, int h, int w);
int  panel_overview_key(ui *u, model *m, int ch);

void panel_detail_want(const ui *u, model *m);
void panel_detail_draw(const ui *u, const model *m, int y, int h, int w);
int  panel_detail_key(ui *u, model *m, int ch);
/* Open the detail view of metric mi at rank (-2: its worst rank). */
void panel_detail_open(ui *u, const model *m, long mi, int32_t rank);

void panel_ranks_want(const ui *u, model *m);
void panel_ranks_draw(const ui *u, const model *m, int y, int h, int w);
int  panel_ranks_key(ui *u, model *m, int ch);

void panel_alerts_draw(const ui *u, const model *m, int y, int h, int w);
int  panel_alerts_key(ui *u, model *m, int ch);

void panel_help_draw(const ui *u, int y, int h, int w);

void panel_runs_draw(const ui *u, const model *m, int y, int h, int w);
int  panel_runs_key(ui *u, model *m, int ch);

/* Severity as a role and a short label. */
enum crt_role panel_sev_role(int severity);
const char   *panel_sev_name(int severity);

/* Common list movement: up/down/j/k, page keys, home/end. Returns 1 and
 * updates *sel if ch is one of them. */
int panel_move(int ch, size_t *sel, size_t n, int page);

#endif /* TUI_PANEL_H */
