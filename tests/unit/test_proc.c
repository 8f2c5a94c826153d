/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proc_spawn and friends against real processes. Every test is a subreaper and, on the way out
 * (also after a failed assertion), kills by pid whatever it started and reaps it.
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
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "proc.h"

#include "test_watchdog.h"

static void setup(void)
{
	test_watchdog_start();
}

/* Read from fd until needle shows up (true), or EOF / 10 s pass (false). */
static bool read_until(int fd, const char *needle, char *buf, size_t len)
{
	size_t got = strlen(buf);

	while (!strstr(buf, needle)) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (got + 1 >= len || poll(&p, 1, 10000) <= 0)
			return false;
		n = read(fd, buf + got, len - 1 - got);
		if (n <= 0)
			return false;
		got += (size_t)n;
		buf[got] = '\0';
	}
	return true;
}

static char *const base_env[] = {(char *)"PATH=/usr/bin:/bin", (char *)"FOO=bar baz", owner_env,
                                 NULL};

static pid_t spawn_ok(const char *cmd, int out, const struct run_user *user)
{
	struct proc_spec spec = {.command = cmd,
	                         .cwd = "/",
	                         .env = base_env,
	                         .user = user,
	                         .output_fd = out,
	                         .procs_fd = -1,
	                         .keep_fd = -1};
	struct err e;
	pid_t pid = -1;

	err_clear(&e);
	ck_assert_msg(proc_spawn(&spec, &pid, &e) == 0, "spawn %s: %s", cmd, e.msg);
	ck_assert_int_gt(pid, 1);
	return pid;
}

static int wait_status(pid_t pid)
{
	int status = 0;

	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return status;
}

START_TEST(test_stat_parse_hostile_comm)
{
	static const char line[] = "4242 (a) b) (c ) R 17 4242 4100 34816 4242 4194560 99 0 0 0 "
	                           "1 2 0 0 20 0 1 0 987654321 12345 67 18446744073709551615\n";
	struct proc_stat st;

	ck_assert_int_eq(proc_stat_parse(line, strlen(line), &st), 0);
	ck_assert_int_eq(st.pid, 4242);
	ck_assert_str_eq(st.comm, "a) b) (c ");
	ck_assert_int_eq(st.state, 'R');
	ck_assert_int_eq(st.ppid, 17);
	ck_assert_int_eq(st.pgrp, 4242);
	ck_assert_int_eq(st.session, 4100);
	ck_assert_uint_eq(st.start_time, 987654321ULL);

	ck_assert_int_eq(proc_stat_parse("12 (x S 1 2 3", 13, &st), -EINVAL);
	ck_assert_int_eq(proc_stat_parse("12 (x) S 1 2 3 4", 16, &st), -EINVAL);
	ck_assert_int_eq(proc_stat_parse("(x) S", 5, &st), -EINVAL);
	ck_assert_int_eq(proc_stat_parse("", 0, &st), -EINVAL);
}
END_TEST

START_TEST(test_stat_read_self_with_odd_name)
{
	struct proc_stat st;

	ck_assert_int_eq(prctl(PR_SET_NAME, "x) S 9 9 (y"), 0);
	ck_assert_int_eq(proc_stat_read(getpid(), &st), 0);
	ck_assert_str_eq(st.comm, "x) S 9 9 (y");
	ck_assert_int_eq(st.pid, getpid());
	ck_assert_int_eq(st.ppid, getppid());
	ck_assert_int_eq(st.pgrp, getpgrp());
	ck_assert_uint_gt(st.start_time, 0);
	ck_assert_uint_eq(proc_start_time(getpid()), st.start_time);
	ck_assert_int_eq(proc_parent(getpid()), getppid());
	ck_assert(proc_is(getpid(), st.start_time));
	ck_assert_int_eq(proc_stat_read(0, &st), -ESRCH);
}
END_TEST

static bool fd_is_open_in(pid_t pid, int fd)
{
	char path[64];
	struct stat sb;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
	return stat(path, &sb) == 0 || errno != ENOENT;
}

static unsigned long long status_mask(pid_t pid, const char *field)
{
	char path[64], line[256];
	unsigned long long v = ~0ULL;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, strlen(field)))
			v = strtoull(line + strlen(field), NULL, 16);
	fclose(f);
	return v;
}

START_TEST(test_spawn_environment_fds_signals)
{
	int out[2], keep[2], leak;
	char buf[4096] = "";
	struct proc_stat st;
	struct stat pipe_st, child_st;
	char path[64], link[64];
	sigset_t block, old;
	ssize_t n;
	pid_t pid;

	ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(keep, O_CLOEXEC), 0);
	leak = open("/dev/null", O_RDONLY); /* no O_CLOEXEC on purpose: must not reach the child */
	ck_assert_int_ge(leak, 3);

	/* What a supervisor with a signalfd has: signals blocked, some ignored. */
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGCHLD);
	ck_assert_int_eq(sigprocmask(SIG_BLOCK, &block, &old), 0);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
