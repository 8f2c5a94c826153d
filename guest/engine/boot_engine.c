/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The boot pipeline (docs/platform-contract.md, "Order of a boot"):
 *   lock -> stop what a previous boot left running -> directories -> services -> setup steps
 *   -> port -> manifest -> server (under the supervisor) -> ready -> runtime.json
 */
#include "boot_engine.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "boot_services.h"
#include "dir_discard.h"
#include "boot_state.h"
#include "boot_step.h"
#include "child_env.h"
#include "file.h"
#include "fs_safe.h"
#include "logfile.h"
#include "listen_check.h"
#include "log.h"
#include "manifest.h"
#include "procset.h"
#include "boot_egress.h"
#include "boot_limits.h"
#include "ready.h"
#include "strv.h"
#include "supervisor.h"
#include "sigfd.h"
#include "step_inputs.h"

/*
 * The server is looked at every READY_POLL_MS for its first READY_POLL_FAST_FOR_MS (a quick app
 * is seen listening at most about a millisecond late; while nobody listens on the port a look
 * is one sock_diag question, about 30 us), then every READY_POLL_SLOW_MS, not to take the CPU
 * from a slow one. Without a cgroup the boot's processes are found by a walk of /proc (about
 * 1 ms for a hundred processes) once someone listens, so every look is READY_POLL_SLOW_MS apart.
 */
#define READY_POLL_MS 1
#define READY_POLL_FAST_FOR_MS 1000
#define READY_POLL_SLOW_MS 5
#define WRONG_LISTENER_GRACE_MS 1500
/*
 * The server listens, but not on $PORT: it fails once that has lasted WRONG_PORT_GRACE_MS and
 * none of the boot's processes has been running or in disk wait for WRONG_PORT_IDLE_MS (so a
 * Procfile whose asset server listens first while the app server still loads is waited for).
 * The ports and states are looked at every WRONG_PORT_CHECK_MS (that walks /proc).
 */
#define WRONG_PORT_GRACE_MS 2500
#define WRONG_PORT_IDLE_MS 1500
#define WRONG_PORT_CHECK_MS 250

static void observe(const struct step_context *ctx, const char *step, const char *phase,
                    const char *detail)
{
	boot_step_observe(ctx->plan, ctx->obs, step, phase, detail);
}

static void result_fail_at(struct boot_result *res, const char *step, const char *log_path)
{
	snprintf(res->step, sizeof(res->step), "%s", step);
	snprintf(res->log_path, sizeof(res->log_path), "%s", log_path ? log_path : "");
}

/* Masks known secrets in the error message before anyone reads it. */
static void err_scrub(const struct boot_plan *p, struct err *err)
{
	size_t len;
	_cleanup_free_ char *clean = NULL;

	if (!p->scrub)
		return;
	clean = scrub_string(p->scrub, err->msg, strlen(err->msg), &len);
	if (clean)
		err_reword(err, "%s", clean);
}

/*
 * The phases (state.json's steps) follow the boot: the one now named runs, those before it are
 * over (skipped, or succeeded), and the boot's end closes them (the failed one with its cause).
 */
static void phases_update(struct boot_state *st, const char *status, const char *phase)
{
	int64_t now = clock_realtime_ms();
	bool failed = strcmp(status, "failed") == 0, ready = strcmp(status, "ready") == 0;
	const char *name = phase && strcmp(phase, "services") == 0 ? "toolchain" : phase;
	struct boot_phase *cur = NULL;

	/* What failed is the phase that was running; else the one the failure names. */
	for (size_t i = 0; failed && i < st->n_phases; i++)
		if (strcmp(st->phases[i].status, "running") == 0)
			cur = &st->phases[i];
	if (!cur && !ready)
		cur = boot_state_phase_find(st, name);
	for (size_t i = 0; i < st->n_phases && &st->phases[i] != cur; i++) {
		struct boot_phase *ph = &st->phases[i];
		if (strcmp(ph->status, "pending") && strcmp(ph->status, "running"))
			continue;
		boot_state_phase_set(st, ph->name,
		                     strv_contains(st->skipped, ph->name) ? "skipped" : "succeeded",
		                     NULL, now);
	}
	if (cur)
		boot_state_phase_set(st, cur->name, failed ? "failed" : "running",
		                     failed ? st->reason : NULL, now);
	if (failed || ready)
		st->finished_ms = now;
}

/* The state in memory: status and step as --status shows them; phase: state.json's steps entry. */
static int mark_state_phase(struct boot_state *st, const char *status, const char *step,
                            const char *phase)
{
	if ((status && boot_state_set(&st->status, status) < 0) ||
	    (step && boot_state_set(&st->step, step) < 0))
		return -ENOMEM;
	if (status)
		phases_update(st, status, phase);
	return 0;
}

/* state.json written as the state is in memory; a failure is logged and the boot goes on. */
static int state_write(const struct boot_plan *p, struct boot_state *st)
{
	struct err err;

	if (boot_state_save(p->state_dir, st, &err) < 0) {
		log_debug("%s", err.msg);
		return -EIO;
	}
	return 0;
}

/* mark_state_phase() with the step as its phase, saved to state.json. */
static int save_state(const struct boot_plan *p, struct boot_state *st, const char *status,
                      const char *step)
{
	if (mark_state_phase(st, status, step, step) < 0)
		return -ENOMEM;
	return state_write(p, st);
}

/*
 * A setup step's phase name: its own, with _2, _3, ... when steps share one (the directory
 * shape names every setup step "setup"), as the platform names the steps of a sandbox.yml.
 */
static void step_phase_name(const struct boot_plan *p, size_t idx, char *buf, size_t len)
{
	unsigned n = 1;

	for (size_t i = 0; i < idx; i++)
		if (strcmp(p->steps[i].name, p->steps[idx].name) == 0)
			n++;
	if (n == 1)
		snprintf(buf, len, "%s", p->steps[idx].name);
	else
		snprintf(buf, len, "%s_%u", p->steps[idx].name, n);
}

/* Give the run user a directory of its own (created if missing), mode 0700. */
static int dir_for_user(const struct boot_plan *p, const char *path, struct err *err)
{
	if (fs_safe_dir_ensure(path, p->user.uid, p->user.gid, 0700, err) < 0)
		return err_wrap(err, "cannot prepare %s", path);
	return 0;
}

