/* SPDX-License-Identifier: Apache-2.0 */
#include "session_request.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "file.h"
#include "json_strict.h"
#include "strv.h"

static int refuse(struct err *err, const char *fmt, const char *key)
{
	return err_set(err, ERR_REFUSED, EINVAL, fmt, key);
}

static int string_list(struct json_object *o, const char *key, size_t max_n, bool need_one,
                       char ***ret, struct err *err)
{
	_cleanup_strv_ char **v = NULL;
	size_t n;

	if (!json_object_is_type(o, json_type_array))
		return refuse(err, "request: `%s` must be a list of strings", key);
	n = json_object_array_length(o);
	if (need_one && n == 0)
		return refuse(err, "request: `%s` must not be empty", key);
	if (n > max_n)
		return err_set(err, ERR_REFUSED, E2BIG, "request: `%s` has more than %zu entries",
		               key, max_n);
	for (size_t i = 0; i < n; i++) {
		struct json_object *s = json_object_array_get_idx(o, i);
		const char *str;

		if (!json_object_is_type(s, json_type_string))
			return err_set(err, ERR_REFUSED, EINVAL,
			               "request: `%s[%zu]` must be a string", key, i);
		str = json_object_get_string(s);
		if ((size_t)json_object_get_string_len(s) > SESSION_REQUEST_MAX_ARG_LEN)
			return err_set(err, ERR_REFUSED, E2BIG,
			               "request: `%s[%zu]` is longer than %d bytes", key, i,
			               SESSION_REQUEST_MAX_ARG_LEN);
		if (strv_push(&v, str) < 0)
			return err_oom(err);
	}
	*ret = TAKE_PTR(v);
	return 0;
}

static int env_object(struct json_object *o, char ***ret, struct err *err)
{
	_cleanup_strv_ char **env = NULL;
	size_t n = 0;

	if (!json_object_is_type(o, json_type_object))
		return refuse(err, "request: `%s` must be an object of strings", "env");
	json_object_object_foreach(o, name, val)
	{
		if (++n > SESSION_REQUEST_MAX_ENV)
			return err_set(err, ERR_REFUSED, E2BIG,
			               "request: `env` has more than %d names",
			               SESSION_REQUEST_MAX_ENV);
		if (strlen(name) > 128 || !strv_env_name_valid(name))
			return err_set(err, ERR_REFUSED, EINVAL,
			               "request: `env` name '%.128s' is not a valid variable name",
			               name);
		if (!json_object_is_type(val, json_type_string))
			return err_set(err, ERR_REFUSED, EINVAL,
			               "request: `env.%s` must be a string", name);
		if ((size_t)json_object_get_string_len(val) > SESSION_REQUEST_MAX_ARG_LEN)
			return err_set(err, ERR_REFUSED, E2BIG,
			               "request: `env.%s` is longer than %d bytes", name,
			               SESSION_REQUEST_MAX_ARG_LEN);
		if (strv_env_set(&env, name, json_object_get_string(val)) < 0)
			return err_oom(err);
	}
	*ret = TAKE_PTR(env);
	return 0;
}

static int uint_key(struct json_object *root, const char *key, int64_t max, int64_t def,
                    int64_t *ret, struct err *err)
{
	struct json_object *o;
	int64_t v;

	if (!json_object_object_get_ex(root, key, &o) || json_object_is_type(o, json_type_null)) {
		*ret = def;
		return 0;
	}
	if (!json_object_is_type(o, json_type_int))
		return refuse(err, "request: `%s` must be a whole number", key);
	errno = 0;
	v = json_object_get_int64(o);
	if (errno != 0 || v < 1 || v > max)
		return err_set(err, ERR_REFUSED, ERANGE, "request: `%s` must be 1 to %lld", key,
		               (long long)max);
	*ret = v;
	return 0;
}

static int bool_key(struct json_object *root, const char *key, bool *ret, struct err *err)
{
	struct json_object *o;

	*ret = false;
	if (!json_object_object_get_ex(root, key, &o) || json_object_is_type(o, json_type_null))
		return 0;
	if (!json_object_is_type(o, json_type_boolean))
		return refuse(err, "request: `%s` must be true or false", key);
	*ret = json_object_get_boolean(o);
	return 0;
}

