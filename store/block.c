/*
 * block: the compressed block codec. docs/storage-block.md is the normative
 * description of the format; this file implements it.
 *
 * Every sample after the first is three residuals, each written with an
 * adaptive Rice code: the step's delta-of-delta, the time's delta-of-delta
 * and the value's bit-pattern difference to the previous value with its
 * common trailing zeros dropped. Encoder and decoder keep the same
 * block_model and advance it with the same function, so they cannot drift
 * apart, and resuming an encoder is decoding the block.
 */
#include "store/block.h"

#include <string.h>

#define FORMAT_VERSION 1
/* Bits of stream a block can hold after its header. */
#define STREAM_BITS ((BLOCK_MAX_BYTES - BLOCK_HEADER_SIZE) * 8)
/* Rice quotients from QMAX up are written as an escape instead. */
#ifndef QMAX
#define QMAX 16
#endif
/* The running mean of a stream covers about 2^MEAN_W samples. */
#ifndef MEAN_W
#define MEAN_W 4
#endif
#ifndef RICE_C
#define RICE_C 1
#endif
/* A residual counts at most this much in the running mean. */
#define MEAN_CAP ((uint64_t) 1 << 56)
/* The value shift goes up only when a residual has this many more
 * trailing zeros than the current shift: raising it costs an escape now
 * and probably another one to lower it again. */
#ifndef SHIFT_RAISE
#define SHIFT_RAISE 12
#endif
/* Likewise the time unit goes up only for a residual divisible by 1000
 * units; it goes up to at most 10^UNIT_MAX ns (fits an int64). */
#define UNIT_RAISE 3
#define UNIT_MAX 18
/* Bits of the new unit (times) and shift (values) in an escape. */
#define UNIT_BITS 5
#define SHIFT_BITS 6

enum { F_STEP, F_TIME, F_VALUE };

/* Bits of the bit length (0..64) of an escaped residual. */
#define LEN_BITS 7
/* Bits of the first sample (its value, verbatim) and the largest number of
 * bits any later sample can take: three escapes, each QMAX zeros, a 7-bit
 * length and up to 63 bits, plus the unit and shift fields of the time and
 * value escapes (269 bits). The append check computes the exact size. */
#define FIRST_SAMPLE_BITS 64
#define SAMPLE_MAX_BITS (3 * (QMAX + LEN_BITS + 63) + UNIT_BITS + SHIFT_BITS)

static const uint64_t pow10[UNIT_MAX + 1] = { 1, 10, 100, 1000, 10000,
	100000, 1000000, 10000000, 100000000, 1000000000, 10000000000,
	100000000000, 1000000000000, 10000000000000, 100000000000000,
	1000000000000000, 10000000000000000, 100000000000000000,
	1000000000000000000 };

_Static_assert(STREAM_BITS < 65536, "bit count must fit the u16 header");

static unsigned
bitlen(uint64_t x)
{
	return x ? 64 - (unsigned) __builtin_clzll(x) : 0;
}

static uint64_t
zigzag(uint64_t x)
{
	return (x << 1) ^ (0 - (x >> 63));
}

static uint64_t
unzigzag(uint64_t u)
{
	return (u >> 1) ^ (0 - (u & 1));
}

/* Arithmetic shift right of a two's complement number held in a uint64. */
static uint64_t
asr(uint64_t x, unsigned s)
{
	return (x >> s) | (((0 - (x >> 63)) << (63 - s)) << 1);
}

static int64_t
to_i64(uint64_t u)
{
	return u <= INT64_MAX ? (int64_t) u : -(int64_t) ~u - 1;
}

/* Decimal trailing zeros of x != 0, at most UNIT_MAX. */
static unsigned
dec_tz(int64_t x)
{
	unsigned n = 0;

	while (n < UNIT_MAX && x % 10 == 0) {
		x /= 10;
		n++;
	}
	return n;
}

