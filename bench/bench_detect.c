/*
 * bench_detect: the quality of the default rules on labelled synthetic
 * training runs, side by side with the simple detectors trainers use.
 *
 *	build/bench/bench_detect [--runs N] [--steps N] [--seed S] [-v]
 *	build/bench/bench_detect --oracle [--seed S]
 *
 * -v lists the events vitals missed and its false alerts; --oracle
 * prints the bound on finding drops on the generator's busy hosts (see
 * oracle_bound), which each part's report also turns into the ceilings
 * of its throughput drop recall (drop_ceiling);
 * BENCH_TRACE=RUN prints every alert of that run as JSON (all: of every
 * run).
 *
 * The generator makes runs that look like real ones: a power-law loss
 * with warm-up, lr decay and noise proportional to its level; a
 * heavy-tailed gradient norm that jumps before the loss does; a
 * throughput with periodic benign slow steps (evaluation, checkpoints)
 * and random single slow steps; an entropy that decays; several ranks,
 * each with its own speed and noise, each logging its own step time.
 * Into each run it injects, at random steps and sizes, labelled events:
 * sustained spikes, one-step blips (to be reported at info only),
 * divergences (the gradient norm first, often ending in NaN, then a
 * restart), NaNs, stalls of one rank and of the whole run, heartbeats
 * without progress, throughput drops of 3-20%, stragglers, entropy
 * collapse, and restarts with rollbacks.
 *
 * Samples are fed in time order to the engine, with a tick every 200 ms
 * of simulated time as vitalsd does, and to three baselines applied to
 * every metric in its bad direction:
 *	z>6/128    z-score over a rolling window of 128 (llm.c; OLMo)
 *	2x/p4      2x the rolling mean (128) for 4 steps (llm-foundry)
 *	10x early  10x the maximum of the first 100 samples (Megatron)
 * An alert detects an event when it is of a compatible kind, of the same
 * run (and rank, for rank events), and emitted between the event's start
 * and its end plus a grace period. Other alerts are false; they are
 * counted per 100,000 healthy steps (steps outside every event).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "detect/detect.h"

/* ---- random numbers --------------------------------------------------------
 */

typedef struct rng {
	uint64_t s;
} rng;

static uint64_t
rnext(rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double
unif(rng *r)
{
	return (double) (rnext(r) >> 11) * 0x1.0p-53;
}

static double
uni(rng *r, double a, double b)
{
	return a + (b - a) * unif(r);
}

static double
gauss(rng *r)
{
	double u = unif(r), v = unif(r);

	return sqrt(-2 * log(u + 1e-300)) * cos(2 * M_PI * v);
}

/* Student's t with 3 degrees of freedom, scaled to unit variance. */
static double
student3(rng *r)
{
	double c = 0;

	for (int i = 0; i < 3; i++) {
		double g = gauss(r);

		c += g * g;
	}
	return gauss(r) / sqrt(c / 3) / sqrt(3.0);
}

/* ---- events
 * ------------------------------------------------------------------ */

enum ev_kind {
	EV_SPIKE,
	EV_BLIP,
	EV_DIVERGENCE,
	EV_NAN,
	EV_STALL_RUN,
	EV_STALL_RANK,
	EV_PROGRESS,
	EV_DROP,
	EV_STRAGGLER,
	EV_COLLAPSE,
	EV_RESTART,
	EV_SLOWDIV,
	NEV
};
static const char *const ev_names[NEV]
    = { "spike", "blip (info only)", "divergence", "nan", "stall (run)",
	      "stall (rank)", "heartbeats, no progress", "throughput drop",
	      "straggler", "entropy collapse", "restart", "slow divergence" };

/* Metric families. */
enum {
	M_LOSS,
	M_GRAD,
	M_TPS,
	M_ENTROPY,
	M_MFU,
	M_STEPTIME,
	M_HEARTBEAT,
	NMET
};
static const char *const met_names[NMET] = { "loss", "grad_norm",
	"tokens_per_sec", "entropy", "mfu", "step_time", "heartbeat" };
static const int         met_up[NMET]    = { 1, 1, 0, 0, 0, 1, 1 };

#define NDET 4
static const char *const det_names[NDET]
    = { "vitals", "z>6/128", "2x/p4", "10x early" };

typedef struct event {
	int      kind, rank;
	uint64_t step0;
	int64_t  t0, t1; /* window in which a detection counts */
	int64_t  tref;   /* stalls: last sample before the stall */
	double   dt;     /* the run's usual step interval, s */
	double   busy;   /* the host's noise: sd of its log step time */
	double   size;
	int      hit[NDET];
	double   delay[NDET];    /* steps (stalls: seconds) */
	double   delay_iv[NDET]; /* stalls: in usual intervals */
	int      paged;          /* blips: a warning or critical alert */
	int      critical;       /* divergences: called critical (vitals) */
	int      warned; /* drops: found by a warning or critical alert */
	int      len;    /* drops: the steps it lasts */
} event;

typedef struct alert_rec {
	int      det, cat, sev, rank, metric, matched, rule, state;
	int      event, per_rank; /* an event; a per-rank incident */
	uint64_t step;
	int64_t  emit_ns;
} alert_rec;

/* Alert categories (vitals kinds; baselines: by metric family). */
enum {
	A_SPIKE,
	A_DIVERGENCE,
	A_BLIP,
	A_NONFINITE,
	A_STALL,
	A_PROGRESS,
	A_DROP,
	A_STRAGGLER,
	A_THRESHOLD,
	A_RESTART,
	A_FLATLINE,
	A_OTHER,
	NCAT
};
static const char *const cat_names[NCAT] = { "spike", "divergence", "blip",
	"nonfinite", "stall", "progress_stall", "drop/rise", "straggler",
	"threshold", "restart", "flatline", "other" };

/* Whether an alert of category c can detect an event of kind k. */
static int
compatible(int det, int c, int k)
{
	static const int table[NCAT][NEV] = {
		/*              sp bl dv na sr sk pr dr sg co re sd */
		[A_SPIKE]      = { 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1 },
		[A_DIVERGENCE] = { 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1 },
		[A_BLIP]       = { 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1 },
		[A_NONFINITE]  = { 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1 },
		[A_STALL]      = { 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 0 },
		[A_PROGRESS]   = { 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0 },
		[A_DROP]       = { 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0 },
		[A_STRAGGLER]  = { 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0 },
		[A_THRESHOLD]  = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0 },
		[A_RESTART]    = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0 },
	};

	(void) det;
	return table[c][k];
}

/* ---- baselines
 * --------------------------------------------------------------- */

#define BW 128

typedef struct base_series {
	double   win[BW];
	uint32_t n, head;
	double   sum, sumsq;
	int      active[3]; /* in an episode (one alert per episode) */
	int      patience;
	double   early;
	uint32_t nearly;
} base_series;

/* Feed one value; returns a bit per baseline that starts an alert. */
static int
base_feed(base_series *b, double v, int up)
{
	int    fire = 0, hit[3] = { 0, 0, 0 };
	double x = up ? v : -v;

	if (b->n >= 32) {
		double mean = b->sum / b->n;
		double var  = b->sumsq / b->n - mean * mean;
		double sd   = sqrt(var > 0 ? var : 0);

		hit[0] = sd > 0 && (x - (up ? mean : -mean)) / sd > 6;
		if (up ? v > 2 * mean : v < mean / 2)
			b->patience++;
		else
			b->patience = 0;
		hit[1] = b->patience >= 4;
	}
	if (b->nearly >= 100)
		hit[2] = up ? v > 10 * b->early : v < b->early / 10;
	for (int i = 0; i < 3; i++) {
		if (hit[i] && !b->active[i])
			fire |= 1 << i;
		b->active[i] = hit[i];
	}
	/* The windows take every value, as the trainers' do. */
	if (isfinite(v)) {
		if (b->n == BW) {
			double old = b->win[b->head];

			b->sum -= old;
			b->sumsq -= old * old;
		} else {
			b->n++;
		}
		b->win[b->head] = v;
		b->head         = (b->head + 1) % BW;
		b->sum += v;
		b->sumsq += v * v;
		if (b->nearly < 100) {
			b->early = b->nearly == 0 ? v
			    : up                  ? fmax(b->early, v)
			                          : fmin(b->early, v);
			b->nearly++;
		}
	}
	return fire;
}

/* ---- the simulated run
 * ---------------------------------------------------------- */

#define MAXRANK 8

typedef struct sim {
	rng            r;
	detect_engine *e;
	int            run_id;
	char           run[32];
	int            nranks;
	int64_t        clock; /* ns; ticks every 200 ms */
	int64_t        now;   /* time of the sample being fed */
	base_series    base[NMET][MAXRANK];
	alert_rec     *al;
	size_t         nal, cal;
	event         *ev;
	size_t         nev, cev;
	uint64_t       healthy_steps, samples;
	int            trace, verbose;
	int            healthy_run; /* no injected events */
	double         busy; /* the host's noise, as runcfg's (0: quiet) */
	/* Planned pauses (checkpoints, evaluations), to tell which false
	 * stall alerts fell in one, and in which occurrence of its kind. */
	struct pz {
		int64_t t0, t1;
		int nth; /* 1: first of a kind in it; 2: second; 3: later */
	} * pz;
	size_t npz, cpz;
} sim;

