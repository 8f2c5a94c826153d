/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The spec file of the spec shape, read with json-c and checked key by key. docs/boot-spec.md
 * is the schema; every rule there has its check here, in the same order.
 */
#include "boot_spec.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "file.h"
#include "json_strict.h"
#include "log.h"
#include "strv.h"

/* Largest integer env value turned into a string: exact in every JSON implementation. */
#define SPEC_ENV_INT_MAX 9007199254740992LL

static const char *const spec_reserved_steps[] = {"checkout", "preflight", "toolchain", "manifest",
                                                  "start"};

static int spec_refuse(struct err *err, const char *key, const char *fmt, ...) _printf_(3, 4);
static int spec_refuse(struct err *err, const char *key, const char *fmt, ...)
{
	char what[ERR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return err_set(err, ERR_REFUSED, EINVAL, "spec: `%s` %s", key, what);
}

static int spec_oom(struct err *err)
{
	return err_oom_at(err, "reading the spec");
}

/* The value of key, or NULL when the key is absent or null (both mean "not given"). */
static struct json_object *spec_member(struct json_object *obj, const char *key)
{
	struct json_object *v = NULL;

	if (!json_object_object_get_ex(obj, key, &v))
		return NULL;
	return v;
}

/* Debug-log the keys of obj that are not in known (NULL-terminated): they are ignored. */
static void spec_log_unknown(struct json_object *obj, const char *where, const char *const *known)
{
	json_object_object_foreach(obj, key, val)
	{
		bool found = false;

		(void)val;
		for (size_t i = 0; known[i]; i++)
			if (strcmp(key, known[i]) == 0)
				found = true;
		if (!found)
			log_debug("spec: ignoring unknown key `%s%s%.64s`", where,
			          *where ? "." : "", key);
	}
}

/* A JSON string without embedded NUL characters. */
static int spec_string(struct json_object *v, const char *key, const char *what, const char **ret,
                       struct err *err)
{
	const char *s;

	if (!json_object_is_type(v, json_type_string))
		return spec_refuse(err, key, "must be %s", what);
	s = json_object_get_string(v);
	if ((size_t)json_object_get_string_len(v) != strlen(s))
		return spec_refuse(err, key, "must not contain a NUL character");
	*ret = s;
	return 0;
}

static int spec_dup(const char *s, char **ret, struct err *err)
{
	char *c = strdup(s);

	if (!c)
		return spec_oom(err);
	free(*ret);
	*ret = c;
	return 0;
}

/* An integer from min to max. Floats, booleans and strings are refused; json-c clamps what
 * does not fit in 64 bits, and a clamped value is out of every range used here. */
static int spec_uint(struct json_object *v, const char *key, unsigned min, unsigned max,
                     unsigned *ret, struct err *err)
{
	int64_t n;

	if (!json_object_is_type(v, json_type_int))
		return spec_refuse(err, key, "must be an integer from %u to %u", min, max);
	n = json_object_get_int64(v);
	if (n < (int64_t)min || n > (int64_t)max)
		return spec_refuse(err, key, "must be an integer from %u to %u", min, max);
	*ret = (unsigned)n;
	return 0;
}

/* An optional timeout in seconds: absent or null leaves *ret at 0 ("not given"). */
static int spec_timeout(struct json_object *obj, const char *key, const char *path, unsigned *ret,
                        struct err *err)
{
	struct json_object *v = spec_member(obj, key);

	if (!v)
		return 0;
	return spec_uint(v, path, 1, BOOT_SPEC_TIMEOUT_MAX, ret, err);
}

static bool spec_is_control(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

/*
 * An absolute path: starts with '/', names something below '/', no ".." component, no control
 * characters, shorter than PATH_MAX. NUL is excluded by spec_string.
 */
static int spec_path(struct json_object *v, const char *key, char **ret, struct err *err)
{
	const char *s, *p;
	int r;

	r = spec_string(v, key, "an absolute path", &s, err);
	if (r < 0)
		return r;
	if (s[0] != '/')
		return spec_refuse(err, key, "must be an absolute path");
	if (strlen(s) >= PATH_MAX)
		return spec_refuse(err, key, "must be shorter than %d bytes", PATH_MAX);
	if (strspn(s, "/") == strlen(s))
		return spec_refuse(err, key, "must name a path below /");
	for (p = s; *p; p++)
		if (spec_is_control((unsigned char)*p))
			return spec_refuse(err, key, "must not contain control characters");
	for (p = s; *p;) {
		size_t n;

		p += strspn(p, "/");
		n = strcspn(p, "/");
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return spec_refuse(err, key, "must not contain a .. component");
		p += n;
	}
	return spec_dup(s, ret, err);
}

/* The next component of a path, skipping empty and "." ones; length 0 at the end. */
static const char *spec_next_component(const char *p, size_t *ret_len)
{
	for (;;) {
		p += strspn(p, "/");
		*ret_len = strcspn(p, "/");
		if (!(*ret_len == 1 && p[0] == '.'))
			return p;
		p++;
	}
}

/* Whether path is dir or below it, compared component by component (no ".." is left). */
static bool spec_path_within(const char *path, const char *dir)
{
	for (;;) {
		size_t np, nd;

		path = spec_next_component(path, &np);
		dir = spec_next_component(dir, &nd);
		if (nd == 0)
			return true;
		if (np != nd || memcmp(path, dir, np) != 0)
			return false;
		path += np;
		dir += nd;
	}
}

/* A non-empty string holding something other than blanks. */
static int spec_command(struct json_object *v, const char *key, char **ret, struct err *err)
{
	const char *s;
	int r;

	r = spec_string(v, key, "a non-empty string", &s, err);
	if (r < 0)
		return r;
	if (s[strspn(s, " \t\r\n")] == '\0')
		return spec_refuse(err, key, "must be a non-empty string");
	return spec_dup(s, ret, err);
}

/* 1 to max bytes, every one of them in allowed. */
static bool spec_charset(const char *s, size_t max, const char *allowed)
{
	size_t n = strlen(s);

	if (n == 0 || n > max)
		return false;
	return strspn(s, allowed) == n;
}

#define SPEC_LOWER "abcdefghijklmnopqrstuvwxyz"
#define SPEC_UPPER "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
#define SPEC_DIGIT "0123456789"

bool boot_spec_step_name_valid(const char *name)
{
	if (!name || name[0] < 'a' || name[0] > 'z')
		return false;
	if (!spec_charset(name, 40, SPEC_LOWER SPEC_DIGIT "_"))
		return false;
	for (size_t i = 0; i < ELEMENTSOF(spec_reserved_steps); i++)
		if (strcmp(name, spec_reserved_steps[i]) == 0)
			return false;
	return true;
}

static bool spec_step_name_reserved(const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(spec_reserved_steps); i++)
		if (strcmp(name, spec_reserved_steps[i]) == 0)
			return true;
	return false;
}

/* `manifest` and `start`: {"command": "...", "timeout": N?}. */
static int spec_phase(struct json_object *obj, const char *key, struct boot_step *ret,
                      struct err *err)
{
	static const char *const known[] = {"command", "timeout", NULL};
	struct json_object *v = spec_member(obj, key), *cmd;
	char path[64];
	int r;

	if (!v)
		return spec_refuse(err, key, "is required");
	if (!json_object_is_type(v, json_type_object))
		return spec_refuse(err, key, "must be an object with a `command`");
	spec_log_unknown(v, key, known);
	r = spec_dup(key, &ret->name, err);
	if (r < 0)
		return r;
	snprintf(path, sizeof(path), "%s.command", key);
	cmd = spec_member(v, "command");
	if (!cmd)
		return spec_refuse(err, path, "is required");
	r = spec_command(cmd, path, &ret->command, err);
	if (r < 0)
		return r;
	snprintf(path, sizeof(path), "%s.timeout", key);
	return spec_timeout(v, "timeout", path, &ret->timeout, err);
}

static int spec_step(struct json_object *v, size_t idx, const struct boot_step *prev,
                     struct boot_step *ret, struct err *err)
{
	static const char *const known[] = {"name", "command", "timeout", "skip", "if_task", NULL};
	struct json_object *m;
	char key[64], path[64];
	const char *s;
	int r;

	snprintf(key, sizeof(key), "steps[%zu]", idx);
	if (!json_object_is_type(v, json_type_object))
		return spec_refuse(err, key, "must be an object with a `name` and a `command`");
	spec_log_unknown(v, key, known);

	snprintf(path, sizeof(path), "%s.name", key);
	m = spec_member(v, "name");
	if (!m)
		return spec_refuse(err, path, "is required");
	r = spec_string(m, path, "a string matching [a-z][a-z0-9_]{0,39}", &s, err);
	if (r < 0)
		return r;
	if (spec_step_name_reserved(s))
		return spec_refuse(err, path,
		                   "must not be checkout, preflight, toolchain, manifest or start "
		                   "(those are the boot's own phases)");
	if (!boot_spec_step_name_valid(s))
		return spec_refuse(err, path, "must match [a-z][a-z0-9_]{0,39}");
	for (size_t i = 0; i < idx; i++)
		if (strcmp(prev[i].name, s) == 0)
			return spec_refuse(err, path, "repeats the name \"%s\" of `steps[%zu]`", s,
			                   i);
	r = spec_dup(s, &ret->name, err);
	if (r < 0)
		return r;

	snprintf(path, sizeof(path), "%s.skip", key);
	m = spec_member(v, "skip");
	if (m && json_object_is_type(m, json_type_boolean)) {
		if (json_object_get_boolean(m)) {
			r = spec_dup("skipped by the spec", &ret->skip, err);
			if (r < 0)
				return r;
		}
	} else if (m) {
		r = spec_string(m, path, "the reason the step is skipped", &s, err);
		if (r < 0)
			return r;
		if (!*s)
			return spec_refuse(err, path, "must be the reason the step is skipped");
		r = spec_dup(s, &ret->skip, err);
		if (r < 0)
			return r;
	}

	snprintf(path, sizeof(path), "%s.command", key);
	m = spec_member(v, "command");
	if (!m && !ret->skip)
		return spec_refuse(err, path, "is required (only a skipped step may omit it)");
	if (m) {
		r = spec_command(m, path, &ret->command, err);
		if (r < 0)
			return r;
	}

	snprintf(path, sizeof(path), "%s.timeout", key);
	r = spec_timeout(v, "timeout", path, &ret->timeout, err);
	if (r < 0)
		return r;

	snprintf(path, sizeof(path), "%s.if_task", key);
	m = spec_member(v, "if_task");
	if (m) {
		r = spec_string(m, path, "a Rails task name", &s, err);
		if (r < 0)
			return r;
		if (!spec_charset(s, 128, SPEC_LOWER SPEC_UPPER SPEC_DIGIT "_:.-") || s[0] == '-')
			return spec_refuse(err, path,
			                   "must be a Rails task name such as assets:precompile");
		r = spec_dup(s, &ret->if_task, err);
		if (r < 0)
			return r;
	}
	return 0;
}

static int spec_steps(struct json_object *obj, struct boot_spec *s, struct err *err)
{
	struct json_object *v = spec_member(obj, "steps");
	size_t n;

	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_array))
		return spec_refuse(err, "steps", "must be an array of steps");
	n = json_object_array_length(v);
	if (n > BOOT_SPEC_MAX_STEPS)
		return spec_refuse(err, "steps", "must hold at most %d steps", BOOT_SPEC_MAX_STEPS);
	if (n == 0)
		return 0;
	s->steps = calloc(n, sizeof(*s->steps));
	if (!s->steps)
		return spec_oom(err);
	for (size_t i = 0; i < n; i++) {
		int r = spec_step(json_object_array_get_idx(v, i), i, s->steps, &s->steps[i], err);
		/* Count the step even when it failed half-way, so dispose frees what it holds. */
		s->n_steps = i + 1;
		if (r < 0)
			return r;
	}
	return 0;
}

