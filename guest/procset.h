/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The set of processes that belong to one boot (decisions.md, "Processes"): a cgroup of its
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

#include "err.h"

struct procset;

/* Create (or reuse) the set named name, e.g. "sandbox-<session>". */
int procset_create(const char *name, struct procset **ret, struct err *err);
/*
 * The description to keep in state.json and reopen with: a cgroup path, or "" for the
 * process-group fallback. Groups and the subreaper are recorded separately by the caller.
 */
const char *procset_cgroup_path(const struct procset *ps);
int procset_open(const char *cgroup_path, struct procset **ret, struct err *err);
void procset_free(struct procset *ps);

/* Descriptor a child writes its pid into before exec (proc_spec.procs_fd), or -1. */
int procset_procs_fd(const struct procset *ps);
/* Remember a process group (and its leader's start time) that belongs to the set. */
int procset_add_group(struct procset *ps, pid_t pgid, uint64_t start_time);
/* Remember a subreaper whose descendants belong to the set (fallback walk). */
int procset_add_root(struct procset *ps, pid_t pid, uint64_t start_time);

/* Every live pid of the set (cgroup members, or groups + descendants of roots). */
int procset_pids(const struct procset *ps, pid_t **ret, size_t *ret_n, struct err *err);
bool procset_contains(const struct procset *ps, pid_t pid);

/*
 * Stop everything in the set except exclude (e.g. the caller itself): TERM, grace_ms,
 * KILL, then wait up to 2 s more. Never signals pid or group 0, 1 or our own. Returns 0 when
 * nothing is left, else ERR_FAILED naming what survived.
 */
int procset_stop(struct procset *ps, unsigned grace_ms, pid_t exclude, struct err *err);
/* Remove the cgroup (after stop); harmless for the fallback. */
void procset_destroy(struct procset *ps);

#endif
