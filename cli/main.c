/*
 * vitals: read what vitalsd stored, and send samples from a shell.
 *
 *	vitals runs | metrics | emitters | query | export | emit ...
 *
 * One table of commands and one of options drive the parser
 * (getopt_long), each command's --help and the bash completion script,
 * so the three cannot disagree.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "vitals.h"

/* The options; a command takes those of its mask. */
enum opt_id {
	O_DB,
	O_RUN,
	O_METRIC,
	O_RANK,
	O_STEP,
	O_STEPS,
	O_FORMAT,
	O_ENDPOINT,
	O_TIMEOUT,
	O_RULES,
	O_PRESET,
	O_PATTERN,
	O_OUT,
	O_ALL_SAMPLES,
	O_LATEST,
	O_COUNT
};
#define M(o) (1u << (o))

/* How bash completes an option's value. An option without a metavar is
 * a flag: it takes no value. */
enum opt_complete { C_NONE, C_FILE, C_DIR, C_WORDS };

static const struct opt_def {
	const char *name, *metavar, *help;
	int         complete; /* enum opt_complete */
	const char *words;    /* C_WORDS */
} opts[O_COUNT] = {
	[O_DB]       = { "db", "DIR",
		  "database folder (default $VITALS_DB, else "
		  "~/.local/share/vitals)",
		  C_DIR, NULL },
	[O_RUN]      = { "run", "R", "the run", C_NONE, NULL },
	[O_METRIC]   = { "metric", "M", "the metric", C_NONE, NULL },
	[O_RANK]     = { "rank", "N", "the rank", C_NONE, NULL },
	[O_STEP]     = { "step", "N", "the step of the samples", C_NONE, NULL },
	[O_STEPS]    = { "steps", "A:B", "steps A to B (A:, :B, A)", C_NONE,
		     NULL },
	[O_FORMAT]   = { "format", "csv|jsonl", "output format (default csv)",
		      C_WORDS, "csv jsonl" },
	[O_ENDPOINT] = { "endpoint", "E",
		  "vitalsd's endpoint (default $VITALS_ENDPOINT, else "
		  VT_DEFAULT_ENDPOINT ")",
		  C_NONE, NULL },
	[O_TIMEOUT]  = { "timeout-ms", "N",
		 "wait at most N ms for vitalsd (default 5000)", C_NONE,
		 NULL },
	[O_RULES]    = { "rules", "FILE",
		   "anomaly rules (default: the built-in set)", C_FILE, NULL },
	[O_PRESET]   = { "preset", "NAME", "a log format preset", C_WORDS,
		    "megatron llmc nanogpt torchtitan hf" },
	[O_PATTERN]  = { "pattern", "RE", "a custom log line pattern", C_NONE,
		     NULL },
	[O_OUT]      = { "out", "PREFIX", "key file prefix (default vitals)",
		 C_FILE, NULL },
	[O_ALL_SAMPLES] = { "all-samples", NULL,
		"every sample stored at a step (default: the last one)",
		C_NONE, NULL },
	[O_LATEST]      = { "latest", NULL,
		     "one value per step, the last stored (default: every "
		     "sample, and the ends of the emitters that closed)",
		     C_NONE, NULL },
};

static int cmd_completion(const cli_args *a);