/* A toolchain version: [A-Za-z0-9._+-], 1 to 64 bytes, not starting with '-' or '.'. */
static int spec_version_string(struct json_object *obj, const char *key, char **ret,
                               struct err *err)
{
	struct json_object *v = spec_member(obj, key);
	char path[64];
	const char *s;
	int r;

	if (!v)
		return 0;
	snprintf(path, sizeof(path), "toolchain.%s", key);
	r = spec_string(v, path, "a version string", &s, err);
	if (r < 0)
		return r;
	if (!spec_charset(s, 64, SPEC_LOWER SPEC_UPPER SPEC_DIGIT "._+-") || s[0] == '-' ||
	    s[0] == '.')
		return spec_refuse(err, path,
		                   "must be a version such as 3.3.1 ([A-Za-z0-9._+-], at most 64 "
		                   "characters)");
	return spec_dup(s, ret, err);
}

static int spec_toolchain(struct json_object *obj, struct boot_toolchain *t, struct err *err)
{
	static const char *const known[] = {"ruby", "node", "bun", "services", "timeout", NULL};
	struct json_object *v = spec_member(obj, "toolchain"), *svc;
	int r;

	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_object))
		return spec_refuse(err, "toolchain", "must be an object");
	spec_log_unknown(v, "toolchain", known);
	r = spec_version_string(v, "ruby", &t->ruby, err);
	if (r >= 0)
		r = spec_version_string(v, "node", &t->node, err);
	if (r >= 0)
		r = spec_version_string(v, "bun", &t->bun, err);
	if (r >= 0)
		r = spec_timeout(v, "timeout", "toolchain.timeout", &t->timeout, err);
	if (r < 0)
		return r;
	svc = spec_member(v, "services");
	if (!svc)
		return 0;
	if (!json_object_is_type(svc, json_type_array))
		return spec_refuse(err, "toolchain.services", "must be an array of service names");
	for (size_t i = 0; i < json_object_array_length(svc); i++) {
		struct json_object *e = json_object_array_get_idx(svc, i);
		char path[64];
		const char *s;

		snprintf(path, sizeof(path), "toolchain.services[%zu]", i);
		r = spec_string(e, path, "a service name", &s, err);
		if (r < 0)
			return r;
		if (!spec_charset(s, 64, SPEC_LOWER SPEC_DIGIT "_-") || s[0] == '-')
			return spec_refuse(err, path,
			                   "must be a service name matching [a-z0-9_][a-z0-9_-]*");
		if (strv_contains(t->services, s))
			return spec_refuse(err, path, "repeats the service \"%s\"", s);
		if (strv_push(&t->services, s) < 0)
			return spec_oom(err);
	}
	return 0;
}

