/*
 * bench_scrape: `vitalsd --http` under load. 100,000 series (100 ranks x
 * 1,000 metrics) are published into the exposition as the server thread
 * does after each commit, by a thread that keeps publishing new batches
 * (standing for ingest) while GET /metrics is fetched over loopback from
 * the real libmicrohttpd server, with libcurl.
 *
 *	bench_scrape
 *
 * Prints: the scrape time (median and worst of 20, body size), the
 * publishing rate with and without scrapes running, and the longest a
 * publish call waited (what a scrape can cost ingest).
 */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collector/exposition.h"
#include "collector/http.h"
#include "wire/wire.h"

#define RANKS 100
#define METRICS 1000
#define SCRAPES 20

typedef struct pub {
	expo           *x;
	uint8_t        *msg[RANKS];
	size_t          len[RANKS];
	volatile int    stop;
	uint64_t        batches;
	double          worst_s;
	double          cpu_s; /* the thread's CPU time when it stopped */
	uint64_t        total;
} pub;

static double
clock_s(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

static double
now_s(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

/* One batch of a rank: one sample of each metric. */
static uint8_t *
build(int rank, size_t *len)
{
	wire_ident id = { 0 };
	char       host[32], name[64];
	size_t     names = 0, off;
	uint8_t   *m;

	snprintf(host, sizeof(host), "node-%02d", rank / 8);
	for (int i = 0; i < METRICS; i++)
		names += 1 + (size_t) snprintf(name, sizeof(name),
		                 "layers.%d/grad_norm", i);
	id.incarnation = 1000 + (uint64_t) rank;
	id.rank        = rank;
	id.world_size  = RANKS;
	id.run         = "bench-scrape";
	id.run_len     = 12;
	id.host        = host;
	id.host_len    = (uint16_t) strlen(host);
	m = malloc(wire_batch_header_size(&id, names) +
	    (size_t) METRICS * WIRE_SAMPLE_SIZE);
	if (m == NULL)
		exit(1);
	off = wire_put_batch_head(m, &id, 1, 1, 0);
	wire_put_names_count(m, &off, METRICS);
	for (int i = 0; i < METRICS; i++) {
		int n = snprintf(name, sizeof(name), "layers.%d/grad_norm", i);
		wire_put_name(m, &off, name, (size_t) n);
	}
	wire_put_samples_count(m, &off, METRICS);
	for (int i = 0; i < METRICS; i++) {
		wire_sample w = { (uint16_t) i, 7, 1700000000000000000ll,
			0.001 * i + rank };
		wire_put_sample(m, &off, &w);
	}
	*len = off;
	return m;
}

static void *
publisher(void *arg)
{
	pub         *p = arg;
	wire_batch   b;
	char         err[256];
	ingest_stats is;

	memset(&is, 0, sizeof(is));
	for (uint64_t i = 0; !p->stop; i++) {
		int    r = (int) (i % RANKS);
		double t0;

		wire_batch_decode(p->msg[r], p->len[r], &b, err, sizeof(err));
		t0 = now_s();
		expo_batch(p->x, &b);
		if (r == RANKS - 1)
			expo_commit(p->x, 1000000, &is, 0);
		t0 = now_s() - t0;
		if (t0 > p->worst_s)
			p->worst_s = t0;
		p->batches++;
		p->total++;
	}
	p->cpu_s = clock_s(CLOCK_THREAD_CPUTIME_ID);
	return NULL;
}

static size_t
sink(char *d, size_t s, size_t n, void *ctx)
{
	size_t *total = ctx;

	(void) d;
	*total += s * n;
	return s * n;
}

static int
cmp(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;

	return x < y ? -1 : x > y;
}

int
main(void)
{
	expo_opts  xo;
	http_opts  ho = { 0 };
	expo      *x;
	http      *h;
	pub        p = { 0 };
	pthread_t  th;
	char       err[512], url[128];
	double     t[SCRAPES], t0, idle_rate, busy_rate;
	size_t     body = 0;
	CURL      *c;
	FILE      *log;
	int        port = 0;
	wire_batch b;

	expo_opts_init(&xo);
	if (expo_open(&xo, &x, err, sizeof(err)) != 0)
		return 1;
	p.x = x;
	for (int r = 0; r < RANKS; r++) {
		p.msg[r] = build(r, &p.len[r]);
		wire_batch_decode(p.msg[r], p.len[r], &b, err, sizeof(err));
		expo_batch(x, &b);
	}
	/* The port http_open logs on stderr. */
	log = tmpfile();
	{
		int saved = dup(2);

		dup2(fileno(log), 2);
		ho.addr   = "127.0.0.1:0";
		ho.x      = x;
		ho.db_dir = "/nonexistent";
		if (http_open(&ho, &h, err, sizeof(err)) != 0) {
			dup2(saved, 2);
			fprintf(stderr, "bench_scrape: %s\n", err);
			return 1;
		}
		fflush(stderr);
		dup2(saved, 2);
		close(saved);
		rewind(log);
		while (fgets(err, sizeof(err), log) != NULL)
			if (sscanf(err, "vitalsd: http on 127.0.0.1:%d", &port) == 1)
				break;
		fclose(log);
	}
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", port);

	/* Publishing alone for a second. */
	pthread_create(&th, NULL, publisher, &p);
	t0 = now_s();
	while (now_s() - t0 < 1.0)
		;
	idle_rate = (double) p.batches / (now_s() - t0);
	p.batches = 0;
	p.worst_s = 0;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	c  = curl_easy_init();
	t0 = now_s();
	for (int i = 0; i < SCRAPES; i++) {
		double s = now_s();

		body = 0;
		curl_easy_reset(c);
		curl_easy_setopt(c, CURLOPT_URL, url);
		curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
		curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
		if (curl_easy_perform(c) != CURLE_OK) {
			fprintf(stderr, "bench_scrape: GET %s failed\n", url);
			return 1;
		}
		t[i] = now_s() - s;
	}
	busy_rate = (double) p.batches / (now_s() - t0);
	p.stop    = 1;
	pthread_join(th, NULL);
	{
		/* CPU time of the formatting alone (this thread), which the
		 * machine's load does not inflate as it does the wall clock. */
		double   cpu[5];
		expo_live live = { -1, 0, 0 };

		for (int i = 0; i < 5; i++) {
			expo_buf out = { 0 };
			double   c0  = clock_s(CLOCK_THREAD_CPUTIME_ID);

			expo_render(x, 0, &live, &out);
			cpu[i] = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
			free(out.p);
		}
		qsort(cpu, 5, sizeof(cpu[0]), cmp);
		printf("formatting 100,000 series: %.1f ms of CPU (median of "
		       "5); publishing: %.2f us of CPU per 1,000-sample batch\n",
		    cpu[2] * 1e3, p.cpu_s * 1e6 / (double) p.total);
	}
	qsort(t, SCRAPES, sizeof(t[0]), cmp);
	printf("scrape of %d series while publishing: median %.1f ms, worst "
	       "%.1f ms (%zu bytes; target <= 200 ms)\n",
	    RANKS * METRICS, t[SCRAPES / 2] * 1e3, t[SCRAPES - 1] * 1e3, body);
	printf("publishing (1,000-sample batches): %.0f batches/s alone, %.0f "
	       "during back-to-back scrapes (%.0f%%); longest publish call "
	       "during scrapes %.2f ms\n",
	    idle_rate, busy_rate, 100 * busy_rate / idle_rate,
	    p.worst_s * 1e3);
	curl_easy_cleanup(c);
	curl_global_cleanup();
	http_close(h);
	expo_close(x);
	for (int r = 0; r < RANKS; r++)
		free(p.msg[r]);
	return 0;
}
