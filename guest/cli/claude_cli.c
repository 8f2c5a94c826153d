/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sandbox-claude: the platform's helper for Claude Code sessions (docs/sessions.md). Every call
 * prints ONE JSON object as the last line of stdout; exit 0 on success, 2 with {"error": ...}
 * when refused, 1 with {"error": ...} when something failed. The work is done by the session
 * engine (guest/session/).
 */
#include "claude_cli.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "boot_spec.h"
#include "json_strict.h"
#include "log.h"
#include "proc.h"
#include "scrub.h"
#include "session_confine.h"
#include "session_dir.h"
#include "session_env.h"
#include "session_job.h"
#include "session_live.h"
#include "session_login.h"
#include "session_request.h"
#include "session_status.h"
#include "strv.h"
#include "toolchain.h"

extern char **environ;

#define DEFAULT_SPEC "/workspace/boot/spec.json"
#define DEFAULT_CHECKOUT "/workspace/app"

static const char *env_or(const char *name, const char *def)
{
	const char *v = getenv(name);

	return v && *v ? v : def;
}

static void print_kv(const char *key, const char *value)
{
	_cleanup_json_ struct json_object *o = json_object_new_object();

	if (!o) {
		printf("{\"error\":\"out of memory\"}\n");
		return;
	}
	json_object_object_add(o, key, json_object_new_string(value));
	printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
	                                                     JSON_C_TO_STRING_NOSLASHESCAPE));
	fflush(stdout);
}

static int fail(const struct err *err)
{
	print_kv("error", err->msg);
	return err->cls == ERR_REFUSED ? 2 : 1;
}

static int refuse(const char *msg)
{
	print_kv("error", msg);
	return 2;
}

static void usage(FILE *f)
{
	fputs("usage: sandbox-claude session-start --dir DIR [--dangerously-no-sandbox]\n"
	      "       sandbox-claude session-cancel --dir DIR\n"
	      "       sandbox-claude login-start [--timeout SECONDS]\n"
	      "       sandbox-claude login-code       (the code in CLAUDE_LOGIN_CODE)\n"
	      "       sandbox-claude login-status\n"
	      "       sandbox-claude logout\n"
	      "\n"
	      "DIR is /workspace/claude/sessions/<digits>, root's, 0700, holding request.json and\n"
	      "prompt.txt. Every call prints one JSON object as its last stdout line; exit 0 on\n"
	      "success, 2 with {\"error\": ...} when refused. A session starts only in a sandbox\n"
	      "whose confinement `sandbox-ctl verify` proved, unless --dangerously-no-sandbox (or\n"
	      "the request's \"dangerously_no_sandbox\": true).\n",
	      f);
}

static const char *dir_arg(int argc, char **argv)
{
	for (int i = 2; i + 1 < argc; i++)
		if (strcmp(argv[i], "--dir") == 0)
			return argv[i + 1];
	for (int i = 2; i < argc; i++)
		if (strncmp(argv[i], "--dir=", 6) == 0)
			return argv[i] + 6;
	return NULL;
}

/*
 * Where the claude user's CLI and its configuration are: the home ($SANDBOX_CLAUDE_HOME, else
 * the user's), the CLI ($SANDBOX_CLAUDE_BIN, else HOME/.local/bin/claude) and the mode's
 * CLAUDE_CONFIG_DIR. -ENOMEM; the caller frees what was set.
 */
static int cli_paths(const struct run_user *claude, enum session_mode mode, char **ret_home,
                     char **ret_bin, char **ret_config_dir)
{
	const char *bin = getenv("SANDBOX_CLAUDE_BIN");

	*ret_home = strdup(env_or("SANDBOX_CLAUDE_HOME", claude->home));
	if (!*ret_home)
		return -ENOMEM;
	if (bin && *bin)
		*ret_bin = strdup(bin);
	else if (asprintf(ret_bin, "%s/.local/bin/claude", *ret_home) < 0)
		*ret_bin = NULL;
	if (!*ret_bin ||
	    asprintf(ret_config_dir, "%s/%s", *ret_home, session_env_config_name(mode)) < 0) {
		*ret_config_dir = NULL;
		return -ENOMEM;
	}
	return 0;
}