static int spec_directories(struct json_object *obj, struct boot_spec *s, struct err *err)
{
	struct json_object *v = spec_member(obj, "directories");

	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_array))
		return spec_refuse(err, "directories", "must be an array of absolute paths");
	for (size_t i = 0; i < json_object_array_length(v); i++) {
		_cleanup_free_ char *p = NULL;
		char path[64];
		int r;

		snprintf(path, sizeof(path), "directories[%zu]", i);
		r = spec_path(json_object_array_get_idx(v, i), path, &p, err);
		if (r < 0)
			return r;
		if (strv_consume(&s->directories, p) < 0)
			return spec_oom(err);
		p = NULL;
	}
	return 0;
}

/*
 * env: NAME -> string. Integers up to 2^53 in magnitude and booleans are accepted and written
 * as JSON writes them; floats, null, arrays and objects are refused. Values are never quoted
 * in messages.
 */
static int spec_env(struct json_object *obj, struct boot_spec *s, struct err *err)
{
	struct json_object *v = spec_member(obj, "env");

	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_object))
		return spec_refuse(err, "env",
		                   "must be an object mapping variable names to strings");
	json_object_object_foreach(v, name, val)
	{
		char path[128], num[32];
		const char *str = NULL;
		int r;

		if (!strv_env_name_valid(name) || strlen(name) > 64)
			return err_set(err, ERR_REFUSED, EINVAL,
			               "spec: `env` has a key that is not a variable name "
			               "([A-Za-z_][A-Za-z0-9_]*, at most 64 characters)");
		snprintf(path, sizeof(path), "env.%s", name);
		switch (val ? json_object_get_type(val) : json_type_null) {
		case json_type_string:
			r = spec_string(val, path, "a string", &str, err);
			if (r < 0)
				return r;
			break;
		case json_type_boolean:
			str = json_object_get_boolean(val) ? "true" : "false";
			break;
		case json_type_int: {
			int64_t n = json_object_get_int64(val);
			if (n > SPEC_ENV_INT_MAX || n < -SPEC_ENV_INT_MAX)
				return spec_refuse(err, path,
				                   "is an integer too large to convert: quote it");
			snprintf(num, sizeof(num), "%lld", (long long)n);
			str = num;
			break;
		}
		case json_type_double:
			return spec_refuse(err, path,
			                   "must be a string (quote non-integer numbers)");
		default:
			return spec_refuse(err, path, "must be a string");
		}
		if (strv_env_set(&s->env, name, str) < 0)
			return spec_oom(err);
	}
	return 0;
}

