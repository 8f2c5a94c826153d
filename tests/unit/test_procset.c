/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Process sets against real processes, once per backend: cgroup v2, cgroup v1 and the
 * process-group fallback (forced with procset_create_backend()). A cgroup backend this machine
 * cannot offer (not root, not mounted) is reported and its case returns early; the fallback
 * always runs. Every test is a subreaper and kills by pid whatever it started on the way out.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "err.h"
#include "proc.h"
#include "procset.h"

static const enum procset_backend backends[] = {PROCSET_CGROUP2, PROCSET_CGROUP1,
                                                PROCSET_NO_CGROUP};
static const char *const backend_names[] = {"cgroup2", "cgroup1", "no cgroup"};

#include "test_watchdog.h"

static void setup(void)
{
	test_watchdog_start();
}

/* Append what fd has to buf; false on EOF, a full buffer or 10 s without output. */
static bool read_more(int fd, char *buf, size_t len)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	size_t got = strlen(buf);
	ssize_t n;

	if (got + 1 >= len || poll(&p, 1, 10000) <= 0)
		return false;
	n = read(fd, buf + got, len - 1 - got);
	if (n <= 0)
		return false;
	buf[got + (size_t)n] = '\0';
	return true;
}

static bool read_until(int fd, const char *needle, char *buf, size_t len)
{
	while (!strstr(buf, needle))
		if (!read_more(fd, buf, len))
			return false;
	return true;
}

/* The step prints "step-done", its daemon "daemon PID", in either order. */
static pid_t read_daemon(int fd, char *buf, size_t len)
{
	for (;;) {
		const char *p = strstr(buf, "daemon ");

		if (p && strchr(p, '\n') && strstr(buf, "step-done\n"))
			return (pid_t)atoi(p + 7);
		if (!read_more(fd, buf, len))
			return -1;
	}
}

static char *const base_env[] = {(char *)"PATH=/usr/bin:/bin", owner_env, NULL};

/* A set of the given backend with a name unique to this test, or NULL when unavailable. */
static struct procset *make_set(enum procset_backend b, const char *what)
{
	struct procset *ps = NULL;
	char name[64];
	struct err e;

	snprintf(name, sizeof(name), "test-%d-%s", (int)getpid(), what);
	err_clear(&e);
	if (procset_create_backend(name, b, &ps, &e) < 0) {
		ck_assert_msg(b != PROCSET_NO_CGROUP, "%s", e.msg);
		ck_assert_msg(geteuid() != 0, "cgroup backend unavailable as root: %s", e.msg);
		fprintf(stderr, "note: %s\n", e.msg);
		return NULL;
	}
	ck_assert_int_eq(procset_backend_of(ps), b);
	if (b == PROCSET_NO_CGROUP) {
		ck_assert_str_eq(procset_cgroup_path(ps), "");
		ck_assert_int_eq(procset_procs_fd(ps), -1);
	} else {
		ck_assert_ptr_nonnull(
		    strstr(procset_cgroup_path(ps), "/sandbox-app-runtime/test-"));
		ck_assert_int_ge(procset_procs_fd(ps), 3);
	}
	return ps;
}

/* Spawn cmd into the set, output to out (or -1); record its group. */
static pid_t spawn_in(struct procset *ps, const char *cmd, int out)
{
	struct proc_spec spec = {.command = cmd,
	                         .cwd = "/",
	                         .env = base_env,
	                         .output_fd = out,
	                         .procs_fd = procset_procs_fd(ps),
	                         .keep_fd = -1};
	struct err e;
	pid_t pid;

	err_clear(&e);
	ck_assert_msg(proc_spawn(&spec, &pid, &e) == 0, "%s", e.msg);
	ck_assert_int_eq(procset_add_group(ps, pid, proc_start_time(pid)), 0);
	return pid;
}

static bool has_pid(const struct procset *ps, pid_t pid)
{
	pid_t *v = NULL;
	size_t n = 0;
	bool found = false;
	struct err e;

	ck_assert_msg(procset_pids(ps, &v, &n, &e) == 0, "%s", e.msg);
	for (size_t i = 0; i < n; i++)
		found |= v[i] == pid;
	free(v);
	ck_assert_int_eq(procset_contains(ps, pid), found);
	return found;
}

static size_t count_pids(const struct procset *ps)
{
	pid_t *v = NULL;
	size_t n = 0;
	struct err e;

	ck_assert_msg(procset_pids(ps, &v, &n, &e) == 0, "%s", e.msg);
	free(v);
	return n;
}

