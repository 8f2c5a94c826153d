/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The supervisor with real processes: `python3 -m http.server` or small shell servers, a
 * forwarder on loopback, real signals.
 *
 * Cleanup even when a test fails: every server gets SA_TEST_OWNER=<test pid> in its
 * environment, and each supervisor's pid and start time go to a watchdog outside the test's
 * process tree. When the test process ends, however it ends, the watchdog kills those.
 * On the normal path each test stops what it started itself.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <json-c/json.h>
#include <limits.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "file.h"
#include "listen_check.h"
#include "proc.h"
#include "procset.h"
#include "ready.h"
#include "scrub.h"
#include "supervisor.h"

#define SECRET "hunter2-correct-horse-battery"
#define GH_TOKEN "ghp_0123456789abcdefghijABCDEFGHIJ012345"

/* ---- the watchdog ---- */

struct wd_record {
	pid_t pid;
	uint64_t start;
};

#include "test_watchdog.h"

static int wd_fd = -1;

static void watchdog_setup(void)
{
	int p[2];
	pid_t mid;

	snprintf(owner_env, sizeof(owner_env), "SA_TEST_OWNER=%d", (int)getpid());
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	mid = fork();
	ck_assert_int_ge(mid, 0);
	if (mid == 0) {
		struct wd_record recs[64], r;
		size_t n = 0;

		setsid(); /* out of the group Check kills after the test */
		if (fork() != 0)
			_exit(0);
		proc_close_inherited(p[0]);
		while (read(p[0], &r, sizeof(r)) == (ssize_t)sizeof(r))
			if (n < 64)
				recs[n++] = r;
		for (size_t i = 0; i < n; i++)
			if (proc_is(recs[i].pid, recs[i].start))
				kill(recs[i].pid, SIGKILL);
		kill_owned(owner_env);
		_exit(0);
	}
	close(p[0]);
	ck_assert_int_eq(waitpid(mid, NULL, 0), mid);
	wd_fd = p[1];
}

static void watchdog_add(pid_t pid, uint64_t start)
{
	struct wd_record r = {pid, start};

	ck_assert_int_eq(write(wd_fd, &r, sizeof(r)), (ssize_t)sizeof(r));
}

