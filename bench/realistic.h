/*
 * realistic: deterministic training series for the benchmarks, shaped
 * like real runs: power-law loss with level-proportional noise, a
 * heavy-tailed grad-norm, steady throughput and step time with noise,
 * a slowly decaying entropy, a cosine learning rate. Values are float32
 * precision (what `loss.item()` of a float32 tensor gives); steps are
 * 0.5 s apart with 1% jitter.
 */
#ifndef BENCH_REALISTIC_H
#define BENCH_REALISTIC_H

#include <stdint.h>

#define REAL_METRICS 6

extern const char *const real_names[REAL_METRICS];

typedef struct real_gen {
	uint64_t rng;
	uint64_t steps; /* run length, for the learning-rate schedule */
	int64_t  time;  /* ns, of the current step */
} real_gen;

void real_init(real_gen *g, int rank, uint64_t steps, int64_t t0);
/* Advance to the next step: returns its wall time in ns. */
int64_t real_step(real_gen *g);
/* The value of metric m at step s. */
double real_value(real_gen *g, int m, uint64_t s);

#endif
