/*
 * clock: cheap timestamps for the logging hot path, converted to wall-clock
 * nanoseconds on the I/O thread.
 *
 * On x86-64 with an invariant TSC the hot path stores raw rdtsc ticks
 * (a few ns) instead of calling clock_gettime(CLOCK_REALTIME) (~23 ns here).
 * The I/O thread keeps a calibration: the latest (ticks, CLOCK_REALTIME ns)
 * pair, taken on every loop iteration, and a ticks-to-ns rate measured over
 * a sliding window of one to two seconds. A tick value is converted by
 * extrapolating backwards from the latest pair, so the error is the rate
 * error times the sample's age plus the jitter of one pair (tens of ns).
 * Elsewhere the "ticks" are CLOCK_REALTIME nanoseconds and the conversion
 * is the identity.
 *
 * Internal to libvitals (its API is include/vitals.h alone). It
 * owns the emitter's timestamps; the hot path (vte_clock_ticks) must not
 * make a system call where the TSC serves, and only the I/O thread
 * updates and reads a calibration.
 */
#ifndef VTE_CLOCK_H
#define VTE_CLOCK_H

#include <stdint.h>
#include <time.h>

#if defined(__x86_64__)
#include <x86intrin.h>
#define VTE_CLOCK_HAVE_TSC 1
#else
#define VTE_CLOCK_HAVE_TSC 0
#endif

#pragma GCC visibility push(hidden)

/* Calibration state: owned by the I/O thread, one thread at a time. */
typedef struct vte_clock {
	int      tsc;   /* 1: ticks are TSC; 0: ticks are realtime ns */
	uint64_t t_ref; /* reference pair for the rate (older) */
	int64_t  n_ref;
	uint64_t t_mid; /* candidate next reference, taken ~1 s later */
	int64_t  n_mid;
	uint64_t t_now; /* latest pair */
	int64_t  n_now;
	double   ns_per_tick;
	int      trusted; /* rate measured over >= 100 ms */
} vte_clock;

/* 1 if the TSC is invariant (constant rate across P-states and C-states),
 * so that raw ticks can stand for time. */
int vte_clock_tsc_usable(void);

/* Wall-clock and monotonic time in ns. */
int64_t vte_clock_real_ns(void);
int64_t vte_clock_mono_ns(void);

/* The hot-path timestamp: raw ticks when tsc is set, else realtime ns. */
static inline uint64_t
vte_clock_ticks(int tsc)
{
#if VTE_CLOCK_HAVE_TSC
	if (tsc)
		return __rdtsc();
#endif
	(void) tsc;
	return (uint64_t) vte_clock_real_ns();
}

/* Start a calibration: takes the first pair. Every tick value read after
 * this call converts with bounded error from the first update on. */
void vte_clock_init(vte_clock *c, int tsc);

/* Take a fresh pair and refresh the rate (call often: every loop). */
void vte_clock_update(vte_clock *c);

/* Ticks read by vte_clock_ticks(c->tsc) to realtime ns. */
int64_t vte_clock_to_ns(const vte_clock *c, uint64_t ticks);

#pragma GCC visibility pop

#endif /* VTE_CLOCK_H */