/* ---- helpers ---- */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct fixture {
	char dir[64];
	char log[128];
	char status[128];
	char *env[5];
	char pyenv[32];
};

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void fixture_init(struct fixture *f)
{
	snprintf(f->dir, sizeof(f->dir), "/tmp/sa-supervisor-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(f->dir));
	snprintf(f->log, sizeof(f->log), "%s/server.log", f->dir);
	snprintf(f->status, sizeof(f->status), "%s/supervisor.json", f->dir);
	snprintf(f->pyenv, sizeof(f->pyenv), "PYTHONUNBUFFERED=1");
	f->env[0] = (char *)"PATH=/usr/bin:/bin";
	f->env[1] = f->pyenv;
	f->env[2] = owner_env;
	f->env[3] = NULL;
}

static void fixture_dispose(struct fixture *f)
{
	nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static struct supervisor_spec spec_for(struct fixture *f, const char *command)
{
	struct supervisor_spec spec = {
	    .command = command,
	    .cwd = f->dir,
	    .env = f->env,
	    .user = NULL,
	    .log_path = f->log,
	    .status_path = f->status,
	    .scrub = NULL,
	    .cgroup_path = "",
	    .listen_addr = NULL,
	    .log_max_bytes = 1 << 20,
	    .grace_ms = 2000,
	};
	return spec;
}

static void start_ok(const struct supervisor_spec *spec, struct supervisor_info *info)
{
	uint64_t before = clock_now_us(), after;
	struct err e;

	err_clear(&e);
	ck_assert_msg(supervisor_start(spec, info, &e) == 0, "%s", e.msg);
	after = clock_now_us();
	watchdog_add(info->supervisor_pid, info->supervisor_start);
	/* When the server exec'd, on the caller's clock: the start of the app's own time. */
	ck_assert_uint_gt(info->server_spawned_us, before);
	ck_assert_uint_lt(info->server_spawned_us, after);
	ck_assert_int_gt(info->supervisor_pid, 1);
	ck_assert_int_gt(info->server_pid, 1);
	ck_assert_uint_gt(info->supervisor_start, 0);
	ck_assert_uint_gt(info->server_start, 0);
	ck_assert_int_ne(info->supervisor_pid, info->server_pid);
}

/* A supervisor prepared for spec, watched so that a failed test leaves none behind. */
static void prepare_ok(const struct supervisor_spec *spec, struct supervisor_pending *pending)
{
	struct err e;

	err_clear(&e);
	ck_assert_msg(supervisor_prepare(spec, pending, &e) == 0, "%s", e.msg);
	watchdog_add(pending->pid, pending->start);
}

static void wait_gone(pid_t pid, uint64_t start, double seconds)
{
	double deadline = now() + seconds;

	while (proc_is(pid, start)) {
		ck_assert_msg(now() < deadline, "process %d is still there", (int)pid);
		usleep(10000);
	}
}

static void stop(const struct supervisor_info *info)
{
	ck_assert_int_eq(kill(info->supervisor_pid, SIGTERM), 0);
	wait_gone(info->supervisor_pid, info->supervisor_start, 30);
	ck_assert(!proc_is(info->server_pid, info->server_start));
}

static char *file_text(const char *path)
{
	char *buf = NULL;
	struct err e;

	if (file_read_capped(AT_FDCWD, path, 1 << 24, READ_MISSING_OK, &buf, NULL, &e) != 0)
		return NULL;
	return buf;
}

static void wait_file_has(const char *path, const char *needle, double seconds)
{
	double deadline = now() + seconds;

	for (;;) {
		char *t = file_text(path);
		bool found = t && strstr(t, needle);

		free(t);
		if (found)
			return;
		ck_assert_msg(now() < deadline, "%s never contained \"%s\"", path, needle);
		usleep(10000);
	}
}

/* Wait until supervisor.json says the server exited; returns the status text. */
static void wait_exited(const char *status_path, char *buf, size_t len)
{
	double deadline = now() + 20;

	for (;;) {
		struct err e;
		int exited = 0;

		err_clear(&e);
		if (supervisor_read_status(status_path, &exited, buf, len, &e) == 0 && exited)
			return;
		ck_assert_msg(now() < deadline, "the server's exit was never recorded");
		usleep(10000);
	}
}

static struct json_object *status_json(const char *path)
{
	struct json_object *o = json_object_from_file(path);

	ck_assert_msg(o != NULL, "%s is not JSON", path);
	return o;
}

static struct json_object *get(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	ck_assert_msg(json_object_object_get_ex(o, key, &v), "no %s", key);
	return v;
}

static const char *get_str(struct json_object *o, const char *key)
{
	struct json_object *v = get(o, key);

	ck_assert_msg(json_object_is_type(v, json_type_string), "%s is not a string", key);
	return json_object_get_string(v);
}

static uint16_t free_port(void)
{
	uint16_t port = 0;
	struct err e;

	err_clear(&e);
	ck_assert_msg(listen_check_pick_free_port(&port, &e) == 0, "%s", e.msg);
	return port;
}

static long get_status(uint16_t port, const char *path)
{
	long status = 0;
	struct err e;

	err_clear(&e);
	(void)ready_probe("127.0.0.1", port, path, &status, NULL, &e);
	return status;
}

static int connect_port(uint16_t port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
	                         .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	                         .sin_port = htons(port)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int r = connect(fd, (struct sockaddr *)&sa, sizeof(sa));

	close(fd);
	return r;
}

static void fd_target(pid_t pid, int fd, char *buf, size_t len)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
	n = readlink(path, buf, len - 1);
	buf[n < 0 ? 0 : n] = '\0';
}

/* ---- tests ---- */

START_TEST(test_http_server_through_forwarder)
{
	struct fixture f;
	struct supervisor_info info;
	struct proc_stat st, self;
	uint16_t sport = free_port(), fport = free_port();
	char cmd[256], buf[PATH_MAX], want[64];
	double deadline;
	long status = 0;

	while (fport == sport)
		fport = free_port();
	fixture_init(&f);
	snprintf(cmd, sizeof(cmd), "exec /usr/bin/python3 -m http.server --bind 127.0.0.1 %u",
	         sport);
	struct supervisor_spec spec = spec_for(&f, cmd);
	spec.listen_addr = "127.0.0.1";
	spec.listen_port = fport;
	spec.target_port = sport;
	start_ok(&spec, &info);

	/* Detached: not our child, another session, cwd /, 0-2 on /dev/null. */
	ck_assert_int_ne(proc_parent(info.supervisor_pid), getpid());
	ck_assert_int_eq(proc_stat_read(info.supervisor_pid, &st), 0);
	ck_assert_int_eq(proc_stat_read(getpid(), &self), 0);
	ck_assert_int_ne(st.session, self.session);
	ck_assert_int_eq(proc_parent(info.server_pid), info.supervisor_pid);
	ck_assert_int_eq(getpgid(info.server_pid), info.server_pid);
	snprintf(buf, sizeof(buf), "/proc/%d/cwd", (int)info.supervisor_pid);
	ck_assert_int_eq(readlink(buf, want, sizeof(want) - 1), 1);
	ck_assert_int_eq(want[0], '/');
	for (int fd = 0; fd < 3; fd++) {
		fd_target(info.supervisor_pid, fd, buf, sizeof(buf));
		ck_assert_str_eq(buf, "/dev/null");
	}

	/* GET through the forwarder, once python listens. */
	deadline = now() + 20;
	while ((status = get_status(fport, "/")) != 200) {
		ck_assert_msg(now() < deadline, "no 200 through the forwarder (last %ld)", status);
		usleep(20000);
	}
	ck_assert_int_eq(get_status(fport, "/no-such-file"), 404);

	struct json_object *o = status_json(f.status);
	ck_assert_str_eq(get_str(o, "state"), "running");
	ck_assert_int_eq(json_object_get_int(get(o, "supervisor_pid")), info.supervisor_pid);
	ck_assert_int_eq(json_object_get_int(get(o, "server_pid")), info.server_pid);
	ck_assert_uint_eq((uint64_t)json_object_get_int64(get(o, "server_start")),
	                  info.server_start);
	snprintf(want, sizeof(want), "127.0.0.1:%u", fport);
	ck_assert_str_eq(get_str(get(o, "forward"), "listen"), want);
	ck_assert_int_eq(json_object_get_int(get(get(o, "forward"), "target")), sport);
	json_object_put(o);
	{
		int exited = -1;
		struct err e;
		ck_assert_int_eq(supervisor_read_status(f.status, &exited, buf, sizeof(buf), &e),
		                 0);
		ck_assert_int_eq(exited, 0);
		ck_assert_str_eq(buf, "running");
	}
	/* python's request log went through the pipe into server.log. */
	wait_file_has(f.log, "\"GET /no-such-file HTTP/1.1\" 404", 10);

	stop(&info);
	o = status_json(f.status);
	ck_assert_str_eq(get_str(o, "state"), "exited");
	ck_assert_str_eq(get_str(o, "supervisor"), "exited");
	ck_assert(json_object_get_boolean(get(o, "stopped")));
	ck_assert_str_eq(get_str(o, "status"), "was killed by signal SIGTERM");
	json_object_put(o);
	/* The forwarder went with it. */
	ck_assert_int_lt(connect_port(fport), 0);
	fixture_dispose(&f);
}
END_TEST

START_TEST(test_caller_descriptors_not_held)
{
	struct fixture f;
	struct supervisor_info info;
	struct pollfd p = {.events = POLLIN};
	int fds[2];
	char c;

	fixture_init(&f);
	/* Not close-on-exec: the supervisor never execs, it must close it itself. */
	ck_assert_int_eq(pipe(fds), 0);
	struct supervisor_spec spec = spec_for(&f, "exec sleep 1000");
	start_ok(&spec, &info);
	close(fds[1]);
	p.fd = fds[0];
	ck_assert_int_eq(poll(&p, 1, 20000), 1);
	ck_assert_int_eq(read(fds[0], &c, 1), 0);
	close(fds[0]);
	stop(&info);
	fixture_dispose(&f);
}
END_TEST

START_TEST(test_server_killed_is_recorded)
{
	struct fixture f;
	struct supervisor_info info;
	char buf[256];

	fixture_init(&f);
	struct supervisor_spec spec =
	    spec_for(&f, "echo 'server says hello'; echo 'second line' >&2; exec sleep 1000");
	start_ok(&spec, &info);
	wait_file_has(f.log, "second line", 10);
	ck_assert_int_eq(kill(info.server_pid, SIGKILL), 0);
	wait_exited(f.status, buf, sizeof(buf));
	ck_assert_str_eq(buf, "was killed by signal SIGKILL");

	struct json_object *o = status_json(f.status);
	ck_assert_str_eq(get_str(o, "state"), "exited");
	ck_assert_str_eq(get_str(o, "signal"), "SIGKILL");
	ck_assert(json_object_is_type(get(o, "exit_code"), json_type_null));
	ck_assert(!json_object_get_boolean(get(o, "stopped")));
	ck_assert_str_eq(get_str(o, "supervisor"), "running");
	ck_assert_str_eq(get_str(o, "log_tail"), "server says hello\nsecond line\n");
	json_object_put(o);
	/* Never restarted; the supervisor stays. */
	ck_assert(proc_is(info.supervisor_pid, info.supervisor_start));
	stop(&info);
	fixture_dispose(&f);
}
END_TEST

START_TEST(test_exit_code_and_orphans_reaped)
{
	struct fixture f;
	struct supervisor_info info;
	char cmd[512], orphan_file[128], proc_dir[64], buf[256];
	double deadline;
	pid_t orphan = 0;

	fixture_init(&f);
	snprintf(orphan_file, sizeof(orphan_file), "%s/orphan.pid", f.dir);
	/* The inner sh leaves its sleep behind: an orphan the supervisor adopts and reaps. */
	snprintf(cmd, sizeof(cmd),
	         "sh -c 'sleep 3 & echo $! > %s.tmp; mv %s.tmp %s'; echo bye; exit 3", orphan_file,
	         orphan_file, orphan_file);
	struct supervisor_spec spec = spec_for(&f, cmd);
	start_ok(&spec, &info);
	wait_exited(f.status, buf, sizeof(buf));
	ck_assert_str_eq(buf, "exited with status 3");

	struct json_object *o = status_json(f.status);
	ck_assert_int_eq(json_object_get_int(get(o, "exit_code")), 3);
	ck_assert(json_object_is_type(get(o, "signal"), json_type_null));
	ck_assert_str_eq(get_str(o, "log_tail"), "bye\n");
	json_object_put(o);

	wait_file_has(orphan_file, "\n", 10);
	char *t = file_text(orphan_file);
	orphan = (pid_t)atoi(t);
	free(t);
	ck_assert_int_gt(orphan, 1);
	ck_assert_int_eq(proc_parent(orphan), info.supervisor_pid);
	/* When it ends it is reaped: no zombie left behind. */
	snprintf(proc_dir, sizeof(proc_dir), "/proc/%d", (int)orphan);
	deadline = now() + 20;
	while (access(proc_dir, F_OK) == 0) {
		ck_assert_msg(now() < deadline, "orphan %d was not reaped", (int)orphan);
		usleep(20000);
	}
	ck_assert(proc_is(info.supervisor_pid, info.supervisor_start));
	stop(&info);
	fixture_dispose(&f);
}
END_TEST

START_TEST(test_secrets_redacted_in_log)
{
	struct fixture f;
	struct supervisor_info info;
	struct scrubber *sc = scrub_new();
	char buf[256];

	ck_assert_ptr_nonnull(sc);
	ck_assert_int_eq(scrub_add(sc, SECRET, strlen(SECRET)), 0);
	fixture_init(&f);
	struct supervisor_spec spec =
	    spec_for(&f, "echo 'password is " SECRET " and token " GH_TOKEN
	                 "'; echo 'done'; exec sleep 1000");
	spec.scrub = sc;
	start_ok(&spec, &info);
	wait_file_has(f.log, "password is", 10);
	ck_assert_int_eq(kill(info.server_pid, SIGKILL), 0);
	wait_exited(f.status, buf, sizeof(buf));

	char *t = file_text(f.log);
	ck_assert_ptr_nonnull(t);
	ck_assert_str_eq(t, "password is [REDACTED] and token [REDACTED]\ndone\n");
	free(t);
	struct json_object *o = status_json(f.status);
	ck_assert_str_eq(get_str(o, "log_tail"),
	                 "password is [REDACTED] and token [REDACTED]\ndone\n");
	json_object_put(o);
	t = file_text(f.status);
	ck_assert(!strstr(t, SECRET));
	free(t);
	stop(&info);
	scrub_free(sc);
	fixture_dispose(&f);
}
END_TEST

/*
 * Prepared first, launched later with a secret the caller learnt in between (the MCP token):
 * the supervisor's scrubber masks it, though the supervisor was forked before it was known.
 */
START_TEST(test_prepared_then_launched_with_a_secret)
{
	struct fixture f;
	struct supervisor_info info;
	struct supervisor_pending pending;
	struct scrubber *sc = scrub_new();
	struct err e;
	char buf[256];

	ck_assert_ptr_nonnull(sc);
	fixture_init(&f);
	struct supervisor_spec spec =
	    spec_for(&f, "echo 'the token is " SECRET "'; echo 'done'; exec sleep 1000");
	spec.scrub = sc;
	prepare_ok(&spec, &pending);
	ck_assert(proc_is(pending.pid, pending.start));
	/* Waiting for its go: no log, no supervisor.json, no server yet. */
	usleep(50000);
	ck_assert_int_ne(access(f.log, F_OK), 0);
	ck_assert_int_ne(access(f.status, F_OK), 0);
	/* Known only now, and only to the caller's scrubber. */
	ck_assert_int_eq(scrub_add(sc, SECRET, strlen(SECRET)), 0);
	ck_assert_msg(supervisor_launch(&pending, SECRET, &info, &e) == 0, "%s", e.msg);
	ck_assert_int_eq(pending.fd, -1);
	ck_assert_int_eq(info.supervisor_pid, pending.pid);
	ck_assert_uint_eq(info.supervisor_start, pending.start);
	wait_file_has(f.log, "done", 10);
	ck_assert_int_eq(kill(info.server_pid, SIGKILL), 0);
	wait_exited(f.status, buf, sizeof(buf));
	char *t = file_text(f.log);
	ck_assert_ptr_nonnull(t);
	ck_assert_str_eq(t, "the token is [REDACTED]\ndone\n");
	free(t);
	stop(&info);
	/* A dismiss after the launch does nothing: the supervisor it started is not touched. */
	supervisor_dismiss(&pending);
	scrub_free(sc);
	fixture_dispose(&f);
}
END_TEST

/* Prepared, then dismissed (the manifest failed): it ends, having started and written nothing. */
START_TEST(test_prepared_then_dismissed)
{
	struct fixture f;
	struct supervisor_pending pending;

	fixture_init(&f);
	struct supervisor_spec spec = spec_for(&f, "echo started >started; exec sleep 1000");
	prepare_ok(&spec, &pending);
	supervisor_dismiss(&pending);
	ck_assert_int_eq(pending.fd, -1);
	wait_gone(pending.pid, pending.start, 5);
	ck_assert_int_ne(access(f.log, F_OK), 0);
	ck_assert_int_ne(access(f.status, F_OK), 0);
	char started[192];
	snprintf(started, sizeof(started), "%s/started", f.dir);
	ck_assert_int_ne(access(started, F_OK), 0);
	/* So does an end-of-file alone, as when the caller dies. */
	prepare_ok(&spec, &pending);
	close(pending.fd);
	wait_gone(pending.pid, pending.start, 5);
	ck_assert_int_ne(access(f.status, F_OK), 0);
	fixture_dispose(&f);
}
END_TEST

/* Killed before its go (the out-of-memory killer, say): the launch says so, with ESRCH. */
START_TEST(test_prepared_then_killed)
{
	struct fixture f;
	struct supervisor_pending pending;
	struct supervisor_info info;
	struct err e;

	fixture_init(&f);
	struct supervisor_spec spec = spec_for(&f, "exec sleep 1000");
	prepare_ok(&spec, &pending);
	ck_assert_int_eq(kill(pending.pid, SIGKILL), 0);
	wait_gone(pending.pid, pending.start, 5);
	ck_assert_int_lt(supervisor_launch(&pending, SECRET, &info, &e), 0);
	ck_assert_int_eq(e.code, ESRCH);
	ck_assert_msg(strstr(e.msg, "before it was told to start the server"), "%s", e.msg);
	ck_assert_int_eq(pending.fd, -1);
	ck_assert_int_ne(access(f.status, F_OK), 0);
	ck_assert_int_ne(access(f.log, F_OK), 0);
	fixture_dispose(&f);
}
END_TEST

/* A server that ignores TERM, with a child in its group and a setsid'd daemon. */
START_TEST(test_sigterm_stops_everything)
{
	struct fixture f;
	struct supervisor_info info;
	char cmd[512], child_file[128], daemon_file[128];
	pid_t child, daemon, pid;
	uint64_t child_start, daemon_start;
	int status;

	/* The supervisor is re-parented to us, so its exit status can be read. */
	ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	fixture_init(&f);
	snprintf(child_file, sizeof(child_file), "%s/child.pid", f.dir);
	snprintf(daemon_file, sizeof(daemon_file), "%s/daemon.pid", f.dir);
	/* The daemon writes its pid once it is in its own session. */
	snprintf(cmd, sizeof(cmd),
	         "trap '' TERM; sleep 1000 & echo $! > %s; "
	         "setsid sh -c 'echo $$ > %s.tmp; mv %s.tmp %s; exec sleep 1001' & echo up; wait",
	         child_file, daemon_file, daemon_file, daemon_file);
	struct supervisor_spec spec = spec_for(&f, cmd);
	spec.grace_ms = 300;
	start_ok(&spec, &info);
	wait_file_has(f.log, "up", 10);
	wait_file_has(daemon_file, "\n", 10);
	char *t = file_text(child_file);
	child = (pid_t)atoi(t);
	free(t);
	t = file_text(daemon_file);
	daemon = (pid_t)atoi(t);
	free(t);
	child_start = proc_start_time(child);
	daemon_start = proc_start_time(daemon);
	ck_assert(proc_is(child, child_start));
	ck_assert(proc_is(daemon, daemon_start));
	ck_assert_int_eq(getpgid(child), info.server_pid);
	ck_assert_int_ne(getpgid(daemon), info.server_pid);

	ck_assert_int_eq(kill(info.supervisor_pid, SIGTERM), 0);
	while ((pid = waitpid(info.supervisor_pid, &status, 0)) < 0 && errno == EINTR)
		;
	ck_assert_int_eq(pid, info.supervisor_pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	ck_assert(!proc_is(info.server_pid, info.server_start));
	ck_assert(!proc_is(child, child_start));
	ck_assert(!proc_is(daemon, daemon_start));

	struct json_object *o = status_json(f.status);
	ck_assert_str_eq(get_str(o, "state"), "exited");
	ck_assert_str_eq(get_str(o, "signal"), "SIGKILL");
	ck_assert(json_object_get_boolean(get(o, "stopped")));
	ck_assert_str_eq(get_str(o, "supervisor"), "exited");
	json_object_put(o);
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	fixture_dispose(&f);
}
END_TEST

START_TEST(test_spawn_failure_reported)
{
	struct fixture f;
	struct supervisor_info info = {0};
	struct err e;
	int status;

	ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	fixture_init(&f);
	struct supervisor_spec spec = spec_for(&f, "exec sleep 1000");
	spec.cwd = "/nonexistent-sa-dir";
	err_clear(&e);
	ck_assert_int_lt(supervisor_start(&spec, &info, &e), 0);
	ck_assert_int_eq(e.cls, ERR_FAILED);
	ck_assert_msg(strstr(e.msg, "chdir /nonexistent-sa-dir: No such file or directory"), "%s",
	              e.msg);
	ck_assert_int_eq(info.supervisor_pid, 0);
	/* The supervisor (re-parented to us) is gone and reaped by the failed start: no child. */
	ck_assert_int_eq(waitpid(-1, &status, WNOHANG), -1);
	ck_assert_int_eq(errno, ECHILD);
	ck_assert_int_eq(access(f.status, F_OK), -1);
	fixture_dispose(&f);
}
END_TEST

START_TEST(test_port_in_use_reported)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);
	struct fixture f;
	struct supervisor_info info = {0};
	char cmd[256], marker[128], want[64];
	struct err e;
	int lfd, status;

	ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_eq(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(lfd, 1), 0);
	ck_assert_int_eq(getsockname(lfd, (struct sockaddr *)&sa, &len), 0);
	fixture_init(&f);
	snprintf(marker, sizeof(marker), "%s/started", f.dir);
	snprintf(cmd, sizeof(cmd), "touch %s; exec sleep 1000", marker);
	struct supervisor_spec spec = spec_for(&f, cmd);
	spec.listen_addr = "127.0.0.1";
	spec.listen_port = ntohs(sa.sin_port);
	spec.target_port = 1;
	err_clear(&e);
	ck_assert_int_lt(supervisor_start(&spec, &info, &e), 0);
	snprintf(want, sizeof(want), "port %u is in use", ntohs(sa.sin_port));
	ck_assert_msg(strstr(e.msg, want), "%s", e.msg);
	ck_assert_int_eq(e.code, EADDRINUSE);
	ck_assert_int_eq(waitpid(-1, &status, WNOHANG), -1);
	ck_assert_int_eq(errno, ECHILD);
	/* The server was never started. */
	ck_assert_int_eq(access(marker, F_OK), -1);
	close(lfd);
	fixture_dispose(&f);
}
END_TEST