struct start_ctx {
	bool no_sandbox; /* --dangerously-no-sandbox */
	char *root;      /* copies: the supervisor wipes argv and the environment */
	char *dir;
	int dirfd;
	int lock_fd;
	int prompt_fd;
	struct session_request req;
	struct boot_spec spec;
	bool have_spec;
	struct run_user claude, app;
	bool have_app;
	char *checkout;
	char *home;
	char *bin;
	char *config_dir;
	char **argv;
	char **env;
	struct scrubber *scrub;
	struct session_status st;
};

static void start_ctx_dispose(struct start_ctx *c)
{
	free(c->root);
	free(c->dir);
	session_request_dispose(&c->req);
	if (c->have_spec)
		boot_spec_dispose(&c->spec);
	proc_user_dispose(&c->claude);
	if (c->have_app)
		proc_user_dispose(&c->app);
	free(c->checkout);
	free(c->home);
	free(c->bin);
	free(c->config_dir);
	strv_free(c->argv);
	strv_free(c->env);
	if (c->scrub)
		scrub_free(c->scrub);
	if (c->dirfd >= 0)
		close(c->dirfd);
	if (c->lock_fd >= 0)
		close(c->lock_fd);
	if (c->prompt_fd >= 0)
		close(c->prompt_fd);
}