#if defined(__x86_64__) || defined(__aarch64__)
	/* Signal 32, which glibc's sigaction() refuses to touch: {handler, flags, restorer, mask}.
	 */
	unsigned long ign[4] = {(unsigned long)SIG_IGN, 0, 0, 0};
	ck_assert_int_eq(syscall(SYS_rt_sigaction, 32, ign, NULL, (size_t)8), 0);
#endif

	struct proc_spec spec = {.command = "echo \"env=$FOO\"; pwd; echo ready; exec sleep 60",
	                         .cwd = "/tmp",
	                         .env = base_env,
	                         .output_fd = out[1],
	                         .procs_fd = -1,
	                         .keep_fd = keep[1]};
	struct err e;
	err_clear(&e);
	ck_assert_msg(proc_spawn(&spec, &pid, &e) == 0, "%s", e.msg);
	close(out[1]);
	ck_assert(read_until(out[0], "ready\n", buf, sizeof(buf)));
	ck_assert_str_eq(buf, "env=bar baz\n/tmp\nready\n");

	/* Its own process group in our session. */
	ck_assert_int_eq(proc_stat_read(pid, &st), 0);
	ck_assert_int_eq(st.pgrp, pid);
	ck_assert_int_eq(st.session, getsid(0));
	ck_assert_int_eq(getpgid(pid), pid);

	/* stdin /dev/null, stdout and stderr our pipe, keep_fd kept, nothing else. */
	snprintf(path, sizeof(path), "/proc/%d/fd/0", (int)pid);
	n = readlink(path, link, sizeof(link) - 1);
	ck_assert_int_gt(n, 0);
	link[n] = '\0';
	ck_assert_str_eq(link, "/dev/null");
	ck_assert_int_eq(fstat(out[0], &pipe_st), 0);
	for (int fd = 1; fd <= 2; fd++) {
		snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
		ck_assert_int_eq(stat(path, &child_st), 0);
		ck_assert_uint_eq(child_st.st_ino, pipe_st.st_ino);
	}
	ck_assert(fd_is_open_in(pid, keep[1]));
	ck_assert(!fd_is_open_in(pid, leak));
	ck_assert(!fd_is_open_in(pid, out[0]));
	ck_assert(!fd_is_open_in(pid, keep[0]));

	/* Clean mask and default dispositions although ours block and ignore. */
	ck_assert_uint_eq(status_mask(pid, "SigBlk:"), 0);
	ck_assert_uint_eq(status_mask(pid, "SigIgn:"), 0);
	/* ... and ours as they were: the child reset its own copy, not the caller's. */
	ck_assert(status_mask(getpid(), "SigIgn:") & (1ULL << (SIGINT - 1)));
	ck_assert(status_mask(getpid(), "SigIgn:") & (1ULL << (SIGHUP - 1)));
	ck_assert(status_mask(getpid(), "SigBlk:") & (1ULL << (SIGTERM - 1)));

	ck_assert_int_eq(proc_signal(pid, st.start_time, SIGTERM), 0);
	int status = wait_status(pid);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(out[0]);
	close(keep[0]);
	close(keep[1]);
	close(leak);
}
END_TEST

START_TEST(test_spawn_new_session)
{
	int out[2];
	char buf[256] = "";
	struct proc_stat st;

	ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
	struct proc_spec spec = {.command = "echo ready; exec sleep 60",
	                         .env = base_env,
	                         .output_fd = out[1],
	                         .procs_fd = -1,
	                         .new_session = true,
	                         .keep_fd = -1};
	struct err e;
	pid_t pid;
	ck_assert_msg(proc_spawn(&spec, &pid, &e) == 0, "%s", e.msg);
	close(out[1]);
	ck_assert(read_until(out[0], "ready\n", buf, sizeof(buf)));
	ck_assert_int_eq(proc_stat_read(pid, &st), 0);
	ck_assert_int_eq(st.session, pid);
	ck_assert_int_eq(st.pgrp, pid);
	ck_assert_int_eq(proc_signal(pid, st.start_time, SIGKILL), 0);
	int status = wait_status(pid);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	close(out[0]);
}
END_TEST

