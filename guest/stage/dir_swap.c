/* SPDX-License-Identifier: Apache-2.0 */
#include "dir_swap.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dir_discard.h"
#include "fs_safe.h"
#include "log.h"

static void call_hook(struct dir_swap *s, const char *point)
{
	log_debug("swap of %s: %s", s->dir, point);
	if (s->hook)
		s->hook(s->hook_userdata, point);
}

static bool exists_at(int dfd, const char *name)
{
	struct stat st;

	return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/*
 * name beside the directory, through a box (dir_discard.h). An error only when it could neither
 * move into one nor be removed; the removal is tried once more then, for the error's reason.
 */
static int discard_beside(struct dir_swap *s, const char *name, const char *what, struct err *err)
{
	if (!dir_discard_start(s->parent_fd, s->base, name, s->flags & DIR_SWAP_NO_THREADS, NULL,
	                       NULL) ||
	    !exists_at(s->parent_fd, name))
		return 0;
	if (fs_safe_tree_remove_at(s->parent_fd, name, err) < 0)
		return err_wrap(err, "removing %s %s beside %s", what, name, s->dir);
	return 0;
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

int dir_swap_init(struct dir_swap *s, const char *dir, unsigned flags, dir_swap_hook_fn hook,
                  void *hook_userdata, struct err *err)
{
	char *slash;
	size_t n;

	memset(s, 0, sizeof(*s));
	s->parent_fd = -1;
	s->flags = flags;
	s->hook = hook;
	s->hook_userdata = hook_userdata;
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
	/* The longest name beside it: a box set aside (".app.checkout-trash.<16 hex>.left"). */
	if (1 + strlen(slash + 1) + strlen(DIR_DISCARD_INFIX) + DIR_DISCARD_ID_LEN +
	        strlen(DIR_DISCARD_LEFT_SUFFIX) >
	    NAME_MAX)
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
	return err_oom(err);
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
		if (fs_safe_rename_at(s->parent_fd, s->new_name, s->parent_fd, s->base,
		                      RENAME_NOREPLACE) < 0)
			return err_errno(err, "finishing the interrupted swap of %s", s->dir);
		action = DIR_SWAP_RECOVER_FINISHED;
		have_new = false;
	} else if (!have_dir && have_old) {
		if (fs_safe_rename_at(s->parent_fd, s->old_name, s->parent_fd, s->base,
		                      RENAME_NOREPLACE) < 0)
			return err_errno(err, "restoring %s after an interrupted swap", s->dir);
		action = DIR_SWAP_RECOVER_RESTORED;
		have_old = false;
	}
	if (have_new || have_old) {
		/*
		 * Into a box, as after a swap (an unfinished tree may be the app's old one, left
		 * under the stage's name by an exchange): only one that can neither move nor be
		 * removed fails, named with why.
		 */
		r = have_new ? discard_beside(s, s->new_name, "the unfinished tree", err) : 0;
		if (r >= 0 && have_old)
			r = discard_beside(s, s->old_name, "the old tree", err);
		if (r < 0)
			return r;
		if (action == DIR_SWAP_RECOVER_NONE)
			action = DIR_SWAP_RECOVER_CLEANED;
	}
	if (action != DIR_SWAP_RECOVER_NONE) {
		r = fsync_parent(s, err);
		if (r < 0)
			return r;
		log_debug("recovered %s: %d", s->dir, (int)action);
	}
	if (!(s->flags & DIR_SWAP_NO_THREADS))
		dir_discard_sweep(s->parent_fd, s->base, s->dir);
	if (ret)
		*ret = action;
	return 0;
}

int dir_swap_stage_create(struct dir_swap *s, mode_t want, mode_t mode_bits, mode_t *ret_mode,
                          int *ret_stage_fd, struct err *err)
{
	mode_t mode = want & mode_bits;
	struct stat st;
	int r, fd;

	r = dir_swap_recover(s, NULL, err);
	if (r < 0)
		return r;
	if (fstatat(s->parent_fd, s->base, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (!S_ISDIR(st.st_mode))
			return err_set(
			    err, ERR_REFUSED, ENOTDIR,
			    "%s is not a directory (a symbolic link?): refusing to replace it",
			    s->dir);
		if (!mode)
			mode = st.st_mode & mode_bits;
	}
	if (mkdirat(s->parent_fd, s->new_name, 0700) < 0)
		return err_errno(err, "creating the stage %s", s->new_path);
	fd = openat(s->parent_fd, s->new_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return err_errno(err, "opening the stage %s", s->new_path);
	*ret_mode = mode ? mode : 0755;
	*ret_stage_fd = fd;
	return 0;
}

void dir_swap_stage_discard(struct dir_swap *s)
{
	if (s->parent_fd >= 0 && s->new_name && dir_discard_now(s->parent_fd, s->new_name))
		log_debug("the stage %s is left for the next recovery", s->new_path);
}

static int swap_renames(struct dir_swap *s, struct err *err)
{
	int r;

	if (fs_safe_rename_at(s->parent_fd, s->base, s->parent_fd, s->old_name, RENAME_NOREPLACE) <
	    0)
		return err_errno(err, "moving %s aside", s->dir);
	/* The window: the directory is missing until the next rename. */
	r = fsync_parent(s, err);
	if (r < 0)
		goto undo;
	call_hook(s, "renamed-old");
	if (fs_safe_rename_at(s->parent_fd, s->new_name, s->parent_fd, s->base, RENAME_NOREPLACE) <
	    0) {
		r = err_errno(err, "moving the new tree into %s", s->dir);
		goto undo;
	}
	return 0;
undo:
	if (fs_safe_rename_at(s->parent_fd, s->old_name, s->parent_fd, s->base, RENAME_NOREPLACE) <
	    0)
		log_debug("putting %s back: %m", s->dir);
	return r;
}

int dir_swap_exchange(struct dir_swap *s, int *ret_method, struct err *err)
{
	struct stat st;
	int method, r;

	call_hook(s, "before-swap");
	if (fstatat(s->parent_fd, s->base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno != ENOENT)
			return err_errno(err, "examining %s", s->dir);
		if (fs_safe_rename_at(s->parent_fd, s->new_name, s->parent_fd, s->base,
		                      RENAME_NOREPLACE) < 0)
			return err_errno(err, "moving the new tree into %s", s->dir);
		method = DIR_SWAP_FIRST;
	} else if (!S_ISDIR(st.st_mode)) {
		return err_set(err, ERR_REFUSED, ENOTDIR,
		               "%s is not a directory (a symbolic link?): refusing to replace it",
		               s->dir);
	} else if (!(s->flags & DIR_SWAP_NO_EXCHANGE) &&
	           fs_safe_rename_at(s->parent_fd, s->new_name, s->parent_fd, s->base,
	                             RENAME_EXCHANGE) == 0) {
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
	call_hook(s, "after-swap");

	/* After an exchange the stage's name holds the old tree: give it the old tree's name. */
	s->old_tree = method == DIR_SWAP_FIRST ? NULL : s->old_name;
	if (method == DIR_SWAP_EXCHANGE &&
	    fs_safe_rename_at(s->parent_fd, s->new_name, s->parent_fd, s->old_name,
	                      RENAME_NOREPLACE) < 0) {
		log_debug("renaming the old tree of %s: %m", s->dir);
		s->old_tree = s->new_name;
	}
	*ret_method = method;
	return 0;
}

/* The old tree into a box, removed on a thread or, with wait, before this returns. */
static bool old_tree_discard(struct dir_swap *s, bool wait)
{
	const char *name = s->old_tree;

	if (!name)
		return false;
	s->old_tree = NULL;
	return dir_discard_start(s->parent_fd, s->base, name, wait, wait ? NULL : s->hook,
	                         s->hook_userdata);
}

bool dir_swap_old_remove(struct dir_swap *s)
{
	return old_tree_discard(s, true);
}

bool dir_swap_old_discard(struct dir_swap *s)
{
	return old_tree_discard(s, s->flags & DIR_SWAP_NO_THREADS);
}
