/*
 * vitals tail: turn a trainer's log lines into samples.
 *
 *	vitals tail --preset megatron train.log         follow a file
 *	python train.py 2>&1 | vitals tail --preset hf  read a pipe
 *	vitals tail --preset llmc -- ./train_gpt2cu     run a command
 *
 * A file is followed as it grows, across rotation (a new file under the
 * name) and truncation, until SIGINT or SIGTERM; it is read from its
 * start. Standard input is read to its end and copied to standard output
 * unchanged. A command's standard output and error are copied, unchanged,
 * to ours while they are scraped; its exit status is ours. Samples go to
 * vitalsd through the emitter library, one emitter per rank seen (the
 * rank comes from a "[default7]:" line prefix, a rank group, --rank, or
 * the environment as for any emitter).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/scrape.h"
#include "vitals.h"

#define MAX_EMITTERS 1024
#define POLL_MS 200
#define CHUNK 65536
#define HEAD_MAX 256 /* first bytes kept to notice a rewritten file */

/*
 * The signal state of this command: the one mutable global of `vitals
 * tail`, as a daemon's stop flag is. stop asks the follow and pipe loops
 * to finish; child is the command's pid, to which a signal sent to us by
 * another process (kill, a batch system) is passed on.
 */
static volatile sig_atomic_t tail_stop, tail_child;

static void
on_signal(int sig, siginfo_t *si, void *uctx)
{
	(void) uctx;
	tail_stop = 1;
	/* A terminal's Ctrl-C reaches the command's process group anyway
	 * (SI_KERNEL); pass on only what a process sent to us. */
	if (tail_child > 0 && si != NULL && si->si_code == SI_USER)
		kill((pid_t) tail_child, sig);
}

typedef struct tail_em {
	int32_t     rank; /* -1: from --rank or the environment */
	vt_emitter *em;
} tail_em;

/* Bytes of one stream, cut into lines. */
typedef struct linebuf {
	char  *buf;
	size_t len;
} linebuf;

typedef struct tail {
	const cli_args *a;
	scrape         *sc;
	scrape_result   r;
	tail_em        *ems;
	size_t          nems;
	uint64_t        sent, unsent;
	int             warned[16];
	int             warned_ranks;
	int out_broken; /* our stdout/stderr closed: stop copying */
} tail;

/* ---- emitters ----------------------------------------------------------- */

/*
 * The emitter of a rank, opened on first use. Returns NULL (after one
 * message) if it cannot be opened or there are too many ranks.
 */
static vt_emitter *
emitter_for(tail *t, int32_t rank, int *rc)
{
	vt_opts  o;
	tail_em *e;

	*rc = 0;
	for (size_t i = 0; i < t->nems; i++)
		if (t->ems[i].rank == rank)
			return t->ems[i].em;
	if (t->nems == MAX_EMITTERS) {
		if (!t->warned_ranks)
			fprintf(stderr,
			    "vitals tail: more than %d ranks: "
			    "samples of the others are not sent\n",
			    MAX_EMITTERS);
		t->warned_ranks = 1;
		*rc             = VT_ETOOMANY;
		return NULL;
	}
	e = realloc(t->ems, (t->nems + 1) * sizeof(*e));
	if (e == NULL) {
		*rc = VT_ENOMEM;
		return NULL;
	}
	t->ems = e;
	vt_opts_init(&o);
	o.run              = t->a->run;
	o.endpoint         = t->a->endpoint;
	o.rank             = rank;
	o.close_timeout_ms = 100;
	e                  = &t->ems[t->nems];
	e->rank            = rank;
	*rc                = vt_open(&o, &e->em);
	if (*rc != 0)
		return NULL;
	t->nems++;
	return e->em;
}

static void
warn_once(tail *t, int code, const char *metric)
{
	int i = code > 0 && code < 16 ? code : 0;

	if (t->warned[i])
		return;
	t->warned[i] = 1;
	fprintf(stderr,
	    "vitals tail: metric '%s': %s (further such "
	    "errors are counted)\n",
	    metric, vt_strerror(code));
}

static void
send_result(tail *t)
{
	int32_t rank
	    = t->r.rank >= 0 ? t->r.rank : (t->a->has_rank ? t->a->rank : -1);
	int         rc;
	vt_emitter *em = emitter_for(t, rank, &rc);

	for (size_t i = 0; i < t->r.n; i++) {
		if (em != NULL)
			rc = vt_emit(
			    em, t->r.m[i].name, t->r.step, t->r.m[i].value);
		if (rc == 0) {
			t->sent++;
			continue;
		}
		t->unsent++;
		warn_once(t, rc, t->r.m[i].name);
	}
}

