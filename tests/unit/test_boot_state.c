/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs_safe.h"
#include "workspace_discard.h"
#include "boot_state.h"
#include "strv.h"

static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/test-boot-state.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
	struct err err;

	fs_safe_tree_remove(dir, &err);
}

START_TEST(test_missing_state_is_not_an_error)
{
	struct boot_state st;
	struct err err;

	ck_assert_int_eq(boot_state_load(dir, &st, &err), 1);
	ck_assert_ptr_null(st.status);
}
END_TEST

START_TEST(test_roundtrip_keeps_every_field)
{
	struct boot_state st = {0}, back;
	struct err err;
	char path[128];
	struct stat sb;

	boot_state_set(&st.status, "ready");
	boot_state_set(&st.step, "ready");
	boot_state_set(&st.reason, "a \"quoted\" reason\nwith a newline");
	boot_state_set(&st.cgroup, "/sys/fs/cgroup/unified/x");
	strv_push(&st.completed, "bundle");
	strv_push(&st.completed, "db_prepare");
	st.port = 41234;
	st.supervisor_pid = 4242;
	st.supervisor_start = 123456789012ULL;
	st.server_pid = 4243;
	st.server_start = 99;
	ck_assert_int_eq(boot_state_save(dir, &st, &err), 0);
	snprintf(path, sizeof(path), "%s/state.json", dir);
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_int_eq(sb.st_mode & 0777, 0600);

	ck_assert_int_eq(boot_state_load(dir, &back, &err), 0);
	ck_assert_str_eq(back.status, "ready");
	ck_assert_str_eq(back.reason, st.reason);
	ck_assert_str_eq(back.cgroup, st.cgroup);
	ck_assert_uint_eq(strv_length(back.completed), 2);
	ck_assert_str_eq(back.completed[1], "db_prepare");
	ck_assert_uint_eq(back.port, 41234);
	ck_assert_int_eq(back.supervisor_pid, 4242);
	ck_assert(back.supervisor_start == 123456789012ULL);
	ck_assert_int_eq(back.server_pid, 4243);
	ck_assert(back.updated_ms > 0);
	boot_state_dispose(&st);
	boot_state_dispose(&back);
}
END_TEST

/* A boot's state at its stage 0, 1 or 2, built the same way each time. */
static void state_at(struct boot_state *st, int stage)
{
	if (stage == 0) {
		boot_state_set(&st->status, "booting");
		boot_state_set(&st->step, "preflight");
		boot_state_set(&st->limits, "{\"memory_mb\":512,\"pids\":256}");
		boot_state_phase_add(st, "preflight", NULL);
		boot_state_phase_add(st, "setup", "logs/setup.log");
		boot_state_phase_set(st, "preflight", "running", NULL, 1000);
		st->started_ms = 1000;
	} else if (stage == 1) {
		boot_state_phase_set(st, "preflight", "succeeded", NULL, 1010);
		boot_state_phase_set(st, "setup", "running", NULL, 1011);
		boot_state_set(&st->recorded_steps, "[{\"name\":\"earlier\"}]");
		boot_state_set(&st->egress, "{\"rules\":[\"a\",\"b\"]}");
		boot_state_set(&st->server_exit, "exited with status 3");
		boot_state_set(&st->server_log_tail, "last line");
	} else {
		boot_state_phase_set(st, "setup", "succeeded", NULL, 1100);
		boot_state_set(&st->server_exit, NULL);
		boot_state_set(&st->server_log_tail, NULL);
		boot_state_set(&st->limits, "{\"memory_mb\":1024}");
		strv_push(&st->completed, "setup");
		boot_state_set(&st->status, "ready");
		st->finished_ms = 1200;
	}
}

/* state.json's text without its updated_ms line (the time of the save). */
static char *saved_text(const char *d)
{
	char path[128], line[512];
	size_t cap = 65536, len = 0;
	char *text = calloc(1, cap);
	FILE *f;

	snprintf(path, sizeof(path), "%s/state.json", d);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (!strstr(line, "\"updated_ms\"")) {
			ck_assert_uint_lt(len + strlen(line), cap);
			memcpy(text + len, line, strlen(line) + 1);
			len += strlen(line);
		}
	fclose(f);
	return text;
}

/*
 * A save updates the document the last save kept: after three saves of a changing state, the
 * file is the same text as one save of that state by a state that never saved before, and a
 * field that went away is gone from it.
 */
START_TEST(test_saves_in_a_row_write_what_one_save_writes)
{
	struct boot_state kept = {0}, fresh = {0};
	struct err err;
	char other[80];
	char *a, *b;

	for (int stage = 0; stage < 3; stage++) {
		state_at(&kept, stage);
		ck_assert_int_eq(boot_state_save(dir, &kept, &err), 0);
		a = saved_text(dir);
		ck_assert((strstr(a, "server_exit") != NULL) == (stage == 1));
		ck_assert((strstr(a, "\"rules\"") != NULL) == (stage >= 1));
		free(a);
	}
	for (int stage = 0; stage < 3; stage++)
		state_at(&fresh, stage);
	snprintf(other, sizeof(other), "%s/other", dir);
	ck_assert_int_eq(mkdir(other, 0700), 0);
	ck_assert_int_eq(boot_state_save(other, &fresh, &err), 0);
	a = saved_text(dir);
	b = saved_text(other);
	ck_assert_str_eq(a, b);
	ck_assert_ptr_nonnull(strstr(a, "\"memory_mb\":1024"));
	ck_assert_ptr_null(strstr(a, "last line"));
	free(a);
	free(b);
	boot_state_dispose(&kept);
	boot_state_dispose(&fresh);
}
END_TEST

