#include "collector/http_client.h"

#include <stdio.h>
#include <string.h>

static size_t
on_reply(char *p, size_t size, size_t nmemb, void *ctx)
{
	http_reply *r = ctx;
	size_t      n = size * nmemb, k = n;

	/* The rest is read and dropped: the log needs only the start. */
	if (k > HTTP_REPLY_MAX - r->n)
		k = HTTP_REPLY_MAX - r->n;
	memcpy(r->s + r->n, p, k);
	r->n += k;
	r->s[r->n] = 0;
	return n;
}

static int
on_progress(
    void *ctx, curl_off_t dlt, curl_off_t dln, curl_off_t ult, curl_off_t uln)
{
	const http_post_req *q = ctx;

	(void) dlt;
	(void) dln;
	(void) ult;
	(void) uln;
	return q->stop(q->stop_ctx);
}

long
http_post(
    CURL *c, const http_post_req *q, http_reply *r, char *why, size_t whylen)
{
	CURLcode rc;
	long     code = 0;

	r->n    = 0;
	r->s[0] = 0;
	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, q->url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, q->headers);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, q->body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) q->len);
	/* No signals: vitalsd's threads keep their own masks. */
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, q->timeout_ms);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, q->timeout_ms);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_reply);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	if (q->stop != NULL) {
		curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
		curl_easy_setopt(c, CURLOPT_XFERINFODATA, q);
	}
	rc = curl_easy_perform(c);
	if (rc != CURLE_OK)
		snprintf(why, whylen, "%s", curl_easy_strerror(rc));
	else
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	return code;
}

CURLU *
http_url_parse(const char *option, const char *url, const char *expected,
    char *err, size_t errlen)
{
	CURLU    *u = curl_url();
	CURLUcode rc;
	char     *scheme = NULL, *host = NULL;

	if (u == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if ((rc = curl_url_set(u, CURLUPART_URL, url, 0)) != CURLUE_OK) {
		snprintf(err, errlen, "%s '%s': not a URL (%s); expected %s",
		    option, url, curl_url_strerror(rc), expected);
		goto fail;
	}
	curl_url_get(u, CURLUPART_SCHEME, &scheme, 0);
	curl_url_get(u, CURLUPART_HOST, &host, 0);
	if (scheme == NULL
	    || (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0)) {
		snprintf(err, errlen,
		    "%s '%s': the scheme must be http or https", option, url);
		goto fail;
	}
	if (host == NULL || host[0] == 0) {
		snprintf(err, errlen, "%s '%s': no host", option, url);
		goto fail;
	}
	curl_free(scheme);
	curl_free(host);
	return u;
fail:
	curl_free(scheme);
	curl_free(host);
	curl_url_cleanup(u);
	return NULL;
}
