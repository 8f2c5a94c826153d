/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The platform's checkout spec {repository, ref, clone_url, username, token}
 * (docs/platform-contract.md, "Token-safe checkout"), read by `sandbox-ctl checkout` and `publish`
 * from stdin ("-") or from a regular file only its owner can read. The text and json-c's copies of
 * the strings are kept in guarded memory and wiped on dispose.
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
	size_t token_len;
};

/* Read and check the spec (clone_url present; git_fetch_url_check, git_fetch_ref_check). */
int checkout_spec_load(const char *path, struct checkout_spec *sp, struct err *err);
void checkout_spec_dispose(struct checkout_spec *sp);
/* Remove a private temporary repository the command fetched into. */
void checkout_spec_tmp_remove(const char *dir);

#endif
