/* Fuzz target: decoding a stored block, as a reader of a damaged
 * database would, and resuming it as the collector would. */
#include <stddef.h>
#include <stdint.h>

#include "store/block.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	block_info info;
	block_dec  d;
	static block_enc e;
	uint64_t   step;
	int64_t    t;
	double     v;

	block_peek(data, size, &info);
	if (block_dec_init(&d, data, size) == BLOCK_OK)
		while (block_dec_next(&d, &step, &t, &v) == 1)
			;
	if (block_enc_resume(&e, data, size) == BLOCK_OK)
		block_enc_append(&e, UINT64_MAX, 0, 1.0);
	return 0;
}
