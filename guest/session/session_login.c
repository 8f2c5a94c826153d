/* SPDX-License-Identifier: Apache-2.0 */
#include "session_login.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "clock.h"
#include "file.h"
#include "fs_safe.h"
#include "json_strict.h"
#include "log.h"
#include "session_run.h"
#include "session_status.h"

#define OUTPUT_MAX (64 * 1024)
#define AUTH_TIMEOUT_MS 30000
#define STOP_WAIT_MS 5000

static const char *const url_prefixes[] = {
    "https://claude.com/cai/oauth/authorize?",
    "https://claude.ai/oauth/authorize?",
    "https://console.anthropic.com/oauth/authorize?",
    "https://platform.claude.com/oauth/authorize?",
    NULL,
};

/* RFC 3986 characters, nothing that could end a line or start an escape. */
static bool url_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("-._~:/?#[]@!$&'()*+,;=%", c));
}

bool session_login_url_allowed(const char *url)
{
	size_t n = strlen(url);

	if (n == 0 || n >= SESSION_LOGIN_URL_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!url_char((unsigned char)url[i]))
			return false;
	for (size_t i = 0; url_prefixes[i]; i++)
		if (strncmp(url, url_prefixes[i], strlen(url_prefixes[i])) == 0 &&
		    n > strlen(url_prefixes[i]))
			return true;
	return false;
}

/* text without terminal escape sequences (CSI, OSC, two-byte ESC x), NUL-terminated. */
static char *strip_escapes(const char *text, size_t len)
{
	char *out = malloc(len + 1);
	size_t o = 0;

	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)text[i];

		if (c != 0x1b) {
			out[o++] = c ? (char)c : ' ';
			continue;
		}
		if (i + 1 >= len)
			break;
		if (text[i + 1] == '[') {
			for (i += 2; i < len && !((unsigned char)text[i] >= 0x40 &&
			                          (unsigned char)text[i] <= 0x7e);
			     i++)
				;
		} else if (text[i + 1] == ']') {
			for (i += 2; i < len && text[i] != '\a' &&
			             !(text[i] == 0x1b && i + 1 < len && text[i + 1] == '\\');
			     i++)
				;
			if (i < len && text[i] == 0x1b)
				i++;
		} else {
			i++;
		}
	}
	out[o] = '\0';
	return out;
}

char *session_login_find_url(const char *text, size_t len)
{
	_cleanup_free_ char *plain = strip_escapes(text, len);

	if (!plain)
		return NULL;
	for (char *p = strstr(plain, "https://"); p; p = strstr(p + 1, "https://")) {
		size_t n = 0;
		char *url;

		while (url_char((unsigned char)p[n]))
			n++;
		url = strndup(p, n);
		if (!url)
			return NULL;
		if (session_login_url_allowed(url))
			return url;
		free(url);
	}
	return NULL;
}

int session_login_dir(const char *root, struct err *err)
{
	_cleanup_free_ char *path = NULL;
	int fd;
	struct stat st;

	if (asprintf(&path, "%s/login", root) < 0)
		return err_oom(err);
	if (mkdir(root, 0700) < 0 && errno != EEXIST)
		return err_errno(err, "cannot create %s", root);
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return err_errno(err, "cannot create %s", path);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return err_errno(err, "cannot open %s", path);
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 0077)) {
		close(fd);
		return err_set(err, ERR_REFUSED, EPERM, "%s must be %s's with mode 0700", path,
		               geteuid() == 0 ? "root" : "the caller");
	}
	return fd;
}

int session_login_lock(int login_fd, struct err *err)
{
	int fd = openat(login_fd, "flow.lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (fd < 0)
		return err_errno(err, "cannot open the login lock");
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;

		close(fd);
		if (e == EWOULDBLOCK)
			return -EBUSY;
		errno = e;
		return err_errno(err, "cannot lock the login lock");
	}
	return fd;
}

static void copy_str(struct json_object *root, const char *key, char *dst, size_t n)
{
	struct json_object *o;

	if (json_object_object_get_ex(root, key, &o) && json_object_is_type(o, json_type_string))
		snprintf(dst, n, "%s", json_object_get_string(o));
}