/* Everything checked and prepared before the caller gets its answer. */
static int start_prepare(struct start_ctx *c, struct err *err)
{
	const char *spec_path = env_or("SANDBOX_BOOT_SPEC", DEFAULT_SPEC);
	struct stat st;

	c->dirfd = session_dir_open(c->root, c->dir, true, err);
	if (c->dirfd < 0)
		return err_ret(err);
	if (session_dir_started(c->dirfd))
		return err_set(err, ERR_REFUSED, EEXIST, "the session was started already");
	if (session_request_load(c->dirfd, &c->req, err) < 0)
		return err_ret(err);
	c->prompt_fd = session_dir_open_prompt(c->dirfd, err);
	if (c->prompt_fd < 0)
		return err_ret(err);
	c->lock_fd = session_dir_lock(c->root, err);
	if (c->lock_fd < 0)
		return err_ret(err);

	if (lstat(spec_path, &st) == 0) {
		if (boot_spec_load(spec_path, &c->spec, err) < 0)
			return err_wrap(err, "the boot spec %s", spec_path);
		c->have_spec = true;
	}
	c->checkout =
	    strdup(env_or("SANDBOX_APP_DIR",
	                  c->have_spec && c->spec.app_dir ? c->spec.app_dir : DEFAULT_CHECKOUT));
	if (!c->checkout)
		return err_oom(err);
	if (proc_user_lookup(env_or("SANDBOX_CLAUDE_USER", "claude"), &c->claude, err) < 0)
		return err_ret(err);
	{
		const char *app = env_or("SANDBOX_APP_USER",
		                         c->have_spec && c->spec.user ? c->spec.user : "sandbox");
		struct err e;

		if (proc_user_lookup(app, &c->app, &e) == 0)
			c->have_app = true;
		else if (getenv("SANDBOX_APP_USER") || (c->have_spec && c->spec.user))
			return *err = e, err_ret(err);
	}
	if (c->req.mode == SESSION_MODE_SANDBOX_LOGIN) {
		_cleanup_close_ int cfd =
		    open(c->checkout, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		if (cfd < 0)
			return err_errno(err, "cannot open the checkout %s", c->checkout);
		if (session_env_check_login_settings(cfd, err) < 0)
			return err_ret(err);
	}
	if (cli_paths(&c->claude, c->req.mode, &c->home, &c->bin, &c->config_dir) < 0)
		return err_oom(err);

	{
		_cleanup_strv_ char **tool_env = NULL;
		_cleanup_free_ char *path = NULL;
		struct toolchain_choice choice = {0};
		struct err e;
		struct session_env_spec es = {
		    .mode = c->req.mode,
		    .spec_env = c->have_spec ? c->spec.env : NULL,
		    .request_env = c->req.env,
		    .caller_env = environ,
		    .home = c->home,
		    .user = c->claude.name,
		    .checkout = c->checkout,
		};

		/*
		 * The toolchain's PATH, as the app's commands get it: the Ruby, Node or Bun the
		 * checkout (or the spec) names comes first. Without one, the plain PATH.
		 */
		if (asprintf(&path, "%s/.local/bin:%s", c->home, SESSION_ENV_DEFAULT_PATH) < 0 ||
		    strv_env_set(&tool_env, "PATH", path) < 0)
			return err_oom(err);
		if (toolchain_select(c->checkout, c->have_spec ? &c->spec.toolchain : NULL, environ,
		                     c->home, &tool_env, &choice, &e) == 0) {
			free(path);
			path = strdup(strv_env_get(tool_env, "PATH"));
			if (!path)
				return err_oom(err);
		} else {
			log_debug("no toolchain for the session: %s", e.msg);
		}
		toolchain_choice_dispose(&choice);
		es.path = path;
		if (session_env_build(&es, &c->env, err) < 0)
			return err_ret(err);
	}
	c->scrub = scrub_new();
	if (!c->scrub)
		return err_oom(err);
	if (session_env_add_secrets(c->scrub, environ, err) < 0)
		return err_ret(err);
	if (strv_push(&c->argv, c->bin) < 0)
		return err_oom(err);
	for (size_t i = 1; c->req.argv[i]; i++)
		if (strv_push(&c->argv, c->req.argv[i]) < 0)
			return err_oom(err);
	/* Last of the checks, so a malformed request is told about first. */
	c->req.dangerously_no_sandbox |= c->no_sandbox;
	if (session_confine_check(c->req.dangerously_no_sandbox, err) < 0)
		return err_ret(err);

	{
		_cleanup_free_ char *path = NULL;

		c->st.state = SESSION_STARTING;
		c->st.dangerously_no_sandbox = c->req.dangerously_no_sandbox;
		session_status_now(c->st.started_at);
		if (asprintf(&path, "%s/status.json", c->dir) < 0)
			return err_oom(err);
		if (session_status_write(path, &c->st, err) < 0)
			return err_ret(err);
	}
	return 0;
}

static _noreturn_ void supervise(struct start_ctx *c)
{
	struct session_job job = {
	    .root = c->root,
	    .dir = c->dir,
	    .dirfd = c->dirfd,
	    .req = &c->req,
	    .argv = c->argv,
	    .env = c->env,
	    .checkout = c->checkout,
	    .config_dir = c->config_dir,
	    .claude_user = &c->claude,
	    .app_user = c->have_app ? &c->app : NULL,
	    .prompt_fd = c->prompt_fd,
	    .scrub = c->scrub,
	    .started_at = c->st.started_at,
	    .lock_fd = c->lock_fd,
	};
	struct err err;
	int nul = open("/dev/null", O_RDWR | O_CLOEXEC);

	/* The caller reads EOF once the first process exits: nothing of ours holds its pipes. */
	if (nul >= 0) {
		dup2(nul, STDIN_FILENO);
		dup2(nul, STDOUT_FILENO);
		dup2(nul, STDERR_FILENO);
		if (nul > 2)
			close(nul);
	}
	/* The credential lives on only in c->env: not in our /proc/PID/environ or cmdline. */
	(void)proc_hide_caller("sandbox-claude session");
	signal(SIGPIPE, SIG_IGN);
	if ((c->req.live ? session_live_run(&job, &err) : session_job_run(&job, &err)) < 0)
		_exit(1);
	_exit(0);
}

static int session_start(int argc, char **argv)
{
	struct start_ctx c = {.dirfd = -1, .lock_fd = -1, .prompt_fd = -1};
	struct err err;
	int status;
	pid_t pid;

	if (!dir_arg(argc, argv))
		return refuse("session-start needs --dir DIR");
	for (int i = 2; i < argc; i++)
		if (strcmp(argv[i], "--dangerously-no-sandbox") == 0)
			c.no_sandbox = true;
	c.dir = strdup(dir_arg(argc, argv));
	c.root = strdup(env_or("SANDBOX_CLAUDE_ROOT", SESSION_DIR_ROOT));
	if (!c.dir || !c.root) {
		err_oom(&err);
		start_ctx_dispose(&c);
		return fail(&err);
	}
	/* Descriptors the caller left open must not reach the detached supervisor. */
	proc_close_inherited(-1);
	err_clear(&err);
	if (start_prepare(&c, &err) < 0) {
		int rc = fail(&err);

		start_ctx_dispose(&c);
		return rc;
	}
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		err_errno(&err, "fork");
		start_ctx_dispose(&c);
		return fail(&err);
	}
	if (pid == 0) {
		/* Detached twice: a new session, then a grandchild the caller never waits for. */
		setsid();
		pid = fork();
		if (pid == 0)
			supervise(&c);
		_exit(pid < 0 ? 1 : 0);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		err_set(&err, ERR_FAILED, EIO, "the session's supervisor could not be started");
		start_ctx_dispose(&c);
		return fail(&err);
	}
	{
		_cleanup_json_ struct json_object *o = json_object_new_object();
		json_object_object_add(o, "status", json_object_new_string("started"));
		json_object_object_add(
		    o, "sandbox",
		    json_object_new_string(session_confine_word(c.req.dangerously_no_sandbox)));
		printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
		fflush(stdout);
	}
	start_ctx_dispose(&c);
	return 0;
}

