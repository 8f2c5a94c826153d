/* SPDX-License-Identifier: Apache-2.0 */
#include "logfile.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "logtimes.h"

#define LOG_MODE 0600
#define TAIL_BASE_WINDOW (1024 * 1024)

struct logfile {
	char *path;    /* as given, for messages */
	char *name;    /* the last component, opened relative to dirfd */
	char *rotated; /* name + ".1" */
	int dirfd;
	int fd;
	bool regular; /* only regular files are rotated */
	uid_t uid;
	gid_t gid;
	uint64_t max_bytes;
	uint64_t size;       /* of the current file */
	uint64_t offset;     /* across the log's history */
	struct err last_err; /* for logfile_sink() */
	/* The time index (logtimes.h), when logfile_keep_times() asked for one: */
	int times_fd;
	char *times_name, *times_rotated;
	uint64_t times_size;
	int64_t times_last_sec; /* of the last record; -1: none in this file yet */
};

static int log_create(struct logfile *lf, struct err *err)
{
	struct stat st;
	int fd;

	fd = openat(lf->dirfd, lf->name,
	            O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, LOG_MODE);
	if (fd < 0) {
		if (errno == ELOOP)
			return err_set(err, ERR_REFUSED, ELOOP, "log %s is a symbolic link",
			               lf->path);
		return err_errno(err, "cannot open log %s", lf->path);
	}
	if (fstat(fd, &st) < 0) {
		err_errno(err, "cannot stat log %s", lf->path);
		close(fd);
		return err_ret(err);
	}
	if (lf->uid != (uid_t)-1 && S_ISREG(st.st_mode) &&
	    (st.st_uid != lf->uid || st.st_gid != lf->gid) && fchown(fd, lf->uid, lf->gid) < 0) {
		err_errno(err, "cannot give log %s to %u:%u", lf->path, (unsigned)lf->uid,
		          (unsigned)lf->gid);
		close(fd);
		return err_ret(err);
	}
	if (lf->fd >= 0)
		close(lf->fd);
	lf->fd = fd;
	lf->regular = S_ISREG(st.st_mode);
	lf->size = lf->regular ? (uint64_t)st.st_size : 0;
	return 0;
}

void logfile_close(struct logfile *lf)
{
	if (!lf)
		return;
	if (lf->fd >= 0)
		close(lf->fd);
	if (lf->dirfd >= 0)
		close(lf->dirfd);
	if (lf->times_fd >= 0)
		close(lf->times_fd);
	free(lf->path);
	free(lf->name);
	free(lf->rotated);
	free(lf->times_name);
	free(lf->times_rotated);
	free(lf);
}

int logfile_open(const char *path, uint64_t max_bytes, uid_t uid, gid_t gid, struct logfile **ret,
                 struct err *err)
{
	_cleanup_logfile_ struct logfile *lf = calloc(1, sizeof(*lf));
	_cleanup_free_ char *dir_copy = strdup(path);
	_cleanup_free_ char *base_copy = strdup(path);
	int r;

	if (!lf || !dir_copy || !base_copy)
		return err_oom_at(err, "opening log %s", path);
	lf->fd = lf->dirfd = lf->times_fd = -1;
	lf->uid = uid;
	lf->gid = gid;
	lf->max_bytes = max_bytes;
	lf->path = strdup(path);
	lf->name = strdup(basename(base_copy));
	if (!lf->path || !lf->name || asprintf(&lf->rotated, "%s.1", lf->name) < 0) {
		lf->rotated = NULL;
		return err_oom_at(err, "opening log %s", path);
	}
	lf->dirfd = open(dirname(dir_copy), O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (lf->dirfd < 0)
		return err_errno(err, "cannot open the directory of log %s", path);
	r = log_create(lf, err);
	if (r < 0)
		return r;
	lf->offset = lf->size;
	*ret = TAKE_PTR(lf);
	return 0;
}

/* The index's file, created 0600 and owned like the log; -1 when it cannot be had. */
static int times_create(struct logfile *lf)
{
	struct stat st;
	int fd =
	    openat(lf->dirfd, lf->times_name,
	           O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, LOG_MODE);

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (lf->uid != (uid_t)-1 && (st.st_uid != lf->uid || st.st_gid != lf->gid) &&
	     fchown(fd, lf->uid, lf->gid) < 0)) {
		close(fd);
		return -1;
	}
	/* An index from before a crash may end in half a record: records start again aligned. */
	lf->times_size = (uint64_t)st.st_size;
	if (lf->times_size % LOGTIMES_RECORD &&
	    ftruncate(fd, (off_t)(lf->times_size - lf->times_size % LOGTIMES_RECORD)) == 0)
		lf->times_size -= lf->times_size % LOGTIMES_RECORD;
	lf->times_last_sec = -1;
	return fd;
}

