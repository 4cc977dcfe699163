#include "collector/exposition.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <math.h>
#include <pcre2.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_MAX 1024
#define HIDDEN_MAX ((size_t) 1 << 20) /* omitted series remembered */

/* Commit latency buckets (seconds). */
static const double buckets[] = { 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10 };
#define NBUCKETS (sizeof(buckets) / sizeof(buckets[0]))

enum { SHOWN = 0, HID_FILTER, HID_LIMIT };

/*
 * One series of a table. key identifies it (raw bytes); labels is its
 * label set already escaped, written once when the series appears and
 * never moved or freed until expo_close, so a scrape may format it after
 * releasing the mutex.
 */
typedef struct ent {
	uint64_t hash;
	char    *key;
	uint32_t keylen;
	uint32_t lablen;
	char    *labels; /* NULL for omitted series */
	double   v;      /* latest value; alert groups: firing count */
	int64_t  t;      /* latest sample time, ns */
	uint64_t u;      /* step; emitter-dropped samples in u2 */
	uint64_t u2;
	uint8_t  hidden;
} ent;

/* Open addressing over an array of entries; nothing is ever removed. */
typedef struct tab {
	ent      *e;
	size_t    n, cap;
	uint32_t *idx; /* entry index + 1; 0: empty */
	size_t    mask;
	size_t    shown, hid_filter, hid_limit;
} tab;

/* What a scrape copies under the mutex. */
typedef struct snap {
	const char *labels;
	uint32_t    lablen;
	double      v;
	int64_t     t;
	uint64_t    u, u2;
} snap;

struct expo {
	size_t       max_series;
	pcre2_code  *re;
	pcre2_match_data *md;

	pthread_mutex_t mu; /* guards everything below */
	tab             series, ranks, groups, firing;
	uint32_t       *last; /* per batch: last sample index of each name */
	uint32_t       *cnt;  /* per batch: samples of each name */
	uint64_t        omitted_filter, omitted_limit; /* samples */
	ingest_stats    is;
	uint64_t        malformed;
	uint64_t        hist[NBUCKETS + 1];
	double          hist_sum;
	uint64_t        hist_count;
	int             blocked;
	char            why[512];
	uint64_t        alerts_lost;

	pthread_mutex_t render_mu; /* one scrape formats at a time */
	snap           *scratch;
	size_t          scratch_cap;
};

void
expo_opts_init(expo_opts *o)
{
	o->max_series = 100000;
	o->filter     = NULL;
}

static uint64_t
hash_bytes(const char *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++) {
		h ^= (uint8_t) p[i];
		h *= 1099511628211ull;
	}
	return h ^ (h >> 29);
}

static void
tab_free(tab *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->e[i].key);
		free(t->e[i].labels);
	}
	free(t->e);
	free(t->idx);
}

static int
tab_rehash(tab *t)
{
	size_t    ncap = t->mask ? (t->mask + 1) * 2 : 1024;
	uint32_t *ni   = calloc(ncap, sizeof(*ni));

	if (ni == NULL)
		return -1;
	for (size_t i = 0; i < t->n; i++) {
		size_t j = t->e[i].hash & (ncap - 1);

		while (ni[j] != 0)
			j = (j + 1) & (ncap - 1);
		ni[j] = (uint32_t) i + 1;
	}
	free(t->idx);
	t->idx  = ni;
	t->mask = ncap - 1;
	return 0;
}

/* The entry for key, or NULL when absent. */
static ent *
tab_find(const tab *t, const char *key, size_t len, uint64_t h)
{
	if (t->idx == NULL)
		return NULL;
	for (size_t j = h & t->mask; t->idx[j] != 0; j = (j + 1) & t->mask) {
		ent *e = &t->e[t->idx[j] - 1];

		if (e->hash == h && e->keylen == len &&
		    memcmp(e->key, key, len) == 0)
			return e;
	}
	return NULL;
}

