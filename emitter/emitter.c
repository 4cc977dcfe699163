/*
 * emitter: the public API of libvitals (include/vitals.h): the emitter
 * handle, the logging hot path, the process-wide default emitter and
 * fork() handling.
 *
 * Memory cap (vt_opts.max_buffer_bytes, at least 1 MiB): the ring gets an
 * eighth of it, rounded down to a power of two of 32-byte slots and kept
 * within [4096, 2^24] slots; staged and unacknowledged batches get the
 * rest. With the 64 MiB default that is a ring of 262144 samples (8 MiB)
 * and 56 MiB of batches (about 2.2 million samples at 26 bytes each).
 */
#include "vitals.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emitter/clock.h"
#include "emitter/curve.h"
#include "emitter/ident.h"
#include "emitter/io.h"
#include "emitter/names.h"
#include "emitter/phase.h"
#include "emitter/ring.h"
#include "wire/wire.h"

/* The public limits are the wire's: a name the API accepts is one the
 * collector accepts. include/vitals.h stays self-contained (it cannot
 * include wire.h), so the two spellings are checked here. */
_Static_assert(VT_NAME_MAX == WIRE_NAME_MAX, "metric name limit");
_Static_assert(VT_RUN_MAX == WIRE_RUN_MAX, "run name limit");

#define DEFAULT_MAX_BUFFER ((size_t) 64 << 20)
#define MIN_MAX_BUFFER ((size_t) 1 << 20)
#define DEFAULT_FLUSH_MS 50u
#define DEFAULT_CLOSE_MS 1000u

struct vt_emitter {
	/* Read by the hot path, written only by vt_open(). */
	unsigned  fork_gen;
	int       tsc;
	vte_names names;
	vte_ring  ring;

	vte_io     *io; /* NULL once stopped */
	vte_ident   ident;
	unsigned    close_timeout_ms;
	vt_stats    final;       /* I/O counters when the I/O thread stopped */
	atomic_int  failed;      /* vt_mark_failed(): no FINAL batch */
	vt_emitter *orphan_next; /* see vt_proc.orphans */

	/* Last error: the code is atomic so that the drop path can set it
	 * without a lock; detailed messages are written under err_mu. */
	_Alignas(64) atomic_int err_code;
	atomic_int      err_detail; /* errbuf describes err_code */
	pthread_mutex_t err_mu;
	char            errbuf[256];
};

/*
 * Process-wide state: the one mutable global of the emitter library, an
 * exception to the house rule. vt_log() needs a default emitter that any
 * thread reaches without a handle, and fork() handling needs a generation
 * that the atfork child handler can bump and every handle can compare.
 * Members are atomics (and a pthread_once_t), so the hot path reads them
 * without locks.
 */
static struct {
	_Atomic(vt_emitter *) dflt;     /* the default emitter, or NULL */
	atomic_int            dflt_err; /* its vt_open() failure, cached */
	atomic_uint           fork_gen; /* +1 in each child after fork() */
	atomic_int            exiting;  /* the exit-time flush has run */
	atomic_int            failed;   /* vt_mark_failed(NULL) */
	/* Default emitters of parent processes, forgotten in this child:
	 * never used or freed, only kept reachable so that leak checkers
	 * run on a child do not report them. */
	vt_emitter    *orphans;
	pthread_once_t atfork_once;
} vt_proc = { .atfork_once = PTHREAD_ONCE_INIT };

/* ---- options ----------------------------------------------------------- */

/* An unsigned environment value with an optional k, M or G suffix
 * (powers of 1024); 0 if unset or malformed. */
static unsigned long long
env_size(const char *name)
{
	const char        *v = getenv(name);
	char              *end;
	unsigned long long x, mul = 1;

	if (v == NULL || *v < '0' || *v > '9')
		return 0;
	errno = 0;
	x     = strtoull(v, &end, 10);
	if (errno != 0 || end == v)
		return 0;
	switch (*end) {
	case '\0':
		break;
	case 'k':
	case 'K':
		mul = 1ull << 10;
		end++;
		break;
	case 'm':
	case 'M':
		mul = 1ull << 20;
		end++;
		break;
	case 'g':
	case 'G':
		mul = 1ull << 30;
		end++;
		break;
	default:
		return 0;
	}
	if (*end != '\0' || x > ~0ull / mul)
		return 0;
	return x * mul;
}

