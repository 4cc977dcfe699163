/*
 * vitals alerts: the alert transitions vitalsd stored, oldest first.
 * JSON Lines are printed as stored; CSV columns are taken from them.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/reader.h"
#include "detect/detect.h"
#include "store/scan.h"

typedef struct ctx_alerts {
	const cli_args *a;
	uint64_t        n, bad;
} ctx_alerts;

/* One field of a stored alert as CSV: strings quoted when needed,
 * numbers as stored (NaN and infinities in CSV spelling). */
static void
csv_field(const detect_alert_value *v)
{
	char num[40];

	switch (v->type) {
	case DETECT_AT_STRING:
		out_csv_str(stdout, v->str, strlen(v->str));
		break;
	case DETECT_AT_INT:
		printf("%lld", (long long) v->i);
		break;
	case DETECT_AT_REAL:
		out_double(num, sizeof(num), v->num, OUT_CSV);
		fputs(num, stdout);
		break;
	default:
		break;
	}
}

static int
each_alert(void *vctx, const char *run, size_t runlen, uint64_t seq,
    const char *json, size_t len)
{
	ctx_alerts         *c = vctx;
	detect_alert_record r;
	int                 rc;

	(void) run;
	(void) runlen;
	(void) seq;
	c->n++;
	if (c->a->format == OUT_JSONL) {
		fwrite(json, 1, len, stdout);
		fputc('\n', stdout);
		return 0;
	}
	rc = detect_alert_parse(json, len, &r, NULL, 0);
	if (rc == DETECT_ENOMEM)
		return 1;
	if (rc != 0) {
		c->bad++;
		return 0;
	}
	for (int i = 0; i < DETECT_AF_COUNT; i++) {
		if (i > 0)
			fputc(',', stdout);
		csv_field(&r.f[i]);
	}
	fputc('\n', stdout);
	detect_alert_record_free(&r);
	return 0;
}

int
cmd_alerts(const cli_args *a)
{
	cli_reader r;
	ctx_alerts c = { a, 0, 0 };
	int        rc;

	if (cli_reader_open(a, &r) != 0)
		return 1;
	if (a->format == OUT_CSV) {
		for (int i = 0; i < DETECT_AF_COUNT; i++)
			printf(
			    "%s%s", i ? "," : "", detect_alert_field_name(i));
		putchar('\n');
	}
	rc = scan_alerts(r.st, r.txn, a->run, 0, each_alert, &c);
	if (c.bad > 0)
		fprintf(stderr, "vitals: %llu stored alerts did not parse as "
				"JSON\n",
		    (unsigned long long) c.bad);
	return cli_reader_done(&r, rc) || c.bad != 0;
}
