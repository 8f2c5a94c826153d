/* SPDX-License-Identifier: Apache-2.0 */
#include "file.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int file_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

#define FILE_READ_FIRST ((size_t)4096)

int file_read_capped(int dirfd, const char *path, size_t max, int flags, char **ret_buf,
                     size_t *ret_len, struct err *err)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, cap;
	struct stat st;

	fd = openat(dirfd, path,
	            O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK |
	                ((flags & READ_NOFOLLOW) ? O_NOFOLLOW : 0));
	if (fd < 0) {
		if (errno == ENOENT && (flags & READ_MISSING_OK)) {
			*ret_buf = NULL;
			if (ret_len)
				*ret_len = 0;
			return 1;
		}
		if (errno == ELOOP && (flags & READ_NOFOLLOW))
			return err_set(err, ERR_REFUSED, ELOOP, "%s is a symbolic link", path);
		return err_errno(err, "cannot open %s", path);
	}
	if (fstat(fd, &st) < 0)
		return err_errno(err, "cannot stat %s", path);
	if (!S_ISREG(st.st_mode))
		return err_set(err, ERR_REFUSED, EINVAL, "%s is not a regular file", path);
	if ((size_t)st.st_size > max)
		return err_set(err, ERR_REFUSED, EFBIG, "%s is larger than %zu bytes", path, max);
	/*
	 * The size may change under us: read until EOF, never beyond max. Files of /proc and
	 * /sys say 0: a page first, not a byte read after a byte.
	 */
	cap = (size_t)st.st_size + 1;
	if (cap < FILE_READ_FIRST)
		cap = max < FILE_READ_FIRST ? max + 1 : FILE_READ_FIRST;
	buf = malloc(cap + 1);
	if (!buf)
		return err_oom_at(err, "reading %s", path);
	for (;;) {
		ssize_t n;
		if (len == cap) {
			char *nb;
			if (cap > max)
				return err_set(err, ERR_REFUSED, EFBIG,
				               "%s is larger than %zu bytes", path, max);
			cap = cap * 2 > max + 1 ? max + 1 : cap * 2;
			nb = realloc(buf, cap + 1);
			if (!nb)
				return err_oom_at(err, "reading %s", path);
			buf = nb;
		}
		n = file_read_all(fd, buf + len, cap - len);
		if (n < 0) {
			errno = (int)-n;
			return err_errno(err, "cannot read %s", path);
		}
		len += (size_t)n;
		if (len < cap)
			break;
	}
	if (len > max)
		return err_set(err, ERR_REFUSED, EFBIG, "%s is larger than %zu bytes", path, max);
	buf[len] = '\0';
	*ret_buf = TAKE_PTR(buf);
	if (ret_len)
		*ret_len = len;
	return 0;
}

static int file_write_rename(const char *path, const void *data, size_t len, mode_t mode, uid_t uid,
                             gid_t gid, bool sync, struct err *err);

int file_write_atomic(const char *path, const void *data, size_t len, mode_t mode, uid_t uid,
                      gid_t gid, struct err *err)
{
	return file_write_rename(path, data, len, mode, uid, gid, true, err);
}

int file_write_replace(const char *path, const void *data, size_t len, mode_t mode, uid_t uid,
                       gid_t gid, struct err *err)
{
	return file_write_rename(path, data, len, mode, uid, gid, false, err);
}

static int write_failed(const char *path, const char *tmp, int r, struct err *err)
{
	unlink(tmp);
	errno = -r;
	if (r == -ENOSPC || r == -EDQUOT)
		return err_errno(err, "disk full writing %s", path);
	return err_errno(err, "cannot write %s", path);
}

/*
 * The temporary file beside path, in tmp (PATH_MAX bytes): path.tmp.<pid>, or when staged the
 * stage's fixed name, path FILE_STAGE_SUFFIX; false when it would be too long.
 */
static bool tmp_name(const char *path, bool staged, char *tmp)
{
	int n = staged ? snprintf(tmp, PATH_MAX, "%s" FILE_STAGE_SUFFIX, path)
	               : snprintf(tmp, PATH_MAX, "%s.tmp.%ld", path, (long)getpid());

	return n >= 0 && n < PATH_MAX;
}

