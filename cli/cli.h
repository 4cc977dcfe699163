/*
 * cli: the `vitals` commands. main.c parses the options every command
 * shares and dispatches; each cmd_*.c holds a family of commands.
 */
#ifndef CLI_CLI_H
#define CLI_CLI_H

#include <stdint.h>

#include "cli/out.h"

typedef struct cli_args {
	const char     *db;
	const char     *run;
	const char     *metric;
	int             has_rank;
	int32_t         rank;
	uint64_t        step_from, step_to;
	int             has_step;
	uint64_t        step; /* emit */
	enum out_format format;
	const char     *endpoint;
	long            timeout_ms;
	const char     *rules; /* replay, rules: --rules FILE */
	const char     *preset, *pattern; /* tail: --preset, --pattern */
	const char     *out; /* keygen: --out PREFIX */
	int             cmd_argc; /* tail: arguments after "--" */
	char          **cmd_argv; /* NULL-terminated (argv's own end) */
	int             npos;
	char          **pos; /* positional arguments */
} cli_args;

/* Each returns the process exit status: 0, 1 (failure), 2 (usage). */
int cmd_runs(const cli_args *a);
int cmd_metrics(const cli_args *a);
int cmd_query(const cli_args *a);
int cmd_export(const cli_args *a);
int cmd_emitters(const cli_args *a);
int cmd_emit(const cli_args *a);
int cmd_top(const cli_args *a);
int cmd_alerts(const cli_args *a);
int cmd_replay(const cli_args *a);
int cmd_rules(const cli_args *a);
int cmd_tail(const cli_args *a);
int cmd_keygen(const cli_args *a);
int cmd_spool(const cli_args *a);

#endif /* CLI_CLI_H */
