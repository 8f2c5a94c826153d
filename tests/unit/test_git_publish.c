/* SPDX-License-Identifier: Apache-2.0 */
/*
 * git_publish: a commit of a work tree's changes made without writing into the checkout, its
 * pack carried to another repository (git_pack), pushed to a bare repository over file://,
 * and the refusals (filter drivers, core.worktree, a gitfile, nothing to publish, a
 * non-fast-forward push).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "git_fetch.h"
#include "git_pack.h"
#include "git_publish.h"

static char tmpdir[64];

static char *tpath(const char *name)
{
	static char buf[4][300];
	static int n;
	char *p = buf[n++ % 4];

	snprintf(p, 300, "%s/%s", tmpdir, name);
	return p;
}

static void sh(const char *fmt, const char *arg)
{
	char cmd[2048], full[2400];

	snprintf(cmd, sizeof(cmd), fmt, arg, arg, arg);
	snprintf(full, sizeof(full), "cd '%s' && (%s) >/dev/null 2>&1", tmpdir, cmd);
	ck_assert_msg(system(full) == 0, "failed: %s", cmd);
}

#define GIT "git -c user.name=t -c user.email=t@example.com "

static void setup(void)
{
	struct err e;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_git_publish.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	ck_assert_msg(git_fetch_global_init(NULL, &e) == 0, "%s", e.msg);
	/* The "server" (bare, with main) and a checkout of it with a detached HEAD. */
	sh("mkdir src && cd src && git init -q -b main && printf 'a\\n' >keep && printf 'b\\n' "
	   ">edit"
	   " && printf 'c\\n' >gone && printf 'x.log\\n' >.gitignore && " GIT "add -A && " GIT
	   "commit -qm base%s",
	   "");
	sh("git clone -q --bare src server.git && git clone -q src app && cd app && git checkout "
	   "-q "
	   "--detach%s",
	   "");
}