/* Rule names seen, for counting transitions per rule. */
#define MAXRULES 64
static char rule_names[MAXRULES][48];
static int  nrule_names;

static int
rule_id(const char *name)
{
	for (int i = 0; i < nrule_names; i++)
		if (strcmp(rule_names[i], name) == 0)
			return i;
	if (nrule_names == MAXRULES)
		return MAXRULES - 1;
	snprintf(rule_names[nrule_names], sizeof(rule_names[0]), "%s", name);
	return nrule_names++;
}

static void
add_alert(sim *S, const alert_rec *a)
{
	if (S->nal == S->cal) {
		S->cal = S->cal ? S->cal * 2 : 256;
		S->al  = realloc(S->al, S->cal * sizeof(*S->al));
		if (S->al == NULL)
			abort();
	}
	S->al[S->nal++] = *a;
}

static event *
add_event(sim *S)
{
	if (S->nev == S->cev) {
		S->cev = S->cev ? S->cev * 2 : 64;
		S->ev  = realloc(S->ev, S->cev * sizeof(*S->ev));
		if (S->ev == NULL)
			abort();
	}
	memset(&S->ev[S->nev], 0, sizeof(S->ev[0]));
	return &S->ev[S->nev++];
}

static int
cat_of(const char *kind)
{
	for (int c = 0; c < NCAT; c++)
		if (strcmp(kind, cat_names[c]) == 0)
			return c;
	if (strcmp(kind, "drop") == 0 || strcmp(kind, "rise") == 0)
		return A_DROP;
	return A_OTHER;
}

static int
metric_of(const char *m)
{
	for (int i = 0; i < NMET; i++)
		if (strcmp(m, met_names[i]) == 0)
			return i;
	return -1;
}

static void
on_alert(void *ctx, const detect_alert *a)
{
	sim      *S        = ctx;
	alert_rec r        = { 0 };
	int       is_event = strcmp(a->kind, "blip") == 0
	    || strcmp(a->kind, "series_limit") == 0;

	if (S->trace) {
		char line[1024];

		detect_alert_json(a, line, sizeof(line));
		printf("trace %s", line);
	}
	r.rule     = rule_id(a->rule);
	r.state    = a->state;
	r.rank     = a->rank;
	r.event    = is_event;
	r.per_rank = strcmp(a->kind, "straggler") == 0;
	if (a->state == DETECT_RESOLVED && !is_event) {
		/* Kept only to count transitions; not scored. */
		r.det = -1;
		add_alert(S, &r);
		return;
	}
	r.det = 0;
	r.cat = cat_of(a->kind);
	/* Entropy alerts are about collapse, whatever the detector. */
	if (strcmp(a->metric, "entropy") == 0
	    && (r.cat == A_DROP || r.cat == A_THRESHOLD))
		r.cat = A_THRESHOLD;
	r.sev     = a->severity;
	r.rank    = a->rank;
	r.metric  = metric_of(a->metric);
	r.step    = a->step;
	r.emit_ns = S->now > a->time_ns ? S->now : a->time_ns;
	add_alert(S, &r);
}

static void
advance_clock(sim *S, int64_t t)
{
	while (S->clock + 200000000ll <= t) {
		S->clock += 200000000ll;
		S->now = S->clock;
		detect_tick(S->e, S->clock, on_alert, S);
	}
}

static void
emit(sim *S, int metric, int rank, uint64_t step, int64_t t, double v)
{
	detect_sample s;
	char          host[16];
	int           fire;

	advance_clock(S, t);
	snprintf(host, sizeof(host), "node%d", rank / 4);
	s.run     = S->run;
	s.runlen  = strlen(S->run);
	s.metric  = met_names[metric];
	s.mlen    = strlen(s.metric);
	s.host    = host;
	s.hostlen = strlen(host);
	s.rank    = rank;
	s.step    = step;
	s.time_ns = t;
	s.value   = v;
	S->now    = t;
	S->samples++;
	detect_feed(S->e, &s, on_alert, S);
	if (metric == M_HEARTBEAT)
		return;
	fire = base_feed(&S->base[metric][rank], v, met_up[metric]);
	for (int d = 0; d < 3; d++) {
		alert_rec r = { 0 };

		if (!(fire & (1 << d)))
			continue;
		r.det     = d + 1;
		r.cat     = metric == M_LOSS || metric == M_GRAD ? A_SPIKE
		        : metric == M_ENTROPY                    ? A_THRESHOLD
		                                                 : A_DROP;
		r.sev     = DETECT_WARNING;
		r.rank    = rank;
		r.metric  = metric;
		r.step    = step;
		r.emit_ns = t;
		add_alert(S, &r);
	}
}

/* What is injected now, by iteration. */
typedef struct inj {
	int      kind, rank;
	uint64_t i0, i1; /* iterations */
	double   size, size2;
	int      lead, metric, ramp;
	event   *ev;
} inj;

typedef struct runcfg {
	int      nranks;
	uint64_t iters;
	double   dt;              /* s per step */
	double   l_inf, l_a, l_p; /* loss = l_inf + l_a (step + 50)^-p */
	double   l_noise, g0, g_noise, tps0, tps_noise, ent0, ent_tau;
	double   mfu0;
	int      slow_every; /* periodic benign slow steps */
	double   slow_factor;
	double   rank_off[MAXRANK], rank_noise[MAXRANK];
	/* Planned drift: step time and tokens per step follow a schedule
	 * (0 none; 1 step time rises over the run, as an attention window
	 * that grows; 2 a batch-size / sequence-length ramp: tokens per step
	 * and step time rise together between ramp0 and ramp1). */
	int      drift_kind;
	double   drift, tok_drift;
	uint64_t ramp0, ramp1;
	/* Checkpoints every ckpt_steps steps or every ckpt_s seconds,
	 * lasting ckpt_len s; evaluations every eval_steps, eval_len s;
	 * heartbeats (rank 0, every hb_s s) during both when hb_s > 0. */
	uint64_t ckpt_steps, eval_steps;
	double   ckpt_s, ckpt_len, eval_len, hb_s;
	double   load_s; /* data loading before step 1, with heartbeats */
	double   busy;   /* a busy shared host: sd of log step time, slow */
	int      heldout;
} runcfg;

/* Planned multipliers of step time and tokens per step at iteration i. */
static double
ramp_at(const runcfg *c, uint64_t i)
{
	if (c->drift_kind == 1)
		return (double) i / (double) c->iters;
	if (c->drift_kind == 2) {
		if (i <= c->ramp0)
			return 0;
		if (i >= c->ramp1)
			return 1;
		return (double) (i - c->ramp0)
		    / (double) (c->ramp1 - c->ramp0);
	}
	return 0;
}

static double
loss_at(const runcfg *c, double step)
{
	double warm = step < 200 ? 1 + 1.5 * (1 - step / 200) : 1;
	double lr   = 1 - 0.05 * step / (double) c->iters;

	return (c->l_inf + c->l_a * pow(step + 50, -c->l_p)) * warm * lr;
}

static void
plan(sim *S, const runcfg *c, inj *in, int *ninj)
{
	uint64_t i = 800 + (uint64_t) uni(&S->r, 0, 400);
	int      n = 0;

	while (n < 12) {
		inj *x = &in[n];

		memset(x, 0, sizeof(*x));
		x->kind = (int) (unif(&S->r) * NEV);
		x->i0   = i;
		switch (x->kind) {
		case EV_SPIKE:
			x->size  = uni(&S->r, 1.4, 4);
			x->size2 = uni(&S->r, 2, 12); /* recovery tau */
			x->i1    = i + (uint64_t) uni(&S->r, 3, 40);
			x->lead  = (int) uni(&S->r, 0, 3);
			x->ramp  = (int) uni(&S->r, 0, 4);
			break;
		case EV_BLIP:
			x->size = uni(&S->r, 1.5, 4);
			x->i1   = i + 1;
			break;
		case EV_DIVERGENCE:
			x->size = uni(&S->r, 1.3, 3); /* grad growth/step */
			x->size2
			    = uni(&S->r, 1.03, 1.2); /* loss growth/step */
			x->lead = (int) uni(&S->r, 2, 8);
			x->i1   = i + (uint64_t) uni(&S->r, 20, 60);
			break;
		case EV_NAN:
			x->metric = unif(&S->r) < 0.7 ? M_LOSS : M_GRAD;
			x->i1     = i + (uint64_t) uni(&S->r, 1, 20);
			break;
		case EV_STALL_RUN:
		case EV_PROGRESS:
		case EV_STALL_RANK:
			x->size = uni(&S->r, 10, 100); /* intervals */
			x->rank = (int) (unif(&S->r) * c->nranks);
			x->i1   = i + 1;
			break;
		case EV_DROP:
		case EV_STRAGGLER:
			x->size = x->kind == EV_DROP ? uni(&S->r, 0.03, 0.20)
			                             : uni(&S->r, 0.10, 0.40);
			x->rank = (int) (unif(&S->r) * c->nranks);
			x->i1   = i + (uint64_t) uni(&S->r, 1500, 3000);
			break;
		case EV_COLLAPSE:
			x->size = uni(&S->r, 20, 100); /* steps to collapse */
			x->i1   = i + (uint64_t) uni(&S->r, 500, 1500);
			break;
		case EV_RESTART:
			x->size  = uni(&S->r, 50, 1000); /* steps lost */
			x->size2 = uni(&S->r, 60, 600);  /* s down: 1-10 min */
			x->i1    = i + 1;
			break;
		case EV_SLOWDIV:
			/* The loss doubles every size steps, no jump; NaN at
			 * 16x. */
			x->size = uni(&S->r, 60, 250);
			x->i1   = i + (uint64_t) (4 * x->size);
			break;
		}
		if (x->i1 + 400 >= c->iters)
			break;
		n++;
		/* Events are apart: detectors settle, labels do not mix. */
		i = x->i1 + 700 + (uint64_t) uni(&S->r, 0, 1200);
		if ((x->kind == EV_DIVERGENCE || x->kind == EV_SLOWDIV)
		    && n < 12 && i + 400 < c->iters) {
			/* A divergence ends in a restart from a checkpoint. */
			inj *y = &in[n++];

			memset(y, 0, sizeof(*y));
			y->kind  = EV_RESTART;
			y->i0    = x->i1;
			y->i1    = x->i1 + 1;
			y->size  = uni(&S->r, 100, 1000);
			y->size2 = uni(&S->r, 60, 600);
		}
	}
	*ninj = n;
}

