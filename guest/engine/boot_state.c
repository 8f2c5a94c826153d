/* SPDX-License-Identifier: Apache-2.0 */
#include "boot_state.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "json_strict.h"
#include "file.h"
#include "log.h"
#include "strv.h"

#define BOOT_STATE_MAX (256 * 1024)

int boot_state_set(char **field, const char *value)
{
	char *c = NULL;

	if (value && !(c = strdup(value)))
		return -ENOMEM;
	free(*field);
	*field = c;
	return 0;
}

static const char *get_str(json_object *o, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static int64_t get_int(json_object *o, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
		return 0;
	return json_object_get_int64(v);
}

int boot_state_load(const char *state_dir, struct boot_state *ret, struct err *err)
{
	_cleanup_free_ char *path = NULL;
	_cleanup_free_ char *buf = NULL;
	_cleanup_json_ json_object *root = NULL;
	struct boot_state s = {0};
	json_object *done;
	size_t len;
	int r;

	memset(ret, 0, sizeof(*ret));
	if (asprintf(&path, "%s/%s", state_dir, BOOT_STATE_FILE) < 0)
		return err_oom(err);
	r = file_read_capped(AT_FDCWD, path, BOOT_STATE_MAX, READ_NOFOLLOW | READ_MISSING_OK, &buf,
	                     &len, err);
	if (r < 0)
		return r;
	if (r == 1)
		return 1;
	root = json_tokener_parse(buf);
	if (!root || !json_object_is_type(root, json_type_object))
		return err_set(err, ERR_FAILED, EINVAL, "%s is damaged (not a JSON object)", path);
	{
		struct {
			const char *key;
			char **field;
		} strings[] = {
		    {"status", &s.status},         {"step", &s.step},
		    {"reason", &s.reason},         {"shape", &s.shape},
		    {"app_dir", &s.app_dir},       {"runtime_path", &s.runtime_path},
		    {"session_id", &s.session_id}, {"cgroup", &s.cgroup},
		};
		for (size_t i = 0; i < ELEMENTSOF(strings); i++)
			if (boot_state_set(strings[i].field, get_str(root, strings[i].key)) < 0)
				goto out_oom;
	}
	s.port = (unsigned)get_int(root, "port");
	s.boot_pid = (pid_t)get_int(root, "boot_pid");
	s.boot_start = (uint64_t)get_int(root, "boot_start");
	s.supervisor_pid = (pid_t)get_int(root, "supervisor_pid");
	s.supervisor_start = (uint64_t)get_int(root, "supervisor_start");
	s.server_pid = (pid_t)get_int(root, "server_pid");
	s.server_start = (uint64_t)get_int(root, "server_start");
	s.started_at = get_int(root, "started_at");
	s.updated_at = get_int(root, "updated_at");
	if (json_object_object_get_ex(root, "skipped", &done) &&
	    json_object_is_type(done, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(done); i++) {
			json_object *e = json_object_array_get_idx(done, i);
			if (json_object_is_type(e, json_type_string) &&
			    strv_push(&s.skipped, json_object_get_string(e)) < 0)
				goto out_oom;
		}
	}
	if (json_object_object_get_ex(root, "completed", &done) &&
	    json_object_is_type(done, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(done); i++) {
			json_object *e = json_object_array_get_idx(done, i);
			if (json_object_is_type(e, json_type_string) &&
			    strv_push(&s.completed, json_object_get_string(e)) < 0)
				goto out_oom;
		}
	}
	*ret = s;
	return 0;
out_oom:
	boot_state_dispose(&s);
	return err_oom(err);
}

static void add_str(json_object *o, const char *key, const char *value)
{
	json_object_object_add(o, key, value ? json_object_new_string(value) : NULL);
}

static json_object *state_to_object(const struct boot_state *s)
{
	json_object *o = json_object_new_object();
	json_object *done = json_object_new_array();

	add_str(o, "status", s->status);
	add_str(o, "step", s->step);
	add_str(o, "reason", s->reason);
	add_str(o, "shape", s->shape);
	add_str(o, "app_dir", s->app_dir);
	add_str(o, "runtime_path", s->runtime_path);
	add_str(o, "session_id", s->session_id);
	add_str(o, "cgroup", s->cgroup);
	for (size_t i = 0; s->completed && s->completed[i]; i++)
		json_object_array_add(done, json_object_new_string(s->completed[i]));
	json_object_object_add(o, "completed", done);
	done = json_object_new_array();
	for (size_t i = 0; s->skipped && s->skipped[i]; i++)
		json_object_array_add(done, json_object_new_string(s->skipped[i]));
	json_object_object_add(o, "skipped", done);
	json_object_object_add(o, "port", json_object_new_int64(s->port));
	json_object_object_add(o, "boot_pid", json_object_new_int64(s->boot_pid));
	json_object_object_add(o, "boot_start", json_object_new_int64((int64_t)s->boot_start));
	json_object_object_add(o, "supervisor_pid", json_object_new_int64(s->supervisor_pid));
	json_object_object_add(o, "supervisor_start",
	                       json_object_new_int64((int64_t)s->supervisor_start));
	json_object_object_add(o, "server_pid", json_object_new_int64(s->server_pid));
	json_object_object_add(o, "server_start", json_object_new_int64((int64_t)s->server_start));
	json_object_object_add(o, "started_at", json_object_new_int64(s->started_at));
	json_object_object_add(o, "updated_at", json_object_new_int64(s->updated_at));
	if (s->server_exit) {
		add_str(o, "server_exit", s->server_exit);
		json_object_object_add(
		    o, "server_ended_at",
		    s->server_ended_at ? json_object_new_int64(s->server_ended_at) : NULL);
		add_str(o, "server_log_tail", s->server_log_tail);
	}
	return o;
}

char *boot_state_to_json(const struct boot_state *s)
{
	_cleanup_json_ json_object *o = state_to_object(s);
	const char *t = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
	                                                      JSON_C_TO_STRING_NOSLASHESCAPE);

	return t ? strdup(t) : NULL;
}

