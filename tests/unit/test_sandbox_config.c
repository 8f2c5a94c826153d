/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sandbox_config: the rules of docs/platform-contract.md "`.activeagents/sandbox.yml`", one test
 * each, with the exact refusal texts (and their line:column) users and callers see.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "err.h"
#include "sandbox_config.h"
#include "strv.h"

#define P ".activeagents/sandbox.yml is malformed: "
#define ENV_RULE "`env` must map variable names to strings"

static struct sandbox_config parse_ok(const char *doc)
{
	struct sandbox_config c = {0};
	struct err e = {0};

	ck_assert_msg(sandbox_config_parse(doc, strlen(doc), &c, &e) == 0, "refused: %s", e.msg);
	ck_assert(!c.has_file);
	return c;
}

/* Refused with exactly `want`, class ERR_REFUSED, and the result left untouched. */
static void refused_len(const char *doc, size_t len, const char *want)
{
	struct sandbox_config c = {.manifest = (char *)"sentinel"};
	struct err e = {0};

	ck_assert_msg(sandbox_config_parse(doc, len, &c, &e) < 0, "accepted: %.60s", doc);
	ck_assert_int_eq(e.cls, ERR_REFUSED);
	ck_assert_str_eq(e.msg, want);
	ck_assert_str_eq(c.manifest, "sentinel");
	ck_assert_ptr_null(c.env);
}

static void refused(const char *doc, const char *want)
{
	refused_len(doc, strlen(doc), want);
}

static void ck_defaults_except_env(const struct sandbox_config *c)
{
	ck_assert_uint_eq(strv_length(c->setup), 2);
	ck_assert_str_eq(c->setup[0], "bundle install");
	ck_assert_str_eq(c->setup[1], "bin/rails db:prepare");
	ck_assert_str_eq(c->manifest, "bin/rails action_agent:sandbox:manifest");
	ck_assert_str_eq(c->start, "bin/rails server -b 127.0.0.1 -p $PORT");
}

static void ck_defaults(const struct sandbox_config *c)
{
	ck_defaults_except_env(c);
	ck_assert_ptr_nonnull(c->env);
	ck_assert_uint_eq(strv_length(c->env), 0);
}

START_TEST(test_real_world_file)
{
	static const char doc[] =
	    "env:\n"
	    "  BUNDLE_GEMFILE: ../../gemfiles/rails8.gemfile\n"
	    "  RAILS_ENV: development\n"
	    "setup:\n"
	    "  - cd test/dummy && bundle install\n"
	    "  - cd test/dummy && bin/rails db:prepare\n"
	    "manifest: cd test/dummy && bin/rails action_agent:sandbox:manifest\n"
	    "start: cd test/dummy && exec bin/rails server -b 127.0.0.1 -p \"$PORT\"\n";
	struct sandbox_config c = parse_ok(doc);

	ck_assert_uint_eq(strv_length(c.env), 2);
	ck_assert_str_eq(c.env[0], "BUNDLE_GEMFILE=../../gemfiles/rails8.gemfile");
	ck_assert_str_eq(c.env[1], "RAILS_ENV=development");
	ck_assert_uint_eq(strv_length(c.setup), 2);
	ck_assert_str_eq(c.setup[0], "cd test/dummy && bundle install");
	ck_assert_str_eq(c.setup[1], "cd test/dummy && bin/rails db:prepare");
	ck_assert_str_eq(c.manifest, "cd test/dummy && bin/rails action_agent:sandbox:manifest");
	ck_assert_str_eq(c.start,
	                 "cd test/dummy && exec bin/rails server -b 127.0.0.1 -p \"$PORT\"");
	sandbox_config_dispose(&c);
	sandbox_config_dispose(&c); /* dispose leaves an empty struct behind */
}
END_TEST

START_TEST(test_empty_documents_give_defaults)
{
	static const char *const empty[] = {
	    "",    "\n\n",   "# only a comment\n", "---\n", "--- # comment\n", "---\n...\n",
	    "~\n", "null\n", "--- !!null ''\n",
	};

	for (size_t i = 0; i < ELEMENTSOF(empty); i++) {
		struct sandbox_config c = parse_ok(empty[i]);
		ck_defaults(&c);
		sandbox_config_dispose(&c);
	}
	{
		struct sandbox_config c = {0};
		struct err e = {0};
		ck_assert_int_eq(sandbox_config_parse(NULL, 0, &c, &e), 0);
		ck_defaults(&c);
		sandbox_config_dispose(&c);
	}
}
END_TEST

