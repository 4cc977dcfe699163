/*
 * keys: what a key does. Global keys (quit, help, views, filter, run,
 * pause) are handled here; the rest go to the panel of the current view.
 * Every handler returns enum ui_flag bits and changes only the ui state
 * (and, for acknowledging alerts or switching runs, the model's
 * bookkeeping), never the screen.
 */
#ifndef TUI_KEYS_H
#define TUI_KEYS_H

#include "tui/model.h"
#include "tui/ui.h"

int keys_handle(ui *u, model *m, int ch);

#endif /* TUI_KEYS_H */
