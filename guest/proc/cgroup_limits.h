/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The limits of a process set (docs/design.md, "Limits"): memory, processes and CPU weight,
 * enforced by the kernel through cgroups. Each controller is used where it works: in the set's
 * own cgroup2 directory when that hierarchy offers the controller, else in a cgroup of the same
 * name in the v1 hierarchy holding it (nested below where we sit), which the set's processes
 * join besides the set's own. What a limit did (out-of-memory kills, refused forks) is read back
 * from the kernel's counters: memory.events / memory.oom_control, pids.events.
 */
#ifndef SA_CGROUP_LIMITS_H
#define SA_CGROUP_LIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct cgroup_limits {
	uint64_t memory_max; /* bytes, 0: none */
	uint64_t pids_max;   /* processes and threads, 0: none */
	unsigned cpu_weight; /* 1..10000, cgroup v2's scale (100 is everyone's default); 0: none */
};

enum cgroup_limits_controller {
	CGROUP_LIMITS_MEMORY,
	CGROUP_LIMITS_PIDS,
	CGROUP_LIMITS_CPU,
	CGROUP_LIMITS_N,
};

/* Where each controller of one set lives. */
struct cgroup_limits_set {
	char *dir[CGROUP_LIMITS_N]; /* the cgroup whose files hold the limit; NULL: not placed */
	bool v2[CGROUP_LIMITS_N];
	int join_fd[CGROUP_LIMITS_N]; /* CGROUP_LIMITS_JOIN_FILE of a v1 cgroup to join besides
	                                 the set's, for a process of one thread; -1 */
	bool inside[CGROUP_LIMITS_N]; /* this process sits in that v1 cgroup: its forks are born
	                                 there, nothing to join */
	int back_fd[CGROUP_LIMITS_N]; /* after cgroup_limits_enter(): the directory of the cgroup
	                                 this process came from; -1 */
};

/*
 * What a process of one thread (a child between fork and exec, the engine) writes "0" to, to
 * join a v1 cgroup: `tasks` moves the writing thread alone, which the kernel does without its
 * thread-group lock and so without waiting for an RCU grace period as cgroup.procs does.
 */
#define CGROUP_LIMITS_JOIN_FILE "tasks"

/* What the limits did so far, and what they are. */
struct cgroup_limits_hits {
	uint64_t oom_kills;       /* processes the kernel killed for memory */
	uint64_t forks_denied;    /* forks refused at the pids limit */
	struct cgroup_limits now; /* the limits as the kernel has them (0: none or unknown) */
};

/*
 * A size as people write it: "2GiB", "512MiB", "2G" (binary, like Docker and Kubernetes' Gi),
 * "1.5GiB", "4096" (bytes), with B/K/KB/KiB/M/MB/MiB/G/GB/GiB/T/TB/TiB, any case, an optional
 * space. Every unit is binary (1K = 1024). At least 1 byte, at most 2^62. ERR_REFUSED
 * "`2GB!` is not a size (e.g. 512MiB, 2GiB)".
 */
int cgroup_limits_parse_size(const char *text, uint64_t *ret, struct err *err);
/* "2 GiB", "512 MiB", "1.5 GiB", "100 bytes": the unit that keeps it short. */
void cgroup_limits_format_size(uint64_t bytes, char *buf, size_t len);

/* Every slot empty: call before cgroup_limits_place() or dispose. */
void cgroup_limits_init(struct cgroup_limits_set *s);
/*
 * Find (create false: only cgroups that exist) or make the cgroups of the set named name whose
 * own cgroup is set_dir (a cgroup2 directory when set_v2, a v1 one otherwise, "" without
 * one), for the controllers a limit of want asks for (create) or for all (find). A controller
 * that is nowhere to be had is left unplaced; ERR_FAILED only when making one failed.
 */
int cgroup_limits_place(const char *set_dir, bool set_v2, const char *name,
                        const struct cgroup_limits *want, bool create, struct cgroup_limits_set *s,
                        struct err *err);
/*
 * Write the limits of l into the placed cgroups (swap is limited to nothing with memory).
 * A limit asked for whose controller is not placed fails: ERR_FAILED "cannot limit memory:
 * no memory cgroup controller is available here ...".
 */
int cgroup_limits_write(const struct cgroup_limits_set *s, const struct cgroup_limits *l,
                        struct err *err);
/* The counters and limits as the kernel has them; zeros where a controller is not placed. */
void cgroup_limits_read(const struct cgroup_limits_set *s, struct cgroup_limits_hits *ret);
/*
 * The join descriptors of the v1 cgroups this process is not inside, in fds (at most
 * CGROUP_LIMITS_N); returns how many.
 */
unsigned cgroup_limits_join_fds(const struct cgroup_limits_set *s, int *fds);
/*
 * This process joins the v1 cgroups of the limits itself, once, so that every process it forks
 * from then on is born inside them: through CGROUP_LIMITS_JOIN_FILE when it has one thread (no
 * wait of the kernel's), else through cgroup.procs (all its threads, one grace period).
 * ERR_FAILED "cannot join the memory limit's cgroup DIR: ..." (then it is where it was).
 */
int cgroup_limits_enter(struct cgroup_limits_set *s, struct err *err);
/* Back to the cgroups it came from (before the v1 cgroups are removed), the same way; errors
 * are logged. */
void cgroup_limits_leave(struct cgroup_limits_set *s);
/* Remove the v1 cgroups made beside the set's own (after its processes are gone). */
void cgroup_limits_remove(const struct cgroup_limits_set *s);
void cgroup_limits_dispose(struct cgroup_limits_set *s);

#endif