static bool in_cgroup(pid_t pid, const char *cgroup_dir)
{
	char path[64], line[512];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	/* The cgroup path ends with .../sandbox-app-runtime/<name>; compare that tail. */
	const char *tail = strstr(cgroup_dir, "/sandbox-app-runtime/");
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		size_t ll = strlen(line), tl = strlen(tail);
		if (ll >= tl && !strcmp(line + ll - tl, tail))
			found = true;
	}
	fclose(f);
	return found;
}

static int wait_status(pid_t pid)
{
	int status = 0;

	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return status;
}

START_TEST(test_double_forked_daemon_is_found_and_stopped)
{
	enum procset_backend b = backends[_i];
	struct procset *ps = make_set(b, "daemon");
	char buf[256] = "";
	int out[2];
	pid_t step, daemon;
	struct proc_stat st;
	struct err e;

	if (!ps)
		return;
	if (b == PROCSET_NO_CGROUP) /* the supervisor's part: we are the subreaper */
		ck_assert_int_eq(procset_add_root(ps, getpid(), proc_start_time(getpid())), 0);
	ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
	step = spawn_in(ps, "(setsid sh -c 'echo daemon $$; exec sleep 60' &) ; echo step-done",
	                out[1]);
	close(out[1]);
	daemon = read_daemon(out[0], buf, sizeof(buf));
	ck_assert_int_gt(daemon, 1);
	/* The step is over; its daemon lives on in a session of its own. */
	ck_assert_int_eq(wait_status(step), 0);
	ck_assert_int_eq(proc_stat_read(daemon, &st), 0);
	ck_assert_int_eq(st.session, daemon);
	ck_assert_int_ne(st.pgrp, step);

	ck_assert_msg(has_pid(ps, daemon), "%s: daemon %d not in the set", backend_names[_i],
	              (int)daemon);
	ck_assert(!has_pid(ps, getpid()));
	if (b != PROCSET_NO_CGROUP)
		ck_assert(in_cgroup(daemon, procset_cgroup_path(ps)));

	err_clear(&e);
	ck_assert_msg(procset_stop(ps, 1000, 0, &e) == 0, "%s", e.msg);
	ck_assert(!proc_is(daemon, st.start_time));
	int status = wait_status(daemon); /* reparented to us, the subreaper */
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
	ck_assert_uint_eq(count_pids(ps), 0);

	char *path = strdup(procset_cgroup_path(ps));
	procset_destroy(ps);
	if (*path) {
		struct stat sb;
		ck_assert_int_eq(stat(path, &sb), -1);
		ck_assert_int_eq(errno, ENOENT);
	}
	free(path);
	procset_free(ps);
	close(out[0]);
}
END_TEST

