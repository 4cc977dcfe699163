#include "cli/out.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int
out_format_parse(const char *s, enum out_format *out)
{
	if (strcmp(s, "csv") == 0)
		*out = OUT_CSV;
	else if (strcmp(s, "jsonl") == 0 || strcmp(s, "json") == 0)
		*out = OUT_JSONL;
	else
		return -1;
	return 0;
}

/*
 * The shortest of %.15g, %.16g, %.17g that reads back bit-exact: short
 * numbers for people, exact ones for programs.
 */
size_t
out_double(char *buf, size_t len, double v, enum out_format f)
{
	int n;

	if (isnan(v))
		return (size_t) snprintf(buf, len, "%s",
		    f == OUT_CSV ? "nan" : "NaN");
	if (isinf(v))
		return (size_t) snprintf(buf, len, "%s",
		    f == OUT_CSV ? (v > 0 ? "inf" : "-inf") :
				   (v > 0 ? "Infinity" : "-Infinity"));
	for (int prec = 15; prec <= 17; prec++) {
		n = snprintf(buf, len, "%.*g", prec, v);
		if (prec == 17 || strtod(buf, NULL) == v)
			break;
	}
	return (size_t) n;
}

size_t
out_time(char *buf, size_t len, int64_t ns)
{
	/* Sign and magnitude: -1 ms is -0.001000000 (a floored second
	 * would print -1.999000000); unsigned, so INT64_MIN has one. */
	uint64_t m = ns < 0 ? 0 - (uint64_t) ns : (uint64_t) ns;

	return (size_t) snprintf(buf, len, "%s%llu.%09llu", ns < 0 ? "-" : "",
	    (unsigned long long) (m / 1000000000u),
	    (unsigned long long) (m % 1000000000u));
}

void
out_csv_str(FILE *f, const char *s, size_t len)
{
	if (strcspn(s, ",\"\r\n") >= len) {
		fwrite(s, 1, len, f);
		return;
	}
	fputc('"', f);
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '"')
			fputc('"', f);
		fputc(s[i], f);
	}
	fputc('"', f);
}

void
out_json_str(FILE *f, const char *s, size_t len)
{
	fputc('"', f);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char) s[i];

		if (c == '"' || c == '\\') {
			fputc('\\', f);
			fputc(c, f);
		} else if (c < 0x20) {
			fprintf(f, "\\u%04x", c);
		} else {
			fputc(c, f);
		}
	}
	fputc('"', f);
}

void
out_sample_header(FILE *f, enum out_format fmt)
{
	if (fmt == OUT_CSV)
		fputs("time,step,rank,metric,value,run,host\n", f);
}

void
out_sample(FILE *f, enum out_format fmt, const char *run, size_t runlen,
    const char *host, const char *metric, size_t mlen, int32_t rank,
    uint64_t step, int64_t time_ns, double value)
{
	char t[40], v[40];

	out_time(t, sizeof(t), time_ns);
	out_double(v, sizeof(v), value, fmt);
	if (fmt == OUT_CSV) {
		fprintf(f, "%s,%llu,%d,", t, (unsigned long long) step, rank);
		out_csv_str(f, metric, mlen);
		fprintf(f, ",%s,", v);
		out_csv_str(f, run, runlen);
		fputc(',', f);
		out_csv_str(f, host, strlen(host));
		fputc('\n', f);
		return;
	}
	fputs("{\"run\":", f);
	out_json_str(f, run, runlen);
	fputs(",\"host\":", f);
	out_json_str(f, host, strlen(host));
	fprintf(f, ",\"rank\":%d,\"metric\":", rank);
	out_json_str(f, metric, mlen);
	fprintf(f, ",\"step\":%llu,\"time\":%s,\"value\":%s}\n",
	    (unsigned long long) step, t, v);
}