static int session_cancel(int argc, char **argv)
{
	const char *dir = dir_arg(argc, argv);
	const char *root = env_or("SANDBOX_CLAUDE_ROOT", SESSION_DIR_ROOT);
	struct session_status st;
	_cleanup_close_ int dfd = -1, cfd = -1;
	struct err err;
	int rc;

	if (!dir)
		return refuse("session-cancel needs --dir DIR");
	err_clear(&err);
	dfd = session_dir_open(root, dir, false, &err);
	if (dfd < 0)
		return fail(&err);
	rc = session_status_read(dfd, &st, &err);
	if (rc < 0)
		return fail(&err);
	if (rc == 1)
		return refuse("the session was not started");
	if (st.state == SESSION_FINISHED) {
		print_kv("status", "cancelled");
		return 0;
	}
	cfd = openat(dfd, "cancel", O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (cfd < 0) {
		err_errno(&err, "cannot write the cancel file");
		return fail(&err);
	}
	if (st.state == SESSION_RUNNING && st.pid > 1) {
		struct proc_stat ps;

		/* Only a group that is still the session's: its leader leads it. */
		if (proc_stat_read(st.pid, &ps) == 0 && ps.pgrp == st.pid)
			kill(-st.pid, SIGTERM);
	}
	print_kv("status", "cancelling");
	return 0;
}

/* What the login verbs share: the claude user, its home, the CLI, the login environment. */
struct login_ctx {
	char *root;
	struct run_user claude;
	char *home, *bin, *config_dir;
	char **env;
	struct session_login_cli cli;
};

static void login_ctx_dispose(struct login_ctx *c)
{
	free(c->root);
	proc_user_dispose(&c->claude);
	free(c->home);
	free(c->bin);
	free(c->config_dir);
	strv_free(c->env);
}

static int login_prepare(struct login_ctx *c, struct err *err)
{
	c->root = strdup(env_or("SANDBOX_CLAUDE_ROOT", SESSION_DIR_ROOT));
	if (!c->root)
		return err_oom(err);
	if (proc_user_lookup(env_or("SANDBOX_CLAUDE_USER", "claude"), &c->claude, err) < 0)
		return err_ret(err);
	if (cli_paths(&c->claude, SESSION_MODE_SANDBOX_LOGIN, &c->home, &c->bin, &c->config_dir) <
	    0)
		return err_oom(err);
	{
		struct session_env_spec es = {
		    .mode = SESSION_MODE_SANDBOX_LOGIN,
		    .caller_env = environ,
		    .home = c->home,
		    .user = c->claude.name,
		    .checkout = c->home,
		};
		if (session_env_build(&es, &c->env, err) < 0)
			return err_ret(err);
	}
	c->cli = (struct session_login_cli){
	    .root = c->root,
	    .bin = c->bin,
	    .env = c->env,
	    .user = &c->claude,
	    .home = c->home,
	    .config_dir = c->config_dir,
	};
	return 0;
}

static void print_login(const char *status, const char *url, int logged_in, const char *method)
{
	_cleanup_json_ struct json_object *o = json_object_new_object();

	if (!o) {
		printf("{\"error\":\"out of memory\"}\n");
		return;
	}
	json_object_object_add(o, "status", json_object_new_string(status));
	if (url && *url)
		json_object_object_add(o, "authorize_url", json_object_new_string(url));
	if (logged_in >= 0) {
		json_object_object_add(o, "logged_in", json_object_new_boolean(logged_in));
		json_object_object_add(o, "auth_method",
		                       method ? json_object_new_string(method) : NULL);
	}
	printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
	                                                     JSON_C_TO_STRING_NOSLASHESCAPE));
	fflush(stdout);
}

