/*
 * bench_wide: the cost curve of a sample against the width of a run.
 *
 *	bench_wide [DIR] [MAXSERIES] [MINSERIES]
 *
 * BENCH_WIDE_SAMPLES=N measures about N samples per width instead of
 * 1,000,000 (at 100,000 series the default is 10 steps: most series
 * then hold 10 samples when folded; 10,000,000 shows 100 steps, a run
 * past its first folds).
 *
 * For 10, 1,000, 10,000 and 100,000 series per step (and 1,000,000 when
 * MAXSERIES allows it; default 100,000), one run of R ranks x M metrics
 * each logging once per step (one batch per rank per step) goes through
 * the collector's write path in this process (decode, dedup, encode,
 * commit with fsync, as vitalsd does, without the network: the network
 * costs the same per sample at every width, the store does not).
 *
 * A commit holds one step, or as many steps as make 10,000 samples when
 * a step brings fewer (a narrow run's batches arrive faster than the
 * commit interval, so vitalsd groups them), or, when a step brings more
 * than 262,144 samples (vitalsd's bound on a commit), the batches of as
 * many ranks as fit. The first step, which creates the series, is not
 * measured; then about 1,000,000 samples (at least 3 steps) are, and
 * then folded from the journal into
 * blocks (ingest_fold), within the measure: the figures are the whole
 * cost of a sample. Each width runs in its own child process so
 * its peak RSS is its own.
 *
 * Printed per width: ingest rate, bytes passed to write(2) per sample
 * (wchar of /proc/self/io: what LMDB writes, independent of the page
 * cache) and bytes the kernel accounted to storage (write_bytes), CPU
 * (user + system) per sample, peak RSS (VmHWM: it includes the pages of
 * data.mdb the process mapped), CPU and bytes as ratios to the
 * 10-series case, the part of CPU and wchar per sample spent in the
 * final fold, and the largest anonymous RSS seen after a commit or the
 * fold (the heap: caches, the commit's samples, LMDB's dirty pages);
 * then wchar per sample by transaction, and the size of data.mdb at the
 * end of the measure (the file grows to the highest page used: the
 * peak of the journal, the blocks and LMDB's free pages); then wchar
 * in bytes by transaction (exact: a change that must write the same
 * bytes compares these).
 * Figures only; the machine may be shared.
 *
 * BENCH_WIDE_KEEP=N instead leaves, for each width, a store in DIR/wN
 * after N commits (after the first; the journal merged and folded as
 * vitalsd would, not folded at the end; BENCH_WIDE_NOFOLD=1: neither,
 * so the journal holds N records) and does not remove DIR: what a
 * reader costs with its journal is then timed with `vitals query` and
 * `vitals metrics`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/clock.h"
#include "bench/realistic.h"
#include "collector/ingest.h"
#include "store/store.h"
#include "wire/wire.h"

#define TARGET 1000000u      /* samples measured per width */
#define MIN_PER_COMMIT 10000 /* samples a narrow commit groups */
#define COMMIT_MAX 262144    /* vitalsd's bound on a commit's samples */

typedef struct result {
	double series, samples, commits, wall, cpu, wchar, wbytes, rss_mib;
	double fold_cpu, fold_wchar; /* of which the final fold */
	double anon_mib;             /* largest RssAnon seen */
	/* wchar of the commits themselves, of the merges and of the folds
	 * (the final one included), and their counts */
	double w_commit, w_merge, w_fold, n_merge, n_fold;
	double w_count, n_count; /* count steps (the final one included) */
	double w_left;           /* then folding every record into blocks */
	double file_mib; /* data.mdb before that: its high-water mark */
	/* CPU (s) of ingest_commit alone, shared as wchar is (split) */
	double c_commit, c_merge, c_fold, c_count;
	int    ok;
} result;

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