/* A new entry (labels NULL, values 0), or NULL when out of memory. */
static ent *
tab_add(tab *t, const char *key, size_t len, uint64_t h)
{
	ent *e;
	size_t j;

	if ((t->n + 1) * 2 > t->mask + 1 && tab_rehash(t) != 0)
		return NULL;
	if (t->n == t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 256;
		ent   *ne = realloc(t->e, nc * sizeof(*ne));

		if (ne == NULL)
			return NULL;
		t->e   = ne;
		t->cap = nc;
	}
	e = &t->e[t->n];
	memset(e, 0, sizeof(*e));
	if ((e->key = malloc(len ? len : 1)) == NULL)
		return NULL;
	memcpy(e->key, key, len);
	e->keylen = (uint32_t) len;
	e->hash   = h;
	for (j = h & t->mask; t->idx[j] != 0; j = (j + 1) & t->mask)
		;
	t->idx[j] = (uint32_t) t->n + 1;
	t->n++;
	return e;
}

/* ---- output buffer ------------------------------------------------------ */

static int
buf_room(expo_buf *b, size_t more)
{
	size_t nc;
	char  *np;

	if (b->oom)
		return -1;
	if (b->n + more + 1 <= b->cap)
		return 0;
	nc = b->cap ? b->cap : 4096;
	while (nc < b->n + more + 1)
		nc *= 2;
	if ((np = realloc(b->p, nc)) == NULL) {
		b->oom = 1;
		return -1;
	}
	b->p   = np;
	b->cap = nc;
	return 0;
}

void
expo_buf_add(expo_buf *b, const char *s, size_t len)
{
	if (buf_room(b, len) != 0)
		return;
	memcpy(b->p + b->n, s, len);
	b->n += len;
	b->p[b->n] = 0;
}

void
expo_buf_printf(expo_buf *b, const char *fmt, ...)
{
	va_list ap;
	int     n;

	if (buf_room(b, 256) != 0)
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t) n >= b->cap - b->n) {
		if (buf_room(b, (size_t) n) != 0)
			return;
		va_start(ap, fmt);
		vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
		va_end(ap);
	}
	b->n += (size_t) n;
}

void
expo_buf_label(expo_buf *b, const char *s, size_t len)
{
	if (buf_room(b, 2 * len) != 0)
		return;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (c == '\\' || c == '"') {
			b->p[b->n++] = '\\';
			b->p[b->n++] = c;
		} else if (c == '\n') {
			b->p[b->n++] = '\\';
			b->p[b->n++] = 'n';
		} else {
			b->p[b->n++] = c;
		}
	}
	b->p[b->n] = 0;
}

void
expo_buf_double(expo_buf *b, double v)
{
	char s[40];
	int  n;

	if (isnan(v)) {
		expo_buf_add(b, "NaN", 3);
		return;
	}
	if (isinf(v)) {
		expo_buf_add(b, v > 0 ? "+Inf" : "-Inf", 4);
		return;
	}
	if (v == (double) (int64_t) v && fabs(v) < 1e15) {
		n = snprintf(s, sizeof(s), "%lld", (long long) v);
	} else {
		n = snprintf(s, sizeof(s), "%.15g", v);
		if (strtod(s, NULL) != v)
			n = snprintf(s, sizeof(s), "%.17g", v);
	}
	expo_buf_add(b, s, (size_t) n);
}

void
expo_buf_family(expo_buf *b, int om, const char *name, const char *type,
    const char *help)
{
	const char *suffix = !om && strcmp(type, "counter") == 0 ? "_total" : "";

	expo_buf_printf(b, "# HELP %s%s %s\n# TYPE %s%s %s\n", name, suffix,
	    help, name, suffix, type);
}

/* ---- open, close -------------------------------------------------------- */

int
expo_open(const expo_opts *o, expo **out, char *err, size_t errlen)
{
	expo *x = calloc(1, sizeof(*x));

	*out = NULL;
	if (x == NULL)
		goto oom;
	x->max_series = o->max_series;
	x->last = malloc(65536 * sizeof(*x->last));
	x->cnt  = malloc(65536 * sizeof(*x->cnt));
	if (x->last == NULL || x->cnt == NULL)
		goto oom;
	if (o->filter != NULL) {
		int        code;
		PCRE2_SIZE off;

		x->re = pcre2_compile((PCRE2_SPTR) o->filter,
		    PCRE2_ZERO_TERMINATED, PCRE2_UTF, &code, &off, NULL);
		if (x->re == NULL) {
			PCRE2_UCHAR msg[256];

			pcre2_get_error_message(code, msg, sizeof(msg));
			snprintf(err, errlen,
			    "--http-metrics '%s': at offset %zu: %s", o->filter,
			    (size_t) off, (const char *) msg);
			free(x->last);
			free(x->cnt);
			free(x);
			return -1;
		}
		pcre2_jit_compile(x->re, PCRE2_JIT_COMPLETE);
		if ((x->md = pcre2_match_data_create_from_pattern(x->re, NULL))
		    == NULL)
			goto oom;
	}
	pthread_mutex_init(&x->mu, NULL);
	pthread_mutex_init(&x->render_mu, NULL);
	*out = x;
	return 0;
oom:
	snprintf(err, errlen, "out of memory");
	if (x != NULL) {
		pcre2_code_free(x->re);
		free(x->last);
		free(x->cnt);
		free(x);
	}
	return -1;
}

