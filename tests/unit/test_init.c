/* SPDX-License-Identifier: Apache-2.0 */
/*
 * init_run() as a child subreaper (not PID 1), with a shell script standing in for the daemon:
 * orphans it leaves are reaped, TERM is forwarded and its exit code becomes init's, SIGINT and
 * SIGHUP are forwarded without stopping it, a daemon ignoring TERM is killed after the grace.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "file.h"
#include "init.h"

static char dir[] = "/tmp/test-init.XXXXXX";

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

/* Fork a process running init_run() with `sh -c SCRIPT` (DIR in $1) as the daemon. */
static pid_t init_start(const char *script, int grace_ms)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char *argv[] = {(char *)"sh", (char *)"-c", (char *)script,
		                (char *)"sh", dir,          NULL};
		struct init_opts opts = {
		    .daemon_path = "/bin/sh", .daemon_argv = argv, .grace_ms = grace_ms};
		struct err err = {0};
		int status = -1;

		if (init_run(&opts, &status, &err) < 0) {
			fprintf(stderr, "init_run: %s\n", err.msg);
			_exit(99);
		}
		_exit(status);
	}
	return pid;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

/* Wait (bounded, 20 s) until DIR/NAME exists; its first number, or -1. */
static long wait_file(const char *name)
{
	char path[256];
	long v = -1;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	for (int i = 0; i < 2000; i++) {
		FILE *f = fopen(path, "re");
		if (f) {
			int n = fscanf(f, "%ld", &v);
			fclose(f);
			if (n == 1)
				return v;
		}
		sleep_ms(10);
	}
	return -1;
}

/* PID's state letter from /proc/PID/stat, or 0 when there is no such process. */
static char proc_state(long pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

static int wait_exit(pid_t pid)
{
	int st;

	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st));
	return WEXITSTATUS(st);
}

/* The daemon leaves orphans (their parent, a subshell, exits at once): init adopts and reaps
 * them, so they do not stay zombies while the daemon runs on. */
START_TEST(test_orphans_reaped)
{
	pid_t init = init_start("for i in 1 2 3; do (sleep 0.1 & echo $! > \"$1/orphan$i\"); done; "
	                        "echo $$ > \"$1/daemon\"; trap 'exit 0' TERM; "
	                        "while :; do sleep 0.05; done",
	                        5000);
	long orphans[3];
	char name[16];
	int gone = 0;

	ck_assert_int_gt(wait_file("daemon"), 0);
	for (int i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "orphan%d", i + 1);
		orphans[i] = wait_file(name);
		ck_assert_int_gt(orphans[i], 0);
	}
	/* Each orphan is init's child once its subshell exits; it must vanish, not stay 'Z'. */
	for (int t = 0; t < 2000 && gone < 3; t++) {
		gone = 0;
		for (int i = 0; i < 3; i++)
			gone += proc_state(orphans[i]) == 0;
		sleep_ms(10);
	}
	for (int i = 0; i < 3; i++)
		ck_assert_msg(proc_state(orphans[i]) == 0, "orphan %ld left in state %c",
		              orphans[i], proc_state(orphans[i]));
	kill(init, SIGTERM);
	ck_assert_int_eq(wait_exit(init), 0);
}
END_TEST

/* SIGHUP and SIGINT reach the daemon and it carries on; SIGTERM reaches it, it exits 7, and so
 * does init. */
START_TEST(test_signals_forwarded)
{
	pid_t init =
	    init_start("trap 'echo 1 >> \"$1/hup\"' HUP; trap 'echo 1 >> \"$1/int\"' INT; "
	               "trap 'echo 1 > \"$1/term\"; exit 7' TERM; echo $$ > \"$1/daemon\"; "
	               "while :; do sleep 0.05; done",
	               5000);

	ck_assert_int_gt(wait_file("daemon"), 0);
	kill(init, SIGHUP);
	ck_assert_int_eq(wait_file("hup"), 1);
	kill(init, SIGINT);
	ck_assert_int_eq(wait_file("int"), 1);
	ck_assert_int_eq(waitpid(init, NULL, WNOHANG), 0); /* still running */
	kill(init, SIGTERM);
	ck_assert_int_eq(wait_exit(init), 7);
	ck_assert_int_eq(wait_file("term"), 1);
}
END_TEST

/* SIGUSR2 stops the daemon as SIGTERM does; one ignoring TERM is killed after the grace, and
 * init exits 128 + SIGKILL. */
