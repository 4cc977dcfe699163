/*
 * crt: the terminal. The only file that sets curses up and tears it down
 * (htop's CRT.c): checks that there is a terminal that can draw, chooses
 * Unicode or ASCII glyphs and colour or monochrome attributes, and puts
 * the terminal back as it found it on every exit path, including signals.
 *
 * SIGINT, SIGTERM and SIGHUP only set a flag (crt_signal()); the main
 * loop sees it within one refresh and leaves through crt_done(). A second
 * such signal, or a crash (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT),
 * restores the terminal from the handler with async-signal-safe calls
 * only (write, tcsetattr) and ends the process. SIGTSTP and SIGWINCH are
 * left to ncurses, which suspends and resumes cleanly and reports a
 * resize as KEY_RESIZE.
 *
 * Thread rule: the main thread only (curses is not thread-safe).
 */
#ifndef TUI_CRT_H
#define TUI_CRT_H

#ifndef NCURSES_WIDECHAR
#define NCURSES_WIDECHAR 1
#endif
#include <curses.h>
#include <stddef.h>

/* What a piece of text means; crt_attr() maps it to colour or, on a
 * monochrome terminal, to bold, reverse, underline or dim. */
enum crt_role {
	CRT_NORMAL = 0,
	CRT_DIM,    /* secondary text */
	CRT_BAR,    /* the header and help bars */
	CRT_TITLE,  /* column titles */
	CRT_SELECT, /* the selected row */
	CRT_CRIT,   /* critical alert, stalled rank, NaN */
	CRT_WARN,   /* warning alert, lagging */
	CRT_INFO,   /* info alert */
	CRT_GOOD,   /* healthy */
	CRT_ACCENT, /* chart line, sparkline */
	CRT_LOW,    /* heat map: better than the other ranks */
	CRT_HIGH,   /* heat map: worse than the other ranks */
	CRT_NROLES
};

/*
 * Take over the terminal on stdin/stdout. Fails, with the terminal
 * untouched and a sentence for the user in err, when stdin or stdout is
 * not a terminal, TERM is unset or "dumb", terminfo does not know TERM,
 * or the terminal cannot position the cursor. Returns 0 or -1.
 */
int crt_init(char *err, size_t errlen);

/*
 * An off-screen terminal of rows x cols writing to /dev/null, for
 * benchmarks: the same drawing and output code runs, nothing is shown.
 * TERM is taken as xterm-256color. Returns 0 or -1.
 */
int crt_init_virtual(int rows, int cols, char *err, size_t errlen);

/* Give the terminal back (end curses, restore signal handlers). Safe to
 * call twice, or without crt_init. */
void crt_done(void);

/* The signal that asked the program to stop (SIGINT, SIGTERM, SIGHUP), or
 * 0. */
int crt_signal(void);

/* 1 if glyphs beyond ASCII can be drawn (UTF-8 locale, a terminal known
 * to have them, VITALS_ASCII unset). */
int crt_utf8(void);

/* 1 if colours are used (the terminal has them, NO_COLOR unset). */
int crt_has_colour(void);

/* Attributes for a role. */
attr_t crt_attr(enum crt_role role);

/* The next key, waiting at most timeout_ms (-1: forever); ERR if none. */
int crt_getkey(int timeout_ms);

#endif /* TUI_CRT_H */
