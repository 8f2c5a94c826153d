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
#include <unistd.h>

#define FS_MAX_DEPTH 512

static int open_dir_at(int dirfd, const char *name)
{
	return openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

int fs_dir_ensure(const char *path, uid_t uid, gid_t gid, mode_t mode, struct err *err)
{
	_cleanup_free_ char *copy = NULL;
	_cleanup_close_ int fd = -1;
	char *save = NULL, *comp;

	if (!path || path[0] != '/')
		return err_set(err, ERR_REFUSED, EINVAL, "not an absolute path: %s",
		               path ? path : "(null)");
	copy = strdup(path);
	if (!copy)
		return err_set(err, ERR_FAILED, ENOMEM, "out of memory");
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
		if (S_ISREG(st.st_mode) && st.st_nlink > 1 && st.st_uid != w->uid)
			continue;
		if ((st.st_uid != w->uid || st.st_gid != w->gid) &&
		    fchownat(dirfd(d), de->d_name, w->uid, w->gid, AT_SYMLINK_NOFOLLOW) < 0 &&
		    errno != ENOENT) {
			r = err_errno(w->err, "cannot give %s below %s to uid %u", de->d_name,
			              w->root, (unsigned)w->uid);
			break;
		}
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

int fs_tree_chown(const char *root, uid_t uid, gid_t gid, struct err *err)
{
	struct chown_walk w = {.uid = uid, .gid = gid, .root = root, .err = err};
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return err_errno(err, "cannot open %s", root);
	if (fchown(fd, uid, gid) < 0) {
		close(fd);
		return err_errno(err, "cannot give %s to uid %u", root, (unsigned)uid);
	}
	return chown_below(&w, fd, 0);
}

static int remove_below(int fd, dev_t dev, const char *top, unsigned depth, struct err *err)
{
	DIR *d;
	struct dirent *de;
	int r = 0;

	if (depth > FS_MAX_DEPTH) {
		close(fd);
		return err_set(err, ERR_FAILED, ELOOP, "%s is nested too deep", top);
	}
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return err_errno(err, "cannot read a directory below %s", top);
	}
	while ((de = readdir(d))) {
		struct stat st;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			int sub;
			if (st.st_dev != dev)
				continue; /* a mount point: never cross it */
			sub = open_dir_at(dirfd(d), de->d_name);
			if (sub >= 0 && remove_below(sub, dev, top, depth + 1, err) < 0)
				r = -1;
			if (unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR) < 0 && errno != ENOENT)
				r = err_errno(err, "cannot remove %s below %s", de->d_name, top);
		} else if (unlinkat(dirfd(d), de->d_name, 0) < 0 && errno != ENOENT) {
			r = err_errno(err, "cannot remove %s below %s", de->d_name, top);
		}
	}
	closedir(d);
	return r;
}

int fs_tree_remove(const char *path, struct err *err)
{
	struct stat st;
	int fd;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : err_errno(err, "cannot stat %s", path);
	if (!S_ISDIR(st.st_mode))
		return unlink(path) < 0 && errno != ENOENT
		           ? err_errno(err, "cannot remove %s", path)
		           : 0;
	fd = open_dir_at(AT_FDCWD, path);
	if (fd < 0)
		return err_errno(err, "cannot open %s", path);
	if (remove_below(fd, st.st_dev, path, 0, err) < 0)
		return -1;
	if (rmdir(path) < 0 && errno != ENOENT)
		return err_errno(err, "cannot remove %s", path);
	return 0;
}

int fs_dir_check_root_owned(const char *path, struct err *err)
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
