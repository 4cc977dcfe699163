/*
 * bench_top: the cost of `vitals top` on a large run.
 *
 *	bench_top [--wide | --wide-only] [DIR]
 *
 * A database of 64 ranks x 16 metrics (1,024 series) x 20,000 steps
 * (20.5 M realistic samples) and 120 alerts is built in DIR through the
 * collector's ingest path. Then, on an off-screen 200x60 terminal (the
 * same ncurses output code, written to /dev/null):
 *
 * 1. frame time of each view: one refresh (read what changed, reconcile)
 *    plus one full draw, after every series got a new step (the worst
 *    case of a live run: every row changes every frame);
 * 2. CPU share of the viewer at the default refresh rate (4 Hz) for 10 s
 *    while a separate writer process appends 20 steps/s to every series
 *    (20,480 samples/s), from getrusage of the viewer process alone.
 *
 * --wide adds the same at 1,000 metrics x 64 ranks (64,000 series), 200
 * steps each, the writer adding a step every 2 s (a large model's pace)
 * during the CPU run. There the whole series index is read only when
 * series are added; otherwise the series of the metrics on screen are
 * reread, and the others in turn within 0.5 ms a frame. --wide-only
 * runs the wide case alone (to compare builds back to back sooner).
 * Targets: <= 10 ms per frame, <= 5% of one core.
 */
#include <locale.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/clock.h"
#include "bench/realistic.h"
#include "collector/ingest.h"
#include "store/store.h"
#include "tui/crt.h"
#include "tui/model.h"
#include "tui/tui.h"
#include "tui/ui.h"
#include "wire/wire.h"

#define RANKS 64
#define ROWS 60
#define COLS 200
#define MAXM 1000

typedef struct cfg {
	int      metrics;
	uint64_t steps;
	uint64_t batch_steps; /* steps per batch of one rank */
	int      per_commit;  /* batches per transaction */
	int      frames;      /* measured per view */
	double   live_rate;   /* steps/s the writer adds during the CPU run */
} cfg;

static real_gen gens[RANKS];
static char     names[MAXM][32];
static uint64_t seqs[RANKS];

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* One batch of rank r for steps [s0, s0 + n) into buf; returns its size. */
static size_t
build(uint8_t *buf, const cfg *c, int r, uint64_t s0, uint64_t n)
{
	wire_ident id = { 0 };
	size_t     off;

	id.incarnation = 5000 + (uint64_t) r;
	id.rank        = r;
	id.world_size  = RANKS;
	id.run         = "bench";
	id.run_len     = 5;
	id.host        = "node0";
	id.host_len    = 5;
	seqs[r]++;
	off = wire_put_batch_head(buf, &id, seqs[r], seqs[r], 0);
	wire_put_names_count(buf, &off, (uint16_t) c->metrics);
	for (int m = 0; m < c->metrics; m++)
		wire_put_name(buf, &off, names[m], strlen(names[m]));
	wire_put_samples_count(
	    buf, &off, (uint32_t) (n * (uint64_t) c->metrics));
	for (uint64_t s = s0; s < s0 + n; s++) {
		int64_t t = real_step(&gens[r]);

		for (int m = 0; m < c->metrics; m++) {
			wire_sample w = { (uint16_t) m, s, t + m * 1000,
				real_value(&gens[r], m % REAL_METRICS, s) };

			wire_put_sample(buf, &off, &w);
		}
	}
	return off;
}

/* Apply n messages in one transaction, growing the map as needed. */
static int
apply(store *st, ingest *in, uint8_t **bufs, const size_t *lens, int n)
{
	for (int attempt = 0; attempt < 20; attempt++) {
		int rc = ingest_begin(in), full = 0;

		if (rc != 0)
			return rc;
		for (int i = 0; i < n && !full; i++) {
			wire_batch b;
			char       why[200];
			int        is_new;

			if (wire_batch_decode(
			        bufs[i], lens[i], &b, why, sizeof(why))
			    != 0) {
				fprintf(stderr, "bench_top: %s\n", why);
				return -1;
			}
			rc = ingest_batch(
			    in, &b, 0, &is_new, why, sizeof(why));
			if (rc == -STORE_EMAPFULL)
				full = 1;
			else if (rc < 0)
				return -rc;
		}
		if (full) {
			ingest_abort(in);
		} else {
			rc = ingest_commit(in);
			if (rc == 0)
				return 0;
			if (rc != STORE_EMAPFULL)
				return rc;
		}
		if ((rc = store_grow(st)) != 0)
			return rc;
	}
	return -1;
}

