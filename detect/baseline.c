#include "detect/baseline.h"

#include <math.h>
#include <string.h>

void
detect_win_init(detect_win *w, uint32_t cap)
{
	w->cap  = cap;
	w->n    = 0;
	w->head = 0;
}

void
detect_win_clear(detect_win *w)
{
	w->n    = 0;
	w->head = 0;
}

/*
 * First index in sorted[0..n) whose value is >= x. Without branches on
 * the comparisons: a window's values come in no order, so a branch
 * would be mispredicted at every other halving.
 */
static uint32_t
lower(const double *sorted, uint32_t n, double x)
{
	const double *base = sorted;

	if (n == 0)
		return 0;
	while (n > 1) {
		uint32_t half = n / 2;

		base = base[half] < x ? base + half : base;
		n -= half;
	}
	return (uint32_t) (base - sorted) + (*base < x);
}

/* NaN never enters (callers skip non-finite values). */
void
detect_win_push(detect_win *w, double *buf, double x)
{
	double  *ring = buf, *sorted = buf + w->cap;
	uint32_t at;

	if (w->n == w->cap) {
		double   old = ring[w->head];
		uint32_t i   = lower(sorted, w->n, old);

		memmove(&sorted[i], &sorted[i + 1],
		    (w->n - i - 1) * sizeof(double));
		w->n--;
	}
	ring[w->head] = x;
	w->head       = w->head + 1 == w->cap ? 0 : w->head + 1;
	at            = lower(sorted, w->n, x);
	memmove(&sorted[at + 1], &sorted[at], (w->n - at) * sizeof(double));
	sorted[at] = x;
	w->n++;
}

double
detect_win_quantile(const detect_win *w, const double *buf, double q)
{
	const double *sorted = buf + w->cap;
	double        pos, frac;
	uint32_t      i;

	if (w->n == 0)
		return NAN;
	pos  = q * (double) (w->n - 1);
	i    = (uint32_t) pos;
	frac = pos - (double) i;
	if (i + 1 >= w->n)
		return sorted[w->n - 1];
	return sorted[i] + frac * (sorted[i + 1] - sorted[i]);
}

double
detect_ewm_update(
    detect_ewm *m, double y, double alpha, double beta, double floor)
{
	double r = y - m->level, c = 3 * m->scale, rc;

	rc = r > c ? c : r < -c ? -c : r;
	m->level += alpha * rc;
	/* E|x| = sigma * sqrt(2/pi) for a normal residual. */
	m->scale += beta * (fabs(rc) * 1.2533 - m->scale);
	if (m->scale < floor)
		m->scale = floor;
	return r;
}

double
detect_median_small(double *v, size_t n)
{
	/* Insertion sort: n is at most a few dozen. */
	for (size_t i = 1; i < n; i++) {
		double x = v[i];
		size_t j = i;

		for (; j > 0 && v[j - 1] > x; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
	if (n == 0)
		return NAN;
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double
detect_alpha(double halflife)
{
	return halflife <= 0 ? 1 : 1 - exp2(-1 / halflife);
}
