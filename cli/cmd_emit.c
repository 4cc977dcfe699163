/*
 * vitals emit: send samples from a shell script and wait until vitalsd
 * acknowledged them as stored.
 *
 *	vitals emit --run R --step N loss=2.31 grad_norm=0.8
 *
 * The calls for one run and rank are one emitter (one incarnation,
 * continuing batch numbers: cli/emit_state.h), so the collector sees a
 * shell script's samples as it sees a trainer's, not as restarts.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/emit_state.h"
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

/* The rank as the library would resolve it (vt_opts.rank): the option,
 * else $RANK, else $SLURM_PROCID, else 0. */
static int32_t
rank_of(const cli_args *a)
{
	static const char *const vars[] = { "RANK", "SLURM_PROCID" };

	if (a->has_rank)
		return a->rank;
	for (size_t i = 0; i < 2; i++) {
		const char *v = getenv(vars[i]);
		char       *end;
		long        x;

		if (v == NULL || *v == 0)
			continue;
		errno = 0;
		x     = strtol(v, &end, 10);
		if (errno == 0 && *end == 0 && x >= 0 && x <= INT32_MAX)
			return (int32_t) x;
	}
	return 0;
}

/* Send the samples as the emitter of state es. Returns the exit status;
 * *acked says whether vitalsd acknowledged every sample. */
static int
send(const cli_args *a, vt_opts *o, emit_state *es, int *acked)
{
	vt_emitter *em = NULL;
	vt_stats    st;
	char        err[256];
	int         rc;

	*acked = 0;
	rc     = vt_open_continue(
	        o, es->incarnation, es->incarnation != 0 ? es->first_seq : 0, &em);
	if (rc != 0) {
		fprintf(stderr, "vitals emit: %s\n", vt_strerror(rc));
		return 1;
	}
	if (emit_state_keep(es, vt_incarnation(em), err, sizeof(err)) != 0)
		fprintf(stderr,
		    "vitals emit: %s: the next call will be a new "
		    "emitter\n",
		    err);
	for (int i = 0; i < a->npos; i++) {
		const char *eq = strchr(a->pos[i], '=');
		char        name[VT_NAME_MAX + 1];
		size_t      n = (size_t) (eq - a->pos[i]);
		double      v;

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
		    a->endpoint ? a->endpoint
		                : (getenv("VITALS_ENDPOINT")
		                        ? getenv("VITALS_ENDPOINT")
		                        : VT_DEFAULT_ENDPOINT));
		return 1;
	}
	*acked = 1;
	if (st.rejected > 0) {
		fprintf(stderr,
		    "vitals emit: vitalsd refused the samples (see "
		    "its log)\n");
		return 1;
	}
	return 0;
}

int
cmd_emit(const cli_args *a)
{
	vt_opts    o;
	emit_state es;
	char       err[4200];
	int        rc, acked;

	if (a->run == NULL || !a->has_step || a->npos == 0) {
		fprintf(stderr,
		    "vitals emit: --run R, --step N and at least "
		    "one NAME=VALUE are required\n");
		return 2;
	}
	if (a->has_rank && a->rank < 0) {
		fprintf(stderr,
		    "vitals emit: --rank %d: a rank is 0 or more\n",
		    (int) a->rank);
		return 2;
	}
	/* Check every argument before sending any. */
	for (int i = 0; i < a->npos; i++) {
		const char *eq = strchr(a->pos[i], '=');
		double      v;

		if (eq == NULL || eq == a->pos[i]
		    || parse_value(eq + 1, &v) != 0) {
			fprintf(stderr,
			    "vitals emit: argument %d '%s': expected "
			    "NAME=VALUE with a number (nan and inf allowed)\n",
			    i + 1, a->pos[i]);
			return 2;
		}
		if (eq - a->pos[i] > VT_NAME_MAX) {
			fprintf(stderr,
			    "vitals emit: argument %d: name longer "
			    "than %d bytes\n",
			    i + 1, VT_NAME_MAX);
			return 2;
		}
	}
	vt_opts_init(&o);
	o.run              = a->run;
	o.endpoint         = a->endpoint;
	o.close_timeout_ms = 100;
	o.rank             = rank_of(a);
	/* A call sends a few samples: the smallest buffer (its ring of
	 * 4,096 slots holds 2,048 samples twice over) spares each call the
	 * 64 MiB default's 8 MiB ring, written whole at open. */
	if (a->npos <= 2048)
		o.max_buffer_bytes = (size_t) 1 << 20;
	/* Each sample is in one batch, and a batch holds at least one
	 * sample, a new drop count or the goodbye: 4 per sample and some
	 * to spare bound what this call can number. Unused numbers cost
	 * nothing. */
	if (emit_state_begin(&es, a->run, o.rank, 4 * (uint64_t) a->npos + 64,
	        err, sizeof(err))
	    != 0)
		fprintf(stderr,
		    "vitals emit: %s: this call is an emitter of "
		    "its own\n",
		    err);
	rc = send(a, &o, &es, &acked);
	emit_state_end(&es, acked);
	return rc;
}