typedef struct writer {
	store   *st;
	ingest  *in;
	uint8_t *bufs[RANKS];
	size_t   lens[RANKS];
	uint64_t next_step;
} writer;

static int
writer_open(writer *w, const char *dir, const cfg *c, uint64_t next_step)
{
	char        err[1400];
	ingest_opts io;
	size_t      cap
	    = (size_t) c->batch_steps * (size_t) c->metrics * WIRE_SAMPLE_SIZE
	    + (size_t) c->metrics * 40 + 4096;

	memset(w, 0, sizeof(*w));
	w->next_step = next_step;
	ingest_opts_init(&io);
	if (store_open(dir, STORE_NOSYNC, &w->st, err, sizeof(err)) != 0
	    || ingest_open(w->st, &io, &w->in) != 0) {
		fprintf(stderr, "bench_top: %s\n", err);
		return -1;
	}
	for (int r = 0; r < RANKS; r++)
		if ((w->bufs[r] = malloc(cap)) == NULL)
			return -1;
	return 0;
}

static void
writer_close(writer *w)
{
	ingest_close(w->in);
	store_close(w->st);
	for (int r = 0; r < RANKS; r++)
		free(w->bufs[r]);
}

/* Append n steps to every series, in one transaction per rank group. */
static int
writer_steps(writer *w, const cfg *c, uint64_t n)
{
	for (int r0 = 0; r0 < RANKS; r0 += c->per_commit) {
		int k = 0;

		for (int r = r0; r < r0 + c->per_commit && r < RANKS; r++, k++)
			w->lens[k] = build(w->bufs[k], c, r, w->next_step, n);
		if (apply(w->st, w->in, w->bufs, w->lens, k) != 0)
			return -1;
	}
	w->next_step += n;
	return 0;
}

static int
make_db(const char *dir, const cfg *c)
{
	writer   w;
	char     cmd[1200];
	double   t0    = now_s();
	uint64_t total = (uint64_t) RANKS * (uint64_t) c->metrics * c->steps;

	snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir -p '%s'", dir, dir);
	if (system(cmd) != 0)
		return -1;
	for (int r = 0; r < RANKS; r++) {
		real_init(&gens[r], r, c->steps, 1700000000000000000ll);
		seqs[r] = 0;
	}
	if (writer_open(&w, dir, c, 0) != 0)
		return -1;
	for (uint64_t s = 0; s < c->steps; s += c->batch_steps)
		if (writer_steps(&w, c, c->batch_steps) != 0) {
			fprintf(stderr, "bench_top: ingest failed\n");
			return -1;
		}
	/* Alerts: spikes on a few metrics and ranks, half resolved. */
	if (ingest_begin(w.in) != 0)
		return -1;
	for (int i = 0; i < 120; i++) {
		char j[600];
		int  n = snprintf(j, sizeof(j),
		     "{\"rule\":\"%s_spike\",\"kind\":\"spike\",\"severity\":"
		      "\"%s\",\"state\":\"%s\",\"run\":\"bench\",\"rank\":%d,"
		      "\"host\":\"node0\",\"metric\":\"%s\",\"step\":%d,"
		      "\"time\":1700000100.5,\"value\":9.5,\"baseline\":2.1,"
		      "\"message\":\"%s 9.5 is 4.5x its baseline 2.1\"}",
		     names[i % 8], i % 3 ? "warning" : "critical",
                    i % 2 ? "resolved" : "firing", (i * 7) % RANKS,
		     names[i % 8], 100 + i * 50, names[i % 8]);

		if (ingest_alert(w.in, "bench", 5, j, (size_t) n) != 0)
			return -1;
	}
	if (ingest_commit(w.in) != 0)
		return -1;
	writer_close(&w);
	printf("database: %d ranks x %d metrics = %d series x %llu steps = "
	       "%.2f M samples, 120 alerts (built in %.1f s)\n",
	    RANKS, c->metrics, RANKS * c->metrics,
	    (unsigned long long) c->steps, (double) total / 1e6, now_s() - t0);
	return 0;
}