static void
simulate(sim *S, const runcfg *c)
{
	inj      in[16];
	int      ninj;
	double   t = 1.7e9 + S->run_id * 1e6, ent_scale = 1;
	uint64_t step   = 0, i;
	double   lnoise = 0;
	int64_t  last_t[MAXRANK];
	int      silent_rank  = -1;
	int64_t  silent_until = 0;

	double busy_x = 0, last_ckpt = 0;
	int    n_ckpt = 0, n_eval = 0;

	ninj = 0;
	if (!S->healthy_run)
		plan(S, c, in, &ninj);
	S->clock  = (int64_t) (t * 1e9);
	last_ckpt = t;
	/* Data loading before the first step: heartbeats at step 0. */
	for (double h = c->hb_s; c->load_s > 0 && h < c->load_s; h += c->hb_s)
		emit(S, M_HEARTBEAT, 0, 0, (int64_t) ((t + h) * 1e9), 1);
	t += c->load_s;
	for (int r = 0; r < MAXRANK; r++)
		last_t[r] = 0;
	for (i = 0; i < c->iters; i++, step++) {
		double  mloss = 1, mgrad = 1, mtps = 1, lag[MAXRANK] = { 0 };
		int     nan_metric = -1, in_event = 0;
		double  plan_st  = 1 + c->drift * ramp_at(c, i);
		double  plan_tok = 1 + c->tok_drift * ramp_at(c, i);
		double  dt, busy_m;
		int64_t ts;
		double  pause = 0;
		int     nck = 0, nev = 0; /* occurrence, if in this pause */

		busy_x = 0.98 * busy_x + c->busy * 0.199 * gauss(&S->r);
		busy_m = exp(busy_x);
		dt     = c->dt * plan_st * busy_m * exp(0.03 * gauss(&S->r));
		if (c->slow_every && step % (uint64_t) c->slow_every == 0
		    && step > 0)
			dt *= c->slow_factor;
		/* Planned pauses: checkpoints, evaluations. */
		if (i > 0
		    && ((c->ckpt_steps && i % c->ckpt_steps == 0)
		        || (c->ckpt_s > 0 && t - last_ckpt >= c->ckpt_s))) {
			pause += c->ckpt_len * exp(0.1 * gauss(&S->r));
			last_ckpt = t;
			nck       = ++n_ckpt;
		}
		if (i > 0 && c->eval_steps && i % c->eval_steps == 0) {
			pause += c->eval_len * exp(0.1 * gauss(&S->r));
			nev = ++n_eval;
		}
		if (pause > 0) {
			if (S->npz == S->cpz) {
				S->cpz = S->cpz ? 2 * S->cpz : 64;
				S->pz
				    = realloc(S->pz, S->cpz * sizeof(*S->pz));
				if (S->pz == NULL)
					abort();
			}
			S->pz[S->npz].t0 = (int64_t) (t * 1e9);
			S->pz[S->npz].t1
			    = (int64_t) ((t + pause + 2 * c->dt) * 1e9);
			S->pz[S->npz].nth = 3;
			if (nck > 0 && nck < S->pz[S->npz].nth)
				S->pz[S->npz].nth = nck;
			if (nev > 0 && nev < S->pz[S->npz].nth)
				S->pz[S->npz].nth = nev;
			S->npz++;
			for (double h = c->hb_s; c->hb_s > 0 && h < pause;
			     h += c->hb_s)
				emit(S, M_HEARTBEAT, 0, step ? step - 1 : 0,
				    (int64_t) ((t + h) * 1e9), 1);
			t += pause;
		}
		if (unif(&S->r) < 0.005)
			dt *= uni(&S->r, 1.2, 1.8); /* a random slow step */
		/* Events active at iteration i. */
		for (int k = 0; k < ninj; k++) {
			inj *x = &in[k];

			if (i < x->i0)
				continue;
			if (i == x->i0 && x->ev == NULL) {
				event *ev = add_event(S);

				x->ev     = ev;
				ev->kind  = x->kind;
				ev->rank  = -1;
				ev->step0 = step;
				ev->t0    = (int64_t) (t * 1e9);
				ev->dt    = c->dt;
				ev->busy  = c->busy;
				ev->size  = x->size;
			}
			if (i >= x->i1 && x->kind != EV_SPIKE
			    && x->kind != EV_COLLAPSE)
				continue;
			switch (x->kind) {
			case EV_SPIKE: {
				double d   = (double) (i - x->i0);
				double len = (double) (x->i1 - x->i0);
				double m   = i < x->i1 ? x->size
				                       : 1
                                        + (x->size - 1)
                                            * exp(-(d - len) / x->size2);

				/* Some spikes build up over a few steps. */
				if (d - x->lead < x->ramp)
					m = 1
					    + (m - 1) * (d - x->lead + 1)
					        / (x->ramp + 1);

				if (i >= x->i1 && m < 1.01)
					continue;
				if (d >= x->lead)
					mloss *= m;
				if (d < 3)
					mgrad *= 3 * x->size;
				in_event  = 1;
				x->ev->t1 = (int64_t) (t * 1e9);
				break;
			}
			case EV_BLIP:
				mloss *= x->size;
				if (unif(&S->r) < 0.5)
					mgrad *= 2 * x->size;
				in_event  = 1;
				x->ev->t1 = (int64_t) (t * 1e9);
				break;
			case EV_DIVERGENCE: {
				double d = (double) (i - x->i0);

				mgrad *= pow(x->size, d);
				if (d >= x->lead)
					mloss *= fmin(
					    pow(x->size2, d - x->lead),
					    12 / loss_at(c, (double) step));
				if (mgrad > 1e6)
					nan_metric = M_GRAD;
				in_event  = 1;
				x->ev->t1 = (int64_t) (t * 1e9);
				break;
			}
			case EV_SLOWDIV: {
				double d = (double) (i - x->i0);

				mloss *= exp(M_LN2 * d / x->size);
				mgrad *= exp(0.5 * M_LN2 * d / x->size);
				if (i + 1 == x->i1)
					nan_metric = M_LOSS;
				in_event  = 1;
				x->ev->t1 = (int64_t) (t * 1e9);
				break;
			}
			case EV_NAN:
				nan_metric = x->metric;
				in_event   = 1;
				x->ev->t1  = (int64_t) (t * 1e9);
				break;
			case EV_DROP:
				mtps *= 1 - x->size;
				for (int r = 0; r < c->nranks; r++)
					lag[r] += 1 / (1 - x->size) - 1;
				in_event   = 1;
				x->ev->t1  = (int64_t) (t * 1e9);
				x->ev->len = (int) (i - x->i0 + 1);
				break;
			case EV_STRAGGLER:
				mtps *= 1 / (1 + x->size);
				lag[x->rank] += x->size;
				x->ev->rank = x->rank;
				in_event    = 1;
				x->ev->t1   = (int64_t) (t * 1e9);
				break;
			case EV_COLLAPSE:
				if (i < x->i1) {
					ent_scale = fmax(0.03,
					    1
					        - (double) (i - x->i0)
					            / x->size);
					in_event  = 1;
					x->ev->t1 = (int64_t) (t * 1e9);
				} else {
					ent_scale = 1;
				}
				break;
			default:
				break;
			}
		}
		/* One-off events that take time: stalls, restarts. */
		for (int k = 0; k < ninj; k++) {
			inj   *x  = &in[k];
			event *ev = x->ev;

			if (i != x->i0 || ev == NULL)
				continue;
			if (x->kind == EV_STALL_RUN) {
				ev->tref = (int64_t) (t * 1e9);
				t += x->size * c->dt;
				ev->t1   = (int64_t) (t * 1e9);
				in_event = 1;
			} else if (x->kind == EV_PROGRESS) {
				double end = t + x->size * c->dt, h = t;

				ev->tref = (int64_t) (t * 1e9);
				while ((h += c->dt * uni(&S->r, 0.5, 1)) < end)
					for (int r = 0; r < c->nranks; r++)
						emit(S, M_HEARTBEAT, r,
						    step - 1,
						    (int64_t) (h * 1e9)
						        + r * 1000000,
						    1);
				t        = end;
				ev->t1   = (int64_t) (t * 1e9);
				in_event = 1;
			} else if (x->kind == EV_STALL_RANK) {
				silent_rank = x->rank;
				ev->rank    = x->rank;
				ev->tref    = last_t[x->rank];
				silent_until
				    = (int64_t) ((t + x->size * c->dt) * 1e9);
				ev->t1 = silent_until;
			} else if (x->kind == EV_RESTART) {
				uint64_t lost = (uint64_t) x->size;

				if (lost > step)
					lost = step;
				ev->t0 = (int64_t) (t * 1e9);
				t += x->size2;
				step -= lost;
				ev->step0 = step;
				ev->t1    = (int64_t) ((t + 60 * c->dt) * 1e9);
				ev->tref  = ev->t0;
				lnoise    = 0;
				in_event  = 1;
			}
		}
		if (silent_rank >= 0 && (int64_t) (t * 1e9) >= silent_until)
			silent_rank = -1;
		t += dt;
		ts = (int64_t) (t * 1e9);
		if (!in_event && silent_rank < 0)
			S->healthy_steps++;
		/* The metrics of this step, rank 0's first. */
		lnoise = 0.3 * lnoise + c->l_noise * gauss(&S->r);
		for (int r = 0; r < c->nranks; r++) {
			int64_t tr = ts + r * 3000000ll;
			double  st = c->dt * plan_st * busy_m
			    * (1 + c->rank_off[r] + lag[r])
			    * exp(c->rank_noise[r] * gauss(&S->r));

			if (r == silent_rank)
				continue;
			last_t[r] = tr;
			if (r == 0) {
				double l = loss_at(c, (double) step)
				    * exp(lnoise) * mloss;
				double g = c->g0
				    * (1 + 2 * exp(-(double) step / 300))
				    * exp(c->g_noise * student3(&S->r))
				    * mgrad;
				double tp = c->tps0 * plan_tok * mtps
				    * exp(c->tps_noise * gauss(&S->r)) * c->dt
				    / dt;
				double en = c->ent0
				    * (0.5
				        + 0.5 * exp(-(double) i / c->ent_tau))
				    * ent_scale * exp(0.02 * gauss(&S->r));

				emit(S, M_LOSS, 0, step, tr,
				    nan_metric == M_LOSS ? NAN : l);
				emit(S, M_GRAD, 0, step, tr,
				    nan_metric == M_GRAD ? NAN : g);
				emit(S, M_TPS, 0, step, tr, tp);
				emit(S, M_ENTROPY, 0, step, tr, en);
				emit(S, M_MFU, 0, step, tr,
				    c->mfu0 * tp / c->tps0);
			}
			emit(S, M_STEPTIME, r, step, tr, st);
		}
	}
}