START_TEST(test_term_ignored_gets_kill_after_grace)
{
	enum procset_backend b = backends[_i];
	struct procset *ps = make_set(b, "kill");
	char buf1[64] = "", buf2[64] = "";
	int o1[2], o2[2];
	pid_t stubborn, polite;
	struct err e;

	if (!ps)
		return;
	ck_assert_int_eq(pipe2(o1, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(o2, O_CLOEXEC), 0);
	stubborn = spawn_in(ps, "trap '' TERM; echo ready; exec sleep 60", o1[1]);
	polite = spawn_in(ps, "echo ready; exec sleep 60", o2[1]);
	close(o1[1]);
	close(o2[1]);
	ck_assert(read_until(o1[0], "ready\n", buf1, sizeof(buf1)));
	ck_assert(read_until(o2[0], "ready\n", buf2, sizeof(buf2)));
	ck_assert(has_pid(ps, stubborn));
	ck_assert(has_pid(ps, polite));

	err_clear(&e);
	ck_assert_msg(procset_stop(ps, 150, 0, &e) == 0, "%s", e.msg);
	int s1 = wait_status(stubborn), s2 = wait_status(polite);
	ck_assert_msg(WIFSIGNALED(s1) && WTERMSIG(s1) == SIGKILL, "stubborn: status %d", s1);
	ck_assert_msg(WIFSIGNALED(s2) && WTERMSIG(s2) == SIGTERM, "polite: status %d", s2);
	procset_destroy(ps);
	procset_free(ps);
	close(o1[0]);
	close(o2[0]);
}
END_TEST

START_TEST(test_recycled_group_or_root_is_not_signalled)
{
	struct procset *ps = make_set(PROCSET_NO_CGROUP, "recycled");
	struct proc_spec spec = {
	    .command = "echo ready; exec sleep 60", .env = base_env, .procs_fd = -1, .keep_fd = -1};
	char buf[64] = "";
	int out[2];
	pid_t victim;
	uint64_t start;
	struct err e;

	ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
	spec.output_fd = out[1];
	ck_assert_int_eq(proc_spawn(&spec, &victim, &e), 0);
	close(out[1]);
	ck_assert(read_until(out[0], "ready\n", buf, sizeof(buf)));
	start = proc_start_time(victim);

	/* What state.json would hold if the recorded process had died and its pid came back. */
	ck_assert_int_eq(procset_add_group(ps, victim, start + 1), 0);
	ck_assert_int_eq(procset_add_root(ps, getpid(), proc_start_time(getpid()) + 1), 0);
	ck_assert(!has_pid(ps, victim));
	ck_assert_uint_eq(count_pids(ps), 0);
	err_clear(&e);
	ck_assert_msg(procset_stop(ps, 50, 0, &e) == 0, "%s", e.msg);
	ck_assert(proc_is(victim, start));
	ck_assert_int_eq(waitpid(victim, NULL, WNOHANG), 0);

	/* With the right start time it is a member again. */
	ck_assert_int_eq(procset_add_group(ps, victim, start), 0);
	ck_assert(has_pid(ps, victim));
	ck_assert_int_eq(proc_signal(victim, start, SIGKILL), 0);
	ck_assert_int_eq(WTERMSIG(wait_status(victim)), SIGKILL);
	procset_free(ps);
	close(out[0]);
}
END_TEST

START_TEST(test_stop_spares_self_and_exclude_not_our_group)
{
	struct procset *ps = make_set(PROCSET_NO_CGROUP, "spare");
	pid_t same_group, excluded;
	struct err e;
	int status;

	ck_assert_int_eq(procset_add_group(ps, getpgrp(), 0), -EINVAL);
	ck_assert_int_eq(procset_add_group(ps, 1, 0), -EINVAL);
	ck_assert_int_eq(procset_add_group(ps, 0, 0), -EINVAL);

	/*
	 * Two plain children: one in our process group (as an app's process that called
	 * setpgid(0, our group) would be), one excluded by the caller. Only we, our ancestors and
	 * the excluded pid are spared: a process group is no identity.
	 */
	same_group = fork();
	ck_assert_int_ge(same_group, 0);
	if (same_group == 0) {
		execl("/bin/sleep", "sleep", "60", (char *)NULL);
		_exit(127);
	}
	excluded = fork();
	ck_assert_int_ge(excluded, 0);
	if (excluded == 0) {
		setpgid(0, 0);
		execl("/bin/sleep", "sleep", "60", (char *)NULL);
		_exit(127);
	}
	ck_assert_int_eq(procset_add_root(ps, getpid(), 0), 0);
	ck_assert(has_pid(ps, same_group));
	ck_assert(has_pid(ps, excluded));

	err_clear(&e);
	ck_assert_msg(procset_stop(ps, 50, excluded, &e) == 0, "%s", e.msg);
	status = wait_status(same_group);
	ck_assert_msg(WIFSIGNALED(status), "the process in our group was spared");
	ck_assert_int_eq(waitpid(excluded, NULL, WNOHANG), 0);
	ck_assert_int_eq(kill(excluded, SIGKILL), 0);
	wait_status(excluded);
	procset_free(ps);
}
END_TEST

/* A `sleep 60` spawned into the set, its group recorded, once it said it runs; *ret_out is the
 * read end of its output, for the caller to close. */
static pid_t spawn_sleeper(struct procset *ps, int *ret_out)
{
	char buf[64] = "";
	int out[2];
	pid_t pid;

	ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
	pid = spawn_in(ps, "echo ready; exec sleep 60", out[1]);
	close(out[1]);
	ck_assert(read_until(out[0], "ready\n", buf, sizeof(buf)));
	*ret_out = out[0];
	return pid;
}

START_TEST(test_reopen_from_recorded_path)
{
	enum procset_backend b = backends[_i];
	struct procset *ps = make_set(b, "reopen"), *again = NULL;
	char *path;
	int out;
	pid_t pid;
	uint64_t start;
	struct err e;

	if (!ps)
		return;
	pid = spawn_sleeper(ps, &out);
	start = proc_start_time(pid);
	path = strdup(procset_cgroup_path(ps));
	procset_free(ps); /* a later `--stop` starts from state.json */

	err_clear(&e);
	ck_assert_msg(procset_open(path, &again, &e) == 0, "%s", e.msg);
	ck_assert_int_eq(procset_backend_of(again), b);
	ck_assert_str_eq(procset_cgroup_path(again), path);
	/* A cgroup knows its members; the fallback needs the recorded groups again. */
	ck_assert_int_eq(has_pid(again, pid), b != PROCSET_NO_CGROUP);
	ck_assert_int_eq(procset_add_group(again, pid, start), 0);
	ck_assert(has_pid(again, pid));
	ck_assert_msg(procset_stop(again, 1000, 0, &e) == 0, "%s", e.msg);
	ck_assert_int_eq(WTERMSIG(wait_status(pid)), SIGTERM);
	procset_destroy(again);
	procset_free(again);
	free(path);
	close(out);
}
END_TEST

START_TEST(test_open_refuses_foreign_paths)
{
	static const char *const bad[] = {
	    "/etc",
	    "relative/sandbox-app-runtime/x",
	    "/sys/fs/cgroup/pids/other/x",
	    "/sys/fs/cgroup/pids/sandbox-app-runtime/",
	    "/sys/fs/cgroup/pids/sandbox-app-runtime/..",
	    "/sys/fs/cgroup/pids/sandbox-app-runtime/../sandbox-app-runtime/x",
	    "/sys/fs/cgroup/../../etc/sandbox-app-runtime/x",
	    "/sys/fs/cgroup//sandbox-app-runtime/x",
	    "/sys/fs/cgroup/pids/sandbox-app-runtime/a b",
	    "/tmp/sys/fs/cgroup/sandbox-app-runtime/x",
	};
	struct procset *ps = NULL;
	struct err e;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err_clear(&e);
		ck_assert_msg(procset_open(bad[i], &ps, &e) < 0, "accepted %s", bad[i]);
		ck_assert_int_eq(e.cls, ERR_REFUSED);
		ck_assert_ptr_null(ps);
	}
	err_clear(&e);
	ck_assert_int_eq(
	    procset_open("/sys/fs/cgroup/pids/sandbox-app-runtime/gone-xyz-1", &ps, &e), -ENOENT);
	ck_assert_int_eq(e.cls, ERR_FAILED);
	ck_assert_ptr_null(ps);

	ck_assert_int_eq(procset_open("", &ps, &e), 0);
	ck_assert_int_eq(procset_backend_of(ps), PROCSET_NO_CGROUP);
	ck_assert_uint_eq(count_pids(ps), 0);
	procset_free(ps);

	ck_assert_int_lt(procset_create_backend("../x", PROCSET_NO_CGROUP, &ps, &e), 0);
	ck_assert_int_lt(procset_create_backend("", PROCSET_NO_CGROUP, &ps, &e), 0);
}
END_TEST

