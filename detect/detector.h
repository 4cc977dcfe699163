/*
 * detector: the interface between the engine and each detector, and the
 * engine objects detectors see. A detector keeps its state either per
 * series (run, metric, rank) or per group: one per (rule, run) or per
 * (rule, run, metric), with one slot per rank, for detectors that compare
 * or aggregate ranks (stall, straggler, restart).
 */
#ifndef DETECT_DETECTOR_H
#define DETECT_DETECTOR_H

#include <stdarg.h>

#include "detect/detect.h"
#include "detect/rules.h"
#include "detect/table.h"

typedef struct detect_run {
	uint64_t hash;
	char    *name;
	size_t   len;
	uint32_t refs;     /* series of this run */
	uint64_t max_step; /* of the current attempt */
	uint64_t adv;      /* samples that advanced max_step (the clock of
	                    * step-based holds) */
	uint32_t nranks, nended; /* ranks seen; of them, ended normally */
	uint64_t nseries;        /* series of this run (detect/budget.h) */
	int      over_budget;    /* its detect_budget alert was emitted */
	uint64_t watched; /* bit i: rule i (< 64) has a series of the run */
	/* A series of the run watched by a rule that others defer to (one
	 * with a `change` hook and an incident, not deferring), or NULL:
	 * what detect_lead_change reads, found without a walk. */
	struct detect_series *lead;
} detect_run;

typedef struct detect_rank {
	uint64_t    hash;
	detect_run *run;
	int32_t     rank;
	char       *host; /* NUL-terminated, "" if unknown */
	size_t      hostlen;
	uint32_t    refs;
	int         ended; /* closed normally (detect_end), not back since */
	struct detect_series *lead; /* as detect_run's, of this rank */
} detect_rank;

typedef struct detect_inst detect_inst;

typedef struct detect_series {
	uint64_t     hash;
	detect_run  *run;
	detect_rank *rk;
	char        *metric;
	size_t       mlen;
	uint64_t     last_step;
	int64_t      last_time;
	int          seen; /* last_step and last_time are valid */
	uint32_t     ninst;
	detect_inst *inst;
	/* detect/budget.h: the engine's list, least recently fed first,
	 * and the position in the engine's array of series. */
	struct detect_series *lru_prev, *lru_next;
	int64_t               fed_ns;
	size_t                idx;
} detect_series;

typedef struct detect_group {
	uint64_t           hash;
	const detect_rule *r;
	detect_run        *run;
	char              *metric; /* per-metric groups only */
	size_t             mlen;
	uint32_t           nslots, cap;
	size_t             slot_size;
	detect_rank      **slot_rank;
	unsigned char     *slots; /* nslots x kind->slot_size */
	void              *state; /* kind->state_size bytes */
	uint32_t           refs;  /* instances pointing here */
	int                dead;  /* rule gone: free when refs drop to 0 */
} detect_group;

struct detect_inst {
	const detect_rule *r;
	void              *st;   /* series scope: the state */
	detect_group      *g;    /* group scope (NULL until first feed) */
	uint32_t           slot; /* group scope: this series' rank slot */
};

/* What a detector is given when it is called. */
typedef struct detect_ctx {
	detect_engine       *e;
	const detect_rule   *r;
	const detect_series *s; /* NULL in tick */
	detect_emit_fn       emit;
	void                *ctx;
} detect_ctx;

enum detect_scope {
	DETECT_SCOPE_SERIES,
	DETECT_SCOPE_RUN,        /* one group per (rule, run) */
	DETECT_SCOPE_RUN_METRIC, /* one group per (rule, run, metric) */
};

