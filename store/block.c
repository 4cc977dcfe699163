/*
 * block: the compressed block codec. docs/storage-block.md is the normative
 * description of the format; this file implements it.
 *
 * Every sample after the first is three residuals, each written with an
 * adaptive Rice code: the step's delta-of-delta; the time delta less the
 * median of the last three, counted in a decimal unit (1 ns, 1 us, ...)
 * that follows the data; and the value's bit pattern less a prediction
 * (previous value, linear extrapolation or moving average, whichever has
 * been best lately), with the trailing zero bits all values share dropped.
 * Encoder and decoder keep the same block_model and advance it with the
 * same functions, so they cannot drift apart, and resuming an encoder is
 * decoding its block.
 */
#include "store/block.h"

#include <string.h>

#include "store/be.h"

#define FORMAT_VERSION 1
/* Bits of stream a block can hold after its header. */
#define STREAM_BITS ((BLOCK_MAX_BYTES - BLOCK_HEADER_SIZE) * 8)

/* Rice quotients from QMAX up are written as an escape: QMAX zeros, the
 * new scale (time unit or value shift, in UNIT_BITS or SHIFT_BITS), the
 * bit length of the residual in LEN_BITS and its bits below the top one. */
#define QMAX 16
#define LEN_BITS 7
#define UNIT_BITS 5
#define SHIFT_BITS 6

/* The time unit is 10^unit ns, unit <= UNIT_MAX (fits an int64). It goes
 * up only by at least UNIT_RAISE decimal digits, the value shift by at
 * least SHIFT_RAISE bits: a raise costs an escape now and, if it was a
 * coincidence, another one at the next sample. */
#define UNIT_MAX 18
#define UNIT_RAISE 3
#define SHIFT_RAISE 12

/* Moving averages, as shifts: code lengths (kept with MEAN_W fractional
 * bits, weight 1/16), value predictor scores (decay 1/32) and the moving
 * average value predictor (weight 1/16). */
#define MEAN_W 4
#define SCORE_W 5
#define AVG_W 4

/* Bits of the first sample (its value, verbatim) and the most any later
 * sample can take: three escapes with 63 bits of residual each, plus the
 * unit and the shift (269 bits). The append check computes the exact size
 * of each sample instead; this bound is for the documentation and tests. */
#define FIRST_SAMPLE_BITS 64
#define SAMPLE_MAX_BITS (3 * (QMAX + LEN_BITS + 63) + UNIT_BITS + SHIFT_BITS)

_Static_assert(STREAM_BITS < 65536, "bit count must fit the u16 header");
_Static_assert(STREAM_BITS > FIRST_SAMPLE_BITS + SAMPLE_MAX_BITS,
    "a block holds at least two samples");

enum { F_STEP, F_TIME, F_VALUE };

static const uint64_t pow10_tab[UNIT_MAX + 1]
    = { 1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000,
	      1000000000, 10000000000, 100000000000, 1000000000000,
	      10000000000000, 100000000000000, 1000000000000000,
	      10000000000000000, 100000000000000000, 1000000000000000000 };

/* --- integer helpers --------------------------------------------------- */

/* Bits of x without its leading zeros; 0 for 0. (__builtin_clzll, a GCC
 * and Clang builtin, compiles to one instruction.) */
static inline unsigned
bitlen(uint64_t x)
{
	return 64 - (unsigned) __builtin_clzll(x | 1) - (x == 0);
}

static inline uint64_t
zigzag(uint64_t x)
{
	return (x << 1) ^ (0 - (x >> 63));
}

static inline uint64_t
unzigzag(uint64_t u)
{
	return (u >> 1) ^ (0 - (u & 1));
}

/* Arithmetic shift right of a two's complement number held in a uint64
 * (GCC and Clang define >> of a negative int64 so; C11 leaves it to the
 * implementation). */
static inline uint64_t
asr(uint64_t x, unsigned s)
{
	return (uint64_t) ((int64_t) x >> s);
}