START_TEST(test_spawn_chdir_failure_is_reported)
{
	struct proc_spec spec = {.command = "true",
	                         .cwd = "/nonexistent/x",
	                         .env = base_env,
	                         .output_fd = -1,
	                         .procs_fd = -1,
	                         .keep_fd = -1};
	struct err e;
	pid_t pid = -7;

	err_clear(&e);
	ck_assert_int_lt(proc_spawn(&spec, &pid, &e), 0);
	ck_assert_int_eq(pid, -7);
	ck_assert_str_eq(e.msg, "cannot run true: chdir /nonexistent/x: No such file or directory");
	ck_assert_int_eq(e.code, ENOENT);
	ck_assert_int_eq(e.cls, ERR_FAILED);
	/* The failed child was reaped: no child is left. */
	ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1);
	ck_assert_int_eq(errno, ECHILD);
}
END_TEST

START_TEST(test_spawn_exec_failure_is_reported)
{
	/* One environment string over 128 KiB makes execve() itself fail with E2BIG. */
	size_t big = 200 * 1024;
	char *huge = malloc(big + 3);
	char *env[] = {huge, NULL};
	struct proc_spec spec = {
	    .command = "true", .env = env, .output_fd = -1, .procs_fd = -1, .keep_fd = -1};
	struct err e;
	pid_t pid;

	ck_assert_ptr_nonnull(huge);
	memcpy(huge, "X=", 2);
	memset(huge + 2, 'a', big);
	huge[big + 2] = '\0';
	err_clear(&e);
	ck_assert_int_lt(proc_spawn(&spec, &pid, &e), 0);
	ck_assert_str_eq(e.msg, "cannot run true: exec /bin/sh: Argument list too long");
	ck_assert_int_eq(e.code, E2BIG);
	ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1);
	free(huge);
}
END_TEST

START_TEST(test_spawn_refuses_low_keep_fd)
{
	struct proc_spec spec = {.command = "true", .output_fd = -1, .procs_fd = -1, .keep_fd = 1};
	struct err e;
	pid_t pid;

	ck_assert_int_lt(proc_spawn(&spec, &pid, &e), 0);
	ck_assert_ptr_nonnull(strstr(e.msg, "keep descriptor below 3"));
}
END_TEST

START_TEST(test_spawn_as_other_user)
{
	struct run_user nobody = {0};
	char secret[] = "/tmp/test-proc-secret-XXXXXX";
	char cmd[512], buf[4096] = "";
	int out[2], fd;
	struct err e;

	err_clear(&e);
	ck_assert_msg(proc_user_lookup("nobody", &nobody, &e) == 0, "%s", e.msg);
	ck_assert_uint_ne(nobody.uid, 0);
	fd = mkstemp(secret);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "top-secret-value\n", 17), 17);
	ck_assert_int_eq(fchmod(fd, 0600), 0);
	close(fd);

	snprintf(cmd, sizeof(cmd),
	         "echo \"uid=$(id -u) gid=$(id -g) groups=$(id -G)\"; cat %s || echo denied; "
	         "echo end",
	         secret);
	ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
	struct proc_spec spec = {.command = cmd,
	                         .cwd = "/",
	                         .env = base_env,
	                         .user = &nobody,
	                         .output_fd = out[1],
	                         .procs_fd = -1,
	                         .keep_fd = -1};
	pid_t pid;
	int r = proc_spawn(&spec, &pid, &e);
	close(out[1]);

	if (geteuid() != 0) {
		/* Not root: the switch must fail loudly, never run as the caller instead. */
		ck_assert_int_lt(r, 0);
		ck_assert_msg(strstr(e.msg, " as nobody: setgroups: Operation not permitted"), "%s",
		              e.msg);
	} else {
		char want[128];

		ck_assert_msg(r == 0, "%s", e.msg);
		ck_assert(read_until(out[0], "end\n", buf, sizeof(buf)));
		snprintf(want, sizeof(want), "uid=%u gid=%u groups=%u\n", (unsigned)nobody.uid,
		         (unsigned)nobody.gid, (unsigned)nobody.gid);
		ck_assert_msg(!strncmp(buf, want, strlen(want)), "got: %s", buf);
		ck_assert_msg(strstr(buf, "Permission denied") && strstr(buf, "denied\nend\n"),
		              "got: %s", buf);
		ck_assert_ptr_null(strstr(buf, "top-secret-value"));
		int status = wait_status(pid);
		ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	close(out[0]);
	unlink(secret);
	proc_user_dispose(&nobody);
}
END_TEST

/*
 * The groups are looked up with the user, once, and each spawn sets those: a list changed
 * after the lookup is what the command runs with, not what /etc/group says.
 */
