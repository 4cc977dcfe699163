/*
 * stall: a run, or one of its ranks, that stops making progress.
 *
 * Each rank learns its usual step interval: the median of the last 16
 * intervals between samples that advanced its step (the first two of an
 * attempt, compilation and warm-up, are skipped), and its longest
 * interval over the last 1024 to 2048 advances, which covers slow steps
 * that recur (checkpoints, evaluation). An interval longer than the
 * threshold (a stall, or a slow step not seen before) is not learned:
 * one stall must not teach that stalls are usual. Instead it is kept
 * as a pause of its kind (alike length and rhythm: checkpoints,
 * evaluations); two of a kind at a step or wall-clock period make a
 * recurring pause, expected when due (see due_kind). So a long periodic
 * slow step is noted once or twice, then expected: where the first fell
 * in the attempt suggests when the second comes (guess_kind). A kind
 * whose pauses were silent does not explain heartbeats without progress
 * (due_pause's sounded). A rank is overdue after
 *
 *	clamp(max(k x usual, 1.25 x longest), floor, ceiling)
 *
 * seconds (ceiling until 3 intervals are known). An alert fires at the
 * `early` severity (warning) once overdue, and escalates to the rule's
 * severity at `escalate` times the threshold: a step 2.5x slower than
 * usual is worth a look, 5x is a page. Three alerts, one group per (rule,
 * run):
 *   stall (rank -1)       no sample from the run for the largest
 *                         threshold of its ranks;
 *   stall (rank r)        rank r has not advanced for its threshold while
 *                         the run advanced at least twice since it did;
 *   progress_stall (-1)   samples still arrive (heartbeats) but the run's
 *                         step has not advanced for that threshold.
 * A rank that declares its phases (vitals/phase/NAME markers) learns how
 * long each phase that pauses lasts; a silence inside one seen before is
 * judged against that phase's usual length, as a learned pause due now.
 * A rank whose emitter closed normally (detect_end) is not waited for;
 * when every rank has, the run is finished and raises nothing more.
 *
 * Live and replayed alerts agree: what is raised depends on the samples,
 * not on when the clock ticks (vitalsd every 200 ms of wall clock, later
 * under load; replay at each sample's time). Stalls are stamped with the
 * deadline that was missed, not the tick that noticed it. The run-wide
 * thresholds (the largest of the ranks', the pauses due) are computed
 * again after a sample changed a rank's (an advance, a phase marker, a
 * new rank, a restart, an end), before they are next used (refresh), so
 * they do not change between samples. Deadlines are checked at each tick
 * and also before each sample and end is applied (check), so a silence
 * that ended after its deadline but before the next tick is noted all
 * the same; the levels a silence crossed are noted each, in the order of
 * their deadlines (next_level); ranks are judged up to the moment the
 * run fell silent. A sample's arrival on the engine's clock is its own
 * time when that falls within a tick's interval after the last tick
 * (arrived), not the last tick. The tick looks at every rank at most
 * every 200 ms of clock (SCAN); a rank is also looked at before each of
 * its samples and its end, so for a rank that sends again or ends, when
 * the scans come changes only how soon it is noted.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "detect/baseline.h"
#include "detect/detector.h"
#include "detect/table.h"

enum {
	SL_K,
	SL_FLOOR,
	SL_CEILING,
	SL_RANKS,
	SL_PROGRESS,
	SL_EARLY,
	SL_ESCALATE,
	SL_PAUSE
};
static const detect_param sl_params[] = {
	{ "k", DP_NUM, 2.5, 0, 1, 1e6, NULL },
	{ "floor", DP_SECONDS, 5, DETECT_SECONDS, 0, 1e9, NULL },
	{ "ceiling", DP_SECONDS, 900, DETECT_SECONDS, 0.001, 1e9, NULL },
	{ "ranks", DP_BOOL, 1, 0, 0, 1, NULL },
	{ "progress", DP_BOOL, 1, 0, 0, 1, NULL },
	{ "early", DP_SEVERITY, DETECT_INFO, 0, -1, 2, NULL },
	{ "escalate", DP_NUM, 2, 0, 1, 1e6, NULL },
	{ "pause", DP_SECONDS, 300, DETECT_SECONDS, 0, 1e9, NULL },
};

#define NIV 16 /* intervals for the median */
#define NKIND                                                                 \
	4      /* kinds of pause learned apart (checkpoint, evaluation, ...): \
	        * a frequent kind must not push a rare one out */
#define NOCC 3 /* occurrences kept per kind */
#define LONGWIN 1024 /* advances per window of the longest interval */
#define MINLEARN 3
#define SCAN 200000000ll    /* ns of clock between scans of the ranks */
#define TICKWIN 64          /* ticks per window of the longest interval */
#define NPHASE 4            /* declared phases learned per rank */
#define PHNAME 32           /* a phase's name kept for messages */
#define MARKER "vitals/phase/"
#define MARKER_LEN 13

/* One kind of pause: intervals longer than the threshold that are alike
 * (within 2x), oldest first: the step before each, its length, when it
 * began (sample clock). */
typedef struct st_kind {
	uint64_t s[NOCC];
	double   iv[NOCC];
	int64_t  t[NOCC];
	uint32_t n;
	uint32_t used; /* the slot's advance count at its latest pause */
	uint8_t  snd;  /* the run sent samples without progress in one of
	                * them (heartbeats): not a silent kind */
	uint8_t  lent; /* its latest turn is another kind's pause, due at
	                * the same step (see remember_pause) */
	uint8_t lag[NOCC]; /* it came late, after another kind's pause in
	                    * which its turn fell: its period is longer
	                    * by up to that pause */
} st_kind;

/* A phase the rank declared (vitals/phase/NAME markers): how long its
 * last occurrences lasted, from entering it to the rank's next marker. */
typedef struct st_phase {
	uint64_t h; /* hash of its name; 0: free */
	double   len[NOCC];
	uint32_t n, used;
} st_phase;

typedef struct st_slot {
	uint64_t max_step;
	int64_t  last_time, adv_time; /* latest sample; latest advance */
	/* The engine's clock when the latest advance arrived (see
	 * arrived()): silences are measured on it, so a run whose clock is
	 * far off the collector's (samples stamped in the past) is not
	 * silent for that offset. */
	int64_t  adv_seen;
	double   thr, usual; /* seconds */
	double   long_cur, long_prev;
	uint32_t long_n, nadv;
	st_kind  kind[NKIND];
	uint64_t run_adv_at; /* the run's advance count at our last */
	/* The attempt's first step, its first sample's time and its first
	 * advance's time (0: none yet): a first pause N steps or M seconds
	 * into the attempt suggests a period (guess_kind). */
	uint64_t   st0;
	int64_t    t0s, t0a;
	uint8_t    has, warm, stalled; /* stalled: alert level 0..2 */
	uint8_t    ended;              /* closed normally (detect_end) */
	uint8_t    in_ph;              /* in a declared phase */
	uint64_t   ph_h;               /* its name's hash */
	int64_t    ph_since;           /* when it entered it */
	char       ph_name[PHNAME];
	st_phase   ph[NPHASE];
	detect_win w;
	double     buf[2 * NIV];
} st_slot;

/* The pauses due now, run-wide: the largest of the ranks'. */
typedef struct st_due {
	double  pause; /* the largest due pause of the ranks */
	double  fam;   /* the largest familiar pause of them */
	double  guess; /* the largest guessed pause due */
	uint8_t sure;  /* one of them due for sure (no info) */
} st_due;