static int prepare_directories(const struct boot_plan *p, struct err *err)
{
	if (dir_for_user(p, p->db_dir, err) < 0 ||
	    dir_for_user(p, p->manifest_scratch_dir, err) < 0)
		return -1;
	if (fs_safe_dir_ensure(p->cache_root, p->user.uid, p->user.gid, 0755, err) < 0)
		return err_wrap(err, "cannot prepare the cache root");
	for (size_t i = 0; p->directories && p->directories[i]; i++)
		if (dir_for_user(p, p->directories[i], err) < 0)
			return -1;
	/* The checkout belongs to the run user, so the app can write tmp/, log/ and its db. */
	if (p->user.uid != (uid_t)-1 && geteuid() == 0 &&
	    fs_safe_tree_chown(p->app_dir, p->user.uid, p->user.gid, err) < 0)
		return err_wrap(err, "cannot give the checkout to %s", p->user.name);
	return 0;
}

static int engine_stop_loaded(const char *state_dir, struct boot_state *st, unsigned grace_ms,
                              struct err *err);

/*
 * An old tree of the app still being removed beside it (dir_discard.h) is no use of the app's
 * disk budget, which counts the workspace from the first step on: the preflight waits for it,
 * while a stop is still answered, at most BOOT_DISCARD_WAIT_MS. The time waited is added to the
 * boot's deadline (that removal used to come before the boot). After the wait the tree is
 * counted like any other bytes, and the log says why.
 */
#define BOOT_DISCARD_WAIT_MS 30000

static int wait_old_trees(struct step_context *ctx, struct err *err)
{
	const struct boot_plan *p = ctx->plan;
	uint64_t since = clock_now_ms();

	if (!p->limits.disk)
		return 0;
	while (!dir_discard_wait(p->app_dir, 50)) {
		if (boot_step_interrupted(ctx, err))
			return -1;
		if (clock_now_ms() - since >= BOOT_DISCARD_WAIT_MS) {
			log_warn(
			    "an old tree of %s is still being removed beside it: the disk budget "
			    "counts it",
			    p->app_dir);
			break;
		}
	}
	ctx->deadline_ms += clock_now_ms() - since;
	return 0;
}

/*
 * Stop what a previous boot of this app left running (a second boot, --restart), by its state
 * as the caller loaded it (prev_r: boot_state_load()'s result): a second reading of state.json
 * costs 0.3-0.5 ms here, most of it the parser's memory faulted in.
 */
static int stop_previous(const struct boot_plan *p, struct boot_state *prev, int prev_r,
                         struct err *err)
{
	if (prev_r == 1)
		return 0;
	if (prev_r < 0)
		return boot_engine_stop(p->state_dir, p->grace_ms, err);
	return engine_stop_loaded(p->state_dir, prev, p->grace_ms, err);
}

/* `bin/rails -T -A`, listed once per boot, for the steps' if_task. */
static int rails_has_task(const struct step_context *ctx, char **tasks_cache, const char *task,
                          bool *ret, struct err *err)
{
	const struct boot_plan *p = ctx->plan;
	_cleanup_free_ char *log = NULL;
	size_t tl = strlen(task);

	if (!*tasks_cache) {
		_cleanup_free_ char *rails = NULL;
		if (asprintf(&rails, "%s/bin/rails", p->app_dir) < 0)
			return err_oom(err);
		if (access(rails, F_OK) < 0) {
			/* Not a Rails app: it has no tasks at all. */
			*ret = false;
			return 0;
		}
		if (asprintf(&log, "%s/preflight.log", p->logs_dir) < 0)
			return err_oom(err);
		if (boot_step_capture(ctx, "preflight", "bin/rails -T -A", p->env, 120, log,
		                      tasks_cache, err) < 0)
			return err_wrap(err, "cannot list the app's Rails tasks");
	}
	*ret = false;
	for (const char *line = *tasks_cache; line && *line;) {
		const char *nl = strchr(line, '\n');
		const char *name = line;
		if (strncmp(name, "bin/rails ", 10) == 0)
			name += 10;
		else if (strncmp(name, "rails ", 6) == 0)
			name += 6;
		else if (strncmp(name, "rake ", 5) == 0)
			name += 5;
		if (strncmp(name, task, tl) == 0 &&
		    (name[tl] == ' ' || name[tl] == '\n' || name[tl] == '\0' || name[tl] == '['))
			*ret = true;
		line = nl ? nl + 1 : NULL;
	}
	return 0;
}

/* A skipped step says so in its log, in state.json (its phase's detail) and to the observer. */
static void step_record_skip(const struct step_context *ctx, const struct plan_step *s,
                             const char *phase, const char *why, struct boot_state *st)
{
	_cleanup_logfile_ struct logfile *log = NULL;
	_cleanup_free_ char *line = NULL;
	struct err e;

	if (logfile_open(s->log_path, BOOT_LOG_MAX_BYTES, (uid_t)-1, (gid_t)-1, &log, &e) == 0) {
		logfile_keep_times_or_say(log);
		if (asprintf(&line, "$ %s\n(skipped: %s)\n", s->command ? s->command : "", why) >=
		    0)
			(void)logfile_write(log, line, strlen(line), &e);
	}
	strv_push(&st->skipped, s->name);
	boot_state_phase_set(st, phase, "skipped", why, clock_realtime_ms());
	observe(ctx, s->name, "skipped", why);
}

/*
 * An installer (npm ci, bundle install, ...) whose inputs are the ones it last succeeded with,
 * what it built in place (carried over by a checkout, or still there), is not run again.
 * Either way the phase keeps the digest for the next boot.
 */
static bool step_unchanged(const struct boot_plan *p, const struct plan_step *s, const char *phase,
                           struct boot_state *prev, struct boot_state *st, char *why, size_t len)
{
	char hex[STEP_INPUTS_HEX_LEN + 1], what[256];
	struct boot_phase *old = boot_state_phase_find(prev, phase);

	if (step_inputs_digest(p, s, hex, what, sizeof(what)) != 1 || !old || !old->inputs ||
	    strcmp(old->inputs, hex) != 0 ||
	    (strcmp(old->status, "succeeded") != 0 && strcmp(old->status, "skipped") != 0))
		return false;
	boot_state_set(&boot_state_phase_find(st, phase)->inputs, hex);
	snprintf(why, len,
	         "its inputs are unchanged since it last succeeded (%s, the command and the "
	         "environment) and what it builds is in place",
	         what);
	return true;
}

/* The app's own part of a phase: the time its command ran (boot_step_run's report). */
static void phase_app_ms(const struct step_context *ctx, struct boot_state *st, const char *phase)
{
	struct boot_phase *ph = boot_state_phase_find(st, phase);

	if (ph && ctx->command_ms && *ctx->command_ms >= 0)
		ph->app_ms = *ctx->command_ms;
}

