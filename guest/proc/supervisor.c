/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The supervisor process (supervisor.h says what it does and how long it lives).
 *
 * supervisor_prepare() forks; the child calls setsid() and forks again, so the supervisor is in
 * a session of its own and is re-parented away from the caller as soon as the middle process
 * exits. It sets itself up and waits for supervisor_launch()'s go, then reports back -- its
 * identity and the server's, or why it could not start -- and runs one epoll loop: a signalfd
 * (SIGCHLD, SIGTERM, SIGINT, SIGHUP), the server's output pipe, the forwarder, and a timerfd for
 * the grace period.
 */
#include "supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <poll.h>
#include <signal.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "clock.h"
#include "json_strict.h"
#include "file.h"
#include "forwarder.h"
#include "log.h"
#include "logfile.h"
#include "procset.h"
#include "sigfd.h"

#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

#define STATUS_MAX_BYTES (1u << 20)
/* The forwarder's connections need descriptors; the server keeps the caller's limit. */
#define SUP_NOFILE_WANT 8192u

/*
 * The caller and the supervisor talk over a socket pair: first the supervisor's identity
 * (struct sup_hello) as soon as it is forked; then, once the caller says go (a 32-bit length
 * and that many bytes of a secret for the scrubber, 0 for none), how the server's start went
 * (struct sup_report). End-of-file instead of go dismisses the supervisor.
 */
struct sup_hello {
	pid_t supervisor_pid;
	uint64_t supervisor_start;
};

struct sup_report {
	int ok;
	int cls;
	int code;
	pid_t supervisor_pid;
	uint64_t supervisor_start;
	pid_t server_pid;
	uint64_t server_start;
	uint64_t server_spawned_us;
	char msg[ERR_MSG_MAX];
};

struct sup {
	const struct supervisor_spec *spec;
	pid_t pid;
	uint64_t start;
	int epfd;
	int sigfd;
	int out_fd; /* read end of the server's stdout/stderr, -1 after end-of-file */
	int timer_fd;
	struct ev_handler sig_h;
	struct ev_handler out_h;
	struct ev_handler timer_h;
	struct forwarder *fw;
	struct logfile *log;
	struct scrub_stream *stream;
	struct procset *procs;
	pid_t server_pid;
	uint64_t server_start;
	uint64_t server_spawned_us; /* CLOCK_MONOTONIC: the server's exec began */
	bool server_running;
	int server_status;
	uint64_t oom_base; /* the set's out-of-memory kills when the server started */
	bool stopping;     /* SIGTERM received: the server's group was sent TERM */
	bool grace_armed;  /* the timer runs */
	bool grace_over;   /* the timer fired */
	bool quit;         /* leave the loop: stop the rest and exit */
	bool status_written;
	char log_error[ERR_MSG_MAX];
	char *secret; /* the caller's, until it is in the scrubber (sodium_malloc'd) */
	uint32_t secret_len;
};

/* ---- supervisor.json ---- */

static struct json_object *json_str_or_null(const char *s)
{
	return s ? json_object_new_string(s) : NULL;
}

/*
 * The kernel killed a process of the set for memory since the server started: the server's
 * end is told as that, "was killed: out of memory (limit 2 GiB)".
 */
static bool supervisor_oom_describe(const struct sup *s, char *buf, size_t len)
{
	bool killed = WIFSIGNALED(s->server_status) && WTERMSIG(s->server_status) == SIGKILL;
	struct cgroup_limits_hits h;
	char limit[32] = "";

	procset_limit_hits(s->procs, &h);
	/* The kernel counts the kill just after it sends SIGKILL: a reap can come first. */
	for (int i = 0; killed && h.oom_kills <= s->oom_base && i < 10; i++) {
		usleep(5000);
		procset_limit_hits(s->procs, &h);
	}
	if (h.oom_kills <= s->oom_base)
		return false;
	if (h.now.memory_max)
		cgroup_limits_format_size(h.now.memory_max, limit, sizeof(limit));
	if (killed)
		snprintf(buf, len, "was killed: out of memory%s%s%s", *limit ? " (limit " : "",
		         limit, *limit ? ")" : "");
	else {
		size_t n = strlen(buf);
		snprintf(buf + n, len - n, " after a process of it was killed: out of memory%s%s%s",
		         *limit ? " (limit " : "", limit, *limit ? ")" : "");
	}
	return true;
}

