/*
 * clock: the CPU time the benchmarks measure themselves with. Static
 * inline: each benchmark is one program.
 */
#ifndef BENCH_CLOCK_H
#define BENCH_CLOCK_H

#include <sys/resource.h>

/* This process's CPU (user + system, every thread) so far, in s. */
static inline double
cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double) ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6
	    + (double) ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

#endif
