/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The platform's checkout spec {repository, ref, clone_url, username, token}
 * (docs/platform-contract.md, "Token-safe checkout"), read by `sandbox-ctl checkout` and `publish`
 * from stdin ("-") or from a regular file only its owner can read. The text is kept in guarded
 * memory; json-c's copies of its strings (in json-c's own heap) are wiped on dispose, nested
 * ones too, and so is the tokener's buffer once parsed.
 */
#ifndef SA_CHECKOUT_SPEC_H
#define SA_CHECKOUT_SPEC_H

#include <json-c/json.h>
#include <stddef.h>

#include "err.h"

#define CHECKOUT_SPEC_MAX (64 * 1024)

struct checkout_spec {
	char *buf; /* the spec's text, guarded memory */
	size_t len;
	json_object *obj;
	/* pointers into obj; token may be NULL */
	const char *clone_url, *ref, *username, *token;
	/* OWNER/NAME and the forge's REST API (NULL when absent: `publish --pull-request` then
	 * uses FORGE_HTTP_DEFAULT_API), checked when present */
	const char *repository, *api_url;
	size_t token_len;
};

/* Read and check the spec: checkout_spec_read(), then checkout_spec_check(). */
int checkout_spec_load(const char *path, struct checkout_spec *sp, struct err *err);
/*
 * The two halves: read the spec and check what needs no libgit2 (one JSON object, clone_url
 * present, git_fetch_url_check); then the rest (git_fetch_ref_check, which sets libgit2 up
 * for itself unless git_fetch_global_init() has; the api_url). A caller that sets libgit2 up
 * anyway does it between them: once, where Debian's libgit2 parses its whole CA bundle at
 * every set-up.
 */
int checkout_spec_read(const char *path, struct checkout_spec *sp, struct err *err);
/* checkout_spec_read() past the reading: the text is in sp->buf (guarded, NUL-terminated). */
int checkout_spec_parse(struct checkout_spec *sp, struct err *err);
int checkout_spec_check(const struct checkout_spec *sp, struct err *err);
void checkout_spec_dispose(struct checkout_spec *sp);
/*
 * Read a file that holds a secret (a spec, a private key) into guarded memory (sodium_free
 * *ret_buf; NUL-terminated): "-" is stdin; a path must be a regular file of this user that
 * only they can read (no group or other bits), at most max bytes. what names it in errors.
 */
int checkout_spec_read_private(const char *path, size_t max, const char *what, char **ret_buf,
                               size_t *ret_len, struct err *err);
/* Remove a private temporary repository the command fetched into. */
void checkout_spec_tmp_remove(const char *dir);

#endif