/* Wait for the acknowledgements, then close. Returns 0 or 1. */
static int
close_emitters(tail *t)
{
	int      failed = 0;
	vt_stats st;

	for (size_t i = 0; i < t->nems; i++) {
		if (vt_flush(t->ems[i].em, (unsigned) t->a->timeout_ms) != 0) {
			vt_get_stats(t->ems[i].em, &st);
			fprintf(stderr,
			    "vitals tail: %llu samples not acknowledged by "
			    "the collector within %ld ms\n",
			    (unsigned long long) st.pending, t->a->timeout_ms);
			failed = 1;
		}
		vt_close(t->ems[i].em);
	}
	free(t->ems);
	t->ems  = NULL;
	t->nems = 0;
	return failed;
}

/* ---- lines -------------------------------------------------------------- */

static void
on_line(tail *t, const char *line, size_t len)
{
	if (scrape_line(t->sc, line, len, &t->r) == 1 && t->r.n > 0)
		send_result(t);
}

/* Cut bytes into lines; a line longer than the scraper looks at is
 * matched by its start, the rest is skipped. */
static void
feed(tail *t, linebuf *lb, const char *p, size_t n)
{
	while (n > 0) {
		const char *nl   = memchr(p, '\n', n);
		size_t      k    = nl != NULL ? (size_t) (nl - p) : n;
		size_t      room = SCRAPE_LINE_MAX - lb->len;

		memcpy(lb->buf + lb->len, p, k < room ? k : room);
		lb->len += k < room ? k : room;
		if (nl == NULL)
			return;
		on_line(t, lb->buf, lb->len);
		lb->len = 0;
		p += k + 1;
		n -= k + 1;
	}
}

static void
feed_end(tail *t, linebuf *lb)
{
	if (lb->len > 0)
		on_line(t, lb->buf, lb->len);
	lb->len = 0;
}

/* Copy to fd (none if -1); on a closed reader stop copying (scraping
 * goes on). */
static void
pass(tail *t, int fd, const char *p, size_t n)
{
	while (fd >= 0 && n > 0 && !t->out_broken) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			t->out_broken = 1;
			return;
		}
		p += w;
		n -= (size_t) w;
	}
}

/* ---- sources ------------------------------------------------------------ */

/*
 * Read fds[] (pipes) until each ends, copying fd i to out[i] and
 * scraping. Returns 0, or 1 on a read error.
 */
