/*
 * Tests of the block codec (store/block.c): bit-exact round trips of any
 * step, time and double, step order, full blocks, resuming, the header,
 * and decoding corrupt or truncated blocks without crashing.
 */
#include "store/block.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/harness.h"

/* Most bits one sample after the first can take (docs/storage-block.md). */
#define SAMPLE_MAX_BITS 269
#define MAX_SAMPLES 20000
#define MAX_BLOCKS 400

typedef struct sample {
	uint64_t step;
	int64_t  time;
	uint64_t bits; /* the value's bit pattern */
} sample;

/* Encoded blocks back to back. */
typedef struct blocks {
	uint8_t bytes[MAX_BLOCKS * BLOCK_MAX_BYTES];
	size_t  len[MAX_BLOCKS], off[MAX_BLOCKS], n;
} blocks;

static sample in[MAX_SAMPLES];
static blocks out;

static uint64_t
rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15u);
	z          = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z          = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

static double
unit_rnd(uint64_t *s)
{
	return (double) (rnd(s) >> 11) / 9007199254740992.0;
}

static uint64_t
bits_of(double v)
{
	uint64_t b;
	memcpy(&b, &v, sizeof b);
	return b;
}

static double
double_of(uint64_t b)
{
	double v;
	memcpy(&v, &b, sizeof v);
	return v;
}

/* Move the block being built to out and start a new one. */
static int
flush(block_enc *e)
{
	size_t         len;
	const uint8_t *p = block_enc_data(e, &len);
	size_t         o = out.n ? out.off[out.n - 1] + out.len[out.n - 1] : 0;

	if (out.n == MAX_BLOCKS || len > BLOCK_MAX_BYTES)
		return -1;
	memcpy(out.bytes + o, p, len);
	out.off[out.n]   = o;
	out.len[out.n++] = len;
	block_enc_init(e);
	return 0;
}

/* Encode in[0..n) into out, a new block whenever one is full. */
static int
encode_all(size_t n)
{
	block_enc e;

	out.n = 0;
	block_enc_init(&e);
	for (size_t i = 0; i < n; i++) {
		double v  = double_of(in[i].bits);
		int    rc = block_enc_append(&e, in[i].step, in[i].time, v);
		if (rc == BLOCK_FULL) {
			if (flush(&e) != 0)
				return -1;
			rc = block_enc_append(&e, in[i].step, in[i].time, v);
		}
		if (rc != BLOCK_OK)
			return -1;
	}
	return flush(&e);
}

/* Decode out and compare with in[0..n), bit for bit. */
static int
decode_matches(size_t n)
{
	size_t k = 0;

	for (size_t b = 0; b < out.n; b++) {
		block_dec  d;
		block_info h;
		uint64_t   step;
		int64_t    t;
		double     v;
		int        rc;
		size_t     first = k;

		if (out.len[b] > BLOCK_MAX_BYTES
		    || block_peek(out.bytes + out.off[b], out.len[b], &h) != 0
		    || block_dec_init(&d, out.bytes + out.off[b], out.len[b])
		        != 0)
			return 0;
		while ((rc = block_dec_next(&d, &step, &t, &v)) == 1) {
			if (k >= n || step != in[k].step || t != in[k].time
			    || bits_of(v) != in[k].bits)
				return 0;
			k++;
		}
		if (rc != 0 || k - first != h.count
		    || h.first_step != in[first].step
		    || h.first_time != in[first].time
		    || h.last_step != in[k - 1].step
		    || h.last_time != in[k - 1].time)
			return 0;
	}
	return k == n;
}

static int
round_trip(size_t n)
{
	return encode_all(n) == 0 && decode_matches(n);
}

/* Realistic samples: consecutive steps, ~100 ms apart with 1% jitter,
 * loss-like float32 values; times rounded to quantum ns. */
