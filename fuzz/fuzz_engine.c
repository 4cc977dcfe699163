/* Fuzz target: the detect engine with the default rules and a rules
 * file of every detector, fed a sequence of samples and ticks decoded
 * from the input (steps that go back, extreme times, NaNs, many ranks). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "detect/detect.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
sink(void *ctx, const detect_alert *a)
{
	char buf[2048];

	(void) ctx;
	detect_alert_json(a, buf, sizeof(buf));
}

static const char *const metrics[] = { "loss", "grad_norm", "tokens_per_sec",
	"step_time", "entropy", "mfu", "heartbeat", "x" };

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char extra[] =
	    "max_series = 20\n"
	    "rule a { metric='.' detector=spike direction=both warmup=8 for=1 cooldown=2s adapt=5 }\n"
	    "rule b { metric='.' detector=rise by=1% window=4 warmup=4 for=1s adapt=3 }\n"
	    "rule c { metric='.' detector=straggler window=4 min_ranks=2 for=1 }\n"
	    "rule d { metric='.' detector=stall k=1 floor=0s ceiling=1s escalate=1 }\n"
	    "rule e { metric='.' detector=threshold above=1 below=0.5 relative=start warmup=1 }\n"
	    "rule f { metric='.' detector=flatline for=2 tolerance=0.5 clear=2s }\n"
	    "rule g { metric='.' detector=restart exec=['x'] }\n";
	detect_rules  *r[2];
	detect_engine *e;
	char           err[256];
	int64_t        t = 1700000000000000000ll;
	uint64_t       step[4][8] = { { 0 } };

	if (detect_rules_default(&r[0]) != 0)
		return 0;
	if (detect_rules_parse(extra, strlen(extra), "x", &r[1], err,
		sizeof(err)) != 0) {
		detect_rules_free(r[0]);
		return 0;
	}
	if (detect_engine_new(r[size % 2], &e) != 0)
		goto out;
	for (size_t i = 0; i + 4 <= size; i += 4) {
		const uint8_t *b = data + i;
		detect_sample  s = { 0 };
		char           run[8];
		int            ri = b[0] & 3, rk = (b[0] >> 2) & 7;

		if (b[0] == 0xff) {
			detect_engine_reload(e, r[b[1] & 1]);
			continue;
		}
		switch (b[1] >> 6) {
		case 0: t = (int64_t) ((uint64_t) t + (uint64_t) b[2] * 10000000); break;
		case 1: t = (int64_t) ((uint64_t) t + (uint64_t) b[2] * 60000000000ull); break;
		case 2: t = (int64_t) ((uint64_t) t - (uint64_t) b[2] * 1000000000ull); break;
		default: t = (b[2] & 1) ? INT64_MAX : (b[2] & 2) ? INT64_MIN : 1700000000000000000ll; break;
		}
		if (b[1] & 0x20) {
			detect_tick(e, t, sink, NULL);
			continue;
		}
		if (b[3] & 0x80)
			step[ri][rk] -= (uint64_t) (b[3] & 0x7f) * 10;
		else
			step[ri][rk] += b[3] & 3;
		run[0] = 'r';
		run[1] = (char) ('0' + ri);
		s.run = run;
		s.runlen = 2;
		s.metric = metrics[b[1] & 7];
		s.mlen = strlen(s.metric);
		s.host = (b[0] & 0x40) ? "h" : NULL;
		s.hostlen = s.host ? 1 : 0;
		s.rank = (b[0] & 0x80) ? -1 : rk;
		s.step = step[ri][rk];
		s.time_ns = t;
		switch ((b[1] >> 3) & 3) {
		case 0: s.value = 1 + b[2] / 64.0; break;
		case 1: s.value = (b[2] & 1) ? NAN : (b[2] & 2) ? INFINITY : -INFINITY; break;
		case 2: s.value = (double) b[2] - 128; break;
		default: s.value = b[2] ? 1e300 * b[2] : 0; break;
		}
		detect_feed(e, &s, sink, NULL);
	}
	detect_engine_free(e);
out:
	detect_rules_free(r[0]);
	detect_rules_free(r[1]);
	return 0;
}
