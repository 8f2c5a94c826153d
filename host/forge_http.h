/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One request to a forge's REST API (GitHub's, or GitHub Enterprise's at https://HOST/api/v3)
 * with libcurl, the way docs/forge.md describes: `Accept: application/vnd.github+json`,
 * `X-GitHub-Api-Version`, a User-Agent, and `Authorization: Bearer TOKEN`. The token is built
 * into a header in guarded memory; curl's own copies are wiped when curl frees them (the
 * allocator forge_http_global_init() installs). No proxy (the header never goes to one), no
 * redirect followed (it would carry the header to another place), http only to loopback. The
 * answer is capped in size (FORGE_HTTP_MAX_REPLY) and the whole exchange in time.
 */
#ifndef SA_HOST_FORGE_HTTP_H
#define SA_HOST_FORGE_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

#define FORGE_HTTP_DEFAULT_API "https://api.github.com"
#define FORGE_HTTP_API_VERSION "2022-11-28"
#define FORGE_HTTP_MAX_REPLY (1024 * 1024)
#define FORGE_HTTP_URL_MAX 2048

struct forge_http_req {
	const char *method; /* "GET", "POST" */
	const char *url;    /* from forge_http_url() */
	/* The credential, token_len bytes in the caller's (guarded) memory; 0: none. */
	const char *token;
	size_t token_len;
	const char *body; /* JSON, or NULL */
	size_t body_len;
	int timeout_ms; /* the whole exchange; connecting gets at most 10 s of it */
};

struct forge_http_reply {
	long status;
	char *body; /* NUL-terminated, wiped and freed by forge_http_reply_dispose() */
	size_t len;
};

/*
 * Load libcurl and set it up for this process with an allocator that wipes every block it
 * frees (curl copies the Authorization header): forge_curl.h. The other functions here do it
 * themselves when it was not done, so no libcurl call comes before that allocator; a command
 * calls this first to fail early, and forge_http_global_shutdown() at its end.
 */
int forge_http_global_init(struct err *err);
void forge_http_global_shutdown(void);

/*
 * Check an API base URL: https://, or http:// to a loopback host only; no user or password in
 * it, no query or fragment. ERR_REFUSED with what to give instead.
 */
int forge_http_api_url_check(const char *api_url, struct err *err);

/* api_url (no trailing '/') + the path printf makes, into buf; -1 when it does not fit. */
int forge_http_url(char *buf, size_t len, const char *api_url, const char *fmt, ...) _printf_(4, 5);

/*
 * s percent-encoded for a URL's path or query (libcurl's escape: everything but RFC 3986's
 * unreserved characters), in a block to free(); NULL with err set.
 */
char *forge_http_escape(const char *s, struct err *err);

/*
 * Send the request and read the answer, whatever its status (the caller words non-2xx with
 * forge_reply_error()). Fails (ERR_FAILED) when nothing usable came back: no connection, the
 * deadline, an answer over FORGE_HTTP_MAX_REPLY, a redirect (its target in the message).
 */
int forge_http_request(const struct forge_http_req *req, struct forge_http_reply *ret,
                       struct err *err);
void forge_http_reply_dispose(struct forge_http_reply *r);

#endif