static inline int64_t
to_i64(uint64_t u)
{
	return u <= INT64_MAX ? (int64_t) u : -(int64_t) ~u - 1;
}

/* Decimal trailing zeros of x, at most UNIT_MAX (so for 0 too). */
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

/* --- the model shared by encoder and decoder --------------------------- */

/* The Rice parameter of a stream: its recent mean code length, rounded
 * down (measured best: a Rice code wants k a little below the typical
 * length). At most 63, so that shifts by k stay defined. */
static inline unsigned
rice_k(uint32_t mean_len)
{
	unsigned k = mean_len >> MEAN_W;

	return k < 63 ? k : 63;
}

/* Size in bits of the code of u with Rice parameter k, or of its escape
 * (with a scale field of scale_bits) when the quotient is too big or the
 * scale changes. */
static inline unsigned
code_bits(uint64_t u, unsigned k, unsigned scale_bits, int change)
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
	m->step      = step;
	m->time      = time;
	m->value     = value;
	m->value2    = value;
	m->value_avg = value;
}

/* The predicted time delta: the median of the last three (robust to one
 * pause, such as an evaluation, where the previous delta is not). */
static inline uint64_t
time_predict(const block_model *m)
{
	int64_t a = to_i64(m->time_delta[0]), b = to_i64(m->time_delta[1]);
	int64_t c  = to_i64(m->time_delta[2]);
	int64_t lo = a < b ? a : b, hi = a < b ? b : a;

	hi = hi < c ? hi : c;
	return (uint64_t) (lo > hi ? lo : hi);
}

/*
 * The predicted bit pattern of the next value with the given shift: the
 * previous value, 2 * previous - the one before (counters, schedules) or
 * the moving average (noise around a slow trend), whichever has the best
 * score; ties go to the earlier. The prediction is moved onto the
 * lattice of the previous value plus multiples of 2^shift, so that the
 * residual keeps the trailing zeros the shift drops.
 */
static inline uint64_t
value_predict(const block_model *m, unsigned shift)
{
	const uint32_t *c   = m->pred_score;
	uint64_t        lin = 2 * m->value - m->value2, avg = m->value_avg;
	uint64_t        p    = c[1] >= c[2] ? lin : avg;
	uint32_t        best = c[1] >= c[2] ? c[1] : c[2];

	/* selects, not branches: the choice is as good as random on noise */
	p = c[0] >= best ? m->value : p;
	return m->value + ((p - m->value) & ~(((uint64_t) 1 << shift) - 1));
}

/* A predictor's score decays by 1/2^SCORE_W and gains the leading zeros of
 * its error's magnitude: the higher, the better it has done lately. */
static inline uint32_t
score_step(uint32_t score, uint64_t err)
{
	err ^= asr(err, 63);
	return score - (score >> SCORE_W)
	    + (uint32_t) __builtin_clzll(err | 1);
}

/* A code length mean after a new length, which weighs 1/2^w; rounded to
 * nearest so that a constant length is a fixed point. */
static inline uint32_t
mean_step(uint32_t mean, unsigned len, unsigned w)
{
	return (mean * ((1u << w) - 1) + (len << MEAN_W) + ((1u << w) >> 1))
	    >> w;
}

/*
 * Advance the code statistics of the model by one sample (not the first):
 * the bit lengths of its three residual codes, and the time unit and value
 * shift they were coded with. The code length means start with the second
 * residual of the block (the first deltas say little about later ones) and
 * weigh new lengths by 1, 1/2, 1/4, 1/8, then 1/16.
 */