void
vt_opts_init(vt_opts *o)
{
	unsigned long long v;

	if (o == NULL)
		return;
	memset(o, 0, sizeof(*o));
	o->endpoint          = NULL;
	o->run               = NULL;
	o->host              = NULL;
	o->rank              = -1;
	o->local_rank        = -1;
	o->world_size        = -1;
	o->max_buffer_bytes  = DEFAULT_MAX_BUFFER;
	o->flush_interval_ms = DEFAULT_FLUSH_MS;
	o->close_timeout_ms  = DEFAULT_CLOSE_MS;
	v                    = env_size("VITALS_MAX_BUFFER");
	if (v > 0 && v <= SIZE_MAX)
		o->max_buffer_bytes = (size_t) v;
	if (getenv("VITALS_CLOSE_TIMEOUT_MS") != NULL) {
		const char *s = getenv("VITALS_CLOSE_TIMEOUT_MS");
		char       *end;
		long        ms;

		errno = 0;
		ms    = strtol(s, &end, 10);
		if (errno == 0 && end != s && *end == '\0' && ms >= 0
		    && ms <= 3600000)
			o->close_timeout_ms = (unsigned) ms;
	}
}

/* Ring slots for a cap: an eighth of it, a power of two, within limits. */
static size_t
ring_slots(size_t cap)
{
	size_t want  = cap / 8 / sizeof(vte_ring_slot);
	size_t slots = VTE_RING_MIN_SLOTS;

	while (slots * 2 <= want && slots * 2 <= VTE_RING_MAX_SLOTS)
		slots *= 2;
	return slots;
}

/* ---- errors ------------------------------------------------------------ */

/* Record an error without a lock (drop path, fork check). */
static void
note_err(vt_emitter *em, int code)
{
	if (atomic_load_explicit(&em->err_code, memory_order_relaxed) != code
	    || atomic_load_explicit(&em->err_detail, memory_order_relaxed)) {
		atomic_store_explicit(
		    &em->err_detail, 0, memory_order_relaxed);
		atomic_store_explicit(
		    &em->err_code, code, memory_order_release);
	}
}

/* Record an error with a detailed message (rare paths). */
__attribute__((format(printf, 3, 4))) static void
note_errf(vt_emitter *em, int code, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&em->err_mu);
	va_start(ap, fmt);
	vsnprintf(em->errbuf, sizeof(em->errbuf), fmt, ap);
	va_end(ap);
	atomic_store_explicit(&em->err_detail, 1, memory_order_relaxed);
	atomic_store_explicit(&em->err_code, code, memory_order_release);
	pthread_mutex_unlock(&em->err_mu);
}

/* A name as a quoted, printable C-style string, cut at 60 bytes. */
static void
quote(char *out, size_t size, const char *s, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; i < len && i < 60 && o + 5 < size; i++) {
		unsigned char c = (unsigned char) s[i];

		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
			out[o++] = (char) c;
		else
			o += (size_t) snprintf(
			    out + o, size - o, "\\x%02x", c);
	}
	if (len > 60 && o + 4 < size) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = '\0';
}

const char *
vt_strerror(int code)
{
	switch (code) {
	case VT_OK:
		return "success";
	case VT_EINVAL:
		return "invalid argument";
	case VT_ENOMEM:
		return "out of memory";
	case VT_ENAME:
		return "invalid name (empty, too long, not UTF-8 or control "
		       "characters)";
	case VT_EFULL:
		return "buffer full: sample dropped and counted";
	case VT_ETIMEDOUT:
		return "flush timed out before everything was acknowledged";
	case VT_ETRANSPORT:
		return "ZeroMQ transport error";
	case VT_EFORKED:
		return "emitter created in a parent process, used in a child";
	case VT_ETOOMANY:
		return "too many distinct metric names for one emitter";
	case VT_ETHREAD:
		return "could not start the I/O thread";
	case VT_ECLOSED:
		return "emitter is shutting down";
	case VT_EKEY:
		return "CURVE key file missing, unreadable or invalid, or "
		       "only "
		       "one of VITALS_SERVER_KEY_FILE and VITALS_KEY_FILE set";
	default:
		return "unknown error code";
	}
}

unsigned
vt_version(void)
{
	return VT_VERSION_NUM;
}