START_TEST(test_log_capped_and_disk_full)
{
	struct fixture f;
	struct supervisor_info info;
	char path[160], buf[256];
	struct stat st;

	fixture_init(&f);
	/* 40 KiB of output into a log capped at 8 KiB: rotated, never larger than the cap. */
	struct supervisor_spec spec =
	    spec_for(&f, "i=0; while [ $i -lt 1000 ]; do echo \"line $i of the output....\"; "
	                 "i=$((i+1)); done; echo last; exec sleep 1000");
	spec.log_max_bytes = 8192;
	start_ok(&spec, &info);
	wait_file_has(f.log, "last", 10);
	ck_assert_int_eq(stat(f.log, &st), 0);
	ck_assert_int_le(st.st_size, 8192);
	snprintf(path, sizeof(path), "%s.1", f.log);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_le(st.st_size, 8192);
	stop(&info);

	/* A full disk is recorded in the state. */
	spec = spec_for(&f, "echo hello; exec sleep 1000");
	spec.log_path = "/dev/full";
	start_ok(&spec, &info);
	wait_file_has(f.status, "disk full writing /dev/full", 10);
	ck_assert_int_eq(kill(info.server_pid, SIGKILL), 0);
	wait_exited(f.status, buf, sizeof(buf));
	stop(&info);
	fixture_dispose(&f);
}
END_TEST

