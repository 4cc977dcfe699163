/*
 * vitals: read what vitalsd stored, and send samples from a shell.
 *
 *	vitals runs | metrics | emitters | query | export | emit ...
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "vitals.h"

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: vitals COMMAND [options]\n"
	    "\n"
	    "  runs      [--db DIR] [--format csv|jsonl]\n"
	    "            every run: steps, times, samples, emitters, "
	    "dropped\n"
	    "  metrics   --run R [--db DIR] [--format csv|jsonl]\n"
	    "            the series of a run: metric, rank, samples, last "
	    "value\n"
	    "  emitters  [--run R] [--db DIR] [--format csv|jsonl]\n"
	    "            incarnations: host, pid, rank, received, dropped, "
	    "duplicates\n"
	    "  query     --run R --metric M [--rank N] [--steps A:B]\n"
	    "            [--db DIR] [--format csv|jsonl]\n"
	    "            one metric's samples in step order\n"
	    "  alerts    [--run R] [--db DIR] [--format csv|jsonl]\n"
	    "            alert transitions vitalsd raised, oldest first\n"
	    "  export    [--run R] [--db DIR] [--format csv|jsonl]\n"
	    "            whole runs, in the format `vitals replay` reads\n"
	    "  emit      --run R --step N NAME=VALUE... [--rank N]\n"
	    "            [--endpoint E] [--timeout-ms N]\n"
	    "            send samples; waits until vitalsd stored them\n"
	    "  top       [--run R] [--db DIR]\n"
	    "            the live terminal view (? inside for keys)\n"
	    "  replay    [--rules FILE] FILE...   (FILE: .jsonl or .csv, - "
	    "stdin)\n"
	    "            or trainer logs: --preset NAME | --pattern RE "
	    "[--run R]\n"
	    "            run the detectors offline; one JSON alert per line\n"
	    "  rules     default | check [FILE] [--db DIR]\n"
	    "            print the built-in rules; validate and list rules\n"
	    "  tail      --preset NAME | --pattern RE [--run R] [--rank N]\n"
	    "            [--endpoint E] [FILE | -- COMMAND ARGS...]\n"
	    "            log lines to samples: follow a file, read a pipe, "
	    "or run\n"
	    "            a command (presets: megatron llmc nanogpt "
	    "torchtitan hf)\n"
	    "  keygen    [--out PREFIX]   (default PREFIX: vitals)\n"
	    "            a CURVE key pair: PREFIX.key (secret, 0600) and "
	    "PREFIX.pub\n"
	    "  spool     list [DIR] | send [DIR] [--endpoint E] "
	    "[--timeout-ms N]\n"
	    "            samples emitters spooled when vitalsd was away; "
	    "send them\n"
	    "  version\n"
	    "\n"
	    "--db defaults to $VITALS_DB, else ~/.local/share/vitals.\n");
}

static int
parse_u64(const char *opt, const char *s, uint64_t *out)
{
	char              *end;
	unsigned long long v;

	errno = 0;
	if (*s == '-' || *s == 0)
		goto bad;
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end != 0)
		goto bad;
	*out = v;
	return 0;
bad:
	fprintf(stderr, "vitals: %s: expected a non-negative integer, got "
			"'%s'\n",
	    opt, s);
	return -1;
}

/* A:B, A:, :B or A (one step). */
static int
parse_steps(const char *s, cli_args *a)
{
	const char *colon = strchr(s, ':');
	char        lo[32], hi[32];
	size_t      n;

	a->step_from = 0;
	a->step_to   = UINT64_MAX;
	if (colon == NULL)
		return parse_u64("--steps", s, &a->step_from) ||
		    parse_u64("--steps", s, &a->step_to);
	n = (size_t) (colon - s);
	if (n >= sizeof(lo) || strlen(colon + 1) >= sizeof(hi))
		goto bad;
	memcpy(lo, s, n);
	lo[n] = 0;
	snprintf(hi, sizeof(hi), "%s", colon + 1);
	if (*lo && parse_u64("--steps", lo, &a->step_from))
		return -1;
	if (*hi && parse_u64("--steps", hi, &a->step_to))
		return -1;
	if (a->step_from > a->step_to)
		goto bad;
	return 0;
bad:
	fprintf(stderr, "vitals: --steps: expected A:B with A <= B, got "
			"'%s'\n",
	    s);
	return -1;
}

