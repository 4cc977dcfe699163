#include "emitter/clock.h"

#if VTE_CLOCK_HAVE_TSC
#include <cpuid.h>
#endif

/* A calibration window shorter than this gives a rate that is kept only
 * until a better one exists; a longer one is trusted and used to detect
 * steps of the wall clock. */
#define TRUST_NS 100000000LL
/* The reference pair slides forward every second, so the rate is
 * measured over the last one to two seconds. */
#define SLIDE_NS 1000000000LL

int
vte_clock_tsc_usable(void)
{
#if VTE_CLOCK_HAVE_TSC
	unsigned a, b, c, d;

	/* CPUID 0x80000007 EDX bit 8: invariant TSC (Intel and AMD). */
	if (__get_cpuid(0x80000007u, &a, &b, &c, &d) == 0)
		return 0;
	return (d >> 8) & 1u;
#else
	return 0;
#endif
}

int64_t
vte_clock_real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t) ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t
vte_clock_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/*
 * One (ticks, realtime ns) pair. The tick value is the midpoint of two
 * reads around clock_gettime; of three tries the tightest is kept, so a
 * preemption between the reads does not skew the pair.
 */
static void
take_pair(int tsc, uint64_t *t, int64_t *n)
{
#if VTE_CLOCK_HAVE_TSC
	if (tsc) {
		uint64_t best = UINT64_MAX;

		for (int i = 0; i < 3; i++) {
			uint64_t a  = __rdtsc();
			int64_t  ns = vte_clock_real_ns();
			uint64_t b  = __rdtsc();

			if (b - a < best) {
				best = b - a;
				*t   = a + (b - a) / 2;
				*n   = ns;
			}
		}
		return;
	}
#endif
	(void) tsc;
	*n = vte_clock_real_ns();
	*t = (uint64_t) *n;
}

void
vte_clock_init(vte_clock *c, int tsc)
{
	c->tsc = tsc;
	take_pair(tsc, &c->t_now, &c->n_now);
	c->t_ref       = c->t_now;
	c->n_ref       = c->n_now;
	c->t_mid       = c->t_now;
	c->n_mid       = c->n_now;
	c->ns_per_tick = tsc ? 0.0 : 1.0;
	c->trusted     = 0;
}

/*
 * Every tick value handed to the converter was read after the reference
 * pair of the current window was taken (or is older than one window),
 * so even a rate measured over a short window gives an error no larger
 * than the jitter of two pairs: error = age / window * jitter.
 */
void
vte_clock_update(vte_clock *c)
{
	uint64_t t;
	int64_t  n, dn;
	double   rate;

	if (!c->tsc)
		return;
	take_pair(c->tsc, &t, &n);
	c->t_now = t;
	c->n_now = n;
	dn       = n - c->n_ref;
	if (dn <= 0 || t <= c->t_ref) {
		/* The wall clock stepped back: start a new window. */
		goto reset;
	}
	rate = (double) dn / (double) (t - c->t_ref);
	if (dn >= TRUST_NS) {
		double drift = rate / c->ns_per_tick - 1.0;

		if (c->trusted && (drift > 0.01 || drift < -0.01))
			goto reset; /* the wall clock stepped forward */
		c->ns_per_tick = rate;
		c->trusted     = 1;
	} else if (!c->trusted) {
		c->ns_per_tick = rate;
	}
	if (n - c->n_mid >= SLIDE_NS) {
		c->t_ref = c->t_mid;
		c->n_ref = c->n_mid;
		c->t_mid = t;
		c->n_mid = n;
	}
	return;
reset:
	c->t_ref = c->t_mid = t;
	c->n_ref = c->n_mid = n;
}

int64_t
vte_clock_to_ns(const vte_clock *c, uint64_t ticks)
{
	double back;

	if (!c->tsc)
		return (int64_t) ticks;
	/* Signed: a sample read after the latest pair extrapolates forward.
	 * Rounded by hand: llround() would make libvitals need libm. */
	back = (double) (int64_t) (c->t_now - ticks) * c->ns_per_tick;
	return c->n_now - (int64_t) (back < 0 ? back - 0.5 : back + 0.5);
}