static void
fill_realistic(size_t n, int64_t quantum, uint64_t seed)
{
	int64_t t = 1700000000123456789;

	for (size_t i = 0; i < n; i++) {
		double loss = 2.5 * pow((double) (i + 1), -0.1)
		    * (1 + 0.02 * (unit_rnd(&seed) - 0.5));
		t += 100000000 + (int64_t) (rnd(&seed) % 2000000) - 1000000;
		in[i].step = i + 1;
		in[i].time = t / quantum * quantum;
		in[i].bits = bits_of((double) (float) loss);
	}
}

static const uint64_t specials[] = {
	0x0000000000000000u, /* +0 */
	0x8000000000000000u, /* -0 */
	0x7ff0000000000000u, /* +inf */
	0xfff0000000000000u, /* -inf */
	0x7ff8000000000000u, /* quiet NaN */
	0xfff8000000000000u, /* negative quiet NaN */
	0x7ff0000000000001u, /* signalling NaN */
	0x7ff4000000dead01u, /* NaN with a payload */
	0xffffffffffffffffu, /* all-ones NaN */
	0x0000000000000001u, /* smallest denormal */
	0x800fffffffffffffu, /* largest negative denormal */
	0x0010000000000000u, /* DBL_MIN */
	0x7fefffffffffffffu, /* DBL_MAX */
	0xffefffffffffffffu, /* -DBL_MAX */
	0x3ff0000000000000u, /* 1.0 */
	0xbff0000000000000u, /* -1.0 */
};
#define NSPECIALS (sizeof specials / sizeof specials[0])

TEST(special_values_round_trip)
{
	size_t n = 0;

	/* every special after every other one */
	for (size_t i = 0; i < NSPECIALS; i++) {
		for (size_t j = 0; j < NSPECIALS; j++) {
			in[n]
			    = (sample) { n, (int64_t) n * 1000, specials[i] };
			n++;
			in[n]
			    = (sample) { n, (int64_t) n * 1000, specials[j] };
			n++;
		}
	}
	REQUIRE(round_trip(n));
}

TEST(random_bits_round_trip)
{
	uint64_t seed = 1;

	in[0].step = rnd(&seed);
	for (size_t i = 0; i < 5000; i++) {
		uint64_t gap = rnd(&seed) % 3 == 0 ? rnd(&seed) % 1000 : 1;
		if (i > 0)
			in[i].step = in[i - 1].step + gap;
		in[i].time = (int64_t) rnd(&seed);
		in[i].bits = rnd(&seed);
	}
	REQUIRE(round_trip(5000));
	CHECK(out.n > 1);
}

TEST(realistic_round_trip)
{
	static const int64_t quanta[] = { 1, 1000, 1000000 };

	for (int q = 0; q < 3; q++) {
		fill_realistic(MAX_SAMPLES, quanta[q], 7);
		CHECK(round_trip(MAX_SAMPLES));
	}
}

TEST(mixed_regimes_round_trip)
{
	static const int64_t quanta[] = { 1, 1000, 1000000, 1000000000 };
	uint64_t             seed     = 3;
	size_t               n        = 0;

	/* runs of constants, counters, noise, random bits and specials,
	 * with time units changing in between */
	for (int run = 0; run < 60; run++) {
		int      kind = (int) (rnd(&seed) % 6);
		int64_t  q    = quanta[rnd(&seed) % 4];
		uint64_t base = rnd(&seed);
		for (int i = 0; i < 100; i++, n++) {
			uint64_t b;
			switch (kind) {
			case 0:
				b = base;
				break;
			case 1:
				b = bits_of((double) (n * 7));
				break;
			case 2:
				b = bits_of((double) (float) (1
				    + 0.01 * unit_rnd(&seed)));
				break;
			case 3:
				b = rnd(&seed);
				break;
			case 4:
				b = specials[rnd(&seed) % NSPECIALS];
				break;
			default:
				b = bits_of(-(double) n / 3);
				break;
			}
			in[n].step = n / 2;
			in[n].time = (int64_t) n * 250000000 / q * q;
			in[n].bits = b;
		}
	}
	REQUIRE(round_trip(n));
}

