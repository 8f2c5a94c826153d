/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a workspace takes on disk: the blocks of every file and directory below it, walked
 * without following symbolic links or crossing into other filesystems, as `du -sx` counts
 * them (a file with several links is counted once per link).
 */
#ifndef SA_BOOT_DISK_H
#define SA_BOOT_DISK_H

#include <stdint.h>

#include "err.h"

/* At most this many entries are looked at; beyond, the walk stops and says so. */
#define BOOT_DISK_MAX_ENTRIES 4000000u
#define BOOT_DISK_MAX_DEPTH 256

/* Bytes allocated below dir (dir included); -ENOENT when dir does not exist. */
int boot_disk_usage(const char *dir, uint64_t *ret, struct err *err);

#endif