START_TEST(test_stop_kills_after_grace)
{
	pid_t init = init_start("trap '' TERM; echo $$ > \"$1/daemon\"; "
	                        "while :; do sleep 0.05; done",
	                        200);
	long daemon = wait_file("daemon");

	ck_assert_int_gt(daemon, 0);
	kill(init, SIGUSR2);
	ck_assert_int_eq(wait_exit(init), 128 + SIGKILL);
	ck_assert_int_eq(proc_state(daemon), 0);
}
END_TEST

/* A daemon that exits by itself ends init with its code; one that cannot be run, with 127. */
START_TEST(test_daemon_exit_status)
{
	ck_assert_int_eq(wait_exit(init_start("exit 3", 1000)), 3);
	ck_assert_int_eq(wait_exit(init_start("kill -HUP $$", 1000)), 128 + SIGHUP);
	ck_assert_int_eq(wait_exit(init_start("exec /nonexistent/daemon", 1000)), 127);
}
END_TEST

/* In a private mount namespace (root only; skipped otherwise): an empty root gets proc, sysfs,
 * devtmpfs and tmpfs mounts and a 0700 run/sandbox-agent; a second call mounts nothing more. */
START_TEST(test_mount_basics)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct err err = {0};
		char path[256];
		struct stat st;

		if (unshare(CLONE_NEWNS) < 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
			_exit(77);
		if (init_mount_basics(dir, &err) < 0 || init_mount_basics(dir, &err) < 0) {
			fprintf(stderr, "init_mount_basics: %s\n", err.msg);
			_exit(1);
		}
		snprintf(path, sizeof(path), "%s/proc/self/stat", dir);
		if (access(path, R_OK) < 0)
			_exit(2);
		snprintf(path, sizeof(path), "%s/sys/kernel", dir);
		if (access(path, F_OK) < 0)
			_exit(3);
		snprintf(path, sizeof(path), "%s/dev/null", dir);
		if (stat(path, &st) < 0 || !S_ISCHR(st.st_mode))
			_exit(4);
		snprintf(path, sizeof(path), "%s/run/sandbox-agent", dir);
		if (stat(path, &st) < 0 || (st.st_mode & 07777) != 0700)
			_exit(5);
		_exit(0);
	}
	int rc = wait_exit(pid);
	if (rc == 77)
		return; /* no mount namespace here: nothing to check */
	ck_assert_int_eq(rc, 0);
}
END_TEST

static void write_at(const char *rel, const char *text)
{
	struct err err = {0};
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	ck_assert_int_eq(
	    file_write_replace(path, text, strlen(text), 0644, (uid_t)-1, (gid_t)-1, &err), 0);
}

static void read_at(const char *rel, char *buf, size_t len)
{
	_cleanup_free_ char *text = NULL;
	struct err err = {0};
	char path[512];
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	ck_assert_int_eq(file_read_capped(AT_FDCWD, path, 64, 0, &text, &n, &err), 0);
	snprintf(buf, len, "%s", text);
}

/* Under a root of regular files standing in for /proc/sys/fs: a 0 becomes 1, a 2 stays, a
 * missing file (protected_regular) is no error. */
START_TEST(test_protect_links)
{
	char path[512], v[16];

	for (const char *d = "proc\0proc/sys\0proc/sys/fs\0"; *d; d += strlen(d) + 1) {
		snprintf(path, sizeof(path), "%s/%s", dir, d);
		ck_assert_int_eq(mkdir(path, 0755), 0);
	}
	write_at("proc/sys/fs/protected_hardlinks", "0\n");
	write_at("proc/sys/fs/protected_symlinks", "0\n");
	write_at("proc/sys/fs/protected_fifos", "2\n");
	init_protect_links(dir);
	read_at("proc/sys/fs/protected_hardlinks", v, sizeof(v));
	ck_assert_str_eq(v, "1\n");
	read_at("proc/sys/fs/protected_symlinks", v, sizeof(v));
	ck_assert_str_eq(v, "1\n");
	read_at("proc/sys/fs/protected_fifos", v, sizeof(v));
	ck_assert_str_eq(v, "2\n");
	snprintf(path, sizeof(path), "%s/proc/sys/fs/protected_regular", dir);
	ck_assert_int_eq(access(path, F_OK), -1);
}
END_TEST

static Suite *init_suite(void)
{
	Suite *s = suite_create("init");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_orphans_reaped);
	tcase_add_test(tc, test_signals_forwarded);
	tcase_add_test(tc, test_stop_kills_after_grace);
	tcase_add_test(tc, test_daemon_exit_status);
	tcase_add_test(tc, test_mount_basics);
	tcase_add_test(tc, test_protect_links);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(init_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
