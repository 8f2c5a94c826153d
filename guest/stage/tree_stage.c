/* SPDX-License-Identifier: Apache-2.0 */
#include "tree_stage.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <linux/magic.h>

#include "cleanup.h"
#include "dir_cache.h"
#include "procstatus.h"
#include "file.h"
#include "log.h"
#include "strv.h"

#if __has_include(<linux/openat2.h>)
#include <linux/openat2.h>
#define HAVE_OPENAT2_H 1
#endif

struct tree_stage {
	struct dir_swap sw;
	int stage_fd;
	uid_t uid;
	gid_t gid;
	mode_t mode;
	struct dir_cache dirs; /* the directory of the last entry below the root */
	int file_fd;           /* the file being written, or -1 */
	uint64_t file_left;
	char *file_path;
	uint64_t entries;
	uint64_t bytes;
	char **links;      /* every symbolic link, checked once the tree is whole */
	mode_t umask;      /* the process's, read when the stage is made */
	bool create_exact; /* a file created with a mode the umask leaves alone gets that mode */
	bool broken;
	bool swapped;
};

int tree_stage_entry_kind_from_string(const char *s)
{
	if (!s)
		return -1;
	if (strcmp(s, "file") == 0)
		return TREE_ENTRY_FILE;
	if (strcmp(s, "dir") == 0)
		return TREE_ENTRY_DIR;
	if (strcmp(s, "symlink") == 0)
		return TREE_ENTRY_SYMLINK;
	return -1;
}

void tree_stage_free(struct tree_stage *s)
{
	if (!s)
		return;
	if (s->file_fd >= 0)
		close(s->file_fd);
	dir_cache_dispose(&s->dirs);
	if (s->stage_fd >= 0)
		close(s->stage_fd);
	if (!s->swapped)
		dir_swap_stage_discard(&s->sw);
	else
		(void)dir_swap_old_discard(&s->sw);
	dir_swap_dispose(&s->sw);
	free(s->file_path);
	strv_free(s->links);
	free(s);
}

/* The process's umask, from /proc/self/status (reading it with umask() would change it). */
static bool umask_read(mode_t *ret)
{
	unsigned long v;

	if (procstatus_field("Umask", 8, &v) < 0)
		return false;
	*ret = (mode_t)v & 0777;
	return true;
}

/*
 * Whether a file created in the stage with a mode the umask leaves alone gets exactly that
 * mode, which saves a fchmod() per file: on the filesystems whose only inherited permissions
 * are POSIX default ACLs, when the stage has none (a default ACL replaces the umask and is
 * inherited by every directory made in it). Elsewhere (NFS, CIFS, FUSE...) each file is still
 * set with fchmod().
 */
static bool create_is_exact(int stage_fd, mode_t *ret_umask)
{
	static const unsigned long known[] = {TMPFS_MAGIC, EXT4_SUPER_MAGIC, XFS_SUPER_MAGIC,
	                                      BTRFS_SUPER_MAGIC, OVERLAYFS_SUPER_MAGIC};
	struct statfs sf;
	bool fs_ok = false;

	if (!umask_read(ret_umask) || fstatfs(stage_fd, &sf) < 0)
		return false;
	for (size_t i = 0; i < ELEMENTSOF(known); i++)
		fs_ok = fs_ok || (unsigned long)sf.f_type == known[i];
	return fs_ok && fgetxattr(stage_fd, "system.posix_acl_default", NULL, 0) < 0 &&
	       (errno == ENODATA || errno == EOPNOTSUPP);
}

int tree_stage_begin(const struct tree_stage_target *t, struct tree_stage **ret, struct err *err)
{
	_cleanup_(tree_stage_freep) struct tree_stage *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return err_oom(err);
	s->stage_fd = -1;
	dir_cache_init(&s->dirs, -1, true, t->uid, t->gid);
	s->file_fd = -1;
	s->sw.parent_fd = -1;
	s->uid = t->uid;
	s->gid = t->gid;
	r = dir_swap_init(&s->sw, t->app_dir, t->flags, t->hook, t->hook_userdata, err);
	if (r < 0)
		return r;
	/* Root's alone while it is built; handed over once complete. */
	r = dir_swap_stage_create(&s->sw, t->mode, 0777, &s->mode, &s->stage_fd, err);
	if (r < 0)
		return r;
	s->dirs.root_fd = s->stage_fd;
	s->create_exact = create_is_exact(s->stage_fd, &s->umask);
	*ret = TAKE_PTR(s);
	return 0;
}

static int refuse(struct tree_stage *s, struct err *err, int code, const char *path,
                  const char *why)
{
	s->broken = true;
	return err_set(err, ERR_REFUSED, code, "tree entry \"%.200s\": %s", path, why);
}

