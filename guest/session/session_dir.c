/* SPDX-License-Identifier: Apache-2.0 */
#include "session_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"

/* An existing directory at name below dfd, no link, ours, 0700. */
static int open_private(int dfd, const char *name, const char *what, bool create, struct err *err)
{
	_cleanup_close_ int fd = -1;
	struct stat st;

	if (create && mkdirat(dfd, name, 0700) < 0 && errno != EEXIST)
		return err_errno(err, "cannot create %s", what);
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return err_set(err, ERR_REFUSED, ENOENT, "%s does not exist", what);
		if (errno == ELOOP || errno == ENOTDIR)
			return err_set(err, ERR_REFUSED, ENOTDIR, "%s is not a directory", what);
		return err_errno(err, "cannot open %s", what);
	}
	if (fstat(fd, &st) < 0)
		return err_errno(err, "cannot stat %s", what);
	/* ROOT and ROOT/sessions made by someone else's mkdir -p: ours, so made private. */
	if (create && st.st_uid == geteuid() && (st.st_mode & 07777) != 0700 &&
	    fchmod(fd, 0700) == 0)
		st.st_mode = (st.st_mode & ~07777) | 0700;
	if (st.st_uid != geteuid() || (st.st_mode & 07777) != 0700)
		return err_set(err, ERR_REFUSED, EPERM, "%s must be %s's with mode 0700", what,
		               geteuid() == 0 ? "root" : "the caller");
	return TAKE_FD(fd);
}

static bool all_digits(const char *s)
{
	if (!*s || strlen(s) > 32)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

int session_dir_open(const char *root, const char *dir, bool create_parents, struct err *err)
{
	_cleanup_close_ int rfd = -1, sfd = -1;
	_cleanup_free_ char *sessions = NULL;
	size_t n = strlen(root);
	const char *leaf;

	if (root[0] != '/')
		return err_set(err, ERR_FAILED, EINVAL, "the session root %s is not absolute",
		               root);
	if (asprintf(&sessions, "%s/sessions", root) < 0)
		return err_oom(err);
	if (strncmp(dir, sessions, n + 9) != 0 || dir[n + 9] != '/' ||
	    !all_digits(leaf = dir + n + 10))
		return err_set(err, ERR_REFUSED, EINVAL, "--dir must be %s/<digits>", sessions);
	if (create_parents) {
		struct err e;
		_cleanup_free_ char *parent = strdup(root);
		char *slash;

		if (!parent)
			return err_oom(err);
		slash = strrchr(parent, '/');
		if (slash && slash != parent) {
			*slash = '\0';
			if (file_mkdir_p(parent, 0755, &e) < 0) {
				*err = e;
				return err_ret(err);
			}
		}
	}
	rfd = open_private(AT_FDCWD, root, root, create_parents, err);
	if (rfd < 0)
		return err_ret(err);
	sfd = open_private(rfd, "sessions", sessions, create_parents, err);
	if (sfd < 0)
		return err_ret(err);
	return open_private(sfd, leaf, dir, false, err);
}

int session_dir_lock(const char *root, struct err *err)
{
	_cleanup_free_ char *path = NULL;
	_cleanup_close_ int fd = -1;

	if (asprintf(&path, "%s/session.lock", root) < 0)
		return err_oom(err);
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return err_errno(err, "cannot open %s", path);
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EWOULDBLOCK)
			return err_set(err, ERR_REFUSED, EBUSY,
			               "another session of this sandbox is still running");
		return err_errno(err, "cannot lock %s", path);
	}
	return TAKE_FD(fd);
}

int session_dir_open_prompt(int dirfd, struct err *err)
{
	int fd = openat(dirfd, "prompt.txt", O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	struct stat st;

	if (fd < 0) {
		if (errno == ENOENT)
			return err_set(err, ERR_REFUSED, ENOENT, "there is no prompt.txt");
		if (errno == ELOOP)
			return err_set(err, ERR_REFUSED, ELOOP, "prompt.txt is a symbolic link");
		return err_errno(err, "cannot open prompt.txt");
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return err_set(err, ERR_REFUSED, EINVAL, "prompt.txt is not a regular file");
	}
	return fd;
}

bool session_dir_started(int dirfd)
{
	struct stat st;

	return fstatat(dirfd, "status.json", &st, AT_SYMLINK_NOFOLLOW) == 0 ||
	       fstatat(dirfd, "events.jsonl", &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static bool hex40(const char *s)
{
	for (int i = 0; i < 40; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

int session_dir_base_commit(const char *root, const char *base, char ret[41], struct err *err)
{
	_cleanup_close_ int rfd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_free_ char *buf = NULL, *path = NULL;
	size_t len = 0;
	int rc;

	if (rfd < 0)
		return err_errno(err, "cannot open %s", root);
	rc = file_read_capped(rfd, "base_commit", 4096, READ_NOFOLLOW | READ_MISSING_OK, &buf, &len,
	                      err);
	if (rc < 0)
		return err_wrap(err, "base_commit");
	if (rc == 0) {
		if (len < 40 || !hex40(buf))
			return err_set(err, ERR_FAILED, EINVAL, "%s/base_commit is not a commit id",
			               root);
		memcpy(ret, buf, 40);
		ret[40] = '\0';
		return 0;
	}
	if (!base)
		return 1;
	if (strlen(base) != 40 || !hex40(base))
		return err_set(err, ERR_FAILED, EINVAL, "not a commit id: %.64s", base);
	if (asprintf(&path, "%s/base_commit", root) < 0)
		return err_oom(err);
	{
		char line[42];

		memcpy(line, base, 40);
		line[40] = '\n';
		if (file_write_atomic(path, line, 41, 0600, (uid_t)-1, (gid_t)-1, err) < 0)
			return err_ret(err);
	}
	memcpy(ret, base, 41);
	return 0;
}