/* After an installer succeeded: the digest its next boot compares with. */
static void step_record_inputs(const struct boot_plan *p, const struct plan_step *s,
                               const char *phase, struct boot_state *st)
{
	char hex[STEP_INPUTS_HEX_LEN + 1];

	if (step_inputs_digest(p, s, hex, NULL, 0) == 1)
		boot_state_set(&boot_state_phase_find(st, phase)->inputs, hex);
}

/*
 * What the engine does once a step's command runs, beside it rather than before it: state.json
 * saved with the step's phase running, and for the manifest the supervisor forked
 * (supervisor.h, supervisor_prepare()). The second core is free while the app's command runs.
 * The toolchain's phase is saved the same way, before its first service starts.
 */
struct beside_step {
	const struct boot_plan *plan;
	struct boot_state *st;
	const struct supervisor_spec *sup_spec; /* NULL: no supervisor to prepare */
	struct supervisor_pending *sup_pending;
};

static void beside_step(void *userdata)
{
	struct beside_step *b = userdata;
	struct err e;

	(void)state_write(b->plan, b->st);
	/* Without it the server's start forks the supervisor then, and reports what fails. */
	if (b->sup_spec && supervisor_prepare(b->sup_spec, b->sup_pending, &e) < 0)
		log_debug("the supervisor is started after the manifest: %s", e.msg);
}

/* A step context whose step's phase is saved, and what else b says done, beside the step. */
static void step_context_beside(const struct step_context *ctx, struct beside_step *b,
                                struct step_context *ret)
{
	*ret = *ctx;
	ret->spawned = beside_step;
	ret->spawned_userdata = b;
}

static int run_setup(const struct step_context *ctx, struct boot_state *prev, struct boot_state *st,
                     size_t from, struct boot_result *res, struct err *err)
{
	const struct boot_plan *p = ctx->plan;
	_cleanup_free_ char *tasks = NULL;
	struct beside_step b = {.plan = p, .st = st};
	struct step_context step_ctx;

	step_context_beside(ctx, &b, &step_ctx);
	for (size_t i = from; i < p->n_steps; i++) {
		const struct plan_step *s = &p->steps[i];
		char phase[64], why[512];
		bool has = true;

		step_phase_name(p, i, phase, sizeof(phase));
		if (s->skip) {
			step_record_skip(ctx, s, phase, s->skip, st);
			continue;
		}
		if (step_unchanged(p, s, phase, prev, st, why, sizeof(why))) {
			step_record_skip(ctx, s, phase, why, st);
			continue;
		}
		/* Saved once a command of it runs (beside_step()); skipped, at the next save. */
		mark_state_phase(st, "booting", s->name, phase);
		if (s->if_task) {
			if (rails_has_task(&step_ctx, &tasks, s->if_task, &has, err) < 0) {
				_cleanup_free_ char *pre = NULL;
				if (asprintf(&pre, "%s/preflight.log", p->logs_dir) < 0)
					pre = NULL;
				result_fail_at(res, s->name, pre ? pre : s->log_path);
				return -1;
			}
			if (!has) {
				snprintf(why, sizeof(why), "the app has no %s task", s->if_task);
				step_record_skip(ctx, s, phase, why, st);
				continue;
			}
		}
		if (boot_step_run(&step_ctx, s->name, s->command, p->env, s->timeout, s->log_path,
		                  err) < 0) {
			result_fail_at(res, s->name, s->log_path);
			return -1;
		}
		step_record_inputs(p, s, phase, st);
		phase_app_ms(ctx, st, phase);
		strv_push(&st->completed, s->name);
		observe(ctx, s->name, "done", NULL);
	}
	return 0;
}

/* Scrub a log again after a new secret became known (the manifest's token). */
static void log_rescrub(const struct boot_plan *p, const char *path)
{
	_cleanup_free_ char *text = NULL, *clean = NULL;
	size_t len = 0, clean_len = 0;
	struct err e;

	if (file_read_capped(AT_FDCWD, path, BOOT_LOG_MAX_BYTES, READ_NOFOLLOW, &text, &len, &e) <
	    0)
		return;
	clean = scrub_string(p->scrub, text, len, &clean_len);
	if (clean && (clean_len != len || memcmp(clean, text, len) != 0))
		(void)file_write_replace(path, clean, clean_len, 0600, (uid_t)-1, (gid_t)-1, &e);
}

static int run_manifest(const struct step_context *boot_ctx, char *const *env,
                        const struct supervisor_spec *sup_spec,
                        struct supervisor_pending *sup_pending, struct boot_state *st,
                        struct manifest *ret, struct boot_result *res, struct err *err)
{
	const struct boot_plan *p = boot_ctx->plan;
	const struct plan_step *s = &p->manifest;
	/*
	 * The supervisor is prepared beside the manifest where the boot's processes are a cgroup,
	 * which it is not in. Without a cgroup they are our descendants, it would be one, and the
	 * stop of the manifest's leftovers would stop it: it is started after the manifest then.
	 */
	bool early = procset_backend_of(boot_ctx->procs) != PROCSET_NO_CGROUP;
	struct beside_step b = {
	    .plan = p, .st = st, .sup_spec = early ? sup_spec : NULL, .sup_pending = sup_pending};
	struct step_context manifest_ctx;
	const struct step_context *ctx = &manifest_ctx;

	step_context_beside(boot_ctx, &b, &manifest_ctx);
	mark_state_phase(st, "booting", "manifest", "manifest");
	if (unlink(p->manifest_scratch) < 0 && errno != ENOENT) {
		result_fail_at(res, "manifest", s->log_path);
		return err_errno(err, "cannot remove the old manifest %s", p->manifest_scratch);
	}
	if (boot_step_run(ctx, "manifest", s->command, env, s->timeout, s->log_path, err) < 0)
		goto out_fail;
	if (access(p->manifest_scratch, F_OK) < 0) {
		err_set(err, ERR_FAILED, ENOENT,
		        "`%s` wrote no manifest to $ACTION_AGENT_SANDBOX_MANIFEST (%s)", s->command,
		        p->manifest_scratch);
		goto out_fail;
	}
	if (manifest_read(AT_FDCWD, p->manifest_scratch, ret, err) < 0) {
		err_wrap(err, "the manifest is invalid");
		goto out_fail;
	}
	unlink(p->manifest_scratch);
	phase_app_ms(ctx, st, "manifest");
	strv_push(&st->completed, "manifest");
	/* Its "done" is observed once the token is masked (run_start()). */
	return 0;
out_fail:
	result_fail_at(res, "manifest", s->log_path);
	return -1;
}

