/* SPDX-License-Identifier: Apache-2.0 */
#include "yaml_error.h"

#include <stdio.h>

void yaml_error_position(const yaml_parser_t *p, const char *buf, size_t len, size_t *ret_line,
                         size_t *ret_column)
{
	size_t line = 0, column = 0;

	if (p->error == YAML_READER_ERROR) {
		for (size_t i = 0; i < p->problem_offset && i < len; i++) {
			if (buf[i] == '\n') {
				line++;
				column = 0;
			} else {
				column++;
			}
		}
	} else {
		line = p->problem_mark.line;
		column = p->problem_mark.column;
	}
	*ret_line = line;
	*ret_column = column;
}

bool yaml_error_format(const yaml_parser_t *p, const char *buf, size_t len, bool with_context,
                       char *out, size_t size)
{
	const char *problem = p->problem ? p->problem : "unknown problem";
	size_t line = 0, column = 0;
	int n;

	if (p->error == YAML_MEMORY_ERROR)
		return false;
	yaml_error_position(p, buf, len, &line, &column);
	n = snprintf(out, size, "%s at line %zu column %zu", problem, line + 1, column + 1);
	if (with_context && p->context && p->error != YAML_READER_ERROR && n >= 0 &&
	    (size_t)n < size)
		snprintf(out + n, size - (size_t)n, ", %s at line %zu column %zu", p->context,
		         (size_t)p->context_mark.line + 1, (size_t)p->context_mark.column + 1);
	return true;
}