void
expo_close(expo *x)
{
	if (x == NULL)
		return;
	tab_free(&x->series);
	tab_free(&x->ranks);
	tab_free(&x->groups);
	tab_free(&x->firing);
	pcre2_match_data_free(x->md);
	pcre2_code_free(x->re);
	free(x->last);
	free(x->cnt);
	free(x->scratch);
	pthread_mutex_destroy(&x->mu);
	pthread_mutex_destroy(&x->render_mu);
	free(x);
}

/* ---- publishing ------------------------------------------------------- */

/*
 * Label text: pairs of (name, value, length); a NULL value is left out.
 * Returns a malloc'd string or NULL when out of memory.
 */
static char *
make_labels(uint32_t *lablen, const char *n1, const char *v1, size_t l1,
    const char *n2, const char *v2, size_t l2, const char *n3,
    const char *v3, size_t l3, const char *n4, const char *v4, size_t l4)
{
	expo_buf    b = { 0 };
	const char *n[4] = { n1, n2, n3, n4 }, *v[4] = { v1, v2, v3, v4 };
	size_t      l[4] = { l1, l2, l3, l4 };
	int         first = 1;

	for (int i = 0; i < 4; i++) {
		if (n[i] == NULL || v[i] == NULL)
			continue;
		if (!first)
			expo_buf_add(&b, ",", 1);
		first = 0;
		expo_buf_printf(&b, "%s=\"", n[i]);
		expo_buf_label(&b, v[i], l[i]);
		expo_buf_add(&b, "\"", 1);
	}
	if (b.oom || b.p == NULL) {
		free(b.p);
		return NULL;
	}
	*lablen = (uint32_t) b.n;
	{
		/* Kept for the collector's life: no spare room. */
		char *fit = realloc(b.p, b.n + 1);

		return fit != NULL ? fit : b.p;
	}
}

/* Whether a new metric name is exposed (filter). */
static int
name_allowed(expo *x, const char *m, size_t mlen)
{
	if (x->re == NULL)
		return 1;
	return pcre2_match(x->re, (PCRE2_SPTR) m, mlen, 0, 0, x->md, NULL) >= 0;
}

/*
 * The entry of a series, created if new: exposed if the table has room
 * (and allowed), else remembered as omitted while HIDDEN_MAX allows.
 * Returns NULL when it cannot be tracked (counted by the caller).
 */
static ent *
get_series(expo *x, tab *t, const char *key, size_t klen, int allowed,
    char *(*labels)(const void *, uint32_t *), const void *arg)
{
	uint64_t h = hash_bytes(key, klen);
	ent     *e = tab_find(t, key, klen, h);

	if (e != NULL)
		return e;
	if (!allowed || t->shown >= x->max_series) {
		if (t->hid_filter + t->hid_limit >= HIDDEN_MAX)
			return NULL;
		if ((e = tab_add(t, key, klen, h)) == NULL)
			return NULL;
		e->hidden = allowed ? HID_LIMIT : HID_FILTER;
		if (allowed)
			t->hid_limit++;
		else
			t->hid_filter++;
		return e;
	}
	if ((e = tab_add(t, key, klen, h)) == NULL)
		return NULL;
	if ((e->labels = labels(arg, &e->lablen)) == NULL) {
		/* Out of memory: keep it, omitted. */
		e->hidden = HID_LIMIT;
		t->hid_limit++;
		return e;
	}
	t->shown++;
	return e;
}

typedef struct series_arg {
	const wire_batch *b;
	const char       *m;
	size_t            mlen;
} series_arg;

static char *
series_labels(const void *arg, uint32_t *len)
{
	const series_arg *a = arg;
	char              rank[16];

	snprintf(rank, sizeof(rank), "%d", (int) a->b->id.rank);
	return make_labels(len, "run", a->b->id.run, a->b->id.run_len,
	    "metric", a->m, a->mlen, "rank", a->b->id.rank >= 0 ? rank : NULL,
	    strlen(rank), "host", a->b->id.host_len ? a->b->id.host : NULL,
	    a->b->id.host_len);
}

