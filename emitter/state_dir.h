/*
 * state_dir: the per-user state folder of vitals, $XDG_STATE_HOME/vitals
 * else ~/.local/state/vitals (XDG Base Directory), where an emitter
 * spools what it could not deliver (spool.h) and `vitals emit` keeps its
 * identity per run and rank (cli/emit_state.h). Not exported from
 * libvitals.so.
 */
#ifndef EMITTER_STATE_DIR_H
#define EMITTER_STATE_DIR_H

#include <stddef.h>

/* The subfolder sub of the state folder into buf. Returns 0, or -1 when
 * neither variable is set or buf is too short. */
int vte_state_dir(const char *sub, char *buf, size_t len);

/* mkdir -p, mode 0700 for what it creates. Returns 0 or -1 (errno). */
int vte_mkdir_p(const char *dir);

#endif