static int spec_secret_names(struct json_object *obj, struct boot_spec *s, struct err *err)
{
	struct json_object *v = spec_member(obj, "secret_names");

	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_array))
		return spec_refuse(err, "secret_names", "must be an array of variable names");
	for (size_t i = 0; i < json_object_array_length(v); i++) {
		char path[64];
		const char *name;
		int r;

		snprintf(path, sizeof(path), "secret_names[%zu]", i);
		r = spec_string(json_object_array_get_idx(v, i), path, "a variable name", &name,
		                err);
		if (r < 0)
			return r;
		if (!strv_env_name_valid(name) || strlen(name) > 64)
			return spec_refuse(err, path,
			                   "must be a variable name ([A-Za-z_][A-Za-z0-9_]*, at "
			                   "most 64 characters)");
		if (strv_contains(s->secret_names, name))
			return spec_refuse(err, path, "repeats the name %s", name);
		if (strv_env_get(s->env, name))
			return spec_refuse(err, path,
			                   "names %s, which `env` also sets: a secret comes only "
			                   "from the caller's environment",
			                   name);
		if (strv_push(&s->secret_names, name) < 0)
			return spec_oom(err);
	}
	return 0;
}

/* A URL path: printable ASCII without spaces, starting with '/' but not "//". */
static int spec_start_url(struct json_object *obj, struct boot_spec *s, struct err *err)
{
	struct json_object *v = spec_member(obj, "start_url");
	const char *str;
	int r;

	if (!v)
		return 0;
	r = spec_string(v, "start_url", "a path starting with /", &str, err);
	if (r < 0)
		return r;
	if (str[0] != '/' || str[1] == '/')
		return spec_refuse(err, "start_url", "must be a path starting with / (not //)");
	for (const char *p = str; *p; p++)
		if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
			return spec_refuse(err, "start_url",
			                   "must be printable ASCII without spaces");
	if (strlen(str) > 2048)
		return spec_refuse(err, "start_url", "must be at most 2048 bytes");
	return spec_dup(str, &s->start_url, err);
}

