#include "collector/alertmanager.h"

#include <curl/curl.h>
#include <json-c/json.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector/http_client.h"

#define BACKOFF_MIN_MS 1000

/* An alert as Alertmanager is told about it. */
typedef struct am_alert {
	char    *rule, *kind, *run, *host, *metric, *message;
	int      severity;
	int32_t  rank;
	uint64_t step;
	double   value, baseline;
	int64_t  starts_ns;
} am_alert;

/* One Alertmanager. pending: resolutions not yet delivered, oldest
 * first. */
typedef struct target {
	char         *url;  /* .../api/v2/alerts */
	CURL         *curl; /* the thread's */
	json_object **pending;
	size_t        npend;
	int           dirty; /* the firing set changed since the last post */
	int64_t       next_resend, retry_at, backoff_ms; /* monotonic ms */
	uint64_t      failed_in_row;
} target;

struct alertmgr {
	int       resend_ms, timeout_ms;
	pthread_t thread;
	int       started;

	pthread_mutex_t mu; /* guards everything below */
	pthread_cond_t  wake;
	target          t[ALERTMGR_URLS_MAX];
	size_t          nt;
	am_alert       *firing[ALERTMGR_FIRING_MAX];
	size_t          nfiring;
	alertmgr_stats  st;
	int             stop;
};

void
alertmgr_opts_init(alertmgr_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->resend_ms  = 30000;
	o->timeout_ms = 5000;
}

static int64_t
clock_ms(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
alert_free(am_alert *a)
{
	if (a == NULL)
		return;
	free(a->rule);
	free(a->kind);
	free(a->run);
	free(a->host);
	free(a->metric);
	free(a->message);
	free(a);
}

static char *
dup_n(const char *s, size_t n)
{
	char *d = malloc(n + 1);

	if (d != NULL) {
		memcpy(d, s, n);
		d[n] = 0;
	}
	return d;
}

static am_alert *
alert_copy(const detect_alert *a)
{
	am_alert *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	c->rule     = strdup(a->rule);
	c->kind     = strdup(a->kind);
	c->run      = dup_n(a->run, a->runlen);
	c->host     = dup_n(a->host, a->hostlen);
	c->metric   = dup_n(a->metric, a->mlen);
	c->message  = strdup(a->message ? a->message : "");
	c->severity = a->severity;
	c->rank     = a->rank;
	c->step     = a->step;
	c->value    = a->value;
	c->baseline = a->baseline;
	if (c->rule == NULL || c->kind == NULL || c->run == NULL
	    || c->host == NULL || c->metric == NULL || c->message == NULL) {
		alert_free(c);
		return NULL;
	}
	return c;
}

/* Whether a transition is about the alert c (same rule and series). */
static int
same(const am_alert *c, const detect_alert *a)
{
	return c->rank == a->rank && strcmp(c->rule, a->rule) == 0
	    && strlen(c->run) == a->runlen
	    && memcmp(c->run, a->run, a->runlen) == 0
	    && strlen(c->metric) == a->mlen
	    && memcmp(c->metric, a->metric, a->mlen) == 0
	    && strlen(c->host) == a->hostlen
	    && memcmp(c->host, a->host, a->hostlen) == 0;
}

/* RFC 3339 in UTC with milliseconds. */
static void
rfc3339(char *out, size_t len, int64_t ns)
{
	time_t    s = (time_t) (ns / 1000000000ll);
	struct tm tm;

	if (ns < 0)
		s = 0;
	gmtime_r(&s, &tm);
	snprintf(out, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
	    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
	    tm.tm_min, tm.tm_sec, (int) ((ns % 1000000000ll) / 1000000));
}

static void
add_str(json_object *o, const char *k, const char *v)
{
	if (v != NULL && v[0] != 0)
		json_object_object_add(o, k, json_object_new_string(v));
}

static void
fmt_double(char *out, size_t len, double v)
{
	if (isnan(v))
		snprintf(out, len, "NaN");
	else if (isinf(v))
		snprintf(out, len, v > 0 ? "+Inf" : "-Inf");
	else
		snprintf(out, len, "%.9g", v);
}

/* The postable alert (Alertmanager API v2); ends_ns 0: none. */
static json_object *
alert_json(const am_alert *a, int64_t ends_ns)
{
	json_object *o = json_object_new_object(), *l, *an;
	char         buf[64];

	if (o == NULL)
		return NULL;
	l  = json_object_new_object();
	an = json_object_new_object();
	json_object_object_add(o, "labels", l);
	json_object_object_add(o, "annotations", an);
	add_str(l, "alertname", a->rule);
	add_str(l, "run", a->run);
	if (a->rank >= 0) {
		snprintf(buf, sizeof(buf), "%d", (int) a->rank);
		add_str(l, "rank", buf);
	}
	add_str(l, "host", a->host);
	add_str(l, "metric", a->metric);
	add_str(l, "severity", detect_severity_name(a->severity));
	add_str(l, "kind", a->kind);
	add_str(an, "summary", a->message);
	fmt_double(buf, sizeof(buf), a->value);
	add_str(an, "value", buf);
	if (!isnan(a->baseline)) {
		fmt_double(buf, sizeof(buf), a->baseline);
		add_str(an, "baseline", buf);
	}
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long) a->step);
	add_str(an, "step", buf);
	rfc3339(buf, sizeof(buf), a->starts_ns);
	add_str(o, "startsAt", buf);
	if (ends_ns != 0) {
		rfc3339(buf, sizeof(buf), ends_ns);
		add_str(o, "endsAt", buf);
	}
	return o;
}