TEST(times_going_backwards)
{
	uint64_t seed = 5;
	int64_t  t    = 1700000000000000000;

	for (size_t i = 0; i < 3000; i++) {
		uint64_t r = rnd(&seed) % 100;
		if (r == 0)
			t -= 3600000000000; /* the clock steps back an hour */
		else if (r == 1)
			t += 86400000000000; /* or forward a day */
		else if (r == 2)
			t = (int64_t) rnd(&seed);
		else
			t += 100000000 + (int64_t) (rnd(&seed) % 1000);
		in[i] = (sample) { i, t, bits_of((double) i) };
	}
	in[10].time = INT64_MIN;
	in[11].time = INT64_MAX;
	in[12].time = INT64_MIN;
	REQUIRE(round_trip(3000));
}

TEST(steps_with_big_gaps)
{
	static const uint64_t steps[] = { 0, 0, 1, 2, 1000000, 1000000,
		1000001, (uint64_t) 1 << 40, ((uint64_t) 1 << 40) + 1,
		UINT64_MAX - 1, UINT64_MAX, UINT64_MAX };
	size_t                n       = sizeof steps / sizeof steps[0];

	for (size_t i = 0; i < n; i++)
		in[i] = (sample) { steps[i], (int64_t) i, bits_of(0.5) };
	REQUIRE(round_trip(n));
	CHECK_EQ_INT(out.n, 1);
}

TEST(step_order_enforced)
{
	block_enc      e;
	uint8_t        before[BLOCK_MAX_BYTES];
	size_t         len, len2;
	const uint8_t *p;

	block_enc_init(&e);
	CHECK_EQ_INT(block_enc_append(&e, 10, 1, 1.0), BLOCK_OK);
	CHECK_EQ_INT(block_enc_append(&e, 12, 2, 2.0), BLOCK_OK);
	p = block_enc_data(&e, &len);
	memcpy(before, p, len);
	CHECK_EQ_INT(block_enc_append(&e, 11, 3, 3.0), BLOCK_ORDER);
	CHECK_EQ_INT(block_enc_append(&e, 0, 3, 3.0), BLOCK_ORDER);
	p = block_enc_data(&e, &len2);
	CHECK(len2 == len && memcmp(before, p, len) == 0);
	/* equal steps are fine */
	CHECK_EQ_INT(block_enc_append(&e, 12, 4, 4.0), BLOCK_OK);
	CHECK_EQ_INT(e.count, 3);
}

/* Fill one block with in[] until BLOCK_FULL; checks that the refused
 * append left the block unchanged. Returns the samples in the block. */
static size_t
fill_one_block(block_enc *e, size_t n, size_t *len, int *unchanged)
{
	static uint8_t before[BLOCK_MAX_BYTES];
	size_t         i;

	block_enc_init(e);
	for (i = 0; i < n; i++)
		if (block_enc_append(
		        e, in[i].step, in[i].time, double_of(in[i].bits))
		    != BLOCK_OK)
			break;
	const uint8_t *p = block_enc_data(e, len);
	*unchanged       = 0;
	if (i == n) /* never full */
		return i;
	memcpy(before, p, *len);
	block_enc_append(e, in[i].step, in[i].time, double_of(in[i].bits));
	size_t len2;
	p          = block_enc_data(e, &len2);
	*unchanged = len2 == *len && memcmp(before, p, *len) == 0;
	*unchanged = *unchanged && e->count == i;
	return i;
}

TEST(full_block_never_over)
{
	block_enc e;
	size_t    len, got;
	int       unchanged;
	uint64_t  seed = 11;

	/* worst case: random bits everywhere */
	for (size_t i = 0; i < 1000; i++) {
		in[i].step = i ? in[i - 1].step + rnd(&seed) % (1u << 20) : 0;
		in[i].time = (int64_t) rnd(&seed);
		in[i].bits = rnd(&seed);
	}
	got = fill_one_block(&e, 1000, &len, &unchanged);
	CHECK(unchanged);
	CHECK(len <= BLOCK_MAX_BYTES);
	CHECK(len > BLOCK_MAX_BYTES - (SAMPLE_MAX_BITS + 7) / 8);
	CHECK(got > 50 && got < 1000);

	/* realistic: small samples fill the block to the last bytes */
	fill_realistic(MAX_SAMPLES, 1000, 13);
	got = fill_one_block(&e, MAX_SAMPLES, &len, &unchanged);
	CHECK(unchanged);
	CHECK(len <= BLOCK_MAX_BYTES);
	CHECK(len >= BLOCK_MAX_BYTES - 8);
	CHECK(got > 800);
}