/* A user name: printable ASCII without spaces, ':' or '/', 1 to 256 bytes; null = caller. */
static int spec_user(struct json_object *obj, struct boot_spec *s, struct err *err)
{
	struct json_object *v = spec_member(obj, "user");
	const char *str;
	int r;

	if (!v)
		return 0;
	r = spec_string(v, "user", "a user name or null", &str, err);
	if (r < 0)
		return r;
	if (!*str || strlen(str) > 256 || str[0] == '-' || strpbrk(str, ":/"))
		return spec_refuse(err, "user", "must be a user name or null");
	for (const char *p = str; *p; p++)
		if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
			return spec_refuse(err, "user", "must be a user name or null");
	return spec_dup(str, &s->user, err);
}

static int spec_plain_string(struct json_object *obj, const char *key, char **ret, struct err *err)
{
	struct json_object *v = spec_member(obj, key);
	const char *str;
	int r;

	if (!v)
		return 0;
	r = spec_string(v, key, "a string", &str, err);
	if (r < 0)
		return r;
	return spec_dup(str, ret, err);
}

static int spec_version(struct json_object *obj, struct boot_spec *s, struct err *err)
{
	struct json_object *v = spec_member(obj, "version");

	if (!v)
		return spec_refuse(err, "version", "is required (this boot reads version 1)");
	if (!json_object_is_type(v, json_type_int))
		return spec_refuse(err, "version", "must be the integer 1");
	if (json_object_get_int64(v) != 1)
		return err_set(err, ERR_REFUSED, EINVAL,
		               "spec: version %s is not supported (this boot reads version 1)",
		               json_object_get_string(v));
	s->version = 1;
	return 0;
}

static int spec_required_path(struct json_object *obj, const char *key, char **ret, struct err *err)
{
	struct json_object *v = spec_member(obj, key);

	if (!v)
		return spec_refuse(err, key, "is required");
	return spec_path(v, key, ret, err);
}

static int spec_ports(struct json_object *obj, struct boot_spec *s, struct err *err)
{
	struct json_object *v = spec_member(obj, "port");
	int r;

	if (!v)
		return spec_refuse(err, "port", "is required");
	r = spec_uint(v, "port", 1, 65535, &s->port, err);
	if (r < 0)
		return r;
	v = spec_member(obj, "listen_port");
	if (!v)
		return 0;
	r = spec_uint(v, "listen_port", 1, 65535, &s->listen_port, err);
	if (r < 0)
		return r;
	if (s->listen_port == s->port)
		return spec_refuse(err, "listen_port",
		                   "must differ from `port` (the forwarder listens on it)");
	return 0;
}

static int spec_keep_on_failure(struct json_object *obj, struct boot_spec *s, struct err *err)
{
	struct json_object *v = spec_member(obj, "keep_on_failure");

	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_boolean))
		return spec_refuse(err, "keep_on_failure", "must be true or false");
	s->keep_on_failure = json_object_get_boolean(v);
	return 0;
}

