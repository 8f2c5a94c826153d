/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The manifest the app's manifest command writes (untrusted input), and runtime.json, the file
 * the platform reads (docs/platform-contract.md, "Manifest and runtime.json"; docs/design.md,
 * "Manifest").
 */
#ifndef SA_MANIFEST_H
#define SA_MANIFEST_H

#include <stddef.h>
#include <sys/types.h>

#include "err.h"
#include "file.h"

#define MANIFEST_MAX (256 * 1024)
/* mcp_path and mcp_token are at most this many bytes each. */
#define MANIFEST_FIELD_MAX 4096

struct manifest {
	char *mcp_path;  /* printable ASCII (0x20..0x7e), starts with '/', not "//" */
	char *mcp_token; /* printable ASCII without spaces; NULL when null or absent */
};

/*
 * Validate a manifest document: a JSON object with `mcp_path` and optionally `mcp_token`;
 * other keys are ignored. Refusals are ERR_FAILED (the manifest step failed) and never quote
 * the token. ret is filled only on success.
 */
int manifest_parse(const char *buf, size_t len, struct manifest *ret, struct err *err);
/* Read path (relative to dirfd or AT_FDCWD) without following links, capped, and parse it. */
int manifest_read(int dirfd, const char *path, struct manifest *ret, struct err *err);
/* {"mcp_path":...,"mcp_token":...} plus a newline, as a heap string (json-c); NULL on
 * allocation failure or without an mcp_path. */
char *manifest_to_json(const struct manifest *m);
/* Write runtime.json atomically, root-owned (uid/gid given), mode 0600. */
int manifest_write_runtime(const struct manifest *m, const char *path, uid_t uid, gid_t gid,
                           struct err *err);
/*
 * The same in two halves (file_stage()): the file written beside path now, made
 * runtime.json by file_stage_commit(ret) once the boot is ready, removed by file_stage_abort().
 */
int manifest_stage_runtime(const struct manifest *m, const char *path, uid_t uid, gid_t gid,
                           struct file_stage *ret, struct err *err);
/* Frees both strings, wiping the token first. */
void manifest_dispose(struct manifest *m);

#endif
