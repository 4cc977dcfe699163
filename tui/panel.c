/* Helpers shared by the panels. */
#include "tui/panel.h"

enum crt_role
panel_sev_role(int severity)
{
	switch (severity) {
	case TM_CRITICAL:
		return CRT_CRIT;
	case TM_WARNING:
		return CRT_WARN;
	case TM_INFO:
		return CRT_INFO;
	default:
		return CRT_NORMAL;
	}
}

const char *
panel_sev_name(int severity)
{
	switch (severity) {
	case TM_CRITICAL:
		return "CRIT";
	case TM_WARNING:
		return "WARN";
	case TM_INFO:
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

void
panel_scroll(size_t sel, size_t *top, size_t n, int page)
{
	if (page < 1)
		page = 1;
	if (sel < *top)
		*top = sel;
	if (sel >= *top + (size_t) page)
		*top = sel - (size_t) page + 1;
	if (*top + (size_t) page > n)
		*top = n > (size_t) page ? n - (size_t) page : 0;
}