/* supervisor.json as things are now; -1 with err when it cannot be written. */
static int status_write_or_fail(struct sup *s, bool final, struct err *err)
{
	const struct supervisor_spec *spec = s->spec;
	_cleanup_json_ struct json_object *o = json_object_new_object();
	_cleanup_free_ char *tail = NULL;
	bool exited = s->server_pid > 0 && !s->server_running;
	char status[128], sig[32];
	struct err e;

	if (!o)
		return err_oom(err);
	json_object_object_add(o, "supervisor_pid", json_object_new_int(s->pid));
	json_object_object_add(o, "supervisor_start", json_object_new_int64((int64_t)s->start));
	json_object_object_add(o, "server_pid",
	                       s->server_pid > 0 ? json_object_new_int(s->server_pid) : NULL);
	json_object_object_add(o, "server_start",
	                       s->server_pid > 0 ? json_object_new_int64((int64_t)s->server_start)
	                                         : NULL);
	json_object_object_add(o, "state",
	                       json_object_new_string(s->server_pid <= 0 ? "starting"
	                                              : exited           ? "exited"
	                                                                 : "running"));
	if (exited) {
		bool oom = false;

		proc_describe_status(s->server_status, status, sizeof(status));
		if (s->procs)
			oom = supervisor_oom_describe(s, status, sizeof(status));
		json_object_object_add(o, "status", json_object_new_string(status));
		json_object_object_add(o, "out_of_memory", json_object_new_boolean(oom));
		json_object_object_add(o, "exit_code",
		                       WIFEXITED(s->server_status)
		                           ? json_object_new_int(WEXITSTATUS(s->server_status))
		                           : NULL);
		json_object_object_add(o, "signal",
		                       WIFSIGNALED(s->server_status)
		                           ? json_object_new_string(proc_signal_name(
		                                 WTERMSIG(s->server_status), sig, sizeof(sig)))
		                           : NULL);
		err_clear(&e);
		if (logfile_tail(spec->log_path, SUPERVISOR_TAIL_LINES, SUPERVISOR_TAIL_CHARS,
		                 &tail, &e) < 0)
			tail = NULL;
	} else {
		json_object_object_add(o, "status", NULL);
		json_object_object_add(o, "exit_code", NULL);
		json_object_object_add(o, "signal", NULL);
	}
	json_object_object_add(o, "stopped", json_object_new_boolean(s->stopping));
	json_object_object_add(o, "supervisor",
	                       json_object_new_string(final ? "exited" : "running"));
	json_object_object_add(o, "log_tail", json_str_or_null(tail));
	json_object_object_add(o, "log_error",
	                       json_str_or_null(s->log_error[0] ? s->log_error : NULL));
	if (spec->listen_addr) {
		struct json_object *f = json_object_new_object();
		char listen[128];
		bool v6 = strchr(spec->listen_addr, ':') && spec->listen_addr[0] != '[';

		snprintf(listen, sizeof(listen), "%s%s%s:%u", v6 ? "[" : "", spec->listen_addr,
		         v6 ? "]" : "", s->fw ? forwarder_listen_port(s->fw) : spec->listen_port);
		json_object_object_add(f, "listen", json_object_new_string(listen));
		json_object_object_add(f, "target", json_object_new_int(spec->target_port));
		json_object_object_add(o, "forward", f);
	} else {
		json_object_object_add(o, "forward", NULL);
	}

	size_t len;
	const char *text = json_object_to_json_string_length(
	    o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
	if (!text)
		return err_oom(err);
	return file_write_replace(spec->status_path, text, len, 0600, (uid_t)-1, (gid_t)-1, err);
}

static void status_write(struct sup *s, bool final)
{
	struct err e;

	err_clear(&e);
	if (status_write_or_fail(s, final, &e) < 0)
		log_debug("supervisor: %s", e.msg);
}

/* The integers under the pid and start-time keys; false when either is missing or not one. */
static bool json_identity(struct json_object *o, const char *pid_key, const char *start_key,
                          int64_t *ret_pid, int64_t *ret_start)
{
	struct json_object *pid = NULL, *start = NULL;

	if (!json_object_object_get_ex(o, pid_key, &pid) ||
	    !json_object_object_get_ex(o, start_key, &start) ||
	    !json_object_is_type(pid, json_type_int) || !json_object_is_type(start, json_type_int))
		return false;
	*ret_pid = json_object_get_int64(pid);
	*ret_start = json_object_get_int64(start);
	return true;
}

/* The process named by the pid and start-time keys still runs (true when unknown). */
static bool json_process_alive(struct json_object *o, const char *pid_key, const char *start_key)
{
	int64_t pid, start;

	if (!json_identity(o, pid_key, start_key, &pid, &start))
		return true;
	return proc_is((pid_t)pid, (uint64_t)start);
}

/* supervisor.json as a JSON object in *ret; -1 with err. */
static int status_read(const char *status_path, struct json_object **ret, struct err *err)
{
	_cleanup_free_ char *text = NULL;
	enum json_tokener_error jerr = json_tokener_success;
	struct json_object *o;
	size_t n = 0;
	int r;

	r = file_read_capped(AT_FDCWD, status_path, STATUS_MAX_BYTES, READ_NOFOLLOW, &text, &n,
	                     err);
	if (r < 0)
		return r;
	o = json_tokener_parse_verbose(text, &jerr);
	if (!o || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return err_set(err, ERR_FAILED, EINVAL, "%s is not a JSON object%s%s", status_path,
		               o ? "" : ": ", o ? "" : json_tokener_error_desc(jerr));
	}
	*ret = o;
	return 0;
}

int supervisor_read_identity(const char *status_path, pid_t *ret_pid, uint64_t *ret_start,
                             struct err *err)
{
	_cleanup_json_ struct json_object *o = NULL;
	int64_t pid, start;

	if (status_read(status_path, &o, err) < 0)
		return -1;
	if (!json_identity(o, "supervisor_pid", "supervisor_start", &pid, &start) || pid <= 1 ||
	    pid > INT32_MAX || start <= 0)
		return err_set(err, ERR_FAILED, EINVAL, "%s names no supervisor", status_path);
	*ret_pid = (pid_t)pid;
	*ret_start = (uint64_t)start;
	return 0;
}

int supervisor_read_status(const char *status_path, int *ret_exited, char *buf, size_t len,
                           struct err *err)
{
	_cleanup_json_ struct json_object *o = NULL;
	struct json_object *state = NULL, *status = NULL;

	if (status_read(status_path, &o, err) < 0)
		return -1;
	if (!json_object_object_get_ex(o, "state", &state) ||
	    !json_object_is_type(state, json_type_string))
		return err_set(err, ERR_FAILED, EINVAL, "%s has no state", status_path);
	if (strcmp(json_object_get_string(state), "exited") == 0) {
		*ret_exited = 1;
		if (json_object_object_get_ex(o, "status", &status) &&
		    json_object_is_type(status, json_type_string))
			snprintf(buf, len, "%s", json_object_get_string(status));
		else
			snprintf(buf, len, "exited");
	} else if (strcmp(json_object_get_string(state), "running") == 0 &&
	           !json_process_alive(o, "supervisor_pid", "supervisor_start") &&
	           !json_process_alive(o, "server_pid", "server_start")) {
		/* The supervisor was killed before it could record the server's end. */
		*ret_exited = 1;
		snprintf(buf, len, "exited (not recorded: its supervisor is gone)");
	} else {
		*ret_exited = 0;
		snprintf(buf, len, "%s", json_object_get_string(state));
	}
	return 0;
}

/* ---- the server's output ---- */

static void log_note_error(struct sup *s)
{
	const struct err *e = logfile_last_error(s->log);

	if (e->cls == ERR_NONE || strcmp(e->msg, s->log_error) == 0)
		return;
	snprintf(s->log_error, sizeof(s->log_error), "%s", e->msg);
	status_write(s, false);
}

/*
 * The scrub stream's sink. A failed write (a full disk) is recorded by the logfile and noted
 * in supervisor.json, but not passed on: a stream error is sticky, and the server's output
 * must reach the log again once there is room.
 */
static int output_sink(void *userdata, const char *buf, size_t len)
{
	(void)logfile_sink(userdata, buf, len);
	return 0;
}

static void output_write(struct sup *s, const char *buf, size_t len)
{
	int r =
	    s->stream ? scrub_stream_write(s->stream, buf, len) : logfile_sink(s->log, buf, len);
	const struct err *e = logfile_last_error(s->log);

	/* A full disk: recorded; reading goes on so that the server never blocks on us. */
	if (r < 0 || (e && e->cls != ERR_NONE))
		log_note_error(s);
}

static void output_flush(struct sup *s)
{
	if (s->stream && scrub_stream_flush(s->stream) < 0)
		log_note_error(s);
}

/* Read what the server wrote; until EAGAIN when drain, else one buffer per event. */
static void output_read(struct sup *s, bool drain)
{
	char buf[16384];

	while (s->out_fd >= 0) {
		ssize_t n = read(s->out_fd, buf, sizeof(buf));

		if (n > 0) {
			output_write(s, buf, (size_t)n);
			if (!drain)
				return;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		/* End-of-file (or an error): every writer is gone. */
		(void)epoll_ctl(s->epfd, EPOLL_CTL_DEL, s->out_fd, NULL);
		close(s->out_fd);
		s->out_fd = -1;
		output_flush(s);
	}
}

static void output_event(struct ev_handler *h, uint32_t events)
{
	output_read(container_of(h, struct sup, out_h), false);
}

/* ---- children and signals ---- */

static void reap(struct sup *s)
{
	for (;;) {
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG);

		if (pid < 0 && errno == EINTR)
			continue;
		if (pid <= 0)
			return;
		if (pid != s->server_pid || !s->server_running)
			continue; /* an adopted orphan */
		s->server_running = false;
		s->server_status = status;
		/* Its last words first, so the tail holds them. */
		output_read(s, true);
		output_flush(s);
		if (!s->stopping)
			status_write(s, false);
	}
}

static void grace_arm(struct sup *s)
{
	unsigned ms = s->spec->grace_ms ? s->spec->grace_ms : SUPERVISOR_GRACE_MS;
	struct itimerspec its = {
	    .it_value = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000}};

	if (timerfd_settime(s->timer_fd, 0, &its, NULL) < 0)
		s->grace_over = true;
	s->grace_armed = true;
}