const char *
vt_errmsg(const vt_emitter *em)
{
	int code;

	if (em == NULL)
		return "no emitter (NULL handle)";
	code = atomic_load_explicit(&em->err_code, memory_order_acquire);
	if (code == VT_OK)
		return "no error";
	if (atomic_load_explicit(&em->err_detail, memory_order_relaxed))
		return em->errbuf;
	return vt_strerror(code);
}

/* ---- open and close ---------------------------------------------------- */

static void
atfork_child(void)
{
	/* The parent's default emitter has no I/O thread here and its
	 * ZeroMQ context must not be touched: forget it. Only this thread
	 * exists in the child, so plain stores are safe. */
	vt_emitter *em = atomic_exchange_explicit(
	    &vt_proc.dflt, NULL, memory_order_relaxed);

	if (em != NULL) {
		em->orphan_next = vt_proc.orphans;
		vt_proc.orphans = em;
	}
	atomic_store_explicit(&vt_proc.dflt_err, 0, memory_order_relaxed);
	atomic_fetch_add_explicit(&vt_proc.fork_gen, 1, memory_order_relaxed);
}

static void
atfork_register(void)
{
	/* Can fail only with ENOMEM; then children are simply not detected. */
	(void) pthread_atfork(NULL, NULL, atfork_child);
}

static int
forked(const vt_emitter *em)
{
	return atomic_load_explicit(&vt_proc.fork_gen, memory_order_relaxed)
	    != em->fork_gen;
}

/*
 * Resolve the options, allocate the ring and the name table and start the
 * I/O thread. On failure releases everything and sets *out to NULL.
 */
int
vt_open(const vt_opts *opts, vt_emitter **out)
{
	return vt_open_continue(opts, 0, 0, out);
}

int
vt_open_continue(const vt_opts *opts, uint64_t incarnation, uint64_t first_seq,
    vt_emitter **out)
{
	vt_opts       d;
	vt_emitter   *em;
	vte_io_params p;
	vte_curve     curve;
	const char   *endpoint;
	char          err[256];
	size_t        cap, slots;
	int           rc;

	if (out == NULL)
		return VT_EINVAL;
	*out = NULL;
	if (opts == NULL) {
		vt_opts_init(&d);
		opts = &d;
	}
	pthread_once(&vt_proc.atfork_once, atfork_register);

	rc = VT_ENOMEM;
	em = aligned_alloc(64, sizeof(*em));
	if (em == NULL)
		goto fail;
	memset(em, 0, sizeof(*em));
	em->fork_gen
	    = atomic_load_explicit(&vt_proc.fork_gen, memory_order_relaxed);
	em->tsc              = vte_clock_tsc_usable();
	em->close_timeout_ms = opts->close_timeout_ms;
	atomic_init(&em->err_code, VT_OK);
	atomic_init(&em->err_detail, 0);
	atomic_init(&em->failed, 0);
	if (pthread_mutex_init(&em->err_mu, NULL) != 0)
		goto fail_em;
	rc = vte_ident_resolve(
	    opts, incarnation, first_seq, &em->ident, err, sizeof(err));
	if (rc != 0)
		goto fail_mu;
	rc = vte_curve_load(opts->curve_server_key_file, opts->curve_key_file,
	    &curve, err, sizeof(err));
	if (rc != 0)
		goto fail_mu;

	rc  = VT_ENOMEM;
	cap = opts->max_buffer_bytes;
	if (cap < MIN_MAX_BUFFER)
		cap = MIN_MAX_BUFFER;
	slots = ring_slots(cap);
	if (vte_ring_init(&em->ring, slots) != 0)
		goto fail_mu;
	if (vte_names_init(&em->names) != 0)
		goto fail_ring;

	endpoint = opts->endpoint;
	if (endpoint == NULL)
		endpoint = getenv("VITALS_ENDPOINT");
	if (endpoint == NULL || endpoint[0] == '\0')
		endpoint = VT_DEFAULT_ENDPOINT;
	p.endpoint          = endpoint;
	p.ring              = &em->ring;
	p.names             = &em->names;
	p.ident             = &em->ident;
	p.budget            = cap - VTE_RING_BYTES(slots);
	p.flush_interval_ms = opts->flush_interval_ms;
	p.tsc               = em->tsc;
	p.curve             = &curve;
	p.first_seq         = first_seq != 0 ? first_seq : 1;
	rc                  = vte_io_start(&p, &em->io, err, sizeof(err));
	if (rc != 0)
		goto fail_names;
	vte_curve_wipe(&curve);
	*out = em;
	return 0;
fail_names:
	vte_names_free(&em->names);
fail_ring:
	vte_ring_free(&em->ring);
fail_mu:
	vte_curve_wipe(&curve);
	pthread_mutex_destroy(&em->err_mu);
fail_em:
	free(em);
fail:
	return rc;
}

