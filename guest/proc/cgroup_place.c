/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Finding where we sit: /proc/self/mountinfo gives each hierarchy's mount point and mounted
 * root, /proc/self/cgroup our path in it.
 */
#include "cgroup_place.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>

#include "cleanup.h"
#include "clock.h"
#include "file.h"

/*
 * More than any /proc/self/mountinfo or /proc/self/cgroup we read has (the kernel's own text:
 * a host with thousands of mounts, containers' included, stays well below).
 */
#define VIEW_MAX (16 * 1024 * 1024)

/* Undo the octal escapes (\040 for a space) of /proc/self/mountinfo, in place. */
static void unescape_octal(char *s)
{
	char *w = s;

	for (char *r = s; *r;) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 4;
		} else {
			*w++ = *r++;
		}
	}
	*w = '\0';
}

static bool list_has(const char *list, const char *item)
{
	size_t n = strlen(item);

	for (const char *p = list; p && *p;) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);

		if (len == n && !strncmp(p, item, n))
			return true;
		p = e ? e + 1 : NULL;
	}
	return false;
}

/*
 * The mount point and mounted root of the cgroup2 hierarchy (controller NULL) or of the v1
 * hierarchy holding controller, below /sys/fs/cgroup.
 */
static int cgroup_mount(const char *mountinfo, const char *controller, char **ret_mnt,
                        char **ret_root)
{
	_cleanup_fclose_ FILE *f = fmemopen((void *)mountinfo, strlen(mountinfo), "r");
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;

	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		char *fields[6] = {0}, *save = NULL, *sep, *fstype, *opts;
		int i = 0;

		line[strcspn(line, "\n")] = '\0';
		sep = strstr(line, " - ");
		if (!sep)
			continue;
		*sep = '\0';
		for (char *t = strtok_r(line, " ", &save); t && i < 6;
		     t = strtok_r(NULL, " ", &save))
			fields[i++] = t;
		if (i < 5)
			continue;
		fstype = strtok_r(sep + 3, " ", &save);
		(void)strtok_r(NULL, " ", &save); /* source */
		opts = strtok_r(NULL, " ", &save);
		if (!fstype)
			continue;
		if (controller ? strcmp(fstype, "cgroup") || !list_has(opts, controller)
		               : strcmp(fstype, "cgroup2"))
			continue;
		unescape_octal(fields[3]);
		unescape_octal(fields[4]);
		if (strncmp(fields[4], CGROUP_PLACE_ROOT, strlen(CGROUP_PLACE_ROOT)) ||
		    (fields[4][strlen(CGROUP_PLACE_ROOT)] &&
		     fields[4][strlen(CGROUP_PLACE_ROOT)] != '/'))
			continue;
		*ret_mnt = strdup(fields[4]);
		*ret_root = strdup(fields[3]);
		if (!*ret_mnt || !*ret_root) {
			free(*ret_mnt);
			free(*ret_root);
			return -ENOMEM;
		}
		return 0;
	}
	return -ENOENT;
}

/* Our own cgroup path in the cgroup2 hierarchy (controller NULL) or in controller's. */
static int own_cgroup(const char *cgroup, const char *controller, char **ret)
{
	_cleanup_fclose_ FILE *f = fmemopen((void *)cgroup, strlen(cgroup), "r");
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;

	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		char *c1 = strchr(line, ':'), *c2;

		line[strcspn(line, "\n")] = '\0';
		if (!c1 || !(c2 = strchr(c1 + 1, ':')))
			continue;
		*c1 = *c2 = '\0';
		if (controller ? !list_has(c1 + 1, controller) : strcmp(line, "0") || c1[1])
			continue;
		if (c2[1] != '/')
			return -EINVAL;
		*ret = strdup(c2 + 1);
		return *ret ? 0 : -ENOMEM;
	}
	return -ENOENT;
}

int cgroup_place_view_read(struct cgroup_place_view *v)
{
	struct err e;

	*v = (struct cgroup_place_view){0};
	if (file_read_capped(AT_FDCWD, "/proc/self/mountinfo", VIEW_MAX, 0, &v->mountinfo, NULL,
	                     &e) < 0 ||
	    file_read_capped(AT_FDCWD, "/proc/self/cgroup", VIEW_MAX, 0, &v->cgroup, NULL, &e) <
	        0) {
		cgroup_place_view_dispose(v);
		return -(e.code ? e.code : EIO);
	}
	return 0;
}

void cgroup_place_view_dispose(struct cgroup_place_view *v)
{
	free(v->mountinfo);
	free(v->cgroup);
	*v = (struct cgroup_place_view){0};
}

int cgroup_place_own(const char *controller, char **ret)
{
	struct cgroup_place_view v;
	int r = cgroup_place_view_read(&v);

	if (r < 0)
		return r;
	r = cgroup_place_own_in(&v, controller, ret);
	cgroup_place_view_dispose(&v);
	return r;
}

/* mount point + our path below the mounted root */
int cgroup_place_own_in(const struct cgroup_place_view *v, const char *controller, char **ret)
{
	_cleanup_free_ char *mnt = NULL, *root = NULL, *own = NULL;
	const char *rel;
	size_t rl;
	int r;

	r = cgroup_mount(v->mountinfo, controller, &mnt, &root);
	if (r < 0)
		return r;
	r = own_cgroup(v->cgroup, controller, &own);
	if (r < 0)
		return r;
	rl = strlen(root);
	if (!strcmp(root, "/"))
		rel = own;
	else if (!strncmp(own, root, rl) && (own[rl] == '/' || own[rl] == '\0'))
		rel = own + rl;
	else
		return -ENOENT; /* we sit outside the mounted part */
	if (strstr(rel, "/../") || strstr(rel, "/./") || strstr(rel, " (deleted)"))
		return -EINVAL;
	while (*rel == '/')
		rel++;
	if (asprintf(ret, "%s%s%s", mnt, *rel ? "/" : "", rel) < 0)
		return -ENOMEM;
	return 0;
}

int cgroup_place_base(const char *controller, char **ret)
{
	_cleanup_free_ char *own = NULL;
	int r = cgroup_place_own(controller, &own);

	if (r < 0)
		return r;
	if (asprintf(ret, "%s/" CGROUP_PLACE_SET_DIR, own) < 0)
		return -ENOMEM;
	return 0;
}

long cgroup_place_fs_magic(const char *path)
{
	struct statfs sfs;

	if (statfs(path, &sfs) < 0)
		return -errno;
	return (long)sfs.f_type;
}

int cgroup_place_remove_wait(const char *path, int (*remove_fn)(const char *path))
{
	int64_t deadline = (int64_t)clock_now_ms() + 1000;
	int nap = 1, r;

	while ((r = remove_fn(path)) == -EBUSY && clock_pause_until(deadline, nap))
		nap = nap < 8 ? nap * 2 : 10;
	return r == -ENOENT ? 0 : r;
}
