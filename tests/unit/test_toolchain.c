/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs_safe.h"
#include "strv.h"
#include "toolchain.h"

static char dir[64];

static void put(const char *rel, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static void mk(const char *rel)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	ck_assert_int_eq(mkdir(path, 0755), 0);
}

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/test-toolchain.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
	struct err err;

	fs_safe_tree_remove(dir, &err);
}

START_TEST(test_checkout_version_files)
{
	_cleanup_free_ char *ruby = NULL, *node = NULL, *bun = NULL;

	mk("app");
	put("app/.ruby-version", "ruby-3.3.1\n");
	put("app/.nvmrc", "v22\n");
	put("app/.tool-versions", "# tools\nnodejs 20.1.0\nbun 1.1.8\n");
	snprintf(dir + strlen(dir), sizeof(dir) - strlen(dir), "/app");
	ruby = toolchain_checkout_version(dir, "ruby");
	node = toolchain_checkout_version(dir, "node");
	bun = toolchain_checkout_version(dir, "bun");
	dir[strlen(dir) - 4] = '\0';
	ck_assert_str_eq(ruby, "3.3.1");
	/* .nvmrc comes before .tool-versions for node */
	ck_assert_str_eq(node, "22");
	ck_assert_str_eq(bun, "1.1.8");
}
END_TEST

START_TEST(test_checkout_version_refuses_links_and_junk)
{
	_cleanup_free_ char *ruby = NULL, *node = NULL;

	mk("app");
	ck_assert_int_eq(symlinkat("/etc/hostname", AT_FDCWD,
	                           strcat(strcpy((char[256]){0}, dir), "/app/.ruby-version")),
	                 0);
	put("app/.node-version", "../../etc\n");
	snprintf(dir + strlen(dir), sizeof(dir) - strlen(dir), "/app");
	ruby = toolchain_checkout_version(dir, "ruby");
	node = toolchain_checkout_version(dir, "node");
	dir[strlen(dir) - 4] = '\0';
	ck_assert_ptr_null(ruby);
	ck_assert_ptr_null(node);
}
END_TEST

START_TEST(test_match_exact_and_prefix)
{
	char versions[256];
	_cleanup_free_ char *a = NULL, *b = NULL, *c = NULL, *d = NULL;

	mk("v");
	mk("v/22.1.0");
	mk("v/22.10.2");
	mk("v/22.9.9");
	mk("v/3.3.1");
	snprintf(versions, sizeof(versions), "%s/v", dir);
	a = toolchain_match(versions, "22");
	b = toolchain_match(versions, "3.3.1");
	c = toolchain_match(versions, "3.3");
	d = toolchain_match(versions, "2");
	ck_assert_str_eq(a, "22.10.2");
	ck_assert_str_eq(b, "3.3.1");
	ck_assert_str_eq(c, "3.3.1");
	/* "2" is not a prefix at a dot of "22.x" */
	ck_assert_ptr_null(d);
}
END_TEST

START_TEST(test_select_sets_path_and_version)
{
	char root[256], app[256], rootvar[300];
	_cleanup_strv_ char **env = NULL;
	_cleanup_strv_ char **caller = NULL;
	struct toolchain_choice c = {0};
	struct boot_toolchain spec = {.ruby = (char *)"3.1"};
	struct err err;

	mk("rbenv");
	mk("rbenv/versions");
	mk("rbenv/versions/3.1.2");
	mk("app");
	snprintf(root, sizeof(root), "%s/rbenv", dir);
	snprintf(app, sizeof(app), "%s/app", dir);
	snprintf(rootvar, sizeof(rootvar), "RBENV_ROOT=%s", root);
	ck_assert_int_eq(strv_push(&caller, rootvar), 0);
	ck_assert_int_eq(strv_env_set(&env, "PATH", "/usr/bin"), 0);
	ck_assert_int_eq(toolchain_select(app, &spec, caller, "/nonexistent", &env, &c, &err), 0);
	ck_assert_str_eq(c.ruby, "3.1.2");
	ck_assert_str_eq(strv_env_get(env, "RBENV_VERSION"), "3.1.2");
	ck_assert(strncmp(strv_env_get(env, "PATH"), root, strlen(root)) == 0);
	ck_assert(strstr(strv_env_get(env, "PATH"), "/versions/3.1.2/bin:/usr/bin") != NULL);
	toolchain_choice_dispose(&c);
}
END_TEST

START_TEST(test_select_missing_version_names_it)
{
	char app[256], rootvar[300];
	_cleanup_strv_ char **env = NULL;
	_cleanup_strv_ char **caller = NULL;
	struct toolchain_choice c = {0};
	struct boot_toolchain spec = {.ruby = (char *)"3.3.1"};
	struct err err;

	mk("rbenv");
	mk("rbenv/versions");
	mk("rbenv/versions/3.1.2");
	mk("app");
	snprintf(app, sizeof(app), "%s/app", dir);
	snprintf(rootvar, sizeof(rootvar), "RBENV_ROOT=%s/rbenv", dir);
	ck_assert_int_eq(strv_push(&caller, rootvar), 0);
	ck_assert_int_lt(toolchain_select(app, &spec, caller, NULL, &env, &c, &err), 0);
	ck_assert_int_eq(err.cls, ERR_REFUSED);
	ck_assert_str_eq(err.msg, "ruby 3.3.1 is not installed in this image (installed: 3.1.2)");
}
END_TEST

START_TEST(test_select_without_manager_uses_system_for_checkout)
{
	char app[256];
	_cleanup_strv_ char **env = NULL;
	_cleanup_strv_ char **caller = NULL;
	struct toolchain_choice c = {0};
	struct boot_toolchain none = {0};
	struct boot_toolchain spec = {.node = (char *)"22"};
	struct err err;

	mk("app");
	put("app/.node-version", "22\n");
	snprintf(app, sizeof(app), "%s/app", dir);
	ck_assert_int_eq(strv_push(&caller, "NODENV_ROOT=/nonexistent/nodenv"), 0);
	/* The checkout asks, the image has no manager: the system's node is used. */
	ck_assert_int_eq(toolchain_select(app, &none, caller, NULL, &env, &c, &err), 0);
	ck_assert_ptr_null(c.node);
	ck_assert_ptr_null(strv_env_get(env, "NODENV_VERSION"));
	/* The spec asks: that is a request the image cannot serve. */
	ck_assert_int_lt(toolchain_select(app, &spec, caller, NULL, &env, &c, &err), 0);
	ck_assert_int_eq(err.cls, ERR_REFUSED);
	ck_assert(strstr(err.msg, "node 22 was asked for") != NULL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("toolchain");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_checkout_version_files);
	tcase_add_test(tc, test_checkout_version_refuses_links_and_junk);
	tcase_add_test(tc, test_match_exact_and_prefix);
	tcase_add_test(tc, test_select_sets_path_and_version);
	tcase_add_test(tc, test_select_missing_version_names_it);
	tcase_add_test(tc, test_select_without_manager_uses_system_for_checkout);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