static int server_exit_reason(const struct boot_plan *p, char *buf, size_t len)
{
	_cleanup_free_ char *status_path = NULL;
	struct err err;
	int exited = 0;

	if (asprintf(&status_path, "%s/supervisor.json", p->state_dir) < 0)
		return -1;
	if (supervisor_read_status(status_path, &exited, buf, len, &err) < 0)
		snprintf(buf, len, "exited");
	return exited;
}

/* A port the boot's processes listen on other than the forwarder's, or 0. */
static uint16_t server_other_port(const struct boot_plan *p, const pid_t *pids, size_t n)
{
	uint16_t ports[8];
	size_t np = listen_check_ports_of(pids, n, ports, ELEMENTSOF(ports));

	for (size_t i = 0; i < np; i++)
		if (!(p->listen_addr && ports[i] == p->listen_port))
			return ports[i];
	return 0;
}

/* Whether any of the boot's processes (not this one) is running or waiting for the disk. */
static bool procs_busy(const pid_t *pids, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct proc_stat st;
		if (pids[i] != getpid() && proc_stat_read(pids[i], &st) == 0 &&
		    (st.state == 'R' || st.state == 'D'))
			return true;
	}
	return false;
}

/* Wait until the server's own listener answers the MCP path with 405, 401 or 200. */
static int wait_ready(const struct step_context *ctx, const struct supervisor_info *sup,
                      char *const *env, unsigned port, const char *mcp_path, struct err *err)
{
	const struct boot_plan *p = ctx->plan;
	_cleanup_close_ int pidfd = (int)syscall(SYS_pidfd_open, sup->server_pid, 0);
	uint64_t since = clock_now_ms();
	/* Without a cgroup every look walks /proc: no fast looks then (READY_POLL_MS). */
	bool fast_looks = procset_backend_of(ctx->procs) != PROCSET_NO_CGROUP;
	uint64_t wrong_since = 0;
	bool seen_listening = false;
	enum listen_state last_state = LISTEN_NONE;
	long last_status = 0;
	char last_error[256] = "";
	uint64_t other_port_since = 0, other_port_checked = 0, busy_at = 0;
	uint16_t other_port = 0;
	/* Looked up by its identity once; then the pidfd says when it ends (where there is one). */
	bool look_at_server = true;

	for (;;) {
		_cleanup_free_ pid_t *pids = NULL;
		size_t n = 0;
		enum listen_state state = LISTEN_NONE;
		bool taken = false;
		struct err e;
		uint64_t now = clock_now_ms();

		if (look_at_server && !proc_is(sup->server_pid, sup->server_start)) {
			char how[256], why[512];
			/* Give the supervisor a moment to record how it ended. */
			for (int i = 0; i < 50 && server_exit_reason(p, how, sizeof(how)) != 1; i++)
				usleep(10000);
			boot_step_explain_exit(how, env, why, sizeof(why));
			return err_set(err, ERR_FAILED, ECHILD,
			               "the server %s before it was ready%s", how, why);
		}
		if (boot_step_interrupted(ctx, err))
			return -1;
		if (now >= ctx->deadline_ms) {
			uint16_t other = 0;
			if (procset_pids(ctx->procs, &pids, &n, &e) == 0)
				other = server_other_port(p, pids, n);
			if (last_state == LISTEN_NONE && other)
				return err_set(
				    err, ERR_FAILED, ETIMEDOUT,
				    "the server did not listen on 127.0.0.1:%u within %u s "
				    "(it listens on port %u instead; start must serve on "
				    "$PORT)",
				    port, p->timeout, other);
			if (last_state == LISTEN_NONE)
				return err_set(
				    err, ERR_FAILED, ETIMEDOUT,
				    "the server did not listen on 127.0.0.1:%u within %u s", port,
				    p->timeout);
			if (last_status)
				return err_set(
				    err, ERR_FAILED, ETIMEDOUT,
				    "the server was not ready within %u s: %s answered %ld "
				    "(ready means 200, 401 or 405)",
				    p->timeout, mcp_path, last_status);
			return err_set(err, ERR_FAILED, ETIMEDOUT,
			               "the server was not ready within %u s: %s", p->timeout,
			               last_error[0] ? last_error : "no answer");
		}
		look_at_server = pidfd < 0;
		/*
		 * A look while nobody listens on the port is one question to the kernel; the boot's
		 * processes are listed only when someone does, and for the other-port check.
		 */
		if (listen_check_port_taken((uint16_t)port, &taken, &e) < 0)
			return err_set(err, ERR_FAILED, e.code, "%s", e.msg);
		if ((taken || now - other_port_checked >= WRONG_PORT_CHECK_MS) &&
		    procset_pids(ctx->procs, &pids, &n, &e) < 0)
			return err_set(err, ERR_FAILED, e.code, "%s", e.msg);
		if (taken && listen_check((uint16_t)port, pids, n, &state, &e) < 0)
			return err_set(err, ERR_FAILED, e.code, "%s", e.msg);
		last_state = state;
		if (state == LISTEN_NONE && now - other_port_checked >= WRONG_PORT_CHECK_MS) {
			other_port_checked = now;
			other_port = server_other_port(p, pids, n);
			if (!other_port)
				other_port_since = 0;
			else if (!other_port_since)
				other_port_since = busy_at = now;
			if (other_port && procs_busy(pids, n))
				busy_at = now;
		} else if (state != LISTEN_NONE) {
			other_port_since = 0;
		}
		/* Listening elsewhere, idle, and still not on $PORT after the grace: fail now,
		 * not at the deadline. */
		if (other_port_since && now - other_port_since >= WRONG_PORT_GRACE_MS &&
		    now - busy_at >= WRONG_PORT_IDLE_MS)
			return err_set(err, ERR_FAILED, EADDRNOTAVAIL,
			               "the server did not listen on 127.0.0.1:%u (it listens on "
			               "port %u instead; start must serve on $PORT)",
			               port, other_port);
		if (state == LISTEN_FOREIGN)
			return err_set(err, ERR_FAILED, EADDRINUSE,
			               "port %u is held by a process that is not part of this boot",
			               port);
		if (state == LISTEN_OURS_V6_ONLY || state == LISTEN_OURS_OTHER_ADDR) {
			if (!wrong_since)
				wrong_since = now;
			if (now - wrong_since >= WRONG_LISTENER_GRACE_MS)
				return err_set(
				    err, ERR_FAILED, EADDRNOTAVAIL,
				    state == LISTEN_OURS_V6_ONLY
				        ? "the server listens only on [::1]:%u; it must "
				          "listen on 127.0.0.1:%u"
				        : "the server listens on port %u but not on loopback; "
				          "it must listen on 127.0.0.1:%u",
				    port, port);
		} else {
			wrong_since = 0;
		}
		if (state == LISTEN_OURS) {
			long status = 0;
			if (!seen_listening) {
				seen_listening = true;
				observe(ctx, "start", "listening", NULL);
			}
			if (ready_probe("127.0.0.1", (uint16_t)port, mcp_path, &status, NULL, &e) ==
			        0 &&
			    ready_status_ok(status))
				return 0;
			if (status)
				last_status = status;
			else
				snprintf(last_error, sizeof(last_error), "%s", e.msg);
		}
		{
			struct pollfd pfd[2] = {{.fd = pidfd, .events = POLLIN},
			                        {.fd = ctx->signal_fd, .events = POLLIN}};
			bool fast = fast_looks && now - since < READY_POLL_FAST_FOR_MS;
			if (poll(pfd, 2, fast ? READY_POLL_MS : READY_POLL_SLOW_MS) > 0 &&
			    (pfd[0].revents & POLLIN))
				look_at_server = true;
		}
	}
}