/* `limits`: sizes as strings ("2GiB") or byte counts, counts as integers. */
static int spec_limits(struct json_object *obj, struct boot_spec *s, struct err *err)
{
	struct json_object *v = spec_member(obj, "limits");

	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_object))
		return spec_refuse(err, "limits", "must be an object");
	spec_log_unknown(v, "limits.", limits_config_keys);
	for (size_t i = 0; limits_config_keys[i]; i++) {
		struct json_object *e = spec_member(v, limits_config_keys[i]);
		char key[32];
		struct err why;

		if (!e)
			continue;
		snprintf(key, sizeof(key), "limits.%s", limits_config_keys[i]);
		if (!json_object_is_type(e, json_type_string) &&
		    !json_object_is_type(e, json_type_int))
			return spec_refuse(err, key, "must be a string or an integer");
		if (limits_config_set(&s->limits, limits_config_keys[i], json_object_get_string(e),
		                      &why) < 0)
			return spec_refuse(err, key, "is invalid: %s", why.msg);
	}
	return 0;
}

/* `egress`: {"proxy": URL, "required": bool}. */
static int spec_egress(struct json_object *obj, struct boot_spec *s, struct err *err)
{
	static const char *const known[] = {"proxy", "required", NULL};
	struct json_object *v = spec_member(obj, "egress"), *e;
	char *host = NULL;
	unsigned port;
	struct err why;

	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_object))
		return spec_refuse(err, "egress", "must be an object");
	spec_log_unknown(v, "egress.", known);
	if ((e = spec_member(v, "required"))) {
		if (!json_object_is_type(e, json_type_boolean))
			return spec_refuse(err, "egress.required", "must be true or false");
		s->egress.required = json_object_get_boolean(e);
	}
	if (!(e = spec_member(v, "proxy")))
		return 0;
	if (!json_object_is_type(e, json_type_string))
		return spec_refuse(err, "egress.proxy", "must be a string");
	if (egress_config_check_proxy(json_object_get_string(e), &host, &port, &why) < 0)
		return spec_refuse(err, "egress.proxy", "is invalid: %s", why.msg);
	free(host);
	return spec_dup(json_object_get_string(e), &s->egress.proxy, err);
}

static int spec_from_object(struct json_object *obj, struct boot_spec *s, struct err *err)
{
	static const char *const known[] = {"version",
	                                    "app_dir",
	                                    "manifest_path",
	                                    "port",
	                                    "listen_port",
	                                    "timeout",
	                                    "manifest",
	                                    "start",
	                                    "user",
	                                    "toolchain",
	                                    "directories",
	                                    "env",
	                                    "secret_names",
	                                    "steps",
	                                    "start_url",
	                                    "keep_on_failure",
	                                    "mode",
	                                    "kind",
	                                    "recorded_steps",
	                                    "facts",
	                                    "limits",
	                                    "egress",
	                                    NULL};
	struct json_object *v;
	int r;

	r = spec_version(obj, s, err);
	if (r < 0)
		return r;
	spec_log_unknown(obj, "", known);
	r = spec_required_path(obj, "app_dir", &s->app_dir, err);
	if (r < 0)
		return r;
	r = spec_required_path(obj, "manifest_path", &s->manifest_path, err);
	if (r < 0)
		return r;
	if (s->manifest_path[strlen(s->manifest_path) - 1] == '/')
		return spec_refuse(err, "manifest_path", "must name a file, not a directory");
	if (spec_path_within(s->manifest_path, s->app_dir))
		return spec_refuse(err, "manifest_path",
		                   "must not be inside `app_dir` (the app could redirect it)");
	r = spec_ports(obj, s, err);
	if (r < 0)
		return r;
	v = spec_member(obj, "timeout");
	if (!v)
		return spec_refuse(err, "timeout", "is required");
	r = spec_uint(v, "timeout", 1, BOOT_SPEC_TIMEOUT_MAX, &s->timeout, err);
	if (r < 0)
		return r;
	r = spec_phase(obj, "manifest", &s->manifest, err);
	if (r < 0)
		return r;
	r = spec_phase(obj, "start", &s->start, err);
	if (r < 0)
		return r;
	r = spec_user(obj, s, err);
	if (r >= 0)
		r = spec_toolchain(obj, &s->toolchain, err);
	if (r >= 0)
		r = spec_directories(obj, s, err);
	if (r >= 0)
		r = spec_env(obj, s, err);
	if (r >= 0)
		r = spec_secret_names(obj, s, err);
	if (r >= 0)
		r = spec_steps(obj, s, err);
	if (r >= 0)
		r = spec_start_url(obj, s, err);
	if (r >= 0)
		r = spec_keep_on_failure(obj, s, err);
	if (r >= 0)
		r = spec_limits(obj, s, err);
	if (r >= 0)
		r = spec_egress(obj, s, err);
	if (r >= 0)
		r = spec_plain_string(obj, "mode", &s->mode, err);
	if (r >= 0)
		r = spec_plain_string(obj, "kind", &s->kind, err);
	if (r >= 0) {
		/* Informational: carried into state.json's steps as the platform wrote them. */
		json_object *rec = NULL;
		if (json_object_object_get_ex(obj, "recorded_steps", &rec) &&
		    json_object_is_type(rec, json_type_array)) {
			const char *t = json_object_to_json_string_ext(rec, JSON_C_TO_STRING_PLAIN);
			s->recorded_steps = t ? strdup(t) : NULL;
			if (!s->recorded_steps)
				r = err_oom(err);
		}
	}
	return r;
}

