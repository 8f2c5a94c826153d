/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The directory holding a path's last component below a root descriptor, opened one component
 * at a time with O_NOFOLLOW|O_DIRECTORY, so that no link on the path is ever followed (a
 * directory replaced by a link is ELOOP, one replaced by a file ENOTDIR). The last directory is
 * kept open: the entries of a walk in order mostly share theirs. With create set, a missing
 * component is made (mode 0755, then owned by uid:gid) instead of failing with ENOENT.
 */
#ifndef SA_DIR_CACHE_H
#define SA_DIR_CACHE_H

#include <stdbool.h>
#include <sys/types.h>

#include "err.h"

struct dir_cache {
	int root_fd; /* borrowed */
	bool create;
	uid_t uid; /* of what create makes; (uid_t)-1 and (gid_t)-1 leave it root's */
	gid_t gid;
	int fd;     /* the kept directory, or -1 */
	char *path; /* its path below the root */
};

void dir_cache_init(struct dir_cache *c, int root_fd, bool create, uid_t uid, gid_t gid);
/*
 * *ret_fd (borrowed: the root's or the kept one) and *ret_leaf (within path) for path. On
 * failure err says "creating|opening the directory of PATH: ..." with the errno as its code,
 * and -errno is returned.
 */
int dir_cache_parent(struct dir_cache *c, const char *path, int *ret_fd, const char **ret_leaf,
                     struct err *err);
void dir_cache_dispose(struct dir_cache *c);

#endif