static const struct cmd_def {
	const char *name;
	int (*fn)(const cli_args *);
	unsigned    mask;
	const char *synopsis, *summary;
	const char *words; /* positional words to complete, or NULL */
	int         files; /* positional arguments are files */
} cmds[] = {
	{ "runs", cmd_runs, M(O_DB) | M(O_FORMAT), "[--db DIR] [--format F]",
	    "every run: steps, times, samples, emitters, dropped", NULL, 0 },
	{ "metrics", cmd_metrics, M(O_RUN) | M(O_DB) | M(O_FORMAT),
	    "--run R [--db DIR] [--format F]",
	    "the series of a run: metric, rank, samples, last value", NULL,
	    0 },
	{ "emitters", cmd_emitters, M(O_RUN) | M(O_DB) | M(O_FORMAT),
	    "[--run R] [--db DIR] [--format F]",
	    "incarnations, in the order first seen: host, pid, rank, "
	    "received, dropped, duplicates",
	    NULL, 0 },
	{ "query", cmd_query,
	    M(O_RUN) | M(O_METRIC) | M(O_RANK) | M(O_STEPS) | M(O_DB) |
		M(O_FORMAT) | M(O_ALL_SAMPLES),
	    "--run R --metric M [--rank N] [--steps A:B] [--db DIR] "
	    "[--format F]\n"
	    "                    [--all-samples]",
	    "one metric's samples in step order, one per step", NULL, 0 },
	{ "export", cmd_export,
	    M(O_RUN) | M(O_DB) | M(O_FORMAT) | M(O_ALL_SAMPLES) | M(O_LATEST),
	    "[--run R] [--db DIR] [--format F] [--latest]",
	    "whole runs as vitalsd got them, in the format `vitals replay` "
	    "reads",
	    NULL, 0 },
	{ "emit", cmd_emit,
	    M(O_RUN) | M(O_STEP) | M(O_RANK) | M(O_ENDPOINT) | M(O_TIMEOUT),
	    "--run R --step N [--rank N] [--endpoint E] [--timeout-ms N] "
	    "NAME=VALUE...",
	    "send samples; waits until vitalsd stored them", NULL, 0 },
	{ "top", cmd_top, M(O_RUN) | M(O_DB), "[--run R] [--db DIR]",
	    "the live terminal view (? inside for keys)", NULL, 0 },
	{ "alerts", cmd_alerts, M(O_RUN) | M(O_DB) | M(O_FORMAT),
	    "[--run R] [--db DIR] [--format F]",
	    "alert transitions vitalsd raised, oldest first", NULL, 0 },
	{ "replay", cmd_replay,
	    M(O_RULES) | M(O_PRESET) | M(O_PATTERN) | M(O_RUN),
	    "[--rules FILE] FILE...  (.jsonl or .csv, - stdin)\n"
	    "       vitals replay --preset NAME | --pattern RE [--run R] "
	    "FILE...",
	    "run the detectors offline on samples or trainer logs; one JSON "
	    "alert per line",
	    NULL, 1 },
	{ "rules", cmd_rules, M(O_DB), "default | check [FILE] [--db DIR]",
	    "print the built-in rules; validate and list rules", "default check",
	    1 },
	{ "tail", cmd_tail,
	    M(O_PRESET) | M(O_PATTERN) | M(O_RUN) | M(O_RANK) | M(O_ENDPOINT),
	    "--preset NAME | --pattern RE [--run R] [--rank N] [--endpoint E]\n"
	    "                   [FILE | -- COMMAND ARGS...]",
	    "log lines to samples: follow a file, read a pipe, or run a "
	    "command",
	    NULL, 1 },
	{ "keygen", cmd_keygen, M(O_OUT), "[--out PREFIX]",
	    "a CURVE key pair: PREFIX.key (secret, 0600) and PREFIX.pub", NULL,
	    0 },
	{ "spool", cmd_spool, M(O_ENDPOINT) | M(O_TIMEOUT),
	    "list [DIR] | send [DIR] [--endpoint E] [--timeout-ms N]",
	    "samples emitters spooled while vitalsd was away: list them, or\n"
	    "             send them (each stored once) and remove the files",
	    "list send", 1 },
	{ "completion", cmd_completion, 0, "bash",
	    "print the bash completion script (source it, or install it as\n"
	    "            /usr/share/bash-completion/completions/vitals)",
	    "bash", 0 },
};
#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

static void
usage(FILE *f)
{
	fputs("usage: vitals COMMAND [options]\n\n", f);
	for (size_t i = 0; i < NCMDS; i++)
		fprintf(f, "  %-10s %s\n             %s\n", cmds[i].name,
		    cmds[i].synopsis, cmds[i].summary);
	fputs("  version    (or --version)\n"
	      "  help       [COMMAND]  (or -h, --help; COMMAND --help)\n"
	      "\n"
	      "Options take their value as --opt VALUE or --opt=VALUE.\n"
	      "--db defaults to $VITALS_DB, else ~/.local/share/vitals.\n",
	    f);
}

static void
cmd_usage(FILE *f, const struct cmd_def *c)
{
	fprintf(f, "usage: vitals %s %s\n\n%s\n", c->name, c->synopsis,
	    c->summary);
	if (c->mask != 0)
		fputs("\noptions:\n", f);
	for (int o = 0; o < O_COUNT; o++) {
		char left[64];

		if (!(c->mask & M(o)))
			continue;
		snprintf(left, sizeof(left), "--%s%s%s", opts[o].name,
		    opts[o].metavar ? " " : "",
		    opts[o].metavar ? opts[o].metavar : "");
		fprintf(f, "  %-22s %s", left, opts[o].help);
		if (opts[o].complete == C_WORDS && o != O_FORMAT)
			fprintf(f, ": %s", opts[o].words);
		fputc('\n', f);
	}
	fprintf(f, "  %-22s %s\n", "-h, --help", "print this and exit");
}

