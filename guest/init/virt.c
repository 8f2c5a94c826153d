/* SPDX-License-Identifier: Apache-2.0 */
#include "virt.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "file.h"

bool virt_in_container(const char *root)
{
	char path[4096], buf[8192];
	_cleanup_close_ int fd = -1;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/run/systemd/container", root);
	if (access(path, F_OK) == 0)
		return true;
	snprintf(path, sizeof(path), "%s/proc/1/environ", root);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return false;
	n = file_read_all(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	for (char *p = buf; p < buf + n; p += strlen(p) + 1)
		if (strncmp(p, "container=", 10) == 0 && p[10])
			return true;
	return false;
}