/* ---- scoring
 * ------------------------------------------------------------------ */

typedef struct score {
	uint64_t events[NEV], hits[NDET][NEV], paged[NDET];
	double  *delays[NDET][NEV];
	double  *delays_iv[NDET][NEV];
	size_t   ndel[NDET][NEV];
	uint64_t tp[NDET][NCAT], fp[NDET][NCAT];
	uint64_t false_warn[NDET], false_crit[NDET], false_info[NDET];
	uint64_t healthy, samples;
	uint64_t by_size_n[3], by_size_hit[3]; /* drops <4%, 4-5%, >=5% */
	uint64_t by_size_warn[3]; /* found by a warning or critical alert */
	uint64_t div_crit, spike_crit;
	double  *div_crit_delay;
	uint64_t runs, healthy_runs, healthy_flagged;
	int      max_trans_healthy, max_fire_event, max_fire_incident;
	uint64_t drop5, drop5_fast, strag10, strag10_fast;
	/* Drops by the host's noise: a quiet host, then busy hosts whose
	 * drop is < 0.5, 0.5-1, >= 1 times the sd of their log step time:
	 * events, found, found within 100 steps. */
	uint64_t drop_n[4], drop_hit[4], drop_fast[4];
	/* Drops of 5% or more by the host's noise (a quiet host; busy
	 * hosts whose drop is < 1, 1-2, >= 2 times the sd of their log step
	 * time): events, found by a warning or critical alert. */
	uint64_t drop5_n[4], drop5_warn[4];
	/* The drops on busy hosts, for the oracle's ceiling; healthy busy
	 * runs, and those with a drop or rise alert of any severity. */
	struct busy_drop {
		double sd, size; /* the host's noise; the drop's */
		int    nranks;   /* the run's */
		int    len;      /* the drop's steps */
	} * busy_drop;
	size_t   nbusy_drop;
	uint64_t busy_healthy, busy_healthy_flagged;
	double   ceiling[2]; /* busy drops the oracle would find within
	                      * OR_LAG steps, while they last (drop_ceiling) */
	/* False stall alerts (info; warning+): in no planned pause, in the
	 * first, second or a later occurrence of its kind. */
	uint64_t pz_false[4][2];
	uint64_t slowdiv_crit, slowdiv_200;
	/* Per rule (vitals): false alerts by severity; healthy runs that
	 * the rule flagged (a warning or critical alert). */
	uint64_t rule_false[MAXRULES][3], rule_flagged[MAXRULES];
} score;

static void
push_delay(score *sc, int d, int k, double v, double iv)
{
	size_t n = sc->ndel[d][k];

	sc->delays[d][k] = realloc(sc->delays[d][k], (n + 1) * sizeof(double));
	sc->delays_iv[d][k]
	    = realloc(sc->delays_iv[d][k], (n + 1) * sizeof(double));
	if (sc->delays[d][k] == NULL || sc->delays_iv[d][k] == NULL)
		abort();
	sc->delays[d][k][n]    = v;
	sc->delays_iv[d][k][n] = iv;
	sc->ndel[d][k]++;
}

static int64_t
grace(const event *ev)
{
	double steps;

	switch (ev->kind) {
	case EV_DROP:
	case EV_STRAGGLER:
	case EV_COLLAPSE:
		steps = 300;
		break;
	case EV_STALL_RUN:
	case EV_STALL_RANK:
	case EV_PROGRESS:
		steps = 3;
		break;
	default:
		steps = 30;
	}
	return (int64_t) (steps * ev->dt * 1e9);
}

static int
is_stall(int k)
{
	return k == EV_STALL_RUN || k == EV_STALL_RANK || k == EV_PROGRESS;
}

/* Which occurrence of its kind the planned pause at time t was (1, 2,
 * 3: later), or 0 if t is in none. */
static int
pause_nth(const sim *S, int64_t t)
{
	for (size_t p = 0; p < S->npz; p++)
		if (t >= S->pz[p].t0 && t <= S->pz[p].t1 + 1000000000ll)
			return S->pz[p].nth;
	return 0;
}

