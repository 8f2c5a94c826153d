/* SPDX-License-Identifier: Apache-2.0 */
#include "json_strict.h"

#include <string.h>

/*
 * Offset of the first \u0000 escape in a JSON text, or -1. In valid JSON a backslash appears
 * only inside strings and always starts an escape, so stepping over each escape finds them
 * all; json-c would otherwise cut an object key or a string short at the NUL.
 */
static ssize_t find_nul_escape(const char *buf, size_t len)
{
	for (size_t i = 0; i + 1 < len; i++) {
		if (buf[i] != '\\')
			continue;
		if (buf[i + 1] == 'u' && i + 6 <= len && memcmp(buf + i + 2, "0000", 4) == 0)
			return (ssize_t)i;
		i++;
	}
	return -1;
}

enum json_strict_status json_strict_parse(const char *buf, size_t len, struct json_object **ret,
                                          size_t *ret_offset, enum json_tokener_error *ret_jerr)
{
	const char *nul = memchr(buf, '\0', len);
	struct json_object *obj;
	struct json_tokener *tok;
	enum json_tokener_error jerr;
	ssize_t esc;
	size_t end;

	*ret = NULL;
	*ret_jerr = json_tokener_success;
	if (nul) {
		*ret_offset = (size_t)(nul - buf);
		return JSON_STRICT_NUL_BYTE;
	}
	esc = find_nul_escape(buf, len);
	if (esc >= 0) {
		*ret_offset = (size_t)esc;
		return JSON_STRICT_NUL_ESCAPE;
	}
	tok = json_tokener_new();
	if (!tok)
		return JSON_STRICT_NO_MEMORY;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	obj = json_tokener_parse_ex(tok, buf, (int)len);
	jerr = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	/* A number at the very end waits for a delimiter: give it one. */
	if (jerr == json_tokener_continue && end > 0) {
		obj = json_tokener_parse_ex(tok, " ", 1);
		jerr = json_tokener_get_error(tok);
	}
	json_tokener_free(tok);
	*ret_offset = end;
	*ret_jerr = jerr;
	if (jerr == json_tokener_continue)
		return JSON_STRICT_TRUNCATED;
	if (jerr != json_tokener_success)
		return JSON_STRICT_SYNTAX;
	if (end < len) {
		json_object_put(obj);
		return JSON_STRICT_TRAILING;
	}
	*ret = obj;
	return JSON_STRICT_OK;
}
