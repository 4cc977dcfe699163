/*
 * varint: the variable-length integers of the journal's records and of
 * format 4's series statistics: LEB128 (7 bits a byte, low first, the
 * high bit set on every byte but the last), and zigzag for signed
 * deltas, so small ones of either sign take one byte. Static inline:
 * nothing here is exported.
 */
#ifndef STORE_VARINT_H
#define STORE_VARINT_H

#include <stdint.h>

static inline uint64_t
zz(int64_t v)
{
	return ((uint64_t) v << 1) ^ (uint64_t) (v >> 63);
}

static inline int64_t
unzz(uint64_t v)
{
	return (int64_t) (v >> 1) ^ -(int64_t) (v & 1);
}

/* Write v at p (at most 10 bytes); returns the byte after it. */
static inline uint8_t *
put_var(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t) (v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t) v;
	return p;
}

/* Read a varint from [*p, end): 0, or -1 if it runs past end or is too
 * long. */
static inline int
get_var(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t x = 0;

	for (unsigned sh = 0; sh < 64 && *p < end; sh += 7) {
		uint8_t b = *(*p)++;

		x |= (uint64_t) (b & 0x7f) << sh;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -1;
}

#endif
