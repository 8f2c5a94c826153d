/* SPDX-License-Identifier: Apache-2.0 */
/*
 * status and runtime.read (docs/protocol.md "Status, logs, stop, runtime.json"): answered from
 * the boot's state directory, so they work the same for boots this daemon started, boots a
 * previous daemon started, and boots `sandbox-app-boot` ran.
 */
#include "serve_ops_query.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "boot_observe.h"
#include "file.h"
#include "log.h"
#include "proc.h"
#include "serve_apps.h"
#include "serve_jobs.h"
#include "serve_stream.h"

#define RUNTIME_MAX (60 * 1024)

/* Sizes of the boot's logs, rotated parts included: {"setup": N, "server": N, ...}. */
static json_object *log_sizes(const char *state_dir)
{
	json_object *o = json_object_new_object();
	char path[PATH_MAX];
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;

	snprintf(path, sizeof(path), "%s/logs", state_dir);
	d = opendir(path);
	while (d && (de = readdir(d))) {
		size_t n = strlen(de->d_name);
		char full[PATH_MAX + 300], name[256];
		struct stat st;
		uint64_t size = 0;

		if (de->d_name[0] == '.' || n < 5 || strcmp(de->d_name + n - 4, ".log") != 0)
			continue;
		snprintf(name, sizeof(name), "%.*s", (int)(n - 4), de->d_name);
		snprintf(full, sizeof(full), "%s/%s", path, de->d_name);
		if (lstat(full, &st) == 0 && S_ISREG(st.st_mode))
			size += (uint64_t)st.st_size;
		snprintf(full, sizeof(full), "%s/%s.1", path, de->d_name);
		if (lstat(full, &st) == 0 && S_ISREG(st.st_mode))
			size += (uint64_t)st.st_size;
		json_object_object_add(o, name, json_object_new_int64((int64_t)size));
	}
	return o;
}

/*
 * The app a query names ("app_dir"), its state directory and what boot_observe() says of it:
 * its result (0 or 1), or -1 with err set.
 */
static int observe_named(struct conn *c, const struct msg *m, char **ret_app_dir,
                         char **ret_state_dir, struct boot_state *s, struct err *err)
{
	const char *dir = serve_stream_field_string(m, "app_dir", true, err);

	if (!dir || serve_apps_normalize(dir, ret_app_dir, err) < 0 ||
	    serve_apps_state_dir(c->srv, *ret_app_dir, ret_state_dir, err) < 0)
		return -1;
	return boot_observe(*ret_state_dir,
	                    serve_jobs_find(c->srv, JOB_BOOT, *ret_state_dir) != NULL, s, err);
}

int serve_ops_query_status(struct conn *c, struct stream *st, const struct msg *m)
{
	_cleanup_free_ char *app_dir = NULL;
	_cleanup_free_ char *state_dir = NULL;
	struct boot_state s = {0};
	json_object *o;
	struct err err;
	int r;

	err_clear(&err);
	r = observe_named(c, m, &app_dir, &state_dir, &s, &err);
	if (r < 0)
		return serve_stream_error(c, st, &err);
	o = json_object_new_object();
	json_object_object_add(o, "app_dir", json_object_new_string(app_dir));
	json_object_object_add(o, "status", json_object_new_string(s.status));
	if (r == 0) {
		if (s.boot_id)
			json_object_object_add(o, "boot_id", json_object_new_string(s.boot_id));
		if (s.step)
			json_object_object_add(o, "phase", json_object_new_string(s.step));
		json_object_object_add(o, "since", json_object_new_int64(s.updated_ms));
		if (s.cause)
			json_object_object_add(o, "cause", json_object_new_string(s.cause));
		if (s.cause && s.reason)
			json_object_object_add(o, "reason", json_object_new_string(s.reason));
		if (s.server_exit)
			json_object_object_add(o, "server_exit",
			                       json_object_new_string(s.server_exit));
		if (s.port)
			json_object_object_add(o, "port", json_object_new_int((int)s.port));
		json_object_object_add(o, "logs", log_sizes(state_dir));
	}
	boot_state_dispose(&s);
	return serve_stream_ok(c, st, o);
}

/*
 * Whether the boot's runtime is gone (-1, err set, ENOENT): no boot holds it ready with its
 * server running. A boot in progress has no runtime yet. s is what boot_observe() found.
 */
static int runtime_gone(const struct boot_state *s, struct err *err)
{
	if (strcmp(s->status, "booting") == 0)
		return err_set(
		    err, ERR_FAILED, ENOENT,
		    "the app's runtime is not there yet: a boot is in progress (step %s)",
		    s->step ? s->step : "none yet");
	if (s->cause && strcmp(s->cause, "server_exited") == 0)
		return err_set(err, ERR_FAILED, ENOENT,
		               "the app's runtime is gone: its server is not running (last boot: "
		               "ready, then the server %s)",
		               s->server_exit ? s->server_exit : "exited");
	if (strcmp(s->status, "ready") != 0)
		return err_set(
		    err, ERR_FAILED, ENOENT,
		    "the app's runtime is gone: its server is not running (last boot: %s%s%s)",
		    s->status, s->cause ? ", " : "",
		    s->cause && strcmp(s->cause, "boot_interrupted") == 0 ? "interrupted" : "");
	return 0;
}

int serve_ops_query_runtime(struct conn *c, struct stream *st, const struct msg *m)
{
	_cleanup_free_ char *app_dir = NULL;
	_cleanup_free_ char *state_dir = NULL;
	_cleanup_free_ char *path = NULL;
	_cleanup_free_ char *buf = NULL;
	struct boot_state s = {0};
	json_object *rt, *o;
	struct err err;
	size_t len = 0;
	int r;

	err_clear(&err);
	r = observe_named(c, m, &app_dir, &state_dir, &s, &err);
	if (r < 0)
		return serve_stream_error(c, st, &err);
	/* runtime.json describes a running server: without one it is stale. */
	if (r == 0 || strcmp(s.status, "booting") == 0) {
		r = runtime_gone(&s, &err);
		if (r == 0 && s.runtime_path)
			path = strdup(s.runtime_path);
	} else {
		r = 0;
	}
	boot_state_dispose(&s);
	if (r < 0)
		return serve_stream_error(c, st, &err);
	if (!path) {
		char *slash = strrchr(app_dir, '/');
		if (asprintf(&path, "%.*s/runtime.json", (int)(slash - app_dir), app_dir) < 0)
			path = NULL;
	}
	if (!path) {
		err_oom(&err);
		return serve_stream_error(c, st, &err);
	}
	r = file_read_capped(AT_FDCWD, path, RUNTIME_MAX, READ_NOFOLLOW | READ_MISSING_OK, &buf,
	                     &len, &err);
	if (r == 1 || (r == 0 && !buf))
		err_set(&err, ERR_FAILED, ENOENT, "the app's runtime is gone: %s does not exist",
		        path);
	if (r != 0 || !buf)
		return serve_stream_error(c, st, &err);
	rt = json_tokener_parse(buf);
	sodium_memzero(buf, len); /* it holds the app's MCP token */
	if (!rt || !json_object_is_type(rt, json_type_object)) {
		json_object_put(rt);
		err_set(&err, ERR_FAILED, EBADMSG, "%s is not a JSON object", path);
		return serve_stream_error(c, st, &err);
	}
	o = json_object_new_object();
	json_object_object_add(o, "runtime", rt);
	return serve_stream_ok(c, st, o);
}
