/*
 * le: little-endian stores and loads on unaligned memory. The byte order
 * of the wire protocol and of every integer in the store; a header of its
 * own so that the store, which owns its formats, does not depend on the
 * wire layout for them. Static inline: nothing here is exported.
 */
#ifndef WIRE_LE_H
#define WIRE_LE_H

#include <stdint.h>
#include <string.h>

/* On a little-endian host a value's bytes are already in wire order: one
 * unaligned move each (the byte loops below stayed loops at -O2, a tenth
 * of an emitter's I/O thread sealing wide batches). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define WIRE_LE_HOST 1
#endif

static inline void
wire_put16(uint8_t *p, uint16_t v)
{
#ifdef WIRE_LE_HOST
	memcpy(p, &v, 2);
#else
	p[0] = (uint8_t) v;
	p[1] = (uint8_t) (v >> 8);
#endif
}

static inline void
wire_put32(uint8_t *p, uint32_t v)
{
#ifdef WIRE_LE_HOST
	memcpy(p, &v, 4);
#else
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t) (v >> (8 * i));
#endif
}

static inline void
wire_put64(uint8_t *p, uint64_t v)
{
#ifdef WIRE_LE_HOST
	memcpy(p, &v, 8);
#else
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t) (v >> (8 * i));
#endif
}

static inline uint16_t
wire_get16(const uint8_t *p)
{
#ifdef WIRE_LE_HOST
	uint16_t v;

	memcpy(&v, p, 2);
	return v;
#else
	return (uint16_t) (p[0] | (p[1] << 8));
#endif
}

static inline uint32_t
wire_get32(const uint8_t *p)
{
#ifdef WIRE_LE_HOST
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
#else
	return (uint32_t) p[0] | ((uint32_t) p[1] << 8)
	    | ((uint32_t) p[2] << 16) | ((uint32_t) p[3] << 24);
#endif
}

static inline uint64_t
wire_get64(const uint8_t *p)
{
#ifdef WIRE_LE_HOST
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
#else
	return (uint64_t) wire_get32(p) | ((uint64_t) wire_get32(p + 4) << 32);
#endif
}

#endif /* WIRE_LE_H */
