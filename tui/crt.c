#include "tui/crt.h"

#include <errno.h>
#include <langinfo.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <term.h>
#include <termios.h>
#include <unistd.h>

/*
 * Curses state is process-wide by nature (the terminal is one), so this
 * file holds it in globals, as htop's CRT.c does; nothing else in vitals
 * touches curses setup, colours or signal dispositions.
 */
static SCREEN *crt_screen;     /* NULL: not started */
static FILE   *crt_null;       /* /dev/null of a virtual terminal */
static int     crt_is_virtual; /* no real terminal to restore */
static int     crt_unicode;
static int     crt_colour;
static attr_t  crt_attrs[CRT_NROLES];

/* The stop flag set by signal handlers and read by the main loop. */
static volatile sig_atomic_t crt_stop;

/* What the emergency restore writes, copied at start: a signal handler
 * may read these but must not call into curses. */
static struct termios crt_saved_tio;
static int            crt_have_tio;
static char           crt_restore[256];
static size_t         crt_restore_len;

static const int crt_stop_sigs[] = { SIGINT, SIGTERM, SIGHUP };
static const int crt_crash_sigs[]
    = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };
#define NSTOP (sizeof(crt_stop_sigs) / sizeof(crt_stop_sigs[0]))
#define NCRASH (sizeof(crt_crash_sigs) / sizeof(crt_crash_sigs[0]))
static struct sigaction crt_old_stop[NSTOP], crt_old_crash[NCRASH];
static int              crt_have_handlers;

/* Put the terminal back from inside a signal handler: only write(2) and
 * tcsetattr(3), both async-signal-safe. */
static void
crt_emergency(void)
{
	if (crt_restore_len > 0) {
		ssize_t w = write(STDOUT_FILENO, crt_restore, crt_restore_len);

		(void) w;
	}
	if (crt_have_tio)
		tcsetattr(STDIN_FILENO, TCSANOW, &crt_saved_tio);
}

static void
crt_on_stop(int sig)
{
	if (crt_stop != 0) {
		/* Asked twice: the loop did not get there; leave now. */
		crt_emergency();
		_exit(128 + sig);
	}
	crt_stop = sig;
}

static void
crt_on_crash(int sig)
{
	crt_emergency();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void
crt_handlers_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	/* No SA_RESTART: a blocking read returns so the loop sees the
	 * flag. */
	sa.sa_handler = crt_on_stop;
	for (size_t i = 0; i < NSTOP; i++)
		sigaction(crt_stop_sigs[i], &sa, &crt_old_stop[i]);
	sa.sa_handler = crt_on_crash;
	sa.sa_flags   = SA_RESETHAND;
	for (size_t i = 0; i < NCRASH; i++)
		sigaction(crt_crash_sigs[i], &sa, &crt_old_crash[i]);
	crt_have_handlers = 1;
}

static void
crt_handlers_restore(void)
{
	if (!crt_have_handlers)
		return;
	for (size_t i = 0; i < NSTOP; i++)
		sigaction(crt_stop_sigs[i], &crt_old_stop[i], NULL);
	for (size_t i = 0; i < NCRASH; i++)
		sigaction(crt_crash_sigs[i], &crt_old_crash[i], NULL);
	crt_have_handlers = 0;
}

/* Append a terminfo string capability to the emergency sequence. */
static void
crt_restore_add(const char *cap)
{
	const char *s = tigetstr(cap);
	size_t      n;

	if (s == NULL || s == (const char *) -1)
		return;
	n = strlen(s);
	if (crt_restore_len + n >= sizeof(crt_restore))
		return;
	memcpy(crt_restore + crt_restore_len, s, n);
	crt_restore_len += n;
}

/* Terminals whose fonts commonly lack braille and block glyphs even in a
 * UTF-8 locale. */
static int
crt_term_is_narrow(const char *term)
{
	return strcmp(term, "linux") == 0 || strncmp(term, "vt", 2) == 0
	    || strcmp(term, "ansi") == 0 || strncmp(term, "cons", 4) == 0;
}

static void
crt_choose_glyphs(const char *term)
{
	const char *cs    = nl_langinfo(CODESET);
	const char *ascii = getenv("VITALS_ASCII");

	crt_unicode = cs != NULL
	    && (strcmp(cs, "UTF-8") == 0 || strcmp(cs, "utf8") == 0)
	    && !crt_term_is_narrow(term) && (ascii == NULL || *ascii == 0);
}

static void
crt_pair(enum crt_role r, short pair, short fg, short bg, attr_t extra)
{
	init_pair(pair, fg, bg);
	crt_attrs[r] = COLOR_PAIR(pair) | extra;
}