/* Check the spelling of a path: relative, '/'-separated, no "", "." or ".." component. */
static int path_check(struct tree_stage *s, const char *path, size_t *ret_depth, struct err *err)
{
	size_t depth = 0, len = strlen(path);
	const char *p = path;

	if (len == 0)
		return refuse(s, err, EINVAL, path, "the path is empty");
	if (len >= TREE_STAGE_PATH_MAX)
		return refuse(s, err, ENAMETOOLONG, path, "the path is too long");
	if (path[0] == '/')
		return refuse(s, err, EINVAL, path, "absolute paths are refused");
	for (;;) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);

		if (n == 0)
			return refuse(s, err, EINVAL, path, "empty path component");
		if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return refuse(s, err, EINVAL, path, "\".\" and \"..\" are refused");
		if (n > 255)
			return refuse(s, err, ENAMETOOLONG, path, "a component is too long");
		if (++depth > TREE_STAGE_DEPTH_MAX)
			return refuse(s, err, ELOOP, path, "the path is nested too deep");
		if (!slash)
			break;
		p = slash + 1;
	}
	*ret_depth = depth;
	return 0;
}

bool tree_stage_target_inside(const char *path, const char *target)
{
	long depth = 0;
	const char *p;

	if (!target || !target[0] || target[0] == '/')
		return false;
	/* The link's directory: one level per component of path but the last. */
	for (p = path; (p = strchr(p, '/')); p++)
		depth++;
	for (p = target;;) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);

		if (n == 2 && p[0] == '.' && p[1] == '.') {
			if (--depth < 0)
				return false;
		} else if (n > 0 && !(n == 1 && p[0] == '.')) {
			depth++;
		}
		if (!slash)
			break;
		p = slash + 1;
	}
	return true;
}

/*
 * Open the directory holding path's last component, creating missing directories (0755, the
 * run user's) on the way; never through a link. *ret_leaf points into path.
 */
/*
 * The directory holding path's last component (dir_cache.h), borrowed. A directory kept open
 * cannot be swapped for a link meanwhile, since the stage is root's alone while it is built
 * and entries are only added; missing ones are made, the run user's.
 */
static int open_parent(struct tree_stage *s, const char *path, int *ret_fd, const char **ret_leaf,
                       struct err *err)
{
	int r = dir_cache_parent(&s->dirs, path, ret_fd, ret_leaf, err);

	if (r == -ENOTDIR || r == -ELOOP)
		return refuse(s, err, -r, path, "a parent is a symbolic link or a file");
	return r;
}

/* A push refused before, or swapped in already, takes nothing more. */
static int still_open(const struct tree_stage *s, struct err *err)
{
	if (s->broken || s->swapped)
		return err_set(err, ERR_REFUSED, EINVAL, "the tree push was already refused");
	return 0;
}

static int file_end(struct tree_stage *s, struct err *err)
{
	if (s->file_fd < 0)
		return 0;
	if (s->file_left > 0) {
		s->broken = true;
		return err_set(err, ERR_REFUSED, EPROTO,
		               "tree entry \"%.200s\": %llu bytes of its data are missing",
		               s->file_path, (unsigned long long)s->file_left);
	}
	if (close(s->file_fd) < 0) {
		s->file_fd = -1;
		return err_errno(err, "writing %s", s->file_path);
	}
	s->file_fd = -1;
	return 0;
}

int tree_stage_entry(struct tree_stage *s, const char *path, enum tree_entry_kind kind,
                     unsigned mode, uint64_t size, const char *target, struct err *err)
{
	const char *leaf = NULL;
	int dfd = -1;
	size_t depth;
	struct stat st;
	int r;

	r = still_open(s, err);
	if (r == 0)
		r = file_end(s, err);
	if (r < 0)
		return r;
	if (s->entries >= TREE_STAGE_ENTRIES_MAX)
		return refuse(s, err, E2BIG, path, "too many entries");
	r = path_check(s, path, &depth, err);
	if (r < 0)
		return r;
	if (mode & ~0777u)
		return refuse(s, err, EPERM, path,
		              "only permission bits may be set (no setuid, setgid or sticky bit)");
	if (kind == TREE_ENTRY_SYMLINK) {
		if (!target || !target[0] || strlen(target) >= TREE_STAGE_PATH_MAX)
			return refuse(s, err, EINVAL, path, "a symbolic link needs a target");
		if (!tree_stage_target_inside(path, target))
			return refuse(s, err, EXDEV, path,
			              "the symbolic link's target leads out of the tree");
	}
	r = open_parent(s, path, &dfd, &leaf, err);
	if (r < 0)
		return r;
	switch (kind) {
	case TREE_ENTRY_DIR:
		if (mkdirat(dfd, leaf, 0700) < 0) {
			if (errno != EEXIST)
				return err_errno(err, "creating %s", path);
			if (fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
			    !S_ISDIR(st.st_mode))
				return refuse(s, err, EEXIST, path, "a second entry of that path");
		}
		if (fchownat(dfd, leaf, s->uid, s->gid, AT_SYMLINK_NOFOLLOW) < 0 ||
		    fchmodat(dfd, leaf, mode, 0) < 0)
			return err_errno(err, "setting the owner and mode of %s", path);
		break;
	case TREE_ENTRY_SYMLINK:
		if (symlinkat(target, dfd, leaf) < 0) {
			if (errno == EEXIST)
				return refuse(s, err, EEXIST, path, "a second entry of that path");
			return err_errno(err, "creating the symbolic link %s", path);
		}
		if (fchownat(dfd, leaf, s->uid, s->gid, AT_SYMLINK_NOFOLLOW) < 0)
			return err_errno(err, "setting the owner of %s", path);
		if (strv_push(&s->links, path) < 0)
			return err_oom(err);
		break;
	case TREE_ENTRY_FILE: {
		/* Inside the stage, which only root may enter, the final mode can come at once. */
		bool exact = s->create_exact && (mode & s->umask) == 0;
		s->file_fd = openat(dfd, leaf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		                    exact ? mode : 0600);
		if (s->file_fd < 0) {
			if (errno == EEXIST)
				return refuse(s, err, EEXIST, path, "a second entry of that path");
			return err_errno(err, "creating %s", path);
		}
		if (fchown(s->file_fd, s->uid, s->gid) < 0 ||
		    (!exact && fchmod(s->file_fd, mode) < 0))
			return err_errno(err, "setting the owner and mode of %s", path);
		free(s->file_path);
		s->file_path = strdup(path);
		if (!s->file_path)
			return err_oom(err);
		s->file_left = size;
		s->bytes += size;
		break;
	}
	default:
		return refuse(s, err, EINVAL, path, "the kind must be file, dir or symlink");
	}
	s->entries++;
	return 0;
}

