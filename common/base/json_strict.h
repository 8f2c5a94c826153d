/* SPDX-License-Identifier: Apache-2.0 */
/* Small helpers around json-c shared by every file that reads or writes JSON. */
#ifndef SA_JSON_STRICT_H
#define SA_JSON_STRICT_H

#include <json-c/json.h>
#include <sys/types.h>

#include "cleanup.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct json_object *, json_object_put)
#define _cleanup_json_ _cleanup_(json_object_putp)
DEFINE_TRIVIAL_CLEANUP_FUNC(struct json_tokener *, json_tokener_free)
#define _cleanup_tokener_ _cleanup_(json_tokener_freep)

/* What json_strict_parse found. */
enum json_strict_status {
	JSON_STRICT_OK = 0,
	JSON_STRICT_NUL_BYTE,   /* a NUL byte at *ret_offset */
	JSON_STRICT_NUL_ESCAPE, /* a \u0000 escape at *ret_offset */
	JSON_STRICT_TRUNCATED,  /* the text ends inside a value (*ret_offset: where) */
	JSON_STRICT_SYNTAX,     /* json-c's error *ret_jerr at *ret_offset */
	JSON_STRICT_TRAILING,   /* more than one value: the second starts at *ret_offset */
	JSON_STRICT_NO_MEMORY,
};

/*
 * Parse exactly one JSON value from buf (len bytes, no NUL terminator needed) with json-c's
 * strict mode and UTF-8 validation, refusing NUL bytes and \u0000 escapes (json-c would cut
 * strings and keys short at them). A number at the very end is completed. The caller words
 * the status for its own readers.
 */
enum json_strict_status json_strict_parse(const char *buf, size_t len, struct json_object **ret,
                                          size_t *ret_offset, enum json_tokener_error *ret_jerr);

#endif
