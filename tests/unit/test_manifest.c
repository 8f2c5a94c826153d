/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "err.h"
#include "manifest.h"

#define TOKEN "aa_7Hq2bXk9ZrMvN3pT5wYcD8fGjL4sAe6U"

static int parse(const char *text, struct manifest *m, struct err *e)
{
	err_clear(e);
	return manifest_parse(text, strlen(text), m, e);
}

/* text must be refused as a failed manifest step, with exactly msg. */
static void fails_with(const char *text, const char *msg)
{
	struct manifest m = {0};
	struct err e;

	ck_assert_msg(parse(text, &m, &e) < 0, "accepted: %s", text);
	ck_assert_int_eq(e.cls, ERR_FAILED);
	ck_assert_str_eq(e.msg, msg);
	ck_assert_ptr_null(strstr(e.msg, TOKEN));
}

START_TEST(test_valid_manifest)
{
	struct manifest m = {0};
	struct err e;

	ck_assert_int_eq(
	    parse("{\"mcp_path\":\"/action_agent/mcp\",\"mcp_token\":\"" TOKEN "\"}", &m, &e), 0);
	ck_assert_str_eq(m.mcp_path, "/action_agent/mcp");
	ck_assert_str_eq(m.mcp_token, TOKEN);
	manifest_dispose(&m);
	ck_assert_ptr_null(m.mcp_path);
	ck_assert_ptr_null(m.mcp_token);

	ck_assert_int_eq(parse(" {\"mcp_path\":\"/mcp\",\"mcp_token\":null}\n", &m, &e), 0);
	ck_assert_str_eq(m.mcp_path, "/mcp");
	ck_assert_ptr_null(m.mcp_token);
	manifest_dispose(&m);

	/* Absent token = null; other keys are ignored; "/" alone is a path. */
	ck_assert_int_eq(parse("{\"mcp_path\":\"/\",\"version\":2,\"extra\":{\"a\":[1]}}", &m, &e),
	                 0);
	ck_assert_str_eq(m.mcp_path, "/");
	ck_assert_ptr_null(m.mcp_token);
	manifest_dispose(&m);

	/* Spaces are printable ASCII and allowed in the path (the contract's rule). */
	ck_assert_int_eq(parse("{\"mcp_path\":\"/a b/~mcp\"}", &m, &e), 0);
	ck_assert_str_eq(m.mcp_path, "/a b/~mcp");
	manifest_dispose(&m);
}
END_TEST

START_TEST(test_not_an_object)
{
	fails_with("[\"/mcp\"]", "the manifest is not a JSON object (it is an array)");
	fails_with("\"/mcp\"", "the manifest is not a JSON object (it is a string)");
	fails_with("42", "the manifest is not a JSON object (it is a number)");
	fails_with("null", "the manifest is not a JSON object (it is null)");
	fails_with("true", "the manifest is not a JSON object (it is a boolean)");
	fails_with("", "the manifest is empty");
	fails_with(" \n", "the manifest is empty");
	fails_with("{\"mcp_path\":",
	           "the manifest is not valid JSON (unexpected end of data at offset 12)");
	fails_with("{\"mcp_path\":\"/mcp\"} trailing",
	           "the manifest is not valid JSON (unexpected character at offset 20)");
	fails_with("{\"mcp_path\":\"/\xc3\x28\"}",
	           "the manifest is not valid JSON (invalid utf-8 string at offset 15)");
}
END_TEST

START_TEST(test_nul_refused)
{
	static const char raw[] = "{\"mcp_path\":\"/mcp\"}\0";
	struct manifest m = {0};
	struct err e;

	err_clear(&e);
	ck_assert_int_lt(manifest_parse(raw, sizeof(raw) - 1, &m, &e), 0);
	ck_assert_int_eq(e.cls, ERR_FAILED);
	ck_assert_str_eq(e.msg, "the manifest is not valid JSON (a NUL byte at offset 19)");
	fails_with("{\"mcp_path\":\"/mcp\\u0000/x\"}",
	           "the manifest holds a NUL character (\\u0000 at offset 17)");
	/* json-c would read this key as "mcp_path". */
	fails_with("{\"mcp_path\\u0000evil\":\"/mcp\"}",
	           "the manifest holds a NUL character (\\u0000 at offset 10)");
	ck_assert_int_eq(parse("{\"mcp_path\":\"/mcp\\\\u0000\"}", &m, &e), 0);
	ck_assert_str_eq(m.mcp_path, "/mcp\\u0000");
	manifest_dispose(&m);
}
END_TEST

