#include "bench/realistic.h"

#include <math.h>

const char *const real_names[REAL_METRICS] = { "loss", "grad_norm",
	"tokens_per_sec", "step_time", "entropy", "lr" };

static double
urand(real_gen *g)
{
	g->rng ^= g->rng >> 12;
	g->rng ^= g->rng << 25;
	g->rng ^= g->rng >> 27;
	return (double) ((g->rng * 2685821657736338717ull) >> 11) /
	    9007199254740992.0;
}

static double
nrand(real_gen *g)
{
	double u = urand(g), v = urand(g);

	return sqrt(-2 * log(u + 1e-300)) * cos(2 * M_PI * v);
}

void
real_init(real_gen *g, int rank, uint64_t steps, int64_t t0)
{
	g->rng   = 0x2545F4914F6CDD1Dull + (uint64_t) rank * 7919;
	g->steps = steps;
	g->time  = t0;
}

int64_t
real_step(real_gen *g)
{
	g->time += (int64_t) (500e6 * (1 + 0.01 * nrand(g)));
	return g->time;
}

double
real_value(real_gen *g, int m, uint64_t s)
{
	double x;

	switch (m) {
	case 0:
		x = (2.2 * pow((double) s + 10, -0.12) + 1.2) *
		    (1 + 0.01 * nrand(g));
		break;
	case 1:
		x = (0.35 + 0.5 / sqrt((double) s + 1)) * exp(0.35 * nrand(g));
		break;
	case 2:
		x = 65536 * (1 + 0.02 * nrand(g));
		break;
	case 3:
		x = 0.5 * (1 + 0.02 * fabs(nrand(g)));
		break;
	case 4:
		x = 3.0 * pow((double) s + 10, -0.05) * (1 + 0.005 * nrand(g));
		break;
	default:
		x = 3e-4 *
		    (0.1 + 0.45 * (1 + cos(M_PI * (double) s / (double) g->steps)));
		break;
	}
	return (double) (float) x;
}
