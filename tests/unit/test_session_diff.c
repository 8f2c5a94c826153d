/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "session_diff.h"

static char tmpdir[64];
static char app[128];

static void sh(const char *cmd)
{
	char full[2400];

	snprintf(full, sizeof(full), "cd '%s' && (%s) >/dev/null 2>&1", app, cmd);
	ck_assert_msg(system(full) == 0, "failed: %s", cmd);
}

#define GIT "git -c user.name=t -c user.email=t@example.com "

static char base[41];

static void setup(void)
{
	struct err err;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_session_diff.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	snprintf(app, sizeof(app), "%s/app", tmpdir);
	ck_assert_int_eq(mkdir(app, 0755), 0);
	sh("git init -q -b main && printf 'one\\ntwo\\n' >edit && printf 'x\\n' >gone && "
	   "printf '*.log\\n' >.gitignore && mkdir vendor && printf 'v\\n' >vendor/lib && " GIT
	   "add -A && " GIT "commit -qm base");
	ck_assert_msg(session_diff_head(app, base, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(strlen(base), 40);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

static char *diff(char *const *pathspecs, size_t max)
{
	struct err err;
	char *text = NULL;
	size_t len = 0;

	ck_assert_msg(session_diff_text(app, base, pathspecs, max, &text, &len, &err) == 0, "%s",
	              err.msg);
	ck_assert_uint_eq(strlen(text), len);
	return text;
}

START_TEST(test_no_change_no_diff)
{
	char *d = diff(NULL, 1000000);

	ck_assert_str_eq(d, "");
	free(d);
}
END_TEST

START_TEST(test_changes_and_untracked_files)
{
	char *d;

	sh("printf 'one\\n2\\n' >edit && rm gone && mkdir -p new/deep && printf 'n\\n' >new/deep/f "
	   "&& printf 'ignored\\n' >x.log");
	d = diff(NULL, 1000000);
	ck_assert_msg(strstr(d, "diff --git a/edit b/edit\n"), "%s", d);
	ck_assert_ptr_nonnull(strstr(d, "-two\n+2\n"));
	ck_assert_ptr_nonnull(strstr(d, "diff --git a/gone b/gone\ndeleted file mode 100644\n"));
	/* Untracked, as after `git add --intent-to-add --all`; ignored files stay out. */
	ck_assert_ptr_nonnull(
	    strstr(d, "diff --git a/new/deep/f b/new/deep/f\nnew file mode 100644\n"));
	ck_assert_ptr_nonnull(strstr(d, "+n\n"));
	ck_assert_ptr_null(strstr(d, "x.log"));
	free(d);
}
END_TEST

START_TEST(test_against_the_base_not_head)
{
	char *d;

	sh("printf 'first\\n' >first && " GIT "add first && " GIT "commit -qm later && "
	   "printf 'second\\n' >second");
	d = diff(NULL, 1000000);
	ck_assert_ptr_nonnull(strstr(d, "+++ b/first\n"));
	ck_assert_ptr_nonnull(strstr(d, "+++ b/second\n"));
	free(d);
}
END_TEST

START_TEST(test_exclude_pathspecs)
{
	char *ex[] = {":(exclude)vendor", ":!*.tmp", ":^secret.txt", NULL};
	char *only[] = {"src", NULL};
	char *d;

	sh("printf 'w\\n' >vendor/lib && printf 't\\n' >a.tmp && printf 's\\n' >secret.txt && "
	   "mkdir src && printf 'c\\n' >src/main.c && printf 'e\\n' >>edit");
	d = diff(ex, 1000000);
	ck_assert_ptr_null(strstr(d, "vendor/lib"));
	ck_assert_ptr_null(strstr(d, "a.tmp"));
	ck_assert_ptr_null(strstr(d, "secret.txt"));
	ck_assert_ptr_nonnull(strstr(d, "+++ b/src/main.c\n"));
	ck_assert_ptr_nonnull(strstr(d, "+++ b/edit\n"));
	free(d);
	d = diff(only, 1000000);
	ck_assert_ptr_nonnull(strstr(d, "+++ b/src/main.c\n"));
	ck_assert_ptr_null(strstr(d, "edit"));
	free(d);
	ck_assert(session_diff_path_excluded(ex, "vendor/a/b"));
	ck_assert(!session_diff_path_excluded(ex, "vendorx"));
	ck_assert(session_diff_path_excluded(ex, "deep/x.tmp"));
	ck_assert(!session_diff_path_excluded(NULL, "anything"));
}
END_TEST

START_TEST(test_truncated)
{
	char *d;
	size_t n;

	sh("seq 1 5000 >big");
	d = diff(NULL, 1000);
	n = strlen(d);
	ck_assert_uint_le(n, 1000);
	ck_assert_uint_gt(n, 900);
	ck_assert_str_eq(d + n - strlen(SESSION_DIFF_TRUNCATED), SESSION_DIFF_TRUNCATED);
	ck_assert_str_eq(SESSION_DIFF_TRUNCATED, "(diff truncated)\n");
	/* Whole lines only before it. */
	ck_assert_int_eq(d[n - strlen(SESSION_DIFF_TRUNCATED) - 1], '\n');
	free(d);
}
END_TEST

START_TEST(test_filter_driver_sentence)
{
	char *d;

	sh("printf 'x\\n' >>edit && git config filter.crypt.clean 'touch ../ran-clean' && git "
	   "config "
	   "filter.crypt.smudge 'touch ../ran-smudge' && printf 'edit filter=crypt\\n' "
	   ">.gitattributes");
	d = diff(NULL, 1000000);
	ck_assert_str_eq(d, SESSION_DIFF_FILTER_SENTENCE);
	free(d);
	{
		char path[256];

		snprintf(path, sizeof(path), "%s/ran-clean", tmpdir);
		ck_assert_int_ne(access(path, F_OK), 0);
	}
}
END_TEST

START_TEST(test_no_hooks_no_fsmonitor_no_textconv)
{
	char path[256], *d;

	sh("mkdir -p .git/hooks && printf '#!/bin/sh\\ntouch ../ran-hook\\n' "
	   ">.git/hooks/post-index-change"
	   " && chmod +x .git/hooks/post-index-change && git config core.fsmonitor 'touch "
	   "../ran-fsm; "
	   "echo' && git config diff.x.textconv 'touch ../ran-textconv; cat' && git config "
	   "diff.external 'touch ../ran-ext' && printf 'edit diff=x\\n' >.gitattributes && printf "
	   "'z\\n' >>edit");
	d = diff(NULL, 1000000);
	ck_assert_ptr_nonnull(strstr(d, "+z\n"));
	free(d);
	for (const char *const *f =
	         (const char *const[]){"ran-hook", "ran-fsm", "ran-textconv", "ran-ext", NULL};
	     *f; f++) {
		snprintf(path, sizeof(path), "%s/%s", tmpdir, *f);
		ck_assert_msg(access(path, F_OK) != 0, "%s ran", *f);
	}
}
END_TEST

START_TEST(test_refused_checkouts)
{
	struct err err;
	char *text = NULL;
	size_t len;
	char head[41];

	sh("mv .git ../real.git && printf 'gitdir: ../real.git\\n' >.git");
	ck_assert_int_lt(session_diff_text(app, base, NULL, 1000, &text, &len, &err), 0);
	ck_assert_ptr_nonnull(strstr(err.msg, "not a git checkout"));
	sh("rm .git && ln -s ../real.git .git");
	ck_assert_int_lt(session_diff_head(app, head, &err), 0);
	sh("rm .git && mv ../real.git .git");
	ck_assert_int_lt(session_diff_text(app, "not-an-id", NULL, 1000, &text, &len, &err), 0);
}
END_TEST

START_TEST(test_unborn_head)
{
	struct err err;
	char head[41], *text = NULL;
	size_t len;

	sh("rm -rf .git && git init -q -b main && printf 'x\\n' >fresh");
	ck_assert_int_eq(session_diff_head(app, head, &err), 0);
	ck_assert_str_eq(head, SESSION_DIFF_EMPTY_TREE);
	ck_assert_int_eq(session_diff_text(app, head, NULL, 100000, &text, &len, &err), 0);
	ck_assert_ptr_nonnull(strstr(text, "+++ b/fresh\n"));
	free(text);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("session_diff");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_no_change_no_diff);
	tcase_add_test(tc, test_changes_and_untracked_files);
	tcase_add_test(tc, test_against_the_base_not_head);
	tcase_add_test(tc, test_exclude_pathspecs);
	tcase_add_test(tc, test_truncated);
	tcase_add_test(tc, test_filter_driver_sentence);
	tcase_add_test(tc, test_no_hooks_no_fsmonitor_no_textconv);
	tcase_add_test(tc, test_refused_checkouts);
	tcase_add_test(tc, test_unborn_head);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
