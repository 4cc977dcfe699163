/*
 * bench_wide_e2e: vitalsd's own cost per sample against the width of a
 * run, end to end (issue 11's method): a real vitalsd process, emitters
 * logging N names per step and calling vt_flush after each step, CPU
 * from /proc/PID/stat and bytes from /proc/PID/io of vitalsd.
 *
 *	bench_wide_e2e VITALSD DIR [SERIES...] [-- VITALSD_OPTIONS...]
 *
 * For each width (default 10 1000 10000 100000 series per step) a fresh
 * vitalsd stores in DIR/db-N, and one emitter thread per rank (10,000
 * series a rank at most, an emitter's name table holds 65,535) logs
 * "layer%05d/NAME" series with realistic values (bench/realistic.c), as
 * fast as vitalsd acknowledges them. The first step (creating the
 * series) is left out of the measure: the figures are from the end of
 * the first step until every sample is acknowledged and vitalsd's CPU
 * stopped moving (the detection thread runs after the commits). About
 * 1,000,000 samples are measured per width (at least 9 steps; at most
 * 2,000 steps, so the 10-series case measures 20,000 samples: one
 * commit per step makes it cost what a commit costs).
 *
 * Printed per width: samples measured, wall time, vitalsd's CPU per
 * sample (user + system, user alone, and the detection thread's alone:
 * it runs beside the commits), bytes it passed to write(2)
 * (wchar) and bytes the kernel accounted to storage (write_bytes) per
 * sample, and the database's size per stored sample after vitalsd
 * stopped, and vitalsd's CPU per sample of the first step (creating
 * the series, in the database and in detection), and the emitters' CPU
 * per sample during the measure (this process: on a machine of two
 * cores it shares them with vitalsd). With $BENCH_PERF set,
 * `perf record` samples vitalsd during the measure (with
 * $BENCH_PERF_FIRST also set: during the first step) into that file,
 * the width appended. Figures only; the machine
 *may be shared (CPU is vitalsd's own, so less affected by load than the wall
 *time).
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/realistic.h"
#include "vitals.h"

#define TARGET 1000000u /* samples measured per width */
#define PER_RANK 10000  /* series per emitter */
#define MAX_STEPS 2000
#define MIN_STEPS 10

typedef struct job {
	const char        *endpoint;
	int                rank, metrics;
	uint64_t           steps;
	int64_t            t0;
	int64_t           *times;
	double            *values; /* steps x metrics */
	char             **names;
	pthread_barrier_t *bar; /* after the first step */
	int                status;
} job;

typedef struct proc_figs {
	double cpu, user; /* s */
	double detect;    /* s, the detection thread's (vitalsd-detect) */
	double wchar, wbytes;
} proc_figs;

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

/* This process's CPU so far (the emitters' threads), in s. */
static double
self_cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double) ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6
	    + (double) ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static void
sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* vitalsd's CPU and I/O so far. Returns 0 or -1. */
static int
read_proc(pid_t pid, proc_figs *f)
{
	char               path[96], buf[4096], *p;
	FILE              *fp;
	DIR               *d;
	struct dirent     *e;
	size_t             n;
	unsigned long long ut = 0, st = 0, v;
	long               hz = sysconf(_SC_CLK_TCK);

	snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
	if ((fp = fopen(path, "r")) == NULL)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[n] = 0;
	/* Fields 14 and 15 (utime, stime) follow the ')' of the name. */
	if ((p = strrchr(buf, ')')) == NULL
	    || sscanf(p + 2,
	           "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
	           &ut, &st)
	        != 2)
		return -1;
	f->cpu  = (double) (ut + st) / (double) hz;
	f->user = (double) ut / (double) hz;
	f->detect = 0;
	snprintf(path, sizeof(path), "/proc/%d/task", (int) pid);
	if ((d = opendir(path)) != NULL) {
		while ((e = readdir(d)) != NULL) {
			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path),
			    "/proc/%d/task/%.20s/stat", (int) pid, e->d_name);
			if ((fp = fopen(path, "r")) == NULL)
				continue;
			n = fread(buf, 1, sizeof(buf) - 1, fp);
			fclose(fp);
			buf[n] = 0;
			if (strstr(buf, "(vitalsd-detect)") != NULL
			    && (p = strrchr(buf, ')')) != NULL
			    && sscanf(p + 2,
			           "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u "
			           "%*u %llu %llu",
			           &ut, &st)
			        == 2)
				f->detect = (double) (ut + st) / (double) hz;
		}
		closedir(d);
	}
	snprintf(path, sizeof(path), "/proc/%d/io", (int) pid);
	if ((fp = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(buf, sizeof(buf), fp) != NULL) {
		if (sscanf(buf, "wchar: %llu", &v) == 1)
			f->wchar = (double) v;
		else if (sscanf(buf, "write_bytes: %llu", &v) == 1)
			f->wbytes = (double) v;
	}
	fclose(fp);
	return 0;
}