/*
 * Flush, then tell the collector this emitter ended normally, all within
 * timeout_ms. An emitter opened in a fork()ed child (a DataLoader worker)
 * does not speak for its rank, and one marked failed must be missed: both
 * only flush. Returns 0 or VT_ETIMEDOUT.
 */
static int
end(vt_emitter *em, unsigned timeout_ms)
{
	int64_t t0 = vte_clock_mono_ns(), spent_ms;
	int     rc = vte_io_flush(em->io, timeout_ms);

	if (em->fork_gen != 0 || atomic_load(&em->failed)
	    || atomic_load(&vt_proc.failed))
		return rc;
	spent_ms = (vte_clock_mono_ns() - t0) / 1000000;
	/* Out of time (the collector is away): the goodbye is asked for all
	 * the same, without waiting. It follows every sample, so it goes
	 * when the collector is back, or into the spool at close. */
	if (rc != 0 || spent_ms >= (int64_t) timeout_ms) {
		vte_io_finish(em->io, 0);
		return VT_ETIMEDOUT;
	}
	return vte_io_finish(em->io, timeout_ms - (unsigned) spent_ms);
}

/* End within the close timeout, stop the I/O thread and keep its final
 * counters. The memory stays valid: late vt_emit() calls fill the ring
 * and drop. */
static void
stop(vt_emitter *em)
{
	if (em->io == NULL)
		return;
	end(em, em->close_timeout_ms);
	vte_io_stats(em->io, &em->final);
	vte_io_stop(em->io);
	em->io = NULL;
}

void
vt_close(vt_emitter *em)
{
	if (em == NULL)
		return;
	/* In a child the I/O thread and the ZeroMQ context belong to the
	 * parent: touching them is unsafe, so the handle is leaked. */
	if (forked(em))
		return;
	stop(em);
	vte_names_free(&em->names);
	vte_ring_free(&em->ring);
	pthread_mutex_destroy(&em->err_mu);
	free(em);
}

uint64_t
vt_incarnation(const vt_emitter *em)
{
	return em != NULL ? em->ident.w.incarnation : 0;
}

void
vt_get_stats(const vt_emitter *em, vt_stats *out)
{
	uint64_t done;

	if (out == NULL)
		return;
	memset(out, 0, sizeof(*out));
	if (em == NULL)
		return;
	if (em->io != NULL)
		vte_io_stats(em->io, out);
	else
		*out = em->final;
	out->logged  = vte_ring_claimed(&em->ring);
	out->dropped = vte_ring_dropped(&em->ring);
	done         = out->acked + out->rejected;
	out->pending = out->logged > done ? out->logged - done : 0;
}

/* Whether em can talk to its I/O thread: 0, or the error (recorded). */
static int
usable(vt_emitter *em)
{
	if (em == NULL)
		return VT_EINVAL;
	if (forked(em)) {
		note_err(em, VT_EFORKED);
		return VT_EFORKED;
	}
	if (em->io == NULL) {
		note_err(em, VT_ECLOSED);
		return VT_ECLOSED;
	}
	return 0;
}

int
vt_end(vt_emitter *em, unsigned timeout_ms)
{
	int rc = usable(em);

	if (rc != 0)
		return rc;
	rc = end(em, timeout_ms);
	if (rc != 0)
		note_errf(
		    em, rc, "end: not acknowledged within %u ms", timeout_ms);
	return rc;
}

void
vt_mark_failed(vt_emitter *em)
{
	if (em == NULL)
		atomic_store(&vt_proc.failed, 1);
	else
		atomic_store(&em->failed, 1);
}