static char *
rank_labels(const void *arg, uint32_t *len)
{
	const wire_batch *b = arg;
	char              rank[16];

	snprintf(rank, sizeof(rank), "%d", (int) b->id.rank);
	return make_labels(len, "run", b->id.run, b->id.run_len, "rank",
	    b->id.rank >= 0 ? rank : NULL, strlen(rank), NULL, NULL, 0, NULL,
	    NULL, 0);
}

/* Key of a series: run, metric, host (each length-prefixed) and rank. */
static size_t
series_key(char *k, const wire_batch *b, const char *m, size_t mlen)
{
	size_t n = 0;

	k[n++] = (char) b->id.run_len;
	memcpy(k + n, b->id.run, b->id.run_len);
	n += b->id.run_len;
	k[n++] = (char) mlen;
	memcpy(k + n, m, mlen);
	n += mlen;
	k[n++] = (char) b->id.host_len;
	memcpy(k + n, b->id.host, b->id.host_len);
	n += b->id.host_len;
	memcpy(k + n, &b->id.rank, sizeof(b->id.rank));
	return n + sizeof(b->id.rank);
}

/*
 * The batch's last sample of each name becomes its series' latest value
 * (samples of a name are in order within a batch), unless the batch is
 * late (detect_late: a spool sent after the run went on leaves the newer
 * value).
 */
void
expo_batch(expo *x, const wire_batch *b)
{
	char       key[KEY_MAX];
	size_t     off = 0, klen;
	uint64_t   maxstep = 0;
	int64_t    maxt    = 0;
	wire_sample ws;
	ent       *e;

	if (b->nsamples == 0)
		return;
	pthread_mutex_lock(&x->mu);
	for (uint32_t i = 0; i < b->nnames; i++) {
		x->last[i] = UINT32_MAX;
		x->cnt[i]  = 0;
	}
	for (uint32_t i = 0; i < b->nsamples; i++) {
		wire_batch_sample(b, i, &ws);
		x->last[ws.name] = i;
		x->cnt[ws.name]++;
		if (ws.step > maxstep)
			maxstep = ws.step;
		if (ws.time_ns > maxt)
			maxt = ws.time_ns;
	}
	for (uint32_t i = 0; i < b->nnames; i++) {
		size_t      mlen;
		const char *m = wire_names_next(b, &off, &mlen);
		series_arg  a = { b, m, mlen };

		if (m == NULL)
			break;
		if (x->last[i] == UINT32_MAX)
			continue;
		klen = series_key(key, b, m, mlen);
		e    = tab_find(&x->series, key, klen, hash_bytes(key, klen));
		if (e == NULL)
			e = get_series(x, &x->series, key, klen,
			    name_allowed(x, m, mlen), series_labels, &a);
		if (e == NULL || e->hidden != SHOWN) {
			if (e != NULL && e->hidden == HID_FILTER)
				x->omitted_filter += x->cnt[i];
			else
				x->omitted_limit += x->cnt[i];
			continue;
		}
		wire_batch_sample(b, x->last[i], &ws);
		if (detect_late(ws.time_ns, ws.step, e->t, e->u))
			continue;
		e->v = ws.value;
		e->t = ws.time_ns;
		e->u = ws.step;
	}
	klen = 0;
	key[klen++] = (char) b->id.run_len;
	memcpy(key + klen, b->id.run, b->id.run_len);
	klen += b->id.run_len;
	memcpy(key + klen, &b->id.rank, sizeof(b->id.rank));
	klen += sizeof(b->id.rank);
	e = get_series(x, &x->ranks, key, klen, 1, rank_labels, b);
	if (e != NULL && e->hidden == SHOWN
	    && !detect_late(maxt, maxstep, e->t, e->u)) {
		e->u  = maxstep;
		e->t  = maxt;
		e->u2 = b->dropped;
	}
	pthread_mutex_unlock(&x->mu);
}

