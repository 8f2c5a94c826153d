/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "boot_spec.h"
#include "err.h"
#include "strv.h"

/* The shape the platform writes, with every optional key and a few it may add later. */
static const char PLATFORM_SPEC[] =
    "{\n"
    "  \"version\": 1,\n"
    "  \"app_dir\": \"/workspace/app\",\n"
    "  \"manifest_path\": \"/workspace/run/runtime.json\",\n"
    "  \"user\": \"sandbox\",\n"
    "  \"port\": 3000,\n"
    "  \"listen_port\": 8080,\n"
    "  \"timeout\": 600,\n"
    "  \"start_url\": \"/\",\n"
    "  \"keep_on_failure\": false,\n"
    "  \"mode\": \"preview\",\n"
    "  \"kind\": \"rails\",\n"
    "  \"toolchain\": {\"ruby\": \"3.3.1\", \"node\": \"22\", \"bun\": null,\n"
    "                \"services\": [\"postgresql\", \"redis\"], \"timeout\": 900},\n"
    "  \"directories\": [\"/workspace/cache\", \"/workspace/tmp\"],\n"
    "  \"env\": {\"RAILS_ENV\": \"development\", \"WEB_CONCURRENCY\": 2, \"FORCE_SSL\": false},\n"
    "  \"secret_names\": [\"ANTHROPIC_API_KEY\"],\n"
    "  \"steps\": [\n"
    "    {\"name\": \"bundle\", \"command\": \"bundle install\", \"timeout\": 900},\n"
    "    {\"name\": \"db_prepare\", \"command\": \"bin/rails db:prepare\"},\n"
    "    {\"name\": \"assets\", \"command\": \"bin/rails assets:precompile\",\n"
    "     \"if_task\": \"assets:precompile\"},\n"
    "    {\"name\": \"yarn\", \"command\": \"yarn install\", \"skip\": \"no package.json\"}\n"
    "  ],\n"
    "  \"manifest\": {\"command\": \"bin/rails action_agent:sandbox:manifest\", \"timeout\": "
    "120},\n"
    "  \"start\": {\"command\": \"bin/rails server -b 127.0.0.1 -p $PORT\"},\n"
    "  \"recorded_steps\": [{\"name\": \"bundle\", \"seconds\": 12.5}],\n"
    "  \"facts\": {\"rails\": true, \"nested\": {\"x\": [1, 2.5, null]}},\n"
    "  \"future_key\": {\"anything\": [1, 2]}\n"
    "}\n";

static const char MINIMAL_SPEC[] =
    "{\"version\":1,\"app_dir\":\"/w/app\",\"manifest_path\":\"/w/run/runtime.json\","
    "\"port\":3000,\"timeout\":600,\"manifest\":{\"command\":\"m\"},\"start\":{\"command\":\"s\"}}";

static struct json_object *spec_base(void)
{
	struct json_object *o = json_tokener_parse(PLATFORM_SPEC);

	ck_assert_ptr_nonnull(o);
	return o;
}

/* Set key to the JSON text value ("null" gives a JSON null); NULL removes the key. */
static void spec_set(struct json_object *o, const char *key, const char *value)
{
	if (!value) {
		json_object_object_del(o, key);
		return;
	}
	json_object_object_add(o, key, json_tokener_parse(value));
}

static int parse_obj(struct json_object *o, struct boot_spec *s, struct err *e)
{
	const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);

	err_clear(e);
	return boot_spec_parse(text, strlen(text), s, e);
}

static int parse_text(const char *text, struct boot_spec *s, struct err *e)
{
	err_clear(e);
	return boot_spec_parse(text, strlen(text), s, e);
}

/* The base spec with key set to value must be refused with exactly msg. */
static void refuse_with(const char *key, const char *value, const char *msg)
{
	struct json_object *o = spec_base();
	struct boot_spec s = {0};
	struct err e;

	spec_set(o, key, value);
	ck_assert_msg(parse_obj(o, &s, &e) < 0, "%s=%s was accepted", key, value ? value : "-");
	ck_assert_int_eq(e.cls, ERR_REFUSED);
	ck_assert_str_eq(e.msg, msg);
	json_object_put(o);
}

static void accept_with(const char *key, const char *value, struct boot_spec *s)
{
	struct json_object *o = spec_base();
	struct err e;

	spec_set(o, key, value);
	ck_assert_msg(parse_obj(o, s, &e) == 0, "%s=%s refused: %s", key, value ? value : "-",
	              e.msg);
	json_object_put(o);
}