/* wchar and write_bytes of this process (0 where unreadable). */
static void
proc_io(double *wchar, double *wbytes)
{
	FILE              *f = fopen("/proc/self/io", "r");
	char               line[128];
	unsigned long long v;

	*wchar = *wbytes = 0;
	if (f == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "wchar: %llu", &v) == 1)
			*wchar = (double) v;
		else if (sscanf(line, "write_bytes: %llu", &v) == 1)
			*wbytes = (double) v;
	}
	fclose(f);
}

/* RssAnon of this process in MiB (0 where unreadable): the heap,
 * without the pages of data.mdb the process has mapped. */
static double
rss_anon_mib(void)
{
	FILE              *f = fopen("/proc/self/status", "r");
	char               line[128];
	unsigned long long v = 0;

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "RssAnon: %llu", &v) == 1)
			break;
	fclose(f);
	return (double) v / 1024.0;
}

/* Build rank r's batch for step s: M names, one sample each. */
static size_t
build(uint8_t *msg, int rank, int ranks, int metrics, uint64_t seq, uint64_t s,
    int64_t t, real_gen *g)
{
	wire_ident id = { 0 };
	size_t     off;
	char       name[64];

	id.incarnation = 5000 + (uint64_t) rank;
	id.rank        = rank;
	id.world_size  = ranks;
	id.run         = "wide";
	id.run_len     = 4;
	id.host        = "node0";
	id.host_len    = 5;
	off            = wire_put_batch_head(msg, &id, seq, seq, 0);
	wire_put_names_count(msg, &off, (uint16_t) metrics);
	for (int m = 0; m < metrics; m++) {
		int n = snprintf(name, sizeof(name), "layer%04d.%s", m / 6,
		    real_names[m % REAL_METRICS]);

		wire_put_name(msg, &off, name, (size_t) n);
	}
	wire_put_samples_count(msg, &off, (uint32_t) metrics);
	for (int m = 0; m < metrics; m++) {
		wire_sample w = { (uint16_t) m, s, t + m * 1500,
			real_value(g, m % REAL_METRICS, s) };

		wire_put_sample(msg, &off, &w);
	}
	return off;
}

/*
 * Share the bytes w one ingest_commit wrote (its commit, and any merges
 * and fold steps after it) between the commit, the merges and the
 * folds: a commit is taken to write what the commits with neither
 * wrote on average so far (the first such call: all of it).
 */
static void
split(result *res, double *wsum, double *wn, double w, const ingest_stats *s0,
    const ingest_stats *s1)
{
	double merges = (double) (s1->merges - s0->merges);
	double folds  = (double) (s1->folds - s0->folds);
	double counts = (double) (s1->counts - s0->counts);
	double own    = *wn > 0 ? *wsum / *wn : w;
	double all    = merges + folds + counts;

	if (all == 0) {
		*wsum += w;
		*wn += 1;
		res->w_commit += w;
		return;
	}
	if (own > w)
		own = w;
	res->w_commit += own;
	res->n_merge += merges;
	res->n_fold += folds;
	res->n_count += counts;
	/* Several in one call: shared by their counts. */
	res->w_merge += (w - own) * merges / all;
	res->w_fold += (w - own) * folds / all;
	res->w_count += (w - own) * counts / all;
}

