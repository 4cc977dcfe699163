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

#include "bench/realistic.h"
#include "vitals.h"

typedef struct job {
	int      rank;
	uint64_t steps;
	int64_t  t0;
	int      status;
} job;

static void *
emit_rank(void *arg)
{
	job        *j = arg;
	vt_opts     o;
	vt_emitter *em;
	real_gen    g;
	vt_stats    st;

	vt_opts_init(&o);
	o.rank             = j->rank;
	o.run              = "peers";
	o.max_buffer_bytes = (size_t) 1 << 30;
	if (vt_open(&o, &em) != 0) {
		j->status = 1;
		return NULL;
	}
	real_init(&g, j->rank, j->steps, j->t0);
	for (uint64_t s = 0; s < j->steps; s++) {
		int64_t t = real_step(&g);

		for (int m = 0; m < REAL_METRICS; m++)
			vt_emit_at(em, real_names[m], s, t,
			    real_value(&g, m, s));
	}
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

		for (int r = 0; r < ranks; r++) {
			jobs[r] = (job) { r, steps, t0, 0 };
			pthread_create(&th[r], NULL, emit_rank, &jobs[r]);
		}
		for (int r = 0; r < ranks; r++) {
			pthread_join(th[r], NULL);
			failed |= jobs[r].status;
		}
		return failed;
	}
	return 2;
}