START_TEST(test_auto_backend_and_nested_cgroups_removed)
{
	struct procset *ps = NULL;
	char name[64], sub[4200];
	struct stat sb;
	struct err e;

	snprintf(name, sizeof(name), "test-%d-auto", (int)getpid());
	err_clear(&e);
	ck_assert_msg(procset_create(name, &ps, &e) == 0, "%s", e.msg);
	if (geteuid() != 0) {
		procset_free(ps);
		return;
	}
	/* As root on a machine with /sys/fs/cgroup, a cgroup is made (v2 preferred). */
	ck_assert_int_ne(procset_backend_of(ps), PROCSET_NO_CGROUP);
	ck_assert_int_eq(strncmp(procset_cgroup_path(ps), "/sys/fs/cgroup/", 15), 0);
	/* Creating it again reuses it. */
	struct procset *same = NULL;
	ck_assert_int_eq(procset_create(name, &same, &e), 0);
	ck_assert_str_eq(procset_cgroup_path(same), procset_cgroup_path(ps));
	procset_free(same);

	/* A process of the boot may have made nested cgroups; destroy removes them. */
	snprintf(sub, sizeof(sub), "%s/inner", procset_cgroup_path(ps));
	ck_assert_int_eq(mkdir(sub, 0755), 0);
	snprintf(sub, sizeof(sub), "%s/inner/deeper", procset_cgroup_path(ps));
	ck_assert_int_eq(mkdir(sub, 0755), 0);
	char *path = strdup(procset_cgroup_path(ps));
	procset_destroy(ps);
	ck_assert_int_eq(stat(path, &sb), -1);
	ck_assert_int_eq(errno, ENOENT);
	free(path);
	procset_free(ps);
}
END_TEST