static int login_start(int argc, char **argv)
{
	struct login_ctx c = {0};
	struct session_login_status st;
	unsigned timeout = SESSION_LOGIN_DEFAULT_TIMEOUT;
	struct err err;
	int login_fd = -1, lock = -1, status, rc;
	pid_t pid;

	for (int i = 2; i < argc; i++) {
		char *end;
		long v;

		if (strcmp(argv[i], "--timeout") != 0 || i + 1 >= argc)
			return refuse("usage: sandbox-claude login-start [--timeout SECONDS]");
		errno = 0;
		v = strtol(argv[++i], &end, 10);
		if (errno || *end || end == argv[i] || v < 1 || v > SESSION_LOGIN_TIMEOUT_MAX)
			return refuse("--timeout must be 1 to 600 seconds");
		timeout = (unsigned)v;
	}
	proc_close_inherited(-1);
	err_clear(&err);
	if (login_prepare(&c, &err) < 0)
		goto fail;
	/* Any old login is revoked first, a running flow stopped. */
	if (session_login_logout(&c.cli, &err) < 0)
		goto fail;
	login_fd = session_login_dir(c.root, &err);
	if (login_fd < 0)
		goto fail;
	lock = session_login_lock(login_fd, &err);
	if (lock == -EBUSY) {
		err_set(&err, ERR_REFUSED, EBUSY, "another login flow is still running");
		goto fail;
	}
	if (lock < 0)
		goto fail;
	(void)unlinkat(login_fd, "status.json", 0);
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		err_errno(&err, "fork");
		goto fail;
	}
	if (pid == 0) {
		setsid();
		pid = fork();
		if (pid == 0) {
			int nul = open("/dev/null", O_RDWR | O_CLOEXEC);

			if (nul >= 0) {
				dup2(nul, STDIN_FILENO);
				dup2(nul, STDOUT_FILENO);
				dup2(nul, STDERR_FILENO);
			}
			(void)proc_hide_caller("sandbox-claude login");
			signal(SIGPIPE, SIG_IGN);
			_exit(session_login_run(&c.cli, login_fd, timeout, &err) < 0 ? 1 : 0);
		}
		_exit(pid < 0 ? 1 : 0);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	close(lock);
	lock = -1;
	/* The answer waits (10 s at most) for the sign-in URL, so one call can show it. */
	for (int i = 0; i < 500; i++) {
		if (session_login_status_read(login_fd, &st, &err) == 0 && st.status[0] &&
		    strcmp(st.status, "starting") != 0)
			break;
		usleep(20000);
	}
	if (session_login_status_read(login_fd, &st, &err) < 0)
		goto fail;
	print_login(st.status[0] ? st.status : "starting", st.authorize_url, -1, NULL);
	rc = strcmp(st.status, "failed") == 0 ? 1 : 0;
	close(login_fd);
	login_ctx_dispose(&c);
	return rc;
fail:
	if (lock >= 0)
		close(lock);
	if (login_fd >= 0)
		close(login_fd);
	login_ctx_dispose(&c);
	return fail(&err);
}

