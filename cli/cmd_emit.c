/*
 * vitals emit: send samples from a shell script and wait until vitalsd
 * acknowledged them as stored.
 *
 *	vitals emit --run R --step N loss=2.31 grad_norm=0.8
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "vitals.h"

/* strtod, plus the spellings replay accepts for non-finite values. */
static int
parse_value(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out  = strtod(s, &end);
	return *s == 0 || *end != 0 || errno == ERANGE ? -1 : 0;
}

int
cmd_emit(const cli_args *a)
{
	vt_opts     o;
	vt_emitter *em = NULL;
	vt_stats    st;
	int         rc;

	if (a->run == NULL || !a->has_step || a->npos == 0) {
		fprintf(stderr, "vitals emit: --run R, --step N and at least "
				"one NAME=VALUE are required\n");
		return 2;
	}
	vt_opts_init(&o);
	o.run              = a->run;
	o.endpoint         = a->endpoint;
	o.close_timeout_ms = 100;
	if (a->has_rank)
		o.rank = a->rank;
	/* Check every argument before sending any. */
	for (int i = 0; i < a->npos; i++) {
		const char *eq = strchr(a->pos[i], '=');
		double      v;

		if (eq == NULL || eq == a->pos[i] ||
		    parse_value(eq + 1, &v) != 0) {
			fprintf(stderr,
			    "vitals emit: argument %d '%s': expected "
			    "NAME=VALUE with a number (nan and inf allowed)\n",
			    i + 1, a->pos[i]);
			return 2;
		}
	}
	if ((rc = vt_open(&o, &em)) != 0) {
		fprintf(stderr, "vitals emit: %s\n", vt_strerror(rc));
		return 1;
	}
	for (int i = 0; i < a->npos; i++) {
		const char *eq = strchr(a->pos[i], '=');
		char        name[VT_NAME_MAX + 1];
		size_t      n = (size_t) (eq - a->pos[i]);
		double      v;

		if (n > VT_NAME_MAX) {
			fprintf(stderr, "vitals emit: argument %d: name longer "
					"than %d bytes\n",
			    i + 1, VT_NAME_MAX);
			vt_close(em);
			return 2;
		}
		memcpy(name, a->pos[i], n);
		name[n] = 0;
		parse_value(eq + 1, &v);
		if ((rc = vt_emit(em, name, a->step, v)) != 0) {
			fprintf(stderr, "vitals emit: argument %d '%s': %s\n",
			    i + 1, name, vt_strerror(rc));
			vt_close(em);
			return 2;
		}
	}
	rc = vt_flush(em, (unsigned) a->timeout_ms);
	vt_get_stats(em, &st);
	vt_close(em);
	if (rc != 0) {
		fprintf(stderr,
		    "vitals emit: not acknowledged within %ld ms; is vitalsd "
		    "listening on %s?\n",
		    a->timeout_ms,
		    a->endpoint ? a->endpoint :
				  (getenv("VITALS_ENDPOINT") ?
					  getenv("VITALS_ENDPOINT") :
					  VT_DEFAULT_ENDPOINT));
		return 1;
	}
	if (st.rejected > 0) {
		fprintf(stderr, "vitals emit: vitalsd refused the samples (see "
				"its log)\n");
		return 1;
	}
	return 0;
}
