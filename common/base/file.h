/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reading and writing whole files safely.
 */
#ifndef SA_FILE_H
#define SA_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "err.h"

enum {
	READ_NOFOLLOW = 1 << 0,   /* refuse a symbolic link in the last component */
	READ_MISSING_OK = 1 << 1, /* a missing file reads as empty, *ret_buf = NULL, returns 0 */
};

/*
 * Read the regular file at path (relative to dirfd, or AT_FDCWD) into a NUL-terminated heap
 * buffer. Refuses anything that is not a regular file and anything larger than max bytes
 * (ERR_REFUSED, with "larger than N bytes" in the message). Returns 0, or 1 when the file is
 * missing and READ_MISSING_OK was given.
 */
int file_read_capped(int dirfd, const char *path, size_t max, int flags, char **ret_buf,
                     size_t *ret_len, struct err *err);

/*
 * Read fd until end of file or until size bytes are in buf, whichever comes first (EINTR is
 * retried): the count read, or -errno. A caller that allows max bytes passes max + 1 and
 * refuses a result above max.
 */
ssize_t file_read_all(int fd, void *buf, size_t size);

/*
 * Write data to path atomically: a temporary file in the same directory, written, fchmod'ed to
 * mode, fchown'ed to uid:gid (unless uid is (uid_t)-1), fsync'ed, renamed over path, and the
 * directory fsync'ed. A full disk is reported as such and leaves the old file in place.
 */
int file_write_atomic(const char *path, const void *data, size_t len, mode_t mode, uid_t uid,
                      gid_t gid, struct err *err);

/*
 * The same without the fsyncs: a reader sees the old file or the new one, never half of one,
 * but a power loss may lose the change. For state that is rewritten at every phase.
 */
int file_write_replace(const char *path, const void *data, size_t len, mode_t mode, uid_t uid,
                       gid_t gid, struct err *err);

/*
 * file_write_replace() in two halves, for a file whose content is known before the moment it
 * may appear: file_stage() writes the temporary file beside path, file_stage_commit() renames
 * it over path, file_stage_abort() removes it (and does nothing to a stage committed or never
 * made). Each leaves s empty. Nothing is synced: for a file that describes what runs now (a
 * power loss ends what it describes), which readers must see whole or not at all.
 * The temporary file has a fixed name, path FILE_STAGE_SUFFIX, so that one left by a process
 * that died between the halves is found again: file_stage_remove(path) removes it (callers
 * serialize their stages of one path, e.g. under a lock).
 */
#define FILE_STAGE_SUFFIX ".staged"
struct file_stage {
	char *path;
	char *tmp; /* NULL: nothing staged */
};
int file_stage(const char *path, const void *data, size_t len, mode_t mode, uid_t uid, gid_t gid,
               struct file_stage *ret, struct err *err);
int file_stage_commit(struct file_stage *s, struct err *err);
void file_stage_abort(struct file_stage *s);
void file_stage_remove(const char *path);

/* write() all of buf, retrying on EINTR and short writes. */
int file_write_all(int fd, const void *buf, size_t len);

/* mkdir -p with the given mode for each created component; existing ones are left alone. */
int file_mkdir_p(const char *path, mode_t mode, struct err *err);

#endif