/*
 * A workspace holds one app's boot (its state, logs, databases and runtime.json): a boot of
 * another app directory there is refused before anything of the first is touched.
 */
static int refuse_other_app(const struct boot_plan *p, const struct boot_state *prev,
                            struct err *err)
{
	if (p->shape != BOOT_SHAPE_DIRECTORY || !prev->app_dir ||
	    strcmp(prev->app_dir, p->app_dir) == 0)
		return 0;
	return err_set(err, ERR_REFUSED, EBUSY,
	               "the workspace %s holds the boot of another app, %s: give %s a workspace of "
	               "its own (--workspace DIR), or discard the other one first "
	               "(sandbox-app-boot --discard %s)",
	               p->workspace, prev->app_dir, p->app_dir, prev->app_dir);
}

/*
 * --restart reruns manifest and start on a ready boot's checkout; --from STEP resumes a failed
 * boot: each is refused, before anything changes, when the last boot is not in that state.
 * prev_r and prev_err: how loading prev went (a damaged state.json refuses a resume).
 */
static int refuse_resume(const struct boot_plan *p, const struct boot_options *o,
                         const struct boot_state *prev, int prev_r, const struct err *prev_err,
                         struct err *err)
{
	const char *status;

	if (!o->restart && !o->from_step)
		return 0;
	if (prev_r < 0) {
		*err = *prev_err;
		return err_ret(err);
	}
	status = prev_r == 1 || !prev->status ? "none" : prev->status;
	/* A boot whose process is gone without saying how it ended failed, as far as we know. */
	if (strcmp(status, "booting") == 0 &&
	    !(prev->boot_pid > 1 && proc_is(prev->boot_pid, prev->boot_start)))
		status = "failed";
	if (strcmp(status, o->restart ? "ready" : "failed") == 0)
		return 0;
	return err_set(err, ERR_REFUSED, EINVAL,
	               "%s needs a %s boot, and the last boot of %s is %s%s",
	               o->restart ? "--restart" : "--from", o->restart ? "ready" : "failed",
	               p->app_dir, status,
	               o->restart ? ": boot it without --restart"
	                          : ": boot it without --from (or --restart if it is ready)");
}

/*
 * Directory shape: the platform's one GET http://<ip>:8080/up must answer 200, asked here
 * through the forwarder as the platform asks it once the boot is ready. The app's
 * own part of the answer (the request's round trip less libcurl's set-up; the forwarder's relay
 * of it, tens of microseconds, inside it) is added to *app_us.
 */
static int check_up(const struct boot_plan *p, int64_t *app_us, struct err *err)
{
	struct err e;
	long status = 0;
	int64_t answer_us = 0;
	const char *host =
	    strcmp(p->listen_addr, "0.0.0.0") == 0 || strcmp(p->listen_addr, "::") == 0
	        ? "127.0.0.1"
	        : p->listen_addr;

	if (ready_probe(host, (uint16_t)p->listen_port, "/up", &status, &answer_us, &e) < 0 &&
	    !status)
		return err_set(err, ERR_FAILED, e.code, "GET /up through %s:%u failed: %s",
		               p->listen_addr, p->listen_port, e.msg);
	*app_us += answer_us;
	if (status == 200)
		return 0;
	if (status == 404)
		return err_set(err, ERR_FAILED, ENOENT,
		               "the app has no /up route (GET /up answered 404); the platform "
		               "checks it once after the boot: add a route that answers 200, e.g. "
		               "`get \"up\" => \"rails/health#show\"` (Rails 7.1+) or a controller "
		               "action that renders plain text");
	return err_set(err, ERR_FAILED, EPROTO,
	               "GET /up through %s:%u answered %ld; the platform needs 200", p->listen_addr,
	               p->listen_port, status);
}

/* The app's own part of the answer is added to *app_us. */
static int check_start_url(const struct boot_plan *p, unsigned port, int64_t *app_us,
                           struct err *err)
{
	struct err e;
	long status = 0;
	int64_t answer_us = 0;

	if (!p->start_url)
		return 0;
	if (ready_probe("127.0.0.1", (uint16_t)port, p->start_url, &status, &answer_us, &e) < 0 &&
	    !status)
		return err_set(err, ERR_FAILED, e.code, "GET %s failed: %s", p->start_url, e.msg);
	*app_us += answer_us;
	if (status >= 500)
		return err_set(err, ERR_FAILED, EPROTO, "GET %s answered %ld", p->start_url,
		               status);
	return 0;
}

/* The MCP token added to the boot's scrubber, and the manifest's log scrubbed again with it. */
static int manifest_token_scrub(const struct boot_plan *p, const struct manifest *m,
                                struct err *err)
{
	int r;

	if (!m->mcp_token)
		return 0;
	r = scrub_add(p->scrub, m->mcp_token, strlen(m->mcp_token));
	if (r < 0) {
		errno = -r;
		return err_errno(err, "cannot add the MCP token to the scrubber");
	}
	log_rescrub(p, p->manifest.log_path);
	return 0;
}

/* What the supervisor is given (its status file's path in *ret_status_path, to free). */
static int start_spec_init(const struct step_context *ctx, char *const *env, unsigned port,
                           struct supervisor_spec *ret, char **ret_status_path, struct err *err)
{
	const struct boot_plan *p = ctx->plan;

	if (asprintf(ret_status_path, "%s/supervisor.json", p->state_dir) < 0) {
		*ret_status_path = NULL;
		return err_oom(err);
	}
	*ret = (struct supervisor_spec){
	    .command = p->start.command,
	    .cwd = p->app_dir,
	    .env = env,
	    .user = &p->user,
	    .log_path = p->start.log_path,
	    .status_path = *ret_status_path,
	    .scrub = p->scrub,
	    .cgroup_path = procset_cgroup_path(ctx->procs),
	    .listen_addr = p->listen_addr,
	    .listen_port = (uint16_t)p->listen_port,
	    .target_port = (uint16_t)port,
	    .log_max_bytes = BOOT_LOG_MAX_BYTES,
	    .grace_ms = p->grace_ms,
	};
	return 0;
}

