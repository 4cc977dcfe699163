/*
 * curve: the emitter's CURVE keys (ZeroMQ's CurveZMQ): the collector's
 * public key and the emitter's own key pair, read once from files by
 * vt_open() and set on the DEALER socket before it connects.
 *
 * Internal to libvitals. It owns the key material from the files to the
 * socket and wipes every copy (vte_curve_wipe); it must not touch the
 * socket (io.c sets the keys) nor put a key in a message.
 */
#ifndef VTE_CURVE_H
#define VTE_CURVE_H

#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

/* Binary keys (32 bytes each); on == 0: no CURVE (plaintext). */
typedef struct vte_curve {
	int     on;
	uint8_t server[32]; /* the collector's public key */
	uint8_t pub[32];    /* ours, derived from secret */
	uint8_t secret[32];
} vte_curve;

/*
 * Resolve the key files (NULL: $VITALS_SERVER_KEY_FILE, $VITALS_KEY_FILE;
 * an empty string counts as unset) and read them into *out. Neither set:
 * out->on = 0. Returns 0, or VT_EKEY with detail in err if only one is
 * set, a file cannot be read, or it holds no valid Z85 key.
 */
int vte_curve_load(const char *server_key_file, const char *key_file,
    vte_curve *out, char *err, size_t errlen);

/* Overwrite the keys (the secret must not linger in freed memory). */
void vte_curve_wipe(vte_curve *c);

#pragma GCC visibility pop

#endif /* VTE_CURVE_H */