int tree_stage_data(struct tree_stage *s, const void *buf, size_t len, struct err *err)
{
	int r = still_open(s, err);

	if (r < 0)
		return r;
	if (len == 0)
		return 0;
	if (s->file_fd < 0 || len > s->file_left) {
		s->broken = true;
		return err_set(err, ERR_REFUSED, EPROTO, "tree data beyond the size of %s%.200s%s",
		               s->file_path ? "\"" : "", s->file_path ? s->file_path : "any file",
		               s->file_path ? "\"" : "");
	}
	if (file_write_all(s->file_fd, buf, len) < 0)
		return err_errno(err, "writing %s", s->file_path);
	s->file_left -= len;
	return 0;
}

bool tree_stage_old_remove(struct tree_stage *s)
{
	return s->swapped && dir_swap_old_remove(&s->sw);
}

static int openat2_beneath(int dfd, const char *path)
{
#if defined(HAVE_OPENAT2_H) && defined(SYS_openat2)
	struct open_how how = {
	    .flags = O_PATH | O_CLOEXEC,
	    .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};

	return (int)syscall(SYS_openat2, dfd, path, &how, sizeof(how));
#else
	errno = ENOSYS;
	return -1;
#endif
}

/* Every link resolved by the kernel, within the stage: none may lead out of it. */
static int links_check(struct tree_stage *s, struct err *err)
{
	for (size_t i = 0; s->links && s->links[i]; i++) {
		int fd = openat2_beneath(s->stage_fd, s->links[i]);

		if (fd >= 0) {
			close(fd);
			continue;
		}
		if (errno == ENOSYS) {
			log_debug("no openat2(): links checked by their spelling only");
			return 0;
		}
		if (errno == EXDEV)
			return refuse(
			    s, err, EXDEV, s->links[i],
			    "the symbolic link leads out of the tree (through another link)");
		/* Dangling links, loops: they lead nowhere, certainly not out. */
	}
	return 0;
}

int tree_stage_finish(struct tree_stage *s, uint64_t entries, uint64_t bytes,
                      struct tree_stage_result *ret, struct err *err)
{
	struct tree_stage_result res = {0};
	int r;

	r = still_open(s, err);
	if (r == 0)
		r = file_end(s, err);
	if (r < 0)
		return r;
	if (entries != s->entries || bytes != s->bytes) {
		s->broken = true;
		return err_set(err, ERR_REFUSED, EPROTO,
		               "the tree push ended with %llu entries and %llu bytes, but %llu "
		               "entries and %llu bytes were announced",
		               (unsigned long long)s->entries, (unsigned long long)s->bytes,
		               (unsigned long long)entries, (unsigned long long)bytes);
	}
	r = links_check(s, err);
	if (r < 0)
		return r;
	if (fchown(s->stage_fd, s->uid, s->gid) < 0 || fchmod(s->stage_fd, s->mode) < 0)
		return err_errno(err, "giving %s to the run user", s->sw.new_path);
	if (syncfs(s->stage_fd) < 0)
		return err_errno(err, "flushing %s to disk", s->sw.new_path);
	r = dir_swap_exchange(&s->sw, &res.method, err);
	if (r < 0)
		return r;
	s->swapped = true;
	res.entries = s->entries;
	res.bytes = s->bytes;
	if (ret)
		*ret = res;
	return 0;
}