/* The buffer is not NUL-terminated: nothing may read past len (found by fuzzing). */
START_TEST(test_unterminated_buffer)
{
	static const char *const docs[] = {"\r", "  ", "{\"mcp_path\":\"/mcp\"}", "4"};
	struct manifest m = {0};
	struct err e;

	for (size_t i = 0; i < ELEMENTSOF(docs); i++) {
		size_t len = strlen(docs[i]);
		char *buf = malloc(len);

		ck_assert_ptr_nonnull(buf);
		memcpy(buf, docs[i], len);
		err_clear(&e);
		if (manifest_parse(buf, len, &m, &e) == 0)
			manifest_dispose(&m);
		free(buf);
	}
	ck_assert_str_eq(e.msg, "the manifest is not a JSON object (it is a number)");
}
END_TEST

START_TEST(test_size_cap)
{
	size_t len = MANIFEST_MAX + 1;
	char *buf = malloc(len);
	struct manifest m = {0};
	struct err e;
	const char *doc = "{\"mcp_path\":\"/mcp\"}";

	ck_assert_ptr_nonnull(buf);
	memset(buf, ' ', len);
	memcpy(buf, doc, strlen(doc));
	err_clear(&e);
	ck_assert_int_lt(manifest_parse(buf, len, &m, &e), 0);
	ck_assert_int_eq(e.cls, ERR_FAILED);
	ck_assert_str_eq(e.msg, "the manifest is larger than 262144 bytes");
	ck_assert_int_eq(manifest_parse(buf, len - 1, &m, &e), 0);
	manifest_dispose(&m);
	free(buf);
}
END_TEST

START_TEST(test_mcp_path_rules)
{
	char buf[MANIFEST_FIELD_MAX + 64];
	struct manifest m = {0};
	struct err e;
	int n;

	fails_with("{}", "the manifest has no `mcp_path`");
	fails_with("{\"mcp_path\":null}", "the manifest has no `mcp_path`");
	fails_with("{\"mcp_path\":5}", "`mcp_path` must be a string");
	fails_with("{\"mcp_path\":[\"/mcp\"]}", "`mcp_path` must be a string");
	fails_with("{\"mcp_path\":\"\"}", "`mcp_path` must start with /");
	fails_with("{\"mcp_path\":\"mcp\"}", "`mcp_path` must start with /");
	fails_with("{\"mcp_path\":\"http://evil/mcp\"}", "`mcp_path` must start with /");
	fails_with("{\"mcp_path\":\"//evil.example/mcp\"}", "`mcp_path` must not start with //");
	fails_with("{\"mcp_path\":\"/mcp\\r\\nX-Injected: 1\"}",
	           "`mcp_path` must be printable ASCII");
	fails_with("{\"mcp_path\":\"/mcp\\t\"}", "`mcp_path` must be printable ASCII");
	fails_with("{\"mcp_path\":\"/mcp\\u007f\"}", "`mcp_path` must be printable ASCII");
	fails_with("{\"mcp_path\":\"/m\\u00e9\"}", "`mcp_path` must be printable ASCII");

	n = snprintf(buf, sizeof(buf), "{\"mcp_path\":\"/");
	memset(buf + n, 'a', MANIFEST_FIELD_MAX - 1);
	strcpy(buf + n + MANIFEST_FIELD_MAX - 1, "\"}");
	ck_assert_int_eq(parse(buf, &m, &e), 0);
	ck_assert_uint_eq(strlen(m.mcp_path), MANIFEST_FIELD_MAX);
	manifest_dispose(&m);
	memset(buf + n, 'a', MANIFEST_FIELD_MAX);
	strcpy(buf + n + MANIFEST_FIELD_MAX, "\"}");
	fails_with(buf, "`mcp_path` must be at most 4096 bytes");
}
END_TEST