void
expo_commit(expo *x, int64_t took_ns, const ingest_stats *is,
    uint64_t malformed)
{
	double s = (double) took_ns / 1e9;
	size_t i;

	pthread_mutex_lock(&x->mu);
	x->is        = *is;
	x->malformed = malformed;
	for (i = 0; i < NBUCKETS && s > buckets[i]; i++)
		;
	x->hist[i]++;
	x->hist_sum += s;
	x->hist_count++;
	pthread_mutex_unlock(&x->mu);
}

void
expo_blocked(expo *x, const char *reason)
{
	pthread_mutex_lock(&x->mu);
	x->blocked = reason != NULL;
	snprintf(x->why, sizeof(x->why), "%s", reason ? reason : "");
	pthread_mutex_unlock(&x->mu);
}

typedef struct group_arg {
	const detect_alert *a;
	const char         *sev;
} group_arg;

static char *
group_labels(const void *arg, uint32_t *len)
{
	const group_arg *g = arg;

	return make_labels(len, "run", g->a->run, g->a->runlen, "rule",
	    g->a->rule, strlen(g->a->rule), "severity", g->sev,
	    strlen(g->sev), NULL, NULL, 0);
}

/*
 * Firing alerts are counted per (run, rule, severity). Each alert's own
 * identity (rule, run, rank, host, metric) is remembered with whether it
 * fires and in which group it counts, so a resolution without a firing (a
 * rules reload) never counts below zero, a firing seen twice counts once,
 * and an alert whose severity changes while it fires (a spike becoming a
 * divergence) moves from one group to the other.
 */
void
expo_alert(expo *x, const detect_alert *a)
{
	char        gk[KEY_MAX], ik[KEY_MAX];
	size_t      gn = 0, in = 0, rl = strlen(a->rule);
	const char *sev = detect_severity_name(a->severity);
	group_arg   g   = { a, sev };
	ent        *id, *grp = NULL;
	uint64_t    h;

	if (rl > 255 || a->runlen > 255 || a->mlen > 255 || a->hostlen > 255)
		return;
	ik[in++] = (char) rl;
	memcpy(ik + in, a->rule, rl);
	in += rl;
	ik[in++] = (char) a->runlen;
	memcpy(ik + in, a->run, a->runlen);
	in += a->runlen;
	memcpy(gk, ik, in);
	gn       = in;
	gk[gn++] = (char) a->severity;
	ik[in++] = (char) a->mlen;
	memcpy(ik + in, a->metric, a->mlen);
	in += a->mlen;
	ik[in++] = (char) a->hostlen;
	memcpy(ik + in, a->host, a->hostlen);
	in += a->hostlen;
	memcpy(ik + in, &a->rank, sizeof(a->rank));
	in += sizeof(a->rank);
	h = hash_bytes(ik, in);

	pthread_mutex_lock(&x->mu);
	id = tab_find(&x->firing, ik, in, h);
	if (a->state != DETECT_FIRING) {
		if (id != NULL && id->u) {
			x->groups.e[id->u2 - 1].v -= 1;
			id->u = 0;
		}
		goto out;
	}
	grp = get_series(x, &x->groups, gk, gn, 1, group_labels, &g);
	if (id == NULL && x->firing.n < HIDDEN_MAX)
		id = tab_add(&x->firing, ik, in, h);
	if (grp == NULL || grp->hidden != SHOWN || id == NULL) {
		x->alerts_lost++;
		goto out;
	}
	if (id->u && id->u2 == (uint64_t) (grp - x->groups.e) + 1)
		goto out;
	if (id->u)
		x->groups.e[id->u2 - 1].v -= 1;
	grp->v += 1;
	id->u  = 1;
	id->u2 = (uint64_t) (grp - x->groups.e) + 1;
out:
	pthread_mutex_unlock(&x->mu);
}

int
expo_health(expo *x, char *why, size_t len)
{
	int blocked;

	pthread_mutex_lock(&x->mu);
	blocked = x->blocked;
	snprintf(why, len, "%s", blocked ? x->why : "ok");
	pthread_mutex_unlock(&x->mu);
	return blocked;
}

/* ---- rendering ---------------------------------------------------------- */

#define TAKE_CHUNK 4096 /* entries copied per hold of the mutex */

/*
 * Copy the exposed entries of t into the scratch array (render_mu held,
 * mu not). The mutex is taken for TAKE_CHUNK entries at a time, so a
 * publishing thread waits for one chunk at most, never for the whole
 * table. Entries are only ever appended and never change whether they
 * are exposed, so the entries present when the copy starts are copied
 * whole; those added meanwhile wait for the next scrape.
 */
