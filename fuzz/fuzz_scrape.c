/* Fuzz target: the log-scraping presets (vitals tail, vitals replay
 * --preset) on arbitrary lines. The first byte picks the preset. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cli/scrape.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const presets[] = { "megatron", "llmc", "nanogpt",
		"torchtitan", "hf" };
	static scrape           *sc[5];
	scrape_result            r;
	double                   d;
	char                     err[256];
	size_t                   p;

	if (size < 1)
		return 0;
	p = data[0] % 5;
	if (sc[p] == NULL &&
	    scrape_new(presets[p], NULL, &sc[p], err, sizeof(err)) != 0)
		return 0;
	scrape_line(sc[p], (const char *) data + 1, size - 1, &r);
	scrape_number((const char *) data + 1, size - 1, &d);
	return 0;
}