int boot_spec_parse(const char *buf, size_t len, struct boot_spec *ret, struct err *err)
{
	_cleanup_json_ struct json_object *obj = NULL;
	struct boot_spec s = {0};
	enum json_tokener_error jerr;
	size_t off;
	int r;

	if (len > BOOT_SPEC_MAX)
		return err_set(err, ERR_REFUSED, EFBIG, "spec is larger than %d bytes",
		               BOOT_SPEC_MAX);
	switch (json_strict_parse(buf, len, &obj, &off, &jerr)) {
	case JSON_STRICT_OK:
		break;
	case JSON_STRICT_NUL_BYTE:
		return err_set(err, ERR_REFUSED, EINVAL,
		               "spec is not valid JSON (a NUL byte at offset %zu)", off);
	case JSON_STRICT_NUL_ESCAPE:
		return err_set(err, ERR_REFUSED, EINVAL,
		               "spec is not valid JSON for us (\\u0000 at offset %zu)", off);
	case JSON_STRICT_NO_MEMORY:
		return spec_oom(err);
	case JSON_STRICT_TRUNCATED:
		return err_set(err, ERR_REFUSED, EINVAL,
		               "spec is not valid JSON (unexpected end of data at offset %zu)",
		               off);
	case JSON_STRICT_SYNTAX:
		return err_set(err, ERR_REFUSED, EINVAL,
		               "spec is not valid JSON (%s at offset %zu)",
		               json_tokener_error_desc(jerr), off);
	case JSON_STRICT_TRAILING:
		return err_set(err, ERR_REFUSED, EINVAL,
		               "spec is not valid JSON (unexpected data after the object at "
		               "offset %zu)",
		               off);
	}
	if (!json_object_is_type(obj, json_type_object))
		return err_set(err, ERR_REFUSED, EINVAL,
		               "spec: the top level must be a JSON object");
	r = spec_from_object(obj, &s, err);
	if (r < 0) {
		boot_spec_dispose(&s);
		return r;
	}
	*ret = s;
	return 0;
}

/* Read all of fd, at most max bytes, into a NUL-terminated heap buffer. */
static int spec_read_fd(int fd, const char *path, size_t max, char **ret_buf, size_t *ret_len,
                        struct err *err)
{
	_cleanup_free_ char *buf = malloc(max + 2);
	size_t len = 0;

	if (!buf)
		return spec_oom(err);
	{
		ssize_t n = file_read_all(fd, buf, max + 1);

		if (n < 0) {
			errno = (int)-n;
			return err_errno(err, "cannot read %s", path);
		}
		len = (size_t)n;
		if (len > max)
			return err_set(err, ERR_REFUSED, EFBIG, "spec %s is larger than %zu bytes",
			               path, max);
	}
	buf[len] = '\0';
	*ret_buf = TAKE_PTR(buf);
	*ret_len = len;
	return 0;
}

/*
 * As root, every directory above the spec must be root's, writable by root alone, and no link:
 * otherwise a checkout (or any user) could plant the spec, or the state a resume trusts. A
 * directory others may write is accepted only with the sticky bit (/tmp): there nobody but
 * root can replace the root-owned entry below it.
 */