/* data into tmp (PATH_MAX bytes), the temporary file of path (tmp_name()); synced when sync. */
static int write_tmp(const char *path, const void *data, size_t len, mode_t mode, uid_t uid,
                     gid_t gid, bool sync, bool staged, char *tmp, struct err *err)
{
	_cleanup_close_ int fd = -1;
	int r;

	if (!tmp_name(path, staged, tmp))
		return err_set(err, ERR_FAILED, ENAMETOOLONG, "path too long: %s", path);
	/* A leftover (or planted) file of that name is removed, never written through. */
	(void)unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return err_errno(err, "cannot create %s", tmp);
	r = file_write_all(fd, data, len);
	if (r == 0 && fchmod(fd, mode) < 0)
		r = -errno;
	if (r == 0 && uid != (uid_t)-1 && fchown(fd, uid, gid) < 0)
		r = -errno;
	if (r == 0 && sync && fsync(fd) < 0)
		r = -errno;
	if (r == 0 && close(TAKE_FD(fd)) < 0)
		r = -errno;
	return r < 0 ? write_failed(path, tmp, r, err) : 0;
}

/* tmp renamed over path; then, when sync, the directory synced. */
static int rename_tmp(const char *tmp, const char *path, bool sync, struct err *err)
{
	_cleanup_free_ char *dir_copy = strdup(path);
	_cleanup_close_ int dfd = -1;

	if (!dir_copy)
		return write_failed(path, tmp, -ENOMEM, err);
	if (rename(tmp, path) < 0)
		return write_failed(path, tmp, -errno, err);
	if (!sync)
		return 0;
	dfd = open(dirname(dir_copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0)
		(void)fsync(dfd);
	return 0;
}

static int file_write_rename(const char *path, const void *data, size_t len, mode_t mode, uid_t uid,
                             gid_t gid, bool sync, struct err *err)
{
	char tmp[PATH_MAX];

	if (write_tmp(path, data, len, mode, uid, gid, sync, false, tmp, err) < 0)
		return -1;
	return rename_tmp(tmp, path, sync, err);
}

int file_stage(const char *path, const void *data, size_t len, mode_t mode, uid_t uid, gid_t gid,
               struct file_stage *ret, struct err *err)
{
	char tmp[PATH_MAX];

	*ret = (struct file_stage){0};
	if (write_tmp(path, data, len, mode, uid, gid, false, true, tmp, err) < 0)
		return -1;
	ret->path = strdup(path);
	ret->tmp = strdup(tmp);
	if (!ret->path || !ret->tmp) {
		unlink(tmp);
		file_stage_abort(ret);
		return err_oom(err);
	}
	return 0;
}

int file_stage_commit(struct file_stage *s, struct err *err)
{
	int r;

	if (!s->tmp)
		return err_set(err, ERR_FAILED, EINVAL, "nothing staged to commit");
	r = rename_tmp(s->tmp, s->path, false, err);
	free(s->tmp);
	s->tmp = NULL;
	file_stage_abort(s);
	return r;
}

void file_stage_abort(struct file_stage *s)
{
	if (s->tmp)
		unlink(s->tmp);
	free(s->tmp);
	free(s->path);
	*s = (struct file_stage){0};
}

void file_stage_remove(const char *path)
{
	char tmp[PATH_MAX];

	if (tmp_name(path, true, tmp))
		(void)unlink(tmp);
}

int file_mkdir_p(const char *path, mode_t mode, struct err *err)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf))
		return err_set(err, ERR_FAILED, ENAMETOOLONG, "bad directory path: %s", path);
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return err_errno(err, "cannot create directory %s", buf);
		*p = '/';
	}
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		return err_errno(err, "cannot create directory %s", buf);
	return 0;
}

ssize_t file_read_all(int fd, void *buf, size_t size)
{
	size_t len = 0;

	while (len < size) {
		ssize_t n = read(fd, (char *)buf + len, size - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	return (ssize_t)len;
}