START_TEST(test_spawn_uses_groups_looked_up_with_user)
{
	struct run_user nobody = {0};
	char buf[256] = "", want[64];
	int out[2];
	struct err e;
	pid_t pid;
	bool has_primary = false;

	if (geteuid() != 0)
		return; /* switching users needs root */
	err_clear(&e);
	ck_assert_msg(proc_user_lookup("nobody", &nobody, &e) == 0, "%s", e.msg);
	ck_assert_ptr_nonnull(nobody.groups);
	for (size_t i = 0; i < nobody.n_groups; i++)
		has_primary |= nobody.groups[i] == nobody.gid;
	ck_assert(has_primary);
	free(nobody.groups);
	nobody.groups = calloc(2, sizeof(gid_t));
	ck_assert_ptr_nonnull(nobody.groups);
	nobody.groups[0] = nobody.gid;
	nobody.groups[1] = 54321;
	nobody.n_groups = 2;

	ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
	struct proc_spec spec = {.command = "id -G; echo end",
	                         .cwd = "/",
	                         .env = base_env,
	                         .user = &nobody,
	                         .output_fd = out[1],
	                         .procs_fd = -1,
	                         .keep_fd = -1};
	ck_assert_msg(proc_spawn(&spec, &pid, &e) == 0, "%s", e.msg);
	close(out[1]);
	ck_assert(read_until(out[0], "end\n", buf, sizeof(buf)));
	snprintf(want, sizeof(want), "%u 54321\nend\n", (unsigned)nobody.gid);
	ck_assert_str_eq(buf, want);
	ck_assert_int_eq(wait_status(pid), 0);
	close(out[0]);
	proc_user_dispose(&nobody);
	ck_assert_ptr_null(nobody.groups);
}
END_TEST

/* A user whose groups could not be looked up is found, but never switched to with fewer. */
START_TEST(test_spawn_refuses_a_user_without_groups)
{
	struct run_user nobody = {0};
	struct err e;
	pid_t pid;

	err_clear(&e);
	ck_assert_msg(proc_user_lookup("nobody", &nobody, &e) == 0, "%s", e.msg);
	free(nobody.groups);
	nobody.groups = NULL;
	nobody.n_groups = 0;
	struct proc_spec spec = {.command = "true",
	                         .cwd = "/",
	                         .env = base_env,
	                         .user = &nobody,
	                         .output_fd = -1,
	                         .procs_fd = -1,
	                         .keep_fd = -1};
	ck_assert_int_lt(proc_spawn(&spec, &pid, &e), 0);
	ck_assert_str_eq(
	    e.msg, "cannot run true as nobody: its supplementary groups could not be looked up");
	proc_user_dispose(&nobody);
}
END_TEST

START_TEST(test_spawn_as_user_chdir_error_names_user)
{
	struct run_user nobody = {0};
	struct err e;
	pid_t pid;

	if (geteuid() != 0)
		return; /* covered by test_spawn_as_other_user */
	ck_assert_int_eq(proc_user_lookup("nobody", &nobody, &e), 0);
	/* /root is 0700 root: nobody cannot enter it, so the chdir runs as the user. */
	struct proc_spec spec = {.command = "true",
	                         .cwd = "/root",
	                         .env = base_env,
	                         .user = &nobody,
	                         .output_fd = -1,
	                         .procs_fd = -1,
	                         .keep_fd = -1};
	struct stat sb;
	ck_assert_int_eq(stat("/root", &sb), 0);
	if ((sb.st_mode & 0001) == 0) {
		ck_assert_int_lt(proc_spawn(&spec, &pid, &e), 0);
		ck_assert_str_eq(e.msg,
		                 "cannot run true as nobody: chdir /root: Permission denied");
	}
	proc_user_dispose(&nobody);
}
END_TEST

START_TEST(test_run_user_lookup)
{
	struct run_user u = {0};
	struct err e;

	err_clear(&e);
	ck_assert_int_lt(proc_user_lookup("no-such-user-sandbox-xyz", &u, &e), 0);
	ck_assert_int_eq(e.cls, ERR_REFUSED);
	ck_assert_str_eq(e.msg, "user no-such-user-sandbox-xyz does not exist");
	ck_assert_ptr_null(u.name);

	ck_assert_int_eq(proc_user_lookup("root", &u, &e), 0);
	ck_assert_uint_eq(u.uid, 0);
	ck_assert_uint_eq(u.gid, 0);
	ck_assert_str_eq(u.name, "root");
	ck_assert_str_eq(u.home, "/root");
	proc_user_dispose(&u);
	ck_assert_ptr_null(u.name);

	setenv("HOME", "/home/someone", 1);
	proc_user_self(&u);
	ck_assert_uint_eq(u.uid, (uid_t)-1);
	ck_assert_ptr_null(u.name);
	ck_assert_str_eq(u.home, "/home/someone");
	proc_user_dispose(&u);
}
END_TEST

