/*
 * cli: the `vitals` commands. main.c parses the options every command
 * shares and dispatches; each cmd_*.c holds a family of commands. The
 * module owns the command line, the output formats (out.c), opening the
 * store to read (reader.c), the replay input formats (replay_input.c)
 * and log scraping (scrape.c); `vitals top` is tui/'s, started from
 * cmd_top.c.
 *
 * It must not write to the store nor call LMDB itself: only vitalsd
 * writes, and commands read through store/'s read calls. Samples reach
 * vitalsd only through the public emitter API (include/vitals.h), never
 * emitter/ internals or a hand-built wire message; alerts are computed
 * by detect/ (replay, rules), never here.
 */
#ifndef CLI_CLI_H
#define CLI_CLI_H

#include <stdint.h>

#include "cli/out.h"
#include "detect/detect.h"

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
	int             all_samples; /* query: every stored sample of a step */
	int             latest;   /* export: one value per step, no end rows */
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

/* Shared by `vitals replay` and `vitals rules` (defined in cmd_replay.c). */

/* A whole file ("-": stdin), NUL-terminated; caller frees. NULL with a
 * message on stderr on failure. */
char *cli_read_file(const char *path, size_t *len);

/* The rules of path, or the built-in ones if path is NULL. Returns 0, or
 * 1 with the error (FILE:LINE:COL: ...) on stderr. */
int cli_load_rules(const char *path, detect_rules **out);

#endif /* CLI_CLI_H */
