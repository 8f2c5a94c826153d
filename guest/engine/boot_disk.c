/* SPDX-License-Identifier: Apache-2.0 */
/* A du -sx of one directory by file descriptors: openat(O_NOFOLLOW) and fstatat() only. */
#include "boot_disk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"

struct walk {
	dev_t dev;
	uint64_t bytes;
	unsigned entries;
};

static int walk_dir(int dfd, int depth, struct walk *w)
{
	_cleanup_closedir_ DIR *d = fdopendir(dfd);
	struct dirent *de;

	if (!d) {
		close(dfd);
		return -errno;
	}
	while ((de = readdir(d))) {
		struct stat st;
		int sub;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (++w->entries > BOOT_DISK_MAX_ENTRIES)
			return -E2BIG;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* removed meanwhile */
		w->bytes += (uint64_t)st.st_blocks * 512;
		if (!S_ISDIR(st.st_mode) || st.st_dev != w->dev || depth >= BOOT_DISK_MAX_DEPTH)
			continue;
		sub = openat(dirfd(d), de->d_name,
		             O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOATIME);
		if (sub < 0 && errno == EPERM)
			sub = openat(dirfd(d), de->d_name,
			             O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			continue;
		int r = walk_dir(sub, depth + 1, w);
		if (r == -E2BIG)
			return r;
	}
	return 0;
}

int boot_disk_usage(const char *dir, uint64_t *ret, struct err *err)
{
	struct walk w = {0};
	struct stat st;
	int fd, r;

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return -ENOENT;
		return err_errno(err, "cannot measure the disk use of %s", dir);
	}
	if (fstat(fd, &st) < 0) {
		close(fd);
		return err_errno(err, "cannot measure the disk use of %s", dir);
	}
	w.dev = st.st_dev;
	w.bytes = (uint64_t)st.st_blocks * 512;
	r = walk_dir(fd, 0, &w);
	if (r == -E2BIG)
		return err_set(err, ERR_FAILED, E2BIG,
		               "%s holds more than %u files and directories; its disk use is not "
		               "measured further",
		               dir, BOOT_DISK_MAX_ENTRIES);
	if (r < 0) {
		errno = -r;
		return err_errno(err, "cannot measure the disk use of %s", dir);
	}
	*ret = w.bytes;
	return 0;
}
