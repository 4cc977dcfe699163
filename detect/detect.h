/*
 * detect: anomaly detection over training metrics. A pure library: no
 * sockets, no files, no clock, no globals, no printing. It is fed samples
 * and clock ticks, and reports alert transitions through a callback.
 *
 *	detect_rules  *rules;
 *	detect_engine *e;
 *	char           err[512];
 *
 *	detect_rules_parse(text, len, "rules.conf", &rules, err, sizeof err);
 *	detect_engine_new(rules, &e);
 *	detect_rules_free(rules);            (the engine keeps a reference)
 *	for each sample: detect_feed(e, &sample, on_alert, ctx);
 *	every ~200 ms:   detect_tick(e, now_ns, on_alert, ctx);
 *	on SIGHUP:       parse the file again; if it parses,
 *	                 detect_engine_reload(e, new_rules), then free it.
 *	detect_engine_free(e);
 *
 * The collector feeds live samples and ticks with the wall clock; `vitals
 * replay` ticks with each sample's own time before feeding it, so a rule
 * fires the same way live and offline. Alert times are derived from sample
 * times (a stall is stamped at its deadline, not at the tick that saw it),
 * so live and offline alerts carry the same fields.
 *
 * docs/rules.md describes the rules language, each detector and the
 * memory kept per series.
 */
#ifndef DETECT_DETECT_H
#define DETECT_DETECT_H

#include <stddef.h>
#include <stdint.h>

/* Error codes. Append only. */
enum detect_err {
	DETECT_OK = 0,
	DETECT_ENOMEM, /* out of memory */
	DETECT_EPARSE, /* the rules text is invalid (details in err) */
	DETECT_EINVAL, /* a NULL or out of range argument */
	DETECT_ELIMIT, /* a pattern hit PCRE2's match or depth limit */
};

/** @return a string literal naming the code. */
const char *detect_strerror(int code);

enum detect_severity {
	DETECT_INFO = 0,
	DETECT_WARNING,
	DETECT_CRITICAL,
};
/** @return "info", "warning" or "critical" (a literal). */
const char *detect_severity_name(int severity);

enum detect_state {
	DETECT_FIRING = 0,
	DETECT_RESOLVED,
};
/** @return "firing" or "resolved" (a literal). */
const char *detect_state_name(int state);

/* ---- rules ---------------------------------------------------------- */

/**
 * A compiled rule set. Immutable once made, and reference counted
 * (atomically): a handle may be shared by engines in several threads.
 */
typedef struct detect_rules detect_rules;

/**
 * Parse and compile a rules text (docs/rules.md).
 * @param[in] text         the text; need not be NUL-terminated.
 * @param[in] len          its length in bytes.
 * @param[in] source_name  names the input in messages ("rules.conf").
 * @param[out] out         the rule set; caller frees with
 *                         detect_rules_free. Set to NULL on failure.
 * @param[out] err         on DETECT_EPARSE, one line
 *                         "FILE:LINE:COL: expected ..., found ...".
 * @return 0, DETECT_EPARSE or DETECT_ENOMEM.
 */
int detect_rules_parse(const char *text, size_t len, const char *source_name,
    detect_rules **out, char *err, size_t errlen);

/** The built-in rule set (compiled from detect_rules_default_text()).
 * @return 0 or DETECT_ENOMEM. */
int detect_rules_default(detect_rules **out);

/** @return the text of the built-in rules (a literal, NUL-terminated). */
const char *detect_rules_default_text(void);

/** Drop the caller's reference; NULL is a no-op. */
void detect_rules_free(detect_rules *rules);

/** @return the number of rules. */
size_t detect_rules_count(const detect_rules *rules);

/** One rule as written, for listing (`vitals rules check`). Strings are
 * borrowed from the rule set, valid until it is freed. */