START_TEST(test_top_level_must_be_a_mapping)
{
	refused("- a\n- b\n", P "it must be a mapping of settings (line 1, column 1)");
	refused("hello\n", P "it must be a mapping of settings (line 1, column 1)");
	refused("\"\"\n", P "it must be a mapping of settings (line 1, column 1)");
	refused("# settings\n---\n42\n", P "it must be a mapping of settings (line 3, column 1)");
	refused("2024-01-01\n", P "it must be a mapping of settings (line 1, column 1)");
	refused("--- !!set {a: 1}\n", P "it must be a mapping of settings (line 1, column 5)");
}
END_TEST

START_TEST(test_invalid_yaml)
{
	refused("a: b: c\n",
	        P "it is not valid YAML (mapping values are not allowed in this context at line 1 "
	          "column 5)");
	refused("setup:\n\t- x\n", P "it is not valid YAML (found character that cannot start any "
	                             "token at line 2 column 1)");
	refused("env: {A: 1\n",
	        P "it is not valid YAML (did not find expected ',' or '}' at line 2 "
	          "column 1)");
	/* the reader's errors have only an offset: counted into a line and column here */
	refused("a: 1\nb: \xff\n",
	        P "it is not valid YAML (invalid leading UTF-8 octet at line 2 column 4)");
	refused_len("a: 1\n\0", 6,
	            P "it is not valid YAML (control characters are not allowed at line 2 column "
	              "1)");
}
END_TEST

START_TEST(test_unknown_keys_ignored)
{
	struct sandbox_config c =
	    parse_ok("version: 2\n"
	             "services: {redis: {port: 6379, tags: [a, [b, {c: d}]]}}\n"
	             "1: one\n"
	             "true: yes\n"
	             "? [complex, key]\n"
	             ": value\n"
	             "~: nothing\n"
	             "later: 2024-01-01\n");

	ck_defaults(&c);
	sandbox_config_dispose(&c);
}
END_TEST

START_TEST(test_duplicate_keys_refused)
{
	refused("setup: a\nmanifest: m\nsetup: b\n", P "`setup` is given twice (line 3, column 1)");
	refused("env: {}\n\"env\": {}\n", P "`env` is given twice (line 2, column 1)");
	refused("extra: 1\nextra: 2\n", P "`extra` is given twice (line 2, column 1)");
	refused("env:\n  A: 1\n  B: 2\n  A: 3\n", P "`env` sets A twice (line 4, column 3)");
	/* a long or odd key is shown shortened and printable */
	refused(
	    "? \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\\tz\"\n: 1\n"
	    "? \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\\tz\"\n: 2\n",
	    P "`aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...` is given "
	      "twice (line 3, column 3)");
	refused("\"a\\tb\": 1\n\"a\\tb\": 2\n", P "`a?b` is given twice (line 2, column 1)");
}
END_TEST

START_TEST(test_anchors_and_aliases_refused)
{
	refused("env:\n  A: &x one\n  B: *x\n",
	        P "anchors and aliases (& and *) are not allowed (line 2, column 6)");
	refused("setup: &s [a]\n",
	        P "anchors and aliases (& and *) are not allowed (line 1, column 8)");
	/* in keys we otherwise ignore, too */
	refused("unknown:\n  deep: [*x]\n",
	        P "anchors and aliases (& and *) are not allowed (line 2, column 10)");
	refused("? &k key\n: v\n",
	        P "anchors and aliases (& and *) are not allowed (line 1, column 3)");
	/* billion laughs: refused at the first anchor, nothing is expanded */
	refused("a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
	        "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
	        "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n",
	        P "anchors and aliases (& and *) are not allowed (line 1, column 4)");
}
END_TEST

START_TEST(test_merge_keys_refused)
{
	refused("<<: {setup: x}\n", P "merge keys (<<) are not supported (line 1, column 1)");
	refused("env:\n  <<: {A: b}\n",
	        P ENV_RULE ": merge keys (<<) are not supported (line 2, column 3)");
}
END_TEST

START_TEST(test_multiple_documents_refused)
{
	refused("setup: a\n---\nsetup: b\n", P
	        "it holds more than one YAML document (one mapping of settings is expected) (line "
	        "2, column 1)");
	refused("---\n---\n", P "it holds more than one YAML document (one mapping of settings is "
	                        "expected) (line 2, column 1)");
}
END_TEST

static char *nested(const char *key, int levels)
{
	size_t len = strlen(key) + 2 * (size_t)levels + 8;
	char *s = malloc(len);
	size_t o = (size_t)snprintf(s, len, "%s: ", key);

	for (int i = 0; i < levels; i++)
		s[o++] = '[';
	for (int i = 0; i < levels; i++)
		s[o++] = ']';
	s[o++] = '\n';
	s[o] = '\0';
	return s;
}