/* The server joins the boot's cgroup and runs as the run user; the supervisor stays outside. */
START_TEST(test_cgroup_and_run_user)
{
	struct fixture f;
	struct supervisor_info info;
	struct run_user nobody = {0};
	struct procset *ps = NULL;
	char name[64], path[64], line[256], want[64];
	bool uid_seen = false;
	struct err e;
	FILE *st;

	if (geteuid() != 0)
		return; /* needs root for both the cgroup and the user switch */
	snprintf(name, sizeof(name), "test-%d-supervisor", (int)getpid());
	err_clear(&e);
	ck_assert_msg(procset_create(name, &ps, &e) == 0, "%s", e.msg);
	ck_assert_int_eq(proc_user_lookup("nobody", &nobody, &e), 0);
	fixture_init(&f);
	struct supervisor_spec spec = spec_for(&f, "echo as $(id -u); exec sleep 1000");
	spec.cwd = "/"; /* the fixture's directory is 0700 root */
	spec.user = &nobody;
	spec.cgroup_path = procset_cgroup_path(ps);
	start_ok(&spec, &info);
	snprintf(want, sizeof(want), "as %u\n", (unsigned)nobody.uid);
	wait_file_has(f.log, want, 10);
	snprintf(path, sizeof(path), "/proc/%d/status", (int)info.server_pid);
	st = fopen(path, "r");
	ck_assert_ptr_nonnull(st);
	snprintf(want, sizeof(want), "Uid:\t%u\t%u\t%u", (unsigned)nobody.uid, (unsigned)nobody.uid,
	         (unsigned)nobody.uid);
	while (fgets(line, sizeof(line), st))
		if (strncmp(line, want, strlen(want)) == 0)
			uid_seen = true;
	fclose(st);
	ck_assert_msg(uid_seen, "the server does not run as nobody");
	if (procset_backend_of(ps) != PROCSET_NO_CGROUP) {
		ck_assert(procset_contains(ps, info.server_pid));
		ck_assert(!procset_contains(ps, info.supervisor_pid));
	}
	stop(&info);
	procset_destroy(ps);
	procset_free(ps);
	proc_user_dispose(&nobody);
	fixture_dispose(&f);
}
END_TEST

