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

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

/* renameat2(2) through the system call (musl has no wrapper): 0, or -1 with errno. */
int fs_safe_rename_at(int olddfd, const char *oldname, int newdfd, const char *newname,
                      unsigned flags);

/*
 * Create the absolute directory path (and missing parents, mode 0755 root's) without following
 * links in any component; give the last one to uid:gid with mode (uid -1: leave the owner).
 */
int fs_safe_dir_ensure(const char *path, uid_t uid, gid_t gid, mode_t mode, struct err *err);

/*
 * Give every entry below root (and root) to uid:gid, never following links; a regular file
 * with more than one hard link that uid does not already own is left alone (it may be a
 * link to a file outside the tree). uid or gid -1 leaves that part as it is.
 */
int fs_safe_tree_chown(const char *root, uid_t uid, gid_t gid, struct err *err);
/* The same for the open directory fd (which stays the caller's); what names it in errors. */
int fs_safe_tree_chown_fd(int fd, uid_t uid, gid_t gid, const char *what, struct err *err);

/*
 * Remove name below the directory dfd and everything in it. Every directory is opened with
 * O_NOFOLLOW relative to its parent's descriptor, so a link swapped in by the tree's owner is
 * unlinked, never entered; read-only directories are made writable before they are emptied; a
 * directory on another filesystem than dfd's is refused (EXDEV), as is nesting deeper than 512
 * levels (ELOOP). Keeps removing after a failure and reports the first. A missing name is fine.
 */
int fs_safe_tree_remove_at(int dfd, const char *name, struct err *err);
/* The same for an absolute or relative path (links in its parent directories are followed). */
int fs_safe_tree_remove(const char *path, struct err *err);

/*
 * The directory path must be owned by root and writable by nobody else, as must every
 * parent: what the engine writes there as root cannot be redirected by the app.
 */
int fs_safe_dir_check_root_owned(const char *path, struct err *err);

#endif