static void
score_run(score *sc, sim *S)
{
	int *fires           = calloc(S->nev * MAXRULES + 1, sizeof(int));
	int  trans[MAXRULES] = { 0 }, flagged = 0, level_flag = 0;
	int  rflag[MAXRULES] = { 0 };

	if (fires == NULL)
		abort();
	sc->runs++;
	/* Firing records of one rule per incident: from its first firing
	 * record on the run (on a rank, for stragglers) to its resolved
	 * record. */
	{
		int open[MAXRULES][MAXRANK + 1];

		memset(open, 0, sizeof(open));
		for (size_t k = 0; k < S->nal; k++) {
			const alert_rec *a = &S->al[k];
			int              slot
			    = a->per_rank && a->rank >= 0 && a->rank < MAXRANK
			    ? a->rank + 1
			    : 0;

			if (a->det > 0 || a->event)
				continue;
			if (a->state == DETECT_RESOLVED) {
				open[a->rule][slot] = 0;
				continue;
			}
			if (++open[a->rule][slot] > sc->max_fire_incident)
				sc->max_fire_incident = open[a->rule][slot];
			if (S->verbose && open[a->rule][slot] == 4)
				printf("4 firing records of rule %s for one "
				       "incident: run %d step %" PRIu64 "\n",
				    rule_names[a->rule], S->run_id, a->step);
		}
	}
	for (size_t k = 0; k < S->nal; k++) {
		const alert_rec *a = &S->al[k];

		if (a->det > 0)
			continue;
		trans[a->rule]++;
		if (a->det == 0 && a->state == DETECT_FIRING
		    && a->sev >= DETECT_WARNING)
			flagged = rflag[a->rule] = 1;
		if (a->state == DETECT_FIRING && a->cat == A_DROP)
			level_flag = 1;
	}
	if (S->healthy_run && S->busy > 0) {
		sc->busy_healthy++;
		sc->busy_healthy_flagged += level_flag;
	}
	if (S->healthy_run) {
		sc->healthy_runs++;
		sc->healthy_flagged += flagged;
		for (int r = 0; r < MAXRULES; r++)
			sc->rule_flagged[r] += (uint64_t) rflag[r];
		for (int r = 0; r < MAXRULES; r++) {
			if (trans[r] > sc->max_trans_healthy)
				sc->max_trans_healthy = trans[r];
			if (S->verbose && trans[r] > 6)
				printf(
				    "healthy run %d: %d transitions of rule "
				    "%s\n",
				    S->run_id, trans[r], rule_names[r]);
		}
		if (S->verbose && flagged)
			printf("healthy run %d flagged\n", S->run_id);
	}
	for (size_t e = 0; e < S->nev; e++) {
		sc->events[S->ev[e].kind]++;
		if (S->ev[e].kind == EV_DROP)
			sc->by_size_n[(S->ev[e].size >= 0.04)
			    + (S->ev[e].size >= 0.05)]++;
	}
	for (size_t k = 0; k < S->nal; k++) {
		const alert_rec *a     = &S->al[k];
		int              match = 0;

		if (a->det < 0)
			continue;
		for (size_t e = 0; e < S->nev; e++) {
			event *ev = &S->ev[e];

			if (!compatible(a->det, a->cat, ev->kind)
			    || a->emit_ns < ev->t0
			    || a->emit_ns > ev->t1 + grace(ev))
				continue;
			/* Rank events need the rank named; a straggler also
			 * lowers the run's throughput, which any rank shows.
			 */
			if (ev->rank >= 0 && a->rank != ev->rank
			    && (ev->kind == EV_STALL_RANK
			        || (ev->kind == EV_STRAGGLER
			            && a->cat == A_STRAGGLER)))
				continue;
			match = 1;
			if (a->det == 0
			    && ++fires[e * MAXRULES + (size_t) a->rule]
			        > sc->max_fire_event)
				sc->max_fire_event
				    = fires[e * MAXRULES + (size_t) a->rule];
			if (a->det == 0 && S->verbose
			    && fires[e * MAXRULES + (size_t) a->rule] == 4)
				printf(
				    "4 firing records of rule %s for %s: run "
				    "%d step %" PRIu64 "\n",
				    rule_names[a->rule], ev_names[ev->kind],
				    S->run_id, ev->step0);
			if (ev->kind == EV_SLOWDIV && a->det == 0
			    && (a->cat == A_DIVERGENCE
			        || a->cat == A_NONFINITE)
			    && !ev->critical) {
				ev->critical = 1;
				sc->slowdiv_crit++;
				sc->slowdiv_200
				    += (double) a->step - (double) ev->step0
				    <= 200;
			}
			if (ev->kind == EV_SPIKE && a->det == 0
			    && a->cat == A_DIVERGENCE && !ev->critical) {
				ev->critical = 1;
				sc->spike_crit++;
				if (S->verbose)
					printf("spike called divergence: run "
					       "%d step %" PRIu64
					       " size %.2f\n",
					    S->run_id, ev->step0, ev->size);
			}
			if (ev->kind == EV_BLIP && a->sev >= DETECT_WARNING
			    && !ev->paged) {
				ev->paged = 1;
				sc->paged[a->det]++;
			}
			/* A blip is detected only by an info report;
			 * baselines have no info level. */
			if (ev->kind == EV_BLIP
			    && (a->det == 0 ? a->cat != A_BLIP : 1))
				continue;
			if (ev->kind == EV_DIVERGENCE && a->det == 0
			    && (a->cat == A_DIVERGENCE
			        || a->cat == A_NONFINITE)
			    && !ev->critical) {
				ev->critical = 1;
				sc->div_crit++;
				sc->div_crit_delay
				    = realloc(sc->div_crit_delay,
				        sc->div_crit * sizeof(double));
				if (sc->div_crit_delay == NULL)
					abort();
				sc->div_crit_delay[sc->div_crit - 1]
				    = (double) a->step - (double) ev->step0;
			}
			if (ev->kind == EV_RESTART && a->cat != A_RESTART)
				continue;
			/* An info note (a deferred step time) counts as found
			 * above; this counts what paged. */
			if (ev->kind == EV_DROP && a->det == 0
			    && a->sev >= DETECT_WARNING && !ev->warned) {
				ev->warned = 1;
				sc->by_size_warn[(ev->size >= 0.04)
				    + (ev->size >= 0.05)]++;
			}
			if (ev->hit[a->det])
				continue;
			ev->hit[a->det] = 1;
			ev->delay[a->det]
			    = (double) a->step - (double) ev->step0;
			sc->hits[a->det][ev->kind]++;
			if (ev->kind == EV_DROP && a->det == 0)
				sc->by_size_hit[(ev->size >= 0.04)
				    + (ev->size >= 0.05)]++;
			if (is_stall(ev->kind))
				push_delay(sc, a->det, ev->kind,
				    (double) (a->emit_ns - ev->tref) / 1e9,
				    (double) (a->emit_ns - ev->tref) / 1e9
				        / ev->dt);
			else
				push_delay(sc, a->det, ev->kind,
				    (double) a->step - (double) ev->step0, 0);
		}
		S->al[k].matched = match;
		if (match) {
			sc->tp[a->det][a->cat]++;
			continue;
		}
		sc->fp[a->det][a->cat]++;
		if (a->det == 0 && (a->cat == A_STALL || a->cat == A_PROGRESS))
			sc->pz_false[pause_nth(S, a->emit_ns)]
			            [a->sev >= DETECT_WARNING]++;
		if (a->det == 0 && a->sev >= 0 && a->sev <= DETECT_CRITICAL)
			sc->rule_false[a->rule][a->sev]++;
		if (a->sev == DETECT_CRITICAL)
			sc->false_crit[a->det]++;
		else if (a->sev == DETECT_WARNING)
			sc->false_warn[a->det]++;
		else
			sc->false_info[a->det]++;
	}
	for (size_t e = 0; e < S->nev; e++) {
		const event *ev = &S->ev[e];

		if (ev->kind == EV_DROP) {
			int b = ev->busy <= 0           ? 0
			    : ev->size < 0.5 * ev->busy ? 1
			    : ev->size < ev->busy       ? 2
			                                : 3;

			sc->drop_n[b]++;
			sc->drop_hit[b] += ev->hit[0] != 0;
			sc->drop_fast[b] += ev->hit[0] && ev->delay[0] <= 100;
		}
		if (ev->kind == EV_DROP && ev->busy > 0) {
			struct busy_drop *v = realloc(
			    sc->busy_drop, (sc->nbusy_drop + 1) * sizeof(*v));

			if (v == NULL)
				abort();
			sc->busy_drop = v;
			v[sc->nbusy_drop++] = (struct busy_drop) { ev->busy,
				ev->size, S->nranks, ev->len };
		}
		if (ev->kind == EV_DROP && ev->size >= 0.05) {
			int b = ev->busy <= 0         ? 0
			    : ev->size < ev->busy     ? 1
			    : ev->size < 2 * ev->busy ? 2
			                              : 3;

			sc->drop5_n[b]++;
			sc->drop5_warn[b] += ev->warned != 0;
			sc->drop5++;
			sc->drop5_fast += ev->hit[0] && ev->delay[0] <= 100;
		}
		if (ev->kind == EV_STRAGGLER && ev->size >= 0.10) {
			sc->strag10++;
			sc->strag10_fast += ev->hit[0] && ev->delay[0] <= 100;
		}
	}
	free(fires);
	sc->healthy += S->healthy_steps;
	sc->samples += S->samples;
}

static int
cmpd(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;

	return x < y ? -1 : x > y;
}