static uint64_t
load_be64(const uint8_t *p)
{
	return (uint64_t) p[0] << 56 | (uint64_t) p[1] << 48 |
	    (uint64_t) p[2] << 40 | (uint64_t) p[3] << 32 |
	    (uint64_t) p[4] << 24 | (uint64_t) p[5] << 16 |
	    (uint64_t) p[6] << 8 | (uint64_t) p[7];
}

static void
store_be64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t) (v >> (56 - 8 * i));
}

static uint64_t
get_le(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void
put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t) (v >> (8 * i));
}

/* The Rice parameter of a stream: about log2 of its mean residual. */
#ifndef LOGMEAN
#define LOGMEAN 1
#endif
#ifndef LBIAS
#define LBIAS 0
#endif
static unsigned
rice_k(uint64_t mean)
{
#if LOGMEAN
	int k = (int)((mean + LBIAS) >> MEAN_W) - RICE_C;
	return k < 0 ? 0 : k > 63 ? 63 : (unsigned) k;
#else
	return bitlen(mean >> (MEAN_W + RICE_C));
#endif
}

static uint64_t
mean_log(uint64_t mean, uint64_t u, uint64_t n)
{
	unsigned w = n >= 16 ? MEAN_W : bitlen(n) - 1;
	uint64_t b = (uint64_t) bitlen(u) << MEAN_W;
	if (n == 0) return mean;
	return mean + (uint64_t)((int64_t)(b - mean) >> w);
}

__attribute__((unused)) static uint64_t
mean_next(uint64_t mean, uint64_t u)
{
	return mean - (mean >> MEAN_W) + (u < MEAN_CAP ? u : MEAN_CAP);
}

/* Size in bits of the code of u with Rice parameter k; an escape (forced
 * by `change`) carries a scale field of scale_bits besides the length and
 * the bits. */
static unsigned
rice_bits(uint64_t u, unsigned k, unsigned scale_bits, int change)
{
	uint64_t q = u >> k;

	if (q < QMAX && !change)
		return (unsigned) q + 1 + k;
	return QMAX + scale_bits + LEN_BITS + (u ? bitlen(u) - 1 : 0);
}

/* The model after the first sample of a block. */
static void
model_start(block_model *m, uint64_t step, uint64_t time, uint64_t value)
{
	memset(m, 0, sizeof *m);
	m->step  = step;
	m->time  = time;
	m->value = value;
	m->value2 = value;
	m->vema = value;
}

static uint64_t
__attribute__((unused)) snap(uint64_t p, uint64_t m1, unsigned s)
{
	return m1 + ((p - m1) & ~((((uint64_t) 1) << s) - 1));
}

#ifndef VPRED
#define VPRED 0
#endif
#ifndef VA
#define VA 3
#endif
static uint64_t
vpredict(const block_model *m, unsigned s)
{
#if VPRED == 0
	(void) s;
	return m->value;
#elif VPRED == 1
	return snap(m->vema, m->value, s);
#else
	const uint32_t *sc = m->vscore;
	if (sc[0] <= sc[1] && sc[0] <= sc[2])
		return m->value;
	if (sc[1] <= sc[2])
		return snap(2 * m->value - m->value2, m->value, s);
	return snap(m->vema, m->value, s);
#endif
}

static void
vtrack(block_model *m, uint64_t v)
{
	uint64_t p[3] = { m->value, 2 * m->value - m->value2, m->vema };
	for (int i = 0; i < 3; i++)
		m->vscore[i] += bitlen(zigzag(v - p[i])) - (m->vscore[i] >> 3);
	m->vema += asr(v - m->vema, VA);
	m->value2 = m->value;
	m->value = v;
}

/*
 * Advance the model by one sample given its three residuals and the time
 * unit and value shift they were coded with. Shared by encoder and decoder. Returns -1 when
 * the step would wrap around (only a corrupt block does that), else 0.
 */
