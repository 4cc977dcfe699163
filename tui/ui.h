/*
 * ui: what the viewer chose (view, selection, filter, zoom, scale,
 * pause) as opposed to what the store holds (model.h). Keys change it
 * (keys.c, and each panel's key handler), ui_sync() reconciles it with a
 * fresh model (the selected metric is kept by name, rows are filtered),
 * and panels draw from both without changing either.
 */
#ifndef TUI_UI_H
#define TUI_UI_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stddef.h>
#include <stdint.h>

#include "tui/model.h"

enum ui_view { UI_OVERVIEW = 0, UI_DETAIL, UI_RANKS, UI_ALERTS, UI_NVIEWS };

/* What a key handler did; the loop acts on the union. */
enum ui_flag {
	UI_HANDLED = 1 << 0, /* the key meant something */
	UI_REDRAW  = 1 << 1, /* draw again */
	UI_QUIT    = 1 << 2, /* leave */
	UI_REFRESH = 1 << 3, /* read the store now (new data is needed) */
	UI_REPAINT = 1 << 4, /* repaint the whole terminal (Ctrl-L) */
};

#define UI_HEADER_LINES 3 /* header, figures, latest alert */

typedef struct ui {
	enum ui_view view;
	int          help;   /* the ? screen is up */
	int          picker; /* the run picker is up */
	int          input;  /* the filter is being edited */
	int          paused;
	int          lines, cols; /* screen size */

	/* Filter: a PCRE2 pattern on metric names ("" shows all). */
	char              filter[256];
	char              edit[256];
	char              prev[256]; /* the filter before editing */
	char              filter_err[160];
	pcre2_code       *re;
	pcre2_match_data *md;

	/* Metrics passing the filter, in name order; the selection is kept
	 * by name across refreshes. */
	size_t *rows;
	size_t  nrows, rows_cap;
	size_t  sel, top;
	char    metric[MODEL_NAME_MAX];

	/* Overview: sparkline span. */
	uint64_t spark_span;
	int      spark_all;

	/* Detail: rank shown, log scale, zoom to the last zoom_n steps. */
	int32_t  rank;
	int      log;
	int      zoom;
	uint64_t zoom_n;

	/* Ranks: heat map span, selected rank row. */
	uint64_t ranks_span;
	size_t   rank_sel, rank_top;

	/* Alerts: indices into model.alerts, firing first, then resolved;
	 * the selection kept by sequence number. */
	size_t  *alist;
	size_t   nalist, alist_cap;
	size_t   alert_sel, alert_top;
	uint64_t alert_sel_seq;
	unsigned alist_frame;

	size_t run_sel;

	/* A line for the status bar until msg_until (wall clock). */
	char   msg[200];
	double msg_until;
} ui;

void ui_init(ui *u);
void ui_free(ui *u);

/* Reconcile with the model: filter, selection by name, scroll, the
 * alert list. */
void ui_sync(ui *u, const model *m);

/* Compile pattern as the filter. Returns 0, or -1 with the reason in
 * u->filter_err (the previous filter stays). */
int ui_set_filter(ui *u, const char *pattern);

/* The selected metric's index in model.metrics, or -1. */
long ui_metric(const ui *u, const model *m);

/* Select the metric at row r (clamped). */
void ui_select_row(ui *u, const model *m, long r);

/* Show a message in the status line for a few seconds. */
void ui_message(ui *u, const char *text);

/* Rows of body between the header and the status line. */
int ui_body_lines(const ui *u);

/* Keep sel visible in a window of page rows starting at *top. */
void ui_scroll(size_t sel, size_t *top, size_t n, int page);

#endif /* TUI_UI_H */