/*
 * The server started (under the supervisor: the one prepared beside the manifest, or one
 * started now) and answering; runtime.json written meanwhile, while the server starts, into
 * runtime (committed by the caller once ready).
 */
static int run_start(const struct step_context *ctx, const struct supervisor_spec *spec,
                     struct supervisor_pending *pending, unsigned port, const struct manifest *m,
                     struct boot_state *st, struct file_stage *runtime, struct boot_result *res,
                     struct err *err)
{
	const struct boot_plan *p = ctx->plan;
	char *const *env = spec->env;
	struct supervisor_info info = {0};
	uint64_t started_at;
	int64_t app_us;
	int rc;

	/* Saved once the supervisor is up (a few ms), with its identity and the server's. */
	mark_state_phase(st, "booting", "start", "start");
	result_fail_at(res, "start", p->start.log_path);
	{
		/* The log starts with the command, like every step's. */
		_cleanup_free_ char *header = NULL;
		_cleanup_close_ int fd =
		    open(p->start.log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
		         0600);
		if (fd >= 0 && asprintf(&header, "$ %s\n", p->start.command) >= 0)
			file_write_all(fd, header, strlen(header));
	}
	/*
	 * From now on the MCP token is a secret too, also in what the manifest step printed: in
	 * our scrubber before a supervisor forked now copies it, after the launch of one prepared
	 * beside the manifest (which is sent the token), whatever the launch's outcome.
	 */
	if (pending->fd < 0) {
		rc = manifest_token_scrub(p, m, err);
		if (rc == 0)
			rc = supervisor_start(spec, &info, err);
	} else {
		struct err scrub_err;

		rc = supervisor_launch(pending, m->mcp_token, &info, err);
		/* A server started meanwhile is stopped by the failure's stop (supervisor.json). */
		if (manifest_token_scrub(p, m, &scrub_err) < 0) {
			*err = scrub_err;
			return -1;
		}
		/* Gone before the go (killed meanwhile), it started nothing: one started now. */
		if (rc < 0 && err->code == ESRCH) {
			log_debug("%s; starting another", err->msg);
			err_clear(err);
			rc = supervisor_start(spec, &info, err);
		}
	}
	/* Only now, with the token masked: a manifest path may hold it. */
	observe(ctx, "manifest", "done", m->mcp_path);
	if (rc < 0)
		return err_wrap(err, "cannot start the server");
	st->supervisor_pid = info.supervisor_pid;
	st->supervisor_start = info.supervisor_start;
	st->server_pid = info.server_pid;
	st->server_start = info.server_start;
	st->port = port;
	save_state(p, st, "booting", "start");
	if (procset_backend_of(ctx->procs) == PROCSET_NO_CGROUP)
		procset_add_group(ctx->procs, info.server_pid, info.server_start);
	procset_add_root(ctx->procs, info.supervisor_pid, info.supervisor_start);
	observe(ctx, "start", "started", p->start.command);

	/*
	 * The server's own time runs from its exec, as a step's does: the saves above and the
	 * staging below run beside its start (a server ready before they end is charged them: an
	 * upper bound of its time).
	 */
	started_at = info.server_spawned_us ? info.server_spawned_us : clock_now_us();
	if (manifest_stage_runtime(m, p->runtime_path, 0, 0, runtime, err) < 0) {
		result_fail_at(res, "start", NULL);
		return -1;
	}
	if (wait_ready(ctx, &info, env, port, m->mcp_path, err) < 0)
		return -1;
	/*
	 * The server's own part: from its exec to answering (the probes' few ms included), then
	 * its answers to start_url and to /up through the forwarder.
	 */
	app_us = (int64_t)(clock_now_us() - started_at);
	observe(ctx, "start", "answered", m->mcp_path);
	rc = check_start_url(p, port, &app_us, err);
	if (rc == 0 && p->check_up && p->listen_addr)
		rc = check_up(p, &app_us, err);
	boot_state_phase_find(st, "start")->app_ms = (app_us + 500) / 1000; /* rounded, not cut */
	if (rc < 0)
		return -1;
	observe(ctx, "start", "done", NULL);
	return 0;
}

/* The logs of a boot and their sizes when it began (logs are appended to, boot after boot). */
struct log_marks {
	const char **paths;
	uint64_t *sizes;
	size_t n;
	char *preflight;
};

static void log_marks_dispose(struct log_marks *m)
{
	free(m->paths);
	free(m->sizes);
	free(m->preflight);
}

static void log_marks_take(const struct boot_plan *p, struct log_marks *m)
{
	size_t cap = p->n_steps + 3;
	struct stat st;

	m->paths = calloc(cap, sizeof(*m->paths));
	m->sizes = calloc(cap, sizeof(*m->sizes));
	if (!m->paths || !m->sizes ||
	    asprintf(&m->preflight, "%s/preflight.log", p->logs_dir) < 0) {
		m->preflight = NULL;
		return; /* then every tail shows the whole log, as before */
	}
	for (size_t i = 0; i < p->n_steps; i++)
		m->paths[m->n++] = p->steps[i].log_path;
	m->paths[m->n++] = p->manifest.log_path;
	m->paths[m->n++] = p->start.log_path;
	m->paths[m->n++] = m->preflight;
	for (size_t i = 0; i < m->n; i++)
		m->sizes[i] = m->paths[i] && stat(m->paths[i], &st) == 0 ? (uint64_t)st.st_size : 0;
}

static uint64_t log_marks_of(const struct log_marks *m, const char *path)
{
	for (size_t i = 0; path && i < m->n; i++)
		if (m->paths[i] && strcmp(m->paths[i], path) == 0)
			return m->sizes[i];
	return 0;
}

