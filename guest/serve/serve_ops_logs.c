/* SPDX-License-Identifier: Apache-2.0 */
/*
 * logs (docs/protocol.md "Status, logs, stop"): a boot's log from a byte offset, in messages
 * of at most 64 KiB, one per loop pass so other streams are not held up; with follow, on as
 * the log grows until the writer is done (docs/daemon.md "Log offsets" says how offsets
 * count and what a rotation does).
 */
#include "serve_ops_logs.h"

#include <dirent.h>
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
#include "logtimes.h"
#include "proc.h"
#include "serve_apps.h"
#include "serve_jobs.h"
#include "serve_stream.h"

/* The most lines a tail asks for; more is capped to it. */
#define LOGS_TAIL_MAX 10000

struct logs_op {
	char *state_dir;
	char *log;
	char path[PATH_MAX];
	char path1[PATH_MAX]; /* path.1, the rotated part */
	uint64_t offset;
	uint64_t max; /* 0: no limit */
	uint64_t sent;
	bool follow;
	bool times;    /* each logs.data names when its lines were written */
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

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The error for a log that does not exist: its name, and the names of the logs that do (from
 * state_dir/logs, "NAME.log" or a rotated "NAME.log.1"), sorted.
 */
static int log_missing(const char *state_dir, const char *app_dir, const char *log, struct err *err)
{
	char path[PATH_MAX], list[512] = "";
	_cleanup_closedir_ DIR *d = NULL;
	char *names[64];
	size_t n = 0, used = 0;
	struct dirent *de;

	snprintf(path, sizeof(path), "%s/logs", state_dir);
	d = opendir(path);
	while (d && (de = readdir(d)) && n < ELEMENTSOF(names)) {
		size_t len = strlen(de->d_name);
		bool dup = false;

		if (len > 6 && strcmp(de->d_name + len - 6, ".log.1") == 0)
			len -= 6;
		else if (len > 4 && strcmp(de->d_name + len - 4, ".log") == 0)
			len -= 4;
		else
			continue;
		if (de->d_name[0] == '.')
			continue;
		for (size_t i = 0; i < n; i++)
			dup |= strlen(names[i]) == len && strncmp(names[i], de->d_name, len) == 0;
		if (!dup && (names[n] = strndup(de->d_name, len)))
			n++;
	}
	qsort(names, n, sizeof(names[0]), name_cmp);
	for (size_t i = 0; i < n; i++) {
		int w = snprintf(list + used, sizeof(list) - used, "%s%s", i ? ", " : "", names[i]);
		if (w > 0 && (size_t)w < sizeof(list) - used)
			used += (size_t)w;
		free(names[i]);
	}
	if (n == 0)
		return err_set(err, ERR_REFUSED, ENOENT,
		               "no log named '%s' for %s: it has no logs yet", log, app_dir);
	return err_set(err, ERR_REFUSED, ENOENT, "no log named '%s' for %s: its logs are %s", log,
	               app_dir, list);
}

/*
 * The offset of the start of the last `lines` lines of the log (path.1 then path, as one), so
 * reading from it to the end gives them. A last line without its newline counts as a line.
 */
static uint64_t tail_offset(const struct logs_op *op, uint64_t lines)
{
	uint64_t s1 = file_size(op->path1, NULL), s0 = file_size(op->path, NULL);
	uint64_t pos = s1 + s0, found = 0;
	uint8_t buf[8192];

	if (lines == 0)
		return pos;
	/* Backwards, the current file first, then the rotated part. */
	for (int part = 0; part < 2; part++) {
		const char *path = part == 0 ? op->path : op->path1;
		uint64_t base = part == 0 ? s1 : 0, end = part == 0 ? s0 : s1;
		int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

		if (fd < 0)
			continue;
		while (end > 0) {
			size_t want = end > sizeof(buf) ? sizeof(buf) : (size_t)end;
			ssize_t n = pread(fd, buf, want, (off_t)(end - want));
			if (n != (ssize_t)want)
				break;
			for (size_t i = want; i-- > 0;) {
				if (buf[i] != '\n')
					continue;
				if (base + end - want + i + 1 == s1 + s0)
					continue; /* the newline that ends the last line */
				if (++found == lines) {
					close(fd);
					return base + end - want + i + 1;
				}
			}
			end -= want;
		}
		close(fd);
	}
	return 0;
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

/* The most time records one logs.data carries: one a second of a 64 KiB chunk is plenty. */
#define LOGS_TIMES_MAX 256

/*
 * "times": [[offset, unix ms], ...] for the len bytes at op->offset, read from file_path
 * (where those bytes start at file_pos): the time of the write each line at or after offset
 * began in (logtimes.h). Offsets are the stream's, as "offset" is; the first may lie before it.
 */
static json_object *chunk_times(const struct logs_op *op, const char *file_path, uint64_t file_pos,
                                size_t len)
{
	struct logtimes_rec recs[LOGS_TIMES_MAX];
	char index[PATH_MAX + 16];
	json_object *a = json_object_new_array();
	size_t n;

	snprintf(index, sizeof(index), "%s" LOGTIMES_SUFFIX, file_path);
	n = logtimes_lookup(index, file_pos, file_pos + len, recs, LOGS_TIMES_MAX);
	for (size_t i = 0; i < n; i++) {
		json_object *pair = json_object_new_array();
		/* A stream offset: the chunk's own, moved by where the record lies in the file. */
		json_object_array_add(
		    pair,
		    json_object_new_int64((int64_t)(op->offset + recs[i].pos) - (int64_t)file_pos));
		json_object_array_add(pair, json_object_new_int64(recs[i].ms));
		json_object_array_add(a, pair);
	}
	return a;
}

static int send_data(struct conn *c, struct stream *st, struct logs_op *op, const void *buf,
                     size_t len, bool end, json_object *times)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "log", json_object_new_string(op->log));
	json_object_object_add(o, "offset", json_object_new_int64((int64_t)op->offset));
	json_object_object_add(o, "skipped", json_object_new_int(0));
	if (times)
		json_object_object_add(o, "times", times);
	if (end)
		st->done = true;
	return serve_stream_send(c, MSG_LOGS_DATA, end ? MSG_F_END : 0, st->id, o, buf, len);
}