static double
median(double *v, size_t n)
{
	if (n == 0)
		return NAN;
	qsort(v, n, sizeof(*v), cmpd);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The alert category whose precision a row shows. */
static int
row_cat(int det, int k)
{
	static const int vit[NEV]  = { A_SPIKE, A_BLIP, A_DIVERGENCE,
		 A_NONFINITE, A_STALL, A_STALL, A_PROGRESS, A_DROP, A_STRAGGLER,
		 A_THRESHOLD, A_RESTART, A_DIVERGENCE };
	static const int base[NEV] = { A_SPIKE, -1, A_SPIKE, -1, -1, -1, -1,
		A_DROP, A_DROP, A_THRESHOLD, -1, A_SPIKE };

	return det == 0 ? vit[k] : base[k];
}

static void
print_table(score *sc)
{
	printf("%-24s %6s", "kind", "events");
	for (int d = 0; d < NDET; d++)
		printf(" | %-22s", det_names[d]);
	printf("\n%-24s %6s", "", "");
	for (int d = 0; d < NDET; d++)
		printf(" | %6s %6s %8s", "recall", "prec", "delay");
	printf("\n");
	for (int k = 0; k < NEV; k++) {
		printf("%-24s %6" PRIu64, ev_names[k], sc->events[k]);
		for (int d = 0; d < NDET; d++) {
			int    c    = row_cat(d, k);
			double rec  = sc->events[k]
			     ? (double) sc->hits[d][k] / (double) sc->events[k]
			     : NAN;
			double prec = c >= 0 && sc->tp[d][c] + sc->fp[d][c]
			    ? (double) sc->tp[d][c]
			        / (double) (sc->tp[d][c] + sc->fp[d][c])
			    : NAN;
			double dl   = median(sc->delays[d][k], sc->ndel[d][k]);
			char   ds[16], ps[16];

			if (isnan(prec))
				snprintf(ps, sizeof(ps), "-");
			else
				snprintf(ps, sizeof(ps), "%.3f", prec);
			if (isnan(dl))
				snprintf(ds, sizeof(ds), "-");
			else if (is_stall(k))
				snprintf(ds, sizeof(ds), "%.2fiv",
				    median(
				        sc->delays_iv[d][k], sc->ndel[d][k]));
			else
				snprintf(ds, sizeof(ds), "%.0f st", dl);
			printf(" | %6.3f %6s %8s", rec, ps, ds);
		}
		printf("\n");
	}
	printf("%-24s %6s", "blips paged (warn+)", "");
	for (int d = 0; d < NDET; d++)
		printf(" | %6.3f %15s",
		    sc->events[EV_BLIP]
		        ? (double) sc->paged[d] / (double) sc->events[EV_BLIP]
		        : NAN,
		    "");
	printf("\n%-24s %6s", "false /100k healthy st", "");
	for (int d = 0; d < NDET; d++)
		printf(" | %6.2f %15s",
		    1e5 * (double) (sc->false_warn[d] + sc->false_crit[d])
		        / (double) sc->healthy,
		    "");
	printf("\n%-24s %6s", "  of which critical", "");
	for (int d = 0; d < NDET; d++)
		printf(" | %6.2f %15s",
		    d == 0 ? 1e5 * (double) sc->false_crit[d]
		            / (double) sc->healthy
		           : NAN,
		    "");
	printf("\n");
	printf("\nvitals: throughput drops detected: 3-4%%: %" PRIu64
	       "/%" PRIu64 ", 4-5%%: %" PRIu64 "/%" PRIu64 ", 5-20%%: %" PRIu64
	       "/%" PRIu64 "\n",
	    sc->by_size_hit[0], sc->by_size_n[0], sc->by_size_hit[1],
	    sc->by_size_n[1], sc->by_size_hit[2], sc->by_size_n[2]);
	printf("vitals: throughput drops found by a warning or critical "
	       "alert: 3-4%%: %" PRIu64 "/%" PRIu64 ", 4-5%%: %" PRIu64
	       "/%" PRIu64 ", 5-20%%: %" PRIu64 "/%" PRIu64 "\n",
	    sc->by_size_warn[0], sc->by_size_n[0], sc->by_size_warn[1],
	    sc->by_size_n[1], sc->by_size_warn[2], sc->by_size_n[2]);
	printf("vitals: divergences called critical (divergence or "
	       "nonfinite): %" PRIu64 "/%" PRIu64 ", median %.0f steps after "
	       "onset (first alert: %.0f)\n",
	    sc->div_crit, sc->events[EV_DIVERGENCE],
	    median(sc->div_crit_delay, sc->div_crit),
	    median(sc->delays[0][EV_DIVERGENCE], sc->ndel[0][EV_DIVERGENCE]));
	printf(
	    "vitals: sustained spikes called divergence (critical): %" PRIu64
	    "/%" PRIu64 "\n",
	    sc->spike_crit, sc->events[EV_SPIKE]);
	printf("stall delays (median, vitals): run %.1f s, rank %.1f s, "
	       "heartbeats %.1f s\n",
	    median(sc->delays[0][EV_STALL_RUN], sc->ndel[0][EV_STALL_RUN]),
	    median(sc->delays[0][EV_STALL_RANK], sc->ndel[0][EV_STALL_RANK]),
	    median(sc->delays[0][EV_PROGRESS], sc->ndel[0][EV_PROGRESS]));
	printf("vitals false alerts by kind (warning+info):");
	for (int c = 0; c < NCAT; c++)
		if (sc->fp[0][c])
			printf(" %s %" PRIu64, cat_names[c], sc->fp[0][c]);
	printf("\nvitals false stall alerts (info/warning+): in the first "
	       "pause of its kind %" PRIu64 "/%" PRIu64 ", the second %" PRIu64
	       "/%" PRIu64 ", a later one %" PRIu64 "/%" PRIu64
	       ", in no planned pause %" PRIu64 "/%" PRIu64,
	    sc->pz_false[1][0], sc->pz_false[1][1], sc->pz_false[2][0],
	    sc->pz_false[2][1], sc->pz_false[3][0], sc->pz_false[3][1],
	    sc->pz_false[0][0], sc->pz_false[0][1]);
	printf("\nvitals false alerts by rule (info/warning/critical; "
	       "healthy runs flagged):");
	for (int r = 0; r < nrule_names; r++)
		if (sc->rule_false[r][0] + sc->rule_false[r][1]
		        + sc->rule_false[r][2]
		    || sc->rule_flagged[r])
			printf(" %s %" PRIu64 "/%" PRIu64 "/%" PRIu64
			       " (%" PRIu64 ")",
			    rule_names[r], sc->rule_false[r][0],
			    sc->rule_false[r][1], sc->rule_false[r][2],
			    sc->rule_flagged[r]);
	printf("\nhealthy steps %" PRIu64 ", samples %" PRIu64 "\n",
	    sc->healthy, sc->samples);
	printf("healthy runs with a warning or critical alert: %" PRIu64
	       "/%" PRIu64 " (%.1f%% quiet; target >= 99%%)\n",
	    sc->healthy_flagged, sc->healthy_runs,
	    sc->healthy_runs
	        ? 100.0 * (double) (sc->healthy_runs - sc->healthy_flagged)
	            / (double) sc->healthy_runs
	        : NAN);
	printf("most transitions of one rule on one healthy run: %d; most "
	       "firing records of one rule for one incident: %d (target <= "
	       "3), for one labelled event: %d\n",
	    sc->max_trans_healthy, sc->max_fire_incident, sc->max_fire_event);
	printf("drops >= 5%% found within 100 steps: %" PRIu64 "/%" PRIu64
	       "; stragglers >= 10%% named within 100 steps: %" PRIu64
	       "/%" PRIu64 "\n",
	    sc->drop5_fast, sc->drop5, sc->strag10_fast, sc->strag10);
	printf("throughput drops by the host's noise (found; within 100 "
	       "steps / drops): quiet host %" PRIu64 "; %" PRIu64 " / %" PRIu64
	       "; busy host, drop < 0.5 sd of its log step time %" PRIu64
	       "; %" PRIu64 " / %" PRIu64 ", 0.5-1 sd %" PRIu64 "; %" PRIu64
	       " / %" PRIu64 ", >= 1 sd %" PRIu64 "; %" PRIu64 " / %" PRIu64
	       "\n",
	    sc->drop_hit[0], sc->drop_fast[0], sc->drop_n[0], sc->drop_hit[1],
	    sc->drop_fast[1], sc->drop_n[1], sc->drop_hit[2], sc->drop_fast[2],
	    sc->drop_n[2], sc->drop_hit[3], sc->drop_fast[3], sc->drop_n[3]);
	printf("drops >= 5%% paged (warning or critical) by the host's noise: "
	       "quiet host %" PRIu64 "/%" PRIu64 "; busy host, drop < 1 sd "
	       "of its log step time %" PRIu64 "/%" PRIu64 ", 1-2 sd %" PRIu64
	       "/%" PRIu64 ", >= 2 sd %" PRIu64 "/%" PRIu64 "\n",
	    sc->drop5_warn[0], sc->drop5_n[0], sc->drop5_warn[1],
	    sc->drop5_n[1], sc->drop5_warn[2], sc->drop5_n[2],
	    sc->drop5_warn[3], sc->drop5_n[3]);
	printf("slow divergences called critical: %" PRIu64 "/%" PRIu64
	       ", within 200 steps of onset: %" PRIu64 "\n",
	    sc->slowdiv_crit, sc->events[EV_SLOWDIV], sc->slowdiv_200);
	if (sc->events[EV_DROP] > 0) {
		double quiet = (double) (sc->events[EV_DROP] - sc->nbusy_drop);

		printf(
		    "throughput drop recall ceiling: %.3f within 100 "
		    "steps, %.3f while the drops last (the oracle of "
		    "--oracle finds %.2f and %.2f of the %zu drops on busy "
		    "hosts, at its thresholds for 5%% of healthy busy runs; "
		    "the %.0f on quiet hosts counted found); vitals alerts "
		    "drop or rise (any severity) on %" PRIu64 "/%" PRIu64
		    " healthy busy runs\n",
		    (sc->ceiling[0] + quiet) / (double) sc->events[EV_DROP],
		    (sc->ceiling[1] + quiet) / (double) sc->events[EV_DROP],
		    sc->ceiling[0], sc->ceiling[1], sc->nbusy_drop, quiet,
		    sc->busy_healthy_flagged, sc->busy_healthy);
	}
}

/* ---- the busy host's bound
 * ------------------------------------------------------ */

#define OR_STEPS 6000
#define OR_LAG 100      /* the steps for a drop of 5% */
#define OR_LONG 3000    /* the longest drop the generator makes */
#define OR_GRID 25      /* beyond OR_LAG, every 25th step is scored */
#define OR_MEAN 128     /* steps before a change that its mean needs */
#define OR_HEALTHY 2000 /* healthy busy runs that set its threshold */

/* One run of the oracle: a busy host, its drop, and where it scores. */
typedef struct or_case {
	double sd;       /* the host's: sd of its log step time */
	int    nranks;   /* the run's */
	int    all;      /* the mean of all ranks (1), or rank 0 alone */
	double d;        /* the drop's log size (0: none) */
	int    t0, t1;   /* its steps [t0, t1) */
	int    from, to; /* the steps scored */
	int    horizon;  /* at most this many steps after a change */
} or_case;

/*
 * One busy host as the generator makes it: every rank's log step time is
 * the host's AR(1) level (coefficient 0.98, innovation 0.199 sd) plus
 * the rank's own white noise (0.5 to 4%), plus the drop. The oracle
 * knows the model but not the host's mean: it averages the ranks' log
 * step times (all of them, or rank 0 only) and whitens the mean by the
 * known coefficient (e(t) = y(t) - 0.98 y(t-1): the host's new change
 * plus noise, plus 2% of its mean, which it estimates from the e before
 * a change). It scores a change at step k seen at t (at most `horizon`
 * steps later) with the matched filter: e(k) plus 2% of each e after it
 * (the host's pull back to its mean, which a lasting drop does not
 * follow), each less the mean's share, over its standard deviation (the
 * estimate's included). The largest score over steps [from, to) is
 * returned; beyond OR_LAG, every OR_GRID-th step is scored (a change
 * that lasted that long moves little from one step to the next).
 */
static double
oracle_run(rng *r, const or_case *c)
{
	double  rn[MAXRANK] = { 0 }, x = 0, yp = 0, w2 = 0, se2, best = -1e9;
	double *e    = malloc(OR_STEPS * sizeof(double));
	double *p    = malloc((OR_STEPS + 1) * sizeof(double)); /* sums */
	int     n    = c->all ? c->nranks : 1;
	int     grid = c->horizon > OR_LAG ? OR_GRID : 1;

	if (e == NULL || p == NULL)
		abort();
	for (int k = 0; k < c->nranks; k++)
		rn[k] = uni(r, 0.005, 0.04);
	for (int k = 0; k < n; k++)
		w2 += rn[k] * rn[k] / ((double) n * n);
	se2 = pow(0.199 * c->sd, 2) + (1 + 0.98 * 0.98) * w2;
	for (int i = 0; i < 500; i++)
		x = 0.98 * x + 0.199 * c->sd * gauss(r);
	p[0] = 0;
	for (int t = 0; t < OR_STEPS; t++) {
		double y = 0;

		x = 0.98 * x + 0.199 * c->sd * gauss(r);
		for (int k = 0; k < c->nranks; k++) {
			double v = x + (t >= c->t0 && t < c->t1 ? c->d : 0)
			    + rn[k] * gauss(r);

			if (k < n)
				y += v / n;
		}
		e[t]     = t ? y - 0.98 * yp : 0;
		yp       = y;
		p[t + 1] = p[t] + e[t];
	}
	for (int t = c->from; t < c->to; t += grid)
		for (int k = t; k >= OR_MEAN && k >= t - c->horizon; k--) {
			double m = p[k] / (k - 1), j = t - k; /* e[1, k) */
			double sc
			    = (e[k] - m + 0.02 * (p[t + 1] - p[k + 1] - j * m))
			    / sqrt(se2
			        * (1 + 0.0004 * j
			            + pow(1 + 0.02 * j, 2) / (k - 1)));

			if (sc > best)
				best = sc;
		}
	free(e);
	free(p);
	return best;
}

/*
 * The oracle's threshold at a horizon: the score that 5% of OR_HEALTHY
 * healthy busy runs of OR_STEPS steps pass (hosts and ranks drawn as
 * the generator draws them).
 */
static double
oracle_threshold(rng *r, int all, int horizon)
{
	static double h[OR_HEALTHY];

	for (int i = 0; i < OR_HEALTHY; i++) {
		or_case c = { .sd = uni(r, 0.05, 0.25),
			.nranks   = unif(r) < 0.5 ? 4 : 8,
			.all      = all,
			.from     = OR_MEAN,
			.to       = OR_STEPS,
			.horizon  = horizon };

		h[i] = oracle_run(r, &c);
	}
	qsort(h, OR_HEALTHY, sizeof(*h), cmpd);
	return h[(int) (0.95 * OR_HEALTHY)];
}

/*
 * The best any detector could do on the busy hosts of the generator:
 * the oracle's threshold is set so that 5% of healthy busy runs of
 * OR_STEPS steps are flagged (a sixth of the hosts are busy, so that is
 * under 1% of healthy runs, the bound), and drops of 3 to 20%
 * lasting 1,500 to 3,000 steps (as the generator draws them) at step
 * 3000 count as found when the score passes it within OR_LAG steps, or
 * (horizon OR_LONG) while the drop lasts, as the bench counts a drop
 * found. Printed by the drop's size over the host's sd, as the bench's
 * strata.
 */
static void
oracle_bound(uint64_t seed)
{
	static const struct {
		int all, horizon;
	} way[] = { { 1, OR_LAG }, { 1, OR_LONG }, { 0, OR_LAG } };

	for (size_t w = 0; w < sizeof(way) / sizeof(way[0]); w++) {
		int      all = way[w].all, lag = way[w].horizon == OR_LAG;
		rng      r    = { seed * 7919 + (uint64_t) all + 3 * !lag };
		double   thr  = oracle_threshold(&r, all, way[w].horizon);
		uint64_t n[3] = { 0 }, hit[3] = { 0 };

		for (int i = 0; i < 6000; i++) {
			or_case c  = { .sd = uni(&r, 0.05, 0.25),
				 .all      = all,
				 .t0       = 3000,
				 .from     = 3000,
				 .horizon  = way[w].horizon };
			double  dr = uni(&r, 0.03, 0.2);
			int     b  = dr < 0.5 * c.sd ? 0 : dr < c.sd ? 1 : 2;

			c.nranks = unif(&r) < 0.5 ? 4 : 8;
			c.d      = -log(1 - dr);
			c.t1     = 3000 + (int) uni(&r, 1500, OR_LONG);
			c.to     = lag ? 3000 + OR_LAG + 1 : c.t1;
			n[b]++;
			hit[b] += oracle_run(&r, &c) > thr;
		}
		printf("oracle on busy hosts (%s, %s): threshold z %.2f "
		       "flags 5%% of %d healthy busy runs; drops found: "
		       "< 0.5 sd %" PRIu64 "/%" PRIu64 " (%.0f%%), 0.5-1 sd "
		       "%" PRIu64 "/%" PRIu64 " (%.0f%%), >= 1 sd %" PRIu64
		       "/%" PRIu64 " (%.0f%%)\n",
		    all ? "the mean of all ranks" : "rank 0 alone",
		    lag ? "within 100 steps" : "while the drop lasts", thr,
		    OR_HEALTHY, hit[0], n[0],
		    100.0 * (double) hit[0] / (double) n[0], hit[1], n[1],
		    100.0 * (double) hit[1] / (double) n[1], hit[2], n[2],
		    100.0 * (double) hit[2] / (double) n[2]);
	}
}

/*
 * The ceilings of the throughput drop's recall on a part: each drop on
 * a busy host counts as the share of OR_DRAWS draws of its own host
 * (sd, ranks, size, length) that the oracle of all ranks finds within
 * OR_LAG steps (ceiling[0]) or while it lasts (ceiling[1]), at the
 * threshold of oracle_threshold for that horizon; a drop on a quiet
 * host counts as found.
 */
#define OR_DRAWS 100

static void
drop_ceiling(score *sc, uint64_t seed, int part)
{
	static double thr[2];
	static int    has_thr;
	rng           r        = { seed * 7919 + 2 + (uint64_t) part };
	double        found[2] = { 0, 0 };

	if (!has_thr) { /* the thresholds --oracle prints */
		rng rt = { seed * 7919 + 1 }, rl = { seed * 7919 + 4 };

		thr[0]  = oracle_threshold(&rt, 1, OR_LAG);
		thr[1]  = oracle_threshold(&rl, 1, OR_LONG);
		has_thr = 1;
	}
	for (size_t i = 0; i < sc->nbusy_drop; i++) {
		const struct busy_drop *v = &sc->busy_drop[i];

		for (int h = 0; h < 2; h++) {
			or_case c = { .sd = v->sd,
				.nranks   = v->nranks,
				.all      = 1,
				.d        = -log(1 - v->size),
				.t0       = 3000,
				.t1       = 3000 + v->len,
				.from     = 3000,
				.to = h ? 3000 + v->len : 3000 + OR_LAG + 1,
				.horizon = h ? OR_LONG : OR_LAG };
			int     n = 0;

			for (int k = 0; k < OR_DRAWS; k++)
				n += oracle_run(&r, &c) > thr[h];
			found[h] += (double) n / OR_DRAWS;
		}
	}
	sc->ceiling[0] = found[0];
	sc->ceiling[1] = found[1];
}

/* Draw a run's parameters. Wide on purpose: step intervals 50 ms to
 * 60 s (log-uniform), noise levels, planned drift, ramps, checkpoints
 * every N steps or M minutes lasting 5x to 200x a step, evaluations
 * lasting 3x to 20x (both at most 4 minutes before a 10% spread, so a
 * few last past the 5 minutes a first pause may take without a warning,
 * and two that fall together, up to 8; a first pause longer than 10
 * minutes pages by design), heartbeats during data loading and pauses,
 * busy hosts. */
static void
draw(sim *S, runcfg *c, uint64_t iters)
{
	rng *r = &S->r;

	c->nranks      = unif(r) < 0.5 ? 4 : 8;
	c->iters       = iters;
	c->dt          = 0.05 * exp(uni(r, 0, log(60 / 0.05)));
	c->l_inf       = uni(r, 1.5, 2.5);
	c->l_a         = uni(r, 6, 12);
	c->l_p         = uni(r, 0.3, 0.6);
	c->l_noise     = uni(r, 0.01, 0.06);
	c->g0          = uni(r, 0.2, 1.5);
	c->g_noise     = uni(r, 0.05, 0.2);
	c->tps0        = uni(r, 2e4, 4e5);
	c->tps_noise   = uni(r, 0.003, 0.04);
	c->ent0        = uni(r, 1, 3);
	c->ent_tau     = uni(r, 2000, 8000);
	c->mfu0        = uni(r, 0.3, 0.55);
	c->slow_every  = (int) (unif(r) * 4) * 50; /* 0..150 */
	c->slow_factor = uni(r, 1.3, 2);
	for (int k = 0; k < MAXRANK; k++) {
		c->rank_off[k]   = uni(r, -0.01, 0.01);
		c->rank_noise[k] = uni(r, 0.005, 0.04);
	}
	c->drift_kind = (int) (unif(r) * 3);
	c->drift      = c->drift_kind ? uni(r, 0.02, 0.3) : 0;
	c->tok_drift  = c->drift_kind == 2 ? c->drift * uni(r, 0.8, 1.2) : 0;
	c->ramp0      = (uint64_t) uni(r, 0, 0.5 * (double) iters);
	c->ramp1      = c->ramp0 + (uint64_t) uni(r, 200, 2000);
	if (unif(r) < 0.7) {
		if (unif(r) < 0.5)
			c->ckpt_steps = (uint64_t) uni(r, 200, 2000);
		else
			c->ckpt_s = 60 * uni(r, 5, 60);
		c->ckpt_len = fmin(240, fmax(1, c->dt * uni(r, 5, 200)));
	}
	if (unif(r) < 0.5) {
		c->eval_steps = (uint64_t) uni(r, 250, 3000);
		c->eval_len   = fmin(240, fmax(0.5, c->dt * uni(r, 3, 20)));
	}
	c->hb_s   = unif(r) < 0.3 ? uni(r, 5, 15) : 0;
	c->load_s = c->hb_s > 0 ? uni(r, 30, 300) : 0;
	c->busy   = unif(r) < 0.15 ? uni(r, 0.05, 0.25) : 0;
	/* The held-out part of the parameter space: step intervals of 1 to
	 * 5 s, and checkpoints every 20 to 60 minutes. Nothing was tuned on
	 * these runs. */
	c->heldout = (c->dt >= 1 && c->dt < 5)
	    || (c->ckpt_s >= 1200 && c->ckpt_s <= 3600);
}

int
main(int argc, char **argv)
{
	int             nruns = 240, verbose = 0, part = -1, oracle = 0;
	uint64_t        iters = 6000, seed = 42;
	detect_rules   *rules;
	score           sc[2];
	struct timespec t0, t1;

	memset(sc, 0, sizeof(sc));
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
			nruns = (int) strtol(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
			iters = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--part") == 0 && i + 1 < argc) {
			i++;
			part = strcmp(argv[i], "tune") == 0   ? 0
			    : strcmp(argv[i], "heldout") == 0 ? 1
			                                      : -1;
		} else if (strcmp(argv[i], "-v") == 0)
			verbose = 1;
		else if (strcmp(argv[i], "--oracle") == 0)
			oracle = 1;
		else {
			fprintf(stderr,
			    "usage: bench_detect [--runs N] [--steps N] "
			    "[--seed S] [--part tune|heldout] [-v] "
			    "[--oracle]\n");
			return 2;
		}
	}
	if (oracle) {
		oracle_bound(seed);
		return 0;
	}
	if (detect_rules_default(&rules) != 0)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int run = 0; run < nruns; run++) {
		sim    S = { 0 };
		runcfg c = { 0 };

		S.r.s    = seed * 1000003 + (uint64_t) run;
		S.run_id = run;
		snprintf(S.run, sizeof(S.run), "run%03d", run);
		draw(&S, &c, iters);
		if (part >= 0 && c.heldout != part)
			continue;
		/* Half the runs are the healthy zoo: nothing injected. */
		S.healthy_run = unif(&S.r) < 0.5;
		S.nranks      = c.nranks;
		S.busy        = c.busy;
		S.verbose     = verbose;
		S.trace       = getenv("BENCH_TRACE") != NULL
		    && (strcmp(getenv("BENCH_TRACE"), "all") == 0
		        || strtol(getenv("BENCH_TRACE"), NULL, 10) == run);
		if (detect_engine_new(rules, &S.e) != 0)
			return 1;
		simulate(&S, &c);
		detect_flush(S.e, on_alert, &S);
		score_run(&sc[c.heldout], &S);
		if (verbose) {
			printf("run %d: dt %.3g s, %d ranks, drift %d %.2f, "
			       "ckpt %" PRIu64 " st / %.0f s len %.1f s, eval "
			       "%" PRIu64
			       " len %.1f, hb %.1f, busy %.2f%s%s\n",
			    run, c.dt, c.nranks, c.drift_kind, c.drift,
			    c.ckpt_steps, c.ckpt_s, c.ckpt_len, c.eval_steps,
			    c.eval_len, c.hb_s, c.busy,
			    S.healthy_run ? ", healthy" : "",
			    c.heldout ? ", held out" : "");
			for (size_t e = 0; e < S.nev; e++) {
				const event *ev = &S.ev[e];

				if (!ev->hit[0])
					printf("missed %s run %d step %" PRIu64
					       " size %.3f\n",
					    ev_names[ev->kind], run, ev->step0,
					    ev->size);
				else if (ev->kind == EV_DROP
				    || ev->kind == EV_STRAGGLER)
					printf(
					    "found %s run %d step %" PRIu64
					    " size %.3f after %.0f steps%s\n",
					    ev_names[ev->kind], run, ev->step0,
					    ev->size, ev->delay[0],
					    ev->kind == EV_DROP && !ev->warned
					        ? " (info only)"
					        : "");
				if (ev->kind == EV_DROP)
					printf(
					    "  (drop on a host with noise sd "
					    "%.3f)\n",
					    ev->busy);
			}
			for (size_t k = 0; k < S.nal; k++) {
				const alert_rec *a = &S.al[k];

				if (a->det == 0 && !a->matched)
					printf("false %s run %d step %" PRIu64
					       " rank %d metric %s sev %d%s\n",
					    cat_names[a->cat], run, a->step,
					    a->rank,
					    a->metric >= 0
					        ? met_names[a->metric]
					        : "",
					    a->sev,
					    a->cat != A_STALL
					            && a->cat != A_PROGRESS
					        ? ""
					        : (const char
					                *[]) { " (no pause)",
					            " (pause 1)", " (pause 2)",
					            " (pause 3+)" }[pause_nth(
					            &S, a->emit_ns)]);
			}
		}
		detect_engine_free(S.e);
		free(S.al);
		free(S.ev);
		free(S.pz);
	}
	detect_rules_free(rules);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	for (int p = 0; p < 2; p++) {
		if (part >= 0 && p != part)
			continue;
		printf(
		    "%svitals default rules vs. trainer baselines, %s part: "
		    "%" PRIu64 " runs (%" PRIu64 " healthy) x %" PRIu64
		    " steps, seed %" PRIu64 "\n\n",
		    p ? "\n" : "", p ? "HELD-OUT" : "tuning", sc[p].runs,
		    sc[p].healthy_runs, iters, seed);
		drop_ceiling(&sc[p], seed, p);
		print_table(&sc[p]);
	}
	printf("%.1f s for generating, detecting and scoring: %.2f M "
	       "samples/s\n",
	    (double) (t1.tv_sec - t0.tv_sec)
	        + (double) (t1.tv_nsec - t0.tv_nsec) / 1e9,
	    (double) (sc[0].samples + sc[1].samples) / 1e6
	        / ((double) (t1.tv_sec - t0.tv_sec)
	            + (double) (t1.tv_nsec - t0.tv_nsec) / 1e9));
	for (int p = 0; p < 2; p++) {
		for (int d = 0; d < NDET; d++)
			for (int k = 0; k < NEV; k++) {
				free(sc[p].delays[d][k]);
				free(sc[p].delays_iv[d][k]);
			}
		free(sc[p].div_crit_delay);
		free(sc[p].busy_drop);
	}
	return 0;
}
