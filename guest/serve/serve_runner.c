/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The boot runner: `sandbox-agent serve --runner`, started by the daemon for each boot and
 * each stop (serve_jobs.c) with a SOCK_SEQPACKET socket on fd 3. It reads the request and the
 * secrets, runs the boot engine (the same one as sandbox-app-boot) or stops a boot, and
 * reports boot.event, boot.log and the result, one message per record. When the daemon goes
 * away the runner carries on without reporting: the boot's state.json and logs tell the next
 * daemon what happened.
 *
 * Secrets: `boot` secrets become the environment of setup, manifest and server, by name, as
 * `--pass-env NAME` would pass a caller's variable; every secret (any scope) is added to the
 * boot's scrubber, so none of them reaches a log, an event or the host in the clear.
 */
#include "serve_runner.h"
#include "serve_types.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "boot_stop.h"
#include "boot_engine.h"
#include "boot_plan.h"
#include "boot_services.h"
#include "boot_state.h"
#include "file.h"
#include "log.h"
#include "proc.h"
#include "strv.h"
#include "secrets_store.h"
#include "serve_ops_checkout.h"
#include "serve_ops_publish.h"

#define RUNNER_RECORD_MAX (256 * 1024)

extern char **environ;

struct runner {
	int fd;
	bool gone; /* the daemon went away: stop reporting */
	json_object *req;
	uint16_t kind; /* MSG_BOOT_START, MSG_STOP or MSG_CHECKOUT_FETCH */
	struct secrets_store *secrets;
	struct boot_plan *plan;
	char last_step[64];
	char boot_id[17]; /* the boot's id once the engine gave it one */
};

static void say(struct runner *r, uint16_t type, json_object *json, const void *data, size_t len)
{
	struct msg m = {.type = type, .json = json, .data = data, .data_len = len};
	struct err err;
	size_t need;
	uint8_t *buf;
	ssize_t n;

	if (r->gone)
		goto out;
	need = msg_encoded_len(&m, &err);
	buf = need ? malloc(need) : NULL;
	if (!buf)
		goto out;
	n = msg_encode(&m, buf, need, &err);
	if (n > 0) {
		do
			n = send(r->fd, buf, (size_t)n, MSG_NOSIGNAL);
		while (n < 0 && errno == EINTR);
		if (n < 0) {
			log_debug("runner: the daemon went away (%m); the boot carries on");
			r->gone = true;
		}
	}
	free(buf);
out:
	json_object_put(json);
}

static int64_t unix_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the request ---- */

static int request_read(struct runner *r, struct err *err)
{
	_cleanup_free_ uint8_t *buf = malloc(RUNNER_RECORD_MAX);

	if (!buf)
		return err_oom(err);
	if (secrets_store_new(&r->secrets, err) < 0)
		return -1;
	for (;;) {
		struct msg m;
		ssize_t n;
		int rc = 0;

		do
			n = recv(r->fd, buf, RUNNER_RECORD_MAX, MSG_TRUNC);
		while (n < 0 && errno == EINTR);
		if (n <= 0)
			return err_set(err, ERR_FAILED, EPIPE, "the request ended early");
		if ((size_t)n > RUNNER_RECORD_MAX || msg_decode(buf, (size_t)n, &m, err) < 0) {
			sodium_memzero(buf, RUNNER_RECORD_MAX);
			return err_set(err, ERR_FAILED, EBADMSG, "a malformed request");
		}
		switch (m.type) {
		case MSG_BOOT_START:
		case MSG_STOP:
		case MSG_CHECKOUT_FETCH:
		case MSG_PUBLISH_COMMIT:
			r->kind = m.type;
			r->req = json_object_get(m.json);
			break;
		case MSG_SECRETS_PUT: {
			const char *name = msg_get_string(&m, "name");
			int scope = secrets_store_scope_from_string(msg_get_string(&m, "scope"));
			rc = secrets_store_put(r->secrets, name, (enum secret_scope)scope, m.data,
			                       m.data_len, NULL, err);
			break;
		}
		case MSG_CLOSE:
			msg_dispose(&m);
			sodium_memzero(buf, RUNNER_RECORD_MAX);
			return r->req ? 0 : err_set(err, ERR_FAILED, EBADMSG, "no request");
		default:
			break;
		}
		msg_dispose(&m);
		sodium_memzero(buf, (size_t)n);
		if (rc < 0)
			return rc;
	}
}

