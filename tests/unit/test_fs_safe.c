/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fs_safe_tree_chown(): a tree of root's given to another uid (root only; skipped otherwise).
 * Files, directories, FIFOs and links below it change owner; a link's target outside does not;
 * a file or FIFO with a second link that belongs to someone else stays theirs (a hard link the
 * user could have made to a file it does not own); what is the user's already is not touched.
 * And with a process swapping a file of root's and such a link back and forth (rename with
 * RENAME_EXCHANGE) while walks run, the other user's file is never given away: each entry is
 * judged and changed through one descriptor, not looked at by name and then changed by name.
 */
#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fs_safe.h"

#define UID 5151
#define GID 5152
#define OTHER 4242

static char dir[] = "/tmp/test-fs-safe.XXXXXX";

static void setup(void)
{
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	(void)!system(cmd);
}

static const char *p(const char *rel)
{
	static char bufs[4][512];
	static int i;

	i = (i + 1) % 4;
	snprintf(bufs[i], sizeof(bufs[i]), "%s/%s", dir, rel);
	return bufs[i];
}

static void touch(const char *rel)
{
	int fd = open(p(rel), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

	ck_assert_int_ge(fd, 0);
	close(fd);
}

static uid_t owner(const char *rel)
{
	struct stat st;

	ck_assert_int_eq(lstat(p(rel), &st), 0);
	return st.st_uid;
}

START_TEST(test_tree_chown)
{
	struct err err = {0};
	struct stat st;

	if (geteuid() != 0)
		return; /* chown needs root: nothing to check */
	ck_assert_int_eq(mkdir(p("outside"), 0755), 0);
	touch("outside/roots");
	touch("outside/others");
	ck_assert_int_eq(chown(p("outside/others"), OTHER, OTHER), 0);
	ck_assert_int_eq(mkdir(p("app"), 0755), 0);
	ck_assert_int_eq(mkdir(p("app/sub"), 0755), 0);
	touch("app/file");
	touch("app/sub/deep");
	ck_assert_int_eq(symlink(p("outside/roots"), p("app/link")), 0);
	ck_assert_int_eq(link(p("outside/others"), p("app/sub/others-link")), 0);
	/* a FIFO: given away without being opened (an open would block) */
	ck_assert_int_eq(mkfifo(p("app/fifo"), 0644), 0);
	/* a second link to another user's FIFO: not a regular file, still not given away */
	ck_assert_int_eq(mkfifo(p("outside/others-fifo"), 0644), 0);
	ck_assert_int_eq(chown(p("outside/others-fifo"), OTHER, OTHER), 0);
	ck_assert_int_eq(link(p("outside/others-fifo"), p("app/sub/others-fifo-link")), 0);
	touch("app/mine");
	ck_assert_int_eq(chown(p("app/mine"), UID, GID), 0);
	ck_assert_int_eq(lstat(p("app/mine"), &st), 0);
	struct timespec before = st.st_ctim;

	ck_assert_int_eq(fs_safe_tree_chown(p("app"), UID, GID, &err), 0);
	ck_assert_int_eq(owner("app"), UID);
	ck_assert_int_eq(owner("app/sub"), UID);
	ck_assert_int_eq(owner("app/file"), UID);
	ck_assert_int_eq(owner("app/sub/deep"), UID);
	ck_assert_int_eq(owner("app/link"), UID);
	ck_assert_int_eq(owner("app/fifo"), UID);
	ck_assert_int_eq(owner("app/sub/others-fifo-link"), OTHER);
	ck_assert_int_eq(lstat(p("app/file"), &st), 0);
	ck_assert_int_eq(st.st_gid, GID);
	/* through the link: not followed */
	ck_assert_int_eq(owner("outside/roots"), 0);
	/* the second link to another user's file: left as it is */
	ck_assert_int_eq(owner("app/sub/others-link"), OTHER);
	ck_assert_int_eq(owner("outside/others"), OTHER);
	/* the user's own: not changed again (its ctime stays) */
	ck_assert_int_eq(lstat(p("app/mine"), &st), 0);
	ck_assert_int_eq(st.st_ctim.tv_sec, before.tv_sec);
	ck_assert_int_eq(st.st_ctim.tv_nsec, before.tv_nsec);
}
END_TEST

/* REL back to root when it is the file with one link (whichever name it has now). */
static void back_to_root(const char *rel)
{
	struct stat st;
	int fd = open(p(rel), O_PATH | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0 && st.st_nlink == 1)
		(void)!fchownat(fd, "", 0, 0, AT_EMPTY_PATH);
	close(fd);
}

START_TEST(test_tree_chown_swap_race)
{
	struct timespec t0, t;
	struct stat st;
	pid_t swapper;
	int walks = 0;

	if (geteuid() != 0)
		return;
	ck_assert_int_eq(mkdir(p("outside"), 0755), 0);
	touch("outside/others");
	ck_assert_int_eq(chown(p("outside/others"), OTHER, OTHER), 0);
	ck_assert_int_eq(mkdir(p("app"), 0755), 0);
	touch("app/a");
	ck_assert_int_eq(link(p("outside/others"), p("app/b")), 0);
	swapper = fork();
	ck_assert_int_ge(swapper, 0);
	if (swapper == 0) {
		int dfd = open(p("app"), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		for (;;)
			renameat2(dfd, "a", dfd, "b", RENAME_EXCHANGE);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		struct err err = {0};

		/* the root's file back to root each time, so every walk has one to give away */
		back_to_root("app/a");
		back_to_root("app/b");
		(void)fs_safe_tree_chown(p("app"), UID, GID, &err);
		walks++;
		ck_assert_int_eq(stat(p("outside/others"), &st), 0);
		if (st.st_uid != OTHER)
			break;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < 1500);
	kill(swapper, SIGKILL);
	waitpid(swapper, NULL, 0);
	ck_assert_msg(st.st_uid == OTHER, "after %d walks the other user's file went to uid %u",
	              walks, (unsigned)st.st_uid);
	ck_assert_int_gt(walks, 100);
}
END_TEST

static Suite *fs_safe_suite(void)
{
	Suite *s = suite_create("fs_safe");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_tree_chown);
	tcase_add_test(tc, test_tree_chown_swap_race);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(fs_safe_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
