#include "collector/conns.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <zmq.h>

#include "common/clock.h"

#define MONITOR_EP "inproc://vitalsd-conns-monitor"
#define LOG_BURST 10
#define LOG_WINDOW_NS (10 * 1000000000ll)
#define SCAN_NS 1000000000ll /* idle connections are looked for */
#define FD_TABLE_MAX (1 << 20)

enum { FREE, OPEN, CLOSING, REFUSED };

/* Who is on the other end: an IPv4 or IPv6 address, or for a local
 * socket the peer process. */
typedef struct peer_key {
	uint8_t fam; /* 0: empty slot; 4, 6, 'u' (pid), '?' */
	uint8_t a[16];
} peer_key;

typedef struct peer {
	peer_key k;
	uint32_t n; /* connections counted */
} peer;

typedef struct slot {
	uint8_t  state;
	peer_key k;
	int64_t  since;
} slot;

struct conns {
	long max_total, max_per_peer, idle_ms;
	void (*on_event)(void *, unsigned, uint32_t, const char *);
	void *arg;

	void      *mon; /* the conns thread's, once started */
	pthread_t  thread;
	int        started;
	atomic_int stop;

	/* Indexed by descriptor; seen is written by the server thread. */
	int              nfd;
	slot            *fds;
	_Atomic int64_t *seen;
	_Atomic int64_t  resumed; /* -1: not reading */

	/* conns thread only. */
	peer   *peers; /* open addressing, power-of-two capacity */
	size_t  cap, npeers;
	int     maxfd;
	int64_t log_window;
	long    log_count;

	atomic_uint_fast64_t open, refused_total, refused_peer, idle_closed,
	    accept_failed;
};

void
conns_opts_init(conns_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->idle_ms = 120000;
}

/*
 * One line per limit hit, at most LOG_BURST per LOG_WINDOW_NS: a client
 * reconnecting in a loop (every 0.1 s) cannot fill the disk. The lines
 * left out are counted in the next window; the counters are exact.
 */
__attribute__((format(printf, 2, 3))) static void
log_limit(conns *c, const char *fmt, ...)
{
	int64_t w = now_mono_ns() / LOG_WINDOW_NS;
	va_list ap;

	if (w != c->log_window) {
		if (c->log_count > LOG_BURST)
			fprintf(stderr,
			    "vitalsd: %ld more connection limit lines not "
			    "shown\n",
			    c->log_count - LOG_BURST);
		c->log_window = w;
		c->log_count  = 0;
	}
	if (c->log_count++ >= LOG_BURST)
		return;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

static uint64_t
key_hash(const peer_key *k)
{
	uint64_t h = 1469598103934665603ull ^ k->fam;

	for (int i = 0; i < 16; i++)
		h = (h ^ k->a[i]) * 1099511628211ull;
	return h;
}

static int
key_eq(const peer_key *x, const peer_key *y)
{
	return x->fam == y->fam && memcmp(x->a, y->a, 16) == 0;
}

/* The slot of k in the peer table: its entry, or the empty slot where it
 * would go. */
static size_t
peer_find(const conns *c, const peer_key *k)
{
	size_t i = (size_t) key_hash(k) & (c->cap - 1);

	while (c->peers[i].k.fam != 0 && !key_eq(&c->peers[i].k, k))
		i = (i + 1) & (c->cap - 1);
	return i;
}

/* The entry of k, inserted with n = 0 if new; NULL when out of memory. */
static peer *
peer_get(conns *c, const peer_key *k)
{
	size_t i;

	if (2 * (c->npeers + 1) > c->cap) {
		size_t nc  = c->cap * 2;
		peer  *old = c->peers, *np = calloc(nc, sizeof(*np));

		if (np == NULL)
			return NULL;
		c->peers = np;
		c->cap   = nc;
		for (size_t j = 0; j < nc / 2; j++)
			if (old[j].k.fam != 0)
				c->peers[peer_find(c, &old[j].k)] = old[j];
		free(old);
	}
	i = peer_find(c, k);
	if (c->peers[i].k.fam == 0) {
		c->peers[i].k = *k;
		c->peers[i].n = 0;
		c->npeers++;
	}
	return &c->peers[i];
}

/* One connection of k fewer; the entry goes when none is left
 * (backward-shift deletion keeps the probe chains whole). */
static void
peer_put(conns *c, const peer_key *k)
{
	size_t i = peer_find(c, k), j;

	if (c->peers[i].k.fam == 0 || --c->peers[i].n > 0)
		return;
	c->npeers--;
	for (j = i;;) {
		size_t h;

		c->peers[i].k.fam = 0;
		for (;;) {
			j = (j + 1) & (c->cap - 1);
			if (c->peers[j].k.fam == 0)
				return;
			h = (size_t) key_hash(&c->peers[j].k) & (c->cap - 1);
			/* Move j back to i unless its home lies in (i, j]. */
			if (i <= j ? (h <= i || h > j) : (h <= i && h > j))
				break;
		}
		c->peers[i] = c->peers[j];
		i           = j;
	}
}

static void
peer_of(int fd, peer_key *k)
{
	struct sockaddr_storage ss;
	socklen_t               sl = sizeof(ss);

	memset(k, 0, sizeof(*k));
	k->fam = '?';
	if (getpeername(fd, (struct sockaddr *) &ss, &sl) != 0)
		return;
	if (ss.ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *) &ss;

		k->fam = 4;
		memcpy(k->a, &a->sin_addr, 4);
	} else if (ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *a
		    = (const struct sockaddr_in6 *) &ss;

		k->fam = 6;
		memcpy(k->a, &a->sin6_addr, 16);
	} else if (ss.ss_family == AF_UNIX) {
		struct ucred cr;
		socklen_t    cl = sizeof(cr);

		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0) {
			k->fam = 'u';
			memcpy(k->a, &cr.pid, sizeof(cr.pid));
		}
	}
}