static int login_code(void)
{
	struct err err;
	int login_fd, rc;

	err_clear(&err);
	login_fd = session_login_dir(env_or("SANDBOX_CLAUDE_ROOT", SESSION_DIR_ROOT), &err);
	if (login_fd < 0)
		return fail(&err);
	rc = session_login_submit(login_fd, getenv("CLAUDE_LOGIN_CODE"), &err);
	close(login_fd);
	if (rc < 0)
		return fail(&err);
	print_kv("status", "submitted");
	return 0;
}

static int login_status(void)
{
	struct login_ctx c = {0};
	struct session_login_status st;
	struct err err;
	char method[64];
	bool logged_in;
	int login_fd = -1, lock, rc = 0;

	err_clear(&err);
	if (login_prepare(&c, &err) < 0)
		goto fail;
	login_fd = session_login_dir(c.root, &err);
	if (login_fd < 0 || session_login_status_read(login_fd, &st, &err) < 0)
		goto fail;
	lock = session_login_lock(login_fd, &err);
	if (lock == -EBUSY) {
		/* A flow runs: its state. */
		print_login(st.status[0] ? st.status : "starting", st.authorize_url, 0, NULL);
		goto out;
	}
	if (lock < 0)
		goto fail;
	close(lock);
	if (session_login_auth_status(&c.cli, &logged_in, method, sizeof(method), &err) < 0)
		goto fail;
	if (logged_in && strcmp(method, "claude.ai") == 0)
		print_login("connected", NULL, 1, method);
	else if (!logged_in &&
	         (strcmp(st.status, "failed") == 0 || strcmp(st.status, "expired") == 0 ||
	          strcmp(st.status, "cancelled") == 0))
		print_login(st.status, NULL, 0, NULL);
	else
		print_login("disconnected", NULL, logged_in, logged_in ? method : NULL);
out:
	close(login_fd);
	login_ctx_dispose(&c);
	return rc;
fail:
	if (login_fd >= 0)
		close(login_fd);
	login_ctx_dispose(&c);
	return fail(&err);
}

static int logout(void)
{
	struct login_ctx c = {0};
	struct err err;

	err_clear(&err);
	if (login_prepare(&c, &err) < 0 || session_login_logout(&c.cli, &err) < 0) {
		login_ctx_dispose(&c);
		return fail(&err);
	}
	login_ctx_dispose(&c);
	print_kv("status", "logged_out");
	return 0;
}

int claude_cli_main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return refuse("usage: sandbox-claude VERB [OPTIONS]");
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("sandbox-claude %s\n", SA_VERSION);
		return 0;
	}
	if (strcmp(argv[1], "session-start") == 0)
		return session_start(argc, argv);
	if (strcmp(argv[1], "session-cancel") == 0)
		return session_cancel(argc, argv);
	if (strcmp(argv[1], "login-start") == 0)
		return login_start(argc, argv);
	if (strcmp(argv[1], "login-code") == 0)
		return argc == 2 ? login_code()
		                 : refuse("login-code takes no arguments: the code "
		                          "comes from CLAUDE_LOGIN_CODE");
	if (strcmp(argv[1], "login-status") == 0)
		return login_status();
	if (strcmp(argv[1], "logout") == 0)
		return logout();
	usage(stderr);
	return refuse("unknown verb");
}