START_TEST(test_platform_spec)
{
	struct boot_spec s = {0};
	struct err e;

	ck_assert_msg(parse_text(PLATFORM_SPEC, &s, &e) == 0, "%s", e.msg);
	ck_assert_int_eq(s.version, 1);
	ck_assert_str_eq(s.app_dir, "/workspace/app");
	ck_assert_str_eq(s.manifest_path, "/workspace/run/runtime.json");
	ck_assert_str_eq(s.user, "sandbox");
	ck_assert_uint_eq(s.port, 3000);
	ck_assert_uint_eq(s.listen_port, 8080);
	ck_assert_uint_eq(s.timeout, 600);
	ck_assert_str_eq(s.start_url, "/");
	ck_assert(!s.keep_on_failure);
	ck_assert_str_eq(s.mode, "preview");
	ck_assert_str_eq(s.kind, "rails");
	ck_assert_str_eq(s.toolchain.ruby, "3.3.1");
	ck_assert_str_eq(s.toolchain.node, "22");
	ck_assert_ptr_null(s.toolchain.bun);
	ck_assert_uint_eq(strv_length(s.toolchain.services), 2);
	ck_assert_str_eq(s.toolchain.services[0], "postgresql");
	ck_assert_str_eq(s.toolchain.services[1], "redis");
	ck_assert_uint_eq(s.toolchain.timeout, 900);
	ck_assert_uint_eq(strv_length(s.directories), 2);
	ck_assert_str_eq(s.directories[1], "/workspace/tmp");
	ck_assert_uint_eq(strv_length(s.env), 3);
	ck_assert_str_eq(s.env[0], "RAILS_ENV=development");
	ck_assert_str_eq(strv_env_get(s.env, "WEB_CONCURRENCY"), "2");
	ck_assert_str_eq(strv_env_get(s.env, "FORCE_SSL"), "false");
	ck_assert_uint_eq(strv_length(s.secret_names), 1);
	ck_assert_str_eq(s.secret_names[0], "ANTHROPIC_API_KEY");
	ck_assert_uint_eq(s.n_steps, 4);
	ck_assert_str_eq(s.steps[0].name, "bundle");
	ck_assert_str_eq(s.steps[0].command, "bundle install");
	ck_assert_uint_eq(s.steps[0].timeout, 900);
	ck_assert_uint_eq(s.steps[1].timeout, 0);
	ck_assert_ptr_null(s.steps[1].skip);
	ck_assert_ptr_null(s.steps[1].if_task);
	ck_assert_str_eq(s.steps[2].if_task, "assets:precompile");
	ck_assert_str_eq(s.steps[3].skip, "no package.json");
	ck_assert_str_eq(s.manifest.name, "manifest");
	ck_assert_str_eq(s.manifest.command, "bin/rails action_agent:sandbox:manifest");
	ck_assert_uint_eq(s.manifest.timeout, 120);
	ck_assert_str_eq(s.start.name, "start");
	ck_assert_str_eq(s.start.command, "bin/rails server -b 127.0.0.1 -p $PORT");
	ck_assert_uint_eq(s.start.timeout, 0);
	boot_spec_dispose(&s);
	ck_assert_ptr_null(s.app_dir);
	ck_assert_uint_eq(s.n_steps, 0);
}
END_TEST

START_TEST(test_minimal_spec_defaults)
{
	struct boot_spec s = {0};
	struct err e;

	ck_assert_msg(parse_text(MINIMAL_SPEC, &s, &e) == 0, "%s", e.msg);
	ck_assert_ptr_null(s.user);
	ck_assert_uint_eq(s.listen_port, 0);
	ck_assert_uint_eq(s.n_steps, 0);
	ck_assert_ptr_null(s.steps);
	ck_assert_ptr_null(s.start_url);
	ck_assert_ptr_null(s.env);
	ck_assert_ptr_null(s.secret_names);
	ck_assert_ptr_null(s.directories);
	ck_assert_ptr_null(s.toolchain.ruby);
	ck_assert_ptr_null(s.toolchain.services);
	ck_assert_uint_eq(s.toolchain.timeout, 0);
	ck_assert_uint_eq(s.manifest.timeout, 0);
	ck_assert(!s.keep_on_failure);
	ck_assert_ptr_null(s.mode);
	ck_assert_ptr_null(s.kind);
	boot_spec_dispose(&s);
}
END_TEST

START_TEST(test_null_means_not_given)
{
	struct json_object *o = spec_base();
	struct boot_spec s = {0};
	struct err e;

	spec_set(o, "user", "null");
	spec_set(o, "listen_port", "null");
	spec_set(o, "steps", "null");
	spec_set(o, "toolchain", "null");
	spec_set(o, "start_url", "null");
	spec_set(o, "keep_on_failure", "null");
	spec_set(o, "manifest", "{\"command\":\"m\",\"timeout\":null}");
	ck_assert_msg(parse_obj(o, &s, &e) == 0, "%s", e.msg);
	ck_assert_ptr_null(s.user);
	ck_assert_uint_eq(s.listen_port, 0);
	ck_assert_uint_eq(s.n_steps, 0);
	ck_assert_ptr_null(s.toolchain.ruby);
	ck_assert_ptr_null(s.start_url);
	ck_assert_uint_eq(s.manifest.timeout, 0);
	boot_spec_dispose(&s);
	json_object_put(o);
}
END_TEST

START_TEST(test_version)
{
	struct boot_spec s = {0};
	struct err e;

	refuse_with("version", NULL, "spec: `version` is required (this boot reads version 1)");
	refuse_with("version", "\"1\"", "spec: `version` must be the integer 1");
	refuse_with("version", "1.0", "spec: `version` must be the integer 1");
	refuse_with("version", "2", "spec: version 2 is not supported (this boot reads version 1)");
	/* The version is checked before anything else a newer format may have changed. */
	ck_assert_int_lt(parse_text("{\"version\":7,\"port\":\"x\"}", &s, &e), 0);
	ck_assert_str_eq(e.msg, "spec: version 7 is not supported (this boot reads version 1)");
}
END_TEST