static size_t
take(expo *x, const tab *t)
{
	size_t n0, shown, k = 0;

	pthread_mutex_lock(&x->mu);
	n0    = t->n;
	shown = t->shown;
	pthread_mutex_unlock(&x->mu);
	if (shown > x->scratch_cap) {
		size_t nc = shown * 2;
		snap  *ns = realloc(x->scratch, nc * sizeof(*ns));

		if (ns == NULL)
			return 0;
		x->scratch     = ns;
		x->scratch_cap = nc;
	}
	for (size_t i0 = 0; i0 < n0; i0 += TAKE_CHUNK) {
		size_t end = i0 + TAKE_CHUNK < n0 ? i0 + TAKE_CHUNK : n0;

		pthread_mutex_lock(&x->mu);
		for (size_t i = i0; i < end && k < shown; i++) {
			const ent *e = &t->e[i];

			if (e->hidden != SHOWN)
				continue;
			x->scratch[k].labels = e->labels;
			x->scratch[k].lablen = e->lablen;
			x->scratch[k].v      = e->v;
			x->scratch[k].t      = e->t;
			x->scratch[k].u      = e->u;
			x->scratch[k].u2     = e->u2;
			k++;
		}
		pthread_mutex_unlock(&x->mu);
	}
	return k;
}

static void
sample_line(expo_buf *b, const char *name, size_t nlen, const snap *s,
    double v)
{
	if (buf_room(b, nlen + s->lablen + 4) != 0)
		return;
	memcpy(b->p + b->n, name, nlen);
	b->n += nlen;
	b->p[b->n++] = '{';
	memcpy(b->p + b->n, s->labels, s->lablen);
	b->n += s->lablen;
	b->p[b->n++] = '}';
	b->p[b->n++] = ' ';
	expo_buf_double(b, v);
	expo_buf_add(b, "\n", 1);
}

static void
counter(expo_buf *b, int om, const char *name, const char *help, uint64_t v)
{
	expo_buf_family(b, om, name, "counter", help);
	expo_buf_printf(b, "%s_total %llu\n", name, (unsigned long long) v);
}

static void
gauge(expo_buf *b, int om, const char *name, const char *help, double v)
{
	expo_buf_family(b, om, name, "gauge", help);
	expo_buf_printf(b, "%s ", name);
	expo_buf_double(b, v);
	expo_buf_add(b, "\n", 1);
}