static inline void
model_codes(block_model *m, unsigned ls, unsigned lt, unsigned lv,
    unsigned unit, unsigned shift)
{
	uint32_t *mean = m->mean_len;

	if (m->n >= 16) { /* the usual case: constant shifts */
		mean[F_STEP]  = mean_step(mean[F_STEP], ls, MEAN_W);
		mean[F_TIME]  = mean_step(mean[F_TIME], lt, MEAN_W);
		mean[F_VALUE] = mean_step(mean[F_VALUE], lv, MEAN_W);
	} else if (m->n > 0) {
		unsigned w    = bitlen(m->n) - 1;
		mean[F_STEP]  = mean_step(mean[F_STEP], ls, w);
		mean[F_TIME]  = mean_step(mean[F_TIME], lt, w);
		mean[F_VALUE] = mean_step(mean[F_VALUE], lv, w);
	}
	m->unit  = (uint8_t) unit;
	m->shift = (uint8_t) shift;
	m->n++;
}

/*
 * Advance the sample part of the model by one sample (not the first): its
 * step and time deltas and its value. After the first delta of the block
 * (first != 0) the time median is that delta.
 */
static inline void
model_values(block_model *m, int first, uint64_t step_delta,
    uint64_t time_delta, uint64_t value)
{
	uint32_t *sc = m->pred_score;

	sc[0] = score_step(sc[0], value - m->value);
	sc[1] = score_step(sc[1], value - (2 * m->value - m->value2));
	sc[2] = score_step(sc[2], value - m->value_avg);
	m->value_avg += asr(value - m->value_avg, AVG_W);
	m->value2 = m->value;
	m->value  = value;
	m->step += step_delta;
	m->step_delta = step_delta;
	m->time += time_delta;
	m->time_delta[2] = first ? time_delta : m->time_delta[1];
	m->time_delta[1] = first ? time_delta : m->time_delta[0];
	m->time_delta[0] = time_delta;
}

/* --- encoder ----------------------------------------------------------- */

/* Write the n low bits of v (n <= 57, v < 2^n) after the stream. The
 * caller has checked the room; the 8 bytes of slack after the buffer let
 * the 64-bit read-modify-write run to the last byte. */
static inline void
put_bits(block_enc *e, uint64_t v, unsigned n)
{
	uint8_t *p   = e->buf + BLOCK_HEADER_SIZE + (e->bits >> 3);
	unsigned off = e->bits & 7;

	if (n == 0)
		return;
	be_put64(p, be_get64(p) | v << (64 - off - n));
	e->bits += n;
}

/* put_bits for up to 64 bits. */
static inline void
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
 * quotient is QMAX or more or the scale changes. */