int logfile_keep_times(struct logfile *lf, struct err *err)
{
	if (!lf->regular)
		return 0;
	if (asprintf(&lf->times_name, "%s" LOGTIMES_SUFFIX, lf->name) < 0 ||
	    asprintf(&lf->times_rotated, "%s" LOGTIMES_SUFFIX, lf->rotated) < 0) {
		lf->times_rotated = NULL;
		return err_oom_at(err, "indexing the times of log %s", lf->path);
	}
	lf->times_fd = times_create(lf);
	if (lf->times_fd < 0)
		return err_errno(err, "cannot open the time index of log %s", lf->path);
	return 0;
}

void logfile_keep_times_or_say(struct logfile *lf)
{
	struct err e;

	if (logfile_keep_times(lf, &e) < 0)
		log_debug("%s; its lines will have no times", e.msg);
}

/* Note that the bytes at the current file's end are written now (one record a second). */
static void times_note(struct logfile *lf)
{
	int64_t ms = clock_realtime_ms();
	char rec[LOGTIMES_RECORD];

	if (lf->times_fd < 0 || ms / 1000 == lf->times_last_sec)
		return;
	logtimes_format(rec, lf->size, ms);
	if (write(lf->times_fd, rec, sizeof(rec)) != (ssize_t)sizeof(rec)) {
		/* The index is help, not the log: without room it stops, the log goes on. */
		close(lf->times_fd);
		lf->times_fd = -1;
		return;
	}
	lf->times_size += sizeof(rec);
	lf->times_last_sec = ms / 1000;
}

static int log_rotate(struct logfile *lf, struct err *err)
{
	if (renameat(lf->dirfd, lf->name, lf->dirfd, lf->rotated) < 0)
		return err_errno(err, "cannot rotate log %s to %s.1", lf->path, lf->path);
	if (lf->times_fd >= 0) {
		close(lf->times_fd);
		lf->times_fd = -1;
		if (renameat(lf->dirfd, lf->times_name, lf->dirfd, lf->times_rotated) == 0 ||
		    errno == ENOENT)
			lf->times_fd = times_create(lf);
	}
	return log_create(lf, err);
}

static int log_write_error(struct logfile *lf, struct err *err)
{
	if (errno == ENOSPC)
		return err_set(err, ERR_FAILED, ENOSPC, "disk full writing %s", lf->path);
	if (errno == EDQUOT)
		return err_set(err, ERR_FAILED, EDQUOT, "disk quota exceeded writing %s", lf->path);
	return err_errno(err, "cannot write log %s", lf->path);
}

int logfile_write(struct logfile *lf, const void *buf, size_t len, struct err *err)
{
	const char *p = buf;

	while (len > 0) {
		size_t chunk = len;
		ssize_t n;

		/* A full time index rotates its log too, so neither grows without bound. */
		if (lf->times_fd >= 0 && lf->size > 0 &&
		    lf->times_size + LOGTIMES_RECORD > LOGTIMES_MAX_BYTES) {
			int r = log_rotate(lf, err);
			if (r < 0)
				return r;
		}
		if (lf->regular && lf->max_bytes > 0) {
			if (lf->size > 0 && lf->size + len > lf->max_bytes) {
				int r = log_rotate(lf, err);
				if (r < 0)
					return r;
			}
			if (lf->size + chunk > lf->max_bytes)
				chunk = lf->size < lf->max_bytes ? lf->max_bytes - lf->size : 1;
		}
		times_note(lf);
		n = write(lf->fd, p, chunk);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return log_write_error(lf, err);
		}
		if (n == 0) {
			errno = ENOSPC;
			return log_write_error(lf, err);
		}
		p += n;
		len -= (size_t)n;
		lf->size += (uint64_t)n;
		lf->offset += (uint64_t)n;
	}
	return 0;
}

uint64_t logfile_offset(const struct logfile *lf)
{
	return lf->offset;
}