START_TEST(test_not_json)
{
	struct boot_spec s = {0};
	struct err e;
	static const char nul[] = "{\"version\":1\0}";

	ck_assert_int_lt(parse_text("{\"version\": 1,", &s, &e), 0);
	ck_assert_int_eq(e.cls, ERR_REFUSED);
	ck_assert_str_eq(e.msg, "spec is not valid JSON (unexpected end of data at offset 14)");
	ck_assert_int_lt(parse_text("{\"version\": 1,}", &s, &e), 0);
	ck_assert_str_eq(e.msg, "spec is not valid JSON (unexpected character at offset 14)");
	ck_assert_int_lt(parse_text("", &s, &e), 0);
	ck_assert_str_eq(e.msg, "spec is not valid JSON (unexpected end of data at offset 0)");
	ck_assert_int_lt(parse_text("{} {}", &s, &e), 0);
	ck_assert_int_eq(e.cls, ERR_REFUSED);
	ck_assert_ptr_nonnull(strstr(e.msg, "spec is not valid JSON ("));
	ck_assert_int_lt(parse_text("[1]", &s, &e), 0);
	ck_assert_str_eq(e.msg, "spec: the top level must be a JSON object");
	ck_assert_int_lt(parse_text("\"x\"", &s, &e), 0);
	ck_assert_str_eq(e.msg, "spec: the top level must be a JSON object");
	ck_assert_int_lt(parse_text("{\"a\":\"\xff\"}", &s, &e), 0);
	ck_assert_str_eq(e.msg, "spec is not valid JSON (invalid utf-8 string at offset 6)");
	err_clear(&e);
	ck_assert_int_lt(boot_spec_parse(nul, sizeof(nul) - 1, &s, &e), 0);
	ck_assert_str_eq(e.msg, "spec is not valid JSON (a NUL byte at offset 12)");
	ck_assert_int_eq(e.cls, ERR_REFUSED);
	/* A NUL escape would cut a key short inside json-c ("app_dir\u0000x" read as app_dir). */
	ck_assert_int_lt(parse_text("{\"app_dir\\u0000x\":\"/a\"}", &s, &e), 0);
	ck_assert_str_eq(e.msg, "spec is not valid JSON for us (\\u0000 at offset 9)");
	/* An escaped backslash followed by u0000 is text, not a NUL. */
	ck_assert_int_lt(parse_text("{\"mode\":\"\\\\u0000\"}", &s, &e), 0);
	ck_assert_str_eq(e.msg, "spec: `version` is required (this boot reads version 1)");
}
END_TEST

/* The buffer is not NUL-terminated: nothing may read past len. */
START_TEST(test_unterminated_buffer)
{
	size_t len = strlen(MINIMAL_SPEC);
	char *buf = malloc(len);
	struct boot_spec s = {0};
	struct err e;

	ck_assert_ptr_nonnull(buf);
	memcpy(buf, MINIMAL_SPEC, len);
	err_clear(&e);
	ck_assert_msg(boot_spec_parse(buf, len, &s, &e) == 0, "%s", e.msg);
	boot_spec_dispose(&s);
	ck_assert_int_lt(boot_spec_parse(buf, len - 1, &s, &e), 0);
	ck_assert_int_lt(boot_spec_parse(buf, 1, &s, &e), 0);
	free(buf);
}
END_TEST

START_TEST(test_size_cap)
{
	size_t len = BOOT_SPEC_MAX + 1;
	char *buf = malloc(len);
	struct boot_spec s = {0};
	struct err e;

	ck_assert_ptr_nonnull(buf);
	memset(buf, ' ', len);
	err_clear(&e);
	ck_assert_int_lt(boot_spec_parse(buf, len, &s, &e), 0);
	ck_assert_int_eq(e.cls, ERR_REFUSED);
	ck_assert_str_eq(e.msg, "spec is larger than 1048576 bytes");
	free(buf);
}
END_TEST

START_TEST(test_deep_nesting_refused)
{
	char buf[512];
	struct boot_spec s = {0};
	struct err e;
	size_t n = 0;

	n += (size_t)snprintf(buf, sizeof(buf), "{\"facts\":");
	for (int i = 0; i < 40; i++)
		buf[n++] = '[';
	for (int i = 0; i < 40; i++)
		buf[n++] = ']';
	buf[n++] = '}';
	buf[n] = '\0';
	ck_assert_int_lt(parse_text(buf, &s, &e), 0);
	ck_assert_int_eq(e.cls, ERR_REFUSED);
	ck_assert_ptr_nonnull(strstr(e.msg, "spec is not valid JSON (nesting too deep at offset"));
}
END_TEST

