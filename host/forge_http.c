/* SPDX-License-Identifier: Apache-2.0 */
#include "forge_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forge_curl.h"

#define CONNECT_TIMEOUT_MS 10000
#define AUTH_PREFIX "Authorization: Bearer "

int forge_http_global_init(struct err *err)
{
	return forge_curl_get(err) ? 0 : -1;
}

void forge_http_global_shutdown(void)
{
	forge_curl_cleanup();
}

static bool host_is_loopback(const char *host)
{
	unsigned char a[16];
	size_t n = strlen(host);

	if (strcmp(host, "localhost") == 0)
		return true;
	if (inet_pton(AF_INET, host, a) == 1)
		return a[0] == 127;
	if (n > 2 && host[0] == '[' && host[n - 1] == ']') {
		char v6[64];
		snprintf(v6, sizeof(v6), "%.*s", (int)(n - 2), host + 1);
		return strcmp(v6, "::1") == 0;
	}
	return false;
}

int forge_http_api_url_check(const char *api_url, struct err *err)
{
	const struct forge_curl *cu;
	CURLU *u;
	char *scheme = NULL, *host = NULL, *user = NULL, *pass = NULL, *query = NULL, *frag = NULL;
	int r = 0;

	if (!api_url || !*api_url)
		return err_set(err, ERR_REFUSED, EINVAL, "the API URL is empty (default %s)",
		               FORGE_HTTP_DEFAULT_API);
	if (strlen(api_url) > FORGE_HTTP_URL_MAX / 2)
		return err_set(err, ERR_REFUSED, EINVAL, "the API URL is over %d bytes",
		               FORGE_HTTP_URL_MAX / 2);
	for (const char *p = api_url; *p; p++)
		if ((unsigned char)*p <= 0x20 || *p == 0x7f)
			return err_set(err, ERR_REFUSED, EINVAL,
			               "the API URL contains a space or a control character");
	cu = forge_curl_get(err);
	if (!cu)
		return -1;
	u = cu->url();
	if (!u)
		return err_oom(err);
	if (cu->url_set(u, CURLUPART_URL, api_url, 0) != CURLUE_OK ||
	    cu->url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    cu->url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
		r = err_set(err, ERR_REFUSED, EINVAL,
		            "the API URL '%.200s' is not a URL (like %s or "
		            "https://github.example.com/api/v3)",
		            api_url, FORGE_HTTP_DEFAULT_API);
		goto out;
	}
	cu->url_get(u, CURLUPART_USER, &user, 0);
	cu->url_get(u, CURLUPART_PASSWORD, &pass, 0);
	cu->url_get(u, CURLUPART_QUERY, &query, 0);
	cu->url_get(u, CURLUPART_FRAGMENT, &frag, 0);
	if (user || pass)
		r = err_set(err, ERR_REFUSED, EINVAL,
		            "the API URL carries credentials (user@ before the host): the token "
		            "belongs in the spec's token field");
	else if (query || frag)
		r = err_set(
		    err, ERR_REFUSED, EINVAL,
		    "the API URL has a query or a fragment: give only scheme, host and path "
		    "(%s)",
		    FORGE_HTTP_DEFAULT_API);
	else if (strcmp(scheme, "https") != 0 &&
	         !(strcmp(scheme, "http") == 0 && host_is_loopback(host)))
		r = err_set(err, ERR_REFUSED, EINVAL,
		            "the API URL must start with https:// (http:// only to a loopback "
		            "address), not '%.200s'",
		            api_url);
out:
	cu->free(scheme);
	cu->free(host);
	cu->free(user);
	cu->free(pass);
	cu->free(query);
	cu->free(frag);
	cu->url_cleanup(u);
	return r;
}

