/* SPDX-License-Identifier: Apache-2.0 */
#include "json_util.h"

#include <string.h>

ssize_t json_find_nul_escape(const char *buf, size_t len)
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