/* Bytes of the files in dir. */
static double
dir_bytes(const char *dir)
{
	DIR           *d = opendir(dir);
	struct dirent *e;
	double         sum = 0;
	char           path[2048];
	struct stat    sb;

	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode))
			sum += (double) sb.st_size;
	}
	closedir(d);
	return sum;
}

static void *
emit_rank(void *arg)
{
	job        *j = arg;
	vt_opts     o;
	vt_emitter *em;
	vt_stats    st;

	vt_opts_init(&o);
	o.endpoint         = j->endpoint;
	o.rank             = j->rank;
	o.run              = "wide";
	o.max_buffer_bytes = (size_t) 1 << 28;
	if (vt_open(&o, &em) != 0) {
		j->status = 1;
		pthread_barrier_wait(j->bar);
		pthread_barrier_wait(j->bar);
		return NULL;
	}
	for (uint64_t s = 0; s < j->steps; s++) {
		for (int m = 0; m < j->metrics; m++)
			vt_emit_at(em, j->names[m], s, j->times[s],
			    j->values[s * (uint64_t) j->metrics
			        + (uint64_t) m]);
		if (vt_flush(em, 600000) != 0)
			j->status = 1;
		if (s == 0) { /* step 0 is in; wait for the measure */
			pthread_barrier_wait(j->bar);
			pthread_barrier_wait(j->bar);
		}
	}
	vt_get_stats(em, &st);
	if (st.dropped != 0 || st.acked != st.logged)
		j->status = 1;
	vt_close(em);
	return NULL;
}