int forge_http_url(char *buf, size_t len, const char *api_url, const char *fmt, ...)
{
	size_t n = strlen(api_url);
	va_list ap;
	int m;

	while (n && api_url[n - 1] == '/')
		n--;
	if (n >= len)
		return -1;
	memcpy(buf, api_url, n);
	va_start(ap, fmt);
	m = vsnprintf(buf + n, len - n, fmt, ap);
	va_end(ap);
	return m < 0 || (size_t)m >= len - n ? -1 : 0;
}

char *forge_http_escape(const char *s, struct err *err)
{
	const struct forge_curl *cu = forge_curl_get(err);
	char *q, *copy;

	if (!cu)
		return NULL;
	q = cu->easy_escape(NULL, s, 0);
	if (!q) {
		err_oom(err);
		return NULL;
	}
	copy = strdup(q);
	cu->free(q);
	if (!copy)
		err_oom(err);
	return copy;
}

struct sink {
	char *buf;
	size_t len, cap;
	bool over;
};

/* Grow by copying, so no unwiped copy of the answer (it may hold a token) stays behind. */
static size_t sink_write(char *data, size_t size, size_t nmemb, void *userdata)
{
	struct sink *s = userdata;
	size_t n = size * nmemb;

	if (n > FORGE_HTTP_MAX_REPLY - s->len) {
		s->over = true;
		return 0;
	}
	if (s->len + n + 1 > s->cap) {
		size_t cap = s->cap ? s->cap : 16384;
		char *b;

		while (cap < s->len + n + 1)
			cap *= 2;
		b = malloc(cap);
		if (!b)
			return 0;
		if (s->buf) {
			memcpy(b, s->buf, s->len);
			sodium_memzero(s->buf, s->cap);
			free(s->buf);
		}
		s->buf = b;
		s->cap = cap;
	}
	memcpy(s->buf + s->len, data, n);
	s->len += n;
	s->buf[s->len] = '\0';
	return n;
}

static void sink_dispose(struct sink *s)
{
	if (s->buf) {
		sodium_memzero(s->buf, s->cap);
		free(s->buf);
	}
	*s = (struct sink){0};
}

void forge_http_reply_dispose(struct forge_http_reply *r)
{
	if (r->body) {
		sodium_memzero(r->body, r->len);
		free(r->body);
	}
	*r = (struct forge_http_reply){0};
}

/* "Authorization: Bearer TOKEN" in guarded memory. */
static int auth_header(const struct forge_http_req *req, char **ret, struct err *err)
{
	size_t n = sizeof(AUTH_PREFIX) - 1;
	char *h;

	if (memchr(req->token, '\0', req->token_len) || memchr(req->token, '\n', req->token_len) ||
	    memchr(req->token, '\r', req->token_len))
		return err_set(err, ERR_REFUSED, EINVAL,
		               "the token holds a NUL or a line break: it cannot go in a header");
	h = sodium_malloc(n + req->token_len + 1);
	if (!h)
		return err_set(err, ERR_FAILED, ENOMEM, "cannot allocate guarded memory");
	memcpy(h, AUTH_PREFIX, n);
	memcpy(h + n, req->token, req->token_len);
	h[n + req->token_len] = '\0';
	*ret = h;
	return 0;
}

static int curl_failed(const struct forge_curl *cu, struct err *err, CURLcode rc,
                       const char *errbuf, const struct forge_http_req *req, const struct sink *s)
{
	if (s->over || rc == CURLE_FILESIZE_EXCEEDED)
		return err_set(err, ERR_FAILED, EFBIG,
		               "%s %s: the answer is over %d bytes: is the API URL right?",
		               req->method, req->url, FORGE_HTTP_MAX_REPLY);
	if (rc == CURLE_OPERATION_TIMEDOUT)
		return err_set(err, ERR_FAILED, ETIMEDOUT,
		               "%s %s: no complete answer within %d s (--timeout)", req->method,
		               req->url, req->timeout_ms / 1000);
	return err_set(err, ERR_FAILED, rc == CURLE_COULDNT_CONNECT ? ECONNREFUSED : EIO,
	               "%s %s: %s", req->method, req->url,
	               errbuf[0] ? errbuf : cu->easy_strerror(rc));
}