static const char *req_string(struct runner *r, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(r->req, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static int64_t req_int(struct runner *r, const char *key, int64_t dflt)
{
	json_object *v;

	if (!json_object_object_get_ex(r->req, key, &v) || !json_object_is_type(v, json_type_int))
		return dflt;
	return json_object_get_int64(v);
}

static bool req_bool(struct runner *r, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(r->req, key, &v) &&
	       json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
}

/* ---- the boot ---- */

/* The protocol's phase of an engine step. */
static const char *phase_of(struct runner *r, const char *step, const char *phase)
{
	if (strcmp(phase, "ready") == 0)
		return "ready";
	if (strcmp(phase, "failed") == 0)
		return "failed";
	if (strcmp(step, "manifest") == 0)
		return "manifest";
	if (strcmp(step, "start") == 0)
		return "server";
	if (strcmp(step, "preflight") == 0 || strcmp(step, "configuration") == 0 ||
	    strcmp(step, "services") == 0)
		return "config";
	return "setup";
}

static void on_phase(void *userdata, const char *step, const char *phase, const char *detail)
{
	struct runner *r = userdata;
	json_object *o = json_object_new_object();
	int idx = r->plan ? boot_plan_step_index(r->plan, step) : -1;

	snprintf(r->last_step, sizeof(r->last_step), "%s", step);
	json_object_object_add(o, "phase", json_object_new_string(phase_of(r, step, phase)));
	json_object_object_add(o, "step", json_object_new_string(step));
	if (idx >= 0 && r->plan && (size_t)idx < r->plan->n_steps)
		json_object_object_add(o, "index", json_object_new_int(idx));
	json_object_object_add(
	    o, "status", json_object_new_string(strcmp(phase, "ready") == 0 ? "done" : phase));
	json_object_object_add(o, "at", json_object_new_int64(unix_ms()));
	if (detail) {
		size_t len = strlen(detail);
		_cleanup_free_ char *clean = r->plan && r->plan->scrub
		                                 ? scrub_string(r->plan->scrub, detail, len, &len)
		                                 : NULL;
		json_object_object_add(
		    o, "detail", json_object_new_string_len(clean ? clean : detail, (int)len));
	}
	say(r, MSG_BOOT_EVENT, o, NULL, 0);
}

/* The log a step writes: its path, and the name the protocol calls it by. */
static const char *step_log(struct runner *r, const char *step, char *name, size_t len)
{
	const struct boot_plan *p = r->plan;
	const char *path = NULL;
	const char *base, *dot;
	int idx;

	if (!p)
		return NULL;
	idx = boot_plan_step_index(p, step);
	if (idx >= 0 && (size_t)idx < p->n_steps)
		path = p->steps[idx].log_path;
	else if (strcmp(step, "manifest") == 0)
		path = p->manifest.log_path;
	else if (strcmp(step, "start") == 0)
		path = p->start.log_path;
	if (!path)
		return NULL;
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	dot = strrchr(base, '.');
	snprintf(name, len, "%.*s", dot ? (int)(dot - base) : (int)strlen(base), base);
	return path;
}

/* Offsets count the bytes of PATH.1 and then PATH (docs/daemon.md, "Log offsets"). */
static uint64_t log_size(const char *path)
{
	char old[PATH_MAX];
	struct stat st;
	uint64_t n = 0;

	snprintf(old, sizeof(old), "%s.1", path);
	if (stat(old, &st) == 0)
		n += (uint64_t)st.st_size;
	if (stat(path, &st) == 0)
		n += (uint64_t)st.st_size;
	return n;
}

static void on_output(void *userdata, const char *step, const char *buf, size_t len)
{
	struct runner *r = userdata;
	char name[64];
	const char *path = step_log(r, step, name, sizeof(name));
	json_object *o;
	uint64_t end;

	if (!path || r->gone)
		return;
	end = log_size(path); /* the bytes were written before we were called */
	o = json_object_new_object();
	json_object_object_add(o, "log", json_object_new_string(name));
	json_object_object_add(o, "offset",
	                       json_object_new_int64(end >= len ? (int64_t)(end - len) : 0));
	say(r, MSG_BOOT_LOG, o, buf, len);
}

struct env_build {
	char ***env;
	char ***names;
	char *const *allowed; /* NULL: every boot secret */
};

static int add_boot_secret(void *userdata, const char *name, enum secret_scope scope,
                           const uint8_t *value, size_t len)
{
	struct env_build *b = userdata;
	char *entry;

	if (b->allowed && !strv_contains(b->allowed, name))
		return 0;
	entry = malloc(strlen(name) + len + 2);
	if (!entry)
		return -ENOMEM;
	sprintf(entry, "%s=", name);
	memcpy(entry + strlen(name) + 1, value, len);
	entry[strlen(name) + 1 + len] = '\0';
	strv_env_unset(*b->env, name);
	if (strv_consume(b->env, entry) < 0 || strv_push(b->names, name) < 0)
		return -ENOMEM;
	return 0;
}

static int add_to_scrubber(void *userdata, const char *name, enum secret_scope scope,
                           const uint8_t *value, size_t len)
{
	struct scrubber *s = userdata;
	int r = scrub_add(s, (const char *)value, len);

	return r == -E2BIG ? 0 : r;
}

static void wipe_strv(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		sodium_memzero(v[i], strlen(v[i]));
	strv_free(v);
}

static json_object *runtime_read(const char *path, bool with_token)
{
	_cleanup_free_ char *buf = NULL;
	json_object *o;
	struct err err;
	size_t len;

	if (file_read_capped(AT_FDCWD, path, 60 * 1024, READ_NOFOLLOW, &buf, &len, &err) < 0)
		return NULL;
	o = json_tokener_parse(buf);
	sodium_memzero(buf, len);
	if (o && !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return NULL;
	}
	if (o && !with_token)
		json_object_object_del(o, "mcp_token");
	return o;
}

static void boot_result(struct runner *r, const char *status, int code, const char *reason,
                        const char *step, const char *log, json_object *runtime)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "status", json_object_new_string(status));
	json_object_object_add(o, "exit", json_object_new_int(code));
	if (reason)
		json_object_object_add(o, "reason", json_object_new_string(reason));
	if (step)
		json_object_object_add(o, "step", json_object_new_string(step));
	if (log && log[0])
		json_object_object_add(o, "log", json_object_new_string(log));
	if (runtime)
		json_object_object_add(o, "runtime", runtime);
	if (r->boot_id[0])
		json_object_object_add(o, "boot_id", json_object_new_string(r->boot_id));
	say(r, MSG_BOOT_RESULT, o, NULL, 0);
}