START_TEST(test_paths)
{
	struct boot_spec s = {0};

	refuse_with("app_dir", NULL, "spec: `app_dir` is required");
	refuse_with("app_dir", "\"workspace/app\"", "spec: `app_dir` must be an absolute path");
	refuse_with("app_dir", "3", "spec: `app_dir` must be an absolute path");
	refuse_with("app_dir", "\"/workspace/../etc\"",
	            "spec: `app_dir` must not contain a .. component");
	refuse_with("app_dir", "\"/workspace/app/..\"",
	            "spec: `app_dir` must not contain a .. component");
	refuse_with("app_dir", "\"/\"", "spec: `app_dir` must name a path below /");
	refuse_with("app_dir", "\"//\"", "spec: `app_dir` must name a path below /");
	refuse_with("app_dir", "\"/work\\nspace\"",
	            "spec: `app_dir` must not contain control characters");
	refuse_with("manifest_path", NULL, "spec: `manifest_path` is required");
	refuse_with("manifest_path", "\"runtime.json\"",
	            "spec: `manifest_path` must be an absolute path");
	refuse_with("manifest_path", "\"/workspace/run/\"",
	            "spec: `manifest_path` must name a file, not a directory");
	refuse_with(
	    "manifest_path", "\"/workspace/app/runtime.json\"",
	    "spec: `manifest_path` must not be inside `app_dir` (the app could redirect it)");
	refuse_with(
	    "manifest_path", "\"/workspace//./app/tmp/runtime.json\"",
	    "spec: `manifest_path` must not be inside `app_dir` (the app could redirect it)");
	refuse_with("directories", "[\"/ok\", \"rel\"]",
	            "spec: `directories[1]` must be an absolute path");
	refuse_with("directories", "\"/one\"",
	            "spec: `directories` must be an array of absolute paths");

	/* "..." and "..x" are names, and /workspace/app2 is not inside /workspace/app. */
	accept_with("manifest_path", "\"/workspace/app2/.../..x/runtime.json\"", &s);
	ck_assert_str_eq(s.manifest_path, "/workspace/app2/.../..x/runtime.json");
	boot_spec_dispose(&s);
}
END_TEST

START_TEST(test_ports_and_timeouts)
{
	struct boot_spec s = {0};

	refuse_with("port", NULL, "spec: `port` is required");
	refuse_with("port", "0", "spec: `port` must be an integer from 1 to 65535");
	refuse_with("port", "65536", "spec: `port` must be an integer from 1 to 65535");
	refuse_with("port", "-3000", "spec: `port` must be an integer from 1 to 65535");
	refuse_with("port", "3000.0", "spec: `port` must be an integer from 1 to 65535");
	refuse_with("port", "\"3000\"", "spec: `port` must be an integer from 1 to 65535");
	refuse_with("port", "true", "spec: `port` must be an integer from 1 to 65535");
	/* json-c clamps these to INT64_MAX / UINT64_MAX / INT64_MIN: still refused. */
	refuse_with("port", "18446744073709551617",
	            "spec: `port` must be an integer from 1 to 65535");
	refuse_with("port", "-99999999999999999999",
	            "spec: `port` must be an integer from 1 to 65535");
	refuse_with("port", "4294970296", "spec: `port` must be an integer from 1 to 65535");
	refuse_with("listen_port", "0", "spec: `listen_port` must be an integer from 1 to 65535");
	refuse_with("listen_port", "3000",
	            "spec: `listen_port` must differ from `port` (the forwarder listens on it)");
	refuse_with("timeout", NULL, "spec: `timeout` is required");
	refuse_with("timeout", "0", "spec: `timeout` must be an integer from 1 to 86400");
	refuse_with("timeout", "86401", "spec: `timeout` must be an integer from 1 to 86400");
	refuse_with("timeout", "1.5", "spec: `timeout` must be an integer from 1 to 86400");
	refuse_with("timeout", "4294967897", "spec: `timeout` must be an integer from 1 to 86400");
	refuse_with("toolchain", "{\"timeout\":0}",
	            "spec: `toolchain.timeout` must be an integer from 1 to 86400");

	accept_with("port", "65535", &s);
	ck_assert_uint_eq(s.port, 65535);
	boot_spec_dispose(&s);
	accept_with("timeout", "86400", &s);
	ck_assert_uint_eq(s.timeout, 86400);
	boot_spec_dispose(&s);
}
END_TEST

START_TEST(test_manifest_and_start)
{
	refuse_with("manifest", NULL, "spec: `manifest` is required");
	refuse_with("start", "null", "spec: `start` is required");
	refuse_with("manifest", "\"bin/rails x\"",
	            "spec: `manifest` must be an object with a `command`");
	refuse_with("manifest", "{}", "spec: `manifest.command` is required");
	refuse_with("start", "{\"command\":\"\"}",
	            "spec: `start.command` must be a non-empty string");
	refuse_with("start", "{\"command\":\" \\t\\n\"}",
	            "spec: `start.command` must be a non-empty string");
	refuse_with("start", "{\"command\":[\"rails\",\"s\"]}",
	            "spec: `start.command` must be a non-empty string");
	refuse_with("manifest", "{\"command\":\"m\",\"timeout\":0}",
	            "spec: `manifest.timeout` must be an integer from 1 to 86400");
	refuse_with("start", "{\"command\":\"s\",\"timeout\":\"60\"}",
	            "spec: `start.timeout` must be an integer from 1 to 86400");
}
END_TEST