typedef struct st_group {
	int      has;
	uint64_t max_step, adv_n;
	int64_t  adv_time, last_time; /* any rank's latest advance; sample */
	int64_t  seen;                /* the engine's clock at the latest */
	double   thr, usual;          /* run-wide: the largest of the ranks' */
	/* [0] of every kind: what explains a silence; [1] of the kinds not
	 * silent: what explains samples that arrive without progress (see
	 * progress_level). */
	st_due   due[2];
	int64_t snd_at; /* the latest sample (its time) that came without
	                 * progress past the threshold after an advance */
	char     phase[PHNAME];       /* the declared phase it is in, or "" */
	uint8_t  dirty;               /* a rank's state changed since */
	int64_t  scanned;             /* the clock at the last scan of ranks */
	int64_t  tick_at;             /* the last tick */
	/* The longest interval between ticks over the last TICKWIN
	 * ticks, and the TICKWIN before (see arrived()). */
	int64_t  gap_cur, gap_prev;
	uint32_t gap_n;
	uint8_t  silent, progress; /* alert levels 0..2 */
	uint8_t  ended;            /* every rank ended: the run finished */
} st_group;

/* Whether the run went on without the rank: it advanced at least twice
 * since the rank last did (once could be the others being a moment
 * ahead of it in the same step). */
static int
went_on_without(const st_group *gs, const st_slot *sl)
{
	return gs->adv_n >= sl->run_adv_at + 2;
}

static size_t
st_state_size(const detect_rule *r)
{
	(void) r;
	return sizeof(st_group);
}

static size_t
st_slot_size(const detect_rule *r)
{
	(void) r;
	return sizeof(st_slot);
}

static void
st_slot_init(void *slot, const detect_rule *r)
{
	st_slot *sl = slot;

	detect_win_init(&sl->w, NIV);
	sl->thr   = detect_p(r, SL_CEILING);
	sl->usual = NAN;
}

/* ---- alert levels ------------------------------------------------------
 *
 * 0 none; 1 `early` (info): longer than usual; 2 warning; 3 the rule's
 * severity (critical). A pause is the silence beyond the usual step
 * interval u. For an ordinary silence the levels start at the threshold,
 * at max(escalate x threshold, u + pause) and at max(escalate x
 * threshold, u + 2 x pause): a pause not learned yet (the first
 * checkpoint) is at most a warning for 2 x pause; one of a length seen
 * twice, or seen once and brought now by its guessed rhythm, is warned
 * of only past 1.5x that length. When a learned recurring
 * pause of usual length D is due, at max(threshold, min(1.5 (D + G),
 * the page)) (warning; G: the lengths of the kinds seen once that their
 * guessed rhythm brings now, 0 if none) and max(escalate x threshold,
 * 2.5 D, u + pause): it pages only well beyond
 * its own usual length, and never sooner than a pause not learned may
 * take without a warning (a first checkpoint that falls on the step of a
 * learned evaluation is not judged against the evaluation).
 */

/* Seconds of silence at which level lv starts (thr: the threshold;
 * pause: the usual length of a learned pause that is due, or 0; u: the
 * usual step interval, NaN if not known; fam: the longest pause of a
 * length seen at least twice, or 0; guess: the length of a pause seen
 * once whose guessed period makes it due now, or 0: no warning before
 * 1.5x it, nor a note if it is no longer than u + pause; the page as
 * for any silence). */
static double
level_at(const detect_rule *r, int lv, double thr, double pause, double u,
    double fam, double guess)
{
	double esc = detect_p(r, SL_ESCALATE) * thr;
	double P   = detect_p(r, SL_PAUSE) + (isnan(u) ? 0 : u);

	if (pause > 0 && lv >= 2) {
		double page = fmax(fmax(esc, 2.5 * pause), P);

		/* A kind seen once that its guessed rhythm brings now took
		 * its turn in this pause too: the warning waits for their
		 * sum, never past the page (which the guess does not move). */
		if (lv == 2)
			return fmax(thr, fmin(1.5 * (pause + guess), page));
		return page;
	}
	/* A guess longer than a pause not learned may last without a
	 * warning (a first hang of 400 s, a long first checkpoint) holds
	 * back the warning, not the note: a shorter hang where it put the
	 * next pause is noted. */
	if (lv <= 1)
		return fmax(thr, guess <= P ? 1.5 * guess : 0);
	if (lv == 2) /* a familiar length, not at its rhythm, or a length
	              * seen once whose guessed rhythm brings it now: not
	              * sooner than 1.5x it (but never past the page) */
		return fmax(esc,
		    fmax(P,
		        fmin(1.5 * fmax(fam, guess),
		            P + detect_p(r, SL_PAUSE))));
	return fmax(esc, P + detect_p(r, SL_PAUSE));
}

static int
level_for(const detect_rule *r, double elapsed, double thr, double pause,
    int sure, double u, double fam, double guess)
{
	for (int lv = 3; lv >= 1; lv--) {
		if (lv == 1 && (detect_p(r, SL_EARLY) < 0 || sure))
			break;
		if (elapsed > level_at(r, lv, thr, pause, u, fam, guess))
			return lv;
	}
	return 0;
}

static int
sev_of(const detect_rule *r, int lv)
{
	if (lv == 1)
		return (int) detect_p(r, SL_EARLY);
	if (lv == 2)
		return r->severity < DETECT_WARNING ? r->severity
		                                    : DETECT_WARNING;
	return r->severity;
}

static double
secs(int64_t ns)
{
	return (double) ns / 1e9;
}

/* Whether kind k of two pauses is a timer counted from the attempt's
 * start: its first pause began as long after the attempt's first step
 * (or first sample) as the second after the first, within tol, while
 * in steps the two spans differ by more than one (the pauses' lengths
 * vary, and a timer counts them in its period). The attempt's start
 * is a third point that two pauses lack. */
static int
timer_from_start(const st_slot *sl, const st_kind *k, double tol)
{
	uint64_t ps, n0;
	double   P;

	if (k->n != 2 || k->s[0] + 1 <= sl->st0 || k->t[1] <= k->t[0])
		return 0;
	ps = k->s[1] - k->s[0];
	n0 = k->s[0] + 1 - sl->st0;
	if (ps + 1 >= n0 && ps <= n0 + 1)
		return 0; /* as regular in steps: either */
	P = secs(k->t[1] - k->t[0]);
	for (int j = 0; j < 2; j++) {
		int64_t from = j == 0 ? sl->t0a : sl->t0s;

		if (from > 0 && k->t[0] > from
		    && fabs(secs(k->t[0] - from) - P) <= tol)
			return 1;
	}
	return 0;
}

/* How early before its next turn kind k may begin again, in s, given
 * the clock's window tol (two usual steps jit, a quarter of its length,
 * how much its period moved). A timer does not come early: one counted
 * from the start of the last save comes a period after it, one step
 * late at most (jit), or later by another pause in that step (how much
 * its period moved); one counted from the end of the last save comes
 * sooner by as much as that save was shorter than the one before. With
 * three pauses kept, those moves are known, and a silence that begins
 * before them is no turn of the timer: a stall a few steps after a
 * long checkpoint, well before the next, is noted (not held back as
 * the checkpoint's turn, nor taken for it). With two, tol. */
static double
early_tol(const st_kind *k, double jit, double moved, double tol)
{
	uint32_t n = k->n;

	if (n < 3)
		return tol;
	return fmin(tol, jit + moved + fmax(0, k->iv[n - 2] - k->iv[n - 1]));
}

