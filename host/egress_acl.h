/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The instance's Incus network ACL (docs/isolation.md "The network ACL"), as the document
 * `incus network acl edit NAME` reads (JSON is YAML), and the NIC keys that attach it.
 */
#ifndef SA_HOST_EGRESS_ACL_H
#define SA_HOST_EGRESS_ACL_H

#include <json-c/json.h>

#include "egress_policy.h"

/*
 * {"description", "config": {}, "egress": [...], "ingress": [...]}: egress to the proxy's
 * address and port allowed, the refused ranges rejected (the proxy's address cut out of them),
 * ingress to the runtime's port from the controller's address only. NULL when out of memory.
 */
json_object *egress_acl_build(const struct egress_policy *p);

/*
 * The NIC keys, {"security.acls": name, "security.acls.default.*.action": "reject", ...,
 * "security.ipv6_filtering": "false"} (docs/isolation.md: Incus 6.0 cannot combine the two).
 */
json_object *egress_acl_nic_keys(const char *acl_name);
/* The same keys for a whole bridge network (`incus network set`): no NIC-only key. */
json_object *egress_acl_network_keys(const char *acl_name);

#endif