static int
cmp_d(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;

	return x < y ? -1 : x > y;
}

static double
pct(double *v, int n, double p)
{
	qsort(v, (size_t) n, sizeof(*v), cmp_d);
	return v[(int) ((n - 1) * p + 0.5)];
}

/*
 * Frame times of one view, a new step for every series before each,
 * frames at least TUI_REFRESH_MS apart as in `vitals top`. Frames that
 * read the whole series index and those that read only the metrics on
 * screen (large indexes, between whole reads) are also told apart.
 */
static int
frames(const char *label, ui *u, model *m, writer *w, const cfg *c)
{
	int     n = c->frames, nw = 0, np = 0;
	double *tot   = malloc((size_t) n * sizeof(double));
	double *upd   = malloc((size_t) n * sizeof(double));
	double *drw   = malloc((size_t) n * sizeof(double));
	double *whl   = malloc((size_t) n * sizeof(double));
	double *prt   = malloc((size_t) n * sizeof(double));
	double  last  = 0;
	size_t  reads = 0;

	if (!tot || !upd || !drw || !whl || !prt)
		return -1;
	for (int i = 0; i < 3; i++) {
		tui_update(u, m);
		tui_draw(u, m);
	}
	for (int i = 0; i < n; i++) {
		double t0, t1, t2, wait;

		if (writer_steps(w, c, 1) != 0)
			return -1;
		wait = last + TUI_REFRESH_MS / 1000.0 - now_s();
		if (wait > 0)
			usleep((useconds_t) (wait * 1e6));
		t0 = last = now_s();
		tui_update(u, m);
		t1 = now_s();
		tui_draw(u, m);
		t2     = now_s();
		tot[i] = (t2 - t0) * 1e3;
		upd[i] = (t1 - t0) * 1e3;
		drw[i] = (t2 - t1) * 1e3;
		if (m->partial == m->frame)
			prt[np++] = tot[i];
		else
			whl[nw++] = tot[i];
		reads += m->read_series;
	}
	printf("%-9s frame: median %6.2f ms, p99 %6.2f ms  (refresh %.2f, "
	       "draw %.2f ms median; %.0f series' samples read a frame)\n",
	    label, pct(tot, n, 0.5), pct(tot, n, 0.99), pct(upd, n, 0.5),
	    pct(drw, n, 0.5), (double) reads / n);
	if (np > 0 && nw > 0)
		printf("          %d frames read the whole index (median %.2f "
		       "ms), %d only the metrics shown (median %.2f ms)\n",
		    nw, pct(whl, nw, 0.5), np, pct(prt, np, 0.5));
	free(tot);
	free(upd);
	free(drw);
	free(whl);
	free(prt);
	return 0;
}

/* The viewer at TUI_REFRESH_MS for secs while a child process writes
 * steps_per_s steps a second to every series. */
