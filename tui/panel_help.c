/* The ? screen: every key, by view. */
#include "tui/draw.h"
#include "tui/panel.h"

static const char *const help_lines[] = {
	"vitals top: keys (any key closes this)",
	" q Ctrl-C  quit; the terminal is restored     ?  this help",
	" Tab 1-4   views: 1 overview 2 chart 3 ranks 4 alerts    a  alerts",
	" Esc       back to the overview; there, clear the filter",
	" /         filter metrics by PCRE2 (caseless unless it has a "
	"capital)",
	" r         switch run      p  pause refreshing      Ctrl-L  repaint",
	"Overview   VALUE median over ranks, MIN, MAX, WORST rank; TREND the",
	"           lowest rank over recent steps (worst per cell, ! "
	"NaN/inf);",
	"           CHANGE last against first value of TREND's span, in %;",
	"           ALERT kind of the metric's worst firing alert (row "
	"colour)",
	" up/down   select   Enter  chart   z  all steps / last N   + -  N",
	"Chart      one metric of one rank; ^ under the axis where alerts "
	"fired",
	" up/down   metric      left/right  rank      Enter  ranks of it",
	" l  log scale   z  all steps / last N   + -  zoom in / out",
	"Ranks      shade: distance from the median rank (1, 2.5, 5, 10%),",
	"           red worse, blue better; a dot: no sample, others logged",
	"           STEP VALUE latest, SEEN age of the last sample, STATE ok,",
	"           STALLED alert NaN/inf ended restarted; DEV its mean",
	"           distance from the median rank",
	" up/down   rank   left/right  metric   Enter  its chart   z + -  "
	"span",
	"Alerts     firing first, then resolved; SEV severity, ACK muted "
	"here,",
	"           TIME STEP RANK where it fired, RULE that raised it",
	" up/down   select   a or space  acknowledge (mutes it here)   A  all",
	" Enter     chart of the alert's metric and rank",
};

void
panel_help_draw(const ui *u, int y, int h, int w)
{
	size_t n = sizeof(help_lines) / sizeof(help_lines[0]);

	(void) u;
	for (int i = 0; i < h; i++)
		draw_fill(y + i, 0, w, A_NORMAL);
	for (size_t i = 0; i < n && (int) i < h; i++)
		draw_str(y + (int) i, 1, w - 1,
		    i == 0 || help_lines[i][0] != ' ' ? crt_attr(CRT_TITLE)
		                                      : A_NORMAL,
		    help_lines[i]);
}
