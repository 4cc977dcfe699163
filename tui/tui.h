/*
 * tui: `vitals top`, the live view of one run in a terminal. The module
 * owns the terminal (crt.c alone sets curses up and restores it), what
 * the viewer chose (ui.c), the keys (keys.c), the panels (panel.h: one
 * table of the views, each panel in its own file) and a read-only
 * picture of the store (model.c) refreshed a little at a time.
 *
 * It must not write to the store nor call LMDB itself (the read calls
 * of store/ only), open a socket, or run detectors: the alerts shown are
 * those vitalsd stored. Only `vitals top` (cli/cmd_top.c) and its
 * benchmark use this module.
 *
 * tui_top() owns the loop: update the state (model_update, then
 * ui_sync), draw it, wait for a key or the next refresh (every
 * TUI_REFRESH_MS), handle the key; until q or a signal.
 */
#ifndef TUI_TUI_H
#define TUI_TUI_H

#include "tui/model.h"
#include "tui/ui.h"

#define TUI_REFRESH_MS 250

/*
 * Show the run (NULL: the one with the newest sample) of the database in
 * db until the user quits. Errors are printed to stderr. Returns the
 * process exit status: 0 on q, 1 if the database or the terminal cannot
 * be used, 128 + the signal number after SIGINT, SIGTERM or SIGHUP (the
 * terminal is restored in every case). The caller sets the locale.
 */
int tui_top(const char *db, const char *run);

/* The update step: read what changed, reconcile the ui. Returns 0 or -1
 * (reason in m->err). */
int tui_update(ui *u, model *m);

/* The draw step: the whole screen from u and m, then one refresh. */
void tui_draw(const ui *u, const model *m);

#endif /* TUI_TUI_H */