static void
peer_str(const peer_key *k, char *out, size_t size)
{
	pid_t pid;

	if (k->fam == 4 || k->fam == 6) {
		if (inet_ntop(k->fam == 4 ? AF_INET : AF_INET6, k->a, out,
		        (socklen_t) size)
		    == NULL)
			snprintf(out, size, "an address");
	} else if (k->fam == 'u') {
		memcpy(&pid, k->a, sizeof(pid));
		snprintf(out, size, "process %ld", (long) pid);
	} else {
		snprintf(out, size, "an unknown peer");
	}
}

/* A connection came: count it, or shut it down past a cap. */
static void
accepted(conns *c, int fd)
{
	slot *s;
	peer *p;
	char  who[INET6_ADDRSTRLEN + 16];

	if (fd < 0 || fd >= c->nfd) {
		/* Beyond the limit we sized for (raised since): refuse. */
		shutdown(fd, SHUT_RDWR);
		atomic_fetch_add(&c->refused_total, 1);
		return;
	}
	s = &c->fds[fd];
	if (s->state == OPEN || s->state == CLOSING) {
		/* Its disconnection was not seen: count it gone. */
		peer_put(c, &s->k);
		atomic_fetch_sub(&c->open, 1);
	}
	peer_of(fd, &s->k);
	s->since = now_mono_ns();
	atomic_store_explicit(&c->seen[fd], s->since, memory_order_relaxed);
	if (fd > c->maxfd)
		c->maxfd = fd;
	p = atomic_load(&c->open) >= (uint64_t) c->max_total
	    ? NULL
	    : peer_get(c, &s->k);
	if (p == NULL) {
		s->state = REFUSED;
		shutdown(fd, SHUT_RDWR);
		atomic_fetch_add(&c->refused_total, 1);
		peer_str(&s->k, who, sizeof(who));
		log_limit(c,
		    "vitalsd: refused a connection from %s: %ld connections "
		    "open (--max-connections)\n",
		    who, c->max_total);
		return;
	}
	if (p->n >= (uint32_t) c->max_per_peer) {
		s->state = REFUSED;
		shutdown(fd, SHUT_RDWR);
		atomic_fetch_add(&c->refused_peer, 1);
		peer_str(&s->k, who, sizeof(who));
		log_limit(c,
		    "vitalsd: refused a connection from %s: %u connections "
		    "from there already (--max-connections-per-peer)\n",
		    who, p->n);
		return;
	}
	p->n++;
	s->state = OPEN;
	atomic_fetch_add(&c->open, 1);
}

static void
disconnected(conns *c, int fd)
{
	slot *s;

	if (fd < 0 || fd >= c->nfd)
		return;
	s = &c->fds[fd];
	if (s->state == OPEN || s->state == CLOSING) {
		peer_put(c, &s->k);
		atomic_fetch_sub(&c->open, 1);
	}
	s->state = FREE;
}

