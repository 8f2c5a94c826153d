/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The set of processes that belong to one boot (docs/design.md, "Processes"): a cgroup of its
 * own when one can be made (v2, or v1 nested under the cgroup we already sit in), else the
 * recorded process groups plus every descendant of the supervisor (which is a child subreaper,
 * so daemons that double-fork and setsid stay its descendants). The set can be reopened from its
 * description by a later process (`--stop`, `--status`).
 */
#ifndef SA_PROCSET_H
#define SA_PROCSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroup_limits.h"
#include "err.h"

struct procset;

/* Where membership is kept. */
enum procset_backend {
	PROCSET_AUTO = 0,  /* cgroup v2, else cgroup v1 (pids, else freezer), else no cgroup */
	PROCSET_CGROUP2,   /* a writable cgroup2 hierarchy below where we sit, or fail */
	PROCSET_CGROUP1,   /* the v1 pids (or freezer) hierarchy below where we sit, or fail */
	PROCSET_NO_CGROUP, /* process groups plus descendants of roots only */
};

/*
 * Create (or reuse) the set named name, e.g. "sandbox-<session>" ([A-Za-z0-9_.-], at most 100
 * characters): the cgroup <where we sit>/sandbox-app-runtime/<name> under /sys/fs/cgroup.
 */
int procset_create(const char *name, struct procset **ret, struct err *err);
/* The same with the backend chosen by the caller (tests force each one, --no-cgroup...). */
int procset_create_backend(const char *name, enum procset_backend backend, struct procset **ret,
                           struct err *err);
/* PROCSET_CGROUP2, PROCSET_CGROUP1 or PROCSET_NO_CGROUP. */
enum procset_backend procset_backend_of(const struct procset *ps);
/*
 * The description to keep in state.json and reopen with: a cgroup path, or "" for the
 * process-group fallback. Groups and the subreaper are recorded separately by the caller.
 */
const char *procset_cgroup_path(const struct procset *ps);
/*
 * Reopen from procset_cgroup_path(): "" gives an empty fallback set; a cgroup path must be a
 * directory below /sys/fs/cgroup named .../sandbox-app-runtime/<name> (ERR_REFUSED otherwise,
 * -ENOENT when it is gone). Groups and roots are added again by the caller.
 */
int procset_open(const char *cgroup_path, struct procset **ret, struct err *err);
void procset_free(struct procset *ps);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct procset *, procset_free)
#define _cleanup_procset_ _cleanup_(procset_freep)

/* Descriptor a child writes its pid into before exec (proc_spec.procs_fd), or -1. */
int procset_procs_fd(const struct procset *ps);
/*
 * Limit the set's memory, processes and CPU weight (cgroup_limits.h): in its own cgroup2
 * directory, or in v1 cgroups named name made beside it (also without a cgroup of the set's
 * own), which every process spawned into the set joins too (procset_join_fds()). A limit that
 * cannot be had fails (ERR_FAILED, saying why). procset_open() finds such cgroups again.
 */
int procset_limit(struct procset *ps, const char *name, const struct cgroup_limits *l,
                  struct err *err);
/*
 * The cgroup.procs descriptors a child joins before exec besides procset_procs_fd() (the v1
 * limits' cgroups; proc_spec.join_fds); returns how many (at most CGROUP_LIMITS_N).
 */
unsigned procset_join_fds(const struct procset *ps, int fds[CGROUP_LIMITS_N]);
/*
 * The caller joins the set's v1 limits' cgroups itself, once, so that every process it forks
 * from then on (steps, the supervisor and its server) is born inside them and none has to
 * join: moving a process between v1 cgroups waits for the kernel (an RCU grace period, about
 * 10 ms), born there it costs nothing. The limits are then the boot's as a whole, the caller
 * included; it sets its oom_score_adj to -1000 so that running out of memory kills the app's
 * processes, not the one that reports it (children spawned with proc_spec.oom_score_reset go
 * back to 0). Nothing to do without v1 limits. ERR_FAILED when a cgroup cannot be joined.
 * Only for a process that ends with the boot, and after the services that outlive it started.
 */
int procset_enter_limits(struct procset *ps, struct err *err);
/* Back where it was (oom_score_adj too), so that the limits' cgroups can be removed. */
void procset_leave_limits(struct procset *ps);
/* Whether this process sits in a v1 cgroup of the set's limits (entered, or inherited). */
bool procset_inside_limits(const struct procset *ps);
/* What the limits did so far (out-of-memory kills, refused forks) and what they are. */
void procset_limit_hits(const struct procset *ps, struct cgroup_limits_hits *ret);
/* Remove the v1 cgroups of the limits made beside the set (once it is empty). */
void procset_remove_limits(struct procset *ps);

/* Remember a process group (and its leader's start time) that belongs to the set. */
int procset_add_group(struct procset *ps, pid_t pgid, uint64_t start_time);
/*
 * Remember a subreaper whose descendants (not itself) belong to the set. Used only without a
 * cgroup: with one, the cgroup decides. start_time 0 means unknown (not checked).
 */
int procset_add_root(struct procset *ps, pid_t pid, uint64_t start_time);

/*
 * Every live pid of the set, zombies left out: cgroup members (nested cgroups included) plus the
 * members of recorded groups and their descendants; without a cgroup also the descendants of
 * roots. A group whose leader still runs with another start time was recycled and is skipped.
 */
int procset_pids(const struct procset *ps, pid_t **ret, size_t *ret_n, struct err *err);
bool procset_contains(const struct procset *ps, pid_t pid);

/*
 * Stop everything in the set except exclude (e.g. the caller itself): TERM, grace_ms,
 * KILL, then wait up to 2 s more. Never signals pid 0 or 1, us, or our ancestors (by pid and
 * start time): never by process group, which any process of a session may join. Returns 0
 * when nothing is left, else ERR_FAILED naming what survived.
 */
int procset_stop(struct procset *ps, unsigned grace_ms, pid_t exclude, struct err *err);
/* Remove the cgroup and any nested ones (after stop); harmless for the fallback. */
void procset_destroy(struct procset *ps);

#endif
