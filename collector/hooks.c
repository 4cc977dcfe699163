#include "collector/hooks.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"

typedef struct hook {
	pid_t   pid; /* 0: free slot */
	int64_t deadline;
	int     killed;
	char    name[64];
} hook;

/* A run waiting for a free slot (copies of what hooks_run got). */
typedef struct waiting {
	struct waiting *next;
	char           *incident;
	char          **argv;
	char           *input;
	size_t          len;
	uint32_t        timeout_ms;
} waiting;

typedef struct rule_queue {
	char    *rule;
	waiting *head, *tail;
	size_t   n;
	uint64_t dropped;
} rule_queue;

struct hooks {
	hook        slot[HOOKS_MAX];
	size_t      n;
	rule_queue *q; /* one per rule that ever queued */
	size_t      nq, capq;
	size_t      waiting; /* over every queue */
	size_t      turn;    /* the queue served next */
};

hooks *
hooks_new(void)
{
	return calloc(1, sizeof(hooks));
}

static void
waiting_free(waiting *w)
{
	if (w == NULL)
		return;
	if (w->argv != NULL)
		for (size_t i = 0; w->argv[i] != NULL; i++)
			free(w->argv[i]);
	free(w->argv);
	free(w->incident);
	free(w->input);
	free(w);
}

void
hooks_free(hooks *h)
{
	if (h == NULL)
		return;
	if (h->waiting > 0)
		fprintf(stderr,
		    "vitalsd: stopping with %zu hook runs waiting: not run\n",
		    h->waiting);
	for (size_t i = 0; i < h->nq; i++) {
		while (h->q[i].head != NULL) {
			waiting *w   = h->q[i].head;
			h->q[i].head = w->next;
			waiting_free(w);
		}
		free(h->q[i].rule);
	}
	free(h->q);
	for (size_t i = 0; i < HOOKS_MAX; i++) {
		if (h->slot[i].pid > 0) {
			kill(-h->slot[i].pid, SIGKILL);
			waitpid(h->slot[i].pid, NULL, 0);
		}
	}
	free(h);
}

size_t
hooks_running(const hooks *h)
{
	return h->n;
}

/*
 * In the child: a process group of its own (so a timeout kills what it
 * started too), default signal dispositions, the alert on stdin, output
 * to /dev/null so a hook that floods cannot fill our log or block on a
 * pipe nobody reads.
 */
