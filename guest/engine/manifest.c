/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The manifest the app writes is untrusted: it is read without following links, capped,
 * parsed strictly with json-c and reduced to the two values the platform needs, which the
 * engine then writes itself as runtime.json. No message ever quotes the token (or the path).
 */
#include "manifest.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "json_strict.h"
#include "file.h"
#include "log.h"

static int manifest_fail(struct err *err, const char *msg)
{
	return err_set(err, ERR_FAILED, EINVAL, "%s", msg);
}

static const char *manifest_type_name(struct json_object *o)
{
	switch (json_object_get_type(o)) {
	case json_type_null:
		return "null";
	case json_type_boolean:
		return "a boolean";
	case json_type_int:
	case json_type_double:
		return "a number";
	case json_type_string:
		return "a string";
	case json_type_array:
		return "an array";
	default:
		return "an object";
	}
}

/* Every byte in lo..0x7e, and no NUL hidden inside the json-c string. */
static bool manifest_printable(struct json_object *v, unsigned char lo)
{
	const char *s = json_object_get_string(v);
	size_t n = (size_t)json_object_get_string_len(v);

	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < lo || (unsigned char)s[i] > 0x7e)
			return false;
	return true;
}

static int manifest_path_check(struct json_object *obj, char **ret, struct err *err)
{
	struct json_object *v = NULL;
	const char *s;

	if (!json_object_object_get_ex(obj, "mcp_path", &v) || !v)
		return manifest_fail(err, "the manifest has no `mcp_path`");
	if (!json_object_is_type(v, json_type_string))
		return manifest_fail(err, "`mcp_path` must be a string");
	s = json_object_get_string(v);
	if (s[0] != '/')
		return manifest_fail(err, "`mcp_path` must start with /");
	if (s[1] == '/')
		return manifest_fail(err, "`mcp_path` must not start with //");
	if (!manifest_printable(v, 0x20))
		return manifest_fail(err, "`mcp_path` must be printable ASCII");
	if (json_object_get_string_len(v) > MANIFEST_FIELD_MAX)
		return err_set(err, ERR_FAILED, EINVAL, "`mcp_path` must be at most %d bytes",
		               MANIFEST_FIELD_MAX);
	*ret = strdup(s);
	if (!*ret)
		return err_oom_at(err, "reading the manifest");
	return 0;
}

/* Absent and null both mean no token. */
static int manifest_token_check(struct json_object *obj, char **ret, struct err *err)
{
	struct json_object *v = NULL;

	*ret = NULL;
	if (!json_object_object_get_ex(obj, "mcp_token", &v) || !v)
		return 0;
	if (!json_object_is_type(v, json_type_string))
		return manifest_fail(err, "`mcp_token` must be a string or null");
	if (json_object_get_string_len(v) == 0)
		return manifest_fail(err,
		                     "`mcp_token` must not be empty (write null for no token)");
	if (!manifest_printable(v, 0x21))
		return manifest_fail(err, "`mcp_token` must be printable ASCII without spaces");
	if (json_object_get_string_len(v) > MANIFEST_FIELD_MAX)
		return err_set(err, ERR_FAILED, EINVAL, "`mcp_token` must be at most %d bytes",
		               MANIFEST_FIELD_MAX);
	*ret = strdup(json_object_get_string(v));
	if (!*ret)
		return err_oom_at(err, "reading the manifest");
	return 0;
}

/* Only JSON whitespace (buf need not be NUL-terminated). */
static bool manifest_blank(const char *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (!memchr(" \t\r\n", buf[i], 4))
			return false;
	return true;
}

