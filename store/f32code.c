/*
 * f32code: format 8's code of a journal group's float32 values (the
 * layout: f32code.h).
 */
#include "store/f32code.h"

#include <string.h>

#include "wire/le.h"

#define RUN 8 /* differences a run */

int
f32code_exact(uint64_t bits, uint32_t *f)
{
	uint32_t s = (uint32_t) (bits >> 63) << 31;
	uint64_t e = bits >> 52 & 0x7ff, m = bits & 0xfffffffffffffull;

	if (e == 0x7ff || e == 0) {
		if (m != 0)
			return 0; /* a NaN, or a double subnormal */
		*f = s | (e ? 0x7f800000u : 0);
		return 1;
	}
	if (e < 1023 - 126 || e > 1023 + 127 || (m & 0x1fffffff) != 0)
		return 0;
	*f = s | (uint32_t) (e - 1023 + 127) << 23 | (uint32_t) (m >> 29);
	return 1;
}

int
f32code_widen(uint32_t f, uint64_t *bits)
{
	uint64_t s = (uint64_t) (f >> 31) << 63, e = f >> 23 & 0xff;
	uint64_t m = f & 0x7fffff;

	if (e == 0 || e == 0xff) {
		if (m != 0)
			return -1;
		*bits = s | (e ? 0x7ffull << 52 : 0);
		return 0;
	}
	*bits = s | (e - 127 + 1023) << 52 | m << 29;
	return 0;
}

/* The 32-bit pattern of s's value (f32code_exact, which the caller
 * checked). */
static uint32_t
pattern(const store_sample *s)
{
	uint64_t bits;
	uint32_t f = 0;

	memcpy(&bits, &s->value, sizeof(bits));
	(void) f32code_exact(bits, &f);
	return f;
}

/* The zigzag of the difference b - a as signed 32-bit integers. */
static inline uint32_t
zz32(uint32_t a, uint32_t b)
{
	uint32_t d = b - a;

	return d << 1 ^ (0u - (d >> 31));
}

uint8_t *
f32code_put(uint8_t *p, const store_sample *s, size_t n)
{
	uint32_t prev = pattern(&s[0]);

	wire_put32(p, prev);
	p += 4;
	for (size_t i = 1; i < n; i += RUN) {
		size_t   m = n - i < RUN ? n - i : RUN;
		uint32_t z[RUN], or = 0;
		unsigned k = 0, nacc = 0;
		uint64_t acc = 0;

		for (size_t j = 0; j < m; j++) {
			uint32_t f = pattern(&s[i + j]);

			z[j] = zz32(prev, f);
			or |= z[j];
			prev = f;
		}
		if (or != 0)
			k = 32 - (unsigned) __builtin_clz(or);
		*p++ = (uint8_t) k;
		for (size_t j = 0; j < m; j++) {
			acc |= (uint64_t) z[j] << nacc;
			nacc += k;
			while (nacc >= 8) {
				*p++ = (uint8_t) acc;
				acc >>= 8;
				nacc -= 8;
			}
		}
		if (nacc > 0)
			*p++ = (uint8_t) acc;
	}
	return p;
}

void
f32code_dec_init(
    f32code_dec *d, const uint8_t *p, const uint8_t *end, uint64_t n)
{
	d->p     = p;
	d->end   = end;
	d->left  = n;
	d->acc   = 0;
	d->nacc  = 0;
	d->k     = 0;
	d->run   = 0;
	d->f     = 0;
	d->first = 1;
}

int
f32code_next(f32code_dec *d, uint64_t *bits)
{
	if (d->left == 0)
		return -1;
	if (d->first) {
		if (d->end - d->p < 4)
			return -1;
		d->f = wire_get32(d->p);
		d->p += 4;
		d->first = 0;
	} else {
		uint32_t z;

		if (d->run == 0) {
			/* A run: its width, then its bits, all there. */
			d->run  = d->left < RUN ? (unsigned) d->left : RUN;
			d->acc  = 0;
			d->nacc = 0;
			if (d->p >= d->end || (d->k = *d->p++) > 32
			    || (uint64_t) (d->end - d->p)
			        < ((uint64_t) d->run * d->k + 7) / 8)
				return -1;
		}
		while (d->nacc < d->k) {
			d->acc |= (uint64_t) *d->p++ << d->nacc;
			d->nacc += 8;
		}
		z = (uint32_t) (d->k == 32 ? d->acc
		                           : d->acc & ((1ull << d->k) - 1));
		d->acc >>= d->k;
		d->nacc -= d->k;
		d->run--;
		d->f += (z >> 1) ^ (0u - (z & 1));
	}
	d->left--;
	return f32code_widen(d->f, bits);
}

const uint8_t *
f32code_skip(const uint8_t *p, const uint8_t *end, uint64_t n)
{
	if (n == 0 || end - p < 4)
		return NULL;
	p += 4;
	for (uint64_t i = 1; i < n; i += RUN) {
		uint64_t m = n - i < RUN ? n - i : RUN, len;

		if (p >= end || *p > 32)
			return NULL;
		len = (m * *p++ + 7) / 8;
		if ((uint64_t) (end - p) < len)
			return NULL;
		p += len;
	}
	return p;
}