int boot_engine_run(struct boot_plan *p, const struct boot_options *o,
                    const struct boot_observer *obs, struct boot_result *res, struct err *err)
{
	_cleanup_procset_ struct procset *procs = NULL;
	_cleanup_close_ int lock = -1;
	_cleanup_strv_ char **port_env = NULL;
	_cleanup_free_ char *sup_status_path = NULL;
	struct supervisor_spec sup_spec;
	struct supervisor_pending sup_pending = SUPERVISOR_PENDING_INIT;
	struct boot_state prev = {0}, st = {0};
	struct beside_step toolchain_save = {.plan = p, .st = &st};
	struct err prev_err;
	int prev_r;
	_cleanup_(log_marks_dispose) struct log_marks marks = {0};
	struct manifest m = {0};
	_cleanup_(file_stage_abort) struct file_stage runtime = {0};
	const char *limit_hit = NULL;
	struct boot_disk_budget disk = {0};
	int64_t command_ms = -1;
	struct step_context ctx = {
	    .plan = p,
	    .obs = obs,
	    .deadline_ms = clock_now_ms() + (uint64_t)p->timeout * 1000,
	    .grace_ms = p->grace_ms,
	    .signal_fd = -1,
	    .limit_hit = &limit_hit,
	    .disk = &disk,
	    .command_ms = &command_ms,
	};
	_cleanup_close_ int signal_fd = -1;
	sigset_t stop_signals, saved_mask;
	char set_name[64];
	size_t from = 0;
	unsigned port = p->port;
	int r = -1;
	memset(res, 0, sizeof(*res));
	result_fail_at(res, "preflight", NULL);
	if (boot_state_lock_acquire(p->state_dir, &lock, err) < 0)
		return -1;
	/* The last boot's state, read once: what the refusals and a resume go by. */
	prev_r = boot_state_load(p->state_dir, &prev, &prev_err);
	if (refuse_other_app(p, &prev, err) < 0 ||
	    refuse_resume(p, o, &prev, prev_r, &prev_err, err) < 0) {
		boot_state_dispose(&prev);
		return -1;
	}
	log_marks_take(p, &marks);
	/* TERM, INT and HUP stop the boot cleanly (its processes, state "failed"). */
	sigfd_set(&stop_signals, SIGTERM, SIGINT, SIGHUP, 0);
	signal_fd = sigfd_open(&stop_signals, &saved_mask, err);
	if (signal_fd < 0) {
		/* Without it the boot still runs; a signal then stops it the default way. */
		log_debug("%s", err->msg);
		err_clear(err);
	}
	ctx.signal_fd = signal_fd;

	if (prev_r < 0)
		log_debug("previous state ignored: %s", prev_err.msg);
	if (o->from_step) {
		int idx = boot_plan_step_index(p, o->from_step);
		from = idx < 0 ? 0 : (size_t)idx;
	} else if (o->restart) {
		from = p->n_steps;
	}
	if (stop_previous(p, &prev, prev_r, err) < 0)
		goto out;
	unlink(p->runtime_path);
	file_stage_remove(p->runtime_path); /* left by a boot that died while its server started */

	boot_state_set(&st.shape, p->shape == BOOT_SHAPE_SPEC ? "spec" : "directory");
	boot_state_set(&st.app_dir, p->app_dir);
	boot_state_set(&st.runtime_path, p->runtime_path);
	boot_state_set(&st.session_id, p->session_id);
	boot_state_set(&st.mode, p->mode);
	boot_state_set(&st.kind, p->kind);
	boot_state_set(&st.recorded_steps, p->recorded_steps);
	boot_state_set(&st.resumed_from, o->from_step);
	st.restarted = o->restart;
	st.started_ms = clock_realtime_ms();
	if (boot_state_phase_add(&st, "preflight", NULL) < 0 ||
	    boot_state_phase_add(&st, "toolchain", NULL) < 0) {
		err_oom(err);
		goto out;
	}
	for (size_t i = 0; i < p->n_steps; i++) {
		char phase[64];
		step_phase_name(p, i, phase, sizeof(phase));
		if (boot_state_phase_add(&st, phase, p->steps[i].log_path) < 0) {
			err_oom(err);
			goto out;
		}
	}
	if (boot_state_phase_add(&st, "manifest", p->manifest.log_path) < 0 ||
	    boot_state_phase_add(&st, "start", p->start.log_path) < 0) {
		err_oom(err);
		goto out;
	}
	st.boot_pid = getpid();
	st.boot_start = proc_start_time(getpid());
	{
		unsigned char id[8];
		char hex[17];
		randombytes_buf(id, sizeof(id));
		sodium_bin2hex(hex, sizeof(hex), id, sizeof(id));
		boot_state_set(&st.boot_id, hex);
		snprintf(res->boot_id, sizeof(res->boot_id), "%s", hex);
	}
	/* Steps completed before the one we resume from count as done. */
	for (size_t i = 0; i < from && i < p->n_steps && prev.completed; i++)
		if (strv_contains(prev.completed, p->steps[i].name))
			strv_push(&st.completed, p->steps[i].name);

	/* Named after the state directory: one set per app, whatever its session id says. */
	{
		unsigned char h[8];
		char hex[17];
		crypto_generichash(h, sizeof(h), (const unsigned char *)p->state_dir,
		                   strlen(p->state_dir), NULL, 0);
		sodium_bin2hex(hex, sizeof(hex), h, sizeof(h));
		snprintf(set_name, sizeof(set_name), "boot-%s", hex);
	}
	if (procset_create(set_name, &procs, err) < 0)
		goto out;
	procset_add_root(procs, getpid(), proc_start_time(getpid()));
	ctx.procs = procs;
	boot_state_set(&st.cgroup, procset_cgroup_path(procs));
	if (boot_limits_apply(p, procs, set_name, o->notes, err) < 0)
		goto out;
	boot_disk_budget_init(&disk, p->workspace, p->state_dir, p->limits.disk);
	boot_limits_state(p, &st);
	if (boot_egress_apply(p, &st, o->notes, err) < 0)
		goto out;
	save_state(p, &st, "booting", "preflight");

	if (prepare_directories(p, err) < 0 || wait_old_trees(&ctx, err) < 0)
		goto out;
	/* Saved only before a service starts: without one the phase lasts a moment. */
	mark_state_phase(&st, "booting", "toolchain", "toolchain");
	if (boot_services_start(p, beside_step, &toolchain_save, err) < 0) {
		result_fail_at(res, "services", NULL);
		goto out;
	}
	/*
	 * Orphans of double-forking steps reparent to us from now on, so the fallback walk
	 * finds them; services started above are not ours to stop and stay outside.
	 */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	/*
	 * In the limits' v1 cgroups ourselves from now on (once, not once per spawn): the steps,
	 * the supervisor and the server are born there. After the services, which outlive us.
	 */
	if (procset_enter_limits(procs, err) < 0) {
		err_wrap(err, "cannot apply the limits");
		goto out;
	}
	if (run_setup(&ctx, &prev, &st, from < p->n_steps ? from : p->n_steps, res, err) < 0)
		goto out;

	result_fail_at(res, "start", NULL);
	if (!port) {
		uint16_t free_port;
		if (listen_check_pick_free_port(&free_port, err) < 0)
			goto out;
		port = free_port;
	}
	res->port = port;
	if (child_env_with_port(p->env, port, &port_env, err) < 0)
		goto out;
	if (start_spec_init(&ctx, port_env, port, &sup_spec, &sup_status_path, err) < 0)
		goto out;
	if (run_manifest(&ctx, port_env, &sup_spec, &sup_pending, &st, &m, res, err) < 0)
		goto out;
	snprintf(res->mcp_path, sizeof(res->mcp_path), "%s", m.mcp_path);
	if (run_start(&ctx, &sup_spec, &sup_pending, port, &m, &st, &runtime, res, err) < 0)
		goto out;
	if (file_stage_commit(&runtime, err) < 0) {
		result_fail_at(res, "start", NULL);
		goto out;
	}
	boot_state_set(&st.reason, NULL);
	save_state(p, &st, "ready", "ready");
	observe(&ctx, "ready", "ready", p->runtime_path);
	r = 0;
out:
	/* A supervisor prepared for a server that will not start; before the limits go. */
	supervisor_dismiss(&sup_pending);
	if (r < 0) {
		struct err stop_err;
		res->log_from = log_marks_of(&marks, res->log_path);
		err_scrub(p, err);
		boot_state_set(&st.reason, err->msg);
		boot_state_set(&st.limit_hit, limit_hit);
		st.kept = p->keep_on_failure;
		save_state(p, &st, "failed", res->step);
		observe(&ctx, res->step, "failed", err->msg);
		/* Out of the limits' cgroups first, or they could not be removed. */
		if (procs && !p->keep_on_failure)
			procset_leave_limits(procs);
		if (!p->keep_on_failure &&
		    boot_engine_stop(p->state_dir, p->grace_ms, &stop_err) < 0)
			log_debug("stopping after the failure: %s", stop_err.msg);
		if (procs && !p->keep_on_failure &&
		    procset_stop(procs, p->grace_ms, getpid(), &stop_err) < 0)
			log_debug("stopping after the failure: %s", stop_err.msg);
		else if (procs && !p->keep_on_failure)
			procset_remove_limits(procs); /* emptied: its limits' cgroups go */
	}
	manifest_dispose(&m);
	boot_state_dispose(&prev);
	boot_state_dispose(&st);
	sigprocmask(SIG_SETMASK, &saved_mask, NULL);
	return r;
}