typedef struct detect_kind {
	const char         *name;
	const detect_param *params;
	size_t              nparams;
	int                 severity; /* default */
	int                 scope;
	/* Bytes of state per series (or per group) and per rank slot of a
	 * group, which may depend on the rule's parameters. */
	size_t (*state_size)(const detect_rule *r);
	size_t (*slot_size)(const detect_rule *r);
	/* Optional: reject combinations of parameters (why: one line). */
	int (*validate)(const detect_rule *r, char *why, size_t whylen);
	/* Zeroed state or slot before these. */
	void (*init)(void *state, const detect_rule *r);
	void (*slot_init)(void *slot, const detect_rule *r);
	void (*feed)(detect_ctx *c, detect_inst *in, const detect_sample *s);
	/* The series' step went back (a restart); called before feed. */
	void (*rollback)(detect_ctx *c, detect_inst *in,
	    const detect_sample *s, uint64_t prev_step, int64_t prev_time);
	void (*tick)(detect_ctx *c, detect_group *g, int64_t now);
	/* Optional, ticking kinds only: the rank of slot i ended normally
	 * (detect_end). */
	void (*end)(detect_ctx *c, detect_group *g, uint32_t i, int64_t t);
	/* Optional, series scope: start loading the lines of state that
	 * the next feed touches (__builtin_prefetch only: no write, no
	 * call that can fail). The state's first 256 bytes are loaded
	 * already. */
	void (*prefetch)(const void *state);
	/* Optional, series scope: the relative change of the median of
	 * the series' last k samples from the median of the nb samples
	 * before them (0: up to a window of them), and in *noise the
	 * series' noise scale at that lag (a relative change between
	 * windows, or between short spans for a short nb); NaN when it
	 * holds too few samples. */
	double (*change)(
	    const void *state, uint32_t k, uint32_t nb, double *noise);
} detect_kind;

extern const detect_kind detect_kind_nonfinite, detect_kind_spike,
    detect_kind_drop, detect_kind_rise, detect_kind_stall,
    detect_kind_straggler, detect_kind_threshold, detect_kind_flatline,
    detect_kind_restart, detect_kind_hang, detect_kind_phase_straggler,
    detect_kind_nonfinite_origin;

static inline void *
detect_slot(const detect_group *g, uint32_t i)
{
	return g->slots + (size_t) i * g->slot_size;
}

/* The engine's clock: the latest detect_tick() time (0 before any). */
int64_t detect_engine_now(const detect_engine *e);

/* Where an alert comes from. */
typedef struct detect_origin {
	const char *run;
	size_t      runlen;
	int32_t     rank;
	const char *host;
	size_t      hostlen;
	const char *metric;
	size_t      mlen;
} detect_origin;

void detect_origin_series(detect_origin *o, const detect_series *s);
void detect_origin_rank(detect_origin *o, const detect_rank *rk);
void detect_origin_run(detect_origin *o, const detect_run *run);

/* Alert flags. */
enum {
	DETECT_EVENT = 1, /* over when reported: one record, state resolved,
	                   * runs the exec action like a firing alert */
	DETECT_CONFIRMED = 2, /* a deferring rule's finding that a rule it
	                       * defers to confirms (detect_lead_change):
	                       * paged as its own */
};

/*
 * Emit an alert of rule c->r (nothing if severity < 0, i.e. "off"). The
 * message is formatted from fmt; it is cut at 400 bytes.
 */
void detect_emit(detect_ctx *c, const detect_origin *o, const char *kind,
    int severity, int state, int flags, uint64_t step, int64_t time_ns,
    double value, double baseline, const char *fmt, ...)
    __attribute__((format(printf, 11, 12)));

/* Emit a series' alert: the origin is c->s. */
void detect_emit_series(detect_ctx *c, const char *kind, int severity,
    int state, int flags, const detect_sample *s, double value,
    double baseline, const char *fmt, ...)
    __attribute__((format(printf, 9, 10)));

/* A number for a message: 3 significant digits, "nan"/"inf" spelled. */
typedef struct detect_num {
	char s[32];
} detect_num;
detect_num detect_fmt(double v);
/* The metric name of c->s as a C string (cut at 200 bytes). */
typedef struct detect_name {
	char s[208];
} detect_name;
detect_name detect_name_of(const char *p, size_t len);

/*
 * For a finding of a deferring rule (`defer`) on series c->s: the
 * relative change of a series of the same run that a rule it defers to
 * watches (the same rank's if there is one: the first such series the
 * rank, else the run, brought; O(1), whatever the width of the engine)
 * over its last k samples against the nb before them (see
 * detect_kind.change), with that series' noise scale in *noise, its
 * metric in *metric, and in *up whether that rule looks for a rise (1)
 * or a drop (0). NaN when there is no such series or it holds too few
 * samples.
 */
double detect_lead_change(const detect_ctx *c, uint32_t k, uint32_t nb,
    double *noise, detect_name *metric, int *up);
/* Whether a declared phase (the NAME of a vitals/phase/NAME marker, n
 * bytes) is a wait for the other ranks: "collective", "barrier" or
 * either followed by "/..." (detect/phase.c). */
int detect_phase_waits(const char *name, size_t n);
/* n bytes of s and a NUL, malloc'ed (caller frees); NULL when out of
 * memory. */
char *detect_dupn(const char *s, size_t n);

#endif /* DETECT_DETECTOR_H */