static int
read_pipes(tail *t, const int *fds, const int *out, int nfd, char *chunk)
{
	struct pollfd pf[2];
	linebuf       lb[2] = { { 0 } };
	int           open = nfd, rc = 0;

	for (int i = 0; i < nfd; i++) {
		pf[i].fd     = fds[i];
		pf[i].events = POLLIN;
		lb[i].buf    = malloc(SCRAPE_LINE_MAX);
		if (lb[i].buf == NULL) {
			rc = 1;
			goto done;
		}
	}
	while (open > 0) {
		/* A stop request ends reading stdin; a command is read to
		 * its end (it got the signal and will exit). */
		if (tail_stop && tail_child == 0)
			break;
		if (poll(pf, (nfds_t) nfd, POLL_MS) < 0) {
			if (errno == EINTR)
				continue;
			rc = 1;
			break;
		}
		for (int i = 0; i < nfd; i++) {
			ssize_t n;

			if (pf[i].fd < 0 || pf[i].revents == 0)
				continue;
			n = read(pf[i].fd, chunk, CHUNK);
			if (n < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (n <= 0) {
				if (n < 0) {
					fprintf(stderr,
					    "vitals tail: read: "
					    "%s\n",
					    strerror(errno));
					rc = 1;
				}
				feed_end(t, &lb[i]);
				pf[i].fd = -1;
				open--;
				continue;
			}
			pass(t, out[i], chunk, (size_t) n);
			feed(t, &lb[i], chunk, (size_t) n);
		}
	}
done:
	for (int i = 0; i < nfd; i++) {
		feed_end(t, &lb[i]);
		free(lb[i].buf);
	}
	return rc;
}

/*
 * Run argv with its stdout and stderr on pipes. Returns its exit status
 * (128 + signal if killed), or 127 if it could not be started.
 */
static int
run_command(tail *t, char **argv, char *chunk)
{
	int   po[2] = { -1, -1 }, pe[2] = { -1, -1 };
	int   fds[2], outs[2]           = { STDOUT_FILENO, STDERR_FILENO }, st;
	pid_t pid;

	if (pipe(po) != 0 || pipe(pe) != 0) {
		fprintf(stderr, "vitals tail: pipe: %s\n", strerror(errno));
		goto fail;
	}
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "vitals tail: fork: %s\n", strerror(errno));
		goto fail;
	}
	if (pid == 0) {
		dup2(po[1], STDOUT_FILENO);
		dup2(pe[1], STDERR_FILENO);
		close(po[0]);
		close(po[1]);
		close(pe[0]);
		close(pe[1]);
		signal(SIGPIPE, SIG_DFL);
		/* Python block-buffers a pipe; lines should arrive as they
		 * are printed. */
		setenv("PYTHONUNBUFFERED", "1", 0);
		execvp(argv[0], argv);
		fprintf(
		    stderr, "vitals tail: %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	tail_child = pid;
	close(po[1]);
	close(pe[1]);
	fds[0] = po[0];
	fds[1] = pe[0];
	read_pipes(t, fds, outs, 2, chunk);
	close(po[0]);
	close(pe[0]);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return 127;
	tail_child = 0;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
fail:
	for (int i = 0; i < 2; i++) {
		if (po[i] >= 0)
			close(po[i]);
		if (pe[i] >= 0)
			close(pe[i]);
	}
	return 127;
}

/* The first bytes of a followed file, as read. */
typedef struct head {
	char   b[HEAD_MAX];
	size_t n;
} head;

/* Read fd from its offset to its end, keeping its first bytes in h.
 * Returns 0, or -1 on error. */
static int
drain(tail *t, int fd, linebuf *lb, off_t *off, char *chunk, head *h)
{
	for (;;) {
		ssize_t n = read(fd, chunk, CHUNK);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			return 0;
		if (h != NULL && *off == (off_t) h->n && h->n < HEAD_MAX) {
			size_t k = HEAD_MAX - h->n < (size_t) n
			    ? HEAD_MAX - h->n
			    : (size_t) n;

			memcpy(h->b + h->n, chunk, k);
			h->n += k;
		}
		*off += n;
		feed(t, lb, chunk, (size_t) n);
	}
}

/*
 * 1 if the file under fd was truncated since we read up to off: it is
 * shorter, or its first bytes are not those we read (truncated and
 * rewritten past off between two looks, which the size alone misses).
 */
static int
truncated(int fd, off_t off, const head *h)
{
	struct stat st;
	char        now[HEAD_MAX];

	if (fstat(fd, &st) != 0)
		return 0;
	if (st.st_size < off)
		return 1;
	return h->n > 0
	    && (pread(fd, now, h->n, 0) != (ssize_t) h->n
	        || memcmp(now, h->b, h->n) != 0);
}

static void
nap(void)
{
	(void) poll(NULL, 0, POLL_MS);
}

/*
 * Follow path until a stop signal. A missing file is waited for; a new
 * file under the name (rotation) is read from its start once the old one
 * is read to its end; a file that shrank (truncation) is read again from
 * its start. Returns 0, or 1 on a read error.
 */
static int
follow(tail *t, const char *path, char *chunk)
{
	linebuf     lb = { 0 };
	struct stat st, now;
	head        h   = { .n = 0 };
	off_t       off = 0;
	int         fd = -1, rc = 0, waiting = 0;

	lb.buf = malloc(SCRAPE_LINE_MAX);
	if (lb.buf == NULL)
		return 1;
	while (!tail_stop) {
		if (fd < 0) {
			fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0) {
				if (errno != ENOENT) {
					fprintf(stderr,
					    "vitals tail: %s: %s\n", path,
					    strerror(errno));
					rc = 1;
					break;
				}
				if (!waiting)
					fprintf(stderr,
					    "vitals tail: waiting "
					    "for %s\n",
					    path);
				waiting = 1;
				nap();
				continue;
			}
			if (fstat(fd, &st) != 0)
				memset(&st, 0, sizeof(st));
			off = 0;
			h.n = 0;
			if (!S_ISREG(st.st_mode)) {
				/* A FIFO or device: read it to its end. */
				int none = -1;

				free(lb.buf);
				rc = read_pipes(t, &fd, &none, 1, chunk);
				close(fd);
				return rc;
			}
		}
		if (off > 0 && truncated(fd, off, &h)) {
			/* Truncated (copytruncate), perhaps already longer
			 * than before: from the start again, before reading
			 * on from the old offset. */
			lseek(fd, 0, SEEK_SET);
			off    = 0;
			h.n    = 0;
			lb.len = 0;
		}
		if (drain(t, fd, &lb, &off, chunk, &h) != 0) {
			fprintf(stderr, "vitals tail: %s: %s\n", path,
			    strerror(errno));
			rc = 1;
			break;
		}
		if (truncated(fd, off, &h)) {
			/* Shrank while read: from the start again. */
			lseek(fd, 0, SEEK_SET);
			off    = 0;
			h.n    = 0;
			lb.len = 0;
			continue;
		}
		if (stat(path, &now) == 0
		    && (now.st_ino != st.st_ino || now.st_dev != st.st_dev)) {
			/* Rotated: what was appended to the old file before
			 * the rename is read above; the new one from its
			 * start. */
			if (drain(t, fd, &lb, &off, chunk, NULL) == 0)
				feed_end(t, &lb);
			close(fd);
			fd = -1;
			continue;
		}
		nap();
	}
	if (fd >= 0) {
		if (!tail_stop)
			(void) drain(t, fd, &lb, &off, chunk, NULL);
		close(fd);
	}
	feed_end(t, &lb);
	free(lb.buf);
	return rc;
}