/* Append a resolution to a target's queue; the oldest goes when full. */
static void
push_pending(alertmgr *am, target *t, json_object *o)
{
	if (t->npend == ALERTMGR_PENDING_MAX) {
		json_object_put(t->pending[0]);
		memmove(t->pending, t->pending + 1,
		    (t->npend - 1) * sizeof(*t->pending));
		t->npend--;
		am->st.dropped++;
	}
	t->pending[t->npend++] = json_object_get(o);
}

/* Queue the resolution of c at ends_ns for every Alertmanager. */
static void
resolve(alertmgr *am, const am_alert *c, int64_t ends_ns)
{
	json_object *o;

	if (ends_ns <= c->starts_ns)
		ends_ns = c->starts_ns + 1000000;
	if ((o = alert_json(c, ends_ns)) == NULL) {
		am->st.dropped++;
		return;
	}
	for (size_t k = 0; k < am->nt; k++)
		push_pending(am, &am->t[k], o);
	json_object_put(o);
}

void
alertmgr_alert(alertmgr *am, const detect_alert *a)
{
	size_t    i;
	am_alert *c;

	pthread_mutex_lock(&am->mu);
	for (i = 0; i < am->nfiring && !same(am->firing[i], a); i++)
		;
	if (a->state == DETECT_FIRING) {
		if ((c = alert_copy(a)) == NULL
		    || (i == am->nfiring && i == ALERTMGR_FIRING_MAX)) {
			am->st.dropped++;
			alert_free(c);
			goto out;
		}
		/* Firing again (a new value): the same alert to
		 * Alertmanager, so it keeps its start; with another severity
		 * or kind (its labels), the old one is resolved. */
		c->starts_ns = a->time_ns;
		if (i < am->nfiring) {
			am_alert *old = am->firing[i];

			if (old->severity == c->severity
			    && strcmp(old->kind, c->kind) == 0)
				c->starts_ns = old->starts_ns;
			else
				resolve(am, old, a->time_ns);
			alert_free(old);
		} else {
			am->nfiring++;
		}
		am->firing[i] = c;
	} else {
		if ((c = alert_copy(a)) == NULL) {
			am->st.dropped++;
			goto out;
		}
		c->starts_ns = a->time_ns;
		if (i < am->nfiring) {
			/* Labels as it fired (its severity, its kind). */
			am->firing[i]->value = c->value;
			am->firing[i]->step  = c->step;
			free(am->firing[i]->message);
			am->firing[i]->message = c->message;
			c->message             = NULL;
			resolve(am, am->firing[i], a->time_ns);
			alert_free(am->firing[i]);
			am->firing[i] = am->firing[--am->nfiring];
		} else {
			resolve(am, c, a->time_ns);
		}
		alert_free(c);
	}
	for (size_t k = 0; k < am->nt; k++)
		am->t[k].dirty = 1;
	pthread_cond_signal(&am->wake);
out:
	pthread_mutex_unlock(&am->mu);
}

void
alertmgr_get_stats(alertmgr *am, alertmgr_stats *out)
{
	pthread_mutex_lock(&am->mu);
	*out         = am->st;
	out->firing  = am->nfiring;
	out->pending = 0;
	for (size_t k = 0; k < am->nt; k++)
		out->pending += am->t[k].npend;
	pthread_mutex_unlock(&am->mu);
}

/*
 * Post body to t. Returns the HTTP status, or 0 with the reason in why
 * (no connection, a timeout).
 */