/*
 * A phase's app time, rounded to the millisecond, may pass its duration (a difference of two
 * cut milliseconds) by one: the state says at most the duration, and the engine's part of the
 * boot is never negative.
 */
START_TEST(test_app_time_at_most_the_duration)
{
	struct boot_state st = {0};
	struct err err;
	char path[128];
	json_object *root, *steps, *v;

	ck_assert_int_eq(boot_state_phase_add(&st, "setup", NULL), 0);
	boot_state_phase_set(&st, "setup", "running", NULL, 1000);
	boot_state_phase_set(&st, "setup", "succeeded", NULL, 1004);
	boot_state_phase_find(&st, "setup")->app_ms = 5;
	st.started_ms = 1000;
	st.finished_ms = 1004;
	ck_assert_int_eq(boot_state_save(dir, &st, &err), 0);
	snprintf(path, sizeof(path), "%s/state.json", dir);
	root = json_object_from_file(path);
	ck_assert_ptr_nonnull(root);
	ck_assert(json_object_object_get_ex(root, "steps", &steps));
	ck_assert(json_object_object_get_ex(json_object_array_get_idx(steps, 0), "app_ms", &v));
	ck_assert_int_eq(json_object_get_int64(v), 4);
	ck_assert(json_object_object_get_ex(root, "engine_ms", &v));
	ck_assert_int_eq(json_object_get_int64(v), 0);
	json_object_put(root);
	boot_state_dispose(&st);
}
END_TEST

START_TEST(test_damaged_state_is_reported)
{
	struct boot_state st;
	struct err err;
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/state.json", dir);
	f = fopen(path, "w");
	fputs("[1, 2", f);
	fclose(f);
	ck_assert_int_lt(boot_state_load(dir, &st, &err), 0);
	ck_assert(strstr(err.msg, "damaged") != NULL);
}
END_TEST

START_TEST(test_lock_refuses_a_second_boot)
{
	struct err err;
	int fd = -1, status;
	pid_t pid;

	{
		/* A longer pid of an earlier boot is written over and cut: the file says ours. */
		char path[256], got[64] = "", want[32];
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s", dir, BOOT_LOCK_FILE);
		f = fopen(path, "w");
		ck_assert_ptr_nonnull(f);
		fputs("123456789012345\n", f);
		fclose(f);
		ck_assert_int_eq(boot_state_lock_acquire(dir, &fd, &err), 0);
		f = fopen(path, "r");
		ck_assert_ptr_nonnull(f);
		ck_assert_uint_gt(fread(got, 1, sizeof(got) - 1, f), 0);
		fclose(f);
		snprintf(want, sizeof(want), "%ld\n", (long)getpid());
		ck_assert_str_eq(got, want);
	}
	/* Another process (flock locks are per open file) is refused while we hold it. */
	pid = fork();
	if (pid == 0) {
		int fd2 = -1;
		struct err e2;
		int r = boot_state_lock_acquire(dir, &fd2, &e2);
		char expect[64];
		snprintf(expect, sizeof(expect), "(pid %ld)", (long)getppid());
		_exit(r < 0 && e2.cls == ERR_REFUSED && strstr(e2.msg, "already in progress") &&
		              strstr(e2.msg, expect)
		          ? 0
		          : 1);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(fd);
	/* Released with the descriptor. */
	pid = fork();
	if (pid == 0) {
		int fd2 = -1;
		struct err e2;
		_exit(boot_state_lock_acquire(dir, &fd2, &e2) == 0 ? 0 : 1);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}
END_TEST

START_TEST(test_discard_moves_aside_and_removes)
{
	char ws[128], leftover[160], inner[192], outside[160], keep[192];
	struct err err;
	FILE *f;

	snprintf(ws, sizeof(ws), "%s/workspace", dir);
	snprintf(inner, sizeof(inner), "%s/app", ws);
	ck_assert_int_eq(mkdir(ws, 0755), 0);
	ck_assert_int_eq(mkdir(inner, 0755), 0);
	/* A link out of the workspace, to a directory holding a file that must survive. */
	snprintf(outside, sizeof(outside), "%s/outside", dir);
	snprintf(keep, sizeof(keep), "%s/keep", outside);
	ck_assert_int_eq(mkdir(outside, 0755), 0);
	f = fopen(keep, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	ck_assert_int_eq(symlink(outside, strcat(strcpy((char[256]){0}, inner), "/link")), 0);
	/* A leftover of an interrupted discard is removed by the next one. */
	snprintf(leftover, sizeof(leftover), "%s/.workspace.discard.1", dir);
	ck_assert_int_eq(mkdir(leftover, 0755), 0);
	ck_assert_int_eq(workspace_discard(ws, &err), 0);
	ck_assert_int_ne(access(ws, F_OK), 0);
	ck_assert_int_ne(access(leftover, F_OK), 0);
	/* The link was removed, not followed. */
	ck_assert_int_eq(access(keep, F_OK), 0);
	ck_assert_int_lt(workspace_discard("/", &err), 0);
	ck_assert_int_eq(err.cls, ERR_REFUSED);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("boot_state");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_missing_state_is_not_an_error);
	tcase_add_test(tc, test_roundtrip_keeps_every_field);
	tcase_add_test(tc, test_saves_in_a_row_write_what_one_save_writes);
	tcase_add_test(tc, test_damaged_state_is_reported);
	tcase_add_test(tc, test_app_time_at_most_the_duration);
	tcase_add_test(tc, test_lock_refuses_a_second_boot);
	tcase_add_test(tc, test_discard_moves_aside_and_removes);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
