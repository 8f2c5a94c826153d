/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a forge's REST API answered, read with json-c: the JSON object of a success, and the
 * error of a failure worded for a person (docs/forge.md, "Errors and their fixes"): the status,
 * GitHub's `message` and up to three entries of `errors[]`, then what to do, which the caller
 * knows best (struct forge_reply_hints). The answer is not trusted: every string taken from it
 * is cut short and cleaned of control characters before it reaches a message.
 */
#ifndef SA_HOST_FORGE_REPLY_H
#define SA_HOST_FORGE_REPLY_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "err.h"

struct forge_reply_hints {
	const char *what; /* "opening the pull request" */
	/* What to do after a 401, 403, 404, 422; NULL: nothing particular. */
	const char *on_401, *on_403, *on_404, *on_422;
};

/*
 * The JSON object a 2xx answer holds (ERR_FAILED/EPROTO when it holds none). what says which
 * call it answered.
 */
int forge_reply_object(const char *body, size_t len, const char *what, json_object **ret,
                       struct err *err);

/*
 * A non-2xx answer as err: "WHAT: the API answered 422 (Validation Failed: A pull request
 * already exists for o:b.): HINT". 401 -> EACCES, 403 -> EPERM (a spent rate limit: EAGAIN),
 * 404 -> ENOENT, 422 -> EINVAL, all ERR_REFUSED; anything else ERR_FAILED (5xx: EAGAIN).
 */
int forge_reply_error(long status, const char *body, size_t len, const struct forge_reply_hints *h,
                      struct err *err);

/* Whether an error answer's message or one of its errors[].message contains needle. */
bool forge_reply_mentions(const char *body, size_t len, const char *needle);

/* A string member of obj, NULL when missing or not a string. */
const char *forge_reply_string(json_object *obj, const char *key);

#endif