START_TEST(test_steps)
{
	struct boot_spec s = {0};

	refuse_with("steps",
	            "[{\"name\":\"a\",\"command\":\"x\"},{\"name\":\"b\",\"command\":\"x\"},"
	            "{\"name\":\"Bad\",\"command\":\"x\"}]",
	            "spec: `steps[2].name` must match [a-z][a-z0-9_]{0,39}");
	refuse_with("steps", "[{\"name\":\"9lives\",\"command\":\"x\"}]",
	            "spec: `steps[0].name` must match [a-z][a-z0-9_]{0,39}");
	refuse_with("steps", "[{\"name\":\"a-b\",\"command\":\"x\"}]",
	            "spec: `steps[0].name` must match [a-z][a-z0-9_]{0,39}");
	refuse_with("steps", "[{\"name\":\"\",\"command\":\"x\"}]",
	            "spec: `steps[0].name` must match [a-z][a-z0-9_]{0,39}");
	refuse_with("steps",
	            "[{\"name\":\"a1234567890123456789012345678901234567890\",\"command\":\"x\"}]",
	            "spec: `steps[0].name` must match [a-z][a-z0-9_]{0,39}");
	refuse_with("steps", "[{\"name\":5,\"command\":\"x\"}]",
	            "spec: `steps[0].name` must be a string matching [a-z][a-z0-9_]{0,39}");
	refuse_with("steps", "[{\"command\":\"x\"}]", "spec: `steps[0].name` is required");
	refuse_with("steps",
	            "[{\"name\":\"a\",\"command\":\"x\"},{\"name\":\"a\",\"command\":\"y\"}]",
	            "spec: `steps[1].name` repeats the name \"a\" of `steps[0]`");
	refuse_with("steps", "[\"bundle install\"]",
	            "spec: `steps[0]` must be an object with a `name` and a `command`");
	refuse_with("steps", "{\"name\":\"a\"}", "spec: `steps` must be an array of steps");
	refuse_with("steps", "[{\"name\":\"a\"}]",
	            "spec: `steps[0].command` is required (only a skipped step may omit it)");
	refuse_with("steps", "[{\"name\":\"a\",\"command\":\"\"}]",
	            "spec: `steps[0].command` must be a non-empty string");
	refuse_with("steps", "[{\"name\":\"a\",\"command\":\"x\",\"skip\":\"\"}]",
	            "spec: `steps[0].skip` must be the reason the step is skipped");
	refuse_with("steps", "[{\"name\":\"a\",\"command\":\"x\",\"skip\":1}]",
	            "spec: `steps[0].skip` must be the reason the step is skipped");
	refuse_with("steps", "[{\"name\":\"a\",\"command\":\"x\",\"timeout\":-5}]",
	            "spec: `steps[0].timeout` must be an integer from 1 to 86400");
	refuse_with("steps", "[{\"name\":\"a\",\"command\":\"x\",\"if_task\":\"x; rm -rf /\"}]",
	            "spec: `steps[0].if_task` must be a Rails task name such as assets:precompile");
	refuse_with("steps", "[{\"name\":\"a\",\"command\":\"x\",\"if_task\":\"-T\"}]",
	            "spec: `steps[0].if_task` must be a Rails task name such as assets:precompile");

	accept_with(
	    "steps",
	    "[{\"name\":\"a\",\"skip\":\"not needed\"},"
	    "{\"name\":\"b\",\"command\":\"x\",\"skip\":false,\"if_task\":null,\"extra\":1},"
	    "{\"name\":\"c\",\"command\":\"x\",\"skip\":true},"
	    "{\"name\":\"a123456789012345678901234567890123456789\",\"command\":\"x\"}]",
	    &s);
	ck_assert_uint_eq(s.n_steps, 4);
	ck_assert_ptr_null(s.steps[0].command);
	ck_assert_str_eq(s.steps[0].skip, "not needed");
	ck_assert_ptr_null(s.steps[1].skip);
	ck_assert_str_eq(s.steps[2].skip, "skipped by the spec");
	ck_assert_str_eq(s.steps[3].name, "a123456789012345678901234567890123456789");
	boot_spec_dispose(&s);
}
END_TEST

START_TEST(test_reserved_step_names)
{
	static const char *const names[] = {"checkout", "preflight", "toolchain", "manifest",
	                                    "start"};
	char value[128];

	for (size_t i = 0; i < ELEMENTSOF(names); i++) {
		snprintf(value, sizeof(value),
		         "[{\"name\":\"ok\",\"command\":\"x\"},"
		         "{\"name\":\"%s\",\"command\":\"x\"}]",
		         names[i]);
		refuse_with("steps", value,
		            "spec: `steps[1].name` must not be checkout, preflight, toolchain, "
		            "manifest or start (those are the boot's own phases)");
		ck_assert(!boot_spec_step_name_valid(names[i]));
	}
	ck_assert(boot_spec_step_name_valid("starts"));
	ck_assert(boot_spec_step_name_valid("a"));
	ck_assert(boot_spec_step_name_valid("db_prepare2"));
	ck_assert(!boot_spec_step_name_valid("_a"));
	ck_assert(!boot_spec_step_name_valid("a.b"));
	ck_assert(!boot_spec_step_name_valid(NULL));
}
END_TEST

START_TEST(test_find_step)
{
	struct boot_spec s = {0};
	struct err e;

	ck_assert_int_eq(parse_text(PLATFORM_SPEC, &s, &e), 0);
	ck_assert_ptr_eq(boot_spec_find_step(&s, "manifest"), &s.manifest);
	ck_assert_ptr_eq(boot_spec_find_step(&s, "start"), &s.start);
	ck_assert_ptr_eq(boot_spec_find_step(&s, "assets"), &s.steps[2]);
	ck_assert_ptr_null(boot_spec_find_step(&s, "checkout"));
	ck_assert_ptr_null(boot_spec_find_step(&s, "nope"));
	boot_spec_dispose(&s);
}
END_TEST

