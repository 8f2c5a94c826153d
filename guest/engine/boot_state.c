/* SPDX-License-Identifier: Apache-2.0 */
#include "boot_state.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "json_get.h"
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

/*
 * A phase's app_ms, at most its duration: the app's time is rounded to the millisecond and the
 * duration is a difference of two cut ones, so the first may pass the second by one.
 */
static int64_t phase_app_ms(const struct boot_phase *ph)
{
	int64_t duration =
	    ph->started_ms && ph->finished_ms ? ph->finished_ms - ph->started_ms : -1;

	return duration >= 0 && ph->app_ms > duration ? duration : ph->app_ms;
}

/*
 * A finished boot's time split: app_ms, what the app's commands took (the phases' app_ms),
 * and engine_ms, the rest of the boot's wall time (ours: start-up, state, cgroup, supervisor,
 * probes).
 */
static void add_timeline_totals(json_object *o, const struct boot_state *s)
{
	int64_t app = 0;

	for (size_t i = 0; i < s->n_phases; i++)
		if (s->phases[i].app_ms > 0)
			app += phase_app_ms(&s->phases[i]);
	json_object_object_add(o, "app_ms", s->finished_ms ? json_object_new_int64(app) : NULL);
	json_object_object_add(o, "engine_ms",
	                       s->finished_ms && s->started_ms
	                           ? json_object_new_int64(s->finished_ms - s->started_ms - app)
	                           : NULL);
}

static int64_t get_int(json_object *o, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
		return 0;
	return json_object_get_int64(v);
}

static bool get_bool(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_boolean) &&
	       json_object_get_boolean(v);
}

/* ISO 8601 in UTC with milliseconds, as the platform shows times: 2026-12-01T10:36:08.123Z */
static json_object *iso_time(int64_t ms)
{
	char buf[40];
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (ms <= 0 || !gmtime_r(&t, &tm))
		return NULL;
	snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
	         tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
	return json_object_new_string(buf);
}

static int64_t iso_parse(const char *s)
{
	struct tm tm = {0};
	int msec = 0;

	if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
	                 &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &msec) != 7)
		return 0;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return (int64_t)timegm(&tm) * 1000 + msec;
}