static int
model_advance(block_model *m, uint64_t us, uint64_t ut, uint64_t uv,
    unsigned unit, unsigned shift)
{
	uint64_t prev = m->step;

	m->step_delta += unzigzag(us);
	m->step += m->step_delta;
	m->time_delta += unzigzag(ut) * pow10[unit];
	m->time += m->time_delta;
	vtrack(m, vpredict(m, shift) + (unzigzag(uv) << shift));
	m->unit          = unit;
	m->shift         = shift;
#if LOGMEAN
	m->mean[F_STEP]  = mean_log(m->mean[F_STEP], us, m->n);
	m->mean[F_TIME]  = mean_log(m->mean[F_TIME], ut, m->n);
	m->mean[F_VALUE] = mean_log(m->mean[F_VALUE], uv, m->n);
	m->n++;
#else
	m->mean[F_STEP]  = mean_next(m->mean[F_STEP], us);
	m->mean[F_TIME]  = mean_next(m->mean[F_TIME], ut);
	m->mean[F_VALUE] = mean_next(m->mean[F_VALUE], uv);
#endif
	return m->step >= prev ? 0 : -1;
}

/* --- encoder ----------------------------------------------------------- */

/* Write the n low bits of v (n <= 57, v < 2^n) after the stream. The
 * caller has checked the room; the 8 bytes of slack after the buffer let
 * the 64-bit read-modify-write run to the last byte. */
static void
put_bits(block_enc *e, uint64_t v, unsigned n)
{
	uint8_t *p   = e->buf + BLOCK_HEADER_SIZE + (e->bits >> 3);
	unsigned off = e->bits & 7;

	if (n == 0)
		return;
	store_be64(p, load_be64(p) | v << (64 - off - n));
	e->bits += n;
}

/* put_bits for up to 64 bits. */
static void
put_long(block_enc *e, uint64_t v, unsigned n)
{
	if (n > 32) {
		put_bits(e, v >> 32, n - 32);
		v &= 0xffffffffu;
		n = 32;
	}
	put_bits(e, v, n);
}

/* Write u as a Rice code with parameter k, or as an escape when the
 * quotient is QMAX or more or the scale changes (`change`): QMAX zeros, the
 * scale in scale_bits bits, the bit length of u less one in 6 bits and the
 * bits of u below its leading one. */
static void
put_rice(block_enc *e, uint64_t u, unsigned k, unsigned scale_bits,
    unsigned scale, int change)
{
	uint64_t q = u >> k;
	unsigned n;

	if (q < QMAX && !change) {
		uint64_t low = u & (((uint64_t) 1 << k) - 1);
		if (q + 1 + k <= 57) {
			put_bits(e, (uint64_t) 1 << k | low, (unsigned) q + 1 + k);
		} else {
			put_bits(e, 1, (unsigned) q + 1);
			put_long(e, low, k);
		}
		return;
	}
	e->bits += QMAX; /* the buffer past the stream is zero */
	put_bits(e, scale, scale_bits);
	n = bitlen(u);
	put_bits(e, n, LEN_BITS);
	if (n > 1)
		put_long(e, u & (((uint64_t) 1 << (n - 1)) - 1), n - 1);
}

/*
 * The zigzagged time residual: the delta-of-delta dod counted in the
 * current unit. The unit goes down when dod is not a multiple of it, and
 * up when dod is a multiple of 1000 units (times the caller rounded to
 * us or ms settle on that unit after one or two samples; raw ns times
 * almost never leave unit 1).
 */
static uint64_t
time_residual(const block_model *m, int64_t dod, unsigned *unit, int *change)
{
	int64_t x = dod;

	*unit   = m->unit;
	*change = 0;
	if (dod == 0)
		return 0;
	if (*unit > 0) {
		x = dod / (int64_t) pow10[*unit];
		if (x * (int64_t) pow10[*unit] != dod)
			goto rescale;
	}
	if (x % 1000 == 0 && *unit + UNIT_RAISE <= UNIT_MAX)
		goto rescale;
	return zigzag((uint64_t) x);
rescale:
	*unit   = dec_tz(dod);
	*change = 1;
	return zigzag((uint64_t) (dod / (int64_t) pow10[*unit]));
}