/* The usual length of kind k if it is due after the slot's current step,
 * or 0. Its last two pauses define the period: after steps p1 and p2 at
 * least 8 steps apart, it is due when the current step is p2 plus a
 * multiple of p2 - p1 (give or take one step); begun at times t1 and t2
 * (checkpoints every M minutes), when the current interval began t2 plus
 * a multiple of t2 - t1, give or take two usual steps, a quarter of the
 * pause (a timer that counts from the end of the last save moves with
 * its length) and, with three pauses kept, how much the period moved (a
 * timer is looked at once a step, and a step may hold another pause).
 * A timer does not come early: before its next turn, a kind of three
 * pauses is due only within what it has shown it moves (see early_tol).
 * It may come late by the pause just before (before s, 0: none) when
 * its turn fell in that pause (see late). A kind whose three pauses
 * were the same number of steps apart is due by steps only: the other
 * pauses between them move it in time. Its usual length is the longest
 * kept. */
/* The interval `back` intervals ago (1: the latest learned, just
 * before the current one) if it was a pause (longer than the
 * threshold), else 0. */
static double
pause_before(const st_slot *sl, uint32_t back)
{
	double iv;

	if (sl->w.n < back)
		return 0;
	iv = sl->buf[(sl->w.head + sl->w.cap - back) % sl->w.cap];
	return iv > sl->thr ? iv : 0;
}

/* Whether timer k, off s past its turn, fell due in the pause of
 * length before s just before the current interval (give or take jit),
 * one of another kind: looked at once a step, it comes late by as much
 * (an evaluation just before a checkpoint delays it). */
static int
late(
    const st_slot *sl, const st_kind *k, double off, double jit, double before)
{
	return before > 0 && off <= before + jit
	    && k->s[k->n - 1] + 1 != sl->max_step;
}

static double
due_kind(const st_slot *sl, const st_kind *k, double before, int *by_time,
    int *maybe)
{
	uint32_t n = k->n;
	double   d = 0, tol, jit, P, moved = 0;
	double   u        = isnan(sl->usual) ? 0 : sl->usual;
	int      by_steps = 0; /* three pauses the same steps apart */
	int      regular  = 0; /* its pauses so far the same steps apart */

	*by_time = 0;
	*maybe   = 0;
	if (n < 2)
		return 0;
	for (uint32_t i = 0; i < n; i++)
		d = fmax(d, k->iv[i]);
	/* Its turn, lent to the pause just before, came after it. */
	if (k->lent && k->s[n - 1] + 1 == sl->max_step)
		return d;
	jit = 2 * u;
	tol = jit + 0.25 * d;
	if (n >= 3 && !k->lag[n - 1] && !k->lag[n - 2])
		moved = fabs(secs(k->t[n - 1] - k->t[n - 2])
		    - secs(k->t[n - 2] - k->t[n - 3]));
	if (k->s[n - 1] >= k->s[n - 2] + 8 && sl->max_step > k->s[n - 1]) {
		uint64_t period = k->s[n - 1] - k->s[n - 2];
		uint64_t off    = (sl->max_step - k->s[n - 1]) % period;

		by_steps = n >= 3 && k->s[n - 2] + 1 >= k->s[n - 3] + period
		    && k->s[n - 2] <= k->s[n - 3] + period + 1;
		/* Not the step right after its last: that is another. The
		 * period of two pauses is due at its next turn only; three
		 * the same steps apart make a rhythm, due at every multiple
		 * (a stall some steps after a checkpoint makes a period of
		 * its own, whose multiples would hold back later notes). */
		if ((off <= 1 || off + 1 >= period)
		    && sl->max_step + 1 >= k->s[n - 1] + period
		    && (by_steps || sl->max_step <= k->s[n - 1] + period + 1))
			return d;
		regular = n < 3 || by_steps;
	}
	/* Regular in steps, not in time: not a timer. */
	if (by_steps && moved > tol)
		return 0;
	if (k->t[n - 1] > k->t[n - 2] && sl->adv_time > k->t[n - 1]) {
		double off, since, early;

		P     = secs(k->t[n - 1] - k->t[n - 2]);
		if (k->lag[n - 1] && n >= 3)
			P = secs(k->t[n - 2] - k->t[n - 3]);
		since = secs(sl->adv_time - k->t[n - 1]);
		off   = fmod(since, P);
		tol += moved;
		/* Pauses at random times (stalls) are no timer. */
		if (moved > 0.25 * P)
			return 0;
		*by_time = 1;
		early    = since < P ? early_tol(k, jit, moved, tol) : tol;
		/* Its period is longer than its pause. With three pauses
		 * kept (a period seen twice), longer than the pause less a
		 * usual interval: the interval of a pause holds the step
		 * after it too, so a save of 290 s and a step of 26 may
		 * outlast a timer's 316 s. Not with two: an evaluation next
		 * to a checkpoint of alike length would be a timer whose
		 * period is the two pauses' distance. */
		if ((P > d || (n >= 3 && P > d - u))
		    && (off <= tol || P - off <= early
		        || late(sl, k, off, jit, before))
		    && since >= P - early) {
			/* A kind regular in steps so far, due here by time
			 * only: a timer whose steps drift, or not due at all
			 * (the window spans several steps). */
			*maybe = regular && !timer_from_start(sl, k, tol);
			return d;
		}
	}
	return 0;
}

/* The length of kind k if it was seen once and the period its first
 * pause suggests makes it due after the slot's current step, or 0. A
 * first pause after step s, N = s + 1 - (the attempt's first step)
 * steps into the attempt, suggests one every N steps (a checkpoint
 * every 1000 steps of a run counted from 0 or 1: after step 999 or
 * 1000), give or take one step; one that began M s after the attempt's
 * first step (data loading excluded) or after its first sample, one
 * every M s, within the tolerance of due_kind. Only the next one is
 * guessed (N steps or M s after the first): a guess at every multiple
 * would hold back the notes of real stalls by chance. A guess from one
 * pause only holds back the note (no note before 1.5x its length); the
 * warning and page are as for any silence. */
static double
guess_kind(const st_slot *sl, const st_kind *k)
{
	double tol;

	if (k->n != 1)
		return 0;
	if (k->s[0] + 1 >= sl->st0 + 8 && sl->max_step > k->s[0]) {
		uint64_t period = k->s[0] + 1 - sl->st0;
		uint64_t off    = sl->max_step - k->s[0];

		if (off + 1 >= period && off <= period + 1)
			return k->iv[0];
	}
	tol = 2 * (isnan(sl->usual) ? 0 : sl->usual) + 0.25 * k->iv[0];
	for (int j = 0; j < 2 && sl->adv_time > k->t[0]; j++) {
		int64_t from = j == 0 ? sl->t0a : sl->t0s;
		double  P;

		if (from <= 0 || k->t[0] <= from)
			continue;
		P = secs(k->t[0] - from);
		if (P > k->iv[0]
		    && fabs(secs(sl->adv_time - k->t[0]) - P) <= tol)
			return k->iv[0];
	}
	return 0;
}

/* The learned phase the rank is in, or NULL: one it declared with a
 * marker (vitals/phase/NAME), seen before and usually longer than the
 * rank's threshold (a checkpoint, an evaluation: a pause, not a part of
 * a step). */
static const st_phase *
in_phase(const st_slot *sl, double *len)
{
	*len = 0;
	if (!sl->in_ph)
		return NULL;
	for (uint32_t i = 0; i < NPHASE; i++) {
		const st_phase *p = &sl->ph[i];

		if (p->n == 0 || p->h != sl->ph_h)
			continue;
		for (uint32_t j = 0; j < p->n; j++)
			*len = fmax(*len, p->len[j]);
		return *len > sl->thr ? p : NULL;
	}
	return NULL;
}

/* Whether a kind's pauses are of one length, within 1.5x. */
static int
even(const st_kind *k)
{
	double lo = k->iv[0], hi = k->iv[0];

	for (uint32_t j = 1; j < k->n; j++) {
		lo = fmin(lo, k->iv[j]);
		hi = fmax(hi, k->iv[j]);
	}
	return hi <= 1.5 * lo;
}