int boot_state_phase_add(struct boot_state *s, const char *name, const char *log)
{
	struct boot_phase *v = realloc(s->phases, (s->n_phases + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	s->phases = v;
	v = &s->phases[s->n_phases];
	memset(v, 0, sizeof(*v));
	v->app_ms = -1;
	if (boot_state_set(&v->name, name) < 0 || boot_state_set(&v->log, log) < 0 ||
	    boot_state_set(&v->status, "pending") < 0) {
		free(v->name);
		free(v->log);
		free(v->status);
		return -ENOMEM;
	}
	s->n_phases++;
	return 0;
}

struct boot_phase *boot_state_phase_find(struct boot_state *s, const char *name)
{
	for (size_t i = 0; name && i < s->n_phases; i++)
		if (strcmp(s->phases[i].name, name) == 0)
			return &s->phases[i];
	return NULL;
}

void boot_state_phase_set(struct boot_state *s, const char *name, const char *status,
                          const char *detail, int64_t now_ms)
{
	struct boot_phase *ph = boot_state_phase_find(s, name);

	if (!ph || strcmp(ph->status, status) == 0)
		return;
	if (strcmp(status, "running") == 0) {
		ph->started_ms = now_ms;
		ph->finished_ms = 0;
	} else {
		if (!ph->started_ms)
			ph->started_ms = now_ms;
		ph->finished_ms = now_ms;
	}
	boot_state_set(&ph->status, status);
	boot_state_set(&ph->detail, detail);
}

static int load_phases(json_object *root, struct boot_state *s)
{
	json_object *steps;
	size_t skip = 0;

	if (!json_object_object_get_ex(root, "steps", &steps) ||
	    !json_object_is_type(steps, json_type_array))
		return 0;
	/* The spec's recorded_steps come first; our phases begin at "preflight". */
	while (skip < json_object_array_length(steps)) {
		json_object *e = json_object_array_get_idx(steps, skip);
		const char *name =
		    json_object_is_type(e, json_type_object) ? json_get_string(e, "name") : NULL;
		if (name && strcmp(name, "preflight") == 0)
			break;
		skip++;
	}
	if (skip) {
		json_object *recorded = json_object_new_array();
		for (size_t i = 0; i < skip && i < json_object_array_length(steps); i++)
			json_object_array_add(recorded,
			                      json_object_get(json_object_array_get_idx(steps, i)));
		s->recorded_steps = strdup(json_object_to_json_string_ext(recorded, 0));
		json_object_put(recorded);
		if (!s->recorded_steps)
			return -ENOMEM;
	}
	for (size_t i = skip; i < json_object_array_length(steps); i++) {
		json_object *e = json_object_array_get_idx(steps, i);
		struct boot_phase *ph;

		if (!json_object_is_type(e, json_type_object) || !json_get_string(e, "name"))
			continue;
		if (boot_state_phase_add(s, json_get_string(e, "name"), json_get_string(e, "log")) <
		    0)
			return -ENOMEM;
		ph = &s->phases[s->n_phases - 1];
		if ((json_get_string(e, "status") &&
		     boot_state_set(&ph->status, json_get_string(e, "status")) < 0) ||
		    boot_state_set(&ph->detail, json_get_string(e, "detail")) < 0 ||
		    boot_state_set(&ph->inputs, json_get_string(e, "inputs")) < 0)
			return -ENOMEM;
		ph->started_ms = iso_parse(json_get_string(e, "started_at"));
		ph->finished_ms = iso_parse(json_get_string(e, "finished_at"));
		{
			json_object *v;
			if (json_object_object_get_ex(e, "app_ms", &v) &&
			    json_object_is_type(v, json_type_int) && json_object_get_int64(v) >= 0)
				ph->app_ms = json_object_get_int64(v);
		}
	}
	return 0;
}

/* The string fields saved under their own names, in the file's order (before "limits"). */
static const struct {
	const char *key;
	size_t off;
} string_fields[] = {
    {"status", offsetof(struct boot_state, status)},
    {"step", offsetof(struct boot_state, step)},
    {"reason", offsetof(struct boot_state, reason)},
    {"shape", offsetof(struct boot_state, shape)},
    {"app_dir", offsetof(struct boot_state, app_dir)},
    {"runtime_path", offsetof(struct boot_state, runtime_path)},
    {"session_id", offsetof(struct boot_state, session_id)},
    {"cgroup", offsetof(struct boot_state, cgroup)},
    {"boot_id", offsetof(struct boot_state, boot_id)},
};

static char **string_field(const struct boot_state *s, size_t i)
{
	return (char **)((char *)s + string_fields[i].off);
}

/* The strings of the array at key into *ret (other values are passed over); -ENOMEM. */
static int load_names(json_object *root, const char *key, char ***ret)
{
	json_object *a;

	if (!json_object_object_get_ex(root, key, &a) || !json_object_is_type(a, json_type_array))
		return 0;
	for (size_t i = 0; i < json_object_array_length(a); i++) {
		json_object *e = json_object_array_get_idx(a, i);
		if (json_object_is_type(e, json_type_string) &&
		    strv_push(ret, json_object_get_string(e)) < 0)
			return -ENOMEM;
	}
	return 0;
}

int boot_state_load(const char *state_dir, struct boot_state *ret, struct err *err)
{
	_cleanup_free_ char *path = NULL;
	_cleanup_free_ char *buf = NULL;
	_cleanup_json_ json_object *root = NULL;
	struct boot_state s = {0};
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
	for (size_t i = 0; i < ELEMENTSOF(string_fields); i++)
		if (boot_state_set(string_field(&s, i),
		                   json_get_string(root, string_fields[i].key)) < 0)
			goto out_oom;
	if (boot_state_set(&s.limit_hit, json_get_string(root, "limit_hit")) < 0)
		goto out_oom;
	{
		json_object *lim = NULL;
		if (json_object_object_get_ex(root, "limits", &lim) &&
		    json_object_is_type(lim, json_type_object) &&
		    boot_state_set(&s.limits, json_object_to_json_string_ext(lim, 0)) < 0)
			goto out_oom;
		if (json_object_object_get_ex(root, "egress", &lim) &&
		    json_object_is_type(lim, json_type_object) &&
		    boot_state_set(&s.egress, json_object_to_json_string_ext(lim, 0)) < 0)
			goto out_oom;
	}
	s.port = (unsigned)get_int(root, "port");
	s.boot_pid = (pid_t)get_int(root, "boot_pid");
	s.boot_start = (uint64_t)get_int(root, "boot_start");
	s.supervisor_pid = (pid_t)get_int(root, "supervisor_pid");
	s.supervisor_start = (uint64_t)get_int(root, "supervisor_start");
	s.server_pid = (pid_t)get_int(root, "server_pid");
	s.server_start = (uint64_t)get_int(root, "server_start");
	s.updated_ms = get_int(root, "updated_ms");
	/* The spec shape's file speaks the platform's words: running, ISO times. */
	if (s.status && strcmp(s.status, "running") == 0 &&
	    boot_state_set(&s.status, "booting") < 0)
		goto out_oom;
	s.started_ms = get_int(root, "started_ms");
	s.finished_ms = get_int(root, "finished_ms");
	/* A file written before times were milliseconds: started_at and updated_at in seconds. */
	if (!s.started_ms)
		s.started_ms = get_int(root, "started_at") * 1000;
	if (!s.updated_ms)
		s.updated_ms = get_int(root, "updated_at") * 1000;
	if (boot_state_set(&s.mode, json_get_string(root, "mode")) < 0 ||
	    boot_state_set(&s.kind, json_get_string(root, "kind")) < 0 ||
	    boot_state_set(&s.resumed_from, json_get_string(root, "resumed_from")) < 0)
		goto out_oom;
	s.restarted = get_bool(root, "restarted");
	s.kept = get_bool(root, "kept");
	if (load_phases(root, &s) < 0)
		goto out_oom;
	if (load_names(root, "skipped", &s.skipped) < 0 ||
	    load_names(root, "completed", &s.completed) < 0)
		goto out_oom;
	*ret = s;
	return 0;
out_oom:
	boot_state_dispose(&s);
	return err_oom(err);
}

/* The JSON text of a field as objects, parsed with tok; NULL for NULL or what does not parse. */
static json_object *parse_text(json_tokener *tok, const char *text)
{
	json_object *v;

	if (!text)
		return NULL;
	json_tokener_reset(tok);
	v = json_tokener_parse_ex(tok, text, -1);
	if (json_tokener_get_error(tok) != json_tokener_success) {
		json_object_put(v);
		return NULL;
	}
	return v;
}

static void add_str(json_object *o, const char *key, const char *value)
{
	json_object_object_add(o, key, value ? json_object_new_string(value) : NULL);
}

/*
 * The fields the platform reads (its schema for the spec shape's state.json), written in both
 * shapes: version, mode, kind, status in its words, ISO times, resumed_from, restarted,
 * failed_step, detail, kept, resumable_steps, server_pid, forwarder_pid, and steps (the spec's
 * recorded_steps first, then one entry per phase).
 */
static void platform_fields(json_object *o, const struct boot_state *s, json_tokener *tok)
{
	bool spec = s->shape && strcmp(s->shape, "spec") == 0;
	bool failed = s->status && strcmp(s->status, "failed") == 0;
	json_object *steps, *resumable = json_object_new_array();

	json_object_object_add(o, "version", json_object_new_int(1));
	if (spec && s->status && strcmp(s->status, "booting") == 0)
		json_object_object_add(o, "status", json_object_new_string("running"));
	json_object_object_add(o, "started_at", iso_time(s->started_ms));
	json_object_object_add(o, "finished_at", iso_time(s->finished_ms));
	json_object_object_add(o, "started_ms", json_object_new_int64(s->started_ms));
	json_object_object_add(o, "finished_ms", json_object_new_int64(s->finished_ms));
	add_timeline_totals(o, s);
	add_str(o, "mode", s->mode);
	add_str(o, "kind", s->kind);
	add_str(o, "resumed_from", s->resumed_from);
	json_object_object_add(o, "restarted", json_object_new_boolean(s->restarted));
	add_str(o, "failed_step", failed ? s->step : NULL);
	add_str(o, "detail", s->reason);
	json_object_object_add(o, "kept", json_object_new_boolean(s->kept));
	json_object_object_add(o, "forwarder_pid", json_object_new_int64(s->supervisor_pid));
	/* A failed boot resumes at its failed step or any before it (--from STEP). */
	for (size_t i = 0; failed && i < s->n_phases; i++) {
		const struct boot_phase *ph = &s->phases[i];
		if (strcmp(ph->name, "preflight") && strcmp(ph->name, "toolchain") &&
		    strcmp(ph->name, "start"))
			json_object_array_add(resumable, json_object_new_string(ph->name));
		if (strcmp(ph->status, "failed") == 0)
			break;
	}
	json_object_object_add(o, "resumable_steps", resumable);
	steps = parse_text(tok, s->recorded_steps);
	if (!steps || !json_object_is_type(steps, json_type_array)) {
		json_object_put(steps);
		steps = json_object_new_array();
	}
	for (size_t i = 0; i < s->n_phases; i++) {
		const struct boot_phase *ph = &s->phases[i];
		json_object *e = json_object_new_object();
		int64_t end = ph->finished_ms;

		add_str(e, "name", ph->name);
		add_str(e, "log", ph->log);
		add_str(e, "status", ph->status);
		json_object_object_add(e, "started_at", iso_time(ph->started_ms));
		json_object_object_add(e, "finished_at", iso_time(ph->finished_ms));
		json_object_object_add(
		    e, "duration_ms",
		    ph->started_ms && end ? json_object_new_int64(end - ph->started_ms) : NULL);
		json_object_object_add(
		    e, "app_ms", ph->app_ms >= 0 ? json_object_new_int64(phase_app_ms(ph)) : NULL);
		add_str(e, "detail", ph->detail);
		if (ph->inputs)
			add_str(e, "inputs", ph->inputs);
		json_object_array_add(steps, e);
	}
	json_object_object_add(o, "steps", steps);
}

/*
 * Fills o, new or kept from the last call: every key is set again, so a kept document ends up
 * as a new one would, its keys in the same order. tok parses the JSON text fields.
 */
static void state_to_object(const struct boot_state *s, json_object *o, json_tokener *tok)
{
	json_object *done = json_object_new_array();

	for (size_t i = 0; i < ELEMENTSOF(string_fields); i++)
		add_str(o, string_fields[i].key, *string_field(s, i));
	json_object_object_add(o, "limits", parse_text(tok, s->limits));
	add_str(o, "limit_hit", s->limit_hit);
	json_object_object_add(o, "egress", parse_text(tok, s->egress));
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
	json_object_object_add(o, "updated_ms", json_object_new_int64(s->updated_ms));
	platform_fields(o, s, tok);
	/* Keys only some states have are removed from a kept document when absent. */
	json_object_object_del(o, "cause");
	json_object_object_del(o, "server_exit");
	json_object_object_del(o, "server_ended_ms");
	json_object_object_del(o, "server_log_tail");
	if (s->cause)
		add_str(o, "cause", s->cause);
	if (s->server_exit) {
		add_str(o, "server_exit", s->server_exit);
		json_object_object_add(
		    o, "server_ended_ms",
		    s->server_ended_ms ? json_object_new_int64(s->server_ended_ms) : NULL);
		add_str(o, "server_log_tail", s->server_log_tail);
	}
}

/* The state's document: made on the first call, updated in place by the next (NULL: no memory). */
static json_object *state_doc(struct boot_state *s)
{
	if (!s->saved_doc)
		s->saved_doc = json_object_new_object();
	if (!s->saved_tok)
		s->saved_tok = json_tokener_new();
	if (!s->saved_doc || !s->saved_tok)
		return NULL;
	state_to_object(s, s->saved_doc, s->saved_tok);
	return s->saved_doc;
}

char *boot_state_to_json(struct boot_state *s)
{
	json_object *o = state_doc(s);
	const char *t = o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
	                                                          JSON_C_TO_STRING_NOSLASHESCAPE)
	                  : NULL;

	return t ? strdup(t) : NULL;
}

int boot_state_save(const char *state_dir, struct boot_state *s, struct err *err)
{
	char path[PATH_MAX];
	json_object *doc;
	const char *text;
	size_t len = 0;

	s->updated_ms = clock_realtime_ms();
	if (snprintf(path, sizeof(path), "%s/%s", state_dir, BOOT_STATE_FILE) >= (int)sizeof(path))
		return err_set(err, ERR_FAILED, ENAMETOOLONG, "path too long: %s", state_dir);
	doc = state_doc(s);
	text = doc ? json_object_to_json_string_length(
	                 doc, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE, &len)
	           : NULL;
	if (!text)
		return err_oom(err);
	if (len + 1 > s->saved_line_cap) {
		/* Room to grow: the document gets longer with every phase. */
		size_t cap = len + 1 + 1024;
		char *line = realloc(s->saved_line, cap);
		if (!line)
			return err_oom(err);
		s->saved_line = line;
		s->saved_line_cap = cap;
	}
	memcpy(s->saved_line, text, len);
	s->saved_line[len] = '\n';
	return file_write_replace(path, s->saved_line, len + 1, 0600, (uid_t)-1, (gid_t)-1, err);
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
	free(s->boot_id);
	strv_free(s->completed);
	strv_free(s->skipped);
	free(s->mode);
	free(s->kind);
	free(s->recorded_steps);
	free(s->limits);
	free(s->limit_hit);
	free(s->egress);
	free(s->resumed_from);
	for (size_t i = 0; i < s->n_phases; i++) {
		free(s->phases[i].name);
		free(s->phases[i].log);
		free(s->phases[i].status);
		free(s->phases[i].detail);
		free(s->phases[i].inputs);
	}
	free(s->phases);
	free(s->cause);
	free(s->server_exit);
	free(s->server_log_tail);
	json_object_put(s->saved_doc);
	json_tokener_freep(&s->saved_tok);
	free(s->saved_line);
	memset(s, 0, sizeof(*s));
}

int boot_state_lock_acquire(const char *state_dir, int *ret_fd, struct err *err)
{
	_cleanup_free_ char *path = NULL;
	_cleanup_close_ int fd = -1;
	char pidbuf[32];
	struct stat st;
	size_t len;

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
	/*
	 * Written over the last boot's pid, then cut to length only if that was longer: emptying
	 * the file first frees its block, which costs a journal transaction (0.6 ms on ext4).
	 */
	len = (size_t)snprintf(pidbuf, sizeof(pidbuf), "%ld\n", (long)getpid());
	if (pwrite(fd, pidbuf, len, 0) != (ssize_t)len ||
	    (fstat(fd, &st) == 0 && st.st_size > (off_t)len && ftruncate(fd, (off_t)len) < 0))
		log_debug("cannot record our pid in %s: %m", path);
	*ret_fd = TAKE_FD(fd);
	return 0;
}
