/* SPDX-License-Identifier: Apache-2.0 */
#include "forge_reply.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "json_strict.h"
#include "output.h"

#define TEXT_MAX 200   /* of one string from the answer */
#define ERRORS_SHOWN 3 /* entries of errors[] */
#define SUMMARY_MAX 600

static json_object *parse(const char *body, size_t len)
{
	enum json_tokener_error jerr;
	json_object *obj = NULL;
	size_t off;

	if (!body || !len || json_strict_parse(body, len, &obj, &off, &jerr) != JSON_STRICT_OK)
		return NULL;
	if (!json_object_is_type(obj, json_type_object)) {
		json_object_put(obj);
		return NULL;
	}
	return obj;
}

const char *forge_reply_string(json_object *obj, const char *key)
{
	json_object *v;

	if (!obj || !json_object_object_get_ex(obj, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

int forge_reply_object(const char *body, size_t len, const char *what, json_object **ret,
                       struct err *err)
{
	*ret = parse(body, len);
	if (!*ret)
		return err_set(err, ERR_FAILED, EPROTO,
		               "%s: the API's answer is not a JSON object: is the API URL the "
		               "forge's REST API (like https://api.github.com)?",
		               what);
	return 0;
}

/* Append s, cut to TEXT_MAX bytes and cleaned for a terminal, to buf. */
static void append_clean(char *buf, size_t cap, const char *s)
{
	char tmp[TEXT_MAX + 1];
	size_t n = strlen(s), used = strlen(buf);

	if (n > TEXT_MAX)
		n = TEXT_MAX;
	n = output_clean(tmp, s, n);
	tmp[n] = '\0';
	if (used < cap)
		snprintf(buf + used, cap - used, "%s", tmp);
}

static void append(char *buf, size_t cap, const char *s)
{
	size_t used = strlen(buf);

	if (used < cap)
		snprintf(buf + used, cap - used, "%s", s);
}

/* One entry of errors[]: its message, else "field code" (GitHub's "head invalid"). */
static void append_entry(char *buf, size_t cap, json_object *e)
{
	const char *msg = forge_reply_string(e, "message");
	const char *field = forge_reply_string(e, "field");
	const char *code = forge_reply_string(e, "code");

	if (json_object_is_type(e, json_type_string)) {
		append_clean(buf, cap, json_object_get_string(e));
	} else if (msg) {
		append_clean(buf, cap, msg);
	} else if (field || code) {
		append_clean(buf, cap, field ? field : "");
		append(buf, cap, field && code ? " " : "");
		append_clean(buf, cap, code ? code : "");
	} else {
		append(buf, cap, "?");
	}
}

/* "Validation Failed: A pull request already exists for o:b." from the answer, or "". */
static void summary(json_object *obj, char *buf, size_t cap)
{
	const char *msg = forge_reply_string(obj, "message");
	json_object *errors;
	size_t n;

	buf[0] = '\0';
	if (msg)
		append_clean(buf, cap, msg);
	if (!obj || !json_object_object_get_ex(obj, "errors", &errors) ||
	    !json_object_is_type(errors, json_type_array))
		return;
	n = json_object_array_length(errors);
	for (size_t i = 0; i < n && i < ERRORS_SHOWN; i++) {
		append(buf, cap, i ? "; " : buf[0] ? ": " : "");
		append_entry(buf, cap, json_object_array_get_idx(errors, i));
	}
	if (n > ERRORS_SHOWN) {
		char more[32];
		snprintf(more, sizeof(more), "; %zu more", n - ERRORS_SHOWN);
		append(buf, cap, more);
	}
}

bool forge_reply_mentions(const char *body, size_t len, const char *needle)
{
	_cleanup_json_ json_object *obj = parse(body, len);
	char text[SUMMARY_MAX];

	if (!obj)
		return false;
	summary(obj, text, sizeof(text));
	return strstr(text, needle) != NULL;
}

int forge_reply_error(long status, const char *body, size_t len, const struct forge_reply_hints *h,
                      struct err *err)
{
	_cleanup_json_ json_object *obj = parse(body, len);
	const char *hint = NULL;
	char text[SUMMARY_MAX];
	int cls = ERR_REFUSED, code;

	summary(obj, text, sizeof(text));
	switch (status) {
	case 401:
		code = EACCES;
		hint = h->on_401;
		break;
	case 403:
		code = EPERM;
		hint = h->on_403;
		if (strstr(text, "rate limit")) {
			code = EAGAIN;
			hint = "the API's rate limit is spent for this token: try again after the "
			       "time in the answer's X-RateLimit-Reset";
		}
		break;
	case 404:
		code = ENOENT;
		hint = h->on_404;
		break;
	case 422:
		code = EINVAL;
		hint = h->on_422;
		break;
	default:
		cls = ERR_FAILED;
		code = status >= 500 || status == 429 ? EAGAIN : EPROTO;
		if (status >= 500 || status == 429)
			hint = "the forge failed or is busy: try again later";
		else
			hint = "an answer this command does not expect: is the API URL the forge's "
			       "REST API?";
	}
	return err_set(err, cls, code, "%s: the API answered %ld%s%s%s%s%s", h->what, status,
	               text[0] ? " (" : "", text, text[0] ? ")" : "", hint ? ": " : "",
	               hint ? hint : "");
}
