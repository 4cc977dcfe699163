#include "tui/ui.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A pattern that backtracks without end must not freeze the screen. */
#define UI_MATCH_LIMIT 100000

void
ui_init(ui *u)
{
	memset(u, 0, sizeof(*u));
	u->view       = UI_OVERVIEW;
	u->lines      = 24;
	u->cols       = 80;
	u->spark_span = 256;
	u->zoom_n     = 500;
	u->ranks_span = 512;
	u->rank       = -1;
}

void
ui_free(ui *u)
{
	pcre2_code_free(u->re);
	pcre2_match_data_free(u->md);
	free(u->rows);
	free(u->alist);
	u->re    = NULL;
	u->md    = NULL;
	u->rows  = NULL;
	u->alist = NULL;
}

int
ui_set_filter(ui *u, const char *pattern)
{
	pcre2_code       *re   = NULL;
	pcre2_match_data *md   = NULL;
	uint32_t          opts = 0;
	int               ec;
	PCRE2_SIZE        off;

	u->filter_err[0] = 0;
	if (*pattern != 0) {
		/* Smart case: caseless unless the pattern has a capital. */
		int upper = 0;

		for (const char *p = pattern; *p; p++)
			if (isupper((unsigned char) *p))
				upper = 1;
		if (!upper)
			opts |= PCRE2_CASELESS;
		re = pcre2_compile((PCRE2_SPTR) pattern, PCRE2_ZERO_TERMINATED,
		    opts, &ec, &off, NULL);
		if (re == NULL) {
			PCRE2_UCHAR msg[120];

			pcre2_get_error_message(ec, msg, sizeof(msg));
			snprintf(u->filter_err, sizeof(u->filter_err),
			    "at %zu: %s", (size_t) off, (const char *) msg);
			return -1;
		}
		md = pcre2_match_data_create_from_pattern(re, NULL);
		if (md == NULL) {
			pcre2_code_free(re);
			snprintf(u->filter_err, sizeof(u->filter_err),
			    "out of memory");
			return -1;
		}
	}
	pcre2_code_free(u->re);
	pcre2_match_data_free(u->md);
	u->re = re;
	u->md = md;
	snprintf(u->filter, sizeof(u->filter), "%s", pattern);
	return 0;
}

static int
ui_matches(const ui *u, const char *name)
{
	pcre2_match_context *mc;
	int                  rc;

	if (u->re == NULL)
		return 1;
	mc = pcre2_match_context_create(NULL);
	if (mc != NULL)
		pcre2_set_match_limit(mc, UI_MATCH_LIMIT);
	rc = pcre2_match(
	    u->re, (PCRE2_SPTR) name, strlen(name), 0, 0, u->md, mc);
	pcre2_match_context_free(mc);
	return rc >= 0;
}

long
ui_metric(const ui *u, const model *m)
{
	(void) m;
	if (u->nrows == 0 || u->sel >= u->nrows)
		return -1;
	return (long) u->rows[u->sel];
}

void
ui_select_row(ui *u, const model *m, long r)
{
	if (u->nrows == 0)
		return;
	if (r < 0)
		r = 0;
	if ((size_t) r >= u->nrows)
		r = (long) u->nrows - 1;
	u->sel = (size_t) r;
	snprintf(u->metric, sizeof(u->metric), "%s",
	    m->metrics[u->rows[u->sel]].name);
}

void
ui_message(ui *u, const char *text)
{
	snprintf(u->msg, sizeof(u->msg), "%s", text);
	u->msg_until = model_wall_now() + 4;
}

int
ui_body_lines(const ui *u)
{
	int h = u->lines - UI_HEADER_LINES - 1;

	return h > 0 ? h : 0;
}

void
ui_scroll(size_t sel, size_t *top, size_t n, int page)
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

static int
alert_order(const model *m, size_t a, size_t b)
{
	const model_alert *x = &m->alerts[a], *y = &m->alerts[b];

	if (x->firing != y->firing)
		return x->firing ? -1 : 1;
	if (x->firing && x->severity != y->severity)
		return x->severity > y->severity ? -1 : 1;
	return x->seq > y->seq ? -1 : x->seq < y->seq;
}

/* Firing alerts (worst, then newest, first), then the resolved, newest
 * first; each (rule, metric, rank) once, at its latest transition. */
static void
sync_alerts(ui *u, const model *m)
{
	size_t n = 0;

	if (u->alist_cap < m->nalerts) {
		size_t *na = realloc(u->alist, m->nalerts * sizeof(*na));

		if (na == NULL)
			return;
		u->alist     = na;
		u->alist_cap = m->nalerts;
	}
	for (size_t i = 0; i < m->nalerts; i++)
		if (m->alerts[i].current)
			u->alist[n++] = i;
	/* Insertion sort: the list is short and mostly in order. */
	for (size_t i = 1; i < n; i++) {
		size_t v = u->alist[i], j = i;

		while (j > 0 && alert_order(m, v, u->alist[j - 1]) < 0) {
			u->alist[j] = u->alist[j - 1];
			j--;
		}
		u->alist[j] = v;
	}
	u->nalist      = n;
	u->alist_frame = m->alerts_changed;
	u->alert_sel   = 0;
	for (size_t i = 0; i < n; i++)
		if (m->alerts[u->alist[i]].seq == u->alert_sel_seq)
			u->alert_sel = i;
}

void
ui_sync(ui *u, const model *m)
{
	long page = ui_body_lines(u) - 1;

	if (u->rows_cap < m->nmetrics) {
		size_t *nr = realloc(u->rows, m->nmetrics * sizeof(*nr));

		if (nr == NULL)
			return;
		u->rows     = nr;
		u->rows_cap = m->nmetrics;
	}
	u->nrows = 0;
	for (size_t i = 0; i < m->nmetrics; i++)
		if (ui_matches(u, m->metrics[i].name))
			u->rows[u->nrows++] = i;
	if (u->metric[0] != 0) {
		long mi = model_metric_find(m, u->metric);

		for (size_t r = 0; mi >= 0 && r < u->nrows; r++)
			if (u->rows[r] == (size_t) mi) {
				u->sel = r;
				break;
			}
	}
	if (u->nrows > 0)
		ui_select_row(u, m, (long) u->sel);
	else
		u->sel = 0;
	if (page < 1)
		page = 1;
	if (u->sel < u->top)
		u->top = u->sel;
	if ((long) (u->sel - u->top) >= page)
		u->top = u->sel - (size_t) page + 1;
	if (u->top + (size_t) page > u->nrows)
		u->top
		    = u->nrows > (size_t) page ? u->nrows - (size_t) page : 0;
	if (u->alist_frame != m->alerts_changed || u->nalist > m->nalerts)
		sync_alerts(u, m);
	if (u->alert_sel >= u->nalist)
		u->alert_sel = u->nalist ? u->nalist - 1 : 0;
	{
		long mi = ui_metric(u, m);
		int  rp = ui_body_lines(u) - 2;

		if (mi >= 0 && u->rank_sel >= m->metrics[mi].n)
			u->rank_sel = m->metrics[mi].n - 1;
		if (mi >= 0)
			ui_scroll(
			    u->rank_sel, &u->rank_top, m->metrics[mi].n, rp);
	}
	if (u->run_sel >= m->nruns)
		u->run_sel = m->nruns ? m->nruns - 1 : 0;
}