START_TEST(test_mcp_token_rules)
{
	char buf[MANIFEST_FIELD_MAX + 64];
	int n;

	fails_with("{\"mcp_path\":\"/mcp\",\"mcp_token\":42}",
	           "`mcp_token` must be a string or null");
	fails_with("{\"mcp_path\":\"/mcp\",\"mcp_token\":false}",
	           "`mcp_token` must be a string or null");
	fails_with("{\"mcp_path\":\"/mcp\",\"mcp_token\":{\"t\":\"" TOKEN "\"}}",
	           "`mcp_token` must be a string or null");
	fails_with("{\"mcp_path\":\"/mcp\",\"mcp_token\":\"\"}",
	           "`mcp_token` must not be empty (write null for no token)");
	fails_with("{\"mcp_path\":\"/mcp\",\"mcp_token\":\"" TOKEN " x\"}",
	           "`mcp_token` must be printable ASCII without spaces");
	fails_with("{\"mcp_path\":\"/mcp\",\"mcp_token\":\"" TOKEN "\\n\"}",
	           "`mcp_token` must be printable ASCII without spaces");
	/* A bad path next to a good token: the message has no token in it (checked in fails_with).
	 */
	fails_with("{\"mcp_token\":\"" TOKEN "\",\"mcp_path\":\"x\"}",
	           "`mcp_path` must start with /");
	fails_with("{\"mcp_token\":\"" TOKEN "\",",
	           "the manifest is not valid JSON (unexpected end "
	           "of data at offset 51)");

	n = snprintf(buf, sizeof(buf), "{\"mcp_path\":\"/mcp\",\"mcp_token\":\"");
	memset(buf + n, 't', MANIFEST_FIELD_MAX + 1);
	strcpy(buf + n + MANIFEST_FIELD_MAX + 1, "\"}");
	fails_with(buf, "`mcp_token` must be at most 4096 bytes");
}
END_TEST

START_TEST(test_duplicate_keys_last_wins)
{
	struct manifest m = {0};
	struct err e;

	ck_assert_int_eq(parse("{\"mcp_path\":\"//x\",\"mcp_path\":\"/mcp\"}", &m, &e), 0);
	ck_assert_str_eq(m.mcp_path, "/mcp");
	manifest_dispose(&m);
	fails_with("{\"mcp_path\":\"/mcp\",\"mcp_path\":\"//x\"}",
	           "`mcp_path` must not start with //");
}
END_TEST

START_TEST(test_ret_untouched_on_failure)
{
	struct manifest m;
	struct err e;

	memset(&m, 0x5a, sizeof(m));
	ck_assert_int_lt(parse("{\"mcp_path\":\"/mcp\",\"mcp_token\":1}", &m, &e), 0);
	for (size_t i = 0; i < sizeof(m); i++)
		ck_assert_int_eq(((unsigned char *)&m)[i], 0x5a);
}
END_TEST

START_TEST(test_to_json)
{
	struct manifest m = {.mcp_path = "/action_agent/mcp", .mcp_token = TOKEN};
	struct manifest back = {0};
	struct err e;
	char *s;

	s = manifest_to_json(&m);
	ck_assert_ptr_nonnull(s);
	ck_assert_str_eq(s, "{\"mcp_path\":\"/action_agent/mcp\",\"mcp_token\":\"" TOKEN "\"}\n");
	free(s);

	m.mcp_token = NULL;
	s = manifest_to_json(&m);
	ck_assert_str_eq(s, "{\"mcp_path\":\"/action_agent/mcp\",\"mcp_token\":null}\n");
	free(s);

	/* Quotes and backslashes are escaped, and the result reads back the same. */
	m.mcp_path = "/a\"b\\c";
	m.mcp_token = "t\"k";
	s = manifest_to_json(&m);
	ck_assert_str_eq(s, "{\"mcp_path\":\"/a\\\"b\\\\c\",\"mcp_token\":\"t\\\"k\"}\n");
	ck_assert_int_eq(parse(s, &back, &e), 0);
	ck_assert_str_eq(back.mcp_path, m.mcp_path);
	ck_assert_str_eq(back.mcp_token, m.mcp_token);
	manifest_dispose(&back);
	free(s);

	m.mcp_path = NULL;
	ck_assert_ptr_null(manifest_to_json(&m));
}
END_TEST