static void stop_begin(struct sup *s)
{
	if (s->stopping)
		return;
	s->stopping = true;
	if (s->server_running) {
		/* The leader is not reaped yet, so the group id is still the server's. */
		(void)kill(-s->server_pid, SIGTERM);
		(void)kill(-s->server_pid, SIGCONT);
		grace_arm(s);
	}
}

static void signal_event(struct ev_handler *h, uint32_t events)
{
	struct sup *s = container_of(h, struct sup, sig_h);
	struct signalfd_siginfo si;

	while (read(s->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGCHLD:
			reap(s);
			break;
		case SIGTERM:
		case SIGINT:
			stop_begin(s);
			break;
		default:
			break; /* SIGHUP: no terminal, nothing to reload */
		}
	}
	reap(s);
}

static void timer_event(struct ev_handler *h, uint32_t events)
{
	struct sup *s = container_of(h, struct sup, timer_h);
	uint64_t ticks;

	(void)!read(s->timer_fd, &ticks, sizeof(ticks));
	s->grace_over = true;
}

/* ---- the end ---- */

static unsigned grace_left(struct sup *s)
{
	struct itimerspec its;

	if (!s->grace_armed)
		return s->spec->grace_ms ? s->spec->grace_ms : SUPERVISOR_GRACE_MS;
	if (s->grace_over || timerfd_gettime(s->timer_fd, &its) < 0)
		return 0;
	return (unsigned)(its.it_value.tv_sec * 1000 + its.it_value.tv_nsec / 1000000);
}