static int
cpu_share(const char *dir, const cfg *c, uint64_t next_step, double secs,
    double steps_per_s)
{
	model          *m;
	ui              u;
	char            err[1600];
	pid_t           pid;
	double          t0, c0, wall, cpu;
	int             frames_n = 0;
	struct timespec next;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		writer w;
		double start = now_s();
		long   k     = 0;

		if (writer_open(&w, dir, c, next_step) != 0)
			_exit(1);
		for (;;) {
			double due = start + (double) k / steps_per_s;
			double d   = due - now_s();

			if (d > 0)
				usleep((useconds_t) (d * 1e6));
			if (writer_steps(&w, c, 1) != 0)
				_exit(1);
			k++;
		}
	}
	if (model_open(dir, "bench", &m, err, sizeof(err)) != 0) {
		fprintf(stderr, "bench_top: %s\n", err);
		kill(pid, SIGTERM);
		waitpid(pid, NULL, 0);
		return -1;
	}
	ui_init(&u);
	u.lines = ROWS;
	u.cols  = COLS;
	tui_update(&u, m); /* the first read is the whole index: not counted */
	tui_draw(&u, m);
	clock_gettime(CLOCK_MONOTONIC, &next);
	t0 = now_s();
	c0 = cpu_s();
	while (now_s() - t0 < secs) {
		next.tv_nsec += TUI_REFRESH_MS * 1000000L;
		while (next.tv_nsec >= 1000000000L) {
			next.tv_nsec -= 1000000000L;
			next.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
		tui_update(&u, m);
		tui_draw(&u, m);
		frames_n++;
	}
	cpu  = cpu_s() - c0;
	wall = now_s() - t0;
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	printf("CPU share at %d Hz for %.0f s (%d frames) while a writer "
	       "adds %g step(s)/s to every series (%.0f samples/s): %.2f%% "
	       "of one core (%.2f ms CPU a frame)\n",
	    1000 / TUI_REFRESH_MS, wall, frames_n, steps_per_s,
	    steps_per_s * RANKS * c->metrics, 100 * cpu / wall,
	    cpu * 1e3 / (frames_n ? frames_n : 1));
	ui_free(&u);
	model_close(m);
	return 0;
}

static int
run(const char *dir, const cfg *c)
{
	model   *m;
	ui       u;
	writer   w;
	char     err[1600];
	double   t0;
	uint64_t next;

	for (int i = 0; i < c->metrics; i++) {
		if (i < REAL_METRICS)
			snprintf(
			    names[i], sizeof(names[i]), "%s", real_names[i]);
		else
			snprintf(names[i], sizeof(names[i]), "metric_%03d", i);
	}
	if (make_db(dir, c) != 0)
		return 1;
	if (model_open(dir, "bench", &m, err, sizeof(err)) != 0) {
		fprintf(stderr, "bench_top: %s\n", err);
		return 1;
	}
	ui_init(&u);
	u.lines = ROWS;
	u.cols  = COLS;
	t0      = now_s();
	tui_update(&u, m);
	tui_draw(&u, m);
	printf("first frame (reads the whole index and the sparklines on "
	       "screen): %.1f ms\n",
	    (now_s() - t0) * 1e3);
	if (writer_open(&w, dir, c, c->steps) != 0)
		return 1;
	frames("overview", &u, m, &w, c);
	u.view = UI_DETAIL;
	u.rank = m->metrics[0].worst_rank; /* the loss, all its steps */
	frames("detail", &u, m, &w, c);
	u.view       = UI_RANKS;
	u.ranks_span = 512;
	frames("ranks", &u, m, &w, c);
	u.view = UI_ALERTS;
	frames("alerts", &u, m, &w, c);
	next = w.next_step;
	writer_close(&w);
	ui_free(&u);
	model_close(m);
	return cpu_share(dir, c, next, 10, c->live_rate) != 0;
}

int
main(int argc, char **argv)
{
	const char *dir  = "/tmp/vitals-bench-top";
	int         wide = 0, narrow = 1, rc = 0;
	char        err[200];
	cfg         std = { 16, 20000, 256, 8, 120, 20 };
	cfg         wcf = { 1000, 200, 100, 8, 40, 0.5 };

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--wide") == 0)
			wide = 1;
		else if (strcmp(argv[i], "--wide-only") == 0)
			wide = 1, narrow = 0;
		else
			dir = argv[i];
	}
	setlocale(LC_ALL, "C.UTF-8");
	if (crt_init_virtual(ROWS, COLS, err, sizeof(err)) != 0) {
		fprintf(stderr, "bench_top: %s\n", err);
		return 1;
	}
	printf("terminal: %dx%d off-screen (braille: %s), refresh every %d "
	       "ms\n",
	    COLS, ROWS, crt_utf8() ? "yes" : "no", TUI_REFRESH_MS);
	if (narrow)
		rc = run(dir, &std);
	if (rc == 0 && wide) {
		printf("\n--wide\n");
		rc = run(dir, &wcf);
	}
	crt_done();
	return rc;
}
