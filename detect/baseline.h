/*
 * baseline: the robust estimators detectors share.
 *
 * detect_win: the last `cap` values of a series, kept both in arrival
 * order (a ring) and sorted, so the median or any quantile is O(1) to read
 * and O(cap) to update (one binary search and one memmove). The values
 * live in a buffer of 2 x cap doubles that the caller places at the end
 * of its state.
 *
 * detect_ewm: a level and a scale that follow a trend, robustly: each new
 * value moves the level by a fraction of its residual, clipped at 3
 * scales (a Huber step), and the scale follows the clipped absolute
 * residual. O(1), two doubles.
 */
#ifndef DETECT_BASELINE_H
#define DETECT_BASELINE_H

#include <stddef.h>
#include <stdint.h>

typedef struct detect_win {
	uint32_t cap, n, head;
} detect_win;

static inline size_t
detect_win_bytes(uint32_t cap)
{
	return 2 * (size_t) cap * sizeof(double);
}

void detect_win_init(detect_win *w, uint32_t cap);
void detect_win_push(detect_win *w, double *buf, double x);
/* The q-quantile (0..1) of the values held (NaN if none). */
double detect_win_quantile(const detect_win *w, const double *buf, double q);
static inline double
detect_win_median(const detect_win *w, const double *buf)
{
	return detect_win_quantile(w, buf, 0.5);
}
/* Forget the values (the capacity stays). */
void detect_win_clear(detect_win *w);

typedef struct detect_ewm {
	double level, scale;
} detect_ewm;

/* Update with residual-clipping; alpha and beta in (0, 1]. floor bounds
 * the scale from below. Returns the residual before the update. */
double detect_ewm_update(
    detect_ewm *m, double y, double alpha, double beta, double floor);

/* Median of n values (n <= 64), for seeding; v is reordered. */
double detect_median_small(double *v, size_t n);

/* The weight of a new sample for a half-life of h samples. */
double detect_alpha(double halflife);

#endif /* DETECT_BASELINE_H */
