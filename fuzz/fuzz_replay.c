/* Fuzz target: the replay input readers (JSON Lines and CSV). The first
 * byte picks the name the input is read under, so both readers and the
 * sniffing of unnamed input are covered. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cli/replay_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[] = { "in.csv", "in.jsonl", "-" };
	replay_input            *in;
	detect_sample            s;
	FILE                    *f;
	char                     err[512];

	if (size < 1)
		return 0;
	f = fmemopen((void *) (uintptr_t) (data + 1), size - 1, "r");
	if (f == NULL)
		return 0;
	if (replay_input_open(names[data[0] % 3], f, &in, err, sizeof(err)) ==
	    0) {
		while (replay_input_next(in, &s, err, sizeof(err)) == 1)
			;
		replay_input_close(in);
	}
	fclose(f);
	return 0;
}
