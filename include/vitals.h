/**
 * @file vitals.h
 * @brief vitals emitter: push training metrics to a vitalsd collector.
 *
 * One line in a trainer:
 *
 *	vt_log("loss", step, loss);
 *
 * uses a process-wide default emitter created on first use and configured
 * from the environment (VITALS_ENDPOINT, VITALS_RUN, RANK, ...). Programs
 * that want explicit options or several emitters use vt_open().
 *
 * The logging calls never block on the network and never allocate after
 * warm-up: a sample is copied into a bounded in-memory ring and a background
 * I/O thread batches samples, sends them over ZeroMQ and keeps every batch
 * until the collector acknowledges that it is committed to disk. When the
 * memory cap is reached new samples are dropped and counted; the count is
 * sent to the collector so the user sees it.
 *
 * All functions return 0 on success or a positive #vt_err code.
 */
#ifndef VITALS_H
#define VITALS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI is exactly this header: libvitals.so is built with
 * -fvisibility=hidden, and only the functions marked VT_API here are
 * exported from it (tests/it_abi.sh checks). */
#if defined(__GNUC__) || defined(__clang__)
#define VT_API __attribute__((visibility("default")))
#else
#define VT_API
#endif

#define VT_VERSION_MAJOR 0
#define VT_VERSION_MINOR 1
#define VT_VERSION_PATCH 0
/** Packed version: 0xMMmmpp. */
#define VT_VERSION_NUM                                                        \
	((VT_VERSION_MAJOR << 16) | (VT_VERSION_MINOR << 8) | VT_VERSION_PATCH)
#define VT_VERSION_STR "0.1.0"

/** Endpoint used when neither the options nor VITALS_ENDPOINT name one.
 * Loopback only: a collector listens beyond this machine only when asked. */
#define VT_DEFAULT_ENDPOINT "tcp://127.0.0.1:7466"

/** Longest metric name in bytes (UTF-8, without the terminating NUL). */
#define VT_NAME_MAX 255
/** Longest run name in bytes. */
#define VT_RUN_MAX 128

/**
 * Error codes. Append-only: codes are never renumbered or removed.
 */
typedef enum vt_err {
	VT_OK = 0,
	VT_EINVAL,     /**< an argument is invalid (NULL, out of range) */
	VT_ENOMEM,     /**< out of memory */
	VT_ENAME,      /**< metric or run name empty, too long, not UTF-8 or
	                  containing control characters */
	VT_EFULL,      /**< buffer full: the sample was dropped and counted */
	VT_ETIMEDOUT,  /**< a flush did not finish within its timeout */
	VT_ETRANSPORT, /**< the ZeroMQ transport failed (bad endpoint, ...) */
	VT_EFORKED, /**< handle created in a parent process, used in a child */
	VT_ETOOMANY, /**< too many distinct metric names for one emitter */
	VT_ETHREAD,  /**< the I/O thread could not be started */
	VT_ECLOSED,  /**< the emitter is shutting down */
	VT_EKEY      /**< a CURVE key file is missing, unreadable or holds
	                no Z85 key, or only one of the two is given */
} vt_err;

/**
 * An emitter: one connection to a collector with one identity (run, rank,
 * host, pid, incarnation).
 *
 * @note Thread rule: thread-safe. Any number of threads may call vt_emit()
 * on the same emitter at once. vt_close() must not race with other calls on
 * the same handle.
 * @note fork(): a handle belongs to the process that opened it. In a child,
 * calls on it return VT_EFORKED and vt_close() leaks it (its I/O thread and
 * ZeroMQ context exist only in the parent).
 */
typedef struct vt_emitter vt_emitter;

/**
 * Emitter options. Fill with vt_opts_init(), then change what you need.
 * Strings are borrowed: they are copied by vt_open() and need to live only
 * until it returns.
 */