/*
 * After TERM: whatever is left of the boot's processes (the server's group, orphans we
 * adopted, the cgroup) gets TERM and the rest of the grace period, then KILL. Then the final
 * state, with the server's last output.
 */
static _noreturn_ void stop_finish(struct sup *s)
{
	struct err e;

	forwarder_free(s->fw);
	s->fw = NULL;
	if (s->server_running)
		(void)kill(-s->server_pid, SIGKILL);
	err_clear(&e);
	if (s->procs && procset_stop(s->procs, grace_left(s), s->pid, &e) < 0)
		log_debug("supervisor: %s", e.msg);
	reap(s);
	if (s->server_running) {
		/* Killed above: wait for it so the state says how it ended. */
		int status;
		if (waitpid(s->server_pid, &status, 0) == s->server_pid) {
			s->server_running = false;
			s->server_status = status;
		}
		reap(s);
	}
	output_read(s, true);
	output_flush(s);
	status_write(s, true);
	_exit(0);
}

static void loop_run(struct sup *s)
{
	while (!s->quit) {
		struct epoll_event evs[32];
		int n = epoll_wait(s->epfd, evs, 32, -1);

		if (n < 0 && errno != EINTR)
			break;
		for (int i = 0; i < n; i++) {
			struct ev_handler *h = evs[i].data.ptr;
			h->fn(h, evs[i].events);
		}
		if (s->fw)
			forwarder_reap(s->fw);
		if (s->stopping && (!s->server_running || s->grace_over))
			s->quit = true;
	}
}

