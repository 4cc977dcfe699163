/*
 * auth: who may send to the collector. With CURVE (ZeroMQ's CurveZMQ) the
 * ROUTER socket is a CURVE server with the collector's secret key, and a
 * ZAP handler (RFC 27, on inproc://zeromq.zap.01, on its own thread)
 * accepts only the client public keys of the --allow file and logs every
 * refused attempt with the peer's address and key. Without CURVE, only
 * loopback endpoints are allowed unless --insecure is given (checked by
 * auth_endpoint_is_local()).
 */
#ifndef COLLECTOR_AUTH_H
#define COLLECTOR_AUTH_H

#include <stddef.h>
#include <stdint.h>

typedef struct auth auth;

/*
 * Read the collector's secret key file and the allow file (one client
 * public key per line, Z85 as written by `vitals keygen`, optionally
 * followed by a label; blank lines and lines starting with '#' are
 * ignored) and bind the ZAP handler on zctx. Must be called before any
 * CURVE socket of zctx binds: without a ZAP handler ZeroMQ would accept
 * every client key. On failure returns -1 with detail in err and leaves
 * nothing open.
 */
int auth_open(void *zctx, const char *secret_file, const char *allow_file,
    auth **out, char *err, size_t errlen);

/*
 * Make sock (of zctx) a CURVE server under the ZAP handler and start the
 * handler's thread. Call once, before sock binds. Returns 0 or -1 with detail in
 * err (then auth_close() still releases everything).
 */
int auth_apply(auth *a, void *zctx, void *sock, char *err, size_t errlen);

/*
 * A monitor event of the CURVE socket (conns passes on the failed
 * handshakes): logged as refused keys are, under the same rate limit.
 * arg is the auth. Thread-safe.
 */
void auth_monitor_event(void *arg, unsigned ev, uint32_t value,
    const char *endpoint);

/* The collector's public key, Z85 (borrowed from a). */
const char *auth_public_key(const auth *a);

/* The number of client keys allowed (call before auth_apply()). */
size_t auth_allowed(const auth *a);

/*
 * Ask the ZAP thread to read the allow file again (SIGHUP); it does
 * within 100 ms and logs the outcome. A file that cannot be read or lists
 * no key leaves the keys in use. New keys apply to new connections; a
 * client whose key was removed keeps its connection until it reconnects.
 * Thread-safe.
 */
void auth_reload(auth *a);

/* Stop the ZAP thread, close its sockets and free a (before the context
 * is terminated; sock may be closed before or after). NULL is a no-op. */
void auth_close(auth *a);

/*
 * 1 if a ZeroMQ endpoint is reachable from this machine only: ipc://,
 * inproc://, tcp://127.x.x.x, tcp://localhost, tcp://[::1] (any port);
 * 0 for anything else (a wildcard or 0.0.0.0 address, an interface name,
 * other transports).
 */
int auth_endpoint_is_local(const char *endpoint);

#endif /* COLLECTOR_AUTH_H */