START_TEST(test_members_of_nested_cgroup_are_found)
{
	enum procset_backend b = backends[_i];
	struct procset *ps;
	char inner[4200], buf[64] = "";
	int out[2], procs;
	pid_t pid;
	struct err e;

	if (b == PROCSET_NO_CGROUP)
		return;
	ps = make_set(b, "nested");
	if (!ps)
		return;
	snprintf(inner, sizeof(inner), "%s/inner", procset_cgroup_path(ps));
	ck_assert_int_eq(mkdir(inner, 0755), 0);
	strcat(inner, "/cgroup.procs");
	procs = open(inner, O_WRONLY | O_CLOEXEC);
	ck_assert_int_ge(procs, 0);
	ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
	struct proc_spec spec = {.command = "echo ready; exec sleep 60",
	                         .env = base_env,
	                         .output_fd = out[1],
	                         .procs_fd = procs,
	                         .keep_fd = -1};
	ck_assert_int_eq(proc_spawn(&spec, &pid, &e), 0);
	close(out[1]);
	close(procs);
	ck_assert(read_until(out[0], "ready\n", buf, sizeof(buf)));
	ck_assert(has_pid(ps, pid)); /* no group recorded: found through the nested cgroup */
	ck_assert_msg(procset_stop(ps, 1000, 0, &e) == 0, "%s", e.msg);
	ck_assert_int_eq(WTERMSIG(wait_status(pid)), SIGTERM);
	procset_destroy(ps);
	procset_free(ps);
	close(out[0]);
}
END_TEST

/*
 * A member that root moves out of the set's cgroup, its process group recorded: a cgroup2 set
 * is its cgroup (only root can move a process out, and root can leave a group as easily, so
 * /proc is not walked for the groups); a cgroup v1 set still finds it by its group.
 */
START_TEST(test_recorded_group_outside_cgroup)
{
	enum procset_backend b = backends[_i];
	struct procset *ps;
	char root_procs[4200], pidbuf[16];
	const char *path, *tail;
	int out, fd;
	pid_t pid;

	if (b == PROCSET_NO_CGROUP)
		return;
	ps = make_set(b, "moved");
	if (!ps)
		return;
	pid = spawn_sleeper(ps, &out);
	ck_assert(has_pid(ps, pid));
	/* To the hierarchy's root cgroup, which every process may be in. */
	path = procset_cgroup_path(ps);
	tail = strstr(path, "/sandbox-app-runtime/");
	ck_assert_ptr_nonnull(tail);
	snprintf(root_procs, sizeof(root_procs), "%.*s/cgroup.procs", (int)(tail - path), path);
	fd = open(root_procs, O_WRONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	ck_assert_int_eq(write(fd, pidbuf, strlen(pidbuf)), (ssize_t)strlen(pidbuf));
	close(fd);
	ck_assert(!in_cgroup(pid, path));
	ck_assert_int_eq(has_pid(ps, pid), b == PROCSET_CGROUP1);
	ck_assert_int_eq(proc_signal(pid, proc_start_time(pid), SIGKILL), 0);
	ck_assert_int_eq(WTERMSIG(wait_status(pid)), SIGKILL);
	procset_destroy(ps);
	procset_free(ps);
	close(out);
}
END_TEST

static Suite *procset_suite(void)
{
	Suite *s = suite_create("procset");
	TCase *tc = tcase_create("core");
	int nb = (int)(sizeof(backends) / sizeof(backends[0]));

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_loop_test(tc, test_double_forked_daemon_is_found_and_stopped, 0, nb);
	tcase_add_loop_test(tc, test_term_ignored_gets_kill_after_grace, 0, nb);
	tcase_add_loop_test(tc, test_reopen_from_recorded_path, 0, nb);
	tcase_add_loop_test(tc, test_members_of_nested_cgroup_are_found, 0, nb);
	tcase_add_loop_test(tc, test_recorded_group_outside_cgroup, 0, nb);
	tcase_add_test(tc, test_recycled_group_or_root_is_not_signalled);
	tcase_add_test(tc, test_stop_spares_self_and_exclude_not_our_group);
	tcase_add_test(tc, test_open_refuses_foreign_paths);
	tcase_add_test(tc, test_auto_backend_and_nested_cgroups_removed);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(procset_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