static int run_boot(struct runner *r)
{
	_cleanup_strv_ char **names = NULL;
	_cleanup_strv_ char **allowed = NULL;
	_cleanup_strv_ char **notes = NULL;
	char **env = strv_copy(environ);
	struct boot_observer obs = {.phase = on_phase, .output = on_output, .userdata = r};
	struct boot_options o = {.shape = BOOT_SHAPE_DIRECTORY};
	struct boot_plan plan = {0};
	struct boot_result res = {0};
	struct env_build eb = {.env = &env, .names = &names};
	json_object *pe;
	struct err err;
	int rc;

	err_clear(&err);
	if (!env) {
		boot_result(r, "failed", 1, "Sandbox boot failed: out of memory", NULL, NULL, NULL);
		return 1;
	}
	if (json_object_object_get_ex(r->req, "pass_env", &pe) &&
	    json_object_is_type(pe, json_type_array)) {
		allowed = calloc(1, sizeof(char *));
		for (size_t i = 0; allowed && i < json_object_array_length(pe); i++) {
			json_object *n = json_object_array_get_idx(pe, i);
			if (json_object_is_type(n, json_type_string))
				strv_push(&allowed, json_object_get_string(n));
		}
		eb.allowed = allowed;
	}
	if (secrets_store_visit(r->secrets, SECRET_SCOPE_BOOT, add_boot_secret, &eb) < 0) {
		wipe_strv(env);
		boot_result(r, "failed", 1, "Sandbox boot failed: out of memory", NULL, NULL, NULL);
		return 1;
	}

	if (strcmp(req_string(r, "shape") ?: "directory", "spec") == 0) {
		o.shape = BOOT_SHAPE_SPEC;
		o.spec_path = req_string(r, "spec_path");
	} else {
		o.app_dir = req_string(r, "app_dir");
	}
	o.user = req_string(r, "user");
	o.pass_env = names;
	o.timeout = (unsigned)req_int(r, "timeout", 0);
	o.listen_addr = req_string(r, "listen_addr");
	o.listen_port = (unsigned)req_int(r, "listen_port", 0);
	o.no_forward = req_bool(r, "no_forward");
	o.grace_ms = (unsigned)req_int(r, "grace_ms", 0);
	o.cache_root = req_string(r, "cache_root");
	o.from_step = req_string(r, "from");
	o.restart = req_bool(r, "restart");
	o.caller_env = env;

	o.notes = &notes;
	rc = boot_plan_build(&o, &plan, &err);
	/* sandbox.yml's warnings (and where a syntax error is) reach the controller too. */
	for (size_t i = 0; notes && notes[i]; i++)
		on_phase(r, "configuration", "warning", notes[i]);
	if (rc < 0) {
		char reason[ERR_MSG_MAX + 64];
		wipe_strv(env);
		/* "Sandbox configuration failed: ..." is worded already: no second prefix. */
		snprintf(
		    reason, sizeof(reason), "%s%s",
		    strncmp(err.msg, "Sandbox ", 8) == 0 ? "" : "Sandbox boot refused: ", err.msg);
		on_phase(r, "configuration", "failed", err.msg);
		boot_result(r, "failed", err.cls == ERR_REFUSED ? 2 : 1, reason, "configuration",
		            NULL, NULL);
		return err.cls == ERR_REFUSED ? 2 : 1;
	}
	r->plan = &plan;
	/* Every secret the agent holds is masked in this boot's output, whatever its scope. */
	rc = secrets_store_visit(r->secrets, SECRET_SCOPE_ANY, add_to_scrubber, plan.scrub);
	/* Values live on only in the plan's environments and scrubber. */
	secrets_store_drop_scope(r->secrets, SECRET_SCOPE_ANY);
	if (rc < 0) {
		/* Never a boot whose output could show a secret in clear. */
		wipe_strv(env);
		on_phase(r, "configuration", "failed", "cannot mask the agent's secrets");
		boot_result(r, "failed", 1,
		            "Sandbox boot failed: out of memory while masking the agent's secrets",
		            "configuration", NULL, NULL);
		r->plan = NULL;
		boot_plan_dispose(&plan);
		return 1;
	}

	rc = boot_engine_run(&plan, &o, &obs, &res, &err);
	snprintf(r->boot_id, sizeof(r->boot_id), "%s", res.boot_id);
	wipe_strv(env);
	if (rc == 0) {
		boot_result(r, "ready", 0, NULL, NULL, NULL,
		            runtime_read(plan.runtime_path, req_bool(r, "runtime_token")));
		r->plan = NULL;
		boot_plan_dispose(&plan);
		return 0;
	}
	{
		char reason[ERR_MSG_MAX + 128], log[64] = "";
		const char *base = strrchr(res.log_path, '/');

		if (strncmp(err.msg, "Sandbox ", 8) == 0)
			snprintf(reason, sizeof(reason), "%s", err.msg);
		else if (err.cls == ERR_REFUSED)
			snprintf(reason, sizeof(reason), "Sandbox boot refused: %s", err.msg);
		else
			snprintf(reason, sizeof(reason), "Sandbox %s failed: %s", res.step,
			         err.msg);
		if (base) {
			snprintf(log, sizeof(log), "%s", base + 1);
			if (strrchr(log, '.'))
				*strrchr(log, '.') = '\0';
		}
		boot_result(r, "failed", err.cls == ERR_REFUSED ? 2 : 1, reason, res.step, log,
		            NULL);
	}
	r->plan = NULL;
	boot_plan_dispose(&plan);
	return err.cls == ERR_REFUSED ? 2 : 1;
}