TEST(sample_size_bounded)
{
	block_enc e;
	uint64_t  seed = 17, last = 0;
	uint32_t  max = 0;

	/* no append takes more than the documented worst case, even with
	 * specials, huge step gaps, random times and changing units */
	block_enc_init(&e);
	for (int i = 0; i < 20000; i++) {
		uint64_t step   = last, v;
		uint32_t before = e.bits;
		int64_t  t;
		int      rc;

		if (rnd(&seed) % 4 == 0)
			step += rnd(&seed) >> (rnd(&seed) % 64);
		else if (rnd(&seed) % 2)
			step += 1;
		if (rnd(&seed) & 1)
			t = (int64_t) rnd(&seed);
		else
			t = (int64_t) (rnd(&seed) % 1000) * 1000000;
		if (rnd(&seed) & 1)
			v = rnd(&seed);
		else
			v = specials[rnd(&seed) % NSPECIALS];
		rc = block_enc_append(&e, step, t, double_of(v));
		if (rc == BLOCK_FULL || rc == BLOCK_ORDER) {
			block_enc_init(&e);
			last = 0;
			continue;
		}
		REQUIRE(rc == BLOCK_OK);
		last = step;
		if (e.count > 1 && e.bits - before > max)
			max = e.bits - before;
	}
	CHECK(max <= SAMPLE_MAX_BITS);
	CHECK(max > 150); /* the test does reach big samples */
}

TEST(resume_equals_one_go)
{
	static const size_t cuts[] = { 0, 1, 2, 3, 17, 100, 500 };
	block_enc           whole, part, resumed;
	uint64_t            seed = 19;
	size_t              wlen, plen, rlen, n;
	uint8_t             saved[BLOCK_MAX_BYTES];

	/* mixed data, so that every part of the model is exercised */
	fill_realistic(2000, 1000, 23);
	for (size_t i = 0; i < 2000; i += 1 + rnd(&seed) % 50)
		in[i].bits = specials[rnd(&seed) % NSPECIALS];
	block_enc_init(&whole);
	for (n = 0; n < 2000; n++)
		if (block_enc_append(
		        &whole, in[n].step, in[n].time, double_of(in[n].bits))
		    != BLOCK_OK)
			break;
	REQUIRE(n < 2000); /* the block filled up */
	const uint8_t *w = block_enc_data(&whole, &wlen);

	for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
		size_t i;
		block_enc_init(&part);
		for (i = 0; i < cuts[c]; i++)
			block_enc_append(&part, in[i].step, in[i].time,
			    double_of(in[i].bits));
		const uint8_t *p = block_enc_data(&part, &plen);
		memcpy(saved, p, plen);
		REQUIRE(block_enc_resume(&resumed, saved, plen) == BLOCK_OK);
		CHECK_EQ_INT(resumed.count, cuts[c]);
		for (; i <= n; i++)
			if (block_enc_append(&resumed, in[i].step, in[i].time,
			        double_of(in[i].bits))
			    != BLOCK_OK)
				break;
		CHECK_EQ_INT(i, n); /* full at the same sample */
		const uint8_t *r = block_enc_data(&resumed, &rlen);
		CHECK(rlen == wlen && memcmp(r, w, wlen) == 0);
		CHECK(memcmp(resumed.field_bits, whole.field_bits,
		          sizeof whole.field_bits)
		    == 0);
	}
}

TEST(resume_refuses_corrupt)
{
	block_enc e;
	uint8_t   junk[100];

	memset(junk, 0xa5, sizeof junk);
	CHECK_EQ_INT(block_enc_resume(&e, junk, sizeof junk), BLOCK_CORRUPT);
	CHECK_EQ_INT(e.count, 0);
	CHECK_EQ_INT(block_enc_resume(&e, junk, 3), BLOCK_CORRUPT);
}

