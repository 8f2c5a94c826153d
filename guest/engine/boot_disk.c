/* SPDX-License-Identifier: Apache-2.0 */
/* A du -sx of one directory by file descriptors: openat(O_NOFOLLOW) and fstatat() only. */
#include "boot_disk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "cleanup.h"
#include "clock.h"
#include "log.h"

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
		if (!S_ISDIR(st.st_mode) || st.st_dev != w->dev)
			continue;
		/* Deeper than we walk: not measured, so not trusted (a tree could hide bytes
		 * there). */
		if (depth >= BOOT_DISK_MAX_DEPTH)
			return -ELOOP;
		sub = openat(dirfd(d), de->d_name,
		             O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOATIME);
		if (sub < 0 && errno == EPERM)
			sub = openat(dirfd(d), de->d_name,
			             O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			continue;
		int r = walk_dir(sub, depth + 1, w);
		if (r == -E2BIG || r == -ELOOP)
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
	if (r == -ELOOP)
		return err_set(err, ERR_FAILED, ELOOP,
		               "%s has directories more than %d levels deep; its disk use is not "
		               "measured by walking it",
		               dir, BOOT_DISK_MAX_DEPTH);
	if (r < 0) {
		errno = -r;
		return err_errno(err, "cannot measure the disk use of %s", dir);
	}
	*ret = w.bytes;
	return 0;
}

void boot_disk_budget_init(struct boot_disk_budget *b, const char *workspace, const char *state_dir,
                           uint64_t max)
{
	size_t wl = strlen(workspace);

	memset(b, 0, sizeof(*b));
	b->max = max;
	b->every_ms = 1000;
	b->dirs[b->n++] = workspace;
	if (strncmp(state_dir, workspace, wl) || (state_dir[wl] != '/' && state_dir[wl]))
		b->dirs[b->n++] = state_dir;
}

/*
 * The bytes in use on the filesystems of the directories, each counted once. A filesystem is
 * told by its device number: two filesystems may share an f_fsid (tmpfs reports 0 on older
 * kernels, cloned images share a UUID), which would drop one; one filesystem with two device
 * numbers (btrfs subvolumes) is counted twice, which errs high.
 */
static uint64_t fs_used(const struct boot_disk_budget *b)
{
	dev_t seen = 0;
	uint64_t sum = 0;

	for (size_t i = 0; i < b->n; i++) {
		struct statvfs sv;
		struct stat st;

		if (stat(b->dirs[i], &st) < 0 || statvfs(b->dirs[i], &sv) < 0 ||
		    (i == 1 && st.st_dev == seen))
			continue;
		if (i == 0)
			seen = st.st_dev;
		sum += (uint64_t)(sv.f_blocks - sv.f_bfree) * sv.f_frsize;
	}
	return sum;
}

static int walk(struct boot_disk_budget *b)
{
	uint64_t t0 = clock_now_us(), total = 0, fs = fs_used(b), took;
	struct err e;

	for (size_t i = 0; i < b->n; i++) {
		uint64_t n = 0;
		int r = boot_disk_usage(b->dirs[i], &n, &e);

		if (r == -ENOENT)
			continue;
		if (r < 0) {
			/*
			 * Fail closed: from now on the filesystems' own counters decide alone (they
			 * see every byte written, other writers' too), from the last walk or from
			 * now. Never "not checked".
			 */
			log_warn("disk budget: %s; the filesystem's counters decide from now on",
			         e.msg);
			b->broken = true;
			if (!b->known) {
				b->used = 0;
				b->fs_used = fs;
				b->known = true;
			}
			return -1;
		}
		total += n;
	}
	took = clock_now_us() - t0;
	b->walks++;
	b->walk_us += took;
	if (took / 1000 * 20 > b->every_ms)
		b->every_ms = (unsigned)(took / 1000 * 20 < 60000 ? took / 1000 * 20 : 60000);
	b->next_walk_ms = clock_now_ms() + b->every_ms;
	b->used = total;
	b->fs_used = fs;
	b->known = true;
	return 0;
}

int boot_disk_budget_check(struct boot_disk_budget *b, bool final, uint64_t *ret_used)
{
	uint64_t fs, estimate;

	if (!b->max)
		return 0;
	if (b->broken) {
		/* Counters only (walk() could not measure): the estimate is the measure. */
		fs = fs_used(b);
		estimate = b->used + (fs > b->fs_used ? fs - b->fs_used : 0);
		if (estimate <= b->max)
			return 0;
		*ret_used = estimate;
		return 1;
	}
	if (!b->known) {
		if (walk(b) < 0)
			return boot_disk_budget_check(b, final, ret_used);
	} else {
		fs = fs_used(b);
		estimate = b->used + (fs > b->fs_used ? fs - b->fs_used : 0);
		if (estimate <= b->max)
			return 0;
		if (!final && clock_now_ms() < b->next_walk_ms)
			return 0;
		if (walk(b) < 0)
			return boot_disk_budget_check(b, final, ret_used);
	}
	if (b->used <= b->max)
		return 0;
	*ret_used = b->used;
	return 1;
}
