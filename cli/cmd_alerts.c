/*
 * vitals alerts: the alert transitions vitalsd stored, oldest first.
 * JSON Lines are printed as stored; CSV columns are taken from them.
 */
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/reader.h"
#include "store/scan.h"

static const char *const columns[] = { "rule", "kind", "severity", "state",
	"run", "rank", "host", "metric", "step", "time", "value", "baseline",
	"message" };
#define NCOLUMNS (sizeof(columns) / sizeof(columns[0]))

typedef struct ctx_alerts {
	const cli_args *a;
	uint64_t        n, bad;
} ctx_alerts;

/* One field of a stored alert as CSV: strings quoted when needed,
 * numbers as stored (NaN and infinities in CSV spelling). */
static void
csv_field(json_object *o, const char *name)
{
	json_object *v;
	const char  *s;
	char         num[40];

	if (!json_object_object_get_ex(o, name, &v) || v == NULL)
		return;
	switch (json_object_get_type(v)) {
	case json_type_string:
		s = json_object_get_string(v);
		out_csv_str(stdout, s, strlen(s));
		break;
	case json_type_int:
		printf("%lld", (long long) json_object_get_int64(v));
		break;
	case json_type_double:
		out_double(num, sizeof(num), json_object_get_double(v),
		    OUT_CSV);
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
	ctx_alerts             *c = vctx;
	json_object            *o;
	json_tokener           *tok;
	enum json_tokener_error e;

	(void) run;
	(void) runlen;
	(void) seq;
	c->n++;
	if (c->a->format == OUT_JSONL) {
		fwrite(json, 1, len, stdout);
		fputc('\n', stdout);
		return 0;
	}
	tok = json_tokener_new();
	if (tok == NULL)
		return 1;
	o = json_tokener_parse_ex(tok, json, (int) len);
	e = json_tokener_get_error(tok);
	json_tokener_free(tok);
	if (o == NULL || e != json_tokener_success) {
		c->bad++;
		json_object_put(o);
		return 0;
	}
	for (size_t i = 0; i < NCOLUMNS; i++) {
		if (i > 0)
			fputc(',', stdout);
		csv_field(o, columns[i]);
	}
	fputc('\n', stdout);
	json_object_put(o);
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
		for (size_t i = 0; i < NCOLUMNS; i++)
			printf("%s%s", i ? "," : "", columns[i]);
		putchar('\n');
	}
	rc = scan_alerts(r.st, r.txn, a->run, 0, each_alert, &c);
	if (c.bad > 0)
		fprintf(stderr, "vitals: %llu stored alerts did not parse as "
				"JSON\n",
		    (unsigned long long) c.bad);
	return cli_reader_done(&r, rc) || c.bad != 0;
}