void
expo_render(expo *x, int om, const expo_live *live, expo_buf *out)
{
	size_t       n;
	ingest_stats is;
	uint64_t     hist[NBUCKETS + 1], hcount, malformed, lost;
	uint64_t     of, ol, shown, hf, hl;
	double       hsum, cum = 0;
	int          blocked;

	pthread_mutex_lock(&x->render_mu);

	/* Latest values: copied under the mutex, formatted after. */
	n = take(x, &x->series);
	pthread_mutex_lock(&x->mu);
	shown = x->series.shown;
	hf    = x->series.hid_filter;
	hl    = x->series.hid_limit;
	of    = x->omitted_filter;
	ol    = x->omitted_limit;
	pthread_mutex_unlock(&x->mu);
	expo_buf_family(out, om, "vitals_value", "gauge",
	    "Latest stored value of each training metric series (its name "
	    "in the metric label).");
	for (size_t i = 0; i < n; i++)
		sample_line(out, "vitals_value", 12, &x->scratch[i], x->scratch[i].v);

	n = take(x, &x->ranks);
	expo_buf_family(out, om, "vitals_step", "gauge",
	    "Highest training step stored of each run and rank.");
	for (size_t i = 0; i < n; i++)
		sample_line(out, "vitals_step", 11, &x->scratch[i],
		    (double) x->scratch[i].u);
	expo_buf_family(out, om, "vitals_last_sample_timestamp_seconds",
	    "gauge",
	    "Time of the latest sample stored of each run and rank (the "
	    "trainer's clock), seconds since the epoch.");
	for (size_t i = 0; i < n; i++)
		sample_line(out, "vitals_last_sample_timestamp_seconds", 36,
		    &x->scratch[i], (double) x->scratch[i].t / 1e9);
	expo_buf_family(out, om, "vitals_emitter_dropped_samples", "counter",
	    "Samples the emitter of each run and rank dropped before sending "
	    "(its queue was full), since it started.");
	for (size_t i = 0; i < n; i++)
		sample_line(out, "vitals_emitter_dropped_samples_total", 36,
		    &x->scratch[i], (double) x->scratch[i].u2);

	n = take(x, &x->groups);
	expo_buf_family(out, om, "vitals_alerts_firing", "gauge",
	    "Alerts firing now, per run, rule and severity.");
	for (size_t i = 0; i < n; i++)
		sample_line(out, "vitals_alerts_firing", 20, &x->scratch[i],
		    x->scratch[i].v);

	pthread_mutex_lock(&x->mu);
	is        = x->is;
	malformed = x->malformed;
	memcpy(hist, x->hist, sizeof(hist));
	hsum   = x->hist_sum;
	hcount = x->hist_count;
	lost   = x->alerts_lost;
	blocked = x->blocked;
	pthread_mutex_unlock(&x->mu);
	pthread_mutex_unlock(&x->render_mu);

	counter(out, om, "vitals_samples_stored", "Samples stored.",
	    is.samples);
	counter(out, om, "vitals_batches_stored", "Batches stored.",
	    is.batches);
	counter(out, om, "vitals_commits", "Store transactions committed.",
	    is.commits);
	counter(out, om, "vitals_batches_duplicate",
	    "Batches received again after being stored (discarded).",
	    is.duplicates);
	counter(out, om, "vitals_batches_refused",
	    "Batches refused by the store (an emitter's inconsistent "
	    "identity).",
	    is.rejected);
	counter(out, om, "vitals_messages_malformed",
	    "Messages that failed validation (never stored).", malformed);
	counter(out, om, "vitals_samples_refused",
	    "Samples refused because their series was past a series cap.",
	    is.refused);
	gauge(out, om, "vitals_store_writable",
	    "1 while the store takes writes, 0 while it refuses them (a "
	    "full disk: emitters keep their samples; /healthz says why).",
	    blocked ? 0 : 1);
	gauge(out, om, "vitals_series", "Series in the store.",
	    (double) is.series);

	expo_buf_family(out, om, "vitals_commit_duration_seconds", "histogram",
	    "Time to apply and commit a group of batches.");
	for (size_t i = 0; i <= NBUCKETS; i++) {
		cum += (double) hist[i];
		if (i < NBUCKETS)
			expo_buf_printf(out,
			    "vitals_commit_duration_seconds_bucket{le=\"%g\"} "
			    "%.0f\n",
			    buckets[i], cum);
		else
			expo_buf_printf(out,
			    "vitals_commit_duration_seconds_bucket{le=\"+Inf\"}"
			    " %.0f\n",
			    cum);
	}
	expo_buf_printf(out, "vitals_commit_duration_seconds_sum ");
	expo_buf_double(out, hsum);
	expo_buf_printf(out, "\nvitals_commit_duration_seconds_count %llu\n",
	    (unsigned long long) hcount);

	if (live->db_bytes >= 0)
		gauge(out, om, "vitals_database_size_bytes",
		    "Size of the store's data file.", (double) live->db_bytes);
	if (live->detect_on) {
		gauge(out, om, "vitals_detection_queue_bytes",
		    "Bytes of stored batches waiting for the anomaly rules.",
		    (double) live->detect_bytes);
	}

	gauge(out, om, "vitals_http_series_exposed",
	    "vitals_value series on this page.", (double) shown);
	expo_buf_family(out, om, "vitals_http_series_omitted", "gauge",
	    "vitals_value series left out: their metric name does not match "
	    "--http-metrics (filter), or past --http-max-series (limit).");
	expo_buf_printf(out,
	    "vitals_http_series_omitted{reason=\"filter\"} %llu\n"
	    "vitals_http_series_omitted{reason=\"limit\"} %llu\n",
	    (unsigned long long) hf, (unsigned long long) hl);
	expo_buf_family(out, om, "vitals_http_samples_omitted", "counter",
	    "Samples stored but not exposed, by the reason of their "
	    "series.");
	expo_buf_printf(out,
	    "vitals_http_samples_omitted_total{reason=\"filter\"} %llu\n"
	    "vitals_http_samples_omitted_total{reason=\"limit\"} %llu\n",
	    (unsigned long long) of, (unsigned long long) ol);
	counter(out, om, "vitals_http_alerts_untracked",
	    "Alert transitions not counted in vitals_alerts_firing (past "
	    "its bound).",
	    lost);
}