/* The usual length of the learned recurring pauses (checkpoint,
 * evaluation) due after the slot's current step, or 0. Kinds due at the
 * same step add up: an evaluation and then a checkpoint. Inside a
 * declared phase that has a history, that phase's own usual length.
 * *guess: the lengths of the kinds seen once that their guessed period
 * makes due (guess_kind), added up. sounded: only the kinds in whose
 * pauses the run sent samples without progress (heartbeats): a silent
 * checkpoint does not explain a stretch of heartbeats without steps. */
static double
due_pause(const st_slot *sl, int *sure, double *guess, int sounded)
{
	double d = 0;

	*sure  = 0;
	*guess = 0;
	if (in_phase(sl, &d) != NULL) {
		*sure = 1;
		return d;
	}
	for (uint32_t i = 0; i < NKIND; i++) {
		int    by_time, maybe;
		double k;

		if (sounded && !sl->kind[i].snd)
			continue;
		k = due_kind(
		    sl, &sl->kind[i], pause_before(sl, 1), &by_time, &maybe);
		*guess += guess_kind(sl, &sl->kind[i]);
		d += k;
		/* Two pauses cannot tell a timer from a step period: the
		 * info level is not held back by the clock's window alone;
		 * nor by two whose lengths differ by more than 1.5x (a
		 * hang paired with the first checkpoint is no rhythm yet). */
		*sure |= k > 0
		    && !(sl->kind[i].n < 3 && (maybe || !even(&sl->kind[i])));
	}
	return d;
}

/* Whether pauses of lengths a and b are alike (within 2x). */
static int
alike(double a, double b)
{
	return a <= 2 * b && b <= 2 * a;
}

/* Add a pause of iv s after step prev, begun at time t, to kind k. */
static void
push_pause(
    st_slot *sl, st_kind *k, double iv, uint64_t prev, int64_t t, int snd)
{
	if (k->n == NOCC) {
		memmove(k->s, k->s + 1, (NOCC - 1) * sizeof(k->s[0]));
		memmove(k->iv, k->iv + 1, (NOCC - 1) * sizeof(k->iv[0]));
		memmove(k->t, k->t + 1, (NOCC - 1) * sizeof(k->t[0]));
		memmove(k->lag, k->lag + 1, (NOCC - 1) * sizeof(k->lag[0]));
		k->n--;
	}
	k->s[k->n]  = prev;
	k->iv[k->n] = iv;
	k->t[k->n]  = t;
	k->lag[k->n] = 0;
	k->n++;
	k->used = sl->nadv;
	k->snd |= (uint8_t) (snd != 0);
	k->lent = 0;
}

/* What it costs to take this pause for kind k, due by its step period
 * (see remember_pause): 0 at this very step; off by one, 20 for a kind
 * whose last three pauses were exactly its period apart (an evaluation
 * every N steps: one step off is not its turn, and a timer due about
 * now is likelier), else 1 (a timer's checkpoints look like a step
 * period give or take one step). */
static double
step_off(const st_slot *sl, const st_kind *k)
{
	uint32_t n = k->n;
	uint64_t period;

	if (n < 2 || k->s[n - 1] <= k->s[n - 2] || sl->max_step <= k->s[n - 1])
		return 1;
	period = k->s[n - 1] - k->s[n - 2];
	if ((sl->max_step - k->s[n - 1]) % period == 0)
		return 0;
	return n >= 3 && k->s[n - 2] == k->s[n - 3] + period ? 20 : 1;
}

/* Remember a pause of iv s after step prev (the slot's step and advance
 * time are still those before it) with its kind: one of alike length
 * that expected it now, else one of alike length still learning its
 * rhythm, else a new kind in place of the one not seen for longest. So
 * a checkpoint every 30 minutes and an evaluation every 250 steps that
 * last as long are two kinds. Every other kind that was due took its
 * turn in this pause too (an evaluation and a checkpoint at one step):
 * it keeps its rhythm, with its own length. That turn is lent: if the
 * next interval is a pause alike to that kind, the turn was that one
 * (a timer looked at once a step fell due at an evaluation's step and
 * saved a step later). A pause that lasted the sum of several kinds
 * due teaches no new length; the kind it was taken for keeps its turn
 * with its own. */
static void
remember_pause(st_slot *sl, double iv, uint64_t prev, int snd)
{
	st_kind *k = NULL, *learning = NULL;
	double   kd = 0, best = 0, due[NKIND];
	int      ndue = 0, loose[NKIND], klag = 0;
	/* The pause just before this one (this one is learned already) */
	double before = pause_before(sl, 2);

	/* A kind whose turn was lent to the pause just before, and this
	 * pause alike to it: its turn is this one, late by that pause. */
	for (uint32_t i = 0; i < NKIND; i++) {
		st_kind *c = &sl->kind[i];

		if (c->lent && c->n > 0 && c->s[c->n - 1] + 1 == prev
		    && alike(iv, c->iv[c->n - 1])) {
			c->s[c->n - 1]   = prev;
			c->t[c->n - 1]   = sl->adv_time;
			c->iv[c->n - 1]  = iv;
			c->lent          = 0;
			c->used          = sl->nadv;
			c->lag[c->n - 1] = 1;
			return;
		}
	}
	for (uint32_t i = 0; i < NKIND; i++) {
		st_kind *c = &sl->kind[i];
		int      by_time, maybe, lag = 0;
		double   score;

		/* A timer late by the pause just before is taken for this
		 * pause once it has a rhythm (three pauses kept): with two,
		 * that paired pauses with the wrong kinds on the bench's
		 * held-out runs. */
		due[i] = due_kind(sl, c, 0, &by_time, &maybe);
		if (due[i] == 0 && before > 0 && c->n >= 3) {
			due[i] = due_kind(sl, c, before, &by_time, &maybe);
			lag    = due[i] > 0;
		}
		loose[i] = due[i] > 0 && maybe;
		ndue += due[i] > 0 && !maybe;
		if (c->n == 0 || !alike(iv, c->iv[c->n - 1]))
			continue;
		/* Due at this very step says more than due about now, and a
		 * timer about now more than a kind regular in steps that is
		 * not at its step, or one step off its exact period (see
		 * step_off). */
		score = fabs(log(iv / fmax(due[i], 1e-9))) + (by_time ? 10 : 0)
		    + (maybe ? 5 : 0) + (by_time ? 0 : step_off(sl, c));
		if (due[i] > 0 && (k == NULL || score < best)) {
			k    = c;
			kd   = due[i];
			best = score;
			klag = lag;
		} else if (due[i] == 0 && c->n < 2 && learning == NULL)
			learning = c;
	}
	/* Kinds regular in steps and not at their step took no turn,
	 * unless the pause held them besides the kind it was taken for
	 * (an evaluation and a checkpoint whose timer fell due at its
	 * step), nor did a kind more than twice as long as the whole
	 * pause (a timer's checkpoint due about the time of a short
	 * evaluation comes later: taking this pause for it would move its
	 * rhythm). */
	for (uint32_t i = 0; i < NKIND; i++) {
		st_kind *c     = &sl->kind[i];
		int      holds = k != NULL && iv >= kd + 0.5 * due[i];

		if (due[i] == 0 || c == k || iv < 0.5 * due[i]
		    || (loose[i] && !holds))
			continue;
		ndue += loose[i];
		push_pause(sl, c, due[i], prev, sl->adv_time, snd);
		c->lent = k != NULL && !holds;
	}
	if (ndue >= 2 && (k == NULL || iv > 1.5 * kd)) {
		if (k != NULL)
			push_pause(sl, k, kd, prev, sl->adv_time, snd);
		return;
	}
	if (k == NULL)
		k = learning;
	if (k == NULL) {
		k = &sl->kind[0];
		for (uint32_t i = 1; i < NKIND && k->n > 0; i++)
			if (sl->kind[i].n == 0 || sl->kind[i].used < k->used)
				k = &sl->kind[i];
		memset(k, 0, sizeof(*k));
	}
	push_pause(sl, k, iv, prev, sl->adv_time, snd);
	k->lag[k->n - 1] = (uint8_t) klag;
}

