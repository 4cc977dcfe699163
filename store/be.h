/*
 * be: big-endian stores and loads on unaligned memory, the byte order of
 * the numbers inside LMDB keys (series ids, steps, block and journal
 * numbers), so that keys sort as the numbers do. Values inside records
 * are little-endian (wire/le.h). Static inline: nothing here is exported.
 */
#ifndef STORE_BE_H
#define STORE_BE_H

#include <stdint.h>

static inline void
be_put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t) (v >> (24 - 8 * i));
}

static inline void
be_put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t) (v >> (56 - 8 * i));
}

static inline uint32_t
be_get32(const uint8_t *p)
{
	return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16
	    | (uint32_t) p[2] << 8 | p[3];
}

static inline uint64_t
be_get64(const uint8_t *p)
{
	return (uint64_t) be_get32(p) << 32 | be_get32(p + 4);
}

#endif /* STORE_BE_H */