START_TEST(test_describe_real_statuses)
{
	char buf[128], name[32];
	pid_t pid;

	pid = spawn_ok("exit 3", -1, NULL);
	proc_describe_status(wait_status(pid), buf, sizeof(buf));
	ck_assert_str_eq(buf, "exited with status 3");

	pid = spawn_ok("kill -KILL $$", -1, NULL);
	proc_describe_status(wait_status(pid), buf, sizeof(buf));
	ck_assert_str_eq(buf, "was killed by signal SIGKILL");

	pid = spawn_ok("kill -USR2 $$", -1, NULL);
	proc_describe_status(wait_status(pid), buf, sizeof(buf));
	ck_assert_str_eq(buf, "was killed by signal SIGUSR2");

	ck_assert_str_eq(proc_signal_name(SIGRTMIN + 2, name, sizeof(name)), "SIGRTMIN+2");
	ck_assert_str_eq(proc_signal_name(SIGTERM, name, sizeof(name)), "SIGTERM");
	ck_assert_str_eq(proc_signal_name(200, name, sizeof(name)), "signal 200");
}
END_TEST

START_TEST(test_changed_start_time_is_not_signalled)
{
	int out[2];
	char buf[64] = "";
	pid_t pid;
	uint64_t start;

	ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
	pid = spawn_ok("echo ready; exec sleep 60", out[1], NULL);
	close(out[1]);
	ck_assert(read_until(out[0], "ready\n", buf, sizeof(buf)));
	start = proc_start_time(pid);
	ck_assert_uint_gt(start, 0);
	ck_assert(proc_is(pid, start));
	ck_assert(!proc_is(pid, start + 1));
	ck_assert_int_eq(proc_parent(pid), getpid());

	ck_assert_int_eq(proc_signal(pid, start + 1, SIGKILL), -ESRCH);
	ck_assert_int_eq(proc_signal(pid, start - 1, SIGKILL), -ESRCH);
	ck_assert_int_eq(waitpid(pid, NULL, WNOHANG), 0); /* still running */
	ck_assert(proc_is(pid, start));

	ck_assert_int_eq(proc_signal(1, 0, 0), -EPERM);
	ck_assert_int_eq(proc_signal(0, 0, 0), -EPERM);
	ck_assert_int_eq(proc_signal(getpid(), 0, 0), -EPERM);

	ck_assert_int_eq(proc_signal(pid, start, SIGKILL), 0);
	int status = wait_status(pid);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	ck_assert(!proc_is(pid, start));
	ck_assert_uint_eq(proc_start_time(pid), 0);
	ck_assert_int_eq(proc_signal(pid, start, SIGKILL), -ESRCH);
	close(out[0]);
}
END_TEST

/*
 * steps() in a child whose seccomp filter answers system call nr with ENOSYS; it must return 0
 * (else the step that failed). Not run, and said so, where there is no seccomp.
 */
static void run_without_syscall(const char *test, unsigned nr, int (*steps)(void))
{
	int status;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct sock_filter f[] = {
		    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1),
		    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		};
		struct sock_fprog prog = {.len = sizeof(f) / sizeof(f[0]), .filter = f};

		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
		    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
			_exit(77); /* no seccomp here: nothing to test */
		/* The filter answers before the kernel looks at the arguments. */
		if (syscall(nr, 0, 0) != -1 || errno != ENOSYS)
			_exit(70); /* the filter is not in place */
		_exit(steps());
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
		fprintf(stderr, "%s: no seccomp filter here; not run\n", test);
		return;
	}
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "step %d failed",
	              WEXITSTATUS(status));
}

/*
 * proc_signal_wait() on a child that ignores SIGTERM: the wait ends at its deadline; then on
 * SIGKILL it ends when the child does, long before its deadline. Returns 0 or the failed step.
 */
