/*
 * replay_input: samples from JSON Lines or CSV files, for `vitals
 * replay`.
 *
 * JSON Lines: one object per line with run, rank, metric, step, time
 * (seconds) and value (a number, or the bare NaN, Infinity, -Infinity
 * Python's json writes); host is optional. CSV: a header naming at least
 * time, step, metric and value, in any order, optionally rank, run and
 * host (other columns are ignored); RFC 4180 quoting; nan, inf, -inf
 * values. A missing run is the file's base name without its extension
 * ("stdin" for -), a missing rank is -1.
 *
 * The format is chosen by the extension (.jsonl .ndjson .json / .csv),
 * else by the first non-blank line: '{' means JSON Lines.
 */
#ifndef CLI_REPLAY_INPUT_H
#define CLI_REPLAY_INPUT_H

#include <stdio.h>

#include "detect/detect.h"

typedef struct replay_input replay_input;

enum replay_input_format {
	REPLAY_INPUT_AUTO,
	REPLAY_INPUT_JSONL,
	REPLAY_INPUT_CSV
};

/*
 * Read samples from f (not closed here), named path in messages. Returns
 * 0, or -1 with a message in err (out of memory).
 */
int replay_input_open(
    const char *path, FILE *f, replay_input **out, char *err, size_t errlen);
void replay_input_close(replay_input *in);

/*
 * The next sample; its strings are valid until the next call. Returns 1,
 * 0 at the end, or -1 with "FILE:LINE[:COL]: expected ..., found ..." in
 * err (reading stops there).
 */
int replay_input_next(
    replay_input *in, detect_sample *s, char *err, size_t errlen);

/* The format in use (after the first call to replay_input_next). */
int replay_input_format(const replay_input *in);

/* Parse decimal seconds ("1700000000.123456789", "-1.5", "1e3") into
 * ns, exactly when there are at most 9 decimals. Returns 0 or -1. */
int replay_input_parse_time(const char *s, size_t len, int64_t *ns);

#endif /* CLI_REPLAY_INPUT_H */