typedef struct detect_rule_info {
	const char *name;
	const char *detector; /* "spike", "stall", ... */
	const char *severity; /* its severity name */
	const char *metric;   /* pattern text; "" means any */
	const char *run, *host, *rank;
	const char *definition;       /* every parameter, defaults included,
	                               * on one line */
	const char *const *exec_argv; /* NULL if no exec action */
	size_t             exec_argc;
	uint32_t           exec_timeout_ms;
} detect_rule_info;

/** Fill *out for rule i (0 <= i < count). @return 0 or DETECT_EINVAL. */
int detect_rules_info(
    const detect_rules *rules, size_t i, detect_rule_info *out);

/**
 * Whether rule i applies to a series, with the same bounded matching the
 * engine uses. host may be NULL (matched as ""), rank -1 means none.
 * @return 1 (matches), 0 (does not), DETECT_ELIMIT if a pattern hit the
 * match limit (treated as no match by the engine), DETECT_ENOMEM or
 * DETECT_EINVAL (returned negated: -DETECT_ELIMIT, ...).
 */
int detect_rules_match(const detect_rules *rules, size_t i, const char *run,
    size_t runlen, const char *metric, size_t mlen, const char *host,
    size_t hostlen, int32_t rank);

/* ---- samples and alerts --------------------------------------------- */

/** One sample. Strings are borrowed for the duration of the call. */
typedef struct detect_sample {
	const char *run;
	size_t      runlen;
	const char *metric;
	size_t      mlen;
	const char *host; /* may be NULL (unknown) */
	size_t      hostlen;
	int32_t     rank; /* -1: none */
	uint64_t    step;
	int64_t     time_ns; /* wall time, ns since the Unix epoch (taken as
	                      * within [0, 2^62]: 1970 to 2116) */
	double value;        /* NaN and infinities allowed */
} detect_sample;

/**
 * An alert transition. Every string is borrowed for the duration of the
 * callback only; strings are NUL-terminated and their lengths given too.
 */
typedef struct detect_alert {
	const char *rule;
	const char *kind;     /* "spike", "blip", "divergence", "nonfinite",
	                       * "drop", "rise", "stall", "progress_stall",
	                       * "straggler", "threshold", "flatline",
	                       * "restart", "series_limit" */
	int         severity; /* enum detect_severity */
	int         state;    /* enum detect_state */
	const char *run;
	size_t      runlen;
	int32_t     rank; /* -1: the run as a whole */
	const char *host; /* "" if unknown or run-wide */
	size_t      hostlen;
	const char *metric; /* "" for run-wide alerts (stall, restart) */
	size_t      mlen;
	uint64_t    step;     /* the step the transition happened at */
	int64_t     time_ns;  /* sample time of that step (stalls: the
	                       * deadline that was missed) */
	double value;         /* the value that caused it (stalls: seconds
	                       * without progress) */
	double      baseline; /* what was expected; NaN if not applicable */
	const char *message;  /* one line for people */
	/* Exec action: set only when the rule has `exec` and this transition
	 * should run it (see exec_on in docs/rules.md). The collector runs
	 * argv (no shell) with detect_alert_json() on stdin and kills it
	 * after exec_timeout_ms. */
	const char *const *exec_argv; /* NULL-terminated; NULL: no action */
	size_t             exec_argc;
	uint32_t           exec_timeout_ms;
} detect_alert;

/** Receives alert transitions; must not call back into the engine. */
typedef void (*detect_emit_fn)(void *ctx, const detect_alert *a);

/**
 * Write an alert as one JSON object and a newline: rule, kind, severity,
 * state, run, rank, host, metric, step, time (seconds, 9 decimals),
 * value, baseline (null if NaN), message. Non-finite values are written
 * NaN, Infinity, -Infinity as Python's json writes them.
 * @return the length the line needs (without NUL), like snprintf; the
 * output is complete only if that is < len.
 */
size_t detect_alert_json(const detect_alert *a, char *buf, size_t len);

/*
 * Write the alert vitalsd stores when a run first reaches a series cap
 * (which: "per-run" or "total", cap its value), as the store keeps it: the
 * fields of detect_alert_json() without the newline, rule and kind
 * "series_limit", severity warning, state firing, rank -1, "value":null,
 * baseline null and a message naming the cap. time_ns is when it was
 * reached (wall clock, >= 0). Returns the length needed, like
 * detect_alert_json().
 */
