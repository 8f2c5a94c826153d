/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Turning a YAML scalar into the string an environment variable gets, the way the upstream
 * engine did it (Ruby's Psych safe loader, YAML 1.1 resolution; decisions.md, "env values").
 */
#ifndef SA_YAML_SCALAR_H
#define SA_YAML_SCALAR_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

/*
 * value/len: the scalar's text; plain: true for an unquoted plain scalar (only those are
 * resolved; quoted and block scalars stay verbatim); tag: the explicit tag or NULL.
 * Returns 0 with a heap string, or ERR_REFUSED for null, dates and times and other values the
 * safe loader refuses (message says which: "null is not a string", ...).
 */
int yaml_scalar_to_env(const char *value, size_t len, bool plain, const char *tag, char **ret,
                       struct err *err);

#endif