void
block_enc_init(block_enc *e)
{
	memset(e, 0, sizeof *e);
}

/*
 * Append one sample. The first sample goes to the header (step, time) and
 * 64 verbatim bits (value). For later samples the three residuals and
 * their exact code size are computed first: if they do not fit the block,
 * BLOCK_FULL is returned and nothing has changed. A step below the last
 * one returns BLOCK_ORDER, also with nothing changed.
 */
int
block_enc_append(block_enc *e, uint64_t step, int64_t time_ns, double v)
{
	block_model *m = &e->m;
	uint64_t     bits, us, ut, uv, r;
	unsigned     unit, shift, ks, kt, kv, cs, ct, cv;
	int          tchange, vchange = 0;

	memcpy(&bits, &v, sizeof bits);
	if (e->count == 0) {
		e->first_step = step;
		e->first_time = time_ns;
		model_start(m, step, (uint64_t) time_ns, bits);
		put_long(e, bits, 64);
		e->field_bits[F_VALUE] += FIRST_SAMPLE_BITS;
		e->count = 1;
		return BLOCK_OK;
	}
	if (step < m->step)
		return BLOCK_ORDER;

	us = zigzag(step - m->step - m->step_delta);
	ut = time_residual(m, to_i64((uint64_t) time_ns - m->time -
	                          m->time_delta),
	    &unit, &tchange);
	r     = bits - m->value;
	shift = m->shift;
	if (r != 0) {
		unsigned t = (unsigned) __builtin_ctzll(r);
		if (t < shift || t >= shift + SHIFT_RAISE) {
			shift   = t;
			vchange = 1;
		}
	}
	r = bits - vpredict(m, shift);
	uv = zigzag(asr(r, shift));
	ks = rice_k(m->mean[F_STEP]);
	kt = rice_k(m->mean[F_TIME]);
	kv = rice_k(m->mean[F_VALUE]);
	cs = rice_bits(us, ks, 0, 0);
	ct = rice_bits(ut, kt, UNIT_BITS, tchange);
	cv = rice_bits(uv, kv, SHIFT_BITS, vchange);
	if (e->bits + cs + ct + cv > STREAM_BITS)
		return BLOCK_FULL;

	put_rice(e, us, ks, 0, 0, 0);
	put_rice(e, ut, kt, UNIT_BITS, unit, tchange);
	put_rice(e, uv, kv, SHIFT_BITS, shift, vchange);
	model_advance(m, us, ut, uv, unit, shift);
	e->field_bits[F_STEP] += cs;
	e->field_bits[F_TIME] += ct;
	e->field_bits[F_VALUE] += cv;
	e->count++;
	return BLOCK_OK;
}

/* Fill in the header and return the block. */
const uint8_t *
block_enc_data(block_enc *e, size_t *len)
{
	uint8_t *h = e->buf;
	int      any = e->count > 0;

	h[0] = FORMAT_VERSION;
	h[1] = 0;
	put_le(h + 2, e->bits, 2);
	put_le(h + 4, e->count, 4);
	put_le(h + 8, any ? e->first_step : 0, 8);
	put_le(h + 16, any ? e->m.step : 0, 8);
	put_le(h + 24, any ? (uint64_t) e->first_time : 0, 8);
	put_le(h + 32, any ? e->m.time : 0, 8);
	*len = BLOCK_HEADER_SIZE + (e->bits + 7) / 8;
	return e->buf;
}

/* --- decoder ----------------------------------------------------------- */

/*
 * Check a block's header and fill *out and *bits. Everything the decoder
 * relies on is checked here: length, version, a bit count that matches the
 * length, zero padding, and a sample count the bits can hold (each sample
 * after the first takes at least 3 bits), so decoding ends early on a
 * lying header. Returns BLOCK_OK or BLOCK_CORRUPT.
 */