static int signal_wait_steps(void)
{
	int out[2];
	char buf[64] = "";
	pid_t pid;
	uint64_t start, t0;
	int status;

	if (pipe2(out, O_CLOEXEC) != 0)
		return 1;
	pid = spawn_ok("trap '' TERM; echo ready; exec sleep 60", out[1], NULL);
	close(out[1]);
	if (!read_until(out[0], "ready\n", buf, sizeof(buf)) || !(start = proc_start_time(pid)))
		return 2;
	close(out[0]);
	t0 = clock_now_ms();
	if (proc_signal_wait(pid, start, SIGTERM, 200) != -ETIMEDOUT)
		return 3;
	if (clock_now_ms() - t0 < 190 || !proc_is(pid, start))
		return 4;
	if (proc_signal_wait(pid, start + 1, SIGKILL, 1000) != -ESRCH)
		return 5;
	if (proc_signal_wait(pid, 0, SIGKILL, 1000) != -EINVAL || !proc_is(pid, start))
		return 9; /* no wait without the process's start time */
	t0 = clock_now_ms();
	if (proc_signal_wait(pid, start, SIGKILL, 30000) != 0)
		return 6;
	if (clock_now_ms() - t0 > 15000) /* it ended the wait, not the deadline */
		return 7;
	if (waitpid(pid, &status, 0) != pid || !WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
		return 8;
	return 0;
}

START_TEST(test_signal_wait)
{
	ck_assert_int_eq(signal_wait_steps(), 0);
}
END_TEST

/* The same where the kernel has no pidfds (a seccomp filter answers pidfd_open with ENOSYS). */
START_TEST(test_signal_wait_without_pidfd)
{
	run_without_syscall("test_signal_wait_without_pidfd", SYS_pidfd_open, signal_wait_steps);
}
END_TEST

START_TEST(test_zombie_is_not_running)
{
	struct proc_stat st = {0};
	pid_t pid = spawn_ok("exit 0", -1, NULL);
	uint64_t start = 0;

	/* Wait (bounded) until it is a zombie, without reaping it. */
	for (int i = 0; i < 1000; i++) {
		ck_assert_int_eq(proc_stat_read(pid, &st), 0);
		if (!start)
			start = st.start_time;
		if (st.state == 'Z')
			break;
		usleep(10000);
	}
	ck_assert_int_eq(st.state, 'Z');
	ck_assert_uint_eq(proc_start_time(pid), start);
	ck_assert(!proc_is(pid, start));
	ck_assert_int_eq(wait_status(pid), 0);
}
END_TEST

START_TEST(test_close_inherited)
{
	/* In a child of its own: the test process needs its descriptors for Check. */
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int a = open("/dev/null", O_RDONLY);
		int keep = open("/dev/null", O_RDONLY);
		int c = dup2(a, 200);
		int bad = 0;

		if (a < 3 || keep < 3 || c != 200)
			_exit(10);
		proc_close_inherited(keep);
		if (fcntl(a, F_GETFD) != -1 || fcntl(c, F_GETFD) != -1)
			bad |= 1;
		if (fcntl(keep, F_GETFD) < 0)
			bad |= 2;
		if (fcntl(0, F_GETFD) < 0 || fcntl(1, F_GETFD) < 0 || fcntl(2, F_GETFD) < 0)
			bad |= 4;
		proc_close_inherited(-1);
		if (fcntl(keep, F_GETFD) != -1)
			bad |= 8;
		_exit(bad);
	}
	int status = wait_status(pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d", status);
}
END_TEST

/* Run as `test_proc --hide-caller-child FD`: hide, tell the parent, wait to be killed. */
static int hide_caller_child(int fd)
{
	if (proc_hide_caller("sandbox-agent supervise") < 0)
		return 1;
	if (write(fd, "x", 1) != 1)
		return 1;
	pause();
	return 0;
}

/* A forked helper no longer shows its parent's argv or environment in /proc. */
START_TEST(test_hide_caller)
{
	char path[64], buf[4096], fdarg[16];
	int ready[2], fd, status;
	ssize_t n;
	pid_t pid;

	ck_assert_int_eq(pipe(ready), 0);
	pid = fork();
	if (pid == 0) {
		char *const argv[] = {"test_proc", "--hide-caller-child", fdarg, NULL};
		char *const envp[] = {"TEST_HIDDEN_CREDENTIAL=sk-hide-me-0123456789", NULL};
		close(ready[0]);
		snprintf(fdarg, sizeof(fdarg), "%d", ready[1]);
		execve("/proc/self/exe", argv, envp);
		_exit(127);
	}
	close(ready[1]);
	ck_assert_int_eq(read(ready[0], buf, 1), 1);
	close(ready[0]);
	snprintf(path, sizeof(path), "/proc/%d/environ", pid);
	fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	n = read(fd, buf, sizeof(buf));
	close(fd);
	ck_assert_int_ge(n, 0);
	ck_assert_ptr_null(memmem(buf, (size_t)n, "sk-hide-me", 10));
	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	ck_assert_int_gt(n, 0);
	buf[n] = '\0';
	ck_assert_str_eq(buf, "sandbox-agent supervise");
	ck_assert_ptr_null(memmem(buf, (size_t)n, "hide-caller-child", 17));
	kill(pid, SIGKILL);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
}
END_TEST

static int oom_score_read(void)
{
	char buf[16] = "";
	FILE *f = fopen("/proc/self/oom_score_adj", "re");
	int v = -99999;

	if (f && fgets(buf, sizeof(buf), f))
		v = atoi(buf);
	if (f)
		fclose(f);
	return v;
}

/* Protected, then the value before put back; a child resets a negative one to 0 (as root). */
START_TEST(test_oom_score_protect_restore)
{
	pid_t pid;
	int status;

	if (geteuid() != 0) {
		fprintf(stderr, "test_oom_score_protect_restore: not root, skipped\n");
		return;
	}
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char before[16];
		int r;
		FILE *f = fopen("/proc/self/oom_score_adj", "we");
		/* Where even raising it is refused, there is nothing to test. */
		if (!f || fputs("150", f) < 0 || fclose(f) != 0 || oom_score_read() != 150)
			_exit(0);
		r = proc_oom_score_protect(before, sizeof(before));
		if (r == -EACCES || r == -EPERM) {
			/* Lowering it needs CAP_SYS_RESOURCE: then nothing changed, and a restore
			 * that raises it still works. */
			if (before[0] || oom_score_read() != 150)
				_exit(16);
			_exit(proc_oom_score_restore("300\n") != 0 || oom_score_read() != 300 ? 17
			                                                                      : 0);
		}
		if (r != 0 || atoi(before) != 150)
			_exit(11);
		if (oom_score_read() != -1000)
			_exit(12);
		if (proc_oom_score_reset() != 0 || oom_score_read() != 0)
			_exit(13);
		if (proc_oom_score_restore(before) != 0 || oom_score_read() != 150)
			_exit(14);
		/* Nothing to restore: left as it is. */
		if (proc_oom_score_restore("") != 0 || oom_score_read() != 150)
			_exit(15);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "step %d failed",
	              WEXITSTATUS(status));
}
END_TEST

