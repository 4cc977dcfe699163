/*
 * f32code: format 8's code of a journal group's values when each is a
 * float32 widened to a double (what trainers' float32 tensors log).
 *
 * The first value's 32-bit pattern as 4 bytes (little-endian); then the
 * others, each as the zigzag of the difference of its pattern with the
 * one before (as signed 32-bit integers), in runs of up to 8: a byte k
 * (0 to 32, the bits of the run's widest difference), then the run's
 * differences in k bits each, packed low bit first, padded to a byte.
 * Noisy values whose patterns differ in their low 19 bits take about
 * 2.5 bytes, a constant one an eighth of a byte.
 */
#ifndef STORE_F32CODE_H
#define STORE_F32CODE_H

#include <stddef.h>
#include <stdint.h>

#include "store/journal.h"

/* The most bytes f32code_put writes for n values. */
#define F32CODE_MAX(n) (4 + 5 * (size_t) (n))

/*
 * Whether the double bit pattern bits is a float32 widened: zero, an
 * infinity or a normal float32 (not a NaN, not a float32 subnormal, so
 * that widening it back, f32code_widen, is the same bit operation on
 * every machine); *f its 32-bit pattern. 1 or 0.
 */
int f32code_exact(uint64_t bits, uint32_t *f);

/* The double bits of f32code_exact's pattern f into *bits: 0, or -1 if
 * f is none of them. */
int f32code_widen(uint32_t f, uint64_t *bits);

/* Code the values of the n samples at s (n >= 1, each f32code_exact)
 * at p; returns the byte after. */
uint8_t *f32code_put(uint8_t *p, const store_sample *s, size_t n);

/* A decoder of f32code_put's n values from p (bounded by end). */
typedef struct f32code_dec {
	const uint8_t *p, *end;
	uint64_t       left;  /* values still to read */
	uint64_t       acc;   /* bits read ahead, low first */
	unsigned       nacc;  /* how many */
	unsigned       k;     /* the run's width */
	unsigned       run;   /* differences left in the run */
	uint32_t       f;     /* the last pattern */
	int            first; /* the first value is still to read */
} f32code_dec;

void f32code_dec_init(
    f32code_dec *d, const uint8_t *p, const uint8_t *end, uint64_t n);

/* The next value's double bits into *bits: 0, or -1 if the code does not
 * parse (or none is left). */
int f32code_next(f32code_dec *d, uint64_t *bits);

/* After the last value, d->p is where the code ends. */

/* The end of the code of n values at p without decoding them, or NULL
 * if it runs past end. */
const uint8_t *f32code_skip(const uint8_t *p, const uint8_t *end, uint64_t n);

#endif
