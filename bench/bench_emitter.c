/*
 * bench_emitter: cost of one vt_emit() call in a tight loop, on 1 and on 4
 * threads, with a tiny collector (a ROUTER on a thread of this process
 * that acknowledges every batch without decoding it) and a cap large
 * enough that nothing is dropped.
 *
 * Calls are timed in groups of 64 with clock_gettime(CLOCK_MONOTONIC)
 * (timing each call alone would cost more than the call); each group
 * gives one per-call estimate, and the median and 99th percentile of
 * the estimates are printed:
 *
 *	emitter 1 thread: median 12.3 ns, p99 40.1 ns (...)
 *
 * Usage: bench_emitter [calls]   (default 4000000)
 *
 * The calls are made by one thread, then shared by four. The ring of a
 * 1 GiB cap holds them all, so nothing is dropped even when the I/O
 * thread and the collector, sharing the CPUs with the producers, fall
 * behind; the dropped count is printed to show it.
 *
 * Last, the cost of an emitter at rest between steps: a trainer logging
 * 8 metrics every 100 ms for 3 s. The I/O thread's CPU time and wakeups
 * come from /proc/self/task/TID (schedstat, status) of the thread named
 * vitals-io:
 *
 *	emitter at rest (8 samples every 100 ms): I/O thread 0.9 ms CPU
 *	per s (0.09% of a core), 14 wakeups per s
 */
#include "vitals.h"

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "wire/wire.h"

#define GROUP 64
#define MAX_THREADS 4

static int64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---- the acking collector ---------------------------------------------- */

typedef struct acker {
	void      *ctx, *sock;
	pthread_t  th;
	atomic_int stop;
} acker;

static void *
acker_main(void *arg)
{
	acker *a = arg;

	while (!atomic_load(&a->stop)) {
		zmq_pollitem_t it = { a->sock, 0, ZMQ_POLLIN, 0 };
		zmq_msg_t      id, body;

		if (zmq_poll(&it, 1, 10) <= 0)
			continue;
		zmq_msg_init(&id);
		zmq_msg_init(&body);
		if (zmq_msg_recv(&id, a->sock, ZMQ_DONTWAIT) >= 0
		    && zmq_msg_more(&id)
		    && zmq_msg_recv(&body, a->sock, 0) >= 0
		    && zmq_msg_size(&body) >= WIRE_BATCH_FIXED) {
			const uint8_t *p = zmq_msg_data(&body);
			uint8_t        buf[WIRE_ACK_SIZE];
			wire_ack ack = { WIRE_ACK_STORED, wire_get64(p + 8),
				wire_get64(p + 16) };

			wire_ack_encode(buf, &ack);
			zmq_send(a->sock, zmq_msg_data(&id), zmq_msg_size(&id),
			    ZMQ_SNDMORE);
			zmq_send(a->sock, buf, sizeof(buf), 0);
		}
		zmq_msg_close(&id);
		zmq_msg_close(&body);
	}
	zmq_close(a->sock);
	return NULL;
}

static int
acker_start(acker *a, const char *ep)
{
	int zero = 0;

	a->ctx  = zmq_ctx_new();
	a->sock = zmq_socket(a->ctx, ZMQ_ROUTER);
	zmq_setsockopt(a->sock, ZMQ_LINGER, &zero, sizeof(zero));
	if (zmq_bind(a->sock, ep) != 0) {
		fprintf(
		    stderr, "bind %s: %s\n", ep, zmq_strerror(zmq_errno()));
		return -1;
	}
	atomic_init(&a->stop, 0);
	return pthread_create(&a->th, NULL, acker_main, a) == 0 ? 0 : -1;
}

static void
acker_stop(acker *a)
{
	atomic_store(&a->stop, 1);
	pthread_join(a->th, NULL);
	zmq_ctx_term(a->ctx);
}

/* ---- the producers ----------------------------------------------------- */

