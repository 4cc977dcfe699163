/*
 * http_client: the HTTP requests vitalsd sends (alerts to Alertmanager,
 * samples to remote-write receivers), on libcurl. One home for what they
 * share: checking a URL given on the command line, posting a body on a
 * reused handle with a timeout, keeping the start of the reply for the
 * log, and abandoning a request when vitalsd stops.
 *
 * Thread rule: a CURL handle is used by one thread at a time; the
 * functions keep no state of their own.
 */
#ifndef COLLECTOR_HTTP_CLIENT_H
#define COLLECTOR_HTTP_CLIENT_H

#include <curl/curl.h>
#include <stddef.h>

/* The start of a reply body, for the log line of a refused request. */
#define HTTP_REPLY_MAX 300

typedef struct http_reply {
	char   s[HTTP_REPLY_MAX + 1]; /* NUL-terminated */
	size_t n;
} http_reply;

typedef struct http_post_req {
	const char              *url;
	const struct curl_slist *headers; /* borrowed */
	const void              *body;
	size_t                   len;
	long                     timeout_ms; /* connect and whole request */
	/* Polled during the transfer: non-zero abandons it. NULL: never. */
	int (*stop)(void *ctx);
	void *stop_ctx;
} http_post_req;

/*
 * POST q->body on c (reset first; its connections are kept). Returns the
 * HTTP status with the start of the body in r, or 0 with the reason in
 * why (no connection, a timeout, abandoned).
 */
long http_post(
    CURL *c, const http_post_req *q, http_reply *r, char *why, size_t whylen);

/*
 * url parsed by libcurl and checked: http or https, and a host. Returns
 * the handle (caller frees with curl_url_cleanup), or NULL with the
 * reason in err, naming the option (e.g. "--alertmanager") and saying
 * what was expected.
 */
CURLU *http_url_parse(const char *option, const char *url,
    const char *expected, char *err, size_t errlen);

#endif