START_TEST(test_env)
{
	struct boot_spec s = {0};
	struct json_object *o;
	struct err e;

	refuse_with("env", "[\"A=1\"]",
	            "spec: `env` must be an object mapping variable names to strings");
	refuse_with("env", "{\"A\":null}", "spec: `env.A` must be a string");
	refuse_with("env", "{\"A\":[1]}", "spec: `env.A` must be a string");
	refuse_with("env", "{\"A\":{}}", "spec: `env.A` must be a string");
	refuse_with("env", "{\"A\":1.5}",
	            "spec: `env.A` must be a string (quote non-integer numbers)");
	refuse_with("env", "{\"A\":9007199254740993}",
	            "spec: `env.A` is an integer too large to convert: quote it");
	refuse_with("env", "{\"1A\":\"x\"}",
	            "spec: `env` has a key that is not a variable name ([A-Za-z_][A-Za-z0-9_]*, at "
	            "most 64 characters)");

	/* A refused key never shows its value. */
	o = spec_base();
	spec_set(o, "env",
	         "{\"OK\":\"hunter2-secret-value\",\"BAD-NAME\":\"hunter2-secret-value\"}");
	ck_assert_int_lt(parse_obj(o, &s, &e), 0);
	ck_assert_ptr_null(strstr(e.msg, "hunter2"));
	json_object_put(o);

	accept_with("env", "{\"A\":\"\",\"B\":-42,\"C\":true,\"D\":9007199254740992,\"E\":\"x=y\"}",
	            &s);
	ck_assert_str_eq(strv_env_get(s.env, "A"), "");
	ck_assert_str_eq(strv_env_get(s.env, "B"), "-42");
	ck_assert_str_eq(strv_env_get(s.env, "C"), "true");
	ck_assert_str_eq(strv_env_get(s.env, "D"), "9007199254740992");
	ck_assert_str_eq(strv_env_get(s.env, "E"), "x=y");
	ck_assert_str_eq(s.env[0], "A=");
	boot_spec_dispose(&s);
}
END_TEST

START_TEST(test_duplicate_keys_last_wins)
{
	struct boot_spec s = {0};
	struct err e;
	char buf[1024];

	snprintf(buf, sizeof(buf), "%.*s,\"port\":4000,\"env\":{\"A\":\"1\",\"A\":\"2\"}}",
	         (int)strlen(MINIMAL_SPEC) - 1, MINIMAL_SPEC);
	ck_assert_msg(parse_text(buf, &s, &e) == 0, "%s", e.msg);
	ck_assert_uint_eq(s.port, 4000);
	ck_assert_uint_eq(strv_length(s.env), 1);
	ck_assert_str_eq(s.env[0], "A=2");
	boot_spec_dispose(&s);
}
END_TEST

START_TEST(test_secret_names)
{
	struct boot_spec s = {0};

	refuse_with("secret_names", "\"A\"",
	            "spec: `secret_names` must be an array of variable names");
	refuse_with("secret_names", "[\"A\",\"B-C\"]",
	            "spec: `secret_names[1]` must be a variable name ([A-Za-z_][A-Za-z0-9_]*, at "
	            "most 64 characters)");
	refuse_with("secret_names", "[\"A\",null]",
	            "spec: `secret_names[1]` must be a variable name");
	refuse_with("secret_names", "[\"A\",\"B\",\"A\"]",
	            "spec: `secret_names[2]` repeats the name A");
	refuse_with(
	    "secret_names", "[\"RAILS_ENV\"]",
	    "spec: `secret_names[0]` names RAILS_ENV, which `env` also sets: a secret comes "
	    "only from the caller's environment");
	accept_with("secret_names", "[]", &s);
	ck_assert_ptr_null(s.secret_names);
	boot_spec_dispose(&s);
}
END_TEST

START_TEST(test_toolchain)
{
	struct boot_spec s = {0};

	refuse_with("toolchain", "[]", "spec: `toolchain` must be an object");
	refuse_with("toolchain", "{\"ruby\":3.3}",
	            "spec: `toolchain.ruby` must be a version string");
	refuse_with(
	    "toolchain", "{\"node\":\"22; curl x|sh\"}",
	    "spec: `toolchain.node` must be a version such as 3.3.1 ([A-Za-z0-9._+-], at most "
	    "64 characters)");
	refuse_with(
	    "toolchain", "{\"bun\":\"../1\"}",
	    "spec: `toolchain.bun` must be a version such as 3.3.1 ([A-Za-z0-9._+-], at most "
	    "64 characters)");
	refuse_with(
	    "toolchain", "{\"ruby\":\"-v\"}",
	    "spec: `toolchain.ruby` must be a version such as 3.3.1 ([A-Za-z0-9._+-], at most "
	    "64 characters)");
	refuse_with("toolchain", "{\"services\":\"redis\"}",
	            "spec: `toolchain.services` must be an array of service names");
	refuse_with("toolchain", "{\"services\":[\"redis\",\"Redis\"]}",
	            "spec: `toolchain.services[1]` must be a service name matching "
	            "[a-z0-9_][a-z0-9_-]*");
	refuse_with("toolchain", "{\"services\":[\"-rf\"]}",
	            "spec: `toolchain.services[0]` must be a service name matching "
	            "[a-z0-9_][a-z0-9_-]*");
	refuse_with("toolchain", "{\"services\":[\"redis\",\"redis\"]}",
	            "spec: `toolchain.services[1]` repeats the service \"redis\"");
	accept_with("toolchain",
	            "{\"ruby\":\"3.4.0-preview1\",\"services\":[\"mysql-8_0\"],\"x\":1}", &s);
	ck_assert_str_eq(s.toolchain.ruby, "3.4.0-preview1");
	ck_assert_str_eq(s.toolchain.services[0], "mysql-8_0");
	boot_spec_dispose(&s);
}
END_TEST

