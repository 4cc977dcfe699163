/*
 * hooks: the exec actions of alert rules. A hook is started with fork and
 * execvp (no shell: alert fields are never interpolated into a command
 * line), gets the alert as one JSON line on its standard input, has its
 * output thrown away, and is killed (its whole process group) when its
 * timeout passes. Starting one never waits for it; at most HOOKS_MAX run
 * at once. Further ones wait in a queue per rule (oldest first; the rules
 * take turns for free slots, so one noisy rule cannot hold back another's
 * pages), where a newer alert of the same incident replaces the waiting
 * one's input. A rule's queue holds HOOKS_QUEUE_PER_RULE; past that the
 * run is dropped, counted and reported to the caller, never silently.
 *
 * Thread rule: one thread at a time.
 */
#ifndef COLLECTOR_HOOKS_H
#define COLLECTOR_HOOKS_H

#include <stddef.h>
#include <stdint.h>

#define HOOKS_MAX 16
#define HOOKS_QUEUE_PER_RULE 64

typedef struct hooks hooks;

/* Returns NULL when out of memory. */
hooks *hooks_new(void);
/* Kills what still runs, reaps it, frees. NULL is a no-op. */
void hooks_free(hooks *h);

enum hooks_result {
	HOOKS_STARTED = 0,
	HOOKS_QUEUED,    /* waits for a free slot */
	HOOKS_COALESCED, /* replaced the waiting run of the same incident */
	HOOKS_DROPPED,   /* the rule's queue is full (counted) */
	HOOKS_FAILED,    /* pipe, fork or memory failure (logged) */
};

/*
 * Run argv (NULL-terminated, copied) with input on stdin for an alert of
 * rule (its incident: any string naming it within the rule); kill it
 * after timeout_ms. Returns an enum hooks_result.
 */
int hooks_run(hooks *h, const char *rule, const char *incident,
    const char *const *argv, const char *input, size_t len,
    uint32_t timeout_ms);

/* Runs dropped so far because rule's queue was full. */
uint64_t hooks_dropped(const hooks *h, const char *rule);

/* Reap hooks that ended, kill those past their timeout and start waiting
 * ones in the slots freed; now_ns is CLOCK_MONOTONIC. Logs each kill and
 * each non-zero exit. */
void hooks_poll(hooks *h, int64_t now_ns);

/* Hooks running now, and waiting in the queues. */
size_t hooks_running(const hooks *h);
size_t hooks_waiting(const hooks *h);

#endif /* COLLECTOR_HOOKS_H */