static void
child(int in_fd, const char *const *argv)
{
	int null = open("/dev/null", O_WRONLY);

	setpgid(0, 0);
	signal(SIGPIPE, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	dup2(in_fd, 0);
	if (null >= 0) {
		dup2(null, 1);
		dup2(null, 2);
	}
	/* Every descriptor past stdio: the limit is raised at start, so
	 * connections may sit far above 1024. */
	if (close_range(3, ~0u, 0) != 0)
		for (int fd = 3; fd < 65536; fd++)
			close(fd);
	execvp(argv[0], (char *const *) (uintptr_t) argv);
	_exit(127);
}

/* Start argv in a free slot (there is one). Returns 0, or -1 after
 * logging why. */
static int
start(hooks *h, const char *const *argv, const char *input, size_t len,
    uint32_t timeout_ms)
{
	hook   *slot = NULL;
	int     p[2];
	pid_t   pid;
	ssize_t w;

	for (size_t i = 0; i < HOOKS_MAX && slot == NULL; i++)
		if (h->slot[i].pid == 0)
			slot = &h->slot[i];
	if (slot == NULL)
		return -1;
	if (pipe2(p, O_CLOEXEC) != 0) {
		fprintf(stderr, "vitalsd: hook %s: pipe: %s\n", argv[0],
		    strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "vitalsd: hook %s: fork: %s\n", argv[0],
		    strerror(errno));
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0)
		child(p[0], argv);
	/* Also here, so a kill can never race the child's own setpgid. */
	setpgid(pid, pid);
	close(p[0]);
	/* The alert is far smaller than a pipe's buffer: the write does not
	 * wait for the hook to read. Non-blocking all the same. */
	fcntl(p[1], F_SETFL, O_NONBLOCK);
	w = write(p[1], input, len);
	(void) w;
	close(p[1]);
	slot->pid      = pid;
	slot->killed   = 0;
	slot->deadline = now_mono_ns() + (int64_t) timeout_ms * 1000000;
	snprintf(slot->name, sizeof(slot->name), "%s", argv[0]);
	h->n++;
	return 0;
}

/* The queue of rule, added if new; NULL when out of memory. */
static rule_queue *
queue_of(hooks *h, const char *rule)
{
	rule_queue *q;

	for (size_t i = 0; i < h->nq; i++)
		if (strcmp(h->q[i].rule, rule) == 0)
			return &h->q[i];
	if (h->nq == h->capq) {
		size_t      nc = h->capq ? 2 * h->capq : 8;
		rule_queue *nq = realloc(h->q, nc * sizeof(*nq));

		if (nq == NULL)
			return NULL;
		h->q    = nq;
		h->capq = nc;
	}
	q = &h->q[h->nq];
	memset(q, 0, sizeof(*q));
	if ((q->rule = strdup(rule)) == NULL)
		return NULL;
	h->nq++;
	return q;
}

static waiting *
waiting_new(const char *incident, const char *const *argv, const char *input,
    size_t len, uint32_t timeout_ms)
{
	waiting *w = calloc(1, sizeof(*w));
	size_t   argc = 0;

	if (w == NULL)
		return NULL;
	while (argv[argc] != NULL)
		argc++;
	w->incident   = strdup(incident);
	w->argv       = calloc(argc + 1, sizeof(*w->argv));
	w->input      = malloc(len ? len : 1);
	w->len        = len;
	w->timeout_ms = timeout_ms;
	if (w->incident == NULL || w->argv == NULL || w->input == NULL)
		goto fail;
	for (size_t i = 0; i < argc; i++)
		if ((w->argv[i] = strdup(argv[i])) == NULL)
			goto fail;
	memcpy(w->input, input, len);
	return w;
fail:
	waiting_free(w);
	return NULL;
}

int
hooks_run(hooks *h, const char *rule, const char *incident,
    const char *const *argv, const char *input, size_t len,
    uint32_t timeout_ms)
{
	rule_queue *q = queue_of(h, rule);
	waiting    *w;

	/* Behind the rule's waiting runs, oldest first. */
	if ((q == NULL || q->n == 0) && h->n < HOOKS_MAX)
		return start(h, argv, input, len, timeout_ms) == 0
		    ? HOOKS_STARTED
		    : HOOKS_FAILED;
	if (q == NULL) {
		fprintf(stderr, "vitalsd: hook %s not queued: out of memory\n",
		    argv[0]);
		return HOOKS_FAILED;
	}
	for (w = q->head; w != NULL; w = w->next) {
		char *in;

		if (strcmp(w->incident, incident) != 0)
			continue;
		/* The same incident again: one page, with the latest. */
		if ((in = malloc(len ? len : 1)) == NULL)
			return HOOKS_FAILED;
		memcpy(in, input, len);
		free(w->input);
		w->input = in;
		w->len   = len;
		return HOOKS_COALESCED;
	}
	if (q->n >= HOOKS_QUEUE_PER_RULE) {
		q->dropped++;
		return HOOKS_DROPPED;
	}
	if ((w = waiting_new(incident, argv, input, len, timeout_ms)) == NULL) {
		fprintf(stderr, "vitalsd: hook %s not queued: out of memory\n",
		    argv[0]);
		return HOOKS_FAILED;
	}
	if (q->tail != NULL)
		q->tail->next = w;
	else
		q->head = w;
	q->tail = w;
	q->n++;
	h->waiting++;
	return HOOKS_QUEUED;
}

uint64_t
hooks_dropped(const hooks *h, const char *rule)
{
	for (size_t i = 0; i < h->nq; i++)
		if (strcmp(h->q[i].rule, rule) == 0)
			return h->q[i].dropped;
	return 0;
}

size_t
hooks_waiting(const hooks *h)
{
	return h->waiting;
}

/* Start waiting runs in the free slots, the rules taking turns. */
static void
start_waiting(hooks *h)
{
	while (h->n < HOOKS_MAX && h->waiting > 0) {
		rule_queue *q;
		waiting    *w;

		for (size_t k = 0; k < h->nq; k++, h->turn++)
			if (h->q[h->turn % h->nq].n > 0)
				break;
		q = &h->q[h->turn % h->nq];
		h->turn++;
		w       = q->head;
		q->head = w->next;
		if (q->head == NULL)
			q->tail = NULL;
		q->n--;
		h->waiting--;
		start(h, (const char *const *) w->argv, w->input, w->len,
		    w->timeout_ms);
		waiting_free(w);
	}
}

void
hooks_poll(hooks *h, int64_t now_ns)
{
	for (size_t i = 0; i < HOOKS_MAX; i++) {
		hook *k = &h->slot[i];
		int   st;
		pid_t r;

		if (k->pid <= 0)
			continue;
		r = waitpid(k->pid, &st, WNOHANG);
		if (r == k->pid) {
			if (!k->killed && WIFEXITED(st) && WEXITSTATUS(st))
				fprintf(stderr, "vitalsd: hook %s exited with "
						"status %d\n",
				    k->name, WEXITSTATUS(st));
			else if (!k->killed && WIFSIGNALED(st))
				fprintf(stderr, "vitalsd: hook %s killed by "
						"signal %d\n",
				    k->name, WTERMSIG(st));
			k->pid = 0;
			h->n--;
			continue;
		}
		if (!k->killed && now_ns >= k->deadline) {
			fprintf(stderr, "vitalsd: hook %s (pid %d) past its "
					"timeout: killed\n",
			    k->name, (int) k->pid);
			kill(-k->pid, SIGKILL);
			k->killed = 1;
		}
	}
	start_waiting(h);
}
