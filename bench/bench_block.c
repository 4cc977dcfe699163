/*
 * bench_block: size and speed of the block codec on synthetic training
 * metrics. Every series has 100k samples at consecutive steps, drawn with
 * a fixed seed:
 *
 *   loss       2.5 * step^-0.1 with 1% relative Gaussian noise
 *   grad_norm  log-normal around 0.8 (0.3..2), 0.5% spikes of 3-20x
 *   tok/s      50000 with 2% Gaussian noise
 *   counter    tokens seen: step * 524288, an integer
 *
 * all rounded to float32 precision ((double)(float)x, what loss.item()
 * returns), each at step intervals of 100 ms, 300 ms and 1 s with 1%
 * Gaussian jitter in ns, and once in 1000 steps a pause of up to a minute
 * (an eval, a checkpoint). Times are encoded raw and rounded to 1 us and
 * 1 ms (as a caller choosing that quantum would). The figures: bytes per
 * sample including block headers, the bits per sample of each field, and
 * encode / decode rates in million samples per second on one core; and for
 * reference, what classic Gorilla coding of the same times and values
 * would take (no blocks, no headers). Last, the sizes for the series of
 * bench/realistic.c, which bench_store stores.
 */
#include "store/block.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/realistic.h"

#define SERIES_LEN 100000
#define NKINDS 4
#define NINTERVALS 3
#define NSERIES (NKINDS * NINTERVALS)
#ifndef REPEAT
#define REPEAT 5
#endif

typedef struct sample {
	uint64_t step;
	int64_t  time;
	double   value;
} sample;

/* Encoded blocks of one series, back to back, with their lengths. */
typedef struct encoded {
	uint8_t *bytes;
	size_t  *lens;
	size_t   nblocks, total;
	uint64_t field_bits[3];
} encoded;

static const char *const kind_names[NKINDS]
    = { "loss", "grad_norm", "tok/s", "counter" };
static const int64_t intervals[NINTERVALS]
    = { 100000000, 300000000, 1000000000 };

/* splitmix64: a small, good, seedable generator. */
static uint64_t
rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15u);
	z          = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z          = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

static double
rng_unit(uint64_t *s)
{
	return ((double) (rng_next(s) >> 11) + 0.5) / 9007199254740992.0;
}

