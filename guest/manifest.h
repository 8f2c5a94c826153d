/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The manifest the app's manifest command writes (untrusted input), and runtime.json, the file
 * the platform reads (boot-contract.md, "Manifest and runtime.json"; decisions.md, "Manifest").
 */
#ifndef SA_MANIFEST_H
#define SA_MANIFEST_H

#include <stddef.h>
#include <sys/types.h>

#include "err.h"

#define MANIFEST_MAX (256 * 1024)

struct manifest {
	char *mcp_path;  /* printable ASCII, starts with '/', not "//" */
	char *mcp_token; /* NULL when the manifest says null */
};

/* Validate a manifest document. Refusals are ERR_FAILED (the manifest step failed). */
int manifest_parse(const char *buf, size_t len, struct manifest *ret, struct err *err);
/* Read path (relative to dirfd or AT_FDCWD) without following links, capped, and parse it. */
int manifest_read(int dirfd, const char *path, struct manifest *ret, struct err *err);
/* {"mcp_path": ..., "mcp_token": ...} as a heap string (json-c). */
char *manifest_to_json(const struct manifest *m);
/* Write runtime.json atomically, root-owned (uid/gid given), mode 0600. */
int manifest_write_runtime(const struct manifest *m, const char *path, uid_t uid, gid_t gid,
                           struct err *err);
void manifest_dispose(struct manifest *m);

#endif
