/*
 * test_trainer: the trainer of the integration tests, and the checker of
 * what the store returns.
 *
 *	test_trainer emit --ranks R --steps S --metrics M [--threads]
 *	    [--step-us U] [--flush-ms T] [--first-step F] [--finite]
 *	    [--float32]
 *	test_trainer verify --ranks R --steps S --metrics M [--first-step F]
 *	    [--allow-missing] [--float32] < query.csv
 *
 * emit logs M metrics a step for S steps on each of R ranks (processes,
 * or threads with --threads: one emitter each) with values that are a
 * function of (rank, metric, step): NaN, +-Inf, -0.0 and random bit
 * patterns among them (--float32: each rounded to a float32, as a
 * trainer's float32 tensors log them; NaN stays NaN, which no float32
 * code of the store takes). It then waits up to --flush-ms for the collector's
 * acknowledgements and prints, per rank, "rank R logged L dropped D acked
 * A" on stdout. Exit 0 if everything was acknowledged, 3 if not.
 *
 * verify reads `vitals export --format csv` (or query) output and checks
 * that every expected sample is present exactly once, bit-exact, in step
 * order within its series. It prints "samples N missing M duplicate D
 * wrong W disorder O" and exits 0 only if all are zero (missing is allowed
 * with --allow-missing).
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vitals.h"

typedef struct cfg {
	long ranks, steps, metrics, step_us, flush_ms, first_step;
	int  threads, allow_missing;
	int  finite; /* NaN and infinities replaced by the step (receivers
	              * such as VictoriaMetrics drop NaN) */
	int  float32; /* values rounded to float32 */
} cfg;

static uint64_t
mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* The value of (rank, metric, step): special values at fixed steps, else
 * float32-precision numbers or random finite bit patterns. */
static double
value_of(long rank, long metric, uint64_t step)
{
	uint64_t h = mix(((uint64_t) rank << 48) ^ ((uint64_t) metric << 40) ^
	    step);
	uint64_t bits;
	double   d;

	switch (step % 1000) {
	case 7:
		return NAN;
	case 13:
		return INFINITY;
	case 17:
		return -INFINITY;
	case 19:
		return -0.0;
	}
	if (h & 1)
		return (double) (float) (1.0 + (double) metric +
		    sin((double) step / 100.0) +
		    (double) (h >> 40) / 16777216.0 * 0.01);
	/* Sign, an exponent in a sane range, random mantissa. */
	bits = (h & 0x800fffffffffffffull) |
	    ((uint64_t) (0x3c0 + ((h >> 52) % 0x80)) << 52);
	memcpy(&d, &bits, 8);
	return d;
}

static char metric_names[64][24];

typedef struct rank_job {
	const cfg  *c;
	long        rank;
	vt_emitter *em;
	int         status;
} rank_job;

static void
sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	if (us > 0)
		nanosleep(&ts, NULL);
}

static void
emit_rank(rank_job *j)
{
	const cfg *c = j->c;
	vt_stats   st;
	int        rc;

	for (long s = 0; s < c->steps; s++) {
		uint64_t step = (uint64_t) (c->first_step + s);

		for (long m = 0; m < c->metrics; m++) {
			double v = value_of(j->rank, m, step);

			if (c->finite && !isfinite(v))
				v = (double) step;
			if (c->float32 && !isnan(v))
				v = (double) (float) v;

			if (j->em)
				vt_emit(j->em, metric_names[m], step, v);
			else
				vt_log(metric_names[m], step, v);
		}
		sleep_us(c->step_us);
	}
	rc = vt_flush(j->em ? j->em : vt_default(), (unsigned) c->flush_ms);
	vt_get_stats(j->em ? j->em : vt_default(), &st);
	printf("rank %ld logged %llu dropped %llu acked %llu\n", j->rank,
	    (unsigned long long) st.logged, (unsigned long long) st.dropped,
	    (unsigned long long) st.acked);
	fflush(stdout);
	j->status = rc == 0 ? 0 : 3;
}

static void *
thread_main(void *arg)
{
	emit_rank(arg);
	return NULL;
}

static int
do_emit(const cfg *c)
{
	int  failed = 0;
	char buf[32];

	snprintf(buf, sizeof(buf), "%ld", c->ranks);
	setenv("WORLD_SIZE", buf, 1);
	if (c->threads) {
		rank_job  *jobs = calloc((size_t) c->ranks, sizeof(*jobs));
		pthread_t *th   = calloc((size_t) c->ranks, sizeof(*th));

		if (jobs == NULL || th == NULL)
			return 1;
		for (long r = 0; r < c->ranks; r++) {
			vt_opts o;

			vt_opts_init(&o);
			o.rank      = (int) r;
			jobs[r].c    = c;
			jobs[r].rank = r;
			if (vt_open(&o, &jobs[r].em) != 0)
				return 1;
			pthread_create(&th[r], NULL, thread_main, &jobs[r]);
		}
		for (long r = 0; r < c->ranks; r++) {
			pthread_join(th[r], NULL);
			failed |= jobs[r].status;
			vt_close(jobs[r].em);
		}
		free(jobs);
		free(th);
		return failed;
	}
	for (long r = 0; r < c->ranks; r++) {
		pid_t pid = fork();

		if (pid < 0)
			return 1;
		if (pid == 0) {
			rank_job j = { c, r, NULL, 0 };

			snprintf(buf, sizeof(buf), "%ld", r);
			setenv("RANK", buf, 1);
			emit_rank(&j);
			/* exit, not _exit: the default emitter flushes at exit. */
			exit(j.status);
		}
	}
	for (long r = 0; r < c->ranks; r++) {
		int st;

		if (wait(&st) < 0 || !WIFEXITED(st))
			failed = 1;
		else if (WEXITSTATUS(st) != 0)
			failed = WEXITSTATUS(st);
	}
	return failed;
}