/* ---- stop and discard ---- */

static bool was_running(const char *state_dir)
{
	struct boot_state st;
	struct err err;
	bool running = false;

	if (boot_state_load(state_dir, &st, &err) != 0)
		return false;
	if (st.server_pid > 1 && proc_is(st.server_pid, st.server_start))
		running = true;
	if (st.supervisor_pid > 1 && proc_is(st.supervisor_pid, st.supervisor_start))
		running = true;
	if (st.status && strcmp(st.status, "booting") == 0 && st.boot_pid > 1 &&
	    proc_is(st.boot_pid, st.boot_start))
		running = true;
	boot_state_dispose(&st);
	return running;
}

static void stop_error(struct runner *r, const struct err *e)
{
	struct msg m = {0};

	msg_error_from_err(&m, 0, e, true);
	say(r, MSG_ERROR, json_object_get(m.json), NULL, 0);
	msg_dispose(&m);
}

static int run_stop(struct runner *r)
{
	const char *state_dir = req_string(r, "state_dir");
	const char *app_dir = req_string(r, "app_dir");
	unsigned grace = (unsigned)req_int(r, "grace_ms", BOOT_DEFAULT_GRACE_MS);
	bool discard = req_bool(r, "discard");
	bool running;
	json_object *reply;
	char ws[PATH_MAX];
	struct err err;

	err_clear(&err);
	if (!state_dir || !app_dir) {
		err_set(&err, ERR_REFUSED, EINVAL, "a stop needs the app and state directories");
		stop_error(r, &err);
		return 2;
	}
	{
		struct boot_options o = {.shape = BOOT_SHAPE_DIRECTORY};
		struct boot_stop_request rq = {
		    .state_dir = state_dir,
		    .what = app_dir,
		    .grace_ms = grace,
		    .discard = discard,
		    .options = &o,
		    .fallback_workspace = ws,
		};
		char spec[PATH_MAX];
		struct err warning;
		struct stat st;

		snprintf(spec, sizeof(spec), "%s/spec.json", state_dir);
		if (stat(spec, &st) == 0) {
			o.shape = BOOT_SHAPE_SPEC;
			o.spec_path = spec;
		} else {
			o.app_dir = app_dir;
			rq.app_dir = app_dir;
		}
		o.user = req_string(r, "user");
		o.cache_root = req_string(r, "cache_root");
		o.caller_env = environ;
		/* The workspace, should the configuration no longer load: the app's parent. */
		snprintf(ws, sizeof(ws), "%s", app_dir);
		if (strrchr(ws, '/') && strrchr(ws, '/') != ws)
			*strrchr(ws, '/') = '\0';
		running = was_running(state_dir);
		/* A boot in progress is told to stop (TERM to its runner) and waited for first. */
		if (boot_stop_run(&rq, &warning, &err) < 0) {
			stop_error(r, &err);
			return err.cls == ERR_REFUSED ? 2 : 1;
		}
		if (warning.cls != ERR_NONE)
			log_warn("%s", warning.msg);
	}
	reply = json_object_new_object();
	json_object_object_add(reply, "stopped", json_object_new_boolean(running));
	if (discard)
		json_object_object_add(reply, "discarded", json_object_new_boolean(true));
	say(r, MSG_OK, reply, NULL, 0);
	return 0;
}

