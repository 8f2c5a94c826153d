/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An installation access token limited to one repository (docs/forge.md, "Tokens"): `POST
 * /app/installations/{id}/access_tokens` with the app's JWT and {"repositories": [NAME],
 * "permissions": {...}} -> 201 {token, expires_at (about an hour), permissions, ...}. The
 * answer holds the token: every string of it is wiped when github_token_dispose() frees it.
 */
#ifndef SA_HOST_GITHUB_TOKEN_H
#define SA_HOST_GITHUB_TOKEN_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "err.h"

#define GITHUB_TOKEN_DEFAULT_PERMISSIONS "contents:read"
#define GITHUB_TOKEN_MAX 1024

struct github_token_req {
	const char *api_url;      /* FORGE_HTTP_DEFAULT_API when NULL */
	const char *installation; /* digits */
	const char *repository;   /* OWNER/NAME: the token covers NAME only */
	json_object *permissions; /* {"contents": "read", ...} */
	const char *jwt;          /* jwt_len bytes, guarded memory */
	size_t jwt_len;
	int timeout_ms;
};

/*
 * "contents:read,pull_requests:write" into {"contents": "read", "pull_requests": "write"};
 * *ret_writes tells whether any is write. Names are GitHub's (lower case and '_'), levels read
 * or write. ERR_REFUSED with the expected shape otherwise.
 */
int github_token_permissions_parse(const char *list, json_object **ret, bool *ret_writes,
                                   struct err *err);

/*
 * Ask for the token. *ret: the answer, with a non-empty "token" and "expires_at" checked;
 * free it with github_token_dispose(). Refusals worded by forge_reply_error().
 */
int github_token_request(const struct github_token_req *req, json_object **ret, struct err *err);

/* Wipe every string in o (and the text json-c printed of it last) and free it. */
void github_token_dispose(json_object *o);

#endif
