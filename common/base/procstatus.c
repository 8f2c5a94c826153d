/* SPDX-License-Identifier: Apache-2.0 */
#include "procstatus.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "file.h"

#define STATUS_MAX 4096

int procstatus_field(const char *name, int base, unsigned long *ret)
{
	_cleanup_close_ int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	char buf[STATUS_MAX + 1] = "\n", key[64];
	const char *at;
	ssize_t n;

	if (fd < 0)
		return -errno;
	/* After a leading newline, so that every field, the first too, is found as "\nName:". */
	n = file_read_all(fd, buf + 1, STATUS_MAX - 1);
	if (n < 0)
		return (int)n;
	buf[n + 1] = '\0';
	snprintf(key, sizeof(key), "\n%s:", name);
	at = strstr(buf, key);
	if (!at)
		return -ENOENT;
	*ret = strtoul(at + strlen(key), NULL, base);
	return 0;
}