START_TEST(test_depth_capped)
{
	/* the top-level mapping is level 1 */
	char *ok = nested("unknown", SANDBOX_CONFIG_MAX_DEPTH - 1);
	char *deep = nested("unknown", SANDBOX_CONFIG_MAX_DEPTH);
	char *huge = nested("unknown", 100000);
	char want[200];
	struct sandbox_config c = parse_ok(ok);

	sandbox_config_dispose(&c);
	snprintf(want, sizeof(want), P "it nests deeper than 64 levels (line 1, column %d)",
	         10 + SANDBOX_CONFIG_MAX_DEPTH - 1);
	refused(deep, want);
	refused(huge, want);
	free(ok);
	free(deep);
	free(huge);
}
END_TEST

START_TEST(test_size_capped)
{
	char *doc = malloc(SANDBOX_CONFIG_MAX + 2);
	struct sandbox_config c = {0};
	struct err e = {0};

	memset(doc, ' ', SANDBOX_CONFIG_MAX + 1);
	doc[0] = '#';
	doc[SANDBOX_CONFIG_MAX + 1] = '\0';
	ck_assert_int_eq(sandbox_config_parse(doc, SANDBOX_CONFIG_MAX, &c, &e), 0);
	ck_defaults(&c);
	sandbox_config_dispose(&c);
	refused_len(doc, SANDBOX_CONFIG_MAX + 1,
	            ".activeagents/sandbox.yml is too large: it has more than 262144 bytes");
	free(doc);
}
END_TEST

START_TEST(test_setup_forms)
{
	struct sandbox_config c;

	c = parse_ok("setup: make\n");
	ck_assert_uint_eq(strv_length(c.setup), 1);
	ck_assert_str_eq(c.setup[0], "make");
	ck_assert_str_eq(c.manifest, SANDBOX_DEFAULT_MANIFEST);
	sandbox_config_dispose(&c);

	c = parse_ok(
	    "setup:\n  - \"a\"\n  - 'b'\n  - c d\n  - !!str 42\n  - |\n    multi\n    line\n");
	ck_assert_uint_eq(strv_length(c.setup), 5);
	ck_assert_str_eq(c.setup[2], "c d");
	ck_assert_str_eq(c.setup[3], "42");
	ck_assert_str_eq(c.setup[4], "multi\nline\n");
	sandbox_config_dispose(&c);

	/* an empty list means no setup step at all, not the defaults */
	c = parse_ok("setup: []\n");
	ck_assert_ptr_nonnull(c.setup);
	ck_assert_uint_eq(strv_length(c.setup), 0);
	sandbox_config_dispose(&c);

	c = parse_ok("setup: !!seq [x]\n");
	ck_assert_str_eq(c.setup[0], "x");
	sandbox_config_dispose(&c);
}
END_TEST

START_TEST(test_setup_refused)
{
	refused("setup: {a: b}\n", P "`setup` must be a list of commands (line 1, column 8)");
	refused("setup:\n", P "`setup` must be a list of commands (line 1, column 7)");
	refused("setup: \"\"\n", P "`setup` must be a list of commands (line 1, column 8)");
	refused("setup: 42\n", P "`setup` must be a list of commands (line 1, column 8)");
	refused("setup: !!omap [a: b]\n",
	        P "`setup` must be a list of commands (line 1, column 8)");
	/* the item at fault */
	refused("setup:\n  - ok\n  - [nested]\n",
	        P "`setup` must be a list of commands (line 3, column 5)");
	refused("setup:\n  - ok\n  - \"  \"\n",
	        P "`setup` must be a list of commands (line 3, column 5)");
	refused("setup:\n  - ok\n  -\n", P "`setup` must be a list of commands (line 3, column 4)");
	refused("setup:\n  - yes\n", P "`setup` must be a list of commands (line 2, column 5)");
	refused("setup:\n  - a: b\n", P "`setup` must be a list of commands (line 2, column 5)");
	refused("setup: [\"a\\0b\"]\n", P "`setup` must be a list of commands (line 1, column 9)");
}
END_TEST