static void teardown(void)
{
	char cmd[128];

	git_fetch_global_shutdown();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

static void change_app(void)
{
	sh("cd app && printf 'B\\n' >edit && rm gone && printf 'new\\n' >added && mkdir -p d && "
	   "printf 'deep\\n' >d/f && printf 'noise\\n' >x.log%s",
	   "");
}

static char *slurp(const char *path)
{
	static char buf[4096];
	FILE *f = fopen(path, "re");
	size_t n;

	ck_assert_ptr_nonnull(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static int to_receiver(void *userdata, const void *buf, size_t len)
{
	struct err e;

	return git_pack_receiver_append(userdata, buf, len, &e);
}

/* Commit in app, carry the pack into a fresh bare repository that has the base, push. */
static void publish(const char *branch, git_oid *ret_commit, int *ret_push, struct err *perr)
{
	git_repository *app = NULL, *host = NULL;
	struct git_pack_receiver *r = NULL;
	struct git_publish_push_spec ps = {0};
	char url[400];
	git_oid base, commit, got;
	struct err e;

	ck_assert_msg(git_publish_open(tpath("app"), &app, &e) == 0, "%s", e.msg);
	ck_assert_msg(git_publish_commit(app, "Pub Lisher", "pub@example.com", "work", &base,
	                                 &commit, &e) == 0,
	              "%s", e.msg);
	sh("git clone -q --bare src host.git%s", "");
	ck_assert_int_eq(git_repository_open(&host, tpath("host.git")), 0);
	ck_assert_msg(git_pack_receiver_new(host, 0, &r, &e) == 0, "%s", e.msg);
	ck_assert_msg(git_pack_write(app, &commit, &base, 1, to_receiver, r, NULL, &e) == 0, "%s",
	              e.msg);
	ck_assert_msg(git_pack_receiver_finish(r, &commit, NULL, &got, NULL, &e) == 0, "%s", e.msg);
	ck_assert(git_oid_equal(&got, &commit));
	git_pack_receiver_free(r);
	snprintf(url, sizeof(url), "file://%s", tpath("server.git"));
	ps.clone_url = url;
	ps.branch = branch;
	*ret_push = git_publish_push(host, &commit, &ps, perr);
	*ret_commit = commit;
	git_repository_free(host);
	git_repository_free(app);
}

START_TEST(test_publish_roundtrip)
{
	char head_before[128], index_before[64], cmd[600];
	struct stat st;
	git_oid commit;
	struct err e;
	int rc;

	change_app();
	snprintf(head_before, sizeof(head_before), "%s", slurp(tpath("app/.git/HEAD")));
	ck_assert_int_eq(stat(tpath("app/.git/index"), &st), 0);
	snprintf(index_before, sizeof(index_before), "%ld.%ld", (long)st.st_mtim.tv_sec,
	         st.st_mtim.tv_nsec);
	sh("cd app && find .git/objects -type f | sort >../objects.before%s", "");
	publish("feature/x", &commit, &rc, &e);
	ck_assert_msg(rc == 0, "%s", e.msg);

	/* Nothing written into the checkout: HEAD, index and objects unchanged. */
	ck_assert_str_eq(slurp(tpath("app/.git/HEAD")), head_before);
	ck_assert_int_eq(stat(tpath("app/.git/index"), &st), 0);
	snprintf(cmd, sizeof(cmd), "%ld.%ld", (long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	ck_assert_str_eq(cmd, index_before);
	sh("cd app && find .git/objects -type f | sort >../objects.after && cmp ../objects.before "
	   "../objects.after%s",
	   "");

	/* The server's branch: the tree of the work tree, parent = the checkout's commit. */
	snprintf(cmd, sizeof(cmd), "test \"$(git --git-dir=server.git rev-parse feature/x)\" = %s",
	         git_oid_tostr_s(&commit));
	sh(cmd, "");
	sh("test \"$(git --git-dir=server.git rev-parse feature/x^)\" = \"$(git "
	   "--git-dir=server.git "
	   "rev-parse main)\"%s",
	   "");
	sh("git --git-dir=server.git ls-tree -r --name-only feature/x >names && printf "
	   "'.gitignore\\nadded\\nd/f\\nedit\\nkeep\\n' | cmp - names%s",
	   "");
	sh("test \"$(git --git-dir=server.git show feature/x:edit)\" = B%s", "");
	sh("test \"$(git --git-dir=server.git log -1 --format=%%an/%%ae/%%s feature/x)\" = "
	   "'Pub Lisher/pub@example.com/work'%s",
	   "");
	sh("git --git-dir=server.git fsck --strict%s", "");
}
END_TEST

START_TEST(test_push_non_fast_forward_refused)
{
	git_oid commit;
	struct err e;
	int rc;

	/* main exists on the server and has moved past the checkout's base. */
	sh("cd src && printf 'z\\n' >z && " GIT "add z && " GIT
	   "commit -qm ahead && git push -q ../server.git main%s",
	   "");
	change_app();
	publish("main", &commit, &rc, &e);
	ck_assert_int_lt(rc, 0);
	ck_assert_int_eq(e.cls, ERR_REFUSED);
	ck_assert_msg(strstr(e.msg, "already exists") && strstr(e.msg, "force"), "%s", e.msg);
	sh("test \"$(git --git-dir=server.git rev-parse main)\" = \"$(git -C src rev-parse "
	   "main)\"%s",
	   "");
}
END_TEST

static void open_refused(const char *what, int code)
{
	git_repository *repo = NULL;
	struct err e;

	ck_assert_int_lt(git_publish_open(tpath("app"), &repo, &e), 0);
	ck_assert_ptr_null(repo);
	ck_assert_int_eq(e.cls, ERR_REFUSED);
	ck_assert_int_eq(e.code, code);
	ck_assert_msg(strstr(e.msg, what), "%s", e.msg);
}

START_TEST(test_refusals)
{
	git_repository *repo = NULL;
	git_oid base, commit;
	struct err e;

	/* Nothing changed. */
	ck_assert_msg(git_publish_open(tpath("app"), &repo, &e) == 0, "%s", e.msg);
	ck_assert_int_lt(git_publish_commit(repo, "a", "a@b", NULL, &base, &commit, &e), 0);
	ck_assert_int_eq(e.code, ENODATA);
	ck_assert_int_lt(git_publish_commit(repo, "a", "", NULL, &base, &commit, &e), 0);
	ck_assert_int_eq(e.code, EINVAL);
	git_repository_free(repo);

	sh("cd app && git config filter.x.clean 'touch /tmp/pwned'%s", "");
	open_refused("filter driver (filter.x.clean)", EPERM);
	sh("cd app && git config --unset filter.x.clean && git config core.worktree /%s", "");
	open_refused("core.worktree", EPERM);
	sh("cd app && git config --unset core.worktree && mv .git ../moved.git && echo 'gitdir: "
	   "../moved.git' >.git%s",
	   "");
	open_refused("not a directory", EPERM);
	sh("rm app/.git%s", "");
	open_refused("not a git checkout", ENOENT);

	ck_assert_int_lt(git_publish_branch_check("-x", &e), 0);
	ck_assert_int_lt(git_publish_branch_check("refs/heads/x", &e), 0);
	ck_assert_int_lt(git_publish_branch_check("a..b", &e), 0);
	ck_assert_int_lt(git_publish_branch_check("a:b", &e), 0);
	ck_assert_int_eq(git_publish_branch_check("feature/x-1", &e), 0);
}
END_TEST

static Suite *git_publish_suite(void)
{
	Suite *s = suite_create("git_publish");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_publish_roundtrip);
	tcase_add_test(tc, test_push_non_fast_forward_refused);
	tcase_add_test(tc, test_refusals);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(git_publish_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