static double
rng_normal(uint64_t *s)
{
	double u = rng_unit(s), v = rng_unit(s);
	return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

static double
f32(double x)
{
	return (double) (float) x;
}

/* Fill out[SERIES_LEN] with one synthetic series. */
static void
gen_series(sample *out, int kind, int64_t interval, uint64_t seed)
{
	uint64_t s = seed;
	int64_t  t = 1700000000000000000 + (int64_t) (rng_next(&s) % 1000000);

	for (uint64_t i = 0; i < SERIES_LEN; i++) {
		uint64_t step = i + 1;
		double   v;

		t += (int64_t) llround(
		    (double) interval * (1 + 0.01 * rng_normal(&s)));
		if (rng_unit(&s) < 0.001) /* an eval or a checkpoint */
			t += (int64_t) (rng_unit(&s) * 60e9);
		switch (kind) {
		case 0:
			v = 2.5 * pow((double) step, -0.1)
			    * (1 + 0.01 * rng_normal(&s));
			break;
		case 1:
			v = 0.8 * exp(0.3 * rng_normal(&s));
			if (rng_unit(&s) < 0.005)
				v *= 3 + 17 * rng_unit(&s);
			break;
		case 2:
			v = 50000 * (1 + 0.02 * rng_normal(&s));
			break;
		default:
			v = (double) step * 524288;
			break;
		}
		out[i].step  = step;
		out[i].time  = t;
		out[i].value = f32(v);
	}
}

/* Round t to the nearest multiple of q (t > 0 here). */
static int64_t
quantize(int64_t t, int64_t q)
{
	return q > 1 ? (t + q / 2) / q * q : t;
}

/*
 * Reference costs in bits, over a whole series without blocks. Values:
 * Gorilla's XOR with the previous value, '0' for equal, '10' + the bits
 * in the previous leading/trailing zero window when they fit, else '11' +
 * 5 bits of leading zeros + 6 of length + the bits. Times: delta-of-delta
 * in variable-length buckets, Gorilla's scheme widened for nanoseconds:
 * '0' for 0, then '10', '110', '1110', '11110' + 8, 16, 24, 32 bits, and
 * '11111' + 64.
 */
static void
gorilla_bits(
    const sample *in, size_t n, int64_t q, double *tbits, double *vbits)
{
	static const int widths[] = { 8, 16, 24, 32, 64 };
	uint64_t         prev, x;
	int              plead = -1, ptrail = 0;
	int64_t          pdelta = 0, t0 = quantize(in[0].time, q);

	memcpy(&prev, &in[0].value, sizeof prev);
	*vbits = 64;
	*tbits = 64;
	for (size_t i = 1; i < n; i++) {
		int64_t  t = quantize(in[i].time, q), delta = t - t0;
		int64_t  dod = delta - pdelta;
		uint64_t z   = ((uint64_t) dod << 1) ^ (uint64_t) (dod >> 63);
		pdelta       = delta;
		t0           = t;
		if (dod == 0) {
			*tbits += 1;
		} else {
			for (int b = 0; b < 5; b++) {
				if (b == 4 || z < (uint64_t) 1 << widths[b]) {
					*tbits
					    += (b < 4 ? b + 2 : 5) + widths[b];
					break;
				}
			}
		}
		memcpy(&x, &in[i].value, sizeof x);
		x ^= prev;
		prev ^= x;
		if (x == 0) {
			*vbits += 1;
			continue;
		}
		int lead  = __builtin_clzll(x) > 31 ? 31 : __builtin_clzll(x);
		int trail = __builtin_ctzll(x);
		if (plead >= 0 && lead >= plead && trail >= ptrail) {
			*vbits += 2 + 64 - plead - ptrail;
		} else {
			*vbits += 2 + 5 + 6 + 64 - lead - trail;
			plead  = lead;
			ptrail = trail;
		}
	}
}

static double
now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

/* Move the block being built to out and start a new one. */
static void
flush_block(encoded *out, block_enc *e)
{
	size_t         len;
	const uint8_t *p = block_enc_data(e, &len);

	memcpy(out->bytes + out->total, p, len);
	out->lens[out->nblocks++] = len;
	out->total += len;
	for (int f = 0; f < 3; f++)
		out->field_bits[f] += e->field_bits[f];
	block_enc_init(e);
}

/* Encode n samples into blocks, times rounded to the quantum q (ns). */
static void
encode_series(encoded *out, const sample *in, size_t n, int64_t q)
{
	block_enc e;

	out->nblocks = out->total = 0;
	memset(out->field_bits, 0, sizeof out->field_bits);
	block_enc_init(&e);
	for (size_t i = 0; i < n; i++) {
		int64_t t  = quantize(in[i].time, q);
		int     rc = block_enc_append(&e, in[i].step, t, in[i].value);
		if (rc == BLOCK_FULL) {
			flush_block(out, &e);
			rc = block_enc_append(&e, in[i].step, t, in[i].value);
		}
		if (rc != BLOCK_OK)
			abort();
	}
	flush_block(out, &e);
}

/* Decode every block; returns the samples seen, and adds a checksum to
 * *sum so that the work cannot be optimised away. With check, compares
 * with the input (steps, values bit-exact; times rounded to q). */
static size_t
decode_series(
    const encoded *enc, const sample *in, int64_t q, int check, uint64_t *sum)
{
	size_t         n = 0;
	const uint8_t *p = enc->bytes;

	for (size_t b = 0; b < enc->nblocks; b++) {
		block_dec d;
		uint64_t  step;
		int64_t   t;
		double    v;
		int       rc;

		if (block_dec_init(&d, p, enc->lens[b]) != BLOCK_OK)
			abort();
		while ((rc = block_dec_next(&d, &step, &t, &v)) == 1) {
			*sum += step + (uint64_t) t;
			if (check) {
				if (step != in[n].step
				    || t != quantize(in[n].time, q)
				    || memcmp(&v, &in[n].value, sizeof v) != 0)
					abort();
			}
			n++;
		}
		if (rc != 0)
			abort();
		p += enc->lens[b];
	}
	return n;
}

/* Bytes per sample, headers included, of the bench/realistic.c series
 * (one rank, SERIES_LEN steps), at each time quantum. */
static void
realistic_sizes(sample *data, encoded *enc)
{
	static const int64_t     quanta[] = { 1, 1000, 1000000 };
	static const char *const qnames[] = { "1 ns", "1 us", "1 ms" };
	real_gen                 g;

	real_init(&g, 0, SERIES_LEN, 1700000000000000000);
	for (uint64_t i = 0; i < SERIES_LEN; i++) {
		int64_t t = real_step(&g);
		for (int m = 0; m < REAL_METRICS; m++) {
			sample *x = &data[(size_t) m * SERIES_LEN + i];
			x->step   = i + 1;
			x->time   = t;
			x->value  = real_value(&g, m, i + 1);
		}
	}
	printf("bench/realistic.c series, bytes/sample:\n  %-8s", "quantum");
	for (int m = 0; m < REAL_METRICS; m++)
		printf(" %9.9s", real_names[m]);
	printf(" %9s\n", "all");
	for (int qi = 0; qi < 3; qi++) {
		size_t all = 0;
		printf("  %-8s", qnames[qi]);
		for (int m = 0; m < REAL_METRICS; m++) {
			encode_series(enc, data + (size_t) m * SERIES_LEN,
			    SERIES_LEN, quanta[qi]);
			all += enc->total;
			printf(" %9.3f", (double) enc->total / SERIES_LEN);
		}
		printf(" %9.3f\n",
		    (double) all / (SERIES_LEN * (double) REAL_METRICS));
	}
}

int
main(void)
{
	static const int64_t     quanta[] = { 1, 1000, 1000000 };
	static const char *const qnames[] = { "1 ns (raw)", "1 us", "1 ms" };
	sample  *data = malloc(sizeof(sample) * SERIES_LEN * NSERIES);
	encoded  enc[NSERIES];
	uint64_t sum = 0;

	if (data == NULL)
		return 1;
	for (int s = 0; s < NSERIES; s++) {
		gen_series(data + (size_t) s * SERIES_LEN, s / NINTERVALS,
		    intervals[s % NINTERVALS], 1234 + (uint64_t) s);
		enc[s].bytes = malloc((size_t) SERIES_LEN * 40);
		enc[s].lens  = malloc(sizeof(size_t) * SERIES_LEN);
		if (enc[s].bytes == NULL || enc[s].lens == NULL)
			return 1;
	}
	printf("block codec: %d series x %d samples, %d-byte blocks\n\n",
	    NSERIES, SERIES_LEN, BLOCK_MAX_BYTES);
	for (int qi = 0; qi < 3; qi++) {
		int64_t q    = quanta[qi];
		double  tenc = 1e30, tdec = 1e30;
		size_t  total = 0, nblocks = 0,
		       n          = (size_t) NSERIES * SERIES_LEN;
		double kb[NKINDS] = { 0 }, kf[NKINDS][3] = { { 0 } };
		double f[3] = { 0 };

		for (int r = 0; r < REPEAT; r++) {
			double t0 = now_s();
			for (int s = 0; s < NSERIES; s++)
				encode_series(&enc[s],
				    data + (size_t) s * SERIES_LEN, SERIES_LEN,
				    q);
			double t1 = now_s();
			for (int s = 0; s < NSERIES; s++)
				if (decode_series(&enc[s], NULL, q, 0, &sum)
				    != SERIES_LEN)
					abort();
			double t2 = now_s();
			tenc      = t1 - t0 < tenc ? t1 - t0 : tenc;
			tdec      = t2 - t1 < tdec ? t2 - t1 : tdec;
		}
		for (int s = 0; s < NSERIES; s++) {
			decode_series(&enc[s], data + (size_t) s * SERIES_LEN,
			    q, 1, &sum);
			total += enc[s].total;
			nblocks += enc[s].nblocks;
			kb[s / NINTERVALS] += (double) enc[s].total;
			for (int i = 0; i < 3; i++) {
				kf[s / NINTERVALS][i]
				    += (double) enc[s].field_bits[i];
				f[i] += (double) enc[s].field_bits[i];
			}
		}
		printf("time quantum %s\n", qnames[qi]);
		printf("  %-10s %10s  %s\n", "series", "bytes/smp",
		    "bits/sample: steps times values header");
		for (int k = 0; k < NKINDS; k++) {
			double m = (double) SERIES_LEN * NINTERVALS;
			printf("  %-10s %10.3f  %5.2f %5.2f %5.2f\n",
			    kind_names[k], kb[k] / m, kf[k][0] / m,
			    kf[k][1] / m, kf[k][2] / m);
		}
		printf("  %-10s %10.3f  %5.2f %5.2f %5.2f %5.2f"
		       "  (%zu blocks, %.0f samples/block)\n",
		    "all", (double) total / (double) n, f[0] / (double) n,
		    f[1] / (double) n, f[2] / (double) n,
		    8.0 * BLOCK_HEADER_SIZE * (double) nblocks / (double) n,
		    nblocks, (double) n / (double) nblocks);
		printf("  encode %.1f M samples/s, decode %.1f M samples/s\n",
		    (double) n / tenc / 1e6, (double) n / tdec / 1e6);
		double gt = 0, gv = 0;
		for (int s = 0; s < NSERIES; s++) {
			double t, v;
			gorilla_bits(data + (size_t) s * SERIES_LEN,
			    SERIES_LEN, q, &t, &v);
			gt += t;
			gv += v;
		}
		printf("  reference, Gorilla: times %.2f, values %.2f "
		       "bits/sample\n\n",
		    gt / (double) n, gv / (double) n);
	}
	realistic_sizes(data, &enc[0]);
	for (int s = 0; s < NSERIES; s++) {
		free(enc[s].bytes);
		free(enc[s].lens);
	}
	free(data);
	return sum == 42; /* never: keeps the checksum live */
}