/* ---- setting up ---- */

static int watch(struct sup *s, int fd, struct ev_handler *h,
                 void (*fn)(struct ev_handler *, uint32_t), struct err *err)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = h};

	h->fn = fn;
	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		return err_errno(err, "supervisor: epoll_ctl");
	return 0;
}

static void signals_reset(sigset_t *handled)
{
	static const struct sigaction dfl = {.sa_handler = SIG_DFL}, ign = {.sa_handler = SIG_IGN};

	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			(void)sigaction(sig, &dfl, NULL);
	/* splice() into a socket whose peer is gone raises SIGPIPE (forwarder.h). */
	(void)sigaction(SIGPIPE, &ign, NULL);
	sigemptyset(handled);
	sigaddset(handled, SIGCHLD);
	sigaddset(handled, SIGTERM);
	sigaddset(handled, SIGINT);
	sigaddset(handled, SIGHUP);
}

/* Descriptors 0, 1 and 2 on /dev/null; everything else the caller had, closed. */
static int fds_detach(int keep, struct err *err)
{
	int nul;

	proc_close_inherited(keep);
	/* Nor the caller's argv and environment (its model credential) in /proc. */
	if (proc_hide_caller("sandbox-agent supervise") < 0)
		log_debug("supervisor: cannot overwrite the inherited command line");
	nul = open("/dev/null", O_RDWR | O_NOCTTY);
	if (nul < 0)
		return err_errno(err, "supervisor: open /dev/null");
	for (int fd = 0; fd < 3; fd++)
		if (fd != nul && dup2(nul, fd) < 0)
			return err_errno(err, "supervisor: dup2");
	if (nul > 2)
		close(nul);
	return 0;
}

static void nofile_raise(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= SUP_NOFILE_WANT)
		return;
	rl.rlim_cur = rl.rlim_max < SUP_NOFILE_WANT ? rl.rlim_max : SUP_NOFILE_WANT;
	(void)setrlimit(RLIMIT_NOFILE, &rl);
}