static int
parse_args(int argc, char **argv, cli_args *a)
{
	a->step_to    = UINT64_MAX;
	a->format     = OUT_CSV;
	a->timeout_ms = 5000;
	a->pos        = calloc((size_t) argc + 1, sizeof(char *));
	if (a->pos == NULL)
		return -1;
	for (int i = 2; i < argc; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		uint64_t    u;

		if (strncmp(o, "--", 2) != 0) {
			a->pos[a->npos++] = argv[i];
			continue;
		}
		if (o[2] == 0) {
			/* "--": the rest is a command line (tail). */
			a->cmd_argc = argc - i - 1;
			a->cmd_argv = argv + i + 1;
			break;
		}
		if (v == NULL) {
			fprintf(stderr, "vitals: %s needs a value\n", o);
			return -1;
		}
		i++;
		if (strcmp(o, "--db") == 0)
			a->db = v;
		else if (strcmp(o, "--run") == 0)
			a->run = v;
		else if (strcmp(o, "--metric") == 0)
			a->metric = v;
		else if (strcmp(o, "--endpoint") == 0)
			a->endpoint = v;
		else if (strcmp(o, "--rules") == 0)
			a->rules = v;
		else if (strcmp(o, "--preset") == 0)
			a->preset = v;
		else if (strcmp(o, "--pattern") == 0)
			a->pattern = v;
		else if (strcmp(o, "--out") == 0)
			a->out = v;
		else if (strcmp(o, "--rank") == 0) {
			if (parse_u64(o, v, &u) || u > INT32_MAX)
				return -1;
			a->has_rank = 1;
			a->rank     = (int32_t) u;
		} else if (strcmp(o, "--step") == 0) {
			if (parse_u64(o, v, &a->step))
				return -1;
			a->has_step = 1;
		} else if (strcmp(o, "--steps") == 0) {
			if (parse_steps(v, a))
				return -1;
		} else if (strcmp(o, "--timeout-ms") == 0) {
			if (parse_u64(o, v, &u) || u > 3600000)
				return -1;
			a->timeout_ms = (long) u;
		} else if (strcmp(o, "--format") == 0) {
			if (out_format_parse(v, &a->format) != 0) {
				fprintf(stderr, "vitals: --format: expected "
						"csv or jsonl, got '%s'\n",
				    v);
				return -1;
			}
		} else {
			fprintf(stderr, "vitals: unknown option %s (see "
					"vitals help)\n",
			    o);
			return -1;
		}
	}
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(const cli_args *);
	} cmds[] = {
		{ "runs", cmd_runs },
		{ "metrics", cmd_metrics },
		{ "emitters", cmd_emitters },
		{ "query", cmd_query },
		{ "export", cmd_export },
		{ "emit", cmd_emit },
		{ "top", cmd_top },
		{ "alerts", cmd_alerts },
		{ "replay", cmd_replay },
		{ "rules", cmd_rules },
		{ "tail", cmd_tail },
		{ "keygen", cmd_keygen },
		{ "spool", cmd_spool },
	};
	cli_args a = { 0 };
	int      rc;

	if (argc < 2 || strcmp(argv[1], "help") == 0 ||
	    strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (strcmp(argv[1], "version") == 0 ||
	    strcmp(argv[1], "--version") == 0) {
		printf("vitals %s\n", VT_VERSION_STR);
		return 0;
	}
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		if (strcmp(argv[1], cmds[i].name) != 0)
			continue;
		if (parse_args(argc, argv, &a) != 0) {
			free(a.pos);
			return 2;
		}
		rc = cmds[i].fn(&a);
		free(a.pos);
		if (fflush(stdout) != 0 || ferror(stdout)) {
			fprintf(stderr, "vitals: writing output failed\n");
			return 1;
		}
		return rc;
	}
	fprintf(stderr, "vitals: unknown command '%s' (see vitals help)\n",
	    argv[1]);
	return 2;
}
