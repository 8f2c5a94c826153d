/* SPDX-License-Identifier: Apache-2.0 */
/*
 * boot.start and stop (docs/protocol.md "Boots", "Status, logs, stop"): both run in a boot
 * runner (serve_jobs.c); the stream follows the runner until its result. A boot goes on when
 * the connection drops; the host comes back with status and logs.
 */
#include "serve_ops_boot.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "boot_plan.h"
#include "file.h"
#include "log.h"
#include "secrets_store.h"
#include "serve_apps.h"
#include "serve_jobs.h"
#include "serve_stream.h"

#define BOOT_TIMEOUT_MAX (7 * 24 * 3600)

static void add_defaults(struct serve *srv, json_object *req)
{
	const struct serve_config *cfg = srv->cfg;

	if (cfg->user)
		json_object_object_add(req, "user", json_object_new_string(cfg->user));
	if (cfg->listen_addr)
		json_object_object_add(req, "listen_addr",
		                       json_object_new_string(cfg->listen_addr));
	if (cfg->listen_port)
		json_object_object_add(req, "listen_port",
		                       json_object_new_int((int)cfg->listen_port));
	if (cfg->no_forward)
		json_object_object_add(req, "no_forward", json_object_new_boolean(true));
	if (cfg->grace_ms)
		json_object_object_add(req, "grace_ms", json_object_new_int64(cfg->grace_ms));
	if (cfg->cache_root)
		json_object_object_add(req, "cache_root", json_object_new_string(cfg->cache_root));
}

/* The spec shape: the host's spec object, written where the engine keeps that boot's files. */
static int spec_write(struct serve *srv, json_object *spec, char **ret_app_dir,
                      char **ret_state_dir, char **ret_spec_path, struct err *err)
{
	_cleanup_free_ char *app_dir = NULL;
	_cleanup_free_ char *dir = NULL;
	_cleanup_free_ char *path = NULL;
	json_object *v;
	const char *text;
	char *slash;

	if (!json_object_is_type(spec, json_type_object))
		return err_set(err, ERR_REFUSED, EINVAL, "boot.start: \"spec\" must be an object");
	if (!json_object_object_get_ex(spec, "app_dir", &v) ||
	    !json_object_is_type(v, json_type_string))
		return err_set(err, ERR_REFUSED, EINVAL, "boot.start: the spec has no app_dir");
	if (serve_apps_normalize(json_object_get_string(v), &app_dir, err) < 0)
		return -1;
	slash = strrchr(app_dir, '/');
	if (asprintf(&dir, "%.*s/boot", (int)(slash - app_dir), app_dir) < 0 ||
	    asprintf(&path, "%.*s/boot/spec.json", (int)(slash - app_dir), app_dir) < 0)
		return err_oom(err);
	if (file_mkdir_p(dir, 0700, err) < 0)
		return err_wrap(err, "cannot prepare %s for the spec", dir);
	text = json_object_to_json_string_ext(spec, JSON_C_TO_STRING_PLAIN);
	if (file_write_atomic(path, text, strlen(text), 0600, 0, 0, err) < 0)
		return err_wrap(err, "cannot write the spec");
	*ret_app_dir = TAKE_PTR(app_dir);
	*ret_state_dir = TAKE_PTR(dir);
	*ret_spec_path = TAKE_PTR(path);
	return 0;
}

static int check_pass_env(struct serve *srv, json_object *names, struct err *err)
{
	if (!json_object_is_type(names, json_type_array))
		return err_set(err, ERR_REFUSED, EINVAL,
		               "boot.start: \"pass_env\" must be an array");
	for (size_t i = 0; i < json_object_array_length(names); i++) {
		json_object *n = json_object_array_get_idx(names, i);
		const char *name = json_object_get_string(n);

		if (!json_object_is_type(n, json_type_string) || !secrets_store_name_valid(name))
			return err_set(err, ERR_REFUSED, EINVAL,
			               "boot.start: pass_env holds something that is not a name");
		if (secrets_store_scope_of(srv->secrets, name) != SECRET_SCOPE_BOOT)
			return err_set(err, ERR_REFUSED, ENOENT,
			               "boot.start: pass_env names %s, which is not a boot secret: "
			               "put it with secrets.put {\"scope\": \"boot\"} first",
			               name);
	}
	return 0;
}