static int child_exits_7(void *arg)
{
	/* Deeper than the caller's frame: a stack of its own, or the caller's would be overwritten.
	 */
	volatile char scratch[8192];

	scratch[0] = 7;
	scratch[sizeof(scratch) - 1] = *(const char *)arg;
	return scratch[0] + scratch[sizeof(scratch) - 1] - 1;
}

/*
 * proc_spawn_child: what fn returns is the exit status, the caller goes on with its locals as
 * they were after a child that used 8 KiB of stack; a child that lowers its oom_score_adj
 * protection does so for itself only (the kernel gives a vfork child its own); and the
 * caller's dumpable flag is what it was after a child that switched users.
 */
START_TEST(test_spawn_child)
{
	char one = 1, canary[64];
	bool inside = true;
	int status;
	pid_t pid;

	memset(canary, 0x5a, sizeof(canary));
	pid = proc_spawn_child(-1, 0, &inside, child_exits_7, &one);
	ck_assert_int_gt(pid, 0);
	ck_assert(!inside);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 7);
	for (size_t i = 0; i < sizeof(canary); i++)
		ck_assert_int_eq(canary[i], 0x5a);

	if (geteuid() != 0) {
		fprintf(stderr, "test_spawn_child: not root, oom_score_adj part skipped\n");
		return;
	}
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char before[16], out[32] = "";
		int p[2];
		pid_t c;
		struct err e;

		if (proc_oom_score_protect(before, sizeof(before)) != 0)
			_exit(0); /* no right to lower it here: nothing to test */
		if (pipe2(p, O_CLOEXEC) != 0)
			_exit(10);
		struct proc_spec spec = {.command = "cat /proc/self/oom_score_adj",
		                         .env = base_env,
		                         .output_fd = p[1],
		                         .procs_fd = -1,
		                         .keep_fd = -1};
		if (proc_spawn(&spec, &c, &e) != 0)
			_exit(11);
		close(p[1]);
		if (read(p[0], out, sizeof(out) - 1) <= 0 || waitpid(c, NULL, 0) != c)
			_exit(12);
		if (atoi(out) != 0)
			_exit(13); /* the child kept the caller's protection */
		if (oom_score_read() != -1000)
			_exit(14); /* the child's reset reached the caller */
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "step %d failed",
	              WEXITSTATUS(status));
}
END_TEST

/*
 * A child that becomes another user (and may share our memory until exec, where the kernel
 * marks it not dumpable then) leaves our own dumpable flag as it was.
 */
START_TEST(test_spawn_as_user_keeps_dumpable)
{
	struct run_user nobody;
	struct err e;
	int status;
	pid_t pid, c;

	if (geteuid() != 0) {
		fprintf(stderr, "test_spawn_as_user_keeps_dumpable: not root, skipped\n");
		return;
	}
	ck_assert_msg(proc_user_lookup("nobody", &nobody, &e) == 0, "%s", e.msg);
	ck_assert_int_eq(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), 1);
	struct proc_spec spec = {.command = "exit 0",
	                         .env = base_env,
	                         .user = &nobody,
	                         .output_fd = -1,
	                         .procs_fd = -1,
	                         .keep_fd = -1};
	ck_assert_msg(proc_spawn(&spec, &c, &e) == 0, "%s", e.msg);
	ck_assert_int_eq(waitpid(c, &status, 0), c);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert_int_eq(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), 1);
	/* The same for a child that fails before exec. */
	spec.cwd = "/nonexistent-dir";
	ck_assert_int_lt(proc_spawn(&spec, &pid, &e), 0);
	ck_assert_int_eq(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), 1);
	proc_user_dispose(&nobody);
}
END_TEST