/* ---- the command -------------------------------------------------------- */

static int
usage_tail(void)
{
	fprintf(stderr,
	    "usage: vitals tail [--preset NAME | --pattern RE] [--run R] "
	    "[--rank N]\n"
	    "                   [--endpoint E] [--timeout-ms N] "
	    "[FILE | -- COMMAND ARGS...]\n"
	    "presets:\n%s"
	    "a pattern's named groups: step, rank, and one per metric, e.g.\n"
	    "  --pattern 'it (?<step>\\d+) loss=(?<loss>\\S+)'\n",
	    scrape_preset_help());
	return 2;
}

static void
install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags     = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

int
cmd_tail(const cli_args *a)
{
	tail          t = { 0 };
	scrape_counts c;
	char          err[512], *chunk = NULL;
	int           rc = 0, status = 0, flush_failed, erc;

	if ((a->preset == NULL) == (a->pattern == NULL)
	    || (a->cmd_argc == 0 && a->npos > 1)
	    || (a->cmd_argc > 0 && a->npos > 0))
		return usage_tail();
	if (scrape_new(a->preset, a->pattern, &t.sc, err, sizeof(err)) != 0) {
		fprintf(stderr, "vitals tail: %s%s\n",
		    a->pattern != NULL ? "--" : "", err);
		return 2;
	}
	t.a   = a;
	chunk = malloc(CHUNK);
	if (chunk == NULL) {
		fprintf(stderr, "vitals tail: out of memory\n");
		scrape_free(t.sc);
		return 1;
	}
	/* A bad endpoint or run name is reported now, not at the first
	 * matching line. */
	if (emitter_for(&t, a->has_rank ? a->rank : -1, &erc) == NULL) {
		fprintf(stderr, "vitals tail: cannot open an emitter: %s\n",
		    vt_strerror(erc));
		scrape_free(t.sc);
		free(chunk);
		return 1;
	}
	install_signals();
	if (a->cmd_argc > 0)
		status = run_command(&t, a->cmd_argv, chunk);
	else if (a->npos == 1 && strcmp(a->pos[0], "-") != 0)
		rc = follow(&t, a->pos[0], chunk);
	else {
		int in = STDIN_FILENO, out = STDOUT_FILENO;

		rc = read_pipes(&t, &in, &out, 1, chunk);
	}
	flush_failed = close_emitters(&t);
	scrape_get_counts(t.sc, &c);
	fprintf(stderr,
	    "vitals tail: %llu lines, %llu matched, %llu samples sent, "
	    "%llu not sent, %llu malformed values\n",
	    (unsigned long long) c.lines, (unsigned long long) c.matched,
	    (unsigned long long) t.sent, (unsigned long long) t.unsent,
	    (unsigned long long) c.malformed);
	scrape_free(t.sc);
	free(chunk);
	if (a->cmd_argc > 0)
		return status;
	return rc || flush_failed;
}
