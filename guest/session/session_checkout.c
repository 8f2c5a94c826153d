/* SPDX-License-Identifier: Apache-2.0 */
#include "session_checkout.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "session_user.h"

#define SHARE_MAX_DEPTH 256

static int share_dir(int dfd, dev_t dev, unsigned depth, uid_t me, struct err *err)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	struct stat st;
	int fd;

	if (fstat(dfd, &st) < 0)
		return err_errno(err, "stat");
	if (st.st_uid == me) {
		mode_t want = (st.st_mode & 07777) | S_IRWXG | S_ISGID;

		if (want != (st.st_mode & 07777) && fchmod(dfd, want) < 0)
			return err_errno(err, "chmod a directory of the checkout");
	}
	if (depth >= SHARE_MAX_DEPTH)
		return err_set(err, ERR_FAILED, ELOOP,
		               "the checkout is nested deeper than %d levels", SHARE_MAX_DEPTH);
	fd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return err_errno(err, "dup");
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return err_errno(err, "read a directory of the checkout");
	}
	while ((errno = 0, de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* gone meanwhile */
		if (st.st_dev != dev)
			continue;
		if (S_ISDIR(st.st_mode)) {
			_cleanup_close_ int sub = openat(
			    dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (sub < 0)
				continue; /* unreadable or swapped for a link: not ours to change */
			if (share_dir(sub, dev, depth + 1, me, err) < 0)
				return err_ret(err);
		} else if (S_ISREG(st.st_mode) && st.st_uid == me) {
			mode_t want = (st.st_mode & 07777) | S_IRGRP | S_IWGRP |
			              ((st.st_mode & S_IXUSR) ? S_IXGRP : 0);

			/* As the owner: a link swapped in meanwhile leads only to our own files. */
			if (want != (st.st_mode & 07777) && fchmodat(dfd, de->d_name, want, 0) < 0)
				continue; /* not ours after all */
		}
	}
	if (errno != 0)
		return err_errno(err, "read a directory of the checkout");
	return 0;
}

int session_checkout_share(const char *checkout, struct err *err)
{
	_cleanup_close_ int fd = open(checkout, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;

	if (fd < 0)
		return err_errno(err, "cannot open the checkout %s", checkout);
	if (fstat(fd, &st) < 0)
		return err_errno(err, "cannot stat the checkout %s", checkout);
	if (share_dir(fd, st.st_dev, 0, geteuid(), err) < 0)
		return err_wrap(err, "sharing the checkout %s", checkout);
	return 0;
}

static int share_fn(void *arg, int out_fd, struct err *err)
{
	(void)out_fd;
	return session_checkout_share(arg, err);
}

int session_checkout_share_as(const char *checkout, const struct run_user *app_user,
                              struct err *err)
{
	return session_user_call(app_user, share_fn, (void *)checkout, 0, NULL, NULL, err);
}