/* Close the connections silent for idle_ms, unless the server was not
 * reading meanwhile (then their messages wait in ZeroMQ's queues). */
static void
scan_idle(conns *c, int64_t now)
{
	int64_t resumed = atomic_load(&c->resumed);
	int64_t limit   = c->idle_ms * 1000000;
	char    who[INET6_ADDRSTRLEN + 16];

	if (c->idle_ms <= 0 || resumed < 0)
		return;
	for (int fd = 0; fd <= c->maxfd; fd++) {
		slot   *s = &c->fds[fd];
		int64_t last;

		if (s->state != OPEN)
			continue;
		last
		    = atomic_load_explicit(&c->seen[fd], memory_order_relaxed);
		if (last < resumed)
			last = resumed;
		if (now - last < limit)
			continue;
		s->state = CLOSING;
		shutdown(fd, SHUT_RDWR);
		atomic_fetch_add(&c->idle_closed, 1);
		peer_str(&s->k, who, sizeof(who));
		log_limit(c,
		    "vitalsd: closed a connection from %s: no message for "
		    "%ld ms (--idle-timeout-ms)\n",
		    who, c->idle_ms);
	}
}

/* One monitor event: a frame of event (u16) and value (u32), then the
 * endpoint. */
static void
read_event(conns *c)
{
	zmq_msg_t m;
	uint16_t  ev      = 0;
	uint32_t  val     = 0;
	char      ep[256] = "";

	zmq_msg_init(&m);
	if (zmq_msg_recv(&m, c->mon, ZMQ_DONTWAIT) < 0) {
		zmq_msg_close(&m);
		return;
	}
	if (zmq_msg_size(&m) >= 6) {
		memcpy(&ev, zmq_msg_data(&m), 2);
		memcpy(&val, (const char *) zmq_msg_data(&m) + 2, 4);
	}
	while (zmq_msg_more(&m)) {
		size_t n;

		zmq_msg_close(&m);
		zmq_msg_init(&m);
		if (zmq_msg_recv(&m, c->mon, 0) < 0)
			break;
		n = zmq_msg_size(&m) < sizeof(ep) - 1 ? zmq_msg_size(&m)
		                                      : sizeof(ep) - 1;
		memcpy(ep, zmq_msg_data(&m), n);
		ep[n] = 0;
	}
	zmq_msg_close(&m);
	if (ev == ZMQ_EVENT_ACCEPTED)
		accepted(c, (int) val);
	else if (ev == ZMQ_EVENT_DISCONNECTED)
		disconnected(c, (int) val);
	else if (ev == ZMQ_EVENT_ACCEPT_FAILED) {
		atomic_fetch_add(&c->accept_failed, 1);
		log_limit(c, "vitalsd: cannot accept a connection on %s: %s\n",
		    ep, strerror((int) val));
	} else if (c->on_event != NULL)
		c->on_event(c->arg, ev, val, ep);
}

static void *
conns_main(void *arg)
{
	conns  *c         = arg;
	int64_t last_scan = now_mono_ns();

	while (!atomic_load_explicit(&c->stop, memory_order_acquire)) {
		zmq_pollitem_t it = { c->mon, 0, ZMQ_POLLIN, 0 };
		int64_t        now;

		if (zmq_poll(&it, 1, 250) < 0) {
			if (zmq_errno() == ETERM)
				break;
			continue;
		}
		/* Drain: a burst of connections is judged before ZeroMQ
		 * accepts many more. */
		if (it.revents & ZMQ_POLLIN)
			for (int k = 0; k < 4096; k++) {
				int    ev;
				size_t el = sizeof(ev);

				read_event(c);
				if (zmq_getsockopt(
				        c->mon, ZMQ_EVENTS, &ev, &el)
				        != 0
				    || !(ev & ZMQ_POLLIN))
					break;
			}
		now = now_mono_ns();
		if (now - last_scan >= SCAN_NS) {
			last_scan = now;
			scan_idle(c, now);
		}
	}
	return NULL;
}

static void
conns_free(conns *c)
{
	if (c->mon != NULL)
		zmq_close(c->mon);
	free(c->fds);
	free(c->seen);
	free(c->peers);
	free(c);
}

