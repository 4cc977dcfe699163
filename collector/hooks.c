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

struct hooks {
	hook slot[HOOKS_MAX];
	size_t n;
};

hooks *
hooks_new(void)
{
	return calloc(1, sizeof(hooks));
}

void
hooks_free(hooks *h)
{
	if (h == NULL)
		return;
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
	for (int fd = 3; fd < 1024; fd++)
		close(fd);
	execvp(argv[0], (char *const *) (uintptr_t) argv);
	_exit(127);
}

int
hooks_start(hooks *h, const char *const *argv, const char *input, size_t len,
    uint32_t timeout_ms)
{
	hook   *slot = NULL;
	int     p[2];
	pid_t   pid;
	ssize_t w;

	for (size_t i = 0; i < HOOKS_MAX && slot == NULL; i++)
		if (h->slot[i].pid == 0)
			slot = &h->slot[i];
	if (slot == NULL) {
		fprintf(stderr, "vitalsd: hook %s not started: %d hooks are "
				"still running\n",
		    argv[0], HOOKS_MAX);
		return -1;
	}
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
}