typedef struct vt_opts {
	/** ZeroMQ endpoint of the collector. NULL: $VITALS_ENDPOINT, else
	 * #VT_DEFAULT_ENDPOINT. */
	const char *endpoint;
	/** Run name. NULL: $VITALS_RUN, else $TORCHELASTIC_RUN_ID, else
	 * slurm-$SLURM_JOB_ID, else "<command>-<YYYYmmdd-HHMMSS>" from the
	 * process start. */
	const char *run;
	/** Host name. NULL: gethostname(). */
	const char *host;
	/** Global rank, local rank, world size. -1: from $RANK, $LOCAL_RANK,
	 * $WORLD_SIZE, else $SLURM_PROCID, $SLURM_LOCALID, $SLURM_NTASKS,
	 * else 0, 0, 1. */
	int rank;
	int local_rank;
	int world_size;
	/** Cap on the memory held for samples not yet acknowledged by the
	 * collector (ring plus unacknowledged batches). Default 64 MiB;
	 * $VITALS_MAX_BUFFER (bytes, or with a K, M or G suffix) overrides
	 * the default. Values below 1 MiB are raised to 1 MiB. The ring of
	 * recent samples takes an eighth (a power of two of 32-byte slots,
	 * 4096 to 2^24 slots), batches awaiting acknowledgement the rest:
	 * with the default, 262144 samples in the ring and about 2.2 million
	 * in batches. */
	size_t max_buffer_bytes;
	/** Longest time a sample waits in the ring before it is sent.
	 * Default 50 ms. */
	unsigned flush_interval_ms;
	/** Longest time vt_close() (and process exit, for the default
	 * emitter) waits for unacknowledged samples. Default 1000 ms;
	 * $VITALS_CLOSE_TIMEOUT_MS overrides the default. */
	unsigned close_timeout_ms;
	/** CURVE (encryption and authentication with ZeroMQ's CurveZMQ):
	 * the file holding the collector's public key, as written by
	 * `vitals keygen` (PREFIX.pub of the collector's pair). NULL:
	 * $VITALS_SERVER_KEY_FILE; neither set (nor curve_key_file): plain
	 * text. */
	const char *curve_server_key_file;
	/** CURVE: the file holding this client's secret key (PREFIX.key of
	 * its pair; its public key, derived from it, must be listed in the
	 * collector's --allow file). NULL: $VITALS_KEY_FILE. Set both or
	 * neither. The files are read by vt_open(). */
	const char *curve_key_file;
} vt_opts;

/**
 * Counters of one emitter, all since it was opened.
 */
typedef struct vt_stats {
	uint64_t logged;   /**< samples accepted into the ring */
	uint64_t dropped;  /**< samples dropped because the buffer was full */
	uint64_t sent;     /**< samples sent at least once */
	uint64_t acked;    /**< samples the collector acknowledged as stored */
	uint64_t resent;   /**< batches sent again after no acknowledgement */
	uint64_t rejected; /**< samples the collector refused as malformed */
	uint64_t pending;  /**< samples held, not yet acknowledged */
} vt_stats;

/**
 * Fill @p opts with defaults, including those taken from the environment
 * ($VITALS_MAX_BUFFER, $VITALS_CLOSE_TIMEOUT_MS; a malformed value is
 * ignored). The other environment variables are read by vt_open().
 * @param[out] opts Options to initialise.
 */
VT_API void vt_opts_init(vt_opts *opts);

/**
 * Create an emitter and start its I/O thread. The collector need not be
 * running: samples are kept (within the cap) until it is.
 *
 * @param[in] opts Options, or NULL for all defaults.
 * @param[out] out The new emitter; caller frees with vt_close(). Set to
 *	NULL on failure.
 * @return 0, or VT_EINVAL (NULL @p out, a rank below -1, a world size of
 *	0 or below -1), VT_ENAME (run or host name invalid, whether from
 *	@p opts or the environment), VT_ENOMEM, VT_ETRANSPORT (endpoint not
 *	understood by ZeroMQ), VT_ETHREAD, VT_EKEY (a CURVE key file
 *	missing, unreadable or invalid, or only one of the two set).
 * @note A malformed rank variable in the environment (RANK=abc) is
 *	ignored and the next source is used.
 */
VT_API int vt_open(const vt_opts *opts, vt_emitter **out);

