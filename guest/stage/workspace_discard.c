/* SPDX-License-Identifier: Apache-2.0 */
#include "workspace_discard.h"

#include "fs_safe.h"

#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Leftovers of an interrupted discard: .NAME.discard.* beside the workspace. */
static void remove_leftovers(const char *parent, const char *name)
{
	_cleanup_closedir_ DIR *d = opendir(parent);
	char prefix[NAME_MAX + 16];
	struct dirent *de;

	if (!d)
		return;
	snprintf(prefix, sizeof(prefix), ".%s.discard.", name);
	while ((de = readdir(d))) {
		char path[PATH_MAX];
		struct err ignored;
		if (strncmp(de->d_name, prefix, strlen(prefix)) != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", parent, de->d_name);
		fs_safe_tree_remove(path, &ignored);
	}
}

static int empty_in_place(const char *workspace, struct err *err)
{
	_cleanup_closedir_ DIR *d = opendir(workspace);
	struct dirent *de;

	if (!d)
		return err_errno(err, "cannot open %s", workspace);
	while ((de = readdir(d))) {
		char path[PATH_MAX];
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", workspace, de->d_name);
		if (fs_safe_tree_remove(path, err) < 0)
			return -1;
	}
	return 0;
}

int workspace_discard(const char *workspace, struct err *err)
{
	_cleanup_free_ char *c1 = strdup(workspace), *c2 = strdup(workspace);
	char aside[PATH_MAX];
	const char *parent, *name;

	if (!c1 || !c2)
		return err_oom(err);
	parent = dirname(c1);
	name = basename(c2);
	if (strcmp(workspace, "/") == 0 || strcmp(name, "..") == 0 || strcmp(name, ".") == 0)
		return err_set(err, ERR_REFUSED, EINVAL, "refusing to discard %s", workspace);
	remove_leftovers(parent, name);
	snprintf(aside, sizeof(aside), "%s/.%s.discard.%ld", parent, name, (long)getpid());
	if (rename(workspace, aside) < 0) {
		if (errno == ENOENT)
			return 0;
		if (errno == EBUSY || errno == EXDEV || errno == EACCES)
			return empty_in_place(workspace, err);
		return err_errno(err, "cannot move %s aside", workspace);
	}
	return fs_safe_tree_remove(aside, err);
}
