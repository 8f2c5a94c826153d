/* SPDX-License-Identifier: Apache-2.0 */
/* Small helpers around json-c shared by every file that reads or writes JSON. */
#ifndef SA_JSON_UTIL_H
#define SA_JSON_UTIL_H

#include <json-c/json.h>
#include <sys/types.h>

#include "cleanup.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct json_object *, json_object_put)
#define _cleanup_json_ _cleanup_(json_object_putp)

/*
 * Offset of the first \u0000 escape in a JSON text, or -1. In valid JSON a backslash appears
 * only inside strings and always starts an escape, so stepping over each escape finds them
 * all; json-c would otherwise cut an object key or a string short at the NUL.
 */
ssize_t json_find_nul_escape(const char *buf, size_t len);

#endif