int manifest_parse(const char *buf, size_t len, struct manifest *ret, struct err *err)
{
	_cleanup_json_ struct json_object *obj = NULL;
	struct manifest m = {0};
	enum json_tokener_error jerr;
	size_t off;
	int r;

	if (len > MANIFEST_MAX)
		return err_set(err, ERR_FAILED, EFBIG, "the manifest is larger than %d bytes",
		               MANIFEST_MAX);
	switch (json_strict_parse(buf, len, &obj, &off, &jerr)) {
	case JSON_STRICT_OK:
		break;
	case JSON_STRICT_NUL_BYTE:
		return err_set(err, ERR_FAILED, EINVAL,
		               "the manifest is not valid JSON (a NUL byte at offset %zu)", off);
	case JSON_STRICT_NUL_ESCAPE:
		return err_set(err, ERR_FAILED, EINVAL,
		               "the manifest holds a NUL character (\\u0000 at offset %zu)", off);
	case JSON_STRICT_NO_MEMORY:
		return err_oom_at(err, "reading the manifest");
	case JSON_STRICT_TRUNCATED:
		if (manifest_blank(buf, len))
			return err_set(err, ERR_FAILED, EINVAL, "the manifest is empty");
		return err_set(
		    err, ERR_FAILED, EINVAL,
		    "the manifest is not valid JSON (unexpected end of data at offset %zu)", off);
	case JSON_STRICT_SYNTAX:
		return err_set(err, ERR_FAILED, EINVAL,
		               "the manifest is not valid JSON (%s at offset %zu)",
		               json_tokener_error_desc(jerr), off);
	case JSON_STRICT_TRAILING:
		return err_set(
		    err, ERR_FAILED, EINVAL,
		    "the manifest is not valid JSON (unexpected data after the object at "
		    "offset %zu)",
		    off);
	}
	if (!json_object_is_type(obj, json_type_object))
		return err_set(err, ERR_FAILED, EINVAL,
		               "the manifest is not a JSON object (it is %s)",
		               manifest_type_name(obj));
	r = manifest_path_check(obj, &m.mcp_path, err);
	if (r < 0)
		return r;
	r = manifest_token_check(obj, &m.mcp_token, err);
	if (r < 0) {
		manifest_dispose(&m);
		return r;
	}
	*ret = m;
	return 0;
}

int manifest_read(int dirfd, const char *path, struct manifest *ret, struct err *err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r;

	r = file_read_capped(dirfd, path, MANIFEST_MAX, READ_NOFOLLOW, &buf, &len, err);
	if (r < 0) {
		/* Whatever the app left there, the manifest step failed: never a refusal. */
		if (err->code == ENOENT)
			err_reword(err, "the manifest command did not write %s", path);
		else
			err_wrap(err, "cannot read the manifest");
		err->cls = ERR_FAILED;
		return r;
	}
	r = manifest_parse(buf, len, ret, err);
	explicit_bzero(buf, len);
	return r;
}

char *manifest_to_json(const struct manifest *m)
{
	_cleanup_json_ struct json_object *obj = json_object_new_object();
	const char *s;
	size_t len;
	char *out;

	if (!obj || !m->mcp_path)
		return NULL;
	if (json_object_object_add(obj, "mcp_path", json_object_new_string(m->mcp_path)) < 0)
		return NULL;
	if (json_object_object_add(obj, "mcp_token",
	                           m->mcp_token ? json_object_new_string(m->mcp_token) : NULL) < 0)
		return NULL;
	s = json_object_to_json_string_ext(obj,
	                                   JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!s)
		return NULL;
	len = strlen(s);
	out = malloc(len + 2);
	if (!out)
		return NULL;
	memcpy(out, s, len);
	out[len] = '\n';
	out[len + 1] = '\0';
	return out;
}

int manifest_stage_runtime(const struct manifest *m, const char *path, uid_t uid, gid_t gid,
                           struct file_stage *ret, struct err *err)
{
	_cleanup_free_ char *json = NULL;
	size_t len;
	int r;

	*ret = (struct file_stage){0};
	if (!m->mcp_path)
		return err_set(err, ERR_FAILED, EINVAL, "cannot write %s: no mcp_path", path);
	json = manifest_to_json(m);
	if (!json)
		return err_oom_at(err, "writing %s", path);
	len = strlen(json);
	r = file_stage(path, json, len, 0600, uid, gid, ret, err);
	explicit_bzero(json, len);
	return r;
}

int manifest_write_runtime(const struct manifest *m, const char *path, uid_t uid, gid_t gid,
                           struct err *err)
{
	struct file_stage stage;

	if (manifest_stage_runtime(m, path, uid, gid, &stage, err) < 0)
		return -1;
	return file_stage_commit(&stage, err);
}

void manifest_dispose(struct manifest *m)
{
	if (!m)
		return;
	free(m->mcp_path);
	if (m->mcp_token) {
		explicit_bzero(m->mcp_token, strlen(m->mcp_token));
		free(m->mcp_token);
	}
	*m = (struct manifest){0};
}
