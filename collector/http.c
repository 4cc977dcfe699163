#include "collector/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define CT_TEXT "text/plain; version=0.0.4; charset=utf-8"
#define CT_OM "application/openmetrics-text; version=1.0.0; charset=utf-8"

struct http {
	struct MHD_Daemon *d;
	int                fd;
	expo              *x;
	alerting          *al;
	alertmgr          *am;
	rwrite            *rw;
	char               data_path[1100];
};

/* Whether a bound address is on this machine's loopback. */
static int
is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *) (
		    const void *) sa;

		return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 =
		    (const struct sockaddr_in6 *) (const void *) sa;

		return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
	}
	return 0;
}

/*
 * Bind and listen on HOST:PORT (or [HOST]:PORT). Returns the socket, or -1
 * with the reason in err.
 */
static int
listen_on(const char *addr, int insecure, int *family, char *err,
    size_t errlen)
{
	char             host[256], port[16];
	const char      *colon = strrchr(addr, ':');
	size_t           hl;
	struct addrinfo  hints, *res = NULL;
	int              fd = -1, one = 1, rc;

	if (colon == NULL || colon == addr || strlen(colon + 1) == 0 ||
	    strlen(colon + 1) >= sizeof(port)) {
		snprintf(err, errlen,
		    "--http %s: expected HOST:PORT (127.0.0.1:9464, "
		    "[::1]:9464; port 0 picks a free one)",
		    addr);
		return -1;
	}
	hl = (size_t) (colon - addr);
	if (addr[0] == '[' && hl >= 2 && addr[hl - 1] == ']') {
		addr++;
		hl -= 2;
	}
	if (hl >= sizeof(host)) {
		snprintf(err, errlen, "--http %s: host name too long", addr);
		return -1;
	}
	memcpy(host, addr, hl);
	host[hl] = 0;
	snprintf(port, sizeof(port), "%s", colon + 1);
	memset(&hints, 0, sizeof(hints));
	hints.ai_family   = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags    = AI_PASSIVE | AI_NUMERICSERV;
	if ((rc = getaddrinfo(host, port, &hints, &res)) != 0) {
		snprintf(err, errlen, "--http %s: %s", addr, gai_strerror(rc));
		return -1;
	}
	if (!insecure && !is_loopback(res->ai_addr)) {
		snprintf(err, errlen,
		    "refusing to serve http on %s: it is reachable beyond "
		    "this machine, and /metrics shows every run's names and "
		    "values.\n  Use a loopback address, or --insecure to "
		    "serve it anyway",
		    addr);
		goto fail;
	}
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto sys;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, res->ai_addr, res->ai_addrlen) != 0 ||
	    listen(fd, 64) != 0)
		goto sys;
	*family = res->ai_family;
	freeaddrinfo(res);
	return fd;
sys:
	snprintf(err, errlen, "--http %s: %s", addr, strerror(errno));
fail:
	if (fd >= 0)
		close(fd);
	freeaddrinfo(res);
	return -1;
}

