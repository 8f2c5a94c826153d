/* SPDX-License-Identifier: Apache-2.0 */
/* Which kernel and which namespaces this process runs in. */
#include "sysid.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cleanup.h"
#include "file.h"

const char *const sysid_namespaces[] = {"net", "mnt", "pid", "user", "uts", "ipc", "cgroup", NULL};

json_object *sysid_json(void)
{
	json_object *o = json_object_new_object(), *k = json_object_new_object();
	json_object *ns = json_object_new_object();
	char boot_id[64] = "";
	struct utsname u;
	_cleanup_close_ int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? file_read_all(fd, boot_id, sizeof(boot_id) - 1) : -1;

	if (!o || !k || !ns) {
		json_object_put(o);
		json_object_put(k);
		json_object_put(ns);
		return NULL;
	}
	boot_id[n > 0 ? n : 0] = '\0';
	boot_id[strcspn(boot_id, "\n")] = '\0';
	if (uname(&u) == 0) {
		json_object_object_add(k, "release", json_object_new_string(u.release));
		json_object_object_add(k, "version", json_object_new_string(u.version));
	}
	for (size_t i = 0; sysid_namespaces[i]; i++) {
		char path[64];
		struct stat st;

		snprintf(path, sizeof(path), "/proc/self/ns/%s", sysid_namespaces[i]);
		if (stat(path, &st) == 0)
			json_object_object_add(ns, sysid_namespaces[i],
			                       json_object_new_int64((int64_t)st.st_ino));
	}
	json_object_object_add(o, "kernel", k);
	json_object_object_add(o, "boot_id", json_object_new_string(boot_id));
	json_object_object_add(o, "ns", ns);
	return o;
}