START_TEST(test_user_url_and_flags)
{
	struct boot_spec s = {0};

	refuse_with("user", "\"\"", "spec: `user` must be a user name or null");
	refuse_with("user", "\"a:b\"", "spec: `user` must be a user name or null");
	refuse_with("user", "\"a b\"", "spec: `user` must be a user name or null");
	refuse_with("user", "1000", "spec: `user` must be a user name or null");
	refuse_with("start_url", "\"up\"",
	            "spec: `start_url` must be a path starting with / (not //)");
	refuse_with("start_url", "\"//evil.example/\"",
	            "spec: `start_url` must be a path starting with / (not //)");
	refuse_with("start_url", "\"/a b\"",
	            "spec: `start_url` must be printable ASCII without spaces");
	refuse_with("start_url", "\"/\\u00e9\"",
	            "spec: `start_url` must be printable ASCII without spaces");
	refuse_with("keep_on_failure", "\"yes\"", "spec: `keep_on_failure` must be true or false");
	refuse_with("keep_on_failure", "1", "spec: `keep_on_failure` must be true or false");
	refuse_with("mode", "{}", "spec: `mode` must be a string");
	refuse_with("kind", "2", "spec: `kind` must be a string");

	accept_with("keep_on_failure", "true", &s);
	ck_assert(s.keep_on_failure);
	boot_spec_dispose(&s);
	accept_with("start_url", "\"/up?check=1\"", &s);
	ck_assert_str_eq(s.start_url, "/up?check=1");
	boot_spec_dispose(&s);
	accept_with("recorded_steps", "\"whatever\"", &s);
	boot_spec_dispose(&s);
	accept_with("facts", "[null, 1e999, {\"a\": -1}]", &s);
	boot_spec_dispose(&s);
}
END_TEST

/* The length and count caps. */
START_TEST(test_caps)
{
	char *buf = malloc(64 * 1024);
	char *p;

	ck_assert_ptr_nonnull(buf);
	/* 257 steps */
	p = buf + sprintf(buf, "[");
	for (int i = 0; i <= BOOT_SPEC_MAX_STEPS; i++)
		p += sprintf(p, "%s{\"name\":\"s%d\",\"command\":\"x\"}", i ? "," : "", i);
	strcpy(p, "]");
	refuse_with("steps", buf, "spec: `steps` must hold at most 256 steps");
	/* a path of PATH_MAX bytes */
	p = buf + sprintf(buf, "\"/");
	memset(p, 'a', 4095);
	strcpy(p + 4095, "\"");
	refuse_with("app_dir", buf, "spec: `app_dir` must be shorter than 4096 bytes");
	/* a start_url of 2049 bytes */
	p = buf + sprintf(buf, "\"/");
	memset(p, 'a', 2048);
	strcpy(p + 2048, "\"");
	refuse_with("start_url", buf, "spec: `start_url` must be at most 2048 bytes");
	/* a variable name of 65 bytes */
	p = buf + sprintf(buf, "{\"");
	memset(p, 'A', 65);
	strcpy(p + 65, "\":\"x\"}");
	refuse_with("env", buf,
	            "spec: `env` has a key that is not a variable name ([A-Za-z_][A-Za-z0-9_]*, at "
	            "most 64 characters)");
	refuse_with("user", "\"-sandbox\"", "spec: `user` must be a user name or null");
	free(buf);
}
END_TEST

START_TEST(test_ret_untouched_on_failure)
{
	struct boot_spec s;
	struct json_object *o = spec_base();
	struct err e;

	memset(&s, 0x5a, sizeof(s));
	/* Fails late, after most fields were already allocated. */
	spec_set(o, "kind", "[]");
	ck_assert_int_lt(parse_obj(o, &s, &e), 0);
	for (size_t i = 0; i < sizeof(s); i++)
		ck_assert_int_eq(((unsigned char *)&s)[i], 0x5a);
	json_object_put(o);
}
END_TEST

/* Files for boot_spec_load. */
static char tmpdir[64];

static void tmpdir_setup(void)
{
	strcpy(tmpdir, "/tmp/test_boot_spec.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void tmpdir_teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

static void write_file(const char *path, const char *text, size_t len, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, len), (ssize_t)len);
	ck_assert_int_eq(fchmod(fd, mode), 0);
	close(fd);
}

static int load(const char *name, struct boot_spec *s, struct err *e)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	err_clear(e);
	return boot_spec_load(path, s, e);
}

START_TEST(test_load_regular_file)
{
	struct boot_spec s = {0};
	struct err e;
	char path[128];

	snprintf(path, sizeof(path), "%s/spec.json", tmpdir);
	write_file(path, PLATFORM_SPEC, strlen(PLATFORM_SPEC), 0600);
	ck_assert_msg(load("spec.json", &s, &e) == 0, "%s", e.msg);
	ck_assert_uint_eq(s.n_steps, 4);
	boot_spec_dispose(&s);
}
END_TEST