int forge_http_request(const struct forge_http_req *req, struct forge_http_reply *ret,
                       struct err *err)
{
	const struct forge_curl *cu = forge_curl_get(err);
	char errbuf[CURL_ERROR_SIZE] = "", ua[64];
	struct curl_slist *headers = NULL, *h;
	struct sink s = {0};
	char *auth = NULL, *redirect = NULL;
	CURL *c = NULL;
	CURLcode rc;
	int r = 0;

	*ret = (struct forge_http_reply){0};
	if (!cu)
		return -1;
	if (req->token_len && auth_header(req, &auth, err) < 0)
		return err_ret(err);
	c = cu->easy_init();
	if (!c) {
		r = err_set(err, ERR_FAILED, ENOMEM, "cannot set up a libcurl handle");
		goto out;
	}
	snprintf(ua, sizeof(ua), "User-Agent: sandbox-ctl/%s", SA_VERSION);
	{
		const char *lines[] = {"Accept: application/vnd.github+json",
		                       "X-GitHub-Api-Version: " FORGE_HTTP_API_VERSION, ua,
		                       req->body ? "Content-Type: application/json" : NULL, auth};

		for (size_t i = 0; i < ELEMENTSOF(lines); i++) {
			if (!lines[i])
				continue;
			h = cu->slist_append(headers, lines[i]);
			if (!h) {
				r = err_oom(err);
				goto out;
			}
			headers = h;
		}
	}
	cu->easy_setopt(c, CURLOPT_URL, req->url);
	cu->easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	cu->easy_setopt(c, CURLOPT_HTTPHEADER, headers);
	cu->easy_setopt(c, CURLOPT_CUSTOMREQUEST, req->method);
	if (req->body) {
		cu->easy_setopt(c, CURLOPT_POSTFIELDS, req->body);
		cu->easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
	}
	cu->easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	cu->easy_setopt(c, CURLOPT_PROXY, ""); /* not even one from the environment */
	cu->easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	cu->easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)req->timeout_ms);
	cu->easy_setopt(
	    c, CURLOPT_CONNECTTIMEOUT_MS,
	    (long)(req->timeout_ms < CONNECT_TIMEOUT_MS ? req->timeout_ms : CONNECT_TIMEOUT_MS));
	cu->easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)FORGE_HTTP_MAX_REPLY);
	cu->easy_setopt(c, CURLOPT_WRITEFUNCTION, sink_write);
	cu->easy_setopt(c, CURLOPT_WRITEDATA, &s);
	cu->easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	rc = cu->easy_perform(c);
	if (rc != CURLE_OK) {
		r = curl_failed(cu, err, rc, errbuf, req, &s);
		goto out;
	}
	cu->easy_getinfo(c, CURLINFO_RESPONSE_CODE, &ret->status);
	if (ret->status >= 300 && ret->status < 400) {
		cu->easy_getinfo(c, CURLINFO_REDIRECT_URL, &redirect);
		r = err_set(err, ERR_FAILED, EXDEV,
		            "%s %s: the API answered %ld, a redirect to %.300s; redirects are not "
		            "followed (the token would go along): if the repository was renamed or "
		            "moved, put its new owner/name in the spec's repository",
		            req->method, req->url, ret->status, redirect ? redirect : "(nowhere)");
		goto out;
	}
	ret->body = s.buf ? s.buf : calloc(1, 1);
	ret->len = s.len;
	if (!ret->body)
		r = err_oom(err);
	s = (struct sink){0};
out:
	sink_dispose(&s);
	cu->slist_free_all(headers);
	if (c)
		cu->easy_cleanup(c);
	if (auth)
		sodium_free(auth);
	if (r < 0)
		forge_http_reply_dispose(ret);
	return r;
}