static double
eff_thr(const detect_rule *r, const st_slot *sl)
{
	(void) r;
	return sl->thr;
}

/* Learn the interval iv that followed step prev. alone: the run went on
 * without the rank meanwhile (went_on_without), so a long
 * interval was the rank's own stall, not a planned pause: a checkpoint
 * or an evaluation stops every rank. snd: the run sent samples without
 * progress meanwhile (heartbeats). */
static void
learn(const detect_rule *r, st_slot *sl, double iv, uint64_t prev, int alone,
    int snd)
{
	double longest, thr;

	detect_win_push(&sl->w, sl->buf, iv);
	sl->nadv++;
	if (sl->nadv <= MINLEARN || iv <= sl->thr) {
		if (iv > sl->long_cur)
			sl->long_cur = iv;
	} else {
		/* Longer than the threshold: a stall, or a slow step that
		 * may recur. One stall must not teach that stalls are
		 * usual, so it is only remembered as a pause, and one
		 * the rank took alone not even that: taken for a kind
		 * of alike length (a rank's stall of 3 minutes, a
		 * checkpoint of 4), it would teach a rhythm that holds
		 * back the notes of a later stall. */
		if (!alone)
			remember_pause(sl, iv, prev, snd);
	}
	if (++sl->long_n >= LONGWIN) {
		sl->long_prev = sl->long_cur;
		sl->long_cur  = 0;
		sl->long_n    = 0;
	}
	if (sl->nadv < MINLEARN)
		return;
	sl->usual = detect_win_median(&sl->w, sl->buf);
	longest = sl->long_cur > sl->long_prev ? sl->long_cur : sl->long_prev;
	thr     = detect_p(r, SL_K) * sl->usual;
	if (1.25 * longest > thr)
		thr = 1.25 * longest;
	if (thr < detect_p(r, SL_FLOOR))
		thr = detect_p(r, SL_FLOOR);
	if (thr > detect_p(r, SL_CEILING))
		thr = detect_p(r, SL_CEILING);
	sl->thr = thr;
}

/* The longest pause of a length the slot has seen at least twice (a
 * kind of two or more pauses, even if its rhythm is not known yet), or
 * 0. A checkpoint whose rhythm was not made out (two kinds of alike
 * length paired wrongly while learning, a timer moved by other pauses)
 * is still a length the run has shown it takes. sounded: as for
 * due_pause. */
static double
familiar(const st_slot *sl, int sounded)
{
	double f = 0;

	for (uint32_t i = 0; i < NKIND; i++) {
		if (sounded && !sl->kind[i].snd)
			continue;
		for (uint32_t j = 0; sl->kind[i].n >= 2 && j < sl->kind[i].n;
		     j++)
			f = fmax(f, sl->kind[i].iv[j]);
	}
	return f;
}

/* The run-wide figures from its ranks' (gs->thr, pause, ...): after a
 * sample changed a rank's, before they are used (so they depend on the
 * samples, not on when the clock ticks). */
static void
refresh(const detect_rule *r, detect_group *g, st_group *gs)
{
	gs->thr       = 0;
	gs->phase[0]  = '\0';
	gs->usual     = NAN;
	gs->dirty     = 0;
	memset(gs->due, 0, sizeof(gs->due));
	for (uint32_t i = 0; i < g->nslots; i++) {
		const st_slot *sl = detect_slot(g, i);
		int            sure;
		double         d, guess;

		if (!sl->has)
			continue;
		if (eff_thr(r, sl) > gs->thr)
			gs->thr = eff_thr(r, sl);
		for (int p = 0; p < 2; p++) {
			st_due *u = &gs->due[p];

			d        = due_pause(sl, &sure, &guess, p);
			u->guess = fmax(u->guess, guess);
			if (d > u->pause) {
				double len;

				u->pause = d;
				if (p == 0)
					snprintf(gs->phase, sizeof(gs->phase),
					    "%s",
					    in_phase(sl, &len) != NULL
					        ? sl->ph_name
					        : "");
			}
			u->sure |= (uint8_t) sure;
			u->fam = fmax(u->fam, familiar(sl, p));
		}
		if (!isnan(sl->usual) && !(sl->usual <= gs->usual))
			gs->usual = sl->usual;
	}
}

typedef struct usual_txt {
	char s[160];
} usual_txt;

/* "1.2 s", and the learned pause due now: "in a recurring pause
 * (checkpoint, evaluation) that usually lasts 180 s", or the declared
 * phase it is in: "in phase checkpoint, which usually lasts 180 s". */
static usual_txt
usual(double u, double pause, const char *phase)
{
	usual_txt t;
	int       n;

	if (isnan(u))
		n = snprintf(t.s, sizeof(t.s), "not learned yet");
	else
		n = snprintf(t.s, sizeof(t.s), "%s s", detect_fmt(u).s);
	if (pause > 0 && n > 0 && (size_t) n < sizeof(t.s) && phase[0])
		snprintf(t.s + n, sizeof(t.s) - (size_t) n,
		    "; in phase %s, which usually lasts %s s", phase,
		    detect_fmt(pause).s);
	else if (pause > 0 && n > 0 && (size_t) n < sizeof(t.s))
		snprintf(t.s + n, sizeof(t.s) - (size_t) n,
		    "; in a recurring pause (checkpoint, evaluation) that "
		    "usually lasts %s s",
		    detect_fmt(pause).s);
	return t;
}

/* Seconds to ns, bounded so that a time plus it cannot overflow (the
 * engine keeps times within [0, 2^62] ns). */
static int64_t
ns_of(double s)
{
	return (int64_t) fmin(s * 1e9, 4e18);
}

/* Seconds of a silence from `from` to the sample time t that ended it;
 * never negative (a rank's sample may be older than another rank's
 * newest). Sample times only, so live and replayed alerts agree. */
static double
silence(int64_t t, int64_t from)
{
	return t > from ? secs(t - from) : 0;
}

/* The rank begins an attempt at step `step`, time t: its first run, or
 * a restart. */
static void
new_attempt(st_slot *sl, uint64_t step, int64_t t)
{
	sl->st0 = step;
	sl->t0s = t;
	sl->t0a = 0;
}

static void
rank_advanced(detect_ctx *c, st_slot *sl, const detect_sample *s)
{
	detect_origin o;
	double        dt = silence(s->time_ns, sl->adv_time);

	detect_origin_rank(&o, c->s->rk);
	detect_emit(c, &o, "stall", sev_of(c->r, sl->stalled), DETECT_RESOLVED,
	    0, s->step, s->time_ns, dt, sl->usual,
	    "rank %d advanced again to step %llu after %s s", (int) s->rank,
	    (unsigned long long) s->step, detect_fmt(dt).s);
	sl->stalled = 0;
}

/* A phase marker of the rank: the phase it was in ends, and its length
 * is learned (unless it lasted beyond the page level of its usual one:
 * a hung checkpoint must not teach that hangs are usual); value 1
 * enters the named phase. */
