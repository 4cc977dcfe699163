/*
 * hooks: the exec actions of alert rules. A hook is started with fork and
 * execvp (no shell: alert fields are never interpolated into a command
 * line), gets the alert as one JSON line on its standard input, has its
 * output thrown away, and is killed (its whole process group) when its
 * timeout passes. Starting one never waits for it; at most HOOKS_MAX run
 * at once, further ones are skipped and logged.
 *
 * Thread rule: one thread at a time.
 */
#ifndef COLLECTOR_HOOKS_H
#define COLLECTOR_HOOKS_H

#include <stddef.h>
#include <stdint.h>

#define HOOKS_MAX 16

typedef struct hooks hooks;

/* Returns NULL when out of memory. */
hooks *hooks_new(void);
/* Kills what still runs, reaps it, frees. NULL is a no-op. */
void hooks_free(hooks *h);

/* Start argv (NULL-terminated) with input on stdin; kill it after
 * timeout_ms. Returns 0, or -1 after logging why to stderr. */
int hooks_start(hooks *h, const char *const *argv, const char *input,
    size_t len, uint32_t timeout_ms);

/* Reap hooks that ended and kill those past their timeout; now_ns is
 * CLOCK_MONOTONIC. Logs each kill and each non-zero exit. */
void hooks_poll(hooks *h, int64_t now_ns);

/* Hooks running now. */
size_t hooks_running(const hooks *h);

#endif /* COLLECTOR_HOOKS_H */