static long
post(alertmgr *am, target *t, const char *body, http_reply *r, char *why,
    size_t len)
{
	struct curl_slist *hdr = NULL;
	http_post_req      q   = { 0 };
	long               code;

	hdr       = curl_slist_append(hdr, "Content-Type: application/json");
	q.url     = t->url;
	q.headers = hdr;
	q.body    = body;
	q.len     = strlen(body);
	q.timeout_ms = (long) am->timeout_ms;
	code         = http_post(t->curl, &q, r, why, len);
	curl_slist_free_all(hdr);
	return code;
}

/*
 * One post to t of its pending resolutions and every firing alert
 * (mutex held on entry and on return; released while posting).
 */
static void
deliver(alertmgr *am, target *t)
{
	json_object *arr = json_object_new_array();
	size_t       k   = t->npend;
	int64_t      now = clock_ms(CLOCK_MONOTONIC);
	int64_t      ends;
	char        *body = NULL, why[CURL_ERROR_SIZE + 64];
	const char  *s;
	http_reply   r;
	long         code;

	if (arr == NULL)
		return;
	ends = clock_ms(CLOCK_REALTIME) * 1000000
	    + (int64_t) 4 * am->resend_ms * 1000000;
	for (size_t i = 0; i < k; i++)
		json_object_array_add(arr, json_object_get(t->pending[i]));
	for (size_t i = 0; i < am->nfiring; i++) {
		json_object *o = alert_json(am->firing[i], ends);

		if (o != NULL)
			json_object_array_add(arr, o);
	}
	s = json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PLAIN);
	if (s != NULL)
		body = strdup(s);
	json_object_put(arr);
	if (body == NULL)
		return;
	t->dirty = 0;
	pthread_mutex_unlock(&am->mu);
	code = post(am, t, body, &r, why, sizeof(why));
	free(body);
	pthread_mutex_lock(&am->mu);
	if (code >= 200 && code < 300) {
		am->st.ok++;
		if (t->failed_in_row > 0)
			fprintf(stderr,
			    "vitalsd: alertmanager %s: delivered again after "
			    "%llu failed posts\n",
			    t->url, (unsigned long long) t->failed_in_row);
		t->failed_in_row = 0;
		t->backoff_ms    = 0;
		t->retry_at      = 0;
	} else if (code >= 400 && code < 500) {
		/* Sending it again would be refused again. */
		am->st.refused++;
		am->st.dropped += k;
		fprintf(stderr,
		    "vitalsd: alertmanager %s refused %zu alerts (HTTP %ld): "
		    "%s\n",
		    t->url, k + am->nfiring, code, r.s);
	} else {
		if (code != 0)
			snprintf(why, sizeof(why), "HTTP %ld: %s", code, r.s);
		am->st.errors++;
		if (t->failed_in_row++ == 0)
			fprintf(stderr,
			    "vitalsd: alertmanager %s: %s; alerts kept, "
			    "retrying (at most every %d ms)\n",
			    t->url, why, am->resend_ms);
		t->backoff_ms
		    = t->backoff_ms == 0 ? BACKOFF_MIN_MS : 2 * t->backoff_ms;
		if (t->backoff_ms > am->resend_ms)
			t->backoff_ms = am->resend_ms;
		t->retry_at = now + t->backoff_ms;
		t->dirty    = 1;
		return;
	}
	for (size_t i = 0; i < k; i++)
		json_object_put(t->pending[i]);
	memmove(
	    t->pending, t->pending + k, (t->npend - k) * sizeof(*t->pending));
	t->npend -= k;
	t->next_resend = now + am->resend_ms;
}

/*
 * The sender: posts to each Alertmanager what changed, what is pending,
 * and every resend interval what fires; waits for the next of those
 * moments or a new transition.
 */
static void *
run(void *arg)
{
	alertmgr *am = arg;

	pthread_mutex_lock(&am->mu);
	for (;;) {
		int64_t         now    = clock_ms(CLOCK_MONOTONIC);
		int64_t         wake   = now + 60000, real;
		int             posted = 0, stopping = am->stop;
		struct timespec ts;

		for (size_t k = 0; k < am->nt && !posted; k++) {
			target *t    = &am->t[k];
			int     want = t->npend > 0
			    || (am->nfiring > 0
			        && (t->dirty || now >= t->next_resend));

			if (!want) {
				if (am->nfiring > 0 && t->next_resend < wake)
					wake = t->next_resend;
				continue;
			}
			if (stopping) {
				if (t->failed_in_row == 0 && t->npend > 0)
					deliver(am, t);
				continue;
			}
			if (now < t->retry_at) {
				if (t->retry_at < wake)
					wake = t->retry_at;
				continue;
			}
			deliver(am, t);
			posted = 1;
		}
		if (stopping)
			break;
		if (posted)
			continue;
		real       = clock_ms(CLOCK_REALTIME) + (wake - now);
		ts.tv_sec  = real / 1000;
		ts.tv_nsec = (real % 1000) * 1000000;
		pthread_cond_timedwait(&am->wake, &am->mu, &ts);
	}
	pthread_mutex_unlock(&am->mu);
	return NULL;
}