TEST(peek_reads_header)
{
	block_enc      e;
	block_info     h;
	size_t         len;
	const uint8_t *p;
	uint8_t        copy[BLOCK_MAX_BYTES];

	block_enc_init(&e);
	p = block_enc_data(&e, &len);
	CHECK_EQ_INT(len, BLOCK_HEADER_SIZE);
	CHECK(block_peek(p, len, &h) == BLOCK_OK && h.count == 0);

	block_enc_append(&e, 5, -7, 1.5);
	block_enc_append(&e, 9, -100, 2.5);
	block_enc_append(&e, 9, 123456789, 3.5);
	p = block_enc_data(&e, &len);
	REQUIRE(block_peek(p, len, &h) == BLOCK_OK);
	CHECK_EQ_INT(h.count, 3);
	CHECK(h.first_step == 5 && h.last_step == 9);
	CHECK(h.first_time == -7 && h.last_time == 123456789);

	memcpy(copy, p, len);
	copy[0] = 99; /* unknown version */
	CHECK_EQ_INT(block_peek(copy, len, &h), BLOCK_CORRUPT);
	CHECK_EQ_INT(block_peek(p, len - 1, &h), BLOCK_CORRUPT);
	CHECK_EQ_INT(block_peek(p, 10, &h), BLOCK_CORRUPT);
}

TEST(single_sample_block)
{
	block_enc      e, r;
	block_dec      d;
	size_t         len;
	uint64_t       step;
	int64_t        t;
	double         v;
	const uint8_t *p;
	uint8_t        copy[BLOCK_MAX_BYTES];

	block_enc_init(&e);
	CHECK_EQ_INT(block_enc_append(&e, UINT64_MAX, INT64_MIN, -0.0), 0);
	p = block_enc_data(&e, &len);
	CHECK_EQ_INT(len, BLOCK_HEADER_SIZE + 8);
	REQUIRE(block_dec_init(&d, p, len) == BLOCK_OK);
	CHECK_EQ_INT(block_dec_next(&d, &step, &t, &v), 1);
	CHECK(step == UINT64_MAX && t == INT64_MIN
	    && bits_of(v) == 0x8000000000000000u);
	CHECK_EQ_INT(block_dec_next(&d, &step, &t, &v), 0);
	CHECK_EQ_INT(block_dec_next(&d, &step, &t, &v), 0);

	memcpy(copy, p, len);
	REQUIRE(block_enc_resume(&r, copy, len) == BLOCK_OK);
	CHECK_EQ_INT(block_enc_append(&r, UINT64_MAX, 0, 1.0), BLOCK_OK);
	CHECK_EQ_INT(r.count, 2);
	/* resuming from the encoder's own data is fine */
	p = block_enc_data(&r, &len);
	REQUIRE(block_enc_resume(&r, p, len) == BLOCK_OK);
	CHECK_EQ_INT(r.count, 2);
	CHECK_EQ_INT(block_enc_append(&r, UINT64_MAX, 5, 2.0), BLOCK_OK);
	p = block_enc_data(&r, &len);
	REQUIRE(block_dec_init(&d, p, len) == BLOCK_OK);
	int n = 0;
	while (block_dec_next(&d, &step, &t, &v) == 1)
		n++;
	CHECK(n == 3 && t == 5 && v == 2.0);
}

TEST(empty_block_decodes_to_nothing)
{
	block_enc      e, r;
	block_dec      d;
	size_t         len;
	uint64_t       step;
	int64_t        t;
	double         v;
	const uint8_t *p;

	block_enc_init(&e);
	p = block_enc_data(&e, &len);
	REQUIRE(block_dec_init(&d, p, len) == BLOCK_OK);
	CHECK_EQ_INT(block_dec_next(&d, &step, &t, &v), 0);
	REQUIRE(block_enc_resume(&r, p, len) == BLOCK_OK);
	CHECK_EQ_INT(block_enc_append(&r, 1, 2, 3.0), BLOCK_OK);
}