static int server_spawn(struct sup *s, struct err *err)
{
	const struct supervisor_spec *spec = s->spec;
	_cleanup_close_ int wr = -1;
	int p[2], join[CGROUP_LIMITS_N];

	if (pipe2(p, O_CLOEXEC) < 0)
		return err_errno(err, "supervisor: pipe");
	s->out_fd = p[0];
	wr = p[1];
	if (fcntl(s->out_fd, F_SETFL, O_NONBLOCK) < 0)
		return err_errno(err, "supervisor: fcntl");
	if (watch(s, s->out_fd, &s->out_h, output_event, err) < 0)
		return -1;

	struct proc_spec ps = {
	    .command = spec->command,
	    .cwd = spec->cwd,
	    .env = spec->env,
	    .user = spec->user,
	    .output_fd = wr,
	    .procs_fd = s->procs ? procset_procs_fd(s->procs) : -1,
	    .join_fds = join,
	    .new_session = false,
	    .keep_fd = -1,
	};
	if (s->procs) {
		struct cgroup_limits_hits h;

		ps.n_join_fds = procset_join_fds(s->procs, join);
		procset_limit_hits(s->procs, &h);
		s->oom_base = h.oom_kills;
	}
	if (proc_spawn_at(&ps, &s->server_pid, &s->server_spawned_us, err) < 0)
		return -1;
	s->server_start = proc_start_time(s->server_pid);
	s->server_running = true;
	if (s->procs)
		(void)procset_add_group(s->procs, s->server_pid, s->server_start);
	return 0;
}

static bool read_exact(int fd, void *buf, size_t len)
{
	return file_read_all(fd, buf, len) == (ssize_t)len;
}

/* What needs nothing of the boot's last moments: done while the caller's manifest runs. */
static int sup_prepare(struct sup *s, int ctl_fd, struct err *err)
{
	const struct supervisor_spec *spec = s->spec;
	sigset_t handled;

	if (fds_detach(ctl_fd, err) < 0)
		return -1;
	if (chdir("/") < 0)
		return err_errno(err, "supervisor: chdir /");
	(void)prctl(PR_SET_PDEATHSIG, 0);
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		return err_errno(err, "supervisor: PR_SET_CHILD_SUBREAPER");
	signals_reset(&handled);
	if (sigprocmask(SIG_SETMASK, &handled, NULL) < 0)
		return err_errno(err, "supervisor: sigprocmask");

	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (s->epfd < 0)
		return err_errno(err, "supervisor: epoll_create1");
	s->sigfd = sigfd_open(&handled, NULL, err);
	if (s->sigfd < 0)
		return err_wrap(err, "supervisor");
	if (watch(s, s->sigfd, &s->sig_h, signal_event, err) < 0)
		return -1;
	s->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (s->timer_fd < 0)
		return err_errno(err, "supervisor: timerfd_create");
	if (watch(s, s->timer_fd, &s->timer_h, timer_event, err) < 0)
		return -1;
	if (procset_open(spec->cgroup_path ? spec->cgroup_path : "", &s->procs, err) < 0)
		return err_wrap(err, "supervisor");
	if (s->procs)
		(void)procset_add_root(s->procs, s->pid, s->start);
	return 0;
}

/*
 * Wait for the caller's go and keep the secret it sends (s->secret, in guarded memory) for the
 * scrubber. 0 on go; -1 when the caller dismissed us (end-of-file, or a signal asking us to
 * stop: nothing to stop yet).
 */
static int sup_wait_go(struct sup *s, int ctl_fd)
{
	uint32_t len;

	for (;;) {
		struct pollfd pfd[2] = {{.fd = ctl_fd, .events = POLLIN},
		                        {.fd = s->sigfd, .events = POLLIN}};
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (pfd[1].revents)
			return -1;
		if (pfd[0].revents)
			break;
	}
	if (!read_exact(ctl_fd, &len, sizeof(len)) || len > SCRUB_MAX_SECRET)
		return -1;
	if (len == 0)
		return 0;
	s->secret = sodium_malloc(len);
	if (!s->secret)
		return -1;
	s->secret_len = len;
	return read_exact(ctl_fd, s->secret, len) ? 0 : -1;
}

/*
 * The scrubber with the caller's secret, and the stream the server's output goes through. Made
 * once the server runs, beside its start: its output waits in the pipe until the loop reads it.
 */
