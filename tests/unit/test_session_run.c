/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "file.h"
#include "scrub.h"
#include "session_run.h"
#include "session_status.h"

static char dir[64], events[128], errlog[128], pidfile[128];
static int dfd = -1;

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/test-session-run.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(events, sizeof(events), "%s/events.jsonl", dir);
	snprintf(errlog, sizeof(errlog), "%s/stderr.log", dir);
	snprintf(pidfile, sizeof(pidfile), "%s/left.pid", dir);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(dfd, 0);
}

static void teardown(void)
{
	char cmd[128];

	close(dfd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static char *slurp(const char *path)
{
	char *buf = NULL;
	size_t len;
	struct err err;

	ck_assert_msg(file_read_capped(AT_FDCWD, path, 1 << 20, 0, &buf, &len, &err) == 0, "%s",
	              err.msg);
	return buf;
}

static pid_t seen_pid;

static void on_started(void *userdata, pid_t pid)
{
	(void)userdata;
	seen_pid = pid;
}

static int run(const char *script, unsigned timeout_s, unsigned kill_after_ms,
               const struct scrubber *s, struct session_run_result *res, struct err *err)
{
	char *argv[] = {"/bin/sh", "-c", (char *)script, NULL};
	char *env[] = {"PATH=/usr/bin:/bin", NULL};
	struct session_run_spec spec = {
	    .spawn = {.argv = argv, .env = env, .cwd = dir, .stdin_fd = -1},
	    .events_path = events,
	    .stderr_path = errlog,
	    .scrub = s,
	    .timeout_s = timeout_s,
	    .kill_after_ms = kill_after_ms,
	    .cancel_dirfd = dfd,
	    .cancel_name = "cancel",
	    .started = on_started,
	};

	err_clear(err);
	seen_pid = 0;
	return session_run(&spec, res, err);
}

START_TEST(test_output_framed_and_scrubbed)
{
	struct scrubber *s = scrub_new();
	struct session_run_result res;
	struct err err;
	char *ev, *er;
	struct stat st;

	ck_assert_int_eq(scrub_add(s, "sk-ant-unit-secret-99", 21), 0);
	ck_assert_int_eq(
	    run("echo '{\"type\":\"a\",\"k\":\"sk-ant-unit-secret-99\"}'; echo not json; "
	        "echo 'oops sk-ant-unit-secret-99' >&2; exit 3",
	        10, 0, s, &res, &err),
	    0);
	ck_assert_int_eq(res.exit_status, 3);
	ck_assert(!res.cancelled && !res.timed_out);
	ck_assert_int_eq(res.pid, seen_pid);
	ck_assert_uint_eq(res.events, 2);
	ev = slurp(events);
	ck_assert_str_eq(ev, "{\"type\":\"a\",\"k\":\"[REDACTED]\"}\n"
	                     "{\"type\":\"raw\",\"text\":\"not json\"}\n");
	er = slurp(errlog);
	ck_assert_str_eq(er, "oops [REDACTED]\n");
	ck_assert_int_eq(stat(events, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	ck_assert_int_eq(stat(errlog, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	free(ev);
	free(er);
	scrub_free(s);
}
END_TEST

START_TEST(test_own_group_and_umask)
{
	struct session_run_result res;
	struct err err;
	char *ev, want[128];

	ck_assert_int_eq(
	    run("printf '{\"pgid\":%s,\"umask\":\"%s\"}\\n' \"$(ps -o pgid= $$ | tr -d "
	        "' ')\" \"$(umask)\"",
	        10, 0, NULL, &res, &err),
	    0);
	ev = slurp(events);
	snprintf(want, sizeof(want), "{\"pgid\":%d,\"umask\":\"0002\"}\n", (int)res.pid);
	ck_assert_str_eq(ev, want);
	free(ev);
}
END_TEST

START_TEST(test_timeout_then_leftovers_stopped)
{
	struct session_run_result res;
	struct err err;
	uint64_t t0 = clock_now_ms();
	char script[512], *pid;

	/* The leftover leaves the group (setsid) and ignores TERM; it must still be stopped. */
	snprintf(script, sizeof(script),
	         "setsid sh -c 'trap \"\" TERM; echo $$ >%s; exec sleep 60' & sleep 30", pidfile);
	ck_assert_int_eq(run(script, 1, 300, NULL, &res, &err), 0);
	ck_assert(res.timed_out);
	ck_assert(!res.cancelled);
	ck_assert_int_eq(res.exit_status, 128 + SIGTERM);
	ck_assert_uint_lt(clock_now_ms() - t0, 8000);
	pid = slurp(pidfile);
	ck_assert_int_ne(kill(atoi(pid), 0), 0);
	free(pid);
}
END_TEST

START_TEST(test_kill_after_term_is_ignored)
{
	struct session_run_result res;
	struct err err;
	uint64_t t0 = clock_now_ms();

	ck_assert_int_eq(run("trap '' TERM; while :; do sleep 0.1; done", 1, 500, NULL, &res, &err),
	                 0);
	ck_assert(res.timed_out);
	ck_assert_int_eq(res.exit_status, 128 + SIGKILL);
	ck_assert_uint_ge(clock_now_ms() - t0, 1400);
}
END_TEST

START_TEST(test_cancel_file)
{
	struct session_run_result res;
	struct err err;
	char script[256];

	snprintf(script, sizeof(script), "sleep 0.3; : >'%s/cancel'; sleep 30", dir);
	ck_assert_int_eq(run(script, 60, 0, NULL, &res, &err), 0);
	ck_assert(res.cancelled);
	ck_assert(!res.timed_out);
	ck_assert_int_eq(res.exit_status, 128 + SIGTERM);
}
END_TEST

START_TEST(test_cannot_run)
{
	char *argv[] = {"/nonexistent/claude", NULL};
	struct session_run_spec spec = {
	    .spawn = {.argv = argv, .cwd = dir, .stdin_fd = -1},
	    .events_path = events,
	    .stderr_path = errlog,
	};
	struct session_run_result res;
	struct err err;

	ck_assert_int_lt(session_run(&spec, &res, &err), 0);
	ck_assert_ptr_nonnull(strstr(err.msg, "cannot run /nonexistent/claude: exec"));
	ck_assert_int_eq(res.pid, 0);
	/* The events file exists already: a second run is refused, never appended. */
	unlink(errlog);
	argv[0] = "/bin/true";
	ck_assert_int_lt(session_run(&spec, &res, &err), 0);
}
END_TEST

START_TEST(test_status_record)
{
	struct session_status st = {
	    .state = SESSION_FINISHED, .pid = 42, .exit_status = 143, .cancelled = true};
	struct session_status back;
	struct err err;
	char path[160], *text;

	session_status_now(st.started_at);
	session_status_now(st.finished_at);
	snprintf(path, sizeof(path), "%s/status.json", dir);
	ck_assert_int_eq(session_status_read(dfd, &back, &err), 1);
	ck_assert_int_eq(session_status_write(path, &st, &err), 0);
	ck_assert_int_eq(session_status_read(dfd, &back, &err), 0);
	ck_assert_int_eq(back.state, SESSION_FINISHED);
	ck_assert_int_eq(back.pid, 42);
	ck_assert_int_eq(back.exit_status, 143);
	ck_assert(back.cancelled && !back.timed_out);
	ck_assert_str_eq(back.started_at, st.started_at);
	text = slurp(path);
	ck_assert_ptr_nonnull(strstr(text,
	                             "{\"status\":\"finished\",\"pid\":42,\"exit_status\":143,"
	                             "\"cancelled\":true,\"timed_out\":false,\"started_at\":"));
	ck_assert_ptr_null(strstr(text, "error"));
	free(text);
	ck_assert_int_eq(session_status_exit_code(0x0100), 1);
	ck_assert_int_eq(session_status_exit_code(SIGKILL), 137);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("session_run");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 30);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_output_framed_and_scrubbed);
	tcase_add_test(tc, test_own_group_and_umask);
	tcase_add_test(tc, test_timeout_then_leftovers_stopped);
	tcase_add_test(tc, test_kill_after_term_is_ignored);
	tcase_add_test(tc, test_cancel_file);
	tcase_add_test(tc, test_cannot_run);
	tcase_add_test(tc, test_status_record);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