int
conns_open(void *zctx, void *sock, const conns_opts *o, conns **out, char *err,
    size_t errlen)
{
	conns        *c = calloc(1, sizeof(*c));
	struct rlimit rl;
	long          nofile, avail;
	int           zero = 0, linger = 0, rc;
	sigset_t      all, old;

	*out = NULL;
	if (c == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	nofile = getrlimit(RLIMIT_NOFILE, &rl) == 0
	        && rl.rlim_cur != RLIM_INFINITY
	    ? (long) rl.rlim_cur
	    : FD_TABLE_MAX;
	if (nofile > FD_TABLE_MAX)
		nofile = FD_TABLE_MAX;
	avail = nofile > 2 * CONNS_FD_RESERVE ? nofile - CONNS_FD_RESERVE
	                                      : nofile / 2;
	c->max_total = o->max_total > 0 ? o->max_total : avail;
	if (c->max_total > avail) {
		fprintf(stderr,
		    "vitalsd: --max-connections %ld lowered to %ld: %ld "
		    "descriptors, %d kept for the store and hooks\n",
		    c->max_total, avail, nofile, CONNS_FD_RESERVE);
		c->max_total = avail;
	}
	c->max_per_peer
	    = o->max_per_peer > 0 ? o->max_per_peer : (c->max_total + 1) / 2;
	c->idle_ms  = o->idle_ms;
	c->on_event = o->on_event;
	c->arg      = o->arg;
	c->nfd      = (int) nofile;
	c->cap      = 1024;
	c->fds      = calloc((size_t) nofile, sizeof(*c->fds));
	c->seen     = calloc((size_t) nofile, sizeof(*c->seen));
	c->peers    = calloc(c->cap, sizeof(*c->peers));
	atomic_store(&c->resumed, now_mono_ns());
	if (c->fds == NULL || c->seen == NULL || c->peers == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	/* The receiving side unbounded: a dropped event would leave a
	 * connection counted forever. */
	if (zmq_socket_monitor(sock, MONITOR_EP,
	        ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED
	            | ZMQ_EVENT_ACCEPT_FAILED
	            | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL
	            | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL)
	        != 0
	    || (c->mon = zmq_socket(zctx, ZMQ_PAIR)) == NULL
	    || zmq_setsockopt(c->mon, ZMQ_RCVHWM, &zero, sizeof(zero)) != 0
	    || zmq_setsockopt(c->mon, ZMQ_LINGER, &linger, sizeof(linger)) != 0
	    || zmq_connect(c->mon, MONITOR_EP) != 0) {
		snprintf(err, errlen, "socket monitor: %s",
		    zmq_strerror(zmq_errno()));
		goto fail_mon;
	}
	/* Signals are for the main thread (its stop and reload flags). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&c->thread, NULL, conns_main, c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		snprintf(err, errlen, "connection thread: %s", strerror(rc));
		goto fail_mon;
	}
	pthread_setname_np(c->thread, "vitalsd-conns");
	c->started = 1;
	fprintf(stderr,
	    "vitalsd: up to %ld connections, %ld per peer, closed after "
	    "%ld ms without a message (%ld descriptors, %d kept for the "
	    "store and hooks)\n",
	    c->max_total, c->max_per_peer, c->idle_ms, nofile,
	    CONNS_FD_RESERVE);
	*out = c;
	return 0;
fail_mon:
	zmq_socket_monitor(sock, NULL, 0);
fail:
	conns_free(c);
	return -1;
}

void
conns_seen(conns *c, int fd, int64_t now)
{
	if (c != NULL && fd >= 0 && fd < c->nfd)
		atomic_store_explicit(&c->seen[fd], now, memory_order_relaxed);
}

void
conns_reading(conns *c, int reading, int64_t now)
{
	if (c == NULL)
		return;
	if (!reading)
		atomic_store(&c->resumed, -1);
	else if (atomic_load(&c->resumed) < 0)
		atomic_store(&c->resumed, now);
}

void
conns_get_stats(const conns *c, conns_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (c == NULL)
		return;
	out->open          = atomic_load(&c->open);
	out->refused_total = atomic_load(&c->refused_total);
	out->refused_peer  = atomic_load(&c->refused_peer);
	out->idle_closed   = atomic_load(&c->idle_closed);
	out->accept_failed = atomic_load(&c->accept_failed);
}

void
conns_close(conns *c)
{
	if (c == NULL)
		return;
	if (c->started) {
		atomic_store_explicit(&c->stop, 1, memory_order_release);
		pthread_join(c->thread, NULL);
	}
	conns_free(c);
}
