/* SPDX-License-Identifier: Apache-2.0 */
#include "github_token.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "forge_http.h"
#include "forge_reply.h"
#include "json_strict.h"
#include "json_wipe.h"

#define PERMISSIONS_MAX 32
#define NAME_MAX_LEN 64
#define HINT_MAX 400

int github_token_permissions_parse(const char *list, json_object **ret, bool *ret_writes,
                                   struct err *err)
{
	_cleanup_json_ json_object *perms = json_object_new_object();
	const char *p = list;
	int count = 0;

	*ret = NULL;
	*ret_writes = false;
	if (!perms)
		return err_oom(err);
	while (p && *p) {
		size_t n = strcspn(p, ","), name_len = strcspn(p, ":");
		char name[NAME_MAX_LEN + 1];
		const char *level = p + name_len + 1;
		size_t level_len = n > name_len ? n - name_len - 1 : 0;
		bool write = level_len == 5 && strncmp(level, "write", 5) == 0;
		bool read = level_len == 4 && strncmp(level, "read", 4) == 0;

		if (name_len >= n || name_len == 0 || name_len > NAME_MAX_LEN ||
		    strspn(p, "abcdefghijklmnopqrstuvwxyz_") != name_len || (!write && !read))
			return err_set(
			    err, ERR_REFUSED, EINVAL,
			    "--permissions wants NAME:read or NAME:write, comma-separated "
			    "(contents:read; for publish contents:write,pull_requests:"
			    "write), not '%.*s'",
			    (int)(n > 80 ? 80 : n), p);
		if (++count > PERMISSIONS_MAX)
			return err_set(err, ERR_REFUSED, EINVAL, "--permissions names more than %d",
			               PERMISSIONS_MAX);
		snprintf(name, sizeof(name), "%.*s", (int)name_len, p);
		json_object_object_add(perms, name,
		                       json_object_new_string(write ? "write" : "read"));
		*ret_writes = *ret_writes || write;
		p += n;
		if (*p == ',')
			p++;
	}
	if (count == 0)
		return err_set(err, ERR_REFUSED, EINVAL,
		               "--permissions is empty (default " GITHUB_TOKEN_DEFAULT_PERMISSIONS
		               ")");
	*ret = TAKE_PTR(perms);
	return 0;
}

void github_token_dispose(json_object *o)
{
	char *text;

	if (!o)
		return;
	/*
	 * json-c keeps the last text it printed of o in o itself: print it once more in the
	 * longest form (indented, slashes escaped), over any shorter one printed before, and wipe.
	 */
	text = (char *)json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
	                                                     JSON_C_TO_STRING_SPACED);
	if (text)
		sodium_memzero(text, strlen(text));
	json_wipe_strings(o);
	json_object_put(o);
}

static const char *name_of(const char *repository)
{
	const char *slash = strchr(repository, '/');

	return slash ? slash + 1 : repository;
}

int github_token_request(const struct github_token_req *req, json_object **ret, struct err *err)
{
	char url[FORGE_HTTP_URL_MAX], hint404[HINT_MAX], hint422[HINT_MAX];
	const struct forge_reply_hints hints = {
	    .what = "asking for an installation token",
	    .on_401 = "GitHub did not accept the app's JWT: check --app-id, that --private-key is "
	              "a current key of that app (the app's settings page lists them), and the "
	              "host's clock",
	    .on_403 = "the app may not be granted these permissions: ask for no more than the "
	              "app's own permissions (its settings page), or have the installation accept "
	              "the app's new permissions",
	    .on_404 = hint404,
	    .on_422 = hint422,
	};
	_cleanup_json_ json_object *body = json_object_new_object();
	json_object *repos = json_object_new_array();
	struct forge_http_reply reply = {0};
	const char *text, *token;
	struct forge_http_req hr;
	int r;

	*ret = NULL;
	if (!body || !repos) {
		json_object_put(repos);
		return err_oom(err);
	}
	snprintf(hint404, sizeof(hint404),
	         "no installation %s of this app: the number is in the installation's settings "
	         "address (.../settings/installations/N), or GET /app/installations lists them",
	         req->installation);
	snprintf(hint422, sizeof(hint422),
	         "the installation does not cover %s, or a permission is not one GitHub knows: "
	         "add the repository to the installation, check --permissions",
	         req->repository);
	json_object_array_add(repos, json_object_new_string(name_of(req->repository)));
	json_object_object_add(body, "repositories", repos);
	json_object_object_add(body, "permissions", json_object_get(req->permissions));
	text = json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN);
	if (forge_http_url(url, sizeof(url), req->api_url ? req->api_url : FORGE_HTTP_DEFAULT_API,
	                   "/app/installations/%s/access_tokens", req->installation) < 0)
		return err_set(err, ERR_REFUSED, ENAMETOOLONG, "the API URL is too long");
	hr = (struct forge_http_req){
	    .method = "POST",
	    .url = url,
	    .token = req->jwt,
	    .token_len = req->jwt_len,
	    .body = text,
	    .body_len = strlen(text),
	    .timeout_ms = req->timeout_ms,
	};
	if (forge_http_request(&hr, &reply, err) < 0)
		return err_wrap(err, "%s", hints.what);
	if (reply.status == 201 || reply.status == 200)
		r = forge_reply_object(reply.body, reply.len, hints.what, ret, err);
	else
		r = forge_reply_error(reply.status, reply.body, reply.len, &hints, err);
	forge_http_reply_dispose(&reply);
	if (r < 0)
		return r;
	token = forge_reply_string(*ret, "token");
	if (!token || !*token || strlen(token) > GITHUB_TOKEN_MAX ||
	    strcspn(token, "\r\n\" ") != strlen(token) || !forge_reply_string(*ret, "expires_at")) {
		github_token_dispose(TAKE_PTR(*ret));
		return err_set(err, ERR_FAILED, EPROTO,
		               "%s: the answer has no usable token and expires_at", hints.what);
	}
	return 0;
}