size_t detect_alert_series_limit_json(const char *run, size_t runlen,
    const char *host, size_t hostlen, const char *metric, size_t mlen,
    uint64_t step, int64_t time_ns, const char *which, uint64_t cap, char *buf,
    size_t len);

/* The fields of a written alert, in the order they are written. */
enum detect_alert_field {
	DETECT_AF_RULE = 0,
	DETECT_AF_KIND,
	DETECT_AF_SEVERITY,
	DETECT_AF_STATE,
	DETECT_AF_RUN,
	DETECT_AF_RANK,
	DETECT_AF_HOST,
	DETECT_AF_METRIC,
	DETECT_AF_STEP,
	DETECT_AF_TIME,
	DETECT_AF_VALUE,
	DETECT_AF_BASELINE,
	DETECT_AF_MESSAGE,
	DETECT_AF_COUNT
};
/** @return "rule", "kind", ... "message" (a literal), NULL if out of
 * range: the JSON keys, and the columns of `vitals alerts --format csv`. */
const char *detect_alert_field_name(int field);

/* What a field of a read alert holds. */
enum detect_alert_type {
	DETECT_AT_ABSENT = 0, /* no such key */
	DETECT_AT_NULL,
	DETECT_AT_STRING,
	DETECT_AT_INT,   /* a number written without '.', 'e' or 'E' */
	DETECT_AT_REAL,  /* any other number, NaN, Infinity, -Infinity */
	DETECT_AT_OTHER, /* true, false, an object or an array */
};

/** One field of a read alert. */
typedef struct detect_alert_value {
	int         type; /* enum detect_alert_type */
	const char *str;  /* DETECT_AT_STRING: unescaped, NUL-terminated
	                   * (cut at a \u0000), owned by the record */
	int64_t  i;       /* DETECT_AT_INT, clamped to the int64 range */
	uint64_t u;       /* DETECT_AT_INT, clamped to [0, UINT64_MAX] */
	double   num;     /* DETECT_AT_INT or DETECT_AT_REAL; NaN otherwise */
} detect_alert_value;

/** An alert read back: each field as written. Free with
 * detect_alert_record_free(). */
typedef struct detect_alert_record {
	detect_alert_value f[DETECT_AF_COUNT]; /* by enum detect_alert_field */
	char              *mem;                /* the strings */
} detect_alert_record;

/**
 * Read an alert as detect_alert_json() writes it (and as stored, without
 * the newline): one JSON object whose fields are taken by name (a key
 * given twice: the last; other keys ignored; what follows the object is
 * ignored). NaN, Infinity and -Infinity are read as numbers.
 * @param[out] out  set on success; on failure every field is absent.
 * @param[out] err  on failure, "offset N: expected ..., found ...".
 * @return 0, DETECT_EPARSE (not a JSON object) or DETECT_ENOMEM.
 */
int detect_alert_parse(const char *json, size_t len, detect_alert_record *out,
    char *err, size_t errlen);

/** Release what detect_alert_parse() allocated; the record may be read
 * again only after another parse. NULL is a no-op. */
void detect_alert_record_free(detect_alert_record *r);

/* ---- engine --------------------------------------------------------- */

/**
 * Per-series detector state for a rule set.
 * @note One thread at a time. Memory is bounded by the series cap
 * (`max_series` in the rules, default 100,000).
 */
typedef struct detect_engine detect_engine;

/**
 * @param[in] rules  the engine takes its own reference (the count is the
 *                   only thing changed); the caller still frees its
 *                   handle.
 * @param[out] out   caller frees with detect_engine_free.
 * @return 0, DETECT_EINVAL or DETECT_ENOMEM.
 */
int detect_engine_new(detect_rules *rules, detect_engine **out);