int
vt_flush(vt_emitter *em, unsigned timeout_ms)
{
	int rc = usable(em);

	if (rc != 0)
		return rc;
	rc = vte_io_flush(em->io, timeout_ms);
	if (rc != 0) {
		vt_stats st;

		vt_get_stats(em, &st);
		note_errf(em, rc,
		    "flush: %llu samples not acknowledged within %u ms",
		    (unsigned long long) st.pending, timeout_ms);
	}
	return rc;
}

/* ---- the hot path ------------------------------------------------------ */

/* First sight of a name: intern it under the names lock. */
static int
intern(vt_emitter *em, const char *metric, size_t len, uint64_t h, int64_t *id)
{
	uint32_t nid;
	char     q[256];
	int      rc = vte_names_intern(&em->names, metric, len, h, &nid);

	if (rc == 0) {
		*id = nid;
		return 0;
	}
	quote(q, sizeof(q), metric, len);
	if (rc == VT_ENAME)
		note_errf(em, rc,
		    "metric name \"%s\" is empty, over %d bytes, not UTF-8 "
		    "or has control characters",
		    q, VT_NAME_MAX);
	else if (rc == VT_ETOOMANY)
		note_errf(em, rc,
		    "metric name \"%s\": this emitter already has %u "
		    "distinct names",
		    q, VTE_NAMES_MAX);
	else
		note_errf(em, rc, "metric name \"%s\": out of memory", q);
	return rc;
}

/* A sample refused for its name: counted, and the count travels in the
 * batch headers (docs/protocol.md, WIRE_REFUSED) to `vitals emitters`. */
static void
refused(vt_emitter *em)
{
	atomic_fetch_add_explicit(&em->names.refused, 1, memory_order_relaxed);
}

/*
 * Common to vt_emit() and vt_emit_at(): one relaxed load for the fork
 * check, strnlen and a hash, a lock-free table probe, and a ring push.
 */
static inline int
emit(vt_emitter *em, const char *metric, uint64_t step, int64_t time,
    uint32_t flag, double value)
{
	size_t   len;
	uint64_t h;
	int64_t  id;

	if (__builtin_expect(forked(em), 0)) {
		note_err(em, VT_EFORKED);
		return VT_EFORKED;
	}
	len = strnlen(metric, VT_NAME_MAX + 1);
	if (__builtin_expect(len > VT_NAME_MAX, 0)) {
		refused(em);
		note_errf(em, VT_ENAME, "metric name longer than %d bytes",
		    VT_NAME_MAX);
		return VT_ENAME;
	}
	h  = vte_names_hash(metric, len);
	id = vte_names_find(&em->names, metric, len, h);
	if (__builtin_expect(id < 0, 0)) {
		int rc = intern(em, metric, len, h, &id);

		if (rc == VT_ENAME || rc == VT_ETOOMANY)
			refused(em);
		if (rc != 0)
			return rc;
	}
	if (__builtin_expect(vte_ring_push(&em->ring, (uint32_t) id | flag,
	                         step, time, value)
	            != 0,
	        0)) {
		note_err(em, VT_EFULL);
		return VT_EFULL;
	}
	return 0;
}

int
vt_emit(vt_emitter *em, const char *metric, uint64_t step, double value)
{
	if (em == NULL || metric == NULL)
		return VT_EINVAL;
	return emit(em, metric, step, (int64_t) vte_clock_ticks(em->tsc),
	    em->tsc ? VTE_RING_TICKS : 0, value);
}

int
vt_emit_at(vt_emitter *em, const char *metric, uint64_t step, int64_t time_ns,
    double value)
{
	if (em == NULL || metric == NULL)
		return VT_EINVAL;
	return emit(em, metric, step, time_ns, 0, value);
}

/* ---- phase markers ----------------------------------------------------- */

/*
 * A phase marker is a sample of vitals/phase/NAME (1: entered, 0: left),
 * flagged in its ring slot so that the I/O thread adds up the time spent
 * in each phase per step (emitter/phase.c). The name is built on the
 * stack: a copy of at most 255 bytes, no allocation, no system call.
 */
