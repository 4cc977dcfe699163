/*
 * clock: the time of day and the monotonic clock, for the programs
 * (vitalsd, vitals). One home for what collector/ and tui/ used to define
 * each for themselves. The emitter keeps its own clock (emitter/clock.h:
 * the TSC read on the hot path) and detect/ has none: it is given times.
 */
#ifndef COMMON_CLOCK_H
#define COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Wall clock: ns since the Unix epoch. */
static inline int64_t
now_wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t) ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* Monotonic clock in ns, for intervals and deadlines. */
static inline int64_t
now_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* Wall clock in seconds since the Unix epoch. */
static inline double
now_wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* Monotonic clock in seconds. */
static inline double
now_mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

#endif /* COMMON_CLOCK_H */