/* Split a CSV line in place (no quoted fields: our names need none). */
static int
split(char *line, char **f, int max)
{
	int n = 0;

	f[n++] = line;
	for (char *p = line; *p && n < max; p++) {
		if (*p == ',') {
			*p     = 0;
			f[n++] = p + 1;
		}
	}
	return n;
}

static int
do_verify(const cfg *c)
{
	size_t    n    = (size_t) (c->ranks * c->metrics * c->steps);
	uint8_t  *seen = calloc(n, 1);
	uint64_t *last = calloc((size_t) (c->ranks * c->metrics), 8);
	char      line[512];
	long      samples = 0, dup = 0, wrong = 0, disorder = 0, missing = 0;

	if (seen == NULL || last == NULL)
		return 1;
	if (fgets(line, sizeof(line), stdin) == NULL ||
	    strncmp(line, "time,step,rank,metric,value", 27) != 0) {
		fprintf(stderr, "verify: no CSV header\n");
		return 1;
	}
	while (fgets(line, sizeof(line), stdin) != NULL) {
		char    *f[8];
		int      nf;
		long     rank, metric;
		uint64_t step, idx;
		double   got, want;

		line[strcspn(line, "\n")] = 0;
		nf = split(line, f, 8);
		/* The collector's rows (vitals/end: an emitter closed) are
		 * not samples the trainer sent. */
		if (nf >= 5 && strncmp(f[3], "vitals/", 7) == 0)
			continue;
		if (nf < 5 || f[3][0] != 'm') {
			wrong++;
			continue;
		}
		step   = strtoull(f[1], NULL, 10);
		rank   = strtol(f[2], NULL, 10);
		metric = strtol(f[3] + 1, NULL, 10);
		got    = strtod(f[4], NULL);
		if (rank < 0 || rank >= c->ranks || metric < 0 ||
		    metric >= c->metrics || step < (uint64_t) c->first_step ||
		    step >= (uint64_t) (c->first_step + c->steps)) {
			wrong++;
			continue;
		}
		samples++;
		idx = ((uint64_t) rank * (uint64_t) c->metrics +
			  (uint64_t) metric) *
			(uint64_t) c->steps +
		    (step - (uint64_t) c->first_step);
		if (seen[idx]++)
			dup++;
		want = value_of(rank, metric, step);
		if (c->float32 && !isnan(want))
			want = (double) (float) want;
		if (isnan(want) ? !isnan(got) : memcmp(&got, &want, 8) != 0)
			wrong++;
		if (last[rank * c->metrics + metric] > step)
			disorder++;
		last[rank * c->metrics + metric] = step;
	}
	for (size_t i = 0; i < n; i++)
		missing += seen[i] == 0;
	printf("samples %ld missing %ld duplicate %ld wrong %ld disorder %ld\n",
	    samples, missing, dup, wrong, disorder);
	free(seen);
	free(last);
	return (missing && !c->allow_missing) || dup || wrong || disorder;
}

int
main(int argc, char **argv)
{
	cfg c = { 4, 1000, 5, 0, 10000, 0, 0, 0, 0, 0 };

	if (argc < 2) {
		fprintf(stderr, "usage: test_trainer emit|verify [options]\n");
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "0";
		long       *dst = NULL;
		char       *end;

		if (strcmp(a, "--threads") == 0) {
			c.threads = 1;
			continue;
		}
		if (strcmp(a, "--finite") == 0) {
			c.finite = 1;
			continue;
		}
		if (strcmp(a, "--float32") == 0) {
			c.float32 = 1;
			continue;
		}
		if (strcmp(a, "--allow-missing") == 0) {
			c.allow_missing = 1;
			continue;
		}
		if (strcmp(a, "--ranks") == 0)
			dst = &c.ranks;
		else if (strcmp(a, "--steps") == 0)
			dst = &c.steps;
		else if (strcmp(a, "--metrics") == 0)
			dst = &c.metrics;
		else if (strcmp(a, "--step-us") == 0)
			dst = &c.step_us;
		else if (strcmp(a, "--flush-ms") == 0)
			dst = &c.flush_ms;
		else if (strcmp(a, "--first-step") == 0)
			dst = &c.first_step;
		else {
			fprintf(stderr, "test_trainer: unknown option %s\n", a);
			return 2;
		}
		errno = 0;
		*dst  = strtol(v, &end, 10);
		if (errno || *end || *dst < 0) {
			fprintf(stderr, "test_trainer: bad value for %s\n", a);
			return 2;
		}
		i++;
	}
	if (c.metrics < 1 || c.metrics > 64 || c.ranks < 1) {
		fprintf(stderr, "test_trainer: 1..64 metrics, 1+ ranks\n");
		return 2;
	}
	for (long m = 0; m < c.metrics; m++)
		snprintf(metric_names[m], sizeof(metric_names[m]), "m%ld", m);
	if (strcmp(argv[1], "emit") == 0)
		return do_emit(&c);
	if (strcmp(argv[1], "verify") == 0)
		return do_verify(&c);
	fprintf(stderr, "test_trainer: unknown mode %s\n", argv[1]);
	return 2;
}