/* checkout.fetch (serve_ops_checkout.c): ok with the commit, or the error. */
static int run_checkout_fetch(struct runner *r)
{
	json_object *reply = NULL;
	struct err err;

	err_clear(&err);
	if (serve_ops_checkout_fetch_run(r->req, r->secrets, &reply, &err) == 0) {
		say(r, MSG_OK, reply, NULL, 0);
		return 0;
	}
	stop_error(r, &err);
	return 1;
}

/* publish.commit (serve_ops_publish.c): the pack as publish.data records, then ok. */
static int publish_say(void *userdata, const void *buf, size_t len)
{
	struct runner *r = userdata;

	say(r, MSG_PUBLISH_DATA, NULL, buf, len);
	return r->gone ? -1 : 0;
}

static int run_publish(struct runner *r)
{
	json_object *reply = NULL;
	struct err err;

	err_clear(&err);
	if (serve_ops_publish_run(r->req, publish_say, r, &reply, &err) == 0) {
		say(r, MSG_OK, reply, NULL, 0);
		return 0;
	}
	stop_error(r, &err);
	return err.cls == ERR_REFUSED ? 2 : 1;
}

int serve_runner_main(int fd)
{
	struct runner r = {.fd = fd};
	struct err err;
	int rc;

	prctl(PR_SET_DUMPABLE, 0);
	/* Whatever else came along stays out of the boot's processes. */
	proc_close_inherited(fd);
	if (request_read(&r, &err) < 0) {
		log_err("boot runner: %s", err.msg);
		secrets_store_free(r.secrets);
		json_object_put(r.req);
		return 2;
	}
	if (r.kind == MSG_CHECKOUT_FETCH)
		rc = run_checkout_fetch(&r);
	else if (r.kind == MSG_PUBLISH_COMMIT)
		rc = run_publish(&r);
	else
		rc = r.kind == MSG_STOP ? run_stop(&r) : run_boot(&r);
	secrets_store_free(r.secrets);
	json_object_put(r.req);
#ifdef __SANITIZE_ADDRESS__
	/* Everything secret is wiped: the leak checker may stop the world (it ptraces). */
	prctl(PR_SET_DUMPABLE, 1);
#endif
	return rc;
}