START_TEST(test_manifest_and_start)
{
	struct sandbox_config c = parse_ok("manifest: bin/manifest\nstart: 'exec bin/server'\n");

	ck_assert_str_eq(c.manifest, "bin/manifest");
	ck_assert_str_eq(c.start, "exec bin/server");
	ck_assert_uint_eq(strv_length(c.setup), 2); /* defaults kept */
	sandbox_config_dispose(&c);

	refused("manifest: \"\"\n", P "`manifest` must be a command (line 1, column 11)");
	refused("manifest:\n", P "`manifest` must be a command (line 1, column 10)");
	refused("manifest: [a]\n", P "`manifest` must be a command (line 1, column 11)");
	refused("manifest: true\n", P "`manifest` must be a command (line 1, column 11)");
	refused("start: {a: b}\n", P "`start` must be a command (line 1, column 8)");
	refused("start: 8080\n", P "`start` must be a command (line 1, column 8)");
	refused("start: \" \\t \"\n", P "`start` must be a command (line 1, column 8)");
	refused("start: 2024-01-01\n", P "`start` must be a command (line 1, column 8)");
}
END_TEST

START_TEST(test_env_values_converted)
{
	struct sandbox_config c = parse_ok("env:\n"
	                                   "  A: true\n"
	                                   "  B: off\n"
	                                   "  C: 010\n"
	                                   "  D: 0x1F\n"
	                                   "  E: 1.50\n"
	                                   "  F: 1e3\n"
	                                   "  G: 12:30\n"
	                                   "  H: 1,000\n"
	                                   "  I: \"010\"\n"
	                                   "  J: 'yes'\n"
	                                   "  K: !!str 1.50\n"
	                                   "  L: |\n"
	                                   "    two\n"
	                                   "    lines\n"
	                                   "  \"yes\": quoted name\n"
	                                   "  _under_score9: x\n");
	static const char *const want[] = {
	    "A=true",          "B=false",         "C=8",   "D=31",  "E=1.5",  "F=1e3",
	    "G=45000",         "H=1000",          "I=010", "J=yes", "K=1.50", "L=two\nlines\n",
	    "yes=quoted name", "_under_score9=x",
	};

	ck_assert_uint_eq(strv_length(c.env), ELEMENTSOF(want));
	for (size_t i = 0; i < ELEMENTSOF(want); i++)
		ck_assert_str_eq(c.env[i], want[i]);
	ck_defaults_except_env(&c);
	sandbox_config_dispose(&c);

	c = parse_ok("env: {}\n");
	ck_assert_uint_eq(strv_length(c.env), 0);
	sandbox_config_dispose(&c);
}
END_TEST

START_TEST(test_env_refused)
{
	refused("env: [A, B]\n", P ENV_RULE " (line 1, column 6)");
	refused("env: A=1\n", P ENV_RULE " (line 1, column 6)");
	refused("env:\n", P ENV_RULE " (line 1, column 5)");
	refused("env: !!omap {A: 1}\n", P ENV_RULE " (line 1, column 6)");
	refused("env:\n  1A: x\n", P ENV_RULE
	        ": a variable name must match [A-Za-z_][A-Za-z0-9_]* (line 2, column 3)");
	refused("env:\n  A-B: x\n", P ENV_RULE
	        ": a variable name must match [A-Za-z_][A-Za-z0-9_]* (line 2, column 3)");
	refused("env:\n  \"A=B\": x\n", P ENV_RULE
	        ": a variable name must match [A-Za-z_][A-Za-z0-9_]* (line 2, column 3)");
	refused("env:\n  \"\": x\n", P ENV_RULE
	        ": a variable name must match [A-Za-z_][A-Za-z0-9_]* (line 2, column 3)");
	refused("env:\n  12: x\n", P ENV_RULE
	        ": a variable name must match [A-Za-z_][A-Za-z0-9_]* (line 2, column 3)");
	/* Ruby reads these names as true and nil */
	refused("env:\n  yes: x\n",
	        P ENV_RULE ": this variable name reads as a boolean; quote it (line 2, column 3)");
	refused("env:\n  ~: x\n",
	        P ENV_RULE ": this variable name reads as null; quote it (line 2, "
	                   "column 3)");
	refused("env:\n  [A]: x\n",
	        P ENV_RULE ": a variable name must be a plain word, not a list (line 2, column 3)");
	/* values */
	refused("env:\n  A: [x]\n", P ENV_RULE ": A is a list, not a string (line 2, column 6)");
	refused("env:\n  A: {x: y}\n",
	        P ENV_RULE ": A is a mapping, not a string (line 2, column 6)");
	refused("env:\n  A:\n", P ENV_RULE ": A: null is not a string (line 2, column 5)");
	refused("env:\n  A: ~\n", P ENV_RULE ": A: null is not a string (line 2, column 6)");
	refused("env:\n  A: NULL\n", P ENV_RULE ": A: null is not a string (line 2, column 6)");
	refused("env:\n  A: 2024-01-01\n", P ENV_RULE
	        ": A: a date is not a string; quote it to keep it as text (line 2, column "
	        "6)");
	refused("env:\n  A: 2024-01-01 10:00:00\n", P ENV_RULE
	        ": A: a time is not a string; quote it to keep it as text (line 2, column "
	        "6)");
	refused("env:\n  A: :sym\n", P ENV_RULE ": A: a Ruby symbol is not a string; quote it to "
	                                        "keep it as text (line 2, column 6)");
	refused("env:\n  A: 0x_\n", P ENV_RULE ": A: not a valid number; quote it to keep it as "
	                                       "text (line 2, column 6)");
	refused("env:\n  A: \"a\\0b\"\n",
	        P ENV_RULE ": A: a NUL character is not allowed (line 2, column 6)");
	refused("env:\n  A: !ruby/object:BigDecimal 1\n",
	        P ENV_RULE ": A: a tag naming a Ruby class is not allowed (line 2, column 6)");
}
END_TEST

