/* SPDX-License-Identifier: Apache-2.0 */
#include "session_status.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "file.h"
#include "json_strict.h"

#define STATUS_MAX (64 * 1024)

void session_status_now(char buf[32])
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(buf, 32, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
	         tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
}

static const char *const state_names[] = {"starting", "running", "finished"};

const char *session_status_state_name(enum session_state s)
{
	return (unsigned)s < ELEMENTSOF(state_names) ? state_names[s] : "finished";
}

int session_status_exit_code(int wait_status)
{
	if (WIFEXITED(wait_status))
		return WEXITSTATUS(wait_status);
	if (WIFSIGNALED(wait_status))
		return 128 + WTERMSIG(wait_status);
	return 127;
}

int session_status_write(const char *path, const struct session_status *st, struct err *err)
{
	_cleanup_json_ struct json_object *o = json_object_new_object();
	const char *js;
	size_t len;

	if (!o)
		return err_oom(err);
	json_object_object_add(o, "status",
	                       json_object_new_string(session_status_state_name(st->state)));
	if (st->pid > 0)
		json_object_object_add(o, "pid", json_object_new_int64(st->pid));
	if (st->state == SESSION_FINISHED) {
		json_object_object_add(o, "exit_status", json_object_new_int(st->exit_status));
		json_object_object_add(o, "cancelled", json_object_new_boolean(st->cancelled));
		json_object_object_add(o, "timed_out", json_object_new_boolean(st->timed_out));
	}
	if (st->started_at[0])
		json_object_object_add(o, "started_at", json_object_new_string(st->started_at));
	if (st->state == SESSION_FINISHED && st->finished_at[0])
		json_object_object_add(o, "finished_at", json_object_new_string(st->finished_at));
	if (st->error[0])
		json_object_object_add(o, "error", json_object_new_string(st->error));
	if (st->live) {
		json_object_object_add(o, "live", json_object_new_boolean(true));
		json_object_object_add(o, "dangerously_no_sandbox",
		                       json_object_new_boolean(st->dangerously_no_sandbox));
		json_object_object_add(o, "busy", json_object_new_boolean(st->busy));
		json_object_object_add(o, "turns", json_object_new_int64(st->turns));
		json_object_object_add(o, "pending", json_object_new_int64(st->pending));
	} else if (st->dangerously_no_sandbox) {
		/* A one-shot session says it only when it runs unverified. */
		json_object_object_add(o, "dangerously_no_sandbox", json_object_new_boolean(true));
	}
	js = json_object_to_json_string_length(
	    o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
	if (!js)
		return err_oom(err);
	{
		char buf[STATUS_MAX];

		if (len + 1 >= sizeof(buf))
			return err_set(err, ERR_FAILED, E2BIG, "status.json too large");
		memcpy(buf, js, len);
		buf[len++] = '\n';
		return file_write_replace(path, buf, len, 0600, (uid_t)-1, (gid_t)-1, err);
	}
}

static void copy_str(struct json_object *root, const char *key, char *dst, size_t n)
{
	struct json_object *o;

	if (json_object_object_get_ex(root, key, &o) && json_object_is_type(o, json_type_string))
		snprintf(dst, n, "%s", json_object_get_string(o));
}

int session_status_read(int dirfd, struct session_status *st, struct err *err)
{
	_cleanup_json_ struct json_object *root = NULL;
	_cleanup_free_ char *buf = NULL;
	enum json_tokener_error jerr;
	struct json_object *o;
	size_t len = 0, off;
	const char *s;
	int rc;

	*st = (struct session_status){0};
	rc = file_read_capped(dirfd, "status.json", STATUS_MAX, READ_NOFOLLOW | READ_MISSING_OK,
	                      &buf, &len, err);
	if (rc != 0)
		return rc;
	if (json_strict_parse(buf, len, &root, &off, &jerr) != JSON_STRICT_OK ||
	    !json_object_is_type(root, json_type_object) ||
	    !json_object_object_get_ex(root, "status", &o) ||
	    !json_object_is_type(o, json_type_string))
		return err_set(err, ERR_FAILED, EINVAL, "status.json is not a session status");
	s = json_object_get_string(o);
	if (strcmp(s, "starting") == 0)
		st->state = SESSION_STARTING;
	else if (strcmp(s, "running") == 0)
		st->state = SESSION_RUNNING;
	else
		st->state = SESSION_FINISHED;
	if (json_object_object_get_ex(root, "pid", &o))
		st->pid = (pid_t)json_object_get_int64(o);
	if (json_object_object_get_ex(root, "exit_status", &o))
		st->exit_status = json_object_get_int(o);
	if (json_object_object_get_ex(root, "cancelled", &o))
		st->cancelled = json_object_get_boolean(o);
	if (json_object_object_get_ex(root, "timed_out", &o))
		st->timed_out = json_object_get_boolean(o);
	if (json_object_object_get_ex(root, "live", &o))
		st->live = json_object_get_boolean(o);
	if (json_object_object_get_ex(root, "dangerously_no_sandbox", &o))
		st->dangerously_no_sandbox = json_object_get_boolean(o);
	if (json_object_object_get_ex(root, "busy", &o))
		st->busy = json_object_get_boolean(o);
	if (json_object_object_get_ex(root, "turns", &o))
		st->turns = (unsigned)json_object_get_int64(o);
	if (json_object_object_get_ex(root, "pending", &o))
		st->pending = (unsigned)json_object_get_int64(o);
	copy_str(root, "started_at", st->started_at, sizeof(st->started_at));
	copy_str(root, "finished_at", st->finished_at, sizeof(st->finished_at));
	copy_str(root, "error", st->error, sizeof(st->error));
	return 0;
}
