/*
 * spool: samples an emitter could not deliver, kept on disk for later.
 *
 * When an emitter stops (vt_close(), process exit) with batches the
 * collector has not acknowledged within the close timeout, io.c hands
 * them to vte_spool_save(), which writes them, exactly as they would
 * have been sent, to one file per emitter in the spool folder and says
 * so in one line on stderr. `vitals spool send` sends each file's
 * batches to a collector later; the collector stores each (incarnation,
 * seq) once, so sending a file twice, or a batch that did arrive before
 * the emitter gave up, stores nothing twice.
 *
 * The folder: $VITALS_SPOOL_DIR ("off": no spool), else
 * $XDG_STATE_HOME/vitals/spool, else ~/.local/state/vitals/spool. Its
 * files together stay under $VITALS_SPOOL_MAX bytes (K, M, G suffixes;
 * default 1 GiB): a spool that would pass it is not written, and said
 * so. Nothing here is ever fatal to the trainer.
 *
 * A spool file, NAME.vtspool (NAME: the incarnation in hex), holds the
 * 8 bytes "VTSPOOL1" then, per batch in seq order, a u32 length
 * (little-endian) and the batch. It is written under a dot name and
 * renamed when complete, so a file without a dot is whole.
 */
#ifndef VTE_SPOOL_H
#define VTE_SPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "wire/wire.h"

#pragma GCC visibility push(hidden)

#define VTE_SPOOL_MAGIC "VTSPOOL1"
#define VTE_SPOOL_SUFFIX ".vtspool"
#define VTE_SPOOL_MAX_DEFAULT (1ull << 30)

/* One batch to spool: its wire bytes (borrowed) and sample count. */
typedef struct vte_spool_item {
	const uint8_t *data;
	size_t         len;
	uint32_t       n;
} vte_spool_item;

/*
 * The spool folder into buf. Returns 0, 1 if spooling is off
 * (VITALS_SPOOL_DIR=off), or -1 if no folder can be named (no $HOME) or
 * it does not fit.
 */
int vte_spool_dir(char *buf, size_t len);

/*
 * Write items (seq order, all of incarnation id->incarnation) to a new
 * spool file and print one line on stderr: how many samples, for which
 * endpoint, and the file, or why they could not be spooled (folder
 * full, not writable, spooling off). lost counts samples that were not
 * even in a batch (the window was full); they are mentioned too.
 * Returns 0 if the file was written, -1 otherwise.
 */
int vte_spool_save(const wire_ident *id, const char *endpoint,
    const vte_spool_item *items, size_t n, uint64_t lost);

/*
 * Read a spool file: *buf (caller frees) holds the whole file, items
 * (caller frees) point into it, every batch checked with
 * wire_batch_decode() and of one incarnation. Returns 0, or -1 with
 * "PATH: why" (with the byte offset for a bad batch) in err.
 */
int vte_spool_read(const char *path, uint8_t **buf, vte_spool_item **items,
    size_t *n, char *err, size_t errlen);

#pragma GCC visibility pop

#endif /* VTE_SPOOL_H */