START_TEST(test_messages_never_echo_values)
{
	static const char *const docs[] = {
	    "env:\n  TOKEN: [hunter2-secret]\n",
	    "env:\n  TOKEN: {hunter2-secret: 1}\n",
	    "env:\n  hunter2-secret: x\n",
	    "env:\n  \"hunter2-secret\": x\n",
	    "env:\n  TOKEN: hunter2-secret: x\n",
	    "env:\n  TOKEN: \"hunter2-secret\n",
	    "env:\n  TOKEN: !!float hunter2-secret\n",
	    "env:\n  TOKEN: !str:hunter2-secret x\n",
	    "manifest: [hunter2-secret]\n",
	    "setup: [[hunter2-secret]]\n",
	    "hunter2-secret\n",
	    "- hunter2-secret\n",
	    "env: hunter2-secret\n",
	    "env:\n  A: &hunter2-secret x\n",
	};

	for (size_t i = 0; i < ELEMENTSOF(docs); i++) {
		struct sandbox_config c = {0};
		struct err e = {0};

		ck_assert_int_lt(sandbox_config_parse(docs[i], strlen(docs[i]), &c, &e), 0);
		ck_assert_int_eq(e.cls, ERR_REFUSED);
		ck_assert_msg(!strstr(e.msg, "hunter2"), "%s echoes content: %s", docs[i], e.msg);
	}
}
END_TEST

/* ---- loading from an app directory -------------------------------------------------------- */

struct app {
	char dir[64];
	int fd;
};

