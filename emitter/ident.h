/*
 * ident: who an emitter is (run, host, pid, ranks, incarnation), resolved
 * once from the options and the environment trainers already set, and
 * repeated in every batch.
 *
 * Internal to libvitals. It owns reading the identity from the options
 * and the environment; it must not change the environment nor lay out
 * bytes (wire/ encodes the identity into each batch).
 */
#ifndef VTE_IDENT_H
#define VTE_IDENT_H

#include <stddef.h>

#include "vitals.h"
#include "wire/wire.h"

#pragma GCC visibility push(hidden)

/* w.run and w.host point into this struct: it must not be copied. */
typedef struct vte_ident {
	char       run[VT_RUN_MAX + 1];
	char       host[WIRE_HOST_MAX + 1];
	wire_ident w;
} vte_ident;

/*
 * Fill *id from opts (NULL fields and -1 ranks fall back to the
 * environment, see vt_opts in vitals.h). An invalid rank or world size in
 * the environment is ignored (the next source is used); an invalid value
 * in opts is an error. The incarnation is the one given, else a new
 * random one. Returns 0, VT_ENAME (invalid run or host name) or
 * VT_EINVAL (rank or world size out of range, a first_seq
 * vt_open_continue() refuses), with detail in err.
 */
int vte_ident_resolve(const vt_opts *opts, uint64_t incarnation,
    uint64_t first_seq, vte_ident *id, char *err, size_t errlen);

#pragma GCC visibility pop

#endif /* VTE_IDENT_H */