/* Roles as colours, or as attributes any terminal has. */
static void
crt_choose_attrs(void)
{
	const char *nc = getenv("NO_COLOR");

	crt_colour            = has_colors() && (nc == NULL || *nc == 0);
	crt_attrs[CRT_NORMAL] = A_NORMAL;
	crt_attrs[CRT_DIM]    = A_DIM;
	crt_attrs[CRT_BAR]    = A_REVERSE;
	crt_attrs[CRT_TITLE]  = A_BOLD | A_UNDERLINE;
	crt_attrs[CRT_SELECT] = A_REVERSE;
	crt_attrs[CRT_CRIT]   = A_BOLD | A_REVERSE;
	crt_attrs[CRT_WARN]   = A_BOLD;
	crt_attrs[CRT_INFO]   = A_UNDERLINE;
	crt_attrs[CRT_GOOD]   = A_NORMAL;
	crt_attrs[CRT_ACCENT] = A_NORMAL;
	crt_attrs[CRT_LOW]    = A_DIM;
	crt_attrs[CRT_HIGH]   = A_BOLD;
	if (!crt_colour || start_color() != OK)
		return;
	if (use_default_colors() != OK) {
		/* Without default colours, black stands for the
		 * background. */
		assume_default_colors(COLOR_WHITE, COLOR_BLACK);
	}
	crt_pair(CRT_BAR, 1, COLOR_BLACK, COLOR_CYAN, A_NORMAL);
	crt_pair(CRT_TITLE, 2, COLOR_CYAN, -1, A_BOLD);
	crt_pair(CRT_SELECT, 3, COLOR_BLACK, COLOR_WHITE, A_NORMAL);
	crt_pair(CRT_CRIT, 4, COLOR_RED, -1, A_BOLD);
	crt_pair(CRT_WARN, 5, COLOR_YELLOW, -1, A_BOLD);
	crt_pair(CRT_INFO, 6, COLOR_CYAN, -1, A_NORMAL);
	crt_pair(CRT_GOOD, 7, COLOR_GREEN, -1, A_NORMAL);
	crt_pair(CRT_ACCENT, 8, COLOR_GREEN, -1, A_NORMAL);
	crt_pair(CRT_LOW, 9, COLOR_BLUE, -1, A_BOLD);
	crt_pair(CRT_HIGH, 10, COLOR_RED, -1, A_NORMAL);
	crt_attrs[CRT_DIM] = A_DIM;
}

static void
crt_modes(void)
{
	cbreak(); /* ^C stays a signal, handled by crt_on_stop */
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	intrflush(stdscr, FALSE);
	curs_set(0);
	set_escdelay(25); /* Esc answers at once, not after 1 s */
	leaveok(stdscr, TRUE);
}

int
crt_init(char *err, size_t errlen)
{
	const char *term = getenv("TERM");
	const char *cup;

	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		snprintf(err, errlen,
		    "vitals top needs a terminal: standard %s is not one "
		    "(for plain output use vitals metrics or vitals query)",
		    isatty(STDIN_FILENO) ? "output" : "input");
		return -1;
	}
	if (term == NULL || *term == 0 || strcmp(term, "dumb") == 0) {
		snprintf(err, errlen,
		    "vitals top needs a terminal that can move the cursor, "
		    "and TERM is %s%s%s (set TERM, e.g. TERM=xterm-256color, "
		    "or use vitals metrics for plain output)",
		    term == NULL ? "not set" : "'", term == NULL ? "" : term,
		    term == NULL ? "" : "'");
		return -1;
	}
	crt_have_tio = tcgetattr(STDIN_FILENO, &crt_saved_tio) == 0;
	crt_stop     = 0;
	/* Installed before newterm so that ncurses keeps its hands off
	 * SIGINT and SIGTERM (it only catches signals left at default). */
	crt_handlers_install();
	crt_screen = newterm(NULL, stdout, stdin);
	if (crt_screen == NULL) {
		crt_handlers_restore();
		snprintf(err, errlen,
		    "vitals top: the terminal type TERM='%s' is unknown to "
		    "terminfo (try TERM=xterm-256color)",
		    term);
		return -1;
	}
	set_term(crt_screen);
	cup = tigetstr("cup");
	if (cup == NULL || cup == (const char *) -1) {
		endwin();
		delscreen(crt_screen);
		crt_screen = NULL;
		crt_handlers_restore();
		snprintf(err, errlen,
		    "vitals top: the terminal TERM='%s' cannot position the "
		    "cursor (use vitals metrics for plain output)",
		    term);
		return -1;
	}
	crt_restore_len = 0;
	crt_restore_add("sgr0");
	crt_restore_add("cnorm");
	crt_restore_add("rmkx");
	crt_restore_add("rmcup");
	crt_choose_glyphs(term);
	crt_modes();
	crt_choose_attrs();
	return 0;
}

int
crt_init_virtual(int rows, int cols, char *err, size_t errlen)
{
	crt_null = fopen("/dev/null", "r+");
	if (crt_null == NULL) {
		snprintf(err, errlen, "/dev/null: %s", strerror(errno));
		return -1;
	}
	crt_screen = newterm("xterm-256color", crt_null, crt_null);
	if (crt_screen == NULL) {
		snprintf(err, errlen, "terminfo has no xterm-256color");
		fclose(crt_null);
		crt_null = NULL;
		return -1;
	}
	set_term(crt_screen);
	crt_is_virtual = 1;
	resize_term(rows, cols);
	crt_choose_glyphs("xterm-256color");
	crt_modes();
	crt_choose_attrs();
	return 0;
}

void
crt_done(void)
{
	if (crt_screen != NULL) {
		curs_set(1);
		endwin();
		delscreen(crt_screen);
		crt_screen = NULL;
		fflush(stdout);
	}
	if (crt_null != NULL) {
		fclose(crt_null);
		crt_null = NULL;
	}
	crt_is_virtual  = 0;
	crt_restore_len = 0;
	crt_handlers_restore();
}

int
crt_signal(void)
{
	return crt_stop;
}

int
crt_utf8(void)
{
	return crt_unicode;
}

int
crt_has_colour(void)
{
	return crt_colour;
}

attr_t
crt_attr(enum crt_role role)
{
	return role < CRT_NROLES ? crt_attrs[role] : A_NORMAL;
}

int
crt_getkey(int timeout_ms)
{
	timeout(timeout_ms);
	return getch();
}