static int
parse_header(const uint8_t *p, size_t len, block_info *out, uint32_t *bits)
{
	uint32_t b, count;

	if (p == NULL || len < BLOCK_HEADER_SIZE || len > BLOCK_MAX_BYTES)
		return BLOCK_CORRUPT;
	if (p[0] != FORMAT_VERSION || p[1] != 0)
		return BLOCK_CORRUPT;
	b     = (uint32_t) get_le(p + 2, 2);
	count = (uint32_t) get_le(p + 4, 4);
	if (b > STREAM_BITS || len != BLOCK_HEADER_SIZE + (b + 7) / 8)
		return BLOCK_CORRUPT;
	if ((b & 7) && (p[len - 1] & (0xffu >> (b & 7))))
		return BLOCK_CORRUPT;
	out->count      = count;
	out->first_step = get_le(p + 8, 8);
	out->last_step  = get_le(p + 16, 8);
	out->first_time = to_i64(get_le(p + 24, 8));
	out->last_time  = to_i64(get_le(p + 32, 8));
	if (count == 0) {
		if (b != 0 || out->first_step || out->last_step ||
		    out->first_time || out->last_time)
			return BLOCK_CORRUPT;
	} else {
		if (b < FIRST_SAMPLE_BITS ||
		    (b - FIRST_SAMPLE_BITS) / 3 < count - 1)
			return BLOCK_CORRUPT;
		if (out->first_step > out->last_step)
			return BLOCK_CORRUPT;
		if (count == 1 && (b != FIRST_SAMPLE_BITS ||
		    out->first_step != out->last_step ||
		    out->first_time != out->last_time))
			return BLOCK_CORRUPT;
	}
	*bits = b;
	return BLOCK_OK;
}

int
block_peek(const void *data, size_t len, block_info *out)
{
	uint32_t bits;

	return parse_header(data, len, out, &bits);
}

int
block_dec_init(block_dec *d, const void *data, size_t len)
{
	const uint8_t *p = data;
	block_info     h;
	uint32_t       bits;

	memset(d, 0, sizeof *d);
	if (parse_header(p, len, &h, &bits) != BLOCK_OK) {
		d->bad = 1;
		return BLOCK_CORRUPT;
	}
	d->stream    = p + BLOCK_HEADER_SIZE;
	d->nbytes    = (uint32_t) (len - BLOCK_HEADER_SIZE);
	d->bitend    = bits;
	d->left      = h.count;
	d->last_step = h.last_step;
	d->last_time = (uint64_t) h.last_time;
	model_start(&d->m, h.first_step, (uint64_t) h.first_time, 0);
	return BLOCK_OK;
}

/* The next 64 bits of the stream from bitpos (at least 57 of them real),
 * zeros past its end: reading never leaves the block, and an overrun is
 * caught by the bitpos check after each sample. */
static uint64_t
peek(const block_dec *d)
{
	uint32_t byte = d->bitpos >> 3;
	uint64_t w    = 0;

	if (byte + 8 <= d->nbytes) {
		w = load_be64(d->stream + byte);
	} else {
		for (uint32_t i = byte; i < byte + 8; i++)
			w = w << 8 | (i < d->nbytes ? d->stream[i] : 0);
	}
	return w << (d->bitpos & 7);
}

/* Read n bits, n <= 57. */
static uint64_t
get_bits(block_dec *d, unsigned n)
{
	uint64_t w = peek(d);

	if (n == 0)
		return 0;
	d->bitpos += n;
	return w >> (64 - n);
}

/* Read n bits, n <= 64. */
static uint64_t
get_long(block_dec *d, unsigned n)
{
	uint64_t hi = 0;

	if (n > 32) {
		hi = get_bits(d, n - 32) << 32;
		n  = 32;
	}
	return hi | get_bits(d, n);
}

/* Read a Rice code with parameter k. An escape starts with the scale
 * (time unit, value shift) in scale_bits bits, stored in *scale. */
