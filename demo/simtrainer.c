/*
 * vt-simtrainer: a simulated training run for the demo and the benchmarks.
 * Each rank is a process that logs what a real trainer logs, with the
 * one-line API (vt_log), at a realistic pace:
 *
 *	loss          power-law decay with noise proportional to the level
 *	grad_norm     heavy-tailed around a slowly falling level
 *	tokens_per_sec  steady with noise, and a slow step every --eval-every
 *	step_time     its inverse
 *	entropy       slowly decaying
 *	lr            warm-up then cosine decay
 *
 * Values are float32 precision, as `loss.item()` of a float32 tensor is.
 * Faults can be injected: --spike-at S (a loss spike led by grad-norm),
 * --nan-at S, --stall-at S (one rank sleeps --stall-s seconds), --slow-rank
 * R (that rank is 5% slower from the start).
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vitals.h"

typedef struct sim {
	long     steps, ranks, step_ms, eval_every;
	long     spike_at, nan_at, stall_at, stall_s, slow_rank;
	uint64_t seed;
} sim;

/* xorshift64*: deterministic per rank, so runs can be compared. */
static double
urand(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return (double) ((*s * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

static double
nrand(uint64_t *s)
{
	double u = urand(s), v = urand(s);

	if (u < 1e-300)
		u = 1e-300;
	return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

static double
f32(double x)
{
	return (double) (float) x;
}

static void
sleep_ms(double ms)
{
	struct timespec ts;

	if (ms <= 0)
		return;
	ts.tv_sec  = (time_t) (ms / 1000);
	ts.tv_nsec = (long) ((ms - (double) ts.tv_sec * 1000) * 1e6);
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static void
run_rank(const sim *m, int rank)
{
	uint64_t s    = m->seed * 7919 + (uint64_t) rank + 1;
	double   slow = rank == m->slow_rank ? 1.05 : 1.0;
	double   spike = 0;

	for (long step = 1; step <= m->steps; step++) {
		double level = 2.2 * pow((double) step + 10, -0.12) + 1.2;
		double loss  = level * (1 + 0.01 * nrand(&s));
		double gn    = (0.35 + 0.5 / sqrt((double) step)) *
		    exp(0.35 * nrand(&s));
		double st    = m->step_ms / 1000.0 * slow *
		    (1 + 0.02 * fabs(nrand(&s)));
		double lr;

		if (m->eval_every > 0 && step % m->eval_every == 0)
			st *= 3; /* evaluation step: slow but normal */
		if (m->spike_at > 0 && step >= m->spike_at - 3 &&
		    step < m->spike_at + 20) {
			/* Grad-norm leads, the loss follows, then recovers. */
			long k = step - (m->spike_at - 3);
			spike  = k < 3 ? pow(6, k + 1) : 6.0 * exp(-(k - 3) / 4.0);
			gn *= 1 + (k < 3 ? spike : spike * 20);
			if (step >= m->spike_at)
				loss *= 1 + spike / 3;
		}
		if (step == m->nan_at && rank == 0)
			loss = NAN;
		lr = step < 200 ? 3e-4 * step / 200 :
				  3e-4 * (0.1 + 0.9 * 0.5 *
						   (1 + cos(M_PI * step /
							   (double) m->steps)));
		vt_log("loss", (uint64_t) step, f32(loss));
		vt_log("grad_norm", (uint64_t) step, f32(gn));
		vt_log("tokens_per_sec", (uint64_t) step, f32(524288 / st / 8));
		vt_log("step_time", (uint64_t) step, f32(st));
		vt_log("entropy", (uint64_t) step,
		    f32(3.0 * pow((double) step + 10, -0.05) *
			(1 + 0.005 * nrand(&s))));
		vt_log("lr", (uint64_t) step, f32(lr));
		if (step == m->stall_at && rank == m->ranks - 1)
			sleep_ms((double) m->stall_s * 1000);
		sleep_ms(st * 1000);
	}
}

static int
opt(const char *name, const char *v, long *out)
{
	char *end;

	errno = 0;
	*out  = strtol(v, &end, 10);
	if (errno || *end || end == v || *out < 0) {
		fprintf(stderr, "vt-simtrainer: %s: expected a number, got "
				"'%s'\n",
		    name, v);
		return -1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	sim   m = { 2000, 4, 50, 100, 0, 0, 0, 20, -1, 1 };
	long  seed;
	int   failed = 0;
	char  buf[32];

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
		long       *dst = NULL;

		if (strcmp(a, "--steps") == 0)
			dst = &m.steps;
		else if (strcmp(a, "--ranks") == 0)
			dst = &m.ranks;
		else if (strcmp(a, "--step-ms") == 0)
			dst = &m.step_ms;
		else if (strcmp(a, "--eval-every") == 0)
			dst = &m.eval_every;
		else if (strcmp(a, "--spike-at") == 0)
			dst = &m.spike_at;
		else if (strcmp(a, "--nan-at") == 0)
			dst = &m.nan_at;
		else if (strcmp(a, "--stall-at") == 0)
			dst = &m.stall_at;
		else if (strcmp(a, "--stall-s") == 0)
			dst = &m.stall_s;
		else if (strcmp(a, "--slow-rank") == 0)
			dst = &m.slow_rank;
		else if (strcmp(a, "--seed") == 0)
			dst = &seed;
		else {
			fprintf(stderr,
			    "usage: vt-simtrainer [--steps N] [--ranks N] "
			    "[--step-ms N] [--eval-every N] [--spike-at S] "
			    "[--nan-at S] [--stall-at S] [--stall-s N] "
			    "[--slow-rank R] [--seed N]\n");
			return 2;
		}
		if (opt(a, v, dst) != 0)
			return 2;
		if (dst == &seed)
			m.seed = (uint64_t) seed;
		i++;
	}
	if (m.ranks < 1 || m.ranks > 1024) {
		fprintf(stderr, "vt-simtrainer: --ranks must be 1..1024\n");
		return 2;
	}
	snprintf(buf, sizeof(buf), "%ld", m.ranks);
	setenv("WORLD_SIZE", buf, 1);
	if (getenv("VITALS_RUN") == NULL) {
		/* Every rank must name the same run. */
		char      run[64];
		time_t    now = time(NULL);
		struct tm tm;

		gmtime_r(&now, &tm);
		strftime(run, sizeof(run), "sim-%Y%m%d-%H%M%S", &tm);
		setenv("VITALS_RUN", run, 1);
	}
	for (long r = 0; r < m.ranks; r++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("vt-simtrainer: fork");
			return 1;
		}
		if (pid == 0) {
			/* Identity comes from the environment, as under
			 * torchrun. */
			snprintf(buf, sizeof(buf), "%ld", r);
			setenv("RANK", buf, 1);
			setenv("LOCAL_RANK", buf, 1);
			run_rank(&m, (int) r);
			vt_shutdown();
			_exit(0);
		}
	}
	for (long r = 0; r < m.ranks; r++) {
		int st;

		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			failed = 1;
	}
	return failed;
}