/*
 * The URL alerts are posted to: the Alertmanager's base URL with
 * /api/v2/alerts appended (unless it is there). Returns a malloc'd string
 * or NULL with the reason in err.
 */
static char *
alerts_url(const char *url, char *err, size_t errlen)
{
	CURLU *u = http_url_parse(
	    "--alertmanager", url, "http://HOST:PORT", err, errlen);
	char  *path = NULL, *full = NULL;
	char   np[2048];
	size_t pl;

	if (u == NULL)
		return NULL;
	curl_url_get(u, CURLUPART_PATH, &path, 0);
	pl = path ? strlen(path) : 0;
	while (pl > 0 && path[pl - 1] == '/')
		pl--;
	if (pl >= 14 && strncmp(path + pl - 14, "/api/v2/alerts", 14) == 0)
		snprintf(np, sizeof(np), "%.*s", (int) pl, path);
	else
		snprintf(np, sizeof(np), "%.*s/api/v2/alerts", (int) pl,
		    path ? path : "");
	if (curl_url_set(u, CURLUPART_PATH, np, 0) != CURLUE_OK
	    || curl_url_get(u, CURLUPART_URL, &full, 0) != CURLUE_OK) {
		snprintf(err, errlen, "--alertmanager '%s': bad path", url);
		full = NULL;
	}
	curl_free(path);
	curl_url_cleanup(u);
	if (full != NULL) {
		char *r = strdup(full);

		curl_free(full);
		if (r == NULL)
			snprintf(err, errlen, "out of memory");
		return r;
	}
	return NULL;
}

int
alertmgr_open(const alertmgr_opts *o, alertmgr **out, char *err, size_t errlen)
{
	alertmgr *am;

	*out = NULL;
	/* Before any curl handle; the threads running now use no curl. */
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		snprintf(err, errlen, "libcurl did not initialise");
		return -1;
	}
	if ((am = calloc(1, sizeof(*am))) == NULL) {
		snprintf(err, errlen, "out of memory");
		curl_global_cleanup();
		return -1;
	}
	am->resend_ms  = o->resend_ms;
	am->timeout_ms = o->timeout_ms;
	pthread_mutex_init(&am->mu, NULL);
	pthread_cond_init(&am->wake, NULL);
	for (size_t i = 0; i < o->nurls; i++) {
		target *t = &am->t[am->nt];

		if ((t->url = alerts_url(o->urls[i], err, errlen)) == NULL)
			goto fail;
		am->nt++;
		t->curl    = curl_easy_init();
		t->pending = calloc(ALERTMGR_PENDING_MAX, sizeof(*t->pending));
		if (t->curl == NULL || t->pending == NULL) {
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
	}
	if (pthread_create(&am->thread, NULL, run, am) != 0) {
		snprintf(err, errlen, "cannot start the alertmanager thread");
		goto fail;
	}
	am->started = 1;
	for (size_t i = 0; i < am->nt; i++)
		fprintf(stderr,
		    "vitalsd: alerts to %s (firing ones re-sent "
		    "every %d ms)\n",
		    am->t[i].url, am->resend_ms);
	*out = am;
	return 0;
fail:
	alertmgr_close(am);
	return -1;
}

void
alertmgr_close(alertmgr *am)
{
	if (am == NULL)
		return;
	if (am->started) {
		pthread_mutex_lock(&am->mu);
		am->stop = 1;
		pthread_cond_signal(&am->wake);
		pthread_mutex_unlock(&am->mu);
		pthread_join(am->thread, NULL);
	}
	for (size_t k = 0; k < am->nt; k++) {
		target *t = &am->t[k];

		for (size_t i = 0; i < t->npend; i++)
			json_object_put(t->pending[i]);
		free(t->pending);
		if (t->curl != NULL)
			curl_easy_cleanup(t->curl);
		free(t->url);
	}
	for (size_t i = 0; i < am->nfiring; i++)
		alert_free(am->firing[i]);
	pthread_mutex_destroy(&am->mu);
	pthread_cond_destroy(&am->wake);
	free(am);
	curl_global_cleanup();
}