static int sup_scrub_ready(struct sup *s, struct err *err)
{
	const struct supervisor_spec *spec = s->spec;
	int r = 0;

	if (s->secret) {
		if (spec->scrub)
			r = scrub_add(spec->scrub, s->secret, s->secret_len);
		sodium_free(s->secret);
		s->secret = NULL;
		if (r < 0) {
			errno = -r;
			return err_errno(err, "supervisor: cannot add the secret to the scrubber");
		}
	}
	if (spec->scrub) {
		s->stream = scrub_stream_new(spec->scrub, output_sink, s->log);
		if (!s->stream)
			return err_set(err, ERR_FAILED, ENOMEM, "supervisor: out of memory");
	}
	return 0;
}

static int sup_launch(struct sup *s, struct err *err)
{
	const struct supervisor_spec *spec = s->spec;

	if (spec->listen_addr && forwarder_new(s->epfd, spec->listen_addr, spec->listen_port,
	                                       "127.0.0.1", spec->target_port, &s->fw, err) < 0)
		return -1;
	if (logfile_open(spec->log_path, spec->log_max_bytes, (uid_t)-1, (gid_t)-1, &s->log, err) <
	    0)
		return -1;
	logfile_keep_times_or_say(s->log);
	if (server_spawn(s, err) < 0)
		return -1;
	/*
	 * The scrubber after the spawn, beside the server's start; then the first state, which
	 * proves status_path writable: without both no server runs.
	 */
	if (sup_scrub_ready(s, err) < 0 || status_write_or_fail(s, false, err) < 0) {
		kill(-s->server_pid, SIGKILL);
		while (waitpid(s->server_pid, NULL, 0) < 0 && errno == EINTR)
			;
		return -1;
	}
	s->status_written = true;
	return 0;
}

static void report_send(int fd, const void *buf, size_t len)
{
	(void)file_write_all(fd, buf, len);
}

static _noreturn_ void sup_main(const struct supervisor_spec *spec, int ctl_fd)
{
	struct sup s = {
	    .spec = spec,
	    .epfd = -1,
	    .sigfd = -1,
	    .out_fd = -1,
	    .timer_fd = -1,
	};
	struct sup_report rep = {0};
	struct sup_hello hello;
	struct err e;
	int r;

	s.pid = getpid();
	s.start = proc_start_time(s.pid);
	err_clear(&e);
	memset(&hello, 0, sizeof(hello)); /* padding included: the bytes go to the caller */
	hello.supervisor_pid = s.pid;
	hello.supervisor_start = s.start;
	report_send(ctl_fd, &hello, sizeof(hello));
	/* Not protected from the out-of-memory killer as the engine is while it starts us. */
	int oom = proc_oom_score_reset();
	if (oom < 0)
		log_debug("supervisor: cannot reset oom_score_adj: %s", strerror(-oom));
	r = sup_prepare(&s, ctl_fd, &e);
	if (sup_wait_go(&s, ctl_fd) < 0)
		_exit(0);
	if (r == 0)
		r = sup_launch(&s, &e);
	if (r < 0) {
		if (s.secret)
			sodium_free(s.secret);
		if (s.status_written)
			(void)unlink(spec->status_path);
		rep.cls = e.cls ? e.cls : ERR_FAILED;
		rep.code = e.code;
		snprintf(rep.msg, sizeof(rep.msg), "%s", e.msg);
		report_send(ctl_fd, &rep, sizeof(rep));
		_exit(1);
	}
	rep.ok = 1;
	rep.supervisor_pid = s.pid;
	rep.supervisor_start = s.start;
	rep.server_pid = s.server_pid;
	rep.server_start = s.server_start;
	rep.server_spawned_us = s.server_spawned_us;
	report_send(ctl_fd, &rep, sizeof(rep));
	close(ctl_fd);

	/* Only now: the server keeps the caller's descriptor limit. */
	nofile_raise();
#ifdef __GLIBC__
	/* Give back what the caller's heap left free in our copy of it (musl has no such call). */
	malloc_trim(0);
#endif
	loop_run(&s);
	stop_finish(&s);
}