static int logs_pump(struct conn *c, struct stream *st)
{
	struct logs_op *op = st->data;
	uint8_t buf[SERVE_CHUNK];
	uint64_t s1, s0, total, want, file_pos;
	const char *file;
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
			send_data(c, st, op, NULL, 0, true, NULL);
		}
		return 0;
	}
	file = op->offset < s1 ? op->path1 : op->path;
	file_pos = op->offset < s1 ? op->offset : op->offset - s1;
	if (op->offset < s1 && want > s1 - op->offset)
		want = s1 - op->offset;
	fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	n = fd < 0 ? -1 : pread(fd, buf, want, (off_t)file_pos);
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 0; /* rotated or truncated under us: look again next time */
	if (send_data(c, st, op, buf, (size_t)n, false,
	              op->times ? chunk_times(op, file, file_pos, (size_t)n) : NULL) < 0)
		return 0;
	op->offset += (uint64_t)n;
	op->sent += (uint64_t)n;
	return 1;
}

static void logs_cancel(struct conn *c, struct stream *st)
{
	send_data(c, st, st->data, NULL, 0, true, NULL);
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
	int64_t offset = 0, max = 0, tail = -1;

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
	if (msg_get_int64(m, "tail", &tail) && tail < 0) {
		err_set(&err, ERR_REFUSED, EINVAL, "logs: tail counts lines from 0");
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
	op->times = m->json && json_object_object_get_ex(m->json, "timestamps", &v) &&
	            json_object_get_boolean(v);
	/* A log that is not there, and that no running boot or server may still write. */
	if (access(op->path, F_OK) < 0 && access(op->path1, F_OK) < 0 && writer_done(c, op)) {
		log_missing(op->state_dir, app_dir, log, &err);
		return serve_stream_error(c, st, &err);
	}
	if (tail >= 0)
		op->offset = tail_offset(op, tail > LOGS_TAIL_MAX ? LOGS_TAIL_MAX : (uint64_t)tail);
	log_debug("connection %" PRIu64 ": logs %s of %s from %" PRIu64 "%s", c->id, log, app_dir,
	          op->offset, op->follow ? ", following" : "");
	return 0;
}