static void
phase_marker(st_slot *sl, const detect_sample *s)
{
	const char *name = s->metric + MARKER_LEN;
	size_t      n    = s->mlen - MARKER_LEN;

	if (sl->in_ph) {
		double    len = silence(s->time_ns, sl->ph_since), d;
		st_phase *p   = NULL;

		for (uint32_t i = 0; i < NPHASE && p == NULL; i++)
			if (sl->ph[i].n > 0 && sl->ph[i].h == sl->ph_h)
				p = &sl->ph[i];
		/* Only phases that pause (longer than the threshold) are
		 * kept: the parts of every step would push them out. */
		if ((p != NULL || len > sl->thr)
		    && (in_phase(sl, &d) == NULL || len <= 2.5 * d)) {
			for (uint32_t i = 0; i < NPHASE && p == NULL; i++)
				if (sl->ph[i].n == 0)
					p = &sl->ph[i];
			if (p == NULL) {
				p = &sl->ph[0];
				for (uint32_t i = 1; i < NPHASE; i++)
					if (sl->ph[i].used < p->used)
						p = &sl->ph[i];
				memset(p, 0, sizeof(*p));
			}
			if (p->n == NOCC) {
				memmove(p->len, p->len + 1,
				    (NOCC - 1) * sizeof(p->len[0]));
				p->n--;
			}
			p->h           = sl->ph_h;
			p->len[p->n++] = len;
			p->used        = sl->nadv;
		}
		sl->in_ph = 0;
	}
	if (s->value != 0) {
		sl->in_ph    = 1;
		sl->ph_h     = detect_hash(0, name, n);
		sl->ph_since = s->time_ns;
		if (n >= PHNAME)
			n = PHNAME - 1;
		memcpy(sl->ph_name, name, n);
		sl->ph_name[n] = '\0';
	}
}

/* The rank that went silent first (its last sample is the oldest) and
 * by how much before the last one: when one rank hangs, the others soon
 * block waiting for it, so the first to stop is the likely cause. A rank
 * that declared it waits in a collective (or a barrier) waits for
 * another: while some rank does not, the first of those is taken (*lead
 * -1 when chosen so: a rank that began its step late can hang after the
 * others' last sample). Slot index, or -1 if fewer than two ranks are
 * live. */
static int64_t
first_silent(const detect_group *g, double *lead)
{
	int64_t lo = -1, tlo = 0, thi = 0, olo = -1, tolo = 0;
	int     n = 0, nwait = 0;

	for (uint32_t i = 0; i < g->nslots; i++) {
		const st_slot *sl = detect_slot(g, i);

		if (!sl->has || sl->ended)
			continue;
		if (n++ == 0 || sl->last_time < tlo) {
			lo  = i;
			tlo = sl->last_time;
		}
		if (n == 1 || sl->last_time > thi)
			thi = sl->last_time;
		if (sl->in_ph
		    && detect_phase_waits(sl->ph_name, strlen(sl->ph_name)))
			nwait++;
		else if (olo < 0 || sl->last_time < tolo) {
			olo  = i;
			tolo = sl->last_time;
		}
	}
	if (n < 2)
		return -1;
	if (nwait > 0 && olo >= 0) {
		*lead = -1;
		return olo;
	}
	if (thi == tlo)
		return -1;
	*lead = secs(thi - tlo);
	return lo;
}

/* The lowest threshold any rank can have: no silence shorter is a
 * stall at any level. */
static double
min_thr(const detect_rule *r)
{
	return fmin(detect_p(r, SL_FLOOR), detect_p(r, SL_CEILING));
}

/* The next level above cur that a silence of el s crossed, the one
 * crossed first (its threshold in *at), or 0: levels are crossed in
 * the order of their thresholds, each noted once, none below one noted.
 * So the levels noted depend on the silence, not on when it is looked
 * at (a tick every 200 ms or once at its end, as replay does). */
static int
next_level(const detect_rule *r, double el, int cur, double thr, double pause,
    int sure, double u, double fam, double guess, double *at)
{
	int lv = 0;

	for (int l = cur + 1; l <= 3; l++) {
		double x = level_at(r, l, thr, pause, u, fam, guess);

		if (l == 1 && (detect_p(r, SL_EARLY) < 0 || sure))
			continue;
		if (el > x && (lv == 0 || x <= *at)) {
			lv  = l;
			*at = x;
		}
	}
	return lv;
}

/* Rank i's silence at time now (engine clock): a rank is left behind
 * when it is overdue and the run went on without it. */
static void
check_rank(detect_ctx *c, detect_group *g, uint32_t i, int64_t now)
{
	const detect_rule *r  = c->r;
	st_group          *gs = g->state;
	st_slot           *sl = detect_slot(g, i);
	detect_origin      o;
	double             el, at = 0, due, len, guess;
	int                sure, lv;

	if (!sl->has || sl->ended || sl->nadv < MINLEARN
	    || !went_on_without(gs, sl))
		return;
	el = secs(now - sl->adv_seen);
	if (el <= eff_thr(r, sl))
		return;
	/* A guessed pause holds back no note here: a planned pause stops
	 * every rank, and the others went on. */
	due = due_pause(sl, &sure, &guess, 0);
	while ((lv = next_level(r, el, sl->stalled, eff_thr(r, sl), due, sure,
	            sl->usual, familiar(sl, 0), 0, &at))
	    > 0) {
		sl->stalled = (uint8_t) lv;
		detect_origin_rank(&o, g->slot_rank[i]);
		detect_emit(c, &o, "stall", sev_of(r, lv), DETECT_FIRING, 0,
		    sl->max_step, sl->adv_time + ns_of(at), at, sl->usual,
		    "rank %d (host %s) has not advanced past step %llu for %s "
		    "s while other ranks went on (usual step interval %s)",
		    (int) o.rank, o.hostlen ? o.host : "unknown",
		    (unsigned long long) sl->max_step, detect_fmt(at).s,
		    usual(sl->usual, due,
		        in_phase(sl, &len) != NULL ? sl->ph_name : "")
		        .s);
	}
}

/* The run's silence at time now: no sample from any rank. */
static void
check_run(detect_ctx *c, detect_group *g, int64_t now)
{
	const detect_rule *r  = c->r;
	st_group          *gs = g->state;
	detect_origin      o;
	double             el = secs(now - gs->seen), at = 0;
	int                lv;

	if (el <= min_thr(r))
		return;
	if (gs->dirty)
		refresh(r, g, gs);
	while ((lv = next_level(r, el, gs->silent, gs->thr, gs->due[0].pause,
	            gs->due[0].sure, gs->usual, gs->due[0].fam,
	            gs->due[0].guess, &at))
	    > 0) {
		double  lead    = 0;
		int64_t fs      = first_silent(g, &lead);
		char    who[96] = "";

		gs->silent = (uint8_t) lv;
		if (fs >= 0 && lead < 0)
			snprintf(who, sizeof(who),
			    "; rank %d stopped first, out of the collective "
			    "that others wait in",
			    (int) g->slot_rank[fs]->rank);
		else if (fs >= 0)
			snprintf(who, sizeof(who),
			    "; rank %d stopped first, %s s before the last",
			    (int) g->slot_rank[fs]->rank, detect_fmt(lead).s);
		detect_origin_run(&o, g->run);
		detect_emit(c, &o, "stall", sev_of(r, lv), DETECT_FIRING, 0,
		    gs->max_step, gs->last_time + ns_of(at), at, gs->usual,
		    "no sample from run %s for %s s (usual step interval %s); "
		    "last step %llu%s",
		    detect_name_of(o.run, o.runlen).s, detect_fmt(at).s,
		    usual(gs->usual, gs->due[0].pause, gs->phase).s,
		    (unsigned long long) gs->max_step, who);
	}
}