int serve_ops_boot_start(struct conn *c, struct stream *st, const struct msg *m)
{
	struct serve *srv = c->srv;
	_cleanup_json_ json_object *req = json_object_new_object();
	_cleanup_free_ char *app_dir = NULL;
	_cleanup_free_ char *state_dir = NULL;
	_cleanup_free_ char *spec_path = NULL;
	json_object *spec = NULL, *pass_env = NULL, *v;
	const char *other;
	struct job *job;
	struct err err;
	int64_t timeout = 0;

	err_clear(&err);
	if (m->json)
		json_object_object_get_ex(m->json, "spec", &spec);
	if (spec) {
		if (spec_write(srv, spec, &app_dir, &state_dir, &spec_path, &err) < 0)
			return serve_stream_error(c, st, &err);
		json_object_object_add(req, "shape", json_object_new_string("spec"));
		json_object_object_add(req, "spec_path", json_object_new_string(spec_path));
	} else {
		const char *dir = serve_stream_field_string(m, "app_dir", true, &err);
		char *slash;

		if (!dir || serve_apps_normalize(dir, &app_dir, &err) < 0)
			return serve_stream_error(c, st, &err);
		slash = strrchr(app_dir, '/');
		if (asprintf(&state_dir, "%.*s/.sandbox", (int)(slash - app_dir), app_dir) < 0) {
			state_dir = NULL;
			err_oom(&err);
			return serve_stream_error(c, st, &err);
		}
		json_object_object_add(req, "shape", json_object_new_string("directory"));
		json_object_object_add(req, "app_dir", json_object_new_string(app_dir));
	}
	if (serve_jobs_find(srv, JOB_BOOT, state_dir)) {
		err_set(&err, ERR_REFUSED, EBUSY,
		        "a boot of %s is already in progress: follow it with status and logs",
		        app_dir);
		return serve_stream_error(c, st, &err);
	}
	if (serve_jobs_find(srv, JOB_PUBLISH, state_dir)) {
		err_set(&err, ERR_REFUSED, EBUSY,
		        "%s is being published: boot it when the publish has finished", app_dir);
		return serve_stream_error(c, st, &err);
	}
	/*
	 * One user runs every app: a second app could read the first one's environment (its
	 * secrets) in /proc and its files. Only when the caller says that is acceptable.
	 */
	other = serve_apps_other(srv, app_dir);
	if (other && !(m->json && json_object_object_get_ex(m->json, "shared_user", &v) &&
	               json_object_get_boolean(v))) {
		err_set(&err, ERR_REFUSED, EEXIST,
		        "this guest already holds the app %s, and every app runs as the same user: "
		        "%s could read its secrets, environment and files. Discard %s first, or "
		        "accept one user for all apps (sandbox-ctl boot --shared-user, boot.start "
		        "{\"shared_user\": true})",
		        other, app_dir, other);
		return serve_stream_error(c, st, &err);
	}
	if (other)
		log_notice("connection %" PRIu64 ": %s boots beside %s as the same user (the host "
		           "accepted a shared user)",
		           c->id, app_dir, other);
	if (m->json && json_object_object_get_ex(m->json, "pass_env", &pass_env)) {
		if (check_pass_env(srv, pass_env, &err) < 0)
			return serve_stream_error(c, st, &err);
		json_object_object_add(req, "pass_env", json_object_get(pass_env));
	}
	if (msg_get_int64(m, "timeout", &timeout)) {
		if (timeout <= 0 || timeout > BOOT_TIMEOUT_MAX) {
			err_set(&err, ERR_REFUSED, EINVAL,
			        "boot.start: the timeout is seconds from 1 to %d",
			        BOOT_TIMEOUT_MAX);
			return serve_stream_error(c, st, &err);
		}
		json_object_object_add(req, "timeout", json_object_new_int64(timeout));
	}
	if (m->json && json_object_object_get_ex(m->json, "from", &v) &&
	    json_object_is_type(v, json_type_string))
		json_object_object_add(req, "from", json_object_get(v));
	if (m->json && json_object_object_get_ex(m->json, "restart", &v) &&
	    json_object_get_boolean(v))
		json_object_object_add(req, "restart", json_object_new_boolean(true));
	if (m->json && json_object_object_get_ex(m->json, "runtime_token", &v) &&
	    json_object_get_boolean(v))
		json_object_object_add(req, "runtime_token", json_object_new_boolean(true));
	if (json_object_object_get_ex(req, "from", NULL) &&
	    json_object_object_get_ex(req, "restart", NULL)) {
		err_set(&err, ERR_REFUSED, EINVAL,
		        "boot.start: \"from\" and \"restart\" do not go "
		        "together");
		return serve_stream_error(c, st, &err);
	}
	add_defaults(srv, req);
	if (serve_jobs_spawn(srv, JOB_BOOT, req, true, app_dir, state_dir, &job, &err) < 0)
		return serve_stream_error(c, st, &err);
	serve_jobs_follow(job, c->id, st->id);
	serve_apps_set(srv, app_dir, state_dir);
	log_info("connection %" PRIu64 ": boot of %s started (runner %d)", c->id, app_dir,
	         (int)job->pid);
	return 0;
}

