/*
 * scrape: samples from a trainer's log lines, with PCRE2 patterns. Used by
 * `vitals tail` (live) and `vitals replay --preset | --pattern`
 * (backtesting rules on an old log).
 *
 * A scraper is made from a preset (the formats of Megatron-LM /
 * Megatron-DeepSpeed, llm.c, nanoGPT, torchtitan and the Hugging Face
 * Trainer; scrape_preset_help() lists them) or from a custom pattern whose
 * named groups give the sample:
 *
 *	step    the step (decimal digits); without it the step is the
 *	        number of lines the pattern matched so far (per rank)
 *	rank    the rank (optional; overrides a [default7]: line prefix)
 *	time    seconds since the epoch (optional, for replay)
 *	other   every other named group is a metric of that name
 *
 * Before matching, a line loses its ANSI colour sequences, its line end
 * and a torchrun prefix such as "[default7]:" or "[rank7]:", which gives
 * the rank. Numbers may carry thousands separators (500,705), an exponent
 * (5.279E-05) or a percent sign (25.94% is stored as 25.94); nan and inf
 * are accepted. A value that does not parse is counted as malformed and
 * skipped; the rest of the line is used.
 *
 * Metric names of the presets follow the names the default rules know:
 * loss, grad_norm, lr, tokens_per_sec, samples_per_sec, tps, tflops, mfu,
 * step_time_ms, iteration_time_s, ...; keys a preset does not know are
 * kept with a sanitised name ("mtp_1 loss" -> mtp_1_loss).
 */
#ifndef CLI_SCRAPE_H
#define CLI_SCRAPE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * A compiled scraper. One thread at a time: it keeps per-rank state (the
 * line counter of patterns without a step, the previous train_time of
 * nanoGPT lines).
 */
typedef struct scrape scrape;

#define SCRAPE_MAX_METRICS 32
#define SCRAPE_LINE_MAX 65536 /* longer lines are matched truncated */

typedef struct scrape_metric {
	/* NUL-terminated; borrowed from the scraper or from the result,
	 * valid until the next scrape_line() with that result. */
	const char *name;
	double      value;
} scrape_metric;

/* One matched line. */
typedef struct scrape_result {
	uint64_t step;
	int32_t  rank;           /* -1: the line names no rank */
	int64_t  time_ns;        /* from a time group or a leading
	                          * YYYY-MM-DD HH:MM:SS[.fff] (read as UTC);
	                          * 0 if the line has none */
	unsigned      malformed; /* values in this line that did not parse */
	size_t        n;         /* metrics in m (may be 0) */
	scrape_metric m[SCRAPE_MAX_METRICS];
	char          names[1024]; /* storage for sanitised key names */
} scrape_result;

/* Totals since scrape_new(). */
typedef struct scrape_counts {
	uint64_t lines;     /* lines given to scrape_line */
	uint64_t matched;   /* lines that matched */
	uint64_t samples;   /* metrics returned */
	uint64_t malformed; /* values that did not parse */
	uint64_t limit;     /* lines given up at PCRE2's match limit */
} scrape_counts;

/*
 * Make a scraper from a preset name (preset) or a custom pattern (pattern);
 * exactly one of the two is non-NULL.
 * Returns 0, or -1 with one line in err: an unknown preset (naming the
 * known ones), a pattern that does not compile (with its offset), a
 * pattern without a metric group, or out of memory. *out is NULL then.
 */
int scrape_new(const char *preset, const char *pattern, scrape **out,
    char *err, size_t errlen);

/* NULL is a no-op. */
void scrape_free(scrape *s);

/*
 * Match one line (len bytes; a trailing "\n" or "\r\n" is ignored).
 * Returns 1 and fills *r if the line matched (r->n may be 0 when every
 * value was malformed), 0 if it did not (or hit the match limit).
 */
int scrape_line(scrape *s, const char *line, size_t len, scrape_result *r);

void scrape_get_counts(const scrape *s, scrape_counts *out);

/*
 * Parse one number as a log prints it: optional sign, digits with optional
 * thousands separators (1,234,567), fraction, exponent, a trailing %;
 * nan, inf, infinity in any case. Surrounding blanks are ignored.
 * Returns 0, or -1 if the text is not such a number.
 */
int scrape_number(const char *s, size_t len, double *out);

/* The preset names, one per line with a description (for usage). */
const char *scrape_preset_help(void);

/* ---- reading a whole log (vitals replay --preset | --pattern) -------- */

/*
 * Samples of a log file, one per metric of each matched line, in file
 * order. A sample's time is the line's (scrape_result.time_ns) if it has
 * one, else that of the last line that had one, else step seconds after
 * the epoch (one second per step): the same file always gives the same
 * samples, and rules that look at time (stall) see a plausible clock.
 */
typedef struct scrape_reader scrape_reader;

typedef struct scrape_sample {
	const char *metric; /* valid until the next call */
	int32_t     rank;   /* -1: none in the line */
	uint64_t    step;
	int64_t     time_ns;
	double      value;
	uint64_t    line; /* 1-based line number, for messages */
} scrape_sample;

/*
 * Read lines of f (not closed here) with the scraper s (not freed here;
 * it must outlive the reader). Returns 0, or -1 when out of memory.
 */
int scrape_reader_open(scrape *s, FILE *f, scrape_reader **out);

/* The next sample: 1, 0 at the end of the file, -1 on a read error
 * (errno set). */
int scrape_reader_next(scrape_reader *rd, scrape_sample *out);

/* NULL is a no-op. */
void scrape_reader_close(scrape_reader *rd);

#endif /* CLI_SCRAPE_H */