/* One width, in a child: fills res. */
static void
run_width(
    const char *base, long series, uint64_t target, uint64_t keep, result *res)
{
	char          dir[1100], err[1400], cmd[2300], why[200];
	int           metrics  = series < 1000 ? (int) series : 1000;
	int           ranks    = (int) (series / metrics);
	uint64_t      spc      = series >= MIN_PER_COMMIT
	              ? 1
	              : (uint64_t) (MIN_PER_COMMIT / series);
	uint64_t      commits  = target / ((uint64_t) series * spc);
	int           rpc      = (int) (COMMIT_MAX / metrics); /* ranks */
	uint64_t      ncommits = 0;
	uint64_t      step     = 0, *seq;
	real_gen     *gens;
	uint8_t      *msg;
	store        *st;
	ingest       *in;
	ingest_opts   io;
	double        w0 = 0, c0 = 0, x0 = 0, b0 = 0, x1, b1, xf, bf, cf;
	double        xc, bc, xd, bd, wsum = 0, wn = 0, cc, csum = 0, cn = 0;
	result        cs;
	ingest_stats  s0, s1;
	struct rusage ru;
	int           trace = getenv("BENCH_WIDE_TRACE") != NULL;

	memset(res, 0, sizeof(*res));
	memset(&cs, 0, sizeof(cs));
	if (commits < 3)
		commits = 3;
	if (keep > 0)
		commits = keep;
	snprintf(dir, sizeof(dir), "%s/w%ld", base, series);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir -p '%s'", dir, dir);
	msg  = malloc((size_t) metrics * (WIRE_SAMPLE_SIZE + 64) + 4096);
	gens = calloc((size_t) ranks, sizeof(*gens));
	seq  = calloc((size_t) ranks, sizeof(*seq));
	if (system(cmd) != 0 || msg == NULL || gens == NULL || seq == NULL)
		return;
	ingest_opts_init(&io);
	io.time_quantum_ns  = 1000000; /* vitalsd's default */
	io.max_series_run   = 0;
	io.max_series_total = 0;
	if (keep > 0 && getenv("BENCH_WIDE_NOFOLD") != NULL)
		io.journal_samples = io.journal_records = UINT64_MAX / 4;
	if (store_open(dir, 0, &st, err, sizeof(err)) != 0
	    || ingest_open(st, &io, &in) != 0) {
		fprintf(stderr, "bench_wide: %s\n", err);
		return;
	}
	/* A map large enough that no commit has to be redone: growing it
	 * is not what is measured. */
	while (store_map_size(st) < ((uint64_t) 8 << 30))
		if (store_grow(st) != 0)
			return;
	for (int r = 0; r < ranks; r++)
		real_init(&gens[r], r, 1000000, 1700000000000000000ll);
	/* Round 0 (one step, or one commit's worth of steps) creates the
	 * series and is not measured. */
	for (uint64_t c = 0; c <= commits; c++) {
		int rc = 0;

		if (c == 1) {
			w0 = now_s();
			c0 = cpu_s();
			proc_io(&x0, &b0);
		}
		/* A step wider than vitalsd's commit bound is committed in
		 * parts of whole ranks, as vitalsd would. */
		for (int r0 = 0; r0 < ranks; r0 += rpc) {
			int r1 = r0 + rpc < ranks ? r0 + rpc : ranks;

			if ((rc = ingest_begin(in)) != 0)
				goto fail;
			for (uint64_t k = 0; k < spc; k++) {
				for (int r = r0; r < r1; r++) {
					wire_batch b;
					int64_t    t = real_step(&gens[r]);
					size_t     n;
					int        is_new;

					n = build(msg, r, ranks, metrics,
					    ++seq[r], step + k, t, &gens[r]);
					if (wire_batch_decode(
					        msg, n, &b, why, sizeof(why))
					    != 0) {
						fprintf(stderr,
						    "bench_wide: %s\n", why);
						goto fail;
					}
					rc = ingest_batch(in, &b, 0, &is_new,
					    why, sizeof(why));
					if (rc < 0)
						goto fail;
				}
			}
			proc_io(&xc, &bc);
			ingest_get_stats(in, &s0);
			cc = cpu_s();
			if ((rc = ingest_commit(in)) != 0)
				goto fail;
			cc = cpu_s() - cc;
			proc_io(&xd, &bd);
			ingest_get_stats(in, &s1);
			if (c > 0) {
				split(res, &wsum, &wn, xd - xc, &s0, &s1);
				split(&cs, &csum, &cn, cc, &s0, &s1);
			}
			/* BENCH_WIDE_TRACE=1: which commits merged, counted
			 * or folded (stderr). */
			if (trace
			    && (s1.merges != s0.merges
			        || s1.counts != s0.counts
			        || s1.folds != s0.folds))
				fprintf(stderr,
				    "commit %llu: merges %llu counts %llu "
				    "folds %llu\n",
				    (unsigned long long) c,
				    (unsigned long long) (s1.merges
				        - s0.merges),
				    (unsigned long long) (s1.counts
				        - s0.counts),
				    (unsigned long long) (s1.folds
				        - s0.folds));
			if (c > 0)
				ncommits++;
			if (rss_anon_mib() > res->anon_mib)
				res->anon_mib = rss_anon_mib();
		}
		step += spc;
		/* Round 0's samples are folded before the measure starts;
		 * the measured ones are folded within it (below). */
		if (c == 0 && (rc = ingest_fold(in, 1)) != 0)
			goto fail;
		continue;
	fail:
		fprintf(stderr, "bench_wide: %s\n", store_errmsg(st));
		ingest_abort(in);
		return;
	}
	/* The cost of a sample includes its count in the statistics of
	 * its series (what a fold at the samples bound does first; a wide
	 * journal's records are folded into blocks later, at 4 times the
	 * bound: what that adds is printed apart, below). */
	proc_io(&xf, &bf);
	cf = cpu_s();
	ingest_get_stats(in, &s0);
	if (keep == 0 && ingest_fold(in, INGEST_COUNT_ALL) != 0) {
		fprintf(stderr, "bench_wide: %s\n", store_errmsg(st));
		return;
	}
	ingest_get_stats(in, &s1);
	if (rss_anon_mib() > res->anon_mib)
		res->anon_mib = rss_anon_mib();
	proc_io(&x1, &b1);
	res->w_count += x1 - xf;
	res->n_count += (double) (s1.counts - s0.counts);
	res->fold_cpu   = cpu_s() - cf;
	res->c_commit   = cs.w_commit;
	res->c_merge    = cs.w_merge;
	res->c_fold     = cs.w_fold;
	res->c_count    = cs.w_count + res->fold_cpu;
	res->fold_wchar = x1 - xf;
	res->wall       = now_s() - w0;
	res->cpu        = cpu_s() - c0;
	res->wchar      = x1 - x0;
	res->wbytes     = b1 - b0;
	res->series     = (double) series;
	res->commits    = (double) ncommits;
	res->samples    = (double) commits * (double) spc * (double) series;
	getrusage(RUSAGE_SELF, &ru);
	res->rss_mib = (double) ru.ru_maxrss / 1024.0;
	res->ok      = 1;
	/* Then every record into blocks: what the run's last fold will
	 * write (not in the figures above). */
	{
		struct stat sb;

		snprintf(cmd, sizeof(cmd), "%s/data.mdb", dir);
		if (stat(cmd, &sb) == 0)
			res->file_mib = (double) sb.st_size / 1048576.0;
	}
	if (keep == 0) {
		double y0, y1, z;

		proc_io(&y0, &z);
		if (ingest_fold(in, INGEST_FOLD_ALL) != 0)
			res->ok = 0;
		proc_io(&y1, &z);
		res->w_left = y1 - y0;
	}
	ingest_close(in);
	store_close(st);
	free(msg);
	free(gens);
	free(seq);
}