/**
 * vt_open(), continuing an earlier emitter instead of starting a new
 * one: the collector sees one emitter across processes (`vitals emit`
 * does this, one per run and rank). A separate call, not vt_opts fields,
 * so that vt_opts keeps its size and programs built against an older
 * vitals.h keep working with this library.
 *
 * @param[in] opts As for vt_open().
 * @param[in] incarnation The id of the emitter continued
 *	(vt_incarnation() of an earlier one); 0: a new random one, and
 *	then @p first_seq must be 0 or 1, as vt_open().
 * @param[in] first_seq Number of the first batch: above every batch
 *	number the continued emitter used, below 2^63; 0 means 1. The
 *	collector stores each (incarnation, seq) once and discards a reused
 *	one as a duplicate, so never let two emitters use one incarnation at
 *	once, nor reuse its numbers.
 * @param[out] out As for vt_open().
 * @return As vt_open(); also VT_EINVAL for a first_seq of 2^63 or more,
 *	or above 1 without an incarnation.
 */
VT_API int vt_open_continue(const vt_opts *opts, uint64_t incarnation,
    uint64_t first_seq, vt_emitter **out);

/**
 * Flush what is pending for at most the emitter's close timeout, stop the
 * I/O thread and free the emitter. Samples not acknowledged by then are
 * lost and were counted as pending. NULL is a no-op. Never waits longer
 * than the close timeout plus a few ms.
 */
VT_API void vt_close(vt_emitter *em);

/**
 * Record one sample, timestamped now (wall clock, ns). Never blocks on the
 * network and does no system call on the common path.
 *
 * @param[in] em The emitter.
 * @param[in] metric Metric name, borrowed for the call only.
 * @param[in] step Training step (the x axis).
 * @param[in] value Any double, NaN and infinities included.
 * @return 0; VT_EFULL if the buffer was full (sample dropped and counted);
 *	VT_ENAME, VT_ETOOMANY, VT_EFORKED, VT_EINVAL.
 */
VT_API int vt_emit(
    vt_emitter *em, const char *metric, uint64_t step, double value);

/**
 * Record one sample with an explicit wall time in ns since the epoch
 * (for replaying a log, or a trainer with its own clock).
 */
VT_API int vt_emit_at(vt_emitter *em, const char *metric, uint64_t step,
    int64_t time_ns, double value);

/** A phase marker's step that means "the step of the latest sample this
 * emitter recorded before it". */
#define VT_STEP_LATEST UINT64_MAX

/**
 * Phase marker: from now on this rank is in phase @p name ("data",
 * "forward", "backward", "collective", "optimizer", "checkpoint", "eval",
 * or a name of its own), leaving the phase it was in. Costs about as much
 * as vt_emit() (no system call): the marker is a sample of the reserved
 * metric "vitals/phase/NAME" with value 1 (docs/protocol.md). From the
 * markers the emitter's I/O thread derives, per step, the milliseconds
 * spent in each phase, sent as "phase_time/NAME" samples at that step
 * once a marker of a later step arrives.
 *
 * @param[in] em The emitter.
 * @param[in] name Phase name, borrowed for the call only; 1 to 242 bytes
 *	(the metric name must fit #VT_NAME_MAX).
 * @param[in] step The training step the rank is in, or #VT_STEP_LATEST.
 * @return As vt_emit(); VT_ENAME for an empty or too long name.
 * @note Phases are per emitter (per rank), not per thread: markers from
 *	several threads of one rank interleave in the order they are made.
 */
VT_API int vt_emit_phase(vt_emitter *em, const char *name, uint64_t step);

/**
 * Phase marker: this rank leaves phase @p name and is in no named phase
 * (value 0 of "vitals/phase/NAME"). Entering another phase with
 * vt_emit_phase() leaves the current one without this call.
 * @return As vt_emit_phase().
 */
VT_API int vt_emit_phase_end(vt_emitter *em, const char *name, uint64_t step);

