/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which kernel and which namespaces this process runs in: what the host and the guest compare
 * in `sandbox-ctl verify` (docs/isolation.md, check 1).
 */
#ifndef SA_SYSID_H
#define SA_SYSID_H

#include <json-c/json.h>

/* "net", "mnt", "pid", "user", "uts", "ipc", "cgroup", NULL: the order the check reads them. */
extern const char *const sysid_namespaces[];

/*
 * {"kernel": {"release", "version"}, "boot_id", "ns": {"net": INODE, ...}}: uname(2), the
 * kernel's boot id, and the inode of each /proc/self/ns/ link. NULL when out of memory.
 */
json_object *sysid_json(void);

#endif