static void app_make(struct app *a)
{
	strcpy(a->dir, "/tmp/test_sandbox_config.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(a->dir));
	a->fd = open(a->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(a->fd, 0);
}

static void app_write(struct app *a, const char *rel, const char *content, size_t len)
{
	int fd = openat(a->fd, rel, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, content, len), (ssize_t)len);
	close(fd);
}

static void app_free(struct app *a)
{
	char cmd[128];

	close(a->fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", a->dir);
	ck_assert_int_eq(system(cmd), 0);
}

static const unsigned modes[] = {0, SANDBOX_CONFIG_NO_OPENAT2};

static void load_refused(struct app *a, unsigned flags, const char *want)
{
	struct sandbox_config c = {.manifest = (char *)"sentinel"};
	struct err e = {0};

	ck_assert_int_lt(sandbox_config_load_at(a->fd, flags, &c, &e), 0);
	ck_assert_int_eq(e.cls, ERR_REFUSED);
	ck_assert_str_eq(e.msg, want);
	ck_assert_str_eq(c.manifest, "sentinel");
}

static struct sandbox_config load_ok(struct app *a, unsigned flags)
{
	struct sandbox_config c = {0};
	struct err e = {0};

	ck_assert_msg(sandbox_config_load_at(a->fd, flags, &c, &e) == 0, "refused: %s", e.msg);
	return c;
}

START_TEST(test_load_missing_gives_defaults)
{
	for (size_t m = 0; m < ELEMENTSOF(modes); m++) {
		struct app a;
		struct sandbox_config c;

		app_make(&a);
		c = load_ok(&a, modes[m]);
		ck_assert(!c.has_file);
		ck_defaults(&c);
		sandbox_config_dispose(&c);

		ck_assert_int_eq(mkdirat(a.fd, ".activeagents", 0755), 0);
		c = load_ok(&a, modes[m]);
		ck_assert(!c.has_file);
		ck_defaults(&c);
		sandbox_config_dispose(&c);
		app_free(&a);

		/* .activeagents is some other tool's file: there can be no sandbox.yml */
		app_make(&a);
		app_write(&a, ".activeagents", "x", 1);
		c = load_ok(&a, modes[m]);
		ck_assert(!c.has_file);
		sandbox_config_dispose(&c);
		app_free(&a);
	}
}
END_TEST

START_TEST(test_load_reads_the_file)
{
	for (size_t m = 0; m < ELEMENTSOF(modes); m++) {
		struct app a;
		struct sandbox_config c;

		app_make(&a);
		ck_assert_int_eq(mkdirat(a.fd, ".activeagents", 0755), 0);
		app_write(&a, ".activeagents/sandbox.yml", "setup: make\nenv: {X: 010}\n", 26);
		c = load_ok(&a, modes[m]);
		ck_assert(c.has_file);
		ck_assert_str_eq(c.setup[0], "make");
		ck_assert_str_eq(c.env[0], "X=8");
		sandbox_config_dispose(&c);

		app_write(&a, ".activeagents/sandbox.yml", "", 0);
		c = load_ok(&a, modes[m]);
		ck_assert(c.has_file);
		ck_defaults(&c);
		sandbox_config_dispose(&c);

		app_write(&a, ".activeagents/sandbox.yml", "- x\n", 4);
		load_refused(&a, modes[m], P "it must be a mapping of settings (line 1, column 1)");
		app_free(&a);
	}
}
END_TEST

START_TEST(test_load_by_path)
{
	struct app a;
	struct sandbox_config c = {0};
	struct err e = {0};

	app_make(&a);
	ck_assert_int_eq(mkdirat(a.fd, ".activeagents", 0755), 0);
	app_write(&a, ".activeagents/sandbox.yml", "start: serve\n", 13);
	ck_assert_int_eq(sandbox_config_load(a.dir, &c, &e), 0);
	ck_assert(c.has_file);
	ck_assert_str_eq(c.start, "serve");
	sandbox_config_dispose(&c);
	app_free(&a);

	ck_assert_int_lt(sandbox_config_load("/nonexistent/app", &c, &e), 0);
	ck_assert_int_eq(e.cls, ERR_FAILED);
	ck_assert_ptr_nonnull(strstr(e.msg, "/nonexistent/app"));
}
END_TEST

START_TEST(test_load_refuses_symlinks)
{
	for (size_t m = 0; m < ELEMENTSOF(modes); m++) {
		struct app a;

		/* the file is a link, even to a regular file inside the app directory */
		app_make(&a);
		ck_assert_int_eq(mkdirat(a.fd, ".activeagents", 0755), 0);
		app_write(&a, "real.yml", "setup: x\n", 9);
		ck_assert_int_eq(symlinkat("../real.yml", a.fd, ".activeagents/sandbox.yml"), 0);
		load_refused(&a, modes[m],
		             ".activeagents/sandbox.yml is a symbolic link; it must be a regular "
		             "file inside the app directory (links are not followed)");
		/* dangling, or pointing outside */
		ck_assert_int_eq(unlinkat(a.fd, ".activeagents/sandbox.yml", 0), 0);
		ck_assert_int_eq(symlinkat("/etc/passwd", a.fd, ".activeagents/sandbox.yml"), 0);
		load_refused(&a, modes[m],
		             ".activeagents/sandbox.yml is a symbolic link; it must be a regular "
		             "file inside the app directory (links are not followed)");
		ck_assert_int_eq(unlinkat(a.fd, ".activeagents/sandbox.yml", 0), 0);
		ck_assert_int_eq(symlinkat("nowhere", a.fd, ".activeagents/sandbox.yml"), 0);
		load_refused(&a, modes[m],
		             ".activeagents/sandbox.yml is a symbolic link; it must be a regular "
		             "file inside the app directory (links are not followed)");
		app_free(&a);

		/* the directory is a link */
		app_make(&a);
		ck_assert_int_eq(mkdirat(a.fd, "elsewhere", 0755), 0);
		app_write(&a, "elsewhere/sandbox.yml", "setup: x\n", 9);
		ck_assert_int_eq(symlinkat("elsewhere", a.fd, ".activeagents"), 0);
		load_refused(
		    &a, modes[m],
		    ".activeagents is a symbolic link; it must be a directory inside the app "
		    "directory (links are not followed)");
		/* even one that leads nowhere: we cannot tell whether a file is behind it */
		ck_assert_int_eq(unlinkat(a.fd, ".activeagents", 0), 0);
		ck_assert_int_eq(symlinkat("/nonexistent", a.fd, ".activeagents"), 0);
		load_refused(
		    &a, modes[m],
		    ".activeagents is a symbolic link; it must be a directory inside the app "
		    "directory (links are not followed)");
		app_free(&a);
	}
}
END_TEST

START_TEST(test_load_refuses_special_files)
{
	for (size_t m = 0; m < ELEMENTSOF(modes); m++) {
		struct app a;
		struct sockaddr_un sa = {.sun_family = AF_UNIX};
		int s;

		app_make(&a);
		ck_assert_int_eq(mkdirat(a.fd, ".activeagents", 0755), 0);
		ck_assert_int_eq(mkdirat(a.fd, ".activeagents/sandbox.yml", 0755), 0);
		load_refused(&a, modes[m],
		             ".activeagents/sandbox.yml is a directory; it must be a regular file");
		ck_assert_int_eq(unlinkat(a.fd, ".activeagents/sandbox.yml", AT_REMOVEDIR), 0);

		/* a FIFO with no writer: refused at once, not waited on (the test would time out)
		 */
		ck_assert_int_eq(mkfifoat(a.fd, ".activeagents/sandbox.yml", 0644), 0);
		load_refused(&a, modes[m],
		             ".activeagents/sandbox.yml is a FIFO; it must be a regular file");
		ck_assert_int_eq(unlinkat(a.fd, ".activeagents/sandbox.yml", 0), 0);

		s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		ck_assert_int_ge(s, 0);
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/.activeagents/sandbox.yml", a.dir);
		ck_assert_int_eq(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
		load_refused(&a, modes[m], ".activeagents/sandbox.yml is not a regular file");
		close(s);
		app_free(&a);
	}
}
END_TEST

START_TEST(test_load_size_capped)
{
	char *big = malloc(SANDBOX_CONFIG_MAX + 1);
	struct app a;
	struct sandbox_config c;

	memset(big, '\n', SANDBOX_CONFIG_MAX + 1);
	app_make(&a);
	ck_assert_int_eq(mkdirat(a.fd, ".activeagents", 0755), 0);
	app_write(&a, ".activeagents/sandbox.yml", big, SANDBOX_CONFIG_MAX);
	c = load_ok(&a, 0);
	ck_assert(c.has_file);
	sandbox_config_dispose(&c);
	app_write(&a, ".activeagents/sandbox.yml", big, SANDBOX_CONFIG_MAX + 1);
	load_refused(&a, 0,
	             ".activeagents/sandbox.yml is too large: it has more than 262144 bytes");
	app_free(&a);
	free(big);
}
END_TEST

/* Notes of parsing doc (which must parse, or not, as ok says), joined by newlines. */
static char *notes_of(const char *doc, bool ok)
{
	_cleanup_strv_ char **notes = NULL;
	struct sandbox_config c = {0};
	struct err e = {0};
	char *joined = NULL;
	size_t len = 0;
	FILE *f;
	int r = sandbox_config_parse_noted(doc, strlen(doc), &notes, &c, &e);

	ck_assert_msg((r == 0) == ok, "%s: %s", doc, e.msg);
	if (r == 0)
		sandbox_config_dispose(&c);
	f = open_memstream(&joined, &len);
	ck_assert_ptr_nonnull(f);
	for (size_t i = 0; notes && notes[i]; i++)
		fprintf(f, "%s\n", notes[i]);
	fclose(f);
	return joined;
}

START_TEST(test_notes_unknown_keys)
{
	_cleanup_free_ char *n = notes_of(
	    "start: x\nenvs:\n  A: 1\nsetpu: [a]\n  # c\nstrat: y\nother: 1\n1: 2\n", true);

	ck_assert_str_eq(
	    n, ".activeagents/sandbox.yml:2:1: warning: unknown setting `envs` is "
	       "ignored; did you mean `env`?\n"
	       ".activeagents/sandbox.yml:4:1: warning: unknown setting `setpu` is "
	       "ignored; did you mean `setup`?\n"
	       ".activeagents/sandbox.yml:6:1: warning: unknown setting `strat` is "
	       "ignored; did you mean `start`?\n"
	       ".activeagents/sandbox.yml:7:1: warning: unknown setting `other` is "
	       "ignored (the settings are env, setup, manifest, start, limits and egress)\n"
	       ".activeagents/sandbox.yml:8:1: warning: a setting whose key is not a "
	       "string is ignored\n");
	free(n);
	n = notes_of("env: {A: 1}\nsetup: x\nmanifest: m\nstart: s\n", true);
	ck_assert_str_eq(n, "");
}
END_TEST

START_TEST(test_notes_yaml_syntax)
{
	char *n = notes_of("setup:\n\t- x\n", false);

	ck_assert_str_eq(n, ".activeagents/sandbox.yml:2:1: error: found character that cannot "
	                    "start any token\n"
	                    "    2 | \t- x\n"
	                    "      | ^\n"
	                    "hint: tabs cannot indent YAML; indent with spaces\n");
	free(n);
	n = notes_of("setup: [a]\nstart: bin/rails s -b: 0\n", false);
	ck_assert_str_eq(n, ".activeagents/sandbox.yml:2:22: error: mapping values are not "
	                    "allowed in this context\n"
	                    "    2 | start: bin/rails s -b: 0\n"
	                    "      |                      ^\n"
	                    "hint: quote a command that holds \": \" (a colon and a space), e.g. "
	                    "start: \"bin/server --bind: 0.0.0.0\"\n");
	free(n);
	n = notes_of("setup:\n  - \"x\nstart: y\n", false);
	ck_assert_str_eq(n, ".activeagents/sandbox.yml:2:5: error: this quote is never closed "
	                    "(found unexpected end of stream)\n"
	                    "    2 |   - \"x\n"
	                    "      |     ^\n"
	                    "hint: an unclosed quote started at 2:5; close it or quote the whole "
	                    "command with the other kind of quote\n");
	free(n);
	/* A GitHub token on the line shown is masked. */
	n = notes_of("start: ghp_abcdefghijklmnopqrstuvwxyz0123456789: x\n", false);
	ck_assert_ptr_null(strstr(n, "ghp_abcdefghij"));
	ck_assert_ptr_nonnull(strstr(n, "[REDACTED]"));
	free(n);
}
END_TEST

START_TEST(test_notes_look_alikes)
{
	const char *cases[][2] = {
	    {".activeagents/sandbox.yaml", ".activeagents/sandbox.yaml was found: rename it to "
	                                   ".activeagents/sandbox.yml"},
	    {"sandbox.yml", "sandbox.yml was found: rename it to .activeagents/sandbox.yml"},
	    {"sub/.activeagents/sandbox.yml",
	     "sub/.activeagents/sandbox.yml was found: the file must be at the checkout's root "
	     "(commands may `cd sub` first)"},
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		_cleanup_strv_ char **notes = NULL;
		struct sandbox_config c = {0};
		struct err e = {0};
		struct app a;

		app_make(&a);
		mkdirat(a.fd, ".activeagents", 0755);
		mkdirat(a.fd, "sub", 0755);
		mkdirat(a.fd, "sub/.activeagents", 0755);
		app_write(&a, cases[i][0], "start: x\n", 9);
		ck_assert_int_eq(sandbox_config_load_at_noted(a.fd, 0, &notes, &c, &e), 0);
		ck_assert(!c.has_file);
		ck_assert_uint_eq(strv_length(notes), 1);
		ck_assert_msg(strstr(notes[0], cases[i][1]), "%s", notes[0]);
		ck_assert_ptr_nonnull(strstr(notes[0], ".activeagents/sandbox.yml: warning: there "
		                                       "is no such file"));
		sandbox_config_dispose(&c);
		app_free(&a);
	}
}
END_TEST

static Suite *sandbox_config_suite(void)
{
	Suite *s = suite_create("sandbox_config");
	TCase *tc = tcase_create("parse");
	TCase *tl = tcase_create("load");

	tcase_add_test(tc, test_real_world_file);
	tcase_add_test(tc, test_empty_documents_give_defaults);
	tcase_add_test(tc, test_top_level_must_be_a_mapping);
	tcase_add_test(tc, test_invalid_yaml);
	tcase_add_test(tc, test_unknown_keys_ignored);
	tcase_add_test(tc, test_duplicate_keys_refused);
	tcase_add_test(tc, test_anchors_and_aliases_refused);
	tcase_add_test(tc, test_merge_keys_refused);
	tcase_add_test(tc, test_multiple_documents_refused);
	tcase_add_test(tc, test_depth_capped);
	tcase_add_test(tc, test_size_capped);
	tcase_add_test(tc, test_setup_forms);
	tcase_add_test(tc, test_setup_refused);
	tcase_add_test(tc, test_manifest_and_start);
	tcase_add_test(tc, test_env_values_converted);
	tcase_add_test(tc, test_env_refused);
	tcase_add_test(tc, test_messages_never_echo_values);
	tcase_add_test(tc, test_notes_unknown_keys);
	tcase_add_test(tc, test_notes_yaml_syntax);
	suite_add_tcase(s, tc);

	tcase_add_test(tl, test_load_missing_gives_defaults);
	tcase_add_test(tl, test_load_reads_the_file);
	tcase_add_test(tl, test_load_by_path);
	tcase_add_test(tl, test_load_refuses_symlinks);
	tcase_add_test(tl, test_load_refuses_special_files);
	tcase_add_test(tl, test_load_size_capped);
	tcase_add_test(tl, test_notes_look_alikes);
	suite_add_tcase(s, tl);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(sandbox_config_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