static pid_t
start_vitalsd(
    char *bin, char *ep, char *db, char **extra, int nextra, const char *log)
{
	char  listen[] = "--listen", dbopt[] = "--db", quiet[] = "--quiet";
	char *argv[64];
	int   n = 0;
	pid_t pid;

	argv[n++] = bin;
	argv[n++] = listen;
	argv[n++] = ep;
	argv[n++] = dbopt;
	argv[n++] = db;
	argv[n++] = quiet;
	for (int i = 0; i < nextra && n < 62; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	pid     = fork();
	if (pid == 0) {
		if (freopen("/dev/null", "w", stdout) == NULL
		    || freopen(log, "w", stderr) == NULL)
			_exit(127);
		execv(bin, argv);
		_exit(127);
	}
	return pid;
}

/* perf record of pid into $BENCH_PERF-SERIES, or -1 if not asked. */
static pid_t
start_perf(pid_t pid, long series)
{
	const char *out = getenv("BENCH_PERF");
	char        file[1100], ps[32];
	pid_t       p;

	if (out == NULL || *out == 0)
		return -1;
	snprintf(file, sizeof(file), "%s-%ld", out, series);
	snprintf(ps, sizeof(ps), "%d", (int) pid);
	p = fork();
	if (p == 0) {
		char *argv[] = { (char[]) { "perf" }, (char[]) { "record" },
			(char[]) { "-q" }, (char[]) { "-F" },
			(char[]) { "2000" }, (char[]) { "--call-graph" },
			(char[]) { "dwarf,16384" }, (char[]) { "-p" }, ps,
			(char[]) { "-o" }, file, NULL };

		execvp("perf", argv);
		_exit(127);
	}
	sleep_ms(500);
	return p;
}

/* One width. Returns 0 or 1. */
static int
run_width(char *bin, const char *dir, long series, char **extra, int nextra)
{
	int               ranks   = (int) ((series + PER_RANK - 1) / PER_RANK);
	int               metrics = (int) (series / ranks);
	uint64_t          steps   = 1 + TARGET / (uint64_t) series;
	char              ep[1200], db[1200], log[1200];
	pid_t             pid, perf;
	job              *jobs  = calloc((size_t) ranks, sizeof(job));
	pthread_t        *th    = calloc((size_t) ranks, sizeof(pthread_t));
	char            **names = calloc((size_t) metrics, sizeof(char *));
	pthread_barrier_t bar;
	proc_figs         z = { 0 }, a = { 0 }, b = { 0 }, c;
	int               first = getenv("BENCH_PERF_FIRST") != NULL;
	double            t0, t1, measured, bytes, e0, e1;
	int               failed = 0, status;

	if (steps < MIN_STEPS)
		steps = MIN_STEPS;
	if (steps > MAX_STEPS)
		steps = MAX_STEPS;
	if (jobs == NULL || th == NULL || names == NULL)
		return 1;
	snprintf(ep, sizeof(ep), "ipc://%s/vitalsd-%ld.sock", dir, series);
	snprintf(db, sizeof(db), "%s/db-%ld", dir, series);
	snprintf(log, sizeof(log), "%s/vitalsd-%ld.log", dir, series);
	for (int m = 0; m < metrics; m++) {
		char buf[64];

		snprintf(buf, sizeof(buf), "layer%05d/%s", m / REAL_METRICS,
		    real_names[m % REAL_METRICS]);
		if ((names[m] = strdup(buf)) == NULL)
			return 1;
	}
	for (int r = 0; r < ranks; r++) {
		real_gen g;
		job     *j = &jobs[r];

		*j = (job) { ep, r, metrics, steps, 1700000000000000000ll,
			NULL, NULL, names, &bar, 0 };
		j->times = malloc(steps * sizeof(int64_t));
		j->values
		    = malloc(steps * (uint64_t) metrics * sizeof(double));
		if (j->times == NULL || j->values == NULL)
			return 1;
		real_init(&g, r, steps, j->t0);
		for (uint64_t s = 0; s < steps; s++) {
			j->times[s] = real_step(&g);
			for (int m = 0; m < metrics; m++) {
				double v = m < REAL_METRICS
				    ? real_value(&g, m, s)
				    : j->values[s * (uint64_t) metrics
				        + (uint64_t) (m % REAL_METRICS)];

				j->values[s * (uint64_t) metrics
				    + (uint64_t) m]
				    = (double) (float) (v
				        * (1.0 + 0.001 * (m / REAL_METRICS)));
			}
		}
	}
	pid = start_vitalsd(bin, ep, db, extra, nextra, log);
	if (pid < 0)
		return 1;
	sleep_ms(300);
	read_proc(pid, &z);
	perf = first ? start_perf(pid, series) : -1;
	pthread_barrier_init(&bar, NULL, (unsigned) ranks + 1);
	for (int r = 0; r < ranks; r++)
		pthread_create(&th[r], NULL, emit_rank, &jobs[r]);
	pthread_barrier_wait(&bar);
	/* The first step is in: let detection catch up, then measure. */
	do {
		c = a;
		sleep_ms(300);
		read_proc(pid, &a);
	} while (a.cpu != c.cpu);
	if (first && perf > 0) {
		kill(perf, SIGINT);
		waitpid(perf, &status, 0);
	}
	perf = first ? -1 : start_perf(pid, series);
	t0   = now_s();
	e0   = self_cpu_s();
	pthread_barrier_wait(&bar);
	for (int r = 0; r < ranks; r++) {
		pthread_join(th[r], NULL);
		failed |= jobs[r].status;
	}
	t1 = now_s();
	e1 = self_cpu_s();
	read_proc(pid, &b);
	do {
		c = b;
		sleep_ms(300);
		read_proc(pid, &b);
	} while (b.cpu != c.cpu);
	if (perf > 0) {
		kill(perf, SIGINT);
		waitpid(perf, &status, 0);
	}
	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	bytes    = dir_bytes(db);
	measured = (double) ranks * (double) metrics * (double) (steps - 1);
	printf("%7ld series (%d x %d) %4llu steps: %8.0f samples in %6.2f s, "
	       "vitalsd %6.3f us/sample CPU (user %6.3f, detection %6.3f), "
	       "wchar %7.1f "
	       "B/sample, write_bytes %7.1f B/sample, on disk %6.2f "
	       "B/sample; first step %6.3f us/sample CPU; emitters %6.3f "
	       "us/sample CPU%s\n",
	    series, ranks, metrics, (unsigned long long) steps, measured,
	    t1 - t0, (b.cpu - a.cpu) / measured * 1e6,
	    (b.user - a.user) / measured * 1e6,
	    (b.detect - a.detect) / measured * 1e6,
	    (b.wchar - a.wchar) / measured, (b.wbytes - a.wbytes) / measured,
	    bytes / (measured + (double) ranks * metrics),
	    (a.cpu - z.cpu) / ((double) ranks * metrics) * 1e6,
	    (e1 - e0) / measured * 1e6,
	    failed ? " (NOT every sample acknowledged)" : "");
	fflush(stdout);
	for (int r = 0; r < ranks; r++) {
		free(jobs[r].times);
		free(jobs[r].values);
	}
	for (int m = 0; m < metrics; m++)
		free(names[m]);
	free(names);
	free(jobs);
	free(th);
	pthread_barrier_destroy(&bar);
	return failed;
}

int
main(int argc, char **argv)
{
	long   widths[16] = { 10, 1000, 10000, 100000 };
	int    nw = 4, i, failed = 0;
	char **extra  = NULL;
	int    nextra = 0;

	if (argc < 3) {
		fprintf(stderr,
		    "usage: bench_wide_e2e VITALSD DIR [SERIES...] "
		    "[-- VITALSD_OPTIONS...]\n");
		return 2;
	}
	for (i = 3; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (i == 3)
			nw = 0;
		if (nw < 16)
			widths[nw++] = strtol(argv[i], NULL, 10);
	}
	if (i < argc) {
		extra  = &argv[i + 1];
		nextra = argc - i - 1;
	}
	if (strlen(argv[2]) > 1000) {
		fprintf(
		    stderr, "bench_wide_e2e: %s: path too long\n", argv[2]);
		return 2;
	}
	if (mkdir(argv[2], 0700) != 0 && errno != EEXIST) {
		fprintf(stderr, "bench_wide_e2e: %s: %s\n", argv[2],
		    strerror(errno));
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	for (int w = 0; w < nw; w++)
		if (widths[w] < 1 || widths[w] > 10000000)
			return 2;
		else
			failed |= run_width(
			    argv[1], argv[2], widths[w], extra, nextra);
	return failed;
}