/*
 * The deadlines missed by time now (engine clock), with the state as the
 * samples left it: the run's silence, and the ranks left behind until
 * the run fell silent (then no rank is; every rank is looked at up to
 * that moment). who: the rank slot to look at (one whose sample is
 * about to change its state), -1 every rank, -2 none. The thresholds
 * do not change between samples, and the levels crossed are noted in
 * the order of their deadlines, so a deadline noticed by a tick or only
 * by the sample that ends the silence gives the same alerts.
 */
static void
check(detect_ctx *c, detect_group *g, int64_t now, int64_t who)
{
	const detect_rule *r    = c->r;
	st_group          *gs   = g->state;
	int64_t            upto = now;
	double             at   = 0;

	if (!gs->has || gs->ended)
		return;
	if (secs(now - gs->seen) > min_thr(r) && !gs->silent) {
		if (gs->dirty)
			refresh(r, g, gs);
		if (next_level(r, secs(now - gs->seen), 0, gs->thr,
		        gs->due[0].pause, gs->due[0].sure, gs->usual,
		        gs->due[0].fam, gs->due[0].guess, &at)
		    > 0) {
			upto = gs->seen + ns_of(at);
			who  = -1;
		}
	}
	if (detect_p(r, SL_RANKS) != 0 && g->nslots >= 2 && !gs->silent) {
		if (who >= 0)
			check_rank(c, g, (uint32_t) who, upto);
		else if (who == -1)
			for (uint32_t i = 0; i < g->nslots; i++)
				check_rank(c, g, i, upto);
	}
	check_run(c, g, now);
}

/* The level of the run's progress stall at a sample stamped t of slot
 * sl that did not advance it. */
static int
progress_level(
    const detect_rule *r, detect_group *g, const st_slot *sl, int64_t t)
{
	st_group *gs = g->state;
	double    el = secs(t - gs->adv_time);

	/* None below the rank's own threshold: the run's is the largest
	 * of its ranks'. */
	if (el <= eff_thr(r, sl))
		return 0;
	if (gs->dirty)
		refresh(r, g, gs);
	return level_for(r, el, gs->thr, gs->due[1].pause, gs->due[1].sure,
	    gs->usual, gs->due[1].fam, gs->due[1].guess);
}

/* When a sample stamped t arrived, on the engine's clock (now: its last
 * tick): vitalsd ticks with arrival times, so it came at now or later,
 * before the next tick; stamped within the longest recent interval
 * between ticks after now, at its own time (a run whose clock agrees
 * with the collector's), else at now or that interval after it (a clock
 * far behind or ahead). Replay ticks with each sample's time: t itself.
 * So the clock's ticks do not move it. */
static int64_t
arrived(const st_group *gs, int64_t now, int64_t t)
{
	int64_t gap = gs->gap_cur > gs->gap_prev ? gs->gap_cur : gs->gap_prev;

	if (gap < SCAN)
		gap = SCAN;

	if (now <= 0)
		return t;
	if (t <= now)
		return now;
	return t - now <= gap ? t : now + gap;
}

static void
st_tick(detect_ctx *c, detect_group *g, int64_t now)
{
	st_group *gs   = g->state;
	int       scan = now - gs->scanned >= SCAN;

	if (gs->tick_at > 0 && now - gs->tick_at > gs->gap_cur)
		gs->gap_cur = now - gs->tick_at;
	if (++gs->gap_n >= TICKWIN) {
		gs->gap_prev = gs->gap_cur;
		gs->gap_cur  = 0;
		gs->gap_n    = 0;
	}
	gs->tick_at = now;
	/* Every rank is looked at once in SCAN of clock (a rank is also
	 * looked at before each of its samples). */
	if (scan)
		gs->scanned = now;
	check(c, g, now, scan ? -1 : -2);
}

static void
st_feed(detect_ctx *c, detect_inst *in, const detect_sample *s)
{
	const detect_rule *r   = c->r;
	detect_group      *g   = in->g;
	st_group          *gs  = g->state;
	st_slot           *sl  = detect_slot(g, in->slot);
	int64_t            t   = s->time_ns;
	int64_t            now = arrived(gs, detect_engine_now(c->e), t);
	detect_origin      o;
	int                lv, adv = 0; /* this sample advanced its rank */

	/* The deadlines missed before it came, whether or not a tick came
	 * since they passed. */
	check(c, g, now, sl->has ? (int64_t) in->slot : -2);
	if (!gs->has) {
		gs->has      = 1;
		gs->max_step = s->step;
		gs->adv_time = gs->last_time = t;
		gs->seen                     = now;
		gs->thr                      = detect_p(r, SL_CEILING);
		gs->usual                    = NAN;
	}
	/* A rank that ended sends again: a new attempt. Its silence since
	 * is no interval to learn from. */
	if (sl->ended) {
		sl->ended    = 0;
		sl->warm     = 2;
		sl->adv_time = sl->last_time = t;
		sl->adv_seen                 = now;
		gs->dirty                    = 1;
		new_attempt(sl, s->step, t);
	}
	if (gs->ended) {
		gs->ended    = 0;
		gs->adv_time = gs->last_time = t;
	}
	if (!sl->has) {
		sl->has       = 1;
		sl->warm      = 2;
		sl->max_step  = s->step;
		sl->last_time = sl->adv_time = t;
		sl->adv_seen                 = now;
		sl->run_adv_at               = gs->adv_n;
		adv                          = 1;
		gs->dirty                    = 1;
		new_attempt(sl, s->step, t);
	} else {
		if (t > sl->last_time)
			sl->last_time = t;
		if (s->step > sl->max_step) {
			double iv = secs(t - sl->adv_time);

			if (sl->warm > 0)
				sl->warm--;
			else if (iv > 0)
				learn(r, sl, iv, sl->max_step,
				    went_on_without(gs, sl),
				    gs->snd_at > sl->adv_time);
			if (sl->stalled)
				rank_advanced(c, sl, s);
			if (sl->t0a == 0)
				sl->t0a = t;
			sl->max_step = s->step;
			sl->adv_time = t;
			sl->adv_seen = now;
			adv          = 1;
			gs->dirty    = 1;
		}
	}
	detect_origin_run(&o, g->run);
	if (gs->silent) {
		double dt = silence(t, gs->last_time);

		detect_emit(c, &o, "stall", sev_of(r, gs->silent),
		    DETECT_RESOLVED, 0, s->step, t, dt, gs->usual,
		    "run %s sends again (rank %d, step %llu) after %s s "
		    "without a sample",
		    detect_name_of(o.run, o.runlen).s, (int) s->rank,
		    (unsigned long long) s->step, detect_fmt(dt).s);
		gs->silent = 0;
	}
	if (t > gs->last_time)
		gs->last_time = t;
	gs->seen = now;
	if (s->step > gs->max_step) {
		gs->max_step = s->step;
		gs->adv_n++;
	}
	/* Progress is any rank's step advancing: a rank catching up after
	 * the others finished is progress too. */
	if (adv) {
		if (gs->progress) {
			double dt = silence(t, gs->adv_time);

			detect_emit(c, &o, "progress_stall",
			    sev_of(r, gs->progress), DETECT_RESOLVED, 0,
			    s->step, t, dt, gs->usual,
			    "run %s advances again: rank %d at step %llu "
			    "after "
			    "%s s",
			    detect_name_of(o.run, o.runlen).s, (int) s->rank,
			    (unsigned long long) s->step, detect_fmt(dt).s);
			gs->progress = 0;
		}
		gs->adv_time = t;
	} else {
		/* A sample without progress past the threshold: the run is
		 * not silent in this stretch (st_kind's snd). */
		if (secs(t - gs->adv_time) > eff_thr(r, sl))
			gs->snd_at = t;
		if (detect_p(r, SL_PROGRESS) != 0
		    && (lv = progress_level(r, g, sl, t)) > gs->progress) {
			gs->progress = (uint8_t) lv;
			detect_emit(c, &o, "progress_stall", sev_of(r, lv),
			    DETECT_FIRING, 0, gs->max_step, t,
			    secs(t - gs->adv_time), gs->usual,
			    "run %s: samples arrive (rank %d) but no rank's "
			    "step has advanced for %s s (run at step %llu; "
			    "usual step interval %s)",
			    detect_name_of(o.run, o.runlen).s, (int) s->rank,
			    detect_fmt(secs(t - gs->adv_time)).s,
			    (unsigned long long) gs->max_step,
			    usual(gs->usual, gs->due[1].pause, gs->phase).s);
		}
	}
	if (s->step >= sl->max_step)
		sl->run_adv_at = gs->adv_n;
	/* Last: the marker that ends a phase is judged inside it (a long
	 * checkpoint's end is no progress stall). */
	if (s->mlen > MARKER_LEN
	    && memcmp(s->metric, MARKER, MARKER_LEN) == 0) {
		phase_marker(sl, s);
		gs->dirty = 1;
	}
}

