/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a workspace takes on disk: the blocks of every file and directory below it, walked
 * without following symbolic links or crossing into other filesystems, as `du -sx` counts
 * them (a file with several links is counted once per link).
 */
#ifndef SA_BOOT_DISK_H
#define SA_BOOT_DISK_H

#include <stdbool.h>
#include <stdint.h>

#include "err.h"

/*
 * At most this many entries are looked at, and directories this deep; beyond, the walk stops
 * and says so (the budget then trusts the filesystems' counters alone).
 */
#define BOOT_DISK_MAX_ENTRIES 4000000u
#define BOOT_DISK_MAX_DEPTH 256

/* Bytes allocated below dir (dir included); -ENOENT when dir does not exist. */
int boot_disk_usage(const char *dir, uint64_t *ret, struct err *err);

/*
 * A workspace's disk budget, checked cheaply: a walk (boot_disk_usage) gives the use once, then
 * the filesystems' own counters (statfs) say how much was written since; only when that
 * estimate passes the budget is the workspace walked again to be sure, at most every second
 * and never more than a twentieth of the time (a filesystem shared with other writers makes the
 * estimate high, never low, unless files outside are deleted meanwhile).
 */
struct boot_disk_budget {
	const char *dirs[2]; /* the workspace, and the state directory when it is outside */
	size_t n;
	uint64_t max;           /* bytes; 0: not checked */
	uint64_t used, fs_used; /* the last walk, and the filesystems' use then */
	bool known, broken;     /* a walk was made; a walk could not measure (too many entries,
	                           too deep): the filesystems' counters alone decide from then */
	unsigned every_ms;      /* walks at most this often */
	uint64_t next_walk_ms;
	uint64_t walks, walk_us; /* for the figures: how many walks, how long in all */
};

void boot_disk_budget_init(struct boot_disk_budget *b, const char *workspace, const char *state_dir,
                           uint64_t max);
/*
 * 1 with *ret_used when the workspace uses more than the budget (measured by a walk), else 0.
 * final: the step ended, decide now (a walk is not put off).
 */
int boot_disk_budget_check(struct boot_disk_budget *b, bool final, uint64_t *ret_used);

#endif
