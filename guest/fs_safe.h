/* SPDX-License-Identifier: Apache-2.0 */
/*
 * File-system work the engine does as root in trees the app (running as another user) can
 * change under it: every step goes through a directory descriptor and *at() calls with
 * O_NOFOLLOW / AT_SYMLINK_NOFOLLOW, so a symbolic link or a directory swapped for one mid-walk
 * never leads a root chown, mkdir or unlink outside the tree.
 */
#ifndef SA_FS_SAFE_H
#define SA_FS_SAFE_H

#include <sys/types.h>

#include "err.h"

/*
 * Create the absolute directory path (and missing parents, mode 0755 root's) without following
 * links in any component; give the last one to uid:gid with mode (uid -1: leave the owner).
 */
int fs_dir_ensure(const char *path, uid_t uid, gid_t gid, mode_t mode, struct err *err);

/*
 * Give every entry below root (and root) to uid:gid, never following links; a regular file
 * with more than one hard link that uid does not already own is left alone (it may be a
 * link to a file outside the tree).
 */
int fs_tree_chown(const char *root, uid_t uid, gid_t gid, struct err *err);

/* Remove path and everything below it, never following links or crossing mounts. */
int fs_tree_remove(const char *path, struct err *err);

/*
 * The directory path must be owned by root and writable by nobody else, as must every
 * parent: what the engine writes there as root cannot be redirected by the app.
 */
int fs_dir_check_root_owned(const char *path, struct err *err);

#endif
