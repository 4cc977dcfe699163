/*
 * bench_peers: the same realistic samples for vitals and for a peer
 * time-series database.
 *
 *	bench_peers vm RANKS STEPS T0_MS > import.jsonl
 *	    VictoriaMetrics' JSON line import format, one line per series
 *	    (run, rank and metric as labels; times in ms)
 *	bench_peers emit RANKS STEPS T0_MS
 *	    the same samples sent to $VITALS_ENDPOINT with libvitals, one
 *	    emitter (thread) per rank; returns when all are acknowledged
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/realistic.h"
#include "vitals.h"

typedef struct job {
	int      rank;
	uint64_t steps;
	int64_t  t0;
	int      status;
	int64_t *times;  /* generated before the clock starts */
	double  *values; /* steps x REAL_METRICS */
} job;

static pthread_barrier_t start_line;

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *
emit_rank(void *arg)
{
	job        *j = arg;
	vt_opts     o;
	vt_emitter *em;
	vt_stats    st;

	vt_opts_init(&o);
	o.rank             = j->rank;
	o.run              = "peers";
	o.max_buffer_bytes = (size_t) 1 << 30;
	if (vt_open(&o, &em) != 0) {
		j->status = 1;
		return NULL;
	}
	pthread_barrier_wait(&start_line);
	for (uint64_t s = 0; s < j->steps; s++)
		for (int m = 0; m < REAL_METRICS; m++)
			vt_emit_at(em, real_names[m], s, j->times[s],
			    j->values[s * REAL_METRICS + m]);
	j->status = vt_flush(em, 600000) != 0;
	vt_get_stats(em, &st);
	if (st.dropped != 0)
		j->status = 1;
	vt_close(em);
	return NULL;
}

/* One JSON line per (rank, metric): every value and timestamp. Values are
 * generated in step order for all metrics at once, so keep them. */
static int
write_vm(int ranks, uint64_t steps, int64_t t0)
{
	double  *v = malloc(sizeof(double) * steps * REAL_METRICS);
	int64_t *t = malloc(sizeof(int64_t) * steps);

	if (v == NULL || t == NULL)
		return 1;
	for (int r = 0; r < ranks; r++) {
		real_gen g;

		real_init(&g, r, steps, t0);
		for (uint64_t s = 0; s < steps; s++) {
			t[s] = real_step(&g);
			for (int m = 0; m < REAL_METRICS; m++)
				v[s * REAL_METRICS + m] = real_value(&g, m, s);
		}
		for (int m = 0; m < REAL_METRICS; m++) {
			printf("{\"metric\":{\"__name__\":\"%s\",\"run\":"
			       "\"peers\",\"rank\":\"%d\"},\"values\":[",
			    real_names[m], r);
			for (uint64_t s = 0; s < steps; s++)
				printf("%s%.9g", s ? "," : "",
				    v[s * REAL_METRICS + m]);
			printf("],\"timestamps\":[");
			for (uint64_t s = 0; s < steps; s++)
				printf("%s%lld", s ? "," : "",
				    (long long) (t[s] / 1000000));
			printf("]}\n");
		}
	}
	free(v);
	free(t);
	return 0;
}

int
main(int argc, char **argv)
{
	int      ranks;
	uint64_t steps;
	int64_t  t0;

	if (argc != 5) {
		fprintf(stderr, "usage: bench_peers vm|emit RANKS STEPS T0_MS\n");
		return 2;
	}
	ranks = (int) strtol(argv[2], NULL, 10);
	steps = strtoull(argv[3], NULL, 10);
	t0    = strtoll(argv[4], NULL, 10) * 1000000;
	if (ranks < 1 || ranks > 256 || steps < 1)
		return 2;
	if (strcmp(argv[1], "vm") == 0)
		return write_vm(ranks, steps, t0);
	if (strcmp(argv[1], "emit") == 0) {
		pthread_t th[256];
		job       jobs[256];
		int       failed = 0;
		double    t;

		/* Values are made first: the clock times vitals, not the
		 * generator's pow and exp. */
		for (int r = 0; r < ranks; r++) {
			real_gen g;

			jobs[r]        = (job) { r, steps, t0, 0, NULL, NULL };
			jobs[r].times  = malloc(steps * sizeof(int64_t));
			jobs[r].values = malloc(steps * REAL_METRICS *
			    sizeof(double));
			if (jobs[r].times == NULL || jobs[r].values == NULL)
				return 1;
			real_init(&g, r, steps, t0);
			for (uint64_t s = 0; s < steps; s++) {
				jobs[r].times[s] = real_step(&g);
				for (int m = 0; m < REAL_METRICS; m++)
					jobs[r].values[s * REAL_METRICS + m] =
					    real_value(&g, m, s);
			}
		}
		pthread_barrier_init(&start_line, NULL, (unsigned) ranks + 1);
		for (int r = 0; r < ranks; r++)
			pthread_create(&th[r], NULL, emit_rank, &jobs[r]);
		pthread_barrier_wait(&start_line);
		t = now_s();
		for (int r = 0; r < ranks; r++) {
			pthread_join(th[r], NULL);
			failed |= jobs[r].status;
			free(jobs[r].times);
			free(jobs[r].values);
		}
		t = now_s() - t;
		printf("%.3f M samples/s (%llu samples in %.2f s, from the "
		       "first call until every sample was acknowledged)\n",
		    (double) ranks * (double) steps * REAL_METRICS / t / 1e6,
		    (unsigned long long) ranks * steps * REAL_METRICS, t);
		return failed;
	}
	return 2;
}