int
main(int argc, char **argv)
{
	const char *base     = argc > 1 ? argv[1] : "/tmp/vitals-bench-wide";
	long        max      = argc > 2 ? atol(argv[2]) : 100000;
	long        min      = argc > 3 ? atol(argv[3]) : 0;
	const char *env      = getenv("BENCH_WIDE_SAMPLES");
	uint64_t    target   = env != NULL && atoll(env) > 0
	         ? (uint64_t) atoll(env)
	         : TARGET;
	long        widths[] = { 10, 1000, 10000, 100000, 1000000 };
	result      r0       = { 0 };
	const char *kenv     = getenv("BENCH_WIDE_KEEP");
	result      splits[8];
	int         nsplit   = 0;
	uint64_t    keep     = kenv != NULL ? (uint64_t) atoll(kenv) : 0;

	printf("%9s %9s %7s %9s %10s %10s %9s %8s %6s %6s %10s %11s "
	       "%8s\n",
	    "series", "samples", "commits", "M/s", "wchar B/s", "disk B/s",
	    "CPU us/s", "RSS MiB", "xCPU", "xwchar", "fold us/s", "fold wchar",
	    "anon MiB");
	for (size_t i = 0; i < sizeof(widths) / sizeof(widths[0]); i++) {
		int    fd[2], status;
		pid_t  pid;
		result r;

		if (widths[i] > max)
			break;
		if (widths[i] < min)
			continue;
		if (pipe(fd) != 0)
			return 1;
		fflush(stdout);
		if ((pid = fork()) == 0) {
			close(fd[0]);
			run_width(base, widths[i], target, keep, &r);
			if (write(fd[1], &r, sizeof(r)) != (ssize_t) sizeof(r))
				_exit(1);
			_exit(0);
		}
		close(fd[1]);
		memset(&r, 0, sizeof(r));
		if (pid < 0 || read(fd[0], &r, sizeof(r)) != sizeof(r))
			r.ok = 0;
		close(fd[0]);
		if (pid > 0)
			waitpid(pid, &status, 0);
		if (!r.ok) {
			printf("%9ld failed\n", widths[i]);
			continue;
		}
		if (widths[i] == 10)
			r0 = r;
		if (nsplit < 8)
			splits[nsplit++] = r;
		printf("%9.0f %9.0f %7.0f %9.3f %10.1f %10.1f %9.3f %8.0f "
		       "%6.2f %6.2f %10.3f %11.1f %8.0f\n",
		    r.series, r.samples, r.commits, r.samples / r.wall / 1e6,
		    r.wchar / r.samples, r.wbytes / r.samples,
		    r.cpu / r.samples * 1e6, r.rss_mib,
		    r0.ok ? (r.cpu / r.samples) / (r0.cpu / r0.samples) : 0,
		    r0.ok ? (r.wchar / r.samples) / (r0.wchar / r0.samples)
		          : 0,
		    r.fold_cpu / r.samples * 1e6, r.fold_wchar / r.samples,
		    r.anon_mib);
	}
	if (keep > 0)
		return 0;
	printf("\nwchar per sample by transaction: commits, merges (count), "
	       "folds (count), counts (count, the final one included); then "
	       "what folding the rest into blocks writes (not in the "
	       "totals); data.mdb's size before that (MiB: the most pages "
	       "the run had in use, LMDB's free pages included)\n");
	for (int i = 0; i < nsplit; i++)
		printf("%9.0f %8.1f B %8.1f B (%4.0f) %8.1f B (%4.0f) %8.1f B "
		       "(%4.0f) %8.1f B %8.0f\n",
		    splits[i].series, splits[i].w_commit / splits[i].samples,
		    splits[i].w_merge / splits[i].samples, splits[i].n_merge,
		    splits[i].w_fold / splits[i].samples, splits[i].n_fold,
		    splits[i].w_count / splits[i].samples, splits[i].n_count,
		    splits[i].w_left / splits[i].samples, splits[i].file_mib);
	printf("\nwchar in bytes (exact; deterministic): all, commits, "
	       "merges, folds, counts, the rest\n");
	for (int i = 0; i < nsplit; i++)
		printf("%9.0f %14.0f %14.0f %14.0f %14.0f %14.0f %14.0f\n",
		    splits[i].series, splits[i].wchar, splits[i].w_commit,
		    splits[i].w_merge, splits[i].w_fold, splits[i].w_count,
		    splits[i].w_left);
	printf("\nCPU (us) per sample in ingest_commit, by transaction as "
	       "above: commits, merges, folds, counts\n");
	for (int i = 0; i < nsplit; i++)
		printf("%9.0f %10.3f %10.3f %10.3f %10.3f\n", splits[i].series,
		    splits[i].c_commit / splits[i].samples * 1e6,
		    splits[i].c_merge / splits[i].samples * 1e6,
		    splits[i].c_fold / splits[i].samples * 1e6,
		    splits[i].c_count / splits[i].samples * 1e6);
	{
		char cmd[1200];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
		if (system(cmd) != 0)
			return 1;
	}
	return 0;
}