TEST(data_valid_after_every_append)
{
	block_enc e;
	block_dec d;
	size_t    len, n;
	uint64_t  step;
	int64_t   t;
	double    v;

	fill_realistic(300, 1, 29);
	block_enc_init(&e);
	for (size_t i = 0; i < 300; i++) {
		REQUIRE(block_enc_append(
		            &e, in[i].step, in[i].time, double_of(in[i].bits))
		    == BLOCK_OK);
		const uint8_t *p = block_enc_data(&e, &len);
		REQUIRE(block_dec_init(&d, p, len) == BLOCK_OK);
		n = 0;
		while (block_dec_next(&d, &step, &t, &v) == 1)
			n += step == in[n].step && t == in[n].time
			    && bits_of(v) == in[n].bits;
		CHECK_EQ_INT(n, i + 1);
	}
}

TEST(time_quantum_is_cheaper)
{
	size_t len[3];

	/* the codec finds the unit a caller rounded times to */
	for (int q = 0; q < 3; q++) {
		fill_realistic(600, q == 0 ? 1 : q == 1 ? 1000 : 1000000, 31);
		REQUIRE(encode_all(600) == 0 && out.n == 1);
		len[q] = out.len[0];
	}
	/* 1000 times coarser is about 10 bits a sample less */
	CHECK(len[1] + 600 * 9 / 8 < len[0]);
	CHECK(len[2] + 600 * 8 / 8 < len[1]);
}

TEST(realistic_size)
{
	/* a regression guard on compression: loss-like values and us times
	 * stay under 4.5 bytes a sample, headers included */
	fill_realistic(MAX_SAMPLES, 1000, 37);
	REQUIRE(encode_all(MAX_SAMPLES) == 0);
	size_t total = out.off[out.n - 1] + out.len[out.n - 1];
	CHECK(total * 10 < MAX_SAMPLES * 45);
	/* and consecutive steps cost about a bit */
	block_enc e;
	block_enc_init(&e);
	for (size_t i = 0; i < 1000; i++)
		block_enc_append(
		    &e, in[i].step, in[i].time, double_of(in[i].bits));
	CHECK(e.field_bits[0] < 1100);
}

/*
 * Decode a possibly corrupt block from a heap copy of exactly len bytes
 * (so that AddressSanitizer sees any read past it): must not crash, and
 * either fail or return a well-formed decode: the header's count of
 * samples, steps not decreasing, ending on the header's last step and
 * time. Returns -1 for a failure, else the samples.
 */
static long
decode_exact(const uint8_t *p, size_t len, int *wellformed)
{
	block_dec  d;
	block_info h;
	uint64_t   step = 0, prev = 0;
	int64_t    t = 0;
	double     v;
	long       n = 0;
	int        rc;

	*wellformed = 1;
	if (block_dec_init(&d, p, len) != BLOCK_OK)
		return -1;
	block_peek(p, len, &h);
	while ((rc = block_dec_next(&d, &step, &t, &v)) == 1) {
		if (n > 0 && step < prev)
			*wellformed = 0;
		prev = step;
		n++;
		if (n > (long) h.count)
			*wellformed = 0;
	}
	if (rc < 0) {
		/* stays failed */
		if (block_dec_next(&d, &step, &t, &v) != -1)
			*wellformed = 0;
		return -1;
	}
	if (n != (long) h.count
	    || (n > 0 && (step != h.last_step || t != h.last_time)))
		*wellformed = 0;
	return n;
}

static long
decode_checked(const uint8_t *p, size_t len, int *wellformed)
{
	uint8_t *copy = malloc(len ? len : 1);
	long     n;

	if (copy == NULL)
		return -2;
	memcpy(copy, p, len);
	n = decode_exact(copy, len, wellformed);
	free(copy);
	return n;
}

