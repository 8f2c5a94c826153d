/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a tree rebuilds from its lockfiles, carried from the old tree into the new one when a
 * checkout replaces it (docs/checkout.md, "What a re-sync keeps").
 *
 * A group is a set of input files (the lockfiles and what else the installer reads; a name
 * ending in "/" stands for the regular files of that directory, as db/migrate/) and the
 * directories built from them. When every input of a group is byte-for-byte the same in both
 * trees (present in both or missing in both, and at least one present), each of its
 * directories the old tree has and the new one does not is renamed into the new tree; when an
 * input changed, nothing of that group moves and the installer builds it again. The boot then
 * skips an installer step whose inputs did not change (boot_engine.c, step_inputs.c).
 *
 * Hostile trees: every component is opened with O_NOFOLLOW relative to its parent's
 * descriptor, in both trees. A directory is moved only when it is a real directory owned by
 * the old tree's owner, on the same filesystem, and its name is free in the new tree (a
 * committed node_modules, or a link planted there, stops it: RENAME_NOREPLACE); a parent
 * missing in the new tree is created, owned by the same user; a parent that is a link in
 * either tree stops that directory. Nothing is ever followed through a symbolic link and
 * nothing that user could not move itself is moved. A carry-over never fails a checkout: what
 * could not be moved is reported and built again.
 */
#ifndef SA_TREE_CARRY_H
#define SA_TREE_CARRY_H

#include <sodium.h>
#include <stdbool.h>
#include <sys/types.h>

#include "err.h"

#define TREE_CARRY_MAX_INPUT_BYTES (32UL * 1024 * 1024)
#define TREE_CARRY_MAX_ENTRIES 16
/* A directory input ("db/migrate/") holds at most this many files. */
#define TREE_CARRY_MAX_DIR_FILES 4096
#define TREE_CARRY_DIGEST_BYTES 32

struct tree_carry_group {
	const char *name;              /* "node", "ruby", "database" */
	const char *const *inputs;     /* relative file names, or "dir/" for a directory's files */
	const char *const *outputs;    /* directories the installer builds, NULL-terminated */
	const char *const *caches;     /* directories the app fills as it runs, carried too */
	const char *const *installers; /* commands that build the outputs, NULL-terminated */
	bool databases; /* it builds the boot's throwaway databases, not directories of the tree */
};

/* The groups, ending with a zeroed entry. */
extern const struct tree_carry_group tree_carry_groups[];

/* One directory's decision. */
struct tree_carry_entry {
	char path[64]; /* "node_modules" */
	bool moved;    /* carried into the new tree */
	char why[192]; /* "package-lock.json unchanged", "package-lock.json changed", ... */
};

struct tree_carry_report {
	struct tree_carry_entry e[TREE_CARRY_MAX_ENTRIES];
	size_t n;
};

/*
 * Carry each group's directories from the old tree (old_fd) into the new one (new_fd) as
 * described above; uid:gid own what is created in the new tree (uid -1: the old tree's
 * owner). Decisions are logged (debug) and returned in *rep; nothing fails: what is not moved
 * is built again.
 */
void tree_carry_run(int old_fd, int new_fd, uid_t uid, gid_t gid, struct tree_carry_report *rep);

/* The report as one line ("node_modules carried (package-lock.json unchanged); ..."). */
void tree_carry_report_format(const struct tree_carry_report *rep, char *buf, size_t len);

/*
 * The group whose installer command is: one of its installers, optionally followed by
 * options and words of [A-Za-z0-9_=.,:/@+-] only (no shell syntax), or NULL.
 */
const struct tree_carry_group *tree_carry_group_of_command(const char *command);

/*
 * Whether the relative directory path is a real directory below dfd, reached without
 * following a symbolic link.
 */
bool tree_carry_dir_present(int dfd, const char *path);

/* Feed a length-prefixed value into a digest (the inputs' digests and step_inputs.c's). */
void tree_carry_digest_feed(crypto_generichash_state *h, const void *data, size_t len);

/*
 * The digest of one input below dfd: a file's bytes, or for "dir/" the names and bytes of the
 * directory's regular files (at most TREE_CARRY_MAX_DIR_FILES), TREE_CARRY_MAX_INPUT_BYTES in
 * all; *ret_present says whether it exists (a missing input has a digest too). -errno when it
 * cannot be read safely: a link on the way, something not a regular file in a directory, a
 * file over the cap.
 */
int tree_carry_input_digest(int dfd, const char *input, unsigned char out[TREE_CARRY_DIGEST_BYTES],
                            bool *ret_present);

#endif