static uint64_t
get_rice(block_dec *d, unsigned k, unsigned scale_bits, unsigned *scale)
{
	uint64_t w = peek(d);
	unsigned q = w ? (unsigned) __builtin_clzll(w) : 64;
	unsigned n;

	if (q < QMAX) {
		if (q + 1 + k <= 57) {
			d->bitpos += q + 1 + k;
			return (uint64_t) q << k |
			    (k ? (w << (q + 1)) >> (64 - k) : 0);
		}
		d->bitpos += q + 1;
		return (uint64_t) q << k | get_long(d, k);
	}
	d->bitpos += QMAX;
	if (scale_bits)
		*scale = (unsigned) get_bits(d, scale_bits);
	n = (unsigned) get_bits(d, LEN_BITS);
	if (n == 0 || n > 64) {
		d->bad |= n > 64;
		return 0;
	}
	return (uint64_t) 1 << (n - 1) | get_long(d, n - 1);
}

/*
 * Decode one sample into the model; split, when not NULL, gets the bits
 * each field took. Returns 1, 0 at the end, or -1 (and stays failed) when
 * the stream overruns its length, a step wraps, or the last sample does
 * not end the stream exactly on the header's last step and time.
 */
static int
dec_sample(block_dec *d, uint32_t *split)
{
	block_model *m = &d->m;

	if (d->bad)
		return -1;
	if (d->left == 0)
		return 0;
	if (d->index == 0) {
		model_start(m, m->step, m->time, get_long(d, 64));
		if (split)
			split[F_VALUE] += FIRST_SAMPLE_BITS;
	} else {
		uint32_t p0 = d->bitpos, p1, p2;
		unsigned unit = m->unit, shift = m->shift, none = 0;
		uint64_t us, ut, uv;

		us = get_rice(d, rice_k(m->mean[F_STEP]), 0, &none);
		p1 = d->bitpos;
		ut = get_rice(d, rice_k(m->mean[F_TIME]), UNIT_BITS, &unit);
		p2 = d->bitpos;
		uv = get_rice(d, rice_k(m->mean[F_VALUE]), SHIFT_BITS, &shift);
		if (split) {
			split[F_STEP] += p1 - p0;
			split[F_TIME] += p2 - p1;
			split[F_VALUE] += d->bitpos - p2;
		}
		if (unit > UNIT_MAX || model_advance(m, us, ut, uv, unit, shift))
			goto fail;
	}
	if (d->bad || d->bitpos > d->bitend)
		goto fail;
	d->index++;
	if (--d->left == 0 &&
	    (d->bitpos != d->bitend || m->step != d->last_step ||
		m->time != d->last_time))
		goto fail;
	return 1;
fail:
	d->bad  = 1;
	d->left = 0;
	return -1;
}

int
block_dec_next(block_dec *d, uint64_t *step, int64_t *time_ns, double *v)
{
	int rc = dec_sample(d, NULL);

	if (rc == 1) {
		*step    = d->m.step;
		*time_ns = to_i64(d->m.time);
		memcpy(v, &d->m.value, sizeof *v);
	}
	return rc;
}

/*
 * Decode the whole block and take over its bytes and the decoder's model:
 * the encoder then continues exactly as if it had encoded the samples
 * itself. On BLOCK_CORRUPT *e is left empty (as after block_enc_init).
 */
int
block_enc_resume(block_enc *e, const void *data, size_t len)
{
	block_dec d;
	uint32_t  split[3] = { 0, 0, 0 };
	int       rc;

	block_enc_init(e);
	if (block_dec_init(&d, data, len) != BLOCK_OK)
		return BLOCK_CORRUPT;
	while ((rc = dec_sample(&d, split)) == 1)
		;
	if (rc < 0)
		return BLOCK_CORRUPT;
	memcpy(e->buf, data, len);
	e->bits       = d.bitend;
	e->count      = d.index;
	e->first_step = get_le(e->buf + 8, 8);
	e->first_time = to_i64(get_le(e->buf + 24, 8));
	e->m          = d.m;
	memcpy(e->field_bits, split, sizeof split);
	return BLOCK_OK;
}
