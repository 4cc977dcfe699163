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
#include <string.h>

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

/* The 8 bytes at q as a little-endian u64. */
static inline uint64_t
var_le64(const uint8_t *q)
{
	uint64_t w;

	memcpy(&w, q, sizeof(w));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	w = __builtin_bswap64(w);
#endif
	return w;
}

/*
 * get_var where at least 10 bytes can be read from *p: the same value,
 * or -1 if it is longer than 10 bytes. A varint of up to 8 bytes is
 * read from one load without a branch on its length (a value's length
 * varies from sample to sample, and a loop over its bytes mispredicts
 * where it ends): the first byte without the high bit ends it, the 7-bit
 * groups of the bytes before are packed in three steps.
 */
static inline int
get_var10(const uint8_t **p, uint64_t *v)
{
	const uint8_t *q = *p;
	uint64_t       w, stop, x;
	unsigned       bits;

	if (q[0] < 0x80) {
		*v = q[0];
		*p = q + 1;
		return 0;
	}
	w    = var_le64(q);
	stop = ~w & 0x8080808080808080ull;
	if (stop == 0) { /* 9 or 10 bytes */
		x = w & 0x7f7f7f7f7f7f7f7full;
		x = ((x & 0x7f007f007f007f00ull) >> 1)
		    | (x & 0x007f007f007f007full);
		x = ((x & 0x3fff00003fff0000ull) >> 2)
		    | (x & 0x00003fff00003fffull);
		x = ((x & 0x0fffffff00000000ull) >> 4)
		    | (x & 0x000000000fffffffull);
		x |= (uint64_t) (q[8] & 0x7f) << 56;
		if (!(q[8] & 0x80)) {
			*v = x;
			*p = q + 9;
			return 0;
		}
		x |= (uint64_t) (q[9] & 0x7f) << 63;
		if (!(q[9] & 0x80)) {
			*v = x;
			*p = q + 10;
			return 0;
		}
		return -1;
	}
	bits = (unsigned) __builtin_ctzll(stop) + 1; /* 8 x the length */
	x    = bits == 64 ? w : w & ((1ull << bits) - 1);
	x &= 0x7f7f7f7f7f7f7f7full;
	x  = ((x & 0x7f007f007f007f00ull) >> 1) | (x & 0x007f007f007f007full);
	x  = ((x & 0x3fff00003fff0000ull) >> 2) | (x & 0x00003fff00003fffull);
	x  = ((x & 0x0fffffff00000000ull) >> 4) | (x & 0x000000000fffffffull);
	*v = x;
	*p = q + bits / 8;
	return 0;
}

#endif