/* A restart from step `to`: a kind at a step period (a checkpoint every
 * 1000 steps) keeps it, moved back by whole periods to the new attempt
 * (the trainer counts its steps again from the checkpoint); its times
 * say nothing of the new attempt's clock. Other kinds are forgotten. */
static void
restart_kinds(st_slot *sl, uint64_t to)
{
	for (uint32_t i = 0; i < NKIND; i++) {
		st_kind *k = &sl->kind[i];
		uint32_t n = k->n;
		uint64_t p, back;

		if (n < 2 || k->s[n - 1] < k->s[n - 2] + 8) {
			memset(k, 0, sizeof(*k));
			continue;
		}
		p    = k->s[n - 1] - k->s[n - 2];
		back = k->s[n - 1] > to ? (k->s[n - 1] - to + p - 1) / p * p
		                        : 0;
		if (back > k->s[n - 2]) {
			memset(k, 0, sizeof(*k));
			continue;
		}
		if (n == 3 && back > k->s[0]) { /* would be before step 0 */
			memmove(k->s, k->s + 1, 2 * sizeof(k->s[0]));
			memmove(k->iv, k->iv + 1, 2 * sizeof(k->iv[0]));
			k->n = n = 2;
		}
		for (uint32_t j = 0; j < n; j++) {
			k->s[j] -= back;
			k->t[j] = 0;
		}
	}
}

static void
st_rollback(detect_ctx *c, detect_inst *in, const detect_sample *s,
    uint64_t prev_step, int64_t prev_time)
{
	detect_group *g   = in->g;
	st_group     *gs  = g->state;
	st_slot      *sl  = detect_slot(g, in->slot);
	int64_t       now = arrived(gs, detect_engine_now(c->e), s->time_ns);
	detect_origin o;

	(void) prev_step;
	(void) prev_time;
	/* The deadlines missed before it came (see st_feed); it arrived,
	 * so none is missed again after the restart resolved them. */
	check(c, g, now, sl->has ? (int64_t) in->slot : -2);
	if (gs->has)
		gs->seen = now;
	gs->dirty = 1;
	if (sl->has && s->step < sl->max_step) {
		if (sl->stalled)
			rank_advanced(c, sl, s);
		/* The times of the pauses learned belong to the old
		 * attempt; so does the phase it was in. */
		restart_kinds(sl, s->step);
		sl->in_ph    = 0;
		sl->max_step = s->step;
		sl->adv_time = s->time_ns;
		sl->adv_seen = now;
		sl->warm     = 2;
		new_attempt(sl, s->step, s->time_ns);
	}
	if (gs->has && s->step < gs->max_step) {
		/* The silence was the downtime of a restart: it ends here. */
		if (gs->silent) {
			double dt = silence(s->time_ns, gs->last_time);

			detect_origin_run(&o, g->run);
			detect_emit(c, &o, "stall", sev_of(c->r, gs->silent),
			    DETECT_RESOLVED, 0, s->step, s->time_ns, dt,
			    gs->usual,
			    "run %s restarted at step %llu after %s s down "
			    "(it had reached step %llu)",
			    detect_name_of(o.run, o.runlen).s,
			    (unsigned long long) s->step, detect_fmt(dt).s,
			    (unsigned long long) gs->max_step);
			gs->silent = 0;
		}
		if (gs->progress) {
			detect_origin_run(&o, g->run);
			detect_emit(c, &o, "progress_stall",
			    sev_of(c->r, gs->progress), DETECT_RESOLVED, 0,
			    s->step, s->time_ns, NAN, gs->usual,
			    "run %s restarted at step %llu",
			    detect_name_of(o.run, o.runlen).s,
			    (unsigned long long) s->step);
			gs->progress = 0;
		}
		gs->max_step = s->step;
		gs->adv_time = s->time_ns;
		gs->adv_n++;
	}
}

static void
st_end(detect_ctx *c, detect_group *g, uint32_t i, int64_t t)
{
	st_group     *gs = g->state;
	st_slot      *sl = detect_slot(g, i);
	detect_origin o;

	if (!gs->has || !sl->has || sl->ended)
		return;
	/* The deadlines missed before the end came (see st_feed). */
	check(c, g, arrived(gs, detect_engine_now(c->e), t), i);
	sl->ended = 1;
	sl->in_ph = 0;
	gs->dirty = 1;
	if (t < sl->last_time)
		t = sl->last_time;
	if (sl->stalled) {
		detect_origin_rank(&o, g->slot_rank[i]);
		detect_emit(c, &o, "stall", sev_of(c->r, sl->stalled),
		    DETECT_RESOLVED, 0, sl->max_step, t,
		    secs(t - sl->adv_time), sl->usual,
		    "rank %d ended normally at step %llu (closed its "
		    "emitter)",
		    (int) o.rank, (unsigned long long) sl->max_step);
		sl->stalled = 0;
	}
	for (uint32_t j = 0; j < g->nslots; j++) {
		const st_slot *other = detect_slot(g, j);

		if (other->has && !other->ended)
			return;
	}
	gs->ended = 1;
	if (t < gs->last_time)
		t = gs->last_time;
	detect_origin_run(&o, g->run);
	if (gs->silent) {
		detect_emit(c, &o, "stall", sev_of(c->r, gs->silent),
		    DETECT_RESOLVED, 0, gs->max_step, t,
		    secs(t - gs->last_time), gs->usual,
		    "run %s finished: every rank closed normally; last step "
		    "%llu",
		    detect_name_of(o.run, o.runlen).s,
		    (unsigned long long) gs->max_step);
		gs->silent = 0;
	}
	if (gs->progress) {
		detect_emit(c, &o, "progress_stall",
		    sev_of(c->r, gs->progress), DETECT_RESOLVED, 0,
		    gs->max_step, t, secs(t - gs->adv_time), gs->usual,
		    "run %s finished at step %llu: every rank closed normally",
		    detect_name_of(o.run, o.runlen).s,
		    (unsigned long long) gs->max_step);
		gs->progress = 0;
	}
}

const detect_kind detect_kind_stall = {
	.name       = "stall",
	.params     = sl_params,
	.nparams    = sizeof(sl_params) / sizeof(sl_params[0]),
	.severity   = DETECT_CRITICAL,
	.scope      = DETECT_SCOPE_RUN,
	.state_size = st_state_size,
	.slot_size  = st_slot_size,
	.slot_init  = st_slot_init,
	.feed       = st_feed,
	.rollback   = st_rollback,
	.tick       = st_tick,
	.end        = st_end,
};