TEST(truncated_blocks_fail_cleanly)
{
	block_enc      e;
	size_t         len;
	int            wf;
	static uint8_t cut[BLOCK_MAX_BYTES];

	fill_realistic(2000, 1, 41);
	for (int i = 0; i < 2000; i += 37)
		in[i].bits = specials[(size_t) i % NSPECIALS];
	fill_one_block(&e, 2000, &len, &wf);
	const uint8_t *p = block_enc_data(&e, &len);

	for (size_t l = 0; l < len; l++) {
		/* a short copy, exactly as long as it claims */
		memcpy(cut, p, l);
		CHECK(decode_checked(cut, l, &wf) == -1);
		/* and one whose header is patched to its new length, so
		 * that the decoder runs into the end of the stream */
		if (l >= BLOCK_HEADER_SIZE) {
			uint32_t bits = (uint32_t) (l - BLOCK_HEADER_SIZE) * 8;
			cut[2]        = (uint8_t) bits;
			cut[3]        = (uint8_t) (bits >> 8);
			long n        = decode_checked(cut, l, &wf);
			CHECK(n == -1 || wf);
		}
	}
}

TEST(bit_flips_fail_cleanly)
{
	block_enc      e;
	size_t         len;
	int            wf;
	long           failed = 0;
	uint64_t       seed   = 43;
	static uint8_t copy[BLOCK_MAX_BYTES];

	fill_realistic(2000, 1000, 47);
	fill_one_block(&e, 2000, &len, &wf);
	const uint8_t *p = block_enc_data(&e, &len);

	for (int trial = 0; trial < 20000; trial++) {
		memcpy(copy, p, len);
		int flips = 1 + (int) (rnd(&seed) % 3);
		for (int f = 0; f < flips; f++) {
			/* mostly in the stream, sometimes in the header */
			size_t at = rnd(&seed) % 8
			    ? BLOCK_HEADER_SIZE
			        + rnd(&seed) % (len - BLOCK_HEADER_SIZE)
			    : rnd(&seed) % BLOCK_HEADER_SIZE;
			copy[at] ^= (uint8_t) (1u << (rnd(&seed) % 8));
		}
		long n = decode_checked(copy, len, &wf);
		CHECK(n == -1 || wf);
		failed += n == -1;
	}
	/* most damage is detected, by the check that the last sample ends
	 * the stream on the header's last step and time */
	CHECK(failed > 12000);
}

TEST(random_garbage_fails_cleanly)
{
	uint64_t       seed = 53;
	int            wf;
	static uint8_t junk[BLOCK_MAX_BYTES];

	for (int trial = 0; trial < 5000; trial++) {
		size_t len = BLOCK_HEADER_SIZE
		    + rnd(&seed) % (BLOCK_MAX_BYTES - BLOCK_HEADER_SIZE + 1);
		for (size_t i = 0; i < len; i++)
			junk[i] = (uint8_t) rnd(&seed);
		/* a header the decoder accepts, over garbage */
		uint32_t bits  = (uint32_t) (len - BLOCK_HEADER_SIZE) * 8;
		junk[0]        = 1;
		junk[1]        = 0;
		junk[2]        = (uint8_t) bits;
		junk[3]        = (uint8_t) (bits >> 8);
		uint32_t count = (uint32_t) (rnd(&seed) % 2000);
		for (int i = 0; i < 4; i++)
			junk[4 + i] = (uint8_t) (count >> (8 * i));
		memset(junk + 8, 0, 8); /* first step 0: not above the last */
		long n = decode_checked(junk, len, &wf);
		CHECK(n == -1 || wf);
	}
}

int
main(void)
{
	RUN(special_values_round_trip);
	RUN(random_bits_round_trip);
	RUN(realistic_round_trip);
	RUN(mixed_regimes_round_trip);
	RUN(times_going_backwards);
	RUN(steps_with_big_gaps);
	RUN(step_order_enforced);
	RUN(full_block_never_over);
	RUN(sample_size_bounded);
	RUN(resume_equals_one_go);
	RUN(resume_refuses_corrupt);
	RUN(peek_reads_header);
	RUN(single_sample_block);
	RUN(empty_block_decodes_to_nothing);
	RUN(data_valid_after_every_append);
	RUN(time_quantum_is_cheaper);
	RUN(realistic_size);
	RUN(truncated_blocks_fail_cleanly);
	RUN(bit_flips_fail_cleanly);
	RUN(random_garbage_fails_cleanly);
	return harness_done();
}
