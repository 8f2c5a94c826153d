/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Turning a YAML scalar into the string an environment variable gets, the way the upstream
 * engine did it (Ruby's Psych safe loader, YAML 1.1 resolution; docs/design.md, "env values").
 */
#ifndef SA_YAML_SCALAR_H
#define SA_YAML_SCALAR_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

/* What Psych makes of a scalar (the Ruby class of the value). */
enum yaml_scalar_kind {
	YAML_KIND_NULL,
	YAML_KIND_BOOL,
	YAML_KIND_INT,
	YAML_KIND_FLOAT,
	YAML_KIND_STR,
};

/*
 * Numbers are converted exactly, bignums included, up to this many characters; a longer
 * scalar that reads as a number is refused rather than converted in quadratic time.
 */
#define YAML_SCALAR_NUMBER_MAX 4096

/*
 * Resolve a scalar as Psych 4's safe loader does (ScalarScanner#tokenize for plain scalars,
 * ToRuby#deserialize for tags) and give its Ruby #to_s: NULL for null, "true"/"false",
 * integers in decimal (bignums too), floats as Float#to_s prints them, strings verbatim.
 * Refuses (ERR_REFUSED) what the safe loader refuses (dates, times, symbols, tags naming Ruby
 * classes), numbers Ruby fails to convert (0x_, !!float abc), numbers longer than
 * YAML_SCALAR_NUMBER_MAX characters, and any value holding a NUL character.
 * On failure *ret_kind and *ret are left untouched.
 */
int yaml_scalar_resolve(const char *value, size_t len, bool plain, const char *tag,
                        enum yaml_scalar_kind *ret_kind, char **ret, struct err *err);

/*
 * value/len: the scalar's text; plain: true for an unquoted plain scalar (only those are
 * resolved; quoted and block scalars stay verbatim); tag: the explicit tag or NULL.
 * Returns 0 with a heap string, or ERR_REFUSED for null, dates and times and other values the
 * safe loader refuses (message says which: "null is not a string", ...).
 */
int yaml_scalar_to_env(const char *value, size_t len, bool plain, const char *tag, char **ret,
                       struct err *err);

#endif