int session_login_status_read(int login_fd, struct session_login_status *st, struct err *err)
{
	_cleanup_json_ struct json_object *root = NULL;
	_cleanup_free_ char *buf = NULL;
	enum json_tokener_error jerr;
	struct json_object *o;
	size_t len = 0, off;
	int rc;

	memset(st, 0, sizeof(*st));
	rc = file_read_capped(login_fd, "status.json", 64 * 1024, READ_NOFOLLOW | READ_MISSING_OK,
	                      &buf, &len, err);
	if (rc != 0)
		return rc < 0 ? rc : 0;
	if (json_strict_parse(buf, len, &root, &off, &jerr) != JSON_STRICT_OK ||
	    !json_object_is_type(root, json_type_object))
		return err_set(err, ERR_FAILED, EINVAL, "the login's status.json is damaged");
	copy_str(root, "status", st->status, sizeof(st->status));
	copy_str(root, "authorize_url", st->authorize_url, sizeof(st->authorize_url));
	copy_str(root, "error", st->error, sizeof(st->error));
	if (json_object_object_get_ex(root, "pid", &o))
		st->pid = (pid_t)json_object_get_int64(o);
	return 0;
}

struct flow {
	int login_fd;
	char *dir; /* ROOT/login */
	char started_at[32];
	char status[32];
	char *url;
	pid_t pid;
	const char *error;
};