/* The supervisor killed outright: the file still says running, the reader sees through it. */
START_TEST(test_status_after_supervisor_killed)
{
	struct fixture f;
	struct supervisor_info info;
	char buf[256];
	int exited = -1;
	struct err e;

	fixture_init(&f);
	struct supervisor_spec spec = spec_for(&f, "exec sleep 1000");
	start_ok(&spec, &info);
	ck_assert_int_eq(supervisor_read_status(f.status, &exited, buf, sizeof(buf), &e), 0);
	ck_assert_int_eq(exited, 0);
	ck_assert_int_eq(kill(info.supervisor_pid, SIGKILL), 0);
	wait_gone(info.supervisor_pid, info.supervisor_start, 10);
	/* The server alone is still running, not exited. */
	ck_assert_int_eq(supervisor_read_status(f.status, &exited, buf, sizeof(buf), &e), 0);
	ck_assert_int_eq(exited, 0);
	ck_assert_int_eq(proc_signal(info.server_pid, info.server_start, SIGKILL), 0);
	wait_gone(info.server_pid, info.server_start, 10);
	ck_assert_int_eq(supervisor_read_status(f.status, &exited, buf, sizeof(buf), &e), 0);
	ck_assert_int_eq(exited, 1);
	ck_assert_str_eq(buf, "exited (not recorded: its supervisor is gone)");
	fixture_dispose(&f);
}
END_TEST

static Suite *supervisor_suite(void)
{
	Suite *s = suite_create("supervisor");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, watchdog_setup, NULL);
	tcase_add_test(tc, test_http_server_through_forwarder);
	tcase_add_test(tc, test_caller_descriptors_not_held);
	tcase_add_test(tc, test_server_killed_is_recorded);
	tcase_add_test(tc, test_exit_code_and_orphans_reaped);
	tcase_add_test(tc, test_secrets_redacted_in_log);
	tcase_add_test(tc, test_prepared_then_launched_with_a_secret);
	tcase_add_test(tc, test_prepared_then_dismissed);
	tcase_add_test(tc, test_prepared_then_killed);
	tcase_add_test(tc, test_sigterm_stops_everything);
	tcase_add_test(tc, test_spawn_failure_reported);
	tcase_add_test(tc, test_port_in_use_reported);
	tcase_add_test(tc, test_log_capped_and_disk_full);
	tcase_add_test(tc, test_cgroup_and_run_user);
	tcase_add_test(tc, test_status_after_supervisor_killed);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(supervisor_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