static int
emit_phase(vt_emitter *em, const char *name, uint64_t step, double value)
{
	char   buf[VT_NAME_MAX + 1];
	size_t len;

	if (em == NULL || name == NULL)
		return VT_EINVAL;
	len = strnlen(name, VT_NAME_MAX + 1);
	if (__builtin_expect(
	        len == 0 || len > VT_NAME_MAX - VTE_PHASE_PREFIX_LEN, 0)) {
		refused(em);
		note_errf(em, VT_ENAME,
		    "phase name is empty or longer than %d bytes",
		    VT_NAME_MAX - VTE_PHASE_PREFIX_LEN);
		return VT_ENAME;
	}
	memcpy(buf, VTE_PHASE_PREFIX, VTE_PHASE_PREFIX_LEN);
	memcpy(buf + VTE_PHASE_PREFIX_LEN, name, len);
	buf[VTE_PHASE_PREFIX_LEN + len] = '\0';
	return emit(em, buf, step, (int64_t) vte_clock_ticks(em->tsc),
	    (em->tsc ? VTE_RING_TICKS : 0) | VTE_RING_PHASE, value);
}

int
vt_emit_phase(vt_emitter *em, const char *name, uint64_t step)
{
	return emit_phase(em, name, step, 1.0);
}

int
vt_emit_phase_end(vt_emitter *em, const char *name, uint64_t step)
{
	return emit_phase(em, name, step, 0.0);
}

/* ---- the default emitter ----------------------------------------------- */

/*
 * The rare path of vt_log(): create the default emitter from the
 * environment. Two threads may race here; the loser closes its own and
 * uses the winner's. A failure is cached (so a misconfigured environment
 * costs one failed vt_open(), not one per sample) until vt_shutdown().
 */
static int
default_get(vt_emitter **out)
{
	vt_emitter *em = NULL, *expected = NULL;
	int         rc, zero             = 0;

	if (atomic_load_explicit(&vt_proc.exiting, memory_order_acquire))
		return VT_ECLOSED;
	rc = atomic_load_explicit(&vt_proc.dflt_err, memory_order_acquire);
	if (rc != 0)
		return rc;
	rc = vt_open(NULL, &em);
	if (rc != 0) {
		atomic_compare_exchange_strong(&vt_proc.dflt_err, &zero, rc);
		return rc;
	}
	if (!atomic_compare_exchange_strong_explicit(&vt_proc.dflt, &expected,
	        em, memory_order_acq_rel, memory_order_acquire)) {
		vt_close(em);
		em = expected;
	}
	*out = em;
	return 0;
}

/* The default emitter, created on first use: one atomic load on the hot
 * path. Returns 0, or what creating it returned. */
static inline int
default_emitter(vt_emitter **em)
{
	*em = atomic_load_explicit(&vt_proc.dflt, memory_order_acquire);
	if (__builtin_expect(*em == NULL, 0))
		return default_get(em);
	return 0;
}

int
vt_log(const char *metric, uint64_t step, double value)
{
	vt_emitter *em;
	int         rc = default_emitter(&em);

	if (rc != 0)
		return rc;
	return vt_emit(em, metric, step, value);
}

int
vt_phase(const char *name, uint64_t step)
{
	vt_emitter *em;
	int         rc = default_emitter(&em);

	if (rc != 0)
		return rc;
	return vt_emit_phase(em, name, step);
}

int
vt_phase_end(const char *name, uint64_t step)
{
	vt_emitter *em;
	int         rc = default_emitter(&em);

	if (rc != 0)
		return rc;
	return vt_emit_phase_end(em, name, step);
}

vt_emitter *
vt_default(void)
{
	vt_emitter *em;

	return default_emitter(&em) == 0 ? em : NULL;
}

void
vt_shutdown(void)
{
	vt_emitter *em = atomic_exchange(&vt_proc.dflt, NULL);

	atomic_store(&vt_proc.dflt_err, 0);
	vt_close(em);
}

/*
 * At normal process exit (return from main, exit()) and at dlclose(),
 * flush the default emitter within its close timeout and stop its thread.
 * A destructor rather than atexit(): the library must not register exit
 * handlers on the host's behalf, yet the one-line API must not lose the
 * last samples. The emitter's memory is not freed: other threads may still
 * be logging while the process exits; their samples go to the ring and are
 * dropped when it fills. Nothing runs after _exit() or a fatal signal.
 */
__attribute__((destructor)) static void
vt_proc_exit(void)
{
	vt_emitter *em;

	atomic_store(&vt_proc.exiting, 1);
	em = atomic_load(&vt_proc.dflt);
	if (em != NULL && !forked(em)) {
		stop(em);
	}
}