/* Files. */
static char tmpdir[64];

static void tmpdir_setup(void)
{
	strcpy(tmpdir, "/tmp/test_manifest.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void tmpdir_teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

static void put(const char *name, const char *text, size_t len)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, len), (ssize_t)len);
	close(fd);
}

static int read_at(const char *name, struct manifest *m, struct err *e)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	err_clear(e);
	return manifest_read(AT_FDCWD, path, m, e);
}

START_TEST(test_read_regular_file)
{
	const char *doc = "{\"mcp_path\":\"/mcp\",\"mcp_token\":\"" TOKEN "\"}\n";
	struct manifest m = {0};
	struct err e;
	int dfd;

	put("manifest.json", doc, strlen(doc));
	ck_assert_msg(read_at("manifest.json", &m, &e) == 0, "%s", e.msg);
	ck_assert_str_eq(m.mcp_token, TOKEN);
	manifest_dispose(&m);

	/* Relative to a directory descriptor. */
	dfd = open(tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(dfd, 0);
	err_clear(&e);
	ck_assert_msg(manifest_read(dfd, "manifest.json", &m, &e) == 0, "%s", e.msg);
	ck_assert_str_eq(m.mcp_path, "/mcp");
	manifest_dispose(&m);
	close(dfd);
}
END_TEST

START_TEST(test_read_refuses_symlink)
{
	const char *doc = "{\"mcp_path\":\"/mcp\"}";
	struct manifest m = {0};
	struct err e;
	char target[128], link[128];

	put("real.json", doc, strlen(doc));
	snprintf(target, sizeof(target), "%s/real.json", tmpdir);
	snprintf(link, sizeof(link), "%s/manifest.json", tmpdir);
	ck_assert_int_eq(symlink(target, link), 0);
	ck_assert_int_lt(read_at("manifest.json", &m, &e), 0);
	ck_assert_int_eq(e.cls, ERR_FAILED);
	ck_assert_ptr_nonnull(strstr(e.msg, "cannot read the manifest: "));
	ck_assert_ptr_nonnull(strstr(e.msg, "is a symbolic link"));
	ck_assert_ptr_null(m.mcp_path);
}
END_TEST

START_TEST(test_read_fifo_does_not_block)
{
	struct manifest m = {0};
	struct err e;
	char path[128];

	snprintf(path, sizeof(path), "%s/manifest.json", tmpdir);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	/* No writer: a blocking open would hang here until the test's timeout kills it. */
	ck_assert_int_lt(read_at("manifest.json", &m, &e), 0);
	ck_assert_int_eq(e.cls, ERR_FAILED);
	ck_assert_ptr_nonnull(strstr(e.msg, "is not a regular file"));
}
END_TEST

START_TEST(test_read_refuses_directory_and_missing)
{
	struct manifest m = {0};
	struct err e;
	char path[128];

	snprintf(path, sizeof(path), "%s/dir", tmpdir);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	ck_assert_int_lt(read_at("dir", &m, &e), 0);
	ck_assert_int_eq(e.cls, ERR_FAILED);
	ck_assert_ptr_nonnull(strstr(e.msg, "is not a regular file"));

	ck_assert_int_lt(read_at("missing.json", &m, &e), 0);
	ck_assert_int_eq(e.cls, ERR_FAILED);
	snprintf(path, sizeof(path), "the manifest command did not write %s/missing.json", tmpdir);
	ck_assert_str_eq(e.msg, path);
}
END_TEST

START_TEST(test_read_refuses_oversized)
{
	size_t len = MANIFEST_MAX + 1;
	char *buf = malloc(len);
	struct manifest m = {0};
	struct err e;
	const char *doc = "{\"mcp_path\":\"/mcp\"}";

	ck_assert_ptr_nonnull(buf);
	memset(buf, ' ', len);
	memcpy(buf, doc, strlen(doc));
	put("manifest.json", buf, len);
	ck_assert_int_lt(read_at("manifest.json", &m, &e), 0);
	ck_assert_int_eq(e.cls, ERR_FAILED);
	ck_assert_ptr_nonnull(strstr(e.msg, "is larger than 262144 bytes"));
	put("manifest.json", buf, len - 1);
	ck_assert_msg(read_at("manifest.json", &m, &e) == 0, "%s", e.msg);
	manifest_dispose(&m);
	free(buf);
}
END_TEST

START_TEST(test_write_runtime)
{
	struct manifest m = {.mcp_path = "/action_agent/mcp", .mcp_token = TOKEN};
	struct json_object *o, *v;
	char path[128], victim[128], buf[512];
	struct stat st;
	struct err e;
	ssize_t n;
	int fd;

	/* A link planted where runtime.json goes is replaced, never followed. */
	snprintf(path, sizeof(path), "%s/runtime.json", tmpdir);
	snprintf(victim, sizeof(victim), "%s/victim", tmpdir);
	put("victim", "keep", 4);
	ck_assert_int_eq(symlink(victim, path), 0);

	err_clear(&e);
	ck_assert_msg(manifest_write_runtime(&m, path, geteuid() == 0 ? 4321 : (uid_t)-1,
	                                     geteuid() == 0 ? 4322 : (gid_t)-1, &e) == 0,
	              "%s", e.msg);
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_int_eq(st.st_mode & 07777, 0600);
	if (geteuid() == 0) {
		ck_assert_uint_eq(st.st_uid, 4321);
		ck_assert_uint_eq(st.st_gid, 4322);
	}
	ck_assert_int_eq(stat(victim, &st), 0);
	ck_assert_int_eq(st.st_size, 4);

	fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	ck_assert_int_gt(n, 0);
	buf[n] = '\0';
	ck_assert_str_eq(buf, "{\"mcp_path\":\"/action_agent/mcp\",\"mcp_token\":\"" TOKEN "\"}\n");
	o = json_tokener_parse(buf);
	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(json_object_object_length(o), 2);
	ck_assert(json_object_object_get_ex(o, "mcp_path", &v));
	ck_assert_str_eq(json_object_get_string(v), "/action_agent/mcp");
	ck_assert(json_object_object_get_ex(o, "mcp_token", &v));
	ck_assert_str_eq(json_object_get_string(v), TOKEN);
	json_object_put(o);

	/* Rewritten with a null token: still exactly two keys, still 0600. */
	m.mcp_token = NULL;
	ck_assert_int_eq(manifest_write_runtime(&m, path, (uid_t)-1, (gid_t)-1, &e), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0600);
	o = json_object_from_file(path);
	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(json_object_object_length(o), 2);
	ck_assert(json_object_object_get_ex(o, "mcp_token", &v));
	ck_assert_ptr_null(v);
	json_object_put(o);

	m.mcp_path = NULL;
	ck_assert_int_lt(manifest_write_runtime(&m, path, (uid_t)-1, (gid_t)-1, &e), 0);
	ck_assert_int_eq(e.cls, ERR_FAILED);
}
END_TEST

/* Staged: nothing at the path until the commit; an abort leaves nothing. */
START_TEST(test_stage_runtime)
{
	struct manifest m = {.mcp_path = "/mcp", .mcp_token = TOKEN}, back = {0};
	struct file_stage stage;
	char path[128], tmp[256];
	struct stat st;
	struct err e;

	snprintf(path, sizeof(path), "%s/staged.json", tmpdir);
	err_clear(&e);
	ck_assert_msg(manifest_stage_runtime(&m, path, (uid_t)-1, (gid_t)-1, &stage, &e) == 0, "%s",
	              e.msg);
	ck_assert_int_lt(lstat(path, &st), 0);
	ck_assert_ptr_nonnull(stage.tmp);
	ck_assert_int_eq(lstat(stage.tmp, &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0600);
	ck_assert_int_eq(file_stage_commit(&stage, &e), 0);
	ck_assert_ptr_null(stage.tmp);
	ck_assert_int_eq(read_at("staged.json", &back, &e), 0);
	ck_assert_str_eq(back.mcp_token, TOKEN);
	manifest_dispose(&back);
	ck_assert_int_eq(unlink(path), 0);

	ck_assert_int_eq(manifest_stage_runtime(&m, path, (uid_t)-1, (gid_t)-1, &stage, &e), 0);
	snprintf(tmp, sizeof(tmp), "%s", stage.tmp);
	file_stage_abort(&stage);
	ck_assert_int_lt(lstat(tmp, &st), 0);
	ck_assert_int_lt(lstat(path, &st), 0);
	file_stage_abort(&stage); /* twice: nothing to do */
	ck_assert_int_lt(file_stage_commit(&stage, &e), 0);

	/* A stage its process never ended (killed between the halves) is found by its name. */
	ck_assert_int_eq(manifest_stage_runtime(&m, path, (uid_t)-1, (gid_t)-1, &stage, &e), 0);
	snprintf(tmp, sizeof(tmp), "%s" FILE_STAGE_SUFFIX, path);
	ck_assert_str_eq(stage.tmp, tmp);
	free(stage.tmp);
	free(stage.path);
	ck_assert_int_eq(lstat(tmp, &st), 0);
	file_stage_remove(path);
	ck_assert_int_lt(lstat(tmp, &st), 0);
	ck_assert_int_lt(lstat(path, &st), 0);
	file_stage_remove(path); /* nothing there: nothing to do */
}
END_TEST

START_TEST(test_write_runtime_missing_directory)
{
	struct manifest m = {.mcp_path = "/mcp", .mcp_token = TOKEN};
	char path[128];
	struct err e;

	snprintf(path, sizeof(path), "%s/no/such/runtime.json", tmpdir);
	err_clear(&e);
	ck_assert_int_lt(manifest_write_runtime(&m, path, (uid_t)-1, (gid_t)-1, &e), 0);
	ck_assert_int_eq(e.cls, ERR_FAILED);
	ck_assert_ptr_null(strstr(e.msg, TOKEN));
}
END_TEST

static Suite *manifest_suite(void)
{
	Suite *s = suite_create("manifest");
	TCase *tc = tcase_create("parse");
	TCase *tf = tcase_create("files");

	tcase_add_test(tc, test_valid_manifest);
	tcase_add_test(tc, test_not_an_object);
	tcase_add_test(tc, test_nul_refused);
	tcase_add_test(tc, test_unterminated_buffer);
	tcase_add_test(tc, test_size_cap);
	tcase_add_test(tc, test_mcp_path_rules);
	tcase_add_test(tc, test_mcp_token_rules);
	tcase_add_test(tc, test_duplicate_keys_last_wins);
	tcase_add_test(tc, test_ret_untouched_on_failure);
	tcase_add_test(tc, test_to_json);
	suite_add_tcase(s, tc);

	tcase_add_checked_fixture(tf, tmpdir_setup, tmpdir_teardown);
	tcase_add_test(tf, test_read_regular_file);
	tcase_add_test(tf, test_read_refuses_symlink);
	tcase_add_test(tf, test_read_fifo_does_not_block);
	tcase_add_test(tf, test_read_refuses_directory_and_missing);
	tcase_add_test(tf, test_read_refuses_oversized);
	tcase_add_test(tf, test_write_runtime);
	tcase_add_test(tf, test_stage_runtime);
	tcase_add_test(tf, test_write_runtime_missing_directory);
	suite_add_tcase(s, tf);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(manifest_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
