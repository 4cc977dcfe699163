/* The ? screen: every key, by view. */
#include "tui/draw.h"
#include "tui/panel.h"

static const char *const help_lines[] = {
	"vitals top: the live view of a training run",
	"",
	"Everywhere",
	"  q            quit (Ctrl-C too); the terminal is restored",
	"  ?            this help (any key closes it)",
	"  Tab 1 2 3 4  views: 1 overview, 2 chart, 3 ranks, 4 alerts",
	"  Esc          back to the overview; there, clear the filter",
	"  /            filter metrics by a PCRE2 pattern (caseless unless",
	"               it has a capital); Enter keeps it, Esc cancels",
	"  r            switch run",
	"  p            pause refreshing (moving between views still reads",
	"               what the new view needs)",
	"",
	"Overview       one row per metric; ranks folded to median (VALUE),",
	"               MIN, MAX and the WORST rank; TREND = lowest rank",
	"  up/down j k  select      Enter  chart of the metric",
	"  z            trend over all steps / the last N   + - N",
	"",
	"Chart",
	"  up/down j k  previous/next metric   left/right h  previous/next rank",
	"  l  log scale    z  all steps / last N    + -  zoom in / out",
	"  Enter        ranks of this metric    ! marks NaN/inf, ^ alerts",
	"",
	"Ranks          heat map: distance from the median rank per bucket",
	"  up/down      select rank   left/right  metric   Enter  its chart",
	"  z + -        span of steps; a dot = no sample while others logged",
	"",
	"Alerts         firing first, then resolved",
	"  a / space    acknowledge (mutes its highlight)   A  all",
	"  Enter        chart of the alert's metric and rank",
};

void
panel_help_draw(const ui *u, int y, int h, int w)
{
	size_t n = sizeof(help_lines) / sizeof(help_lines[0]);

	(void) u;
	for (int i = 0; i < h; i++)
		draw_fill(y + i, 0, w, A_NORMAL);
	for (size_t i = 0; i < n && (int) i < h; i++)
		draw_str(y + (int) i, 2, w - 2,
		    i == 0 ? crt_attr(CRT_TITLE) : A_NORMAL, help_lines[i]);
}