START_TEST(test_load_refuses_links_and_special_files)
{
	struct boot_spec s = {0};
	struct err e;
	char path[128], target[128];

	snprintf(target, sizeof(target), "%s/real.json", tmpdir);
	write_file(target, PLATFORM_SPEC, strlen(PLATFORM_SPEC), 0600);
	snprintf(path, sizeof(path), "%s/link.json", tmpdir);
	ck_assert_int_eq(symlink(target, path), 0);
	ck_assert_int_lt(load("link.json", &s, &e), 0);
	ck_assert_int_eq(e.cls, ERR_REFUSED);
	ck_assert_ptr_nonnull(strstr(e.msg, "is a symbolic link"));

	/* A FIFO with no writer must be refused at once, not block the boot. */
	snprintf(path, sizeof(path), "%s/fifo", tmpdir);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	ck_assert_int_lt(load("fifo", &s, &e), 0);
	ck_assert_int_eq(e.cls, ERR_REFUSED);
	ck_assert_ptr_nonnull(strstr(e.msg, "is not a regular file"));

	ck_assert_int_lt(load(".", &s, &e), 0);
	ck_assert_ptr_nonnull(strstr(e.msg, "is not a regular file"));

	ck_assert_int_lt(load("missing.json", &s, &e), 0);
	ck_assert_int_eq(e.cls, ERR_REFUSED);
	ck_assert_int_eq(e.code, ENOENT);
}
END_TEST

START_TEST(test_load_size_cap)
{
	struct boot_spec s = {0};
	struct err e;
	char path[128];
	size_t len = BOOT_SPEC_MAX + 1;
	char *big = malloc(len);

	ck_assert_ptr_nonnull(big);
	memset(big, ' ', len);
	memcpy(big, MINIMAL_SPEC, strlen(MINIMAL_SPEC));
	snprintf(path, sizeof(path), "%s/big.json", tmpdir);
	write_file(path, big, len, 0600);
	ck_assert_int_lt(load("big.json", &s, &e), 0);
	ck_assert_int_eq(e.cls, ERR_REFUSED);
	ck_assert_ptr_nonnull(strstr(e.msg, "is larger than 1048576 bytes"));
	/* Exactly at the cap is fine. */
	write_file(path, big, len - 1, 0600);
	ck_assert_msg(load("big.json", &s, &e) == 0, "%s", e.msg);
	boot_spec_dispose(&s);
	free(big);
}
END_TEST

START_TEST(test_load_owner_and_mode_as_root)
{
	struct boot_spec s = {0};
	struct err e;
	char path[128];

	if (geteuid() != 0)
		return; /* the check only applies to root */
	snprintf(path, sizeof(path), "%s/spec.json", tmpdir);
	write_file(path, MINIMAL_SPEC, strlen(MINIMAL_SPEC), 0644);
	ck_assert_int_lt(load("spec.json", &s, &e), 0);
	ck_assert_int_eq(e.cls, ERR_REFUSED);
	ck_assert_ptr_nonnull(strstr(e.msg, "must be owned by root"));
	ck_assert_ptr_nonnull(strstr(e.msg, "mode 0644"));
	ck_assert_int_eq(chmod(path, 0620), 0);
	ck_assert_int_lt(load("spec.json", &s, &e), 0);
	ck_assert_int_eq(chmod(path, 0604), 0);
	ck_assert_int_lt(load("spec.json", &s, &e), 0);
	ck_assert_int_eq(chmod(path, 0400), 0);
	ck_assert_msg(load("spec.json", &s, &e) == 0, "%s", e.msg);
	boot_spec_dispose(&s);
	ck_assert_int_eq(chmod(path, 0600), 0);
	ck_assert_int_eq(chown(path, 1000, 0), 0);
	ck_assert_int_lt(load("spec.json", &s, &e), 0);
	ck_assert_ptr_nonnull(strstr(e.msg, "owner uid 1000"));
	ck_assert_int_eq(chown(path, 0, 1000), 0);
	ck_assert_msg(load("spec.json", &s, &e) == 0, "%s", e.msg);
	boot_spec_dispose(&s);
}
END_TEST

static Suite *boot_spec_suite(void)
{
	Suite *s = suite_create("boot_spec");
	TCase *tc = tcase_create("parse");
	TCase *tf = tcase_create("load");

	tcase_add_test(tc, test_platform_spec);
	tcase_add_test(tc, test_minimal_spec_defaults);
	tcase_add_test(tc, test_null_means_not_given);
	tcase_add_test(tc, test_version);
	tcase_add_test(tc, test_not_json);
	tcase_add_test(tc, test_unterminated_buffer);
	tcase_add_test(tc, test_size_cap);
	tcase_add_test(tc, test_deep_nesting_refused);
	tcase_add_test(tc, test_paths);
	tcase_add_test(tc, test_ports_and_timeouts);
	tcase_add_test(tc, test_manifest_and_start);
	tcase_add_test(tc, test_steps);
	tcase_add_test(tc, test_reserved_step_names);
	tcase_add_test(tc, test_find_step);
	tcase_add_test(tc, test_env);
	tcase_add_test(tc, test_duplicate_keys_last_wins);
	tcase_add_test(tc, test_secret_names);
	tcase_add_test(tc, test_toolchain);
	tcase_add_test(tc, test_user_url_and_flags);
	tcase_add_test(tc, test_caps);
	tcase_add_test(tc, test_ret_untouched_on_failure);
	suite_add_tcase(s, tc);

	tcase_add_checked_fixture(tf, tmpdir_setup, tmpdir_teardown);
	tcase_add_test(tf, test_load_regular_file);
	tcase_add_test(tf, test_load_refuses_links_and_special_files);
	tcase_add_test(tf, test_load_size_cap);
	tcase_add_test(tf, test_load_owner_and_mode_as_root);
	suite_add_tcase(s, tf);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(boot_spec_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