int supervisor_prepare(const struct supervisor_spec *spec, struct supervisor_pending *ret,
                       struct err *err)
{
	struct sup_hello hello;
	sigset_t all, old;
	int sv[2], status;
	pid_t mid;

	*ret = (struct supervisor_pending)SUPERVISOR_PENDING_INIT;
	if (!spec->command || !spec->log_path || !spec->status_path)
		return err_set(err, ERR_FAILED, EINVAL,
		               "supervisor: the command, log and status paths are required");
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return err_errno(err, "supervisor: socketpair");

	/* No handler of the caller's may run in the children. */
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	mid = fork();
	if (mid == 0) {
		pid_t pid;

		close(sv[0]);
		if (setsid() < 0)
			_exit(1);
		pid = fork();
		if (pid != 0)
			_exit(pid < 0 ? 1 : 0);
		sup_main(spec, sv[1]);
	}
	int fork_errno = errno;
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(sv[1]);
	if (mid < 0) {
		close(sv[0]);
		errno = fork_errno;
		return err_errno(err, "supervisor: fork");
	}
	bool got = read_exact(sv[0], &hello, sizeof(hello));
	while (waitpid(mid, &status, 0) < 0 && errno == EINTR)
		;
	if (!got) {
		close(sv[0]);
		return err_set(err, ERR_FAILED, EPIPE,
		               "the supervisor ended before it said who it is (its fork failed)");
	}
	ret->pid = hello.supervisor_pid;
	ret->start = hello.supervisor_start;
	ret->fd = sv[0];
	return 0;
}

static bool send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		len -= (size_t)n;
	}
	return true;
}

/* A prepared supervisor that will not run on: killed to be sure (it may be exiting), reaped. */
static void pending_end(const struct supervisor_pending *pending)
{
	(void)proc_signal_wait(pending->pid, pending->start, SIGKILL, 2000);
	(void)waitpid(pending->pid, NULL, WNOHANG);
}

int supervisor_launch(struct supervisor_pending *pending, const char *secret,
                      struct supervisor_info *ret, struct err *err)
{
	struct sup_report rep = {0};
	uint32_t len = secret ? (uint32_t)strlen(secret) : 0;
	_cleanup_close_ int fd = pending->fd;

	pending->fd = -1;
	if (fd < 0)
		return err_set(err, ERR_FAILED, EINVAL, "supervisor: not prepared");
	if (!send_all(fd, &len, sizeof(len)) || (len && !send_all(fd, secret, len))) {
		pending_end(pending);
		return err_set(err, ERR_FAILED, ESRCH,
		               "the supervisor ended before it was told to start the server");
	}
	/* Nothing more to say: a shortfall would reach it as an end-of-file, never as a wait. */
	(void)shutdown(fd, SHUT_WR);
	if (!read_exact(fd, &rep, sizeof(rep))) {
		pending_end(pending);
		return err_set(err, ERR_FAILED, EPIPE, "the supervisor ended before it reported");
	}
	if (!rep.ok) {
		pending_end(pending);
		rep.msg[sizeof(rep.msg) - 1] = '\0';
		return err_set(err, rep.cls ? rep.cls : ERR_FAILED, rep.code, "%s", rep.msg);
	}
	ret->supervisor_pid = rep.supervisor_pid;
	ret->supervisor_start = rep.supervisor_start;
	ret->server_pid = rep.server_pid;
	ret->server_start = rep.server_start;
	ret->server_spawned_us = rep.server_spawned_us;
	return 0;
}

void supervisor_dismiss(struct supervisor_pending *pending)
{
	if (pending->fd < 0)
		return;
	closep(&pending->fd);
	pending->fd = -1;
	/* It exits at the end-of-file, having started nothing. */
	pending_end(pending);
}

int supervisor_start(const struct supervisor_spec *spec, struct supervisor_info *ret,
                     struct err *err)
{
	struct supervisor_pending pending;

	if (supervisor_prepare(spec, &pending, err) < 0)
		return -1;
	return supervisor_launch(&pending, NULL, ret, err);
}