static inline void
put_code(block_enc *e, uint64_t u, unsigned k, unsigned scale_bits,
    unsigned scale, int change)
{
	uint64_t q = u >> k;
	unsigned n;

	if (q < QMAX && !change) {
		uint64_t low = u & (((uint64_t) 1 << k) - 1);
		if (q + 1 + k <= 57) {
			put_bits(
			    e, (uint64_t) 1 << k | low, (unsigned) q + 1 + k);
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
 * The time residual res (time delta less its prediction) in the current
 * unit, zigzagged. The unit goes down when res is not a multiple of it; it
 * goes up when res and the last two times are multiples of 1000 units
 * (times the caller rounded to us or ms move to that unit at once; raw ns
 * times stay at 1 ns). The new unit is the largest power of ten dividing
 * all three, and *change tells that an escape must carry it.
 */
static uint64_t
time_code(const block_model *m, int64_t time, int64_t res, unsigned *unit,
    int *change)
{
	unsigned u = m->unit;
	int64_t  x = res, prev = to_i64(m->time);

	*unit   = u;
	*change = 0;
	if (res == 0)
		return 0;
	if (u > 0) {
		x = res / (int64_t) pow10_tab[u];
		if (x * (int64_t) pow10_tab[u] != res)
			goto rescale;
	}
	if (u + UNIT_RAISE <= UNIT_MAX && x % 1000 == 0
	    && time % (int64_t) pow10_tab[u + UNIT_RAISE] == 0
	    && prev % (int64_t) pow10_tab[u + UNIT_RAISE] == 0)
		goto rescale;
	return zigzag((uint64_t) x);
rescale:
	u = dec_tz(res);
	if (dec_tz(time) < u)
		u = dec_tz(time);
	if (dec_tz(prev) < u)
		u = dec_tz(prev);
	*unit   = u;
	*change = 1;
	return zigzag((uint64_t) (res / (int64_t) pow10_tab[u]));
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
	uint64_t     bits, ds, dt, r, us, ut, uv;
	unsigned     unit, shift, k[3], c[3];
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

	ds = step - m->step;
	us = zigzag(ds - m->step_delta);
	dt = (uint64_t) time_ns - m->time;
	ut = time_code(
	    m, time_ns, to_i64(dt - time_predict(m)), &unit, &tchange);
	r     = bits - m->value;
	shift = m->shift;
	if (r != 0) {
		unsigned t = (unsigned) __builtin_ctzll(r);
		if (t < shift || t >= shift + SHIFT_RAISE) {
			shift   = t;
			vchange = 1;
		}
	}
	uv = zigzag(asr(bits - value_predict(m, shift), shift));

	for (int i = 0; i < 3; i++)
		k[i] = rice_k(m->mean_len[i]);
	c[F_STEP]  = code_bits(us, k[F_STEP], 0, 0);
	c[F_TIME]  = code_bits(ut, k[F_TIME], UNIT_BITS, tchange);
	c[F_VALUE] = code_bits(uv, k[F_VALUE], SHIFT_BITS, vchange);
	if (e->bits + c[0] + c[1] + c[2] > STREAM_BITS)
		return BLOCK_FULL;

	put_code(e, us, k[F_STEP], 0, 0, 0);
	put_code(e, ut, k[F_TIME], UNIT_BITS, unit, tchange);
	put_code(e, uv, k[F_VALUE], SHIFT_BITS, shift, vchange);
	model_values(m, e->count == 1, ds, dt, bits);
	model_codes(m, bitlen(us), bitlen(ut), bitlen(uv), unit, shift);
	for (int i = 0; i < 3; i++)
		e->field_bits[i] += c[i];
	e->count++;
	return BLOCK_OK;
}

/* Fill in the header and return the block. */
const uint8_t *
block_enc_data(block_enc *e, size_t *len)
{
	uint8_t *h   = e->buf;
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

const uint8_t *
block_enc_stream(const block_enc *e, size_t *len)
{
	*len = (e->bits + 7) / 8;
	return e->buf + BLOCK_HEADER_SIZE;
}

void
block_enc_clear(block_enc *e)
{
	/* The stream's bytes and the 8 an escape's read-modify-write may
	 * have touched past them; the header is written only by
	 * block_enc_data. */
	size_t used = BLOCK_HEADER_SIZE + (e->bits + 7) / 8 + 8;

	memset(e->buf, 0, used < sizeof e->buf ? used : sizeof e->buf);
	e->bits       = 0;
	e->count      = 0;
	e->first_step = 0;
	e->first_time = 0;
	memset(&e->m, 0, sizeof e->m);
	memset(e->field_bits, 0, sizeof e->field_bits);
}

/* --- decoder ----------------------------------------------------------- */

/*
 * Check a block's header and fill *out and *bits. Everything the decoder
 * relies on is checked here: length, version, a bit count that matches the
 * length, zero padding, and a sample count the bits can hold (each sample
 * after the first takes at least 3 bits), so that decoding a lying header
 * ends early. Returns BLOCK_OK or BLOCK_CORRUPT.
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
		if (b != 0 || out->first_step || out->last_step
		    || out->first_time || out->last_time)
			return BLOCK_CORRUPT;
	} else {
		if (b < FIRST_SAMPLE_BITS
		    || (b - FIRST_SAMPLE_BITS) / 3 < count - 1)
			return BLOCK_CORRUPT;
		if (out->first_step > out->last_step)
			return BLOCK_CORRUPT;
		if (count == 1
		    && (b != FIRST_SAMPLE_BITS
		        || out->first_step != out->last_step
		        || out->first_time != out->last_time))
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

int
block_dec_init_stream(block_dec *d, const void *stream, size_t nbytes,
    uint32_t count, uint64_t first_step, int64_t first_time)
{
	memset(d, 0, sizeof *d);
	/* As parse_header: room for the count (each sample after the
	 * first takes at least 3 bits), so a lying count ends early. */
	if (stream == NULL || count == 0
	    || nbytes > BLOCK_MAX_BYTES - BLOCK_HEADER_SIZE
	    || nbytes * 8 < FIRST_SAMPLE_BITS
	    || (nbytes * 8 - FIRST_SAMPLE_BITS) / 3 < count - 1) {
		d->bad = 1;
		return BLOCK_CORRUPT;
	}
	d->stream = stream;
	d->nbytes = (uint32_t) nbytes;
	d->bitend = (uint32_t) nbytes * 8;
	d->left   = count;
	d->bare   = 1;
	model_start(&d->m, first_step, (uint64_t) first_time, 0);
	return BLOCK_OK;
}

/* Whether a bare stream's last sample ends at pos as its encoder left
 * it: within the last byte, the bits after it zero. */
static int
bare_end_ok(const block_dec *d, uint32_t pos)
{
	if (pos > d->bitend || d->bitend - pos >= 8)
		return 0;
	return pos == d->bitend
	    || (d->stream[d->nbytes - 1] & (0xffu >> (pos & 7))) == 0;
}

/* The 64 bits of stream s (nbytes long) from bit pos on, zeros past its
 * end: reading never leaves the block, and an overrun is caught by the
 * check of the position after each sample. */
static inline uint64_t
peek_at(const uint8_t *s, uint32_t nbytes, uint32_t pos)
{
	uint32_t byte = pos >> 3;
	uint64_t w    = 0;

	if (byte + 8 <= nbytes) {
		w = be_get64(s + byte);
	} else {
		for (uint32_t i = byte; i < byte + 8; i++)
			w = w << 8 | (i < nbytes ? s[i] : 0);
	}
	return w << (pos & 7);
}

/* The n bits (n <= 64) at bit pos. */
static uint64_t
take(const uint8_t *s, uint32_t nbytes, uint32_t pos, unsigned n)
{
	uint64_t v = 0;

	if (n > 32) {
		v = (peek_at(s, nbytes, pos) >> (96 - n)) << 32;
		pos += n - 32;
		n = 32;
	}
	if (n > 0)
		v |= peek_at(s, nbytes, pos) >> (64 - n);
	return v;
}

/* A window on the stream: w holds the bits from pos on, of which avail
 * (57 to 64) are real. Most samples decode from one window. Only ever a
 * local, so that the compiler keeps it in registers. */
typedef struct bitwin {
	const uint8_t *s;
	uint32_t       nbytes;
	uint32_t       pos;
	uint64_t       w;
	unsigned       avail;
} bitwin;

static inline void
win_load(bitwin *b)
{
	b->w     = peek_at(b->s, b->nbytes, b->pos);
	b->avail = 64 - (b->pos & 7);
}

/* What read_code_slow decoded: the residual, where it ends, the scale of
 * an escape (unchanged if none) and whether its length was impossible. */
typedef struct slow_code {
	uint64_t u;
	uint32_t pos;
	unsigned scale;
	int      bad;
} slow_code;

/* read_code for what the window cannot do: a code running past it, a
 * long one, or an escape. Takes and returns values, so that nothing of
 * the caller's has its address taken. */
static slow_code
read_code_slow(bitwin b, unsigned k, unsigned scale_bits, unsigned scale)
{
	slow_code r = { 0, b.pos, scale, 0 };
	unsigned  q, n;

	q = (unsigned) __builtin_clzll(peek_at(b.s, b.nbytes, r.pos) | 1);
	if (q < QMAX) {
		r.pos += q + 1;
		r.u = (uint64_t) q << k | take(b.s, b.nbytes, r.pos, k);
		r.pos += k;
		return r;
	}
	r.pos += QMAX;
	if (scale_bits) {
		r.scale = (unsigned) take(b.s, b.nbytes, r.pos, scale_bits);
		r.pos += scale_bits;
	}
	n = (unsigned) take(b.s, b.nbytes, r.pos, LEN_BITS);
	r.pos += LEN_BITS;
	if (n > 64) {
		r.bad = 1;
	} else if (n > 0) {
		r.u = (uint64_t) 1 << (n - 1)
		    | take(b.s, b.nbytes, r.pos, n - 1);
		r.pos += n - 1;
	}
	return r;
}

/* Read one code with Rice parameter k from the window. An escape sets
 * *scale (when scale_bits is not 0), and *bad if its length is
 * impossible. */
static inline uint64_t
read_code(
    bitwin *b, unsigned k, unsigned scale_bits, unsigned *scale, int *bad)
{
	unsigned q = (unsigned) __builtin_clzll(b->w | 1);
	unsigned n = q + 1 + k;
	uint64_t u;

	if (q >= QMAX || n >= b->avail) {
		slow_code r = read_code_slow(*b, k, scale_bits, *scale);
		*scale      = r.scale;
		*bad |= r.bad;
		b->pos = r.pos;
		win_load(b);
		return r.u;
	}
	/* the one bit and the k after it are 2^k + the low bits of u */
	u = (b->w >> (64 - n)) + (((uint64_t) q - 1) << k);
	b->w <<= n;
	b->avail -= n;
	b->pos += n;
	return u;
}

/*
 * Decode up to BLOCK_DEC_BATCH samples into the decoder's buffer, in two
 * loops over the batch, each with few enough live values for the
 * registers: the first reads the codes (it needs only the window and the
 * code statistics), the second rebuilds the samples from the residuals.
 * Both stop at a corrupt sample, which sets d->bad; the samples before it
 * are still returned. Corrupt: a code that runs past the stream or has an
 * impossible length or unit, a step that wraps around, or a last sample
 * that does not end the stream exactly on the header's last step and
 * time.
 */
static void
dec_fill(block_dec *d)
{
	block_model m     = d->m;
	uint32_t    fb[3] = { 0, 0, 0 };
	uint32_t    index = d->index, bitend = d->bitend;
	uint32_t todo = d->left < BLOCK_DEC_BATCH ? d->left : BLOCK_DEC_BATCH;
	uint64_t u[BLOCK_DEC_BATCH][3];
	uint8_t  unit[BLOCK_DEC_BATCH], shift[BLOCK_DEC_BATCH];
	unsigned i, n = 0, bad = 0;
	bitwin   b = { d->stream, d->nbytes, d->bitpos, 0, 0 };

	if (index == 0 && todo > 0) {
		model_start(&m, m.step, m.time, take(b.s, b.nbytes, 0, 64));
		b.pos = FIRST_SAMPLE_BITS;
		fb[F_VALUE] += FIRST_SAMPLE_BITS;
		d->buf_step[0]  = m.step;
		d->buf_time[0]  = m.time;
		d->buf_value[0] = m.value;
		n               = 1;
	}
	for (i = n; i < todo; i++) {
		unsigned ut_unit = m.unit, uv_shift = m.shift, none = 0;
		uint32_t p0  = b.pos, p1, p2;
		int      err = 0;

		win_load(&b);
		u[i][F_STEP] = read_code(
		    &b, rice_k(m.mean_len[F_STEP]), 0, &none, &err);
		p1           = b.pos;
		u[i][F_TIME] = read_code(
		    &b, rice_k(m.mean_len[F_TIME]), UNIT_BITS, &ut_unit, &err);
		p2            = b.pos;
		u[i][F_VALUE] = read_code(&b, rice_k(m.mean_len[F_VALUE]),
		    SHIFT_BITS, &uv_shift, &err);
		if (err || ut_unit > UNIT_MAX || b.pos > bitend) {
			bad = 1;
			break;
		}
		unit[i]  = (uint8_t) ut_unit;
		shift[i] = (uint8_t) uv_shift;
		model_codes(&m, bitlen(u[i][F_STEP]), bitlen(u[i][F_TIME]),
		    bitlen(u[i][F_VALUE]), ut_unit, uv_shift);
		fb[F_STEP] += p1 - p0;
		fb[F_TIME] += p2 - p1;
		fb[F_VALUE] += b.pos - p2;
	}
	for (; n < i; n++) {
		uint64_t ds = m.step_delta + unzigzag(u[n][F_STEP]);
		uint64_t dt = time_predict(&m)
		    + unzigzag(u[n][F_TIME]) * pow10_tab[unit[n]];
		uint64_t v = value_predict(&m, shift[n])
		    + (unzigzag(u[n][F_VALUE]) << shift[n]);

		if (m.step + ds < m.step) {
			bad = 1;
			break;
		}
		model_values(&m, index + n == 1, ds, dt, v);
		d->buf_step[n]  = m.step;
		d->buf_time[n]  = m.time;
		d->buf_value[n] = m.value;
	}
	if (!bad && n == d->left
	    && (d->bare ? !bare_end_ok(d, b.pos)
	                : b.pos != bitend || m.step != d->last_step
	                || m.time != d->last_time)) {
		bad = 1;
		n--; /* the last sample is not returned */
	}
	d->m      = m;
	d->bitpos = b.pos;
	d->index  = index + n;
	d->left   = bad ? 0 : d->left - n;
	d->bad    = (int) bad;
	d->nbuf   = (uint8_t) n;
	d->next   = 0;
	for (int f = 0; f < 3; f++)
		d->field_bits[f] += fb[f];
}

/* The next sample. Returns 1, 0 at the end, or -1 (and -1 from then on)
 * once the samples before a corrupt one have been returned. */
int
block_dec_next(block_dec *d, uint64_t *step, int64_t *time_ns, double *v)
{
	unsigned i;

	if (d->next == d->nbuf) {
		if (d->left == 0)
			return d->bad ? -1 : 0;
		dec_fill(d);
		if (d->nbuf == 0)
			return -1;
	}
	i        = d->next++;
	*step    = d->buf_step[i];
	*time_ns = to_i64(d->buf_time[i]);
	memcpy(v, &d->buf_value[i], sizeof *v);
	return 1;
}

/*
 * Decode the whole block and take over its bytes and the decoder's model:
 * the encoder then continues exactly as if it had encoded the samples
 * itself. data may be e's own buffer (it is decoded before e changes). On
 * BLOCK_CORRUPT *e is left empty (as after block_enc_init).
 */
int
block_enc_resume(block_enc *e, const void *data, size_t len)
{
	block_dec d;
	uint64_t  step;
	int64_t   t;
	double    v;
	int       rc = BLOCK_CORRUPT;

	if (block_dec_init(&d, data, len) == BLOCK_OK)
		while ((rc = block_dec_next(&d, &step, &t, &v)) == 1)
			;
	if (rc != 0) {
		block_enc_init(e);
		return BLOCK_CORRUPT;
	}
	memmove(e->buf, data, len);
	memset(e->buf + len, 0, sizeof e->buf - len);
	e->bits       = d.bitend;
	e->count      = d.index;
	e->first_step = get_le(e->buf + 8, 8);
	e->first_time = to_i64(get_le(e->buf + 24, 8));
	e->m          = d.m;
	memcpy(e->field_bits, d.field_bits, sizeof e->field_bits);
	return BLOCK_OK;
}
