/* SPDX-License-Identifier: Apache-2.0 */
/*
 * logs (docs/protocol.md "Status, logs, stop"): a boot's log from a byte offset, in messages
 * of at most 64 KiB, one per loop pass so other streams are not held up; with follow, on as
 * the log grows until the writer is done (docs/daemon.md "Log offsets" says how offsets
 * count and what a rotation does).
 */
#include "serve_ops_logs.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "boot_state.h"
#include "log.h"
#include "proc.h"
#include "serve_apps.h"
#include "serve_jobs.h"
#include "serve_stream.h"

struct logs_op {
	char *state_dir;
	char *log;
	char path[PATH_MAX];
	char path1[PATH_MAX]; /* path.1, the rotated part */
	uint64_t offset;
	uint64_t max; /* 0: no limit */
	uint64_t sent;
	bool follow;
	ino_t ino;     /* of path when last looked at (0: none yet) */
	uint64_t base; /* size of path.1 then */
};

static void logs_free(void *data)
{
	struct logs_op *op = data;

	free(op->state_dir);
	free(op->log);
	free(op);
}

static bool log_name_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 64 || s[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-' || s[i] == '.'))
			return false;
	return true;
}

static uint64_t file_size(const char *path, ino_t *ret_ino)
{
	struct stat st;

	if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode)) {
		if (ret_ino)
			*ret_ino = 0;
		return 0;
	}
	if (ret_ino)
		*ret_ino = st.st_ino;
	return (uint64_t)st.st_size;
}

/* Whoever writes this log is done: the boot is over (and, for the server's, the server). */
static bool writer_done(struct conn *c, struct logs_op *op)
{
	struct boot_state s;
	struct err err;
	bool done = true;

	if (serve_jobs_find(c->srv, JOB_BOOT, op->state_dir))
		return false;
	if (boot_state_load(op->state_dir, &s, &err) != 0)
		return true;
	if (s.status && strcmp(s.status, "booting") == 0 && s.boot_pid > 1 &&
	    proc_is(s.boot_pid, s.boot_start))
		done = false;
	if (strcmp(op->log, "server") == 0 && s.server_pid > 1 &&
	    proc_is(s.server_pid, s.server_start))
		done = false;
	boot_state_dispose(&s);
	return done;
}

static int send_data(struct conn *c, struct stream *st, struct logs_op *op, const void *buf,
                     size_t len, bool end)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "log", json_object_new_string(op->log));
	json_object_object_add(o, "offset", json_object_new_int64((int64_t)op->offset));
	json_object_object_add(o, "skipped", json_object_new_int(0));
	if (end)
		st->done = true;
	return serve_stream_send(c, MSG_LOGS_DATA, end ? MSG_F_END : 0, st->id, o, buf, len);
}

static int logs_pump(struct conn *c, struct stream *st)
{
	struct logs_op *op = st->data;
	uint8_t buf[SERVE_CHUNK];
	uint64_t s1, s0, total, want;
	ino_t ino;
	ssize_t n;
	int fd;

	s0 = file_size(op->path, &ino);
	s1 = file_size(op->path1, NULL);
	if (op->ino && ino && ino != op->ino) {
		/* Rotated: the file we read is path.1 now; our offset moves back with it. */
		op->offset = op->offset >= op->base ? op->offset - op->base : 0;
	}
	if (ino) {
		op->ino = ino;
		op->base = s1;
	}
	total = s1 + s0;
	if (op->offset > total)
		op->offset = total;
	want = total - op->offset;
	if (op->max && want > op->max - op->sent)
		want = op->max - op->sent;
	if (want > sizeof(buf))
		want = sizeof(buf);
	if (want == 0) {
		if ((op->max && op->sent >= op->max) || !op->follow || writer_done(c, op)) {
			/* The last check saw the writer done: anything it wrote first is in total.
			 */
			if (op->follow &&
			    file_size(op->path, NULL) + file_size(op->path1, NULL) > total &&
			    !(op->max && op->sent >= op->max))
				return 1;
			send_data(c, st, op, NULL, 0, true);
		}
		return 0;
	}
	if (op->offset < s1) {
		fd = open(op->path1, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (want > s1 - op->offset)
			want = s1 - op->offset;
		n = fd < 0 ? -1 : pread(fd, buf, want, (off_t)op->offset);
	} else {
		fd = open(op->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		n = fd < 0 ? -1 : pread(fd, buf, want, (off_t)(op->offset - s1));
	}
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 0; /* rotated or truncated under us: look again next time */
	if (send_data(c, st, op, buf, (size_t)n, false) < 0)
		return 0;
	op->offset += (uint64_t)n;
	op->sent += (uint64_t)n;
	return 1;
}

static void logs_cancel(struct conn *c, struct stream *st)
{
	send_data(c, st, st->data, NULL, 0, true);
}

static const struct stream_ops logs_ops = {
    .on_cancel = logs_cancel,
    .pump = logs_pump,
    .free = logs_free,
};

int serve_ops_logs(struct conn *c, struct stream *st, const struct msg *m)
{
	_cleanup_free_ char *app_dir = NULL;
	struct logs_op *op;
	const char *dir, *log;
	json_object *v;
	struct err err;
	int64_t offset = 0, max = 0;

	err_clear(&err);
	dir = serve_stream_field_string(m, "app_dir", true, &err);
	if (!dir)
		return serve_stream_error(c, st, &err);
	log = serve_stream_field_string(m, "log", true, &err);
	if (!log)
		return serve_stream_error(c, st, &err);
	if (!log_name_valid(log)) {
		err_set(&err, ERR_REFUSED, EINVAL, "logs: \"%.64s\" is not a log's name", log);
		return serve_stream_error(c, st, &err);
	}
	if ((msg_get_int64(m, "offset", &offset) && offset < 0) ||
	    (msg_get_int64(m, "max", &max) && max < 0)) {
		err_set(&err, ERR_REFUSED, EINVAL, "logs: offset and max count bytes from 0");
		return serve_stream_error(c, st, &err);
	}
	op = calloc(1, sizeof(*op));
	if (!op) {
		err_oom(&err);
		return serve_stream_error(c, st, &err);
	}
	st->data = op;
	st->ops = &logs_ops;
	if (serve_apps_normalize(dir, &app_dir, &err) < 0 ||
	    serve_apps_state_dir(c->srv, app_dir, &op->state_dir, &err) < 0)
		return serve_stream_error(c, st, &err);
	op->log = strdup(log);
	if (!op->log) {
		err_oom(&err);
		return serve_stream_error(c, st, &err);
	}
	snprintf(op->path, sizeof(op->path), "%s/logs/%s.log", op->state_dir, log);
	snprintf(op->path1, sizeof(op->path1), "%s.1", op->path);
	op->offset = (uint64_t)offset;
	op->max = (uint64_t)max;
	op->follow = m->json && json_object_object_get_ex(m->json, "follow", &v) &&
	             json_object_get_boolean(v);
	log_debug("connection %" PRIu64 ": logs %s of %s from %" PRId64 "%s", c->id, log, app_dir,
	          offset, op->follow ? ", following" : "");
	return 0;
}