/*
 * A supervisor that state.json does not name: an engine killed after the supervisor started
 * and before the save that records it leaves one running (outside a cgroup2 set, holding the
 * forwarder's port), which nothing else would stop. supervisor.json names it, as the
 * supervisor wrote it when it started; it gets TERM if that very process (pid and start time)
 * still runs.
 */
static void stop_unrecorded_supervisor(const char *state_dir, const struct boot_state *st,
                                       unsigned grace_ms)
{
	_cleanup_free_ char *path = NULL;
	uint64_t start = 0;
	pid_t pid = 0;
	struct err e;

	if (asprintf(&path, "%s/supervisor.json", state_dir) < 0)
		return;
	err_clear(&e);
	if (supervisor_read_identity(path, &pid, &start, &e) < 0)
		return;
	if ((pid == st->supervisor_pid && start == st->supervisor_start) || !proc_is(pid, start))
		return;
	log_info("stopping supervisor %d, which supervisor.json names and state.json does not",
	         (int)pid);
	proc_signal_wait(pid, start, SIGTERM, grace_ms + 3000);
}

/*
 * boot_engine_stop() with the state already loaded into st (which a boot in progress makes it
 * load again, and a stop of a ready boot marks stopped); the caller disposes of it.
 */
static int engine_stop_loaded(const char *state_dir, struct boot_state *st, unsigned grace_ms,
                              struct err *err)
{
	_cleanup_procset_ struct procset *procs = NULL;
	int r = 0;

	if (st->status && strcmp(st->status, "booting") == 0 && st->boot_pid > 1 &&
	    st->boot_pid != getpid() && proc_is(st->boot_pid, st->boot_start)) {
		/* A boot in progress stops itself (and its steps) on TERM; then we go on. */
		proc_signal_wait(st->boot_pid, st->boot_start, SIGTERM, grace_ms + 5000);
		boot_state_dispose(st);
		r = boot_state_load(state_dir, st, err);
		if (r != 0)
			return r < 0 ? r : 0;
	}
	/*
	 * The supervisor stops the server's group itself, with the grace period. Only the process
	 * recorded, by its start time (a zombie's pidfd reads as ended already).
	 */
	if (st->supervisor_pid > 1 && st->supervisor_start)
		proc_signal_wait(st->supervisor_pid, st->supervisor_start, SIGTERM,
		                 grace_ms + 3000);
	stop_unrecorded_supervisor(state_dir, st, grace_ms);
	r = procset_open(st->cgroup ? st->cgroup : "", &procs, err);
	if (r < 0 && err->code == ENOENT) {
		/*
		 * The boot's cgroup is gone (the instance restarted, or a stop removed it): what
		 * may be left is found by its recorded process groups, start times checked.
		 */
		log_debug("%s: stopping by process group", err->msg);
		err_clear(err);
		r = procset_open("", &procs, err);
	}
	if (r >= 0) {
		if (st->server_pid > 1)
			procset_add_group(procs, st->server_pid, st->server_start);
		if (st->supervisor_pid > 1)
			procset_add_root(procs, st->supervisor_pid, st->supervisor_start);
		r = procset_stop(procs, grace_ms, getpid(), err);
		/*
		 * Emptied: its cgroup goes too, a failing boot's included (the engine is never in
		 * the boot's own cgroup: its children are created there, proc_spawn; the limits'
		 * v1 cgroups it joined are left before they are removed, procset_leave_limits).
		 */
		if (r >= 0)
			procset_destroy(procs);
	}
	/* A boot killed while its server started leaves its runtime.json staged (the token). */
	if (r >= 0 && st->runtime_path)
		file_stage_remove(st->runtime_path);
	if (r >= 0 && st->status && strcmp(st->status, "ready") == 0) {
		boot_state_set(&st->status, "stopped");
		st->supervisor_pid = 0;
		st->server_pid = 0;
		boot_state_save(state_dir, st, err);
	}
	return r;
}

int boot_engine_stop(const char *state_dir, unsigned grace_ms, struct err *err)
{
	struct boot_state st;
	int r;

	r = boot_state_load(state_dir, &st, err);
	if (r < 0)
		return r;
	if (r == 1)
		return 0;
	r = engine_stop_loaded(state_dir, &st, grace_ms, err);
	boot_state_dispose(&st);
	return r;
}