int boot_state_save(const char *state_dir, struct boot_state *s, struct err *err)
{
	_cleanup_free_ char *path = NULL;
	_cleanup_json_ json_object *o = NULL;
	const char *text;
	size_t len;

	s->updated_at = (int64_t)time(NULL);
	if (asprintf(&path, "%s/%s", state_dir, BOOT_STATE_FILE) < 0)
		return err_oom(err);
	o = state_to_object(s);
	text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
	                                             JSON_C_TO_STRING_NOSLASHESCAPE);
	len = strlen(text);
	{
		_cleanup_free_ char *line = malloc(len + 2);
		if (!line)
			return err_oom(err);
		memcpy(line, text, len);
		line[len] = '\n';
		return file_write_replace(path, line, len + 1, 0600, (uid_t)-1, (gid_t)-1, err);
	}
}

void boot_state_dispose(struct boot_state *s)
{
	free(s->status);
	free(s->step);
	free(s->reason);
	free(s->shape);
	free(s->app_dir);
	free(s->runtime_path);
	free(s->session_id);
	free(s->cgroup);
	strv_free(s->completed);
	strv_free(s->skipped);
	free(s->server_exit);
	free(s->server_log_tail);
	memset(s, 0, sizeof(*s));
}

int boot_state_lock_acquire(const char *state_dir, int *ret_fd, struct err *err)
{
	_cleanup_free_ char *path = NULL;
	_cleanup_close_ int fd = -1;
	char pidbuf[32];

	if (asprintf(&path, "%s/%s", state_dir, BOOT_LOCK_FILE) < 0)
		return err_oom(err);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return err_errno(err, "cannot open the boot lock %s", path);
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EWOULDBLOCK) {
			ssize_t n = pread(fd, pidbuf, sizeof(pidbuf) - 1, 0);
			pidbuf[n > 0 ? n : 0] = '\0';
			pidbuf[strcspn(pidbuf, "\n")] = '\0';
			return err_set(err, ERR_REFUSED, EBUSY,
			               "a boot of this app is already in progress (pid %s)",
			               pidbuf[0] ? pidbuf : "unknown");
		}
		return err_errno(err, "cannot lock %s", path);
	}
	snprintf(pidbuf, sizeof(pidbuf), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) == 0)
		if (pwrite(fd, pidbuf, strlen(pidbuf), 0) < 0)
			log_debug("cannot record our pid in %s: %m", path);
	*ret_fd = TAKE_FD(fd);
	return 0;
}
