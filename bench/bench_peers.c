/*
 * bench_peers: the same realistic samples for vitals and for a peer
 * time-series database.
 *
 *	bench_peers vm RANKS STEPS T0_MS [METRICS] > import.jsonl
 *	    VictoriaMetrics' JSON line import format, one line per series
 *	    (run, rank and metric as labels; times in ms)
 *	bench_peers emit RANKS STEPS T0_MS [METRICS]
 *	    the same samples sent to $VITALS_ENDPOINT with libvitals, one
 *	    emitter (thread) per rank; returns when all are acknowledged
 *
 * METRICS is the number of series per rank, 6 by default (the realistic
 * ones). A wide run (`make bench-peers-wide`) logs many more per rank,
 * as per-layer statistics: metric m is "layer%05d/NAME" with NAME the
 * realistic metric m % 6 and its value that metric's scaled by the layer
 * (1 + 0.001 x layer), so every layer of a kind moves alike, as they do.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "bench/clock.h"
#include "bench/realistic.h"
#include "vitals.h"

typedef struct job {
	int      rank;
	int      metrics;
	uint64_t steps;
	int64_t  t0;
	int      status;
	int64_t *times;  /* generated before the clock starts */
	double  *values; /* steps x metrics */
	char   **names;  /* metrics */
} job;

static pthread_barrier_t start_line;

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The name of metric m of a run with metrics series per rank, in buf. */
static const char *
metric_name(int m, int metrics, char *buf, size_t size)
{
	if (metrics == REAL_METRICS)
		return real_names[m];
	snprintf(buf, size, "layer%05d/%s", m / REAL_METRICS,
	    real_names[m % REAL_METRICS]);
	return buf;
}

/* Rank r's times (steps) and values (steps x metrics, step by step). */
static void
generate(int r, int metrics, uint64_t steps, int64_t t0, int64_t *times,
    double *values)
{
	real_gen g;

	real_init(&g, r, steps, t0);
	for (uint64_t s = 0; s < steps; s++) {
		times[s] = real_step(&g);
		for (int m = 0; m < metrics; m++) {
			double v = m < REAL_METRICS
			    ? real_value(&g, m, s)
			    : values[s * (uint64_t) metrics
			        + (uint64_t) (m % REAL_METRICS)];

			values[s * (uint64_t) metrics + (uint64_t) m]
			    = (double) (float) (v
			        * (1.0 + 0.001 * (m / REAL_METRICS)));
		}
	}
}

/*
 * An emitter's buffer for n samples logged without a flush: its ring (an
 * eighth of the buffer, 32 bytes a slot) holds them all, so none is
 * dropped while vitalsd catches up. A fixed 1 GiB made every emitter
 * write a ring of 128 MiB before the clock started, 1 GiB of page faults
 * for the wide run on a machine shared with vitalsd.
 */
static size_t
buffer_for(uint64_t n)
{
	size_t b = (size_t) 64 << 20;

	while (b < ((size_t) 1 << 30) && b / 8 / 32 < n)
		b *= 2;
	return b;
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
	o.max_buffer_bytes = buffer_for(j->steps * (uint64_t) j->metrics);
	if (vt_open(&o, &em) != 0) {
		j->status = 1;
		return NULL;
	}
	pthread_barrier_wait(&start_line);
	for (uint64_t s = 0; s < j->steps; s++)
		for (int m = 0; m < j->metrics; m++)
			vt_emit_at(em, j->names[m], s, j->times[s],
			    j->values[s * (uint64_t) j->metrics
			        + (uint64_t) m]);
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
write_vm(int ranks, int metrics, uint64_t steps, int64_t t0)
{
	double  *v = malloc(sizeof(double) * steps * (uint64_t) metrics);
	int64_t *t = malloc(sizeof(int64_t) * steps);
	char     buf[64];

	if (v == NULL || t == NULL)
		return 1;
	for (int r = 0; r < ranks; r++) {
		generate(r, metrics, steps, t0, t, v);
		for (int m = 0; m < metrics; m++) {
			printf("{\"metric\":{\"__name__\":\"%s\",\"run\":"
			       "\"peers\",\"rank\":\"%d\"},\"values\":[",
			    metric_name(m, metrics, buf, sizeof(buf)), r);
			for (uint64_t s = 0; s < steps; s++)
				printf("%s%.9g", s ? "," : "",
				    v[s * (uint64_t) metrics + (uint64_t) m]);
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
	int      ranks, metrics = REAL_METRICS;
	uint64_t steps;
	int64_t  t0;

	if (argc != 5 && argc != 6) {
		fprintf(stderr,
		    "usage: bench_peers vm|emit RANKS STEPS T0_MS "
		    "[METRICS]\n");
		return 2;
	}
	ranks = (int) strtol(argv[2], NULL, 10);
	steps = strtoull(argv[3], NULL, 10);
	t0    = strtoll(argv[4], NULL, 10) * 1000000;
	if (argc == 6)
		metrics = (int) strtol(argv[5], NULL, 10);
	/* 65,535 names is an emitter's limit. */
	if (ranks < 1 || ranks > 256 || steps < 1 || metrics < REAL_METRICS
	    || metrics > 65535)
		return 2;
	if (strcmp(argv[1], "vm") == 0)
		return write_vm(ranks, metrics, steps, t0);
	if (strcmp(argv[1], "emit") == 0) {
		pthread_t th[256];
		job       jobs[256];
		char    **names  = malloc((size_t) metrics * sizeof(char *));
		int       failed = 0;
		double    t, cpu;

		if (names == NULL)
			return 1;
		for (int m = 0; m < metrics; m++) {
			char buf[64];

			names[m] = strdup(
			    metric_name(m, metrics, buf, sizeof(buf)));
			if (names[m] == NULL)
				return 1;
		}
		/* Values are made first: the clock times vitals, not the
		 * generator's pow and exp. */
		for (int r = 0; r < ranks; r++) {
			jobs[r] = (job) { r, metrics, steps, t0, 0, NULL, NULL,
				names };
			jobs[r].times  = malloc(steps * sizeof(int64_t));
			jobs[r].values = malloc(
			    steps * (uint64_t) metrics * sizeof(double));
			if (jobs[r].times == NULL || jobs[r].values == NULL)
				return 1;
			generate(r, metrics, steps, t0, jobs[r].times,
			    jobs[r].values);
		}
		pthread_barrier_init(&start_line, NULL, (unsigned) ranks + 1);
		for (int r = 0; r < ranks; r++)
			pthread_create(&th[r], NULL, emit_rank, &jobs[r]);
		pthread_barrier_wait(&start_line);
		t   = now_s();
		cpu = cpu_s();
		for (int r = 0; r < ranks; r++) {
			pthread_join(th[r], NULL);
			failed |= jobs[r].status;
			free(jobs[r].times);
			free(jobs[r].values);
		}
		t   = now_s() - t;
		cpu = cpu_s() - cpu;
		printf("%.3f M samples/s (%llu samples in %.2f s, from the "
		       "first call until every sample was acknowledged), "
		       "emitters' CPU %.2f s (%.3f us/sample)\n",
		    (double) ranks * (double) steps * metrics / t / 1e6,
		    (unsigned long long) ranks * steps * (uint64_t) metrics, t,
		    cpu,
		    cpu / ((double) ranks * (double) steps * metrics) * 1e6);
		for (int m = 0; m < metrics; m++)
			free(names[m]);
		free(names);
		return failed;
	}
	return 2;
}
