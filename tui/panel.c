/* The table of views, and helpers shared by the panels. */
#include "tui/panel.h"

static const panel panels[UI_NVIEWS] = {
	[UI_OVERVIEW] = {
		.want = panel_overview_want,
		.draw = panel_overview_draw,
		.key  = panel_overview_key,
		.hint = "Enter chart  Tab/1-4 view  / filter  r run  z span  "
		        "p pause  ? help  q quit",
	},
	[UI_DETAIL] = {
		.want = panel_detail_want,
		.draw = panel_detail_draw,
		.key  = panel_detail_key,
		.hint = "\u2191\u2193 metric  \u2190\u2192 rank  l log  "
		        "z zoom  +/- steps  Enter ranks  Esc back  ? help"
		        "  q quit",
		.hint_ascii = "up/dn metric  left/right rank  l log  z zoom  "
		              "+/- steps  Enter ranks  Esc back  ? help  q quit",
	},
	[UI_RANKS] = {
		.want = panel_ranks_want,
		.draw = panel_ranks_draw,
		.key  = panel_ranks_key,
		.hint = "\u2191\u2193 rank  \u2190\u2192 metric  Enter "
		        "chart  z/+/- span  Esc back  ? help  q quit",
		.hint_ascii = "up/dn rank  left/right metric  Enter chart  "
		              "z/+/- span  Esc back  ? help  q quit",
	},
	[UI_ALERTS] = {
		.draw = panel_alerts_draw,
		.key  = panel_alerts_key,
		.hint = "a acknowledge  A all  Enter chart  Esc back  ? help  "
		        "q quit",
	},
};

const panel *
panel_of(enum ui_view v)
{
	return &panels[(unsigned) v < UI_NVIEWS ? v : UI_OVERVIEW];
}

enum crt_role
panel_sev_role(int severity)
{
	switch (severity) {
	case MODEL_CRITICAL:
		return CRT_CRIT;
	case MODEL_WARNING:
		return CRT_WARN;
	case MODEL_INFO:
		return CRT_INFO;
	default:
		return CRT_NORMAL;
	}
}

const char *
panel_sev_name(int severity)
{
	switch (severity) {
	case MODEL_CRITICAL:
		return "CRIT";
	case MODEL_WARNING:
		return "WARN";
	case MODEL_INFO:
		return "INFO";
	default:
		return "";
	}
}

int
panel_move(int ch, size_t *sel, size_t n, int page)
{
	size_t s = *sel;

	if (page < 1)
		page = 1;
	switch (ch) {
	case KEY_UP:
	case 'k':
		s = s > 0 ? s - 1 : 0;
		break;
	case KEY_DOWN:
	case 'j':
		s = s + 1 < n ? s + 1 : s;
		break;
	case KEY_PPAGE:
		s = s > (size_t) page ? s - (size_t) page : 0;
		break;
	case KEY_NPAGE:
	case ' ':
		s = s + (size_t) page < n ? s + (size_t) page
		                          : (n ? n - 1 : 0);
		break;
	case KEY_HOME:
	case 'g':
		s = 0;
		break;
	case KEY_END:
	case 'G':
		s = n ? n - 1 : 0;
		break;
	default:
		return 0;
	}
	*sel = s;
	return 1;
}
