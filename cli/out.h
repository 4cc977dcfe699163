/*
 * out: writing query results as CSV or JSON Lines, buffered. The CSV
 * columns are those `vitals replay` reads (time,step,rank,metric,value,
 * run,host), so an export can be replayed as it is.
 */
#ifndef CLI_OUT_H
#define CLI_OUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum out_format { OUT_CSV, OUT_JSONL };

/* Parse "csv" or "jsonl". Returns 0 or -1. */
int out_format_parse(const char *s, enum out_format *out);

/* Shortest text that reads back as the same double; nan, inf, -inf for
 * CSV and NaN, Infinity, -Infinity (as Python's json writes) for JSON. */
size_t out_double(char *buf, size_t len, double v, enum out_format f);
/* ns since the epoch as seconds with nine decimals. */
size_t out_time(char *buf, size_t len, int64_t ns);

/* A string as a CSV field (quoted when needed) or a JSON string. */
void out_csv_str(FILE *f, const char *s, size_t len);
void out_json_str(FILE *f, const char *s, size_t len);

/* One sample in the chosen format (the CSV header is out_sample_header). */
void out_sample_header(FILE *f, enum out_format fmt);
void out_sample(FILE *f, enum out_format fmt, const char *run, size_t runlen,
    const char *host, const char *metric, size_t mlen, int32_t rank,
    uint64_t step, int64_t time_ns, double value);

#endif /* CLI_OUT_H */
