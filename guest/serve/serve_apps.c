/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which state directory belongs to an app directory. The directory shape keeps it at
 * <parent>/.sandbox; a spec pushed by the host puts it where the daemon wrote the spec
 * (<parent>/boot). The daemon remembers the last boot of each app in STATE_DIR/apps.json, so a
 * restarted daemon (the file lives in its tmpfs) still answers status, logs and stop for apps
 * it booted before.
 */
#include "serve_apps.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "file.h"
#include "log.h"

#define APPS_FILE "apps.json"
#define APPS_MAX 1024

static void apps_clear(struct serve *srv)
{
	for (size_t i = 0; i < srv->n_apps; i++) {
		free(srv->apps[i].app_dir);
		free(srv->apps[i].state_dir);
	}
	free(srv->apps);
	srv->apps = NULL;
	srv->n_apps = 0;
}

void serve_apps_free(struct serve *srv)
{
	apps_clear(srv);
}

static int apps_add(struct serve *srv, const char *app_dir, const char *state_dir)
{
	struct app_entry *v;

	if (srv->n_apps >= APPS_MAX)
		return -E2BIG;
	v = reallocarray(srv->apps, srv->n_apps + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	srv->apps = v;
	v[srv->n_apps].app_dir = strdup(app_dir);
	v[srv->n_apps].state_dir = strdup(state_dir);
	if (!v[srv->n_apps].app_dir || !v[srv->n_apps].state_dir) {
		free(v[srv->n_apps].app_dir);
		free(v[srv->n_apps].state_dir);
		return -ENOMEM;
	}
	srv->n_apps++;
	return 0;
}

static void apps_save(struct serve *srv)
{
	_cleanup_json_ json_object *o = json_object_new_object();
	_cleanup_free_ char *path = NULL;
	const char *text;
	struct err err;

	for (size_t i = 0; i < srv->n_apps; i++)
		json_object_object_add(o, srv->apps[i].app_dir,
		                       json_object_new_string(srv->apps[i].state_dir));
	text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	if (asprintf(&path, "%s/%s", srv->cfg->state_dir, APPS_FILE) < 0) {
		path = NULL;
		srv->apps_unsaved = true;
		return;
	}
	srv->apps_unsaved =
	    file_write_atomic(path, text, strlen(text), 0600, (uid_t)-1, (gid_t)-1, &err) < 0;
	if (srv->apps_unsaved)
		log_warn("cannot remember the apps: %s", err.msg);
}

int serve_apps_load(struct serve *srv)
{
	_cleanup_free_ char *path = NULL;
	_cleanup_free_ char *buf = NULL;
	_cleanup_json_ json_object *o = NULL;
	struct err err;
	size_t len;
	int r;

	apps_clear(srv);
	if (asprintf(&path, "%s/%s", srv->cfg->state_dir, APPS_FILE) < 0) {
		path = NULL;
		return -ENOMEM;
	}
	r = file_read_capped(AT_FDCWD, path, 1024 * 1024, READ_NOFOLLOW | READ_MISSING_OK, &buf,
	                     &len, &err);
	if (r < 0) {
		log_warn("%s", err.msg);
		return 0;
	}
	if (r == 1 || !buf)
		return 0;
	o = json_tokener_parse(buf);
	if (!o || !json_object_is_type(o, json_type_object)) {
		log_warn("%s is not a JSON object: ignored", path);
		return 0;
	}
	json_object_object_foreach(o, key, val)
	{
		if (key[0] == '/' && json_object_is_type(val, json_type_string) &&
		    json_object_get_string(val)[0] == '/')
			apps_add(srv, key, json_object_get_string(val));
	}
	log_debug("%zu app(s) known from earlier boots", srv->n_apps);
	return 0;
}

int serve_apps_normalize(const char *app_dir, char **ret, struct err *err)
{
	char real[PATH_MAX];
	_cleanup_free_ char *out = NULL;
	size_t n = 0;
	const char *p;

	if (!app_dir || app_dir[0] != '/')
		return err_set(err, ERR_REFUSED, EINVAL,
		               "app_dir must be an absolute path, got \"%.200s\"",
		               app_dir ? app_dir : "");
	if (strlen(app_dir) >= PATH_MAX)
		return err_set(err, ERR_REFUSED, ENAMETOOLONG, "app_dir is too long");
	/* An existing directory by its real name, as the boot engine sees it. */
	if (realpath(app_dir, real)) {
		if (strcmp(real, "/") == 0)
			return err_set(err, ERR_REFUSED, EINVAL, "/ cannot be an app directory");
		*ret = strdup(real);
		return *ret ? 0 : err_oom(err);
	}
	out = malloc(strlen(app_dir) + 1);
	if (!out)
		return err_oom(err);
	for (p = app_dir; *p;) {
		const char *slash;
		size_t len;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		slash = strchr(p, '/');
		len = slash ? (size_t)(slash - p) : strlen(p);
		if ((len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
			return err_set(err, ERR_REFUSED, EINVAL,
			               "app_dir must not contain \".\" or \"..\": \"%.200s\"",
			               app_dir);
		out[n++] = '/';
		memcpy(out + n, p, len);
		n += len;
		p += len;
	}
	if (n == 0)
		return err_set(err, ERR_REFUSED, EINVAL, "/ cannot be an app directory");
	out[n] = '\0';
	*ret = TAKE_PTR(out);
	return 0;
}

int serve_apps_state_dir(struct serve *srv, const char *app_dir, char **ret, struct err *err)
{
	_cleanup_free_ char *norm = NULL;
	char *slash;
	int r;

	r = serve_apps_normalize(app_dir, &norm, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < srv->n_apps; i++) {
		if (strcmp(srv->apps[i].app_dir, norm) == 0) {
			*ret = strdup(srv->apps[i].state_dir);
			return *ret ? 0 : err_oom(err);
		}
	}
	slash = strrchr(norm, '/');
	if (asprintf(ret, "%.*s/.sandbox", (int)(slash - norm), norm) < 0) {
		*ret = NULL;
		return err_oom(err);
	}
	return 0;
}

int serve_apps_set(struct serve *srv, const char *app_dir, const char *state_dir)
{
	int r;

	for (size_t i = 0; i < srv->n_apps; i++) {
		if (strcmp(srv->apps[i].app_dir, app_dir) == 0) {
			char *dup;

			/* Known as it is (every boot of an app after its first) and on disk:
			 * nothing to write. */
			if (strcmp(srv->apps[i].state_dir, state_dir) == 0 && !srv->apps_unsaved)
				return 0;
			dup = strdup(state_dir);
			if (!dup)
				return -ENOMEM;
			free(srv->apps[i].state_dir);
			srv->apps[i].state_dir = dup;
			apps_save(srv);
			return 0;
		}
	}
	r = apps_add(srv, app_dir, state_dir);
	if (r < 0)
		return r;
	apps_save(srv);
	return 0;
}

void serve_apps_forget(struct serve *srv, const char *app_dir)
{
	for (size_t i = 0; i < srv->n_apps; i++) {
		if (strcmp(srv->apps[i].app_dir, app_dir) == 0) {
			free(srv->apps[i].app_dir);
			free(srv->apps[i].state_dir);
			memmove(&srv->apps[i], &srv->apps[i + 1],
			        (srv->n_apps - i - 1) * sizeof(*srv->apps));
			srv->n_apps--;
			apps_save(srv);
			return;
		}
	}
}

const char *serve_apps_other(const struct serve *srv, const char *app_dir)
{
	struct stat st;

	for (size_t i = 0; i < srv->n_apps; i++)
		if (strcmp(srv->apps[i].app_dir, app_dir) != 0 &&
		    lstat(srv->apps[i].app_dir, &st) == 0)
			return srv->apps[i].app_dir;
	return NULL;
}
