/* SPDX-License-Identifier: Apache-2.0 */
/* libyaml's parse errors, worded once for every YAML file the engine reads. */
#ifndef SA_YAML_ERROR_H
#define SA_YAML_ERROR_H

#include <stdbool.h>
#include <stddef.h>
#include <yaml.h>

/*
 * "PROBLEM at line L column C" (1-based) for a parser that failed on buf: libyaml's mark, or,
 * for a reader error (which knows only a byte offset), the line and column of that offset.
 * With with_context, libyaml's context follows when it has one: ", CONTEXT at line L column
 * C". Returns false, writing nothing, for YAML_MEMORY_ERROR: the caller reports out of memory.
 */
bool yaml_error_format(const yaml_parser_t *p, const char *buf, size_t len, bool with_context,
                       char *out, size_t size);

/*
 * Where a parser that failed on buf stopped, 0-based, the way yaml_error_format() counts: the
 * problem's mark, or for a reader error the line and column of its byte offset.
 */
void yaml_error_position(const yaml_parser_t *p, const char *buf, size_t len, size_t *ret_line,
                         size_t *ret_column);

#endif