int serve_ops_boot_stop(struct conn *c, struct stream *st, const struct msg *m)
{
	struct serve *srv = c->srv;
	_cleanup_json_ json_object *req = json_object_new_object();
	_cleanup_free_ char *app_dir = NULL;
	_cleanup_free_ char *state_dir = NULL;
	const char *dir;
	struct job *job;
	struct err err;
	json_object *v;
	int64_t grace = -1;
	bool discard = false;

	err_clear(&err);
	dir = serve_stream_field_string(m, "app_dir", true, &err);
	if (!dir || serve_apps_normalize(dir, &app_dir, &err) < 0 ||
	    serve_apps_state_dir(srv, app_dir, &state_dir, &err) < 0)
		return serve_stream_error(c, st, &err);
	if (m->json && json_object_object_get_ex(m->json, "discard", &v))
		discard = json_object_get_boolean(v);
	if (msg_get_int64(m, "grace", &grace) && (grace < 0 || grace > 3600)) {
		err_set(&err, ERR_REFUSED, EINVAL,
		        "stop: the grace period is seconds from 0 to 3600");
		return serve_stream_error(c, st, &err);
	}
	job = serve_jobs_find(srv, JOB_STOP, state_dir);
	if (job && !discard) {
		serve_jobs_follow(job, c->id, st->id);
		return 0;
	}
	/* A boot in progress is ended first: the runner's boot_engine_stop() sends it TERM. */
	if (serve_jobs_find(srv, JOB_BOOT, state_dir))
		log_info("connection %" PRIu64 ": stopping the boot of %s in progress", c->id,
		         app_dir);
	json_object_object_add(req, "app_dir", json_object_new_string(app_dir));
	json_object_object_add(req, "state_dir", json_object_new_string(state_dir));
	json_object_object_add(
	    req, "grace_ms",
	    json_object_new_int64(
	        grace >= 0 ? grace * 1000
	                   : (srv->cfg->grace_ms ? srv->cfg->grace_ms : BOOT_DEFAULT_GRACE_MS)));
	if (discard)
		json_object_object_add(req, "discard", json_object_new_boolean(true));
	if (srv->cfg->user)
		json_object_object_add(req, "user", json_object_new_string(srv->cfg->user));
	if (srv->cfg->cache_root)
		json_object_object_add(req, "cache_root",
		                       json_object_new_string(srv->cfg->cache_root));
	if (serve_jobs_spawn(srv, JOB_STOP, req, false, app_dir, state_dir, &job, &err) < 0)
		return serve_stream_error(c, st, &err);
	serve_jobs_follow(job, c->id, st->id);
	if (discard)
		serve_apps_forget(srv, app_dir);
	log_info("connection %" PRIu64 ": %s of %s (runner %d)", c->id,
	         discard ? "discard" : "stop", app_dir, (int)job->pid);
	return 0;
}