static void flow_save(struct flow *f)
{
	_cleanup_json_ struct json_object *o = json_object_new_object();
	const char *js;
	char now[32];
	struct err e;
	size_t len;

	if (!o)
		return;
	json_object_object_add(o, "status", json_object_new_string(f->status));
	if (f->url && strcmp(f->status, "awaiting_code") == 0)
		json_object_object_add(o, "authorize_url", json_object_new_string(f->url));
	if (f->pid > 0)
		json_object_object_add(o, "pid", json_object_new_int64(f->pid));
	json_object_object_add(o, "started_at", json_object_new_string(f->started_at));
	if (strcmp(f->status, "starting") && strcmp(f->status, "awaiting_code") &&
	    strcmp(f->status, "submitted")) {
		session_status_now(now);
		json_object_object_add(o, "finished_at", json_object_new_string(now));
	}
	if (f->error)
		json_object_object_add(o, "error", json_object_new_string(f->error));
	js = json_object_to_json_string_length(
	    o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
	{
		_cleanup_free_ char *path = NULL;
		char buf[SESSION_LOGIN_URL_MAX + 1024];

		if (!js || len + 1 > sizeof(buf) || asprintf(&path, "%s/status.json", f->dir) < 0)
			return;
		memcpy(buf, js, len);
		buf[len++] = '\n';
		if (file_write_replace(path, buf, len, 0600, (uid_t)-1, (gid_t)-1, &e) < 0)
			log_debug("login status.json: %s", e.msg);
	}
}

static void flow_set(struct flow *f, const char *status)
{
	snprintf(f->status, sizeof(f->status), "%s", status);
	flow_save(f);
}

static void stop_group(pid_t pid)
{
	if (pid <= 1)
		return;
	kill(-pid, SIGTERM);
	for (int i = 0; i < 100; i++) {
		if (waitpid(pid, NULL, WNOHANG) == pid)
			break;
		usleep(20000);
	}
	kill(-pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* A terminal pair: the master (ours, non-blocking) and the slave (the CLI's). */
static int open_pty(int *ret_master, int *ret_slave, struct err *err)
{
	_cleanup_close_ int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	struct winsize ws = {.ws_row = 50, .ws_col = 4000};
	char name[128];
	int s;

	if (m < 0)
		return err_errno(err, "cannot open a terminal");
	if (grantpt(m) < 0 || unlockpt(m) < 0 || ptsname_r(m, name, sizeof(name)) != 0)
		return err_errno(err, "cannot set up a terminal");
	s = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (s < 0)
		return err_errno(err, "cannot open %s", name);
	/* Wide: the sign-in URL must not be wrapped. */
	(void)ioctl(s, TIOCSWINSZ, &ws);
	if (fcntl(m, F_SETFL, O_NONBLOCK) < 0) {
		close(s);
		return err_errno(err, "fcntl");
	}
	*ret_master = TAKE_FD(m);
	*ret_slave = s;
	return 0;
}

int session_login_run(const struct session_login_cli *cli, int login_fd, unsigned timeout_s,
                      struct err *err)
{
	char *argv[] = {(char *)cli->bin, "auth", "login", NULL};
	_cleanup_close_ int master = -1, slave = -1, fifo_r = -1, fifo_w = -1, pidfd = -1;
	_cleanup_free_ char *out = NULL;
	struct flow f = {.login_fd = login_fd};
	uint64_t deadline = clock_now_ms() + (uint64_t)timeout_s * 1000;
	size_t out_len = 0;
	bool submitted = false, exited = false;
	int status = 0;
	struct stat st;

	if (asprintf(&f.dir, "%s/login", cli->root) < 0)
		return err_oom(err);
	session_status_now(f.started_at);
	flow_set(&f, "starting");
	(void)unlinkat(login_fd, "cancel", 0);
	(void)unlinkat(login_fd, "code.fifo", 0);
	if (mkfifoat(login_fd, "code.fifo", 0600) < 0) {
		f.error = "cannot create the code FIFO";
		flow_set(&f, "failed");
		free(f.dir);
		return 0;
	}
	fifo_r = openat(login_fd, "code.fifo", O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	/* Our own writer keeps the FIFO from reading as EOF between two writers. */
	fifo_w = openat(login_fd, "code.fifo", O_WRONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	out = malloc(OUTPUT_MAX + 1);
	if (fifo_r < 0 || fifo_w < 0 || !out || open_pty(&master, &slave, err) < 0) {
		f.error = "cannot set up the login's terminal";
		flow_set(&f, "failed");
		(void)unlinkat(login_fd, "code.fifo", 0);
		free(f.dir);
		return 0;
	}
	{
		struct session_spawn sp = {
		    .argv = argv,
		    .env = cli->env,
		    .cwd = cli->home,
		    .user = cli->user,
		    .mkdir_as_user = cli->config_dir,
		    .stdin_fd = slave,
		    .stdout_fd = slave,
		    .stderr_fd = slave,
		    .procs_fd = -1,
		    .cgroup_fd = -1,
		    .ctty = true,
		};
		struct err se;

		if (session_run_spawn(&sp, &f.pid, &se) < 0) {
			f.error = "cannot run claude auth login";
			flow_set(&f, "failed");
			(void)unlinkat(login_fd, "code.fifo", 0);
			free(f.dir);
			return 0;
		}
	}
	closep(&slave);
	slave = -1;
	pidfd = (int)syscall(SYS_pidfd_open, f.pid, 0);
	flow_save(&f);

	while (!exited) {
		struct pollfd pfd[3];
		int nfds = 0;
		char buf[4096];
		ssize_t n;
		uint64_t now = clock_now_ms();

		if (now >= deadline) {
			stop_group(f.pid);
			flow_set(&f, "expired");
			goto done;
		}
		if (fstatat(login_fd, "cancel", &st, AT_SYMLINK_NOFOLLOW) == 0) {
			stop_group(f.pid);
			flow_set(&f, "cancelled");
			goto done;
		}
		pfd[nfds++] = (struct pollfd){.fd = master, .events = POLLIN};
		if (!submitted && f.url)
			pfd[nfds++] = (struct pollfd){.fd = fifo_r, .events = POLLIN};
		if (pidfd >= 0)
			pfd[nfds++] = (struct pollfd){.fd = pidfd, .events = POLLIN};
		(void)poll(pfd, (nfds_t)nfds, 100);

		while ((n = read(master, buf, sizeof(buf))) > 0) {
			/* What the CLI prints once it has the code is dropped. */
			if (submitted || f.url)
				continue;
			if (out_len + (size_t)n > OUTPUT_MAX) {
				memmove(out, out + (size_t)n, OUTPUT_MAX - (size_t)n);
				out_len = OUTPUT_MAX - (size_t)n;
			}
			memcpy(out + out_len, buf, (size_t)n);
			out_len += (size_t)n;
			f.url = session_login_find_url(out, out_len);
			if (f.url)
				flow_set(&f, "awaiting_code");
		}
		if (!submitted && f.url) {
			char code[SESSION_LOGIN_CODE_MAX + 2];

			n = read(fifo_r, code, sizeof(code) - 1);
			if (n > 0) {
				char *nl;

				code[n] = '\0';
				nl = strpbrk(code, "\r\n");
				if (nl)
					*nl = '\0';
				if (code[0]) {
					size_t cl = strlen(code);

					code[cl] = '\r';
					(void)file_write_all(master, code, cl + 1);
					explicit_bzero(code, sizeof(code));
					submitted = true;
					closep(&fifo_r);
					fifo_r = -1;
					(void)unlinkat(login_fd, "code.fifo", 0);
					flow_set(&f, "submitted");
				}
			}
		}
		if (waitpid(f.pid, &status, WNOHANG) == f.pid)
			exited = true;
	}
	if (fstatat(login_fd, "cancel", &st, AT_SYMLINK_NOFOLLOW) == 0) {
		/* Stopped by a logout that signalled the CLI itself. */
		flow_set(&f, "cancelled");
	} else if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && submitted) {
		flow_set(&f, "completed");
	} else {
		f.error = submitted ? "claude auth login did not accept the code"
		                    : "claude auth login ended before a code was submitted";
		flow_set(&f, "failed");
	}
done:
	kill(-f.pid, SIGKILL);
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	(void)unlinkat(login_fd, "code.fifo", 0);
	free(f.url);
	free(f.dir);
	return 0;
}

int session_login_submit(int login_fd, const char *code, struct err *err)
{
	struct session_login_status st;
	_cleanup_close_ int fd = -1;
	size_t n = code ? strlen(code) : 0;
	_cleanup_free_ char *line = NULL;

	if (n == 0)
		return err_set(err, ERR_REFUSED, EINVAL, "CLAUDE_LOGIN_CODE is not set");
	if (n > SESSION_LOGIN_CODE_MAX)
		return err_set(err, ERR_REFUSED, E2BIG, "the login code is longer than %d bytes",
		               SESSION_LOGIN_CODE_MAX);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)code[i] < 0x20 || code[i] == 0x7f)
			return err_set(err, ERR_REFUSED, EINVAL,
			               "the login code holds a control character");
	if (session_login_status_read(login_fd, &st, err) < 0)
		return err_ret(err);
	if (strcmp(st.status, "submitted") == 0)
		return err_set(err, ERR_REFUSED, EALREADY, "a login code was submitted already");
	if (strcmp(st.status, "awaiting_code") != 0)
		return err_set(err, ERR_REFUSED, ENOENT, "no login is waiting for a code");
	fd = openat(login_fd, "code.fifo", O_WRONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return err_set(err, ERR_REFUSED, ENOENT, "no login is waiting for a code");
	if (asprintf(&line, "%s\n", code) < 0)
		return err_oom(err);
	if (file_write_all(fd, line, n + 1) < 0) {
		explicit_bzero(line, n + 1);
		return err_errno(err, "cannot pass the login code on");
	}
	explicit_bzero(line, n + 1);
	return 0;
}

/* Run the CLI with args as the user, stdout captured (capped), 30 s at most. */
static int run_cli(const struct session_login_cli *cli, const char *a1, const char *a2,
                   const char *a3, char **ret_out, int *ret_status, struct err *err)
{
	char *argv[] = {(char *)cli->bin, (char *)a1, (char *)a2, (char *)a3, NULL};
	_cleanup_close_ int r = -1, w = -1;
	_cleanup_free_ char *out = malloc(OUTPUT_MAX + 1);
	uint64_t deadline = clock_now_ms() + AUTH_TIMEOUT_MS;
	size_t len = 0;
	int fds[2], status = 0;
	bool done = false;
	pid_t pid;

	if (!out)
		return err_oom(err);
	if (pipe2(fds, O_CLOEXEC) < 0)
		return err_errno(err, "pipe");
	r = fds[0], w = fds[1];
	{
		struct session_spawn sp = {
		    .argv = argv,
		    .env = cli->env,
		    .cwd = cli->home,
		    .user = cli->user,
		    .mkdir_as_user = cli->config_dir,
		    .stdin_fd = -1,
		    .stdout_fd = w,
		    .stderr_fd = -1,
		    .procs_fd = -1,
		    .cgroup_fd = -1,
		};
		if (session_run_spawn(&sp, &pid, err) < 0)
			return err_ret(err);
	}
	closep(&w);
	w = -1;
	while (!done) {
		struct pollfd p = {.fd = r, .events = POLLIN};
		ssize_t n;
		uint64_t now = clock_now_ms();

		if (now >= deadline) {
			stop_group(pid);
			return err_set(err, ERR_FAILED, ETIMEDOUT,
			               "claude auth %s took more than %d s", a2 ? a2 : "",
			               AUTH_TIMEOUT_MS / 1000);
		}
		(void)poll(&p, 1, (int)(deadline - now));
		n = read(r, out + len, OUTPUT_MAX - len);
		if (n > 0)
			len += (size_t)n;
		else if (n == 0 || (errno != EINTR && errno != EAGAIN) || len >= OUTPUT_MAX)
			done = true;
	}
	out[len] = '\0';
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	kill(-pid, SIGKILL);
	*ret_status = status;
	if (ret_out)
		*ret_out = TAKE_PTR(out);
	return 0;
}

int session_login_auth_status(const struct session_login_cli *cli, bool *logged_in, char *method,
                              size_t method_len, struct err *err)
{
	_cleanup_free_ char *out = NULL;
	_cleanup_json_ struct json_object *root = NULL;
	enum json_tokener_error jerr;
	struct json_object *o;
	size_t off;
	int status;

	*logged_in = false;
	snprintf(method, method_len, "none");
	if (run_cli(cli, "auth", "status", "--json", &out, &status, err) < 0)
		return err_wrap(err, "claude auth status");
	if (json_strict_parse(out, strlen(out), &root, &off, &jerr) != JSON_STRICT_OK ||
	    !json_object_is_type(root, json_type_object))
		return err_set(err, ERR_FAILED, EINVAL,
		               "claude auth status --json did not print a JSON object");
	if (json_object_object_get_ex(root, "loggedIn", &o))
		*logged_in = json_object_get_boolean(o);
	if (json_object_object_get_ex(root, "authMethod", &o) &&
	    json_object_is_type(o, json_type_string))
		snprintf(method, method_len, "%s", json_object_get_string(o));
	return 0;
}

/* Ask a running flow to stop and wait for its lock to come free. */
static void stop_flow(int login_fd)
{
	struct session_login_status st;
	_cleanup_close_ int fd = -1;
	struct err e;
	int lock;

	lock = session_login_lock(login_fd, &e);
	if (lock >= 0) {
		close(lock);
		return;
	}
	fd = openat(login_fd, "cancel", O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (session_login_status_read(login_fd, &st, &e) == 0 && st.pid > 1) {
		struct proc_stat ps;

		if (proc_stat_read(st.pid, &ps) == 0 && ps.session == st.pid)
			kill(-st.pid, SIGTERM);
	}
	for (int i = 0; i < STOP_WAIT_MS / 20; i++) {
		lock = session_login_lock(login_fd, &e);
		if (lock >= 0) {
			close(lock);
			break;
		}
		usleep(20000);
	}
}

int session_login_logout(const struct session_login_cli *cli, struct err *err)
{
	_cleanup_close_ int login_fd = session_login_dir(cli->root, err);
	_cleanup_close_ int home_fd = -1;
	const char *leaf;
	int status;

	if (login_fd < 0)
		return err_ret(err);
	stop_flow(login_fd);
	/* The CLI revokes what it holds; a CLI that cannot run leaves the files to remove. */
	if (run_cli(cli, "auth", "logout", NULL, NULL, &status, err) < 0)
		log_debug("claude auth logout: %s", err->msg);
	err_clear(err);
	leaf = strrchr(cli->config_dir, '/');
	if (!leaf || strncmp(cli->config_dir, cli->home, (size_t)(leaf - cli->config_dir)) != 0)
		return err_set(err, ERR_FAILED, EINVAL,
		               "the login configuration is not below HOME");
	home_fd = open(cli->home, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (home_fd < 0)
		return err_errno(err, "cannot open %s", cli->home);
	if (fs_safe_tree_remove_at(home_fd, leaf + 1, err) < 0)
		return err_wrap(err, "removing the login configuration");
	return 0;
}