static enum MHD_Result
reply(struct MHD_Connection *c, unsigned int status, const char *type,
    char *body, size_t len)
{
	struct MHD_Response *r;
	enum MHD_Result      ret;

	r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (r == NULL) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result
text(struct MHD_Connection *c, unsigned int status, const char *s)
{
	size_t n    = strlen(s);
	char  *body = malloc(n + 1);

	if (body == NULL)
		return MHD_NO;
	memcpy(body, s, n + 1);
	return reply(c, status, "text/plain; charset=utf-8", body, n);
}

static void
alertmgr_metrics(expo_buf *b, int om, alertmgr *am)
{
	alertmgr_stats st;

	alertmgr_get_stats(am, &st);
	expo_buf_family(b, om, "vitals_alertmanager_posts", "counter",
	    "Posts of alerts to Alertmanager, by result (ok, error: no "
	    "connection, a timeout or a 5xx, retried; refused: a 4xx, "
	    "dropped).");
	expo_buf_printf(b,
	    "vitals_alertmanager_posts_total{result=\"ok\"} %llu\n"
	    "vitals_alertmanager_posts_total{result=\"error\"} %llu\n"
	    "vitals_alertmanager_posts_total{result=\"refused\"} %llu\n",
	    (unsigned long long) st.ok, (unsigned long long) st.errors,
	    (unsigned long long) st.refused);
	expo_buf_family(b, om, "vitals_alertmanager_alerts_dropped", "counter",
	    "Alert transitions not sent to Alertmanager (its queue was "
	    "full).");
	expo_buf_printf(b, "vitals_alertmanager_alerts_dropped_total %llu\n",
	    (unsigned long long) st.dropped);
	expo_buf_family(b, om, "vitals_alertmanager_firing", "gauge",
	    "Firing alerts re-sent to Alertmanager periodically.");
	expo_buf_printf(b, "vitals_alertmanager_firing %llu\n",
	    (unsigned long long) st.firing);
	expo_buf_family(b, om, "vitals_alertmanager_pending", "gauge",
	    "Resolutions waiting to be delivered, over every Alertmanager.");
	expo_buf_printf(b, "vitals_alertmanager_pending %llu\n",
	    (unsigned long long) st.pending);
}

/* One family of the remote-write figures, one sample per URL. */
static void
rwrite_family(expo_buf *b, int om, rwrite *rw, const char *name,
    const char *type, const char *help, const char *extra, int which)
{
	expo_buf_family(b, om, name, type, help);
	for (size_t i = 0; i < rwrite_count(rw); i++) {
		rwrite_stats st;
		uint64_t     v = 0;

		rwrite_get_stats(rw, i, &st);
		switch (which) {
		case 0: v = st.samples; break;
		case 1: v = st.ok; break;
		case 2: v = st.errors; break;
		case 3: v = st.refused; break;
		case 4: v = st.samples_refused; break;
		case 6: v = st.pending; break;
		}
		expo_buf_printf(b, "%s%s{url=\"", name,
		    strcmp(type, "counter") == 0 ? "_total" : "");
		expo_buf_label(b, st.url, strlen(st.url));
		if (which == 7) {
			expo_buf_printf(b, "\"} ");
			expo_buf_double(b, st.lag_seconds);
			expo_buf_printf(b, "\n");
		} else {
			expo_buf_printf(b, "\"%s} %llu\n", extra,
			    (unsigned long long) v);
		}
	}
}

static void
rwrite_metrics(expo_buf *b, int om, rwrite *rw)
{
	rwrite_family(b, om, rw, "vitals_remote_write_samples", "counter",
	    "Samples (vitals_value) delivered to the remote-write URL.", "",
	    0);
	expo_buf_family(b, om, "vitals_remote_write_requests", "counter",
	    "Remote-write requests by result (ok; error: no connection, a "
	    "timeout or a 5xx, retried; refused: a 4xx, skipped).");
	for (size_t i = 0; i < rwrite_count(rw); i++) {
		rwrite_stats st;
		static const char *res[] = { "ok", "error", "refused" };

		rwrite_get_stats(rw, i, &st);
		for (int k = 0; k < 3; k++) {
			expo_buf_printf(b, "vitals_remote_write_requests_total{"
					   "url=\"");
			expo_buf_label(b, st.url, strlen(st.url));
			expo_buf_printf(b, "\",result=\"%s\"} %llu\n", res[k],
			    (unsigned long long) (k == 0   ? st.ok
			                          : k == 1 ? st.errors
			                                   : st.refused));
		}
	}
	rwrite_family(b, om, rw, "vitals_remote_write_samples_refused",
	    "counter",
	    "Samples skipped because the receiver refused them (4xx).", "", 4);
	rwrite_family(b, om, rw, "vitals_remote_write_pending_samples",
	    "gauge", "Samples stored and not yet delivered.", "", 6);
	rwrite_family(b, om, rw, "vitals_remote_write_lag_seconds", "gauge",
	    "Seconds since the forwarder last had every sample stored until "
	    "then delivered.",
	    "", 7);
}

static enum MHD_Result
metrics(http *h, struct MHD_Connection *c)
{
	const char *accept =
	    MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept");
	int         om = accept != NULL &&
	         strstr(accept, "application/openmetrics-text") != NULL;
	expo_live   live = { -1, 0, 0 };
	expo_buf    b    = { 0 };
	struct stat sb;

	if (stat(h->data_path, &sb) == 0)
		live.db_bytes = (int64_t) sb.st_size;
	if (h->al != NULL) {
		live.detect_on = 1;
		live.detect_bytes = alerting_queue_bytes(h->al);
	}
	expo_render(h->x, om, &live, &b);
	if (h->am != NULL)
		alertmgr_metrics(&b, om, h->am);
	if (h->rw != NULL)
		rwrite_metrics(&b, om, h->rw);
	if (om)
		expo_buf_add(&b, "# EOF\n", 6);
	if (b.oom) {
		free(b.p);
		return text(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
		    "out of memory\n");
	}
	return reply(c, MHD_HTTP_OK, om ? CT_OM : CT_TEXT, b.p, b.n);
}

static enum MHD_Result
handle(void *cls, struct MHD_Connection *c, const char *url,
    const char *method, const char *version, const char *upload,
    size_t *upload_size, void **state)
{
	http *h = cls;
	char  why[600], line[700];

	(void) version;
	(void) upload;
	(void) upload_size;
	(void) state;
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return text(c, MHD_HTTP_METHOD_NOT_ALLOWED,
		    "only GET and HEAD\n");
	if (strcmp(url, "/metrics") == 0)
		return metrics(h, c);
	if (strcmp(url, "/healthz") == 0) {
		if (expo_health(h->x, why, sizeof(why)) == 0)
			return text(c, MHD_HTTP_OK, "ok\n");
		snprintf(line, sizeof(line), "store refuses writes: %s\n", why);
		return text(c, MHD_HTTP_SERVICE_UNAVAILABLE, line);
	}
	return text(c, MHD_HTTP_NOT_FOUND,
	    "not found: vitalsd serves /metrics and /healthz\n");
}

int
http_open(const http_opts *o, http **out, char *err, size_t errlen)
{
	http                   *h = calloc(1, sizeof(*h));
	int                     family = AF_INET;
	struct sockaddr_storage ss;
	socklen_t               sl = sizeof(ss);
	char                    host[INET6_ADDRSTRLEN] = "?";
	int                     port                   = 0;

	*out = NULL;
	if (h == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	h->x  = o->x;
	h->al = o->al;
	h->am = o->am;
	h->rw = o->rw;
	snprintf(h->data_path, sizeof(h->data_path), "%s/data.mdb",
	    o->db_dir);
	if ((h->fd = listen_on(o->addr, o->insecure, &family, err, errlen))
	    < 0) {
		free(h);
		return -1;
	}
	h->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
	        MHD_USE_POLL | (family == AF_INET6 ? MHD_USE_IPv6 : 0),
	    0, NULL, NULL, handle, h, MHD_OPTION_LISTEN_SOCKET, h->fd,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned int) 64,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int) 30, MHD_OPTION_END);
	if (h->d == NULL) {
		snprintf(err, errlen, "--http %s: libmicrohttpd did not start",
		    o->addr);
		close(h->fd);
		free(h);
		return -1;
	}
	if (getsockname(h->fd, (struct sockaddr *) &ss, &sl) == 0) {
		if (ss.ss_family == AF_INET) {
			const struct sockaddr_in *in =
			    (const struct sockaddr_in *) (const void *) &ss;

			inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
			port = ntohs(in->sin_port);
		} else if (ss.ss_family == AF_INET6) {
			const struct sockaddr_in6 *in6 =
			    (const struct sockaddr_in6 *) (const void *) &ss;

			inet_ntop(AF_INET6, &in6->sin6_addr, host,
			    sizeof(host));
			port = ntohs(in6->sin6_port);
		}
	}
	fprintf(stderr, "vitalsd: http on %s%s%s:%d (/metrics, /healthz)\n",
	    family == AF_INET6 ? "[" : "", host, family == AF_INET6 ? "]" : "",
	    port);
	*out = h;
	return 0;
}

void
http_close(http *h)
{
	if (h == NULL)
		return;
	/* MHD closes the listening socket it was given. */
	MHD_stop_daemon(h->d);
	free(h);
}