static int spec_dir_check(const char *spec, const char *dir, struct err *err)
{
	struct stat st;

	if (lstat(dir, &st) < 0)
		return err_errno(err, "cannot check %s, a directory above the spec", dir);
	if (S_ISLNK(st.st_mode) || !S_ISDIR(st.st_mode) || st.st_uid != 0 ||
	    ((st.st_mode & 022) && !(st.st_mode & S_ISVTX)))
		return err_set(err, ERR_REFUSED, EPERM,
		               "spec %s: %s must be a directory of root's, writable by root alone "
		               "and not a link (it is %s, owner uid %u, mode %04o), or a checkout "
		               "could plant the spec",
		               spec, dir, S_ISLNK(st.st_mode) ? "a link" : "a directory",
		               (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
	return 0;
}

static int spec_path_check(const char *path, struct err *err)
{
	char abs[PATH_MAX], cwd[PATH_MAX];
	int n;

	if (path[0] == '/')
		n = snprintf(abs, sizeof(abs), "%s", path);
	else if (getcwd(cwd, sizeof(cwd)))
		n = snprintf(abs, sizeof(abs), "%s/%s", cwd, path);
	else
		return err_errno(err, "cannot resolve the spec %s", path);
	if (n < 0 || (size_t)n >= sizeof(abs))
		return err_set(err, ERR_REFUSED, ENAMETOOLONG, "spec %s: path too long", path);
	if (spec_dir_check(path, "/", err) < 0)
		return err_ret(err);
	/* "/a", "/a/b", ... up to the spec's own directory (the spec: checked on its fd). */
	for (char *slash = strchr(abs + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		int r;

		*slash = '\0';
		r = spec_dir_check(path, abs, err);
		*slash = '/';
		if (r < 0)
			return r;
	}
	return 0;
}

int boot_spec_load(const char *path, struct boot_spec *ret, struct err *err)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	struct stat st;
	size_t len = 0;
	int r;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ELOOP)
			return err_set(err, ERR_REFUSED, ELOOP,
			               "spec %s is a symbolic link (give the file itself)", path);
		r = err_errno(err, "cannot open the spec %s", path);
		err->cls = ERR_REFUSED;
		return r;
	}
	if (fstat(fd, &st) < 0)
		return err_errno(err, "cannot stat the spec %s", path);
	if (!S_ISREG(st.st_mode))
		return err_set(err, ERR_REFUSED, EINVAL, "spec %s is not a regular file", path);
	if (st.st_size > BOOT_SPEC_MAX)
		return err_set(err, ERR_REFUSED, EFBIG, "spec %s is larger than %d bytes", path,
		               BOOT_SPEC_MAX);
	/* The spec carries the boot's commands: as root, only root may have written it. */
	if (geteuid() == 0 && (st.st_uid != 0 || (st.st_mode & 077)))
		return err_set(err, ERR_REFUSED, EPERM,
		               "spec %s must be owned by root and not readable or writable by "
		               "group or others (owner uid %u, mode %04o; chmod 0600 it)",
		               path, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
	if (geteuid() == 0 && spec_path_check(path, err) < 0)
		return err_ret(err);
	r = spec_read_fd(fd, path, BOOT_SPEC_MAX, &buf, &len, err);
	if (r < 0)
		return r;
	return boot_spec_parse(buf, len, ret, err);
}

const struct boot_step *boot_spec_find_step(const struct boot_spec *s, const char *name)
{
	if (s->manifest.name && strcmp(name, s->manifest.name) == 0)
		return &s->manifest;
	if (s->start.name && strcmp(name, s->start.name) == 0)
		return &s->start;
	for (size_t i = 0; i < s->n_steps; i++)
		if (s->steps[i].name && strcmp(name, s->steps[i].name) == 0)
			return &s->steps[i];
	return NULL;
}

static void boot_step_dispose(struct boot_step *st)
{
	free(st->name);
	free(st->command);
	free(st->skip);
	free(st->if_task);
	*st = (struct boot_step){0};
}

void boot_spec_dispose(struct boot_spec *s)
{
	if (!s)
		return;
	free(s->app_dir);
	free(s->manifest_path);
	egress_config_request_dispose(&s->egress);
	boot_step_dispose(&s->manifest);
	boot_step_dispose(&s->start);
	free(s->user);
	free(s->toolchain.ruby);
	free(s->toolchain.node);
	free(s->toolchain.bun);
	strv_free(s->toolchain.services);
	strv_free(s->directories);
	strv_free(s->env);
	strv_free(s->secret_names);
	for (size_t i = 0; i < s->n_steps; i++)
		boot_step_dispose(&s->steps[i]);
	free(s->steps);
	free(s->start_url);
	free(s->mode);
	free(s->kind);
	free(s->recorded_steps);
	*s = (struct boot_spec){0};
}
