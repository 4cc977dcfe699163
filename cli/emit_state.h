/*
 * emit_state: what makes the calls of `vitals emit` for one run and rank
 * one emitter. A small file per run and rank holds the incarnation of the
 * emitter and the next batch number free; each call locks it (flock), so
 * concurrent calls take turns, and reserves a range of batch numbers
 * before it sends anything, so a call killed halfway never makes the next
 * one reuse a number the collector already stored (it would be discarded
 * as a duplicate).
 *
 * The folder is $XDG_STATE_HOME/vitals/emit, else
 * ~/.local/state/vitals/emit (created 0700). A file that is missing,
 * unreadable or written for another run starts a new incarnation.
 */
#ifndef CLI_EMIT_STATE_H
#define CLI_EMIT_STATE_H

#include <stddef.h>
#include <stdint.h>

typedef struct emit_state {
	int      fd;          /* locked state file, -1 if none */
	uint64_t incarnation; /* 0: none yet (the library picks one) */
	uint64_t first_seq;   /* first batch number of this call (>= 1) */
	uint64_t next;        /* first batch number after this call's range */
	int32_t  rank;
	char     run[256];
	char     path[4096];
} emit_state;

/*
 * Open and lock the state of (run, rank) and reserve nbatches batch
 * numbers for this call. Returns 0 with st->incarnation and first_seq
 * set (incarnation 0 for the first call: the library draws one, and
 * emit_state_keep() records it), or -1 with a reason in err and st->fd
 * -1: the call then goes ahead as a new emitter of its own.
 */
int emit_state_begin(emit_state *st, const char *run, int32_t rank,
    uint64_t nbatches, char *err, size_t errlen);

/* After vt_open(): record the incarnation the emitter uses (needed when
 * begin returned 0). Returns 0 or -1 with a reason in err. */
int emit_state_keep(
    emit_state *st, uint64_t incarnation, char *err, size_t errlen);

/*
 * Unlock and close. With ok 0 (samples not acknowledged: they may be in
 * the spool, numbered within this call's range) the file is emptied, so
 * the next call is a new incarnation and the spooled batches stay
 * deliverable exactly once. NULL-safe, idempotent.
 */
void emit_state_end(emit_state *st, int ok);

#endif /* CLI_EMIT_STATE_H */
