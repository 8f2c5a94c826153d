/* SPDX-License-Identifier: Apache-2.0 */
#include "github_pulls.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "forge_http.h"
#include "forge_reply.h"
#include "json_strict.h"

#define REPOSITORY_MAX 200
#define HINT_MAX 400

int github_pulls_repository_check(const char *repository, struct err *err)
{
	const char *slash = repository ? strchr(repository, '/') : NULL;

	if (!repository || !*repository)
		return err_set(err, ERR_REFUSED, EINVAL,
		               "the spec names no repository: add \"repository\": \"OWNER/NAME\"");
	if (strlen(repository) > REPOSITORY_MAX || !slash || slash == repository || !slash[1] ||
	    strchr(slash + 1, '/') ||
	    strspn(repository,
	           "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_./") !=
	        strlen(repository) ||
	    strcmp(slash + 1, ".") == 0 || strcmp(slash + 1, "..") == 0)
		return err_set(err, ERR_REFUSED, EINVAL,
		               "the repository '%.200s' is not OWNER/NAME (letters, digits, "
		               "'-', '_', '.')",
		               repository);
	return 0;
}

static const char *api_of(const struct github_pulls_req *req)
{
	return req->api_url ? req->api_url : FORGE_HTTP_DEFAULT_API;
}

/* One call; a 2xx answer's object into *ret, anything else worded with hints into err. */
static int call(const struct github_pulls_req *req, const char *method, const char *url,
                json_object *body, const struct forge_reply_hints *hints, json_object **ret,
                long *ret_status, struct forge_http_reply *keep, struct err *err)
{
	const char *text = body ? json_object_to_json_string_ext(
	                              body, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
	                        : NULL;
	struct forge_http_req hr = {
	    .method = method,
	    .url = url,
	    .token = req->token,
	    .token_len = req->token_len,
	    .body = text,
	    .body_len = text ? strlen(text) : 0,
	    .timeout_ms = req->timeout_ms,
	};
	struct forge_http_reply reply;
	int r;

	*ret = NULL;
	if (forge_http_request(&hr, &reply, err) < 0)
		return err_wrap(err, "%s", hints->what);
	if (ret_status)
		*ret_status = reply.status;
	if (reply.status >= 200 && reply.status < 300)
		r = forge_reply_object(reply.body, reply.len, hints->what, ret, err);
	else
		r = forge_reply_error(reply.status, reply.body, reply.len, hints, err);
	if (keep && r < 0)
		*keep = reply;
	else
		forge_http_reply_dispose(&reply);
	return r;
}

static int default_branch(const struct github_pulls_req *req, char *buf, size_t len,
                          struct err *err)
{
	char url[FORGE_HTTP_URL_MAX], hint404[HINT_MAX];
	const struct forge_reply_hints hints = {
	    .what = "finding the repository's default branch (the pull request's base; or give "
	            "--base)",
	    .on_401 = "the token in the spec was refused (expired, revoked or mistyped): get a "
	              "new one and publish again",
	    .on_404 = hint404,
	};
	_cleanup_json_ json_object *repo = NULL;
	const char *b;

	snprintf(hint404, sizeof(hint404),
	         "no repository %s that this token can see (GitHub answers 404 for a private "
	         "repository the token does not cover): check the spec's repository and api_url",
	         req->repository);
	if (forge_http_url(url, sizeof(url), api_of(req), "/repos/%s", req->repository) < 0)
		return err_set(err, ERR_REFUSED, ENAMETOOLONG, "the API URL is too long");
	if (call(req, "GET", url, NULL, &hints, &repo, NULL, NULL, err) < 0)
		return err_ret(err);
	b = forge_reply_string(repo, "default_branch");
	if (!b || !*b || strlen(b) >= len)
		return err_set(err, ERR_FAILED, EPROTO,
		               "%s: the answer has no default_branch: give --base BRANCH",
		               hints.what);
	snprintf(buf, len, "%s", b);
	return 0;
}

/* The open pull request from head, when the API lists one: {"number", "html_url", ...}. */
static json_object *find_existing(const struct github_pulls_req *req)
{
	char url[FORGE_HTTP_URL_MAX], owner[REPOSITORY_MAX + 1], *pair = NULL, *q;
	_cleanup_json_ json_object *list = NULL;
	json_object *first, *out = NULL;
	struct err ignored = {0};
	struct forge_http_reply reply = {0};
	struct forge_http_req hr = {.method = "GET",
	                            .url = url,
	                            .token = req->token,
	                            .token_len = req->token_len,
	                            .timeout_ms = req->timeout_ms};
	enum json_tokener_error jerr;
	size_t off;

	snprintf(owner, sizeof(owner), "%.*s", (int)strcspn(req->repository, "/"), req->repository);
	if (asprintf(&pair, "%s:%s", owner, req->head) < 0)
		return NULL;
	q = forge_http_escape(pair, &ignored);
	free(pair);
	if (!q)
		return NULL;
	if (forge_http_url(url, sizeof(url), api_of(req), "/repos/%s/pulls?head=%s&state=open",
	                   req->repository, q) < 0 ||
	    forge_http_request(&hr, &reply, &ignored) < 0) {
		free(q);
		return NULL;
	}
	free(q);
	if (reply.status == 200 &&
	    json_strict_parse(reply.body, reply.len, &list, &off, &jerr) == JSON_STRICT_OK &&
	    json_object_is_type(list, json_type_array) && json_object_array_length(list) > 0 &&
	    (first = json_object_array_get_idx(list, 0)) && forge_reply_string(first, "html_url")) {
		json_object *num;
		out = json_object_new_object();
		if (json_object_object_get_ex(first, "number", &num) &&
		    json_object_is_type(num, json_type_int))
			json_object_object_add(out, "number",
			                       json_object_new_int64(json_object_get_int64(num)));
		json_object_object_add(
		    out, "html_url", json_object_new_string(forge_reply_string(first, "html_url")));
		json_object_object_add(out, "existing", json_object_new_boolean(1));
	}
	forge_http_reply_dispose(&reply);
	return out;
}

static json_object *result_of(const struct github_pulls_req *req, json_object *pr, const char *base)
{
	json_object *out = json_object_new_object(), *num;

	if (json_object_object_get_ex(pr, "number", &num) &&
	    json_object_is_type(num, json_type_int))
		json_object_object_add(out, "number",
		                       json_object_new_int64(json_object_get_int64(num)));
	if (forge_reply_string(pr, "html_url"))
		json_object_object_add(out, "html_url",
		                       json_object_new_string(forge_reply_string(pr, "html_url")));
	json_object_object_add(out, "head", json_object_new_string(req->head));
	json_object_object_add(out, "base", json_object_new_string(base));
	json_object_object_add(out, "draft", json_object_new_boolean(req->draft));
	return out;
}

int github_pulls_open(const struct github_pulls_req *req, json_object **ret, struct err *err)
{
	char url[FORGE_HTTP_URL_MAX], base[256], hint401[HINT_MAX], hint403[HINT_MAX],
	    hint404[HINT_MAX], hint422[HINT_MAX];
	struct forge_reply_hints hints = {
	    .what = "opening the pull request (the branch is pushed)",
	    .on_401 = hint401,
	    .on_403 = hint403,
	    .on_404 = hint404,
	    .on_422 = hint422,
	};
	_cleanup_json_ json_object *body = json_object_new_object(), *pr = NULL;
	struct forge_http_reply reply = {0};
	long status = 0;

	*ret = NULL;
	if (github_pulls_repository_check(req->repository, err) < 0)
		return err_ret(err);
	if (req->base)
		snprintf(base, sizeof(base), "%s", req->base);
	else if (default_branch(req, base, sizeof(base), err) < 0)
		return err_ret(err);
	snprintf(hint401, sizeof(hint401),
	         "the token in the spec was refused (expired, revoked or mistyped): get a new one "
	         "(an installation token lasts an hour) and publish again");
	snprintf(hint403, sizeof(hint403),
	         "the token may not open pull requests in %s: an installation token needs "
	         "pull_requests:write (sandbox-ctl github-token --permissions "
	         "contents:write,pull_requests:write), a fine-grained token \"Pull requests: "
	         "write\", a classic one the repo scope",
	         req->repository);
	snprintf(hint404, sizeof(hint404),
	         "no repository %s that this token can see (GitHub answers 404 for a private "
	         "repository the token does not cover): check the spec's repository and api_url",
	         req->repository);
	snprintf(hint422, sizeof(hint422),
	         "check that %s is a branch of %s (--base) and that the branch %s was pushed "
	         "to that same repository",
	         base, req->repository, req->head);
	json_object_object_add(body, "title", json_object_new_string(req->title));
	json_object_object_add(body, "head", json_object_new_string(req->head));
	json_object_object_add(body, "base", json_object_new_string(base));
	if (req->body)
		json_object_object_add(body, "body", json_object_new_string(req->body));
	json_object_object_add(body, "draft", json_object_new_boolean(req->draft));
	if (forge_http_url(url, sizeof(url), api_of(req), "/repos/%s/pulls", req->repository) < 0)
		return err_set(err, ERR_REFUSED, ENAMETOOLONG, "the API URL is too long");
	if (call(req, "POST", url, body, &hints, &pr, &status, &reply, err) == 0) {
		*ret = result_of(req, pr, base);
		return 0;
	}
	if (status == 422 && forge_reply_mentions(reply.body, reply.len, "already exists")) {
		*ret = find_existing(req);
		err_set(err, ERR_REFUSED, EEXIST,
		        "a pull request from %s is open already%s%s; the push updated it (the "
		        "branch is its head)",
		        req->head, *ret ? ": " : "",
		        *ret ? forge_reply_string(*ret, "html_url") : " (the API did not list it)");
	} else if (status == 422 && forge_reply_mentions(reply.body, reply.len, "No commits")) {
		err_set(err, ERR_REFUSED, EINVAL,
		        "opening the pull request (the branch is pushed): the API answered 422, no "
		        "commits between %s and %s: nothing to review (choose another --base, or "
		        "publish after a change)",
		        base, req->head);
	}
	forge_http_reply_dispose(&reply);
	return err_ret(err);
}
