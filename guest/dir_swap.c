/* SPDX-License-Identifier: Apache-2.0 */
#include "dir_swap.h"

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

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

/* renameat2(2) through the system call: musl has no wrapper. */
static int rename2(int olddfd, const char *oldname, int newdfd, const char *newname, unsigned flags)
{
	return (int)syscall(SYS_renameat2, olddfd, oldname, newdfd, newname, flags);
}

static void hook(struct dir_swap *s, const char *point)
{
	log_debug("swap of %s: %s", s->dir, point);
	if (s->hook)
		s->hook(s->hook_userdata, point);
}

/*
 * Every directory is opened with O_NOFOLLOW relative to its parent's descriptor, so a link
 * swapped in by the tree's owner is unlinked, never entered. Does not cross into another
 * filesystem (EXDEV) and gives up below DIR_SWAP_DEPTH_MAX levels (ELOOP). A missing name is fine.
 */
static int remove_tree_at(int dfd, const char *name, dev_t dev, int depth)
{
	_cleanup_close_ int fd = -1;
	DIR *d;
	struct dirent *de;
	struct stat st;
	int r = 0;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(dfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
	if (st.st_dev != dev)
		return -EXDEV;
	if (depth >= DIR_SWAP_DEPTH_MAX)
		return -ELOOP;
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOTDIR || errno == ELOOP) /* replaced meanwhile */
			return unlinkat(dfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
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
		k = remove_tree_at(dirfd(d), de->d_name, dev, depth + 1);
		if (k < 0 && r == 0)
			r = k;
	}
	closedir(d);
	if (r < 0)
		return r;
	if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

int dir_swap_remove_tree(int dfd, const char *name)
{
	struct stat st;

	if (fstat(dfd, &st) < 0)
		return -errno;
	return remove_tree_at(dfd, name, st.st_dev, 0);
}

static int chown_tree_at(int fd, uid_t uid, gid_t gid, int depth)
{
	DIR *d;
	struct dirent *de;
	int r = 0;

	if (depth >= DIR_SWAP_DEPTH_MAX) {
		close(fd);
		return -ELOOP;
	}
	d = fdopendir(fd);
	if (!d) {
		r = -errno;
		close(fd);
		return r;
	}
	while ((de = readdir(d)) && r == 0) {
		struct stat st;
		int sub;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (fchownat(dirfd(d), de->d_name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0 ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = -errno;
			break;
		}
		if (!S_ISDIR(st.st_mode))
			continue;
		sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0) {
			r = -errno;
			break;
		}
		r = chown_tree_at(sub, uid, gid, depth + 1);
	}
	closedir(d);
	return r;
}

int dir_swap_chown_tree(int fd, uid_t uid, gid_t gid)
{
	return chown_tree_at(fd, uid, gid, 0);
}

void dir_swap_dispose(struct dir_swap *s)
{
	if (s->parent_fd >= 0)
		close(s->parent_fd);
	free(s->dir);
	free(s->parent);
	free(s->base);
	free(s->new_name);
	free(s->old_name);
	free(s->new_path);
	memset(s, 0, sizeof(*s));
	s->parent_fd = -1;
}

int dir_swap_init(struct dir_swap *s, const char *dir, unsigned flags, struct err *err)
{
	char *slash;
	size_t n;

	memset(s, 0, sizeof(*s));
	s->parent_fd = -1;
	s->flags = flags;
	if (!dir || dir[0] != '/')
		return err_set(err, ERR_REFUSED, EINVAL,
		               "the app directory must be an absolute path");
	s->dir = strdup(dir);
	if (!s->dir)
		goto out_oom;
	n = strlen(s->dir);
	while (n > 1 && s->dir[n - 1] == '/')
		s->dir[--n] = '\0';
	slash = strrchr(s->dir, '/');
	if (!slash[1] || strcmp(slash + 1, ".") == 0 || strcmp(slash + 1, "..") == 0)
		return err_set(err, ERR_REFUSED, EINVAL, "%s cannot be an app directory", dir);
	if (strlen(slash + 1) + strlen(DIR_SWAP_NEW_SUFFIX) + 1 > NAME_MAX)
		return err_set(err, ERR_REFUSED, ENAMETOOLONG, "the name of %s is too long", dir);
	s->parent = slash == s->dir ? strdup("/") : strndup(s->dir, (size_t)(slash - s->dir));
	s->base = strdup(slash + 1);
	if (!s->parent || !s->base)
		goto out_oom;
	if (asprintf(&s->new_name, ".%s" DIR_SWAP_NEW_SUFFIX, s->base) < 0) {
		s->new_name = NULL;
		goto out_oom;
	}
	if (asprintf(&s->old_name, ".%s" DIR_SWAP_OLD_SUFFIX, s->base) < 0) {
		s->old_name = NULL;
		goto out_oom;
	}
	if (asprintf(&s->new_path, "%s%s%s", s->parent, strcmp(s->parent, "/") ? "/" : "",
	             s->new_name) < 0) {
		s->new_path = NULL;
		goto out_oom;
	}
	s->parent_fd = open(s->parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->parent_fd < 0)
		return err_errno(err, "opening %s, the app directory's parent", s->parent);
	return 0;
out_oom:
	return err_set(err, ERR_FAILED, ENOMEM, "out of memory");
}

static bool exists_at(int dfd, const char *name)
{
	struct stat st;

	return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static int fsync_parent(struct dir_swap *s, struct err *err)
{
	if (fsync(s->parent_fd) < 0)
		return err_errno(err, "flushing %s to disk", s->parent);
	return 0;
}

int dir_swap_recover(struct dir_swap *s, enum dir_swap_recovery *ret, struct err *err)
{
	bool have_dir = exists_at(s->parent_fd, s->base);
	bool have_new = exists_at(s->parent_fd, s->new_name);
	bool have_old = exists_at(s->parent_fd, s->old_name);
	enum dir_swap_recovery action = DIR_SWAP_RECOVER_NONE;
	int r;

	if (!have_dir && have_new && have_old) {
		/* Between the two renames of a swap: the stage was complete (it was flushed
		 * before the directory moved). Finish the swap. */
		if (rename2(s->parent_fd, s->new_name, s->parent_fd, s->base, RENAME_NOREPLACE) < 0)
			return err_errno(err, "finishing the interrupted swap of %s", s->dir);
		action = DIR_SWAP_RECOVER_FINISHED;
		have_new = false;
	} else if (!have_dir && have_old) {
		if (rename2(s->parent_fd, s->old_name, s->parent_fd, s->base, RENAME_NOREPLACE) < 0)
			return err_errno(err, "restoring %s after an interrupted swap", s->dir);
		action = DIR_SWAP_RECOVER_RESTORED;
		have_old = false;
	}
	if (have_new) {
		r = dir_swap_remove_tree(s->parent_fd, s->new_name);
		if (r < 0) {
			errno = -r;
			return err_errno(err, "removing the unfinished tree %s beside %s",
			                 s->new_name, s->dir);
		}
		if (action == DIR_SWAP_RECOVER_NONE)
			action = DIR_SWAP_RECOVER_CLEANED;
	}
	if (have_old) {
		r = dir_swap_remove_tree(s->parent_fd, s->old_name);
		if (r < 0) {
			errno = -r;
			return err_errno(err, "removing the old tree %s beside %s", s->old_name,
			                 s->dir);
		}
		if (action == DIR_SWAP_RECOVER_NONE)
			action = DIR_SWAP_RECOVER_CLEANED;
	}
	if (action != DIR_SWAP_RECOVER_NONE) {
		r = fsync_parent(s, err);
		if (r < 0)
			return r;
		log_debug("recovered %s: %d", s->dir, (int)action);
	}
	if (ret)
		*ret = action;
	return 0;
}

static int swap_renames(struct dir_swap *s, struct err *err)
{
	int r;

	if (rename2(s->parent_fd, s->base, s->parent_fd, s->old_name, RENAME_NOREPLACE) < 0)
		return err_errno(err, "moving %s aside", s->dir);
	/* The window: the directory is missing until the next rename. */
	r = fsync_parent(s, err);
	if (r < 0)
		goto undo;
	hook(s, "renamed-old");
	if (rename2(s->parent_fd, s->new_name, s->parent_fd, s->base, RENAME_NOREPLACE) < 0) {
		r = err_errno(err, "moving the new tree into %s", s->dir);
		goto undo;
	}
	return 0;
undo:
	if (rename2(s->parent_fd, s->old_name, s->parent_fd, s->base, RENAME_NOREPLACE) < 0)
		log_debug("putting %s back: %m", s->dir);
	return r;
}

int dir_swap_exchange(struct dir_swap *s, int *ret_method, bool *ret_old_left, struct err *err)
{
	struct stat st;
	bool old_left = false;
	int method, r;

	hook(s, "before-swap");
	if (fstatat(s->parent_fd, s->base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno != ENOENT)
			return err_errno(err, "examining %s", s->dir);
		if (rename2(s->parent_fd, s->new_name, s->parent_fd, s->base, RENAME_NOREPLACE) < 0)
			return err_errno(err, "moving the new tree into %s", s->dir);
		method = DIR_SWAP_FIRST;
	} else if (!S_ISDIR(st.st_mode)) {
		return err_set(err, ERR_REFUSED, ENOTDIR,
		               "%s is not a directory (a symbolic link?): refusing to replace it",
		               s->dir);
	} else if (!(s->flags & DIR_SWAP_NO_EXCHANGE) &&
	           rename2(s->parent_fd, s->new_name, s->parent_fd, s->base, RENAME_EXCHANGE) ==
	               0) {
		method = DIR_SWAP_EXCHANGE;
	} else {
		if (!(s->flags & DIR_SWAP_NO_EXCHANGE) && errno != EINVAL && errno != ENOSYS &&
		    errno != EOPNOTSUPP)
			return err_errno(err, "swapping the new tree with %s", s->dir);
		r = swap_renames(s, err);
		if (r < 0)
			return r;
		method = DIR_SWAP_RENAMES;
	}
	/* The swap is done whatever fsync says; a failure only weakens it against power loss. */
	if (fsync(s->parent_fd) < 0)
		log_debug("flushing the parent of %s: %m", s->dir);
	hook(s, "after-swap");

	/* After an exchange the stage's name holds the old tree: give it the old tree's name. */
	if (method == DIR_SWAP_EXCHANGE &&
	    rename2(s->parent_fd, s->new_name, s->parent_fd, s->old_name, RENAME_NOREPLACE) < 0) {
		log_debug("renaming the old tree of %s: %m", s->dir);
		if (dir_swap_remove_tree(s->parent_fd, s->new_name) < 0)
			old_left = true;
	}
	if (method != DIR_SWAP_FIRST) {
		r = dir_swap_remove_tree(s->parent_fd, s->old_name);
		if (r < 0) {
			log_debug("removing the old tree %s beside %s: %s", s->old_name, s->dir,
			          strerror(-r));
			old_left = true;
		}
	}
	if (ret_method)
		*ret_method = method;
	if (ret_old_left)
		*ret_old_left = old_left;
	return 0;
}