/* A spawn whose variables and exit status come through. Returns 0 or the failed step. */
static int spawn_steps(void)
{
	struct proc_spec spec = {.command = "[ \"$FOO\" = 'bar baz' ] && exit 3",
	                         .env = base_env,
	                         .output_fd = -1,
	                         .procs_fd = -1,
	                         .keep_fd = -1};
	struct err e;
	uint64_t before = clock_now_us(), exec_us = 0, after;
	pid_t c;
	int st, by_child;

	by_child = proc_spawn_at(&spec, &c, &exec_us, &e);
	if (by_child < 0)
		return 12;
	after = clock_now_us();
	if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 3)
		return 13;
	/* Read by a cloned child, or seen by us from a forked one (no clone3): within the call. */
	if (exec_us < before || exec_us > after)
		return 14;
	return by_child ? 0 : 15;
}

/*
 * Where a seccomp filter answers clone3 with ENOSYS (container runtimes' default profiles),
 * the child is forked instead and everything else holds; it cannot say when it exec'd.
 */
static int spawn_steps_forked(void)
{
	int r = spawn_steps();

	return r == 15 ? 0 : r == 0 ? 16 : r;
}

START_TEST(test_spawn_without_clone3)
{
	run_without_syscall("test_spawn_without_clone3", SYS_clone3, spawn_steps_forked);
}
END_TEST

/*
 * Whether a spawn here can share our memory until the exec, as proc.c does on x86-64 with
 * clone3 and CLONE_INTO_CGROUP (Linux 5.7): else its child is forked and cannot say when it
 * exec'd. clone3 with no arguments answers EINVAL where it exists, ENOSYS where it does not.
 */
static bool spawn_can_share(void)
{
#if defined(__x86_64__) && !defined(__ILP32__)
	struct utsname u;
	unsigned major = 0, minor = 0;

	if (uname(&u) < 0 || sscanf(u.release, "%u.%u", &major, &minor) != 2 ||
	    major * 1000 + minor < 5007)
		return false;
	return syscall(SYS_clone3, NULL, 0) < 0 && errno != ENOSYS;
#else
	return false;
#endif
}

/* The exec's start is read by the cloned child, within the call, on the caller's clock. */
START_TEST(test_spawn_reports_exec_start)
{
	int r = spawn_steps();

	if (!spawn_can_share()) {
		ck_assert_int_eq(r, 15); /* forked: 0, and the caller's clock stands */
		return;
	}
	ck_assert_int_eq(r, 0);
}
END_TEST

static Suite *proc_suite(void)
{
	Suite *s = suite_create("proc");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_stat_parse_hostile_comm);
	tcase_add_test(tc, test_stat_read_self_with_odd_name);
	tcase_add_test(tc, test_spawn_environment_fds_signals);
	tcase_add_test(tc, test_oom_score_protect_restore);
	tcase_add_test(tc, test_spawn_child);
	tcase_add_test(tc, test_spawn_without_clone3);
	tcase_add_test(tc, test_spawn_reports_exec_start);
	tcase_add_test(tc, test_spawn_as_user_keeps_dumpable);
	tcase_add_test(tc, test_spawn_new_session);
	tcase_add_test(tc, test_spawn_chdir_failure_is_reported);
	tcase_add_test(tc, test_spawn_exec_failure_is_reported);
	tcase_add_test(tc, test_spawn_refuses_low_keep_fd);
	tcase_add_test(tc, test_spawn_as_other_user);
	tcase_add_test(tc, test_spawn_as_user_chdir_error_names_user);
	tcase_add_test(tc, test_run_user_lookup);
	tcase_add_test(tc, test_spawn_uses_groups_looked_up_with_user);
	tcase_add_test(tc, test_spawn_refuses_a_user_without_groups);
	tcase_add_test(tc, test_describe_real_statuses);
	tcase_add_test(tc, test_changed_start_time_is_not_signalled);
	tcase_add_test(tc, test_zombie_is_not_running);
	tcase_add_test(tc, test_signal_wait);
	tcase_add_test(tc, test_signal_wait_without_pidfd);
	tcase_add_test(tc, test_close_inherited);
	tcase_add_test(tc, test_hide_caller);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	SRunner *sr;
	int failed;

	if (argc == 3 && strcmp(argv[1], "--hide-caller-child") == 0)
		return hide_caller_child(atoi(argv[2]));
	sr = srunner_create(proc_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