/**
 * Wait until every sample recorded before the call, and the count of
 * samples dropped before the call, are acknowledged by the collector, or
 * @p timeout_ms passes. Samples the collector rejected as malformed count
 * as settled.
 * @return 0, or VT_ETIMEDOUT; VT_EINVAL (NULL), VT_EFORKED, VT_ECLOSED
 *	(the default emitter after the exit-time flush).
 */
VT_API int vt_flush(vt_emitter *em, unsigned timeout_ms);

/**
 * Say goodbye without closing: flush, then tell the collector that this
 * emitter ended normally (a batch flagged FINAL, docs/protocol.md), all
 * within timeout_ms. The collector then does not take its silence for a
 * stall; a run whose ranks all ended is finished. vt_close() and the
 * exit-time close of the default emitter do this themselves; call it
 * where a process ends without them (an os._exit()). Logging afterwards
 * is allowed and makes the emitter live again. Does only the flush for
 * an emitter opened in a fork()ed child (it does not speak for its rank)
 * or marked with vt_mark_failed().
 * @return 0, VT_ETIMEDOUT, VT_EINVAL, VT_EFORKED or VT_ECLOSED.
 */
VT_API int vt_end(vt_emitter *em, unsigned timeout_ms);

/**
 * Say that this process is ending because of an error (an unhandled
 * exception, a failed check): its emitters still send what they hold at
 * close, but not that they ended normally, so the collector flags the
 * silence. NULL marks every emitter of the process, the default one
 * included. Thread-safe and async-signal-safe (one atomic store).
 */
VT_API void vt_mark_failed(vt_emitter *em);

/**
 * Read the emitter's counters. Each is read atomically, but not all at the
 * same instant.
 * @param[in] em The emitter (NULL: all zero).
 * @param[out] out Counters.
 */
VT_API void vt_get_stats(const vt_emitter *em, vt_stats *out);

/**
 * The incarnation id of this emitter: random, unique per vt_open().
 */
VT_API uint64_t vt_incarnation(const vt_emitter *em);

/**
 * Detail on the last error of a call on @p em (calls that succeed do not
 * clear it).
 * @return A string borrowed from the handle (or static), valid until the
 *	next call on it.
 * @note When several threads use the handle, the message may describe
 *	another thread's error.
 */
VT_API const char *vt_errmsg(const vt_emitter *em);

/**
 * Record one sample on the process-wide default emitter, creating it on
 * first use from the environment. In a child after fork() a new default
 * emitter (new incarnation) is created on first use.
 *
 * The default emitter is flushed (bounded by its close timeout) when the
 * process exits normally or when vt_shutdown() is called. Samples logged
 * by other threads after the exit-time flush are dropped.
 * @return As vt_emit(); also what vt_open() returned if the default emitter
 *	could not be created (that failure is remembered, and returned without
 *	retrying, until vt_shutdown()); VT_ECLOSED during process exit.
 */
VT_API int vt_log(const char *metric, uint64_t step, double value);

/**
 * vt_emit_phase() on the process-wide default emitter (created on first
 * use, as by vt_log()):
 *
 *	vt_phase("forward", step);
 *
 * @return As vt_log().
 */
VT_API int vt_phase(const char *name, uint64_t step);

/**
 * vt_emit_phase_end() on the process-wide default emitter.
 * @return As vt_log().
 */
VT_API int vt_phase_end(const char *name, uint64_t step);

/**
 * The process-wide default emitter, created on first use.
 * @return Borrowed pointer valid until vt_shutdown() or exit; NULL if it
 *	could not be created.
 */
VT_API vt_emitter *vt_default(void);

/**
 * Flush and close the default emitter now (bounded by its close timeout).
 * A later vt_log() creates a new one.
 * @note Must not race with vt_log() or uses of vt_default()'s pointer on
 *	other threads (as vt_close() must not race with calls on its handle).
 */
VT_API void vt_shutdown(void);

/**
 * @return A static string describing @p code.
 */
VT_API const char *vt_strerror(int code);

/**
 * @return The library's version as #VT_VERSION_NUM.
 */
VT_API unsigned vt_version(void);

#ifdef __cplusplus
}
#endif
#endif /* VITALS_H */