/**
 * Switch to a new rule set. Per-series state of every rule whose name and
 * definition are unchanged is kept; other rules start fresh. Series are
 * matched again against the new rules. On failure the engine keeps its
 * old rules and state.
 * @param[in] rules  the engine takes its own reference.
 * @return 0 or DETECT_ENOMEM.
 */
int detect_engine_reload(detect_engine *e, detect_rules *rules);

/** NULL is a no-op. */
void detect_engine_free(detect_engine *e);

/**
 * Feed one sample. Alerts it causes are passed to emit (may be NULL)
 * before this returns. O(1) amortised; a new series costs one bounded
 * PCRE2 match per rule. A late sample, older than its series' last and
 * at a lower step (a resent batch behind newer ones, a spool sent
 * late), is counted (detect_stats.late) and not checked: it is no
 * restart, which goes back in steps at a later time.
 */
void detect_feed(
    detect_engine *e, const detect_sample *s, detect_emit_fn emit, void *ctx);

/**
 * Whether a sample at time t and step is late against the last one of
 * its series (last_t, last_step): older and at a lower step, as a batch
 * resent behind newer ones or a spool sent after the run went on. A
 * restart goes back in steps at a later time. detect_feed skips late
 * samples; /metrics keeps the newer value (collector/exposition.c).
 */
static inline int
detect_late(int64_t t, uint64_t step, int64_t last_t, uint64_t last_step)
{
	return t < last_t && step < last_step;
}

/**
 * Advance the clock (ns since the epoch) to now_ns and report stalls that
 * became due. A clock that goes backwards is ignored. Costs O(number of
 * (run, rank) pairs under stall rules).
 */
void detect_tick(
    detect_engine *e, int64_t now_ns, detect_emit_fn emit, void *ctx);

/**
 * An emitter closed normally: rank (-1: none) of run sends no more. Stall
 * rules stop waiting for that rank, and resolve its stall if one fires;
 * once every rank they know of the run has ended, the run is finished:
 * no run stall or progress stall, and those still firing are resolved.
 * A later sample of the rank (a restart) brings it back. time_ns is when
 * it ended. Costs O(groups under ticking rules).
 */
void detect_end(detect_engine *e, const char *run, size_t runlen, int32_t rank,
    int64_t time_ns, detect_emit_fn emit, void *ctx);

/**
 * The metric name of an end in samples written for `vitals replay`: a
 * sample of it (value 1, at the step the rank had reached) is
 * detect_end at its time, not a sample. `vitals export` writes one for
 * each emitter that closed normally, so that a replay of the export ends
 * ranks where vitalsd did.
 */
#define DETECT_END_METRIC "vitals/end"

/**
 * End of input (`vitals replay`): emit now the resolutions still held by
 * their rule's `hold` (docs/rules.md), stamped as they happened. Live,
 * they come when the hold runs out or the run finishes.
 */
void detect_flush(detect_engine *e, detect_emit_fn emit, void *ctx);

/** Counters since the engine was made. */
typedef struct detect_stats {
	uint64_t samples;        /* fed */
	uint64_t series;         /* tracked now */
	uint64_t series_dropped; /* samples of series beyond the cap */
	uint64_t match_limit;    /* pattern matches that hit the limit */
	uint64_t alerts;         /* transitions emitted */
	uint64_t series_evicted; /* idle series forgotten to make room */
	uint64_t budget_refused; /* samples of new series of runs over
	                          * their budget */
	uint64_t late; /* older than their series' last, at a lower step:
	                * not checked (detect_feed) */
} detect_stats;

void detect_engine_stats(const detect_engine *e, detect_stats *out);

/**
 * Series budgets (detect/budget.h): a run may have at most per_run series
 * (0: no cap; default 25,000); when `max_series` are tracked, a series
 * idle longer than idle_ns (< 0: never; default 15 min) by the tick clock
 * is forgotten, least recently fed first, to make room for a new one.
 */
void detect_engine_budget(detect_engine *e, uint64_t per_run, int64_t idle_ns);

#endif /* DETECT_DETECT_H */