uint64_t logfile_file_start(const struct logfile *lf)
{
	return lf->offset - lf->size;
}

int logfile_sink(void *userdata, const char *buf, size_t len)
{
	struct logfile *lf = userdata;

	err_clear(&lf->last_err);
	return logfile_write(lf, buf, len, &lf->last_err);
}

const struct err *logfile_last_error(const struct logfile *lf)
{
	return &lf->last_err;
}

/* ---- tail ---- */

/* Bytes of the first max characters of s[0, n), never cutting a UTF-8 sequence. */
static size_t utf8_cut(const char *s, size_t n, size_t max)
{
	size_t chars = 0;

	for (size_t i = 0; i < n; i++) {
		if (((unsigned char)s[i] & 0xC0) == 0x80)
			continue; /* a continuation byte belongs to the character before */
		if (chars == max)
			return i;
		chars++;
	}
	return n;
}

static int read_at(int fd, char *buf, size_t len, off_t off)
{
	while (len > 0) {
		ssize_t n = pread(fd, buf, len, off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO; /* truncated under us */
		buf += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

static size_t count_newlines(const char *s, size_t n)
{
	size_t c = 0;

	for (const char *p = s; (p = memchr(p, '\n', (size_t)(s + n - p))); p++)
		c++;
	return c;
}

int logfile_tail(const char *path, size_t nlines, size_t max_line_chars, char **ret,
                 struct err *err)
{
	return logfile_tail_since(path, 0, nlines, max_line_chars, ret, err);
}

int logfile_tail_since(const char *path, uint64_t since, size_t nlines, size_t max_line_chars,
                       char **ret, struct err *err)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	_cleanup_free_ char *out = NULL;
	size_t cap, window, size, o = 0, start, end, first = 0;
	struct stat st;
	int r;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return err_errno(err, "cannot open log %s", path);
	if (fstat(fd, &st) < 0)
		return err_errno(err, "cannot stat log %s", path);
	if (!S_ISREG(st.st_mode))
		return err_set(err, ERR_REFUSED, EINVAL, "log %s is not a regular file", path);
	size = (size_t)st.st_size;
	/* A file smaller than since was rotated or truncated since: all of it is newer. */
	if (since > size)
		since = 0;
	cap = TAIL_BASE_WINDOW + nlines * (4 * max_line_chars + 2);
	if (cap > size - since)
		cap = size - (size_t)since;
	/* Grow the window from the end until it holds nlines full lines, or hits the cap. */
	for (window = cap < 64 * 1024 ? cap : 64 * 1024;;
	     window = window * 4 < cap ? window * 4 : cap) {
		char *nb = realloc(buf, window + 1);
		if (!nb)
			return err_oom_at(err, "reading log %s", path);
		buf = nb;
		r = read_at(fd, buf, window, (off_t)(size - window));
		if (r < 0) {
			errno = -r;
			return err_errno(err, "cannot read log %s", path);
		}
		if (window == cap || count_newlines(buf, window) > nlines)
			break;
	}

	out = malloc(nlines * (4 * max_line_chars + 1) + 1);
	if (!out)
		return err_oom_at(err, "reading log %s", path);
	/* A final '\n' ends the last line rather than starting an empty one. */
	end = window;
	if (end > 0 && buf[end - 1] == '\n')
		end--;
	/* Walk back to the start of the first line wanted, then emit forward. */
	start = end;
	for (size_t found = 0; window > 0 && found < nlines; found++) {
		size_t pos = start;
		while (pos > 0 && buf[pos - 1] != '\n')
			pos--;
		first = pos;
		if (pos == 0)
			break;
		start = pos - 1;
	}
	for (size_t s = first; window > 0 && nlines > 0;) {
		const char *nl = memchr(buf + s, '\n', end - s);
		size_t e = nl ? (size_t)(nl - buf) : end, cut = e;

		if (cut > s && buf[cut - 1] == '\r')
			cut--;
		cut = s + utf8_cut(buf + s, cut - s, max_line_chars);
		for (size_t i = s; i < cut; i++)
			out[o++] = buf[i] ? buf[i] : '?'; /* the result is a C string */
		out[o++] = '\n';
		if (!nl)
			break;
		s = e + 1;
	}
	out[o] = '\0';
	*ret = TAKE_PTR(out);
	return 0;
}
