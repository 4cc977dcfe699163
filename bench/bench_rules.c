/*
 * bench_rules: time to parse a rules file of N rules (detect_rules_parse,
 * what `vitals rules check`, `vitals replay --rules` and vitalsd do), for
 * N doubling, so that a cost that grows faster than N shows as a rising
 * time per rule. Files over 1 MiB are refused by every command
 * (common/rules_file.h); the library is timed past that, as the issue
 * that found the quadratic check did (100,000 rules took 36 s).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "detect/detect.h"

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

int
main(void)
{
	for (size_t n = 12500; n <= 100000; n *= 2) {
		size_t        cap = n * 64, len = 0;
		char         *text = malloc(cap);
		char          err[256];
		detect_rules *rs;
		double        t0, dt;
		int           rc;

		if (text == NULL)
			return 1;
		for (size_t i = 0; i < n; i++)
			len += (size_t) snprintf(text + len, cap - len,
			    "rule r%zu { metric = 'm' detector = nonfinite "
			    "}\n",
			    i);
		t0 = now_s();
		rc = detect_rules_parse(
		    text, len, "bench", &rs, err, sizeof(err));
		dt = now_s() - t0;
		if (rc != 0) {
			fprintf(stderr, "bench_rules: %s\n", err);
			return 1;
		}
		printf("%7zu rules (%5.1f MiB): %6.3f s, %5.2f us per rule\n",
		    n, (double) len / 1048576.0, dt, dt * 1e6 / (double) n);
		detect_rules_free(rs);
		free(text);
	}
	return 0;
}
