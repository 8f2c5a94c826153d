/* SPDX-License-Identifier: Apache-2.0 */
#include "fs_safe.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"

#define FS_MAX_DEPTH 512

static int open_dir_at(int dirfd, const char *name)
{
	return openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

int fs_safe_dir_ensure(const char *path, uid_t uid, gid_t gid, mode_t mode, struct err *err)
{
	_cleanup_free_ char *copy = NULL;
	_cleanup_close_ int fd = -1;
	char *save = NULL, *comp;

	if (!path || path[0] != '/')
		return err_set(err, ERR_REFUSED, EINVAL, "not an absolute path: %s",
		               path ? path : "(null)");
	copy = strdup(path);
	if (!copy)
		return err_oom(err);
	fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return err_errno(err, "cannot open /");
	for (comp = strtok_r(copy, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
		int next;

		if (strcmp(comp, ".") == 0 || strcmp(comp, "..") == 0)
			return err_set(err, ERR_REFUSED, EINVAL, "%s: '.' and '..' are not allowed",
			               path);
		if (mkdirat(fd, comp, 0755) < 0 && errno != EEXIST)
			return err_errno(err, "cannot create %s (at %s)", path, comp);
		next = open_dir_at(fd, comp);
		if (next < 0) {
			if (errno == ELOOP || errno == ENOTDIR)
				return err_set(err, ERR_REFUSED, errno,
				               "%s: %s is a symbolic link or not a directory", path,
				               comp);
			return err_errno(err, "cannot open %s (at %s)", path, comp);
		}
		close(fd);
		fd = next;
	}
	if (uid != (uid_t)-1 && fchown(fd, uid, gid) < 0)
		return err_errno(err, "cannot give %s to uid %u", path, (unsigned)uid);
	if (fchmod(fd, mode) < 0)
		return err_errno(err, "cannot set the mode of %s", path);
	return 0;
}

struct chown_walk {
	uid_t uid;
	gid_t gid;
	const char *root;
	struct err *err;
};

/*
 * Give one entry of DFD that is not the run user's to it. The entry is opened (O_PATH, not
 * following a link; a device or FIFO is not opened for I/O) and judged and changed through that
 * descriptor, never by its name again: an app of the same user that swaps the name for a hard
 * link to another user's file between the look and the change gets nothing. Anything but a
 * directory with more than one link that is not the user's is left alone (a link the user made
 * to a file, FIFO or device node of someone else's). *st becomes what the descriptor holds. 0
 * (also for an entry gone meanwhile), or -1 with w->err.
 */
static int chown_entry(struct chown_walk *w, int dfd, const char *name, struct stat *st)
{
	_cleanup_close_ int fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0 && errno == ENOENT)
		return 0;
	if (fd < 0)
		return err_errno(w->err, "cannot open %s below %s", name, w->root);
	if (fstat(fd, st) < 0)
		return err_errno(w->err, "cannot stat %s below %s", name, w->root);
	if (!S_ISDIR(st->st_mode) && st->st_nlink > 1 && st->st_uid != w->uid)
		return 0;
	if (fchownat(fd, "", w->uid, w->gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
		return err_errno(w->err, "cannot give %s below %s to uid %u", name, w->root,
		                 (unsigned)w->uid);
	return 0;
}

static int chown_below(struct chown_walk *w, int fd, unsigned depth)
{
	DIR *d;
	struct dirent *de;
	int r = 0;

	if (depth > FS_MAX_DEPTH) {
		close(fd);
		return err_set(w->err, ERR_FAILED, ELOOP, "%s is nested too deep", w->root);
	}
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return err_errno(w->err, "cannot read a directory below %s", w->root);
	}
	while (r == 0 && (de = readdir(d))) {
		struct stat st;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue;
			r = err_errno(w->err, "cannot stat %s below %s", de->d_name, w->root);
			break;
		}
		if ((st.st_uid != w->uid || st.st_gid != w->gid) &&
		    (r = chown_entry(w, dirfd(d), de->d_name, &st)) < 0)
			break;
		if (S_ISDIR(st.st_mode)) {
			int sub = open_dir_at(dirfd(d), de->d_name);
			if (sub < 0) {
				/* Swapped for a link or removed since the stat: not ours to follow.
				 */
				if (errno == ELOOP || errno == ENOTDIR || errno == ENOENT)
					continue;
				r = err_errno(w->err, "cannot open %s below %s", de->d_name,
				              w->root);
				break;
			}
			r = chown_below(w, sub, depth + 1);
		}
	}
	closedir(d);
	return r;
}

int fs_safe_tree_chown_fd(int fd, uid_t uid, gid_t gid, const char *what, struct err *err)
{
	struct chown_walk w = {.uid = uid, .gid = gid, .root = what, .err = err};
	int walk_fd;

	if (fchown(fd, uid, gid) < 0)
		return err_errno(err, "cannot give %s to uid %u", what, (unsigned)uid);
	walk_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (walk_fd < 0)
		return err_errno(err, "cannot read %s", what);
	return chown_below(&w, walk_fd, 0);
}

int fs_safe_tree_chown(const char *root, uid_t uid, gid_t gid, struct err *err)
{
	_cleanup_close_ int fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return err_errno(err, "cannot open %s", root);
	return fs_safe_tree_chown_fd(fd, uid, gid, root, err);
}

static int unlink_missing_ok(int dfd, const char *name, int flags)
{
	return unlinkat(dfd, name, flags) < 0 && errno != ENOENT ? -errno : 0;
}

/* fs_safe_tree_remove_at's walk: -errno of the first failure, or 0. */
static int remove_at(int dfd, const char *name, dev_t dev, unsigned depth)
{
	_cleanup_close_ int fd = -1;
	DIR *d;
	struct dirent *de;
	struct stat st;
	int r = 0;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlink_missing_ok(dfd, name, 0);
	if (st.st_dev != dev)
		return -EXDEV;
	if (depth >= FS_MAX_DEPTH)
		return -ELOOP;
	fd = open_dir_at(dfd, name);
	if (fd < 0) {
		if (errno == ENOTDIR || errno == ELOOP) /* replaced meanwhile */
			return unlink_missing_ok(dfd, name, 0);
		return errno == ENOENT ? 0 : -errno;
	}
	/* A read-only directory (a module cache) must be writable to be emptied; no-op as root. */
	if ((st.st_mode & 0700) != 0700 && fchmod(fd, (st.st_mode | 0700) & 07777) < 0)
		log_debug("making %s writable to remove it: %m", name);
	d = fdopendir(fd);
	if (!d)
		return -errno;
	fd = -1;
	while ((de = readdir(d))) {
		int k;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		k = remove_at(dirfd(d), de->d_name, dev, depth + 1);
		if (k < 0 && r == 0)
			r = k;
	}
	closedir(d);
	if (r < 0)
		return r;
	return unlink_missing_ok(dfd, name, AT_REMOVEDIR);
}

int fs_safe_tree_remove_at(int dfd, const char *name, struct err *err)
{
	struct stat st;
	int r;

	if (fstat(dfd, &st) < 0)
		return err_errno(err, "cannot examine the directory holding %s", name);
	r = remove_at(dfd, name, st.st_dev, 0);
	if (r < 0) {
		errno = -r;
		return err_errno(err, "cannot remove %s", name);
	}
	return 0;
}

int fs_safe_tree_remove(const char *path, struct err *err)
{
	_cleanup_free_ char *copy = NULL;
	_cleanup_close_ int dfd = -1;
	const char *name;
	char *slash;
	size_t n;

	copy = strdup(path);
	if (!copy)
		return err_oom(err);
	n = strlen(copy);
	while (n > 1 && copy[n - 1] == '/')
		copy[--n] = '\0';
	slash = strrchr(copy, '/');
	name = slash ? slash + 1 : copy;
	if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return err_set(err, ERR_REFUSED, EINVAL, "refusing to remove %s", path);
	if (!slash)
		dfd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	else if (slash == copy)
		dfd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	else {
		*slash = '\0';
		dfd = open(copy, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (dfd < 0)
		return errno == ENOENT
		           ? 0
		           : err_errno(err, "cannot open the directory holding %s", path);
	if (fs_safe_tree_remove_at(dfd, name, err) < 0)
		return err_reword(err, "cannot remove %s: %s", path, strerror(err->code));
	return 0;
}

int fs_safe_dir_check_root_owned(const char *path, struct err *err)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf) || path[0] != '/')
		return err_set(err, ERR_REFUSED, EINVAL, "not an absolute path: %s", path);
	memcpy(buf, path, len + 1);
	for (;;) {
		struct stat st;
		char *slash;

		if (lstat(buf[0] ? buf : "/", &st) < 0)
			return err_errno(err, "cannot stat %s", buf[0] ? buf : "/");
		if (S_ISLNK(st.st_mode))
			return err_set(
			    err, ERR_REFUSED, ELOOP,
			    "%s is a symbolic link; the workspace must be a real directory", buf);
		if (st.st_uid != 0 || ((st.st_mode & 022) && !(st.st_mode & S_ISVTX)))
			return err_set(err, ERR_REFUSED, EPERM,
			               "%s must be owned by root and writable only by root, since "
			               "the engine writes there as root",
			               buf[0] ? buf : "/");
		slash = strrchr(buf, '/');
		if (!slash || buf[0] == '\0')
			break;
		if (slash == buf) {
			if (buf[1] == '\0')
				break;
			buf[1] = '\0';
		} else {
			*slash = '\0';
		}
	}
	return 0;
}

int fs_safe_rename_at(int olddfd, const char *oldname, int newdfd, const char *newname,
                      unsigned flags)
{
	return (int)syscall(SYS_renameat2, olddfd, oldname, newdfd, newname, flags);
}
