/* Fuzz target: the rules-file parser and compiler (PCRE2 patterns
 * included), then one sample through the engine it makes. */
#include <stddef.h>
#include <stdint.h>

#include "detect/detect.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
ignore(void *ctx, const detect_alert *a)
{
	(void) ctx;
	(void) a;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	detect_rules  *r = NULL;
	detect_engine *e = NULL;
	char           err[512];
	detect_sample  s = { "run", 3, "train/loss", 10, "h", 1, 0, 1,
		         1700000000000000000ll, 2.5 };

	if (detect_rules_parse((const char *) data, size, "fuzz.rules", &r,
		err, sizeof(err)) != 0)
		return 0;
	if (detect_engine_new(r, &e) == 0) {
		detect_feed(e, &s, ignore, NULL);
		s.step  = 2;
		s.value = 0.0 / 0.0;
		detect_feed(e, &s, ignore, NULL);
		detect_engine_free(e);
	}
	detect_rules_free(r);
	return 0;
}