typedef struct worker {
	vt_emitter        *em;
	uint64_t           calls;
	double            *est; /* per-call estimate of each group, ns */
	size_t             nest;
	uint64_t           full;
	pthread_barrier_t *bar;
	int                phase; /* vt_emit_phase() instead of vt_emit() */
} worker;

static const char *const names[]
    = { "loss", "grad_norm", "lr", "tokens_per_s" };
static const char *const phases[]
    = { "data", "forward", "backward", "optimizer" };

/* One call of the kind measured. */
static int
call(const worker *w, int i, uint64_t step)
{
	if (w->phase)
		return vt_emit_phase(w->em, phases[i & 3], step);
	return vt_emit(w->em, names[i & 3], step, (double) step * 0.5);
}

static void *
work(void *arg)
{
	worker  *w    = arg;
	uint64_t step = 0;

	/* Warm-up: intern the names, fault in the stack and caches. */
	for (int i = 0; i < 10000; i++)
		call(w, i, step++);
	pthread_barrier_wait(w->bar);
	for (uint64_t g = 0; g < w->calls / GROUP; g++) {
		int64_t  t0   = mono_ns(), t1;
		unsigned full = 0;

		for (int i = 0; i < GROUP; i++) {
			full += call(w, i, step) == VT_EFULL;
			step++;
		}
		t1                = mono_ns();
		w->est[w->nest++] = (double) (t1 - t0) / GROUP;
		w->full += full;
	}
	return NULL;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;

	return (x > y) - (x < y);
}

static int
run(const char *ep, int nthreads, uint64_t calls, int phase)
{
	vt_opts           o;
	vt_emitter       *em;
	pthread_t         th[MAX_THREADS];
	worker            w[MAX_THREADS];
	pthread_barrier_t bar;
	double           *all;
	size_t            n    = 0;
	uint64_t          full = 0;
	vt_stats          st;
	int64_t           t0, t1;
	int               rc;

	vt_opts_init(&o);
	o.endpoint         = ep;
	o.run              = "bench";
	o.max_buffer_bytes = (size_t) 1 << 30;
	rc                 = vt_open(&o, &em);
	if (rc != 0) {
		fprintf(stderr, "vt_open: %s\n", vt_strerror(rc));
		return 1;
	}
	pthread_barrier_init(&bar, NULL, (unsigned) nthreads + 1);
	for (int k = 0; k < nthreads; k++) {
		w[k] = (worker) { em, calls / (uint64_t) nthreads, NULL, 0, 0,
			&bar, phase };
		w[k].est = malloc((w[k].calls / GROUP + 1) * sizeof(double));
		if (w[k].est == NULL)
			return 1;
		pthread_create(&th[k], NULL, work, &w[k]);
	}
	pthread_barrier_wait(&bar);
	t0 = mono_ns();
	for (int k = 0; k < nthreads; k++)
		pthread_join(th[k], NULL);
	t1 = mono_ns();
	pthread_barrier_destroy(&bar);

	all = malloc((calls / GROUP + (size_t) nthreads) * sizeof(double));
	if (all == NULL)
		return 1;
	for (int k = 0; k < nthreads; k++) {
		memcpy(all + n, w[k].est, w[k].nest * sizeof(double));
		n += w[k].nest;
		full += w[k].full;
		free(w[k].est);
	}
	qsort(all, n, sizeof(double), cmp_double);
	rc = vt_flush(em, 30000);
	vt_get_stats(em, &st);
	printf("emitter%s %d thread%s: median %.1f ns, p99 %.1f ns "
	       "(%llu calls, %.1f Mcalls/s total, dropped %llu, "
	       "acked %llu of %llu%s)\n",
	    phase ? " vt_emit_phase" : "", nthreads, nthreads > 1 ? "s" : "",
	    all[n / 2], all[(size_t) ((double) n * 0.99)],
	    (unsigned long long) calls,
	    (double) calls / (double) (t1 - t0) * 1e3,
	    (unsigned long long) full, (unsigned long long) st.acked,
	    (unsigned long long) st.logged,
	    rc == 0 ? "" : ", flush timed out");
	free(all);
	vt_close(em);
	return 0;
}

