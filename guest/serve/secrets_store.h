/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The daemon's secrets (docs/protocol.md "Secrets", docs/design.md "Secret scopes"): named
 * values, each with a scope that says which process may have it:
 *   fetch    a checkout or publish token
 *   boot     given to the setup steps, manifest and server of the next boots
 *   session  a coding agent's credential
 *
 * Each value lives in its own sodium_malloc allocation (guard pages, locked, wiped on free)
 * and is inaccessible (sodium_mprotect_noaccess) except during secrets_store_visit(). Names
 * are not secret; values never reach a log, a file or an error message. Not thread-safe.
 */
#ifndef SA_SECRETS_STORE_H
#define SA_SECRETS_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define SECRETS_MAX 256               /* secrets held at once */
#define SECRETS_VALUE_MAX (64 * 1024) /* bytes per value (the scrubber's limit) */
#define SECRETS_NAME_MAX 128

enum secret_scope {
	SECRET_SCOPE_ANY = 0, /* secrets_store_visit() and _drop_scope(): every scope */
	SECRET_SCOPE_FETCH = 1,
	SECRET_SCOPE_BOOT = 2,
	SECRET_SCOPE_SESSION = 3,
};

/* "fetch", "boot", "session" -> the scope, anything else -> -1. */
int secrets_store_scope_from_string(const char *s);
const char *secrets_store_scope_name(enum secret_scope scope);
/* [A-Za-z_][A-Za-z0-9_]*, at most SECRETS_NAME_MAX characters. */
bool secrets_store_name_valid(const char *name);

struct secrets_store;

int secrets_store_new(struct secrets_store **ret, struct err *err);
/* Wipes and frees every value. Accepts NULL. */
void secrets_store_free(struct secrets_store *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct secrets_store *, secrets_store_free)
#define _cleanup_secrets_store_ _cleanup_(secrets_store_freep)

/*
 * Copy value into locked memory under name (replacing a secret of that name, whatever its
 * scope: *ret_replaced says so). Refused (ERR_REFUSED) for a bad name or scope, an empty or
 * oversized value, or a full store. The caller wipes its own copy.
 */
int secrets_store_put(struct secrets_store *s, const char *name, enum secret_scope scope,
                      const void *value, size_t len, bool *ret_replaced, struct err *err);
/* Drop one secret: 1 when it was there, 0 when not. */
int secrets_store_drop(struct secrets_store *s, const char *name);
/* Drop every secret of scope (SECRET_SCOPE_ANY: all); returns how many. */
size_t secrets_store_drop_scope(struct secrets_store *s, enum secret_scope scope);
size_t secrets_store_count(const struct secrets_store *s, enum secret_scope scope);
/* The scope of name, or -1 when there is no such secret. */
int secrets_store_scope_of(const struct secrets_store *s, const char *name);

/*
 * Call fn for every secret of scope (SECRET_SCOPE_ANY: all), in the order they were put. The
 * value is readable only during the call and must not be kept. A negative return from fn stops
 * the walk and is returned.
 */
typedef int (*secrets_visit_fn)(void *userdata, const char *name, enum secret_scope scope,
                                const uint8_t *value, size_t len);
int secrets_store_visit(const struct secrets_store *s, enum secret_scope scope, secrets_visit_fn fn,
                        void *userdata);

#endif
