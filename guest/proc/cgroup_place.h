/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where the cgroups of our boots go: below the cgroup this process already sits in, in the
 * cgroup2 hierarchy or in the v1 hierarchy that holds a given controller, in a directory
 * sandbox-app-runtime/ of our own (docs/layout.md, "Processes").
 */
#ifndef SA_CGROUP_PLACE_H
#define SA_CGROUP_PLACE_H

#define CGROUP_PLACE_ROOT "/sys/fs/cgroup"
#define CGROUP_PLACE_SET_DIR "sandbox-app-runtime"

#ifndef CGROUP_SUPER_MAGIC
#define CGROUP_SUPER_MAGIC 0x27e0eb
#endif
#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

/*
 * <mount point of the hierarchy><our own cgroup in it>/sandbox-app-runtime, for the cgroup2
 * hierarchy (controller NULL) or the v1 hierarchy holding controller ("pids", "memory", "cpu").
 * Only hierarchies mounted below /sys/fs/cgroup count. -ENOENT when there is none (or we sit
 * outside its mounted part), -EINVAL for a path we do not trust, -ENOMEM.
 */
int cgroup_place_base(const char *controller, char **ret);
/* The directory of the cgroup this process sits in, in the same hierarchy; errors as above. */
int cgroup_place_own(const char *controller, char **ret);
/*
 * /proc/self/mountinfo and /proc/self/cgroup read once (0.2 ms here, most of a lookup), for
 * several lookups of the same moment: cgroup_place_own_in() is cgroup_place_own() with them.
 */
struct cgroup_place_view {
	char *mountinfo;
	char *cgroup;
};
int cgroup_place_view_read(struct cgroup_place_view *v);
void cgroup_place_view_dispose(struct cgroup_place_view *v);
int cgroup_place_own_in(const struct cgroup_place_view *v, const char *controller, char **ret);
/* statfs()'s f_type of path, or -errno. */
long cgroup_place_fs_magic(const char *path);
/*
 * remove_fn(path) (0 or -errno; a missing path is 0) until it no longer fails with -EBUSY, for
 * at most a second: a cgroup stays busy for a moment after its last process exited. The
 * naps grow from 1 ms to 10 ms, so the usual short wait costs a millisecond or two.
 */
int cgroup_place_remove_wait(const char *path, int (*remove_fn)(const char *path));

#endif
