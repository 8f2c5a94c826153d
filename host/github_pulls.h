/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Opening a pull request through GitHub's REST API (docs/forge.md): `POST
 * /repos/{owner}/{repo}/pulls` {title, head, base, body, draft} -> 201 {number, html_url}.
 * Without a base, the repository's default branch (`GET /repos/{owner}/{repo}`). When one is
 * open already for the branch (422 "A pull request already exists for ..."), `GET
 * /repos/{owner}/{repo}/pulls?head=OWNER:BRANCH&state=open` finds it, so the error can give its
 * address.
 */
#ifndef SA_HOST_GITHUB_PULLS_H
#define SA_HOST_GITHUB_PULLS_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "err.h"

#define GITHUB_PULLS_BODY_MAX (64 * 1024) /* GitHub's own limit is 65,536 characters */
#define GITHUB_PULLS_TITLE_MAX 256

struct github_pulls_req {
	const char *api_url;    /* FORGE_HTTP_DEFAULT_API when NULL */
	const char *repository; /* OWNER/NAME */
	const char *head;       /* the branch pushed, in the same repository */
	const char *base;       /* NULL: the repository's default branch */
	const char *title;
	const char *body; /* NULL: none */
	bool draft;
	const char *token; /* token_len bytes, the caller's guarded memory */
	size_t token_len;
	int timeout_ms;
};

/* OWNER/NAME as GitHub spells them (letters, digits, '-', '_', '.'); ERR_REFUSED otherwise. */
int github_pulls_repository_check(const char *repository, struct err *err);

/*
 * Open the pull request. *ret: {"number", "html_url", "head", "base", "draft"}. When one is
 * open for head already: ERR_REFUSED/EEXIST, and *ret is {"number", "html_url", "existing":
 * true} when it was found (else NULL). Other refusals as forge_reply_error() words them.
 */
int github_pulls_open(const struct github_pulls_req *req, json_object **ret, struct err *err);

#endif