static int parse_object(struct json_object *root, struct session_request *r, struct err *err)
{
	struct json_object *o;
	int64_t v;

	if (!json_object_is_type(root, json_type_object))
		return err_set(err, ERR_REFUSED, EINVAL, "request: must be a JSON object");

	if (!json_object_object_get_ex(root, "argv", &o) ||
	    json_object_is_type(o, json_type_null) ||
	    (json_object_is_type(o, json_type_array) && json_object_array_length(o) == 0))
		return err_set(err, ERR_REFUSED, EINVAL, "request: there is no `argv`");
	if (string_list(o, "argv", SESSION_REQUEST_MAX_ARGS, true, &r->argv, err) < 0)
		return err_ret(err);
	if (r->argv[0][0] == '\0')
		return refuse(err, "request: `%s[0]` must not be empty", "argv");

	r->mode = SESSION_MODE_API_KEY;
	if (json_object_object_get_ex(root, "mode", &o) &&
	    !json_object_is_type(o, json_type_null)) {
		const char *m = json_object_get_string(o);

		if (!json_object_is_type(o, json_type_string))
			return refuse(err, "request: `%s` must be \"api_key\" or \"sandbox_login\"",
			              "mode");
		if (strcmp(m, "api_key") == 0)
			r->mode = SESSION_MODE_API_KEY;
		else if (strcmp(m, "sandbox_login") == 0)
			r->mode = SESSION_MODE_SANDBOX_LOGIN;
		else
			return refuse(err, "request: `%s` must be \"api_key\" or \"sandbox_login\"",
			              "mode");
	}

	if (uint_key(root, "timeout", SESSION_TIMEOUT_MAX, SESSION_DEFAULT_TIMEOUT, &v, err) < 0)
		return err_ret(err);
	r->timeout = (unsigned)v;
	if (uint_key(root, "max_diff_bytes", SESSION_DIFF_BYTES_MAX, SESSION_DEFAULT_DIFF_BYTES, &v,
	             err) < 0)
		return err_ret(err);
	r->max_diff_bytes = (size_t)v;
	if (uint_key(root, "approval_timeout", SESSION_TIMEOUT_MAX,
	             SESSION_DEFAULT_APPROVAL_TIMEOUT, &v, err) < 0)
		return err_ret(err);
	r->approval_timeout = (unsigned)v;
	if (bool_key(root, "live", &r->live, err) < 0 ||
	    bool_key(root, "dangerously_no_sandbox", &r->dangerously_no_sandbox, err) < 0)
		return err_ret(err);

	if (json_object_object_get_ex(root, "env", &o) && !json_object_is_type(o, json_type_null) &&
	    env_object(o, &r->env, err) < 0)
		return err_ret(err);
	if (json_object_object_get_ex(root, "pathspecs", &o) &&
	    !json_object_is_type(o, json_type_null) &&
	    string_list(o, "pathspecs", SESSION_REQUEST_MAX_PATHSPECS, false, &r->pathspecs, err) <
	        0)
		return err_ret(err);
	return 0;
}

int session_request_parse(const char *buf, size_t len, struct session_request *ret, struct err *err)
{
	_cleanup_json_ struct json_object *root = NULL;
	struct session_request r = {0};
	enum json_tokener_error jerr = json_tokener_success;
	size_t off = 0;

	switch (json_strict_parse(buf, len, &root, &off, &jerr)) {
	case JSON_STRICT_OK:
		break;
	case JSON_STRICT_NO_MEMORY:
		return err_oom(err);
	case JSON_STRICT_SYNTAX:
		return err_set(err, ERR_REFUSED, EINVAL, "request: not valid JSON at byte %zu: %s",
		               off, json_tokener_error_desc(jerr));
	default:
		return err_set(err, ERR_REFUSED, EINVAL,
		               "request: not one valid JSON value (byte %zu)", off);
	}
	if (parse_object(root, &r, err) < 0) {
		session_request_dispose(&r);
		return err_ret(err);
	}
	*ret = r;
	return 0;
}

int session_request_load(int dirfd, struct session_request *ret, struct err *err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int rc;

	rc = file_read_capped(dirfd, "request.json", SESSION_REQUEST_MAX,
	                      READ_NOFOLLOW | READ_MISSING_OK, &buf, &len, err);
	if (rc < 0)
		return err_wrap(err, "request.json");
	if (rc == 1)
		return err_set(err, ERR_REFUSED, ENOENT, "there is no request.json");
	return session_request_parse(buf, len, ret, err);
}

void session_request_dispose(struct session_request *r)
{
	strv_free(r->argv);
	strv_free(r->env);
	strv_free(r->pathspecs);
	*r = (struct session_request){0};
}

const char *session_request_mode_name(enum session_mode mode)
{
	return mode == SESSION_MODE_SANDBOX_LOGIN ? "sandbox_login" : "api_key";
}