/* CPU ns and voluntary context switches of this process's vitals-io
 * threads, from /proc/self/task. */
static void
io_thread_usage(uint64_t *cpu_ns, uint64_t *switches)
{
	DIR           *d = opendir("/proc/self/task");
	struct dirent *e;

	*cpu_ns = *switches = 0;
	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		char               path[300], line[128];
		FILE              *f;
		unsigned long long v;
		int                io = 0;

		if (e->d_name[0] == '.')
			continue;
		snprintf(
		    path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		if ((f = fopen(path, "r")) != NULL) {
			io = fgets(line, sizeof(line), f) != NULL
			    && strncmp(line, "vitals-io", 9) == 0;
			fclose(f);
		}
		if (!io)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/schedstat",
		    e->d_name);
		if ((f = fopen(path, "r")) != NULL) {
			if (fscanf(f, "%llu", &v) == 1)
				*cpu_ns += v;
			fclose(f);
		}
		snprintf(path, sizeof(path), "/proc/self/task/%s/status",
		    e->d_name);
		if ((f = fopen(path, "r")) != NULL) {
			while (fgets(line, sizeof(line), f) != NULL)
				if (sscanf(line,
				        "voluntary_ctxt_switches: %llu", &v)
				    == 1)
					*switches += v;
			fclose(f);
		}
	}
	closedir(d);
}

/* An emitter between steps: 8 samples every 100 ms for 3 s. */
static int
at_rest(const char *ep)
{
	vt_opts         o;
	vt_emitter     *em;
	uint64_t        cpu0, sw0, cpu1, sw1;
	int64_t         t0, t1;
	struct timespec pause = { 0, 100000000 };
	int             rc;

	vt_opts_init(&o);
	o.endpoint = ep;
	o.run      = "rest";
	rc         = vt_open(&o, &em);
	if (rc != 0) {
		fprintf(stderr, "vt_open: %s\n", vt_strerror(rc));
		return 1;
	}
	nanosleep(&pause, NULL);
	io_thread_usage(&cpu0, &sw0);
	t0 = mono_ns();
	for (uint64_t step = 0; step < 30; step++) {
		for (int i = 0; i < 8; i++)
			vt_emit(em, names[i & 3], step, (double) step);
		nanosleep(&pause, NULL);
	}
	t1 = mono_ns();
	io_thread_usage(&cpu1, &sw1);
	printf("emitter at rest (8 samples every 100 ms): I/O thread %.2f ms "
	       "CPU per s (%.3f%% of a core), %.0f wakeups per s\n",
	    (double) (cpu1 - cpu0) / 1e6 / ((double) (t1 - t0) / 1e9),
	    (double) (cpu1 - cpu0) / (double) (t1 - t0) * 100.0,
	    (double) (sw1 - sw0) / ((double) (t1 - t0) / 1e9));
	vt_close(em);
	return 0;
}

int
main(int argc, char **argv)
{
	char     dir[] = "/tmp/vt-bench-XXXXXX";
	char     ep[96], path[64];
	acker    a;
	uint64_t calls = 4000000;
	int      rc;

	if (argc > 1) {
		char *end;

		calls = strtoull(argv[1], &end, 10);
		if (*end != '\0' || calls < GROUP) {
			fprintf(stderr, "usage: %s [calls]\n", argv[0]);
			return 2;
		}
	}
	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/c.sock", dir);
	snprintf(ep, sizeof(ep), "ipc://%s", path);
	if (acker_start(&a, ep) != 0)
		return 1;
	rc = run(ep, 1, calls, 0);
	if (rc == 0)
		rc = run(ep, MAX_THREADS, calls, 0);
	/* A phase marker: the same path plus a copy of its name. */
	if (rc == 0)
		rc = run(ep, 1, calls, 1);
	if (rc == 0)
		rc = at_rest(ep);
	acker_stop(&a);
	unlink(path);
	rmdir(dir);
	return rc;
}