/* The bash completion script, made from the tables above. */
static int
cmd_completion(const cli_args *a)
{
	if (a->npos != 1 || strcmp(a->pos[0], "bash") != 0) {
		fprintf(stderr, "usage: vitals completion bash\n");
		return 2;
	}
	puts("# bash completion for vitals (generated by `vitals completion "
	     "bash`)\n"
	     "_vitals() {\n"
	     "\tlocal cur=${COMP_WORDS[COMP_CWORD]} "
	     "prev=${COMP_WORDS[COMP_CWORD-1]} words= files=0\n"
	     "\tCOMPREPLY=()\n"
	     "\tif [ \"$COMP_CWORD\" -eq 1 ]; then");
	fputs("\t\tCOMPREPLY=($(compgen -W \"", stdout);
	for (size_t i = 0; i < NCMDS; i++)
		printf("%s ", cmds[i].name);
	puts("help version --help --version\" -- \"$cur\"))\n"
	     "\t\treturn\n"
	     "\tfi\n"
	     "\tcase $prev in");
	for (int o = 0; o < O_COUNT; o++) {
		if (opts[o].metavar == NULL)
			continue; /* a flag: the next word is not its value */
		printf("\t--%s)\n", opts[o].name);
		if (opts[o].complete == C_FILE)
			puts("\t\tCOMPREPLY=($(compgen -f -- \"$cur\"))");
		else if (opts[o].complete == C_DIR)
			puts("\t\tCOMPREPLY=($(compgen -d -- \"$cur\"))");
		else if (opts[o].complete == C_WORDS)
			printf("\t\tCOMPREPLY=($(compgen -W \"%s\" -- "
			       "\"$cur\"))\n",
			    opts[o].words);
		puts("\t\treturn ;;");
	}
	puts("\tesac\n"
	     "\tcase ${COMP_WORDS[1]} in");
	for (size_t i = 0; i < NCMDS; i++) {
		printf("\t%s)\n\t\twords=\"", cmds[i].name);
		for (int o = 0; o < O_COUNT; o++)
			if (cmds[i].mask & M(o))
				printf("--%s ", opts[o].name);
		printf("--help%s%s\"\n", cmds[i].words ? " " : "",
		    cmds[i].words ? cmds[i].words : "");
		printf("\t\tfiles=%d ;;\n", cmds[i].files);
	}
	puts("\tesac\n"
	     "\tif [ \"$files\" = 1 ] && [ \"${cur#-}\" = \"$cur\" ]; then\n"
	     "\t\tCOMPREPLY=($(compgen -W \"$words\" -- \"$cur\") "
	     "$(compgen -f -- \"$cur\"))\n"
	     "\telse\n"
	     "\t\tCOMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
	     "\tfi\n"
	     "}\n"
	     "complete -F _vitals vitals");
	return 0;
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

/* A rank: -1 (what an emitter that does not know its rank sends, so
 * series of rank -1 exist) to 2^31-1. */
static int
parse_rank(const char *s, int32_t *out)
{
	char *end;
	long  v;

	errno = 0;
	v     = strtol(s, &end, 10);
	if (*s == 0 || *end != 0) {
		fprintf(stderr, "vitals: --rank: expected an integer, got "
				"'%s'\n",
		    s);
		return -1;
	}
	if (errno == ERANGE || v < -1 || v > INT32_MAX) {
		fprintf(stderr, "vitals: --rank: %s is out of range (-1 to "
				"%d)\n",
		    s, INT32_MAX);
		return -1;
	}
	*out = (int32_t) v;
	return 0;
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

/* One option's value into a. */
static int
set_opt(int o, const char *v, cli_args *a)
{
	uint64_t u;

	switch (o) {
	case O_DB:
		a->db = v;
		break;
	case O_RUN:
		a->run = v;
		break;
	case O_METRIC:
		a->metric = v;
		break;
	case O_ENDPOINT:
		a->endpoint = v;
		break;
	case O_RULES:
		a->rules = v;
		break;
	case O_PRESET:
		a->preset = v;
		break;
	case O_PATTERN:
		a->pattern = v;
		break;
	case O_OUT:
		a->out = v;
		break;
	case O_ALL_SAMPLES:
		a->all_samples = 1;
		break;
	case O_LATEST:
		a->latest = 1;
		break;
	case O_RANK:
		if (parse_rank(v, &a->rank) != 0)
			return -1;
		a->has_rank = 1;
		break;
	case O_STEP:
		if (parse_u64("--step", v, &a->step))
			return -1;
		a->has_step = 1;
		break;
	case O_STEPS:
		return parse_steps(v, a);
	case O_TIMEOUT:
		if (parse_u64("--timeout-ms", v, &u) || u > 3600000)
			return -1;
		a->timeout_ms = (long) u;
		break;
	case O_FORMAT:
		if (out_format_parse(v, &a->format) != 0) {
			fprintf(stderr, "vitals: --format: expected csv or "
					"jsonl, got '%s'\n",
			    v);
			return -1;
		}
		break;
	default:
		return -1;
	}
	return 0;
}

/* getopt_long's values: past every character (1 is an operand). */
#define OPT_VAL 256
#define OPT_HELP (OPT_VAL + O_COUNT)

/*
 * The options of command c in argv[2..] (getopt_long: --opt VALUE,
 * --opt=VALUE, unambiguous prefixes, -h). Operands are kept in order;
 * "--" ends the options, and what follows is a command line (tail).
 * Returns 0, 1 for --help (usage printed), -1 after an error message.
 */
static int
parse_args(const struct cmd_def *c, int argc, char **argv, cli_args *a)
{
	struct option lo[O_COUNT + 2];
	int           n = 0, ch, before;

	a->step_to    = UINT64_MAX;
	a->format     = OUT_CSV;
	a->timeout_ms = 5000;
	a->pos        = calloc((size_t) argc + 1, sizeof(char *));
	if (a->pos == NULL)
		return -1;
	for (int o = 0; o < O_COUNT; o++)
		if (c->mask & M(o))
			lo[n++] = (struct option) { opts[o].name,
				opts[o].metavar ? required_argument :
						  no_argument,
				NULL, OPT_VAL + o };
	lo[n++] = (struct option) { "help", no_argument, NULL, OPT_HELP };
	lo[n]   = (struct option) { NULL, 0, NULL, 0 };
	opterr  = 0;
	optind  = 2;
	for (;;) {
		before = optind;
		/* "-": operands come back in order as 1; ":" missing values
		 * as ':'. */
		ch = getopt_long(argc, argv, "-:h", lo, NULL);
		if (ch == -1)
			break;
		if (ch == 1)
			a->pos[a->npos++] = optarg;
		else if (ch == 'h' || ch == OPT_HELP) {
			cmd_usage(stdout, c);
			return 1;
		} else if (ch == ':') {
			fprintf(stderr, "vitals %s: %s needs a value (see "
					"vitals %s --help)\n",
			    c->name, argv[optind - 1], c->name);
			return -1;
		} else if (ch == '?') {
			fprintf(stderr, "vitals %s: unknown option %s (see "
					"vitals %s --help)\n",
			    c->name, argv[optind - 1], c->name);
			return -1;
		} else if (set_opt(ch - OPT_VAL, optarg, a) != 0)
			return -1;
	}
	/* getopt_long stops at the end or after a "--" it skipped. */
	if (optind < argc || (optind == before + 1 && optind <= argc &&
				 strcmp(argv[optind - 1], "--") == 0)) {
		a->cmd_argc = argc - optind;
		a->cmd_argv = argv + optind;
	}
	return 0;
}

static const struct cmd_def *
find_cmd(const char *name)
{
	for (size_t i = 0; i < NCMDS; i++)
		if (strcmp(name, cmds[i].name) == 0)
			return &cmds[i];
	return NULL;
}

int
main(int argc, char **argv)
{
	const struct cmd_def *c;
	cli_args              a = { 0 };
	int                   rc;
	unsigned              v = vt_version();

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0) {
		if (argc > 2 && (c = find_cmd(argv[2])) != NULL)
			cmd_usage(stdout, c);
		else
			usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "version") == 0 ||
	    strcmp(argv[1], "--version") == 0) {
		printf("vitals %s (libvitals %u.%u.%u)\n", VT_VERSION_STR,
		    (v >> 16) & 0xff, (v >> 8) & 0xff, v & 0xff);
		return 0;
	}
	if ((c = find_cmd(argv[1])) == NULL) {
		fprintf(stderr, "vitals: unknown command '%s' (see vitals "
				"--help)\n",
		    argv[1]);
		return 2;
	}
	rc = parse_args(c, argc, argv, &a);
	if (rc != 0) {
		free(a.pos);
		return rc > 0 ? 0 : 2;
	}
	rc = c->fn(&a);
	free(a.pos);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "vitals: writing output failed\n");
		return 1;
	}
	return rc;
}
