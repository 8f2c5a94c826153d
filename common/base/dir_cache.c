/* SPDX-License-Identifier: Apache-2.0 */
#include "dir_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"

void dir_cache_init(struct dir_cache *c, int root_fd, bool create, uid_t uid, gid_t gid)
{
	*c = (struct dir_cache){
	    .root_fd = root_fd, .create = create, .uid = uid, .gid = gid, .fd = -1};
}

void dir_cache_dispose(struct dir_cache *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	free(c->path);
	c->path = NULL;
}

/* One component below fd, made first when it is missing and the cache creates. */
static int open_component(const struct dir_cache *c, int fd, const char *comp, bool *made)
{
	int sub = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (sub < 0 && errno == ENOENT && c->create) {
		*made = true;
		if (mkdirat(fd, comp, 0755) < 0 ||
		    fchownat(fd, comp, c->uid, c->gid, AT_SYMLINK_NOFOLLOW) < 0)
			return -1;
		*made = false;
		sub = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	return sub;
}

int dir_cache_parent(struct dir_cache *c, const char *path, int *ret_fd, const char **ret_leaf,
                     struct err *err)
{
	const char *slash = strrchr(path, '/');
	size_t len = slash ? (size_t)(slash - path) : 0;
	_cleanup_free_ char *parent = NULL;
	_cleanup_close_ int fd = -1;
	bool made = false;

	if (!slash) {
		*ret_fd = c->root_fd;
		*ret_leaf = path;
		return 0;
	}
	*ret_leaf = slash + 1;
	if (c->path && strlen(c->path) == len && memcmp(c->path, path, len) == 0) {
		*ret_fd = c->fd;
		return 0;
	}
	if (!(parent = strndup(path, len)))
		return err_oom(err);
	fd = fcntl(c->root_fd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return err_errno(err, "opening the directory of %s", path);
	for (char *comp = parent, *next; comp; comp = next) {
		int sub;

		if ((next = strchr(comp, '/')))
			*next++ = '\0';
		sub = open_component(c, fd, comp, &made);
		if (sub < 0)
			return err_errno(err, "%s the directory of %s",
			                 made ? "creating" : "opening", path);
		close(fd);
		fd = sub;
	}
	dir_cache_dispose(c);
	/* The components were cut in place: the parent's path is whole again. */
	memcpy(parent, path, len);
	c->path = TAKE_PTR(parent);
	c->fd = TAKE_FD(fd);
	*ret_fd = c->fd;
	return 0;
}
